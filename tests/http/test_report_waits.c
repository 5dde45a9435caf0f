/* The showback report's queue waits are /v1/queue's (FORMATS.md: queue wait
 * = Start - Submit; Eligible - Submit is the held part): job 401 of
 * tests/fixtures/review/sacct_held.txt was submitted at 08:00, held until
 * 09:30 and started at 10:00, so it waited 7,200 s. Real binary over real
 * HTTP, real PostgreSQL. */
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
	if (gl_test_db_fresh("gl_test_report_waits", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_held.txt"), NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void test_report_waits_are_the_queue_s(void **state)
{
	const long long wait = 2 * 3600; /* 10:00 - 08:00 */
	cJSON *j = gl_test_get_json(g_d.port, "/v1/queue?window=2026-10&aggregate=partition", 200), *it;
	struct gl_test_http r;
	struct gl_test_csv t;
	char want[32];
	int rows = 0;

	assert_non_null(j);
	it = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "items"), 0);
	assert_non_null(it);
	assert_string_equal(cJSON_GetObjectItem(it, "key")->valuestring, "p1");
	assert_int_equal((long long)cJSON_GetObjectItem(it, "wait_p50_s")->valuedouble, wait);
	assert_int_equal((long long)cJSON_GetObjectItem(it, "eligible_wait_p50_s")->valuedouble, 5400);
	cJSON_Delete(j);

	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&table=waits", NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	snprintf(want, sizeof want, "%lld", wait);
	for (size_t i = 1; i < t.nrows; i++) {
		/* the partition row and the owner row: one job each; start -
		 * eligible (1,800) was reported before */
		assert_string_equal(t.cell[i][gl_test_csv_col(&t, "jobs")], "1");
		assert_string_equal(t.cell[i][gl_test_csv_col(&t, "wait_p50_s")], want);
		assert_string_equal(t.cell[i][gl_test_csv_col(&t, "wait_p99_s")], want);
		rows++;
	}
	assert_int_equal(rows, 2);
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_waits_are_the_queue_s),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
