/* dcgm-exporter mapping and bucket rollup (see include/gl/dcgm.h). */
#include "gl/dcgm.h"
#include "gl/bounds.h"

#include <limits.h>
#include <stdio.h>
#include <math.h>
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

static size_t label_fit(void);

void gl_dcgm_scrape_init(struct gl_dcgm_scrape *s, const struct gl_dcgm_opts *opts)
{
	memset(s, 0, sizeof *s);
	if (opts)
		s->opts = *opts;
	s->label_fit = label_fit();
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
	L_POD, L_NS, L_CONT, L_XPOD, L_XNS, L_XCONT,
	/* nvidia_gpu_exporter (nvidia_smi_gpu_info) */
	L_NAME, L_INDEX, L_DRIVER2,
	/* AMD Device Metrics Exporter */
	L_GPU_ID, L_SERIAL, L_GPU_UUID, L_PART_ID, L_PART_TYPE, L_CARD_SERIES, L_CARD_MODEL, L_JOB_ID,
	L__N
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
		if (IS("name"))
			return L_NAME;
		break;
	case 5:
		if (IS("index"))
			return L_INDEX;
		break;
	case 6:
		if (IS("device"))
			return L_DEVICE;
		if (IS("gpu_id"))
			return L_GPU_ID;
		if (IS("job_id"))
			return L_JOB_ID;
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
		if (IS("gpu_uuid"))
			return L_GPU_UUID;
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
		if (IS("card_model"))
			return L_CARD_MODEL;
		break;
	case 11:
		if (IS("card_series"))
			return L_CARD_SERIES;
		break;
	case 12:
		if (IS("exported_pod"))
			return L_XPOD;
		break;
	case 13:
		if (IS("GPU_I_PROFILE"))
			return L_GI_PROFILE;
		if (IS("serial_number"))
			return L_SERIAL;
		break;
	case 14:
		if (IS("driver_version"))
			return L_DRIVER2;
		break;
	case 16:
		if (IS("gpu_partition_id"))
			return L_PART_ID;
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
	case 26:
		if (IS("gpu_compute_partition_type"))
			return L_PART_TYPE;
		break;
	}
	return -1;
#undef IS
}

/* ---- which metrics are a GPU's, and in which unit ------------------------ */

enum family { FAM_DCGM = 0, FAM_NVSMI, FAM_AMD };

#define PHYS 1u /* AMD: a reading of the physical GPU, given on partition 0 only */

struct metric_map {
	const char *name;
	size_t len;
	int metric;   /* enum gl_dcgm_metric; -1: identity only */
	double scale; /* into DCGM's unit */
	unsigned flags;
};

#define MAP(lit, m, sc, fl) {lit, sizeof(lit) - 1, m, sc, fl}
/* nvidia_gpu_exporter (nvidia_smi_*): ratios and bytes, where DCGM has % and MiB. */
static const struct metric_map k_nvsmi[] = {
	MAP("nvidia_smi_utilization_gpu_ratio", GL_DCGM_GPU_UTIL, 100.0, 0),
	MAP("nvidia_smi_utilization_memory_ratio", GL_DCGM_MEM_COPY_UTIL, 100.0, 0),
	MAP("nvidia_smi_memory_used_bytes", GL_DCGM_FB_USED_MIB, 1.0 / 1048576.0, 0),
	MAP("nvidia_smi_memory_free_bytes", GL_DCGM_FB_FREE_MIB, 1.0 / 1048576.0, 0),
	MAP("nvidia_smi_power_draw_watts", GL_DCGM_POWER_W, 1.0, 0),
};
/* AMD Device Metrics Exporter (names without the optional "amd_" prefix).
 * Its "MB" are MiB (an MI300X reports 196592 of 192 GiB); energy is in uJ.
 * In a partitioned mode (CPX/DPX/QPX) activity, power and energy are the
 * physical GPU's, reported on partition 0 and as 0 on the others
 * (docs/configuration/metricslist.md upstream). */
