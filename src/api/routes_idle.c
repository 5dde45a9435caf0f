/* /v1/idle: allocated-but-idle GPU time per owner and the worst jobs,
 * unallocated idle capacity per cluster, partition and model, and the
 * share of fleet time wasted (the figures: include/gl/idle.h). */
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/capacity.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/idle.h"
#include "gl/jsonw.h"
#include "gl/routes.h"
#include "gl/store.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The answer as it is sent, a piece at a time from the rows: JSON, or one
 * of the three tables as CSV (the columns of the JSON objects in order, the
 * owner key named by its dimension; costs in currency units with the
 * currency's minor decimals; no fleet rows when capacity is unknown: a
 * header only). */
enum idle_table { IT_ALLOCATED, IT_TOP_JOBS, IT_UNALLOCATED };
struct idle_out {
	struct gl_idle idle;
	struct gl_accounting_cover cov;
	struct gl_apijson_dt dt;
	struct gl_window win;
	char agg[64];
	int cap_known, minor;
	int unobserved_include;
	enum idle_table table; /* CSV: the one table */
	int part;              /* JSON: 0 head, 1..3 a table's rows, 4 tail */
	size_t i;              /* the next row */
	struct gl_jsonw w;
};

static void idle_out_fini(void *state)
{
	struct idle_out *o = state;
	gl_idle_fini(&o->idle);
	gl_accounting_cover_fini(&o->cov);
	gl_apijson_dt_fini(&o->dt);
	free(o);
}

static size_t table_rows(const struct idle_out *o, enum idle_table t)
{
	return t == IT_ALLOCATED ? o->idle.n_owners : t == IT_TOP_JOBS ? o->idle.n_jobs : o->idle.n_fleet;
}

static void csv_allocated_row(struct gl_strbuf *o, const struct gl_idle_owner *w, int minor)
{
	gl_csv_field(o, w->key ? w->key : "");
	gl_csv_f8(o, w->idle_gpu_s);
	gl_csv_f8(o, w->busy_gpu_s);
	gl_csv_f8(o, w->observed_gpu_s);
	gl_apijson_csv_money(o, w->idle_micros, w->idle_micros_null, minor);
	gl_apijson_csv_int(o, w->unpriced_jobs, 0);
	gl_csv_f8(o, w->held_idle_gpu_s);
	gl_csv_end(o);
}

static void csv_top_row(struct gl_strbuf *o, const struct gl_idle_job *j, int minor)
{
	const char *text[] = {j->cluster, j->job_id, j->owner, j->user_name};
	for (size_t k = 0; k < GL_ARRAY_LEN(text); k++)
		gl_csv_field(o, text[k] ? text[k] : "");
	gl_apijson_csv_micro(o, j->gpu_micro);
	gl_csv_field(o, j->gpu_model ? j->gpu_model : "unknown");
	gl_csv_field(o, j->state ? j->state : "");
	gl_csv_f8(o, j->idle_gpu_s);
	gl_csv_f8(o, j->busy_gpu_s);
	gl_apijson_csv_money(o, j->idle_micros, j->idle_micros_null, minor);
	gl_apijson_csv_time(o, j->from_s);
	gl_apijson_csv_time(o, j->to_s);
	gl_csv_f8(o, j->held_idle_gpu_s);
	gl_csv_end(o);
}

static void csv_fleet_row(struct gl_strbuf *o, const struct gl_idle_fleet *f, int minor)
{
	const int64_t secs[] = {f->reported_s, f->unavailable_s, f->allocated_s, f->idle_s, f->over_s, f->unobserved_s};
	gl_csv_field(o, f->cluster);
	gl_csv_field(o, f->partition);
	gl_csv_field(o, f->gpu_model);
	for (size_t k = 0; k < GL_ARRAY_LEN(secs); k++)
		gl_apijson_csv_int(o, secs[k], 0);
	gl_apijson_csv_money(o, f->idle_micros, f->idle_micros_null, minor);
	gl_csv_end(o);
}

