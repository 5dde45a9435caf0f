/* gpuledger — the history series behind a forecast, read from the same
 * accounting data as /v1/chargeback: allocated and busy GPU-hours and cost
 * per step come from gl_accounting_chargeback() itself (so a forecast's history is
 * the chargeback figure for the same bucket, to the second); GPUs requested
 * by submitted jobs, GPUs pending per step and the minutes with any GPU
 * pending come from `jobs`.
 *
 * Ownership: gl_fcseries_query() fills a caller-zeroed struct gl_fcseries
 * whose keys and values gl_fcseries_fini() frees.
 */
#ifndef GL_FCSERIES_H
#define GL_FCSERIES_H

#include "gl/common.h"
#include "gl/filter.h"
#include "gl/window.h"

#include <stddef.h>

struct gl_store;

enum gl_fcseries_metric {
	GL_FCSERIES_GPU_HOURS = 0, /* allocated GPU-hours in the step */
	GL_FCSERIES_BUSY_GPU_HOURS,  /* exporter-busy GPU-hours inside allocations */
	GL_FCSERIES_DEMAND_GPUS,     /* GPUs requested by jobs submitted in the step */
	GL_FCSERIES_PENDING_GPUS,    /* GPUs waiting in the queue, mean over the step */
	GL_FCSERIES_COST,            /* allocation cost in the step, currency units */
	GL_FCSERIES_PENDING_MINUTES, /* minutes of the step with GPUs waiting in the queue (any number) */
	GL_FCSERIES_METRIC_COUNT,
};
/* -1 for an unknown name. */
int gl_fcseries_metric_parse(const char *name);
const char *gl_fcseries_metric_name(int metric);

struct gl_fcseries_one {
	char *key;  /* the dimension values joined with '/', as chargeback's "name" */
	double *v;  /* n_steps values */
};

struct gl_fcseries {
	size_t n_steps;
	struct gl_fcseries_one *s;
	size_t n;
};

/* One series per key with any value in the steps, ordered by key. */
int gl_fcseries_query(struct gl_store *st, int metric, const struct gl_window *steps, size_t n_steps, const char *const *dims,
		      size_t n_dims, const struct gl_filter *filter, int64_t now_s, struct gl_fcseries *out,
		      struct gl_err *err) GL_MUSTCHECK;
/* pending_gpus and pending_minutes from one pass over the jobs (what the
 * capacity forecast needs); both caller-zeroed, both freed on failure. */
int gl_fcseries_query_pending(struct gl_store *st, const struct gl_window *steps, size_t n_steps, const char *const *dims,
			      size_t n_dims, int64_t now_s, struct gl_fcseries *gpus, struct gl_fcseries *minutes,
			      struct gl_err *err) GL_MUSTCHECK;
void gl_fcseries_fini(struct gl_fcseries *f);
/* For the rollup, inside its transaction (gl_accounting_build_days): the
 * pending series by cluster and model of each hour of the days (whole UTC
 * days, ascending) into usage_hourly_pending (sql/094), from the live
 * query itself; the caller has deleted the days' rows. */
int gl_fcseries_build_pending(struct gl_store *st, const int64_t *day_s, size_t n_days, int64_t now_s,
			      struct gl_err *err) GL_MUSTCHECK;

#endif
