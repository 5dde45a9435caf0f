/* Unit tests for src/sources/dcgm.c: mapping of real and hand-written
 * dcgm-exporter scrapes (tests/fixtures/dcgm/), sentinels, the idle policy
 * and the bucket rollup. Table-driven {input, want}. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/bounds.h"
#include "gl/dcgm.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOPE (-1.0e300) /* "metric absent" in want tables */

/* ---- sentinels ---------------------------------------------------------- */

struct blank_case {
	const char *line; /* hand-written */
	int want_blank;
};

static const struct blank_case blank_cases[] = {
	{"DCGM_FI_DEV_FB_USED{UUID=\"u\"} 2147483632", 1},
	{"DCGM_FI_DEV_FB_USED{UUID=\"u\"} 2147483633", 1},
	{"DCGM_FI_DEV_FB_USED{UUID=\"u\"} 2147483634", 1},
	{"DCGM_FI_DEV_FB_USED{UUID=\"u\"} 2147483635", 1},
	{"DCGM_FI_DEV_FB_USED{UUID=\"u\"} 2147483631", 0},
	{"DCGM_FI_DEV_FB_USED{UUID=\"u\"} 2147483636", 0},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID=\"u\"} 9223372036854775792", 1},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID=\"u\"} 9223372036854775795", 1},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{UUID=\"u\"} 9223372036854775", 0},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE{UUID=\"u\"} 140737488355328.000000", 1},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE{UUID=\"u\"} 140737488355331", 1},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE{UUID=\"u\"} 140737488355332", 0},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE{UUID=\"u\"} 140737488355328.5", 0},
	{"DCGM_FI_DEV_POWER_USAGE{UUID=\"u\"} ERROR - FAILED TO CONVERT TO STRING", 1},
	{"DCGM_FI_DEV_POWER_USAGE{UUID=\"u\"} <<<NULL>>>", 1},
	{"DCGM_FI_DEV_POWER_USAGE{UUID=\"u\"} NaN", 1},
	{"DCGM_FI_DEV_POWER_USAGE{UUID=\"u\"} +Inf", 1},
	{"DCGM_FI_DEV_POWER_USAGE{UUID=\"u\"} 0", 0},
	{"DCGM_FI_DEV_POWER_USAGE{UUID=\"u\"} 71.150000", 0},
};

static void test_blank_table(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < GL_ARRAY_LEN(blank_cases); i++) {
		struct gl_dcgm_scrape s;
		const char *l = blank_cases[i].line;
		int rc = gl_dcgm_scrape_parse(&s, l, strlen(l), NULL, NULL);
		assert_int_equal(rc, 0);
		assert_int_equal(s.ngpus, 1);
		if ((int)s.stats.blank != blank_cases[i].want_blank || (s.gpus[0].r.have != 0) == blank_cases[i].want_blank)
			fail_msg("'%s': blank %zu have %#x, want blank %d", l, s.stats.blank, s.gpus[0].r.have,
				 blank_cases[i].want_blank);
		gl_dcgm_scrape_fini(&s);
	}
}

static void test_metric_names(void **state)
{
	enum gl_dcgm_metric m;
	int i;
	(void)state;
	for (i = 0; i < GL_DCGM__NMETRICS; i++) {
		const char *n = gl_dcgm_metric_name((enum gl_dcgm_metric)i);
		assert_int_equal(gl_dcgm_metric_lookup((struct gl_str){n, strlen(n)}, &m), 0);
		assert_int_equal(m, i);
	}
	assert_int_equal(gl_dcgm_metric_lookup((struct gl_str){"DCGM_FI_DEV_SM_CLOCK", 20}, &m), -GL_ENOTFOUND);
	assert_int_equal(gl_dcgm_metric_lookup((struct gl_str){"DCGM_FI_DEV_FB_USED_PERCENT", 27}, &m),
			 -GL_ENOTFOUND);
}

/* ---- scrapes ------------------------------------------------------------ */

struct gpu_want {
	const char *host, *uuid;
	int gi_id;
	const char *profile, *model, *driver, *pci, *device;
	int gpu_index;
	const char *jobs;  /* comma-joined, in first-seen order */
	const char *pods;  /* "ns/pod/container;..." */
	double v[GL_DCGM__NMETRICS]; /* NOPE: absent */
	int busy;          /* default policy: 1, 0, or -1 for no data */
	size_t samples, blank;
};

struct scrape_case {
	const char *path;
	const char *node; /* opts.node */
	size_t ngpus;
	struct gl_dcgm_stats stats;
	struct gpu_want gpus[10];
};

