/* Late attribution of unlabelled samples (docs/ingest.md, "Jobs that arrive
 * after their samples"), through the real binary and a real PostgreSQL:
 * the exporter is scraped every 30 s, sacct polled every few minutes, so the
 * first samples of a job on a node without hpc_job or pod labels were
 * attributed to nobody for good. They now wait, and the jobs ingest that
 * brings the job gives it the share the node rule gives it.
 *
 * SYNTHETIC scrapes (dcgm-exporter's format, no labels) of node n1 (4 GPUs,
 * jobs 101 with 2 GPUs and 102 with 1) and n2 (2 GPUs, job 103 holding
 * both), every 30 s for 10 minutes, each GPU at its own duty cycle and
 * framebuffer use; sacct lines in the testbed's field order. The same data
 * in three orders, one cluster each:
 *   order-a  the jobs first, then the scrapes (no waiting);
 *   order-b  the scrapes first, then the jobs;
 *   order-c  job 101 first, the scrapes, then jobs 102 and 103.
 * Every job's observed, busy, idle and held-idle GPU-seconds and its
 * attribution are the same in all three, and ingesting the jobs again
 * changes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T0 1790001000LL /* 2026-09-21T13:50:00Z */
#define SAMPLES 21

static char g_dsn[512], g_fields[1024], g_tmp[300];
static PGconn *g_c;

static const char *tmpf(const char *name)
{
	static char buf[4][400];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/late-attr-%d-%s", g_tmp, (int)getpid(), name);
	return buf[k];
}

static void iso(long long t, char *b, size_t n, int z)
{
	time_t tt = (time_t)t;
	strftime(b, n, z ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%dT%H:%M:%S", gmtime(&tt));
}

/* job id, GPUs, node list, start and end offsets from T0 */
struct job {
	int id, gpus;
	const char *nodes;
	int start, end;
};
static const struct job k_jobs[] = {{101, 2, "n1", 15, 555}, {102, 1, "n1", 130, 400}, {103, 2, "n2", 0, 700}};

static void write_sacct(const char *path, const char *cluster, const int *ids, size_t n)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < n; i++) {
		const struct job *j = NULL;
		char sub[32], st[32], en[32];
		for (size_t k = 0; k < sizeof k_jobs / sizeof k_jobs[0]; k++)
			if (k_jobs[k].id == ids[i])
				j = &k_jobs[k];
		assert_non_null(j);
		iso(T0 + j->start - 60, sub, sizeof sub, 0);
		iso(T0 + j->start, st, sizeof st, 0);
		iso(T0 + j->end, en, sizeof en, 0);
		fprintf(f,
			"%d|%d|%s|gpu|normal|team|g|2001|u|2001|%s|%s|%s|%s|00:10:00|%d|0:0|COMPLETED|1|2|2|1000M|"
			"billing=1,cpu=2,gres/gpu=%d,mem=1000M,node=1|billing=1,cpu=2,gres/gpu=%d,mem=1000M,node=1|"
			"01:00:00|%s|job%d|%d|00:00:00|\n",
			j->id, j->id, cluster, sub, sub, st, en, j->end - j->start, j->gpus, j->gpus, j->nodes, j->id, j->id);
	}
	assert_int_equal(fclose(f), 0);
}

/* GPU k of node n at sample i: its duty (%) and framebuffer (MiB) */
static void scrape(const char *path, int i)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n", f);
	for (int n = 1; n <= 2; n++)
		for (int k = 0; k < (n == 1 ? 4 : 2); k++)
			fprintf(f,
				"DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-1a7e0000-0000-0000-000%d-00000000000%d\","
				"modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n%d\"} %d\n",
				k, n, k, n, (i * 17 + k * 29 + n * 7) % 101);
	fputs("# TYPE DCGM_FI_DEV_FB_USED gauge\n", f);
	for (int n = 1; n <= 2; n++)
		for (int k = 0; k < (n == 1 ? 4 : 2); k++)
			fprintf(f,
				"DCGM_FI_DEV_FB_USED{gpu=\"%d\",UUID=\"GPU-1a7e0000-0000-0000-000%d-00000000000%d\","
				"modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n%d\"} %d\n",
				k, n, k, n, ((i + k) % 3) * 9000);
	assert_int_equal(fclose(f), 0);
}

