/* The forecast answers (see include/gl/forecast_cache.h): /v1/forecast's
 * demand forecasts per owner (or cluster, model...) with the accuracy each
 * method had on the series' own history, from the same accounting data as
 * /v1/chargeback, and /v1/capacity/forecast's outlook, each computed into
 * its JSON body and kept in a small cache that the daemon's "forecast"
 * source refreshes, so a dashboard asking again is served without
 * refitting. */
#include "gl/forecast_cache.h"
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/capplan.h"
#include "gl/capplandb.h"
#include "gl/fcseries.h"
#include "gl/filter.h"
#include "gl/ingest.h"
#include "gl/forecast.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FC_MAX_STEPS 6000
#define FC_CACHE_SLOTS 64
#define FC_REFRESH_S 300     /* an answer older than this is recomputed */
#define FC_KEEP_S (24 * 3600) /* the daemon keeps entries used within this warm */

struct fc_params {
	int metric;
	enum gl_window_step step;
	int64_t step_s;
	int horizon;
	int lv80, lv95;
	char agg_buf[256];
	const char *dims[GL_CHARGEBACK_MAX_DIMS];
	size_t n_dims;
	struct gl_window window;
	struct gl_window excl[16]; /* holidays, maintenance: left out of fitting and scoring */
	size_t n_excl;
};

/* Checks every parameter; on error names it in *param and says why in err. */
static int fc_parse(const struct gl_forecast_cache_req *q, int64_t now_s, int64_t max_window_days, struct fc_params *p,
		    const char **param, struct gl_err *err)
{
	char *save = NULL;

	memset(p, 0, sizeof *p);
	*param = "metric";
	if ((p->metric = gl_fcseries_metric_parse(q->metric)) < 0)
		return gl_err_set(err, GL_EINVAL,
				  "metric: '%s' is not gpu_hours, busy_gpu_hours, demand_gpus, pending_gpus, pending_minutes or cost", q->metric);
	*param = "step";
	if (!strcmp(q->step, "hour"))
		p->step = GL_WINDOW_STEP_HOUR, p->step_s = 3600;
	else if (!strcmp(q->step, "day"))
		p->step = GL_WINDOW_STEP_DAY, p->step_s = 86400;
	else if (!strcmp(q->step, "week"))
		p->step = GL_WINDOW_STEP_WEEK, p->step_s = 7 * 86400;
	else
		return gl_err_set(err, GL_EINVAL, "step: '%s' is not hour, day or week", q->step);
	*param = "horizon";
	{
		/* a year ahead at most, at any step */
		long max = p->step == GL_WINDOW_STEP_HOUR ? 24 * 14 : p->step == GL_WINDOW_STEP_DAY ? 366 : 53;
		long def = p->step == GL_WINDOW_STEP_HOUR ? 24 : p->step == GL_WINDOW_STEP_DAY ? 14 : 12;
		long long x = def;
		if ((*q->horizon && gl_apijson_digits(q->horizon, &x)) || x < 1 || x > max)
			return gl_err_set(err, GL_EINVAL, "horizon: '%s' is not 1..%ld steps of one %s", q->horizon, max,
					  q->step);
		p->horizon = (int)x;
	}
	*param = "level";
	if (!*q->level || !strcmp(q->level, "80,95") || !strcmp(q->level, "95,80"))
		p->lv80 = p->lv95 = 1;
	else if (!strcmp(q->level, "80"))
		p->lv80 = 1;
	else if (!strcmp(q->level, "95"))
		p->lv95 = 1;
	else
		return gl_err_set(err, GL_EINVAL, "level: '%s' is not 80, 95 or 80,95", q->level);
	*param = "aggregate";
	if (gl_apijson_list_has_empty(q->aggregate, ','))
		return gl_err_set(err, GL_EINVAL, "aggregate: empty dimension in '%s'", q->aggregate);
	snprintf(p->agg_buf, sizeof p->agg_buf, "%s", q->aggregate);
	for (char *t = strtok_r(p->agg_buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!gl_accounting_dim_sql(t))
			return gl_err_set(err, GL_EINVAL,
					  "aggregate: unknown dimension '%s' (team, project, cost_center, user, account, "
					  "cluster, partition, qos, namespace, gpu_model, workload_type)",
					  t);
		if (p->n_dims == GL_CHARGEBACK_MAX_DIMS)
			return gl_err_set(err, GL_EINVAL, "aggregate: at most %d dimensions", GL_CHARGEBACK_MAX_DIMS);
		for (size_t i = 0; i < p->n_dims; i++)
			if (!strcmp(p->dims[i], t))
				return gl_err_set(err, GL_EINVAL, "aggregate: '%s' given twice", t);
		p->dims[p->n_dims++] = t;
	}
	if (!p->n_dims)
		return gl_err_set(err, GL_EINVAL, "aggregate: empty");
	*param = "window";
	{
		struct gl_err e = {0};
		struct gl_window w;
		int64_t align = p->step == GL_WINDOW_STEP_WEEK ? 7 * 86400 : 86400;
		/* weeks start on Monday; 1970-01-01 was a Thursday */
		int64_t off = p->step == GL_WINDOW_STEP_WEEK ? 4 * 86400 : 0;
		if (gl_window_parse(q->window, now_s, &w, &e))
			return gl_err_set(err, GL_EINVAL, "window: %s", e.msg);
		if (w.end_s - w.start_s > max_window_days * 86400)
			return gl_err_set(err, GL_EINVAL, "window: longer than api.max_window_days (%lld days)",
					  (long long)max_window_days);
		/* whole steps only, the first starting a day (a week), the last
		 * ended by now: a partial step would look like a drop in demand */
		if (w.end_s > now_s)
			w.end_s = now_s;
		w.start_s = (w.start_s - off) / align * align + off - ((w.start_s - off) % align < 0 ? align : 0);
		w.end_s = w.start_s + (w.end_s - w.start_s) / p->step_s * p->step_s;
		if (w.end_s <= w.start_s)
			return gl_err_set(err, GL_EINVAL, "window: holds no complete %s before now", q->step);
		if ((w.end_s - w.start_s) / p->step_s > FC_MAX_STEPS)
			return gl_err_set(err, GL_EINVAL, "window: more than %d steps of one %s", FC_MAX_STEPS, q->step);
		p->window = w;
	}
	*param = "exclude";
	{
		char buf[sizeof q->exclude], *sv = NULL;
		if (*q->exclude && gl_apijson_list_has_empty(q->exclude, ';'))
			return gl_err_set(err, GL_EINVAL, "exclude: empty window in '%s'", q->exclude);
		snprintf(buf, sizeof buf, "%s", q->exclude);
		for (char *t = strtok_r(buf, ";", &sv); t; t = strtok_r(NULL, ";", &sv)) {
			struct gl_err e = {0};
			if (p->n_excl == GL_ARRAY_LEN(p->excl))
				return gl_err_set(err, GL_EINVAL, "exclude: at most %zu windows", GL_ARRAY_LEN(p->excl));
			if (gl_window_parse(t, now_s, &p->excl[p->n_excl], &e))
				return gl_err_set(err, GL_EINVAL, "exclude: '%s': %s", t, e.msg);
			p->n_excl++;
		}
	}
	*param = NULL;
	return 0;
}

