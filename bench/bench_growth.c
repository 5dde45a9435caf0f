/* Growth in one database (issue 31, item 4): for each job count given
 * (default 100,000 and 1,000,000), a year of synthetic jobs (the jobs of
 * bench_chargeback spread over 365 days): bytes per job, a cold month and
 * year chargeback (before any rollup), the full rollup of the year and its
 * time per day, then month and year p50/p99 from the rollup, through the
 * real daemon over HTTP. Then the exporter rollups of one day of
 * BENCH_GROWTH_GPUS GPUs (default 10,000) at 5-minute buckets, each bucket
 * attributed to a job: rows and bytes per GPU-day, the day's chargeback
 * read live before its rollup (as today always is), and the rollup of that
 * day; then that day's rollup output (usage_daily, usage_daily_owner and
 * the built marker, what a built window reads) copied over the 364 days
 * before it, for month and year chargeback p50/p99 over a year of that
 * fleet once rolled up (the detail of those days is not made: it is what
 * cannot fit, docs/scale.md). Needs the environment of bench/run.sh.
 * Usage: bench_growth [JOBS ...]   (or $BENCH_GROWTH_JOBS, one count;
 * 0: the GPU day only) */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char COST[] = "server:\n  rate_limit_per_ip: 0\n"
			   "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: h100\n    per_gpu_hour: \"4.00\"\n"
			   "owners:\n  - match: account\n    value: acct1\n    team: t1\n  - match: account\n    value: acct2\n"
			   "    team: t2\n  - match: user\n    value: '*'\n    team: rest\n";
#define MONTH "/v1/chargeback?window=2026-06&aggregate=team"
#define YEAR "/v1/chargeback?window=2025-11-01,2026-11-01&aggregate=team"

static void die(const char *m, PGconn *c)
{
	fprintf(stderr, "bench_growth: %s %s\n", m, c ? PQerrorMessage(c) : "");
	exit(1);
}

/* The rollup prices and attributes with the cost model in the database:
 * COST, loaded first, is the one the daemon later serves with. Built
 * under another (none), every built day would be stale once the daemon
 * loads COST (a changed cost model unbuilds the days it touches), and the
 * month and year would be read live from the jobs, not from the rollup. */
