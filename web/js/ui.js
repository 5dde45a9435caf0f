// DOM helpers: elements are built with createElement and textContent only
// (no innerHTML), and styles set through the CSSOM, which the page's
// Content-Security-Policy allows.
import { download, ApiError } from './api.js';

export function h(tag, attrs = {}, ...children) {
	const el = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === undefined || v === null || v === false) continue;
		if (k === 'class') el.className = v;
		else if (k === 'text') el.textContent = v;
		else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
		else el.setAttribute(k, v === true ? '' : v);
	}
	for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
	return el;
}

export function stat(label, value, extra) {
	return h('div', { class: 'stat' }, h('div', { class: 'label', text: label }), h('div', { class: 'value', text: value }),
		extra ? h('div', { class: 'note', text: extra }) : null);
}

export function loading() {
	return h('p', { class: 'loading', role: 'status', text: 'Loading…' });
}

// The answer for a failed fetch inside a view.
export function failure(e) {
	if (e instanceof ApiError && e.status === 404)
		return h('div', { class: 'unavailable', 'data-state': 'unavailable' },
			h('p', { text: 'Not available on this server (the endpoint does not exist in this version).' }));
	if (e instanceof ApiError && e.status === 403)
		return h('div', { class: 'unavailable', 'data-state': 'forbidden' }, h('p', { text: 'Your token may not see this: ' + e.message }));
	return h('div', { class: 'unavailable', 'data-state': 'error' }, h('p', { class: 'error', text: e.message || String(e) }));
}

// A button that downloads path as format (csv, zip, html, pdf) through the
// API with the bearer header and says what it saved in status. params may
// be a function, read at the click (a view's current choice).
export function fileButton({ path, params, format, label, status, what = format.toUpperCase(), asFile = false }) {
	const b = h('button', {
		type: 'button', class: 'csv', 'data-csv': format === 'csv' ? path : null, 'data-format': format,
		onclick: async () => {
			b.disabled = true;
			status.textContent = '';
			try {
				const r = await download(path, typeof params === 'function' ? params() : params, format, asFile);
				status.textContent = 'Saved ' + r.name;
			} catch (e) {
				status.textContent = what + ' failed: ' + e.message;
			} finally {
				b.disabled = false;
			}
		},
	}, label);
	return b;
}

// A CSV button for an API table.
export function csvButton(path, params, label = 'Download CSV') {
	const status = h('span', { class: 'note', role: 'status' });
	return h('span', {}, fileButton({ path, params, format: 'csv', label, status }), ' ', status);
}

// A sortable table. cols: [{key, label, num, fmt(row) -> text, sort(row) -> value,
// node(row) -> element (a control in the cell, instead of text)}]
// rows: data rows; extra: rows appended after sorting (totals, special rows)
// as {cells:[text...], class}.
// empty: what an empty table says (views without a window say their own)
// wrap: long text cells wrap instead of widening the table past the page
export function table({ id, title, caption, cols, rows, extra = [], csv, sortKey, sortDir = 'desc', empty = 'No rows in this window.', wrap = false }) {
	let key = sortKey, dir = sortDir;
	const tbody = h('tbody');
	const heads = cols.map((c) => {
		const th = h('th', { scope: 'col', class: c.num ? 'num' : null });
		th.append(h('button', { type: 'button', onclick: () => { dir = key === c.key && dir === 'desc' ? 'asc' : 'desc'; key = c.key; render(); } }, c.label));
		return th;
	});
	const val = (c, r) => (c.sort ? c.sort(r) : r[c.key]);
	function render() {
		heads.forEach((th, i) => {
			if (cols[i].key === key) th.setAttribute('aria-sort', dir === 'asc' ? 'ascending' : 'descending');
			else th.removeAttribute('aria-sort');
		});
		const c = cols.find((x) => x.key === key);
		const sorted = c ? [...rows].sort((a, b) => {
			const x = val(c, a), y = val(c, b);
			const r = x === y ? 0 : x === null || x === undefined ? -1 : y === null || y === undefined ? 1 : x < y ? -1 : 1;
			return dir === 'asc' ? r : -r;
		}) : rows;
		tbody.replaceChildren(...sorted.map((r) => h('tr', { class: r.__class || null },
			cols.map((cc) => (cc.node ? h('td', {}, cc.node(r)) : h('td', { class: cc.num ? 'num' : null, text: cc.fmt ? cc.fmt(r) : String(r[cc.key] ?? '—') }))))),
		...extra.map((x) => h('tr', { class: x.class || null }, x.cells.map((t, i) => h('td', { class: cols[i] && cols[i].num ? 'num' : null, text: t })))));
	}
	render();
	const t = h('table', { id, class: wrap ? 'wrap' : null }, caption ? h('caption', { text: caption }) : null, h('thead', {}, h('tr', {}, heads)), tbody);
	return h('section', { class: 'table-block', 'aria-label': title },
		h('div', { class: 'table-head' }, h('h2', { text: title }), csv ? csvButton(csv.path, csv.params) : null),
		h('div', { class: 'table-wrap' }, t),
		rows.length || extra.length ? null : h('p', { class: 'note', text: empty }));
}

// The numbers a chart draws, as a table under it (closed by default): for
// screen readers, which get nothing from a canvas, and for reading one step
// exactly. xs are unix seconds; a null value is shown as a dash.
export function chartTable(id, xs, series, fmt) {
	if (!xs.length) return null;
	return h('details', { id, class: 'chart-data' },
		h('summary', { text: 'The chart as a table' }),
		h('div', { class: 'table-wrap' }, h('table', {},
			h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Start (UTC)' }),
				...series.map((s) => h('th', { scope: 'col', class: 'num', text: s.name })))),
			h('tbody', {}, ...xs.map((t, i) => h('tr', {},
				h('td', { text: new Date(t * 1000).toISOString().replace('.000Z', 'Z') }),
				...series.map((s) => h('td', { class: 'num', text: s.values[i] === null || s.values[i] === undefined ? '—' : fmt(s.values[i]) }))))))));
}

// Horizontal stacked bars: items [{label, parts:[number...], text}], parts
// coloured s1..s8 in order.
export function bars(items, legendNames) {
	const max = Math.max(1e-9, ...items.map((i) => i.parts.reduce((a, b) => a + Math.max(0, b), 0)));
	const rows = items.map((i) => {
		const track = h('div', { class: 'bar-track', 'aria-hidden': 'true' });
		i.parts.forEach((p, k) => {
			const seg = h('div', { class: 'bar-seg s' + (k + 1) });
			seg.style.width = (100 * Math.max(0, p) / max).toFixed(3) + '%';
			track.append(seg);
		});
		return h('div', { class: 'bar-row' }, h('div', { class: 'bar-label', title: i.label, text: i.label }), track,
			h('div', { class: 'bar-val', text: i.text }));
	});
	return h('div', {}, legendNames ? legend(legendNames) : null, h('div', { class: 'bars', role: 'list' }, rows.map((r) => { r.setAttribute('role', 'listitem'); return r; })));
}

export function legend(names) {
	return h('div', { class: 'legend' }, names.map((n, k) => h('span', {}, h('span', { class: 'swatch s' + (k + 1), 'aria-hidden': 'true' }), n)));
}
