/* Chargeback rounding, idle sharing and totals (see include/gl/chargeback.h). */
#include "gl/chargeback.h"
#include "gl/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void gl_chargeback_init(struct gl_chargeback *cb, size_t n_dims, enum gl_chargeback_share_idle share, size_t n_steps)
{
	memset(cb, 0, sizeof *cb);
	cb->n_dims = n_dims;
	cb->share = share;
	cb->n_steps = n_steps;
	cb->steps = gl_xcalloc(n_steps ? n_steps : 1, sizeof *cb->steps);
}

size_t gl_chargeback_n_lines(const struct gl_chargeback *cb)
{
	size_t n = 0;
	for (size_t i = 0; i < cb->n_steps; i++)
		n += cb->steps[i].n_lines;
	return n;
}

void gl_chargeback_fini(struct gl_chargeback *cb)
{
	for (size_t i = 0; i < cb->n_steps; i++) {
		for (size_t j = 0; j < cb->steps[i].n_lines; j++) {
			for (size_t d = 0; d < GL_CHARGEBACK_MAX_DIMS; d++)
				free(cb->steps[i].lines[j].key[d]);
			free(cb->steps[i].lines[j].parts);
		}
		free(cb->steps[i].lines);
		free(cb->steps[i].index);
		for (size_t p = 0; p < cb->steps[i].n_pools; p++)
			free(cb->steps[i].pools[p].name);
		free(cb->steps[i].pools);
	}
	free(cb->steps);
	memset(cb, 0, sizeof *cb);
}

