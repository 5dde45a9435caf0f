/* The API's parameter and error contract over a real daemon: error bodies
 * are strict UTF-8 JSON whatever the client sent, values longer than a
 * handler's buffer are refused instead of cut, empty and value-less
 * parameters are 400, enumerated values and integers are checked, 405
 * carries Allow, and the /metrics text stays parseable whatever a cluster
 * is called.
 *
 * Expected answers are written down here from docs/openapi.yaml and the
 * Prometheus text format, not taken from the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/promtext.h"
#include "gl/routes.h"
#include "gl/server.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;
static PGconn *g_c;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_apiparams", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	if (gl_test_daemon_start(&g_d, g_dsn, "log:\n  level: warn\n", (const char *const[]){"--no-ingest", NULL}) ||
	    !g_d.token[0])
		return -1;
	return 0;
}

static int teardown(void **state)
{
	int st = gl_test_daemon_stop(&g_d);
	PQfinish(g_c);
	return st == 0 ? 0 : -1;
}

/* GET path: asserts the status, a strict UTF-8 JSON error body and, when
 * param is given, that the error names it. */
static void expect_error(const char *path, long status, const char *param)
{
	struct gl_test_http r;
	cJSON *j, *e, *pm;
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	if (r.status != status)
		fprintf(stderr, "%.200s -> %ld: %.300s\n", path, r.status, r.body);
	assert_int_equal(r.status, status);
	assert_true(gl_test_utf8_valid((const unsigned char *)r.body, r.len));
	j = cJSON_Parse(r.body);
	assert_non_null(j);
	e = cJSON_GetObjectItem(j, "error");
	assert_non_null(e);
	assert_true(cJSON_IsString(cJSON_GetObjectItem(e, "message")));
	pm = cJSON_GetObjectItem(e, "param");
	if (param) {
		if (!cJSON_IsString(pm) || strcmp(pm->valuestring, param))
			fprintf(stderr, "%.200s: param %s, want %s (%.300s)\n", path, cJSON_IsString(pm) ? pm->valuestring : "(none)",
				param, r.body);
		assert_true(cJSON_IsString(pm));
		assert_string_equal(pm->valuestring, param);
	}
	cJSON_Delete(j);
	gl_test_http_fini(&r);
}

static long get_status(const char *path, char **body)
{
	struct gl_test_http r;
	long st;
	assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
	st = r.status;
	if (st != 200 && !body)
		fprintf(stderr, "%.200s -> %ld: %.300s\n", path, st, r.body);
	if (body)
		*body = strdup(r.body);
	gl_test_http_fini(&r);
	return st;
}

static void test_error_bodies_are_strict_utf8(void **state)
{
	char path[1800];
	/* a two-byte character repeated past the 400-byte message: at one of
	 * two consecutive lengths the cut lands inside a character */
	for (int reps = 200; reps <= 203; reps++) {
		size_t n = (size_t)snprintf(path, sizeof path, "/v1/chargeback?window=");
		for (int i = 0; i < reps; i++)
			n += (size_t)snprintf(path + n, sizeof path - n, "%%C3%%A9");
		expect_error(path, 400, "window");
	}
	/* raw bytes that are not UTF-8 in the path (404) and the method (405) */
	expect_error("/v1/\xff\xfe", 404, NULL);
	expect_error("/v1/chargeback%FF", 404, NULL);
	{
		struct gl_test_http r;
		assert_int_equal(gl_test_http(g_d.port, "DELETE\xff", "/v1/chargeback", NULL, 0, NULL, &r), 0);
		assert_true(r.status >= 400);
		assert_true(gl_test_utf8_valid((const unsigned char *)r.body, r.len));
		gl_test_http_fini(&r);
	}
}

/* POST /v1/hook/actions: a body the database could not store (bytes that
 * are not UTF-8) or a number no int holds is the client's mistake, 400
 * naming the field, never a 5xx (which reads as an outage and is logged
 * as one); nothing is recorded. */
