/* Counter increases and histogram quantiles (see include/gl/increase.h). */
#include "gl/increase.h"

#include <math.h>
#include <string.h>

/* Whether the process (or its job) began at or after since_s: then every
 * count it carries happened after that scrape. */
static int started_since(double start_s, int64_t job_start_s, int64_t since_s)
{
	if (since_s == GL_TIME_NONE)
		return 0;
	return (!isnan(start_s) && start_s >= (double)since_s) ||
	       (job_start_s != GL_TIME_NONE && job_start_s >= since_s);
}

/* A restart zeroes every counter of the process. Told by the process start
 * when both scrapes carry one, else by the pattern: nothing rose and
 * something fell. */
static int is_reset(const struct gl_increase_series *s, const struct gl_increase_obs *o)
{
	int below = 0;
	if (!isnan(o->start_s) && !isnan(s->start_s))
		return fabs(o->start_s - s->start_s) > 1e-3;
	for (size_t i = 0; i < s->n; i++) {
		if (isnan(o->cur[i]) || isnan(s->hw[i]))
			continue;
		if (o->cur[i] > s->hw[i])
			return 0;
		if (o->cur[i] < s->hw[i])
			below = 1;
	}
	return below;
}

/* Counts are whole numbers: each increase is the difference of the rounded
 * levels, so increases add up to the rounded rise however often it is
 * split. */
static int64_t rise(double from, double to)
{
	return llround(to) - llround(from);
}

static void set_levels(struct gl_increase_series *s, const struct gl_increase_obs *o, int count_whole, int64_t *inc)
{
	for (size_t i = 0; i < s->n; i++) {
		if (isnan(o->cur[i]))
			continue;
		if (count_whole)
			inc[i] = llround(o->cur[i]);
		s->hw[i] = o->cur[i];
	}
}

void gl_increase_step(struct gl_increase_series *s, const struct gl_increase_obs *o, struct gl_increase_result *r)
{
	memset(r->inc, 0, s->n * sizeof *r->inc);
	r->backwards = 0;
	r->first_backwards = 0;
	r->back_from = r->back_to = 0;
	if (s->have && o->at_s <= s->at_s) {
		r->kind = GL_INCREASE_STALE;
		return;
	}
	if (!s->have || (o->job_pk && s->job_pk && o->job_pk != s->job_pk)) {
		int64_t since = s->have ? s->at_s : o->endpoint_prev_s;
		int whole = started_since(o->start_s, o->job_pk ? o->job_start_s : GL_TIME_NONE, since);
		set_levels(s, o, whole, r->inc);
		r->kind = whole ? GL_INCREASE_NEW : GL_INCREASE_BASELINE;
	} else if (is_reset(s, o)) {
		set_levels(s, o, 1, r->inc);
		r->kind = GL_INCREASE_RESET;
	} else {
		r->kind = GL_INCREASE_COUNTED;
		for (size_t i = 0; i < s->n; i++) {
			double cur = o->cur[i];
			if (isnan(cur))
				continue;
			if (isnan(s->hw[i])) {
				/* absent before in a process seen before: it was 0
				 * (TGI makes its failure counter at the first failure) */
				r->inc[i] = llround(cur);
				s->hw[i] = cur;
			} else if (cur >= s->hw[i]) {
				r->inc[i] = rise(s->hw[i], cur);
				s->hw[i] = cur;
			} else if (r->backwards++ == 0) {
				r->first_backwards = i;
				r->back_from = s->hw[i];
				r->back_to = cur;
			}
		}
	}
	s->have = 1;
	s->at_s = o->at_s;
	if (!isnan(o->start_s))
		s->start_s = o->start_s;
	if (o->job_pk)
		s->job_pk = o->job_pk;
}

double gl_increase_quantile(const double *le, const double *cum, size_t n, double q)
{
	double prev = 0, total, rank, lo, below;
	size_t b;
	if (n < 2 || !isinf(le[n - 1]) || isnan(q))
		return NAN;
	/* counts that fall with le (a scrape taken mid-update) are raised to
	 * the count before them */
	total = 0;
	for (size_t i = 0; i < n; i++)
		total = cum[i] > total ? cum[i] : total;
	if (total <= 0)
		return NAN;
	rank = q * total;
	for (b = 0; b < n; b++) {
		double c = cum[b] > prev ? cum[b] : prev;
		if (c >= rank)
			break;
		prev = c;
	}
	if (b >= n - 1)
		return le[n - 2];
	if (b == 0 && le[0] <= 0)
		return le[0];
	lo = b == 0 ? 0 : le[b - 1];
	below = prev;
	{
		double c = cum[b] > prev ? cum[b] : prev, count = c - below;
		if (count <= 0)
			return le[b];
		return lo + (le[b] - lo) * ((rank - below) / count);
	}
}
