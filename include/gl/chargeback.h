/* gpuledger — chargeback: exact per-line GPU-seconds and cost from raw sums.
 * Pure (domain): the store fills the raw numerators, this module rounds once
 * per line with carried remainders, shares idle cost and makes the totals
 * reconcile exactly: sum(lines) + idle = total, per step and overall.
 *
 * Ownership: struct gl_chargeback owns its steps, lines and key strings;
 * gl_chargeback_fini() frees them.
 */
#ifndef GL_CHARGEBACK_H
#define GL_CHARGEBACK_H

#include "gl/common.h"
#include "gl/cost.h"

#include <stddef.h>
#include <stdint.h>

#define GL_CHARGEBACK_MAX_DIMS 4

/* shareIdle: NONE keeps idle on its own line; PROPORTIONAL shares each
 * pool's idle (a cluster's, or with gl_chargeback.share_by_model a cluster's GPU
 * model's) over the lines that allocated GPU-time in that pool, so idle
 * never leaves its cluster; OWNER puts dedicated idle on its team's line;
 * PROPORTIONAL_FLEET pools the whole fleet's idle over every line (the old
 * rule, asked for by name). */
enum gl_chargeback_share_idle { GL_CHARGEBACK_SHARE_NONE = 0, GL_CHARGEBACK_SHARE_PROPORTIONAL, GL_CHARGEBACK_SHARE_OWNER, GL_CHARGEBACK_SHARE_PROPORTIONAL_FLEET };

/* The name of a mode ("none", "proportional", "owner", "proportional_fleet"). */
const char *gl_chargeback_share_name(enum gl_chargeback_share_idle share);
/* The mode named s (NULL: none; "true" and "weighted" are proportional):
 * 0, or -GL_EINVAL for a name it does not know. */
int gl_chargeback_share_parse(const char *s, enum gl_chargeback_share_idle *out) GL_MUSTCHECK;
/* The names gl_chargeback_share_parse takes, for error messages. */
#define GL_CHARGEBACK_SHARE_NAMES "none, proportional, proportional_fleet or owner"

/* An idle pool of a step (PROPORTIONAL): its name (cluster, or cluster and
 * model), its unallocated idle, and the allocation of lines an owner filter
 * left out (base_us, which keeps their share of the pool's idle in
 * __idle__). */
struct gl_chargeback_pool {
	char *name;
	gl_cost_i128 idle_us, idle_num, base_us; /* micro-GPU-seconds */
};

/* A line's allocation in one pool (micro-GPU-seconds). */
struct gl_chargeback_part {
	size_t pool;
	gl_cost_i128 us;
};

struct gl_chargeback_line {
	char *key[GL_CHARGEBACK_MAX_DIMS];
	/* raw, exact */
	gl_cost_i128 alloc_us;        /* micro-GPU-seconds allocated (billed) */
	gl_cost_i128 priced_us;       /* of which covered by a rate */
	gl_cost_i128 cost_num;        /* sum of micro-GPU-seconds x micros per GPU-hour */
	gl_cost_i128 idle_owner_num;  /* shareIdle=owner: idle cost numerator charged to this line */
	gl_cost_i128 idle_owner_us;
	double busy_s, idle_s, observed_s; /* exporter-observed, job-attributed */
	/* open jobs' time after the last moment a source saw them (apart from
	 * the figures above unless the query included it) */
	gl_cost_i128 unobs_us, unobs_num; /* micro-GPU-seconds */
	gl_cost_i128 implausible_us;  /* of unobs_us: past the jobs' own time limits */
	struct gl_chargeback_part *parts;          /* PROPORTIONAL: allocation per idle pool */
	size_t n_parts, cap_parts;
	/* results */
	int64_t alloc_s;
	int64_t unpriced_s;
	int64_t cost_micros;
	int64_t idle_share_micros;
	int64_t idle_share_s;
	int64_t total_micros;
	int64_t unobserved_s, unobserved_micros, implausible_s;
};

struct gl_chargeback_step {
	int64_t start_s, end_s;
	struct gl_chargeback_line *lines;
	size_t n_lines, cap_lines;
	/* the lines by key (open addressing, line index + 1, 0 free), kept by
	 * gl_chargeback_add_line for gl_chargeback_find_line: a query of 100,000 jobs' lines
	 * looked each row's line up by a scan, 30 s of strcmp */
	size_t *index, cap_index;
	/* unallocated idle capacity of the step */
	int capacity_known;
	gl_cost_i128 idle_us, idle_num, overalloc_us;
	int64_t idle_s, idle_micros;       /* after sharing: what stays in __idle__ */
	int64_t idle_total_s, idle_total_micros; /* before sharing */
	int64_t overalloc_s;
	/* shareIdle=proportional when the lines are filtered by owner: the
	 * GPU-time the unfiltered lines held (micro-GPU-seconds), so a shown
	 * line gets the share it has of the whole idle and the rest stays in
	 * __idle__; 0 = the lines are all there is */
	gl_cost_i128 share_base_us;
	/* PROPORTIONAL: the idle pools (every idle row and every line's
	 * allocation named by pool); none: the step shares as one pool */
	struct gl_chargeback_pool *pools;
	size_t n_pools, cap_pools;
	/* totals */
	int64_t total_alloc_s, total_cost_micros, total_micros, total_s;
	int64_t unobserved_s, unobserved_micros, implausible_s;
	size_t implausible_lines;
};