static void test_post_body_mistakes_are_400(void **state)
{
	static const struct {
		const char *body, *param;
	} cases[] = {
		{"{\"cluster\":\"c1\",\"job_id\":\"1\",\"policy\":\"p\",\"stage\":\"act\",\"ok\":true,"
		 "\"command\":[\"scancel\",\"\xff\xfe\"]}", "body"},
		{"{\"cluster\":\"c\xc3\",\"job_id\":\"1\",\"policy\":\"p\",\"stage\":\"act\",\"ok\":true}", "body"},
		{"{\"cluster\":\"c1\",\"job_id\":\"1\",\"policy\":\"p\",\"stage\":\"act\",\"ok\":false,"
		 "\"exit_status\":1e300}", "exit_status"},
		{"{\"cluster\":\"c1\",\"job_id\":\"1\",\"policy\":\"p\",\"stage\":\"act\",\"ok\":false,"
		 "\"exit_status\":4294967297}", "exit_status"},
	};
	long long before = gl_test_qint(g_c, "SELECT count(*) FROM hook_actions");
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct gl_test_http r;
		cJSON *j, *pm;
		assert_int_equal(gl_test_http(g_d.port, "POST", "/v1/hook/actions", cases[i].body, strlen(cases[i].body),
					      (const char *const[]){"Content-Type: application/json", NULL}, &r),
				 0);
		if (r.status != 400)
			fprintf(stderr, "case %zu -> %ld: %.300s\n", i, r.status, r.body);
		assert_int_equal(r.status, 400);
		j = cJSON_Parse(r.body);
		assert_non_null(j);
		pm = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param");
		assert_true(cJSON_IsString(pm));
		assert_string_equal(pm->valuestring, cases[i].param);
		cJSON_Delete(j);
		gl_test_http_fini(&r);
	}
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions"), before);
}

/* Values longer than a handler's field are refused naming the parameter,
 * never cut into another valid request. */
static void test_long_values_are_refused_not_cut(void **state)
{
	char path[1400];
	size_t n;
	/* 13 excluded days past the old 512-byte field: test_forecast */
	expect_error("/v1/forecast?horizon=000000000000001xyz", 400, "horizon");
	expect_error("/v1/forecast?level=80,95,80,95,80,95", 400, "level");
	expect_error("/v1/capacity/forecast?horizon=000000000000000000000007", 400, "horizon");
	n = (size_t)snprintf(path, sizeof path, "/v1/chargeback?aggregate=team");
	for (int i = 0; i < 260; i++)
		path[n++] = ',';
	snprintf(path + n, sizeof path - n, "user");
	expect_error(path, 400, "aggregate");
	n = (size_t)snprintf(path, sizeof path, "/v1/forecast?window=");
	for (int i = 0; i < 130; i++)
		path[n++] = '7';
	path[n] = '\0';
	expect_error(path, 400, "window");
}

#define WEIRD "we\"ird\\cl\nx"

struct weird_count {
	int samples, weird;
};

static int on_sample(void *ctx, const struct gl_promtext_sample *s)
{
	struct weird_count *w = ctx;
	w->samples++;
	for (size_t i = 0; i < s->nlabels; i++)
		if (s->labels[i].name.len == 7 && !memcmp(s->labels[i].name.p, "cluster", 7) &&
		    s->labels[i].value.len == strlen(WEIRD) && !memcmp(s->labels[i].value.p, WEIRD, strlen(WEIRD)))
			w->weird++;
	return 0;
}

/* A cluster called we"ird\cl<newline>x: every label holding it is escaped
 * (\" \\ \n, the text format's three escapes) and the whole scrape parses.
 * Its run left a watermark: the inventory gauges list only clusters with
 * data (docs/ingest.md, "A new cluster"). */
