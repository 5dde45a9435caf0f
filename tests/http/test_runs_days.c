/* GET /v1/runs over days some of which are built and some not: the answer
 * is the all-live answer, field by field, in JSON and CSV, for the run
 * list, its aggregates and each run's members (docs/runs.md).
 *
 * The jobs are the real Slurm testbed's allocations
 * (tests/fixtures/sacct/testbed/sacct_alloc.txt) with their times moved
 * across 2026-11-20..23 as cluster "days" (the only edit besides the
 * cluster and, for alice's jobs, the job name), so that
 * - job 5's two attempts (the first REQUEUED: a failed attempt) run from
 *   the 20th to the 23rd, and array 7's four tasks from the 21st to the
 *   23rd: runs over built (22nd, 23rd) and unbuilt (20th, 21st) days;
 * - alice's jobs 2, 11 (TIMEOUT: a failed attempt) and 14 (het) share the
 *   name "ckpt", and the name_user rule is in force from 2026-11-21T12:00
 *   (a rule change inside the window): job 2 stays a run of its own, 11
 *   and 14 are one run;
 * - job 10 (FAILED) runs on the 23rd alone, job 12 never started.
 * Two daemons answer over real HTTP, each with other runs rules (the
 * rules are the grouping's, read per request: a built day must not carry
 * them). `gpuledger rollup --days 2` builds the two most recent days. */
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

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define TB "tests/fixtures/sacct/testbed/"
#define WIN "window=2026-11-20T00:00:00Z,2026-11-24T00:00:00Z"

static char g_dsn[512];
static char g_fields[1024];
static struct gl_test_daemon g_a, g_b;

#define RATES                                                                                                         \
	"rates:\n"                                                                                                    \
	"  - model: a100\n    per_gpu_hour: \"3.60\"\n"                                                               \
	"  - model: v100\n    per_gpu_hour: \"7.20\"\n"

static const char config_a[] = RATES "runs:\n"
				     "  - by: array\n"
				     "  - by: name_user\n    from: \"2026-11-21T12:00:00Z\"\n";
/* the same jobs under other rules: name_user always, no array rule (the
 * array's tasks share their name and user) */
static const char config_b[] = RATES "runs:\n"
				     "  - by: name_user\n";

/* The paths compared: every run, aggregates, a state filter, a window
 * that cuts days (read live) and one of built days alone. */
static const char *const paths[] = {
	"/v1/runs?" WIN,
	"/v1/runs?" WIN "&aggregate=user",
	"/v1/runs?" WIN "&aggregate=kind",
	"/v1/runs?" WIN "&state=completed",
	"/v1/runs?window=2026-11-21T12:00:00Z,2026-11-22T18:00:00Z",
	"/v1/runs?window=2026-11-22T00:00:00Z,2026-11-24T00:00:00Z",
	"/v1/runs?window=2026-11-21T00:00:00Z,2026-11-23T00:00:00Z",
	"/v1/runs?window=2026-11",
	"/v1/runs?window=2026-11&aggregate=user",
};
#define N_PATHS N_OF(paths)

/* A testbed line moved: line k's times (submit, eligible, start, end;
 * start NULL: never started) and, when name is not NULL, its job name. */
struct move {
	int line;
	const char *submit, *eligible, *start, *end, *name;
};

