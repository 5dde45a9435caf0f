/* gpuledger — the ledger's own figures as Prometheus gauges on /metrics:
 * month-to-date cost and GPU-seconds per owner (reports.aggregate) and
 * cluster, fleet capacity, allocated, idle and saturation per cluster and
 * GPU model, and each budget's used ratio (docs/metrics.md).
 *
 * The figures are the ones /v1/chargeback (window=month, shareIdle none),
 * /v1/capacity (window=month, aggregate=gpu_model) and /v1/budgets give,
 * computed by the same functions. A month's accounting is too heavy for
 * every scrape, so the daemon refreshes them as one of its sources and a
 * scrape copies the text of the last refresh.
 *
 * Ownership: the cached text is the module's (behind a mutex); callers
 * pass their own buffers.
 */
#ifndef GL_LEDGERMETRICS_H
#define GL_LEDGERMETRICS_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/strbuf.h"

#include <stdint.h>

struct gl_store;

/* Owner x cluster series per metric at most; the owners with the smallest
 * cost beyond that are summed into owner "__other__" of their cluster, so
 * the sums still equal the ledger's total. */
#define GL_LEDGERMETRICS_MAX_SERIES 500

/* How often the daemon refreshes the figures (seconds). */
#define GL_LEDGERMETRICS_INTERVAL_S 60

/* The month of now_s so far, as Prometheus text (HELP and TYPE each), into o. */
int gl_ledgermetrics_build(struct gl_store *st, const struct gl_config *cfg, int64_t now_s, struct gl_strbuf *o,
			   struct gl_err *err) GL_MUSTCHECK;

/* A daemon source (gl_daemon_source_run_fn): builds and replaces the cached text;
 * on failure the last text stays, with its refresh time telling its age. */
int gl_ledgermetrics_refresh(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			     size_t n, struct gl_err *err) GL_MUSTCHECK;

/* Appends the cached text (nothing before the first refresh). */
void gl_ledgermetrics_append(struct gl_strbuf *o);

#endif
