/* gpuledger — the accounting queries that run on the connection itself,
 * for src/store/ alone (and the tests that drive them directly): the
 * chargeback's lines, the capacity days and a day's rollup build. Code
 * outside src/store/ calls their store-handle forms in include/gl/accounting.h
 * (gl_accounting_chargeback_finished, gl_accounting_build_stale ...).
 *
 * Ownership: as include/gl/accounting.h.
 */
#ifndef GL_ACCOUNTING_INT_H
#define GL_ACCOUNTING_INT_H

#include "gl/accounting.h"

#include <libpq-fe.h>

int gl_accounting_chargeback(PGconn *c, const struct gl_accounting_query *q, struct gl_chargeback *cb,
			     struct gl_accounting_meta *meta, struct gl_err *err) GL_MUSTCHECK;

/* How much of [start_s, min(end_s, now_s)) the fleet's capacity data
 * covers, by UTC day (each clipped to the window): *days elapsed, *known of
 * them with a gl_capacity row (worked out from the spans gl_capacity reads:
 * keep the two in step). An idle total over a window whose capacity
 * data starts (or stops) inside it covers only the known days, which a
 * reader must be told. filter (may be NULL: the whole fleet) narrows the
 * fleet by its cluster, partition and gpu_model clauses, as it narrows the
 * chargeback's idle; other clauses are ignored. No gl_capacity in the
 * database: *known = 0. */
int gl_accounting_capacity_days(PGconn *c, int64_t start_s, int64_t end_s, int64_t now_s,
				const struct gl_filter *filter, int64_t *known, int64_t *days,
				struct gl_err *err) GL_MUSTCHECK;

/* Builds usage_daily for the whole past UTC day starting at day_s (one
 * transaction, serialised with the staleness triggers). */
/* built[i] = 1 (and *n_built of them) for each step that is one whole UTC
 * hour of a built day before now's day (usage_daily_built and
 * usage_hourly_built: its hourly series, sql/094, are kept with it); steps
 * ascending. built: n_steps
 * bytes, the caller's. */
int gl_accounting_built_hours(PGconn *c, const struct gl_window *steps, size_t n_steps, int64_t now_s, unsigned char *built,
			      size_t *n_built, struct gl_err *err) GL_MUSTCHECK;

/* The stale days gl_accounting_build_stale builds: the past UTC days some
 * GPU job touched and usage_daily_built lacks, at most max_days, the most
 * recent first, one column (the day's epoch seconds). *res: the caller's
 * (PQclear), NULL on failure. */
int gl_accounting_stale_days(PGconn *c, int64_t now_s, int max_days, PGresult **res, struct gl_err *err) GL_MUSTCHECK;

int gl_accounting_build_day(PGconn *c, int64_t day_s, int64_t now_s, struct gl_err *err) GL_MUSTCHECK;
/* The same for n whole past days (day_s ascending, caller's array) in one
 * pass over the jobs; the figures are those of gl_accounting_build_day day
 * by day. helper (may be NULL): a second connection of the caller's that
 * builds the later half of the days at the same time, in a second thread
 * and a transaction of its own, idle when this returns. */
int gl_accounting_build_days(PGconn *c, PGconn *helper, const int64_t *day_s, size_t n, int64_t now_s,
			     struct gl_err *err) GL_MUSTCHECK;

#endif
