/* Shared GPUs on Kubernetes in the books, through the real binary, a real
 * PostgreSQL and the real daemon: HAMi pods splitting one A100 by cores
 * (bound to its UUID), three time-slicing replicas of an H100 whose node
 * says "4 replicas per GPU", and run:ai fraction pods (a half and a
 * seventh) beside the reservation pod that holds their L4.
 *
 * HAND-WRITTEN documents (the shapes of tests/fixtures/kube/sharing/'s real
 * specs and handwritten_nodes.json), built here so the figures below can be
 * worked out by hand:
 * - the pods billed their shares in micro-GPUs (a seventh is 142,857, and
 *   its cost is 228,571 micro-units where milli-GPUs made it 227,200);
 * - a third HAMi pod asking 40 % of cores of a GPU whose 90 % are taken
 *   holds only the 10 % left in the books, and the run says so (exit 4);
 * - a pod with a GPU resource nobody bills is kept with its note, and the
 *   run says so too;
 * - the reservation holds nothing and bills nothing: its GPU is its
 *   group's, the rest idle;
 * - run:ai pods get the reservation's UUID also when the reservation comes
 *   in another slice of the document (5 MiB of CPU pods between them);
 * - every physical GPU's pods hold at most that GPU, and conservation holds
 *   to the second on these nodes: allocated + idle + unavailable = reported,
 *   in /v1/capacity and /v1/chargeback alike. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WINDOW "2026-10-05T10:00:00Z,2026-10-05T12:00:00Z"
#define WIN_S 7200LL

static char g_dsn[512], g_tmp[400], g_pods[512], g_nodes[512];
static struct gl_test_daemon g_d;
static PGconn *g_c;

static const char nodes_doc[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":["
	/* HAMi: one A100 split ten ways by the device plugin */
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"hami-1\",\"uid\":\"n-hami-1\","
	"\"creationTimestamp\":\"2026-10-01T00:00:00Z\",\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-40GB\","
	"\"nvidia.com/gpu.count\":\"1\",\"nvidia.com/gpu.memory\":\"40960\"}},\"spec\":{},"
	"\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"10\"},\"allocatable\":{\"nvidia.com/gpu\":\"10\"},"
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-10-01T00:00:00Z\"}]}},"
	/* time-slicing, renameByDefault false: one H100 advertised 4 times */
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"ts-1\",\"uid\":\"n-ts-1\","
	"\"creationTimestamp\":\"2026-10-01T00:00:00Z\",\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3-SHARED\","
	"\"nvidia.com/gpu.replicas\":\"4\",\"nvidia.com/gpu.memory\":\"81559\"}},\"spec\":{},"
	"\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"4\"},\"allocatable\":{\"nvidia.com/gpu\":\"4\"},"
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-10-01T00:00:00Z\"}]}},"
	/* run:ai: one L4 */
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"runai-1\",\"uid\":\"n-runai-1\","
	"\"creationTimestamp\":\"2026-10-01T00:00:00Z\",\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-L4\"}},\"spec\":{},"
	"\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"1\"},\"allocatable\":{\"nvidia.com/gpu\":\"1\"},"
	"\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-10-01T00:00:00Z\"}]}}"
	"]}";

struct gl_strbuf_lite {
	char *p;
	size_t len, cap;
};

