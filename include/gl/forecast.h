/* gpuledger — demand forecasting with its accuracy shown beside it (pure:
 * no I/O, no clock, no libpq; the caller hands in the history).
 *
 * A series is an array of doubles at a fixed step (slots); slot 0 is aligned
 * to the start of a day (and, for weekly seasonality, of a week) only in the
 * sense that the seasonal phase is t mod period. NaN marks a missing or
 * excluded slot (holiday, maintenance): it is imputed from the same slot a
 * week (else a day) earlier for fitting and never scored.
 *
 * Methods: the baselines (naive, seasonal naive daily/weekly, median of the
 * same slot over the last k days/weeks), Holt-Winters with additive daily +
 * weekly seasonality on log(1+y) and on y, a combination (mean of the two
 * medians and the log Holt-Winters), a pooled median (same slot and its
 * neighbours over the last weeks, weekdays and weekends apart), simple
 * exponential smoothing (daily and coarser steps) and the ensemble median
 * of them all. gl_forecast_fit() chooses per
 * series by rolling-origin cross-validation on the series' own history
 * (lowest MAE over the origins; a method that does not beat the best
 * baseline there is never chosen, ties go to the simpler method) and builds
 * the 80 % and 95 % intervals from the empirical quantiles of the chosen
 * method's backtest errors (additive, on the log scale or in units of the
 * recent volatility, whichever was sharpest there), so the intervals nest
 * and their coverage is what the backtest showed. Forecasts are never negative.
 *
 * Ownership: struct gl_forecast_result owns its arrays; release them with
 * gl_forecast_result_fini() (safe on a zeroed or already-finished result).
 * Inputs are borrowed and never modified.
 */
#ifndef GL_FORECAST_H
#define GL_FORECAST_H

#include "gl/common.h"

#include <stddef.h>

enum gl_forecast_method {
	GL_FORECAST_NAIVE = 0,
	GL_FORECAST_SNAIVE_DAY,
	GL_FORECAST_SNAIVE_WEEK,
	GL_FORECAST_MEDIAN_DAY,  /* median of the same slot over the last k_day days */
	GL_FORECAST_MEDIAN_WEEK, /* median of the same slot over the last k_week weeks */
	GL_FORECAST_HW,          /* Holt-Winters, additive daily + weekly seasons, on y */
	GL_FORECAST_HW_LOG,      /* the same on log(1+y), for bursty series */
	GL_FORECAST_COMBO,       /* mean of MEDIAN_DAY, MEDIAN_WEEK and HW_LOG (those that run) */
	GL_FORECAST_MEDIAN_POOL, /* median of the same slot +-w slots over the last k days of
				  * the same day type (weekday or weekend); k, w chosen by CV */
	GL_FORECAST_SES,         /* simple exponential smoothing of the level (no season; daily
				  * and coarser steps only); the smoothing constant at each
				  * origin minimises the one-step squared error of the
				  * history before it */
	GL_FORECAST_ENSEMBLE,    /* median of every no-trend method's forecast (those that run) */
	/* Trend methods, daily and weekly steps only, each needing four weeks
	 * (twelve weekly slots) of history before an origin; chosen only where
	 * they beat every no-trend method on the same backtest origins. */
	GL_FORECAST_DAMPED,      /* Holt's damped additive trend on the weekday-adjusted series */
	GL_FORECAST_LINEAR,      /* least-squares line with at most one level shift (a changepoint:
				  * a team moving in is a step, not a slope), weekday-adjusted */
	GL_FORECAST_LOGLIN,      /* the same on log(1+y): exponential growth */
	GL_FORECAST_METHOD_COUNT,
	GL_FORECAST_AUTO = -1,
};
/* The methods below this one are the baselines. */
#define GL_FORECAST_FIRST_MODEL GL_FORECAST_HW
/* This one and those after it are the trend methods. */
#define GL_FORECAST_FIRST_TREND GL_FORECAST_DAMPED

/* Lead buckets: the bands and the accuracy shown beside a forecast are per
 * bucket of lead time, by the days ahead a slot ends: day 1, week 1 (days
 * 2-7), weeks 2-4 (days 8-28), months 2-3 (days 29-91), months 4-12
 * (days 92 on). A weekly slot is 7 days ahead at lead 1. */
#define GL_FORECAST_BUCKETS 5
/* "day 1", "week 1", ...; NULL out of range. */
const char *gl_forecast_bucket_name(int bucket);
/* The bucket of lead (1 = the first slot ahead) at these seasons
 * (slots_per_day > 1: sub-daily; else 7 / slots_per_week days a slot). */
int gl_forecast_lead_bucket(int slots_per_day, int slots_per_week, int lead);

/* "naive", "snaive_day", ... ; NULL for an unknown value. */
const char *gl_forecast_method_name(int method);
/* GL_FORECAST_AUTO for "auto", a method, or -2 for an unknown name. */
int gl_forecast_method_parse(const char *name);

