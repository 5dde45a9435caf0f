/* Accounting endpoints: /v1/chargeback (JSON or CSV). */
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/chargeback.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/ingest.h"
#include "gl/jsonw.h"
#include "gl/routes.h"
#include "gl/store.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 4000

/* Common parameters of the windowed endpoints. */
struct acct_params {
	struct gl_window window;
	enum gl_window_step step;
	struct gl_window *steps;
	size_t n_steps;
	char agg_buf[256];
	const char *dims[GL_CHARGEBACK_MAX_DIMS];
	size_t n_dims;
	struct gl_filter filter;
	int have_filter;
	enum gl_chargeback_share_idle share;
	int share_by_model; /* shareIdleBy=model */
	int csv;
	int unobserved_include;
	int scoped;         /* a token's scope narrowed the filter */
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
		   *fmt = gl_req_param(req, "format"), *unobs = gl_req_param(req, "unobserved"),
		   *by = gl_req_param(req, "shareIdleBy");
	struct gl_err e = {0};
	char *save = NULL;
	int rc;

	memset(p, 0, sizeof *p);
	if ((rc = gl_apijson_window(req, resp, "month", &p->window)))
		return rc;
	if (gl_window_step_parse(st ? st : "none", &p->step, &e))
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
		if (!gl_accounting_dim_sql(t))
			return gl_resp_error(resp, GL_EINVAL, "aggregate",
					     "aggregate: unknown dimension '%s' (team, project, cost_center, user, account, "
					     "cluster, partition, qos, namespace, gpu_model, workload_type)",
					     t);
		if (p->n_dims == GL_CHARGEBACK_MAX_DIMS)
			return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: at most %d dimensions",
					     GL_CHARGEBACK_MAX_DIMS);
		for (size_t i = 0; i < p->n_dims; i++)
			if (!strcmp(p->dims[i], t))
				return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: '%s' given twice", t);
		p->dims[p->n_dims++] = t;
	}
	if (p->n_dims == 0)
		return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: empty");
	if (flt && *flt) {
		if (gl_filter_parse(flt, gl_accounting_dims, &p->filter, &e))
			return gl_resp_error(resp, GL_EINVAL, "filter", "filter: %s", e.msg);
		p->have_filter = 1;
	}
	{
		size_t n_scope;
		(void)gl_req_scope(req, &n_scope);
		p->scoped = n_scope > 0;
	}
	if ((rc = gl_req_scope_filter(req, resp, "filter", &p->filter)))
		return rc;
	p->have_filter = p->filter.n > 0;
	if (gl_chargeback_share_parse(sh, &p->share))
		return gl_resp_error(resp, GL_EINVAL, "shareIdle", "shareIdle: '%s' is not " GL_CHARGEBACK_SHARE_NAMES, sh);
	if (p->share == GL_CHARGEBACK_SHARE_OWNER && (p->n_dims != 1 || strcmp(p->dims[0], "team") != 0))
		return gl_resp_error(resp, GL_EINVAL, "shareIdle", "shareIdle: 'owner' needs aggregate=team");
	if (by && strcmp(by, "cluster") && strcmp(by, "model"))
		return gl_resp_error(resp, GL_EINVAL, "shareIdleBy", "shareIdleBy: '%s' is not cluster or model", by);
	if (by && p->share != GL_CHARGEBACK_SHARE_PROPORTIONAL)
		return gl_resp_error(resp, GL_EINVAL, "shareIdleBy", "shareIdleBy: needs shareIdle=proportional");
	p->share_by_model = by && !strcmp(by, "model");
	if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv"))
		return gl_resp_error(resp, GL_EINVAL, "format", "format: '%s' is not json or csv", fmt);
	p->csv = fmt && !strcmp(fmt, "csv");
	if (unobs && strcmp(unobs, "exclude") && strcmp(unobs, "include"))
		return gl_resp_error(resp, GL_EINVAL, "unobserved", "unobserved: '%s' is not exclude or include", unobs);
	p->unobserved_include = unobs && !strcmp(unobs, "include");
	return 0;
}

static void time_str(int64_t t, char *buf, size_t n)
{
	gl_timeutil_format(t, buf, n);
}

