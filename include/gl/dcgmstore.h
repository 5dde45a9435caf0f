/* gpuledger — the dcgm-exporter ingest's database side (docs/ingest.md,
 * "dcgm-exporter"): the fleet inventory (nodes, gpus), the per-GPU bucket
 * rollups (gpu_usage), the per-job shares (gpu_usage_jobs), the per-GPU
 * sample state (dcgm_gpu_state), the samples waiting for their job
 * (dcgm_pending), the absent GPUs and the watermark. The driver
 * (ingest/dcgm_ingest) stages typed rows and calls these in the order of
 * one round; the rows go through temporary tables by COPY.
 *
 * Transactions: gl_dcgmstore_prepare() runs outside the round's
 * transaction (partition DDL locks gpu_usage briefly); gl_dcgmstore_begin()
 * opens it under the per-cluster lock; the driver commits it (gl/txn.h).
 *
 * Ownership: gl_dcgmstore_stage_new() returns staging buffers the caller
 * frees with gl_dcgmstore_stage_free() (NULL no-op); the _add functions
 * copy what they need. Lists are released with their _fini. Inputs are
 * borrowed for the call.
 */
#ifndef GL_DCGMSTORE_H
#define GL_DCGMSTORE_H

#include "gl/common.h"
#include "gl/dcgm.h"
#include "gl/store.h"

#include <stddef.h>
#include <stdint.h>

/* The cluster of the round: an existing one keeps its kind, a new one is
 * 'kubernetes' when pods = 1, else 'slurm' (dcgm-exporter does not say
 * which scheduler runs the nodes). */
int gl_dcgmstore_cluster(struct gl_store *st, const char *name, int pods, int *cluster_id,
			 struct gl_err *err) GL_MUSTCHECK;
/* The staging tables and the day partitions of bucket_start_s (and the next
 * day's, made ahead), outside any transaction. */
int gl_dcgmstore_prepare(struct gl_store *st, int64_t bucket_start_s, struct gl_err *err) GL_MUSTCHECK;
/* BEGIN, then the cluster's dcgm lock for the transaction (rolled back when
 * the lock fails). */
int gl_dcgmstore_begin(struct gl_store *st, int cluster_id, struct gl_err *err) GL_MUSTCHECK;

struct gl_dcgmstore_stage;
struct gl_dcgmstore_stage *gl_dcgmstore_stage_new(void);
void gl_dcgmstore_stage_free(struct gl_dcgmstore_stage *s);

/* ---- inventory ---- */
/* One GPU of the round; "" strings are unknown (NULL). */
struct gl_dcgmstore_gpu {
	size_t idx;                 /* the row's place in the round: comes back in gl_dcgmstore_state */
	const char *node, *uuid, *profile, *model, *driver;
	const char *source;         /* "dcgm", "nvidia_gpu_exporter", "amd", "nvidia-smi" */
	int gi;                     /* GPU_I_ID, -1 for a whole GPU */
	int have_memory;
	int64_t memory_mib;
	int mig_parent;
	int gpu_index;              /* the source's index on its node (gpu, index, gpu_id), -1 unknown */
};
void gl_dcgmstore_add_gpu(struct gl_dcgmstore_stage *s, const struct gl_dcgmstore_gpu *g);
/* The staged GPUs into nodes and gpus, seen at at_s (descriptive fields
 * follow the newest scrape; an older one only widens first/last seen).
 * *nodes: distinct nodes of the round; *new_gpus: inventory rows created. */
int gl_dcgmstore_inventory(struct gl_store *st, struct gl_dcgmstore_stage *s, int cluster_id, int64_t at_s,
			   int64_t *nodes, int64_t *new_gpus, struct gl_err *err) GL_MUSTCHECK;

/* Each staged GPU's inventory id and last applied sample; a GPU staged
 * twice comes back once (its first idx). */
struct gl_dcgmstore_state {
	size_t idx;
	int64_t gpu_id;
	int64_t last_s;             /* GL_TIME_NONE: never sampled */
	double energy_last;         /* < 0: none */
};
struct gl_dcgmstore_state_list {
	struct gl_dcgmstore_state *v;
	size_t n;
};
int gl_dcgmstore_states(struct gl_store *st, int cluster_id, struct gl_dcgmstore_state_list *out,
			struct gl_err *err) GL_MUSTCHECK;
void gl_dcgmstore_state_list_fini(struct gl_dcgmstore_state_list *l);

/* ---- the jobs that could claim the round's GPUs ---- */
struct gl_dcgmstore_job {
	int64_t job_pk;
	char *job_id, *job_id_raw, *het_job_id, *ns, *name; /* "" when unknown */
	int64_t held_micro, start_s; /* held: physical micro-GPUs (GL_ACCOUNTING_JOB_HELD_SQL) */
	char **nodes;
	size_t nnodes;
};
struct gl_dcgmstore_job_list {
	struct gl_dcgmstore_job *v;
	size_t n;
};
/* Jobs of the cluster running at at_s on one of nodes, or whose id (display,
 * raw, het leader) is one of ids, or (Kubernetes) whose name or id is one of
 * pods. */
