/* A central's reach into its shards, attacked as the service role
 * (docs/security.md, "A central's connections to its shards"). The
 * SECURITY DEFINER functions that ask every shard (gl_fleet_send, sql/140)
 * keep a dblink connection per session and shard, opened with the owner's
 * rights through the shard's foreign server and user mapping. A session of
 * the service role (gpuledger, which may only read the shards' foreign
 * tables) that made them open those connections tries to use them itself:
 * list and drive them with dblink_get_connections / dblink_exec / dblink
 * (write a shard's rates, read its tables), open one of its own to the
 * foreign server, read the mapping's password, and smuggle SQL through
 * gl_fleet_send's column list and prepared statements (to the shard, and
 * to the central as the owner). Every attempt must be refused and the
 * shard's rates left whole. A central whose dblink was installed in schema
 * public (the way before sql/143) is upgraded by the superuser's step
 * (`audit harden`; `migrate` on the embedded cluster). The SECURITY
 * DEFINER functions are checked from the catalogs: search_path pinned with
 * pg_temp last, EXECUTE not PUBLIC's.
 * Real servers: a shard made by the real `db init/start`, `migrate`,
 * `shard init`, the central on the suite's cluster, `shard attach`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_tmp[PATH_MAX], g_cfg[PATH_MAX], g_shard_dsn[1024], g_central[512];
static PGconn *g_shard_su;

static const char RATES[] = "rates:\n  - model: '*'\n    per_gpu_hour: \"2.17\"\n"
			    "  - model: a100\n    per_gpu_hour: \"3.10\"\n";

static int setup(void **state)
{
	char dir[PATH_MAX], rates[PATH_MAX];
	const char *t = getenv("GL_TEST_TMP");
	FILE *f;
	(void)state;
	snprintf(g_tmp, sizeof g_tmp, "%s/sharddef", t ? t : "/tmp");
	mkdir(g_tmp, 0755);
	snprintf(dir, sizeof dir, "%s/shard1", g_tmp);
	snprintf(rates, sizeof rates, "%s/rates.yaml", g_tmp);
	if (!(f = fopen(rates, "w")) || fputs(RATES, f) < 0 || fclose(f))
		return -1;
	if (gl_test_shard_server(dir, 1, g_cfg, sizeof g_cfg, g_shard_dsn, sizeof g_shard_dsn) ||
	    gl_test_cli_cfg(g_cfg, "rates", "load", rates, NULL))
		return -1;
	if (gl_test_db_fresh("gl_test_shard_definer", g_central, sizeof g_central) ||
	    gl_test_shard_attach(g_central, 1, "east", g_shard_dsn))
		return -1;
	return (g_shard_su = gl_test_shard_superuser(g_shard_dsn)) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	PQfinish(g_shard_su);
	if (g_cfg[0])
		gl_test_cli_cfg(g_cfg, "db", "stop", NULL);
	return 0;
}

/* The attempts that did not end as they must (all are tried and printed,
 * then this is asserted 0). */
static int g_through;

/* sql run on c: "" when it ran (its first value, if any, in val), else
 * its SQLSTATE; the outcome is printed, the evidence of each attempt. */
static const char *attempt(PGconn *c, const char *what, const char *sql, char *val, size_t n)
{
	static char state[8];
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);
	if (val)
		snprintf(val, n, "%s", st == PGRES_TUPLES_OK && PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
		state[0] = '\0';
		fprintf(stderr, "attack %s: ran (%s)\n", what, val ? val : "");
	} else {
		snprintf(state, sizeof state, "%s", PQresultErrorField(r, PG_DIAG_SQLSTATE));
		fprintf(stderr, "attack %s: refused %s %s", what, state, PQresultErrorMessage(r));
	}
	PQclear(r);
	PQclear(PQexec(c, "ROLLBACK"));
	return state;
}

/* An attempt that must be refused with SQLSTATE want (any error: NULL). */
static void refused(PGconn *c, const char *what, const char *sql, const char *want)
{
	char val[512];
	const char *st = attempt(c, what, sql, val, sizeof val);
	if (!st[0] || (want && strcmp(st, want))) {
		fprintf(stderr, "  ^ got through: %s, not %s\n", st[0] ? st : "it ran", want ? want : "an error");
		g_through++;
	}
}

/* The session the daemon has on a central: routed to the shards, its
 * dblink connection to each opened by the functions that ask them. */
