/* /metrics stays valid UTF-8 Prometheus text when a source fails with
 * arbitrary bytes on stderr: three kube sources run a script that prints
 * 'é' (2 bytes) many times after a 1- or 2-byte prefix (so one of them has
 * a multibyte character where the 256-byte health message is cut), or a
 * raw \xff byte, and exits 1. The scrape is checked with a UTF-8 validator
 * written here and parsed with the Prometheus text parser. And a source
 * whose command line carries a credential shows it nowhere a viewer reads,
 * nor in the daemon's log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/promtext.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

struct seen {
	int errors; /* gpuledger_source_last_error_info samples of our clusters */
	int eacute; /* of which carry the repeated é */
};

static int on_sample(void *ctx, const struct gl_promtext_sample *s)
{
	struct seen *sn = ctx;
	const struct gl_promtext_label *cl = NULL, *er = NULL;
	if (s->name.len != strlen("gpuledger_source_last_error_info") ||
	    memcmp(s->name.p, "gpuledger_source_last_error_info", s->name.len))
		return 0;
	for (size_t i = 0; i < s->nlabels; i++) {
		if (s->labels[i].name.len == 7 && !memcmp(s->labels[i].name.p, "cluster", 7))
			cl = &s->labels[i];
		if (s->labels[i].name.len == 5 && !memcmp(s->labels[i].name.p, "error", 5))
			er = &s->labels[i];
	}
	if (!cl || !er || cl->value.len != 2 || cl->value.p[0] != 'u')
		return 0;
	sn->errors++;
	if (memmem(er->value.p, er->value.len, "\xc3\xa9\xc3\xa9\xc3\xa9", 6))
		sn->eacute++;
	return 0;
}

/* The daemon's log names the failing source (has) and the blanked form of
 * its credential (blanked), never the credential itself. */
static void expect_log_clean(const char *has, const char *blanked)
{
	char *log = NULL;
	/* the line follows the health entry the caller waited for */
	for (int tries = 0; tries < 100; tries++) {
		free(log);
		log = gl_test_read_file(g_d.log, NULL);
		assert_non_null(log);
		if (strstr(log, has) && strstr(log, blanked))
			break;
		usleep(100000);
	}
	if (!strstr(log, has) || !strstr(log, blanked))
		fail_msg("the log does not report the failing source (%s, %s):\n%s", has, blanked, log);
	if (strstr(log, "s3cr3tT0ken") || strstr(log, "hunter2"))
		fail_msg("a credential is in the daemon's log:\n%s", log);
	free(log);
}

static void test_failing_source_stderr(void **state)
{
	char script[512], cfg[2048];
	const char *tmp = getenv("GL_TEST_TMP");
	FILE *f;

	assert_int_equal(gl_test_db_fresh("gl_test_health_utf8", g_dsn, sizeof g_dsn), 0);
	snprintf(script, sizeof script, "%s/fail-utf8.sh", tmp ? tmp : "/tmp");
	f = fopen(script, "w");
	assert_non_null(f);
	/* $1 repetitions of é after the prefix $2, then a raw 0xFF byte */
	fputs("i=0; s=''\n"
	      "while [ $i -lt \"$1\" ]; do s=\"$s\\303\\251\"; i=$((i+1)); done\n"
	      "printf \"$2$s\\377 end\\n\" >&2\n"
	      "exit 1\n",
	      f);
	fclose(f);
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: warn\nsources:\n  kube:\n"
		 "    - cluster: u1\n      command: sh %s 200 a\n      interval_s: 5\n"
		 "    - cluster: u2\n      command: sh %s 200 ab\n      interval_s: 5\n"
		 "    - cluster: u3\n      command: sh %s 1 z\n      interval_s: 5\n",
		 script, script, script);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);

	struct seen sn = {0};
	struct gl_promtext_stats st;
	for (int tries = 0; tries < 600; tries++) {
		struct gl_test_http r;
		struct gl_err err = {0};
		assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		assert_true(gl_test_utf8_valid((const unsigned char *)r.body, r.len));
		memset(&sn, 0, sizeof sn);
		memset(&st, 0, sizeof st);
		struct gl_promtext_handler h = {on_sample, NULL, &sn};
		assert_int_equal(gl_promtext_parse(r.body, r.len, NULL, &h, &st, &err), 0);
		assert_int_equal(st.bad_lines, 0);
		gl_test_http_fini(&r);
		if (sn.errors == 3)
			break;
		usleep(100000);
	}
	assert_int_equal(sn.errors, 3);
	assert_int_equal(sn.eacute, 2);
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
}

/* A source's command line may carry a credential (kubectl --token=..., a
 * URL with a password): neither ingest_runs (GET /v1/ingest/runs, role
 * viewer) nor /metrics (viewer) may show it, in input or in the error that
 * quotes the command. */
