// Shared set-up for the browser tests: a fresh database on the throwaway
// cluster tests/run.sh started (GL_TEST_* variables), real fixture data
// loaded with the real binary, the real daemon on a free port serving web/,
// Debian's chromium through playwright-core, and TAP output.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const BIN = process.env.GL_TEST_BIN || path.join(ROOT, 'build/gpuledger');
const ADMIN_DSN = process.env.GL_TEST_ADMIN_DSN;
const APP_DSN = process.env.GL_TEST_APP_DSN;
const OWNER_DSN = process.env.GL_TEST_OWNER_DSN;
const TMP = process.env.GL_TEST_TMP || os.tmpdir();
export const CHROMIUM = process.env.GL_TEST_CHROMIUM || '/usr/bin/chromium';

// ---- TAP ----
let n = 0, failed = 0;
export function ok(cond, name, diag) {
	n++;
	if (!cond) failed++;
	console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${name}`);
	if (!cond && diag !== undefined) for (const l of String(diag).split('\n')) console.log('  # ' + l);
	return cond;
}
export function skip(name, why) {
	n++;
	console.log(`ok ${n} - ${name} # SKIP ${why}`);
}
export function done() {
	console.log(`1..${n}`);
	process.exitCode = failed ? 1 : 0;
}
// runs fn as one test; an exception is a failure with its message
export async function test(name, fn) {
	try {
		const r = await fn();
		if (r === 'skip') return;
		ok(true, name);
	} catch (e) {
		ok(false, name, e && e.stack ? e.stack : String(e));
	}
}
export function assert(cond, msg) {
	if (!cond) throw new Error(msg);
}
export function eq(a, b, msg) {
	if (a !== b) throw new Error(`${msg}: got ${JSON.stringify(a)}, want ${JSON.stringify(b)}`);
}

// ---- database, binary, daemon ----
function must(r, what) {
	if (r.status !== 0) throw new Error(`${what}: exit ${r.status}\n${r.stderr}\n${r.stdout}`);
	return r.stdout;
}

export function freshDb(name) {
	if (!ADMIN_DSN || !APP_DSN) throw new Error('GL_TEST_ADMIN_DSN / GL_TEST_APP_DSN are not set: run through tests/run.sh');
	must(spawnSync('psql', [ADMIN_DSN, '-q', '-v', 'ON_ERROR_STOP=1', '-c', `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`,
		'-c', `CREATE DATABASE "${name}" OWNER gpuledger_owner TEMPLATE template0 ENCODING 'UTF8'`], { encoding: 'utf8' }), 'psql');
	return `${APP_DSN} dbname=${name}`;
}

// The two roles, as a site configures them: the service's DSN, and the
// schema owner's for migrations (docs/security.md, "Two roles").
export function dbEnv(dsn) {
	const env = { ...process.env, GPULEDGER_DSN: dsn };
	if (OWNER_DSN && dsn.startsWith(APP_DSN + ' ')) env.GPULEDGER_MIGRATE_DSN = OWNER_DSN + dsn.slice(APP_DSN.length);
	return env;
}

export function gl(dsn, args, input) {
	return must(spawnSync(BIN, args, { encoding: 'utf8', input, env: dbEnv(dsn) }), 'gpuledger ' + args.join(' '));
}

// scopes: --scope arguments, 'team=vision', 'account=teama' (docs/security.md)
export function token(dsn, name, role, scopes = []) {
	const out = gl(dsn, ['token', 'create', '--name', name, '--role', role, ...scopes.flatMap((s) => ['--scope', s])]);
	const m = /glt_[A-Za-z0-9_-]{43}/.exec(out);
	if (!m) throw new Error('no token in: ' + out);
	return m[0];
}

// Philly jobs (tests/fixtures/philly, MIT) as sacct lines, as test_philly.c does.
function phillySacct(file) {
	const jobs = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/fixtures/philly/sampled_jobs.json'), 'utf8'));
	const iso = (s) => (s ? s.replace(' ', 'T') : null);
	const lines = [];
	let k = 0;
	for (const j of jobs) {
		const sub = iso(j.submitted_time), st = iso(j.start_time), en = iso(j.end_time);
		if (!sub || !st || !en || en < st) continue;
		const gpus = (j.detail || []).reduce((s, d) => s + (d.gpus || []).length, 0);
		const nodes = (j.detail || []).map((d) => d.ip).join(',');
		k++;
		const el = (Date.parse(en + 'Z') - Date.parse(st + 'Z')) / 1000;
		lines.push([k, k, 'philly', 'gpu', j.vc, j.user, sub, sub, st, en, el, j.status === 'Pass' ? 'COMPLETED' : 'FAILED',
			'gres/gpu=' + gpus, 'gres/gpu=' + gpus, nodes, k, j.jobid].join('|'));
	}
	fs.writeFileSync(file, lines.join('\n') + '\n');
	return k;
}

export const RATES = 'rates:\n  - model: a100\n    per_gpu_hour: "2.50"\n  - model: v100\n    per_gpu_hour: "1.20"\n' +
	'  - model: unknown\n    per_gpu_hour: "0.90"\n' +
	'owners:\n  - match: account\n    value: teama\n    team: vision\n  - match: account\n    value: teamb\n    team: language\n';

