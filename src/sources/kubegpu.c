/* The GPU intent of a Kubernetes pod under every sharing scheme (see
 * include/gl/kubegpu.h and docs/ingest.md, "Shared GPUs on Kubernetes"). */
#include "gl/kubegpu.h"
#include "gl/kube.h"
#include "gl/nodeobs.h"
#include "gl/strbuf.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MICRO INT64_C(1000000)

static const char *const k_share_names[] = {
	[GL_KUBEGPU_SHARE_NONE] = "none", [GL_KUBEGPU_SHARE_WHOLE] = "whole", [GL_KUBEGPU_SHARE_MIG] = "mig",
	[GL_KUBEGPU_SHARE_TIMESLICE] = "timeslice", [GL_KUBEGPU_SHARE_HAMI] = "hami", [GL_KUBEGPU_SHARE_VOLCANO] = "volcano",
	[GL_KUBEGPU_SHARE_ALIYUN] = "aliyun", [GL_KUBEGPU_SHARE_RUNAI] = "runai",
	[GL_KUBEGPU_SHARE_RUNAI_RESERVATION] = "runai_reservation", [GL_KUBEGPU_SHARE_TRACE] = "trace",
	[GL_KUBEGPU_SHARE_MIXED] = "mixed",
};

const char *gl_kubegpu_share_name(enum gl_kubegpu_share s)
{
	return (unsigned)s < GL_ARRAY_LEN(k_share_names) ? k_share_names[s] : "?";
}

/* ---- values ------------------------------------------------------------- */

int gl_kubegpu_quantity(const cJSON *v, int64_t *milli)
{
	if (cJSON_IsString(v))
		return gl_kube_parse_quantity_milli(v->valuestring, strlen(v->valuestring), milli);
	if (cJSON_IsNumber(v)) {
		/* hand-written manifests: 1, 0.5 */
		double m = ceil(v->valuedouble * 1000.0);
		if (!(m >= 0))
			return -GL_EINVAL;
		if (m >= 9.2e18)
			return -GL_ERANGE;
		*milli = (int64_t)m;
		return 0;
	}
	return -GL_EINVAL;
}

