/* /v1/chargeback's capacity coverage under a filter: the days counted
 * (capacity_days_known of capacity_days) are those of the fleet the filter
 * leaves (cluster, partition, gpu_model), as the steps counted
 * (capacity_steps_known) always were. The days were the whole fleet's, so
 * filter=cluster:"c2" over a month whose c2 inventory begins on the 16th
 * said 31 of 31 days and capacity_known true while its idle covered 16.
 * Fleet: c1/n1 4 a100 (partition p) all October; c2/m1 2 h100 (partition q)
 * from the 16th; k1, exporter only (no scheduler spans), one A100 from the
 * 21st. Real binary over real HTTP, real PostgreSQL. */
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
		"INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm'), ('c2', 'slurm'), ('k1', 'kubernetes')",
		"INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions, source, valid_from)"
		" SELECT cluster_id, v.n, v.m, v.g, v.p, ARRAY[v.p], 'scontrol', v.f::timestamptz FROM clusters c,"
		" (VALUES ('c1', 'n1', 'a100', 4, 'p', '2026-10-01T00:00:00Z'),"
		"  ('c2', 'm1', 'h100', 2, 'q', '2026-10-16T00:00:00Z')) v(c, n, m, g, p, f) WHERE c.name = v.c",
		"INSERT INTO nodes (cluster_id, name, first_seen, last_seen) SELECT cluster_id, 'x1',"
		" '2026-10-21T00:00:00Z', '2026-10-21T00:00:00Z' FROM clusters WHERE name = 'k1'",
		"INSERT INTO gpus (cluster_id, node_id, uuid, mig_instance, model, first_seen, last_seen)"
		" SELECT cluster_id, node_id, 'GPU-1', -1, 'NVIDIA A100-SXM4-80GB', '2026-10-21T00:00:00Z',"
		" '2026-10-21T00:00:00Z' FROM nodes WHERE name = 'x1'",
	};
	if (gl_test_db_fresh("gl_test_capacity_filter", g_dsn, sizeof g_dsn))
		return -1;
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
		if (gl_test_exec_dsn(g_dsn, sql[i]) < 1)
			return -1;
	return gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static long long num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	if (!cJSON_IsNumber(v))
		fail_msg("%s is not a number", k);
	return (long long)v->valuedouble;
}

/* The filter (URL-encoded) and the October days its fleet has capacity for. */
static const struct {
	const char *filter, *what;
	long long days;
} g_cases[] = {
	{"", "the whole fleet (c1 every day)", 31},
	{"cluster:%22c1%22", "c1", 31},
	{"cluster:%22c2%22", "c2, from the 16th", 16},
	{"cluster:%22k1%22", "k1's exporter GPU, from the 21st", 11},
	{"cluster:%22c2%22,%22k1%22", "c2 and k1", 16},
	{"partition:%22q%22", "partition q: c2 (k1 has no partition)", 16},
	{"gpu_model:%22h100%22", "h100: c2", 16},
	{"gpu_model:%22a100%22", "a100: c1 and k1 (its exporter name canonical)", 31},
	{"gpu_model:%22a100%22%2Bcluster:%22k1%22", "a100 of k1", 11},
	/* owner filters narrow the lines, not the idle: the whole fleet */
	{"team:%22nobody%22", "an owner filter", 31},
	{"cluster:%22nowhere%22", "a cluster without capacity", 0},
};

static cJSON *chargeback(const char *filter, const char *step)
{
	char path[256];
	snprintf(path, sizeof path, "/v1/chargeback?window=2026-10&step=%s%s%s", step, *filter ? "&filter=" : "",
		 filter);
	return gl_test_get_json(g_d.port, path, 200);
}

static void test_days_follow_the_filter(void **state)
{
	for (size_t i = 0; i < sizeof g_cases / sizeof g_cases[0]; i++) {
		cJSON *j = chargeback(g_cases[i].filter, "month");
		assert_non_null(j);
		if (num(j, "capacity_days_known") != g_cases[i].days || num(j, "capacity_days") != 31)
			fail_msg("%s: capacity_days_known %lld of %lld, want %lld of 31", g_cases[i].what,
				 num(j, "capacity_days_known"), num(j, "capacity_days"), g_cases[i].days);
		/* one month step: known when it has rows; the window's coverage
		 * only when they cover every day */
		if (cJSON_IsTrue(cJSON_GetObjectItem(j, "capacity_known")) != (g_cases[i].days == 31))
			fail_msg("%s: capacity_known %s with %lld of 31 days", g_cases[i].what,
				 cJSON_IsTrue(cJSON_GetObjectItem(j, "capacity_known")) ? "true" : "false",
				 g_cases[i].days);
		cJSON_Delete(j);
	}
}

static void test_days_and_day_steps_agree(void **state)
{
	/* a day's step is known exactly when that day has capacity data, so
	 * with step=day over a past month the two counts are one */
	for (size_t i = 0; i < sizeof g_cases / sizeof g_cases[0]; i++) {
		cJSON *j = chargeback(g_cases[i].filter, "day");
		assert_non_null(j);
		if (num(j, "capacity_steps_known") != num(j, "capacity_days_known"))
			fail_msg("%s: %lld day steps known but %lld days", g_cases[i].what, num(j, "capacity_steps_known"),
				 num(j, "capacity_days_known"));
		assert_int_equal(num(j, "capacity_days_known"), g_cases[i].days);
		cJSON_Delete(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_days_follow_the_filter),
		cmocka_unit_test(test_days_and_day_steps_agree),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
