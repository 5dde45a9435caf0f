/* /v1/inventory names every GPU model name the sources wrote with the
 * canonical model it is billed under, and why: a configured alias
 * (gpu_models[]), the name being an alias's model, or the rule
 * (docs/capacity.md). No route showed it, so a portal could not explain why
 * "NVIDIA A100-SXM4-80GB" is billed as a100. The expected models below are
 * the documented rule and the alias of the config, worked out by hand.
 * Real binary over real HTTP, real PostgreSQL. */
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

static char g_dsn[512];
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_inventory_models", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm')") != 1 ||
	    gl_test_exec_dsn(g_dsn, "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions,"
				    " source, valid_from) SELECT cluster_id, n, m, 4, 'p', ARRAY['p'], 'scontrol',"
				    " '2026-10-01T00:00:00Z' FROM clusters, (VALUES ('n1', 'NVIDIA A100-SXM4-80GB'),"
				    " ('n2', 'NVIDIA H100 80GB HBM3'), ('n3', 'Tesla V100-SXM2-32GB'),"
				    " ('n4', 'Graphics Device'), ('n5', 'GRID A100-40C'), ('n6', 'GRID T4-16Q')) v(n, m)"
				    " WHERE name = 'c1'") != 6 ||
	    gl_test_exec_dsn(g_dsn, "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro,"
				    " gpu_type) SELECT cluster_id, 'j1', 'j1', 'COMPLETED', '2026-10-05T10:00:00Z',"
				    " '2026-10-05T11:00:00Z', 1000000, 'h100_80g' FROM clusters WHERE name = 'c1'") != 1)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn,
				    "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n"
				    "gpu_models:\n  - match: NVIDIA H100 80GB HBM3\n    model: h100_80g\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static const cJSON *find(const cJSON *arr, const char *name)
{
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
	{
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(o, "name"));
		if (n && !strcmp(n, name))
			return o;
	}
	return NULL;
}

static void expect(const cJSON *arr, const char *name, const char *model, const char *via)
{
	const cJSON *o = find(arr, name);
	if (!o)
		fail_msg("gpu_models lacks %s", name);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "model")), model);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(o, "via")), via);
}

static void test_models_explained(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/inventory", 200), *arr;
	assert_non_null(j);
	arr = cJSON_GetObjectItem(j, "gpu_models");
	assert_true(cJSON_IsArray(arr));
	/* the rule: lower case, split at - _ space /, brand words dropped, first word */
	expect(arr, "nvidia a100-sxm4-80gb", "a100", "rule");
	expect(arr, "tesla v100-sxm2-32gb", "v100", "rule");
	/* vGPU profiles apart; a name the rule cannot place listed as written */
	expect(arr, "grid a100-40c", "a100-40c", "rule");
	expect(arr, "grid t4-16q", "t4-16q", "rule");
	expect(arr, "graphics device", "graphics device", "as_written");
	/* the alias of the config, where the rule would say h100 */
	expect(arr, "nvidia h100 80gb hbm3", "h100_80g", "alias");
	/* the alias's model, canonical as it is (the rule would cut it to h100) */
	expect(arr, "h100_80g", "h100_80g", "alias_model");
	assert_int_equal(cJSON_GetArraySize(arr), 7);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_models_explained),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
