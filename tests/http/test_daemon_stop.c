/* SIGTERM stops the daemon while a source command is still running: the
 * real binary with a sacct source whose command closes its output and
 * hangs (timeout_s far away), stopped while it runs. It used to wait for
 * the command for ever (the runner waited for the child without a
 * deadline once its pipes had closed, and a signal did not reach it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dsn[512];

static void test_sigterm_while_a_source_hangs(void **state)
{
	struct gl_test_daemon d;
	char dir[PATH_MAX], script[PATH_MAX + 32], mark[PATH_MAX + 32], cfg[2 * PATH_MAX + 512];
	FILE *f;
	int started = 0;
	(void)state;
	snprintf(dir, sizeof dir, "%s/daemon-stop", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(dir, 0755);
	snprintf(script, sizeof script, "%s/hung-sacct.sh", dir);
	snprintf(mark, sizeof mark, "%s/started", dir);
	unlink(mark);
	f = fopen(script, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\necho started > '%s'\nexec >&- 2>&-\nexec sleep 600\n", mark);
	fclose(f);
	assert_int_equal(chmod(script, 0755), 0);
	snprintf(cfg, sizeof cfg,
		 "sources:\n  sacct:\n    - cluster: hung\n      command: %s\n"
		 "      interval_s: 5\n      lookback_s: 3600\n      timeout_s: 3600\n",
		 script);
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, cfg, NULL), 0);
	for (int i = 0; i < 200 && !started; i++) {
		started = access(mark, F_OK) == 0;
		if (!started)
			usleep(100000);
	}
	assert_true(started);
	/* SIGTERM, then up to 10 s for a clean exit (SIGKILL and 137 after) */
	assert_int_equal(gl_test_daemon_stop(&d), 0);
	{
		/* the stopped run is on record as failed, not left 'running':
		 * the stop's query cancel must not take its last write with it */
		PGconn *c = PQconnectdb(g_dsn);
		assert_int_equal(PQstatus(c), CONNECTION_OK);
		assert_string_equal(gl_test_qstr(c, "SELECT string_agg(status, ',') FROM ingest_runs"), "failed");
		assert_non_null(strstr(gl_test_qstr(c, "SELECT error FROM ingest_runs"), "stopping"));
		PQfinish(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigterm_while_a_source_hangs),
	};
	if (gl_test_db_fresh("gl_test_daemon_stop", g_dsn, sizeof g_dsn))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
