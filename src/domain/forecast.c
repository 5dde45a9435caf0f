/* Demand forecasting (pure). See include/gl/forecast.h for the contract and
 * docs/forecast.md for the methods and the measured accuracy. */
#include "gl/forecast.h"
#include "gl/fctrend.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const method_names[GL_FORECAST_METHOD_COUNT] = {
	"naive", "snaive_day", "snaive_week", "median_day", "median_week", "hw",
	"hw_log", "combo", "median_pool", "ses", "ensemble", "damped", "linear", "loglin",
};

static const char *const bucket_names[GL_FORECAST_BUCKETS] = {
	"day 1", "week 1", "weeks 2-4", "months 2-3", "months 4-12",
};
/* the last day ahead each bucket holds */
static const long bucket_last_day[GL_FORECAST_BUCKETS] = {1, 7, 28, 91, LONG_MAX};

const char *gl_forecast_bucket_name(int bucket)
{
	return bucket >= 0 && bucket < GL_FORECAST_BUCKETS ? bucket_names[bucket] : NULL;
}

int gl_forecast_lead_bucket(int slots_per_day, int slots_per_week, int lead)
{
	long days;
	if (slots_per_day > 1)
		days = ((long)lead + slots_per_day - 1) / slots_per_day;
	else
		days = (long)lead * 7 / (slots_per_week > 0 && slots_per_week <= 7 ? slots_per_week : 7);
	for (int b = 0; b < GL_FORECAST_BUCKETS; b++)
		if (days <= bucket_last_day[b])
			return b;
	return GL_FORECAST_BUCKETS - 1;
}

const char *gl_forecast_method_name(int method)
{
	if (method == GL_FORECAST_AUTO)
		return "auto";
	if (method < 0 || method >= GL_FORECAST_METHOD_COUNT)
		return NULL;
	return method_names[method];
}

int gl_forecast_method_parse(const char *name)
{
	if (!name)
		return -2;
	if (!strcmp(name, "auto"))
		return GL_FORECAST_AUTO;
	for (int i = 0; i < GL_FORECAST_METHOD_COUNT; i++)
		if (!strcmp(name, method_names[i]))
			return i;
	return -2;
}

/* ---- small numeric helpers ---- */

