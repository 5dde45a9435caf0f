/* Two recorders of the same month at once (the daemon's scheduled run and an
 * operator's `report record`): one writes the new version, the other finds
 * it recorded and says unchanged; both succeed, every recorded file's
 * sha256 is the file's. They used to take the same version, write its files
 * over each other's, and the second failed on the unique key with a raw SQL
 * error. Real binary, real PostgreSQL; tests/fixtures/review/sacct_share.txt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int setup(void **state)
{
	FILE *f;
	if (gl_test_db_fresh("gl_test_report_race", g_dsn, sizeof g_dsn))
		return -1;
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-reportrace-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	f = fopen(path("config.yaml"), "w");
	if (!f)
		return -1;
	fprintf(f, "reports:\n  dir: %s/reports\n  formats: csv,html,pdf\nrates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n",
		g_dir);
	fclose(f);
	if (gl_test_cli(g_dsn, "--config", path("config.yaml"), "rates", "load", path("config.yaml"), NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_share.txt"), NULL))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
	return 0;
}

static void test_concurrent_record(void **state)
{
	char cmd[2048], *a, *b;
	PGconn *c;
	int rc;
	/* both started at once; each writes its exit status after its output */
	snprintf(cmd, sizeof cmd,
		 "export GPULEDGER_DSN='%s'; for k in 1 2; do"
		 " ('%s' --config '%s' report record --month 2026-10 >'%s/out'$k 2>&1; echo \"exit $?\" >>'%s/out'$k) &"
		 " done; wait",
		 g_dsn, gl_test_bin(), path("config.yaml"), g_dir, g_dir);
	rc = system(cmd);
	assert_int_equal(rc, 0);
	a = gl_test_read_file(path("out1"), NULL);
	b = gl_test_read_file(path("out2"), NULL);
	if (!strstr(a, "exit 0") || !strstr(b, "exit 0"))
		fail_msg("a recorder failed:\n%s\n%s", a, b);
	/* one wrote version 1, the other found it */
	if (getenv("GL_TEST_VERBOSE"))
		fprintf(stderr, "%s\n%s\n", a, b);
	assert_true((strstr(a, "2026-10: version 1\n") && strstr(b, "unchanged, version 1 stands")) ||
		    (strstr(b, "2026-10: version 1\n") && strstr(a, "unchanged, version 1 stands")));
	free(a);
	free(b);
	c = PQconnectdb(g_dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_int_equal(gl_test_qint(c, "SELECT count(DISTINCT version) FROM report_files"), 1);
	/* each recorded file is on disk with its recorded checksum */
	{
		PGresult *r = PQexec(c, "SELECT name, sha256 FROM report_files ORDER BY name");
		assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
		assert_int_equal(PQntuples(r), 14); /* 12 CSV tables, HTML, PDF */
		for (int i = 0; i < PQntuples(r); i++) {
			char line[512], got[80] = "";
			FILE *p;
			snprintf(line, sizeof line, "sha256sum '%s/reports/%s'", g_dir, PQgetvalue(r, i, 0));
			p = popen(line, "r");
			assert_non_null(p);
			if (!fgets(got, sizeof got, p))
				got[0] = '\0';
			pclose(p);
			got[strcspn(got, " ")] = '\0';
			assert_string_equal(got, PQgetvalue(r, i, 1));
		}
		PQclear(r);
	}
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_record),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
