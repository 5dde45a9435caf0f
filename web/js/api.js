// The API client: the token lives in sessionStorage (this tab only) and goes
// out as a bearer header, never in a URL or a cookie.
const KEY = 'gpuledger.token';

export class ApiError extends Error {
	constructor(status, message, param) {
		super(message);
		this.status = status;
		this.param = param;
	}
}

const listeners = { unauthorized: [], down: [], up: [], data: [] };
export function on(event, fn) { listeners[event].push(fn); }
function emit(event, arg) { for (const fn of listeners[event]) fn(arg); }

export function token() { return sessionStorage.getItem(KEY); }
export function setToken(t) { sessionStorage.setItem(KEY, t); }
export function clearToken() { sessionStorage.removeItem(KEY); }

export function query(params) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
	const s = q.toString();
	return s ? '?' + s : '';
}

async function request(path, params, { tok = token(), signal } = {}) {
	let res;
	try {
		res = await fetch(path + query(params || {}), {
			headers: { Authorization: 'Bearer ' + tok },
			cache: 'no-store',
			credentials: 'omit',
			signal,
		});
	} catch (e) {
		if (e.name === 'AbortError') throw e;
		emit('down', e);
		throw new ApiError(0, 'The API does not answer (' + e.message + ')');
	}
	emit('up');
	if (!res.ok) {
		let msg = res.statusText, param;
		try {
			const j = await res.json();
			if (j && j.error) { msg = j.error.message; param = j.error.param; }
		} catch { /* not JSON */ }
		if (res.status === 401) emit('unauthorized', msg);
		if (res.status >= 500) emit('down', new Error(msg));
		throw new ApiError(res.status, msg, param);
	}
	return res;
}

// every accounting answer says how far each source's data reaches and
// whether the window goes past it (docs/ingest.md, "Observed time")
export async function get(path, params, opts) {
	const res = await request(path, params, opts);
	const j = await res.json();
	if (j && typeof j.window_past_data_through === 'boolean') emit('data', j);
	return j;
}

// A file through the API's format= (csv, zip, html, pdf), or a stored one, fetched with the
// header, then handed to the browser as a blob: the token never appears in
// a link.
// asFile: the path is a file already (GET /v1/reports/{id}), no format= is sent
export async function download(path, params, format, asFile = false) {
	const res = await request(path, asFile ? params : { ...params, format });
	const blob = await res.blob();
	const cd = res.headers.get('Content-Disposition') || '';
	const m = /filename="?([^";]+)"?/.exec(cd);
	const name = m ? m[1] : path.replace(/^\/v1\//, '').replace(/\//g, '_') + '.' + format;
	const url = URL.createObjectURL(blob);
	const a = document.createElement('a');
	a.href = url;
	a.download = name;
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(url), 1000);
	return { name, size: blob.size };
}