double gl_forecast_median(double *v, int n)
{
	for (int i = 1; i < n; i++) {
		double x = v[i];
		int j = i - 1;
		while (j >= 0 && v[j] > x) {
			v[j + 1] = v[j];
			j--;
		}
		v[j + 1] = x;
	}
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double pinball(double q, double y, double f)
{
	return y >= f ? q * (y - f) : (1 - q) * (f - y);
}

double gl_forecast_mase_scale(const double *y, size_t n, int lag)
{
	double sum = 0;
	size_t cnt = 0;
	if (lag < 1)
		lag = 1;
	for (size_t t = (size_t)lag; t < n; t++) {
		if (isnan(y[t]) || isnan(y[t - (size_t)lag]))
			continue;
		sum += fabs(y[t] - y[t - (size_t)lag]);
		cnt++;
	}
	return cnt ? sum / (double)cnt : 0;
}

void gl_forecast_metrics_compute(const double *y, const double *f, const double *lo80, const double *hi80,
				 const double *lo95, const double *hi95, size_t n, double scale,
				 struct gl_forecast_metrics *m)
{
	double sae = 0, sse = 0, sy = 0, ssm = 0, pb = 0;
	long cnt = 0, in80 = 0, in95 = 0, n80 = 0, n95 = 0;
	for (size_t i = 0; i < n; i++) {
		if (isnan(y[i]))
			continue;
		double e = y[i] - f[i];
		sae += fabs(e);
		sse += e * e;
		sy += fabs(y[i]);
		double d = fabs(y[i]) + fabs(f[i]);
		ssm += d > 0 ? 2 * fabs(e) / d : 0;
		/* a forecast made with no backtest behind it has no interval
		 * (NaN): it is scored for its point only */
		if (lo80 && hi80 && !isnan(lo80[i]) && !isnan(hi80[i])) {
			in80 += y[i] >= lo80[i] && y[i] <= hi80[i];
			pb += 0.5 * (pinball(0.1, y[i], lo80[i]) + pinball(0.9, y[i], hi80[i]));
			n80++;
		}
		if (lo95 && hi95 && !isnan(lo95[i]) && !isnan(hi95[i])) {
			in95 += y[i] >= lo95[i] && y[i] <= hi95[i];
			n95++;
		}
		cnt++;
	}
	memset(m, 0, sizeof *m);
	m->n = cnt;
	if (!cnt) {
		m->mae = m->rmse = m->mase = m->wape = m->smape = NAN;
		m->coverage80 = m->coverage95 = m->pinball80 = NAN;
		return;
	}
	m->mae = sae / (double)cnt;
	m->rmse = sqrt(sse / (double)cnt);
	m->mase = scale > 0 ? m->mae / scale : NAN;
	m->wape = sy > 0 ? sae / sy : NAN;
	m->smape = ssm / (double)cnt;
	m->coverage80 = n80 ? (double)in80 / (double)n80 : NAN;
	m->coverage95 = n95 ? (double)in95 / (double)n95 : NAN;
	m->pinball80 = n80 && scale > 0 ? pb / (double)n80 / scale : NAN;
}

/* ---- the methods ---- */

struct fc_ctx {
	int pd, pw, h, kd, kw, wd0;
};

static void ctx_init(struct fc_ctx *c, const struct gl_forecast_opts *o)
{
	c->pd = o->slots_per_day > 0 ? o->slots_per_day : 1;
	c->pw = o->slots_per_week > 0 ? o->slots_per_week : c->pd;
	c->h = o->horizon;
	c->kd = o->k_day > 0 ? o->k_day : 7;
	c->kw = o->k_week > 0 ? o->k_week : 4;
	if (c->kd > 64)
		c->kd = 64;
	if (c->kw > 64)
		c->kw = 64;
	c->wd0 = o->first_weekday >= 0 && o->first_weekday < 7 && c->pd >= 1 && c->pw == 7 * c->pd ? o->first_weekday : -1;
}

/* The k-th smallest of v[0..n) (Hoare's selection); leaves v partitioned
 * around it, smaller ones first. */
static double select_kth(double *v, int n, int k)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		double pivot = v[lo + (hi - lo) / 2];
		int i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				double t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

static int day_is_weekend(const struct fc_ctx *c, long day)
{
	return ((day % 7 + 7 + c->wd0) % 7) >= 5;
}

/* The pool for slot t from x[0..o): slots t - j*pd + d for the k days j
 * back from the newest day before the origin (j0: t's own day when t is
 * within the first day ahead, else as many days further as t is ahead),
 * |d| <= w, of the same day type as t when the weekday is known, into v;
 * returns how many. Counting the k days from the origin, not from t, keeps
 * a pool k days deep at every lead (from t, a daily or weekly slot 21 ahead
 * of k = 28 had 7). The day type is worked out once per day, not per slot
 * (this loop is most of the cost of a fit). */
static int pool_gather(const double *x, size_t o, long t, const struct fc_ctx *c, int k, int w, double *v)
{
	int cnt = 0, split = c->wd0 >= 0;
	long pd = c->pd, day_t = t / pd, slot = t % pd, j0 = (t - (long)o) / pd + 1;
	int we = split ? day_is_weekend(c, day_t) : 0;
	for (long j = j0; j < j0 + k; j++) {
		long day = day_t - j;
		int same = !split || day_is_weekend(c, day) == we;
		int prev_same = !split || day_is_weekend(c, day - 1) == we;
		int next_same = !split || day_is_weekend(c, day + 1) == we;
		for (int d = -w; d <= w; d++) {
			long i = t - (long)j * pd + d, s = slot + d;
			if (i < 0 || i >= (long)o)
				continue;
			if (!(s < 0 ? prev_same : s >= pd ? next_same : same))
				continue;
			v[cnt++] = x[i];
		}
	}
	return cnt;
}

/* Pooled median for slot t (pool_gather). Bursty demand has a noisy median
 * per slot; pooling neighbours steadies it. */
static double pool_median(const double *x, size_t o, long t, const struct fc_ctx *c, int k, int w, double *v)
{
	int cnt = pool_gather(x, o, t, c, k, w, v);
	if (!cnt)
		return NAN;
	double hi = select_kth(v, cnt, cnt / 2);
	if (cnt % 2)
		return hi;
	/* the lower middle is the largest of the half below */
	double lo = v[0];
	for (int i = 1; i < cnt / 2; i++)
		if (v[i] > lo)
			lo = v[i];
	return 0.5 * (lo + hi);
}

/* The pooled sample's own quantiles (.025 .1 .9 .975) as an interval for
 * the pooled median: for bursty demand the spread of the same hour in the
 * recent weeks is a sharper predictive distribution than errors pooled
 * over all hours. At the conformal ranks (err_pos): the next value is one
 * more draw of the pool. */
static double quantile_select(double *v, size_t n, double q);
static double err_pos(double q, size_t n);
static int pool_bands(const double *x, size_t o, long t, const struct fc_ctx *c, int k, int w, double *v,
		      double b[4])
{
	static const double lv[4] = {0.025, 0.1, 0.9, 0.975};
	int cnt = pool_gather(x, o, t, c, k, w, v);
	if (!cnt)
		return -1;
	for (int i = 0; i < 4; i++)
		b[i] = select_kth(v, cnt, (int)err_pos(lv[i], (size_t)cnt));
	return 0;
}

struct pool_par {
	int k, w;
};
static const struct pool_par pool_grid[] = {{28, 1}, {28, 2}, {42, 1}, {42, 2}};

/* Same-slot value(s) for slot o+h from history x[0..o), period p: the k most
 * recent slots t - j*p before o. Returns the median of them, or NAN when
 * there are none. */
static double same_slot_median(const double *x, size_t o, int h, int p, int k)
{
	double v[64];
	int cnt = 0;
	long t = (long)o + h;
	long j = h / p + 1;
	for (; cnt < k; j++) {
		long i = t - j * (long)p;
		if (i < 0)
			break;
		v[cnt++] = x[i];
	}
	return cnt ? gl_forecast_median(v, cnt) : NAN;
}

/* A baseline at one origin; returns 0 or -1 when it cannot run there. */
static int baseline_at(int m, const double *x, size_t o, const struct fc_ctx *c, double *out)
{
	if (o == 0)
		return -1;
	for (int h = 0; h < c->h; h++) {
		double v;
		switch (m) {
		case GL_FORECAST_NAIVE: v = x[o - 1]; break;
		case GL_FORECAST_SNAIVE_DAY: v = same_slot_median(x, o, h, c->pd, 1); break;
		case GL_FORECAST_SNAIVE_WEEK: v = same_slot_median(x, o, h, c->pw, 1); break;
		case GL_FORECAST_MEDIAN_DAY: v = same_slot_median(x, o, h, c->pd, c->kd); break;
		case GL_FORECAST_MEDIAN_WEEK: v = same_slot_median(x, o, h, c->pw, c->kw); break;
		default: return -1;
		}
		if (isnan(v))
			return -1;
		out[h] = v;
	}
	/* seasonal methods need a whole season of history to be themselves */
	if ((m == GL_FORECAST_SNAIVE_DAY || m == GL_FORECAST_MEDIAN_DAY) && o < (size_t)c->pd)
		return -1;
	if ((m == GL_FORECAST_SNAIVE_WEEK || m == GL_FORECAST_MEDIAN_WEEK) && o < (size_t)c->pw)
		return -1;
	return 0;
}

/* Holt-Winters with additive level, daily and weekly seasons (Taylor's
 * double-seasonal form, no trend: a trend extrapolates bursts). One pass
 * from `start` emits the forecasts at every origin in orig[] (ascending),
 * so cross-validation costs one pass per parameter set. */
struct hw_par {
	double a, d, w;
};
static const struct hw_par hw_grid[] = {
	{0.05, 0.05, 0.05}, {0.05, 0.2, 0.1}, {0.2, 0.1, 0.1}, {0.2, 0.3, 0.2},
};
#define HW_NGRID ((int)GL_ARRAY_LEN(hw_grid))

static double tf(double v, int logt)
{
	if (v < 0)
		v = 0;
	return logt ? log1p(v) : v;
}

static double itf(double v, int logt)
{
	v = logt ? expm1(v) : v;
	return v > 0 ? v : 0;
}

/* The history a pass starts from: enough to initialise (two of the
 * longest seasons) and a few weeks more to settle, never more. */
static size_t hw_season(const struct fc_ctx *c)
{
	return c->pw > c->pd ? (size_t)c->pw : (c->pd > 1 ? (size_t)c->pd : 7);
}

static int hw_pass(const double *x, size_t start, const size_t *orig, int norig, const struct fc_ctx *c,
		   const struct hw_par *p, int logt, double *dseas, double *wseas, double *out)
{
	size_t L = hw_season(c);
	int use_d = c->pd > 1, use_w = c->pw > c->pd;
	double lvl = 0;
	size_t t;
	int k = 0;

	if (orig[0] < start + 2 * L)
		return -1;
	memset(dseas, 0, sizeof(double) * (size_t)c->pd);
	memset(wseas, 0, sizeof(double) * (size_t)c->pw);
	for (t = start; t < start + L; t++)
		lvl += tf(x[t], logt);
	lvl /= (double)L;
	if (use_d) {
		size_t days = L / (size_t)c->pd;
		for (t = start; t < start + L; t++)
			dseas[t % (size_t)c->pd] += (tf(x[t], logt) - lvl) / (double)days;
	}
	if (use_w)
		for (t = start; t < start + L; t++)
			wseas[t % (size_t)c->pw] = tf(x[t], logt) - lvl - (use_d ? dseas[t % (size_t)c->pd] : 0);
	for (t = start + L;; t++) {
		while (k < norig && orig[k] == t) {
			for (int h = 0; h < c->h; h++) {
				size_t s = t + (size_t)h;
				double f = lvl + (use_d ? dseas[s % (size_t)c->pd] : 0) + (use_w ? wseas[s % (size_t)c->pw] : 0);
				out[(size_t)k * (size_t)c->h + (size_t)h] = itf(f, logt);
			}
			k++;
		}
		if (k == norig)
			break;
		double *ds = use_d ? &dseas[t % (size_t)c->pd] : NULL;
		double *ws = use_w ? &wseas[t % (size_t)c->pw] : NULL;
		double v = tf(x[t], logt);
		double e = v - lvl - (ds ? *ds : 0) - (ws ? *ws : 0);
		lvl += p->a * e;
		if (ds)
			*ds += p->d * e;
		if (ws)
			*ws += p->w * e;
	}
	return 0;
}

/* ---- cross-validation and selection ---- */

/* Forecasts of method m at every origin (norig of them, the last may be the
 * final one with no actuals): out[k*h + i]. n_cv: how many origins have
 * actuals (scored when choosing HW parameters). Returns -1 if m cannot run
 * at some origin. */
struct fc_work {
	int pool_k, pool_w; /* the pooled median's parameters chosen in CV */
	const double *x;    /* the history, missing slots imputed (what methods fit) */
	const double *y;    /* the history as given: NaN slots are never scored */
	size_t n;
	const size_t *orig;
	int norig, n_cv;
	struct fc_ctx c;
	double *dseas, *wseas, *tmp;
	double *fc[GL_FORECAST_METHOD_COUNT]; /* norig*h each, NULL when m cannot run */
	/* the first origin each method ran at: 0 but for the trend methods,
	 * which need weeks of history the oldest origins lack (NaN before) */
	int k0[GL_FORECAST_METHOD_COUNT];
	int asked;   /* the method asked for by name, or GL_FORECAST_AUTO */
	int *bucket; /* per lead slot (0-based), its lead bucket */
	double *vol; /* per origin: the daily seasonal naive's MAE over the week before it (> 0) */
};

/* The actual at slot t, NaN when it is not scored (missing or excluded). */
static double actual(const struct fc_work *w, size_t t)
{
	return t < w->n ? w->y[t] : NAN;
}

/* The backtest's sum of absolute errors of forecasts f, from origin k0 on,
 * at leads below hmax. */
static double cv_abs_error_h(const struct fc_work *w, const double *f, int k0, int hmax)
{
	double s = 0;
	for (int k = k0; k < w->n_cv; k++)
		for (int h = 0; h < hmax; h++) {
			double a = actual(w, w->orig[k] + (size_t)h);
			if (!isnan(a))
				s += fabs(a - f[(size_t)k * (size_t)w->c.h + (size_t)h]);
		}
	return s;
}

static double cv_abs_error(const struct fc_work *w, const double *f, int k0)
{
	return cv_abs_error_h(w, f, k0, w->c.h);
}

/* Trend methods: daily and weekly steps only; at the origins with the
 * weeks of history a trend needs (and at least 8 of them when chosen
 * automatically, for a selection worth trusting). */
#define TREND_MIN_ORIGINS 8
static int run_trend(struct fc_work *w, int m, double *out)
{
	const struct fc_ctx *c = &w->c;
	size_t H = (size_t)c->h;
	int period = c->pw == 7 ? 7 : 1, k0 = 0;
	size_t need = gl_fctrend_min_history(period), window = period == 7 ? 182 : 104;
	int kind = m == GL_FORECAST_DAMPED ? GL_FCTREND_DAMPED : m == GL_FORECAST_LINEAR ? GL_FCTREND_LINEAR
											  : GL_FCTREND_LOGLIN;
	if (c->pd != 1 || (c->pw != 7 && c->pw != 1))
		return -1;
	while (k0 < w->norig && w->orig[k0] < need)
		k0++;
	if (w->n_cv - k0 < (w->asked == m ? 2 : TREND_MIN_ORIGINS))
		return -1;
	for (int k = 0; k < w->norig; k++) {
		double *o = out + (size_t)k * H;
		if (k < k0) {
			for (size_t h = 0; h < H; h++)
				o[h] = NAN;
		} else if (gl_fctrend_forecast(kind, w->x, w->orig[k], period, window, c->h, o, NULL)) {
			return -1;
		}
	}
	w->k0[m] = k0;
	return 0;
}

static int run_method(struct fc_work *w, int m, double *out)
{
	const struct fc_ctx *c = &w->c;
	size_t H = (size_t)c->h;
	if (m < GL_FORECAST_FIRST_MODEL) {
		for (int k = 0; k < w->norig; k++)
			if (baseline_at(m, w->x, w->orig[k], c, out + (size_t)k * H))
				return -1;
		return 0;
	}
	if (m == GL_FORECAST_HW || m == GL_FORECAST_HW_LOG) {
		size_t L = hw_season(c), warm = 6 * L;
		size_t start = w->orig[0] > warm + 2 * L ? w->orig[0] - warm : 0;
		double best = INFINITY;
		int logt = m == GL_FORECAST_HW_LOG;
		for (int g = 0; g < HW_NGRID; g++) {
			if (hw_pass(w->x, start, w->orig, w->norig, c, &hw_grid[g], logt, w->dseas, w->wseas, w->tmp))
				return -1;
			double e = w->n_cv ? cv_abs_error(w, w->tmp, 0) : 0;
			if (e < best) {
				best = e;
				memcpy(out, w->tmp, sizeof(double) * H * (size_t)w->norig);
			}
			if (!w->n_cv)
				break;
		}
		return 0;
	}
	if (m == GL_FORECAST_MEDIAN_POOL) {
		double best = INFINITY, v[512];
		for (size_t g = 0; g < GL_ARRAY_LEN(pool_grid); g++) {
			int k = pool_grid[g].k, wd = c->pd > 1 ? pool_grid[g].w : 0;
			if (c->pd == 1 && g % 2)
				continue; /* daily steps have no neighbouring slots */
			for (int kk = 0; kk < w->norig; kk++) {
				if (w->orig[kk] < (size_t)c->pw)
					return -1;
				for (int h = 0; h < c->h; h++) {
					double f = pool_median(w->x, w->orig[kk], (long)(w->orig[kk] + (size_t)h), c, k, wd, v);
					if (isnan(f))
						return -1;
					w->tmp[(size_t)kk * H + (size_t)h] = f;
				}
			}
			double e = w->n_cv ? cv_abs_error(w, w->tmp, 0) : 0;
			if (e < best) {
				best = e;
				w->pool_k = k;
				w->pool_w = wd;
				memcpy(out, w->tmp, sizeof(double) * H * (size_t)w->norig);
			}
		}
		return 0;
	}
	if (m == GL_FORECAST_SES) {
		/* one pass per smoothing constant gives the level and the
		 * one-step squared error so far at every origin; each origin takes
		 * the constant that fitted its own past best (ETS(A,N,N)) */
		static const double alpha[] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
		double *lv = gl_xmalloc(sizeof(double) * 2 * (size_t)w->norig);
		double *sse = lv + w->norig;
		for (int k = 0; k < w->norig; k++)
			sse[k] = INFINITY;
		/* a level without a season is no candidate for a series with a
		 * daily cycle (nor a voice in its ensemble) */
		if (w->orig[0] < 2 || c->pd > 1) {
			free(lv);
			return -1;
		}
		for (size_t a = 0; a < GL_ARRAY_LEN(alpha); a++) {
			double l = w->x[0], e2 = 0;
			size_t t = 1;
			for (int k = 0; k < w->norig; k++) {
				for (; t < w->orig[k]; t++) {
					double e = w->x[t] - l;
					e2 += e * e;
					l += alpha[a] * e;
				}
				if (e2 < sse[k]) {
					sse[k] = e2;
					lv[k] = l;
				}
			}
		}
		for (int k = 0; k < w->norig; k++)
			for (size_t h = 0; h < H; h++)
				out[(size_t)k * H + h] = lv[k] > 0 ? lv[k] : 0;
		free(lv);
		return 0;
	}
	if (m == GL_FORECAST_ENSEMBLE) {
		/* the median forecast of all methods: robust when the backtest
		 * has too few origins to tell the methods apart */
		double v[GL_FORECAST_METHOD_COUNT];
		int np = 0;
		for (int j = 0; j < GL_FORECAST_ENSEMBLE; j++)
			np += w->fc[j] != NULL;
		if (np < 3)
			return -1;
		for (size_t i = 0; i < H * (size_t)w->norig; i++) {
			int k = 0;
			for (int j = 0; j < GL_FORECAST_ENSEMBLE; j++)
				if (w->fc[j])
					v[k++] = w->fc[j][i];
			out[i] = gl_forecast_median(v, k);
		}
		return 0;
	}
	if (m >= GL_FORECAST_FIRST_TREND)
		return run_trend(w, m, out);
	if (m == GL_FORECAST_COMBO) {
		/* what there is of the three (two at least): short histories
		 * have no Holt-Winters yet but still gain from averaging */
		const double *p[3] = {w->fc[GL_FORECAST_MEDIAN_DAY], w->fc[GL_FORECAST_MEDIAN_WEEK],
				      w->fc[GL_FORECAST_HW_LOG]};
		int np = 0;
		for (int i = 0; i < 3; i++)
			if (p[i])
				p[np++] = p[i];
		if (np < 2)
			return -1;
		for (size_t i = 0; i < H * (size_t)w->norig; i++) {
			double s = 0;
			for (int j = 0; j < np; j++)
				s += p[j][i];
			out[i] = s / np;
		}
		return 0;
	}
	return -1;
}

/* Imputes NaN slots from the same slot a week (else a day) earlier, else the
 * previous slot, else 0; negative values are cut to 0 (demand cannot be). */
static double *impute(const double *y, size_t n, const struct fc_ctx *c)
{
	double *x = gl_xmalloc(sizeof(double) * (n ? n : 1));
	for (size_t t = 0; t < n; t++) {
		double v = y[t];
		if (isnan(v)) {
			if (t >= (size_t)c->pw)
				v = x[t - (size_t)c->pw];
			else if (t >= (size_t)c->pd)
				v = x[t - (size_t)c->pd];
			else if (t > 0)
				v = x[t - 1];
			else
				v = 0;
		}
		x[t] = v > 0 ? v : 0;
	}
	return x;
}

/* Quantile of v[0..n) with linear interpolation (R type 7), by selection
 * rather than sorting: O(n); v is reordered. */
static double quantile_select(double *v, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;
	double a = select_kth(v, (int)n, (int)i);
	if (i + 1 >= n)
		return a;
	/* the next order statistic is the smallest of those after i */
	double b = v[i + 1];
	for (size_t j = i + 2; j < n; j++)
		if (v[j] < b)
			b = v[j];
	return a + (pos - (double)i) * (b - a);
}

/* Interval offsets from the backtest errors of one method at the leads of
 * one bucket: additive (y - f), on the log scale (log1p y - log1p f), the
 * latter fitting bursty series whose errors grow with the level, or
 * additive in units of the origin's recent volatility. */
struct ivq {
	int kind;    /* 0 additive, 1 log scale, 2 additive in units of the origin's recent volatility */
	double q[4]; /* .025 .1 .9 .975 */
};
static const double iv_levels[4] = {0.025, 0.1, 0.9, 0.975};
#define BAND_KINDS 4 /* the three above, and 3: the pooled median's own pool quantiles */

static void iv_apply(const struct ivq *iv, double f, double vol, double out[4])
{
	for (int i = 0; i < 4; i++) {
		double v = iv->kind == 1 ? expm1(log1p(f) + iv->q[i]) : f + iv->q[i] * (iv->kind == 2 ? vol : 1);
		out[i] = v > 0 ? v : 0;
	}
	/* the point forecast lies inside its intervals, and 80 % inside 95 % */
	if (out[1] > f)
		out[1] = f;
	if (out[2] < f)
		out[2] = f;
	if (out[0] > out[1])
		out[0] = out[1];
	if (out[3] < out[2])
		out[3] = out[2];
}

/* An error of the backtest, the origin it came from and the slot it scored. */
struct orig_err {
	double e;
	int k;
	size_t t;
};

static int cmp_orig_err(const void *pa, const void *pb)
{
	double a = ((const struct orig_err *)pa)->e, b = ((const struct orig_err *)pb)->e;
	return (a > b) - (a < b);
}

/* The scored errors of kind `kind` of forecasts f at the leads of bucket b,
 * from origin k0 on, into out (room for n_cv * h); returns how many. */
static size_t bucket_errors(const struct fc_work *w, const double *f, int kind, int k0, int b, struct orig_err *out)
{
	size_t H = (size_t)w->c.h, cnt = 0, last = 0;
	/* only origins with actuals at every answered lead of the bucket: the
	 * newer ones, scored on its first leads alone, made its errors those
	 * of the shorter leads (Earth's week ahead: leads 2-7 covered 59 %) */
	for (size_t h = 0; h < H; h++)
		if (w->bucket[h] == b)
			last = h + 1;
	for (int k = k0; k < w->n_cv; k++) {
		if (w->orig[k] + last > w->n)
			continue;
		for (size_t h = 0; h < H; h++) {
			double y = actual(w, w->orig[k] + h), fv = f[(size_t)k * H + h];
			if (w->bucket[h] != b || isnan(y))
				continue;
			out[cnt].e = kind == 1 ? log1p(y) - log1p(fv) : kind == 2 ? (y - fv) / w->vol[k] : y - fv;
			out[cnt].t = w->orig[k] + h;
			out[cnt++].k = k;
		}
	}
	return cnt;
}

/* Where the band's quantile of n errors lies among them (0-based, may be
 * fractional): the split-conformal rank, ceil((n + 1) q) for an upper level
 * and floor((n + 1) q) for a lower one, so that a future error falls inside
 * with at least the level's probability whatever n is. The sample quantile
 * (q (n - 1)) covered less the fewer errors there were: 60 % for Earth's
 * week ahead from 10 origins, 64 % for Venus' daily bursts. */
static double err_pos(double q, size_t n)
{
	double r = q > 0.5 ? ceil((double)(n + 1) * q) : floor((double)(n + 1) * q);
	if (r < 1)
		r = 1;
	if (r > (double)n)
		r = (double)n;
	return r - 1;
}

/* The same rank when n errors score only `slots` distinct slots: origins a
 * stride apart forecasting further ahead than the stride score each slot
 * from several origins, and those errors are one draw, not several (a
 * week-ahead bucket of four daily origins holds 24 errors of 9 slots; ranked
 * as 24, Earth's week ahead covered 66 %, the persistent noise of
 * test_week_ahead_bands_cover 69 %). The level is raised as the conformal rank
 * over the slots asks, (slots + 1) q / slots rounded up to a whole slot, and
 * read off all n errors; one error a slot is err_pos. */
static size_t band_rank(double q, size_t n, size_t slots)
{
	if (slots >= n || slots == 0)
		return (size_t)err_pos(q, n);
	double qu = q > 0.5 ? q : 1 - q, r = ceil(ceil((double)(slots + 1) * qu) / (double)slots * (double)n);
	size_t i = r < 1 ? 0 : r > (double)n ? n - 1 : (size_t)r - 1;
	return q > 0.5 ? i : n - 1 - i;
}

/* How many distinct slots errors e[0..n) scored; mark: room for every slot
 * (w->n), all zero, left zero. */
static size_t err_slots(const struct orig_err *e, size_t n, unsigned *mark)
{
	size_t c = 0;
	for (size_t j = 0; j < n; j++) {
		c += !mark[e[j].t];
		mark[e[j].t] = 1;
	}
	for (size_t j = 0; j < n; j++)
		mark[e[j].t] = 0;
	return c;
}

/* The interval quantiles of the sorted errors without those of origin skip
 * (kept >= 1: how many remain, scoring `slots` distinct slots): the order
 * statistics band_rank names, found in one walk. The ranks wanted are not
 * in order when few errors remain (the 2.5 % and 10 % levels can share
 * rank 0), so each is looked up among all four. */
static void loo_quantiles(const struct orig_err *s, size_t n, int skip, size_t kept, size_t slots, double q[4])
{
	size_t want[4], last = 0, rank = 0;
	for (int l = 0; l < 4; l++) {
		want[l] = band_rank(iv_levels[l], kept, slots);
		if (want[l] > last)
			last = want[l];
	}
	for (size_t j = 0; j < n && rank <= last; j++) {
		if (s[j].k == skip)
			continue;
		for (int l = 0; l < 4; l++)
			if (want[l] == rank)
				q[l] = s[j].e;
		rank++;
	}
}

/* Puts the point inside its bands and the 80 % band inside the 95 % one;
 * nothing below 0. b: lo95 lo80 hi80 hi95. */
static void band_nest(double f, double b[4])
{
	for (int i = 0; i < 4; i++)
		if (b[i] < 0)
			b[i] = 0;
	if (b[1] > f)
		b[1] = f;
	if (b[2] < f)
		b[2] = f;
	if (b[0] > b[1])
		b[0] = b[1];
	if (b[3] < b[2])
		b[3] = b[2];
}

/* Honest backtest bands of one kind at every scored origin and lead of
 * bucket b: each origin's come from the errors at the *other* origins
 * (leave one origin out), so coverage is not the tautological 80 % of
 * quantiles scored on their own sample. The errors are sorted once; each
 * origin's quantiles are one walk over them. bands: lo95 lo80 hi80 hi95,
 * norig * h each. Kind 3, the pool's own quantiles, needs no errors. per:
 * room for 2 (norig + 1); slot_n: for w->n slots, all zero, left zero. */
static void cv_bands(const struct fc_work *w, const double *f, int kind, int k0, int b, struct orig_err *se,
		     size_t *per, unsigned *slot_n, double *bands)
{
	size_t H = (size_t)w->c.h, N = H * (size_t)w->norig, ne = 0, slots = 0, *lone = per + w->norig + 1;
	double v[512];
	if (kind < 3) {
		ne = bucket_errors(w, f, kind, k0, b, se);
		gl_qsort(se, ne, sizeof *se, cmp_orig_err);
		memset(per, 0, sizeof *per * 2 * ((size_t)w->norig + 1));
		for (size_t j = 0; j < ne; j++) {
			per[se[j].k]++;
			slots += !slot_n[se[j].t]++;
		}
		/* the slots an origin alone scored leave with it */
		for (size_t j = 0; j < ne; j++)
			lone[se[j].k] += slot_n[se[j].t] == 1;
		for (size_t j = 0; j < ne; j++)
			slot_n[se[j].t] = 0;
	}
	for (int k = k0; k < w->n_cv; k++) {
		struct ivq iv = {kind, {0}};
		int skip = w->n_cv - k0 > 1 ? k : -1;
		size_t kept = kind < 3 ? ne - (skip >= 0 ? per[k] : 0) : 0;
		if (kept)
			loo_quantiles(se, ne, skip, kept, slots - (skip >= 0 ? lone[k] : 0), iv.q);
		for (size_t h = 0; h < H; h++) {
			size_t i = (size_t)k * H + h;
			double bb[4] = {f[i], f[i], f[i], f[i]};
			if (w->bucket[h] != b)
				continue;
			if (kind == 3 && !pool_bands(w->x, w->orig[k], (long)(w->orig[k] + h), &w->c, w->pool_k, w->pool_w, v, bb))
				band_nest(f[i], bb);
			else if (kind < 3 && kept)
				iv_apply(&iv, f[i], w->vol[k], bb);
			for (int l = 0; l < 4; l++)
				bands[(size_t)l * N + i] = bb[l];
		}
	}
}

/* Metrics of forecasts f with bands over the scored origins (from k0) at
 * the leads of bucket b (-1: every lead). */
static void cv_score(const struct fc_work *w, const double *f, const double *bands, int k0, int b, double scale,
		     struct gl_forecast_metrics *m)
{
	size_t H = (size_t)w->c.h, N = H * (size_t)w->norig, cnt = 0, M = H * (size_t)(w->n_cv - k0);
	double *a = gl_xmalloc(sizeof(double) * 6 * (M ? M : 1));
	for (int k = k0; k < w->n_cv; k++)
		for (size_t h = 0; h < H; h++) {
			size_t i = (size_t)k * H + h;
			if (w->bucket[h] < 0 || (b >= 0 && w->bucket[h] != b))
				continue;
			a[cnt] = actual(w, w->orig[k] + h);
			a[M + cnt] = f[i];
			for (int l = 0; l < 4 && bands; l++)
				a[(size_t)(2 + l) * M + cnt] = bands[(size_t)l * N + i];
			cnt++;
		}
	if (bands)
		gl_forecast_metrics_compute(a, a + M, a + 3 * M, a + 4 * M, a + 2 * M, a + 5 * M, cnt, scale, m);
	else
		gl_forecast_metrics_compute(a, a + M, NULL, NULL, NULL, NULL, cnt, scale, m);
	free(a);
}

size_t gl_forecast_active_start(const double *y, size_t n, int slots_per_day)
{
	size_t s = 0, spd = slots_per_day > 0 ? (size_t)slots_per_day : 1;
	while (s < n && (y[s] == 0 || isnan(y[s])))
		s++;
	if (s == n)
		return 0;
	return s - s % spd;
}

void gl_forecast_result_fini(struct gl_forecast_result *r)
{
	if (!r)
		return;
	free(r->point);
	r->point = r->lo80 = r->hi80 = r->lo95 = r->hi95 = r->q50 = NULL;
}

static void result_alloc(struct gl_forecast_result *r, int horizon)
{
	size_t H = (size_t)horizon;
	r->horizon = r->horizon_asked = horizon;
	r->point = gl_xcalloc(6 * H, sizeof(double));
	r->lo80 = r->point + H;
	r->hi80 = r->lo80 + H;
	r->lo95 = r->hi80 + H;
	r->hi95 = r->lo95 + H;
	r->q50 = r->hi95 + H;
}

static int check_opts(const struct gl_forecast_opts *o, struct gl_err *err)
{
	if (o->horizon < 1 || o->horizon > 100000)
		return gl_err_set(err, GL_EINVAL, "forecast: horizon %d out of range (1..100000)", o->horizon);
	if (o->slots_per_day < 1 || o->slots_per_day > 1440 || o->slots_per_week < 1 ||
	    o->slots_per_week > 7 * 1440 || o->slots_per_week % o->slots_per_day != 0)
		return gl_err_set(err, GL_EINVAL, "forecast: bad seasons (%d slots a day, %d a week)", o->slots_per_day,
				  o->slots_per_week);
	if (o->method < GL_FORECAST_AUTO || o->method >= GL_FORECAST_METHOD_COUNT)
		return gl_err_set(err, GL_EINVAL, "forecast: unknown method %d", o->method);
	if (o->origins < 0 || o->origins > 10000 || o->stride < 0)
		return gl_err_set(err, GL_EINVAL, "forecast: bad origins/stride");
	return 0;
}

int gl_forecast_point(int method, const double *y, size_t n, const struct gl_forecast_opts *o, double *out,
		      struct gl_err *err)
{
	struct gl_forecast_opts oo = *o;
	struct gl_forecast_result r = {0};
	int rc;

	oo.method = method;
	if (method == GL_FORECAST_AUTO)
		return gl_err_set(err, GL_EINVAL, "forecast: point needs one method, not auto");
	if ((rc = gl_forecast_fit(y, n, &oo, &r, err)))
		return rc;
	if (r.method != method) {
		rc = gl_err_set(err, GL_EINVAL, "forecast: %s cannot run on %zu slots of history (%s)",
				gl_forecast_method_name(method), n, r.note);
		goto out;
	}
	if (r.horizon < o->horizon) {
		rc = gl_err_set(err, GL_EINVAL, "forecast: %zu slots of history answer %d of %d slots ahead", n,
				r.horizon, o->horizon);
		goto out;
	}
	memcpy(out, r.point, sizeof(double) * (size_t)o->horizon);
out:
	gl_forecast_result_fini(&r);
	return rc;
}

/* The fallback: the median of the same slot over the days there are (the
 * last value when there is less than a day, 0 with no history at all). */
static void fallback_point(const double *x, size_t n, const struct fc_ctx *c, double *out)
{
	for (int h = 0; h < c->h; h++) {
		double v = 0;
		if (n >= (size_t)c->pd)
			v = same_slot_median(x, n, h, c->pd, c->kd);
		else if (n > 0)
			v = x[n - 1];
		out[h] = isnan(v) ? 0 : v;
	}
}

/* Backtest origins: n - stride, n - 2 stride, ... back to a training
 * prefix of min_train slots, each scored on the slots ahead of it that
 * have happened. Enough of them that norig_max have a whole horizon of h
 * slots of actuals (as many as the history has), and the newer ones score
 * the short leads too. Returns how many; *full: how many reach lead h. */
static int origins_plan(size_t n, size_t h, size_t min_train, int stride, int norig_max, int *full)
{
	size_t jmax = n >= min_train ? (n - min_train) / (size_t)stride : 0, steps = (h + (size_t)stride - 1) / (size_t)stride;
	size_t cap = (size_t)norig_max + steps - 1, j = jmax < cap ? jmax : cap;
	*full = j + 1 > steps ? (int)(j + 1 - steps) : 0;
	return (int)j;
}

static const char *unit_name(const struct fc_ctx *c)
{
	return c->pd == 1 ? (c->pw == 1 ? "weeks" : "days") : c->pd == 24 ? "hours" : "slots";
}

/* Short history: the fallback, and its own backtest when one origin is
 * possible (intervals then come from it). */
static void fit_fallback(struct fc_work *w, size_t n, const struct gl_forecast_opts *o, struct gl_forecast_result *r)
{
	size_t H = (size_t)w->c.h;
	const char *unit = w->c.pd == 1 && w->c.pw == 1 ? "weeks" : "days";
	r->fallback = 1;
	r->method = GL_FORECAST_MEDIAN_DAY;
	snprintf(r->note, sizeof r->note,
		 "short history (%zu slot%s, %d backtest origin%s; needs two weeks): median of the same slot"
		 " over the last %d %s there are",
		 n, n == 1 ? "" : "s", w->n_cv, w->n_cv == 1 ? "" : "s", w->c.kd, unit);
	fallback_point(w->x, n, &w->c, r->point);
	if (o->method != GL_FORECAST_AUTO && o->method != GL_FORECAST_MEDIAN_DAY)
		snprintf(r->note, sizeof r->note, "short history (%zu slot%s): %s cannot run", n, n == 1 ? "" : "s",
			 gl_forecast_method_name(o->method));
	if (w->n_cv >= 1) {
		double *f = gl_xmalloc(sizeof(double) * H * (size_t)w->norig);
		for (int k = 0; k < w->norig; k++)
			fallback_point(w->x, w->orig[k], &w->c, f + (size_t)k * H);
		w->fc[GL_FORECAST_MEDIAN_DAY] = f;
	}
}

/* Runs every method that can run at the origins. A method asked for by
 * name that needs more history than the oldest origins have: those origins
 * are dropped rather than the method refused. */
static void run_all(struct fc_work *w, const struct gl_forecast_opts *o)
{
	size_t H = (size_t)w->c.h;
	for (;;) {
		for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++) {
			double *f = gl_xmalloc(sizeof(double) * H * (size_t)w->norig);
			w->k0[m] = 0;
			if (run_method(w, m, f)) {
				free(f);
				continue;
			}
			w->fc[m] = f;
		}
		if (o->method == GL_FORECAST_AUTO || w->fc[o->method] || w->n_cv <= 1)
			break;
		for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++) {
			free(w->fc[m]);
			w->fc[m] = NULL;
		}
		w->orig++;
		w->norig--;
		w->n_cv--;
	}
}

