/* Demand forecasting (pure). See include/gl/forecast.h for the contract and
 * docs/forecast.md for the methods and the measured accuracy. */
#include "gl/forecast.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const method_names[GL_FORECAST_METHOD_COUNT] = {
	"naive", "snaive_day", "snaive_week", "median_day", "median_week", "hw",
	"hw_log", "combo", "median_pool", "ses", "ensemble",
};

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

/* Median of v[0..n) (n >= 1), reordering v; n is small (k <= a few dozen). */
static double median_small(double *v, int n)
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

/* The pool for slot t from x[0..o): slots t - j*pd + d for j in 1..k,
 * |d| <= w, of the same day type as t when the weekday is known, into v;
 * returns how many. The day type is worked out once per day, not per slot
 * (this loop is most of the cost of a fit). */
static int pool_gather(const double *x, size_t o, long t, const struct fc_ctx *c, int k, int w, double *v)
{
	int cnt = 0, split = c->wd0 >= 0;
	long pd = c->pd, day_t = t / pd, slot = t % pd;
	int we = split ? day_is_weekend(c, day_t) : 0;
	for (int j = 1; j <= k; j++) {
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
 * over all hours. */
static double quantile_select(double *v, size_t n, double q);
static int pool_bands(const double *x, size_t o, long t, const struct fc_ctx *c, int k, int w, double *v,
		      double b[4])
{
	static const double lv[4] = {0.025, 0.1, 0.9, 0.975};
	int cnt = pool_gather(x, o, t, c, k, w, v);
	if (!cnt)
		return -1;
	for (int i = 0; i < 4; i++)
		b[i] = quantile_select(v, (size_t)cnt, lv[i]);
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
	return cnt ? median_small(v, cnt) : NAN;
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
	const double *x;
	size_t n;
	const size_t *orig;
	int norig, n_cv;
	struct fc_ctx c;
	double *dseas, *wseas, *tmp;
	double *fc[GL_FORECAST_METHOD_COUNT]; /* norig*h each, NULL when m cannot run */
	double *vol; /* per origin: the daily seasonal naive's MAE over the week before it (> 0) */
};

static double cv_abs_error(const struct fc_work *w, const double *f)
{
	double s = 0;
	for (int k = 0; k < w->n_cv; k++)
		for (int h = 0; h < w->c.h; h++) {
			size_t t = w->orig[k] + (size_t)h;
			if (t < w->n && !isnan(w->x[t]))
				s += fabs(w->x[t] - f[(size_t)k * (size_t)w->c.h + (size_t)h]);
		}
	return s;
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
			double e = w->n_cv ? cv_abs_error(w, w->tmp) : 0;
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
			double e = w->n_cv ? cv_abs_error(w, w->tmp) : 0;
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
			out[i] = median_small(v, k);
		}
		return 0;
	}
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

/* Interval offsets from the backtest errors of one method: additive
 * (y - f) or on the log scale (log1p y - log1p f), the latter fitting
 * bursty series whose errors grow with the level. */
struct ivq {
	int logscale;  /* 0 additive, 1 log scale, 2 additive in units of the origin's recent volatility */
	double q[4]; /* .025 .1 .9 .975 */
};
static const double iv_levels[4] = {0.025, 0.1, 0.9, 0.975};

static void iv_apply(const struct ivq *iv, double f, double vol, double out[4])
{
	for (int i = 0; i < 4; i++) {
		double v = iv->logscale == 1 ? expm1(log1p(f) + iv->q[i]) : f + iv->q[i] * (iv->logscale == 2 ? vol : 1);
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

/* Quantiles of the errors at the scored origins except `skip` (-1: none). */
static int iv_fit(const struct fc_work *w, const double *f, int logscale, int skip, double *buf, struct ivq *iv)
{
	size_t cnt = 0, H = (size_t)w->c.h;
	for (int k = 0; k < w->n_cv; k++) {
		if (k == skip)
			continue;
		for (size_t h = 0; h < H; h++) {
			size_t t = w->orig[k] + h;
			if (t >= w->n || isnan(w->x[t]))
				continue;
			double fv = f[(size_t)k * H + h];
			buf[cnt++] = logscale == 1   ? log1p(w->x[t]) - log1p(fv)
				     : logscale == 2 ? (w->x[t] - fv) / w->vol[k]
						     : w->x[t] - fv;
		}
	}
	iv->logscale = logscale;
	if (!cnt) {
		memset(iv->q, 0, sizeof iv->q);
		return -1;
	}
	for (int i = 0; i < 4; i++)
		iv->q[i] = quantile_select(buf, cnt, iv_levels[i]);
	return 0;
}

/* An error of the backtest and the origin it came from. */
struct orig_err {
	double e;
	int k;
};

static int cmp_orig_err(const void *pa, const void *pb)
{
	double a = ((const struct orig_err *)pa)->e, b = ((const struct orig_err *)pb)->e;
	return (a > b) - (a < b);
}

/* The interval quantiles of the sorted errors without those of origin skip
 * (kept >= 1: how many remain): the same order statistics and interpolation
 * as quantile_select on that subset, found in one walk. The ranks wanted are
 * not in order when few errors remain (under 12: the 2.5 % level's upper
 * neighbour, rank 1, comes after the 10 % level's rank 0), so each rank is
 * looked up among all eight. */
static void loo_quantiles(const struct orig_err *s, size_t n, int skip, size_t kept, double q[4])
{
	size_t want[8], last = 0, rank = 0;
	double val[8];
	for (int l = 0; l < 4; l++) {
		size_t i = (size_t)(iv_levels[l] * (double)(kept - 1));
		want[2 * l] = i;
		want[2 * l + 1] = i + 1 < kept ? i + 1 : i;
	}
	for (int g = 0; g < 8; g++)
		if (want[g] > last)
			last = want[g];
	for (size_t j = 0; j < n && rank <= last; j++) {
		if (s[j].k == skip)
			continue;
		for (int g = 0; g < 8; g++)
			if (want[g] == rank)
				val[g] = s[j].e;
		rank++;
	}
	for (int l = 0; l < 4; l++) {
		double pos = iv_levels[l] * (double)(kept - 1), lo = val[2 * l], hi = val[2 * l + 1];
		q[l] = lo + (pos - (double)want[2 * l]) * (hi - lo);
	}
}

/* Honest backtest metrics: each origin's intervals come from the errors at
 * the other origins (leave one origin out), so coverage is not the
 * tautological 80 % of quantiles scored on their own sample. The errors are
 * sorted once; each origin's quantiles are then one walk over them. */
static void cv_metrics(const struct fc_work *w, const double *f, int logscale, double scale,
		       struct gl_forecast_metrics *m)
{
	size_t H = (size_t)w->c.h, N = H * (size_t)w->n_cv, ne = 0;
	double *ya = gl_xmalloc(sizeof(double) * N * 6);
	double *fa = ya + N, *l8 = fa + N, *h8 = l8 + N, *l9 = h8 + N, *h9 = l9 + N;
	struct orig_err *se = gl_xmalloc(sizeof *se * (N ? N : 1));
	size_t *per = gl_xcalloc((size_t)w->n_cv + 1, sizeof *per);
	for (int k = 0; k < w->n_cv; k++)
		for (size_t h = 0; h < H; h++) {
			size_t t = w->orig[k] + h;
			double fv = f[(size_t)k * H + h];
			if (t >= w->n || isnan(w->x[t]))
				continue;
			se[ne].e = logscale == 1   ? log1p(w->x[t]) - log1p(fv)
				   : logscale == 2 ? (w->x[t] - fv) / w->vol[k]
						   : w->x[t] - fv;
			se[ne++].k = k;
			per[k]++;
		}
	qsort(se, ne, sizeof *se, cmp_orig_err);
	for (int k = 0; k < w->n_cv; k++) {
		struct ivq iv;
		int skip = w->n_cv > 1 ? k : -1;
		size_t kept = ne - (skip >= 0 ? per[k] : 0);
		iv.logscale = logscale;
		if (kept)
			loo_quantiles(se, ne, skip, kept, iv.q);
		for (size_t h = 0; h < H; h++) {
			size_t i = (size_t)k * H + h, t = w->orig[k] + h;
			double b[4];
			ya[i] = t < w->n ? w->x[t] : NAN;
			fa[i] = f[i];
			if (kept)
				iv_apply(&iv, f[i], w->vol[k], b);
			else
				b[0] = b[1] = b[2] = b[3] = f[i];
			l9[i] = b[0], l8[i] = b[1], h8[i] = b[2], h9[i] = b[3];
		}
	}
	gl_forecast_metrics_compute(ya, fa, l8, h8, l9, h9, N, scale, m);
	free(per);
	free(se);
	free(ya);
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

/* Backtest metrics of the pooled median with its pool-quantile bands. */
static int pool_cv(const struct fc_work *w, const double *f, double scale, struct gl_forecast_metrics *m)
{
	size_t H = (size_t)w->c.h, N = H * (size_t)w->n_cv;
	double *ya = gl_xmalloc(sizeof(double) * (N ? N : 1) * 5), v[512];
	double *l8 = ya + N, *h8 = l8 + N, *l9 = h8 + N, *h9 = l9 + N;
	int rc = 0;
	for (size_t i = 0; i < N && !rc; i++) {
		size_t o = w->orig[i / H], t = o + i % H;
		double b[4];
		ya[i] = t < w->n ? w->x[t] : NAN;
		if (pool_bands(w->x, o, (long)t, &w->c, w->pool_k, w->pool_w, v, b)) {
			rc = -1;
			break;
		}
		band_nest(f[i], b);
		l9[i] = b[0], l8[i] = b[1], h8[i] = b[2], h9[i] = b[3];
	}
	if (!rc)
		gl_forecast_metrics_compute(ya, f, l8, h8, l9, h9, N, scale, m);
	free(ya);
	return rc;
}

/* Point accuracy of a method over the backtest origins (no intervals:
 * those are built for the chosen method only). */
static void cv_point_metrics(const struct fc_work *w, const double *f, double scale, struct gl_forecast_metrics *m)
{
	size_t H = (size_t)w->c.h, N = H * (size_t)w->n_cv;
	double *ya = gl_xmalloc(sizeof(double) * (N ? N : 1));
	for (size_t i = 0; i < N; i++) {
		size_t t = w->orig[i / H] + i % H;
		ya[i] = t < w->n ? w->x[t] : NAN;
	}
	gl_forecast_metrics_compute(ya, f, NULL, NULL, NULL, NULL, N, scale, m);
	free(ya);
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
	r->point = r->lo80 = r->hi80 = r->lo95 = r->hi95 = NULL;
}

static void result_alloc(struct gl_forecast_result *r, int horizon)
{
	size_t H = (size_t)horizon;
	r->horizon = horizon;
	r->point = gl_xcalloc(5 * H, sizeof(double));
	r->lo80 = r->point + H;
	r->hi80 = r->lo80 + H;
	r->lo95 = r->hi80 + H;
	r->hi95 = r->lo95 + H;
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

int gl_forecast_fit(const double *y, size_t n, const struct gl_forecast_opts *o, struct gl_forecast_result *r,
		    struct gl_err *err)
{
	struct fc_work w;
	size_t *orig = NULL;
	double *x = NULL, *buf = NULL;
	int rc = 0, norig_max, stride, n_cv = 0;
	size_t H, min_train, scored_ahead = 0; /* > 0: origins scored on fewer than H slots ahead */

	memset(r, 0, sizeof *r);
	memset(&w, 0, sizeof w);
	r->method = -1;
	r->baseline = -1;
	if ((rc = check_opts(o, err)))
		return rc;
	ctx_init(&w.c, o);
	H = (size_t)w.c.h;
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

	/* origins, oldest first, each with a full horizon of actuals; then the final one */
	orig = gl_xmalloc(sizeof(size_t) * ((size_t)norig_max + 1));
	for (int k = 0; k < norig_max; k++) {
		long oo = (long)n - (long)H - (long)k * stride;
		if (oo < (long)min_train)
			break;
		n_cv++;
	}
	for (int k = 0; k < n_cv; k++)
		orig[k] = n - H - (size_t)(n_cv - 1 - k) * (size_t)stride;
	if (n_cv < 2 && n >= 2 * (size_t)w.c.pw && n >= 14) {
		/* History long enough to trust, but not for a horizon this far (a
		 * year of weeks asked a year ahead): score each origin on the slots
		 * ahead that have happened. Without it the forecast had no backtest
		 * and claimed zero-width intervals a year out. */
		n_cv = 0;
		for (int k = 0; k < norig_max && (long)n - (long)(k + 1) * stride >= (long)min_train; k++)
			n_cv++;
		for (int k = 0; k < n_cv; k++)
			orig[k] = n - (size_t)(n_cv - k) * (size_t)stride;
		if (n_cv >= 2)
			scored_ahead = n - orig[0];
	}
	orig[n_cv] = n;
	w.x = x;
	w.n = n;
	w.orig = orig;
	w.norig = n_cv + 1;
	w.n_cv = n_cv;
	w.vol = gl_xmalloc(sizeof(double) * (size_t)w.norig);
	for (int k = 0; k < w.norig; k++) {
		/* recent volatility: bursty stretches get wider bands, calm ones
		 * narrower, than one error distribution for the whole history */
		size_t oo = orig[k], pd = (size_t)w.c.pd, from = oo > 7 * pd ? oo - 7 * pd : 0, cnt = 0;
		double sum = 0;
		for (size_t t = from < pd ? pd : from; t < oo; t++)
			if (!isnan(x[t]) && !isnan(x[t - pd])) {
				sum += fabs(x[t] - x[t - pd]);
				cnt++;
			}
		w.vol[k] = cnt && sum > 0 ? sum / (double)cnt : r->scale > 0 ? r->scale : 1;
	}
	w.dseas = gl_xcalloc((size_t)w.c.pd + (size_t)w.c.pw, sizeof(double));
	w.wseas = w.dseas + w.c.pd;
	w.tmp = gl_xmalloc(sizeof(double) * H * (size_t)w.norig);
	buf = gl_xmalloc(sizeof(double) * (H * (size_t)w.norig + 1));

	if (n < 2 * (size_t)w.c.pw || n < 14 || n_cv < 2) {
		/* short history: no selection can be trusted */
		r->fallback = 1;
		r->method = GL_FORECAST_MEDIAN_DAY;
		const char *unit = w.c.pd == 1 && w.c.pw == 1 ? "weeks" : "days";
		if (n >= 2 * (size_t)w.c.pw && n >= 14)
			/* enough history, but not for this horizon: say which */
			snprintf(r->note, sizeof r->note,
				 "history too short for the horizon (%zu slots leave %d backtest origins for %d slots ahead;"
				 " needs two): median of the same slot over the last %d %s there are",
				 n, n_cv, (int)H, w.c.kd, unit);
		else
			snprintf(r->note, sizeof r->note,
				 "short history (%zu slot%s, %d backtest origin%s; needs two weeks): median of the same slot"
				 " over the last %d %s there are",
				 n, n == 1 ? "" : "s", n_cv, n_cv == 1 ? "" : "s", w.c.kd, unit);
		fallback_point(x, n, &w.c, r->point);
		if (o->method != GL_FORECAST_AUTO && o->method != GL_FORECAST_MEDIAN_DAY)
			snprintf(r->note, sizeof r->note, "short history (%zu slot%s): %s cannot run", n,
				 n == 1 ? "" : "s", gl_forecast_method_name(o->method));
		if (n_cv >= 1) {
			double *f = gl_xmalloc(sizeof(double) * H * (size_t)w.norig);
			for (int k = 0; k < w.norig; k++)
				fallback_point(x, orig[k], &w.c, f + (size_t)k * H);
			w.fc[GL_FORECAST_MEDIAN_DAY] = f;
		}
	} else {
		for (;;) {
			for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++) {
				double *f = gl_xmalloc(sizeof(double) * H * (size_t)w.norig);
				if (run_method(&w, m, f)) {
					free(f);
					continue;
				}
				w.fc[m] = f;
			}
			/* a method asked for by name that needs more history than the
			 * oldest origins have: drop those origins rather than refuse */
			if (o->method == GL_FORECAST_AUTO || w.fc[o->method] || w.n_cv <= 1)
				break;
			for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++) {
				free(w.fc[m]);
				w.fc[m] = NULL;
			}
			w.orig++;
			w.norig--;
			w.n_cv--;
			n_cv--;
		}
		/* choose: lowest backtest MAE; strict comparisons in method order
		 * keep the simpler method on ties, so a model never wins by not
		 * beating the best baseline */
		double best = INFINITY, bestb = INFINITY;
		for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++) {
			if (!w.fc[m])
				continue;
			double e = cv_abs_error(&w, w.fc[m]);
			if (m < GL_FORECAST_FIRST_MODEL && e < bestb) {
				bestb = e;
				r->baseline = m;
			}
			if (o->method == GL_FORECAST_AUTO ? e < best : m == o->method) {
				best = e;
				r->method = m;
			}
		}
		if (r->method < 0) {
			rc = gl_err_set(err, GL_EINVAL, "forecast: %s cannot run on %zu slots of history",
					gl_forecast_method_name(o->method), n);
			goto out;
		}
		snprintf(r->note, sizeof r->note, "%s: lowest backtest MAE over %d origins (best baseline %s)",
			 gl_forecast_method_name(r->method), n_cv, gl_forecast_method_name(r->baseline));
		if (o->method != GL_FORECAST_AUTO)
			snprintf(r->note, sizeof r->note, "%s: as asked", gl_forecast_method_name(r->method));
		if (scored_ahead) {
			size_t len = strlen(r->note);
			const char *unit = w.c.pd == 1 ? (w.c.pw == 1 ? "weeks" : "days") : w.c.pd == 24 ? "hours" : "slots";
			snprintf(r->note + len, sizeof r->note - len,
				 "; backtest scored up to %zu of the %zu %s ahead, as the history holds no later"
				 " actuals: later %s' intervals reuse those errors",
				 /* the oldest origin left: a method asked by name may
				  * have dropped the first ones */
				 n - w.orig[0] < H ? n - w.orig[0] : H, H, unit, unit);
		}
		memcpy(r->point, w.fc[r->method] + (size_t)n_cv * H, sizeof(double) * H);
	}
	r->origins = n_cv;

	/* intervals: the error quantiles of the chosen method's backtest, on the
	 * scale (additive or log) whose intervals were sharper there */
	{
		const double *f = w.fc[r->method];
		struct ivq best_iv = {0};
		struct gl_forecast_metrics mm_pool;
		double best_pb = INFINITY, v[512];
		int use_pool = 0;
		if (f && n_cv >= 1) {
			for (int ls = 0; ls < 3; ls++) {
				struct ivq iv;
				struct gl_forecast_metrics mm;
				if (iv_fit(&w, f, ls, -1, buf, &iv))
					continue;
				cv_metrics(&w, f, ls, r->scale > 0 ? r->scale : 1, &mm);
				double pb = mm.pinball80;
				if (pb < best_pb) {
					best_pb = pb;
					best_iv = iv;
					r->cv = mm;
				}
			}
			if (r->method == GL_FORECAST_MEDIAN_POOL && !r->fallback &&
			    pool_cv(&w, f, r->scale > 0 ? r->scale : 1, &mm_pool) == 0 && mm_pool.pinball80 < best_pb) {
				use_pool = 1;
				r->cv = mm_pool;
			}
			if (r->scale <= 0)
				r->cv.mase = r->cv.pinball80 = NAN;
			for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++)
				if (w.fc[m])
					cv_point_metrics(&w, w.fc[m], r->scale, &r->cv_method[m]);
			r->cv_method[r->method] = r->cv;
		} else {
			gl_forecast_metrics_compute(NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, &r->cv);
			strncat(r->note, "; no backtest possible, so no intervals",
				sizeof r->note - strlen(r->note) - 1);
		}
		for (size_t h = 0; h < H; h++) {
			double b[4];
			double p = r->point[h] > 0 ? r->point[h] : 0;
			r->point[h] = p;
			if (!f || n_cv < 1) {
				/* zero-width bands would claim certainty that nothing
				 * backs: the interval is unknown */
				r->lo95[h] = r->lo80[h] = r->hi80[h] = r->hi95[h] = NAN;
				continue;
			}
			iv_apply(&best_iv, p, w.vol[n_cv], b);
			if (use_pool && pool_bands(x, n, (long)(n + h), &w.c, w.pool_k, w.pool_w, v, b) == 0)
				band_nest(p, b);
			r->lo95[h] = b[0], r->lo80[h] = b[1], r->hi80[h] = b[2], r->hi95[h] = b[3];
		}
	}
out:
	for (int m = 0; m < GL_FORECAST_METHOD_COUNT; m++)
		free(w.fc[m]);
	free(w.dseas);
	free(w.vol);
	free(w.tmp);
	free(buf);
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
	qsort(u, n, sizeof *u, cmp_sat_row);
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
