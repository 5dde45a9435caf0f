/* The forecaster on small series with known answers, and the accuracy
 * metrics on hand-computed examples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/fctrend.h"
#include "gl/forecast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Options for slot 0 on a Monday at 00:00: hourly or daily steps. */
static struct gl_forecast_opts opts_at(int slots_per_day, int horizon, int method)
{
	struct gl_forecast_opts o = {0};
	o.slots_per_day = slots_per_day;
	o.slots_per_week = 7 * slots_per_day;
	o.horizon = horizon;
	o.method = method;
	o.first_weekday = 0;
	return o;
}

static struct gl_forecast_opts hourly(int horizon)
{
	return opts_at(24, horizon, GL_FORECAST_AUTO);
}

/* A daily sine plus a weekend dip, slot 0 on a Monday at 00:00. */
static double signal(size_t t)
{
	const double pi = 3.14159265358979323846;
	int weekend = (t / 24) % 7 >= 5;
	return 100 + 30 * sin(2 * pi * (double)(t % 24) / 24) - (weekend ? 40 : 0);
}

/* Deterministic noise in [-a, a] (an LCG, so the test is repeatable). */
static double noise(uint32_t *s, double a)
{
	*s = *s * 1664525u + 1013904223u;
	return a * (2.0 * (double)(*s >> 8) / (double)(1u << 24) - 1.0);
}

static void assert_nested(const struct gl_forecast_result *r)
{
	for (int h = 0; h < r->horizon; h++) {
		assert_true(r->lo95[h] >= 0);
		assert_true(r->lo95[h] <= r->lo80[h]);
		assert_true(r->lo80[h] <= r->point[h]);
		assert_true(r->point[h] <= r->hi80[h]);
		assert_true(r->hi80[h] <= r->hi95[h]);
	}
}

static void test_sine_weekly_recovered(void **state)
{
	(void)state;
	size_t n = 8 * 168;
	double *y = malloc(sizeof(double) * n);
	struct gl_forecast_opts o = hourly(48);
	struct gl_forecast_result r;
	struct gl_err err = {0};

	for (size_t t = 0; t < n; t++)
		y[t] = signal(t);
	/* exact pattern: every method that knows the week recovers it */
	assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
	assert_false(r.fallback);
	for (int h = 0; h < 48; h++)
		assert_true(fabs(r.point[h] - signal(n + (size_t)h)) < 1e-6);
	assert_true(r.cv.mae < 1e-6);
	gl_forecast_result_fini(&r);

	o.method = GL_FORECAST_HW;
	assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
	assert_int_equal(r.method, GL_FORECAST_HW);
	for (int h = 0; h < 48; h++)
		assert_true(fabs(r.point[h] - signal(n + (size_t)h)) < 1e-6);
	gl_forecast_result_fini(&r);

	/* with noise of +-10 the forecast stays near the signal, much nearer
	 * than the noise (a naive forecast would be off by up to 70) */
	uint32_t seed = 42;
	for (size_t t = 0; t < n; t++)
		y[t] = signal(t) + noise(&seed, 10);
	o.method = GL_FORECAST_AUTO;
	assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
	double sae = 0;
	for (int h = 0; h < 48; h++)
		sae += fabs(r.point[h] - signal(n + (size_t)h));
	assert_true(sae / 48 < 5);
	assert_nested(&r);
	/* the chosen method did at least as well as the best baseline in CV */
	assert_true(r.baseline >= 0 && r.baseline < GL_FORECAST_FIRST_MODEL);
	assert_true(r.cv_method[r.method].mae <= r.cv_method[r.baseline].mae);
	assert_true(r.origins >= 2);
	/* the 80 % interval is a real one, and covers most of the noise */
	assert_true(r.hi80[0] - r.lo80[0] > 5 && r.hi80[0] - r.lo80[0] < 40);
	gl_forecast_result_fini(&r);
	free(y);
}

static void test_constant_zero_width(void **state)
{
	(void)state;
	size_t n = 4 * 168;
	double *y = malloc(sizeof(double) * n);
	struct gl_forecast_opts o = hourly(24);
	struct gl_err err = {0};
	for (size_t t = 0; t < n; t++)
		y[t] = 7;
	for (int m = GL_FORECAST_AUTO; m < GL_FORECAST_METHOD_COUNT; m++) {
		struct gl_forecast_result r;
		o.method = m;
		if (m == GL_FORECAST_SES || m >= GL_FORECAST_FIRST_TREND) {
			/* no season, or a trend of daily totals: refused for a series
			 * with a daily cycle, with the reason */
			assert_true(gl_forecast_fit(y, n, &o, &r, &err) < 0);
			assert_non_null(strstr(err.msg, gl_forecast_method_name(m)));
			gl_forecast_result_fini(&r);
			continue;
		}
		assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
		for (int h = 0; h < 24; h++) {
			assert_true(fabs(r.point[h] - 7) < 1e-9);
			assert_true(fabs(r.lo95[h] - 7) < 1e-9 && fabs(r.hi95[h] - 7) < 1e-9);
			assert_true(fabs(r.lo80[h] - 7) < 1e-9 && fabs(r.hi80[h] - 7) < 1e-9);
		}
		gl_forecast_result_fini(&r);
	}
	free(y);
}