/* 1 when step [a, b) overlaps an excluded window. */
static int excluded(const struct fc_params *p, int64_t a, int64_t b)
{
	for (size_t i = 0; i < p->n_excl; i++)
		if (p->excl[i].start_s < b && p->excl[i].end_s > a)
			return 1;
	return 0;
}

static void add_num_or_null(cJSON *o, const char *k, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

/* Rounded for the wire: values are GPU-hours, GPUs or money. */
static double r4(double v)
{
	return round(v * 10000) / 10000;
}

/* Computes the whole answer into body. */
/* root on one line and a newline, the cached body of an answer */
static void put_json(struct gl_strbuf *body, const cJSON *root)
{
	char *s = cJSON_PrintUnformatted(root);
	if (!s)
		gl_oom(0);
	gl_strbuf_puts(body, s);
	gl_strbuf_putc(body, '\n');
	cJSON_free(s);
}

/* The accuracy of a forecast beside it: over all its leads, and per lead
 * bucket (the bands are per bucket too). */
static void add_accuracy(cJSON *so, const struct gl_forecast_result *r, int baseline)
{
	cJSON *acc = cJSON_AddObjectToObject(so, "accuracy"), *by;
	add_num_or_null(acc, "mase", r->cv.mase);
	add_num_or_null(acc, "wape", r->cv.wape);
	add_num_or_null(acc, "coverage80", r->cv.coverage80);
	add_num_or_null(acc, "coverage95", r->cv.coverage95);
	cJSON_AddNumberToObject(acc, "origins", r->origins);
	if (baseline) {
		add_num_or_null(acc, "baseline_mase",
				r->baseline >= 0 && r->scale > 0 ? r->cv_method[r->baseline].mae / r->scale : NAN);
		if (r->baseline >= 0)
			cJSON_AddStringToObject(acc, "baseline", gl_forecast_method_name(r->baseline));
		else
			cJSON_AddNullToObject(acc, "baseline");
	}
	by = cJSON_AddArrayToObject(acc, "by_lead");
	for (int b = 0; b < GL_FORECAST_BUCKETS; b++) {
		cJSON *o;
		if (!r->bucket_first[b])
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "bucket", gl_forecast_bucket_name(b));
		cJSON_AddNumberToObject(o, "first_lead", r->bucket_first[b]);
		cJSON_AddNumberToObject(o, "last_lead", r->bucket_last[b]);
		cJSON_AddNumberToObject(o, "n", (double)r->cv_bucket[b].n);
		add_num_or_null(o, "mase", r->cv_bucket[b].mase);
		add_num_or_null(o, "wape", r->cv_bucket[b].wape);
		add_num_or_null(o, "coverage80", r->cv_bucket[b].coverage80);
		add_num_or_null(o, "coverage95", r->cv_bucket[b].coverage95);
		add_num_or_null(o, "pinball80", r->cv_bucket[b].pinball80);
		cJSON_AddItemToArray(by, o);
	}
}

/* The earliest time any source's data reaches (data_through): a history
 * step ending after it holds time some source did not see. INT64_MAX when
 * there are no sources. */
static int64_t data_end_of(const struct gl_ingest_data_through_set *dt)
{
	int64_t e = INT64_MAX;
	for (size_t i = 0; i < dt->n; i++)
		if (dt->rows[i].through_s < e)
			e = dt->rows[i].through_s;
	return e;
}