static double rollup_s(const char *dsn)
{
	struct gl_test_out o;
	char cfg[512];
	double t0;
	FILE *f;
	snprintf(cfg, sizeof cfg, "%s/bench_growth_cost.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	if (!(f = fopen(cfg, "w")) || fputs(COST, f) < 0 || fclose(f))
		die("cost model file", NULL);
	if (gl_test_run(dsn, NULL, &o, "rates", "load", cfg, NULL) || o.status)
		die("rates load", NULL);
	gl_test_out_fini(&o);
	unlink(cfg);
	t0 = gl_test_now_s();
	if (gl_test_run(dsn, NULL, &o, "rollup", "--days", "400", NULL) || o.status)
		die("rollup", NULL);
	gl_test_out_fini(&o);
	return gl_test_now_s() - t0;
}

static void jobs_year(long n)
{
	char dsn[512], name[64];
	struct gl_test_daemon d;
	double t0, p50, p99, c50, c99, roll;
	long long bytes;
	PGconn *c;

	snprintf(name, sizeof name, "gl_bench_growth_%ld", n);
	if (gl_test_db_fresh(name, dsn, sizeof dsn) || PQstatus(c = PQconnectdb(dsn)) != CONNECTION_OK)
		die("db", NULL);
	t0 = gl_test_now_s();
	gl_test_synth_jobs(c, dsn, n, "2025-11-01", "365 days");
	fprintf(stderr, "  %ld jobs generated in %.1f s\n", n, gl_test_now_s() - t0);
	PQclear(PQexec(c, "VACUUM ANALYZE jobs"));
	bytes = gl_test_qint(c, "SELECT pg_total_relation_size('jobs')");
	printf("| jobs table with its indexes, %ld jobs over a year | %.0f bytes a job (%.1f MB) | - | - |\n", n,
	       (double)bytes / (double)n, (double)bytes / 1e6);
	if (gl_test_daemon_start(&d, dsn, COST, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	if (gl_test_http_timed(d.port, YEAR, 3, &c50, &c99, NULL))
		printf("| cold year chargeback (no rollup), %ld jobs | no answer within 30 s | 10 s (target) | - |\n", n);
	else
		printf("| cold year chargeback (no rollup), %ld jobs, max of 3 | %.0f ms | 10 s (target) | %.2f |\n", n, c99,
		       c99 / 10000.0);
	if (!gl_test_http_timed(d.port, MONTH, 3, &c50, &c99, NULL))
		printf("| cold month chargeback (no rollup), %ld jobs, max of 3 | %.0f ms | - | - |\n", n, c99);
	fflush(stdout);
	roll = rollup_s(dsn);
	printf("| full rollup of the year (365 days), %ld jobs | %.1f s (%.0f ms a day) | 300 s at 10 M jobs (target) | - |\n",
	       n, roll, roll * 1000 / 365);
	if (!gl_test_http_timed(d.port, MONTH, 100, &p50, &p99, NULL))
		printf("| month chargeback after the rollup, %ld jobs (p50 / p99 of 100) | %.0f / %.0f ms | 100 ms p99 (target) | %.2f |\n",
		       n, p50, p99, p99 / 100);
	if (!gl_test_http_timed(d.port, YEAR, 30, &p50, &p99, NULL))
		printf("| year chargeback after the rollup, %ld jobs (p50 / p99 of 30) | %.0f / %.0f ms | 1 s p99 (target) | %.2f |\n",
		       n, p50, p99, p99 / 1000);
	bytes = gl_test_qint(c, "SELECT pg_total_relation_size('usage_daily') + pg_total_relation_size('usage_daily_owner')");
	printf("| usage_daily + usage_daily_owner for the year, %ld jobs | %.1f MB (%lld rows) | - | - |\n", n,
	       (double)bytes / 1e6, gl_test_qint(c, "SELECT count(*) FROM usage_daily"));
	fflush(stdout);
	gl_test_daemon_stop(&d);
	PQfinish(c);
}

/* The rolled-up day 2026-06-01 copied to the 364 days before it (every
 * column as built but the day), each day marked built: a year of that
 * fleet as month and year chargeback read it once rolled up. */
static const char COPY_YEAR[] =
	"DO $$ DECLARE t text; cols text; sel text; BEGIN"
	" FOREACH t IN ARRAY ARRAY['usage_daily', 'usage_daily_owner'] LOOP"
	"  SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position),"
	"   string_agg(CASE WHEN column_name = 'day' THEN 'u.day - g' ELSE 'u.' || quote_ident(column_name) END, ', '"
	"    ORDER BY ordinal_position) INTO cols, sel"
	"   FROM information_schema.columns WHERE table_schema = 'public' AND table_name = t;"
	"  EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM %I u, generate_series(1, 364) g"
	" WHERE u.day = ''2026-06-01''', t, cols, sel, t);"
	" END LOOP;"
	" INSERT INTO usage_daily_built (day) SELECT date '2026-06-01' - g FROM generate_series(1, 364) g;"
	" END $$";
#define GMONTH "/v1/chargeback?window=2026-05&aggregate=team"
#define GYEAR "/v1/chargeback?window=2025-06-02,2026-06-02&aggregate=team"
#define GDAY "/v1/chargeback?window=2026-06-01&aggregate=team"

/* The year timed must be the one the rollup answers: every day of it
 * still built once the daemon has started, and its total all 365 days
 * (a job a GPU, the whole day), not the one day left in the jobs table. */
static void year_read_built(PGconn *c, const char *body, long gpus)
{
	cJSON *j = body ? cJSON_Parse(body) : NULL;
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "totals"), "allocated_gpu_seconds");
	long long built = gl_test_qint(c, "SELECT count(*) FROM usage_daily_built WHERE day BETWEEN '2025-06-02' AND '2026-06-01'");
	double want = (double)gpus * 86400.0 * 365.0;
	if (built != 365 || !cJSON_IsNumber(a) || a->valuedouble != want) {
		fprintf(stderr, "bench_growth: the year read %lld built days of 365 and %.0f GPU-seconds of %.0f\n", built,
			cJSON_IsNumber(a) ? a->valuedouble : -1.0, want);
		exit(1);
	}
	cJSON_Delete(j);
}

static void gpu_year(PGconn *c, const char *dsn, long gpus)
{
	struct gl_test_daemon d;
	double t0 = gl_test_now_s(), p50, p99;
	char own[512], *body = NULL;
	if (gl_test_exec_dsn(dsn, COPY_YEAR) < 0)
		die("copy the day", NULL);
	/* the tables' owner: the service role may not analyze them */
	if (gl_test_owner_dsn(dsn, own, sizeof own) ||
	    gl_test_exec_dsn(own, "ANALYZE usage_daily, usage_daily_owner, usage_daily_built") < 0)
		die("analyze", NULL);
	printf("| usage_daily + usage_daily_owner, a year of %ld GPUs (the day's rollup x 365, copied in %.1f s) | %lld + %lld rows,"
	       " %.1f MB | - | - |\n",
	       gpus, gl_test_now_s() - t0, gl_test_qint(c, "SELECT count(*) FROM usage_daily"),
	       gl_test_qint(c, "SELECT count(*) FROM usage_daily_owner"),
	       (double)gl_test_qint(c, "SELECT pg_total_relation_size('usage_daily') + pg_total_relation_size('usage_daily_owner')") /
		       1e6);
	if (gl_test_daemon_start(&d, dsn, COST, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	if (!gl_test_http_timed(d.port, GMONTH, 100, &p50, &p99, NULL))
		printf("| month chargeback by team, a year of %ld GPUs rolled up (p50 / p99 of 100) | %.0f / %.0f ms |"
		       " 100 ms p99 (target) | %.2f |\n",
		       gpus, p50, p99, p99 / 100);
	if (!gl_test_http_timed(d.port, GYEAR, 30, &p50, &p99, &body))
		printf("| year chargeback by team, a year of %ld GPUs rolled up (p50 / p99 of 30) | %.0f / %.0f ms |"
		       " 1 s p99 (target) | %.2f |\n",
		       gpus, p50, p99, p99 / 1000);
	fflush(stdout);
	gl_test_daemon_stop(&d);
	year_read_built(c, body, gpus);
	free(body);
}

/* The day before its rollup: how every window that includes today reads
 * (today is never built), from the jobs and the day's exporter rows. */
static void gpu_day_live(const char *dsn, long gpus)
{
	struct gl_test_daemon d;
	double p50, p99;
	if (gl_test_daemon_start(&d, dsn, COST, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	if (!gl_test_http_timed(d.port, GDAY, 10, &p50, &p99, NULL))
		printf("| the day's chargeback by team read live (unbuilt, as today is), %ld GPUs (p50 / p99 of 10) |"
		       " %.0f / %.0f ms | 100 ms p99 (the month target) | %.2f |\n",
		       gpus, p50, p99, p99 / 100);
	fflush(stdout);
	gl_test_daemon_stop(&d);
}

/* One day of exporter rollups for gpus GPUs, each GPU-bucket attributed to
 * the job running on it (a job a GPU, the whole day). */
static void gpu_day(long gpus)
{
	char dsn[512], sql[2048];
	double t0, t;
	long long bytes, rows;
	PGconn *c;
	if (gl_test_db_fresh("gl_bench_growth_gpus", dsn, sizeof dsn) || PQstatus(c = PQconnectdb(dsn)) != CONNECTION_OK)
		die("db", NULL);
	PQclear(PQexec(c, "SET TIME ZONE 'UTC'"));
	PQclear(PQexec(c, "INSERT INTO clusters (name, kind) VALUES ('fleet', 'slurm')"));
	PQclear(PQexec(c, "SELECT gl_ensure_dcgm_partitions('2026-06-01', '2026-06-02')"));
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, state, submit_at, start_at, end_at,"
		 " elapsed_s, gpu_micro, gpu_type, nodes)"
		 " SELECT 1, 'db:' || g, g::text, 'u' || (g %% 2000), 'acct' || (g %% 200), 'COMPLETED',"
		 " '2026-05-31 23:50Z', '2026-06-01Z', '2026-06-02Z', 86400, 1000000, 'a100', ARRAY['n' || (g / 8)]"
		 " FROM generate_series(1, %ld) g",
		 gpus);
	if (gl_test_exec_dsn(dsn, sql) < 0)
		die("jobs", NULL);
	t0 = gl_test_now_s();
	snprintf(sql, sizeof sql,
		 "INSERT INTO gpu_usage (gpu_id, bucket, cluster_id, bucket_s, samples, busy_samples, active_sum,"
		 " covered_s, busy_s, idle_s, engine_samples, job_pk, attribution)"
		 " SELECT g, b, 1, 300, 10, (g + extract(epoch FROM b)::bigint / 300) %% 2 * 10, 4.2, 300,"
		 " (g + extract(epoch FROM b)::bigint / 300) %% 2 * 300, 300 - (g + extract(epoch FROM b)::bigint / 300) %% 2 * 300,"
		 " 10, g, 'hpc_job'"
		 " FROM generate_series(1, %ld) g, generate_series(timestamptz '2026-06-01Z', '2026-06-01 23:55Z', '5 minutes') b",
		 gpus);
	if (gl_test_exec_dsn(dsn, sql) < 0)
		die("gpu_usage", NULL);
	if (gl_test_exec_dsn(dsn, "INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples,"
				  " busy_samples, nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s)"
				  " SELECT gpu_id, bucket, job_pk, 1, 'hpc_job', samples, busy_samples, 0, covered_s, busy_s, idle_s"
				  " FROM gpu_usage") < 0)
		die("gpu_usage_jobs", NULL);
	t = gl_test_now_s() - t0;
	PQclear(PQexec(c, "VACUUM ANALYZE gpu_usage, gpu_usage_jobs"));
	rows = gl_test_qint(c, "SELECT count(*) FROM gpu_usage");
	bytes = gl_test_qint(c, "SELECT pg_total_relation_size('gpu_usage_20260601') + pg_total_relation_size('gpu_usage_jobs_20260601')");
	printf("| exporter rollups of one day, %ld GPUs at 5-minute buckets (gpu_usage + gpu_usage_jobs, indexes) | %lld + %lld rows,"
	       " %.0f bytes a GPU-day (%.0f MB; inserted in %.1f s) | - | - |\n",
	       gpus, rows, rows, (double)bytes / (double)gpus, (double)bytes / 1e6, t);
	printf("| the same for a year of 100,000 GPUs (extrapolated: x %.0f x 365) | %.2f G rows a table, %.1f TB | - | - |\n",
	       100000.0 / (double)gpus, (double)rows * 100000.0 / (double)gpus * 365 / 1e9,
	       (double)bytes * 100000.0 / (double)gpus * 365 / 1e12);
	gpu_day_live(dsn, gpus);
	t = rollup_s(dsn);
	printf("| rollup of that day into usage_daily (jobs + exporter busy/idle), %ld GPUs | %.1f s | - | - |\n", gpus, t);
	fflush(stdout);
	gpu_year(c, dsn, gpus);
	PQfinish(c);
}

int main(int argc, char **argv)
{
	const char *g = getenv("BENCH_GROWTH_GPUS"), *j = getenv("BENCH_GROWTH_JOBS");
	if (j) {
		if (atol(j) > 0)
			jobs_year(atol(j));
	} else if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (atol(argv[i]) > 0)
				jobs_year(atol(argv[i]));
	} else {
		jobs_year(100000);
		jobs_year(1000000);
	}
	gpu_day(g ? atol(g) : 10000);
	return 0;
}
