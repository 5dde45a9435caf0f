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
	char *b = gl_test_get_body(port, path, NULL, NULL);
	if (!b)
		fail_msg("GET %s failed", path);
	return b;
}

/* Every answer of one daemon: each path as JSON and CSV, then each run's
 * detail (JSON and CSV) over the whole window, in the order of the first
 * path's runs. */
struct answers {
	char *s[4 * N_PATHS + 256];
	size_t n;
};

static void take(int port, struct answers *a)
{
	char p[300];
	cJSON *root, *it;
	a->n = 0;
	for (size_t i = 0; i < N_PATHS; i++) {
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
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