static PGconn *routed_session(void)
{
	PGconn *c = PQconnectdb(g_central);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PQclear(PQexec(c, "SET client_min_messages = warning"));
	assert_string_equal(gl_test_qstr(c, "SELECT current_user"), "gpuledger");
	assert_int_equal(gl_test_qint(c, "SELECT mask FROM gl_fleet_route()"), 1);
	/* both ways a request asks the shards: a text, and a prepared statement */
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM gl_capacity_missing(0, 86400, NULL)"), 0);
	assert_string_equal(gl_test_qstr(c, "SELECT x FROM gl_fleet_prepared_rows('SELECT $1::text', 'text', '{shard}',"
					    " 'x text') AS t(x text)"),
			    "shard");
	return c;
}

/* The shard's backends that a central's dblink connection holds: the
 * ones whose last query was a central's question. */
static long long dblink_backends(void)
{
	return gl_test_qint(g_shard_su, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'gpuledger'"
					" AND (query LIKE '%gl_fp_%' OR query LIKE '%gl_read_only_rows%')");
}

/* Writes a row into the shard's gpu_model_canon when its transaction is
 * read-write, else answers "ro". */
#define NOTE_GPU                                                                                                       \
	"SELECT x FROM gl_fleet_send(1, 'SELECT CASE WHEN current_setting(''transaction_read_only'') = ''on'' THEN ''ro''" \
	" ELSE (SELECT ''w'' FROM gl_gpu_model_note(ARRAY[$1])) END', 'text', '{atk_gpu}', 'x text') AS t(x text)"

static void test_service_role_cannot_use_the_owners_connections(void **state)
{
	char cn[128], sql[1024], val[512];
	long long rates0, rates1;
	PGconn *c;
	(void)state;
	rates0 = gl_test_qint(g_shard_su, "SELECT count(*) FROM rates");
	assert_true(rates0 >= 2);
	c = routed_session();
	/* the connections are there to be attacked: else the test proves nothing */
	assert_true(dblink_backends() >= 1);
	snprintf(cn, sizeof cn, "%s",
		 gl_test_qstr(c, "SELECT format('gl_capmiss_%s_%s', name, extract(epoch FROM attached_at)::bigint) FROM shards"));

	/* SQL in gl_fleet_send's column list: run on the central as the
	 * owner (the password), and on the shard after its read-only query */
	refused(c, "cols as owner",
		"SELECT x FROM gl_fleet_send(1, 'SELECT ''a''::text', NULL, NULL, 'x text) WHERE false UNION ALL"
		" SELECT array_to_string(umoptions, '','') FROM pg_user_mappings --') AS t(x text)",
		NULL);
	refused(c, "cols on the shard",
		"SELECT x FROM gl_fleet_send(1, 'SELECT ''a''::text', NULL, NULL, 'x text); COMMIT;"
		" BEGIN READ WRITE; DELETE FROM rates WHERE rate_id = (SELECT max(rate_id) FROM rates); COMMIT;"
		" SELECT * FROM gl_read_only_rows(''SELECT 1::text'') AS t(x text') AS t(x text)",
		NULL);
	fprintf(stderr, "the shard's rates: %lld\n", gl_test_qint(g_shard_su, "SELECT count(*) FROM rates"));
	/* a prepared DELETE executed once the connection's default is read-write
	 * again (set by a query of its own), gl_fleet_send told it is prepared */
	attempt(c, "prepare a delete",
		"SELECT x FROM gl_fleet_send(1, 'DELETE FROM rates WHERE $1 RETURNING ''d''::text', 'boolean', '{t}',"
		" 'x text') AS t(x text)",
		val, sizeof val);
	/* (the query after a request that failed reading a shard is sent,
	 * not taken for sent and read as an empty answer) */
	assert_string_equal(attempt(c, "default read-write",
				    "SELECT x FROM gl_fleet_send(1, 'SELECT set_config(''default_transaction_read_only'',"
				    " ''off'', false)', NULL, NULL, 'x text') AS t(x text)",
				    val, sizeof val),
			    "");
	assert_string_equal(val, "off");
	snprintf(sql, sizeof sql,
		 "SELECT set_config('gl.fleet_prepared', ' %s/gl_fp_' || left(md5('boolean DELETE FROM rates WHERE $1"
		 " RETURNING ''d''::text'), 16) || ' ', false)",
		 cn);
	assert_string_equal(attempt(c, "claim prepared", sql, val, sizeof val), "");
	refused(c, "execute the delete",
		"SELECT x FROM gl_fleet_send(1, 'DELETE FROM rates WHERE $1 RETURNING ''d''::text', 'boolean', '{t}',"
		" 'x text') AS t(x text)",
		NULL);
	/* a prepared statement that writes only when its transaction may:
	 * prepared (and run read-only) first, then run again once a query
	 * of its own has made the connection's default read-write */
	assert_string_equal(attempt(c, "prepare a conditional write", NOTE_GPU, val, sizeof val), "");
	assert_string_equal(val, "ro");
	attempt(c, "default read-write again",
		"SELECT x FROM gl_fleet_send(1, 'SELECT set_config(''default_transaction_read_only'', ''off'', false)',"
		" NULL, NULL, 'x text') AS t(x text)",
		val, sizeof val);
	attempt(c, "run the conditional write", NOTE_GPU, val, sizeof val);
	if (strcmp(val, "ro"))
		g_through++;
	assert_int_equal(gl_test_qint(g_shard_su, "SELECT count(*) FROM gpu_model_canon WHERE raw = 'atk_gpu'"), 0);
	fprintf(stderr, "the shard's rates after gl_fleet_send's: %lld\n", gl_test_qint(g_shard_su, "SELECT count(*) FROM rates"));

	/* the session's named connections, listed and driven */
	refused(c, "list", "SELECT array_to_string(dblink_get_connections(), ',')", NULL);
	refused(c, "list gl_dblink", "SELECT array_to_string(gl_dblink.dblink_get_connections(), ',')", "42501");
	snprintf(sql, sizeof sql, "SELECT dblink_exec('%s', 'BEGIN READ WRITE; DELETE FROM rates; COMMIT')", cn);
	refused(c, "dblink_exec", sql, NULL);
	snprintf(sql, sizeof sql, "SELECT gl_dblink.dblink_exec('%s', 'BEGIN READ WRITE; DELETE FROM rates; COMMIT')", cn);
	refused(c, "dblink_exec gl_dblink", sql, "42501");
	snprintf(sql, sizeof sql, "SELECT * FROM dblink('%s', 'SELECT count(*)::text FROM audit_log') AS t(x text)", cn);
	refused(c, "dblink read", sql, NULL);
	snprintf(sql, sizeof sql, "SELECT * FROM gl_dblink.dblink('%s', 'SELECT count(*)::text FROM audit_log') AS t(x text)",
		 cn);
	refused(c, "dblink read gl_dblink", sql, "42501");

	/* a connection of its own through the foreign server and its mapping */
	refused(c, "connect", "SELECT dblink_connect('atk', 'gl_shard_east_srv')", NULL);
	refused(c, "connect gl_dblink", "SELECT gl_dblink.dblink_connect('atk', 'gl_shard_east_srv')", "42501");
	/* the mapping's password */
	assert_string_equal(attempt(c, "pg_user_mappings",
				    "SELECT count(*) FROM pg_user_mappings WHERE umoptions IS NOT NULL", val, sizeof val),
			    "");
	if (strcmp(val, "0"))
		g_through++;

	rates1 = gl_test_qint(g_shard_su, "SELECT count(*) FROM rates");
	fprintf(stderr, "the shard's rates: %lld before, %lld after\n", rates0, rates1);
	assert_int_equal(rates1, rates0);
	assert_int_equal(g_through, 0);
	/* and the session still asks its shards */
	assert_string_equal(gl_test_qstr(c, "SELECT x FROM gl_fleet_prepared_rows('SELECT $1::text', 'text', '{again}',"
					    " 'x text') AS t(x text)"),
			    "again");
	PQfinish(c);
}

