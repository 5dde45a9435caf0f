/* Budget month-end forecasts on a real database (issue 12): an owner with
 * eight weeks of a weekday-only pattern is forecast by the forecaster, so
 * the weekends left in the month add nothing and the forecast is the month
 * the pattern gives (worked out here day by day); an owner with five days of
 * history gets the linear forecast and says so; a closed month's forecast
 * is its spend. now is a parameter of gl_budget_status, so the month is
 * fixed: October 2026, now = Thursday 15 October 12:00 UTC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/budget.h"
#include "gl/config.h"
#include "gl/costing.h"
#include "store/db_int.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OCT1 1790812800LL  /* 2026-10-01T00:00:00Z, a Thursday */
#define SEP1 1788220800LL  /* 2026-09-01 */
#define NOV1 1793491200LL  /* 2026-11-01 */
#define AUG1 1785542400LL  /* 2026-08-01 */
#define NOW (OCT1 + 14 * 86400 + 12 * 3600)
#define DAY_MICROS 240000000LL /* 4 GPUs x 24 h x 2.50 */

static char g_dsn[512];
static PGconn *g_c;
static struct gl_config g_cfg;

static const char yaml[] = "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n"
			   "owners:\n  - match: account\n    value: teama\n    team: vision\n"
			   "  - match: account\n    value: teamb\n    team: language\n"
			   "  - match: account\n    value: teamc\n    team: speech\n"
			   "budgets:\n  - owner: vision\n    amount: \"6000\"\n"
			   "  - owner: language\n    amount: \"100\"\n"
			   "  - owner: speech\n    amount: \"1000\"\n";

static int weekday(long long t) /* 0 Monday .. 6 Sunday */
{
	return (int)(((t / 86400) + 3) % 7);
}

static int setup(void **state)
{
	struct gl_err err = {0};
	struct gl_costing_summary sum;
	char sql[2048];
	PGresult *r;
	if (gl_test_db_fresh("gl_test_budget", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK || gl_config_load_buf(&g_cfg, "budget.yaml", yaml, strlen(yaml), &err) ||
	    gl_costing_load(gl_db_store(g_c), &g_cfg, "test", &sum, &err)) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return -1;
	}
	/* vision: 4 A100s for every whole weekday from 1 August to 14 October,
	 * and today until now; language: 1 GPU for 10 h on 10..14 October */
	snprintf(sql, sizeof sql,
		 "INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm');"
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		 " end_at, elapsed_s, gpu_micro, gpu_type)"
		 " SELECT 1, 'v' || d, 'v' || d, 'u1', 'teama', 'gpu', 'COMPLETED', to_timestamp(d), to_timestamp(d),"
		 " to_timestamp(least(d + 86400, %lld)), least(86400, %lld - d), 4000000, 'a100'"
		 " FROM generate_series(%lld::bigint, %lld::bigint, 86400) d"
		 " WHERE extract(isodow FROM to_timestamp(d) AT TIME ZONE 'UTC') < 6;"
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		 " end_at, elapsed_s, gpu_micro, gpu_type)"
		 " SELECT 1, 'l' || d, 'l' || d, 'u2', 'teamb', 'gpu', 'COMPLETED', to_timestamp(d), to_timestamp(d),"
		 " to_timestamp(d + 36000), 36000, 1000000, 'a100'"
		 " FROM generate_series(%lld::bigint, %lld::bigint, 86400) d;"
		 /* speech: 1 GPU all day from 28 September to 14 October */
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		 " end_at, elapsed_s, gpu_micro, gpu_type)"
		 " SELECT 1, 's' || d, 's' || d, 'u3', 'teamc', 'gpu', 'COMPLETED', to_timestamp(d), to_timestamp(d),"
		 " to_timestamp(d + 86400), 86400, 1000000, 'a100'"
		 " FROM generate_series(%lld::bigint, %lld::bigint, 86400) d",
		 NOW, NOW, AUG1, OCT1 + 14 * 86400, OCT1 + 9 * 86400, OCT1 + 13 * 86400, OCT1 - 3 * 86400, OCT1 + 13 * 86400);
	r = PQexec(g_c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		fprintf(stderr, "setup: %s\n", PQerrorMessage(g_c));
		PQclear(r);
		return -1;
	}
	PQclear(r);
	return 0;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	gl_config_fini(&g_cfg);
	return 0;
}

static const struct gl_budget_line *line_of(const struct gl_budget_line *l, size_t n, const char *owner)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].owner, owner))
			return &l[i];
	fail_msg("no budget line for %s", owner);
	return NULL;
}

