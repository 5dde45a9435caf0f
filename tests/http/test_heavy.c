/* No heavy request stalls /healthz (issue 24, item 6), over the real
 * daemon: heavy requests (a window over server.heavy_window_days) run in
 * their own bounded pool, so while it is full /healthz, /metrics and light
 * requests are answered at once; a token past server.heavy_per_token gets
 * 429 with Retry-After, a full heavy queue 503 with Retry-After; a
 * statement past server.statement_timeout_s is 503 naming that key; large
 * answers are streamed (chunked, no Content-Length).
 *
 * The heavy requests are held deterministically, not by size: another
 * session holds an ACCESS EXCLUSIVE lock on `rates`, which every
 * chargeback reads, until the test lets go. Bounds on times are
 * generous (2 s for an answer that comes in milliseconds) and only say
 * "not behind the heavy requests". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAVY "/v1/chargeback?window=60d&aggregate=team"
#define RATES "rates:\n  - model: '*'\n    per_gpu_hour: \"1.00\"\n"

static char g_dsn[512];

static int setup(void **state)
{
	return gl_test_db_fresh("gl_test_heavy", g_dsn, sizeof g_dsn) ? -1 : 0;
}

struct async_get {
	int port;
	const char *path, *token;
	long status;
	pthread_t th;
};

static void *get_main(void *arg)
{
	struct async_get *a = arg;
	struct gl_test_http_opts o = {a->token, 0, NULL};
	struct gl_test_http r;
	a->status = gl_test_http_ex(a->port, "GET", a->path, NULL, 0, NULL, &o, &r) == 0 ? r.status : -1;
	if (a->status >= 0)
		gl_test_http_fini(&r);
	return NULL;
}

static void start_get(struct async_get *a, int port, const char *path, const char *token)
{
	*a = (struct async_get){port, path, token, 0, 0};
	assert_int_equal(pthread_create(&a->th, NULL, get_main, a), 0);
}

/* GET over a raw socket with a bound on the wait (a stalled server must
 * fail the test, not hang it); the answer's text in out. */
static int raw_get(int port, const char *path, const char *token, char *out, size_t n, double *took)
{
	char req[512];
	int fd, got = 0;
	double t0 = gl_test_now_s();
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s%s%s\r\n", path,
		 token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "");
	if ((fd = gl_test_connect_from(port, NULL)) < 0)
		return -1;
	assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	out[0] = '\0';
	while ((size_t)got < n - 1 && gl_test_now_s() - t0 < 5) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;
		if (poll(&p, 1, 100) <= 0)
			continue;
		if ((r = recv(fd, out + got, n - 1 - (size_t)got, 0)) <= 0)
			break;
		got += (int)r;
	}
	out[got] = '\0';
	close(fd);
	if (took)
		*took = gl_test_now_s() - t0;
	return got > 12 && !strncmp(out, "HTTP/1.", 7) ? atoi(out + 9) : 0;
}

/* The heavy pool's requests in state (running|waiting), from /metrics;
 * -1 when /metrics does not say. */
static long heavy_pool(int port, const char *token, const char *state)
{
	static char buf[65536];
	char name[96];
	const char *p;
	snprintf(name, sizeof name, "gpuledger_http_pool_requests{pool=\"heavy\",state=\"%s\"} ", state);
	if (raw_get(port, "/metrics", token, buf, sizeof buf, NULL) != 200 || !(p = strstr(buf, name)))
		return -1;
	return atol(p + strlen(name));
}

static void wait_heavy(int port, const char *token, long running, long waiting)
{
	for (int i = 0; i < 100; i++) {
		if (heavy_pool(port, token, "running") == running && heavy_pool(port, token, "waiting") == waiting)
			return;
		usleep(50 * 1000);
	}
	fail_msg("the heavy pool never had %ld running and %ld waiting", running, waiting);
}

