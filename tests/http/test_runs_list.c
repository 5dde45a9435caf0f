/* GET /v1/runs: the whole list of a built month, streamed piece by piece
 * (GL_RESP_CHUNK bytes a piece), is its pages concatenated byte for byte,
 * JSON and CSV; a page ending where a piece ends is whole; the last
 * page's next cursor is null (JSON) or absent (CSV's X-Next-Cursor).
 *
 * The month is gl_test_synth_jobs' 2,000 jobs of October 2026 under no
 * run rule: every job a run of its own, 2,000 runs (about 1.2 MB of JSON,
 * 0.4 MB of CSV: many pieces). It is first answered live (every job read),
 * then built by the rollup (sql/131) and read from runs_month. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"
#include "gl/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MONTH "/v1/runs?window=2026-10"
#define N_JOBS 2000
#define CONFIG                                                                                                        \
	"rates:\n"                                                                                                    \
	"  - model: a100\n    per_gpu_hour: \"2.50\"\n"                                                               \
	"  - model: h100\n    per_gpu_hour: \"4.00\"\n"

static char g_dsn[512], g_cfg[600];
static struct gl_test_daemon g_d;
/* the whole list, live: JSON and CSV */
static char *g_live_json, *g_live_csv;
static long g_runs;

struct answer {
	char *body;
	char cursor[32]; /* X-Next-Cursor, "" when absent */
};

static void get(const char *path, struct answer *a)
{
	struct gl_test_http r;
	const char *h;
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	if (r.status != 200)
		fail_msg("%s: %ld %s", path, r.status, r.body ? r.body : "");
	a->body = strdup(r.body ? r.body : "");
	a->cursor[0] = '\0';
	if ((h = strcasestr(r.headers, "X-Next-Cursor: ")))
		snprintf(a->cursor, sizeof a->cursor, "%.*s", (int)strcspn(h + 15, "\r\n"), h + 15);
	gl_test_http_fini(&r);
}

static char *whole(const char *fmt)
{
	char url[200];
	struct answer a;
	snprintf(url, sizeof url, MONTH "%s&limit=%ld", fmt, g_runs);
	get(url, &a);
	assert_string_equal(a.cursor, "");
	return a.body;
}

