/* Health, metrics, jobs and ingest-run endpoints. */
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/db.h"
#include "gl/health.h"
#include "gl/jsonw.h"
#include "gl/routes.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

/* the last column: replica_ok (include/gl/server.h), the read-only routes
 * a hot standby may answer (database.read_dsn) */
const struct gl_route gl_routes[] = {
	{"GET", "/healthz", gl_route_healthz, "healthz", "public", NULL, 0, GL_ROUTE_PROBE, 0},
	{"GET", "/metrics", gl_route_metrics, "metrics", "viewer", NULL, 0, GL_ROUTE_PROBE, 0},
	{"GET", "/v1/jobs", gl_route_jobs, "jobs", "finance", "cluster,state,job_id,window,limit,offset,cursor,format", 1, GL_ROUTE_WINDOWED, 1},
	{"GET", "/v1/ingest/runs", gl_route_ingest_runs, "ingest_runs", "viewer", "source,limit,format", 0, GL_ROUTE_LIGHT, 0},
	{"GET", "/v1/audit", gl_route_audit, "audit", "admin", "window,actor,action,outcome,limit,cursor,format", 0, GL_ROUTE_LIGHT, 0},
	{"GET", "/v1/audit/verify", gl_route_audit_verify, "audit_verify", "admin", "window", 0, GL_ROUTE_HEAVY, 0},
	{"GET", "/v1/tokens", gl_route_tokens, "tokens", "admin", NULL, 0, GL_ROUTE_LIGHT, 0},
	{"GET", "/v1/whoami", gl_route_whoami, "whoami", "viewer|hook", NULL, 1, GL_ROUTE_LIGHT, 0},
	{"GET", "/v1/chargeback", gl_route_chargeback, "chargeback", "finance", "window,step,aggregate,filter,shareIdle,format", 0, GL_ROUTE_WINDOWED, 1},
	{"GET", "/v1/reports/showback", gl_route_report_showback, "report_showback", "finance",
	 "month,aggregate,format,table,shareIdle", 0, GL_ROUTE_HEAVY, 1},
	{"GET", "/v1/reports", gl_route_reports, "reports", "finance", "month", 0, GL_ROUTE_LIGHT, 1},
	{"GET", "/v1/budgets", gl_route_budgets, "budgets", "finance", "month", 0, GL_ROUTE_LIGHT, 1},
	{"GET", "/v1/queue", gl_route_queue, "queue", "viewer", "window,aggregate,format", 0, GL_ROUTE_WINDOWED, 1},
	{"GET", "/v1/idle", gl_route_idle, "idle", "finance", "window,aggregate,limit,table,format", 0, GL_ROUTE_WINDOWED, 1},
	{"GET", "/v1/idle/candidates", gl_route_idle_candidates, "idle_candidates", "hook", "policy", 0, GL_ROUTE_LIGHT, 0},
	{"GET", "/v1/hook/actions", gl_route_hook_actions, "hook_actions", "hook", "window,limit", 0, GL_ROUTE_LIGHT, 0},
	{"POST", "/v1/hook/actions", gl_route_hook_record, "hook_record", "hook", NULL, 0, GL_ROUTE_LIGHT, 0},
	{"GET", "/v1/capacity", gl_route_capacity, "capacity", "viewer", "window,step,aggregate,format,cluster", 0, GL_ROUTE_WINDOWED, 1},
	{"GET", "/v1/inventory", gl_route_inventory, "inventory", "viewer", "cluster,format", 0, GL_ROUTE_LIGHT, 1},
	{"GET", "/v1/forecast", gl_route_forecast, "forecast", "viewer", "metric,aggregate,window,horizon,step,level,exclude", 0, GL_ROUTE_HEAVY, 1},
	{"GET", "/v1/capacity/forecast", gl_route_capacity_forecast, "capacity_forecast", "viewer",
	 "window,horizon,cluster,step,risk,plan", 0, GL_ROUTE_HEAVY, 1},
	{"GET", "/v1/capacity/plan", gl_route_capacity_plan, "capacity_plan", "viewer", NULL, 0, GL_ROUTE_LIGHT, 0},
	{"POST", "/v1/capacity/plan", gl_route_capacity_plan_post, "capacity_plan_post", "admin", NULL, 0, GL_ROUTE_LIGHT, 0},
	{NULL, NULL, NULL, NULL, NULL, NULL, 0, GL_ROUTE_LIGHT, 0},
};

