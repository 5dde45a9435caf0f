/* Shared GPUs on Kubernetes (src/sources/kubegpu.c through gl_kube_parse):
 * what each sharing scheme bills, per pod, and that the pods of one GPU never
 * add up to more than it.
 *
 * Real: the pod specs of tests/fixtures/kube/sharing/ (HAMi, Volcano, run:ai
 * dumps, KAI, Alibaba gpushare, the device plugin's README pod; README.md
 * there), with the hand-written node facts of handwritten_nodes.json read by
 * the real node parser. The one-rule pods inline are HAND-WRITTEN and say so;
 * expected figures are worked out in the comments, not by the code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/kube.h"
#include "gl/nodeobs.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SH "tests/fixtures/kube/sharing/"

struct want {
	const char *uid;
	enum gl_kubegpu_share share;
	int64_t micro, phys, replicas;
	const char *type, *model, *uuid0, *note; /* note: a substring, NULL = none */
};

static const struct gl_kube_pod *find(const struct gl_kube_result *r, const char *uid)
{
	for (size_t i = 0; i < r->npods; i++)
		if (!strcmp(r->pods[i].uid, uid))
			return &r->pods[i];
	fail_msg("pod %s not kept", uid);
	return NULL;
}

static void check(const struct gl_kube_pod *p, const struct want *w)
{
	const struct gl_kubegpu *g = &p->gpu;
	if (g->share != w->share || g->gpu_micro != w->micro || g->phys_micro != w->phys || g->replicas != w->replicas ||
	    strcmp(g->gpu_type, w->type) || strcmp(g->gpu_model, w->model) ||
	    strcmp(g->nuuids ? g->uuids[0] : "", w->uuid0) || (!w->note) != (!g->note) ||
	    (w->note && !strstr(g->note, w->note)))
		fail_msg("%s: share %s micro %lld phys %lld replicas %lld type '%s' model '%s' uuid '%s' note '%s'", w->uid,
			 gl_kubegpu_share_name(g->share), (long long)g->gpu_micro, (long long)g->phys_micro,
			 (long long)g->replicas, g->gpu_type, g->gpu_model, g->nuuids ? g->uuids[0] : "",
			 g->note ? g->note : "");
	/* what the books hold: the pod's micro-GPUs, and its held share (none
	 * for a run:ai reservation, whose GPU is its group's pods') */
	assert_int_equal(p->held_micro, w->share == GL_KUBEGPU_SHARE_RUNAI_RESERVATION ? 0 : w->phys >= 0 ? w->phys : w->micro);
}

/* The node facts, read from the nodes document by the real node parser. */
static size_t load_nodes(struct gl_nodeobs_snapshot *snap, struct gl_kubegpu_node_gpu *out, size_t max)
{
	size_t len, n = 0;
	char *buf = gl_test_read_file(gl_test_fixture(SH "handwritten_nodes.json"), &len);
	assert_int_equal(gl_kube_nodes_parse(buf, len, snap, NULL), 0);
	free(buf);
	for (size_t i = 0; i < snap->nnodes && n < max; i++) {
		const struct gl_nodeobs_obs *o = &snap->nodes[i];
		out[n].node = o->name;
		out[n].replicas = o->ngpu_models ? o->gpus[0].replicas : 0;
		out[n].memory_mib = o->ngpu_models ? o->gpus[0].memory_mib : 0;
		/* physical GPUs unknown: these tests read the billing rules; the
		 * bound by a node's GPUs is test_bound_held's */
		out[n].gpus = 0;
		n++;
	}
	return n;
}

