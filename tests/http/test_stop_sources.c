/* SIGTERM lands in the middle of a sacct, kube, dcgm and node-inventory run:
 * the real binary, a real PostgreSQL, real input files (tests/fixtures),
 * a second session holding a lock on a table the run writes late in its
 * transaction, as tests/http/test_stop_locked.c does for sacct.
 *
 * For each source kind:
 * - a clean run of the same input into a database of its own gives the
 *   expected state (the same daemon, no lock, no stop);
 * - with the lock held, the daemon stops promptly (exit 0, a bound on a
 *   hang, not a measure), the run is on record as failed with why ("the
 *   daemon is stopping") and what the next run does again, none is left
 *   'running', and the stop is logged as cut short, not as a fault;
 * - a restart brings the database to exactly the clean run's state, with
 *   the inserted counters summing to the clean run's (nothing counted
 *   twice, nothing lost). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/promserve.h"
#include "lib/testlib.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STOP_BOUND_S 20
#define FX_DCGM "tests/fixtures/dcgm/"

static char g_dsn[512], g_clean_dsn[512];
static PGconn *g_c, *g_clean;
static PGconn *g_locker;
static struct gl_test_daemon g_d;
static struct gl_test_server *g_srv;
static int g_port;

/* Polls sql (one integer) on c until it reaches want; a cap of 30 s. */
static long long wait_for(PGconn *c, const char *sql, long long want)
{
	long long v = -1;
	for (int i = 0; i < 300; i++) {
		v = gl_test_qint(c, sql);
		if (v >= want)
			break;
		usleep(100000);
	}
	return v;
}

static void lock_table(const char *table)
{
	g_locker = gl_test_lock_table(g_dsn, table, "ACCESS EXCLUSIVE");
	assert_non_null(g_locker);
}

static void unlock_table(void)
{
	PQfinish(g_locker);
	g_locker = NULL;
}

static int teardown(void **state)
{
	(void)state;
	unlock_table();
	if (g_d.pid > 0)
		(void)gl_test_daemon_stop(&g_d);
	return 0;
}

/* Runs the daemon on dsn until source has a completed run, then stops it. */
static void run_to_completion(const char *dsn, PGconn *c, const char *cfg, const char *source)
{
	char sql[300], *log = NULL;
	int st;
	snprintf(sql, sizeof sql, "SELECT count(*) FROM ingest_runs WHERE source = '%s' AND status IN ('ok', 'partial')",
		 source);
	long long before = gl_test_qint(c, sql);
	assert_int_equal(gl_test_daemon_start(&g_d, dsn, cfg, NULL), 0);
	assert_int_equal(wait_for(c, sql, before + 1), before + 1);
	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, NULL);
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	free(log);
	assert_int_equal(st, 0);
}

/* The stop lands while source's run waits on the lock on table. */
static void stop_mid_run(const char *cfg, const char *table, const char *source, const char *redo)
{
	char sql[300], *log = NULL;
	const char *err;
	int st;
	lock_table(table);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	/* the run is in its transaction, waiting on the lock */
	assert_int_equal(wait_for(g_c,
				  "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
				  " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
				  1),
			 1);
	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, NULL);
	unlock_table();
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "serve: stopping"));
	assert_non_null(strstr(log, "cut short by the stop"));
	free(log);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM ingest_runs WHERE source = '%s' AND status = 'running'", source);
	assert_int_equal(gl_test_qint(g_c, sql), 0);
	snprintf(sql, sizeof sql, "SELECT status FROM ingest_runs WHERE source = '%s' ORDER BY run_id DESC LIMIT 1",
		 source);
	assert_string_equal(gl_test_qstr(g_c, sql), "failed");
	snprintf(sql, sizeof sql, "SELECT error FROM ingest_runs WHERE source = '%s' ORDER BY run_id DESC LIMIT 1",
		 source);
	err = gl_test_qstr(g_c, sql);
	fprintf(stderr, "the stopped run: %s\n", err);
	assert_non_null(strstr(err, "the daemon is stopping"));
	assert_non_null(strstr(err, redo));
}

