/* Accounting endpoints: /v1/chargeback (JSON or CSV). */
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/chargeback.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/routes.h"
#include "gl/store.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 4000

/* Common parameters of the windowed endpoints. */
struct acct_params {
	struct gl_window window;
	enum gl_step step;
	struct gl_window *steps;
	size_t n_steps;
	char agg_buf[256];
	const char *dims[GL_CB_MAX_DIMS];
	size_t n_dims;
	struct gl_filter filter;
	int have_filter;
	enum gl_share_idle share;
	int share_by_model; /* shareIdleBy=model */
	int csv;
};

static void params_fini(struct acct_params *p)
{
	free(p->steps);
	if (p->have_filter)
		gl_filter_fini(&p->filter);
}

static int parse_params(struct gl_req *req, struct gl_resp *resp, struct acct_params *p, const char *def_agg)
{
	const char *st = gl_req_param(req, "step"), *agg = gl_req_param(req, "aggregate"),
		   *flt = gl_req_param(req, "filter"), *sh = gl_req_param(req, "shareIdle"),
		   *fmt = gl_req_param(req, "format"), *by = gl_req_param(req, "shareIdleBy");
	struct gl_err e = {0};
	char *save = NULL;
	int rc;

	memset(p, 0, sizeof *p);
	if ((rc = gl_apijson_window(req, resp, "month", &p->window)))
		return rc;
	if (gl_step_parse(st ? st : "none", &p->step, &e))
		return gl_resp_error(resp, GL_EINVAL, "step", "step: %s", e.msg);
	p->steps = gl_xcalloc(MAX_STEPS, sizeof *p->steps);
	if (gl_window_split(&p->window, p->step, p->steps, MAX_STEPS, &p->n_steps, &e))
		return gl_resp_error(resp, GL_EINVAL, "step", "step: %s in the window (at most %d)", e.msg, MAX_STEPS);
	if (!agg)
		agg = def_agg;
	/* refused, not cut: a cut list is another valid grouping */
	if (strlen(agg) >= sizeof p->agg_buf)
		return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: longer than %zu bytes",
				     sizeof p->agg_buf - 1);
	if (gl_apijson_list_has_empty(agg, ','))
		return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: empty dimension in '%s'", agg);
	memcpy(p->agg_buf, agg, strlen(agg) + 1);
	for (char *t = strtok_r(p->agg_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!gl_acct_dim_sql(t))
			return gl_resp_error(resp, GL_EINVAL, "aggregate",
					     "aggregate: unknown dimension '%s' (team, project, cost_center, user, account, "
					     "cluster, partition, qos, namespace, gpu_model)",
					     t);
		if (p->n_dims == GL_CB_MAX_DIMS)
			return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: at most %d dimensions",
					     GL_CB_MAX_DIMS);
		for (size_t i = 0; i < p->n_dims; i++)
			if (!strcmp(p->dims[i], t))
				return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: '%s' given twice", t);
		p->dims[p->n_dims++] = t;
	}
	if (p->n_dims == 0)
		return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: empty");
	if (flt && *flt) {
		if (gl_filter_parse(flt, gl_acct_dims, &p->filter, &e))
			return gl_resp_error(resp, GL_EINVAL, "filter", "filter: %s", e.msg);
		p->have_filter = 1;
	}
	if (gl_cb_share_parse(sh, &p->share))
		return gl_resp_error(resp, GL_EINVAL, "shareIdle", "shareIdle: '%s' is not " GL_CB_SHARE_NAMES, sh);
	if (p->share == GL_SHARE_OWNER && (p->n_dims != 1 || strcmp(p->dims[0], "team") != 0))
		return gl_resp_error(resp, GL_EINVAL, "shareIdle", "shareIdle: 'owner' needs aggregate=team");
	if (by && strcmp(by, "cluster") && strcmp(by, "model"))
		return gl_resp_error(resp, GL_EINVAL, "shareIdleBy", "shareIdleBy: '%s' is not cluster or model", by);
	if (by && p->share != GL_SHARE_PROPORTIONAL)
		return gl_resp_error(resp, GL_EINVAL, "shareIdleBy", "shareIdleBy: needs shareIdle=proportional");
	p->share_by_model = by && !strcmp(by, "model");
	if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv"))
		return gl_resp_error(resp, GL_EINVAL, "format", "format: '%s' is not json or csv", fmt);
	p->csv = fmt && !strcmp(fmt, "csv");
	return 0;
}

static void time_str(int64_t t, char *buf, size_t n)
{
	gl_time_format(t, buf, n);
}

static cJSON *money(int64_t micros, int minor)
{
	char buf[48];
	gl_money_format(micros, minor, buf, sizeof buf);
	return cJSON_CreateString(buf);
}