static void test_zero_heavy_never_negative(void **state)
{
	(void)state;
	size_t n = 5 * 168;
	double *y = calloc(n, sizeof(double));
	struct gl_forecast_opts o = hourly(72);
	struct gl_err err = {0};
	struct gl_forecast_result r;

	/* all zero: zero forecasts, zero intervals */
	assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
	for (int h = 0; h < 72; h++)
		assert_true(r.point[h] == 0 && r.lo95[h] == 0 && r.hi95[h] == 0);
	gl_forecast_result_fini(&r);

	/* idle most days, a burst now and then: nothing negative, for any method */
	uint32_t seed = 7;
	for (size_t t = 0; t < n; t++)
		y[t] = noise(&seed, 1) > 0.9 ? 500 : 0;
	for (int m = GL_FORECAST_AUTO; m < GL_FORECAST_METHOD_COUNT; m++) {
		o.method = m;
		if (m == GL_FORECAST_SES || m >= GL_FORECAST_FIRST_TREND)
			continue; /* hourly: refused (above) */
		assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
		for (int h = 0; h < 72; h++)
			assert_true(r.point[h] >= 0 && r.lo95[h] >= 0 && r.lo80[h] >= 0);
		assert_nested(&r);
		gl_forecast_result_fini(&r);
	}
	free(y);
}

static void test_short_history_fallback(void **state)
{
	(void)state;
	/* five days, hourly: hour h is 10*h on day d plus d (so the median of
	 * the five days at hour h is 10*h + 2) */
	size_t n = 5 * 24;
	double y[5 * 24];
	struct gl_forecast_opts o = hourly(24);
	struct gl_forecast_result r;
	struct gl_err err = {0};
	for (size_t t = 0; t < n; t++)
		y[t] = 10.0 * (double)(t % 24) + (double)(t / 24);
	assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
	assert_true(r.fallback);
	assert_non_null(strstr(r.note, "short history"));
	for (int h = 0; h < 24; h++) {
		assert_true(fabs(r.point[h] - (10.0 * h + 2)) < 1e-9);
		/* five days leave no backtest origin (a week of training first):
		 * no interval is claimed */
		assert_true(isnan(r.lo95[h]) && isnan(r.lo80[h]) && isnan(r.hi80[h]) && isnan(r.hi95[h]));
	}
	assert_int_equal(r.origins, 0);
	gl_forecast_result_fini(&r);

	/* no history at all: zeros, said so */
	assert_int_equal(gl_forecast_fit(y, 0, &o, &r, &err), 0);
	assert_true(r.fallback);
	assert_true(r.point[0] == 0);
	assert_true(isnan(r.lo95[0]) && isnan(r.lo80[0]) && isnan(r.hi80[0]) && isnan(r.hi95[0]));
	assert_non_null(strstr(r.note, "no backtest possible, so no intervals"));
	gl_forecast_result_fini(&r);

	/* a team first seen yesterday: one slot, said in the singular */
	struct gl_forecast_opts od = o;
	od.slots_per_day = 1;
	od.slots_per_week = 7;
	od.horizon = 7;
	assert_int_equal(gl_forecast_fit(y, 1, &od, &r, &err), 0);
	assert_non_null(strstr(r.note, "short history (1 slot, 0 backtest origins;"));
	gl_forecast_result_fini(&r);
}

static void test_missing_slots(void **state)
{
	(void)state;
	/* a maintenance day marked NaN is imputed from the week before, so the
	 * forecast of an exactly weekly series is unchanged */
	size_t n = 6 * 168;
	double *y = malloc(sizeof(double) * n);
	struct gl_forecast_opts o = hourly(24);
	struct gl_forecast_result r;
	struct gl_err err = {0};
	for (size_t t = 0; t < n; t++)
		y[t] = signal(t);
	for (size_t t = 3 * 168 + 24; t < 3 * 168 + 48; t++)
		y[t] = NAN;
	assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
	for (int h = 0; h < 24; h++)
		assert_true(fabs(r.point[h] - signal(n + (size_t)h)) < 1e-6);
	/* and never scored: the backtest's 28 days hold the missing one, so 27
	 * days of hours are scored, not 28 (its imputed values were scored as
	 * if they had happened) */
	assert_int_equal(r.origins, 28);
	assert_int_equal(r.cv.n, 27 * 24);
	assert_int_equal(r.cv_method[GL_FORECAST_NAIVE].n, 27 * 24);
	gl_forecast_result_fini(&r);
	free(y);
}

/* A daily series (slot 0 a Monday) fitted with selection, h days ahead. */
static int fit_daily(const double *y, size_t n, int h, struct gl_forecast_result *r)
{
	struct gl_forecast_opts o = {0};
	struct gl_err err = {0};
	o.slots_per_day = 1;
	o.slots_per_week = 7;
	o.horizon = h;
	o.method = GL_FORECAST_AUTO;
	o.first_weekday = 0;
	return gl_forecast_fit(y, n, &o, r, &err);
}

