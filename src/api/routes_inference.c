/* /v1/inference: cost per inference request and per token (JSON or CSV).
 * Parameters -> the store fills the domain's groups from the ledger and the
 * serving usage -> render. */
#include "gl/apijson.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/routes.h"
#include "gl/servingdb.h"
#include "gl/timeutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 4000

struct inf_params {
	struct gl_window window;
	enum gl_window_step step;
	struct gl_window *steps;
	size_t n_steps;
	const char *aggregate;
	enum gl_inference_agg agg;
	int csv;
};

static int parse_params(struct gl_req *req, struct gl_resp *resp, struct inf_params *p)
{
	const char *st = gl_req_param(req, "step");
	struct gl_err e = {0};
	int rc;

	memset(p, 0, sizeof *p);
	if ((rc = gl_apijson_window(req, resp, "month", &p->window)))
		return rc;
	if (gl_window_step_parse(st ? st : "none", &p->step, &e))
		return gl_resp_error(resp, GL_EINVAL, "step", "step: %s", e.msg);
	p->steps = gl_xcalloc(MAX_STEPS, sizeof *p->steps);
	if (gl_window_split(&p->window, p->step, p->steps, MAX_STEPS, &p->n_steps, &e))
		return gl_resp_error(resp, GL_EINVAL, "step", "step: %s in the window (at most %d)", e.msg, MAX_STEPS);
	p->aggregate = gl_req_param(req, "aggregate");
	if (!p->aggregate)
		p->aggregate = "model_name";
	if (!strcmp(p->aggregate, "endpoint"))
		p->agg = GL_INFERENCE_BY_ENDPOINT;
	else if (!strcmp(p->aggregate, "model_name"))
		p->agg = GL_INFERENCE_BY_MODEL;
	else if (gl_servingdb_job_dim(p->aggregate))
		p->agg = GL_INFERENCE_BY_JOB_DIM;
	else
		return gl_resp_error(resp, GL_EINVAL, "aggregate",
				     "aggregate: '%s' is not one of endpoint, model_name, team, project, cost_center, "
				     "namespace, cluster, gpu_model",
				     p->aggregate);
	return gl_apijson_format(req, resp, &p->csv);
}

static void add_money(cJSON *o, const char *k, int64_t micros, int minor)
{
	char buf[48];
	gl_cost_format(micros, minor, buf, sizeof buf);
	cJSON_AddStringToObject(o, k, buf);
}

static void add_ratio(cJSON *o, const char *k, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, v);
}

/* A price per unit: exact micro-units and the same at 6 decimals (a cent
 * is too coarse for the price of a token); null when nothing was served. */
static void add_per(cJSON *o, const char *k, int have, int64_t micros)
{
	char km[64];
	snprintf(km, sizeof km, "%s_micros", k);
	if (!have) {
		cJSON_AddNullToObject(o, km);
		cJSON_AddNullToObject(o, k);
		return;
	}
	cJSON_AddNumberToObject(o, km, (double)micros);
	add_money(o, k, micros, 6);
}

static const char *const ctr_keys[] = {"requests", "failed_requests", "prompt_tokens", "generated_tokens",
				       "inferences", "executions"};

static void add_group(cJSON *o, const struct gl_inference_group *g, int minor)
{
	int observed = g->observed_s > 0;
	for (int k = 0; k < GL_SERVEMETRICS__NCTR; k++)
		cJSON_AddNumberToObject(o, ctr_keys[k], (double)g->v[k]);
	cJSON_AddNumberToObject(o, "gpu_seconds", (double)g->gpu_s);
	cJSON_AddNumberToObject(o, "unpriced_gpu_seconds", (double)g->unpriced_s);
	cJSON_AddNumberToObject(o, "cost_micros", (double)g->cost_micros);
	add_money(o, "cost", g->cost_micros, minor);
	/* no exporter data is unknown, never 0 */
	if (observed) {
		cJSON_AddNumberToObject(o, "busy_gpu_seconds", (double)llround(g->busy_s));
		cJSON_AddNumberToObject(o, "idle_in_allocation_gpu_seconds", (double)llround(g->idle_s));
		cJSON_AddNumberToObject(o, "observed_gpu_seconds", (double)llround(g->observed_s));
		cJSON_AddNumberToObject(o, "idle_cost_micros", (double)g->idle_micros);
		add_money(o, "idle_cost", g->idle_micros, minor);
	} else {
		cJSON_AddNullToObject(o, "busy_gpu_seconds");
		cJSON_AddNullToObject(o, "idle_in_allocation_gpu_seconds");
		cJSON_AddNullToObject(o, "observed_gpu_seconds");
		cJSON_AddNullToObject(o, "idle_cost_micros");
		cJSON_AddNullToObject(o, "idle_cost");
	}
	add_ratio(o, "busy_share", g->busy_share);
	add_ratio(o, "idle_share", g->idle_share);
	add_per(o, "cost_per_1k_requests", g->have_per_1k_requests, g->per_1k_requests_micros);
	add_per(o, "cost_per_1m_prompt_tokens", g->have_per_1m_prompt, g->per_1m_prompt_micros);
	add_per(o, "cost_per_1m_generated_tokens", g->have_per_1m_generated, g->per_1m_generated_micros);
	add_ratio(o, "tokens_per_gpu_second", g->tokens_per_gpu_s);
	add_ratio(o, "generated_tokens_per_gpu_second", g->generated_per_gpu_s);
	add_ratio(o, "latency_p50_seconds", g->p50_s);
	add_ratio(o, "latency_p99_seconds", g->p99_s);
}

