/* SIGTERM or SIGINT to a CLI command cancels the statement it runs.
 *
 * Before, a signal ended the process on the spot and its server session
 * went on: an ingest waiting on a lock stayed in pg_stat_activity, holding
 * its own locks, until the lock was released or someone ran
 * pg_cancel_backend. Here the real binary waits on a lock this test holds
 * (and keeps holding); after the signal its backend must be gone from
 * pg_stat_activity within 10 s (a bound, not a measure), the process must
 * end by that signal, and the ingest's run must be recorded as failed,
 * not left running. Real PostgreSQL, real binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dsn[1024];
static PGconn *g_c;

/* the binary with GPULEDGER_DSN, stderr to errfile; returns its pid */
static pid_t spawn(const char *errfile, const char *const *args)
{
	pid_t pid = fork();
	if (pid == 0) {
		const char *argv[16] = {gl_test_bin()};
		int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		for (int i = 0; args[i] && i < 14; i++)
			argv[i + 1] = args[i];
		dup2(fd, 2);
		setenv("GPULEDGER_DSN", g_dsn, 1);
		unsetenv("GPULEDGER_CONFIG");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* the pid of the backend of ours that waits on a lock (0 when none yet) */
static long long waiting_backend(void)
{
	return gl_test_qint(g_c, "SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE datname = current_database()"
				 " AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'");
}

static int wait_status(pid_t pid, double bound_s, int *st)
{
	double t0 = gl_test_now_s();
	while (gl_test_now_s() - t0 < bound_s) {
		pid_t r = waitpid(pid, st, WNOHANG);
		if (r == pid)
			return 0;
		usleep(50 * 1000);
	}
	return -1;
}

/* The command waits on `lock_table`; sig cancels its statement. */
static void signal_cancels(int sig, const char *lock_table, const char *const *args, const char *errfile)
{
	PGconn *lock = gl_test_lock_table(g_dsn, lock_table, "ACCESS EXCLUSIVE");
	long long be = 0;
	double t0;
	int st = 0;
	pid_t pid;
	assert_non_null(lock);
	pid = spawn(errfile, args);
	assert_true(pid > 0);
	for (t0 = gl_test_now_s(); !(be = waiting_backend()) && gl_test_now_s() - t0 < 30;)
		usleep(50 * 1000);
	assert_true(be > 0);
	assert_int_equal(kill(pid, sig), 0);
	t0 = gl_test_now_s();
	while (gl_test_qintf(g_c, "SELECT count(*) FROM pg_stat_activity WHERE pid = %lld", be) > 0 &&
	       gl_test_now_s() - t0 < 10)
		usleep(50 * 1000);
	fprintf(stderr, "  backend %lld gone %.2f s after the signal; the lock still held\n", be, gl_test_now_s() - t0);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM pg_stat_activity WHERE pid = %lld", be), 0);
	assert_int_equal(wait_status(pid, 10, &st), 0);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), sig);
	{
		char *err = gl_test_read_file(errfile, NULL);
		fprintf(stderr, "  its stderr: %s", err);
		assert_non_null(strstr(err, "the command was stopped by a signal"));
		free(err);
	}
	PQfinish(lock);
}

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_cli_sigterm", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	return PQstatus(g_c) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

static void test_sigterm_cancels_an_ingest(void **state)
{
	char fields[1024], errfile[600];
	assert_int_equal(gl_test_sacct_fields(fields, sizeof fields), 0);
	snprintf(errfile, sizeof errfile, "%s/cli_sigterm.err", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	signal_cancels(SIGTERM, "jobs",
		       (const char *const[]){"ingest", "sacct", "--cluster", "testgpu", "--file",
					     gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), "--fields", fields,
					     NULL},
		       errfile);
	/* what it had begun is recorded, not left running */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE status = 'running'"), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE status = 'failed'"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 0);
}

static void test_sigint_cancels_another_command(void **state)
{
	char errfile[600];
	snprintf(errfile, sizeof errfile, "%s/cli_sigint.err", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	signal_cancels(SIGINT, "api_tokens", (const char *const[]){"token", "list", NULL}, errfile);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigterm_cancels_an_ingest),
		cmocka_unit_test(test_sigint_cancels_another_command),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
