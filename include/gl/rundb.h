/* gpuledger — the jobs of the training runs (/v1/runs) from the database:
 * the jobs in a window with the fields the grouping reads (docs/runs.md)
 * and each one's figures from the ledger, the chargeback's own per-job
 * lines (gl_accounting_chargeback_finished: the same costing, observed-time and
 * rounding rules as /v1/chargeback), then grouped by the domain
 * (include/gl/runs.h).
 *
 * Ownership: gl_rundb_runs() fills a caller-owned struct gl_rundb that
 * gl_rundb_fini() empties (also after a failure); its runs point into its
 * jobs, whose strings it owns.
 */
#ifndef GL_RUNDB_H
#define GL_RUNDB_H

#include "gl/common.h"
#include "gl/runs.h"
#include "gl/store.h"
#include "gl/tokens.h"

#include <stdint.h>

struct gl_rundb_query {
	int64_t win_start_s, win_end_s, now_s;
	const struct gl_runs_rule *rules; /* the config's runs[], in priority order */
	size_t n_rules;
	/* a token's scope (n_scope 0: every job): team, project and
	 * cost_center are the owner at the job's start, as in /v1/jobs */
	const struct gl_tokens_scope *scope;
	size_t n_scope;
};

struct gl_rundb {
	struct gl_runs_job *jobs;
	size_t n_jobs;
	struct gl_runs runs;
	/* private: what the jobs point into */
	void *rows;
	char *text;
	const char **label_store;
};

/* The GPU jobs (allocated or requested GPUs) overlapping the window, and
 * those submitted in it that never started, grouped into runs. */
int gl_rundb_runs(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out,
		  struct gl_err *err) GL_MUSTCHECK;
void gl_rundb_fini(struct gl_rundb *r);

#endif
