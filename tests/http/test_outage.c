/* The daemon across database outages and restarts, over real HTTP. The
 * daemon reaches PostgreSQL through a Unix-socket relay in this program, so
 * the test can sever its connections (a restart as the daemon sees it) and
 * refuse new ones (an outage) without touching the shared cluster:
 * - a token verified before the outage keeps working for
 *   server.auth_outage_grace_s, then is refused; a token never verified is
 *   refused throughout (docs/security.md "Database outages");
 * - after a restart no request fails on a dead cached connection;
 * - a run of 503s during an outage logs one WARN line, not one per request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GRACE_S 12 /* server.auth_outage_grace_s for this daemon */
#define MAXPAIRS 64

static struct {
	pthread_t th;
	int lfd;
	char target[200];
	pthread_mutex_t mu;
	int up, stop, sever_req, sever_done; /* under mu */
	int a[MAXPAIRS], b[MAXPAIRS], n;     /* relay thread only */
} px = {.mu = PTHREAD_MUTEX_INITIALIZER};

static char g_dir[256], g_dsn[512], g_proxy_dsn[512];
static struct gl_test_daemon g_d;

static int write_all(int fd, const char *p, ssize_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, (size_t)n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w, n -= w;
	}
	return 0;
}

static void drop_pair(int i)
{
	close(px.a[i]);
	close(px.b[i]);
	px.n--;
	px.a[i] = px.a[px.n];
	px.b[i] = px.b[px.n];
}

