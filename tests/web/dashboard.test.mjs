// The dashboard in a real browser (Debian's chromium via playwright-core)
// against the real daemon and a real database loaded with the fixtures:
// sign-in, every view with no console errors and no failed requests, the
// chargeback totals equal to the API's, window changes refetch, roles and
// owner scopes, CSV download, 401 and API-down handling, keyboard use,
// accessibility (axe-core) and screenshots under build/web-screenshots/.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import * as H from './lib/harness.mjs';

const { test, assert, eq } = H;
const SHOTS = path.join(H.ROOT, 'build/web-screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

const dir = H.tmpDir('web-dashboard');
const dsn = H.freshDb('gl_test_web_dashboard');
H.loadFixtures(dsn, dir);
const admin = H.token(dsn, 'web-admin', 'admin');
const viewer = H.token(dsn, 'web-viewer', 'viewer');
const scoped = H.token(dsn, 'web-teama', 'finance', ['account=teama']);
const vision = H.token(dsn, 'web-vision', 'finance', ['team=vision']);
// a budget the month's spend overshoots: the reports view shows it red
const d = await H.startDaemon(dsn, dir, 'budgets:\n  - owner: vision\n    amount: "0.10"\n');
const base = d.base;
const b = await H.browser();
const ctx = await b.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
const page = await ctx.newPage();
const w = H.watch(page);

// the number text the UI shows for an API decimal string ("4910.51" -> "4,910.51 USD")
const shown = (s, cur) => s.replace(/^(-?)(\d+)/, (m, sg, i) => sg + i.replace(/\B(?=(\d{3})+(?!\d))/g, ',')) + ' ' + cur;

// The Slurm testbed fixture ran on 2026-11-22: tests that need its jobs
// name its month, never "this month", so they pass in any month.
const FX = { hash: 'w=custom&from=2026-11-01&to=2026-11-30', win: '2026-11-01T00:00:00Z,2026-12-01T00:00:00Z', month: '2026-11' };

async function visit(view) {
	// the same hash again would not re-render: go through a reload then
	if (new URL(page.url()).hash.startsWith('#/' + view)) await page.reload();
	else await page.goto(base + '/#/' + view);
	await H.ready(page, view);
}

try {
	await test('sign in with a token: the shell shows, the token is only in sessionStorage', async () => {
		await H.signIn(page, base, admin);
		const nav = await page.$$eval('#nav a', (as) => as.map((a) => a.dataset.view));
		eq(nav.join(','), 'fleet,chargeback,waste,inference,queue,forecast,inventory,jobs,reports,audit,hook', 'admin views');
		eq(await page.evaluate(() => sessionStorage.getItem('gpuledger.token')), admin, 'sessionStorage');
		eq(await page.evaluate(() => document.cookie), '', 'cookies');
		assert(w.clean(), w.report());
	});

	for (const v of ['fleet', 'chargeback', 'waste', 'inference', 'queue', 'forecast', 'inventory', 'jobs', 'reports', 'audit', 'hook']) {
		await test(`view ${v} renders with no console errors or failed requests`, async () => {
			w.reset();
			await visit(v);
			await page.waitForTimeout(100);
			const state = await page.$eval('.view-body', (e) => e.querySelector('[data-state]')?.dataset.state || 'ok');
			eq(state, 'ok', v + ' state');
			assert(w.clean(), w.report());
			assert(w.requests.some((u) => u.includes('/v1/')), 'no API request made');
			await page.screenshot({ path: path.join(SHOTS, v + '.png'), fullPage: true });
		});
	}

	// Views 5 and 8 against the agreed response shapes, answered inside the
	// browser (page.route), so their tables are checked with known rows; and
	// a server without those endpoints (404) says "not available".
	const contract = {
		'/v1/forecast': { metric: 'gpu_hours', step: 'day', aggregate: 'team', series: [{ key: 'vision', method: 'ets', fallback: false, note: null,
			history: [{ t: '2026-11-20T00:00:00Z', value: 10 }, { t: '2026-11-21T00:00:00Z', value: 12 }, { t: '2026-11-22T00:00:00Z', value: 11 }],
			forecast: [{ t: '2026-11-23T00:00:00Z', value: 11.5, lo80: 9, hi80: 14, lo95: 8, hi95: 15 }, { t: '2026-11-24T00:00:00Z', value: 11.7, lo80: 8.5, hi80: 15, lo95: 7, hi95: 16 }],
			accuracy: { mase: 0.83, wape: 0.12, coverage80: 0.8, coverage95: 0.95, origins: 6 } }] },
		'/v1/capacity/forecast': { queue_saturation: { definition: 'GPUs pending in the queue for at least 60 minutes of the day', method: 'logistic', note: 'x',
			accuracy: { days: 30, saturated_days: 12, accuracy: 0.8333, f1: 0.8, persistence_accuracy: 0.8, persistence_f1: 0.75, scored_from: '2026-10-24' } },
		series: [{ cluster: 'testgpu', gpu_model: 'a100', capacity_gpus: 8, days_until_saturation_p50: 9.5, days_until_saturation_p80: null,
			queue_saturation: { date: '2026-11-23', p: 0.25, last_day_pending_minutes: 30 },
			days: [{ date: '2026-11-23', peak_demand: 6, p_saturation: 0.1 }] },
		{ cluster: 'testgpu', gpu_model: 'v100', capacity_gpus: null, days_until_saturation_p50: null, days_until_saturation_p80: null,
			days: [{ date: '2026-11-23', peak_demand: 3, p_saturation: null }] },
		{ cluster: 'testgpu', gpu_model: 'h100', capacity_gpus: 4, days_until_saturation_p50: null, days_until_saturation_p80: null,
			days: [{ date: '2026-11-23', peak_demand: 2, lo80: null, hi80: null, p_saturation: null }] }] },
		'/v1/idle/candidates': { candidates: [{ cluster: 'testgpu', job_id: '42', user: 'alice', owner: 'vision', gpus: 2, idle_minutes: 95, idle_gpu_seconds: 11400, idle_cost_micros: 7916667, rule: 'util<5%', stage: 'warn', policy: 'default' }],
			no_data: [{ cluster: 'testgpu', job_id: '43', user: 'bob', owner: 'language', gpus: 1, idle_minutes: 0, idle_gpu_seconds: 0, idle_cost_micros: 0, rule: null, stage: null, policy: 'default', reason: 'no exporter samples' }],
			spared: [] },
		'/v1/hook/actions': { actions: [{ at: '2026-11-22T16:10:00Z', cluster: 'testgpu', job_id: '42', owner: 'vision', policy: 'default', stage: 'warn', command: 'notify', exit_status: 0, ok: true }] },
	};
	for (const [v, sel] of [['forecast', '#forecast-accuracy'], ['hook', '#hook-candidates']]) {
		await test(`view ${v} renders the agreed response shapes with no console errors`, async () => {
			const match = (u) => Object.keys(contract).includes(u.pathname);
			await page.route(match, (r) =>
				r.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(contract[new URL(r.request().url()).pathname]) }));
			try {
				w.reset();
				await visit(v);
				await page.waitForSelector(sel);
				const state = await page.$eval('.view-body', (e) => e.querySelector('[data-state]')?.dataset.state || 'ok');
				eq(state, 'ok', v + ' state');
				if (v === 'forecast') {
					await page.waitForSelector('.chart canvas');
					eq(await page.textContent('#forecast-accuracy tbody tr td:nth-child(3)'), '0.83', 'MASE');
					const sat = await page.$$eval('#forecast-saturation tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
					const a100 = sat.find((r) => r[1] === 'a100'), v100 = sat.find((r) => r[1] === 'v100');
					eq(a100[3], '9.5', 'days p50');
					eq(a100[4], 'not within horizon', 'p80 beyond the horizon, capacity known');
					assert(/25/.test(a100[6]), 'queue saturation probability shown: ' + a100[6]);
					eq(sat.find((r) => r[1] === 'v100')[6], '—', 'no queue-days: a dash');
					const qn = await page.textContent('#queue-saturation-accuracy');
					assert(/83\.3/.test(qn) && /persistence 80/.test(qn) && /30 queue-days from 2026-10-24/.test(qn), 'queue model accuracy beside persistence: ' + qn);
					eq(v100[3] + ' / ' + v100[4], 'capacity unknown / capacity unknown', 'no inventory: nothing ruled out');
					const h100 = sat.find((r) => r[1] === 'h100');
					eq(h100[3] + ' / ' + h100[4], 'unknown: history too short / unknown: history too short', 'no interval: nothing ruled out');
				} else {
					eq(await page.textContent('#hook-candidates tbody tr td:nth-child(2)'), '42', 'candidate job');
					eq(await page.textContent('#hook-actions tbody tr td:nth-child(9)'), 'ok', 'action result');
				}
				assert(w.clean(), w.report());
				await page.screenshot({ path: path.join(SHOTS, v + '-contract.png'), fullPage: true });
			} finally {
				await page.unroute(match);
			}
		});
		await test(`view ${v} on a server without its endpoints says "not available"`, async () => {
			const match = (u) => Object.keys(contract).includes(u.pathname);
			await page.route(match, (r) => r.fulfill({ status: 404, contentType: 'application/json',
				body: JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }) }));
			try {
				await visit(v);
				await page.waitForSelector('.view-body [data-state="unavailable"]');
				assert(/Not available on this server/.test(await page.textContent('#view')), await page.textContent('#view'));
			} finally {
				await page.unroute(match);
			}
		});
	}

	await test('no request URL carries the token', async () => {
		assert(!w.requests.some((u) => u.includes('glt_')), w.requests.join('\n'));
	});

	await test('chargeback: totals and every row equal /v1/chargeback for the same window', async () => {
		for (const agg of ['team', 'user']) {
			// the month is open: a running job is billed up to now, so the two
			// clients agree when they ask within the same second; a few tries
			let api, other;
			for (let attempt = 0; ; attempt++) {
				// the view's request without a step (it asks for the stepped series beside it)
				const resp = page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/chargeback' && new URL(r.url()).searchParams.get('aggregate') === agg && !new URL(r.url()).searchParams.has('step'));
				await page.goto(base + '/#/chargeback?' + FX.hash + '&a=' + agg + '&try=' + attempt);
				await H.ready(page, 'chargeback');
				api = await (await resp).json();
				// and the same answer as another client gets for that window
				other = (await H.api(base, admin, '/v1/chargeback?window=' + encodeURIComponent(FX.win) + '&aggregate=' + agg)).body;
				if (JSON.stringify(other.steps[0].items) === JSON.stringify(api.steps[0].items) || attempt === 4) break;
			}
			eq(JSON.stringify(other.steps[0].items), JSON.stringify(api.steps[0].items), agg + ' items from a second client');
			const cur = api.currency;
			eq(await page.textContent('#cb-total .value'), shown(api.totals.total, cur), agg + ' total');
			const cells = await page.$$eval('#chargeback-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
			const byName = new Map(cells.map((c) => [c[0], c]));
			assert(api.steps[0].items.length > 0, 'no chargeback items in the fixture window');
			for (const it of api.steps[0].items) {
				const row = byName.get(it.name);
				assert(row, 'row missing: ' + it.name);
				eq(row[6], shown(it.total, cur), it.name + ' total');
				eq(row[4], shown(it.cost, cur), it.name + ' cost');
			}
			const tot = cells.find((c) => c[0] === 'Total');
			eq(tot[6], shown(api.totals.total, cur), 'table total');
			// one rounding for every view: the rows (owners and __idle__)
			// add up to the Total row to the minor unit
			const units = (t) => BigInt(t.replace(/[^0-9-]/g, '') || '0');
			const sum = cells.filter((c) => c[0] !== 'Total').reduce((acc, c) => acc + units(c[6]), 0n);
			eq(sum.toString(), units(tot[6]).toString(), agg + ' rows add up to the Total row');
			if (api.totals.idle_gpu_seconds > 0) assert(byName.has('__idle__'), '__idle__ row');
			if (agg === 'team') assert(byName.has('__unallocated__'), '__unallocated__ row (teamc has no owner rule)');
		}
	});

	await test('changing the window refetches (last month, week, custom) and shows that window\'s totals', async () => {
		await page.goto(base + '/#/chargeback?w=month&a=team');
		await H.ready(page, 'chargeback');
		for (const [w1, param] of [['lastmonth', 'lastmonth'], ['week', 'week']]) {
			// the table's request (the chart's has a step)
			const resp = page.waitForResponse((r) => r.url().includes('/v1/chargeback') && new URL(r.url()).searchParams.get('window') === param &&
				!new URL(r.url()).searchParams.get('step'));
			await page.selectOption('#window', w1);
			// "week" ends now and the idle capacity in it grows by the second:
			// the figures to match are those of the very answer the page got
			const api = await (await resp).json();
			await H.ready(page, 'chargeback');
			eq(await page.textContent('#cb-total .value'), shown(api.totals.total, api.currency), w1 + ' total');
			if (param === 'lastmonth') {
				const again = (await H.api(base, admin, '/v1/chargeback?aggregate=team&window=lastmonth')).body;
				eq(again.totals.total, api.totals.total, 'lastmonth total from a second client');
			}
		}
		// a custom window over the Philly sample (2017)
		const want = '2017-10-01T00:00:00Z,2017-11-01T00:00:00Z';
		const req = page.waitForRequest((r) => r.url().includes('/v1/chargeback') && new URL(r.url()).searchParams.get('window') === want);
		await page.selectOption('#window', 'custom');
		await page.fill('#from', '2017-10-01');
		await page.fill('#to', '2017-10-31');
		await page.dispatchEvent('#to', 'change');
		await req;
		await H.ready(page, 'chargeback');
		const api = (await H.api(base, admin, '/v1/chargeback?aggregate=team&window=' + encodeURIComponent(want))).body;
		assert(api.totals.allocated_gpu_seconds > 0, 'philly jobs in October 2017');
		eq(await page.textContent('#cb-total .value'), shown(api.totals.total, api.currency), 'custom total');
	});

	await test('queue: waits over time from one request per week of the month, drawn as a chart', async () => {
		await page.goto(base + '/#/fleet');
		await H.ready(page, 'fleet');
		w.reset();
		await page.goto(base + '/#/queue?' + FX.hash + '&a=partition');
		await H.ready(page, 'queue');
		await page.waitForSelector('#queue-trend canvas');
		const wins = w.requests.filter((u) => new URL(u).pathname === '/v1/queue').map((u) => new URL(u).searchParams.get('window'));
		const api = (await H.api(base, admin, '/v1/queue?window=' + encodeURIComponent(FX.win))).body;
		const days = (Date.parse(api.window[1]) - Date.parse(api.window[0])) / 86400e3;
		eq(wins.length, 1 + Math.ceil(days / 7), 'queue requests (' + wins.join(' ') + ')');
		eq(wins[1].split(',')[0], api.window[0], 'first slice starts the window');
		eq(wins[wins.length - 1].split(',')[1], api.window[1], 'last slice ends it');
		assert(w.clean(), w.report());
	});

	await test('queue and forecast charts: their numbers as a table equal the API\'s', async () => {
		await page.goto(base + '/#/queue?' + FX.hash + '&a=partition');
		await H.ready(page, 'queue');
		await page.waitForSelector('#queue-chart-data');
		const q = await page.$$eval('#queue-chart-data tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
		assert(q.length >= 1 && q.every((r) => r.length === 4), JSON.stringify(q));
		// the forecast of the agreed shapes (real history moves with the clock)
		const fc = { ...contract['/v1/forecast'], series: [...contract['/v1/forecast'].series,
			{ ...contract['/v1/forecast'].series[0], key: 'other', history: contract['/v1/forecast'].series[0].history.slice(1) }] };
		const fake = { '/v1/forecast': fc, '/v1/capacity/forecast': contract['/v1/capacity/forecast'] };
		const match = (u) => Object.keys(fake).includes(u.pathname);
		await page.route(match, (r) => r.fulfill({ status: 200, contentType: 'application/json',
			body: JSON.stringify(fake[new URL(r.request().url()).pathname]) }));
		try {
			await visit('forecast');
			await page.waitForSelector('#forecast-chart-data');
			const s0 = fc.series[0];
			const rows = await page.$$eval('#forecast-chart-data tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
			eq(rows.length, s0.history.length + s0.forecast.length, 'a row per history and forecast step');
			eq(rows[0].join(','), s0.history[0].t + ',' + s0.history[0].value + ',—,—,—,—,—', 'a history row');
			const f0 = s0.forecast[0];
			eq(rows[s0.history.length].join(','), [f0.t, '—', f0.value, f0.lo80, f0.hi80, f0.lo95, f0.hi95].join(','), 'the first forecast row');
			// another series picked: the table follows the chart
			await page.selectOption('#forecast-series', '1');
			await page.waitForFunction((n) => document.querySelectorAll('#forecast-chart-data tbody tr').length === n,
				fc.series[1].history.length + fc.series[1].forecast.length);
			eq(await page.$$eval('#forecast-chart-data', (x) => x.length), 1, 'one table, not two');
		} finally {
			await page.unroute(match);
		}
	});

	await test('forecast: capacity as a step line through the plan, the demand fan, saturation dates and purchases', async () => {
		// a cluster/model whose demand grows past its 8 GPUs, 4 more planned
		// on day 3, and one without inventory; answered in the browser
		const days = [0, 1, 2, 3, 4].map((k) => ({ date: '2026-11-2' + (3 + k), peak_demand: 7 + k, lo80: 6 + k, hi80: 8.5 + k,
			lo95: 5.5 + k, hi95: 9 + k, capacity_gpus: k < 3 ? 8 : 12, p_saturation: [0.1, 0.45, 0.62, 0.2, 0.48][k] }));
		const cap = { window: ['2026-11-20T00:00:00Z', '2026-11-23T00:00:00Z'], step: 'day', horizon: 5, risk: 0.2, procurement_lead_days: 90,
			plan: { what_if: false, changes: [{ cluster: 'c1', gpu_model: 'a100', action: 'add', gpus: 4, date: '2026-11-26', source: 'api', note: '' }] },
			queue_saturation: contract['/v1/capacity/forecast'].queue_saturation,
			series: [{ cluster: 'c1', gpu_model: 'a100', capacity_gpus: 8, method: 'linear', fallback: false, note: 'linear: backtest MAE 40 % below',
				horizon_answered: 5, days_until_saturation_p50: 3, days_until_saturation_p80: null,
				saturation_date_p50: '2026-11-25', saturation_date_p80: null,
				plan: [{ cluster: 'c1', gpu_model: 'a100', action: 'add', gpus: 4, date: '2026-11-26', source: 'api', note: '' }],
				recommendation: { risk: 0.2, lead_days: 90, gpus: 2, note: 'x', purchases: [
					{ need_by: '2026-11-24', order_by: '2026-08-26', gpus: 1, total: 1, late: true },
					{ need_by: '2026-11-27', order_by: '2026-08-29', gpus: 1, total: 2, late: true }] },
				queue_saturation: { date: '2026-11-23', p: 0.3, last_day_pending_minutes: 10 },
				days, history: [{ date: '2026-11-20', peak_demand: 5 }, { date: '2026-11-21', peak_demand: 6 }, { date: '2026-11-22', peak_demand: 6.5 }],
				accuracy: { mase: 0.5, wape: 0.1, coverage80: 0.8, coverage95: 0.95, origins: 30, by_lead: [] } },
			{ cluster: 'philly', gpu_model: 'p100', capacity_gpus: null, method: 'naive', fallback: false, note: '', horizon_answered: 5,
				days_until_saturation_p50: null, days_until_saturation_p80: null, saturation_date_p50: null, saturation_date_p80: null, plan: [],
				recommendation: { risk: 0.2, lead_days: 90, gpus: null, purchases: null, note: 'no recommendation: capacity is unknown' },
				days: days.map((x) => ({ ...x, capacity_gpus: null, p_saturation: null })), history: [{ date: '2026-11-22', peak_demand: 50 }],
				accuracy: { by_lead: [] } }] };
		const fake = { '/v1/forecast': contract['/v1/forecast'], '/v1/capacity/forecast': cap };
		const match = (u) => Object.keys(fake).includes(u.pathname);
		await page.route(match, (r) => r.fulfill({ status: 200, contentType: 'application/json',
			body: JSON.stringify(fake[new URL(r.request().url()).pathname]) }));
		try {
			w.reset();
			await visit('forecast');
			await page.waitForSelector('#capacity-chart-data');
			eq(await page.$$eval('#capacity-card .chart canvas', (x) => x.length), 1, 'the capacity chart');
			// the series saturating first is shown first
			eq(await page.$eval('#capacity-series', (e) => e.options[e.selectedIndex].textContent), 'c1 / a100', 'series picked');
			const rows = await page.$$eval('#capacity-chart-data tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
			const s = cap.series[0];
			eq(rows.length, s.history.length + s.days.length, 'a row per history and forecast day');
			// capacity: now on the history's last day, then the step line through the plan
			eq(rows.map((r) => r[7]).join(','), '—,—,8,8,8,8,12,12', 'capacity column');
			eq(rows[3].slice(2, 7).join(','), [7, 6, 8.5, 5.5, 9].map((v) => String(v)).join(','), 'the first forecast day\'s fan');
			eq(rows.slice(3).map((r) => r[8]).join(','), '0.1,0.45,0.62,0.2,0.48', 'P(saturation) column');
			const dates = await page.textContent('#capacity-dates');
			assert(/from 2026-11-25/.test(dates) && /not at 80 %/.test(dates), 'saturation dates: ' + dates);
			const sat = await page.$$eval('#forecast-saturation tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
			const a100 = sat.find((r) => r[1] === 'a100'), p100 = sat.find((r) => r[1] === 'p100');
			eq(a100[7] + ' / ' + a100[8], '2026-11-25 / —', 'dates in the table');
			eq(a100[9], '+1 by 2026-11-24 (order by 2026-08-26, late); +1 by 2026-11-27 (order by 2026-08-29, late)', 'purchases');
			eq(a100[10], '+4 on 2026-11-26', 'the plan');
			eq(p100[9], 'unknown', 'no inventory: no purchase figure');
			assert(/90 days before/.test(await page.textContent('#capacity-recommendation-note')), 'lead time said');
			// the other series: its own chart and no dates without capacity
			await page.selectOption('#capacity-series', '1');
			await page.waitForFunction(() => /Capacity unknown/.test(document.querySelector('#capacity-dates')?.textContent || ''));
			eq(await page.$$eval('#capacity-chart-data', (x) => x.length), 1, 'one table, not two');
			assert(w.clean(), w.report());
			await page.screenshot({ path: path.join(SHOTS, 'forecast-capacity.png'), fullPage: true });
		} finally {
			await page.unroute(match);
		}
	});

	await test('fleet chart: no steps after now, the step under way averaged over its elapsed part', async () => {
		// rows shaped like /v1/capacity's, around the browser's clock: a day
		// begun 6 h ago with 12 GPUs present all along, and the next day,
		// which has not begun (the API answers it with zeros)
		const now = Math.floor(Date.now() / 1000), iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
		const row = (t0, t1, rep, alloc) => ({ start: iso(t0), end: iso(t1), cluster: 'c1', reported_gpu_seconds: rep,
			allocated_gpu_seconds: alloc, down_gpu_seconds: 0, planned_down_gpu_seconds: 0, reserved_gpu_seconds: 0,
			idle_gpu_seconds: rep - alloc, unavailable_gpu_seconds: 0, over_gpu_seconds: 0, drained_allocated_gpu_seconds: 0,
			saturation: rep ? alloc / rep : null });
		const d0 = now - 6 * 3600, d1 = d0 + 86400, d2 = d1 + 86400;
		const cap = { window: { start: iso(d0 - 86400), end: iso(d2) }, step: 'day', aggregate: 'cluster',
			rows: [row(d0 - 86400, d0, 12 * 86400, 3 * 86400), row(d0, d1, 12 * 6 * 3600, 4 * 6 * 3600), row(d1, d2, 0, 0)],
			totals: row(d0 - 86400, d2, 12 * 30 * 3600, 7 * 6 * 3600) };
		const fake = { '/v1/capacity': cap, '/v1/chargeback': { steps: [] } };
		const match = (u) => Object.keys(fake).includes(u.pathname);
		await page.route(match, (r) => r.fulfill({ status: 200, contentType: 'application/json',
			body: JSON.stringify(fake[new URL(r.request().url()).pathname]) }));
		try {
			await visit('fleet');
			await page.waitForSelector('#fleet-chart-data');
			const rows = await page.$$eval('#fleet-chart-data tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
			eq(rows.map((r) => r[0]).join(' '), iso(d0 - 86400) + ' ' + iso(d0), 'steps drawn: the day before and the day under way');
			eq(rows[0].slice(1).join(','), '3,9,0,0', 'a whole day: allocated, idle, reserved, unavailable GPUs');
			eq(rows[1].slice(1).join(','), '4,8,0,0', 'the day under way: 12 GPUs, not 3');
		} finally {
			await page.unroute(match);
		}
	});

	await test('fleet: the saturation shown is the API\'s, in the stats and in every table row (no arithmetic of the page\'s own)', async () => {
		// the page summed the steps and divided itself; the API settles the
		// window once and takes the one ratio (gl_capacity_ratio)
		for (const a of ['cluster', 'partition']) {
			// a reload: a hash change within the view is ready before it re-renders
			await page.goto(base + '/#/fleet?' + FX.hash + '&a=' + a);
			await page.reload();
			await H.ready(page, 'fleet');
			w.reset(); // the requests the reload cut short
			const api = (await H.api(base, admin, '/v1/capacity?aggregate=' + a + '&window=' + encodeURIComponent(FX.win))).body;
			assert(api.totals.saturation !== null && api.totals.saturation > 0, 'the testbed month has a saturation');
			const pct = (x) => x === null ? '—' : new Intl.NumberFormat('en-US', { style: 'percent', maximumFractionDigits: 1 }).format(x);
			const stats = await page.$$eval('.stat', (ss) => ss.map((e) => [e.querySelector('.label').textContent, e.querySelector('.value').textContent]));
			eq(Object.fromEntries(stats).Saturation, pct(api.totals.saturation), a + ': the Saturation stat');
			const head = await page.$$eval('#fleet-table thead th', (ths) => ths.map((t) => t.textContent.replace(/[▲▼]/g, '').trim()));
			const col = head.indexOf('Saturation');
			const rows = await page.$$eval('#fleet-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
			eq(rows.length, api.rows.length, a + ': a table row per API row');
			for (const r of api.rows) {
				const key = a === 'cluster' ? r.cluster : r.cluster + ' / ' + (r[a] || '—');
				const tr = rows.find((x) => x[0] === key);
				assert(tr, a + ': a row for ' + key);
				eq(tr[col], pct(r.saturation), a + ': saturation of ' + key);
			}
		}
		assert(w.clean(), w.report());
	});

	await test('fleet: GPU time on GPUs no inventory reports is shown, not 0.0 (a cluster without a node source)', async () => {
		// the Philly sample has jobs but no node inventory: /v1/capacity keeps
		// its allocation apart as over_gpu_seconds, which the view left out
		await page.goto(base + '/#/fleet?w=custom&from=2017-10-01&to=2017-10-31&a=cluster');
		await H.ready(page, 'fleet');
		const api = (await H.api(base, admin, '/v1/capacity?aggregate=cluster&step=day&window=' +
			encodeURIComponent('2017-10-01T00:00:00Z,2017-11-01T00:00:00Z'))).body;
		const over = api.rows.filter((r) => r.cluster === 'philly').reduce((s, r) => s + r.over_gpu_seconds, 0);
		assert(over > 0, 'philly jobs beyond the inventory in October 2017');
		const head = await page.$$eval('#fleet-table thead th', (ths) => ths.map((t) => t.textContent.replace(/[▲▼]/g, '').trim()));
		const col = head.indexOf('Beyond inventory');
		assert(col > 0, 'a Beyond inventory column: ' + head.join('|'));
		const rows = await page.$$eval('#fleet-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
		const ph = rows.find((r) => r[0] === 'philly');
		eq(ph[1], 'no inventory', 'capacity of a cluster without inventory');
		eq(ph[col], (over / 3600).toLocaleString('en-US', { maximumFractionDigits: 0 }) + ' GPU-h', 'its GPU time beyond the inventory');
		const note = await page.textContent('#fleet-over');
		assert(note.includes('philly') && note.includes('beyond'), 'the note names the cluster: ' + note);
		assert(w.clean(), w.report());
	});

	await test('chargeback and waste say when capacity covers only part of the window', async () => {
		// the testbed's inventory starts on 22 November: the month's idle is
		// the known days' only, which the API says and the views now show
		for (const [view, id, p] of [['chargeback', '#cb-coverage', '/v1/chargeback?aggregate=team&window='], ['waste', '#idle-coverage', '/v1/idle?aggregate=team&window=']]) {
			await page.goto(base + '/#/' + view + '?' + FX.hash + '&a=team');
			await H.ready(page, view);
			const api = (await H.api(base, admin, p + encodeURIComponent(FX.win))).body;
			eq(api.capacity_known, false, view + ': partly known in the API');
			const note = await page.textContent(id);
			assert(note.includes(api.capacity_days_known + ' of ' + api.capacity_days + ' days'), view + ': ' + note);
			// the Philly sample's cluster ran no job in November 2026, the testbed has an inventory
			eq(api.capacity_clusters_unknown.join(','), '', view + ': no cluster without capacity');
			assert(!note.includes('No capacity data at all'), view + ': ' + note);
		}
		// a cluster that ran GPU jobs with no capacity data at all is named
		await page.goto(base + '/#/waste?w=custom&from=2017-10-01&to=2017-10-31&a=team');
		await H.ready(page, 'waste');
		const ph = (await H.api(base, admin, '/v1/idle?aggregate=team&window=' + encodeURIComponent('2017-10-01T00:00:00Z,2017-11-01T00:00:00Z'))).body;
		eq(ph.capacity_clusters_unknown.join(','), 'philly', 'the API names philly');
		assert((await page.textContent('#idle-coverage')).includes('No capacity data at all for philly'), 'the view names philly');
		// a window wholly covered says nothing
		const full = { '/v1/chargeback': { window: ['2026-11-22T17:00:00Z', '2026-11-22T18:00:00Z'], step: 'none', aggregate: ['team'], shareIdle: 'none',
			currency: 'USD', steps: [], totals: { allocated_gpu_seconds: 0, idle_gpu_seconds: 0, gpu_seconds: 0, cost_micros: 0, idle_micros: 0, total_micros: 0, total: '0.00' },
			unpriced_models: [], capacity_known: true, capacity_steps_known: 1, capacity_days_known: 1, capacity_days: 1 } };
		const match = (u) => Object.keys(full).includes(u.pathname);
		await page.route(match, (r) => r.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(full['/v1/chargeback']) }));
		try {
			await visit('chargeback');
			eq(await page.$$eval('#cb-coverage', (x) => x.length), 0, 'no note when capacity is known');
		} finally {
			await page.unroute(match);
		}
	});

	await test('a window past a source\'s data says so in a banner above every view, named as the API names it', async () => {
		// the testbed's sacct file was ingested without --at (its mtime), its
		// inventory snapshot and the exporter file are of 22 November: November
		// reaches past all three
		const api = (await H.api(base, admin, '/v1/chargeback?aggregate=team&window=' + encodeURIComponent(FX.win))).body;
		eq(api.window_past_data_through, true, 'the API flags November');
		const inv = api.past_data_through.find((x) => x.cluster === 'testgpu' && x.data === 'inventory');
		assert(inv, 'testgpu inventory past: ' + JSON.stringify(api.past_data_through));
		for (const view of ['chargeback', 'waste', 'queue', 'fleet', 'jobs']) {
			await page.goto(base + '/#/' + view + '?' + FX.hash + '&a=team');
			await H.ready(page, view);
			await page.waitForSelector('#data-banner:not([hidden])');
			const text = await page.textContent('#data-banner');
			assert(/This window reaches past the data/.test(text), view + ': ' + text);
			assert(text.includes('testgpu ' + inv.source + ' (inventory) through ' + inv.through.replace('T', ' ').replace(/:00Z$/, ' UTC').replace(/Z$/, ' UTC')),
				view + ': ' + text);
		}
		// October 2017 (the Philly sample) ends before every source's data: no banner
		await page.goto(base + '/#/chargeback?w=custom&from=2017-10-01&to=2017-10-31&a=team');
		await H.ready(page, 'chargeback');
		eq(await page.$eval('#data-banner', (e) => e.hidden), true, 'no banner for a window the data covers');
	});

	await test('forecast: the series shown first is the largest by its history, not the first by name', async () => {
		const s0 = contract['/v1/forecast'].series[0];
		const fc = { ...contract['/v1/forecast'], series: [
			{ ...s0, key: '__unallocated__', history: s0.history.map((x) => ({ ...x, value: 0.1 })) }, s0] };
		const fake = { '/v1/forecast': fc, '/v1/capacity/forecast': contract['/v1/capacity/forecast'] };
		const match = (u) => Object.keys(fake).includes(u.pathname);
		await page.route(match, (r) => r.fulfill({ status: 200, contentType: 'application/json',
			body: JSON.stringify(fake[new URL(r.request().url()).pathname]) }));
		try {
			await visit('forecast');
			await page.waitForSelector('#forecast-chart-data');
			eq(await page.$eval('#forecast-series', (e) => e.options[e.selectedIndex].textContent), 'vision', 'series picked');
			const rows = await page.$$eval('#forecast-chart-data tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
			eq(rows[0][1], String(s0.history[0].value), 'the chart is the picked series\' history');
		} finally {
			await page.unroute(match);
		}
	});

	await test('CSV download goes through format=csv with the bearer header and saves the API\'s bytes', async () => {
		// a closed window (the Philly sample's October 2017): the open month's
		// idle grows by the second, so two reads of it differ unless they
		// fall within the same second
		await page.goto(base + '/#/chargeback?w=custom&from=2017-10-01&to=2017-10-31&a=team');
		await H.ready(page, 'chargeback');
		w.reset();
		const dl = page.waitForEvent('download');
		await page.click('#view button[data-csv="/v1/chargeback"]');
		const file = await (await dl).path();
		const got = fs.readFileSync(file, 'utf8');
		const api = await H.api(base, admin, '/v1/chargeback?window=' + encodeURIComponent('2017-10-01T00:00:00Z,2017-11-01T00:00:00Z') +
			'&aggregate=team&format=csv');
		eq(api.status, 200, 'csv status');
		eq(got, api.body, 'csv bytes');
		assert(got.split('\r\n')[0].includes('team'), 'csv header: ' + got.slice(0, 100));
		assert(got.split('\r\n').filter((l) => l).length > 1, 'a csv row for October 2017: ' + got.slice(0, 300));
		assert(w.requests.some((u) => u.includes('format=csv')) && !w.requests.some((u) => u.includes('glt_')), w.requests.join('\n'));
		assert(w.clean(), w.report());
	});

	await test('reports: a month named by a link, its budgets equal /v1/budgets, the ZIP and the PDF download with the bearer header', async () => {
		// the fixture's month by a link (#/reports?m=): finance shares those
		const month = FX.month;
		await page.goto(base + '/#/reports?m=' + month);
		await H.ready(page, 'reports');
		w.reset();
		eq(await page.$eval('#reports-month-pick', (s) => s.value), month, 'the month the link names');
		await page.waitForSelector('#reports-month[aria-busy="false"] #reports-budgets');
		const api = (await H.api(base, admin, '/v1/budgets?month=' + month)).body;
		eq(api.budgets.length, 1, 'one budget');
		const cells = await page.$$eval('#reports-budgets tbody tr td', (tds) => tds.map((t) => t.textContent));
		eq(cells[0], 'vision', 'owner');
		eq(cells[3], shown(api.budgets[0].spend_to_date, 'USD'), 'spend to date');
		eq(cells[7], api.budgets[0].forecast_method, 'forecast method');
		const acc = api.budgets[0].forecast_accuracy;
		eq(cells[8], acc && acc.wape != null ? new Intl.NumberFormat('en', { style: 'percent', maximumFractionDigits: 1 }).format(acc.wape) : '—',
			'the forecast\'s backtest WAPE');
		assert(Number(api.budgets[0].pct_used) >= 100 && await page.$eval('#reports-budgets tbody tr', (r) => r.className) === 'special',
			'an overspent budget is marked: ' + api.budgets[0].pct_used);
		for (const [fmt, magic] of [['zip', 'PK\x03\x04'], ['pdf', '%PDF-']]) {
			const dl = page.waitForEvent('download');
			await page.click('#view button[data-format="' + fmt + '"]');
			const file = await (await dl).path();
			eq((await dl).suggestedFilename(), 'showback-' + month + '-team.' + fmt, fmt + ' file name');
			eq(fs.readFileSync(file).subarray(0, magic.length).toString('latin1'), magic, fmt + ' magic');
			if (fmt === 'zip') {
				const names = execFileSync('unzip', ['-Z1', file], { encoding: 'utf8' }).trim().split('\n');
				eq(names.length, 12, 'tables in the zip');
				eq(names[0], 'showback-' + month + '-team-owners.csv', 'first table');
			}
		}
		await page.waitForFunction(() => /Saved showback-/.test(document.getElementById('reports-status').textContent));
		assert(w.requests.some((u) => u.includes('format=zip')) && !w.requests.some((u) => u.includes('glt_')), w.requests.join('\n'));
		assert(w.clean(), w.report());
	});

	await test('audit: the verify button reports an intact chain', async () => {
		await visit('audit');
		await page.click('#verify');
		await page.waitForSelector('#verify-result.ok', { timeout: 10000 });
		assert((await page.textContent('#verify-result')).startsWith('Chain intact'), await page.textContent('#verify-result'));
		// its table downloads as CSV like every other
		const dl = page.waitForEvent('download');
		await page.click('#view button[data-csv="/v1/audit"]');
		const file = await (await dl).path();
		const got = fs.readFileSync(file, 'utf8');
		assert(got.startsWith('seq,at,actor,source_addr,action,object,outcome,detail,prev_hash,hash\r\n'), got.slice(0, 120));
	});

	await test('audit: filters by action and outcome, and pages back through next_cursor like /v1/audit', async () => {
		// the three tokens the test made, under the window of this month
		await page.goto(base + '/#/audit?w=month');
		await H.ready(page, 'audit');
		await page.fill('#audit-action', 'token.create');
		await page.click('#audit-filter button[type=submit]');
		await page.waitForFunction(() => /all in this window/.test(document.querySelector('#audit-status').textContent));
		const seqs = async () => (await page.$$eval('#audit-table tbody tr', (trs) => trs.map((tr) => Number(tr.cells[0].textContent))));
		const api1 = (await H.api(base, admin, '/v1/audit?window=month&action=token.create&limit=1000')).body;
		eq((await seqs()).join(','), api1.entries.map((e) => e.seq).join(','), 'token.create rows: the API\'s');
		const acts = await page.$$eval('#audit-table tbody tr', (trs) => trs.map((tr) => tr.cells[4].textContent));
		assert(acts.length >= 3 && acts.every((a) => a === 'token.create'), acts.join(','));
		eq(await page.$eval('#audit-events', (e) => [...e.childNodes].filter((n) => n.nodeType !== 1).length), 0, 'no stray text ("null") under the table');
		// every request is audited: enough http.request rows for a second page
		const okReqs = async () => (await H.api(base, admin, '/v1/audit?window=month&action=http.request&outcome=ok&limit=1000')).body.entries.length;
		for (let i = 0, n = await okReqs(); n <= 130 && i < 5; i++, n = await okReqs())
			for (let k = 0; k < 140 - n; k++) await H.api(base, viewer, '/v1/whoami');
		assert(await okReqs() > 100, 'more than a page of http.request rows');
		await page.fill('#audit-action', 'http.request');
		await page.selectOption('#audit-outcome', 'ok');
		await page.click('#audit-filter button[type=submit]');
		await page.waitForSelector('#audit-older');
		const first = await seqs();
		eq(first.length, 100, 'first page');
		// rows below the first page's last seq do not change as requests add rows above
		const api3 = (await H.api(base, admin, '/v1/audit?window=month&action=http.request&outcome=ok&limit=100&cursor=' + Math.min(...first))).body;
		await page.click('#audit-older');
		await page.waitForFunction(() => document.querySelectorAll('#audit-table tbody tr').length > 100);
		const got = await seqs();
		eq(got.slice(100).join(','), api3.entries.map((e) => e.seq).join(','), 'second page: the rows below the first page\'s cursor');
		eq(new Set(got).size, got.length, 'no row twice');
		await page.fill('#audit-action', '');
		await page.selectOption('#audit-outcome', '');
		await page.click('#audit-filter button[type=submit]');
		await page.waitForFunction(() => !/Loading/.test(document.querySelector('#audit-status').textContent));
		assert(w.clean(), w.report());
	});

	await test('views without a window do not call an empty table empty "in this window"', async () => {
		for (const v of ['inventory', 'reports', 'hook']) {
			await visit(v);
			const t = await page.textContent('#view');
			assert(!/in this window/.test(t), v + ': ' + t.slice(0, 400));
		}
		assert(/The hook has not acted yet\./.test(await page.textContent('#view')), 'hook: its own words');
	});

	await test('waste: without exporter data, idle in allocations is unknown, not 0', async () => {
		// the Philly sample (October 2017) has no dcgm-exporter data
		await page.goto(base + '/#/waste?w=custom&from=2017-10-01&to=2017-10-31&a=team');
		await H.ready(page, 'waste');
		const api = (await H.api(base, admin, '/v1/idle?aggregate=team&window=' + encodeURIComponent('2017-10-01T00:00:00Z,2017-11-01T00:00:00Z'))).body;
		eq(api.allocated_idle.length, 0, 'no owner with exporter data');
		const st = await page.$$eval('.stat', (xs) => Object.fromEntries(xs.map((x) => [x.querySelector('.label').textContent, x.querySelector('.value').textContent])));
		eq(st['Idle in allocations'], 'unknown', 'idle in allocations');
		assert(/Needs dcgm-exporter data/.test(await page.textContent('#view')), 'the top jobs say why they are empty');
	});

	await test('keyboard: skip link, then the nav by Tab and Enter', async () => {
		// a fresh page (a change of view moves focus to the content)
		await page.goto(base + '/#/fleet');
		await page.reload();
		await H.ready(page, 'fleet');
		await page.keyboard.press('Tab');
		eq(await page.evaluate(() => document.activeElement.className), 'skip', 'first Tab stop');
		let found = false;
		for (let i = 0; i < 15 && !found; i++) {
			await page.keyboard.press('Tab');
			found = await page.evaluate(() => document.activeElement.dataset.view === 'queue');
		}
		assert(found, 'Queue link not reachable by Tab');
		await page.keyboard.press('Enter');
		await H.ready(page, 'queue');
		assert(page.url().includes('#/queue'), page.url());
	});

	await test('axe-core: no serious or critical violations in any view, light and dark', async () => {
		const bad = [];
		for (const v of ['fleet', 'chargeback', 'waste', 'queue', 'inventory', 'jobs', 'reports', 'audit']) {
			await visit(v);
			for (const x of await H.axe(page)) bad.push(v + ': ' + x);
		}
		await page.click('#theme');
		await visit('chargeback');
		for (const x of await H.axe(page)) bad.push('dark chargeback: ' + x);
		await page.screenshot({ path: path.join(SHOTS, 'chargeback-dark.png'), fullPage: true });
		await page.click('#theme');
		assert(!bad.length, bad.join('\n'));
	});

	await test('a phone-sized screen: no horizontal page overflow, the table scrolls inside its box', async () => {
		const c2 = await b.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
		const p2 = await c2.newPage();
		await H.signIn(p2, base, admin);
		await p2.goto(base + '/#/chargeback');
		await H.ready(p2, 'chargeback');
		const over = await p2.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
		await p2.screenshot({ path: path.join(SHOTS, 'chargeback-phone.png'), fullPage: true });
		await c2.close();
		assert(over <= 0, 'page wider than the screen by ' + over + ' px');
	});

	await test('sign-in page passes axe-core too', async () => {
		const p2 = await ctx.newPage();
		await p2.goto(base + '/');
		await p2.waitForSelector('#token');
		const bad = await H.axe(p2);
		await p2.screenshot({ path: path.join(SHOTS, 'signin.png') });
		await p2.close();
		assert(!bad.length, bad.join('\n'));
	});

	await test('a viewer token sees neither audit nor chargeback, and no request for them is made', async () => {
		const c2 = await b.newContext({ viewport: { width: 1280, height: 800 } });
		const p2 = await c2.newPage();
		const w2 = H.watch(p2);
		await H.signIn(p2, base, viewer);
		const nav = await p2.$$eval('#nav a', (as) => as.map((a) => a.dataset.view));
		eq(nav.join(','), 'fleet,queue,forecast,inventory', 'viewer views');
		// per-user and per-account figures are finance's: not offered, and a
		// link asking for them falls back to a dimension the viewer may use
		for (const v of ['queue', 'forecast']) {
			await p2.goto(base + '/#/' + v + '?w=month&a=user');
			await H.ready(p2, v);
			const aggs = await p2.$$eval('#aggregate option', (os) => os.map((o) => o.value));
			assert(aggs.length && !aggs.includes('user') && !aggs.includes('account'), v + ' offers ' + aggs.join(','));
			assert(!w2.requests.some((u) => /aggregate=(user|account)/.test(u)), w2.requests.join('\n'));
		}
		await p2.goto(base + '/#/audit');
		await H.ready(p2);
		eq(await p2.textContent('#view-title'), 'Fleet', 'falls back to the first view');
		assert(!w2.requests.some((u) => u.includes('/v1/audit') || u.includes('/v1/chargeback')), w2.requests.join('\n'));
		assert(w2.clean(), w2.report());
		await c2.close();
	});

	await test('an account-scoped token sees only its account\'s jobs', async () => {
		// independently of the code under test: teama's allocations in the sacct fixture
		const fx = fs.readFileSync(path.join(H.ROOT, 'tests/fixtures/sacct/testbed/sacct_alloc.txt'), 'utf8').trim().split('\n');
		const fields = fs.readFileSync(path.join(H.ROOT, 'tests/fixtures/sacct/testbed/sacct_fields.txt'), 'utf8').trim().split('|');
		const acct = fields.indexOf('Account');
		const teama = fx.filter((l) => l.split('|')[acct] === 'teama').length;
		assert(teama > 0, 'fixture has teama jobs');
		const c2 = await b.newContext({ viewport: { width: 1280, height: 800 } });
		const p2 = await c2.newPage();
		const w2 = H.watch(p2);
		await H.signIn(p2, base, scoped);
		const nav = await p2.$$eval('#nav a', (as) => as.map((a) => a.dataset.view));
		eq(nav.join(','), 'chargeback,inference,queue,forecast,jobs', 'scoped views');
		await H.ready(p2, 'chargeback');
		await p2.goto(base + '/#/jobs?' + FX.hash);
		await H.ready(p2, 'jobs');
		const accounts = await p2.$$eval('#jobs-table tbody tr', (trs) => trs.map((tr) => tr.cells[4].textContent));
		eq(accounts.length, teama, 'teama jobs shown');
		assert(accounts.every((a) => a === 'teama'), accounts.join(','));
		assert(w2.clean(), w2.report());
		await p2.screenshot({ path: path.join(SHOTS, 'jobs-scoped.png'), fullPage: true });
		await c2.close();
	});

	await test('a team-scoped token: chargeback shows its team only, no fleet figure, the admin\'s line for it', async () => {
		const c2 = await b.newContext({ viewport: { width: 1280, height: 800 } });
		const p2 = await c2.newPage();
		const w2 = H.watch(p2);
		await H.signIn(p2, base, vision);
		const nav = await p2.$$eval('#nav a', (as) => as.map((a) => a.dataset.view));
		eq(nav.join(','), 'chargeback,inference,queue,forecast,jobs', 'scoped views');
		let api, adm;
		for (let attempt = 0; ; attempt++) {
			const resp = p2.waitForResponse((r) => new URL(r.url()).pathname === '/v1/chargeback' && !new URL(r.url()).searchParams.get('step'));
			await p2.goto(base + '/#/chargeback?' + FX.hash + '&a=team&try=' + attempt);
			await H.ready(p2, 'chargeback');
			api = await (await resp).json();
			// the admin's answer with the scope as the filter: the same line
			adm = (await H.api(base, admin, '/v1/chargeback?window=' + encodeURIComponent(FX.win) + '&aggregate=team&filter=' + encodeURIComponent('team:"vision"'))).body;
			if (JSON.stringify(adm.steps[0].items) === JSON.stringify(api.steps[0].items) || attempt === 4) break;
		}
		eq(JSON.stringify(api.steps[0].items), JSON.stringify(adm.steps[0].items), 'the admin\'s vision line');
		assert(api.steps[0].items.length === 1 && api.steps[0].items[0].name === 'vision', 'vision only');
		const cells = await p2.$$eval('#chargeback-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
		eq(cells.map((c) => c[0]).join(','), 'vision,Total', 'rows');
		eq(cells[0][6], shown(api.steps[0].items[0].total, api.currency), 'vision total');
		eq(cells[1][6], cells[0][6], 'its total is its line');
		// nothing on the page names another owner or holds the fleet's figures
		const full = (await H.api(base, admin, '/v1/chargeback?window=' + encodeURIComponent(FX.win) + '&aggregate=team')).body;
		const text = await p2.textContent('body');
		for (const it of full.steps[0].items.filter((x) => x.name !== 'vision')) {
			assert(!text.includes(it.name), 'page names ' + it.name);
			assert(!text.includes(shown(it.total, full.currency)), 'page holds ' + it.name + '\'s total');
		}
		assert(!text.includes('__idle__'), 'page names __idle__');
		assert(!text.includes(shown(full.totals.total, full.currency)), 'page holds the fleet total');
		// the Forecast view: its own series, and no fleet capacity outlook
		// (asked for, it would be 403 and a failure on the page)
		const asked = [];
		p2.on('request', (r) => asked.push(new URL(r.url()).pathname));
		const fcResp = p2.waitForResponse((r) => new URL(r.url()).pathname === '/v1/forecast');
		await p2.goto(base + '/#/forecast?a=team');
		await H.ready(p2, 'forecast');
		eq((await fcResp).status(), 200, '/v1/forecast as vision');
		const series = await p2.$$eval('#forecast-series option', (os) => os.map((o) => o.textContent));
		assert(series.every((k) => k === 'vision'), 'forecast series ' + series.join(','));
		assert(!(await p2.$('#capacity-card')) && !(await p2.$('#forecast-saturation')), 'a capacity outlook shown to a scope');
		assert(!asked.includes('/v1/capacity/forecast'), 'the capacity outlook asked for as a scope');
		assert(!/Capacity forecast/.test(await p2.textContent('#view')), 'a capacity failure shown to a scope');
		assert(w2.clean(), w2.report());
		await p2.screenshot({ path: path.join(SHOTS, 'chargeback-scoped.png'), fullPage: true });
		await c2.close();
	});

	await test('an invalid or expired token goes back to sign-in with the reason', async () => {
		const c2 = await b.newContext();
		const p2 = await c2.newPage();
		await p2.goto(base + '/');
		await p2.evaluate(() => sessionStorage.setItem('gpuledger.token', 'glt_' + 'A'.repeat(43)));
		await p2.reload();
		await p2.waitForSelector('#signin:not([hidden])');
		assert(/unknown token/.test(await p2.textContent('#signin-error')), await p2.textContent('#signin-error'));
		await c2.close();
	});

	await test('API down: a banner, not a blank page', async () => {
		await visit('queue');
		await page.route('**/v1/**', (r) => r.abort('connectionrefused'));
		await page.selectOption('#window', 'lastmonth');
		await page.waitForSelector('#banner:not([hidden])');
		assert(/does not answer/.test(await page.textContent('#banner')), await page.textContent('#banner'));
		assert(await page.isVisible('#shell'), 'shell still shown');
		await page.screenshot({ path: path.join(SHOTS, 'api-down.png') });
		await page.unroute('**/v1/**');
	});
} finally {
	await b.close();
	const st = await d.stop();
	H.ok(st === 0, 'the daemon stops cleanly after the session', 'exit ' + st + '; log ' + d.log);
	H.done();
}
