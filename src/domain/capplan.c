/* Planned capacity, saturation dates and purchases (pure). See
 * include/gl/capplan.h and docs/forecast.md ("Capacity planning"). */
#include "gl/capplan.h"
#include "gl/forecast.h"
#include "gl/timeutil.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gl_capplan_fleet_fini(struct gl_capplan_fleet *f)
{
	if (!f)
		return;
	free(f->clusters);
	free(f->models);
	free(f->present);
	memset(f, 0, sizeof *f);
}

/* A whole date, nothing else: 00:00 UTC of it. */
static int parse_day(const char *s, int64_t *out)
{
	if (strlen(s) != 10 || gl_timeutil_parse(s, 10, out) || *out % 86400)
		return -1;
	return 0;
}

/* One what-if entry "CLUSTER,GPU_MODEL,+N|-N,YYYY-MM-DD". */
static int parse_entry(char *e, size_t k, struct gl_capplan_change *c, struct gl_err *err)
{
	char *f[4], *save = NULL, *end;
	int nf = 0;
	long long v;
	for (char *t = strtok_r(e, ",", &save); t && nf < 5; t = strtok_r(NULL, ",", &save))
		f[nf < 4 ? nf : 3] = t, nf++;
	memset(c, 0, sizeof *c);
	snprintf(c->source, sizeof c->source, "what-if");
	if (nf != 4)
		return gl_err_set(err, GL_EINVAL, "entry %zu: expected CLUSTER,GPU_MODEL,+N|-N,YYYY-MM-DD", k + 1);
	if (!*f[0] || strlen(f[0]) >= sizeof c->cluster)
		return gl_err_set(err, GL_EINVAL, "entry %zu: cluster: empty or too long", k + 1);
	if (!*f[1] || strlen(f[1]) >= sizeof c->gpu_model)
		return gl_err_set(err, GL_EINVAL, "entry %zu: gpu_model: empty or too long", k + 1);
	memcpy(c->cluster, f[0], strlen(f[0]) + 1);
	memcpy(c->gpu_model, f[1], strlen(f[1]) + 1);
	errno = 0;
	v = strtoll(f[2], &end, 10);
	if ((f[2][0] != '+' && f[2][0] != '-') || !isdigit((unsigned char)f[2][1]) || *end || errno)
		return gl_err_set(err, GL_EINVAL, "entry %zu: gpus: '%s' is not +N (added) or -N (retired)", k + 1, f[2]);
	if (v == 0 || llabs(v) > GL_CAPPLAN_MAX_GPUS)
		return gl_err_set(err, GL_EINVAL, "entry %zu: gpus: '%s' is not 1..%d GPUs added or retired", k + 1, f[2],
				  GL_CAPPLAN_MAX_GPUS);
	c->gpus = v;
	if (parse_day(f[3], &c->day_s))
		return gl_err_set(err, GL_EINVAL, "entry %zu: date: '%s' is not a date YYYY-MM-DD", k + 1, f[3]);
	return 0;
}

