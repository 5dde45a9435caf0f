/* shareIdle=proportional with a filter on an owner: the owner shown gets the
 * share of the idle it has in the whole fleet, the same as without the
 * filter, and the rest stays in __idle__ (it used to get all of it); with
 * shareIdle=owner a team's dedicated idle shows only where the filter
 * shows the whole team. Real
 * binary over real HTTP, real PostgreSQL; tests/fixtures/review/
 * sacct_share.txt on the 6 a100 of tests/fixtures/conservation/
 * scontrol_nodes.txt, the figures worked out below. */
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

static const char config_yaml[] =
	"rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"
	"owners:\n  - match: account\n    value: teama\n    team: vision\n"
	"  - match: account\n    value: teamb\n    team: language\n"
	/* shareIdle=owner: n2's GPUs (primary partition p2) are language's */
	"idle_owners:\n  - cluster: c1\n    partition: p2\n    team: language\n";

/* 6 October: 6 GPUs x 86,400 s less 2 x 7,200 (vision) and 10,800
 * (language) allocated; at 3.60 an hour a GPU-second costs 1,000 micros.
 * Shared 10,800 : 14,400 by largest remainder: language 3/7 of it. */
#define DAY_IDLE_S (6 * 86400LL - 14400 - 10800)
/* the month: 6 GPUs x 31 days */
#define MONTH_IDLE_S (6 * 31 * 86400LL - 14400 - 10800)

struct want {
	long long idle_s, share_s, share_micros;
};
static const struct want day = {DAY_IDLE_S, 211371 /* 493,200 x 3/7 = 211,371.43 */,
				 211371429 /* 493,200,000 x 3/7 = 211,371,428.57 */};
static const struct want month = {MONTH_IDLE_S, 6876514 /* 16,045,200 x 3/7 = 6,876,514.29 */,
				   6876514286 /* x 1,000 x 3/7 = 6,876,514,285.71 */};

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_share_filter", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-09-01T00:00:00Z", NULL) ||
	    /* the same inventory seen again on 1 November: October's capacity is firm */
	    gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-11-01T00:00:00Z", NULL))
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

/* The step's line of team name (NULL when absent) and its idle. */
static cJSON *line_of(cJSON *j, const char *name, cJSON **idle)
{
	cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), *it, *found = NULL;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			found = it;
	}
	*idle = cJSON_GetObjectItem(st, "idle");
	return found;
}

static void check(const char *path, const struct want *w, int filtered)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200), *l, *idle;
	assert_non_null(j);
	l = line_of(j, "language", &idle);
	assert_non_null(l);
	assert_int_equal(gl_test_jnum(l, "allocated_gpu_seconds"), 10800);
	assert_int_equal(gl_test_jnum(l, "idle_share_gpu_seconds"), w->share_s);
	assert_int_equal(gl_test_jnum(l, "idle_share_micros"), w->share_micros);
	assert_int_equal(gl_test_jnum(l, "total_micros"), 10800 * 1000 + w->share_micros);
	/* what the owners shown do not take stays idle: the whole of the fleet
	 * is still accounted for */
	assert_int_equal(gl_test_jnum(idle, "unshared_gpu_seconds"), w->idle_s);
	assert_int_equal(gl_test_jnum(idle, "gpu_seconds"), filtered ? w->idle_s - w->share_s : 0);
	assert_int_equal(gl_test_jnum(idle, "total_micros"), filtered ? w->idle_s * 1000 - w->share_micros : 0);
	cJSON_Delete(j);
}

static void test_filtered_owner_keeps_its_share(void **state)
{
	check("/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=proportional", &day, 0);
	/* language took all 493.20 of idle */
	check("/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=proportional&filter=team:%22language%22", &day, 1);
	/* the same by user, and over the whole month (days from the rollup) */
	check("/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=proportional&filter=user:%22bob%22", &day, 1);
	check("/v1/chargeback?window=2026-10&aggregate=team&shareIdle=proportional", &month, 0);
	check("/v1/chargeback?window=2026-10&aggregate=team&shareIdle=proportional&filter=team:%22language%22", &month, 1);
}

/* shareIdle=owner: p2's idle (n2's 2 GPUs all day, no job there: 172,800
 * GPU-s at 1,000 micros) is language's, on language's line; a filter that
 * leaves language out shows no language line (one was added, with that
 * idle), and a filter on a user shows only part of a team, so the team's
 * idle stays in __idle__. */
static void test_owner_idle_under_filters(void **state)
{
	const long long p2 = 2 * 86400LL;
	cJSON *j, *l, *idle;

	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=owner", 200);
	assert_non_null(j);
	l = line_of(j, "language", &idle);
	assert_non_null(l);
	assert_int_equal(gl_test_jnum(l, "idle_share_gpu_seconds"), p2);
	assert_int_equal(gl_test_jnum(l, "idle_share_micros"), p2 * 1000);
	assert_int_equal(gl_test_jnum(idle, "gpu_seconds"), DAY_IDLE_S - p2);
	cJSON_Delete(j);

	j = gl_test_get_json(g_d.port,
			     "/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=owner&filter=team:%22vision%22", 200);
	assert_non_null(j);
	assert_null(line_of(j, "language", &idle));
	assert_non_null(line_of(j, "vision", &idle));
	assert_int_equal(gl_test_jnum(idle, "gpu_seconds"), DAY_IDLE_S);
	cJSON_Delete(j);

	j = gl_test_get_json(g_d.port,
			     "/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=owner&filter=user:%22alice%22", 200);
	assert_non_null(j);
	assert_null(line_of(j, "language", &idle));
	assert_int_equal(gl_test_jnum(idle, "gpu_seconds"), DAY_IDLE_S);
	cJSON_Delete(j);

	/* a filter naming the team keeps its idle */
	j = gl_test_get_json(g_d.port,
			     "/v1/chargeback?window=2026-10-06&aggregate=team&shareIdle=owner&filter=team:%22language%22", 200);
	assert_non_null(j);
	l = line_of(j, "language", &idle);
	assert_non_null(l);
	assert_int_equal(gl_test_jnum(l, "idle_share_gpu_seconds"), p2);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filtered_owner_keeps_its_share),
		cmocka_unit_test(test_owner_idle_under_filters),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
