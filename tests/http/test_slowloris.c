/* Nobody can hold the door (issue 24, item 4), over the real daemon and
 * real sockets on 127.0.0.x:
 *  - a slowloris, 600 sockets from 10 addresses each sending a header
 *    byte every second: another client is served at once, and the
 *    trickling sockets are closed at server.header_timeout_s though their
 *    bytes keep coming (the 30 s timeout counted inactivity only: they
 *    held every connection for as long as they liked);
 *  - 1,200 idle sockets from 20 addresses: the same;
 *  - the refusals are counted in /metrics, and logged as a few lines
 *    with counts (each refused connection wrote a WARN line);
 *  - the reserved share: with the other connections taken, a new one
 *    still reaches /healthz and /metrics, and nothing else.
 * Counts and times are bounded: each test takes under ~10 s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEADER_TIMEOUT_S 3

static char g_dsn[512];
static struct gl_test_daemon g_d;
static int g_running;

static int setup(void **state)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_max < 4096)
		rl.rlim_max = 4096; /* as root; else the tests that need it skip */
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (gl_test_db_fresh("gl_test_slowloris", g_dsn, sizeof g_dsn))
		return -1;
	/* the defaults but the headers' deadline, short so the test is */
	if (gl_test_daemon_start(&g_d, g_dsn, "log:\n  level: warn\nserver:\n  header_timeout_s: 3\n",
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

static int fd_room(int want)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	return rl.rlim_cur >= (rlim_t)want + 64;
}

/* GET path from `from`: the status, and the seconds it took in *took. */
static long timed_get(const char *from, const char *path, double *took)
{
	struct gl_test_http_opts o = {NULL, 0, from};
	struct gl_test_http r;
	double t0 = gl_test_now_s();
	long st;
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", path, NULL, 0, NULL, &o, &r), 0);
	*took = gl_test_now_s() - t0;
	st = r.status;
	gl_test_http_fini(&r);
	return st;
}

/* n sockets from `addrs` addresses 127.0.<net>.1.. round-robin; each
 * sends `first` at once. Returns how many connected. */
static int open_crowd(int *fds, int n, int net, int addrs, const char *first)
{
	int ok = 0;
	for (int i = 0; i < n; i++) {
		char from[32];
		snprintf(from, sizeof from, "127.0.%d.%d", net, 1 + i % addrs);
		fds[i] = gl_test_connect_from(g_d.port, from);
		if (fds[i] >= 0) {
			ok++;
			if (first)
				(void)send(fds[i], first, strlen(first), MSG_NOSIGNAL);
		}
	}
	return ok;
}

/* Sockets of fds the server has closed (EOF or reset), polled without
 * waiting; closed ones are closed here too and set to -1. */
static int reap_closed(int *fds, int n)
{
	int closed = 0;
	for (int i = 0; i < n; i++) {
		struct pollfd p = {.fd = fds[i], .events = POLLIN};
		char buf[256];
		ssize_t r;
		if (fds[i] < 0) {
			closed++;
			continue;
		}
		if (poll(&p, 1, 0) <= 0)
			continue;
		r = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN)) {
			close(fds[i]);
			fds[i] = -1;
			closed++;
		}
	}
	return closed;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static long long metric(const char *name)
{
	struct gl_test_http r;
	const char *p;
	long long v = -1;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	if ((p = strstr(r.body, name)))
		v = atoll(p + strlen(name));
	gl_test_http_fini(&r);
	return v;
}

/* A whole crowd's run: while it holds its sockets (trickling a byte a
 * second when trickle), a client from `other` is served within 1 s, every
 * second; by HEADER_TIMEOUT_S + 2 s every crowd socket has been closed by
 * the server. */
static void crowd_run(int n, int net, int addrs, int trickle, const char *other)
{
	static int fds[2000];
	double t0, took;
	int connected, closed = 0;
	connected = open_crowd(fds, n, net, addrs, trickle ? "GET /healthz HTTP/1.1\r\nHost: x\r\n" : NULL);
	assert_true(connected >= n * 9 / 10);
	t0 = gl_test_now_s();
	while (gl_test_now_s() - t0 < HEADER_TIMEOUT_S + 2 && closed < n) {
		long st = timed_get(other, "/v1/whoami", &took);
		if (st != 200 || took >= 1.0)
			fail_msg("%s at %.1f s into the crowd: %ld in %.3f s", other, gl_test_now_s() - t0, st, took);
		if (trickle)
			for (int i = 0; i < n; i++)
				if (fds[i] >= 0)
					(void)send(fds[i], "X", 1, MSG_NOSIGNAL);
		usleep(900 * 1000);
		closed = reap_closed(fds, n);
	}
	fprintf(stderr, "  %d of %d sockets from %d addresses (%s) closed by the server within %.1f s\n", closed, n,
		addrs, trickle ? "a byte a second each" : "idle", gl_test_now_s() - t0);
	if (closed < n)
		fail_msg("%d of %d %s sockets still open %.1f s after they connected (header_timeout_s %d)", n - closed,
			 n, trickle ? "trickling" : "idle", gl_test_now_s() - t0, HEADER_TIMEOUT_S);
	close_all(fds, n);
}

