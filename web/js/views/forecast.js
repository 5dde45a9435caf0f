// Forecast: history and forecast with 80 % / 95 % intervals per series, the
// backtest accuracy, and days until each cluster/model saturates.
// GET /v1/forecast and /v1/capacity/forecast; a server without them says so.
import { h, table, failure, chartTable } from '../ui.js';
import { lines, colour, alpha } from '../charts.js';
import * as f from '../fmt.js';

export async function render(ctx) {
	const params = { metric: 'gpu_hours', aggregate: ctx.aggregate, step: 'day', horizon: 14 };
	const [fc, cap] = await Promise.allSettled([ctx.get('/v1/forecast', params), ctx.get('/v1/capacity/forecast')]);
	if (fc.status === 'rejected' && cap.status === 'rejected') throw fc.reason;
	const out = [];
	ctx.charts = [];
	if (fc.status === 'fulfilled') {
		const d = fc.value;
		// The series shown first is the largest by its history, not the
		// first by name: that was __unallocated__ (the jobs no owner rule
		// matched), a flat line of nothing, in the demo.
		const total = (s) => (s.history || []).reduce((a, p) => a + (p.value || 0), 0);
		const first = d.series.reduce((b, s, i) => (total(s) > total(d.series[b]) ? i : b), 0);
		const pick = h('select', { id: 'forecast-series' }, d.series.map((s, i) => h('option', { value: String(i), text: s.key, selected: i === first })));
		const box = h('div', { class: 'card chart-card' },
			h('div', { class: 'table-head' }, h('h2', { text: 'GPU-hours per ' + d.step + ': history and forecast' }),
				h('label', { for: 'forecast-series', text: 'Series ' }), pick));
		ctx.charts.push({ box, d, pick });
		out.push(box);
		out.push(table({
			id: 'forecast-accuracy', title: 'Backtest accuracy', sortKey: 'key', sortDir: 'asc',
			cols: [
				{ key: 'key', label: ctx.aggregate }, { key: 'method', label: 'Method', fmt: (r) => r.method + (r.fallback ? ' (fallback)' : '') },
				{ key: 'mase', label: 'MASE', num: true, fmt: (r) => f.number(r.mase, 2) },
				{ key: 'wape', label: 'WAPE', num: true, fmt: (r) => f.percent(r.wape) },
				{ key: 'coverage80', label: '80 % coverage', num: true, fmt: (r) => f.percent(r.coverage80) },
				{ key: 'coverage95', label: '95 % coverage', num: true, fmt: (r) => f.percent(r.coverage95) },
				{ key: 'origins', label: 'Origins', num: true },
				{ key: 'note', label: 'Note', fmt: (r) => r.note || '' },
			],
			rows: d.series.map((s) => ({ key: s.key, method: s.method, fallback: s.fallback, note: s.note, ...(s.accuracy || {}) })),
		}));
	} else {
		out.push(h('h2', { text: 'Demand forecast' }), failure(fc.reason));
	}
	if (cap.status === 'fulfilled') {
		out.push(table({
			id: 'forecast-saturation', title: 'Days until saturation', sortKey: 'p50', sortDir: 'asc',
			cols: [
				{ key: 'cluster', label: 'Cluster' }, { key: 'gpu_model', label: 'Model' },
				{ key: 'capacity_gpus', label: 'GPUs', num: true },
				{ key: 'p50', label: 'p50 days', num: true, fmt: (r) => days(r, r.p50) },
				{ key: 'p80', label: 'p80 days', num: true, fmt: (r) => days(r, r.p80) },
				{ key: 'peak', label: 'Peak demand', num: true, fmt: (r) => f.number(r.peak, 1) + ' GPUs' },
				{ key: 'queue', label: 'Queue waits ≥ 1 h next day', num: true, fmt: (r) => f.percent(r.queue) },
			],
			rows: cap.value.series.map((s) => ({
				cluster: s.cluster, gpu_model: s.gpu_model, capacity_gpus: s.capacity_gpus,
				p50: s.days_until_saturation_p50, p80: s.days_until_saturation_p80,
				sat_known: (s.days || []).some((x) => x.p_saturation !== null && x.p_saturation !== undefined),
				peak: Math.max(0, ...(s.days || []).map((x) => x.peak_demand || 0)),
				queue: s.queue_saturation ? s.queue_saturation.p : null,
			})),
		}));
		out.push(h('p', { class: 'note', id: 'queue-saturation-accuracy', text: queueNote(cap.value.queue_saturation) }));
	} else {
		out.push(h('h2', { text: 'Capacity forecast' }), failure(cap.reason));
	}
	return out;
}

