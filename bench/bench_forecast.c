/* Benchmark: forecast accuracy on real traces beside the baselines and the
 * issue's targets, and forecasting speed.
 *
 * - Helios Venus (../shared/data/helios-venus-throughput, NON-COMMERCIAL
 *   licence: read in place, never copied into the repository): GPUs
 *   requested by submitted jobs (submit_gpu_num), train Apr-Aug 2020, test
 *   the Sept rows of Venus_throughput_pred.csv; hourly and daily, each day
 *   forecast the midnight before from the history up to then. The baselines
 *   (median of the same hour over the last 7 days, of the same weekday over
 *   the last 4 weeks, same-hour 10th/90th percentiles over 28 days) and the
 *   published Lucid forecast are computed here, without the module.
 * - Helios Earth (tests/fixtures/forecast, MIT): daily GPU-hours per VC one
 *   week ahead, and saturation days (also checked by make test).
 *   Beside them, judged on the validation months before September was
 *   read: fixed forecast combinations, conformal scalings of the daily
 *   bands, and how much one month can tell (bootstrap and binomial spread,
 *   forecasts that knew the month).
 * - Speed: 1,000 synthetic series of two years of hourly history, each with
 *   model selection (gl_forecast_fit, method auto), day-ahead.
 *
 * Usage: bench_forecast [shared-data-dir [sep|aug [all|venus,earth,growth,speed]]]
 *   (run from the repo root; aug: Venus validated on August, trained Apr-Jul)
 * Prints markdown table rows: | figure | ours | baseline / target | ratio |.
 */
#include "gl/capplan.h"
#include "gl/forecast.h"
#include "gl/timeutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define MAXH (200 * 24)

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double quantile(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(double), cmp_d);
	double p = q * (n - 1);
	int i = (int)p;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (p - i) * (v[i + 1] - v[i]);
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sums a 10-minute CSV column into hours from 2020-04-01 00:00. Returns the
 * number of hours, or -1. */
static int read_hourly(const char *path, const char *col, double *out, int max)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int ci = -1, n = 0;
	int64_t t0;
	if (!f || gl_timeutil_parse("2020-04-01", 10, &t0))
		return -1;
	memset(out, 0, sizeof(double) * (size_t)max);
	if (!fgets(line, sizeof line, f))
		return -1;
	{
		char *save = NULL, *tok = strtok_r(line, ",\r\n", &save);
		for (int i = 0; tok; i++, tok = strtok_r(NULL, ",\r\n", &save))
			if (!strcmp(tok, col))
				ci = i;
	}
	while (ci >= 0 && fgets(line, sizeof line, f)) {
		char *save = NULL, *tok = strtok_r(line, ",\r\n", &save);
		int64_t t;
		double v = 0;
		if (!tok || gl_timeutil_parse(tok, strlen(tok), &t))
			continue;
		for (int i = 1; i <= ci && (tok = strtok_r(NULL, ",\r\n", &save)); i++)
			if (i == ci)
				v = atof(tok);
		int h = (int)((t - t0) / 3600);
		if (h >= 0 && h < max) {
			out[h] += v;
			if (h + 1 > n)
				n = h + 1;
		}
	}
	fclose(f);
	return ci >= 0 ? n : -1;
}

static void row(const char *fig, const char *ours, const char *limit, const char *ratio)
{
	printf("| %s | %s | %s | %s |\n", fig, ours, limit, ratio);
}

struct acc {
	double sae, sse, n, cover, pin;
};

static void acc_add(struct acc *a, double y, double f, double lo, double hi)
{
	double e = y - f;
	a->sae += fabs(e);
	a->sse += e * e;
	a->n++;
	a->cover += y >= lo && y <= hi;
	a->pin += 0.5 * ((y >= lo ? 0.1 * (y - lo) : 0.9 * (lo - y)) + (y >= hi ? 0.9 * (y - hi) : 0.1 * (hi - y)));
}

#define BOOT_DRAWS 10000

/* Day-block bootstrap: the test days drawn with replacement (BOOT_DRAWS
 * times, a fixed seed), and each draw's summed losses of ours and of the
 * baseline in so[] and sb[]. ours[d], base[d]: per test day. */
static void boot_sums(const double *ours, const double *base, int nd, double *so, double *sb)
{
	uint32_t s = 12345;
	for (int it = 0; it < BOOT_DRAWS; it++) {
		so[it] = sb[it] = 0;
		for (int i = 0; i < nd; i++) {
			s = s * 1664525u + 1013904223u;
			int j = (int)((double)(s >> 8) / (double)(1u << 24) * nd);
			so[it] += ours[j], sb[it] += base[j];
		}
	}
}

/* The share of the bootstrap's draws in which ours' summed loss is at most
 * ratio x the baseline's. */
static double boot_p(const double *ours, const double *base, int nd, double ratio)
{
	static double so[BOOT_DRAWS], sb[BOOT_DRAWS];
	int wins = 0;
	boot_sums(ours, base, nd, so, sb);
	for (int it = 0; it < BOOT_DRAWS; it++)
		wins += so[it] <= ratio * sb[it];
	return wins / (double)BOOT_DRAWS;
}

/* The bootstrap's distribution of the ratio of summed losses: its 5 %,
 * 50 % and 95 % points in q[3]. */
static void boot_q(const double *ours, const double *base, int nd, double q[3])
{
	static double so[BOOT_DRAWS], sb[BOOT_DRAWS];
	boot_sums(ours, base, nd, so, sb);
	for (int it = 0; it < BOOT_DRAWS; it++)
		so[it] = sb[it] > 0 ? so[it] / sb[it] : 1;
	q[0] = quantile(so, BOOT_DRAWS, 0.05);
	q[1] = quantile(so, BOOT_DRAWS, 0.5);
	q[2] = quantile(so, BOOT_DRAWS, 0.95);
}

/* The module's day-ahead fit (method auto) of a Venus series of per_day
 * slots a day (24: hours, 1: days) at the midnight before slot o; 0, or -1
 * with the error printed. */