int gl_kubegpu_decimal_micro(const char *s, int64_t *micro)
{
	int64_t v = 0;
	int frac = -1, digits = 0;

	if (!s || !*s)
		return -GL_EINVAL;
	for (; *s; s++) {
		if (*s == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -GL_EINVAL;
		digits++;
		if (frac >= 0 && frac == 6)
			continue; /* beyond a millionth: rounded down */
		if (v > INT64_C(1000000000000) * 10)
			return -GL_ERANGE;
		v = v * 10 + (*s - '0');
		if (frac >= 0)
			frac++;
	}
	if (!digits)
		return -GL_EINVAL;
	for (int k = frac < 0 ? 0 : frac; k < 6; k++)
		v *= 10;
	if (v > INT64_C(1000000000000) * MICRO / 1000000)
		return -GL_ERANGE;
	*micro = v;
	return 0;
}

/* ---- resources ---------------------------------------------------------- */

enum key {
	K_GPU, K_VGPU, K_GPU_SHARED, K_GPUMEM, K_GPUMEM_PCT, K_GPUCORES, K_AMD_GPU, K_VOL_NUM, K_VOL_MEM,
	K_VOL_MEM_PCT, K_VOL_CORES, K_VOL_GPUMEM, K_VOL_GPUNUM, K_ALI_MEM, K_ALI_CORE, K__N,
	K_MIG = 100, K_IGNORED, K_UNKNOWN, K_OTHER,
};

static const struct {
	const char *name;
	enum key k;
} k_keys[] = {
	{"nvidia.com/gpu", K_GPU}, {"nvidia.com/vgpu", K_VGPU}, {"nvidia.com/gpu.shared", K_GPU_SHARED},
	{"nvidia.com/gpumem", K_GPUMEM}, {"nvidia.com/gpumem-percentage", K_GPUMEM_PCT},
	{"nvidia.com/gpucores", K_GPUCORES}, {"amd.com/gpu", K_AMD_GPU}, {"volcano.sh/vgpu-number", K_VOL_NUM},
	{"volcano.sh/vgpu-memory", K_VOL_MEM}, {"volcano.sh/vgpu-memory-percentage", K_VOL_MEM_PCT},
	{"volcano.sh/vgpu-cores", K_VOL_CORES}, {"volcano.sh/gpu-memory", K_VOL_GPUMEM},
	{"volcano.sh/gpu-number", K_VOL_GPUNUM}, {"aliyun.com/gpu-mem", K_ALI_MEM},
	{"aliyun.com/gpu-core.percentage", K_ALI_CORE},
	/* not an amount of GPU: HAMi's task priority */
	{"nvidia.com/priority", K_IGNORED},
};

static int contains_gpu(const char *s, size_t n)
{
	for (size_t i = 0; i + 3 <= n; i++)
		if (tolower((unsigned char)s[i]) == 'g' && tolower((unsigned char)s[i + 1]) == 'p' &&
		    tolower((unsigned char)s[i + 2]) == 'u')
			return 1;
	return 0;
}

static enum key key_of(const char *name)
{
	for (size_t i = 0; i < GL_ARRAY_LEN(k_keys); i++)
		if (!strcmp(name, k_keys[i].name))
			return k_keys[i].k;
	if (!strncmp(name, "nvidia.com/mig-", 15) && name[15])
		return K_MIG;
	/* anything else that says GPU in its domain or name is a GPU we do
	 * not know how to bill: reported, never dropped silently */
	return contains_gpu(name, strlen(name)) ? K_UNKNOWN : K_OTHER;
}

#define MAX_MIG 4

/* One container's GPU resources, milli-units; -1 absent. */
struct ctr {
	int64_t q[K__N];
	char mig[MAX_MIG][GL_KUBEGPU_NAME_MAX + 8]; /* "1g.10gb" or "1g.10gb.shared" */
	int64_t mig_n[MAX_MIG];
	int nmig;
};

/* What a container (or the pod) adds up to: micro-GPUs billed and held,
 * replicas, Alibaba's memory (milli-GiB) and core (milli-percent) requests. */
enum { A_MICRO, A_PHYS, A_REPL, A_ALI_MEM, A_ALI_CORE, A__N };
struct amounts {
	int64_t v[A__N];
};

struct reader {
	const char *path;
	const char *node_name;    /* spec.nodeName, "(not scheduled)" */
	const struct gl_kubegpu_node_gpu *node;
	struct gl_kubegpu *out;
	void (*problem)(void *ud, const char *msg);
	void *ud;
	struct gl_strbuf note;
	unsigned schemes;         /* 1u << enum gl_kubegpu_share */
	int phys_unknown;
	char profile[GL_KUBEGPU_NAME_MAX];
	int nprofiles;
	int hami_present;
};

static void say(struct reader *r, const char *fmt, ...) GL_PRINTF(2, 3);
static void say(struct reader *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (r->problem)
		r->problem(r->ud, msg);
}

/* A reason the pod's GPUs are not (all) billed: kept in the record and
 * reported as a problem. */
static void note(struct reader *r, const char *fmt, ...) GL_PRINTF(2, 3);
static void note(struct reader *r, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (r->note.len)
		gl_strbuf_puts(&r->note, "; ");
	gl_strbuf_puts(&r->note, msg);
	say(r, "%s.spec: GPU not billed: %s", r->path, msg);
}

static void read_container(struct reader *r, const cJSON *c, const char *cpath, struct ctr *out)
{
	const cJSON *res = cJSON_GetObjectItemCaseSensitive(c, "resources");
	const cJSON *lists[2] = {cJSON_GetObjectItemCaseSensitive(res, "limits"),
				 cJSON_GetObjectItemCaseSensitive(res, "requests")};
	static const char *const lname[2] = {"limits", "requests"};
	const cJSON *q;

	for (int k = 0; k < K__N; k++)
		out->q[k] = -1;
	out->nmig = 0;
	for (int l = 0; l < 2; l++) {
		if (!cJSON_IsObject(lists[l]))
			continue;
		cJSON_ArrayForEach(q, lists[l]) {
			enum key k;
			int64_t m;
			if (!q->string || (k = key_of(q->string)) == K_OTHER || k == K_IGNORED)
				continue;
			/* limits win: requests only count for a key limits lack */
			if (l == 1 && cJSON_GetObjectItemCaseSensitive(lists[0], q->string))
				continue;
			if (k == K_UNKNOWN) {
				note(r, "unknown GPU resource '%.64s' in %s", q->string, cpath);
				r->out->intent = 1;
				continue;
			}
			if (gl_kubegpu_quantity(q, &m) < 0) {
				say(r, "%s.resources.%s.%.64s: bad quantity", cpath, lname[l], q->string);
				continue;
			}
			if (k == K_MIG) {
				if (out->nmig == MAX_MIG || strlen(q->string + 15) >= sizeof out->mig[0]) {
					say(r, "%s.resources.%s.%.64s: too many or too long MIG resources, ignored", cpath,
					    lname[l], q->string);
					continue;
				}
				strcpy(out->mig[out->nmig], q->string + 15);
				out->mig_n[out->nmig++] = m;
			} else {
				out->q[k] = m;
			}
		}
	}
}

static int64_t sat_mul_div(struct reader *r, int64_t a, int64_t b, int64_t d)
{
	/* a * b / d, rounded down, without overflow in the product */
	__int128 p = (__int128)a * b / d;
	if (p > INT64_MAX) {
		r->out->overflow = 1;
		return INT64_MAX;
	}
	return (int64_t)p;
}

static int64_t sat_add(struct reader *r, int64_t a, int64_t b)
{
	if (b > INT64_MAX - a) {
		r->out->overflow = 1;
		return INT64_MAX;
	}
	return a + b;
}

static void add(struct reader *r, struct amounts *a, int64_t micro, int64_t phys)
{
	a->v[A_MICRO] = sat_add(r, a->v[A_MICRO], micro);
	a->v[A_PHYS] = sat_add(r, a->v[A_PHYS], phys);
}

/* Micro-GPUs of `count` GPUs (milli) at the share a vGPU request gives:
 * compute (cores, milli-percent of each GPU) when given, else memory
 * (milli-percent, else milli-MiB of the node's GPU memory), each at most the
 * whole GPU; no amount at all is the whole GPU. -1 when it cannot be known. */
static int64_t vgpu_micro(struct reader *r, int64_t count, int64_t cores, int64_t pct, int64_t mem, const char *mem_key)
{
	if (cores > 0)
		return sat_mul_div(r, count, cores > 100000 ? 100000 : cores, 100);
	if (pct > 0)
		return sat_mul_div(r, count, pct > 100000 ? 100000 : pct, 100);
	if (mem > 0) {
		if (r->node && r->node->memory_mib > 0) {
			int64_t all = r->node->memory_mib * 1000;
			return sat_mul_div(r, count, mem > all ? all : mem, r->node->memory_mib);
		}
		note(r, "%s %lld MiB without a core share: the share needs the GPU's memory (node label "
			"nvidia.com/gpu.memory of %s)",
		     mem_key, (long long)(mem / 1000), r->node_name);
		return -1;
	}
	return sat_mul_div(r, count, 1000, 1);
}

/* HAMi (nvidia.com/) and Volcano (volcano.sh/vgpu-) vGPU: count x share. */
static void vgpu(struct reader *r, struct amounts *a, int64_t count, int64_t cores, int64_t pct, int64_t mem,
		 const char *mem_key, enum gl_kubegpu_share scheme)
{
	int64_t m = vgpu_micro(r, count, cores, pct, mem, mem_key);
	r->schemes |= 1u << scheme;
	r->out->intent = 1;
	if (m > 0)
		add(r, a, m, m);
}

static int64_t replicas_of_node(const struct reader *r)
{
	return r->node && r->node->replicas > 1 ? r->node->replicas : 0;
}

static void mig(struct reader *r, struct amounts *a, const char *name, int64_t n_milli)
{
	size_t l = strlen(name);
	int shared = l > 7 && !strcmp(name + l - 7, ".shared");
	char prof[GL_KUBEGPU_NAME_MAX];
	int slices;
	int64_t reps = replicas_of_node(r);

	if (n_milli <= 0)
		return;
	snprintf(prof, sizeof prof, "%.*s", (int)(shared ? l - 7 : l), name);
	slices = gl_nodeobs_mig_profile_slices(prof, strlen(prof));
	r->out->intent = 1;
	r->schemes |= 1u << (shared ? GL_KUBEGPU_SHARE_TIMESLICE : GL_KUBEGPU_SHARE_MIG);
	if (!r->nprofiles || strcmp(r->profile, prof)) {
		r->nprofiles++;
		snprintf(r->profile, sizeof r->profile, "%s", prof);
	}
	if (!slices)
		r->phys_unknown = 1;
	if (shared && !reps) {
		note(r, "nvidia.com/mig-%s: replicas per instance of node %s unknown (no node data with "
			"nvidia.com/gpu.replicas)",
		     name, r->node_name);
		return;
	}
	/* billed per instance (rates are per MIG profile); held: slices / 7 */
	add(r, a, sat_mul_div(r, n_milli, 1000, shared ? reps : 1),
	    slices ? sat_mul_div(r, n_milli, 1000 * (int64_t)slices, 7 * (shared ? reps : 1)) : 0);
}

static void derive(struct reader *r, const struct ctr *c, struct amounts *a)
{
	const int64_t *q = c->q;
	int64_t count = sat_add(r, q[K_GPU] > 0 ? q[K_GPU] : 0, q[K_VGPU] > 0 ? q[K_VGPU] : 0);
	int hami = q[K_GPUMEM] >= 0 || q[K_GPUMEM_PCT] >= 0 || q[K_GPUCORES] >= 0 || q[K_VGPU] >= 0;
	int64_t reps = replicas_of_node(r);

	memset(a, 0, sizeof *a);
	if (hami) {
		r->hami_present = 1;
		/* HAMi's webhook gives a container that names memory or cores
		 * but no count one GPU (its defaultGPUNum) */
		vgpu(r, a, count > 0 ? count : 1000, q[K_GPUCORES], q[K_GPUMEM_PCT], q[K_GPUMEM], "nvidia.com/gpumem",
		     GL_KUBEGPU_SHARE_HAMI);
	} else if (count > 0 && reps) {
		/* time-slicing/MPS without renaming: nvidia.com/gpu is a replica */
		r->schemes |= 1u << GL_KUBEGPU_SHARE_TIMESLICE;
		a->v[A_REPL] += count / 1000;
		add(r, a, sat_mul_div(r, count, 1000, reps), sat_mul_div(r, count, 1000, reps));
	} else if (count > 0) {
		r->schemes |= 1u << GL_KUBEGPU_SHARE_WHOLE;
		add(r, a, sat_mul_div(r, count, 1000, 1), sat_mul_div(r, count, 1000, 1));
	}
	if (q[K_GPU_SHARED] > 0) {
		r->schemes |= 1u << GL_KUBEGPU_SHARE_TIMESLICE;
		a->v[A_REPL] += q[K_GPU_SHARED] / 1000;
		if (reps)
			add(r, a, sat_mul_div(r, q[K_GPU_SHARED], 1000, reps), sat_mul_div(r, q[K_GPU_SHARED], 1000, reps));
		else
			note(r, "nvidia.com/gpu.shared: replicas per GPU of node %s unknown (no node data with "
				"nvidia.com/gpu.replicas)",
			     r->node_name);
	}
	if (q[K_AMD_GPU] > 0) {
		r->schemes |= 1u << GL_KUBEGPU_SHARE_WHOLE;
		add(r, a, sat_mul_div(r, q[K_AMD_GPU], 1000, 1), sat_mul_div(r, q[K_AMD_GPU], 1000, 1));
	}
	if (q[K_VOL_NUM] >= 0 || q[K_VOL_MEM] >= 0 || q[K_VOL_MEM_PCT] >= 0 || q[K_VOL_CORES] >= 0)
		vgpu(r, a, q[K_VOL_NUM] > 0 ? q[K_VOL_NUM] : 1000, q[K_VOL_CORES], q[K_VOL_MEM_PCT], q[K_VOL_MEM],
		     "volcano.sh/vgpu-memory", GL_KUBEGPU_SHARE_VOLCANO);
	if (q[K_VOL_GPUMEM] > 0)
		vgpu(r, a, 1000, -1, -1, q[K_VOL_GPUMEM], "volcano.sh/gpu-memory", GL_KUBEGPU_SHARE_VOLCANO);
	if (q[K_VOL_GPUNUM] > 0) {
		r->schemes |= 1u << GL_KUBEGPU_SHARE_WHOLE;
		add(r, a, sat_mul_div(r, q[K_VOL_GPUNUM], 1000, 1), sat_mul_div(r, q[K_VOL_GPUNUM], 1000, 1));
	}
	a->v[A_ALI_MEM] = sat_add(r, a->v[A_ALI_MEM], q[K_ALI_MEM] > 0 ? q[K_ALI_MEM] : 0);
	a->v[A_ALI_CORE] = sat_add(r, a->v[A_ALI_CORE], q[K_ALI_CORE] > 0 ? q[K_ALI_CORE] : 0);
	for (int i = 0; i < c->nmig; i++)
		mig(r, a, c->mig[i], c->mig_n[i]);
	if (count > 0 || q[K_GPU_SHARED] > 0 || q[K_AMD_GPU] > 0 || q[K_VOL_GPUNUM] > 0 || a->v[A_ALI_MEM] || a->v[A_ALI_CORE])
		r->out->intent = 1;
}

/* Init containers first (sidecar sums depend on their order), then the
 * app containers: per amount, max(sum(app) + sum(sidecars), max over
 * regular init i of init_i + sidecars started before it), as the scheduler
 * computes a pod's request. */
static void containers(struct reader *r, const cJSON *spec, struct amounts *total)
{
	static const char *const lists[2] = {"initContainers", "containers"};
	struct amounts app = {{0}}, side = {{0}}, init_max = {{0}};

	for (int l = 0; l < 2; l++) {
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(spec, lists[l]), *c;
		size_t j = 0;
		if (!cJSON_IsArray(arr))
			continue;
		cJSON_ArrayForEach(c, arr) {
			char cpath[128];
			struct ctr ct;
			struct amounts a;
			const cJSON *rp = cJSON_GetObjectItemCaseSensitive(c, "restartPolicy");
			int sidecar = l == 0 && cJSON_IsString(rp) && !strcmp(rp->valuestring, "Always");
			snprintf(cpath, sizeof cpath, "%s.spec.%s[%zu]", r->path, lists[l], j++);
			read_container(r, c, cpath, &ct);
			derive(r, &ct, &a);
			for (int k = 0; k < A__N; k++) {
				int64_t use = sat_add(r, side.v[k], a.v[k]);
				if (l == 1) {
					app.v[k] = sat_add(r, app.v[k], a.v[k]);
					continue;
				}
				if (sidecar)
					side.v[k] = use;
				if (use > init_max.v[k])
					init_max.v[k] = use;
			}
		}
	}
	for (int k = 0; k < A__N; k++) {
		int64_t run = sat_add(r, app.v[k], side.v[k]);
		total->v[k] = run > init_max.v[k] ? run : init_max.v[k];
	}
}

/* ---- annotations ---------------------------------------------------------- */

static const char *ann_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void add_uuid(struct gl_kubegpu *g, const char *s, size_t n)
{
	if (!n || g->nuuids == GL_KUBEGPU_MAX_UUIDS)
		return;
	for (size_t i = 0; i < g->nuuids; i++)
		if (strlen(g->uuids[i]) == n && !memcmp(g->uuids[i], s, n))
			return;
	g->uuids = gl_xrealloc(g->uuids, (g->nuuids + 1) * sizeof *g->uuids);
	g->uuids[g->nuuids++] = gl_xstrndup(s, n);
}

/* HAMi / Volcano binding: "UUID,Type,mem,cores:UUID,...:;" (devices split by
 * ':', containers by ';'); the UUIDs in order. 0, or -1 when malformed. */
static int vgpu_binding(struct gl_kubegpu *g, const char *s)
{
	while (*s) {
		size_t n = strcspn(s, ":;"), f = strcspn(s, ",");
		if (n) {
			if (f >= n)
				return -1;
			add_uuid(g, s, f);
		}
		s += n;
		if (*s)
			s++;
	}
	return 0;
}

static int64_t ann_decimal(struct reader *r, const cJSON *ann, const char *key)
{
	const char *v = ann_str(ann, key);
	int64_t m;
	if (!v)
		return -1;
	if (gl_kubegpu_decimal_micro(v, &m) < 0) {
		say(r, "%s.metadata.annotations.%s: '%.40s' is not a GPU amount", r->path, key, v);
		return -1;
	}
	return m;
}

/* run:ai MIG by annotation: nvidia.com/mig-<profile>: "1" on the pod. */
static int64_t runai_mig(struct reader *r, const cJSON *ann, struct amounts *a)
{
	const cJSON *e;
	int64_t inst = 0;

	cJSON_ArrayForEach(e, ann) {
		int64_t m;
		if (!e->string || strncmp(e->string, "nvidia.com/mig-", 15) || !e->string[15])
			continue;
		if (gl_kubegpu_quantity(e, &m) < 0 || m <= 0) {
			say(r, "%s.metadata.annotations.%.64s: bad count", r->path, e->string);
			continue;
		}
		mig(r, a, e->string + 15, m);
		inst += m;
	}
	return inst;
}

static void runai_mig_device(struct reader *r, const cJSON *ann)
{
	const char *dev = ann_str(ann, "runai-mig-device");
	cJSON *j;
	const cJSON *u, *t;

	if (!dev)
		return;
	j = cJSON_ParseWithLength(dev, strlen(dev));
	if (!cJSON_IsObject(j)) {
		say(r, "%s.metadata.annotations.runai-mig-device: not a JSON object", r->path);
		cJSON_Delete(j);
		return;
	}
	u = cJSON_GetObjectItemCaseSensitive(j, "deviceUUID");
	if (!cJSON_IsString(u))
		u = cJSON_GetObjectItemCaseSensitive(j, "instanceid");
	if (cJSON_IsString(u))
		add_uuid(r->out, u->valuestring, strlen(u->valuestring));
	t = cJSON_GetObjectItemCaseSensitive(j, "gputype");
	if (cJSON_IsString(t))
		snprintf(r->out->gpu_model, sizeof r->out->gpu_model, "%s", t->valuestring);
	cJSON_Delete(j);
}

/* run:ai and KAI: the pods get no GPU resource; annotations say what they
 * were given (runai-allocated-*) or asked for (gpu-fraction, gpu-memory). */
static void runai(struct reader *r, const cJSON *ann, struct amounts *a)
{
	int64_t alloc = ann_decimal(r, ann, "runai-allocated-gpus");
	int64_t alloc_mig = ann_decimal(r, ann, "runai-allocated-mig-gpus");
	int64_t frac = ann_decimal(r, ann, "gpu-fraction");
	int64_t ndev = ann_decimal(r, ann, "gpu-fraction-num-devices");
	const char *mem = ann_str(ann, "gpu-memory");
	struct amounts m = {{0}};
	int64_t inst = runai_mig(r, ann, &m);

	if (inst > 0 || alloc_mig > 0) {
		runai_mig_device(r, ann);
		r->out->intent = 1;
		if (!inst) {
			note(r, "runai-allocated-mig-gpus without a nvidia.com/mig-<profile> annotation: instances unknown");
			return;
		}
		if (alloc_mig > 0) {
			/* the scheduler's own share of the physical GPU (1/7 for a 1g) */
			m.v[A_PHYS] = alloc_mig;
			r->phys_unknown = 0;
		}
		add(r, a, m.v[A_MICRO], m.v[A_PHYS]);
		return;
	}
	if (alloc > 0 || frac > 0) {
		/* given, else asked for: gpu-fraction per device x devices */
		int64_t f = alloc > 0 ? alloc : sat_mul_div(r, frac, ndev > 0 ? ndev : MICRO, MICRO);
		r->schemes |= 1u << GL_KUBEGPU_SHARE_RUNAI;
		r->out->intent = 1;
		add(r, a, f, f);
		return;
	}
	if (mem) {
		int64_t milli;
		r->schemes |= 1u << GL_KUBEGPU_SHARE_RUNAI;
		r->out->intent = 1;
		if (gl_kube_parse_quantity_milli(mem, strlen(mem), &milli) < 0) {
			say(r, "%s.metadata.annotations.gpu-memory: '%.40s' is not an amount", r->path, mem);
			return;
		}
		/* run:ai's gpu-memory is MiB unless it carries a unit ("4G") */
		if (strpbrk(mem, "KMGTPEkmgtpe"))
			milli /= 1048576;
		{
			int64_t share = vgpu_micro(r, 1000, -1, -1, milli, "gpu-memory");
			if (share > 0)
				add(r, a, share, share);
		}
	}
}

/* Alibaba gpushare / cGPU: aliyun.com/gpu-mem (GiB, across the pod's cards)
 * and gpu-core.percentage. Once bound, ALIYUN_COM_GPU_MEM_DEV is one card's
 * memory in the same unit. */
static void aliyun(struct reader *r, const cJSON *ann, struct amounts *a)
{
	const char *dev = ann_str(ann, "ALIYUN_COM_GPU_MEM_DEV");
	int64_t d;

	r->schemes |= 1u << GL_KUBEGPU_SHARE_ALIYUN;
	r->out->intent = 1;
	if (a->v[A_ALI_CORE] > 0) {
		/* percent of one card's compute */
		add(r, a, sat_mul_div(r, a->v[A_ALI_CORE], 10, 1), sat_mul_div(r, a->v[A_ALI_CORE], 10, 1));
	} else if (dev && gl_kubegpu_decimal_micro(dev, &d) == 0 && d > 0) {
		/* (mem milli / 1000) / (d / 1e6) GPUs */
		int64_t m = sat_mul_div(r, a->v[A_ALI_MEM], MICRO * 1000, d);
		add(r, a, m, m);
	} else if (r->node && r->node->memory_mib > 0) {
		int64_t m = sat_mul_div(r, a->v[A_ALI_MEM], 1024 * 1000, r->node->memory_mib);
		add(r, a, m, m);
	} else {
		note(r, "aliyun.com/gpu-mem %lld GiB without ALIYUN_COM_GPU_MEM_DEV or the node's GPU memory: share unknown",
		     (long long)(a->v[A_ALI_MEM] / 1000));
	}
}

/* The Alibaba traces: gpu-milli (a per-GPU share in thousandths) as an
 * annotation or label, with alibabacloud.com/gpu-count as the count when the
 * pod has no GPU resource. Returns the share in milli, -1 none. */
static int64_t trace_share(struct reader *r, const cJSON *meta)
{
	static const char *const keys[] = {"alibabacloud.com/gpu-milli", "gpu-milli", "gpu_milli"};
	static const char *const where[] = {"annotations", "labels"};

	for (int w = 0; w < 2; w++) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(meta, where[w]);
		for (size_t k = 0; k < GL_ARRAY_LEN(keys); k++) {
			const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, keys[k]) : NULL;
			int64_t m;
			if (!v)
				continue;
			/* the value is already milli ("460"): a quantity without the milli scaling */
			if (gl_kubegpu_quantity(v, &m) < 0 || m % 1000 != 0 || m > 1000000) {
				say(r, "%s.metadata.%s.%s: bad GPU share", r->path, where[w], keys[k]);
				continue;
			}
			return m / 1000;
		}
	}
	return -1;
}

