/* The real daemon over real HTTP: health, metrics, errors, hardening, and the
 * periodic sacct source (a stand-in sacct that prints a real dump). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <limits.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dsn[512], g_dir[PATH_MAX], g_failflag[PATH_MAX + 32], g_argvlog[PATH_MAX + 32];
static struct gl_test_daemon g_d;
static PGconn *g_c;

static int setup(void **state)
{
	char cwd[PATH_MAX], cfg[8192];
	if (gl_test_db_fresh("gl_test_http", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (!getcwd(cwd, sizeof cwd))
		return -1;
	snprintf(g_dir, sizeof g_dir, "%s/http-test", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(g_dir, 0755);
	snprintf(g_failflag, sizeof g_failflag, "%s/sacct-fail", g_dir);
	snprintf(g_argvlog, sizeof g_argvlog, "%s/sacct-argv.log", g_dir);
	unlink(g_failflag);
	unlink(g_argvlog);
	snprintf(cfg, sizeof cfg,
		 "server:\n  max_body_bytes: 1024\nlog:\n  level: info\n"
		 "sources:\n  sacct:\n    - cluster: testgpu\n      command: %s/tests/tools/fake-sacct.sh\n"
		 "      interval_s: 5\n      overlap_s: 600\n      lookback_s: 7200\n"
		 "      extra_args: --gl-fixture=%s/tests/fixtures/sacct/testbed/sacct_alloc.txt --gl-argv-log=%s --gl-fail-flag=%s\n",
		 cwd, cwd, g_argvlog, g_failflag);
	return gl_test_daemon_start(&g_d, g_dsn, cfg, NULL);
}

static int teardown(void **state)
{
	int st = gl_test_daemon_stop(&g_d);
	PQfinish(g_c);
	/* SIGTERM is a clean stop */
	return st == 0 ? 0 : -1;
}

static cJSON *get_json(const char *path, long want_status)
{
	cJSON *j = gl_test_get_json(g_d.port, path, want_status);
	assert_non_null(j);
	return j;
}

static void test_healthz(void **state)
{
	cJSON *j = get_json("/healthz", 200);
	assert_string_equal(cJSON_GetObjectItem(j, "status")->valuestring, "ok");
	assert_string_equal(cJSON_GetObjectItem(j, "db")->valuestring, "ok");
	cJSON_Delete(j);
}

/* The database going away turns /healthz into 503 within the probe's
 * one-second cache, and the daemon keeps answering. */
static void test_healthz_without_database(void **state)
{
	struct gl_test_daemon d2;
	struct gl_test_http r = {0};
	char dsn[512];
	PGconn *admin;
	PGresult *pr;
	int i;

	(void)state;
	assert_int_equal(gl_test_db_fresh("gl_test_health_gone", dsn, sizeof dsn), 0);
	assert_int_equal(gl_test_daemon_start(&d2, dsn, NULL, (const char *[]){"--no-ingest", NULL}), 0);
	{
		cJSON *j = gl_test_get_json(d2.port, "/healthz", 200);
		assert_non_null(j);
		cJSON_Delete(j);
	}
	admin = PQconnectdb(getenv("GL_TEST_ADMIN_DSN"));
	pr = PQexec(admin, "DROP DATABASE gl_test_health_gone WITH (FORCE)");
	assert_int_equal(PQresultStatus(pr), PGRES_COMMAND_OK);
	PQclear(pr);
	PQfinish(admin);
	for (i = 0; i < 100; i++) { /* up to 10 s: a cap, not a measurement */
		gl_test_http_fini(&r);
		assert_int_equal(gl_test_http(d2.port, "GET", "/healthz", NULL, 0, NULL, &r), 0);
		if (r.status == 503)
			break;
		usleep(100000);
	}
	assert_int_equal(r.status, 503);
	assert_non_null(strstr(r.body, "\"status\":\"unavailable\""));
	/* a public route: libpq's words (here the database's name) stay in
	 * the log, the body has a reference to them */
	assert_null(strstr(r.body, "gl_test_health_gone"));
	assert_non_null(strstr(r.body, "\"ref\":"));
	gl_test_http_fini(&r);
	gl_test_daemon_stop(&d2);
}

static void expect_error(const char *method, const char *path, const char *body, size_t blen, long status,
			 const char *code, const char *param)
{
	struct gl_test_http r;
	cJSON *j, *e;
	assert_int_equal(gl_test_http(g_d.port, method, path, body, blen, NULL, &r), 0);
	if (r.status != status)
		fprintf(stderr, "%s %s: %ld %s\n", method, path, r.status, r.body);
	assert_int_equal(r.status, status);
	j = cJSON_Parse(r.body);
	assert_non_null(j);
	e = cJSON_GetObjectItem(j, "error");
	assert_non_null(e);
	assert_string_equal(cJSON_GetObjectItem(e, "code")->valuestring, code);
	assert_non_null(cJSON_GetObjectItem(e, "message")->valuestring);
	if (param)
		assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, param);
	else
		assert_null(cJSON_GetObjectItem(e, "param"));
	cJSON_Delete(j);
	gl_test_http_fini(&r);
}

