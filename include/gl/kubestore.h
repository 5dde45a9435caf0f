/* gpuledger — the Kubernetes pod ingest's database side (docs/ingest.md,
 * "Kubernetes"): the stored state of the pods a snapshot lists (to keep
 * their last_seen_at), whether the cluster has jobs yet, and closing the
 * open pods a snapshot no longer lists. The driver (ingest/kube_ingest)
 * merges its rows through store/jobs and decides which keys vanished.
 *
 * Ownership: lists are filled by one call and released with their _fini
 * (a zeroed list is a no-op); their strings belong to them. Inputs are
 * borrowed for the call.
 */
#ifndef GL_KUBESTORE_H
#define GL_KUBESTORE_H

#include "gl/common.h"
#include "gl/kubegpu.h"

#include <stddef.h>
#include <stdint.h>

struct gl_store;

/* A stored pod row. Times are GL_TIME_NONE when NULL. */
struct gl_kubestore_pod {
	const char *job_key;
	const char *state;
	int64_t last_seen_s, start_s, end_s;
};
struct gl_kubestore_pod_list {
	struct gl_kubestore_pod *v;
	size_t n;
	char *arena;               /* the rows' strings */
};
/* The stored rows of the cluster with these keys (any order). */
int gl_kubestore_pods(struct gl_store *st, int cluster_id, const char *const *keys, size_t nkeys,
		      struct gl_kubestore_pod_list *out, struct gl_err *err) GL_MUSTCHECK;
void gl_kubestore_pod_list_fini(struct gl_kubestore_pod_list *l);

/* What the pods of the cluster cannot say about their nodes, as the
 * scheduler inventory (kube-nodes: node_gpu_spans) has it at at_s: per node
 * its physical GPUs, time-slicing replicas per GPU and GPU memory. The
 * entries' node strings belong to the list. */
struct gl_kubestore_node_list {
	struct gl_kubegpu_node_gpu *v;
	size_t n;
	char *arena;
};
int gl_kubestore_node_gpus(struct gl_store *st, int cluster_id, int64_t at_s, struct gl_kubestore_node_list *out,
			   struct gl_err *err) GL_MUSTCHECK;
void gl_kubestore_node_list_fini(struct gl_kubestore_node_list *l);

/* *any = 1 when the cluster has at least one job. */
int gl_kubestore_has_jobs(struct gl_store *st, int cluster_id, int *any, struct gl_err *err) GL_MUSTCHECK;

/* The keys of the cluster's open rows (end unknown). */
struct gl_kubestore_key_list {
	const char **v;
	size_t n;
	char *arena;
};
int gl_kubestore_open_keys(struct gl_store *st, int cluster_id, struct gl_kubestore_key_list *out,
			   struct gl_err *err) GL_MUSTCHECK;
void gl_kubestore_key_list_fini(struct gl_kubestore_key_list *l);

/* Closes the open rows with these keys as vanished: ended (CANCELLED) at
 * the last time they were seen, at the latest of last_seen_at, wm_prev_s
 * (the previous snapshot; GL_TIME_NONE: none), start and submit. *closed
 * counts them. */
int gl_kubestore_close_vanished(struct gl_store *st, int cluster_id, int64_t wm_prev_s, const char *const *keys,
				size_t nkeys, int64_t *closed, struct gl_err *err) GL_MUSTCHECK;

#endif
