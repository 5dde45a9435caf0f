/* An option given an empty value (`--cluster "$CLUSTER"` with the variable
 * unset) is a usage error naming the option, and nothing is written: `ingest
 * sacct --cluster ''` used to ingest under a cluster named '' (a row in
 * clusters, an empty name in chargeback and the inventory). The real binary
 * against a real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

static char g_dsn[512];

static int setup(void **state)
{
	return gl_test_db_fresh("gl_test_cli_empty_value", g_dsn, sizeof g_dsn);
}

static long long rows(const char *sql)
{
	return gl_test_qint_dsn(g_dsn, sql);
}

/* argv after the binary, NULL-terminated; opt is the option named empty */
static void refused(const char *opt, const char *const *argv)
{
	struct gl_test_out o;
	char want[64];
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6],
				     argv[7], argv[8], argv[9]),
			 0);
	if (o.status != 2)
		fail_msg("%s %s: exit %d, want 2 (usage); stderr: %s", argv[0], argv[1], o.status, o.err);
	snprintf(want, sizeof want, "--%s: empty value", opt);
	if (!strstr(o.err, want))
		fail_msg("stderr does not name %s: %s", opt, o.err);
	gl_test_out_fini(&o);
}

static void test_empty_cluster_is_a_usage_error(void **state)
{
	const char *sacct = gl_test_fixture("tests/fixtures/review/sacct_share.txt");
	const char *nodes = gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt");

	refused("cluster", (const char *const[]){"ingest", "sacct", "--cluster", "", "--file", sacct, NULL, NULL,
						  NULL, NULL});
	refused("cluster", (const char *const[]){"ingest", "slurm-nodes", "--cluster", "", "--nodes", nodes, "--at",
						  "2026-10-01T00:00:00Z", NULL, NULL});
	refused("file", (const char *const[]){"ingest", "sacct", "--cluster", "c1", "--file", "", NULL, NULL, NULL,
					       NULL});
	refused("fields", (const char *const[]){"ingest", "sacct", "--cluster", "c1", "--file", sacct, "--fields", "",
						 NULL, NULL});
	refused("aggregate", (const char *const[]){"report", "showback", "--month", "2026-10", "--aggregate", "", NULL,
						    NULL, NULL, NULL});
	/* nothing written: no cluster, no job, no ingest run */
	assert_int_equal(rows("SELECT count(*) FROM clusters"), 0);
	assert_int_equal(rows("SELECT count(*) FROM jobs"), 0);
	assert_int_equal(rows("SELECT count(*) FROM ingest_runs"), 0);
	/* the same command with a name works */
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file", sacct, NULL), 0);
	assert_int_equal(rows("SELECT count(*) FROM clusters WHERE name = 'c1'"), 1);
	assert_int_equal(rows("SELECT count(*) FROM clusters WHERE name = ''"), 0);
}

/* --version, what packagers and scripts try first, was a usage error (2) */
static void test_version_option(void **state)
{
	struct gl_test_out o, v;
	(void)state;
	assert_int_equal(gl_test_run(NULL, NULL, &o, "--version", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_int_equal(gl_test_run(NULL, NULL, &v, "version", NULL), 0);
	assert_int_equal(v.status, 0);
	assert_non_null(strstr(o.out, "gpuledger "));
	assert_string_equal(o.out, v.out);
	gl_test_out_fini(&o);
	gl_test_out_fini(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_option),
		cmocka_unit_test(test_empty_cluster_is_a_usage_error),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