/* Real pods, each billed as docs/ingest.md's table says. */
static const struct want real[] = {
	/* aliyun.com/gpu-mem 2 GiB of a 15360 MiB T4: 2048/15360 */
	{"alibaba/gpushare_sample_1.yaml#0", GL_KUBEGPU_SHARE_ALIYUN, 133333, 133333, 0, "", "", "", NULL},
	/* HAMi: gpucores 30 wins over gpumem 3000 */
	{"hami/default_use.yaml#0", GL_KUBEGPU_SHARE_HAMI, 300000, 300000, 0, "", "", "", NULL},
	/* 2 GPUs x 8000/40960 MiB (no cores): 0.390625 */
	{"hami/dynamic_mig_example.yaml#0", GL_KUBEGPU_SHARE_HAMI, 390625, 390625, 0, "", "", "", NULL},
	/* the Deployment's pod: 3000/40960 MiB = 0.0732421875 */
	{"hami/example.yaml#0", GL_KUBEGPU_SHARE_HAMI, 73242, 73242, 0, "", "", "", NULL},
	/* one 3g.20gb instance: billed per instance, holds 3/7 of the A100 */
	{"hami/mig_example.yaml#0", GL_KUBEGPU_SHARE_MIG, 1000000, 428571, 0, "3g.20gb", "", "", NULL},
	{"hami/use_exclusive_card.yaml#0", GL_KUBEGPU_SHARE_HAMI, 2000000, 2000000, 0, "", "", "", NULL},
	/* 2 GPUs x 30 % cores (memory 50 % is not the billed share) */
	{"hami/use_memory_fraction.yaml#0", GL_KUBEGPU_SHARE_HAMI, 600000, 600000, 0, "", "", "", NULL},
	/* two pods meant for one card: 60 % + 40 % of its cores */
	{"hami/use_sharing_card.yaml#0", GL_KUBEGPU_SHARE_HAMI, 600000, 600000, 0, "", "", "", NULL},
	{"hami/use_sharing_card.yaml#1", GL_KUBEGPU_SHARE_HAMI, 400000, 400000, 0, "", "", "", NULL},
	/* KAI gpu-memory 2000 MiB on a node whose GPU memory is not known */
	{"kai/gpu-memory.yaml#0", GL_KUBEGPU_SHARE_RUNAI, 0, 0, 0, "", "", "", "gpu-memory 2000 MiB without a core share"},
	{"kai/gpu-sharing-init-container.yaml#0", GL_KUBEGPU_SHARE_RUNAI, 500000, 500000, 0, "", "", "", NULL},
	{"kai/gpu-sharing-non-default-container.yaml#0", GL_KUBEGPU_SHARE_RUNAI, 500000, 500000, 0, "", "", "", NULL},
	{"kai/gpu-sharing.yaml#0", GL_KUBEGPU_SHARE_RUNAI, 500000, 500000, 0, "", "", "", NULL},
	/* nvidia.com/gpu on a node with 4 time-slicing replicas per GPU */
	{"nvidia/readme_gpu_pod.yaml#0", GL_KUBEGPU_SHARE_TIMESLICE, 250000, 250000, 1, "", "", "", NULL},
	/* run:ai 2.17: the fraction pod gets its reservation's GPU */
	{"a801b3c7-b9be-4830-821c-2456cad2234f", GL_KUBEGPU_SHARE_RUNAI, 500000, 500000, 0, "", "",
	 "GPU-8983c66a-23df-e63b-4c2f-afcae9ec79b3", NULL},
	{"3b47e794-97f0-4824-b7d5-bb44c122039e", GL_KUBEGPU_SHARE_RUNAI_RESERVATION, 0, 1000000, 0, "", "",
	 "GPU-8983c66a-23df-e63b-4c2f-afcae9ec79b3", NULL},
	/* run:ai MIG by annotation: 1 instance of 1g.5gb, 1/7 of the GPU */
	{"cb9aaa99-97df-4c10-bfa7-c1ed024c672b", GL_KUBEGPU_SHARE_MIG, 1000000, 142857, 0, "1g.5gb", "A100-40GB",
	 "MIG-28810d46-0180-5139-a975-020bdc7f9cb1", NULL},
	{"83a0c3bc-63ed-4b94-85bc-e5bd124c72f2", GL_KUBEGPU_SHARE_MIG, 1000000, 1000000, 0, "7g.40gb", "A100-40GB",
	 "MIG-6d9be9db-d376-5991-8c4c-18ab448933ff", NULL},
	/* Volcano on a 32768 MiB V100: 1024, 1024, 10240 MiB, and 2 x 2000 + 2 x 3000 */
	{"volcano/gpu-share.yml#0", GL_KUBEGPU_SHARE_VOLCANO, 31250, 31250, 0, "", "", "", NULL},
	{"volcano/vgpu-case01.yml#0", GL_KUBEGPU_SHARE_VOLCANO, 31250, 31250, 0, "", "", "", NULL},
	{"volcano/vgpu-case02.yml#0", GL_KUBEGPU_SHARE_VOLCANO, 312500, 312500, 0, "", "", "", NULL},
	{"volcano/vgpu-case03.yml#0", GL_KUBEGPU_SHARE_VOLCANO, 305175, 305175, 0, "", "", "", NULL},
};

