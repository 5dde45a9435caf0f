/* gpuledger — reading the fleet inventory for /v1/inventory and /metrics:
 * clusters with their scheduler and exporter GPU counts, nodes with their
 * current GPU spans and the state spans in force now or later, the nodes
 * where the scheduler and the exporter disagree, and each GPU model name
 * with the model it is billed as.
 *
 * Ownership: every gl_inventory_* query fills a caller-owned struct
 * gl_inventory (zeroed first) that gl_inventory_fini() empties, also after
 * a failure; a filled one may be passed again.
 */
#ifndef GL_INVENTORY_H
#define GL_INVENTORY_H

#include "gl/common.h"
#include "gl/store.h"

#include <stdint.h>

struct gl_inventory_cluster {
	char *name, *kind;
	int64_t scheduler_nodes, scheduler_gpus, exporter_gpus;
	int scheduler_gpus_null;              /* no scheduler inventory */
	int64_t last_snapshot_s, events_until_s; /* GL_TIME_NONE when none */
};

/* One open GPU span of a node (as the scheduler reported it). */
struct gl_inventory_span {
	int64_t n;                 /* the node's index in nodes */
	char *model, *partition, *source, *since; /* partition NULL on Kubernetes; since RFC 3339 */
	int64_t gpus, mig_instances, memory_mib;
	int memory_mib_null;
};

/* One state span of a node in force now or later. */
struct gl_inventory_state {
	int64_t n;
	char *state, *source, *reservation, *since, *until, *raw_state, *unknown_flags, *reason, *reason_user;
	int64_t allocated_gpus, reserved_gpus;
	int allocated_gpus_null, reserved_gpus_null;
};

struct gl_inventory_node {
	int64_t n;
	char *cluster, *node, *partitions, *state; /* state: the sampled state now, NULL when none */
	/* the last scheduler snapshot that listed the node, and when its state
	 * began (GL_TIME_NONE: none) */
	int64_t last_seen_s, state_since_s;
	struct gl_inventory_span *spans;   /* into the inventory's spans */
	size_t n_spans;
	struct gl_inventory_state *states; /* into the inventory's states */
	size_t n_states;
};

/* Scheduler and exporter GPU counts of a node that differ (NULL: the
 * source does not know the node), in clusters both sources cover. */
struct gl_inventory_conflict {
	char *cluster, *node;
	/* which sources say so: the scheduler's node source ("scontrol",
	 * "kube", ...) and the GPU sources that report the node's GPUs ("dcgm",
	 * "amd", "nvidia-smi", "nvidia_gpu_exporter"), comma-separated; "" when
	 * that side has none */
	char *scheduler_source, *exporter_sources;
	int64_t scheduler_gpus, exporter_gpus;
	int scheduler_gpus_null, exporter_gpus_null;
};
/* "gpu_count", "unknown_to_scheduler" or "unseen_by_exporter". */
const char *gl_inventory_conflict_kind(const struct gl_inventory_conflict *c);

/* A GPU model name the sources wrote, its canonical model and why:
 * "alias", "alias_model" or "rule". */
struct gl_inventory_model {
	char *name, *model, *via;
};

struct gl_inventory {
	struct gl_inventory_cluster *clusters;
	size_t n_clusters;
	struct gl_inventory_node *nodes;
	size_t n_nodes;
	struct gl_inventory_span *spans;
	size_t n_spans;
	struct gl_inventory_state *states;
	size_t n_states;
	struct gl_inventory_conflict *conflicts;
	size_t n_conflicts;
	struct gl_inventory_model *models;
	size_t n_models;
	char *text[6];
};

/* cluster NULL: every cluster. Clusters by name (those with data only). */
int gl_inventory_clusters(struct gl_store *st, const char *cluster, struct gl_inventory *inv,
			  struct gl_err *err) GL_MUSTCHECK;
/* Nodes by cluster and name, each with its spans and states; at_s: now. */
int gl_inventory_nodes(struct gl_store *st, const char *cluster, int64_t at_s, struct gl_inventory *inv,
		       struct gl_err *err) GL_MUSTCHECK;
int gl_inventory_conflicts(struct gl_store *st, const char *cluster, struct gl_inventory *inv,
			   struct gl_err *err) GL_MUSTCHECK;
int gl_inventory_models(struct gl_store *st, struct gl_inventory *inv, struct gl_err *err) GL_MUSTCHECK;
void gl_inventory_fini(struct gl_inventory *inv);

/* Every cluster name, longest first (a series key "cluster/model" is split
 * after the longest name it starts with). Ownership: *names and its strings
 * in one allocation, the caller's to free(). */
int gl_inventory_cluster_names(struct gl_store *st, char ***names, size_t *n, struct gl_err *err) GL_MUSTCHECK;

#endif
