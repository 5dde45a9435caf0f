/* gl_dbcancel_sent() for work whose connection has no cancel key (libpq's
 * PQgetCancel gave none: here a connection that never came up). The stop
 * cannot cancel it, yet gl_dbcancel_sent() said 1 once the watcher had
 * passed it (it counted the round as a request sent), so a statement of
 * that work failing with SQLSTATE 57014 (a statement_timeout) would be
 * reported as "cancelled: the daemon is stopping". It must stay 0.
 *
 * Beside it, a real connection's pg_sleep(600) is cancelled by the same
 * stop: the watcher's round that sends that cancel goes over every slot
 * under its lock, and gl_dbcancel_sent() takes the same lock, so once the
 * sleep has been cancelled the keyless slot has been seen. alarm() turns a
 * hang into a failure; it is a bound, not a measure. Real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/dbcancel.h"
#include "store/db_int.h"
#include "lib/testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sleeper {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int ready;
	char sqlstate[8];
	int sent;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *w = arg;
	struct gl_dbcancel_slot s = {0};
	PGconn *c = PQconnectdb(getenv("GL_TEST_ADMIN_DSN"));
	PGresult *r;
	gl_dbcancel_begin(&s, gl_db_store(c), GL_DBCANCEL_WORK, "sleeper");
	pthread_mutex_lock(&w->mu);
	w->ready = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	/* a cancel that lands before the statement starts is ignored by the
	 * server; the watcher sends again every GL_DBCANCEL_RETRY_MS */
	r = PQexec(c, "SELECT pg_sleep(600)");
	snprintf(w->sqlstate, sizeof w->sqlstate, "%s",
		 PQresultErrorField(r, PG_DIAG_SQLSTATE) ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : "");
	w->sent = gl_dbcancel_sent();
	PQclear(r);
	gl_dbcancel_end(&s);
	PQfinish(c);
	return NULL;
}

static void test_no_key_not_sent(void **state)
{
	struct gl_err e = {0};
	struct gl_dbcancel_slot s = {0};
	struct sleeper w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	pthread_t th;
	/* a connection that never came up: PQgetCancel has no key for it */
	PGconn *bad = PQconnectdb("host=/nonexistent-gl-test port=1 connect_timeout=1");
	assert_int_equal(PQstatus(bad), CONNECTION_BAD);
	assert_null(PQgetCancel(bad));

	alarm(120);
	assert_int_equal(gl_dbcancel_start(&e), 0);
	gl_dbcancel_begin(&s, gl_db_store(bad), GL_DBCANCEL_WORK, "keyless");
	assert_null(s.key);
	assert_int_equal(pthread_create(&th, NULL, sleeper_main, &w), 0);
	pthread_mutex_lock(&w.mu);
	while (!w.ready)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);

	gl_dbcancel_request(GL_DBCANCEL_WORK);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* the stop did reach the real connection */
	assert_string_equal(w.sqlstate, "57014");
	assert_int_equal(w.sent, 1);
	/* and could send nothing for the keyless one */
	assert_int_equal(gl_dbcancel_sent(), 0);

	gl_dbcancel_end(&s);
	gl_dbcancel_stop();
	PQfinish(bad);
	alarm(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_key_not_sent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