static void test_trend_recovered(void **state)
{
	/* a pure line and a pure exponential (with a weekday pattern, additive
	 * and multiplicative): the trend methods recover them (to 0.001),
	 * beat every no-trend method in the backtest by far and are chosen;
	 * the bands of an exact fit have no width */
	double y[120];
	struct gl_forecast_result r;
	(void)state;
	for (int t = 0; t < 120; t++)
		y[t] = 100 + 2.0 * t + (t % 7 == 5 ? -30 : t % 7 == 6 ? -20 : 10);
	assert_int_equal(fit_daily(y, 120, 28, &r), 0);
	assert_int_equal(r.method, GL_FORECAST_LINEAR);
	assert_non_null(strstr(r.note, "below the best no-trend method"));
	for (int h = 0; h < 28; h++) {
		int t = 120 + h;
		double want = 100 + 2.0 * t + (t % 7 == 5 ? -30 : t % 7 == 6 ? -20 : 10);
		assert_true(fabs(r.point[h] - want) < 1e-3);
		assert_true(fabs(r.hi95[h] - r.lo95[h]) < 1e-3);
	}
	gl_forecast_result_fini(&r);

	for (int t = 0; t < 120; t++)
		y[t] = 1000 * pow(1.01, t) * (t % 7 >= 5 ? 0.6 : 1);
	assert_int_equal(fit_daily(y, 120, 28, &r), 0);
	assert_int_equal(r.method, GL_FORECAST_LOGLIN);
	for (int h = 0; h < 28; h++) {
		int t = 120 + h;
		double want = 1000 * pow(1.01, t) * (t % 7 >= 5 ? 0.6 : 1);
		/* log(1 + y) is not quite log y: within 0.5 % */
		assert_true(fabs(r.point[h] / want - 1) < 0.005);
	}
	gl_forecast_result_fini(&r);
}

static void test_trend_level_shift_is_no_slope(void **state)
{
	/* a team moves in on day 60: a step from 100 to 160, then flat. A line
	 * through it would climb forever; the line with one level shift finds
	 * the step where it is and no slope, and no trend method is chosen
	 * over the flat ones */
	double y[120], out[56];
	struct gl_fctrend_fit fit;
	struct gl_forecast_result r;
	uint32_t seed = 3;
	(void)state;
	for (int t = 0; t < 120; t++)
		y[t] = (t < 60 ? 100 : 160) + noise(&seed, 5);
	assert_int_equal(gl_fctrend_forecast(GL_FCTREND_LINEAR, y, 120, 7, 182, 56, out, &fit), 0);
	assert_int_equal(fit.shift_at, 60);
	assert_true(fabs(fit.shift - 60) < 3);
	/* (a line through the step would climb 0.74 a day) */
	assert_true(fabs(fit.slope) < 0.05);
	assert_true(fabs(out[55] - 160) < 5);
	assert_int_equal(fit_daily(y, 120, 28, &r), 0);
	assert_true(r.method < GL_FORECAST_FIRST_TREND);
	for (int h = 0; h < 28; h++)
		assert_true(fabs(r.point[h] - 160) < 6);
	gl_forecast_result_fini(&r);
}

static void test_bands_widen_with_lead(void **state)
{
	/* a random walk: the error a month ahead is several times tomorrow's,
	 * so the 80 % band at lead 28 (weeks 2-4) is wider than at lead 1 (day
	 * 1), and the accuracy is reported per lead bucket */
	double y[200], v = 500;
	struct gl_forecast_result r;
	uint32_t seed = 11;
	(void)state;
	for (int t = 0; t < 200; t++) {
		v += noise(&seed, 20);
		y[t] = v + noise(&seed, 5);
	}
	assert_int_equal(fit_daily(y, 200, 28, &r), 0);
	assert_int_equal(r.horizon, 28);
	assert_true(r.hi80[27] - r.lo80[27] > 2 * (r.hi80[0] - r.lo80[0]));
	assert_true(r.hi95[27] - r.lo95[27] > r.hi80[27] - r.lo80[27]);
	assert_int_equal(r.bucket_first[0], 1);
	assert_int_equal(r.bucket_last[0], 1);
	assert_int_equal(r.bucket_first[1], 2);
	assert_int_equal(r.bucket_last[1], 7);
	assert_int_equal(r.bucket_first[2], 8);
	assert_int_equal(r.bucket_last[2], 28);
	assert_int_equal(r.bucket_first[3], 0);
	/* the backtest's error grows with the lead too, and each bucket's 80 %
	 * band covers about 80 % of its own (left-out) actuals */
	assert_true(r.cv_bucket[2].mae > 2 * r.cv_bucket[0].mae);
	for (int b = 0; b < 3; b++)
		assert_true(r.cv_bucket[b].coverage80 > 0.7 && r.cv_bucket[b].coverage80 < 0.9);
	assert_nested(&r);
	gl_forecast_result_fini(&r);
}

static void test_pool_is_deep_at_every_lead(void **state)
{
	/* 56 days at 100, then a week at 500: the pooled median of the last
	 * 28 or 42 days of a day type has 21 (or 35) of 28 (42) at 100 before
	 * the origin, so it says 100 four weeks ahead as it does tomorrow. Its
	 * pool counted from the slot forecast held 28 - h days at lead h:
	 * 500 from lead 15 on (its own last week), then nothing */
	double y[63];
	struct gl_forecast_opts o = {0};
	struct gl_forecast_result r;
	struct gl_err err = {0};
	(void)state;
	for (int t = 0; t < 63; t++)
		y[t] = t < 56 ? 100 : 500;
	o.slots_per_day = 1;
	o.slots_per_week = 7;
	o.horizon = 28;
	o.method = GL_FORECAST_MEDIAN_POOL;
	o.first_weekday = 0;
	assert_int_equal(gl_forecast_fit(y, 63, &o, &r, &err), 0);
	assert_int_equal(r.method, GL_FORECAST_MEDIAN_POOL);
	for (int h = 0; h < r.horizon; h++)
		assert_true(fabs(r.point[h] - 100) < 1e-9);
	gl_forecast_result_fini(&r);
}

