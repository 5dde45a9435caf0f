// The Queue view by workload type in a real browser (Debian's chromium)
// against the real daemon and a real database: the Slurm testbed's jobs
// with workload type rules (partition v100 -> development, account teama
// -> training, the rest unclassified); the view's table equals
// /v1/queue?aggregate=workload_type, a row per type with its p50/p90/p99
// waits, no console errors, axe-core clean.
import fs from 'node:fs';
import path from 'node:path';
import * as H from './lib/harness.mjs';

const { test, assert, eq } = H;
const src = fs.readFileSync(path.join(H.ROOT, 'web/js/fmt.js'), 'utf8');
const f = await import('data:text/javascript,' + encodeURIComponent(src));

const dir = H.tmpDir('web-queue-workload');
const dsn = H.freshDb('gl_test_web_queue_workload');
H.loadFixtures(dsn, dir);
const rules = path.join(dir, 'rules.yaml');
fs.writeFileSync(rules, H.RATES + 'workload_types:\n' +
	'  - match: partition\n    value: v100\n    type: development\n' +
	'  - match: account\n    value: teama\n    type: training\n');
H.gl(dsn, ['rates', 'load', rules]);
const admin = H.token(dsn, 'web-admin', 'admin');
const d = await H.startDaemon(dsn, dir);
const base = d.base;
const b = await H.browser();
const page = await (await b.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
const w = H.watch(page);
// the testbed ran on 2026-11-22
const WIN = '2026-11-01T00:00:00Z,2026-12-01T00:00:00Z';

try {
	await test('the Queue view shows waits by workload type, equal to the API', async () => {
		await H.signIn(page, base, admin);
		w.reset();
		await page.goto(base + '/#/queue?w=custom&from=2026-11-01&to=2026-11-30&a=workload_type');
		await H.ready(page, 'queue');
		const opts = await page.$$eval('#aggregate option', (os) => os.map((o) => o.value));
		assert(opts.includes('workload_type'), 'offered: ' + opts.join(','));
		const req = w.requests.map((u) => new URL(u)).find((u) => u.pathname === '/v1/queue');
		eq(req.searchParams.get('aggregate'), 'workload_type', 'aggregate asked');
		const api = (await H.api(base, admin, '/v1/queue?aggregate=workload_type&window=' + encodeURIComponent(WIN))).body;
		const keys = api.items.map((i) => i.key).sort();
		// teama's a100 jobs training, every v100 job development, teamb's and teamc's a100 jobs unclassified
		for (const k of ['development', 'training', 'unclassified']) assert(keys.includes(k), 'type ' + k + ' in ' + keys.join(','));
		const rows = await page.$$eval('#queue-table tbody tr:not(.total)', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
		eq(rows.length, api.items.length, 'a row per type');
		for (const it of api.items) {
			const r = rows.find((x) => x[0] === it.key);
			assert(r, 'row for ' + it.key);
			eq(r.slice(1, 5).join('|'), [f.number(it.jobs), f.duration(it.wait_p50_s), f.duration(it.wait_p90_s), f.duration(it.wait_p99_s)].join('|'),
				it.key + ': jobs, p50, p90, p99');
		}
		const heading = await page.textContent('#queue-table');
		assert(/workload type/i.test(heading), 'the table names the dimension');
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