static const struct move moves[] = {
	{5, "2026-11-20T21:50:00", "2026-11-20T21:50:00", "2026-11-20T22:00:00", "2026-11-21T02:00:00", NULL},
	{20, "2026-11-21T02:00:00", "2026-11-21T02:00:00", "2026-11-21T03:00:00", "2026-11-23T01:00:00", NULL},
	{7, "2026-11-21T23:00:00", "2026-11-21T23:00:00", "2026-11-21T23:30:00", "2026-11-22T01:30:00", NULL},
	{8, "2026-11-21T23:00:00", "2026-11-21T23:00:00", "2026-11-22T05:00:00", "2026-11-22T07:00:00", NULL},
	{9, "2026-11-21T23:00:00", "2026-11-21T23:00:00", "2026-11-22T23:00:00", "2026-11-23T01:00:00", NULL},
	{10, "2026-11-21T23:00:00", "2026-11-21T23:00:00", "2026-11-23T02:00:00", "2026-11-23T04:00:00", NULL},
	{2, "2026-11-21T08:00:00", "2026-11-21T08:00:00", "2026-11-21T08:00:01", "2026-11-21T10:00:00", "ckpt"},
	{14, "2026-11-21T20:00:00", "2026-11-21T20:00:00", "2026-11-21T20:00:01", "2026-11-22T03:00:00", "ckpt"},
	{17, "2026-11-22T10:00:00", "2026-11-22T10:00:00", "2026-11-22T10:05:00", "2026-11-22T12:00:00", "ckpt"},
	{18, "2026-11-22T10:00:00", "2026-11-22T10:00:00", "2026-11-22T10:05:00", "2026-11-22T12:00:00", "ckpt"},
	{13, "2026-11-23T05:00:00", "2026-11-23T05:00:00", "2026-11-23T05:00:01", "2026-11-23T06:00:00", NULL},
	{15, "2026-11-22T09:00:00", "2026-11-22T09:00:00", NULL, "2026-11-22T09:00:05", NULL},
};

static long long epoch(const char *t)
{
	struct tm tm = {0};
	const char *e = strptime(t, "%Y-%m-%dT%H:%M:%S", &tm);
	assert_true(e && !*e);
	return (long long)timegm(&tm);
}

/* The line's '|'-separated fields (at most 40) in place. */
static int split(char *line, char **f)
{
	int n = 0;
	f[n++] = line;
	for (char *p = line; *p && n < 40; p++)
		if (*p == '|') {
			*p = '\0';
			f[n++] = p + 1;
		}
	return n;
}

static void write_moved(FILE *out, char *line, const struct move *m)
{
	char *f[40], elapsed[32], raw[24];
	int n = split(line, f);
	long long secs = m->start ? epoch(m->end) - epoch(m->start) : 0;
	/* JobID|JobIDRaw|Cluster|...|Submit(10)|Eligible|Start|End|Elapsed|ElapsedRaw(15)|...|JobName(26) */
	if (n < 28)
		fail_msg("line %d: %d fields", m->line, n);
	snprintf(elapsed, sizeof elapsed, "%lld-%02lld:%02lld:%02lld", secs / 86400, secs / 3600 % 24, secs / 60 % 60,
		 secs % 60);
	snprintf(raw, sizeof raw, "%lld", secs);
	f[2] = "days";
	f[10] = (char *)m->submit;
	f[11] = (char *)m->eligible;
	f[12] = m->start ? (char *)m->start : "None";
	f[13] = (char *)m->end;
	f[14] = elapsed;
	f[15] = raw;
	if (m->name)
		f[26] = (char *)m->name;
	for (int i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? "|" : "", f[i]);
	fputc('\n', out);
}

static void ingest_moved(void)
{
	char path[400], line[4096];
	FILE *in = fopen(TB "sacct_alloc.txt", "r"), *out;
	struct gl_test_out o;
	int k = 0, w = 0;
	snprintf(path, sizeof path, "%s/runs-days-sacct.txt", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	out = fopen(path, "w");
	if (!in || !out)
		fail_msg("moved copy: %s", path);
	while (fgets(line, sizeof line, in)) {
		k++;
		line[strcspn(line, "\r\n")] = '\0';
		for (size_t i = 0; i < N_OF(moves); i++)
			if (moves[i].line == k) {
				write_moved(out, line, &moves[i]);
				w++;
			}
	}
	fclose(in);
	fclose(out);
	assert_int_equal(w, (int)N_OF(moves));
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "days", "--file", path, "--fields", g_fields,
			NULL) ||
	    o.status != 0)
		fail_msg("ingest: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
}

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_runs_days", g_dsn, sizeof g_dsn) || gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	ingest_moved();
	if (gl_test_daemon_start(&g_a, g_dsn, config_a, (const char *[]){"--no-ingest", NULL}))
		return -1;
	return gl_test_daemon_start(&g_b, g_dsn, config_b, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	int a = gl_test_daemon_stop(&g_a), b = gl_test_daemon_stop(&g_b);
	return a == 0 && b == 0 ? 0 : -1;
}

