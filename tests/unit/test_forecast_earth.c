/* Forecast accuracy on the redistributable Helios Earth trace
 * (tests/fixtures/forecast/README.md): daily allocated GPU-hours per VC,
 * one week ahead, trained May 1-17 and tested May 18-31; and saturation
 * days predicted the day before. The baselines are computed here, from the
 * file, without the module, and the forecaster must beat them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/forecast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURE "tests/fixtures/forecast/earth_daily_by_vc.csv"
#define NDAYS 31
#define MAXVC 32
#define TEST0 17 /* 2020-05-18 */

struct vc {
	char name[16];
	double run[NDAYS];
	struct gl_forecast_satday sat[NDAYS];
};
static struct vc vcs[MAXVC];
static int nvc;

static int load(void **state)
{
	(void)state;
	FILE *f = fopen(FIXTURE, "r");
	char line[512];
	if (!f)
		return -1;
	nvc = 0;
	if (!fgets(line, sizeof line, f)) /* header */
		return -1;
	while (fgets(line, sizeof line, f)) {
		char date[16], name[16];
		double run, pend, cap, pm, pm3, pm1;
		int k;
		if (sscanf(line, "%10[^,],%15[^,],%lf,%lf,%lf,%lf,%lf,%lf", date, name, &run, &pend, &cap, &pm, &pm3,
			   &pm1) != 8)
			return -1;
		int day = atoi(date + 8) - 1;
		if (strncmp(date, "2020-05-", 8) || day < 0 || day >= NDAYS)
			return -1;
		for (k = 0; k < nvc && strcmp(vcs[k].name, name); k++)
			;
		if (k == nvc) {
			if (nvc == MAXVC)
				return -1;
			snprintf(vcs[nvc++].name, sizeof vcs[0].name, "%s", name);
		}
		vcs[k].run[day] = run;
		vcs[k].sat[day] = (struct gl_forecast_satday){pm, pm3, pm1};
	}
	fclose(f);
	return nvc == 16 ? 0 : -1;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void test_earth_weekly_gpu_hours(void **state)
{
	(void)state;
	/* pooled absolute errors and actuals over the 16 VCs x 14 test days */
	double e_snaive = 0, e_med = 0, e_auto = 0, sum_y = 0, in80 = 0, n80 = 0;
	for (int k = 0; k < nvc; k++) {
		const double *y = vcs[k].run;
		for (int o = TEST0; o < NDAYS; o += 7) {
			struct gl_forecast_opts opts = {0};
			struct gl_forecast_result r;
			struct gl_err err = {0};
			double last7[7];
			opts.slots_per_day = 1;
			opts.slots_per_week = 7;
			opts.horizon = 7;
			opts.method = GL_FORECAST_AUTO;
			opts.first_weekday = 4; /* 2020-05-01 was a Friday */
			assert_int_equal(gl_forecast_fit(y, (size_t)o, &opts, &r, &err), 0);
			for (int j = 0; j < 7; j++)
				last7[j] = y[o - 1 - j];
			qsort(last7, 7, sizeof(double), cmp_d);
			for (int h = 0; h < 7 && o + h < NDAYS; h++) {
				double a = y[o + h];
				sum_y += a;
				e_snaive += fabs(a - y[o + h - 7]); /* same weekday, last week */
				e_med += fabs(a - last7[3]);        /* median of the last 7 days */
				e_auto += fabs(a - r.point[h]);
				in80 += a >= r.lo80[h] && a <= r.hi80[h];
				n80++;
				assert_true(r.lo95[h] <= r.lo80[h] && r.lo80[h] <= r.point[h]);
				assert_true(r.point[h] <= r.hi80[h] && r.hi80[h] <= r.hi95[h]);
			}
			gl_forecast_result_fini(&r);
		}
	}
	double w_snaive = e_snaive / sum_y, w_med = e_med / sum_y, w_auto = e_auto / sum_y;
	printf("# Earth daily GPU-hours, week ahead, WAPE: auto %.1f %%, seasonal naive %.1f %% (issue: best simple "
	       "21.1 %%), median of last 7 days %.1f %%, target < 19 %%; 80 %% coverage %.1f %% (target 75-85 %%)\n",
	       100 * w_auto, 100 * w_snaive, 100 * w_med, 100 * in80 / n80);
	/* the 80 % bands of a week ahead from 10-17 backtest origins: 59.8 %
	 * at the errors' sample quantiles, 63.4 % at the conformal ranks, 66.1 %
	 * with each lead bucket's bands from the origins scored at all its
	 * leads, 77.7 % ranked over the distinct days the backtest scored
	 * (target 75-85 %) */
	assert_true(in80 / n80 >= 0.75 && in80 / n80 <= 0.85);
	/* the file reproduces the baseline figure */
	assert_true(fabs(w_snaive - 0.211) < 0.0006);
	/* the forecaster beats the best simple baseline, the 7-day
	 * median, and the target */
	assert_true(w_auto < w_snaive);
	assert_true(w_auto < w_med);
	assert_true(w_auto < 0.19);
}

static void test_earth_saturation_days(void **state)
{
	(void)state;
	static struct gl_forecast_satday days[MAXVC * NDAYS];
	size_t start[MAXVC] = {0};
	struct gl_forecast_satscore sc;
	struct gl_err err = {0};

	/* the same function /v1/capacity/forecast reports its accuracy with:
	 * trained on days 2..17 (each needs the day before), scored on 18..31 */
	for (int k = 0; k < nvc; k++)
		memcpy(days + (size_t)k * NDAYS, vcs[k].sat, sizeof vcs[k].sat);
	assert_int_equal(gl_forecast_sat_backtest(days, (size_t)nvc, NDAYS, start, TEST0, &sc, &err), 0);
	printf("# Earth saturation days: model accuracy %.1f %% F1 %.1f %%; persistence accuracy %.1f %% F1 %.1f %% (issue: "
	       "best simple rule 80.4 %%, F1 77.8 %%)\n",
	       100 * sc.accuracy, 100 * sc.f1, 100 * sc.persist_accuracy, 100 * sc.persist_f1);
	assert_int_equal(sc.days, 16 * 14);
	assert_true(fabs(sc.persist_accuracy - 0.804) < 0.001); /* the file reproduces the baseline */
	assert_true(sc.accuracy > 0.804);
	assert_true(sc.f1 > 0.778);
}

static void test_prob_above(void **state)
{
	(void)state;
	/* quantiles 10, 20, 30, 40, 50 at .025 .1 .5 .9 .975 */
	assert_true(fabs(gl_forecast_prob_above(30, 10, 20, 30, 40, 50) - 0.5) < 1e-12);
	assert_true(fabs(gl_forecast_prob_above(25, 10, 20, 30, 40, 50) - 0.7) < 1e-12);
	assert_true(fabs(gl_forecast_prob_above(45, 10, 20, 30, 40, 50) - 0.0625) < 1e-12);
	assert_true(gl_forecast_prob_above(60, 10, 20, 30, 40, 50) == 0);
	assert_true(gl_forecast_prob_above(0, 10, 20, 30, 40, 50) == 1);
	/* a zero-width forecast: certain either way */
	assert_true(gl_forecast_prob_above(5, 7, 7, 7, 7, 7) == 1);
	assert_true(gl_forecast_prob_above(8, 7, 7, 7, 7, 7) == 0);
	/* no interval (no backtest): the probability is unknown, not 0 or 1 */
	assert_true(isnan(gl_forecast_prob_above(8, NAN, NAN, 7, NAN, NAN)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_earth_weekly_gpu_hours),
		cmocka_unit_test(test_earth_saturation_days),
		cmocka_unit_test(test_prob_above),
	};
	return cmocka_run_group_tests(tests, load, NULL);
}