static void put(struct gl_strbuf_lite *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct gl_strbuf_lite *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->len + (size_t)n + 1 > b->cap) {
		b->cap = (b->len + (size_t)n + 1) * 2;
		b->p = realloc(b->p, b->cap);
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* One running pod: uid, namespace, name, node, start, labels, annotations
 * (JSON object bodies) and one container's limits. */
static void pod(struct gl_strbuf_lite *b, const char *uid, const char *ns, const char *name, const char *node,
		const char *start, const char *labels, const char *ann, const char *limits)
{
	put(b,
	    "%s{\"metadata\":{\"uid\":\"%s\",\"namespace\":\"%s\",\"name\":\"%s\","
	    "\"creationTimestamp\":\"2026-10-05T09:00:00Z\",\"labels\":{%s},\"annotations\":{%s}},"
	    "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{%s}}}]},"
	    "\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}}",
	    b->p[b->len - 1] == '[' ? "" : ",", uid, ns, name, labels, ann, node, limits, start);
}

static void write_file(const char *path, const char *text, size_t n)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* The snapshot at 2026-10-05T12:00:00Z. The run:ai fraction pods come
 * first and their reservation last, 5 MiB of CPU pods apart: the ingest
 * parses the document in 4 MiB slices. */
static void write_pods(void)
{
	struct gl_strbuf_lite b = {0};
	put(&b, "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[");
	pod(&b, "f1", "team-a", "frac-half", "runai-1", "2026-10-05T10:00:00Z", "\"runai-gpu-group\":\"g1\"",
	    "\"runai-allocated-gpus\":\"0.5\",\"gpu-fraction\":\"0.5\"", "");
	pod(&b, "f2", "team-b", "frac-seventh", "runai-1", "2026-10-05T10:00:00Z", "\"runai-gpu-group\":\"g1\"",
	    "\"runai-allocated-gpus\":\"0.14285714285714285\"", "");
	pod(&b, "h1", "team-c", "hami-60", "hami-1", "2026-10-05T10:00:00Z", "",
	    "\"hami.io/vgpu-devices-allocated\":\"GPU-a100-0000,NVIDIA,20000,60:;\"",
	    "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"60\"");
	pod(&b, "h2", "team-c", "hami-30", "hami-1", "2026-10-05T10:10:00Z", "",
	    "\"hami.io/vgpu-devices-allocated\":\"GPU-a100-0000,NVIDIA,10000,30:;\"",
	    "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"30\"");
	pod(&b, "h3", "team-d", "hami-40", "hami-1", "2026-10-05T10:20:00Z", "",
	    "\"hami.io/vgpu-devices-allocated\":\"GPU-a100-0000,NVIDIA,10000,40:;\"",
	    "\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"40\"");
	for (int i = 1; i <= 3; i++) {
		char uid[8], name[16];
		snprintf(uid, sizeof uid, "t%d", i);
		snprintf(name, sizeof name, "slice-%d", i);
		pod(&b, uid, "team-e", name, "ts-1", "2026-10-05T10:00:00Z", "", "", "\"nvidia.com/gpu\":\"1\"");
	}
	pod(&b, "u1", "team-e", "igpu", "ts-1", "2026-10-05T10:00:00Z", "", "", "\"gpu.intel.com/i915\":\"1\"");
	for (int i = 0; i < 3500; i++) {
		char uid[16], name[24];
		snprintf(uid, sizeof uid, "cpu%d", i);
		snprintf(name, sizeof name, "cpu-filler-%04d", i);
		pod(&b, uid, "batch", name, "cpu-node",
		    "2026-10-05T10:00:00Z", "\"app\":\"filler\",\"note\":\"a CPU-only pod keeping the run:ai pods apart\"",
		    "\"kubernetes.io/description\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"",
		    "\"cpu\":\"1\"");
	}
	pod(&b, "r0", "runai-reservation", "runai-reservation-gpu-runai-1-x", "runai-1", "2026-10-05T09:59:00Z",
	    "\"app\":\"runai-reservation\",\"runai-gpu-group\":\"g1\"", "\"run.ai/reserve_for_gpu_index\":\"GPU-l4-0000\"",
	    "\"nvidia.com/gpu\":\"1\"");
	put(&b, "]}");
	assert_true(b.len > ((size_t)5 << 20));
	write_file(g_pods, b.p, b.len);
	free(b.p);
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_tmp, sizeof g_tmp, "%s", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	snprintf(g_pods, sizeof g_pods, "%s/shared-gpus-pods.json", g_tmp);
	snprintf(g_nodes, sizeof g_nodes, "%s/shared-gpus-nodes.json", g_tmp);
	if (gl_test_db_fresh("gl_test_shared_gpus", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn,
				    "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n"
				    "  - model: h100\n    per_gpu_hour: \"4.00\"\n"
				    "  - model: l4\n    per_gpu_hour: \"0.80\"\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	(void)state;
	PQfinish(g_c);
	if (!getenv("GL_TEST_KEEP")) {
		unlink(g_pods);
		unlink(g_nodes);
	}
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static long long num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	if (!cJSON_IsNumber(v))
		fail_msg("%s: not a number", k);
	return (long long)v->valuedouble;
}

/* "gpu_micro/phys_micro/share/uuids/group" of a pod */
static const char *row_of(const char *uid)
{
	return gl_test_qstrf(g_c,
			     "SELECT gpu_micro || '/' || coalesce(phys_micro::text, '-') || '/' || coalesce(gpu_share, '-')"
			     " || '/' || coalesce(gpu_uuids::text, '-') || '/' || coalesce(gpu_group, '-')"
			     " FROM jobs WHERE job_key = 'pod:%s'",
			     uid);
}

static void test_ingest(void **state)
{
	struct gl_test_out o;
	(void)state;
	write_file(g_nodes, nodes_doc, strlen(nodes_doc));
	write_pods();
	/* the node facts first: replicas and GPUs per node */
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "kube-nodes", "--cluster", "k8s", "--file", g_nodes, "--at",
				     "2026-10-05T09:00:00Z", NULL),
			 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT replicas FROM node_gpu_spans WHERE node = 'ts-1'"), 4);
	/* the same nodes seen again at the window's end: its capacity is firm */
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "kube-nodes", "--cluster", "k8s", "--file", g_nodes, "--at",
				     "2026-10-05T12:00:00Z", NULL),
			 0);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "k8s", "--file", g_pods, "--at",
				     "2026-10-05T12:00:00Z", NULL),
			 0);
	/* two pods not billed as they ask: exit 4, both named */
	if (o.status != 4)
		fail_msg("ingest kube: exit %d: %s", o.status, o.err);
	assert_non_null(strstr(o.out, "\"skipped\":2"));
	gl_test_out_fini(&o);
	assert_string_equal(row_of("f1"), "500000/500000/runai/[\"GPU-l4-0000\"]/g1");
	assert_string_equal(row_of("f2"), "142857/142857/runai/[\"GPU-l4-0000\"]/g1");
	assert_string_equal(row_of("r0"), "0/0/runai_reservation/[\"GPU-l4-0000\"]/g1");
	assert_string_equal(row_of("h1"), "600000/600000/hami/[\"GPU-a100-0000\"]/-");
	assert_string_equal(row_of("h2"), "300000/300000/hami/[\"GPU-a100-0000\"]/-");
	/* 40 % asked of a GPU 90 % held: billed as asked, holds what is left */
	assert_string_equal(row_of("h3"), "400000/100000/hami/[\"GPU-a100-0000\"]/-");
	assert_string_equal(row_of("t1"), "250000/250000/timeslice/-/-");
	assert_string_equal(row_of("u1"), "0/0/none/-/-");
	assert_non_null(strstr(gl_test_qstr(g_c, "SELECT gpu_note FROM jobs WHERE job_key = 'pod:u1'"),
			       "unknown GPU resource 'gpu.intel.com/i915'"));
	/* the pods of each physical GPU hold at most that GPU */
	assert_int_equal(gl_test_qint(g_c, "SELECT max(s) FROM (SELECT sum(phys_micro) AS s FROM jobs j,"
					   " jsonb_array_elements_text(j.gpu_uuids) u GROUP BY u) x"),
			 1000000);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(phys_micro) FROM jobs WHERE nodes[1] = 'ts-1'"), 750000);
	/* the reasons, on /v1/ingest/runs */
	{
		cJSON *j = gl_test_get_json(g_d.port, "/v1/ingest/runs?source=kube", 200);
		char *s;
		assert_non_null(j);
		s = cJSON_PrintUnformatted(j);
		assert_non_null(strstr(s, "unknown GPU resource 'gpu.intel.com/i915'"));
		assert_non_null(strstr(s, "pod team-d/hami-40"));
		assert_non_null(strstr(s, "GPU GPU-a100-0000 of node hami-1"));
		free(s);
		cJSON_Delete(j);
	}
	/* a second ingest of the same snapshot changes nothing */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "k8s", "--file", g_pods, "--at",
				     "2026-10-05T12:00:00Z", NULL),
			 0);
	assert_int_equal(o.status, 4);
	assert_non_null(strstr(o.out, "\"inserted\":0,\"updated\":0"));
	gl_test_out_fini(&o);
}

