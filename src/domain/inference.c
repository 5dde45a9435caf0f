/* Cost per inference request and per token (see include/gl/inference.h). */
#include "gl/inference.h"
#include "gl/increase.h"
#include "gl/jobstats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct gl_inference_pair {
	int64_t job_pk;
	char *endpoint, *model;
};

struct gl_inference_line {
	size_t step;
	struct gl_inference_cost c;
	char *dim;
	int64_t idle_micros;
};

struct gl_inference_use {
	size_t step;
	int64_t job_pk;
	char *endpoint, *model;
	int64_t v[GL_SERVEMETRICS__NCTR];
	size_t nle, cap;
	double *le, *cum;
	int in_window; /* its job has a ledger line in the window */
};

void gl_inference_init(struct gl_inference *x, enum gl_inference_agg agg, size_t n_steps)
{
	memset(x, 0, sizeof *x);
	x->agg = agg;
	x->n_steps = n_steps;
	x->steps = gl_xcalloc(n_steps ? n_steps : 1, sizeof *x->steps);
}

static void group_fini(struct gl_inference_group *g)
{
	free(g->key);
	free(g->le);
	free(g->cum);
}

static void step_fini(struct gl_inference_step *s)
{
	for (size_t i = 0; i < s->n; i++)
		group_fini(&s->groups[i]);
	free(s->groups);
	for (size_t i = 0; i < s->n_un; i++) {
		free(s->un[i].endpoint);
		free(s->un[i].model);
	}
	free(s->un);
	group_fini(&s->total);
	free(s->gix.slot);
}

void gl_inference_fini(struct gl_inference *x)
{
	for (size_t i = 0; i < x->n_steps; i++)
		step_fini(&x->steps[i]);
	free(x->steps);
	step_fini(&x->window);
	for (size_t i = 0; i < x->n_pairs; i++) {
		free(x->pairs[i].endpoint);
		free(x->pairs[i].model);
	}
	free(x->pairs);
	for (size_t i = 0; i < x->n_lines; i++)
		free(x->lines[i].dim);
	free(x->lines);
	for (size_t i = 0; i < x->n_uses; i++) {
		free(x->uses[i].endpoint);
		free(x->uses[i].model);
		free(x->uses[i].le);
		free(x->uses[i].cum);
	}
	free(x->uses);
	free(x->uix.slot);
	memset(x, 0, sizeof *x);
}

#define GROW(arr, n, cap)                                              \
	do {                                                           \
		if ((n) == (cap)) {                                    \
			(cap) = (cap) ? 2 * (cap) : 16;                \
			(arr) = gl_xrealloc((arr), (cap) * sizeof *(arr)); \
		}                                                      \
	} while (0)

/* ---- the indexes: FNV-1a over the key, linear probing ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * UINT64_C(1099511628211);
	return h;
}

static uint64_t str_hash(uint64_t h, const char *s)
{
	return fnv(h, s, strlen(s) + 1);
}

#define FNV_BASIS UINT64_C(14695981039346656037)

/* The slot of key h in ix: the one holding an item eq() accepts, or the
 * empty one where it goes. ix has room (cap > 2 x items). */
static size_t *ix_probe(struct gl_inference_index *ix, uint64_t h, int (*eq)(const void *ctx, size_t item), const void *ctx)
{
	size_t k = (size_t)h & (ix->cap - 1);
	while (ix->slot[k] && !eq(ctx, ix->slot[k] - 1))
		k = (k + 1) & (ix->cap - 1);
	return &ix->slot[k];
}

/* Doubles ix when n + 1 items would fill half of it; hash(ctx, i) is item
 * i's key hash. */
