/* Monthly budgets and their alerts (see include/gl/budget.h). */
#include "gl/budget.h"
#include "gl/accounting.h"
#include "gl/audit.h"
#include "gl/cost.h"
#include "gl/tmpl.h"
#include "db_int.h"
#include "gl/fcseries.h"
#include "gl/forecast.h"
#include "gl/log.h"
#include "gl/proc.h"
#include "gl/showback.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BUDGETS 1024

int64_t gl_budget_forecast(int64_t spend, int64_t month_start, int64_t month_end, int64_t now_s)
{
	int64_t elapsed = now_s - month_start, len = month_end - month_start;
	if (now_s >= month_end || elapsed <= 0)
		return now_s >= month_end ? spend : 0;
	return (int64_t)(((gl_cost_i128)spend * len * 2 + elapsed) / ((gl_cost_i128)elapsed * 2));
}

int64_t gl_budget_forecast_daily(int64_t spend, int64_t now_s, int64_t month_end, const double *daily_micros,
				 size_t n)
{
	int64_t day_end = now_s - ((now_s % 86400) + 86400) % 86400 + 86400;
	double rest = 0;
	if (now_s >= month_end)
		return spend;
	for (size_t i = 0; i < n && day_end - 86400 + (int64_t)i * 86400 < month_end; i++) {
		double d = daily_micros[i] > 0 ? daily_micros[i] : 0;
		rest += i ? d : d * (double)(day_end - now_s) / 86400.0;
	}
	return spend + (int64_t)(rest + 0.5);
}

static int bound(const char *s, int64_t inf, int64_t *out)
{
	if (!s || !*s) {
		*out = inf;
		return 0;
	}
	return gl_timeutil_parse(s, strlen(s), out);
}

int64_t gl_budget_amount(const struct gl_config *cfg, size_t i, int64_t month_start, int64_t month_end)
{
	const struct gl_config_budget *b = &cfg->budgets[i];
	int64_t from, to, micros;
	struct gl_err e = {0};
	if (bound(b->from, INT64_MIN, &from) || bound(b->to, INT64_MAX, &to) || gl_cost_parse(b->amount, &micros, &e))
		return -1;
	return from < month_end && to > month_start ? micros : -1;
}

int gl_budget_validate(const struct gl_config *cfg, struct gl_err *err)
{
	int th[GL_SETTINGS_MAX_THRESHOLDS];
	size_t nt;
	int rc;
	if ((rc = gl_settings_thresholds_parse(cfg->budget_thresholds, th, GL_SETTINGS_MAX_THRESHOLDS, &nt, err)))
		return rc;
	if (cfg->n_budgets > MAX_BUDGETS)
		return gl_err_set(err, GL_ECONFIG, "budgets: more than %d", MAX_BUDGETS);
	for (size_t i = 0; i < cfg->n_budgets; i++) {
		const struct gl_config_budget *b = &cfg->budgets[i];
		int64_t v;
		struct gl_err e = {0};
		if (gl_cost_parse(b->amount, &v, &e))
			return gl_err_set(err, GL_ECONFIG, "budgets[%zu].amount: %s", i, e.msg);
		if (strcmp(b->currency, cfg->currency) != 0)
			return gl_err_set(err, GL_ECONFIG, "budgets[%zu].currency: '%s' is not the reporting currency '%s'", i,
					  b->currency, cfg->currency);
		if (!gl_accounting_dim_sql(b->aggregate) || !strcmp(b->aggregate, "cluster") ||
		    !strcmp(b->aggregate, "partition") || !strcmp(b->aggregate, "qos") ||
		    !strcmp(b->aggregate, "namespace") || !strcmp(b->aggregate, "gpu_model"))
			return gl_err_set(err, GL_ECONFIG,
					  "budgets[%zu].aggregate: '%s' is not team, project, cost_center, account, user or workload_type", i,
					  b->aggregate);
		if (bound(b->from, 0, &v))
			return gl_err_set(err, GL_ECONFIG, "budgets[%zu].from: '%s' is not an RFC3339 time or date", i, b->from);
		if (bound(b->to, 0, &v))
			return gl_err_set(err, GL_ECONFIG, "budgets[%zu].to: '%s' is not an RFC3339 time or date", i, b->to);
	}
	return 0;
}

