/* /v1/queue: queue waits of GPU jobs that started in the window, and the
 * pending demand now. */
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/auth.h"
#include "gl/csv.h"
#include "gl/db.h"
#include "gl/routes.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A GPU-count dimension on top of the chargeback ones. */
static const char *queue_dim_sql(const char *dim)
{
	if (!strcmp(dim, "gpus"))
		return "trim_scale(greatest(" GL_JOB_GPUS_SQL("k") ", k.req_gpu_micro) / 1000000.0)::text";
	return gl_acct_dim_sql(dim);
}

static const char queue_cte[] =
	"WITH k AS ("
	" SELECT jb.*, c.name AS cluster, " GL_JOB_MODEL_SQL("jb") " AS gpu_model, ow.team, ow.project, ow.cost_center"
	" FROM jobs jb JOIN clusters c USING (cluster_id)"
	" LEFT JOIN LATERAL gl_owner(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"  jb.tags, coalesce(jb.start_at, jb.submit_at)) ow ON true"
	" WHERE (jb.gpu_milli > 0 OR jb.req_gpu_milli > 0) AND %s"
	")";

int gl_route_queue(struct gl_req *req, struct gl_resp *resp)
{
	const char *agg = gl_req_param(req, "aggregate"), *fmt = gl_req_param(req, "format");
	struct gl_window win;
	struct gl_err err = {0};
	struct gl_strbuf sql = GL_STRBUF_INIT, cond = GL_STRBUF_INIT;
	const char *dim = agg ? agg : "partition", *expr;
	char a[24], b[24], now[24];
	PGconn *c;
	PGresult *r = NULL, *p = NULL;
	cJSON *root = NULL, *items, *pend;
	int rc = 0, csv = fmt && !strcmp(fmt, "csv");

	if ((rc = gl_apijson_window(req, resp, "7d", &win)))
		return rc;
	if (strchr(dim, ',') || !(expr = queue_dim_sql(dim)))
		return gl_resp_error(resp, GL_EINVAL, "aggregate",
				     "aggregate: one of partition, team, project, cost_center, user, account, cluster, qos, "
				     "namespace, gpu_model, gpus");
	/* waits, job counts and GPUs per user or account are per-person usage:
	 * finance and up, as on /v1/chargeback, /v1/idle and /v1/forecast */
	if ((!strcmp(dim, "user") || !strcmp(dim, "account")) && req->auth &&
	    !gl_auth_role_allows(req->auth->role, "finance"))
		return gl_resp_error(resp, GL_EPERM, "aggregate", "aggregate=%s needs role finance or admin", dim);
	if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv"))
		return gl_resp_error(resp, GL_EINVAL, "format", "format: '%s' is not json or csv", fmt);
	snprintf(a, sizeof a, "%lld", (long long)win.start_s);
	snprintf(b, sizeof b, "%lld", (long long)win.end_s);
	snprintf(now, sizeof now, "%lld", (long long)req->now_s);
	if ((rc = gl_req_db(req, &c, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
		goto out;
	}
	/* waits of jobs that started in the window */
	gl_strbuf_printf(&cond, "jb.start_at >= to_timestamp($1) AND jb.start_at < to_timestamp($2)");
	gl_strbuf_printf(&sql, queue_cte, cond.p);
	gl_strbuf_printf(&sql,
			 " SELECT %s AS key, count(*),"
			 " percentile_disc(0.5) WITHIN GROUP (ORDER BY k.queue_wait_s),"
			 " percentile_disc(0.9) WITHIN GROUP (ORDER BY k.queue_wait_s),"
			 " percentile_disc(0.99) WITHIN GROUP (ORDER BY k.queue_wait_s),"
			 " max(k.queue_wait_s), round(avg(k.queue_wait_s), 1),"
			 " percentile_disc(0.5) WITHIN GROUP (ORDER BY k.eligible_wait_s),"
			 " sum(" GL_JOB_GPUS_SQL("k") ")"
			 " FROM k GROUP BY 1 ORDER BY 1",
			 expr);
	if ((rc = gl_db_query(c, sql.p, 2, (const char *[]){a, b}, &r, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
		goto out;
	}
	/* pending demand now: queued jobs and how long they have waited */
	gl_strbuf_reset(&sql);
	gl_strbuf_printf(&sql, queue_cte, "jb.start_at IS NULL AND jb.end_at IS NULL AND jb.submit_at <= to_timestamp($1)");
	gl_strbuf_printf(&sql,
			 /* a pending array row stands for all its tasks, each asking for req_gpu_micro */
			 " SELECT %s AS key, sum(coalesce(k.array_tasks, 1)),"
			 " sum(k.req_gpu_micro * coalesce(k.array_tasks, 1)),"
			 " max($1::bigint - extract(epoch FROM k.submit_at)::bigint), bool_or(k.array_tasks_partial)"
			 " FROM k GROUP BY 1 ORDER BY 1",
			 expr);
	if ((rc = gl_db_query(c, sql.p, 1, (const char *[]){now}, &p, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
		goto out;
	}
	if (csv) {
		struct gl_strbuf *o = &resp->body;
		/* the JSON item's fields, in order (gpus_started was left out) */
		static const char *const hdr[] = {"jobs", "wait_p50_s", "wait_p90_s", "wait_p99_s", "wait_max_s",
						  "wait_mean_s", "eligible_wait_p50_s", "gpus_started"};
		gl_csv_field(o, dim);
		for (size_t i = 0; i < GL_ARRAY_LEN(hdr); i++)
			gl_csv_field(o, hdr[i]);
		gl_csv_end(o);
		for (int i = 0; i < PQntuples(r); i++) {
			gl_csv_field(o, PQgetvalue(r, i, 0));
			for (int k = 1; k <= 7; k++)
				gl_csv_raw(o, PQgetvalue(r, i, k));
			gl_apijson_csv_micro(o, atoll(PQgetvalue(r, i, 8)));
			gl_csv_end(o);
		}
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("queue.csv"));
		goto out;
	}
	root = cJSON_CreateObject();
	gl_apijson_add_window(root, "window", &win);
	cJSON_AddStringToObject(root, "aggregate", dim);
	items = cJSON_AddArrayToObject(root, "items");
	for (int i = 0; i < PQntuples(r); i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "key", PQgetvalue(r, i, 0));
		cJSON_AddNumberToObject(o, "jobs", atof(PQgetvalue(r, i, 1)));
		cJSON_AddNumberToObject(o, "wait_p50_s", atof(PQgetvalue(r, i, 2)));
		cJSON_AddNumberToObject(o, "wait_p90_s", atof(PQgetvalue(r, i, 3)));
		cJSON_AddNumberToObject(o, "wait_p99_s", atof(PQgetvalue(r, i, 4)));
		cJSON_AddNumberToObject(o, "wait_max_s", atof(PQgetvalue(r, i, 5)));
		cJSON_AddNumberToObject(o, "wait_mean_s", atof(PQgetvalue(r, i, 6)));
		gl_apijson_add_col_num(o, "eligible_wait_p50_s", r, i, 7);
		cJSON_AddNumberToObject(o, "gpus_started", atof(PQgetvalue(r, i, 8)) / (double)GL_GPU_MICRO);
		cJSON_AddItemToArray(items, o);
	}
	pend = cJSON_AddArrayToObject(root, "pending");
	for (int i = 0; i < PQntuples(p); i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "key", PQgetvalue(p, i, 0));
		cJSON_AddNumberToObject(o, "jobs", atof(PQgetvalue(p, i, 1)));
		cJSON_AddNumberToObject(o, "gpus_requested", atof(PQgetvalue(p, i, 2)) / (double)GL_GPU_MICRO);
		cJSON_AddNumberToObject(o, "longest_wait_s", atof(PQgetvalue(p, i, 3)));
		/* an array's range list cut short by sacct: jobs and GPUs are at least these */
		cJSON_AddBoolToObject(o, "lower_bound", PQgetvalue(p, i, 4)[0] == 't');
		cJSON_AddItemToArray(pend, o);
	}
	gl_apijson_put(resp, root);
out:
	cJSON_Delete(root);
	PQclear(r);
	PQclear(p);
	gl_strbuf_fini(&sql);
	gl_strbuf_fini(&cond);
	return rc;
}