/* How many origins from k0 on have an actual h slots ahead (h >= 1). */
static int scored_origins(const struct fc_work *w, int k0, size_t h)
{
	int c = 0;
	for (int k = k0; k < w->n_cv; k++)
		c += w->orig[k] + h <= w->n;
	return c;
}

/* Chooses: lowest backtest MAE; strict comparisons in method order keep
 * the simpler method on ties, so a model never wins by not beating the best
 * baseline. A trend method, scored on fewer origins (those with the weeks
 * of history it needs) and so as far ahead as two of them have actuals, is
 * chosen when it beats every no-trend method on those same origins and
 * leads, the one that beats them by the largest share; the answer then
 * reaches no further than its backtest did. */
static int choose(struct fc_work *w, const struct gl_forecast_opts *o, struct gl_forecast_result *r, double *gain)
{
	double best = INFINITY, bestb = INFINITY, best_rel = 1;
	*gain = 0;
	for (int m = 0; m < GL_FORECAST_FIRST_TREND; m++) {
		if (!w->fc[m])
			continue;
		double e = cv_abs_error(w, w->fc[m], 0);
		if (m < GL_FORECAST_FIRST_MODEL && e < bestb) {
			bestb = e;
			r->baseline = m;
		}
		if (o->method == GL_FORECAST_AUTO ? e < best : m == o->method) {
			best = e;
			r->method = m;
		}
	}
	for (int t = GL_FORECAST_FIRST_TREND; t < GL_FORECAST_METHOD_COUNT; t++) {
		double et, nt = INFINITY;
		int ht = w->c.h;
		if (!w->fc[t])
			continue;
		if (o->method == t) {
			r->method = t;
			break;
		}
		while (ht > 0 && scored_origins(w, w->k0[t], (size_t)ht) < 2)
			ht--;
		if (o->method != GL_FORECAST_AUTO || ht < 1)
			continue;
		et = cv_abs_error_h(w, w->fc[t], w->k0[t], ht);
		for (int m = 0; m < GL_FORECAST_FIRST_TREND; m++)
			if (w->fc[m]) {
				double e = cv_abs_error_h(w, w->fc[m], w->k0[t], ht);
				nt = e < nt ? e : nt;
			}
		if (et < nt && et / nt < best_rel) {
			best_rel = et / nt;
			r->method = t;
			*gain = 1 - best_rel;
		}
	}
	return r->method < 0 ? -1 : 0;
}

