/* GET /v1/runs for the month in progress, built by the rollup as the window
 * [month start, T), T the build's time (sql/138): the answer for this month
 * is the live answer for [month start, T) byte for byte (JSON, CSV, a page,
 * an aggregate) with the time it reaches (as_of, age_seconds; X-As-Of in
 * CSV); it stays that snapshot when a job changes after T, until the next
 * build, which then says its new as_of; fresh=1, a scoped token,
 * /v1/runs/{id}, other runs[] rules and a central read the jobs.
 *
 * The jobs are gl_test_synth_jobs' (400 jobs, every 4 one user's one job
 * name: 100 runs) spread over this month up to ten minutes ago, so the test
 * follows the real clock; job 3 still runs, and so the figures of now are
 * not those of T. Whether an answer is the built one is seen by moving
 * every built run's count of jobs by 7 (a figure time does not move). */
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
#include <unistd.h>

static const char config_a[] = GL_TEST_SYNTH_RATES GL_TEST_SYNTH_RUNS_RULE;
static const char config_b[] = GL_TEST_SYNTH_RATES;

/* what follows the window in each of the month's forms */
static const char *const queries[] = {"", "&aggregate=user", "&format=csv", "&limit=7&cursor=13",
				      "&aggregate=kind&state=completed", "&format=csv&limit=9&cursor=50"};
#define N_QUERIES (sizeof queries / sizeof *queries)

static char g_dsn[512], g_cfg[600], g_scoped[64], g_month[16];
static struct gl_test_daemon g_a, g_b;

static char *get(int port, const char *path, const char *token, char **headers)
{
	char *b = gl_test_get_body(port, path, token, headers);
	if (!b)
		fail_msg("GET %s failed", path);
	return b;
}

static void rollup(void)
{
	assert_int_equal(gl_test_cli(g_dsn, "--config", g_cfg, "rollup", NULL), 0);
}

/* The month so far's T as built, 0 when none. */
static long long until(void)
{
	return gl_test_qint_dsn(g_dsn, "SELECT coalesce((SELECT extract(epoch FROM until_at)::bigint FROM runs_month_built"
				       " WHERE until_at IS NOT NULL), 0)");
}

static void tamper(long long d)
{
	char sql[200];
	snprintf(sql, sizeof sql, "UPDATE runs_month SET jobs = jobs + %lld", d);
	assert_true(gl_test_exec_owner(g_dsn, sql) >= 0);
}

static int setup(void **state)
{
	const char *tmp = getenv("GL_TEST_TMP");
	time_t now = time(NULL);
	struct tm tm;
	char from[32], span[32];
	long long start, s;
	PGconn *c;
	gmtime_r(&now, &tm);
	snprintf(g_month, sizeof g_month, "%04d-%02d", tm.tm_year + 1900, tm.tm_mon + 1);
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	start = (long long)timegm(&tm);
	snprintf(from, sizeof from, "%s-01T00:00:00Z", g_month);
	/* up to ten minutes ago (a minute, in a month's first minutes) */
	s = (long long)now - start - 600;
	snprintf(span, sizeof span, "%lld seconds", s > 60 ? s : 60);
	if (gl_test_db_fresh("gl_test_runs_so_far", g_dsn, sizeof g_dsn))
		return -1;
	c = PQconnectdb(g_dsn);
	gl_test_synth_runs(c, g_dsn, 400, from, span, 7);
	PQclear(PQexec(c, "UPDATE jobs SET state = 'RUNNING', end_at = NULL WHERE job_id = '3'"));
	PQfinish(c);
	snprintf(g_cfg, sizeof g_cfg, "%s/runs-so-far.yaml", tmp ? tmp : "/tmp");
	if (gl_test_write_file(g_cfg, config_a) ||
	    gl_test_token_create(g_dsn, "acct7", "finance", (const char *[]){"--scope", "account=acct7", NULL}, g_scoped,
				 sizeof g_scoped, NULL))
		return -1;
	return gl_test_daemon_start(&g_a, g_dsn, config_a, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	if (g_b.pid)
		(void)gl_test_daemon_stop(&g_b);
	return gl_test_daemon_stop(&g_a) == 0 ? 0 : -1;
}

/* The JSON answer from its aggregate on (the window before it is the
 * request's), without the month so far's as_of and age_seconds. */
static char *after_window(const char *body)
{
	const char *a = strstr(body, "\"aggregate\":");
	char *o = strdup(a ? a : body), *p = strstr(o, "\"as_of\":"), *e;
	if (p && (e = strstr(p, "\"age_seconds\":")) && (e = strchr(e, ','))) {
		memmove(p, e + 1, strlen(e + 1) + 1);
	}
	return o;
}

/* Whether the answer to this month's run list says it is the month so far
 * as of t. */
static int says_as_of(int port, long long t, const char *token)
{
	char *b = get(port, "/v1/runs?window=month", token, NULL), want[64], ts[32];
	time_t tt = (time_t)t;
	int yes;
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
	snprintf(want, sizeof want, "\"as_of\":\"%s\",\"age_seconds\":", ts);
	yes = strstr(b, want) != NULL;
	free(b);
	return yes;
}

/* The first run's count of jobs in this month's list (fresh: grouped now). */
static long long first_jobs(int port, int fresh)
{
	cJSON *j = gl_test_get_json(port, fresh ? "/v1/runs?window=month&fresh=1" : "/v1/runs?window=month", 200);
	long long v = gl_test_jnum(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0), "jobs");
	cJSON_Delete(j);
	return v;
}

