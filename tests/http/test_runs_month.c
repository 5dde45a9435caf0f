/* GET /v1/runs for a calendar month whose runs the rollup built (sql/131):
 * the answer is the live answer byte for byte (JSON and CSV, the run list,
 * aggregates, a state filter), and it is the built one only while the
 * runs[] rules, the month's built days and the jobs are those it was built
 * from; a scoped token and /v1/runs/{id} read the jobs.
 *
 * The jobs are gl_test_synth_jobs' month (400 jobs of 1-8 GPUs, 5 min to 2
 * days, October 2026), every 4 of them one user's one job name: 100 runs
 * of 4 under runs: [{by: name_user}] (bench_runs' shape, smaller), every
 * 7th job FAILED. Whether an answer is the built one is seen by changing
 * the built rows: every run's cost moved by 7 micro-units in runs_month
 * shows in the answer only when it is read from there. */
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

#define MONTH "/v1/runs?window=2026-10"
static const char config_a[] = GL_TEST_SYNTH_RATES GL_TEST_SYNTH_RUNS_RULE;
/* no rule: every job a run of its own */
static const char config_b[] = GL_TEST_SYNTH_RATES;

/* kind: every run in one group, of both states (a user or account has
 * one run here) */
static const char *const paths[] = {MONTH, MONTH "&aggregate=user", MONTH "&format=csv",
				    MONTH "&aggregate=kind&state=completed", MONTH "&limit=7&cursor=13",
				    MONTH "&state=failed&limit=3&cursor=20", MONTH "&format=csv&limit=9&cursor=50"};
#define N_PATHS (sizeof paths / sizeof *paths)

static char g_dsn[512], g_cfg[600], g_scoped[64];
static struct gl_test_daemon g_a, g_b; /* g_b: other rules, one test */
static char *g_live[N_PATHS];

static char *body(int port, const char *path, const char *token)
{
	char *b = gl_test_get_body(port, path, token, NULL);
	if (!b)
		fail_msg("GET %s failed", path);
	return b;
}

static void rollup(void)
{
	struct gl_test_out o;
	if (gl_test_run(g_dsn, NULL, &o, "--config", g_cfg, "rollup", NULL) || o.status != 0)
		fail_msg("rollup: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
}

static int setup(void **state)
{
	const char *tmp = getenv("GL_TEST_TMP");
	PGconn *c;
	FILE *f;
	if (gl_test_db_fresh("gl_test_runs_month", g_dsn, sizeof g_dsn))
		return -1;
	c = PQconnectdb(g_dsn);
	/* every 7th job FAILED: runs of both final states, for state= */
	gl_test_synth_runs(c, g_dsn, 400, "2026-10-01", "31 days", 7);
	PQfinish(c);
	snprintf(g_cfg, sizeof g_cfg, "%s/runs-month.yaml", tmp ? tmp : "/tmp");
	if (!(f = fopen(g_cfg, "w")))
		return -1;
	fputs(config_a, f);
	fclose(f);
	if (gl_test_token_create(g_dsn, "acct7", "finance", (const char *[]){"--scope", "account=acct7", NULL}, g_scoped,
				 sizeof g_scoped, NULL))
		return -1;
	return gl_test_daemon_start(&g_a, g_dsn, config_a, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	for (size_t i = 0; i < N_PATHS; i++)
		free(g_live[i]);
	/* a failed test leaves its daemon: stopped here */
	if (g_b.pid)
		(void)gl_test_daemon_stop(&g_b);
	return gl_test_daemon_stop(&g_a) == 0 ? 0 : -1;
}

/* Moves every built run's cost by d micro-units. */
static void tamper(long long d)
{
	char sql[200];
	snprintf(sql, sizeof sql, "UPDATE runs_month SET cost_micros = cost_micros + %lld", d);
	assert_true(gl_test_exec_owner(g_dsn, sql) >= 0);
}

/* Whether the answer to the run list is the (tampered) built one. */
static int served_built(int port)
{
	char *b = body(port, MONTH, NULL);
	int built = strcmp(b, g_live[0]) != 0;
	free(b);
	return built;
}

/* The same where the answer moved otherwise too: the newest run's cost
 * is the reference's plus 7 (a run the changes below do not touch). */
static int first_run_tampered(int port)
{
	cJSON *now = gl_test_get_json(port, MONTH, 200), *ref = cJSON_Parse(g_live[0]);
	long long a = gl_test_jnum(cJSON_GetArrayItem(cJSON_GetObjectItem(now, "runs"), 0), "cost_micros");
	long long b = gl_test_jnum(cJSON_GetArrayItem(cJSON_GetObjectItem(ref, "runs"), 0), "cost_micros");
	cJSON_Delete(now);
	cJSON_Delete(ref);
	return a == b + 7;
}

/* Before any day is built: the live answers, the reference. */
static void test_live_first(void **state)
{
	for (size_t i = 0; i < N_PATHS; i++)
		g_live[i] = body(g_a.port, paths[i], NULL);
	assert_non_null(strstr(g_live[0], "\"count\":100"));
	/* both states among the runs, so state= keeps some of them */
	assert_non_null(strstr(g_live[0], "\"state\":\"FAILED\""));
	assert_non_null(strstr(g_live[0], "\"state\":\"COMPLETED\""));
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month_built"), 0);
}

/* Each run of the answer's list printed on a line of *all. */
static void append_runs(char **all, const cJSON *j)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "runs"))
	{
		char *one = cJSON_PrintUnformatted(it);
		size_t len = strlen(*all);
		*all = realloc(*all, len + strlen(one) + 2);
		sprintf(*all + len, "%s\n", one);
		cJSON_free(one);
	}
}

