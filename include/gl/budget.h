/* gpuledger — monthly budgets per owner: spend to date (the chargeback
 * total of the owner for the month so far, shareIdle none), a month-end
 * forecast (the owner's daily cost over the last eight weeks forecast by
 * domain/forecast for the days left, the method chosen by its backtest;
 * linear when fewer than 14 of those days had any spend), % used, and the alerts when a threshold is crossed,
 * once per owner, month and threshold (state in budget_alerts, so a daemon
 * restart sends nothing twice).
 *
 * Ownership: gl_budget_status fills a caller array of struct
 * gl_budget_line (no heap inside); the config is borrowed.
 */
#ifndef GL_BUDGET_H
#define GL_BUDGET_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/settings.h"

#include <stdint.h>

struct gl_store;

struct gl_budget_line {
	char owner[256];
	char aggregate[16];
	char currency[8];
	int64_t budget_micros;
	int64_t spend_micros;      /* month to date */
	int64_t forecast_micros;   /* month end */
	char method[24];           /* "actual" (month over), "linear", or the forecast method */
	/* how that method did on this owner's own days (its backtest, as
	 * /v1/forecast reports it); origins == 0: no backtest (actual, linear) */
	int origins;
	double mase, wape;         /* NaN when undefined (a zero scale or no spend) */
	int closed;                /* the month is over: forecast == spend */
	size_t n_fired;
	int fired[GL_SETTINGS_MAX_THRESHOLDS]; /* thresholds already alerted this month */
};

/* Pure: spend so far x month length / elapsed part of the month, half up. */
int64_t gl_budget_forecast(int64_t spend, int64_t month_start, int64_t month_end, int64_t now_s);
/* Pure: spend so far plus forecast daily spend for the days left: daily[0]
 * is the whole of today (the day holding now_s), of which the part after
 * now_s counts; daily[1..n) the days after it up to month_end. Half up. */
int64_t gl_budget_forecast_daily(int64_t spend, int64_t now_s, int64_t month_end, const double *daily_micros,
				 size_t n);
/* The budget of cfg->budgets[i] per month in micro-units, when budget i is
 * in force at some time of [month_start, month_end); -1 when not. */
int64_t gl_budget_amount(const struct gl_config *cfg, size_t i, int64_t month_start, int64_t month_end);
/* Checks every budget's amount, currency and dates; errors name "budgets[2].amount". */
int gl_budget_validate(const struct gl_config *cfg, struct gl_err *err) GL_MUSTCHECK;

/* Every budget in force in the month of month_start (one line per budget,
 * at most max); *n counts them. */
int gl_budget_status(struct gl_store *st, const struct gl_config *cfg, int64_t month_start, int64_t now_s,
		     struct gl_budget_line *out, size_t max, size_t *n, struct gl_err *err) GL_MUSTCHECK;

/* The daemon's check: for the month of now_s, records and audits each newly
 * crossed threshold, then runs budget_alerts.command for it. *fired counts
 * the alerts sent. */
int gl_budget_check(struct gl_store *st, const struct gl_config *cfg, int64_t now_s, int *fired,
		    struct gl_err *err) GL_MUSTCHECK;

#endif
