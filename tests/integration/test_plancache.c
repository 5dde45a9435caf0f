/* Statements planned once per session (src/store/plancache_int.h): what a
 * central database of shards does with its costly queries. On a real
 * server: a marked session prepares a statement once and runs it with a
 * generic plan, the session's other statements keep plan_cache_mode's
 * default (inside and outside a transaction), a failing statement leaves
 * the session usable and reports its SQLSTATE, a new backend (a reset)
 * prepares again, and an unmarked session prepares nothing. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prepared_once_generic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
