/* Every refused request is counted and audited in aggregate (issue 24,
 * item 10): a request line too long (414), header fields too large
 * (431), garbage for a request line (closed, or 400), a malformed
 * Content-Length or header line (400, answered by libmicrohttpd itself
 * after the request line) and a flood past
 * server.rate_limit_per_ip (429) each show in
 * gpuledger_http_refused_total and in the audit log as one http.refused
 * row per address and minute whose counts add up to exactly what was
 * refused, the last, partial minute included (written at the stop:
 * 63,190 of a flood's 65,041 refusals reached the log, and none of the
 * others). /healthz answers are http.probe rows in the same way. Each
 * kind comes from its own 127.0.4.x address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;
static int g_running;
static int g_flood_429;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_refusals", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_daemon_start(&g_d, g_dsn,
				 "log:\n  level: warn\nserver:\n  rate_limit_per_ip: 1\n  rate_limit_burst: 20\n",
				 (const char *const[]){"--no-ingest", NULL}) ||
	    !g_d.token[0])
		return -1;
	g_running = 1;
	return 0;
}

static int teardown(void **state)
{
	int st = g_running ? gl_test_daemon_stop(&g_d) : 0;
	return st == 0 ? 0 : -1;
}

static char *repeat(const char *head, char c, size_t n, const char *tail)
{
	size_t h = strlen(head), t = strlen(tail);
	char *s = malloc(h + n + t + 1);
	assert_non_null(s);
	memcpy(s, head, h);
	memset(s + h, c, n);
	memcpy(s + h + n, tail, t + 1);
	return s;
}

/* A metric's value; each scrape from an address of its own (127.0.5.x):
 * the daemon allows one request a second per address */
static long long metric(const char *name)
{
	static int n;
	char from[32];
	struct gl_test_http_opts o = {NULL, 0, from};
	struct gl_test_http r;
	const char *p;
	long long v = -1;
	snprintf(from, sizeof from, "127.0.5.%d", 1 + n++ % 250);
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", "/metrics", NULL, 0, NULL, &o, &r), 0);
	assert_int_equal(r.status, 200);
	if ((p = strstr(r.body, name)))
		v = atoll(p + strlen(name));
	gl_test_http_fini(&r);
	return v;
}

/* What libmicrohttpd answers itself: each is refused as HTTP says, and
 * counted by reason. */
