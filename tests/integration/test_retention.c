/* Time partitions and retention (sql/058, store/retention): ingest_runs
 * moves into monthly partitions with every row and id it had; partitions
 * are made ahead; retention drops whole partitions past the horizon (a
 * row-level DELETE trigger that refuses every row is not reached), keeps
 * the exporter detail of days not rolled up yet, and audits what went. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/db_int.h"
#include "gl/ingest.h"
#include "gl/migrate.h"
#include "gl/retention.h"
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
	PQclear(PQexec(c, "SET TIME ZONE 'UTC'"));
	return c;
}

/* The schema as it was before sql/058, applied migration by migration as
 * gl_migrate_run would. */
static void migrate_before_058(PGconn *c)
{
	char ins[160];
	assert_true(gl_test_sql_ok(c,
				   "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
				   " applied_at timestamptz NOT NULL DEFAULT now())"));
	for (const struct gl_migrate_script *m = gl_migrations; m->version && m->version < 58; m++) {
		assert_true(gl_test_sql_ok(c, "BEGIN"));
		assert_true(gl_test_sql_ok(c, m->sql));
		snprintf(ins, sizeof ins, "INSERT INTO schema_migrations VALUES (%d, '%s')", m->version, m->name);
		assert_true(gl_test_sql_ok(c, ins));
		assert_true(gl_test_sql_ok(c, "COMMIT"));
	}
}

static void test_ingest_runs_partitioned_with_its_rows(void **state)
{
	char odsn[1024];
	PGconn *c;
	struct gl_err err = {0};
	int applied = 0;
	int64_t id = 0;

	(void)state;
	/* the migrations' role, as `gpuledger migrate` runs them */
	assert_int_equal(gl_test_owner_dsn(g_dsn, odsn, sizeof odsn), 0);
	c = PQconnectdb(odsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PQclear(PQexec(c, "SET TIME ZONE 'UTC'"));
	migrate_before_058(c);
	assert_true(gl_test_sql_ok(c, "INSERT INTO clusters (name, kind) VALUES ('ret', 'slurm')"));
	assert_true(gl_test_sql_ok(
		c,
		"INSERT INTO ingest_runs (source, cluster_id, input, started_at, finished_at, status, inserted)"
		" SELECT 'sacct', cluster_id, 'f' || g, ts, ts + interval '1 minute', 'ok', g"
		"   FROM clusters, (VALUES (1, timestamptz '2025-01-10 08:00Z'), (2, '2025-06-01 00:00Z'),"
		"                          (3, '2025-06-30 23:59:59Z'), (4, now())) v(g, ts)"));
	assert_int_equal(gl_test_qint(c, "SELECT max(run_id) FROM ingest_runs"), 4);
	assert_int_equal(gl_migrate_run(gl_db_store(c), &applied, &err), 0);
	assert_true(applied >= 1);
	/* what `gpuledger migrate` does next: the service's role may use it */
	assert_true(gl_test_sql_ok(c, "SELECT gl_app_grant('gpuledger')"));
	assert_string_equal(gl_test_qstr(c, "SELECT relkind FROM pg_class WHERE relname = 'ingest_runs'"), "p");
	/* every row, with its id, in the partition of its month */
	assert_int_equal(gl_test_qint(c, "SELECT sum(run_id * inserted) FROM ingest_runs"), 1 + 4 + 9 + 16);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM ingest_runs_2025_01"), 1);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM ingest_runs_2025_06"), 2);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM ingest_runs_default"), 0);
	/* the months between exist too, and the next ones */
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM gl_time_partitions('ingest_runs')"
					 " WHERE lo >= '2025-01-01Z' AND hi <= date_trunc('month', now()) + interval '3 months'"),
			 gl_test_qint(c, "SELECT count(*) FROM generate_series(timestamptz '2025-01-01Z',"
					 " date_trunc('month', now()) + interval '2 months', interval '1 month')"));
	/* a new run numbers on */
	assert_int_equal(gl_ingest_run_begin(gl_db_store(c), "sacct", (int)gl_test_qint(c, "SELECT cluster_id FROM clusters"), "new",
					     &id, &err),
			 0);
	assert_int_equal(id, 5);
	PQfinish(c);
}

