/* gpuledger — queue waits for /v1/queue: per key, the waits of the GPU
 * jobs that started in a window, and the demand pending now.
 *
 * Ownership: gl_queue_read() fills a caller-owned struct gl_queue that
 * gl_queue_fini() empties (also after a failure).
 */
#ifndef GL_QUEUE_H
#define GL_QUEUE_H

#include "gl/common.h"
#include "gl/tokens.h"
#include "gl/store.h"

#include <stdint.h>

/* Waits in seconds of the jobs that started in the window under one key;
 * a figure no job had (no submit time) is null. */
struct gl_queue_wait {
	char *key;
	int64_t jobs, gpu_micro;                    /* jobs started, their micro-GPUs */
	int64_t p50_s, p90_s, p99_s, max_s, eligible_p50_s;
	int64_t mean_ds;                            /* the mean in tenths of a second, rounded */
	int p50_s_null, p90_s_null, p99_s_null, max_s_null, eligible_p50_s_null, mean_ds_null;
};

/* Jobs queued now (a pending array row counts for all its tasks). */
struct gl_queue_pending {
	char *key;
	int64_t jobs, gpu_micro;
	int64_t longest_wait_s;   /* up to the last time a source saw the job pending */
	int64_t unobserved_s;     /* the longest time since then, to now: not known to be waiting */
	int lower_bound;  /* an array's task list was cut short: at least these */
};

struct gl_queue {
	struct gl_queue_wait *waits;
	size_t n_waits;
	struct gl_queue_pending *pending;
	size_t n_pending;
	char *text[2];
};

/* 1 when dim is a dimension waits can be grouped by: the chargeback ones
 * (include/gl/accounting.h) and "gpus" (the GPUs a job holds or asks for). */
int gl_queue_dim_valid(const char *dim);
/* Waits of the jobs started in [start_s, end_s) and pending at now_s, by
 * key (dim), in key order. */
/* scope (n_scope 0: every job): a token's; only the jobs inside it count
 * (team, project, cost_center of the owner at the job's start). */
int gl_queue_read(struct gl_store *st, const char *dim, int64_t start_s, int64_t end_s, int64_t now_s,
		  const struct gl_tokens_scope *scope, size_t n_scope, struct gl_queue *q, struct gl_err *err) GL_MUSTCHECK;
void gl_queue_fini(struct gl_queue *q);

#endif
