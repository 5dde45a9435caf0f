/* The HTTP server's connection guard, request pools and heavy rule, with
 * the time and the sockets as parameters (the real sockets are
 * tests/http/test_slowloris.c's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/common.h"
#include "gl/connguard.h"
#include "gl/reqclass.h"
#include "gl/reqpool.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct gl_connguard_cfg cfg = {
	.max_total = 20, .per_addr = 3, .free_below = 5, .reserved = 4, .header_ms = 10000, .body_ms = 30000,
};

static void test_keys(void **state)
{
	struct sockaddr_in a4 = {.sin_family = AF_INET};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
	char k[GL_CONNGUARD_KEY_MAX];
	inet_pton(AF_INET, "10.1.2.3", &a4.sin_addr);
	assert_int_equal(gl_connguard_key((struct sockaddr *)&a4, k, sizeof k), 0);
	assert_string_equal(k, "10.1.2.3");
	inet_pton(AF_INET6, "::ffff:10.1.2.3", &a6.sin6_addr);
	assert_int_equal(gl_connguard_key((struct sockaddr *)&a6, k, sizeof k), 0);
	assert_string_equal(k, "10.1.2.3");
	/* a host's /64 is one address for the limits: it can pick any of
	 * 2^64 in it */
	inet_pton(AF_INET6, "2001:db8:1:2:aaaa:bbbb:cccc:dddd", &a6.sin6_addr);
	assert_int_equal(gl_connguard_key((struct sockaddr *)&a6, k, sizeof k), 0);
	assert_string_equal(k, "2001:db8:1:2::/64");
	inet_pton(AF_INET6, "2001:db8:1:2::1", &a6.sin6_addr);
	assert_int_equal(gl_connguard_key((struct sockaddr *)&a6, k, sizeof k), 0);
	assert_string_equal(k, "2001:db8:1:2::/64");
}

/* Below free_below an address is not limited (a proxy or a benchmark on
 * an idle server); past it, per_addr; the last `reserved` are marked; at
 * max_total nobody. Closing gives the room back, also to the same key
 * after its slot was emptied (the table's deletion). */
static void test_admission(void **state)
{
	struct gl_connguard *g = gl_connguard_new(&cfg);
	struct gl_conn *c[20];
	size_t n = 0, reserved = 0;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(gl_connguard_check(g, "10.0.0.1"), GL_CONNGUARD_ADMIT);
		c[n++] = gl_connguard_open(g, "10.0.0.1", 100 + i, 0);
	}
	/* 5 open: the per-address limit applies now, and 10.0.0.1 holds 5 */
	assert_int_equal(gl_connguard_check(g, "10.0.0.1"), GL_CONNGUARD_REFUSE_ADDR);
	for (int a = 2; n < 20; a++) {
		char key[32];
		snprintf(key, sizeof key, "10.0.0.%d", a);
		for (int i = 0; i < 3 && n < 20; i++) {
			assert_int_equal(gl_connguard_check(g, key), GL_CONNGUARD_ADMIT);
			c[n] = gl_connguard_open(g, key, (int)n, 0);
			/* the last four of the twenty */
			assert_int_equal(gl_connguard_reserved(c[n]), n >= 16);
			n++;
		}
		if (n < 20)
			assert_int_equal(gl_connguard_check(g, key), GL_CONNGUARD_REFUSE_ADDR);
	}
	assert_int_equal(gl_connguard_count(g, &reserved), 20);
	assert_int_equal(reserved, 4);
	assert_int_equal(gl_connguard_check(g, "10.9.9.9"), GL_CONNGUARD_REFUSE_FULL);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(gl_connguard_close(g, c[i]), GL_CONNGUARD_ALIVE);
	assert_int_equal(gl_connguard_count(g, &reserved), 0);
	assert_int_equal(reserved, 0);
	/* every key's count went back to 0: all admitted again */
	for (int i = 0; i < 5; i++)
		c[i] = gl_connguard_open(g, "10.0.0.1", i, 0);
	assert_int_equal(gl_connguard_check(g, "10.0.0.1"), GL_CONNGUARD_REFUSE_ADDR);
	assert_int_equal(gl_connguard_check(g, "10.0.0.2"), GL_CONNGUARD_ADMIT);
	for (int i = 0; i < 5; i++)
		gl_connguard_close(g, c[i]);
	gl_connguard_free(g);
}

/* Sweeper doubles: received bytes per descriptor, and the kills. */
static uint64_t g_rx[8];
static int g_killed[8];

static int fake_rx(int fd, uint64_t *rx)
{
	*rx = g_rx[fd];
	return 0;
}

static void fake_kill(void *cls, int fd, enum gl_connguard_kill why)
{
	(void)cls;
	g_killed[fd] = (int)why;
}

