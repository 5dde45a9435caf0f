// Inference: cost per request and per token of the serving endpoints
// (GET /v1/inference). Cost per 1M generated tokens over time per group,
// solid, with the part of it that paid for idle GPUs inside the
// allocations, dashed; the table per group with the figures exactly as the
// API states them; requests no pod or job is known for, apart.
import { h, stat, table, chartTable } from '../ui.js';
import { lines } from '../charts.js';
import * as f from '../fmt.js';

// hours for a week or less (a custom pair too), days beyond
function stepFor(win) {
	if (win === '7d') return 'hour';
	const [a, b] = win.split(',');
	return b && Date.parse(b) - Date.parse(a) <= 7 * 86400e3 ? 'hour' : 'day';
}

// micro-units per token are currency units per million tokens
function perMillion(micros, tokens) {
	return tokens > 0 && micros !== null && micros !== undefined ? micros / tokens : null;
}

function price(micros, currency) {
	if (micros === null || micros === undefined) return '—';
	return f.number(micros / 1e6, 6) + ' ' + currency;
}

function series(d) {
	const xs = d.steps.map((s) => Date.parse(s.start) / 1000);
	const names = [...new Set(d.steps.flatMap((s) => s.items.map((it) => it.name)))].sort();
	const out = [];
	names.forEach((name, k) => {
		const at = (s) => s.items.find((it) => it.name === name);
		out.push({ name: name + ': cost per 1M generated tokens', colourIndex: k,
			values: d.steps.map((s) => { const it = at(s); return it ? perMillion(it.cost_micros, it.generated_tokens) : null; }) });
		out.push({ name: name + ': of which idle GPUs', colourIndex: k, dash: [6, 4], width: 1.5,
			values: d.steps.map((s) => { const it = at(s); return it ? perMillion(it.idle_cost_micros, it.generated_tokens) : null; }) });
	});
	return { xs, series: out };
}

export async function render(ctx) {
	const params = { window: ctx.window, aggregate: ctx.aggregate, step: stepFor(ctx.window) };
	const d = await ctx.get('/v1/inference', params);
	const cur = d.currency || 'USD';
	const t = d.totals;
	const dim = ctx.aggregate.replace('_', ' ');
	const { xs, series: ss } = series(d);
	const hasTokens = ss.some((s) => s.values.some((v) => v !== null));
	const chart = h('section', { class: 'card', id: 'inference-chart', 'aria-label': 'Cost per 1M generated tokens over time' },
		h('h2', { text: 'Cost per 1M generated tokens by ' + dim + ' (dashed: the part paying for idle GPUs)' }));
	ctx.chart = hasTokens ? { el: chart, xs, series: ss, cur } : null;
	const unattributed = d.unattributed || [];
	return [
		h('div', { class: 'stats' },
			h('div', { class: 'stat', id: 'inference-total' }, h('div', { class: 'label', text: 'Serving GPUs' }),
				h('div', { class: 'value', 'data-total': t.cost_micros, text: f.money(t.cost_micros, cur) }),
				h('div', { class: 'extra', text: f.gpuHours(t.gpu_seconds) })),
			stat('Requests', f.number(t.requests), t.failed_requests ? f.number(t.failed_requests) + ' failed' : ''),
			stat('Per 1,000 requests', price(t.cost_per_1k_requests_micros, cur), ''),
			stat('Per 1M generated tokens', price(t.cost_per_1m_generated_tokens_micros, cur),
				t.idle_share === null ? 'idle share unknown (no exporter data)' : f.percent(t.idle_share) + ' of the GPU time the exporter saw was idle')),
		d.unpriced_models && d.unpriced_models.length ? h('p', { class: 'note', text: 'No rate for: ' + d.unpriced_models.join(', ') }) : null,
		hasTokens ? chart : h('p', { class: 'note', id: 'inference-no-tokens', text: 'No token counts in this window (Triton counts requests only).' }),
		hasTokens ? chartTable('inference-chart-data', xs, ss, (v) => f.number(v, 4)) : null,
		table({
			id: 'inference-table', title: 'Inference by ' + dim, sortKey: 'cost_micros',
			caption: 'Window ' + d.window.join(' – ') + '. GPU time and cost are the ledger\'s for the pods and jobs that served; ' +
				'prices per unit in micro-units exactly, rounded half up; — where nothing was served or no exporter data exists.',
			cols: [
				{ key: 'name', label: dim },
				{ key: 'requests', label: 'Requests', num: true, fmt: (r) => f.number(r.requests) },
				{ key: 'failed_requests', label: 'Failed', num: true, fmt: (r) => f.number(r.failed_requests) },
				{ key: 'prompt_tokens', label: 'Prompt tokens', num: true, fmt: (r) => f.number(r.prompt_tokens) },
				{ key: 'generated_tokens', label: 'Generated tokens', num: true, fmt: (r) => f.number(r.generated_tokens) },
				{ key: 'gpu_seconds', label: 'GPU time', num: true, fmt: (r) => f.gpuHours(r.gpu_seconds) },
				{ key: 'cost_micros', label: 'Cost', num: true, fmt: (r) => f.money(r.cost_micros, cur) },
				{ key: 'idle_share', label: 'Idle share', num: true, fmt: (r) => f.percent(r.idle_share) },
				{ key: 'cost_per_1k_requests_micros', label: 'Per 1k requests', num: true, fmt: (r) => price(r.cost_per_1k_requests_micros, cur) },
				{ key: 'cost_per_1m_prompt_tokens_micros', label: 'Per 1M prompt tokens', num: true, fmt: (r) => price(r.cost_per_1m_prompt_tokens_micros, cur) },
				{ key: 'cost_per_1m_generated_tokens_micros', label: 'Per 1M generated tokens', num: true, fmt: (r) => price(r.cost_per_1m_generated_tokens_micros, cur) },
				{ key: 'tokens_per_gpu_second', label: 'Tokens / GPU-s', num: true, fmt: (r) => f.number(r.tokens_per_gpu_second, 1) },
				{ key: 'latency_p50_seconds', label: 'p50 latency', num: true, fmt: (r) => (r.latency_p50_seconds === null ? '—' : f.number(r.latency_p50_seconds, 2) + ' s') },
				{ key: 'latency_p99_seconds', label: 'p99 latency', num: true, fmt: (r) => (r.latency_p99_seconds === null ? '—' : f.number(r.latency_p99_seconds, 2) + ' s') },
			],
			rows: d.items,
			empty: 'No serving endpoint ran on a pod or job of the ledger in this window.',
			csv: { path: '/v1/inference', params },
		}),
		unattributed.length ? table({
			id: 'inference-unattributed', title: 'Requests no pod or job is known for', sortKey: 'requests',
			caption: 'Kept out of the figures above: their GPU time is not in the ledger (pod or job not named, not ingested yet, or holding no GPU).',
			cols: [
				{ key: 'endpoint', label: 'Endpoint' }, { key: 'model_name', label: 'Model' },
				{ key: 'requests', label: 'Requests', num: true, fmt: (r) => f.number(r.requests) },
				{ key: 'generated_tokens', label: 'Generated tokens', num: true, fmt: (r) => f.number(r.generated_tokens) },
			],
			rows: unattributed,
		}) : null,
	];
}

export function after(ctx) {
	if (!ctx.chart) return;
	const { el, xs, series: ss, cur } = ctx.chart;
	lines(el, { xs, series: ss, yLabel: cur + ' per 1M tokens', yFmt: (v) => f.number(v, 4) + ' ' + cur,
		label: 'Cost per 1M generated tokens over time, solid, and the part paying for idle GPUs, dashed' });
}
