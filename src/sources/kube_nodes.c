/* `kubectl get nodes -o json` parser: GPUs per node (whole GPUs and MIG
 * instances folded into physical GPUs), model from GPU feature discovery
 * labels, and availability from Ready, spec.unschedulable and taints. */
#include "gl/kube.h"
#include "gl/bounds.h"
#include "gl/jsonarena.h"
#include "gl/jsonscan.h"
#include "gl/nodeobs.h"
#include "nodeobs_int.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *str_at(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int64_t time_at(const cJSON *o, const char *k)
{
	const char *s = str_at(o, k);
	int64_t t;
	if (!s || gl_kube_parse_rfc3339(s, strlen(s), &t))
		return GL_TIME_NONE;
	return t;
}

/* whole units of a quantity ("8", "8000m"); -1 when absent or bad */
static int64_t qty(const cJSON *o, const char *k)
{
	const char *s = str_at(o, k);
	int64_t m;
	if (!s || gl_kube_parse_quantity_milli(s, strlen(s), &m) || m < 0)
		return -1;
	/* no node has 2^40 devices; larger values would overflow the sums */
	return m / 1000 > ((int64_t)1 << 40) ? -1 : m / 1000;
}

/* Taints that mean the node takes no new work (cordon, drain, autoscaler
 * scale-down) or is gone. Other NoSchedule taints usually dedicate a node
 * (nvidia.com/gpu=present:NoSchedule) and say nothing about availability. */
static enum gl_nodeobs_avail taint_avail(const char *key, const char *effect)
{
	if (!key || !effect)
		return GL_NODEOBS_AVAIL_UP;
	if (!strcmp(key, "node.kubernetes.io/not-ready") || !strcmp(key, "node.kubernetes.io/unreachable") ||
	    !strcmp(key, "node.kubernetes.io/out-of-service"))
		return GL_NODEOBS_AVAIL_DOWN;
	if (!strcmp(key, "node.kubernetes.io/unschedulable") || !strcmp(key, "ToBeDeletedByClusterAutoscaler"))
		return GL_NODEOBS_AVAIL_DRAINED;
	if (!strcmp(effect, "NoExecute") && strncmp(key, "nvidia.com/", 11) && strcmp(key, "dedicated") &&
	    strncmp(key, "node-role.kubernetes.io/", 24))
		return GL_NODEOBS_AVAIL_DRAINED;
	return GL_NODEOBS_AVAIL_UP;
}

static void append(char *buf, size_t n, const char *fmt, ...) GL_PRINTF(3, 4);
static void append(char *buf, size_t n, const char *fmt, ...)
{
	size_t l = strlen(buf);
	va_list ap;
	if (l + 1 >= n)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + l, n - l, fmt, ap);
	va_end(ap);
}

