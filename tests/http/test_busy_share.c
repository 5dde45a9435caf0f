/* The busy share of duty-cycle counters through the real binary, a real
 * PostgreSQL and the real daemon (docs/ingest.md, "Busy share").
 *
 * SYNTHETIC scrapes in dcgm-exporter's format, made here so the figures are
 * known:
 * - job 1 holds GPU ...01 of node n1 for 30.5 minutes while the GPU runs
 *   kernels half the time (3.5 s on, 3.5 s off); every 30 s the exporter
 *   reads DCGM_FI_DEV_GPU_UTIL, the share of its last second with a kernel
 *   running, as nvidia-smi and DCGM measure it. The job must read 50 % ±
 *   2 % busy. "A sample above 0 makes its bucket busy" read it 100 % busy:
 *   every 5-minute bucket has a non-zero sample.
 * - job 2 holds GPU ...02 of node n2, no kernels (GPU_UTIL 0) but 30 GB of
 *   framebuffer: all idle, and all of it "held idle" (memory held, no
 *   kernels) in /v1/idle and /v1/jobs.
 * And each GPU's source: the real nvidia_gpu_exporter and AMD exporter
 * scrapes of tests/fixtures/dcgm land as 'nvidia_gpu_exporter' and 'amd'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T0 1790000100LL /* 2026-09-21T13:35:00Z, a bucket boundary */
#define SAMPLES 61      /* 30 minutes at 30 s */
#define FX "tests/fixtures/dcgm/"

static char g_dsn[512], g_file[400];
static struct gl_test_daemon g_d;
static PGconn *g_c;

/* the share of [t - 1, t) during which a kernel runs: 3.5 s on, 3.5 s off */
static double util_at(double t)
{
	double on = 0;
	for (int k = 0; k < 1000; k++) {
		double a = t - 1 + k / 1000.0;
		if (fmod(a, 7.0) < 3.5)
			on += 1.0 / 1000.0;
	}
	return round(on * 100);
}

static void iso(long long t, char *b, size_t n)
{
	time_t tt = (time_t)t;
	strftime(b, n, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_file, sizeof g_file, "%s/busy-share-%d.prom", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp",
		 (int)getpid());
	if (gl_test_db_fresh("gl_test_busy_share", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('bs', 'slurm')") != 1 ||
	    gl_test_exec_dsn(g_dsn, "INSERT INTO jobs (cluster_id, job_key, job_id, account, state, start_at, end_at, gpu_micro,"
				    " nodes) SELECT cluster_id, 'db:' || i, i::text, 'acct' || i, 'COMPLETED',"
				    " to_timestamp(1790000100), to_timestamp(1790000100 + 1830), 1000000, ARRAY['n' || i]"
				    " FROM clusters, generate_series(1, 2) i WHERE name = 'bs'") != 2)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	(void)state;
	PQfinish(g_c);
	unlink(g_file);
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void write_scrape(double util)
{
	FILE *f = fopen(g_file, "w");
	assert_non_null(f);
	fprintf(f, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
		   "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-b5000000-0000-0000-0000-000000000001\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n1\"} %g\n"
		   "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-b5000000-0000-0000-0000-000000000002\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n2\"} 0\n"
		   "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
		   "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-b5000000-0000-0000-0000-000000000001\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n1\"} 2000\n"
		   "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-b5000000-0000-0000-0000-000000000002\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n2\"} 30000\n",
		util);
	assert_int_equal(fclose(f), 0);
}

static double usage(const char *col, int job)
{
	return atof(gl_test_qstrf(g_c, "SELECT coalesce(u.%s, -1) FROM gl_job_usage() u JOIN jobs j USING (job_pk)"
				       " WHERE j.job_key = 'db:%d'", col, job));
}

static void test_duty_cycle_reads_as_its_share(void **state)
{
	int nonzero_buckets[6] = {0};
	double busy, idle;
	(void)state;
	for (int i = 0; i < SAMPLES; i++) {
		long long t = T0 + 30LL * i;
		char at[32];
		double u = util_at((double)t);
		iso(t, at, sizeof at);
		write_scrape(u);
		if (u > 0 && i > 0 && (i - 1) / 10 < 6)
			nonzero_buckets[(i - 1) / 10] = 1;
		assert_int_equal(gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", "bs", "--file", g_file, "--at", at,
					     NULL),
				 0);
	}
	/* every 5-minute bucket had a non-zero sample: the old rule's 100 % */
	for (int b = 0; b < 6; b++)
		assert_true(nonzero_buckets[b]);
	assert_true(usage("observed_gpu_s", 1) == 1800.0);
	busy = usage("busy_gpu_s", 1);
	idle = usage("idle_gpu_s", 1);
	assert_true(busy + idle == 1800.0);
	if (fabs(busy / (busy + idle) - 0.5) > 0.02)
		fail_msg("busy share %.4f, want 0.50 +- 0.02", busy / (busy + idle));
	/* 2,000 MiB of framebuffer is above the 1,024 MiB default of
	 * idle.held_memory_mib: its idle half is held idle */
	assert_true(fabs(usage("held_idle_gpu_s", 1) - idle) < 1e-6);
	/* job 2: no kernels, 30 GB held: idle, all of it held */
	assert_true(usage("busy_gpu_s", 2) == 0.0);
	assert_true(usage("idle_gpu_s", 2) == 1800.0);
	assert_true(usage("held_idle_gpu_s", 2) == 1800.0);
	/* the GPU rollup splits the same way, to the second */
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(covered_s) - sum(busy_s) - sum(idle_s) FROM gpu_usage"), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(held_idle_s) FROM gpu_usage u JOIN gpus g USING (gpu_id)"
					   " WHERE g.uuid = 'GPU-b5000000-0000-0000-0000-000000000002'"),
			 1800);
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(DISTINCT source, ',') FROM gpus"), "dcgm");
}