static void test_errors_are_json_with_param(void **state)
{
	static char big[4096];
	memset(big, 'x', sizeof big);
	expect_error("GET", "/v1/jobs?limit=abc", NULL, 0, 400, "bad_request", "limit");
	expect_error("GET", "/v1/jobs?limit=0", NULL, 0, 400, "bad_request", "limit");
	expect_error("GET", "/v1/jobs?state=BOGUS", NULL, 0, 400, "bad_request", "state");
	expect_error("GET", "/v1/nope", NULL, 0, 404, "not_found", NULL);
	expect_error("POST", "/healthz", "{}", 2, 405, "method_not_allowed", NULL);
	expect_error("POST", "/v1/jobs", big, sizeof big, 413, "too_large", NULL);
}

static void test_sacct_source_ingests_and_serves(void **state)
{
	cJSON *j = NULL, *jobs;
	int n = 0;
	/* the first run starts right away; allow a few intervals */
	for (int i = 0; i < 150 && n < 20; i++) {
		cJSON_Delete(j);
		j = get_json("/v1/jobs?cluster=testgpu&limit=100", 200);
		n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "jobs"));
		if (n < 20)
			usleep(100000);
	}
	assert_int_equal(n, 20);
	jobs = cJSON_GetObjectItem(j, "jobs");
	{
		int found = 0;
		cJSON *it;
		cJSON_ArrayForEach(it, jobs)
		{
			if (!strcmp(cJSON_GetObjectItem(it, "job_id")->valuestring, "6")) {
				found = 1;
				assert_true(cJSON_GetObjectItem(it, "gpus")->valuedouble == 8.0);
				assert_string_equal(cJSON_GetObjectItem(it, "gpu_type")->valuestring, "a100");
				assert_string_equal(cJSON_GetObjectItem(it, "start")->valuestring, "2026-11-22T16:04:57Z");
				assert_int_equal(cJSON_GetObjectItem(it, "queue_wait_s")->valueint, 59);
			}
		}
		assert_true(found);
	}
	cJSON_Delete(j);
	/* sacct was called the recommended way, in UTC */
	{
		FILE *f = fopen(g_argvlog, "r");
		char line[4096] = "";
		assert_non_null(f);
		assert_non_null(fgets(line, sizeof line, f));
		fclose(f);
		assert_true(strncmp(line, "TZ=UTC ", 7) == 0);
		assert_non_null(strstr(line, "--allusers --parsable2 --noheader --allocations --duplicates --clusters testgpu --starttime "));
		assert_non_null(strstr(line, "--endtime "));
	}
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_state WHERE source = 'sacct' AND watermark IS NOT NULL"), 1);
}

static void test_sacct_failure_keeps_watermark(void **state)
{
	long long wm0, wm1, failed = 0;
	FILE *f;
	wm0 = gl_test_qint(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state WHERE source = 'sacct'");
	assert_true(wm0 > 0);
	f = fopen(g_failflag, "w");
	assert_non_null(f);
	fclose(f);
	for (int i = 0; i < 150 && !failed; i++) {
		failed = gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE status = 'failed'");
		if (!failed)
			usleep(100000);
	}
	assert_true(failed >= 1);
	assert_non_null(strstr(gl_test_qstr(g_c, "SELECT error FROM ingest_runs WHERE status = 'failed' LIMIT 1"),
			       "exit 1: sacct: error: Problem talking to the database"));
	/* a poll already under way when the flag appeared may have committed
	 * after wm0 was read (runs are one after another: it is done by now);
	 * the watermark is read again and must outlive the next failed run */
	wm0 = gl_test_qint(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state WHERE source = 'sacct'");
	for (int i = 0; i < 150 && failed < 2; i++) {
		failed = gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE status = 'failed'");
		if (failed < 2)
			usleep(100000);
	}
	assert_true(failed >= 2);
	wm1 = gl_test_qint(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state WHERE source = 'sacct'");
	assert_int_equal(wm1, wm0);
	unlink(g_failflag);
	/* it recovers on the next interval and moves the watermark again */
	for (int i = 0; i < 150 && wm1 == wm0; i++) {
		wm1 = gl_test_qint(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state WHERE source = 'sacct'");
		if (wm1 == wm0)
			usleep(100000);
	}
	assert_true(wm1 > wm0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 20);
}

static void test_metrics(void **state)
{
	struct gl_test_http r;
	cJSON *j = get_json("/healthz", 200);
	cJSON_Delete(j);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "text/plain; version=0.0.4"));
	assert_non_null(strstr(r.body, "gpuledger_build_info{version=\""));
	assert_non_null(strstr(r.body, "gpuledger_uptime_seconds "));
	assert_non_null(strstr(r.body, "gpuledger_http_requests_total{route=\"healthz\",code=\"200\"} "));
	assert_non_null(strstr(r.body, "gpuledger_http_requests_total{route=\"jobs\",code=\"400\"} 3"));
	assert_non_null(strstr(r.body, "gpuledger_http_request_duration_seconds_bucket{route=\"healthz\",le=\"+Inf\"} "));
	assert_non_null(strstr(r.body, "gpuledger_db_up 1"));
	assert_non_null(strstr(r.body, "gpuledger_ingest_last_run_timestamp_seconds{source=\"sacct\",cluster=\"testgpu\""));
	assert_non_null(strstr(r.body, "gpuledger_ingest_lag_seconds{source=\"sacct\",cluster=\"testgpu\"} "));
	gl_test_http_fini(&r);
}

static void test_port_in_use(void **state)
{
	struct gl_test_out o;
	char listen[64];
	snprintf(listen, sizeof listen, "127.0.0.1:%d", g_d.port);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "serve", "--no-ingest", "--listen", listen, NULL), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "cannot listen on 127.0.0.1:"));
	gl_test_out_fini(&o);
}