static char *body(int port, const char *path)
{
	struct gl_test_http r;
	char *s;
	assert_int_equal(gl_test_http(port, "GET", path, NULL, 0, NULL, &r), 0);
	if (r.status != 200)
		fail_msg("%s: %ld %s", path, r.status, r.body ? r.body : "");
	s = r.body;
	r.body = NULL;
	gl_test_http_fini(&r);
	return s;
}

/* Every answer of one daemon: each path as JSON and CSV, then each run's
 * detail (JSON and CSV) over the whole window, in the order of the first
 * path's runs. */
struct answers {
	char *s[4 * N_PATHS + 256];
	size_t n;
};

static void take_n(int port, size_t n_paths, struct answers *a)
{
	char p[300];
	cJSON *root, *it;
	a->n = 0;
	for (size_t i = 0; i < n_paths; i++) {
		a->s[a->n++] = body(port, paths[i]);
		snprintf(p, sizeof p, "%s&format=csv", paths[i]);
		a->s[a->n++] = body(port, p);
	}
	root = cJSON_Parse(a->s[0]);
	assert_non_null(root);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "runs"))
	{
		const char *id = cJSON_GetObjectItem(it, "id")->valuestring;
		assert_true(a->n + 2 <= N_OF(a->s));
		snprintf(p, sizeof p, "/v1/runs/%s?" WIN, id);
		a->s[a->n++] = body(port, p);
		snprintf(p, sizeof p, "/v1/runs/%s?" WIN "&format=csv", id);
		a->s[a->n++] = body(port, p);
	}
	cJSON_Delete(root);
}

static void take(int port, struct answers *a)
{
	take_n(port, N_PATHS, a);
}

static void answers_fini(struct answers *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->s[i]);
	a->n = 0;
}

/* Field by field: the same bodies, byte for byte (the JSON's numbers and
 * strings, the CSV's cells, in the same order). */
static void same(const char *who, const struct answers *live, const struct answers *mixed)
{
	assert_int_equal(mixed->n, live->n);
	for (size_t i = 0; i < live->n; i++)
		if (strcmp(live->s[i], mixed->s[i]))
			fail_msg("%s answer %zu differs once days are built:\nlive:  %s\nbuilt: %s", who, i, live->s[i],
				 mixed->s[i]);
}

/* the run of /v1/runs' answer whose key is key (the test fails without one) */
static cJSON *run_of(cJSON *root, const char *key)
{
	cJSON *it = gl_test_json_item(root, "runs", "key", key);
	if (!it)
		fail_msg("no run '%s'", key);
	return it;
}

static long long num(const cJSON *o, const char *k)
{
	return gl_test_jnum(o, k);
}

/* The live answer is the one worked out by hand (a100 1,000 and v100
 * 2,000 micro-units a GPU-second), so the comparison compares figures. */
