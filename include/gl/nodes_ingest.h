/* gpuledger — applying a scheduler node snapshot (gl/nodeobs.h) to the
 * inventory tables of sql/010_capacity.sql: GPU spans per node and model,
 * node state spans, Slurm events and reservations, in one transaction under
 * the per-cluster ingest lock. docs/capacity.md explains the merge.
 *
 * A snapshot without any node is refused (-GL_EINVAL): a scheduler that
 * answers with nothing must not turn the fleet's capacity into zero. A
 * snapshot older than the last one applied for the cluster and source is
 * refused too (spans only move forward).
 *
 * Ownership: everything is borrowed for the duration of the call.
 */
#ifndef GL_NODES_INGEST_H
#define GL_NODES_INGEST_H

#include "gl/common.h"
#include "gl/nodeobs.h"

#include <stdint.h>

struct gl_store;

struct gl_nodes_ingest_opts {
	const char *cluster;
	const char *kind;        /* "slurm" | "kubernetes" (clusters.kind) */
	const char *source;      /* "scontrol" | "kube": node_gpu_spans/node_state_spans source */
	const char *run_source;  /* ingest_runs source: "slurm-nodes" | "kube-nodes" */
	const char *input_name;  /* file or command, for ingest_runs */
	int64_t at_s;            /* when the snapshot was taken */
	int events_complete;     /* s->events is the whole node-event history up to at_s */
};

struct gl_nodes_ingest_counts {
	int64_t nodes, gpu_nodes, gpus;
	int64_t gpu_spans_opened, gpu_spans_closed;
	int64_t state_spans_opened, state_spans_closed;
	int64_t events, reservations;
};

int gl_nodes_ingest(struct gl_store *st, const struct gl_nodes_ingest_opts *o, const struct gl_nodeobs_snapshot *s,
		    struct gl_nodes_ingest_counts *out, struct gl_err *err) GL_MUSTCHECK;

/* The COPY text of the staged GPU rows and its column list, for the
 * benchmark's raw-COPY baseline. The returned buffer is the caller's (free). */
char *gl_nodes_ingest_stage_copy_text(const struct gl_nodeobs_snapshot *s, int64_t at_s, size_t *len);
extern const char gl_nodes_stage_columns[];

#endif
