/* Two writers of one cluster's open jobs at once (sql/107's statement
 * triggers): each statement adds its deltas to open_gpu_sums in key order,
 * so two transactions that touch the same sums rows wait for each other
 * and never deadlock, and the sums equal the open jobs after both commit.
 *
 * The interleaving is fixed: writer A changes a job of sums row k1 and
 * keeps its transaction open; writer B, in one statement, changes a job
 * of k1 and one of k2 (k1 < k2: the same set and sighting, an earlier
 * start day): in key order it waits at k1, holding nothing of k2; A then
 * changes a job of k2 and commits, and B goes on. Had B's statement
 * locked k2 first, A would wait for B and B for A (a deadlock, which
 * PostgreSQL ends by failing one of them after deadlock_timeout). Waits
 * are bounded by lock_timeout so that a wait that should not happen fails
 * the test instead of hanging it.
 *
 * And the sets no sums row references any more (sql/116): deleted by the
 * daemon's retention run, never while a jobs writer is in flight, never
 * one a sums row still references. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/retention.h"
#include "store/db_int.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char g_dsn[512];

static PGconn *conn(void)
{
	PGconn *c = PQconnectdb(g_dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	return c;
}

/* open_gpu_sums against the open jobs: rows of one side the other lacks */
static long long sums_off(void)
{
	return gl_test_qint_dsn(
		g_dsn,
		"WITH s AS (SELECT st.cluster_id, su.last_seen_at, su.start_day, sum(su.n) AS n, sum(su.gpu_micro) AS g"
		" FROM open_gpu_sums su JOIN open_gpu_sets st USING (set_id) GROUP BY 1, 2, 3),"
		" j AS (SELECT cluster_id, last_seen_at, (start_at AT TIME ZONE 'UTC')::date, count(*), sum(gpu_micro)"
		" FROM jobs WHERE end_at IS NULL AND gpu_milli > 0 AND start_at IS NOT NULL GROUP BY 1, 2, 3)"
		" SELECT (SELECT count(*) FROM (SELECT * FROM s EXCEPT SELECT * FROM j) x)"
		" + (SELECT count(*) FROM (SELECT * FROM j EXCEPT SELECT * FROM s) y)");
}

/* job key's gpu_micro grown by one micro-GPU: its sums row changes */
static void grow_sql(char *out, size_t n, const char *keys)
{
	snprintf(out, n, "UPDATE jobs SET gpu_micro = gpu_micro + 1 WHERE job_key IN (%s)", keys);
}

static void test_two_writers_no_deadlock(void **state)
{
	PGconn *a = conn(), *b = conn();
	int64_t now = (int64_t)time(NULL), d1 = (now / 86400 - 5) * 86400 + 3600, d2 = d1 + 2 * 86400;
	char sql[1024];
	PGresult *r;
	int b_ok = 1;

	(void)state;
	assert_true(gl_test_sql_ok(a, "INSERT INTO clusters (name, kind) VALUES ('sums-lock', 'slurm')"));
	/* j1, j3 start on day d1 (row k1), j2, j4 on d2 (k2): one set, one
	 * sighting */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, gpu_micro, last_seen_at, account)"
		 " SELECT c.cluster_id, 'db:' || g, g::text, 'RUNNING', to_timestamp(CASE WHEN g %% 2 = 1 THEN %lld"
		 "  ELSE %lld END + g), 1000000, to_timestamp(%lld), 'acct'"
		 " FROM clusters c, generate_series(1, 4) g WHERE c.name = 'sums-lock'",
		 (long long)d1, (long long)d2, (long long)now - 60);
	assert_true(gl_test_sql_ok(a, sql));
	assert_int_equal(sums_off(), 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM open_gpu_sums"), 2);

	assert_true(gl_test_sql_ok(a, "SET lock_timeout = '20s'"));
	assert_true(gl_test_sql_ok(b, "SET lock_timeout = '20s'"));
	assert_true(gl_test_sql_ok(a, "BEGIN"));
	grow_sql(sql, sizeof sql, "'db:1'");
	assert_true(gl_test_sql_ok(a, sql));
	assert_true(gl_test_sql_ok(b, "BEGIN"));
	grow_sql(sql, sizeof sql, "'db:3', 'db:4'");
	assert_int_equal(PQsendQuery(b, sql), 1);
	/* B is waiting at k1 (on A), not before it: its backend shows the wait */
	for (int i = 0; i < 200; i++) {
		if (gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
					    " AND query LIKE 'UPDATE jobs SET gpu_micro%'") == 1)
			break;
		usleep(20000);
	}
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
						 " AND query LIKE 'UPDATE jobs SET gpu_micro%'"),
			 1);
	/* A now writes k2: in key order B holds nothing of it */
	grow_sql(sql, sizeof sql, "'db:2'");
	assert_true(gl_test_sql_ok(a, sql));
	assert_true(gl_test_sql_ok(a, "COMMIT"));
	while ((r = PQgetResult(b))) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK) {
			fprintf(stderr, "writer B: %s", PQresultErrorMessage(r));
			b_ok = 0;
		}
		PQclear(r);
	}
	assert_true(b_ok);
	assert_true(gl_test_sql_ok(b, "COMMIT"));
	assert_int_equal(sums_off(), 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT sum(gpu_micro) FROM open_gpu_sums"), 4000004);
	PQfinish(a);
	PQfinish(b);
}

