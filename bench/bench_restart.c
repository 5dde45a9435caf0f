/* A daemon restart over a built year (issue 24 item 5): synthetic jobs
 * spread over the twelve months before this one (2,000,000 by default;
 * argv[1] another count), the cost model in the config, every day rolled
 * up; then the daemon is stopped and started again with the same config.
 * Figures: the days the restart rebuilt (it used to throw all away), how
 * long after /healthz turned 200 a month by team was answered (target:
 * within 1 s, from the rollup), and, as the peer, that month read live
 * from the jobs (what a restart used to leave until the rollup caught up).
 * Needs the environment of bench/run.sh. */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void exec(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "bench_restart: %s: %s", sql, PQerrorMessage(c));
		exit(1);
	}
	PQclear(r);
}

/* ms of one GET path (200 wanted) */
static double get_ms(int port, const char *path)
{
	struct gl_test_http r;
	double a = gl_test_now_s();
	if (gl_test_http(port, "GET", path, NULL, 0, NULL, &r) || r.status != 200)
		gl_test_die("a request failed");
	gl_test_http_fini(&r);
	return (gl_test_now_s() - a) * 1000;
}

/* The daemon's first "rollup:all: N days rebuilt"; -1 when none came. */
static int rolled(const struct gl_test_daemon *d)
{
	for (int i = 0; i < 600; i++) {
		char *log = gl_test_read_file(d->log, NULL), *p = strstr(log, "rollup:all: ");
		int n = p && strstr(p, " days rebuilt") ? atoi(p + 12) : -1;
		free(log);
		if (n >= 0)
			return n;
		usleep(100 * 1000);
	}
	return -1;
}

int main(int argc, char **argv)
{
	long jobs = argc > 1 ? atol(argv[1]) : 2000000;
	const char *cost = "log:\n  level: info\nserver:\n  rate_limit_per_ip: 0\n"
			   "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\n"
			   "owners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n    team: t2\n"
			   "  - match: account\n    value: acct3\n    team: t3\n  - match: user\n    value: '*'\n    team: rest\n";
	char dsn[512], month[96], year0[16];
	struct gl_test_daemon d;
	double t0, ms_health = 0, gap_ms, first_ms, live_ms;
	long long built, after;
	int64_t now = (int64_t)time(NULL), y;
	int m, rebuilt;
	PGconn *c;

	/* the twelve whole months before this one; the month asked is the sixth */
	{
		struct tm tm;
		time_t t = (time_t)now;
		gmtime_r(&t, &tm);
		y = tm.tm_year + 1900 - 1;
		m = tm.tm_mon + 1;
		snprintf(year0, sizeof year0, "%04lld-%02d-01", (long long)y, m);
		snprintf(month, sizeof month, "/v1/chargeback?window=%04lld-%02d&aggregate=team",
			 (long long)(m + 6 > 12 ? y + 1 : y), m + 6 > 12 ? m - 6 : m + 6);
	}
	if (gl_test_db_fresh("gl_bench_restart", dsn, sizeof dsn))
		gl_test_die("db");
	c = PQconnectdb(dsn);
	t0 = gl_test_now_s();
	gl_test_synth_jobs(c, dsn, jobs, year0, "363 days");
	fprintf(stderr, "  generated %ld jobs over the year from %s in %.1f s\n", jobs, year0, gl_test_now_s() - t0);

	/* the first start loads the cost model; the year is then rolled up */
	if (gl_test_daemon_start(&d, dsn, cost, (const char *[]){"--no-ingest", NULL}))
		gl_test_die("daemon");
	gl_test_daemon_stop(&d);
	t0 = gl_test_now_s();
	if (gl_test_cli(dsn, "rollup", "--days", "400", NULL))
		gl_test_die("rollup");
	built = gl_test_qint(c, "SELECT count(*) FROM usage_daily_built");
	fprintf(stderr, "  rolled up %lld days in %.1f s\n", built, gl_test_now_s() - t0);

	/* the restart: the same config; the daemon's rollup runs at once */
	t0 = gl_test_now_s();
	if (gl_test_daemon_start(&d, dsn, cost, NULL))
		gl_test_die("daemon");
	for (;;) {
		struct gl_test_http r;
		if (gl_test_http(d.port, "GET", "/healthz", NULL, 0, (const char *const[]){"Authorization:", NULL}, &r) == 0 &&
		    r.status == 200) {
			gl_test_http_fini(&r);
			ms_health = (gl_test_now_s() - t0) * 1000;
			break;
		}
		gl_test_http_fini(&r);
		usleep(10 * 1000);
	}
	first_ms = get_ms(d.port, month);
	gap_ms = (gl_test_now_s() - t0) * 1000 - ms_health;
	rebuilt = rolled(&d);
	after = gl_test_qint(c, "SELECT count(*) FROM usage_daily_built");
	printf("| restart over a built year (%ld jobs, %lld days built): days the restart rebuilt; built days left | %d; %lld"
	       " | 0; %lld (it left 0) | - |\n",
	       jobs, built, rebuilt, after, built);
	printf("| the same: month by team answered after /healthz turned 200 (/healthz %.0f ms after the start) | %.0f ms"
	       " (the request itself %.0f ms) | 1,000 ms (target) | %.2fx |\n",
	       ms_health, gap_ms, first_ms, gap_ms / 1000.0);
	/* the peer: what the old restart left, the month read live from jobs */
	exec(c, "DELETE FROM usage_daily_built");
	live_ms = get_ms(d.port, month);
	printf("| the same month read live (no built day, as a restart left it before) vs from the rollup | %.0f ms |"
	       " %.0f ms live | %.3fx |\n",
	       first_ms, live_ms, first_ms / live_ms);
	gl_test_daemon_stop(&d);
	PQfinish(c);
	return 0;
}
