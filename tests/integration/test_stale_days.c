/* The rollup's stale days (gl_accounting_stale_days) against a brute force
 * over a messy fleet: a day is stale when some GPU job touches it (from
 * its start's day to its end's, or to now while it runs), it is past, and
 * usage_daily_built lacks it. The fleets mix clusters, long jobs crossing
 * days where nothing starts, open jobs (in some trials none, so that they
 * hide no long job), jobs without GPUs, pending and future jobs, jobs
 * ending before they start or at midnight, empty stretches, and late
 * inserts, updates and deletes after some days were built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/accounting_int.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY 86400LL
#define MAX_JOBS 400
#define SPAN_DAYS 200 /* the days the brute force looks at, back from today */

static char g_dsn[512];

struct fjob {
	int cluster;
	int64_t start, end; /* INT64_MIN: NULL */
	int64_t gpu_micro;
};

struct fleet {
	struct fjob j[MAX_JOBS];
	int n;
	int64_t today, now;
	uint64_t rng;
};

static uint64_t next(struct fleet *f)
{
	f->rng = f->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return f->rng >> 33;
}

static int64_t pick(struct fleet *f, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(next(f) % (uint64_t)(hi - lo));
}

static void add(struct fleet *f, int cluster, int64_t start, int64_t end, int64_t gpu_micro)
{
	assert_true(f->n < MAX_JOBS);
	f->j[f->n++] = (struct fjob){cluster, start, end, gpu_micro};
}

/* Starts avoid [today-80, today-60) and [today-40, today-34): only long
 * jobs (some without GPUs) cross them, or nothing. */
static int64_t start_day(struct fleet *f)
{
	for (;;) {
		int64_t d = pick(f, -150, 1);
		if (!(d >= -80 && d < -60) && !(d >= -40 && d < -34))
			return f->today + d * DAY;
	}
}

static void make_fleet(struct fleet *f, int trial)
{
	int with_open = trial % 3 == 0;

	f->n = 0;
	f->rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)trial;
	for (int i = 0; i < 120; i++) { /* short: up to two days */
		int64_t s = start_day(f) + pick(f, 0, DAY);
		add(f, (int)pick(f, 0, 3), s, s + pick(f, 60, 2 * DAY), 1000 * pick(f, 1, 9000));
	}
	for (int i = 0; i < 6; i++) { /* long: 5 to 40 days, across the empty stretches */
		int64_t s = f->today + pick(f, -150, -3) * DAY + pick(f, 0, DAY);
		add(f, (int)pick(f, 0, 3), s, s + pick(f, 5 * DAY, 40 * DAY), 500000);
	}
	for (int i = 0; i < 4; i++) { /* long, without GPUs: touch nothing */
		int64_t s = f->today + pick(f, -100, -30) * DAY;
		add(f, (int)pick(f, 0, 3), s, s + 30 * DAY, 0);
	}
	for (int i = 0; i < 4; i++) { /* pending: no start */
		add(f, 0, INT64_MIN, INT64_MIN, 1000000);
		add(f, 1, INT64_MIN, start_day(f), 1000000);
	}
	for (int i = 0; i < 3; i++) { /* ending before they start */
		int64_t s = start_day(f) + 3600;
		add(f, 2, s, s - pick(f, 60, 3 * DAY), 1000000);
	}
	/* ending at a midnight: the day it ends at counts */
	add(f, 1, f->today - 59 * DAY - 3600, f->today - 58 * DAY, 1000000);
	/* starting today or later, one running on */
	add(f, 0, f->today + 600, f->today + 7200, 1000000);
	add(f, 1, f->now + 3600, f->now + 7200, 1000000);
	add(f, 2, f->today + 1200, INT64_MIN, 1000000);
	if (with_open)
		for (int i = 0; i < 3; i++)
			add(f, (int)pick(f, 0, 3), f->today + pick(f, -90, 0) * DAY + pick(f, 0, DAY), INT64_MIN,
			    250000);
}

static void ts(char *out, size_t n, int64_t t)
{
	if (t == INT64_MIN)
		snprintf(out, n, "NULL");
	else
		snprintf(out, n, "to_timestamp(%lld)", (long long)t);
}

static void insert_jobs(PGconn *c, const struct fleet *f, int from, const char *tag)
{
	size_t cap = 256 + (size_t)(f->n - from) * 200, len = 0;
	char *sql = malloc(cap), a[48], b[48];

	assert_non_null(sql);
	len += (size_t)snprintf(sql, cap,
				"INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro)"
				" SELECT c.cluster_id, v.k, v.k, 'COMPLETED', v.s, v.e, v.g FROM (VALUES");
	for (int i = from; i < f->n; i++) {
		ts(a, sizeof a, f->j[i].start);
		ts(b, sizeof b, f->j[i].end);
		len += (size_t)snprintf(
			sql + len, cap - len, "%s('st%d', '%s%d', %s::timestamptz, %s::timestamptz, %lld)",
			i > from ? "," : "", f->j[i].cluster, tag, i, a, b, (long long)f->j[i].gpu_micro);
		assert_true(len < cap);
	}
	snprintf(sql + len, cap - len, ") v(cl, k, s, e, g) JOIN clusters c ON c.name = v.cl");
	assert_true(gl_test_sql_ok(c, sql));
	free(sql);
}