/* A slowloris resets an inactivity timeout with every byte; the headers'
 * deadline counts from the first byte whatever arrives since, the body's
 * from the headers. Handling has none (the pools bound it); an idle
 * connection's next request starts its clock when its first byte is
 * seen, and a FIN alone (one byte more) is no request. */
static void test_deadlines(void **state)
{
	struct gl_connguard *g = gl_connguard_new(&cfg);
	struct gl_conn *slow, *body, *busy, *idle;
	memset(g_rx, 0, sizeof g_rx);
	memset(g_killed, 0, sizeof g_killed);
	slow = gl_connguard_open(g, "10.0.0.1", 1, 1000);
	body = gl_connguard_open(g, "10.0.0.2", 2, 1000);
	busy = gl_connguard_open(g, "10.0.0.3", 3, 1000);
	idle = gl_connguard_open(g, "10.0.0.4", 4, 1000);
	/* the slow one's request line comes after 9 s of trickling: its
	 * deadline still counts from the accept */
	gl_connguard_request_line(slow, 10000);
	gl_connguard_request_line(body, 1100);
	gl_connguard_headers_done(body, 1200);
	gl_connguard_request_line(busy, 1100);
	gl_connguard_headers_done(busy, 1100);
	gl_connguard_body_done(busy);
	gl_connguard_request_line(idle, 1100);
	gl_connguard_headers_done(idle, 1100);
	gl_connguard_body_done(idle);
	gl_connguard_answered(idle, 500);
	gl_connguard_sweep(g, 10999, fake_rx, fake_kill, NULL);
	assert_int_equal(g_killed[1], GL_CONNGUARD_ALIVE);
	gl_connguard_sweep(g, 11000, fake_rx, fake_kill, NULL);
	assert_int_equal(g_killed[1], GL_CONNGUARD_HEADER_LATE);
	assert_int_equal(g_killed[2], GL_CONNGUARD_ALIVE);
	g_rx[4] = 501; /* the client's FIN */
	gl_connguard_sweep(g, 31199, fake_rx, fake_kill, NULL);
	assert_int_equal(g_killed[2], GL_CONNGUARD_ALIVE);
	gl_connguard_sweep(g, 31200, fake_rx, fake_kill, NULL);
	assert_int_equal(g_killed[2], GL_CONNGUARD_BODY_LATE);
	assert_int_equal(g_killed[3], GL_CONNGUARD_ALIVE);
	assert_int_equal(g_killed[4], GL_CONNGUARD_ALIVE);
	/* bytes of a next request on the idle one at 40 s (seen by this
	 * sweep): due at 50 s, however long it idled before */
	g_rx[4] = 600;
	gl_connguard_sweep(g, 40000, fake_rx, fake_kill, NULL);
	gl_connguard_sweep(g, 49999, fake_rx, fake_kill, NULL);
	assert_int_equal(g_killed[4], GL_CONNGUARD_ALIVE);
	gl_connguard_sweep(g, 50000, fake_rx, fake_kill, NULL);
	assert_int_equal(g_killed[4], GL_CONNGUARD_HEADER_LATE);
	gl_connguard_sweep(g, 1000000, fake_rx, fake_kill, NULL);
	assert_int_equal(g_killed[3], GL_CONNGUARD_ALIVE);
	assert_int_equal(gl_connguard_close(g, slow), GL_CONNGUARD_HEADER_LATE);
	assert_int_equal(gl_connguard_close(g, body), GL_CONNGUARD_BODY_LATE);
	assert_int_equal(gl_connguard_close(g, busy), GL_CONNGUARD_ALIVE);
	assert_int_equal(gl_connguard_close(g, idle), GL_CONNGUARD_HEADER_LATE);
	gl_connguard_free(g);
}

/* Between answers no request line is under way: bytes past the mark then
 * never made a request (the server's request_line refusal). */
static void test_between(void **state)
{
	struct gl_connguard *g = gl_connguard_new(&cfg);
	struct gl_conn *c = gl_connguard_open(g, "10.0.0.1", 1, 0);
	uint64_t mark = 99;
	assert_true(gl_connguard_between(c, &mark));
	assert_int_equal(mark, 0);
	gl_connguard_request_line(c, 1);
	assert_false(gl_connguard_between(c, &mark));
	gl_connguard_headers_done(c, 1);
	gl_connguard_body_done(c);
	assert_false(gl_connguard_between(c, &mark));
	gl_connguard_answered(c, 321);
	assert_true(gl_connguard_between(c, &mark));
	assert_int_equal(mark, 321);
	gl_connguard_close(g, c);
	gl_connguard_free(g);
}