struct gl_forecast_opts {
	int slots_per_day;  /* 24 for hourly steps, 1 for daily and weekly steps */
	int slots_per_week; /* 168 hourly, 7 daily, 1 weekly (no weekly season) */
	int horizon;        /* slots ahead, >= 1 */
	int origins;        /* rolling origins for cross-validation; 0: 28 for sub-daily steps, 91 for daily and coarser (as many as the history has) */
	int stride;         /* slots between origins; 0: min(horizon, slots_per_day) */
	int method;         /* GL_FORECAST_AUTO or one method (then no selection) */
	int k_day;          /* 0: 7 */
	int k_week;         /* 0: 4 */
	int first_weekday;  /* weekday of the day holding slot 0, 0 Monday .. 6 Sunday,
			     * -1 unknown (no weekday/weekend split); slot 0 starts a day */
};

/* Point and interval accuracy over a set of (actual, forecast) pairs. */
struct gl_forecast_metrics {
	long n;            /* pairs scored (NaN actuals are skipped) */
	double mae, rmse;
	double mase;       /* MAE / scale (NaN when scale is 0) */
	double wape;       /* sum |e| / sum |y| (fraction; NaN when sum |y| is 0) */
	double smape;      /* mean 2|e| / (|y| + |f|), 0 when both are 0 (fraction) */
	double coverage80, coverage95; /* fraction of actuals inside the interval */
	double pinball80;  /* mean pinball loss of lo80 (q .1) and hi80 (q .9), / scale */
};

/* Metrics of forecast f against actual y over n slots. lo/hi arrays may be
 * NULL (coverage and pinball are then NaN); a NaN bound is a slot without an
 * interval, scored for its point only. scale: the MASE denominator. */
void gl_forecast_metrics_compute(const double *y, const double *f, const double *lo80, const double *hi80,
				 const double *lo95, const double *hi95, size_t n, double scale,
				 struct gl_forecast_metrics *m);

/* Median of v[0..n) (n >= 1), reordering v; for small n (an insertion sort). */
double gl_forecast_median(double *v, int n);

/* The MASE scale: mean |y[t] - y[t-lag]| over t in [lag, n) (NaN pairs
 * skipped); 0 when there are none. For "scaled by the training-period
 * daily seasonal-naive MAE", lag = slots_per_day. */
double gl_forecast_mase_scale(const double *y, size_t n, int lag);

/* Point forecast of one method from the first n slots of y: out[0..horizon)
 * are slots n .. n+horizon-1. Returns 0, or -GL_EINVAL when the method
 * cannot run on that much history (the message says why). */
int gl_forecast_point(int method, const double *y, size_t n, const struct gl_forecast_opts *o, double *out,
		      struct gl_err *err) GL_MUSTCHECK;

struct gl_forecast_result {
	int method;       /* the method used for the forecast */
	int baseline;     /* the best baseline in cross-validation (-1: none ran) */
	int fallback;     /* 1: short or sparse history, a documented simple method */
	char note[480];   /* why this method (or why the fallback), and how far it answers */
	int horizon;      /* slots answered: horizon_asked, or fewer when the history
			   * holds no two backtest origins with actuals further ahead */
	int horizon_asked;
	/* horizon_asked each; point and bounds are NaN past horizon, bounds NaN
	 * everywhere when no backtest was possible. q50 is the predictive
	 * median, inside the 80 % band: the point of a median method (the
	 * medians, the median lines, the pool, naive), and for a level method
	 * (hw, ses, damped, combo), whose point is about the mean that a skewed
	 * demand's median lies below, the point plus the backtest errors'
	 * median; the probabilities read off the quantiles (lo95, lo80, q50,
	 * hi80, hi95) use it */
	double *point, *lo80, *hi80, *lo95, *hi95, *q50;
	int origins;      /* rolling origins scored (of the chosen method) */
	double scale;     /* MASE scale over the history */
	struct gl_forecast_metrics cv;                                /* the chosen method */
	struct gl_forecast_metrics cv_method[GL_FORECAST_METHOD_COUNT]; /* n == 0: not run */
	/* the chosen method's backtest per lead bucket (n == 0: no answered
	 * lead in that bucket); its bands there are of kind band_kind[b]:
	 * 0 additive errors, 1 errors on log(1+y), 2 errors in units of the
	 * recent volatility, 3 the pooled median's own pool quantiles */
	struct gl_forecast_metrics cv_bucket[GL_FORECAST_BUCKETS];
	int band_kind[GL_FORECAST_BUCKETS];
	int bucket_first[GL_FORECAST_BUCKETS], bucket_last[GL_FORECAST_BUCKETS]; /* answered leads in it, 1-based; 0: none */
};