static const struct metric_map k_amd[] = {
	MAP("gpu_gfx_activity", GL_DCGM_GPU_UTIL, 1.0, PHYS),
	MAP("gpu_umc_activity", GL_DCGM_MEM_COPY_UTIL, 1.0, PHYS),
	MAP("gpu_used_vram", GL_DCGM_FB_USED_MIB, 1.0, 0),
	MAP("gpu_free_vram", GL_DCGM_FB_FREE_MIB, 1.0, 0),
	MAP("gpu_power_usage", GL_DCGM_POWER_W, 1.0, PHYS),
	MAP("gpu_energy_consumed", GL_DCGM_ENERGY_MJ, 1e-3, PHYS),
};
#undef MAP

struct mapped {
	enum family fam;
	int metric;
	double scale;
	unsigned flags;
};

static int in_table(const struct metric_map *t, size_t n, struct gl_str name, struct mapped *m)
{
	for (size_t i = 0; i < n; i++)
		if (name.len == t[i].len && !memcmp(name.p, t[i].name, t[i].len)) {
			m->metric = t[i].metric;
			m->scale = t[i].scale;
			m->flags = t[i].flags;
			return 1;
		}
	return 0;
}

/* The exporter a metric name belongs to; 0 when none. Metrics of an
 * exporter that are not kept still name the GPU (metric -1). */
static int classify(struct gl_str name, struct mapped *m)
{
	enum gl_dcgm_metric dm;

	m->metric = -1;
	m->scale = 1.0;
	m->flags = 0;
	if (name.len > 8 && !memcmp(name.p, "DCGM_FI_", 8)) {
		m->fam = FAM_DCGM;
		if (gl_dcgm_metric_lookup(name, &dm) == 0)
			m->metric = (int)dm;
		return 1;
	}
	if (name.len > 11 && !memcmp(name.p, "nvidia_smi_", 11)) {
		m->fam = FAM_NVSMI;
		in_table(k_nvsmi, GL_ARRAY_LEN(k_nvsmi), name, m);
		return 1;
	}
	if (name.len > 4 && !memcmp(name.p, "amd_", 4)) {
		name.p += 4;
		name.len -= 4;
	}
	if (name.len > 4 && !memcmp(name.p, "gpu_", 4)) {
		m->fam = FAM_AMD;
		in_table(k_amd, GL_ARRAY_LEN(k_amd), name, m);
		return 1;
	}
	return 0;
}

/* ---- the GPU a sample names ------------------------------------------------ */

struct ident {
	struct gl_str host, uuid;
	int gi_id;
	struct gl_str profile;
	int drop_value; /* AMD: a physical reading on a partition other than 0 */
};

static int amd_partitioned(struct gl_str t)
{
	static const char *const modes[] = {"dpx", "tpx", "qpx", "cpx", "DPX", "TPX", "QPX", "CPX"};
	for (size_t i = 0; i < GL_ARRAY_LEN(modes); i++)
		if (gl_str_eq(t, modes[i]))
			return 1;
	return 0;
}