static int venus_fit(const double *y, int o, int per_day, struct gl_forecast_result *r)
{
	struct gl_forecast_opts opt = {0};
	struct gl_err err = {0};
	opt.slots_per_day = per_day;
	opt.slots_per_week = 7 * per_day;
	opt.horizon = per_day;
	opt.method = GL_FORECAST_AUTO;
	opt.first_weekday = 2; /* 2020-04-01 was a Wednesday */
	if (gl_forecast_fit(y, (size_t)o, &opt, r, &err)) {
		fprintf(stderr, "bench_forecast: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static void venus_hindsight(const double *y, int test0, int tend, double scale, double dscale);
static void venus_spread(const double *y, int test0, int tend, const double *h_ae, const double *h_bae,
			 const double *d_ae, const double *d_bae, double dcover);
static void venus_combos(const double *y, const double *fh, const double *yd, const double *fd, int test0, int tend,
			 double scale, double dscale);
static void venus_daily_conformal(const double *yd, int d0, int nd, double dscale);
static void venus_clairvoyant(const double *y, const double *lucid, int test0, int tend, double scale,
			      double dscale);

/* month: "sep" (the test month) or a validation month, "jun", "jul" or
 * "aug" (trained on the months before it; no Lucid forecast or hindsight
 * bounds there). */
static void venus(const char *dir, const char *month)
{
	static double y[MAXH], yp[MAXH], lucid[MAXH];
	char path[512], a[128], b[128], c[64], lab[128];
	static const char *const mname[] = {"apr", "may", "jun", "jul", "aug", "sep"};
	static const int mdays[] = {30, 31, 30, 31, 31, 30};
	int mi = 5, val, n, np, nl, test0 = 0;
	for (int i = 2; i < 5; i++)
		if (!strcmp(month, mname[i]))
			mi = i;
	val = mi < 5;
	for (int i = 0; i < mi; i++)
		test0 += mdays[i] * 24;
	snprintf(path, sizeof path, "%s/helios-venus-throughput/cluster_throughput.csv", dir);
	n = read_hourly(path, "submit_gpu_num", y, MAXH);
	snprintf(path, sizeof path, "%s/helios-venus-throughput/Venus_throughput_pred.csv", dir);
	np = read_hourly(path, "submit_gpu_num", yp, MAXH);
	nl = read_hourly(path, "pred_gpu_num", lucid, MAXH);
	if (n < 0 || np < 0 || nl < 0) {
		fprintf(stderr, "bench_forecast: no Venus data under %s (skipped)\n", dir);
		return;
	}
	/* the test period: the Sept rows of the prediction file (they agree
	 * with the throughput file; checked, not assumed) */
	int tend = val ? test0 + mdays[mi] * 24 : np;
	for (int t = test0; t < tend && !val; t++)
		if (fabs(y[t] - yp[t]) > 1e-9) {
			fprintf(stderr, "bench_forecast: Venus files disagree at hour %d\n", t);
			return;
		}
	double scale = 0;
	for (int t = 24; t < test0; t++)
		scale += fabs(y[t] - y[t - 24]);
	scale /= test0 - 24;

	/* hourly, day-ahead */
	struct acc ours = {0}, base = {0}, luc = {0}, ivb = {0};
	static double fh[MAXH], fd[MAXH / 24];
	double t_fit = 0, d_ae[64] = {0}, d_bae[64] = {0}, d_pin[64] = {0}, d_bpin[64] = {0};
	int nday = 0;
	for (int o = test0; o < tend; o += 24, nday++) {
		struct gl_forecast_result r;
		double t1 = now_s();
		if (venus_fit(y, o, 24, &r))
			return;
		t_fit += now_s() - t1;
		if (getenv("GL_BENCH_DEBUG"))
			fprintf(stderr, "hourly %d %s (baseline %s)\n", nday, gl_forecast_method_name(r.method),
				gl_forecast_method_name(r.baseline));
		for (int h = 0; h < 24 && o + h < tend; h++) {
			double v7[7], v28[28];
			for (int j = 0; j < 7; j++)
				v7[j] = y[o + h - 24 * (j + 1)];
			for (int j = 0; j < 28; j++)
				v28[j] = y[o + h - 24 * (j + 1)];
			double med = quantile(v7, 7, 0.5);
			double lo = quantile(v28, 28, 0.1), hi = quantile(v28, 28, 0.9);
			double p0 = ours.pin, b0 = ivb.pin;
			acc_add(&ours, y[o + h], r.point[h], r.lo80[h], r.hi80[h]);
			fh[o + h] = r.point[h];
			acc_add(&base, y[o + h], med, med, med);
			acc_add(&luc, y[o + h], lucid[o + h], lucid[o + h], lucid[o + h]);
			acc_add(&ivb, y[o + h], med, lo, hi);
			d_ae[nday] += fabs(y[o + h] - r.point[h]);
			d_bae[nday] += fabs(y[o + h] - med);
			d_pin[nday] += ours.pin - p0;
			d_bpin[nday] += ivb.pin - b0;
		}
		gl_forecast_result_fini(&r);
	}
	snprintf(a, sizeof a, "MASE %.3f (MAE %.1f)", ours.sae / ours.n / scale, ours.sae / ours.n);
	snprintf(b, sizeof b, "median same hour 7 d: %.3f (MAE %.1f); Lucid %.3f; target < 1.15",
		 base.sae / base.n / scale, base.sae / base.n, val ? NAN : luc.sae / luc.n / scale);
	snprintf(c, sizeof c, "%.3f of baseline; P(< 1) %.3f, P(<= 0.96) %.3f", ours.sae / base.sae,
		 boot_p(d_ae, d_bae, nday, 1 - 1e-12), boot_p(d_ae, d_bae, nday, 0.96));
	snprintf(lab, sizeof lab, "Venus hourly day-ahead submit GPUs, %s 2020 (%d h)", val ? mname[mi] : "Sept",
		 tend - test0);
	row(lab, a, b, c);
	if (!val) {
		snprintf(a, sizeof a, "RMSE %.0f", sqrt(ours.sse / ours.n));
		snprintf(b, sizeof b, "Lucid %.0f; median 7 d %.0f; target <= Lucid", sqrt(luc.sse / luc.n),
			 sqrt(base.sse / base.n));
		snprintf(c, sizeof c, "%.3f of Lucid", sqrt(ours.sse / ours.n) / sqrt(luc.sse / luc.n));
		row("Venus hourly day-ahead RMSE", a, b, c);
	}
	snprintf(a, sizeof a, "coverage %.1f %%, scaled pinball %.3f", 100 * ours.cover / ours.n,
		 ours.pin / ours.n / scale);
	snprintf(b, sizeof b, "same-hour percentiles 28 d: %.1f %%, %.3f; target 78-82 %%, < 0.40",
		 100 * ivb.cover / ivb.n, ivb.pin / ivb.n / scale);
	snprintf(c, sizeof c, "pinball %.3f of baseline; P(< 1) %.3f", ours.pin / ivb.pin, boot_p(d_pin, d_bpin, nday, 1 - 1e-12));
	row("Venus hourly 80 % interval", a, b, c);
	snprintf(a, sizeof a, "%.1f ms per fit (%d fits)", 1000 * t_fit / ((tend - test0) / 24), (tend - test0) / 24);
	row("Venus hourly fit with model selection, 3,672-4,320 h history", a, "-", "-");

	/* daily, day-ahead */
	int nd = tend / 24, d0 = test0 / 24;
	double *yd = calloc((size_t)nd, sizeof(double)), *ld = calloc((size_t)nd, sizeof(double));
	for (int t = 0; t < tend; t++) {
		yd[t / 24] += y[t];
		ld[t / 24] += lucid[t];
	}
	double dscale = 0;
	for (int d = 1; d < d0; d++)
		dscale += fabs(yd[d] - yd[d - 1]);
	dscale /= d0 - 1;
	struct acc dours = {0}, dbase = {0}, dluc = {0};
	double dd_ae[64] = {0}, dd_bae[64] = {0};
	for (int d = d0; d < nd; d++) {
		struct gl_forecast_result r;
		double v4[4];
		if (venus_fit(yd, d, 1, &r))
			break;
		if (getenv("GL_BENCH_DEBUG"))
			fprintf(stderr, "daily %d %s (baseline %s; backtest MAE median_day %.0f, median_week %.0f, chosen %.0f)\n",
				d - d0, gl_forecast_method_name(r.method), gl_forecast_method_name(r.baseline),
				r.cv_method[GL_FORECAST_MEDIAN_DAY].mae, r.cv_method[GL_FORECAST_MEDIAN_WEEK].mae, r.cv.mae);
		for (int j = 0; j < 4; j++)
			v4[j] = yd[d - 7 * (j + 1)];
		double med = quantile(v4, 4, 0.5);
		acc_add(&dours, yd[d], r.point[0], r.lo80[0], r.hi80[0]);
		fd[d] = r.point[0];
		acc_add(&dbase, yd[d], med, med, med);
		dd_ae[d - d0] = fabs(yd[d] - r.point[0]);
		dd_bae[d - d0] = fabs(yd[d] - med);
		acc_add(&dluc, yd[d], ld[d], ld[d], ld[d]);
		gl_forecast_result_fini(&r);
	}
	snprintf(a, sizeof a, "MASE %.3f; 80 %% coverage %.1f %%, scaled pinball %.3f", dours.sae / dours.n / dscale,
		 100 * dours.cover / dours.n, dours.pin / dours.n / dscale);
	snprintf(b, sizeof b, "median same weekday 4 wk: %.3f; Lucid (same-day) %.3f; targets: no worse than the weekday"
			      " median, coverage 75-85 %%",
		 dbase.sae / dbase.n / dscale, val ? NAN : dluc.sae / dluc.n / dscale);
	snprintf(c, sizeof c, "%.3f of baseline; P(<= 1) %.3f", dours.sae / dbase.sae, boot_p(dd_ae, dd_bae, nd - d0, 1));
	snprintf(lab, sizeof lab, "Venus daily day-ahead submit GPUs, %s 2020 (%d d)", val ? mname[mi] : "Sept",
		 nd - d0);
	row(lab, a, b, c);
	venus_combos(y, fh, yd, fd, test0, tend, scale, dscale);
	venus_daily_conformal(yd, d0, nd, dscale);
	venus_spread(y, test0, tend, d_ae, d_bae, dd_ae, dd_bae, dours.cover / dours.n);
	free(yd);
	free(ld);
	if (val)
		return;
	venus_hindsight(y, test0, tend, scale, dscale);
	venus_clairvoyant(y, lucid, test0, tend, scale, dscale);
}

static double mid3(double a, double b, double c)
{
	return a > b ? (b > c ? b : a > c ? c : a) : (a > c ? a : b > c ? c : b);
}

/* P(X <= k) for X ~ Binomial(n, p). */
static double binom_cdf(int k, int n, double p)
{
	double s = 0;
	for (int i = 0; i <= k && i <= n; i++)
		s += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) + i * log(p) + (n - i) * log1p(-p));
	return s;
}

/* How much one month can say, for the targets still short: the bootstrap
 * spread of the hourly and daily MAE ratios, the same P for forecasts
 * that knew September (the best pooled median chosen on it, 56 days +-1 h
 * weekdays and weekends apart, and the clairvoyant one's per-hour median),
 * and the binomial spread of a month's 80 % coverage for a band that is
 * exactly calibrated. h_ae / h_bae: per-day absolute errors of ours and of
 * the 7-day median (hourly); d_ae / d_bae: of ours and the 4-week weekday
 * median (daily); dcover: ours' daily coverage. */
static void venus_spread(const double *y, int test0, int tend, const double *h_ae, const double *h_bae,
			 const double *d_ae, const double *d_bae, double dcover)
{
	static double pool[56 * 3];
	double q[3], hs[64] = {0}, cv[64] = {0};
	char a[200], c[120];
	int nday = (tend - test0) / 24;
	boot_q(h_ae, h_bae, nday, q);
	snprintf(a, sizeof a, "hourly MAE ratio to the 7-day median: bootstrap 5 / 50 / 95 %% %.3f / %.3f / %.3f", q[0],
		 q[1], q[2]);
	row("Venus spread", a, "target <= 0.96 with P >= 0.95", "-");
	for (int o = test0, i = 0; o < tend; o += 24, i++) {
		int wk = (2 + o / 24) % 7 >= 5; /* 2020-04-01 was a Wednesday */
		for (int h = 0; h < 24 && o + h < tend; h++) {
			int n = 0, m = 0;
			for (int k = 1; k <= 56; k++) {
				int dd = o - 24 * k;
				if (((2 + dd / 24) % 7 >= 5) != wk)
					continue;
				for (int off = -1; off <= 1; off++)
					if (dd + h + off >= 0 && dd + h + off < o)
						pool[n++] = y[dd + h + off];
			}
			hs[i] += fabs(y[o + h] - quantile(pool, n, 0.5));
			for (int dd = test0; dd < tend; dd += 24)
				if (((2 + dd / 24) % 7 >= 5) == wk)
					pool[m++] = y[dd + h];
			cv[i] += fabs(y[o + h] - quantile(pool, m, 0.5));
		}
	}
	double s0 = 0, s1 = 0, sb = 0;
	for (int i = 0; i < nday; i++)
		s0 += hs[i], s1 += cv[i], sb += h_bae[i];
	snprintf(a, sizeof a, "the pooled median best on September (56 d, +-1 h, wkday/wkend): ratio %.4f", s0 / sb);
	snprintf(c, sizeof c, "P(<= 0.96) %.3f", boot_p(hs, h_bae, nday, 0.96));
	row("Venus spread", a, "7-day median", c);
	snprintf(a, sizeof a, "clairvoyant (the month's own same-hour median): ratio %.4f", s1 / sb);
	snprintf(c, sizeof c, "P(<= 0.96) %.3f", boot_p(cv, h_bae, nday, 0.96));
	row("Venus spread", a, "7-day median", c);
	boot_q(d_ae, d_bae, nday, q);
	snprintf(a, sizeof a, "daily MAE ratio to the 4-week weekday median: bootstrap 5 / 50 / 95 %% %.3f / %.3f / %.3f",
		 q[0], q[1], q[2]);
	row("Venus spread", a, "target <= 1", "-");
	int lo = (int)ceil(0.75 * nday - 1e-9), hi = (int)floor(0.85 * nday + 1e-9);
	snprintf(a, sizeof a,
		 "an exactly calibrated 80 %% band over %d days: P(coverage in 75-85 %%) %.3f, P(<= %.1f %%, ours) %.3f",
		 nday, binom_cdf(hi, nday, 0.8) - binom_cdf(lo - 1, nday, 0.8), 100 * dcover,
		 binom_cdf((int)lround(dcover * nday), nday, 0.8));
	row("Venus spread", a, "Binomial(n, 0.8)", "-");
}

/* Conformal scaling of the module's daily 80 % bands, judged on the
 * validation months first: the score of a past day j is how far its actual
 * lay past its band, in band widths (negative inside); a test day's band is
 * widened (or narrowed) by the split-conformal 80 % quantile of the scores
 * of a group of the 91 days before it: all of them, the same weekday (13),
 * the same day type (weekdays or weekends), or the same level (the days
 * whose point is on the same side of those 91 points' median). Every past
 * band comes from a fit at its own midnight, as the test days' do. */
#define CONF_DAYS 91
static void venus_daily_conformal(const double *yd, int d0, int nd, double dscale)
{
	static const char *const gname[] = {"as fitted", "all 91 days", "same weekday", "same day type",
					    "same level"};
	int j0 = d0 - CONF_DAYS > 28 ? d0 - CONF_DAYS : 28;
	double *pt = calloc((size_t)nd * 3, sizeof(double)), *lo = pt + nd, *hi = lo + nd;
	struct acc g[5] = {{0}};
	char lab[64];
	for (int j = j0; j < nd; j++) {
		struct gl_forecast_result r;
		if (venus_fit(yd, j, 1, &r)) {
			free(pt);
			return;
		}
		pt[j] = r.point[0], lo[j] = r.lo80[0], hi[j] = r.hi80[0];
		gl_forecast_result_fini(&r);
	}
	for (int d = d0; d < nd; d++) {
		double sc[4][CONF_DAYS], lv[CONF_DAYS];
		int n[4] = {0}, nl = 0, wd = (d + 2) % 7, we = wd >= 5;
		for (int j = d - CONF_DAYS > j0 ? d - CONF_DAYS : j0; j < d; j++)
			lv[nl++] = pt[j];
		double lmed = quantile(lv, nl, 0.5);
		for (int j = d - CONF_DAYS > j0 ? d - CONF_DAYS : j0; j < d; j++) {
			double w = hi[j] - lo[j] > 1 ? hi[j] - lo[j] : 1;
			double s = fmax(lo[j] - yd[j], yd[j] - hi[j]) / w;
			sc[0][n[0]++] = s;
			if ((j + 2) % 7 == wd)
				sc[1][n[1]++] = s;
			if (((j + 2) % 7 >= 5) == we)
				sc[2][n[2]++] = s;
			if ((pt[j] > lmed) == (pt[d] > lmed))
				sc[3][n[3]++] = s;
		}
		acc_add(&g[0], yd[d], pt[d], lo[d], hi[d]);
		for (int k = 0; k < 4; k++) {
			int rank = (int)ceil((n[k] + 1) * 0.8);
			qsort(sc[k], (size_t)n[k], sizeof(double), cmp_d);
			double q = n[k] ? sc[k][(rank < n[k] ? rank : n[k]) - 1] : 0, w = hi[d] - lo[d];
			double l = fmin(fmax(0, lo[d] - q * w), pt[d]), h = fmax(hi[d] + q * w, pt[d]);
			acc_add(&g[k + 1], yd[d], pt[d], l, h);
		}
	}
	/* the combination chosen on the validation months (the median of the
	 * module's point, the 4-week weekday median and the same weekday last
	 * week), used on a day only when it beat the module's own forecasts
	 * over the 91 days before it: the rule applied to it */
	double gae = 0, bae = 0, mae = 0;
	int used = 0;
	for (int d = d0; d < nd; d++) {
		double e_c = 0, e_m = 0, v4[4], m4 = 0;
		for (int j = d - CONF_DAYS > j0 ? d - CONF_DAYS : j0; j <= d; j++) {
			for (int i = 0; i < 4; i++)
				v4[i] = yd[j - 7 * (i + 1)];
			m4 = quantile(v4, 4, 0.5);
			if (j < d)
				e_c += fabs(yd[j] - mid3(pt[j], m4, yd[j - 7])), e_m += fabs(yd[j] - pt[j]);
		}
		double f = e_c < e_m ? mid3(pt[d], m4, yd[d - 7]) : pt[d];
		used += e_c < e_m;
		gae += fabs(yd[d] - f), mae += fabs(yd[d] - pt[d]), bae += fabs(yd[d] - m4);
	}
	char a2[160];
	snprintf(a2, sizeof a2, "daily median(model, med4w, snaive_week) where it beat the model over 91 days (%d of %d days):"
				" MASE %.3f (model %.3f)", used, nd - d0, gae / (nd - d0) / dscale, mae / (nd - d0) / dscale);
	snprintf(lab, sizeof lab, "%.4f of med4w", gae / bae);
	row("Venus combination", a2, "same weekday, 4-week median", lab);
	for (int k = 0; k < 5; k++) {
		char a[128];
		snprintf(a, sizeof a, "daily 80 %% band, %s: coverage %.1f %%, scaled pinball %.3f", gname[k],
			 100 * g[k].cover / g[k].n, g[k].pin / g[k].n / dscale);
		row("Venus conformal scaling", a, "target 75-85 %", "-");
	}
	free(pt);
}


/* Forecast combinations, fixed beforehand (no weights fitted): the chosen
 * model's point with the simple forecasts beside it, as mean or median.
 * Hourly: the same-hour 7-day median (the baseline) and the same hour
 * yesterday; daily: the same weekday's 4-week median (the baseline), the
 * same weekday last week and the 7-day median. Each beside its baseline,
 * with the day-block bootstrap P. Judged on the validation months first;
 * fh / fd: the module's day-ahead points, by hour / day. */
static void venus_combos(const double *y, const double *fh, const double *yd, const double *fd, int test0, int tend,
			 double scale, double dscale)
{
	static const char *const hn[] = {"model", "mean(model, med7, snaive)", "median(model, med7, snaive)",
					 "mean(model, med7)"};
	static const char *const dn[] = {"model", "mean(model, med4w, snaive_week)", "median(model, med4w, snaive_week)",
					 "mean(model, med4w)", "mean(model, med7, med4w)", "median(model, med7, med4w)"};
	double hae[4][64] = {{0}}, hbae[64] = {0}, dae[6][64] = {{0}}, dbae[64] = {0};
	char a[160], c[96];
	int nday = 0;
	for (int o = test0; o < tend; o += 24, nday++)
		for (int h = 0; h < 24 && o + h < tend; h++) {
			int t = o + h;
			double v7[7], f[4];
			for (int j = 0; j < 7; j++)
				v7[j] = y[t - 24 * (j + 1)];
			double med = quantile(v7, 7, 0.5), sn = y[t - 24];
			f[0] = fh[t];
			f[1] = (fh[t] + med + sn) / 3;
			f[2] = mid3(fh[t], med, sn);
			f[3] = (fh[t] + med) / 2;
			for (int k = 0; k < 4; k++)
				hae[k][nday] += fabs(y[t] - f[k]);
			hbae[nday] += fabs(y[t] - med);
		}
	double sb = 0;
	for (int i = 0; i < nday; i++)
		sb += hbae[i];
	for (int k = 0; k < 4; k++) {
		double so = 0;
		for (int i = 0; i < nday; i++)
			so += hae[k][i];
		snprintf(a, sizeof a, "hourly %s: MASE %.3f", hn[k], so / (24.0 * nday) / scale);
		snprintf(c, sizeof c, "%.4f of med7; P(< 1) %.3f, P(<= 0.96) %.3f", so / sb, boot_p(hae[k], hbae, nday, 1 - 1e-12),
			 boot_p(hae[k], hbae, nday, 0.96));
		row("Venus combination", a, "same hour, 7-day median", c);
	}
	int d0 = test0 / 24, nd = tend / 24;
	for (int d = d0; d < nd; d++) {
		double v4[4], v7[7], f[6];
		for (int j = 0; j < 4; j++)
			v4[j] = yd[d - 7 * (j + 1)];
		for (int j = 0; j < 7; j++)
			v7[j] = yd[d - j - 1];
		double m4 = quantile(v4, 4, 0.5), m7 = quantile(v7, 7, 0.5), sn = yd[d - 7];
		f[0] = fd[d];
		f[1] = (fd[d] + m4 + sn) / 3;
		f[2] = mid3(fd[d], m4, sn);
		f[3] = (fd[d] + m4) / 2;
		f[4] = (fd[d] + m7 + m4) / 3;
		f[5] = mid3(fd[d], m7, m4);
		for (int k = 0; k < 6; k++)
			dae[k][d - d0] = fabs(yd[d] - f[k]);
		dbae[d - d0] = fabs(yd[d] - m4);
	}
	sb = 0;
	for (int i = 0; i < nd - d0; i++)
		sb += dbae[i];
	for (int k = 0; k < 6; k++) {
		double so = 0;
		for (int i = 0; i < nd - d0; i++)
			so += dae[k][i];
		snprintf(a, sizeof a, "daily %s: MASE %.3f", dn[k], so / (nd - d0) / dscale);
		snprintf(c, sizeof c, "%.4f of med4w; P(<= 1) %.3f", so / sb, boot_p(dae[k], dbae, nd - d0, 1));
		row("Venus combination", a, "same weekday, 4-week median", c);
	}
}

/* How far the Venus targets are from the median family the forecaster is
 * built on: every pooled same-slot configuration (days back, +-hours, weekdays
 * and weekends apart or not) and the same-weekday median over k weeks, each
 * scored on September and the best kept per figure. Choosing on the test
 * period makes these bounds, not forecasts: if they miss a target, no
 * selection among such methods can meet it. */
static void venus_hindsight(const double *y, int test0, int tend, double scale, double dscale)
{
	static double pool[56 * 7];
	double best_mase = 1e9, best_rmse = 1e9, best_pin = 1e9;
	char cfg_mase[48] = "", cfg_rmse[48] = "", cfg_pin[48] = "", a[160], b[96];
	static const int days_set[] = {14, 28, 42, 56};
	for (int di = 0; di < 4; di++)
		for (int nb = 0; nb <= 3; nb++)
			for (int split = 0; split <= 1; split++) {
				struct acc s = {0};
				int days = days_set[di];
				for (int o = test0; o < tend; o += 24) {
					int wk = (2 + o / 24) % 7 >= 5; /* 2020-04-01 was a Wednesday */
					for (int h = 0; h < 24 && o + h < tend; h++) {
						int n = 0;
						for (int k = 1; k <= days; k++) {
							int dd = o - 24 * k;
							if (split && ((2 + dd / 24) % 7 >= 5) != wk)
								continue;
							for (int off = -nb; off <= nb; off++)
								if (dd + h + off >= 0 && dd + h + off < o)
									pool[n++] = y[dd + h + off];
						}
						acc_add(&s, y[o + h], quantile(pool, n, 0.5), quantile(pool, n, 0.1),
							quantile(pool, n, 0.9));
					}
				}
				char cfg[48];
				snprintf(cfg, sizeof cfg, "%d d, +-%d h%s", days, nb, split ? ", wkday/wkend" : "");
				if (s.sae / s.n / scale < best_mase)
					best_mase = s.sae / s.n / scale, snprintf(cfg_mase, sizeof cfg_mase, "%s", cfg);
				if (sqrt(s.sse / s.n) < best_rmse)
					best_rmse = sqrt(s.sse / s.n), snprintf(cfg_rmse, sizeof cfg_rmse, "%s", cfg);
				if (s.pin / s.n / scale < best_pin)
					best_pin = s.pin / s.n / scale, snprintf(cfg_pin, sizeof cfg_pin, "%s", cfg);
			}
	snprintf(a, sizeof a, "MASE %.3f (%s); RMSE %.0f (%s); pinball %.3f (%s)", best_mase, cfg_mase,
		 best_rmse, cfg_rmse, best_pin, cfg_pin);
	row("Venus hourly, best of 32 pooled medians chosen ON September (a bound, not a forecast)", a,
	    "targets < 1.15; <= 1,581; < 0.40", "-");

	int nd = tend / 24, d0 = test0 / 24, best_k = 0;
	double *yd = calloc((size_t)nd, sizeof(double)), best_d = 1e9;
	if (!yd)
		return;
	for (int t = 0; t < tend; t++)
		yd[t / 24] += y[t];
	for (int k = 2; k <= 9; k++) {
		double v[9], sae = 0;
		for (int d = d0; d < nd; d++) {
			for (int j = 0; j < k; j++)
				v[j] = yd[d - 7 * (j + 1)];
			sae += fabs(yd[d] - quantile(v, k, 0.5));
		}
		if (sae / (nd - d0) / dscale < best_d)
			best_d = sae / (nd - d0) / dscale, best_k = k;
	}
	snprintf(a, sizeof a, "MASE %.3f (median of the same weekday, %d weeks)", best_d, best_k);
	snprintf(b, sizeof b, "target < 1.40");
	row("Venus daily, best same-weekday median (2-9 weeks) chosen ON September (a bound)", a, b, "-");
	free(yd);
}

/* What the Venus targets demand, beyond any method: a clairvoyant forecaster
 * that is told September's own distribution of every hour of the day
 * (weekdays and weekends apart, +-0-2 h pooled; 14-20 days' values a slot)
 * and of the daily totals, and uses it as its forecast for every day of the
 * month. It knows the month's level and daily profile, which no forecast
 * made from April-August can, and lacks only which day bursts. Where it
 * misses a target, meeting it takes anticipating the bursts themselves.
 * Also: what Lucid's published forecast knew. Its RMSE is the hourly RMSE
 * target; if it rises in the hour after a burst, it saw the burst, so it is
 * not a day-ahead forecast. */
static void venus_clairvoyant(const double *y, const double *lucid, int test0, int tend, double scale,
			      double dscale)
{
	static double pool[31 * 5];
	double best_mase = 1e9, best_pin = 1e9, cov_at_pin = 0;
	int k_mase = 0, k_pin = 0;
	char a[200], b[128];
	for (int nb = 0; nb <= 2; nb++) {
		struct acc s = {0};
		for (int o = test0; o < tend; o += 24) {
			int wk = (2 + o / 24) % 7 >= 5; /* 2020-04-01 was a Wednesday */
			for (int h = 0; h < 24; h++) {
				int n = 0;
				for (int dd = test0; dd < tend; dd += 24) {
					if (((2 + dd / 24) % 7 >= 5) != wk)
						continue;
					for (int off = -nb; off <= nb; off++)
						pool[n++] = y[dd + (h + off + 24) % 24];
				}
				acc_add(&s, y[o + h], quantile(pool, n, 0.5), quantile(pool, n, 0.1),
					quantile(pool, n, 0.9));
			}
		}
		if (s.sae / s.n / scale < best_mase)
			best_mase = s.sae / s.n / scale, k_mase = nb;
		if (s.pin / s.n / scale < best_pin)
			best_pin = s.pin / s.n / scale, k_pin = nb, cov_at_pin = s.cover / s.n;
	}
	snprintf(a, sizeof a, "MASE %.3f (+-%d h); pinball %.3f, coverage %.1f %% (+-%d h)", best_mase, k_mase,
		 best_pin, 100 * cov_at_pin, k_pin);
	row("Venus hourly, clairvoyant: September's own quantiles per hour, weekdays/weekends apart (a bound)", a,
	    "targets MASE < 1.15; pinball < 0.40", "-");

	int nd = tend / 24, d0 = test0 / 24;
	double *yd = calloc((size_t)nd, sizeof(double)), v[2][31];
	int nv[2] = {0, 0};
	if (!yd)
		return;
	for (int t = 0; t < tend; t++)
		yd[t / 24] += y[t];
	for (int d = d0; d < nd; d++) {
		int wk = (2 + d) % 7 >= 5;
		v[wk][nv[wk]++] = yd[d];
	}
	double med[2] = {quantile(v[0], nv[0], 0.5), quantile(v[1], nv[1], 0.5)}, sae = 0;
	for (int d = d0; d < nd; d++)
		sae += fabs(yd[d] - med[(2 + d) % 7 >= 5]);
	snprintf(a, sizeof a, "MASE %.3f", sae / (nd - d0) / dscale);
	row("Venus daily, clairvoyant: September's own median weekday and weekend totals (a bound)", a,
	    "target < 1.40", "-");
	free(yd);

	/* the 10 largest hours of September, at least 3 hours apart */
	int top[10], nt = 0;
	double before = 0, at = 0, after = 0, mean = 0;
	while (nt < 10) {
		int best = -1;
		for (int t = test0 + 1; t < tend - 1; t++) {
			int near = 0;
			for (int i = 0; i < nt; i++)
				near |= abs(t - top[i]) <= 2;
			if (!near && (best < 0 || y[t] > y[best]))
				best = t;
		}
		if (best < 0)
			break;
		top[nt++] = best;
		before += lucid[best - 1], at += lucid[best], after += lucid[best + 1];
	}
	for (int t = test0; t < tend; t++)
		mean += lucid[t];
	snprintf(a, sizeof a, "%.0f GPUs the hour before the 10 largest hours, %.0f at them, %.0f the hour after (mean %.0f)",
		 before / nt, at / nt, after / nt, mean / (tend - test0));
	snprintf(b, sizeof b, "it follows the actuals within the day; a day-ahead forecast cannot");
	row("Venus: what Lucid's hourly forecast (the RMSE target) knew", a, b, "-");
}

/* Earth: the same computation as tests/unit/test_forecast_earth.c, printed. */
static void earth(void)
{
	FILE *f = fopen("tests/fixtures/forecast/earth_daily_by_vc.csv", "r");
	char line[512], names[32][16];
	static double run[32][31];
	static struct gl_forecast_satday sat[32][31];
	int nvc = 0;
	if (!f || !fgets(line, sizeof line, f)) {
		fprintf(stderr, "bench_forecast: no Earth fixture (run from the repo root)\n");
		return;
	}
	while (fgets(line, sizeof line, f)) {
		char date[16], name[16];
		double r, p, c, pm, pm3, pm1;
		int k;
		if (sscanf(line, "%10[^,],%15[^,],%lf,%lf,%lf,%lf,%lf,%lf", date, name, &r, &p, &c, &pm, &pm3, &pm1) != 8)
			continue;
		for (k = 0; k < nvc && strcmp(names[k], name); k++)
			;
		if (k == nvc && nvc < 32)
			snprintf(names[nvc++], 16, "%s", name);
		int d = atoi(date + 8) - 1;
		if (k < 32 && d >= 0 && d < 31) {
			run[k][d] = r;
			sat[k][d] = (struct gl_forecast_satday){pm, pm3, pm1};
		}
	}
	fclose(f);
	double e_auto = 0, e_sn = 0, e_med = 0, sy = 0, mases[32], in80 = 0, n80 = 0, ed_ae[16] = {0}, ed_sn[16] = {0};
	int nm = 0;
	for (int k = 0; k < nvc; k++) {
		double sc = 0, se = 0;
		for (int d = 1; d < 17; d++)
			sc += fabs(run[k][d] - run[k][d - 1]);
		sc /= 16;
		for (int o = 17; o < 31; o += 7) {
			struct gl_forecast_opts opt = {0};
			struct gl_forecast_result r;
			struct gl_err err = {0};
			double l7[7];
			opt.slots_per_day = 1;
			opt.slots_per_week = 7;
			opt.horizon = 7;
			opt.method = GL_FORECAST_AUTO;
			opt.first_weekday = 4;
			if (gl_forecast_fit(run[k], (size_t)o, &opt, &r, &err))
				return;
			for (int j = 0; j < 7; j++)
				l7[j] = run[k][o - 1 - j];
			double med = quantile(l7, 7, 0.5);
			for (int h = 0; h < 7 && o + h < 31; h++) {
				double v = run[k][o + h];
				sy += v;
				e_auto += fabs(v - r.point[h]);
				se += fabs(v - r.point[h]);
				in80 += v >= r.lo80[h] && v <= r.hi80[h];
				n80++;
				ed_ae[o - 17 + h] += fabs(v - r.point[h]);
				ed_sn[o - 17 + h] += fabs(v - run[k][o + h - 7]);
				e_sn += fabs(v - run[k][o + h - 7]);
				e_med += fabs(v - med);
			}
			gl_forecast_result_fini(&r);
		}
		if (sc > 0)
			mases[nm++] = se / 14 / sc;
	}
	qsort(mases, (size_t)nm, sizeof(double), cmp_d);
	char a[128], b[160], c[64];
	snprintf(a, sizeof a, "WAPE %.1f %% (median MASE %.2f); 80 %% coverage %.1f %%", 100 * e_auto / sy,
		 nm % 2 ? mases[nm / 2] : 0.5 * (mases[nm / 2 - 1] + mases[nm / 2]), 100 * in80 / n80);
	snprintf(b, sizeof b, "seasonal naive %.1f %% (issue: best simple 21.1 %%); median last 7 d %.1f %%; target < 19 %%",
		 100 * e_sn / sy, 100 * e_med / sy);
	snprintf(c, sizeof c, "%.3f of seasonal naive; P(< 1) %.3f (14 day blocks)", e_auto / e_sn, boot_p(ed_ae, ed_sn, 14, 1 - 1e-12));
	row("Earth daily GPU-hours per VC, week ahead, May 18-31", a, b, c);

	/* saturation days: the function /v1/capacity/forecast reports with */
	static struct gl_forecast_satday flat[32 * 31];
	size_t start[32] = {0};
	struct gl_forecast_satscore sc;
	struct gl_err err = {0};
	for (int k = 0; k < nvc; k++)
		memcpy(flat + (size_t)k * 31, sat[k], sizeof sat[k]);
	if (!gl_forecast_sat_backtest(flat, (size_t)nvc, 31, start, 17, &sc, &err)) {
		snprintf(a, sizeof a, "accuracy %.1f %%, F1 %.1f %%", 100 * sc.accuracy, 100 * sc.f1);
		snprintf(b, sizeof b, "persistence %.1f %%, F1 %.1f %% (issue: best simple 80.4 %%, F1 77.8 %%)",
			 100 * sc.persist_accuracy, 100 * sc.persist_f1);
		row("Earth saturation days (pending >= 60 min), day before, May 18-31", a, b, "-");
	}
}

/* The queue-saturation work of one cold /v1/capacity/forecast request:
 * the fit for tomorrow and the backtest fit, over 50 cluster/model queues
 * of 91 days (a third of them calm on any day, the rest waiting 0-10 h). */
static void sat_speed(void)
{
	enum { NQ = 50, ND = 91 };
	static struct gl_forecast_satday d[NQ * ND];
	size_t start[NQ] = {0};
	double p[NQ];
	struct gl_forecast_satscore sc;
	struct gl_err err = {0};
	uint32_t seed = 7;
	int fitted;
	char a[96];
	struct timespec t0, t1;
	for (size_t i = 0; i < NQ * ND; i++) {
		seed = seed * 1664525u + 1013904223u;
		double m = seed % 3 == 0 ? 0 : (double)((seed >> 8) % 600);
		d[i] = (struct gl_forecast_satday){m, m / 4, m / 12};
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (gl_forecast_sat_next(d, NQ, ND, start, p, &fitted, &err) ||
	    gl_forecast_sat_backtest(d, NQ, ND, start, ND - ND / 3, &sc, &err))
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	snprintf(a, sizeof a, "%.2f s", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	row("queue-saturation model of a cold /v1/capacity/forecast, 50 queues x 91 days (two fits)", a,
	    "a cold request; answers are cached and refreshed by the daemon", "-");
}

static double lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return (double)(*s >> 8) / (double)(1u << 24);
}

static void speed(void)
{
	const int nseries = 1000, n = 2 * 365 * 24;
	double *y = malloc(sizeof(double) * (size_t)n);
	uint32_t seed = 1;
	double t = 0, worst = 0, cpu = 0;
	int chosen[GL_FORECAST_METHOD_COUNT] = {0};
	for (int s = 0; s < nseries; s++) {
		/* a team's demand: a level, a daily and weekly shape, bursts, idle spells */
		double level = 1 + 200 * lcg(&seed), amp = lcg(&seed), burst = lcg(&seed) * 0.1;
		for (int i = 0; i < n; i++) {
			double v = level * (1 + amp * sin(6.2831853 * (i % 24) / 24)) * ((i / 24) % 7 >= 5 ? 0.4 : 1);
			v *= 0.5 + lcg(&seed);
			if (lcg(&seed) < burst)
				v *= 10;
			if (lcg(&seed) < 0.2 * amp)
				v = 0;
			y[i] = v;
		}
		struct gl_forecast_opts o = {0};
		struct gl_forecast_result r;
		struct gl_err err = {0};
		o.slots_per_day = 24;
		o.slots_per_week = 168;
		o.horizon = 24;
		o.method = GL_FORECAST_AUTO;
		o.first_weekday = 0;
		double t1 = now_s(), c1 = cpu_s();
		if (gl_forecast_fit(y, (size_t)n, &o, &r, &err)) {
			fprintf(stderr, "bench_forecast: %s\n", err.msg);
			break;
		}
		double dt = now_s() - t1;
		cpu += cpu_s() - c1;
		t += dt;
		if (dt > worst)
			worst = dt;
		chosen[r.method]++;
		gl_forecast_result_fini(&r);
	}
	char a[128], c[64];
	double load = -1;
	FILE *la = fopen("/proc/loadavg", "r");
	if (la) {
		if (fscanf(la, "%lf", &load) != 1)
			load = -1;
		fclose(la);
	}
	/* the machine is shared: CPU time is the figure, wall time depends on
	 * what else runs (the load average says how much) */
	snprintf(a, sizeof a, "%.2f s CPU, %.2f s wall at load %.1f (worst series %.1f ms)", cpu, t, load,
		 1000 * worst);
	snprintf(c, sizeof c, "%.2f (CPU)", cpu / 10);
	row("forecast 1,000 series x 2 years hourly, model selection, day-ahead (1 core, shared machine)", a,
	    "10 s (target)", c);
	fprintf(stderr, "  chosen:");
	for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++)
		fprintf(stderr, " %s %d", gl_forecast_method_name(m), chosen[m]);
	fprintf(stderr, "\n");
	free(y);
}

/* ---- growth: semi-synthetic capacity series ----
 *
 * Real demand, known growth. The bases are real daily demand: Venus' GPUs
 * submitted per day (Apr-Sep 2020), Earth's daily peak of running + pending
 * GPUs per VC (May 2020, each VC over its own median) and Philly's daily
 * peak of active servers (Oct-Dec 2017). A series is 130 weeks of real
 * weeks (7 consecutive real days, drawn with a fixed seed) times a growth
 * curve: none, linear (+60 % a year), exponential (x1.6 a year) or a step
 * (+40 % from week 60: a team moving in). Its weekly peak (the week's
 * largest day) is forecast 26 weeks ahead from the first 104, as
 * /v1/capacity/forecast?step=week does, and set against a capacity: where
 * the true median weekly peak (the base's, times the curve) crosses it in
 * 13-25 weeks for the growing curves, 25 % above the final level for the
 * others (no true crossing). Measured per lead bucket beside the series'
 * own best baseline (its fixed median or naive, as the module names it),
 * with a bootstrap over the series for P(ours beats it). */
#define G_WEEKS 130
#define G_HIST 104
#define G_H 26
#define G_SEEDS 12

struct gbase {
	const char *name;
	double *v;      /* daily demand */
	int n;          /* days */
	int nvc, per;   /* Earth: nvc VCs of per days each (a week never crosses two) */
};

static double g_curve(int kind, double w)
{
	switch (kind) {
	case 1: return 1 + 0.6 * w / 52;
	case 2: return exp(log(1.6) * w / 52);
	case 3: return w >= 60 ? 1.4 : 1;
	default: return 1;
	}
}
static const char *const g_curve_name[] = {"none", "linear", "exponential", "step"};

/* weekly peaks of a base drawn week by week: out[G_WEEKS] */
static void g_draw(const struct gbase *b, uint32_t *seed, double *out)
{
	for (int w = 0; w < G_WEEKS; w++) {
		int start;
		if (b->nvc) {
			int vc = (int)(lcg(seed) * b->nvc), d = (int)(lcg(seed) * (b->per - 6));
			start = vc * b->per + d;
		} else {
			start = (int)(lcg(seed) * (b->n - 6));
		}
		double m = 0;
		for (int d = 0; d < 7; d++)
			m = b->v[start + d] > m ? b->v[start + d] : m;
		out[w] = m;
	}
}

/* the median weekly peak of the base (many draws): the truth's level */
static double g_level(const struct gbase *b)
{
	static double v[20000];
	uint32_t s = 99;
	for (int i = 0; i < 20000; i += G_WEEKS)
		g_draw(b, &s, v + i);
	return quantile(v, 20000 - 20000 % G_WEEKS, 0.5);
}

static int read_daily_peaks_earth(const char *dir, struct gbase *b)
{
	static const char *const vcs[] = {"vc3sl", "vc6YE", "vc8Sj", "vcJLV", "vcJkd", "vcLJZ", "vcMod", "vcSoL",
					  "vcTJs", "vccaA", "vcdI0", "vcgkz", "vchbv", "vcira", "vcpDC", "vcvlY"};
	b->nvc = 16;
	b->per = 31;
	b->n = 16 * 31;
	b->v = calloc((size_t)b->n, sizeof(double));
	for (int k = 0; k < 16; k++) {
		char path[512], line[1024];
		double med[31];
		snprintf(path, sizeof path, "%s/helios-earth-vc-minutely/%s_cluster_sequence_vc.csv.gz", dir, vcs[k]);
		gzFile f = gzopen(path, "r");
		if (!f || !gzgets(f, line, sizeof line))
			return -1;
		while (gzgets(f, line, sizeof line)) {
			int day = atoi(line + 8) - 1;
			char *t = line;
			double run = 0, pend = 0;
			for (int c = 0; c < 10 && t; c++, t = strchr(t, ',') ? strchr(t, ',') + 1 : NULL)
				if (c == 8)
					run = atof(t);
				else if (c == 9)
					pend = atof(t);
			if (day >= 0 && day < 31 && run + pend > b->v[k * 31 + day])
				b->v[k * 31 + day] = run + pend;
		}
		gzclose(f);
		memcpy(med, b->v + k * 31, sizeof med);
		double m = quantile(med, 31, 0.5);
		for (int d = 0; d < 31; d++)
			b->v[k * 31 + d] = m > 0 ? 100 * b->v[k * 31 + d] / m : 0;
	}
	return 0;
}

static int read_daily_peaks_philly(const char *dir, struct gbase *b)
{
	char path[512], line[256];
	int64_t t0;
	FILE *f;
	snprintf(path, sizeof path, "%s/philly-cluster-series/philly_node_sequence.csv", dir);
	if (!(f = fopen(path, "r")) || !fgets(line, sizeof line, f) || gl_timeutil_parse("2017-10-03", 10, &t0))
		return -1;
	b->v = calloc(80, sizeof(double));
	while (fgets(line, sizeof line, f)) {
		int64_t t;
		if (gl_timeutil_parse(line, 19, &t))
			continue;
		int d = (int)((t - t0) / 86400);
		double a = atof(strchr(line, ',') + 1);
		if (d >= 0 && d < 80) {
			if (a > b->v[d])
				b->v[d] = a;
			if (d + 1 > b->n)
				b->n = d + 1;
		}
	}
	fclose(f);
	b->n--; /* the last day is partial (ends 18:42) */
	return 0;
}

struct gacc {
	double sae[G_H], sy[G_H];           /* per lead */
	double in80[GL_FORECAST_BUCKETS], n80[GL_FORECAST_BUCKETS];
	double pin[GL_FORECAST_BUCKETS];
};

static void g_score(struct gacc *a, const double *y, const struct gl_forecast_result *r)
{
	for (int h = 0; h < G_H && h < r->horizon; h++) {
		int b = gl_forecast_lead_bucket(1, 1, h + 1);
		double v = y[G_HIST + h];
		a->sae[h] += fabs(v - r->point[h]);
		a->sy[h] += v;
		if (!isnan(r->lo80[h])) {
			a->in80[b] += v >= r->lo80[h] && v <= r->hi80[h];
			a->n80[b]++;
		}
	}
}

/* The WAPE over leads [a, b] (1-based) */
static double g_wape(const struct gacc *x, int a, int b)
{
	double e = 0, s = 0;
	for (int h = a - 1; h < b; h++)
		e += x->sae[h], s += x->sy[h];
	return s > 0 ? e / s : NAN;
}

static void growth(const char *dir)
{
	struct gbase bases[3] = {{"Venus", NULL, 0, 0, 0}, {"Earth", NULL, 0, 0, 0}, {"Philly", NULL, 0, 0, 0}};
	static double venus_h[MAXH];
	char path[512], a[256], b[256];
	int ok = 0;
	/* Venus: GPUs submitted per day */
	snprintf(path, sizeof path, "%s/helios-venus-throughput/cluster_throughput.csv", dir);
	int nh = read_hourly(path, "submit_gpu_num", venus_h, MAXH);
	if (nh > 0) {
		bases[0].n = nh / 24;
		bases[0].v = calloc((size_t)bases[0].n, sizeof(double));
		for (int t = 0; t < bases[0].n * 24; t++)
			bases[0].v[t / 24] += venus_h[t];
		ok++;
	}
	ok += read_daily_peaks_earth(dir, &bases[1]) == 0;
	ok += read_daily_peaks_philly(dir, &bases[2]) == 0;
	if (ok < 3) {
		fprintf(stderr, "bench_forecast: growth bases missing under %s (skipped)\n", dir);
		return;
	}
	/* per curve: ours and the baseline, summed over bases and seeds */
	struct gacc ours[4], base[4];
	int hits = 0, cases = 0, false_sat[4] = {0}, base_hits = 0, base_false[4] = {0}, trend_chosen[4] = {0};
	int hits_b[3] = {0}, cases_b[3] = {0}, false_b[3] = {0}, oracle_b[3] = {0};
	double per_case_ours[3 * 4 * G_SEEDS], per_case_base[3 * 4 * G_SEEDS];
	int npc = 0;
	double t_fit = 0;
	memset(ours, 0, sizeof ours);
	memset(base, 0, sizeof base);
	for (int bi = 0; bi < 3; bi++) {
		double level = g_level(&bases[bi]);
		if (getenv("GL_BENCH_DEBUG")) {
			static double v[G_WEEKS];
			uint32_t s0 = 5;
			double m = 0, sd = 0;
			g_draw(&bases[bi], &s0, v);
			for (int w = 0; w < G_WEEKS; w++)
				m += v[w] / G_WEEKS;
			for (int w = 0; w < G_WEEKS; w++)
				sd += (v[w] - m) * (v[w] - m) / G_WEEKS;
			fprintf(stderr, "  %s: median weekly peak %.1f, mean %.1f, cv %.2f\n", bases[bi].name, level, m, sqrt(sd) / m);
		}
		for (int kind = 0; kind < 4; kind++)
			for (int s = 0; s < G_SEEDS; s++) {
				double y[G_WEEKS], cap;
				uint32_t seed = 1000u * (uint32_t)bi + 100u * (uint32_t)kind + (uint32_t)s;
				int kstar = -1; /* the true crossing: forecast week index */
				struct gl_forecast_opts o = {0};
				struct gl_forecast_result r, rb;
				struct gl_err err = {0};
				g_draw(&bases[bi], &seed, y);
				for (int w = 0; w < G_WEEKS; w++)
					y[w] *= g_curve(kind, w);
				if (kind == 1 || kind == 2) {
					/* the truth crosses capacity 13..24 weeks ahead, half a
					 * week's growth before that week (not on its edge) */
					int want = 13 + s % 12;
					cap = level * g_curve(kind, G_HIST + want - 0.5);
					for (int k = 0; k < G_H && kstar < 0; k++)
						if (level * g_curve(kind, G_HIST + k) >= cap)
							kstar = k;
				} else {
					cap = 1.25 * level * g_curve(kind, G_HIST);
				}
				o.slots_per_day = 1;
				o.slots_per_week = 1;
				o.horizon = G_H;
				o.method = GL_FORECAST_AUTO;
				o.first_weekday = -1;
				double t1 = now_s();
				if (gl_forecast_fit(y, G_HIST, &o, &r, &err)) {
					fprintf(stderr, "bench_forecast: growth: %s\n", err.msg);
					return;
				}
				t_fit += now_s() - t1;
				o.method = r.baseline;
				if (gl_forecast_fit(y, G_HIST, &o, &rb, &err)) {
					fprintf(stderr, "bench_forecast: growth baseline: %s\n", err.msg);
					gl_forecast_result_fini(&r);
					return;
				}
				trend_chosen[kind] += r.method >= GL_FORECAST_FIRST_TREND;
				g_score(&ours[kind], y, &r);
				g_score(&base[kind], y, &rb);
				{
					/* each series' WAPE over the leads ours answered, the
					 * baseline's over the same */
					struct gacc one, oneb;
					double so = 0, sb = 0, sy = 0;
					memset(&one, 0, sizeof one);
					memset(&oneb, 0, sizeof oneb);
					g_score(&one, y, &r);
					g_score(&oneb, y, &rb);
					for (int h = 0; h < r.horizon && h < rb.horizon; h++)
						so += one.sae[h], sb += oneb.sae[h], sy += one.sy[h];
					per_case_ours[npc] = sy > 0 ? so / sy : 0;
					per_case_base[npc] = sy > 0 ? sb / sy : 0;
					npc++;
				}
				/* the 50 % saturation week, ours and the baseline's */
				for (int pass = 0; pass < 2; pass++) {
					const struct gl_forecast_result *x = pass ? &rb : &r;
					struct gl_capplan_step st[G_H];
					long k50;
					for (int k = 0; k < x->horizon; k++) {
						gl_capplan_step_fill(&st[k], x, k);
						st[k].capacity = cap;
					}
					k50 = gl_capplan_first_saturated(st, (size_t)x->horizon, 0.5);
					if (kstar >= 0) {
						/* days to the crossing week's start: 7 k* */
						int hit = k50 >= 0 && fabs(7.0 * (k50 - kstar)) <= 0.1 * 7.0 * kstar;
						if (getenv("GL_BENCH_DEBUG") && !pass)
							fprintf(stderr, "  %s %s seed %d: true %d, ours %ld (%s), baseline %d\n", bases[bi].name,
								g_curve_name[kind], s, kstar, k50, gl_forecast_method_name(r.method), -9);
						if (pass)
							base_hits += hit;
						else
							hits += hit, hits_b[bi] += hit;
					} else if (k50 >= 0) {
						if (getenv("GL_BENCH_DEBUG") && !pass)
							fprintf(stderr, "  false: %s %s seed %d: week %ld, %s, q50 %.0f point %.0f lo80 %.0f hi80 %.0f cap %.0f level %.0f\n",
								bases[bi].name, g_curve_name[kind], s, k50, gl_forecast_method_name(x->method), x->q50[k50],
								x->point[k50], x->lo80[k50], x->hi80[k50], cap, level);
						if (pass)
							base_false[kind]++;
						else
							false_sat[kind]++, false_b[bi]++;
					}
				}
				cases += kstar >= 0;
				cases_b[bi] += kstar >= 0;
				if (kstar >= 0) {
					/* the oracle: told the curve, it estimates only the
					 * base's level, as the median of y / curve over the
					 * history, and crosses where level x curve does */
					double q[G_HIST];
					int ko = -1;
					for (int w = 0; w < G_HIST; w++)
						q[w] = y[w] / g_curve(kind, w);
					double lv = quantile(q, G_HIST, 0.5);
					for (int k = 0; k < G_H && ko < 0; k++)
						if (lv * g_curve(kind, G_HIST + k) >= cap)
							ko = k;
					oracle_b[bi] += ko >= 0 && fabs(7.0 * (ko - kstar)) <= 0.1 * 7.0 * kstar;
				}
				gl_forecast_result_fini(&r);
				gl_forecast_result_fini(&rb);
			}
	}
	for (int kind = 0; kind < 4; kind++) {
		const struct gacc *x = &ours[kind], *y = &base[kind];
		snprintf(a, sizeof a, "WAPE %.1f / %.1f / %.1f %% at 4 / 8 / 13 weeks; 80 %% coverage %.0f / %.0f / %.0f / %.0f %%"
				      " (week 1, 2-4, months 2-3, 4-12); a trend chosen in %d of %d",
			 100 * g_wape(x, 4, 4), 100 * g_wape(x, 8, 8), 100 * g_wape(x, 13, 13),
			 100 * x->in80[1] / x->n80[1], 100 * x->in80[2] / x->n80[2], 100 * x->in80[3] / x->n80[3],
			 100 * x->in80[4] / x->n80[4], trend_chosen[kind], 3 * G_SEEDS);
		snprintf(b, sizeof b, "baseline %.1f / %.1f / %.1f %%; %.0f / %.0f / %.0f / %.0f %%",
			 100 * g_wape(y, 4, 4), 100 * g_wape(y, 8, 8), 100 * g_wape(y, 13, 13),
			 100 * y->in80[1] / y->n80[1], 100 * y->in80[2] / y->n80[2], 100 * y->in80[3] / y->n80[3],
			 100 * y->in80[4] / y->n80[4]);
		char c[64], fig[128];
		snprintf(c, sizeof c, "WAPE 13 wk %.3f of baseline", g_wape(x, 13, 13) / g_wape(y, 13, 13));
		snprintf(fig, sizeof fig, "growth %s: Venus, Earth, Philly x %d draws, weekly peak, 26 weeks ahead", g_curve_name[kind],
			 G_SEEDS);
		row(fig, a, b, c);
	}
	{
		/* P(ours' summed WAPE below the baseline's), resampling the series */
		uint32_t s = 7;
		int wins = 0;
		for (int it = 0; it < 10000; it++) {
			double so = 0, sb = 0;
			for (int i = 0; i < npc; i++) {
				int j = (int)(lcg(&s) * npc);
				so += per_case_ours[j], sb += per_case_base[j];
			}
			wins += so < sb;
		}
		snprintf(a, sizeof a, "%d of %d within +-10 %% of the days to the true crossing (%.0f %%); false dates: %d of %d"
				      " no-growth, %d of %d step",
			 hits, cases, 100.0 * hits / cases, false_sat[0], 3 * G_SEEDS, false_sat[3], 3 * G_SEEDS);
		int oracle = oracle_b[0] + oracle_b[1] + oracle_b[2];
		snprintf(b, sizeof b, "oracle told the growth curve (a bound) %d of %d (%.0f %%); baseline %d of %d (%.0f %%),"
				      " false %d / %d; target >= 80 %%, no false date; P(WAPE below baseline's) %.3f",
			 oracle, cases, 100.0 * oracle / cases, base_hits, cases, 100.0 * base_hits / cases, base_false[0],
			 base_false[3], wins / 10000.0);
		row("growth: 50 % saturation date (linear and exponential series)", a, b, "-");
		for (int bi = 0; bi < 3; bi++) {
			char fig[96];
			snprintf(fig, sizeof fig, "growth, %s base: 50 %% saturation date within +-10 %%", bases[bi].name);
			snprintf(a, sizeof a, "%d of %d; false dates %d of %d (no growth and step)", hits_b[bi], cases_b[bi],
				 false_b[bi], 2 * G_SEEDS);
			snprintf(b, sizeof b, "oracle told the growth curve, estimating the level only: %d of %d (a bound)",
				 oracle_b[bi], cases_b[bi]);
			row(fig, a, b, "-");
		}
		snprintf(a, sizeof a, "%.1f ms per fit (%d fits)", 1000 * t_fit / (3 * 4 * G_SEEDS), 3 * 4 * G_SEEDS);
		row("growth: weekly fit, 104 weeks, 26 ahead, with selection", a, "-", "-");
	}
	for (int i = 0; i < 3; i++)
		free(bases[i].v);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "../shared/data";
	const char *month = argc > 2 ? argv[2] : "sep", *only = argc > 3 ? argv[3] : "all";
	int all = !strcmp(only, "all");
	printf("| figure | ours | baseline / target | ratio |\n|---|---|---|---|\n");
	if (all || strstr(only, "venus"))
		venus(dir, month);
	if (all || strstr(only, "earth"))
		earth();
	if (all)
		sat_speed();
	if (all || strstr(only, "growth"))
		growth(dir);
	if (all || strstr(only, "speed"))
		speed();
	return 0;
}