int gl_capplan_parse(const char *text, struct gl_capplan_change **out, size_t *n, struct gl_err *err)
{
	char *buf = gl_xstrdup(text ? text : ""), *save = NULL;
	size_t k = 0, cap = 0;
	int rc = 0;
	*out = NULL;
	*n = 0;
	if (*buf && (buf[0] == ';' || buf[strlen(buf) - 1] == ';' || strstr(buf, ";;"))) {
		rc = gl_err_set(err, GL_EINVAL, "empty entry in '%s'", text);
		goto out;
	}
	for (char *e = strtok_r(buf, ";", &save); e; e = strtok_r(NULL, ";", &save), k++) {
		if (k == cap) {
			cap = cap ? 2 * cap : 4;
			*out = gl_xrealloc(*out, sizeof **out * cap);
		}
		if ((rc = parse_entry(e, k, &(*out)[k], err)))
			goto out;
	}
	*n = k;
out:
	free(buf);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

static int known(char (*list)[GL_CAPPLAN_NAME_MAX], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return 1;
	return 0;
}

int64_t gl_capplan_present(const struct gl_capplan_fleet *f, const char *cluster, const char *gpu_model)
{
	for (size_t i = 0; i < f->n_present; i++)
		if (!strcmp(f->present[i].cluster, cluster) && !strcmp(f->present[i].gpu_model, gpu_model))
			return f->present[i].gpus;
	return 0;
}

int gl_capplan_check(const struct gl_capplan_fleet *f, const struct gl_capplan_change *plan, size_t n, size_t *bad,
		     const char **field, struct gl_err *err)
{
	for (size_t i = 0; i < n; i++) {
		const struct gl_capplan_change *c = &plan[i];
		*bad = i;
		*field = "cluster";
		if (!known(f->clusters, f->n_clusters, c->cluster))
			return gl_err_set(err, GL_EINVAL, "unknown cluster '%s'", c->cluster);
		*field = "gpu_model";
		if (!known(f->models, f->n_models, c->gpu_model))
			return gl_err_set(err, GL_EINVAL,
					  "unknown GPU model '%s' (no inventory, job, rate or alias names it)", c->gpu_model);
		*field = "gpus";
		if (c->gpus == 0 || llabs(c->gpus) > GL_CAPPLAN_MAX_GPUS)
			return gl_err_set(err, GL_EINVAL, "%lld is not 1..%d GPUs added or retired", (long long)c->gpus,
					  GL_CAPPLAN_MAX_GPUS);
	}
	/* retirements, in date order: what is there on that day is what is
	 * there now and what the plan adds or retires before (or on) it */
	for (size_t i = 0; i < n; i++) {
		const struct gl_capplan_change *c = &plan[i];
		int64_t have;
		char day[16];
		if (c->gpus > 0 || c->day_s <= f->today_s)
			continue;
		have = gl_capplan_present(f, c->cluster, c->gpu_model);
		for (size_t j = 0; j < n; j++) {
			const struct gl_capplan_change *d = &plan[j];
			if (j == i || d->day_s <= f->today_s || strcmp(d->cluster, c->cluster) ||
			    strcmp(d->gpu_model, c->gpu_model))
				continue;
			/* on the same day, additions first; retirements in list order */
			if (d->day_s < c->day_s || (d->day_s == c->day_s && (d->gpus > 0 || j < i)))
				have += d->gpus;
		}
		if (-c->gpus > have) {
			*bad = i;
			*field = "gpus";
			gl_timeutil_format_day(c->day_s, day, sizeof day);
			return gl_err_set(err, GL_EINVAL,
					  "retires %lld %s GPUs in %s on %s, but %lld are there then (present now and the plan's"
					  " earlier changes)",
					  (long long)-c->gpus, c->gpu_model, c->cluster, day, (long long)(have > 0 ? have : 0));
		}
	}
	return 0;
}

double gl_capplan_capacity(double base, const struct gl_capplan_change *plan, size_t n, const char *cluster,
			   const char *gpu_model, int64_t today_s, int64_t from_s, int64_t to_s)
{
	double at_from = base, least;
	if (isnan(base))
		return NAN;
	for (size_t i = 0; i < n; i++)
		if (plan[i].day_s > today_s && plan[i].day_s <= from_s && !strcmp(plan[i].cluster, cluster) &&
		    !strcmp(plan[i].gpu_model, gpu_model))
			at_from += (double)plan[i].gpus;
	least = at_from;
	/* changes inside the span, in date order: the least level reached */
	for (int64_t d = from_s + 86400; d < to_s; d += 86400) {
		double v = at_from;
		for (size_t i = 0; i < n; i++)
			if (plan[i].day_s > from_s && plan[i].day_s <= d && plan[i].day_s > today_s &&
			    !strcmp(plan[i].cluster, cluster) && !strcmp(plan[i].gpu_model, gpu_model))
				v += (double)plan[i].gpus;
		least = v < least ? v : least;
	}
	return least > 0 ? least : 0;
}

double gl_capplan_p_saturation(const struct gl_capplan_step *s)
{
	if (isnan(s->capacity))
		return NAN;
	/* saturated: demand at or above what is available */
	return gl_forecast_prob_above(s->capacity - 1e-9, s->q[0], s->q[1], s->q[2], s->q[3], s->q[4]);
}

void gl_capplan_step_fill(struct gl_capplan_step *s, const struct gl_forecast_result *fc, int i)
{
	s->q[0] = fc->lo95[i], s->q[1] = fc->lo80[i], s->q[2] = fc->q50[i];
	s->q[3] = fc->hi80[i], s->q[4] = fc->hi95[i];
	s->origins = 0;
	/* a bucket's pairs are its origins times its answered leads */
	for (int b = 0; b < GL_FORECAST_BUCKETS; b++)
		if (fc->bucket_first[b] && i + 1 >= fc->bucket_first[b] && i + 1 <= fc->bucket_last[b])
			s->origins = fc->cv_bucket[b].n / (fc->bucket_last[b] - fc->bucket_first[b] + 1);
	s->trend = fc->method >= GL_FORECAST_FIRST_TREND;
}

/* P(saturation) of a step were its demand z standard errors of its median
 * lower: the median of n origins' errors is known to 1.2533 sigma / sqrt(n),
 * sigma from the 80 % band (1.2816 sigma either side of a normal median) */
static double p_saturation_lower(const struct gl_capplan_step *s, double z)
{
	double sd = (s->q[3] - s->q[1]) / (2 * 1.2816);
	if (s->origins <= 0 || isnan(s->capacity))
		return NAN;
	return gl_forecast_prob_above(s->capacity - 1e-9 + z * 1.2533 * sd / sqrt((double)s->origins), s->q[0], s->q[1],
				      s->q[2], s->q[3], s->q[4]);
}

long gl_capplan_first_saturated(const struct gl_capplan_step *s, size_t n, double p)
{
	long first = -1;
	for (size_t k = 0; k < n; k++) {
		double ps = gl_capplan_p_saturation(&s[k]);
		if (isnan(ps))
			break;
		if (ps >= p && first < 0)
			first = (long)k;
		/* a trend was chosen for beating every level method on its
		 * backtest; a level estimated at about capacity is a coin toss
		 * (P about p, now above, now below from one week's history to
		 * the next), so it must reach p with its median 1.645 standard
		 * errors lower (one-sided 95 %) */
		if (first >= 0 && (s[k].trend || p_saturation_lower(&s[k], 1.645) >= p))
			return first;
	}
	return -1;
}

int gl_capplan_recommend(const struct gl_capplan_step *s, size_t n, double level, int64_t lead_s, int64_t today_s,
			 struct gl_capplan_purchase **out, size_t *n_out, size_t *at, struct gl_err *err)
{
	int64_t bought = 0;
	size_t cap = 0;
	*out = NULL;
	*n_out = 0;
	*at = 0;
	if (!(level >= 0.025 && level <= 0.5))
		return gl_err_set(err, GL_EINVAL, "risk level %g is not 2.5..50 %%", 100 * level);
	for (size_t k = 0; k < n; k++) {
		double v = gl_forecast_value_above(level, s[k].q[0], s[k].q[1], s[k].q[2], s[k].q[3], s[k].q[4]);
		int64_t need;
		if (isnan(v) || isnan(s[k].capacity)) {
			*at = k;
			free(*out);
			*out = NULL;
			*n_out = 0;
			return gl_err_set(err, GL_EINVAL, "%s unknown", isnan(v) ? "the demand interval is" : "capacity is");
		}
		/* P(demand >= c) < level needs c above the 1 - level quantile */
		need = v >= s[k].capacity ? (int64_t)floor(v - s[k].capacity) + 1 : 0;
		if (need <= bought)
			continue;
		if (*n_out == cap) {
			cap = cap ? 2 * cap : 4;
			*out = gl_xrealloc(*out, sizeof **out * cap);
		}
		(*out)[*n_out] = (struct gl_capplan_purchase){s[k].start_s, s[k].start_s - lead_s, need - bought, need,
							     s[k].start_s - lead_s < today_s};
		(*n_out)++;
		bought = need;
	}
	return 0;
}

/* ---- the outlook of one cluster/model ---- */

void gl_capplan_demand_fini(struct gl_capplan_demand *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nk; i++) {
		free(d->keys[i].peak);
		free(d->keys[i].sat);
	}
	free(d->keys);
	memset(d, 0, sizeof *d);
}

