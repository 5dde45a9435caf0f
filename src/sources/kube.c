/* Kubernetes PodList -> GPU pods (see include/gl/kube.h, FORMATS.md). */
#include "gl/kube.h"
#include "gl/bounds.h"
#include "gl/jsonarena.h"
#include "gl/jsonscan.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/utf8.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pure helpers ---------------------------------------------------- */

/* Strict RFC 3339 as the Kubernetes API writes it: seconds and a zone
 * (Z or +hh:mm) are required; the arithmetic is gl_timeutil_parse's. */
int gl_kube_parse_rfc3339(const char *s, size_t n, int64_t *out)
{
	int zone;

	if (!s || n < 20 || s[16] != ':')
		return -GL_EINVAL;
	zone = s[n - 1] == 'Z' || s[n - 1] == 'z' ||
	       (n >= 25 && (s[n - 6] == '+' || s[n - 6] == '-') && s[n - 3] == ':');
	if (!zone || gl_timeutil_parse(s, n, out))
		return -GL_EINVAL;
	return 0;
}

static int mul_ok(uint64_t *v, uint64_t m)
{
	if (*v && m > UINT64_MAX / *v)
		return 0;
	*v *= m;
	return 1;
}

int gl_kube_parse_quantity_milli(const char *s, size_t n, int64_t *milli)
{
	uint64_t mant = 0, v;
	int exp10 = 3, exp2 = 0, sig = 0, ndig = 0, sticky = 0;
	size_t i = 0;

	if (!s)
		return -GL_EINVAL;
	if (i < n && s[i] == '+')
		i++;
	else if (i < n && s[i] == '-')
		return -GL_EINVAL;
	/* Mantissa as an exact integer with a decimal exponent, so "0.1" is
	 * exactly 100m, never 99.99..m through a double. */
	for (int frac = 0;; i++) {
		if (i < n && s[i] == '.' && !frac) {
			frac = 1;
			continue;
		}
		if (i >= n || s[i] < '0' || s[i] > '9')
			break;
		ndig++;
		if (mant == 0 && s[i] == '0') {
			if (frac)
				exp10--;
			continue;
		}
		if (sig >= 19) {
			/* More significant digits than 64 bits hold: in the
			 * integer part they only scale (and overflow later);
			 * in the fraction they only matter as "round up". */
			if (!frac)
				exp10++;
			else if (s[i] != '0')
				sticky = 1;
			continue;
		}
		mant = mant * 10 + (uint64_t)(s[i] - '0');
		sig++;
		if (frac)
			exp10--;
	}
	if (ndig == 0)
		return -GL_EINVAL;
	if (i < n) {
		const char *suf = s + i;
		size_t sl = n - i;
		static const struct { const char *s; int e10, e2; } sufs[] = {
			{"n", -9, 0}, {"u", -6, 0}, {"m", -3, 0}, {"k", 3, 0}, {"M", 6, 0},
			{"G", 9, 0}, {"T", 12, 0}, {"P", 15, 0}, {"E", 18, 0},
			{"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40},
			{"Pi", 0, 50}, {"Ei", 0, 60},
		};
		size_t k;
		for (k = 0; k < GL_ARRAY_LEN(sufs); k++) {
			if (strlen(sufs[k].s) == sl && !memcmp(sufs[k].s, suf, sl)) {
				exp10 += sufs[k].e10;
				exp2 = sufs[k].e2;
				break;
			}
		}
		if (k == GL_ARRAY_LEN(sufs)) {
			/* "1e3" / "1E-2": decimal exponent ("E" alone was exa). */
			size_t j = 1;
			int es = 1, ev = 0;
			if (suf[0] != 'e' && suf[0] != 'E')
				return -GL_EINVAL;
			if (j < sl && (suf[j] == '+' || suf[j] == '-'))
				es = suf[j++] == '-' ? -1 : 1;
			if (j >= sl)
				return -GL_EINVAL;
			for (; j < sl; j++) {
				if (suf[j] < '0' || suf[j] > '9')
					return -GL_EINVAL;
				if (ev < 1000)
					ev = ev * 10 + (suf[j] - '0');
			}
			exp10 += es * ev;
		}
	}
	v = mant;
	if (v == 0) {
		*milli = 0;
		return 0;
	}
	if (exp2 && !mul_ok(&v, (uint64_t)1 << exp2))
		return -GL_ERANGE;
	if (exp10 >= 0) {
		for (int e = 0; e < exp10; e++)
			if (!mul_ok(&v, 10))
				return -GL_ERANGE;
		/* dropped fraction digits: round up (only reachable near
		 * 1e18, where a milli either way does not matter) */
		if (sticky && v++ == UINT64_MAX)
			return -GL_ERANGE;
	} else {
		/* Round up like resource.Quantity.MilliValue(): 0.0001 -> 1m. */
		uint64_t p = 1;
		int tiny = 0;
		for (int e = 0; e < -exp10; e++) {
			if (!mul_ok(&p, 10)) {
				tiny = 1;
				break;
			}
		}
		v = tiny ? 1 : v / p + (v % p != 0 || sticky);
	}
	if (v > (uint64_t)INT64_MAX)
		return -GL_ERANGE;
	*milli = (int64_t)v;
	return 0;
}

const unsigned char gl_kube_json_class[256] = {['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 3};

size_t gl_kube_json_skip_string(const char *doc, size_t i, size_t len)
{
	/* a byte loop: Kubernetes strings are short (names, times, labels),
	 * where two memchr calls a string cost more than they save */
	for (i++; i < len; i++) {
		if (doc[i] == '"')
			return i + 1;
		if (doc[i] == '\\')
			i++; /* the escaped character, whatever it is */
	}
	return len;
}

int gl_kube_json_depth(const char *doc, size_t len, int max_depth)
{
	int depth = 0, deepest = 0;

	for (size_t i = 0; i < len;) {
		unsigned char k = gl_kube_json_class[(unsigned char)doc[i]];
		if (!k) {
			i++;
			continue;
		}
		if (k == 1) {
			i = gl_kube_json_skip_string(doc, i, len);
			continue;
		}
		if (k == 2) {
			if (++depth > deepest) {
				deepest = depth;
				if (deepest > max_depth)
					return max_depth + 1;
			}
		} else if (depth > 0) {
			depth--;
		}
		i++;
	}
	return deepest;
}

/* ---- parse state ----------------------------------------------------- */

struct ctx {
	struct gl_kube_result *res;
	size_t pods_cap, problems_cap;
	const char *team_key, *project_key, *cost_key;
	const struct gl_kubegpu_node_gpu **nodes; /* sorted by name */
	size_t nnodes;
	/* items holding a \u0000 somewhere (gl_jsonscan_nul_items), in order;
	 * nul_next is the first not yet passed */
	struct gl_jsonscan_item *nul;
	size_t nnul, nul_next;
};

/* The path of a \u0000 in item idx, or NULL. Items are asked in order. */
static const char *nul_in(struct ctx *c, size_t idx)
{
	while (c->nul_next < c->nnul && c->nul[c->nul_next].idx < idx)
		c->nul_next++;
	return c->nul_next < c->nnul && c->nul[c->nul_next].idx == idx ? c->nul[c->nul_next].path : NULL;
}

static void problem(struct ctx *c, const char *fmt, ...) GL_PRINTF(2, 3);
static void problem(struct ctx *c, const char *fmt, ...)
{
	struct gl_kube_result *r = c->res;
	struct gl_strbuf b = GL_STRBUF_INIT;
	va_list ap;

	if (r->nproblems >= GL_KUBE_MAX_PROBLEMS) {
		r->problems_dropped++;
		return;
	}
	va_start(ap, fmt);
	gl_strbuf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (r->nproblems == c->problems_cap) {
		c->problems_cap = c->problems_cap ? c->problems_cap * 2 : 16;
		r->problems = gl_xrealloc(r->problems, c->problems_cap * sizeof *r->problems);
	}
	r->problems[r->nproblems++] = gl_strbuf_steal(&b);
}

static const cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *get_str(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* For cJSON_ArrayForEach, which would also walk a string's or number's
 * (empty) children but not guard a wrong container type. */
static const cJSON *as_array(const cJSON *v)
{
	return cJSON_IsArray(v) ? v : NULL;
}

static const cJSON *as_object(const cJSON *v)
{
	return cJSON_IsObject(v) ? v : NULL;
}

static char *dup_or_null(const char *s)
{
	return s ? gl_xstrdup(s) : NULL;
}

static int str_bad(const char *s)
{
	return s && gl_utf8_validate(s, strlen(s), NULL) < 0;
}

/* Appends to path[0..*len) without splitting a character (the text is
 * valid UTF-8) and keeps the NUL. */
static void path_add(char *path, size_t cap, size_t *len, const char *a, const char *b)
{
	size_t room = cap - *len - 1, na = strlen(a), nb = b ? strlen(b) : 0;
	if (na + nb > room) {
		/* cut at a character start */
		size_t keep = room < na ? room : na;
		if (keep < na)
			while (keep && ((unsigned char)a[keep] & 0xC0) == 0x80)
				keep--;
		memcpy(path + *len, a, keep);
		*len += keep;
		if (keep == na && b) {
			keep = room - na;
			while (keep && ((unsigned char)b[keep] & 0xC0) == 0x80)
				keep--;
			memcpy(path + *len, b, keep);
			*len += keep;
		}
	} else {
		memcpy(path + *len, a, na);
		if (b)
			memcpy(path + *len + na, b, nb);
		*len += na + nb;
	}
	path[*len] = '\0';
}

static int bad_utf8_under(const cJSON *v, char *path, size_t cap, size_t len)
{
	const cJSON *ch;
	size_t i = 0;

	if (cJSON_IsString(v))
		return str_bad(v->valuestring);
	if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
		return 0;
	for (ch = v->child; ch; ch = ch->next, i++) {
		size_t l = len;
		if (cJSON_IsObject(v)) {
			if (str_bad(ch->string)) {
				path_add(path, cap, &l, " (a key)", NULL);
				return 1;
			}
			path_add(path, cap, &l, ".", ch->string ? ch->string : "");
		} else {
			char idx[24];
			snprintf(idx, sizeof idx, "[%zu]", i);
			path_add(path, cap, &l, idx, NULL);
		}
		if (bad_utf8_under(ch, path, cap, l))
			return 1;
		path[len] = '\0';
	}
	return 0;
}

int gl_kube_json_bad_utf8(const struct cJSON *v, char *path, size_t cap)
{
	if (cap == 0)
		return bad_utf8_under(v, (char[1]){0}, 1, 0);
	path[0] = '\0';
	return bad_utf8_under(v, path, cap, 0);
}

/* An optional time field: absent is fine, garbage is reported and ignored. */
static int64_t opt_time(struct ctx *c, const cJSON *o, const char *key, const char *path)
{
	const char *s = get_str(o, key);
	int64_t t;

	if (!s)
		return GL_TIME_NONE;
	if (gl_kube_parse_rfc3339(s, strlen(s), &t) < 0) {
		problem(c, "%s.%s: bad time '%.40s'", path, key, s);
		return GL_TIME_NONE;
	}
	return t;
}

/* spec.activeDeadlineSeconds: how long the pod may be active after its
 * start before the kubelet fails it, a positive whole number (the pod's
 * time limit, as Slurm's Timelimit is a job's). Absent is none (-1);
 * anything else is reported and ignored. */
static int64_t opt_deadline(struct ctx *c, const cJSON *spec, const char *path)
{
	const cJSON *v = get(spec, "activeDeadlineSeconds");

	if (!v)
		return -1;
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= 1e15) ||
	    (double)(int64_t)v->valuedouble != v->valuedouble) {
		problem(c, "%s.spec.activeDeadlineSeconds: not a positive whole number of seconds", path);
		return -1;
	}
	return (int64_t)v->valuedouble;
}

/* ---- GPU requests (src/sources/kubegpu.c) ------------------------------ */

static void gpu_problem(void *ud, const char *msg)
{
	problem(ud, "%s", msg);
}

static int node_cmp(const void *a, const void *b)
{
	const struct gl_kubegpu_node_gpu *x = *(const struct gl_kubegpu_node_gpu *const *)a;
	const struct gl_kubegpu_node_gpu *y = *(const struct gl_kubegpu_node_gpu *const *)b;
	return strcmp(x->node ? x->node : "", y->node ? y->node : "");
}

/* The caller's node facts, sorted once per document for a binary search. */
static void nodes_index(struct ctx *c, const struct gl_kube_opts *o)
{
	c->nnodes = o->nnodes;
	if (!o->nnodes)
		return;
	c->nodes = gl_xmalloc(o->nnodes * sizeof *c->nodes);
	for (size_t i = 0; i < o->nnodes; i++)
		c->nodes[i] = &o->nodes[i];
	gl_qsort(c->nodes, c->nnodes, sizeof *c->nodes, node_cmp);
}

static const struct gl_kubegpu_node_gpu *node_of(const struct ctx *c, const char *name)
{
	size_t lo = 0, hi = c->nnodes;
	if (!name)
		return NULL;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int d = strcmp(c->nodes[mid]->node ? c->nodes[mid]->node : "", name);
		if (!d)
			return c->nodes[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- one pod --------------------------------------------------------- */

static void put_kv(struct gl_strbuf *b, const char *k, const char *v)
{
	if (b->len > 1)
		gl_strbuf_putc(b, ',');
	gl_strbuf_putc(b, '"');
	gl_strbuf_put_json_str(b, k, strlen(k));
	gl_strbuf_puts(b, "\":\"");
	gl_strbuf_put_json_str(b, v, strlen(v));
	gl_strbuf_putc(b, '"');
}

static char *labels_json(const cJSON *labels)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	const cJSON *l;

	gl_strbuf_putc(&b, '{');
	/* labels are map[string]string in the API; anything else cannot come
	 * from a real server and is dropped rather than guessed at */
	cJSON_ArrayForEach(l, as_object(labels))
		if (cJSON_IsString(l) && l->string)
			put_kv(&b, l->string, l->valuestring);
	gl_strbuf_putc(&b, '}');
	return gl_strbuf_steal(&b);
}

static char *tags_json(struct ctx *c, const struct gl_kube_pod *p, const cJSON *labels)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	const char *keys[3] = {c->team_key, c->project_key, c->cost_key};
	static const char *const names[3] = {"team", "project", "cost_center"};

	gl_strbuf_putc(&b, '{');
	if (p->namespace_)
		put_kv(&b, "namespace", p->namespace_);
	if (p->owner_kind)
		put_kv(&b, "owner_kind", p->owner_kind);
	if (p->owner_name)
		put_kv(&b, "owner_name", p->owner_name);
	for (int i = 0; i < 3; i++) {
		const char *v = keys[i][0] ? get_str(labels, keys[i]) : NULL;
		if (v)
			put_kv(&b, names[i], v);
	}
	if (b.len > 1)
		gl_strbuf_putc(&b, ',');
	gl_strbuf_puts(&b, "\"labels\":");
	gl_strbuf_puts(&b, p->labels_json);
	gl_strbuf_putc(&b, '}');
	return gl_strbuf_steal(&b);
}

/* What a pod holds of physical GPUs before gl_kube_bound_held(). */
static int64_t held_base(const struct gl_kubegpu *g)
{
	if (g->share == GL_KUBEGPU_SHARE_RUNAI_RESERVATION)
		return 0; /* its GPU is its group's pods': what they leave is idle */
	return g->phys_micro >= 0 ? g->phys_micro : g->gpu_micro;
}

static void pod_clear(struct gl_kube_pod *p)
{
	free(p->uid);
	free(p->name);
	free(p->namespace_);
	free(p->node_name);
	free(p->phase_raw);
	free(p->owner_kind);
	free(p->owner_name);
	free(p->labels_json);
	free(p->tags_json);
	free(p->nodes_json);
	gl_kubegpu_fini(&p->gpu);
	memset(p, 0, sizeof *p);
}

static enum gl_kube_phase phase_of(const char *s)
{
	static const struct { const char *s; enum gl_kube_phase p; } map[] = {
		{"Pending", GL_KUBE_PHASE_PENDING}, {"Running", GL_KUBE_PHASE_RUNNING},
		{"Succeeded", GL_KUBE_PHASE_SUCCEEDED}, {"Failed", GL_KUBE_PHASE_FAILED},
		{"Unknown", GL_KUBE_PHASE_UNKNOWN},
	};
	for (size_t i = 0; s && i < GL_ARRAY_LEN(map); i++)
		if (!strcmp(s, map[i].s))
			return map[i].p;
	return GL_KUBE_PHASE_OTHER;
}

static int64_t pod_end(struct ctx *c, const cJSON *status, enum gl_kube_phase phase, const char *path)
{
	const cJSON *cs = get(status, "containerStatuses"), *e;
	int64_t end = GL_TIME_NONE;
	int all_done = cJSON_IsArray(cs) && cJSON_GetArraySize(cs) > 0;
	int terminal = phase == GL_KUBE_PHASE_SUCCEEDED || phase == GL_KUBE_PHASE_FAILED;
	char sub[96];
	size_t j = 0;

	/* A Running pod whose containers all terminated is between restarts
	 * (restartPolicy Always) or about to turn Succeeded/Failed: it has
	 * not ended. An end here would also keep it from ever being closed as
	 * vanished, which only closes rows without one. */
	if (phase == GL_KUBE_PHASE_RUNNING || phase == GL_KUBE_PHASE_PENDING)
		return GL_TIME_NONE;
	cJSON_ArrayForEach(e, as_array(cs)) {
		const cJSON *term = get(get(e, "state"), "terminated");
		int64_t t;
		if (!cJSON_IsObject(term)) {
			all_done = 0;
			j++;
			continue;
		}
		snprintf(sub, sizeof sub, "%s.status.containerStatuses[%zu].state.terminated", path, j++);
		t = opt_time(c, term, "finishedAt", sub);
		if (t != GL_TIME_NONE && (end == GL_TIME_NONE || t > end))
			end = t;
	}
	if (!all_done && !terminal)
		return GL_TIME_NONE;
	if (end == GL_TIME_NONE && terminal) {
		/* Evicted or never-started pods end without container states;
		 * the last condition change is when the kubelet gave up. */
		const cJSON *conds = get(status, "conditions");
		j = 0;
		cJSON_ArrayForEach(e, as_array(conds)) {
			int64_t t;
			snprintf(sub, sizeof sub, "%s.status.conditions[%zu]", path, j++);
			t = opt_time(c, e, "lastTransitionTime", sub);
			if (t != GL_TIME_NONE && (end == GL_TIME_NONE || t > end))
				end = t;
		}
	}
	return end;
}

/* Whether every string of the pod that is stored fits its bound
 * (include/gl/bounds.h); else a problem naming the first that does not. A
 * 30 MB name failed the whole snapshot's COPY ("index row requires
 * 360112 bytes"): the pod is skipped, the rest of the snapshot lands. */
static int pod_fits(struct ctx *c, const cJSON *item, const char *path)
{
	const cJSON *meta = get(item, "metadata"), *refs = get(meta, "ownerReferences"), *l, *ref;
	const struct {
		const cJSON *o;
		const char *obj, *key;
		enum gl_bounds k;
	} f[] = {
		{meta, "metadata", "uid", GL_BOUNDS_UUID},
		{meta, "metadata", "name", GL_BOUNDS_OBJECT},
		{meta, "metadata", "namespace", GL_BOUNDS_NAMESPACE},
		{get(item, "spec"), "spec", "nodeName", GL_BOUNDS_NODE},
		{get(item, "status"), "status", "phase", GL_BOUNDS_TEXT},
	};
	char why[160];
	size_t j = 0;

	for (size_t i = 0; i < GL_ARRAY_LEN(f); i++) {
		const char *v = get_str(f[i].o, f[i].key);
		if (v && gl_bounds_check(f[i].k, strlen(v), why, sizeof why)) {
			problem(c, "%s.%s.%s: %s", path, f[i].obj, f[i].key, why);
			return 0;
		}
	}
	cJSON_ArrayForEach(ref, as_array(refs)) {
		static const char *const keys[] = {"kind", "name"};
		for (size_t i = 0; i < GL_ARRAY_LEN(keys); i++) {
			const char *v = get_str(ref, keys[i]);
			if (v && gl_bounds_check(GL_BOUNDS_OBJECT, strlen(v), why, sizeof why)) {
				problem(c, "%s.metadata.ownerReferences[%zu].%s: %s", path, j, keys[i], why);
				return 0;
			}
		}
		j++;
	}
	cJSON_ArrayForEach(l, as_object(get(meta, "labels"))) {
		/* the key is named cut: it may be the long one */
		if (l->string && gl_bounds_check(GL_BOUNDS_LABEL, strlen(l->string), why, sizeof why)) {
			problem(c, "%s.metadata.labels.%.64s...: the key is %s", path, l->string, why);
			return 0;
		}
		if (cJSON_IsString(l) && gl_bounds_check(GL_BOUNDS_LABEL, strlen(l->valuestring), why, sizeof why)) {
			problem(c, "%s.metadata.labels.%s: %s", path, l->string, why);
			return 0;
		}
	}
	return 1;
}

/* 1 = pod kept, 0 = skipped (counted). */
static int parse_pod(struct ctx *c, const cJSON *item, size_t idx, struct gl_kube_pod *p)
{
	const cJSON *meta, *spec, *status, *labels, *refs, *ref, *conds, *cond;
	const char *uid, *created, *node;
	char path[40];

	memset(p, 0, sizeof *p);
	snprintf(path, sizeof path, "items[%zu]", idx);
	if (!cJSON_IsObject(item)) {
		problem(c, "%s: not an object", path);
		goto bad;
	}
	meta = get(item, "metadata");
	spec = get(item, "spec");
	status = get(item, "status");
	uid = get_str(meta, "uid");
	if (!uid || !*uid) {
		problem(c, "%s.metadata.uid: missing", path);
		goto bad;
	}
	created = get_str(meta, "creationTimestamp");
	if (!created) {
		problem(c, "%s.metadata.creationTimestamp: missing", path);
		goto bad;
	}
	if (gl_kube_parse_rfc3339(created, strlen(created), &p->submit_s) < 0) {
		problem(c, "%s.metadata.creationTimestamp: bad time '%.40s'", path, created);
		goto bad;
	}
	gl_kubegpu_read(item, path, node_of(c, get_str(spec, "nodeName")), &p->gpu, gpu_problem, c);
	if (p->gpu.overflow) {
		problem(c, "%s.spec: GPU request out of range", path);
		goto bad;
	}
	if (!p->gpu.intent) {
		gl_kubegpu_fini(&p->gpu);
		c->res->skipped_no_gpu++;
		return 0;
	}
	p->held_micro = held_base(&p->gpu);
	snprintf(p->gpu_type, sizeof p->gpu_type, "%s", p->gpu.gpu_type);
	{
		/* a bad byte anywhere in a stored pod would make PostgreSQL
		 * refuse the whole batch: skip the pod (it stays listed) */
		char where[160];
		if (gl_kube_json_bad_utf8(item, where, sizeof where)) {
			problem(c, "%s%s: not valid UTF-8", path, where);
			goto bad;
		}
	}
	if (!pod_fits(c, item, path))
		goto bad;
	{
		/* cJSON ends a string at a \u0000: the name (or label) would be
		 * stored cut, as another pod's perhaps */
		const char *np = nul_in(c, idx);
		if (np) {
			problem(c, "%s: holds \\u0000 (a NUL, which would cut the text there)", np);
			goto bad;
		}
	}

	p->uid = gl_xstrdup(uid);
	p->name = dup_or_null(get_str(meta, "name"));
	p->namespace_ = dup_or_null(get_str(meta, "namespace"));
	node = get_str(spec, "nodeName");
	if (node && *node) {
		struct gl_strbuf b = GL_STRBUF_INIT;
		p->node_name = gl_xstrdup(node);
		gl_strbuf_puts(&b, "[\"");
		gl_strbuf_put_json_str(&b, node, strlen(node));
		gl_strbuf_puts(&b, "\"]");
		p->nodes_json = gl_strbuf_steal(&b);
	}
	p->phase_raw = dup_or_null(get_str(status, "phase"));
	p->phase = phase_of(p->phase_raw);

	refs = get(meta, "ownerReferences");
	ref = NULL;
	cJSON_ArrayForEach(cond, as_array(refs)) {
		if (!cJSON_IsObject(cond))
			continue;
		/* Fall back to the first reference: an owner without the
		 * controller flag still says who made the pod. */
		if (!ref)
			ref = cond;
		if (cJSON_IsTrue(get(cond, "controller"))) {
			ref = cond;
			break;
		}
	}
	p->owner_kind = dup_or_null(get_str(ref, "kind"));
	p->owner_name = dup_or_null(get_str(ref, "name"));

	labels = get(meta, "labels");
	p->labels_json = labels_json(labels);
	p->tags_json = tags_json(c, p, labels);

	{
		char sub[64];
		snprintf(sub, sizeof sub, "%s.status", path);
		p->start_s = opt_time(c, status, "startTime", sub);
	}
	if (p->start_s == GL_TIME_NONE) {
		size_t j = 0;
		conds = get(status, "conditions");
		cJSON_ArrayForEach(cond, as_array(conds)) {
			const char *type = get_str(cond, "type"), *st = get_str(cond, "status");
			char sub[64];
			snprintf(sub, sizeof sub, "%s.status.conditions[%zu]", path, j++);
			if (type && st && !strcmp(type, "PodScheduled") && !strcmp(st, "True")) {
				p->start_s = opt_time(c, cond, "lastTransitionTime", sub);
				break;
			}
		}
	}
	p->end_s = pod_end(c, status, p->phase, path);
	p->active_deadline_s = opt_deadline(c, spec, path);
	if (p->gpu.note)
		c->res->gpu_unclear++; /* counted once the pod is kept */
	return 1;
bad:
	pod_clear(p);
	c->res->skipped_bad++;
	return 0;
}

/* ---- document -------------------------------------------------------- */

/* The whole document is judged before any pod is produced, so a non-PodList
 * yields nothing at all. */
static int check_kind(const cJSON *root, struct gl_err *err)
{
	const char *kind;
	const cJSON *items, *it;
	size_t i = 0;

	if (!cJSON_IsObject(root))
		return gl_err_set(err, GL_EFORMAT, "kube: document is not a JSON object");
	kind = get_str(root, "kind");
	if (!kind)
		return gl_err_set(err, GL_EFORMAT, "kube: kind: missing (want PodList or List)");
	if (strcmp(kind, "PodList") && strcmp(kind, "List"))
		return gl_err_set(err, GL_EFORMAT, "kube: kind: '%.40s' is not PodList or List", kind);
	items = get(root, "items");
	if (!cJSON_IsArray(items))
		return gl_err_set(err, GL_EFORMAT, "kube: items: %s", items ? "not an array" : "missing");
	cJSON_ArrayForEach(it, items) {
		const char *k = get_str(it, "kind");
		/* API PodLists omit the item kind; a List must say Pod */
		if ((k && strcmp(k, "Pod")) || (!k && !strcmp(kind, "List") && cJSON_IsObject(it)))
			return gl_err_set(err, GL_EFORMAT, "kube: items[%zu].kind: '%.40s' is not Pod", i,
					  k ? k : "(missing)");
		i++;
	}
	return 0;
}

int gl_kube_parse(const char *doc, size_t len, const struct gl_kube_opts *opts,
		  struct gl_kube_result *res, struct gl_err *err)
{
	static const struct gl_kube_opts defaults = {0};
	struct ctx c = {0};
	size_t max_bytes;
	int max_depth, rc = 0;
	cJSON *root = NULL;
	int arena = 0;
	const cJSON *items, *it;
	const char *end = NULL;
	size_t idx = 0;

	memset(res, 0, sizeof *res);
	memset(&c, 0, sizeof c);
	if (!opts)
		opts = &defaults;
	if (!doc)
		return gl_err_set(err, GL_EINVAL, "kube: no document");
	max_bytes = opts->max_doc_bytes ? opts->max_doc_bytes : GL_KUBE_MAX_DOC_BYTES_DEFAULT;
	max_depth = opts->max_depth > 0 ? opts->max_depth : GL_KUBE_MAX_DEPTH_DEFAULT;
	if (len > max_bytes)
		return gl_err_set(err, GL_ERANGE, "kube: document is %zu bytes, over the %zu-byte cap",
				  len, max_bytes);
	/* cJSON recurses per level; a cheap scan first keeps a "[[[[..."
	 * bomb from ever reaching it. */
	if (!opts->depth_checked && gl_kube_json_depth(doc, len, max_depth) > max_depth)
		return gl_err_set(err, GL_ERANGE, "kube: JSON nested deeper than %d levels", max_depth);

	{
		/* cJSON before 1.7.18 (CVE-2023-53154, fixed in Debian's
		 * 1.7.15-1+deb12u3) reads one byte past a buffer that ends
		 * inside an object; a JSON container always ends with } or ],
		 * so anything else is refused before cJSON sees it. */
		size_t last = len;
		while (last > 0 && (doc[last - 1] == ' ' || doc[last - 1] == '\t' ||
				    doc[last - 1] == '\n' || doc[last - 1] == '\r'))
			last--;
		if (last == 0)
			return gl_err_set(err, GL_EINVAL, "kube: invalid JSON: empty document");
		if (doc[last - 1] != '}' && doc[last - 1] != ']')
			return gl_err_set(err, GL_EINVAL,
					  "kube: invalid JSON: truncated or not an object (ends at byte %zu)",
					  last - 1);
	}
	/* the tree is read once and dropped whole: one arena instead of a
	 * malloc per value (cJSON_Delete below is then a no-op) */
	gl_jsonarena_begin(len * 3);
	arena = 1;
	root = cJSON_ParseWithLengthOpts(doc, len, &end, 0);
	if (!root) {
		rc = gl_err_set(err, GL_EINVAL, "kube: invalid JSON at byte %zu",
				end && end >= doc ? (size_t)(end - doc) : (size_t)0);
		goto out;
	}
	/* Two documents glued together (a retried command appending) must not
	 * pass as the first one. */
	while ((size_t)(end - doc) < len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if ((size_t)(end - doc) < len) {
		rc = gl_err_set(err, GL_EINVAL, "kube: trailing data at byte %zu", (size_t)(end - doc));
		goto out;
	}
	rc = check_kind(root, err);
	if (rc < 0)
		goto out;

	c.res = res;
	c.team_key = opts->team_label ? opts->team_label : "team";
	c.project_key = opts->project_label ? opts->project_label : "project";
	c.cost_key = opts->cost_center_label ? opts->cost_center_label : "cost-center";
	nodes_index(&c, opts);
	c.nnul = gl_jsonscan_nul_items(doc, len, "items", &c.nul);
	items = get(root, "items");
	cJSON_ArrayForEach(it, items) {
		struct gl_kube_pod p;
		if (parse_pod(&c, it, idx++, &p)) {
			if (res->npods == c.pods_cap) {
				c.pods_cap = c.pods_cap ? c.pods_cap * 2 : 64;
				res->pods = gl_xrealloc(res->pods, c.pods_cap * sizeof *res->pods);
			}
			res->pods[res->npods++] = p;
		}
	}
	res->nitems = idx; /* cJSON_GetArraySize() is an int */
	{
		struct gl_kube_pod **all = gl_xmalloc((res->npods ? res->npods : 1) * sizeof *all);
		for (size_t i = 0; i < res->npods; i++)
			all[i] = &res->pods[i];
		gl_kube_link_runai(all, res->npods);
		gl_kube_bound_held(all, res->npods, opts->nodes, opts->nnodes);
		free(all);
	}
out:
	free(c.nodes);
	free(c.nul);
	if (arena)
		gl_jsonarena_end();
	return rc;
}

/* ---- run:ai: a reservation's GPU is its group's -------------------------- */

static int link_cmp(const void *a, const void *b)
{
	const struct gl_kube_pod *x = *(const struct gl_kube_pod *const *)a, *y = *(const struct gl_kube_pod *const *)b;
	int d = strcmp(x->node_name ? x->node_name : "", y->node_name ? y->node_name : "");
	if (!d)
		d = strcmp(x->gpu.group, y->gpu.group);
	if (!d) /* the reservation first in its (node, group) */
		d = (y->gpu.share == GL_KUBEGPU_SHARE_RUNAI_RESERVATION) - (x->gpu.share == GL_KUBEGPU_SHARE_RUNAI_RESERVATION);
	return d;
}

void gl_kube_link_runai(struct gl_kube_pod *const *pods, size_t n)
{
	struct gl_kube_pod **g = gl_xmalloc((n ? n : 1) * sizeof *g);
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (pods[i]->gpu.group && pods[i]->node_name)
			g[m++] = pods[i];
	gl_qsort(g, m, sizeof *g, link_cmp);
	for (size_t i = 0; i < m;) {
		size_t j = i + 1;
		const struct gl_kube_pod *resv = g[i]->gpu.share == GL_KUBEGPU_SHARE_RUNAI_RESERVATION ? g[i] : NULL;
		while (j < m && !strcmp(g[j]->node_name, g[i]->node_name) && !strcmp(g[j]->gpu.group, g[i]->gpu.group))
			j++;
		for (size_t k = i; resv && resv->gpu.nuuids && k < j; k++) {
			struct gl_kubegpu *u = &g[k]->gpu;
			/* the users of the reserved GPU get its UUID; what they had stays */
			if (u->share == GL_KUBEGPU_SHARE_RUNAI_RESERVATION || u->nuuids)
				continue;
			u->uuids = gl_xmalloc(resv->gpu.nuuids * sizeof *u->uuids);
			for (size_t x = 0; x < resv->gpu.nuuids; x++)
				u->uuids[x] = gl_xstrdup(resv->gpu.uuids[x]);
			u->nuuids = resv->gpu.nuuids;
			gl_kubegpu_uuids_refresh(u);
		}
		i = j;
	}
	free(g);
}

/* ---- held capacity: one GPU holds one GPU -------------------------------- */

/* One pod's claim on a GPU (node, uuid) or a node (uuid NULL). */
struct claim {
	struct gl_kube_pod *pod;
	const char *node, *uuid;
	int64_t start, end, want, got;
};

static int claim_cmp(const void *a, const void *b)
{
	const struct claim *x = a, *y = b;
	int d = strcmp(x->node, y->node);
	if (!d)
		d = strcmp(x->uuid ? x->uuid : "", y->uuid ? y->uuid : "");
	if (!d)
		d = (x->start > y->start) - (x->start < y->start);
	if (!d)
		d = strcmp(x->pod->uid, y->pod->uid);
	return d;
}

static int claim_same(const struct claim *x, const struct claim *y)
{
	return !strcmp(x->node, y->node) && !strcmp(x->uuid ? x->uuid : "", y->uuid ? y->uuid : "");
}

/* Grants each claim of [a, b) (one GPU or node, in start order) what the
 * earlier claims still running at its start leave of cap. */
static void grant(struct claim *v, size_t a, size_t b, int64_t cap)
{
	for (size_t i = a; i < b; i++) {
		int64_t used = 0;
		for (size_t k = a; k < i; k++)
			if (v[k].end > v[i].start)
				used += v[k].got;
		v[i].got = cap - used < v[i].want ? (cap - used > 0 ? cap - used : 0) : v[i].want;
	}
}

static int64_t node_cap(const struct gl_kubegpu_node_gpu *nodes, size_t nnodes, const char *node)
{
	for (size_t i = 0; i < nnodes; i++)
		if (nodes[i].node && !strcmp(nodes[i].node, node))
			return nodes[i].gpus > 0 ? nodes[i].gpus * GL_GPU_MICRO : 0;
	return 0;
}

/* Sorts the claims, grants each group its cap and returns them in order. */
static void grant_all(struct claim *v, size_t m, const struct gl_kubegpu_node_gpu *nodes, size_t nnodes)
{
	gl_qsort(v, m, sizeof *v, claim_cmp);
	for (size_t i = 0; i < m;) {
		size_t j = i + 1;
		int64_t cap;
		while (j < m && claim_same(&v[i], &v[j]))
			j++;
		cap = v[i].uuid ? GL_GPU_MICRO : node_cap(nodes, nnodes, v[i].node);
		if (cap > 0)
			grant(v, i, j, cap);
		else
			for (size_t k = i; k < j; k++)
				v[k].got = v[k].want;
		i = j;
	}
}

size_t gl_kube_bound_held(struct gl_kube_pod *const *pods, size_t n, const struct gl_kubegpu_node_gpu *nodes,
			  size_t nnodes)
{
	struct claim *v = NULL;
	size_t m = 0, cap = 0, cut = 0;

	/* per bound GPU: a pod with k UUIDs claims 1/k of its share on each */
	for (size_t i = 0; i < n; i++) {
		struct gl_kube_pod *p = pods[i];
		int64_t base = held_base(&p->gpu);
		p->held_micro = base;
		p->held_cut_micro = 0;
		p->held_cut_uuid[0] = '\0';
		if (!p->node_name || p->start_s == GL_TIME_NONE || base <= 0)
			continue;
		for (size_t u = 0; u < p->gpu.nuuids; u++) {
			if (m == cap) {
				cap = cap ? cap * 2 : 64;
				v = gl_xrealloc(v, cap * sizeof *v);
			}
			v[m++] = (struct claim){p, p->node_name, p->gpu.uuids[u], p->start_s,
						p->end_s == GL_TIME_NONE ? INT64_MAX : p->end_s,
						base / (int64_t)p->gpu.nuuids + (u == 0 ? base % (int64_t)p->gpu.nuuids : 0), 0};
		}
	}
	grant_all(v, m, nodes, nnodes);
	for (size_t k = 0; k < m; k++) {
		struct gl_kube_pod *p = v[k].pod;
		if (v[k].got < v[k].want) {
			p->held_micro -= v[k].want - v[k].got;
			if (!p->held_cut_uuid[0])
				snprintf(p->held_cut_uuid, sizeof p->held_cut_uuid, "%s", v[k].uuid);
		}
	}
	/* per node, where its GPUs are known */
	m = 0;
	for (size_t i = 0; i < n; i++) {
		struct gl_kube_pod *p = pods[i];
		if (!p->node_name || p->start_s == GL_TIME_NONE || p->held_micro <= 0)
			continue;
		if (m == cap) {
			cap = cap ? cap * 2 : 64;
			v = gl_xrealloc(v, cap * sizeof *v);
		}
		v[m++] = (struct claim){p, p->node_name, NULL, p->start_s, p->end_s == GL_TIME_NONE ? INT64_MAX : p->end_s,
					p->held_micro, 0};
	}
	grant_all(v, m, nodes, nnodes);
	for (size_t k = 0; k < m; k++)
		v[k].pod->held_micro = v[k].got;
	for (size_t i = 0; i < n; i++) {
		struct gl_kube_pod *p = pods[i];
		p->held_cut_micro = held_base(&p->gpu) - p->held_micro;
		if (p->node_name && p->start_s != GL_TIME_NONE && p->held_cut_micro > 0)
			cut++;
		else
			p->held_cut_micro = 0;
	}
	free(v);
	return cut;
}

void gl_kube_result_fini(struct gl_kube_result *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->npods; i++)
		pod_clear(&res->pods[i]);
	free(res->pods);
	for (size_t i = 0; i < res->nproblems; i++)
		free(res->problems[i]);
	free(res->problems);
	memset(res, 0, sizeof *res);
}

void gl_kube_result_free(struct gl_kube_result *res)
{
	if (!res)
		return;
	gl_kube_result_fini(res);
	free(res);
}

/* ---- job row --------------------------------------------------------- */

void gl_kube_pod_to_row(const struct gl_kube_pod *pod, int64_t seen_at_s, struct gl_jobrow *row)
{
	static const char *const states[] = {
		[GL_KUBE_PHASE_PENDING] = "PENDING", [GL_KUBE_PHASE_RUNNING] = "RUNNING",
		[GL_KUBE_PHASE_SUCCEEDED] = "COMPLETED", [GL_KUBE_PHASE_FAILED] = "FAILED",
		[GL_KUBE_PHASE_UNKNOWN] = "UNKNOWN",
	};
	int bound = pod->node_name != NULL || pod->start_s != GL_TIME_NONE;

	memset(row, 0, sizeof *row);
	row->job_key = pod->uid;
	row->job_id = pod->name ? pod->name : pod->uid;
	row->array_job_id = row->array_task_id = row->het_job_id = row->het_offset = -1;
	row->name = pod->name;
	row->uid = -1;
	row->namespace_ = pod->namespace_;
	if (pod->phase == GL_KUBE_PHASE_OTHER) {
		/* kept verbatim like unknown sacct states, so nothing is lost */
		row->state = pod->phase_raw ? pod->phase_raw : "UNKNOWN";
		row->state_known = 0;
	} else {
		row->state = states[pod->phase];
		row->state_known = pod->phase != GL_KUBE_PHASE_UNKNOWN;
	}
	row->state_by_uid = -1;
	row->submit_s = pod->submit_s;
	row->eligible_s = pod->submit_s;
	row->start_s = pod->start_s;
	row->end_s = pod->end_s;
	row->elapsed_s = pod->start_s != GL_TIME_NONE && pod->end_s != GL_TIME_NONE &&
				 pod->end_s >= pod->start_s
			 ? pod->end_s - pod->start_s
			 : -1;
	row->suspended_s = -1;
	row->timelimit_s = pod->active_deadline_s;
	row->nnodes = pod->node_name ? 1 : -1;
	row->ncpus = -1;
	row->req_mem_mb = -1;
	row->gpu_micro = bound ? pod->gpu.gpu_micro : 0;
	row->req_gpu_micro = pod->gpu.gpu_micro;
	row->phys_micro = bound ? pod->held_micro : 0;
	row->gpu_type = pod->gpu_type[0] ? pod->gpu_type : NULL;
	row->gpu_share = gl_kubegpu_share_name(pod->gpu.share);
	row->gpu_uuids_json = pod->gpu.uuids_json;
	row->gpu_group = pod->gpu.group;
	row->gpu_note = pod->gpu.note;
	row->node_list = pod->node_name;
	row->nodes_json = pod->nodes_json;
	row->tags_json = pod->tags_json;
	row->last_seen_s = seen_at_s;
}
