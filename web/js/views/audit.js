// Audit (admin): the events of the window, filtered by actor, action and
// outcome as /v1/audit filters them, a page of 100 at a time ("Older
// entries" follows next_cursor), and the hash chain's verification. The
// newest 100 rows alone were mostly the dashboard's own page requests: an
// auditor asking who created which token could not reach them.
import { h, table } from '../ui.js';
import * as f from '../fmt.js';
import * as api from '../api.js';

// kept across visits of the view, like the window
const filt = { actor: '', action: '', outcome: '' };
// the actions gpuledger writes (a suggestion list; any text is sent as typed)
const ACTIONS = ['http.request', 'ingest.run', 'costing.load', 'token.create', 'token.revoke', 'report.generate',
	'budget.alert', 'db.redact', 'hook.run', 'hook.candidate', 'hook.spared', 'hook.no_data', 'hook.record'];

function verifier() {
	const result = h('p', { id: 'verify-result', role: 'status' });
	const btn = h('button', {
		type: 'button', id: 'verify', class: 'primary',
		onclick: async () => {
			btn.disabled = true;
			result.className = '';
			result.textContent = 'Verifying…';
			try {
				const v = await api.get('/v1/audit/verify');
				result.className = v.ok ? 'ok' : 'bad';
				result.textContent = v.ok
					? 'Chain intact: ' + v.rows + ' rows, seq ' + v.first_seq + '–' + v.last_seq + ', head ' + String(v.head_hash).slice(0, 16) + '…'
					: 'Chain BROKEN at seq ' + v.bad_seq + ': ' + v.reason;
			} catch (e) {
				result.className = 'bad';
				result.textContent = 'Verification failed: ' + e.message;
			} finally {
				btn.disabled = false;
			}
		},
	}, 'Verify the chain');
	return h('div', { class: 'card' }, h('h2', { text: 'Hash chain' }), btn, result);
}

export async function render(ctx) {
	const params = () => {
		const p = { window: ctx.window, limit: 100 };
		for (const k of ['actor', 'action', 'outcome']) if (filt[k]) p[k] = filt[k];
		return p;
	};
	let d = await ctx.get('/v1/audit', params());
	let rows = d.entries, next = d.next_cursor;
	const box = h('div', { id: 'audit-events' });
	const status = h('p', { id: 'audit-status', class: 'note', role: 'status' });
	const older = h('button', {
		type: 'button', id: 'audit-older',
		onclick: async () => {
			older.disabled = true;
			try {
				d = await api.get('/v1/audit', { ...params(), cursor: next });
				rows = rows.concat(d.entries);
				next = d.next_cursor;
				draw();
			} catch (e) {
				status.textContent = 'Loading older entries failed: ' + e.message;
			} finally {
				older.disabled = false;
			}
		},
	}, 'Older entries');
	function draw() {
		box.replaceChildren(table({
			id: 'audit-table', title: 'Events', sortKey: 'seq',
			cols: [
				{ key: 'seq', label: 'Seq', num: true }, { key: 'at', label: 'At', fmt: (r) => f.time(r.at) },
				{ key: 'actor', label: 'Actor', fmt: actorText }, { key: 'source_addr', label: 'From', fmt: (r) => r.source_addr || '—' },
				{ key: 'action', label: 'Action' }, { key: 'object', label: 'Object', fmt: objectText }, { key: 'outcome', label: 'Outcome' },
				{ key: 'detail', label: 'Detail', fmt: (r) => detailText(r.detail) },
			],
			wrap: true,
			rows,
			// the CSV is the first page under the same filters
			csv: { path: '/v1/audit', params: params() },
		}), ...(next ? [older] : []));
		status.textContent = rows.length + (next ? ' newest entries shown; older ones follow' : ' entries: all in this window');
	}
	const input = (id, label, value, attrs = {}) => [h('label', { for: id, text: label + ' ' }),
		h('input', { id, value, ...attrs })];
	const outcome = h('select', { id: 'audit-outcome' },
		...['', 'ok', 'denied', 'error'].map((o) => h('option', { value: o, text: o || 'any' })));
	outcome.value = filt.outcome;
	const form = h('form', {
		class: 'filter', id: 'audit-filter',
		onsubmit: async (ev) => {
			ev.preventDefault();
			filt.actor = form.querySelector('#audit-actor').value.trim();
			filt.action = form.querySelector('#audit-action').value.trim();
			filt.outcome = outcome.value;
			status.textContent = 'Loading…';
			try {
				d = await api.get('/v1/audit', params());
				rows = d.entries;
				next = d.next_cursor;
				draw();
			} catch (e) {
				status.textContent = 'Filter failed: ' + e.message;
			}
		},
	},
	...input('audit-actor', 'Actor', filt.actor, { type: 'search', placeholder: 'token:3, cli:root, system…' }), ' ',
	...input('audit-action', 'Action', filt.action, { type: 'search', list: 'audit-actions', placeholder: 'token.create…' }), ' ',
	h('datalist', { id: 'audit-actions' }, ...ACTIONS.map((a) => h('option', { value: a }))),
	h('label', { for: 'audit-outcome', text: 'Outcome ' }), outcome, ' ',
	h('button', { type: 'submit' }, 'Apply'));
	draw();
	return [verifier(), form, status, box];
}

// "finance-bob (token:7)": the name the request's audit row carries
function actorText(r) {
	const name = r.detail && typeof r.detail.token === 'string' ? r.detail.token : null;
	return name ? name + ' (' + r.actor + ')' : r.actor;
}

// the path with the query string the request was made with
function objectText(r) {
	const q = r.detail && typeof r.detail.query === 'string' ? r.detail.query : '';
	return (r.object || '') + (q ? '?' + q : '');
}

// a nested value as text: lists comma-joined, objects "key value, ..."
function words(v) {
	if (v === null || v === undefined) return '—';
	if (Array.isArray(v)) return v.map(words).join(', ') || '—';
	if (typeof v === 'object') return Object.entries(v).map(([k, x]) => k.replace(/_/g, ' ') + ' ' + words(x)).join(', ');
	return String(v);
}

// "GET · chargeback · 200 · 12.3 ms": the detail as words, keys the
// columns already show left out; other keys as "key: value"
const SHOWN = ['token', 'query'];
export function detailText(d) {
	if (!d || typeof d !== 'object') return d == null ? '' : String(d);
	const parts = [];
	if (d.method) parts.push(d.method);
	if (d.route) parts.push('route ' + d.route);
	if (d.status !== undefined) parts.push('status ' + d.status);
	if (d.reason) parts.push(String(d.reason).replace(/_/g, ' '));
	if (d.ms !== undefined) parts.push(Number(d.ms).toFixed(1) + ' ms');
	for (const [k, v] of Object.entries(d)) {
		if (['method', 'route', 'status', 'reason', 'ms', ...SHOWN].includes(k)) continue;
		parts.push(k.replace(/_/g, ' ') + ': ' + words(v));
	}
	return parts.join(' · ');
}
