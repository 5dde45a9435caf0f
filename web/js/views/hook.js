// Idle hook: jobs the idle policy would act on now (and those it spared or
// has no data for), and the actions it took.
// GET /v1/idle/candidates and /v1/hook/actions; absent on older servers.
import { h, table, failure } from '../ui.js';
import * as f from '../fmt.js';

export async function render(ctx) {
	const [cand, act] = await Promise.allSettled([ctx.get('/v1/idle/candidates'), ctx.get('/v1/hook/actions')]);
	if (cand.status === 'rejected' && act.status === 'rejected') throw cand.reason;
	const out = [];
	const jobCols = [
		{ key: 'cluster', label: 'Cluster' }, { key: 'job_id', label: 'Job' }, { key: 'user', label: 'User' }, { key: 'owner', label: 'Owner' },
		{ key: 'gpus', label: 'GPUs', num: true, fmt: (r) => f.number(r.gpus, 2) },
		{ key: 'idle_minutes', label: 'Idle', num: true, fmt: (r) => f.duration((r.idle_minutes || 0) * 60) },
		{ key: 'idle_cost_micros', label: 'Idle cost', num: true, fmt: (r) => f.money(r.idle_cost_micros) },
	];
	if (cand.status === 'fulfilled') {
		const c = cand.value;
		out.push(table({ id: 'hook-candidates', title: 'Candidates now', sortKey: 'idle_minutes', rows: c.candidates || [], empty: 'No job is a candidate now.',
			cols: [...jobCols, { key: 'rule', label: 'Rule' }, { key: 'stage', label: 'Stage' }, { key: 'policy', label: 'Policy' }] }));
		out.push(table({ id: 'hook-spared', title: 'Spared', sortKey: 'idle_minutes', rows: c.spared || [], empty: 'No idle job is spared now.',
			cols: [...jobCols, { key: 'reason', label: 'Why' }] }));
		out.push(table({ id: 'hook-nodata', title: 'No data', sortKey: 'job_id', rows: c.no_data || [], empty: 'Every running job has exporter data.',
			cols: [...jobCols.slice(0, 5), { key: 'reason', label: 'Why' }] }));
	} else {
		out.push(h('h2', { text: 'Candidates' }), failure(cand.reason));
	}
	if (act.status === 'fulfilled') {
		out.push(table({ id: 'hook-actions', title: 'Past actions', sortKey: 'at', rows: act.value.actions || [], empty: 'The hook has not acted yet.',
			cols: [
				{ key: 'at', label: 'At', fmt: (r) => f.time(r.at) }, { key: 'cluster', label: 'Cluster' }, { key: 'job_id', label: 'Job' },
				{ key: 'owner', label: 'Owner' },
				// a controller's own policy name is kept but said to be no policy of this configuration
				{ key: 'policy', label: 'Policy', fmt: (r) => (r.policy_known === false ? `${r.policy} (not configured)` : r.policy) },
				{ key: 'stage', label: 'Stage' },
				{ key: 'command', label: 'Command' }, { key: 'exit_status', label: 'Exit', num: true },
				{ key: 'ok', label: 'Result', fmt: (r) => (r.ok ? 'ok' : 'failed') },
			] }));
	} else {
		out.push(h('h2', { text: 'Past actions' }), failure(act.reason));
	}
	return out;
}