/* 0, or -1 when the sample names no GPU (counted by the caller). */
static int identify(struct gl_dcgm_scrape *s, const struct mapped *m, const struct gl_str *l, char *ubuf,
		    size_t ubuf_n, struct ident *id)
{
	memset(id, 0, sizeof *id);
	id->gi_id = -1;
	id->host = l[L_HOST];
	if (m->fam == FAM_DCGM) {
		id->uuid = l[L_UUID];
		id->profile = l[L_GI_PROFILE];
		if (l[L_GI_ID].len && (id->gi_id = parse_small_int(l[L_GI_ID])) < 0)
			return -2;
	} else if (m->fam == FAM_NVSMI) {
		/* the exporter strips nvidia-smi's "GPU-"; put it back so the GPU
		 * is the one dcgm-exporter and nvidia-smi name */
		id->uuid = l[L_UUID];
		if (id->uuid.len && id->uuid.len + 4 < ubuf_n && !(id->uuid.len > 4 && (!memcmp(id->uuid.p, "GPU-", 4) ||
											  !memcmp(id->uuid.p, "MIG-", 4)))) {
			memcpy(ubuf, "GPU-", 4);
			memcpy(ubuf + 4, id->uuid.p, id->uuid.len);
			id->uuid = (struct gl_str){ubuf, id->uuid.len + 4};
		}
	} else {
		/* the serial number is the physical board's, shared by its
		 * partitions; gpu_uuid when the exporter has no serial (VFs) */
		id->uuid = l[L_SERIAL].len ? l[L_SERIAL] : l[L_GPU_UUID];
		if (!l[L_GPU_ID].len)
			return -1;
		if (amd_partitioned(l[L_PART_TYPE])) {
			int part = parse_small_int(l[L_PART_ID]);
			if (part < 0)
				return -2;
			id->profile = l[L_PART_TYPE];
			id->gi_id = part;
			if (m->flags & PHYS) {
				id->drop_value = part != 0;
				if (part == 0) {
					id->gi_id = -1;
					id->profile = GL_STR_NULL;
				}
			}
		}
	}
	if (s->opts.node)
		id->host = (struct gl_str){s->opts.node, strlen(s->opts.node)};
	if (!id->uuid.len)
		return -1;
	/* the key is kept as C strings: a NUL would make two keys one */
	if (memchr(id->uuid.p, '\0', id->uuid.len) || (id->host.len && memchr(id->host.p, '\0', id->host.len)))
		return -2;
	return 0;
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

/* The exporters built on nvidia-smi and amdsmi pass their libraries'
 * "not available" through as numbers (all ones); none is a reading. */
static int in_range(enum gl_dcgm_metric m, double v)
{
	if (v < 0 || v >= 1.8e19)
		return 0;
	return (m != GL_DCGM_GPU_UTIL && m != GL_DCGM_MEM_COPY_UTIL) || v <= 100.0;
}

static const char *const k_source[] = {[FAM_DCGM] = "dcgm", [FAM_NVSMI] = "nvidia_smi", [FAM_AMD] = "amd"};

/* The labels kept, each with its bound (include/gl/bounds.h): a 60 kB
 * Hostname or UUID (a line may hold 64 kB) would fail the whole batch's
 * write of the inventory keys. */
static const struct {
	int id;
	const char *name;
	enum gl_bounds k;
} k_label_bounds[] = {
	{L_HOST, "Hostname", GL_BOUNDS_NODE}, {L_UUID, "UUID", GL_BOUNDS_UUID},
	{L_GI_PROFILE, "GPU_I_PROFILE", GL_BOUNDS_GPU_MODEL}, {L_MODEL, "modelName", GL_BOUNDS_GPU_MODEL},
	{L_DEVICE, "device", GL_BOUNDS_TEXT}, {L_PCI, "pci_bus_id", GL_BOUNDS_TEXT},
	{L_DRIVER, "DCGM_FI_DRIVER_VERSION", GL_BOUNDS_TEXT}, {L_JOB, "hpc_job", GL_BOUNDS_JOB_ID},
	{L_POD, "pod", GL_BOUNDS_OBJECT}, {L_NS, "namespace", GL_BOUNDS_NAMESPACE},
	{L_CONT, "container", GL_BOUNDS_OBJECT}, {L_XPOD, "exported_pod", GL_BOUNDS_OBJECT},
	{L_XNS, "exported_namespace", GL_BOUNDS_NAMESPACE}, {L_XCONT, "exported_container", GL_BOUNDS_OBJECT},
	{L_NAME, "name", GL_BOUNDS_GPU_MODEL}, {L_DRIVER2, "driver_version", GL_BOUNDS_TEXT},
	{L_SERIAL, "serial_number", GL_BOUNDS_UUID}, {L_GPU_UUID, "gpu_uuid", GL_BOUNDS_UUID},
	{L_PART_TYPE, "gpu_compute_partition_type", GL_BOUNDS_GPU_MODEL}, {L_CARD_SERIES, "card_series", GL_BOUNDS_GPU_MODEL},
	{L_CARD_MODEL, "card_model", GL_BOUNDS_GPU_MODEL}, {L_JOB_ID, "job_id", GL_BOUNDS_JOB_ID},
};

/* The smallest bound of a kept label: a sample whose label values are all
 * this short needs no per-label lookup (the caller's fast path). */
static size_t label_fit(void)
{
	size_t m = SIZE_MAX;
	for (size_t i = 0; i < GL_ARRAY_LEN(k_label_bounds); i++)
		if (gl_bounds_max(k_label_bounds[i].k) < m)
			m = gl_bounds_max(k_label_bounds[i].k);
	return m;
}

/* Whether every label kept is within its bound. The sample is dropped,
 * counted, and the first one kept with its line for the run's reasons. */
static int labels_fit(struct gl_dcgm_scrape *s, const struct gl_str *l, size_t line)
{
	char why[160];
	for (size_t i = 0; i < GL_ARRAY_LEN(k_label_bounds); i++)
		if (gl_bounds_check(k_label_bounds[i].k, l[k_label_bounds[i].id].len, why, sizeof why)) {
			if (!s->too_long++) {
				s->too_long_line = line;
				snprintf(s->too_long_reason, sizeof s->too_long_reason, "label %s: %s",
					 k_label_bounds[i].name, why);
			}
			return 0;
		}
	return 1;
}

/* What the sample's labels say of its GPU: identity and who uses it. */
static void describe(struct gl_dcgm_scrape *s, struct gl_dcgm_gpu *g, enum family fam, const struct gl_str *l,
		     const struct ident *id)
{
	if (!g->source)
		g->source = k_source[fam];
	fill(s, &g->gi_profile, id->profile);
	if (fam == FAM_AMD) {
		fill(s, &g->model, l[L_CARD_SERIES].len ? l[L_CARD_SERIES] : l[L_CARD_MODEL]);
		fill(s, &g->driver_version, l[L_DRIVER2]);
		if (g->gpu_index < 0)
			g->gpu_index = parse_small_int(l[L_GPU_ID]);
		if (l[L_JOB_ID].len)
			add_job(s, g, l[L_JOB_ID]);
	} else if (fam == FAM_NVSMI) {
		fill(s, &g->model, l[L_NAME]);
		fill(s, &g->driver_version, l[L_DRIVER2]);
		fill(s, &g->pci_bus_id, l[L_PCI]);
		if (g->gpu_index < 0)
			g->gpu_index = parse_small_int(l[L_INDEX]);
	} else {
		fill(s, &g->model, l[L_MODEL]);
		fill(s, &g->device, l[L_DEVICE]);
		fill(s, &g->pci_bus_id, l[L_PCI]);
		fill(s, &g->driver_version, l[L_DRIVER]);
		if (g->gpu_index < 0)
			g->gpu_index = parse_small_int(l[L_GPU]);
		if (l[L_JOB].len)
			add_job(s, g, l[L_JOB]);
	}
	{
		/* Through a Prometheus server the target's own pod labels overwrite
		 * pod/namespace/container and the workload's move to exported_*. */
		int x = l[L_XPOD].len || l[L_XNS].len || l[L_XCONT].len;
		struct gl_str ns = x ? l[L_XNS] : l[L_NS], pod = x ? l[L_XPOD] : l[L_POD];
		struct gl_str cont = x ? l[L_XCONT] : l[L_CONT];
		if (pod.len || ns.len || cont.len)
			add_pod(s, g, ns, pod, cont);
	}
}

int gl_dcgm_scrape_add(struct gl_dcgm_scrape *s, const struct gl_promtext_sample *smp)
{
	struct gl_str l[L__N];
	struct gl_dcgm_gpu *g;
	struct mapped m;
	struct ident id;
	char ubuf[256];
	double v;
	size_t i, longest = 0;
	int rc;

	s->stats.samples++;
	if (!classify(smp->name, &m)) {
		s->stats.not_dcgm++;
		return 0;
	}
	memset(l, 0, sizeof l);
	for (i = 0; i < smp->nlabels; i++) {
		int lid = label_id(smp->labels[i].name);
		/* the first occurrence wins, should a label repeat */
		if (lid >= 0 && !l[lid].p)
			l[lid] = smp->labels[i].value;
		longest |= smp->labels[i].value.len; /* at least the longest value */
	}
	if (longest > s->label_fit && !labels_fit(s, l, smp->line))
		return 0;
	rc = identify(s, &m, l, ubuf, sizeof ubuf, &id);
	if (rc < 0) {
		if (rc == -1)
			s->stats.no_uuid++;
		else
			s->stats.bad_ident++;
		return 0;
	}
	g = gpu_get(s, id.host, id.uuid, id.gi_id, 1);
	g->samples++;
	s->stats.mapped++;
	describe(s, g, m.fam, l, &id);

	if (m.metric < 0)
		return 0;
	if (id.drop_value) {
		s->stats.not_per_partition++;
		return 0;
	}
	if (!smp->has_value || gl_dcgm_value_is_blank(smp->value)) {
		g->blank++;
		s->stats.blank++;
		return 0;
	}
	v = smp->value * m.scale;
	if (m.fam != FAM_DCGM && !in_range((enum gl_dcgm_metric)m.metric, v)) {
		g->blank++;
		s->stats.blank++;
		return 0;
	}
	if (gl_dcgm_reading_has(&g->r, (enum gl_dcgm_metric)m.metric)) {
		if (g->r.v[m.metric] != v) {
			g->conflicts++;
			s->stats.conflicts++;
		}
		return 0;
	}
	g->r.v[m.metric] = v;
	g->r.have |= 1u << m.metric;
	return 0;
}

const char *gl_dcgm_scrape_why_empty(const struct gl_dcgm_scrape *s, char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < s->ngpus; i++)
		if (s->gpus[i].hostname[0])
			return NULL;
	if (s->ngpus)
		snprintf(buf, n,
			 "%zu GPUs but no Hostname/hostname label (dcgm-exporter run with --no-hostname, or an exporter "
			 "without one): give the node name with --node NAME (in the daemon, node=NAME after the target's URL "
			 "in sources.dcgm[].targets or its targets_file)",
			 s->ngpus);
	else if (s->stats.no_uuid)
		snprintf(buf, n,
			 "no GPU named: %zu samples of GPU metrics carry no GPU identity (UUID/uuid label; AMD: gpu_id with "
			 "serial_number or gpu_uuid)",
			 s->stats.no_uuid);
	else
		snprintf(buf, n,
			 "no GPU exporter samples (DCGM_FI_*, nvidia_smi_*, AMD gpu_*) among %zu samples, %zu bad lines",
			 s->parse.samples, s->parse.bad_lines);
	return buf;
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

int gl_dcgm_reading_duty(const struct gl_dcgm_idle_policy *pol, const struct gl_dcgm_reading *r, double *duty)
{
	int signal = 0;
	double d = 0.0;

	if (gl_dcgm_reading_has(r, GL_DCGM_ENGINE_ACTIVE)) {
		signal = 1;
		d = r->v[GL_DCGM_ENGINE_ACTIVE];
		/* an idle GPU reads 0.00006, not 0: below the threshold is none */
		if (d < pol->engine_active_threshold)
			d = 0.0;
	} else if (pol->use_gpu_util_fallback && gl_dcgm_reading_has(r, GL_DCGM_GPU_UTIL)) {
		signal = 1;
		d = r->v[GL_DCGM_GPU_UTIL] / 100.0;
	}
	if (pol->memory_counts_as_busy && gl_dcgm_reading_has(r, GL_DCGM_FB_USED_MIB) &&
	    r->v[GL_DCGM_FB_USED_MIB] > pol->fb_used_busy_mib) {
		signal = 1;
		d = 1.0;
	}
	if (pol->power_busy_watts > 0.0 && gl_dcgm_reading_has(r, GL_DCGM_POWER_W) &&
	    r->v[GL_DCGM_POWER_W] >= pol->power_busy_watts) {
		signal = 1;
		d = 1.0;
	}
	if (!signal)
		return -GL_ENOTFOUND;
	*duty = d < 0.0 ? 0.0 : d > 1.0 ? 1.0 : d;
	return 0;
}

int gl_dcgm_reading_is_busy(const struct gl_dcgm_idle_policy *pol, const struct gl_dcgm_reading *r, int *busy)
{
	double d;
	if (gl_dcgm_reading_duty(pol, r, &d) != 0)
		return -GL_ENOTFOUND;
	*busy = d > 0.0;
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

int gl_dcgm_bucket_add(struct gl_dcgm_bucket *b, const struct gl_dcgm_idle_policy *pol, int64_t t_s,
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
