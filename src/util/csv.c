/* CSV output (see include/gl/csv.h). */
#include "gl/csv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Returns 1 when the field starts a record. */
static int sep(struct gl_strbuf *o)
{
	if (o->len && o->p[o->len - 1] != '\n') {
		gl_strbuf_putc(o, ',');
		return 0;
	}
	return 1;
}

void gl_csv_field(struct gl_strbuf *o, const char *s)
{
	int quote = strpbrk(s, ",\"\r\n") != NULL;
	int guard = s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r';
	/* an empty first field would leave nothing to tell the next one apart */
	if (sep(o) && !*s)
		quote = 1;
	if (guard)
		quote = 1;
	if (quote)
		gl_strbuf_putc(o, '"');
	if (guard)
		gl_strbuf_putc(o, '\'');
	for (; *s; s++) {
		if (*s == '"')
			gl_strbuf_putc(o, '"');
		gl_strbuf_putc(o, *s);
	}
	if (quote)
		gl_strbuf_putc(o, '"');
}

void gl_csv_raw(struct gl_strbuf *o, const char *s)
{
	if (sep(o) && !*s)
		gl_strbuf_puts(o, "\"\"");
	gl_strbuf_puts(o, s);
}

/* A number text as its digits (no sign, point, leading or trailing
 * zeros) and the decimal exponent of its first digit: "-4.9030e+16" ->
 * "493", 16, negative. */
static void decimal_parts(const char *s, char *digits, size_t n, int *exp10, int *neg)
{
	size_t k = 0;
	int lead = 1, point = -1, i = 0;
	*neg = *s == '-';
	s += *s == '-' || *s == '+';
	for (; *s && *s != 'e' && *s != 'E'; s++) {
		if (*s == '.') {
			point = i;
			continue;
		}
		if (lead && *s == '0') {
			i++;
			continue;
		}
		if (lead)
			*exp10 = -i - 1;
		lead = 0;
		if (k + 1 < n)
			digits[k++] = *s;
		i++;
	}
	if (point < 0)
		point = i;
	*exp10 = lead ? 0 : point + *exp10 + (*s ? atoi(s + 1) : 0);
	while (k && digits[k - 1] == '0')
		k--;
	digits[k] = '\0';
}

/* 1 when the decimal s is exactly m, a double's rounding boundary (the
 * middle of two neighbouring doubles: 54 bits, exact in a long double). */
static int on_boundary(const char *s, long double m)
{
	char buf[1200], d1[64], d2[1200];
	int e1 = 0, e2 = 0, n1, n2;
	if (strtold(s, NULL) != m)
		return 0;
	/* the rare near miss of a long double: compare the exact expansions */
	snprintf(buf, sizeof buf, "%.1100Le", m);
	decimal_parts(s, d1, sizeof d1, &e1, &n1);
	decimal_parts(buf, d2, sizeof d2, &e2, &n2);
	return n1 == n2 && e1 == e2 && !strcmp(d1, d2);
}

/* digits d (no trailing zeros, the first significant) times 10^e as
 * PostgreSQL prints them: fixed for e in -4..14, else d.ddde+XX. */
static void put_pg_style(char *buf, size_t n, int neg, const char *d, int e)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	int nd = (int)strlen(d);
	if (neg)
		gl_strbuf_putc(&b, '-');
	if (e < -4 || e >= 15) {
		gl_strbuf_putc(&b, d[0]);
		if (nd > 1) {
			gl_strbuf_putc(&b, '.');
			gl_strbuf_puts(&b, d + 1);
		}
		gl_strbuf_printf(&b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	} else if (e < 0) {
		gl_strbuf_puts(&b, "0.");
		for (int i = 0; i < -e - 1; i++)
			gl_strbuf_putc(&b, '0');
		gl_strbuf_puts(&b, d);
	} else {
		for (int i = 0; i <= e || i < nd; i++) {
			if (i == e + 1)
				gl_strbuf_putc(&b, '.');
			gl_strbuf_putc(&b, i < nd ? d[i] : '0');
		}
	}
	snprintf(buf, n, "%s", gl_strbuf_cstr(&b));
	gl_strbuf_fini(&b);
}

/* The last significant digit of a %e text one up in magnitude
 * ("7.99e+01" -> "8.00e+01", "9.9e+01" -> "1.0e+02"). */
static void digit_up(char *s, size_t n)
{
	char *e = strchr(s, 'e'), *p = e - 1, *m = s + (*s == '-');
	for (; p >= m; p--) {
		if (*p == '.')
			continue;
		if (*p != '9') {
			(*p)++;
			return;
		}
		*p = '0';
	}
	/* 9.99 -> 10.00: one more decade */
	*m = '1';
	snprintf(e, n - (size_t)(e - s), "e%+03d", atoi(e + 1) + 1);
}

static int shortest_ok(const char *s, double v, long double lo, long double hi)
{
	return strtod(s, NULL) == v && !on_boundary(s, lo) && !on_boundary(s, hi);
}

/* PostgreSQL's float8out: the fewest significant digits whose decimal
 * lies strictly inside v's rounding interval (its Ryu never takes the
 * interval's ends, which strtod's ties-to-even would accept), the one
 * nearest v; printed in the style of printf's %g, but switching to
 * exponents at 15 digits. Below a power of two the interval is half as
 * wide as above it: there the nearest decimal may fall outside and the
 * next one up inside. */
static void f8_text(double v, char *buf, size_t n)
{
	long double lo = ((long double)v + nextafter(v, -INFINITY)) / 2, hi = ((long double)v + nextafter(v, INFINITY)) / 2;
	char sc[40], d[24];
	int p = 1, e = 0, neg, pow2;
	if (isnan(v) || isinf(v) || v == 0) {
		snprintf(buf, n, "%s", isnan(v) ? "NaN" : isinf(v) ? (v > 0 ? "Infinity" : "-Infinity") : signbit(v) ? "-0" : "0");
		return;
	}
	pow2 = fabs(frexp(v, &e)) == 0.5;
	for (; p <= 17; p++) {
		snprintf(sc, sizeof sc, "%.*e", p - 1, v);
		if (p == 17 || shortest_ok(sc, v, lo, hi))
			break;
		if (pow2) {
			digit_up(sc, sizeof sc);
			if (shortest_ok(sc, v, lo, hi))
				break;
		}
	}
	decimal_parts(sc, d, sizeof d, &e, &neg);
	put_pg_style(buf, n, neg, d, e);
}

void gl_csv_f8(struct gl_strbuf *o, double v)
{
	char buf[40];
	f8_text(v, buf, sizeof buf);
	gl_csv_raw(o, buf);
}

void gl_csv_end(struct gl_strbuf *o)
{
	gl_strbuf_puts(o, "\r\n");
}
