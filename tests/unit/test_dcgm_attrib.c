/* Unit tests for src/ingest/dcgm_attrib.c: which job a GPU sample belongs
 * to. Table-driven {gpus, jobs, want}; every case is hand-written, plus the
 * real hpc_job and k8s fixtures mapped through gl_dcgm_scrape_parse. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/dcgm_attrib.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const N_GPU01[] = {"gpu01"};
static const char *const N_GPU0102[] = {"gpu01", "gpu02"};
static const char *const N_GPU02[] = {"gpu02"};
static const char *const N_NODE7[] = {"gpu-node-07"};
static const char *const J5[] = {"5"};
static const char *const J9[] = {"9"};
static const char *const J11_13[] = {"11", "13"};
static const char *const J404[] = {"404"};
static const char *const J14[] = {"14"};
static const struct gl_dcgm_pod POD_TRAIN[] = {{"ml-team", "train-7f9c-0", "trainer"}};
static const struct gl_dcgm_pod POD_EXPORTER[] = {{"gpu-operator", "", ""}};

/* milli: GPUs held x 1000, as the cases were written (the jobs hold micro-GPUs) */
#define JOB(pk, id, raw, het, ns, name, milli, nodes) \
	{pk, id, raw, het, ns, name, (milli) * 1000, 1000 * (pk), nodes, sizeof(nodes) / sizeof(nodes[0])}
#define NOJOBS NULL, 0
#define NOPODS NULL, 0

/* "pk:share:kind" per share, grouped per GPU with " | " */
static void render(const struct gl_dcgm_attrib_share *s, size_t n, size_t ngpus, char *buf, size_t len)
{
	size_t k = 0, off = 0;
	buf[0] = '\0';
	for (size_t g = 0; g < ngpus; g++) {
		if (g)
			off += (size_t)snprintf(buf + off, len - off, " | ");
		if (k == n || s[k].gpu != g)
			off += (size_t)snprintf(buf + off, len - off, "-");
		for (int first = 1; k < n && s[k].gpu == g; k++, first = 0) {
			off += (size_t)snprintf(buf + off, len - off, "%s%lld:%.3g:%s", first ? "" : " ", (long long)s[k].job_pk,
						s[k].share, gl_dcgm_attrib_kind_name(s[k].kind));
			assert_int_equal(s[k].job_start_s, 1000 * s[k].job_pk);
		}
	}
}

static void check(const struct gl_dcgm_attrib_gpu *g, size_t ng, const struct gl_dcgm_attrib_job *j, size_t nj, const char *want)
{
	struct gl_dcgm_attrib_share *s = NULL;
	size_t n = 0;
	char buf[1024];
	gl_dcgm_attrib_assign(g, ng, j, nj, &s, &n);
	render(s, n, ng, buf, sizeof buf);
	if (strcmp(buf, want))
		fail_msg("got  %s\nwant %s", buf, want);
	free(s);
}

static void test_node_exclusive_and_estimated(void **state)
{
	/* hand-written: the Slurm testbed's gpu01/gpu02 */
	const struct gl_dcgm_attrib_gpu four01[] = {{"gpu01", NOJOBS, NOPODS, 0}, {"gpu01", NOJOBS, NOPODS, 0},
					       {"gpu01", NOJOBS, NOPODS, 0}, {"gpu01", NOJOBS, NOPODS, 0}};
	const struct gl_dcgm_attrib_gpu two02[] = {{"gpu02", NOJOBS, NOPODS, 0}, {"gpu02", NOJOBS, NOPODS, 0}};
	const struct gl_dcgm_attrib_job one4[] = {JOB(4, "4", "4", "", "", "gpu4", 4000, N_GPU01)};
	const struct gl_dcgm_attrib_job one2[] = {JOB(2, "2", "2", "", "", "gpu1", 1000, N_GPU01)};
	const struct gl_dcgm_attrib_job mix[] = {JOB(2, "2", "2", "", "", "gpu1", 1000, N_GPU01),
					    JOB(3, "3", "3", "", "", "gpu2", 2000, N_GPU01),
					    JOB(7, "7", "7", "", "", "cpu", 0, N_GPU01)};
	const struct gl_dcgm_attrib_job over[] = {JOB(2, "2", "2", "", "", "a", 4000, N_GPU01),
					     JOB(3, "3", "3", "", "", "b", 4000, N_GPU01)};
	/* 8 GPUs over two nodes: 4 per node, exclusive on each */
	const struct gl_dcgm_attrib_job wide[] = {JOB(6, "6", "6", "", "", "gpu8", 8000, N_GPU0102)};
	const struct gl_dcgm_attrib_job other_node[] = {JOB(4, "4", "4", "", "", "gpu4", 4000, N_GPU02)};

	check(four01, 4, one4, 1, "4:1:node-exclusive | 4:1:node-exclusive | 4:1:node-exclusive | 4:1:node-exclusive");
	/* one job holding 1 of 4 GPUs: a quarter of each GPU, estimated */
	check(four01, 4, one2, 1,
	      "2:0.25:node-estimated | 2:0.25:node-estimated | 2:0.25:node-estimated | 2:0.25:node-estimated");
	/* CPU-only jobs claim nothing; a 1-GPU node over-allocated 3x is normalised */
	check(four01, 1, mix, 3, "2:0.333:node-estimated 3:0.667:node-estimated");
	check(four01, 4, mix, 3,
	      "2:0.25:node-estimated 3:0.5:node-estimated | 2:0.25:node-estimated 3:0.5:node-estimated | "
	      "2:0.25:node-estimated 3:0.5:node-estimated | 2:0.25:node-estimated 3:0.5:node-estimated");
	/* more allocated than present: normalised, never above 1 */
	check(four01, 4, over, 2,
	      "2:0.5:node-estimated 3:0.5:node-estimated | 2:0.5:node-estimated 3:0.5:node-estimated | "
	      "2:0.5:node-estimated 3:0.5:node-estimated | 2:0.5:node-estimated 3:0.5:node-estimated");
	check(two02, 2, wide, 1, "6:1:node-exclusive | 6:1:node-exclusive");
	check(four01, 4, other_node, 1, "- | - | - | -");
	check(four01, 4, NULL, 0, "- | - | - | -");
}

