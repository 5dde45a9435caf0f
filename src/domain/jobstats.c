/* The per-job part of the monthly report (see include/gl/jobstats.h). */
#include "gl/jobstats.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t gl_jobstats_span_s(int64_t a_us, int64_t b_us)
{
	/* date_part('epoch') is the exact quotient rounded to a double (numeric
	 * to float8); (double)us / 1e6 is the same correctly rounded quotient */
	double d = (double)b_us / 1e6 - (double)a_us / 1e6;
	return (int64_t)rint(d);
}

gl_cost_i128 gl_jobstats_cost_num(const struct gl_jobstats_rate *rates, size_t n, int64_t s0_us, int64_t e0_us,
			     int64_t gpu_micro)
{
	gl_cost_i128 num = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gl_jobstats_rate *r = &rates[i];
		if (r->from_us >= e0_us || r->to_us <= s0_us)
			continue;
		num += (gl_cost_i128)r->micros_per_gpu_hour * gpu_micro *
		       gl_jobstats_span_s(r->from_us > s0_us ? r->from_us : s0_us, r->to_us < e0_us ? r->to_us : e0_us);
	}
	return num;
}

int64_t gl_jobstats_priced_s(const struct gl_jobstats_rate *rates, size_t n, int64_t s0_us, int64_t e0_us)
{
	int64_t s = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gl_jobstats_rate *r = &rates[i];
		if (r->from_us >= e0_us || r->to_us <= s0_us)
			continue;
		s += gl_jobstats_span_s(r->from_us > s0_us ? r->from_us : s0_us, r->to_us < e0_us ? r->to_us : e0_us);
	}
	return s;
}

int gl_jobstats_state_failed(const char *state)
{
	static const char *const failed[] = {"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"};
	size_t n = strcspn(state, " ");
	for (size_t i = 0; i < GL_ARRAY_LEN(failed); i++)
		if (strlen(failed[i]) == n && !strncasecmp(state, failed[i], n))
			return 1;
	return 0;
}

int64_t gl_jobstats_percentile(const int64_t *sorted, size_t n, double p)
{
	/* PostgreSQL's percentile_disc: the first value whose position
	 * reaches p (the same double arithmetic) */
	double rank = ceil(p * (double)n);
	size_t k = rank < 1 ? 1 : (size_t)rank;
	return sorted[(k > n ? n : k) - 1];
}

void gl_jobstats_init(struct gl_jobstats *st)
{
	memset(st, 0, sizeof *st);
}

static void grow_groups(struct gl_jobstats *st, uint32_t g)
{
	size_t cap = st->cap_groups ? st->cap_groups : 64;
	if (g < st->cap_groups) {
		if (g >= st->n_groups)
			st->n_groups = (size_t)g + 1;
		return;
	}
	while (cap <= g)
		cap *= 2;
	st->failed_us = gl_xrealloc(st->failed_us, cap * sizeof *st->failed_us);
	st->failed_micros = gl_xrealloc(st->failed_micros, cap * sizeof *st->failed_micros);
	st->busy_micros = gl_xrealloc(st->busy_micros, cap * sizeof *st->busy_micros);
	st->aidle_micros = gl_xrealloc(st->aidle_micros, cap * sizeof *st->aidle_micros);
	st->energy_mj = gl_xrealloc(st->energy_mj, cap * sizeof *st->energy_mj);
	st->has_energy = gl_xrealloc(st->has_energy, cap * sizeof *st->has_energy);
	for (size_t i = st->cap_groups; i < cap; i++) {
		st->failed_us[i] = st->failed_micros[i] = st->energy_mj[i] = 0;
		st->busy_micros[i] = st->aidle_micros[i] = 0;
		st->has_energy[i] = 0;
	}
	st->cap_groups = cap;
	st->n_groups = (size_t)g + 1;
}

/* a before b in a top list: larger key, then smaller job_pk */
static int top_before(int64_t ka, int64_t pka, int64_t kb, int64_t pkb)
{
	return ka != kb ? ka > kb : pka < pkb;
}

static void top_offer(struct gl_jobstats_top *list, size_t *n, const struct gl_jobstats_job *j, int64_t key,
		      int64_t idle_micros)
{
	size_t at = *n;
	struct gl_jobstats_top t;
	if (*n == GL_JOBSTATS_TOP && !top_before(key, j->job_pk, list[*n - 1].key, list[*n - 1].job_pk))
		return;
	while (at > 0 && top_before(key, j->job_pk, list[at - 1].key, list[at - 1].job_pk))
		at--;
	if (*n == GL_JOBSTATS_TOP) {
		struct gl_jobstats_top *last = &list[*n - 1];
		free(last->job_id);
		free(last->cluster);
		free(last->state);
		(*n)--;
	}
	memmove(&list[at + 1], &list[at], (*n - at) * sizeof *list);
	t.job_pk = j->job_pk;
	t.job_id = gl_xstrdup(j->job_id);
	t.cluster = gl_xstrdup(j->cluster);
	t.state = gl_xstrdup(j->state);
	t.group = j->group;
	t.gpu_micro = j->gpu_micro;
	t.alloc_s = (j->alloc_us + GL_GPU_MICRO / 2) / GL_GPU_MICRO;
	t.cost_micros = j->cost_micros;
	t.unpriced_s = (j->unpriced_us + GL_GPU_MICRO / 2) / GL_GPU_MICRO;
	t.observed = j->observed;
	t.idle_s = (j->idle_us + GL_GPU_MICRO / 2) / GL_GPU_MICRO;
	t.idle_micros = idle_micros;
	t.key = key;
	list[at] = t;
	(*n)++;
}

