/* Hourly accounting over long windows, through the real daemon over HTTP:
 * 100,000 jobs (1..8 GPUs, 5 min .. 2 days) over the 91 days before now on
 * 1,250 nodes x 8 GPUs with a node inventory. Each request is cold (a
 * window of its own, so the forecast cache cannot answer it):
 *   - /v1/capacity/forecast (91 days of hours: the peak demand of each day)
 *   - /v1/forecast?step=hour (28 days of hours per team)
 *   - /v1/chargeback?step=hour over 7 and 31 days, and per user over 7
 *   - /v1/capacity?step=hour over 31 days
 * beside the limit a dashboard sets (10 s) and the plainest SQL for the
 * hourly GPU-seconds alone (a row per job and hour, no owners, no prices,
 * no idle). Needs the environment of bench/run.sh.
 * Usage: bench_hourly [jobs]; BENCH_HOURLY_ROLLUP=1: the past days built by
 * the rollup before the requests (else the daemon builds them meanwhile). */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void exec(const char *dsn, const char *sql)
{
	if (gl_test_exec_dsn(dsn, sql) < 0)
		gl_test_die("a set-up statement failed");
}

static void iso(time_t t, char *out, size_t n)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* GET path: seconds, or -1 when it did not answer 200 */
static double timed_get(int port, const char *path)
{
	struct gl_test_http r;
	double t0 = gl_test_now_s(), took;
	int ok = gl_test_http(port, "GET", path, NULL, 0, NULL, &r) == 0 && r.status == 200;
	took = gl_test_now_s() - t0;
	if (!ok)
		fprintf(stderr, "bench_hourly: GET %s: %ld %.200s\n", path, r.status, r.body ? r.body : "");
	gl_test_http_fini(&r);
	return ok ? took : -1;
}

/* The daemon's peak resident memory so far (VmHWM, MiB), 0 if unknown. */
static double peak_mib(pid_t pid)
{
	char path[64], line[128];
	double kib = 0;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %lf kB", &kib) == 1)
			break;
	fclose(f);
	return kib / 1024;
}

/* One request on a fresh daemon: its status, time and the daemon's peak
 * memory, beside the 200 MB bound (docs/security.md, "Heavy requests"). */
static void rss_row(const char *dsn, const char *cost, const char *what, const char *path)
{
	struct gl_test_daemon d;
	struct gl_test_http r;
	double t0, took, mib;
	if (gl_test_daemon_start(&d, dsn, cost, (const char *[]){"--no-ingest", NULL}))
		gl_test_die("the daemon did not start");
	t0 = gl_test_now_s();
	if (gl_test_http(d.port, "GET", path, NULL, 0, NULL, &r))
		r.status = 0;
	took = gl_test_now_s() - t0;
	mib = peak_mib(d.pid);
	printf("| %s: HTTP %ld, %.1f MB in %.2f s; daemon peak RSS | %.0f MiB | 200 MB | %.2f |\n", what, r.status,
	       (double)r.len / 1e6, took, mib, mib * 1.048576 / 200);
	fflush(stdout);
	gl_test_http_fini(&r);
	gl_test_daemon_stop(&d);
}