/* The run list's items, each printed, concatenated over pages of limit
 * (from path, which has a query); checks each page's bound and cursor. */
static char *walk_pages(const char *path, int limit, int *pages)
{
	char *all = strdup(""), url[300];
	long long cursor = -1;
	*pages = 0;
	do {
		cJSON *j, *runs, *next;
		if (cursor < 0)
			snprintf(url, sizeof url, "%s&limit=%d", path, limit);
		else
			snprintf(url, sizeof url, "%s&limit=%d&cursor=%lld", path, limit, cursor);
		j = gl_test_get_json(g_a.port, url, 200);
		runs = cJSON_GetObjectItem(j, "runs");
		next = cJSON_GetObjectItem(j, "next_cursor");
		assert_true(cJSON_GetArraySize(runs) <= limit);
		assert_int_equal(gl_test_jnum(j, "count"), cJSON_GetArraySize(runs));
		append_runs(&all, j);
		if (cJSON_IsNull(next)) {
			cursor = -1;
		} else {
			/* a full page, and the cursor moves on */
			assert_int_equal(cJSON_GetArraySize(runs), limit);
			assert_true((long long)next->valuedouble > cursor);
			cursor = (long long)next->valuedouble;
		}
		cJSON_Delete(j);
		++*pages;
		assert_true(*pages < 1000);
	} while (cursor >= 0);
	return all;
}

/* The list paged: every run once, in the list's order, the last page's
 * next_cursor null, a cursor past the end an empty last page; the same
 * for a state filter. */
static void pages_are_the_list(void)
{
	static const char *const lists[] = {MONTH, MONTH "&state=failed"};
	for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
		char url[200];
		int pages;
		char *whole, *paged;
		snprintf(url, sizeof url, "%s&limit=1000", lists[l]);
		cJSON *j = gl_test_get_json(g_a.port, url, 200);
		whole = strdup("");
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "next_cursor")));
		append_runs(&whole, j);
		cJSON_Delete(j);
		paged = walk_pages(lists[l], 7, &pages);
		assert_true(pages > 1);
		if (strcmp(whole, paged))
			fail_msg("%s: pages of 7 differ from the list:\n%.600s\n%.600s", lists[l], paged, whole);
		free(paged);
		free(whole);
	}
	{
		cJSON *j = gl_test_get_json(g_a.port, MONTH "&cursor=100000", 200);
		assert_int_equal(gl_test_jnum(j, "count"), 0);
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "next_cursor")));
		cJSON_Delete(j);
	}
}