static void test_metrics_labels_are_escaped(void **state)
{
	struct gl_test_http r;
	struct weird_count w = {0, 0};
	struct gl_promtext_handler h = {on_sample, NULL, &w};
	struct gl_promtext_opts po = {GL_PROMTEXT_0_0_4, 0};
	struct gl_promtext_stats st;
	struct gl_err err = {0};
	PGresult *res = PQexecParams(g_c,
				     "WITH c AS (INSERT INTO clusters (name, kind) VALUES ($1, 'slurm') RETURNING cluster_id),"
				     " w AS (INSERT INTO ingest_state (source, cluster_id, watermark)"
				     "  SELECT 'sacct', cluster_id, now() - interval '1 hour' FROM c)"
				     " INSERT INTO ingest_runs (source, cluster_id, started_at, finished_at, status, lines_read)"
				     " SELECT 'sacct', cluster_id, now() - interval '1 hour', now() - interval '1 hour', 'ok', 3 FROM c",
				     1, NULL, (const char *[]){WEIRD}, NULL, NULL, 0);
	assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
	PQclear(res);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "cluster=\"we\\\"ird\\\\cl\\nx\""));
	assert_int_equal(gl_promtext_parse(r.body, r.len, &po, &h, &st, &err), 0);
	if (st.bad_lines)
		fprintf(stderr, "bad line %zu: %s\n", st.bad[0].line, st.bad[0].reason);
	assert_int_equal(st.bad_lines, 0);
	/* last run timestamp, rows, skipped; the exporter's inventory GPUs */
	assert_true(w.weird >= 4);
	assert_true(w.samples > 10);
	gl_test_http_fini(&r);
}

/* "?window", "window=" and "window=7d%00junk" are 400 naming the parameter
 * on every kind of route: none is read as absent (the default) or as "7d". */
static void test_empty_and_valueless_parameters_are_400(void **state)
{
	static const struct {
		const char *path, *param;
	} cases[] = {
		{"/v1/chargeback?window", "window"},
		{"/v1/chargeback?format", "format"},
		{"/v1/chargeback?window=", "window"},
		{"/v1/chargeback?window=7d%00junk", "window"},
		{"/v1/chargeback?filter=", "filter"},
		{"/v1/chargeback?aggregate=team,", "aggregate"},
		{"/v1/chargeback?aggregate=,team", "aggregate"},
		{"/v1/chargeback?aggregate=team,,user", "aggregate"},
		{"/v1/jobs?limit", "limit"},
		{"/v1/jobs?cluster=", "cluster"},
		{"/v1/ingest/runs?limit", "limit"},
		{"/v1/capacity/forecast?horizon=", "horizon"},
		{"/v1/capacity/forecast?cluster=", "cluster"},
		{"/v1/forecast?level=", "level"},
		{"/v1/forecast?aggregate=team,", "aggregate"},
		{"/v1/forecast?exclude=2026-01-01;", "exclude"},
		{"/v1/forecast?exclude=;2026-01-01", "exclude"},
		{"/v1/audit?actor=", "actor"},
		{"/v1/audit?action=", "action"},
		{"/v1/audit?outcome", "outcome"},
		{"/v1/reports?month=", "month"},
		{"/v1/idle/candidates?policy=", "policy"},
		{"/v1/queue?aggregate=", "aggregate"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		expect_error(cases[i].path, 400, cases[i].param);
	/* the same routes with real values still answer */
	assert_int_equal(get_status("/v1/chargeback?window=7d&aggregate=team,user", NULL), 200);
	assert_int_equal(get_status("/v1/audit?window=7d&outcome=ok", NULL), 200);
}

/* Enumerated values from docs/openapi.yaml: anything else is 400 naming
 * the parameter, and each documented value is accepted. */
static void test_enumerated_values_are_checked(void **state)
{
	static const char *const outcomes[] = {"ok", "denied", "error"};
	static const char *const sources[] = {"sacct", "kube", "dcgm", "slurm-nodes", "kube-nodes"};
	char path[128];
	expect_error("/v1/audit?outcome=bogus", 400, "outcome");
	expect_error("/v1/audit?outcome=OK", 400, "outcome");
	expect_error("/v1/ingest/runs?source=bogus", 400, "source");
	expect_error("/v1/reports/showback?month=2017-11&format=zip&table=bogus", 400, "table");
	expect_error("/v1/reports/showback?month=2017-11&format=html&table=bogus", 400, "table");
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "/v1/audit?outcome=%s", outcomes[i]);
		assert_int_equal(get_status(path, NULL), 200);
	}
	for (size_t i = 0; i < 5; i++) {
		snprintf(path, sizeof path, "/v1/ingest/runs?source=%s", sources[i]);
		assert_int_equal(get_status(path, NULL), 200);
	}
}

/* Integers are ASCII digits only, and one past LLONG_MAX is not read as
 * LLONG_MAX: no sign, no space (%2B is '+', %20 ' '), no overflow. */
