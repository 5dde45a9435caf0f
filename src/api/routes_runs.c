/* /v1/runs and /v1/runs/{id}: training runs (docs/runs.md), JSON or CSV.
 * Parameters -> the store reads the window's jobs with the ledger's
 * per-job figures and the domain groups them -> render. */
#include "gl/apijson.h"
#include "gl/config.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/routes.h"
#include "gl/rundb.h"
#include "gl/runs.h"
#include "gl/strbuf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* aggregate= values and the run field each reads (the run's first job's) */
static const char *const agg_names[] = {"user", "account", "cluster", "partition", "namespace", "kind", NULL};

struct runs_params {
	struct gl_window window;
	int agg;            /* index into agg_names, -1: one item per run */
	const char *state;  /* NULL: any */
	int csv;
};

static int parse_params(struct gl_req *req, struct gl_resp *resp, struct runs_params *p, int detail)
{
	const char *agg = gl_req_param(req, "aggregate");
	int rc;

	memset(p, 0, sizeof *p);
	p->agg = -1;
	if ((rc = gl_apijson_window(req, resp, "month", &p->window)))
		return rc;
	if (!detail && agg && strcmp(agg, "run")) {
		for (int i = 0; agg_names[i]; i++)
			if (!strcmp(agg, agg_names[i]))
				p->agg = i;
		if (p->agg < 0)
			return gl_resp_error(resp, GL_EINVAL, "aggregate",
					     "aggregate: '%s' is not one of run, user, account, cluster, partition, namespace, kind",
					     agg);
	}
	p->state = detail ? NULL : gl_req_param(req, "state");
	if (p->state && (!*p->state || strspn(p->state, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_") !=
						       strlen(p->state)))
		return gl_resp_error(resp, GL_EINVAL, "state",
				     "state: '%s' is not a job state (COMPLETED, FAILED, RUNNING, PENDING, ...)", p->state);
	return gl_apijson_format(req, resp, &p->csv);
}

/* The run's state, its first word, equals state= (any case). */
static int state_matches(const struct gl_runs_run *r, const char *state)
{
	size_t n = strcspn(r->state, " ");
	return !state || (strlen(state) == n && !strncasecmp(r->state, state, n));
}

static const char *agg_value(const struct gl_runs_run *r, const struct gl_runs_job *j, int agg)
{
	const char *v[] = {j->user_name, j->account, j->cluster, j->partition, j->namespace_, r->kind};
	return v[agg] ? v[agg] : "";
}

static void add_money(cJSON *o, const char *k, int64_t micros, int minor)
{
	char km[64], buf[48];
	snprintf(km, sizeof km, "%s_micros", k);
	cJSON_AddNumberToObject(o, km, (double)micros);
	gl_cost_format(micros, minor, buf, sizeof buf);
	cJSON_AddStringToObject(o, k, buf);
}

/* The figures a run and a group of runs share. */
static void add_figures(cJSON *o, const struct gl_runs_run *r, int minor)
{
	cJSON_AddNumberToObject(o, "attempts", (double)r->attempts);
	cJSON_AddNumberToObject(o, "jobs", (double)r->jobs);
	cJSON_AddNumberToObject(o, "gpu_seconds", (double)r->gpu_s);
	cJSON_AddNumberToObject(o, "unpriced_gpu_seconds", (double)r->unpriced_s);
	cJSON_AddNumberToObject(o, "unobserved_gpu_seconds", (double)r->unobserved_s);
	add_money(o, "cost", r->cost_micros, minor);
	add_money(o, "failed_attempts_cost", r->failed_cost_micros, minor);
	cJSON_AddNumberToObject(o, "failed_attempts_gpu_seconds", (double)r->failed_gpu_s);
	gl_apijson_add_f8(o, "busy_gpu_seconds", r->busy_s, r->observed_s <= 0);
	gl_apijson_add_f8(o, "idle_in_allocation_gpu_seconds", r->idle_s, r->observed_s <= 0);
	cJSON_AddNumberToObject(o, "queue_seconds", (double)r->queue_s);
}

static cJSON *run_json(const struct gl_runs_run *r, const struct gl_rundb *db, int minor)
{
	const struct gl_runs_job *j = &db->jobs[r->first];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", r->id);
	cJSON_AddStringToObject(o, "key", r->key);
	cJSON_AddStringToObject(o, "kind", r->kind);
	gl_apijson_add_str(o, "cluster", j->cluster);
	gl_apijson_add_str(o, "user", j->user_name);
	gl_apijson_add_str(o, "account", j->account);
	gl_apijson_add_str(o, "namespace", j->namespace_);
	gl_apijson_add_str(o, "name", j->name);
	gl_apijson_add_time(o, "first_submit", r->first_submit_s);
	gl_apijson_add_time(o, "last_end", r->last_end_s);
	cJSON_AddStringToObject(o, "state", r->state);
	add_figures(o, r, minor);
	return o;
}

struct agg_ref {
	const char *v;
	const struct gl_runs_run *r;
};

static int cmp_ref(const void *a, const void *b)
{
	return strcmp(((const struct agg_ref *)a)->v, ((const struct agg_ref *)b)->v);
}

static void add_run(struct gl_runs_run *g, const struct gl_runs_run *r)
{
	g->attempts += r->attempts;
	g->jobs += r->jobs;
	g->gpu_s += r->gpu_s;
	g->unpriced_s += r->unpriced_s;
	g->unobserved_s += r->unobserved_s;
	g->cost_micros += r->cost_micros;
	g->failed_cost_micros += r->failed_cost_micros;
	g->failed_gpu_s += r->failed_gpu_s;
	g->busy_s += r->busy_s;
	g->idle_s += r->idle_s;
	g->observed_s += r->observed_s;
	g->queue_s += r->queue_s;
}

/* Runs summed by the aggregate's value, in the order of the values (a
 * sort: 250,000 runs of 2,000 users looked up one by one were half a
 * billion comparisons). */
static size_t group_runs(const struct gl_rundb *db, const struct runs_params *p, struct gl_runs_run **out,
			 const char ***names, int64_t **counts)
{
	struct agg_ref *ref = gl_xcalloc(db->runs.n + 1, sizeof *ref);
	size_t n = 0, k = 0;
	*out = gl_xcalloc(db->runs.n + 1, sizeof **out);
	*names = gl_xcalloc(db->runs.n + 1, sizeof **names);
	*counts = gl_xcalloc(db->runs.n + 1, sizeof **counts);
	for (size_t i = 0; i < db->runs.n; i++) {
		const struct gl_runs_run *r = &db->runs.runs[i];
		if (state_matches(r, p->state))
			ref[k++] = (struct agg_ref){agg_value(r, &db->jobs[r->first], p->agg), r};
	}
	gl_qsort(ref, k, sizeof *ref, cmp_ref);
	for (size_t i = 0; i < k; i++) {
		if (!n || strcmp((*names)[n - 1], ref[i].v))
			(*names)[n++] = ref[i].v;
		(*counts)[n - 1] += db->n_runs ? db->n_runs[ref[i].r - db->runs.runs] : 1;
		add_run(&(*out)[n - 1], ref[i].r);
	}
	free(ref);
	return n;
}

static void render_json(struct gl_resp *resp, const struct runs_params *p, const struct gl_rundb *db, const char *currency)
{
	cJSON *root = cJSON_CreateObject(), *items;
	int minor = gl_cost_minor(currency);
	size_t count = 0;
	gl_apijson_add_window(root, "window", &p->window);
	cJSON_AddStringToObject(root, "aggregate", p->agg < 0 ? "run" : agg_names[p->agg]);
	cJSON_AddStringToObject(root, "currency", currency);
	items = cJSON_AddArrayToObject(root, p->agg < 0 ? "runs" : "items");
	if (p->agg < 0) {
		for (size_t i = 0; i < db->runs.n; i++)
			if (state_matches(&db->runs.runs[i], p->state)) {
				cJSON_AddItemToArray(items, run_json(&db->runs.runs[i], db, minor));
				count++;
			}
	} else {
		struct gl_runs_run *g;
		const char **names;
		int64_t *counts;
		count = group_runs(db, p, &g, &names, &counts);
		for (size_t i = 0; i < count; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, agg_names[p->agg], names[i]);
			cJSON_AddNumberToObject(o, "runs", (double)counts[i]);
			add_figures(o, &g[i], minor);
			cJSON_AddItemToArray(items, o);
		}
		free(g);
		free(names);
		free(counts);
	}
	cJSON_AddNumberToObject(root, "count", (double)count);
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
}

