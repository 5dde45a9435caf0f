/* GET /v1/runs for a synthetic month of jobs grouped into runs, through the
 * real daemon over HTTP, against the limit (p99 < 500 ms at
 * 1,000,000 jobs). The jobs are gl_test_synth_jobs' (1-8 GPUs, 5 min to 2
 * days, 2,000 users), then named so that every 4 of them, spread over the
 * month, are one user's one job name: runs of 4 jobs under
 * runs: [{by: name_user}]. Asked with aggregate=user, for the whole list
 * (limit= every run, JSON and CSV, and the list's SELECT alone), and for
 * a page (the first, one in the middle): first with no day built (every job's line live; at most
 * 100,000 jobs, the old path), then after the real `gpuledger rollup` of
 * the month (per-job lines from usage_daily_job, sql/092), with the
 * rollup's time, the per-job tables' size per job, and
 * one day built again with its statements timed by the server's own log
 * (log_min_duration_statement): what the per-job lines add to a day.
 * Usage: bench_runs [jobs] [requests] (1000000 5; or $GL_BENCH_RUNS_JOBS,
 * for a smaller run through bench/run.sh); $GL_BENCH_RUNS_PEER, another
 * tree's gpuledger (main's), asked in turn with this one on the same
 * month. $GL_BENCH_RUNS_SO_FAR=1: the month in progress instead (so_far()).
 * Needs the environment of bench/run.sh. */
#include "lib/testlib.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void die(const char *m, PGconn *c)
{
	fprintf(stderr, "bench_runs: %s %s\n", m, c ? PQerrorMessage(c) : "");
	exit(1);
}

/* fallback: asked instead when path is refused (400), as a tree without
 * the list's limit= refuses it: the same list from the older answer */
static void measure_or(int port, const char *path, const char *fallback, int reqs, long jobs, const char *what)
{
	double lat[100], p50, p99;
	size_t bytes = 0;
	for (int i = 0; i < reqs; i++) {
		struct gl_test_http r;
		double a = gl_test_now_s();
		int bad = gl_test_http(port, "GET", path, NULL, 0, NULL, &r);
		if (!bad && r.status == 400 && fallback) {
			gl_test_http_fini(&r);
			path = fallback;
			a = gl_test_now_s();
			bad = gl_test_http(port, "GET", path, NULL, 0, NULL, &r);
		}
		if (bad || r.status != 200) {
			printf("| %s, %ld jobs | no answer (status %ld) | 500 ms p99 (target) | - |\n", what,
			       jobs, r.status);
			gl_test_http_fini(&r);
			return;
		}
		lat[i] = (gl_test_now_s() - a) * 1000;
		bytes = r.len;
		gl_test_http_fini(&r);
	}
	qsort(lat, (size_t)reqs, sizeof *lat, cmp_d);
	p50 = lat[(reqs + 1) / 2 - 1];
	p99 = lat[(int)(0.99 * reqs + 0.999999) - 1];
	printf("| %s, %ld jobs in %ld runs (p50 / p99 of %d; %.1f MB) | %.0f / %.0f ms | 500 ms p99 (target) | "
	       "%.2fx |\n",
	       what, jobs, jobs / 4, reqs, bytes / 1e6, p50, p99, p99 / 500.0);
	fflush(stdout);
}

static void measure(int port, const char *path, int reqs, long jobs, const char *what)
{
	measure_or(port, path, NULL, reqs, jobs, what);
}

/* The whole list of the built month, JSON and CSV, and its aggregate by user. */
static void list_rows(int port, int reqs, long jobs, const char *who)
{
	char all[128], csv[128], what[3][200];
	snprintf(all, sizeof all, "/v1/runs?window=2026-10&limit=%ld", jobs / 4);
	snprintf(csv, sizeof csv, "/v1/runs?window=2026-10&format=csv&limit=%ld", jobs / 4);
	snprintf(what[0], sizeof what[0], "%s/v1/runs month, every run (limit= the runs), month built", who);
	snprintf(what[1], sizeof what[1], "%s/v1/runs month, every run as CSV (limit= the runs), month built", who);
	snprintf(what[2], sizeof what[2], "%s/v1/runs month, aggregate=user, month built", who);
	measure_or(port, all, "/v1/runs?window=2026-10", reqs, jobs, what[0]);
	measure_or(port, csv, "/v1/runs?window=2026-10&format=csv", reqs, jobs, what[1]);
	if (*who)
		measure(port, "/v1/runs?window=2026-10&aggregate=user", reqs, jobs, what[2]);
}