/* The next month's first instant, RFC 3339. */
static const char *next_month(void)
{
	static char out[32];
	int y, m;
	sscanf(g_month, "%d-%d", &y, &m);
	snprintf(out, sizeof out, "%04d-%02d-01T00:00:00Z", m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1);
	return out;
}

/* Each of the month's forms answered from the build equals the live answer
 * for [month start, T), T the build's until_at. */
static void so_far_is_live_at(long long t)
{
	/* the last: no window= (the route's default, this month) */
	char forms[5][64] = {"window=month", "window=thismonth", "", "", "fresh=0"};
	char ts[32], ms[32];
	time_t tt = (time_t)t;
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
	snprintf(ms, sizeof ms, "%s-01T00:00:00Z", g_month);
	snprintf(forms[2], sizeof forms[2], "window=%s", g_month);
	snprintf(forms[3], sizeof forms[3], "window=%s-01T00:00:00Z,%s", g_month, next_month());
	for (size_t f = 0; f < sizeof forms / sizeof *forms; f++)
		for (size_t i = 0; i < N_QUERIES; i++) {
			char built_path[300], live_path[300], *hb, *hl, *b, *l;
			snprintf(built_path, sizeof built_path, "/v1/runs?%s%s", forms[f], queries[i]);
			snprintf(live_path, sizeof live_path, "/v1/runs?window=%s,%s%s", ms, ts, queries[i]);
			b = get(g_a.port, built_path, NULL, &hb);
			l = get(g_a.port, live_path, NULL, &hl);
			assert_null(strcasestr(hl, "X-As-Of"));
			if (strstr(queries[i], "csv")) {
				char want[64];
				const char *nb = strcasestr(hb, "X-Next-Cursor"), *nl = strcasestr(hl, "X-Next-Cursor");
				snprintf(want, sizeof want, "X-As-Of: %s\r\n", ts);
				assert_non_null(strcasestr(hb, want));
				assert_non_null(strcasestr(hb, "X-Age-Seconds: "));
				assert_true(!nb == !nl);
				if (nb)
					assert_int_equal(strcspn(nb, "\r"), strcspn(nl, "\r"));
				if (strcmp(b, l))
					fail_msg("%s built:\n%.600s\nlive %s:\n%.600s", built_path, b, live_path, l);
			} else {
				char *xb = after_window(b), *xl = after_window(l), want[64];
				snprintf(want, sizeof want, "\"as_of\":\"%s\",\"age_seconds\":", ts);
				assert_non_null(strstr(b, want));
				if (strcmp(xb, xl))
					fail_msg("%s built:\n%.600s\nlive %s:\n%.600s", built_path, xb, live_path, xl);
				free(xb);
				free(xl);
			}
			free(b);
			free(l);
			free(hb);
			free(hl);
		}
}

/* Nothing built yet (a month's first minutes): live, no as_of. */
static void test_live_before_build(void **state)
{
	char *b = get(g_a.port, "/v1/runs?window=month", NULL, NULL);
	assert_non_null(strstr(b, "\"count\":100,"));
	assert_null(strstr(b, "\"as_of\""));
	free(b);
	assert_int_equal(until(), 0);
}

