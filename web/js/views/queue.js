// Queue: waits p50 / p90 / p99 per partition, workload type, owner or GPU
// count, and the GPUs pending now.
import { h, stat, table, bars, chartTable } from '../ui.js';
import { lines } from '../charts.js';
import * as f from '../fmt.js';

const DAY = 86400;

// The window cut into at most 12 slices of whole days (a day each for a
// week, a week each for a month): one /v1/queue call per slice.
export function slices(startIso, endIso) {
	const a = Date.parse(startIso) / 1000, b = Date.parse(endIso) / 1000;
	const days = Math.max(1, Math.ceil((b - a) / DAY));
	const per = days <= 8 ? 1 : days <= 62 ? 7 : Math.ceil(days / 12);
	const out = [];
	for (let t = a; t < b; t += per * DAY) out.push([t, Math.min(b, t + per * DAY)]);
	return out;
}

const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');

export async function render(ctx) {
	const params = { window: ctx.window, aggregate: ctx.aggregate };
	const q = await ctx.get('/v1/queue', params);
	const cuts = slices(q.window[0], q.window[1]);
	const parts = cuts.length > 1 ? await Promise.all(cuts.map(([a, b]) => ctx.get('/v1/queue', { window: iso(a) + ',' + iso(b), aggregate: ctx.aggregate }))) : [q];
	const top = [...q.items].sort((x, y) => y.jobs - x.jobs)[0];
	ctx.trend = { top, cuts, parts };
	const pendingGpus = q.pending.reduce((s, p) => s + (p.gpus_requested || 0), 0);
	const pendingJobs = q.pending.reduce((s, p) => s + (p.jobs || 0), 0);
	const jobs = q.items.reduce((s, i) => s + i.jobs, 0);
	const worst = q.items.reduce((m, i) => Math.max(m, i.wait_p90_s || 0), 0);
	return [
		h('div', { class: 'stats' },
			stat('Jobs started', f.number(jobs)),
			stat('Worst p90 wait', f.duration(worst)),
			stat('Pending now', f.number(pendingGpus) + ' GPUs', f.number(pendingJobs) + ' jobs')),
		top ? h('section', { class: 'card chart-card', id: 'queue-trend', 'aria-label': 'Waits over time' },
			h('h2', { text: 'Waits over time: ' + top.key + ' (most jobs)' })) : null,
		q.items.length ? h('section', { class: 'card', 'aria-label': 'Waits' },
			h('h2', { text: 'Waits by ' + ctx.aggregate.replace('_', ' ') }),
			bars(q.items.map((i) => ({ label: i.key, parts: [i.wait_p50_s, i.wait_p90_s - i.wait_p50_s, i.wait_p99_s - i.wait_p90_s], text: f.duration(i.wait_p99_s) + ' p99' })),
				['p50', 'to p90', 'to p99'])) : null,
		table({
			id: 'queue-table', title: 'Queue waits by ' + ctx.aggregate.replace('_', ' '), sortKey: 'wait_p90_s',
			cols: [
				{ key: 'key', label: ctx.aggregate.replace('_', ' ') },
				{ key: 'jobs', label: 'Jobs', num: true, fmt: (r) => f.number(r.jobs) },
				{ key: 'wait_p50_s', label: 'p50', num: true, fmt: (r) => f.duration(r.wait_p50_s) },
				{ key: 'wait_p90_s', label: 'p90', num: true, fmt: (r) => f.duration(r.wait_p90_s) },
				{ key: 'wait_p99_s', label: 'p99', num: true, fmt: (r) => f.duration(r.wait_p99_s) },
				{ key: 'wait_max_s', label: 'Max', num: true, fmt: (r) => f.duration(r.wait_max_s) },
				{ key: 'gpus_started', label: 'GPUs started', num: true, fmt: (r) => f.number(r.gpus_started) },
			],
			rows: q.items,
			csv: { path: '/v1/queue', params },
		}),
		table({
			id: 'queue-pending', title: 'Pending now', sortKey: 'gpus_requested', empty: 'No job is waiting for GPUs now.',
			cols: [
				{ key: 'key', label: ctx.aggregate.replace('_', ' ') },
				{ key: 'jobs', label: 'Jobs', num: true, fmt: (r) => f.number(r.jobs) },
				{ key: 'gpus_requested', label: 'GPUs requested', num: true, fmt: (r) => f.number(r.gpus_requested) },
				{ key: 'longest_wait_s', label: 'Longest wait', num: true, fmt: (r) => f.duration(r.longest_wait_s) },
			],
			rows: q.pending,
		}),
	];
}

export function after(ctx) {
	const { top, cuts, parts } = ctx.trend;
	const box = document.getElementById('queue-trend');
	if (!top || !box) return;
	const at = (p) => p.items.find((i) => i.key === top.key);
	const val = (k) => parts.map((p) => (at(p) ? at(p)[k] / 60 : null));
	const xs = cuts.map(([a]) => a);
	const series = [{ name: 'p50', values: val('wait_p50_s') }, { name: 'p90', values: val('wait_p90_s') }, { name: 'p99', values: val('wait_p99_s') }];
	lines(box, {
		xs,
		label: 'Queue wait percentiles over time for ' + top.key,
		yLabel: 'minutes', yFmt: (v) => f.number(v, 1),
		series,
	});
	const t = chartTable('queue-chart-data', xs, series.map((x) => ({ ...x, name: x.name + ' (min)' })), (v) => f.number(v, 1));
	if (t) box.append(t);
}
