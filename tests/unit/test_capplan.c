/* Planned capacity, saturation dates and purchases (src/domain/capplan.c) on
 * hand-computed cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/capplan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY 86400LL
#define T0 (20000 * DAY) /* the first forecast day; "today" is the day before */

/* Demand rising 5 GPUs a day from 100, its 80 % band +-10 and 95 % +-20
 * (median 100 + 5k on day k); capacity from the plan. */
static void make_steps(struct gl_capplan_step *s, int n, const struct gl_capplan_change *plan, size_t np, double base)
{
	for (int k = 0; k < n; k++) {
		double m = 100 + 5.0 * k;
		s[k].start_s = T0 + k * DAY;
		s[k].end_s = s[k].start_s + DAY;
		s[k].q[0] = m - 20, s[k].q[1] = m - 10, s[k].q[2] = m, s[k].q[3] = m + 10, s[k].q[4] = m + 20;
		s[k].capacity = gl_capplan_capacity(base, plan, np, "c1", "a100", T0 - DAY, s[k].start_s, s[k].end_s);
		s[k].origins = 100;
		s[k].trend = 0;
	}
}

static struct gl_capplan_change change(int64_t gpus, int64_t day_s)
{
	struct gl_capplan_change c;
	memset(&c, 0, sizeof c);
	snprintf(c.cluster, sizeof c.cluster, "c1");
	snprintf(c.gpu_model, sizeof c.gpu_model, "a100");
	c.gpus = gpus;
	c.day_s = day_s;
	return c;
}

static void test_step_plan_moves_saturation(void **state)
{
	/* 150 GPUs: the median reaches them on day 10 (P = 0.5 there); P(demand
	 * >= 150) reaches 0.8 where 150 is the 20 % quantile, m - 10 + 0.25 * 10
	 * = m - 7.5, so m >= 157.5: day 12 (11.5 rounded up). 20 GPUs more from
	 * day 5 put both 20 / 5 = 4 days later: days 14 and 16. 30 retired from
	 * day 3 leave 120: P = 0.5 on day 4. */
	struct gl_capplan_step s[30];
	struct gl_capplan_change add = change(20, T0 + 5 * DAY), ret = change(-30, T0 + 3 * DAY);
	(void)state;
	make_steps(s, 30, NULL, 0, 150);
	assert_int_equal(gl_capplan_first_saturated(s, 30, 0.5), 10);
	assert_int_equal(gl_capplan_first_saturated(s, 30, 0.8), 12);
	assert_true(fabs(gl_capplan_p_saturation(&s[10]) - 0.5) < 1e-9);
	assert_true(gl_capplan_p_saturation(&s[9]) < 0.5);
	make_steps(s, 30, &add, 1, 150);
	assert_true(s[4].capacity == 150 && s[5].capacity == 170);
	assert_int_equal(gl_capplan_first_saturated(s, 30, 0.5), 14);
	assert_int_equal(gl_capplan_first_saturated(s, 30, 0.8), 16);
	make_steps(s, 30, &ret, 1, 150);
	assert_int_equal(gl_capplan_first_saturated(s, 30, 0.5), 4);
	/* unknown capacity: no saturation date, not "never" */
	make_steps(s, 30, NULL, 0, NAN);
	assert_true(isnan(gl_capplan_p_saturation(&s[0])));
	assert_int_equal(gl_capplan_first_saturated(s, 30, 0.5), -1);
}