/* The rollup builds the month so far; every form of this month is its
 * answer, the live one for [start, T) byte for byte. */
static void test_so_far_equals_live(void **state)
{
	long long t0 = (long long)time(NULL), t;
	rollup();
	t = until();
	assert_true(t >= t0 && t <= (long long)time(NULL));
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE month = (SELECT month FROM"
						 " runs_month_built WHERE until_at IS NOT NULL)"),
			 100);
	so_far_is_live_at(t);
	/* and it is the built one that answers; fresh=1 groups the jobs */
	tamper(7);
	assert_int_equal(first_jobs(g_a.port, 0), first_jobs(g_a.port, 1) + 7);
	tamper(-7);
	assert_int_equal(first_jobs(g_a.port, 0), first_jobs(g_a.port, 1));
}

/* A rollup with nothing changed keeps the build (and its T). */
static void test_unchanged_kept(void **state)
{
	long long t = until();
	sleep(1);
	rollup();
	assert_int_equal(until(), t);
}

/* A scoped token, /v1/runs/{id} and other rules read the jobs. */
static void test_others_live(void **state)
{
	cJSON *ref = gl_test_get_json(g_a.port, "/v1/runs?window=month&fresh=1", 200), *d;
	cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "runs"), 0);
	char path[200], *b, *f;
	tamper(7);
	b = get(g_a.port, "/v1/runs?window=month", g_scoped, NULL);
	f = get(g_a.port, "/v1/runs?window=month&fresh=1", g_scoped, NULL);
	assert_null(strstr(b, "\"as_of\""));
	assert_string_equal(b, f);
	free(b);
	free(f);
	snprintf(path, sizeof path, "/v1/runs/%s?window=month", cJSON_GetObjectItem(first, "id")->valuestring);
	d = gl_test_get_json(g_a.port, path, 200);
	assert_int_equal(gl_test_jnum(d, "jobs"), gl_test_jnum(first, "jobs"));
	assert_null(cJSON_GetObjectItem(d, "as_of"));
	cJSON_Delete(d);
	assert_int_equal(gl_test_daemon_start(&g_b, g_dsn, config_b, (const char *[]){"--no-ingest", NULL}), 0);
	b = get(g_b.port, "/v1/runs?window=month", NULL, NULL);
	assert_null(strstr(b, "\"as_of\""));
	assert_non_null(strstr(b, "\"count\":400,"));
	free(b);
	assert_int_equal(gl_test_daemon_stop(&g_b), 0);
	tamper(-7);
	cJSON_Delete(ref);
}

/* A job changed after T: the answer stays the T snapshot whole (the
 * tampered count with its as_of), and the next build is the live answer at
 * its own T, which it says. */
static void test_change_after_t(void **state)
{
	long long t = until(), t2;
	tamper(7);
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET name = 'solo' WHERE job_id = '5'") >= 0);
	assert_true(says_as_of(g_a.port, t, NULL));
	assert_int_equal(first_jobs(g_a.port, 0), gl_test_qint_dsn(g_dsn, "SELECT jobs FROM runs_month WHERE ord = 0"
									  " AND month = (SELECT month FROM runs_month_built"
									  " WHERE until_at IS NOT NULL)"));
	{
		char *b = get(g_a.port, "/v1/runs?window=month&limit=1000", NULL, NULL);
		assert_null(strstr(b, "\"name\":\"solo\""));
		free(b);
	}
	sleep(1);
	rollup();
	t2 = until();
	assert_true(t2 > t);
	assert_true(says_as_of(g_a.port, t2, NULL));
	so_far_is_live_at(t2);
	{
		char *b = get(g_a.port, "/v1/runs?window=month&limit=1000", NULL, NULL);
		assert_non_null(strstr(b, "\"name\":\"solo\""));
		assert_non_null(strstr(b, "\"count\":101,"));
		free(b);
	}
}

/* The daemon's runs task builds the month so far when a job changed. */
static void test_daemon_builds(void **state)
{
	long long t = until();
	int waited = 0;
	sleep(1);
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET name = 'solo2' WHERE job_id = '6'") >= 0);
	assert_int_equal(gl_test_daemon_start(&g_b, g_dsn, config_a, NULL), 0);
	while (until() == t && waited++ < 60 * gl_test_timeout_scale())
		sleep(1);
	assert_int_equal(gl_test_daemon_stop(&g_b), 0);
	assert_true(until() > t);
	assert_true(says_as_of(g_a.port, until(), NULL));
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE name = 'solo2' AND jobs = 1"), 1);
}

