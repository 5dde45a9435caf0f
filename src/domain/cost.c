/* Exact cost arithmetic (see include/gl/cost.h). */
#include "gl/cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gl_cost_i128_parse(const char *s, gl_cost_i128 *out)
{
	gl_cost_i128 v = 0;
	const char *p = s;
	if (!*p)
		return -GL_EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -GL_EINVAL;
		if (v > ((((gl_cost_i128)1) << 120) / 10))
			return -GL_ERANGE;
		v = v * 10 + (*p - '0');
	}
	*out = v;
	return 0;
}

void gl_cost_i128_format(gl_cost_i128 v, char *buf, size_t n)
{
	char tmp[48], *q = tmp + sizeof tmp;
	int neg = v < 0;
	unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
	*--q = '\0';
	do {
		*--q = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u);
	if (neg)
		*--q = '-';
	snprintf(buf, n, "%s", q);
}

struct rem {
	size_t idx;
	gl_cost_i128 r;
};

static int by_rem_desc(const void *a, const void *b)
{
	const struct rem *x = a, *y = b;
	if (x->r != y->r)
		return x->r < y->r ? 1 : -1;
	/* ties: earlier line first, so the result is deterministic */
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int gl_cost_apportion(const gl_cost_i128 *num, size_t n, int64_t denom, int64_t *out)
{
	gl_cost_i128 total = 0, floors = 0, target;
	struct rem *r;
	if (denom <= 0)
		return -GL_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (num[i] < 0)
			return -GL_EINVAL;
		total += num[i];
	}
	target = (total + denom / 2) / denom;
	r = gl_xcalloc(n ? n : 1, sizeof *r);
	for (size_t i = 0; i < n; i++) {
		out[i] = (int64_t)(num[i] / denom);
		floors += out[i];
		r[i].idx = i;
		r[i].r = num[i] % denom;
	}
	gl_qsort(r, n, sizeof *r, by_rem_desc);
	/* target - floors < n always: each line lost less than one unit */
	for (gl_cost_i128 k = 0; k < target - floors && (size_t)k < n; k++)
		out[r[k].idx]++;
	free(r);
	return 0;
}

int gl_cost_share(int64_t amount, const int64_t *weight, size_t n, int64_t *out)
{
	gl_cost_i128 wsum = 0;
	gl_cost_i128 *num;
	int rc;
	for (size_t i = 0; i < n; i++) {
		out[i] = 0;
		if (weight[i] < 0)
			return -GL_EINVAL;
		wsum += weight[i];
	}
	if (amount < 0)
		return -GL_EINVAL;
	if (wsum == 0)
		return amount == 0 ? 0 : -GL_EINVAL;
	num = gl_xcalloc(n ? n : 1, sizeof *num);
	/* amount x w_i / W, rounded with carry; sums to exactly amount because
	 * sum(num)/W == amount is an integer */
	for (size_t i = 0; i < n; i++)
		num[i] = (gl_cost_i128)amount * weight[i];
	if (wsum > INT64_MAX) {
		free(num);
		return -GL_ERANGE;
	}
	rc = gl_cost_apportion(num, n, (int64_t)wsum, out);
	free(num);
	return rc;
}

