/* gpuledger — increases of cumulative counters between scrapes, with resets
 * handled as Prometheus' increase() handles them, and the quantile of a
 * histogram as histogram_quantile() computes it. Pure: no I/O, no clock.
 *
 * The rules (docs/serving.md, "Counters"):
 * - A scrape counts what its counters rose since the series' previous
 *   applied scrape, in the bucket of the scrape: a missing scrape spreads
 *   nothing; its increase is counted whole by the scrape after the gap.
 * - A reset (the process restarted) counts the new values whole, as
 *   increase() does. It is a reset when the process start the scrape
 *   carries changed; without one, when every counter is at or below its
 *   previous value and at least one is below (a restart zeroes them all).
 * - A counter that goes below its previous value without a reset is
 *   flagged, counts 0, and keeps its previous value as the level the next
 *   scrapes are counted from: a dip and its recovery count nothing twice,
 *   and never negative.
 * - A series seen for the first time, or on a job other than before (a new
 *   pod), sets its level: its values count whole only when its process
 *   (or its job) started at or after the endpoint's previous scrape (all of
 *   it is then new), else nothing (when it happened is not known).
 * - A scrape at or before the series' last applied one changes nothing, so
 *   ingesting a scrape again counts nothing twice.
 *
 * Ownership: struct gl_increase_series is caller-owned; hw points to the
 * caller's n doubles, updated in place.
 */
#ifndef GL_INCREASE_H
#define GL_INCREASE_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

/* The state of one series between scrapes. */
struct gl_increase_series {
	int have;         /* 0: never applied */
	int64_t at_s;     /* the last applied scrape */
	double start_s;   /* its process start; NaN unknown */
	int64_t job_pk;   /* the job it ran on; 0 unknown */
	size_t n;
	double *hw;       /* per counter the level counted up to; NaN: never seen */
};

struct gl_increase_obs {
	int64_t at_s;
	double start_s;              /* NaN unknown */
	int64_t job_pk;              /* 0 unknown */
	int64_t job_start_s;         /* the job's start; GL_TIME_NONE unknown */
	int64_t endpoint_prev_s;     /* the endpoint's previous scrape; GL_TIME_NONE: none */
	const double *cur;           /* n values, NaN: absent from this scrape */
};

enum gl_increase_kind {
	GL_INCREASE_COUNTED = 0, /* increases since the previous scrape */
	GL_INCREASE_RESET,       /* the process restarted: the values counted whole */
	GL_INCREASE_NEW,         /* a new series or job whose process started since the endpoint's last scrape */
	GL_INCREASE_BASELINE,    /* a new series or job: levels set, nothing counted */
	GL_INCREASE_STALE,       /* at or before the last applied scrape: nothing changed */
};

struct gl_increase_result {
	enum gl_increase_kind kind;
	int64_t *inc;            /* caller's n entries: the increases, >= 0 */
	size_t backwards;        /* counters that went below their level without a reset */
	size_t first_backwards;  /* index of the first of them */
	double back_from, back_to;
};

/* Applies one scrape to s. inc must hold s->n entries. */
void gl_increase_step(struct gl_increase_series *s, const struct gl_increase_obs *o, struct gl_increase_result *r);

/* The q-quantile (0 <= q <= 1) of a histogram as Prometheus'
 * histogram_quantile computes it: cum[i] is the count of observations
 * <= le[i], le ascending with +Inf last; linear interpolation inside the
 * bucket holding the rank, the lower bound of the first bucket being 0
 * (or its le when that is <= 0), and the rank in the +Inf bucket giving the
 * highest finite le. Counts that fall with le are raised to their
 * predecessor first, as Prometheus does. NaN when there are fewer than two
 * buckets, no +Inf bucket or no observation. */
double gl_increase_quantile(const double *le, const double *cum, size_t n, double q);

#endif
