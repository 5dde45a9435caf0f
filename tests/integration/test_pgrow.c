/* Query results into typed rows (include/gl/pgrow.h) and back into the
 * text the database gave them: CSV cells of double precision columns are
 * printed by gl_csv_f8, which must write exactly what PostgreSQL's float8
 * output writes (a CSV that went through a double and back must not
 * change a byte). The oracle is PostgreSQL itself: 20,000 doubles of every
 * magnitude and every power of two, each read as the bits float8send
 * gives and compared with its ::text. Columns are found by name, whatever their position; a missing
 * one is an error naming it. Real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/csv.h"
#include "gl/pgrow.h"
#include "gl/strbuf.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static PGconn *g_c;

static int setup(void **state)
{
	if (gl_test_db_create("gl_test_pgrow", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	return PQstatus(g_c) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

static double from_hex(const char *hex)
{
	uint64_t bits = strtoull(hex + 2, NULL, 16); /* "\x..." */
	double d;
	memcpy(&d, &bits, sizeof d);
	return d;
}

static void test_f8_as_postgresql_prints_it(void **state)
{
	/* magnitudes 1e-310 .. 1e300, both signs, integral values around the
	 * switch to exponents (1e15), sums like the routes' GPU-seconds */
	PGresult *r = PQexec(g_c,
			     "WITH v AS (SELECT (random() - 0.5) * 10 ^ (g % 60 - 30) AS x FROM generate_series(1, 12000) g"
			     " UNION ALL SELECT round(random() * 10 ^ (g % 19)) FROM generate_series(1, 4000) g"
			     " UNION ALL SELECT random() * 10 ^ (g % 600 - 300) FROM generate_series(1, 3994) g"
			     /* every power of two: the rounding interval is narrower below */
			     " UNION ALL SELECT 2 ^ g::float8 FROM generate_series(-1074, 1023) g"
			     " UNION ALL SELECT x FROM unnest(ARRAY['0', '-0', '1e15', '999999999999999', '1e-5', '0.0001',"
			     "  '123456.789', '5e-324', 'NaN', 'Infinity', '-Infinity']::float8[]) x)"
			     " SELECT x::text AS t, float8send(x)::text AS b FROM v");
	struct gl_strbuf o = GL_STRBUF_INIT;
	int n;
	(void)state;
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	n = PQntuples(r);
	assert_int_equal(n, 20005 + 2098);
	for (int i = 0; i < n; i++) {
		gl_strbuf_reset(&o);
		gl_csv_f8(&o, from_hex(PQgetvalue(r, i, 1)));
		if (strcmp(gl_strbuf_cstr(&o), PQgetvalue(r, i, 0)))
			fail_msg("%s printed as %s", PQgetvalue(r, i, 0), gl_strbuf_cstr(&o));
	}
	gl_strbuf_fini(&o);
	PQclear(r);
}

struct row {
	char *name;
	int64_t n;
	double x;
	int ok;
	int64_t at_s;
	int n_null;
};

static const struct gl_pgrow_field fields[] = {
	GL_PGROW(struct row, STR, name), GL_PGROW_N(struct row, I64, n, n_null), GL_PGROW(struct row, F64, x),
	GL_PGROW(struct row, BOOL, ok), GL_PGROW(struct row, TIME, at_s),
};

static void test_columns_by_name(void **state)
{
	/* the columns in another order than the fields, and one more */
	PGresult *r = PQexec(g_c, "SELECT * FROM (VALUES (NULL::bigint, 'x', 2.5::float8, NULL::bigint, true, 'one', 7),"
				  " (42, NULL, -0.125, 1767225600, false, 'two', 8)) v(at_s, extra, x, n_or, ok, name, z)"
				  " CROSS JOIN LATERAL (SELECT v.n_or AS n) nn");
	struct row *rows = NULL;
	void *p = NULL;
	char *text = NULL;
	size_t n = 0;
	struct gl_err err = {0};
	(void)state;
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	assert_int_equal(gl_pgrow_decode(r, fields, GL_ARRAY_LEN(fields), sizeof *rows, &p, &n, &text, &err), 0);
	rows = p;
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].name, "one");
	assert_true(rows[0].n_null);
	assert_int_equal(rows[0].n, 0);
	assert_true(rows[0].x == 2.5);
	assert_true(rows[0].ok);
	assert_true(rows[0].at_s == GL_TIME_NONE);
	assert_false(rows[1].n_null);
	assert_int_equal(rows[1].n, 1767225600);
	assert_true(rows[1].x == -0.125);
	assert_false(rows[1].ok);
	assert_int_equal(rows[1].at_s, 42);
	free(rows);
	free(text);
	PQclear(r);

	/* a field the query has no column for: named, never read from elsewhere */
	r = PQexec(g_c, "SELECT 'a' AS name, 1 AS n, 1.0::float8 AS x, true AS ok");
	assert_true(gl_pgrow_decode(r, fields, GL_ARRAY_LEN(fields), sizeof *rows, &p, &n, &text, &err) < 0);
	assert_non_null(strstr(err.msg, "'at_s'"));
	free(p);
	free(text);
	PQclear(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_f8_as_postgresql_prints_it),
		cmocka_unit_test(test_columns_by_name),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
