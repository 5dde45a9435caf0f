/* Two roles (docs/security.md, "Two roles"; issue 24): the owner role
 * (gpuledger_owner) owns the database and every object and runs the
 * migrations; the application role (gpuledger) that serve, ingest, token,
 * audit ... connect as owns nothing, is no superuser, cannot CREATE,
 * ALTER, DROP or TRUNCATE any table, may only read and append to the
 * audit log, and still does what the service does at run time that used
 * to need an owner: day partitions for a scrape, monthly audit partitions
 * (the daemon's writer), retention (`audit prune`), temporary tables.
 * The grants are checked from the catalogs for every table, sequence and
 * function, and for what a later migration creates, so a migration
 * cannot forget one. An external database with one role keeps working
 * and is said to be so; a migrate DSN that reaches another database is
 * refused before anything changes. Real PostgreSQL (the harness's
 * cluster, migrated by the real binary with GPULEDGER_MIGRATE_DSN as a
 * site with two roles sets it), real binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char g_dsn[512], g_own[2048], g_su[1024];
static PGconn *g_app, *g_owner;

static PGconn *connect_or_fail(const char *dsn)
{
	PGconn *c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK)
		fail_msg("connect %s: %s", dsn, PQerrorMessage(c));
	PQclear(PQexec(c, "SET client_min_messages = warning"));
	return c;
}

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_db_roles", g_dsn, sizeof g_dsn) || gl_test_owner_dsn(g_dsn, g_own, sizeof g_own))
		return -1;
	snprintf(g_su, sizeof g_su, "%s dbname=gl_test_db_roles", gl_test_admin_dsn());
	g_app = PQconnectdb(g_dsn);
	g_owner = PQconnectdb(g_own);
	if (PQstatus(g_app) != CONNECTION_OK || PQstatus(g_owner) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_app, "SET client_min_messages = warning"));
	PQclear(PQexec(g_owner, "SET client_min_messages = warning"));
	return 0;
}

static int teardown(void **state)
{
	PQfinish(g_app);
	PQfinish(g_owner);
	return 0;
}

/* sql fails on c for want of a privilege (42501), not for any other reason */
static void expect_denied(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
	if (PQresultStatus(r) != PGRES_FATAL_ERROR || !st || strcmp(st, "42501"))
		fail_msg("%s: want 42501 (insufficient privilege), got %s %s", sql, st ? st : "success",
			 PQresultErrorMessage(r));
	PQclear(r);
}

static void test_app_role_owns_nothing(void **state)
{
	assert_string_equal(gl_test_qstr(g_app, "SELECT current_user"), "gpuledger");
	assert_string_equal(gl_test_qstr(g_app, "SELECT (rolsuper OR rolcreatedb OR rolcreaterole OR rolbypassrls)::text"
						" FROM pg_roles WHERE rolname = current_user"),
			    "false");
	/* not through membership either */
	assert_string_equal(gl_test_qstr(g_app, "SELECT pg_has_role('gpuledger', 'gpuledger_owner', 'MEMBER')::text"),
			    "false");
	assert_string_equal(gl_test_qstr(g_app, "SELECT pg_get_userbyid(datdba) FROM pg_database"
						" WHERE datname = current_database()"),
			    "gpuledger_owner");
	/* read from the catalogs here, not through gl_role_owns (what is tested) */
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
					     " WHERE c.relowner = 'gpuledger'::regrole AND n.nspname !~ '^pg_(toast_)?temp_'"),
			 0);
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM pg_proc WHERE proowner = 'gpuledger'::regrole"), 0);
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
					     " WHERE t.typowner = 'gpuledger'::regrole AND n.nspname !~ '^pg_(toast_)?temp_'"),
			 0);
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM pg_namespace WHERE nspowner = 'gpuledger'::regrole"), 0);
	/* and the owner role owns the schema: every relation and function */
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
					     " AND relowner <> 'gpuledger_owner'::regrole"),
			 0);
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace"
					     " AND proowner <> 'gpuledger_owner'::regrole"),
			 0);
	assert_true(gl_test_qint(g_app, "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace") > 50);
	assert_string_equal(gl_test_qstr(g_owner, "SELECT coalesce(gl_role_owns('gpuledger'), 'nothing')"), "nothing");
}