static int fc_compute(struct gl_store *store, const struct fc_params *p, const struct gl_forecast_cache_req *q, int64_t now_s,
		      struct gl_strbuf *body, struct gl_err *err)
{
	struct gl_window *steps = NULL;
	struct gl_fcseries fs = {0};
	struct gl_ingest_data_through_set dt = {0};
	struct gl_filter flt = {0};
	size_t n_steps = 0;
	cJSON *root = NULL, *arr;
	double *fit_y = NULL;
	int64_t data_end;
	int rc;

	steps = gl_xcalloc(FC_MAX_STEPS, sizeof *steps);
	if ((rc = gl_window_split(&p->window, p->step, steps, FC_MAX_STEPS, &n_steps, err)))
		goto out;
	/* the route checked the filter (and narrowed it to a token's scope) */
	if (*q->filter && (rc = gl_filter_parse(q->filter, gl_accounting_dims, &flt, err)))
		goto out;
	if ((rc = gl_fcseries_query(store, p->metric, steps, n_steps, p->dims, p->n_dims, *q->filter ? &flt : NULL,
				    now_s, &fs, err)) ||
	    (rc = gl_ingest_data_through(store, &dt, err)))
		goto out;
	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "metric", gl_fcseries_metric_name(p->metric));
	cJSON_AddStringToObject(root, "step", q->step);
	cJSON_AddStringToObject(root, "aggregate", q->aggregate);
	if (*q->filter)
		cJSON_AddStringToObject(root, "filter", q->filter);
	gl_apijson_add_window(root, "window", &p->window);
	cJSON_AddNumberToObject(root, "horizon", p->horizon);
	gl_apijson_add_time(root, "computed_at", now_s);
	/* the history a forecast is fitted to may reach past what the sources
	 * saw: the steps after it read as a fall in demand, not as silence */
	gl_apijson_add_data_through(root, &dt, p->window.end_s, now_s);
	data_end = data_end_of(&dt);
	arr = cJSON_AddArrayToObject(root, "series");
	for (size_t i = 0; i < fs.n; i++) {
		struct gl_forecast_opts o = {0};
		struct gl_forecast_result r;
		cJSON *so = cJSON_CreateObject(), *hist, *fc;
		o.slots_per_day = p->step == GL_WINDOW_STEP_HOUR ? 24 : 1;
		o.slots_per_week = p->step == GL_WINDOW_STEP_HOUR ? 168 : p->step == GL_WINDOW_STEP_DAY ? 7 : 1;
		o.horizon = p->horizon;
		o.method = GL_FORECAST_AUTO;
		/* excluded steps are missing to the forecaster (NaN: imputed for
		 * fitting, never scored); history still shows what happened */
		for (size_t k = 0; k < n_steps && p->n_excl; k++)
			if (excluded(p, steps[k].start_s, steps[k].end_s)) {
				if (!fit_y)
					fit_y = gl_xmalloc(sizeof(double) * n_steps);
				memcpy(fit_y, fs.s[i].v, sizeof(double) * n_steps);
				break;
			}
		if (fit_y)
			for (size_t k = 0; k < n_steps; k++)
				fit_y[k] = excluded(p, steps[k].start_s, steps[k].end_s) ? NAN : fs.s[i].v[k];
		{
			const double *yv = fit_y ? fit_y : fs.s[i].v;
			size_t s0 = gl_forecast_active_start(yv, n_steps, o.slots_per_day);
			o.first_weekday = gl_timeutil_weekday(steps[s0].start_s);
			rc = gl_forecast_fit(yv + s0, n_steps - s0, &o, &r, err);
		}
		free(fit_y);
		fit_y = NULL;
		if (rc) {
			cJSON_Delete(so);
			goto out;
		}
		cJSON_AddStringToObject(so, "key", fs.s[i].key);
		cJSON_AddStringToObject(so, "method", gl_forecast_method_name(r.method));
		cJSON_AddBoolToObject(so, "fallback", r.fallback);
		cJSON_AddStringToObject(so, "note", r.note);
		hist = cJSON_AddArrayToObject(so, "history");
		for (size_t k = 0; k < n_steps; k++) {
			cJSON *h = cJSON_CreateObject();
			gl_apijson_add_time(h, "t", steps[k].start_s);
			cJSON_AddNumberToObject(h, "value", r4(fs.s[i].v[k]));
			if (p->n_excl)
				cJSON_AddBoolToObject(h, "excluded", excluded(p, steps[k].start_s, steps[k].end_s));
			cJSON_AddBoolToObject(h, "past_data_through",
					      (steps[k].end_s < now_s ? steps[k].end_s : now_s) > data_end);
			cJSON_AddItemToArray(hist, h);
		}
		cJSON_AddNumberToObject(so, "horizon_answered", r.horizon);
		fc = cJSON_AddArrayToObject(so, "forecast");
		for (int k = 0; k < r.horizon; k++) {
			cJSON *f = cJSON_CreateObject();
			gl_apijson_add_time(f, "t", p->window.end_s + (int64_t)k * p->step_s);
			cJSON_AddNumberToObject(f, "value", r4(r.point[k]));
			add_num_or_null(f, "lo80", p->lv80 ? r4(r.lo80[k]) : NAN);
			add_num_or_null(f, "hi80", p->lv80 ? r4(r.hi80[k]) : NAN);
			add_num_or_null(f, "lo95", p->lv95 ? r4(r.lo95[k]) : NAN);
			add_num_or_null(f, "hi95", p->lv95 ? r4(r.hi95[k]) : NAN);
			cJSON_AddItemToArray(fc, f);
		}
		add_accuracy(so, &r, 1);
		cJSON_AddItemToArray(arr, so);
		gl_forecast_result_fini(&r);
	}
	put_json(body, root);