static void test_weekly_pattern_is_forecast_not_extrapolated(void **state)
{
	struct gl_budget_line lines[4];
	struct gl_err err = {0};
	const struct gl_budget_line *v;
	long long want_spend = 0, want_month = 0, linear;
	size_t n;
	assert_int_equal(gl_budget_status(gl_db_store(g_c), &g_cfg, OCT1, NOW, lines, 4, &n, &err), 0);
	assert_int_equal(n, 3);
	v = line_of(lines, n, "vision");
	for (long long d = OCT1; d < NOV1; d += 86400) {
		if (weekday(d) >= 5)
			continue;
		want_month += DAY_MICROS;
		if (d + 86400 <= NOW)
			want_spend += DAY_MICROS;
		else if (d < NOW)
			want_spend += DAY_MICROS / 2;
	}
	assert_int_equal(v->spend_micros, want_spend);
	assert_int_equal(v->budget_micros, 6000000000LL);
	/* 22 weekdays: the pattern carries on to the end of the month */
	assert_int_equal(want_month, 22 * DAY_MICROS);
	assert_true(v->forecast_micros >= want_month - 1 && v->forecast_micros <= want_month + 1);
	assert_string_not_equal(v->method, "linear");
	assert_string_not_equal(v->method, "actual");
	/* its accuracy comes with it: the weekly pattern is exact, so a method
	 * with zero backtest error exists (the weekly seasonal naive) and no
	 * method with any error may be chosen over it */
	assert_true(v->origins >= 7);
	assert_true(v->wape == 0.0);
	assert_true(v->mase == 0.0);
	/* what the linear forecast would have said: well off */
	linear = want_spend * 31 * 86400 / (NOW - OCT1);
	assert_true(linear > want_month + 100000000LL);
}

static void test_short_history_is_linear(void **state)
{
	struct gl_budget_line lines[4];
	struct gl_err err = {0};
	const struct gl_budget_line *l;
	size_t n;
	assert_int_equal(gl_budget_status(gl_db_store(g_c), &g_cfg, OCT1, NOW, lines, 4, &n, &err), 0);
	l = line_of(lines, n, "language");
	/* 5 days x 10 GPU-hours x 2.50 */
	assert_int_equal(l->spend_micros, 125000000LL);
	assert_string_equal(l->method, "linear");
	assert_int_equal(l->origins, 0); /* no backtest behind a linear forecast */
	/* 125 x 31 days / 14.5 days = 267.2413793..., half up in micro-units */
	assert_int_equal(l->forecast_micros, 267241379LL);
}

static void test_forecast_short_of_month_end_is_linear(void **state)
{
	/* 17 days of spend: the forecaster backtests them 9 days ahead at most,
	 * not the 17 to the month's end; the days it does not answer must not
	 * count as no spend: the linear forecast, said so */
	struct gl_budget_line lines[4];
	struct gl_err err = {0};
	const struct gl_budget_line *l;
	size_t n;
	assert_int_equal(gl_budget_status(gl_db_store(g_c), &g_cfg, OCT1, NOW, lines, 4, &n, &err), 0);
	l = line_of(lines, n, "speech");
	/* 14 days of October x 24 GPU-hours x 2.50 */
	assert_int_equal(l->spend_micros, 840000000LL);
	assert_string_equal(l->method, "linear");
	/* 840 x 31 days / 14.5 days = 1795.8620689..., half up in micro-units */
	assert_int_equal(l->forecast_micros, 1795862069LL);
}

static void test_closed_month_is_actual(void **state)
{
	struct gl_budget_line lines[4];
	struct gl_err err = {0};
	const struct gl_budget_line *v;
	long long want = 0;
	size_t n;
	assert_int_equal(gl_budget_status(gl_db_store(g_c), &g_cfg, SEP1, NOW, lines, 4, &n, &err), 0);
	v = line_of(lines, n, "vision");
	for (long long d = SEP1; d < OCT1; d += 86400)
		want += weekday(d) < 5 ? DAY_MICROS : 0;
	assert_int_equal(v->spend_micros, want);
	assert_int_equal(v->forecast_micros, want);
	assert_string_equal(v->method, "actual");
	assert_int_equal(v->origins, 0);
}

static void test_forecast_daily_arithmetic(void **state)
{
	/* 10 spent; today half over at 4 a day, then 2 days at 6: 10 + 2 + 12 */
	const double d[] = {4e6, 6e6, 6e6, 99e6};
	(void)state;
	assert_int_equal(gl_budget_forecast_daily(10000000, 86400 * 10 + 43200, 86400 * 13, d, 4), 24000000);
	/* the month is over: the spend */
	assert_int_equal(gl_budget_forecast_daily(7, 86400 * 13, 86400 * 13, d, 4), 7);
	/* a negative forecast adds nothing */
	{
		const double neg[] = {-5e6, -1e6};
		assert_int_equal(gl_budget_forecast_daily(3, 86400 * 10, 86400 * 12, neg, 2), 3);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weekly_pattern_is_forecast_not_extrapolated),
		cmocka_unit_test(test_short_history_is_linear), cmocka_unit_test(test_forecast_short_of_month_end_is_linear),
		cmocka_unit_test(test_closed_month_is_actual),
		cmocka_unit_test(test_forecast_daily_arithmetic),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