static void test_integer_parameters_are_digits_only(void **state)
{
	static const struct {
		const char *path, *param;
	} cases[] = {
		{"/v1/audit?cursor=99999999999999999999", "cursor"},
		{"/v1/audit?cursor=9223372036854775808", "cursor"},
		{"/v1/jobs?cursor=99999999999999999999", "cursor"},
		{"/v1/jobs?limit=%2B5", "limit"},
		{"/v1/jobs?limit=%205", "limit"},
		{"/v1/jobs?limit=5%20", "limit"},
		{"/v1/jobs?offset=-0", "offset"},
		{"/v1/ingest/runs?limit=%2B5", "limit"},
		{"/v1/audit?limit=0x10", "limit"},
		{"/v1/hook/actions?limit=%2B5", "limit"},
		{"/v1/idle?limit=%2B5", "limit"},
		{"/v1/idle?limit=%205", "limit"},
		{"/v1/forecast?horizon=%2B5", "horizon"},
		{"/v1/capacity/forecast?horizon=%205", "horizon"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		expect_error(cases[i].path, 400, cases[i].param);
	/* the largest cursor is still a number */
	assert_int_equal(get_status("/v1/audit?cursor=9223372036854775807", NULL), 200);
	assert_int_equal(get_status("/v1/jobs?limit=5&offset=0", NULL), 200);
	assert_int_equal(get_status("/v1/idle?limit=5", NULL), 200);
}

/* The Allow header's value, "" when absent. */
static void header_value(const char *headers, const char *name, char *out, size_t n)
{
	size_t k = strlen(name);
	out[0] = '\0';
	for (const char *l = headers; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncasecmp(l, name, k) && l[k] == ':') {
			const char *v = l + k + 1;
			while (*v == ' ')
				v++;
			snprintf(out, n, "%.*s", (int)strcspn(v, "\r\n"), v);
			return;
		}
}

/* RFC 9110: 405 lists the methods the resource has in Allow. */
static void test_405_names_the_allowed_methods(void **state)
{
	static const struct {
		const char *method, *path, *allow;
	} cases[] = {
		{"POST", "/v1/chargeback", "GET, HEAD"},
		{"DELETE", "/v1/hook/actions", "GET, HEAD, POST"},
		{"PUT", "/healthz", "GET, HEAD"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct gl_test_http r;
		char allow[64];
		cJSON *j;
		assert_int_equal(gl_test_http(g_d.port, cases[i].method, cases[i].path, NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 405);
		header_value(r.headers, "Allow", allow, sizeof allow);
		assert_string_equal(allow, cases[i].allow);
		j = cJSON_Parse(r.body);
		assert_non_null(j);
		assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "code")->valuestring,
				    "method_not_allowed");
		cJSON_Delete(j);
		gl_test_http_fini(&r);
	}
}

/* Every CSV is sent as a file: the queue's too. */
static void test_every_csv_is_an_attachment(void **state)
{
	static const char *const paths[] = {
		"/v1/queue?format=csv", "/v1/jobs?format=csv", "/v1/ingest/runs?format=csv", "/v1/audit?format=csv",
		"/v1/chargeback?format=csv", "/v1/idle?format=csv", "/v1/capacity?format=csv", "/v1/inventory?format=csv",
	};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		struct gl_test_http r;
		char cd[128], ct[64];
		assert_int_equal(gl_test_http(g_d.port, "GET", paths[i], NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		header_value(r.headers, "Content-Type", ct, sizeof ct);
		header_value(r.headers, "Content-Disposition", cd, sizeof cd);
		if (strncmp(cd, "attachment; filename=\"", 22))
			fprintf(stderr, "%s: Content-Disposition '%s'\n", paths[i], cd);
		assert_string_equal(ct, "text/csv; charset=utf-8");
		assert_int_equal(strncmp(cd, "attachment; filename=\"", 22), 0);
		assert_non_null(strstr(cd, ".csv\""));
		gl_test_http_fini(&r);
	}
}

static int runs_listed(const char *path)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200);
	int n;
	assert_non_null(j);
	n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs"));
	cJSON_Delete(j);
	return n;
}

/* docs/openapi.yaml: /v1/ingest/runs lists 100 runs unless limit says. */
static void test_ingest_runs_default_limit_is_100(void **state)
{
	long long total;
	assert_true(gl_test_exec_dsn(g_dsn, "INSERT INTO ingest_runs (source, started_at, finished_at, status)"
					    " SELECT 'dcgm', now() - make_interval(mins => g), now(), 'ok'"
					    " FROM generate_series(1, 150) g") == 150);
	total = gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs");
	assert_true(total > 100);
	assert_int_equal(runs_listed("/v1/ingest/runs"), 100);
	assert_int_equal(runs_listed("/v1/ingest/runs?limit=1000"), total);
	assert_int_equal(runs_listed("/v1/ingest/runs?source=dcgm&limit=1000"), 150);
}

static int rfc3339_utc(const char *s)
{
	/* YYYY-MM-DDTHH:MM:SSZ */
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	if (strlen(s) != sizeof shape - 1)
		return 0;
	for (size_t i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i])
			return 0;
	return 1;
}