/* Exponential noise of mean m (median m ln 2): deterministic. */
static double expnoise(uint32_t *s, double m)
{
	double u = (noise(s, 0.5) + 0.5) * 0.999999 + 5e-7;
	return -m * log(u);
}

static void test_few_errors_still_cover(void **state)
{
	/* 400 series of three weeks of noise around a level, a day ahead: ten
	 * or so backtest errors each. Bands at their sample quantiles (the 10th
	 * and 90th percentile of ten errors) covered the next day 73 % of the
	 * time; at the conformal ranks they cover at least 80 % (within the
	 * 400 draws' noise) */
	int in = 0, n = 0;
	uint32_t seed = 17;
	(void)state;
	for (int s = 0; s < 400; s++) {
		double y[22];
		struct gl_forecast_opts o = {0};
		struct gl_forecast_result r;
		struct gl_err err = {0};
		for (int t = 0; t < 22; t++)
			y[t] = 100 + noise(&seed, 20);
		o.slots_per_day = 1;
		o.slots_per_week = 7;
		o.horizon = 1;
		o.method = GL_FORECAST_MEDIAN_DAY;
		o.first_weekday = 0;
		assert_int_equal(gl_forecast_fit(y, 21, &o, &r, &err), 0);
		in += y[21] >= r.lo80[0] && y[21] <= r.hi80[0];
		n++;
		gl_forecast_result_fini(&r);
	}
	assert_true((double)in / n >= 0.78);
}

static void test_week_ahead_bands_cover(void **state)
{
	/* 400 series of six weeks around a weekly profile (weekends lower),
	 * persistent noise (an AR(1) on the log scale) plus a day's own, a
	 * week ahead from daily origins: each backtest slot of days 2-7 is
	 * scored by up to six origins. Ranked as if every error were a draw of
	 * its own, the 80 % bands covered days 2-7 69.4 % of the time; ranked
	 * over the distinct slots, inside 75-85 %. Days 2-7 only: the day-1
	 * bucket has an error a slot and did not move. */
	int in = 0, n = 0;
	uint32_t seed = 7;
	(void)state;
	for (int s = 0; s < 400; s++) {
		double y[49], a = 0;
		struct gl_forecast_opts o = opts_at(1, 7, GL_FORECAST_AUTO);
		struct gl_forecast_result r;
		struct gl_err err = {0};
		for (int t = 0; t < 49; t++) {
			a = 0.8 * a + noise(&seed, 0.35);
			y[t] = (t % 7 >= 5 ? 70 : 100) * exp(a + noise(&seed, 0.35));
		}
		assert_int_equal(gl_forecast_fit(y, 42, &o, &r, &err), 0);
		assert_int_equal(r.horizon, 7);
		for (int h = 1; h < 7; h++) {
			in += y[42 + h] >= r.lo80[h] && y[42 + h] <= r.hi80[h];
			n++;
		}
		gl_forecast_result_fini(&r);
	}
	print_message("week ahead, days 2-7: 80 %% band covered %.1f %%\n", 100.0 * in / n);
	assert_true((double)in / n >= 0.75);
	assert_true((double)in / n <= 0.85);
}

static void test_predictive_median(void **state)
{
	/* skewed demand (exponential noise of mean 30 on 100: median 120.8,
	 * mean 130): a level method forecasts about the mean; the predictive
	 * median behind the saturation probabilities is the point plus the
	 * backtest errors' median, near the true median */
	double y[200];
	struct gl_forecast_opts o = {0};
	struct gl_forecast_result r;
	struct gl_err err = {0};
	uint32_t seed = 23;
	(void)state;
	for (int t = 0; t < 200; t++)
		y[t] = 100 + expnoise(&seed, 30);
	o.slots_per_day = 1;
	o.slots_per_week = 7;
	o.horizon = 7;
	o.method = GL_FORECAST_SES;
	o.first_weekday = 0;
	assert_int_equal(gl_forecast_fit(y, 200, &o, &r, &err), 0);
	for (int h = 0; h < 7; h++) {
		assert_true(r.q50[h] < r.point[h]);
		assert_true(fabs(r.q50[h] - 120.8) < fabs(r.point[h] - 120.8));
		assert_true(r.q50[h] >= r.lo80[h] && r.q50[h] <= r.hi80[h]);
	}
	gl_forecast_result_fini(&r);
}

static void test_trend_line_is_the_median(void **state)
{
	/* a line with skewed noise (exponential, mean 10, median 6.93): the
	 * trend line runs through the median, where a 50 % saturation date
	 * must be read, not through the mean 3 GPUs above it (least squares
	 * put it at +10.0); over 20 series, as one's median is only known to
	 * +-1.6 */
	double y[182], out[28], off = 0;
	uint32_t seed = 29;
	(void)state;
	for (int s = 0; s < 20; s++) {
		for (int t = 0; t < 182; t++)
			y[t] = 100 + 1.0 * t + expnoise(&seed, 10);
		assert_int_equal(gl_fctrend_forecast(GL_FCTREND_LINEAR, y, 182, 1, 182, 28, out, NULL), 0);
		for (int h = 0; h < 28; h++)
			off += (out[h] - (100 + 182 + h)) / (20 * 28);
	}
	assert_true(fabs(off - 6.93) < 1.0);
}

