/* One GPU type is one model whatever each source calls it (sql/024): the
 * exporter inventory of cluster e1 says modelName "NVIDIA A100-SXM4-80GB",
 * its Slurm jobs gres/gpu:a100, the rate is written for a100. Capacity,
 * allocation and idle must meet under a100, and the idle be priced at
 * a100's rate. Real binary over real HTTP, real PostgreSQL, the hand-written
 * inputs of tests/fixtures/gpumodel in the real formats; the figures are
 * worked out below from those files. Kubernetes too: cluster k1 of
 * tests/fixtures/conservation labels its GPUs NVIDIA-A100-SXM4-80GB and its
 * pods name no type; they are priced at a100's rate, no alias needed. */
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

#define FX "tests/fixtures/gpumodel/"

static char g_dsn[512];
static struct gl_test_daemon g_d;

/* 3.60 an hour = 1,000 micros a GPU-second */
/* the fixtures are one scrape and one node snapshot, on the 1st of their
 * month: a week's absent grace keeps the days asked about firm capacity
 * (past the last snapshot plus the grace it is unobserved, docs/capacity.md) */
static const char config_yaml[] = "rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"
				  "inventory:\n  absent_grace_s: 604800\n";

/* 2 November on e1, by hand from the fixtures:
 * capacity: gm1's 4 GPUs, present since the scrape of 1 November 00:00
 *   4 x 86,400 = 345,600 GPU-s
 * allocated: job 201 2 x 36,000 (00:00-10:00) + job 202 1 x 21,600
 *   (12:00-18:00) + job 203 1 x 7,200 (its 00:00-02:00 part) = 100,800
 * idle: 345,600 - 100,800 = 244,800, at 1,000 micros = 244,800,000 */
#define CAP_S 345600LL
#define ALLOC_S 100800LL
#define IDLE_S (CAP_S - ALLOC_S)
#define MICROS_PER_S 1000LL

static int setup(void **state)
{
	char fields[1024];
	FILE *f;
	if (gl_test_db_fresh("gl_test_gpumodel", g_dsn, sizeof g_dsn))
		return -1;
	f = fopen(gl_test_fixture("tests/fixtures/conservation/sacct_fields.txt"), "r");
	if (!f || !fgets(fields, sizeof fields, f))
		return -1;
	fclose(f);
	fields[strcspn(fields, "\n")] = 0;
	if (gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", "e1", "--file", gl_test_fixture(FX "dcgm_gm1.prom"),
			"--at", "2026-11-01T00:00:00Z", NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "e1", "--file", gl_test_fixture(FX "sacct_e1.txt"),
			"--fields", fields, NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "kube-nodes", "--cluster", "k1", "--file",
			gl_test_fixture("tests/fixtures/conservation/kube_nodes.json"), "--at", "2026-10-01T00:00:00Z", NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "kube", "--cluster", "k1", "--file",
			gl_test_fixture("tests/fixtures/conservation/kube_pods.json"), "--at", "2026-10-04T00:00:00Z", NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* /v1/capacity per model: one row, a100, holding the capacity and the jobs */
static void test_capacity_one_model(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/capacity?window=2026-11-02&cluster=e1&aggregate=gpu_model", 200), *rows,
	      *r;
	assert_non_null(j);
	rows = cJSON_GetObjectItem(j, "rows");
	assert_int_equal(cJSON_GetArraySize(rows), 1);
	r = cJSON_GetArrayItem(rows, 0);
	assert_string_equal(cJSON_GetObjectItem(r, "gpu_model")->valuestring, "a100");
	assert_int_equal(gl_test_jnum(r, "reported_gpu_seconds"), CAP_S);
	assert_int_equal(gl_test_jnum(r, "allocated_gpu_seconds"), ALLOC_S);
	assert_int_equal(gl_test_jnum(r, "idle_gpu_seconds"), IDLE_S);
	assert_int_equal(gl_test_jnum(r, "over_gpu_seconds"), 0);
	cJSON_Delete(j);
}

/* /v1/chargeback: the idle of model a100 is capacity's, and priced */
static void test_chargeback_idle_priced(void **state)
{
	cJSON *j, *st, *it;
	long long alloc_cost = 0;
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11-02&filter=gpu_model:a100%2Bcluster:e1&aggregate=gpu_model", 200);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unpriced_models")), 0);
	st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0);
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(st, "idle"), "gpu_seconds"), IDLE_S);
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(st, "idle"), "total_micros"), IDLE_S * MICROS_PER_S);
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(st, "totals"), "allocated_gpu_seconds"), ALLOC_S);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		assert_string_equal(cJSON_GetObjectItem(it, "name")->valuestring, "a100");
		alloc_cost += gl_test_jnum(it, "cost_micros");
	}
	assert_int_equal(alloc_cost, ALLOC_S * MICROS_PER_S);
	cJSON_Delete(j);
	/* allocated + idle (+ nothing unavailable) = capacity, for the cluster too */
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11-02&filter=cluster:e1", 200);
	assert_non_null(j);
	st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0);
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(st, "totals"), "allocated_gpu_seconds") +
				 gl_test_jnum(cJSON_GetObjectItem(st, "idle"), "gpu_seconds"),
			 CAP_S);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unpriced_models")), 0);
	cJSON_Delete(j);
}