static void *relay(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[1 + 2 * MAXPAIRS];
		int up, stop, sever;
		pthread_mutex_lock(&px.mu);
		up = px.up, stop = px.stop, sever = px.sever_req;
		pthread_mutex_unlock(&px.mu);
		if (stop)
			break;
		if (sever != px.sever_done) {
			while (px.n)
				drop_pair(px.n - 1);
			pthread_mutex_lock(&px.mu);
			px.sever_done = sever;
			pthread_mutex_unlock(&px.mu);
		}
		p[0] = (struct pollfd){.fd = px.lfd, .events = POLLIN};
		for (int i = 0; i < px.n; i++) {
			p[1 + 2 * i] = (struct pollfd){.fd = px.a[i], .events = POLLIN};
			p[2 + 2 * i] = (struct pollfd){.fd = px.b[i], .events = POLLIN};
		}
		int npairs = px.n;
		if (poll(p, (nfds_t)(1 + 2 * npairs), 20) <= 0)
			continue;
		for (int i = npairs - 1; i >= 0; i--) {
			for (int dir = 0; dir < 2; dir++) {
				char buf[65536];
				int from = dir ? px.b[i] : px.a[i], to = dir ? px.a[i] : px.b[i];
				if (!(p[1 + 2 * i + dir].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				ssize_t r = read(from, buf, sizeof buf);
				if (r <= 0 || write_all(to, buf, r)) {
					drop_pair(i);
					break;
				}
			}
		}
		if (p[0].revents & POLLIN) {
			int c = accept(px.lfd, NULL, NULL), s = -1;
			struct sockaddr_un sa = {.sun_family = AF_UNIX};
			if (c < 0)
				continue;
			pthread_mutex_lock(&px.mu);
			up = px.up; /* as of now, not of the poll */
			pthread_mutex_unlock(&px.mu);
			snprintf(sa.sun_path, sizeof sa.sun_path, "%s", px.target);
			if (up && px.n < MAXPAIRS && (s = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0 &&
			    connect(s, (struct sockaddr *)&sa, sizeof sa) == 0) {
				px.a[px.n] = c;
				px.b[px.n] = s;
				px.n++;
			} else {
				/* the outage: the server hangs up at once */
				if (s >= 0)
					close(s);
				close(c);
			}
		}
	}
	while (px.n)
		drop_pair(px.n - 1);
	return NULL;
}

/* up 0: refuse new connections; sever 1: cut the open ones (and wait until
 * they are cut). */
static void proxy_set(int up, int sever)
{
	int want;
	pthread_mutex_lock(&px.mu);
	px.up = up;
	if (sever)
		px.sever_req++;
	want = px.sever_req;
	pthread_mutex_unlock(&px.mu);
	for (;;) {
		int done;
		pthread_mutex_lock(&px.mu);
		done = px.sever_done == want;
		pthread_mutex_unlock(&px.mu);
		if (done)
			break;
		usleep(10000);
	}
}

/* "host=/x port=5432 ..." -> the value of host */
static int dsn_host(const char *dsn, char *out, size_t n)
{
	const char *h = strstr(dsn, "host=");
	if (!h)
		return -1;
	h += 5;
	size_t k = strcspn(h, " ");
	if (k >= n)
		return -1;
	memcpy(out, h, k);
	out[k] = '\0';
	return 0;
}

static int setup(void **state)
{
	char host[256], cfg[256];
	const char *tmp = getenv("GL_TEST_TMP");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (gl_test_db_fresh("gl_test_outage", g_dsn, sizeof g_dsn) || dsn_host(g_dsn, host, sizeof host) ||
	    host[0] != '/')
		return -1;
	snprintf(g_dir, sizeof g_dir, "%s/outage.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(px.target, sizeof px.target, "%s/.s.PGSQL.5432", host);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s/.s.PGSQL.5432", g_dir);
	px.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (px.lfd < 0 || bind(px.lfd, (struct sockaddr *)&sa, sizeof sa) || listen(px.lfd, 64))
		return -1;
	px.up = 1;
	if (pthread_create(&px.th, NULL, relay, NULL))
		return -1;
	/* the same DSN with the relay's directory as host */
	{
		const char *h = strstr(g_dsn, "host=");
		size_t pre = (size_t)(h - g_dsn), k = strcspn(h + 5, " ");
		snprintf(g_proxy_dsn, sizeof g_proxy_dsn, "%.*shost=%s%s", (int)pre, g_dsn, g_dir, h + 5 + k);
	}
	snprintf(cfg, sizeof cfg, "log:\n  level: warn\nserver:\n  threads: 2\n  auth_outage_grace_s: %d\n", GRACE_S);
	if (gl_test_daemon_start(&g_d, g_proxy_dsn, cfg, (const char *const[]){"--no-ingest", NULL}))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	proxy_set(1, 0);
	if (getenv("GL_TEST_SHOW_LOG")) {
		char *l = gl_test_read_file(g_d.log, NULL);
		fprintf(stderr, "%s", l);
		free(l);
	}
	gl_test_daemon_stop(&g_d);
	pthread_mutex_lock(&px.mu);
	px.stop = 1;
	pthread_mutex_unlock(&px.mu);
	pthread_join(px.th, NULL);
	close(px.lfd);
	return 0;
}

static long get(const char *path, const char *token, struct gl_test_http *r)
{
	struct gl_test_http_opts o = {.token = token};
	memset(r, 0, sizeof *r);
	if (gl_test_http_ex(g_d.port, "GET", path, NULL, 0, NULL, &o, r))
		return -1;
	return r->status;
}

static long status_of(const char *path, const char *token)
{
	struct gl_test_http r;
	long st = get(path, token, &r);
	gl_test_http_fini(&r);
	return st;
}

static int count_lines(const char *path, const char *needle)
{
	char *s = gl_test_read_file(path, NULL);
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	free(s);
	return n;
}

/* After the server drops every connection (a restart), each request still
 * succeeds: no worker thread answers once from its dead connection. Then
 * while the database refuses connections, 30 failing requests log one WARN
 * line (and a count later), not 30. */
static void test_restart_and_outage_logging(void **state)
{
	/* every worker thread holds a connection */
	for (int i = 0; i < 8; i++)
		assert_int_equal(status_of("/v1/jobs", NULL), 200);
	sleep(6); /* past the token cache, so the token is read again too */
	proxy_set(1, 1);
	for (int i = 0; i < 20; i++)
		assert_int_equal(status_of("/v1/jobs", NULL), 200);
	proxy_set(1, 1);
	for (int i = 0; i < 20; i++)
		assert_int_equal(status_of("/v1/jobs", NULL), 200);

	int before = count_lines(g_d.log, "-> 503");
	proxy_set(0, 1);
	for (int i = 0; i < 30; i++)
		assert_int_equal(status_of("/v1/jobs", NULL), 503);
	{
		/* the client is told to retry, under a reference; the detail (the
		 * statement, the server's words, its socket) stays in the log */
		struct gl_test_http r;
		assert_int_equal(get("/v1/jobs", NULL, &r), 503);
		assert_non_null(strstr(r.body, "\"code\":\"unavailable\""));
		assert_non_null(strstr(r.body, "the database is unavailable; retry later (ref "));
		assert_null(strstr(r.body, "SELECT"));
		assert_null(strstr(r.body, "/"));
		gl_test_http_fini(&r);
	}
	int logged = count_lines(g_d.log, "-> 503") - before;
	assert_true(logged >= 1);
	assert_true(logged <= 2); /* one, or two if a minute boundary fell inside */
	proxy_set(1, 0);
	assert_int_equal(status_of("/v1/jobs", NULL), 200);
}

/* The grace: a viewer token used once keeps reading /metrics after the
 * 5 s token cache has lapsed with the database down, until GRACE_S after
 * the database last confirmed it. */
static void test_metrics_through_outage(void **state)
{
	char viewer[64], fresh[64];
	struct gl_test_http r;
	const char *unknown = NULL;

	assert_int_equal(gl_test_token_create(g_dsn, "viewer", "viewer", NULL, viewer, sizeof viewer, NULL), 0);
	assert_int_equal(gl_test_token_create(g_dsn, "never-used", "viewer", NULL, fresh, sizeof fresh, NULL), 0);
	/* a well-formed token that no row holds: the viewer token with its last
	 * character changed */
	static char other[64];
	snprintf(other, sizeof other, "%s", viewer);
	other[strlen(other) - 1] = other[strlen(other) - 1] == 'A' ? 'B' : 'A';
	unknown = other;

	assert_int_equal(get("/metrics", viewer, &r), 200);
	assert_non_null(strstr(r.body, "gpuledger_db_up 1"));
	gl_test_http_fini(&r);
	time_t verified = time(NULL); /* the daemon's check was at or before this */

	proxy_set(0, 1);
	sleep(6);
	assert_int_equal(get("/metrics", viewer, &r), 200);
	assert_non_null(strstr(r.body, "gpuledger_db_up 0"));
	assert_non_null(strstr(r.body, "gpuledger_source_health_dropped_total"));
	gl_test_http_fini(&r);
	/* never verified / unknown: no grace */
	assert_int_equal(status_of("/metrics", fresh), 503);
	assert_int_equal(status_of("/metrics", unknown), 503);
	assert_true(time(NULL) < verified + GRACE_S); /* else the checks above prove nothing */

	while (time(NULL) <= verified + GRACE_S)
		sleep(1);
	assert_int_equal(status_of("/metrics", viewer), 503);

	proxy_set(1, 0);
	assert_int_equal(status_of("/metrics", viewer), 200);
	assert_int_equal(status_of("/metrics", fresh), 200);
}

/* A statement that fails for a reason a retry will not mend (here a column
 * renamed away under the server) is a 500 "internal", not a 503 telling
 * clients to retry; its detail is in the log under the reference the
 * client got. (Runs last: it changes the schema, and puts it back.) */
static void test_failed_statement_is_500(void **state)
{
	struct gl_test_http r;
	char ref[32], *log;
	const char *p;
	(void)state;
	proxy_set(1, 0);
	assert_true(gl_test_exec_owner(g_dsn, "ALTER TABLE jobs RENAME COLUMN qos TO qos_gone") >= 0);
	assert_int_equal(get("/v1/jobs", NULL, &r), 500);
	assert_true(gl_test_exec_owner(g_dsn, "ALTER TABLE jobs RENAME COLUMN qos_gone TO qos") >= 0);
	assert_non_null(strstr(r.body, "\"code\":\"internal\""));
	p = strstr(r.body, "internal error (ref ");
	assert_non_null(p);
	assert_null(strstr(r.body, "qos"));
	snprintf(ref, sizeof ref, "(ref %ld)", strtol(p + strlen("internal error (ref "), NULL, 10));
	gl_test_http_fini(&r);
	/* the log line of this answer names the reference and the column */
	log = gl_test_read_file(g_d.log, NULL);
	p = log ? strstr(log, ref) : NULL;
	assert_non_null(p);
	assert_non_null(strstr(p, "qos"));
	free(log);
	assert_int_equal(status_of("/v1/jobs", NULL), 200);
}

/* The token lookup itself failing for a reason a retry will not mend is
 * the server's fault (500), not the client's: a valid token is not
 * refused as "unusable" with a 401 that counts towards the address's
 * failed-authentication block. (Changes the schema, and puts it back.) */
static void test_token_lookup_failure_is_500(void **state)
{
	char tok[64];
	struct gl_test_http r;
	(void)state;
	proxy_set(1, 0);
	assert_int_equal(gl_test_token_create(g_dsn, "lookup-fails", "viewer", NULL, tok, sizeof tok, NULL), 0);
	assert_true(gl_test_exec_owner(g_dsn, "ALTER TABLE api_tokens RENAME COLUMN last_used_at TO last_used_gone") >= 0);
	for (int i = 0; i < 12; i++) {
		/* more than the failures that block an address, if they counted */
		long st = get("/metrics", tok, &r);
		if (st != 500 || !strstr(r.body, "\"code\":\"internal\""))
			fail_msg("request %d: %ld %s", i, st, r.body);
		gl_test_http_fini(&r);
	}
	assert_true(gl_test_exec_owner(g_dsn, "ALTER TABLE api_tokens RENAME COLUMN last_used_gone TO last_used_at") >= 0);
	assert_int_equal(status_of("/metrics", tok), 200);
}

/* /healthz is public: while the database refuses connections its body
 * says only that the database is unavailable and under which reference
 * the log has libpq's words, which name the socket path; the status code
 * and the status field stay. A daemon of its own, logging at debug, so
 * this answer's detail is in the log whatever the WARN limiter let
 * through before. */
static void test_healthz_body_hides_the_database_error(void **state)
{
	struct gl_test_daemon d2;
	struct gl_test_http r = {0};
	char want[64], *log = NULL;
	const char *p;
	long ref;
	(void)state;

	proxy_set(1, 0);
	assert_int_equal(gl_test_daemon_start(&d2, g_proxy_dsn, "log:\n  level: debug\nserver:\n  threads: 2\n",
					      (const char *const[]){"--no-ingest", NULL}),
			 0);
	{
		cJSON *j = gl_test_get_json(d2.port, "/healthz", 200);
		assert_non_null(j);
		cJSON_Delete(j);
	}
	proxy_set(0, 1);
	for (int i = 0; i < 100; i++) { /* the probe's answer is cached for 1 s */
		gl_test_http_fini(&r);
		assert_int_equal(gl_test_http(d2.port, "GET", "/healthz", NULL, 0, NULL, &r), 0);
		if (r.status == 503)
			break;
		usleep(100000);
	}
	assert_int_equal(r.status, 503);
	if (strstr(r.body, g_dir) || strstr(r.body, "socket") || strstr(r.body, "/"))
		fail_msg("/healthz tells a stranger about the database: %s", r.body);
	assert_non_null(strstr(r.body, "\"status\":\"unavailable\""));
	assert_non_null(strstr(r.body, "\"db\":\"unavailable\""));
	p = strstr(r.body, "\"ref\":");
	assert_non_null(p);
	ref = strtol(p + 6, NULL, 10);
	assert_true(ref > 0);
	gl_test_http_fini(&r);
	/* the operator finds the words under that reference */
	snprintf(want, sizeof want, "http: ref %ld: ", ref);
	for (int i = 0; i < 50; i++) {
		free(log);
		log = gl_test_read_file(d2.log, NULL);
		if (log && (p = strstr(log, want)))
			break;
		usleep(100000);
	}
	assert_non_null(log);
	p = strstr(log, want);
	if (!p)
		fail_msg("no log line for ref %ld:\n%s", ref, log);
	{
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		if (!memmem(p, n, g_dir, strlen(g_dir)))
			fail_msg("the log line of ref %ld does not have the detail: %.*s", ref, (int)n, p);
	}
	free(log);
	proxy_set(1, 0);
	gl_test_daemon_stop(&d2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_and_outage_logging),
		cmocka_unit_test(test_metrics_through_outage),
		cmocka_unit_test(test_failed_statement_is_500),
		cmocka_unit_test(test_token_lookup_failure_is_500),
		cmocka_unit_test(test_healthz_body_hides_the_database_error),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
