/* SIGHUP to the real daemon: it used to end on the spot (the default
 * action: no "serve: stopping", no last audit anchor); it now checks its
 * config file, says whether it is valid (naming file:line when not) and
 * goes on serving; a SIGTERM afterwards still stops it cleanly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dsn[512];

/* Waits (at most 20 s) for want in the daemon's log; returns the log. */
static char *wait_log(const struct gl_test_daemon *d, const char *want)
{
	for (int i = 0; i < 200; i++) {
		size_t len;
		char *log = gl_test_read_file(d->log, &len);
		if (log && strstr(log, want))
			return log;
		free(log);
		usleep(100 * 1000);
	}
	return NULL;
}

static void test_sighup_checks_and_goes_on(void **state)
{
	struct gl_test_daemon d;
	struct gl_test_http r;
	char cfg[400], *log;
	FILE *f;
	int status;

	(void)state;
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, "log:\n  level: info\n", NULL), 0);
	snprintf(cfg, sizeof cfg, "%s/config.yaml", d.dir);

	assert_int_equal(kill(d.pid, SIGHUP), 0);
	log = wait_log(&d, "SIGHUP: ");
	assert_non_null(log);
	assert_non_null(strstr(log, "config.yaml is valid; the configuration is read at start only"));
	free(log);
	assert_int_equal(waitpid(d.pid, &status, WNOHANG), 0); /* still running */
	assert_int_equal(gl_test_http(d.port, "GET", "/healthz", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	gl_test_http_fini(&r);

	/* a broken file: the error names file:line, the daemon goes on */
	f = fopen(cfg, "w");
	assert_non_null(f);
	fputs("log:\n  level: info\nserver:\n  max_body_bytes: lots\n", f);
	fclose(f);
	assert_int_equal(kill(d.pid, SIGHUP), 0);
	log = wait_log(&d, "the running configuration stays");
	assert_non_null(log);
	assert_non_null(strstr(log, "config.yaml:4"));
	free(log);
	assert_int_equal(waitpid(d.pid, &status, WNOHANG), 0);
	assert_int_equal(gl_test_http(d.port, "GET", "/healthz", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	gl_test_http_fini(&r);

	/* the stop is still the clean one */
	assert_int_equal(gl_test_daemon_sigterm(&d, 20, &log, NULL), 0);
	assert_non_null(strstr(log, "serve: stopping"));
	free(log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sighup_checks_and_goes_on),
	};
	if (gl_test_db_fresh("gl_test_sighup", g_dsn, sizeof g_dsn))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