/* CSV's next cursor is a header, absent on the last page. */
static void csv_cursor(void)
{
	struct gl_test_http r;
	assert_int_equal(gl_test_http(g_a.port, "GET", MONTH "&format=csv&limit=9&cursor=50", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strcasestr(r.headers, "X-Next-Cursor: 59\r\n"));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_http(g_a.port, "GET", MONTH "&format=csv&limit=9&cursor=95", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_null(strcasestr(r.headers, "X-Next-Cursor"));
	gl_test_http_fini(&r);
}

static void test_live_pages(void **state)
{
	pages_are_the_list();
	csv_cursor();
}

/* A bad page is 400 naming the parameter; an aggregate is not paged. */
static void test_bad_page(void **state)
{
	static const struct {
		const char *q, *param;
	} bad[] = {{"&limit=0", "limit"},	  {"&limit=x", "limit"},	   {"&limit=250001", "limit"},
		   {"&cursor=-1", "cursor"},	  {"&cursor=1x", "cursor"},	   {"&aggregate=user&limit=5", "limit"},
		   {"&aggregate=user&cursor=5", "cursor"}};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char url[200];
		cJSON *j, *e;
		snprintf(url, sizeof url, MONTH "%s", bad[i].q);
		j = gl_test_get_json(g_a.port, url, 400);
		e = cJSON_GetObjectItem(j, "error");
		assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, bad[i].param);
		cJSON_Delete(j);
	}
}

/* The rollup builds October's runs; the answers are the live ones. */
static void test_built_equals_live(void **state)
{
	struct gl_test_out o;
	/* --no-runs: the days alone */
	if (gl_test_run(g_dsn, NULL, &o, "--config", g_cfg, "rollup", "--no-runs", NULL) || o.status != 0)
		fail_msg("rollup --no-runs: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day = '2026-10-15'") == 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month_built"), 0);
	rollup();
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month_built WHERE month = '2026-10-01'"), 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE month = '2026-10-01'"), 100);
	/* November is not over: not built whole */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month_built WHERE until_at IS NULL"), 1);
	for (size_t i = 0; i < N_PATHS; i++) {
		char *b = body(g_a.port, paths[i], NULL);
		if (strcmp(b, g_live[i]))
			fail_msg("%s built:\n%.600s\nlive:\n%.600s", paths[i], b, g_live[i]);
		free(b);
	}
	/* and it is the built one that answers */
	tamper(7);
	assert_true(served_built(g_a.port));
	tamper(-7);
	assert_false(served_built(g_a.port));
	/* the built month's pages, as the live ones */
	pages_are_the_list();
	csv_cursor();
}

/* A scoped token's runs are its jobs' lines of their own window: live. */
static void test_scoped_reads_jobs(void **state)
{
	char *b;
	tamper(7);
	b = body(g_a.port, MONTH, g_scoped);
	/* acct7's jobs are 7, 207: runs train-7 (u7) alone */
	assert_non_null(strstr(b, "\"count\":1,\"next_cursor\":null}"));
	assert_null(strstr(b, "train-8\""));
	free(b);
	tamper(-7);
}

/* /v1/runs/{id} lists members: read from the jobs. */
static void test_detail_reads_jobs(void **state)
{
	cJSON *root = cJSON_Parse(g_live[0]), *first = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0), *d;
	char path[200];
	snprintf(path, sizeof path, "/v1/runs/%s?window=2026-10", cJSON_GetObjectItem(first, "id")->valuestring);
	tamper(7);
	d = gl_test_get_json(g_a.port, path, 200);
	assert_int_equal(gl_test_jnum(d, "cost_micros"), gl_test_jnum(first, "cost_micros"));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "members")), gl_test_jnum(first, "attempts"));
	tamper(-7);
	cJSON_Delete(d);
	cJSON_Delete(root);
}

/* Other runs[] rules: the built month is not theirs. */
static void test_other_rules_read_jobs(void **state)
{
	char *s;
	assert_int_equal(gl_test_daemon_start(&g_b, g_dsn, config_b, (const char *[]){"--no-ingest", NULL}), 0);
	tamper(7);
	s = body(g_b.port, MONTH, NULL);
	/* job 400 starts on November 1st: 399 in October */
	assert_non_null(strstr(s, "\"count\":399"));
	tamper(-7);
	/* the runs task under the other rules builds the month again, though
	 * no mark moved: then it is the built month that answers them */
	{
		char cfg_b[700], *t;
		struct gl_test_out o;
		snprintf(cfg_b, sizeof cfg_b, "%s.b", g_cfg);
		assert_int_equal(gl_test_write_file(cfg_b, config_b), 0);
		if (gl_test_run(g_dsn, NULL, &o, "--config", cfg_b, "rollup", NULL) || o.status != 0)
			fail_msg("rollup: exit %d: %s", o.status, o.err);
		gl_test_out_fini(&o);
		tamper(7);
		t = body(g_b.port, MONTH, NULL);
		assert_string_not_equal(t, s);
		free(t);
		tamper(-7);
	}
	free(s);
	assert_int_equal(gl_test_daemon_stop(&g_b), 0);
	/* and this daemon's rules' month again */
	rollup();
}

