// Fleet: capacity over time as a stacked area (busy, allocated-idle,
// unallocated idle, unavailable), saturation, and the table per cluster,
// partition or GPU model; GPUs present per source from the inventory.
import { h, stat, table, legend, chartTable } from '../ui.js';
import { stackedArea } from '../charts.js';
import * as f from '../fmt.js';
import { stepFor } from '../steps.js';

export async function render(ctx) {
	const step = stepFor(ctx.window);
	const canCost = ctx.who.role === 'finance' || ctx.who.role === 'admin';
	// The chart draws the steps; the stats and the table are the API's
	// answer for the whole window as it is (its saturation, settled by the
	// one ratio every view takes), never arithmetic of the page's own.
	const [cap, whole, inv, cb] = await Promise.all([
		ctx.get('/v1/capacity', { window: ctx.window, step, aggregate: ctx.aggregate }),
		ctx.get('/v1/capacity', { window: ctx.window, aggregate: ctx.aggregate }),
		ctx.get('/v1/inventory'),
		// busy / idle inside allocations needs exporter data, per step, from chargeback
		canCost ? ctx.get('/v1/chargeback', { window: ctx.window, step, aggregate: 'cluster' }) : null,
	]);
	const byT = new Map();
	const keyName = ctx.aggregate;
	// Jobs on GPUs no inventory reports (a cluster without a node source, a
	// job under a partition its node does not belong to) are allocation
	// beyond capacity: the API keeps it apart as over_gpu_seconds. Left
	// out, a cluster without inventory showed 0.0 GPU-h allocated beside
	// the hundreds of thousands its jobs used.
	const overClusters = new Set();
	// Steps of the window still ahead hold no GPU time yet: drawn as zero they
	// looked like the fleet had gone, and the step under way, averaged over
	// its whole length, like a fleet a third its size. The chart stops at now
	// and averages the current step over the part that has passed.
	const now = Date.now() / 1000;
	for (const r of cap.rows) {
		const t = Date.parse(r.start) / 1000;
		const a = byT.get(t) || { len: Math.min(Date.parse(r.end) / 1000, now) - t, reported: 0, allocated: 0, idle: 0, unavailable: 0, reserved: 0, over: 0 };
		a.reported += r.reported_gpu_seconds;
		a.allocated += r.allocated_gpu_seconds;
		a.idle += r.idle_gpu_seconds;
		a.unavailable += r.unavailable_gpu_seconds;
		a.reserved += r.reserved_gpu_seconds;
		a.over += r.over_gpu_seconds || 0;
		byT.set(t, a);
	}
	for (const r of whole.rows) if (r.over_gpu_seconds > 0) overClusters.add(r.cluster);
	const busyT = new Map();
	let haveBusy = false;
	if (cb) for (const s of cb.steps) {
		let busy = 0, idle = 0, any = false;
		for (const it of s.items) {
			if (it.busy_gpu_seconds !== null) { busy += it.busy_gpu_seconds; idle += it.idle_in_allocation_gpu_seconds || 0; any = true; }
		}
		if (any) { haveBusy = true; busyT.set(Date.parse(s.start) / 1000, { busy, idle }); }
	}
	const xs = [...byT.keys()].filter((t) => byT.get(t).len > 0).sort((a, b) => a - b);
	const gpus = (t, s) => s / byT.get(t).len; // average GPUs over the step's elapsed part
	let series;
	if (haveBusy) {
		series = [
			{ name: 'Busy', values: xs.map((t) => gpus(t, busyT.get(t)?.busy || 0)) },
			{ name: 'Allocated, idle', values: xs.map((t) => gpus(t, Math.max(0, byT.get(t).allocated - (busyT.get(t)?.busy || 0)))) },
		];
	} else {
		series = [{ name: 'Allocated', values: xs.map((t) => gpus(t, byT.get(t).allocated)) }];
	}
	series.push({ name: 'Unallocated, idle', values: xs.map((t) => gpus(t, byT.get(t).idle)) });
	series.push({ name: 'Reserved', values: xs.map((t) => gpus(t, byT.get(t).reserved)) });
	series.push({ name: 'Unavailable', values: xs.map((t) => gpus(t, byT.get(t).unavailable)) });

	const tot = whole.totals;
	const rep = tot.reported_gpu_seconds, alloc = tot.allocated_gpu_seconds, unav = tot.unavailable_gpu_seconds;
	const over = tot.over_gpu_seconds, unobserved = tot.unobserved_gpu_seconds || 0;
	const sched = inv.clusters.reduce((s, c) => s + (c.scheduler_gpus || 0), 0);
	const exp = inv.clusters.reduce((s, c) => s + (c.exporter_gpus || 0), 0);

	const chartBox = h('div', { class: 'card chart-card' },
		h('h2', { text: 'GPUs over time (average per ' + step + ')' }),
		legend(series.map((s) => s.name)),
		chartTable('fleet-chart-data', xs, series.map((x) => ({ ...x, name: x.name + ' (GPUs)' })), (v) => f.number(v, 1)));
	ctx.chart = { box: chartBox, xs, series };
	// a row per cluster (and partition or model: the same name in two
	// clusters is two rows, each with its own capacity and saturation)
	const rows = whole.rows.map((r) => ({
		key: keyName === 'cluster' ? r.cluster : r.cluster + ' / ' + (r[keyName] || '—'),
		reported: r.reported_gpu_seconds, allocated: r.allocated_gpu_seconds, idle: r.idle_gpu_seconds,
		unavailable: r.unavailable_gpu_seconds, reserved: r.reserved_gpu_seconds, over: r.over_gpu_seconds || 0,
		saturation: r.saturation,
	}));
	return [
		h('div', { class: 'stats' },
			stat('Capacity', f.gpuHours(rep), 'reported GPU time'),
			stat('Allocated', f.gpuHours(alloc), over > 0 ? '+ ' + f.gpuHours(over) + ' beyond the inventory' : ''),
			stat('Saturation', f.percent(tot.saturation), 'allocated / available'),
			stat('Unavailable', f.gpuHours(unav), 'down or drained'),
			stat('GPUs (scheduler)', f.number(sched), 'present now'),
			stat('GPUs (exporter)', f.number(exp), exp < sched ? (sched - exp) + ' without exporter data' : 'all seen')),
		unobserved > 0 ? h('p', { class: 'note', id: 'fleet-unobserved', text: f.gpuHours(unobserved) + ' of node capacity lie past the ' +
			'last inventory snapshot (plus inventory.absent_grace_s): no source saw those GPUs, so they are neither capacity nor idle here.' }) : null,
		haveBusy ? null : h('p', { class: 'note', text: 'Busy vs. idle inside allocations needs dcgm-exporter data; none in this window, so allocated time is shown whole.' }),
		over > 0 ? h('p', { class: 'note', id: 'fleet-over', text: f.gpuHours(over) + ' were allocated beyond the GPUs the inventory reports (' +
			[...overClusters].sort().join(', ') + '): jobs on nodes no node source lists, or over their partition\'s capacity. ' +
			'They are in the table\'s "Beyond inventory" column, not in the chart or the saturation.' }) : null,
		chartBox,
		table({
			id: 'fleet-table', title: 'By ' + keyName.replace('_', ' '), sortKey: 'reported',
			cols: [
				{ key: 'key', label: keyName === 'cluster' ? 'cluster' : 'cluster / ' + keyName.replace('_', ' ') },
				{ key: 'reported', label: 'Capacity', num: true, fmt: (r) => r.reported === 0 && r.over > 0 ? 'no inventory' : f.gpuHours(r.reported) },
				{ key: 'allocated', label: 'Allocated', num: true, fmt: (r) => f.gpuHours(r.allocated) },
				{ key: 'idle', label: 'Unallocated idle', num: true, fmt: (r) => f.gpuHours(r.idle) },
				{ key: 'reserved', label: 'Reserved', num: true, fmt: (r) => f.gpuHours(r.reserved) },
				{ key: 'unavailable', label: 'Unavailable', num: true, fmt: (r) => f.gpuHours(r.unavailable) },
				{ key: 'saturation', label: 'Saturation', num: true, fmt: (r) => f.percent(r.saturation) },
				...(over > 0 ? [{ key: 'over', label: 'Beyond inventory', num: true, fmt: (r) => f.gpuHours(r.over) }] : []),
			],
			rows,
			csv: { path: '/v1/capacity', params: { window: ctx.window, step, aggregate: ctx.aggregate } },
		}),
	];
}

export function after(ctx) {
	const { box, xs, series } = ctx.chart;
	if (!xs.length) { box.append(h('p', { class: 'note', text: 'No capacity data in this window.' })); return; }
	stackedArea(box, { xs, series, yLabel: 'GPUs', yFmt: (v) => f.number(v, 1), label: 'Stacked area of GPUs by state over the window' });
}