/* every table of the schema, read from the catalog: the loops cannot be empty */
static void test_app_role_cannot_change_the_schema(void **state)
{
	PGresult *r = PQexec(g_app, "SELECT c.oid::regclass::text FROM pg_class c"
				    " WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') ORDER BY 1");
	char sql[512];
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	assert_true(PQntuples(r) >= 25);
	for (int i = 0; i < PQntuples(r); i++) {
		const char *t = PQgetvalue(r, i, 0);
		snprintf(sql, sizeof sql, "TRUNCATE %s", t);
		expect_denied(g_app, sql);
		snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN gl_x integer", t);
		expect_denied(g_app, sql);
		snprintf(sql, sizeof sql, "ALTER TABLE %s DISABLE TRIGGER ALL", t);
		expect_denied(g_app, sql);
		snprintf(sql, sizeof sql, "DROP TABLE %s CASCADE", t);
		expect_denied(g_app, sql);
		snprintf(sql, sizeof sql, "GRANT SELECT ON %s TO PUBLIC", t);
		PQclear(PQexec(g_app, sql)); /* a non-owner's grant grants nothing: checked below */
	}
	PQclear(r);
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a"
					     " WHERE c.relnamespace = 'public'::regnamespace AND a.grantee = 0"),
			 0);
	expect_denied(g_app, "CREATE TABLE gl_x (x integer)");
	expect_denied(g_app, "CREATE VIEW gl_x AS SELECT 1");
	expect_denied(g_app, "CREATE FUNCTION gl_x() RETURNS integer LANGUAGE sql AS 'SELECT 1'");
	expect_denied(g_app, "CREATE SCHEMA gl_x");
	expect_denied(g_app, "CREATE INDEX ON jobs (job_id)");
	expect_denied(g_app, "CREATE OR REPLACE FUNCTION gl_audit_reject() RETURNS trigger LANGUAGE plpgsql AS"
			     " $$ BEGIN RETURN OLD; END $$");
	expect_denied(g_app, "ALTER TABLE audit_log DETACH PARTITION audit_log_default");
	/* the audit log: the privilege, not only the trigger, says no */
	expect_denied(g_app, "UPDATE audit_log SET actor = 'x'");
	expect_denied(g_app, "DELETE FROM audit_log");
	expect_denied(g_app, "UPDATE audit_log_default SET actor = 'x'");
	expect_denied(g_app, "SELECT count(*) FROM audit_log_default");
	expect_denied(g_app, "SELECT gl_app_grant('gpuledger')");
	/* what it does: read and append */
	assert_true(gl_test_qint(g_app, "SELECT count(*) FROM audit_log") >= 0);
}

/* The grants, from the catalogs, for every table, sequence and function a
 * migration made: what fails here names the object and what is wrong. */
static const char k_grant_gaps_sql[] =
	"WITH rel AS (SELECT c.oid, c.oid::regclass::text AS name, c.relkind, c.relname = 'audit_log' AS log,"
	"   EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid AND i.inhparent = 'audit_log'::regclass) AS part"
	"   FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')),"
	" want AS (SELECT oid, name, relkind, p, CASE"
	"   WHEN relkind = 'S' THEN p = 'USAGE'"
	"   WHEN part THEN false"
	"   WHEN log THEN p IN ('SELECT', 'INSERT')"
	"   WHEN name = 'schema_migrations' OR relkind IN ('v', 'm') THEN p = 'SELECT'"
	"   ELSE p IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE') END AS granted"
	"   FROM rel, unnest(CASE WHEN relkind = 'S' THEN ARRAY['USAGE', 'SELECT', 'UPDATE']"
	"     ELSE ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER'] END) p)"
	" SELECT string_agg(name || ': ' || p || CASE WHEN granted THEN ' missing' ELSE ' granted' END, '; ' ORDER BY name, p)"
	" FROM (SELECT name, p, granted, CASE WHEN relkind = 'S' THEN has_sequence_privilege('gpuledger', oid, p)"
	"   ELSE has_table_privilege('gpuledger', oid, p) END AS has FROM want) x WHERE has <> granted"
	" UNION ALL"
	" SELECT string_agg(p.oid::regprocedure::text || CASE WHEN p.proname = 'gl_app_grant' THEN ': executable'"
	"   ELSE ': not executable' END, '; ')"
	" FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace"
	"   AND has_function_privilege('gpuledger', p.oid, 'EXECUTE') = (p.proname = 'gl_app_grant')"
	" UNION ALL"
	/* a SECURITY DEFINER function acts as its owner: its search_path is
	 * pinned and not everyone may call it */
	" SELECT string_agg(p.oid::regprocedure::text || ': SECURITY DEFINER without a pinned search_path or executable"
	"   by PUBLIC', '; ')"
	" FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND p.prosecdef"
	"   AND p.proname NOT LIKE 'gl_audit_partitions_%'" /* 009's, which `audit harden` hands over */
	"   AND (NOT coalesce(p.proconfig::text LIKE '%search_path=%', false) OR p.proacl IS NULL"
	"        OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0))";

