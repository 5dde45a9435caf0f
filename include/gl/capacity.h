/* gpuledger — capacity and availability per step: reported, allocated, down,
 * planned down, reserved and idle GPU-seconds per cluster (and partition or
 * GPU model), settled so that conservation holds exactly in every row:
 *
 *   allocated + down + planned_down + reserved + idle == reported
 *
 * The rows and their pure rules (domain); capstore.h reads them from the
 * database (gl_capacity() of sql/010_capacity.sql, allocation from `jobs`).
 * docs/capacity.md has the rules.
 *
 * Ownership: rows hold no pointers.
 */
#ifndef GL_CAPACITY_H
#define GL_CAPACITY_H

#include "gl/common.h"
#include "gl/window.h"

#include <stddef.h>
#include <stdint.h>

enum gl_capacity_aggregate { GL_CAPACITY_AGG_CLUSTER = 0, GL_CAPACITY_AGG_PARTITION, GL_CAPACITY_AGG_MODEL, GL_CAPACITY_AGG_WORKLOAD_TYPE };

/* The row of aggregate=workload_type that holds a cluster's capacity no
 * job of any type was allocated (idle, down, reserved, ...). */
#define GL_CAPACITY_UNALLOCATED_KEY "__idle__"

struct gl_capacity_row {
	size_t step;                 /* index into the steps given */
	int64_t start_s, end_s;
	char cluster[128];
	char key[128];               /* partition, GPU model or workload type; "" for aggregate=cluster */
	/* inputs as measured */
	int64_t raw_reported_gpu_seconds, raw_allocated_micro_gpu_seconds, raw_down_gpu_seconds,
		raw_planned_down_gpu_seconds, raw_reserved_gpu_seconds;
	/* allocation on nodes while they were down or drained (one job's share
	 * per node: its held micro-GPUs / its node count) */
	int64_t raw_drained_alloc_micro_gpu_seconds;
	/* capacity of open spans past their source's last snapshot plus the
	 * absent grace: nobody saw those GPUs (in reported only when the
	 * query included it) */
	int64_t raw_unobserved_gpu_seconds;
	/* settled (gl_capacity_settle) */
	int64_t reported_gpu_seconds, allocated_gpu_seconds, down_gpu_seconds, planned_down_gpu_seconds,
		reserved_gpu_seconds, idle_gpu_seconds;
	int64_t over_gpu_seconds;    /* what the clamps cut (allocation or downtime beyond capacity) */
	/* Part of allocated_gpu_seconds spent on down or drained nodes: a
	 * breakdown, not a sixth term of conservation. */
	int64_t drained_allocated_gpu_seconds;
	/* Capacity no source observed (docs/capacity.md): beside the
	 * conservation, never inside, unless the query included it. */
	int64_t unobserved_gpu_seconds;
};

/* Settles one row from its raw inputs, in sreport's order
 * (_setup_cluster_tres_usage): allocated <= reported, then down, planned
 * down and reserved are cut to what is left; idle is the rest. Pure. */
void gl_capacity_settle(struct gl_capacity_row *r);

/* Adds r's raw inputs (the raw_* fields) to t's. Pure. */
void gl_capacity_add_raw(struct gl_capacity_row *t, const struct gl_capacity_row *r);

/* aggregate=workload_type. in[0..n): raw rows sorted by step and
 * cluster; of each step and cluster, the one with key "" holds the
 * capacity inputs (and no allocation), the others one workload type's
 * allocation each (and no capacity). Each step and cluster is settled as
 * one row (so its figures are aggregate=cluster's to the second), then
 * its allocated and drained-allocated GPU-seconds are split over its types
 * in proportion to their raw micro-GPU-seconds, by largest remainder (ties:
 * the earlier row), and the rest of its capacity (idle, down, reserved,
 * over, unobserved, and reported less allocated) is one more row keyed
 * GL_CAPACITY_UNALLOCATED_KEY. A type row's reported is its allocated. *out
 * (the caller frees) gets at most 2n rows. Pure. */
void gl_capacity_by_type(const struct gl_capacity_row *in, size_t n, struct gl_capacity_row **out, size_t *nout);

/* Saturation: allocated / (reported - down - planned_down); -1 when nothing was available. */
double gl_capacity_saturation(const struct gl_capacity_row *r);

/* The one definition of every ratio of GPU time (saturation, wasted share,
 * utilisation) for every view: part / whole, -1 (no data) when whole is
 * not positive. Ratios are taken over GPU time with capacity data only;
 * allocation beyond the inventory (gl_capacity_beyond) is shown beside
 * them, never inside (a month's saturation of 17,223 % divided one
 * cluster's allocation by another's capacity). */
double gl_capacity_ratio(int64_t part, int64_t whole);
/* Of allocated_s GPU-seconds over a fleet whose capacity data says
 * available_s (reported less unavailable) and unallocated idle idle_s: the
 * allocation inside the inventory (available less idle, at most
 * allocated_s) and beyond it (the rest: clusters without capacity data,
 * allocation above a cluster's capacity). */
int64_t gl_capacity_inside(int64_t available_s, int64_t idle_s, int64_t allocated_s);
int64_t gl_capacity_beyond(int64_t available_s, int64_t idle_s, int64_t allocated_s);

/* How capacity past a node's last snapshot counts: grace_s is
 * inventory.absent_grace_s (negative: no horizon, nothing unobserved);
 * include 1 keeps the unobserved part in the figures (sreport's semantics),
 * 0 leaves it out of them. Either way it is named in
 * unobserved_gpu_seconds. */
struct gl_capacity_observed {
	int64_t grace_s;
	int include;
};

#endif