static void ingest_scrapes(const char *cluster)
{
	for (int i = 0; i < SAMPLES; i++) {
		char at[32];
		const char *p = tmpf("scrape.prom");
		iso(T0 + 30LL * i, at, sizeof at, 1);
		scrape(p, i);
		assert_int_equal(gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", cluster, "--file", p, "--at", at, NULL),
				 0);
	}
}

static void ingest_jobs(const char *cluster, const int *ids, size_t n)
{
	const char *p = tmpf("sacct.txt");
	write_sacct(p, cluster, ids, n);
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", cluster, "--file", p, "--fields", g_fields,
				     NULL),
			 0);
}

/* every job's usage, one line each, rounded to the micro-second */
static char *usage_of(const char *cluster)
{
	return strdup(gl_test_qstrf(g_c,
				    "SELECT coalesce(string_agg(j.job_id || ' ' || u.attribution || ' ' || round(u.observed_gpu_s::numeric, 6)"
				    " || ' ' || round(u.busy_gpu_s::numeric, 6) || ' ' || round(u.idle_gpu_s::numeric, 6)"
				    " || ' ' || round(u.held_idle_gpu_s::numeric, 6) || ' ' || round(u.estimated_gpu_s::numeric, 6),"
				    " E'\\n' ORDER BY j.job_id), '')"
				    " FROM gl_job_usage() u JOIN jobs j USING (job_pk) JOIN clusters c ON c.cluster_id = j.cluster_id"
				    " WHERE c.name = '%s'",
				    cluster));
}

static long long pending(const char *cluster)
{
	return gl_test_qintf(g_c, "SELECT count(*) FROM dcgm_pending p JOIN clusters c USING (cluster_id) WHERE c.name = '%s'",
			     cluster);
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_tmp, sizeof g_tmp, "%s", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	if (gl_test_sacct_fields(g_fields, sizeof g_fields) || gl_test_db_fresh("gl_test_late_attr", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	return PQstatus(g_c) == CONNECTION_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	PQfinish(g_c);
	unlink(tmpf("scrape.prom"));
	unlink(tmpf("sacct.txt"));
	return 0;
}

static void test_order_changes_nothing(void **state)
{
	static const int all[] = {101, 102, 103}, first[] = {101};
	char *a, *b, *c, *none, *again;
	(void)state;
	/* a: the jobs known before their samples */
	ingest_jobs("order-a", all, 3);
	ingest_scrapes("order-a");
	a = usage_of("order-a");
	/* 101 and 102 share n1 by the node rule, 103 holds n2 whole */
	assert_non_null(strstr(a, "101 node-estimated "));
	assert_non_null(strstr(a, "102 node-estimated "));
	assert_non_null(strstr(a, "103 node-exclusive "));

	/* b: the samples first; n1's wait whole (no job known), n2's too */
	ingest_scrapes("order-b");
	none = usage_of("order-b");
	assert_string_equal(none, "");
	free(none);
	assert_int_equal(pending("order-b"), (SAMPLES - 1) * 6);
	ingest_jobs("order-b", all, 3);
	b = usage_of("order-b");
	assert_string_equal(b, a);
	/* n2 is taken whole; n1's GPUs keep the quarter nobody holds while
	 * both jobs ran, and the whole of them outside the jobs' times */
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM dcgm_pending p JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'order-b' AND p.node = 'n2'"),
			 0);

	/* c: one job known, the other two late */
	ingest_jobs("order-c", first, 1);
	ingest_scrapes("order-c");
	ingest_jobs("order-c", all, 3);
	c = usage_of("order-c");
	assert_string_equal(c, a);

	/* ingesting the jobs again claims nothing twice */
	ingest_jobs("order-b", all, 3);
	ingest_jobs("order-c", all, 3);
	again = usage_of("order-b");
	assert_string_equal(again, a);
	free(again);
	again = usage_of("order-c");
	assert_string_equal(again, a);
	free(again);
	free(a);
	free(b);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_changes_nothing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