static void add_usage(cJSON *o, const struct gl_cb_line *l)
{
	/* no exporter data is "unknown", never 0 */
	if (l->observed_s > 0) {
		cJSON_AddNumberToObject(o, "busy_gpu_seconds", (double)(int64_t)(l->busy_s + 0.5));
		cJSON_AddNumberToObject(o, "idle_in_allocation_gpu_seconds", (double)(int64_t)(l->idle_s + 0.5));
		cJSON_AddNumberToObject(o, "observed_gpu_seconds", (double)(int64_t)(l->observed_s + 0.5));
	} else {
		cJSON_AddNullToObject(o, "busy_gpu_seconds");
		cJSON_AddNullToObject(o, "idle_in_allocation_gpu_seconds");
		cJSON_AddNullToObject(o, "observed_gpu_seconds");
	}
}

/* Capacity coverage of the answer: days and clusters (gl_acct_capacity_cover)
 * and steps known, and whether that is the whole window. */
struct cap_cover {
	struct gl_acct_cover c;
	size_t steps_known;
	int window_known;
};

/* the totals' idle is the sum over the steps whose idle is known; it is
 * the window's only when every step's is and the capacity data covers
 * every day so far: a month whose inventory began on the 16th has half a
 * month of idle, which must not read as the month's. */
static void cover_steps(struct cap_cover *cov, const struct gl_cb *cb, const struct gl_acct_meta *meta)
{
	cov->steps_known = meta->capacity_source ? gl_cb_capacity_steps(cb) : 0;
	cov->window_known = cov->steps_known > 0 && cov->steps_known == cb->n_steps && cov->c.known == cov->c.days &&
			    cov->c.n_missing == 0;
}

/* Money as every view shows it (gl_cb_shown): the micro-units of the
 * shown amount, and its text. */
static void add_shown(cJSON *o, const char *key, int64_t shown, int minor)
{
	char name[48];
	snprintf(name, sizeof name, "%s_shown_micros", key);
	cJSON_AddNumberToObject(o, name, (double)shown);
	cJSON_AddItemToObject(o, key, money(shown, minor));
}