static cJSON *unattributed_json(const struct gl_inference_step *s)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < s->n_un; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "endpoint", s->un[i].endpoint);
		cJSON_AddStringToObject(o, "model_name", s->un[i].model);
		for (int k = 0; k < GL_SERVEMETRICS__NCTR; k++)
			cJSON_AddNumberToObject(o, ctr_keys[k], (double)s->un[i].v[k]);
		cJSON_AddStringToObject(o, "reason",
					"no pod or Slurm job of the ledger is known to have served these scrapes "
					"(not named, not ingested yet, or holding no GPU in the window)");
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

static cJSON *step_json(const struct inf_params *p, const struct gl_inference_step *s, int minor)
{
	cJSON *so = cJSON_CreateObject(), *items = cJSON_CreateArray(), *t;
	gl_apijson_add_time(so, "start", s->start_s);
	gl_apijson_add_time(so, "end", s->end_s);
	for (size_t j = 0; j < s->n; j++) {
		cJSON *o = cJSON_CreateObject(), *key = cJSON_AddObjectToObject(o, "key");
		cJSON_AddStringToObject(key, p->aggregate, s->groups[j].key);
		cJSON_AddStringToObject(o, "name", s->groups[j].key);
		add_group(o, &s->groups[j], minor);
		cJSON_AddItemToArray(items, o);
	}
	cJSON_AddItemToObject(so, "items", items);
	cJSON_AddItemToObject(so, "unattributed", unattributed_json(s));
	t = cJSON_AddObjectToObject(so, "totals");
	add_group(t, &s->total, minor);
	return so;
}

static void render_json(struct gl_resp *resp, const struct inf_params *p, const struct gl_inference *x,
			const struct gl_accounting_meta *meta, const char *currency)
{
	cJSON *root = cJSON_CreateObject(), *steps, *um;
	int minor = gl_cost_minor(currency);
	gl_apijson_add_window(root, "window", &p->window);
	cJSON_AddStringToObject(root, "step", gl_window_step_name(p->step));
	cJSON_AddStringToObject(root, "aggregate", p->aggregate);
	cJSON_AddStringToObject(root, "currency", currency);
	steps = cJSON_AddArrayToObject(root, "steps");
	for (size_t i = 0; i < x->n_steps; i++)
		cJSON_AddItemToArray(steps, step_json(p, &x->steps[i], minor));
	{
		/* the window as one step: the groups summed over the steps */
		cJSON *w = step_json(p, &x->window, minor);
		cJSON_AddItemToObject(root, "items", cJSON_DetachItemFromObject(w, "items"));
		cJSON_AddItemToObject(root, "unattributed", cJSON_DetachItemFromObject(w, "unattributed"));
		cJSON_AddItemToObject(root, "totals", cJSON_DetachItemFromObject(w, "totals"));
		cJSON_Delete(w);
	}
	um = cJSON_AddArrayToObject(root, "unpriced_models");
	for (size_t i = 0; i < meta->n_unpriced; i++)
		cJSON_AddItemToArray(um, cJSON_CreateString(meta->unpriced_models[i]));
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
}

static void csv_i64(struct gl_strbuf *o, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%lld", (long long)v);
	gl_csv_raw(o, buf);
}

static void csv_money(struct gl_strbuf *o, int have, int64_t micros, int minor)
{
	char buf[48];
	if (!have) {
		gl_csv_raw(o, "");
		return;
	}
	gl_cost_format(micros, minor, buf, sizeof buf);
	gl_csv_raw(o, buf);
}

