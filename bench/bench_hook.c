/* One idle-hook run (dry-run, the candidates of GET /v1/idle/candidates and
 * `hook idle --format json`) on a synthetic fleet: 10,000 GPUs shared by
 * 20,000 running jobs (two half-GPU jobs per GPU) and 50,000 finished ones,
 * with a month of rollups (hourly buckets for the month, 5-minute buckets
 * for the last 6 hours; 2 % of the GPUs idle for the last 3 hours, 1 % with
 * an exporter that went silent). Beside it: the equivalent hand-written SQL
 * over the same tables (trailing idle time per job from the last busy
 * bucket). Target: one run < 2 s. Needs the environment of bench/run.sh.
 *
 * Usage: bench_hook [DAYS [reuse]] (default 30; reuse: time the runs on the
 * database an earlier run generated, whose "now" was its last sample). */
#include "gl/config.h"
#include "gl/db.h"
#include "gl/hook.h"
#include "store/db_int.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void exec(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
		fprintf(stderr, "bench_hook: %s\n%s\n", PQerrorMessage(c), sql);
		exit(1);
	}
	PQclear(r);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int days = argc > 1 ? atoi(argv[1]) : 30;
	char dsn[512], sql[8192];
	PGconn *c;
	struct gl_config cfg;
	struct gl_err err = {0};
	time_t now = time(NULL);
	long long nb = (long long)(now - now % 300), rs = nb - 71 * 300, he = rs - rs % 3600,
		  hs = he - (long long)days * 86400;
	double t0, gen_s, runs[5], sqlt[5];
	long long rows_u, rows_j, ncand = 0, nnodata = 0;
	const char *yaml = "log:\n  level: warn\n"
			   "hook:\n  max_data_age_s: 900\n  policies:\n"
			   "    - name: synth-idle\n      scope: {clusters: synth}\n"
			   "      rule: {kind: sliding, t1_min: 60, t3_min: 120}\n";

	int reuse = argc > 2 && !strcmp(argv[2], "reuse");
	if (days < 1)
		gl_test_die("DAYS must be positive");
	if (reuse) {
		snprintf(dsn, sizeof dsn, "%s dbname=gl_bench_hook", gl_test_app_dsn_base());
	} else if (gl_test_db_fresh("gl_bench_hook", dsn, sizeof dsn))
		gl_test_die("db");
	c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK)
		gl_test_die("connect");
	exec(c, "SET client_min_messages = warning");
	if (reuse) {
		PGresult *r = PQexec(c, "SELECT extract(epoch FROM max(last_sample_at))::bigint FROM gpu_usage");
		now = (time_t)atoll(PQgetvalue(r, 0, 0));
		PQclear(r);
		gen_s = 0;
		goto timed;
	}
	t0 = gl_test_now_s();
	exec(c, "INSERT INTO clusters (name, kind) VALUES ('synth', 'slurm')");
	/* running jobs 1..20000: job j on GPU (j+1)/2, started 0..48 h ago */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (job_pk, cluster_id, job_key, job_id, user_name, account, partition, state, submit_at,"
		 " start_at, end_at, gpu_micro, gpu_type) OVERRIDING SYSTEM VALUE"
		 " SELECT j, 1, 'raw:' || j, j::text, 'u' || (j %% 2000), 'acct' || (j %% 200), 'gpu', 'RUNNING',"
		 " to_timestamp(%lld - (j * 7919) %% 172800 - 60), to_timestamp(%lld - (j * 7919) %% 172800), NULL, 500000, 'a100'"
		 " FROM generate_series(1, 20000) j",
		 (long long)now, (long long)now);
	exec(c, sql);
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (job_pk, cluster_id, job_key, job_id, user_name, account, partition, state, submit_at,"
		 " start_at, end_at, gpu_micro, gpu_type) OVERRIDING SYSTEM VALUE"
		 " SELECT j, 1, 'raw:' || j, j::text, 'u' || (j %% 2000), 'acct' || (j %% 200), 'gpu', 'COMPLETED',"
		 " to_timestamp(%lld + (j %% %d) * 86400 / 2), to_timestamp(%lld + (j %% %d) * 86400 / 2 + 60),"
		 " to_timestamp(%lld + (j %% %d) * 86400 / 2 + 43200), 1000000, 'a100'"
		 " FROM generate_series(20001, 70000) j",
		 hs, 2 * days, hs, 2 * days, hs, 2 * days);
	exec(c, sql);
	snprintf(sql, sizeof sql, "SELECT gl_ensure_dcgm_partitions(to_timestamp(%lld), to_timestamp(%lld))", hs,
		 (long long)now + 86400);
	exec(c, sql);
	/* the month, hourly: busy two hours in three */
	snprintf(sql, sizeof sql,
		 "INSERT INTO gpu_usage (gpu_id, bucket, cluster_id, bucket_s, samples, busy_samples, nodata_samples, active_sum,"
		 " fb_used_max_mib, job_pk, attribution, covered_s, busy_s, idle_s, engine_samples, power_max_w, last_sample_at)"
		 " SELECT g, to_timestamp(b), 1, 3600, 120, CASE WHEN (g + h) %% 3 = 0 THEN 0 ELSE 120 END, 0,"
		 "  CASE WHEN (g + h) %% 3 = 0 THEN 0.01 ELSE 90 END, 30000, NULL, 'hpc_job', 3600,"
		 "  CASE WHEN (g + h) %% 3 = 0 THEN 0 ELSE 3600 END, CASE WHEN (g + h) %% 3 = 0 THEN 3600 ELSE 0 END, 120, 300,"
		 "  to_timestamp(b + 3570)"
		 " FROM generate_series(1, 10000) g, generate_series(0, %d) h, LATERAL (SELECT %lld + h * 3600 AS b) x",
		 days * 24 - 1, hs);
	exec(c, sql);
	/* its job shares: the GPU's running jobs once started (job j started
	 * now - (j * 7919 mod 172800)), else a finished one */
	snprintf(sql, sizeof sql,
		 "INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples, busy_samples,"
		 " nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s)"
		 " SELECT g, to_timestamp(y.b), x.j, 1, 'hpc_job', 120, y.busy, 0, x.share * 3600,"
		 "  CASE WHEN y.busy > 0 THEN x.share * 3600 ELSE 0 END, CASE WHEN y.busy > 0 THEN 0 ELSE x.share * 3600 END"
		 " FROM generate_series(1, 10000) g, generate_series(0, %d) h,"
		 " LATERAL (SELECT %lld + h * 3600 AS b, CASE WHEN (g + h) %% 3 = 0 THEN 0 ELSE 120 END AS busy) y,"
		 " LATERAL (SELECT v.j::bigint AS j, 0.5 AS share FROM (VALUES (2 * g - 1), (2 * g)) v(j)"
		 "  WHERE %lld - (v.j::bigint * 7919) %% 172800 <= y.b"
		 "  UNION ALL SELECT 20001 + (g * 31 + y.b / 43200) %% 50000, 1.0"
		 "  WHERE %lld - ((2 * g - 1)::bigint * 7919) %% 172800 > y.b AND %lld - ((2 * g)::bigint * 7919) %% 172800 > y.b) x",
		 days * 24 - 1, hs, (long long)now, (long long)now, (long long)now);
	exec(c, sql);
	/* the last 6 hours at 5 minutes: GPUs g %% 50 = 0 idle for the last 3 h,
	 * GPUs g %% 97 = 0 silent for the last 2 h */
	snprintf(sql, sizeof sql,
		 "INSERT INTO gpu_usage (gpu_id, bucket, cluster_id, bucket_s, samples, busy_samples, nodata_samples, active_sum,"
		 " fb_used_max_mib, job_pk, attribution, covered_s, busy_s, idle_s, engine_samples, power_max_w, last_sample_at)"
		 " SELECT g, to_timestamp(b), 1, 300, 10, busy, 0, CASE WHEN busy > 0 THEN 8 ELSE 0.0004 END, 30000, NULL,"
		 "  'hpc_job', 300, CASE WHEN busy > 0 THEN 300 ELSE 0 END, CASE WHEN busy > 0 THEN 0 ELSE 300 END, 10,"
		 "  CASE WHEN busy > 0 THEN 310 ELSE 60 END, to_timestamp(least(b + 290, %lld))"
		 " FROM generate_series(1, 10000) g, generate_series(0, 71) k,"
		 " LATERAL (SELECT %lld + k * 300 AS b) x,"
		 " LATERAL (SELECT CASE WHEN g %% 50 = 0 AND %lld - b <= 10800 THEN 0 ELSE 10 END AS busy) y"
		 " WHERE NOT (g %% 97 = 0 AND %lld - b < 7200)",
		 (long long)now, rs, nb, nb);
	exec(c, sql);
	snprintf(sql, sizeof sql,
		 "INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples, busy_samples,"
		 " nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s)"
		 " SELECT u.gpu_id, u.bucket, v.j, 1, 'hpc_job', u.samples, u.busy_samples, 0, 150, u.busy_s / 2, u.idle_s / 2"
		 " FROM gpu_usage u, LATERAL (VALUES (2 * u.gpu_id - 1), (2 * u.gpu_id)) v(j)"
		 " WHERE u.bucket_s = 300 AND u.bucket >= to_timestamp(%lld)"
		 "  AND %lld - (v.j * 7919) %% 172800 < extract(epoch FROM u.bucket) + 300",
		 rs, (long long)now);
	exec(c, sql);
	/* only an owner analyzes a table (as the application role it is skipped with a warning) */
	if (gl_test_exec_owner(dsn, "ANALYZE jobs, gpu_usage, gpu_usage_jobs") < 0)
		gl_test_die("ANALYZE as the owner role failed");
	gen_s = gl_test_now_s() - t0;
