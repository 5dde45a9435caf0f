/* Without any capacity data (no node inventory, no exporter: only
 * tests/fixtures/review/sacct_held.txt's job) the fleet's idle is unknown:
 * /v1/chargeback says null and capacity_known false, at the root as in the
 * steps and as /v1/idle does, instead of totals.idle_gpu_seconds 0 under
 * capacity_known true. Real binary over real HTTP, real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_idle_unknown", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_held.txt"), NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void test_no_capacity_no_idle_figure(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10", 200), *t, *st;
	assert_non_null(j);
	t = cJSON_GetObjectItem(j, "totals");
	/* job 401: one a100 for an hour */
	assert_int_equal((long long)cJSON_GetObjectItem(t, "allocated_gpu_seconds")->valuedouble, 3600);
	assert_int_equal((long long)cJSON_GetObjectItem(t, "cost_micros")->valuedouble, 2500000);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(t, "idle_gpu_seconds")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(t, "idle_micros")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "capacity_known")));
	st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "idle"), "gpu_seconds")));
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10", 200);
	assert_non_null(j);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "capacity_known")));
	cJSON_Delete(j);
}

/* Response header name of r must be want. */
static void expect_header(const struct gl_test_http *r, const char *name, const char *want)
{
	char v[64];
	if (!gl_test_header(r, name, v, sizeof v))
		fail_msg("no %s header:\n%s", name, r->headers);
	if (strcmp(v, want))
		fail_msg("%s: %s, want %s", name, v, want);
}

static void test_no_capacity_csv_says_so(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv t;

	/* the CSV has no __idle__ row, which alone could not tell unknown idle
	 * from a table that leaves idle out; the headers say unknown */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/chargeback?window=2026-10&format=csv", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_null(strstr(r.body, "__idle__"));
	expect_header(&r, "X-Capacity-Known", "false");
	expect_header(&r, "X-Capacity-Steps-Known", "0");
	expect_header(&r, "X-Capacity-Days-Known", "0");
	expect_header(&r, "X-Capacity-Days", "31");
	gl_test_http_fini(&r);
	/* no unallocated rows: unknown, not an idle-free fleet */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/idle?window=2026-10&format=csv&table=unallocated", NULL, 0,
				      NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	assert_int_equal(t.nrows, 1);
	gl_test_csv_free(&t);
	expect_header(&r, "X-Capacity-Known", "false");
	expect_header(&r, "X-Capacity-Days-Known", "0");
	expect_header(&r, "X-Capacity-Days", "31");
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_capacity_no_idle_figure),
		cmocka_unit_test(test_no_capacity_csv_says_so),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