/* Methods whose point is about the mean (smoothing, and the mean of
 * medians), not a median. */
static int mean_type(int m)
{
	return m == GL_FORECAST_HW || m == GL_FORECAST_SES || m == GL_FORECAST_DAMPED || m == GL_FORECAST_COMBO;
}

/* 1 when bands a beat bands b (lo95 lo80 hi80 hi95, norig * h each) on the
 * scored leads of bucket bk, origin by origin: the mean of the per-origin
 * differences of the 80 % band's pinball loss above 1.645 standard errors
 * (one-sided, 95 %). */
static int clearly_better(const struct fc_work *w, const double *f, const double *a, const double *b, int k0, int bk)
{
	size_t H = (size_t)w->c.h, N = H * (size_t)w->norig;
	double sum = 0, sum2 = 0;
	int n = 0;
	(void)f;
	for (int k = k0; k < w->n_cv; k++) {
		double d = 0;
		int any = 0;
		for (size_t h = 0; h < H; h++) {
			size_t i = (size_t)k * H + h;
			double y = actual(w, w->orig[k] + h);
			if (w->bucket[h] != bk || isnan(y))
				continue;
			d += pinball(0.1, y, b[N + i]) + pinball(0.9, y, b[2 * N + i]) - pinball(0.1, y, a[N + i]) -
			     pinball(0.9, y, a[2 * N + i]);
			any = 1;
		}
		if (!any)
			continue;
		sum += d;
		sum2 += d * d;
		n++;
	}
	if (n < 2)
		return 0;
	double mean = sum / n, var = (sum2 - n * mean * mean) / (n - 1);
	return mean > 0 && mean > 1.645 * sqrt(var > 0 ? var : 0) / sqrt((double)n);
}

