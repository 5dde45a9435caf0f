/* server.max_answer_lines: a /v1/chargeback answer holds at most that many
 * lines (steps x groups), so what one request costs the daemon in memory
 * is bounded whatever it asks. The oracle is the same request's line
 * count from a daemon without a tight bound: at that bound it is answered
 * whole, one below it is refused with 400 naming the parameter to change.
 * Real Philly jobs (tests/fixtures/philly), real PostgreSQL, the real
 * binary over HTTP. */
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

#define HOURLY "/v1/chargeback?window=2017-11-21&step=hour&aggregate=user"
#define MONTHLY "/v1/chargeback?window=2017-11&aggregate=user"

static char g_dsn[512];

static size_t lines_of(const cJSON *j)
{
	const cJSON *s;
	size_t n = 0;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "steps"))
	n += (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(s, "items"));
	return n;
}

/* The lines of path's answer with the default bound. */
static size_t count_lines(const char *path)
{
	struct gl_test_daemon d;
	cJSON *j;
	size_t n;
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL}), 0);
	j = gl_test_get_json(d.port, path, 200);
	assert_non_null(j);
	n = lines_of(j);
	cJSON_Delete(j);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
	return n;
}

/* path under a daemon bounded to max lines: 200 with every line, or 400
 * naming param. */
static void under_bound(const char *path, size_t max, size_t want_lines, const char *param)
{
	struct gl_test_daemon d;
	char cfg[64];
	cJSON *j;
	snprintf(cfg, sizeof cfg, "server:\n  max_answer_lines: %zu\n", max);
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, cfg, (const char *[]){"--no-ingest", NULL}), 0);
	j = gl_test_get_json(d.port, path, param ? 400 : 200);
	assert_non_null(j);
	if (param) {
		const cJSON *e = cJSON_GetObjectItem(j, "error");
		assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, param);
		assert_non_null(strstr(cJSON_GetObjectItem(e, "message")->valuestring, "server.max_answer_lines"));
	} else {
		assert_int_equal(lines_of(j), want_lines);
	}
	cJSON_Delete(j);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static void test_hourly_lines_bounded(void **state)
{
	size_t n = count_lines(HOURLY);
	(void)state;
	assert_true(n > 24); /* several users an hour: the bound has room to bite */
	under_bound(HOURLY, n, n, NULL);
	under_bound(HOURLY, n - 1, 0, "step");
}

static void test_one_step_names_aggregate(void **state)
{
	size_t n = count_lines(MONTHLY);
	(void)state;
	assert_true(n > 2);
	under_bound(MONTHLY, n, n, NULL);
	under_bound(MONTHLY, n - 1, 0, "aggregate");
}

static int setup(void **state)
{
	(void)state;
	return gl_test_philly_db("gl_test_answer_bound", g_dsn, sizeof g_dsn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hourly_lines_bounded),
		cmocka_unit_test(test_one_step_names_aggregate),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
