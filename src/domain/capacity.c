/* Settling capacity rows (see include/gl/capacity.h). Pure. */
#include "gl/capacity.h"
#include "gl/cost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t take(int64_t want, int64_t *left)
{
	int64_t t = want < 0 ? 0 : want;
	if (t > *left)
		t = *left;
	*left -= t;
	return t;
}

void gl_capacity_settle(struct gl_capacity_row *r)
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

double gl_capacity_saturation(const struct gl_capacity_row *r)
{
	/* a settled row's allocation is within its capacity (the rest is
	 * over_gpu_seconds, beside it) */
	return gl_capacity_ratio(r->allocated_gpu_seconds,
				 r->reported_gpu_seconds - r->down_gpu_seconds - r->planned_down_gpu_seconds);
}

/* Splits total over the weights w[0..n) (clamped at 0) into out[0..n),
 * which add up to total: floors, then one each by largest remainder. */
static void split(int64_t total, const int64_t *w, size_t n, int64_t *out)
{
	gl_cost_i128 sw = 0, left = total;
	for (size_t i = 0; i < n; i++)
		sw += w[i] > 0 ? w[i] : 0;
	for (size_t i = 0; i < n; i++) {
		out[i] = sw > 0 && w[i] > 0 ? (int64_t)((gl_cost_i128)total * w[i] / sw) : 0;
		left -= out[i];
	}
	while (sw > 0 && left > 0) {
		size_t best = n;
		gl_cost_i128 br = -1;
		for (size_t i = 0; i < n; i++) {
			gl_cost_i128 r = w[i] > 0 ? (gl_cost_i128)total * w[i] % sw : -1;
			/* a part given its unit already ranks below the others */
			if (w[i] > 0 && out[i] == (int64_t)((gl_cost_i128)total * w[i] / sw) && r > br) {
				br = r;
				best = i;
			}
		}
		if (best == n)
			break;
		out[best]++;
		left--;
	}
}

void gl_capacity_add_raw(struct gl_capacity_row *t, const struct gl_capacity_row *r)
{
	t->raw_reported_gpu_seconds += r->raw_reported_gpu_seconds;
	t->raw_allocated_micro_gpu_seconds += r->raw_allocated_micro_gpu_seconds;
	t->raw_down_gpu_seconds += r->raw_down_gpu_seconds;
	t->raw_planned_down_gpu_seconds += r->raw_planned_down_gpu_seconds;
	t->raw_reserved_gpu_seconds += r->raw_reserved_gpu_seconds;
	t->raw_drained_alloc_micro_gpu_seconds += r->raw_drained_alloc_micro_gpu_seconds;
	t->raw_unobserved_gpu_seconds += r->raw_unobserved_gpu_seconds;
}

/* One step and cluster, in[0..n), onto o: its types, then the rest. */
static size_t by_type_group(const struct gl_capacity_row *in, size_t n, struct gl_capacity_row *o)
{
	struct gl_capacity_row tot;
	int64_t *w = gl_xcalloc(n + 1, sizeof *w), *dw = gl_xcalloc(n + 1, sizeof *dw), *a = gl_xcalloc(n + 1, sizeof *a),
		*d = gl_xcalloc(n + 1, sizeof *d);
	size_t k = 0;

	memset(&tot, 0, sizeof tot);
	for (size_t i = 0; i < n; i++) {
		gl_capacity_add_raw(&tot, &in[i]);
		w[i] = in[i].key[0] ? in[i].raw_allocated_micro_gpu_seconds : 0;
		dw[i] = in[i].key[0] ? in[i].raw_drained_alloc_micro_gpu_seconds : 0;
	}
	gl_capacity_settle(&tot);
	split(tot.allocated_gpu_seconds, w, n, a);
	split(tot.drained_allocated_gpu_seconds, dw, n, d);
	for (size_t i = 0; i < n; i++) {
		if (!in[i].key[0])
			continue;
		memset(&o[k], 0, sizeof o[k]);
		o[k].step = in[i].step;
		o[k].start_s = in[i].start_s;
		o[k].end_s = in[i].end_s;
		snprintf(o[k].cluster, sizeof o[k].cluster, "%s", in[i].cluster);
		snprintf(o[k].key, sizeof o[k].key, "%s", in[i].key);
		o[k].raw_allocated_micro_gpu_seconds = in[i].raw_allocated_micro_gpu_seconds;
		o[k].raw_drained_alloc_micro_gpu_seconds = in[i].raw_drained_alloc_micro_gpu_seconds;
		o[k].allocated_gpu_seconds = o[k].reported_gpu_seconds = a[i];
		o[k].drained_allocated_gpu_seconds = d[i];
		k++;
	}
	o[k] = tot;
	o[k].step = in[0].step;
	o[k].start_s = in[0].start_s;
	o[k].end_s = in[0].end_s;
	snprintf(o[k].cluster, sizeof o[k].cluster, "%s", in[0].cluster);
	snprintf(o[k].key, sizeof o[k].key, "%s", GL_CAPACITY_UNALLOCATED_KEY);
	o[k].reported_gpu_seconds = tot.reported_gpu_seconds - tot.allocated_gpu_seconds;
	o[k].allocated_gpu_seconds = 0;
	o[k].drained_allocated_gpu_seconds = 0;
	o[k].raw_allocated_micro_gpu_seconds = 0;
	o[k].raw_drained_alloc_micro_gpu_seconds = 0;
	free(w);
	free(dw);
	free(a);
	free(d);
	return k + 1;
}

void gl_capacity_by_type(const struct gl_capacity_row *in, size_t n, struct gl_capacity_row **out, size_t *nout)
{
	struct gl_capacity_row *o = gl_xcalloc(2 * n + 1, sizeof *o);
	size_t k = 0;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && in[j].step == in[i].step && !strcmp(in[j].cluster, in[i].cluster); j++)
			;
		k += by_type_group(in + i, j - i, o + k);
	}
	*out = o;
	*nout = k;
}