out:
	cJSON_Delete(root);
	gl_fcseries_fini(&fs);
	gl_filter_fini(&flt);
	gl_ingest_data_through_fini(&dt);
	free(steps);
	return rc;
}


/* ---- /v1/capacity/forecast ---- */

#define CAP_MAX_HOURS (800 * 24) /* the hourly history behind a capacity forecast: 800 days */

struct cap_params {
	int horizon;
	int weekly;              /* step=week: weekly peaks, a year ahead at most */
	int64_t step_s;
	double risk;             /* the purchase recommendation keeps P(saturation) under this */
	const char *cluster;     /* NULL: all */
	const char *plan;        /* what-if changes (gl_capplan_parse), never saved; "" none */
	struct gl_window window; /* whole steps */
};

static int cap_parse(const struct gl_forecast_cache_req *q, int64_t now_s, int64_t max_window_days, struct cap_params *p,
		     const char **param, struct gl_err *err)
{
	struct gl_err e = {0};
	long long h;
	int64_t align, off;
	memset(p, 0, sizeof *p);
	*param = "step";
	if (!*q->step || !strcmp(q->step, "day"))
		p->step_s = 86400;
	else if (!strcmp(q->step, "week"))
		p->weekly = 1, p->step_s = 7 * 86400;
	else
		return gl_err_set(err, GL_EINVAL, "step: '%s' is not day or week", q->step);
	*param = "horizon";
	h = p->weekly ? 26 : 30;
	if ((*q->horizon && gl_apijson_digits(q->horizon, &h)) || h < 1 || h > (p->weekly ? 53 : 366))
		return gl_err_set(err, GL_EINVAL, "horizon: '%s' is not 1..%d %s", q->horizon, p->weekly ? 53 : 366,
				  p->weekly ? "weeks" : "days");
	p->horizon = (int)h;
	*param = "risk";
	p->risk = 0.2;
	if (*q->level) {
		char *end;
		double v = strtod(q->level, &end);
		if (*end || !(v >= 2.5 && v <= 50))
			return gl_err_set(err, GL_EINVAL, "risk: '%s' is not a percentage from 2.5 to 50", q->level);
		p->risk = v / 100;
	}
	p->cluster = *q->aggregate ? q->aggregate : NULL;
	p->plan = q->plan;
	*param = "window";
	if (gl_window_parse(q->window, now_s, &p->window, &e))
		return gl_err_set(err, GL_EINVAL, "window: %s", e.msg);
	if (p->window.end_s - p->window.start_s > max_window_days * 86400)
		return gl_err_set(err, GL_EINVAL, "window: longer than api.max_window_days (%lld days)",
				  (long long)max_window_days);
	if (p->window.end_s > now_s)
		p->window.end_s = now_s;
	/* whole steps, a week's starting on Monday (1970-01-01 was a Thursday) */
	align = p->step_s;
	off = p->weekly ? 4 * 86400 : 0;
	p->window.start_s = (p->window.start_s - off) / align * align + off - ((p->window.start_s - off) % align < 0 ? align : 0);
	p->window.end_s = p->window.start_s + (p->window.end_s - p->window.start_s) / align * align;
	if (p->window.end_s <= p->window.start_s)
		return gl_err_set(err, GL_EINVAL, "window: holds no complete %s before now", p->weekly ? "week" : "day");
	if ((p->window.end_s - p->window.start_s) / 3600 > CAP_MAX_HOURS)
		return gl_err_set(err, GL_EINVAL, "window: more than %d days", CAP_MAX_HOURS / 24);
	*param = "plan";
	{
		struct gl_capplan_change *pl = NULL;
		size_t n = 0;
		int rc = gl_capplan_parse(p->plan, &pl, &n, &e);
		free(pl);
		if (rc)
			return gl_err_set(err, GL_EINVAL, "plan: %s", e.msg);
	}
	*param = NULL;
	return 0;
}

/* Will tomorrow's queue be saturated (GPUs pending for an hour or more)?
 * The logistic model on how each day ended (gl_forecast_sat_*), fitted on
 * every cluster/model's days of the window, and its accuracy on the
 * window's last third when fitted on the days before it, beside
 * persistence's. Fills p[] (NaN: no day for that queue). */