static void add_usage(struct gl_jsonw *w, const struct gl_chargeback_line *l)
{
	/* no exporter data is "unknown", never 0 */
	if (l->observed_s > 0) {
		gl_jsonw_i64(w, "busy_gpu_seconds", (int64_t)(l->busy_s + 0.5));
		gl_jsonw_i64(w, "idle_in_allocation_gpu_seconds", (int64_t)(l->idle_s + 0.5));
		gl_jsonw_i64(w, "observed_gpu_seconds", (int64_t)(l->observed_s + 0.5));
	} else {
		gl_jsonw_null(w, "busy_gpu_seconds");
		gl_jsonw_null(w, "idle_in_allocation_gpu_seconds");
		gl_jsonw_null(w, "observed_gpu_seconds");
	}
}

/* Capacity coverage of the answer: days and clusters (gl_accounting_capacity_cover)
 * and steps known, and whether that is the whole window. */
struct cap_cover {
	struct gl_accounting_cover c;
	size_t steps_known;
	int window_known;
};

/* the totals' idle is the sum over the steps whose idle is known; it is
 * the window's only when every step's is and the capacity data covers
 * every day so far: a month whose inventory began on the 16th has half a
 * month of idle, which must not read as the month's. */
static void cover_steps(struct cap_cover *cov, const struct gl_chargeback *cb, const struct gl_accounting_meta *meta)
{
	cov->steps_known = meta->capacity_source ? gl_chargeback_capacity_steps(cb) : 0;
	cov->window_known = cov->steps_known > 0 && cov->steps_known == cb->n_steps && cov->c.known == cov->c.days &&
			    cov->c.n_missing == 0;
}

/* The answer as it is sent: the chargeback is whole in memory (its totals
 * reconcile over every line), the text of it is made a piece at a time
 * (a 160-day hourly chargeback per user is 15 MB of JSON; as a cJSON tree
 * and its printed copies it took ~130 MB more). */
struct cb_out {
	struct acct_params p;
	struct gl_chargeback cb;
	struct gl_chargeback_shown shown; /* the money every view shows */
	struct gl_accounting_meta meta;
	struct cap_cover cov;
	char **unread;        /* clusters of shards that did not answer (gl_req_shards) */
	size_t n_unread;
	struct gl_apijson_dt dt;
	const char *currency; /* the config's, which outlives the server */
	int minor;
	size_t step, line;    /* where the next piece starts */
	int stage, in_step;   /* 0 head, 1 steps, 2 tail; in_step: step's items array open */
	struct gl_jsonw w;
};

static void cb_out_fini(void *state)
{
	struct cb_out *o = state;
	gl_accounting_cover_fini(&o->cov.c);
	gl_apijson_dt_fini(&o->dt);
	gl_accounting_meta_fini(&o->meta);
	for (size_t i = 0; i < o->n_unread; i++)
		free(o->unread[i]);
	free(o->unread);
	gl_chargeback_shown_fini(&o->shown);
	gl_chargeback_fini(&o->cb);
	params_fini(&o->p);
	free(o);
}

static void json_money(struct gl_jsonw *w, const char *k, int64_t micros, int minor)
{
	char buf[48];
	gl_cost_format(micros, minor, buf, sizeof buf);
	gl_jsonw_str(w, k, buf);
}

/* The open jobs' time after a source last saw them (in the firm figures
 * only with unobserved=include), and its part past the jobs' own limits. */
static void json_unobserved(struct gl_jsonw *w, int64_t s, int64_t micros, int64_t implausible_s)
{
	gl_jsonw_i64(w, "unobserved_gpu_seconds", s);
	gl_jsonw_i64(w, "unobserved_micros", micros);
	gl_jsonw_i64(w, "implausible_gpu_seconds", implausible_s);
}

/* Money as every view shows it (gl_chargeback_shown): its micro-units and its text. */
static void json_shown(struct gl_jsonw *w, const char *k, int64_t shown, int minor)
{
	char name[48];
	snprintf(name, sizeof name, "%s_shown_micros", k);
	gl_jsonw_i64(w, name, shown);
	json_money(w, k, shown, minor);
}