static void render_json(struct gl_resp *resp, const struct acct_params *p, const struct gl_cb *cb,
			const struct gl_cb_shown *sh, const struct gl_acct_meta *meta, const struct cap_cover *cov, const char *currency)
{
	cJSON *root = cJSON_CreateObject(), *steps, *agg, *tot;
	int minor = gl_money_minor(currency); /* validated with the config */
	size_t steps_known = cov->steps_known;

	gl_apijson_add_window(root, "window", &p->window);
	cJSON_AddStringToObject(root, "step", gl_step_name(p->step));
	agg = cJSON_AddArrayToObject(root, "aggregate");
	for (size_t d = 0; d < p->n_dims; d++)
		cJSON_AddItemToArray(agg, cJSON_CreateString(p->dims[d]));
	cJSON_AddStringToObject(root, "shareIdle", gl_cb_share_name(p->share));
	if (p->share == GL_SHARE_PROPORTIONAL)
		cJSON_AddStringToObject(root, "shareIdleBy", p->share_by_model ? "model" : "cluster");
	cJSON_AddStringToObject(root, "currency", currency);
	steps = cJSON_AddArrayToObject(root, "steps");
	for (size_t i = 0; i < cb->n_steps; i++) {
		const struct gl_cb_step *st = &cb->steps[i];
		cJSON *so = cJSON_CreateObject(), *items, *idle, *t;
		gl_apijson_add_time(so, "start", st->start_s);
		gl_apijson_add_time(so, "end", st->end_s);
		items = cJSON_AddArrayToObject(so, "items");
		for (size_t j = 0; j < st->n_lines; j++) {
			const struct gl_cb_line *l = &st->lines[j];
			cJSON *o = cJSON_CreateObject(), *key = cJSON_AddObjectToObject(o, "key");
			struct gl_strbuf name = GL_STRBUF_INIT;
			for (size_t d = 0; d < p->n_dims; d++) {
				cJSON_AddStringToObject(key, p->dims[d], l->key[d]);
				if (d)
					gl_strbuf_putc(&name, '/');
				gl_strbuf_puts(&name, l->key[d]);
			}
			cJSON_AddStringToObject(o, "name", gl_strbuf_cstr(&name));
			gl_strbuf_fini(&name);
			cJSON_AddNumberToObject(o, "allocated_gpu_seconds", (double)l->alloc_s);
			add_usage(o, l);
			cJSON_AddNumberToObject(o, "unpriced_gpu_seconds", (double)l->unpriced_s);
			cJSON_AddNumberToObject(o, "cost_micros", (double)l->cost_micros);
			cJSON_AddNumberToObject(o, "idle_share_gpu_seconds", (double)l->idle_share_s);
			cJSON_AddNumberToObject(o, "idle_share_micros", (double)l->idle_share_micros);
			cJSON_AddNumberToObject(o, "total_micros", (double)l->total_micros);
			add_shown(o, "cost", sh->cost[i][j], minor);
			add_shown(o, "idle_share", sh->share[i][j], minor);
			add_shown(o, "total", sh->line[i][j], minor);
			cJSON_AddItemToArray(items, o);
		}
		idle = cJSON_AddObjectToObject(so, "idle");
		cJSON_AddStringToObject(idle, "name", "__idle__");
		if (st->capacity_known) {
			cJSON_AddNumberToObject(idle, "gpu_seconds", (double)st->idle_s);
			cJSON_AddNumberToObject(idle, "total_micros", (double)st->idle_micros);
			cJSON_AddNumberToObject(idle, "unshared_gpu_seconds", (double)st->idle_total_s);
			cJSON_AddNumberToObject(idle, "unshared_micros", (double)st->idle_total_micros);
			cJSON_AddNumberToObject(idle, "overallocated_gpu_seconds", (double)st->overalloc_s);
			add_shown(idle, "total", sh->idle[i], minor);
		} else {
			/* no capacity source: idle is unknown, not zero; the same
			 * fields as when known, null, so a client reads one shape */
			cJSON_AddNullToObject(idle, "gpu_seconds");
			cJSON_AddNullToObject(idle, "total_micros");
			cJSON_AddNullToObject(idle, "unshared_gpu_seconds");
			cJSON_AddNullToObject(idle, "unshared_micros");
			cJSON_AddNullToObject(idle, "overallocated_gpu_seconds");
			cJSON_AddNullToObject(idle, "total_shown_micros");
			cJSON_AddNullToObject(idle, "total");
		}
		t = cJSON_AddObjectToObject(so, "totals");
		cJSON_AddNumberToObject(t, "allocated_gpu_seconds", (double)st->total_alloc_s);
		cJSON_AddNumberToObject(t, "gpu_seconds", (double)st->total_s);
		cJSON_AddNumberToObject(t, "cost_micros", (double)st->total_cost_micros);
		cJSON_AddNumberToObject(t, "total_micros", (double)st->total_micros);
		add_shown(t, "total", sh->step_total[i], minor);
		cJSON_AddItemToArray(steps, so);
	}
	/* no step known: unknown, not 0, as in /v1/idle */
	tot = cJSON_AddObjectToObject(root, "totals");
	cJSON_AddNumberToObject(tot, "allocated_gpu_seconds", (double)cb->total_alloc_s);
	if (steps_known)
		cJSON_AddNumberToObject(tot, "idle_gpu_seconds", (double)cb->total_idle_s);
	else
		cJSON_AddNullToObject(tot, "idle_gpu_seconds");
	cJSON_AddNumberToObject(tot, "gpu_seconds", (double)cb->total_s);
	cJSON_AddNumberToObject(tot, "cost_micros", (double)cb->total_cost_micros);
	if (steps_known)
		cJSON_AddNumberToObject(tot, "idle_micros", (double)cb->total_idle_micros);
	else
		cJSON_AddNullToObject(tot, "idle_micros");
	cJSON_AddNumberToObject(tot, "total_micros", (double)cb->total_micros);
	add_shown(tot, "total", sh->total, minor);
	{
		cJSON *um = cJSON_AddArrayToObject(root, "unpriced_models");
		for (size_t i = 0; i < meta->n_unpriced; i++)
			cJSON_AddItemToArray(um, cJSON_CreateString(meta->unpriced_models[i]));
	}
	cJSON_AddBoolToObject(root, "capacity_known", cov->window_known);
	cJSON_AddNumberToObject(root, "capacity_steps_known", (double)steps_known);
	cJSON_AddNumberToObject(root, "capacity_days_known", (double)cov->c.known);
	cJSON_AddNumberToObject(root, "capacity_days", (double)cov->c.days);
	{
		cJSON *um = cJSON_AddArrayToObject(root, "capacity_clusters_unknown");
		for (size_t i = 0; i < cov->c.n_missing; i++)
			cJSON_AddItemToArray(um, cJSON_CreateString(cov->c.missing[i]));
	}
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
}

static void csv_i64(struct gl_strbuf *o, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%lld", (long long)v);
	gl_csv_raw(o, buf);
}

static void csv_money(struct gl_strbuf *o, int64_t micros, int minor)
{
	char buf[48];
	gl_money_format(micros, minor, buf, sizeof buf);
	gl_csv_raw(o, buf);
}

