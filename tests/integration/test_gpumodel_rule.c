/* The canonical GPU model (sql/024, gl_gpu_model) of the names real sources
 * write: dcgm-exporter's modelName (Tesla T4 and NVIDIA A10G from the
 * DataDog dcgm fixture; NVIDIA H100 80GB HBM3, H200, L40S as nvidia-smi
 * prints them), the Kubernetes GPU feature discovery label (spaces become
 * '-'), Slurm GRES types and the PAI trace's gpu_type. Expected models are
 * written by hand. Real PostgreSQL, the migrated schema. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

static char g_dsn[512];
static PGconn *g_c;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_gpumodel_rule", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	return PQstatus(g_c) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

/* gl_gpu_model(name), "(null)" for NULL */
static const char *canon(const char *name)
{
	static char buf[256];
	PGresult *r = PQexecParams(g_c, "SELECT gl_gpu_model($1)", 1, NULL, (const char *[]){name}, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("gl_gpu_model('%s'): %s", name ? name : "NULL", PQerrorMessage(g_c));
	snprintf(buf, sizeof buf, "%s", PQgetisnull(r, 0, 0) ? "(null)" : PQgetvalue(r, 0, 0));
	PQclear(r);
	return buf;
}

static const struct {
	const char *in, *want;
} cases[] = {
	/* dcgm-exporter modelName / nvidia-smi name */
	{"NVIDIA A100-SXM4-80GB", "a100"},
	{"NVIDIA A100-SXM4-40GB", "a100"},
	{"NVIDIA A100-PCIE-40GB", "a100"},
	{"NVIDIA A100 80GB PCIe", "a100"},
	{"Tesla V100-SXM2-32GB", "v100"},
	{"Tesla T4", "t4"},
	{"NVIDIA A10G", "a10g"},
	{"NVIDIA H100 80GB HBM3", "h100"},
	{"NVIDIA H200", "h200"},
	{"NVIDIA L40S", "l40s"},
	{"NVIDIA GeForce RTX 3090", "rtx3090"},
	{"Quadro RTX 6000", "rtx6000"},
	{"NVIDIA RTX A6000", "rtxa6000"},
	/* Kubernetes nvidia.com/gpu.product (kube_nodes already drops -MIG-...) */
	{"NVIDIA-A100-SXM4-80GB", "a100"},
	{"NVIDIA-H100-80GB-HBM3", "h100"},
	{"Tesla-T4", "t4"},
	/* Slurm GRES types, as jobs and scontrol carry them */
	{"a100", "a100"},
	{"A100", "a100"},
	{"v100", "v100"},
	{"A100_80GB", "a100"},
	{"gpu:a100", "a100"},
	{"rtx_a6000", "rtxa6000"},
	{"mig", "mig"},
	/* MIG slices keep their own name (and rate) */
	{"a100_3g.40gb", "a100_3g.40gb"},
	{"1g.10gb", "1g.10gb"},
	{"gpu:a100_3g.40gb", "a100_3g.40gb"},
	{"2g.20gb", "2g.20gb"},
	/* vGPU profiles keep their model and profile (a 40 GB compute slice
	 * of an A100 is not a 16 GB T4 desktop profile); nvidia-smi in the
	 * guest names them "GRID <model>-<size><series>", newer drivers
	 * "NVIDIA <model>-<size><series>" */
	{"GRID A100-40C", "a100-40c"},
	{"GRID T4-16Q", "t4-16q"},
	{"GRID A100-20C", "a100-20c"},
	{"NVIDIA L40S-48Q", "l40s-48q"},
	{"GRID RTX6000-24Q", "rtx6000-24q"},
	/* architectures: Turing's RTX 4000 is not Ada's */
	{"Quadro RTX 4000", "rtx4000"},
	{"NVIDIA RTX 4000 Ada Generation", "rtx4000ada"},
	{"NVIDIA RTX 4000 SFF Ada Generation", "rtx4000sffada"},
	{"NVIDIA RTX 6000 Ada Generation", "rtx6000ada"},
	{"NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtxpro6000blackwellserver"},
	{"NVIDIA GeForce RTX 3090 Ti", "rtx3090ti"},
	/* names the rule cannot place stay as written, for an alias */
	{"Graphics Device", "graphics device"},
	{"NVIDIA Graphics Device", "nvidia graphics device"},
	/* the catch-all rate */
	{"*", "*"},
	/* PAI trace gpu_type */
	{"V100M32", "v100m32"},
	{"P100", "p100"},
	/* untyped stays untyped */
	{"", ""},
	{NULL, "(null)"},
};

static void test_rule(void **state)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *got = canon(cases[i].in);
		if (strcmp(got, cases[i].want))
			fail_msg("gl_gpu_model('%s') = '%s', want '%s'", cases[i].in ? cases[i].in : "NULL", got,
				 cases[i].want);
	}
}