static long long sets_of(const char *cluster)
{
	char q[256];
	snprintf(q, sizeof q,
		 "SELECT count(*) FROM open_gpu_sets st JOIN clusters c USING (cluster_id) WHERE c.name = '%s'", cluster);
	return gl_test_qint_dsn(g_dsn, q);
}

static void test_unused_sets_pruned(void **state)
{
	PGconn *a = conn(), *c = conn();
	struct gl_err err = {0};
	int64_t now = (int64_t)time(NULL), pruned = 0;
	char sql[1024];

	(void)state;
	assert_true(gl_test_sql_ok(a, "INSERT INTO clusters (name, kind) VALUES ('sums-prune', 'slurm')"));
	/* three sets (accounts x, y, z), a job each */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, gpu_micro, last_seen_at, account)"
		 " SELECT c.cluster_id, 'db:' || g, g::text, 'RUNNING', to_timestamp(%lld), 1000000, to_timestamp(%lld),"
		 "  (ARRAY['x', 'y', 'z'])[g] FROM clusters c, generate_series(1, 3) g WHERE c.name = 'sums-prune'",
		 (long long)now - 3 * 86400, (long long)now - 60);
	assert_true(gl_test_sql_ok(a, sql));
	assert_int_equal(sets_of("sums-prune"), 3);
	/* x's job ends: its sums row goes, its set stays until a prune */
	snprintf(sql, sizeof sql,
		 "UPDATE jobs SET end_at = to_timestamp(%lld), state = 'COMPLETED' WHERE job_key = 'db:1'"
		 " AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'sums-prune')",
		 (long long)now - 600);
	assert_true(gl_test_sql_ok(a, sql));
	assert_int_equal(sets_of("sums-prune"), 3);
	/* a writer in flight (y's job changed, not committed): nothing tried */
	assert_true(gl_test_sql_ok(a, "BEGIN"));
	assert_true(gl_test_sql_ok(a,
				   "UPDATE jobs SET gpu_micro = gpu_micro + 1 WHERE job_key = 'db:2'"
				   " AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'sums-prune')"));
	assert_int_equal(gl_retention_open_sets(gl_db_store(c), &pruned, &err), 0);
	assert_int_equal(pruned, -1);
	assert_true(gl_test_sql_ok(a, "COMMIT"));
	assert_int_equal(sets_of("sums-prune"), 3);
	/* then x's set goes, and only it; the sums still equal the jobs */
	assert_int_equal(gl_retention_open_sets(gl_db_store(c), &pruned, &err), 0);
	assert_true(pruned >= 1);
	assert_int_equal(sets_of("sums-prune"), 2);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM open_gpu_sums su"
						 " WHERE NOT EXISTS (SELECT 1 FROM open_gpu_sets st WHERE st.set_id = su.set_id)"),
			 0);
	assert_int_equal(sums_off(), 0);
	/* a new open job of x's attributes makes its set again */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, gpu_micro, last_seen_at, account)"
		 " SELECT cluster_id, 'db:4', '4', 'RUNNING', to_timestamp(%lld), 2000000, to_timestamp(%lld), 'x'"
		 " FROM clusters WHERE name = 'sums-prune'",
		 (long long)now - 86400, (long long)now - 60);
	assert_true(gl_test_sql_ok(a, sql));
	assert_int_equal(sets_of("sums-prune"), 3);
	assert_int_equal(sums_off(), 0);
	assert_int_equal(gl_retention_open_sets(gl_db_store(c), &pruned, &err), 0);
	assert_int_equal(sets_of("sums-prune"), 3);
	PQfinish(a);
	PQfinish(c);
}

static int setup(void **state)
{
	(void)state;
	return gl_test_db_fresh("gl_test_open_sums_lock", g_dsn, sizeof g_dsn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_writers_no_deadlock),
		cmocka_unit_test(test_unused_sets_pruned),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