static uint64_t keys_hash(const char *const *keys, size_t n)
{
	uint64_t h = 14695981039346656037ULL;
	for (size_t d = 0; d < n; d++) {
		for (const char *p = keys[d] ? keys[d] : ""; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ULL;
		h = (h ^ 0x1f) * 1099511628211ULL; /* the separator: ("ab","") is not ("a","b") */
	}
	return h;
}

static int keys_equal(const struct gl_chargeback_line *l, const char *const *keys, size_t n)
{
	for (size_t d = 0; d < n; d++)
		if (strcmp(l->key[d], keys[d] ? keys[d] : ""))
			return 0;
	return 1;
}

/* The slot of keys in s's index: theirs, or the free one they would take. */
static size_t index_slot(const struct gl_chargeback_step *s, const char *const *keys, size_t n)
{
	size_t mask = s->cap_index - 1, i = (size_t)keys_hash(keys, n) & mask;
	while (s->index[i] && !keys_equal(&s->lines[s->index[i] - 1], keys, n))
		i = (i + 1) & mask;
	return i;
}

/* Made again over the lines as they lie now (after they moved). */
static void index_build(struct gl_chargeback_step *s, size_t n_dims)
{
	memset(s->index, 0, s->cap_index * sizeof *s->index);
	for (size_t j = 0; j < s->n_lines; j++)
		s->index[index_slot(s, (const char *const *)s->lines[j].key, n_dims)] = j + 1;
}

/* Rebuilt at twice the lines, so it is never more than half full. */
static void index_grow(struct gl_chargeback_step *s, size_t n_dims)
{
	free(s->index);
	s->cap_index = s->cap_index ? s->cap_index * 2 : 64;
	s->index = gl_xcalloc(s->cap_index, sizeof *s->index);
	index_build(s, n_dims);
}

int gl_chargeback_keys_cmp(const char *const *a, const char *const *b, size_t n)
{
	for (size_t d = 0; d < n; d++) {
		int k = strcmp(a[d] ? a[d] : "", b[d] ? b[d] : "");
		if (k)
			return k;
	}
	return 0;
}

/* a line's keys past the aggregate's are NULL (gl_chargeback_add_line) */
static int line_cmp(const void *pa, const void *pb)
{
	const struct gl_chargeback_line *a = pa, *b = pb;
	size_t n = 0;
	while (n < GL_CHARGEBACK_MAX_DIMS && a->key[n])
		n++;
	return gl_chargeback_keys_cmp((const char *const *)a->key, (const char *const *)b->key, n);
}

/* The lines in the one order of every view (gl_chargeback_keys_cmp), not
 * the order the queries met them, which differs between built days and
 * live pieces; before the rounding, so its ties fall the same way too. */
static void sort_lines(struct gl_chargeback_step *s, size_t n_dims)
{
	if (s->n_lines < 2)
		return;
	gl_qsort(s->lines, s->n_lines, sizeof *s->lines, line_cmp);
	index_build(s, n_dims);
}

struct gl_chargeback_line *gl_chargeback_find_line(struct gl_chargeback *cb, size_t step, const char *const *keys)
{
	struct gl_chargeback_step *s = &cb->steps[step];
	size_t i;
	if (!s->cap_index)
		return NULL;
	i = index_slot(s, keys, cb->n_dims);
	return s->index[i] ? &s->lines[s->index[i] - 1] : NULL;
}

struct gl_chargeback_line *gl_chargeback_add_line(struct gl_chargeback *cb, size_t step, const char *const *keys)
{
	struct gl_chargeback_step *s = &cb->steps[step];
	struct gl_chargeback_line *l;
	if (s->n_lines == s->cap_lines) {
		s->cap_lines = s->cap_lines ? s->cap_lines * 2 : 16;
		s->lines = gl_xrealloc(s->lines, s->cap_lines * sizeof *s->lines);
	}
	l = &s->lines[s->n_lines++];
	memset(l, 0, sizeof *l);
	for (size_t d = 0; d < cb->n_dims; d++)
		l->key[d] = gl_xstrdup(keys[d] ? keys[d] : "");
	if (2 * s->n_lines > s->cap_index)
		index_grow(s, cb->n_dims);
	else
		s->index[index_slot(s, keys, cb->n_dims)] = s->n_lines;
	return l;
}

static const char *const share_names[] = {"none", "proportional", "owner", "proportional_fleet"};

const char *gl_chargeback_share_name(enum gl_chargeback_share_idle share)
{
	return (size_t)share < GL_ARRAY_LEN(share_names) ? share_names[share] : "none";
}

int gl_chargeback_share_parse(const char *s, enum gl_chargeback_share_idle *out)
{
	if (!s || !strcmp(s, "false")) {
		*out = GL_CHARGEBACK_SHARE_NONE;
		return 0;
	}
	if (!strcmp(s, "true") || !strcmp(s, "weighted")) {
		*out = GL_CHARGEBACK_SHARE_PROPORTIONAL;
		return 0;
	}
	for (size_t i = 0; i < GL_ARRAY_LEN(share_names); i++)
		if (!strcmp(s, share_names[i])) {
			*out = (enum gl_chargeback_share_idle)i;
			return 0;
		}
	return -GL_EINVAL;
}

size_t gl_chargeback_pool_of(struct gl_chargeback *cb, size_t step, const char *name)
{
	struct gl_chargeback_step *s = &cb->steps[step];
	for (size_t p = s->n_pools; p-- > 0;)
		if (!strcmp(s->pools[p].name, name))
			return p;
	if (s->n_pools == s->cap_pools) {
		s->cap_pools = s->cap_pools ? s->cap_pools * 2 : 8;
		s->pools = gl_xrealloc(s->pools, s->cap_pools * sizeof *s->pools);
	}
	memset(&s->pools[s->n_pools], 0, sizeof *s->pools);
	s->pools[s->n_pools].name = gl_xstrdup(name);
	return s->n_pools++;
}

void gl_chargeback_line_in_pool(struct gl_chargeback_line *l, size_t pool, gl_cost_i128 us)
{
	for (size_t i = 0; i < l->n_parts; i++)
		if (l->parts[i].pool == pool) {
			l->parts[i].us += us;
			return;
		}
	if (l->n_parts == l->cap_parts) {
		l->cap_parts = l->cap_parts ? l->cap_parts * 2 : 2;
		l->parts = gl_xrealloc(l->parts, l->cap_parts * sizeof *l->parts);
	}
	l->parts[l->n_parts++] = (struct gl_chargeback_part){pool, us};
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

/* PROPORTIONAL_FLEET: the whole step's idle to each line in proportion to
 * its allocated GPU-time; with no allocation at all there is nobody to
 * share onto: idle stays */
static void share_fleet(struct gl_chargeback_step *s)
{
	size_t n = s->n_lines, m = n;
	int64_t *w = gl_xcalloc(n + 1, sizeof *w), *sh = gl_xcalloc(n + 1, sizeof *sh), shown = 0, base = 0;
	for (size_t i = 0; i < n; i++) {
		w[i] = s->lines[i].alloc_s;
		shown += w[i];
	}
	/* lines filtered by owner: the owners not shown weigh in as one more
	 * part, which stays idle (else the shown owners took all the idle) */
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
	free(w);
	free(sh);
}

/* PROPORTIONAL: the step's idle total (micro-units when micros, else
 * GPU-seconds), already rounded with the lines, split over the pools by
 * their exact idle, and each pool's part shared over the lines by their
 * allocation in that pool (and the allocation an owner filter left out,
 * whose part stays idle). A pool nobody allocated in keeps its idle; a
 * line gets nothing from a pool it did not use. *left: what stays idle. */
static int share_pools(struct gl_chargeback_step *s, int micros, int64_t total, int64_t *left)
{
	size_t n = s->n_lines, np = s->n_pools;
	gl_cost_i128 *num = gl_xcalloc(np + 1, sizeof *num);
	int64_t *amt = gl_xcalloc(np + 1, sizeof *amt), *w = gl_xcalloc(n + 1, sizeof *w);
	int64_t *sh = gl_xcalloc(n + 1, sizeof *sh);
	int rc = 0;

	*left = total;
	if (!np)
		goto out;
	for (size_t p = 0; p < np; p++)
		num[p] = micros ? s->pools[p].idle_num : s->pools[p].idle_us;
	if ((rc = gl_cost_apportion(num, np, micros ? GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR : GL_GPU_MICRO, amt)))
		goto out;
	rebalance(amt, np, total);
	for (size_t p = 0; p < np; p++) {
		gl_cost_i128 shown = 0;
		size_t m = n;
		for (size_t i = 0; i < n; i++) {
			w[i] = 0;
			for (size_t k = 0; k < s->lines[i].n_parts; k++)
				if (s->lines[i].parts[k].pool == p)
					w[i] += (int64_t)s->lines[i].parts[k].us;
			shown += w[i];
		}
		if (s->pools[p].base_us > shown)
			w[m++] = (int64_t)(s->pools[p].base_us - shown);
		rc = gl_cost_share(amt[p], w, m, sh);
		if (rc == -GL_EINVAL)
			continue; /* nobody allocated in the pool: its idle stays */
		if (rc)
			goto out;
		for (size_t i = 0; i < n; i++) {
			if (micros)
				s->lines[i].idle_share_micros += sh[i];
			else
				s->lines[i].idle_share_s += sh[i];
			*left -= sh[i];
		}
	}
	rc = 0;
out:
	free(num);
	free(amt);
	free(w);
	free(sh);
	return rc;
}

static int finish_step(struct gl_chargeback *cb, struct gl_chargeback_step *s)
{
	size_t n = s->n_lines;
	gl_cost_i128 *num = gl_xcalloc(n + 1, sizeof *num);
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
		gl_cost_i128 u = s->lines[i].alloc_us - s->lines[i].priced_us;
		s->lines[i].unpriced_s = (int64_t)((u + GL_GPU_MICRO / 2) / GL_GPU_MICRO);
	}
	{
		gl_cost_i128 o = s->overalloc_us;
		s->overalloc_s = (int64_t)((o + GL_GPU_MICRO / 2) / GL_GPU_MICRO);
	}
	/* cost: every line and the idle line rounded once, remainders carried */
	for (size_t i = 0; i < n; i++)
		num[i] = s->lines[i].cost_num;
	num[n] = s->capacity_known ? s->idle_num : 0;
	if ((rc = gl_cost_apportion(num, n + 1, GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR, out)))
		goto out;
	s->total_cost_micros = 0;
	for (size_t i = 0; i < n; i++) {
		s->lines[i].cost_micros = out[i];
		s->total_cost_micros += out[i];
	}
	s->idle_total_micros = out[n];
	s->idle_micros = s->idle_total_micros;
	s->idle_s = s->idle_total_s;
	if (cb->share == GL_CHARGEBACK_SHARE_PROPORTIONAL && s->idle_total_micros + s->idle_total_s > 0) {
		if ((rc = share_pools(s, 1, s->idle_total_micros, &s->idle_micros)) ||
		    (rc = share_pools(s, 0, s->idle_total_s, &s->idle_s)))
			goto out;
	} else if (cb->share == GL_CHARGEBACK_SHARE_PROPORTIONAL_FLEET && s->idle_total_micros + s->idle_total_s > 0) {
		share_fleet(s);
	} else if (cb->share == GL_CHARGEBACK_SHARE_OWNER) {
		/* the store put each dedicated owner's idle numerators on its line;
		 * round them together with what stays unowned */
		gl_cost_i128 owned_num = 0, owned_us = 0;
		for (size_t i = 0; i < n; i++) {
			num[i] = s->lines[i].idle_owner_num;
			owned_num += num[i];
			owned_us += s->lines[i].idle_owner_us;
		}
		num[n] = s->idle_num > owned_num ? s->idle_num - owned_num : 0;
		if ((rc = gl_cost_apportion(num, n + 1, GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR, out)))
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

/* The unobserved time and its cost per line, rounded together per step as
 * the firm figures are (the lines add up to the step's unobserved total),
 * and the lines with time past their jobs' limits. */
static int finish_unobserved(struct gl_chargeback_step *s)
{
	size_t n = s->n_lines;
	gl_cost_i128 *num = gl_xcalloc(n + 1, sizeof *num);
	int64_t *out = gl_xcalloc(n + 1, sizeof *out);
	int rc;

	for (size_t i = 0; i < n; i++)
		num[i] = s->lines[i].unobs_us;
	if ((rc = gl_cost_apportion(num, n, GL_GPU_MICRO, out)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		s->lines[i].unobserved_s = out[i];
		s->unobserved_s += out[i];
		num[i] = s->lines[i].unobs_num;
	}
	if ((rc = gl_cost_apportion(num, n, GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR, out)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct gl_chargeback_line *l = &s->lines[i];
		l->unobserved_micros = out[i];
		s->unobserved_micros += out[i];
		l->implausible_s = (int64_t)((l->implausible_us + GL_GPU_MICRO / 2) / GL_GPU_MICRO);
		s->implausible_s += l->implausible_s;
		s->implausible_lines += l->implausible_us > 0;
	}
out:
	free(num);
	free(out);
	return rc;
}

int gl_chargeback_finish(struct gl_chargeback *cb)
{
	int rc;
	for (size_t i = 0; i < cb->n_steps; i++) {
		struct gl_chargeback_step *s = &cb->steps[i];
		sort_lines(s, cb->n_dims);
		if ((rc = finish_step(cb, s)) || (s->n_lines && (rc = finish_unobserved(s))))
			return rc;
		cb->unobserved_s += s->unobserved_s;
		cb->unobserved_micros += s->unobserved_micros;
		cb->implausible_s += s->implausible_s;
		cb->implausible_lines += s->implausible_lines;
		cb->total_alloc_s += s->total_alloc_s;
		cb->total_cost_micros += s->total_cost_micros;
		cb->total_idle_micros += s->idle_micros;
		cb->total_idle_s += s->idle_s;
		cb->total_micros += s->total_micros;
		cb->total_s += s->total_s;
	}
	return 0;
}

void gl_chargeback_withhold_idle(struct gl_chargeback *cb)
{
	cb->total_micros = cb->total_s = cb->total_idle_micros = cb->total_idle_s = 0;
	for (size_t i = 0; i < cb->n_steps; i++) {
		struct gl_chargeback_step *s = &cb->steps[i];
		s->total_micros -= s->idle_micros;
		s->total_s -= s->idle_s;
		s->idle_micros = s->idle_s = s->idle_total_micros = s->idle_total_s = s->overalloc_s = 0;
		cb->total_micros += s->total_micros;
		cb->total_s += s->total_s;
	}
	cb->idle_withheld = 1;
}

size_t gl_chargeback_capacity_steps(const struct gl_chargeback *cb)
{
	size_t n = 0;
	for (size_t i = 0; i < cb->n_steps; i++)
		n += cb->steps[i].capacity_known != 0;
	return n;
}

int gl_chargeback_name_reserved(const char *s)
{
	return s && (!strcmp(s, "__idle__") || !strcmp(s, "__unallocated__"));
}

void gl_chargeback_shown_compute(const struct gl_chargeback *cb, int minor, struct gl_chargeback_shown *out)
{
	size_t ns = cb->n_steps;
	int64_t *part = gl_xcalloc(ns + 1, sizeof *part);
	memset(out, 0, sizeof *out);
	out->n_steps = ns;
	out->step_total = gl_xcalloc(ns + 1, sizeof *out->step_total);
	out->idle = gl_xcalloc(ns + 1, sizeof *out->idle);
	out->cost = gl_xcalloc(ns + 1, sizeof *out->cost);
	out->share = gl_xcalloc(ns + 1, sizeof *out->share);
	out->line = gl_xcalloc(ns + 1, sizeof *out->line);
	out->total = gl_cost_round(cb->total_micros, minor);
	for (size_t i = 0; i < ns; i++)
		part[i] = cb->steps[i].total_micros;
	(void)!gl_cost_shown_parts(out->total, part, NULL, ns, minor, out->step_total);
	for (size_t i = 0; i < ns; i++) {
		const struct gl_chargeback_step *s = &cb->steps[i];
		size_t n = s->n_lines;
		int64_t *cost = gl_xcalloc(n + 1, sizeof *cost), *share = gl_xcalloc(n + 1, sizeof *share);
		char **name = gl_xcalloc(n + 1, sizeof *name);
		out->cost[i] = gl_xcalloc(n + 1, sizeof **out->cost);
		out->share[i] = gl_xcalloc(n + 1, sizeof **out->share);
		out->line[i] = gl_xcalloc(n + 1, sizeof **out->line);
		for (size_t j = 0; j < n; j++) {
			struct gl_strbuf b = GL_STRBUF_INIT;
			for (size_t d = 0; d < cb->n_dims; d++) {
				if (d)
					gl_strbuf_putc(&b, '/');
				gl_strbuf_puts(&b, s->lines[j].key[d]);
			}
			name[j] = gl_xstrdup(gl_strbuf_cstr(&b));
			gl_strbuf_fini(&b);
			cost[j] = s->lines[j].cost_micros;
			share[j] = s->lines[j].idle_share_micros;
		}
		(void)!gl_cost_shown_rows(out->step_total[i], cost, share, (const char *const *)name, n, s->idle_micros,
					   minor, out->line[i], out->cost[i], out->share[i], &out->idle[i]);
		for (size_t j = 0; j < n; j++)
			free(name[j]);
		free(name);
		free(cost);
		free(share);
	}
	free(part);
}

void gl_chargeback_shown_fini(struct gl_chargeback_shown *s)
{
	for (size_t i = 0; i < s->n_steps; i++) {
		free(s->cost[i]);
		free(s->share[i]);
		free(s->line[i]);
	}
	free(s->cost);
	free(s->share);
	free(s->line);
	free(s->step_total);
	free(s->idle);
	memset(s, 0, sizeof *s);
}