/* The same query on both databases gives the same text. */
static void assert_same(const char *sql)
{
	char clean[4096];
	snprintf(clean, sizeof clean, "%s", gl_test_qstr(g_clean, sql));
	assert_string_equal(gl_test_qstr(g_c, sql), clean);
}

static void test_kube_stopped_mid_run(void **state)
{
	char cfg[2048], cwd[PATH_MAX];
	static const char *const rows =
		"SELECT count(*) || ' ' || md5(string_agg(job_key || ' ' || state || ' ' || coalesce(start_at::text, '-')"
		" || ' ' || coalesce(end_at::text, '-') || ' ' || coalesce(last_seen_at::text, '-') || ' ' || gpu_milli,"
		" ',' ORDER BY job_key)) FROM jobs j JOIN clusters c USING (cluster_id) WHERE c.name = 'k8stop'";
	(void)state;
	assert_non_null(getcwd(cwd, sizeof cwd));
	/* 128 pods in batches of 40: three commit, the last transaction (the
	 * vanished, the pending dcgm samples, the watermark) waits on the lock */
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\ningest:\n  batch_rows: 40\n"
		 "sources:\n  kube:\n    - cluster: k8stop\n      file: %s/tests/fixtures/kube/openb-at-10326485.json\n"
		 "      interval_s: 3600\n",
		 cwd);
	run_to_completion(g_clean_dsn, g_clean, cfg, "kube");
	assert_true(gl_test_qint(g_clean, "SELECT count(*) FROM jobs j JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'k8stop'") > 80);

	stop_mid_run(cfg, "dcgm_pending", "kube", "come with the next run's snapshot");
	/* what the stopped run counts is what it committed */
	assert_int_equal(gl_test_qint(g_c, "SELECT inserted FROM ingest_runs WHERE source = 'kube'"),
			 gl_test_qint(g_c, "SELECT count(*) FROM jobs j JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'k8stop'"));
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_state WHERE source = 'kube'"), 0);

	run_to_completion(g_dsn, g_c, cfg, "kube");
	assert_same(rows);
	assert_same("SELECT count(*) FROM ingest_state WHERE source = 'kube'");
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'kube'"),
			 gl_test_qint(g_clean, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'kube'"));
}

/* sacct's batch merged, then waiting on the lock (the pending dcgm samples
 * it claims before its commit): rolled back, said so in the run's record
 * ("7 rows not committed": it said 0), and not counted as inserted. */
static void test_sacct_stopped_after_its_merge(void **state)
{
	char cfg[4096], cwd[PATH_MAX];
	static const char *const rows =
		"SELECT count(*) || ' ' || md5(string_agg(job_key || ' ' || state || ' ' || coalesce(start_at::text, '-')"
		" || ' ' || coalesce(end_at::text, '-') || ' ' || gpu_milli, ',' ORDER BY job_key))"
		" FROM jobs j JOIN clusters c USING (cluster_id) WHERE c.name = 'testgpu'";
	(void)state;
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\ningest:\n  batch_rows: 7\n"
		 "sources:\n  sacct:\n    - cluster: testgpu\n      command: %s/tests/tools/fake-sacct.sh\n"
		 "      interval_s: 3600\n      lookback_s: 3600\n      timeout_s: 3600\n"
		 "      extra_args: --gl-fixture=%s/tests/fixtures/sacct/testbed/sacct_alloc.txt\n",
		 cwd, cwd);
	run_to_completion(g_clean_dsn, g_clean, cfg, "sacct");
	assert_true(gl_test_qint(g_clean, "SELECT count(*) FROM jobs j JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'testgpu'") > 7);

	stop_mid_run(cfg, "dcgm_pending", "sacct", "read again from the watermark");
	/* the merged batch of 7 went back (it said 0: merging empties the batch) */
	assert_non_null(strstr(gl_test_qstr(g_c, "SELECT error FROM ingest_runs WHERE source = 'sacct'"),
			       "; 7 rows not committed"));
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'sacct'"),
			 gl_test_qint(g_c, "SELECT count(*) FROM jobs j JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'testgpu'"));

	run_to_completion(g_dsn, g_c, cfg, "sacct");
	assert_same(rows);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'sacct'"),
			 gl_test_qint(g_clean, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'sacct'"));
}

