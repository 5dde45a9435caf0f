/* The capacity page's hourly GPU-hours by cluster and model (issue 26):
 * gl_accounting_alloc_finished, the allocation alone, against the whole
 * chargeback it stands in for (gl_accounting_chargeback_finished, lines
 * only, the old way of gl_fcseries_query(GPU_HOURS)), line by line and hour
 * by hour to the micro-GPU-second, on the messy fleet
 * (tests/fixtures/messy/README.md: two clusters, a Slurm source that
 * stopped with jobs open, Kubernetes pods sharing GPUs, a snapshot series
 * that stopped), at a now inside the month and at the end of the day that
 * holds it; and gl_fcseries_query's series, which the capacity page reads,
 * against the chargeback's seconds. And the same with every other day built
 * by the rollup (usage_hourly_alloc, sql/094): built and live hours over a
 * window across both against the live chargeback to the micro-GPU-second;
 * a job's end moved by one second and an owner rule changed after the build
 * make the days stale. Real PostgreSQL, the real CLI's ingest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/accounting.h"
#include "gl/fcseries.h"
#include "store/accounting_int.h"
#include "store/db_int.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M "tests/fixtures/messy/"
#define SH "tests/fixtures/kube/sharing/"
#define NOV 1793491200LL /* 2026-11-01T00:00:00Z */
#define HOURS (30 * 24)

static char g_dsn[512];

/* a statement of the test, on its own connection */
#define GL_EXEC_OK(sql) assert_true(gl_test_exec_dsn(g_dsn, (sql)) >= 0)
static PGconn *g_c;
static struct gl_window g_hours[HOURS];

/* as tests/http/test_messy.c: rates and owners loaded by the daemon */
static const char config_yaml[] =
	"rates:\n"
	"  - model: a100\n    per_gpu_hour: \"2.50\"\n    to: 2026-11-16T00:00:00Z\n"
	"  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: 2026-11-16T00:00:00Z\n"
	"  - model: \"*\"\n    per_gpu_hour: \"1.00\"\n"
	"owners:\n"
	"  - match: account\n    value: teama\n    team: vision\n    to: 2026-11-04T00:00:00Z\n"
	"  - match: account\n    value: teama\n    team: nlp\n    from: 2026-11-04T00:00:00Z\n"
	"  - match: namespace\n    value: vision-ns\n    team: vision\n";

static int setup(void **state)
{
	struct gl_test_daemon d;
	struct gl_test_out o;
	if (gl_test_db_fresh("gl_test_hourly_alloc", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "alpha", "--nodes",
			gl_test_fixture("tests/fixtures/nodes/testbed/end_scontrol_show_node.txt"), "--at", "2026-11-01T00:00:00Z",
			NULL) ||
	    gl_test_messy_jobs(g_dsn))
		return -1;
	/* a third cluster of pods sharing GPUs (tests/fixtures/kube/sharing:
	 * real pod specs of the sharing schemes), running since 1 October and
	 * last seen on 9 November; two of them not billable (exit 4) */
	if (gl_test_cli(g_dsn, "ingest", "kube-nodes", "--cluster", "gamma", "--file",
			gl_test_fixture(SH "handwritten_nodes.json"), "--at", "2026-11-09T15:00:00Z", NULL) ||
	    gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "gamma", "--file", gl_test_fixture(SH "sharing_pods.json"),
			"--at", "2026-11-09T16:00:00Z", NULL) ||
	    o.status != 4)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_daemon_start(&d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL}) || gl_test_daemon_stop(&d))
		return -1;
	for (int h = 0; h < HOURS; h++)
		g_hours[h] = (struct gl_window){NOV + 3600LL * h, NOV + 3600LL * (h + 1)};
	g_c = PQconnectdb(g_dsn);
	return PQstatus(g_c) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

static const char *const dims[] = {"cluster", "gpu_model"};

/* the chargeback's lines (the whole query) and the allocation's alone */
static void both(int64_t now_s, struct gl_chargeback *whole, struct gl_chargeback *alloc)
{
	struct gl_accounting_query q;
	struct gl_accounting_meta meta = {0};
	struct gl_err err = {0};
	gl_accounting_query_init(&q, g_hours, HOURS, dims, 2, now_s);
	q.lines_only = 1;
	assert_true(gl_accounting_alloc_serves(&q));
	gl_chargeback_init(whole, 2, GL_CHARGEBACK_SHARE_NONE, HOURS);
	gl_chargeback_init(alloc, 2, GL_CHARGEBACK_SHARE_NONE, HOURS);
	if (gl_accounting_chargeback_finished(gl_db_store(g_c), &q, whole, &meta, &err) ||
	    gl_accounting_alloc_finished(gl_db_store(g_c), &q, alloc, &err))
		fail_msg("%s", err.msg);
	gl_accounting_meta_fini(&meta);
}

