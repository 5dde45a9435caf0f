/* Which rolled-up days a poll makes stale (sql/061, sql/062), on a real
 * PostgreSQL: a poll rewrites every running job it lists (Elapsed grows)
 * and moves its source's watermark; only the days whose figures can change
 * may lose their usage_daily_built row. Before, every poll made stale every
 * day from the oldest running job's start on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D0 1792540800LL /* 2026-10-21T00:00:00Z: the job starts, the first built day */
#define NDAYS 10        /* days 21 .. 30 October built */

static char g_dsn[512];
static PGconn *g_c;

static void exec(const char *sql)
{
	PGresult *r = PQexec(g_c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(g_c));
	PQclear(r);
}

static long long built(void)
{
	return gl_test_qint(g_c, "SELECT count(*) FROM usage_daily_built");
}

/* every day of the job built again, and the watermark at 30 Oct 12:00 */
static void build_all(void)
{
	char sql[256];
	exec("DELETE FROM usage_daily_built");
	snprintf(sql, sizeof sql,
		 "INSERT INTO usage_daily_built (day) SELECT generate_series(to_timestamp(%lld) AT TIME ZONE 'UTC',"
		 " to_timestamp(%lld) AT TIME ZONE 'UTC', interval '1 day')::date",
		 D0, D0 + (NDAYS - 1) * 86400LL);
	exec(sql);
	assert_int_equal(built(), NDAYS);
}

static int setup(void **state)
{
	char sql[512];
	if (gl_test_db_fresh("gl_test_observed_stale", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	exec("INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm')");
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, account, state, start_at, elapsed_s, gpu_micro, gpu_type)"
		 " SELECT cluster_id, 'db:1', '1', 'teama', 'RUNNING', to_timestamp(%lld), 3600, 1000000, 'a100'"
		 " FROM clusters WHERE name = 'c1'",
		 D0 + 3600);
	exec(sql);
	snprintf(sql, sizeof sql,
		 "INSERT INTO ingest_state (source, cluster_id, watermark) SELECT 'sacct', cluster_id, to_timestamp(%lld)"
		 " FROM clusters WHERE name = 'c1'",
		 D0 + (NDAYS - 1) * 86400LL + 43200);
	exec(sql);
	return 0;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

/* what a poll writes into a running job it lists again: a longer Elapsed */
static void test_elapsed_alone_stales_nothing(void **state)
{
	build_all();
	exec("UPDATE jobs SET elapsed_s = elapsed_s + 300, updated_at = now() WHERE job_key = 'db:1'");
	assert_int_equal(built(), NDAYS); /* was 0: all ten days */
}

/* the poll's watermark moving five minutes, inside the last built day */
static void test_watermark_stales_between_old_and_new(void **state)
{
	char sql[256];
	build_all();
	snprintf(sql, sizeof sql, "UPDATE ingest_state SET watermark = watermark + interval '5 minutes'");
	exec(sql);
	assert_int_equal(built(), NDAYS - 1);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM usage_daily_built WHERE day = (to_timestamp(%lld) AT TIME ZONE 'UTC')::date",
		 D0 + (NDAYS - 1) * 86400LL);
	assert_int_equal(gl_test_qint(g_c, sql), 0);
}

/* a saved file seen later: the days between the two seen times */
static void test_last_seen_stales_between(void **state)
{
	char sql[256];
	snprintf(sql, sizeof sql, "UPDATE jobs SET last_seen_at = to_timestamp(%lld)", D0 + 2 * 86400LL + 100);
	exec(sql);
	build_all();
	snprintf(sql, sizeof sql, "UPDATE jobs SET last_seen_at = to_timestamp(%lld)", D0 + 4 * 86400LL + 100);
	exec(sql);
	assert_int_equal(built(), NDAYS - 3); /* 23, 24 and 25 October */
}

/* a shared GPU's pod whose shares alone change (a kube re-ingest): its
 * held share (usage_daily.held), or its billed micro-GPUs within one
 * milli-GPU (gpu_milli, derived, stays): every day of the job */
static void test_share_change_stales_its_days(void **state)
{
	build_all();
	exec("UPDATE jobs SET phys_micro = 500000");
	assert_int_equal(built(), 0);
	build_all();
	exec("UPDATE jobs SET gpu_micro = gpu_micro - 1"); /* 999,999: gpu_milli is still 1,000 */
	assert_int_equal(gl_test_qint(g_c, "SELECT gpu_milli FROM jobs"), 1000);
	assert_int_equal(built(), 0);
}

/* what the rollup reads: every day of the job, as before */
static void test_accounting_change_stales_its_days(void **state)
{
	build_all();
	exec("UPDATE jobs SET account = 'teamb'");
	assert_int_equal(built(), 0);
	build_all();
	exec("UPDATE jobs SET end_at = start_at + interval '2 days', state = 'COMPLETED'");
	assert_int_equal(built(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elapsed_alone_stales_nothing),
		cmocka_unit_test(test_watermark_stales_between_old_and_new),
		cmocka_unit_test(test_last_seen_stales_between),
		cmocka_unit_test(test_share_change_stales_its_days),
		cmocka_unit_test(test_accounting_change_stales_its_days),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