/* The heavy rule (docs/security.md, "Heavy requests"). now: 2026-11-28. */
static void test_heavy_rule(void **state)
{
	const int64_t now = 1795824000;
	assert_false(gl_reqclass_heavy(GL_REQCLASS_LIGHT, "400d", "hour", now, 31, 100));
	assert_false(gl_reqclass_heavy(GL_REQCLASS_PROBE, NULL, NULL, now, 31, 100));
	assert_true(gl_reqclass_heavy(GL_REQCLASS_HEAVY, NULL, NULL, now, 31, 100));
	/* windowed: by length, then by steps (hour over 4 days is 96, over
	 * 5 is 120); the default window counts as 31 days */
	assert_false(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, NULL, NULL, now, 31, 100));
	assert_false(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "31d", "day", now, 31, 100));
	assert_true(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "32d", NULL, now, 31, 100));
	assert_true(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "160d", "hour", now, 31, 100));
	assert_false(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "2026-11-01T00:00:00Z,2026-11-05T00:00:00Z", "hour", now, 31,
				       100));
	assert_true(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "2026-11-01T00:00:00Z,2026-11-06T00:00:00Z", "hour", now, 31,
				      100));
	assert_true(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, NULL, "hour", now, 31, 100)); /* a month of hours */
	assert_false(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "lastmonth", "week", now, 31, 100));
	/* the thresholds are the configuration's */
	assert_true(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "7d", "day", now, 31, 6));
	assert_true(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "8d", NULL, now, 7, 100));
	/* what the handler refuses with 400 does not wait for the heavy pool */
	assert_false(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "36500x", "hour", now, 31, 100));
	assert_false(gl_reqclass_heavy(GL_REQCLASS_WINDOWED, "7d", "fortnight", now, 31, 100));
}

/* ---- the pools ---- */

struct task {
	atomic_int *gate; /* 0: a task waits until the test opens it */
	atomic_int *ran, *dropped;
};

static void run_task(void *arg)
{
	struct task *t = arg;
	while (!atomic_load(t->gate))
		usleep(1000);
	atomic_fetch_add(t->ran, 1);
}

static void *open_later(void *arg)
{
	usleep(200 * 1000);
	atomic_store((atomic_int *)arg, 1);
	return NULL;
}

static void drop_task(void *arg)
{
	struct task *t = arg;
	atomic_fetch_add(t->dropped, 1);
}

/* Two tasks running (both threads blocked on the gate), then three
 * waiting. */
static void fill(struct gl_reqpool *p, struct task *t)
{
	size_t waiting = 0, running = 0;
	for (int i = 0; i < 2; i++)
		assert_int_equal(gl_reqpool_submit(p, run_task, drop_task, t), 0);
	for (int i = 0; i < 400 && running < 2; i++) {
		usleep(5000);
		gl_reqpool_load(p, &waiting, &running);
	}
	assert_int_equal(running, 2);
	for (int i = 0; i < 3; i++)
		assert_int_equal(gl_reqpool_submit(p, run_task, drop_task, t), 0);
}

/* threads run, queue_max wait, more are refused; a stop drops the
 * waiting ones and lets the running ones finish. */
static void test_pool_bounds_and_stop(void **state)
{
	atomic_int gate = 0, ran = 0, dropped = 0;
	pthread_t opener;
	struct task t = {&gate, &ran, &dropped};
	struct gl_reqpool *p = gl_reqpool_new("test", 2, 3, NULL, NULL);
	size_t waiting = 0, running = 0;
	/* two taken by the threads (wait for them to start), three waiting */
	fill(p, &t);
	gl_reqpool_load(p, &waiting, &running);
	assert_int_equal(running, 2);
	assert_int_equal(waiting, 3);
	assert_int_equal(gl_reqpool_submit(p, run_task, drop_task, &t), -GL_EBUSY);
	atomic_store(&gate, 1);
	for (int i = 0; i < 400 && atomic_load(&ran) < 5; i++)
		usleep(5000);
	assert_int_equal(atomic_load(&ran), 5);
	/* again, stopped with work waiting: the three waiting are dropped at
	 * once, the two running finish (the gate opens while stop waits) */
	atomic_store(&gate, 0);
	fill(p, &t);
	pthread_create(&opener, NULL, open_later, &gate);
	gl_reqpool_stop(p);
	pthread_join(opener, NULL);
	assert_int_equal(atomic_load(&ran), 7);
	assert_int_equal(atomic_load(&dropped), 3);
	assert_int_equal(gl_reqpool_submit(p, run_task, drop_task, &t), -GL_EBUSY);
	gl_reqpool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_admission),
		cmocka_unit_test(test_deadlines),
		cmocka_unit_test(test_between),
		cmocka_unit_test(test_heavy_rule),
		cmocka_unit_test(test_pool_bounds_and_stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
