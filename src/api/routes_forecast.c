/* /v1/forecast: demand forecasts per owner (or cluster, model...) with the
 * accuracy each method had on the series' own history, from the same
 * accounting data as /v1/chargeback. Answers come from a small cache of
 * computed forecasts that the daemon's "forecast" source refreshes, so a
 * dashboard asking again is served without refitting. */
#include "gl/apijson.h"
#include "gl/accounting.h"
#include "gl/audit.h"
#include "gl/auth.h"
#include "gl/capacity.h"
#include "gl/daemon.h"
#include "gl/fcseries.h"
#include "gl/forecast.h"
#include "gl/inventory.h"
#include "gl/routes.h"
#include "gl/store.h"
#include "gl/strbuf.h"
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

/* The request as given (strings, so the daemon can recompute it). */
struct fc_req {
	char kind; /* 'f' /v1/forecast, 'c' /v1/capacity/forecast (cluster in aggregate) */
	char metric[32], step[16], horizon[16], level[16], aggregate[256], window[128], exclude[GL_AUDIT_FIELD_MAX];
};

struct fc_params {
	int metric;
	enum gl_step step;
	int64_t step_s;
	int horizon;
	int lv80, lv95;
	char agg_buf[256];
	const char *dims[GL_CB_MAX_DIMS];
	size_t n_dims;
	struct gl_window window;
	struct gl_window excl[16]; /* holidays, maintenance: left out of fitting and scoring */
	size_t n_excl;
};

/* Checks every parameter; on error names it in *param and says why in err. */
static int fc_parse(const struct fc_req *q, int64_t now_s, int64_t max_window_days, struct fc_params *p,
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
		p->step = GL_STEP_HOUR, p->step_s = 3600;
	else if (!strcmp(q->step, "day"))
		p->step = GL_STEP_DAY, p->step_s = 86400;
	else if (!strcmp(q->step, "week"))
		p->step = GL_STEP_WEEK, p->step_s = 7 * 86400;
	else
		return gl_err_set(err, GL_EINVAL, "step: '%s' is not hour, day or week", q->step);
	*param = "horizon";
	{
		/* a year ahead at most, at any step */
		long max = p->step == GL_STEP_HOUR ? 24 * 14 : p->step == GL_STEP_DAY ? 366 : 53;
		long def = p->step == GL_STEP_HOUR ? 24 : p->step == GL_STEP_DAY ? 14 : 12;
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
		if (!gl_acct_dim_sql(t))
			return gl_err_set(err, GL_EINVAL,
					  "aggregate: unknown dimension '%s' (team, project, cost_center, user, account, "
					  "cluster, partition, qos, namespace, gpu_model)",
					  t);
		if (p->n_dims == GL_CB_MAX_DIMS)
			return gl_err_set(err, GL_EINVAL, "aggregate: at most %d dimensions", GL_CB_MAX_DIMS);
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
		int64_t align = p->step == GL_STEP_WEEK ? 7 * 86400 : 86400;
		/* weeks start on Monday; 1970-01-01 was a Thursday */
		int64_t off = p->step == GL_STEP_WEEK ? 4 * 86400 : 0;
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

static int fc_compute(struct gl_store *st, const struct fc_params *p, const struct fc_req *q, int64_t now_s,
		      struct gl_strbuf *body, struct gl_err *err)
{
	struct gl_window *steps = NULL;
	struct gl_fcseries fs = {0};
	size_t n_steps = 0;
	cJSON *root = NULL, *arr;
	double *fit_y = NULL;
	int rc;

	steps = gl_xcalloc(FC_MAX_STEPS, sizeof *steps);
	if ((rc = gl_window_split(&p->window, p->step, steps, FC_MAX_STEPS, &n_steps, err)))
		goto out;
	if ((rc = gl_fcseries_query(st, p->metric, steps, n_steps, p->dims, p->n_dims, NULL, now_s, &fs, err)))
		goto out;
	root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "metric", gl_fcseries_metric_name(p->metric));
	cJSON_AddStringToObject(root, "step", q->step);
	cJSON_AddStringToObject(root, "aggregate", q->aggregate);
	gl_apijson_add_window(root, "window", &p->window);
	cJSON_AddNumberToObject(root, "horizon", p->horizon);
	gl_apijson_add_time(root, "computed_at", now_s);
	arr = cJSON_AddArrayToObject(root, "series");
	for (size_t i = 0; i < fs.n; i++) {
		struct gl_forecast_opts o = {0};
		struct gl_forecast_result r;
		cJSON *so = cJSON_CreateObject(), *hist, *fc, *acc;
		o.slots_per_day = p->step == GL_STEP_HOUR ? 24 : 1;
		o.slots_per_week = p->step == GL_STEP_HOUR ? 168 : p->step == GL_STEP_DAY ? 7 : 1;
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
			o.first_weekday = gl_time_weekday(steps[s0].start_s);
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
			cJSON_AddItemToArray(hist, h);
		}
		fc = cJSON_AddArrayToObject(so, "forecast");
		for (int k = 0; k < p->horizon; k++) {
			cJSON *f = cJSON_CreateObject();
			gl_apijson_add_time(f, "t", p->window.end_s + (int64_t)k * p->step_s);
			cJSON_AddNumberToObject(f, "value", r4(r.point[k]));
			add_num_or_null(f, "lo80", p->lv80 ? r4(r.lo80[k]) : NAN);
			add_num_or_null(f, "hi80", p->lv80 ? r4(r.hi80[k]) : NAN);
			add_num_or_null(f, "lo95", p->lv95 ? r4(r.lo95[k]) : NAN);
			add_num_or_null(f, "hi95", p->lv95 ? r4(r.hi95[k]) : NAN);
			cJSON_AddItemToArray(fc, f);
		}
		acc = cJSON_AddObjectToObject(so, "accuracy");
		add_num_or_null(acc, "mase", r.cv.mase);
		add_num_or_null(acc, "wape", r.cv.wape);
		add_num_or_null(acc, "coverage80", r.cv.coverage80);
		add_num_or_null(acc, "coverage95", r.cv.coverage95);
		cJSON_AddNumberToObject(acc, "origins", r.origins);
		add_num_or_null(acc, "baseline_mase",
				r.baseline >= 0 && r.scale > 0 ? r.cv_method[r.baseline].mae / r.scale : NAN);
		if (r.baseline >= 0)
			cJSON_AddStringToObject(acc, "baseline", gl_forecast_method_name(r.baseline));
		else
			cJSON_AddNullToObject(acc, "baseline");
		cJSON_AddItemToArray(arr, so);
		gl_forecast_result_fini(&r);
	}
	put_json(body, root);
out:
	cJSON_Delete(root);
	gl_fcseries_fini(&fs);
	free(steps);
	return rc;
}