static void expect_no_gaps(void)
{
	PGresult *r = PQexec(g_owner, k_grant_gaps_sql);
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	assert_int_equal(PQntuples(r), 3);
	for (int i = 0; i < 3; i++)
		if (!PQgetisnull(r, i, 0))
			fail_msg("the application role's grants: %s", PQgetvalue(r, i, 0));
	PQclear(r);
}

static void test_grants_cover_the_schema(void **state)
{
	assert_true(gl_test_qint(g_owner, "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
					  " AND relkind = 'S'") > 5);
	expect_no_gaps();
	/* what a later migration creates is granted by default, as the owner
	 * role makes it; the check above then covers it too */
	assert_true(gl_test_exec_dsn(g_own, "CREATE TABLE gl_later (id bigint GENERATED ALWAYS AS IDENTITY, x integer);"
					    " CREATE SEQUENCE gl_later_seq;"
					    " CREATE FUNCTION gl_later_fn() RETURNS integer LANGUAGE sql AS 'SELECT 1'") >= 0);
	expect_no_gaps();
	assert_int_equal(gl_test_qint(g_app, "WITH i AS (INSERT INTO gl_later (x) VALUES (1) RETURNING x)"
					     " SELECT gl_later_fn() + nextval('gl_later_seq') + (SELECT x FROM i)"),
			 3);
	expect_denied(g_app, "TRUNCATE gl_later");
	assert_true(gl_test_exec_dsn(g_own, "DROP TABLE gl_later; DROP SEQUENCE gl_later_seq; DROP FUNCTION gl_later_fn()") >=
		    0);
	/* migrate again: the grants are made again, idempotent */
	assert_int_equal(gl_test_cli(g_dsn, "migrate", NULL), 0);
	expect_no_gaps();
}

static void expect_error(PGconn *c, const char *sql, const char *what)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_FATAL_ERROR || !strstr(PQresultErrorMessage(r), what))
		fail_msg("%s: want an error saying '%s', got: %s", sql, what, PQresultErrorMessage(r));
	PQclear(r);
}

/* gl_app_grant binds no role that grants cannot bind, and migrate says so. */
static void test_grant_refuses_what_it_cannot_bind(void **state)
{
	struct gl_test_out o;
	expect_error(g_owner, "SELECT gl_app_grant('gpuledger_owner')", "runs the migrations");
	expect_error(g_owner, "SELECT gl_app_grant('postgres')", "is a superuser");
	expect_error(g_owner, "SELECT gl_app_grant('gl_no_such_role')", "there is no role");
	/* an object the service's role owns (a superuser made it so) */
	assert_true(gl_test_exec_dsn(g_su, "CREATE TABLE gl_app_owned (x integer);"
					   " ALTER TABLE gl_app_owned OWNER TO gpuledger") >= 0);
	expect_error(g_owner, "SELECT gl_app_grant('gpuledger')", "gpuledger owns relation public.gl_app_owned: a superuser");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "migrate", NULL), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "REASSIGN OWNED BY gpuledger TO gpuledger_owner"));
	gl_test_out_fini(&o);
	assert_true(gl_test_exec_dsn(g_su, "DROP TABLE gl_app_owned") >= 0);
	assert_int_equal(gl_test_cli(g_dsn, "migrate", NULL), 0);
}