static void ix_room(struct gl_inference_index *ix, size_t n, uint64_t (*hash)(const void *ctx, size_t item), const void *ctx)
{
	size_t cap;
	if (2 * (n + 1) <= ix->cap)
		return;
	cap = ix->cap ? 2 * ix->cap : 64;
	while (2 * (n + 1) > cap)
		cap *= 2;
	free(ix->slot);
	ix->slot = gl_xcalloc(cap, sizeof *ix->slot);
	ix->cap = cap;
	for (size_t i = 0; i < n; i++) {
		size_t k = (size_t)hash(ctx, i) & (cap - 1);
		while (ix->slot[k])
			k = (k + 1) & (cap - 1);
		ix->slot[k] = i + 1;
	}
}

static void ix_drop(struct gl_inference_index *ix)
{
	free(ix->slot);
	ix->slot = NULL;
	ix->cap = 0;
}

void gl_inference_add_pair(struct gl_inference *x, int64_t job_pk, const char *endpoint, const char *model)
{
	GROW(x->pairs, x->n_pairs, x->cap_pairs);
	x->pairs[x->n_pairs++] = (struct gl_inference_pair){job_pk, gl_xstrdup(endpoint), gl_xstrdup(model)};
}

void gl_inference_add_cost(struct gl_inference *x, size_t step, const struct gl_inference_cost *c)
{
	struct gl_inference_line *l;
	if (step >= x->n_steps)
		return;
	GROW(x->lines, x->n_lines, x->cap_lines);
	l = &x->lines[x->n_lines++];
	l->step = step;
	l->c = *c;
	l->dim = gl_xstrdup(c->dim ? c->dim : "");
	l->c.dim = NULL;
	/* jobstats' rule, per job: idle GPU-seconds as micro-GPU-seconds of
	 * the line's allocation */
	l->idle_micros = l->c.observed_s > 0 ? gl_jobstats_part_cost(c->cost_micros, (int64_t)c->alloc_us,
								     llround(c->idle_s * 1e6))
					     : 0;
}

struct use_key {
	const struct gl_inference *x;
	size_t step;
	int64_t job_pk;
	const char *endpoint, *model;
};

static uint64_t use_key_hash(size_t step, int64_t job_pk, const char *endpoint, const char *model)
{
	uint64_t h = fnv(FNV_BASIS, &step, sizeof step);
	h = fnv(h, &job_pk, sizeof job_pk);
	return str_hash(str_hash(h, endpoint), model);
}

static uint64_t use_hash(const void *ctx, size_t i)
{
	const struct gl_inference_use *u = &((const struct gl_inference *)ctx)->uses[i];
	return use_key_hash(u->step, u->job_pk, u->endpoint, u->model);
}

static int use_eq(const void *ctx, size_t i)
{
	const struct use_key *k = ctx;
	const struct gl_inference_use *u = &k->x->uses[i];
	return u->step == k->step && u->job_pk == k->job_pk && !strcmp(u->endpoint, k->endpoint) &&
	       !strcmp(u->model, k->model);
}

/* The use of (step, job, endpoint, model), added when new. */
static struct gl_inference_use *use_for(struct gl_inference *x, size_t step, int64_t job_pk, const char *endpoint, const char *model)
{
	struct use_key key = {x, step, job_pk, endpoint, model};
	struct gl_inference_use *u;
	size_t *slot;
	ix_room(&x->uix, x->n_uses, use_hash, x);
	slot = ix_probe(&x->uix, use_key_hash(step, job_pk, endpoint, model), use_eq, &key);
	if (*slot)
		return &x->uses[*slot - 1];
	GROW(x->uses, x->n_uses, x->cap_uses);
	u = &x->uses[x->n_uses++];
	memset(u, 0, sizeof *u);
	u->step = step;
	u->job_pk = job_pk;
	u->endpoint = gl_xstrdup(endpoint);
	u->model = gl_xstrdup(model);
	*slot = x->n_uses;
	return u;
}

void gl_inference_add_usage(struct gl_inference *x, size_t step, int64_t job_pk, const char *endpoint, const char *model,
		      const int64_t v[GL_SERVEMETRICS__NCTR])
{
	struct gl_inference_use *u;
	if (step >= x->n_steps)
		return;
	u = use_for(x, step, job_pk, endpoint, model);
	for (size_t k = 0; k < GL_SERVEMETRICS__NCTR; k++)
		u->v[k] += v[k];
}

