/* One byte of invalid UTF-8 costs one line (pod, node), not the batch:
 * each source gets a real fixture with one bad line injected
 * (tests/fixtures/ingest/README.md) and must ingest the rest, report the
 * line and exit 4. PostgreSQL itself is the judge that what was written is
 * valid: before the fix the same files made COPY fail and wrote nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FX "tests/fixtures/ingest/"

static char g_dsn[512];
static char g_fields[1024];
static PGconn *g_c;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_utf8", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	if (gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

static void has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' not in: %s", needle, hay);
}

static void test_sacct_line_skipped(void **state)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file",
				     gl_test_fixture(FX "testbed_bad_utf8.txt"), "--fields", g_fields, NULL),
			 0);
	assert_int_equal(o.status, 4);
	/* line 4 (job 4, JobName "caf\xe9") at byte 293 of the line, counted
	 * when the fixture was made */
	has(o.err, "testbed_bad_utf8.txt:4: not valid UTF-8 (byte 293)");
	has(o.out, "\"inserted\":5");
	has(o.out, "\"skipped\":1");
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 5);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE job_id = '4'"), 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT status || ':' || skipped || ':' || (skip_reasons->0->>'line') || ':' ||"
					      " (skip_reasons->0->>'reason') FROM ingest_runs WHERE source = 'sacct'"),
			    "partial:1:4:not valid UTF-8 (byte 293)");
}

static void test_dcgm_lines_skipped(void **state)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "dcgm", "--cluster", "dc", "--file",
				     gl_test_fixture(FX "dcgm_bad_utf8.prom"), "--at", "2026-11-22T16:05:00Z", NULL),
			 0);
	assert_int_equal(o.status, 4);
	has(o.err, "dcgm_bad_utf8.prom:6: not valid UTF-8");  /* hpc_job="42\xe942" */
	has(o.err, "dcgm_bad_utf8.prom:12: not valid UTF-8"); /* modelName "NVIDIA A100\xff" */
	has(o.out, "\"bad_lines\":2");
	gl_test_out_fini(&o);
	/* both GPUs of the node are still seen through their other lines */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus g JOIN clusters c ON c.cluster_id = g.cluster_id"
					   " WHERE c.name = 'dc'"),
			 2);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus WHERE model = 'NVIDIA A100-SXM4-80GB'"), 2);
	assert_string_equal(gl_test_qstr(g_c, "SELECT r.status FROM ingest_runs r JOIN clusters c ON c.cluster_id = r.cluster_id"
					      " WHERE c.name = 'dc'"),
			    "partial");
}

static void test_scontrol_node_skipped(void **state)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "slurm-nodes", "--cluster", "sn", "--nodes",
				     gl_test_fixture(FX "scontrol_bad_utf8.txt"), "--at", "2026-11-22T17:59:00Z", NULL),
			 0);
	assert_int_equal(o.status, 4);
	has(o.err, "scontrol line 2: not valid UTF-8"); /* gpu02's Reason=caf\xe9 */
	gl_test_out_fini(&o);
	/* the fixture lists gpu01..gpu04; gpu02 is the bad line */
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(DISTINCT node, ',' ORDER BY node) FROM node_state_spans s"
					      " JOIN clusters c ON c.cluster_id = s.cluster_id WHERE c.name = 'sn'"),
			    "gpu01,gpu03,gpu04");
}

static void test_kube_pod_skipped(void **state)
{
	struct gl_test_out o;
	long long good;
	/* the same snapshot twice: untouched, and with pod 0003's name holding
	 * a raw Latin-1 byte */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "kgood", "--file",
				     gl_test_fixture("tests/fixtures/kube/openb-at-10326485.json"), "--at",
				     "2023-01-02T00:00:00Z", NULL),
			 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "kbad", "--file",
				     gl_test_fixture(FX "kube_bad_utf8.json"), "--at", "2023-01-02T00:00:00Z", NULL),
			 0);
	assert_int_equal(o.status, 4);
	has(o.err, "items[3].metadata.name: not valid UTF-8");
	gl_test_out_fini(&o);
	good = gl_test_qint(g_c, "SELECT count(*) FROM jobs j JOIN clusters c ON c.cluster_id = j.cluster_id WHERE c.name = 'kgood'");
	assert_true(good > 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE job_key = 'pod:00000003-0b0e-4000-8000-000000000003'"
					   " AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'kgood')"),
			 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs j JOIN clusters c ON c.cluster_id = j.cluster_id WHERE c.name = 'kbad'"),
			 good - 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE job_key = 'pod:00000003-0b0e-4000-8000-000000000003'"
					   " AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'kbad')"),
			 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT r.skip_reasons->0->>'path' FROM ingest_runs r JOIN clusters c"
					      " ON c.cluster_id = r.cluster_id WHERE c.name = 'kbad'"),
			    "items[3].metadata.name");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sacct_line_skipped),
		cmocka_unit_test(test_dcgm_lines_skipped),
		cmocka_unit_test(test_scontrol_node_skipped),
		cmocka_unit_test(test_kube_pod_skipped),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