static void csv_ratio(struct gl_strbuf *o, double v)
{
	char buf[48];
	if (isnan(v)) {
		gl_csv_raw(o, "");
		return;
	}
	snprintf(buf, sizeof buf, "%.6f", v);
	gl_csv_raw(o, buf);
}

static const char *const csv_cols[] = {
	"requests", "failed_requests", "prompt_tokens", "generated_tokens", "gpu_seconds", "busy_gpu_seconds",
	"idle_in_allocation_gpu_seconds", "cost", "idle_cost", "cost_per_1k_requests", "cost_per_1m_prompt_tokens",
	"cost_per_1m_generated_tokens", "tokens_per_gpu_second", "busy_share", "latency_p50_seconds",
	"latency_p99_seconds",
};

static void csv_group(struct gl_strbuf *o, const char *a, const char *b, const char *key,
		      const struct gl_inference_group *g, int minor)
{
	int observed = g->observed_s > 0;
	gl_csv_field(o, a);
	gl_csv_field(o, b);
	gl_csv_field(o, key);
	for (int k = 0; k < 4; k++)
		csv_i64(o, g->v[k]);
	csv_i64(o, g->gpu_s);
	if (observed) {
		csv_i64(o, llround(g->busy_s));
		csv_i64(o, llround(g->idle_s));
	} else {
		gl_csv_raw(o, "");
		gl_csv_raw(o, "");
	}
	csv_money(o, 1, g->cost_micros, minor);
	csv_money(o, observed, g->idle_micros, minor);
	csv_money(o, g->have_per_1k_requests, g->per_1k_requests_micros, 6);
	csv_money(o, g->have_per_1m_prompt, g->per_1m_prompt_micros, 6);
	csv_money(o, g->have_per_1m_generated, g->per_1m_generated_micros, 6);
	csv_ratio(o, g->tokens_per_gpu_s);
	csv_ratio(o, g->busy_share);
	csv_ratio(o, g->p50_s);
	csv_ratio(o, g->p99_s);
	gl_csv_end(o);
}

static void render_csv(struct gl_resp *resp, const struct inf_params *p, const struct gl_inference *x, int minor)
{
	struct gl_strbuf *o = &resp->body;
	gl_csv_field(o, "start");
	gl_csv_field(o, "end");
	gl_csv_field(o, p->aggregate);
	for (size_t k = 0; k < GL_ARRAY_LEN(csv_cols); k++)
		gl_csv_field(o, csv_cols[k]);
	gl_csv_end(o);
	for (size_t i = 0; i < x->n_steps; i++) {
		const struct gl_inference_step *s = &x->steps[i];
		char a[32], b[32];
		gl_timeutil_format(s->start_s, a, sizeof a);
		gl_timeutil_format(s->end_s, b, sizeof b);
		for (size_t j = 0; j < s->n; j++)
			csv_group(o, a, b, s->groups[j].key, &s->groups[j], minor);
		/* requests no job is known for: their own row, with no GPU */
		for (size_t j = 0; j < s->n_un; j++) {
			struct gl_inference_group g;
			memset(&g, 0, sizeof g);
			memcpy(g.v, s->un[j].v, sizeof g.v);
			g.tokens_per_gpu_s = g.busy_share = g.p50_s = g.p99_s = NAN;
			csv_group(o, a, b, "__unattributed__", &g, minor);
		}
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("inference.csv"));
}

int gl_route_inference(struct gl_req *req, struct gl_resp *resp)
{
	struct inf_params p;
	struct gl_servingdb_query q;
	struct gl_accounting_meta meta = {0};
	struct gl_inference x;
	struct gl_err err = {0};
	struct gl_store *st;
	int rc;

	if ((rc = parse_params(req, resp, &p))) {
		free(p.steps);
		return rc;
	}
	gl_inference_init(&x, p.agg, p.n_steps);
	q = (struct gl_servingdb_query){p.steps, p.n_steps, req->now_s, p.agg, p.aggregate, NULL, 0};
	q.scope = gl_req_scope(req, &q.n_scope);
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_servingdb_inference(st, &q, &x, &meta, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg[0] ? err.msg : "inference failed");
		goto out;
	}
	if (p.csv)
		render_csv(resp, &p, &x, gl_cost_minor(req->cfg->currency));
	else
		render_json(resp, &p, &x, &meta, req->cfg->currency);
out:
	gl_accounting_meta_fini(&meta);
	gl_inference_fini(&x);
	free(p.steps);
	return rc;
}