static void json_head(struct cb_out *o)
{
	struct gl_jsonw *w = &o->w;
	gl_jsonw_object(w, NULL);
	gl_jsonw_array(w, "window");
	gl_jsonw_time(w, NULL, o->p.window.start_s);
	gl_jsonw_time(w, NULL, o->p.window.end_s);
	gl_jsonw_end(w);
	gl_jsonw_str(w, "step", gl_window_step_name(o->p.step));
	gl_jsonw_array(w, "aggregate");
	for (size_t d = 0; d < o->p.n_dims; d++)
		gl_jsonw_str(w, NULL, o->p.dims[d]);
	gl_jsonw_end(w);
	gl_jsonw_str(w, "shareIdle", gl_chargeback_share_name(o->p.share));
	if (o->p.share == GL_CHARGEBACK_SHARE_PROPORTIONAL)
		gl_jsonw_str(w, "shareIdleBy", o->p.share_by_model ? "model" : "cluster");
	gl_jsonw_str(w, "currency", o->currency);
	gl_jsonw_array(w, "steps");
}

/* Line j of the current step. */
static void json_line(struct cb_out *o, size_t j)
{
	const struct gl_chargeback_line *l = &o->cb.steps[o->step].lines[j];
	struct gl_jsonw *w = &o->w;
	struct gl_strbuf name = GL_STRBUF_INIT;
	gl_jsonw_object(w, NULL);
	gl_jsonw_object(w, "key");
	for (size_t d = 0; d < o->p.n_dims; d++) {
		gl_jsonw_str(w, o->p.dims[d], l->key[d]);
		if (d)
			gl_strbuf_putc(&name, '/');
		gl_strbuf_puts(&name, l->key[d]);
	}
	gl_jsonw_end(w);
	gl_jsonw_str(w, "name", gl_strbuf_cstr(&name));
	gl_strbuf_fini(&name);
	gl_jsonw_i64(w, "allocated_gpu_seconds", l->alloc_s);
	add_usage(w, l);
	gl_jsonw_i64(w, "unpriced_gpu_seconds", l->unpriced_s);
	gl_jsonw_i64(w, "cost_micros", l->cost_micros);
	gl_jsonw_i64(w, "idle_share_gpu_seconds", l->idle_share_s);
	gl_jsonw_i64(w, "idle_share_micros", l->idle_share_micros);
	gl_jsonw_i64(w, "total_micros", l->total_micros);
	json_shown(w, "cost", o->shown.cost[o->step][j], o->minor);
	json_shown(w, "idle_share", o->shown.share[o->step][j], o->minor);
	json_shown(w, "total", o->shown.line[o->step][j], o->minor);
	json_unobserved(w, l->unobserved_s, l->unobserved_micros, l->implausible_s);
	gl_jsonw_bool(w, "implausible", l->implausible_s > 0);
	gl_jsonw_end(w);
}

static void json_step_open(struct cb_out *o, const struct gl_chargeback_step *st)
{
	gl_jsonw_object(&o->w, NULL);
	gl_jsonw_time(&o->w, "start", st->start_s);
	gl_jsonw_time(&o->w, "end", st->end_s);
	gl_jsonw_array(&o->w, "items");
}

static void json_step_close(struct cb_out *o, const struct gl_chargeback_step *st)
{
	struct gl_jsonw *w = &o->w;
	static const char *const idle_keys[] = {"gpu_seconds", "total_micros", "unshared_gpu_seconds", "unshared_micros",
						"overallocated_gpu_seconds"};
	const int64_t idle_vals[] = {st->idle_s, st->idle_micros, st->idle_total_s, st->idle_total_micros,
				     st->overalloc_s};
	gl_jsonw_end(w); /* items */
	if (o->cb.idle_withheld) {
		/* the fleet's, less the scope's shares: another owner's figure */
		gl_jsonw_null(w, "idle");
		goto totals;
	}
	gl_jsonw_object(w, "idle");
	gl_jsonw_str(w, "name", "__idle__");
	/* no capacity source: idle is unknown, not zero; the same fields as
	 * when known, null, so a client reads one shape */
	for (size_t i = 0; i < GL_ARRAY_LEN(idle_keys); i++) {
		if (st->capacity_known)
			gl_jsonw_i64(w, idle_keys[i], idle_vals[i]);
		else
			gl_jsonw_null(w, idle_keys[i]);
	}
	if (st->capacity_known) {
		json_shown(w, "total", o->shown.idle[o->step], o->minor);
	} else {
		gl_jsonw_null(w, "total_shown_micros");
		gl_jsonw_null(w, "total");
	}
	gl_jsonw_end(w);
totals:
	gl_jsonw_object(w, "totals");
	gl_jsonw_i64(w, "allocated_gpu_seconds", st->total_alloc_s);
	gl_jsonw_i64(w, "gpu_seconds", st->total_s);
	gl_jsonw_i64(w, "cost_micros", st->total_cost_micros);
	gl_jsonw_i64(w, "total_micros", st->total_micros);
	json_shown(w, "total", o->shown.step_total[o->step], o->minor);
	json_unobserved(w, st->unobserved_s, st->unobserved_micros, st->implausible_s);
	gl_jsonw_i64(w, "implausible_items", (int64_t)st->implausible_lines);
	gl_jsonw_end(w);
	gl_jsonw_end(w); /* the step */
}

