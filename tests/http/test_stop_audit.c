/* SIGTERM while a second session holds `LOCK TABLE audit_log IN ACCESS
 * EXCLUSIVE MODE`: the real binary, a real PostgreSQL, real HTTP.
 *
 * 1. The audit writer's row of an answered request waits on the lock: the
 *    stop waits for it GL_AUDIT_STOP_GRACE_MS (5 s), then cancels it and
 *    logs the row whole at ERROR; the daemon exits 0 (it used to wait for
 *    the lock for ever: the writer's inserts were never cancelled).
 * 2. An ingest run's "ingest.run" row waits on the lock when the stop
 *    comes: cancelled, it is logged whole at ERROR (it used to be a WARN
 *    without the row); the run itself is on record as ok.
 * 3. A decision's row (a hook action recorded over the API) waits on the
 *    lock: the stop cancels the request's transaction, and the decision
 *    is not on record either: never one without the other.
 * 4. The periodic audit anchor waiting on the lock is cut short by the
 *    stop, logged as such, not as an ERROR (it was).
 * The chain verifies afterwards in both. The bound is on a hang, not a
 * measure of speed. */
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

#define STOP_BOUND_S 30

static char g_dsn[512];
static PGconn *g_c;
static PGconn *g_locker;
static struct gl_test_daemon g_d;

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

static void wait_for_lock_waiter(void)
{
	assert_true(wait_for("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
			     " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
			     1) >= 1);
}

static void lock_audit(void)
{
	g_locker = gl_test_lock_table(g_dsn, "audit_log", "ACCESS EXCLUSIVE");
	assert_non_null(g_locker);
}

static void unlock_audit(void)
{
	PQfinish(g_locker);
	g_locker = NULL;
}

static int teardown(void **state)
{
	(void)state;
	unlock_audit();
	if (g_d.pid > 0)
		(void)gl_test_daemon_stop(&g_d);
	return 0;
}

/* The log line "audit: row not written ...: {json}" naming action, parsed. */
static cJSON *lost_row(const char *log, const char *action)
{
	for (const char *p = log; (p = strstr(p, "audit: row not written")); p++) {
		const char *j = strstr(p, ": {"), *nl = strchr(p, '\n');
		char *line;
		cJSON *row;
		if (!j || (nl && j > nl))
			continue;
		line = strndup(j + 2, nl ? (size_t)(nl - j - 2) : strlen(j + 2));
		row = cJSON_Parse(line);
		free(line);
		if (row && cJSON_IsString(cJSON_GetObjectItem(row, "action")) &&
		    !strcmp(cJSON_GetObjectItem(row, "action")->valuestring, action))
			return row;
		cJSON_Delete(row);
	}
	return NULL;
}

static void assert_chain_verifies(void)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "verify", NULL), 0);
	if (o.status)
		fprintf(stderr, "audit verify: %s%s\n", o.out, o.err);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
}

static void test_writer_row_waits_out_its_grace_then_goes_to_the_log(void **state)
{
	struct gl_test_http r = {0};
	char *log = NULL;
	cJSON *row;
	long long before;
	int st;
	(void)state;
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, "log:\n  level: info\n", (const char *[]){"--no-ingest", NULL}),
			 0);
	before = gl_test_qint(g_c, "SELECT count(*) FROM audit_log");
	lock_audit();
	/* answered: only its audit row waits, on the writer's connection */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/jobs?limit=1", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	gl_test_http_fini(&r);
	wait_for_lock_waiter();

	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, NULL);
	unlock_audit();
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "rows still not written 5 s into the stop"));
	row = lost_row(log, "http.request");
	assert_non_null(row);
	assert_string_equal(cJSON_GetObjectItem(row, "object")->valuestring, "/v1/jobs");
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "detail"), "status")->valueint, 200);
	cJSON_Delete(row);
	free(log);
	/* not in the audit log: the row went to the daemon's log instead */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log"), before);
	assert_chain_verifies();
}

static void test_ingest_run_row_cut_by_the_stop_goes_to_the_log(void **state)
{
	char cfg[3 * PATH_MAX], cwd[PATH_MAX], gated[PATH_MAX + 32], go[PATH_MAX + 32], *log = NULL;
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	cJSON *row;
	FILE *f;
	int st;
	(void)state;
	assert_non_null(getcwd(cwd, sizeof cwd));
	/* the node listing waits for the lock to be taken (the daemon's start
	 * writes audit rows of its own first); a cap of 30 s */
	snprintf(gated, sizeof gated, "%s/gated-nodes.sh", tmp);
	snprintf(go, sizeof go, "%s/gated-nodes.go", tmp);
	unlink(go);
	f = fopen(gated, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\ni=0\nwhile [ ! -e '%s' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n"
		   "cat '%s/tests/fixtures/nodes/kube/t0_2026-11-01T00.json'\n",
		go, cwd);
	fclose(f);
	assert_int_equal(chmod(gated, 0755), 0);
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\n"
		 "sources:\n  kube_nodes:\n    - cluster: auditstop\n      command: %s\n      interval_s: 3600\n",
		 gated);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	lock_audit();
	f = fopen(go, "w");
	assert_non_null(f);
	fclose(f);
	/* the snapshot is in; its audit row waits on the lock */
	assert_int_equal(wait_for("SELECT count(*) FROM ingest_runs WHERE source = 'kube-nodes' AND status = 'ok'", 1), 1);
	wait_for_lock_waiter();

	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, NULL);
	unlock_audit();
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	row = lost_row(log, "ingest.run");
	assert_non_null(row);
	assert_string_equal(cJSON_GetObjectItem(row, "object")->valuestring, "kube-nodes:auditstop");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "detail"), "status")->valuestring, "ok");
	cJSON_Delete(row);
	free(log);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'ingest.run'"), 0);
	assert_chain_verifies();
}

