/* Trend forecasts of daily and weekly totals (pure). See include/gl/fctrend.h
 * and docs/forecast.md ("Trend"). */
#include "gl/fctrend.h"
#include "gl/forecast.h"

#include <math.h>
#include <string.h>

#define SEASON_CYCLES 8   /* weeks the weekday effects are the median over */
#define Z_MAX 34.5        /* log(1 + 1e15): an exponential line is cut there */

size_t gl_fctrend_min_history(int period)
{
	return period > 1 ? 4 * (size_t)period : 12;
}

static double zval(double v, int logt)
{
	if (!(v > 0))
		v = 0;
	return logt ? log1p(v) : v;
}

/* The additive effect of each phase (t mod period) on z: the median over
 * the last weeks of its residual from a straight line through those weeks
 * (a week's own mean would take a trend within the week for a weekday
 * effect), centred; the line and the effects are fitted in turn, eight
 * times (backfitting), as a weekly pattern tilts a line through it. A
 * median, so one burst day does not become a weekday. */
static void season_effects(const double *x, size_t n, int period, int logt, double s[7])
{
	double res[SEASON_CYCLES][7], v[SEASON_CYCLES];
	size_t nc = 0, len, from;
	memset(s, 0, sizeof(double) * 7);
	if (period <= 1 || period > 7)
		return;
	nc = n / (size_t)period < SEASON_CYCLES ? n / (size_t)period : SEASON_CYCLES;
	if (nc < 2)
		return;
	len = nc * (size_t)period;
	from = n - len;
	for (int pass = 0; pass < 8; pass++) {
		double tot = 0, s0 = 0, s1 = 0, s2 = 0, z0 = 0, z1 = 0;
		for (size_t i = 0; i < len; i++) {
			double z = zval(x[from + i], logt) - s[(from + i) % (size_t)period];
			s0 += 1, s1 += (double)i, s2 += (double)i * (double)i, z0 += z, z1 += (double)i * z;
		}
		double b = (s0 * z1 - s1 * z0) / (s0 * s2 - s1 * s1), a = (z0 - b * s1) / s0;
		for (size_t i = 0; i < len; i++)
			res[i / (size_t)period][(from + i) % (size_t)period] = zval(x[from + i], logt) - a - b * (double)i;
		for (int p = 0; p < period; p++) {
			for (size_t j = 0; j < nc; j++)
				v[j] = res[j][p];
			s[p] = gl_forecast_median(v, (int)nc);
			tot += s[p];
		}
		for (int p = 0; p < period; p++)
			s[p] -= tot / period;
	}
}

/* ---- a line with at most one level shift ---- */

/* Weighted sums of the regression z_i = a + b i (+ c [i >= tau]). */
struct lsums {
	double s0, s1, s2, z0, z1, zz;
};

static int solve3(double m[3][3], double r[3], double x[3])
{
	for (int c = 0; c < 3; c++) {
		int p = c;
		for (int i = c + 1; i < 3; i++)
			if (fabs(m[i][c]) > fabs(m[p][c]))
				p = i;
		if (fabs(m[p][c]) < 1e-12)
			return -1;
		for (int j = 0; j < 3; j++) {
			double t = m[c][j];
			m[c][j] = m[p][j];
			m[p][j] = t;
		}
		double t = r[c];
		r[c] = r[p];
		r[p] = t;
		for (int i = c + 1; i < 3; i++) {
			double f = m[i][c] / m[c][c];
			for (int j = c; j < 3; j++)
				m[i][j] -= f * m[c][j];
			r[i] -= f * r[c];
		}
	}
	for (int c = 2; c >= 0; c--) {
		double s = r[c];
		for (int j = c + 1; j < 3; j++)
			s -= m[c][j] * x[j];
		x[c] = s / m[c][c];
	}
	return 0;
}

/* SSE of the fit without a shift (suf NULL) or with one whose suffix sums
 * are suf; th = a, b, c. Returns INFINITY when the system is singular. */
static double line_sse(const struct lsums *w, const struct lsums *suf, double th[3])
{
	double sse;
	if (!suf) {
		double det = w->s0 * w->s2 - w->s1 * w->s1;
		if (w->s0 <= 0 || det <= 1e-9 * (w->s0 * w->s2 + 1))
			return INFINITY;
		th[1] = (w->s0 * w->z1 - w->s1 * w->z0) / det;
		th[0] = (w->z0 - th[1] * w->s1) / w->s0;
		th[2] = 0;
		sse = w->zz - th[0] * w->z0 - th[1] * w->z1;
	} else {
		double m[3][3] = {{w->s0, w->s1, suf->s0}, {w->s1, w->s2, suf->s1}, {suf->s0, suf->s1, suf->s0}};
		double r[3] = {w->z0, w->z1, suf->z0}, r0[3] = {w->z0, w->z1, suf->z0};
		if (solve3(m, r, th))
			return INFINITY;
		sse = w->zz - th[0] * r0[0] - th[1] * r0[1] - th[2] * r0[2];
	}
	return sse > 0 ? sse : 0;
}

