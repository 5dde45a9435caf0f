/* Observed time on a fleet of long-running jobs: 10,000 open one-GPU jobs
 * started over the 30 days before now (the cost model loaded first, as a
 * user has it: two rate periods, 50 accounts in 10 teams), their days
 * rolled up, then a later
 * sacct output of the same jobs (Elapsed grown by 5 minutes, as sacct prints
 * them at the next poll; ingested with --at five minutes later, so every
 * job's last_seen_at moves too). The figures: how many rolled-up days the
 * poll made stale (the limit: today's, which is never built, so 0 built
 * days) and what rebuilding them costs, and /v1/chargeback's month with the
 * open jobs' unobserved time read live: the 29 built days from the
 * rollup, today's firm time and every day's unobserved time from the jobs
 * (the figures say how many days were built when the requests ran), with
 * the database time of the live lines queries from the server's statement
 * log. Needs the environment of bench/run.sh. */
#include "lib/testlib.h"
#include "gl/strbuf.h"

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

/* The cost model: a100 at 2.50 until 15 days ago, 3.00 since; accounts
 * acct0..acct49 in teams t0..t9 (account rules, as most sites write them).
 * The daemon's configuration carries the same, so its start changes
 * nothing and no built day goes stale. */
static void cost_yaml(struct gl_strbuf *y, time_t now)
{
	time_t cut = now - 15 * 86400;
	struct tm tm;
	char at[32];
	gmtime_r(&cut, &tm);
	strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
	gl_strbuf_printf(y, "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n    to: \"%s\"\n"
			    "  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: \"%s\"\nowners:\n", at, at);
	for (int a = 0; a < 50; a++)
		gl_strbuf_printf(y, "  - match: account\n    value: acct%d\n    team: t%d\n    project: p%d\n", a, a % 10, a);
}

static void load_costs(const char *dsn, const char *path, const struct gl_strbuf *y)
{
	struct gl_test_out o;
	FILE *f = fopen(path, "w");
	if (!f || fputs(y->p, f) < 0 || fclose(f))
		die(path, NULL);
	if (gl_test_run(dsn, NULL, &o, "rates", "load", path, NULL) || o.status != 0)
		die("rates load", NULL);
	gl_test_out_fini(&o);
}

/* The server log's statements after offset off whose text holds what:
 * how many ran and their summed duration (parse, bind and execute) (log_min_duration_statement = 0). */
static double log_ms(const char *log, long off, const char *what, int *n)
{
	FILE *f = fopen(log, "r");
	char line[8192];
	double ms = 0;
	*n = 0;
	if (!f)
		return -1;
	fseek(f, off, SEEK_SET);
	while (fgets(line, sizeof line, f)) {
		const char *d = strstr(line, "duration: ");
		if (d && strstr(d, what)) {
			ms += atof(d + 10);
			/* parse, bind and execute are logged apart */
			*n += strstr(d, " execute ") != NULL;
		}
	}
	fclose(f);
	return ms;
}

static long log_end(const char *log)
{
	FILE *f = fopen(log, "r");
	long off;
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	off = ftell(f);
	fclose(f);
	return off;
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

static int cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* the q-th percentile of n sorted latencies (nearest rank) */
static double rank(const double *lat, int n, int q)
{
	return lat[(q * n + 99) / 100 - 1];
}

/* reqs requests of path, then their p50 / p90 / p99 and the server's time
 * for them: every statement, and the live lines queries (the jobs read
 * through gl_job_usage_steps). Under 100 requests the p99 is the slowest
 * request, not a percentile: 200 by default. */
static void measure(int port, const char *path, const char *label, int reqs, const char *log, long long built)
{
	double *lat = calloc((size_t)reqs, sizeof *lat), all_ms, live_ms;
	int n_all, n_live;
	long off = log_end(log);
	if (!lat)
		die("calloc", NULL);
	for (int i = 0; i < reqs; i++) {
		struct gl_test_http r;
		double a = gl_test_now_s();
		if (gl_test_http(port, "GET", path, NULL, 0, NULL, &r) || r.status != 200)
			die(path, NULL);
		lat[i] = (gl_test_now_s() - a) * 1000;
		gl_test_http_fini(&r);
	}
	qsort(lat, (size_t)reqs, sizeof *lat, cmp_ms);
	all_ms = log_ms(log, off, "", &n_all);
	live_ms = log_ms(log, off, "gl_job_usage_steps", &n_live);
	printf("| /v1/chargeback 30 days by team, %s (%lld of 30 days built; p50 / p90 / p99 of %d) | %.0f / %.0f / %.0f ms"
	       " | 100 ms p99 (target) | %.2fx |\n",
	       label, built, reqs, rank(lat, reqs, 50), rank(lat, reqs, 90), rank(lat, reqs, 99),
	       rank(lat, reqs, 99) / 100.0);
	free(lat);
	if (n_live)
		printf("| the same: database time a request, all statements / the live lines queries (%d a request) | "
		       "%.0f / %.0f ms | - | - |\n",
		       n_live / reqs, all_ms / reqs, live_ms / reqs);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	int reqs = argc > 2 ? atoi(argv[2]) : 200;
	time_t now = time(NULL);
	char dsn[512], f1[600], f2[600], fc[600], log[600], label[96];
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	struct gl_strbuf costs = GL_STRBUF_INIT, conf = GL_STRBUF_INIT;
	struct gl_test_daemon d;
	double t_ing, t_roll;
	long long days_before, days_after;
	PGconn *c;

	if (reqs < 1)
		reqs = 200;
	if (gl_test_db_fresh("gl_bench_observed", dsn, sizeof dsn))
		die("db", NULL);
	c = PQconnectdb(dsn);
	snprintf(f1, sizeof f1, "%s/observed-1.txt", tmp);
	snprintf(f2, sizeof f2, "%s/observed-2.txt", tmp);
	snprintf(fc, sizeof fc, "%s/observed-costs.yaml", tmp);
	snprintf(log, sizeof log, "%s/var/log/postgresql.log", tmp);
	cost_yaml(&costs, now);
	load_costs(dsn, fc, &costs);
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
	gl_strbuf_printf(&conf, "server:\n  rate_limit_per_ip: 0\n%s", costs.p);
	if (gl_test_daemon_start(&d, dsn, conf.p, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	days_after = q1(c, "SELECT count(*) FROM usage_daily_built");
	gl_test_exec_dsn(gl_test_admin_dsn(), "ALTER DATABASE gl_bench_observed SET log_min_duration_statement = 0");
	/* the daemon's pooled sessions took the setting at their start: a
	 * restart gives them the statement log */
	gl_test_daemon_stop(&d);
	if (gl_test_daemon_start(&d, dsn, conf.p, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	snprintf(label, sizeof label, "%ld open jobs", n);
	measure(d.port, "/v1/chargeback?window=30d&aggregate=team", label, reqs, log, days_after);
	snprintf(label, sizeof label, "%ld open jobs, unobserved=include", n);
	measure(d.port, "/v1/chargeback?window=30d&aggregate=team&unobserved=include", label, reqs, log, days_after);
	gl_test_daemon_stop(&d);
	gl_test_exec_dsn(gl_test_admin_dsn(), "ALTER DATABASE gl_bench_observed RESET log_min_duration_statement");
	gl_strbuf_fini(&costs);
	gl_strbuf_fini(&conf);
	PQfinish(c);
	return 0;
}
