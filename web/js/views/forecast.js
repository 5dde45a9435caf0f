// Forecast: history and forecast with 80 % / 95 % intervals per series, the
// backtest accuracy, and for capacity planning per cluster/model: the peak
// demand fan against capacity as a step line (the plan's changes), the dates
// saturation passes 50 % and 80 %, and the GPUs to buy by when.
// GET /v1/forecast and /v1/capacity/forecast; a server without them says so.
import { h, table, failure, chartTable } from '../ui.js';
import { lines, colour, alpha } from '../charts.js';
import * as f from '../fmt.js';

export async function render(ctx) {
	const params = { metric: 'gpu_hours', aggregate: ctx.aggregate, step: 'day', horizon: 14 };
	// an owner-scoped token gets its own series; the fleet's capacity
	// outlook is not a scope's (403), so it is not asked for
	const scoped = !!(ctx.who && ctx.who.owners && ctx.who.owners.length);
	const [fc, cap] = await Promise.allSettled([ctx.get('/v1/forecast', params),
		scoped ? Promise.resolve(null) : ctx.get('/v1/capacity/forecast', { horizon: 90 })]);
	if (fc.status === 'rejected' && (scoped || cap.status === 'rejected')) throw fc.reason;
	const out = [];
	ctx.charts = [];
	ctx.capCharts = [];
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
			id: 'forecast-accuracy', title: 'Backtest accuracy', sortKey: 'key', sortDir: 'asc', wrap: true,
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
	if (scoped) {
		// nothing of the fleet's capacity
	} else if (cap.status === 'fulfilled') {
		const cv = cap.value;
		if (cv.series.length) {
			// the series that saturates first (else the largest) is shown first
			const key = (s) => [s.days_until_saturation_p50 ?? 1e9, -Math.max(0, ...(s.history || []).map((x) => x.peak_demand || 0))];
			const first = cv.series.reduce((bi, s, i) => {
				const a = key(s), bb = key(cv.series[bi]);
				return a[0] < bb[0] || (a[0] === bb[0] && a[1] < bb[1]) ? i : bi;
			}, 0);
			const pick = h('select', { id: 'capacity-series' }, cv.series.map((s, i) => h('option', { value: String(i), text: s.cluster + ' / ' + s.gpu_model, selected: i === first })));
			const box = h('div', { class: 'card chart-card', id: 'capacity-card' },
				h('div', { class: 'table-head' }, h('h2', { text: 'Peak demand against capacity (GPUs per ' + (cv.step || 'day') + ')' }),
					h('label', { for: 'capacity-series', text: 'Cluster / model ' }), pick));
			ctx.capCharts = [{ box, d: cv, pick }];
			out.push(box);
		}
		out.push(table({
			id: 'forecast-saturation', title: 'Saturation and purchases', sortKey: 'p50', sortDir: 'asc', wrap: true,
			cols: [
				{ key: 'cluster', label: 'Cluster' }, { key: 'gpu_model', label: 'Model' },
				{ key: 'capacity_gpus', label: 'GPUs', num: true },
				{ key: 'p50', label: 'p50 days', num: true, fmt: (r) => days(r, r.p50) },
				{ key: 'p80', label: 'p80 days', num: true, fmt: (r) => days(r, r.p80) },
				{ key: 'peak', label: 'Peak demand', num: true, fmt: (r) => f.number(r.peak, 1) + ' GPUs' },
				{ key: 'queue', label: 'Queue waits ≥ 1 h next day', num: true, fmt: (r) => f.percent(r.queue) },
				{ key: 'date50', label: 'P ≥ 50 % from', fmt: (r) => r.date50 || '—' },
				{ key: 'date80', label: 'P ≥ 80 % from', fmt: (r) => r.date80 || '—' },
				{ key: 'buy', label: 'GPUs to add', num: true, fmt: (r) => buyText(r.rec) },
				{ key: 'plan', label: 'Planned', fmt: (r) => planText(r.plan) },
			],
			rows: cv.series.map((s) => ({
				cluster: s.cluster, gpu_model: s.gpu_model, capacity_gpus: s.capacity_gpus,
				p50: s.days_until_saturation_p50, p80: s.days_until_saturation_p80,
				sat_known: (s.days || s.weeks || []).some((x) => x.p_saturation !== null && x.p_saturation !== undefined),
				peak: Math.max(0, ...(s.days || s.weeks || []).map((x) => x.peak_demand || 0)),
				queue: s.queue_saturation ? s.queue_saturation.p : null,
				date50: s.saturation_date_p50, date80: s.saturation_date_p80,
				rec: s.recommendation, buy: s.recommendation && s.recommendation.gpus, plan: s.plan || [],
			})),
		}));
		out.push(h('p', { class: 'note', id: 'capacity-recommendation-note', text: recommendationNote(cv) }));
		out.push(h('p', { class: 'note', id: 'queue-saturation-accuracy', text: queueNote(cv.queue_saturation) }));
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

// The purchases: GPUs to add by each need-by date, ordered lead_days before.
function buyText(rec) {
	if (!rec) return '—';
	if (!rec.purchases) return 'unknown';
	if (!rec.purchases.length) return 'none';
	return rec.purchases.map((p) => '+' + p.gpus + ' by ' + p.need_by + ' (order by ' + p.order_by + (p.late ? ', late' : '') + ')').join('; ');
}

function planText(plan) {
	if (!plan || !plan.length) return '—';
	return plan.map((c) => (c.action === 'add' ? '+' : '−') + c.gpus + ' on ' + c.date).join('; ');
}

function recommendationNote(cv) {
	const r = cv.risk !== undefined ? f.percent(cv.risk) : '20 %';
	return 'GPUs to add keep the probability of saturation (peak demand at or above capacity) under ' + r +
		' through the forecast; an order goes out ' + (cv.procurement_lead_days ?? 90) + ' days before the GPUs are needed (late: that date has passed).' +
		(cv.plan && cv.plan.what_if ? ' Includes a what-if plan (not saved).' : '');
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

// Peak demand (history, forecast median and its 80 % / 95 % fan) with
// capacity as a step line: what it is now and the plan's changes.
function drawCapacity(box, s) {
	box.querySelector('.chart')?.remove();
	box.querySelector('#capacity-chart-data')?.remove();
	const hist = s.history || [], fc = s.days || s.weeks || [];
	const ts = (d) => Date.parse(d + 'T00:00:00Z') / 1000;
	const xs = [...hist.map((p) => ts(p.date)), ...fc.map((p) => ts(p.date))];
	const nh = hist.length;
	const pad = (key) => [...Array(nh).fill(null), ...fc.map((p) => p[key] ?? null)];
	// capacity: now over the history's last step (a line needs two points), then the plan's steps
	const capNow = s.capacity_gpus ?? null;
	const cap = [...hist.map((_, i) => (i === nh - 1 ? capNow : null)), ...fc.map((p) => p.capacity_gpus ?? null)];
	const histVals = [...hist.map((p) => p.peak_demand), ...Array(fc.length).fill(null)];
	const c = colour(0), c2 = colour(1), c3 = colour(3);
	lines(box, {
		xs,
		label: 'Peak demand of ' + s.cluster + ' ' + s.gpu_model + ': history, forecast with 80 and 95 percent bands, and capacity',
		yLabel: 'GPUs', yFmt: (v) => f.number(v, Math.abs(v) < 10 ? 2 : 0),
		series: [
			{ name: 'peak demand', values: histVals, colour: c },
			{ name: 'forecast', values: pad('peak_demand'), colour: c2, dash: [6, 4] },
			{ name: 'hi95', values: pad('hi95'), colour: alpha(c2, 0.3), width: 1 },
			{ name: 'lo95', values: pad('lo95'), colour: alpha(c2, 0.3), width: 1 },
			{ name: 'hi80', values: pad('hi80'), colour: alpha(c2, 0.5), width: 1 },
			{ name: 'lo80', values: pad('lo80'), colour: alpha(c2, 0.5), width: 1 },
			{ name: 'capacity', values: cap, colour: c3, width: 2, step: true },
		],
		bands: [{ series: [3, 4], fill: alpha(c2, 0.15) }, { series: [5, 6], fill: alpha(c2, 0.25) }],
	});
	const t = chartTable('capacity-chart-data', xs, [
		{ name: 'peak demand (GPUs)', values: histVals }, { name: 'forecast', values: pad('peak_demand') },
		{ name: '80 % low', values: pad('lo80') }, { name: '80 % high', values: pad('hi80') },
		{ name: '95 % low', values: pad('lo95') }, { name: '95 % high', values: pad('hi95') },
		{ name: 'capacity', values: cap }, { name: 'P(saturation)', values: pad('p_saturation') },
	], (v) => f.number(v, 2));
	if (t) box.append(t);
	box.querySelector('#capacity-dates')?.remove();
	box.append(h('p', { class: 'note', id: 'capacity-dates', text: satText(s) }));
}

function satText(s) {
	if (s.capacity_gpus === null || s.capacity_gpus === undefined) return 'Capacity unknown (no inventory): no saturation date.';
	// no probability without a demand interval: unknown, not "never"
	if (!(s.days || s.weeks || []).some((x) => x.p_saturation !== null && x.p_saturation !== undefined))
		return 'Saturation unknown: the forecast has no interval. ' + (s.note || '');
	const parts = [];
	parts.push(s.saturation_date_p50 ? 'Saturation more likely than not from ' + s.saturation_date_p50 : 'No saturation at 50 % within the forecast');
	parts.push(s.saturation_date_p80 ? '80 % likely from ' + s.saturation_date_p80 : 'not at 80 %');
	return parts.join('; ') + '. ' + (s.note || '');
}

export function after(ctx) {
	for (const { box, d, pick } of ctx.capCharts || []) {
		drawCapacity(box, d.series[Number(pick.value)]);
		pick.addEventListener('change', () => drawCapacity(box, d.series[Number(pick.value)]));
	}
	for (const { box, d, pick } of ctx.charts) {
		if (!d.series.length) { box.append(h('p', { class: 'note', text: 'No series to forecast in this data.' })); continue; }
		draw(box, d.series[Number(pick.value)]);
		pick.addEventListener('change', () => draw(box, d.series[Number(pick.value)]));
	}
}
