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
#include "gl/config.h"
#include "gl/dcgm_ingest.h"
#include "gl/store.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

/* statement_timeout_s: a cold year of 10 M jobs runs past the default 60 s,
 * and the figure wanted is how long it takes (run with GL_TEST_TIMEOUT_SCALE
 * for the test client's 30 s too) */
static const char COST[] = "server:\n  rate_limit_per_ip: 0\n  statement_timeout_s: 900\n"
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

/* $BENCH_LOCK names the machine's big-benchmark lock file: held (flock)
 * only while a phase loads or builds, released while requests are timed,
 * so other big loads on a shared machine wait the least. */
static void big_lock(int on)
{
	static int fd = -1;
	const char *path = getenv("BENCH_LOCK");
	if (!path || !*path)
		return;
	if (fd < 0 && (fd = open(path, O_RDWR | O_CREAT, 0644)) < 0)
		die("BENCH_LOCK: cannot open", NULL);
	if (on)
		fprintf(stderr, "  waiting for %s ...\n", path);
	if (flock(fd, on ? LOCK_EX : LOCK_UN))
		die("BENCH_LOCK: flock", NULL);
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
	if (gl_test_run(dsn, NULL, &o, "rollup", "--days", "400", "--no-runs", NULL) || o.status)
		die("rollup", NULL);
	gl_test_out_fini(&o);
	return gl_test_now_s() - t0;
}

/* The built months' runs (/v1/runs), after the days: the daemon's runs
 * task, apart from the days' rollup. */
