/* The stop's cancel against a server that takes the cancel connection and
 * never answers (libpq 15's PQcancel has no timeout): a TCP proxy in this
 * process forwards ordinary connections to the test cluster's socket and
 * holds cancel requests open without a word.
 *
 * 1. Work whose statement ends by itself ends its registration and the
 *    watcher stops, while the cancel request is still unanswered (they
 *    used to wait on the watcher's lock, held across PQcancel, for ever).
 * 2. A statement the cancel cannot reach (pg_sleep(600)) ends within the
 *    give-up: its connection is shut down (it used to run to its end).
 * alarm() turns a hang into a failure; it is a bound, not a measure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/dbcancel.h"
#include "store/db_int.h"
#include "lib/testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CANCEL_REQUEST_CODE 80877102 /* protocol: the CancelRequest packet */

static char g_sock_path[300];  /* the cluster's Unix socket */
static char g_proxy_dsn[1024];
static PGconn *g_direct;       /* straight to the cluster, for clean-up */
static int g_listen = -1;
static atomic_int g_cancels;   /* cancel requests the proxy took (and never answered) */

struct pump {
	int a, b;
};

/* Copies both ways until either side ends. */
static void *pump_main(void *arg)
{
	struct pump *p = arg;
	char buf[16384];
	for (;;) {
		struct pollfd f[2] = {{.fd = p->a, .events = POLLIN}, {.fd = p->b, .events = POLLIN}};
		if (poll(f, 2, -1) < 0)
			break;
		int from = f[0].revents ? 0 : 1, to = 1 - from;
		ssize_t n = read(f[from].fd, buf, sizeof buf);
		if (n <= 0 || write(f[to].fd, buf, (size_t)n) != n)
			break;
	}
	close(p->a);
	close(p->b);
	free(p);
	return NULL;
}

static int read_full(int fd, unsigned char *b, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t k = read(fd, b + got, n - got);
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

/* Each connection's first 8 bytes say what it is: a cancel request is
 * kept open and never answered; anything else goes to the cluster. */
static void *proxy_main(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(g_listen, NULL, NULL);
		unsigned char head[8];
		uint32_t code;
		if (fd < 0)
			return NULL;
		if (read_full(fd, head, sizeof head)) {
			close(fd);
			continue;
		}
		memcpy(&code, head + 4, 4);
		if (ntohl(code) == CANCEL_REQUEST_CODE) {
			atomic_fetch_add(&g_cancels, 1);
			continue; /* fd left open, unread: a server that never answers */
		}
		{
			struct sockaddr_un un = {.sun_family = AF_UNIX};
			struct pump *p = malloc(sizeof *p);
			pthread_t th;
			int up = socket(AF_UNIX, SOCK_STREAM, 0);
			snprintf(un.sun_path, sizeof un.sun_path, "%s", g_sock_path);
			if (!p || up < 0 || connect(up, (struct sockaddr *)&un, sizeof un) ||
			    write(up, head, sizeof head) != (ssize_t)sizeof head) {
				close(fd);
				if (up >= 0)
					close(up);
				free(p);
				continue;
			}
			p->a = fd;
			p->b = up;
			pthread_create(&th, NULL, pump_main, p);
			pthread_detach(th);
		}
	}
}

static int wait_cancels(int want)
{
	for (int i = 0; i < 300 && atomic_load(&g_cancels) < want; i++)
		usleep(100000);
	return atomic_load(&g_cancels);
}

static void test_end_and_stop_do_not_wait_on_an_unanswered_cancel(void **state)
{
	struct gl_dbcancel_slot slot = {0};
	struct gl_err err = {0};
	PGconn *c = PQconnectdb(g_proxy_dsn);
	PGresult *r;
	int before = atomic_load(&g_cancels);
	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	alarm(60);
	assert_int_equal(gl_dbcancel_start(&err), 0);
	gl_dbcancel_begin(&slot, gl_db_store(c), GL_DBCANCEL_WORK, "test work");
	gl_dbcancel_request(GL_DBCANCEL_WORK);
	/* the watcher's cancel request has reached the silent server */
	assert_true(wait_cancels(before + 1) > before);
	/* the statement never sees it and ends by itself */
	r = PQexec(c, "SELECT pg_sleep(0.2)");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	gl_dbcancel_end(&slot);
	gl_dbcancel_stop();
	alarm(0);
	PQfinish(c);
}

