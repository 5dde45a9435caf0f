/* Three local shards against one database on the same data (issue 31,
 * item 5): the synthetic year of bench_growth split over three clusters,
 * one a shard server (the real `db init/start`, `shard init`), read by a
 * central database over postgres_fdw; the same clusters in one database.
 * Month and year chargebacks after each side's rollup, and the live (cold)
 * month, through the real daemons over HTTP: the sharded p50/p99 beside the
 * single database's. The daemons are started again after the rollup: each
 * month, year and by-cluster row's first pass is then the first request of
 * every worker session after a start. All four PostgreSQL servers share this machine's two
 * cores. Needs the environment of bench/run.sh.
 * Usage: bench_shards [JOBS]   (or $BENCH_SHARDS_JOBS; 300,000)
 * BENCH_SHARDS_LOG=DIR: every statement of the central database (with its
 * duration) and of the shards logged, the logs copied into DIR at the end
 * (where a sharded request's time goes: docs/scale.md).
 * BENCH_SHARDS_HOLD=FILE: once both sides are rolled up, their connection
 * strings are written to FILE and the benchmark waits until FILE is
 * removed (to EXPLAIN a request's statements on the live servers). */
#include "lib/testlib.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NSHARD 3
static const char COST[] = "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\n"
			   "owners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n"
			   "    team: t2\n  - match: user\n    value: '*'\n    team: rest\n";

static void die(const char *m)
{
	fprintf(stderr, "bench_shards: %s\n", m);
	exit(1);
}

/* Every statement logged from now on, with its duration, on the server
 * of c (a throwaway of this benchmark's). */
static void log_all(PGconn *c)
{
	static const char *const sql[] = {"ALTER SYSTEM SET log_min_duration_statement = 0",
					  "ALTER SYSTEM SET log_line_prefix = '%m [%p] %d '",
					  "ALTER SYSTEM SET log_connections = on",
					  "ALTER SYSTEM SET log_disconnections = on",
					  "SELECT pg_reload_conf()"};
	if (!c)
		die("superuser");
	for (size_t i = 0; i < sizeof sql / sizeof *sql; i++) {
		PGresult *r = PQexec(c, sql[i]);
		if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
			die(PQerrorMessage(c));
		PQclear(r);
	}
	PQfinish(c);
}

/* The servers' connection strings into path, then a wait for its removal. */
static void hold(const char *path, const char *one, const char *central, char sdsn[][1024], int n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		die(path);
	fprintf(f, "one\t%s\ncentral\t%s\n", one, central);
	for (int k = 0; k < n; k++)
		fprintf(f, "shard%d\t%s\n", k + 1, sdsn[k]);
	if (fclose(f))
		die(path);
	fprintf(stderr, "  holding: remove %s to go on\n", path);
	while (access(path, F_OK) == 0)
		sleep(1);
}

/* Both daemons, ready (their workers' sessions opened: /healthz). */
static void start_daemons(struct gl_test_daemon *d1, const char *one, struct gl_test_daemon *dc, const char *central)
{
	if (gl_test_daemon_start(d1, one, "server:\n  rate_limit_per_ip: 0\n", (const char *[]){"--no-ingest", NULL}) ||
	    gl_test_daemon_start(dc, central, "server:\n  rate_limit_per_ip: 0\n", (const char *[]){"--no-ingest", NULL}))
		die("daemons");
}

static void copy_log(const char *from, const char *to)
{
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
	if (system(cmd))
		fprintf(stderr, "bench_shards: cannot copy %s\n", from);
}

