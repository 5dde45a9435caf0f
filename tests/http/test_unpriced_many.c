/* Many long unpriced GPU model names: 12 models with allocated GPU-time and
 * 6 with idle capacity only, none priced (the only rate is a100's), each
 * name 100 characters (1 800 in all). unpriced_models lived in a 512-byte
 * buffer: names past it were dropped and the idle list was cut mid-name,
 * so /v1/chargeback and the showback report named some models only, one
 * of them cut. Every name must come out whole, once.
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

#define N_ALLOC 12
#define N_IDLE 6
#define N_ALL (N_ALLOC + N_IDLE)
#define NAME_LEN 100

static char g_dsn[512];
static struct gl_test_daemon g_d;
static char g_names[N_ALL][NAME_LEN + 1];

/* "m00aaaa...": one word, lower case, so the canonical model is the name */
static void make_names(void)
{
	for (int i = 0; i < N_ALL; i++) {
		snprintf(g_names[i], sizeof g_names[i], "m%02d", i);
		memset(g_names[i] + 3, 'a' + i % 26, NAME_LEN - 3);
		g_names[i][NAME_LEN] = '\0';
	}
}

static int setup(void **state)
{
	char sql[1024];
	make_names();
	if (gl_test_db_fresh("gl_test_unpriced_many", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm')") != 1)
		return -1;
	for (int i = 0; i < N_ALLOC; i++) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, gpu_type)"
			 " SELECT cluster_id, 'j%d', 'j%d', 'COMPLETED', '2026-10-05T10:00:00Z', '2026-10-05T11:00:00Z',"
			 " 1000000, '%s' FROM clusters WHERE name = 'c1'",
			 i, i, g_names[i]);
		if (gl_test_exec_dsn(g_dsn, sql) != 1)
			return -1;
	}
	for (int i = N_ALLOC; i < N_ALL; i++) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions, source,"
			 " valid_from) SELECT cluster_id, 'n%d', '%s', 2, 'p', ARRAY['p'], 'scontrol',"
			 " '2026-10-01T00:00:00Z' FROM clusters WHERE name = 'c1'",
			 i, g_names[i]);
		if (gl_test_exec_dsn(g_dsn, sql) != 1)
			return -1;
	}
	return gl_test_daemon_start(&g_d, g_dsn, "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void test_chargeback_lists_all(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10", 200), *um;
	int seen[N_ALL] = {0};
	assert_non_null(j);
	um = cJSON_GetObjectItem(j, "unpriced_models");
	assert_true(cJSON_IsArray(um));
	for (int k = 0; k < cJSON_GetArraySize(um); k++) {
		const char *m = cJSON_GetStringValue(cJSON_GetArrayItem(um, k));
		int found = 0;
		assert_non_null(m);
		for (int i = 0; i < N_ALL; i++)
			if (!strcmp(m, g_names[i])) {
				seen[i]++;
				found = 1;
			}
		if (!found)
			fail_msg("unpriced_models has '%s', not a model of the fixture (cut?)", m);
	}
	for (int i = 0; i < N_ALL; i++)
		if (seen[i] != 1)
			fail_msg("unpriced_models names %s %d times", g_names[i], seen[i]);
	assert_int_equal(cJSON_GetArraySize(um), N_ALL);
	cJSON_Delete(j);
}

static void test_report_note_lists_all(void **state)
{
	struct gl_test_http r;
	const char *note;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&table=partial", NULL, 0,
				      NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	note = strstr(r.body, "unpriced GPU models");
	assert_non_null(note);
	for (int i = 0; i < N_ALL; i++)
		if (!strstr(note, g_names[i]))
			fail_msg("the report's note lacks %s", g_names[i]);
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chargeback_lists_all),
		cmocka_unit_test(test_report_note_lists_all),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
