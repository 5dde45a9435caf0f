/* Capacity data that covers only part of a window: node c1/n1 (4 a100) is
 * known from 2026-10-16 00:00 on, so October has capacity for 16 of its 31
 * days. The idle figures then cover those 16 days only, and the answers must
 * say so: /v1/chargeback's capacity_known was true (steps of the 1st to the
 * 15th counted as 0 idle, not unknown), /v1/idle's too, and the showback
 * report's notes were silent. A window inside the coverage stays known.
 * Expected figures are worked out here from the fixture: 4 GPUs x 86400 s a
 * day, less the one job's hour (1 GPU, 2026-10-20 10:00-11:00).
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

#define DAY_IDLE (4LL * 86400) /* a day of n1 without the job */
#define JOB_S 3600LL
#define OCT_KNOWN_DAYS 16 /* 16th .. 31st */

static char g_dsn[512];
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_capacity_partial", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm')") != 1 ||
	    gl_test_exec_dsn(g_dsn, "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions,"
				    " source, valid_from) SELECT cluster_id, 'n1', 'a100', 4, 'p', ARRAY['p'], 'scontrol',"
				    " '2026-10-16T00:00:00Z' FROM clusters WHERE name = 'c1'") != 1 ||
	    gl_test_exec_dsn(g_dsn, "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro,"
				    " gpu_type, nodes, partition) SELECT cluster_id, 'j1', 'j1', 'COMPLETED',"
				    " '2026-10-20T10:00:00Z', '2026-10-20T11:00:00Z', 1000000, 'a100', ARRAY['n1'], 'p'"
				    " FROM clusters WHERE name = 'c1'") != 1)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n",
				    (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static long long num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	assert_true(cJSON_IsNumber(v));
	return (long long)v->valuedouble;
}

static void test_chargeback_days(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&step=day", 200), *steps, *t;
	assert_non_null(j);
	steps = cJSON_GetObjectItem(j, "steps");
	assert_int_equal(cJSON_GetArraySize(steps), 31);
	/* the 1st to the 15th: no inventory, idle unknown (was 0) */
	for (int i = 0; i < 31 - OCT_KNOWN_DAYS; i++) {
		cJSON *idle = cJSON_GetObjectItem(cJSON_GetArrayItem(steps, i), "idle");
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(idle, "gpu_seconds")));
	}
	assert_int_equal(num(cJSON_GetObjectItem(cJSON_GetArrayItem(steps, 15), "idle"), "gpu_seconds"), DAY_IDLE);
	assert_int_equal(num(cJSON_GetObjectItem(cJSON_GetArrayItem(steps, 19), "idle"), "gpu_seconds"),
			 DAY_IDLE - JOB_S);
	t = cJSON_GetObjectItem(j, "totals");
	assert_int_equal(num(t, "idle_gpu_seconds"), OCT_KNOWN_DAYS * DAY_IDLE - JOB_S);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "capacity_known")));
	assert_int_equal(num(j, "capacity_steps_known"), OCT_KNOWN_DAYS);
	assert_int_equal(num(j, "capacity_days_known"), OCT_KNOWN_DAYS);
	assert_int_equal(num(j, "capacity_days"), 31);
	cJSON_Delete(j);
}

static void test_chargeback_month_step(void **state)
{
	/* one step that has capacity rows, but for half of it only */
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&step=month", 200);
	assert_non_null(j);
	assert_int_equal(num(cJSON_GetObjectItem(j, "totals"), "idle_gpu_seconds"), OCT_KNOWN_DAYS * DAY_IDLE - JOB_S);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "capacity_known")));
	assert_int_equal(num(j, "capacity_steps_known"), 1);
	assert_int_equal(num(j, "capacity_days_known"), OCT_KNOWN_DAYS);
	assert_int_equal(num(j, "capacity_days"), 31);
	cJSON_Delete(j);
}

static void test_covered_window_known(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-16,2026-11-01&step=day", 200);
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "capacity_known")));
	assert_int_equal(num(j, "capacity_steps_known"), OCT_KNOWN_DAYS);
	assert_int_equal(num(j, "capacity_days_known"), OCT_KNOWN_DAYS);
	assert_int_equal(num(j, "capacity_days"), OCT_KNOWN_DAYS);
	assert_int_equal(num(cJSON_GetObjectItem(j, "totals"), "idle_gpu_seconds"), OCT_KNOWN_DAYS * DAY_IDLE - JOB_S);
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10-16,2026-11-01", 200);
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "capacity_known")));
	assert_int_equal(num(j, "capacity_days_known"), OCT_KNOWN_DAYS);
	cJSON_Delete(j);
}