/* Every SECURITY DEFINER function of the schema: search_path pinned with
 * pg_temp last, EXECUTE not PUBLIC's (the audit log's partition functions
 * excepted, docs/security.md "Two roles"); dblink's functions are the
 * owner's alone. */
static void test_definer_functions_pinned(void **state)
{
	PGconn *c = PQconnectdb(g_central);
	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_true(gl_test_qint(c, "SELECT count(*) FROM pg_proc WHERE prosecdef AND pronamespace = 'public'::regnamespace") >=
		    15);
	assert_string_equal(gl_test_qstr(c, "SELECT coalesce(string_agg(proname, ', '), '') FROM pg_proc p"
					    " WHERE prosecdef AND pronamespace = 'public'::regnamespace"
					    " AND NOT EXISTS (SELECT 1 FROM unnest(proconfig) s"
					    "  WHERE s LIKE 'search_path=%' AND s LIKE '%pg_temp')"),
			    "");
	assert_string_equal(gl_test_qstr(c, "SELECT coalesce(string_agg(proname, ', ' ORDER BY proname), '') FROM pg_proc p"
					    " WHERE prosecdef AND pronamespace = 'public'::regnamespace"
					    " AND has_function_privilege('public', p.oid, 'EXECUTE')"
					    " AND proname NOT LIKE 'gl_audit_partitions_%'"),
			    "");
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'gl_dblink'::regnamespace"
					 " AND has_function_privilege('gpuledger', oid, 'EXECUTE')"
					 " AND has_schema_privilege('gpuledger', 'gl_dblink', 'USAGE')"),
			 0);
	PQfinish(c);
}