int main(int argc, char **argv)
{
	const char *jobs = getenv("BENCH_SHARDS_JOBS");
	long n = argc > 1 ? atol(argv[1]) : jobs ? atol(jobs) : 300000;
	const char *tmp = getenv("GL_TEST_TMP"), *logdir = getenv("BENCH_SHARDS_LOG");
	char one[512], central[512], cfg[NSHARD][PATH_MAX], sdsn[NSHARD][1024], costs[PATH_MAX], dir[PATH_MAX], log[PATH_MAX],
		cluster[16];
	struct gl_test_daemon d1, dc;
	static const char *const paths[][2] = {
		{"chargeback month, cold (no rollup)", "/v1/chargeback?window=2026-06&aggregate=team"},
		{"chargeback month after the rollup", "/v1/chargeback?window=2026-06&aggregate=team"},
		{"chargeback year after the rollup", "/v1/chargeback?window=2025-11-01,2026-11-01&aggregate=team"},
		{"chargeback month by cluster after the rollup", "/v1/chargeback?window=2026-06&aggregate=cluster"},
		{"capacity, month by cluster", "/v1/capacity?window=2026-06&aggregate=cluster"},
	};
	PGconn *c;
	FILE *f;

	snprintf(costs, sizeof costs, "%s/shard-costs.yaml", tmp ? tmp : "/tmp");
	if (!(f = fopen(costs, "w")) || fputs(COST, f) < 0 || fclose(f))
		die(costs);
	if (gl_test_db_fresh("gl_bench_shards_one", one, sizeof one) || !(c = PQconnectdb(one)))
		die("single database");
	for (int k = 0; k < NSHARD; k++) {
		snprintf(cluster, sizeof cluster, "synth-%d", k + 1);
		gl_test_synth_jobs_part(c, one, n, "2025-11-01", "365 days", cluster, k, NSHARD);
	}
	PQfinish(c);
	if (gl_test_cli(one, "rates", "load", costs, NULL) || gl_test_db_fresh("gl_bench_shards_central", central, sizeof central) ||
	    gl_test_cli(central, "rates", "load", costs, NULL))
		die("set-up");
	for (int k = 0; k < NSHARD; k++) {
		char name[16];
		snprintf(dir, sizeof dir, "%s/bench-shard%d", tmp ? tmp : "/tmp", k + 1);
		snprintf(cluster, sizeof cluster, "synth-%d", k + 1);
		snprintf(name, sizeof name, "s%d", k + 1);
		if (gl_test_shard_server(dir, k + 1, cfg[k], sizeof cfg[k], sdsn[k], sizeof sdsn[k]) ||
		    !(c = PQconnectdb(sdsn[k])))
			die("shard server");
		gl_test_synth_jobs_part(c, sdsn[k], n, "2025-11-01", "365 days", cluster, k, NSHARD);
		PQfinish(c);
		if (gl_test_cli_cfg(cfg[k], "rates", "load", costs, NULL) || gl_test_shard_attach(central, k + 1, name, sdsn[k]))
			die("shard set-up");
	}
	fprintf(stderr, "  %ld jobs in one database and over %d shards\n", n, NSHARD);
	if (logdir) {
		log_all(gl_test_superuser_conn(central));
		for (int k = 0; k < NSHARD; k++)
			log_all(gl_test_shard_superuser(sdsn[k]));
	}
	start_daemons(&d1, one, &dc, central);
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		double a50, a99, b50, b99;
		int reqs = i == 0 ? 3 : 30;
		char *ba = NULL, *bb = NULL;
		if (i == 1) {
			double t0 = gl_test_now_s(), t1;
			if (gl_test_cli(one, "rollup", "--days", "400", "--no-runs", NULL))
				die("rollup");
			t1 = gl_test_now_s();
			for (int k = 0; k < NSHARD; k++)
				if (gl_test_cli_cfg(cfg[k], "rollup", "--days", "400", "--no-runs", NULL))
					die("shard rollup");
			printf("| full rollup of the year, %ld jobs: three shards one after the other vs one database |"
			       " %.1f s | %.1f s | %.2f |\n",
			       n, gl_test_now_s() - t1, t1 - t0, (gl_test_now_s() - t1) / (t1 - t0));
			if (getenv("BENCH_SHARDS_HOLD"))
				hold(getenv("BENCH_SHARDS_HOLD"), one, central, sdsn, NSHARD);
			/* the first pass below is the first request of every
			 * worker session after a daemon start, over history
			 * rolled up, as a site restarting its daemons has it */
			gl_test_daemon_stop(&dc);
			gl_test_daemon_stop(&d1);
			start_daemons(&d1, one, &dc, central);
		}
		/* then the same again: every worker's session has answered this
		 * kind of request (its connections to the shards made, its
		 * statements prepared), as in a daemon that has run a while */
		for (int pass = 0; pass < (i == 0 ? 1 : 2); pass++) {
			/* warm: 200 requests, so that a p99 is not the slowest of
			 * 30 (one request of ~10 ms) */
			if (pass)
				reqs = 200;
			if (gl_test_http_timed(d1.port, paths[i][1], reqs, &a50, &a99, &ba) ||
			    gl_test_http_timed(dc.port, paths[i][1], reqs, &b50, &b99, &bb))
				die(paths[i][1]);
			printf("| %s%s, %ld jobs: three shards vs one database (p50 / p99 of %d)%s |"
			       " %.0f / %.0f ms | %.0f / %.0f ms (target <= 1.5x) | %.2f / %.2f |\n",
			       paths[i][0], pass ? ", sessions warm" : "", n, reqs,
			       strcmp(ba, bb) ? " ANSWERS DIFFER" : ", same bytes", b50, b99, a50, a99, b50 / a50, b99 / a99);
			fflush(stdout);
			free(ba);
			free(bb);
			ba = bb = NULL;
		}
	}
	gl_test_daemon_stop(&dc);
	gl_test_daemon_stop(&d1);
	if (logdir) {
		/* the central database is on bench/run.sh's cluster */
		snprintf(dir, sizeof dir, "%s/config.yaml", tmp ? tmp : "/tmp");
		snprintf(costs, sizeof costs, "%s/central.log", logdir);
		if (!gl_test_server_log(dir, log, sizeof log))
			copy_log(log, costs);
	}
	for (int k = 0; k < NSHARD; k++) {
		if (logdir) {
			char to[PATH_MAX];
			snprintf(to, sizeof to, "%s/shard%d.log", logdir, k + 1);
			if (!gl_test_server_log(cfg[k], dir, sizeof dir))
				copy_log(dir, to);
		}
		gl_test_cli_cfg(cfg[k], "db", "stop", NULL);
	}
	return 0;
}