static void test_a_full_heavy_pool_stalls_nothing_else(void **state)
{
	struct gl_test_daemon d;
	struct async_get a1, a2;
	char token_b[128], buf[8192];
	double took;
	PGconn *lock;
	assert_int_equal(gl_test_daemon_start(&d, g_dsn,
					      "log:\n  level: warn\nserver:\n  heavy_workers: 1\n  heavy_queue: 1\n"
					      "  heavy_per_token: 2\n" RATES,
					      (const char *const[]){"--no-ingest", NULL}),
			 0);
	assert_int_equal(gl_test_token_create(g_dsn, "heavy-b", "finance", NULL, token_b, sizeof token_b, NULL), 0);
	assert_non_null(lock = gl_test_lock_table(g_dsn, "rates", "ACCESS EXCLUSIVE"));
	start_get(&a1, d.port, HEAVY, d.token);
	wait_heavy(d.port, d.token, 1, 0);
	start_get(&a2, d.port, HEAVY "&shareIdle=proportional", d.token);
	wait_heavy(d.port, d.token, 1, 1);

	/* the token's third: 429 at once, saying which key and when to retry */
	assert_int_equal(raw_get(d.port, HEAVY, d.token, buf, sizeof buf, &took), 429);
	assert_non_null(strstr(buf, "Retry-After: "));
	assert_non_null(strstr(buf, "server.heavy_per_token"));
	assert_true(took < 2);
	/* another token's: the queue is full, 503 at once */
	assert_int_equal(raw_get(d.port, HEAVY, token_b, buf, sizeof buf, &took), 503);
	assert_non_null(strstr(buf, "Retry-After: "));
	assert_non_null(strstr(buf, "server.heavy_queue"));
	assert_true(took < 2);
	/* nothing else waits for them */
	assert_int_equal(raw_get(d.port, "/healthz", NULL, buf, sizeof buf, &took), 200);
	assert_true(took < 2);
	assert_int_equal(raw_get(d.port, "/v1/whoami", d.token, buf, sizeof buf, &took), 200);
	assert_true(took < 2);
	assert_int_equal(raw_get(d.port, "/v1/ingest/runs", token_b, buf, sizeof buf, &took), 200);
	assert_true(took < 2);

	PQfinish(lock); /* the held ones go on */
	pthread_join(a1.th, NULL);
	pthread_join(a2.th, NULL);
	assert_int_equal(a1.status, 200);
	assert_int_equal(a2.status, 200);
	assert_int_equal(raw_get(d.port, "/metrics", d.token, buf, sizeof buf, NULL), 200);
	assert_non_null(strstr(buf, "gpuledger_http_heavy_requests_total{outcome=\"run\"} 2\n"));
	assert_non_null(strstr(buf, "gpuledger_http_heavy_requests_total{outcome=\"token_limit\"} 1\n"));
	assert_non_null(strstr(buf, "gpuledger_http_heavy_requests_total{outcome=\"queue_full\"} 1\n"));
	/* a light one (a week, no step) never went to the heavy pool */
	assert_int_equal(raw_get(d.port, "/v1/chargeback?window=7d", d.token, buf, sizeof buf, NULL), 200);
	assert_int_equal(raw_get(d.port, "/metrics", d.token, buf, sizeof buf, NULL), 200);
	assert_non_null(strstr(buf, "gpuledger_http_heavy_requests_total{outcome=\"run\"} 2\n"));
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static void test_statement_timeout_is_503_naming_it(void **state)
{
	struct gl_test_daemon d;
	char buf[8192];
	double took;
	PGconn *lock;
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, "log:\n  level: warn\nserver:\n  statement_timeout_s: 1\n" RATES,
					      (const char *const[]){"--no-ingest", NULL}),
			 0);
	assert_non_null(lock = gl_test_lock_table(g_dsn, "rates", "ACCESS EXCLUSIVE"));
	/* heavy and light alike */
	assert_int_equal(raw_get(d.port, HEAVY, d.token, buf, sizeof buf, &took), 503);
	assert_non_null(strstr(buf, "\"code\":\"statement_timeout\""));
	assert_non_null(strstr(buf, "server.statement_timeout_s"));
	assert_true(took >= 0.9 && took < 5);
	assert_int_equal(raw_get(d.port, "/v1/chargeback?window=7d", d.token, buf, sizeof buf, &took), 503);
	assert_non_null(strstr(buf, "\"code\":\"statement_timeout\""));
	PQfinish(lock);
	/* the workers' connections are fine afterwards */
	assert_int_equal(raw_get(d.port, HEAVY, d.token, buf, sizeof buf, NULL), 200);
	assert_int_equal(raw_get(d.port, "/metrics", d.token, buf, sizeof buf, NULL), 200);
	assert_non_null(strstr(buf, "gpuledger_http_statement_timeouts_total 2\n"));
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A chargeback with many lines goes out chunked as it is made, not as one
 * buffer with a Content-Length; the body is the whole JSON. */
static void test_large_answers_are_streamed(void **state)
{
	struct gl_test_daemon d;
	struct gl_test_http r;
	char te[64], cl[64];
	cJSON *j;
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, "log:\n  level: warn\n" RATES,
					      (const char *const[]){"--no-ingest", NULL}),
			 0);
	assert_int_equal(gl_test_http(d.port, "GET", "/v1/chargeback?window=14d&step=hour&aggregate=team", NULL, 0, NULL,
				      &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(gl_test_header(&r, "Transfer-Encoding", te, sizeof te));
	assert_string_equal(te, "chunked");
	assert_null(gl_test_header(&r, "Content-Length", cl, sizeof cl));
	assert_non_null(j = cJSON_Parse(r.body));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "steps")), 14 * 24 + 1);
	cJSON_Delete(j);
	gl_test_http_fini(&r);
	/* the CSV too, and /v1/jobs */
	assert_int_equal(gl_test_http(d.port, "GET", "/v1/chargeback?window=14d&step=hour&format=csv", NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(gl_test_header(&r, "Transfer-Encoding", te, sizeof te));
	assert_non_null(strstr(r.body, "start,end,team,"));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_http(d.port, "GET", "/v1/jobs?limit=5", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(gl_test_header(&r, "Transfer-Encoding", te, sizeof te));
	assert_non_null(strstr(r.body, "\"jobs\":[]"));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_full_heavy_pool_stalls_nothing_else),
		cmocka_unit_test(test_statement_timeout_is_503_naming_it),
		cmocka_unit_test(test_large_answers_are_streamed),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
