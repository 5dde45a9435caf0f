// The dashboard shell: sign-in, navigation (hash routes), the window and
// aggregation pickers, and loading each view's module on first use.
import * as api from './api.js';
import { setCurrency } from './fmt.js';
import { h, loading, failure } from './ui.js';

const OWNER_DIMS = ['team', 'project', 'cost_center', 'user', 'account', 'cluster', 'partition', 'qos', 'namespace', 'gpu_model', 'workload_type'];
const RANK = { viewer: 1, finance: 2, admin: 3 };
// the window picker's choices: the API's own window names, and custom days
const WINDOWS = ['today', 'yesterday', 'week', 'lastweek', 'month', 'lastmonth', 'custom'];

// roles: who sees the view; scoped: whether an owner-scoped token can (the
// server refuses scoped tokens on routes that do not filter by owner).
const VIEWS = [
	{ id: 'fleet', title: 'Fleet', min: 'viewer', aggs: ['cluster', 'gpu_model', 'partition'] },
	{ id: 'chargeback', title: 'Chargeback', min: 'finance', aggs: OWNER_DIMS, scoped: true },
	{ id: 'waste', title: 'Waste', min: 'finance', aggs: OWNER_DIMS },
	{ id: 'inference', title: 'Inference', min: 'finance', aggs: ['model_name', 'endpoint', 'team', 'project', 'cost_center', 'namespace', 'cluster', 'gpu_model'], scoped: true },
	{ id: 'queue', title: 'Queue', min: 'viewer', aggs: ['partition', 'workload_type', ...OWNER_DIMS.filter((d) => d !== 'partition' && d !== 'workload_type'), 'gpus'], scoped: true },
	{ id: 'forecast', title: 'Forecast', min: 'viewer', aggs: ['team', 'project', 'cluster', 'gpu_model', 'user'], noWindow: true, scoped: true },
	{ id: 'inventory', title: 'Inventory', min: 'viewer', aggs: null, noWindow: true },
	{ id: 'jobs', title: 'Jobs', min: 'finance', aggs: null, scoped: true },
	{ id: 'reports', title: 'Reports', min: 'finance', aggs: ['team', 'project', 'cost_center', 'account', 'user', 'workload_type'], noWindow: true },
	{ id: 'audit', title: 'Audit', min: 'admin', aggs: null },
	{ id: 'hook', title: 'Idle hook', min: 'admin', alsoHook: true, aggs: null, noWindow: true },
];

const state = { who: null, view: null, window: 'month', from: '', to: '', month: '', aggregate: {}, abort: null };
const $ = (id) => document.getElementById(id);

function allowed(v, who) {
	if (!who) return false;
	if (who.owners && who.owners.length && !v.scoped) return false;
	if (who.role === 'hook') return !!v.alsoHook;
	return (RANK[who.role] || 0) >= RANK[v.min];
}

function visibleViews() { return VIEWS.filter((v) => allowed(v, state.who)); }

// per-user and per-account figures are finance's (the server answers a
// viewer's aggregate=user with 403): a viewer is not offered them
const PERSONAL_DIMS = ['user', 'account'];
function aggsFor(v) {
	if (!v.aggs) return null;
	if ((RANK[state.who?.role] || 0) >= RANK.finance) return v.aggs;
	return v.aggs.filter((a) => !PERSONAL_DIMS.includes(a));
}

function banner(text) {
	const b = $('banner');
	b.textContent = text || '';
	b.hidden = !text;
}

// A window past some source's data: said above the view, not in a
// footnote, since its figures leave that time out (it was not observed)
function dataBanner(d) {
	const b = $('data-banner');
	if (!d || !d.window_past_data_through) { b.hidden = true; b.textContent = ''; return; }
	const when = (t) => t.replace('T', ' ').replace(/:00Z$/, ' UTC').replace(/Z$/, ' UTC');
	const srcs = d.past_data_through.map((x) => x.cluster + ' ' + x.source + ' (' + x.data + ') through ' + when(x.through));
	b.textContent = 'This window reaches past the data: ' + srcs.join('; ') +
		'. Time after that was not observed and is not in these figures.';
	b.hidden = false;
}

