/* Per-address, per-minute counts for the aggregated audit rows: each
 * minute's rows once it is over, every row at a stop (the last partial
 * minute included), bounded memory whatever the addresses. The detail is
 * checked as parsed JSON (cJSON), its counts against the events added. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/common.h"
#include "gl/tally.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gl_tally_kind kinds[] = {
	{"request_rate", "http.refused", "denied", "reasons"},
	{"request_line", "http.refused", "denied", "reasons"},
	{"200", "http.probe", "ok", "statuses"},
	{"503", "http.probe", "error", "statuses"},
};

#define MAX_ROWS 64
struct got {
	size_t n;
	char addr[MAX_ROWS][64], action[MAX_ROWS][32], outcome[MAX_ROWS][16];
	int64_t from[MAX_ROWS], to[MAX_ROWS];
	unsigned long long count[MAX_ROWS];
	cJSON *detail[MAX_ROWS];
};

static void collect(void *cls, const struct gl_tally_row *r)
{
	struct got *g = cls;
	assert_true(g->n < MAX_ROWS);
	snprintf(g->addr[g->n], sizeof g->addr[0], "%s", r->addr ? r->addr : "(none)");
	snprintf(g->action[g->n], sizeof g->action[0], "%s", r->action);
	snprintf(g->outcome[g->n], sizeof g->outcome[0], "%s", r->outcome);
	g->from[g->n] = r->from_s;
	g->to[g->n] = r->to_s;
	g->count[g->n] = (unsigned long long)r->count;
	g->detail[g->n] = cJSON_Parse(r->detail_json);
	if (!g->detail[g->n])
		fail_msg("detail is not JSON: %s", r->detail_json);
	g->n++;
}

static void got_fini(struct got *g)
{
	for (size_t i = 0; i < g->n; i++)
		cJSON_Delete(g->detail[i]);
	memset(g, 0, sizeof *g);
}

static long long jnum(const cJSON *o, const char *group, const char *k)
{
	const cJSON *g = group ? cJSON_GetObjectItem(o, group) : o;
	const cJSON *v = g ? cJSON_GetObjectItem(g, k) : NULL;
	return v && cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
}

static size_t find(const struct got *g, const char *addr, const char *action)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->addr[i], addr) && !strcmp(g->action[i], action))
			return i;
	fail_msg("no %s row for %s", action, addr);
	return 0;
}

static void test_minutes_rows_and_stop(void **state)
{
	struct gl_tally *t = gl_tally_new(kinds, GL_ARRAY_LEN(kinds), 16);
	struct got g = {0};
	const int64_t m0 = 1795824000; /* a minute's start */
	size_t i;
	for (int k = 0; k < 1000; k++)
		gl_tally_add(t, "10.0.0.1", 0, m0 + k % 60);
	gl_tally_add(t, "10.0.0.1", 1, m0 + 59);
	gl_tally_add(t, "10.0.0.2", 2, m0 + 3);
	gl_tally_add(t, "10.0.0.2", 3, m0 + 4);
	gl_tally_add(t, "10.0.0.2", 2, m0 + 5);
	/* the minute is not over: nothing yet */
	assert_int_equal(gl_tally_flush(t, m0 + 59, 0, collect, &g), 0);
	/* the next minute's first event ends it */
	gl_tally_add(t, "10.0.0.1", 0, m0 + 61);
	assert_int_equal(gl_tally_flush(t, m0 + 61, 0, collect, &g), 3);
	i = find(&g, "10.0.0.1", "http.refused");
	assert_int_equal(g.count[i], 1001);
	assert_int_equal(g.from[i], m0);
	assert_int_equal(g.to[i], m0 + 60);
	assert_string_equal(g.outcome[i], "denied");
	assert_int_equal(jnum(g.detail[i], NULL, "count"), 1001);
	assert_int_equal(jnum(g.detail[i], "reasons", "request_rate"), 1000);
	assert_int_equal(jnum(g.detail[i], "reasons", "request_line"), 1);
	assert_string_equal(cJSON_GetObjectItem(g.detail[i], "from")->valuestring, "2026-11-28T00:00:00Z");
	/* a row per outcome: the 503 apart from the 200s */
	for (size_t k = 0; k < g.n; k++) {
		if (strcmp(g.addr[k], "10.0.0.2"))
			continue;
		if (!strcmp(g.outcome[k], "ok"))
			assert_int_equal(jnum(g.detail[k], "statuses", "200"), 2);
		else
			assert_int_equal(jnum(g.detail[k], "statuses", "503"), 1);
	}
	got_fini(&g);
	/* a stop: the current, partial minute too */
	assert_int_equal(gl_tally_flush(t, m0 + 62, 1, collect, &g), 1);
	assert_int_equal(g.count[0], 1);
	assert_int_equal(g.from[0], m0 + 60);
	got_fini(&g);
	assert_int_equal(gl_tally_flush(t, m0 + 62, 1, collect, &g), 0);
	assert_int_equal(gl_tally_total(t, 0), 1001);
	assert_int_equal(gl_tally_total(t, 2), 2);
	gl_tally_free(t);
}

/* More addresses than max_addrs in a minute: the rest in one row without
 * an address, nothing lost; no flush for many minutes: rows merge into one
 * that spans them, nothing lost either. */
static void test_bounded(void **state)
{
	struct gl_tally *t = gl_tally_new(kinds, GL_ARRAY_LEN(kinds), 4);
	struct got g = {0};
	const int64_t m0 = 1795824000;
	unsigned long long sum = 0;
	for (int a = 0; a < 10; a++) {
		char addr[32];
		snprintf(addr, sizeof addr, "10.0.1.%d", a);
		gl_tally_add(t, addr, 0, m0);
		gl_tally_add(t, addr, 0, m0 + 1);
	}
	assert_int_equal(gl_tally_flush(t, m0, 1, collect, &g), 5);
	{
		size_t i = find(&g, "(none)", "http.refused");
		assert_int_equal(g.count[i], 12);
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(g.detail[i], "addresses_over_limit")));
	}
	for (size_t i = 0; i < g.n; i++)
		sum += g.count[i];
	assert_int_equal(sum, 20);
	got_fini(&g);
	/* 30 minutes of one address without a flush */
	for (int m = 0; m < 30; m++)
		gl_tally_add(t, "10.0.2.1", 1, m0 + 60 * m);
	sum = 0;
	assert_true(gl_tally_flush(t, m0 + 60 * 30, 0, collect, &g) <= 10);
	for (size_t i = 0; i < g.n; i++)
		sum += g.count[i];
	assert_int_equal(sum, 30); /* the last minute ended at now */
	assert_true(g.to[g.n - 1] - g.from[g.n - 1] > 60); /* merged */
	got_fini(&g);
	gl_tally_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minutes_rows_and_stop),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
