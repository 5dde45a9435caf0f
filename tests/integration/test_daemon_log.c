/* The daemon's log of its periodic sources: a summary the same as the last
 * one ("0 days rebuilt", "2026-10 is before any data") went to INFO every
 * minute, forever; it now goes to DEBUG and comes back at INFO with its
 * count once an hour, while a summary that changes is logged each time.
 * gl_daemon_tick runs against a real database connection with two sources
 * of our own and a clock we move. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/config.h"
#include "gl/daemon.h"
#include "store/db_int.h"
#include "gl/log.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dsn[512];

static int same_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary, size_t n,
		    struct gl_err *err)
{
	snprintf(summary, n, "0 days rebuilt");
	return 0;
}

static int changing_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			size_t n, struct gl_err *err)
{
	snprintf(summary, n, "%lld rows", (long long)now_s);
	return 0;
}

static size_t count(const char *s, const char *needle)
{
	size_t k = 0;
	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		k++;
	return k;
}

static void test_repeated_summary_once_an_hour(void **state)
{
	char path[] = "/tmp/gl-daemon-log-XXXXXX";
	int fd = mkstemp(path);
	struct gl_config cfg;
	struct gl_daemon_source s[2];
	PGconn *c = PQconnectdb(g_dsn);
	char *log;
	size_t len;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	memset(&cfg, 0, sizeof cfg);
	memset(s, 0, sizeof s);
	snprintf(s[0].name, sizeof s[0].name, "rollup:all");
	snprintf(s[1].name, sizeof s[1].name, "sacct:c1");
	for (int i = 0; i < 2; i++) {
		s[i].interval_s = 60;
		s[i].lim = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(600);
	}
	s[0].run = same_run;
	s[1].run = changing_run;
	gl_log_set_fd(fd);
	gl_log_set_level(GL_LOG_INFO);
	/* two hours and a minute of ticks, a minute apart: 122 runs each */
	for (int64_t t = 1000000; t <= 1000000 + 7260; t += 60)
		gl_daemon_tick(gl_db_store(c), &cfg, NULL, s, 2, t, NULL);
	gl_log_set_fd(2);
	close(fd);
	log = gl_test_read_file(path, &len);
	unlink(path);
	/* the first run, then one line an hour with the count in between */
	assert_int_equal(count(log, "rollup:all: 0 days rebuilt"), 3);
	assert_int_equal(count(log, "rollup:all: 0 days rebuilt (the same 59 more times in the last 60 min)"), 2);
	/* a summary that changes is news every time */
	assert_int_equal(count(log, " sacct:c1: "), 122);
	free(log);
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeated_summary_once_an_hour),
	};
	if (gl_test_db_fresh("gl_test_daemon_log", g_dsn, sizeof g_dsn))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
