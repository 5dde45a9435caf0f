/* `gpuledger ingest nvidia-smi` through the real binary and a real
 * PostgreSQL: a node's nvidia-smi capture into the inventory and the usage
 * rollup the exporters feed (busy share), rounds oldest first, re-ingest
 * changes nothing, bad rows named file:line with the rest ingested (exit 4),
 * and --query-compute-apps with the node's Slurm PIDs attributing the GPU to
 * the job that runs on it.
 *
 * Captures: the real H100 and L40S ones of tests/fixtures/nvsmi (two
 * samples each, idle then gpu-burn, 15 s apart; clocks in UTC). The
 * sacct lines and the `scontrol listpids` text are SYNTHETIC, in the
 * testbed's field order and Slurm 22.05's listpids layout
 * (src/scontrol/info_job.c: "PID JOBID STEPID LOCALID GLOBALID"), naming the
 * capture's PIDs. */
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

#define FX "tests/fixtures/nvsmi/"

static char g_dsn[512], g_fields[1024], g_dir[256];
static PGconn *g_c;

static const char *tmpf(const char *name)
{
	static char buf[4][400];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
	return buf[k];
}

/* job id on node, 1 GPU, 08:00 to 08:30 UTC of the capture's day */
static void write_sacct(const char *path, const char *cluster, const int *ids, const char *const *nodes, size_t n)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		fprintf(f,
			"%d|%d|%s|gpu|normal|team|g|2001|u|2001|2026-07-14T07:59:00|2026-07-14T07:59:00|"
			"2026-07-14T08:00:00|2026-07-14T08:30:00|00:30:00|1800|0:0|COMPLETED|1|2|2|1000M|"
			"billing=1,cpu=2,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=2,gres/gpu=1,mem=1000M,node=1|"
			"01:00:00|%s|job%d|%d|00:00:00|\n",
			ids[i], ids[i], cluster, nodes[i], ids[i], ids[i]);
	assert_int_equal(fclose(f), 0);
}

static void ingest_jobs(const char *cluster, const int *ids, const char *const *nodes, size_t n)
{
	const char *p = tmpf("sacct.txt");
	write_sacct(p, cluster, ids, nodes, n);
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", cluster, "--file", p, "--fields", g_fields,
				     NULL),
			 0);
}

static int nvsmi(const char *cluster, const char *node, const char *file, const char *apps, const char *pids,
		 char **err_out)
{
	struct gl_test_out o;
	int rc;
	if (apps)
		rc = gl_test_run(g_dsn, NULL, &o, "ingest", "nvidia-smi", "--cluster", cluster, "--node", node, "--file",
				 file, "--apps", apps, "--pids", pids, NULL);
	else
		rc = gl_test_run(g_dsn, NULL, &o, "ingest", "nvidia-smi", "--cluster", cluster, "--node", node, "--file",
				 file, NULL);
	assert_int_equal(rc, 0);
	rc = o.status;
	if (err_out)
		*err_out = strdup(o.err ? o.err : "");
	gl_test_out_fini(&o);
	return rc;
}

/* every job's usage on the cluster, one line each */
static char *usage_of(const char *cluster)
{
	return strdup(gl_test_qstrf(g_c,
				    "SELECT coalesce(string_agg(j.job_id || ' ' || u.attribution || ' ' || round(u.observed_gpu_s::numeric, 3)"
				    " || ' ' || round(u.busy_gpu_s::numeric, 3) || ' ' || round(u.idle_gpu_s::numeric, 3),"
				    " E'\\n' ORDER BY j.job_id), '')"
				    " FROM gl_job_usage() u JOIN jobs j USING (job_pk) JOIN clusters c ON c.cluster_id = j.cluster_id"
				    " WHERE c.name = '%s'",
				    cluster));
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof g_dir, "%s/gltest-nvsmi-XXXXXX", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	if (!mkdtemp(g_dir) || gl_test_sacct_fields(g_fields, sizeof g_fields) ||
	    gl_test_db_fresh("gl_test_nvsmi", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	return PQstatus(g_c) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[400];
	(void)state;
	PQfinish(g_c);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The H100 capture: idle at 08:12:38, 100 % at 08:12:53. The second sample
 * covers the 15 s since the first: busy 15 s. The job on the node holds the
 * GPU whole. */
static void test_capture_into_books(void **state)
{
	static const int ids[] = {201};
	static const char *const nodes[] = {"nv1"};
	char *u, *again;
	(void)state;
	ingest_jobs("nvc", ids, nodes, 1);
	assert_int_equal(nvsmi("nvc", "nv1", gl_test_fixture(FX "h100_query_gpu.csv"), NULL, NULL, NULL), 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT g.source || ' ' || g.model || ' ' || g.driver || ' ' || n.name"
					      " FROM gpus g JOIN nodes n USING (node_id) JOIN clusters c ON c.cluster_id = g.cluster_id"
					      " WHERE c.name = 'nvc'"),
			    "nvidia-smi NVIDIA H100 80GB HBM3 590.48.01 nv1");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'nvc' AND r.source = 'nvidia-smi'"),
			 1);
	u = usage_of("nvc");
	assert_string_equal(u, "201 node-exclusive 15.000 15.000 0.000");
	/* the same capture again: nothing changes */
	assert_int_equal(nvsmi("nvc", "nv1", gl_test_fixture(FX "h100_query_gpu.csv"), NULL, NULL, NULL), 0);
	again = usage_of("nvc");
	assert_string_equal(again, u);
	free(u);
	free(again);
}

/* A capture with a torn row and a bad cell: each named file:line, the good
 * rows ingested, exit 4, the reasons in the run. */
static void test_bad_rows_named(void **state)
{
	size_t len;
	char *cap = gl_test_read_file(gl_test_fixture(FX "l40s_query_gpu.csv"), &len), *nl1, *nl2, *err = NULL;
	const char *p = tmpf("l40s_bad.csv");
	FILE *f;
	(void)state;
	assert_non_null(cap);
	nl1 = strchr(cap, '\n');
	assert_non_null(nl1);
	nl2 = strchr(nl1 + 1, '\n');
	assert_non_null(nl2);
	f = fopen(p, "w");
	assert_non_null(f);
	/* header, a torn row (line 2), the idle sample (3), the load one (4) */
	fwrite(cap, 1, (size_t)(nl1 + 1 - cap), f);
	fputs("2026/07/03 08:33:30.000, 595.80\n", f);
	fwrite(nl1 + 1, 1, len - (size_t)(nl1 + 1 - cap), f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nvsmi("nvbad", "nv9", p, NULL, NULL, &err), 4);
	assert_non_null(strstr(err, "l40s_bad.csv:2: "));
	free(err);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'nvbad' AND r.skip_reasons @> '[{\"line\": 2}]'"
					   " AND r.skip_reasons::text LIKE '%l40s_bad.csv: 2 fields, the header has 202%'"),
			 1);
	/* the two good rows: one GPU, its last sample the second one */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus g JOIN clusters c ON c.cluster_id = g.cluster_id"
					   " WHERE c.name = 'nvbad' AND g.source = 'nvidia-smi'"),
			 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM dcgm_gpu_state s JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'nvbad' AND s.last_sample_at = '2026-07-03T08:33:53Z'"),
			 1);
	free(cap);
}

