/* The rate rule, written once (sql/033): a GPU model is priced by the rates
 * that name it, by the '*' rates only when no rate names it at any time,
 * and is unpriced outside the periods its own rates cover (never priced as
 * '*' there). The oracle is the rule as docs/config.md states it, checked
 * on hand-written rates (a100 for the first half of 2026 only, '*' always)
 * against gl_rates_of/gl_rate_at themselves and against what /v1/jobs'
 * store query (gl_joblist_query) prices: one job in a100's period, one
 * after it, a v100 job and a job of no known model. Real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/db_int.h"
#include "gl/joblist.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static PGconn *g_c;

static int setup(void **state)
{
	static const char *const sql[] = {
		"INSERT INTO rates (gpu_model, micros_per_gpu_hour, valid_from, valid_to) VALUES"
		" ('a100', 2500000, '2026-01-01T00:00:00Z', '2026-07-01T00:00:00Z'), ('*', 1000000, '-infinity', 'infinity')",
		"INSERT INTO clusters (name, kind) VALUES ('r1', 'slurm')",
		/* two GPUs for one hour each */
		"INSERT INTO jobs (cluster_id, job_key, job_id, state, submit_at, start_at, end_at, gpu_micro, gpu_type)"
		" SELECT cluster_id, 'db:' || v.id, v.id, 'COMPLETED', v.s::timestamptz, v.s::timestamptz,"
		" v.s::timestamptz + interval '1 hour', 2000000, v.m FROM clusters, (VALUES"
		" ('1', '2026-03-01T10:00:00Z', 'a100'), ('2', '2026-08-01T10:00:00Z', 'a100'),"
		" ('3', '2026-03-01T12:00:00Z', 'v100'), ('4', '2026-03-01T14:00:00Z', NULL)) v(id, s, m)",
	};
	if (gl_test_db_fresh("gl_test_rate_rule", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
		if (gl_test_exec_dsn(g_dsn, sql[i]) < 1)
			return -1;
	return 0;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

/* the micro-units per GPU-hour gl_rate_at gives model m at t, -1 for none */
static long long rate_at(const char *m, const char *t)
{
	return gl_test_qintf(g_c, "SELECT coalesce((SELECT micros_per_gpu_hour FROM gl_rate_at(%s, '%s')), -1)", m, t);
}

static void test_the_rule(void **state)
{
	(void)state;
	/* a100's own rates; v100 and an unknown model: the '*' rates */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gl_rates_of('a100') WHERE micros_per_gpu_hour = 2500000"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gl_rates_of('a100')"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gl_rates_of('v100') WHERE micros_per_gpu_hour = 1000000"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gl_rates_of(NULL) WHERE micros_per_gpu_hour = 1000000"), 1);
	assert_int_equal(rate_at("'a100'", "2026-03-01T00:00:00Z"), 2500000);
	assert_int_equal(rate_at("'v100'", "2026-08-01T00:00:00Z"), 1000000);
	assert_int_equal(rate_at("NULL", "2026-08-01T00:00:00Z"), 1000000);
	/* valid_from is inclusive, valid_to exclusive */
	assert_int_equal(rate_at("'a100'", "2026-01-01T00:00:00Z"), 2500000);
	/* a100 has rates: outside them it is unpriced, not priced as '*' */
	assert_int_equal(rate_at("'a100'", "2026-07-01T00:00:00Z"), -1);
	assert_int_equal(rate_at("'a100'", "2025-12-31T23:59:59Z"), -1);
	/* set-returning SQL functions the planner inlines: no function call
	 * per priced row (a scalar one cost 18 us a call) */
	assert_null(strstr(gl_test_qstr(g_c, "EXPLAIN (VERBOSE) SELECT * FROM gl_rate_at('a100', now())"), "Function Scan"));
}

static const struct gl_joblist_row *job(const struct gl_joblist *l, const char *id)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->rows[i].job_id, id))
			return &l->rows[i];
	fail_msg("job %s not listed", id);
	return NULL;
}

static void test_jobs_priced_by_the_rule(void **state)
{
	struct gl_joblist_query q = {0};
	struct gl_joblist l = {0};
	struct gl_err err = {0};
	(void)state;
	q.limit = 100;
	q.windowed = 1;
	q.win_start_s = 1767225600; /* 2026-01-01 */
	q.win_end_s = 1798761600;   /* 2027-01-01 */
	q.now_s = q.win_end_s;
	assert_int_equal(gl_joblist_query(gl_db_store(g_c), &q, &l, &err), 0);
	assert_int_equal(l.n, 4);
	/* 2 GPU-hours at 2.50 */
	assert_int_equal(job(&l, "1")->gpu_seconds, 7200);
	assert_false(job(&l, "1")->cost_micros_null);
	assert_int_equal(job(&l, "1")->cost_micros, 5000000);
	assert_true(job(&l, "2")->cost_micros_null);
	assert_false(job(&l, "3")->cost_micros_null);
	assert_int_equal(job(&l, "3")->cost_micros, 2000000);
	assert_false(job(&l, "4")->cost_micros_null);
	assert_int_equal(job(&l, "4")->cost_micros, 2000000);
	/* no exporter data: busy and idle unknown, not 0 */
	assert_true(job(&l, "1")->busy_gpu_s_null && job(&l, "1")->idle_gpu_s_null);
	gl_joblist_fini(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_rule),
		cmocka_unit_test(test_jobs_priced_by_the_rule),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
