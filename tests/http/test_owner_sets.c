/* The live chargeback sums its jobs per owner-attribute set (cluster, the
 * fields owner rules match, the owner rules' validity segment), GPU model
 * and rate before it joins the owners: no line may change by it. Real
 * binary over real HTTP, real PostgreSQL, sacct's format
 * (tests/fixtures/ownersets/README.md). The expected figures are worked
 * out by hand from the fixture's jobs, rules and rates (no day is built,
 * so every figure is the live query's): an owner change mid-window (7101
 * and 7102 share every attribute), two rate periods (7104 runs across the
 * change), jobs that differ only in a field a rule matches (partition,
 * account) or only in one no rule matches (user), over one step, a few
 * steps (each job cut at them) and 30 steps (their events), then the same
 * from the rollup's days. */
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
#include <unistd.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

static const char config_yaml[] =
	"rates:\n"
	"  - model: a100\n    per_gpu_hour: \"2.00\"\n    to: \"2026-11-16\"\n"
	"  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: \"2026-11-16\"\n"
	"owners:\n"
	"  - match: partition\n    value: p2\n    team: gpart\n"
	"  - match: account\n    value: ax\n    team: old\n    to: \"2026-11-18\"\n"
	"  - match: account\n    value: ax\n    team: new\n    from: \"2026-11-18\"\n"
	"  - match: account\n    value: ay\n    team: ty\n";

static int setup(void **state)
{
	(void)state;
	if (gl_test_db_fresh("gl_test_owner_sets", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/ownersets/sacct.txt"), "--at", "2026-11-25T00:00:00Z", NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	(void)state;
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

struct want {
	const char *name;
	long long gpu_s, cost_micros;
};

/* Step k of j holds exactly the items of w (by name), with their
 * GPU-seconds and cost to the micro-unit. */
static void assert_step(const cJSON *j, int k, const struct want *w, size_t n)
{
	const cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), k), *it;
	size_t seen = 0;
	assert_non_null(st);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		const char *name = cJSON_GetObjectItem(it, "name")->valuestring;
		size_t i = 0;
		while (i < n && strcmp(w[i].name, name))
			i++;
		if (i == n)
			fail_msg("step %d: unexpected item %s", k, name);
		if (gl_test_jnum(it, "allocated_gpu_seconds") != w[i].gpu_s ||
		    gl_test_jnum(it, "cost_micros") != w[i].cost_micros)
			fail_msg("step %d, %s: %lld GPU-s, %lld micros; want %lld, %lld", k, name,
				 gl_test_jnum(it, "allocated_gpu_seconds"), gl_test_jnum(it, "cost_micros"), w[i].gpu_s,
				 w[i].cost_micros);
		seen++;
	}
	assert_int_equal(seen, n);
}

static cJSON *get(const char *path)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	return j;
}

/* one step: each owner's jobs, each job's time at the rates in force */
static void test_month_by_team(void **state)
{
	static const struct want w[] = {
		{"old", 36000 + 14400, 20000000 + 4000000 + 6000000}, /* 7101; 7104: 2 h at 2.00, 2 h at 3.00 */
		{"new", 36000 + 3600, 30000000 + 3000000},	      /* 7102 (2 GPUs x 5 h), 7106 */
		{"gpart", 7200, 4000000},			      /* 7103 */
		{"ty", 10800, 6000000},				      /* 7105 */
	};
	cJSON *j = get("/v1/chargeback?window=2026-11&aggregate=team");
	(void)state;
	assert_step(j, 0, w, 4);
	cJSON_Delete(j);
}

/* a dimension from the set's own attributes beside the owner's */
static void test_month_by_user_and_partition(void **state)
{
	static const struct want wu[] = {
		{"u1", 36000 + 36000 + 7200 + 14400 + 10800, 20000000 + 30000000 + 4000000 + 10000000 + 6000000},
		{"u2", 3600, 3000000},
	};
	static const struct want wp[] = {
		{"p1", 36000 + 36000 + 14400 + 10800 + 3600, 20000000 + 30000000 + 10000000 + 6000000 + 3000000},
		{"p2", 7200, 4000000},
	};
	cJSON *j = get("/v1/chargeback?window=2026-11&aggregate=user");
	(void)state;
	assert_step(j, 0, wu, 2);
	cJSON_Delete(j);
	j = get("/v1/chargeback?window=2026-11&aggregate=partition&filter=team:%22old%22,%22new%22");
	{
		static const struct want wf[] = {{"p1", 36000 + 14400 + 36000 + 3600, 30000000 + 33000000}};
		assert_step(j, 0, wf, 1);
	}
	cJSON_Delete(j);
	j = get("/v1/chargeback?window=2026-11&aggregate=partition");
	assert_step(j, 0, wp, 2);
	cJSON_Delete(j);
}

