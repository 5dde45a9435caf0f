/* /v1/chargeback answers one shape whether the idle is known or not: a
 * step's idle object had gpu_seconds, total_micros, unshared_gpu_seconds,
 * unshared_micros and overallocated_gpu_seconds with a capacity source, but
 * only the first two (null) without one, so a dashboard reading
 * idle.unshared_micros got undefined instead of null. Jobs of
 * tests/fixtures/review/sacct_share.txt first without any inventory, then
 * with tests/fixtures/conservation/scontrol_nodes.txt. Real binary over
 * real HTTP, real PostgreSQL. */
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

static const char config_yaml[] = "rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"
				  "owners:\n  - match: account\n    value: teama\n    team: vision\n"
				  "  - match: account\n    value: teamb\n    team: language\n";

static const char *const idle_fields[] = {"gpu_seconds", "total_micros", "unshared_gpu_seconds", "unshared_micros",
					  "overallocated_gpu_seconds", "total_shown_micros"};
#define N_FIELDS (sizeof idle_fields / sizeof idle_fields[0])

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_chargeback_shape", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_share.txt"), NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* Every step's idle object has exactly name, idle_fields and total (the
 * shown money, a string); each field is null (known == 0) or a number
 * (total a string). */
static void check_idle(const char *path, int known)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200), *st;
	int steps = 0;
	assert_non_null(j);
	assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(j, "capacity_known")), known);
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(j, "steps"))
	{
		cJSON *idle = cJSON_GetObjectItem(st, "idle");
		assert_non_null(idle);
		assert_int_equal(cJSON_GetArraySize(idle), 2 + N_FIELDS);
		assert_true(known ? cJSON_IsString(cJSON_GetObjectItem(idle, "total"))
				  : cJSON_IsNull(cJSON_GetObjectItem(idle, "total")));
		assert_string_equal(cJSON_GetObjectItem(idle, "name")->valuestring, "__idle__");
		for (size_t i = 0; i < N_FIELDS; i++) {
			cJSON *v = cJSON_GetObjectItem(idle, idle_fields[i]);
			if (!v)
				fail_msg("%s: step idle has no %s (capacity %s)", path, idle_fields[i],
					 known ? "known" : "unknown");
			if (known ? !cJSON_IsNumber(v) : !cJSON_IsNull(v))
				fail_msg("%s: idle.%s is %s, want %s", path, idle_fields[i],
					 cJSON_IsNull(v) ? "null" : "a value", known ? "a number" : "null");
		}
		steps++;
	}
	assert_true(steps >= 1);
	cJSON_Delete(j);
}

static void test_idle_fields_known_or_not(void **state)
{
	/* no capacity source: unknown, every field null */
	check_idle("/v1/chargeback?window=2026-10-06", 0);
	check_idle("/v1/chargeback?window=2026-10-05,2026-10-08T00:00:00Z&step=day", 0);
	/* the inventory: the same fields, numbers */
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
				     gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at",
				     "2026-09-01T00:00:00Z", NULL),
			 0);
	check_idle("/v1/chargeback?window=2026-10-06", 1);
	check_idle("/v1/chargeback?window=2026-10-05,2026-10-08T00:00:00Z&step=day", 1);
}

/* filter=team:"a"+team:"b" (clauses are ANDed) matched nothing and answered
 * an empty 200; it is 400 naming filter, the values belong in one clause */
static void test_filter_dimension_twice(void **state)
{
	struct gl_test_http r;
	cJSON *j, *e;
	assert_int_equal(gl_test_http(g_d.port, "GET",
				      "/v1/chargeback?window=2026-10-06&filter=team:%22vision%22%2Bteam:%22language%22", NULL,
				      0, NULL, &r),
			 0);
	assert_int_equal(r.status, 400);
	j = cJSON_Parse(r.body);
	e = cJSON_GetObjectItem(j, "error");
	assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, "filter");
	assert_non_null(strstr(cJSON_GetObjectItem(e, "message")->valuestring, "'team' given twice"));
	cJSON_Delete(j);
	gl_test_http_fini(&r);
	/* the same teams in one clause answer both */
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-06&filter=team:%22vision%22,%22language%22", 200);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0),
							      "items")),
			 2);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_fields_known_or_not),
		cmocka_unit_test(test_filter_dimension_twice),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
