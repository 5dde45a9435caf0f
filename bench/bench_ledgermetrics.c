/* The cost of the daemon's /metrics ledger refresh (src/daemon/ledgermetrics.c,
 * issue 28 item 4): every GL_LEDGERMETRICS_INTERVAL_S (60 s) the daemon
 * recomputes the month so far (chargeback per owner and cluster, capacity
 * per cluster and GPU model, budgets) for a scrape to copy. On a large
 * fleet that is a month's accounting a minute, so its CPU is the figure:
 * the daemon's own (this process's CPU time around gl_ledgermetrics_build,
 * the function the daemon's source calls) plus its PostgreSQL backend's
 * (/proc/PID/stat of PQbackendPID), per refresh and as a share of one core
 * at one refresh a minute.
 *
 * The fleet: bench_chargeback's synthetic month (gl_test_synth_jobs:
 * 1,000,000 jobs in October 2026, 200 accounts, 2,000 users, 1,250 nodes)
 * with the 1,250 nodes' scheduler inventory of 8 GPUs each (10,000 GPUs,
 * a100 / h100 as the jobs), the month's daily rollup built as the daemon
 * keeps it, owners by account (3 teams and the rest), a budget per team;
 * the refresh asked at 2026-10-31 23:00 UTC (a full month so far). Two
 * aggregates: team (the default; 4 series) and account (200 series).
 * Usage: bench_ledgermetrics [jobs] [refreshes]. Needs the environment of
 * bench/run.sh. */
#include "lib/testlib.h"

#include "gl/config.h"
#include "store/db_int.h"
#include "gl/ledgermetrics.h"
#include "gl/store.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *m, const char *why)
{
	fprintf(stderr, "bench_ledgermetrics: %s %s\n", m, why ? why : "");
	exit(1);
}

static double cpu_self(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_of(int pid)
{
	double s;
	long hwm;
	gl_test_proc_usage(pid, &s, &hwm);
	return s;
}

/* refreshes builds of the month at now_s with aggregate agg; prints a row */
static void measure(const char *dsn, const char *agg, long jobs, int refreshes, int64_t now_s)
{
	char yaml[2048];
	struct gl_config cfg;
	struct gl_store *st = NULL;
	struct gl_err err = {0};
	double wall = 0, self = 0, back = 0, wmax = 0;
	size_t bytes = 0;
	int pid;
	snprintf(yaml, sizeof yaml,
		 "database:\n  dsn: \"%s\"\n"
		 "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\n"
		 "owners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n    team: t2\n"
		 "  - match: account\n    value: acct3\n    team: t3\n  - match: user\n    value: '*'\n    team: rest\n"
		 "budgets:\n  - owner: t1\n    amount: \"6000\"\n  - owner: t2\n    amount: \"100\"\n"
		 "  - owner: rest\n    amount: \"1000000\"\n"
		 "reports:\n  aggregate: %s\n",
		 dsn, agg);
	if (gl_config_load_buf(&cfg, "bench.yaml", yaml, strlen(yaml), &err) || gl_store_open(&cfg, &st, &err))
		die("config/store:", err.msg);
	pid = PQbackendPID(gl_db_conn(st));
	/* the first build warms the backend's caches, as the daemon's second
	 * refresh onwards finds them */
	for (int i = -1; i < refreshes; i++) {
		struct gl_strbuf o = GL_STRBUF_INIT;
		double w0 = gl_test_now_s(), s0 = cpu_self(), b0 = cpu_of(pid), w;
		if (gl_ledgermetrics_build(st, &cfg, now_s, &o, &err))
			die("build:", err.msg);
		w = gl_test_now_s() - w0;
		if (i >= 0) {
			wall += w;
			wmax = w > wmax ? w : wmax;
			self += cpu_self() - s0;
			back += cpu_of(pid) - b0;
			bytes = o.len;
		}
		gl_strbuf_fini(&o);
	}
	wall /= refreshes;
	self /= refreshes;
	back /= refreshes;
	printf("| /metrics ledger refresh (gl_ledgermetrics_build), aggregate=%s, %ld jobs, 10,000 GPUs, the month so far,"
	       " mean of %d (%zu bytes of metrics) | CPU a refresh %.0f ms (daemon %.0f, PostgreSQL backend %.0f): %.2f %% of a"
	       " core at one refresh a %d s; wall %.0f ms (max %.0f) | 10 %% of a core (the daemon's budget, issue 27);"
	       " wall: the %d s interval | %.3f; %.3f |\n",
	       agg, jobs, refreshes, bytes, (self + back) * 1000, self * 1000, back * 1000,
	       100 * (self + back) / GL_LEDGERMETRICS_INTERVAL_S, GL_LEDGERMETRICS_INTERVAL_S, wall * 1000, wmax * 1000,
	       GL_LEDGERMETRICS_INTERVAL_S, (self + back) / GL_LEDGERMETRICS_INTERVAL_S / 0.10,
	       wmax / GL_LEDGERMETRICS_INTERVAL_S);
	fflush(stdout);
	gl_store_close(st);
	gl_config_fini(&cfg);
}

int main(int argc, char **argv)
{
	long jobs = argc > 1 ? atol(argv[1]) : 1000000;
	int refreshes = argc > 2 ? atoi(argv[2]) : 5;
	char dsn[512];
	int64_t now_s;
	double t0;
	PGconn *c;
	struct gl_test_out o;
	if (refreshes < 1)
		refreshes = 1;
	if (gl_timeutil_parse("2026-10-31T23:00:00Z", 20, &now_s))
		die("time", NULL);
	if (gl_test_db_fresh("gl_bench_ledgermetrics", dsn, sizeof dsn))
		die("db", NULL);
	c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK)
		die("connect", PQerrorMessage(c));
	t0 = gl_test_now_s();
	gl_test_synth_jobs(c, dsn, jobs, "2026-10-01", "31 days");
	if (gl_test_exec_dsn(dsn, "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions,"
				  " source, valid_from) SELECT cl.cluster_id, 'n' || k, m, 8, m, ARRAY[m], 'scontrol',"
				  " '2026-09-01T00:00:00Z' FROM clusters cl, generate_series(0, 1249) k,"
				  " LATERAL (SELECT CASE WHEN k % 3 = 0 THEN 'h100' ELSE 'a100' END AS m) x"
				  " WHERE cl.name = 'synth'") != 1250)
		die("node spans", NULL);
	fprintf(stderr, "  generated %ld jobs and 1,250 nodes in %.1f s\n", jobs, gl_test_now_s() - t0);
	t0 = gl_test_now_s();
	/* the days from 2026-10-01 on, as the daemon's rollup keeps them */
	if (gl_test_run(dsn, NULL, &o, "rollup", "--days", "62", NULL) || o.status != 0)
		die("rollup", o.err);
	gl_test_out_fini(&o);
	fprintf(stderr, "  rollup of the month in %.1f s\n", gl_test_now_s() - t0);
	measure(dsn, "team", jobs, refreshes, now_s);
	measure(dsn, "account", jobs, refreshes, now_s);
	PQfinish(c);
	return 0;
}
