/* The monthly showback report on the synthetic month of bench_chargeback
 * (10,000 GPUs = 1,250 nodes x 8, 1,000,000 jobs): wall time and peak RSS of
 * `gpuledger report showback` for CSV, HTML, PDF and ZIP, each a fresh process
 * (gather + render + write), beside the targets (< 5 s, < 5 s, < 10 s;
 * < 200 MB). Needs the environment of bench/run.sh. */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *m, PGconn *c)
{
	fprintf(stderr, "bench_report: %s %s\n", m, c ? PQerrorMessage(c) : "");
	exit(1);
}

static void exec_sql(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		die(sql, c);
	PQclear(r);
}

/* Runs the CLI once; wall seconds and the child's peak RSS (MiB). */
static int run_report(const char *dsn, const char *fmt, const char *out, double *secs, double *rss_mib)
{
	char env_dsn[600];
	pid_t pid;
	int st;
	struct rusage ru;
	double t0 = gl_test_now_s();
	snprintf(env_dsn, sizeof env_dsn, "GPULEDGER_DSN=%s", dsn);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *const argv[] = {(char *)gl_test_bin(), "report",     "showback", "--month", "2026-10",
				      "--format",               (char *)fmt, "--out",    (char *)out, NULL};
		char *const envp[] = {env_dsn, "PATH=/usr/bin:/bin", NULL};
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	if (wait4(pid, &st, 0, &ru) != pid)
		return -1;
	*secs = gl_test_now_s() - t0;
	*rss_mib = (double)ru.ru_maxrss / 1024.0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	long jobs = argc > 1 ? atol(argv[1]) : 1000000;
	static const char *const fmts[] = {"csv", "html", "pdf", "zip"};
	static const double target_s[] = {5, 5, 10, 5}; /* zip: the CSV tables, bundled (the CSV target) */
	char dsn[512], sql[4096], out[1024];
	struct gl_test_daemon d;
	double t0;
	PGconn *c;
	const char *cost = "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\n"
			   "owners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n    team: t2\n"
			   "  - match: account\n    value: acct3\n    team: t3\n  - match: user\n    value: '*'\n    team: rest\n";

	if (gl_test_db_fresh("gl_bench_report", dsn, sizeof dsn))
		die("db", NULL);
	c = PQconnectdb(dsn);
	t0 = gl_test_now_s();
	exec_sql(c, "INSERT INTO clusters (name, kind) VALUES ('synth', 'slurm')");
	/* bench_chargeback's month, with a failed job in 17 and a queue wait */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		 " end_at, elapsed_s, gpu_micro, gpu_type, nodes)"
		 " SELECT 1, 'db:' || g, g::text, 'u' || (g %% 2000), 'acct' || (g %% 200), CASE WHEN g %% 3 = 0 THEN 'h100' ELSE 'a100' END,"
		 " CASE WHEN g %% 17 = 0 THEN 'FAILED' ELSE 'COMPLETED' END, s - (g %% 3600) * interval '1 second', s, s + d,"
		 " extract(epoch FROM d)::bigint, (1 + g %% 8) * 1000000,"
		 " CASE WHEN g %% 3 = 0 THEN 'h100' ELSE 'a100' END, ARRAY['n' || (g %% 1250)]"
		 " FROM (SELECT g, timestamptz '2026-10-01' + (g::double precision / %ld) * interval '31 days' AS s,"
		 "  make_interval(secs => 300 + (g::bigint * 7919) %% 172800) AS d FROM generate_series(1, %ld) g) x",
		 jobs, jobs);
	exec_sql(c, sql);
	/* the fleet: 1,250 nodes x 8 GPUs for the month (capacity, unallocated idle) */
	exec_sql(c, "INSERT INTO node_gpu_spans (cluster_id, node, partition, gpu_model, gpus, valid_from, valid_to, source)"
		    " SELECT 1, 'n' || g, CASE WHEN g % 3 = 0 THEN 'h100' ELSE 'a100' END, CASE WHEN g % 3 = 0 THEN 'h100'"
		    " ELSE 'a100' END, 8, '2026-09-01', NULL, 'scontrol' FROM generate_series(0, 1249) g");
	/* only an owner analyzes a table (as the application role it is skipped with a warning) */
	if (gl_test_exec_owner(dsn, "ANALYZE") < 0)
		gl_test_die("ANALYZE as the owner role failed");
	fprintf(stderr, "  generated %ld jobs in %.1f s\n", jobs, gl_test_now_s() - t0);
	/* rates and owners as the daemon loads them, then the daily aggregates */
	if (gl_test_daemon_start(&d, dsn, cost, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	gl_test_daemon_stop(&d);
	{
		struct gl_test_out o;
		if (gl_test_run(dsn, NULL, &o, "rollup", NULL) || o.status != 0)
			die("rollup", NULL);
		gl_test_out_fini(&o);
	}
	snprintf(out, sizeof out, "%s/bench-report", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(out, 0755);
	/* each format twice in a fresh process: the first run after the bulk
	 * load and the rollup (cold caches: what a month-end after an import
	 * sees), then again */
	for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
		for (int run = 0; run < 2; run++) {
			const char *which = run ? "second run" : "first run after the load";
			double s, rss;
			if (run_report(dsn, fmts[i], out, &s, &rss)) {
				printf("| report showback %s, month of %ld jobs / 10,000 GPUs, %s | failed | %.0f s (target) | - "
				       "|\n",
				       fmts[i], jobs, which, target_s[i]);
				continue;
			}
			printf("| report showback %s, month of %ld jobs / 10,000 GPUs (wall, fresh process), %s | %.2f s | %.0f s "
			       "(target) | %.2fx |\n",
			       fmts[i], jobs, which, s, target_s[i], s / target_s[i]);
			printf("| report showback %s peak RSS, %s | %.0f MiB | 200 MB (target) | %.2fx |\n", fmts[i], which, rss,
			       rss * 1.048576 / 200.0);
			fflush(stdout);
		}
	}
	PQfinish(c);
	return 0;
}