// Loads the real fixtures: the Slurm testbed (jobs, nodes, events,
// reservations), dcgm-exporter scrapes and a sample of Philly jobs.
export function loadFixtures(dsn, dir) {
	gl(dsn, ['migrate']);
	const tb = path.join(ROOT, 'tests/fixtures/sacct/testbed');
	const fields = fs.readFileSync(path.join(tb, 'sacct_fields.txt'), 'utf8').trim().split('|').join(',');
	gl(dsn, ['ingest', 'sacct', '--cluster', 'testgpu', '--file', path.join(tb, 'sacct_alloc.txt'), '--fields', fields]);
	const nd = path.join(ROOT, 'tests/fixtures/nodes/testbed');
	gl(dsn, ['ingest', 'slurm-nodes', '--cluster', 'testgpu', '--nodes', path.join(nd, 'end_scontrol_show_node.txt'),
		'--events', path.join(nd, 'sacctmgr_events.txt'), '--reservations', path.join(nd, 'sacctmgr_reservations.txt'),
		'--at', fs.readFileSync(path.join(nd, 'end_taken_at.txt'), 'utf8').trim() + 'Z']);
	gl(dsn, ['ingest', 'dcgm', '--cluster', 'dcgm-lab', '--file', path.join(ROOT, 'tests/fixtures/dcgm/datadog_dcgm_fixture_metrics.prom'),
		'--at', '2026-11-22T16:05:00Z']);
	const ph = path.join(dir, 'philly-sacct.txt');
	phillySacct(ph);
	gl(dsn, ['ingest', 'sacct', '--cluster', 'philly', '--file', ph, '--fields',
		'JobID,JobIDRaw,Cluster,Partition,Account,User,Submit,Eligible,Start,End,ElapsedRaw,State,ReqTRES,AllocTRES,NodeList,DBIndex,JobName']);
	const rates = path.join(dir, 'rates.yaml');
	fs.writeFileSync(rates, RATES);
	gl(dsn, ['rates', 'load', rates]);
}

// Starts `gpuledger serve` on a free loopback port; resolves {base, stop}.
export async function startDaemon(dsn, dir, extraYaml = '') {
	const cfg = path.join(dir, 'config.yaml'), portFile = path.join(dir, 'port'), log = path.join(dir, 'daemon.log');
	fs.writeFileSync(cfg, `log:\n  level: warn\nserver:\n  web_dir: ${path.join(ROOT, 'web')}\n${extraYaml}`);
	fs.rmSync(portFile, { force: true });
	const out = fs.openSync(log, 'w');
	const child = spawn(BIN, ['--config', cfg, 'serve', '--no-ingest', '--listen', '127.0.0.1:0', '--port-file', portFile],
		{ env: dbEnv(dsn), stdio: ['ignore', out, out] });
	for (let i = 0; i < 200; i++) {
		if (child.exitCode !== null) throw new Error('daemon exited: ' + fs.readFileSync(log, 'utf8'));
		const p = fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8').trim() : '';
		if (p) {
			const base = `http://127.0.0.1:${p}`;
			try {
				const r = await fetch(base + '/healthz');
				// stop() resolves with the exit status (0 = clean, e.g. no sanitizer report)
				if (r.ok) return { base, log, stop: () => new Promise((res) => { child.once('exit', (code, sig) => res(sig ? 128 : code)); child.kill('SIGTERM'); }) };
			} catch { /* not yet */ }
		}
		await new Promise((r) => setTimeout(r, 50));
	}
	child.kill('SIGKILL');
	throw new Error('daemon did not start: ' + fs.readFileSync(log, 'utf8'));
}

export function tmpDir(name) {
	return fs.mkdtempSync(path.join(TMP, name + '-'));
}

export async function api(base, tok, p) {
	const r = await fetch(base + p, { headers: { Authorization: 'Bearer ' + tok } });
	return { status: r.status, body: r.headers.get('content-type')?.includes('json') ? await r.json() : await r.text(), headers: r.headers };
}

export async function browser() {
	const { chromium } = await import('playwright-core');
	return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

// A page that records what a test must see none of: console errors,
// uncaught exceptions, failed requests and HTTP errors.
export function watch(page) {
	const w = { errors: [], failed: [], http: [], requests: [] };
	page.on('console', (m) => { if (m.type() === 'error') w.errors.push(m.text()); });
	page.on('pageerror', (e) => w.errors.push('pageerror: ' + e.message));
	page.on('requestfailed', (r) => w.failed.push(r.url() + ' ' + (r.failure()?.errorText || '')));
	page.on('request', (r) => w.requests.push(r.url()));
	page.on('response', (r) => { if (r.status() >= 400) w.http.push(r.status() + ' ' + r.url()); });
	w.reset = () => { w.errors.length = 0; w.failed.length = 0; w.http.length = 0; w.requests.length = 0; };
	w.clean = () => !w.errors.length && !w.failed.length && !w.http.length;
	w.report = () => JSON.stringify({ errors: w.errors, failed: w.failed, http: w.http });
	return w;
}

export async function signIn(page, base, tok) {
	await page.goto(base + '/');
	await page.waitForSelector('#token');
	await page.fill('#token', tok);
	await page.click('#signin-form button[type=submit]');
	await page.waitForSelector('#shell:not([hidden])');
	await ready(page);
}

// waits until the current view has rendered (or failed) its data
export async function ready(page, view) {
	const sel = view ? `.view-body[data-view="${view}"][data-ready="1"]` : '.view-body[data-ready="1"]';
	await page.waitForSelector(sel, { timeout: 15000 });
}

export const AXE = () => fs.readFileSync(path.join(ROOT, 'tests/web/node_modules/axe-core/axe.min.js'), 'utf8');

// axe-core's serious and critical violations on the page (evaluated over
// the DevTools protocol, so the page's CSP does not have to allow it)
export async function axe(page) {
	if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE());
	const r = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
	return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
		.map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.slice(0, 3).map((x) => x.target.join(' ')).join('; ')})`);
}
