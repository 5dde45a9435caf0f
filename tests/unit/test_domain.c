/* Windows, steps, exact cost apportioning, percentiles, money formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/chargeback.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/filter.h"
#include "gl/timeutil.h"
#include "gl/window.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t T(const char *s)
{
	int64_t t = 0;
	if (gl_timeutil_parse(s, strlen(s), &t))
		fail_msg("bad time literal %s", s);
	return t;
}

struct wcase {
	const char *in, *now, *start, *end; /* start NULL = error */
};

static const struct wcase wins[] = {
	{"2026-10", "2026-11-22T18:00:00Z", "2026-10-01", "2026-11-01"},
	{"2026-12", "2026-11-22T18:00:00Z", "2026-12-01", "2027-01-01"},
	{"2024-02-10", "2026-11-22T18:00:00Z", "2024-02-10", "2024-02-11"},
	{"2026-11-22T17:00:00Z,2026-11-22T19:00:00Z", "2026-11-22T18:00:00Z", "2026-11-22T17:00:00Z", "2026-11-22T19:00:00Z"},
	{"2026-10-01,2026-10-08", "2026-11-22T18:00:00Z", "2026-10-01", "2026-10-08"},
	{"7d", "2026-11-22T18:00:00Z", "2026-11-15T18:00:00Z", "2026-11-22T18:00:00Z"},
	{"24h", "2026-11-22T18:00:00Z", "2026-11-21T18:00:00Z", "2026-11-22T18:00:00Z"},
	{"90m", "2026-11-22T18:00:00Z", "2026-11-22T16:30:00Z", "2026-11-22T18:00:00Z"},
	{"today", "2026-11-22T18:00:00Z", "2026-11-22", "2026-11-23"},
	{"yesterday", "2026-11-22T18:00:00Z", "2026-11-21", "2026-11-22"},
	{"lastmonth", "2026-01-15T00:00:00Z", "2025-12-01", "2026-01-01"},
	{"month", "2026-11-22T18:00:00Z", "2026-11-01", "2026-12-01"},
	{"lastweek", "2026-11-22T18:00:00Z", "2026-11-09", "2026-11-16"}, /* 2026-11-22 is a Sunday */
	{"2026-11-22T19:00:00Z,2026-11-22T17:00:00Z", "2026-11-22T18:00:00Z", NULL, NULL},
	/* fractions: compared as given, then start rounded down and end up */
	{"2026-11-01T00:00:00.5Z,2026-11-01T00:00:00.7Z", "2026-11-22T18:00:00Z", "2026-11-01T00:00:00Z", "2026-11-01T00:00:01Z"},
	{"2026-11-01T00:00:00.25Z,2026-11-01T00:00:03Z", "2026-11-22T18:00:00Z", "2026-11-01T00:00:00Z", "2026-11-01T00:00:03Z"},
	{"2026-11-01T00:00:00.000Z,2026-11-01T00:00:02.000Z", "2026-11-22T18:00:00Z", "2026-11-01T00:00:00Z", "2026-11-01T00:00:02Z"},
	{"2026-11-01T00:00:00.7Z,2026-11-01T00:00:00.5Z", "2026-11-22T18:00:00Z", NULL, NULL},
	{"2026-11-01T00:00:00.5Z,2026-11-01T00:00:00.50Z", "2026-11-22T18:00:00Z", NULL, NULL},
	{"2026-11-01T00:00:00.12345678901Z,2026-11-01T00:00:00.12345678902Z", "2026-11-22T18:00:00Z", "2026-11-01T00:00:00Z", "2026-11-01T00:00:01Z"},
	/* leap seconds are refused, whichever end */
	{"2026-12-31T23:59:60Z,2027-01-01T00:00:01Z", "2026-11-22T18:00:00Z", NULL, NULL},
	{"2026-12-31T00:00:00Z,2026-12-31T23:59:60Z", "2026-11-22T18:00:00Z", NULL, NULL},
	/* the end must be writable in RFC 3339 (4-digit years) */
	{"9999-11", "2026-11-22T18:00:00Z", "9999-11-01", "9999-12-01"},
	{"9999-12", "2026-11-22T18:00:00Z", NULL, NULL},
	{"9999-12-31", "2026-11-22T18:00:00Z", NULL, NULL},
	{"9999-12-31,9999-12-31T23:59:59Z", "2026-11-22T18:00:00Z", "9999-12-31", "9999-12-31T23:59:59Z"},
	{"9999-12-31,9999-12-31T23:59:59.5Z", "2026-11-22T18:00:00Z", NULL, NULL},
	{"9999-12-31,9999-12-31T23:59:59-01:00", "2026-11-22T18:00:00Z", NULL, NULL},
	/* ... and the start in PostgreSQL, which has no year 0 (the audit
	 * routes answered 500 for 0000-01 where the others answered 200) */
	{"0000-01-01T00:00:00+01:00,2026-01-01", "2026-11-22T18:00:00Z", NULL, NULL},
	{"0000-01-01,0000-01-02", "2026-11-22T18:00:00Z", NULL, NULL},
	{"0000-01", "2026-11-22T18:00:00Z", NULL, NULL},
	{"0000-12-31", "2026-11-22T18:00:00Z", NULL, NULL},
	{"0001-01-01T00:30:00+01:00,0001-01-02", "2026-11-22T18:00:00Z", NULL, NULL},
	{"0001-01", "2026-11-22T18:00:00Z", "0001-01-01", "0001-02-01"},
	{"0001-01-01,0001-01-02", "2026-11-22T18:00:00Z", "0001-01-01", "0001-01-02"},
	{"0d", "2026-11-22T18:00:00Z", NULL, NULL},
	{"7x", "2026-11-22T18:00:00Z", NULL, NULL},
	{"2026-13", "2026-11-22T18:00:00Z", NULL, NULL},
	{"", "2026-11-22T18:00:00Z", NULL, NULL},
	{"soon", "2026-11-22T18:00:00Z", NULL, NULL},
};

