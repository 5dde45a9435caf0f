/* /v1/idle and the showback report price allocated-idle time at the idle
 * jobs' own prices, across a price change inside a job and across an
 * owner's jobs of different prices: tests/fixtures/review's job 201 holds 2
 * a100 from 11:00 to 13:00 on 15 October 2026, idle all the time, while
 * a100 goes from 2.50 to 3.00 an hour at 12:00; job 202 of the same owner
 * holds an h100 without exporter data. Real binary over real
 * HTTP, real PostgreSQL, the fixture files in sacct and dcgm-exporter
 * formats; the expected figures are worked out below from those files. */
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

#define FX "tests/fixtures/review/"

static char g_dsn[512];
static struct gl_test_daemon g_d;

static const char config_yaml[] =
	"rates:\n"
	"  - model: a100\n    per_gpu_hour: \"2.50\"\n    to: \"2026-10-15T12:00:00Z\"\n"
	"  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: \"2026-10-15T12:00:00Z\"\n"
	"  - model: h100\n    per_gpu_hour: \"10.00\"\n"
	"owners:\n  - match: account\n    value: teama\n    team: vision\n";

/* Job 201's cost: 2 GPUs x 1 h at 2.50 + 2 GPUs x 1 h at 3.00. Its idle:
 * scrapes every 5 minutes from 10:55 to 12:55 with --max-gap 300; each
 * sample stands for the 300 s before it, so the samples of 11:05 to 12:55
 * (23 of them) cover 11:00-12:55 of the job on both GPUs. */
#define JOB_COST_MICROS (2 * 2500000LL + 2 * 3000000LL)
#define JOB_ALLOC_S (2 * 7200LL)
#define JOB_IDLE_S (2 * 23 * 300LL)

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_idle_price", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture(FX "sacct_price_change.txt"), NULL))
		return -1;
	for (int k = 0; k <= 24; k++) {
		char at[32];
		int m = 55 + 5 * k; /* minutes after 10:00 */
		snprintf(at, sizeof at, "2026-10-15T%02d:%02d:00Z", 10 + m / 60, m % 60);
		if (gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", "c1", "--file",
				gl_test_fixture(FX "dcgm_n1_job201.prom"), "--at", at, "--max-gap", "300", NULL))
			return -1;
	}
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void test_idle_cost_across_a_price_change(void **state)
{
	/* cost x idle / allocated, rounded half up once */
	const long long want = (JOB_COST_MICROS * JOB_IDLE_S * 2 + JOB_ALLOC_S) / (JOB_ALLOC_S * 2);
	cJSON *j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10", 200), *top, *own;
	struct gl_test_http r;
	struct gl_test_csv t;
	char want_s[32];

	assert_non_null(j);
	top = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "top_jobs"), 0);
	own = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "allocated_idle"), 0);
	assert_non_null(top);
	assert_non_null(own);
	assert_string_equal(cJSON_GetObjectItem(top, "job_id")->valuestring, "201");
	assert_int_equal(gl_test_jnum(top, "idle_gpu_seconds"), JOB_IDLE_S);
	/* priced at 2.50 all through (the rate at the window's clipped start)
	 * it was 9,583,333 */
	assert_int_equal(gl_test_jnum(top, "idle_cost_micros"), want);
	assert_string_equal(cJSON_GetObjectItem(own, "key")->valuestring, "vision");
	assert_int_equal(gl_test_jnum(own, "idle_cost_micros"), want);
	cJSON_Delete(j);

	/* the showback report's top idle job says the same */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&table=top_idle", NULL, 0,
				      NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	assert_true(t.nrows == 2);
	snprintf(want_s, sizeof want_s, "%lld.%02lld", (want + 5000) / 1000000, (want + 5000) / 10000 % 100);
	assert_string_equal(t.cell[1][gl_test_csv_col(&t, "job_id")], "201");
	assert_string_equal(t.cell[1][gl_test_csv_col(&t, "idle_cost")], want_s);
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);
}

/* The showback owners table: vision's allocated-idle cost is its idle
 * job's (job 201 at a100 prices); its h100 job 202 (2 h at 10.00, no
 * exporter data) costs more but was never seen idle. Priced at vision's
 * average (31.00 x 13,800 / 21,600 GPU-seconds) it was 19.81. */
static void test_owner_idle_cost_at_its_jobs_prices(void **state)
{
	const long long want = (JOB_COST_MICROS * JOB_IDLE_S * 2 + JOB_ALLOC_S) / (JOB_ALLOC_S * 2);
	cJSON *j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10", 200), *own;
	struct gl_test_http r;
	struct gl_test_csv t;
	char want_s[32];
	size_t row = 0;

	assert_non_null(j);
	own = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "allocated_idle"), 0);
	assert_non_null(own);
	assert_int_equal(gl_test_jnum(own, "idle_cost_micros"), want);
	cJSON_Delete(j);

	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&table=owners", NULL, 0, NULL,
				      &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	for (size_t i = 1; i < t.nrows; i++)
		if (!strcmp(t.cell[i][gl_test_csv_col(&t, "owner")], "vision"))
			row = i;
	assert_true(row > 0);
	/* 2 x 1 h at 2.50 + 2 x 1 h at 3.00 + 1 x 2 h at 10.00 */
	assert_string_equal(t.cell[row][gl_test_csv_col(&t, "cost")], "31.00");
	snprintf(want_s, sizeof want_s, "%lld.%02lld", (want + 5000) / 1000000, (want + 5000) / 10000 % 100);
	assert_string_equal(t.cell[row][gl_test_csv_col(&t, "allocated_idle_cost")], want_s);
	assert_string_equal(t.cell[row][gl_test_csv_col(&t, "busy_cost")], "0.00");
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_cost_across_a_price_change),
		cmocka_unit_test(test_owner_idle_cost_at_its_jobs_prices),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