/* A health probe must stay cheap at any rate (load balancers, kubelets,
 * monitoring): the database is asked at most once a second and every probe
 * in between gets that answer. */
static pthread_mutex_t g_health_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_health_at_ms;
static int g_health_ok, g_health_checked, g_health_code; /* code: the GL_E* of the failure */
static char g_health_msg[256];

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The answer for a check made at most a second ago; else 0 */
static int health_cached(int *ok, int *code, char *msg, size_t n)
{
	int64_t now = mono_ms();
	int fresh;
	pthread_mutex_lock(&g_health_mu);
	fresh = g_health_checked && now - g_health_at_ms < 1000;
	*ok = g_health_ok;
	*code = g_health_code;
	snprintf(msg, n, "%s", g_health_msg);
	pthread_mutex_unlock(&g_health_mu);
	return fresh;
}

static int health_answer(struct gl_req *req, struct gl_resp *resp, int ok, int code, const char *msg)
{
	resp->content_type = "application/json";
	if (!ok) {
		/* /healthz is public: libpq's words name the socket path, the
		 * host and the user. The body says what kind of failure it was
		 * and under which reference the log has the words, as every
		 * 5xx answer does. */
		unsigned long ref = gl_server_error_ref(req->srv, 503, req->now_s, req->method, req->path, msg);
		resp->status = 503;
		gl_strbuf_printf(&resp->body, "{\"status\":\"unavailable\",\"db\":\"%s\",\"ref\":%lu}\n",
				 code == GL_EDB ? "unavailable" : "error", ref);
		return 0;
	}
	gl_strbuf_puts(&resp->body, "{\"status\":\"ok\",\"db\":\"ok\"}\n");
	return 0;
}

int gl_route_healthz_cached(struct gl_req *req, struct gl_resp *resp)
{
	char msg[sizeof g_health_msg];
	int ok, code;
	if (!health_cached(&ok, &code, msg, sizeof msg))
		return 0;
	health_answer(req, resp, ok, code, msg);
	return 1;
}

int gl_route_healthz(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	char msg[sizeof g_health_msg];
	int ok, code;

	if (!health_cached(&ok, &code, msg, sizeof msg)) {
		PGconn *c;
		PGresult *r = NULL;
		ok = !gl_req_db(req, &c, &err) && !gl_db_query(c, "SELECT 1", 0, NULL, &r, &err);
		PQclear(r);
		snprintf(msg, sizeof msg, "%s", ok ? "" : err.msg);
		code = ok ? 0 : err.code;
		pthread_mutex_lock(&g_health_mu);
		g_health_at_ms = mono_ms();
		g_health_checked = 1;
		g_health_ok = ok;
		g_health_code = code;
		memcpy(g_health_msg, msg, sizeof msg);
		pthread_mutex_unlock(&g_health_mu);
	}
	return health_answer(req, resp, ok, code, msg);
}

