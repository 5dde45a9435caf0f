/* GET /v1/inference for a month by model at 1,000 endpoints: 1,000 pods
 * (one GPU each, 20 models, read by the real kube ingest) serving all of
 * October 2026, with a month of serving usage per day and endpoint
 * (SYNTHETIC: serving_daily rows written by SQL, 31 x 1,000, each with the
 * 16 end-to-end latency buckets of the real SGLang scrape, and their
 * serving_monthly sums, as the write path keeps them), the month's
 * daily aggregates built by the real `gpuledger rollup`; then 200
 * requests of the month by model (and by endpoint) to the real daemon:
 * p50 / p99 beside the 100 ms target. Needs the env of bench/run.sh.
 *
 * Usage: bench_inference [endpoints [requests]] (1000 200). */
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void pods(const char *path, int n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		gl_test_die("pods file");
	fputs("{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[", f);
	for (int i = 0; i < n; i++)
		fprintf(f,
			"%s{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"ep-%04d\",\"namespace\":\"llm\","
			"\"uid\":\"eeeeeeee-0000-4000-8000-%012d\",\"creationTimestamp\":\"2026-10-01T00:00:00Z\","
			"\"labels\":{\"team\":\"team-%d\"}},\"spec\":{\"nodeName\":\"node-%03d\",\"containers\":[{\"name\":"
			"\"server\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Succeeded\","
			"\"startTime\":\"2026-10-01T00:00:00Z\",\"containerStatuses\":[{\"name\":\"server\",\"state\":"
			"{\"terminated\":{\"exitCode\":0,\"startedAt\":\"2026-10-01T00:00:00Z\",\"finishedAt\":"
			"\"2026-11-01T00:00:00Z\"}}}]}}",
			i ? "," : "", i, i, i % 10, i / 8);
	fputs("]}\n", f);
	fclose(f);
}

/* Endpoints, series, their jobs and a month of daily usage, by SQL. */
static const char usage_sql[] =
	"WITH e AS (INSERT INTO serving_endpoints (name, cluster_id)"
	" SELECT 'ep-' || lpad(i::text, 4, '0'), (SELECT cluster_id FROM clusters WHERE name = 'k1')"
	" FROM generate_series(0, %d - 1) i RETURNING endpoint_id, name),"
	" s AS (INSERT INTO serving_series (endpoint_id, instance, model_name, family, lat_le, first_at, state_at)"
	" SELECT e.endpoint_id, 'pod:llm/' || e.name, 'model-' || (substr(e.name, 4)::int %% 20), 'sglang',"
	"  '{0.3,0.5,0.8,1,1.5,2,2.5,5,10,15,20,30,40,50,60,Infinity}', '2026-10-01', '2026-11-01' FROM e"
	" RETURNING series_id, endpoint_id, instance, model_name),"
	" j AS (INSERT INTO serving_jobs (job_pk, endpoint_id, model_name, cluster_id)"
	" SELECT jb.job_pk, s.endpoint_id, s.model_name, jb.cluster_id FROM s"
	" JOIN jobs jb ON jb.namespace = 'llm' AND 'pod:llm/' || jb.job_id = s.instance RETURNING job_pk, endpoint_id)"
	" INSERT INTO serving_daily (day, series_id, job_pk, cluster_id, endpoint_id, requests, failed, prompt_tokens,"
	"  generated_tokens, inferences, executions, lat_inc, scrapes)"
	" SELECT d::date, s.series_id, j.job_pk, 1, s.endpoint_id, 40000 + (s.series_id %% 97) * 100, s.series_id %% 7,"
	"  30000000 + s.series_id * 1000, 60000000 + s.series_id * 2000, 0, 0,"
	"  '{0,6,6,6,6,6,6,7,10,11,14,247,486,845,1513,2880}', 2880"
	" FROM s JOIN j ON j.endpoint_id = s.endpoint_id"
	" CROSS JOIN generate_series('2026-10-01'::date, '2026-10-31'::date, interval '1 day') d";

/* serving_monthly from serving_daily, as the write path keeps it (the
 * statement of sql/053's backfill) */
static const char monthly_sql[] =
	"INSERT INTO serving_monthly (month, series_id, job_pk, cluster_id, endpoint_id, requests, failed, prompt_tokens,"
	" generated_tokens, inferences, executions, lat_inc, scrapes)"
	" SELECT m.month, m.series_id, m.job_pk, m.cluster_id, m.endpoint_id, m.requests, m.failed, m.prompt_tokens,"
	"  m.generated_tokens, m.inferences, m.executions,"
	"  coalesce((SELECT array_agg(z.s ORDER BY z.o) FROM (SELECT t.o, sum(t.v)::bigint AS s"
	"   FROM serving_daily d2 CROSS JOIN LATERAL unnest(d2.lat_inc) WITH ORDINALITY AS t(v, o)"
	"   WHERE d2.series_id = m.series_id AND d2.job_pk = m.job_pk"
	"    AND date_trunc('month', d2.day)::date = m.month GROUP BY t.o) z), '{}'), m.scrapes"
	" FROM (SELECT date_trunc('month', d.day)::date AS month, d.series_id, d.job_pk, min(d.cluster_id) AS cluster_id,"
	"  min(d.endpoint_id) AS endpoint_id, sum(d.requests) AS requests, sum(d.failed) AS failed,"
	"  sum(d.prompt_tokens) AS prompt_tokens, sum(d.generated_tokens) AS generated_tokens,"
	"  sum(d.inferences) AS inferences, sum(d.executions) AS executions, sum(d.scrapes) AS scrapes"
	"  FROM serving_daily d GROUP BY 1, 2, 3) m";

