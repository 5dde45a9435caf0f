/* Statements planned once per session (src/store/plancache_int.h): what a
 * central database of shards does with its costly queries. On a real
 * server: a marked session prepares a statement once and runs it with a
 * generic plan, the session's other statements keep plan_cache_mode's
 * default (inside and outside a transaction), a failing statement leaves
 * the session usable and reports its SQLSTATE, a new backend (a reset)
 * prepares again, and an unmarked session prepares nothing. Inside a read
 * transaction a marked session answers a statement asked again with the
 * same parameters from the answer it gave, and asks anew in the next.
 * gl_plancache_query_generic prepares once on an unmarked session, one
 * thread's sessions used in turn each once, and the chargeback's live
 * lines of a request (the open jobs' parts in one statement) go through
 * it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/accounting.h"
#include "lib/testlib.h"
#include "store/plancache_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char Q[] = "SELECT $1::int + count(*)::int, current_setting('plan_cache_mode') FROM pg_class WHERE oid > $2::oid";

static char g_dsn[512];

static long long prepared(PGconn *c)
{
	return gl_test_qint(c, "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'gl_pc_%'");
}

/* generic / custom plans of the statements whose name starts with prefix */
static const char *plans(PGconn *c, const char *prefix)
{
	char sql[160];
	snprintf(sql, sizeof sql,
		 "SELECT generic_plans || '/' || custom_plans FROM pg_prepared_statements WHERE name LIKE '%s%%'", prefix);
	return gl_test_qstr(c, sql);
}

typedef int (*query_fn)(PGconn *, const char *, int, const char *const *, PGresult **, struct gl_err *);

/* Q through query: its first column, and the plan_cache_mode it ran under. */
static long long run_by(query_fn query, PGconn *c, const char *x, char *mode, size_t n)
{
	struct gl_err err = {0};
	PGresult *r = NULL;
	long long v;
	assert_int_equal(query(c, Q, 2, (const char *[]){x, "0"}, &r, &err), 0);
	assert_int_equal(PQntuples(r), 1);
	v = atoll(PQgetvalue(r, 0, 0));
	snprintf(mode, n, "%s", PQgetvalue(r, 0, 1));
	PQclear(r);
	return v;
}

static long long run(PGconn *c, const char *x, char *mode, size_t n)
{
	return run_by(gl_plancache_query, c, x, mode, n);
}

static void test_prepared_once_generic(void **state)
{
	struct gl_err err = {0};
	PGconn *c = NULL;
	PGresult *r = NULL;
	char mode[32];
	long long base;
	(void)state;
	assert_int_equal(gl_test_db_fresh("gl_test_plancache", g_dsn, sizeof g_dsn), 0);
	assert_int_equal(gl_db_connect_dsn(g_dsn, &c, &err), 0);

	/* unmarked: as gl_db_query, nothing prepared */
	base = run(c, "0", mode, sizeof mode);
	assert_string_equal(mode, "auto");
	assert_int_equal(prepared(c), 0);

	gl_plancache_enable(c, 1);
	assert_int_equal(run(c, "5", mode, sizeof mode), base + 5);
	assert_string_equal(mode, "force_generic_plan");
	assert_int_equal(run(c, "7", mode, sizeof mode), base + 7);
	assert_int_equal(prepared(c), 1);
	assert_string_equal(plans(c, "gl_pc_"), "2/0");
	/* the session's other statements keep the default */
	assert_string_equal(gl_test_qstr(c, "SHOW plan_cache_mode"), "auto");
	PQclear(PQexec(c, "BEGIN"));
	assert_int_equal(run(c, "1", mode, sizeof mode), base + 1);
	assert_string_equal(gl_test_qstr(c, "SHOW plan_cache_mode"), "auto");
	PQclear(PQexec(c, "COMMIT"));

	/* a failure: reported with its SQLSTATE, the session usable after */
	assert_int_not_equal(gl_plancache_query(c, Q, 2, (const char *[]){"x", "0"}, &r, &err), 0);
	assert_null(r);
	assert_string_equal(gl_db_last_sqlstate(), "22P02");
	assert_non_null(strstr(err.msg, "invalid input syntax"));
	assert_int_not_equal(gl_plancache_query(c, "SELECT 1/$1::int", 1, (const char *[]){"0"}, &r, &err), 0);
	assert_string_equal(gl_db_last_sqlstate(), "22012");
	assert_int_equal(prepared(c), 2); /* prepared, then failed: kept, not made twice */
	assert_int_not_equal(gl_plancache_query(c, "SELECT 1/$1::int", 1, (const char *[]){"0"}, &r, &err), 0);
	assert_string_equal(gl_db_last_sqlstate(), "22012");
	assert_int_equal(run(c, "2", mode, sizeof mode), base + 2);
	assert_string_equal(gl_test_qstr(c, "SHOW plan_cache_mode"), "auto");

	/* a new backend under the same connection prepares again */
	PQreset(c);
	assert_int_equal(prepared(c), 0);
	assert_int_equal(run(c, "3", mode, sizeof mode), base + 3);
	assert_int_equal(prepared(c), 1);

	/* unmarked again: nothing more prepared */
	gl_plancache_enable(c, 0);
	assert_int_equal(run(c, "4", mode, sizeof mode), base + 4);
	assert_string_equal(mode, "auto");
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM pg_prepared_statements"), 1);
	PQfinish(c);
}