static void sat_json(cJSON *root, const struct gl_forecast_satday *sat, size_t nk, size_t nd, const size_t *start,
		     int64_t day0_s, double *p)
{
	cJSON *o = cJSON_AddObjectToObject(root, "queue_saturation"), *acc;
	struct gl_forecast_satscore sc;
	struct gl_err e = {0};
	int fitted = 0;
	size_t test_from = nd - nd / 3;
	char note[200];

	cJSON_AddStringToObject(o, "definition", "GPUs pending in the queue for at least 60 minutes of the day");
	if (gl_forecast_sat_next(sat, nk, nd, start, p, &fitted, &e)) {
		for (size_t i = 0; i < nk; i++)
			p[i] = NAN;
		cJSON_AddNullToObject(o, "method");
		cJSON_AddStringToObject(o, "note", e.msg);
		cJSON_AddNullToObject(o, "accuracy");
		return;
	}
	cJSON_AddStringToObject(o, "method", fitted ? "logistic" : "rate");
	if (fitted)
		snprintf(note, sizeof note, "logistic model on how the day before ended, fitted on the window's queue-days");
	else
		snprintf(note, sizeof note, "the window's days are all alike (never or always saturated): no model, "
					    "the rate (saturated + 1) / (days + 2)");
	/* a backtest needs two weeks to fit and a week to score */
	if (nd < 21 || gl_forecast_sat_backtest(sat, nk, nd, start, test_from, &sc, &e)) {
		size_t len = strlen(note);
		snprintf(note + len, sizeof note - len, "; no backtest (%s)",
			 nd < 21 ? "under 21 days in the window" : "training days all alike");
		cJSON_AddStringToObject(o, "note", note);
		cJSON_AddNullToObject(o, "accuracy");
		return;
	}
	cJSON_AddStringToObject(o, "note", note);
	acc = cJSON_AddObjectToObject(o, "accuracy");
	cJSON_AddNumberToObject(acc, "days", (double)sc.days);
	cJSON_AddNumberToObject(acc, "saturated_days", (double)sc.saturated);
	add_num_or_null(acc, "accuracy", r4(sc.accuracy));
	add_num_or_null(acc, "f1", r4(sc.f1));
	add_num_or_null(acc, "persistence_accuracy", r4(sc.persist_accuracy));
	add_num_or_null(acc, "persistence_f1", r4(sc.persist_f1));
	{
		char from[32];
		gl_timeutil_format_day(day0_s + 86400 * (int64_t)test_from, from, sizeof from);
		cJSON_AddStringToObject(acc, "scored_from", from);
	}
}

static void plan_json(cJSON *arr, const struct gl_capplan_change *c)
{
	cJSON *o = cJSON_CreateObject();
	char day[32];
	gl_timeutil_format_day(c->day_s, day, sizeof day);
	if (c->id)
		cJSON_AddNumberToObject(o, "id", (double)c->id);
	cJSON_AddStringToObject(o, "cluster", c->cluster);
	cJSON_AddStringToObject(o, "gpu_model", c->gpu_model);
	cJSON_AddStringToObject(o, "action", c->gpus > 0 ? "add" : "retire");
	cJSON_AddNumberToObject(o, "gpus", (double)(c->gpus > 0 ? c->gpus : -c->gpus));
	cJSON_AddStringToObject(o, "date", day);
	cJSON_AddStringToObject(o, "source", c->source);
	if (c->line)
		cJSON_AddNumberToObject(o, "config_line", c->line);
	cJSON_AddStringToObject(o, "note", c->note);
	cJSON_AddItemToArray(arr, o);
}

/* The purchases that keep P(saturation) under the risk level, with the
 * procurement lead time: a null list (and why) when the capacity or the
 * demand interval is unknown. */
static void recommendation_json(cJSON *so, const struct gl_capplan_outlook *ol, const struct gl_capplan_outlook_opts *o)
{
	cJSON *rec = cJSON_AddObjectToObject(so, "recommendation"), *arr;
	cJSON_AddNumberToObject(rec, "risk", o->risk);
	cJSON_AddNumberToObject(rec, "lead_days", (double)(o->lead_s / 86400));
	if (!ol->purchases_known) {
		cJSON_AddNullToObject(rec, "purchases");
		cJSON_AddNullToObject(rec, "gpus");
		cJSON_AddStringToObject(rec, "note", ol->note);
		return;
	}
	arr = cJSON_AddArrayToObject(rec, "purchases");
	for (size_t i = 0; i < ol->n_purchases; i++) {
		const struct gl_capplan_purchase *pu = &ol->purchases[i];
		cJSON *b = cJSON_CreateObject();
		char d1[32], d2[32];
		gl_timeutil_format_day(pu->need_by_s, d1, sizeof d1);
		gl_timeutil_format_day(pu->order_by_s, d2, sizeof d2);
		cJSON_AddStringToObject(b, "need_by", d1);
		cJSON_AddStringToObject(b, "order_by", d2);
		cJSON_AddNumberToObject(b, "gpus", (double)pu->gpus);
		cJSON_AddNumberToObject(b, "total", (double)pu->total);
		cJSON_AddBoolToObject(b, "late", pu->late);
		cJSON_AddItemToArray(arr, b);
	}
	cJSON_AddNumberToObject(rec, "gpus", ol->n_purchases ? (double)ol->purchases[ol->n_purchases - 1].total : 0);
	cJSON_AddStringToObject(rec, "note", ol->note);
}

static void saturation_json(cJSON *so, const struct gl_capplan_outlook *ol, int64_t end_s)
{
	for (int w = 0; w < 2; w++) {
		long s = w ? ol->sat80 : ol->sat50;
		char date[32];
		if (s >= 0) {
			gl_timeutil_format_day(ol->steps[s].start_s, date, sizeof date);
			cJSON_AddStringToObject(so, w ? "saturation_date_p80" : "saturation_date_p50", date);
		} else {
			cJSON_AddNullToObject(so, w ? "saturation_date_p80" : "saturation_date_p50");
		}
		add_num_or_null(so, w ? "days_until_saturation_p80" : "days_until_saturation_p50",
				s >= 0 ? (double)((ol->steps[s].start_s - end_s) / 86400 + 1) : NAN);
	}
}