/* What the three GPUs hold over [10:00, 12:00), micro-GPU-seconds:
 * hami-1 0.6 x 7200 + 0.3 x 6600 + 0.1 x 6000; ts-1 3 x 0.25 x 7200;
 * runai-1 (0.5 + 0.142857) x 7200; the reservation nothing. */
#define HELD_US (600000LL * 7200 + 300000LL * 6600 + 100000LL * 6000 + 3 * 250000LL * 7200 + 642857LL * 7200)
#define HELD_S ((HELD_US + 500000) / 1000000) /* 16929 */

static void test_capacity_conserves(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/capacity?window=" WINDOW "&step=hour", 200), *rows, *r;
	long long rep = 0, alloc = 0, idle = 0, unavail = 0;
	(void)state;
	assert_non_null(j);
	rows = cJSON_GetObjectItem(j, "rows");
	assert_true(cJSON_GetArraySize(rows) > 0);
	cJSON_ArrayForEach(r, rows) {
		long long a = num(r, "allocated_gpu_seconds"), rp = num(r, "reported_gpu_seconds");
		long long u = num(r, "down_gpu_seconds") + num(r, "planned_down_gpu_seconds") +
			      num(r, "reserved_gpu_seconds");
		/* every step, to the second */
		assert_int_equal(a + u + num(r, "idle_gpu_seconds"), rp);
		assert_int_equal(num(r, "over_gpu_seconds"), 0);
		rep += rp;
		alloc += a;
		idle += num(r, "idle_gpu_seconds");
		unavail += u;
	}
	assert_int_equal(rep, 3 * WIN_S);
	assert_true(alloc <= rep);
	/* hour by hour rounds each hour once: within a second of the whole */
	assert_true(alloc >= HELD_S - 1 && alloc <= HELD_S + 1);
	assert_int_equal(unavail, 0);
	assert_int_equal(alloc + idle, rep);
	cJSON_Delete(j);
	/* the window as one step: exactly the held GPU-seconds */
	j = gl_test_get_json(g_d.port, "/v1/capacity?window=" WINDOW, 200);
	assert_non_null(j);
	r = cJSON_GetObjectItem(j, "totals");
	assert_int_equal(num(r, "allocated_gpu_seconds"), HELD_S);
	assert_int_equal(num(r, "idle_gpu_seconds"), 3 * WIN_S - HELD_S);
	cJSON_Delete(j);
}