/* A central (shards) neither builds the month so far nor answers from a
 * build it holds from before. */
static void test_central_live(void **state)
{
	long long t = until();
	char *b;
	assert_true(gl_test_exec_owner(g_dsn, "INSERT INTO shards (shard_id, name, server_name) VALUES (1, 's1', 's1')") >= 0);
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET name = 'solo3' WHERE job_id = '7'") >= 0);
	sleep(1);
	rollup();
	assert_int_equal(until(), t);
	b = get(g_a.port, "/v1/runs?window=month", NULL, NULL);
	assert_null(strstr(b, "\"as_of\""));
	free(b);
	assert_true(gl_test_exec_owner(g_dsn, "DELETE FROM shards") >= 0);
	assert_true(says_as_of(g_a.port, t, NULL));
}

/* fresh= is 0 or 1. */
static void test_bad_fresh(void **state)
{
	cJSON *j = gl_test_get_json(g_a.port, "/v1/runs?window=month&fresh=2", 400);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring, "fresh");
	cJSON_Delete(j);
}

/* Moves the month so far's T ten minutes back (older than the runs task's
 * interval) and says the T it now has. */
static long long age_build(void)
{
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE runs_month_built SET until_at = until_at - interval '10 minutes'"
					      " WHERE until_at IS NOT NULL") >= 0);
	return until();
}

/* The age an answer says of the month so far built at t (JSON's
 * age_seconds, CSV's X-Age-Seconds), each at least now - t when asked
 * and at most now - t when the asking is done: a time this test's clock
 * brackets. */
static void says_age_of(long long t)
{
	long long before = (long long)time(NULL), age_j, age_c;
	char *h, *b;
	const char *x;
	cJSON *j = gl_test_get_json(g_a.port, "/v1/runs?window=month&aggregate=user", 200);
	age_j = gl_test_jnum(j, "age_seconds");
	cJSON_Delete(j);
	b = get(g_a.port, "/v1/runs?window=month&format=csv", NULL, &h);
	assert_non_null(x = strcasestr(h, "X-Age-Seconds: "));
	age_c = atoll(x + strlen("X-Age-Seconds: "));
	free(b);
	free(h);
	assert_true(age_j >= before - t && age_j <= (long long)time(NULL) - t);
	assert_true(age_c >= before - t && age_c <= (long long)time(NULL) - t);
}

/* No mark moved, but the build is older than the task's interval: built
 * again while a job is open (job 3 runs: its seconds grow with the clock),
 * kept once none is (the answer up to T is the answer up to now), built
 * again once a job waits (its queue time grows). */
static void test_aged_rebuilt_while_open(void **state)
{
	long long t;
	rollup();
	t = age_build();
	assert_true(t > 0);
	says_age_of(t);
	rollup();
	assert_true(until() >= t + 600);
	so_far_is_live_at(until());
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET state = 'COMPLETED', end_at = now() - interval '1 minute'"
					      " WHERE job_id = '3'") >= 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM jobs WHERE end_at IS NULL"), 0);
	rollup();
	t = age_build();
	rollup();
	assert_int_equal(until(), t);
	/* a job waiting is open too: its queue time grows with the clock */
	assert_int_equal(gl_test_exec_dsn(g_dsn, "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, state,"
						 " submit_at, req_gpu_micro) SELECT cluster_id, 'db:waits', 'waits', 'u1',"
						 " 'acct1', 'PENDING', now() - interval '20 minutes', 1000000 FROM clusters"),
			 1);
	rollup();
	t = age_build();
	rollup();
	assert_true(until() >= t + 600);
	so_far_is_live_at(until());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_before_build), cmocka_unit_test(test_so_far_equals_live),
		cmocka_unit_test(test_unchanged_kept),	  cmocka_unit_test(test_others_live),
		cmocka_unit_test(test_change_after_t),	  cmocka_unit_test(test_daemon_builds),
		cmocka_unit_test(test_central_live),	  cmocka_unit_test(test_bad_fresh),
		cmocka_unit_test(test_aged_rebuilt_while_open),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
