/* The messy fleet (tests/fixtures/messy/README.md), observed-time items:
 * cluster alpha (Slurm, with node inventory) whose sacct source stopped on
 * 7 November 12:00 with four jobs open and one pending, and whose inventory
 * went stale after 8 November; cluster beta (Kubernetes, no node inventory)
 * whose snapshot series stopped on 5 November; two rate periods; owners
 * that change mid-month. Real binary, real HTTP, real PostgreSQL. */
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

#define M "tests/fixtures/messy/"
#define SEEN_A 1794052800LL /* 2026-11-07T12:00:00Z: alpha's sacct stops */
#define SEEN_B 1793836800LL /* 2026-11-05T00:00:00Z: beta's last snapshot */

static char g_dsn[512];
static struct gl_test_daemon g_d;

static const char config_yaml[] = GL_TEST_MESSY_COST_YAML;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_messy", g_dsn, sizeof g_dsn))
		return -1;
	for (int i = 0; i < 2; i++)
		if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "alpha", "--nodes",
				gl_test_fixture("tests/fixtures/nodes/testbed/end_scontrol_show_node.txt"), "--at",
				i ? "2026-11-08T00:00:00Z" : "2026-11-01T00:00:00Z", NULL))
			return -1;
	if (gl_test_messy_jobs(g_dsn))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static const cJSON *item(const cJSON *j, const char *name)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			return it;
	}
	fail_msg("no item %s", name);
	return NULL;
}

static void within(long long v, long long lo, long long hi)
{
	if (v < lo || v > hi)
		fail_msg("%lld not within [%lld, %lld]", v, lo, hi);
}

/* alpha's four open jobs (jobs 8 and 16 with 2 a100, 14+0 one a100, 14+1
 * one v100) are firm up to 7 November 12:00 and unobserved after; the part
 * past each job's Timelimit (6-22:40:00 from its start) is implausible */
static void test_stopped_sacct(void **state)
{
	/* the limits' ends: 8 from 6 Nov 10:33:20, 14+x from 6 Nov 11:56:40, 16 from 7 Nov 08:46:40 */
	const long long lim8 = 1793961200LL + 600000, lim14 = 1793966200LL + 600000, lim16 = 1794041200LL + 600000;
	long long t0 = (long long)time(NULL), t1;
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11&aggregate=cluster", 200), *inc;
	const cJSON *a;
	assert_non_null(j);
	t1 = (long long)time(NULL);
	a = item(j, "alpha");
	within(gl_test_jnum(a, "unobserved_gpu_seconds"), 6 * (t0 - SEEN_A), 6 * (t1 + 1 - SEEN_A));
	within(gl_test_jnum(a, "implausible_gpu_seconds"), 2 * (t0 - lim8) + 2 * (t0 - lim14) + 2 * (t0 - lim16),
	       2 * (t1 + 1 - lim8) + 2 * (t1 + 1 - lim14) + 2 * (t1 + 1 - lim16));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(a, "implausible")));
	/* include adds exactly the unobserved part, item by item (beta too) */
	for (int tries = 0;; tries++) {
		time_t s = time(NULL);
		cJSON_Delete(j);
		j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11&aggregate=cluster", 200);
		inc = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11&aggregate=cluster&unobserved=include", 200);
		if (time(NULL) == s || tries == 9)
			break;
		cJSON_Delete(inc);
	}
	for (int k = 0; k < 2; k++) {
		const char *c = k ? "beta" : "alpha";
		assert_int_equal(gl_test_jnum(item(inc, c), "allocated_gpu_seconds"),
				 gl_test_jnum(item(j, c), "allocated_gpu_seconds") +
					 gl_test_jnum(item(j, c), "unobserved_gpu_seconds"));
		assert_int_equal(gl_test_jnum(item(inc, c), "unobserved_gpu_seconds"),
				 gl_test_jnum(item(j, c), "unobserved_gpu_seconds"));
	}
	cJSON_Delete(inc);
	cJSON_Delete(j);

	/* by team (owners changing on 4 November): the same unobserved total */
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11&aggregate=team", 200);
	assert_non_null(j);
	within(gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "unobserved_gpu_seconds"), 6 * (t0 - SEEN_A),
	       6 * ((long long)time(NULL) + 1 - SEEN_A) + 3 * ((long long)time(NULL) + 1 - SEEN_B));
	cJSON_Delete(j);
}