static int parse_item(struct gl_nodeobs_snapshot *s, const cJSON *it, size_t idx, struct gl_err *err)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(it, "spec");
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "status");
	const cJSON *labels = cJSON_GetObjectItemCaseSensitive(md, "labels");
	const cJSON *cap = cJSON_GetObjectItemCaseSensitive(st, "capacity");
	const cJSON *alloc = cJSON_GetObjectItemCaseSensitive(st, "allocatable");
	const cJSON *c;
	const char *name = str_at(md, "name"), *product = str_at(labels, "nvidia.com/gpu.product"),
		   *count_l = str_at(labels, "nvidia.com/gpu.count"), *strategy = str_at(labels, "nvidia.com/mig.strategy"),
		   *mem_l = str_at(labels, "nvidia.com/gpu.memory"), *rep_l = str_at(labels, "nvidia.com/gpu.replicas");
	struct gl_nodeobs_obs *o;
	char model[GL_NODEOBS_MODEL_MAX] = "", raw[512] = "", reason[512] = "";
	int64_t full, mig_inst = 0, mig_slices = 0, phys, ready_since = GL_TIME_NONE, taint_since = GL_TIME_NONE;
	int replicas = 0;
	enum gl_nodeobs_avail av = GL_NODEOBS_AVAIL_UP;
	int ready = -1;

	if (!name || !*name)
		return gl_err_set(err, GL_EINVAL, "items[%zu].metadata.name: missing", idx);
	{
		/* the name keys the node's rows; the product label is its GPU
		 * model, which was cut to fit (another model, then) */
		char why[160];
		if (gl_bounds_check(GL_BOUNDS_NODE, strlen(name), why, sizeof why))
			return gl_err_set(err, GL_EINVAL, "items[%zu].metadata.name: %s", idx, why);
		const char *mig = product ? strstr(product, "-MIG-") : NULL;
		if (product && gl_bounds_check(GL_BOUNDS_GPU_MODEL, mig ? (size_t)(mig - product) : strlen(product), why,
					      sizeof why))
			return gl_err_set(err, GL_EINVAL, "items[%zu].metadata.labels.nvidia.com/gpu.product: %s", idx, why);
	}
	full = qty(cap, "nvidia.com/gpu");
	{
		/* whole GPUs of the other device plugins: AMD's, and Alibaba
		 * gpushare's card count (its gpu-mem is memory, not GPUs) */
		int64_t amd = qty(cap, "amd.com/gpu"), ali = qty(cap, "aliyun.com/gpu-count");
		if (amd > 0 || ali > 0)
			full = (full > 0 ? full : 0) + (amd > 0 ? amd : 0) + (ali > 0 ? ali : 0);
	}
	cJSON_ArrayForEach(c, cap)
	{
		if (c->string && !strncmp(c->string, "nvidia.com/mig-", 15)) {
			int sl = gl_nodeobs_mig_profile_slices(c->string + 15, strlen(c->string + 15));
			int64_t n = qty(cap, c->string);
			if (n > 0) {
				mig_inst += n;
				mig_slices += n * (sl ? sl : 7);
			}
		}
	}
	if (product) {
		/* "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb" (mig.strategy=single) names the profile */
		const char *m = strstr(product, "-MIG-");
		size_t l = m ? (size_t)(m - product) : strlen(product); /* bounded above */
		memcpy(model, product, l);
		model[l] = '\0';
		/* time-slicing without renaming marks the product "...-SHARED" */
		if (l > 7 && !strcmp(model + l - 7, "-SHARED"))
			model[l - 7] = '\0';
		if (m && full > 0 && !mig_inst) {
			int sl = gl_nodeobs_mig_profile_slices(m + 5, strlen(m + 5));
			mig_inst = full;
			mig_slices = full * (sl ? sl : 7);
			full = 0;
		}
	}
	(void)strategy;
	if (rep_l) {
		char *e;
		long long v = strtoll(rep_l, &e, 10);
		if (*rep_l && !*e && v >= 0 && v <= 1024)
			replicas = v > 1 ? (int)v : 0;
		else
			gl_nodeobs_problem(s, "kubectl nodes items[%zu].metadata.labels.nvidia.com/gpu.replicas: '%s' ignored",
					   idx, rep_l);
	}
	if (replicas) {
		/* time-slicing/MPS advertise each GPU `replicas` times, as
		 * nvidia.com/gpu (renameByDefault=false) or nvidia.com/gpu.shared */
		int64_t shared = qty(cap, "nvidia.com/gpu.shared");
		full = ((full > 0 ? full : 0) + (shared > 0 ? shared : 0)) / replicas;
	}
	/* physical GPUs: GPU feature discovery's count when present; else whole
	 * GPUs plus MIG slices folded into 7-slice GPUs */
	phys = (full > 0 ? full : 0) + (mig_slices + 6) / 7;
	if (count_l) {
		char *e;
		long long v = strtoll(count_l, &e, 10);
		if (*count_l && !*e && v >= 0 && v <= (1LL << 40))
			phys = v;
		else
			gl_nodeobs_problem(s, "kubectl nodes items[%zu].metadata.labels.nvidia.com/gpu.count: '%s' ignored",
					   idx, count_l);
	}
	o = gl_nodeobs_add_node(s);
	o->name = gl_xstrdup(name);
	o->created_s = time_at(md, "creationTimestamp");
	if (phys > 0) {
		snprintf(o->gpus[0].model, sizeof o->gpus[0].model, "%s", model);
		o->gpus[0].gpus = phys;
		o->gpus[0].mig_instances = mig_inst;
		o->gpus[0].replicas = replicas;
		o->ngpu_models = 1;
		if (mem_l) {
			char *e;
			long long v = strtoll(mem_l, &e, 10);
			if (*mem_l && !*e && v > 0 && v <= (1LL << 30))
				o->gpus[0].memory_mib = v;
			else
				gl_nodeobs_problem(s, "kubectl nodes items[%zu].metadata.labels.nvidia.com/gpu.memory: '%s' ignored",
						   idx, mem_l);
		}
	}
	{
		/* allocatable below capacity: the device plugin found unhealthy GPUs */
		int64_t a = qty(alloc, "nvidia.com/gpu");
		if (a >= 0 && full >= 0 && a < full) {
			char b[64];
			snprintf(b, sizeof b, "%lld of %lld GPUs allocatable", (long long)a, (long long)full);
			append(reason, sizeof reason, "%s%s", reason[0] ? "; " : "", b);
		}
	}
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "conditions"))
	{
		const char *type = str_at(c, "type"), *status = str_at(c, "status");
		if (type && !strcmp(type, "Ready")) {
			ready = status && !strcmp(status, "True");
			ready_since = time_at(c, "lastTransitionTime");
			append(raw, sizeof raw, "Ready=%s", status ? status : "?");
			if (!ready) {
				const char *r = str_at(c, "reason");
				append(reason, sizeof reason, "%sNotReady: %s", reason[0] ? "; " : "", r ? r : "");
			}
		}
	}
	if (ready == -1)
		append(raw, sizeof raw, "Ready=absent");
	if (ready == 0)
		av = GL_NODEOBS_AVAIL_DOWN;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "unschedulable"))) {
		append(raw, sizeof raw, ",unschedulable");
		if (av == GL_NODEOBS_AVAIL_UP)
			av = GL_NODEOBS_AVAIL_DRAINED;
	}
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, "taints"))
	{
		const char *key = str_at(c, "key"), *effect = str_at(c, "effect");
		enum gl_nodeobs_avail ta = taint_avail(key, effect);
		append(raw, sizeof raw, ",taint=%s:%s", key ? key : "", effect ? effect : "");
		if (ta == GL_NODEOBS_AVAIL_DOWN && av != GL_NODEOBS_AVAIL_DOWN) {
			av = GL_NODEOBS_AVAIL_DOWN;
			taint_since = time_at(c, "timeAdded");
		} else if (ta == GL_NODEOBS_AVAIL_DRAINED && av != GL_NODEOBS_AVAIL_DOWN) {
			/* spec.unschedulable has no time; its taint may */
			av = GL_NODEOBS_AVAIL_DRAINED;
			if (taint_since == GL_TIME_NONE)
				taint_since = time_at(c, "timeAdded");
		}
	}
	o->avail = av;
	o->state_raw = gl_xstrdup(raw);
	o->reason = reason[0] ? gl_xstrdup(reason) : NULL;
	/* evidence of when the state began: Ready's transition for up and down,
	 * the taint's timeAdded for a drain (cordons carry none) */
	if (av == GL_NODEOBS_AVAIL_DOWN && ready == 0)
		o->state_since_s = ready_since;
	else if (av == GL_NODEOBS_AVAIL_UP && ready == 1)
		o->state_since_s = ready_since;
	else if (av != GL_NODEOBS_AVAIL_UP)
		o->state_since_s = taint_since;
	return 0;
}