int gl_route_metrics(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_strbuf *o = &resp->body;
	struct gl_err err = {0};
	PGconn *c;
	PGresult *r = NULL;

	gl_strbuf_printf(o,
			 "# HELP gpuledger_build_info Build information.\n# TYPE gpuledger_build_info gauge\n"
			 "gpuledger_build_info{version=\"%s\"} 1\n"
			 "# HELP gpuledger_uptime_seconds Seconds since the server started.\n"
			 "# TYPE gpuledger_uptime_seconds gauge\ngpuledger_uptime_seconds %lld\n",
			 GL_VERSION, (long long)(req->now_s - gl_server_started_s(req->srv)));
	gl_server_metrics(req->srv, o);
	gl_health_metrics(o);
	/* ingest health from the database: what users alert on */
	gl_strbuf_puts(o, "# HELP gpuledger_db_up Whether the database answered this scrape.\n"
			  "# TYPE gpuledger_db_up gauge\n");
	if (gl_req_db(req, &c, &err) ||
	    gl_db_query(c,
			"SELECT DISTINCT ON (r.source, c.name) r.source, c.name,"
			" extract(epoch FROM r.started_at)::bigint, r.status, r.lines_read, r.inserted + r.updated,"
			" r.skipped, (SELECT extract(epoch FROM s.watermark)::bigint FROM ingest_state s"
			"   WHERE s.source = r.source AND s.cluster_id = r.cluster_id)"
			" FROM ingest_runs r JOIN clusters c USING (cluster_id)"
			" ORDER BY r.source, c.name, r.run_id DESC",
			0, NULL, &r, &err)) {
		gl_strbuf_puts(o, "gpuledger_db_up 0\n");
	} else {
		gl_strbuf_puts(o, "gpuledger_db_up 1\n");
		gl_strbuf_puts(o, "# HELP gpuledger_ingest_last_run_timestamp_seconds Start of the last ingest run.\n"
				  "# TYPE gpuledger_ingest_last_run_timestamp_seconds gauge\n");
		for (int i = 0; i < PQntuples(r); i++)
			gl_apijson_prom_sample(o, "gpuledger_ingest_last_run_timestamp_seconds",
					       (const char *[]){"source", PQgetvalue(r, i, 0), "cluster", PQgetvalue(r, i, 1),
								"status", PQgetvalue(r, i, 3), NULL},
					       PQgetvalue(r, i, 2));
		gl_strbuf_puts(o, "# HELP gpuledger_ingest_last_run_rows Rows written (inserted+updated) by the last run.\n"
				  "# TYPE gpuledger_ingest_last_run_rows gauge\n");
		for (int i = 0; i < PQntuples(r); i++)
			gl_apijson_prom_sample(o, "gpuledger_ingest_last_run_rows",
					       (const char *[]){"source", PQgetvalue(r, i, 0), "cluster", PQgetvalue(r, i, 1), NULL},
					       PQgetvalue(r, i, 5));
		gl_strbuf_puts(o, "# HELP gpuledger_ingest_last_run_skipped Lines skipped by the last run.\n"
				  "# TYPE gpuledger_ingest_last_run_skipped gauge\n");
		for (int i = 0; i < PQntuples(r); i++)
			gl_apijson_prom_sample(o, "gpuledger_ingest_last_run_skipped",
					       (const char *[]){"source", PQgetvalue(r, i, 0), "cluster", PQgetvalue(r, i, 1), NULL},
					       PQgetvalue(r, i, 6));
		gl_strbuf_puts(o, "# HELP gpuledger_ingest_lag_seconds Now minus the source's watermark.\n"
				  "# TYPE gpuledger_ingest_lag_seconds gauge\n");
		for (int i = 0; i < PQntuples(r); i++)
			if (!PQgetisnull(r, i, 7)) {
				char lag[24];
				snprintf(lag, sizeof lag, "%lld", (long long)(req->now_s - atoll(PQgetvalue(r, i, 7))));
				gl_apijson_prom_sample(o, "gpuledger_ingest_lag_seconds",
						       (const char *[]){"source", PQgetvalue(r, i, 0), "cluster",
									PQgetvalue(r, i, 1), NULL},
						       lag);
			}
		gl_inventory_metrics(c, o); /* src/api/routes_capacity.c */
	}
	PQclear(r);
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	return 0;
}

static const char *const job_states[] = {
	"PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
	"PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
	"RESIZING", "REVOKED", "SPECIAL_EXIT", "UNKNOWN",
};

/* Jobs, newest first (keyset pagination on the row id). With a window: the
 * jobs that overlap it, each with its GPU-seconds and cost inside the window
 * (split at rate changes, rounded once per job) and its exporter-observed
 * busy/idle GPU-seconds (null when there is no exporter data). */
/* the sort key of "newest first" (the expression of sql/025's index) */
#define JOBS_NEWEST(t) "coalesce(" t ".submit_at, " t ".start_at, '-infinity'::timestamptz)"

