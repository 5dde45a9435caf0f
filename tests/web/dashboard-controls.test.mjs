// Issue 28 item 3 in a real browser against the real daemon and the real
// fixtures: the window presets are the API's, a one-day window is drawn in
// hourly steps, and Chargeback's idle sharing, filter, second dimension and
// cost-over-time chart each send the API what they say and show what it
// answers. Screenshots under build/web-screenshots/.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as H from './lib/harness.mjs';

const { test, assert, eq } = H;
const SHOTS = path.join(H.ROOT, 'build/web-screenshots');
fs.mkdirSync(SHOTS, { recursive: true });

const dir = H.tmpDir('web-controls');
const dsn = H.freshDb('gl_test_web_controls');
H.loadFixtures(dsn, dir);
const admin = H.token(dsn, 'web-admin', 'admin');
// recorded report files for the fixture month, made by the real `report record`
const reportsDir = path.join(dir, 'reports');
const d = await H.startDaemon(dsn, dir, `reports:\n  dir: ${reportsDir}\n  formats: csv,html\n`);
H.gl(dsn, ['--config', path.join(dir, 'config.yaml'), 'report', 'record', '--month', '2026-11']);
const base = d.base;
const b = await H.browser();
const ctx = await b.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
const page = await ctx.newPage();
const w = H.watch(page);

// the Slurm testbed ran in November 2026 (its day: 2026-11-22)
const FX = { hash: 'w=custom&from=2026-11-01&to=2026-11-30', win: '2026-11-01T00:00:00Z,2026-12-01T00:00:00Z' };
const q = (u, k) => new URL(u).searchParams.get(k);
const isCb = (u, step) => new URL(u).pathname === '/v1/chargeback' && (step ? !!q(u, 'step') : !q(u, 'step'));
const num = (s) => Number(s.replace(/[^0-9.-]/g, ''));