static void row(const char *what, double s)
{
	if (s < 0)
		printf("| %s | no answer | 10 s (dashboard) | - |\n", what);
	else
		printf("| %s | %.2f s | 10 s (dashboard) | %.2f |\n", what, s, s / 10.0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long jobs = argc > 1 ? atol(argv[1]) : 100000;
	char dsn[512], sql[4096], path[512], a[32], b[32];
	struct gl_test_daemon d;
	time_t now = time(NULL), day0 = now - now % 86400;
	double t0;
	const char *cost = "server:\n  rate_limit_per_ip: 0\n"
			   "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\n"
			   "owners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n    team: t2\n"
			   "  - match: account\n    value: acct3\n    team: t3\n  - match: user\n    value: '*'\n    team: rest\n";

	if (gl_test_db_fresh("gl_bench_hourly", dsn, sizeof dsn))
		gl_test_die("no database");
	t0 = gl_test_now_s();
	exec(dsn, "INSERT INTO clusters (name, kind) VALUES ('synth', 'slurm')");
	/* whole seconds, as every ingest path stores them */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		 " end_at, elapsed_s, gpu_micro, gpu_type, nodes)"
		 " SELECT 1, 'db:' || g, g::text, 'u' || (g %% 2000), 'acct' || (g %% 200),"
		 " CASE WHEN g %% 3 = 0 THEN 'h100' ELSE 'a100' END, 'COMPLETED', s - interval '10 minutes', s,"
		 " least(s + d, to_timestamp(%lld)), extract(epoch FROM d)::bigint, (1 + g %% 8) * 1000000,"
		 " CASE WHEN g %% 3 = 0 THEN 'h100' ELSE 'a100' END, ARRAY['n' || (g %% 1250)]"
		 " FROM (SELECT g, to_timestamp(%lld + (g::bigint * %lld) / %ld) AS s,"
		 "  make_interval(secs => 300 + (g::bigint * 7919) %% 172800) AS d FROM generate_series(1, %ld) g) x",
		 (long long)now - 60, (long long)day0 - 91 * 86400, (long long)(89 * 86400), jobs, jobs);
	exec(dsn, sql);
	snprintf(sql, sizeof sql,
		 "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions, source, valid_from)"
		 " SELECT 1, 'n' || g, m, 8, m, ARRAY[m], 'scontrol', to_timestamp(%lld)"
		 " FROM (SELECT g, CASE WHEN g %% 3 = 0 THEN 'h100' ELSE 'a100' END AS m FROM generate_series(0, 1249) g) x",
		 (long long)day0 - 120 * 86400);
	exec(dsn, sql);
	/* only an owner analyzes a table (as the application role it is skipped with a warning) */
	if (gl_test_exec_owner(dsn, "ANALYZE jobs, node_gpu_spans") < 0)
		gl_test_die("ANALYZE as the owner role failed");
	fprintf(stderr, "  generated %ld jobs and 1,250 nodes in %.1f s\n", jobs, gl_test_now_s() - t0);
	/* BENCH_HOURLY_ROLLUP=1: the past days built first (the cost model
	 * loaded by the daemon before, or its load would make them stale
	 * again), as a fleet's rollup keeps them; else the daemon's rollup
	 * builds them while the requests run */
	if (getenv("BENCH_HOURLY_ROLLUP") && atoi(getenv("BENCH_HOURLY_ROLLUP"))) {
		struct gl_test_out o;
		if (gl_test_daemon_start(&d, dsn, cost, (const char *[]){"--no-ingest", NULL}))
			gl_test_die("the daemon did not start");
		gl_test_daemon_stop(&d);
		t0 = gl_test_now_s();
		if (gl_test_run(dsn, NULL, &o, "rollup", "--days", "100", NULL) || o.status != 0)
			gl_test_die("rollup failed");
		gl_test_out_fini(&o);
		fprintf(stderr, "  rollup of the past days in %.1f s\n", gl_test_now_s() - t0);
	}
	if (gl_test_daemon_start(&d, dsn, cost, (const char *[]){"--no-ingest", NULL}))
		gl_test_die("the daemon did not start");

	/* the limit: the hourly GPU-seconds of the same 91 days in the plainest
	 * SQL (a row per job and hour it overlaps, summed), no owners, prices
	 * or idle */
	iso(day0 - 91 * 86400, a, sizeof a);
	iso(day0, b, sizeof b);
	snprintf(sql, sizeof sql,
		 "SELECT h, sum(j.gpu_micro::numeric * extract(epoch FROM least(j.end_at, h + interval '1 hour', '%s')"
		 " - greatest(j.start_at, h, '%s'))) FROM jobs j,"
		 " generate_series(date_trunc('hour', greatest(j.start_at, '%s')), least(j.end_at, '%s') - interval '1 second',"
		 " interval '1 hour') h WHERE j.start_at < '%s' AND j.end_at > '%s' GROUP BY h",
		 b, a, a, b, b, a);
	t0 = gl_test_now_s();
	exec(dsn, sql);
	printf("| plain SQL: hourly GPU-seconds of 91 days, %ld jobs (a row per job-hour; no owners, prices or idle) | %.2f s | - | - |\n",
	       jobs, gl_test_now_s() - t0);

	snprintf(path, sizeof path, "/v1/capacity/forecast?window=%s,%s", a, b);
	row("/v1/capacity/forecast, 91 days of hours (cold)", timed_get(d.port, path));
	{
		double c = timed_get(d.port, path);
		printf("| /v1/capacity/forecast, the same again (cached) | %.1f ms | 100 ms (target) | %.2f |\n", 1000 * c,
		       10 * c);
	}
	/* a year ahead in weeks (the 13 weeks there are), and a what-if */
	snprintf(path, sizeof path, "/v1/capacity/forecast?step=week&horizon=53&window=%s,%s", a, b);
	row("/v1/capacity/forecast?step=week&horizon=53, 13 weeks of hours (cold)", timed_get(d.port, path));
	iso(day0 - 28 * 86400, a, sizeof a);
	snprintf(path, sizeof path, "/v1/forecast?step=hour&aggregate=team&window=%s,%s", a, b);
	row("/v1/forecast?step=hour&aggregate=team, 28 days (cold)", timed_get(d.port, path));
	iso(day0 - 7 * 86400, a, sizeof a);
	snprintf(path, sizeof path, "/v1/chargeback?step=hour&aggregate=team&window=%s,%s", a, b);
	row("/v1/chargeback?step=hour&aggregate=team, 7 days", timed_get(d.port, path));
	iso(day0 - 31 * 86400, a, sizeof a);
	snprintf(path, sizeof path, "/v1/chargeback?step=hour&aggregate=team&window=%s,%s", a, b);
	row("/v1/chargeback?step=hour&aggregate=team, 31 days", timed_get(d.port, path));
	snprintf(path, sizeof path, "/v1/capacity?step=hour&aggregate=gpu_model&window=%s,%s", a, b);
	row("/v1/capacity?step=hour&aggregate=gpu_model, 31 days", timed_get(d.port, path));
	gl_test_daemon_stop(&d);
	/* a line per user and hour (2,000 users): 5 days are ~240,000 lines,
	 * within server.max_answer_lines (250,000); 7 and 31 days are past it
	 * (the 31 days were 252 MB of JSON, 375 MB of daemon, before the bound) */
	iso(day0 - 5 * 86400, a, sizeof a);
	snprintf(path, sizeof path, "/v1/chargeback?step=hour&aggregate=user&window=%s,%s", a, b);
	rss_row(dsn, cost, "/v1/chargeback?step=hour&aggregate=user, 5 days (2,000 users)", path);
	iso(day0 - 31 * 86400, a, sizeof a);
	snprintf(path, sizeof path, "/v1/chargeback?step=hour&aggregate=user&window=%s,%s", a, b);
	rss_row(dsn, cost, "/v1/chargeback?step=hour&aggregate=user, 31 days (2,000 users)", path);
	return 0;
}