/* ---- /v1/capacity/forecast ---- */

struct cap_params {
	int horizon;
	const char *cluster; /* NULL: all */
	struct gl_window window; /* whole days */
};

static int cap_parse(const struct fc_req *q, int64_t now_s, int64_t max_window_days, struct cap_params *p,
		     const char **param, struct gl_err *err)
{
	struct gl_err e = {0};
	long long h;
	memset(p, 0, sizeof *p);
	*param = "horizon";
	h = 30;
	if ((*q->horizon && gl_apijson_digits(q->horizon, &h)) || h < 1 || h > 366)
		return gl_err_set(err, GL_EINVAL, "horizon: '%s' is not 1..366 days", q->horizon);
	p->horizon = (int)h;
	p->cluster = *q->aggregate ? q->aggregate : NULL;
	*param = "window";
	if (gl_window_parse(q->window, now_s, &p->window, &e))
		return gl_err_set(err, GL_EINVAL, "window: %s", e.msg);
	if (p->window.end_s - p->window.start_s > max_window_days * 86400)
		return gl_err_set(err, GL_EINVAL, "window: longer than api.max_window_days (%lld days)",
				  (long long)max_window_days);
	if (p->window.end_s > now_s)
		p->window.end_s = now_s;
	p->window.start_s = p->window.start_s / 86400 * 86400 - (p->window.start_s % 86400 < 0 ? 86400 : 0);
	p->window.end_s = p->window.start_s + (p->window.end_s - p->window.start_s) / 86400 * 86400;
	if (p->window.end_s <= p->window.start_s)
		return gl_err_set(err, GL_EINVAL, "window: holds no complete day before now");
	if ((p->window.end_s - p->window.start_s) / 3600 > FC_MAX_STEPS)
		return gl_err_set(err, GL_EINVAL, "window: more than %d hours", FC_MAX_STEPS);
	*param = NULL;
	return 0;
}

struct cap_key {
	char cluster[128], model[128];
	double *peak;       /* daily peak of allocated + pending GPUs */
	double capacity;    /* GPUs available on the last day; NAN unknown */
};