static const char jobs_sql[] =
	"WITH w AS (SELECT to_timestamp($7::bigint) AS a, to_timestamp($8::bigint) AS b, to_timestamp($9::bigint) AS now),"
	" j AS ("
	" SELECT j.*, c.name AS cluster,"
	"  CASE WHEN $7::bigint IS NULL THEN NULL ELSE greatest(j.start_at, w.a) END AS s0,"
	"  CASE WHEN $7::bigint IS NULL THEN NULL ELSE least(coalesce(j.end_at, w.now), w.b) END AS e0"
	" FROM jobs j JOIN clusters c USING (cluster_id), w"
	" WHERE ($1::text IS NULL OR c.name = $1) AND ($2::text IS NULL OR j.state = $2)"
	"   AND ($3::text IS NULL OR j.job_id = $3)"
	"   AND ($6::text[] IS NULL OR j.account = ANY($6) OR j.namespace = ANY($6))"
	/* newest first: by submit time, then ingest order (sql/025's index);
	 * the cursor, the last row's job_pk, resumes after that row */
	"   AND ($10::bigint IS NULL OR (" JOBS_NEWEST("j") ", j.job_pk) <"
	"    (SELECT " JOBS_NEWEST("x") ", x.job_pk FROM jobs x WHERE x.job_pk = $10))"
	"   AND ($7::bigint IS NULL OR (j.start_at < w.b AND coalesce(j.end_at, w.now) > w.a))"
	" ORDER BY " JOBS_NEWEST("j") " DESC, j.job_pk DESC LIMIT $4 OFFSET $5"
	") SELECT j.cluster, j.job_key, j.job_id, j.name, j.user_name, j.account, j.partition, j.qos,"
	" j.namespace, j.state, extract(epoch FROM j.submit_at)::bigint,"
	" extract(epoch FROM j.start_at)::bigint, extract(epoch FROM j.end_at)::bigint,"
	" j.elapsed_s, j.gpu_milli, j.gpu_type, j.queue_wait_s, j.node_list, j.req_gpu_milli, j.job_pk,"
	" CASE WHEN j.s0 IS NULL THEN NULL ELSE round(j.gpu_milli * greatest(extract(epoch FROM j.e0 - j.s0), 0) / 1000) END,"
	" (SELECT round(sum(j.gpu_milli * extract(epoch FROM least(j.e0, r.valid_to) - greatest(j.s0, r.valid_from))"
	"   * r.micros_per_gpu_hour) / 3600000)"
	"  FROM rates r WHERE j.s0 IS NOT NULL AND r.valid_from < j.e0 AND r.valid_to > j.s0"
	"  AND r.gpu_model = CASE WHEN EXISTS (SELECT 1 FROM rates x WHERE x.gpu_model = " GL_JOB_MODEL_SQL("j") ")"
	"   THEN " GL_JOB_MODEL_SQL("j") " ELSE '*' END),"
	" u.busy_gpu_s * sc.k, u.idle_gpu_s * sc.k, u.observed_gpu_s * sc.k"
	" FROM j LEFT JOIN LATERAL (SELECT * FROM gl_job_usage((SELECT a FROM w), (SELECT b FROM w)) x"
	"  WHERE $7::bigint IS NOT NULL AND x.job_pk = j.job_pk) u ON true"
	" CROSS JOIN LATERAL (SELECT " GL_USAGE_SCALE_SQL("u", "j.gpu_milli * greatest(extract(epoch FROM j.e0 - j.s0), 0)"
									    " / 1000.0") " AS k) sc"
	" ORDER BY " JOBS_NEWEST("j") " DESC, j.job_pk DESC";

/* The answer as it is sent, a piece at a time from the rows (up to 10,000
 * jobs a page): the columns of the JSON objects, or of the CSV in the same
 * order with cost in currency units with the currency's minor decimals. */
struct jobs_out {
	PGresult *r;
	int n, i, more, windowed, minor, head;
	struct gl_jsonw w;
};

static void jobs_out_fini(void *state)
{
	struct jobs_out *o = state;
	PQclear(o->r);
	free(o);
}