/* kubectl still listing when the stop comes: killed, and the run on
 * record as failed, saying the next run lists the pods again. */
static void test_kube_command_stopped(void **state)
{
	char cfg[2048], script[PATH_MAX], mark[PATH_MAX], *log = NULL;
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	const char *err;
	FILE *f;
	int st;
	(void)state;
	snprintf(script, sizeof script, "%s/slow-kubectl.sh", tmp);
	snprintf(mark, sizeof mark, "%s/slow-kubectl.started", tmp);
	unlink(mark);
	f = fopen(script, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\ntouch '%s'\nsleep 30\n", mark);
	fclose(f);
	assert_int_equal(chmod(script, 0755), 0);
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\nsources:\n  kube:\n    - cluster: k8slow\n      command: %s\n"
		 "      interval_s: 3600\n      timeout_s: 60\n",
		 script);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	/* the listing is under way */
	for (int i = 0; i < 1500 && access(mark, F_OK) != 0; i++)
		usleep(20000);
	assert_int_equal(access(mark, F_OK), 0);
	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, NULL);
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "cut short by the stop"));
	free(log);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'k8slow' AND r.status = 'running'"),
			 0);
	err = gl_test_qstr(g_c, "SELECT r.status || ': ' || r.error FROM ingest_runs r JOIN clusters c USING (cluster_id)"
				" WHERE c.name = 'k8slow'");
	fprintf(stderr, "the stopped run: %s\n", err);
	assert_non_null(strstr(err, "failed: "));
	assert_non_null(strstr(err, "the daemon is stopping"));
	assert_non_null(strstr(err, "the next run lists the pods again"));
}

static void test_dcgm_stopped_mid_run(void **state)
{
	char cfg[2048];
	static const char *const usage =
		"SELECT count(*) || ' ' || coalesce(sum(u.samples), 0) || ' ' || coalesce(sum(u.busy_samples), 0)"
		" FROM gpu_usage u JOIN clusters c USING (cluster_id) WHERE c.name = 'dcgmstop'";
	static const char *const gpus =
		"SELECT count(*) || ' ' || md5(string_agg(g.uuid || ' ' || coalesce(g.model, '-'), ',' ORDER BY g.uuid))"
		" FROM gpus g JOIN clusters c USING (cluster_id) WHERE c.name = 'dcgmstop'";
	(void)state;
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\ningest:\n  bucket_s: 3600\n"
		 "sources:\n  dcgm:\n    - cluster: dcgmstop\n"
		 "      targets: http://127.0.0.1:%d/node-a/metrics http://127.0.0.1:%d/node-b/metrics\n"
		 "      interval_s: 3600\n      timeout_s: 10\n",
		 g_port, g_port);
	run_to_completion(g_clean_dsn, g_clean, cfg, "dcgm");
	assert_true(gl_test_qint(g_clean, "SELECT count(*) FROM gpus") > 0);

	/* written late in the round's one transaction, after the inventory */
	stop_mid_run(cfg, "dcgm_gpu_state", "dcgm", "the next round scrapes the targets again");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus"), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpu_usage"), 0);

	run_to_completion(g_dsn, g_c, cfg, "dcgm");
	assert_same(gpus);
	assert_same(usage);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'dcgm'"),
			 gl_test_qint(g_clean, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'dcgm'"));
}

