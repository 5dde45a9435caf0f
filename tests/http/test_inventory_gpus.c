/* /v1/inventory's gpus and conflicts over every GPU source (issue 27,
 * "Exporter GPUs in the inventory"): the real binary serving, a real
 * PostgreSQL. One Slurm cluster whose scheduler (the testbed's real
 * `scontrol show node`: gpu01, gpu02 with 4 GPUs, gpu03, gpu04 with 2) is
 * contradicted by what its nodes' GPU sources report, each capture given
 * the node it was taken on with --node:
 *   gpu01  dcgm-exporter, tests/fixtures/dcgm/handwritten_slurm_hpc_job.prom:
 *          gpu="0" and gpu="1", 2 GPUs;
 *   gpu02  nvidia-smi -q -x, tests/fixtures/nvsmi/telegraf_tesla-t4.xml: one
 *          T4, and the XML has no index (minor_number is not it): null;
 *   gpu03  AMD Device Metrics Exporter, tests/fixtures/dcgm/amd_dme_excerpts.prom:
 *          the 4 MI300X boards of its real lines (gpu_id 0, 0, 2, 47);
 *   gpu04  nvidia-smi --query-gpu CSV, tests/fixtures/nvsmi/l40s_query_gpu.csv:
 *          one L40S, index 0.
 * Each GPU's index is the one its source printed; every node is a conflict
 * naming both counts and both sources. */
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
#include <time.h>

static char g_dsn[512], g_at[32];
static PGconn *g_c;
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	time_t t = time(NULL) - 120;
	(void)state;
	strftime(g_at, sizeof g_at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	if (gl_test_db_fresh("gl_test_inventory_gpus", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "inv", "--nodes",
			gl_test_fixture("tests/fixtures/nodes/testbed/end_scontrol_show_node.txt"), "--at", g_at, NULL) ||
	    gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", "inv", "--node", "gpu01", "--at", g_at, "--file",
			gl_test_fixture("tests/fixtures/dcgm/handwritten_slurm_hpc_job.prom"), NULL) ||
	    gl_test_cli(g_dsn, "ingest", "nvidia-smi", "--cluster", "inv", "--node", "gpu02", "--at", g_at, "--file",
			gl_test_fixture("tests/fixtures/nvsmi/telegraf_tesla-t4.xml"), NULL) ||
	    gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", "inv", "--node", "gpu03", "--at", g_at, "--file",
			gl_test_fixture("tests/fixtures/dcgm/amd_dme_excerpts.prom"), NULL) ||
	    gl_test_cli(g_dsn, "ingest", "nvidia-smi", "--cluster", "inv", "--node", "gpu04", "--file",
			gl_test_fixture("tests/fixtures/nvsmi/l40s_query_gpu.csv"), NULL))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, "log:\n  level: info\n", NULL);
}

static int teardown(void **state)
{
	(void)state;
	PQfinish(g_c);
	return gl_test_daemon_stop(&g_d);
}

/* node/index/uuid/source of every whole GPU, in the API's order */
static char *gpu_lines(const cJSON *gpus)
{
	size_t cap = 8192, len = 0;
	char *s = calloc(1, cap);
	const cJSON *g;
	cJSON_ArrayForEach(g, gpus)
	{
		const cJSON *ix = cJSON_GetObjectItem(g, "index");
		char idx[16];
		if (!cJSON_IsNull(cJSON_GetObjectItem(g, "mig_instance")))
			continue;
		if (cJSON_IsNull(ix))
			snprintf(idx, sizeof idx, "null");
		else
			snprintf(idx, sizeof idx, "%d", ix->valueint);
		len += (size_t)snprintf(s + len, cap - len, "%s %s %s %s\n", cJSON_GetObjectItem(g, "node")->valuestring,
					idx, cJSON_GetObjectItem(g, "uuid")->valuestring,
					cJSON_GetObjectItem(g, "source")->valuestring);
	}
	return s;
}