static void csv_head(struct gl_strbuf *out, const struct idle_out *o)
{
	if (o->table == IT_ALLOCATED)
		gl_apijson_csv_header(out, (const char *const[]){o->agg, "idle_gpu_seconds", "busy_gpu_seconds",
								  "observed_gpu_seconds", "idle_cost", "unpriced_jobs",
								  "held_idle_gpu_seconds", NULL});
	else if (o->table == IT_TOP_JOBS)
		gl_apijson_csv_header(out, (const char *const[]){"cluster", "job_id", "owner", "user", "gpus", "gpu_model",
								  "state", "idle_gpu_seconds", "busy_gpu_seconds",
								  "idle_cost", "from", "to", "held_idle_gpu_seconds", NULL});
	else
		gl_apijson_csv_header(out, (const char *const[]){"cluster", "partition", "gpu_model",
								  "reported_gpu_seconds", "unavailable_gpu_seconds",
								  "allocated_gpu_seconds", "idle_gpu_seconds",
								  "overallocated_gpu_seconds",
								  "unobserved_capacity_gpu_seconds", "idle_cost", NULL});
}

/* Pieces end at a row's end (a CSV field starts a record in an empty buffer). */
static int idle_csv_next(void *state, struct gl_strbuf *out)
{
	struct idle_out *o = state;
	size_t n = table_rows(o, o->table);
	if (o->part == 0) {
		csv_head(out, o);
		o->part = 1;
	}
	for (; out->len < GL_RESP_CHUNK && o->i < n; o->i++) {
		if (o->table == IT_ALLOCATED)
			csv_allocated_row(out, &o->idle.owners[o->i], o->minor);
		else if (o->table == IT_TOP_JOBS)
			csv_top_row(out, &o->idle.jobs[o->i], o->minor);
		else
			csv_fleet_row(out, &o->idle.fleet[o->i], o->minor);
	}
	return o->i < n;
}

static void json_allocated_row(struct gl_jsonw *w, const struct gl_idle_owner *r)
{
	gl_jsonw_object(w, NULL);
	gl_jsonw_str(w, "key", r->key ? r->key : "");
	gl_jsonw_num(w, "idle_gpu_seconds", r->idle_gpu_s);
	gl_jsonw_num(w, "busy_gpu_seconds", r->busy_gpu_s);
	gl_jsonw_num(w, "observed_gpu_seconds", r->observed_gpu_s);
	gl_apijson_w_int(w, "idle_cost_micros", r->idle_micros, r->idle_micros_null);
	gl_jsonw_num(w, "unpriced_jobs", (double)r->unpriced_jobs);
	/* of the idle time, the part with memory held (idle.held_memory_mib) */
	gl_jsonw_num(w, "held_idle_gpu_seconds", r->held_idle_gpu_s);
	gl_jsonw_end(w);
}

static void json_top_row(struct gl_jsonw *w, const struct gl_idle_job *j)
{
	gl_jsonw_object(w, NULL);
	gl_jsonw_str(w, "cluster", j->cluster ? j->cluster : "");
	gl_jsonw_str(w, "job_id", j->job_id ? j->job_id : "");
	gl_jsonw_str(w, "owner", j->owner ? j->owner : "");
	gl_jsonw_str(w, "user", j->user_name ? j->user_name : "");
	gl_jsonw_num(w, "gpus", (double)j->gpu_micro / (double)GL_GPU_MICRO);
	gl_jsonw_str(w, "gpu_model", j->gpu_model ? j->gpu_model : "unknown");
	gl_jsonw_str(w, "state", j->state ? j->state : "");
	gl_jsonw_num(w, "idle_gpu_seconds", j->idle_gpu_s);
	gl_jsonw_num(w, "busy_gpu_seconds", j->busy_gpu_s);
	gl_apijson_w_int(w, "idle_cost_micros", j->idle_micros, j->idle_micros_null);
	gl_jsonw_time(w, "from", j->from_s);
	gl_jsonw_time(w, "to", j->to_s);
	gl_jsonw_num(w, "held_idle_gpu_seconds", j->held_idle_gpu_s);
	gl_jsonw_end(w);
}

static void json_fleet_row(struct gl_jsonw *w, const struct gl_idle_fleet *f)
{
	static const char *const names[] = {"reported_gpu_seconds", "unavailable_gpu_seconds", "allocated_gpu_seconds",
					    "idle_gpu_seconds", "overallocated_gpu_seconds", "unobserved_capacity_gpu_seconds"};
	const int64_t secs[] = {f->reported_s, f->unavailable_s, f->allocated_s, f->idle_s, f->over_s, f->unobserved_s};
	gl_jsonw_object(w, NULL);
	gl_jsonw_str(w, "cluster", f->cluster);
	gl_jsonw_str(w, "partition", f->partition);
	gl_jsonw_str(w, "gpu_model", f->gpu_model);
	for (size_t k = 0; k < GL_ARRAY_LEN(names); k++)
		gl_jsonw_num(w, names[k], (double)secs[k]);
	gl_apijson_w_int(w, "idle_cost_micros", f->idle_micros, f->idle_micros_null);
	gl_jsonw_end(w);
}