/* beta: the pods of the last snapshot (5 November) are firm to it; the two
 * that vanished by the 3rd end at the 1st's snapshot; the pending pod's
 * wait is 4 days (1 to 5 November), not a month */
static void test_stopped_snapshots(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/queue?window=2026-11&aggregate=cluster", 200), *p;
	long long t0 = (long long)time(NULL);
	int seen = 0;
	assert_non_null(j);
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(j, "pending"))
	{
		const char *k = cJSON_GetObjectItem(p, "key")->valuestring;
		if (!strcmp(k, "beta")) {
			assert_int_equal(gl_test_jnum(p, "longest_wait_s"), 4 * 86400);
			within(gl_test_jnum(p, "unobserved_s"), t0 - SEEN_B - 2, t0 - SEEN_B + 2);
			seen++;
		} else if (!strcmp(k, "alpha")) {
			/* job 5, queued again 2 Nov 19:03:20, last seen pending 7 Nov 12:00 */
			assert_int_equal(gl_test_jnum(p, "longest_wait_s"), SEEN_A - 1793646200LL);
			seen++;
		}
	}
	assert_int_equal(seen, 2);
	cJSON_Delete(j);
}

/* data_through per cluster and source; a window inside all of them is not
 * past it, November is; staleness in /metrics; alpha's nodes stale */
static void test_data_through(void **state)
{
	static const char *const want[][3] = {
		{"alpha", "sacct", "2026-11-07T12:00:00Z"},
		{"alpha", "scontrol", "2026-11-08T00:00:00Z"},
		{"beta", "kube", "2026-11-05T00:00:00Z"},
	};
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11&aggregate=team", 200), *it, *n;
	struct gl_test_http r;
	int found = 0;
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "window_past_data_through")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "past_data_through")), 3);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "data_through"))
	for (size_t w = 0; w < 3; w++)
		if (!strcmp(cJSON_GetObjectItem(it, "cluster")->valuestring, want[w][0]) &&
		    !strcmp(cJSON_GetObjectItem(it, "source")->valuestring, want[w][1])) {
			assert_string_equal(cJSON_GetObjectItem(it, "through")->valuestring, want[w][2]);
			found++;
		}
	assert_int_equal(found, 3);
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11-01T00:00:00Z,2026-11-05T00:00:00Z&aggregate=team",
			     200);
	assert_non_null(j);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(j, "window_past_data_through")));
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "unobserved_gpu_seconds"), 0);
	cJSON_Delete(j);

	assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
	assert_non_null(strstr(r.body, "gpuledger_source_staleness_seconds{source=\"sacct\",cluster=\"alpha\",data=\"jobs\"} "));
	assert_non_null(
		strstr(r.body, "gpuledger_source_staleness_seconds{source=\"scontrol\",cluster=\"alpha\",data=\"inventory\"} "));
	assert_non_null(strstr(r.body, "gpuledger_source_staleness_seconds{source=\"kube\",cluster=\"beta\",data=\"jobs\"} "));
	gl_test_http_fini(&r);

	j = gl_test_get_json(g_d.port, "/v1/inventory?cluster=alpha", 200);
	assert_non_null(j);
	found = 0;
	cJSON_ArrayForEach(n, cJSON_GetObjectItem(j, "nodes"))
	{
		if (!cJSON_GetArraySize(cJSON_GetObjectItem(n, "gpus")))
			continue;
		assert_string_equal(cJSON_GetObjectItem(n, "last_seen")->valuestring, "2026-11-08T00:00:00Z");
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(n, "stale")));
		found++;
	}
	assert_true(found > 0);
	cJSON_Delete(j);

	/* the report names all three where it says what is partial */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-11&table=partial", NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "data through 2026-11-07T12:00:00Z: alpha's sacct data (jobs)"));
	assert_non_null(strstr(r.body, "data through 2026-11-08T00:00:00Z: alpha's scontrol data (inventory)"));
	assert_non_null(strstr(r.body, "data through 2026-11-05T00:00:00Z: beta's kube data (jobs)"));
	assert_non_null(strstr(r.body, "unobserved: "));
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stopped_sacct),
		cmocka_unit_test(test_stopped_snapshots),
		cmocka_unit_test(test_data_through),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