static struct cap_key *cap_find(struct cap_key **arr, size_t *n, const char *cluster, const char *model, size_t ndays)
{
	for (size_t i = 0; i < *n; i++)
		/* both carry the canonical model (sql/024); case kept for safety */
		if (!strcmp((*arr)[i].cluster, cluster) && !strcasecmp((*arr)[i].model, model))
			return &(*arr)[i];
	*arr = gl_xrealloc(*arr, sizeof **arr * (*n + 1));
	struct cap_key *k = &(*arr)[(*n)++];
	memset(k, 0, sizeof *k);
	snprintf(k->cluster, sizeof k->cluster, "%s", cluster);
	snprintf(k->model, sizeof k->model, "%s", model);
	k->peak = gl_xcalloc(ndays, sizeof(double));
	k->capacity = NAN;
	return k;
}

/* The values of a cluster/model in a series keyed "cluster/model" (jobs
 * carry the model lowercased, inventories as reported), or NULL. */
static const double *cap_series(const struct gl_fcseries *f, const struct cap_key *k)
{
	char key[300];
	const double *v = NULL;
	snprintf(key, sizeof key, "%s/%s", k->cluster, k->model);
	for (size_t j = 0; j < f->n; j++)
		if (!strcasecmp(f->s[j].key, key))
			v = f->s[j].v;
	return v;
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
		gl_time_format_day(day0_s + 86400 * (int64_t)test_from, from, sizeof from);
		cJSON_AddStringToObject(acc, "scored_from", from);
	}
}

/* Peak demand per cluster/model and day (hourly allocated + pending GPUs,
 * the day's maximum), forecast by day, against the GPUs available in the
 * window's last hour (present less down and planned down: docs/capacity.md). */
static int cap_compute(struct gl_store *st, const struct cap_params *p, const struct fc_req *q, int64_t now_s,
		       struct gl_strbuf *body, struct gl_err *err)
{
	size_t nh = (size_t)((p->window.end_s - p->window.start_s) / 3600), nd = nh / 24, nk = 0, ncap = 0;
	struct gl_window *hours = gl_xcalloc(nh, sizeof *hours), last_hour;
	struct gl_fcseries alloc = {0}, pend = {0}, pmin = {0};
	struct gl_forecast_satday *sat = NULL;
	size_t *sat_start = NULL;
	double *sat_p = NULL;
	struct gl_cap_row *caps = NULL;
	struct cap_key *keys = NULL;
	const char *dims[2] = {"cluster", "gpu_model"};
	cJSON *root = NULL, *arr;
	char **names = NULL;
	size_t n_names = 0;
	int rc;
	(void)q;