static void test_level_at_capacity_is_no_date(void **state)
{
	/* A flat forecast whose median sits on capacity: P = 0.5 every week,
	 * a coin toss that noisy history turns either way, so no date. Its
	 * sigma is 20 / 2.5632 = 7.80 (the 80 % band), its median known from 90
	 * origins to 1.2533 x 7.80 / sqrt(90) = 1.031; 1.645 of those is 1.696.
	 * A week whose median is 2 above capacity (P 0.58) carries the date,
	 * one 1 above (P 0.54) does not; from 10 origins (5.36) neither does.
	 * The same P from a trend method (chosen by its backtest) is a date. */
	struct gl_capplan_step s[26];
	(void)state;
	for (int k = 0; k < 26; k++) {
		s[k].start_s = T0 + 7 * k * DAY;
		s[k].end_s = s[k].start_s + 7 * DAY;
		s[k].q[0] = 80, s[k].q[1] = 90, s[k].q[2] = 100, s[k].q[3] = 110, s[k].q[4] = 120;
		s[k].capacity = 100;
		s[k].origins = 90;
		s[k].trend = 0;
	}
	assert_true(fabs(gl_capplan_p_saturation(&s[0]) - 0.5) < 1e-9);
	assert_int_equal(gl_capplan_first_saturated(s, 26, 0.5), -1);
	s[3].capacity = 99;
	assert_int_equal(gl_capplan_first_saturated(s, 26, 0.5), -1);
	s[9].capacity = 98;
	assert_int_equal(gl_capplan_first_saturated(s, 26, 0.5), 0);
	for (int k = 0; k < 26; k++)
		s[k].origins = 10;
	assert_int_equal(gl_capplan_first_saturated(s, 26, 0.5), -1);
	for (int k = 0; k < 26; k++)
		s[k].trend = 1;
	assert_int_equal(gl_capplan_first_saturated(s, 26, 0.5), 0);
	/* a constant demand of 3 against 2 (a zero-width band): sure from
	 * the first step, at 80 % too */
	for (int k = 0; k < 26; k++) {
		s[k].q[0] = s[k].q[1] = s[k].q[2] = s[k].q[3] = s[k].q[4] = 3;
		s[k].capacity = 2;
		s[k].trend = 0;
	}
	assert_int_equal(gl_capplan_first_saturated(s, 26, 0.8), 0);
}

static void test_capacity_step_line(void **state)
{
	/* changes dated today or before are history (the inventory has them);
	 * a week with a retirement mid-week counts its least */
	struct gl_capplan_change p[3] = {change(8, T0 - DAY), change(4, T0 + 2 * DAY), change(-6, T0 + 10 * DAY)};
	(void)state;
	snprintf(p[2].gpu_model, sizeof p[2].gpu_model, "a100");
	assert_true(gl_capplan_capacity(10, p, 3, "c1", "a100", T0 - DAY, T0, T0 + DAY) == 10);
	assert_true(gl_capplan_capacity(10, p, 3, "c1", "a100", T0 - DAY, T0 + 2 * DAY, T0 + 3 * DAY) == 14);
	assert_true(gl_capplan_capacity(10, p, 3, "c1", "a100", T0 - DAY, T0 + 7 * DAY, T0 + 14 * DAY) == 8);
	assert_true(gl_capplan_capacity(10, p, 3, "c1", "h100", T0 - DAY, T0 + 7 * DAY, T0 + 14 * DAY) == 10);
	assert_true(isnan(gl_capplan_capacity(NAN, p, 3, "c1", "a100", T0 - DAY, T0, T0 + DAY)));
}

static void test_recommendation(void **state)
{
	/* P(demand >= c) < 20 % needs c above the 80 % quantile, m + 7.5 (a
	 * quarter of the way from the median to the 90 % point): 150 GPUs are
	 * short from day 9 (m + 7.5 = 152.5: 3 GPUs) and 5 more each day after;
	 * ordered 30 days before, late for days before the 30th */
	struct gl_capplan_step s[40];
	struct gl_capplan_purchase *pu;
	struct gl_err err = {0};
	size_t n, at;
	(void)state;
	make_steps(s, 40, NULL, 0, 150);
	assert_int_equal(gl_capplan_recommend(s, 40, 0.2, 30 * DAY, T0 - DAY, &pu, &n, &at, &err), 0);
	assert_int_equal(n, 31);
	assert_true(pu[0].need_by_s == T0 + 9 * DAY && pu[0].gpus == 3 && pu[0].total == 3);
	assert_true(pu[0].order_by_s == T0 - 21 * DAY && pu[0].late);
	assert_true(pu[1].need_by_s == T0 + 10 * DAY && pu[1].gpus == 5 && pu[1].total == 8);
	assert_true(pu[30].need_by_s == T0 + 39 * DAY && pu[30].total == 3 + 30 * 5 && !pu[30].late);
	free(pu);
	/* planned GPUs count: 20 more from day 5 push the first purchase to day 13 */
	{
		struct gl_capplan_change add = change(20, T0 + 5 * DAY);
		make_steps(s, 40, &add, 1, 150);
		assert_int_equal(gl_capplan_recommend(s, 40, 0.2, 30 * DAY, T0 - DAY, &pu, &n, &at, &err), 0);
		assert_true(pu[0].need_by_s == T0 + 13 * DAY && pu[0].gpus == 3);
		free(pu);
	}
	/* enough capacity: nothing to buy */
	make_steps(s, 40, NULL, 0, 1000);
	assert_int_equal(gl_capplan_recommend(s, 40, 0.2, 30 * DAY, T0 - DAY, &pu, &n, &at, &err), 0);
	assert_int_equal(n, 0);
	assert_null(pu);
	/* a demand interval not known from day 3: refused, saying where */
	make_steps(s, 40, NULL, 0, 150);
	s[3].q[0] = NAN;
	assert_int_equal(gl_capplan_recommend(s, 40, 0.2, 30 * DAY, T0 - DAY, &pu, &n, &at, &err), -GL_EINVAL);
	assert_int_equal(at, 3);
	assert_true(gl_capplan_recommend(s, 40, 0.6, 30 * DAY, T0 - DAY, &pu, &n, &at, &err) < 0);
}