/* The DDL the service does while it runs, as the application role. */
static void test_runtime_ddl_as_app(void **state)
{
	struct gl_test_out o;
	/* a scrape's day partitions, made ahead (sql/050: SECURITY DEFINER) */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "dcgm", "--cluster", "c9", "--file",
				     gl_test_fixture("tests/fixtures/dcgm/datadog_dcgm_fixture_metrics.prom"), "--at",
				     "2025-03-04T10:00:00Z", NULL),
			 0);
	if (o.status != 0)
		fail_msg("ingest dcgm as the application role: %d %s", o.status, o.err);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM gpu_usage_20250304"), 3);
	assert_string_equal(gl_test_qstr(g_app, "SELECT string_agg(pg_get_userbyid(relowner), ',') FROM pg_class"
						" WHERE relname IN ('gpu_usage_20250305', 'gpu_usage_jobs_20250305')"),
			    "gpuledger_owner,gpuledger_owner");
	assert_int_equal(gl_test_qint(g_app, "SELECT gl_ensure_dcgm_partitions('2025-03-06', '2025-03-08')"), 4);
	/* bounded: a caller cannot make tables without end */
	{
		PGresult *r = PQexec(g_app, "SELECT gl_ensure_usage_partitions('2000-01-01', '2020-01-01')");
		assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
		PQclear(r);
		r = PQexec(g_app, "SELECT gl_ensure_usage_partitions('2000-01-01', 'infinity')");
		assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
		PQclear(r);
	}
	/* a month of the audit log: made through the log's function, granted to nobody */
	assert_int_equal(gl_test_qint(g_app, "SELECT gl_audit_partitions_ensure('2040-01-01', 1)"), 1);
	assert_int_equal(gl_test_qint(g_app, "SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a"
					     " WHERE c.relname = 'audit_log_2040_01' AND a.grantee <> c.relowner"),
			 0);
	expect_denied(g_app, "DELETE FROM audit_log_2040_01");
	/* retention: a past month dropped by `audit prune`, as the application role */
	assert_int_equal(gl_test_qint(g_app, "SELECT gl_audit_partitions_ensure('2020-01-01', 1)"), 1);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "prune", "--before", "2020-02", NULL), 0);
	if (o.status != 0)
		fail_msg("audit prune as the application role: %d %s", o.status, o.err);
	assert_non_null(strstr(o.out, "dropped 1 partitions"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_app, "SELECT coalesce(to_regclass('audit_log_2020_01')::text, 'gone')"), "gone");
	/* its temporary tables, TRUNCATE and ANALYZE of them included */
	assert_int_equal(gl_test_qint(g_app, "CREATE TEMP TABLE gl_t (x integer); INSERT INTO gl_t VALUES (1);"
					     " ANALYZE gl_t; TRUNCATE gl_t; SELECT count(*) FROM gl_t"),
			 0);
}

/* The daemon as the application role only: it starts on a migrated
 * database without touching the owner role, and its audit writer makes
 * the coming months' partitions again when they are gone. */
