/* Chargeback rounding, idle sharing and totals (see include/gl/chargeback.h). */
#include "gl/chargeback.h"

#include <stdlib.h>
#include <string.h>

void gl_cb_init(struct gl_cb *cb, size_t n_dims, enum gl_share_idle share, size_t n_steps)
{
	memset(cb, 0, sizeof *cb);
	cb->n_dims = n_dims;
	cb->share = share;
	cb->n_steps = n_steps;
	cb->steps = gl_xcalloc(n_steps ? n_steps : 1, sizeof *cb->steps);
}

void gl_cb_fini(struct gl_cb *cb)
{
	for (size_t i = 0; i < cb->n_steps; i++) {
		for (size_t j = 0; j < cb->steps[i].n_lines; j++)
			for (size_t d = 0; d < GL_CB_MAX_DIMS; d++)
				free(cb->steps[i].lines[j].key[d]);
		free(cb->steps[i].lines);
	}
	free(cb->steps);
	memset(cb, 0, sizeof *cb);
}

struct gl_cb_line *gl_cb_add_line(struct gl_cb *cb, size_t step, const char *const *keys)
{
	struct gl_cb_step *s = &cb->steps[step];
	struct gl_cb_line *l;
	if (s->n_lines == s->cap_lines) {
		s->cap_lines = s->cap_lines ? s->cap_lines * 2 : 16;
		s->lines = gl_xrealloc(s->lines, s->cap_lines * sizeof *s->lines);
	}
	l = &s->lines[s->n_lines++];
	memset(l, 0, sizeof *l);
	for (size_t d = 0; d < cb->n_dims; d++)
		l->key[d] = gl_xstrdup(keys[d] ? keys[d] : "");
	return l;
}

/* Makes out[0..n) add up to total. The total was rounded together with
 * the owners' lines, the parts on their own, so they may differ by a unit:
 * the last part (what stays unowned) takes the difference, unless that
 * would make it negative (all idle owned), then the largest part does. */
static void rebalance(int64_t *out, size_t n, int64_t total)
{
	int64_t sum = 0, diff;
	size_t big = n - 1;
	for (size_t i = 0; i < n; i++)
		sum += out[i];
	diff = total - sum;
	if (out[n - 1] + diff < 0)
		for (size_t i = 0; i < n; i++)
			if (out[i] > out[big])
				big = i;
	out[big] += diff;
}