static const cJSON *item(const cJSON *items, const char *name)
{
	const cJSON *l;
	cJSON_ArrayForEach(l, items) {
		const cJSON *k = cJSON_GetObjectItem(l, "name");
		if (cJSON_IsString(k) && !strcmp(k->valuestring, name))
			return l;
	}
	return NULL;
}

static void test_chargeback_bills_shares(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=" WINDOW "&aggregate=namespace", 200), *items;
	const cJSON *l, *t;
	(void)state;
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "steps")), 1);
	items = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items");
	assert_non_null(items);
	/* a seventh of an L4 for 2 h at 0.80: 1,028.5704 GPU-s, 228,571.2 micros */
	l = item(items, "team-b");
	assert_non_null(l);
	assert_int_equal(num(l, "allocated_gpu_seconds"), 1029);
	assert_int_equal(num(l, "cost_micros"), 228571);
	/* h3 is billed the 40 % it asked for 6,000 s */
	l = item(items, "team-d");
	assert_non_null(l);
	assert_int_equal(num(l, "allocated_gpu_seconds"), 2400);
	/* the reservation's namespace pays nothing */
	l = item(items, "runai-reservation");
	assert_true(!l || num(l, "allocated_gpu_seconds") == 0);
	/* the fleet's idle is capacity less what is held, as /v1/capacity says */
	t = cJSON_GetObjectItem(j, "totals");
	assert_int_equal(num(t, "idle_gpu_seconds"), 3 * WIN_S - HELD_S);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ingest),
		cmocka_unit_test(test_capacity_conserves),
		cmocka_unit_test(test_chargeback_bills_shares),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