/* The verified window is shown as RFC 3339 times, a future end included
 * (it was "infinity"). */
static void test_audit_verify_window_is_rfc3339(void **state)
{
	static const struct {
		const char *window, *from, *to;
	} cases[] = {
		{"2030-01", "2030-01-01T00:00:00Z", "2030-02-01T00:00:00Z"},
		{"2020-02", "2020-02-01T00:00:00Z", "2020-03-01T00:00:00Z"},
	};
	char path[96];
	cJSON *j, *w;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(path, sizeof path, "/v1/audit/verify?window=%s", cases[i].window);
		j = gl_test_get_json(g_d.port, path, 200);
		assert_non_null(j);
		w = cJSON_GetObjectItem(j, "window");
		assert_int_equal(cJSON_GetArraySize(w), 2);
		assert_string_equal(cJSON_GetArrayItem(w, 0)->valuestring, cases[i].from);
		assert_string_equal(cJSON_GetArrayItem(w, 1)->valuestring, cases[i].to);
		cJSON_Delete(j);
	}
	/* a window ending now */
	j = gl_test_get_json(g_d.port, "/v1/audit/verify?window=7d", 200);
	assert_non_null(j);
	w = cJSON_GetObjectItem(j, "window");
	assert_true(rfc3339_utc(cJSON_GetArrayItem(w, 0)->valuestring));
	assert_true(rfc3339_utc(cJSON_GetArrayItem(w, 1)->valuestring));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	assert_true(cJSON_GetObjectItem(j, "rows")->valuedouble > 0);
	cJSON_Delete(j);
}

/* Window edge cases (docs/openapi.yaml, window): a window whose end would
 * be in year 10000 cannot be written in RFC 3339 and is 400 naming window;
 * a leap second is 400 saying so (it read as "end before start"); a
 * fractional pair is widened to whole seconds (it was truncated to an
 * empty window and answered "end before start"). */
static void test_window_edges(void **state)
{
	static const struct {
		const char *window, *says;
	} bad[] = {
		{"9999-12", "9999-12-31T23:59:59Z"},
		{"9999-12-31", "9999-12-31T23:59:59Z"},
		{"2026-12-31T23:59:60Z,2027-01-01T00:00:00Z", "leap second"},
		{"2026-11-01T00:00:00.7Z,2026-11-01T00:00:00.5Z", "end before start"},
	};
	char path[160];
	cJSON *j, *w;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct gl_test_http r;
		cJSON *e;
		snprintf(path, sizeof path, "/v1/audit/verify?window=%s", bad[i].window);
		expect_error(path, 400, "window");
		assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
		j = cJSON_Parse(r.body);
		e = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "message");
		if (!strstr(e->valuestring, bad[i].says) || strncmp(e->valuestring, "window: ", 8))
			fail_msg("%s: message '%s' lacks '%s'", bad[i].window, e->valuestring, bad[i].says);
		cJSON_Delete(j);
		gl_test_http_fini(&r);
	}
	/* the last second that can be written is a valid end */
	j = gl_test_get_json(g_d.port, "/v1/audit/verify?window=9999-12-31T00:00:00Z,9999-12-31T23:59:59Z", 200);
	assert_non_null(j);
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/audit/verify?window=2026-11-01T00:00:00.5Z,2026-11-01T00:00:00.7Z", 200);
	assert_non_null(j);
	w = cJSON_GetObjectItem(j, "window");
	assert_string_equal(cJSON_GetArrayItem(w, 0)->valuestring, "2026-11-01T00:00:00Z");
	assert_string_equal(cJSON_GetArrayItem(w, 1)->valuestring, "2026-11-01T00:00:01Z");
	cJSON_Delete(j);
}