/* clock_timestamp() differs at every execution: an answer that repeats
 * it was not asked again */
static char *clock_of(PGconn *c, const char *x)
{
	struct gl_err err = {0};
	PGresult *r = NULL;
	char *v;
	assert_int_equal(gl_plancache_query(c, "SELECT clock_timestamp()::text || ' ' || $1::text", 1, (const char *[]){x}, &r,
					    &err),
			 0);
	assert_int_equal(PQntuples(r), 1);
	v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

static void test_answers_kept_in_read_txn(void **state)
{
	struct gl_err err = {0};
	PGconn *c = NULL;
	char *a, *b, *y, *next, *o1, *o2;
	(void)state;
	assert_int_equal(gl_db_connect_dsn(g_dsn, &c, &err), 0);
	gl_plancache_enable(c, 1);
	PQclear(PQexec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
	gl_plancache_read_txn(c, 1);
	a = clock_of(c, "x");
	b = clock_of(c, "x");
	y = clock_of(c, "y");
	assert_string_equal(a, b);
	assert_string_not_equal(a, y);
	gl_plancache_read_txn(c, 0);
	PQclear(PQexec(c, "COMMIT"));
	/* the next transaction asks again */
	PQclear(PQexec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
	gl_plancache_read_txn(c, 1);
	next = clock_of(c, "x");
	assert_string_not_equal(a, next);
	gl_plancache_read_txn(c, 0);
	PQclear(PQexec(c, "COMMIT"));
	/* outside one, every call is asked */
	o1 = clock_of(c, "x");
	o2 = clock_of(c, "x");
	assert_string_not_equal(o1, o2);
	free(a);
	free(b);
	free(y);
	free(next);
	free(o1);
	free(o2);
	gl_plancache_enable(c, 0);
	PQfinish(c);
}


static long long generic_prepared(PGconn *c)
{
	return gl_test_qint(c, "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'gl_pg_%'");
}

static long long run_generic(PGconn *c, const char *x, char *mode, size_t n)
{
	return run_by(gl_plancache_query_generic, c, x, mode, n);
}

static void test_generic_unmarked(void **state)
{
	struct gl_err err = {0};
	PGconn *a = NULL, *b = NULL;
	char mode[32];
	long long base;
	(void)state;
	assert_int_equal(gl_db_connect_dsn(g_dsn, &a, &err), 0);
	assert_int_equal(gl_db_connect_dsn(g_dsn, &b, &err), 0);
	base = run_generic(a, "0", mode, sizeof mode);
	assert_string_equal(mode, "force_generic_plan");
	assert_int_equal(run_generic(a, "5", mode, sizeof mode), base + 5);
	assert_string_equal(plans(a, "gl_pg_"), "2/0");
	assert_int_equal(generic_prepared(a), 1);
	assert_string_equal(gl_test_qstr(a, "SHOW plan_cache_mode"), "auto");
	/* one thread's two sessions in turn: each prepared once, and never
	 * prepared twice (which would fail) when the thread comes back */
	assert_int_equal(run_generic(b, "1", mode, sizeof mode), base + 1);
	assert_int_equal(run_generic(a, "2", mode, sizeof mode), base + 2);
	assert_int_equal(run_generic(b, "3", mode, sizeof mode), base + 3);
	assert_int_equal(generic_prepared(a), 1);
	assert_int_equal(generic_prepared(b), 1);
	/* a new backend prepares again */
	PQreset(a);
	assert_int_equal(generic_prepared(a), 0);
	assert_int_equal(run_generic(a, "4", mode, sizeof mode), base + 4);
	assert_int_equal(generic_prepared(a), 1);
	/* a marked session runs it as gl_db_query */
	gl_plancache_enable(b, 1);
	PQreset(b);
	assert_int_equal(run_generic(b, "6", mode, sizeof mode), base + 6);
	assert_string_equal(mode, "auto");
	assert_int_equal(gl_test_qint(b, "SELECT count(*) FROM pg_prepared_statements"), 0);
	gl_plancache_enable(b, 0);
	PQfinish(a);
	PQfinish(b);
}

/* The chargeback of the last hour by team on c (a live piece, no built
 * day: the open jobs' parts in one statement, lines_parts). */
static void hour_lines(PGconn *c, int64_t now)
{
	static const char *const dims[] = {"team"};
	struct gl_window w = {.start_s = now - 3600, .end_s = now};
	struct gl_accounting_query q;
	struct gl_accounting_meta meta = {0};
	struct gl_chargeback cb;
	struct gl_err err = {0};
	gl_accounting_query_init(&q, &w, 1, dims, 1, now);
	gl_chargeback_init(&cb, 1, GL_CHARGEBACK_SHARE_NONE, 1);
	if (gl_accounting_chargeback_finished(gl_db_store(c), &q, &cb, &meta, &err))
		fail_msg("%s", err.msg);
	gl_accounting_meta_fini(&meta);
	gl_chargeback_fini(&cb);
}

static const char live_plans[] = "SELECT coalesce(string_agg(generic_plans || '/' || custom_plans, ','), 'none')"
				 " FROM pg_prepared_statements WHERE name LIKE 'gl_pg_%' AND statement LIKE '%gl_job_usage_steps%'";

/* Twice on one session: prepared once, run twice with a generic plan;
 * then, with exporter usage in the hour, with its custom plan (the
 * generic one is not run a third time). */
static void test_live_lines_generic(void **state)
{
	struct gl_err err = {0};
	PGconn *c = NULL;
	int64_t now = (int64_t)time(NULL);
	char sql[512];
	(void)state;
	assert_int_equal(gl_db_connect_dsn(g_dsn, &c, &err), 0);
	hour_lines(c, now);
	hour_lines(c, now);
	assert_string_equal(gl_test_qstr(c, live_plans), "2/0");
	snprintf(sql, sizeof sql,
		 "SELECT gl_ensure_dcgm_partitions(to_timestamp(%lld) - interval '1 day', to_timestamp(%lld) + interval '1 day');"
		 " INSERT INTO gpu_usage_jobs VALUES (1, to_timestamp(%lld), 1, 1, 'hpc_job', 1, 1, 0, 300, 300, 0)",
		 (long long)now, (long long)now, (long long)(now - 600));
	assert_true(gl_test_exec_dsn(g_dsn, sql) >= 0);
	hour_lines(c, now);
	assert_string_equal(gl_test_qstr(c, live_plans), "2/0");
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prepared_once_generic),
		cmocka_unit_test(test_answers_kept_in_read_txn),
		cmocka_unit_test(test_generic_unmarked),
		cmocka_unit_test(test_live_lines_generic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
