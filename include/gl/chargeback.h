/* gpuledger — chargeback: exact per-line GPU-seconds and cost from raw sums.
 * Pure (domain): the store fills the raw numerators, this module rounds once
 * per line with carried remainders, shares idle cost and makes the totals
 * reconcile exactly: sum(lines) + idle = total, per step and overall.
 *
 * Ownership: struct gl_cb owns its steps, lines and key strings;
 * gl_cb_fini() frees them.
 */
#ifndef GL_CHARGEBACK_H
#define GL_CHARGEBACK_H

#include "gl/common.h"
#include "gl/cost.h"

#include <stddef.h>
#include <stdint.h>

#define GL_CB_MAX_DIMS 4

enum gl_share_idle { GL_SHARE_NONE = 0, GL_SHARE_PROPORTIONAL, GL_SHARE_OWNER };

struct gl_cb_line {
	char *key[GL_CB_MAX_DIMS];
	/* raw, exact */
	gl_i128 alloc_us;        /* micro-GPU-seconds allocated (billed) */
	gl_i128 priced_us;       /* of which covered by a rate */
	gl_i128 cost_num;        /* sum of micro-GPU-seconds x micros per GPU-hour */
	gl_i128 idle_owner_num;  /* shareIdle=owner: idle cost numerator charged to this line */
	gl_i128 idle_owner_us;
	double busy_s, idle_s, observed_s; /* exporter-observed, job-attributed */
	/* results */
	int64_t alloc_s;
	int64_t unpriced_s;
	int64_t cost_micros;
	int64_t idle_share_micros;
	int64_t idle_share_s;
	int64_t total_micros;
};

struct gl_cb_step {
	int64_t start_s, end_s;
	struct gl_cb_line *lines;
	size_t n_lines, cap_lines;
	/* unallocated idle capacity of the step */
	int capacity_known;
	gl_i128 idle_us, idle_num, overalloc_us;
	int64_t idle_s, idle_micros;       /* after sharing: what stays in __idle__ */
	int64_t idle_total_s, idle_total_micros; /* before sharing */
	int64_t overalloc_s;
	/* shareIdle=proportional when the lines are filtered by owner: the
	 * GPU-time the unfiltered lines held (micro-GPU-seconds), so a shown
	 * line gets the share it has of the whole idle and the rest stays in
	 * __idle__; 0 = the lines are all there is */
	gl_i128 share_base_us;
	/* totals */
	int64_t total_alloc_s, total_cost_micros, total_micros, total_s;
};

struct gl_cb {
	size_t n_dims;
	enum gl_share_idle share;
	struct gl_cb_step *steps;
	size_t n_steps;
	int64_t total_alloc_s, total_cost_micros, total_idle_micros, total_idle_s, total_micros, total_s;
};

void gl_cb_init(struct gl_cb *cb, size_t n_dims, enum gl_share_idle share, size_t n_steps);
void gl_cb_fini(struct gl_cb *cb);
/* Appends a line to step i; keys are copied. */
struct gl_cb_line *gl_cb_add_line(struct gl_cb *cb, size_t step, const char *const *keys);
/* Rounds, shares and totals every step. */
int gl_cb_finish(struct gl_cb *cb) GL_MUSTCHECK;

/* The steps whose capacity (hence idle) is known. */
size_t gl_cb_capacity_steps(const struct gl_cb *cb);

/* 1 when s is the name of a synthetic row of chargeback and showback
 * output ("__idle__", "__unallocated__"): an owner so named would be
 * indistinguishable from it (and, as a team, merged into it). */
int gl_cb_name_reserved(const char *s);

#endif
