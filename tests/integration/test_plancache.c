/* Statements planned once per session (src/store/plancache_int.h): what a
 * central database of shards does with its costly queries. On a real
 * server: a marked session prepares a statement once and runs it with a
 * generic plan, the session's other statements keep plan_cache_mode's
 * default (inside and outside a transaction), a failing statement leaves
 * the session usable and reports its SQLSTATE, a new backend (a reset)
 * prepares again, and an unmarked session prepares nothing. Inside a read
 * transaction a marked session answers a statement asked again with the
 * same parameters from the answer it gave, and asks anew in the next. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"
#include "store/plancache_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char Q[] = "SELECT $1::int + count(*)::int, current_setting('plan_cache_mode') FROM pg_class WHERE oid > $2::oid";

static char g_dsn[512];

static long long prepared(PGconn *c)
{
	return gl_test_qint(c, "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'gl_pc_%'");
}

/* Q through the cache: its first column, and the plan_cache_mode it ran under. */
static long long run(PGconn *c, const char *x, char *mode, size_t n)
{
	struct gl_err err = {0};
	PGresult *r = NULL;
	long long v;
	assert_int_equal(gl_plancache_query(c, Q, 2, (const char *[]){x, "0"}, &r, &err), 0);
	assert_int_equal(PQntuples(r), 1);
	v = atoll(PQgetvalue(r, 0, 0));
	snprintf(mode, n, "%s", PQgetvalue(r, 0, 1));
	PQclear(r);
	return v;
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
	assert_string_equal(gl_test_qstr(c, "SELECT generic_plans || '/' || custom_plans FROM pg_prepared_statements"
					    " WHERE name LIKE 'gl_pc_%'"),
			    "2/0");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prepared_once_generic),
		cmocka_unit_test(test_answers_kept_in_read_txn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
