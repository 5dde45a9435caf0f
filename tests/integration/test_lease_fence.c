/* The fence of sql/055 at the database (docs/scale.md, "Several daemons"):
 * two sessions of the service's role play the old holder of a lease, whose
 * lease expired (a paused process), and the instance that took it over.
 * Whatever the old holder writes to its run row or to a watermark after
 * the takeover is refused at COMMIT (GLF01, -GL_EBUSY), in every
 * partition of ingest_runs, those made ahead included; the new holder's
 * writes commit; the old holder's failure record, written under no fence,
 * commits. A source without a watermark (the node inventory: a snapshot
 * and its run row in one transaction) is fenced by its run row alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/db_int.h"
#include "gl/ingest.h"
#include "gl/lease.h"
#include "gl/txn.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEASE "slurm-nodes:fence"

static char g_dsn[512];
static int g_cluster;

static PGconn *conn(void)
{
	PGconn *c = PQconnectdb(g_dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PQclear(PQexec(c, "SET TIME ZONE 'UTC'"));
	return c;
}

static int setup(void **state)
{
	PGconn *c;
	if (gl_test_db_fresh("gl_test_lease_fence", g_dsn, sizeof g_dsn))
		return -1;
	c = PQconnectdb(g_dsn);
	if (!gl_test_sql_ok(c, "INSERT INTO clusters (name, kind) VALUES ('fence', 'slurm')"))
		return -1;
	g_cluster = (int)gl_test_qint(c, "SELECT cluster_id FROM clusters WHERE name = 'fence'");
	PQfinish(c);
	return 0;
}

/* as if its holder had stopped renewing it a ttl ago */
static void expire(PGconn *c)
{
	assert_true(gl_test_sql_ok(
		c, "UPDATE leases SET expires_at = now() - interval '1 second' WHERE name = '" LEASE "'"));
}

/* old takes the lease and begins a run; the lease then expires (old is
 * paused) and new takes it over: a greater token. Returns old's run. */
static int64_t takeover(PGconn *old, PGconn *new)
{
	struct gl_err err = {0};
	int64_t t_old = 0, t_new = 0, run = 0;
	expire(new);
	assert_int_equal(gl_lease_take(gl_db_store(old), LEASE, "old/h:1", "old", 3, &t_old, NULL, 0, &err), 0);
	assert_true(t_old > 0);
	assert_int_equal(gl_ingest_run_begin(gl_db_store(old), "slurm-nodes", g_cluster, "old", &run, &err), 0);
	expire(new);
	assert_int_equal(gl_lease_take(gl_db_store(new), LEASE, "new/h:2", "new", 3, &t_new, NULL, 0, &err), 0);
	assert_true(t_new > t_old);
	return run;
}

static void assert_refused(int rc, const struct gl_err *err)
{
	assert_int_equal(rc, -GL_EBUSY);
	assert_non_null(strstr(err->msg, "lease " LEASE " lost: instance new holds it now"));
	assert_non_null(strstr(err->msg, "commit refused"));
}

static void test_stale_run_row_refused(void **state)
{
	PGconn *old = conn(), *new = conn();
	struct gl_ingest_stats st;
	struct gl_err err = {0};
	int64_t run = takeover(old, new), mine = 0;
	char q[160];

	gl_ingest_stats_init(&st, 1);
	st.inserted = 7;
	/* a snapshot's transaction: its rows and its run row, no watermark */
	assert_int_equal(gl_txn_begin(gl_db_store(old), &err), 0);
	assert_int_equal(gl_ingest_run_update(gl_db_store(old), run, &st, "ok", NULL, &err), 0);
	assert_refused(gl_txn_commit(gl_db_store(old), &err), &err);
	snprintf(q, sizeof q, "SELECT status || ':' || inserted FROM ingest_runs WHERE run_id = %lld", (long long)run);
	assert_string_equal(gl_test_qstr(new, q), "running:0");
	/* outside a transaction too: the statement's own commit is refused */
	memset(&err, 0, sizeof err);
	assert_refused(gl_ingest_run_update(gl_db_store(old), run, &st, "ok", NULL, &err), &err);
	/* the failure record commits (no fence), so the run does not stay running */
	assert_int_equal(gl_ingest_run_fail(gl_db_store(old), run, &st, "fenced", NULL, &err), 0);
	assert_string_equal(gl_test_qstr(new, q), "failed:7");
	/* the holder's own run commits */
	assert_int_equal(gl_ingest_run_begin(gl_db_store(new), "slurm-nodes", g_cluster, "new", &mine, &err), 0);
	assert_int_equal(gl_txn_begin(gl_db_store(new), &err), 0);
	assert_int_equal(gl_ingest_run_update(gl_db_store(new), mine, &st, "ok", NULL, &err), 0);
	assert_int_equal(gl_txn_commit(gl_db_store(new), &err), 0);
	gl_ingest_stats_fini(&st);
	PQfinish(old);
	PQfinish(new);
}

/* A month the daemon made ahead (and the DEFAULT partition) carry the
 * fence as the months of the migration did. */
static void test_partitions_made_ahead_fenced(void **state)
{
	char odsn[1024];
	PGconn *old = conn(), *new = conn(), *own;
	struct gl_err err = {0};
	(void)takeover(old, new);
	assert_int_equal(gl_test_owner_dsn(g_dsn, odsn, sizeof odsn), 0);
	own = PQconnectdb(odsn);
	assert_int_equal(gl_test_qint(own, "SELECT gl_ingest_runs_partitions_ensure('2031-01-01', 1)"), 1);
	PQfinish(own);
	for (int i = 0; i < 2; i++) {
		char sql[320];
		/* 2031-01: the new month; 1999-01: no month, the DEFAULT partition */
		snprintf(sql, sizeof sql,
			 "INSERT INTO ingest_runs (source, cluster_id, input, started_at, status)"
			 " VALUES ('slurm-nodes', %d, 'x', '%s', 'running')",
			 g_cluster, i ? "1999-01-15Z" : "2031-01-15Z");
		memset(&err, 0, sizeof err);
		assert_refused(gl_db_exec(old, sql, &err), &err);
		assert_int_equal(gl_db_exec(new, sql, &err), 0);
	}
	assert_int_equal(gl_test_qint(new, "SELECT count(*) FROM ingest_runs_2031_01"), 1);
	assert_int_equal(gl_test_qint(new, "SELECT count(*) FROM ingest_runs_default"), 1);
	PQfinish(old);
	PQfinish(new);
}

static void test_stale_watermark_refused(void **state)
{
	PGconn *old = conn(), *new = conn();
	struct gl_err err = {0};
	int64_t wm = 0;
	(void)takeover(old, new);
	assert_int_equal(gl_ingest_watermark_set(gl_db_store(new), "slurm-nodes", g_cluster, 2000000000, &err), 0);
	assert_refused(gl_ingest_watermark_set(gl_db_store(old), "slurm-nodes", g_cluster, 1000000000, &err), &err);
	assert_int_equal(gl_ingest_watermark_get(gl_db_store(new), "slurm-nodes", g_cluster, &wm, &err), 0);
	assert_int_equal(wm, 2000000000);
	PQfinish(old);
	PQfinish(new);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_run_row_refused),
		cmocka_unit_test(test_partitions_made_ahead_fenced),
		cmocka_unit_test(test_stale_watermark_refused),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