static void trace(struct reader *r, const cJSON *meta, struct amounts *a, int64_t share)
{
	const cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
	int64_t whole = a->v[A_MICRO] / 1000; /* milli-GPUs of the GPU resources */

	if (whole == 0) {
		const cJSON *cnt = cJSON_IsObject(ann) ? cJSON_GetObjectItemCaseSensitive(ann, "alibabacloud.com/gpu-count") : NULL;
		int64_t m = 1000;
		if (cnt && (gl_kubegpu_quantity(cnt, &m) < 0 || m % 1000 != 0)) {
			say(r, "%s.metadata.annotations.alibabacloud.com/gpu-count: bad count", r->path);
			m = 1000;
		}
		whole = m;
	}
	/* milli-GPUs x milli-share = micro-GPUs, exactly */
	a->v[A_MICRO] = a->v[A_PHYS] = sat_mul_div(r, whole, share, 1);
	r->schemes = 1u << GL_KUBEGPU_SHARE_TRACE;
	r->out->intent = 1;
}

/* run:ai's pod that holds a shared GPU for the fraction pods of its group:
 * its GPU is theirs, never the reservation namespace's. */
static int reservation(struct reader *r, const cJSON *meta, const cJSON *ann, struct amounts *a)
{
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	const char *ns = ann_str(meta, "namespace"), *app = ann_str(labels, "app");
	const char *gpu = ann_str(ann, "run.ai/reserve_for_gpu_index");

	if (!gpu && !(app && !strcmp(app, "runai-reservation")) &&
	    !(ns && (!strcmp(ns, "runai-reservation") || !strcmp(ns, "kai-resource-reservation"))))
		return 0;
	r->out->share = GL_KUBEGPU_SHARE_RUNAI_RESERVATION;
	r->out->intent = 1;
	r->out->gpu_micro = 0;
	r->out->phys_micro = a->v[A_PHYS];
	/* since run:ai 2.17 the annotation holds the GPU's UUID, before its index */
	if (gpu && !strncmp(gpu, "GPU-", 4))
		add_uuid(r->out, gpu, strlen(gpu));
	return 1;
}