static void test_selection_falls_back_to_baseline(void **state)
{
	/* an exactly weekly series: the week-ago value is never wrong, so no
	 * model can beat it (strictly), and the baseline is used and named */
	double y[200];
	struct gl_forecast_result r;
	uint32_t seed = 5;
	(void)state;
	for (int t = 0; t < 200; t++)
		y[t] = 100 + 30 * (t % 7 == 2) + 10 * (t % 7 == 5);
	assert_int_equal(fit_daily(y, 200, 14, &r), 0);
	assert_int_equal(r.method, GL_FORECAST_SNAIVE_WEEK);
	assert_int_equal(r.baseline, GL_FORECAST_SNAIVE_WEEK);
	assert_non_null(strstr(r.note, "best baseline snaive_week"));
	gl_forecast_result_fini(&r);
	/* noise around a level: no trend method is chosen, as none beats the
	 * flat ones on this history */
	for (int t = 0; t < 200; t++)
		y[t] = 100 + noise(&seed, 20);
	assert_int_equal(fit_daily(y, 200, 28, &r), 0);
	assert_true(r.method < GL_FORECAST_FIRST_TREND);
	assert_true(r.cv_method[GL_FORECAST_LINEAR].n > 0);
	gl_forecast_result_fini(&r);
}

static void test_metrics_by_hand(void **state)
{
	(void)state;
	const double y[] = {1, 2, 3, 4}, f[] = {2, 2, 2, 2};
	const double lo[] = {0, 2, 2, 2}, hi[] = {2, 2, 4, 3};
	const double lo95[] = {0, 0, 0, 0}, hi95[] = {9, 9, 9, 3.5};
	struct gl_forecast_metrics m;
	gl_forecast_metrics_compute(y, f, lo, hi, lo95, hi95, 4, 2, &m);
	assert_int_equal(m.n, 4);
	assert_true(fabs(m.mae - 1.0) < 1e-12);          /* (1+0+1+2)/4 */
	assert_true(fabs(m.rmse - sqrt(1.5)) < 1e-12);   /* sqrt((1+0+1+4)/4) */
	assert_true(fabs(m.mase - 0.5) < 1e-12);         /* 1 / 2 */
	assert_true(fabs(m.wape - 0.4) < 1e-12);         /* 4 / 10 */
	assert_true(fabs(m.smape - (2.0 / 3 + 0 + 0.4 + 2.0 / 3) / 4) < 1e-12);
	assert_true(fabs(m.coverage80 - 0.75) < 1e-12);  /* 4 is above 3 */
	assert_true(fabs(m.coverage95 - 0.75) < 1e-12);  /* 4 is above 3.5 */
	/* pinball: (.1+.1)/2, 0, (.1+.1)/2, (.2+.9)/2 -> mean .1875, / 2 */
	assert_true(fabs(m.pinball80 - 0.09375) < 1e-12);

	const double s[] = {1, 3, 2, 5};
	assert_true(fabs(gl_forecast_mase_scale(s, 4, 1) - 2.0) < 1e-12);
	assert_true(fabs(gl_forecast_mase_scale(s, 4, 2) - 1.5) < 1e-12);
	assert_true(gl_forecast_mase_scale(s, 1, 1) == 0);
	/* a NaN actual is skipped, not scored */
	const double yn[] = {1, NAN}, fn[] = {1, 5};
	gl_forecast_metrics_compute(yn, fn, NULL, NULL, NULL, NULL, 2, 1, &m);
	assert_int_equal(m.n, 1);
	assert_true(m.mae == 0 && isnan(m.coverage80));
}

static void test_names_and_bad_options(void **state)
{
	(void)state;
	for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++)
		assert_int_equal(gl_forecast_method_parse(gl_forecast_method_name(m)), m);
	assert_int_equal(gl_forecast_method_parse("auto"), GL_FORECAST_AUTO);
	assert_int_equal(gl_forecast_method_parse("arima"), -2);
	assert_null(gl_forecast_method_name(GL_FORECAST_METHOD_COUNT));

	double y[10] = {0};
	struct gl_forecast_opts o = hourly(0);
	struct gl_forecast_result r;
	struct gl_err err = {0};
	assert_int_equal(gl_forecast_fit(y, 10, &o, &r, &err), -GL_EINVAL);
	assert_non_null(strstr(err.msg, "horizon"));
	o = hourly(4);
	o.slots_per_week = 100; /* not whole days */
	assert_int_equal(gl_forecast_fit(y, 10, &o, &r, &err), -GL_EINVAL);
	gl_forecast_result_fini(&r); /* safe after a failure */
}

static void test_daily_weekly_pattern(void **state)
{
	(void)state;
	/* daily steps with a weekday/weekend pattern and a little noise: the
	 * chosen method beats naive by far and a weekday gets a weekday level */
	size_t n = 10 * 7;
	double y[70];
	struct gl_forecast_opts o = {0};
	struct gl_forecast_result r;
	struct gl_err err = {0};
	uint32_t seed = 3;
	o.slots_per_day = 1;
	o.slots_per_week = 7;
	o.horizon = 7;
	o.method = GL_FORECAST_AUTO;
	o.first_weekday = 0;
	for (size_t t = 0; t < n; t++)
		y[t] = (t % 7 >= 5 ? 200 : 1000) + noise(&seed, 20);
	assert_int_equal(gl_forecast_fit(y, n, &o, &r, &err), 0);
	for (int h = 0; h < 7; h++) {
		double want = (n + (size_t)h) % 7 >= 5 ? 200 : 1000;
		assert_true(fabs(r.point[h] - want) < 40);
	}
	assert_true(r.cv_method[r.method].mae < r.cv_method[GL_FORECAST_NAIVE].mae / 4);
	assert_nested(&r);
	gl_forecast_result_fini(&r);
}