static void test_real_specs(void **state)
{
	struct gl_nodeobs_snapshot snap = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_kubegpu_node_gpu nodes[16];
	struct gl_kube_opts o = {0};
	struct gl_kube_result r;
	struct gl_err err = {0};
	size_t len;
	char *buf = gl_test_read_file(gl_test_fixture(SH "sharing_pods.json"), &len);
	(void)state;

	o.nodes = nodes;
	o.nnodes = load_nodes(&snap, nodes, 16);
	assert_int_equal(o.nnodes, 5);
	if (gl_kube_parse(buf, len, &o, &r, &err) != 0)
		fail_msg("%s", err.msg);
	assert_int_equal(r.npods, GL_ARRAY_LEN(real));
	assert_int_equal(r.skipped_no_gpu + r.skipped_bad, 0);
	for (size_t i = 0; i < GL_ARRAY_LEN(real); i++)
		check(find(&r, real[i].uid), &real[i]);
	/* the one pod not understood is named, and not billed as 0 silently */
	assert_int_equal(r.gpu_unclear, 1);
	assert_int_equal(r.nproblems, 1);
	assert_non_null(strstr(r.problems[0], "items[9].spec: GPU not billed: gpu-memory 2000 MiB"));
	/* the run:ai reservation's GPU is billed to its users, not to runai-reservation */
	assert_string_equal(find(&r, "3b47e794-97f0-4824-b7d5-bb44c122039e")->namespace_, "runai-reservation");
	assert_int_equal(find(&r, "3b47e794-97f0-4824-b7d5-bb44c122039e")->gpu.gpu_micro, 0);
	assert_int_equal(find(&r, "3b47e794-97f0-4824-b7d5-bb44c122039e")->held_micro, 0);
	gl_kube_result_fini(&r);
	gl_nodeobs_snapshot_fini(&snap);
	free(buf);
}

/* The node parser: time-slicing replicas per GPU, and physical GPUs that are
 * not counted once per replica. */
static void test_nodes(void **state)
{
	struct gl_nodeobs_snapshot snap = GL_NODEOBS_SNAPSHOT_INIT;
	struct gl_kubegpu_node_gpu nodes[16];
	static const struct {
		const char *name, *model;
		int64_t gpus;
		int replicas;
	} want[] = {
		{"ts-a100-01", "NVIDIA-A100-SXM4-40GB", 8, 10},  /* gpu.count, gpu.shared 80 */
		{"ts-h100-01", "NVIDIA-H100-80GB-HBM3", 1, 4},   /* nvidia.com/gpu 4 / 4 replicas, -SHARED cut */
		{"hami-a100-01", "NVIDIA-A100-PCIE-40GB", 2, 0},
	};
	(void)state;
	load_nodes(&snap, nodes, 16);
	for (size_t i = 0; i < GL_ARRAY_LEN(want); i++) {
		const struct gl_nodeobs_obs *o = &snap.nodes[i];
		assert_string_equal(o->name, want[i].name);
		assert_string_equal(o->gpus[0].model, want[i].model);
		assert_int_equal(o->gpus[0].gpus, want[i].gpus);
		assert_int_equal(o->gpus[0].replicas, want[i].replicas);
	}
	gl_nodeobs_snapshot_fini(&snap);
}

/* ---- hand-written, one rule each ------------------------------------------- */

#define POD(uid, meta, ctrs, node) \
	"{\"metadata\":{\"uid\":\"" uid "\",\"name\":\"" uid "\",\"namespace\":\"ns\"," \
	"\"creationTimestamp\":\"2026-10-01T12:00:00Z\"" meta "},\"spec\":{\"nodeName\":\"" node "\",\"containers\":[" ctrs "]}}"
#define CTR(lim) "{\"name\":\"c\",\"resources\":{\"limits\":" lim "}}"
#define ANN(a) ",\"annotations\":" a

