/* Unit tests for src/domain/increase.c: counter increases over a sequence
 * of scrapes with a gap, a restart of the process, a counter that goes
 * backwards without one, a scrape applied twice and a new pod, every
 * expected increase worked out by hand next to its step; and
 * histogram_quantile's interpolation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/increase.h"
#include "gl/servemetrics.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U NAN /* unknown start, absent counter */

struct step {
	int64_t at_s;
	double start_s;
	int64_t job_pk, job_start_s;
	double req, prompt;          /* the scrape's cumulative values */
	enum gl_increase_kind kind;
	int64_t want_req, want_prompt;
	size_t backwards;
};

/* One series of two counters, scraped every 30 s from t = 1000, the
 * endpoint's previous scrape before it at t = 970. */
static const struct step seq[] = {
	/* first sight of a process already running (started long ago):
	 * its 100 requests happened we do not know when: levels only */
	{1000, U, 7, 500, 100, 1000, GL_INCREASE_BASELINE, 0, 0, 0},
	/* 110 - 100, 1500 - 1000 */
	{1030, U, 7, 500, 110, 1500, GL_INCREASE_COUNTED, 10, 500, 0},
	/* the scrape of 1060 is missing: 1090 counts the whole rise since
	 * 1030 (130 - 110, 2100 - 1500), nothing goes to 1060 */
	{1090, U, 7, 500, 130, 2100, GL_INCREASE_COUNTED, 20, 600, 0},
	/* restart: everything fell: the new values are the increase */
	{1120, U, 7, 500, 5, 300, GL_INCREASE_RESET, 5, 300, 0},
	/* prompt falls while requests rise: not a restart; flagged, 0, and
	 * the level stays 300 */
	{1150, U, 7, 500, 8, 250, GL_INCREASE_COUNTED, 3, 0, 1},
	/* counted from the kept level: 320 - 300, not 320 - 250 */
	{1180, U, 7, 500, 9, 320, GL_INCREASE_COUNTED, 1, 20, 0},
	/* the same scrape again, and an older one: nothing */
	{1180, U, 7, 500, 9, 320, GL_INCREASE_STALE, 0, 0, 0},
	{1170, U, 7, 500, 99, 999, GL_INCREASE_STALE, 0, 0, 0},
	/* a new pod (job 8) started at 1195, after the series' last scrape
	 * at 1180: all of its counts are new */
	{1210, U, 8, 1195, 4, 90, GL_INCREASE_NEW, 4, 90, 0},
	{1240, U, 8, 1195, 6, 100, GL_INCREASE_COUNTED, 2, 10, 0},
	/* the process says when it started: a changed start is a restart
	 * even though the values rose (6 -> 40 requests in the new process) */
	{1270, 1250.0, 8, 1195, 40, 400, GL_INCREASE_COUNTED, 34, 300, 0},
	{1300, 1280.0, 8, 1195, 41, 500, GL_INCREASE_RESET, 41, 500, 0},
	/* the same start and a fall: not a restart, flagged */
	{1330, 1280.0, 8, 1195, 40, 520, GL_INCREASE_COUNTED, 0, 20, 1},
};

static void test_sequence(void **state)
{
	double hw[2];
	int64_t inc[2];
	struct gl_increase_series s = {0, 0, U, 0, 2, hw};
	int64_t endpoint_prev = 970, total_req = 0;
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(seq); i++) {
		const struct step *t = &seq[i];
		double cur[2] = {t->req, t->prompt};
		struct gl_increase_obs o = {t->at_s, t->start_s, t->job_pk, t->job_start_s, endpoint_prev, cur};
		struct gl_increase_result r = {.inc = inc};
		gl_increase_step(&s, &o, &r);
		if (r.kind != t->kind || inc[0] != t->want_req || inc[1] != t->want_prompt || r.backwards != t->backwards)
			fail_msg("step %zu (t=%lld): kind %d inc %lld/%lld backwards %zu; want kind %d inc %lld/%lld backwards %zu",
				 i, (long long)t->at_s, r.kind, (long long)inc[0], (long long)inc[1], r.backwards, t->kind,
				 (long long)t->want_req, (long long)t->want_prompt, t->backwards);
		total_req += inc[0];
		endpoint_prev = t->at_s;
	}
	/* never negative, and every increase above added up */
	assert_int_equal(total_req, 10 + 20 + 5 + 3 + 1 + 4 + 2 + 34 + 41);
}

/* The flag names the counter and the values it went between. */
static void test_backwards_detail(void **state)
{
	double hw[2] = {100, 300};
	int64_t inc[2];
	struct gl_increase_series s = {1, 1000, U, 0, 2, hw};
	double cur[2] = {101, 290};
	struct gl_increase_obs o = {1030, U, 0, GL_TIME_NONE, 1000, cur};
	struct gl_increase_result r = {.inc = inc};
	(void)state;
	gl_increase_step(&s, &o, &r);
	assert_int_equal(r.backwards, 1);
	assert_int_equal(r.first_backwards, 1);
	assert_true(r.back_from == 300 && r.back_to == 290);
	assert_true(hw[1] == 300);
}

