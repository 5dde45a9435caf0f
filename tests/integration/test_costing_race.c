/* Two loads of the cost model at once (a daemon starting while an operator
 * runs `rates load`, or the two daemons of a rolling restart): both
 * succeed and the rates are the second's, once. The second's DELETE, its
 * snapshot taken before the first committed, missed the first's new rows:
 * it then failed on "two rates for GPU model 'a100' overlap in time" (seen
 * with two daemons on one database) or, with no overlap, left both sets.
 * The first is held inside its transaction by a lock on audit_log (its
 * change is audited in the same transaction); the second starts while it
 * waits. Real binary, real PostgreSQL. */
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

static char g_dsn[512], g_dir[256];

static const char *path(const char *name)
{
	static char buf[4][400];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
	return buf[k];
}

static int write_rates(const char *name, const char *rates)
{
	FILE *f = fopen(path(name), "w");
	if (!f)
		return -1;
	fprintf(f, "log:\n  level: warn\nrates:\n%s", rates);
	return fclose(f);
}

static int setup(void **state)
{
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-costrace-XXXXXX");
	if (!mkdtemp(g_dir) || gl_test_db_fresh("gl_test_costing_race", g_dsn, sizeof g_dsn))
		return -1;
	if (write_rates("r0.yaml", "  - model: a100\n    per_gpu_hour: \"1.00\"\n") ||
	    write_rates("r1.yaml", "  - model: a100\n    per_gpu_hour: \"2.00\"\n") ||
	    write_rates("r2.yaml", "  - model: a100\n    per_gpu_hour: \"3.00\"\n  - model: v100\n    per_gpu_hour: \"1.50\"\n"))
		return -1;
	return gl_test_cli(g_dsn, "rates", "load", path("r0.yaml"), NULL);
}

static int teardown(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
	return 0;
}

/* `gpuledger rates load FILE` in the background */
static pid_t spawn_load(const char *file)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("GPULEDGER_DSN", g_dsn, 1);
		execl(gl_test_bin(), "gpuledger", "rates", "load", file, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Waits until n backends of this database wait on a lock (at most 20 s). */
static int wait_lockers(int n)
{
	for (int i = 0; i < 400; i++) {
		if (gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
					    " AND wait_event_type = 'Lock'") >= n)
			return 0;
		usleep(50000);
	}
	return -1;
}

static int exit_status(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_two_loads_at_once(void **state)
{
	PGconn *audit = gl_test_lock_table(g_dsn, "audit_log", "EXCLUSIVE");
	pid_t a, b;
	assert_non_null(audit);
	a = spawn_load(path("r1.yaml"));
	/* the first has replaced the rates and waits to audit the change */
	if (wait_lockers(1)) {
		kill(a, SIGKILL);
		fail_msg("the first load never waited on audit_log");
	}
	b = spawn_load(path("r2.yaml"));
	if (wait_lockers(2)) {
		kill(a, SIGKILL);
		kill(b, SIGKILL);
		fail_msg("the second load never waited for the first");
	}
	PQfinish(audit);
	assert_int_equal(exit_status(a), 0);
	assert_int_equal(exit_status(b), 0);
	/* the second's rates, once each: a100 at 3.00, v100 at 1.50 */
	{
		PGconn *c = PQconnectdb(g_dsn);
		assert_string_equal(gl_test_qstr(c, "SELECT string_agg(gpu_model || '=' || micros_per_gpu_hour, ','"
						    " ORDER BY gpu_model) FROM rates WHERE source = 'config'"),
				    "a100=3000000,v100=1500000");
		PQfinish(c);
	}
	/* and two audited changes, the first's and the second's */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM audit_log WHERE action = 'costing.load'"), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_loads_at_once),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
