/* fuzz-link: full
 * libFuzzer harness for the query string and the parameter parsers behind
 * it. The input is a raw query string: it is cut on '&' and the first '='
 * and each part percent-decoded by MHD_http_unescape, as libmicrohttpd does
 * for GET arguments; then every value goes through the parsers the routes
 * use: window (gl_window_parse, and gl_window_split under every step),
 * step, filter (gl_filter_parse over the accounting dimensions), the
 * digits of limit/cursor/horizon (gl_apijson_digits), the comma lists of
 * aggregate/exclude (gl_apijson_list_has_empty). Invariants:
 * - a window parsed is non-empty and within 0001-01-01..9999-12-31T23:59:59Z;
 *   written back as "A,B" in RFC 3339 it parses to the same window; its
 *   split under each step covers it exactly, in order, without an empty step;
 * - a step parsed is named back to itself;
 * - a filter parsed names only known dimensions, each once, with 1..64
 *   values; written back in the filter syntax it parses to the same filter;
 * - digits parsed are exactly the decimal value of the text.
 * Seeds: the query strings of docs/openapi.yaml, README.md and the http
 * tests (tests/fuzz/corpus/query). */
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/filter.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW_S 1795478400LL /* 2026-11-23T00:00:00Z: a fixed "now" */

static void check_window(const char *v)
{
	static const enum gl_window_step steps[] = {GL_WINDOW_STEP_NONE, GL_WINDOW_STEP_HOUR, GL_WINDOW_STEP_DAY, GL_WINDOW_STEP_WEEK, GL_WINDOW_STEP_MONTH};
	struct gl_window w, w2, *parts = NULL;
	struct gl_err e = {0};
	char a[40], b[40], pair[96];
	size_t n;

	if (gl_window_parse(v, NOW_S, &w, &e))
		return;
	if (!(w.start_s < w.end_s) || w.start_s < -62135596800LL || w.end_s > 253402300799LL)
		abort();
	gl_timeutil_format(w.start_s, a, sizeof a);
	gl_timeutil_format(w.end_s, b, sizeof b);
	snprintf(pair, sizeof pair, "%s,%s", a, b);
	if (gl_window_parse(pair, NOW_S, &w2, &e) || w2.start_s != w.start_s || w2.end_s != w.end_s)
		abort();
	parts = malloc(2000 * sizeof *parts);
	for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
		if (gl_window_split(&w, steps[s], parts, 2000, &n, &e))
			continue; /* more steps than the cap: refused, fine */
		if (n == 0 || parts[0].start_s != w.start_s || parts[n - 1].end_s != w.end_s)
			abort();
		for (size_t i = 0; i < n; i++)
			if (parts[i].end_s <= parts[i].start_s || (i && parts[i].start_s != parts[i - 1].end_s))
				abort();
	}
	free(parts);
}

static void check_step(const char *v)
{
	enum gl_window_step s, s2;
	struct gl_err e = {0};
	if (gl_window_step_parse(v, &s, &e))
		return;
	if (gl_window_step_parse(gl_window_step_name(s), &s2, &e) || s2 != s)
		abort();
}

static void check_filter(const char *v)
{
	struct gl_filter f, g;
	struct gl_err e = {0};
	struct gl_strbuf o = GL_STRBUF_INIT;

	/* the routes read an empty filter as none (and never parse it) */
	if (!*v || gl_filter_parse(v, gl_accounting_dims, &f, &e))
		return;
	if (f.n == 0 || f.n > GL_FILTER_MAX_CLAUSES)
		abort();
	for (size_t i = 0; i < f.n; i++) {
		if (!gl_accounting_dim_sql(f.c[i].dim) || f.c[i].n_values == 0 || f.c[i].n_values > GL_FILTER_MAX_VALUES)
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(f.c[i].dim, f.c[j].dim))
				abort();
	}
	gl_filter_format(&f, &o);
	if (gl_filter_parse(gl_strbuf_cstr(&o), gl_accounting_dims, &g, &e) || g.n != f.n)
		abort();
	for (size_t i = 0; i < f.n; i++) {
		if (strcmp(f.c[i].dim, g.c[i].dim) || f.c[i].n_values != g.c[i].n_values)
			abort();
		for (size_t k = 0; k < f.c[i].n_values; k++)
			if (strcmp(f.c[i].values[k], g.c[i].values[k]))
				abort();
	}
	gl_filter_fini(&g);
	gl_filter_fini(&f);
	gl_strbuf_fini(&o);
}

static void check_digits(const char *v)
{
	long long x;
	int rc = gl_apijson_digits(v, &x);
	if (rc == 0) {
		char back[32];
		const char *p = v;
		while (*p == '0' && p[1])
			p++;
		snprintf(back, sizeof back, "%lld", x);
		if (x < 0 || strcmp(back, p))
			abort();
	} else if (rc != -GL_EINVAL && rc != -GL_ERANGE) {
		abort();
	}
}

static void one_param(char *key, char *val)
{
	MHD_http_unescape(key);
	MHD_http_unescape(val);
	/* every parser gets every value: a route's parameter may be any text */
	check_window(val);
	check_step(val);
	check_filter(val);
	check_digits(val);
	(void)gl_apijson_list_has_empty(val, ',');
	(void)key;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *q = malloc(size + 1), *save = NULL;
	memcpy(q, data, size);
	q[size] = '\0';
	for (char *part = strtok_r(q, "&", &save); part; part = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(part, '=');
		char empty[1] = "";
		if (eq)
			*eq = '\0';
		one_param(part, eq ? eq + 1 : empty);
	}
	free(q);
	return 0;
}
