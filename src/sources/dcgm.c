/* dcgm-exporter mapping and bucket rollup (see include/gl/dcgm.h). */
#include "gl/dcgm.h"
#include "gl/bounds.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena: one scrape's strings, freed together ------------------------ */

struct gl_dcgm_arena {
	struct gl_dcgm_arena *next;
	size_t used, cap;
	char data[];
};

#define ARENA_CHUNK (64 * 1024)

/* Label values may hold NUL bytes; our strings end at the first one, and so
 * does PostgreSQL text, where they go next. */
static struct gl_str cut_nul(struct gl_str s)
{
	const char *z = s.len ? memchr(s.p, '\0', s.len) : NULL;
	if (z)
		s.len = (size_t)(z - s.p);
	return s;
}

/* The one empty string: "not filled yet" is a pointer compare, without
 * touching (and missing the cache on) the record's strings every sample. */
static const char k_empty[] = "";

static const char *arena_str(struct gl_dcgm_arena **ap, struct gl_str s)
{
	struct gl_dcgm_arena *a = *ap;
	char *r;

	s = cut_nul(s);
	if (s.len == 0)
		return k_empty;
	if (!a || a->cap - a->used < s.len + 1) {
		size_t cap = s.len + 1 > ARENA_CHUNK ? s.len + 1 : ARENA_CHUNK;
		a = gl_xmalloc(sizeof *a + cap);
		a->next = *ap;
		a->used = 0;
		a->cap = cap;
		*ap = a;
	}
	r = a->data + a->used;
	memcpy(r, s.p, s.len);
	r[s.len] = '\0';
	a->used += s.len + 1;
	return r;
}

/* ---- metrics ------------------------------------------------------------ */

