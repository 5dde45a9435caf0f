/* Settling capacity rows (see include/gl/capacity.h). Pure. */
#include "gl/capacity.h"

static int64_t take(int64_t want, int64_t *left)
{
	int64_t t = want < 0 ? 0 : want;
	if (t > *left)
		t = *left;
	*left -= t;
	return t;
}

void gl_capacity_settle(struct gl_cap_row *r)
{
	int64_t left = r->raw_reported_gpu_seconds < 0 ? 0 : r->raw_reported_gpu_seconds;
	/* micro-GPU-seconds -> GPU-seconds once per row, half up as chargeback
	 * rounds them, so fractional shares (MIG, time-slicing) round once and
	 * the two endpoints agree */
	int64_t alloc = r->raw_allocated_micro_gpu_seconds < 0
				 ? 0
				 : (r->raw_allocated_micro_gpu_seconds + GL_GPU_MICRO / 2) / GL_GPU_MICRO;
	int64_t wanted = alloc + r->raw_down_gpu_seconds + r->raw_planned_down_gpu_seconds + r->raw_reserved_gpu_seconds;
	r->reported_gpu_seconds = left;
	/* slurmdbd's order: allocation first, then Down, then PLND Down */
	r->allocated_gpu_seconds = take(alloc, &left);
	r->down_gpu_seconds = take(r->raw_down_gpu_seconds, &left);
	r->planned_down_gpu_seconds = take(r->raw_planned_down_gpu_seconds, &left);
	r->reserved_gpu_seconds = take(r->raw_reserved_gpu_seconds, &left);
	r->idle_gpu_seconds = left;
	r->drained_allocated_gpu_seconds = (r->raw_drained_alloc_micro_gpu_seconds + GL_GPU_MICRO / 2) / GL_GPU_MICRO;
	if (r->drained_allocated_gpu_seconds < 0)
		r->drained_allocated_gpu_seconds = 0;
	if (r->drained_allocated_gpu_seconds > r->allocated_gpu_seconds)
		r->drained_allocated_gpu_seconds = r->allocated_gpu_seconds;
	r->unobserved_gpu_seconds = r->raw_unobserved_gpu_seconds < 0 ? 0 : r->raw_unobserved_gpu_seconds;
	r->over_gpu_seconds = wanted - (r->allocated_gpu_seconds + r->down_gpu_seconds + r->planned_down_gpu_seconds +
					r->reserved_gpu_seconds);
}

double gl_capacity_ratio(int64_t part, int64_t whole)
{
	return whole > 0 ? (double)part / (double)whole : -1;
}

int64_t gl_capacity_inside(int64_t available_s, int64_t idle_s, int64_t allocated_s)
{
	int64_t in = available_s - idle_s;
	if (in < 0)
		in = 0;
	return in < allocated_s ? in : allocated_s;
}

int64_t gl_capacity_beyond(int64_t available_s, int64_t idle_s, int64_t allocated_s)
{
	return allocated_s - gl_capacity_inside(available_s, idle_s, allocated_s);
}

double gl_capacity_saturation(const struct gl_cap_row *r)
{
	/* a settled row's allocation is within its capacity (the rest is
	 * over_gpu_seconds, beside it) */
	return gl_capacity_ratio(r->allocated_gpu_seconds,
				 r->reported_gpu_seconds - r->down_gpu_seconds - r->planned_down_gpu_seconds);
}