/* Every hour holds the same lines in the same order with the same
 * allocation (micro-GPU-seconds and the rounded seconds), unobserved and
 * implausible time; *firm, *unobs, *frac: what the fleet holds, so the
 * comparison is not of two empty answers. */
static void same_lines(const struct gl_chargeback *whole, const struct gl_chargeback *alloc, gl_cost_i128 *firm,
		       gl_cost_i128 *unobs, int *frac)
{
	for (size_t i = 0; i < HOURS; i++) {
		const struct gl_chargeback_step *a = &whole->steps[i], *b = &alloc->steps[i];
		if (a->n_lines != b->n_lines)
			fail_msg("hour %zu: %zu lines, the allocation alone %zu", i, a->n_lines, b->n_lines);
		for (size_t j = 0; j < a->n_lines; j++) {
			const struct gl_chargeback_line *x = &a->lines[j], *y = &b->lines[j];
			if (strcmp(x->key[0], y->key[0]) || strcmp(x->key[1], y->key[1]))
				fail_msg("hour %zu line %zu: %s/%s against %s/%s", i, j, x->key[0], x->key[1], y->key[0],
					 y->key[1]);
			if (x->alloc_us != y->alloc_us || x->alloc_s != y->alloc_s || x->unobs_us != y->unobs_us ||
			    x->implausible_us != y->implausible_us)
				fail_msg("hour %zu %s/%s: alloc %lld us (%lld s), unobserved %lld, implausible %lld against %lld us "
					 "(%lld s), %lld, %lld",
					 i, x->key[0], x->key[1], (long long)x->alloc_us, (long long)x->alloc_s,
					 (long long)x->unobs_us, (long long)x->implausible_us, (long long)y->alloc_us,
					 (long long)y->alloc_s, (long long)y->unobs_us, (long long)y->implausible_us);
			*firm += x->alloc_us;
			*unobs += x->unobs_us;
			*frac |= x->alloc_us % 1000000 != 0;
		}
	}
}

static void test_alloc_equals_chargeback(void **state)
{
	/* inside the month, after both sources stopped; and at the month's end */
	static const int64_t nows[] = {NOV + 12 * 86400 + 1234, NOV + 30 * 86400};
	for (size_t n = 0; n < sizeof nows / sizeof nows[0]; n++) {
		struct gl_chargeback whole, alloc;
		gl_cost_i128 firm = 0, unobs = 0;
		int frac = 0, clusters = 0;
		both(nows[n], &whole, &alloc);
		same_lines(&whole, &alloc, &firm, &unobs, &frac);
		for (size_t j = 0; j < whole.steps[24].n_lines; j++)
			clusters |= !strcmp(whole.steps[24].lines[j].key[0], "alpha")	 ? 1
				    : !strcmp(whole.steps[24].lines[j].key[0], "beta") ? 2
				    : !strcmp(whole.steps[24].lines[j].key[0], "gamma") ? 4
											: 0;
		assert_true(firm > 0);
		assert_true(unobs > 0);	   /* open jobs past their sources' last sight */
		assert_true(frac);	   /* pods sharing a GPU: micro-GPUs, not whole ones */
		assert_int_equal(clusters, 7); /* the three clusters on 2 November */
		gl_chargeback_fini(&whole);
		gl_chargeback_fini(&alloc);
	}
}

/* gl_fcseries_query's hourly GPU-hours (what the capacity page reads)
 * hold the chargeback's seconds in every hour, cluster and model, and its
 * keys are the chargeback's */
