/* Idle capacity of a GPU model no rate prices is named as unpriced, as
 * allocated GPU-time of such a model is, instead of costing a silent 0 in
 * __idle__ and in the report's unallocated idle cost. c1 (6 a100, priced)
 * runs tests/fixtures/review/sacct_share.txt's two jobs; k1 (2 GPUs
 * labelled NVIDIA-A100-SXM4-80GB, which an alias makes model a100_80g, no
 * rate) runs nothing: fixtures from
 * tests/fixtures/conservation. Real binary over real HTTP, real PostgreSQL. */
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
	if (gl_test_db_fresh("gl_test_unpriced_idle", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-09-01T00:00:00Z", NULL) ||
	    /* the same inventory seen again on 1 November: October's capacity is firm */
	    gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-11-01T00:00:00Z", NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "kube-nodes", "--cluster", "k1", "--file",
			gl_test_fixture("tests/fixtures/conservation/kube_nodes.json"), "--at", "2026-10-01T00:00:00Z", NULL) ||
	    gl_test_cli(g_dsn, "ingest", "kube-nodes", "--cluster", "k1", "--file",
			gl_test_fixture("tests/fixtures/conservation/kube_nodes.json"), "--at", "2026-11-01T00:00:00Z", NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_share.txt"), NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, "rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"
				    "gpu_models:\n  - match: NVIDIA-A100-SXM4-80GB\n    model: a100_80g\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void test_unpriced_idle_is_named(void **state)
{
	/* 6 October: c1's 6 a100 less 25,200 GPU-s allocated, at 3.60 an hour
	 * (1,000 micros a GPU-second); k1's 2 GPUs all day, no rate */
	const long long c1_idle = 6 * 86400LL - 25200, k1_idle = 2 * 86400LL;
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-06", 200), *idle, *um;
	struct gl_test_http r;
	assert_non_null(j);
	idle = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "idle");
	assert_int_equal((long long)cJSON_GetObjectItem(idle, "gpu_seconds")->valuedouble, c1_idle + k1_idle);
	assert_int_equal((long long)cJSON_GetObjectItem(idle, "total_micros")->valuedouble, c1_idle * 1000);
	um = cJSON_GetObjectItem(j, "unpriced_models");
	/* the allocated GPU-time is all priced: only the idle model is named */
	assert_int_equal(cJSON_GetArraySize(um), 1);
	assert_string_equal(cJSON_GetArrayItem(um, 0)->valuestring, "a100_80g");
	cJSON_Delete(j);
	/* so does the report's partial-data table */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&table=partial", NULL, 0, NULL,
				      &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "unpriced GPU models"));
	assert_non_null(strstr(r.body, "a100_80g"));
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unpriced_idle_is_named),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
