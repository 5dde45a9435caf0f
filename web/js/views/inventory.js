// Inventory: clusters, nodes and their GPUs (model, MIG, source, since),
// state, and conflicts between sources; filter by any text. Below, every
// GPU the GPU sources report (dcgm-exporter, AMD, nvidia-smi), a table per
// node, stale ones marked.
import { h, stat, table } from '../ui.js';
import * as f from '../fmt.js';

// One row of a node's GPU table: the /v1/inventory gpus object as shown.
export function gpuRow(g) {
	const inst = g.mig_instance === null ? '' : '#' + g.mig_instance;
	return {
		index: g.index,
		uuid: g.uuid || '—',
		model: g.model || '—',
		model_raw: g.model_raw || '—',
		profile: [g.mig_profile, inst].filter(Boolean).join(' ') || '—',
		driver: g.driver || '—',
		source: g.source || '—',
		last_seen: g.last_seen,
		stale: g.stale ? (g.absent_since ? 'stale: absent since ' + f.time(g.absent_since) : 'stale') : '',
		__class: g.stale ? 'stale' : null,
	};
}

// A table per node of the GPUs its sources report, in the API's order.
function gpuTables(gpus) {
	const byNode = new Map();
	for (const g of gpus) {
		const k = g.cluster + '/' + g.node;
		if (!byNode.has(k)) byNode.set(k, []);
		byNode.get(k).push(g);
	}
	const cols = [
		{ key: 'index', label: 'Index', num: true, fmt: (r) => (r.index === null ? '—' : String(r.index)) },
		{ key: 'uuid', label: 'UUID / serial' }, { key: 'model', label: 'Model' }, { key: 'model_raw', label: 'Reported as' },
		{ key: 'profile', label: 'MIG / partition' }, { key: 'driver', label: 'Driver' }, { key: 'source', label: 'Source' },
		{ key: 'last_seen', label: 'Last seen', fmt: (r) => f.time(r.last_seen) }, { key: 'stale', label: 'Stale' },
	];
	let i = 0;
	return h('section', { id: 'inventory-gpus', 'aria-label': 'GPUs the sources report' },
		h('h2', { text: 'GPUs the sources report (' + gpus.length + ')' }),
		gpus.length ? [...byNode].map(([k, list]) => {
			const stale = list.filter((g) => g.stale).length;
			const el = table({
				id: 'inventory-gpus-' + i++, title: k + ': ' + list.length + (list.length === 1 ? ' GPU' : ' GPUs') + (stale ? ', ' + stale + ' stale' : ''),
				cols, rows: list.map(gpuRow),
			});
			el.dataset.node = k;
			return el;
		}) : h('p', { class: 'note', text: 'No GPU source (dcgm-exporter, AMD exporter, nvidia-smi) has reported a GPU yet.' }));
}

const conflictCols = [
	{ key: 'cluster', label: 'Cluster' }, { key: 'node', label: 'Node' }, { key: 'kind', label: 'Kind' },
	{ key: 'scheduler_source', label: 'Scheduler', fmt: (r) => r.scheduler_source ?? '—' },
	{ key: 'scheduler_gpus', label: 'Scheduler GPUs', num: true },
	{ key: 'exporter_sources', label: 'GPU sources', fmt: (r) => r.exporter_sources ?? '—' },
	{ key: 'exporter_gpus', label: 'Reported GPUs', num: true }, { key: 'message', label: 'Message' },
];

export async function render(ctx) {
	const inv = await ctx.get('/v1/inventory');
	const rows = inv.nodes.map((n) => ({
		cluster: n.cluster,
		node: n.node,
		partitions: n.partitions || '',
		gpus: n.gpus.reduce((s, g) => s + g.gpus, 0),
		models: n.gpus.map((g) => g.gpus + '× ' + g.model + (g.mig_instances ? ' (MIG ' + g.mig_instances + ')' : '')).join(', '),
		mig: n.gpus.reduce((s, g) => s + (g.mig_instances || 0), 0),
		source: [...new Set(n.gpus.map((g) => g.source))].join(', '),
		driver: n.gpus.map((g) => g.driver).filter(Boolean).join(', '),
		since: n.gpus.map((g) => g.since).filter(Boolean).sort().pop() || null,
		state: n.state,
		reason: (n.states || []).map((s) => s.reason).filter(Boolean).join('; '),
	}));
	const holder = h('div');
	const draw = (q) => {
		const ql = q.toLowerCase();
		const shown = ql ? rows.filter((r) => Object.values(r).some((v) => String(v ?? '').toLowerCase().includes(ql))) : rows;
		holder.replaceChildren(table({
			id: 'inventory-table', title: 'Nodes (' + shown.length + ' of ' + rows.length + ')', sortKey: 'node', sortDir: 'asc',
			empty: rows.length ? 'No node matches the filter.' : 'No node inventory yet (scontrol, kubectl get nodes or the exporter).',
			cols: [
				{ key: 'cluster', label: 'Cluster' }, { key: 'node', label: 'Node' }, { key: 'partitions', label: 'Partitions' },
				{ key: 'gpus', label: 'GPUs', num: true }, { key: 'models', label: 'Models' },
				{ key: 'driver', label: 'Driver', fmt: (r) => r.driver || '—' }, { key: 'state', label: 'State' },
				{ key: 'source', label: 'Source' }, { key: 'since', label: 'Last seen', fmt: (r) => f.time(r.since) },
				{ key: 'reason', label: 'Reason', fmt: (r) => r.reason || '' },
			],
			rows: shown,
			csv: { path: '/v1/inventory', params: {} },
		}));
	};
	draw('');
	const search = h('input', { id: 'inventory-filter', type: 'search', placeholder: 'node, model, state…', oninput: (e) => draw(e.target.value) });
	return [
		h('div', { class: 'stats' }, inv.clusters.map((c) => stat(c.name + ' (' + c.kind + ')', f.number(c.scheduler_gpus) + ' GPUs',
			c.scheduler_nodes + ' nodes; exporter sees ' + c.exporter_gpus + '; snapshot ' + f.time(c.last_snapshot)))),
		h('div', { class: 'filter' }, h('label', { for: 'inventory-filter', text: 'Filter ' }), search),
		holder,
		inv.conflicts.length ? table({
			id: 'inventory-conflicts', title: 'Conflicts between sources (' + inv.conflicts.length + ')', sortKey: 'node', sortDir: 'asc',
			cols: conflictCols, rows: inv.conflicts,
		}) : h('p', { class: 'note', text: 'No conflicts between sources.' }),
		gpuTables(inv.gpus || []),
	];
}