#define HISTORY_DAYS 56 /* eight weeks: the weekly season and then some */
#define MIN_SPEND_DAYS 14
#define MAX_AGGREGATES 8

/* What one status call reads once per aggregate, however many budgets
 * share it: the month's chargeback and the daily cost history. */
struct agg_cache {
	char aggregate[16];
	int used, have_cb, have_fs;
	struct gl_chargeback cb;       /* the month so far, shareIdle none */
	struct gl_fcseries fs; /* daily cost over the last HISTORY_DAYS whole days */
};

static struct agg_cache *cache_for(struct agg_cache *cache, const char *dim, struct gl_err *err)
{
	int i;
	for (i = 0; i < MAX_AGGREGATES && cache[i].used; i++)
		if (!strcmp(cache[i].aggregate, dim))
			return &cache[i];
	if (i == MAX_AGGREGATES) {
		gl_err_set(err, GL_EINVAL, "budgets: more than %d aggregates", MAX_AGGREGATES);
		return NULL;
	}
	snprintf(cache[i].aggregate, sizeof cache[i].aggregate, "%s", dim);
	cache[i].used = 1;
	return &cache[i];
}

static void cache_fini(struct agg_cache *cache)
{
	for (int i = 0; i < MAX_AGGREGATES; i++) {
		if (cache[i].have_cb)
			gl_chargeback_fini(&cache[i].cb);
		gl_fcseries_fini(&cache[i].fs);
	}
}

/* The owner's spend in the month, as chargeback gives it. */
static int spend_of(PGconn *c, struct agg_cache *ac, int64_t a, int64_t b, int64_t now_s, const char *owner,
		    int64_t *spend, struct gl_err *err)
{
	*spend = 0;
	if (!ac->have_cb) {
		struct gl_window w = {a, b};
		struct gl_accounting_query q;
		struct gl_accounting_meta meta = {0};
		const char *dim = ac->aggregate;
		int rc;
		gl_chargeback_init(&ac->cb, 1, GL_CHARGEBACK_SHARE_NONE, 1);
		ac->have_cb = 1;
		gl_accounting_query_init(&q, &w, 1, &dim, 1, now_s);
		rc = gl_accounting_chargeback_finished(gl_db_store(c), &q, &ac->cb, &meta, err);
		gl_accounting_meta_fini(&meta);
		if (rc)
			return rc;
	}
	for (size_t j = 0; j < ac->cb.steps[0].n_lines; j++)
		if (!strcmp(ac->cb.steps[0].lines[j].key[0], owner))
			*spend += ac->cb.steps[0].lines[j].total_micros;
	return 0;
}

/* The month-end forecast of an open month from the owner's daily cost
 * over the last HISTORY_DAYS whole days; linear (and says so) when too few
 * of them had any spend to learn from. */