function theme(t) {
	document.documentElement.dataset.theme = t;
	localStorage.setItem('gpuledger.theme', t);
	const b = $('theme');
	b.textContent = t === 'dark' ? 'Light' : 'Dark';
	b.setAttribute('aria-pressed', String(t === 'dark'));
	b.setAttribute('aria-label', t === 'dark' ? 'Switch to light theme' : 'Switch to dark theme');
}

// the API's window parameter for the picker's state
export function windowParam() {
	if (state.window !== 'custom') return state.window;
	if (!state.from || !state.to) return 'month';
	const end = new Date(state.to + 'T00:00:00Z');
	end.setUTCDate(end.getUTCDate() + 1); // the "to" day is included
	return state.from + 'T00:00:00Z,' + end.toISOString().replace('.000Z', 'Z');
}

function readHash() {
	const [path, qs] = location.hash.replace(/^#\/?/, '').split('?');
	const q = new URLSearchParams(qs || '');
	return { view: path || null, w: q.get('w'), a: q.get('a'), from: q.get('from'), to: q.get('to'), m: q.get('m') };
}

function writeHash() {
	const q = new URLSearchParams();
	q.set('w', state.window);
	if (state.window === 'custom') { q.set('from', state.from); q.set('to', state.to); }
	const a = state.aggregate[state.view];
	if (a) q.set('a', a);
	// the report month a finance link names (#/reports?m=2026-11)
	if (state.view === 'reports' && state.month) q.set('m', state.month);
	const want = '#/' + state.view + '?' + q.toString();
	if (location.hash !== want) history.replaceState(null, '', want);
}

function showSignin(msg) {
	if (state.abort) state.abort.abort();
	state.who = null;
	$('shell').hidden = true;
	$('signin').hidden = false;
	$('signin-error').textContent = msg || '';
	$('token').value = '';
	$('token').focus();
}

async function signin(tok) {
	const who = await api.get('/v1/whoami', null, { tok });
	api.setToken(tok);
	state.who = who;
	setCurrency(who.currency, who.currency_minor_units);
	$('signin').hidden = true;
	$('shell').hidden = false;
	$('who').textContent = who.name + ' (' + who.role + (who.owners.length ? ', scope ' + who.owners.join(', ') : '') + ')';
	buildNav();
	route();
}

function buildNav() {
	$('nav').replaceChildren(...visibleViews().map((v) => h('li', {}, h('a', { href: '#/' + v.id, 'data-view': v.id, text: v.title }))));
}

function syncControls(v) {
	$('window').value = state.window;
	$('custom').hidden = state.window !== 'custom';
	$('window').disabled = !!v.noWindow;
	$('from').value = state.from;
	$('to').value = state.to;
	const sel = $('aggregate');
	const aggs = aggsFor(v);
	if (aggs) {
		const cur = state.aggregate[v.id] || aggs[0];
		state.aggregate[v.id] = cur;
		sel.replaceChildren(...aggs.map((a) => h('option', { value: a, text: a.replace('_', ' ') })));
		sel.value = cur;
		sel.disabled = false;
	} else {
		sel.replaceChildren(h('option', { value: '', text: '—' }));
		sel.disabled = true;
	}
}

const modules = {};

async function route() {
	if (!state.who) return;
	const hs = readHash();
	const views = visibleViews();
	if (!views.length) {
		$('view-title').textContent = 'Nothing to show';
		$('view').replaceChildren(h('p', { text: 'This token reaches no dashboard view.' }));
		return;
	}
	const v = views.find((x) => x.id === hs.view) || views[0];
	// the API's presets; "7d" is what links made before "week" said
	if (hs.w && WINDOWS.includes(hs.w)) state.window = hs.w;
	if (hs.w === '7d') state.window = 'week';
	if (hs.from) state.from = hs.from;
	if (hs.to) state.to = hs.to;
	if (hs.m && /^[0-9]{4}-(0[1-9]|1[0-2])$/.test(hs.m)) state.month = hs.m;
	if (hs.a && aggsFor(v)?.includes(hs.a)) state.aggregate[v.id] = hs.a;
	// focus follows a change of view, not the first one (so the first Tab
	// of a fresh page lands on the skip link)
	const changedView = state.view !== null && state.view !== v.id;
	state.view = v.id;
	for (const a of $('nav').querySelectorAll('a')) {
		if (a.dataset.view === v.id) a.setAttribute('aria-current', 'page');
		else a.removeAttribute('aria-current');
	}
	syncControls(v);
	writeHash();
	document.title = v.title + ' · gpuledger';
	$('view-title').textContent = v.title;
	await render(v, changedView);
}

async function render(v, focus) {
	if (state.abort) state.abort.abort();
	const ctl = new AbortController();
	state.abort = ctl;
	const el = h('div', { class: 'view-body', 'data-view': v.id, 'aria-busy': 'true' }, loading());
	$('view').replaceChildren(el);
	dataBanner(null);
	state.dataSeen = ctl;
	if (focus) $('main').focus({ preventScroll: true });
	const ctx = {
		el, who: state.who, window: windowParam(), aggregate: state.aggregate[v.id], signal: ctl.signal,
		month: state.month, setMonth: (m) => { state.month = m; writeHash(); },
		get: (path, params) => api.get(path, params, { signal: ctl.signal }),
	};
	try {
		modules[v.id] ||= await import('./views/' + v.id + '.js');
		const body = await modules[v.id].render(ctx);
		if (ctl.signal.aborted) return;
		el.replaceChildren(...[body].flat().filter((x) => x !== null && x !== undefined && x !== false));
		if (modules[v.id].after) modules[v.id].after(ctx);
	} catch (e) {
		if (e.name === 'AbortError' || ctl.signal.aborted) return;
		if (e.status === 401) return;
		el.replaceChildren(failure(e));
	} finally {
		if (!ctl.signal.aborted) {
			el.setAttribute('aria-busy', 'false');
			el.dataset.ready = '1';
		}
	}
}

function init() {
	theme(localStorage.getItem('gpuledger.theme') || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'));
	$('theme').addEventListener('click', () => theme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark'));
	api.on('unauthorized', (msg) => { api.clearToken(); showSignin('Signed out: ' + msg); });
	api.on('down', (e) => banner('The API does not answer: ' + e.message + '. Showing what was loaded; retrying on the next action.'));
	api.on('up', () => banner(''));
	// the first answer of the view under way that reaches past the data names it
	api.on('data', (d) => {
		if (state.dataSeen !== state.abort || !d.window_past_data_through || !$('data-banner').hidden) return;
		dataBanner(d);
	});
	$('signin-form').addEventListener('submit', async (ev) => {
		ev.preventDefault();
		const tok = $('token').value.trim();
		$('signin-error').textContent = '';
		try {
			await signin(tok);
		} catch (e) {
			$('signin-error').textContent = e.status === 401 ? 'That token is not valid: ' + e.message : e.message;
		}
	});
	$('signout').addEventListener('click', () => { api.clearToken(); showSignin(''); });
	$('window').addEventListener('change', () => {
		state.window = $('window').value;
		$('custom').hidden = state.window !== 'custom';
		if (state.window === 'custom') {
			if (!state.from || !state.to) {
				const now = new Date();
				state.to = now.toISOString().slice(0, 10);
				state.from = new Date(now.getTime() - 29 * 86400e3).toISOString().slice(0, 10);
			}
			$('from').value = state.from;
			$('to').value = state.to;
		}
		writeHash();
		route();
	});
	for (const id of ['from', 'to']) $(id).addEventListener('change', () => {
		state.from = $('from').value;
		state.to = $('to').value;
		if (state.from && state.to && state.from <= state.to) { writeHash(); route(); }
	});
	$('aggregate').addEventListener('change', () => { state.aggregate[state.view] = $('aggregate').value; writeHash(); route(); });
	window.addEventListener('hashchange', route);
	const tok = api.token();
	if (tok) signin(tok).catch((e) => showSignin(e.status === 401 ? 'Signed out: ' + e.message : e.message));
	else showSignin('');
}

init();
