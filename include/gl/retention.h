/* gpuledger — time partitions made ahead of need and retention by dropping
 * whole partitions (docs/scale.md, "Time partitioning and retention").
 *
 * gpu_usage and gpu_usage_jobs are partitioned by day, ingest_runs and
 * audit_log by month. gl_retention_ahead makes the partitions the next days
 * and months will write, so no ingest creates one on its path (a CREATE
 * TABLE ... PARTITION OF locks the parent). gl_retention_drop drops the
 * partitions wholly older than the configured horizons: nothing is deleted
 * row by row. Exporter rollups of a day that usage_daily does not hold
 * built are kept (and counted) until the rollup has built it. audit_log is
 * not touched here: its months go through `gpuledger audit prune`, which
 * anchors the surviving chain (docs/security.md).
 *
 * Ownership: the result's names buffer is the caller's (gl_retention_result_fini).
 */
#ifndef GL_RETENTION_H
#define GL_RETENTION_H

#include "gl/common.h"
#include "gl/store.h"
#include "gl/strbuf.h"

#include <stdint.h>

/* Days of exporter rollups and months of ingest runs made ahead. */
#define GL_RETENTION_AHEAD_DAYS 7
#define GL_RETENTION_AHEAD_MONTHS 3

struct gl_retention_policy {
	int64_t usage_days;       /* keep gpu_usage/gpu_usage_jobs days this long; 0 = forever */
	int64_t ingest_runs_days; /* keep ingest_runs months that end within this; 0 = forever */
};

struct gl_retention_result {
	int made;                 /* partitions created ahead */
	int dropped;              /* partitions dropped */
	int64_t est_rows;         /* planner estimate of the rows they held */
	int kept_unbuilt;         /* usage partitions past the horizon kept: day not rolled up */
	struct gl_strbuf names;   /* dropped partitions, comma-separated */
};

/* Creates the partitions of [now, now + GL_RETENTION_AHEAD_DAYS) for the
 * exporter rollups and of the current month and the next ones for
 * ingest_runs; *made counts the new ones. */
int gl_retention_ahead(struct gl_store *st, int64_t now_s, int *made, struct gl_err *err) GL_MUSTCHECK;
/* Drops what the policy no longer keeps, in one transaction with one
 * `retention.drop` audit row naming every partition (none when nothing
 * went). Joins no caller transaction: the connection must be idle. */
int gl_retention_drop(struct gl_store *st, const struct gl_retention_policy *pol, int64_t now_s, struct gl_retention_result *res,
		      struct gl_err *err) GL_MUSTCHECK;
void gl_retention_result_fini(struct gl_retention_result *res);
/* Deletes the sets of open jobs no sums row references any more
 * (sql/116): *pruned of them, or -1 when a jobs writer was in flight and
 * nothing was tried (the next run does it). The connection must be idle. */
int gl_retention_open_sets(struct gl_store *st, int64_t *pruned, struct gl_err *err) GL_MUSTCHECK;

#endif