static int forecast_of(PGconn *c, struct agg_cache *ac, const struct gl_config_budget *b, int64_t month_start,
		       int64_t month_end, int64_t now_s, struct gl_budget_line *l, struct gl_err *err)
{
	int64_t today = now_s - ((now_s % 86400) + 86400) % 86400;
	struct gl_window steps[HISTORY_DAYS];
	const struct gl_fcseries *fs = &ac->fs;
	struct gl_forecast_result fr = {0};
	struct gl_forecast_opts o = {0};
	struct gl_err ferr = {0};
	const double *y = NULL;
	double *daily = NULL;
	const char *dim = ac->aggregate;
	int rc = 0, days = 0;
	size_t s0;

	l->forecast_micros = gl_budget_forecast(l->spend_micros, month_start, month_end, now_s);
	snprintf(l->method, sizeof l->method, "linear");
	for (int i = 0; i < HISTORY_DAYS; i++) {
		steps[i].start_s = today - (int64_t)(HISTORY_DAYS - i) * 86400;
		steps[i].end_s = steps[i].start_s + 86400;
	}
	if (!ac->have_fs) {
		ac->have_fs = 1;
		if ((rc = gl_fcseries_query(gl_db_store(c), GL_FCSERIES_COST, steps, HISTORY_DAYS, &dim, 1, NULL, now_s, &ac->fs, err)))
			goto out;
	}
	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->s[i].key, b->owner))
			y = fs->s[i].v;
	for (int i = 0; y && i < HISTORY_DAYS; i++)
		days += y[i] > 0;
	if (days < MIN_SPEND_DAYS)
		goto out;
	o.slots_per_day = 1;
	o.slots_per_week = 7;
	o.horizon = (int)((month_end - today + 86399) / 86400);
	o.method = GL_FORECAST_AUTO;
	s0 = gl_forecast_active_start(y, HISTORY_DAYS, 1);
	o.first_weekday = gl_timeutil_weekday(steps[s0].start_s);
	/* a forecast that cannot be made leaves the linear one: a budget line
	 * is still worth showing */
	if (gl_forecast_fit(y + s0, HISTORY_DAYS - s0, &o, &fr, &ferr)) {
		gl_log(GL_LOG_WARN, "budget: %s: forecast failed, linear instead: %s", b->owner, ferr.msg);
		goto out;
	}
	/* a forecast that stops short of the month's end (too little history
	 * to backtest that far ahead) would count its missing days as nothing:
	 * the linear one, and the method says so */
	if (fr.horizon < o.horizon) {
		gl_log(GL_LOG_INFO, "budget: %s: the forecast reaches %d of the %d days to the month's end: linear instead",
		       b->owner, fr.horizon, o.horizon);
		goto out;
	}
	daily = gl_xcalloc((size_t)o.horizon, sizeof *daily);
	for (int i = 0; i < o.horizon; i++)
		daily[i] = fr.point[i] * 1e6;
	l->forecast_micros = gl_budget_forecast_daily(l->spend_micros, now_s, month_end, daily, (size_t)o.horizon);
	snprintf(l->method, sizeof l->method, "%s", gl_forecast_method_name(fr.method));
	l->origins = fr.origins;
	l->mase = fr.cv.mase;
	l->wape = fr.cv.wape;
out:
	free(daily);
	gl_forecast_result_fini(&fr);
	return rc;
}

static void month_text(int64_t start_s, char *buf, size_t n)
{
	int64_t y;
	unsigned m, d;
	gl_timeutil_civil_from_days(start_s / 86400, &y, &m, &d);
	snprintf(buf, n, "%04lld-%02u-01", (long long)y, m);
}