struct gl_chargeback {
	size_t n_dims;
	enum gl_chargeback_share_idle share;
	int share_by_model;              /* PROPORTIONAL: a pool per cluster and GPU model */
	struct gl_chargeback_step *steps;
	size_t n_steps;
	int64_t total_alloc_s, total_cost_micros, total_idle_micros, total_idle_s, total_micros, total_s;
	int64_t unobserved_s, unobserved_micros, implausible_s;
	size_t implausible_lines;
	/* the most lines (over all steps) an answer may hold; 0 = no bound.
	 * What one answer costs in memory is its lines and the query rows
	 * behind them (docs/security.md, "Heavy requests"). */
	size_t max_lines;
	int idle_withheld;               /* gl_chargeback_withhold_idle ran: no __idle__ figures to show */
};

void gl_chargeback_init(struct gl_chargeback *cb, size_t n_dims, enum gl_chargeback_share_idle share, size_t n_steps);
void gl_chargeback_fini(struct gl_chargeback *cb);
/* The lines of every step. */
size_t gl_chargeback_n_lines(const struct gl_chargeback *cb);
/* Appends a line to step i; keys are copied. */
struct gl_chargeback_line *gl_chargeback_add_line(struct gl_chargeback *cb, size_t step, const char *const *keys);
/* The line of step i with these keys, NULL when none. */
struct gl_chargeback_line *gl_chargeback_find_line(struct gl_chargeback *cb, size_t step, const char *const *keys);
/* The pool of step i named name, made when new. */
size_t gl_chargeback_pool_of(struct gl_chargeback *cb, size_t step, const char *name);
/* Adds us (micro-GPU-seconds) of line l's allocation to pool. */
void gl_chargeback_line_in_pool(struct gl_chargeback_line *l, size_t pool, gl_cost_i128 us);
/* The one order of chargeback items in every view (JSON, CSV, the
 * dashboard's table, the showback report's owners): by their aggregate
 * keys, the first dimension first, each compared bytewise (strcmp; NULL as
 * ""). A portal diffing two answers finds an owner at the same place
 * whatever its cost, and built days and live pieces answer alike. */
int gl_chargeback_keys_cmp(const char *const *a, const char *const *b, size_t n);
/* Puts each step's lines in that order (pointers to lines taken before
 * are stale after), then rounds, shares and totals every step. */
int gl_chargeback_finish(struct gl_chargeback *cb) GL_MUSTCHECK;

/* For a token's scope, after gl_chargeback_finish: what stayed in __idle__ (the
 * fleet's idle less the shares on the lines shown) leaves every step and
 * the totals, which become the sums of the lines. The lines themselves,
 * their idle shares included, are unchanged. capacity_known stays (it
 * says whether the shares could be computed); idle_withheld is set. */
void gl_chargeback_withhold_idle(struct gl_chargeback *cb);

/* The money every view of a finished cb shows (gl_cost_shown_rows, the
 * rule the showback report shows its owners by): the total rounded once,
 * each step's total its shown part of that, and in each step the lines
 * (named by their keys joined with '/') and __idle__ the shown parts of
 * the step's, each line's cost and idle share the parts of its total. So
 * the lines add up to the total shown in every format, and an owner shows
 * the same cents in /v1/chargeback and the report of the same month.
 * Ownership: gl_chargeback_shown_fini() frees the arrays. */
struct gl_chargeback_shown {
	int64_t total;
	int64_t *step_total, *idle;        /* per step */
	int64_t **cost, **share, **line;   /* per step, per line */
	size_t n_steps;
};
void gl_chargeback_shown_compute(const struct gl_chargeback *cb, int minor, struct gl_chargeback_shown *out);
void gl_chargeback_shown_fini(struct gl_chargeback_shown *s);

/* The steps whose capacity (hence idle) is known. */
size_t gl_chargeback_capacity_steps(const struct gl_chargeback *cb);

/* 1 when s is the name of a synthetic row of chargeback and showback
 * output ("__idle__", "__unallocated__"): an owner so named would be
 * indistinguishable from it (and, as a team, merged into it). */
int gl_chargeback_name_reserved(const char *s);

#endif
