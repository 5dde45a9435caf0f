/* gpuledger — idle GPU time for /v1/idle: allocated-but-idle time per
 * owner and the jobs with the most of it (from exporter rollups,
 * gl_job_usage), and unallocated idle capacity per cluster, partition and
 * model (capacity less unavailable less allocation, settled as
 * /v1/chargeback settles it).
 *
 * Ownership: gl_idle_read() fills a caller-owned struct gl_idle that
 * gl_idle_fini() empties (also after a failure).
 */
#ifndef GL_IDLE_H
#define GL_IDLE_H

#include "gl/capacity.h"
#include "gl/common.h"
#include "gl/store.h"
#include "gl/tokens.h"

#include <stdint.h>

/* Exporter-observed time of an owner's jobs in the window (GPU-seconds,
 * rounded); the idle part priced as each job is priced, null when no job
 * of the owner has a rate. */
struct gl_idle_owner {
	char *key;
	double idle_gpu_s, busy_gpu_s, observed_gpu_s;
	int64_t idle_micros, unpriced_jobs;
	double held_idle_gpu_s;     /* of the idle, GPU memory held with no kernels running */
	int idle_micros_null;
};

/* A job with idle GPU time in the window, most first. */
struct gl_idle_job {
	char *cluster, *job_id, *owner, *user_name, *state;
	char *gpu_model;            /* NULL when unknown */
	int64_t gpu_micro;          /* micro-GPUs billed (GL_GPU_MICRO = one GPU) */
	double idle_gpu_s, busy_gpu_s, held_idle_gpu_s;
	int64_t idle_micros;        /* its cost times idle / allocated; null: no rate */
	int idle_micros_null;
	int64_t from_s, to_s;       /* the job inside the window */
};

/* Unallocated idle of a capacity key, in whole GPU-seconds; priced at the
 * rate in force while it was idle (null: no rate for the model). */
struct gl_idle_fleet {
	char *cluster, *partition, *gpu_model;
	int64_t reported_s, unavailable_s, allocated_s, idle_s, over_s, idle_micros;
	int64_t unobserved_s;       /* capacity past the inventory's last snapshot + grace (docs/capacity.md) */
	int idle_micros_null;
};

struct gl_idle {
	struct gl_idle_owner *owners;   /* most idle first */
	size_t n_owners;
	struct gl_idle_job *jobs;
	size_t n_jobs;
	struct gl_idle_fleet *fleet;    /* most idle first */
	size_t n_fleet;
	int have_capacity;              /* 0: no capacity source in this database (no fleet rows) */
	char *text[3];
};

/* 1 when dim is one dimension idle can be grouped by (include/gl/accounting.h). */
int gl_idle_dim_valid(const char *dim);
/* The window [start_s, end_s) up to now_s (idle that has not happened is no
 * waste yet), by dim, at most limit jobs; cap says how capacity past a
 * stale inventory counts. scope (n_scope 0: every job): a token's; only its
 * jobs count (the owner at the job's start), and the fleet's unallocated
 * idle, every owner's, is not read (n_fleet 0). */
int gl_idle_read(struct gl_store *st, const char *dim, int64_t start_s, int64_t end_s, int64_t now_s, long limit,
		 const struct gl_capacity_observed *cap, const struct gl_tokens_scope *scope, size_t n_scope,
		 struct gl_idle *out, struct gl_err *err) GL_MUSTCHECK;
void gl_idle_fini(struct gl_idle *idle);

#endif