static const struct {
	const char *pod;
	struct want w;
	int kept;
} cases[] = {
	/* the three pods: HAMi with nvidia.com/vgpu (20 % cores) ... */
	{POD("hami-vgpu", "", CTR("{\"nvidia.com/vgpu\":\"1\",\"nvidia.com/gpumem\":\"1024\",\"nvidia.com/gpucores\":\"20\"}"), "n1"),
	 {"hami-vgpu", GL_KUBEGPU_SHARE_HAMI, 200000, 200000, 0, "", "", "", NULL}, 1},
	/* ... run:ai half a GPU without a resource ... */
	{POD("runai-half", ANN("{\"gpu-fraction\":\"0.5\",\"runai-allocated-gpus\":\"0.5\"}"), CTR("{}"), "n1"),
	 {"runai-half", GL_KUBEGPU_SHARE_RUNAI, 500000, 500000, 0, "", "", "", NULL}, 1},
	/* ... and a MIG profile given only as annotations: 1/7 of a GPU held */
	{POD("runai-mig", ANN("{\"nvidia.com/mig-1g.5gb\":\"1\",\"runai-allocated-mig-gpus\":\"0.142857\"}"), CTR("{}"), "n1"),
	 {"runai-mig", GL_KUBEGPU_SHARE_MIG, 1000000, 142857, 0, "1g.5gb", "", "", NULL}, 1},
	/* run:ai asked (pending): gpu-fraction x gpu-fraction-num-devices */
	{POD("runai-multi", ANN("{\"gpu-fraction\":\"0.25\",\"gpu-fraction-num-devices\":\"2\"}"), CTR("{}"), "n1"),
	 {"runai-multi", GL_KUBEGPU_SHARE_RUNAI, 500000, 500000, 0, "", "", "", NULL}, 1},
	/* KAI gpu-memory on a node with 40960 MiB GPUs: 2000/40960 */
	{POD("kai-mem", ANN("{\"gpu-memory\":\"2000\"}"), CTR("{}"), "mem40g"),
	 {"kai-mem", GL_KUBEGPU_SHARE_RUNAI, 48828, 48828, 0, "", "", "", NULL}, 1},
	/* HAMi memory percentage without cores */
	{POD("hami-pct", "", CTR("{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem-percentage\":\"25\"}"), "n1"),
	 {"hami-pct", GL_KUBEGPU_SHARE_HAMI, 250000, 250000, 0, "", "", "", NULL}, 1},
	/* HAMi memory in MiB, the node's GPU memory unknown: reported, not guessed */
	{POD("hami-mem", "", CTR("{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpumem\":\"3000\"}"), "n1"),
	 {"hami-mem", GL_KUBEGPU_SHARE_HAMI, 0, 0, 0, "", "", "", "nvidia.com/gpumem 3000 MiB without a core share"}, 1},
	/* HAMi's binding annotation: which GPUs (format of HAMi's protocol doc) */
	{POD("hami-bound", ANN("{\"hami.io/vgpu-devices-allocated\":\"GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,3000,30:;\"}"),
	     CTR("{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"30\"}"), "n1"),
	 {"hami-bound", GL_KUBEGPU_SHARE_HAMI, 300000, 300000, 0, "", "", "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448", NULL}, 1},
	/* a binding annotation without a GPU resource: kept, reported */
	{POD("bound-nores", ANN("{\"volcano.sh/vgpu-ids-new\":\"GPU-a,NVIDIA,1024,0:;\"}"), CTR("{\"cpu\":\"1\"}"), "n1"),
	 {"bound-nores", GL_KUBEGPU_SHARE_NONE, 0, 0, 0, "", "", "GPU-a", "binds GPUs but the pod requests no GPU resource"}, 1},
	/* an unknown */ /* GPU resource: kept, reported, nothing billed for it */
	{POD("intel", "", CTR("{\"gpu.intel.com/i915\":\"1\"}"), "n1"),
	 {"intel", GL_KUBEGPU_SHARE_NONE, 0, 0, 0, "", "", "", "unknown GPU resource 'gpu.intel.com/i915'"}, 1},
	{POD("intel-and-nv", "", CTR("{\"gpu.intel.com/i915\":\"1\",\"nvidia.com/gpu\":\"1\"}"), "n1"),
	 {"intel-and-nv", GL_KUBEGPU_SHARE_WHOLE, 1000000, 1000000, 0, "", "", "", "unknown GPU resource"}, 1},
	/* HAMi's priority is no amount of GPU */
	{POD("prio", "", CTR("{\"nvidia.com/gpu\":\"1\",\"nvidia.com/priority\":\"0\"}"), "n1"),
	 {"prio", GL_KUBEGPU_SHARE_WHOLE, 1000000, 1000000, 0, "", "", "", NULL}, 1},
	/* time-slicing renamed: 3 replicas on a node with 10 per GPU */
	{POD("shared", "", CTR("{\"nvidia.com/gpu.shared\":\"3\"}"), "ts10"),
	 {"shared", GL_KUBEGPU_SHARE_TIMESLICE, 300000, 300000, 3, "", "", "", NULL}, 1},
	/* ... and 1 of 3: 333333, three of them stay under one GPU */
	{POD("third", "", CTR("{\"nvidia.com/gpu.shared\":\"1\"}"), "ts3"),
	 {"third", GL_KUBEGPU_SHARE_TIMESLICE, 333333, 333333, 1, "", "", "", NULL}, 1},
	/* replicas of a node nobody described: reported */
	{POD("shared-unk", "", CTR("{\"nvidia.com/gpu.shared\":\"1\"}"), "n1"),
	 {"shared-unk", GL_KUBEGPU_SHARE_TIMESLICE, 0, 0, 1, "", "", "", "replicas per GPU of node n1 unknown"}, 1},
	/* time-sliced MIG instances */
	{POD("mig-shared", "", CTR("{\"nvidia.com/mig-1g.10gb.shared\":\"1\"}"), "ts3"),
	 {"mig-shared", GL_KUBEGPU_SHARE_TIMESLICE, 333333, 47619, 0, "1g.10gb", "", "", NULL}, 1},
	/* Alibaba cGPU: 30 % of one card's compute */
	{POD("ali-core", "", CTR("{\"aliyun.com/gpu-mem\":\"2\",\"aliyun.com/gpu-core.percentage\":\"30\"}"), "n1"),
	 {"ali-core", GL_KUBEGPU_SHARE_ALIYUN, 300000, 300000, 0, "", "", "", NULL}, 1},
	/* Alibaba gpushare once bound: 4 of a 15 GiB card, as the annotations say */
	{POD("ali-bound", ANN("{\"ALIYUN_COM_GPU_MEM_IDX\":\"0\",\"ALIYUN_COM_GPU_MEM_POD\":\"4\",\"ALIYUN_COM_GPU_MEM_DEV\":\"15\"}"),
	     CTR("{\"aliyun.com/gpu-mem\":\"4\"}"), "n1"),
	 {"ali-bound", GL_KUBEGPU_SHARE_ALIYUN, 266666, 266666, 0, "", "", "", NULL}, 1},
	{POD("ali-unk", "", CTR("{\"aliyun.com/gpu-mem\":\"4\"}"), "n1"),
	 {"ali-unk", GL_KUBEGPU_SHARE_ALIYUN, 0, 0, 0, "", "", "", "aliyun.com/gpu-mem 4 GiB"}, 1},
	/* Volcano vGPU cores */
	{POD("vol-cores", "", CTR("{\"volcano.sh/vgpu-number\":\"2\",\"volcano.sh/vgpu-cores\":\"50\"}"), "n1"),
	 {"vol-cores", GL_KUBEGPU_SHARE_VOLCANO, 1000000, 1000000, 0, "", "", "", NULL}, 1},
	/* AMD whole GPUs */
	{POD("amd", "", CTR("{\"amd.com/gpu\":\"2\"}"), "n1"), {"amd", GL_KUBEGPU_SHARE_WHOLE, 2000000, 2000000, 0, "", "", "", NULL}, 1},
	/* MIG and whole in one pod */
	{POD("mixed", "", CTR("{\"nvidia.com/gpu\":\"1\",\"nvidia.com/mig-2g.20gb\":\"1\"}"), "n1"),
	 {"mixed", GL_KUBEGPU_SHARE_MIXED, 2000000, 1285714, 0, "", "", "", NULL}, 1},
	/* run:ai's reservation before 2.17 named the GPU by index: no UUID */
	{"{\"metadata\":{\"uid\":\"resv-old\",\"name\":\"runai-reservation-gpu-n1-x\",\"namespace\":\"runai-reservation\","
	 "\"creationTimestamp\":\"2026-10-01T12:00:00Z\",\"annotations\":{\"run.ai/reserve_for_gpu_index\":\"0\"}},"
	 "\"spec\":{\"nodeName\":\"n1\",\"containers\":[" CTR("{\"nvidia.com/gpu\":\"1\"}") "]}}",
	 {"resv-old", GL_KUBEGPU_SHARE_RUNAI_RESERVATION, 0, 1000000, 0, "", "", "", NULL}, 1},
	/* no GPU intent at all */
	{POD("cpu", "", CTR("{\"cpu\":\"4\"}"), "n1"), {"cpu", GL_KUBEGPU_SHARE_NONE, 0, 0, 0, "", "", "", NULL}, 0},
	{POD("runai-zero", ANN("{\"runai-allocated-gpus\":\"0\",\"runai-allocated-mig-gpus\":\"0\"}"), CTR("{}"), "n1"),
	 {"runai-zero", GL_KUBEGPU_SHARE_NONE, 0, 0, 0, "", "", "", NULL}, 0},
};