static void test_gpus_list_each_index(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv t;
	cJSON *inv = gl_test_get_json(g_d.port, "/v1/inventory?cluster=inv", 200);
	char *lines;
	int ci, cn, cs;
	size_t n_gpus;
	(void)state;
	assert_non_null(inv);
	n_gpus = (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(inv, "gpus"));
	lines = gpu_lines(cJSON_GetObjectItem(inv, "gpus"));
	/* the indices as the captures print them: gpu="0"/"1" (dcgm), none in
	 * the XML, gpu_id="0", "0", "2", "47" on the AMD boards (named by their
	 * serial_number, the one without by gpu_uuid), index 0 in the CSV */
	assert_string_equal(lines, "gpu01 0 GPU-1a2b3c4d-0000-4000-8000-000000000000 dcgm\n"
				   "gpu01 1 GPU-1a2b3c4d-0000-4000-8000-000000000001 dcgm\n"
				   "gpu02 null GPU-d37e67a5-91dd-3774-a5cb-99096249601a nvidia-smi\n"
				   "gpu03 0 17ff74b5-0000-1000-805c-37b0fbe69430 amd\n"
				   "gpu03 0 692409005328 amd\n"
				   "gpu03 2 692409005408 amd\n"
				   "gpu03 47 692409005296 amd\n"
				   "gpu04 0 GPU-00000000-0000-0000-0000-000000000000 nvidia-smi\n");
	free(lines);
	cJSON_Delete(inv);

	/* the CSV table has the same column, empty where the source gave none */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/inventory?cluster=inv&format=csv&table=gpus", NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	ci = gl_test_csv_col(&t, "index");
	cn = gl_test_csv_col(&t, "node");
	cs = gl_test_csv_col(&t, "source");
	assert_true(ci >= 0 && cn >= 0 && cs >= 0);
	assert_int_equal(t.nrows, 1 + n_gpus);
	for (size_t i = 1; i < t.nrows; i++) {
		if (!strcmp(t.cell[i][cn], "gpu02"))
			assert_string_equal(t.cell[i][ci], "");
		if (!strcmp(t.cell[i][cn], "gpu01"))
			assert_true(!strcmp(t.cell[i][ci], "0") || !strcmp(t.cell[i][ci], "1"));
		if (!strcmp(t.cell[i][cn], "gpu04"))
			assert_string_equal(t.cell[i][ci], "0");
	}
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);
}

/* Each node's scheduler count against its GPU source's: the conflict names
 * the node, both counts and both sources, whichever source it is. */
static void test_conflicts_name_sources(void **state)
{
	cJSON *inv = gl_test_get_json(g_d.port, "/v1/inventory?cluster=inv", 200);
	const cJSON *c;
	char got[2048] = "";
	size_t len = 0;
	(void)state;
	assert_non_null(inv);
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(inv, "conflicts"))
	{
		len += (size_t)snprintf(got + len, sizeof got - len, "%s %s %lld %s %lld %s | %s\n",
					cJSON_GetObjectItem(c, "node")->valuestring,
					cJSON_GetObjectItem(c, "scheduler_source")->valuestring,
					gl_test_jnum(c, "scheduler_gpus"),
					cJSON_GetObjectItem(c, "exporter_sources")->valuestring,
					gl_test_jnum(c, "exporter_gpus"), cJSON_GetObjectItem(c, "kind")->valuestring,
					cJSON_GetObjectItem(c, "message")->valuestring);
	}
	/* the counts: Gres=gpu:a100:4 / gpu:v100:2 against the captures' GPUs,
	 * an AMD board once however many partition rows it has */
	assert_string_equal(got, "gpu01 scontrol 4 dcgm 2 gpu_count | the scheduler (scontrol) says 4 GPUs, dcgm reports 2\n"
				 "gpu02 scontrol 4 nvidia-smi 1 gpu_count | the scheduler (scontrol) says 4 GPUs,"
				 " nvidia-smi reports 1\n"
				 "gpu03 scontrol 2 amd 4 gpu_count | the scheduler (scontrol) says 2 GPUs, amd reports 4\n"
				 "gpu04 scontrol 2 nvidia-smi 1 gpu_count | the scheduler (scontrol) says 2 GPUs,"
				 " nvidia-smi reports 1\n");
	cJSON_Delete(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpus_list_each_index),
		cmocka_unit_test(test_conflicts_name_sources),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