	for (size_t i = 0; i < nh; i++)
		hours[i] = (struct gl_window){p->window.start_s + 3600 * (int64_t)i, p->window.start_s + 3600 * (int64_t)(i + 1)};
	/* the GPUs available in the window's last hour: a day's average would
	 * understate an inventory that began during that day (a new
	 * deployment's first day) and raise a false saturation alarm */
	last_hour = (struct gl_window){p->window.end_s - 3600, p->window.end_s};
	if ((rc = gl_fcseries_query(st, GL_FCS_GPU_HOURS, hours, nh, dims, 2, NULL, now_s, &alloc, err)) ||
	    (rc = gl_fcseries_query_pending(st, hours, nh, dims, 2, now_s, &pend, &pmin, err)) ||
	    (rc = gl_capacity_query(st, &last_hour, 1, GL_CAP_AGG_MODEL, p->cluster, now_s, &caps, &ncap, err)))
		goto out;
	/* series keys are "cluster/model"; a cluster name may hold a '/'
	 * itself, so the key is split after the longest cluster name it
	 * starts with, not at its first '/' */
	if ((rc = gl_inventory_cluster_names(st, &names, &n_names, err)))
		goto out;
	for (int which = 0; which < 2; which++) {
		const struct gl_fcseries *fs = which ? &pend : &alloc;
		for (size_t i = 0; i < fs->n; i++) {
			const char *cl = NULL;
			size_t len = 0;
			for (size_t r = 0; r < n_names && !cl; r++) {
				const char *nm = names[r];
				len = strlen(nm);
				if (!strncmp(fs->s[i].key, nm, len) && fs->s[i].key[len] == '/')
					cl = nm;
			}
			if (!cl || (p->cluster && strcmp(cl, p->cluster)))
				continue;
			cap_find(&keys, &nk, cl, fs->s[i].key + len + 1, nd);
		}
	}
	for (size_t i = 0; i < ncap; i++) {
		const struct gl_cap_row *r = &caps[i];
		struct cap_key *k = cap_find(&keys, &nk, r->cluster, r->key[0] ? r->key : "unknown", nd);
		/* the inventory's spelling of the model wins */
		snprintf(k->model, sizeof k->model, "%s", r->key[0] ? r->key : "unknown");
		int64_t avail = r->reported_gpu_seconds - r->down_gpu_seconds - r->planned_down_gpu_seconds;
		/* nothing reported: no inventory for it, capacity unknown (not 0) */
		if (r->reported_gpu_seconds > 0)
			k->capacity = (double)(avail > 0 ? avail : 0) / 3600.0;
	}
	/* hourly demand: allocated (GPU-hours in an hour = mean GPUs) + pending */
	for (size_t i = 0; i < nk; i++) {
		const double *a = cap_series(&alloc, &keys[i]), *pd = cap_series(&pend, &keys[i]);
		for (size_t h = 0; h < nd * 24; h++) {
			double v = (a ? a[h] : 0) + (pd ? pd[h] : 0);
			if (v > keys[i].peak[h / 24])
				keys[i].peak[h / 24] = v;
		}
	}
	/* queue saturation: the minutes of each day with GPUs waiting, of the
	 * day's last 3 hours and its last hour, per cluster/model */
	sat = gl_xcalloc(nk * nd + 1, sizeof *sat);
	sat_start = gl_xcalloc(nk + 1, sizeof *sat_start);
	sat_p = gl_xcalloc(nk + 1, sizeof *sat_p);
	for (size_t i = 0; i < nk; i++) {
		const double *m = cap_series(&pmin, &keys[i]);
		/* a queue is no older than its demand (as the peak series), and one
		 * with none in the window (an idle model) has no days */
		sat_start[i] = nd;
		for (size_t d = 0; d < nd; d++)
			if (keys[i].peak[d] > 0) {
				sat_start[i] = gl_forecast_active_start(keys[i].peak, nd, 1);
				break;
			}
		for (size_t h = 0; m && h < nd * 24; h++) {
			struct gl_forecast_satday *d = &sat[i * nd + h / 24];
			d->pending_minutes += m[h];
			if (h % 24 >= 21)
				d->pending_minutes_last3h += m[h];
			if (h % 24 == 23)
				d->pending_minutes_last1h += m[h];
		}
	}
	root = cJSON_CreateObject();
	gl_apijson_add_window(root, "window", &p->window);
	cJSON_AddNumberToObject(root, "horizon", p->horizon);
	gl_apijson_add_time(root, "computed_at", now_s);
	sat_json(root, sat, nk, nd, sat_start, p->window.start_s, sat_p);
	arr = cJSON_AddArrayToObject(root, "series");
	for (size_t i = 0; i < nk; i++) {
		struct gl_forecast_opts o = {0};
		struct gl_forecast_result r;
		cJSON *so = cJSON_CreateObject(), *days, *hist;
		int d50 = -1, d80 = -1;
		size_t s0 = gl_forecast_active_start(keys[i].peak, nd, 1);
		o.slots_per_day = 1;
		o.slots_per_week = 7;
		o.horizon = p->horizon;
		o.method = GL_FORECAST_AUTO;
		o.first_weekday = gl_time_weekday(p->window.start_s + (int64_t)s0 * 86400);
		if ((rc = gl_forecast_fit(keys[i].peak + s0, nd - s0, &o, &r, err))) {
			cJSON_Delete(so);
			goto out;
		}
		cJSON_AddStringToObject(so, "cluster", keys[i].cluster);
		cJSON_AddStringToObject(so, "gpu_model", keys[i].model);
		add_num_or_null(so, "capacity_gpus", isfinite(keys[i].capacity) ? r4(keys[i].capacity) : NAN);
		cJSON_AddStringToObject(so, "method", gl_forecast_method_name(r.method));
		cJSON_AddBoolToObject(so, "fallback", r.fallback);
		cJSON_AddStringToObject(so, "note", r.note);
		days = cJSON_CreateArray();
		for (int k = 0; k < p->horizon; k++) {
			cJSON *d = cJSON_CreateObject();
			char date[32];
			double ps = NAN;
			gl_time_format_day(p->window.end_s + 86400 * (int64_t)k, date, sizeof date);
			cJSON_AddStringToObject(d, "date", date);
			cJSON_AddNumberToObject(d, "peak_demand", r4(r.point[k]));
			add_num_or_null(d, "lo80", r4(r.lo80[k]));
			add_num_or_null(d, "hi80", r4(r.hi80[k]));
			if (isfinite(keys[i].capacity)) {
				/* saturated: demand at or above what is available */
				ps = gl_forecast_prob_above(keys[i].capacity - 1e-9, r.lo95[k], r.lo80[k], r.point[k],
							    r.hi80[k], r.hi95[k]);
				if (d50 < 0 && ps >= 0.5)
					d50 = k + 1;
				if (d80 < 0 && ps >= 0.8)
					d80 = k + 1;
			}
			add_num_or_null(d, "p_saturation", isfinite(ps) ? round(ps * 1000) / 1000 : NAN);
			cJSON_AddItemToArray(days, d);
		}
		add_num_or_null(so, "days_until_saturation_p50", d50 > 0 ? d50 : NAN);
		add_num_or_null(so, "days_until_saturation_p80", d80 > 0 ? d80 : NAN);
		{
			cJSON *qs = cJSON_AddObjectToObject(so, "queue_saturation");
			char date[32];
			gl_time_format_day(p->window.end_s, date, sizeof date);
			cJSON_AddStringToObject(qs, "date", date);
			add_num_or_null(qs, "p", isfinite(sat_p[i]) ? round(sat_p[i] * 1000) / 1000 : NAN);
			add_num_or_null(qs, "last_day_pending_minutes",
					nd ? round(sat[i * nd + nd - 1].pending_minutes * 10) / 10 : NAN);
		}
		cJSON_AddItemToObject(so, "days", days);
		hist = cJSON_AddArrayToObject(so, "history");
		for (size_t k = 0; k < nd; k++) {
			cJSON *h = cJSON_CreateObject();
			char date[32];
			gl_time_format_day(p->window.start_s + 86400 * (int64_t)k, date, sizeof date);
			cJSON_AddStringToObject(h, "date", date);
			cJSON_AddNumberToObject(h, "peak_demand", r4(keys[i].peak[k]));
			cJSON_AddItemToArray(hist, h);
		}
		{
			cJSON *acc = cJSON_AddObjectToObject(so, "accuracy");
			add_num_or_null(acc, "mase", r.cv.mase);
			add_num_or_null(acc, "wape", r.cv.wape);
			add_num_or_null(acc, "coverage80", r.cv.coverage80);
			add_num_or_null(acc, "coverage95", r.cv.coverage95);
			cJSON_AddNumberToObject(acc, "origins", r.origins);
		}
		cJSON_AddItemToArray(arr, so);
		gl_forecast_result_fini(&r);
	}
	put_json(body, root);
out:
	for (size_t i = 0; i < nk; i++)
		free(keys[i].peak);
	free(keys);
	free(caps);
	free(names);
	gl_fcseries_fini(&alloc);
	gl_fcseries_fini(&pend);
	gl_fcseries_fini(&pmin);
	free(sat);
	free(sat_start);
	free(sat_p);
	cJSON_Delete(root);
	free(hours);
	return rc;
}