/* A day of the month rebuilt after its runs, or unbuilt: the jobs. */
static void test_days_changed_read_jobs(void **state)
{
	tamper(7);
	assert_true(served_built(g_a.port));
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE usage_daily_built SET built_at = built_at + interval '1 second'"
					      " WHERE day = '2026-10-15'") >= 0);
	assert_false(served_built(g_a.port));
	assert_true(gl_test_exec_owner(g_dsn, "DELETE FROM usage_daily_built WHERE day = '2026-10-15'") >= 0);
	assert_false(served_built(g_a.port));
	/* built again: so are the runs, the answer unchanged */
	rollup();
	assert_false(served_built(g_a.port));
	tamper(7);
	assert_true(served_built(g_a.port));
	tamper(-7);
}

/* What changes no answer of October keeps its built runs: a poll's
 * last_seen_at and elapsed time on October's jobs, a job of September. */
static void test_other_changes_keep_built(void **state)
{
	tamper(7);
	assert_true(served_built(g_a.port));
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET last_seen_at = now(), elapsed_s = elapsed_s + 1") >= 0);
	assert_true(served_built(g_a.port));
	assert_true(gl_test_exec_owner(g_dsn, "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, state, submit_at,"
					      " start_at, end_at, gpu_micro) SELECT cluster_id, 'db:sept', 'sept', 'u1', 'COMPLETED',"
					      " '2026-09-10', '2026-09-10', '2026-09-11', 1000000 FROM clusters LIMIT 1") >= 0);
	assert_true(served_built(g_a.port));
	/* and a job of October does not */
	assert_true(first_run_tampered(g_a.port));
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET state = 'FAILED' WHERE job_id = '5'") >= 0);
	assert_false(first_run_tampered(g_a.port));
	/* built again: the reference is the new answer */
	rollup();
	free(g_live[0]);
	g_live[0] = body(g_a.port, MONTH, NULL);
}

/* A renamed job leaves its run of 4 for one of its own: the answer
 * follows at once, and the next rollup builds it. */
static void test_job_change_regroups(void **state)
{
	char *b;
	tamper(7);
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET name = 'solo' WHERE job_id = '123'") >= 0);
	b = body(g_a.port, MONTH, NULL);
	assert_non_null(strstr(b, "\"count\":101"));
	assert_non_null(strstr(b, "\"name\":\"solo\""));
	free(b);
	rollup();
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE month = '2026-10-01'"), 101);
	tamper(7);
	b = body(g_a.port, MONTH, NULL);
	assert_non_null(strstr(b, "\"count\":101"));
	free(b);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE name = 'solo' AND jobs = 1"), 1);
	tamper(-7);
}

/* The daemon builds a month its jobs changed, in its runs task: started
 * with no source of its own, its periodic tasks run at once. */
static void test_daemon_builds_runs(void **state)
{
	int waited = 0;
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET name = 'solo2' WHERE job_id = '124'") >= 0);
	assert_int_equal(gl_test_daemon_start(&g_b, g_dsn, config_a, NULL), 0);
	while (gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE name = 'solo2' AND jobs = 1") != 1 &&
	       waited++ < 60 * gl_test_timeout_scale())
		sleep(1);
	assert_int_equal(gl_test_daemon_stop(&g_b), 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE name = 'solo2' AND jobs = 1"), 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE month = '2026-10-01'"), 102);
}

/* The days' built marks as they were at the last rollup: a change to a
 * job unbuilds its days too (and a pending one the days it waited), which
 * alone sends the month to the jobs; put back, the jobs' mark alone can. */
static void days_as_built(void)
{
	assert_true(gl_test_exec_owner(g_dsn,
				       "INSERT INTO usage_daily_built SELECT * FROM runs_days_kept"
				       " ON CONFLICT DO NOTHING") >= 0);
}