static void check_live(void)
{
	cJSON *a = gl_test_get_json(g_a.port, "/v1/runs?" WIN, 200), *b = gl_test_get_json(g_b.port, "/v1/runs?" WIN, 200),
	      *r;
	assert_non_null(a);
	assert_non_null(b);
	/* job 5: 4 h REQUEUED, then 46 h, one a100 */
	r = run_of(a, "days/job/5");
	assert_int_equal(num(r, "attempts"), 2);
	assert_int_equal(num(r, "gpu_seconds"), 180000);
	assert_int_equal(num(r, "cost_micros"), 180000000);
	assert_int_equal(num(r, "failed_attempts_cost_micros"), 14400000);
	assert_int_equal(num(r, "queue_seconds"), 600 + 3600);
	/* array 7: four tasks of 2 h, one a100 each */
	r = run_of(a, "days/array/7");
	assert_int_equal(num(r, "jobs"), 4);
	assert_int_equal(num(r, "gpu_seconds"), 4 * 7200);
	/* job 2 before the rule, 11 (v100, TIMEOUT) and 14 (a100 + v100) after it */
	r = run_of(a, "days/job/2");
	assert_int_equal(num(r, "gpu_seconds"), 7199);
	r = run_of(a, "days/name_user/alice/ckpt");
	assert_int_equal(num(r, "jobs"), 2);
	assert_int_equal(num(r, "attempts"), 2);
	assert_int_equal(num(r, "gpu_seconds"), 25199 + 2 * 6900);
	assert_int_equal(num(r, "cost_micros"), 25199 * 2000LL + 6900 * 1000LL + 6900 * 2000LL);
	assert_int_equal(num(r, "failed_attempts_cost_micros"), 25199 * 2000LL);
	/* job 10: FAILED, 1 h on a v100, after the rule */
	r = run_of(a, "days/name_user/dave/fail_exit1");
	assert_int_equal(num(r, "failed_attempts_cost_micros"), 3599 * 2000LL);
	/* the other rules: job 2 joins alice's run, the array's tasks are runs
	 * of their own */
	r = run_of(b, "days/name_user/alice/ckpt");
	assert_int_equal(num(r, "jobs"), 3);
	assert_int_equal(num(r, "gpu_seconds"), 7199 + 25199 + 2 * 6900);
	r = run_of(b, "days/name_user/bob/gpu1_array");
	assert_int_equal(num(r, "jobs"), 4);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_built_days_equal_live(void **state)
{
	struct answers la = {0}, lb = {0}, ma = {0}, mb = {0};
	struct gl_test_out o;

	check_live();
	take(g_a.port, &la);
	take(g_b.port, &lb);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built"), 0);
	if (gl_test_run(g_dsn, NULL, &o, "rollup", "--days", "2", NULL) || o.status != 0)
		fail_msg("rollup: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
	/* the two most recent days built, the two before them not */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built"
						 " WHERE day IN ('2026-11-22', '2026-11-23')"),
			 2);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built"), 2);
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_job WHERE day = '2026-11-22'") > 0);
	take(g_a.port, &ma);
	take(g_b.port, &mb);
	same("rules a", &la, &ma);
	same("rules b", &lb, &mb);
	answers_fini(&la);
	answers_fini(&lb);
	answers_fini(&ma);
	answers_fini(&mb);
}

/* cfg: a config file of the test's with text */
static void write_config(char *path, size_t n, const char *name, const char *text)
{
	FILE *f;
	snprintf(path, n, "%s/%s", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp", name);
	f = fopen(path, "w");
	if (!f)
		fail_msg("%s", path);
	fputs(text, f);
	fclose(f);
}

static void rollup(const char *cfg, const char *days)
{
	struct gl_test_out o;
	if (gl_test_run(g_dsn, NULL, &o, "--config", cfg, "rollup", "--days", days, NULL) || o.status != 0)
		fail_msg("rollup: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
}

/* The months' run sums, kept by difference as days are built again, are
 * the sums of the run-days of exactly the days each month lists. */
static void months_are_their_days(void)
{
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_monthly_run") > 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn,
					  "WITH d AS (SELECT mb.month, u.run_key, sum(u.alloc) AS alloc, sum(u.priced) AS priced,"
					  " coalesce(sum(u.priced::numeric * u.rate), 0) AS cost_num,"
					  " coalesce(sum(u.alloc) FILTER (WHERE u.failed), 0) AS f_alloc,"
					  " coalesce(sum(u.priced::numeric * u.rate) FILTER (WHERE u.failed), 0) AS f_cost"
					  " FROM usage_monthly_run_built mb JOIN usage_daily_run u ON u.day = ANY(mb.days)"
					  " GROUP BY 1, 2)"
					  " SELECT count(*) FROM usage_monthly_run m FULL JOIN d USING (month, run_key)"
					  " WHERE (coalesce(m.alloc, 0), coalesce(m.priced, 0), coalesce(m.cost_num, 0),"
					  "  coalesce(m.f_alloc, 0), coalesce(m.f_cost, 0)) IS DISTINCT FROM"
					  " (coalesce(d.alloc, 0), coalesce(d.priced, 0), coalesce(d.cost_num, 0),"
					  "  coalesce(d.f_alloc, 0), coalesce(d.f_cost, 0))"),
			 0);
}