/* Bands per lead bucket: the kind (additive, log, volatility units, or the
 * pooled median's pool) whose leave-one-origin-out bands scored the lowest
 * pinball loss in that bucket; the final bands from all the errors of
 * that kind there. Fills r's bands, cv and cv_bucket. */
static void intervals(struct fc_work *w, struct gl_forecast_result *r)
{
	size_t H = (size_t)w->c.h, N = H * (size_t)w->norig;
	int k0 = w->k0[r->method];
	const double *f = w->fc[r->method];
	double scale = r->scale > 0 ? r->scale : 1, v[512];
	double *bands = gl_xmalloc(sizeof(double) * 4 * N * BAND_KINDS), *chosen = gl_xmalloc(sizeof(double) * 4 * N);
	struct orig_err *se = gl_xmalloc(sizeof *se * (N ? N : 1));
	size_t *per = gl_xcalloc(2 * ((size_t)w->norig + 1), sizeof *per);
	unsigned *slot_n = gl_xcalloc(w->n + 1, sizeof *slot_n);
	int use_pool = r->method == GL_FORECAST_MEDIAN_POOL && !r->fallback;

	for (int b = 0; b < GL_FORECAST_BUCKETS; b++) {
		double best_pb = INFINITY, q50 = 0;
		struct ivq iv = {0, {0}};
		size_t ne;
		if (!r->bucket_first[b])
			continue;
		r->band_kind[b] = -1;
		for (int kind = 0; kind < (use_pool ? 4 : 3); kind++) {
			struct gl_forecast_metrics mm;
			double *bk = bands + (size_t)kind * 4 * N;
			cv_bands(w, f, kind, k0, b, se, per, slot_n, bk);
			cv_score(w, f, bk, k0, b, scale, &mm);
			if (mm.pinball80 < best_pb) {
				best_pb = mm.pinball80;
				r->band_kind[b] = kind;
			}
		}
		/* A day ahead, the pooled median's bands are its pool's own
		 * quantiles, its simple method's, unless another kind beat them
		 * clearly, origin by origin (t > 1.645): a pick by the mean pinball of
		 * 28 origins followed the last volatile weeks and lost to the
		 * pool (Venus, August: scaled pinball 0.162 picked, 0.155 the
		 * pool's). Later buckets choose freely: the pool knows nothing of
		 * errors growing with the lead. */
		if (use_pool && b == 0 && r->band_kind[b] != 3 &&
		    !clearly_better(w, f, bands + (size_t)r->band_kind[b] * 4 * N, bands + 3 * 4 * N, k0, b))
			r->band_kind[b] = 3;
		if (r->band_kind[b] < 0)
			r->band_kind[b] = 0;
		for (int k = k0; k < w->n_cv; k++)
			for (size_t h = 0; h < H; h++)
				if (w->bucket[h] == b)
					for (int l = 0; l < 4; l++) {
						size_t i = (size_t)l * N + (size_t)k * H + h;
						chosen[i] = bands[(size_t)r->band_kind[b] * 4 * N + i];
					}
		cv_score(w, f, chosen, k0, b, scale, &r->cv_bucket[b]);
		/* the forecast's own bands: every error of that kind in the bucket */
		iv.kind = r->band_kind[b] < 3 ? r->band_kind[b] : 0;
		ne = bucket_errors(w, f, iv.kind, k0, b, se);
		if (ne) {
			double *e = gl_xmalloc(sizeof(double) * ne);
			size_t slots = err_slots(se, ne, slot_n);
			for (size_t j = 0; j < ne; j++)
				e[j] = se[j].e;
			for (int l = 0; l < 4; l++)
				iv.q[l] = select_kth(e, (int)ne, (int)band_rank(iv_levels[l], ne, slots));
			q50 = quantile_select(e, ne, 0.5);
			free(e);
		}
		for (size_t h = 0; h < (size_t)r->horizon; h++) {
			double bb[4], m;
			if (w->bucket[h] != b)
				continue;
			iv_apply(&iv, r->point[h], w->vol[w->n_cv], bb);
			/* the predictive median: a level method's point is about the
			 * mean, which a skewed demand's median lies well below, so the
			 * errors' median is added to it; the medians, the median lines
			 * and the pool are their own (a bucket's errors, from few and
			 * older origins, would only move them) */
			m = !mean_type(r->method) ? r->point[h]
			    : iv.kind == 1	   ? expm1(log1p(r->point[h]) + q50)
					   : r->point[h] + q50 * (iv.kind == 2 ? w->vol[w->n_cv] : 1);
			if (r->band_kind[b] == 3 &&
			    !pool_bands(w->x, w->n, (long)(w->n + h), &w->c, w->pool_k, w->pool_w, v, bb)) {
				band_nest(r->point[h], bb);
				m = r->point[h];
			}
			r->lo95[h] = bb[0], r->lo80[h] = bb[1], r->hi80[h] = bb[2], r->hi95[h] = bb[3];
			r->q50[h] = m < bb[1] ? bb[1] : m > bb[2] ? bb[2] : m;
		}
	}
	cv_score(w, f, chosen, k0, -1, scale, &r->cv);
	if (r->scale <= 0) {
		r->cv.mase = r->cv.pinball80 = NAN;
		for (int b = 0; b < GL_FORECAST_BUCKETS; b++)
			r->cv_bucket[b].mase = r->cv_bucket[b].pinball80 = NAN;
	}
	for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++)
		if (w->fc[m])
			cv_score(w, w->fc[m], NULL, w->k0[m], -1, r->scale, &r->cv_method[m]);
	r->cv_method[r->method] = r->cv;
	free(slot_n);
	free(per);
	free(se);
	free(chosen);
	free(bands);
}

