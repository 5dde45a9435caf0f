/* gpuledger — dcgm-exporter ingestion: parsed scrapes -> fleet inventory
 * (nodes, gpus), per-GPU bucket rollups (gpu_usage), per-job shares
 * (gpu_usage_jobs) and the per-GPU sample state (dcgm_gpu_state), all in ONE
 * transaction per call. Semantics in docs/ingest.md, "dcgm-exporter".
 *
 * All GPUs of one call are taken at the same time at_s (the scrape round's
 * time). A sample is applied only when at_s is after the GPU's last applied
 * sample, so re-ingesting a scrape changes nothing and samples must reach a
 * GPU in time order.
 *
 * Ownership: gl_dcgm_ingest_batch_new() returns a batch the caller frees with
 * gl_dcgm_ingest_batch_free() (NULL no-op). gl_dcgm_ingest_batch_add() copies what it needs:
 * the scrape may be finalised right after. opts strings are borrowed for the
 * call.
 */
#ifndef GL_DCGM_INGEST_H
#define GL_DCGM_INGEST_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/dcgm.h"

#include <stdint.h>

struct gl_store;

struct gl_dcgm_ingest_opts {
	const char *cluster;
	const char *input_name;  /* file name or "N targets", for ingest_runs */
	const char *run_source;  /* ingest_runs.source: NULL = "dcgm" ("nvidia-smi" for its captures) */
	int64_t bucket_s;        /* ingest.bucket_s */
	int64_t max_gap_s;       /* a sample stands for at most this long; capped at bucket_s */
	int64_t absent_grace_s;  /* inventory.absent_grace_s */
	struct gl_dcgm_idle_policy idle;
	double held_mib;         /* idle.held_memory_mib: idle with this much framebuffer used is held idle; <= 0 off */
	int64_t max_skip_reasons;
};

/* The stored name of the source a scrape's GPU came from (gl_dcgm_gpu.source
 * "dcgm", "nvidia_smi", "amd"; and "nvidia-smi" for captures of the tool):
 * "dcgm", "nvidia_gpu_exporter", "amd", "nvidia-smi". */
const char *gl_dcgm_ingest_source_name(const char *scrape_source);

/* Fills opts from the configuration (idle policy, bucket, grace);
 * max_gap_s = 2 x the first dcgm source's interval for this cluster, else
 * 60 s. -GL_ECONFIG when the idle threshold does not parse. */
int gl_dcgm_ingest_opts_init(struct gl_dcgm_ingest_opts *o, const struct gl_config *cfg, const char *cluster,
			     struct gl_err *err) GL_MUSTCHECK;

struct gl_dcgm_ingest_batch;

struct gl_dcgm_ingest_batch *gl_dcgm_ingest_batch_new(int64_t max_skip_reasons);
void gl_dcgm_ingest_batch_free(struct gl_dcgm_ingest_batch *b);
/* Copies the scrape's GPUs. GPUs without a hostname (no label and no node
 * override) are skipped and counted; bad lines are recorded as "input:line:
 * reason". input names the source in those reasons. */
void gl_dcgm_ingest_batch_add(struct gl_dcgm_ingest_batch *b, const struct gl_dcgm_scrape *s, const char *input);
/* Records a target that gave nothing usable (the run becomes 'partial'). */
void gl_dcgm_ingest_batch_fail(struct gl_dcgm_ingest_batch *b, const char *input, const char *why);
/* Records a bad line of an input: "input:line: reason" in the run's
 * reasons, counted as skipped (the run becomes 'partial'). */
void gl_dcgm_ingest_batch_skip(struct gl_dcgm_ingest_batch *b, const char *input, int64_t line, const char *why);
/* One GPU reading of a source other than an exporter scrape (nvidia-smi):
 * strings are copied; "" or NULL is unknown. jobs are hpc_job-like labels
 * (the Slurm jobs whose processes run on it). */
struct gl_dcgm_ingest_batch_gpu {
	const char *node, *uuid, *profile, *model, *driver, *source;
	int gi_id;
	int mig_parent;
	int gpu_index;              /* the source's index of the GPU on its node, -1 unknown */
	const struct gl_dcgm_reading *r;
	const char *const *jobs;
	size_t njobs;
};
void gl_dcgm_ingest_batch_add_gpu(struct gl_dcgm_ingest_batch *b, const struct gl_dcgm_ingest_batch_gpu *g);
/* Lines read, for the run's counters. */
void gl_dcgm_ingest_batch_lines(struct gl_dcgm_ingest_batch *b, int64_t lines);
size_t gl_dcgm_ingest_batch_gpus(const struct gl_dcgm_ingest_batch *b);

struct gl_dcgm_ingest_result {
	int64_t gpus;           /* GPU entities in the batch */
	int64_t nodes;          /* distinct nodes */
	int64_t new_gpus;       /* inventory rows created */
	int64_t applied;        /* samples rolled up */
	int64_t stale;          /* samples at or before the GPU's last one: not applied again */
	int64_t duplicates;     /* the same GPU twice in the batch: first kept */
	int64_t attributed[4];  /* applied samples by best attribution kind (enum gl_dcgm_attrib_kind) */
	int64_t unattributed;   /* applied samples of non-MIG-parent GPUs no job claimed */
	int64_t waiting;        /* samples of unlabelled nodes left (partly) for jobs not known yet */
	int64_t marked_absent;  /* GPUs newly marked absent */
	int64_t bad_lines;      /* skipped scrape lines */
	int64_t failed_inputs;  /* gl_dcgm_ingest_batch_fail() calls */
	int64_t no_host;        /* GPUs dropped for want of a hostname */
};

/* One transaction: inventory, rollups, shares, state, absent marking, the
 * (source 'dcgm', cluster) watermark (raised to at_s, never lowered) and an
 * ingest_runs row. Creates the cluster when missing (kind 'kubernetes' when
 * a GPU carries pod labels, else 'slurm'). res may be NULL. */
int gl_dcgm_ingest(struct gl_store *st, const struct gl_dcgm_ingest_opts *o, struct gl_dcgm_ingest_batch *b, int64_t at_s,
		   struct gl_dcgm_ingest_result *res, struct gl_err *err) GL_MUSTCHECK;

/* Rounds b[0..n) taken at at_s[0..n) (ascending) as one run: each round
 * is one transaction as above, in order; b[0] holds the run's lines,
 * reasons and failures (gl_dcgm_ingest_batch_skip, gl_dcgm_ingest_batch_fail), the
 * others only GPUs. A failure stops the run, the rounds before it stay
 * written (ingesting the same samples again applies only the rest). */
int gl_dcgm_ingest_rounds(struct gl_store *st, const struct gl_dcgm_ingest_opts *o, struct gl_dcgm_ingest_batch *const *b,
			  const int64_t *at_s, size_t n, struct gl_dcgm_ingest_result *res,
			  struct gl_err *err) GL_MUSTCHECK;

/* Inside a jobs ingest's transaction, after its merge: the samples that
 * waited for a job not yet known at scrape time (their hpc_job or pod
 * label matched nothing) and now match one are attributed to it
 * (sql/020). *claimed (may be NULL) counts them. */
int gl_dcgm_ingest_claim_pending(struct gl_store *st, int cluster_id, int64_t *claimed, struct gl_err *err) GL_MUSTCHECK;

#endif