static void render_csv(struct gl_resp *resp, const struct acct_params *p, const struct gl_cb *cb,
		       const struct gl_cb_shown *sh, const struct cap_cover *cov, int minor)
{
	struct gl_strbuf *o = &resp->body;
	char a[32], b[32];
	gl_csv_field(o, "start");
	gl_csv_field(o, "end");
	for (size_t d = 0; d < p->n_dims; d++)
		gl_csv_field(o, p->dims[d]);
	gl_csv_field(o, "allocated_gpu_seconds");
	gl_csv_field(o, "busy_gpu_seconds");
	gl_csv_field(o, "idle_in_allocation_gpu_seconds");
	gl_csv_field(o, "cost");
	gl_csv_field(o, "idle_share");
	gl_csv_field(o, "total");
	gl_csv_end(o);
	for (size_t i = 0; i < cb->n_steps; i++) {
		const struct gl_cb_step *st = &cb->steps[i];
		time_str(st->start_s, a, sizeof a);
		time_str(st->end_s, b, sizeof b);
		for (size_t j = 0; j <= st->n_lines; j++) {
			const struct gl_cb_line *l = j < st->n_lines ? &st->lines[j] : NULL;
			if (!l && !st->capacity_known)
				continue;
			gl_csv_field(o, a);
			gl_csv_field(o, b);
			for (size_t d = 0; d < p->n_dims; d++)
				gl_csv_field(o, l ? l->key[d] : "__idle__");
			if (l) {
				csv_i64(o, l->alloc_s);
				if (l->observed_s > 0) {
					csv_i64(o, (int64_t)(l->busy_s + 0.5));
					csv_i64(o, (int64_t)(l->idle_s + 0.5));
				} else {
					gl_csv_raw(o, "");
					gl_csv_raw(o, "");
				}
				csv_money(o, sh->cost[i][j], minor);
				csv_money(o, sh->share[i][j], minor);
				csv_money(o, sh->line[i][j], minor);
			} else {
				csv_i64(o, st->idle_s);
				gl_csv_raw(o, "");
				gl_csv_raw(o, "");
				csv_money(o, sh->idle[i], minor);
				csv_money(o, 0, minor);
				csv_money(o, sh->idle[i], minor);
			}
			gl_csv_end(o);
		}
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("chargeback.csv"));
	/* the JSON root's coverage, which no row of the table can hold: a
	 * step whose idle is unknown has no __idle__ row, and a known one
	 * may cover only some of its days */
	gl_apijson_add_header(resp, "X-Capacity-Known", cov->window_known ? "true" : "false");
	gl_apijson_add_header_num(resp, "X-Capacity-Steps-Known", (long long)cov->steps_known);
	gl_apijson_add_header_num(resp, "X-Capacity-Days-Known", (long long)cov->c.known);
	gl_apijson_add_header_num(resp, "X-Capacity-Days", (long long)cov->c.days);
	gl_apijson_add_header_num(resp, "X-Capacity-Clusters-Unknown", (long long)cov->c.n_missing);
}

int gl_route_chargeback(struct gl_req *req, struct gl_resp *resp)
{
	struct acct_params p;
	struct gl_acct_query q = {0};
	struct gl_acct_meta meta = {0};
	struct cap_cover cov = {0};
	struct gl_cb cb;
	struct gl_cb_shown shown;
	struct gl_err err = {0};
	struct gl_store *st;
	int rc;

	if ((rc = parse_params(req, resp, &p, "team"))) {
		params_fini(&p);
		return rc;
	}
	gl_cb_init(&cb, p.n_dims, p.share, p.n_steps);
	cb.share_by_model = p.share_by_model;
	gl_acct_query_init(&q, p.steps, p.n_steps, p.dims, p.n_dims, req->now_s);
	q.filter = p.have_filter ? &p.filter : NULL;
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_acct_chargeback_finished(st, &q, &cb, &meta, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg[0] ? err.msg : "chargeback failed");
		goto out;
	}
	if (p.n_steps && (rc = gl_acct_capacity_cover(st, p.steps[0].start_s, p.steps[p.n_steps - 1].end_s, req->now_s,
						      p.have_filter ? &p.filter : NULL, &cov.c, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
		goto out;
	}
	cover_steps(&cov, &cb, &meta);
	gl_cb_shown_compute(&cb, gl_money_minor(req->cfg->currency), &shown);
	if (p.csv)
		render_csv(resp, &p, &cb, &shown, &cov, gl_money_minor(req->cfg->currency));
	else
		render_json(resp, &p, &cb, &shown, &meta, &cov, req->cfg->currency);
	gl_cb_shown_fini(&shown);
out:
	gl_acct_cover_fini(&cov.c);
	gl_acct_meta_fini(&meta);
	gl_cb_fini(&cb);
	params_fini(&p);
	return rc;
}
