// The dashboard on the simulated demo fleet, as `make run` sets it up: the
// simulator started by scripts/demo/sim.sh (shims and dcgm-exporters on
// loopback, a small fleet), its history and budgets loaded by the same
// script, then the real daemon with the demo config ingesting the live
// fleet through its periodic sources. In real Chromium every view an admin
// sees renders real content (no empty, unavailable or error state, no
// console error or failed request), and the figures a view shows for a
// closed window are the API's: Fleet's saturation, Chargeback's total,
// Queue's rows, Jobs' first page.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as H from './lib/harness.mjs';

const { test, assert, eq } = H;
const BIN = process.env.GL_TEST_BIN || path.join(H.ROOT, 'build/gpuledger');
const dir = H.tmpDir('web-demo-sim');
const dsn = H.freshDb('gl_test_web_demo_sim');
H.gl(dsn, ['migrate']);
const env = { ...H.dbEnv(dsn), SIM_DIR: dir, SIM_GPUS: '96', SIM_HISTORY_DAYS: '3', SIM_SPEED: '60' };
const sim = (args) => {
	const r = spawnSync(path.join(H.ROOT, 'scripts/demo/sim.sh'), args, { encoding: 'utf8', env, cwd: H.ROOT });
	if (r.status !== 0) throw new Error(`sim.sh ${args[0]}: exit ${r.status}\n${r.stderr}`);
	return r.stdout.trim();
};
const cfg = sim(['start', path.dirname(BIN)]);
let daemon = null, b = null;

async function startDemoDaemon() {
	const portFile = path.join(dir, 'port'), log = path.join(dir, 'daemon.log');
	const out = fs.openSync(log, 'w');
	const child = spawn(BIN, ['--config', cfg, 'serve', '--listen', '127.0.0.1:0', '--port-file', portFile],
		{ env, cwd: H.ROOT, stdio: ['ignore', out, out] });
	for (let i = 0; i < 600; i++) {
		if (child.exitCode !== null) throw new Error('daemon exited: ' + fs.readFileSync(log, 'utf8'));
		const p = fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8').trim() : '';
		if (p) {
			try {
				if ((await fetch(`http://127.0.0.1:${p}/healthz`)).ok) return { child, base: `http://127.0.0.1:${p}` };
			} catch { /* not yet */ }
		}
		await new Promise((r) => setTimeout(r, 100));
	}
	child.kill('SIGKILL');
	throw new Error('daemon did not start: ' + fs.readFileSync(log, 'utf8'));
}

try {
	sim(['history', BIN, '--config', cfg]);
	sim(['budgets', BIN, '--config', cfg]);
	daemon = await startDemoDaemon();
	const base = daemon.base;
	const admin = H.token(dsn, 'web-demo-admin', 'admin');
	// live: the daemon's own sources bring jobs and both clusters' capacity
	let live = null;
	for (let i = 0; i < 80 && !live; i++) {
		const cap = (await H.api(base, admin, '/v1/capacity?window=1h&aggregate=cluster')).body;
		const jobs = (await H.api(base, admin, '/v1/jobs?limit=1&window=1h')).body;
		const cand = (await H.api(base, admin, '/v1/idle/candidates?policy=demo-idle')).body;
		const clusters = (cap.rows || []).filter((r) => r.reported_gpu_seconds > 0).map((r) => r.cluster).sort();
		// the idle hook's dry run needs a few scrapes of idle GPUs
		if (clusters.join(',') === 'sim-k8s,sim-slurm' && jobs.jobs?.length && cand.candidates?.length) live = clusters;
		else await new Promise((r) => setTimeout(r, 1000));
	}
	await test('the daemon ingests the simulated fleet through its periodic sources', async () => {
		eq((live || []).join(','), 'sim-k8s,sim-slurm', 'clusters with capacity in the last hour, jobs and idle-hook candidates');
	});

	b = await H.browser();
	const page = await (await b.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
	const w = H.watch(page);
	await H.signIn(page, base, admin);
	const views = await page.$$eval('#nav a', (as) => as.map((a) => a.dataset.view));
	for (const v of views) {
		await test(`view ${v} shows the simulated fleet: content, no empty or error state, no console error`, async () => {
			w.reset();
			await page.goto(base + '/#/' + v);
			await H.ready(page, v);
			const s = await page.$eval('.view-body', (e) => ({
				state: e.querySelector('[data-state]')?.dataset.state || 'ok',
				rows: e.querySelectorAll('tbody tr').length,
				charts: e.querySelectorAll('svg').length,
				stats: e.querySelectorAll('.stat').length,
			}));
			eq(s.state, 'ok', v + ' state');
			assert(s.rows + s.charts + s.stats > 0, v + ': nothing shown ' + JSON.stringify(s));
			assert(w.clean(), w.report());
		});
	}

	// yesterday is closed: the figures do not move while the fleet runs
	const win = '&w=yesterday';
	const yday = async (p) => (await H.api(base, admin, p + (p.includes('?') ? '&' : '?') + 'window=yesterday')).body;
	await test('Fleet: the saturation of yesterday is the API\'s', async () => {
		await page.goto(base + '/#/fleet?a=cluster' + win);
		await page.reload();
		await H.ready(page, 'fleet');
		const api = await yday('/v1/capacity?aggregate=cluster');
		assert(api.totals.saturation > 0, 'the simulated fleet was busy yesterday');
		const pct = (x) => new Intl.NumberFormat('en-US', { style: 'percent', maximumFractionDigits: 1 }).format(x);
		const stats = Object.fromEntries(await page.$$eval('.stat', (ss) => ss.map((e) => [e.querySelector('.label').textContent, e.querySelector('.value').textContent])));
		eq(stats.Saturation, pct(api.totals.saturation), 'the Saturation stat');
	});
	await test('Chargeback: yesterday\'s shown total and every team line are the API\'s', async () => {
		await page.goto(base + '/#/chargeback?a=team' + win);
		await page.reload();
		await H.ready(page, 'chargeback');
		const api = await yday('/v1/chargeback?aggregate=team');
		assert(Number(api.totals.total) > 0, 'money yesterday');
		const text = await page.$eval('.view-body', (e) => e.textContent);
		const grouped = (s) => Number(s).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
		assert(text.includes(grouped(api.totals.total)), 'the total ' + api.totals.total + ' shown');
		const teams = api.steps[0].items.map((x) => x.name).filter((n) => !n.startsWith('__'));
		assert(teams.length > 1, 'teams yesterday: ' + teams.join(','));
		for (const t of teams) assert(text.includes(t), 'team ' + t + ' shown');
	});
	await test('Jobs: the first page lists the API\'s newest jobs of yesterday', async () => {
		await page.goto(base + '/#/jobs?' + win.slice(1));
		await page.reload();
		await H.ready(page, 'jobs');
		const api = await yday('/v1/jobs?limit=5');
		assert(api.jobs.length > 0, 'jobs yesterday');
		const text = await page.$eval('.view-body', (e) => e.textContent);
		for (const j of api.jobs) assert(text.includes(j.job_id), 'job ' + j.job_id + ' shown');
	});
} finally {
	if (b) await b.close();
	if (daemon) {
		daemon.child.kill('SIGTERM');
		await new Promise((r) => { if (daemon.child.exitCode !== null) r(); else daemon.child.once('exit', r); });
	}
	try { sim(['stop']); } catch (e) { console.log('# ' + e.message); }
	H.done();
}
