/* Observed time on a fleet of long-running jobs: 10,000 open one-GPU jobs
 * started over the 30 days before now, their days rolled up, then a later
 * sacct output of the same jobs (Elapsed grown by 5 minutes, as sacct prints
 * them at the next poll; ingested with --at five minutes later, so every
 * job's last_seen_at moves too). The figures: how many rolled-up days the
 * poll made stale (the limit: today's, which is never built, so 0 built
 * days) and what rebuilding them costs, and /v1/chargeback's month with the
 * open jobs' unobserved time read live. Needs the environment of
 * bench/run.sh. */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *m, PGconn *c)
{
	fprintf(stderr, "bench_observed: %s %s\n", m, c ? PQerrorMessage(c) : "");
	exit(1);
}

static long long q1(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	long long v;
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		die(sql, c);
	v = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

/* the jobs as sacct --parsable2 prints them at t (header line, UTC) */
static void write_sacct(const char *path, long n, time_t now, time_t t)
{
	FILE *f = fopen(path, "w");
	if (!f)
		die(path, NULL);
	fputs("JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|Elapsed|"
	      "ElapsedRaw|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|DBIndex|"
	      "Suspended|WCKey|JobName\n",
	      f);
	for (long g = 1; g <= n; g++) {
		time_t start = now - 30 * 86400 + (time_t)(g * (30LL * 86400 - 3600) / n);
		struct tm tm;
		char s[32];
		gmtime_r(&start, &tm);
		strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(f,
			"%ld|%ld|synth|p1|normal|acct%ld|g|1000|u%ld|1000|%s|%s|%s|Unknown|00:00:00|%lld|0:0|RUNNING|1|1|1|1000M|"
			"billing=1,cpu=1,gres/gpu=1,node=1|billing=1,cpu=1,gres/gpu:a100=1,gres/gpu=1,node=1|"
			"30-00:00:00|n%ld|%ld|00:00:00||long\n",
			g, g, g % 50, g % 500, s, s, s, (long long)(t - start), g % 1250, g);
	}
	fclose(f);
}

static double ingest(const char *dsn, const char *file, time_t at)
{
	struct gl_test_out o;
	struct tm tm;
	char a[32];
	double t0 = gl_test_now_s();
	gmtime_r(&at, &tm);
	strftime(a, sizeof a, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (gl_test_run(dsn, NULL, &o, "ingest", "sacct", "--cluster", "synth", "--file", file, "--at", a, NULL) ||
	    o.status != 0)
		die("ingest", NULL);
	gl_test_out_fini(&o);
	return gl_test_now_s() - t0;
}

static double rollup(const char *dsn)
{
	struct gl_test_out o;
	double t0 = gl_test_now_s();
	if (gl_test_run(dsn, NULL, &o, "rollup", NULL) || o.status != 0)
		die("rollup", NULL);
	gl_test_out_fini(&o);
	return gl_test_now_s() - t0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	int reqs = argc > 2 ? atoi(argv[2]) : 20;
	time_t now = time(NULL);
	char dsn[512], f1[600], f2[600];
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	struct gl_test_daemon d;
	double t_ing, t_roll, lat[200] = {0}, p50;
	long long days_before, days_after;
	PGconn *c;

	if (reqs > 200)
		reqs = 200;
	if (gl_test_db_fresh("gl_bench_observed", dsn, sizeof dsn))
		die("db", NULL);
	c = PQconnectdb(dsn);
	snprintf(f1, sizeof f1, "%s/observed-1.txt", tmp);
	snprintf(f2, sizeof f2, "%s/observed-2.txt", tmp);
	write_sacct(f1, n, now, now - 600);
	write_sacct(f2, n, now, now - 300);
	ingest(dsn, f1, now - 600);
	t_roll = rollup(dsn);
	days_before = q1(c, "SELECT count(*) FROM usage_daily_built");
	fprintf(stderr, "  %ld open jobs over 30 days, %lld days built in %.1f s\n", n, days_before, t_roll);
	/* the next poll: every row rewritten (Elapsed, last_seen_at) */
	t_ing = ingest(dsn, f2, now - 300);
	days_after = q1(c, "SELECT count(*) FROM usage_daily_built");
	if (q1(c, "SELECT count(*) FROM jobs WHERE end_at IS NULL") != n)
		die("jobs", c);
	printf("| sacct poll over %ld open jobs: built days made stale | %lld of %lld | 0 (today is never built) | - |\n", n,
	       days_before - days_after, days_before);
	printf("| sacct poll over %ld open jobs: ingest (every row rewritten) | %.2f s | - | - |\n", n, t_ing);
	t_roll = rollup(dsn);
	printf("| rollup after that poll (days rebuilt: %lld) | %.2f s | - | - |\n", days_before - days_after, t_roll);
	if (gl_test_daemon_start(&d, dsn, "server:\n  rate_limit_per_ip: 0\nrates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n",
				 (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	for (int pass = 0; pass < 2; pass++) {
		const char *path = pass ? "/v1/chargeback?window=30d&aggregate=team&unobserved=include"
					: "/v1/chargeback?window=30d&aggregate=team";
		for (int i = 0; i < reqs; i++) {
			struct gl_test_http r;
			double a = gl_test_now_s();
			if (gl_test_http(d.port, "GET", path, NULL, 0, NULL, &r) || r.status != 200)
				die(path, NULL);
			lat[i] = (gl_test_now_s() - a) * 1000;
			gl_test_http_fini(&r);
		}
		for (int i = 1; i < reqs; i++)
			for (int k = i; k > 0 && lat[k] < lat[k - 1]; k--) {
				double x = lat[k];
				lat[k] = lat[k - 1];
				lat[k - 1] = x;
			}
		p50 = lat[(reqs + 1) / 2 - 1];
		printf("| /v1/chargeback 30 days by team, %ld open jobs%s (p50 of %d) | %.0f ms | 100 ms p99 (target) | %.2fx |\n",
		       n, pass ? ", unobserved=include" : "", reqs, p50, p50 / 100.0);
	}
	gl_test_daemon_stop(&d);
	PQfinish(c);
	return 0;
}