/* The built month's rows read alone (the statement of gl_rundb_month,
 * over libpq, no daemon): what of the whole list is the database's. */
static void measure_sql(PGconn *c, int reqs, long jobs)
{
	double lat[100];
	for (int i = 0; i < reqs; i++) {
		double a = gl_test_now_s();
		PGresult *r = PQexec(c, "SELECT *, 1 AS n_runs FROM runs_month WHERE month = '2026-10-01' ORDER BY ord");
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
			die("runs_month", c);
		PQclear(r);
		lat[i] = (gl_test_now_s() - a) * 1000;
	}
	qsort(lat, (size_t)reqs, sizeof *lat, cmp_d);
	printf("| of it: the built month's runs read alone (the list's SELECT over libpq), %ld runs | %.0f / %.0f ms | - | "
	       "- |\n",
	       jobs / 4, lat[(reqs + 1) / 2 - 1], lat[(int)(0.99 * reqs + 0.999999) - 1]);
	fflush(stdout);
}

/* The daemon's configuration, for the CLI's rollup too: the month's runs
 * are built under its runs[] rules (sql/131). */
static char g_cfg[600];

/* The month built by the real CLI, timed; the per-job tables' size. */
static void rollup(const char *dsn, long jobs)
{
	struct gl_test_out o;
	double t0 = gl_test_now_s(), took, runs_s;
	long long bytes, rows, mbytes, mrows;
	if (gl_test_run(dsn, NULL, &o, "--config", g_cfg, "rollup", "--no-runs", NULL) || o.status != 0)
		die("rollup --no-runs", NULL);
	took = gl_test_now_s() - t0;
	gl_test_out_fini(&o);
	t0 = gl_test_now_s();
	if (gl_test_run(dsn, NULL, &o, "--config", g_cfg, "rollup", NULL) || o.status != 0)
		die("rollup", NULL);
	runs_s = gl_test_now_s() - t0;
	gl_test_out_fini(&o);
	printf("| the month's runs built after its days (`gpuledger rollup`, the daemon's runs task), %ld jobs | %.1f s | - "
	       "| - |\n",
	       jobs, runs_s);
	bytes = gl_test_qint_dsn(dsn, "SELECT pg_total_relation_size('usage_daily_job')");
	rows = gl_test_qint_dsn(dsn, "SELECT count(*) FROM usage_daily_job");
	mbytes = gl_test_qint_dsn(dsn, "SELECT pg_total_relation_size('usage_monthly_job')");
	mrows = gl_test_qint_dsn(dsn, "SELECT count(*) FROM usage_monthly_job");
	printf("| `gpuledger rollup --no-runs` of the month (its days), %ld jobs | %.1f s (%lld days) | - | - |\n", jobs, took,
	       gl_test_qint_dsn(dsn, "SELECT count(*) FROM usage_daily_built"));
	printf("| usage_daily_job / usage_monthly_job for the month, %ld jobs | %lld rows, %.1f MB (%.0f bytes a job) / "
	       "%lld rows, %.1f MB (%.0f bytes a job) | - | - |\n",
	       jobs, rows, bytes / 1e6, (double)bytes / jobs, mrows, mbytes / 1e6, (double)mbytes / jobs);
	fflush(stdout);
}

/* Sums the durations of the server log's statements after offset off
 * that start with prefix (log_min_duration_statement = 0). */
static double log_ms(const char *log, long off, const char *needle)
{
	FILE *f = fopen(log, "r");
	char line[65536];
	double ms = 0;
	if (!f)
		return -1;
	fseek(f, off, SEEK_SET);
	while (fgets(line, sizeof line, f)) {
		const char *d = strstr(line, "duration: ");
		if (d && strstr(d, needle))
			ms += atof(d + 10);
	}
	fclose(f);
	return ms;
}

/* One day of the month built again, and its build statement as the
 * server's log times it. */