static void hist_add(size_t *n, size_t *cap, double **le, double **cum, double b, double count)
{
	size_t i = 0;
	while (i < *n && (*le)[i] != b)
		i++;
	if (i == *n) {
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 32;
			*le = gl_xrealloc(*le, *cap * sizeof **le);
			*cum = gl_xrealloc(*cum, *cap * sizeof **cum);
		}
		(*le)[i] = b;
		(*cum)[i] = 0;
		(*n)++;
	}
	(*cum)[i] += count;
}

void gl_inference_add_bucket(struct gl_inference *x, size_t step, int64_t job_pk, const char *endpoint, const char *model,
		       double le, double count)
{
	struct gl_inference_use *u;
	if (step >= x->n_steps || isnan(le))
		return;
	u = use_for(x, step, job_pk, endpoint, model);
	hist_add(&u->nle, &u->cap, &u->le, &u->cum, le, count);
}

void gl_inference_add_row(struct gl_inference *x, size_t step, int64_t job_pk, const char *endpoint, const char *model,
		    const int64_t v[GL_SERVEMETRICS__NCTR], const double *le, const double *cum, size_t n)
{
	struct gl_inference_use *u;
	if (step >= x->n_steps)
		return;
	u = use_for(x, step, job_pk, endpoint, model);
	for (size_t k = 0; k < GL_SERVEMETRICS__NCTR; k++)
		u->v[k] += v[k];
	if (u->nle == n && (!n || !memcmp(u->le, le, n * sizeof *le))) {
		for (size_t i = 0; i < n; i++) /* the same bounds in the same order */
			u->cum[i] += cum[i];
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (!isnan(le[i]))
			hist_add(&u->nle, &u->cap, &u->le, &u->cum, le[i], cum[i]);
}

int64_t gl_inference_per(int64_t a, int64_t num, int64_t den)
{
	gl_cost_i128 p = (gl_cost_i128)a * num;
	return (int64_t)((2 * p + den) / (2 * (gl_cost_i128)den));
}

/* ---- groups ---- */

struct group_key {
	const struct gl_inference_step *s;
	const char *key;
};

static uint64_t group_hash(const void *ctx, size_t i)
{
	return str_hash(FNV_BASIS, ((const struct gl_inference_step *)ctx)->groups[i].key);
}

static int group_eq(const void *ctx, size_t i)
{
	const struct group_key *k = ctx;
	return !strcmp(k->s->groups[i].key, k->key);
}

static struct gl_inference_group *group_for(struct gl_inference_step *s, const char *key)
{
	struct group_key k = {s, key};
	size_t *slot;
	ix_room(&s->gix, s->n, group_hash, s);
	slot = ix_probe(&s->gix, str_hash(FNV_BASIS, key), group_eq, &k);
	if (*slot)
		return &s->groups[*slot - 1];
	GROW(s->groups, s->n, s->cap);
	memset(&s->groups[s->n], 0, sizeof s->groups[s->n]);
	s->groups[s->n].key = gl_xstrdup(key);
	*slot = ++s->n;
	return &s->groups[s->n - 1];
}

static void group_add_usage(struct gl_inference_group *g, const int64_t *v, size_t nle, const double *le, const double *cum)
{
	for (size_t k = 0; k < GL_SERVEMETRICS__NCTR; k++)
		g->v[k] += v[k];
	for (size_t i = 0; i < nle; i++)
		hist_add(&g->nle, &g->cap_le, &g->le, &g->cum, le[i], cum[i]);
}

static void group_add_group(struct gl_inference_group *g, const struct gl_inference_group *o)
{
	group_add_usage(g, o->v, o->nle, o->le, o->cum);
	g->gpu_s += o->gpu_s;
	g->unpriced_s += o->unpriced_s;
	g->cost_micros += o->cost_micros;
	g->idle_micros += o->idle_micros;
	g->busy_s += o->busy_s;
	g->idle_s += o->idle_s;
	g->observed_s += o->observed_s;
}

static void unattributed_add(struct gl_inference_step *s, const char *endpoint, const char *model, const int64_t *v)
{
	struct gl_inference_unattributed *u = NULL;
	for (size_t i = 0; i < s->n_un && !u; i++)
		if (!strcmp(s->un[i].endpoint, endpoint) && !strcmp(s->un[i].model, model))
			u = &s->un[i];
	if (!u) {
		GROW(s->un, s->n_un, s->cap_un);
		u = &s->un[s->n_un++];
		memset(u, 0, sizeof *u);
		u->endpoint = gl_xstrdup(endpoint);
		u->model = gl_xstrdup(model);
	}
	for (size_t k = 0; k < GL_SERVEMETRICS__NCTR; k++)
		u->v[k] += v[k];
}

/* ---- lookups over the inputs, sorted once ---- */

static int cmp_pair(const void *a, const void *b)
{
	const struct gl_inference_pair *x = a, *y = b;
	int c;
	if (x->job_pk != y->job_pk)
		return x->job_pk < y->job_pk ? -1 : 1;
	return (c = strcmp(x->endpoint, y->endpoint)) ? c : strcmp(x->model, y->model);
}

static int cmp_use(const void *a, const void *b)
{
	const struct gl_inference_use *x = a, *y = b;
	int c;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	if (x->job_pk != y->job_pk)
		return x->job_pk < y->job_pk ? -1 : 1;
	return (c = strcmp(x->endpoint, y->endpoint)) ? c : strcmp(x->model, y->model);
}

static int cmp_line_job(const void *a, const void *b)
{
	const struct gl_inference_line *x = a, *y = b;
	if (x->c.job_pk != y->c.job_pk)
		return x->c.job_pk < y->c.job_pk ? -1 : 1;
	return x->step < y->step ? -1 : x->step > y->step;
}

/* The line of job in the window with the lowest step (its dimension
 * value: a job's owner is resolved at its start, so all its lines agree). */
static const struct gl_inference_line *line_of_job(const struct gl_inference *x, int64_t job_pk)
{
	size_t lo = 0, hi = x->n_lines;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x->lines[mid].c.job_pk < job_pk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->n_lines && x->lines[lo].c.job_pk == job_pk ? &x->lines[lo] : NULL;
}

static int64_t requests_of(const struct gl_inference *x, size_t step, int64_t job_pk, const struct gl_inference_pair *p)
{
	struct gl_inference_use key = {.step = step, .job_pk = job_pk, .endpoint = p->endpoint, .model = p->model};
	const struct gl_inference_use *u = gl_bsearch(&key, x->uses, x->n_uses, sizeof *x->uses, cmp_use);
	return u ? u->v[GL_SERVEMETRICS_REQUESTS] : 0;
}

/* Shares one line over its job's (endpoint, model) pairs by their requests
 * in the step (equally when none had any). */
static int split_line(struct gl_inference *x, struct gl_inference_step *s, const struct gl_inference_line *l)
{
	size_t a = 0, hi = x->n_pairs, n = 0;
	int64_t *w, *cost, *gpu, *unpriced, *idle, sum = 0;
	int rc = 0;

	while (a < hi) { /* pairs are sorted by job: the job's begin at a */
		size_t mid = a + (hi - a) / 2;
		if (x->pairs[mid].job_pk < l->c.job_pk)
			a = mid + 1;
		else
			hi = mid;
	}
	while (a + n < x->n_pairs && x->pairs[a + n].job_pk == l->c.job_pk)
		n++;
	if (!n) {
		/* a serving job without a pair cannot come from the store;
		 * its cost still goes somewhere visible */
		struct gl_inference_pair none = {l->c.job_pk, "unknown", "unknown"};
		const struct gl_inference_pair *p = &none;
		struct gl_inference_group *g = group_for(s, x->agg == GL_INFERENCE_BY_ENDPOINT ? p->endpoint : p->model);
		g->gpu_s += l->c.alloc_s;
		g->unpriced_s += l->c.unpriced_s;
		g->cost_micros += l->c.cost_micros;
		g->idle_micros += l->idle_micros;
		g->busy_s += l->c.busy_s;
		g->idle_s += l->c.idle_s;
		g->observed_s += l->c.observed_s;
		return 0;
	}
	w = gl_xcalloc(5 * n, sizeof *w);
	cost = w + n;
	gpu = cost + n;
	unpriced = gpu + n;
	idle = unpriced + n;
	for (size_t i = 0; i < n; i++)
		sum += (w[i] = requests_of(x, l->step, l->c.job_pk, &x->pairs[a + i]));
	for (size_t i = 0; !sum && i < n; i++)
		w[i] = 1;
	if (!sum)
		sum = (int64_t)n;
	if (gl_cost_share(l->c.cost_micros, w, n, cost) || gl_cost_share(l->c.alloc_s, w, n, gpu) ||
	    gl_cost_share(l->c.unpriced_s, w, n, unpriced) || gl_cost_share(l->idle_micros, w, n, idle)) {
		rc = -GL_EINVAL;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct gl_inference_pair *p = &x->pairs[a + i];
		struct gl_inference_group *g = group_for(s, x->agg == GL_INFERENCE_BY_ENDPOINT ? p->endpoint : p->model);
		double f = (double)w[i] / (double)sum;
		g->cost_micros += cost[i];
		g->gpu_s += gpu[i];
		g->unpriced_s += unpriced[i];
		g->idle_micros += idle[i];
		g->busy_s += l->c.busy_s * f;
		g->idle_s += l->c.idle_s * f;
		g->observed_s += l->c.observed_s * f;
	}
out:
	free(w);
	return rc;
}

/* The lines and uses into their steps' groups, in one pass over each. */
static int group_all(struct gl_inference *x)
{
	int rc;
	for (size_t k = 0; k < x->n_lines; k++) {
		const struct gl_inference_line *l = &x->lines[k];
		struct gl_inference_step *s = &x->steps[l->step];
		if (x->agg == GL_INFERENCE_BY_JOB_DIM) {
			struct gl_inference_group *g = group_for(s, l->dim);
			g->gpu_s += l->c.alloc_s;
			g->unpriced_s += l->c.unpriced_s;
			g->cost_micros += l->c.cost_micros;
			g->idle_micros += l->idle_micros;
			g->busy_s += l->c.busy_s;
			g->idle_s += l->c.idle_s;
			g->observed_s += l->c.observed_s;
		} else if ((rc = split_line(x, s, l))) {
			return rc;
		}
	}
	for (size_t k = 0; k < x->n_uses; k++) {
		const struct gl_inference_use *u = &x->uses[k];
		struct gl_inference_step *s = &x->steps[u->step];
		const char *key;
		if (!u->in_window) {
			unattributed_add(s, u->endpoint, u->model, u->v);
			continue;
		}
		key = x->agg == GL_INFERENCE_BY_ENDPOINT ? u->endpoint
		    : x->agg == GL_INFERENCE_BY_MODEL	   ? u->model
						   : line_of_job(x, u->job_pk)->dim;
		group_add_usage(group_for(s, key), u->v, u->nle, u->le, u->cum);
	}
	return 0;
}

/* ---- derived figures ---- */

static int cmp_le_pair(const void *a, const void *b)
{
	const double *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

static double quantile(const struct gl_inference_group *g, double q)
{
	double *pairs, *le, *cum, v;
	if (g->nle < 2)
		return NAN;
	pairs = gl_xcalloc(4 * g->nle, sizeof *pairs);
	for (size_t i = 0; i < g->nle; i++) {
		pairs[2 * i] = g->le[i];
		pairs[2 * i + 1] = g->cum[i];
	}
	gl_qsort(pairs, g->nle, 2 * sizeof *pairs, cmp_le_pair);
	le = pairs + 2 * g->nle;
	cum = le + g->nle;
	for (size_t i = 0; i < g->nle; i++) {
		le[i] = pairs[2 * i];
		cum[i] = pairs[2 * i + 1];
	}
	v = gl_increase_quantile(le, cum, g->nle, q);
	free(pairs);
	return v;
}

static void derive(struct gl_inference_group *g)
{
	int64_t req = g->v[GL_SERVEMETRICS_REQUESTS], pt = g->v[GL_SERVEMETRICS_PROMPT], gt = g->v[GL_SERVEMETRICS_GENERATED];
	g->have_per_1k_requests = req > 0;
	g->per_1k_requests_micros = req > 0 ? gl_inference_per(g->cost_micros, 1000, req) : 0;
	g->have_per_1m_prompt = pt > 0;
	g->per_1m_prompt_micros = pt > 0 ? gl_inference_per(g->cost_micros, 1000000, pt) : 0;
	g->have_per_1m_generated = gt > 0;
	g->per_1m_generated_micros = gt > 0 ? gl_inference_per(g->cost_micros, 1000000, gt) : 0;
	g->tokens_per_gpu_s = g->gpu_s > 0 ? (double)(pt + gt) / (double)g->gpu_s : NAN;
	g->generated_per_gpu_s = g->gpu_s > 0 ? (double)gt / (double)g->gpu_s : NAN;
	g->busy_share = g->observed_s > 0 ? g->busy_s / g->observed_s : NAN;
	g->idle_share = g->observed_s > 0 ? g->idle_s / g->observed_s : NAN;
	g->p50_s = quantile(g, 0.5);
	g->p99_s = quantile(g, 0.99);
}

static int cmp_group(const void *a, const void *b)
{
	return strcmp(((const struct gl_inference_group *)a)->key, ((const struct gl_inference_group *)b)->key);
}

static int cmp_unattr(const void *a, const void *b)
{
	const struct gl_inference_unattributed *x = a, *y = b;
	int c = strcmp(x->endpoint, y->endpoint);
	return c ? c : strcmp(x->model, y->model);
}

static void finish_step(struct gl_inference_step *s)
{
	ix_drop(&s->gix);
	gl_qsort(s->groups, s->n, sizeof *s->groups, cmp_group);
	gl_qsort(s->un, s->n_un, sizeof *s->un, cmp_unattr);
	memset(&s->total, 0, sizeof s->total);
	s->total.key = gl_xstrdup("__total__");
	for (size_t i = 0; i < s->n; i++) {
		group_add_group(&s->total, &s->groups[i]);
		derive(&s->groups[i]);
	}
	derive(&s->total);
}

int gl_inference_finish(struct gl_inference *x)
{
	int rc;
	gl_qsort(x->pairs, x->n_pairs, sizeof *x->pairs, cmp_pair);
	ix_drop(&x->uix);
	gl_qsort(x->uses, x->n_uses, sizeof *x->uses, cmp_use);
	gl_qsort(x->lines, x->n_lines, sizeof *x->lines, cmp_line_job);
	for (size_t k = 0; k < x->n_uses; k++)
		x->uses[k].in_window = x->uses[k].job_pk != 0 && line_of_job(x, x->uses[k].job_pk) != NULL;
	memset(&x->window, 0, sizeof x->window);
	if (x->n_steps) {
		x->window.start_s = x->steps[0].start_s;
		x->window.end_s = x->steps[x->n_steps - 1].end_s;
	}
	if ((rc = group_all(x)))
		return rc;
	for (size_t i = 0; i < x->n_steps; i++) {
		struct gl_inference_step *s = &x->steps[i];
		for (size_t k = 0; k < s->n; k++)
			group_add_group(group_for(&x->window, s->groups[k].key), &s->groups[k]);
		for (size_t k = 0; k < s->n_un; k++)
			unattributed_add(&x->window, s->un[k].endpoint, s->un[k].model, s->un[k].v);
		finish_step(s);
	}
	finish_step(&x->window);
	return 0;
}
