/* A request of a few steps sums its live jobs per step and interval before
 * it resolves owners (issue 26, docs/bench.md): open jobs seen by one poll
 * share their firm interval up to the poll and their unobserved one after
 * it, so the sum must still keep apart what the owner rules (the rule's
 * validity segment at the job's start, a field a rule matches), the rates
 * (two periods inside the unobserved day) and the time limits (a job past
 * its own) tell apart. Real binary over real HTTP, real PostgreSQL,
 * sacct's format (tests/fixtures/opensets/README.md). No day is built:
 * every figure is the live queries', worked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <string.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

/* the rate changes in the middle of the unobserved day (2026-11-25) */
static const char config_yaml[] =
	"rates:\n"
	"  - model: a100\n    per_gpu_hour: \"2.00\"\n    to: \"2026-11-25T12:00:00Z\"\n"
	"  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: \"2026-11-25T12:00:00Z\"\n"
	"owners:\n"
	"  - match: partition\n    value: p2\n    team: gpart\n"
	"  - match: account\n    value: ax\n    team: old\n    to: \"2026-11-18\"\n"
	"  - match: account\n    value: ax\n    team: new\n    from: \"2026-11-18\"\n"
	"  - match: account\n    value: ay\n    team: ty\n";

static int setup(void **state)
{
	(void)state;
	if (gl_test_db_fresh("gl_test_open_sets", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/opensets/sacct.txt"), "--at", "2026-11-25T00:00:00Z", NULL))
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	(void)state;
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* A team's figures in one step: allocated GPU-s and cost, unobserved and
 * implausible GPU-s, unobserved cost (micro-units). */
struct team_fig {
	const char *team;
	long long alloc_s, cost, unseen_s, unseen_micros, implausible_s;
};

static void assert_teams(const char *path, int step, const struct team_fig *w, size_t n)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200);
	const cJSON *items, *it;
	size_t seen = 0;
	assert_non_null(j);
	items = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), step), "items");
	cJSON_ArrayForEach(it, items)
	{
		const char *name = cJSON_GetObjectItem(it, "name")->valuestring;
		const struct team_fig *f = NULL;
		for (size_t i = 0; i < n && !f; i++)
			f = strcmp(w[i].team, name) ? NULL : &w[i];
		if (!f)
			fail_msg("%s step %d: unexpected team %s", path, step, name);
		if (gl_test_jnum(it, "allocated_gpu_seconds") != f->alloc_s || gl_test_jnum(it, "cost_micros") != f->cost ||
		    gl_test_jnum(it, "unobserved_gpu_seconds") != f->unseen_s ||
		    gl_test_jnum(it, "unobserved_micros") != f->unseen_micros ||
		    gl_test_jnum(it, "implausible_gpu_seconds") != f->implausible_s)
			fail_msg("%s step %d, %s: %lld s %lld micros, unobserved %lld s %lld micros, implausible %lld s",
				 path, step, name, gl_test_jnum(it, "allocated_gpu_seconds"), gl_test_jnum(it, "cost_micros"),
				 gl_test_jnum(it, "unobserved_gpu_seconds"), gl_test_jnum(it, "unobserved_micros"),
				 gl_test_jnum(it, "implausible_gpu_seconds"));
		seen++;
	}
	assert_int_equal(seen, n);
	cJSON_Delete(j);
}

#define DAY 86400LL
#define FIRM_DAY 48000000LL   /* a GPU-day at 2.00 */
#define UNSEEN_DAY 60000000LL /* 12 h at 2.00, 12 h at 3.00 */

/* two days, one step: the firm day before the poll, the unobserved one
 * after it; 8101 and 8105 (a user no rule matches) are one team, 8102 (the
 * same attributes, started after the owners change) another */
static void test_firm_and_unobserved_apart(void **state)
{
	static const struct team_fig w[] = {
		{"old", 2 * DAY, 2 * FIRM_DAY, 2 * DAY, 2 * UNSEEN_DAY, 0},
		{"new", DAY, FIRM_DAY, DAY, UNSEEN_DAY, 0},
		{"gpart", DAY, FIRM_DAY, DAY, UNSEEN_DAY, 0},
		{"ty", 2 * DAY, 2 * FIRM_DAY, 2 * DAY, 2 * UNSEEN_DAY, 2 * DAY}, /* past its 1-day limit */
	};
	(void)state;
	assert_teams("/v1/chargeback?window=2026-11-24,2026-11-26&aggregate=team", 0, w, 4);
}

/* unobserved=include: the unobserved day billed too, at both rates */
static void test_unobserved_included(void **state)
{
	static const struct team_fig w[] = {
		{"old", 4 * DAY, 2 * (FIRM_DAY + UNSEEN_DAY), 2 * DAY, 2 * UNSEEN_DAY, 0},
		{"new", 2 * DAY, FIRM_DAY + UNSEEN_DAY, DAY, UNSEEN_DAY, 0},
		{"gpart", 2 * DAY, FIRM_DAY + UNSEEN_DAY, DAY, UNSEEN_DAY, 0},
		{"ty", 4 * DAY, 2 * (FIRM_DAY + UNSEEN_DAY), 2 * DAY, 2 * UNSEEN_DAY, 2 * DAY},
	};
	(void)state;
	assert_teams("/v1/chargeback?window=2026-11-24,2026-11-26&aggregate=team&unobserved=include", 0, w, 4);
}