int64_t gl_jobstats_part_cost(int64_t cost_micros, int64_t alloc_us, int64_t part_us)
{
	if (alloc_us <= 0 || part_us <= 0 || cost_micros <= 0)
		return 0;
	return (int64_t)(((gl_cost_i128)cost_micros * part_us * 2 + alloc_us) / ((gl_cost_i128)alloc_us * 2));
}

static int64_t part_cost(const struct gl_jobstats_job *j, int64_t part_us)
{
	return gl_jobstats_part_cost(j->cost_micros, j->alloc_us, part_us);
}

static int64_t idle_cost(const struct gl_jobstats_job *j)
{
	return part_cost(j, j->idle_us);
}

void gl_jobstats_add(struct gl_jobstats *st, const struct gl_jobstats_job *j)
{
	int64_t ic = idle_cost(j);
	grow_groups(st, j->group);
	top_offer(st->top_cost, &st->n_top_cost, j, j->cost_micros, ic);
	if (j->observed) {
		top_offer(st->top_idle, &st->n_top_idle, j, ic, ic);
		/* per job: an owner's jobs differ in price, so its busy and idle
		 * are not worth its average price per GPU-second */
		st->busy_micros[j->group] += part_cost(j, j->busy_us);
		st->aidle_micros[j->group] += ic;
	}
	if (gl_jobstats_state_failed(j->state)) {
		st->failed_us[j->group] += j->alloc_us;
		st->failed_micros[j->group] += j->cost_micros;
	}
	if (j->has_energy) {
		st->has_energy[j->group] = 1;
		st->energy_mj[j->group] += j->energy_mj;
	}
	if (j->has_wait) {
		if (st->n_waits == st->cap_waits) {
			st->cap_waits = st->cap_waits ? st->cap_waits * 2 : 4096;
			st->waits = gl_xrealloc(st->waits, st->cap_waits * sizeof *st->waits);
		}
		st->waits[st->n_waits].group = j->group;
		st->waits[st->n_waits].partition = j->partition;
		st->waits[st->n_waits].wait_s = j->wait_s;
		st->n_waits++;
	}
}

static int cmp_i64(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	return (a > b) - (a < b);
}

/* Percentiles of each bucket of v (bucket b holds v[off[b] .. off[b+1])). */
static void bucket_pcts(int64_t *v, const size_t *off, size_t n, struct gl_jobstats_owner *out)
{
	for (size_t b = 0; b < n; b++) {
		size_t k = off[b + 1] - off[b];
		out[b].n_waits = k;
		if (!k)
			continue;
		gl_qsort(v + off[b], k, sizeof *v, cmp_i64);
		out[b].p50_s = gl_jobstats_percentile(v + off[b], k, 0.5);
		out[b].p90_s = gl_jobstats_percentile(v + off[b], k, 0.9);
		out[b].p99_s = gl_jobstats_percentile(v + off[b], k, 0.99);
	}
}

/* The waits bucketed by key(i) < n (a counting sort), then percentiles. */
static void waits_by(const struct gl_jobstats *st, const uint32_t *owner_of, int by_owner, size_t n,
		     struct gl_jobstats_owner *out)
{
	size_t *off = gl_xcalloc(n + 2, sizeof *off);
	int64_t *v = gl_xmalloc((st->n_waits ? st->n_waits : 1) * sizeof *v);
	for (size_t i = 0; i < st->n_waits; i++) {
		uint32_t k = by_owner ? owner_of[st->waits[i].group] : st->waits[i].partition;
		off[k + 2]++;
	}
	for (size_t b = 2; b < n + 2; b++)
		off[b] += off[b - 1];
	for (size_t i = 0; i < st->n_waits; i++) {
		uint32_t k = by_owner ? owner_of[st->waits[i].group] : st->waits[i].partition;
		v[off[k + 1]++] = st->waits[i].wait_s;
	}
	bucket_pcts(v, off, n, out);
	free(v);
	free(off);
}

void gl_jobstats_fold(struct gl_jobstats *st, const uint32_t *owner_of, size_t n_owners,
		      struct gl_jobstats_owner *owners, size_t n_parts, struct gl_jobstats_owner *parts)
{
	memset(owners, 0, n_owners * sizeof *owners);
	memset(parts, 0, n_parts * sizeof *parts);
	for (size_t g = 0; g < st->n_groups; g++) {
		struct gl_jobstats_owner *o = &owners[owner_of[g]];
		o->failed_s += st->failed_us[g];
		o->failed_micros += st->failed_micros[g];
		o->busy_micros += st->busy_micros[g];
		o->aidle_micros += st->aidle_micros[g];
		if (st->has_energy[g]) {
			o->has_energy = 1;
			o->energy_mj += st->energy_mj[g];
		}
	}
	/* failed_s holds micro-GPU-seconds until here: rounded once per owner */
	for (size_t i = 0; i < n_owners; i++)
		owners[i].failed_s = (owners[i].failed_s + GL_GPU_MICRO / 2) / GL_GPU_MICRO;
	waits_by(st, owner_of, 1, n_owners, owners);
	waits_by(st, owner_of, 0, n_parts, parts);
}

void gl_jobstats_fini(struct gl_jobstats *st)
{
	for (size_t i = 0; i < st->n_top_cost; i++) {
		free(st->top_cost[i].job_id);
		free(st->top_cost[i].cluster);
		free(st->top_cost[i].state);
	}
	for (size_t i = 0; i < st->n_top_idle; i++) {
		free(st->top_idle[i].job_id);
		free(st->top_idle[i].cluster);
		free(st->top_idle[i].state);
	}
	free(st->failed_us);
	free(st->failed_micros);
	free(st->busy_micros);
	free(st->aidle_micros);
	free(st->has_energy);
	free(st->energy_mj);
	free(st->waits);
	memset(st, 0, sizeof *st);
}
