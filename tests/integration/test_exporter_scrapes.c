/* The GPU exporters beside dcgm-exporter through the real `ingest dcgm` and a
 * real PostgreSQL: nvidia_gpu_exporter's real H100 scrape and the AMD
 * exporter's real lines land in the inventory and the rollup like DCGM
 * samples; a scrape without a hostname is refused with a message that says
 * what is missing and how to give it. Inputs: tests/fixtures/dcgm/ (real,
 * and the hand-written MI300X node, labelled in its header); the two-line
 * no-hostname scrape below is HAND-WRITTEN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FX "tests/fixtures/dcgm/"

static char g_dsn[512];
static char g_dir[256];
static PGconn *g_c;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_exporters", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-exporters-XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];
	PQfinish(g_c);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
	return 0;
}

static void ingest(const char *cluster, const char *file, const char *at, const char *node, struct gl_test_out *o)
{
	if (node)
		assert_int_equal(gl_test_run(g_dsn, NULL, o, "ingest", "dcgm", "--cluster", cluster, "--file", file, "--at", at,
					     "--node", node, NULL),
				 0);
	else
		assert_int_equal(gl_test_run(g_dsn, NULL, o, "ingest", "dcgm", "--cluster", cluster, "--file", file, "--at", at,
					     NULL),
				 0);
}

/* dcgm-exporter --no-hostname (the form of NVIDIA's documentation sample):
 * refused naming the label and --node; with --node it lands on that node. */
static void test_no_hostname(void **state)
{
	char path[300];
	struct gl_test_out o;
	FILE *f;
	(void)state;

	snprintf(path, sizeof path, "%s/nohost.prom", g_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
	      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-5fd4705a-0000-4000-8000-000000000000\",device=\"nvidia0\","
	      "modelName=\"NVIDIA A100-SXM4-40GB\"} 0\n",
	      f);
	fclose(f);
	ingest("nohost", path, "2026-10-05T12:00:00Z", NULL, &o);
	assert_int_equal(o.status, 1);
	if (!strstr(o.err, "no Hostname/hostname label") || !strstr(o.err, "--node NAME") || !strstr(o.err, "nohost.prom"))
		fail_msg("message: %s", o.err);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus"), 0);

	ingest("nohost", path, "2026-10-05T12:00:00Z", "dgx-07", &o);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT n.name FROM gpus g JOIN nodes n USING (node_id)"
					      " WHERE g.uuid = 'GPU-5fd4705a-0000-4000-8000-000000000000'"),
			    "dgx-07");
}

/* Real nvidia_gpu_exporter output of an idle then a loaded H100: the GPU is
 * nvidia-smi's GPU-... with model and driver, and its rollup has the
 * readings in DCGM's units (the loaded scrape: 19818 MiB used, 631.95 W). */
static void test_nvidia_gpu_exporter(void **state)
{
	struct gl_test_out o;
	(void)state;

	ingest("nvsmi", FX "nvidia_gpu_exporter_output__h100__idle.prom", "2026-07-14T08:12:38Z", "h100-01", &o);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	ingest("nvsmi", FX "nvidia_gpu_exporter_output__h100__load.prom", "2026-07-14T08:12:53Z", "h100-01", &o);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT model || '|' || driver FROM gpus g JOIN clusters c USING (cluster_id)"
					      " WHERE c.name = 'nvsmi' AND g.uuid = 'GPU-00000000-0000-0000-0000-000000000000'"),
			    "NVIDIA H100 80GB HBM3|590.48.01");
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(samples) FROM gpu_usage u JOIN gpus g ON g.gpu_id = u.gpu_id"
					   " JOIN clusters c ON c.cluster_id = g.cluster_id WHERE c.name = 'nvsmi'"),
			 2);
	assert_int_equal(gl_test_qint(g_c, "SELECT max(fb_used_max_mib)::bigint FROM gpu_usage u JOIN gpus g ON g.gpu_id = u.gpu_id"
					   " JOIN clusters c ON c.cluster_id = g.cluster_id WHERE c.name = 'nvsmi'"),
			 19818);
	assert_int_equal(gl_test_qint(g_c, "SELECT (max(power_max_w) * 100)::bigint FROM gpu_usage u JOIN gpus g ON g.gpu_id = u.gpu_id"
					   " JOIN clusters c ON c.cluster_id = g.cluster_id WHERE c.name = 'nvsmi'"),
			 63195);
}

/* AMD: the real MI300X lines and the hand-written CPX node. A board is one
 * physical GPU of the inventory (its serial), a CPX board's 8 partitions are
 * its instances under a parent row, like MIG. */
static void test_amd_exporter(void **state)
{
	struct gl_test_out o;
	(void)state;

	ingest("amd", FX "amd_dme_excerpts.prom", "2026-08-06T10:03:27Z", NULL, &o);
	/* the Radeon and Strix lines name no GPU: ignored, counted */
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	ingest("amd", FX "handwritten_amd_mi300x_cpx.prom", "2026-08-06T10:03:27Z", NULL, &o);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus g JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'amd'"),
			 4 + 10);
	/* physical GPUs: distinct (node, board) */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(DISTINCT (node_id, uuid)) FROM gpus g JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'amd'"),
			 4 + 2);
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(mig_instance || ':' || coalesce(mig_profile, '') || ':' ||"
					      " mig_parent, ',' ORDER BY mig_instance) FROM gpus"
					      " WHERE uuid = '692409005296' AND node_id = (SELECT node_id FROM nodes"
					      " WHERE name = 'mi300x-cpx-01')"),
			    "-1::true,0:cpx:false,1:cpx:false,2:cpx:false,3:cpx:false,4:cpx:false,5:cpx:false,6:cpx:false,7:cpx:false");
	assert_string_equal(gl_test_qstr(g_c, "SELECT model FROM gpus WHERE uuid = '692409005328' AND node_id = (SELECT node_id"
					      " FROM nodes WHERE name = 'mi300x-cpx-01')"),
			    "AMD Instinct MI300X OAM");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_hostname),
		cmocka_unit_test(test_nvidia_gpu_exporter),
		cmocka_unit_test(test_amd_exporter),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