/* Recent volatility per origin: the daily seasonal naive's MAE over the
 * week before it, so a stormy stretch widens the bands and a calm one
 * narrows them. */
static double *volatility(const double *x, const size_t *orig, int norig, const struct fc_ctx *c, double scale)
{
	double *vol = gl_xmalloc(sizeof(double) * (size_t)norig);
	for (int k = 0; k < norig; k++) {
		size_t oo = orig[k], pd = (size_t)c->pd, from = oo > 7 * pd ? oo - 7 * pd : 0, cnt = 0;
		double sum = 0;
		for (size_t t = from < pd ? pd : from; t < oo; t++) {
			sum += fabs(x[t] - x[t - pd]);
			cnt++;
		}
		vol[k] = cnt && sum > 0 ? sum / (double)cnt : scale > 0 ? scale : 1;
	}
	return vol;
}

static void note_append(struct gl_forecast_result *r, const char *fmt, ...) GL_PRINTF(2, 3);
static void note_append(struct gl_forecast_result *r, const char *fmt, ...)
{
	size_t len = strlen(r->note);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->note + len, sizeof r->note - len, fmt, ap);
	va_end(ap);
}

int gl_forecast_fit(const double *y, size_t n, const struct gl_forecast_opts *o, struct gl_forecast_result *r,
		    struct gl_err *err)
{
	struct fc_work w;
	size_t *orig = NULL;
	double *x = NULL, gain = 0;
	int rc = 0, norig_max, stride, n_cv, fallback, full;
	size_t H, min_train;