/* An alias wins over the rule; its target is canonical as it is (the rule
 * alone would cut a100_80g to a100); the match ignores case. */
static void test_alias(void **state)
{
	assert_int_equal(gl_test_exec_dsn(g_dsn, "INSERT INTO gpu_model_aliases (match, model)"
						 " VALUES ('nvidia a100-sxm4-80gb', 'a100_80g')"),
			 1);
	assert_string_equal(canon("NVIDIA A100-SXM4-80GB"), "a100_80g");
	assert_string_equal(canon("a100_80g"), "a100_80g");
	assert_string_equal(canon("A100_80G"), "a100_80g");
	/* other A100s still follow the rule */
	assert_string_equal(canon("NVIDIA A100-SXM4-40GB"), "a100");
	assert_string_equal(canon("a100"), "a100");
	/* a match not in lower case is refused, not silently never matched */
	assert_true(gl_test_exec_dsn(g_dsn, "INSERT INTO gpu_model_aliases (match, model) VALUES ('Tesla T4', 't4')") < 0);
	assert_int_equal(gl_test_exec_dsn(g_dsn, "DELETE FROM gpu_model_aliases"), 1);
	assert_string_equal(canon("NVIDIA A100-SXM4-80GB"), "a100");
}

/* gpu_model_canon holds every stored name with its model: a job's GPU type
 * is added by the insert that stores it, and an alias re-derives it. */
static void test_cache_follows_data_and_aliases(void **state)
{
	assert_int_equal(gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('c', 'slurm')"), 1);
	assert_int_equal(gl_test_exec_dsn(g_dsn, "INSERT INTO jobs (cluster_id, job_key, job_id, state, submit_at, gpu_micro,"
						 " gpu_type) SELECT cluster_id, 'raw:1', '1', 'PENDING', now(), 1000000,"
						 " 'NVIDIA H100 80GB HBM3' FROM clusters WHERE name = 'c'"),
			 1);
	assert_string_equal(gl_test_qstr(g_c, "SELECT model FROM gpu_model_canon WHERE raw = 'nvidia h100 80gb hbm3'"),
			    "h100");
	assert_int_equal(gl_test_exec_dsn(g_dsn, "INSERT INTO gpu_model_aliases (match, model)"
						 " VALUES ('nvidia h100 80gb hbm3', 'h100_sxm')"),
			 1);
	assert_string_equal(gl_test_qstr(g_c, "SELECT model FROM gpu_model_canon WHERE raw = 'nvidia h100 80gb hbm3'"),
			    "h100_sxm");
	assert_int_equal(gl_test_exec_dsn(g_dsn, "DELETE FROM gpu_model_aliases"), 1);
	assert_string_equal(gl_test_qstr(g_c, "SELECT model FROM gpu_model_canon WHERE raw = 'nvidia h100 80gb hbm3'"),
			    "h100");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_alias),
		cmocka_unit_test(test_cache_follows_data_and_aliases),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