#define M(lit) {lit, sizeof(lit) - 1}
static const struct {
	const char *name;
	size_t len;
} k_metric[GL_DCGM__NMETRICS] = {
	[GL_DCGM_ENGINE_ACTIVE] = M("DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
	[GL_DCGM_GPU_UTIL] = M("DCGM_FI_DEV_GPU_UTIL"),
	[GL_DCGM_FB_USED_MIB] = M("DCGM_FI_DEV_FB_USED"),
	[GL_DCGM_FB_FREE_MIB] = M("DCGM_FI_DEV_FB_FREE"),
	[GL_DCGM_POWER_W] = M("DCGM_FI_DEV_POWER_USAGE"),
	[GL_DCGM_ENERGY_MJ] = M("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),
	[GL_DCGM_MEM_COPY_UTIL] = M("DCGM_FI_DEV_MEM_COPY_UTIL"),
	[GL_DCGM_TENSOR_ACTIVE] = M("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
	[GL_DCGM_DRAM_ACTIVE] = M("DCGM_FI_PROF_DRAM_ACTIVE"),
	[GL_DCGM_XID_ERRORS] = M("DCGM_FI_DEV_XID_ERRORS"),
};
#undef M

const char *gl_dcgm_metric_name(enum gl_dcgm_metric m)
{
	return (unsigned)m < GL_DCGM__NMETRICS ? k_metric[m].name : "?";
}

int gl_dcgm_metric_lookup(struct gl_str name, enum gl_dcgm_metric *out)
{
	int i;
	/* every sample comes through here: length first, then memcmp */
	for (i = 0; i < GL_DCGM__NMETRICS; i++) {
		if (name.len == k_metric[i].len && memcmp(name.p, k_metric[i].name, k_metric[i].len) == 0) {
			*out = (enum gl_dcgm_metric)i;
			return 0;
		}
	}
	return -GL_ENOTFOUND;
}

int gl_dcgm_value_is_blank(double v)
{
	/* The int64 sentinels 2^63-16..2^63-13 all round to 2^63 as doubles. */
	static const double fp64_blank = 140737488355328.0; /* 2^47 */
	if (!isfinite(v))
		return 1;
	if (v >= 2147483632.0 && v <= 2147483635.0 && v == floor(v))
		return 1;
	if (v == 9223372036854775808.0)
		return 1;
	return v >= fp64_blank && v <= fp64_blank + 3.0 && v == floor(v);
}

/* ---- scrape ------------------------------------------------------------- */

void gl_dcgm_scrape_init(struct gl_dcgm_scrape *s, const struct gl_dcgm_opts *opts)
{
	memset(s, 0, sizeof *s);
	if (opts)
		s->opts = *opts;
}

void gl_dcgm_scrape_fini(struct gl_dcgm_scrape *s)
{
	size_t i;
	struct gl_dcgm_arena *a, *n;

	if (!s)
		return;
	for (i = 0; i < s->ngpus; i++) {
		free(s->gpus[i].jobs);
		free(s->gpus[i].pods);
	}
	free(s->gpus);
	free(s->index);
	for (a = s->arena; a; a = n) {
		n = a->next;
		free(a);
	}
	memset(s, 0, sizeof *s);
}

/* 8 bytes at a time; quality only needs to beat clustering in a table
 * that is at most half full. */
static uint64_t hash_bytes(uint64_t h, const char *p, size_t n)
{
	const uint64_t k = UINT64_C(0x9E3779B97F4A7C15);
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		h = (h ^ w) * k;
		h ^= h >> 29;
		p += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;
		memcpy(&w, p, n);
		h = (h ^ w ^ ((uint64_t)n << 56)) * k;
		h ^= h >> 29;
	}
	return h;
}

static uint64_t key_hash(struct gl_str host, struct gl_str uuid, int gi_id)
{
	uint64_t h = hash_bytes(UINT64_C(0x243F6A8885A308D3) ^ host.len, host.p, host.len);
	h = hash_bytes(h ^ 0xff, uuid.p, uuid.len);
	h = (h ^ (uint64_t)(uint32_t)gi_id) * UINT64_C(0xBF58476D1CE4E5B9);
	return h ^ (h >> 31);
}

static int cstr_eq(const char *c, struct gl_str s)
{
	return strncmp(c, s.p ? s.p : "", s.len) == 0 && c[s.len] == '\0';
}

static void index_grow(struct gl_dcgm_scrape *s)
{
	size_t cap = s->index_cap ? s->index_cap * 2 : 64, i;
	uint64_t *idx = gl_xcalloc(cap, sizeof *idx);

	for (i = 0; i < s->ngpus; i++) {
		const struct gl_dcgm_gpu *g = &s->gpus[i];
		struct gl_str h = {g->hostname, strlen(g->hostname)}, u = {g->uuid, strlen(g->uuid)};
		uint64_t hv = key_hash(h, u, g->gi_id);
		size_t j = (size_t)hv & (cap - 1);
		while (idx[j])
			j = (j + 1) & (cap - 1);
		idx[j] = (hv & ~UINT64_C(0xffffffff)) | (uint64_t)(i + 1);
	}
	free(s->index);
	s->index = idx;
	s->index_cap = cap;
}

static struct gl_dcgm_gpu *gpu_get(struct gl_dcgm_scrape *s, struct gl_str host, struct gl_str uuid,
				   int gi_id, int create)
{
	struct gl_dcgm_gpu *g;
	uint64_t hv, hi;
	size_t j;

	if (!s->index_cap) {
		if (!create)
			return NULL;
		index_grow(s);
	}
	hv = key_hash(host, uuid, gi_id);
	hi = hv & ~UINT64_C(0xffffffff);
	j = (size_t)hv & (s->index_cap - 1);
	/* the slot keeps the hash's high half: most wrong slots are passed
	 * over without touching the GPU record or its strings */
	while (s->index[j]) {
		if ((s->index[j] & ~UINT64_C(0xffffffff)) == hi) {
			g = &s->gpus[(uint32_t)s->index[j] - 1];
			if (g->gi_id == gi_id && cstr_eq(g->uuid, uuid) && cstr_eq(g->hostname, host))
				return g;
		}
		j = (j + 1) & (s->index_cap - 1);
	}
	if (!create)
		return NULL;
	if (s->ngpus == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->gpus = gl_xrealloc(s->gpus, s->cap * sizeof *s->gpus);
	}
	g = &s->gpus[s->ngpus];
	memset(g, 0, sizeof *g);
	g->hostname = arena_str(&s->arena, host);
	g->uuid = arena_str(&s->arena, uuid);
	g->gi_id = gi_id;
	g->gi_profile = g->model = g->device = g->pci_bus_id = g->driver_version = k_empty;
	g->gpu_index = -1;
	s->index[j] = hi | (uint64_t)++s->ngpus;
	if (s->ngpus * 2 > s->index_cap)
		index_grow(s);
	return g;
}

const struct gl_dcgm_gpu *gl_dcgm_scrape_find(const struct gl_dcgm_scrape *s, const char *hostname,
					      const char *uuid, int gi_id)
{
	struct gl_str h = {hostname, strlen(hostname)}, u = {uuid, strlen(uuid)};
	return gpu_get((struct gl_dcgm_scrape *)s, h, u, gi_id, 0);
}

/* Non-negative int or -1. */
static int parse_small_int(struct gl_str v)
{
	long x = 0;
	size_t i;
	if (v.len == 0 || v.len > 9)
		return -1;
	for (i = 0; i < v.len; i++) {
		unsigned d = (unsigned)(v.p[i] - '0');
		if (d > 9)
			return -1;
		x = x * 10 + d;
	}
	return (int)x;
}

enum {
	L_HOST, L_UUID, L_GI_ID, L_GI_PROFILE, L_GPU, L_MODEL, L_DEVICE, L_PCI, L_DRIVER, L_JOB,
	L_POD, L_NS, L_CONT, L_XPOD, L_XNS, L_XCONT, L__N
};

/* Dispatch on length first: most labels are rejected without a memcmp. */
static int label_id(struct gl_str n)
{
#define IS(lit) (n.len == sizeof(lit) - 1 && memcmp(n.p, lit, sizeof(lit) - 1) == 0)
	switch (n.len) {
	case 3:
		if (IS("gpu"))
			return L_GPU;
		if (IS("pod"))
			return L_POD;
		break;
	case 4:
		if (IS("UUID") || IS("uuid"))
			return L_UUID;
		break;
	case 6:
		if (IS("device"))
			return L_DEVICE;
		break;
	case 7:
		if (IS("hpc_job"))
			return L_JOB;
		break;
	case 8:
		if (IS("Hostname") || IS("hostname"))
			return L_HOST;
		if (IS("GPU_I_ID"))
			return L_GI_ID;
		break;
	case 9:
		if (IS("modelName"))
			return L_MODEL;
		if (IS("namespace"))
			return L_NS;
		if (IS("container"))
			return L_CONT;
		break;
	case 10:
		if (IS("pci_bus_id"))
			return L_PCI;
		break;
	case 12:
		if (IS("exported_pod"))
			return L_XPOD;
		break;
	case 13:
		if (IS("GPU_I_PROFILE"))
			return L_GI_PROFILE;
		break;
	case 18:
		if (IS("exported_namespace"))
			return L_XNS;
		if (IS("exported_container"))
			return L_XCONT;
		break;
	case 22:
		if (IS("DCGM_FI_DRIVER_VERSION"))
			return L_DRIVER;
		break;
	}
	return -1;
#undef IS
}

static void fill(struct gl_dcgm_scrape *s, const char **field, struct gl_str v)
{
	if (*field == k_empty && v.len)
		*field = arena_str(&s->arena, v);
}

static void add_job(struct gl_dcgm_scrape *s, struct gl_dcgm_gpu *g, struct gl_str job)
{
	size_t i;
	job = cut_nul(job);
	for (i = 0; i < g->njobs; i++)
		if (cstr_eq(g->jobs[i], job))
			return;
	/* njobs is small (jobs sharing one GPU): grow one at a time */
	g->jobs = gl_xrealloc(g->jobs, (g->njobs + 1) * sizeof *g->jobs);
	g->jobs[g->njobs++] = arena_str(&s->arena, job);
}

static void add_pod(struct gl_dcgm_scrape *s, struct gl_dcgm_gpu *g, struct gl_str ns, struct gl_str pod,
		    struct gl_str cont)
{
	size_t i;
	ns = cut_nul(ns);
	pod = cut_nul(pod);
	cont = cut_nul(cont);
	for (i = 0; i < g->npods; i++)
		if (cstr_eq(g->pods[i].pod, pod) && cstr_eq(g->pods[i].ns, ns) &&
		    cstr_eq(g->pods[i].container, cont))
			return;
	g->pods = gl_xrealloc(g->pods, (g->npods + 1) * sizeof *g->pods);
	g->pods[g->npods].ns = arena_str(&s->arena, ns);
	g->pods[g->npods].pod = arena_str(&s->arena, pod);
	g->pods[g->npods].container = arena_str(&s->arena, cont);
	g->npods++;
}

/* Whether every label kept is within its bound (include/gl/bounds.h): a
 * 60 kB Hostname or UUID (a line may hold 64 kB) would fail the whole
 * batch's write of the inventory keys. The sample is dropped, counted,
 * and the first one kept with its line for the run's reasons. */
static int labels_fit(struct gl_dcgm_scrape *s, const struct gl_str *l, size_t line)
{
	static const struct {
		int id;
		const char *name;
		enum gl_bound k;
	} b[] = {
		{L_HOST, "Hostname", GL_BOUND_NODE}, {L_UUID, "UUID", GL_BOUND_UUID},
		{L_GI_PROFILE, "GPU_I_PROFILE", GL_BOUND_GPU_MODEL}, {L_MODEL, "modelName", GL_BOUND_GPU_MODEL},
		{L_DEVICE, "device", GL_BOUND_TEXT}, {L_PCI, "pci_bus_id", GL_BOUND_TEXT},
		{L_DRIVER, "DCGM_FI_DRIVER_VERSION", GL_BOUND_TEXT}, {L_JOB, "hpc_job", GL_BOUND_JOB_ID},
		{L_POD, "pod", GL_BOUND_OBJECT}, {L_NS, "namespace", GL_BOUND_NAMESPACE},
		{L_CONT, "container", GL_BOUND_OBJECT}, {L_XPOD, "exported_pod", GL_BOUND_OBJECT},
		{L_XNS, "exported_namespace", GL_BOUND_NAMESPACE}, {L_XCONT, "exported_container", GL_BOUND_OBJECT},
	};
	char why[160];
	for (size_t i = 0; i < GL_ARRAY_LEN(b); i++)
		if (gl_bound_check(b[i].k, l[b[i].id].len, why, sizeof why)) {
			if (!s->too_long++) {
				s->too_long_line = line;
				snprintf(s->too_long_reason, sizeof s->too_long_reason, "label %s: %s", b[i].name, why);
			}
			return 0;
		}
	return 1;
}

int gl_dcgm_scrape_add(struct gl_dcgm_scrape *s, const struct gl_promtext_sample *smp)
{
	struct gl_str l[L__N];
	struct gl_dcgm_gpu *g;
	struct gl_str host;
	enum gl_dcgm_metric m;
	size_t i;
	int gi_id = -1;

	s->stats.samples++;
	if (smp->name.len <= 8 || memcmp(smp->name.p, "DCGM_FI_", 8) != 0) {
		s->stats.not_dcgm++;
		return 0;
	}
	memset(l, 0, sizeof l);
	for (i = 0; i < smp->nlabels; i++) {
		int id = label_id(smp->labels[i].name);
		/* the first occurrence wins, should a label repeat */
		if (id >= 0 && !l[id].p)
			l[id] = smp->labels[i].value;
	}
	if (!l[L_UUID].len) {
		s->stats.no_uuid++;
		return 0;
	}
	if (l[L_GI_ID].len) {
		gi_id = parse_small_int(l[L_GI_ID]);
		if (gi_id < 0) {
			s->stats.bad_ident++;
			return 0;
		}
	}
	if (!labels_fit(s, l, smp->line))
		return 0;
	host = l[L_HOST];
	if (s->opts.node)
		host = (struct gl_str){s->opts.node, strlen(s->opts.node)};
	/* the key is kept as C strings: a NUL would make two keys one */
	if (memchr(l[L_UUID].p, '\0', l[L_UUID].len) || (host.len && memchr(host.p, '\0', host.len))) {
		s->stats.bad_ident++;
		return 0;
	}
	g = gpu_get(s, host, l[L_UUID], gi_id, 1);
	g->samples++;
	s->stats.mapped++;

	fill(s, &g->gi_profile, l[L_GI_PROFILE]);
	fill(s, &g->model, l[L_MODEL]);
	fill(s, &g->device, l[L_DEVICE]);
	fill(s, &g->pci_bus_id, l[L_PCI]);
	fill(s, &g->driver_version, l[L_DRIVER]);
	if (g->gpu_index < 0)
		g->gpu_index = parse_small_int(l[L_GPU]);
	if (l[L_JOB].len)
		add_job(s, g, l[L_JOB]);
	{
		/* Through a Prometheus server the target's own pod labels overwrite
		 * pod/namespace/container and the workload's move to exported_*. */
		int x = l[L_XPOD].len || l[L_XNS].len || l[L_XCONT].len;
		struct gl_str ns = x ? l[L_XNS] : l[L_NS], pod = x ? l[L_XPOD] : l[L_POD];
		struct gl_str cont = x ? l[L_XCONT] : l[L_CONT];
		if (pod.len || ns.len || cont.len)
			add_pod(s, g, ns, pod, cont);
	}

	if (gl_dcgm_metric_lookup(smp->name, &m) != 0)
		return 0;
	if (!smp->has_value || gl_dcgm_value_is_blank(smp->value)) {
		g->blank++;
		s->stats.blank++;
		return 0;
	}
	if (gl_dcgm_reading_has(&g->r, m)) {
		if (g->r.v[m] != smp->value) {
			g->conflicts++;
			s->stats.conflicts++;
		}
		return 0;
	}
	g->r.v[m] = smp->value;
	g->r.have |= 1u << m;
	return 0;
}

static int on_sample(void *ctx, const struct gl_promtext_sample *smp)
{
	return gl_dcgm_scrape_add(ctx, smp);
}

int gl_dcgm_scrape_parse(struct gl_dcgm_scrape *s, const char *buf, size_t len,
			 const struct gl_dcgm_opts *opts, struct gl_err *err)
{
	struct gl_promtext_handler h = {on_sample, NULL, s};
	int rc;

	gl_dcgm_scrape_init(s, opts);
	rc = gl_promtext_parse(buf, len, NULL, &h, &s->parse, err);
	if (rc)
		gl_err_prefix(err, "dcgm: ");
	return rc;
}

/* ---- busy / idle -------------------------------------------------------- */

int gl_dcgm_reading_is_busy(const struct gl_idle_policy *pol, const struct gl_dcgm_reading *r, int *busy)
{
	int signal = 0, b = 0;

	if (gl_dcgm_reading_has(r, GL_DCGM_ENGINE_ACTIVE)) {
		signal = 1;
		b = r->v[GL_DCGM_ENGINE_ACTIVE] >= pol->engine_active_threshold;
	} else if (pol->use_gpu_util_fallback && gl_dcgm_reading_has(r, GL_DCGM_GPU_UTIL)) {
		signal = 1;
		b = r->v[GL_DCGM_GPU_UTIL] > 0.0;
	}
	if (pol->memory_counts_as_busy && gl_dcgm_reading_has(r, GL_DCGM_FB_USED_MIB) &&
	    r->v[GL_DCGM_FB_USED_MIB] > pol->fb_used_busy_mib)
		signal = b = 1;
	if (pol->power_busy_watts > 0.0 && gl_dcgm_reading_has(r, GL_DCGM_POWER_W) &&
	    r->v[GL_DCGM_POWER_W] >= pol->power_busy_watts)
		signal = b = 1;
	if (!signal)
		return -GL_ENOTFOUND;
	*busy = b;
	return 0;
}

/* ---- bucket ------------------------------------------------------------- */

static int64_t align_down(int64_t t, int64_t len)
{
	int64_t r = t % len;
	return r < 0 ? t - r - len : t - r;
}

void gl_dcgm_bucket_init(struct gl_dcgm_bucket *b, int64_t t_s, int64_t len_s)
{
	memset(b, 0, sizeof *b);
	b->len_s = len_s > 0 ? len_s : GL_DCGM_BUCKET_S;
	b->start_s = align_down(t_s, b->len_s);
	b->fb_used_max_mib = -1.0;
	b->power_max_w = -1.0;
	b->last_t_s = GL_TIME_NONE;
	b->energy_last_mj = -1.0;
}

void gl_dcgm_bucket_next(struct gl_dcgm_bucket *b, const struct gl_dcgm_bucket *prev, int64_t t_s)
{
	int64_t last_t = prev->last_t_s;
	double last_e = prev->energy_last_mj;
	gl_dcgm_bucket_init(b, t_s, prev->len_s);
	b->last_t_s = last_t;
	b->energy_last_mj = last_e;
}

int gl_dcgm_bucket_add(struct gl_dcgm_bucket *b, const struct gl_idle_policy *pol, int64_t t_s,
		       const struct gl_dcgm_reading *r)
{
	int busy;

	if (t_s < b->start_s || t_s - b->start_s >= b->len_s)
		return -GL_ERANGE;
	if (b->last_t_s != GL_TIME_NONE && t_s <= b->last_t_s)
		return -GL_EINVAL;
	b->last_t_s = t_s;
	b->samples++;
	if (gl_dcgm_reading_is_busy(pol, r, &busy) != 0)
		b->nodata_samples++;
	else if (busy)
		b->busy_samples++;
	if (gl_dcgm_reading_has(r, GL_DCGM_ENGINE_ACTIVE)) {
		b->engine_sum += r->v[GL_DCGM_ENGINE_ACTIVE];
		b->engine_n++;
	}
	if (gl_dcgm_reading_has(r, GL_DCGM_GPU_UTIL)) {
		b->util_sum += r->v[GL_DCGM_GPU_UTIL];
		b->util_n++;
	}
	if (gl_dcgm_reading_has(r, GL_DCGM_FB_USED_MIB) && r->v[GL_DCGM_FB_USED_MIB] > b->fb_used_max_mib)
		b->fb_used_max_mib = r->v[GL_DCGM_FB_USED_MIB];
	if (gl_dcgm_reading_has(r, GL_DCGM_POWER_W) && r->v[GL_DCGM_POWER_W] > b->power_max_w)
		b->power_max_w = r->v[GL_DCGM_POWER_W];
	if (gl_dcgm_reading_has(r, GL_DCGM_XID_ERRORS))
		b->xid_last = r->v[GL_DCGM_XID_ERRORS];
	if (gl_dcgm_reading_has(r, GL_DCGM_ENERGY_MJ) && r->v[GL_DCGM_ENERGY_MJ] >= 0.0) {
		double e = r->v[GL_DCGM_ENERGY_MJ];
		if (b->energy_last_mj >= 0.0) {
			if (e >= b->energy_last_mj) {
				b->energy_mj += e - b->energy_last_mj;
			} else {
				/* the counter restarted from zero: all of e is new */
				b->energy_mj += e;
				b->energy_resets++;
			}
		}
		b->energy_last_mj = e;
	}
	return 0;
}

int gl_dcgm_bucket_is_idle(const struct gl_dcgm_bucket *b, int *idle)
{
	if (b->samples == b->nodata_samples)
		return -GL_ENOTFOUND;
	*idle = b->busy_samples == 0;
	return 0;
}

int gl_dcgm_bucket_engine_mean(const struct gl_dcgm_bucket *b, double *mean)
{
	if (!b->engine_n)
		return -GL_ENOTFOUND;
	*mean = b->engine_sum / b->engine_n;
	return 0;
}