static const char *const csv_cols[] = {"attempts", "jobs", "gpu_seconds", "unpriced_gpu_seconds",
				       "unobserved_gpu_seconds", "cost", "failed_attempts_cost",
				       "failed_attempts_gpu_seconds", "busy_gpu_seconds",
				       "idle_in_allocation_gpu_seconds", "queue_seconds", NULL};

static void csv_figures(struct gl_strbuf *o, const struct gl_runs_run *r, int minor)
{
	gl_apijson_csv_int(o, r->attempts, 0);
	gl_apijson_csv_int(o, r->jobs, 0);
	gl_apijson_csv_int(o, r->gpu_s, 0);
	gl_apijson_csv_int(o, r->unpriced_s, 0);
	gl_apijson_csv_int(o, r->unobserved_s, 0);
	gl_apijson_csv_money(o, r->cost_micros, 0, minor);
	gl_apijson_csv_money(o, r->failed_cost_micros, 0, minor);
	gl_apijson_csv_int(o, r->failed_gpu_s, 0);
	gl_apijson_csv_f8(o, r->busy_s, r->observed_s <= 0);
	gl_apijson_csv_f8(o, r->idle_s, r->observed_s <= 0);
	gl_apijson_csv_int(o, r->queue_s, 0);
	gl_csv_end(o);
}

