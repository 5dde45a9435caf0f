/* gl_db_copy_out_binary on a real PostgreSQL: rows and NULLs arrive as
 * typed, a callback error or a row of the wrong width ends the stream with
 * that error and the connection stays usable (the rest is drained), and a
 * bad statement is an error naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/db_int.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <string.h>

static char g_dsn[512];
static PGconn *g_c;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_copy_out", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	return PQstatus(g_c) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

struct seen {
	long rows, nulls, sum;
	int64_t first_ts;
	char last_text[32];
	long fail_at; /* the callback fails at this row (0: never) */
};

static int on_row(void *ctx, const struct gl_db_field *f, int n, struct gl_err *err)
{
	struct seen *s = ctx;
	(void)n;
	s->rows++;
	if (s->fail_at && s->rows == s->fail_at)
		return gl_err_set(err, GL_EINVAL, "row %ld refused", s->rows);
	s->sum += (long)gl_db_field_int(&f[0]);
	if (f[1].len < 0)
		s->nulls++;
	else
		snprintf(s->last_text, sizeof s->last_text, "%.*s", (int)f[1].len, f[1].p);
	if (s->rows == 1)
		s->first_ts = gl_db_field_ts_us(&f[2]);
	return 0;
}

static const char copy_sql[] =
	"COPY (SELECT g::bigint, CASE WHEN g % 10 = 0 THEN NULL ELSE 'r' || g END, timestamptz '2026-10-01 00:00:01Z'"
	" FROM generate_series(1, 100000) g) TO STDOUT (FORMAT binary)";

static void still_usable(void)
{
	assert_int_equal(gl_test_qint(g_c, "SELECT 41 + 1"), 42);
}

static void test_rows_arrive_typed(void **state)
{
	struct seen s = {0};
	struct gl_err err = {0};
	(void)state;
	assert_int_equal(gl_db_copy_out_binary(g_c, copy_sql, 3, on_row, &s, &err), 0);
	assert_int_equal(s.rows, 100000);
	assert_int_equal(s.sum, 5000050000L);
	assert_int_equal(s.nulls, 10000);
	assert_string_equal(s.last_text, "r99999");
	assert_true(s.first_ts == 1790812801LL * 1000000);
	still_usable();
}

static void test_callback_error_ends_the_stream(void **state)
{
	struct seen s = {0};
	struct gl_err err = {0};
	(void)state;
	s.fail_at = 5;
	assert_true(gl_db_copy_out_binary(g_c, copy_sql, 3, on_row, &s, &err) < 0);
	assert_string_equal(err.msg, "row 5 refused");
	assert_int_equal(s.rows, 5); /* no callback after the error */
	still_usable();
}

static void test_wrong_width_and_bad_sql(void **state)
{
	struct seen s = {0};
	struct gl_err err = {0};
	(void)state;
	assert_true(gl_db_copy_out_binary(g_c, copy_sql, 4, on_row, &s, &err) < 0);
	assert_non_null(strstr(err.msg, "row 1: wrong width (3 fields, 4 expected)"));
	assert_int_equal(s.rows, 0);
	still_usable();
	memset(&err, 0, sizeof err);
	assert_true(gl_db_copy_out_binary(g_c, "COPY (SELECT * FROM no_such_table) TO STDOUT (FORMAT binary)", 1,
					  on_row, &s, &err) < 0);
	assert_non_null(strstr(err.msg, "no_such_table"));
	still_usable();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_arrive_typed),
		cmocka_unit_test(test_callback_error_ends_the_stream),
		cmocka_unit_test(test_wrong_width_and_bad_sql),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
