/* GET /v1/runs?aggregate= for a built month whose runs have exporter
 * data: a group's busy, idle and observed seconds are float sums, and
 * floats added in another order can differ in the last bit, so the built
 * aggregate must add its runs in the list's order, as the live answer
 * does, whatever plan PostgreSQL picks for it.
 *
 * The jobs are gl_test_synth_runs' month (400 jobs, October 2026, every
 * 4 of them one user's) with no runs[] rule: every job a run, 4 runs a
 * user, the users' runs interleaved in the list. Each job has one
 * exporter bucket of busy and idle GPU-seconds with many mantissa bits
 * (k / 7 and k / 11). The database sorts for its groupings
 * (enable_hashagg off, as a large month past work_mem is planned): the
 * sort puts a user's runs in its own order, where a hash aggregate reads
 * them in the order they were written, the list's. And the list of a
 * server whose answers are bounded below its default page. */
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

#define BY_USER "/v1/runs?window=2026-10&aggregate=user"
#define BY_USER_CSV BY_USER "&format=csv"

static const char config[] = GL_TEST_SYNTH_RATES;

static char g_dsn[512], g_cfg[600];
static struct gl_test_daemon g_d;

static char *body(const char *path)
{
	char *b = gl_test_get_body(g_d.port, path, NULL, NULL);
	if (!b)
		fail_msg("GET %s failed", path);
	return b;
}

static int setup(void **state)
{
	const char *tmp = getenv("GL_TEST_TMP");
	PGconn *c;
	long long n;
	snprintf(g_cfg, sizeof g_cfg, "%s/runs-floats.yaml", tmp ? tmp : "/tmp");
	if (gl_test_write_file(g_cfg, config) || gl_test_db_fresh("gl_test_runs_floats", g_dsn, sizeof g_dsn))
		return -1;
	c = PQconnectdb(g_dsn);
	gl_test_synth_runs(c, g_dsn, 400, "2026-10-01", "31 days", 0);
	PQfinish(c);
	/* a job's bucket is the 5 minutes after its start, inside the job
	 * (every job is at least 5 minutes long) */
	n = gl_test_exec_dsn(g_dsn,
			     "SELECT gl_ensure_dcgm_partitions('2026-09-30', '2026-11-02');"
			     " INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples,"
			     "  busy_samples, nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s)"
			     " SELECT job_pk, date_bin('5 minutes', start_at, 'epoch'::timestamptz) + interval '5 minutes',"
			     "  job_pk, cluster_id, 'hpc_job', 10, 5, 0, 1.0 * (job_pk % 97) / 7 + 1.0 * (job_pk % 89) / 11,"
			     "  1.0 * (job_pk % 97) / 7, 1.0 * (job_pk % 89) / 11 FROM jobs");
	if (n < 0)
		return -1;
	/* the plan a large month gets: its groups sorted, not hashed */
	if (gl_test_exec_owner(g_dsn, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET enable_hashagg = off',"
				      " current_database()); END $$") < 0)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* The aggregate by user built is the live one, byte for byte. */
static void test_built_sums_in_list_order(void **state)
{
	static const char *const paths[] = {BY_USER, BY_USER_CSV};
	char *live[2], *b;
	struct gl_test_out o;
	for (size_t i = 0; i < 2; i++)
		live[i] = body(paths[i]);
	/* 100 users, each with exporter time: no float is 0 or null */
	assert_non_null(strstr(live[0], "\"count\":100"));
	assert_null(strstr(live[0], "\"busy_gpu_seconds\":null"));
	assert_null(strstr(live[0], "\"busy_gpu_seconds\":0,"));
	if (gl_test_run(g_dsn, NULL, &o, "--config", g_cfg, "rollup", NULL) || o.status != 0)
		fail_msg("rollup: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month_built"
						 " WHERE month = '2026-10-01' AND observed AND until_at IS NULL"),
			 1);
	/* several runs a user: a group's sum has an order */
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE month = '2026-10-01'") > 300);
	for (size_t i = 0; i < 2; i++) {
		b = body(paths[i]);
		if (strcmp(b, live[i]))
			fail_msg("%s built:\n%.800s\nlive:\n%.800s", paths[i], b, live[i]);
		free(b);
	}
	/* and it is the built month that answers */
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE runs_month SET jobs = jobs + 1") >= 0);
	b = body(BY_USER);
	assert_true(strcmp(b, live[0]) != 0);
	free(b);
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE runs_month SET jobs = jobs - 1") >= 0);
	for (size_t i = 0; i < 2; i++)
		free(live[i]);
}

/* A server whose answers are bounded below the list's default page (1000
 * runs) pages the list at its bound when no limit is asked: the first 50
 * runs and the next cursor, not every run; a larger limit is refused. */
static void test_default_page_is_the_bound(void **state)
{
	struct gl_test_daemon d = {0};
	cJSON *j;
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, GL_TEST_SYNTH_RATES "server:\n  max_answer_lines: 50\n",
					      (const char *[]){"--no-ingest", NULL}),
			 0);
	j = gl_test_get_json(d.port, "/v1/runs?window=2026-10", 200);
	assert_int_equal(gl_test_jnum(j, "count"), 50);
	assert_int_equal(gl_test_jnum(j, "next_cursor"), 49);
	cJSON_Delete(j);
	j = gl_test_get_json(d.port, "/v1/runs?window=2026-10&limit=51", 400);
	cJSON_Delete(j);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built_sums_in_list_order),
		cmocka_unit_test(test_default_page_is_the_bound),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
