/* Health, metrics, jobs and ingest-run endpoints. */
#include "gl/apijson.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/health.h"
#include "gl/ingest.h"
#include "gl/inventory.h"
#include "gl/joblist.h"
#include "gl/ledgermetrics.h"
#include "gl/jsonw.h"
#include "gl/routes.h"
#include "gl/store.h"
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
const struct gl_server_route gl_routes[] = {
	{"GET", "/healthz", gl_route_healthz, "healthz", "public", NULL, 0, GL_REQCLASS_PROBE, 0},
	{"GET", "/metrics", gl_route_metrics, "metrics", "viewer", NULL, 0, GL_REQCLASS_PROBE, 0},
	{"GET", "/v1/jobs", gl_route_jobs, "jobs", "finance", "cluster,state,job_id,window,limit,offset,cursor,format", 1, GL_REQCLASS_WINDOWED, 1},
	{"GET", "/v1/ingest/runs", gl_route_ingest_runs, "ingest_runs", "viewer", "source,limit,format", 0, GL_REQCLASS_LIGHT, 0},
	{"GET", "/v1/audit", gl_route_audit, "audit", "admin", "window,actor,action,outcome,limit,cursor,format", 0, GL_REQCLASS_LIGHT, 0},
	{"GET", "/v1/audit/verify", gl_route_audit_verify, "audit_verify", "admin", "window", 0, GL_REQCLASS_HEAVY, 0},
	{"GET", "/v1/tokens", gl_route_tokens, "tokens", "admin", NULL, 0, GL_REQCLASS_LIGHT, 0},
	{"GET", "/v1/whoami", gl_route_whoami, "whoami", "viewer|hook", NULL, 1, GL_REQCLASS_LIGHT, 0},
	{"GET", "/v1/chargeback", gl_route_chargeback, "chargeback", "finance", "window,step,aggregate,filter,shareIdle,shareIdleBy,format,unobserved", 1, GL_REQCLASS_WINDOWED, 1},
	{"GET", "/v1/runs", gl_route_runs, "runs", "finance", "window,aggregate,state,limit,cursor,fresh,format", 1, GL_REQCLASS_WINDOWED, 1},
	{"GET", "/v1/runs/", gl_route_run, "run", "finance", "window,format", 1, GL_REQCLASS_WINDOWED, 1},
	{"GET", "/v1/inference", gl_route_inference, "inference", "finance", "window,step,aggregate,format", 1, GL_REQCLASS_WINDOWED, 1},
	{"GET", "/v1/reports/showback", gl_route_report_showback, "report_showback", "finance",
	 "month,aggregate,format,table,shareIdle", 1, GL_REQCLASS_HEAVY, 1},
	{"GET", "/v1/reports", gl_route_reports, "reports", "finance", "month", 0, GL_REQCLASS_LIGHT, 1},
	/* a prefix: after /v1/reports/showback, which it would otherwise take;
	 * the primary's: the files are those of its reports.dir */
	{"GET", "/v1/reports/", gl_route_report_file, "report_file", "finance", NULL, 0, GL_REQCLASS_LIGHT, 0},
	{"GET", "/v1/budgets", gl_route_budgets, "budgets", "finance", "month", 1, GL_REQCLASS_LIGHT, 1},
	{"GET", "/v1/queue", gl_route_queue, "queue", "viewer", "window,aggregate,format", 1, GL_REQCLASS_WINDOWED, 1},
	{"GET", "/v1/idle", gl_route_idle, "idle", "finance", "window,aggregate,limit,table,format,unobserved", 1, GL_REQCLASS_WINDOWED, 1},
	{"GET", "/v1/idle/candidates", gl_route_idle_candidates, "idle_candidates", "hook", "policy", 0, GL_REQCLASS_LIGHT, 0},
	{"GET", "/v1/hook/actions", gl_route_hook_actions, "hook_actions", "hook", "window,limit", 0, GL_REQCLASS_LIGHT, 0},
	{"POST", "/v1/hook/actions", gl_route_hook_record, "hook_record", "hook", NULL, 0, GL_REQCLASS_LIGHT, 0},
	{"GET", "/v1/capacity", gl_route_capacity, "capacity", "viewer", "window,step,aggregate,format,cluster,unobserved", 0, GL_REQCLASS_WINDOWED, 1},
	{"GET", "/v1/inventory", gl_route_inventory, "inventory", "viewer", "cluster,table,format", 0, GL_REQCLASS_LIGHT, 1},
	{"GET", "/v1/forecast", gl_route_forecast, "forecast", "viewer", "metric,aggregate,filter,window,horizon,step,level,exclude", 1, GL_REQCLASS_HEAVY, 1},
	{"GET", "/v1/capacity/forecast", gl_route_capacity_forecast, "capacity_forecast", "viewer",
	 "window,horizon,cluster,step,risk,plan", 0, GL_REQCLASS_HEAVY, 1},
	{"GET", "/v1/capacity/plan", gl_route_capacity_plan, "capacity_plan", "viewer", NULL, 0, GL_REQCLASS_LIGHT, 0},
	{"POST", "/v1/capacity/plan", gl_route_capacity_plan_post, "capacity_plan_post", "admin", NULL, 0, GL_REQCLASS_LIGHT, 0},
	{NULL, NULL, NULL, NULL, NULL, NULL, 0, GL_REQCLASS_LIGHT, 0},
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

/* Not ready while the workers' sessions are still being opened at start
 * (gl_server_warming): a request sent now would wait for them. */
static int health_starting(struct gl_req *req, struct gl_resp *resp)
{
	if (!gl_server_warming(req->srv))
		return 0;
	resp->content_type = "application/json";
	resp->status = 503;
	gl_strbuf_puts(&resp->body, "{\"status\":\"starting\",\"db\":\"opening\"}\n");
	return 1;
}

int gl_route_healthz_cached(struct gl_req *req, struct gl_resp *resp)
{
	char msg[sizeof g_health_msg];
	int ok, code;
	if (health_starting(req, resp))
		return 1;
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

	if (health_starting(req, resp))
		return 0;
	if (!health_cached(&ok, &code, msg, sizeof msg)) {
		struct gl_store *st;
		ok = !gl_req_store(req, &st, &err) && !gl_store_ping(st, &err);
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

/* One gauge per source and cluster, with its HELP and TYPE lines; v(i)
 * gives the value, or GL_TIME_NONE for none (the sample is left out). */
static void per_source(struct gl_strbuf *o, const struct gl_ingest_list *l, const char *metric, const char *help,
		       int with_status, int64_t (*v)(const struct gl_ingest_last_run *, int64_t), int64_t now_s)
{
	char val[24];
	gl_strbuf_printf(o, "# HELP %s %s\n# TYPE %s gauge\n", metric, help, metric);
	for (size_t i = 0; i < l->n; i++) {
		const struct gl_ingest_last_run *r = &l->last[i];
		int64_t x = v(r, now_s);
		if (x == GL_TIME_NONE)
			continue;
		snprintf(val, sizeof val, "%lld", (long long)x);
		gl_apijson_prom_sample(o, metric,
				       (const char *[]){"source", r->source, "cluster", r->cluster,
							with_status ? "status" : NULL, r->status, NULL},
				       val);
	}
}

static int64_t last_started(const struct gl_ingest_last_run *r, int64_t now_s)
{
	return r->started_s;
}
static int64_t last_rows(const struct gl_ingest_last_run *r, int64_t now_s)
{
	return r->rows;
}
static int64_t last_skipped(const struct gl_ingest_last_run *r, int64_t now_s)
{
	return r->skipped;
}
static int64_t lag(const struct gl_ingest_last_run *r, int64_t now_s)
{
	return r->watermark_s == GL_TIME_NONE ? GL_TIME_NONE : now_s - r->watermark_s;
}

/* The ingest health users alert on: each source's last run, its rows and
 * skips, and how far its watermark lags. */
static void ingest_metrics(struct gl_strbuf *o, const struct gl_ingest_list *l, int64_t now_s)
{
	per_source(o, l, "gpuledger_ingest_last_run_timestamp_seconds", "Start of the last ingest run.", 1,
		   last_started, now_s);
	per_source(o, l, "gpuledger_ingest_last_run_rows", "Rows written (inserted+updated) by the last run.", 0,
		   last_rows, now_s);
	per_source(o, l, "gpuledger_ingest_last_run_skipped", "Lines skipped by the last run.", 0, last_skipped,
		   now_s);
	per_source(o, l, "gpuledger_ingest_lag_seconds", "Now minus the source's watermark.", 0, lag, now_s);
}

/* Each source's staleness: seconds since the last moment its data reaches
 * (gl_ingest_data_through: a poll's watermark, a saved file's capture
 * time, the last node snapshot), per cluster, source and kind of data.
 * Time after it is unobserved (docs/ingest.md). Silent when the query fails. */
static void staleness_metrics(struct gl_store *st, struct gl_strbuf *o, int64_t now_s)
{
	struct gl_ingest_data_through_set dt;
	struct gl_err err = {0};
	char v[24];
	if (gl_ingest_data_through(st, &dt, &err) == 0) {
		gl_strbuf_puts(o, "# HELP gpuledger_source_staleness_seconds Seconds since the source's last successful"
				  " observation (time after it is unobserved).\n"
				  "# TYPE gpuledger_source_staleness_seconds gauge\n");
		for (size_t i = 0; i < dt.n; i++) {
			const struct gl_ingest_data_through_row *r = &dt.rows[i];
			snprintf(v, sizeof v, "%lld", (long long)(now_s > r->through_s ? now_s - r->through_s : 0));
			gl_apijson_prom_sample(o, "gpuledger_source_staleness_seconds",
					       (const char *[]){"source", r->source, "cluster", r->cluster, "data", r->data,
								NULL},
					       v);
		}
	}
	gl_ingest_data_through_fini(&dt);
}

/* The inventory gauges: GPUs per cluster and source, the last scheduler
 * snapshot, and the nodes where the scheduler and the exporter disagree
 * (counted per cluster and kind). Silent when a query fails. */
static void inventory_metrics(struct gl_store *st, struct gl_strbuf *o)
{
	static const char *const kinds[] = {"gpu_count", "unknown_to_scheduler", "unseen_by_exporter"};
	struct gl_inventory inv = {0};
	struct gl_err err = {0};
	char v[24];
	if (gl_inventory_clusters(st, NULL, &inv, &err) == 0) {
		gl_strbuf_puts(o, "# HELP gpuledger_inventory_gpus GPUs in the current inventory per cluster and source.\n"
				  "# TYPE gpuledger_inventory_gpus gauge\n");
		for (size_t i = 0; i < inv.n_clusters; i++) {
			const struct gl_inventory_cluster *c = &inv.clusters[i];
			snprintf(v, sizeof v, "%lld", (long long)c->scheduler_gpus);
			if (!c->scheduler_gpus_null)
				gl_apijson_prom_sample(o, "gpuledger_inventory_gpus",
						       (const char *[]){"cluster", c->name, "source", "scheduler", NULL}, v);
			snprintf(v, sizeof v, "%lld", (long long)c->exporter_gpus);
			gl_apijson_prom_sample(o, "gpuledger_inventory_gpus",
					       (const char *[]){"cluster", c->name, "source", "exporter", NULL}, v);
		}
		gl_strbuf_puts(o, "# HELP gpuledger_inventory_snapshot_timestamp_seconds Time of the last scheduler node snapshot.\n"
				  "# TYPE gpuledger_inventory_snapshot_timestamp_seconds gauge\n");
		for (size_t i = 0; i < inv.n_clusters; i++)
			if (inv.clusters[i].last_snapshot_s != GL_TIME_NONE) {
				snprintf(v, sizeof v, "%lld", (long long)inv.clusters[i].last_snapshot_s);
				gl_apijson_prom_sample(o, "gpuledger_inventory_snapshot_timestamp_seconds",
						       (const char *[]){"cluster", inv.clusters[i].name, NULL}, v);
			}
	}
	if (gl_inventory_conflicts(st, NULL, &inv, &err) == 0) {
		gl_strbuf_puts(o, "# HELP gpuledger_inventory_conflicts Nodes where the scheduler and the exporter disagree.\n"
				  "# TYPE gpuledger_inventory_conflicts gauge\n");
		/* conflicts come by cluster: one sample per cluster and kind */
		for (size_t i = 0, j; i < inv.n_conflicts; i = j) {
			for (j = i; j < inv.n_conflicts && !strcmp(inv.conflicts[j].cluster, inv.conflicts[i].cluster); j++)
				;
			for (size_t k = 0; k < GL_ARRAY_LEN(kinds); k++) {
				long long n = 0;
				for (size_t x = i; x < j; x++)
					n += !strcmp(gl_inventory_conflict_kind(&inv.conflicts[x]), kinds[k]);
				snprintf(v, sizeof v, "%lld", n);
				if (n)
					gl_apijson_prom_sample(o, "gpuledger_inventory_conflicts",
							       (const char *[]){"cluster", inv.conflicts[i].cluster, "kind",
										kinds[k], NULL},
							       v);
			}
		}
	}
	gl_inventory_fini(&inv);
}

int gl_route_metrics(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_strbuf *o = &resp->body;
	struct gl_err err = {0};
	struct gl_ingest_list runs = {0};
	struct gl_store *st;

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
	if (gl_req_store(req, &st, &err) || gl_ingest_runs_last(st, &runs, &err)) {
		gl_strbuf_puts(o, "gpuledger_db_up 0\n");
	} else {
		gl_strbuf_puts(o, "gpuledger_db_up 1\n");
		ingest_metrics(o, &runs, req->now_s);
		staleness_metrics(st, o, req->now_s);
		inventory_metrics(st, o);
	}
	gl_ingest_list_fini(&runs);
	gl_ledgermetrics_append(o); /* the daemon's last refresh */
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	return 0;
}

static const char *const job_states[] = {
	"PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
	"PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
	"RESIZING", "REVOKED", "SPECIAL_EXIT", "UNKNOWN",
};

/* The answer as it is sent, a piece at a time from the rows (up to 10,000
 * jobs a page): the columns of the JSON objects, or of the CSV in the same
 * order with cost in currency units with the currency's minor decimals. */
struct jobs_out {
	struct gl_joblist l;
	struct gl_apijson_dt dt;
	size_t i;
	int windowed, minor, head;
	struct gl_jsonw w;
};

static void jobs_out_fini(void *state)
{
	struct jobs_out *o = state;
	gl_joblist_fini(&o->l);
	gl_apijson_dt_fini(&o->dt);
	free(o);
}

static void jobs_csv_row(struct gl_strbuf *o, const struct gl_joblist_row *j, int windowed, int minor)
{
	const char *text[] = {j->cluster, j->job_key, j->job_id, j->name,      j->user_name,
			      j->account, j->partition, j->qos,   j->namespace, j->state};
	for (size_t k = 0; k < GL_ARRAY_LEN(text); k++)
		gl_csv_field(o, text[k] ? text[k] : "");
	gl_apijson_csv_time(o, j->submit_s);
	gl_apijson_csv_time(o, j->start_s);
	gl_apijson_csv_time(o, j->end_s);
	gl_apijson_csv_int(o, j->elapsed_s, j->elapsed_s_null);
	gl_apijson_csv_micro(o, j->gpu_micro);
	gl_csv_field(o, j->gpu_type ? j->gpu_type : "");
	gl_apijson_csv_int(o, j->queue_wait_s, j->queue_wait_s_null);
	gl_csv_field(o, j->node_list ? j->node_list : "");
	gl_apijson_csv_micro(o, j->req_gpu_micro);
	if (windowed) {
		gl_apijson_csv_int(o, j->gpu_seconds, j->gpu_seconds_null);
		gl_apijson_csv_money(o, j->cost_micros, j->cost_micros_null, minor);
		gl_apijson_csv_f8(o, j->busy_gpu_s, j->busy_gpu_s_null);
		gl_apijson_csv_f8(o, j->idle_gpu_s, j->idle_gpu_s_null);
		gl_apijson_csv_f8(o, j->held_idle_gpu_s, j->held_idle_gpu_s_null);
	}
	gl_csv_end(o);
}

/* Pieces end at a row's end (a CSV field starts a record in an empty buffer). */
static int jobs_csv_next(void *state, struct gl_strbuf *out)
{
	static const char *const hdr[] = {"cluster", "key", "job_id", "name", "user", "account", "partition", "qos",
					  "namespace", "state", "submit", "start", "end", "elapsed_s", "gpus", "gpu_type",
					  "queue_wait_s", "node_list", "gpus_requested", NULL};
	static const char *const win_hdr[] = {"gpu_seconds", "cost", "busy_gpu_seconds",
					      "idle_in_allocation_gpu_seconds", "held_idle_gpu_seconds", NULL};
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
	while (out->len < GL_RESP_CHUNK && o->i < o->l.n)
		jobs_csv_row(out, &o->l.rows[o->i++], o->windowed, o->minor);
	return o->i < o->l.n;
}

static void jobs_json_row(struct gl_jsonw *w, const struct gl_joblist_row *j, int windowed)
{
	const char *const names[] = {"cluster", "key", "job_id", "name", "user", "account", "partition", "qos",
				     "namespace", "state"};
	const char *text[] = {j->cluster, j->job_key, j->job_id, j->name,      j->user_name,
			      j->account, j->partition, j->qos,   j->namespace, j->state};
	gl_jsonw_object(w, NULL);
	for (size_t k = 0; k < GL_ARRAY_LEN(names); k++)
		gl_jsonw_str(w, names[k], text[k]);
	gl_jsonw_time(w, "submit", j->submit_s);
	gl_jsonw_time(w, "start", j->start_s);
	gl_jsonw_time(w, "end", j->end_s);
	gl_apijson_w_int(w, "elapsed_s", j->elapsed_s, j->elapsed_s_null);
	gl_jsonw_num(w, "gpus", (double)j->gpu_micro / (double)GL_GPU_MICRO);
	gl_jsonw_str(w, "gpu_type", j->gpu_type);
	gl_apijson_w_int(w, "queue_wait_s", j->queue_wait_s, j->queue_wait_s_null);
	gl_jsonw_str(w, "node_list", j->node_list);
	gl_jsonw_num(w, "gpus_requested", (double)j->req_gpu_micro / (double)GL_GPU_MICRO);
	gl_jsonw_time(w, "seen", j->seen_s);
	if (windowed) {
		gl_apijson_w_int(w, "gpu_seconds", j->gpu_seconds, j->gpu_seconds_null);
		gl_apijson_w_int(w, "unobserved_gpu_seconds", j->unobserved_gpu_seconds, j->unobserved_gpu_seconds_null);
		/* null cost: no rate covers the job's model in the window */
		gl_apijson_w_int(w, "cost_micros", j->cost_micros, j->cost_micros_null);
		gl_apijson_w_f8(w, "busy_gpu_seconds", j->busy_gpu_s, j->busy_gpu_s_null);
		gl_apijson_w_f8(w, "idle_in_allocation_gpu_seconds", j->idle_gpu_s, j->idle_gpu_s_null);
		/* of it, the time the job held GPU memory with no kernels running */
		gl_apijson_w_f8(w, "held_idle_gpu_seconds", j->held_idle_gpu_s, j->held_idle_gpu_s_null);
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
	while (out->len < GL_RESP_CHUNK && o->i < o->l.n)
		jobs_json_row(&o->w, &o->l.rows[o->i++], o->windowed);
	if (o->i < o->l.n)
		return 1;
	gl_jsonw_end(&o->w);
	gl_jsonw_i64(&o->w, "count", (int64_t)o->l.n);
	if (o->l.more)
		gl_jsonw_i64(&o->w, "next_cursor", o->l.rows[o->l.n - 1].job_pk);
	else
		gl_jsonw_null(&o->w, "next_cursor");
	gl_apijson_dt_jsonw(&o->w, &o->dt);
	gl_jsonw_end(&o->w);
	gl_strbuf_putc(out, '\n');
	return 0;
}

/* limit, offset, cursor, window and state, each checked (400 naming it). */
static int jobs_params(struct gl_req *req, struct gl_resp *resp, struct gl_joblist_query *q)
{
	const char *win = gl_req_param(req, "window");
	struct gl_window w = {0, 0};
	long long limit, offset, cursor;
	int rc;

	if ((rc = gl_apijson_int_param(req, resp, "limit", 100, 1, 10000, &limit)) ||
	    (rc = gl_apijson_int_param(req, resp, "offset", 0, 0, 1LL << 40, &offset)) ||
	    (rc = gl_apijson_int_param(req, resp, "cursor", 0, 1, INT64_MAX, &cursor)))
		return rc;
	if (win && (rc = gl_apijson_window(req, resp, NULL, &w)))
		return rc;
	memset(q, 0, sizeof *q);
	q->cluster = gl_req_param(req, "cluster");
	q->state = gl_req_param(req, "state");
	q->job_id = gl_req_param(req, "job_id");
	if (q->state) {
		size_t i = 0;
		while (i < GL_ARRAY_LEN(job_states) && strcmp(q->state, job_states[i]))
			i++;
		if (i == GL_ARRAY_LEN(job_states))
			return gl_resp_error(resp, GL_EINVAL, "state", "state: unknown job state '%s'", q->state);
	}
	q->limit = limit;
	q->offset = offset;
	q->cursor = cursor;
	q->windowed = win != NULL;
	q->win_start_s = w.start_s;
	q->win_end_s = w.end_s;
	q->now_s = req->now_s;
	return 0;
}

/* Jobs, newest first (keyset pagination on the row id). With a window: the
 * jobs that overlap it, each with its GPU-seconds and cost inside the window
 * and its exporter-observed busy/idle GPU-seconds (null when there is no
 * exporter data). */
int gl_route_jobs(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	struct gl_joblist_query q;
	struct gl_store *st;
	struct jobs_out *o;
	struct gl_window win;
	int rc, csv;

	if ((rc = gl_apijson_format(req, resp, &csv)) || (rc = jobs_params(req, resp, &q)))
		return rc;
	if ((rc = gl_req_store(req, &st, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	o = gl_xcalloc(1, sizeof *o);
	q.scope = gl_req_scope(req, &q.n_scope);
	rc = gl_joblist_query(st, &q, &o->l, &err);
	if (rc) {
		jobs_out_fini(o);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	o->windowed = q.windowed;
	o->minor = gl_cost_minor(req->cfg->currency);
	/* without a window the list reaches up to now */
	win = q.windowed ? (struct gl_window){q.win_start_s, q.win_end_s} : (struct gl_window){0, req->now_s};
	if ((rc = gl_apijson_dt_load(req, resp, &win, &o->dt))) {
		jobs_out_fini(o);
		return rc;
	}
	if (csv) {
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("jobs.csv"));
		gl_apijson_dt_headers(resp, &o->dt);
		/* CSV has no room for the cursor: the next page's is a header */
		if (o->l.more) {
			snprintf(resp->header_buf, sizeof resp->header_buf, "%lld", (long long)o->l.rows[o->l.n - 1].job_pk);
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

static void runs_csv(struct gl_resp *resp, const struct gl_ingest_list *l)
{
	static const char *const hdr[] = {"run_id", "source", "cluster", "input", "started", "finished",
					  "status", "lines_read", "inserted", "updated", "unchanged", "skipped",
					  "ignored", "skip_reasons", "error", "instance", NULL};
	struct gl_strbuf *o = &resp->body;
	gl_apijson_csv_header(o, hdr);
	for (size_t i = 0; i < l->n; i++) {
		const struct gl_ingest_run_row *r = &l->runs[i];
		const int64_t counts[] = {r->lines_read, r->inserted, r->updated, r->unchanged, r->skipped, r->ignored};
		gl_apijson_csv_int(o, r->run_id, 0);
		gl_csv_field(o, r->source);
		gl_csv_field(o, r->cluster ? r->cluster : "");
		gl_csv_field(o, r->input ? r->input : "");
		gl_apijson_csv_time(o, r->started_s);
		gl_apijson_csv_time(o, r->finished_s);
		gl_csv_field(o, r->status);
		for (size_t k = 0; k < GL_ARRAY_LEN(counts); k++)
			gl_apijson_csv_int(o, counts[k], 0);
		/* the reasons stay one JSON object in one cell */
		gl_csv_field(o, r->skip_reasons);
		gl_csv_field(o, r->error ? r->error : "");
		gl_csv_field(o, r->instance ? r->instance : "");
		gl_csv_end(o);
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("ingest_runs.csv"));
}

static cJSON *run_json(const struct gl_ingest_run_row *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "run_id", (double)r->run_id);
	gl_apijson_add_str(o, "source", r->source);
	gl_apijson_add_str(o, "cluster", r->cluster);
	gl_apijson_add_str(o, "input", r->input);
	gl_apijson_add_time(o, "started", r->started_s);
	gl_apijson_add_time(o, "finished", r->finished_s);
	gl_apijson_add_str(o, "status", r->status);
	cJSON_AddNumberToObject(o, "lines_read", (double)r->lines_read);
	cJSON_AddNumberToObject(o, "inserted", (double)r->inserted);
	cJSON_AddNumberToObject(o, "updated", (double)r->updated);
	cJSON_AddNumberToObject(o, "unchanged", (double)r->unchanged);
	cJSON_AddNumberToObject(o, "skipped", (double)r->skipped);
	cJSON_AddNumberToObject(o, "ignored", (double)r->ignored);
	cJSON_AddItemToObject(o, "skip_reasons", cJSON_Parse(r->skip_reasons));
	gl_apijson_add_str(o, "error", r->error);
	/* which daemon instance ran it (null: a one-shot command) */
	gl_apijson_add_str(o, "instance", r->instance);
	return o;
}

int gl_route_ingest_runs(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	struct gl_ingest_list l = {0};
	long long limit;
	const char *source = gl_req_param(req, "source");
	struct gl_store *st;
	cJSON *root, *arr;
	int rc, csv;

	if ((rc = gl_apijson_format(req, resp, &csv)) ||
	    (rc = gl_apijson_int_param(req, resp, "limit", 100, 1, 1000, &limit)))
		return rc;
	if (source) {
		/* the names gl_ingest_run_begin is given (docs/openapi.yaml) */
		static const char *const sources[] = {"sacct", "kube", "dcgm", "nvidia-smi", "slurm-nodes", "kube-nodes", "serving"};
		size_t i = 0;
		while (i < GL_ARRAY_LEN(sources) && strcmp(source, sources[i]))
			i++;
		if (i == GL_ARRAY_LEN(sources))
			return gl_resp_error(resp, GL_EINVAL, "source",
					     "source: '%s' is not sacct, kube, dcgm, nvidia-smi, slurm-nodes, kube-nodes or serving", source);
	}
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_ingest_runs_list(st, source, limit, &l, &err))) {
		gl_ingest_list_fini(&l);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	if (csv) {
		runs_csv(resp, &l);
		gl_ingest_list_fini(&l);
		return 0;
	}
	root = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(root, "runs");
	for (size_t i = 0; i < l.n; i++)
		cJSON_AddItemToArray(arr, run_json(&l.runs[i]));
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	gl_ingest_list_fini(&l);
	return 0;
}
