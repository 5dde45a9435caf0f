// The Inference view in a real browser (Debian's chromium) against the real
// daemon and a real database: pods on an a100 at 2.50 an hour serving the
// real vLLM and SGLang scrapes of tests/fixtures/serving (their counters set
// per scrape), chat-0's GPU idle half an hour by dcgm-exporter lines; one
// endpoint on a pod the ledger does not know. The chart of cost per 1M
// generated tokens over time per model with its idle part, its numbers as
// a table equal to the API's, the table's per-request prices equal to the
// API's to the micro-unit, the unattributed requests apart, no console
// errors, axe-core clean.
import fs from 'node:fs';
import path from 'node:path';
import * as H from './lib/harness.mjs';

const { test, assert, eq } = H;
const SHOTS = path.join(H.ROOT, 'build/web-screenshots');
fs.mkdirSync(SHOTS, { recursive: true });
const FX = path.join(H.ROOT, 'tests/fixtures/serving');
const QWEN = 'model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"';
const LLAMA = 'model_name="meta-llama/Llama-3.1-8B-Instruct"';

const dir = H.tmpDir('web-inference');
const dsn = H.freshDb('gl_test_web_inference');

// a real scrape with some series' values set (the test helper of the C tests)
function scrapeWith(file, pairs) {
	return fs.readFileSync(path.join(FX, file), 'utf8').split('\n').map((line) => {
		for (const [series, v] of pairs) if (line.startsWith(series + ' ')) return series + ' ' + v;
		return line;
	}).join('\n');
}

function ingest(file, pairs, endpoint, pod, at) {
	const p = path.join(dir, `${endpoint}-${pod}-${at}.prom`.replace(/:/g, ''));
	fs.writeFileSync(p, scrapeWith(file, pairs));
	H.gl(dsn, ['ingest', 'serving', '--file', p, '--at', at, '--endpoint', endpoint, '--cluster', 'k1', '--pod', 'llm/' + pod]);
}

H.gl(dsn, ['migrate']);
H.gl(dsn, ['ingest', 'kube-nodes', '--cluster', 'k1', '--file', path.join(H.ROOT, 'tests/fixtures/serving/kube_nodes.json'),
	'--at', '2026-10-01T00:00:00Z']);
H.gl(dsn, ['ingest', 'kube', '--cluster', 'k1', '--file', path.join(FX, 'kube_pods_serving.json'), '--at', '2026-10-02T10:00:00Z']);
const vl = (r, p, g) => [[`vllm:request_success_total{finished_reason="stop",${QWEN}}`, r], [`vllm:prompt_tokens_total{${QWEN}}`, p],
	[`vllm:generation_tokens_total{${QWEN}}`, g]];
ingest('vllm_aibrix_qwen25_coder.prom', vl('4.0', '148.0', '955.0'), 'chat', 'chat-0', '2026-10-02T00:00:30Z');
ingest('vllm_aibrix_qwen25_coder.prom', vl('604.0', '400148.0', '900955.0'), 'chat', 'chat-0', '2026-10-02T05:00:00Z');
ingest('vllm_aibrix_qwen25_coder.prom', vl('1028.0', '750148.0', '1600955.0'), 'chat', 'chat-0', '2026-10-02T09:59:30Z');
ingest('sglang_llama31_8b.prom', [], 'sg', 'sg-0', '2026-10-02T00:05:00Z');
ingest('sglang_llama31_8b.prom', [[`sglang:generation_tokens_total{${LLAMA}}`, '9.557572e+06'],
	[`sglang:e2e_request_latency_seconds_bucket{le="+Inf",${LLAMA}}`, '11428.0'],
	[`sglang:e2e_request_latency_seconds_count{${LLAMA}}`, '11428.0']], 'sg', 'sg-0', '2026-10-02T09:55:00Z');
