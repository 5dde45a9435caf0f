// Audit (admin): recent events and the hash chain's verification.
import { h, table } from '../ui.js';
import * as f from '../fmt.js';
import * as api from '../api.js';

export async function render(ctx) {
	const d = await ctx.get('/v1/audit', { limit: 100 });
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
					: 'Chain BROKEN: ' + (v.error || v.message || JSON.stringify(v));
			} catch (e) {
				result.className = 'bad';
				result.textContent = 'Verification failed: ' + e.message;
			} finally {
				btn.disabled = false;
			}
		},
	}, 'Verify the chain');
	return [
		h('div', { class: 'card' }, h('h2', { text: 'Hash chain' }), btn, result),
		table({
			id: 'audit-table', title: 'Recent events', sortKey: 'seq',
			cols: [
				{ key: 'seq', label: 'Seq', num: true }, { key: 'at', label: 'At', fmt: (r) => f.time(r.at) },
				{ key: 'actor', label: 'Actor' }, { key: 'source_addr', label: 'From', fmt: (r) => r.source_addr || '—' },
				{ key: 'action', label: 'Action' }, { key: 'object', label: 'Object' }, { key: 'outcome', label: 'Outcome' },
				{ key: 'detail', label: 'Detail', fmt: (r) => (r.detail ? JSON.stringify(r.detail).slice(0, 120) : '') },
			],
			rows: d.entries,
			csv: { path: '/v1/audit', params: { limit: 100 } },
		}),
	];
}
