/* The capacity page's hourly pending series by cluster and model (issue 26):
 * gl_fcseries_query_pending (mean GPUs pending per hour and minutes with any
 * GPU pending) against the rule restated here and summed job by job in
 * integers: a job with GPUs pends from submission to its start (or end, or
 * now, whichever comes first; a still-pending array row for all its tasks),
 * and the minutes are the union of a key's pending spans. Every hour and key
 * to the micro-GPU-second and the second, on the messy fleet
 * (tests/fixtures/messy/README.md: two clusters, a Slurm job requeued and
 * pending past the sacct run, a Kubernetes pod pending for days, spans across
 * hour and day boundaries), at a now while jobs are pending (mid-hour) and
 * at one after both sources stopped. The same series from gl_fcseries_query
 * (pending_gpus, pending_minutes), which /v1/forecast reads. And the
 * same with days built by the rollup (usage_hourly_pending, sql/094): a
 * built day, the next live, over a window across both, equal to the rule
 * to the second; a submit time moved by one second after the build makes
 * its day stale. Real PostgreSQL, the real CLI's ingest. */
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
#define NOV 1793491200LL /* 2026-11-01T00:00:00Z */
#define HOURS (30 * 24)
#define MAX_KEYS 16

static char g_dsn[512];

/* a statement of the test, on its own connection */
#define GL_EXEC_OK(sql) assert_true(gl_test_exec_dsn(g_dsn, (sql)) >= 0)
static PGconn *g_c;
static struct gl_window g_hours[HOURS];

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_pending_series", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_messy_jobs(g_dsn))
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

struct want {
	char key[200];
	int64_t gpu_us[HOURS]; /* micro-GPU-seconds pending in the hour */
	int64_t sec[HOURS];    /* seconds with any GPU pending */
	int64_t span[64][2];   /* the pending spans */
	size_t n_span;
};

static void add(int64_t *v, int64_t s0, int64_t s1, int64_t w)
{
	for (int h = 0; h < HOURS; h++) {
		int64_t x0 = s0 > g_hours[h].start_s ? s0 : g_hours[h].start_s;
		int64_t x1 = s1 < g_hours[h].end_s ? s1 : g_hours[h].end_s;
		if (x1 > x0)
			v[h] += w * (x1 - x0);
	}
}

/* The expected series per key; *n keys. *still: pending jobs at now, *cross:
 * spans across a day boundary inside the month. */
static void expect(int64_t now_s, struct want *w, size_t *n, int *still, int *cross)
{
	char a[24], b[24], now[24];
	const char *p[3] = {a, b, now};
	PGresult *r;
	snprintf(a, sizeof a, "%lld", (long long)NOV);
	snprintf(b, sizeof b, "%lld", (long long)(NOV + HOURS * 3600LL));
	snprintf(now, sizeof now, "%lld", (long long)now_s);
	r = PQexecParams(g_c,
			 "SELECT concat_ws('/', c.name, coalesce(" GL_ACCOUNTING_JOB_MODEL_SQL("j") ", 'unknown')),"
			 " extract(epoch FROM j.submit_at)::bigint,"
			 " extract(epoch FROM least(coalesce(j.start_at, j.end_at, to_timestamp($3)), to_timestamp($3)))::bigint,"
			 " greatest(j.req_gpu_micro, j.gpu_micro) * coalesce(j.array_tasks, 1),"
			 " j.start_at IS NULL AND j.end_at IS NULL"
			 " FROM jobs j JOIN clusters c USING (cluster_id)"
			 " WHERE (j.gpu_milli > 0 OR j.req_gpu_milli > 0) AND j.submit_at < to_timestamp($2)"
			 "  AND coalesce(j.start_at, j.end_at, to_timestamp($3)) > to_timestamp($1) ORDER BY 1, 2",
			 3, NULL, p, NULL, NULL, 0);
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	*n = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		struct want *k = *n ? &w[*n - 1] : NULL;
		int64_t s0 = atoll(PQgetvalue(r, i, 1)), s1 = atoll(PQgetvalue(r, i, 2));
		if (!k || strcmp(k->key, PQgetvalue(r, i, 0))) {
			assert_true(*n < MAX_KEYS);
			k = &w[(*n)++];
			memset(k, 0, sizeof *k);
			snprintf(k->key, sizeof k->key, "%s", PQgetvalue(r, i, 0));
		}
		if (s1 <= s0)
			continue;
		add(k->gpu_us, s0, s1, atoll(PQgetvalue(r, i, 3)));
		assert_true(k->n_span < 64);
		k->span[k->n_span][0] = s0;
		k->span[k->n_span++][1] = s1;
		*still += PQgetvalue(r, i, 4)[0] == 't' && s1 == now_s;
		*cross += s0 / 86400 != (s1 - 1) / 86400 && s0 >= NOV;
	}
	/* the minutes: each second of the month, pending for the key or not */
	for (size_t k = 0; k < *n; k++)
		for (int h = 0; h < HOURS; h++)
			for (int64_t t = g_hours[h].start_s; t < g_hours[h].end_s; t++)
				for (size_t j = 0; j < w[k].n_span; j++)
					if (w[k].span[j][0] <= t && t < w[k].span[j][1]) {
						w[k].sec[h]++;
						break;
					}
	PQclear(r);
}

