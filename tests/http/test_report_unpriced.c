/* The showback report's top jobs name unpriced GPU-time instead of showing
 * a cost of 0.00, which read as free. tests/fixtures/review/sacct_share.txt:
 * job 501 holds 2 a100 on 6 October 10:00-12:00, job 502 one a100
 * 10:00-13:00; the only a100 rate (3.60 an hour) starts at 12:00. So 501 is
 * wholly unpriced (4 GPU-hours) and 502 has 1 priced GPU-hour (3.60) and 2
 * unpriced. Real binary over real HTTP, real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_report_unpriced", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_share.txt"), NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn,
				    "rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n    from: 2026-10-06T12:00:00Z\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void test_top_jobs_say_unpriced(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv t;

	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&table=top_cost", NULL, 0,
				      NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	assert_int_equal(t.nrows, 3);
	assert_string_equal(t.cell[1][gl_test_csv_col(&t, "job_id")], "502");
	assert_string_equal(t.cell[1][gl_test_csv_col(&t, "gpu_hours")], "3.000");
	assert_string_equal(t.cell[1][gl_test_csv_col(&t, "unpriced_gpu_hours")], "2.000");
	assert_string_equal(t.cell[1][gl_test_csv_col(&t, "cost")], "3.60");
	assert_string_equal(t.cell[2][gl_test_csv_col(&t, "job_id")], "501");
	assert_string_equal(t.cell[2][gl_test_csv_col(&t, "gpu_hours")], "4.000");
	assert_string_equal(t.cell[2][gl_test_csv_col(&t, "unpriced_gpu_hours")], "4.000");
	assert_string_equal(t.cell[2][gl_test_csv_col(&t, "cost")], "unpriced");
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);

	/* the rendered report: the same in words, no 0.00 for job 501 */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&format=html", NULL, 0, NULL,
				      &r),
			 0);
	assert_int_equal(r.status, 200);
	{
		const char *top = strstr(r.body, "Top 20 jobs by cost"), *end = top ? strstr(top, "</table>") : NULL;
		const char *j501 = top ? strstr(top, ">501<") : NULL;
		assert_non_null(end);
		assert_non_null(j501);
		assert_true(j501 < end);
		/* 501's row: its cells up to the end of the row */
		{
			const char *row_end = strstr(j501, "</tr>");
			char row[512];
			assert_non_null(row_end);
			snprintf(row, sizeof row, "%.*s", (int)(row_end - j501), j501);
			assert_non_null(strstr(row, ">unpriced<"));
			assert_null(strstr(row, "0.00"));
		}
		assert_non_null(strstr(top, ">3.60 + unpriced<"));
	}
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_top_jobs_say_unpriced),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
