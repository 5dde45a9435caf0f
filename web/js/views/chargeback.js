// Chargeback: cost and GPU-hours per owner (bar + sortable table), busy /
// idle inside allocations, the __idle__ and __unallocated__ rows, and the
// totals exactly as the API states them; idle shared or not, a filter, a
// second dimension, and the cost over the window stacked by the first.
import { h, stat, table, bars, legend, chartTable, failure } from '../ui.js';
import { stackedArea } from '../charts.js';
import { stepFor } from '../steps.js';
import * as f from '../fmt.js';

const DIMS = ['team', 'project', 'cost_center', 'user', 'account', 'cluster', 'partition', 'qos', 'namespace', 'gpu_model'];
const CHART_OWNERS = 7; // the costliest owners get a band each, the rest one "other"

// the view's own choices, kept while the dashboard is open
const opts = { share: false, filter: '', then: '' };

export async function render(ctx) {
	const out = h('div', { id: 'cb-body' });
	const redraw = () => draw(ctx, out);
	const share = h('input', { type: 'checkbox', id: 'cb-share', checked: opts.share,
		onchange: () => { opts.share = share.checked; redraw(); } });
	const filter = h('input', { type: 'text', id: 'cb-filter', size: 36, value: opts.filter,
		placeholder: 'team:"vision","language"+cluster:"a"', 'aria-describedby': 'cb-filter-help',
		onchange: () => { opts.filter = filter.value.trim(); redraw(); } });
	if (opts.then === ctx.aggregate) opts.then = '';
	const then = h('select', { id: 'cb-then', onchange: () => { opts.then = then.value; redraw(); } },
		h('option', { value: '', text: '(none)' }),
		DIMS.filter((d) => d !== ctx.aggregate).map((d) => h('option', { value: d, text: d.replace('_', ' ') })));
	then.value = opts.then;
	const controls = h('form', { class: 'cb-controls', onsubmit: (e) => e.preventDefault() },
		h('label', { for: 'cb-share' }, share, ' Share idle capacity (proportional)'),
		h('label', { for: 'cb-filter', text: 'Filter' }), filter,
		h('span', { id: 'cb-filter-help', class: 'note', text: 'dimension:"value", "+" between clauses' }),
		h('label', { for: 'cb-then', text: 'then by' }), then);
	await draw(ctx, out);
	return [controls, out];
}

function params(ctx) {
	return {
		window: ctx.window,
		aggregate: ctx.aggregate + (opts.then ? ',' + opts.then : ''),
		shareIdle: opts.share ? 'proportional' : undefined,
		filter: opts.filter || undefined,
	};
}

// Fetches and shows the tables and chart for the current choices in out;
// a refused choice (a bad filter) shows the API's message, the controls stay.
async function draw(ctx, out) {
	const p = params(ctx);
	const step = stepFor(ctx.window);
	out.setAttribute('aria-busy', 'true');
	try {
		const [cb, series] = await Promise.all([ctx.get('/v1/chargeback', p), ctx.get('/v1/chargeback', { ...p, step })]);
		const chart = costChart(series, ctx.aggregate, step);
		out.replaceChildren(...content(ctx, cb, p).filter((x) => x), chart.box);
		if (out.isConnected) drawChart(chart);
		else ctx.chart = chart;
	} catch (e) {
		if (e.name === 'AbortError') return;
		out.replaceChildren(failure(e));
		ctx.chart = null;
	} finally {
		out.setAttribute('aria-busy', 'false');
	}
}

export function after(ctx) {
	if (ctx.chart) drawChart(ctx.chart);
}

// cost per step, one band per owner of the first dimension
function costChart(cb, dim, step) {
	const xs = cb.steps.map((s) => Date.parse(s.start) / 1000);
	const per = new Map();
	cb.steps.forEach((s, i) => {
		for (const it of s.items) {
			const k = it.key[dim] ?? it.name;
			const v = per.get(k) || { name: k, total: 0, values: xs.map(() => 0) };
			v.values[i] += it.total_micros;
			v.total += it.total_micros;
			per.set(k, v);
		}
	});
	const all = [...per.values()].sort((a, b) => b.total - a.total);
	const shown = all.slice(0, CHART_OWNERS);
	if (all.length > CHART_OWNERS) {
		const rest = { name: 'other (' + (all.length - CHART_OWNERS) + ')', values: xs.map(() => 0) };
		for (const o of all.slice(CHART_OWNERS)) o.values.forEach((v, i) => { rest.values[i] += v; });
		shown.push(rest);
	}
	const series = shown.map((o) => ({ name: o.name, values: o.values.map((v) => v / 1e6) }));
	const box = h('section', { class: 'card chart-card', id: 'cb-chart', 'aria-label': 'Cost over time' },
		h('h2', { text: 'Cost per ' + step + ' by ' + dim.replace('_', ' ') }),
		legend(series.map((s) => s.name)),
		chartTable('cb-chart-data', xs, series, (v) => f.number(v, 2)));
	return { box, xs, series, cur: cb.currency || 'USD' };
}

function drawChart({ box, xs, series, cur }) {
	if (!xs.length || !series.length) { box.append(h('p', { class: 'note', text: 'No cost in this window.' })); return; }
	stackedArea(box, { xs, series, yLabel: cur, yFmt: (v) => f.number(v, 2), label: 'Stacked area of cost per owner over the window' });
}

function content(ctx, cb, params) {
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
			// a scoped token's answer has no fleet figures (docs/security.md)
			cb.idle_withheld ? stat('Idle capacity', '—', 'the fleet\'s: not shown to a scoped token')
				: stat('Idle capacity', f.gpuHours(t.idle_gpu_seconds), cb.shareIdle === 'none' ? f.money(t.idle_micros, cur) + ' (not shared)' : 'shared: ' + cb.shareIdle),
			stat(cb.idle_withheld ? 'GPU time in scope' : 'Fleet GPU time', f.gpuHours(t.gpu_seconds), cb.capacity_known === false ? 'at least: capacity partly unknown' : '')),
		coverageNote(cb, 'cb-coverage'),
		cb.unpriced_models && cb.unpriced_models.length ? h('p', { class: 'note', text: 'No rate for: ' + cb.unpriced_models.join(', ') }) : null,
		h('section', { class: 'card', 'aria-label': 'Cost per owner' },
			h('h2', { text: 'Cost per ' + cb.aggregate.join(' and ').replace(/_/g, ' ') + (rows.length > 20 ? ' (top 20)' : '') }),
			bars(top.map((r) => ({ label: r.name, parts: [r.cost, r.idleShare], text: f.money(r.total, cur) })), ['Allocated cost', 'Idle share'])),
		table({
			id: 'chargeback-table', title: 'Chargeback by ' + cb.aggregate.join(' and ').replace(/_/g, ' '), sortKey: 'total',
			caption: 'Window ' + cb.window.join(' – ') + '; idle shared: ' + cb.shareIdle + '; money rounded to the cent from micro-units.',
			cols: [
				{ key: 'name', label: cb.aggregate.join(' / ').replace(/_/g, ' ') },
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