/* three steps (each job cut at them): 7104's two days at their own rates */
static void test_few_steps(void **state)
{
	static const struct want d15[] = {{"old", 7200, 4000000}}, d16[] = {{"old", 7200, 6000000}};
	cJSON *j = get("/v1/chargeback?window=2026-11-15T00:00:00Z,2026-11-18T00:00:00Z&step=day&aggregate=team");
	(void)state;
	assert_step(j, 0, d15, 1);
	assert_step(j, 1, d16, 1);
	assert_step(j, 2, NULL, 0);
	cJSON_Delete(j);
}

/* thirty steps (the events): every job's day */
static void test_days_of_the_month(void **state)
{
	static const struct want d10[] = {{"old", 36000, 20000000}}, d11[] = {{"ty", 10800, 6000000}},
				 d12[] = {{"gpart", 7200, 4000000}}, d15[] = {{"old", 7200, 4000000}},
				 d16[] = {{"old", 7200, 6000000}}, d20[] = {{"new", 36000, 30000000}},
				 d21[] = {{"new", 3600, 3000000}};
	cJSON *j = get("/v1/chargeback?window=2026-11&step=day&aggregate=team");
	(void)state;
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "steps")), 30);
	assert_step(j, 9, d10, 1);
	assert_step(j, 10, d11, 1);
	assert_step(j, 11, d12, 1);
	assert_step(j, 14, d15, 1);
	assert_step(j, 15, d16, 1);
	assert_step(j, 19, d20, 1);
	assert_step(j, 20, d21, 1);
	assert_step(j, 0, NULL, 0);
	assert_step(j, 29, NULL, 0);
	cJSON_Delete(j);
}

/* the same figures from the rollup (the days built from the same sums) */
static void test_rolled_up(void **state)
{
	(void)state;
	if (gl_test_cli(g_dsn, "rollup", NULL))
		fail_msg("rollup failed");
	/* the days the jobs touched: 10, 11, 12, 15, 16, 20 and 21 November */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built"), 7);
	test_month_by_team(state);
	test_month_by_user_and_partition(state);
	test_few_steps(state);
	test_days_of_the_month(state);
}

/* A field that is NULL on one job and empty on another (two sources, or a
 * hand-fixed row) is one owner-attribute set to the owner rules: each
 * job's GPU-seconds are counted once, not once per spelling of the set. */
static void test_null_and_empty_are_one_set(void **state)
{
	char path[] = "/tmp/gl_owner_sets_XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	cJSON *j, *t;
	(void)state;
	assert_non_null(f);
	fputs("JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|Elapsed|"
	      "ElapsedRaw|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|DBIndex|"
	      "Suspended|WCKey|JobName\n",
	      f);
	for (int k = 1; k <= 2; k++)
		fprintf(f,
			"720%d|720%d|c2|p1|normal|az|az|2001|u9|2001|2026-10-0%dT00:00:00|2026-10-0%dT00:00:00|"
			"2026-10-0%dT00:00:00|2026-10-0%dT0%d:00:00|0%d:00:00|%d|0:0|COMPLETED|1|1|1|1000M|"
			"billing=1,cpu=1,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1000M,"
			"node=1|1-00:00:00|n1|720%d|00:00:00||spelling-%d\n",
			k, k, k, k, k, k, k, k, k * 3600, k, k);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c2", "--file", path, "--at",
				     "2026-11-25T00:00:00Z", NULL),
			 0);
	unlink(path);
	assert_true(gl_test_exec_dsn(g_dsn, "UPDATE jobs SET account = NULL WHERE job_id = '7201'") >= 0);
	assert_true(gl_test_exec_dsn(g_dsn, "UPDATE jobs SET account = '' WHERE job_id = '7202'") >= 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM jobs WHERE job_id IN ('7201', '7202')"
						 " AND coalesce(account, '') = ''"),
			 2);
	j = get("/v1/chargeback?window=2026-10&aggregate=user");
	t = cJSON_GetObjectItem(j, "totals");
	/* 1 GPU for 1 h and for 2 h, at the a100 rate of 2.00 */
	assert_int_equal(gl_test_jnum(t, "allocated_gpu_seconds"), 3 * 3600);
	assert_int_equal(gl_test_jnum(t, "cost_micros"), 6000000);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_month_by_team),
		cmocka_unit_test(test_month_by_user_and_partition),
		cmocka_unit_test(test_few_steps),
		cmocka_unit_test(test_days_of_the_month),
		cmocka_unit_test(test_rolled_up),
		cmocka_unit_test(test_null_and_empty_are_one_set),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