/* Two 1-GPU jobs on the node: without processes the GPU's samples are shared
 * between them by the node rule; with the compute-apps capture and the
 * PIDs, the job whose processes run on the GPU gets it (hpc_job). */
static void test_apps_attribute_job(void **state)
{
	static const int ids[] = {301, 302};
	static const char *const nodes[] = {"nv2", "nv2"};
	const char *pids = tmpf("listpids.txt");
	char *u;
	FILE *f;
	(void)state;
	ingest_jobs("nvapps", ids, nodes, 2);
	f = fopen(pids, "w");
	assert_non_null(f);
	fputs("PID      JOBID    STEPID   LOCALID GLOBALID\n"
	      "11300    302      batch    0       0       \n"
	      "11327    302      0        0       0       \n"
	      "11328    302      0        1       1       \n"
	      "11345    302      0        2       2       \n"
	      "11290    301      batch    0       0       \n",
	      f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nvsmi("nvapps", "nv2", gl_test_fixture(FX "h100_query_gpu.csv"),
			       gl_test_fixture(FX "h100_compute_apps.csv"), pids, NULL),
			 0);
	u = usage_of("nvapps");
	/* the apps capture lists the load sample's processes only: the sample
	 * at 08:12:53 (15 s) is 302's by its processes; the first sample covers
	 * nothing (no earlier one) and is the node rule's, 0 s to each */
	assert_string_equal(u, "301 node-estimated 0.000 0.000 0.000\n302 hpc_job 15.000 15.000 0.000");
	free(u);
}

/* The real H100 capture with its utilization.gpu column cut out (header and
 * rows): the busy share cannot be read, so the capture is refused naming the
 * file and the column, and nothing of it is stored. */
static void test_missing_column_refused(void **state)
{
	size_t len;
	char *cap = gl_test_read_file(gl_test_fixture(FX "h100_query_gpu.csv"), &len), *err = NULL, *line, *save = NULL;
	const char *p = tmpf("h100_no_util.csv");
	int col = -1, cut = 0;
	FILE *f;
	(void)state;
	assert_non_null(cap);
	f = fopen(p, "w");
	assert_non_null(f);
	for (line = strtok_r(cap, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *fld, *s2 = NULL;
		int k = 0, first = 1;
		for (fld = strtok_r(line, ",", &s2); fld; fld = strtok_r(NULL, ",", &s2), k++) {
			if (col < 0 && !strcmp(fld, " utilization.gpu [%]"))
				col = k;
			if (k == col) {
				cut++;
				continue;
			}
			fprintf(f, "%s%s", first ? "" : ",", fld);
			first = 0;
		}
		fputc('\n', f);
	}
	assert_int_equal(fclose(f), 0);
	assert_true(col > 0);
	assert_int_equal(cut, 3); /* the header and both samples */
	assert_int_not_equal(nvsmi("nvmiss", "nv8", p, NULL, NULL, &err), 0);
	assert_non_null(strstr(err, "h100_no_util.csv"));
	assert_non_null(strstr(err, "required column 'utilization.gpu' missing"));
	free(err);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus g JOIN clusters c ON c.cluster_id = g.cluster_id"
					   " WHERE c.name = 'nvmiss'"),
			 0);
	free(cap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_into_books),
		cmocka_unit_test(test_missing_column_refused),
		cmocka_unit_test(test_bad_rows_named),
		cmocka_unit_test(test_apps_attribute_job),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