static cJSON *steps_json(const struct gl_capplan_outlook *ol)
{
	cJSON *steps = cJSON_CreateArray();
	for (int i = 0; i < ol->fc.horizon; i++) {
		const struct gl_capplan_step *st = &ol->steps[i];
		cJSON *d = cJSON_CreateObject();
		char date[32];
		double ps = gl_capplan_p_saturation(st);
		gl_timeutil_format_day(st->start_s, date, sizeof date);
		cJSON_AddStringToObject(d, "date", date);
		cJSON_AddNumberToObject(d, "peak_demand", r4(ol->fc.point[i]));
		add_num_or_null(d, "p50", r4(st->q[2]));
		add_num_or_null(d, "lo80", r4(st->q[1]));
		add_num_or_null(d, "hi80", r4(st->q[3]));
		add_num_or_null(d, "lo95", r4(st->q[0]));
		add_num_or_null(d, "hi95", r4(st->q[4]));
		add_num_or_null(d, "capacity_gpus", isfinite(st->capacity) ? r4(st->capacity) : NAN);
		add_num_or_null(d, "p_saturation", isfinite(ps) ? round(ps * 1000) / 1000 : NAN);
		cJSON_AddItemToArray(steps, d);
	}
	return steps;
}

/* One cluster/model: its peak demand forecast by step against the capacity
 * step line (now, plus the plan), the probability of saturation per step,
 * the first dates it reaches 50 % and 80 %, and the purchases. */
static int cap_series_json(cJSON *arr, const struct gl_capplan_key *k, const struct gl_capplan_demand *dm,
			   const struct gl_capplan_outlook_opts *o, double queue_p, struct gl_err *err)
{
	struct gl_capplan_outlook ol;
	cJSON *so, *hist, *pl;
	int64_t step_s = o->weekly ? 7 * 86400 : 86400;
	int rc;

	if ((rc = gl_capplan_outlook(k, dm->nd, dm->start_s, o, &ol, err)))
		return rc;
	so = cJSON_CreateObject();
	cJSON_AddStringToObject(so, "cluster", k->cluster);
	cJSON_AddStringToObject(so, "gpu_model", k->gpu_model);
	add_num_or_null(so, "capacity_gpus", isfinite(k->capacity) ? r4(k->capacity) : NAN);
	cJSON_AddStringToObject(so, "method", gl_forecast_method_name(ol.fc.method));
	cJSON_AddBoolToObject(so, "fallback", ol.fc.fallback);
	cJSON_AddStringToObject(so, "note", ol.fc.note);
	cJSON_AddNumberToObject(so, "horizon_answered", ol.fc.horizon);
	pl = cJSON_AddArrayToObject(so, "plan");
	for (size_t i = 0; i < o->n_plan; i++)
		if (o->plan[i].day_s > o->today_s && !strcmp(o->plan[i].cluster, k->cluster) &&
		    !strcasecmp(o->plan[i].gpu_model, k->gpu_model))
			plan_json(pl, &o->plan[i]);
	saturation_json(so, &ol, o->end_s);
	recommendation_json(so, &ol, o);
	{
		cJSON *qs = cJSON_AddObjectToObject(so, "queue_saturation");
		char date[32];
		gl_timeutil_format_day(o->end_s, date, sizeof date);
		cJSON_AddStringToObject(qs, "date", date);
		add_num_or_null(qs, "p", isfinite(queue_p) ? round(queue_p * 1000) / 1000 : NAN);
		add_num_or_null(qs, "last_day_pending_minutes",
				dm->nd ? round(k->sat[dm->nd - 1].pending_minutes * 10) / 10 : NAN);
	}
	cJSON_AddItemToObject(so, o->weekly ? "weeks" : "days", steps_json(&ol));
	hist = cJSON_AddArrayToObject(so, "history");
	for (size_t i = 0; i < ol.n_hist; i++) {
		cJSON *h = cJSON_CreateObject();
		char date[32];
		gl_timeutil_format_day(dm->start_s + step_s * (int64_t)i, date, sizeof date);
		cJSON_AddStringToObject(h, "date", date);
		cJSON_AddNumberToObject(h, "peak_demand", r4(ol.hist[i]));
		cJSON_AddItemToArray(hist, h);
	}
	add_accuracy(so, &ol.fc, 0);
	cJSON_AddItemToArray(arr, so);
	gl_capplan_outlook_fini(&ol);
	return 0;
}

/* The plan in force: the stored one and the what-if's changes (checked
 * with it, never saved). A bad what-if names "plan". */
static int cap_plan(struct gl_store *store, const struct gl_config *cfg, const struct cap_params *p, int64_t now_s,
		    struct gl_capplan_change **plan, size_t *n, const char **param, struct gl_err *err)
{
	struct gl_capplan_change *wi = NULL, *st = NULL;
	size_t nw = 0, ns = 0, bad = 0;
	const char *field = NULL;
	int rc;
	*plan = NULL;
	*n = 0;
	if ((rc = gl_capplan_parse(p->plan, &wi, &nw, err)) ||
	    (rc = gl_capplandb_check(store, cfg, now_s, NULL, wi, nw, &bad, &field, err))) {
		if (rc == -GL_EINVAL) {
			char msg[sizeof err->msg];
			snprintf(msg, sizeof msg, "%s", err->msg);
			*param = "plan";
			if (field)
				gl_err_set(err, GL_EINVAL, "plan: entry %zu: %s: %s", bad + 1, field, msg);
			else
				gl_err_set(err, GL_EINVAL, "plan: %s", msg);
		}
		goto out;
	}
	if ((rc = gl_capplandb_list(store, NULL, &st, &ns, err)))
		goto out;
	*plan = gl_xcalloc(ns + nw + 1, sizeof **plan);
	if (ns)
		memcpy(*plan, st, sizeof *st * ns);
	if (nw)
		memcpy(*plan + ns, wi, sizeof *wi * nw);
	*n = ns + nw;
out:
	free(wi);
	free(st);
	return rc;
}