/* Mean width of the 80 % band over the horizon. */
static double width80(const struct gl_forecast_result *r)
{
	double w = 0;
	for (int h = 0; h < r->horizon; h++)
		w += r->hi80[h] - r->lo80[h];
	return w / r->horizon;
}

/* Bands follow the recent volatility: the same signal with calm fortnights
 * (noise +-2) and stormy ones (+-40) alternating. After a stormy fortnight
 * the bands in units of the recent volatility beat the pool's own
 * quantiles clearly in the backtest (t 2.0 over 28 origins) and are used;
 * after a calm one they do not (t 0.8) and the pooled median keeps its
 * pool's quantiles, the 28-42 days of both weathers (a day ahead the pool's
 * quantiles are the pooled median's bands unless clearly beaten: Venus'
 * pinball, docs/forecast.md). */
static void test_bands_follow_recent_volatility(void **state)
{
	(void)state;
	size_t n = 10 * 168;
	double *y = malloc(sizeof(double) * n);
	struct gl_forecast_opts o = hourly(24);
	struct gl_forecast_result stormy, calm;
	struct gl_err err = {0};
	uint32_t seed = 7;
	for (size_t t = 0; t < n; t++)
		y[t] = signal(t) + noise(&seed, (t / 336) % 2 ? 2 : 40);
	/* weeks 8-9 are stormy; cutting after week 7 ends on calm ones */
	assert_int_equal(gl_forecast_fit(y, n, &o, &stormy, &err), 0);
	assert_int_equal(gl_forecast_fit(y, n - 336, &o, &calm, &err), 0);
	assert_nested(&stormy);
	assert_nested(&calm);
	/* measured 62 vs 35 (61 vs 22 when the pick was by the mean pinball
	 * alone; one distribution for the whole history gave 45 vs 31) */
	assert_int_equal(stormy.band_kind[0], 2);
	assert_int_equal(calm.band_kind[0], 3);
	assert_true(width80(&stormy) > 1.5 * width80(&calm));
	gl_forecast_result_fini(&stormy);
	gl_forecast_result_fini(&calm);
	free(y);
}

/* Simple exponential smoothing (daily steps): a level that shifts from 100
 * to 200 is followed (the fitted constant is high, the level ends at 200
 * within 1 %), and a constant series gives that constant with a
 * zero-width interval. */
static void test_ses_follows_a_level_shift(void **state)
{
	(void)state;
	double y[60];
	struct gl_forecast_opts o = {0};
	struct gl_forecast_result r;
	struct gl_err err = {0};
	o.slots_per_day = 1;
	o.slots_per_week = 7;
	o.horizon = 7;
	o.method = GL_FORECAST_SES;
	o.first_weekday = 0;
	for (int t = 0; t < 60; t++)
		y[t] = t < 45 ? 100 : 200;
	assert_int_equal(gl_forecast_fit(y, 60, &o, &r, &err), 0);
	assert_int_equal(r.method, GL_FORECAST_SES);
	for (int h = 0; h < 7; h++)
		assert_true(fabs(r.point[h] - 200) < 2);
	gl_forecast_result_fini(&r);
	for (int t = 0; t < 60; t++)
		y[t] = 42;
	assert_int_equal(gl_forecast_fit(y, 60, &o, &r, &err), 0);
	for (int h = 0; h < 7; h++) {
		assert_true(fabs(r.point[h] - 42) < 1e-9);
		assert_true(fabs(r.lo95[h] - 42) < 1e-9 && fabs(r.hi95[h] - 42) < 1e-9);
	}
	gl_forecast_result_fini(&r);
}

static void test_active_start(void **state)
{
	const double daily[] = {0, 0, 0, 5, 0, 7};
	double hourly[72] = {0}, zeros[10] = {0};
	const double nan_first[] = {NAN, 0, 2, 3};
	(void)state;
	assert_int_equal(gl_forecast_active_start(daily, 6, 1), 3);
	/* hourly: the first activity at hour 30 starts the series at its day */
	hourly[30] = 1;
	assert_int_equal(gl_forecast_active_start(hourly, 72, 24), 24);
	/* never active: the whole series, a constant zero */
	assert_int_equal(gl_forecast_active_start(zeros, 10, 1), 0);
	/* missing (excluded) slots before the first activity are not activity */
	assert_int_equal(gl_forecast_active_start(nan_first, 4, 1), 2);
	assert_int_equal(gl_forecast_active_start(daily, 0, 1), 0);
}

