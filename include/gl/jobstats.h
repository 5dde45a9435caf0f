/* gpuledger — the per-job part of the monthly report, computed in one pass
 * over the month's jobs: top jobs by cost and by allocated-idle cost,
 * failed-job waste, energy and queue-wait percentiles. Pure: no I/O, no
 * clock, no libpq; the store streams the jobs in.
 *
 * Jobs are added per "group" (a caller's index, e.g. one distinct set of
 * owner-relevant attributes) because the owner of a group is only known
 * after the pass; gl_jobstats_fold maps groups to owners at the end, so
 * sums are exact and percentiles are over the owner's own jobs.
 *
 * The cost of a job is the chargeback's: per rate row of its rate model in
 * force during the job, micro-units per GPU-hour x micro-GPUs x seconds,
 * summed, then divided by 3,600,000,000 and rounded half up; a span in seconds
 * is PostgreSQL's (date_part('epoch', b) - date_part('epoch', a))::bigint,
 * so the numbers equal what SQL over the same rows would give.
 *
 * Ownership: a struct gl_jobstats owns its arrays and the strings of its
 * top jobs (copied on entry); gl_jobstats_fini frees them. Rates are
 * borrowed for the duration of a call.
 */
#ifndef GL_JOBSTATS_H
#define GL_JOBSTATS_H

#include "gl/common.h"
#include "gl/cost.h"

#include <stddef.h>
#include <stdint.h>

#define GL_JOBSTATS_TOP 20

/* One rate row: [from_us, to_us) in Unix microseconds (INT64_MIN / INT64_MAX
 * for -infinity / infinity). */
struct gl_jobstats_rate {
	int64_t from_us, to_us;
	int64_t micros_per_gpu_hour;
};

/* (date_part('epoch', b) - date_part('epoch', a))::bigint for finite Unix
 * microseconds a and b: each side rounded to a double, the difference
 * rounded half to even. */
int64_t gl_jobstats_span_s(int64_t a_us, int64_t b_us);

/* Cost numerator of a job clipped to [s0_us, e0_us): Σ over the rates (of
 * its rate model) that overlap it of micros x gpu_micro x span. */
gl_cost_i128 gl_jobstats_cost_num(const struct gl_jobstats_rate *rates, size_t n, int64_t s0_us, int64_t e0_us,
			     int64_t gpu_micro);

/* Seconds of [s0_us, e0_us) that the rates cover (as gl_jobstats_span_s
 * counts them): the rest of a job's time is unpriced. */
int64_t gl_jobstats_priced_s(const struct gl_jobstats_rate *rates, size_t n, int64_t s0_us, int64_t e0_us);

/* 1 when the state's first word is FAILED, TIMEOUT, NODE_FAIL,
 * OUT_OF_MEMORY or BOOT_FAIL (any case): "CANCELLED by 0" is not. */
int gl_jobstats_state_failed(const char *state);

/* The part of a job's cost that part_us of its alloc_us (both micro-GPU-
 * seconds) cost: cost x part / allocated, half up; 0 when nothing was
 * allocated. Busy and idle inside an allocation are priced by it, per job
 * (jobs differ in price, so an owner's idle is not worth its average). */
int64_t gl_jobstats_part_cost(int64_t cost_micros, int64_t alloc_us, int64_t part_us);

struct gl_jobstats_job {
	int64_t job_pk;
	const char *job_id, *cluster, *state; /* borrowed; copied when the job enters a top list */
	uint32_t group, partition;
	int64_t gpu_micro;
	int64_t alloc_us;   /* micro-GPU-seconds in the month */
	int64_t cost_micros;
	int64_t unpriced_us; /* of alloc_us, the part no rate covers */
	int observed;       /* exporter data covers some of the job */
	int64_t idle_us;    /* allocated-idle micro-GPU-seconds (exporter) */
	int64_t busy_us;    /* busy micro-GPU-seconds (exporter) */
	int has_wait;       /* started in the month with a known queue time */
	int64_t wait_s;     /* >= 0 */
	int has_energy;
	int64_t energy_mj;
};

struct gl_jobstats_top {
	int64_t job_pk;
	char *job_id, *cluster, *state;
	uint32_t group;
	int64_t gpu_micro, alloc_s, cost_micros;
	int64_t unpriced_s; /* of alloc_s, not covered by a rate */
	int observed;
	int64_t idle_s, idle_micros;
	int64_t key;        /* what the list is ordered by (cost or idle cost) */
};

struct gl_jobstats_wait {
	uint32_t group, partition;
	int64_t wait_s;
};

struct gl_jobstats {
	struct gl_jobstats_top top_cost[GL_JOBSTATS_TOP], top_idle[GL_JOBSTATS_TOP];
	size_t n_top_cost, n_top_idle;
	size_t n_groups;            /* 1 + the largest group seen */
	int64_t *failed_us, *failed_micros; /* per group */
	int64_t *busy_micros, *aidle_micros; /* per group: Σ of each observed job's cost x busy (idle) / allocated */
	int *has_energy;
	int64_t *energy_mj;
	struct gl_jobstats_wait *waits;
	size_t n_waits, cap_waits, cap_groups;
};

/* Per owner after gl_jobstats_fold. */
struct gl_jobstats_owner {
	int64_t failed_s, failed_micros;
	int64_t busy_micros, aidle_micros; /* each job's cost x busy (idle) / allocated, summed */
	int has_energy;
	int64_t energy_mj;
	size_t n_waits;
	int64_t p50_s, p90_s, p99_s;
};

/* percentile_disc (p in (0, 1]) of sorted values, n > 0. */
int64_t gl_jobstats_percentile(const int64_t *sorted, size_t n, double p);

void gl_jobstats_init(struct gl_jobstats *st);
void gl_jobstats_add(struct gl_jobstats *st, const struct gl_jobstats_job *j);
/* owner_of[g] < n_owners for every group g < st->n_groups; fills
 * owners[n_owners] (zeroed first) and waits per partition: part[n_parts]
 * (the n_waits of a partition with no wait is 0). Sorts st->waits. */
void gl_jobstats_fold(struct gl_jobstats *st, const uint32_t *owner_of, size_t n_owners,
		      struct gl_jobstats_owner *owners, size_t n_parts, struct gl_jobstats_owner *parts);
void gl_jobstats_fini(struct gl_jobstats *st);

#endif