static void test_nodes_stopped_mid_run(void **state)
{
	char cfg[2048], cwd[PATH_MAX];
	static const char *const spans =
		"SELECT (SELECT count(*) || ' ' || coalesce(sum(gpus), 0) || ' ' || md5(string_agg(node || ' ' || gpus"
		" || ' ' || valid_from::text, ',' ORDER BY node, valid_from)) FROM node_gpu_spans s JOIN clusters c"
		" USING (cluster_id) WHERE c.name = 'nodestop') || ' / ' || (SELECT count(*) || ' ' || md5(string_agg("
		"node || ' ' || state || ' ' || valid_from::text, ',' ORDER BY node, valid_from)) FROM node_state_spans s"
		" JOIN clusters c USING (cluster_id) WHERE c.name = 'nodestop')";
	(void)state;
	assert_non_null(getcwd(cwd, sizeof cwd));
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\n"
		 "sources:\n  kube_nodes:\n    - cluster: nodestop\n"
		 "      file: %s/tests/fixtures/nodes/kube/t0_2026-11-01T00.json\n      interval_s: 3600\n",
		 cwd);
	run_to_completion(g_clean_dsn, g_clean, cfg, "kube-nodes");
	assert_true(gl_test_qint(g_clean, "SELECT count(*) FROM node_gpu_spans") > 0);

	/* written after the GPU spans, in the same transaction */
	stop_mid_run(cfg, "node_state_spans", "kube-nodes", "the next run reads the nodes again");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM node_gpu_spans"), 0);

	run_to_completion(g_dsn, g_c, cfg, "kube-nodes");
	assert_same(spans);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'kube-nodes'"),
			 gl_test_qint(g_clean, "SELECT sum(inserted) FROM ingest_runs WHERE source = 'kube-nodes'"));
}

/* A target slower than the stop: the round is dropped, not waited for and
 * then written during the stop (the daemon waited for the slowest target,
 * up to timeout_s, then ingested the round). */
static void test_dcgm_stopped_while_scraping(void **state)
{
	char cfg[2048], *log = NULL;
	size_t before = gl_test_server_requests(g_srv);
	int st;
	(void)state;
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\n"
		 "sources:\n  dcgm:\n    - cluster: dcgmslow\n"
		 "      targets: http://127.0.0.1:%d/node-a/metrics http://127.0.0.1:%d/slow/metrics\n"
		 "      interval_s: 3600\n      timeout_s: 60\n",
		 g_port, g_port);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	for (int i = 0; i < 300 && gl_test_server_requests(g_srv) < before + 2; i++)
		usleep(20000);
	assert_true(gl_test_server_requests(g_srv) >= before + 1); /* node-a answered; slow is in flight */
	st = gl_test_daemon_sigterm(&g_d, STOP_BOUND_S, &log, NULL);
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "stopped while scraping"));
	assert_non_null(strstr(log, "cut short by the stop"));
	free(log);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'dcgmslow'"),
			 0);
}

static int serve_file(const char *path, const char *file, int delay_ms)
{
	size_t n;
	char *b = gl_test_read_file(gl_test_fixture(file), &n);
	gl_test_server_route(g_srv, path, b, n, delay_ms);
	free(b);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: the slow target's answer is over by the end */
		cmocka_unit_test_teardown(test_dcgm_stopped_while_scraping, teardown),
		cmocka_unit_test_teardown(test_sacct_stopped_after_its_merge, teardown),
		cmocka_unit_test_teardown(test_kube_stopped_mid_run, teardown),
		cmocka_unit_test_teardown(test_kube_command_stopped, teardown),
		cmocka_unit_test_teardown(test_dcgm_stopped_mid_run, teardown),
		cmocka_unit_test_teardown(test_nodes_stopped_mid_run, teardown),
	};
	int rc;
	if (gl_test_db_fresh("gl_test_stop_sources", g_dsn, sizeof g_dsn) ||
	    gl_test_db_fresh("gl_test_stop_sources_clean", g_clean_dsn, sizeof g_clean_dsn))
		return 1;
	g_c = PQconnectdb(g_dsn);
	g_clean = PQconnectdb(g_clean_dsn);
	if (PQstatus(g_c) != CONNECTION_OK || PQstatus(g_clean) != CONNECTION_OK)
		return 1;
	if (gl_test_server_start(&g_srv, &g_port) ||
	    serve_file("/node-a/metrics", FX_DCGM "datadog_dcgm_fixture_metrics.prom", 0) ||
	    serve_file("/node-b/metrics", FX_DCGM "handwritten_mig_h100.prom", 0) ||
	    serve_file("/slow/metrics", FX_DCGM "handwritten_slurm_hpc_job.prom", 4000))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	gl_test_server_stop(g_srv);
	PQfinish(g_c);
	PQfinish(g_clean);
	return rc;
}
