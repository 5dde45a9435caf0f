/* A job whose sacct End is before its Start (tests/fixtures/review/
 * sacct_end_before_start.txt, job 300) held its GPU for no time: chargeback,
 * capacity and the job list say so and agree. Real binary over real HTTP,
 * real PostgreSQL; the figures are worked out below from the fixture files
 * (cluster c1: n1 with 4 a100, n2 with 2, from tests/fixtures/conservation). */
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

static const char config_yaml[] = "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n";

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_end_before_start", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-09-01T00:00:00Z", NULL) ||
	    /* the same inventory seen again on 1 November: October's capacity is firm */
	    gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-11-01T00:00:00Z", NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_end_before_start.txt"), NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void test_no_negative_allocation(void **state)
{
	/* 5 October: 6 GPUs x 86,400 s; job 303 holds 3 of them for an hour,
	 * job 300 none (it stored End 30 minutes before Start) */
	const long long alloc = 3 * 3600, idle = 6 * 86400LL - alloc;
	cJSON *j, *t, *it;
	int seen = 0;

	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-05&aggregate=user", 200);
	assert_non_null(j);
	t = cJSON_GetObjectItem(j, "totals");
	/* with job 300 at -1,800 GPU-seconds: 9,000 and 3.75 less 1.25 */
	assert_int_equal(gl_test_jnum(t, "allocated_gpu_seconds"), alloc);
	assert_int_equal(gl_test_jnum(t, "cost_micros"), alloc * 2500000 / 3600);
	assert_int_equal(gl_test_jnum(t, "idle_gpu_seconds"), idle);
	cJSON_Delete(j);

	j = gl_test_get_json(g_d.port, "/v1/capacity?window=2026-10-05", 200);
	assert_non_null(j);
	t = cJSON_GetObjectItem(j, "totals");
	assert_int_equal(gl_test_jnum(t, "allocated_gpu_seconds"), alloc);
	assert_int_equal(gl_test_jnum(t, "idle_gpu_seconds"), idle);
	cJSON_Delete(j);

	j = gl_test_get_json(g_d.port, "/v1/jobs?window=2026-10-05", 200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "jobs"))
	{
		if (strcmp(cJSON_GetObjectItem(it, "job_id")->valuestring, "300"))
			continue;
		seen = 1;
		assert_int_equal(gl_test_jnum(it, "gpu_seconds"), 0);
		assert_int_equal(gl_test_jnum(it, "cost_micros"), 0); /* was -1,250,000 */
	}
	assert_true(seen);
	cJSON_Delete(j);
}

/* A row stored before the ingest mended it is mended by migration 023: the
 * same day still adds up once the migration has run again over a row
 * written with its End before its Start (job 399, 10:00 - 09:30). */
static void test_migration_mends_stored_rows(void **state)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_exec_dsn(g_dsn, "INSERT INTO jobs (cluster_id, job_key, job_id, account, partition, state,"
						  " start_at, end_at, gpu_micro, gpu_type) SELECT cluster_id, 'db:3399', '399',"
						  " 'teama', 'p1', 'COMPLETED', '2026-10-05 10:00+00', '2026-10-05 09:30+00',"
						  " 2000000, 'a100' FROM clusters WHERE name = 'c1'"),
			 1);
	assert_int_equal(gl_test_exec_owner(g_dsn, "DELETE FROM schema_migrations WHERE version = 23"), 1);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "migrate", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_exec_dsn(g_dsn, "SELECT 1 FROM jobs WHERE end_at < start_at"), 0);
	test_no_negative_allocation(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_negative_allocation),
		cmocka_unit_test(test_migration_mends_stored_rows),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
