// The dashboard on the synthetic month of bench/bench_chargeback.c (10,000
// GPUs, 1,000,000 jobs in October 2026), in Debian's headless chromium
// through playwright-core: time from navigation to the chargeback view
// rendered (cold cache), bytes transferred on that first load, and the
// slowest API call the page made. Needs the environment of bench/run.sh and
// tests/web/node_modules (tests/web/run.sh installs it). Prints markdown
// rows "| figure | ours | target | ratio |".
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const H = await import(path.join(ROOT, 'tests/web/lib/harness.mjs'));
const require = createRequire(path.join(ROOT, 'tests/web/package.json'));
const { chromium } = require('playwright-core');
const { spawnSync } = await import('node:child_process');

const JOBS = Number(process.argv[2] || 1000000);
const RUNS = Number(process.argv[3] || 5);
const dir = H.tmpDir('bench-web');
const dsn = H.freshDb('gl_bench_web');
H.gl(dsn, ['migrate']);
let t0 = performance.now();
// the same generator as bench/bench_chargeback.c
const sql = `INSERT INTO clusters (name, kind) VALUES ('synth', 'slurm');
INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at, end_at, elapsed_s, gpu_micro, gpu_type, nodes)
 SELECT (SELECT cluster_id FROM clusters WHERE name = 'synth'), 'db:' || g, g::text, 'u' || (g % 2000), 'acct' || (g % 200),
  CASE WHEN g % 3 = 0 THEN 'h100' ELSE 'a100' END, 'COMPLETED', s - interval '10 minutes', s, s + d, extract(epoch FROM d)::bigint,
  (1 + g % 8) * 1000000, CASE WHEN g % 3 = 0 THEN 'h100' ELSE 'a100' END, ARRAY['n' || (g % 1250)]
 FROM (SELECT g, timestamptz '2026-10-01' + (g::double precision / ${JOBS}) * interval '31 days' AS s,
  make_interval(secs => 300 + (g::bigint * 7919) % 172800) AS d FROM generate_series(1, ${JOBS}) g) x;
ANALYZE jobs;`;
const r = spawnSync('psql', [dsn, '-q', '-v', 'ON_ERROR_STOP=1'], { input: sql, encoding: 'utf8' });
if (r.status !== 0) throw new Error(r.stderr);
const fs = await import('node:fs');
fs.writeFileSync(path.join(dir, 'rates.yaml'), 'rates:\n  - model: a100\n    per_gpu_hour: "2.50"\n  - model: h100\n    per_gpu_hour: "4.00"\n' +
	'owners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n    team: t2\n' +
	'  - match: account\n    value: acct3\n    team: t3\n  - match: user\n    value: \'*\'\n    team: rest\n');
H.gl(dsn, ['rates', 'load', path.join(dir, 'rates.yaml')]);
H.gl(dsn, ['rollup']);
console.error(`  generated ${JOBS} jobs and the rollup in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
const tok = H.token(dsn, 'bench', 'admin');
const d = await H.startDaemon(dsn, dir);
const b = await chromium.launch({ executablePath: H.CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
const times = [], bytes = [], slowest = [];
try {
	for (let i = 0; i < RUNS; i++) {
		// a new context each run: empty cache, as a first visit
		const ctx = await b.newContext({ viewport: { width: 1440, height: 900 } });
		await ctx.addInitScript((t) => sessionStorage.setItem('gpuledger.token', t), tok);
		const page = await ctx.newPage();
		const cdp = await ctx.newCDPSession(page);
		await cdp.send('Network.enable');
		let wire = 0;
		const started = new Map();
		let slow = { ms: 0, url: '' };
		cdp.on('Network.loadingFinished', (e) => { wire += e.encodedDataLength; });
		cdp.on('Network.requestWillBeSent', (e) => started.set(e.requestId, { t: e.timestamp, url: e.request.url }));
		cdp.on('Network.loadingFinished', (e) => {
			const s = started.get(e.requestId);
			if (s && s.url.includes('/v1/')) {
				const ms = (e.timestamp - s.t) * 1000;
				if (ms > slow.ms) slow = { ms, url: new URL(s.url).pathname + new URL(s.url).search };
			}
		});
		t0 = performance.now();
		await page.goto(d.base + '/#/chargeback?w=lastmonth&a=team');
		await page.waitForSelector('.view-body[data-view="chargeback"][data-ready="1"] #chargeback-table tbody tr');
		const ms = performance.now() - t0;
		await page.waitForTimeout(200); // let the last loadingFinished events arrive
		times.push(ms);
		bytes.push(wire);
		slowest.push(slow);
		console.error(`  run ${i + 1}: ${ms.toFixed(0)} ms, ${wire} bytes, slowest ${slow.url} ${slow.ms.toFixed(0)} ms`);
		await ctx.close();
	}
} finally {
	await b.close();
	await d.stop();
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor((a.length - 1) / 2)];
const t = med(times), by = med(bytes);
const sl = slowest.reduce((m, s) => (s.ms > m.ms ? s : m), { ms: 0, url: '' });
console.log(`| dashboard: navigation to chargeback view rendered, ${JOBS} jobs, cold cache (median of ${RUNS}) | ${t.toFixed(0)} ms | 1500 ms (target) | ${(t / 1500).toFixed(2)}x |`);
console.log(`| dashboard: bytes on the wire, first load (gzip) | ${(by / 1024).toFixed(0)} KB | 500 KB (target) | ${(by / 512000).toFixed(2)}x |`);
console.log(`| dashboard: slowest API call of that load (${sl.url.split('?')[0]}) | ${sl.ms.toFixed(0)} ms | - | - |`);
