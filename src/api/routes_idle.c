/* /v1/idle: allocated-but-idle GPU time per owner and the worst jobs,
 * unallocated idle capacity per cluster, partition and model, and the
 * share of fleet time wasted (the figures: include/gl/idle.h). */
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/idle.h"
#include "gl/routes.h"
#include "gl/store.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void csv_allocated(struct gl_strbuf *o, const char *dim, const struct gl_idle *idle, int minor)
{
	gl_apijson_csv_header(o, (const char *const[]){dim, "idle_gpu_seconds", "busy_gpu_seconds",
						       "observed_gpu_seconds", "idle_cost", "unpriced_jobs", NULL});
	for (size_t i = 0; i < idle->n_owners; i++) {
		const struct gl_idle_owner *w = &idle->owners[i];
		gl_csv_field(o, w->key ? w->key : "");
		gl_csv_f8(o, w->idle_gpu_s);
		gl_csv_f8(o, w->busy_gpu_s);
		gl_csv_f8(o, w->observed_gpu_s);
		gl_apijson_csv_money(o, w->idle_micros, w->idle_micros_null, minor);
		gl_apijson_csv_int(o, w->unpriced_jobs, 0);
		gl_csv_end(o);
	}
}

static void csv_top_jobs(struct gl_strbuf *o, const struct gl_idle *idle, int minor)
{
	gl_apijson_csv_header(o, (const char *const[]){"cluster", "job_id", "owner", "user", "gpus", "gpu_model", "state",
						       "idle_gpu_seconds", "busy_gpu_seconds", "idle_cost", "from", "to",
						       NULL});
	for (size_t i = 0; i < idle->n_jobs; i++) {
		const struct gl_idle_job *j = &idle->jobs[i];
		const char *text[] = {j->cluster, j->job_id, j->owner, j->user_name};
		for (size_t k = 0; k < GL_ARRAY_LEN(text); k++)
			gl_csv_field(o, text[k] ? text[k] : "");
		gl_apijson_csv_milli(o, j->gpu_milli);
		gl_csv_field(o, j->gpu_model ? j->gpu_model : "unknown");
		gl_csv_field(o, j->state ? j->state : "");
		gl_csv_f8(o, j->idle_gpu_s);
		gl_csv_f8(o, j->busy_gpu_s);
		gl_apijson_csv_money(o, j->idle_micros, j->idle_micros_null, minor);
		gl_apijson_csv_time(o, j->from_s);
		gl_apijson_csv_time(o, j->to_s);
		gl_csv_end(o);
	}
}

/* Unknown capacity (no fleet rows): a header only. */
static void csv_unallocated(struct gl_strbuf *o, const struct gl_idle *idle, int minor)
{
	gl_apijson_csv_header(o, (const char *const[]){"cluster", "partition", "gpu_model", "reported_gpu_seconds",
						       "unavailable_gpu_seconds", "allocated_gpu_seconds",
						       "idle_gpu_seconds", "overallocated_gpu_seconds", "idle_cost", NULL});
	for (size_t i = 0; i < idle->n_fleet; i++) {
		const struct gl_idle_fleet *f = &idle->fleet[i];
		const int64_t secs[] = {f->reported_s, f->unavailable_s, f->allocated_s, f->idle_s, f->over_s};
		gl_csv_field(o, f->cluster);
		gl_csv_field(o, f->partition);
		gl_csv_field(o, f->gpu_model);
		for (size_t k = 0; k < GL_ARRAY_LEN(secs); k++)
			gl_apijson_csv_int(o, secs[k], 0);
		gl_apijson_csv_money(o, f->idle_micros, f->idle_micros_null, minor);
		gl_csv_end(o);
	}
}

/* One of the three tables as CSV, the columns of the JSON objects in order
 * (the owner key named by its dimension); costs in currency units with the
 * currency's minor decimals. The JSON root's coverage, which no row holds,
 * goes in headers. */
