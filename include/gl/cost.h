/* gpuledger — exact cost arithmetic. Pure: no I/O, no clock.
 *
 * Amounts that are exact rationals (micro-GPU-seconds x micro-units per
 * GPU-hour / 3,600,000) are rounded once per line, and the remainders are
 * carried (largest-remainder method) so that the lines add up exactly to the
 * rounded total. The same apportioning shares an integer amount (idle cost,
 * idle GPU-seconds) across weights.
 *
 * Ownership: callers own every array.
 */
#ifndef GL_COST_H
#define GL_COST_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

/* 1 GPU-hour = 3600 s x 1,000,000 micro-GPU (GL_GPU_MICRO) */
#define GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR 3600000000LL

typedef __int128 gl_cost_i128;

/* Parses a non-negative decimal integer (as PostgreSQL prints numeric without
 * a fraction) into 128 bits. */
int gl_cost_i128_parse(const char *s, gl_cost_i128 *out) GL_MUSTCHECK;
/* Decimal text of v into buf (>= 41 bytes). */
void gl_cost_i128_format(gl_cost_i128 v, char *buf, size_t n);

/* Rounds num_i / denom for every line so that sum(out) == round(sum(num) / denom)
 * (half up) and every out_i is floor or ceil of its exact value. num_i >= 0,
 * denom > 0. */
int gl_cost_apportion(const gl_cost_i128 *num, size_t n, int64_t denom, int64_t *out) GL_MUSTCHECK;

/* Shares `amount` (>= 0) over weights (>= 0) exactly: sum(out) == amount,
 * out_i proportional to weight_i up to one unit. All weights zero: out all 0
 * and -GL_EINVAL (nothing to share onto). */
int gl_cost_share(int64_t amount, const int64_t *weight, size_t n, int64_t *out) GL_MUSTCHECK;

/* Nearest-rank percentile (p in 0..100) of sorted values; n > 0. */
int64_t gl_cost_percentile_sorted(const int64_t *sorted, size_t n, double p);

/* "2.50" -> 2500000 exactly; at most 6 decimals, no sign, no exponent. */
int gl_cost_parse(const char *s, int64_t *micros, struct gl_err *err) GL_MUSTCHECK;

/* The ISO 4217 minor units of a currency code (2 for "USD", 0 for "JPY", 3
 * for "BHD"); -1 when code is not an active ISO 4217 code (case matters). */
int gl_cost_minor(const char *code);

/* "12.345678" from micro-units with `minor` decimals (2 for USD: "12.35",
 * half up); minor = 6 keeps every digit. */
void gl_cost_format(int64_t micros, int minor, char *buf, size_t n);

/* micros rounded to the currency's minor units (half away from zero, as
 * gl_cost_format), still in micro-units: gl_cost_format of the result
 * prints the same text. */
int64_t gl_cost_round(int64_t micros, int minor);

/* Shown amounts that add up (largest-remainder / Hamilton method): the
 * parts part[0..n) (micro-units, any sign) of an amount whose shown value
 * is shown_total (micro-units, a multiple of the minor unit, normally
 * gl_cost_round of the exact Σ part) each get their floor in minor units,
 * and the minor units left over go one each to the parts with the largest
 * remainders; equal remainders go first to the smaller tie[i] (strcmp),
 * then to the smaller index (tie may be NULL: index only). out[i] (micro-
 * units, multiples of the minor unit) sum to shown_total exactly, and each
 * is the floor or the ceiling of part[i]. -GL_EINVAL (out = each part
 * rounded on its own) when shown_total is not a multiple of the unit or
 * is not within the floors' sum and that plus n units. */
int gl_cost_shown_parts(int64_t shown_total, const int64_t *part, const char *const *tie, size_t n, int minor,
			 int64_t *out) GL_MUSTCHECK;
/* A table's shown money, the one rule of every view (API JSON and CSV, the
 * dashboard, the showback report's CSV, HTML and PDF): n rows, each an
 * exact cost[i] + share[i] (micro-units), and a last row left (idle not
 * shared out, named "__idle__" for the ties), whose sum is shown as
 * shown_total. Down the table, the rows' totals and left are the shown
 * parts of shown_total (gl_cost_shown_parts, ties by name[i]); along each
 * row, its cost and share are the shown parts of its total (ties: the cost
 * first). out_total, out_cost, out_share: n each; *out_left. A table that
 * does not reconcile (-GL_EINVAL) is shown line by line, each rounded alone. */
int gl_cost_shown_rows(int64_t shown_total, const int64_t *cost, const int64_t *share, const char *const *name,
			size_t n, int64_t left, int minor, int64_t *out_total, int64_t *out_cost, int64_t *out_share,
			int64_t *out_left);

#endif