static int touched(const struct fleet *f, int64_t d)
{
	for (int i = 0; i < f->n; i++) {
		const struct fjob *j = &f->j[i];
		int64_t end = j->end == INT64_MIN ? f->now : j->end;
		if (j->gpu_micro > 0 && j->start != INT64_MIN && j->start < d + DAY && end >= d)
			return 1;
	}
	return 0;
}

/* The function's days equal the brute force's, the most recent first, with
 * and without a limit that cuts them; returns how many there were. */
static int check(PGconn *c, const struct fleet *f, const char *what)
{
	int64_t want[SPAN_DAYS];
	int nwant = 0;
	struct gl_err err = {0};

	for (int64_t d = f->today - DAY; d >= f->today - SPAN_DAYS * DAY; d -= DAY)
		if (touched(f, d) &&
		    !gl_test_qintf(c,
				   "SELECT count(*) FROM usage_daily_built"
				   " WHERE day = (to_timestamp(%lld) AT TIME ZONE 'UTC')::date",
				   (long long)d))
			want[nwant++] = d;
	for (int lim = 1000; lim > 0; lim = lim == 1000 ? 3 : 0) {
		PGresult *r = NULL;
		int n = nwant < lim ? nwant : lim;
		assert_int_equal(gl_accounting_stale_days(c, f->now, lim, &r, &err), 0);
		if (PQntuples(r) != n)
			fprintf(stderr, "%s: %d days, the brute force %d (limit %d)\n", what, PQntuples(r), n, lim);
		assert_int_equal(PQntuples(r), n);
		for (int i = 0; i < n; i++) {
			if (atoll(PQgetvalue(r, i, 0)) != want[i])
				fprintf(stderr, "%s: day %d is %s, the brute force's %lld\n", what, i,
					PQgetvalue(r, i, 0), (long long)want[i]);
			assert_int_equal(atoll(PQgetvalue(r, i, 0)), want[i]);
		}
		PQclear(r);
	}
	return nwant;
}

static void test_stale_days_equal_brute_force(void **state)
{
	PGconn *c = PQconnectdb(g_dsn);
	int stale = 0, partly = 0;

	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_true(gl_test_sql_ok(c,
				   "INSERT INTO clusters (name, kind) VALUES ('st0', 'slurm'), ('st1', 'slurm'),"
				   " ('st2', 'kubernetes')"));
	for (int trial = 0; trial < 12; trial++) {
		static struct fleet f;
		char sql[512];
		int n0;

		f.today = (1773000000LL / DAY + trial * 7) * DAY;
		f.now = f.today + 13 * 3600 + trial * 60;
		assert_true(gl_test_sql_ok(c, "DELETE FROM jobs; DELETE FROM usage_daily_built"));
		make_fleet(&f, trial);
		insert_jobs(c, &f, 0, "a");
		/* nothing built: every touched day */
		stale += check(c, &f, "nothing built");
		/* about half the days built, today and empty days among them */
		snprintf(
			sql, sizeof sql,
			"INSERT INTO usage_daily_built (day) SELECT g::date FROM generate_series("
			"(to_timestamp(%lld) AT TIME ZONE 'UTC') - interval '%d days', to_timestamp(%lld) AT TIME ZONE 'UTC',"
			" interval '1 day') g WHERE (extract(epoch FROM g)::bigint / 86400 * 7 + %d) %% 5 < 3",
			(long long)f.today, SPAN_DAYS, (long long)f.today, trial);
		assert_true(gl_test_sql_ok(c, sql));
		partly += check(c, &f, "partly built") > 0;
		/* every day built: none */
		assert_true(gl_test_sql_ok(
			c,
			"INSERT INTO usage_daily_built (day) SELECT g::date FROM generate_series("
			"'2025-01-01'::timestamp, '2027-12-31', interval '1 day') g ON CONFLICT DO NOTHING"));
		assert_int_equal(check(c, &f, "all built"), 0);
		/* a late job into an old day, then a long one over an empty stretch */
		n0 = f.n;
		add(&f, 1, f.today - 120 * DAY + 7200, f.today - 119 * DAY, 1000000);
		add(&f, 2, f.today - 84 * DAY + 100, f.today - 72 * DAY, 2000000);
		insert_jobs(c, &f, n0, "late");
		assert_true(check(c, &f, "late jobs") >= 13);
		/* a job made longer by an update, then one deleted */
		snprintf(sql, sizeof sql, "UPDATE jobs SET end_at = to_timestamp(%lld) WHERE job_key = 'late%d'",
			 (long long)(f.today - 62 * DAY + 5), n0 + 1);
		assert_true(gl_test_sql_ok(c, sql));
		f.j[n0 + 1].end = f.today - 62 * DAY + 5;
		check(c, &f, "updated");
		snprintf(sql, sizeof sql, "DELETE FROM jobs WHERE job_key = 'late%d'", n0);
		assert_true(gl_test_sql_ok(c, sql));
		f.j[n0].gpu_micro = 0;
		check(c, &f, "deleted");
	}
	/* the fleets had stale days to find, and built ones to leave out */
	assert_true(stale > 12 * 100);
	assert_int_equal(partly, 12);
	PQfinish(c);
}

static int setup(void **state)
{
	(void)state;
	return gl_test_db_fresh("gl_test_stale_days", g_dsn, sizeof g_dsn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_days_equal_brute_force),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