timed:
	{
		PGresult *r = PQexec(c, "SELECT (SELECT count(*) FROM gpu_usage), (SELECT count(*) FROM gpu_usage_jobs)");
		rows_u = atoll(PQgetvalue(r, 0, 0));
		rows_j = atoll(PQgetvalue(r, 0, 1));
		PQclear(r);
	}
	fprintf(stderr, "bench_hook: %d days, %lld gpu_usage rows, %lld gpu_usage_jobs rows, generated in %.0f s\n", days,
		rows_u, rows_j, gen_s);

	if (gl_config_load_buf(&cfg, "bench_hook.yaml", yaml, strlen(yaml), &err))
		gl_test_die(err.msg);
	for (int i = 0; i < 5; i++) {
		struct gl_hook_opts o = {NULL, 0, 0, NULL};
		cJSON *rep = NULL;
		int code;
		double a = gl_test_now_s();
		if (gl_hook_run(gl_db_store(c), &cfg, &o, (int64_t)now, &rep, &code, &err))
			gl_test_die(err.msg);
		runs[i] = gl_test_now_s() - a;
		ncand = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rep, "candidates"));
		nnodata = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rep, "no_data"));
		cJSON_Delete(rep);
	}
	/* the hand-written equivalent: per running job and GPU, the idle time
	 * since its last busy bucket in the look-back, fresh data only */
	snprintf(sql, sizeof sql,
		 "WITH j AS (SELECT job_pk, start_at FROM jobs WHERE end_at IS NULL AND start_at IS NOT NULL AND gpu_milli > 0),"
		 " b AS (SELECT u.job_pk, u.gpu_id, max(u.bucket + make_interval(secs => g.bucket_s))"
		 "  FILTER (WHERE u.busy_samples > 0 OR g.active_sum / nullif(g.engine_samples, 0) >= 0.01) AS last_busy,"
		 "  max(g.last_sample_at) AS last_sample, min(j.start_at) AS start_at"
		 "  FROM j JOIN gpu_usage_jobs u ON u.job_pk = j.job_pk AND u.bucket > to_timestamp(%lld) - interval '150 minutes'"
		 "  AND u.bucket < to_timestamp(%lld) JOIN gpu_usage g ON g.gpu_id = u.gpu_id AND g.bucket = u.bucket"
		 "  AND g.bucket > to_timestamp(%lld) - interval '150 minutes' AND g.bucket < to_timestamp(%lld) GROUP BY 1, 2)"
		 " SELECT job_pk, min(to_timestamp(%lld) - greatest(coalesce(last_busy, start_at), start_at)) AS idle"
		 " FROM b GROUP BY job_pk HAVING bool_and(last_sample > to_timestamp(%lld) - interval '900 seconds')"
		 " AND min(to_timestamp(%lld) - greatest(coalesce(last_busy, start_at), start_at)) >= interval '60 minutes'",
		 (long long)now, (long long)now, (long long)now, (long long)now, (long long)now, (long long)now, (long long)now);
	/* both sides without JIT, as the hook runs */
	exec(c, "SET jit = off");
	for (int i = 0; i < 5; i++) {
		double a = gl_test_now_s();
		PGresult *r = PQexec(c, sql);
		sqlt[i] = gl_test_now_s() - a;
		if (PQresultStatus(r) != PGRES_TUPLES_OK)
			gl_test_die(PQerrorMessage(c));
		if (i == 0)
			fprintf(stderr, "bench_hook: hand-written SQL finds %d jobs idle >= 60 min; the hook %lld candidates, %lld no data\n",
				PQntuples(r), ncand, nnodata);
		PQclear(r);
	}
	qsort(runs, 5, sizeof runs[0], cmp_d);
	qsort(sqlt, 5, sizeof sqlt[0], cmp_d);
	printf("| figure | ours | limit / peer | ratio |\n|---|---|---|---|\n");
	printf("| idle hook run (dry-run candidates), 10,000 GPUs, 20,000 running jobs, %d days of rollups (%.1f M GPU-buckets), median of 5 | %.0f ms (min %.0f, max %.0f) | 2,000 ms (target) | %.2f |\n",
	       days, (double)(rows_u) / 1e6, runs[2] * 1e3, runs[0] * 1e3, runs[4] * 1e3, runs[2] / 2.0);
	printf("| the same vs hand-written SQL (trailing idle per job from the last busy bucket, same look-back and partition bounds) | %.0f ms | %.0f ms | %.2f× |\n",
	       runs[2] * 1e3, sqlt[2] * 1e3, runs[2] / sqlt[2]);
	gl_config_fini(&cfg);
	PQfinish(c);
	return 0;
}