static double runs_s(const char *dsn)
{
	struct gl_test_out o;
	double t0 = gl_test_now_s();
	if (gl_test_run(dsn, NULL, &o, "rollup", "--days", "400", NULL) || o.status)
		die("rollup (runs)", NULL);
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
		printf("| cold year chargeback (no rollup), %ld jobs | no answer within %d s | 10 s (target) | - |\n", n,
		       30 * gl_test_timeout_scale());
	else
		printf("| cold year chargeback (no rollup), %ld jobs, max of 3 | %.0f ms | 10 s (target) | %.2f |\n", n, c99,
		       c99 / 10000.0);
	if (!gl_test_http_timed(d.port, MONTH, 3, &c50, &c99, NULL))
		printf("| cold month chargeback (no rollup), %ld jobs, max of 3 | %.0f ms | - | - |\n", n, c99);
	fflush(stdout);
	roll = rollup_s(dsn);
	printf("| full rollup of the year (365 days), %ld jobs | %.1f s (%.0f ms a day) | 300 s at 10 M jobs (target) | - |\n",
	       n, roll, roll * 1000 / 365);
	fflush(stdout);
	roll = runs_s(dsn);
	printf("| the year's months of runs built after the days (the daemon's runs task), %ld jobs | %.1f s | - | - |\n", n,
	       roll);
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
static void gpu_day_live(const char *dsn, long gpus, int buckets)
{
	struct gl_test_daemon d;
	double p50, p99;
	if (gl_test_daemon_start(&d, dsn, COST, (const char *[]){"--no-ingest", NULL}))
		die("daemon", NULL);
	if (!gl_test_http_timed(d.port, GDAY, 10, &p50, &p99, NULL))
		printf("| the day's chargeback by team read live (unbuilt, as today is), %ld GPUs, %d buckets of the 288"
		       " (p50 / p99 of 10) | %.0f / %.0f ms | 100 ms p99 (the month target) | %.2f |\n",
		       gpus, buckets, p50, p99, p99 / 100);
	fflush(stdout);
	gl_test_daemon_stop(&d);
}

/* The rounds after the first ones ingested, as they would have written
 * them: every row of a bucket k >= 1 is that of bucket k - 2 (the same busy
 * half, the same coverage and energy) 10 minutes later, inserted a bucket
 * at a time in the real rounds' order. Checked against a whole day
 * ingested round by round: the same rows (checksum) and bytes. */
static const char REST_OF_DAY[] =
	"DO $$ DECLARE t text; cols text; sel text; k integer; s integer; BEGIN"
	" FOR k IN %d..%d LOOP"
	"  s := %d + (k - %d) %% 2;"
	"  FOREACH t IN ARRAY ARRAY['gpu_usage_jobs', 'gpu_usage'] LOOP"
	"   SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position),"
	"    string_agg(CASE WHEN column_name IN ('bucket', 'last_sample_at') THEN quote_ident(column_name) || ' + $1'"
	"     ELSE quote_ident(column_name) END, ', ' ORDER BY ordinal_position)"
	"    INTO cols, sel FROM information_schema.columns WHERE table_schema = 'public' AND table_name = t;"
	"   EXECUTE format('INSERT INTO %%I (%%s) SELECT %%s FROM %%I WHERE bucket = $2 ORDER BY gpu_id', t, cols, sel, t)"
	"    USING (k - s) * interval '300 s', timestamptz '2026-06-01Z' + s * interval '300 s';"
	"  END LOOP;"
	" END LOOP; END $$";

/* The day's exporter samples through the real ingest (gl_dcgm_ingest: the
 * inventory, the jobs' lookup and attribution, the dcgm store's COPY and
 * upserts, the ingest_runs row), one round a bucket: every GPU sampled
 * every 5 minutes (a site scraping every 30 s writes the same rows, each
 * updated ten times a bucket). A GPU is busy one bucket in two, each labelled
 * with its job (hpc_job), eight a node. Returns the seconds the rounds took. */
static double gpu_day_ingest(const char *dsn, long gpus, int rounds)
{
	char yaml[1024], **node = gl_xcalloc((size_t)gpus, sizeof *node), **uuid = gl_xcalloc((size_t)gpus, sizeof *uuid),
			     **job = gl_xcalloc((size_t)gpus, sizeof *job);
	struct gl_config cfg;
	struct gl_store *st = NULL;
	struct gl_err err = {0};
	struct gl_dcgm_ingest_opts o;
	double t0, slow = 0;
	const int64_t day0 = 1780272000; /* 2026-06-01 00:00 UTC */
	PGconn *m = PQconnectdb(dsn);
	snprintf(yaml, sizeof yaml, "database:\n  dsn: \"%s\"\n", dsn);
	if (PQstatus(m) != CONNECTION_OK)
		die("monitor:", m);
	if (gl_config_load_buf(&cfg, "bench.yaml", yaml, strlen(yaml), &err) || gl_store_open(&cfg, &st, &err) ||
	    gl_dcgm_ingest_opts_init(&o, &cfg, "fleet", &err))
		die("store:", NULL);
	o.max_gap_s = 600; /* two intervals of a 5-minute scrape, as a dcgm source of interval_s 300 gets */
	for (long g = 0; g < gpus; g++) {
		char b[64];
		snprintf(b, sizeof b, "n%ld", (g + 1) / 8);
		node[g] = gl_xstrdup(b);
		snprintf(b, sizeof b, "GPU-%08ld-0000-0000-0000-000000000000", g + 1);
		uuid[g] = gl_xstrdup(b);
		snprintf(b, sizeof b, "%ld", g + 1);
		job[g] = gl_xstrdup(b);
	}
	t0 = gl_test_now_s();
	for (int64_t k = 0; k < rounds; k++) {
		struct gl_dcgm_ingest_batch *b = gl_dcgm_ingest_batch_new(10);
		/* the transaction id before the round: the gpus rows it wrote
		 * are those whose xmin is past it (a fresh database: no wrap) */
		long long x0 = gl_test_qint(m, "SELECT txid_current()");
		double r0 = gl_test_now_s();
		for (long g = 0; g < gpus; g++) {
			struct gl_dcgm_reading r = {{0}, 0};
			const char *jobs[1] = {job[g]};
			struct gl_dcgm_ingest_batch_gpu bg = {node[g], uuid[g], "", "NVIDIA A100-SXM4-80GB", "550.54.15", "dcgm",
							      -1, 0, (int)(g % 8), &r, jobs, 1};
			r.v[GL_DCGM_ENGINE_ACTIVE] = (g + k) % 2 ? 0.9 : 0.0;
			r.v[GL_DCGM_GPU_UTIL] = (g + k) % 2 ? 95 : 0;
			r.v[GL_DCGM_FB_USED_MIB] = 40960;
			r.v[GL_DCGM_POWER_W] = 250;
			r.v[GL_DCGM_ENERGY_MJ] = 1e9 + (double)k * 250 * 300 * 1000;
			r.have = 1u << GL_DCGM_ENGINE_ACTIVE | 1u << GL_DCGM_GPU_UTIL | 1u << GL_DCGM_FB_USED_MIB |
				 1u << GL_DCGM_POWER_W | 1u << GL_DCGM_ENERGY_MJ;
			gl_dcgm_ingest_batch_add_gpu(b, &bg);
		}
		if (gl_dcgm_ingest(st, &o, b, day0 + k * 300, NULL, &err))
			die("ingest:", NULL);
		gl_dcgm_ingest_batch_free(b);
		if (gl_test_now_s() - r0 > slow)
			slow = gl_test_now_s() - r0;
		if (k < 12) {
			char q[160];
			snprintf(q, sizeof q, "SELECT count(*) FROM gpus WHERE xmin::text::bigint > %lld", x0);
			fprintf(stderr, "  %ld GPUs: round %lld %.2f s, %lld gpus rows written\n", gpus, (long long)k + 1,
				gl_test_now_s() - r0, gl_test_qint(m, q));
		}
		if (k % 48 == 47 || k == rounds - 1)
			fprintf(stderr, "  %ld GPUs: %lld rounds ingested in %.1f s (slowest %.1f s)\n", gpus, (long long)k + 1,
				gl_test_now_s() - t0, slow);
	}
	for (long g = 0; g < gpus; g++) {
		free(node[g]);
		free(uuid[g]);
		free(job[g]);
	}
	free(node);
	free(uuid);
	free(job);
	PQfinish(m);
	gl_store_close(st);
	gl_config_fini(&cfg);
	return gl_test_now_s() - t0;
}

/* Where a GPU-day's bytes are: each table's heap and each index of the
 * day's two partitions, bytes a GPU-day. */
static void day_bytes(PGconn *c, long gpus, int buckets)
{
	char n[32];
	const char *p[1] = {n};
	PGresult *r;
	snprintf(n, sizeof n, "%.6f", (double)gpus * buckets / 288);
	r = PQexecParams(c,
			 "SELECT string_agg(format('%s %s', k.relname, round(pg_relation_size(k.oid) / $1::numeric)), ', '"
			 " ORDER BY k.relkind DESC, k.relname)"
			 " FROM pg_class k WHERE k.oid IN (SELECT x FROM unnest(ARRAY['gpu_usage_20260601'::regclass,"
			 " 'gpu_usage_jobs_20260601'::regclass]) x UNION ALL SELECT indexrelid FROM pg_index"
			 " WHERE indrelid IN ('gpu_usage_20260601'::regclass, 'gpu_usage_jobs_20260601'::regclass))",
			 1, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		printf("| that day's bytes a GPU-day by relation, %ld GPUs (heap, then indexes) | %s | - | - |\n", gpus,
		       PQgetvalue(r, 0, 0));
	PQclear(r);
}

/* One day of exporter rollups for gpus GPUs, each GPU-bucket attributed to
 * the job running on it (a job a GPU, the whole day). */
static void gpu_day(long gpus, int rounds, int buckets)
{
	char dsn[512], sql[2048], own[512];
	double t;
	long long bytes, rows, jrows;
	PGconn *c;
	if (gl_test_db_fresh("gl_bench_growth_gpus", dsn, sizeof dsn) || PQstatus(c = PQconnectdb(dsn)) != CONNECTION_OK)
		die("db", NULL);
	PQclear(PQexec(c, "SET TIME ZONE 'UTC'"));
	PQclear(PQexec(c, "INSERT INTO clusters (name, kind) VALUES ('fleet', 'slurm')"));
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, state, submit_at, start_at, end_at,"
		 " elapsed_s, gpu_micro, gpu_type, nodes)"
		 " SELECT 1, 'db:' || g, g::text, 'u' || (g %% 2000), 'acct' || (g %% 200), 'COMPLETED',"
		 " '2026-05-31 23:50Z', '2026-06-01Z', '2026-06-02Z', 86400, 1000000, 'a100', ARRAY['n' || (g / 8)]"
		 " FROM generate_series(1, %ld) g",
		 gpus);
	if (gl_test_exec_dsn(dsn, sql) < 0)
		die("jobs", NULL);
	if (gl_test_owner_dsn(dsn, own, sizeof own) || gl_test_exec_dsn(own, "VACUUM ANALYZE jobs") < 0)
		die("analyze jobs", NULL);
	big_lock(1);
	t = gpu_day_ingest(dsn, gpus, rounds);
	if (rounds < buckets) {
		double t0 = gl_test_now_s();
		snprintf(sql, sizeof sql, REST_OF_DAY, rounds, buckets - 1, rounds - 2, rounds - 2);
		if (gl_test_exec_dsn(dsn, sql) < 0)
			die("the rest of the day", NULL);
		fprintf(stderr, "  %ld GPUs: buckets %d..%d written as the rounds write them in %.1f s\n", gpus, rounds,
			buckets - 1, gl_test_now_s() - t0);
	}
	/* as the tables' owner: the service role may not vacuum them */
	if (gl_test_exec_dsn(own, "VACUUM ANALYZE gpu_usage, gpu_usage_jobs") < 0)
		die("vacuum", NULL);
	big_lock(0);
	rows = gl_test_qint(c, "SELECT count(*) FROM gpu_usage");
	jrows = gl_test_qint(c, "SELECT count(*) FROM gpu_usage_jobs");
	bytes = gl_test_qint(c, "SELECT pg_total_relation_size('gpu_usage_20260601') + pg_total_relation_size('gpu_usage_jobs_20260601')");
	printf("| exporter rollups of one day, %ld GPUs at 5-minute buckets (gpu_usage + gpu_usage_jobs, indexes) | %lld + %lld rows,"
	       " %.0f bytes a GPU-day (%.0f MB in %d buckets of the 288; %d rounds through the ingest, %.1f s a round) | - | - |\n",
	       gpus, rows, jrows, (double)bytes / (double)gpus * 288 / buckets, (double)bytes / 1e6, buckets, rounds, t / rounds);
	day_bytes(c, gpus, buckets);
	printf("| that day's rows, %ld GPUs: checksum of gpu_usage, gpu_usage_jobs (every column) | %lld, %lld | - | - |\n", gpus,
	       gl_test_qint(c, "SELECT sum(hashtext(t::text)::bigint) FROM gpu_usage_20260601 t"),
	       gl_test_qint(c, "SELECT sum(hashtext(t::text)::bigint) FROM gpu_usage_jobs_20260601 t"));
	/* a day of fewer buckets than 288 is scaled to the whole day */
	printf("| the same for a year of 100,000 GPUs (extrapolated: x %.0f x %.0f x 365) | %.2f G rows a table, %.1f TB |"
	       " - | - |\n",
	       100000.0 / (double)gpus, 288.0 / buckets, (double)rows * 100000.0 / (double)gpus * 288 / buckets * 365 / 1e9,
	       (double)bytes * 100000.0 / (double)gpus * 288 / buckets * 365 / 1e12);
	gpu_day_live(dsn, gpus, buckets);
	big_lock(1);
	t = rollup_s(dsn);
	big_lock(0);
	printf("| rollup of that day into usage_daily (jobs + exporter busy/idle), %ld GPUs, %d buckets of the 288 | %.1f s |"
	       " - | - |\n",
	       gpus, buckets, t);
	fflush(stdout);
	gpu_year(c, dsn, gpus);
	PQfinish(c);
}

int main(int argc, char **argv)
{
	const char *g = getenv("BENCH_GROWTH_GPUS"), *j = getenv("BENCH_GROWTH_JOBS");
	int r, b;
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
	b = getenv("BENCH_GROWTH_BUCKETS") ? atoi(getenv("BENCH_GROWTH_BUCKETS")) : 288;
	b = b >= 3 && b <= 288 ? b : 288;
	r = getenv("BENCH_GROWTH_ROUNDS") ? atoi(getenv("BENCH_GROWTH_ROUNDS")) : b;
	gpu_day(g ? atol(g) : 10000, r >= 3 && r <= b ? r : b, b);
	return 0;
}