static void idle_csv(struct gl_resp *resp, const char *table, const char *dim, const struct gl_idle *idle,
		     const struct gl_acct_cover *cov, int cap_known, int minor)
{
	if (!strcmp(table, "allocated")) {
		csv_allocated(&resp->body, dim, idle, minor);
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("idle_allocated.csv"));
	} else if (!strcmp(table, "top_jobs")) {
		csv_top_jobs(&resp->body, idle, minor);
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("idle_top_jobs.csv"));
	} else {
		csv_unallocated(&resp->body, idle, minor);
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("idle_unallocated.csv"));
	}
	gl_apijson_add_header(resp, "X-Capacity-Known", cap_known ? "true" : "false");
	gl_apijson_add_header_num(resp, "X-Capacity-Days-Known", (long long)cov->known);
	gl_apijson_add_header_num(resp, "X-Capacity-Days", (long long)cov->days);
	gl_apijson_add_header_num(resp, "X-Capacity-Clusters-Unknown", (long long)cov->n_missing);
}

static cJSON *job_json(const struct gl_idle_job *j)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "cluster", j->cluster ? j->cluster : "");
	cJSON_AddStringToObject(o, "job_id", j->job_id ? j->job_id : "");
	cJSON_AddStringToObject(o, "owner", j->owner ? j->owner : "");
	cJSON_AddStringToObject(o, "user", j->user_name ? j->user_name : "");
	cJSON_AddNumberToObject(o, "gpus", (double)j->gpu_milli / 1000.0);
	cJSON_AddStringToObject(o, "gpu_model", j->gpu_model ? j->gpu_model : "unknown");
	cJSON_AddStringToObject(o, "state", j->state ? j->state : "");
	cJSON_AddNumberToObject(o, "idle_gpu_seconds", j->idle_gpu_s);
	cJSON_AddNumberToObject(o, "busy_gpu_seconds", j->busy_gpu_s);
	gl_apijson_add_int(o, "idle_cost_micros", j->idle_micros, j->idle_micros_null);
	gl_apijson_add_time(o, "from", j->from_s);
	gl_apijson_add_time(o, "to", j->to_s);
	return o;
}

static cJSON *fleet_json(const struct gl_idle_fleet *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "cluster", f->cluster);
	cJSON_AddStringToObject(o, "partition", f->partition);
	cJSON_AddStringToObject(o, "gpu_model", f->gpu_model);
	cJSON_AddNumberToObject(o, "reported_gpu_seconds", (double)f->reported_s);
	cJSON_AddNumberToObject(o, "unavailable_gpu_seconds", (double)f->unavailable_s);
	cJSON_AddNumberToObject(o, "allocated_gpu_seconds", (double)f->allocated_s);
	cJSON_AddNumberToObject(o, "idle_gpu_seconds", (double)f->idle_s);
	cJSON_AddNumberToObject(o, "overallocated_gpu_seconds", (double)f->over_s);
	gl_apijson_add_int(o, "idle_cost_micros", f->idle_micros, f->idle_micros_null);
	return o;
}

static cJSON *idle_json(const struct gl_window *win, const char *dim, const struct gl_idle *idle,
			const struct gl_acct_cover *cov, int cap_known)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	double alloc_idle_total = 0, unalloc_idle_total = 0, reported_total = 0;

	gl_apijson_add_window(root, "window", win);
	cJSON_AddStringToObject(root, "aggregate", dim);
	arr = cJSON_AddArrayToObject(root, "allocated_idle");
	for (size_t i = 0; i < idle->n_owners; i++) {
		const struct gl_idle_owner *w = &idle->owners[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "key", w->key ? w->key : "");
		cJSON_AddNumberToObject(o, "idle_gpu_seconds", w->idle_gpu_s);
		cJSON_AddNumberToObject(o, "busy_gpu_seconds", w->busy_gpu_s);
		cJSON_AddNumberToObject(o, "observed_gpu_seconds", w->observed_gpu_s);
		gl_apijson_add_int(o, "idle_cost_micros", w->idle_micros, w->idle_micros_null);
		cJSON_AddNumberToObject(o, "unpriced_jobs", (double)w->unpriced_jobs);
		alloc_idle_total += w->idle_gpu_s;
		cJSON_AddItemToArray(arr, o);
	}
	arr = cJSON_AddArrayToObject(root, "top_jobs");
	for (size_t i = 0; i < idle->n_jobs; i++)
		cJSON_AddItemToArray(arr, job_json(&idle->jobs[i]));
	arr = cJSON_AddArrayToObject(root, "unallocated_idle");
	for (size_t i = 0; i < idle->n_fleet; i++) {
		cJSON_AddItemToArray(arr, fleet_json(&idle->fleet[i]));
		unalloc_idle_total += (double)idle->fleet[i].idle_s;
		reported_total += (double)idle->fleet[i].reported_s;
	}
	cJSON_AddBoolToObject(root, "capacity_known", cap_known);
	cJSON_AddNumberToObject(root, "capacity_days_known", (double)cov->known);
	cJSON_AddNumberToObject(root, "capacity_days", (double)cov->days);
	arr = cJSON_AddArrayToObject(root, "capacity_clusters_unknown");
	for (size_t i = 0; i < cov->n_missing; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(cov->missing[i]));
	/* over the clusters with capacity data only */
	if (reported_total > 0)
		cJSON_AddNumberToObject(root, "wasted_fraction", (alloc_idle_total + unalloc_idle_total) / reported_total);
	else
		cJSON_AddNullToObject(root, "wasted_fraction");
	return root;
}