/* a step a day: each job cut at them, the firm day and the unobserved day
 * each in its own step */
static void test_days_apart(void **state)
{
	static const struct team_fig firm[] = {
		{"old", 2 * DAY, 2 * FIRM_DAY, 0, 0, 0},
		{"new", DAY, FIRM_DAY, 0, 0, 0},
		{"gpart", DAY, FIRM_DAY, 0, 0, 0},
		{"ty", 2 * DAY, 2 * FIRM_DAY, 0, 0, 0},
	};
	static const struct team_fig unseen[] = {
		{"old", 2 * DAY, 2 * UNSEEN_DAY, 2 * DAY, 2 * UNSEEN_DAY, 0},
		{"new", DAY, UNSEEN_DAY, DAY, UNSEEN_DAY, 0},
		{"gpart", DAY, UNSEEN_DAY, DAY, UNSEEN_DAY, 0},
		{"ty", 2 * DAY, 2 * UNSEEN_DAY, 2 * DAY, 2 * UNSEEN_DAY, 2 * DAY},
	};
	static const char path[] = "/v1/chargeback?window=2026-11-24,2026-11-26&aggregate=team&step=day&unobserved=include";
	(void)state;
	assert_teams(path, 0, firm, 4);
	assert_teams(path, 1, unseen, 4);
}

/* server.max_answer_lines bounds the answer's lines (4 teams here), not
 * the rows of the one statement that reads their firm, unobserved and
 * implausible parts (9: 4 + 4 + ty's implausible part): at 4 the answer
 * is whole, at 3 it is refused naming the parameter to narrow. */
static void test_answer_bound_counts_lines(void **state)
{
	static const char path[] = "/v1/chargeback?window=2026-11-24,2026-11-26&aggregate=team";
	static const struct {
		int max;
		long status;
	} c[] = {{4, 200}, {3, 400}};
	(void)state;
	for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
		struct gl_test_daemon d;
		char cfg[1024];
		cJSON *j;
		snprintf(cfg, sizeof cfg, "server:\n  max_answer_lines: %d\n%s", c[k].max, config_yaml);
		assert_int_equal(gl_test_daemon_start(&d, g_dsn, cfg, (const char *[]){"--no-ingest", NULL}), 0);
		j = gl_test_get_json(d.port, path, c[k].status);
		assert_non_null(j);
		if (c[k].status == 200)
			assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(
						 cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items")),
					 4);
		else
			assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring,
					    "aggregate");
		cJSON_Delete(j);
		assert_int_equal(gl_test_daemon_stop(&d), 0);
	}
}

/* Last: the days rolled up. A window of a built day and half a day after
 * the poll reads its firm time from the built day and its unobserved time
 * live: no job has firm time in the live half day, so the one statement of
 * a request's live parts (lines_parts) must still find the open jobs for
 * their unobserved part, owners, rate and limit kept apart as above. */
static void test_built_day_then_unobserved(void **state)
{
	static const struct team_fig w[] = {
		{"old", 2 * DAY, 2 * FIRM_DAY, DAY, FIRM_DAY, 0},
		{"new", DAY, FIRM_DAY, DAY / 2, FIRM_DAY / 2, 0},
		{"gpart", DAY, FIRM_DAY, DAY / 2, FIRM_DAY / 2, 0},
		{"ty", 2 * DAY, 2 * FIRM_DAY, DAY, FIRM_DAY, DAY},
	};
	static const struct team_fig incl[] = {
		{"old", 3 * DAY, 3 * FIRM_DAY, DAY, FIRM_DAY, 0},
		{"new", 3 * DAY / 2, 3 * FIRM_DAY / 2, DAY / 2, FIRM_DAY / 2, 0},
		{"gpart", 3 * DAY / 2, 3 * FIRM_DAY / 2, DAY / 2, FIRM_DAY / 2, 0},
		{"ty", 3 * DAY, 3 * FIRM_DAY, DAY, FIRM_DAY, DAY},
	};
	(void)state;
	assert_int_equal(gl_test_cli(g_dsn, "rollup", NULL), 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day = '2026-11-24'"), 1);
	assert_teams("/v1/chargeback?window=2026-11-24T00:00:00Z,2026-11-25T12:00:00Z&aggregate=team", 0, w, 4);
	assert_teams("/v1/chargeback?window=2026-11-24T00:00:00Z,2026-11-25T12:00:00Z&aggregate=team&unobserved=include",
		     0, incl, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_firm_and_unobserved_apart),
		cmocka_unit_test(test_unobserved_included),
		cmocka_unit_test(test_days_apart),
		cmocka_unit_test(test_answer_bound_counts_lines),
		cmocka_unit_test(test_built_day_then_unobserved),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
