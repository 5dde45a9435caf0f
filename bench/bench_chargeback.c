/* /v1/chargeback on a synthetic month: 10,000 GPUs (1,250 nodes x 8) and
 * 1,000,000 jobs, through the real daemon over HTTP, against the limit: the
 * same aggregation as the best hand-written SQL over the same tables, run
 * directly. Then the same number of jobs spread over the year before
 * 2026-11-01 and the month 2026-10 asked again: a month view must not slow
 * with the history before it (a query that walked every job that ended
 * before the window made it 188 / 301 ms p50 / p99 at 1M jobs and 504 / 734
 * at 5M). Usage: bench_chargeback [jobs] [requests] [month|year|both].
 * Needs the environment of bench/run.sh. */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void die(const char *m, PGconn *c)
{
	fprintf(stderr, "bench_chargeback: %s %s\n", m, c ? PQerrorMessage(c) : "");
	exit(1);
}

static void pct(double *v, int n, double *p50, double *p99)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	*p50 = v[(n + 1) / 2 - 1];
	*p99 = v[(int)(0.99 * n + 0.999999) - 1];
}

/* One case: jobs spread over span_days days ending 2026-11-01 (31: the
 * month itself), the month's rollup built, the month asked reqs times. */
static void run_case(long jobs, int reqs, int span_days)
{
	/* the hand-written SQL takes seconds a run, so it runs 5 times */
	int sql_reqs = reqs < 5 ? reqs : 5;
	char dsn[512], where[64], from[32], span[32];
	struct gl_test_daemon d;
	double lat[400], lat0[400], p50, p99, sql_lat[400], s50, s99, t0;
	PGconn *c;
	/* 0 = no per-address limit: the benchmark is one client on purpose */
	const char *cost = "server:\n  rate_limit_per_ip: 0\n"
			   "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\n"
			   "owners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n    team: t2\n"
			   "  - match: account\n    value: acct3\n    team: t3\n  - match: user\n    value: '*'\n    team: rest\n";
	snprintf(where, sizeof where, span_days > 31 ? " over %d days of history" : "", span_days);
	if (gl_test_db_fresh(span_days > 31 ? "gl_bench_chargeback_year" : "gl_bench_chargeback", dsn, sizeof dsn))
		die("db", NULL);
	c = PQconnectdb(dsn);
	t0 = gl_test_now_s();
	/* a month of jobs: 1..8 GPUs, 5 min .. 2 days, 200 accounts, 2,000 users */
	snprintf(from, sizeof from, "%s", span_days == 31 ? "2026-10-01" : "2025-11-01");
	snprintf(span, sizeof span, "%d days", span_days);
	gl_test_synth_jobs(c, dsn, jobs, from, span);
	fprintf(stderr, "  generated %ld jobs in %.1f s\n", jobs, gl_test_now_s() - t0);
	if (gl_test_daemon_start(&d, dsn, cost, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	{
		/* the daily aggregates the daemon keeps current; built here at once */
		struct gl_test_out o;
		t0 = gl_test_now_s();
		/* the days from 2026-10-01 to now: the month asked is built */
		if (gl_test_run(dsn, NULL, &o, "rollup", "--days", "62", NULL) || o.status != 0)
			die("rollup", NULL);
		gl_test_out_fini(&o);
		printf("| usage_daily rollup of the month, %ld jobs%s (31 days, background work) | %.1f s | - | - |\n", jobs,
		       where, gl_test_now_s() - t0);
		fflush(stdout);
	}
	for (int pass = 0; pass < 2; pass++) {
		const char *path = pass ? "/v1/chargeback?window=2026-10&aggregate=team&step=day"
					: "/v1/chargeback?window=2026-10&aggregate=team";
		int failed = 0;
		for (int i = 0; i < reqs && !failed; i++) {
			struct gl_test_http r;
			double a = gl_test_now_s();
			if (gl_test_http(d.port, "GET", path, NULL, 0, NULL, &r) || r.status != 200)
				failed = 1; /* the test client gives up after 30 s */
			lat[i] = (gl_test_now_s() - a) * 1000;
			gl_test_http_fini(&r);
		}
		if (failed) {
			printf("| /v1/chargeback month, aggregate=team%s, %ld jobs%s | no answer within 30 s | 100 ms p99 (target) | - |\n",
			       pass ? ", step=day" : "", jobs, where);
			continue;
		}
		pct(lat, reqs, &p50, &p99);
		if (pass == 0)
			memcpy(lat0, lat, sizeof lat0);
		printf("| /v1/chargeback month, aggregate=team%s, %ld jobs%s (p50 / p99 of %d) | %.0f / %.0f ms | 100 ms p99 (target) | %.2fx |\n",
		       pass ? ", step=day" : "", jobs, where, reqs, p50, p99, p99 / 100.0);
		fflush(stdout);
	}
	/* the limit: the best hand-written SQL for the same figures (allocation
	 * and cost per team for the month, owner rules at job start) */
	for (int i = 0; i < sql_reqs; i++) {
		PGresult *r;
		double a = gl_test_now_s();
		r = PQexec(c, "SELECT coalesce(o.team, '__unallocated__'), sum(j.gpu_milli::numeric * extract(epoch FROM"
			      " least(j.end_at, '2026-11-01') - greatest(j.start_at, '2026-10-01'))),"
			      " sum(j.gpu_milli::numeric * extract(epoch FROM least(j.end_at, '2026-11-01') -"
			      " greatest(j.start_at, '2026-10-01')) * r.micros_per_gpu_hour)"
			      " FROM jobs j JOIN rates r ON r.gpu_model = j.gpu_type"
			      " LEFT JOIN LATERAL (SELECT team FROM owners w WHERE w.valid_from <= j.start_at AND j.start_at < w.valid_to"
			      "  AND (w.match_value = '*' OR w.match_value = CASE w.match_field WHEN 'account' THEN j.account"
			      "  WHEN 'user' THEN j.user_name END) ORDER BY w.priority LIMIT 1) o ON true"
			      " WHERE j.gpu_milli > 0 AND j.start_at < '2026-11-01' AND j.end_at > '2026-10-01' GROUP BY 1");
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
			die("sql", c);
		PQclear(r);
		sql_lat[i] = (gl_test_now_s() - a) * 1000;
	}
	pct(sql_lat, sql_reqs, &s50, &s99);
	pct(lat0, reqs, &p50, &p99);
	printf("| /v1/chargeback month vs hand-written SQL (p50)%s | %.0f ms | SQL in psql: %.0f ms (target <= 1.3x) | %.3fx |\n",
	       where, p50, s50, p50 / s50);
	gl_test_daemon_stop(&d);
	PQfinish(c);
}

int main(int argc, char **argv)
{
	long jobs = argc > 1 ? atol(argv[1]) : 1000000;
	int reqs = argc > 2 ? atoi(argv[2]) : 200; /* the 200 requests */
	const char *which = argc > 3 ? argv[3] : "both";
	if (reqs > 400)
		reqs = 400;
	if (strcmp(which, "year"))
		run_case(jobs, reqs, 31);
	if (strcmp(which, "month"))
		run_case(jobs, reqs, 365);
	return 0;
}