static void test_idle_month(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10", 200), *u;
	long long sum = 0;
	assert_non_null(j);
	u = cJSON_GetObjectItem(j, "unallocated_idle");
	for (int i = 0; i < cJSON_GetArraySize(u); i++)
		sum += num(cJSON_GetArrayItem(u, i), "idle_gpu_seconds");
	assert_int_equal(sum, OCT_KNOWN_DAYS * DAY_IDLE - JOB_S);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "capacity_known")));
	assert_int_equal(num(j, "capacity_days_known"), OCT_KNOWN_DAYS);
	assert_int_equal(num(j, "capacity_days"), 31);
	cJSON_Delete(j);
}

static void test_report_note(void **state)
{
	struct gl_test_http r;
	char want[64];
	long long s = OCT_KNOWN_DAYS * DAY_IDLE - JOB_S;

	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&table=partial", NULL, 0,
				      NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "capacity data for only 16 of the 31 days of 2026-10"));
	gl_test_http_fini(&r);
	/* the fleet's unallocated idle is the 16 days' */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&table=fleet", NULL, 0, NULL,
				      &r),
			 0);
	assert_int_equal(r.status, 200);
	snprintf(want, sizeof want, "unallocated_idle_gpu_hours,%lld.", s / 3600);
	assert_non_null(strstr(r.body, want));
	gl_test_http_fini(&r);
}

/* The coverage headers of the CSV of json_path (format=csv appended) and
 * the JSON root's fields they carry: each header present, equal to its
 * field. want_known, days_known, days: what both must say. */
static void csv_coverage(const char *json_path, int chargeback, int want_known, long long days_known,
			 long long days)
{
	static const char *const hdr[] = {"X-Capacity-Known", "X-Capacity-Days-Known", "X-Capacity-Days",
					  "X-Capacity-Steps-Known"};
	static const char *const key[] = {"capacity_known", "capacity_days_known", "capacity_days",
					  "capacity_steps_known"};
	cJSON *j = gl_test_get_json(g_d.port, json_path, 200);
	struct gl_test_http r;
	char path[256], v[64];
	assert_non_null(j);
	snprintf(path, sizeof path, "%s&format=csv", json_path);
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "Content-Type: text/csv"));
	for (size_t i = 0; i < (chargeback ? 4u : 3u); i++) {
		const cJSON *f = cJSON_GetObjectItem(j, key[i]);
		char want[32];
		if (!gl_test_header(&r, hdr[i], v, sizeof v))
			fail_msg("%s: no %s header:\n%s", path, hdr[i], r.headers);
		if (cJSON_IsBool(f))
			snprintf(want, sizeof want, "%s", cJSON_IsTrue(f) ? "true" : "false");
		else
			snprintf(want, sizeof want, "%lld", num(j, key[i]));
		if (strcmp(v, want))
			fail_msg("%s: %s: %s, the JSON's %s is %s", path, hdr[i], v, key[i], want);
	}
	if (!chargeback && gl_test_header(&r, "X-Capacity-Steps-Known", v, sizeof v))
		fail_msg("%s: /v1/idle has no steps, yet X-Capacity-Steps-Known: %s", path, v);
	assert_string_equal(gl_test_header(&r, "X-Capacity-Known", v, sizeof v), want_known ? "true" : "false");
	assert_int_equal(atoll(gl_test_header(&r, "X-Capacity-Days-Known", v, sizeof v)), days_known);
	assert_int_equal(atoll(gl_test_header(&r, "X-Capacity-Days", v, sizeof v)), days);
	gl_test_http_fini(&r);
	cJSON_Delete(j);
}

static void test_csv_coverage_headers(void **state)
{
	/* half of October: an __idle__ row with 16 days' idle, which without
	 * the headers read as the month's */
	csv_coverage("/v1/chargeback?window=2026-10&step=month", 1, 0, OCT_KNOWN_DAYS, 31);
	csv_coverage("/v1/chargeback?window=2026-10&step=day", 1, 0, OCT_KNOWN_DAYS, 31);
	csv_coverage("/v1/chargeback?window=2026-10-16,2026-11-01&step=day", 1, 1, OCT_KNOWN_DAYS, OCT_KNOWN_DAYS);
	/* every table of /v1/idle says it; the unallocated one is the idle */
	csv_coverage("/v1/idle?window=2026-10&table=unallocated", 0, 0, OCT_KNOWN_DAYS, 31);
	csv_coverage("/v1/idle?window=2026-10&table=allocated", 0, 0, OCT_KNOWN_DAYS, 31);
	csv_coverage("/v1/idle?window=2026-10-16,2026-11-01&table=unallocated", 0, 1, OCT_KNOWN_DAYS, OCT_KNOWN_DAYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chargeback_days),
		cmocka_unit_test(test_chargeback_month_step),
		cmocka_unit_test(test_covered_window_known),
		cmocka_unit_test(test_idle_month),
		cmocka_unit_test(test_report_note),
		cmocka_unit_test(test_csv_coverage_headers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
