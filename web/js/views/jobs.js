// Jobs in the window with their GPU time, cost and busy/idle; the one view
// an owner-scoped token reaches (the API filters it to the token's owners).
import { h, stat, table } from '../ui.js';
import * as f from '../fmt.js';

export async function render(ctx) {
	const params = { window: ctx.window, limit: 500 };
	const d = await ctx.get('/v1/jobs', params);
	const jobs = d.jobs;
	const gs = jobs.reduce((s, j) => s + (j.gpu_seconds || 0), 0);
	const cost = jobs.reduce((s, j) => s + (j.cost_micros || 0), 0);
	const accounts = [...new Set(jobs.map((j) => j.account || j.namespace).filter(Boolean))].sort();
	return [
		h('div', { class: 'stats' },
			stat('Jobs', f.number(jobs.length) + (d.next_cursor ? '+' : '')),
			stat('GPU time', f.gpuHours(gs)),
			stat('Cost', f.money(cost)),
			h('div', { class: 'stat' }, h('div', { class: 'label', text: 'Accounts' }), h('div', { class: 'value', id: 'jobs-accounts', text: accounts.join(', ') || '—' }))),
		table({
			id: 'jobs-table', title: 'Jobs', sortKey: 'start',
			cols: [
				{ key: 'cluster', label: 'Cluster' }, { key: 'job_id', label: 'Job' }, { key: 'name', label: 'Name' },
				{ key: 'user', label: 'User' }, { key: 'account', label: 'Account', fmt: (r) => r.account || r.namespace || '—' },
				{ key: 'partition', label: 'Partition' }, { key: 'state', label: 'State' },
				{ key: 'start', label: 'Start', fmt: (r) => f.time(r.start) },
				{ key: 'gpu_seconds', label: 'GPU time', num: true, fmt: (r) => f.gpuHours(r.gpu_seconds) },
				{ key: 'cost_micros', label: 'Cost', num: true, fmt: (r) => f.money(r.cost_micros) },
				{ key: 'idle_in_allocation_gpu_seconds', label: 'Idle', num: true, fmt: (r) => f.gpuHours(r.idle_in_allocation_gpu_seconds) },
			],
			rows: jobs,
			csv: { path: '/v1/jobs', params },
		}),
	];
}