static void render_csv(struct gl_resp *resp, const struct runs_params *p, const struct gl_rundb *db, int minor)
{
	static const char *const run_head[] = {"id", "key", "kind", "cluster", "user", "account", "namespace", "name",
					       "first_submit", "last_end", "state", NULL};
	struct gl_strbuf *o = &resp->body;
	if (p->agg < 0) {
		for (size_t k = 0; run_head[k]; k++)
			gl_csv_field(o, run_head[k]);
		gl_apijson_csv_header(o, csv_cols);
		for (size_t i = 0; i < db->runs.n; i++) {
			const struct gl_runs_run *r = &db->runs.runs[i];
			const struct gl_runs_job *j = &db->jobs[r->first];
			const char *v[] = {r->id, r->key, r->kind, j->cluster, j->user_name, j->account, j->namespace_, j->name};
			if (!state_matches(r, p->state))
				continue;
			for (size_t k = 0; k < GL_ARRAY_LEN(v); k++)
				gl_csv_field(o, v[k] ? v[k] : "");
			gl_apijson_csv_time(o, r->first_submit_s);
			gl_apijson_csv_time(o, r->last_end_s);
			gl_csv_field(o, r->state);
			csv_figures(o, r, minor);
		}
	} else {
		struct gl_runs_run *g;
		const char **names;
		int64_t *counts;
		size_t n = group_runs(db, p, &g, &names, &counts);
		gl_csv_field(o, agg_names[p->agg]);
		gl_csv_field(o, "runs");
		gl_apijson_csv_header(o, csv_cols);
		for (size_t i = 0; i < n; i++) {
			gl_csv_field(o, names[i]);
			gl_apijson_csv_int(o, counts[i], 0);
			csv_figures(o, &g[i], minor);
		}
		free(g);
		free(names);
		free(counts);
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("runs.csv"));
}

/* The runs of the window, or -rc after the error answer: a built month's
 * as the rollup built them (sql/131) unless the runs' members are wanted,
 * else grouped from the jobs. */
static int load(struct gl_req *req, struct gl_resp *resp, const struct runs_params *p, int members, struct gl_rundb *db)
{
	static const char *const agg_cols[] = {"user_name", "account", "cluster", "partition", "namespace_", "kind"};
	struct gl_rundb_query q = {p->window.start_s, p->window.end_s, req->now_s, NULL, 0, NULL, 0,
				   p->agg < 0 ? NULL : agg_cols[p->agg], p->state};
	struct gl_runs_rule *rules;
	struct gl_err err = {0};
	struct gl_store *st;
	int rc, hit = 0;

	gl_config_run_rules(req->cfg, &rules, &q.n_rules);
	q.rules = rules;
	/* a scoped token sees the runs of its own jobs */
	q.scope = gl_req_scope(req, &q.n_scope);
	if ((rc = gl_req_store(req, &st, &err)) || (!members && (rc = gl_rundb_month(st, &q, db, &hit, &err))) ||
	    (!hit && (rc = gl_rundb_runs(st, &q, db, &err))))
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg[0] ? err.msg : "runs failed");
	else if (req->cfg->http_max_answer_lines > 0 && db->runs.n > (size_t)req->cfg->http_max_answer_lines && p->agg < 0)
		rc = gl_resp_error(resp, GL_EINVAL, "window",
				   "%zu runs in the window, more than server.max_answer_lines (%lld): ask for a shorter "
				   "window or an aggregate",
				   db->runs.n, (long long)req->cfg->http_max_answer_lines);
	free(rules);
	return rc;
}

