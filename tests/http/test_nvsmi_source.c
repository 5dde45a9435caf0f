/* The daemon's sources.nvidia_smi (docs/ingest.md, "Into the books"): the
 * real binary serving, a real PostgreSQL, a real command run on schedule.
 * Node nv1's capture is printed by `cat` of the real H100 capture
 * (tests/fixtures/nvsmi), its processes read from the real compute-apps
 * capture with a SYNTHETIC `scontrol listpids` (Slurm 22.05's layout) naming
 * them job 302's; node nv2's command fails, which fails its run alone;
 * nodes nvm[1-2] are one entry reading {node}.csv, nvm1's there (the real
 * L40S capture), nvm2's missing: their run ingests nvm1 and names nvm2. */
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
static struct gl_test_daemon g_d;

/* Polls sql (one integer) until it reaches want; a cap of 30 s (scaled). */
static long long wait_for(const char *sql, long long want)
{
	long long v = -1;
	for (int i = 0; i < 300 * gl_test_timeout_scale(); i++) {
		v = gl_test_qint(g_c, sql);
		if (v >= want)
			break;
		usleep(100000);
	}
	return v;
}

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof g_dir, "%s/gltest-nvsrc-XXXXXX", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	if (!mkdtemp(g_dir) || gl_test_sacct_fields(g_fields, sizeof g_fields) ||
	    gl_test_db_fresh("gl_test_nvsmi_source", g_dsn, sizeof g_dsn))
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

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* /v1/inventory lists the GPUs nvidia-smi reports (JSON and CSV). */
static void inventory_lists_them(void)
{
	struct gl_test_http r;
	cJSON *inv = gl_test_get_json(g_d.port, "/v1/inventory?cluster=nvm", 200), *g;
	assert_non_null(inv);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(inv, "gpus")), 1);
	g = cJSON_GetArrayItem(cJSON_GetObjectItem(inv, "gpus"), 0);
	assert_string_equal(cJSON_GetObjectItem(g, "node")->valuestring, "nvm1");
	assert_string_equal(cJSON_GetObjectItem(g, "source")->valuestring, "nvidia-smi");
	assert_string_equal(cJSON_GetObjectItem(g, "model_raw")->valuestring, "NVIDIA L40S");
	assert_string_equal(cJSON_GetObjectItem(g, "model")->valuestring,
			    gl_test_qstr(g_c, "SELECT gl_gpu_model('NVIDIA L40S')"));
	assert_string_equal(cJSON_GetObjectItem(g, "driver")->valuestring, "595.80");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(g, "mig_instance")));
	assert_int_equal(gl_test_jnum(g, "index"), 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(g, "absent_since")));
	assert_non_null(cJSON_GetObjectItem(g, "first_seen")->valuestring);
	cJSON_Delete(inv);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/inventory?cluster=nvm&format=csv&table=gpus", NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "cluster,node,index,uuid,model_raw,model,mig_profile,mig_instance,driver,source,"
				       "first_seen,last_seen,absent_since,stale\r\n"));
	assert_non_null(strstr(r.body, "nvm,nvm1,0,GPU-"));
	assert_non_null(strstr(r.body, ",595.80,nvidia-smi,"));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/inventory?format=csv&table=pods", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(r.body, "\"table\""));
	gl_test_http_fini(&r);
}

static void test_daemon_runs_nvidia_smi(void **state)
{
	char sacct[400], pids[400], cfg[4096], sql[300];
	(void)state;
	snprintf(sacct, sizeof sacct, "%s/sacct.txt", g_dir);
	snprintf(pids, sizeof pids, "%s/listpids.txt", g_dir);
	write_file(sacct, "301|301|nvd|gpu|normal|team|g|2001|u|2001|2026-07-14T07:59:00|2026-07-14T07:59:00|"
			  "2026-07-14T08:00:00|2026-07-14T08:30:00|00:30:00|1800|0:0|COMPLETED|1|2|2|1000M|"
			  "billing=1,cpu=2,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=2,gres/gpu=1,mem=1000M,node=1|"
			  "01:00:00|nv1|job301|301|00:00:00|\n"
			  "302|302|nvd|gpu|normal|team|g|2001|u|2001|2026-07-14T07:59:00|2026-07-14T07:59:00|"
			  "2026-07-14T08:00:00|2026-07-14T08:30:00|00:30:00|1800|0:0|COMPLETED|1|2|2|1000M|"
			  "billing=1,cpu=2,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=2,gres/gpu=1,mem=1000M,node=1|"
			  "01:00:00|nv1|job302|302|00:00:00|\n");
	write_file(pids, "PID      JOBID    STEPID   LOCALID GLOBALID\n"
			 "11327    302      0        0       0       \n"
			 "11345    302      0        2       2       \n");
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "nvd", "--file", sacct, "--fields", g_fields,
				     NULL),
			 0);
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\n"
		 "sources:\n  nvidia_smi:\n"
		 "    - cluster: nvd\n      node: nv1\n      command: cat %s\n"
		 "      apps_file: %s\n      pids_file: %s\n      interval_s: 8\n"
		 "    - cluster: nvd\n      node: nv2\n      command: false\n      interval_s: 1\n"
		 "    - cluster: nvm\n      node: nvm[1-2]\n      file: %s/{node}.csv\n      interval_s: 8\n",
		 gl_test_fixture(FX "h100_query_gpu.csv"), gl_test_fixture(FX "h100_compute_apps.csv"), pids, g_dir);
	/* nvm1's capture is there, nvm2's is not: one run, nvm1 ingested, nvm2 named */
	snprintf(sql, sizeof sql, "cp %s %s/nvm1.csv", gl_test_fixture(FX "l40s_query_gpu.csv"), g_dir);
	assert_int_equal(system(sql), 0);
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cfg, NULL), 0);
	/* two runs of nv1: the second re-reads the same capture and applies
	 * nothing. A sample stands for at most two intervals (16 s): the load
	 * sample's 15 s count whole. */
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM ingest_runs WHERE source = 'nvidia-smi' AND status <> 'running'"
		 " AND error IS NULL");
	assert_true(wait_for(sql, 2) >= 2);
	assert_true(wait_for("SELECT count(*) FROM ingest_runs WHERE source = 'nvidia-smi' AND status = 'failed'", 1) >=
		    1);
	assert_true(wait_for("SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id) WHERE c.name = 'nvm'"
			     " AND r.status = 'partial'",
			     1) >= 1);
	inventory_lists_them();
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(g.source || ' ' || n.name, ',' ORDER BY n.name)"
					      " FROM gpus g JOIN nodes n USING (node_id)"),
			    "nvidia-smi nv1,nvidia-smi nvm1");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'nvm' AND r.status = 'partial' AND r.input = 'nvm[1-2]'"
					   " AND r.skip_reasons::text LIKE '%nvm2.csv: No such file%'"),
			 gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'nvm'"));
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(j.job_id || ' ' || u.attribution || ' '"
					      " || round(u.busy_gpu_s::numeric, 3), ',' ORDER BY j.job_id)"
					      " FROM gl_job_usage() u JOIN jobs j USING (job_pk)"),
			    "301 node-estimated 0.000,302 hpc_job 15.000");
	/* nv2's run failed naming its command; it cost nv1 nothing */
	assert_non_null(strstr(gl_test_qstr(g_c, "SELECT error FROM ingest_runs WHERE source = 'nvidia-smi'"
						 " AND status = 'failed' LIMIT 1"),
			       "nvidia-smi nvd/nv2: false: false: exit 1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_daemon_runs_nvidia_smi),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
