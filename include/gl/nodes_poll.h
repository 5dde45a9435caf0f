/* gpuledger — the daemon's node inventory sources (src/ingest/nodes_poll.c):
 * `scontrol show nodes` for a Slurm cluster, the node list for a Kubernetes
 * one, read and applied through gl_nodes_ingest. A failure applies nothing,
 * so the last known node state stays in force; the run is recorded failed.
 *
 * Ownership: nothing is allocated for the caller; the session is borrowed.
 */
#ifndef GL_NODES_POLL_H
#define GL_NODES_POLL_H

#include "gl/common.h"
#include "gl/config.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

/* src is a struct gl_config_slurm_nodes_source (resp. gl_config_kube_nodes_source);
 * a one-line summary of the round goes to summary. */
int gl_nodes_poll_slurm_source_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s,
			      char *summary, size_t n, struct gl_err *err) GL_MUSTCHECK;
int gl_nodes_poll_kube_source_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s,
			     char *summary, size_t n, struct gl_err *err) GL_MUSTCHECK;

#endif
