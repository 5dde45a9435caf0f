// Queue: waits p50 / p90 / p99 per partition, owner or GPU count, and the
// GPUs pending now.
import { h, stat, table, bars } from '../ui.js';
import * as f from '../fmt.js';

export async function render(ctx) {
	const params = { window: ctx.window, aggregate: ctx.aggregate };
	const q = await ctx.get('/v1/queue', params);
	const pendingGpus = q.pending.reduce((s, p) => s + (p.gpus_requested || 0), 0);
	const pendingJobs = q.pending.reduce((s, p) => s + (p.jobs || 0), 0);
	const jobs = q.items.reduce((s, i) => s + i.jobs, 0);
	const worst = q.items.reduce((m, i) => Math.max(m, i.wait_p90_s || 0), 0);
	return [
		h('div', { class: 'stats' },
			stat('Jobs started', f.number(jobs)),
			stat('Worst p90 wait', f.duration(worst)),
			stat('Pending now', f.number(pendingGpus) + ' GPUs', f.number(pendingJobs) + ' jobs')),
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
			id: 'queue-pending', title: 'Pending now', sortKey: 'gpus_requested',
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
