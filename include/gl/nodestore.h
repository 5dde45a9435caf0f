/* gpuledger — the scheduler node snapshot's database side (docs/capacity.md):
 * the staging tables a snapshot is loaded into by COPY, and the set-based
 * merge into node_gpu_spans, node_state_spans (states, Slurm events,
 * reservations), sched_coverage and sched_snapshots. The driver
 * (ingest/nodes_ingest) makes the COPY text of the snapshot and runs these
 * inside its transaction, under the per-cluster ingest lock.
 *
 * Ownership: everything is borrowed for the duration of the call.
 */
#ifndef GL_NODESTORE_H
#define GL_NODESTORE_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

/* The COPY text of one snapshot's staging tables (columns in
 * nodes_ingest.c's order); n* = 0: that table gets nothing. */
struct gl_nodestore_stage {
	const char *gpus, *states, *events, *resvs, *regs;
	size_t gpus_len, states_len, events_len, resvs_len, regs_len;
	size_t nevents, nresvs, nregs;
	size_t gpu_rows;           /* rows of gpus */
};

/* The time of the last snapshot applied for (cluster, source);
 * GL_TIME_NONE when none. */
int gl_nodestore_last_snapshot(struct gl_store *st, int cluster_id, const char *source, int64_t *last_s,
			       struct gl_err *err) GL_MUSTCHECK;

struct gl_nodestore_counts {
	int64_t gpu_spans_opened, gpu_spans_closed;
	int64_t state_spans_opened, state_spans_closed;
	int64_t events, reservations;
};
/* Loads the staging tables and merges the snapshot taken at at_s (last_s:
 * the previous one, GL_TIME_NONE for a first) into the spans. */
int gl_nodestore_merge(struct gl_store *store, const struct gl_nodestore_stage *st, int cluster_id, const char *source,
		       int64_t at_s, int64_t last_s, struct gl_nodestore_counts *out, struct gl_err *err) GL_MUSTCHECK;

/* The node-event history is complete up to at_s (never moved back). */
int gl_nodestore_coverage(struct gl_store *st, int cluster_id, int64_t at_s, struct gl_err *err) GL_MUSTCHECK;
/* The snapshot's own row (a second one at the same time replaces it). */
int gl_nodestore_snapshot(struct gl_store *st, int cluster_id, const char *source, int64_t at_s, int64_t gpu_nodes,
			  int64_t gpus, int64_t problems, struct gl_err *err) GL_MUSTCHECK;

#endif
