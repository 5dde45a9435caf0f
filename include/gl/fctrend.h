/* gpuledger — trend forecasts of daily and weekly totals (pure: no I/O, no
 * clock). The forecaster (include/gl/forecast.h) runs them as its trend
 * methods and chooses them only where they beat every no-trend method on
 * the series' own backtest.
 *
 * - damped: Holt's additive trend with damping (ETS(A,Ad,N)); the smoothing
 *   constants and the damping are the grid point whose one-step squared
 *   error over the history is lowest.
 * - linear / loglin: a least-squares line on y (on log(1+y)) with at most
 *   one level shift, placed where it fits best and kept only when it
 *   explains enough (a BIC-style test with a changepoint penalty): a team
 *   moving onto the fleet is a step, and a line through a step would be a
 *   slope forever. Days the first fit leaves far out (bursts) are left out
 *   of the second.
 *
 * All three work on the series with its weekday effects taken out (the
 * median deviation of each weekday from its week's mean over the last
 * eight weeks; period 7) and put back into the forecast; period 1 has no
 * season. Forecasts are never negative.
 *
 * Ownership: everything is borrowed; out is the caller's.
 */
#ifndef GL_FCTREND_H
#define GL_FCTREND_H

#include <stddef.h>

enum gl_fctrend_kind { GL_FCTREND_DAMPED = 0, GL_FCTREND_LINEAR, GL_FCTREND_LOGLIN };

struct gl_fctrend_fit {
	double level;    /* the fitted level at the last slot of the history (y or log scale) */
	double slope;    /* per slot, at that slot */
	double phi;      /* damping (1 for the lines) */
	long shift_at;   /* lines: the slot the level shift begins at; -1 none */
	double shift;    /* its size */
};

/* The least history (slots) a fit needs at this period. */
size_t gl_fctrend_min_history(int period);

/* Fits on x[0..n) (no NaN; negative values count as 0), using at most the
 * last `window` slots, and forecasts out[0..h) = slots n .. n+h-1. Slot t's
 * weekday is t mod period. fit may be NULL. Returns 0, or -1 when n is
 * below gl_fctrend_min_history(period) or h < 1. */
int gl_fctrend_forecast(int kind, const double *x, size_t n, int period, size_t window, int h, double *out,
			struct gl_fctrend_fit *fit);

#endif