static void test_cases(void **state)
{
	static const struct gl_kubegpu_node_gpu nodes[] = {
		{"ts10", 10, 0, 0}, {"mem40g", 0, 40960, 0}, {"ts3", 3, 0, 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		struct gl_kube_opts o = {0};
		struct gl_kube_result r;
		struct gl_err err = {0};
		char doc[4096];
		o.nodes = nodes;
		o.nnodes = GL_ARRAY_LEN(nodes);
		snprintf(doc, sizeof doc, "{\"kind\":\"PodList\",\"items\":[%s]}", cases[i].pod);
		if (gl_kube_parse(doc, strlen(doc), &o, &r, &err) != 0)
			fail_msg("%s: %s", cases[i].w.uid, err.msg);
		if ((size_t)cases[i].kept != r.npods)
			fail_msg("%s: %zu pods kept", cases[i].w.uid, r.npods);
		if (r.npods)
			check(&r.pods[0], &cases[i].w);
		else
			assert_int_equal(r.skipped_no_gpu, 1);
		/* every note is also a problem naming the pod */
		assert_int_equal(r.gpu_unclear, cases[i].w.note ? 1 : 0);
		if (cases[i].w.note)
			assert_non_null(strstr(r.problems[0], "items[0].spec"));
		gl_kube_result_fini(&r);
	}
}

static void test_decimal(void **state)
{
	static const struct {
		const char *in;
		int rc;
		int64_t want;
	} c[] = {
		{"0.5", 0, 500000}, {"0.14285714285714285", 0, 142857}, {"1", 0, 1000000}, {"0", 0, 0},
		{"0.0000009", 0, 0}, {"2.", 0, 2000000}, {".25", 0, 250000}, {"", -GL_EINVAL, 0}, {".", -GL_EINVAL, 0},
		{"-1", -GL_EINVAL, 0}, {"1e3", -GL_EINVAL, 0}, {"0.5.1", -GL_EINVAL, 0}, {"99999999999999999999", -GL_ERANGE, 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(c); i++) {
		int64_t m = -1;
		int rc = gl_kubegpu_decimal_micro(c[i].in, &m);
		if (rc != c[i].rc || (rc == 0 && m != c[i].want))
			fail_msg("'%s': rc %d m %lld", c[i].in, rc, (long long)m);
	}
}

/* The pods one GPU is shared by never add up to more than it: 7 run:ai 1g
 * slices, 3 time-slicing replicas of 3, the HAMi card split 60/40. */
static void test_never_twice(void **state)
{
	static const struct gl_kubegpu_node_gpu nodes[] = {{"ts3", 3, 0, 0}};
	struct gl_kube_opts o = {0};
	struct gl_kube_result r;
	char doc[8192];
	size_t n = 0;
	int64_t phys = 0, ts = 0;
	(void)state;

	n += (size_t)snprintf(doc + n, sizeof doc - n, "{\"kind\":\"PodList\",\"items\":[");
	for (int i = 0; i < 7; i++)
		n += (size_t)snprintf(doc + n, sizeof doc - n,
				      "%s{\"metadata\":{\"uid\":\"s%d\",\"creationTimestamp\":\"2026-10-01T12:00:00Z\","
				      "\"annotations\":{\"nvidia.com/mig-1g.5gb\":\"1\",\"runai-allocated-mig-gpus\":"
				      "\"0.14285714285714285\"}},\"spec\":{\"nodeName\":\"n\",\"containers\":[{}]}}",
				      i ? "," : "", i);
	for (int i = 0; i < 3; i++)
		n += (size_t)snprintf(doc + n, sizeof doc - n,
				      ",{\"metadata\":{\"uid\":\"t%d\",\"creationTimestamp\":\"2026-10-01T12:00:00Z\"},"
				      "\"spec\":{\"nodeName\":\"ts3\",\"containers\":[{\"resources\":{\"limits\":"
				      "{\"nvidia.com/gpu.shared\":\"1\"}}}]}}",
				      i);
	snprintf(doc + n, sizeof doc - n, "]}");
	o.nodes = nodes;
	o.nnodes = 1;
	assert_int_equal(gl_kube_parse(doc, strlen(doc), &o, &r, NULL), 0);
	assert_int_equal(r.npods, 10);
	for (size_t i = 0; i < 7; i++)
		phys += r.pods[i].gpu.phys_micro;
	for (size_t i = 7; i < 10; i++)
		ts += r.pods[i].gpu.gpu_micro;
	assert_true(phys <= 1000000 && phys >= 1000000 - 7);
	assert_true(ts <= 1000000 && ts >= 1000000 - 3);
	gl_kube_result_fini(&r);
	/* the HAMi card: 60 % + 40 % of its cores is exactly the card */
	assert_int_equal(real[7].micro + real[8].micro, 1000000);
}

/* HAND-WRITTEN: what the pods sharing a GPU hold in the books. Pods are
 * taken in start order; a later pod gets what the earlier ones still
 * running at its start left of the GPU (bound UUID) and of the node (its
 * GPUs, when known); a reservation holds nothing; an ended pod frees its
 * share. {uid, node, uuids (";"-separated), start, end (0: running),
 * annotations/limits, want held}. */
static void test_bound_held(void **state)
{
	static const struct gl_kubegpu_node_gpu nodes[] = {{"one", 0, 0, 1}, {"two", 0, 0, 2}};
	static const struct {
		const char *uid, *node, *binding, *start, *end, *res;
		int64_t held;
	} c[] = {
		/* one GPU, HAMi 60 + 30 + 40 % of cores: the third holds the 10 % left */
		{"a1", "one", "GPU-1,NVIDIA,0,60:;", "10:00", NULL, "\"nvidia.com/gpucores\":\"60\"", 600000},
		{"a2", "one", "GPU-1,NVIDIA,0,30:;", "10:10", NULL, "\"nvidia.com/gpucores\":\"30\"", 300000},
		{"a3", "one", "GPU-1,NVIDIA,0,40:;", "10:20", NULL, "\"nvidia.com/gpucores\":\"40\"", 100000},
		/* two GPUs: a pod of 2 x 60 % on both, then one of 50 % on the second */
		{"b1", "two", "GPU-2,NVIDIA,0,60:GPU-3,NVIDIA,0,60:;", "10:00", NULL,
		 "\"nvidia.com/gpu\":\"2\",\"nvidia.com/gpucores\":\"60\"", 1200000},
		{"b2", "two", "GPU-3,NVIDIA,0,50:;", "10:05", NULL, "\"nvidia.com/gpucores\":\"50\"", 400000},
		/* started after b3 ended: the whole 70 % (b3 held 70 % of GPU-2 before) */
		{"b3", "two", "GPU-2,NVIDIA,0,30:;", "09:00", "09:30", "\"nvidia.com/gpucores\":\"30\"", 300000},
		/* no UUIDs on a node of two GPUs: three whole GPUs at once, the third
		 * gets nothing once b1 and b2 hold 1.6 of them and a whole one more */
		{"n1", "two", NULL, "10:30", NULL, "\"nvidia.com/gpu\":\"1\"", 400000},
		/* a node the inventory does not know: nothing to bound it by */
		{"x1", "other", NULL, "10:00", NULL, "\"nvidia.com/gpu\":\"4\"", 4000000},
	};
	struct gl_kube_opts o = {0};
	struct gl_kube_result r;
	char doc[16384];
	size_t n = 0;
	(void)state;

	n += (size_t)snprintf(doc + n, sizeof doc - n, "{\"kind\":\"PodList\",\"items\":[");
	for (size_t i = 0; i < GL_ARRAY_LEN(c); i++) {
		char end[160] = "";
		if (c[i].end)
			snprintf(end, sizeof end,
				 ",\"containerStatuses\":[{\"state\":{\"terminated\":{\"finishedAt\":\"2026-10-05T%s:00Z\"}}}]",
				 c[i].end);
		n += (size_t)snprintf(
			doc + n, sizeof doc - n,
			"%s{\"metadata\":{\"uid\":\"%s\",\"creationTimestamp\":\"2026-10-05T08:00:00Z\","
			"\"annotations\":{%s%s%s}},\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"resources\":"
			"{\"limits\":{%s%s}}}]},\"status\":{\"phase\":\"%s\",\"startTime\":\"2026-10-05T%s:00Z\"%s}}",
			i ? "," : "", c[i].uid, c[i].binding ? "\"hami.io/vgpu-devices-allocated\":\"" : "",
			c[i].binding ? c[i].binding : "", c[i].binding ? "\"" : "", c[i].node,
			c[i].binding && !strstr(c[i].res, "nvidia.com/gpu\"") ? "\"nvidia.com/gpu\":\"1\"," : "", c[i].res,
			c[i].end ? "Succeeded" : "Running", c[i].start, end);
	}
	snprintf(doc + n, sizeof doc - n, "]}");
	o.nodes = nodes;
	o.nnodes = GL_ARRAY_LEN(nodes);
	assert_int_equal(gl_kube_parse(doc, strlen(doc), &o, &r, NULL), 0);
	assert_int_equal(r.npods, GL_ARRAY_LEN(c));
	for (size_t i = 0; i < GL_ARRAY_LEN(c); i++) {
		const struct gl_kube_pod *p = find(&r, c[i].uid);
		if (p->held_micro != c[i].held)
			fail_msg("%s: held %lld, want %lld (billed %lld)", c[i].uid, (long long)p->held_micro,
				 (long long)c[i].held, (long long)p->gpu.gpu_micro);
		/* what a pod is billed is what it asked, whatever it holds */
		assert_int_equal(p->held_cut_micro, (p->gpu.phys_micro >= 0 ? p->gpu.phys_micro : p->gpu.gpu_micro) -
							    p->held_micro);
	}
	assert_string_equal(find(&r, "a3")->held_cut_uuid, "GPU-1");
	assert_string_equal(find(&r, "n1")->held_cut_uuid, "");
	/* a second bound over the same pods changes nothing */
	{
		struct gl_kube_pod *all[GL_ARRAY_LEN(c)];
		for (size_t i = 0; i < r.npods; i++)
			all[i] = &r.pods[i];
		assert_int_equal(gl_kube_bound_held(all, r.npods, nodes, GL_ARRAY_LEN(nodes)), 3);
		assert_int_equal(find(&r, "a3")->held_micro, 100000);
	}
	gl_kube_result_fini(&r);
}

/* HAND-WRITTEN (found by fuzz_kube): a pod with an unknown GPU resource that
 * is then dropped for bytes that are not UTF-8 is not also "unclear". */
static void test_unclear_dropped(void **state)
{
	static const char doc[] = "{\"kind\":\"PodList\",\"items\":[" POD("u", "", CTR("{\"nvi\xffia.com/gpu\":\"1\"}"), "n1") "]}";
	struct gl_kube_result r;
	(void)state;
	assert_int_equal(gl_kube_parse(doc, strlen(doc), NULL, &r, NULL), 0);
	assert_int_equal(r.npods, 0);
	assert_int_equal(r.skipped_bad, 1);
	assert_int_equal(r.gpu_unclear, 0);
	gl_kube_result_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decimal),
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_nodes),
		cmocka_unit_test(test_real_specs),
		cmocka_unit_test(test_never_twice),
		cmocka_unit_test(test_bound_held),
		cmocka_unit_test(test_unclear_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