static void lsums_add(struct lsums *s, double wt, double i, double z)
{
	s->s0 += wt;
	s->s1 += wt * i;
	s->s2 += wt * i * i;
	s->z0 += wt * z;
	s->z1 += wt * i * z;
	s->zz += wt * z * z;
}

/* Fits z[0..m) with weights wt: the line, and the line with the best
 * single shift at least minseg slots from either end, kept when it
 * explains enough: n log(sse0 / sse1) > 3 log n (BIC's two extra
 * parameters, and more, as the shift's place was searched for). */
static void line_fit(const double *z, const double *wt, size_t m, size_t minseg, double th[3], long *tau)
{
	struct lsums all = {0}, suf = {0};
	double best = INFINITY, tb[3], sse0;
	long bt = -1;
	for (size_t i = 0; i < m; i++)
		lsums_add(&all, wt[i], (double)i, z[i]);
	sse0 = line_sse(&all, NULL, th);
	*tau = -1;
	if (!isfinite(sse0)) {
		/* too few weighted points for a line: the level */
		th[0] = all.s0 > 0 ? all.z0 / all.s0 : 0;
		th[1] = th[2] = 0;
		return;
	}
	for (size_t i = m; i-- > minseg;) {
		lsums_add(&suf, wt[i], (double)i, z[i]);
		if (m - i < minseg)
			continue;
		double t3[3], e = line_sse(&all, &suf, t3);
		if (e < best) {
			best = e;
			bt = (long)i;
			memcpy(tb, t3, sizeof tb);
		}
	}
	if (bt < 0 || !(sse0 > 1e-12 * (all.zz + 1e-300)))
		return;
	double n = all.s0, e1 = best > 1e-12 * sse0 ? best : 1e-12 * sse0;
	if (n > 2 && n * log(sse0 / e1) > 3 * log(n)) {
		memcpy(th, tb, sizeof tb);
		*tau = bt;
	}
}

static double fitted(const double th[3], long tau, size_t i)
{
	return th[0] + th[1] * (double)i + (tau >= 0 && (long)i >= tau ? th[2] : 0);
}

/* The median line: least absolute deviations, by reweighted least squares
 * with the shift (if any) where the least-squares search put it. A 50 %
 * saturation date is where the median crosses capacity, and demand's
 * spread is rarely symmetric (a week's peak, bursts), so the mean line
 * crossed it weeks off. */
static void lad_refine(const double *z, const double *keep, size_t m, long tau, double th[3])
{
	double delta = 0;
	for (size_t i = 0; i < m; i++)
		delta += fabs(z[i]);
	delta = 1e-6 * (1 + delta / (double)(m ? m : 1));
	for (int it = 0; it < 50; it++) {
		struct lsums all = {0}, suf = {0};
		double t3[3];
		for (size_t i = 0; i < m; i++) {
			double r = fabs(z[i] - fitted(th, tau, i)), w = keep[i] / (r > delta ? r : delta);
			lsums_add(&all, w, (double)i, z[i]);
			if (tau >= 0 && (long)i >= tau)
				lsums_add(&suf, w, (double)i, z[i]);
		}
		if (!isfinite(line_sse(&all, tau >= 0 ? &suf : NULL, t3)))
			break;
		memcpy(th, t3, sizeof t3);
	}
}

