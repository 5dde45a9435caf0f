/* Paging of /v1/jobs and /v1/audit: a next page is named (next_cursor in
 * JSON, X-Next-Cursor in CSV) only when at least one row follows. A client
 * paging to an exactly full last page was given a cursor, asked once more
 * and got an empty page. The review fixtures hold 7 jobs; the audit rows
 * are the token.create rows of tokens this test makes. Real binary over
 * real HTTP, real PostgreSQL. */
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

#define N_JOBS 7
#define N_TOKENS 3 /* made here, besides the daemon's admin token */

static char g_dsn[512];
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	static const char *const files[] = {"sacct_share.txt", "sacct_price_change.txt", "sacct_end_before_start.txt",
					    "sacct_held.txt"};
	char path[256], tok[64];
	if (gl_test_db_fresh("gl_test_paging", g_dsn, sizeof g_dsn))
		return -1;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(path, sizeof path, "tests/fixtures/review/%s", files[i]);
		if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file", gl_test_fixture(path), NULL))
			return -1;
	}
	if (gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL}))
		return -1;
	for (int i = 0; i < N_TOKENS; i++) {
		snprintf(path, sizeof path, "paging-%d", i);
		if (gl_test_token_create(g_dsn, path, "viewer", NULL, tok, sizeof tok, NULL))
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* GET path as JSON: the length of its array `key`, and its next_cursor in
 * *next (0 when null; the test fails when it is neither). */
static int page(const char *path, const char *key, long long *next)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200), *nc;
	int n;
	assert_non_null(j);
	n = cJSON_GetArraySize(cJSON_GetObjectItem(j, key));
	nc = cJSON_GetObjectItem(j, "next_cursor");
	if (cJSON_IsNull(nc))
		*next = 0;
	else if (cJSON_IsNumber(nc))
		*next = (long long)nc->valuedouble;
	else
		fail_msg("%s: next_cursor neither null nor a number", path);
	cJSON_Delete(j);
	return n;
}

/* Pages of lim through base ("/v1/x?...&limit=" is appended): the rows seen;
 * every page asked for must hold rows and only the last lacks a cursor. */
static int walk(const char *base, const char *key, int lim, int *pages)
{
	char path[256];
	long long next = 0;
	int rows = 0;
	*pages = 0;
	do {
		int n;
		snprintf(path, sizeof path, "%s&limit=%d", base, lim);
		if (next)
			snprintf(path + strlen(path), sizeof path - strlen(path), "&cursor=%lld", next);
		n = page(path, key, &next);
		++*pages;
		if (n == 0)
			fail_msg("%s: an empty page after a cursor (page %d)", path, *pages);
		assert_true(n <= lim);
		if (next)
			assert_int_equal(n, lim);
		rows += n;
		assert_true(*pages <= 100);
	} while (next);
	return rows;
}

static void test_jobs_last_page_exactly_full(void **state)
{
	long long next;
	int pages;

	/* all the jobs on one page of exactly their number: no cursor */
	assert_int_equal(page("/v1/jobs?limit=7", "jobs", &next), N_JOBS);
	assert_int_equal(next, 0);
	/* one fewer: a cursor, leading to the one job left */
	assert_int_equal(page("/v1/jobs?limit=6", "jobs", &next), N_JOBS - 1);
	assert_true(next > 0);
	/* pages that divide the jobs evenly (1 and 7) and one that does not (3) */
	assert_int_equal(walk("/v1/jobs?cluster=c1", "jobs", 1, &pages), N_JOBS);
	assert_int_equal(pages, N_JOBS);
	assert_int_equal(walk("/v1/jobs?cluster=c1", "jobs", 7, &pages), N_JOBS);
	assert_int_equal(pages, 1);
	assert_int_equal(walk("/v1/jobs?cluster=c1", "jobs", 3, &pages), N_JOBS);
	assert_int_equal(pages, 3);
	/* with a window (the other query path) and an offset */
	assert_int_equal(walk("/v1/jobs?window=2026-10", "jobs", 7, &pages), N_JOBS);
	assert_int_equal(pages, 1);
	assert_int_equal(page("/v1/jobs?limit=3&offset=4", "jobs", &next), 3);
	assert_int_equal(next, 0);
}