/* Read from the built runs: the failed attempts' cost (job 5's REQUEUED
 * attempt, alice's TIMEOUT) as worked out by hand. */
static void check_built_failed(void)
{
	cJSON *a = gl_test_get_json(g_a.port, "/v1/runs?" WIN, 200);
	assert_non_null(a);
	assert_int_equal(num(run_of(a, "days/job/5"), "failed_attempts_cost_micros"), 14400000);
	assert_int_equal(num(run_of(a, "days/name_user/alice/ckpt"), "failed_attempts_cost_micros"), 25199 * 2000LL);
	cJSON_Delete(a);
}

/* The runs built by the rollup under the rules daemon a answers with (the
 * rollup syncs them: `--config` a's): every answer equal to the live one,
 * byte for byte, now read from the built runs (a GPU-second added to one
 * built run-day shows in the answer, one added to the month's run sums in
 * the month's answer, and the answer is the live one again without it);
 * a changed rule makes the built days from its start stale. The month
 * (2026-11) is read built too: its days no job touched are never built. */
static void test_built_runs_equal_live(void **state)
{
	struct answers live = {0}, built = {0};
	char cfg_a[400], cfg_c[400];
	char *moved;

	take(g_a.port, &live);
	snprintf(cfg_a, sizeof cfg_a, "%s/config.yaml", g_a.dir);
	rollup(cfg_a, "4");
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_run_built"), 4);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM run_rules"), 2);
	/* every GPU job of the four days is a member, in the run live gives it */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM run_members WHERE run_key = 'days/job/5'"), 2);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM run_members"
						 " WHERE run_key = 'days/name_user/alice/ckpt'"),
			 1 + 2); /* 11, and 14's two het components */
	take(g_a.port, &built);
	same("built runs", &live, &built);
	answers_fini(&built);
	check_built_failed();
	/* the answer is read from usage_daily_run: one GPU-second more in job
	 * 5's run on the 22nd is one more in the answer */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "WITH u AS (UPDATE usage_daily_run SET alloc = alloc + 1000000"
						 " WHERE ctid = (SELECT ctid FROM usage_daily_run WHERE run_key = 'days/job/5'"
						 " AND day = '2026-11-22' LIMIT 1) RETURNING 1) SELECT count(*) FROM u"),
			 1);
	moved = body(g_a.port, "/v1/runs?" WIN);
	if (!strcmp(moved, live.s[0]))
		fail_msg("the answer of built days did not read usage_daily_run");
	assert_non_null(strstr(moved, "\"gpu_seconds\":180001"));
	free(moved);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "WITH u AS (UPDATE usage_daily_run SET alloc = alloc - 1000000"
						 " WHERE ctid = (SELECT ctid FROM usage_daily_run WHERE run_key = 'days/job/5'"
						 " AND day = '2026-11-22' AND alloc >= 1000000 LIMIT 1) RETURNING 1) SELECT count(*) FROM u"),
			 1);
	/* a whole month is read from its sums (usage_monthly_run), a window
	 * of days from the days: one GPU-second more in the month's row shows
	 * in the month, not in the four days */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_monthly_run_built"
						 " WHERE month = '2026-11-01' AND cardinality(days) = 4"),
			 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "WITH u AS (UPDATE usage_monthly_run SET alloc = alloc + 1000000"
						 " WHERE run_key = 'days/job/5' RETURNING 1) SELECT count(*) FROM u"),
			 1);
	moved = body(g_a.port, "/v1/runs?window=2026-11");
	assert_non_null(strstr(moved, "\"gpu_seconds\":180001"));
	free(moved);
	/* one micro-unit of cost more in a run's month row is one more in the
	 * answer, and the answer is no longer the live one */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "WITH u AS (UPDATE usage_monthly_run SET alloc = alloc - 1000000,"
						 " cost_num = cost_num + 3600000000"
						 " WHERE run_key = 'days/job/5' RETURNING 1) SELECT count(*) FROM u"),
			 1);
	moved = body(g_a.port, "/v1/runs?window=2026-11");
	assert_non_null(strstr(moved, "\"cost_micros\":180000001"));
	assert_string_not_equal(moved, live.s[2 * 7]);
	free(moved);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "WITH u AS (UPDATE usage_monthly_run SET alloc = alloc + 1000000,"
						 " cost_num = cost_num - 3600000000"
						 " WHERE run_key = 'days/job/5' RETURNING 1) SELECT count(*) FROM u"),
			 1);
	moved = body(g_a.port, "/v1/runs?" WIN);
	assert_string_equal(moved, live.s[0]);
	free(moved);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "WITH u AS (UPDATE usage_monthly_run SET alloc = alloc - 1000000"
						 " WHERE run_key = 'days/job/5' RETURNING 1) SELECT count(*) FROM u"),
			 1);
	moved = body(g_a.port, "/v1/runs?window=2026-11");
	assert_string_equal(moved, live.s[2 * 7]);
	free(moved);
	/* the name_user rule starts a day later: the days from its old start
	 * (the 21st) on are stale, the 20th stays built; the rollup of one day
	 * builds the 23rd again */
	write_config(cfg_c, sizeof cfg_c, "runs-days-c.yaml",
		     RATES "runs:\n  - by: array\n  - by: name_user\n    from: \"2026-11-22T12:00:00Z\"\n");
	rollup(cfg_c, "1");
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day = '2026-11-20'"), 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built"
						 " WHERE day IN ('2026-11-21', '2026-11-22')"),
			 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_run_built WHERE day = '2026-11-23'"), 1);
	/* a's rules are no longer the built ones: a reads live, the same */
	take(g_a.port, &built);
	same("rules changed", &live, &built);
	answers_fini(&built);
	answers_fini(&live);
	rollup(cfg_a, "4");
	months_are_their_days();
}