static void test_window_parse(void **state)
{
	for (size_t i = 0; i < sizeof wins / sizeof wins[0]; i++) {
		struct gl_window w;
		struct gl_err e = {0};
		int rc = gl_window_parse(wins[i].in, T(wins[i].now), &w, &e);
		if (!wins[i].start) {
			if (rc == 0)
				fail_msg("'%s' should fail", wins[i].in);
			assert_true(e.msg[0] != '\0');
			continue;
		}
		if (rc)
			fail_msg("'%s': %s", wins[i].in, e.msg);
		assert_int_equal(w.start_s, T(wins[i].start));
		assert_int_equal(w.end_s, T(wins[i].end));
	}
}

/* An offset's '+' typed into a URL arrives as a space: the error says so. */
static void test_window_plus_as_space(void **state)
{
	struct gl_window w;
	struct gl_err e = {0};
	assert_int_not_equal(gl_window_parse("2026-11-22T10:00:00 02:00,2026-11-23T00:00:00Z", T("2026-11-23T00:00:00Z"),
					     &w, &e),
			     0);
	assert_non_null(strstr(e.msg, "bad start '2026-11-22T10:00:00 02:00'"));
	assert_non_null(strstr(e.msg, "write %2B"));
	memset(&e, 0, sizeof e);
	assert_int_not_equal(gl_window_parse("2026-11-22T00:00:00Z,2026-11-23T10:00:00 02:00", T("2026-11-23T00:00:00Z"),
					     &w, &e),
			     0);
	assert_non_null(strstr(e.msg, "write %2B"));
	/* no space, no hint */
	memset(&e, 0, sizeof e);
	assert_int_not_equal(gl_window_parse("2026-11-22T25:00:00Z,2026-11-23", T("2026-11-23T00:00:00Z"), &w, &e), 0);
	assert_null(strstr(e.msg, "%2B"));
}

/* The edge cases' errors say what is wrong (they all said "end before
 * start", or echoed an end of 10000-01-01T00:00:00Z). */