static void json_tail(struct cb_out *o)
{
	struct gl_jsonw *w = &o->w;
	const struct gl_chargeback *cb = &o->cb;
	size_t steps_known = o->cb.idle_withheld ? 0 : o->cov.steps_known;
	gl_jsonw_end(w); /* steps */
	/* no step known: unknown, not 0, as in /v1/idle */
	gl_jsonw_object(w, "totals");
	gl_jsonw_i64(w, "allocated_gpu_seconds", cb->total_alloc_s);
	if (steps_known)
		gl_jsonw_i64(w, "idle_gpu_seconds", cb->total_idle_s);
	else
		gl_jsonw_null(w, "idle_gpu_seconds");
	gl_jsonw_i64(w, "gpu_seconds", cb->total_s);
	gl_jsonw_i64(w, "cost_micros", cb->total_cost_micros);
	if (steps_known)
		gl_jsonw_i64(w, "idle_micros", cb->total_idle_micros);
	else
		gl_jsonw_null(w, "idle_micros");
	gl_jsonw_i64(w, "total_micros", cb->total_micros);
	json_shown(w, "total", o->shown.total, o->minor);
	json_unobserved(w, cb->unobserved_s, cb->unobserved_micros, cb->implausible_s);
	gl_jsonw_i64(w, "implausible_items", (int64_t)cb->implausible_lines);
	gl_jsonw_end(w);
	gl_jsonw_str(w, "unobserved", o->p.unobserved_include ? "include" : "exclude");
	gl_jsonw_bool(w, "idle_withheld", o->cb.idle_withheld);
	gl_jsonw_array(w, "unpriced_models");
	for (size_t i = 0; i < o->meta.n_unpriced; i++)
		gl_jsonw_str(w, NULL, o->meta.unpriced_models[i]);
	gl_jsonw_end(w);
	gl_jsonw_bool(w, "capacity_known", o->cov.window_known);
	gl_jsonw_i64(w, "capacity_steps_known", (int64_t)o->cov.steps_known);
	gl_jsonw_i64(w, "capacity_days_known", o->cov.c.known);
	gl_jsonw_i64(w, "capacity_days", o->cov.c.days);
	gl_jsonw_array(w, "capacity_clusters_unknown");
	for (size_t i = 0; i < o->cov.c.n_missing; i++)
		gl_jsonw_str(w, NULL, o->cov.c.missing[i]);
	gl_jsonw_end(w);
	gl_jsonw_array(w, "clusters_unread");
	for (size_t i = 0; i < o->n_unread; i++)
		gl_jsonw_str(w, NULL, o->unread[i]);
	gl_jsonw_end(w);
	gl_apijson_dt_jsonw(w, &o->dt);
	gl_jsonw_end(w); /* the root */
	gl_strbuf_putc(w->out, '\n');
}

static int json_next(void *state, struct gl_strbuf *out)
{
	struct cb_out *o = state;
	o->w.out = out;
	while (out->len < GL_RESP_CHUNK) {
		const struct gl_chargeback_step *st = o->step < o->cb.n_steps ? &o->cb.steps[o->step] : NULL;
		if (o->stage == 0) {
			json_head(o);
			o->stage = 1;
		} else if (o->stage == 2) {
			json_tail(o);
			return 0;
		} else if (!st) {
			o->stage = 2;
		} else if (!o->in_step) {
			json_step_open(o, st);
			o->in_step = 1;
			o->line = 0;
		} else if (o->line < st->n_lines) {
			json_line(o, o->line++);
		} else {
			json_step_close(o, st);
			o->in_step = 0;
			o->step++;
		}
	}
	return 1;
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
	gl_cost_format(micros, minor, buf, sizeof buf);
	gl_csv_raw(o, buf);
}