/* /v1/idle: e1 has one unallocated row, model a100, priced at a100's rate */
static void test_idle_row_priced(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-11-02", 200), *it, *r = NULL;
	int n = 0;
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "unallocated_idle"))
	{
		if (strcmp(cJSON_GetObjectItem(it, "cluster")->valuestring, "e1"))
			continue;
		r = it;
		n++;
	}
	assert_int_equal(n, 1);
	assert_string_equal(cJSON_GetObjectItem(r, "gpu_model")->valuestring, "a100");
	assert_int_equal(gl_test_jnum(r, "idle_gpu_seconds"), IDLE_S);
	assert_int_equal(gl_test_jnum(r, "idle_cost_micros"), IDLE_S * MICROS_PER_S);
	cJSON_Delete(j);
}

/* k1 on 2 October: kn1's 2 GPUs (label NVIDIA-A100-SXM4-80GB) x 86,400 s
 * = 172,800; pod ml/p1 holds 1 of them for 10 h = 36,000, idle 136,800;
 * all of it at a100's 1,000 micros a GPU-second */
static void test_kube_label_priced_as_a100(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-02&filter=cluster:k1&aggregate=gpu_model", 200),
	      *st, *it;
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unpriced_models")), 0);
	st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(st, "items")), 1);
	it = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "items"), 0);
	assert_string_equal(cJSON_GetObjectItem(it, "name")->valuestring, "a100");
	assert_int_equal(gl_test_jnum(it, "cost_micros"), 36000 * MICROS_PER_S);
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(st, "idle"), "gpu_seconds"), 172800 - 36000);
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(st, "idle"), "total_micros"), (172800 - 36000) * MICROS_PER_S);
	cJSON_Delete(j);
}

/* Two rates for two names of one model at once are refused at load (the
 * configuration check compares names as written), and nothing is loaded. */
static void test_rates_of_one_model_overlap(void **state)
{
	struct gl_test_out o;
	char path[600];
	FILE *f;
	snprintf(path, sizeof path, "%s/gpumodel-rates.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"
	      "  - model: NVIDIA A100-SXM4-80GB\n    per_gpu_hour: \"9.00\"\n",
	      f);
	fclose(f);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	assert_int_not_equal(o.status, 0);
	assert_non_null(strstr(o.err, "two rates for GPU model 'a100' overlap in time"));
	gl_test_out_fini(&o);
	/* the rate in force is still the one configured */
	test_idle_row_priced(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capacity_one_model),
		cmocka_unit_test(test_chargeback_idle_priced),
		cmocka_unit_test(test_idle_row_priced),
		cmocka_unit_test(test_kube_label_priced_as_a100),
		cmocka_unit_test(test_rates_of_one_model_overlap),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