/* ---- the cache ---- */

/* every field and its separator: a key never cuts, so two requests never
 * share a cache slot by accident */
#define FC_KEY_LEN (sizeof(struct fc_req) + 16)

struct fc_ent {
	char key[FC_KEY_LEN];
	struct fc_req q;
	char *body;
	int64_t computed_s, used_s;
};
static struct fc_ent cache[FC_CACHE_SLOTS];
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static void req_key(const struct fc_req *q, char *buf, size_t n)
{
	snprintf(buf, n, "%c|%s|%s|%s|%s|%s|%s|%s", q->kind, q->metric, q->step, q->horizon, q->level, q->aggregate,
		 q->window, q->exclude);
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

static void cache_put(const struct fc_req *q, const char *key, const char *body, int64_t now_s, int touch)
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

/* A value longer than its field is refused, never cut: a cut exclude list
 * or horizon would be a different, still valid request. */
static int copy_param(struct gl_req *req, struct gl_resp *resp, const char *name, const char *def, char *out,
		      size_t n)
{
	const char *v = gl_req_param(req, name);
	if (!v)
		v = def;
	if (strlen(v) >= n)
		return gl_resp_error(resp, GL_EINVAL, name, "%s: longer than %zu bytes", name, n - 1);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

/* Both kinds of request, parsed and computed the same way by the routes
 * and by the daemon's refresh. */
struct fc_any {
	struct fc_params f;
	struct cap_params c;
};

static int any_parse(struct fc_req *q, int64_t now_s, int max_days, struct fc_any *a, const char **param,
		     struct gl_err *err)
{
	return q->kind == 'c' ? cap_parse(q, now_s, max_days, &a->c, param, err)
			      : fc_parse(q, now_s, max_days, &a->f, param, err);
}

static int any_compute(struct gl_store *st, const struct fc_any *a, const struct fc_req *q, int64_t now_s, struct gl_strbuf *b,
		       struct gl_err *err)
{
	return q->kind == 'c' ? cap_compute(st, &a->c, q, now_s, b, err) : fc_compute(st, &a->f, q, now_s, b, err);
}

/* The cached answer when there is one, else computed now and cached. */
static int serve(struct gl_req *req, struct gl_resp *resp, struct fc_req *q)
{
	struct fc_any a;
	struct gl_err err = {0};
	const char *param = NULL;
	char key[FC_KEY_LEN], *body;
	struct gl_store *st;
	int rc;

	if (any_parse(q, req->now_s, req->cfg->api_max_window_days, &a, &param, &err))
		return gl_resp_error(resp, GL_EINVAL, param, "%s", err.msg);
	req_key(q, key, sizeof key);
	resp->content_type = "application/json";
	if ((body = cache_get(key, req->now_s))) {
		gl_strbuf_puts(&resp->body, body);
		free(body);
		return 0;
	}
	if ((rc = gl_req_store(req, &st, &err)) || (rc = any_compute(st, &a, q, req->now_s, &resp->body, &err))) {
		gl_strbuf_reset(&resp->body);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg[0] ? err.msg : "forecast failed");
	}
	cache_put(q, key, gl_strbuf_cstr(&resp->body), req->now_s, 1);
	return 0;
}

int gl_route_forecast(struct gl_req *req, struct gl_resp *resp)
{
	struct fc_req q;

	memset(&q, 0, sizeof q);
	q.kind = 'f';
	if (copy_param(req, resp, "metric", "gpu_hours", q.metric, sizeof q.metric) ||
	    copy_param(req, resp, "step", "day", q.step, sizeof q.step) ||
	    copy_param(req, resp, "horizon", "", q.horizon, sizeof q.horizon) ||
	    copy_param(req, resp, "level", "", q.level, sizeof q.level) ||
	    copy_param(req, resp, "exclude", "", q.exclude, sizeof q.exclude) ||
	    copy_param(req, resp, "aggregate", "team", q.aggregate, sizeof q.aggregate) ||
	    copy_param(req, resp, "window",
		       !strcmp(q.step, "hour") ? "28d" : !strcmp(q.step, "week") ? "364d" : "91d", q.window,
		       sizeof q.window))
		return -GL_EINVAL;
	/* cost is money and per-user series are per-person usage: what
	 * /v1/chargeback, /v1/jobs and /v1/idle show only to finance and up
	 * is not shown to a viewer through a forecast either */
	if (req->auth && !gl_auth_role_allows(req->auth->role, "finance")) {
		char agg[sizeof q.aggregate], *sv = NULL;
		if (!strcmp(q.metric, "cost"))
			return gl_resp_error(resp, GL_EPERM, "metric", "metric=cost needs role finance or admin");
		snprintf(agg, sizeof agg, "%s", q.aggregate);
		for (char *t = strtok_r(agg, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
			if (!strcmp(t, "user") || !strcmp(t, "account"))
				return gl_resp_error(resp, GL_EPERM, "aggregate", "aggregate=%s needs role finance or admin", t);
	}
	return serve(req, resp, &q);
}

int gl_route_capacity_forecast(struct gl_req *req, struct gl_resp *resp)
{
	struct fc_req q;

	memset(&q, 0, sizeof q);
	q.kind = 'c';
	if (copy_param(req, resp, "horizon", "", q.horizon, sizeof q.horizon) ||
	    copy_param(req, resp, "cluster", "", q.aggregate, sizeof q.aggregate) ||
	    copy_param(req, resp, "window", "91d", q.window, sizeof q.window))
		return -GL_EINVAL;
	return serve(req, resp, &q);
}

int gl_forecast_cache_refresh(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			      size_t n, struct gl_err *err)
{
	int done = 0, dropped = 0, rc = 0;
	(void)src;
	for (int i = 0; i < FC_CACHE_SLOTS; i++) {
		struct fc_req q;
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
		    (rc = any_compute(st, &a, &q, now_s, &body, err))) {
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