static void csv_header(struct gl_strbuf *out, const struct acct_params *p)
{
	gl_csv_field(out, "start");
	gl_csv_field(out, "end");
	for (size_t d = 0; d < p->n_dims; d++)
		gl_csv_field(out, p->dims[d]);
	gl_csv_field(out, "allocated_gpu_seconds");
	gl_csv_field(out, "busy_gpu_seconds");
	gl_csv_field(out, "idle_in_allocation_gpu_seconds");
	gl_csv_field(out, "cost");
	gl_csv_field(out, "idle_share");
	gl_csv_field(out, "total");
	gl_csv_field(out, "unobserved_gpu_seconds");
	gl_csv_field(out, "unobserved");
	gl_csv_field(out, "implausible_gpu_seconds");
	gl_csv_end(out);
}

/* One row of the current step: line j, or (j = its n_lines) its __idle__
 * row; money as every view shows it (gl_chargeback_shown). */
static void csv_row(struct gl_strbuf *out, const struct cb_out *o, size_t j)
{
	const struct gl_chargeback_step *st = &o->cb.steps[o->step];
	const struct gl_chargeback_line *l = j < st->n_lines ? &st->lines[j] : NULL;
	char a[32], b[32];
	time_str(st->start_s, a, sizeof a);
	time_str(st->end_s, b, sizeof b);
	gl_csv_field(out, a);
	gl_csv_field(out, b);
	for (size_t d = 0; d < o->p.n_dims; d++)
		gl_csv_field(out, l ? l->key[d] : "__idle__");
	if (l) {
		csv_i64(out, l->alloc_s);
		if (l->observed_s > 0) {
			csv_i64(out, (int64_t)(l->busy_s + 0.5));
			csv_i64(out, (int64_t)(l->idle_s + 0.5));
		} else {
			gl_csv_raw(out, "");
			gl_csv_raw(out, "");
		}
		csv_money(out, o->shown.cost[o->step][j], o->minor);
		csv_money(out, o->shown.share[o->step][j], o->minor);
		csv_money(out, o->shown.line[o->step][j], o->minor);
		csv_i64(out, l->unobserved_s);
		csv_money(out, l->unobserved_micros, o->minor);
		csv_i64(out, l->implausible_s);
	} else {
		csv_i64(out, st->idle_s);
		gl_csv_raw(out, "");
		gl_csv_raw(out, "");
		csv_money(out, o->shown.idle[o->step], o->minor);
		csv_money(out, 0, o->minor);
		csv_money(out, o->shown.idle[o->step], o->minor);
		csv_i64(out, 0);
		csv_money(out, 0, o->minor);
		csv_i64(out, 0);
	}
	gl_csv_end(out);
}

/* Pieces end at a row's end: a CSV field starts a record when the buffer
 * is empty or ends a line (src/util/csv.c). */
static int csv_next(void *state, struct gl_strbuf *out)
{
	struct cb_out *o = state;
	if (o->stage == 0) {
		csv_header(out, &o->p);
		o->stage = 1;
	}
	while (out->len < GL_RESP_CHUNK && o->step < o->cb.n_steps) {
		const struct gl_chargeback_step *st = &o->cb.steps[o->step];
		/* the step's lines, then its __idle__ row when its idle is known
		 * and not withheld from a token's scope */
		if (o->line < st->n_lines || (st->capacity_known && !o->cb.idle_withheld))
			csv_row(out, o, o->line);
		if (++o->line > st->n_lines) {
			o->line = 0;
			o->step++;
		}
	}
	return o->step < o->cb.n_steps;
}

