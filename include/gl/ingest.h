/* gpuledger — ingest bookkeeping: runs (ingest_runs) and watermarks
 * (ingest_state), plus the skipped-line reason collector every source uses.
 *
 * Ownership: struct gl_ingest_stats is caller-owned; gl_ingest_stats_fini()
 * frees its reasons list. Nothing else allocates for the caller.
 */
#ifndef GL_INGEST_H
#define GL_INGEST_H

#include "gl/common.h"
#include "gl/strbuf.h"

#include <stdint.h>

struct gl_store;

struct gl_ingest_stats {
	int64_t lines_read, inserted, updated, unchanged, skipped, ignored;
	struct gl_strbuf reasons; /* JSON array body of {"line":N,"reason":"..."} */
	int64_t n_reasons, max_reasons;
};

void gl_ingest_stats_init(struct gl_ingest_stats *s, int64_t max_reasons);
void gl_ingest_stats_fini(struct gl_ingest_stats *s);
/* Records a skipped input line; logs it as "input:line: reason" (rate-limited
 * after max_reasons) and keeps the first max_reasons for ingest_runs. */
void gl_ingest_stats_skip(struct gl_ingest_stats *s, const char *input, int64_t line, const char *reason);

/* Inserts a 'running' ingest_runs row (committed on its own so a crash leaves
 * a trace) and returns its id. Stale 'running' rows of the same source and
 * cluster are marked 'aborted' first. */
int gl_ingest_run_begin(struct gl_store *st, const char *source, int cluster_id, const char *input, int64_t *run_id,
			struct gl_err *err) GL_MUSTCHECK;
/* Writes the counters (call inside the batch transaction so counts and rows
 * commit together). status: running | ok | partial | failed; error may be NULL. */
int gl_ingest_run_update(struct gl_store *st, int64_t run_id, const struct gl_ingest_stats *s, const char *status,
			 const char *error, struct gl_err *err) GL_MUSTCHECK;

/* Records a run that failed, outside any transaction (one the caller left
 * open, failed or not, is rolled back first: the run's uncommitted rows go
 * with it), with the counters s of what was committed. When the daemon is
 * stopping, the error reads "<error>; <redo>" (redo: what the next run
 * does again, e.g. "the snapshot is read again at the next run"; NULL
 * adds nothing) and the stop's cancel is held off for the record
 * (gl_dbcancel_defer), so the run never stays 'running'. */
int gl_ingest_run_fail(struct gl_store *st, int64_t run_id, const struct gl_ingest_stats *s, const char *error, const char *redo,
		       struct gl_err *err) GL_MUSTCHECK;

/* Appends the run's "ingest.run" audit row (actor gl_audit_process_actor(),
 * object "source:cluster", detail: run id, status and counters; never the
 * input, which may be a command line with credentials). Call once per run,
 * after its last commit or rollback, outside any transaction: the row goes
 * in its own transaction, so a failure to audit is logged and never undoes
 * ingested data (docs/security.md). */
void gl_ingest_run_audit(struct gl_store *st, int64_t run_id);

/* Runs as /v1/ingest/runs lists them, newest first. */
struct gl_ingest_run_row {
	int64_t run_id;
	char *source, *cluster, *input, *status; /* cluster, input NULL when unknown */
	int64_t started_s, finished_s;           /* finished GL_TIME_NONE while running */
	int64_t lines_read, inserted, updated, unchanged, skipped, ignored;
	char *skip_reasons;                      /* a JSON array, as stored */
	char *error;                             /* NULL when none */
	char *instance;                          /* the daemon instance that ran it; NULL: a one-shot command */
};
/* The last run of each source and cluster (for /metrics), with the
 * source's watermark (GL_TIME_NONE when none). */
struct gl_ingest_last_run {
	char *source, *cluster, *status;
	int64_t started_s, rows, skipped, watermark_s;
};
/* Ownership: the rows and their strings are the list's; gl_ingest_list_fini
 * frees them (also after a failure). */
struct gl_ingest_list {
	struct gl_ingest_run_row *runs;
	struct gl_ingest_last_run *last;
	size_t n;
	char *text;
};
/* source NULL: every source. */
int gl_ingest_runs_list(struct gl_store *st, const char *source, int64_t limit, struct gl_ingest_list *out,
			struct gl_err *err) GL_MUSTCHECK;
int gl_ingest_runs_last(struct gl_store *st, struct gl_ingest_list *out, struct gl_err *err) GL_MUSTCHECK;
void gl_ingest_list_fini(struct gl_ingest_list *l);

/* Watermark of (source, cluster): GL_TIME_NONE when none yet. */
int gl_ingest_watermark_get(struct gl_store *st, const char *source, int cluster_id, int64_t *wm_s, struct gl_err *err) GL_MUSTCHECK;
/* Sets it (inside the batch transaction). */
int gl_ingest_watermark_set(struct gl_store *st, const char *source, int cluster_id, int64_t wm_s, struct gl_err *err) GL_MUSTCHECK;
/* Records that (source, cluster)'s data reaches at_s (a saved file's
 * capture time), moving no watermark; never moves it back. */
int gl_ingest_observed_set(struct gl_store *st, const char *source, int cluster_id, int64_t at_s, struct gl_err *err) GL_MUSTCHECK;

/* How far each source's data reaches per cluster (docs/ingest.md,
 * "Observed time"): data is "jobs" (sacct, kube pods), "usage" (dcgm) or
 * "inventory" (scontrol or kube node snapshots), through_s the last moment
 * it observed. Sorted by cluster, data, source. Ownership: the rows and
 * their strings are the list's; gl_ingest_data_through_fini frees them. */
struct gl_ingest_data_through_row {
	char *cluster, *source, *data;
	int64_t through_s;
};
struct gl_ingest_data_through_set {
	struct gl_ingest_data_through_row *rows;
	size_t n;
	char *text;
};
int gl_ingest_data_through(struct gl_store *st, struct gl_ingest_data_through_set *out, struct gl_err *err) GL_MUSTCHECK;
void gl_ingest_data_through_fini(struct gl_ingest_data_through_set *dt);

#endif
