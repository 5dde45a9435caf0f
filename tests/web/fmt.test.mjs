// The dashboard's money formatting (web/js/fmt.js) under node, no browser:
// micro-units shown with the reporting currency's ISO 4217 minor units,
// half away from zero as the API's CSV writes them, and the currency the
// server names at sign-in (GET /v1/whoami) as the default for views whose
// answers do not name it (Jobs, Waste, Idle hook). A JPY deployment used to
// see "1,535.77 USD" there. Prints TAP ok / not ok lines (tests/web/run.sh).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// fmt.js imports nothing: loaded as a data: module (web/ has no package.json)
const src = fs.readFileSync(path.join(ROOT, 'web/js/fmt.js'), 'utf8');
const f = await import('data:text/javascript,' + encodeURIComponent(src));

let n = 0, failed = 0;
function eq(got, want, name) {
	n++;
	if (got === want) console.log(`ok ${n} - ${name}`);
	else {
		failed++;
		console.log(`not ok ${n} - ${name}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
	}
}

// axis ticks: the decimals the spacing needs (a series of 0.1 GPU-h had
// every tick labelled 0)
eq(f.ticks([0, 0.02, 0.04, 0.06], 0.02).join(' '), '0.00 0.02 0.04 0.06', 'ticks 0.02 apart: two decimals');
eq(f.ticks([0, 0.25, 0.5], 0.25).join(' '), '0.00 0.25 0.50', 'ticks 0.25 apart: two decimals, not 0.3');
eq(f.ticks([1.4, 1.5, 1.6], 0.1).join(' '), '1.4 1.5 1.6', 'ticks 0.1 apart: one decimal');
eq(f.ticks([0, 5000, 10000], 5000).join(' '), '0 5,000 10,000', 'ticks 5000 apart: none, grouped');
eq(f.ticks([0, 2.5, 5], 2.5).join(' '), '0.0 2.5 5.0', 'ticks 2.5 apart: one decimal');

// GPU-hours: a one-minute job is not "0.0 GPU-h"
eq(f.gpuHours(60), '0.017 GPU-h', 'one GPU-minute: two significant digits');
eq(f.gpuHours(0), '0.0 GPU-h', 'zero stays 0.0');
eq(f.gpuHours(1008), '0.3 GPU-h', 'from 0.1 GPU-h: one decimal');
eq(f.gpuHours(3600 * 1234.4), '1,234 GPU-h', 'large: no decimals');

eq(f.money(1234567890, 'USD'), '1,234.57 USD', 'USD: two decimals, half up');
eq(f.money(6937000, 'USD'), '6.94 USD', 'USD: 6.937 rounds up');
eq(f.money(1535770833, 'JPY'), '1,536 JPY', 'JPY: no decimals');
eq(f.money(1535499999, 'JPY'), '1,535 JPY', 'JPY: below the half');
eq(f.money(1234567, 'BHD'), '1.235 BHD', 'BHD: three decimals');
eq(f.money(null, 'JPY'), '—', 'unknown stays unknown');
eq(f.money(2500000), '2.50 USD', 'default before sign-in: USD');
f.setCurrency('JPY');
eq(f.money(1535770833), '1,536 JPY', 'default after sign-in: the reporting currency');
eq(f.decimal('1536'), '1,536 JPY', 'decimal strings too');
f.setCurrency('not a code');
eq(f.money(1000000), '1 JPY', 'a bad code is ignored');
// The browser's Intl gives CLDR's display digits, not ISO 4217's: HUF, IDR,
// PKR, COP... have 2 minor units in ISO 4217 (the API's CSV and reports
// write 1234.57 HUF) but 0 in CLDR, and IQD has 3 (CLDR: 0). The server
// says the reporting currency's minor units at sign-in.
f.setCurrency('HUF', 2);
eq(f.money(1234567890), '1,234.57 HUF', 'HUF: the minor units the server says (ISO 4217: 2)');
eq(f.money(1234567890, 'HUF'), '1,234.57 HUF', 'HUF named by an answer: the same');
f.setCurrency('IQD', 3);
eq(f.money(1234567890), '1,234.568 IQD', 'IQD: three decimals (ISO 4217)');
f.setCurrency('USD', 'x');
eq(f.money(1234567890), '1,234.57 USD', 'no minor units said: the currency\'s usual ones');
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