static void jobs_csv_row(struct gl_strbuf *out, const PGresult *r, int i, int windowed, int minor)
{
	for (int k = 0; k <= 9; k++)
		gl_apijson_csv_col_str(out, r, i, k);
	for (int k = 10; k <= 12; k++)
		gl_apijson_csv_col_time(out, r, i, k);
	gl_apijson_csv_col_num(out, r, i, 13);
	gl_apijson_csv_milli(out, atoll(PQgetvalue(r, i, 14)));
	gl_apijson_csv_col_str(out, r, i, 15);
	gl_apijson_csv_col_num(out, r, i, 16);
	gl_apijson_csv_col_str(out, r, i, 17);
	gl_apijson_csv_milli(out, atoll(PQgetvalue(r, i, 18)));
	if (windowed) {
		gl_apijson_csv_col_num(out, r, i, 20);
		gl_apijson_csv_col_money(out, r, i, 21, minor);
		gl_apijson_csv_col_num(out, r, i, 22);
		gl_apijson_csv_col_num(out, r, i, 23);
	}
	gl_csv_end(out);
}

/* Pieces end at a row's end (a CSV field starts a record in an empty buffer). */
static int jobs_csv_next(void *state, struct gl_strbuf *out)
{
	static const char *const hdr[] = {"cluster", "key", "job_id", "name", "user", "account", "partition", "qos",
					  "namespace", "state", "submit", "start", "end", "elapsed_s", "gpus", "gpu_type",
					  "queue_wait_s", "node_list", "gpus_requested", NULL};
	static const char *const win_hdr[] = {"gpu_seconds", "cost", "busy_gpu_seconds",
					      "idle_in_allocation_gpu_seconds", NULL};
	struct jobs_out *o = state;
	if (!o->head) {
		for (size_t i = 0; hdr[i]; i++)
			gl_csv_field(out, hdr[i]);
		if (o->windowed)
			gl_apijson_csv_header(out, win_hdr);
		else
			gl_csv_end(out);
		o->head = 1;
	}
	while (out->len < GL_RESP_CHUNK && o->i < o->n)
		jobs_csv_row(out, o->r, o->i++, o->windowed, o->minor);
	return o->i < o->n;
}

static void jobs_json_row(struct gl_jsonw *w, const PGresult *r, int i, int windowed)
{
	static const char *const strs[] = {"cluster", "key", "job_id", "name", "user", "account", "partition", "qos",
					   "namespace", "state"};
	gl_jsonw_object(w, NULL);
	for (int k = 0; k < (int)GL_ARRAY_LEN(strs); k++)
		gl_apijson_w_col_str(w, strs[k], r, i, k);
	gl_apijson_w_col_time(w, "submit", r, i, 10);
	gl_apijson_w_col_time(w, "start", r, i, 11);
	gl_apijson_w_col_time(w, "end", r, i, 12);
	gl_apijson_w_col_num(w, "elapsed_s", r, i, 13);
	gl_jsonw_num(w, "gpus", (double)atoll(PQgetvalue(r, i, 14)) / 1000.0);
	gl_apijson_w_col_str(w, "gpu_type", r, i, 15);
	gl_apijson_w_col_num(w, "queue_wait_s", r, i, 16);
	gl_apijson_w_col_str(w, "node_list", r, i, 17);
	gl_jsonw_num(w, "gpus_requested", (double)atoll(PQgetvalue(r, i, 18)) / 1000.0);
	if (windowed) {
		gl_apijson_w_col_num(w, "gpu_seconds", r, i, 20);
		/* null cost: no rate covers the job's model in the window */
		gl_apijson_w_col_num(w, "cost_micros", r, i, 21);
		gl_apijson_w_col_num(w, "busy_gpu_seconds", r, i, 22);
		gl_apijson_w_col_num(w, "idle_in_allocation_gpu_seconds", r, i, 23);
	}
	gl_jsonw_end(w);
}

static int jobs_json_next(void *state, struct gl_strbuf *out)
{
	struct jobs_out *o = state;
	o->w.out = out;
	if (!o->head) {
		gl_jsonw_object(&o->w, NULL);
		gl_jsonw_array(&o->w, "jobs");
		o->head = 1;
	}
	while (out->len < GL_RESP_CHUNK && o->i < o->n)
		jobs_json_row(&o->w, o->r, o->i++, o->windowed);
	if (o->i < o->n)
		return 1;
	gl_jsonw_end(&o->w);
	gl_jsonw_i64(&o->w, "count", o->n);
	if (o->more)
		gl_jsonw_i64(&o->w, "next_cursor", atoll(PQgetvalue(o->r, o->n - 1, 19)));
	else
		gl_jsonw_null(&o->w, "next_cursor");
	gl_jsonw_end(&o->w);
	gl_strbuf_putc(out, '\n');
	return 0;
}