static void test_series_equals_chargeback(void **state)
{
	const int64_t now_s = NOV + 12 * 86400 + 1234;
	struct gl_chargeback whole, alloc;
	struct gl_fcseries fs = {0};
	struct gl_err err = {0};
	size_t keys = 0;
	both(now_s, &whole, &alloc);
	if (gl_fcseries_query(gl_db_store(g_c), GL_FCSERIES_GPU_HOURS, g_hours, HOURS, dims, 2, NULL, now_s, &fs, &err))
		fail_msg("%s", err.msg);
	for (size_t k = 0; k < fs.n; k++) {
		int seen = 0;
		for (size_t i = 0; i < HOURS; i++) {
			int64_t want = 0;
			for (size_t j = 0; j < whole.steps[i].n_lines; j++) {
				const struct gl_chargeback_line *l = &whole.steps[i].lines[j];
				char key[300];
				snprintf(key, sizeof key, "%s/%s", l->key[0], l->key[1]);
				if (!strcmp(key, fs.s[k].key)) {
					want = l->alloc_s;
					seen = 1;
				}
			}
			if (llround(fs.s[k].v[i] * 3600.0) != want)
				fail_msg("%s hour %zu: %.6f GPU-hours, the chargeback %lld s", fs.s[k].key, i, fs.s[k].v[i],
					 (long long)want);
		}
		assert_true(seen);
	}
	for (size_t i = 0; i < HOURS; i++)
		keys = whole.steps[i].n_lines > keys ? whole.steps[i].n_lines : keys;
	assert_true(fs.n >= keys && keys >= 2);
	gl_fcseries_fini(&fs);
	gl_chargeback_fini(&whole);
	gl_chargeback_fini(&alloc);
}


/* the allocation, built days and live, against the live chargeback; the
 * firm total */
static gl_cost_i128 check_against_live(int64_t now_s)
{
	struct gl_chargeback whole, alloc;
	gl_cost_i128 firm = 0, unobs = 0;
	int frac = 0;
	both(now_s, &whole, &alloc);
	same_lines(&whole, &alloc, &firm, &unobs, &frac);
	assert_true(firm > 0 && unobs > 0 && frac);
	gl_chargeback_fini(&whole);
	gl_chargeback_fini(&alloc);
	return firm;
}

static void test_alloc_built_days(void **state)
{
	const int64_t now_s = NOV + 12 * 86400 + 1234;
	int64_t days[6];
	struct gl_chargeback whole, alloc;
	struct gl_err err = {0};
	gl_cost_i128 a = 0, b = 0;

	GL_EXEC_OK("DELETE FROM usage_daily_built");
	/* 2, 4, ... 12 November built; 1, 3, ... 11 and the days from now's on live */
	for (size_t i = 0; i < 6; i++)
		days[i] = NOV + (int64_t)(2 * i + 1) * 86400;
	if (gl_accounting_build_days(g_c, NULL, days, 6, now_s, &err))
		fail_msg("%s", err.msg);
	assert_true(gl_test_qint(g_c, "SELECT count(DISTINCT day) FROM usage_hourly_alloc") >= 3);
	check_against_live(now_s);

	/* the built rows are what is read: a second more in one shows */
	GL_EXEC_OK("UPDATE usage_hourly_alloc SET alloc_us = alloc_us + 1000000"
		" WHERE ctid = (SELECT ctid FROM usage_hourly_alloc ORDER BY day, hour, cluster, gpu_model LIMIT 1)");
	both(now_s, &whole, &alloc);
	for (size_t i = 0; i < HOURS; i++) {
		for (size_t j = 0; j < whole.steps[i].n_lines; j++)
			a += whole.steps[i].lines[j].alloc_us;
		for (size_t j = 0; j < alloc.steps[i].n_lines; j++)
			b += alloc.steps[i].lines[j].alloc_us;
	}
	assert_true(b - a == 1000000);
	gl_chargeback_fini(&whole);
	gl_chargeback_fini(&alloc);
	GL_EXEC_OK("UPDATE usage_hourly_alloc SET alloc_us = alloc_us - 1000000"
		" WHERE ctid = (SELECT ctid FROM usage_hourly_alloc ORDER BY day, hour, cluster, gpu_model LIMIT 1)");

	/* a GPU job that ended inside a built day ends a second later: its
	 * day turns stale and the allocation follows */
	GL_EXEC_OK("UPDATE jobs SET end_at = end_at + interval '1 second' WHERE job_pk = (SELECT job_pk FROM jobs"
		" WHERE gpu_milli > 0 AND end_at >= '2026-11-02Z' AND end_at < '2026-11-03Z'"
		" AND extract(minute FROM end_at) > 0 ORDER BY end_at, job_pk LIMIT 1)");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM usage_daily_built WHERE day = '2026-11-02'"), 0);
	check_against_live(now_s);
	/* built again, then an owner rule changes: stale again, still equal */
	if (gl_accounting_build_days(g_c, NULL, days, 6, now_s, &err))
		fail_msg("%s", err.msg);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM usage_daily_built"), 6);
	check_against_live(now_s);
	GL_EXEC_OK("UPDATE owners SET team = team || '2' WHERE match_value = 'teama'");
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM usage_daily_built") < 6);
	check_against_live(now_s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_equals_chargeback),
		cmocka_unit_test(test_series_equals_chargeback),
		cmocka_unit_test(test_alloc_built_days),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