// the page's chargeback table rows: [name, ...cells] of the data rows
async function cbRows() {
	return page.$$eval('#chargeback-table tbody tr:not(.total)', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
}

// loads chargeback with the fixture month, then runs act() and returns the
// table's and the chart's answers it caused
async function cbAfter(act) {
	const table = page.waitForResponse((r) => isCb(r.url(), false) && r.status() === 200);
	const chart = page.waitForResponse((r) => isCb(r.url(), true) && r.status() === 200);
	await act();
	const [t, c] = [await (await table).json(), await (await chart).json()];
	await page.waitForSelector('#cb-body[aria-busy="false"] #chargeback-table');
	return { t, c };
}

try {
	await H.signIn(page, base, admin);

	await test('the window picker offers the API\'s presets, and each is sent as the API names it', async () => {
		const opts = await page.$$eval('#window option', (os) => os.map((o) => o.value));
		eq(opts.join(','), 'today,yesterday,week,lastweek,month,lastmonth,custom', 'presets');
		await page.goto(base + '/#/chargeback?w=month&a=team');
		await H.ready(page, 'chargeback');
		for (const p of ['today', 'yesterday', 'week', 'lastweek', 'lastmonth']) {
			const { t } = await cbAfter(() => page.selectOption('#window', p));
			const api = (await H.api(base, admin, '/v1/chargeback?aggregate=team&window=' + p)).body;
			if (p === 'week') { // ends now: the same 7 days, give or take the seconds between the two asks
				eq(Date.parse(t.window[1]) - Date.parse(t.window[0]), 7 * 86400e3, 'week length');
				assert(Math.abs(Date.parse(t.window[1]) - Date.parse(api.window[1])) < 60e3, 'week ends now: ' + t.window[1]);
			} else {
				eq(t.window.join(','), api.window.join(','), p + ' window');
			}
			eq(new URL(page.url()).hash.includes('w=' + p), true, p + ' in the link');
		}
		assert(w.clean(), w.report());
		// an old link's 7d is the same window as week
		await cbAfter(() => page.goto(base + '/#/chargeback?w=7d&a=team'));
		eq(await page.$eval('#window', (s) => s.value), 'week', '7d link');
	});

	await test('a one-day window is drawn in hourly steps inside that day (Fleet and Chargeback)', async () => {
		const day = '2026-11-22', want = '2026-11-22T00:00:00Z,2026-11-23T00:00:00Z';
		const cap = page.waitForRequest((r) => new URL(r.url()).pathname === '/v1/capacity' && q(r.url(), 'window') === want);
		w.reset();
		await page.goto(base + `/#/fleet?w=custom&from=${day}&to=${day}&a=cluster`);
		eq(q((await cap).url(), 'step'), 'hour', 'capacity step');
		await H.ready(page, 'fleet');
		await page.waitForSelector('#fleet-chart-data');
		const ts = await page.$$eval('#fleet-chart-data tbody tr td:first-child', (tds) => tds.map((t) => t.textContent));
		assert(ts.length > 1 && ts.length <= 24, 'hourly rows: ' + ts.length);
		assert(ts.every((t) => t.startsWith(day + 'T')), 'rows inside the day: ' + ts.join(' '));
		await page.waitForSelector('#fleet-chart-data ~ .chart canvas, .chart-card .chart canvas');
		await page.screenshot({ path: path.join(SHOTS, 'fleet-one-day.png'), fullPage: true });
		const { c } = await cbAfter(() => page.goto(base + `/#/chargeback?w=custom&from=${day}&to=${day}&a=team`));
		eq(c.step, 'hour', 'chargeback chart step');
		eq(c.steps.length, 24, 'one step an hour');
		assert(w.clean(), w.report());
	});

	await test('chargeback: the shareIdle toggle asks for proportional sharing and shows its totals', async () => {
		await cbAfter(() => page.goto(base + '/#/chargeback?' + FX.hash + '&a=team'));
		const { t } = await cbAfter(() => page.check('#cb-share'));
		eq(t.shareIdle, 'proportional', 'answer');
		// the page's own answer: the window reaches now, so a second request a
		// moment later may differ by an open job's cent
		const shares = t.steps[0].items.reduce((s, it) => s + it.idle_share_micros, 0);
		assert(shares > 0, 'the fixture month has idle to share');
		const rows = await cbRows();
		const vision = rows.find((r) => r[0] === 'vision');
		const it = t.steps[0].items.find((x) => x.name === 'vision');
		// the cents every view shows (one rounding: the API's shown amounts)
		eq(num(vision[5]), Number(it.idle_share), 'vision idle share');
		eq(num(vision[6]), Number(it.total), 'vision total');
		assert(/shared: proportional/.test(await page.textContent('.stats')), 'stat says shared');
		await page.uncheck('#cb-share');
		await page.waitForSelector('#cb-body[aria-busy="false"] #chargeback-table');
	});

	await test('chargeback: a filter narrows the rows; a bad one shows the API\'s reason and keeps the controls', async () => {
		const { t } = await cbAfter(async () => { await page.fill('#cb-filter', 'team:"vision"'); await page.dispatchEvent('#cb-filter', 'change'); });
		const names = t.steps[0].items.map((i) => i.name);
		eq(names.join(','), 'vision', 'API rows under the filter');
		const rows = (await cbRows()).filter((r) => !r[0].startsWith('__'));
		eq(rows.map((r) => r[0]).join(','), 'vision', 'page rows');
		const bad = page.waitForResponse((r) => isCb(r.url(), false) && r.status() === 400);
		await page.fill('#cb-filter', 'colour:"red"');
		await page.dispatchEvent('#cb-filter', 'change');
		await bad;
		await page.waitForSelector('#cb-body [data-state="error"]');
		assert(/filter/.test(await page.textContent('#cb-body')), await page.textContent('#cb-body'));
		assert(await page.isVisible('#cb-filter'), 'controls stay');
		await cbAfter(async () => { await page.fill('#cb-filter', ''); await page.dispatchEvent('#cb-filter', 'change'); });
		w.reset();
	});

	await test('chargeback: a second dimension splits each owner, the rows the API\'s', async () => {
		const { t } = await cbAfter(() => page.selectOption('#cb-then', 'cluster'));
		eq(t.aggregate.join(','), 'team,cluster', 'aggregate sent');
		const api = (await H.api(base, admin, '/v1/chargeback?aggregate=team,cluster&window=' + encodeURIComponent(FX.win))).body;
		const want = api.steps[0].items.map((i) => i.name).sort();
		assert(want.some((n) => n === 'vision/testgpu'), 'vision on testgpu: ' + want.join(' '));
		const got = (await cbRows()).map((r) => r[0]).filter((n) => n.includes('/')).sort();
		eq(got.join(','), want.join(','), 'rows');
		await page.screenshot({ path: path.join(SHOTS, 'chargeback-two-dims.png'), fullPage: true });
		await cbAfter(() => page.selectOption('#cb-then', ''));
	});

	await test('chargeback: the cost chart stacks each day\'s cost by owner, summing to the API\'s day totals', async () => {
		w.reset();
		const { c } = await cbAfter(() => page.reload());
		eq(c.step, 'day', 'a month in days');
		await page.waitForSelector('#cb-chart .chart canvas');
		const rows = await page.$$eval('#cb-chart-data tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((x) => x.textContent)));
		eq(rows.length, c.steps.length, 'a row per day');
		let nonzero = 0;
		c.steps.forEach((s, i) => {
			const want = s.items.reduce((a, it) => a + it.total_micros, 0) / 1e6;
			const got = rows[i].slice(1).reduce((a, x) => a + num(x), 0);
			if (want > 0) nonzero++;
			assert(Math.abs(got - want) <= 0.005 * (rows[i].length - 1) + 1e-9, `${s.start}: chart ${got}, API ${want}`);
		});
		assert(nonzero > 0, 'some day has cost');
		assert(w.clean(), w.report());
		await page.screenshot({ path: path.join(SHOTS, 'chargeback-chart.png'), fullPage: true });
	});
	await test('reports: every recorded file has a download button; the file comes through GET /v1/reports/{id} as recorded', async () => {
		await page.goto(base + '/#/reports?m=2026-11');
		await H.ready(page, 'reports');
		await page.waitForSelector('#reports-month[aria-busy="false"] #reports-files');
		const api = (await H.api(base, admin, '/v1/reports?month=2026-11')).body;
		assert(api.files.length >= 2, 'recorded files: ' + api.files.length);
		const buttons = await page.$$('#reports-files tbody button');
		eq(buttons.length, api.files.length, 'a button per file');
		w.reset();
		for (const i of [0, buttons.length - 1]) {
			const row = await buttons[i].evaluate((b) => b.closest('tr').cells[0].textContent);
			const rec = api.files.find((x) => x.name === row);
			const dl = page.waitForEvent('download');
			const resp = page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/reports/' + rec.id);
			await buttons[i].click();
			const r = await resp;
			eq(new URL(r.url()).search, '', 'no query');
			eq(r.headers().etag, '"' + rec.sha256 + '"', 'ETag');
			const file = await (await dl).path();
			eq((await dl).suggestedFilename(), rec.name, 'file name');
			eq(crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex'), rec.sha256, rec.name + ' sha256');
		}
		assert(/Saved /.test(await page.textContent('#reports-file-status')), await page.textContent('#reports-file-status'));
		assert(w.clean(), w.report());
		await page.screenshot({ path: path.join(SHOTS, 'reports-downloads.png'), fullPage: true });
	});
	await test('audit: a row names the token and shows the query string the request carried; details read as words', async () => {
		// the chargeback requests above, filtered per team
		await page.goto(base + '/#/audit?w=today');
		await H.ready(page, 'audit');
		await page.waitForSelector('#audit-table');
		const rows = await page.$$eval('#audit-table tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
		const hit = rows.find((r) => r[5].startsWith('/v1/chargeback?') && r[5].includes('filter=team:"vision"'));
		assert(hit, 'a chargeback row with its filter: ' + rows.slice(0, 5).map((r) => r.join(' | ')).join('\n'));
		assert(/^web-admin \(token:\d+\)$/.test(hit[2]), 'actor: ' + hit[2]);
		assert(/^GET · route chargeback · status 200 · [0-9.]+ ms$/.test(hit[7]), 'detail: ' + hit[7]);
		assert(!rows.some((r) => r[7].includes('{"')), 'no raw JSON in details');
		assert(w.clean(), w.report());
	});

	await test('nothing overflows at 1280 px: no view scrolls sideways, no table is wider than its box', async () => {
		const bad = [];
		for (const v of ['fleet', 'chargeback', 'waste', 'queue', 'forecast', 'inventory', 'jobs', 'reports', 'audit', 'hook']) {
			await page.goto(base + '/#/' + v + '?' + FX.hash);
			await page.reload();
			await H.ready(page, v);
			await page.waitForTimeout(300);
			const m = await page.evaluate(() => ({
				page: document.documentElement.scrollWidth - innerWidth,
				wraps: [...document.querySelectorAll('.table-wrap')].filter((x) => x.scrollWidth > x.clientWidth + 1)
					.map((x) => (x.querySelector('table')?.id || '?') + ' ' + x.scrollWidth + ' px in ' + x.clientWidth),
			}));
			if (m.page > 0) bad.push(v + ': the page is ' + m.page + ' px too wide');
			for (const t of m.wraps) bad.push(v + ': ' + t);
			if (v === 'forecast' || v === 'audit') await page.screenshot({ path: path.join(SHOTS, v + '-1280.png'), fullPage: true });
		}
		assert(!bad.length, bad.join('\n'));
	});
} finally {
	await b.close();
	const st = await d.stop();
	H.ok(st === 0, 'the daemon stops cleanly after the session', 'exit ' + st + '; log ' + d.log);
	H.done();
}