static void finish(struct reader *r, const struct amounts *a)
{
	struct gl_kubegpu *g = r->out;
	unsigned s = r->schemes;

	g->gpu_micro = a->v[A_MICRO];
	g->phys_micro = r->phys_unknown ? -1 : a->v[A_PHYS];
	g->replicas = a->v[A_REPL];
	if (s && !(s & (s - 1))) {
		for (int k = 0; k < 32; k++)
			if (s == 1u << k)
				g->share = (enum gl_kubegpu_share)k;
	} else if (s) {
		g->share = GL_KUBEGPU_SHARE_MIXED;
	}
	if (r->nprofiles == 1 && !(s & ~((1u << GL_KUBEGPU_SHARE_MIG) | (1u << GL_KUBEGPU_SHARE_TIMESLICE))))
		snprintf(g->gpu_type, sizeof g->gpu_type, "%s", r->profile);
}

void gl_kubegpu_read(const cJSON *item, const char *path, const struct gl_kubegpu_node_gpu *node, struct gl_kubegpu *out,
		     void (*problem)(void *ud, const char *msg), void *ud)
{
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(item, "metadata");
	const cJSON *ann = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(meta, "labels");
	const char *binding = ann_str(ann, "hami.io/vgpu-devices-allocated"), *grp = ann_str(labels, "runai-gpu-group");
	struct reader r;
	struct amounts a;
	int64_t share;

	memset(out, 0, sizeof *out);
	memset(&r, 0, sizeof r);
	r.path = path;
	r.node = node;
	r.node_name = ann_str(cJSON_GetObjectItemCaseSensitive(item, "spec"), "nodeName");
	if (!r.node_name)
		r.node_name = "(not scheduled)";
	r.out = out;
	r.problem = problem;
	r.ud = ud;
	containers(&r, cJSON_GetObjectItemCaseSensitive(item, "spec"), &a);
	if (grp)
		out->group = gl_xstrdup(grp);
	if (!reservation(&r, meta, ann, &a)) {
		if (a.v[A_ALI_MEM] > 0 || a.v[A_ALI_CORE] > 0)
			aliyun(&r, ann, &a);
		if (a.v[A_MICRO] == 0 && !r.nprofiles)
			runai(&r, ann, &a);
		if ((share = trace_share(&r, meta)) >= 0)
			trace(&r, meta, &a, share);
		finish(&r, &a);
	}
	if (!binding)
		binding = ann_str(ann, "volcano.sh/vgpu-ids-new");
	if (binding && vgpu_binding(out, binding) < 0)
		say(&r, "%s.metadata.annotations: vGPU binding '%.60s' is not UUID,type,mem,cores", path, binding);
	{
		const char *model = ann_str(ann, "alibabacloud.com/gpu-card-model");
		if (model && !out->gpu_model[0])
			snprintf(out->gpu_model, sizeof out->gpu_model, "%s", model);
	}
	/* a binding that names GPUs the pod requests none of */
	if (!out->intent && (binding || ann_str(ann, "ALIYUN_COM_GPU_MEM_IDX"))) {
		out->intent = 1;
		note(&r, "the annotation %s binds GPUs but the pod requests no GPU resource",
		     binding ? (ann_str(ann, "hami.io/vgpu-devices-allocated") ? "hami.io/vgpu-devices-allocated"
									      : "volcano.sh/vgpu-ids-new")
			     : "ALIYUN_COM_GPU_MEM_IDX");
	}
	if (r.note.len)
		out->note = gl_strbuf_steal(&r.note);
	gl_strbuf_fini(&r.note);
	gl_kubegpu_uuids_refresh(out);
}

void gl_kubegpu_uuids_refresh(struct gl_kubegpu *g)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	free(g->uuids_json);
	g->uuids_json = NULL;
	if (!g->nuuids)
		return;
	gl_strbuf_putc(&b, '[');
	for (size_t i = 0; i < g->nuuids; i++) {
		if (i)
			gl_strbuf_putc(&b, ',');
		gl_strbuf_putc(&b, '"');
		gl_strbuf_put_json_str(&b, g->uuids[i], strlen(g->uuids[i]));
		gl_strbuf_putc(&b, '"');
	}
	gl_strbuf_putc(&b, ']');
	g->uuids_json = gl_strbuf_steal(&b);
}

void gl_kubegpu_fini(struct gl_kubegpu *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nuuids; i++)
		free(g->uuids[i]);
	free(g->uuids);
	free(g->uuids_json);
	free(g->group);
	free(g->note);
	memset(g, 0, sizeof *g);
}
