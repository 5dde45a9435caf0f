/* Capacity coverage by cluster: a cluster whose GPU jobs ran in the window
 * with no capacity data at all (no scheduler inventory, no exporter GPUs)
 * makes the idle unknown for the window, whatever the days of the other
 * clusters say. The demo's philly (30,000 GPU-hours in four days, no node
 * source) beside the testbed's inventory made /v1/idle answer
 * wasted_fraction 1 and capacity_known true, and chargeback
 * capacity_known true. Fleet: c1/n1 4 a100 all October with a job; c9 no
 * inventory, a job in October; c8 no inventory, a job in September only.
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
	static const char *const sql[] = {
		"INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm'), ('c9', 'slurm'), ('c8', 'slurm')",
		"INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions, source, valid_from)"
		" SELECT cluster_id, 'n1', 'a100', 4, 'p', ARRAY['p'], 'scontrol', '2026-10-01T00:00:00Z' FROM clusters"
		" WHERE name = 'c1'",
		"INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		" end_at, elapsed_s, gpu_micro, gpu_type, nodes)"
		" SELECT c.cluster_id, 'db:' || v.id, v.id, 'u', 'a', 'p', 'COMPLETED', v.s::timestamptz, v.s::timestamptz,"
		" v.e::timestamptz, extract(epoch FROM v.e::timestamptz - v.s::timestamptz)::bigint, 2000000, 'a100', ARRAY['n1']"
		" FROM clusters c, (VALUES ('c1', '1', '2026-10-05T00:00:00Z', '2026-10-05T10:00:00Z'),"
		"  ('c9', '2', '2026-10-07T00:00:00Z', '2026-10-08T00:00:00Z'),"
		"  ('c8', '3', '2026-09-07T00:00:00Z', '2026-09-08T00:00:00Z')) v(c, id, s, e) WHERE c.name = v.c",
	};
	if (gl_test_db_fresh("gl_test_capacity_clusters", g_dsn, sizeof g_dsn))
		return -1;
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
		if (gl_test_exec_dsn(g_dsn, sql[i]) < 1)
			return -1;
	return gl_test_daemon_start(&g_d, g_dsn,
				    "rates:\n  - model: a100\n    per_gpu_hour: \"1.00\"\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* the names of o[key], comma-joined ("" for none) */
static const char *names(const cJSON *o, const char *key)
{
	static char buf[256];
	const cJSON *a = cJSON_GetObjectItem(o, key), *it;
	buf[0] = '\0';
	assert_true(cJSON_IsArray(a));
	cJSON_ArrayForEach(it, a)
	{
		if (buf[0])
			strcat(buf, ",");
		strncat(buf, it->valuestring, sizeof buf - strlen(buf) - 2);
	}
	return buf;
}

static void test_chargeback(void **state)
{
	static const struct {
		const char *filter, *unknown;
		int known;
	} cases[] = {
		{"", "c9", 0},                                 /* c9 ran with no inventory */
		{"&filter=cluster:%22c1%22", "", 1},           /* the filter leaves c1 alone */
		{"&filter=cluster:%22c9%22", "c9", 0},
		{"&filter=cluster:%22c1%22,%22c9%22", "c9", 0},
		{"&filter=team:%22__unallocated__%22", "c9", 0}, /* owner filters leave the fleet whole */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[256];
		cJSON *j;
		snprintf(path, sizeof path, "/v1/chargeback?window=2026-10&aggregate=cluster%s", cases[i].filter);
		j = gl_test_get_json(g_d.port, path, 200);
		assert_non_null(j);
		if (strcmp(names(j, "capacity_clusters_unknown"), cases[i].unknown) ||
		    cJSON_IsTrue(cJSON_GetObjectItem(j, "capacity_known")) != cases[i].known)
			fail_msg("%s: unknown '%s' (want '%s'), capacity_known %d (want %d)", path,
				 names(j, "capacity_clusters_unknown"), cases[i].unknown,
				 cJSON_IsTrue(cJSON_GetObjectItem(j, "capacity_known")), cases[i].known);
		/* the days say nothing of it: c1 covers every one */
		if (strcmp(cases[i].filter, "&filter=cluster:%22c9%22"))
			assert_int_equal(gl_test_jnum(j, "capacity_days_known"), gl_test_jnum(j, "capacity_days"));
		cJSON_Delete(j);
	}
	/* September: c8's job, no inventory anywhere then; October's c9 is not
	 * named for a month it did not run in */
	{
		cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-09&aggregate=cluster", 200);
		assert_non_null(j);
		assert_string_equal(names(j, "capacity_clusters_unknown"), "c8");
		assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "capacity_known")));
		cJSON_Delete(j);
	}
}

static void test_idle(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10", 200);
	assert_non_null(j);
	assert_string_equal(names(j, "capacity_clusters_unknown"), "c9");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "capacity_known")));
	cJSON_Delete(j);
}

static void test_csv_header(void **state)
{
	struct gl_test_http r;
	char h[64];
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/chargeback?window=2026-10&format=csv", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(gl_test_header(&r, "X-Capacity-Known", h, sizeof h), "false");
	assert_string_equal(gl_test_header(&r, "X-Capacity-Clusters-Unknown", h, sizeof h), "1");
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/idle?window=2026-10&format=csv&table=unallocated", NULL, 0,
				      NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(gl_test_header(&r, "X-Capacity-Clusters-Unknown", h, sizeof h), "1");
	gl_test_http_fini(&r);
}

/* The month's showback report says which cluster its idle leaves out. */
static void test_report_note(void **state)
{
	struct gl_test_http r;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&format=csv&table=partial",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	if (!strstr(r.body, "no capacity data for cluster c9, which ran GPU jobs in 2026-10"))
		fail_msg("no note on c9 in:\n%s", r.body);
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chargeback),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_csv_header),
		cmocka_unit_test(test_report_note),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
