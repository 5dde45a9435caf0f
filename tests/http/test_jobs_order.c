/* /v1/jobs lists "newest first" (docs/openapi.yaml): by submit time, not
 * by the order the jobs were ingested. A user who backfills last month's
 * sacct after this month's saw the backfilled jobs on the first page. The
 * review fixtures are ingested out of order (6 Oct, 15 Oct, 5 Oct, 7 Oct);
 * the submit times below are the fixtures' Submit column. Real binary over
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

static char g_dsn[512];
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	static const char *const order[] = {"sacct_share.txt", "sacct_price_change.txt", "sacct_end_before_start.txt",
					    "sacct_held.txt"};
	char path[256];
	if (gl_test_db_fresh("gl_test_jobs_order", g_dsn, sizeof g_dsn))
		return -1;
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		snprintf(path, sizeof path, "tests/fixtures/review/%s", order[i]);
		if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file", gl_test_fixture(path), NULL))
			return -1;
	}
	return gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* job id -> submit time as the fixtures write it (UTC) */
static const struct {
	const char *job_id, *submit;
} g_jobs[] = {
	{"201", "2026-10-15T10:50:00Z"}, {"202", "2026-10-15T10:50:00Z"}, {"401", "2026-10-07T08:00:00Z"},
	{"501", "2026-10-06T09:00:00Z"}, {"502", "2026-10-06T09:00:00Z"}, {"300", "2026-10-05T09:00:00Z"},
	{"303", "2026-10-05T09:00:00Z"},
};
#define N_JOBS (sizeof g_jobs / sizeof g_jobs[0])

static const char *submit_of(const char *job_id)
{
	for (size_t i = 0; i < N_JOBS; i++)
		if (!strcmp(g_jobs[i].job_id, job_id))
			return g_jobs[i].submit;
	fail_msg("unexpected job %s", job_id);
	return NULL;
}

/* Every page of /v1/jobs?limit=lim[&extra] in turn: the job ids in order. */
static size_t list(int lim, const char *extra, char ids[][8], size_t max)
{
	char path[256];
	long long cursor = 0;
	size_t n = 0;
	for (int pages = 0;; pages++) {
		cJSON *j, *it, *nc;
		assert_true(pages <= (int)N_JOBS + 1);
		snprintf(path, sizeof path, "/v1/jobs?limit=%d%s", lim, extra);
		if (cursor)
			snprintf(path + strlen(path), sizeof path - strlen(path), "&cursor=%lld", cursor);
		j = gl_test_get_json(g_d.port, path, 200);
		assert_non_null(j);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "jobs"))
		{
			assert_true(n < max);
			snprintf(ids[n], sizeof ids[n], "%s", cJSON_GetObjectItem(it, "job_id")->valuestring);
			/* the answer's own submit time is the fixture's */
			assert_string_equal(cJSON_GetObjectItem(it, "submit")->valuestring, submit_of(ids[n]));
			n++;
		}
		nc = cJSON_GetObjectItem(j, "next_cursor");
		if (cJSON_IsNull(nc)) {
			cJSON_Delete(j);
			return n;
		}
		cursor = (long long)nc->valuedouble;
		cJSON_Delete(j);
	}
}

static void check_newest_first(char ids[][8], size_t n, size_t want)
{
	assert_int_equal(n, want);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < i; k++)
			if (!strcmp(ids[k], ids[i]))
				fail_msg("job %s listed twice", ids[i]);
		/* RFC 3339 UTC strings of one length compare as times */
		if (i && strcmp(submit_of(ids[i - 1]), submit_of(ids[i])) < 0)
			fail_msg("job %s (submitted %s) listed before job %s (submitted %s)", ids[i - 1],
				 submit_of(ids[i - 1]), ids[i], submit_of(ids[i]));
	}
}

static void test_jobs_newest_submitted_first(void **state)
{
	char all[16][8], paged[16][8];
	size_t n = list(100, "", all, 16);
	check_newest_first(all, n, N_JOBS);
	/* the 15 October jobs first, the 5 October ones last */
	assert_string_equal(submit_of(all[0]), "2026-10-15T10:50:00Z");
	assert_string_equal(all[2], "401");
	assert_string_equal(submit_of(all[N_JOBS - 1]), "2026-10-05T09:00:00Z");
	/* pages of 2 by the cursor: the same jobs in the same order, each once */
	assert_int_equal(list(2, "", paged, 16), N_JOBS);
	for (size_t i = 0; i < N_JOBS; i++)
		assert_string_equal(paged[i], all[i]);
	/* with a window and a page of 1 (ties on the submit time cross pages) */
	n = list(1, "&window=2026-10", paged, 16);
	check_newest_first(paged, n, N_JOBS);
}

static void test_jobs_csv_pages_newest_first(void **state)
{
	struct gl_test_http r;
	char path[128];
	const char *h;
	long long cursor;

	/* CSV: the first page holds the two 15 October jobs; its X-Next-Cursor
	 * leads to 401 */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/jobs?limit=2&format=csv", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, ",201,"));
	assert_non_null(strstr(r.body, ",202,"));
	h = strstr(r.headers, "X-Next-Cursor: ");
	assert_non_null(h);
	cursor = atoll(h + strlen("X-Next-Cursor: "));
	gl_test_http_fini(&r);
	snprintf(path, sizeof path, "/v1/jobs?limit=1&format=csv&cursor=%lld", cursor);
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, ",401,"));
	gl_test_http_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs_newest_submitted_first),
		cmocka_unit_test(test_jobs_csv_pages_newest_first),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