static void test_daemon_makes_partitions_as_app(void **state)
{
	struct gl_test_daemon d;
	char next[2][40];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	for (int k = 1; k <= 2; k++) {
		int m = tm.tm_year * 12 + tm.tm_mon + k;
		char sql[80];
		snprintf(next[k - 1], sizeof next[k - 1], "audit_log_%04d_%02d", 1900 + m / 12, m % 12 + 1);
		snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", next[k - 1]);
		assert_true(gl_test_exec_dsn(g_own, sql) >= 0);
	}
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, "log:\n  level: info\n", (const char *const[]){"--no-ingest", NULL}),
			 0);
	{
		cJSON *j = gl_test_get_json(d.port, "/v1/whoami", 200);
		assert_non_null(j);
		cJSON_Delete(j);
	}
	for (int i = 0; i < 100 && gl_test_qintf(g_app, "SELECT count(*) FROM pg_class WHERE relname IN ('%s', '%s')",
						 next[0], next[1]) != 2;
	     i++)
		usleep(100000);
	assert_int_equal(gl_test_qintf(g_app, "SELECT count(*) FROM pg_class WHERE relname IN ('%s', '%s')", next[0],
				       next[1]),
			 2);
	/* nothing of the daemon's runs as the owner role */
	{
		PGconn *su = connect_or_fail(g_su);
		assert_true(gl_test_qint(su, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'gl_test_db_roles'"
					     " AND usename = 'gpuledger'") >= 2);
		assert_int_equal(gl_test_qintf(su, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'gl_test_db_roles'"
						   " AND usename = 'gpuledger_owner' AND pid <> %d",
					       PQbackendPID(g_owner)),
				 0);
		PQfinish(su);
	}
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A site with one role (no migrate DSN) keeps working, and is told so. */
static void test_one_role_external(void **state)
{
	char dsn[600], sql[200];
	struct gl_test_out o;
	const char *const one[] = {"GPULEDGER_MIGRATE_DSN=", NULL};
	snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS gl_test_one_role WITH (FORCE)");
	assert_true(gl_test_exec_dsn(gl_test_admin_dsn(), sql) >= 0);
	assert_true(gl_test_exec_dsn(gl_test_admin_dsn(), "CREATE DATABASE gl_test_one_role OWNER gpuledger"
							  " TEMPLATE template0 ENCODING 'UTF8'") >= 0);
	snprintf(dsn, sizeof dsn, "%s dbname=gl_test_one_role", gl_test_app_dsn_base());
	assert_int_equal(gl_test_run(dsn, one, &o, "check-config", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "database: one role runs the migrations and the service (no database.migrate_dsn)"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_run(dsn, one, &o, "migrate", NULL), 0);
	if (o.status != 0)
		fail_msg("migrate with one role: %s", o.err);
	assert_non_null(strstr(o.out, "migrate: one role, gpuledger, owns the schema and serves"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_run(dsn, one, &o, "token", "create", "--name", "one", "--role", "viewer", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	/* with the migrate DSN set, check-config has nothing to say of it */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "check-config", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_null(strstr(o.out, "one role"));
	gl_test_out_fini(&o);
	/* and migrate names both roles */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "migrate", NULL), 0);
	assert_non_null(strstr(o.out, "ran as gpuledger_owner, which owns the schema; the service's role gpuledger"));
	gl_test_out_fini(&o);
	assert_true(gl_test_exec_dsn(gl_test_admin_dsn(), "DROP DATABASE gl_test_one_role WITH (FORCE)") >= 0);
}

/* A migrate DSN that reaches another database is refused before anything
 * is migrated there; one without an external database is a config error. */
static void test_migrate_dsn_mismatch_refused(void **state)
{
	char env[2200], other[2048], app_postgres[700];
	struct gl_test_out o;
	snprintf(app_postgres, sizeof app_postgres, "%s dbname=postgres", gl_test_app_dsn_base());
	assert_int_equal(gl_test_owner_dsn(app_postgres, other, sizeof other), 0);
	snprintf(env, sizeof env, "GPULEDGER_MIGRATE_DSN=%s", other);
	assert_int_equal(gl_test_run(g_dsn, (const char *const[]){env, NULL}, &o, "migrate", NULL), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "the migrate DSN reaches database postgres"));
	assert_non_null(strstr(o.err, "database.dsn reaches gl_test_db_roles"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint_dsn(gl_test_admin_dsn(), "SELECT count(*) FROM pg_class"
							      " WHERE relname = 'schema_migrations'"),
			 0);
	snprintf(env, sizeof env, "GPULEDGER_MIGRATE_DSN=%s", g_own);
	assert_int_equal(gl_test_run(NULL, (const char *const[]){env, NULL}, &o, "check-config", NULL), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "GPULEDGER_MIGRATE_DSN is set without an external database"));
	gl_test_out_fini(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_app_role_owns_nothing),
		cmocka_unit_test(test_app_role_cannot_change_the_schema),
		cmocka_unit_test(test_grants_cover_the_schema),
		cmocka_unit_test(test_grant_refuses_what_it_cannot_bind),
		cmocka_unit_test(test_runtime_ddl_as_app),
		cmocka_unit_test(test_daemon_makes_partitions_as_app),
		cmocka_unit_test(test_one_role_external),
		cmocka_unit_test(test_migrate_dsn_mismatch_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
