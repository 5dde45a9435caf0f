// Inventory: clusters, nodes and their GPUs (model, MIG, source, since),
// state, and conflicts between sources; filter by any text.
import { h, stat, table } from '../ui.js';
import * as f from '../fmt.js';

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
			id: 'inventory-conflicts', title: 'Conflicts between sources',
			cols: Object.keys(inv.conflicts[0]).map((k) => ({ key: k, label: k.replace(/_/g, ' '), fmt: (r) => (typeof r[k] === 'object' && r[k] !== null ? JSON.stringify(r[k]) : String(r[k] ?? '—')) })),
			rows: inv.conflicts,
		}) : h('p', { class: 'note', text: 'No conflicts between sources.' }),
	];
}