static void test_parse_and_check(void **state)
{
	struct gl_capplan_change *p;
	struct gl_capplan_fleet f;
	struct gl_capplan_count present = {"c1", "a100", 8};
	char clusters[1][GL_CAPPLAN_NAME_MAX] = {"c1"}, models[2][GL_CAPPLAN_NAME_MAX] = {"a100", "h100"};
	struct gl_err err = {0};
	const char *field;
	size_t n, bad;
	(void)state;
	assert_int_equal(gl_capplan_parse("c1,h100,+64,2027-02-01;c1,a100,-8,2027-03-31", &p, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_true(p[0].gpus == 64 && p[1].gpus == -8 && !strcmp(p[1].gpu_model, "a100"));
	memset(&f, 0, sizeof f);
	f.clusters = clusters, f.n_clusters = 1, f.models = models, f.n_models = 2;
	f.present = &present, f.n_present = 1, f.today_s = T0 - DAY;
	assert_int_equal(gl_capplan_check(&f, p, n, &bad, &field, &err), 0);
	/* retiring 9 of 8: refused, naming the entry and its field */
	p[1].gpus = -9;
	assert_int_equal(gl_capplan_check(&f, p, n, &bad, &field, &err), -GL_EINVAL);
	assert_int_equal(bad, 1);
	assert_string_equal(field, "gpus");
	assert_non_null(strstr(err.msg, "retires 9 a100 GPUs in c1 on 2027-03-31, but 8 are there"));
	/* an addition on the same day comes first; one after does not count */
	p[0] = change(1, p[1].day_s);
	assert_int_equal(gl_capplan_check(&f, p, n, &bad, &field, &err), 0);
	p[0].day_s = p[1].day_s + DAY;
	assert_int_equal(gl_capplan_check(&f, p, n, &bad, &field, &err), -GL_EINVAL);
	snprintf(p[0].cluster, sizeof p[0].cluster, "c9");
	assert_int_equal(gl_capplan_check(&f, p, n, &bad, &field, &err), -GL_EINVAL);
	assert_true(bad == 0 && !strcmp(field, "cluster"));
	snprintf(p[0].cluster, sizeof p[0].cluster, "c1");
	snprintf(p[0].gpu_model, sizeof p[0].gpu_model, "h999");
	assert_int_equal(gl_capplan_check(&f, p, n, &bad, &field, &err), -GL_EINVAL);
	assert_true(bad == 0 && !strcmp(field, "gpu_model"));
	free(p);
	/* the what-if text: each mistake named */
	static const struct {
		const char *text, *want;
	} badtext[] = {
		{"c1,h100,64,2027-02-01", "entry 1: gpus: '64' is not +N (added) or -N (retired)"},
		{"c1,h100,+0,2027-02-01", "entry 1: gpus: '+0' is not 1..1000000"},
		{"c1,h100,+4,2027-02-30", "entry 1: date: '2027-02-30' is not a date"},
		{"c1,h100,+4,2027-02-01;c1,h100", "entry 2: expected CLUSTER,GPU_MODEL"},
		{"c1,h100,+4,2027-02-01;;", "empty entry"},
		{",h100,+4,2027-02-01", "entry 1: expected"},
	};
	for (size_t i = 0; i < sizeof badtext / sizeof *badtext; i++) {
		assert_int_equal(gl_capplan_parse(badtext[i].text, &p, &n, &err), -GL_EINVAL);
		if (!strstr(err.msg, badtext[i].want))
			fail_msg("'%s': '%s' lacks '%s'", badtext[i].text, err.msg, badtext[i].want);
		assert_null(p);
	}
	assert_int_equal(gl_capplan_parse("", &p, &n, &err), 0);
	assert_int_equal(n, 0);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_plan_moves_saturation), cmocka_unit_test(test_level_at_capacity_is_no_date),
		cmocka_unit_test(test_capacity_step_line),
		cmocka_unit_test(test_recommendation),
		cmocka_unit_test(test_parse_and_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
