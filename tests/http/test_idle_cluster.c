/* A fleet of two clusters, one without capacity data. shareIdle=proportional
 * shares a cluster's idle among that cluster's users only: a cluster without
 * capacity data contributes no idle and receives none (the demo spread
 * testgpu's idle over teams on philly, a cluster with no inventory). The
 * fleet-wide pooling stays, asked for by name (proportional_fleet). And the
 * ratios are over GPU time with capacity data: the showback report's
 * saturation divided both clusters' allocation by c1's capacity (the demo's
 * 17,223 %), and format=sreport printed c2's GPU time nowhere. Real binary over real HTTP, real PostgreSQL:
 * tests/fixtures/review/sacct_share.txt on c1's 6 a100
 * (tests/fixtures/conservation/scontrol_nodes.txt) and the same jobs on c2
 * (sacct_share_c2.txt), which has no inventory. Figures worked out below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"
#include "gl/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

/* at 3.60 an hour a GPU-second costs 1,000 micros */
static const char config_yaml[] = "rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"
				  "owners:\n  - match: account\n    value: teama\n    team: vision\n"
				  "  - match: account\n    value: teamb\n    team: language\n";

/* 6 October on c1: 6 GPUs x 86,400 s less vision's 14,400 and language's
 * 10,800 allocated. Shared 14,400 : 10,800 over c1's lines only. */
#define C1_IDLE_S (6 * 86400LL - 14400 - 10800)

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_idle_cluster", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-09-01T00:00:00Z", NULL) ||
	    /* the same inventory seen again on 1 November: October's capacity is firm */
	    gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-11-01T00:00:00Z", NULL) ||
	    gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_share.txt"), NULL) ||
	    gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c2", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_share_c2.txt"), NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* The first step's item whose name (and cluster, when not NULL) match. */
static cJSON *item(cJSON *j, const char *team, const char *cluster)
{
	cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		cJSON *k = cJSON_GetObjectItem(it, "key");
		const char *n = k ? cJSON_GetStringValue(cJSON_GetObjectItem(k, "team"))
				  : cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		const char *c = k ? cJSON_GetStringValue(cJSON_GetObjectItem(k, "cluster")) : NULL;
		if (n && !strcmp(n, team) && (!cluster || (c && !strcmp(c, cluster))))
			return it;
	}
	fail_msg("no item %s/%s", team, cluster ? cluster : "-");
	return NULL;
}

static void test_idle_stays_in_its_cluster(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port,
				    "/v1/chargeback?window=2026-10-06&aggregate=team,cluster&shareIdle=proportional", 200);
	cJSON *idle;
	assert_non_null(j);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "shareIdleBy")), "cluster");
	/* c2 has no capacity data: its teams get none of c1's idle */
	assert_int_equal(gl_test_jnum(item(j, "vision", "c2"), "idle_share_gpu_seconds"), 0);
	assert_int_equal(gl_test_jnum(item(j, "vision", "c2"), "idle_share_micros"), 0);
	assert_int_equal(gl_test_jnum(item(j, "language", "c2"), "idle_share_micros"), 0);
	/* c1's idle all goes to c1's teams: 493,200 x 4/7 = 281,828.57 and x
	 * 3/7 = 211,371.43 (largest remainder: vision takes the second) */
	assert_int_equal(gl_test_jnum(item(j, "vision", "c1"), "idle_share_gpu_seconds"), 281829);
	assert_int_equal(gl_test_jnum(item(j, "language", "c1"), "idle_share_gpu_seconds"), 211371);
	assert_int_equal(gl_test_jnum(item(j, "vision", "c1"), "idle_share_micros"), 281828571);
	assert_int_equal(gl_test_jnum(item(j, "language", "c1"), "idle_share_micros"), 211371429);
	idle = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "idle");
	assert_int_equal(gl_test_jnum(idle, "unshared_gpu_seconds"), C1_IDLE_S);
	assert_int_equal(gl_test_jnum(idle, "gpu_seconds"), 0);
	cJSON_Delete(j);

	/* by team alone: vision ran as much on c2 as on c1, yet its share is
	 * its share of c1 only, the same as above */
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=proportional", 200);
	assert_non_null(j);
	assert_int_equal(gl_test_jnum(item(j, "vision", NULL), "allocated_gpu_seconds"), 28800);
	assert_int_equal(gl_test_jnum(item(j, "vision", NULL), "idle_share_micros"), 281828571);
	assert_int_equal(gl_test_jnum(item(j, "language", NULL), "idle_share_micros"), 211371429);
	cJSON_Delete(j);

	/* by model: one model here, so the same shares */
	j = gl_test_get_json(g_d.port,
			     "/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=proportional&shareIdleBy=model", 200);
	assert_non_null(j);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "shareIdleBy")), "model");
	assert_int_equal(gl_test_jnum(item(j, "vision", NULL), "idle_share_micros"), 281828571);
	cJSON_Delete(j);
}