/* Peak demand per cluster/model and step (hourly allocated + pending GPUs,
 * the day's or week's maximum), forecast by step, against the GPUs
 * available in the window's last hour (present less down and planned down:
 * docs/capacity.md) and the plan's changes after today. */
static int cap_compute(struct gl_store *store, const struct gl_config *cfg, const struct cap_params *p, int64_t now_s,
		       struct gl_strbuf *body, const char **param, struct gl_err *err)
{
	struct gl_capplan_demand dm = {0};
	struct gl_capplan_change *plan = NULL;
	struct gl_capplan_outlook_opts o = {0};
	struct gl_forecast_satday *sat = NULL;
	size_t n_plan = 0, *sat_start = NULL, nd, nk;
	double *sat_p = NULL;
	cJSON *root = NULL, *arr;
	int rc;

	o.today_s = now_s - ((now_s % 86400) + 86400) % 86400;
	if ((rc = gl_capplandb_demand(store, &p->window, p->cluster, now_s, &dm, err)) ||
	    (rc = cap_plan(store, cfg, p, now_s, &plan, &n_plan, param, err)))
		goto out;
	/* a model the plan brings to a cluster with an inventory starts from 0
	 * GPUs there (a cluster without one stays unknown) */
	for (size_t i = 0; i < n_plan; i++) {
		struct gl_capplan_key *k;
		if (plan[i].day_s <= o.today_s || (p->cluster && strcmp(plan[i].cluster, p->cluster)))
			continue;
		k = gl_capplan_demand_key(&dm, plan[i].cluster, plan[i].gpu_model);
		for (size_t j = 0; j < dm.nk && isnan(k->capacity); j++)
			if (!strcmp(dm.keys[j].cluster, k->cluster) && dm.keys[j].cluster_inventory)
				k->capacity = 0;
	}
	nd = dm.nd, nk = dm.nk;
	/* queue saturation, per cluster/model and day */
	sat = gl_xcalloc(nk * nd + 1, sizeof *sat);
	sat_start = gl_xcalloc(nk + 1, sizeof *sat_start);
	sat_p = gl_xcalloc(nk + 1, sizeof *sat_p);
	for (size_t i = 0; i < nk; i++) {
		/* a queue is no older than its demand (as the peak series), and one
		 * with none in the window (an idle model) has no days */
		sat_start[i] = nd;
		for (size_t d = 0; d < nd; d++)
			if (dm.keys[i].peak[d] > 0) {
				sat_start[i] = gl_forecast_active_start(dm.keys[i].peak, nd, 1);
				break;
			}
		memcpy(sat + i * nd, dm.keys[i].sat, sizeof *sat * nd);
	}
	root = cJSON_CreateObject();
	gl_apijson_add_window(root, "window", &p->window);
	cJSON_AddStringToObject(root, "step", p->weekly ? "week" : "day");
	cJSON_AddNumberToObject(root, "horizon", p->horizon);
	gl_apijson_add_time(root, "computed_at", now_s);
	cJSON_AddNumberToObject(root, "risk", p->risk);
	cJSON_AddNumberToObject(root, "procurement_lead_days", (double)cfg->procurement_lead_days);
	{
		cJSON *po = cJSON_AddObjectToObject(root, "plan"), *pa;
		cJSON_AddBoolToObject(po, "what_if", *p->plan != '\0');
		pa = cJSON_AddArrayToObject(po, "changes");
		for (size_t i = 0; i < n_plan; i++)
			plan_json(pa, &plan[i]);
	}
	sat_json(root, sat, nk, nd, sat_start, p->window.start_s, sat_p);
	arr = cJSON_AddArrayToObject(root, "series");
	o.weekly = p->weekly;
	o.horizon = p->horizon;
	o.end_s = p->window.end_s;
	o.lead_s = cfg->procurement_lead_days * 86400;
	o.risk = p->risk;
	o.plan = plan;
	o.n_plan = n_plan;
	for (size_t i = 0; i < nk; i++)
		if ((rc = cap_series_json(arr, &dm.keys[i], &dm, &o, sat_p[i], err)))
			goto out;
	put_json(body, root);
out:
	gl_capplan_demand_fini(&dm);
	free(sat);
	free(sat_start);
	free(sat_p);
	free(plan);
	cJSON_Delete(root);
	return rc;
}

/* ---- the cache ---- */

/* every field and its separator: a key never cuts, so two requests never
 * share a cache slot by accident */
#define FC_KEY_LEN (sizeof(struct gl_forecast_cache_req) + 16)

struct fc_ent {
	char key[FC_KEY_LEN];
	struct gl_forecast_cache_req q;
	char *body;
	int64_t computed_s, used_s;
};
static struct fc_ent cache[FC_CACHE_SLOTS];
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static void req_key(const struct gl_forecast_cache_req *q, char *buf, size_t n)
{
	snprintf(buf, n, "%c|%s|%s|%s|%s|%s|%s|%s|%s|%s", q->kind, q->metric, q->step, q->horizon, q->level, q->aggregate,
		 q->window, q->exclude, q->plan, q->filter);
}