static void test_jobs_csv_last_page_exactly_full(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv t;

	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/jobs?limit=7&format=csv", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	assert_int_equal(t.nrows, 1 + N_JOBS);
	gl_test_csv_free(&t);
	if (strstr(r.headers, "X-Next-Cursor:"))
		fail_msg("every job is on this page, yet X-Next-Cursor names a next one:\n%s", r.headers);
	gl_test_http_fini(&r);
	/* a page short of the end still names the next */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/jobs?limit=6&format=csv", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "X-Next-Cursor: "));
	gl_test_http_fini(&r);
}

static void test_audit_last_page_exactly_full(void **state)
{
	/* the token.create rows: this test's tokens and the daemon's admin
	 * token (counted, not assumed) */
	long long n = gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM audit_log WHERE action = 'token.create'");
	char path[128];
	long long next;
	int pages;

	assert_true(n >= N_TOKENS + 1);
	snprintf(path, sizeof path, "/v1/audit?action=token.create&limit=%lld", n);
	assert_int_equal(page(path, "entries", &next), n);
	assert_int_equal(next, 0);
	snprintf(path, sizeof path, "/v1/audit?action=token.create&limit=%lld", n - 1);
	assert_int_equal(page(path, "entries", &next), n - 1);
	assert_true(next > 0);
	assert_int_equal(walk("/v1/audit?action=token.create", "entries", 1, &pages), n);
	assert_int_equal(pages, n);
}

/* The X-Next-Cursor header of GET path; 0 when there is none. */
static long long csv_next(const char *path, struct gl_test_csv *t)
{
	struct gl_test_http r;
	const char *h;
	long long next = 0;
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "Content-Type: text/csv"));
	assert_int_equal(gl_test_csv_parse(r.body, t), 0);
	if ((h = strstr(r.headers, "X-Next-Cursor: ")))
		next = atoll(h + strlen("X-Next-Cursor: "));
	gl_test_http_fini(&r);
	return next;
}

static void test_audit_csv_next_cursor(void **state)
{
	/* the same rows as the JSON test above, paged through as CSV by the
	 * header alone: each seq once, newest first, as the JSON lists them */
	long long n = gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM audit_log WHERE action = 'token.create'");
	cJSON *j, *it;
	long long want[16], next = 0, got = 0;
	int pages = 0, k = 0;
	char path[160];

	assert_true(n >= N_TOKENS + 1 && n <= 16);
	snprintf(path, sizeof path, "/v1/audit?action=token.create&limit=%lld", n);
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "entries"))
		want[k++] = (long long)cJSON_GetObjectItem(it, "seq")->valuedouble;
	cJSON_Delete(j);
	assert_int_equal(k, n);
	do {
		struct gl_test_csv t;
		int seq;
		snprintf(path, sizeof path, "/v1/audit?action=token.create&format=csv&limit=2");
		if (next)
			snprintf(path + strlen(path), sizeof path - strlen(path), "&cursor=%lld", next);
		next = csv_next(path, &t);
		seq = gl_test_csv_col(&t, "seq");
		assert_true(seq >= 0);
		assert_true(t.nrows >= 2); /* the header and at least one row */
		for (size_t i = 1; i < t.nrows; i++) {
			assert_true(got < n);
			assert_int_equal(atoll(t.cell[i][seq]), want[got]);
			got++;
		}
		/* the cursor is the page's last seq, as next_cursor is */
		if (next)
			assert_int_equal(next, want[got - 1]);
		gl_test_csv_free(&t);
		assert_true(++pages <= n);
	} while (next);
	assert_int_equal(got, n);
	assert_int_equal(pages, (n + 1) / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs_last_page_exactly_full),
		cmocka_unit_test(test_jobs_csv_last_page_exactly_full),
		cmocka_unit_test(test_audit_last_page_exactly_full),
		cmocka_unit_test(test_audit_csv_next_cursor),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