static void test_horizon_longer_than_history_says_so(void **state)
{
	/* a year of weekly history asked a year ahead: origins one week apart
	 * from week 7 on, each scored on the weeks that have happened; lead h
	 * has actuals after the origins up to week 52 - h, so two origins reach
	 * lead 44 and none lead 46: the answer stops at 44 weeks, says so, and
	 * the weeks after are not a flat line but NaN (bands too) */
	double y[52];
	struct gl_forecast_opts o = {0};
	struct gl_forecast_result r;
	struct gl_err err = {0};
	(void)state;
	for (int i = 0; i < 52; i++)
		y[i] = 10 + i % 3 + (i * 7 % 5);
	o.slots_per_day = 1;
	o.slots_per_week = 1;
	o.horizon = 53;
	o.method = GL_FORECAST_AUTO;
	assert_int_equal(gl_forecast_fit(y, 52, &o, &r, &err), 0);
	assert_false(r.fallback);
	assert_int_equal(r.horizon_asked, 53);
	assert_int_equal(r.horizon, 44);
	assert_int_equal(r.origins, 45);
	assert_non_null(strstr(r.note, "answered 44 of the 53 weeks asked"));
	assert_null(strstr(r.note, "days"));
	for (int h = 0; h < 44; h++) {
		/* a noisy series: real bands, nested, around the point */
		assert_true(r.hi95[h] > r.lo95[h]);
		assert_true(r.lo95[h] <= r.lo80[h] && r.lo80[h] <= r.point[h]);
		assert_true(r.point[h] <= r.hi80[h] && r.hi80[h] <= r.hi95[h]);
		assert_true(r.lo95[h] >= 0);
	}
	for (int h = 44; h < 53; h++)
		assert_true(isnan(r.point[h]) && isnan(r.lo80[h]) && isnan(r.hi95[h]));
	/* the lead buckets it answers: week 1 (lead 1), weeks 2-4, months 2-3
	 * (leads 5-13), months 4-12 (14-44); a weekly slot has no day 1 */
	assert_int_equal(r.bucket_first[0], 0);
	assert_int_equal(r.bucket_first[1], 1);
	assert_int_equal(r.bucket_last[1], 1);
	assert_int_equal(r.bucket_first[2], 2);
	assert_int_equal(r.bucket_last[2], 4);
	assert_int_equal(r.bucket_first[3], 5);
	assert_int_equal(r.bucket_last[3], 13);
	assert_int_equal(r.bucket_first[4], 14);
	assert_int_equal(r.bucket_last[4], 44);
	assert_int_equal(r.cv_bucket[0].n, 0);
	assert_true(r.cv_bucket[1].n > 0 && r.cv_bucket[4].n > 0);
	assert_true(r.cv.coverage80 > 0.5);
	gl_forecast_result_fini(&r);

	/* hw asked by name needs a longer warm-up: the oldest 7 origins are
	 * dropped (14 weeks of history first), and with them the actuals of the
	 * longest leads: it answers 37 weeks */
	o.method = GL_FORECAST_HW;
	assert_int_equal(gl_forecast_fit(y, 52, &o, &r, &err), 0);
	assert_int_equal(r.origins, 38);
	assert_int_equal(r.horizon, 37);
	assert_non_null(strstr(r.note, "answered 37 of the 53 weeks asked"));
	gl_forecast_result_fini(&r);
	o.method = GL_FORECAST_AUTO;

	/* two weeks of weekly history is too short to trust at any horizon */
	o.horizon = 4;
	assert_int_equal(gl_forecast_fit(y, 10, &o, &r, &err), 0);
	assert_true(r.fallback);
	assert_non_null(strstr(r.note, "short history"));
	gl_forecast_result_fini(&r);
}

static void test_saturation_days(void **state)
{
	/* two queues of 40 days: saturated (300 pending minutes) on days 10-19
	 * and 30-39, calm (0) otherwise; the second queue exists from day 25 */
	enum { ND = 40 };
	struct gl_forecast_satday days[2 * ND];
	size_t start[2] = {0, 25};
	struct gl_forecast_satscore sc;
	struct gl_err err = {0};
	double p[2];
	int fitted;
	(void)state;
	memset(days, 0, sizeof days);
	for (int q = 0; q < 2; q++)
		for (int d = 0; d < ND; d++)
			if (d / 10 % 2 == 1 && (size_t)d >= start[q])
				days[q * ND + d] = (struct gl_forecast_satday){300, 180, 60};
	/* trained on days 1-29 (both switches seen), scored on 30-39 of both
	 * queues: 20 days, all saturated; persistence (and a model that learnt
	 * it) misses day 30 of each: 18/20, F1 2*18/(2*18+2) */
	assert_int_equal(gl_forecast_sat_backtest(days, 2, ND, start, 30, &sc, &err), 0);
	assert_int_equal(sc.days, 20);
	assert_int_equal(sc.saturated, 20);
	assert_true(fabs(sc.persist_accuracy - 0.9) < 1e-12);
	assert_true(fabs(sc.persist_f1 - 36.0 / 38) < 1e-12);
	assert_true(fabs(sc.accuracy - 0.9) < 1e-12);
	assert_true(fabs(sc.f1 - 36.0 / 38) < 1e-12);
	/* from day 20: queue 1 on days 20-39, queue 2 on 26-39 (from its start
	 * + 1); persistence misses day 20 of queue 1 and day 30 of both: 31/34,
	 * with 18 of 20 saturated days found and one false alarm */
	assert_int_equal(gl_forecast_sat_backtest(days, 2, ND, start, 20, &sc, &err), 0);
	assert_int_equal(sc.days, 34);
	assert_int_equal(sc.saturated, 20);
	assert_true(fabs(sc.persist_accuracy - 31.0 / 34) < 1e-12);
	assert_true(fabs(sc.persist_f1 - 36.0 / 39) < 1e-12);

	/* the last day was saturated: tomorrow likely is */
	assert_int_equal(gl_forecast_sat_next(days, 2, ND, start, p, &fitted, &err), 0);
	assert_true(fitted);
	assert_true(p[0] > 0.5 && p[1] > 0.5);
	/* cut at day 25 (queue 2 has no day yet): calm since day 20 */
	assert_int_equal(gl_forecast_sat_next(days, 2, 25, start, p, &fitted, &err), 0);
	assert_true(fitted && p[0] < 0.5 && isnan(p[1]));

	/* never saturated: no model, Laplace's rate over the 39 + 14 queue-days */
	memset(days, 0, sizeof days);
	assert_int_equal(gl_forecast_sat_next(days, 2, ND, start, p, &fitted, &err), 0);
	assert_false(fitted);
	assert_true(fabs(p[0] - 1.0 / (39 + 14 + 2)) < 1e-12 && p[1] == p[0]);
	assert_int_equal(gl_forecast_sat_backtest(days, 2, ND, start, 20, &sc, &err), -GL_EINVAL);
	/* no day at all */
	assert_int_equal(gl_forecast_sat_next(days, 2, 20, (size_t[]){30, 30}, p, &fitted, &err), -GL_EINVAL);
	/* a single day (a first deployment's): no day before it, no rate of
	 * nothing (it would say 0.5) */
	assert_int_equal(gl_forecast_sat_next(days, 2, 1, (size_t[]){0, 0}, p, &fitted, &err), -GL_EINVAL);
	assert_non_null(strstr(err.msg, "too little history"));
}