/* A job moved out of October counts in October (its old row's month), as
 * one moved in counts in the month it enters: October's runs go live.
 * The days' marks are put back, so only the update trigger's old row can. */
static void test_job_moved_out(void **state)
{
	free(g_live[0]);
	g_live[0] = body(g_a.port, MONTH, NULL);
	assert_true(gl_test_exec_owner(g_dsn, "CREATE TABLE runs_days_kept AS SELECT * FROM usage_daily_built") >= 0);
	tamper(7);
	assert_true(first_run_tampered(g_a.port));
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET submit_at = '2026-12-10', start_at = '2026-12-10',"
					      " end_at = '2026-12-11' WHERE job_id = '9'") >= 0);
	days_as_built();
	assert_false(first_run_tampered(g_a.port));
	tamper(-7);
	assert_true(gl_test_exec_owner(g_dsn, "DROP TABLE runs_days_kept") >= 0);
}

/* A central (a database with shards) never builds a month's runs, even
 * one whose days it holds as built: its jobs are its shards'. Nor does it
 * answer from a month built before it had shards, whose marks no write
 * of its shards moves. */
static void test_central_builds_no_runs(void **state)
{
	struct gl_test_out o;
	rollup();
	tamper(7);
	assert_true(first_run_tampered(g_a.port));
	assert_true(gl_test_exec_owner(g_dsn, "INSERT INTO shards (shard_id, name, server_name) VALUES (1, 's1', 's1')") >= 0);
	assert_false(first_run_tampered(g_a.port));
	tamper(-7);
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE jobs SET name = 'solo3' WHERE job_id = '125'") >= 0);
	if (gl_test_run(g_dsn, NULL, &o, "--config", g_cfg, "rollup", NULL) || o.status != 0)
		fail_msg("rollup: exit %d: %s", o.status, o.err);
	assert_non_null(strstr(o.out, "0 months of runs"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE name = 'solo3'"), 0);
	assert_true(gl_test_exec_owner(g_dsn, "DELETE FROM shards") >= 0);
}

/* A job inserted into the month, and one deleted from it, make the answer
 * the live one until the next rollup: both triggers mark the job's months
 * (one function, sql/134). */
static void test_insert_delete_read_jobs(void **state)
{
	rollup();
	free(g_live[0]);
	g_live[0] = body(g_a.port, MONTH, NULL);
	assert_true(gl_test_exec_owner(g_dsn, "CREATE TABLE runs_days_kept AS SELECT * FROM usage_daily_built") >= 0);
	tamper(7);
	assert_true(first_run_tampered(g_a.port));
	assert_true(gl_test_exec_owner(
			    g_dsn,
			    "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, state, submit_at,"
			    " start_at, end_at, gpu_micro) SELECT cluster_id, 'db:oct', 'oct', 'u1', 'COMPLETED',"
			    " '2026-10-03', '2026-10-03', '2026-10-04', 1000000 FROM clusters LIMIT 1") >= 0);
	days_as_built();
	assert_false(first_run_tampered(g_a.port));
	rollup();
	assert_true(gl_test_exec_owner(g_dsn,
				       "DROP TABLE runs_days_kept;"
				       " CREATE TABLE runs_days_kept AS SELECT * FROM usage_daily_built") >= 0);
	tamper(7);
	assert_true(first_run_tampered(g_a.port));
	assert_true(gl_test_exec_owner(g_dsn, "DELETE FROM jobs WHERE job_key = 'db:oct'") >= 0);
	days_as_built();
	assert_false(first_run_tampered(g_a.port));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_first),	     cmocka_unit_test(test_live_pages),
		cmocka_unit_test(test_bad_page),	     cmocka_unit_test(test_built_equals_live),
		cmocka_unit_test(test_scoped_reads_jobs),   cmocka_unit_test(test_detail_reads_jobs),
		cmocka_unit_test(test_other_rules_read_jobs), cmocka_unit_test(test_days_changed_read_jobs),
		cmocka_unit_test(test_other_changes_keep_built), cmocka_unit_test(test_job_change_regroups),
		cmocka_unit_test(test_daemon_builds_runs),  cmocka_unit_test(test_job_moved_out),
		cmocka_unit_test(test_central_builds_no_runs),
		cmocka_unit_test(test_insert_delete_read_jobs),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