static void test_malformed_requests_are_counted(void **state)
{
	char *long_uri = repeat("GET /", 'a', 100 * 1024, " HTTP/1.1\r\nHost: x\r\n\r\n");
	char *big_header = repeat("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ", 'b', 100 * 1024, "\r\n\r\n");
	static const char garbage[] = "GARBAGE\r\n\r\n";
	static const char bad_length[] = "POST /v1/hook/actions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n";
	static const char no_colon[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n";
	long long line0 = metric("gpuledger_http_refused_total{reason=\"request_line\"} ");
	long long head0 = metric("gpuledger_http_refused_total{reason=\"request_header\"} ");
	int st;
	assert_true(line0 >= 0 && head0 >= 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(gl_test_raw_request(g_d.port, "127.0.4.1", long_uri, strlen(long_uri), 5000), 414);
		assert_int_equal(gl_test_raw_request(g_d.port, "127.0.4.2", big_header, strlen(big_header), 5000), 431);
		/* libmicrohttpd 0.9.75 closes on a line it cannot split
		 * without an answer; later versions answer 400 */
		st = gl_test_raw_request(g_d.port, "127.0.4.3", garbage, strlen(garbage), 5000);
		assert_true(st == 0 || st == 400);
		assert_int_equal(gl_test_raw_request(g_d.port, "127.0.4.4", bad_length, strlen(bad_length), 5000), 400);
		assert_int_equal(gl_test_raw_request(g_d.port, "127.0.4.7", no_colon, strlen(no_colon), 5000), 400);
	}
	free(long_uri);
	free(big_header);
	/* the connection's close reaches the count just after the answer */
	for (int i = 0; i < 100; i++) {
		if (metric("gpuledger_http_refused_total{reason=\"request_line\"} ") - line0 == 6 &&
		    metric("gpuledger_http_refused_total{reason=\"request_header\"} ") - head0 == 9)
			break;
		usleep(50 * 1000);
	}
	assert_int_equal(metric("gpuledger_http_refused_total{reason=\"request_line\"} ") - line0, 6);
	assert_int_equal(metric("gpuledger_http_refused_total{reason=\"request_header\"} ") - head0, 9);
	/* the statuses libmicrohttpd sent after a request line are in the
	 * requests' counts too */
	assert_true(metric("gpuledger_http_requests_total{route=\"unmatched\",code=\"431\"} ") >= 3);
}

static void test_a_flood_is_refused_and_counted(void **state)
{
	struct gl_test_http_opts o = {NULL, 0, "127.0.4.5"};
	long long before = metric("gpuledger_http_refused_total{reason=\"request_rate\"} ");
	int ok = 0;
	/* burst 20 at 1/s: most of 300 are refused */
	for (int i = 0; i < 300; i++) {
		struct gl_test_http r;
		assert_int_equal(gl_test_http_ex(g_d.port, "GET", "/v1/whoami", NULL, 0, NULL, &o, &r), 0);
		if (r.status == 429) {
			g_flood_429++;
			assert_non_null(strstr(r.headers, "Retry-After: 1"));
			assert_non_null(strstr(r.body, "\"code\":\"rate_limited\""));
		} else {
			assert_int_equal(r.status, 200);
			ok++;
		}
		gl_test_http_fini(&r);
	}
	assert_true(g_flood_429 >= 250);
	assert_int_equal(metric("gpuledger_http_refused_total{reason=\"request_rate\"} ") - before, g_flood_429);
	/* /healthz is no part of the limit: a probe answers at any rate */
	o.source_addr = "127.0.4.6";
	for (int i = 0; i < 50; i++) {
		struct gl_test_http r;
		assert_int_equal(gl_test_http_ex(g_d.port, "GET", "/healthz", NULL, 0, NULL, &o, &r), 0);
		assert_int_equal(r.status, 200);
		gl_test_http_fini(&r);
	}
}

/* SUM over the http.refused rows of addr of detail.reasons.<reason>, and
 * the number of rows. */
static long long refused_sum(PGconn *c, const char *addr, const char *action, const char *group, const char *reason,
			     long long *rows)
{
	*rows = gl_test_qintf(c, "SELECT count(*) FROM audit_log WHERE action = '%s' AND source_addr = '%s'", action,
			      addr);
	return gl_test_qintf(c,
			     "SELECT coalesce(sum((detail->'%s'->>'%s')::bigint), 0) FROM audit_log"
			     " WHERE action = '%s' AND source_addr = '%s'",
			     group, reason, action, addr);
}

/* Last: stops the daemon, which writes the partial minute. Every refusal
 * above is in the log, in a row or two per address (one per minute the
 * test ran in), never one a request. */
static void test_the_audit_log_has_every_refusal_in_aggregate(void **state)
{
	static const struct {
		const char *addr, *action, *group, *reason;
		long long want;
	} cases[] = {
		{"127.0.4.1", "http.refused", "reasons", "request_line", 3},
		{"127.0.4.3", "http.refused", "reasons", "request_line", 3},
		{"127.0.4.2", "http.refused", "reasons", "request_header", 3},
		{"127.0.4.4", "http.refused", "reasons", "request_header", 3},
		{"127.0.4.7", "http.refused", "reasons", "request_header", 3},
		{"127.0.4.5", "http.refused", "reasons", "request_rate", -1 /* the flood's */},
		{"127.0.4.6", "http.probe", "statuses", "200", 50},
	};
	PGconn *c;
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
	g_running = 0;
	c = PQconnectdb(g_dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		long long rows, sum = refused_sum(c, cases[i].addr, cases[i].action, cases[i].group, cases[i].reason, &rows);
		long long want = cases[i].want < 0 ? g_flood_429 : cases[i].want;
		if (sum != want || rows < 1 || rows > 2)
			fail_msg("%s %s %s: %lld in %lld rows, want %lld in 1 or 2", cases[i].addr, cases[i].action,
				 cases[i].reason, sum, rows, want);
	}
	/* the rows say what they stand for */
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'http.refused'"
					 " AND (outcome <> 'denied' OR actor <> 'anonymous' OR detail->>'from' IS NULL"
					 "  OR detail->>'to' IS NULL OR (detail->>'count')::bigint < 1)"),
			 0);
	/* no row a request for any of them */
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'http.request'"
					 " AND source_addr IN ('127.0.4.1','127.0.4.2','127.0.4.3','127.0.4.4','127.0.4.6','127.0.4.7')"),
			 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'http.request'"
					 " AND source_addr = '127.0.4.5'"),
			 300 - g_flood_429);
	PQfinish(c);
	/* and the chain over them verifies */
	{
		struct gl_test_out o;
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "verify", NULL), 0);
		assert_int_equal(o.status, 0);
		gl_test_out_fini(&o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_requests_are_counted),
		cmocka_unit_test(test_a_flood_is_refused_and_counted),
		cmocka_unit_test(test_the_audit_log_has_every_refusal_in_aggregate),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