static void test_ahead(void **state)
{
	PGconn *c = conn();
	struct gl_err err = {0};
	int made = -1;
	int64_t now = (int64_t)time(NULL);

	(void)state;
	assert_int_equal(gl_retention_ahead(gl_db_store(c), now, &made, &err), 0);
	assert_true(made >= 2 * GL_RETENTION_AHEAD_DAYS - 2);
	assert_int_equal(gl_test_qintf(c,
				       "SELECT count(*) FROM generate_series(0, %d) d"
				       " WHERE to_regclass('gpu_usage_' || to_char(to_timestamp(%lld) + d * interval '1 day', 'YYYYMMDD')) IS NOT NULL"
				       "   AND to_regclass('gpu_usage_jobs_' || to_char(to_timestamp(%lld) + d * interval '1 day', 'YYYYMMDD')) IS NOT NULL",
				       GL_RETENTION_AHEAD_DAYS - 1, (long long)now, (long long)now),
			 GL_RETENTION_AHEAD_DAYS);
	assert_non_null(gl_test_qstr(c, "SELECT to_regclass('ingest_runs_' || to_char(now() + interval '2 months', 'YYYY_MM'))"));
	assert_string_not_equal(gl_test_qstr(c, "SELECT coalesce(to_regclass('ingest_runs_' || to_char(now() + interval '2 months',"
						" 'YYYY_MM'))::text, '')"),
				"");
	/* a second run makes nothing */
	assert_int_equal(gl_retention_ahead(gl_db_store(c), now, &made, &err), 0);
	assert_int_equal(made, 0);
	PQfinish(c);
}