/* A central attached before sql/143, dblink in schema public: migrated,
 * it no longer asks the shards over dblink where anyone may call it (the
 * answers the same, read as without dblink), and the superuser's `audit
 * harden` moves dblink into gl_dblink, after which it asks them again. */
static void test_central_with_public_dblink_upgraded(void **state)
{
	char dsn[512], su_dsn[1024], val[64];
	PGconn *su, *c;
	struct gl_test_out o;
	(void)state;
	assert_int_equal(gl_test_db_fresh("gl_test_shard_definer_old", dsn, sizeof dsn), 0);
	snprintf(su_dsn, sizeof su_dsn, "%s dbname=gl_test_shard_definer_old", gl_test_admin_dsn());
	assert_non_null(su = PQconnectdb(su_dsn));
	assert_int_equal(PQstatus(su), CONNECTION_OK);
	assert_true(gl_test_sql_ok(su, "CREATE EXTENSION postgres_fdw"));
	assert_true(gl_test_sql_ok(su, "CREATE EXTENSION dblink SCHEMA public"));
	assert_true(gl_test_sql_ok(su, "GRANT USAGE ON FOREIGN DATA WRAPPER postgres_fdw TO gpuledger, gpuledger_owner"));
	assert_int_equal(gl_test_cli(dsn, "shard", "attach", "east", "--index", "1", "--dsn", g_shard_dsn, NULL), 0);
	assert_int_equal(gl_test_cli(dsn, "migrate", NULL), 0);

	assert_non_null(c = PQconnectdb(dsn));
	assert_int_equal(gl_test_qint(c, "SELECT mask FROM gl_fleet_route()"), 1);
	assert_string_equal(gl_test_qstr(c, "SELECT x FROM gl_fleet_prepared_rows('SELECT $1::text', 'text', '{here}',"
					    " 'x text') AS t(x text)"),
			    "here");
	assert_string_equal(attempt(c, "public dblink, nothing opened", "SELECT coalesce(array_length(dblink_get_connections(), 1), 0)",
				    val, sizeof val),
			    "");
	assert_string_equal(val, "0");
	PQfinish(c);

	assert_int_equal(gl_test_run(su_dsn, (const char *const[]){"GPULEDGER_MIGRATE_DSN=", NULL}, &o, "audit", "harden", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "gl_dblink"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(su, "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'dblink'"),
			    "gl_dblink");
	/* its functions the owner's alone, should the schema ever be granted */
	assert_int_equal(gl_test_qint(su, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'gl_dblink'::regnamespace"
					  " AND has_function_privilege('gpuledger', oid, 'EXECUTE')"),
			 0);
	assert_true(gl_test_qint(su, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'gl_dblink'::regnamespace"
				     " AND has_function_privilege('gpuledger_owner', oid, 'EXECUTE')") >= 20);
	PQfinish(su);

	assert_non_null(c = PQconnectdb(dsn));
	assert_int_equal(gl_test_qint(c, "SELECT mask FROM gl_fleet_route()"), 1);
	assert_string_equal(gl_test_qstr(c, "SELECT x FROM gl_fleet_prepared_rows('SELECT $1::text', 'text', '{there}',"
					    " 'x text') AS t(x text)"),
			    "there");
	assert_string_equal(attempt(c, "moved dblink", "SELECT gl_dblink.dblink_get_connections()", val, sizeof val), "42501");
	PQfinish(c);
}

/* On the embedded cluster `migrate` holds the superuser and takes the step
 * itself: a dblink made in public (the shard server is one such cluster)
 * is moved into gl_dblink, its functions the owner's alone. */
static void test_embedded_migrate_moves_dblink(void **state)
{
	(void)state;
	assert_true(gl_test_sql_ok(g_shard_su, "CREATE EXTENSION dblink SCHEMA public"));
	assert_int_equal(gl_test_cli_cfg(g_cfg, "migrate", NULL), 0);
	assert_string_equal(gl_test_qstr(g_shard_su, "SELECT extnamespace::regnamespace::text FROM pg_extension"
						     " WHERE extname = 'dblink'"),
			    "gl_dblink");
	assert_int_equal(gl_test_qint(g_shard_su, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'gl_dblink'::regnamespace"
						  " AND (has_function_privilege('gpuledger', oid, 'EXECUTE')"
						  "  OR has_schema_privilege('gpuledger', 'gl_dblink', 'USAGE'))"),
			 0);
	assert_true(gl_test_qint(g_shard_su, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'gl_dblink'::regnamespace"
					     " AND has_function_privilege('gpuledger_owner', oid, 'EXECUTE')") >= 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_service_role_cannot_use_the_owners_connections),
		cmocka_unit_test(test_definer_functions_pinned),
		cmocka_unit_test(test_central_with_public_dblink_upgraded),
		cmocka_unit_test(test_embedded_migrate_moves_dblink),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