/* The whole fleet's idle over every line, only when asked for by name:
 * c2's lines then take their part (14,400 of 50,400 for vision there). */
static void test_fleet_pooling_by_name(void **state)
{
	cJSON *j = gl_test_get_json(
		g_d.port, "/v1/chargeback?window=2026-10-06&aggregate=team,cluster&shareIdle=proportional_fleet", 200);
	assert_non_null(j);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "shareIdle")), "proportional_fleet");
	assert_null(cJSON_GetObjectItem(j, "shareIdleBy"));
	/* 493,200 x 14,400 / 50,400 = 140,914.29 */
	assert_int_equal(gl_test_jnum(item(j, "vision", "c2"), "idle_share_gpu_seconds"), 140914);
	cJSON_Delete(j);
}

static void expect_400(const char *path, const char *param)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 400), *e = cJSON_GetObjectItem(j, "error");
	assert_non_null(e);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(e, "param")), param);
	cJSON_Delete(j);
}

static void test_bad_share_params(void **state)
{
	expect_400("/v1/chargeback?window=2026-10-06&shareIdle=pooled", "shareIdle");
	expect_400("/v1/chargeback?window=2026-10-06&shareIdle=proportional&shareIdleBy=rack", "shareIdleBy");
	expect_400("/v1/chargeback?window=2026-10-06&shareIdle=none&shareIdleBy=model", "shareIdleBy");
}

/* The report's fleet table: saturation over c1 alone (its 25,200 GPU-s
 * of the month's 6 x 31 x 86,400 = 16,070,400), c2's 25,200 (7 GPU-hours)
 * beside it as beyond inventory. */
static void test_report_saturation_over_inventory(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv t;
	char want[48];
	const char *sat = NULL, *beyond = NULL;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&aggregate=team&table=fleet", NULL,
				      0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	gl_test_http_fini(&r);
	for (size_t i = 1; i < t.nrows; i++) {
		if (t.ncols[i] != 2)
			continue;
		if (!strcmp(t.cell[i][0], "saturation_pct"))
			sat = t.cell[i][1];
		if (!strcmp(t.cell[i][0], "beyond_inventory_gpu_hours"))
			beyond = t.cell[i][1];
	}
	assert_non_null(sat);
	assert_non_null(beyond);
	gl_report_fmt_pct(25200, 16070400, want, sizeof want);
	assert_string_equal(sat, want);
	assert_string_equal(beyond, "7.000");
	gl_test_csv_free(&t);
}

/* format=sreport: c2's allocation, which no capacity data covers, on a
 * line of its own (it printed c2|gres/gpu|0|0|0|0|0|0 and nothing else);
 * c1's lines as slurmdbd books them. */
static void test_sreport_beyond_inventory_line(void **state)
{
	struct gl_test_http r;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/capacity?window=2026-10-06&format=sreport", NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\nc2|gres/gpu(beyond inventory)|25200|0|0|0|0|0\n"));
	assert_non_null(strstr(r.body, "\nc1|gres/gpu|25200|0|0|493200|0|518400\n"));
	assert_null(strstr(r.body, "c1|gres/gpu(beyond inventory)"));
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_stays_in_its_cluster),
		cmocka_unit_test(test_fleet_pooling_by_name),
		cmocka_unit_test(test_bad_share_params),
		cmocka_unit_test(test_report_saturation_over_inventory),
		cmocka_unit_test(test_sreport_beyond_inventory_line),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