/* A new series whose process started after the endpoint's last scrape
 * (a pod that replaced another between two scrapes) counts whole; an
 * endpoint never scraped before cannot tell, and only sets levels. */
static void test_new_series(void **state)
{
	double hw[1] = {U};
	int64_t inc[1];
	struct gl_increase_series s = {0, 0, U, 0, 1, hw};
	double cur[1] = {12};
	struct gl_increase_obs o = {2000, 1990.0, 0, GL_TIME_NONE, 1980, cur};
	struct gl_increase_result r = {.inc = inc};
	(void)state;
	gl_increase_step(&s, &o, &r);
	assert_int_equal(r.kind, GL_INCREASE_NEW);
	assert_int_equal(inc[0], 12);
	s = (struct gl_increase_series){0, 0, U, 0, 1, hw};
	o.endpoint_prev_s = GL_TIME_NONE;
	gl_increase_step(&s, &o, &r);
	assert_int_equal(r.kind, GL_INCREASE_BASELINE);
	assert_int_equal(inc[0], 0);
}

/* A counter that first appears in a process already seen was 0 before
 * (TGI creates tgi_request_failure at the first failure). */
static void test_counter_appears(void **state)
{
	double hw[2] = {10, U};
	int64_t inc[2];
	struct gl_increase_series s = {1, 1000, U, 0, 2, hw};
	double cur[2] = {12, 1};
	struct gl_increase_obs o = {1030, U, 0, GL_TIME_NONE, 1000, cur};
	struct gl_increase_result r = {.inc = inc};
	(void)state;
	gl_increase_step(&s, &o, &r);
	assert_int_equal(inc[0], 2);
	assert_int_equal(inc[1], 1);
}

struct q_case {
	const char *what;
	size_t n;
	double le[16], cum[16];
	double q, want;
};

static const struct q_case q_cases[] = {
	/* rank 20 falls in (0.5, 1] holding 20: 0.5 + 0.5 x 10/20 */
	{"interpolated", 4, {0.5, 1, 2, INFINITY}, {10, 30, 40, 40}, 0.5, 0.75},
	/* rank 39.6 in (1, 2] holding 10 above 30: 1 + 1 x 9.6/10 */
	{"p99", 4, {0.5, 1, 2, INFINITY}, {10, 30, 40, 40}, 0.99, 1.96},
	/* the first bucket starts at 0: rank 5 of 10 in (0, 0.5] -> 0.25 */
	{"first bucket", 3, {0.5, 1, INFINITY}, {10, 10, 10}, 0.5, 0.25},
	/* the rank beyond the last finite bucket: its bound */
	{"in +Inf", 3, {0.5, 1, INFINITY}, {1, 2, 10}, 0.5, 1},
	/* SGLang's real e2e histogram (tests/fixtures/serving): 1,513 of
	 * 11,228 requests under 60 s, so the median is in +Inf: 60 */
	{"sglang e2e", 16, {0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, INFINITY},
	 {0, 6, 6, 6, 6, 6, 6, 7, 10, 11, 14, 247, 486, 845, 1513, 11228}, 0.5, 60},
	/* its 1st percentile, rank 112.28 in (20, 30] holding 233 above 14:
	 * 20 + 10 x 98.28/233 */
	{"sglang e2e p1", 16, {0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, INFINITY},
	 {0, 6, 6, 6, 6, 6, 6, 7, 10, 11, 14, 247, 486, 845, 1513, 11228}, 0.01, 20 + 10 * 98.28 / 233},
	/* a count that falls with le is raised to its predecessor: rank 15
	 * in (2, 3] holding 10 above 10 (not 12 above 8): 2 + 5/10 */
	{"non-monotonic", 4, {1, 2, 3, INFINITY}, {10, 8, 20, 20}, 0.75, 2.5},
};

static void test_quantile(void **state)
{
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(q_cases); i++) {
		const struct q_case *c = &q_cases[i];
		double v = gl_increase_quantile(c->le, c->cum, c->n, c->q);
		if (fabs(v - c->want) > 1e-9)
			fail_msg("%s: %.12g, want %.12g", c->what, v, c->want);
	}
	/* no observation, no +Inf, one bucket: unknown */
	assert_true(isnan(gl_increase_quantile((double[]){1, INFINITY}, (double[]){0, 0}, 2, 0.5)));
	assert_true(isnan(gl_increase_quantile((double[]){1, 2}, (double[]){1, 2}, 2, 0.5)));
	assert_true(isnan(gl_increase_quantile((double[]){INFINITY}, (double[]){2}, 1, 0.5)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequence),	cmocka_unit_test(test_backwards_detail),
		cmocka_unit_test(test_new_series),	cmocka_unit_test(test_counter_appears),
		cmocka_unit_test(test_quantile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