static void test_slowloris_from_ten_addresses(void **state)
{
	if (!fd_room(600))
		skip();
	crowd_run(600, 1, 10, 1, "127.0.9.1");
	assert_true(metric("gpuledger_http_refused_total{reason=\"connections_per_ip\"} ") > 0);
	assert_true(metric("gpuledger_http_refused_total{reason=\"header_timeout\"} ") > 0);
}

static void test_idle_sockets_from_twenty_addresses(void **state)
{
	if (!fd_room(1200))
		skip();
	crowd_run(1200, 2, 20, 0, "127.0.9.2");
}

/* Last: stops the daemon. The refusals above (over a thousand) are a few
 * WARN lines with their counts, not a line each. */
static void test_refusals_are_logged_with_counts(void **state)
{
	char *log = NULL;
	int lines = 0, with_counts = 0;
	assert_int_equal(gl_test_daemon_sigterm(&g_d, 10, &log, NULL), 0);
	g_running = 0;
	for (char *l = log; l && *l;) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		if (strstr(l, "WARN") && (strstr(l, "refused") || strstr(l, "connection limit"))) {
			lines++;
			with_counts += strstr(l, "connections_per_ip") != NULL;
		}
		l = nl ? nl + 1 : l + strlen(l);
	}
	free(log);
	fprintf(stderr, "  %d WARN lines about refusals\n", lines);
	assert_true(with_counts >= 1);
	assert_true(lines <= 5);
}

/* The reserved share, on a daemon of its own with 32 connections, 8 of
 * them reserved: 24 keep-alive connections (3 addresses x 8, each after
 * one request) take the rest; a new connection reaches /healthz, and gets
 * 503 for anything else; once one of the 24 goes, the next is served. */
static void test_reserved_share_for_probes(void **state)
{
	struct gl_test_daemon d;
	char dsn[512], req[512];
	int fds[24], fd, st;
	static const char health[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	if (gl_test_db_fresh("gl_test_slowloris_reserved", dsn, sizeof dsn))
		fail();
	assert_int_equal(gl_test_daemon_start(&d, dsn,
					      "log:\n  level: warn\nserver:\n  max_connections: 32\n"
					      "  max_connections_per_ip: 8\n  reserved_connections: 8\n",
					      (const char *const[]){"--no-ingest", NULL}),
			 0);
	for (int i = 0; i < 24; i++) {
		char from[32], buf[512];
		snprintf(from, sizeof from, "127.0.3.%d", 1 + i % 3);
		fds[i] = gl_test_connect_from(d.port, from);
		assert_true(fds[i] >= 0);
		assert_int_equal(send(fds[i], health, strlen(health), MSG_NOSIGNAL), (ssize_t)strlen(health));
		assert_true(recv(fds[i], buf, sizeof buf, 0) > 12);
		assert_int_equal(atoi(buf + 9), 200);
	}
	assert_int_equal(gl_test_raw_request(d.port, "127.0.3.9", health, strlen(health), 2000), 200);
	snprintf(req, sizeof req, "GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", d.token);
	st = gl_test_raw_request(d.port, "127.0.3.9", req, strlen(req), 2000);
	assert_int_equal(st, 503);
	snprintf(req, sizeof req, "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", d.token);
	assert_int_equal(gl_test_raw_request(d.port, "127.0.3.9", req, strlen(req), 2000), 200);
	close(fds[0]);
	snprintf(req, sizeof req, "GET /v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", d.token);
	st = 0;
	for (int i = 0; i < 50 && st != 200; i++) {
		/* the close reaches the server's count within a moment */
		fd = gl_test_raw_request(d.port, "127.0.3.9", req, strlen(req), 2000);
		st = fd;
		if (st != 200)
			usleep(20 * 1000);
	}
	assert_int_equal(st, 200);
	close_all(fds + 1, 23);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserved_share_for_probes),
		cmocka_unit_test(test_slowloris_from_ten_addresses),
		cmocka_unit_test(test_idle_sockets_from_twenty_addresses),
		cmocka_unit_test(test_refusals_are_logged_with_counts),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
