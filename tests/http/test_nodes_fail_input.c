/* A failed slurm-nodes run names the command that failed in ingest_runs.
 * The run reads `scontrol show node -o`, then `sacctmgr -P show event` and
 * `scontrol show reservation -o`; every failure was recorded with input
 * "scontrol show node -o", so an operator looking at /v1/ingest/runs was
 * sent to a command that had worked. Two clusters of the real daemon's own
 * source, against stand-ins (tests/tools/fake-slurm.sh for what works, the
 * testbed's real outputs): on c_ev sacctmgr fails, on c_resv the
 * reservation listing fails. Real binary, real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TB "tests/fixtures/nodes/testbed/"

static char g_dsn[512], g_dir[600];
static PGconn *g_c;
static struct gl_test_daemon g_d;

static int write_script(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(body, f);
	fclose(f);
	return chmod(path, 0755);
}

static int setup(void **state)
{
	char cwd[400], cfg[2048], fix[600], p[700], body[1200];
	if (gl_test_db_fresh("gl_test_nodes_fail_input", g_dsn, sizeof g_dsn) || !getcwd(cwd, sizeof cwd))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	snprintf(g_dir, sizeof g_dir, "%s/nodes-fail-XXXXXX", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(fix, sizeof fix, "%s/" TB, cwd);
	setenv("GL_FAKE_SLURM_FIXTURES", fix, 1);
	snprintf(p, sizeof p, "%s/sacctmgr-down", g_dir);
	if (write_script(p, "#!/bin/sh\necho 'sacctmgr: error: Problem talking to the database: Connection refused' >&2\n"
			    "exit 1\n"))
		return -1;
	snprintf(p, sizeof p, "%s/scontrol-noresv", g_dir);
	snprintf(body, sizeof body,
		 "#!/bin/sh\nif [ \"$2\" = reservation ]; then\n"
		 "  echo 'slurm_load_reservations error: Unable to contact slurm controller' >&2\n  exit 1\nfi\n"
		 "exec %s/tests/tools/fake-slurm.sh \"$@\"\n",
		 cwd);
	if (write_script(p, body))
		return -1;
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: warn\nsources:\n  slurm_nodes:\n"
		 "    - cluster: c_ev\n      scontrol: %s/tests/tools/fake-slurm.sh\n      sacctmgr: %s/sacctmgr-down\n"
		 "      reservations: false\n      interval_s: 3600\n"
		 "    - cluster: c_resv\n      scontrol: %s/scontrol-noresv\n      sacctmgr: \"\"\n"
		 "      interval_s: 3600\n",
		 cwd, g_dir, g_dir);
	return gl_test_daemon_start(&g_d, g_dsn, cfg, NULL);
}

static int teardown(void **state)
{
	int st = gl_test_daemon_stop(&g_d);
	PQfinish(g_c);
	return st == 0 ? 0 : -1;
}

/* The failed run of cluster (waits up to 30 s for the daemon's first run). */
static const char *failed_input(const char *cluster)
{
	char sql[400];
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
		 " WHERE r.source = 'slurm-nodes' AND c.name = '%s' AND r.status = 'failed'",
		 cluster);
	for (int i = 0; i < 300 && gl_test_qint(g_c, sql) < 1; i++)
		usleep(100000);
	assert_int_equal(gl_test_qint(g_c, sql), 1);
	return gl_test_qstrf(g_c,
			     "SELECT r.input || ' | ' || r.error FROM ingest_runs r JOIN clusters c USING (cluster_id)"
			     " WHERE r.source = 'slurm-nodes' AND c.name = '%s' AND r.status = 'failed'",
			     cluster);
}

static void test_sacctmgr_failure_named(void **state)
{
	const char *s = failed_input("c_ev");
	assert_non_null(s);
	if (strncmp(s, "sacctmgr -P show event | ", 25) != 0)
		fail_msg("input | error: %s", s);
	assert_non_null(strstr(s, "Problem talking to the database"));
}

static void test_reservation_failure_named(void **state)
{
	const char *s = failed_input("c_resv");
	assert_non_null(s);
	if (strncmp(s, "scontrol show reservation -o | ", 31) != 0)
		fail_msg("input | error: %s", s);
	assert_non_null(strstr(s, "slurm_load_reservations error"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sacctmgr_failure_named),
		cmocka_unit_test(test_reservation_failure_named),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
