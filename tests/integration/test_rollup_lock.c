/* The rollup lock (sql/019): ingest transactions of different clusters do
 * not wait for each other, a day build waits for every writer in flight,
 * and a write after a build makes its day stale again. Waits are bounded by
 * lock_timeout: a wait that should not happen fails the test instead of
 * hanging it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/accounting_int.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char g_dsn[512];

static PGconn *conn(void)
{
	PGconn *c = PQconnectdb(g_dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	return c;
}

static int ok(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	int good = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
	if (!good)
		fprintf(stderr, "%s: %s", sql, PQerrorMessage(c));
	PQclear(r);
	return good;
}

static void test_writers_share_builder_excludes(void **state)
{
	PGconn *a = conn(), *b = conn(), *bld = conn();
	struct gl_err err = {0};
	int64_t now = (int64_t)time(NULL), day = (now / 86400 - 2) * 86400;
	char sql[512];

	(void)state;
	assert_true(ok(a, "INSERT INTO clusters (name, kind) VALUES ('lock-a', 'slurm'), ('lock-b', 'slurm')"));
	/* writer A of cluster lock-a holds its transaction open */
	assert_true(ok(a, "BEGIN"));
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro)"
		 " SELECT cluster_id, 'db:1', '1', 'COMPLETED', to_timestamp(%lld), to_timestamp(%lld), 1000000"
		 " FROM clusters WHERE name = 'lock-a'",
		 (long long)day + 3600, (long long)day + 7200);
	assert_true(ok(a, sql));
	/* writer B of cluster lock-b goes through meanwhile */
	assert_true(ok(b, "SET lock_timeout = '2s'"));
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro)"
		 " SELECT cluster_id, 'db:1', '1', 'COMPLETED', to_timestamp(%lld), to_timestamp(%lld), 2000000"
		 " FROM clusters WHERE name = 'lock-b'",
		 (long long)day + 3600, (long long)day + 10800);
	assert_true(ok(b, sql));
	/* a build of that day must wait for A */
	assert_true(ok(bld, "SET lock_timeout = '500ms'"));
	assert_int_not_equal(gl_accounting_build_day(bld, day, now, &err), 0);
	assert_non_null(strstr(err.msg, "lock timeout"));
	assert_true(ok(a, "COMMIT"));
	/* ... and then sees A's job and B's */
	assert_int_equal(gl_accounting_build_day(bld, day, now, &err), 0);
	snprintf(sql, sizeof sql, "SELECT sum(alloc) FROM usage_daily WHERE day = to_timestamp(%lld)::date",
		 (long long)day);
	/* micro-GPU-seconds billed (sql/047), and held as billed */
	assert_int_equal(gl_test_qint(bld, sql), 1000000LL * 3600 + 2000000LL * 7200);
	snprintf(sql, sizeof sql, "SELECT sum(held) FROM usage_daily WHERE day = to_timestamp(%lld)::date",
		 (long long)day);
	assert_int_equal(gl_test_qint(bld, sql), 1000000LL * 3600 + 2000000LL * 7200);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM usage_daily_built WHERE day = to_timestamp(%lld)::date",
		 (long long)day);
	assert_int_equal(gl_test_qint(bld, sql), 1);
	/* a later write to that day makes it stale */
	assert_true(ok(b, "UPDATE jobs SET gpu_micro = 3000000 WHERE job_key = 'db:1' AND gpu_micro = 2000000"));
	assert_int_equal(gl_test_qint(bld, sql), 0);
	PQfinish(a);
	PQfinish(b);
	PQfinish(bld);
}

static int setup(void **state)
{
	(void)state;
	return gl_test_db_fresh("gl_test_rollup_lock", g_dsn, sizeof g_dsn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writers_share_builder_excludes),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