static void test_hpc_job_labels(void **state)
{
	/* hand-written: testbed jobs, labels as dcgm-exporter's hpc_job mapping writes them */
	const struct gl_dcgm_attrib_gpu g[] = {
		{"gpu04", J11_13, 2, NOPODS, 0}, /* shared: split, never summed */
		{"gpu04", NOJOBS, NOPODS, 0},    /* mapping in use on the node: free */
		{"gpu01", J5, 1, NOPODS, 0},     /* requeued: only the attempt running now is a candidate */
		{"gpu03", J404, 1, NOPODS, 0},   /* unknown job: nothing (a labelled node has no node fallback) */
		{"gpu02", J14, 1, NOPODS, 0},    /* het leader id: the component on this node */
		{"gpu02", J9, 1, NOPODS, 0},     /* job 9 runs elsewhere (gpu03): no match, node labelled */
	};
	const struct gl_dcgm_attrib_job j[] = {
		JOB(11, "11", "11", "", "", "timeout", 1000, ((const char *const[]){"gpu04"})),
		JOB(13, "13", "13", "", "", "cancel", 1000, ((const char *const[]){"gpu04"})),
		JOB(25, "5", "5", "", "", "requeue", 1000, N_GPU01),
		JOB(9, "9", "9", "", "", "v100x2", 2000, ((const char *const[]){"gpu03"})),
		JOB(22, "14+0", "14", "14", "", "het", 1000, N_GPU02),
		JOB(23, "14+1", "15", "14", "", "het", 1000, ((const char *const[]){"gpu03"})),
	};
	check(g, 6, j, 6,
	      "11:0.5:hpc_job 13:0.5:hpc_job | - | 25:1:hpc_job | - | 22:1:hpc_job | -");
	/* array task: hpc_job carries SLURM_JOB_ID, the raw id */
	{
		const char *const raw[] = {"17"};
		const struct gl_dcgm_attrib_gpu ga[] = {{"gpu01", raw, 1, NOPODS, 0}};
		const struct gl_dcgm_attrib_job ja[] = {JOB(26, "7_0", "17", "", "", "gpu1_array", 1000, N_GPU01)};
		check(ga, 1, ja, 1, "26:1:hpc_job");
	}
}

static void test_pod_labels_and_mig(void **state)
{
	/* hand-written: pods match by namespace + name wherever the exporter runs */
	const struct gl_dcgm_attrib_gpu g[] = {
		{"dcgm-exporter-x7k2p", NOJOBS, POD_TRAIN, 1, 0},
		{"dcgm-exporter-x7k2p", NOJOBS, POD_EXPORTER, 1, 0}, /* no pod name: not a workload label */
		{"h100-mig-node", NOJOBS, NOPODS, 1},               /* MIG parent */
		{"h100-mig-node", NOJOBS, NOPODS, 0},
		{"h100-mig-node", NOJOBS, NOPODS, 0},
	};
	const struct gl_dcgm_attrib_job j[] = {
		JOB(31, "train-7f9c-0", "", "", "ml-team", "train-7f9c-0", 1000, ((const char *const[]){"node-b"})),
		JOB(32, "train-7f9c-0", "", "", "other-team", "train-7f9c-0", 1000, ((const char *const[]){"node-b"})),
		JOB(33, "mig-user", "", "", "ml-team", "mig-user", 2000, ((const char *const[]){"h100-mig-node"})),
	};
	/* two instances (the parent does not count): one job holding 2 is exclusive */
	check(g, 5, j, 3, "31:1:pod | - | - | 33:1:node-exclusive | 33:1:node-exclusive");
}

static void test_fixture_hpc_job(void **state)
{
	/* the hand-written hpc_job fixture: GPU 0 shared by 4242/4243, GPU 1 by 4250 */
	struct gl_dcgm_scrape s;
	struct gl_err err = {0};
	struct gl_dcgm_attrib_gpu g[4];
	size_t len;
	char *buf = gl_test_read_file("tests/fixtures/dcgm/handwritten_slurm_hpc_job.prom", &len);
	const struct gl_dcgm_attrib_job j[] = {
		JOB(1, "4242", "4242", "", "", "a", 1000, N_NODE7),
		JOB(2, "4243", "4243", "", "", "b", 1000, N_NODE7),
		JOB(3, "4250", "4250", "", "", "c", 1000, N_NODE7),
	};
	assert_int_equal(gl_dcgm_scrape_parse(&s, buf, len, NULL, &err), 0);
	assert_int_equal(s.ngpus, 2);
	for (size_t i = 0; i < s.ngpus; i++)
		g[i] = (struct gl_dcgm_attrib_gpu){s.gpus[i].hostname, s.gpus[i].jobs, s.gpus[i].njobs, s.gpus[i].pods,
					      s.gpus[i].npods, 0};
	check(g, s.ngpus, j, 3, "1:0.5:hpc_job 2:0.5:hpc_job | 3:1:hpc_job");
	gl_dcgm_scrape_fini(&s);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_exclusive_and_estimated),
		cmocka_unit_test(test_hpc_job_labels),
		cmocka_unit_test(test_pod_labels_and_mig),
		cmocka_unit_test(test_fixture_hpc_job),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