int gl_dcgmstore_jobs(struct gl_store *st, int cluster_id, int64_t at_s, const char *const *nodes, size_t nnodes,
		      const char *const *ids, size_t nids, const char *const *pods, size_t npods,
		      struct gl_dcgmstore_job_list *out, struct gl_err *err) GL_MUSTCHECK;
void gl_dcgmstore_job_list_fini(struct gl_dcgmstore_job_list *l);

/* ---- samples ---- */
/* One applied sample's rollup row. */
struct gl_dcgmstore_use {
	int64_t gpu_id;
	int busy, nodata;
	double engine_sum;
	int64_t engine_n;
	double fb_max, power_max;   /* < 0: not seen */
	int have_energy;
	int64_t energy_mj;
	int64_t energy_resets;
	int have_xid;
	int64_t xid;
	int64_t covered_s, busy_s, idle_s, held_idle_s;
	double energy_last;         /* < 0: none */
};
void gl_dcgmstore_add_use(struct gl_dcgmstore_stage *s, const struct gl_dcgmstore_use *u);
/* One job's share of an applied sample. */
struct gl_dcgmstore_share {
	int64_t gpu_id, job_pk;
	const char *kind;           /* attribution: "hpc_job", "pod", "node-exclusive", "node-estimated" */
	int busy, nodata;
	double gpu_s, busy_gpu_s, idle_gpu_s, held_idle_gpu_s;
};
void gl_dcgmstore_add_share(struct gl_dcgmstore_stage *s, const struct gl_dcgmstore_share *sh);
/* A sample that waits for its job (sql/020, 048): a labelled one no job
 * claimed, or one of an unlabelled node with a share no job took yet. */
struct gl_dcgmstore_pending {
	int64_t gpu_id;
	const char *node;
	const char *const *jobs;    /* hpc_job label values */
	size_t njobs;
	const struct gl_dcgm_pod *pods; /* those with a pod name are kept, as "ns/pod" */
	size_t npods;
	int64_t dt_s;
	int busy, nodata;
	int64_t busy_ms, idle_ms, held_ms; /* the sample's split of dt_s */
	double left;                /* unlabelled node: the share left (> 0); < 0: a labelled sample */
	int64_t node_gpus;          /* unlabelled node: its GPUs in the round */
	const int64_t *claimed;     /* unlabelled node: the jobs that had their share */
	size_t nclaimed;
};
void gl_dcgmstore_add_pending(struct gl_dcgmstore_stage *s, const struct gl_dcgmstore_pending *p);
/* The staged samples of the round at at_s (bucket [bucket_start_s, +
 * bucket_s)) into gpu_usage, gpu_usage_jobs (each bucket's job: the largest
 * share so far), dcgm_gpu_state and dcgm_pending (pending samples older
 * than six hours dropped). applied: samples staged. */
int gl_dcgmstore_apply(struct gl_store *st, struct gl_dcgmstore_stage *s, int cluster_id, int64_t at_s,
		       int64_t bucket_start_s, int64_t bucket_s, int64_t applied, struct gl_err *err) GL_MUSTCHECK;

/* GPUs of the cluster silent for longer than grace_s before at_s are
 * marked absent since they were last seen; *marked counts them. */
int gl_dcgmstore_mark_absent(struct gl_store *st, int cluster_id, int64_t at_s, int64_t grace_s, int64_t *marked,
			     struct gl_err *err) GL_MUSTCHECK;
/* The (dcgm, cluster) watermark raised to at_s (never lowered). */
int gl_dcgmstore_watermark(struct gl_store *st, int cluster_id, int64_t at_s, struct gl_err *err) GL_MUSTCHECK;
/* Pending samples whose job is known now attributed to it (sql/020). */
int gl_dcgmstore_claim_pending(struct gl_store *st, int cluster_id, int64_t *claimed, struct gl_err *err) GL_MUSTCHECK;

/* A GPU some source reports (exporter, AMD exporter, nvidia-smi), as
 * /v1/inventory lists it. Strings "" when unknown; times GL_TIME_NONE. */
struct gl_dcgmstore_inv_gpu {
	char *cluster, *node, *uuid, *model_raw, *model, *profile, *driver, *source;
	int mig_instance;        /* -1: the whole GPU */
	int gpu_index;           /* the source's index on its node, -1 unknown */
	int64_t first_seen_s, last_seen_s, absent_since_s;
};
/* Every GPU of cluster (NULL: all), by cluster, node, uuid, instance. The
 * caller frees *out with gl_dcgmstore_inv_gpus_free. */
int gl_dcgmstore_inv_gpus(struct gl_store *st, const char *cluster, struct gl_dcgmstore_inv_gpu **out, size_t *n,
			  struct gl_err *err) GL_MUSTCHECK;
void gl_dcgmstore_inv_gpus_free(struct gl_dcgmstore_inv_gpu *v, size_t n);

#endif