	memset(r, 0, sizeof *r);
	memset(&w, 0, sizeof w);
	r->method = -1;
	r->baseline = -1;
	if ((rc = check_opts(o, err)))
		return rc;
	ctx_init(&w.c, o);
	result_alloc(r, o->horizon);
	x = impute(y, n, &w.c);
	r->scale = gl_forecast_mase_scale(x, n, w.c.pd);
	/* Daily and coarser series have few points and bursty totals: 28
	 * origins let one lucky method win (Venus daily picked naive after a
	 * burst); a quarter of origins, where the history has them, makes the
	 * backtest MAE a steadier guide. Hourly series score 24 slots an
	 * origin, so 28 days are already 672 errors. */
	norig_max = o->origins > 0 ? o->origins : w.c.pd > 1 ? 28 : 91;
	stride = o->stride > 0 ? o->stride : (w.c.h < w.c.pd ? w.c.h : w.c.pd);
	/* a training prefix of at least one week (a day for daily seasons only) */
	min_train = (size_t)(w.c.pw > 1 ? w.c.pw : 7);
	fallback = n < 2 * (size_t)w.c.pw || n < 14 || origins_plan(n, 1, min_train, stride, norig_max, &full) < 2;
	/* As far ahead as two origins have actuals: bands further out would
	 * reuse errors of shorter leads and claim an accuracy nothing measured */
	H = (size_t)o->horizon;
	while (!fallback && H > 1 && (origins_plan(n, H, min_train, stride, norig_max, &full), full < 2))
		H--;
	n_cv = origins_plan(n, H, min_train, stride, norig_max, &full);
	/* the fallback's own backtest needs whole horizons (it has no selection) */
	if (fallback)
		n_cv = full;
	w.c.h = (int)H;
	r->horizon = (int)H;
	for (size_t h = H; h < (size_t)o->horizon; h++)
		r->point[h] = r->lo80[h] = r->hi80[h] = r->lo95[h] = r->hi95[h] = r->q50[h] = NAN;

	orig = gl_xmalloc(sizeof(size_t) * ((size_t)n_cv + 1));
	for (int k = 0; k < n_cv; k++)
		orig[k] = n - (size_t)(n_cv - k) * (size_t)stride - (fallback ? H - (size_t)stride : 0);
	orig[n_cv] = n;
	w.x = x;
	w.y = y;
	w.n = n;
	w.orig = orig;
	w.norig = n_cv + 1;
	w.n_cv = n_cv;
	w.asked = o->method;
	w.bucket = gl_xmalloc(sizeof(int) * H);
	for (size_t h = 0; h < H; h++)
		w.bucket[h] = gl_forecast_lead_bucket(w.c.pd, w.c.pw, (int)h + 1);
	w.vol = volatility(x, orig, w.norig, &w.c, r->scale);
	w.dseas = gl_xcalloc((size_t)w.c.pd + (size_t)w.c.pw, sizeof(double));
	w.wseas = w.dseas + w.c.pd;
	w.tmp = gl_xmalloc(sizeof(double) * H * (size_t)w.norig);

	if (fallback) {
		fit_fallback(&w, n, o, r);
	} else {
		run_all(&w, o);
		if (choose(&w, o, r, &gain)) {
			rc = gl_err_set(err, GL_EINVAL, "forecast: %s cannot run on %zu slots of history",
					gl_forecast_method_name(o->method), n);
			goto out;
		}
		n_cv = w.n_cv;
		if (o->method != GL_FORECAST_AUTO)
			snprintf(r->note, sizeof r->note, "%s: as asked", gl_forecast_method_name(r->method));
		else if (r->method >= GL_FORECAST_FIRST_TREND)
			snprintf(r->note, sizeof r->note,
				 "%s: backtest MAE %.0f %% below the best no-trend method's over its %d origins"
				 " (best baseline %s)",
				 gl_forecast_method_name(r->method), 100 * gain, n_cv - w.k0[r->method],
				 gl_forecast_method_name(r->baseline));
		else
			snprintf(r->note, sizeof r->note, "%s: lowest backtest MAE over %d origins (best baseline %s)",
				 gl_forecast_method_name(r->method), n_cv, gl_forecast_method_name(r->baseline));
		memcpy(r->point, w.fc[r->method] + (size_t)n_cv * H, sizeof(double) * H);
		/* a method asked for by name may have lost the oldest origins, and a
		 * trend method never had them, and with them the longest leads'
		 * actuals: it answers as far as two of its own origins were scored */
		while (r->horizon > 1 && scored_origins(&w, w.k0[r->method], (size_t)r->horizon) < 2) {
			r->horizon--;
			w.bucket[r->horizon] = -1;
			r->point[r->horizon] = NAN;
		}
	}
	r->origins = w.n_cv - w.k0[r->method];
	if (r->horizon < o->horizon)
		note_append(r,
			    "; answered %d of the %d %s asked: %zu %s of history leave no two backtest origins with"
			    " actuals further ahead",
			    r->horizon, o->horizon, unit_name(&w.c), n, unit_name(&w.c));
	for (size_t h = 0; h < (size_t)r->horizon; h++) {
		int b = w.bucket[h];
		r->point[h] = r->point[h] > 0 ? r->point[h] : 0;
		if (!r->bucket_first[b])
			r->bucket_first[b] = (int)h + 1;
		r->bucket_last[b] = (int)h + 1;
	}
	if (w.fc[r->method] && w.n_cv >= 1) {
		intervals(&w, r);
	} else {
		/* zero-width bands would claim certainty that nothing backs:
		 * the interval is unknown */
		gl_forecast_metrics_compute(NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, &r->cv);
		note_append(r, "; no backtest possible, so no intervals");
		for (size_t h = 0; h < (size_t)r->horizon; h++)
			r->lo95[h] = r->lo80[h] = r->hi80[h] = r->hi95[h] = r->q50[h] = NAN;
	}
out:
	for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++)
		free(w.fc[m]);
	free(w.dseas);
	free(w.vol);
	free(w.tmp);
	free(w.bucket);
	free(orig);
	free(x);
	if (rc)
		gl_forecast_result_fini(r);
	return rc;
}

/* ---- saturation days ---- */

int gl_forecast_sat_label(const struct gl_forecast_satday *day)
{
	return day->pending_minutes >= GL_FORECAST_SAT_MINUTES;
}

void gl_forecast_sat_features(const struct gl_forecast_satday *days, size_t d, double x[GL_FORECAST_SAT_NF])
{
	const struct gl_forecast_satday *p = &days[d - 1];
	int sat = 0, cnt = 0;
	for (size_t j = 1; j <= 7 && j <= d; j++) {
		sat += gl_forecast_sat_label(&days[d - j]);
		cnt++;
	}
	/* scaled to about [0, 1] so one step size suits every weight */
	x[0] = 1;
	x[1] = gl_forecast_sat_label(p);
	x[2] = log1p(p->pending_minutes) / 7;
	x[3] = log1p(p->pending_minutes_last3h) / 5;
	x[4] = cnt ? (double)sat / cnt : 0;
	x[5] = log1p(p->pending_minutes_last1h) / 4;
}

double gl_forecast_sat_prob(const struct gl_forecast_satmodel *m, const double x[GL_FORECAST_SAT_NF])
{
	double z = 0;
	for (int i = 0; i < GL_FORECAST_SAT_NF; i++)
		z += m->w[i] * x[i];
	return 1 / (1 + exp(-z));
}

struct sat_row {
	double x[GL_FORECAST_SAT_NF];
	int y;
	double count;
};

static int cmp_sat_row(const void *a, const void *b)
{
	const struct sat_row *p = a, *q = b;
	if (p->y != q->y)
		return p->y - q->y;
	for (int k = 0; k < GL_FORECAST_SAT_NF; k++)
		if (p->x[k] != q->x[k])
			return p->x[k] < q->x[k] ? -1 : 1;
	return 0;
}