int64_t gl_cost_percentile_sorted(const int64_t *v, size_t n, double p)
{
	size_t rank;
	if (n == 0)
		return 0;
	if (p <= 0)
		return v[0];
	if (p >= 100)
		return v[n - 1];
	/* nearest rank: the smallest value with at least p% of values at or below it */
	rank = (size_t)((p / 100.0) * (double)n + 0.999999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

/* ISO 4217 active codes and their minor units (the standard's list; the
 * funds and precious-metal codes without minor units left out), sorted. */
static const char *const iso4217[] = {
	"AED2", "AFN2", "ALL2", "AMD2", "ANG2", "AOA2", "ARS2", "AUD2", "AWG2", "AZN2", "BAM2", "BBD2", "BDT2", "BGN2", "BHD3",
	"BIF0", "BMD2", "BND2", "BOB2", "BOV2", "BRL2", "BSD2", "BTN2", "BWP2", "BYN2", "BZD2", "CAD2", "CDF2", "CHE2", "CHF2",
	"CHW2", "CLF4", "CLP0", "CNY2", "COP2", "COU2", "CRC2", "CUC2", "CUP2", "CVE2", "CZK2", "DJF0", "DKK2", "DOP2", "DZD2",
	"EGP2", "ERN2", "ETB2", "EUR2", "FJD2", "FKP2", "GBP2", "GEL2", "GHS2", "GIP2", "GMD2", "GNF0", "GTQ2", "GYD2", "HKD2",
	"HNL2", "HTG2", "HUF2", "IDR2", "ILS2", "INR2", "IQD3", "IRR2", "ISK0", "JMD2", "JOD3", "JPY0", "KES2", "KGS2", "KHR2",
	"KMF0", "KPW2", "KRW0", "KWD3", "KYD2", "KZT2", "LAK2", "LBP2", "LKR2", "LRD2", "LSL2", "LYD3", "MAD2", "MDL2", "MGA2",
	"MKD2", "MMK2", "MNT2", "MOP2", "MRU2", "MUR2", "MVR2", "MWK2", "MXN2", "MXV2", "MYR2", "MZN2", "NAD2", "NGN2", "NIO2",
	"NOK2", "NPR2", "NZD2", "OMR3", "PAB2", "PEN2", "PGK2", "PHP2", "PKR2", "PLN2", "PYG0", "QAR2", "RON2", "RSD2", "RUB2",
	"RWF0", "SAR2", "SBD2", "SCR2", "SDG2", "SEK2", "SGD2", "SHP2", "SLE2", "SLL2", "SOS2", "SRD2", "SSP2", "STN2", "SVC2",
	"SYP2", "SZL2", "THB2", "TJS2", "TMT2", "TND3", "TOP2", "TRY2", "TTD2", "TWD2", "TZS2", "UAH2", "UGX0", "USD2", "USN2",
	"UYI0", "UYU2", "UYW4", "UZS2", "VED2", "VES2", "VND0", "VUV0", "WST2", "XAF0", "XCD2", "XCG2", "XOF0", "XPF0", "YER2",
	"ZAR2", "ZMW2", "ZWG2", "ZWL2",
};

static int cmp_code(const void *key, const void *elem)
{
	return strncmp(key, *(const char *const *)elem, 3);
}

int gl_cost_minor(const char *code)
{
	const char *const *e;
	if (!code || strlen(code) != 3)
		return -1;
	e = gl_bsearch(code, iso4217, GL_ARRAY_LEN(iso4217), sizeof *iso4217, cmp_code);
	return e ? (*e)[3] - '0' : -1;
}

/* "-q.rrr" (r minor digits, zero-padded; no point when minor is 0) at
 * buf, which has room for 32 bytes. */
static void put_amount(char *buf, int neg, uint64_t q, uint64_t r, int minor)
{
	char t[24];
	size_t k = 0, o = 0;
	if (neg)
		buf[o++] = '-';
	do {
		t[k++] = (char)('0' + q % 10);
		q /= 10;
	} while (q);
	while (k)
		buf[o++] = t[--k];
	if (minor) {
		buf[o++] = '.';
		for (int i = minor - 1; i >= 0; i--) {
			buf[o + (size_t)i] = (char)('0' + r % 10);
			r /= 10;
		}
		o += (size_t)minor;
	}
	buf[o] = '\0';
}

void gl_cost_format(int64_t micros, int minor, char *buf, size_t n)
{
	int64_t scale = 1, unit = 1;
	int neg = micros < 0;
	uint64_t u = neg ? (uint64_t)(-(micros + 1)) + 1 : (uint64_t)micros;
	char t[32];
	size_t len;
	if (minor < 0)
		minor = 0;
	if (minor > 6)
		minor = 6;
	for (int i = minor; i < 6; i++)
		scale *= 10;
	for (int i = 0; i < minor; i++)
		unit *= 10;
	u = (u + (uint64_t)scale / 2) / (uint64_t)scale; /* half up, away from zero */
	/* digits by hand, not snprintf: every run and line of a list is two amounts */
	put_amount(t, neg, u / (uint64_t)unit, u % (uint64_t)unit, minor);
	if (!n)
		return;
	len = strlen(t) < n ? strlen(t) : n - 1;
	memcpy(buf, t, len);
	buf[len] = '\0';
}

static int64_t minor_unit(int minor)
{
	int64_t unit = 1;
	if (minor < 0)
		minor = 0;
	for (int i = minor; i < 6; i++)
		unit *= 10;
	return unit;
}

int64_t gl_cost_round(int64_t micros, int minor)
{
	int64_t unit = minor_unit(minor), q = micros / unit, r = micros % unit;
	/* C truncates toward zero: r has micros' sign */
	if (r >= 0 ? 2 * r >= unit : -2 * r >= unit)
		q += micros < 0 ? -1 : 1;
	return q * unit;
}

struct shown_rem {
	size_t idx;
	int64_t r;
	const char *tie;
};

static int by_shown_rem(const void *a, const void *b)
{
	const struct shown_rem *x = a, *y = b;
	int c;
	if (x->r != y->r)
		return x->r > y->r ? -1 : 1;
	if (x->tie && y->tie && (c = strcmp(x->tie, y->tie)))
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int gl_cost_shown_parts(int64_t shown_total, const int64_t *part, const char *const *tie, size_t n, int minor,
			 int64_t *out)
{
	int64_t unit = minor_unit(minor), floors = 0, left;
	struct shown_rem *r;
	int rc = 0;
	r = gl_xcalloc(n ? n : 1, sizeof *r);
	for (size_t i = 0; i < n; i++) {
		int64_t q = part[i] / unit, m = part[i] % unit;
		if (m < 0) { /* floor, not truncation, so credits round the same way */
			q--;
			m += unit;
		}
		out[i] = q * unit;
		floors += out[i];
		r[i].idx = i;
		r[i].r = m;
		r[i].tie = tie ? tie[i] : NULL;
	}
	left = shown_total - floors;
	if (left % unit || left < 0 || left / unit > (int64_t)n) {
		for (size_t i = 0; i < n; i++)
			out[i] = gl_cost_round(part[i], minor);
		rc = -GL_EINVAL;
		goto out;
	}
	gl_qsort(r, n, sizeof *r, by_shown_rem);
	for (int64_t k = 0; k < left / unit; k++)
		out[r[k].idx] += unit;
out:
	free(r);
	return rc;
}

int gl_cost_shown_rows(int64_t shown_total, const int64_t *cost, const int64_t *share, const char *const *name,
			size_t n, int64_t left, int minor, int64_t *out_total, int64_t *out_cost, int64_t *out_share,
			int64_t *out_left)
{
	int64_t *part = gl_xcalloc(n + 1, sizeof *part), *shown = gl_xcalloc(n + 1, sizeof *shown);
	const char **tie = gl_xcalloc(n + 1, sizeof *tie);
	int rc;
	for (size_t i = 0; i < n; i++) {
		part[i] = cost[i] + share[i];
		tie[i] = name ? name[i] : "";
	}
	part[n] = left;
	tie[n] = "__idle__";
	rc = gl_cost_shown_parts(shown_total, part, tie, n + 1, minor, shown);
	*out_left = shown[n];
	for (size_t i = 0; i < n; i++) {
		int64_t p2[2] = {cost[i], share[i]}, s2[2];
		out_total[i] = shown[i];
		if (gl_cost_shown_parts(shown[i], p2, NULL, 2, minor, s2))
			rc = -GL_EINVAL;
		out_cost[i] = s2[0];
		out_share[i] = s2[1];
	}
	free(part);
	free(shown);
	free(tie);
	return rc;
}

int gl_cost_parse(const char *s, int64_t *micros, struct gl_err *err)
{
	int64_t whole = 0, frac = 0;
	int digits = 0, fd = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (whole > (INT64_MAX / 1000000 - 9) / 10)
			return gl_err_set(err, GL_ERANGE, "'%s' is too large", s);
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, fd++) {
			if (fd == 6)
				return gl_err_set(err, GL_EINVAL, "'%s' has more than 6 decimals", s);
			frac = frac * 10 + (*p - '0');
		}
	}
	if (*p || (digits == 0 && fd == 0))
		return gl_err_set(err, GL_EINVAL, "'%s' is not a plain decimal amount", s);
	for (; fd < 6; fd++)
		frac *= 10;
	*micros = whole * 1000000 + frac;
	return 0;
}