static void test_window_edge_messages(void **state)
{
	static const struct {
		const char *in, *says;
	} cases[] = {
		{"2026-12-31T23:59:60Z,2027-01-01T00:00:01Z", "start '2026-12-31T23:59:60Z' is a leap second"},
		{"2026-12-31T00:00:00Z,2026-12-31T23:59:60+00:00", "end '2026-12-31T23:59:60+00:00' is a leap second"},
		{"9999-12", "ends after 9999-12-31T23:59:59Z"},
		{"0000-01-01T00:00:00+01:00,2026-01-01", "starts before 0001-01-01T00:00:00Z"},
		{"0000-01", "there is no year 0"},
		{"2026-11-01T00:00:00.7Z,2026-11-01T00:00:00.5Z", "end before start"},
		/* a day or month the calendar does not have, not "unknown window" */
		{"2026-11-31", "the day 2026-11-31 does not exist: November 2026 has 30 days"},
		{"2100-02-29", "February 2100 has 28 days"},
		{"2026-00-10", "'2026-00-10' has no month 00"},
		{"2026-13", "'2026-13' has no month 13"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct gl_window w;
		struct gl_err e = {0};
		assert_int_equal(gl_window_parse(cases[i].in, T("2026-11-23T00:00:00Z"), &w, &e), -GL_EINVAL);
		if (!strstr(e.msg, cases[i].says))
			fail_msg("'%s': '%s' lacks '%s'", cases[i].in, e.msg, cases[i].says);
	}
}

static void test_window_split(void **state)
{
	struct gl_window w = {T("2026-10-30T12:00:00Z"), T("2026-11-03T06:00:00Z")}, out[64];
	struct gl_err e = {0};
	size_t n;
	enum gl_window_step st;
	assert_int_equal(gl_window_split(&w, GL_WINDOW_STEP_DAY, out, 64, &n, &e), 0);
	assert_int_equal(n, 5);
	assert_int_equal(out[0].start_s, w.start_s);
	assert_int_equal(out[0].end_s, T("2026-10-31"));
	assert_int_equal(out[4].start_s, T("2026-11-03"));
	assert_int_equal(out[4].end_s, w.end_s);
	for (size_t i = 1; i < n; i++)
		assert_int_equal(out[i].start_s, out[i - 1].end_s);
	assert_int_equal(gl_window_split(&w, GL_WINDOW_STEP_MONTH, out, 64, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[1].start_s, T("2026-11-01"));
	assert_int_equal(gl_window_split(&w, GL_WINDOW_STEP_WEEK, out, 64, &n, &e), 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[1].start_s, T("2026-11-02")); /* a Monday */
	assert_int_equal(gl_window_split(&w, GL_WINDOW_STEP_HOUR, out, 64, &n, &e), -GL_ERANGE);
	assert_int_equal(gl_window_split(&w, GL_WINDOW_STEP_NONE, out, 64, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(gl_window_step_parse("day", &st, &e), 0);
	assert_int_equal(st, GL_WINDOW_STEP_DAY);
	assert_int_not_equal(gl_window_step_parse("fortnight", &st, &e), 0);
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void test_apportion_sums_exactly(void **state)
{
	/* random lines of micro-GPU-seconds x micros-per-hour: every line within
	 * one unit of its exact value, and the lines add up to the rounded total */
	for (int round = 0; round < 2000; round++) {
		size_t n = 1 + next_rand() % 40;
		gl_cost_i128 num[40], total = 0;
		int64_t out[40], sum = 0;
		const int64_t denom = GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR;
		for (size_t i = 0; i < n; i++) {
			num[i] = (gl_cost_i128)(next_rand() % 100000000) * (gl_cost_i128)(next_rand() % 5000000);
			total += num[i];
		}
		assert_int_equal(gl_cost_apportion(num, n, denom, out), 0);
		for (size_t i = 0; i < n; i++) {
			gl_cost_i128 lo = num[i] / denom, hi = lo + (num[i] % denom != 0);
			assert_true(out[i] == (int64_t)lo || out[i] == (int64_t)hi);
			sum += out[i];
		}
		assert_true((gl_cost_i128)sum == (total + denom / 2) / denom);
	}
}

static void test_apportion_cases(void **state)
{
	/* hand-computed: 1 GPU for 1 s at 3.6 units/hour = 0.001 micro each */
	gl_cost_i128 num[3] = {1200000, 1200000, 1200000}; /* 0.333.. each, total 1.0 -> 1 */
	int64_t out[3];
	assert_int_equal(gl_cost_apportion(num, 3, 3600000, out), 0);
	assert_int_equal(out[0] + out[1] + out[2], 1);
	assert_int_equal(out[0], 1); /* ties go to the first line */
	/* 8 GPUs x 30 s at 2.50 per GPU-hour = 0.1666.. = 166667 micros */
	gl_cost_i128 one[1] = {(gl_cost_i128)8000 * 30 * 2500000};
	assert_int_equal(gl_cost_apportion(one, 1, 3600000, out), 0);
	assert_int_equal(out[0], 166667);
}

static void test_share(void **state)
{
	int64_t w[4] = {1, 1, 1, 0}, out[4];
	assert_int_equal(gl_cost_share(100, w, 4, out), 0);
	assert_int_equal(out[0] + out[1] + out[2] + out[3], 100);
	assert_int_equal(out[3], 0);
	assert_int_equal(out[0], 34);
	for (int round = 0; round < 1000; round++) {
		int64_t ws[16], o[16], amount = (int64_t)(next_rand() % 1000000000), s = 0;
		size_t n = 1 + next_rand() % 16;
		for (size_t i = 0; i < n; i++)
			ws[i] = (int64_t)(next_rand() % 100000) + 1;
		assert_int_equal(gl_cost_share(amount, ws, n, o), 0);
		for (size_t i = 0; i < n; i++)
			s += o[i];
		assert_int_equal(s, amount);
	}
	int64_t zero[2] = {0, 0};
	assert_int_not_equal(gl_cost_share(5, zero, 2, out), 0);
	assert_int_equal(gl_cost_share(0, zero, 2, out), 0);
}

static void test_percentile_and_money(void **state)
{
	int64_t v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	char buf[64];
	gl_cost_i128 x;
	assert_int_equal(gl_cost_percentile_sorted(v, 10, 50), 5);
	assert_int_equal(gl_cost_percentile_sorted(v, 10, 90), 9);
	assert_int_equal(gl_cost_percentile_sorted(v, 10, 99), 10);
	assert_int_equal(gl_cost_percentile_sorted(v, 1, 99), 1);
	gl_cost_format(166667, 2, buf, sizeof buf);
	assert_string_equal(buf, "0.17");
	gl_cost_format(12345678, 6, buf, sizeof buf);
	assert_string_equal(buf, "12.345678");
	gl_cost_format(-5000, 2, buf, sizeof buf);
	assert_string_equal(buf, "-0.01");
	gl_cost_format(2500000, 0, buf, sizeof buf);
	assert_string_equal(buf, "3");
	assert_int_equal(gl_cost_i128_parse("123456789012345678901234567890", &x), 0);
	gl_cost_i128_format(x, buf, sizeof buf);
	assert_string_equal(buf, "123456789012345678901234567890");
	assert_int_not_equal(gl_cost_i128_parse("12.5", &x), 0);
}

/* An amount written into buffers of every size around its length: cut as
 * snprintf cuts (n - 1 bytes and the NUL), nothing written past n, n = 0
 * writes nothing. Values hand-computed: minor 0, 2, 3 and 6, half away
 * from zero, a fraction's leading zeros, the int64 ends. */
static void test_money_bounds(void **state)
{
	static const struct {
		int64_t micros;
		int minor;
		const char *want;
	} c[] = {
		{0, 2, "0.00"},
		{50000, 2, "0.05"},
		{-5000, 2, "-0.01"},
		{1234567, 3, "1.235"},
		{-1234500, 3, "-1.235"},
		{2500000, 0, "3"},
		{-2500000, 0, "-3"},
		{1000001, 6, "1.000001"},
		{1234567, 9, "1.234567"}, /* more than micro-units: all six */
		{2500000, -1, "3"}, /* no currency's minor: whole units */
		{INT64_MAX, 2, "9223372036854.78"},
		{INT64_MIN, 2, "-9223372036854.78"},
		{INT64_MIN, 6, "-9223372036854.775808"},
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++)
		for (size_t n = 0; n <= strlen(c[i].want) + 2; n++) {
			char buf[40];
			memset(buf, '#', sizeof buf);
			gl_cost_format(c[i].micros, c[i].minor, buf, n);
			assert_int_equal(gl_test_cut_ok(buf, n, c[i].want), 0);
		}
}

static const char *const dims[] = {"team", "cluster", "user", NULL};

static void test_filter(void **state)
{
	struct gl_filter f;
	struct gl_err e = {0};
	assert_int_equal(gl_filter_parse("team:\"a\",\"b,c\"+cluster:x", dims, &f, &e), 0);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.c[0].dim, "team");
	assert_int_equal(f.c[0].n_values, 2);
	assert_string_equal(f.c[0].values[1], "b,c");
	assert_string_equal(f.c[1].values[0], "x");
	gl_filter_fini(&f);
	assert_int_equal(gl_filter_parse("user:\"q\\\"t\"", dims, &f, &e), 0);
	assert_string_equal(f.c[0].values[0], "q\"t");
	gl_filter_fini(&f);
	static const char *const bad[] = {"planet:x", "team", "team:\"open", "team:x+", "team:", "team:a,",
					  /* ANDed, so never both: an empty answer, not "either" */
					  "team:a+team:b", "team:\"a\"+cluster:c+team:\"b\"", NULL};
	for (size_t i = 0; bad[i]; i++) {
		if (gl_filter_parse(bad[i], dims, &f, &e) == 0)
			fail_msg("filter '%s' should fail", bad[i]);
	}
}

/* A token's scope on a filter: a clause on the dimension must stay inside
 * it (EPERM), none adds the scope's, another dimension's is kept (AND). */
static void test_filter_restrict(void **state)
{
	static const char *const vis[] = {"vision", "nlp"};
	struct gl_filter f;
	struct gl_err e = {0};
	memset(&f, 0, sizeof f);
	assert_int_equal(gl_filter_restrict(&f, "team", vis, 2, &e), 0);
	assert_int_equal(f.n, 1);
	assert_int_equal(f.c[0].n_values, 2);
	assert_string_equal(f.c[0].values[1], "nlp");
	gl_filter_fini(&f);
	assert_int_equal(gl_filter_parse("team:nlp+user:u", dims, &f, &e), 0);
	assert_int_equal(gl_filter_restrict(&f, "team", vis, 2, &e), 0);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.c[0].n_values, 1); /* narrower than the scope: kept */
	gl_filter_fini(&f);
	assert_int_equal(gl_filter_parse("team:nlp,other", dims, &f, &e), 0);
	assert_int_equal(gl_filter_restrict(&f, "team", vis, 2, &e), -GL_EPERM);
	assert_non_null(strstr(e.msg, "team:\"other\" is outside the token's scope"));
	gl_filter_fini(&f);
	assert_int_equal(gl_filter_parse("user:u", dims, &f, &e), 0);
	assert_int_equal(gl_filter_restrict(&f, "team", vis, 1, &e), 0);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.c[1].dim, "team");
	assert_int_equal(f.c[1].n_values, 1);
	gl_filter_fini(&f);
}

static void test_csv(void **state)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	gl_csv_field(&b, "plain");
	gl_csv_field(&b, "a,b");
	gl_csv_field(&b, "say \"hi\"");
	gl_csv_field(&b, "=SUM(A1)");
	gl_csv_field(&b, "@cmd");
	gl_csv_field(&b, "Zürich");
	gl_csv_raw(&b, "-12.50");
	gl_csv_end(&b);
	gl_csv_field(&b, "");
	gl_csv_raw(&b, "1");
	gl_csv_end(&b);
	assert_string_equal(gl_strbuf_cstr(&b),
			    "plain,\"a,b\",\"say \"\"hi\"\"\",\"'=SUM(A1)\",\"'@cmd\",Zürich,-12.50\r\n\"\",1\r\n");
	gl_strbuf_fini(&b);
}

static void test_chargeback_reconciles(void **state)
{
	/* random lines and idle: per step, lines + idle = total to the micro-unit
	 * and to the second, under every sharing policy */
	for (int policy = 0; policy < 4; policy++) {
		for (int round = 0; round < 200; round++) {
			struct gl_chargeback cb;
			size_t n = next_rand() % 12;
			int64_t sum_s = 0, sum_m = 0;
			gl_chargeback_init(&cb, 1, (enum gl_chargeback_share_idle)policy, 1);
			for (size_t i = 0; i < n; i++) {
				char key[16];
				snprintf(key, sizeof key, "t%zu", i);
				struct gl_chargeback_line *l = gl_chargeback_add_line(&cb, 0, (const char *[]){key});
				l->alloc_us = (gl_cost_i128)(next_rand() % 100000000) * 1000;
				l->priced_us = l->alloc_us;
				l->cost_num = l->alloc_us * (gl_cost_i128)(next_rand() % 4000000);
				if (policy == GL_CHARGEBACK_SHARE_OWNER && i == 0) {
					l->idle_owner_us = 123456000;
					l->idle_owner_num = (gl_cost_i128)123456000 * 2500000;
				}
				if (policy == GL_CHARGEBACK_SHARE_PROPORTIONAL) /* its cluster: one of three */
					gl_chargeback_line_in_pool(l, gl_chargeback_pool_of(&cb, 0, (const char *[]){"c0", "c1", "c2"}[i % 3]),
							   l->alloc_us);
			}
			cb.steps[0].capacity_known = 1;
			cb.steps[0].idle_us = ((gl_cost_i128)(next_rand() % 100000000) + 123456) * 1000;
			cb.steps[0].idle_num = cb.steps[0].idle_us * 2500000;
			if (policy == GL_CHARGEBACK_SHARE_PROPORTIONAL) { /* the idle of c0 and c3, none of c1 and c2 */
				size_t i0 = gl_chargeback_pool_of(&cb, 0, "c0"), i3 = gl_chargeback_pool_of(&cb, 0, "c3");
				struct gl_chargeback_pool *p0 = &cb.steps[0].pools[i0], *p3 = &cb.steps[0].pools[i3];
				p0->idle_us = cb.steps[0].idle_us / 3;
				p3->idle_us = cb.steps[0].idle_us - p0->idle_us;
				p0->idle_num = p0->idle_us * 2500000;
				p3->idle_num = p3->idle_us * 2500000;
			}
			assert_int_equal(gl_chargeback_finish(&cb), 0);
			for (size_t i = 0; i < n; i++) {
				const struct gl_chargeback_line *l = &cb.steps[0].lines[i];
				sum_s += l->alloc_s + l->idle_share_s;
				sum_m += l->total_micros;
				assert_int_equal(l->total_micros, l->cost_micros + l->idle_share_micros);
			}
			sum_s += cb.steps[0].idle_s;
			sum_m += cb.steps[0].idle_micros;
			assert_int_equal(sum_s, cb.total_s);
			assert_int_equal(sum_m, cb.total_micros);
			if (policy == GL_CHARGEBACK_SHARE_PROPORTIONAL_FLEET && n > 0 && cb.steps[0].total_alloc_s > 0)
				assert_int_equal(cb.steps[0].idle_micros, 0);
			if (policy == GL_CHARGEBACK_SHARE_PROPORTIONAL) {
				/* no idle crosses a cluster: c1 and c2 had none to give,
				 * c3's stays (nobody ran there), c0's goes to c0's lines */
				for (size_t i = 0; i < n; i++) {
					/* by key: finish put the lines in key order (t10 before t2) */
					char key[16];
					const struct gl_chargeback_line *l;
					snprintf(key, sizeof key, "t%zu", i);
					l = gl_chargeback_find_line(&cb, 0, (const char *[]){key});
					assert_non_null(l);
					if (i % 3)
						assert_true(l->idle_share_micros == 0 && l->idle_share_s == 0);
				}
				assert_true(cb.steps[0].idle_s >=
					    (int64_t)(cb.steps[0].pools[gl_chargeback_pool_of(&cb, 0, "c3")].idle_us / GL_GPU_MICRO) - 1);
			}
			gl_chargeback_fini(&cb);
		}
	}
}

/* shareIdle=proportional: a cluster's idle goes to the lines that used
 * that cluster, in proportion to their GPU-time there; a cluster without
 * capacity data gives none (the demo spread testgpu's idle over philly's
 * teams). Worked out by hand: cluster A 1,000 idle GPU-seconds at 2.50 an
 * hour = 694,444.4 micro-units; t1 ran 100 s on A, t3 300 s on A and 100 s
 * on B, t2 300 s on B only: t1 gets 1/4 (250 s, 173,611), t3 3/4 (750 s,
 * 520,833), t2 nothing. */
static void test_idle_stays_in_cluster(void **state)
{
	struct gl_chargeback cb;
	struct gl_chargeback_line *l[3];
	struct gl_chargeback_step *s;
	size_t a, b;
	gl_chargeback_init(&cb, 1, GL_CHARGEBACK_SHARE_PROPORTIONAL, 1);
	a = gl_chargeback_pool_of(&cb, 0, "A");
	b = gl_chargeback_pool_of(&cb, 0, "B");
	for (int i = 0; i < 3; i++)
		l[i] = gl_chargeback_add_line(&cb, 0, (const char *[]){(const char *[]){"t1", "t2", "t3"}[i]});
	l[0]->alloc_us = 100000000;
	gl_chargeback_line_in_pool(l[0], a, 100000000);
	l[1]->alloc_us = 300000000;
	gl_chargeback_line_in_pool(l[1], b, 300000000);
	l[2]->alloc_us = 400000000;
	gl_chargeback_line_in_pool(l[2], a, 300000000);
	gl_chargeback_line_in_pool(l[2], b, 100000000);
	s = &cb.steps[0];
	s->capacity_known = 1;
	s->idle_us = s->pools[a].idle_us = 1000000000;
	s->idle_num = s->pools[a].idle_num = (gl_cost_i128)1000000000 * 2500000;
	assert_int_equal(gl_chargeback_finish(&cb), 0);
	assert_int_equal(l[0]->idle_share_s, 250);
	assert_int_equal(l[2]->idle_share_s, 750);
	assert_int_equal(l[1]->idle_share_s, 0);
	assert_int_equal(l[0]->idle_share_micros, 173611);
	assert_int_equal(l[2]->idle_share_micros, 520833);
	assert_int_equal(l[1]->idle_share_micros, 0);
	assert_int_equal(s->idle_micros, 0);
	gl_chargeback_fini(&cb);
	/* the fleet-wide pooling, asked for by name, still spreads it over all */
	gl_chargeback_init(&cb, 1, GL_CHARGEBACK_SHARE_PROPORTIONAL_FLEET, 1);
	for (int i = 0; i < 3; i++)
		l[i] = gl_chargeback_add_line(&cb, 0, (const char *[]){(const char *[]){"t1", "t2", "t3"}[i]});
	l[0]->alloc_us = 100000000;
	l[1]->alloc_us = 300000000;
	l[2]->alloc_us = 400000000;
	s = &cb.steps[0];
	s->capacity_known = 1;
	s->idle_us = 1000000000;
	s->idle_num = (gl_cost_i128)1000000000 * 2500000;
	assert_int_equal(gl_chargeback_finish(&cb), 0);
	assert_int_equal(l[1]->idle_share_s, 375);
	gl_chargeback_fini(&cb);
}

static void test_owned_idle_never_negative(void **state)
{
	/* one line worth 0.7 micro-units and 0.6 of idle, all of it owned by
	 * that line's team: rounded together the line takes the unit (1 + 0),
	 * while the owned idle alone rounds to 1; the unit must come back from
	 * the owned share, never as -1 on the unowned idle line */
	struct gl_chargeback cb;
	struct gl_chargeback_line *l;
	gl_chargeback_init(&cb, 1, GL_CHARGEBACK_SHARE_OWNER, 1);
	l = gl_chargeback_add_line(&cb, 0, (const char *[]){"vision"});
	l->alloc_us = 1000000;
	l->priced_us = 1000000;
	l->cost_num = 2520000000;
	l->idle_owner_us = 1000000;
	l->idle_owner_num = 2160000000;
	cb.steps[0].capacity_known = 1;
	cb.steps[0].idle_us = 1000000;
	cb.steps[0].idle_num = 2160000000;
	assert_int_equal(gl_chargeback_finish(&cb), 0);
	assert_int_equal(cb.steps[0].lines[0].cost_micros, 1);
	assert_int_equal(cb.steps[0].idle_total_micros, 0);
	assert_int_equal(cb.steps[0].idle_micros, 0);
	assert_int_equal(cb.steps[0].lines[0].idle_share_micros, 0);
	assert_int_equal(cb.steps[0].lines[0].total_micros + cb.steps[0].idle_micros, cb.total_micros);
	gl_chargeback_fini(&cb);
	/* and at random: all idle owned, nothing negative, totals reconcile */
	for (int round = 0; round < 500; round++) {
		size_t n = 1 + next_rand() % 6;
		gl_cost_i128 idle_us = 0, idle_num = 0;
		int64_t sum_m = 0;
		gl_chargeback_init(&cb, 1, GL_CHARGEBACK_SHARE_OWNER, 1);
		for (size_t i = 0; i < n; i++) {
			char key[16];
			snprintf(key, sizeof key, "t%zu", i);
			l = gl_chargeback_add_line(&cb, 0, (const char *[]){key});
			l->alloc_us = (gl_cost_i128)(next_rand() % 5000) * 1000;
			l->priced_us = l->alloc_us;
			l->cost_num = (gl_cost_i128)(next_rand() % 7200000) * 1000;
			l->idle_owner_us = (gl_cost_i128)(next_rand() % 5000) * 1000;
			l->idle_owner_num = (gl_cost_i128)(next_rand() % 7200000) * 1000;
			idle_us += l->idle_owner_us;
			idle_num += l->idle_owner_num;
		}
		cb.steps[0].capacity_known = 1;
		cb.steps[0].idle_us = idle_us;
		cb.steps[0].idle_num = idle_num;
		assert_int_equal(gl_chargeback_finish(&cb), 0);
		assert_true(cb.steps[0].idle_micros >= 0 && cb.steps[0].idle_s >= 0);
		for (size_t i = 0; i < n; i++) {
			assert_true(cb.steps[0].lines[i].idle_share_micros >= 0 && cb.steps[0].lines[i].idle_share_s >= 0);
			sum_m += cb.steps[0].lines[i].total_micros;
		}
		assert_int_equal(sum_m + cb.steps[0].idle_micros, cb.total_micros);
		gl_chargeback_fini(&cb);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_parse),	      cmocka_unit_test(test_window_plus_as_space),
		cmocka_unit_test(test_window_edge_messages),
		cmocka_unit_test(test_window_split),
		cmocka_unit_test(test_apportion_sums_exactly), cmocka_unit_test(test_apportion_cases),
		cmocka_unit_test(test_share),		      cmocka_unit_test(test_percentile_and_money),
		cmocka_unit_test(test_money_bounds),
		cmocka_unit_test(test_filter), cmocka_unit_test(test_filter_restrict),		      cmocka_unit_test(test_csv),
		cmocka_unit_test(test_chargeback_reconciles), cmocka_unit_test(test_idle_stays_in_cluster),
		cmocka_unit_test(test_owned_idle_never_negative),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