static void one_day(const char *dsn, long jobs)
{
	char log[600];
	const char *tmp = getenv("GL_TEST_TMP");
	struct gl_test_out o;
	FILE *f;
	long off;
	double t0, took;
	snprintf(log, sizeof log, "%s/var/log/postgresql.log", tmp ? tmp : "/tmp");
	if (!(f = fopen(log, "r")))
		return;
	fseek(f, 0, SEEK_END);
	off = ftell(f);
	fclose(f);
	gl_test_exec_dsn(gl_test_admin_dsn(), "ALTER DATABASE gl_bench_runs SET log_min_duration_statement = 0");
	gl_test_exec_owner(dsn, "DELETE FROM usage_daily_built WHERE day = '2026-10-15'");
	t0 = gl_test_now_s();
	/* the day alone: the month's runs are the runs task's (its own row) */
	if (gl_test_run(dsn, NULL, &o, "--config", g_cfg, "rollup", "--no-runs", NULL) || o.status != 0)
		die("rollup", NULL);
	took = gl_test_now_s() - t0;
	gl_test_out_fini(&o);
	gl_test_exec_dsn(gl_test_admin_dsn(), "ALTER DATABASE gl_bench_runs RESET log_min_duration_statement");
	/* the day's usage_daily and its per-job lines are one statement (the
	 * batch's), so the log times them together */
	printf("| one day built again (2026-10-15), %ld jobs a month: the whole build / its statement writing usage_daily "
	       "and the per-job lines (usage_daily_job) | %.0f / %.0f ms | - | - |\n",
	       jobs, took * 1000, log_ms(log, off, "INSERT INTO usage_daily_job"));
	fflush(stdout);
}

/* Another tree's daemon (peer: its gpuledger) on the same database. */
static void peer_start(struct gl_test_daemon *pd, const char *dsn, const char *cfg, const char *peer)
{
	const char *own = getenv("GL_TEST_BIN");
	char keep[600];
	snprintf(keep, sizeof keep, "%s", own ? own : "");
	setenv("GL_TEST_BIN", peer, 1);
	if (gl_test_daemon_start(pd, dsn, cfg, (const char *[]){"--no-ingest", NULL}))
		die("peer daemon", NULL);
	setenv("GL_TEST_BIN", keep, 1);
}

/* CPU seconds of the cluster's server processes so far: the postmaster's
 * reaped children (the backends that ended) and the live ones, found as the
 * children of backend's parent. Other sessions' work counts too: the
 * figure is an upper bound of one build's. */
static double server_cpu_s(int backend)
{
	char path[64], line[1024];
	long ppid = -1, tck = sysconf(_SC_CLK_TCK);
	unsigned long long ut, st, cut, cst, total = 0;
	DIR *d;
	struct dirent *e;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/stat", backend);
	if (!(f = fopen(path, "r")) || !fgets(line, sizeof line, f) ||
	    sscanf(strrchr(line, ')') + 2, "%*c %ld", &ppid) != 1) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	if (!(d = opendir("/proc")))
		return -1;
	while ((e = readdir(d))) {
		long pid = atol(e->d_name), pp;
		if (pid <= 0)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/stat", pid);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(line, sizeof line, f) && strrchr(line, ')') &&
		    sscanf(strrchr(line, ')') + 2, "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &pp, &ut,
			   &st, &cut, &cst) == 5) {
			if (pid == ppid)
				total += ut + st + cut + cst;
			else if (pp == ppid)
				total += ut + st;
		}
		fclose(f);
	}
	closedir(d);
	return (double)total / (double)tck;
}

/* `gpuledger rollup` (the runs task's build with it), timed: wall, its
 * own CPU and the server's. */
static void timed_rollup(const char *dsn, PGconn *c, const char *what, long jobs)
{
	struct gl_test_out o;
	struct rusage a, b;
	double t0, s0 = server_cpu_s(PQbackendPID(c)), took;
	getrusage(RUSAGE_CHILDREN, &a);
	t0 = gl_test_now_s();
	if (gl_test_run(dsn, NULL, &o, "--config", g_cfg, "rollup", NULL) || o.status != 0)
		die("rollup", NULL);
	took = gl_test_now_s() - t0;
	getrusage(RUSAGE_CHILDREN, &b);
	/* the rollup's backend counts once the postmaster reaped it */
	usleep(500000);
	printf("| %s, %ld jobs: wall / CPU of `gpuledger rollup` / CPU of the server (%.*s) | %.1f s / %.1f s / %.1f s | - | - "
	       "|\n",
	       what, jobs, (int)strcspn(o.out, "\n"), o.out, took,
	       (double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_stime.tv_sec) +
		       (b.ru_utime.tv_usec - a.ru_utime.tv_usec + b.ru_stime.tv_usec - a.ru_stime.tv_usec) / 1e6,
	       server_cpu_s(PQbackendPID(c)) - s0);
	gl_test_out_fini(&o);
	fflush(stdout);
}