static int line_forecast(int logt, const double *x, size_t n, int period, size_t window, int h, double *out,
			 struct gl_fctrend_fit *fit)
{
	size_t from = n > window ? n - window : 0, m = n - from, minseg = period > 1 ? 2 * (size_t)period : 8;
	double s[7], th[3], z[512] = {0}, wt[512] = {0}, r[512];
	long tau;
	if (m > 512)
		from = n - 512, m = 512;
	season_effects(x, n, period, logt, s);
	for (size_t i = 0; i < m; i++) {
		size_t t = from + i;
		z[i] = zval(x[t], logt) - (period > 1 ? s[t % (size_t)period] : 0);
		wt[i] = 1;
	}
	line_fit(z, wt, m, minseg, th, &tau);
	/* bursts: the days far from the first fit are left out of the second */
	{
		double mad;
		for (size_t i = 0; i < m; i++)
			r[i] = fabs(z[i] - fitted(th, tau, i));
		memcpy(wt, r, sizeof(double) * m);
		mad = gl_forecast_median(wt, (int)m);
		for (size_t i = 0; i < m; i++)
			wt[i] = mad > 0 && r[i] > 3.5 * 1.4826 * mad ? 0 : 1;
		if (mad > 0)
			line_fit(z, wt, m, minseg, th, &tau);
		for (size_t i = 0; i < m; i++)
			wt[i] = 1;
		lad_refine(z, wt, m, tau, th);
	}
	for (int k = 0; k < h; k++) {
		size_t t = n + (size_t)k;
		double v = fitted(th, tau, m + (size_t)k) + (period > 1 ? s[t % (size_t)period] : 0);
		if (logt)
			v = expm1(v < Z_MAX ? v : Z_MAX);
		out[k] = v > 0 ? v : 0;
	}
	if (fit) {
		fit->level = fitted(th, tau, m - 1);
		fit->slope = th[1];
		fit->phi = 1;
		fit->shift_at = tau >= 0 ? (long)from + tau : -1;
		fit->shift = tau >= 0 ? th[2] : 0;
	}
	return 0;
}

/* ---- damped trend ---- */

static const double d_alpha[] = {0.1, 0.2, 0.3, 0.5, 0.8};
static const double d_beta[] = {0.02, 0.1, 0.3}; /* of alpha */
static const double d_phi[] = {0.8, 0.9, 0.95, 0.98};

static int damped_forecast(const double *x, size_t n, int period, size_t window, int h, double *out,
			   struct gl_fctrend_fit *fit)
{
	size_t from = n > window ? n - window : 0, m = n - from, q = period > 1 ? (size_t)period : 4;
	double s[7], u[512], best = INFINITY, bl = 0, bb = 0, bphi = 1;
	if (m > 512)
		from = n - 512, m = 512;
	if (m < 2 * q + 2)
		return -1;
	season_effects(x, n, period, 0, s);
	for (size_t i = 0; i < m; i++)
		u[i] = zval(x[from + i], 0) - (period > 1 ? s[(from + i) % (size_t)period] : 0);
	double m0 = 0, m1 = 0;
	for (size_t i = 0; i < q; i++) {
		m0 += u[i];
		m1 += u[q + i];
	}
	m0 /= (double)q;
	m1 /= (double)q;
	double b0 = (m1 - m0) / (double)q, l0 = m0 + b0 * (double)(q - 1) / 2;
	for (size_t ia = 0; ia < sizeof d_alpha / sizeof *d_alpha; ia++)
		for (size_t ib = 0; ib < sizeof d_beta / sizeof *d_beta; ib++)
			for (size_t ip = 0; ip < sizeof d_phi / sizeof *d_phi; ip++) {
				double a = d_alpha[ia], be = d_beta[ib] * a, phi = d_phi[ip], l = l0, b = b0, sse = 0;
				for (size_t t = q; t < m && sse < best; t++) {
					double f = l + phi * b, e = u[t] - f;
					sse += e * e;
					l = f + a * e;
					b = phi * b + be * e;
				}
				if (sse < best) {
					best = sse;
					bl = l;
					bb = b;
					bphi = phi;
				}
			}
	double damp = 0, pw = 1;
	for (int k = 0; k < h; k++) {
		size_t t = n + (size_t)k;
		pw *= bphi;
		damp += pw;
		double v = bl + bb * damp + (period > 1 ? s[t % (size_t)period] : 0);
		out[k] = v > 0 ? v : 0;
	}
	if (fit) {
		fit->level = bl;
		fit->slope = bb;
		fit->phi = bphi;
		fit->shift_at = -1;
		fit->shift = 0;
	}
	return 0;
}

int gl_fctrend_forecast(int kind, const double *x, size_t n, int period, size_t window, int h, double *out,
			struct gl_fctrend_fit *fit)
{
	if (h < 1 || period < 1 || period > 7 || n < gl_fctrend_min_history(period))
		return -1;
	if (window < gl_fctrend_min_history(period))
		window = gl_fctrend_min_history(period);
	switch (kind) {
	case GL_FCTREND_DAMPED: return damped_forecast(x, n, period, window, h, out, fit);
	case GL_FCTREND_LINEAR: return line_forecast(0, x, n, period, window, h, out, fit);
	case GL_FCTREND_LOGLIN: return line_forecast(1, x, n, period, window, h, out, fit);
	default: return -1;
	}
}
