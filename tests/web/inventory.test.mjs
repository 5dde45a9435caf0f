// The Inventory view in a real browser (Debian's chromium) against the real
// daemon and a real database: the Slurm testbed's real `scontrol show node`
// (gpu01, gpu02: 4 GPUs; gpu03, gpu04: 2), contradicted by the GPU sources
// of its nodes, each capture given its node with --node: dcgm-exporter
// (tests/fixtures/dcgm/handwritten_slurm_hpc_job.prom, 2 GPUs) on gpu01,
// `nvidia-smi -q -x` (tests/fixtures/nvsmi/telegraf_tesla-t4.xml, no index)
// on gpu02, the AMD exporter's real MI300X lines (amd_dme_excerpts.prom,
// 4 boards, CPX partitions none) on gpu03, and a July nvidia-smi CSV
// (l40s_query_gpu.csv, its own timestamps: stale now) on gpu04. The view's
// per-node GPU tables hold exactly /v1/inventory's gpus, field by field,
// stale ones marked; its conflicts table is the API's; no console errors,
// axe-core clean.
import fs from 'node:fs';
import path from 'node:path';
import * as H from './lib/harness.mjs';

const { test, assert, eq } = H;
const SHOTS = path.join(H.ROOT, 'build/web-screenshots');
fs.mkdirSync(SHOTS, { recursive: true });
const fx = (p) => path.join(H.ROOT, 'tests/fixtures', p);

const dir = H.tmpDir('web-inventory');
const dsn = H.freshDb('gl_test_web_inventory');
const at = new Date(Date.now() - 120e3).toISOString().replace(/\.\d+Z$/, 'Z');
H.gl(dsn, ['migrate']);
H.gl(dsn, ['ingest', 'slurm-nodes', '--cluster', 'inv', '--nodes', fx('nodes/testbed/end_scontrol_show_node.txt'), '--at', at]);
H.gl(dsn, ['ingest', 'dcgm', '--cluster', 'inv', '--node', 'gpu01', '--at', at, '--file', fx('dcgm/handwritten_slurm_hpc_job.prom')]);
H.gl(dsn, ['ingest', 'nvidia-smi', '--cluster', 'inv', '--node', 'gpu02', '--at', at, '--file', fx('nvsmi/telegraf_tesla-t4.xml')]);
H.gl(dsn, ['ingest', 'dcgm', '--cluster', 'inv', '--node', 'gpu03', '--at', at, '--file', fx('dcgm/amd_dme_excerpts.prom')]);
H.gl(dsn, ['ingest', 'nvidia-smi', '--cluster', 'inv', '--node', 'gpu04', '--file', fx('nvsmi/l40s_query_gpu.csv')]);
const viewer = H.token(dsn, 'web-viewer', 'viewer');
const d = await H.startDaemon(dsn, dir);
const base = d.base;
const b = await H.browser();
const ctx = await b.newContext({ viewport: { width: 1440, height: 900 } });
const page = await ctx.newPage();
const w = H.watch(page);

// a GPU as the view must show it: the API's fields, unknown as a dash
const when = (iso) => (iso ? iso.replace('T', ' ').replace(/:00Z$|Z$/, ' UTC') : '—');
function shown(g) {
	const inst = g.mig_instance === null ? '' : '#' + g.mig_instance;
	return [g.index === null ? '—' : String(g.index), g.uuid || '—', g.model || '—', g.model_raw || '—',
		[g.mig_profile, inst].filter(Boolean).join(' ') || '—', g.driver || '—', g.source || '—', when(g.last_seen),
		g.stale ? (g.absent_since ? 'stale: absent since ' + when(g.absent_since) : 'stale') : ''];
}