/* A fleet always has a running job: array 7 gets a fifth task, still
 * running (sacct's End "Unknown"), from the 22nd on. Its run is one run
 * of its built tasks and the open one, read live and merged with the
 * built runs: every answer over the days before today (the open task's
 * time there is firm) is the all-live one byte for byte, the other runs
 * are still read from their run-days, the array's are not. */
static void test_open_job_over_built_days(void **state)
{
	struct answers live = {0}, built = {0};
	char path[400], line[4096], cfg_a[400], *f[40], *moved;
	FILE *in = fopen(TB "sacct_alloc.txt", "r"), *out;
	struct gl_test_out o;
	cJSON *a, *r;
	int k = 0, n;

	snprintf(path, sizeof path, "%s/runs-days-open.txt", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	out = fopen(path, "w");
	if (!in || !out)
		fail_msg("open task: %s", path);
	while (fgets(line, sizeof line, in) && ++k < 10)
		;
	fclose(in);
	line[strcspn(line, "\r\n")] = '\0';
	n = split(line, f);
	assert_true(n >= 28);
	assert_string_equal(f[0], "7_3");
	f[0] = "7_4";
	f[1] = "99";
	f[2] = "days";
	f[10] = f[11] = "2026-11-22T20:00:00";
	f[12] = "2026-11-22T20:00:01";
	f[13] = "Unknown";
	f[17] = "RUNNING";
	f[27] = "99"; /* DBIndex: another allocation */
	for (int i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? "|" : "", f[i]);
	fputc('\n', out);
	fclose(out);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "days", "--file", path, "--fields", g_fields,
			NULL) ||
	    o.status != 0)
		fail_msg("ingest: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
	/* the all-live answers: no day built */
	gl_test_exec_owner(g_dsn, "DELETE FROM usage_daily_built");
	take_n(g_a.port, 7, &live);
	a = gl_test_get_json(g_a.port, "/v1/runs?" WIN, 200);
	r = run_of(a, "days/array/7");
	assert_int_equal(num(r, "jobs"), 5);
	assert_string_equal(cJSON_GetObjectItem(r, "state")->valuestring, "RUNNING");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(r, "last_end")));
	cJSON_Delete(a);
	/* every day up to yesterday built: the task's days too */
	snprintf(cfg_a, sizeof cfg_a, "%s/config.yaml", g_a.dir);
	rollup(cfg_a, "30");
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_run_built"
						 " WHERE day BETWEEN '2026-11-20' AND '2026-11-23'"),
			 4);
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM run_members WHERE run_key = 'days/array/7'"
						" AND end_s IS NULL") == 1);
	take_n(g_a.port, 7, &built);
	same("open job", &live, &built);
	answers_fini(&built);
	/* the array's run is read live (a GPU-second more in its run-days
	 * changes nothing), job 5's from its run-days */
	gl_test_exec_owner(g_dsn, "UPDATE usage_daily_run SET alloc = alloc + 1000000 WHERE ctid IN"
				  " (SELECT min(ctid) FROM usage_daily_run WHERE day = '2026-11-22'"
				  " AND run_key IN ('days/array/7', 'days/job/5') GROUP BY run_key)");
	moved = body(g_a.port, "/v1/runs?" WIN);
	a = cJSON_Parse(moved);
	assert_non_null(a);
	assert_int_equal(num(run_of(a, "days/job/5"), "gpu_seconds"), 180001);
	r = cJSON_Parse(live.s[0]);
	assert_non_null(r);
	assert_int_equal(num(run_of(a, "days/array/7"), "gpu_seconds"), num(run_of(r, "days/array/7"), "gpu_seconds"));
	cJSON_Delete(r);
	cJSON_Delete(a);
	free(moved);
	gl_test_exec_owner(g_dsn, "UPDATE usage_daily_run SET alloc = alloc - 1000000 WHERE ctid IN"
				  " (SELECT min(ctid) FROM usage_daily_run WHERE day = '2026-11-22'"
				  " AND run_key IN ('days/array/7', 'days/job/5') GROUP BY run_key)");
	take_n(g_a.port, 7, &built);
	same("open job, again", &live, &built);
	answers_fini(&built);
	answers_fini(&live);
	months_are_their_days();
}

/* The runs' cost is the window's cost in /v1/chargeback, built or not. */
static void test_runs_equal_chargeback(void **state)
{
	cJSON *runs = gl_test_get_json(g_a.port, "/v1/runs?" WIN, 200),
	      *cb = gl_test_get_json(g_a.port, "/v1/chargeback?" WIN "&aggregate=cluster", 200), *it, *st;
	long long sr = 0, sc = 0;
	assert_non_null(runs);
	assert_non_null(cb);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(runs, "runs")) sr += num(it, "cost_micros");
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(cb, "steps"))
	{
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items")) sc += num(it, "cost_micros");
	}
	assert_true(sr > 0);
	assert_int_equal(sr, sc);
	cJSON_Delete(runs);
	cJSON_Delete(cb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_equal_chargeback),
		cmocka_unit_test(test_built_days_equal_live),
		cmocka_unit_test(test_runs_equal_chargeback),
		cmocka_unit_test(test_built_runs_equal_live),
		cmocka_unit_test(test_runs_equal_chargeback),
		cmocka_unit_test(test_open_job_over_built_days),
		cmocka_unit_test(test_runs_equal_chargeback),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