int gl_budget_status(struct gl_store *st, const struct gl_config *cfg, int64_t month_start, int64_t now_s,
		     struct gl_budget_line *out, size_t max, size_t *n, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int64_t month_end = gl_window_month_next(month_start);
	struct agg_cache cache[MAX_AGGREGATES];
	char mon[16];
	PGresult *r = NULL;
	int rc = 0;

	*n = 0;
	memset(cache, 0, sizeof cache);
	month_text(month_start, mon, sizeof mon);
	for (size_t i = 0; i < cfg->n_budgets && *n < max; i++) {
		const struct gl_config_budget *b = &cfg->budgets[i];
		struct gl_budget_line *l;
		struct agg_cache *ac;
		int64_t amount = gl_budget_amount(cfg, i, month_start, month_end);
		if (amount < 0)
			continue;
		l = &out[(*n)++];
		memset(l, 0, sizeof *l);
		snprintf(l->owner, sizeof l->owner, "%s", b->owner);
		snprintf(l->aggregate, sizeof l->aggregate, "%s", b->aggregate);
		snprintf(l->currency, sizeof l->currency, "%s", b->currency);
		l->budget_micros = amount;
		l->closed = now_s >= month_end;
		if (!(ac = cache_for(cache, b->aggregate, err))) {
			rc = -GL_EINVAL;
			goto out;
		}
		if ((rc = spend_of(c, ac, month_start, month_end, now_s, b->owner, &l->spend_micros, err)))
			goto out;
		if (l->closed) {
			l->forecast_micros = l->spend_micros;
			snprintf(l->method, sizeof l->method, "actual");
		} else if ((rc = forecast_of(c, ac, b, month_start, month_end, now_s, l, err))) {
			goto out;
		}
		if ((rc = gl_db_query(c,
				      "SELECT threshold_pct FROM budget_alerts WHERE owner = $1 AND month = $2::date"
				      " AND aggregate = $3 ORDER BY threshold_pct",
				      3, (const char *[]){b->owner, mon, b->aggregate}, &r, err)))
			goto out;
		for (int k = 0; k < PQntuples(r) && l->n_fired < GL_SETTINGS_MAX_THRESHOLDS; k++)
			l->fired[l->n_fired++] = atoi(PQgetvalue(r, k, 0));
		PQclear(r);
		r = NULL;
	}
out:
	cache_fini(cache);
	PQclear(r);
	return rc;
}

/* Runs the alert command; the outcome goes into status ("exit 0" ...). */
static void run_command(const struct gl_config *cfg, const struct gl_tmpl_var *kv, size_t nkv, char *status, size_t n)
{
	char *tmpl = gl_xstrdup(cfg->budget_alert_command), *save = NULL;
	char *argv[64];
	size_t argc = 0;
	struct gl_proc_opts po = {0};
	struct gl_proc_result res;
	struct gl_err e = {0};
	for (char *t = strtok_r(tmpl, " \t", &save); t && argc < 63; t = strtok_r(NULL, " \t", &save))
		argv[argc++] = gl_tmpl_expand(t, kv, nkv);
	argv[argc] = NULL;
	po.timeout_s = 60;
	if (argc == 0)
		snprintf(status, n, "not configured");
	else if (gl_proc_run((const char *const *)argv, &po, &res, &e))
		snprintf(status, n, "not started: %s", e.msg);
	else
		gl_proc_describe(&res, status, n);
	for (size_t i = 0; i < argc; i++)
		free(argv[i]);
	free(tmpl);
}