// How far the queue-saturation probabilities can be trusted: the model's
// backtest on the window's last third beside persistence's, or why none.
function queueNote(q) {
	if (!q) return '';
	const a = q.accuracy;
	if (!a) return 'Queue saturation (' + q.definition + '): ' + (q.note || 'no model');
	return 'Queue saturation (' + q.definition + '), ' + q.method + ': accuracy ' + f.percent(a.accuracy) +
		' (persistence ' + f.percent(a.persistence_accuracy) + ') over ' + a.days + ' queue-days from ' + a.scored_from + '.';
}

// No saturation day means "not within the horizon" only when capacity and
// the forecast's spread are known; without an inventory, or with too little
// history for a backtest (no intervals, no probability), nothing can be said.
function days(r, d) {
	if (r.capacity_gpus === null || r.capacity_gpus === undefined) return 'capacity unknown';
	if (!r.sat_known) return 'unknown: history too short';
	return d === null || d === undefined ? 'not within horizon' : f.number(d, 1);
}

function draw(box, s) {
	box.querySelector('.chart')?.remove();
	box.querySelector('#forecast-chart-data')?.remove();
	const hist = s.history || [], fc = s.forecast || [];
	const xs = [...hist.map((p) => Date.parse(p.t) / 1000), ...fc.map((p) => Date.parse(p.t) / 1000)];
	const pad = (arr, before, key) => [...Array(before).fill(null), ...arr.map((p) => p[key])];
	const nh = hist.length;
	const histVals = [...hist.map((p) => p.value), ...Array(fc.length).fill(null)];
	const c = colour(0), c2 = colour(1);
	lines(box, {
		xs,
		label: 'History and forecast of ' + s.key + ' with 80 and 95 percent intervals',
		yLabel: 'GPU-h', yFmt: (v) => f.number(v, Math.abs(v) < 10 ? 2 : 0), // a small team's 0.1 GPU-h is not 0
		series: [
			{ name: 'history', values: histVals, colour: c },
			{ name: 'forecast', values: pad(fc, nh, 'value'), colour: c2, dash: [6, 4] },
			{ name: 'hi95', values: pad(fc, nh, 'hi95'), colour: alpha(c2, 0.3), width: 1 },
			{ name: 'lo95', values: pad(fc, nh, 'lo95'), colour: alpha(c2, 0.3), width: 1 },
			{ name: 'hi80', values: pad(fc, nh, 'hi80'), colour: alpha(c2, 0.5), width: 1 },
			{ name: 'lo80', values: pad(fc, nh, 'lo80'), colour: alpha(c2, 0.5), width: 1 },
		],
		bands: [{ series: [3, 4], fill: alpha(c2, 0.15) }, { series: [5, 6], fill: alpha(c2, 0.25) }],
	});
	const t = chartTable('forecast-chart-data', xs, [
		{ name: 'history (GPU-h)', values: histVals }, { name: 'forecast', values: pad(fc, nh, 'value') },
		{ name: '80 % low', values: pad(fc, nh, 'lo80') }, { name: '80 % high', values: pad(fc, nh, 'hi80') },
		{ name: '95 % low', values: pad(fc, nh, 'lo95') }, { name: '95 % high', values: pad(fc, nh, 'hi95') },
	], (v) => f.number(v, 2));
	if (t) box.append(t);
}

export function after(ctx) {
	for (const { box, d, pick } of ctx.charts) {
		if (!d.series.length) { box.append(h('p', { class: 'note', text: 'No series to forecast in this data.' })); continue; }
		draw(box, d.series[Number(pick.value)]);
		pick.addEventListener('change', () => draw(box, d.series[Number(pick.value)]));
	}
}