static void test_command_credentials_are_not_shown(void **state)
{
	char script[512], cfg[2048];
	const char *tmp = getenv("GL_TEST_TMP");
	struct gl_test_http r;
	int runs = 0;
	FILE *f;

	assert_int_equal(gl_test_db_fresh("gl_test_health_secret", g_dsn, sizeof g_dsn), 0);
	snprintf(script, sizeof script, "%s/fail-secret.sh", tmp ? tmp : "/tmp");
	f = fopen(script, "w");
	assert_non_null(f);
	/* as tools do, the error quotes the arguments it was given */
	fputs("echo \"cannot reach the server (called with $*)\" >&2\nexit 1\n", f);
	fclose(f);
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: warn\nsources:\n  kube:\n"
		 "    - cluster: s1\n      command: sh %s --token=s3cr3tT0ken"
		 " --server=https://admin:hunter2@k8s.example:6443\n      interval_s: 5\n",
		 script);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	for (int tries = 0; tries < 600 && !runs; tries++) {
		assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/ingest/runs?source=kube", NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		runs = strstr(r.body, "\"status\":\"failed\"") != NULL;
		if (runs) {
			assert_null(strstr(r.body, "s3cr3tT0ken"));
			assert_null(strstr(r.body, "hunter2"));
			/* still says which command failed, and why */
			assert_non_null(strstr(r.body, "--token=***"));
			assert_non_null(strstr(r.body, "cannot reach the server"));
		}
		gl_test_http_fini(&r);
		if (!runs)
			usleep(100000);
	}
	assert_true(runs);
	/* the health entry is reported right after the run's row is written */
	runs = 0;
	for (int tries = 0; tries < 600 && !runs; tries++) {
		assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
		runs = strstr(r.body, "gpuledger_source_last_error_info{source=\"kube\",cluster=\"s1\"") != NULL;
		if (runs) {
			assert_null(strstr(r.body, "s3cr3tT0ken"));
			assert_null(strstr(r.body, "hunter2"));
		}
		gl_test_http_fini(&r);
		if (!runs)
			usleep(100000);
	}
	assert_true(runs);
	expect_log_clean("kube s1: sh ", "--token=***");
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
}

/* A dcgm-exporter URL behind basic auth carries its password in the URL:
 * /metrics names each target in a label, which a viewer reads too. */
static void test_target_url_credentials_are_not_shown(void **state)
{
	char cfg[1024];
	struct gl_test_http r;
	int seen = 0;
	(void)state;

	assert_int_equal(gl_test_db_fresh("gl_test_health_target", g_dsn, sizeof g_dsn), 0);
	/* port 1: refused at once, so the target is reported failing */
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: warn\nsources:\n  dcgm:\n"
		 "    - cluster: d1\n      targets: http://scraper:hunter2@127.0.0.1:1/metrics\n"
		 "      interval_s: 5\n      timeout_s: 2\n");
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	for (int tries = 0; tries < 600 && !seen; tries++) {
		assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
		seen = strstr(r.body, "gpuledger_source_up{source=\"dcgm\",cluster=\"d1\",target=\"http") != NULL;
		if (seen) {
			if (strstr(r.body, "hunter2"))
				fail_msg("the target's password is on /metrics:\n%s", r.body);
			/* still says which target it is */
			assert_non_null(strstr(r.body, "target=\"http://scraper:***@127.0.0.1:1/metrics\""));
		}
		gl_test_http_fini(&r);
		if (!seen)
			usleep(100000);
	}
	assert_true(seen);
	/* nor on the run's row, whose reasons name the failed target */
	seen = 0;
	for (int tries = 0; tries < 600 && !seen; tries++) {
		assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/ingest/runs?source=dcgm", NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		seen = strstr(r.body, "\"status\":\"failed\"") != NULL || strstr(r.body, "\"status\":\"partial\"") != NULL;
		if (seen && strstr(r.body, "hunter2"))
			fail_msg("the target's password is in ingest_runs:\n%s", r.body);
		gl_test_http_fini(&r);
		if (!seen)
			usleep(100000);
	}
	assert_true(seen);
	expect_log_clean("dcgm d1: ", "http://scraper:***@127.0.0.1:1/metrics");
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
}

/* a failed assertion leaves its test's daemon running: stop it here */
static int teardown(void **state)
{
	if (g_d.pid > 0)
		gl_test_daemon_stop(&g_d);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failing_source_stderr),
		cmocka_unit_test(test_command_credentials_are_not_shown),
		cmocka_unit_test(test_target_url_credentials_are_not_shown),
	};
	return cmocka_run_group_tests(tests, NULL, teardown);
}
