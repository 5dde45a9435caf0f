// Chargeback: cost and GPU-hours per owner (bar + sortable table), busy /
// idle inside allocations, the __idle__ and __unallocated__ rows, and the
// totals exactly as the API states them.
import { h, stat, table, bars } from '../ui.js';
import * as f from '../fmt.js';

export async function render(ctx) {
	const params = { window: ctx.window, aggregate: ctx.aggregate };
	const cb = await ctx.get('/v1/chargeback', params);
	const cur = cb.currency || 'USD';
	const items = cb.steps.flatMap((s) => s.items);
	const merged = new Map();
	for (const it of items) {
		const m = merged.get(it.name) || { name: it.name, allocated: 0, busy: null, idleIn: null, cost: 0, idleShare: 0, total: 0, unpriced: 0 };
		m.allocated += it.allocated_gpu_seconds;
		if (it.busy_gpu_seconds !== null) m.busy = (m.busy || 0) + it.busy_gpu_seconds;
		if (it.idle_in_allocation_gpu_seconds !== null) m.idleIn = (m.idleIn || 0) + it.idle_in_allocation_gpu_seconds;
		// the API's shown amounts (one rounding for every view): the rows
		// then add up to the Total row to the cent, as in the CSV and report
		m.cost += it.cost_shown_micros;
		m.idleShare += it.idle_share_shown_micros;
		m.total += it.total_shown_micros;
		m.unpriced += it.unpriced_gpu_seconds;
		merged.set(it.name, m);
	}
	const rows = [...merged.values()].map((m) => ({ ...m, __class: m.name.startsWith('__') ? 'special' : null }));
	const t = cb.totals;
	// idle capacity not shared out to owners (all of it with shareIdle=none)
	let idleS = 0, idleM = 0;
	for (const s of cb.steps) if (s.idle && s.idle.gpu_seconds !== null) { idleS += s.idle.gpu_seconds; idleM += s.idle.total_shown_micros; }
	const idleRow = idleS || idleM ? [{
		class: 'special',
		cells: ['__idle__', f.gpuHours(idleS), '—', '—', f.money(idleM, cur), '—', f.money(idleM, cur)],
	}] : [];
	const totalRow = { class: 'total', cells: ['Total', f.gpuHours(t.gpu_seconds), '', '', '', '', f.decimal(t.total, cur)] };
	const top = [...rows].sort((a, b) => b.total - a.total).slice(0, 20);
	return [
		h('div', { class: 'stats' },
			h('div', { class: 'stat', id: 'cb-total' }, h('div', { class: 'label', text: 'Total' }),
				h('div', { class: 'value', 'data-total': t.total, text: f.decimal(t.total, cur) })),
			stat('Allocated', f.gpuHours(t.allocated_gpu_seconds), f.money(t.cost_micros, cur)),
			stat('Idle capacity', f.gpuHours(t.idle_gpu_seconds), cb.shareIdle === 'none' ? f.money(t.idle_micros, cur) + ' (not shared)' : 'shared: ' + cb.shareIdle),
			stat('Fleet GPU time', f.gpuHours(t.gpu_seconds), cb.capacity_known === false ? 'at least: capacity partly unknown' : '')),
		coverageNote(cb, 'cb-coverage'),
		cb.unpriced_models && cb.unpriced_models.length ? h('p', { class: 'note', text: 'No rate for: ' + cb.unpriced_models.join(', ') }) : null,
		h('section', { class: 'card', 'aria-label': 'Cost per owner' },
			h('h2', { text: 'Cost per ' + ctx.aggregate.replace('_', ' ') + (rows.length > 20 ? ' (top 20)' : '') }),
			bars(top.map((r) => ({ label: r.name, parts: [r.cost, r.idleShare], text: f.money(r.total, cur) })), ['Allocated cost', 'Idle share'])),
		table({
			id: 'chargeback-table', title: 'Chargeback by ' + ctx.aggregate.replace('_', ' '), sortKey: 'total',
			caption: 'Window ' + cb.window.join(' – ') + '; idle shared: ' + cb.shareIdle + '; money rounded to the cent from micro-units.',
			cols: [
				{ key: 'name', label: ctx.aggregate.replace('_', ' ') },
				{ key: 'allocated', label: 'Allocated', num: true, fmt: (r) => f.gpuHours(r.allocated) },
				{ key: 'busy', label: 'Busy', num: true, fmt: (r) => f.gpuHours(r.busy) },
				{ key: 'idleIn', label: 'Idle in allocation', num: true, fmt: (r) => f.gpuHours(r.idleIn) },
				{ key: 'cost', label: 'Cost', num: true, fmt: (r) => f.money(r.cost, cur) },
				{ key: 'idleShare', label: 'Idle share', num: true, fmt: (r) => f.money(r.idleShare, cur) },
				{ key: 'total', label: 'Total', num: true, fmt: (r) => f.money(r.total, cur) },
			],
			rows,
			extra: [...idleRow, totalRow],
			csv: { path: '/v1/chargeback', params },
		}),
	];
}

// Idle capacity is only known where a node inventory covered the window:
// without this the stats read as the whole fleet's idle when the API said
// capacity_known false (a cluster without a node source, or an inventory
// polled from the middle of the month).
export function coverageNote(d, id) {
	if (d.capacity_known !== false) return null;
	const days = d.capacity_days_known !== undefined && d.capacity_days !== undefined
		? ' (' + d.capacity_days_known + ' of ' + d.capacity_days + ' days have capacity data)' : '';
	const cl = d.capacity_clusters_unknown || [];
	const clusters = cl.length ? ' No capacity data at all for ' + cl.join(', ') + ', which ran GPU jobs in it.' : '';
	return h('p', { class: 'note', id, text: 'Capacity is not known for all of this window' + days +
		': idle capacity counts only the GPUs a node inventory reported, so idle and fleet GPU time are lower bounds.' + clusters });
}
