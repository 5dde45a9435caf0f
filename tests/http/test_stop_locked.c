/* SIGTERM stops the daemon while its database work waits on a lock that
 * another session holds: the real binary, a real PostgreSQL, real HTTP.
 *
 * 1. A scheduled sacct ingest commits its first batch, then blocks on
 *    `LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE` held by a second session.
 *    The stop cancels the waiting query, the batch rolls back, the daemon
 *    exits 0 with its stop line; a restart then brings every job in
 *    exactly once and sets the watermark.
 * 2. An HTTP request whose query waits on the same lock does not hold the
 *    stop either (libmicrohttpd joins its workers, so it used to wait for
 *    the request, and the request for the lock).
 * Both used to wait for the lock for ever: no query was ever cancelled.
 * The 10 s below are a bound on a hang, not a measure of speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STOP_BOUND_S 10
#define FIRST_BATCH 7 /* ingest.batch_rows: the fixture's 20 jobs make batches of 7, 7, 6 */

static char g_dsn[512], g_dir[PATH_MAX];
static PGconn *g_c;
static PGconn *g_locker; /* the second session holding the lock; released by the teardown too */
static struct gl_test_daemon g_d;

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
}

/* Polls sql (one integer) until it reaches want; a cap of 30 s. */
static long long wait_for(const char *sql, long long want)
{
	long long v = -1;
	for (int i = 0; i < 300; i++) {
		v = gl_test_qint(g_c, sql);
		if (v >= want)
			break;
		usleep(100000);
	}
	return v;
}

/* Some backend of this database other than ours waits on a heavyweight lock. */
static void wait_for_lock_waiter(void)
{
	long long n = wait_for("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
			       " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
			       1);
	assert_true(n >= 1);
}

static void lock_jobs(void)
{
	g_locker = gl_test_lock_table(g_dsn, "jobs", "ACCESS EXCLUSIVE");
	assert_non_null(g_locker);
}

/* Ending the session ends its transaction and the lock with it. */
static void unlock_jobs(void)
{
	PQfinish(g_locker);
	g_locker = NULL;
}

/* After a failed assertion too: no lock left to block the next test, no
 * daemon left running. */
static int teardown(void **state)
{
	(void)state;
	unlock_jobs();
	if (g_d.pid > 0)
		(void)gl_test_daemon_stop(&g_d);
	return 0;
}

static void write_config(char *cfg, size_t n, const char *gated)
{
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(cfg, n,
		 "log:\n  level: info\ningest:\n  batch_rows: %d\n"
		 "sources:\n  sacct:\n    - cluster: testgpu\n      command: %s\n"
		 "      interval_s: 3600\n      lookback_s: 3600\n      timeout_s: 3600\n"
		 "      extra_args: --gl-fixture=%s/tests/fixtures/sacct/testbed/sacct_alloc.txt\n",
		 FIRST_BATCH, gated, cwd);
}