int gl_budget_check(struct gl_store *st, const struct gl_config *cfg, int64_t now_s, int *fired, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_budget_line *lines = NULL;
	int th[GL_SETTINGS_MAX_THRESHOLDS];
	size_t nt, n = 0;
	int64_t ms = gl_window_month_start(now_s);
	char mon[16], ym[8], nows[24];
	int rc, in_txn = 0, minor = gl_cost_minor(cfg->currency);
	PGresult *r = NULL;

	*fired = 0;
	if (cfg->n_budgets == 0)
		return 0;
	if ((rc = gl_budget_validate(cfg, err)) ||
	    (rc = gl_settings_thresholds_parse(cfg->budget_thresholds, th, GL_SETTINGS_MAX_THRESHOLDS, &nt, err)))
		return rc;
	lines = gl_xcalloc(cfg->n_budgets, sizeof *lines);
	if ((rc = gl_budget_status(st, cfg, ms, now_s, lines, cfg->n_budgets, &n, err)))
		goto out;
	month_text(ms, mon, sizeof mon);
	snprintf(ym, sizeof ym, "%.7s", mon);
	snprintf(nows, sizeof nows, "%lld", (long long)now_s);
	for (size_t i = 0; i < n; i++) {
		struct gl_budget_line *l = &lines[i];
		for (size_t k = 0; k < nt; k++) {
			char t[16], sp[48], bu[48], spm[24], bum[24], pct[32], status[160], *detail;
			struct gl_strbuf d = GL_STRBUF_INIT;
			int inserted;
			if (l->budget_micros <= 0 || (gl_cost_i128)l->spend_micros * 100 < (gl_cost_i128)l->budget_micros * th[k])
				continue;
			snprintf(t, sizeof t, "%d", th[k]);
			snprintf(spm, sizeof spm, "%lld", (long long)l->spend_micros);
			snprintf(bum, sizeof bum, "%lld", (long long)l->budget_micros);
			gl_cost_format(l->spend_micros, minor, sp, sizeof sp);
			gl_cost_format(l->budget_micros, minor, bu, sizeof bu);
			snprintf(pct, sizeof pct, "%lld",
				 (long long)(((gl_cost_i128)l->spend_micros * 100) / (l->budget_micros ? l->budget_micros : 1)));
			/* the row first, with its audit row, then the command: at
			 * most once per owner, month and threshold */
			if ((rc = gl_db_exec(c, "BEGIN", err)))
				goto out;
			in_txn = 1;
			if ((rc = gl_db_query(c,
					      "INSERT INTO budget_alerts (owner, aggregate, month, threshold_pct, spend_micros,"
					      " budget_micros, fired_at) VALUES ($1, $7, $2::date, $3::integer, $4::bigint, $5::bigint,"
					      " to_timestamp($6)) ON CONFLICT DO NOTHING RETURNING 1",
					      7, (const char *[]){l->owner, mon, t, spm, bum, nows, l->aggregate}, &r, err)))
				goto out;
			inserted = PQntuples(r) == 1;
			PQclear(r);
			r = NULL;
			if (!inserted) {
				rc = gl_db_exec(c, "COMMIT", err);
				in_txn = 0;
				if (rc)
					goto out;
				continue;
			}
			gl_strbuf_puts(&d, "{\"owner\":\"");
			gl_strbuf_put_json_str(&d, l->owner, strlen(l->owner));
			gl_strbuf_printf(&d, "\",\"aggregate\":\"%s\",\"month\":\"%s\",\"threshold_pct\":%d,\"spend\":\"%s\","
					     "\"budget\":\"%s\",\"currency\":\"%s\"}",
					 l->aggregate, ym, th[k], sp, bu, l->currency);
			detail = gl_strbuf_steal(&d);
			rc = gl_audit_append(gl_db_store(c), "system", NULL, "budget.alert", l->owner, "ok", detail, err);
			free(detail);
			if (rc || (rc = gl_db_exec(c, "COMMIT", err)))
				goto out;
			in_txn = 0;
			{
				/* in alert_keys' order */
				const struct gl_tmpl_var kv[] = {
					{gl_settings_alert_keys[0], l->owner}, {gl_settings_alert_keys[1], ym}, {gl_settings_alert_keys[2], t},
					{gl_settings_alert_keys[3], sp},       {gl_settings_alert_keys[4], bu}, {gl_settings_alert_keys[5], l->currency},
					{gl_settings_alert_keys[6], pct},
				};
				run_command(cfg, kv, GL_ARRAY_LEN(kv), status, sizeof status);
			}
			if ((rc = gl_db_query(c,
					      "UPDATE budget_alerts SET command_status = $4 WHERE owner = $1 AND month = $2::date"
					      " AND threshold_pct = $3::integer AND aggregate = $5",
					      5, (const char *[]){l->owner, mon, t, status, l->aggregate}, NULL, err)))
				goto out;
			gl_log(GL_LOG_INFO, "budget: %s crossed %d%% of its %s budget (%s %s of %s): %s", l->owner, th[k], ym,
			       l->currency, sp, bu, status);
			(*fired)++;
		}
	}
out:
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	PQclear(r);
	free(lines);
	return rc;
}