static void json_head(struct idle_out *o)
{
	gl_jsonw_object(&o->w, NULL);
	gl_jsonw_array(&o->w, "window");
	gl_jsonw_time(&o->w, NULL, o->win.start_s);
	gl_jsonw_time(&o->w, NULL, o->win.end_s);
	gl_jsonw_end(&o->w);
	gl_jsonw_str(&o->w, "aggregate", o->agg);
	gl_jsonw_array(&o->w, "allocated_idle");
}

static void json_tail(struct idle_out *o)
{
	struct gl_jsonw *w = &o->w;
	double alloc_idle = 0, wasted;
	int64_t unalloc_idle = 0, reported = 0, unobserved = 0;
	for (size_t i = 0; i < o->idle.n_owners; i++)
		alloc_idle += o->idle.owners[i].idle_gpu_s;
	for (size_t i = 0; i < o->idle.n_fleet; i++) {
		unalloc_idle += o->idle.fleet[i].idle_s;
		reported += o->idle.fleet[i].reported_s;
		unobserved += o->idle.fleet[i].unobserved_s;
	}
	gl_jsonw_bool(w, "capacity_known", o->cap_known);
	gl_jsonw_num(w, "capacity_days_known", (double)o->cov.known);
	gl_jsonw_num(w, "capacity_days", (double)o->cov.days);
	gl_jsonw_array(w, "capacity_clusters_unknown");
	for (size_t i = 0; i < o->cov.n_missing; i++)
		gl_jsonw_str(w, NULL, o->cov.missing[i]);
	gl_jsonw_end(w);
	/* over the clusters with capacity data only, by the one ratio every
	 * view takes (the owners' idle seconds are whole: rounded per owner) */
	wasted = gl_capacity_ratio((int64_t)llround(alloc_idle) + unalloc_idle, reported);
	if (wasted >= 0)
		gl_jsonw_num(w, "wasted_fraction", wasted);
	else
		gl_jsonw_null(w, "wasted_fraction");
	gl_jsonw_num(w, "unobserved_capacity_gpu_seconds", (double)unobserved);
	gl_jsonw_str(w, "unobserved", o->unobserved_include ? "include" : "exclude");
	gl_apijson_dt_jsonw(w, &o->dt);
	gl_jsonw_end(w);
	gl_strbuf_putc(w->out, '\n');
}

static int idle_json_next(void *state, struct gl_strbuf *out)
{
	static const char *const names[] = {"allocated_idle", "top_jobs", "unallocated_idle"};
	struct idle_out *o = state;
	o->w.out = out;
	while (out->len < GL_RESP_CHUNK) {
		if (o->part == 0) {
			json_head(o);
			o->part = 1;
		} else if (o->part == 4) {
			json_tail(o);
			return 0;
		} else if (o->i < table_rows(o, (enum idle_table)(o->part - 1))) {
			if (o->part == 1)
				json_allocated_row(&o->w, &o->idle.owners[o->i]);
			else if (o->part == 2)
				json_top_row(&o->w, &o->idle.jobs[o->i]);
			else
				json_fleet_row(&o->w, &o->idle.fleet[o->i]);
			o->i++;
		} else {
			gl_jsonw_end(&o->w);
			if (++o->part < 4)
				gl_jsonw_array(&o->w, names[o->part - 1]);
			o->i = 0;
		}
	}
	return 1;
}

