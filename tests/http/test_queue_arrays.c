/* Pending job arrays in /v1/queue over real HTTP: a pending array row
 * (`7000_[1-100]`) is one sacct line that stands for every task not yet
 * started, so pending demand counts its tasks and their GPUs; a range list
 * sacct cut short ("...") gives a lower bound, flagged. Expected figures
 * are counted by hand from tests/fixtures/ingest/testbed_array_pending.txt
 * (see its README entry). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;
static PGconn *g_c;

static int setup(void **state)
{
	char fields[1024];
	struct gl_test_out o;
	if (gl_test_db_fresh("gl_test_queue_arrays", g_dsn, sizeof g_dsn) || gl_test_sacct_fields(fields, sizeof fields))
		return -1;
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file",
			gl_test_fixture("tests/fixtures/ingest/testbed_array_pending.txt"), "--fields", fields, NULL) ||
	    o.status != 0) {
		fprintf(stderr, "ingest: %s\n", o.err);
		gl_test_out_fini(&o);
		return -1;
	}
	gl_test_out_fini(&o);
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	gl_test_daemon_stop(&g_d);
	PQfinish(g_c);
	return 0;
}

static void test_rows_carry_their_tasks(void **state)
{
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(job_id || '=' || coalesce(array_tasks::text, '-') || '/' ||"
					      " array_tasks_partial, ' ' ORDER BY job_key) FROM jobs"),
			    "2=-/false 7000_[1-100]=100/false 7001_[1-3,5,7...=5/true");
}

static void test_pending_demand_counts_tasks(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/queue?aggregate=cluster", 200), *p, *it;
	assert_non_null(j);
	p = cJSON_GetObjectItem(j, "pending");
	assert_int_equal(cJSON_GetArraySize(p), 1);
	it = cJSON_GetArrayItem(p, 0);
	assert_string_equal(cJSON_GetObjectItem(it, "key")->valuestring, "testgpu");
	/* 100 + at least 5 + 1 jobs; 100 x 1 + 5 x 2 + 1 GPUs */
	assert_int_equal((int)cJSON_GetObjectItem(it, "jobs")->valuedouble, 106);
	assert_int_equal((int)cJSON_GetObjectItem(it, "gpus_requested")->valuedouble, 111);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(it, "lower_bound")));
	cJSON_Delete(j);

	/* by GPUs per job: only the cut list is a lower bound */
	j = gl_test_get_json(g_d.port, "/v1/queue?aggregate=gpus", 200);
	assert_non_null(j);
	p = cJSON_GetObjectItem(j, "pending");
	assert_int_equal(cJSON_GetArraySize(p), 2);
	it = cJSON_GetArrayItem(p, 0); /* "1": the sweep and job 2 */
	assert_string_equal(cJSON_GetObjectItem(it, "key")->valuestring, "1");
	assert_int_equal((int)cJSON_GetObjectItem(it, "jobs")->valuedouble, 101);
	assert_int_equal((int)cJSON_GetObjectItem(it, "gpus_requested")->valuedouble, 101);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(it, "lower_bound")));
	it = cJSON_GetArrayItem(p, 1); /* "2": the cut array */
	assert_string_equal(cJSON_GetObjectItem(it, "key")->valuestring, "2");
	assert_int_equal((int)cJSON_GetObjectItem(it, "jobs")->valuedouble, 5);
	assert_int_equal((int)cJSON_GetObjectItem(it, "gpus_requested")->valuedouble, 10);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(it, "lower_bound")));
	cJSON_Delete(j);
}

/* The forecast's demand history reads the same rows: the day of the
 * submits holds 111 GPUs of demand. */
static void test_forecast_demand_counts_tasks(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/forecast?metric=demand_gpus&aggregate=cluster&window=2026-11-22,2026-11-23",
				    200),
	      *s, *h;
	assert_non_null(j);
	s = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "series"), 0);
	assert_non_null(s);
	assert_string_equal(cJSON_GetObjectItem(s, "key")->valuestring, "testgpu");
	h = cJSON_GetObjectItem(s, "history");
	assert_int_equal(cJSON_GetArraySize(h), 1);
	assert_true(fabs(cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "value")->valuedouble - 111.0) < 1e-9);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_carry_their_tasks),
		cmocka_unit_test(test_pending_demand_counts_tasks),
		cmocka_unit_test(test_forecast_demand_counts_tasks),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