int gl_forecast_sat_fit(const double *X, const int *y, size_t n, struct gl_forecast_satmodel *m,
			struct gl_err *err)
{
	size_t pos = 0, nu = 0;
	struct sat_row *u;
	memset(m, 0, sizeof *m);
	for (size_t i = 0; i < n; i++)
		pos += y[i] != 0;
	if (!n || !pos || pos == n)
		return gl_err_set(err, GL_EINVAL, "saturation model: %zu days, %zu saturated: nothing to learn", n, pos);
	/* Equal days (a calm queue's are all alike) enter the gradient once,
	 * with their count: the same descent at a fraction of the passes over
	 * the rows, which an API request over a fleet's queues needs */
	u = gl_xmalloc(sizeof *u * n);
	for (size_t i = 0; i < n; i++) {
		memcpy(u[i].x, X + i * GL_FORECAST_SAT_NF, sizeof u[i].x);
		u[i].y = y[i] ? 1 : 0;
		u[i].count = 1;
	}
	gl_qsort(u, n, sizeof *u, cmp_sat_row);
	for (size_t i = 0; i < n; i++)
		if (nu && !cmp_sat_row(&u[nu - 1], &u[i]))
			u[nu - 1].count++;
		else
			u[nu++] = u[i];
	/* Fixed-step gradient descent from zero, 20,000 steps: the weights the
	 * benchmark measured. It is not the maximum-likelihood fit (Newton's
	 * method reaches that and scores worse on Earth, docs/forecast.md): the
	 * fixed number of steps regularises. */
	for (int it = 0; it < 20000; it++) {
		double g[GL_FORECAST_SAT_NF] = {0};
		for (size_t i = 0; i < nu; i++) {
			double e = (gl_forecast_sat_prob(m, u[i].x) - u[i].y) * u[i].count;
			for (int k = 0; k < GL_FORECAST_SAT_NF; k++)
				g[k] += e * u[i].x[k];
		}
		for (int k = 0; k < GL_FORECAST_SAT_NF; k++)
			m->w[k] -= 0.5 * g[k] / (double)n;
	}
	free(u);
	return 0;
}

/* The queue-days [from, to) (each queue from its own start + 1: features
 * read the day before) as rows of X and labels y; returns the count. */
static size_t sat_rows(const struct gl_forecast_satday *days, size_t nq, size_t nd, const size_t *start, size_t from,
		       size_t to, double *X, int *y)
{
	size_t n = 0;
	for (size_t q = 0; q < nq; q++)
		for (size_t d = from > start[q] + 1 ? from : start[q] + 1; d < to && d < nd; d++) {
			if (X)
				gl_forecast_sat_features(days + q * nd, d, X + n * GL_FORECAST_SAT_NF);
			if (y)
				y[n] = gl_forecast_sat_label(&days[q * nd + d]);
			n++;
		}
	return n;
}

int gl_forecast_sat_backtest(const struct gl_forecast_satday *days, size_t nq, size_t nd, const size_t *start,
			     size_t test_from, struct gl_forecast_satscore *s, struct gl_err *err)
{
	size_t ntr = sat_rows(days, nq, nd, start, 1, test_from, NULL, NULL), nte = 0;
	double *X = gl_xmalloc(sizeof(double) * GL_FORECAST_SAT_NF * (ntr ? ntr : 1));
	int *y = gl_xmalloc(sizeof(int) * (ntr ? ntr : 1)), rc;
	long tp = 0, fp = 0, fn = 0, tn = 0, ptp = 0, pfp = 0, pfn = 0, ptn = 0;
	struct gl_forecast_satmodel m;

	memset(s, 0, sizeof *s);
	sat_rows(days, nq, nd, start, 1, test_from, X, y);
	if ((rc = gl_forecast_sat_fit(X, y, ntr, &m, err)))
		goto out;
	for (size_t q = 0; q < nq; q++)
		for (size_t d = test_from > start[q] + 1 ? test_from : start[q] + 1; d < nd; d++) {
			double x[GL_FORECAST_SAT_NF];
			int t = gl_forecast_sat_label(&days[q * nd + d]), ps = gl_forecast_sat_label(&days[q * nd + d - 1]);
			gl_forecast_sat_features(days + q * nd, d, x);
			int pr = gl_forecast_sat_prob(&m, x) >= 0.5;
			tp += pr && t, fp += pr && !t, fn += !pr && t, tn += !pr && !t;
			ptp += ps && t, pfp += ps && !t, pfn += !ps && t, ptn += !ps && !t;
			nte++;
		}
	if (!nte) {
		rc = gl_err_set(err, GL_EINVAL, "saturation backtest: no day from %zu of %zu to score", test_from, nd);
		goto out;
	}
	s->days = (long)nte;
	s->saturated = tp + fn;
	s->accuracy = (double)(tp + tn) / (double)nte;
	s->f1 = 2 * tp + fp + fn ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : NAN;
	s->persist_accuracy = (double)(ptp + ptn) / (double)nte;
	s->persist_f1 = 2 * ptp + pfp + pfn ? 2.0 * (double)ptp / (double)(2 * ptp + pfp + pfn) : NAN;
out:
	free(X);
	free(y);
	return rc;
}

int gl_forecast_sat_next(const struct gl_forecast_satday *days, size_t nq, size_t nd, const size_t *start, double *p,
			 int *fitted, struct gl_err *err)
{
	size_t n = sat_rows(days, nq, nd, start, 1, nd, NULL, NULL), pos = 0, any = 0;
	double *X = gl_xmalloc(sizeof(double) * GL_FORECAST_SAT_NF * (n ? n : 1));
	int *y = gl_xmalloc(sizeof(int) * (n ? n : 1)), rc = 0;
	struct gl_forecast_satmodel m;
	struct gl_err e2 = {0};

	*fitted = 0;
	sat_rows(days, nq, nd, start, 1, nd, X, y);
	for (size_t i = 0; i < n; i++)
		pos += y[i] != 0;
	for (size_t q = 0; q < nq; q++)
		any += start[q] < nd;
	if (!any) {
		rc = gl_err_set(err, GL_EINVAL, "no day with demand in the window");
		goto out;
	}
	if (!n) {
		/* the rate of nothing would say 0.5 */
		rc = gl_err_set(err, GL_EINVAL, "too little history: no day with demand follows another in the window");
		goto out;
	}
	*fitted = n && pos && pos < n && !gl_forecast_sat_fit(X, y, n, &m, &e2);
	for (size_t q = 0; q < nq; q++) {
		double x[GL_FORECAST_SAT_NF];
		if (start[q] >= nd) {
			p[q] = NAN;
			continue;
		}
		if (!*fitted) {
			p[q] = ((double)pos + 1) / ((double)n + 2);
			continue;
		}
		gl_forecast_sat_features(days + q * nd, nd, x);
		p[q] = gl_forecast_sat_prob(&m, x);
	}
out:
	free(X);
	free(y);
	return rc;
}

double gl_forecast_prob_above(double threshold, double lo95, double lo80, double point, double hi80, double hi95)
{
	const double v[5] = {lo95, lo80, point, hi80, hi95}, q[5] = {0.025, 0.1, 0.5, 0.9, 0.975};
	if (isnan(lo95) || isnan(lo80) || isnan(hi80) || isnan(hi95))
		return NAN;
	if (hi95 <= lo95) /* a zero-width forecast is sure either way */
		return threshold < point ? 1 : 0;
	if (threshold < v[0])
		return 1 - q[0] * (v[0] > 0 && threshold > 0 ? threshold / v[0] : 0); /* below the 2.5 % point */
	for (int i = 0; i < 4; i++)
		if (threshold < v[i + 1]) {
			double span = v[i + 1] - v[i];
			double cdf = q[i] + (span > 0 ? (threshold - v[i]) / span : 0) * (q[i + 1] - q[i]);
			return 1 - cdf;
		}
	return 0; /* beyond the 97.5 % point: treated as out of reach */
}

double gl_forecast_value_above(double p, double lo95, double lo80, double point, double hi80, double hi95)
{
	const double v[5] = {lo95, lo80, point, hi80, hi95}, q[5] = {0.025, 0.1, 0.5, 0.9, 0.975};
	double cdf = 1 - p;
	if (isnan(lo95) || isnan(lo80) || isnan(point) || isnan(hi80) || isnan(hi95) || !(cdf >= q[0] && cdf <= q[4]))
		return NAN;
	for (int i = 0; i < 4; i++)
		if (cdf <= q[i + 1])
			return v[i] + (cdf - q[i]) / (q[i + 1] - q[i]) * (v[i + 1] - v[i]);
	return v[4];
}
