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
	/* gl_rundb_month only: runs summed by this field of their first job
	 * ("user_name", "account", "cluster", "partition", "namespace_") or
	 * "kind", NULL for every run; the runs whose state's first word is
	 * state (any case), NULL for all */
	const char *group_by, *state;
	/* gl_rundb_month's list (group_by NULL) only: the runs after the one
	 * at place after_ord of the month's list (-1: from the first), at most
	 * limit of them (0: all); the place is the run's index in
	 * gl_rundb_runs' answer for the month, so a page is the live one's */
	int64_t after_ord;
	size_t limit;
};

struct gl_rundb {
	struct gl_runs_job *jobs;
	size_t n_jobs;
	struct gl_runs runs;
	/* per run, the runs it sums: a built month summed by group_by
	 * (gl_rundb_month); NULL: each is one run */
	int64_t *n_runs;
	/* per run, its place in the month's list (a page of gl_rundb_month);
	 * NULL: its index in runs; more: the month has runs after the page */
	int64_t *ord;
	int more;
	/* the month in progress as built (gl_rundb_month): the time its runs
	 * reach, the window [its start, as_of_s); 0: the answer is now's */
	int64_t as_of_s;
	/* private: what the jobs point into */
	void *rows;
	char *text;
	const char **label_store;
	void *blocks;
};

/* The GPU jobs (allocated or requested GPUs) overlapping the window, and
 * those submitted in it that never started, grouped into runs. */
int gl_rundb_runs(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out,
		  struct gl_err *err) GL_MUSTCHECK;
void gl_rundb_fini(struct gl_rundb *r);

/* The runs of a calendar month as built by gl_rundb_build_months, when the
 * query is unscoped, its window that month and the month's runs were built
 * from the rules, days and jobs there are now (sql/131), or, for the month
 * of q->now_s, when its runs so far were built from the rules there are
 * now (sql/138; out->as_of_s the time they reach): then *hit is 1 and
 * out holds the runs (each run's first job alone: no members, which
 * /v1/runs/{id} reads live), with q->group_by one per value, summed, and
 * its count in n_runs. Else *hit is 0 and out empty. */
int gl_rundb_month(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out, int *hit,
		   struct gl_err *err) GL_MUSTCHECK;

/* Builds the runs of every month whose days are all built and whose runs
 * are not those of its rules, days and jobs now, with gl_rundb_runs (the
 * request's own grouping), each in one snapshot, and those of the month of
 * now_s as the window [its start, now_s) when they are not (none on a
 * central); *built counts them. */
/* How often the daemon's runs task builds them, and so the age past which
 * the month so far is built again while a job is open, though no mark
 * moved: a running job's seconds grow with the clock alone. */
#define GL_RUNDB_EVERY_S 300

int gl_rundb_build_months(struct gl_store *st, const struct gl_runs_rule *rules, size_t n_rules, int64_t now_s,
			  int *built, struct gl_err *err) GL_MUSTCHECK;

#endif