struct post_arg {
	int port;
	const char *body;
	struct gl_test_http r;
	int rc;
};

static void *do_post(void *p)
{
	struct post_arg *a = p;
	a->rc = gl_test_http(a->port, "POST", "/v1/hook/actions", a->body, strlen(a->body),
			     (const char *const[]){"Content-Type: application/json", NULL}, &a->r);
	return NULL;
}

/* A decision (a hook action recorded over the API) whose audit row waits
 * on the lock: the stop cancels its transaction, and the action goes with
 * its row (never an action on record without its audit row). */
static void test_a_decision_and_its_row_roll_back_together(void **state)
{
	static const char body1[] = "{\"cluster\":\"c1\",\"job_id\":\"1\",\"policy\":\"p\",\"stage\":\"act\",\"ok\":true}";
	static const char body2[] = "{\"cluster\":\"c1\",\"job_id\":\"2\",\"policy\":\"p\",\"stage\":\"act\",\"ok\":true}";
	struct post_arg a = {0};
	pthread_t th;
	char *log = NULL;
	int st;
	(void)state;
	/* no request rows: only the decision's own row is at stake here */
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, "log:\n  level: info\naudit:\n  requests: false\n",
					      (const char *[]){"--no-ingest", NULL}),
			 0);
	/* without the lock: recorded, with its row */
	a.port = g_d.port;
	a.body = body1;
	do_post(&a);
	assert_int_equal(a.rc, 0);
	assert_true(a.r.status >= 200 && a.r.status < 300);
	gl_test_http_fini(&a.r);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'"), 1);

	lock_audit();
	memset(&a, 0, sizeof a);
	a.port = g_d.port;
	a.body = body2;
	assert_int_equal(pthread_create(&th, NULL, do_post, &a), 0);
	wait_for_lock_waiter();
	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, NULL);
	pthread_join(th, NULL);
	unlock_audit();
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	free(log);
	fprintf(stderr, "the request: %s %ld\n", a.rc ? "connection closed" : "answered", a.r.status);
	assert_true(a.rc != 0 || a.r.status >= 500);
	gl_test_http_fini(&a.r);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'"), 1);
	assert_chain_verifies();
}

/* 1 when a line of log has both a and b. */
static int line_has(const char *log, const char *a, const char *b)
{
	for (const char *p = log; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *line = strndup(p, n);
		int hit = strstr(line, a) && strstr(line, b);
		free(line);
		if (hit)
			return 1;
		p += n + (nl != NULL);
	}
	return 0;
}

/* The periodic anchor waiting on the lock when the stop comes is cut
 * short like a source, not logged as a fault (the last anchor follows,
 * and its own 5 s limit is a real failure when the lock outlasts it). */
static void test_periodic_anchor_cut_short_is_not_a_fault(void **state)
{
	char cfg[PATH_MAX + 200], anchors[PATH_MAX], *log = NULL, *a;
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	int st, lines = 0;
	(void)state;
	snprintf(anchors, sizeof anchors, "%s/stop-audit-anchors.txt", tmp);
	unlink(anchors);
	snprintf(cfg, sizeof cfg, "log:\n  level: info\naudit:\n  anchor_file: %s\n  anchor_interval_s: 1\n", anchors);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, (const char *[]){"--no-ingest", NULL}), 0);
	for (int i = 0; i < 300 && !lines; i++) {
		a = access(anchors, R_OK) ? NULL : gl_test_read_file(anchors, NULL);
		lines = a && strchr(a, '\n');
		free(a);
		if (!lines)
			usleep(100000);
	}
	assert_true(lines); /* the first anchor is out */
	lock_audit();
	wait_for_lock_waiter(); /* the next one waits on the lock */
	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, NULL);
	unlock_audit();
	if (st || line_has(log, "ERROR", "the daemon is stopping"))
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "audit anchor: cut short by the stop"));
	assert_false(line_has(log, "ERROR", "the daemon is stopping"));
	free(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_writer_row_waits_out_its_grace_then_goes_to_the_log, teardown),
		cmocka_unit_test_teardown(test_ingest_run_row_cut_by_the_stop_goes_to_the_log, teardown),
		cmocka_unit_test_teardown(test_a_decision_and_its_row_roll_back_together, teardown),
		cmocka_unit_test_teardown(test_periodic_anchor_cut_short_is_not_a_fault, teardown),
	};
	int rc;
	if (gl_test_db_fresh("gl_test_stop_audit", g_dsn, sizeof g_dsn))
		return 1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	PQfinish(g_c);
	return rc;
}