try {
	await test('the Inventory view draws a table per node of the GPUs the sources report', async () => {
		await H.signIn(page, base, viewer);
		w.reset();
		await page.goto(base + '/#/inventory');
		await H.ready(page, 'inventory');
		await page.waitForSelector('#inventory-gpus');
		assert(w.clean(), w.report());
		await page.screenshot({ path: path.join(SHOTS, 'inventory.png'), fullPage: true });
		const nodes = await page.$$eval('#inventory-gpus section[data-node]', (ss) => ss.map((s) => s.dataset.node));
		eq(nodes.join(','), 'inv/gpu01,inv/gpu02,inv/gpu03,inv/gpu04', 'a table per node');
	});

	await test('each node\'s rows equal /v1/inventory gpus: index, UUID, model, profile, driver, source, last seen, stale', async () => {
		const api = (await H.api(base, viewer, '/v1/inventory')).body;
		assert(api.gpus.length >= 8, 'gpus ' + api.gpus.length);
		const tables = await page.$$eval('#inventory-gpus section[data-node]', (ss) => ss.map((s) => ({
			node: s.dataset.node,
			head: [...s.querySelectorAll('thead th')].map((t) => t.textContent),
			rows: [...s.querySelectorAll('tbody tr')].map((tr) => ({ stale: tr.classList.contains('stale'), cells: [...tr.cells].map((c) => c.textContent) })),
		})));
		eq(tables[0].head.join('|'), 'Index|UUID / serial|Model|Reported as|MIG / partition|Driver|Source|Last seen|Stale', 'columns');
		let n = 0;
		for (const t of tables) {
			const want = api.gpus.filter((g) => g.cluster + '/' + g.node === t.node);
			eq(t.rows.length, want.length, t.node + ' rows');
			// the table sorts by nothing: the API's order (node, index)
			want.forEach((g, i) => {
				eq(t.rows[i].cells.join('|'), shown(g).join('|'), t.node + ' row ' + i);
				eq(t.rows[i].stale, g.stale, t.node + ' row ' + i + ' marked stale');
			});
			n += want.length;
		}
		eq(n, api.gpus.length, 'every GPU of the API shown once');
		// what the captures print: gpu01's gpu="0"/"1", the XML's no index,
		// the July capture stale, today's not
		const g01 = tables.find((t) => t.node === 'inv/gpu01').rows.map((r) => r.cells[0]);
		eq(g01.join(','), '0,1', 'dcgm gpu label');
		eq(tables.find((t) => t.node === 'inv/gpu02').rows[0].cells[0], '—', 'nvidia-smi -q -x has no index');
		assert(tables.find((t) => t.node === 'inv/gpu04').rows.every((r) => r.stale), 'the July capture is stale');
		assert(tables.find((t) => t.node === 'inv/gpu01').rows.every((r) => !r.stale), 'a fresh scrape is not');
	});

	await test('the conflicts table is the API\'s: node, both counts, both sources', async () => {
		const api = (await H.api(base, viewer, '/v1/inventory')).body;
		const rows = await page.$$eval('#inventory-conflicts tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
		eq(rows.length, api.conflicts.length, 'conflict rows');
		eq(rows.length, 4, 'every node disagrees');
		for (const c of api.conflicts) {
			const r = rows.find((x) => x[1] === c.node);
			assert(r, 'row ' + c.node);
			eq(r.join('|'), [c.cluster, c.node, c.kind, c.scheduler_source, String(c.scheduler_gpus), c.exporter_sources,
				String(c.exporter_gpus), c.message].join('|'), c.node);
		}
		const g03 = rows.find((x) => x[1] === 'gpu03');
		eq(g03.slice(3, 7).join(' '), 'scontrol 2 amd 4', 'gpu03: the scheduler 2, the AMD exporter 4');
	});

	await test('axe-core finds no serious violation', async () => {
		const bad = await H.axe(page);
		assert(!bad.length, bad.join('\n'));
		assert(w.clean(), w.report());
	});
} finally {
	await b.close();
	const st = await d.stop();
	H.ok(st === 0, 'daemon stopped cleanly', 'exit ' + st);
	H.done();
}