static void test_idle_shows_held_memory(void **state)
{
	char path[256], a[32], b[32];
	cJSON *j, *it;
	int seen = 0;
	(void)state;
	/* the sample at T0 + 1800 s is in the bucket that starts then */
	iso(T0, a, sizeof a);
	iso(T0 + 2100, b, sizeof b);
	snprintf(path, sizeof path, "/v1/idle?window=%s,%s&aggregate=account", a, b);
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "allocated_idle")) {
		const char *k = cJSON_GetObjectItem(it, "key")->valuestring;
		if (!strcmp(k, "acct2")) {
			assert_int_equal(gl_test_jnum(it, "idle_gpu_seconds"), 1800);
			assert_int_equal(gl_test_jnum(it, "held_idle_gpu_seconds"), 1800);
			seen++;
		}
	}
	assert_int_equal(seen, 1);
	cJSON_Delete(j);
	snprintf(path, sizeof path, "/v1/jobs?window=%s,%s&cluster=bs", a, b);
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "jobs")) {
		if (!strcmp(cJSON_GetObjectItem(it, "job_id")->valuestring, "2")) {
			assert_int_equal(gl_test_jnum(it, "idle_in_allocation_gpu_seconds"), 1800);
			assert_int_equal(gl_test_jnum(it, "held_idle_gpu_seconds"), 1800);
			seen++;
		}
	}
	assert_int_equal(seen, 2);
	cJSON_Delete(j);
}

static void test_sources_stored(void **state)
{
	(void)state;
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", "src", "--file",
				     FX "nvidia_gpu_exporter_output__h100__idle.prom", "--at", "2026-11-22T10:00:00Z",
				     "--node", "smi-node", NULL),
			 0);
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "dcgm", "--cluster", "src", "--file", FX "amd_dme_excerpts.prom",
				     "--at", "2026-11-22T10:00:00Z", NULL),
			 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(DISTINCT g.source, ',' ORDER BY g.source) FROM gpus g"
					      " JOIN clusters c USING (cluster_id) WHERE c.name = 'src'"),
			    "amd,nvidia_gpu_exporter");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duty_cycle_reads_as_its_share),
		cmocka_unit_test(test_idle_shows_held_memory),
		cmocka_unit_test(test_sources_stored),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