/* aggregate, limit, table and unobserved, each checked (400 naming it). */
static int idle_params(struct gl_req *req, struct gl_resp *resp, const char **dim, long *limit,
		       struct gl_capacity_observed *cap)
{
	const char *agg = gl_req_param(req, "aggregate"), *lim = gl_req_param(req, "limit"),
		   *table = gl_req_param(req, "table"), *unobs = gl_req_param(req, "unobserved");
	if (unobs && strcmp(unobs, "exclude") && strcmp(unobs, "include"))
		return gl_resp_error(resp, GL_EINVAL, "unobserved", "unobserved: '%s' is not exclude or include", unobs);
	cap->grace_s = req->cfg->inventory_absent_grace_s;
	cap->include = unobs && !strcmp(unobs, "include");
	/* three tables do not fit one CSV: table= picks one (JSON has them all) */
	if (table && strcmp(table, "allocated") && strcmp(table, "top_jobs") && strcmp(table, "unallocated"))
		return gl_resp_error(resp, GL_EINVAL, "table", "table: '%s' is not allocated, top_jobs or unallocated",
				     table);
	*dim = agg ? agg : "team";
	if (!gl_idle_dim_valid(*dim))
		return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: one dimension (team, project, cost_center, "
								   "user, account, cluster, partition, qos, namespace, gpu_model, workload_type)");
	*limit = 20;
	if (lim) {
		long long x = 0;
		if (gl_apijson_digits(lim, &x) || x < 1 || x > 1000)
			return gl_resp_error(resp, GL_EINVAL, "limit", "limit: must be between 1 and 1000");
		*limit = (long)x;
	}
	return 0;
}

/* The answer's headers and stream; takes o. */
static void idle_send(struct gl_resp *resp, const char *table, int csv, struct idle_out *o)
{
	if (!csv) {
		resp->content_type = "application/json";
		gl_jsonw_init(&o->w, NULL);
		gl_resp_set_stream(resp, idle_json_next, idle_out_fini, o);
		return;
	}
	table = table ? table : "allocated";
	o->table = !strcmp(table, "allocated") ? IT_ALLOCATED : !strcmp(table, "top_jobs") ? IT_TOP_JOBS : IT_UNALLOCATED;
	gl_apijson_set_csv(resp, o->table == IT_ALLOCATED  ? GL_APIJSON_ATTACHMENT("idle_allocated.csv")
				 : o->table == IT_TOP_JOBS ? GL_APIJSON_ATTACHMENT("idle_top_jobs.csv")
							   : GL_APIJSON_ATTACHMENT("idle_unallocated.csv"));
	/* the JSON root's coverage, which no row holds */
	gl_apijson_add_header(resp, "X-Capacity-Known", o->cap_known ? "true" : "false");
	gl_apijson_add_header_num(resp, "X-Capacity-Days-Known", (long long)o->cov.known);
	gl_apijson_add_header_num(resp, "X-Capacity-Days", (long long)o->cov.days);
	gl_apijson_add_header_num(resp, "X-Capacity-Clusters-Unknown", (long long)o->cov.n_missing);
	gl_apijson_dt_headers(resp, &o->dt);
	gl_resp_set_stream(resp, idle_csv_next, idle_out_fini, o);
}

int gl_route_idle(struct gl_req *req, struct gl_resp *resp)
{
	const char *table = gl_req_param(req, "table"), *dim = NULL;
	struct gl_window win;
	struct gl_err err = {0};
	struct idle_out *o;
	struct gl_store *st;
	const struct gl_tokens_scope *scope;
	size_t n_scope;
	struct gl_capacity_observed cap;
	long limit;
	int rc = 0, csv;

	/* a scoped token: its own jobs' idle and top jobs; the fleet's
	 * unallocated idle (every owner's) is not read */
	scope = gl_req_scope(req, &n_scope);
	if ((rc = gl_apijson_window(req, resp, "7d", &win)) || (rc = gl_apijson_format(req, resp, &csv)) ||
	    (rc = idle_params(req, resp, &dim, &limit, &cap)))
		return rc;
	o = gl_xcalloc(1, sizeof *o);
	o->unobserved_include = cap.include;
	if ((rc = gl_req_store(req, &st, &err)) ||
	    (rc = gl_idle_read(st, dim, win.start_s, win.end_s, req->now_s, limit, &cap, scope, n_scope, &o->idle, &err)) ||
	    (rc = gl_accounting_capacity_cover(st, win.start_s, win.end_s, req->now_s, NULL, &o->cov, &err))) {
		idle_out_fini(o);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	/* known for the window only when its capacity data covers every day
	 * so far and every cluster that ran GPU jobs; else unallocated_idle
	 * is the known days' and clusters' alone */
	o->cap_known = o->idle.have_capacity && o->idle.n_fleet > 0 && o->cov.known == o->cov.days &&
		       o->cov.n_missing == 0;
	if ((rc = gl_apijson_dt_load(req, resp, &win, &o->dt))) {
		idle_out_fini(o);
		return rc;
	}
	o->win = win;
	o->minor = gl_cost_minor(req->cfg->currency);
	snprintf(o->agg, sizeof o->agg, "%s", dim);
	idle_send(resp, table, csv, o);
	return 0;
}