static void test_the_give_up_ends_a_statement_the_cancel_cannot_reach(void **state)
{
	struct gl_dbcancel_slot slot = {0};
	struct gl_err err = {0};
	PGconn *c = PQconnectdb(g_proxy_dsn);
	PGresult *r;
	char sql[64];
	int pid, before = atomic_load(&g_cancels);
	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	pid = PQbackendPID(c);
	alarm(60);
	assert_int_equal(gl_dbcancel_start(&err), 0);
	gl_dbcancel_request(GL_DBCANCEL_WORK);
	gl_dbcancel_begin(&slot, gl_db_store(c), GL_DBCANCEL_WORK, "test sleeper");
	r = PQexec(c, "SELECT pg_sleep(600)");
	assert_int_not_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	assert_int_equal(PQstatus(c), CONNECTION_BAD);
	assert_true(atomic_load(&g_cancels) > before); /* it was tried first */
	gl_dbcancel_end(&slot);
	gl_dbcancel_stop();
	alarm(0);
	PQfinish(c);
	/* the backend sleeps on, not knowing its client is gone */
	snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d)::int", pid);
	(void)gl_test_qint(g_direct, sql);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_end_and_stop_do_not_wait_on_an_unanswered_cancel),
		cmocka_unit_test(test_the_give_up_ends_a_statement_the_cancel_cannot_reach),
	};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	PQconninfoOption *opts, *o;
	const char *host = NULL, *port = "5432", *user = NULL, *pass = NULL, *passfile = NULL;
	char dsn[1024];
	pthread_t th;
	int rc;

	if (gl_test_db_create("gl_test_dbcancel", dsn, sizeof dsn))
		return 1;
	g_direct = PQconnectdb(dsn);
	if (PQstatus(g_direct) != CONNECTION_OK || !(opts = PQconninfoParse(dsn, NULL)))
		return 1;
	for (o = opts; o->keyword; o++) {
		if (!o->val)
			continue;
		if (!strcmp(o->keyword, "host"))
			host = o->val;
		else if (!strcmp(o->keyword, "port"))
			port = o->val;
		else if (!strcmp(o->keyword, "user"))
			user = o->val;
		else if (!strcmp(o->keyword, "password"))
			pass = o->val;
		else if (!strcmp(o->keyword, "passfile"))
			passfile = o->val;
	}
	if (!host || host[0] != '/') {
		fprintf(stderr, "test_dbcancel: the test cluster is not on a Unix socket (%s)\n", host ? host : "no host");
		return 1;
	}
	snprintf(g_sock_path, sizeof g_sock_path, "%s/.s.PGSQL.%s", host, port);
	g_listen = socket(AF_INET, SOCK_STREAM, 0);
	if (g_listen < 0 || bind(g_listen, (struct sockaddr *)&a, sizeof a) || listen(g_listen, 16) ||
	    getsockname(g_listen, (struct sockaddr *)&a, &al))
		return 1;
	/* no SSL or GSS negotiation: the proxy tells a cancel by its first packet */
	snprintf(g_proxy_dsn, sizeof g_proxy_dsn,
		 "host=127.0.0.1 port=%d dbname=gl_test_dbcancel user=%s%s%s%s%s sslmode=disable gssencmode=disable",
		 ntohs(a.sin_port), user ? user : "gpuledger", pass ? " password=" : "", pass ? pass : "",
		 passfile ? " passfile=" : "", passfile ? passfile : "");
	PQconninfoFree(opts);
	pthread_create(&th, NULL, proxy_main, NULL);
	pthread_detach(th);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	PQfinish(g_direct);
	return rc;
}
