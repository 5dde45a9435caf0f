/* GET /v1/runs for a synthetic month of jobs grouped into runs, through the
 * real daemon over HTTP, against the limit (p99 < 500 ms at
 * 1,000,000 jobs). The jobs are gl_test_synth_jobs' (1-8 GPUs, 5 min to 2
 * days, 2,000 users), then named so that every 4 of them, spread over the
 * month, are one user's one job name: runs of 4 jobs under
 * runs: [{by: name_user}]. Asked with aggregate=user (a list of 250,000
 * runs is past server.max_answer_lines) and once per run (the list) at
 * sizes that fit. Usage: bench_runs [jobs] [requests] (1000000 5; or
 * $GL_BENCH_RUNS_JOBS, for a smaller run through bench/run.sh). Needs the
 * environment of bench/run.sh. */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void measure(int port, const char *path, int reqs, long jobs, const char *what)
{
	double lat[100], p50, p99;
	for (int i = 0; i < reqs; i++) {
		struct gl_test_http r;
		double a = gl_test_now_s();
		if (gl_test_http(port, "GET", path, NULL, 0, NULL, &r) || r.status != 200) {
			printf("| %s, %ld jobs | no answer (status %ld) | 500 ms p99 (target) | - |\n", what,
			       jobs, r.status);
			gl_test_http_fini(&r);
			return;
		}
		lat[i] = (gl_test_now_s() - a) * 1000;
		gl_test_http_fini(&r);
	}
	qsort(lat, (size_t)reqs, sizeof *lat, cmp_d);
	p50 = lat[(reqs + 1) / 2 - 1];
	p99 = lat[(int)(0.99 * reqs + 0.999999) - 1];
	printf("| %s, %ld jobs in %ld runs (p50 / p99 of %d) | %.0f / %.0f ms | 500 ms p99 (target) | "
	       "%.2fx |\n",
	       what, jobs, jobs / 4, reqs, p50, p99, p99 / 500.0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *env = getenv("GL_BENCH_RUNS_JOBS");
	long jobs = argc > 1 ? atol(argv[1]) : env ? atol(env) : 1000000;
	int reqs = argc > 2 ? atoi(argv[2]) : 5;
	const char *cfg = "server:\n  rate_limit_per_ip: 0\n"
			  "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\n"
			  "runs:\n  - by: name_user\n";
	char dsn[512], sql[512];
	struct gl_test_daemon d;
	PGresult *r;
	PGconn *c;
	double t0;

	if (reqs > 100)
		reqs = 100;
	if (jobs < 8000)
		jobs = 8000;
	if (gl_test_db_fresh("gl_bench_runs", dsn, sizeof dsn))
		die("db", NULL);
	c = PQconnectdb(dsn);
	t0 = gl_test_now_s();
	gl_test_synth_jobs(c, dsn, jobs, "2026-10-01", "31 days");
	/* job g and g + jobs/4, + jobs/2, + 3 jobs/4: one name, one user */
	snprintf(sql, sizeof sql,
		 "UPDATE jobs SET name = 'train-' || (job_id::bigint %% %ld),"
		 " user_name = 'u' || ((job_id::bigint %% %ld) %% 2000)",
		 jobs / 4, jobs / 4);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		die("update", c);
	PQclear(r);
	PQclear(PQexec(c, "ANALYZE jobs"));
	fprintf(stderr, "  generated %ld jobs in %.1f s\n", jobs, gl_test_now_s() - t0);
	if (gl_test_daemon_start(&d, dsn, cfg, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	measure(d.port, "/v1/runs?window=2026-10&aggregate=user", reqs, jobs, "/v1/runs month, aggregate=user");
	/* the peer: the ledger's own month by user over the same jobs, read
	 * live as /v1/runs reads them (no day is rolled up here) */
	measure(d.port, "/v1/chargeback?window=2026-10&aggregate=user", reqs, jobs, "peer: /v1/chargeback month, aggregate=user");
	if (jobs / 4 <= 250000)
		measure(d.port, "/v1/runs?window=2026-10", reqs, jobs, "/v1/runs month, every run");
	gl_test_daemon_stop(&d);
	PQfinish(c);
	return 0;
}