static void test_cli_errors(void **state)
{
	struct gl_test_out o;
	char bad[PATH_MAX + 16];
	FILE *f;
	static const char *const cmds[] = {"serve", "migrate", "db", "ingest", "check-config", "version"};

	assert_int_equal(gl_test_run(NULL, NULL, &o, "--config", "/nonexistent.yaml", "migrate", NULL), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "/nonexistent.yaml: cannot open config"));
	gl_test_out_fini(&o);

	snprintf(bad, sizeof bad, "%s/bad.yaml", g_dir);
	f = fopen(bad, "w");
	fputs("server:\n  listen: 127.0.0.1:1\n  threds: 3\n", f);
	fclose(f);
	assert_int_equal(gl_test_run(NULL, NULL, &o, "--config", bad, "check-config", NULL), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "bad.yaml:3: unknown key 'server.threds'"));
	gl_test_out_fini(&o);
	/* a good one says where the API will listen (make run prints its URL from it) */
	f = fopen(bad, "w");
	fputs("server:\n  listen: 127.0.0.1:18111\n", f);
	fclose(f);
	assert_int_equal(gl_test_run(NULL, NULL, &o, "--config", bad, "check-config", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "; listen 127.0.0.1:18111)"));
	assert_null(strstr(o.err, "gpu_models"));
	gl_test_out_fini(&o);
	/* aliases without a cost model are not applied: said, not silent */
	f = fopen(bad, "w");
	fputs("gpu_models:\n  - match: NVIDIA A100-SXM4-80GB\n    model: a100_80g\n", f);
	fclose(f);
	assert_int_equal(gl_test_run(NULL, NULL, &o, "--config", bad, "check-config", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.err, "gpu_models: 1 aliases not applied"));
	gl_test_out_fini(&o);

	assert_int_equal(gl_test_run(NULL, NULL, &o, "frobnicate", NULL), 0);
	assert_int_equal(o.status, 2);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_run(NULL, NULL, &o, "ingest", "sacct", "--file", "x", NULL), 0);
	assert_int_equal(o.status, 2);
	assert_non_null(strstr(o.err, "--cluster and --file are required"));
	gl_test_out_fini(&o);
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		assert_int_equal(gl_test_run(NULL, NULL, &o, cmds[i], "--help", NULL), 0);
		assert_int_equal(o.status, 0);
		assert_non_null(strstr(o.out, "usage: gpuledger"));
		gl_test_out_fini(&o);
	}

	/* version takes no argument: a stray one is a usage error, not ignored */
	assert_int_equal(gl_test_run(NULL, NULL, &o, "version", "--frob", NULL), 0);
	assert_int_equal(o.status, 2);
	assert_non_null(strstr(o.err, "usage: gpuledger version"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_run(NULL, NULL, &o, "version", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "gpuledger "));
	gl_test_out_fini(&o);

	/* unreachable database: one clear line, non-zero exit */
	assert_int_equal(gl_test_run("host=/nonexistent-socket-dir dbname=x connect_timeout=2", NULL, &o, "serve",
				     "--listen", "127.0.0.1:0", NULL),
			 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "database unreachable"));
	gl_test_out_fini(&o);

	/* with an external DSN the db commands refuse and say why */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "db", "start", NULL), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "an external database is configured (GPULEDGER_DSN)"));
	gl_test_out_fini(&o);
}

/* A server that takes the TCP connection and never answers (a hung host):
 * the connection attempt gives up after the default 10 s instead of waiting
 * for ever. alarm() turns a hang into a failure. */
static void test_connect_gives_up(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	struct gl_test_out o;
	char dsn[128];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(fd, 4), 0); /* the kernel completes handshakes; no one answers */
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	snprintf(dsn, sizeof dsn, "host=127.0.0.1 port=%d dbname=x user=x", ntohs(a.sin_port));
	alarm(60);
	assert_int_equal(gl_test_run(dsn, NULL, &o, "migrate", NULL), 0);
	alarm(0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "timeout"));
	gl_test_out_fini(&o);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthz),
		cmocka_unit_test(test_healthz_without_database),
		cmocka_unit_test(test_errors_are_json_with_param),
		cmocka_unit_test(test_sacct_source_ingests_and_serves),
		cmocka_unit_test(test_sacct_failure_keeps_watermark),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_port_in_use),
		cmocka_unit_test(test_cli_errors),
		cmocka_unit_test(test_connect_gives_up),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
