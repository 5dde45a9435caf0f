/* gpuledger — reading jobs for /v1/jobs: newest first, keyset paging, and
 * with a window each job's GPU-seconds, cost and exporter busy/idle there.
 *
 * Ownership: gl_joblist_query() fills a caller-owned struct gl_joblist that
 * gl_joblist_fini() empties (also after a failure).
 */
#ifndef GL_JOBLIST_H
#define GL_JOBLIST_H

#include "gl/common.h"
#include "gl/store.h"
#include "gl/tokens.h"

#include <stdint.h>

struct gl_joblist_query {
	const char *cluster, *state, *job_id; /* NULL: any */
	/* a token's scope (n_scope 0: every job): team, project and cost_center
	 * are the job's owner at its start (gl_owner), account, namespace and
	 * user its own columns */
	const struct gl_tokens_scope *scope;
	size_t n_scope;
	int64_t limit, offset;
	int64_t cursor;            /* the last job_pk of the previous page; 0: from the newest */
	int windowed;              /* 1: [win_start_s, win_end_s) */
	int64_t win_start_s, win_end_s, now_s;
};

struct gl_joblist_row {
	char *cluster, *job_key, *job_id, *name, *user_name, *account, *partition, *qos, *namespace, *state;
	int64_t submit_s, start_s, end_s;          /* GL_TIME_NONE when unknown */
	int64_t elapsed_s, queue_wait_s;
	int elapsed_s_null, queue_wait_s_null;
	int64_t gpu_micro, req_gpu_micro;         /* micro-GPUs (GL_GPU_MICRO = one GPU) */
	char *gpu_type, *node_list;
	int64_t job_pk;                            /* the cursor of the next page */
	/* windowed only: GPU-seconds and cost inside the window (cost NULL when
	 * no rate covers the job's model), exporter busy / idle (NULL: no data)
	 * and of the idle, the time GPU memory was held with no kernels running */
	int64_t gpu_seconds, cost_micros;
	double busy_gpu_s, idle_gpu_s, held_idle_gpu_s;
	int gpu_seconds_null, cost_micros_null, busy_gpu_s_null, idle_gpu_s_null, held_idle_gpu_s_null;
	/* an open job: the last time a source saw it open (GL_TIME_NONE: ended,
	 * or never seen after its start) and, windowed, the GPU-seconds of the
	 * window after it up to now, which gpu_seconds and cost leave out */
	int64_t seen_s, unobserved_gpu_seconds;
	int unobserved_gpu_seconds_null;
};

struct gl_joblist {
	struct gl_joblist_row *rows;
	size_t n;    /* at most limit */
	int more;    /* 1 when a row follows the page */
	char *text;
};

int gl_joblist_query(struct gl_store *st, const struct gl_joblist_query *q, struct gl_joblist *out,
		     struct gl_err *err) GL_MUSTCHECK;
void gl_joblist_fini(struct gl_joblist *l);

#endif
