// Time-series charts with uPlot (vendored, MIT). Colours come from the CSS
// palette so light/dark and the colour-blind-safe set apply to charts too.
import uPlot from '../vendor/uplot/uPlot.esm.js';
import { h } from './ui.js';
import { ticks } from './fmt.js';

export function colour(k) {
	return getComputedStyle(document.documentElement).getPropertyValue('--c' + (k + 1)).trim() || '#888';
}
function fg() { return getComputedStyle(document.documentElement).getPropertyValue('--fg').trim() || '#000'; }
function line() { return getComputedStyle(document.documentElement).getPropertyValue('--line').trim() || '#ccc'; }
function alpha(hex, a) {
	const m = /^#([0-9a-f]{6})$/i.exec(hex);
	if (!m) return hex;
	const n = parseInt(m[1], 16);
	return `rgba(${n >> 16},${(n >> 8) & 255},${n & 255},${a})`;
}

function axes(yLabel) {
	const stroke = fg(), grid = { stroke: line(), width: 1 };
	return [
		{ stroke, grid, ticks: grid },
		{ stroke, grid, ticks: grid, label: yLabel, size: 70, values: (u, vals, ax, space, incr) => ticks(vals, incr) },
	];
}

function mount(container, opts, data, label) {
	const box = h('div', { class: 'chart', role: 'img', 'aria-label': label });
	container.append(box);
	const width = Math.max(300, container.clientWidth || 600);
	// times are UTC everywhere in gpuledger, the axes too
	const u = new uPlot({ width, height: 300, tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'), ...opts }, data, box);
	const ro = new ResizeObserver(() => {
		const w = Math.max(300, container.clientWidth);
		if (Math.abs(w - u.width) > 4) u.setSize({ width: w, height: 300 });
	});
	ro.observe(container);
	return u;
}

// Stacked area: xs (unix seconds), series [{name, values[]}], bottom first.
export function stackedArea(container, { xs, series, yLabel, yFmt, label }) {
	const cum = [];
	let acc = xs.map(() => 0);
	for (const s of series) {
		acc = acc.map((a, i) => a + (s.values[i] || 0));
		cum.push(acc);
	}
	// drawn top first, so each lower area paints over the one above: what
	// shows of each is its own band
	const order = series.map((_, i) => i).reverse();
	const data = [xs, ...order.map((i) => cum[i])];
	const useries = [{}, ...order.map((i) => ({
		label: series[i].name,
		stroke: colour(i),
		fill: alpha(colour(i), 0.85),
		width: 1,
		value: (u, v, si, di) => (di === null || di === undefined ? '—' : (yFmt || String)(series[i].values[di] || 0)),
	}))];
	return mount(container, { series: useries, axes: axes(yLabel), scales: { x: { time: true } } }, data, label);
}

// Lines: series [{name, values[]}] over xs.
export function lines(container, { xs, series, yLabel, yFmt, label, bands }) {
	const useries = [{}, ...series.map((s, i) => ({
		label: s.name,
		stroke: s.colour || colour(s.colourIndex ?? i),
		width: s.width ?? 2,
		dash: s.dash,
		fill: s.fill,
		// a step line (capacity): a value holds until the next one
		paths: s.step ? uPlot.paths.stepped({ align: 1 }) : undefined,
		points: { show: !s.step && xs.length < 60 },
		value: (u, v) => (v === null || v === undefined ? '—' : (yFmt || String)(v)),
	}))];
	const data = [xs, ...series.map((s) => s.values)];
	return mount(container, { series: useries, bands, axes: axes(yLabel), scales: { x: { time: true } } }, data, label);
}

export { alpha };