/* aggregate, limit and table, each checked (400 naming it). */
static int idle_params(struct gl_req *req, struct gl_resp *resp, const char **dim, long *limit)
{
	const char *agg = gl_req_param(req, "aggregate"), *lim = gl_req_param(req, "limit"),
		   *table = gl_req_param(req, "table");
	/* three tables do not fit one CSV: table= picks one (JSON has them all) */
	if (table && strcmp(table, "allocated") && strcmp(table, "top_jobs") && strcmp(table, "unallocated"))
		return gl_resp_error(resp, GL_EINVAL, "table", "table: '%s' is not allocated, top_jobs or unallocated",
				     table);
	*dim = agg ? agg : "team";
	if (!gl_idle_dim_valid(*dim))
		return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: one dimension (team, project, cost_center, "
								   "user, account, cluster, partition, qos, namespace, gpu_model)");
	*limit = 20;
	if (lim) {
		long long x = 0;
		if (gl_apijson_digits(lim, &x) || x < 1 || x > 1000)
			return gl_resp_error(resp, GL_EINVAL, "limit", "limit: must be between 1 and 1000");
		*limit = (long)x;
	}
	return 0;
}

int gl_route_idle(struct gl_req *req, struct gl_resp *resp)
{
	const char *table = gl_req_param(req, "table"), *dim = NULL;
	struct gl_window win;
	struct gl_err err = {0};
	struct gl_idle idle = {0};
	struct gl_acct_cover cov = {0};
	struct gl_store *st;
	long limit;
	int rc = 0, cap_known, csv;

	if ((rc = gl_apijson_window(req, resp, "7d", &win)) || (rc = gl_apijson_format(req, resp, &csv)) ||
	    (rc = idle_params(req, resp, &dim, &limit)))
		return rc;
	if ((rc = gl_req_store(req, &st, &err)) ||
	    (rc = gl_idle_read(st, dim, win.start_s, win.end_s, req->now_s, limit, &idle, &err)) ||
	    (rc = gl_acct_capacity_cover(st, win.start_s, win.end_s, req->now_s, NULL, &cov, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
		goto out;
	}
	/* known for the window only when its capacity data covers every day
	 * so far and every cluster that ran GPU jobs; else unallocated_idle
	 * is the known days' and clusters' alone */
	cap_known = idle.have_capacity && idle.n_fleet > 0 && cov.known == cov.days && cov.n_missing == 0;
	if (csv) {
		if (!(rc = gl_apijson_data_through(req, resp, NULL, &win)))
			idle_csv(resp, table ? table : "allocated", dim, &idle, &cov, cap_known,
				 gl_money_minor(req->cfg->currency));
	} else {
		cJSON *root = idle_json(&win, dim, &idle, &cov, cap_known);
		if (!(rc = gl_apijson_data_through(req, resp, root, &win)))
			gl_apijson_put(resp, root);
		cJSON_Delete(root);
	}
out:
	gl_acct_cover_fini(&cov);
	gl_idle_fini(&idle);
	return rc;
}