static void same(const struct gl_fcseries *gpus, const struct gl_fcseries *mins, const struct want *w, size_t n)
{
	assert_int_equal(gpus->n, n);
	assert_int_equal(mins->n, n);
	for (size_t k = 0; k < n; k++) {
		assert_string_equal(gpus->s[k].key, w[k].key);
		assert_string_equal(mins->s[k].key, w[k].key);
		for (int h = 0; h < HOURS; h++) {
			if (llround(gpus->s[k].v[h] * 3600.0 * 1e6) != w[k].gpu_us[h])
				fail_msg("%s hour %d: %.9f GPUs pending, want %lld micro-GPU-seconds", w[k].key, h,
					 gpus->s[k].v[h], (long long)w[k].gpu_us[h]);
			if (llround(mins->s[k].v[h] * 60.0) != w[k].sec[h])
				fail_msg("%s hour %d: %.6f minutes pending, want %lld s", w[k].key, h, mins->s[k].v[h],
					 (long long)w[k].sec[h]);
		}
	}
}

static const char *const dims[] = {"cluster", "gpu_model"};

static void test_pending_series(void **state)
{
	/* mid-hour while the pod and job 5 pend; after both sources stopped */
	static const int64_t nows[] = {NOV + 4 * 86400 + 1234, NOV + 12 * 86400 + 1234};
	static struct want w[MAX_KEYS];
	for (size_t i = 0; i < sizeof nows / sizeof nows[0]; i++) {
		struct gl_fcseries gpus, mins, g2 = {0}, m2 = {0};
		struct gl_err err = {0};
		size_t n = 0;
		int still = 0, cross = 0, clusters = 0;
		int64_t total = 0;
		expect(nows[i], w, &n, &still, &cross);
		if (gl_fcseries_query_pending(gl_db_store(g_c), g_hours, HOURS, dims, 2, nows[i], &gpus, &mins, &err) ||
		    gl_fcseries_query(gl_db_store(g_c), GL_FCSERIES_PENDING_GPUS, g_hours, HOURS, dims, 2, NULL, nows[i], &g2,
				      &err) ||
		    gl_fcseries_query(gl_db_store(g_c), GL_FCSERIES_PENDING_MINUTES, g_hours, HOURS, dims, 2, NULL, nows[i],
				      &m2, &err))
			fail_msg("%s", err.msg);
		same(&gpus, &mins, w, n);
		same(&g2, &m2, w, n);
		for (size_t k = 0; k < n; k++) {
			int64_t t = 0;
			for (int h = 0; h < HOURS; h++)
				t += w[k].sec[h];
			clusters |= t > 0 ? (!strncmp(w[k].key, "alpha/", 6) ? 1 : !strncmp(w[k].key, "beta/", 5) ? 2 : 0) : 0;
			total += t;
		}
		/* not two empty answers: both clusters pend, a job still pends at
		 * now, spans cross a day */
		assert_int_equal(clusters, 3);
		assert_true(still > 0);
		assert_true(cross > 0);
		assert_true(total > 0);
		gl_fcseries_fini(&gpus);
		gl_fcseries_fini(&mins);
		gl_fcseries_fini(&g2);
		gl_fcseries_fini(&m2);
	}
}


/* the series, built days and live, against the rule */
static void check_against_rule(int64_t now_s, struct want *w)
{
	struct gl_fcseries gpus, mins;
	struct gl_err err = {0};
	size_t n = 0;
	int still = 0, cross = 0;
	expect(now_s, w, &n, &still, &cross);
	if (gl_fcseries_query_pending(gl_db_store(g_c), g_hours, HOURS, dims, 2, now_s, &gpus, &mins, &err))
		fail_msg("%s", err.msg);
	same(&gpus, &mins, w, n);
	gl_fcseries_fini(&gpus);
	gl_fcseries_fini(&mins);
}