/* Fills the stack below the caller with byte b: a value the forecaster
 * read without having written would differ from one paint to the next. */
static __attribute__((noinline)) void paint_stack(unsigned char b)
{
	volatile unsigned char pad[1 << 16];
	for (size_t i = 0; i < sizeof pad; i++)
		pad[i] = b;
}

static void test_few_backtest_errors_leave_one_out(void **state)
{
	/* 16 weeks rising by one a week, naive, one week ahead: 9 origins,
	 * each off by exactly +1, so each origin's leave-one-out intervals
	 * come from the other 8 errors, all 1: bands [f, f + 1], every actual
	 * inside both, pinball (0.1 * 1 + 0) / 2 = 0.05 of a scale of 1. With
	 * 8 errors the wanted ranks are 0 1 0 1 6 7 6 7, out of order; the
	 * walk that took them in order left the 10 % to 97.5 % quantiles
	 * unset (valgrind: "Conditional jump or move depends on uninitialised
	 * value(s)" in iv_apply from cv_metrics), so the coverage and pinball
	 * shown beside the forecast were whatever the stack held. */
	double y[16], noisy[16];
	struct gl_forecast_opts o = {0};
	struct gl_forecast_result r, first;
	struct gl_err err = {0};
	const unsigned char paints[] = {0x00, 0x7f, 0xff, 0x3f};
	uint32_t seed = 7;
	(void)state;
	for (int i = 0; i < 16; i++) {
		y[i] = i + 1;
		noisy[i] = 20 + noise(&seed, 10);
	}
	o.slots_per_day = 1;
	o.slots_per_week = 1;
	o.horizon = 1;
	o.method = GL_FORECAST_NAIVE;
	for (size_t p = 0; p < sizeof paints; p++) {
		paint_stack(paints[p]);
		assert_int_equal(gl_forecast_fit(y, 16, &o, &r, &err), 0);
		assert_false(r.fallback);
		assert_int_equal(r.origins, 9);
		assert_int_equal(r.cv.n, 9);
		assert_true(fabs(r.cv.mae - 1) < 1e-12);
		assert_true(r.cv.coverage80 == 1 && r.cv.coverage95 == 1);
		assert_true(fabs(r.cv.pinball80 - 0.05) < 1e-12);
		gl_forecast_result_fini(&r);
	}
	/* any series with few errors: the same figures whatever the stack held */
	o.method = GL_FORECAST_AUTO;
	paint_stack(paints[0]);
	assert_int_equal(gl_forecast_fit(noisy, 16, &o, &first, &err), 0);
	assert_true(first.cv.coverage80 >= 0 && first.cv.coverage80 <= 1);
	for (size_t p = 1; p < sizeof paints; p++) {
		paint_stack(paints[p]);
		assert_int_equal(gl_forecast_fit(noisy, 16, &o, &r, &err), 0);
		assert_int_equal(r.method, first.method);
		assert_memory_equal(&r.cv, &first.cv, sizeof r.cv);
		assert_memory_equal(r.hi95, first.hi95, sizeof(double) * 1);
		gl_forecast_result_fini(&r);
	}
	gl_forecast_result_fini(&first);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bands_follow_recent_volatility),
		cmocka_unit_test(test_ses_follows_a_level_shift),
		cmocka_unit_test(test_sine_weekly_recovered),  cmocka_unit_test(test_constant_zero_width),
		cmocka_unit_test(test_zero_heavy_never_negative), cmocka_unit_test(test_short_history_fallback),
		cmocka_unit_test(test_missing_slots),           cmocka_unit_test(test_metrics_by_hand),
		cmocka_unit_test(test_names_and_bad_options),   cmocka_unit_test(test_daily_weekly_pattern),
		cmocka_unit_test(test_active_start), cmocka_unit_test(test_horizon_longer_than_history_says_so),
		cmocka_unit_test(test_saturation_days), cmocka_unit_test(test_few_backtest_errors_leave_one_out),
		cmocka_unit_test(test_trend_recovered), cmocka_unit_test(test_trend_level_shift_is_no_slope),
		cmocka_unit_test(test_bands_widen_with_lead), cmocka_unit_test(test_selection_falls_back_to_baseline),
		cmocka_unit_test(test_few_errors_still_cover), cmocka_unit_test(test_predictive_median),
		cmocka_unit_test(test_week_ahead_bands_cover),
		cmocka_unit_test(test_trend_line_is_the_median), cmocka_unit_test(test_pool_is_deep_at_every_lead),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
