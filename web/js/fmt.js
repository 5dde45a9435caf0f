// Number formatting with units. Money arrives as integer micro-units: it is
// turned into cents with integer arithmetic (BigInt), never through floats,
// so a displayed total is the API's to the cent.
const nf1 = new Intl.NumberFormat('en', { maximumFractionDigits: 1, minimumFractionDigits: 1 });
const nf0 = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });
const sig2 = new Intl.NumberFormat('en', { maximumSignificantDigits: 2 });
const pct = new Intl.NumberFormat('en', { style: 'percent', maximumFractionDigits: 1 });

export function gpuHours(seconds) {
	if (seconds === null || seconds === undefined) return '—';
	const h = seconds / 3600;
	// under 0.1 GPU-h, two significant digits: a one-minute job priced at
	// 0.03 showed "0.0 GPU-h", as if it had used nothing
	const a = Math.abs(h);
	return (a >= 1000 ? nf0.format(h) : a >= 0.1 || h === 0 ? nf1.format(h) : sig2.format(h)) + ' GPU-h';
}

export function hours(seconds) {
	return seconds === null || seconds === undefined ? null : seconds / 3600;
}

// The reporting currency (GET /v1/whoami says it at sign-in): the default of
// money(), for views whose answers do not name it; with its ISO 4217 minor
// units as the server writes them (whoami's currency_minor_units).
let reporting = 'USD';
let reportingMinor = null;
export function setCurrency(code, minor) {
	if (typeof code !== 'string' || !/^[A-Z]{3}$/.test(code)) return;
	reporting = code;
	reportingMinor = Number.isInteger(minor) && minor >= 0 && minor <= 6 ? minor : null;
}

// ISO 4217 minor units (JPY 0, USD 2, BHD 3), as the API writes money. The
// server's number for the reporting currency: Intl's are CLDR's display
// digits, which differ from ISO 4217 for some (HUF, IDR, PKR: 0 there, 2
// in the API's answers; IQD 0 for 3). Intl only for another currency.
function minorUnits(currency) {
	if (currency === reporting && reportingMinor !== null) return reportingMinor;
	try {
		return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits;
	} catch (e) {
		return 2;
	}
}

// micro-units -> "1,234.57 USD" ("1,235 JPY"), half away from zero like the
// API's CSV, with the currency's minor units
export function money(micros, currency = reporting) {
	if (micros === null || micros === undefined) return '—';
	let m = BigInt(Math.round(Number(micros)));
	const neg = m < 0n;
	if (neg) m = -m;
	const minor = minorUnits(currency);
	const unit = 10n ** BigInt(6 - minor);
	const units = (m + unit / 2n) / unit;
	const scale = 10n ** BigInt(minor);
	const whole = units / scale, frac = units % scale;
	const w = whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	return (neg ? '-' : '') + w + (minor ? '.' + frac.toString().padStart(minor, '0') : '') + ' ' + currency;
}

// a decimal string from the API ("4910.51") with thousands separators
export function decimal(s, currency = reporting) {
	if (s === null || s === undefined) return '—';
	const [w, f] = String(s).split('.');
	const neg = w.startsWith('-');
	const ww = (neg ? w.slice(1) : w).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	return (neg ? '-' : '') + ww + (f !== undefined ? '.' + f : '') + ' ' + currency;
}

export function duration(s) {
	if (s === null || s === undefined) return '—';
	if (s < 120) return nf0.format(s) + ' s';
	if (s < 7200) return nf1.format(s / 60) + ' min';
	if (s < 172800) return nf1.format(s / 3600) + ' h';
	return nf1.format(s / 86400) + ' d';
}

export function percent(x) {
	return x === null || x === undefined || Number.isNaN(x) ? '—' : pct.format(x);
}

// Axis tick labels: as many decimals as the spacing between ticks needs, so
// ticks 0.1 apart on a small series read 0.1, 0.2… instead of 0, 0, 0.
export function ticks(vals, incr) {
	let d = 0; // the fewest decimals that write the spacing exactly (0.25 needs 2)
	while (incr > 0 && d < 6 && Math.abs(incr * 10 ** d - Math.round(incr * 10 ** d)) > 1e-6 * incr * 10 ** d) d++;
	const nf = new Intl.NumberFormat('en', { minimumFractionDigits: d, maximumFractionDigits: d });
	return vals.map((v) => (v === null || v === undefined ? '' : nf.format(v)));
}

export function number(x, digits = 0) {
	if (x === null || x === undefined) return '—';
	return new Intl.NumberFormat('en', { maximumFractionDigits: digits }).format(x);
}

export function time(iso) {
	if (!iso) return '—';
	return iso.replace('T', ' ').replace(/:00Z$|Z$/, ' UTC').replace(/ UTC UTC$/, ' UTC');
}