static void test_pending_built_days(void **state)
{
	const int64_t now_s = NOV + 12 * 86400 + 1234;
	static struct want w[MAX_KEYS];
	int64_t job, d0, days[12];
	size_t nd = 0;
	char sql[512];
	struct gl_fcseries gpus, mins;
	struct gl_err err = {0};

	GL_EXEC_OK("DELETE FROM usage_daily_built");
	/* a job that waited, its submission inside the days before now's: its
	 * day is built, the day after it live, and so on */
	job = gl_test_qint(g_c, "SELECT job_pk FROM jobs WHERE (gpu_milli > 0 OR req_gpu_milli > 0)"
		      " AND submit_at >= '2026-11-01Z' AND submit_at < '2026-11-12Z'"
		      " AND coalesce(start_at, end_at, 'infinity') > submit_at + interval '10 minutes'"
		      " ORDER BY submit_at, job_pk LIMIT 1");
	snprintf(sql, sizeof sql, "SELECT extract(epoch FROM date_trunc('day', submit_at AT TIME ZONE 'UTC'))::bigint"
				  " FROM jobs WHERE job_pk = %lld", (long long)job);
	d0 = gl_test_qint(g_c, sql);
	for (int64_t d = NOV + (d0 - NOV) % (2 * 86400); d < NOV + 12 * 86400; d += 2 * 86400)
		days[nd++] = d;
	if (gl_accounting_build_days(g_c, NULL, days, nd, now_s, &err))
		fail_msg("%s", err.msg);
	/* not an empty build: the job's day has its pending hours */
	snprintf(sql, sizeof sql, "SELECT count(*) FROM usage_hourly_pending WHERE day = to_timestamp(%lld)::date"
				  " AND pending_s > 0", (long long)d0);
	assert_true(gl_test_qint(g_c, sql) > 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(DISTINCT day) FROM usage_hourly_pending u"
				 " WHERE NOT EXISTS (SELECT 1 FROM usage_daily_built b WHERE b.day = u.day)"), 0);
	check_against_rule(now_s, w);

	/* the built rows are what is read: one second more in one of them
	 * shows, and goes again */
	snprintf(sql, sizeof sql, "UPDATE usage_hourly_pending SET pending_s = pending_s + 1 WHERE ctid = (SELECT ctid FROM"
				  " usage_hourly_pending WHERE day = to_timestamp(%lld)::date AND pending_s > 0 LIMIT 1)",
		 (long long)d0);
	GL_EXEC_OK(sql);
	if (gl_fcseries_query_pending(gl_db_store(g_c), g_hours, HOURS, dims, 2, now_s, &gpus, &mins, &err))
		fail_msg("%s", err.msg);
	{
		double sum = 0, want_sum = 0;
		size_t n = 0;
		int still = 0, cross = 0;
		expect(now_s, w, &n, &still, &cross);
		for (size_t k = 0; k < mins.n; k++)
			for (int h = 0; h < HOURS; h++)
				sum += mins.s[k].v[h] * 60.0;
		for (size_t k = 0; k < n; k++)
			for (int h = 0; h < HOURS; h++)
				want_sum += (double)w[k].sec[h];
		assert_int_equal(llround(sum - want_sum), 1);
	}
	gl_fcseries_fini(&gpus);
	gl_fcseries_fini(&mins);
	snprintf(sql, sizeof sql, "UPDATE usage_hourly_pending SET pending_s = pending_s - 1 WHERE ctid = (SELECT ctid FROM"
				  " usage_hourly_pending WHERE day = to_timestamp(%lld)::date AND pending_s > 0 LIMIT 1)",
		 (long long)d0);
	GL_EXEC_OK(sql);

	/* the job submitted one second earlier: its day turns stale and the
	 * series follows, to the second */
	snprintf(sql, sizeof sql, "UPDATE jobs SET submit_at = submit_at - interval '1 second' WHERE job_pk = %lld",
		 (long long)job);
	GL_EXEC_OK(sql);
	check_against_rule(now_s, w);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM usage_daily_built WHERE day = to_timestamp(%lld)::date", (long long)d0);
	assert_int_equal(gl_test_qint(g_c, sql), 0);
	/* built again: the same */
	if (gl_accounting_build_days(g_c, NULL, days, nd, now_s, &err))
		fail_msg("%s", err.msg);
	check_against_rule(now_s, w);
	/* a rate change makes the days stale too (as usage_daily's): read live */
	GL_EXEC_OK("INSERT INTO rates (gpu_model, micros_per_gpu_hour, valid_from) VALUES ('a100', 4000000, '2026-11-20Z')");
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM usage_daily_built") < (int64_t)nd);
	check_against_rule(now_s, w);
}

/* A window's pending jobs found in jobs_pending_until_idx by both bounds
 * (sql/127): the submissions before its end tested on the index entries,
 * not on every job started after its start fetched from the table (a
 * mid-year rollup batch of 8 days at 10 M jobs a year read 3.9 M jobs to
 * keep 219,368). The plan is forced onto the index, which the few messy
 * jobs would not choose on their own. */
static void test_pending_index_bounds(void **state)
{
	PGresult *r;
	int both = 0;
	assert_true(gl_test_sql_ok(g_c, "BEGIN") && gl_test_sql_ok(g_c, "SET LOCAL enable_seqscan = off"));
	r = PQexec(g_c, "EXPLAIN SELECT job_pk FROM jobs jb WHERE jb.submit_at IS NOT NULL"
			" AND jb.submit_at < '2026-11-03Z' AND coalesce(jb.start_at, jb.end_at) > '2026-11-02Z'");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	for (int i = 0; i < PQntuples(r); i++) {
		const char *l = PQgetvalue(r, i, 0), *c = strstr(l, "Index Cond:");
		both |= c && strstr(c, "COALESCE(start_at, end_at) >") && strstr(c, "submit_at <");
	}
	PQclear(r);
	assert_true(gl_test_sql_ok(g_c, "ROLLBACK"));
	assert_true(both);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pending_series),
		cmocka_unit_test(test_pending_built_days),
		cmocka_unit_test(test_pending_index_bounds),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