/* A copy of a fresh cached body, or NULL. */
static char *cache_get(const char *key, int64_t now_s)
{
	char *out = NULL;
	pthread_mutex_lock(&cache_mu);
	for (int i = 0; i < FC_CACHE_SLOTS; i++)
		if (cache[i].body && !strcmp(cache[i].key, key)) {
			if (now_s - cache[i].computed_s < FC_REFRESH_S && now_s >= cache[i].computed_s)
				out = gl_xstrdup(cache[i].body);
			cache[i].used_s = now_s;
			break;
		}
	pthread_mutex_unlock(&cache_mu);
	return out;
}

static void cache_put(const struct gl_forecast_cache_req *q, const char *key, const char *body, int64_t now_s, int touch)
{
	int slot = -1;
	pthread_mutex_lock(&cache_mu);
	for (int i = 0; i < FC_CACHE_SLOTS && slot < 0; i++)
		if (cache[i].body && !strcmp(cache[i].key, key))
			slot = i;
	if (slot < 0) /* a free slot, else the least recently used */
		for (int i = 0; i < FC_CACHE_SLOTS; i++)
			if (slot < 0 || !cache[i].body || (cache[slot].body && cache[i].used_s < cache[slot].used_s))
				slot = i;
	free(cache[slot].body);
	snprintf(cache[slot].key, sizeof cache[slot].key, "%s", key);
	cache[slot].q = *q;
	cache[slot].body = gl_xstrdup(body);
	cache[slot].computed_s = now_s;
	if (touch || !cache[slot].used_s)
		cache[slot].used_s = now_s;
	pthread_mutex_unlock(&cache_mu);
}

/* Both kinds of request, parsed and computed the same way by the routes
 * and by the daemon's refresh. */
struct fc_any {
	struct fc_params f;
	struct cap_params c;
};

static int any_parse(struct gl_forecast_cache_req *q, int64_t now_s, int max_days, struct fc_any *a, const char **param,
		     struct gl_err *err)
{
	return q->kind == 'c' ? cap_parse(q, now_s, max_days, &a->c, param, err)
			      : fc_parse(q, now_s, max_days, &a->f, param, err);
}

static int any_compute(struct gl_store *store, const struct gl_config *cfg, const struct fc_any *a, const struct gl_forecast_cache_req *q,
		       int64_t now_s, struct gl_strbuf *b, const char **param, struct gl_err *err)
{
	*param = NULL;
	return q->kind == 'c' ? cap_compute(store, cfg, &a->c, now_s, b, param, err) : fc_compute(store, &a->f, q, now_s, b, err);
}

int gl_forecast_cache_answer(const struct gl_forecast_cache_req *q, const struct gl_config *cfg, int64_t now_s,
			     gl_forecast_cache_store_fn get_store, void *ctx, struct gl_strbuf *body, const char **param,
			     int *bad_param, struct gl_err *err)
{
	struct gl_forecast_cache_req k = *q;
	struct fc_any a;
	char key[FC_KEY_LEN], *cached;
	struct gl_store *store;
	int rc;

	*param = NULL;
	*bad_param = 0;
	if ((rc = any_parse(&k, now_s, cfg->api_max_window_days, &a, param, err))) {
		*bad_param = 1;
		return rc;
	}
	req_key(&k, key, sizeof key);
	if ((cached = cache_get(key, now_s))) {
		gl_strbuf_puts(body, cached);
		free(cached);
		return 0;
	}
	if ((rc = get_store(ctx, &store, err)) || (rc = any_compute(store, cfg, &a, &k, now_s, body, param, err)))
		return rc;
	cache_put(&k, key, gl_strbuf_cstr(body), now_s, 1);
	return 0;
}

const char *const *gl_forecast_cache_filter_dims(void)
{
	return gl_accounting_dims;
}

void gl_forecast_cache_drop(char kind)
{
	pthread_mutex_lock(&cache_mu);
	for (int i = 0; i < FC_CACHE_SLOTS; i++)
		if (cache[i].body && cache[i].q.kind == kind) {
			free(cache[i].body);
			cache[i].body = NULL;
		}
	pthread_mutex_unlock(&cache_mu);
}

int gl_forecast_cache_refresh(struct gl_store *store, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			      size_t n, struct gl_err *err)
{
	int done = 0, dropped = 0, rc = 0;
	(void)src;
	for (int i = 0; i < FC_CACHE_SLOTS; i++) {
		struct gl_forecast_cache_req q;
		struct fc_any a;
		struct gl_strbuf body = GL_STRBUF_INIT;
		const char *param;
		char key[FC_KEY_LEN];
		int live;
		pthread_mutex_lock(&cache_mu);
		live = cache[i].body != NULL;
		if (live && now_s - cache[i].used_s > FC_KEEP_S) {
			/* nobody asked for a day: stop refreshing it */
			free(cache[i].body);
			cache[i].body = NULL;
			live = 0;
			dropped++;
		}
		if (live)
			q = cache[i].q;
		pthread_mutex_unlock(&cache_mu);
		if (!live)
			continue;
		if ((rc = any_parse(&q, now_s, cfg->api_max_window_days, &a, &param, err)) ||
		    (rc = any_compute(store, cfg, &a, &q, now_s, &body, &param, err))) {
			gl_strbuf_fini(&body);
			break;
		}
		req_key(&q, key, sizeof key);
		cache_put(&q, key, gl_strbuf_cstr(&body), now_s, 0);
		gl_strbuf_fini(&body);
		done++;
	}
	snprintf(summary, n, "%d forecasts refreshed, %d dropped", done, dropped);
	return rc;
}
