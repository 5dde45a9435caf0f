/* /v1/queue: queue waits of GPU jobs that started in the window, and the
 * pending demand now. */
#include "gl/apijson.h"
#include "gl/auth.h"
#include "gl/csv.h"
#include "gl/queue.h"
#include "gl/routes.h"
#include "gl/store.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The waits as CSV: the JSON item's fields, in order (gpus_started was
 * left out of the header). A figure no job had is an empty cell. */
static void queue_csv(struct gl_resp *resp, const char *dim, const struct gl_queue *q)
{
	static const char *const hdr[] = {"jobs", "wait_p50_s", "wait_p90_s", "wait_p99_s", "wait_max_s",
					  "wait_mean_s", "eligible_wait_p50_s", "gpus_started"};
	struct gl_strbuf *o = &resp->body;
	gl_csv_field(o, dim);
	for (size_t i = 0; i < GL_ARRAY_LEN(hdr); i++)
		gl_csv_field(o, hdr[i]);
	gl_csv_end(o);
	for (size_t i = 0; i < q->n_waits; i++) {
		const struct gl_queue_wait *w = &q->waits[i];
		char mean[32] = "";
		if (!w->mean_ds_null)
			snprintf(mean, sizeof mean, "%lld.%lld", (long long)(w->mean_ds / 10), (long long)(w->mean_ds % 10));
		gl_csv_field(o, w->key ? w->key : "");
		gl_apijson_csv_int(o, w->jobs, 0);
		gl_apijson_csv_int(o, w->p50_s, w->p50_s_null);
		gl_apijson_csv_int(o, w->p90_s, w->p90_s_null);
		gl_apijson_csv_int(o, w->p99_s, w->p99_s_null);
		gl_apijson_csv_int(o, w->max_s, w->max_s_null);
		gl_csv_raw(o, mean);
		gl_apijson_csv_int(o, w->eligible_p50_s, w->eligible_p50_s_null);
		gl_apijson_csv_micro(o, w->gpu_micro);
		gl_csv_end(o);
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("queue.csv"));
}

/* A wait no job had reads 0 here (it always has: a null only in the CSV). */
static cJSON *wait_json(const struct gl_queue_wait *w)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "key", w->key ? w->key : "");
	cJSON_AddNumberToObject(o, "jobs", (double)w->jobs);
	cJSON_AddNumberToObject(o, "wait_p50_s", (double)w->p50_s);
	cJSON_AddNumberToObject(o, "wait_p90_s", (double)w->p90_s);
	cJSON_AddNumberToObject(o, "wait_p99_s", (double)w->p99_s);
	cJSON_AddNumberToObject(o, "wait_max_s", (double)w->max_s);
	cJSON_AddNumberToObject(o, "wait_mean_s", (double)w->mean_ds / 10.0);
	gl_apijson_add_int(o, "eligible_wait_p50_s", w->eligible_p50_s, w->eligible_p50_s_null);
	cJSON_AddNumberToObject(o, "gpus_started", (double)w->gpu_micro / (double)GL_GPU_MICRO);
	return o;
}

static cJSON *queue_json(const struct gl_window *win, const char *dim, const struct gl_queue *q)
{
	cJSON *root = cJSON_CreateObject(), *items, *pend;
	gl_apijson_add_window(root, "window", win);
	cJSON_AddStringToObject(root, "aggregate", dim);
	items = cJSON_AddArrayToObject(root, "items");
	for (size_t i = 0; i < q->n_waits; i++)
		cJSON_AddItemToArray(items, wait_json(&q->waits[i]));
	pend = cJSON_AddArrayToObject(root, "pending");
	for (size_t i = 0; i < q->n_pending; i++) {
		const struct gl_queue_pending *p = &q->pending[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "key", p->key ? p->key : "");
		cJSON_AddNumberToObject(o, "jobs", (double)p->jobs);
		cJSON_AddNumberToObject(o, "gpus_requested", (double)p->gpu_micro / (double)GL_GPU_MICRO);
		cJSON_AddNumberToObject(o, "longest_wait_s", (double)p->longest_wait_s);
		cJSON_AddNumberToObject(o, "unobserved_s", (double)p->unobserved_s);
		/* an array's range list cut short by sacct: jobs and GPUs are at least these */
		cJSON_AddBoolToObject(o, "lower_bound", p->lower_bound);
		cJSON_AddItemToArray(pend, o);
	}
	return root;
}

int gl_route_queue(struct gl_req *req, struct gl_resp *resp)
{
	const char *agg = gl_req_param(req, "aggregate"), *fmt = gl_req_param(req, "format");
	const char *dim = agg ? agg : "partition";
	struct gl_window win;
	struct gl_err err = {0};
	struct gl_queue q = {0};
	struct gl_store *st;
	const struct gl_tokens_scope *scope;
	size_t n_scope;
	int rc = 0, csv = fmt && !strcmp(fmt, "csv");

	if ((rc = gl_apijson_window(req, resp, "7d", &win)))
		return rc;
	if (!gl_queue_dim_valid(dim))
		return gl_resp_error(resp, GL_EINVAL, "aggregate",
				     "aggregate: one of partition, team, project, cost_center, user, account, cluster, qos, "
				     "namespace, gpu_model, workload_type, gpus");
	/* waits, job counts and GPUs per user or account are per-person usage:
	 * finance and up, as on /v1/chargeback, /v1/idle and /v1/forecast */
	if ((!strcmp(dim, "user") || !strcmp(dim, "account")) && req->auth &&
	    !gl_auth_role_allows(req->auth->role, "finance"))
		return gl_resp_error(resp, GL_EPERM, "aggregate", "aggregate=%s needs role finance or admin", dim);
	if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv"))
		return gl_resp_error(resp, GL_EINVAL, "format", "format: '%s' is not json or csv", fmt);
	/* a scoped token: the waits of its own jobs, by any dimension (a
	 * partition's row is then its jobs' there, never the partition's) */
	scope = gl_req_scope(req, &n_scope);
	if ((rc = gl_req_store(req, &st, &err)) ||
	    (rc = gl_queue_read(st, dim, win.start_s, win.end_s, req->now_s, scope, n_scope, &q, &err))) {
		gl_queue_fini(&q);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	if (csv) {
		if (!(rc = gl_apijson_data_through(req, resp, NULL, &win)))
			queue_csv(resp, dim, &q);
	} else {
		cJSON *root = queue_json(&win, dim, &q);
		if (!(rc = gl_apijson_data_through(req, resp, root, &win)))
			gl_apijson_put(resp, root);
		cJSON_Delete(root);
	}
	gl_queue_fini(&q);
	return rc;
}