static int finish_step(struct gl_cb *cb, struct gl_cb_step *s)
{
	size_t n = s->n_lines;
	gl_i128 *num = gl_xcalloc(n + 1, sizeof *num);
	int64_t *out = gl_xcalloc(n + 1, sizeof *out), *w = gl_xcalloc(n + 1, sizeof *w);
	int rc = 0;

	/* GPU-seconds: lines + idle rounded together so they add up to the step total */
	for (size_t i = 0; i < n; i++)
		num[i] = s->lines[i].alloc_us;
	num[n] = s->capacity_known ? s->idle_us : 0;
	if ((rc = gl_cost_apportion(num, n + 1, GL_GPU_MICRO, out)))
		goto out;
	s->total_alloc_s = 0;
	for (size_t i = 0; i < n; i++) {
		s->lines[i].alloc_s = out[i];
		s->total_alloc_s += out[i];
	}
	s->idle_total_s = out[n];
	/* unpriced GPU-seconds per line (informational, rounded per line) */
	for (size_t i = 0; i < n; i++) {
		gl_i128 u = s->lines[i].alloc_us - s->lines[i].priced_us;
		s->lines[i].unpriced_s = (int64_t)((u + GL_GPU_MICRO / 2) / GL_GPU_MICRO);
	}
	{
		gl_i128 o = s->overalloc_us;
		s->overalloc_s = (int64_t)((o + GL_GPU_MICRO / 2) / GL_GPU_MICRO);
	}
	/* cost: every line and the idle line rounded once, remainders carried */
	for (size_t i = 0; i < n; i++)
		num[i] = s->lines[i].cost_num;
	num[n] = s->capacity_known ? s->idle_num : 0;
	if ((rc = gl_cost_apportion(num, n + 1, GL_MICRO_GPU_SECONDS_PER_GPU_HOUR, out)))
		goto out;
	s->total_cost_micros = 0;
	for (size_t i = 0; i < n; i++) {
		s->lines[i].cost_micros = out[i];
		s->total_cost_micros += out[i];
	}
	s->idle_total_micros = out[n];
	s->idle_micros = s->idle_total_micros;
	s->idle_s = s->idle_total_s;
	if (cb->share == GL_SHARE_PROPORTIONAL && s->idle_total_micros + s->idle_total_s > 0) {
		/* to each line in proportion to its allocated GPU-time; with no
		 * allocation at all there is nobody to share onto: idle stays */
		int64_t *sh = gl_xcalloc(n + 1, sizeof *sh), shown = 0, base = 0;
		size_t m = n;
		for (size_t i = 0; i < n; i++) {
			w[i] = s->lines[i].alloc_s;
			shown += w[i];
		}
		/* lines filtered by owner: the owners not shown weigh in as one
		 * more part, which stays idle (else the shown owners took the
		 * whole fleet's idle) */
		if (s->share_base_us > 0)
			base = (int64_t)((s->share_base_us + GL_GPU_MICRO / 2) / GL_GPU_MICRO);
		if (base > shown)
			w[m++] = base - shown;
		if (gl_cost_share(s->idle_total_micros, w, m, sh) == 0) {
			for (size_t i = 0; i < n; i++)
				s->lines[i].idle_share_micros = sh[i];
			s->idle_micros = m > n ? sh[n] : 0;
			if (gl_cost_share(s->idle_total_s, w, m, sh) == 0) {
				for (size_t i = 0; i < n; i++)
					s->lines[i].idle_share_s = sh[i];
				s->idle_s = m > n ? sh[n] : 0;
			}
		}
		free(sh);
	} else if (cb->share == GL_SHARE_OWNER) {
		/* the store put each dedicated owner's idle numerators on its line;
		 * round them together with what stays unowned */
		gl_i128 owned_num = 0, owned_us = 0;
		for (size_t i = 0; i < n; i++) {
			num[i] = s->lines[i].idle_owner_num;
			owned_num += num[i];
			owned_us += s->lines[i].idle_owner_us;
		}
		num[n] = s->idle_num > owned_num ? s->idle_num - owned_num : 0;
		if ((rc = gl_cost_apportion(num, n + 1, GL_MICRO_GPU_SECONDS_PER_GPU_HOUR, out)))
			goto out;
		/* re-balance to the idle total already fixed above */
		rebalance(out, n + 1, s->idle_total_micros);
		for (size_t i = 0; i < n; i++)
			s->lines[i].idle_share_micros = out[i];
		s->idle_micros = out[n];
		for (size_t i = 0; i < n; i++)
			num[i] = s->lines[i].idle_owner_us;
		num[n] = s->idle_us > owned_us ? s->idle_us - owned_us : 0;
		if ((rc = gl_cost_apportion(num, n + 1, GL_GPU_MICRO, out)))
			goto out;
		rebalance(out, n + 1, s->idle_total_s);
		for (size_t i = 0; i < n; i++)
			s->lines[i].idle_share_s = out[i];
		s->idle_s = out[n];
	}
	s->total_micros = s->idle_micros;
	s->total_s = s->idle_s;
	for (size_t i = 0; i < n; i++) {
		s->lines[i].total_micros = s->lines[i].cost_micros + s->lines[i].idle_share_micros;
		s->total_micros += s->lines[i].total_micros;
		s->total_s += s->lines[i].alloc_s + s->lines[i].idle_share_s;
	}
out:
	free(num);
	free(out);
	free(w);
	return rc;
}

int gl_cb_finish(struct gl_cb *cb)
{
	int rc;
	for (size_t i = 0; i < cb->n_steps; i++) {
		struct gl_cb_step *s = &cb->steps[i];
		if ((rc = finish_step(cb, s)))
			return rc;
		cb->total_alloc_s += s->total_alloc_s;
		cb->total_cost_micros += s->total_cost_micros;
		cb->total_idle_micros += s->idle_micros;
		cb->total_idle_s += s->idle_s;
		cb->total_micros += s->total_micros;
		cb->total_s += s->total_s;
	}
	return 0;
}

size_t gl_cb_capacity_steps(const struct gl_cb *cb)
{
	size_t n = 0;
	for (size_t i = 0; i < cb->n_steps; i++)
		n += cb->steps[i].capacity_known != 0;
	return n;
}

int gl_cb_name_reserved(const char *s)
{
	return s && (!strcmp(s, "__idle__") || !strcmp(s, "__unallocated__"));
}