static int setup(void **state)
{
	const char *tmp = getenv("GL_TEST_TMP");
	PGconn *c;
	FILE *f;
	if (gl_test_db_fresh("gl_test_runs_list", g_dsn, sizeof g_dsn))
		return -1;
	c = PQconnectdb(g_dsn);
	gl_test_synth_jobs(c, g_dsn, N_JOBS, "2026-10-01", "31 days");
	PQfinish(c);
	snprintf(g_cfg, sizeof g_cfg, "%s/runs-list.yaml", tmp ? tmp : "/tmp");
	if (!(f = fopen(g_cfg, "w")))
		return -1;
	fputs(CONFIG, f);
	fclose(f);
	return gl_test_daemon_start(&g_d, g_dsn, CONFIG, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	free(g_live_json);
	free(g_live_csv);
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* The run items of a JSON list answer: the text between "runs":[ and
 * ],"count": (the items' own text, commas between them). */
static char *json_items(const char *b)
{
	const char *a = strstr(b, "\"runs\":["), *e = strstr(b, "],\"count\":");
	assert_non_null(a);
	assert_non_null(e);
	a += strlen("\"runs\":[");
	return strndup(a, (size_t)(e - a));
}

/* A CSV answer's rows, without its header line. */
static const char *csv_rows(const char *b)
{
	const char *nl = strchr(b, '\n');
	assert_non_null(nl);
	return nl + 1;
}

static void append(char **all, const char *s, const char *sep)
{
	size_t n = strlen(*all);
	*all = realloc(*all, n + strlen(sep) + strlen(s) + 1);
	sprintf(*all + n, "%s%s", n && *s ? sep : "", s);
}

/* The list in pages of limit, concatenated: each page's items (JSON) or
 * rows (CSV); each page's next cursor is its last run's place, the last
 * page's null / absent. */
static char *paged(int csv, int limit)
{
	char *all = strdup(""), url[300];
	long long cursor = -1, place = -1;
	int pages = 0;
	for (;;) {
		struct answer a;
		char cnt[64], *items;
		long n;
		snprintf(url, sizeof url, MONTH "%s&limit=%d", csv ? "&format=csv" : "", limit);
		if (cursor >= 0)
			snprintf(url + strlen(url), sizeof url - strlen(url), "&cursor=%lld", cursor);
		get(url, &a);
		if (csv) {
			const char *p = csv_rows(a.body);
			n = 0;
			for (const char *q = p; (q = strchr(q, '\n')); q++)
				n++;
			append(&all, p, "");
		} else {
			items = json_items(a.body);
			n = 0;
			for (const char *q = items; (q = strstr(q, "{\"id\":\"")); q++)
				n++;
			append(&all, items, ",");
			free(items);
			snprintf(cnt, sizeof cnt, "],\"count\":%ld,\"next_cursor\":", n);
			assert_non_null(strstr(a.body, cnt));
		}
		place += n;
		pages++;
		if (place + 1 >= g_runs) {
			/* the last page: no next one */
			assert_int_equal(place + 1, g_runs);
			if (csv)
				assert_string_equal(a.cursor, "");
			else
				assert_non_null(strstr(a.body, "\"next_cursor\":null}\n"));
			free(a.body);
			break;
		}
		assert_int_equal(n, limit);
		if (csv) {
			assert_true(a.cursor[0]);
			cursor = atoll(a.cursor);
		} else {
			const char *nc = strstr(a.body, "\"next_cursor\":");
			assert_non_null(nc);
			cursor = atoll(nc + strlen("\"next_cursor\":"));
		}
		/* a built month's place is the run's index in the list */
		assert_int_equal(cursor, place);
		free(a.body);
		assert_true(pages < 1000);
	}
	return all;
}

static void whole_is_pages(const char *json, const char *csv)
{
	static const int limits[] = {37, 500};
	char *items = json_items(json);
	for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
		char *pj = paged(0, limits[i]), *pc = paged(1, limits[i]);
		if (strcmp(pj, items))
			fail_msg("JSON pages of %d differ from the whole list (%zu / %zu bytes)", limits[i], strlen(pj),
				 strlen(items));
		if (strcmp(pc, csv_rows(csv)))
			fail_msg("CSV pages of %d differ from the whole list (%zu / %zu bytes)", limits[i], strlen(pc),
				 strlen(csv_rows(csv)));
		free(pj);
		free(pc);
	}
	free(items);
}

static void first_page_is(int csv, long limit);

/* Live (no day built): the whole list is many pieces, and its pages. */
static void test_live_whole_is_pages(void **state)
{
	char tail[64];
	const char *c;
	/* every job a run: the jobs of the month's window, a few less */
	g_runs = N_JOBS;
	g_live_json = whole("");
	assert_non_null(c = strstr(g_live_json, "],\"count\":"));
	g_runs = atol(c + strlen("],\"count\":"));
	assert_true(g_runs > N_JOBS * 9 / 10 && g_runs <= N_JOBS);
	g_live_csv = whole("&format=csv");
	assert_true(strlen(g_live_json) > 8 * GL_RESP_CHUNK);
	assert_true(strlen(g_live_csv) > 4 * GL_RESP_CHUNK);
	snprintf(tail, sizeof tail, "\"count\":%ld,\"next_cursor\":null}\n", g_runs);
	assert_non_null(strstr(g_live_json, tail));
	whole_is_pages(g_live_json, g_live_csv);
	/* a page of one: its next cursor is place 0, a cursor like another */
	first_page_is(0, 1);
	first_page_is(1, 1);
}

/* Built: the same bytes, read from runs_month (moved by a tamper). */
static void test_built_whole_is_pages(void **state)
{
	struct gl_test_out o;
	char *j, *c;
	if (gl_test_run(g_dsn, NULL, &o, "--config", g_cfg, "rollup", NULL) || o.status != 0)
		fail_msg("rollup: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM runs_month WHERE month = '2026-10-01'"), g_runs);
	j = whole("");
	c = whole("&format=csv");
	assert_string_equal(j, g_live_json);
	assert_string_equal(c, g_live_csv);
	whole_is_pages(j, c);
	free(j);
	free(c);
	/* it is the built month that answers */
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE runs_month SET cost_micros = cost_micros + 7") >= 0);
	j = whole("");
	assert_string_not_equal(j, g_live_json);
	free(j);
	assert_true(gl_test_exec_owner(g_dsn, "UPDATE runs_month SET cost_micros = cost_micros - 7") >= 0);
}

/* The offset in b just past its k-th occurrence of what (k from 1). */
static size_t past_nth(const char *b, const char *what, long k)
{
	const char *p = b;
	for (long i = 0; i < k; i++) {
		p = strstr(p, what);
		assert_non_null(p);
		p += strlen(what);
	}
	return (size_t)(p - b);
}

/* The first page of limit as the whole list says it should be. */
static void first_page_is(int csv, long limit)
{
	char url[200], tail[100];
	char *want;
	size_t cut;
	struct answer a;
	snprintf(url, sizeof url, MONTH "%s&limit=%ld", csv ? "&format=csv" : "", limit);
	get(url, &a);
	if (csv) {
		/* the header's line and limit rows; the next cursor a header */
		cut = past_nth(g_live_csv, "\n", limit + 1);
		want = strndup(g_live_csv, cut);
		if (limit < g_runs) {
			assert_true(a.cursor[0]);
			assert_int_equal(atoll(a.cursor), limit - 1);
		} else {
			assert_string_equal(a.cursor, "");
		}
	} else {
		/* up to the end of run limit: the next item's start less its comma */
		cut = limit < g_runs ? past_nth(g_live_json, ",{\"id\":\"", limit) - strlen(",{\"id\":\"")
				     : (size_t)(strstr(g_live_json, "],\"count\":") - g_live_json);
		if (limit < g_runs)
			snprintf(tail, sizeof tail, "],\"count\":%ld,\"next_cursor\":%ld}\n", limit, limit - 1);
		else
			snprintf(tail, sizeof tail, "],\"count\":%ld,\"next_cursor\":null}\n", limit);
		want = malloc(cut + strlen(tail) + 1);
		memcpy(want, g_live_json, cut);
		strcpy(want + cut, tail);
	}
	if (strcmp(a.body, want))
		fail_msg("first page of %ld (%s): %zu bytes, want %zu", limit, csv ? "CSV" : "JSON", strlen(a.body),
			 strlen(want));
	free(want);
	free(a.body);
}

/* Pages whose last run ends a piece, and the runs around it: the first
 * run to reach GL_RESP_CHUNK bytes ends the first piece. */
static void test_piece_ends_page(void **state)
{
	static const char item[] = ",{\"id\":\"";
	long kj = 1, kc = 1;
	while (past_nth(g_live_json, item, kj) - strlen(item) < (size_t)GL_RESP_CHUNK)
		kj++;
	while (past_nth(g_live_csv, "\n", kc + 1) < (size_t)GL_RESP_CHUNK)
		kc++;
	assert_true(kj > 2 && kj < g_runs - 2 && kc > 2 && kc < g_runs - 2);
	for (long l = kj - 2; l <= kj + 2; l++)
		first_page_is(0, l);
	for (long l = kc - 2; l <= kc + 2; l++)
		first_page_is(1, l);
	/* a page of one (its next cursor 0), the whole list as a page */
	first_page_is(0, 1);
	first_page_is(1, 1);
	first_page_is(0, g_runs);
	first_page_is(1, g_runs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_whole_is_pages),
		cmocka_unit_test(test_built_whole_is_pages),
		cmocka_unit_test(test_piece_ends_page),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