/* Fits on y[0..n) and forecasts opts->horizon slots ahead. History shorter
 * than two weeks (or with fewer than two scorable origins) falls back to the
 * median of the same slot over the days there are, and says so in note.
 * Otherwise the answer reaches as far as two backtest origins have actuals
 * ahead of them (r->horizon); when that is short of the horizon asked,
 * note says so and the slots after are NaN. */
int gl_forecast_fit(const double *y, size_t n, const struct gl_forecast_opts *o, struct gl_forecast_result *r,
		    struct gl_err *err) GL_MUSTCHECK;
void gl_forecast_result_fini(struct gl_forecast_result *r);

/* Where an owner's series begins: the first whole day (of slots_per_day
 * slots) holding a non-zero value; 0 when there is none. The slots before
 * it are no demand of an owner that did not exist yet, not demand of zero:
 * fitted, they would make a new team's backtest errors mostly zero and its
 * intervals zero-width. Callers fit y + start, n - start (and shift
 * first_weekday to match). */
size_t gl_forecast_active_start(const double *y, size_t n, int slots_per_day);

/* ---- saturation days ----
 * Will a queue be saturated tomorrow (pending demand for at least an hour)?
 * Day to day saturation is mostly persistence, and how the day ended says
 * more than its total: the features of day d come from day d-1 (saturated
 * or not, log pending minutes, log pending minutes of its last three hours
 * and last hour) and the share of saturated days in the week before d. A
 * logistic model on them, fitted on training days pooled over queues, gives
 * p(saturated). */
struct gl_forecast_satday {
	double pending_minutes;       /* minutes of the day with pending demand */
	double pending_minutes_last3h; /* of those, in the day's last 3 hours */
	double pending_minutes_last1h; /* and in its last hour */
};
#define GL_FORECAST_SAT_NF 6
#define GL_FORECAST_SAT_MINUTES 60 /* a saturated day: pending >= 60 minutes */

/* Features of day d (>= 1) of days[]; only days before d are read. */
void gl_forecast_sat_features(const struct gl_forecast_satday *days, size_t d, double x[GL_FORECAST_SAT_NF]);
/* 1 when the day counts as saturated. */
int gl_forecast_sat_label(const struct gl_forecast_satday *day);

struct gl_forecast_satmodel {
	double w[GL_FORECAST_SAT_NF];
};
/* Logistic regression by gradient descent (fixed steps, deterministic) on
 * n rows of X (row-major, GL_FORECAST_SAT_NF each) and labels y (0/1).
 * -GL_EINVAL when n is 0 or the labels are all alike (no model to fit). */
int gl_forecast_sat_fit(const double *X, const int *y, size_t n, struct gl_forecast_satmodel *m,
			struct gl_err *err) GL_MUSTCHECK;
double gl_forecast_sat_prob(const struct gl_forecast_satmodel *m, const double x[GL_FORECAST_SAT_NF]);

/* nq queues of nd days each, queue q's day d at days[q * nd + d]; queue q
 * exists from day start[q] (the days before it are not fitted or scored). */
struct gl_forecast_satscore {
	long days;                           /* queue-days scored */
	long saturated;                      /* of those, saturated */
	double accuracy, f1;                 /* the model at p >= 0.5; f1 NaN with nothing to find */
	double persist_accuracy, persist_f1; /* "saturated if the day before was" */
};
/* Fits on the queue-days before test_from and scores the model and
 * persistence on those from test_from on (the benchmark and the API's
 * accuracy both come from here). -GL_EINVAL when the training days are all
 * alike or none are scored. */
int gl_forecast_sat_backtest(const struct gl_forecast_satday *days, size_t nq, size_t nd, const size_t *start,
			     size_t test_from, struct gl_forecast_satscore *s, struct gl_err *err) GL_MUSTCHECK;
/* p[q]: the probability that day nd, the one after the last, is saturated,
 * from the model fitted on every queue-day. When those are all alike (never
 * or always saturated) there is no model: p is the pooled rate by Laplace's
 * rule, (saturated + 1) / (days + 2), and *fitted is 0. p[q] is NaN for a
 * queue with no day. -GL_EINVAL when there is no queue-day at all, or none
 * with a day before it (nothing to learn from, not even a rate). */
int gl_forecast_sat_next(const struct gl_forecast_satday *days, size_t nq, size_t nd, const size_t *start, double *p,
			 int *fitted, struct gl_err *err) GL_MUSTCHECK;

/* p(value > threshold) from a forecast's quantiles (lo95 .025, lo80 .1,
 * point .5, hi80 .9, hi95 .975), linear between them: the probability of
 * saturation of a day whose peak demand was forecast. NaN when the
 * forecast has no interval. */
double gl_forecast_prob_above(double threshold, double lo95, double lo80, double point, double hi80, double hi95);
/* Its inverse: the value v with p(value > v) = p, for p in [0.025, 0.975]
 * (linear between the same quantiles); NaN without an interval or for p
 * outside that range. */
double gl_forecast_value_above(double p, double lo95, double lo80, double point, double hi80, double hi95);

#endif
