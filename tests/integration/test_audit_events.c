/* Audit rows for what is not an API request (issue 7): one per ingest run
 * (actor "cli:<user>" from a command), none lost and nothing rolled back
 * when the audit write fails, one per rates/owners change with a diff and
 * none for a load that changes nothing, actor "system" for the daemon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dsn[512], g_fields[4096], g_tmp[256];
static PGconn *g_c, *g_adm;

static int setup(void **state)
{
	char adsn[600];
	if (gl_test_db_fresh("gl_test_audit_events", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	snprintf(adsn, sizeof adsn, "%s dbname=gl_test_audit_events", gl_test_admin_dsn());
	g_adm = PQconnectdb(adsn);
	if (PQstatus(g_c) != CONNECTION_OK || PQstatus(g_adm) != CONNECTION_OK)
		return -1;
	if (gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	snprintf(g_tmp, sizeof g_tmp, "%s/gl-audit-events-%d", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp",
		 (int)getpid());
	return mkdir(g_tmp, 0755) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];
	PQfinish(g_c);
	PQfinish(g_adm);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
	return system(cmd) == 0 ? 0 : -1;
}

static int ingest(const char *file, struct gl_test_out *o)
{
	return gl_test_run(g_dsn, NULL, o, "ingest", "sacct", "--cluster", "testgpu", "--file", file, "--fields",
			   g_fields, NULL);
}

static void test_each_ingest_run_is_audited(void **state)
{
	struct gl_test_out o;
	long long runs;
	const char *detail;
	cJSON *j;

	assert_int_equal(ingest(gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), &o), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	runs = gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs");
	assert_true(runs >= 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'ingest.run'"), runs);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'ingest.run'"
					   " AND actor LIKE 'cli:%' AND object = 'sacct:testgpu' AND outcome = 'ok'"),
			 runs);
	detail = gl_test_qstr(g_c, "SELECT detail::text FROM audit_log WHERE action = 'ingest.run' ORDER BY audit_id DESC LIMIT 1");
	j = cJSON_Parse(detail);
	assert_non_null(j);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "run_id")));
	assert_string_equal(cJSON_GetObjectItem(j, "status")->valuestring, "ok");
	assert_true(cJSON_GetObjectItem(j, "inserted")->valuedouble > 0);
	/* never the input: it may be a command line with credentials */
	assert_null(cJSON_GetObjectItem(j, "input"));
	cJSON_Delete(j);

	/* a failed run is audited too, as an error */
	{
		char bad[300];
		FILE *f;
		snprintf(bad, sizeof bad, "%s/not-sacct.txt", g_tmp);
		f = fopen(bad, "w");
		fputs("this is not\nsacct output\nat all\n", f);
		fclose(f);
		assert_int_equal(ingest(bad, &o), 0);
		assert_int_not_equal(o.status, 0);
		gl_test_out_fini(&o);
		assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'ingest.run'"),
				 gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs"));
		assert_string_equal(gl_test_qstr(g_c, "SELECT outcome FROM audit_log WHERE action = 'ingest.run'"
						      " ORDER BY audit_id DESC LIMIT 1"),
				    "error");
	}
}

static void test_an_audit_failure_does_not_undo_the_ingest(void **state)
{
	struct gl_test_out o;
	long long rows_before = gl_test_qint(g_c, "SELECT count(*) FROM audit_log");
	/* the audit write fails; the data must stay */
	PQclear(PQexec(g_c, "DELETE FROM jobs"));
	PQclear(PQexec(g_c, "DELETE FROM ingest_state"));
	PQclear(PQexec(g_adm, "REVOKE INSERT ON audit_log FROM gpuledger"));
	assert_int_equal(ingest(gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), &o), 0);
	PQclear(PQexec(g_adm, "GRANT INSERT ON audit_log TO gpuledger"));
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.err, "could not write its audit row"));
	gl_test_out_fini(&o);
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM jobs") > 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT status FROM ingest_runs ORDER BY run_id DESC LIMIT 1"), "ok");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log"), rows_before);
}

static void write_rates(const char *path, const char *a100)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f,
		"rates:\n  - model: a100\n    per_gpu_hour: \"%s\"\n  - model: v100\n    per_gpu_hour: \"1.00\"\n"
		"owners:\n  - match: account\n    value: \"*\"\n    team: everyone\n",
		a100);
	fclose(f);
}

static void test_rates_changes_are_audited_with_a_diff(void **state)
{
	struct gl_test_out o;
	char path[300];
	const char *detail;
	cJSON *j;

	snprintf(path, sizeof path, "%s/rates.yaml", g_tmp);
	write_rates(path, "2.50");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'costing.load'"), 1);
	/* the same file again changes nothing and writes nothing */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	assert_non_null(strstr(o.out, "unchanged"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'costing.load'"), 1);
	/* a price change: one row, the old and the new a100 rate in the diff */
	write_rates(path, "3.00");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'costing.load'"
					   " AND actor LIKE 'cli:%' AND object LIKE '%rates.yaml'"),
			 2);
	detail = gl_test_qstr(g_c, "SELECT detail::text FROM audit_log WHERE action = 'costing.load' ORDER BY audit_id DESC LIMIT 1");
	j = cJSON_Parse(detail);
	assert_non_null(j);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "rates"), "added")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "rates"), "removed")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "owners"), "added")->valueint, 0);
	{
		char *added = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "added")),
		     *removed = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "removed"));
		assert_non_null(strstr(added, "3000000"));
		assert_non_null(strstr(removed, "2500000"));
		free(added);
		free(removed);
	}
	cJSON_Delete(j);
}

static void test_the_daemon_acts_as_system(void **state)
{
	struct gl_test_daemon d;
	assert_int_equal(gl_test_daemon_start(&d, g_dsn,
					      "log:\n  level: warn\nrates:\n  - model: a100\n    per_gpu_hour: \"4.00\"\n",
					      (const char *const[]){"--no-ingest", NULL}),
			 0);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT actor FROM audit_log WHERE action = 'costing.load'"
					      " ORDER BY audit_id DESC LIMIT 1"),
			    "system");
	{
		struct gl_test_out o;
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "verify", NULL), 0);
		assert_int_equal(o.status, 0);
		gl_test_out_fini(&o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_ingest_run_is_audited),
		cmocka_unit_test(test_an_audit_failure_does_not_undo_the_ingest),
		cmocka_unit_test(test_rates_changes_are_audited_with_a_diff),
		cmocka_unit_test(test_the_daemon_acts_as_system),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