/* api.max_window_days (docs/config.md, openapi's window parameter) holds on
 * every route that takes a window: one day over it is 400 naming window. */
static void test_every_window_keeps_max_window_days(void **state)
{
	char path[160];
	int n = 0;
	for (const struct gl_server_route *rt = gl_routes; rt->path; rt++) {
		const char *p = rt->params;
		if (strcmp(rt->method, "GET") || !p || !strstr(p, "window"))
			continue;
		snprintf(path, sizeof path, "%s?window=401d", rt->path);
		expect_error(path, 400, "window");
		n++;
	}
	assert_true(n >= 8);
}

/* A window in year 0 (issue 24): /v1/audit and /v1/audit/verify answered
 * 500 ("date/time field value out of range") where the other routes
 * answered 200; PostgreSQL has no year 0, so every route now answers 400
 * naming window, and the first day of year 1 is a window like any other. */
static void test_year_zero_window_is_400_everywhere(void **state)
{
	static const char *const zero[] = {"0000-01", "0000-12-31", "0000-06-01,0001-01-02"};
	char path[200];
	int n = 0;
	for (const struct gl_server_route *rt = gl_routes; rt->path; rt++) {
		const char *p = rt->params;
		if (strcmp(rt->method, "GET") || !p || !strstr(p, "window"))
			continue;
		for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
			snprintf(path, sizeof path, "%s?window=%s", rt->path, zero[i]);
			expect_error(path, 400, "window");
		}
		n++;
	}
	assert_true(n >= 8);
	assert_int_equal(get_status("/v1/audit?window=0001-01", NULL), 200);
	assert_int_equal(get_status("/v1/audit/verify?window=0001-01", NULL), 200);
	assert_int_equal(get_status("/v1/chargeback?window=0001-01", NULL), 200);
}

/* A date that names no day is 400 naming window and saying the day does
 * not exist (main answered "unknown window", as for a typo of a kind) */
static void test_impossible_day_is_named(void **state)
{
	static const struct {
		const char *window, *says;
	} cases[] = {
		{"2026-11-31", "the day 2026-11-31 does not exist: November 2026 has 30 days"},
		{"2026-02-29", "the day 2026-02-29 does not exist: February 2026 has 28 days"},
		{"2026-04-00", "the day 2026-04-00 does not exist"},
		{"2026-13", "'2026-13' has no month 13"},
	};
	char path[128];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct gl_test_http r;
		snprintf(path, sizeof path, "/v1/chargeback?window=%s", cases[i].window);
		expect_error(path, 400, "window");
		assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
		if (!strstr(r.body, cases[i].says))
			fprintf(stderr, "%s: %s\n", cases[i].window, r.body);
		assert_non_null(strstr(r.body, cases[i].says));
		assert_null(strstr(r.body, "unknown window"));
		gl_test_http_fini(&r);
	}
	assert_int_equal(get_status("/v1/chargeback?window=2028-02-29", NULL), 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_bodies_are_strict_utf8),
		cmocka_unit_test(test_post_body_mistakes_are_400),
		cmocka_unit_test(test_long_values_are_refused_not_cut),
		cmocka_unit_test(test_metrics_labels_are_escaped),
		cmocka_unit_test(test_empty_and_valueless_parameters_are_400),
		cmocka_unit_test(test_enumerated_values_are_checked),
		cmocka_unit_test(test_integer_parameters_are_digits_only),
		cmocka_unit_test(test_405_names_the_allowed_methods),
		cmocka_unit_test(test_every_csv_is_an_attachment),
		cmocka_unit_test(test_ingest_runs_default_limit_is_100),
		cmocka_unit_test(test_audit_verify_window_is_rfc3339),
		cmocka_unit_test(test_every_window_keeps_max_window_days),
		cmocka_unit_test(test_window_edges),
		cmocka_unit_test(test_year_zero_window_is_400_everywhere),
		cmocka_unit_test(test_impossible_day_is_named),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