#define T4A "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"
#define T4B "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"
#define H100 "GPU-00000000-0000-0000-0000-000000000000"
#define A100_0 "GPU-1a2b3c4d-0000-4000-8000-000000000000"
#define A100_1 "GPU-1a2b3c4d-0000-4000-8000-000000000001"
#define L40S "GPU-abcdef01-2345-6789-abcd-ef0123456789"
/* v[] order: ENGINE, UTIL, FB_USED, FB_FREE, POWER, ENERGY, MEM_COPY, TENSOR, DRAM, XID */
static const struct scrape_case scrape_cases[] = {
	/* real: two T4 hosts, then the redacted A10G with k8s labels */
	{"tests/fixtures/dcgm/datadog_dcgm_fixture_metrics.prom", NULL, 3,
	 {38, 24, 14, 0, 0, 0, 0, 0},
	 {{"424773df46e0", T4A, -1, "", "Tesla T4", "460.106.00", "", "nvidia0", 0, "", "",
	   {NOPE, 0, 0, 15109, 8.969, 128996013, 0, NOPE, NOPE, 0}, 0, 16, 0},
	  {"551bdf382151", T4B, -1, "", "Tesla T4", "470.182.03", "", "nvidia0", 0, "", "",
	   {NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, -1, 7, 0},
	  {"ip-11111", "GPU-abc", -1, "", "NVIDIA A10G", "550.144.03", "", "nvidia0", 0, "", "ray-llm/ray-1111111/ray-worker",
	   {NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, 0.000003, NOPE}, -1, 1, 0}}},
	/* real nvidia_gpu_exporter (nvidia_smi_*): ratios x 100, bytes in MiB,
	 * "GPU-" given back to the uuid; no hostname label, so --node names it
	 * (4 exporter-health series carry no uuid) */
	{"tests/fixtures/dcgm/nvidia_gpu_exporter_output__h100__load.prom", "h100-node", 1, {138, 134, 4, 0, 0, 0, 0, 0},
	 {{"h100-node", H100, -1, "", "NVIDIA H100 80GB HBM3", "590.48.01", "00000000:00:09.0", "", 0, "", "",
	   {NOPE, 1 * 100.0, 2.0780679168e+10 / 1048576.0, 6.4238911488e+10 / 1048576.0, 631.95, NOPE, 0.11 * 100.0, NOPE,
	    NOPE, NOPE}, 1, 134, 0}}},
	/* ... and without --node: the GPU has no host (the ingest refuses it) */
	{"tests/fixtures/dcgm/nvidia_gpu_exporter_output__h100__idle.prom", NULL, 1, {132, 128, 4, 0, 0, 0, 0, 0},
	 {{"", H100, -1, "", "NVIDIA H100 80GB HBM3", "590.48.01", "00000000:00:09.0", "", 0, "", "",
	   {NOPE, 0, 0, 8.5019590656e+10 / 1048576.0, 69.85, NOPE, 0, NOPE, NOPE, NOPE}, 0, 128, 0}}},
	/* real AMD Device Metrics Exporter lines (three MI300X boards, one in
	 * CPX whose partition-0 activity belongs to the whole board, an MI300X
	 * VF without serial); the Radeon and Strix lines have neither serial
	 * nor gpu_uuid: no GPU identity */
	{"tests/fixtures/dcgm/amd_dme_excerpts.prom", NULL, 4, {9, 4, 5, 0, 0, 0, 0, 0},
	 {{"tw038", "692409005408", -1, "", "AMD Instinct MI300X OAM", "6.12.12", "", "", 2, "", "",
	   {NOPE, 0, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, 0, 1, 0},
	  {"tw009", "692409005296", -1, "", "AMD Instinct MI300X OAM", "6.12.12", "", "", 47, "", "/default-metrics-exporter-vvvkm/",
	   {NOPE, 0, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, 0, 1, 0},
	  {"tw038", "692409005328", -1, "", "AMD Instinct MI300X OAM", "6.12.12", "", "", 0, "", "default/high-utilization-57ls6/workload",
	   {NOPE, 100, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, 1, 1, 0},
	  {"master-1", "17ff74b5-0000-1000-805c-37b0fbe69430", -1, "", "Aqua Vanjaram [Instinct MI300X VF]", "6.12.12", "", "", 0,
	   "", "", {NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, -1, 1, 0}}},
#define CPX(gi, idx, jobs, used, free) \
	{"mi300x-cpx-01", "692409005296", gi, "cpx", "AMD Instinct MI300X OAM", "6.12.12", "", "", idx, jobs, "", \
	 {NOPE, NOPE, used, free, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, -1, 6, 0}
	/* hand-written MI300X node: a CPX board's 8 partitions are GPU
	 * instances of its serial; the physical readings given on partition 0
	 * go to the board (gi -1), the zeros of partitions 1-7 are not read */
	{"tests/fixtures/dcgm/handwritten_amd_mi300x_cpx.prom", NULL, 10, {54, 54, 0, 0, 0, 0, 0, 28},
	 {{"mi300x-cpx-01", "692409005328", -1, "", "AMD Instinct MI300X OAM", "6.12.12", "", "", 0, "", "ml/train-0/trainer",
	   {NOPE, 87, 150211, 46381, 702, 9.118723456e+12 * 1e-3, 31, NOPE, NOPE, NOPE}, 1, 6, 0},
	  {"mi300x-cpx-01", "692409005296", -1, "", "AMD Instinct MI300X OAM", "6.12.12", "", "", 8, "", "",
	   {NOPE, 12, NOPE, NOPE, 211, 5.51234e+12 * 1e-3, 3, NOPE, NOPE, NOPE}, 1, 4, 0},
	  CPX(1, 9, "", 281, 24293), CPX(2, 10, "", 281, 24293), CPX(3, 11, "9001", 18244, 6330), CPX(4, 12, "", 281, 24293),
	  CPX(5, 13, "", 281, 24293), CPX(6, 14, "", 281, 24293), CPX(7, 15, "", 281, 24293),
	  {"mi300x-cpx-01", "692409005296", 0, "cpx", "AMD Instinct MI300X OAM", "6.12.12", "", "", 8, "", "",
	   {NOPE, NOPE, 281, 24293, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, -1, 2, 0}}},
#undef CPX
	/* hand-written MIG: parent + 4 GPU instances sharing the UUID */
	{"tests/fixtures/dcgm/handwritten_mig_h100.prom", NULL, 5, {23, 23, 0, 0, 0, 0, 0, 0},
	 {{"h100-mig-node", H100, -1, "", "NVIDIA H100 80GB HBM3", "590.48.01", "00000000:00:09.0", "nvidia0", 0, "", "",
	   {NOPE, NOPE, NOPE, NOPE, 98, 4190755214, NOPE, NOPE, NOPE, 0}, -1, 3, 0},
	  {"h100-mig-node", H100, 2, "3g.40gb", "NVIDIA H100 80GB HBM3", "590.48.01", "00000000:00:09.0", "nvidia0", 0, "", "",
	   {0.981234, NOPE, 11091, 29357, NOPE, NOPE, NOPE, 0.412, 0.233, NOPE}, 1, 5, 0},
	  {"h100-mig-node", H100, 3, "2g.20gb", "NVIDIA H100 80GB HBM3", "590.48.01", "00000000:00:09.0", "nvidia0", 0, "", "",
	   {0.00006, NOPE, 17, 20079, NOPE, NOPE, NOPE, 0, 0.000002, NOPE}, 0, 5, 0},
	  {"h100-mig-node", H100, 9, "1g.10gb", "NVIDIA H100 80GB HBM3", "590.48.01", "00000000:00:09.0", "nvidia0", 0, "", "",
	   {0, NOPE, 9, 9975, NOPE, NOPE, NOPE, 0, 0.000002, NOPE}, 0, 5, 0},
	  {"h100-mig-node", H100, 10, "1g.10gb", "NVIDIA H100 80GB HBM3", "590.48.01", "00000000:00:09.0", "nvidia0", 0, "", "",
	   {0.000061, NOPE, 9, 9975, NOPE, NOPE, NOPE, 0, 0.000002, NOPE}, 0, 5, 0}}},
	/* hand-written Slurm: GPU 0's samples repeat per job and must not add up */
	{"tests/fixtures/dcgm/handwritten_slurm_hpc_job.prom", NULL, 2, {18, 18, 0, 0, 0, 0, 0, 0},
	 {{"gpu-node-07", A100_0, -1, "", "NVIDIA A100-SXM4-80GB", "550.54.14", "00000000:3B:00.0", "nvidia0", 0,
	   "4242,4243", "", {0.412345, 37, 30512, 50407, 312.5, 912345678, NOPE, NOPE, NOPE, NOPE}, 1, 12, 0},
	  {"gpu-node-07", A100_1, -1, "", "NVIDIA A100-SXM4-80GB", "550.54.14", "00000000:86:00.0", "nvidia1", 1,
	   "4250", "", {0.00006, 0, 0, 80919, 61.2, 512000000, NOPE, NOPE, NOPE, NOPE}, 0, 6, 0}}},
	/* hand-written federate: exported_* wins; hostname label is the exporter pod */
	{"tests/fixtures/dcgm/handwritten_k8s_federate.prom", NULL, 1, {4, 4, 0, 0, 2, 0, 0, 0},
	 {{"dcgm-exporter-x7k2p", L40S, -1, "", "NVIDIA L40S", "595.80", "00000000:41:00.0", "nvidia0", 0, "",
	   "ml-team/train-7f9c-0/trainer", {0.912, 88, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, 1, 4, 2}}},
	/* ... and with the node name given by the caller */
	{"tests/fixtures/dcgm/handwritten_k8s_federate.prom", "node-a1", 1, {4, 4, 0, 0, 2, 0, 0, 0},
	 {{"node-a1", L40S, -1, "", "NVIDIA L40S", "595.80", "00000000:41:00.0", "nvidia0", 0, "",
	   "ml-team/train-7f9c-0/trainer", {0.912, 88, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE, NOPE}, 1, 4, 2}}},
};

static void join_jobs(const struct gl_dcgm_gpu *g, char *out, size_t n)
{
	size_t i;
	out[0] = '\0';
	for (i = 0; i < g->njobs; i++) {
		if (i)
			strncat(out, ",", n - strlen(out) - 1);
		strncat(out, g->jobs[i], n - strlen(out) - 1);
	}
}

static void join_pods(const struct gl_dcgm_gpu *g, char *out, size_t n)
{
	size_t i;
	out[0] = '\0';
	for (i = 0; i < g->npods; i++) {
		size_t l = strlen(out);
		snprintf(out + l, n - l, "%s%s/%s/%s", i ? ";" : "", g->pods[i].ns, g->pods[i].pod, g->pods[i].container);
	}
}

static void check_gpu(const char *path, const struct gl_dcgm_gpu *g, const struct gpu_want *w)
{
	static const struct gl_dcgm_idle_policy pol = GL_DCGM_IDLE_POLICY_DEFAULT;
	char buf[512];
	int m, busy = -1, rc;

	assert_non_null(g);
	assert_string_equal(g->hostname, w->host);
	assert_string_equal(g->uuid, w->uuid);
	assert_int_equal(g->gi_id, w->gi_id);
	assert_string_equal(g->gi_profile, w->profile);
	assert_string_equal(g->model, w->model);
	assert_string_equal(g->driver_version, w->driver);
	assert_string_equal(g->pci_bus_id, w->pci);
	assert_string_equal(g->device, w->device);
	assert_int_equal(g->gpu_index, w->gpu_index);
	join_jobs(g, buf, sizeof buf);
	assert_string_equal(buf, w->jobs);
	join_pods(g, buf, sizeof buf);
	assert_string_equal(buf, w->pods);
	for (m = 0; m < GL_DCGM__NMETRICS; m++) {
		int has = gl_dcgm_reading_has(&g->r, (enum gl_dcgm_metric)m);
		if (has != (w->v[m] != NOPE) || (has && g->r.v[m] != w->v[m]))
			fail_msg("%s %s/%d: %s: have %d value %.17g, want %.17g", path, w->uuid, w->gi_id,
				 gl_dcgm_metric_name((enum gl_dcgm_metric)m), has, has ? g->r.v[m] : 0, w->v[m]);
	}
	rc = gl_dcgm_reading_is_busy(&pol, &g->r, &busy);
	if (rc == -GL_ENOTFOUND)
		busy = -1;
	if (busy != w->busy)
		fail_msg("%s %s/%d: busy %d want %d", path, w->uuid, w->gi_id, busy, w->busy);
	assert_int_equal(g->samples, w->samples);
	assert_int_equal(g->blank, w->blank);
	assert_int_equal(g->conflicts, 0);
}

static void test_scrape_table(void **state)
{
	size_t i, j;
	(void)state;
	for (i = 0; i < GL_ARRAY_LEN(scrape_cases); i++) {
		const struct scrape_case *c = &scrape_cases[i];
		struct gl_dcgm_opts o = {c->node};
		struct gl_dcgm_scrape s;
		size_t len;
		char *buf = gl_test_read_file(c->path, &len);

		assert_int_equal(gl_dcgm_scrape_parse(&s, buf, len, &o, NULL), 0);
		/* nothing may point into the input */
		memset(buf, 'x', len);
		free(buf);
		if (s.ngpus != c->ngpus || memcmp(&s.stats, &c->stats, sizeof s.stats) != 0)
			fail_msg("%s: ngpus %zu (want %zu) samples %zu mapped %zu no_uuid %zu not_dcgm %zu blank %zu "
				 "conflicts %zu bad_ident %zu",
				 c->path, s.ngpus, c->ngpus, s.stats.samples, s.stats.mapped, s.stats.no_uuid,
				 s.stats.not_dcgm, s.stats.blank, s.stats.conflicts, s.stats.bad_ident);
		assert_int_equal(s.parse.bad_lines, 0);
		for (j = 0; j < c->ngpus; j++) {
			const struct gpu_want *w = &c->gpus[j];
			/* first-seen order, and the index finds the same record */
			check_gpu(c->path, &s.gpus[j], w);
			assert_ptr_equal(gl_dcgm_scrape_find(&s, w->host, w->uuid, w->gi_id), &s.gpus[j]);
		}
		assert_null(gl_dcgm_scrape_find(&s, "nope", "nope", -1));
		gl_dcgm_scrape_fini(&s);
	}
}

/* ---- hand-written inline scrapes --------------------------------------- */

struct inline_case {
	const char *name;
	const char *input; /* hand-written */
	size_t ngpus;
	size_t blank, conflicts, no_uuid, bad_ident;
	size_t bad_lines;
	const char *gpu0_jobs, *gpu0_host;
	double gpu0_util; /* NOPE: absent */
};

static const struct inline_case inline_cases[] = {
	{"label spellings: Hostname/UUID and hostname/uuid are the same GPU",
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",Hostname=\"n1\"} 5\n"
	 "DCGM_FI_DEV_FB_USED{uuid=\"GPU-1\",hostname=\"n1\"} 100\n",
	 1, 0, 0, 0, 0, 0, "", "n1", 5},
	{"hpc_job repeats: set of jobs, first value kept, disagreement counted",
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",Hostname=\"n1\",hpc_job=\"7\"} 40\n"
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",Hostname=\"n1\",hpc_job=\"8\"} 40\n"
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",Hostname=\"n1\",hpc_job=\"7\"} 41\n",
	 1, 0, 1, 0, 0, 0, "7,8", "n1", 40},
	{"blank first, real value from a repeat",
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",hpc_job=\"7\"} 2147483632\n"
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",hpc_job=\"8\"} 12\n",
	 1, 1, 0, 0, 0, 0, "7,8", "", 12},
	{"same UUID on two hosts are two GPUs (key includes the host)",
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",Hostname=\"n1\"} 1\n"
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",Hostname=\"n2\"} 2\n",
	 2, 0, 0, 0, 0, 0, "", "n1", 1},
	{"no UUID, bad GPU_I_ID, foreign metric",
	 "DCGM_FI_DEV_GPU_UTIL 3\nDCGM_FI_DEV_GPU_UTIL{UUID=\"\"} 3\n"
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",GPU_I_ID=\"x\"} 3\nnode_load1{UUID=\"GPU-1\"} 3\n",
	 0, 0, 0, 2, 1, 0, "", "", NOPE},
	{"empty GPU_I_ID is a whole GPU",
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\",GPU_I_ID=\"\",GPU_I_PROFILE=\"\"} 9\n", 1, 0, 0, 0, 0, 0, "", "", 9},
	{"garbage line between good ones: counted, rest kept",
	 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\"} 1\n}}}garbage{{{\nDCGM_FI_DEV_FB_USED{UUID=\"GPU-1\"} 2\n",
	 1, 0, 0, 0, 0, 1, "", "", 1},
};

static void test_inline_table(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < GL_ARRAY_LEN(inline_cases); i++) {
		const struct inline_case *c = &inline_cases[i];
		struct gl_dcgm_scrape s;
		char jobs[256];

		assert_int_equal(gl_dcgm_scrape_parse(&s, c->input, strlen(c->input), NULL, NULL), 0);
		if (s.ngpus != c->ngpus || s.stats.blank != c->blank || s.stats.conflicts != c->conflicts ||
		    s.stats.no_uuid != c->no_uuid || s.stats.bad_ident != c->bad_ident ||
		    s.parse.bad_lines != c->bad_lines)
			fail_msg("'%s': ngpus %zu blank %zu conflicts %zu no_uuid %zu bad_ident %zu bad_lines %zu", c->name,
				 s.ngpus, s.stats.blank, s.stats.conflicts, s.stats.no_uuid, s.stats.bad_ident,
				 s.parse.bad_lines);
		if (s.ngpus) {
			const struct gl_dcgm_gpu *g = &s.gpus[0];
			join_jobs(g, jobs, sizeof jobs);
			assert_string_equal(jobs, c->gpu0_jobs);
			assert_string_equal(g->hostname, c->gpu0_host);
			assert_int_equal(g->gi_id, -1);
			if (c->gpu0_util == NOPE)
				assert_false(gl_dcgm_reading_has(&g->r, GL_DCGM_GPU_UTIL));
			else
				assert_true(g->r.v[GL_DCGM_GPU_UTIL] == c->gpu0_util);
		}
		gl_dcgm_scrape_fini(&s);
	}
	gl_dcgm_scrape_fini(NULL);
}

/* Found by the fuzzer (hand-written reduction): a NUL byte inside the UUID
 * made the stored C-string key differ from the hashed one. Identity with a
 * NUL is dropped; other label values are cut at the NUL. */
/* Each kept label is held to its own bound, however short the others:
 * at the bound the sample maps, one byte over it is dropped and counted
 * with the label, the bound and the line; a long label that is not kept
 * (description) costs nothing. */
static void test_label_bounds(void **state)
{
	static const struct {
		const char *label;
		enum gl_bounds k;
	} cases[] = {
		{"Hostname", GL_BOUNDS_NODE}, {"UUID", GL_BOUNDS_UUID}, {"modelName", GL_BOUNDS_GPU_MODEL},
		{"pci_bus_id", GL_BOUNDS_TEXT}, {"hpc_job", GL_BOUNDS_JOB_ID}, {"namespace", GL_BOUNDS_NAMESPACE},
		{"pod", GL_BOUNDS_OBJECT},
	};
	size_t cap = 3 * gl_bounds_max(GL_BOUNDS_TEXT) + 1024;
	char *in = malloc(cap), *big = malloc(cap), want[200];
	(void)state;
	assert_non_null(in);
	assert_non_null(big);
	memset(big, 'a', cap);
	for (size_t c = 0; c < 2 * (sizeof cases / sizeof cases[0]); c++)
		for (size_t over = 0; over <= 1; over++) {
			struct gl_dcgm_scrape s;
			int desc = c % 2 ? (int)(2 * gl_bounds_max(GL_BOUNDS_TEXT)) : 1;
			size_t len = gl_bounds_max(cases[c / 2].k) + over;
			int uuid = !strcmp(cases[c / 2].label, "UUID");
			int n = snprintf(in, cap,
					 "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",%s%s=\"%s%.*s\",description=\"%.*s\"} 7\n",
					 uuid ? "" : "UUID=\"GPU-1\",", cases[c / 2].label, uuid ? "GPU-" : "",
					 (int)(uuid ? len - 4 : len), big, desc, big);
			assert_int_equal(gl_dcgm_scrape_parse(&s, in, (size_t)n, NULL, NULL), 0);
			if (!over) {
				if (s.ngpus != 1 || s.too_long)
					fail_msg("%s at its bound: %zu GPUs, %zu too long (%s)", cases[c / 2].label, s.ngpus,
						 s.too_long, s.too_long_reason);
			} else {
				assert_int_equal(s.ngpus, 0);
				assert_int_equal(s.too_long, 1);
				assert_int_equal(s.too_long_line, 1);
				snprintf(want, sizeof want, "label %s: %zu bytes, over the %zu-byte bound of", cases[c / 2].label,
					 len, len - 1);
				if (!strstr(s.too_long_reason, want))
					fail_msg("got '%s', want '%s'", s.too_long_reason, want);
			}
			gl_dcgm_scrape_fini(&s);
		}
	free(in);
	free(big);
}

static void test_nul_in_labels(void **state)
{
	static const char in[] = "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-1\0x\"} 1\n"
				 "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-2\",hpc_job=\"7\0a\"} 2\n"
				 "DCGM_FI_DEV_FB_USED{UUID=\"GPU-2\",hpc_job=\"7\0b\"} 3\n";
	struct gl_dcgm_scrape s;
	(void)state;
	assert_int_equal(gl_dcgm_scrape_parse(&s, in, sizeof in - 1, NULL, NULL), 0);
	assert_int_equal(s.stats.bad_ident, 1);
	assert_int_equal(s.ngpus, 1);
	assert_string_equal(s.gpus[0].uuid, "GPU-2");
	assert_int_equal(s.gpus[0].njobs, 1);
	assert_string_equal(s.gpus[0].jobs[0], "7");
	assert_ptr_equal(gl_dcgm_scrape_find(&s, "", "GPU-2", -1), &s.gpus[0]);
	gl_dcgm_scrape_fini(&s);
}

/* ---- idle policy -------------------------------------------------------- */

#define R(eng, util, fb, pw)                                                                        \
	{{[GL_DCGM_ENGINE_ACTIVE] = (eng), [GL_DCGM_GPU_UTIL] = (util), [GL_DCGM_FB_USED_MIB] = (fb),     \
	  [GL_DCGM_POWER_W] = (pw)},                                                                    \
	 (uint32_t)(((eng) != NOPE) << GL_DCGM_ENGINE_ACTIVE | ((util) != NOPE) << GL_DCGM_GPU_UTIL |      \
		    ((fb) != NOPE) << GL_DCGM_FB_USED_MIB | ((pw) != NOPE) << GL_DCGM_POWER_W)}

struct policy_case {
	const char *name;
	struct gl_dcgm_idle_policy pol;
	struct gl_dcgm_reading r;
	int want; /* 1 busy, 0 idle, -1 no data */
};

static const struct policy_case policy_cases[] = {
	{"idle MIG reads 0.00006", GL_DCGM_IDLE_POLICY_DEFAULT, R(0.00006, NOPE, NOPE, NOPE), 0},
	{"threshold is inclusive for busy", GL_DCGM_IDLE_POLICY_DEFAULT, R(0.01, NOPE, NOPE, NOPE), 1},
	{"engine wins over util", GL_DCGM_IDLE_POLICY_DEFAULT, R(0.5, 0, NOPE, NOPE), 1},
	{"engine idle wins over util busy", GL_DCGM_IDLE_POLICY_DEFAULT, R(0.001, 100, NOPE, NOPE), 0},
	{"util fallback idle", GL_DCGM_IDLE_POLICY_DEFAULT, R(NOPE, 0, NOPE, NOPE), 0},
	{"util fallback busy", GL_DCGM_IDLE_POLICY_DEFAULT, R(NOPE, 37, NOPE, NOPE), 1},
	{"fallback off", {0.01, 0, 0, 0, 0}, R(NOPE, 37, NOPE, NOPE), -1},
	{"nothing usable", GL_DCGM_IDLE_POLICY_DEFAULT, R(NOPE, NOPE, 30000, 300), -1},
	{"memory busy", {0.01, 1, 1, 0, 0}, R(0.0, NOPE, 512, NOPE), 1},
	{"memory under threshold", {0.01, 1, 1, 1024, 0}, R(0.0, NOPE, 512, NOPE), 0},
	{"memory alone can say busy", {0.01, 1, 1, 0, 0}, R(NOPE, NOPE, 512, NOPE), 1},
	{"memory alone cannot say idle", {0.01, 1, 1, 0, 0}, R(NOPE, NOPE, 0, NOPE), -1},
	{"memory option off ignores memory", GL_DCGM_IDLE_POLICY_DEFAULT, R(0.0, NOPE, 70000, NOPE), 0},
	{"power busy", {0.01, 1, 0, 0, 100}, R(0.0, NOPE, NOPE, 150), 1},
	{"power under threshold", {0.01, 1, 0, 0, 100}, R(0.0, NOPE, NOPE, 60), 0},
	{"power off", GL_DCGM_IDLE_POLICY_DEFAULT, R(0.0, NOPE, NOPE, 600), 0},
	{"power alone cannot say idle", {0.01, 1, 0, 0, 100}, R(NOPE, NOPE, NOPE, 60), -1},
	{"custom threshold", {0.2, 1, 0, 0, 0}, R(0.15, NOPE, NOPE, NOPE), 0},
};

static void test_policy_table(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < GL_ARRAY_LEN(policy_cases); i++) {
		const struct policy_case *c = &policy_cases[i];
		int busy = 42, rc = gl_dcgm_reading_is_busy(&c->pol, &c->r, &busy);
		int got = rc == -GL_ENOTFOUND ? -1 : busy;
		if (rc != 0 && rc != -GL_ENOTFOUND)
			fail_msg("'%s': rc %d", c->name, rc);
		if (got != c->want)
			fail_msg("'%s': got %d want %d", c->name, got, c->want);
		if (rc == -GL_ENOTFOUND)
			assert_int_equal(busy, 42);
	}
}

/* ---- bucket ------------------------------------------------------------- */

struct step {
	int64_t t_s;
	double energy, engine, fb; /* NOPE: absent */
	int want_rc;
};

struct bucket_case {
	const char *name;
	int64_t len_s;
	struct step steps[8];
	size_t nsteps;
	uint32_t samples, busy, nodata, resets;
	double energy_mj, fb_max;
	int want_idle; /* 1, 0, -1 no data */
};

static const struct bucket_case bucket_cases[] = {
	{"steady counter", 300, {{0, 1000, 0.5, 10, 0}, {30, 1500, 0.0, 20, 0}, {60, 2100, 0.0, 5, 0}}, 3,
	 3, 1, 0, 0, 1100, 20, 0},
	{"counter reset adds the new value, not a negative delta", 300,
	 {{0, 1000, 0.0, NOPE, 0}, {30, 1500, 0.0, NOPE, 0}, {60, 200, 0.0, NOPE, 0}, {90, 700, 0.0, NOPE, 0}}, 4,
	 4, 0, 0, 1, 1200, -1, 1},
	{"all idle", 300, {{10, NOPE, 0.00006, NOPE, 0}, {40, NOPE, 0.0, NOPE, 0}}, 2, 2, 0, 0, 0, 0, -1, 1},
	{"idle plus no data is idle", 300, {{10, NOPE, 0.00006, NOPE, 0}, {40, NOPE, NOPE, NOPE, 0}}, 2, 2, 0, 1, 0, 0,
	 -1, 1},
	{"no data only", 300, {{10, 5, NOPE, 100, 0}, {40, 6, NOPE, NOPE, 0}}, 2, 2, 0, 2, 0, 1, 100, -1},
	{"out of bucket and out of order are refused", 300,
	 {{10, NOPE, 0.5, NOPE, 0}, {300, NOPE, 0.5, NOPE, -GL_ERANGE}, {-1, NOPE, 0.5, NOPE, -GL_ERANGE},
	  {10, NOPE, 0.5, NOPE, -GL_EINVAL}, {5, NOPE, 0.5, NOPE, -GL_EINVAL}, {299, NOPE, 0.5, NOPE, 0}},
	 6, 2, 2, 0, 0, 0, -1, 0},
};

static struct gl_dcgm_reading mk(const struct step *s)
{
	struct gl_dcgm_reading r;
	memset(&r, 0, sizeof r);
	if (s->energy != NOPE) {
		r.v[GL_DCGM_ENERGY_MJ] = s->energy;
		r.have |= 1u << GL_DCGM_ENERGY_MJ;
	}
	if (s->engine != NOPE) {
		r.v[GL_DCGM_ENGINE_ACTIVE] = s->engine;
		r.have |= 1u << GL_DCGM_ENGINE_ACTIVE;
	}
	if (s->fb != NOPE) {
		r.v[GL_DCGM_FB_USED_MIB] = s->fb;
		r.have |= 1u << GL_DCGM_FB_USED_MIB;
	}
	return r;
}

static void test_bucket_table(void **state)
{
	static const struct gl_dcgm_idle_policy pol = GL_DCGM_IDLE_POLICY_DEFAULT;
	size_t i, j;
	(void)state;
	for (i = 0; i < GL_ARRAY_LEN(bucket_cases); i++) {
		const struct bucket_case *c = &bucket_cases[i];
		struct gl_dcgm_bucket b;
		int idle = 42, rc;

		gl_dcgm_bucket_init(&b, c->steps[0].t_s, c->len_s);
		for (j = 0; j < c->nsteps; j++) {
			struct gl_dcgm_reading r = mk(&c->steps[j]);
			rc = gl_dcgm_bucket_add(&b, &pol, c->steps[j].t_s, &r);
			if (rc != c->steps[j].want_rc)
				fail_msg("'%s' step %zu: rc %d want %d", c->name, j, rc, c->steps[j].want_rc);
		}
		rc = gl_dcgm_bucket_is_idle(&b, &idle);
		if (rc == -GL_ENOTFOUND)
			idle = -1;
		if (b.samples != c->samples || b.busy_samples != c->busy || b.nodata_samples != c->nodata ||
		    b.energy_resets != c->resets || b.energy_mj != c->energy_mj || b.fb_used_max_mib != c->fb_max ||
		    idle != c->want_idle)
			fail_msg("'%s': samples %u busy %u nodata %u resets %u energy %g fb %g idle %d", c->name, b.samples,
				 b.busy_samples, b.nodata_samples, b.energy_resets, b.energy_mj, b.fb_used_max_mib, idle);
	}
}

static void test_bucket_carry_and_align(void **state)
{
	static const struct gl_dcgm_idle_policy pol = GL_DCGM_IDLE_POLICY_DEFAULT;
	struct gl_dcgm_bucket a, b;
	struct step s1 = {310, 1000, 0.5, NOPE, 0}, s2 = {590, 1100, 0.2, NOPE, 0}, s3 = {600, 1300, 0.0, NOPE, 0};
	struct gl_dcgm_reading r;
	double mean;
	(void)state;

	gl_dcgm_bucket_init(&a, 310, 0);
	assert_int_equal(a.start_s, 300);
	assert_int_equal(a.len_s, GL_DCGM_BUCKET_S);
	assert_int_equal(gl_dcgm_bucket_engine_mean(&a, &mean), -GL_ENOTFOUND);
	r = mk(&s1);
	assert_int_equal(gl_dcgm_bucket_add(&a, &pol, s1.t_s, &r), 0);
	r = mk(&s2);
	assert_int_equal(gl_dcgm_bucket_add(&a, &pol, s2.t_s, &r), 0);
	assert_true(a.energy_mj == 100);
	assert_int_equal(gl_dcgm_bucket_engine_mean(&a, &mean), 0);
	assert_true(fabs(mean - 0.35) < 1e-12);

	/* the energy between 590 and 600 belongs to the next bucket, counted once */
	gl_dcgm_bucket_next(&b, &a, 600);
	assert_int_equal(b.start_s, 600);
	r = mk(&s3);
	assert_int_equal(gl_dcgm_bucket_add(&b, &pol, s3.t_s, &r), 0);
	assert_true(b.energy_mj == 200);
	assert_int_equal(b.samples, 1);

	gl_dcgm_bucket_init(&a, -1, 300);
	assert_int_equal(a.start_s, -300);
	gl_dcgm_bucket_init(&a, -300, 300);
	assert_int_equal(a.start_s, -300);
}

/* ---- the exporters beside DCGM --------------------------------------------- */

static void parse_inline(const char *text, const char *node, struct gl_dcgm_scrape *s)
{
	struct gl_dcgm_opts o = {node};
	assert_int_equal(gl_dcgm_scrape_parse(s, text, strlen(text), &o, NULL), 0);
}

/* HAND-WRITTEN: the family of each GPU, AMD's prefix and ranges, and the
 * sentence a scrape without a usable GPU gets. */
static void test_exporter_families(void **state)
{
	static const char mixed[] =
		"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n1\"} 5\n"
		"nvidia_smi_utilization_gpu_ratio{uuid=\"b\"} 0.25\n"
		"nvidia_smi_utilization_gpu_ratio{uuid=\"GPU-a\"} 0.07\n"
		"amd_gpu_gfx_activity{gpu_id=\"1\",serial_number=\"S1\",hostname=\"n1\"} 40\n"
		"gpu_used_vram{gpu_id=\"1\",serial_number=\"S1\",hostname=\"n1\"} 1.8446744073709552e+19\n"
		"gpu_umc_activity{gpu_id=\"1\",serial_number=\"S1\",hostname=\"n1\"} 65535\n"
		"gpu_power_usage{gpu_id=\"1\",serial_number=\"S1\",hostname=\"n1\"} -1\n"
		"gpu_temperature{hostname=\"n1\"} 40\n"
		"node_load1 0.5\n";
	struct gl_dcgm_scrape s;
	const struct gl_dcgm_gpu *g;
	char why[400];
	(void)state;

	parse_inline(mixed, "n1", &s);
	assert_int_equal(s.ngpus, 3);
	/* dcgm-exporter and nvidia_gpu_exporter name the same GPU: one record,
	 * the first value kept and the other counted as a conflict */
	g = gl_dcgm_scrape_find(&s, "n1", "GPU-a", -1);
	assert_non_null(g);
	assert_string_equal(g->source, "dcgm");
	assert_true(g->r.v[GL_DCGM_GPU_UTIL] == 5);
	assert_int_equal(g->conflicts, 1);
	g = gl_dcgm_scrape_find(&s, "n1", "GPU-b", -1);
	assert_string_equal(g->source, "nvidia_smi");
	assert_true(g->r.v[GL_DCGM_GPU_UTIL] == 25);
	g = gl_dcgm_scrape_find(&s, "n1", "S1", -1);
	assert_string_equal(g->source, "amd");
	assert_true(g->r.v[GL_DCGM_GPU_UTIL] == 40);
	/* all ones, 65535 % and a negative power are "not available" */
	assert_int_equal(g->r.have, 1u << GL_DCGM_GPU_UTIL);
	assert_int_equal(g->blank, 3);
	assert_int_equal(s.stats.no_uuid, 1);   /* gpu_temperature without gpu_id */
	assert_int_equal(s.stats.not_dcgm, 1);  /* node_load1 */
	assert_null(gl_dcgm_scrape_why_empty(&s, why, sizeof why));
	gl_dcgm_scrape_fini(&s);

	/* dcgm-exporter --no-hostname, as in NVIDIA's documentation sample */
	parse_inline("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 0\n", NULL, &s);
	assert_non_null(gl_dcgm_scrape_why_empty(&s, why, sizeof why));
	assert_non_null(strstr(why, "1 GPUs but no Hostname/hostname label"));
	assert_non_null(strstr(why, "--node NAME"));
	assert_non_null(strstr(why, "targets_file"));
	gl_dcgm_scrape_fini(&s);
	parse_inline("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 0\n", "n7", &s);
	assert_null(gl_dcgm_scrape_why_empty(&s, why, sizeof why));
	gl_dcgm_scrape_fini(&s);
	parse_inline("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"n1\"} 0\n", NULL, &s);
	assert_non_null(strstr(gl_dcgm_scrape_why_empty(&s, why, sizeof why), "carry no GPU identity"));
	gl_dcgm_scrape_fini(&s);
	parse_inline("node_load1 0.5\n", NULL, &s);
	assert_non_null(strstr(gl_dcgm_scrape_why_empty(&s, why, sizeof why), "no GPU exporter samples"));
	gl_dcgm_scrape_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blank_table),
		cmocka_unit_test(test_metric_names),
		cmocka_unit_test(test_scrape_table),
		cmocka_unit_test(test_inline_table),
		cmocka_unit_test(test_nul_in_labels),
		cmocka_unit_test(test_label_bounds),
		cmocka_unit_test(test_exporter_families),
		cmocka_unit_test(test_policy_table),
		cmocka_unit_test(test_bucket_table),
		cmocka_unit_test(test_bucket_carry_and_align),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