static void timed(int port, const char *path, int n, const char *what, const char *label)
{
	double *t = calloc((size_t)n, sizeof *t);
	struct gl_test_http r;
	for (int i = 0; i < 5; i++) { /* warm-up: connections, plans */
		if (gl_test_http(port, "GET", path, NULL, 0, NULL, &r) || r.status != 200)
			gl_test_die(path);
		gl_test_http_fini(&r);
	}
	for (int i = 0; i < n; i++) {
		double a = gl_test_now_s();
		if (gl_test_http(port, "GET", path, NULL, 0, NULL, &r) || r.status != 200)
			gl_test_die(path);
		t[i] = gl_test_now_s() - a;
		gl_test_http_fini(&r);
	}
	qsort(t, (size_t)n, sizeof *t, cmp_d);
	printf("| `%.*s` %s, %s (%d requests) | p50 %.1f ms, p99 %.1f ms | 100 ms p99 | %.3f |\n", (int)strcspn(path, "?"), path, what,
	       label, n,
	       t[n / 2] * 1e3, t[(n * 99) / 100] * 1e3, t[(n * 99) / 100] * 1e3 / 100.0);
	free(t);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, reqs = argc > 2 ? atoi(argv[2]) : 200;
	char dsn[512], dir[256], podsf[300], sql[sizeof usage_sql + 64], label[64];
	struct gl_test_daemon d;
	struct gl_test_out o;
	PGconn *c;
	PGresult *r;
	double a;

	if (gl_test_db_fresh("gl_bench_inference", dsn, sizeof dsn))
		gl_test_die("database");
	c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK)
		gl_test_die("connect");
	snprintf(dir, sizeof dir, "%s/bench-inference", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(dir, 0755);
	snprintf(podsf, sizeof podsf, "%s/pods.json", dir);
	pods(podsf, n);
	if (gl_test_run(dsn, NULL, &o, "ingest", "kube", "--cluster", "k1", "--file", podsf, "--at", "2026-11-01T00:00:00Z",
			NULL) ||
	    o.status)
		gl_test_die("kube ingest");
	gl_test_out_fini(&o);
	snprintf(sql, sizeof sql, usage_sql, n);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		gl_test_die(PQresultErrorMessage(r));
	PQclear(r);
	r = PQexec(c, monthly_sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		gl_test_die(PQresultErrorMessage(r));
	PQclear(r);
	PQclear(PQexec(c, "ANALYZE jobs, serving_endpoints, serving_series, serving_jobs, serving_daily, serving_monthly"));
	fprintf(stderr, "  %lld serving_daily rows (synthetic), %lld serving jobs\n",
		gl_test_qint(c, "SELECT count(*) FROM serving_daily"), gl_test_qint(c, "SELECT count(*) FROM serving_jobs"));
	/* the daemon loads the rates (which makes every day stale), then the
	 * month is built as the daemon's rollup source keeps it; one client on
	 * purpose: no per-address limit */
	if (gl_test_daemon_start(&d, dsn, "log:\n  level: warn\nserver:\n  rate_limit_per_ip: 0\n"
					  "rates:\n  - model: \"*\"\n    per_gpu_hour: \"2.00\"\n",
				 (const char *[]){"--no-ingest", NULL}))
		gl_test_die("daemon");
	a = gl_test_now_s();
	if (gl_test_run(dsn, NULL, &o, "rollup", NULL) || o.status)
		gl_test_die("rollup");
	gl_test_out_fini(&o);
	fprintf(stderr, "  rollup of October (usage_daily and usage_daily_job): %.1f s, %lld usage_daily_job rows\n",
		gl_test_now_s() - a, gl_test_qint(c, "SELECT count(*) FROM usage_daily_job"));
	snprintf(label, sizeof label, "%d endpoints", n);
	timed(d.port, "/v1/inference?window=2026-10&aggregate=model_name", reqs, "month by model", label);
	timed(d.port, "/v1/inference?window=2026-10&aggregate=endpoint", reqs, "month by endpoint", label);
	timed(d.port, "/v1/inference?window=2026-10&aggregate=model_name&step=day", reqs, "month by model and day", label);
	timed(d.port, "/v1/inference?window=2026-10&aggregate=team", reqs, "month by team", label);
	/* the peer: the ledger's own answer for the same jobs and month */
	timed(d.port, "/v1/chargeback?window=2026-10&aggregate=team", reqs, "month by team (the same jobs)", label);
	gl_test_daemon_stop(&d);
	PQfinish(c);
	return 0;
}
