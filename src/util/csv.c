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

/* PostgreSQL's float8out (its shortest round-trip digits, printed in the
 * style of printf's %g with the switch to exponents at 15 digits, not at
 * the digit count) */
static void f8_text(double v, char *buf, size_t n)
{
	int p = 1, e;
	if (isnan(v) || isinf(v)) {
		snprintf(buf, n, "%s", isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
		return;
	}
	if (v == 0) {
		snprintf(buf, n, "%s", signbit(v) ? "-0" : "0");
		return;
	}
	for (; p < 17; p++) {
		snprintf(buf, n, "%.*e", p - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	snprintf(buf, n, "%.*e", p - 1, v);
	e = atoi(strchr(buf, 'e') + 1);
	if (e >= -4 && e < 15)
		snprintf(buf, n, "%.*f", p - 1 - e > 0 ? p - 1 - e : 0, v);
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