struct gl_capplan_key *gl_capplan_demand_key(struct gl_capplan_demand *d, const char *cluster, const char *gpu_model)
{
	struct gl_capplan_key *k;
	for (size_t i = 0; i < d->nk; i++)
		/* both carry the canonical model (sql/024); case kept for safety */
		if (!strcmp(d->keys[i].cluster, cluster) && !strcasecmp(d->keys[i].gpu_model, gpu_model))
			return &d->keys[i];
	d->keys = gl_xrealloc(d->keys, sizeof *d->keys * (d->nk + 1));
	k = &d->keys[d->nk++];
	memset(k, 0, sizeof *k);
	snprintf(k->cluster, sizeof k->cluster, "%s", cluster);
	snprintf(k->gpu_model, sizeof k->gpu_model, "%s", gpu_model);
	k->capacity = NAN;
	k->peak = gl_xcalloc(d->nd ? d->nd : 1, sizeof *k->peak);
	k->sat = gl_xcalloc(d->nd ? d->nd : 1, sizeof *k->sat);
	return k;
}

void gl_capplan_outlook_fini(struct gl_capplan_outlook *o)
{
	if (!o)
		return;
	gl_forecast_result_fini(&o->fc);
	free(o->hist);
	free(o->steps);
	free(o->purchases);
	memset(o, 0, sizeof *o);
}