/* The month in progress (GL_BENCH_RUNS_SO_FAR=1): the jobs spread over this
 * month up to ten minutes ago, its past days built (`rollup --no-runs`),
 * then /v1/runs?window=month grouped live (fresh=1; the peer's, main's, is
 * live anyway), the month so far built by the rollup (its wall and CPU
 * time) and asked again, the peer in turn with this tree. A live answer
 * at 1,000,000 jobs takes 15-30 s: GL_TEST_TIMEOUT_SCALE=3 gives the
 * client 90 s (a request the client left runs on in the server, beside
 * the next ones). */
static void so_far(const char *dsn, PGconn *c, long jobs, int reqs, const char *cfg, const char *peer)
{
	static const char page[] = "/v1/runs?window=month&limit=1000", agg[] = "/v1/runs?window=month&aggregate=user";
	struct gl_test_daemon d, pd = {0};
	struct gl_test_out o;
	time_t now = time(NULL);
	struct tm tm;
	char from[32], span[32];
	int live_reqs = jobs >= 500000 && reqs > 2 ? 2 : reqs;
	double t0;
	gmtime_r(&now, &tm);
	snprintf(from, sizeof from, "%04d-%02d-01T00:00:00Z", tm.tm_year + 1900, tm.tm_mon + 1);
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	snprintf(span, sizeof span, "%lld seconds", (long long)(now - timegm(&tm)) - 600);
	t0 = gl_test_now_s();
	gl_test_synth_runs(c, dsn, jobs, from, span, 0);
	fprintf(stderr, "  generated %ld jobs from %s over %s in %.1f s\n", jobs, from, span, gl_test_now_s() - t0);
	/* the daemons first: a start writes the config's rates, which makes
	 * the days built before it stale */
	if (gl_test_daemon_start(&d, dsn, cfg, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	if (peer)
		peer_start(&pd, dsn, cfg, peer);
	t0 = gl_test_now_s();
	if (gl_test_run(dsn, NULL, &o, "--config", g_cfg, "rollup", "--no-runs", NULL) || o.status != 0)
		die("rollup --no-runs", NULL);
	gl_test_out_fini(&o);
	printf("| the month in progress: its past days built (`rollup --no-runs`), %ld jobs | %.1f s (%lld days) | - | - |\n",
	       jobs, gl_test_now_s() - t0, gl_test_qint_dsn(dsn, "SELECT count(*) FROM usage_daily_built"));
	for (int round = 0; round < 2; round++) {
		if (peer)
			measure(pd.port, page, live_reqs, jobs, "peer (main): /v1/runs?window=month&limit=1000, live");
		measure(d.port, "/v1/runs?window=month&limit=1000&fresh=1", live_reqs, jobs,
			"this tree: /v1/runs?window=month&limit=1000&fresh=1, live");
	}
	timed_rollup(dsn, c, "the month so far built (its days built already)", jobs);
	for (int round = 0; round < 2; round++) {
		if (peer)
			measure(pd.port, page, live_reqs, jobs, "peer (main): /v1/runs?window=month&limit=1000, live");
		measure(d.port, page, reqs, jobs, "this tree: /v1/runs?window=month&limit=1000, the month so far built");
		measure(d.port, agg, reqs, jobs, "this tree: /v1/runs?window=month&aggregate=user, the month so far built");
	}
	timed_rollup(dsn, c, "the rollup again, nothing changed (the month so far kept)", jobs);
	PQclear(PQexec(c, "UPDATE jobs SET name = 'late' WHERE job_id = '5'"));
	/* the job's days first (the rollup task's), then the runs task's build alone */
	if (gl_test_run(dsn, NULL, &o, "--config", g_cfg, "rollup", "--no-runs", NULL) || o.status != 0)
		die("rollup --no-runs", NULL);
	gl_test_out_fini(&o);
	timed_rollup(dsn, c, "one job changed, its days built again: the month so far built again", jobs);
	if (peer)
		gl_test_daemon_stop(&pd);
	gl_test_daemon_stop(&d);
}

int main(int argc, char **argv)
{
	const char *env = getenv("GL_BENCH_RUNS_JOBS"), *peer = getenv("GL_BENCH_RUNS_PEER");
	long jobs = argc > 1 ? atol(argv[1]) : env ? atol(env) : 1000000;
	int reqs = argc > 2 ? atoi(argv[2]) : 5;
	const char *cfg = "server:\n  rate_limit_per_ip: 0\n"
			  GL_TEST_SYNTH_RATES GL_TEST_SYNTH_RUNS_RULE;
	char dsn[512], deep[128];
	struct gl_test_daemon d;
	PGconn *c;
	double t0;

	const char *tmp = getenv("GL_TEST_TMP");
	FILE *f;

	snprintf(g_cfg, sizeof g_cfg, "%s/bench_runs.yaml", tmp ? tmp : "/tmp");
	if (!(f = fopen(g_cfg, "w")))
		die("config file", NULL);
	fputs(cfg, f);
	fclose(f);
	if (reqs > 100)
		reqs = 100;
	if (jobs < 8000)
		jobs = 8000;
	if (gl_test_db_fresh("gl_bench_runs", dsn, sizeof dsn))
		die("db", NULL);
	c = PQconnectdb(dsn);
	if (getenv("GL_BENCH_RUNS_SO_FAR") && atoi(getenv("GL_BENCH_RUNS_SO_FAR"))) {
		so_far(dsn, c, jobs, reqs, cfg, peer);
		PQfinish(c);
		return 0;
	}
	t0 = gl_test_now_s();
	/* job g and g + jobs/4, + jobs/2, + 3 jobs/4: one name, one user */
	gl_test_synth_runs(c, dsn, jobs, "2026-10-01", "31 days", 0);
	fprintf(stderr, "  generated %ld jobs in %.1f s\n", jobs, gl_test_now_s() - t0);
	if (gl_test_daemon_start(&d, dsn, cfg, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	if (jobs <= 100000) {
		measure(d.port, "/v1/runs?window=2026-10&aggregate=user", reqs, jobs,
			"/v1/runs month, aggregate=user, no day built (live)");
		measure(d.port, "/v1/chargeback?window=2026-10&aggregate=user", reqs, jobs,
			"peer: /v1/chargeback month, aggregate=user, no day built");
	}
	rollup(dsn, jobs);
	measure(d.port, "/v1/runs?window=2026-10&aggregate=user", reqs, jobs, "/v1/runs month, aggregate=user, month built");
	measure(d.port, "/v1/chargeback?window=2026-10&aggregate=user", reqs, jobs,
		"peer: /v1/chargeback month, aggregate=user, month built");
	snprintf(deep, sizeof deep, "/v1/runs?window=2026-10&cursor=%ld", jobs / 8);
	if (jobs / 4 <= 250000) {
		list_rows(d.port, reqs, jobs, "");
		measure_sql(c, reqs, jobs);
	}
	/* another tree's daemon on the same database, asked in turn with this
	 * one's: the figures of one run of the machine, side by side */
	if (peer && jobs / 4 <= 250000) {
		struct gl_test_daemon pd;
		peer_start(&pd, dsn, cfg, peer);
		for (int round = 0; round < 2; round++) {
			list_rows(pd.port, reqs, jobs, "peer (GL_BENCH_RUNS_PEER) ");
			list_rows(d.port, reqs, jobs, "this tree ");
		}
		gl_test_daemon_stop(&pd);
	}
	measure(d.port, "/v1/runs?window=2026-10", reqs, jobs, "/v1/runs month, the first page (default limit), month built");
	measure(d.port, deep, reqs, jobs, "/v1/runs month, a page in the middle (cursor=), month built");
	one_day(dsn, jobs);
	gl_test_daemon_stop(&d);
	PQfinish(c);
	return 0;
}