int gl_route_jobs(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	const char *cluster = gl_req_param(req, "cluster"), *state = gl_req_param(req, "state"),
		   *job_id = gl_req_param(req, "job_id"), *win = gl_req_param(req, "window");
	long long limit, offset, cursor;
	char lim[24], off[24], wa[24], wb[24], now[24], cur[24];
	struct gl_strbuf scope = GL_STRBUF_INIT;
	struct gl_window w = {0, 0};
	const char *owners;
	PGconn *c;
	PGresult *r = NULL;
	struct jobs_out *o;
	int rc, csv;

	if ((rc = gl_apijson_format(req, resp, &csv)) ||
	    (rc = gl_apijson_int_param(req, resp, "limit", 100, 1, 10000, &limit)) ||
	    (rc = gl_apijson_int_param(req, resp, "offset", 0, 0, 1LL << 40, &offset)) ||
	    (rc = gl_apijson_int_param(req, resp, "cursor", 0, 1, INT64_MAX, &cursor)))
		return rc;
	if (win && (rc = gl_apijson_window(req, resp, NULL, &w)))
		return rc;
	if (state) {
		size_t i;
		for (i = 0; i < GL_ARRAY_LEN(job_states); i++)
			if (!strcmp(state, job_states[i]))
				break;
		if (i == GL_ARRAY_LEN(job_states))
			return gl_resp_error(resp, GL_EINVAL, "state", "state: unknown job state '%s'", state);
	}
	/* one row past the page: a next_cursor only when there is a next row,
	 * or a client paging to an exactly full last page asks once more for
	 * nothing */
	snprintf(lim, sizeof lim, "%lld", limit + 1);
	snprintf(off, sizeof off, "%lld", offset);
	snprintf(wa, sizeof wa, "%lld", (long long)w.start_s);
	snprintf(wb, sizeof wb, "%lld", (long long)w.end_s);
	snprintf(now, sizeof now, "%lld", (long long)req->now_s);
	snprintf(cur, sizeof cur, "%lld", cursor);
	if ((rc = gl_req_db(req, &c, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	/* owner-scoped tokens see the jobs of their accounts / namespaces only */
	owners = gl_req_owner_filter(req, &scope);
	if ((rc = gl_db_query(c, jobs_sql, 10,
			      (const char *[]){cluster, state, job_id, lim, off, owners, win ? wa : NULL,
					       win ? wb : NULL, now, cursor ? cur : NULL},
			      &r, &err))) {
		gl_strbuf_fini(&scope);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	gl_strbuf_fini(&scope);
	o = gl_xcalloc(1, sizeof *o);
	o->r = r;
	o->more = PQntuples(r) > limit;
	o->n = o->more ? (int)limit : PQntuples(r);
	o->windowed = win != NULL;
	o->minor = gl_money_minor(req->cfg->currency);
	if (csv) {
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("jobs.csv"));
		/* CSV has no room for the cursor: the next page's is a header */
		if (o->more) {
			snprintf(resp->header_buf, sizeof resp->header_buf, "%s", PQgetvalue(r, o->n - 1, 19));
			gl_apijson_add_header(resp, "X-Next-Cursor", resp->header_buf);
		}
		gl_resp_set_stream(resp, jobs_csv_next, jobs_out_fini, o);
		return 0;
	}
	resp->content_type = "application/json";
	gl_jsonw_init(&o->w, NULL);
	gl_resp_set_stream(resp, jobs_json_next, jobs_out_fini, o);
	return 0;
}

int gl_route_ingest_runs(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	long long limit;
	char lim[24];
	const char *source = gl_req_param(req, "source");
	PGconn *c;
	PGresult *r = NULL;
	cJSON *root, *arr;
	int rc, csv;

	if ((rc = gl_apijson_format(req, resp, &csv)) ||
	    (rc = gl_apijson_int_param(req, resp, "limit", 100, 1, 1000, &limit)))
		return rc;
	if (source) {
		/* the names gl_ingest_run_begin is given (docs/openapi.yaml) */
		static const char *const sources[] = {"sacct", "kube", "dcgm", "slurm-nodes", "kube-nodes"};
		size_t i = 0;
		while (i < GL_ARRAY_LEN(sources) && strcmp(source, sources[i]))
			i++;
		if (i == GL_ARRAY_LEN(sources))
			return gl_resp_error(resp, GL_EINVAL, "source",
					     "source: '%s' is not sacct, kube, dcgm, slurm-nodes or kube-nodes", source);
	}
	snprintf(lim, sizeof lim, "%lld", limit);
	if ((rc = gl_req_db(req, &c, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	if ((rc = gl_db_query(c,
			      "SELECT r.run_id, r.source, c.name, r.input, extract(epoch FROM r.started_at)::bigint,"
			      " extract(epoch FROM r.finished_at)::bigint, r.status, r.lines_read, r.inserted, r.updated,"
			      " r.unchanged, r.skipped, r.ignored, r.skip_reasons::text, r.error, r.instance"
			      " FROM ingest_runs r LEFT JOIN clusters c USING (cluster_id)"
			      " WHERE ($1::text IS NULL OR r.source = $1) ORDER BY r.run_id DESC LIMIT $2",
			      2, (const char *[]){source, lim}, &r, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	if (csv) {
		static const char *const hdr[] = {"run_id", "source", "cluster", "input", "started", "finished",
						  "status", "lines_read", "inserted", "updated", "unchanged", "skipped",
						  "ignored", "skip_reasons", "error", "instance", NULL};
		struct gl_strbuf *o = &resp->body;
		gl_apijson_csv_header(o, hdr);
		for (int i = 0; i < PQntuples(r); i++) {
			gl_apijson_csv_col_num(o, r, i, 0);
			for (int k = 1; k <= 3; k++)
				gl_apijson_csv_col_str(o, r, i, k);
			gl_apijson_csv_col_time(o, r, i, 4);
			gl_apijson_csv_col_time(o, r, i, 5);
			gl_apijson_csv_col_str(o, r, i, 6);
			for (int k = 7; k <= 12; k++)
				gl_apijson_csv_col_num(o, r, i, k);
			/* the reasons stay one JSON object in one cell */
			gl_apijson_csv_col_str(o, r, i, 13);
			gl_apijson_csv_col_str(o, r, i, 14);
			gl_apijson_csv_col_str(o, r, i, 15);
			gl_csv_end(o);
		}
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("ingest_runs.csv"));
		PQclear(r);
		return 0;
	}
	root = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(root, "runs");
	for (int i = 0; i < PQntuples(r); i++) {
		cJSON *o = cJSON_CreateObject();
		gl_apijson_add_col_num(o, "run_id", r, i, 0);
		gl_apijson_add_col_str(o, "source", r, i, 1);
		gl_apijson_add_col_str(o, "cluster", r, i, 2);
		gl_apijson_add_col_str(o, "input", r, i, 3);
		gl_apijson_add_col_time(o, "started", r, i, 4);
		gl_apijson_add_col_time(o, "finished", r, i, 5);
		gl_apijson_add_col_str(o, "status", r, i, 6);
		gl_apijson_add_col_num(o, "lines_read", r, i, 7);
		gl_apijson_add_col_num(o, "inserted", r, i, 8);
		gl_apijson_add_col_num(o, "updated", r, i, 9);
		gl_apijson_add_col_num(o, "unchanged", r, i, 10);
		gl_apijson_add_col_num(o, "skipped", r, i, 11);
		gl_apijson_add_col_num(o, "ignored", r, i, 12);
		cJSON_AddItemToObject(o, "skip_reasons", cJSON_Parse(PQgetvalue(r, i, 13)));
		gl_apijson_add_col_str(o, "error", r, i, 14);
		/* which daemon instance ran it (null: a one-shot command) */
		gl_apijson_add_col_str(o, "instance", r, i, 15);
		cJSON_AddItemToArray(arr, o);
	}
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	PQclear(r);
	return 0;
}
