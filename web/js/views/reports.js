// Reports: a month's showback for finance, downloaded as one ZIP of CSV
// tables, a self-contained HTML page or a PDF (by the API, with the bearer
// header); the budgets of that month with spend, forecast (and how it was
// made) and the alerts sent; and the report sets the daemon recorded.
import { h, stat, table, fileButton } from '../ui.js';
import * as f from '../fmt.js';

// 'YYYY-MM' of this month and the twelve before it, newest first (UTC)
function months() {
	const now = new Date(), out = [];
	for (let i = 0; i < 13; i++) {
		const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - i, 1));
		out.push(d.toISOString().slice(0, 7));
	}
	return out;
}

let chosen = null; // the month picked, kept across re-renders

async function monthBody(ctx, month) {
	const [bud, rec] = await Promise.all([
		ctx.get('/v1/budgets', { month }),
		ctx.get('/v1/reports', { month }),
	]);
	const cur = bud.currency || 'USD';
	const over = bud.budgets.filter((b) => Number(b.pct_used) >= 100).length;
	const fileStatus = h('span', { class: 'note', role: 'status', id: 'reports-file-status' });
	return [
		h('div', { class: 'stats' },
			stat('Budgets', f.number(bud.budgets.length), over ? over + ' at or over 100 %' : 'none over'),
			stat('Recorded report files', f.number(rec.files.length), rec.files.length ? 'newest ' + f.time(rec.files[0].generated_at) : 'none yet')),
		table({
			id: 'reports-budgets', title: 'Budgets, ' + bud.month, sortKey: 'pct', sortDir: 'desc', empty: 'No budget is configured (budgets: in the config).',
			cols: [
				{ key: 'owner', label: 'Owner' }, { key: 'aggregate', label: 'Aggregate' },
				{ key: 'budget', label: 'Budget', num: true, fmt: (r) => f.decimal(r.budget, cur), sort: (r) => Number(r.budget) },
				{ key: 'spend', label: 'Spend to date', num: true, fmt: (r) => f.decimal(r.spend, cur), sort: (r) => Number(r.spend) },
				{ key: 'pct', label: '% used', num: true, fmt: (r) => (r.pct === '' ? '—' : r.pct + ' %'), sort: (r) => Number(r.pct) },
				{ key: 'forecast', label: 'Forecast, month end', num: true, fmt: (r) => f.decimal(r.forecast, cur), sort: (r) => Number(r.forecast) },
				{ key: 'fpct', label: 'Forecast %', num: true, fmt: (r) => (r.fpct === '' ? '—' : r.fpct + ' %'), sort: (r) => Number(r.fpct) },
				{ key: 'method', label: 'Forecast by' },
				// the method's own backtest on the owner's days, beside the forecast it made
				{ key: 'wape', label: 'Its backtest WAPE', num: true, fmt: (r) => (r.wape == null ? '—' : f.percent(r.wape)), sort: (r) => (r.wape == null ? -1 : r.wape) },
				{ key: 'alerted', label: 'Alerts sent', fmt: (r) => r.alerted || '—' },
			],
			rows: bud.budgets.map((b) => ({
				owner: b.owner, aggregate: b.aggregate, budget: b.budget, spend: b.spend_to_date, pct: b.pct_used,
				forecast: b.forecast_month_end, fpct: b.forecast_pct, method: b.forecast_method,
				wape: b.forecast_accuracy ? b.forecast_accuracy.wape : null,
				alerted: b.alerted_thresholds.map((t) => t + ' %').join(', '),
				__class: Number(b.pct_used) >= 100 ? 'special' : null,
			})),
		}),
		table({
			id: 'reports-files', title: 'Recorded report files, ' + month, sortKey: 'name', sortDir: 'asc', empty: 'None recorded for this month yet.',
			cols: [
				{ key: 'name', label: 'File' }, { key: 'aggregate', label: 'Aggregate' }, { key: 'shareIdle', label: 'Idle shared' },
				{ key: 'version', label: 'Version', num: true }, { key: 'bytes', label: 'Bytes', num: true, fmt: (r) => f.number(r.bytes) },
				{ key: 'sha256', label: 'SHA-256', fmt: (r) => r.sha256.slice(0, 16) + '…' },
				{ key: 'changed', label: 'Changed (late data)', fmt: (r) => r.changed.join(', ') || '—' },
				{ key: 'trigger', label: 'By' }, { key: 'generated_at', label: 'Generated', fmt: (r) => f.time(r.generated_at) },
				// the file as recorded (GET /v1/reports/{id}, its sha256 the ETag)
				{ key: 'id', label: 'Download', node: (r) => fileButton({ path: '/v1/reports/' + r.id, params: {}, format: r.format,
					label: 'Download ' + r.format.toUpperCase(), what: r.name, status: fileStatus, asFile: true }) },
			],
			rows: rec.files,
		}),
		fileStatus,
	];
}

export async function render(ctx) {
	const list = months();
	// a month a link names is offered even when older than the list
	if (ctx.month) {
		chosen = ctx.month;
		if (!list.includes(chosen)) {
			list.push(chosen);
			list.sort().reverse();
		}
	}
	if (!chosen || !list.includes(chosen)) chosen = list[1]; // finance closes the month before
	const status = h('span', { class: 'note', role: 'status', id: 'reports-status' });
	const holder = h('div', { id: 'reports-month', 'aria-busy': 'false' }, await monthBody(ctx, chosen));
	const select = h('select', {
		id: 'reports-month-pick',
		onchange: async (e) => {
			chosen = e.target.value;
			ctx.setMonth(chosen);
			status.textContent = '';
			holder.setAttribute('aria-busy', 'true');
			try {
				holder.replaceChildren(...await monthBody(ctx, chosen));
			} catch (err) {
				holder.replaceChildren(h('p', { class: 'error', text: err.message }));
			} finally {
				holder.setAttribute('aria-busy', 'false');
			}
		},
	}, list.map((m) => h('option', { value: m, selected: m === chosen ? true : null, text: m })));
	const params = () => ({ month: chosen, aggregate: ctx.aggregate || 'team' });
	return [
		h('div', { class: 'filter' },
			h('label', { for: 'reports-month-pick', text: 'Month ' }), select, ' ',
			fileButton({ path: '/v1/reports/showback', params, format: 'zip', label: 'Download CSV tables (ZIP)', status }), ' ',
			fileButton({ path: '/v1/reports/showback', params, format: 'html', label: 'HTML', status }), ' ',
			fileButton({ path: '/v1/reports/showback', params, format: 'pdf', label: 'PDF', status }), ' ', status),
		h('p', { class: 'note', text: 'The report of a month by ' + (ctx.aggregate || 'team') +
			' as finance files it: per-owner GPU-hours and cost, the fleet, failed-job waste, energy, queue waits, top jobs and the reconciliation. A month not over yet is month to date.' }),
		holder,
	];
}
