// Waste: idle GPU time inside allocations per owner, the worst jobs, and
// idle capacity per cluster / partition / GPU model; failed jobs' share.
import { h, stat, table, bars } from '../ui.js';
import * as f from '../fmt.js';
import { coverageNote } from './chargeback.js';

export async function render(ctx) {
	const params = { window: ctx.window, aggregate: ctx.aggregate };
	const d = await ctx.get('/v1/idle', { ...params, limit: 20 });
	const failed = d.top_jobs.filter((j) => /FAIL|TIMEOUT|OUT_OF_MEMORY|NODE_FAIL/.test(j.state));
	const allocIdle = d.allocated_idle.reduce((s, r) => s + r.idle_gpu_seconds, 0);
	const allocIdleCost = d.allocated_idle.reduce((s, r) => s + (r.idle_cost_micros || 0), 0);
	const unalloc = d.unallocated_idle.reduce((s, r) => s + r.idle_gpu_seconds, 0);
	const unallocCost = d.unallocated_idle.reduce((s, r) => s + (r.idle_cost_micros || 0), 0);
	// allocated_idle lists every owner with exporter data, idle or not: an
	// empty list means unknown, which was shown as "0.0 GPU-h, 0.00"
	const observed = d.allocated_idle.length > 0;
	const noData = 'Needs dcgm-exporter data for the jobs in this window.';
	return [
		h('div', { class: 'stats' },
			observed ? stat('Idle in allocations', f.gpuHours(allocIdle), f.money(allocIdleCost))
				: stat('Idle in allocations', 'unknown', 'no exporter data in this window'),
			stat('Unallocated idle', f.gpuHours(unalloc), f.money(unallocCost)),
			// over the capacity known only: with a cluster or days without
			// inventory it is no bound on the whole fleet's share
			stat('Share of fleet time wasted', f.percent(d.wasted_fraction), d.capacity_known === false
				? 'of the GPU time with capacity data' + (observed ? '' : ', unallocated idle only')
				: observed ? '' : 'unallocated idle only: at least this'),
			stat('Failed jobs among the worst', String(failed.length), failed.length ? f.gpuHours(failed.reduce((s, j) => s + j.idle_gpu_seconds, 0)) + ' idle' : '')),
		coverageNote(d, 'idle-coverage'),
		d.unallocated_idle.length ? h('section', { class: 'card', 'aria-label': 'Idle capacity by partition and model' },
			h('h2', { text: 'Idle capacity by partition and GPU model' }),
			bars(d.unallocated_idle.map((r) => ({ label: r.cluster + '/' + r.partition + ' ' + r.gpu_model, parts: [r.idle_gpu_seconds, r.allocated_gpu_seconds, r.unavailable_gpu_seconds], text: f.gpuHours(r.idle_gpu_seconds) })),
				['Unallocated idle', 'Allocated', 'Unavailable'])) : null,
		table({
			id: 'idle-top-jobs', title: 'Top idle jobs', sortKey: 'idle_gpu_seconds',
			cols: [
				{ key: 'cluster', label: 'Cluster' }, { key: 'job_id', label: 'Job' }, { key: 'owner', label: 'Owner' },
				{ key: 'user', label: 'User' }, { key: 'gpus', label: 'GPUs', num: true, fmt: (r) => f.number(r.gpus, 2) },
				{ key: 'gpu_model', label: 'Model' }, { key: 'state', label: 'State' },
				{ key: 'idle_gpu_seconds', label: 'Idle', num: true, fmt: (r) => f.gpuHours(r.idle_gpu_seconds) },
				{ key: 'idle_cost_micros', label: 'Idle cost', num: true, fmt: (r) => f.money(r.idle_cost_micros) },
				{ key: 'from', label: 'From', fmt: (r) => f.time(r.from) },
			],
			rows: d.top_jobs,
			empty: observed ? 'No job was idle in its allocation in this window.' : noData,
			csv: { path: '/v1/idle', params: { ...params, table: 'top_jobs' } },
		}),
		table({
			id: 'idle-owners', title: 'Idle in allocations by ' + ctx.aggregate.replace('_', ' '), sortKey: 'idle_gpu_seconds',
			cols: [
				{ key: 'key', label: ctx.aggregate.replace('_', ' ') },
				{ key: 'idle_gpu_seconds', label: 'Idle', num: true, fmt: (r) => f.gpuHours(r.idle_gpu_seconds) },
				{ key: 'busy_gpu_seconds', label: 'Busy', num: true, fmt: (r) => f.gpuHours(r.busy_gpu_seconds) },
				{ key: 'observed_gpu_seconds', label: 'Observed', num: true, fmt: (r) => f.gpuHours(r.observed_gpu_seconds) },
				{ key: 'idle_cost_micros', label: 'Idle cost', num: true, fmt: (r) => f.money(r.idle_cost_micros) },
			],
			rows: d.allocated_idle,
			empty: noData,
			csv: { path: '/v1/idle', params: { ...params, table: 'allocated' } },
		}),
		table({
			id: 'idle-unallocated', title: 'Unallocated idle capacity', sortKey: 'idle_gpu_seconds',
			cols: [
				{ key: 'cluster', label: 'Cluster' }, { key: 'partition', label: 'Partition' }, { key: 'gpu_model', label: 'Model' },
				{ key: 'reported_gpu_seconds', label: 'Capacity', num: true, fmt: (r) => f.gpuHours(r.reported_gpu_seconds) },
				{ key: 'allocated_gpu_seconds', label: 'Allocated', num: true, fmt: (r) => f.gpuHours(r.allocated_gpu_seconds) },
				{ key: 'idle_gpu_seconds', label: 'Idle', num: true, fmt: (r) => f.gpuHours(r.idle_gpu_seconds) },
				{ key: 'idle_cost_micros', label: 'Idle cost', num: true, fmt: (r) => f.money(r.idle_cost_micros) },
			],
			rows: d.unallocated_idle,
			csv: { path: '/v1/idle', params: { ...params, table: 'unallocated' } },
		}),
	];
}