ingest('vllm_aibrix_qwen25_coder.prom', vl('4.0', '148.0', '955.0'), 'ghost', 'ghost-0', '2026-10-02T01:00:00Z');
ingest('vllm_aibrix_qwen25_coder.prom', vl('29.0', '248.0', '1955.0'), 'ghost', 'ghost-0', '2026-10-02T02:00:00Z');
// chat-0's GPU idle (util 0) for 30 minutes, dcgm-exporter's line format
for (let k = 0; k < 60; k++) {
	const t = new Date(Date.parse('2026-10-02T06:00:00Z') + k * 30e3).toISOString().replace('.000Z', 'Z');
	const p = path.join(dir, 'dcgm-' + k + '.prom');
	fs.writeFileSync(p, 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-kn1-0000",modelName="NVIDIA A100-SXM4-80GB",Hostname="kn1",namespace="llm",pod="chat-0"} 0\n');
	H.gl(dsn, ['ingest', 'dcgm', '--cluster', 'k1', '--file', p, '--at', t]);
}
const rates = path.join(dir, 'rates.yaml');
fs.writeFileSync(rates, 'rates:\n  - model: a100\n    per_gpu_hour: "2.50"\n');
H.gl(dsn, ['rates', 'load', rates]);
const admin = H.token(dsn, 'web-admin', 'admin');
const d = await H.startDaemon(dsn, dir);
const base = d.base;
const b = await H.browser();
const ctx = await b.newContext({ viewport: { width: 1440, height: 900 } });
const page = await ctx.newPage();
const w = H.watch(page);
// ten days: drawn by day (a week or less is drawn by hour)
const HASH = '#/inference?w=custom&from=2026-10-01&to=2026-10-10&a=model_name';
const WIN = '2026-10-01T00:00:00Z,2026-10-11T00:00:00Z';

try {
	await test('the Inference view draws cost per 1M generated tokens per model, with its idle part', async () => {
		await H.signIn(page, base, admin);
		w.reset();
		await page.goto(base + '/' + HASH);
		await H.ready(page, 'inference');
		await page.waitForSelector('#inference-chart canvas');
		assert(w.clean(), w.report());
		await page.screenshot({ path: path.join(SHOTS, 'inference.png'), fullPage: true });
		const req = w.requests.map((u) => new URL(u)).find((u) => u.pathname === '/v1/inference');
		eq(req.searchParams.get('aggregate'), 'model_name', 'aggregate');
		eq(req.searchParams.get('step'), 'day', 'step');
	});

	await test('the chart as a table equals the API: cost and idle cost per 1M generated tokens', async () => {
		const api = (await H.api(base, admin, '/v1/inference?aggregate=model_name&step=day&window=' + encodeURIComponent(WIN))).body;
		const day = api.steps.find((s) => s.start === '2026-10-02T00:00:00Z');
		const qwen = day.items.find((i) => i.name === 'Qwen/Qwen2.5-Coder-1.5B-Instruct');
		// chat-0: 10 h of one a100 at 2.50 = 25.00 for 1,600,000 generated
		// tokens = 15.625 per 1M; its idle GPU time (the exporter's half
		// hour, as the ledger counts it) costs 25.00 x idle / 36,000 GPU-s
		eq(qwen.cost_micros, 25000000, 'cost');
		eq(qwen.generated_tokens, 1600000, 'tokens');
		const idle = qwen.idle_in_allocation_gpu_seconds;
		assert(idle >= 1740 && idle <= 1800, 'idle ' + idle);
		eq(qwen.idle_cost_micros, Math.floor((2 * 25000000 * idle + 36000) / 72000), 'idle cost');
		const four = (x) => x.toLocaleString('en', { maximumFractionDigits: 4 });
		const head = await page.$$eval('#inference-chart-data thead th', (ths) => ths.map((t) => t.textContent));
		const rows = await page.$$eval('#inference-chart-data tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
		eq(rows.length, 10, 'a row a day');
		const col = (name) => head.indexOf(name);
		const r2 = rows.find((r) => r[0] === '2026-10-02T00:00:00Z');
		eq(rows.find((r) => r[0] === '2026-10-05T00:00:00Z')[col('Qwen/Qwen2.5-Coder-1.5B-Instruct: cost per 1M generated tokens')], '—', 'a day without serving');
		eq(r2[col('Qwen/Qwen2.5-Coder-1.5B-Instruct: cost per 1M generated tokens')], '15.625', 'cost per 1M tokens');
		eq(r2[col('Qwen/Qwen2.5-Coder-1.5B-Instruct: of which idle GPUs')], four(qwen.idle_cost_micros / 1600000), 'idle part');
		eq(r2[col('meta-llama/Llama-3.1-8B-Instruct: cost per 1M generated tokens')], '12.5', 'sg: 25.00 / 2M');
		eq(r2[col('meta-llama/Llama-3.1-8B-Instruct: of which idle GPUs')], '—', 'no exporter data: unknown');
	});

	await test('the table: per-request prices as the API states them, the unknown pod apart', async () => {
		const api = (await H.api(base, admin, '/v1/inference?aggregate=model_name&step=day&window=' + encodeURIComponent(WIN))).body;
		const head = await page.$$eval('#inference-table thead th', (ths) => ths.map((t) => t.textContent.replace(/[▲▼↕]/g, '').trim()));
		const rows = await page.$$eval('#inference-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
		for (const it of api.items) {
			const r = rows.find((x) => x[0] === it.name);
			assert(r, 'row ' + it.name);
			eq(r[head.indexOf('Requests')], Number(it.requests).toLocaleString('en'), it.name + ' requests');
			const p = it.cost_per_1k_requests === null ? '—' : Number(it.cost_per_1k_requests).toLocaleString('en', { maximumFractionDigits: 6 }) + ' ' + api.currency;
			eq(r[head.indexOf('Per 1k requests')], p, it.name + ' per 1k requests');
		}
		// ghost: 25 requests of a pod no ledger knows, not in the table above
		const un = await page.$$eval('#inference-unattributed tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
		eq(un.length, 1, 'unattributed rows');
		eq(un[0][0] + ' ' + un[0][2], 'ghost 25', 'ghost');
		assert(!rows.some((x) => x[0].includes('ghost')), 'ghost kept out');
		eq(await page.getAttribute('#inference-total .value', 'data-total'), String(api.totals.cost_micros), 'total');
	});

	await test('by endpoint, and axe-core finds no serious violation', async () => {
		await page.goto(base + '/' + HASH.replace('a=model_name', 'a=endpoint'));
		await H.ready(page, 'inference');
		const names = await page.$$eval('#inference-table tbody tr td:first-child', (tds) => tds.map((t) => t.textContent).sort());
		eq(names.join(','), 'chat,sg', 'endpoints');
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