static void test_drop_whole_partitions(void **state)
{
	PGconn *c = conn();
	struct gl_err err = {0};
	struct gl_retention_result res = {0};
	struct gl_retention_policy pol = {7, 30};
	int64_t now = (int64_t)time(NULL), today = now / 86400 * 86400;
	long long seq0, months;

	(void)state;
	/* days today-10 .. today-6, 288 five-minute buckets of 3 GPUs each */
	assert_int_equal(gl_test_qintf(c, "SELECT (gl_ensure_dcgm_partitions(to_timestamp(%lld), to_timestamp(%lld)) >= 0)::int",
				       (long long)(today - 10 * 86400), (long long)(today - 5 * 86400)),
			 1);
	assert_true(gl_test_sql_ok(
		c,
		"INSERT INTO gpu_usage (gpu_id, bucket, cluster_id, bucket_s, samples, busy_samples)"
		" SELECT g, b, 1, 300, 10, 5 FROM generate_series(1, 3) g,"
		" generate_series(date_trunc('day', now()) - interval '10 days',"
		"                 date_trunc('day', now()) - interval '5 days' - interval '5 minutes', interval '5 minutes') b"));
	assert_true(gl_test_sql_ok(
		c,
		"INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples, busy_samples,"
		" nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s)"
		" SELECT gpu_id, bucket, 7, 1, 'pod', 10, 5, 0, 300, 150, 150 FROM gpu_usage"));
	/* rolled up: today-10 and today-9; today-8 not yet */
	assert_true(gl_test_sql_ok(c,
				   "INSERT INTO usage_daily_built (day) SELECT (now() - d * interval '1 day')::date"
				   " FROM generate_series(9, 10) d"));
	/* nothing may go row by row (set up as the owner role: the service's
	 * makes no functions or triggers) */
	assert_true(gl_test_exec_owner(g_dsn, "CREATE FUNCTION no_row_delete() RETURNS trigger LANGUAGE plpgsql AS"
					      " $$BEGIN RAISE EXCEPTION 'row-by-row delete on %', TG_TABLE_NAME; END$$") >= 0);
	assert_true(gl_test_exec_owner(g_dsn, "CREATE TRIGGER no_row_delete BEFORE DELETE ON gpu_usage FOR EACH ROW"
					      " EXECUTE FUNCTION no_row_delete()") >= 0);
	assert_true(gl_test_exec_owner(g_dsn, "CREATE TRIGGER no_row_delete BEFORE DELETE ON gpu_usage_jobs FOR EACH ROW"
					      " EXECUTE FUNCTION no_row_delete()") >= 0);
	assert_true(gl_test_exec_owner(g_dsn, "CREATE TRIGGER no_row_delete BEFORE DELETE ON ingest_runs FOR EACH ROW"
					      " EXECUTE FUNCTION no_row_delete()") >= 0);
	assert_true(gl_test_exec_owner(g_dsn, "ANALYZE gpu_usage, gpu_usage_jobs, ingest_runs") >= 0);
	months = gl_test_qint(c, "SELECT count(*) FROM gl_time_partitions('ingest_runs') WHERE hi <= now() - interval '30 days'");
	assert_true(months >= 13);
	seq0 = gl_test_qint(c, "SELECT coalesce(max(audit_id), 0) FROM audit_log");

	assert_int_equal(gl_retention_drop(gl_db_store(c), &pol, now, &res, &err), 0);
	/* 2 days x 2 tables, and the ingest_runs months that ended 30 days ago */
	assert_int_equal(res.dropped, 4 + months);
	assert_int_equal(res.kept_unbuilt, 2);
	assert_int_equal(res.est_rows, 4 * 864 + 3);
	assert_non_null(strstr(gl_strbuf_cstr(&res.names), "ingest_runs_2025_01"));
	/* what is left is exactly the days kept: today-8 (not rolled up) to today-6 */
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM gpu_usage"), 3 * 288 * 3);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM gpu_usage_jobs"), 3 * 288 * 3);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM gpu_usage"
					 " WHERE bucket < date_trunc('day', now()) - interval '8 days'"),
			 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM ingest_runs WHERE started_at < '2026-01-01Z'"), 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM ingest_runs"), 2);
	/* one audit row names every partition that went */
	assert_int_equal(gl_test_qintf(c, "SELECT count(*) FROM audit_log WHERE audit_id > %lld AND action = 'retention.drop'"
					  " AND jsonb_array_length(detail::jsonb -> 'partitions') = %lld",
				       seq0, 4 + months),
			 1);
	gl_retention_result_fini(&res);

	/* once the day is rolled up, its detail goes too; a second run with
	 * nothing past the horizon writes no audit row */
	assert_true(
		gl_test_sql_ok(c, "INSERT INTO usage_daily_built (day) VALUES ((now() - interval '8 days')::date)"));
	memset(&res, 0, sizeof res);
	assert_int_equal(gl_retention_drop(gl_db_store(c), &pol, now, &res, &err), 0);
	assert_int_equal(res.dropped, 2);
	assert_int_equal(res.kept_unbuilt, 0);
	gl_retention_result_fini(&res);
	seq0 = gl_test_qint(c, "SELECT max(audit_id) FROM audit_log");
	memset(&res, 0, sizeof res);
	assert_int_equal(gl_retention_drop(gl_db_store(c), &pol, now, &res, &err), 0);
	assert_int_equal(res.dropped, 0);
	assert_int_equal(gl_test_qint(c, "SELECT max(audit_id) FROM audit_log"), seq0);
	gl_retention_result_fini(&res);
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ingest_runs_partitioned_with_its_rows),
		cmocka_unit_test(test_ahead),
		cmocka_unit_test(test_drop_whole_partitions),
	};
	if (gl_test_db_create("gl_test_retention", g_dsn, sizeof g_dsn))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