static void csv_headers(struct gl_resp *resp, const struct cap_cover *cov)
{
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

/* One day's chargeback by team on st, its answer dropped: what a request
 * for that day reads (the capacity cover and data_through too). */
static int warm_day(struct gl_store *st, const struct gl_config *cfg, int64_t day_s, int64_t now_s, struct gl_err *err)
{
	static const char *const dims[] = {"team"};
	struct gl_window w = {day_s, day_s + 86400};
	struct gl_accounting_query q = {0};
	struct gl_accounting_meta meta = {0};
	struct gl_accounting_cover cov = {0};
	struct gl_ingest_data_through_set dt = {0};
	struct gl_chargeback cb;
	int rc;
	gl_chargeback_init(&cb, 1, GL_CHARGEBACK_SHARE_NONE, 1);
	gl_accounting_query_init(&q, &w, 1, dims, 1, now_s);
	/* as gl_route_chargeback sets them by default (unobserved=exclude):
	 * they are part of the statements' texts */
	q.unobserved_include = 0;
	q.cap.grace_s = cfg->inventory_absent_grace_s;
	q.cap.include = 0;
	if (!(rc = gl_accounting_chargeback_finished(st, &q, &cb, &meta, err)) &&
	    !(rc = gl_accounting_capacity_cover(st, w.start_s, w.end_s, now_s, NULL, &cov, err)))
		rc = gl_ingest_data_through(st, &dt, err);
	gl_ingest_data_through_fini(&dt);
	gl_accounting_cover_fini(&cov);
	gl_accounting_meta_fini(&meta);
	gl_chargeback_fini(&cb);
	return rc;
}

/* On a session routed to the shards the costliest statements run with a
 * generic plan made on their first run in the session (plancache_int.h):
 * 30-60 ms of a worker's first request at 300,000 jobs (load 9), the
 * fleet idle query's most. Its text differs between a window with built
 * days and one read live, so a day of each is asked: the last built day,
 * and 2000-01-01 (before any job; read live, in no time). */
int gl_route_chargeback_warm(struct gl_store *st, const struct gl_config *cfg, int64_t built_day_s, int64_t now_s,
			     struct gl_err *err)
{
	int rc = warm_day(st, cfg, 946684800, now_s, err);
	if (!rc && built_day_s >= 0)
		rc = warm_day(st, cfg, built_day_s, now_s, err);
	return rc;
}

int gl_route_chargeback(struct gl_req *req, struct gl_resp *resp)
{
	struct cb_out *o = gl_xcalloc(1, sizeof *o);
	struct gl_accounting_query q = {0};
	struct gl_err err = {0};
	struct gl_store *st;
	int rc;

	if ((rc = parse_params(req, resp, &o->p, "team")))
		goto out;
	gl_chargeback_init(&o->cb, o->p.n_dims, o->p.share, o->p.n_steps);
	o->cb.share_by_model = o->p.share_by_model;
	o->cb.max_lines = (size_t)req->cfg->http_max_answer_lines;
	gl_accounting_query_init(&q, o->p.steps, o->p.n_steps, o->p.dims, o->p.n_dims, req->now_s);
	q.filter = o->p.have_filter ? &o->p.filter : NULL;
	q.unobserved_include = o->p.unobserved_include;
	q.scoped = o->p.scoped;
	q.cap.grace_s = req->cfg->inventory_absent_grace_s;
	q.cap.include = o->p.unobserved_include;
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_accounting_chargeback_finished(st, &q, &o->cb, &o->meta, &err))) {
		if (rc == -GL_ERANGE)
			/* the caller's choice made it that big: say which knobs */
			rc = gl_resp_error(resp, GL_EINVAL, o->p.n_steps > 1 ? "step" : "aggregate",
					   "%s (server.max_answer_lines): ask for a shorter window, a coarser step or fewer "
					   "aggregate dimensions",
					   err.msg);
		else
			rc = gl_resp_error(resp, rc, NULL, "%s", err.msg[0] ? err.msg : "chargeback failed");
		goto out;
	}
	if (o->p.n_steps &&
	    (rc = gl_accounting_capacity_cover(st, o->p.steps[0].start_s, o->p.steps[o->p.n_steps - 1].end_s, req->now_s,
					 o->p.have_filter ? &o->p.filter : NULL, &o->cov.c, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
		goto out;
	}
	cover_steps(&o->cov, &o->cb, &o->meta);
	if (o->p.scoped)
		gl_chargeback_withhold_idle(&o->cb);
	o->unread = gl_apijson_unread(req, &o->n_unread);
	if ((rc = gl_apijson_dt_load(req, resp, &o->p.window, &o->dt)))
		goto out;
	o->currency = req->cfg->currency;
	o->minor = gl_cost_minor(req->cfg->currency); /* validated with the config */
	gl_chargeback_shown_compute(&o->cb, o->minor, &o->shown);
	if (o->p.csv) {
		csv_headers(resp, &o->cov);
		gl_apijson_dt_headers(resp, &o->dt);
		gl_resp_set_stream(resp, csv_next, cb_out_fini, o);
	} else {
		resp->content_type = "application/json";
		gl_jsonw_init(&o->w, NULL);
		gl_resp_set_stream(resp, json_next, cb_out_fini, o);
	}
	return 0;
out:
	cb_out_fini(o);
	return rc;
}