int gl_capplan_outlook(const struct gl_capplan_key *k, size_t nd, int64_t start_s,
		       const struct gl_capplan_outlook_opts *o, struct gl_capplan_outlook *out, struct gl_err *err)
{
	struct gl_forecast_opts fo = {0};
	struct gl_err e = {0};
	size_t per = o->weekly ? 7 : 1, s0, at = 0;
	int64_t step_s = 86400 * (int64_t)per;
	int rc;

	memset(out, 0, sizeof *out);
	out->sat50 = out->sat80 = -1;
	/* a week's peak is the largest of its days' */
	out->n_hist = nd / per;
	out->hist = gl_xcalloc(out->n_hist ? out->n_hist : 1, sizeof *out->hist);
	for (size_t d = 0; d < out->n_hist * per; d++)
		if (k->peak[d] > out->hist[d / per])
			out->hist[d / per] = k->peak[d];
	s0 = gl_forecast_active_start(out->hist, out->n_hist, 1);
	fo.slots_per_day = 1;
	fo.slots_per_week = o->weekly ? 1 : 7;
	fo.horizon = o->horizon;
	fo.method = GL_FORECAST_AUTO;
	fo.first_weekday = o->weekly ? -1 : gl_timeutil_weekday(start_s + (int64_t)s0 * step_s);
	if ((rc = gl_forecast_fit(out->hist + s0, out->n_hist - s0, &fo, &out->fc, err))) {
		gl_capplan_outlook_fini(out);
		return rc;
	}
	out->steps = gl_xcalloc((size_t)out->fc.horizon + 1, sizeof *out->steps);
	for (int i = 0; i < out->fc.horizon; i++) {
		struct gl_capplan_step *st = &out->steps[i];
		st->start_s = o->end_s + step_s * i;
		st->end_s = st->start_s + step_s;
		gl_capplan_step_fill(st, &out->fc, i);
		st->capacity = gl_capplan_capacity(k->capacity, o->plan, o->n_plan, k->cluster, k->gpu_model, o->today_s,
						   st->start_s, st->end_s);
	}
	out->sat50 = gl_capplan_first_saturated(out->steps, (size_t)out->fc.horizon, 0.5);
	out->sat80 = gl_capplan_first_saturated(out->steps, (size_t)out->fc.horizon, 0.8);
	if (gl_capplan_recommend(out->steps, (size_t)out->fc.horizon, o->risk, o->lead_s, o->today_s, &out->purchases,
				 &out->n_purchases, &at, &e)) {
		char day[32];
		gl_timeutil_format_day(out->fc.horizon ? out->steps[at].start_s : o->end_s, day, sizeof day);
		snprintf(out->note, sizeof out->note, "no recommendation: %s from %s", e.msg, day);
	} else {
		out->purchases_known = 1;
		snprintf(out->note, sizeof out->note,
			 "GPUs to add by each date to keep P(saturation) under %g %% through the %d %s answered", 100 * o->risk,
			 out->fc.horizon, o->weekly ? "weeks" : "days");
	}
	return 0;
}
