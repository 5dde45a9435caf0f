/* Prices that change inside the jobs' time, read one step at a time (a
 * day or month window, and each day of the rollup): a job's piece at the
 * old price before the change is nothing in a window after it. It was
 * booked as a negative part (p1 < p0 of the piece clipped to the step),
 * taking the old price an hour off the window: 2017-11-21 cost 2.00 less
 * per GPU-hour of the jobs that began before the 20th. Real Philly jobs
 * (tests/fixtures/philly) through `ingest sacct`, real PostgreSQL, the real
 * binary; the oracle is the window's GPU-seconds times its one price. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static char g_dsn[512];

/* 2.00 an hour, 3.00 from 20 November */
static const char cfg[] = "rates:\n  - model: '*'\n    per_gpu_hour: \"2.00\"\n    to: 2017-11-20\n"
			  "  - model: '*'\n    per_gpu_hour: \"3.00\"\n    from: 2017-11-20\n";

/* The window's total is its GPU-seconds at price per GPU-hour (to the
 * micro-unit's rounding). */
static void all_at(int port, const char *window, int price)
{
	char path[200];
	cJSON *j, *t;
	double gs, cost;
	snprintf(path, sizeof path, "/v1/chargeback?window=%s&aggregate=team", window);
	j = gl_test_get_json(port, path, 200);
	assert_non_null(j);
	t = cJSON_GetObjectItem(j, "totals");
	gs = cJSON_GetObjectItem(t, "gpu_seconds")->valuedouble;
	cost = cJSON_GetObjectItem(t, "total_micros")->valuedouble;
	if (!(gs > 0 && cost > gs * price * 1e6 / 3600 - 1 && cost < gs * price * 1e6 / 3600 + 1))
		fail_msg("%s: %.0f GPU-seconds cost %.0f micros, want them at %d.00 an hour", window, gs, cost, price);
	cJSON_Delete(j);
}

static long long q(const char *sql)
{
	return gl_test_qint_dsn(g_dsn, sql);
}

static void test_one_step_rate_split(void **state)
{
	struct gl_test_daemon d;
	char path[PATH_MAX];
	FILE *f;

	(void)state;
	snprintf(path, sizeof path, "%s/rate-split.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(cfg, f);
	fclose(f);
	assert_int_equal(gl_test_cli(g_dsn, "rates", "load", path, NULL), 0);
	unlink(path);
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL}), 0);
	all_at(d.port, "2017-11-21", 3);
	all_at(d.port, "2017-12", 3);
	all_at(d.port, "2017-11-19", 2);
	/* a day of the rollup is such a step */
	assert_int_equal(gl_test_cli(g_dsn, "rollup", "--days", "400", NULL), 0);
	assert_true(q("SELECT count(*) FROM usage_daily_built") > 60);
	all_at(d.port, "2017-11-21", 3);
	all_at(d.port, "2017-12", 3);
	assert_int_equal(q("SELECT count(*) FROM usage_daily WHERE priced < 0 OR alloc < 0"), 0);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static int setup(void **state)
{
	return gl_test_philly_db("gl_test_rate_split", g_dsn, sizeof g_dsn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_step_rate_split),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