static void test_sigterm_cancels_an_ingest_waiting_on_a_lock(void **state)
{
	char gated[PATH_MAX + 32], mark[PATH_MAX + 32], go[PATH_MAX + 32], cwd[PATH_MAX], cfg[4 * PATH_MAX];
	char *log = NULL;
	long long fixture_jobs, v;
	double took;
	FILE *f;
	int st;
	(void)state;

	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(gated, sizeof gated, "%s/gated-sacct.sh", g_dir);
	snprintf(mark, sizeof mark, "%s/first-batch-sent", g_dir);
	snprintf(go, sizeof go, "%s/go", g_dir);
	unlink(mark);
	unlink(go);
	/* the real dump through the stand-in sacct, held after its first
	 * batch until the test has taken the lock (a cap of 30 s) */
	f = fopen(gated, "w");
	assert_non_null(f);
	fprintf(f,
		"#!/bin/sh\nset -e\nout=$(mktemp)\n%s/tests/tools/fake-sacct.sh \"$@\" > \"$out\"\n"
		"head -n %d \"$out\"\necho sent > '%s'\ni=0\n"
		"while [ ! -e '%s' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n"
		"tail -n +%d \"$out\"\nrm -f \"$out\"\n",
		cwd, FIRST_BATCH, mark, go, FIRST_BATCH + 1);
	fclose(f);
	assert_int_equal(chmod(gated, 0755), 0);
	{
		size_t len;
		char *fx = gl_test_read_file("tests/fixtures/sacct/testbed/sacct_alloc.txt", &len);
		fixture_jobs = 0;
		for (size_t i = 0; i < len; i++)
			fixture_jobs += fx[i] == '\n';
		free(fx);
	}
	assert_true(fixture_jobs > 2 * FIRST_BATCH);
	write_config(cfg, sizeof cfg, gated);

	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	/* the first batch is committed (no watermark yet: that comes with the last) */
	v = wait_for("SELECT count(*) FROM jobs", FIRST_BATCH);
	assert_int_equal(v, FIRST_BATCH);
	lock_jobs();
	touch(go);
	wait_for_lock_waiter();

	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, &took);
	fprintf(stderr, "stop with the ingest waiting on the lock: %.2f s, exit %d\n", took, st);
	if (st != 0)
		fprintf(stderr, "daemon log:\n%s\n", log);
	unlock_jobs();
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "serve: stopping"));
	assert_non_null(strstr(log, "cancel"));
	free(log);

	/* the cancelled batch left nothing: the first batch, no watermark, and
	 * the run says why it failed */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), FIRST_BATCH);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_state WHERE watermark IS NOT NULL"), 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT status FROM ingest_runs ORDER BY run_id LIMIT 1"), "failed");
	assert_non_null(strstr(gl_test_qstr(g_c, "SELECT error FROM ingest_runs ORDER BY run_id LIMIT 1"), "stopping"));

	/* a restart resumes from the (unchanged) watermark: every job once */
	touch(go);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	v = wait_for("SELECT count(*) FROM ingest_runs WHERE status = 'ok'", 1);
	assert_int_equal(v, 1);
	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, &took);
	free(log);
	assert_int_equal(st, 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), fixture_jobs);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(DISTINCT job_key) FROM jobs"), fixture_jobs);
	/* inserted once over both runs: the rolled-back batch counted nowhere */
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(inserted) FROM ingest_runs"), fixture_jobs);
	assert_int_equal(gl_test_qint(g_c, "SELECT inserted + updated + unchanged FROM ingest_runs WHERE status = 'ok'"),
			 fixture_jobs);
	/* the watermark is the end of the run that completed, not of the stopped one */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_state s JOIN ingest_runs r"
					   " ON r.status = 'ok' AND s.watermark BETWEEN r.started_at - interval '5 s'"
					   " AND r.finished_at + interval '5 s'"),
			 1);
}

struct req_arg {
	int port;
	struct gl_test_http r;
	int rc;
};

static void *do_request(void *p)
{
	struct req_arg *a = p;
	a->rc = gl_test_http(a->port, "GET", "/v1/jobs?limit=5", NULL, 0, NULL, &a->r);
	return NULL;
}

static void test_sigterm_with_a_request_waiting_on_a_lock(void **state)
{
	struct req_arg a = {0};
	pthread_t th;
	char *log = NULL;
	double took;
	int st;
	(void)state;

	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, "log:\n  level: info\n", (const char *[]){"--no-ingest", NULL}),
			 0);
	lock_jobs();
	a.port = g_d.port;
	assert_int_equal(pthread_create(&th, NULL, do_request, &a), 0);
	wait_for_lock_waiter();

	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, &took);
	fprintf(stderr, "stop with a request waiting on the lock: %.2f s, exit %d\n", took, st);
	if (st != 0)
		fprintf(stderr, "daemon log:\n%s\n", log);
	/* the request ends with the daemon (curl's own cap is 30 s) */
	pthread_join(th, NULL);
	unlock_jobs();
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "serve: stopping"));
	free(log);
	fprintf(stderr, "the request: %s %ld\n", a.rc ? "connection closed" : "answered", a.r.status);
	/* cut short: an error answer or a closed connection, never rows */
	assert_true(a.rc != 0 || a.r.status == 503);
	gl_test_http_fini(&a.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_sigterm_cancels_an_ingest_waiting_on_a_lock, teardown),
		cmocka_unit_test_teardown(test_sigterm_with_a_request_waiting_on_a_lock, teardown),
	};
	int rc;
	snprintf(g_dir, sizeof g_dir, "%s/stop-locked", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(g_dir, 0755);
	if (gl_test_db_fresh("gl_test_stop_locked", g_dsn, sizeof g_dsn))
		return 1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	PQfinish(g_c);
	return rc;
}