int gl_route_runs(struct gl_req *req, struct gl_resp *resp)
{
	struct runs_params p;
	struct gl_rundb db = {0};
	int rc;

	if ((rc = parse_params(req, resp, &p, 0)) || (rc = load(req, resp, &p, 0, &db)))
		goto out;
	if (p.csv)
		render_csv(resp, &p, &db, gl_cost_minor(req->cfg->currency));
	else
		render_json(resp, &p, &db, req->cfg->currency);
out:
	gl_rundb_fini(&db);
	return rc;
}

static cJSON *job_json(const struct gl_runs_job *j, int minor)
{
	cJSON *o = cJSON_CreateObject();
	gl_apijson_add_str(o, "cluster", j->cluster);
	gl_apijson_add_str(o, "job_id", j->job_id);
	gl_apijson_add_str(o, "name", j->name);
	gl_apijson_add_str(o, "user", j->user_name);
	gl_apijson_add_str(o, "account", j->account);
	gl_apijson_add_str(o, "namespace", j->namespace_);
	gl_apijson_add_str(o, "state", j->state);
	cJSON_AddBoolToObject(o, "failed_attempt", gl_runs_attempt_failed(j->state));
	gl_apijson_add_time(o, "submit", j->submit_s);
	gl_apijson_add_time(o, "start", j->start_s);
	gl_apijson_add_time(o, "end", j->end_s);
	gl_apijson_add_int(o, "queue_seconds", j->queue_wait_s, j->queue_wait_s < 0);
	cJSON_AddNumberToObject(o, "gpu_seconds", (double)j->gpu_s);
	cJSON_AddNumberToObject(o, "unobserved_gpu_seconds", (double)j->unobserved_s);
	add_money(o, "cost", j->cost_micros, minor);
	gl_apijson_add_f8(o, "idle_in_allocation_gpu_seconds", j->idle_s, j->observed_s <= 0);
	return o;
}

int gl_route_run(struct gl_req *req, struct gl_resp *resp)
{
	const char *id = req->path + strlen("/v1/runs/");
	struct runs_params p;
	struct gl_rundb db = {0};
	const struct gl_runs_run *r = NULL;
	int minor = gl_cost_minor(req->cfg->currency), rc;

	/* a bad parameter is 400 whatever the id, as on every route */
	if ((rc = parse_params(req, resp, &p, 1)))
		goto out;
	if (strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16) {
		rc = gl_resp_error(resp, GL_ENOTFOUND, NULL, "no run '%s' (the ids are those of /v1/runs)", id);
		goto out;
	}
	if ((rc = load(req, resp, &p, 1, &db)))
		goto out;
	for (size_t i = 0; i < db.runs.n && !r; i++)
		if (!strcmp(db.runs.runs[i].id, id))
			r = &db.runs.runs[i];
	if (!r) {
		rc = gl_resp_error(resp, GL_ENOTFOUND, NULL, "no run '%s' with jobs in the window", id);
		goto out;
	}
	if (p.csv) {
		static const char *const head[] = {"job_id", "cluster", "state", "submit", "start", "end", "gpu_seconds",
						   "cost", "failed_attempt", NULL};
		gl_apijson_csv_header(&resp->body, head);
		for (size_t i = 0; i < r->n_members; i++) {
			const struct gl_runs_job *j = &db.jobs[r->members[i]];
			gl_csv_field(&resp->body, j->job_id ? j->job_id : "");
			gl_csv_field(&resp->body, j->cluster ? j->cluster : "");
			gl_csv_field(&resp->body, j->state ? j->state : "");
			gl_apijson_csv_time(&resp->body, j->submit_s);
			gl_apijson_csv_time(&resp->body, j->start_s);
			gl_apijson_csv_time(&resp->body, j->end_s);
			gl_apijson_csv_int(&resp->body, j->gpu_s, 0);
			gl_apijson_csv_money(&resp->body, j->cost_micros, 0, minor);
			gl_csv_field(&resp->body, gl_runs_attempt_failed(j->state) ? "true" : "false");
			gl_csv_end(&resp->body);
		}
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("run.csv"));
	} else {
		cJSON *root = run_json(r, &db, minor), *jobs;
		gl_apijson_add_window(root, "window", &p.window);
		cJSON_AddStringToObject(root, "currency", req->cfg->currency);
		jobs = cJSON_AddArrayToObject(root, "members");
		for (size_t i = 0; i < r->n_members; i++)
			cJSON_AddItemToArray(jobs, job_json(&db.jobs[r->members[i]], minor));
		gl_apijson_put(resp, root);
		cJSON_Delete(root);
	}
out:
	gl_rundb_fini(&db);
	return rc;
}