int gl_kube_nodes_parse(const char *json, size_t len, struct gl_nodeobs_snapshot *s, struct gl_err *err)
{
	cJSON *root = NULL;
	const cJSON *items, *it;
	const char *kind;
	size_t idx = 0, nnul = 0, inul = 0;
	struct gl_jsonscan_item *nul = NULL;
	int rc = 0;

	if (gl_kube_json_depth(json, len, GL_KUBE_MAX_DEPTH_DEFAULT) > GL_KUBE_MAX_DEPTH_DEFAULT)
		return gl_err_set(err, GL_ERANGE, "kubectl nodes: JSON nested deeper than %d levels",
				  GL_KUBE_MAX_DEPTH_DEFAULT);
	/* read once and dropped whole: one arena, not a malloc per value */
	gl_jsonarena_begin(len * 3);
	root = cJSON_ParseWithLength(json, len);
	if (!root) {
		rc = gl_err_set(err, GL_EFORMAT, "kubectl nodes: not JSON");
		goto out;
	}
	kind = str_at(root, "kind");
	items = cJSON_GetObjectItemCaseSensitive(root, "items");
	if (!cJSON_IsArray(items) || (kind && strcmp(kind, "NodeList") && strcmp(kind, "List"))) {
		rc = gl_err_set(err, GL_EFORMAT, "kubectl nodes: not a NodeList (kind %s)", kind ? kind : "absent");
		goto out;
	}
	nnul = gl_jsonscan_nul_items(json, len, "items", &nul);
	cJSON_ArrayForEach(it, items)
	{
		struct gl_err le = {0};
		char where[160];
		s->lines++;
		while (inul < nnul && nul[inul].idx < idx)
			inul++;
		if (gl_kube_json_bad_utf8(it, where, sizeof where)) {
			/* the store would refuse the whole snapshot for it */
			s->skipped++;
			gl_nodeobs_problem(s, "kubectl nodes items[%zu]%s: not valid UTF-8", idx, where);
		} else if (inul < nnul && nul[inul].idx == idx) {
			/* cJSON ends a string there: a name stored cut */
			s->skipped++;
			gl_nodeobs_problem(s, "kubectl nodes %s: holds \\u0000 (a NUL, which would cut the text there)",
					   nul[inul].path);
		} else if (parse_item(s, it, idx, &le)) {
			s->skipped++;
			gl_nodeobs_problem(s, "kubectl nodes %s", le.msg);
		}
		idx++;
	}
out:
	free(nul);
	gl_jsonarena_end();
	return rc;
}
