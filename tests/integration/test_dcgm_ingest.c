/* dcgm-exporter ingestion through the real binary against a real PostgreSQL:
 * inventory from the real fixtures, absent GPUs after the grace period, idle
 * and busy buckets attributed to the Slurm testbed's jobs, re-ingest
 * idempotence, energy counter resets, samples that wait for a job the
 * database did not know yet.
 *
 * The scrapes for the testbed nodes gpu01..gpu04 are HAND-WRITTEN by
 * write_scrape() below (dcgm-exporter's line format, as in the real fixtures;
 * values chosen per test); the others are the real fixture files. */
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

#define FX "tests/fixtures/dcgm/"
#define TB "tests/fixtures/sacct/testbed/"

static char g_dsn[512];
static char g_fields[1024];
static char g_dir[256];
static char g_cfgenv[400];
static PGconn *g_c;

static int setup(void **state)
{
	FILE *f;
	char cfg[300];
	if (gl_test_db_fresh("gl_test_dcgm", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	PQclear(PQexec(g_c, "SET TIME ZONE 'UTC'"));
	if (gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-dcgm-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	/* 60 s buckets (the testbed's jobs last seconds), 120 s grace */
	snprintf(cfg, sizeof cfg, "%s/config.yaml", g_dir);
	f = fopen(cfg, "w");
	if (!f)
		return -1;
	fputs("log:\n  level: warn\ningest:\n  bucket_s: 60\ninventory:\n  absent_grace_s: 120\n", f);
	fclose(f);
	snprintf(g_cfgenv, sizeof g_cfgenv, "GPULEDGER_CONFIG=%s", cfg);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	PQfinish(g_c);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
	return 0;
}

/* Runs `ingest dcgm`; returns the exit status, stdout kept in out (caller frees). */
static int ingest(const char *cluster, const char *file, const char *at, const char *node, char **out)
{
	struct gl_test_out o;
	const char *env[] = {g_cfgenv, NULL};
	int st;
	if (node)
		assert_int_equal(gl_test_run(g_dsn, env, &o, "ingest", "dcgm", "--cluster", cluster, "--file", file, "--at",
					     at, "--node", node, NULL), 0);
	else
		assert_int_equal(gl_test_run(g_dsn, env, &o, "ingest", "dcgm", "--cluster", cluster, "--file", file, "--at",
					     at, NULL), 0);
	st = o.status;
	if (st != 0 && st != 4)
		fprintf(stderr, "ingest dcgm %s: exit %d: %s\n", file, st, o.err);
	if (out)
		*out = strdup(o.out);
	gl_test_out_fini(&o);
	return st;
}

/* ---- hand-written scrapes ---------------------------------------------- */

struct hgpu {
	const char *uuid;
	double engine;         /* PROF_GR_ENGINE_ACTIVE; < 0: not reported */
	long long energy_mj;   /* TOTAL_ENERGY_CONSUMPTION; < 0: not reported */
	const char *jobs[3];   /* hpc_job labels (the exporter repeats the samples per job) */
};

static void write_scrape(const char *path, const char *host, const char *model, const struct hgpu *g, size_t n)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("# hand-written for tests/integration/test_dcgm_ingest.c (dcgm-exporter format)\n", f);
	fputs("# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active.\n"
	      "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n", f);
	for (size_t i = 0; i < n; i++) {
		size_t nj = 0;
		while (nj < 3 && g[i].jobs[nj])
			nj++;
		for (size_t j = 0; j < (nj ? nj : 1); j++) {
			char lab[512], job[64] = "";
			if (nj)
				snprintf(job, sizeof job, ",hpc_job=\"%s\"", g[i].jobs[j]);
			snprintf(lab, sizeof lab,
				 "{gpu=\"%zu\",UUID=\"%s\",pci_bus_id=\"00000000:%02zX:00.0\",device=\"nvidia%zu\","
				 "modelName=\"%s\",Hostname=\"%s\",DCGM_FI_DRIVER_VERSION=\"550.54.14\"%s}",
				 i, g[i].uuid, 0x10 + i, i, model, host, job);
			if (g[i].engine >= 0)
				fprintf(f, "DCGM_FI_PROF_GR_ENGINE_ACTIVE%s %f\n", lab, g[i].engine);
			fprintf(f, "DCGM_FI_DEV_FB_USED%s %d\n", lab, g[i].engine > 0.01 ? 30512 : 0);
			fprintf(f, "DCGM_FI_DEV_FB_FREE%s %d\n", lab, g[i].engine > 0.01 ? 50407 : 80919);
			fprintf(f, "DCGM_FI_DEV_POWER_USAGE%s %f\n", lab, g[i].engine > 0.01 ? 312.5 : 61.2);
			if (g[i].energy_mj >= 0)
				fprintf(f, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION%s %lld\n", lab, g[i].energy_mj);
		}
	}
	fclose(f);
}

static const char *tmpf(const char *name)
{
	static char buf[8][400];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
	return buf[k];
}

/* ---- tests --------------------------------------------------------------- */

static void test_inventory_from_real_scrapes(void **state)
{
	char *out = NULL;
	assert_int_equal(ingest("fleet", FX "datadog_dcgm_fixture_metrics.prom", "2026-11-22T10:00:00Z", NULL, &out), 0);
	assert_non_null(strstr(out, "\"gpus\":3,\"nodes\":3,\"new_gpus\":3,\"applied\":3"));
	free(out);
	/* two real T4 hosts (and DataDog's redacted A10G series) */
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gpus g JOIN clusters c USING (cluster_id) WHERE c.name = 'fleet'"), 3);
	assert_string_equal(gl_test_qstrf(g_c, "SELECT string_agg(n.name || '/' || g.model || '/' || coalesce(g.driver, '-'), ' ' ORDER BY n.name)"
			       " FROM gpus g JOIN nodes n USING (node_id) JOIN clusters c ON c.cluster_id = g.cluster_id"
			       " WHERE c.name = 'fleet'"),
			    "424773df46e0/Tesla T4/460.106.00 551bdf382151/Tesla T4/470.182.03 ip-11111/NVIDIA A10G/550.144.03");
	/* FB_USED + FB_FREE, the reserved part excluded */
	assert_int_equal(gl_test_qintf(g_c, "SELECT memory_mib FROM gpus WHERE uuid = 'GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e'"), 15109);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gpus WHERE uuid = 'GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e'"
			   " AND first_seen = '2026-11-22T10:00:00Z' AND last_seen = first_seen AND absent_since IS NULL"), 1);

	/* MIG: the parent and its four instances, keyed by GPU_I_ID */
	assert_int_equal(ingest("fleet", FX "handwritten_mig_h100.prom", "2026-11-22T10:00:00Z", NULL, NULL), 0);
	assert_string_equal(gl_test_qstrf(g_c, "SELECT string_agg(mig_instance || ':' || coalesce(mig_profile, '-') || ':' || mig_parent"
			       " || ':' || coalesce(memory_mib::text, '-'), ' ' ORDER BY mig_instance)"
			       " FROM gpus WHERE uuid = 'GPU-00000000-0000-0000-0000-000000000000'"),
			    "-1:-:true:- 2:3g.40gb:false:40448 3:2g.20gb:false:20096 9:1g.10gb:false:9984 10:1g.10gb:false:9984");
	/* a sample repeated per hpc_job is one GPU */
	assert_int_equal(ingest("fleet", FX "handwritten_slurm_hpc_job.prom", "2026-11-22T10:00:00Z", NULL, NULL), 0);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gpus g JOIN nodes n USING (node_id) WHERE n.name = 'gpu-node-07'"), 2);
	/* Kubernetes: --node names the node, not the exporter pod; the
	 * fixture's unparsable line is skipped and reported (exit 4) */
	assert_int_equal(ingest("k8s", FX "handwritten_k8s_federate.prom", "2026-11-22T10:00:00Z", "gpu-node-k8s-1", &out), 4);
	assert_non_null(strstr(out, "\"bad_lines\":1"));
	free(out);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gpus g JOIN nodes n USING (node_id) WHERE n.name = 'gpu-node-k8s-1'"), 1);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM nodes WHERE name = 'dcgm-exporter-x7k2p'"), 0);
	assert_string_equal(gl_test_qstrf(g_c, "SELECT kind FROM clusters WHERE name = 'k8s'"), "kubernetes");
	/* every run recorded */
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM ingest_runs WHERE source = 'dcgm' AND status = 'ok'"), 3);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM ingest_runs WHERE source = 'dcgm' AND status = 'partial'"
			   " AND skip_reasons::text LIKE '%%handwritten_k8s_federate.prom%%'"), 1);
	/* not a scrape at all: an error, nothing written */
	assert_int_equal(ingest("fleet", TB "sacct_alloc.txt", "2026-11-22T10:01:00Z", NULL, NULL), 1);
}

static void test_gpu_absent_after_grace(void **state)
{
	const struct hgpu two[] = {{"GPU-aaaa0000-0000-0000-0000-000000000001", 0.0, -1, {0}},
				   {"GPU-aaaa0000-0000-0000-0000-000000000002", 0.0, -1, {0}}};
	const char *a = tmpf("absent-two.prom"), *b = tmpf("absent-one.prom");
	const char *gone = "uuid = 'GPU-aaaa0000-0000-0000-0000-000000000002'";
	write_scrape(a, "node-a", "NVIDIA A100-SXM4-80GB", two, 2);
	write_scrape(b, "node-a", "NVIDIA A100-SXM4-80GB", two, 1);
	assert_int_equal(ingest("absent", a, "2026-11-22T11:00:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("absent", b, "2026-11-22T11:01:00Z", NULL, NULL), 0);
	/* 60 s of silence is within the 120 s grace */
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gpus WHERE %s AND absent_since IS NULL", gone), 1);
	assert_int_equal(ingest("absent", b, "2026-11-22T11:03:00Z", NULL, NULL), 0);
	/* past the grace: absent since it was last seen */
	assert_string_equal(gl_test_qstrf(g_c, "SELECT absent_since FROM gpus WHERE %s", gone), "2026-11-22 11:00:00+00");
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gl_gpus_seen() WHERE uuid = 'GPU-aaaa0000-0000-0000-0000-000000000001'"
			   " AND absent_since IS NULL AND last_seen = '2026-11-22T11:03:00Z'"), 1);
	/* it comes back */
	assert_int_equal(ingest("absent", a, "2026-11-22T11:04:00Z", NULL, NULL), 0);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gl_gpus_seen() WHERE %s AND absent_since IS NULL"
			   " AND last_seen = '2026-11-22T11:04:00Z' AND first_seen = '2026-11-22T11:00:00Z'", gone), 1);
}

/* A GPU's last sighting as every reader sees it (gl_gpus_seen, sql/124):
 * "last_seen|absent_since" of the GPU on node, "-" for NULL. */
static const char *sighting(const char *node, const char *uuid)
{
	return gl_test_qstrf(g_c,
			     "SELECT to_char(s.last_seen, 'HH24:MI:SS') || '|' || coalesce(to_char(s.absent_since, 'HH24:MI:SS'), '-')"
			     " FROM gl_gpus_seen() s JOIN nodes n ON n.node_id = s.node_id WHERE n.name = '%s' AND s.uuid = '%s'",
			     node, uuid);
}

/* firm / unobserved exporter capacity of a cluster over 12:00-13:00 */
static const char *capacity_hour(const char *cluster)
{
	return gl_test_qstrf(g_c,
			     "SELECT sum(reported_gpu_seconds) || '/' || sum(unobserved_gpu_seconds)"
			     " FROM gl_capacity('2026-11-22T12:00:00Z', '2026-11-22T13:00:00Z', 120, false) c"
			     " JOIN clusters cl USING (cluster_id) WHERE cl.name = '%s'",
			     cluster);
}

/* A GPU that drops out of a target that keeps answering stops being seen at
 * the last round that listed it, not at the target's; a round that only
 * sees the same GPUs again writes no GPU row. */
static void test_gpu_vanishes_while_node_answers(void **state)
{
	const struct hgpu two[] = {{"GPU-bbbb0000-0000-0000-0000-000000000001", 0.0, -1, {0}},
				   {"GPU-bbbb0000-0000-0000-0000-000000000002", 0.0, -1, {0}}};
	const char *a = tmpf("vanish-two.prom"), *b = tmpf("vanish-one.prom");
	const char *v1 = two[0].uuid, *v2 = two[1].uuid;
	/* xmax too: a row locked (ON CONFLICT's lock) is written as well */
	const char *rows = "SELECT string_agg(g.xmin::text || ':' || g.xmax::text, ',' ORDER BY g.gpu_id) FROM gpus g"
			   " JOIN clusters c USING (cluster_id) WHERE c.name = 'vanish'";
	char before[256];
	write_scrape(a, "node-v", "NVIDIA A100-SXM4-80GB", two, 2);
	write_scrape(b, "node-v", "NVIDIA A100-SXM4-80GB", two, 1);
	assert_int_equal(ingest("vanish", a, "2026-11-22T12:00:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("vanish", a, "2026-11-22T12:01:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("vanish", b, "2026-11-22T12:02:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("vanish", b, "2026-11-22T12:03:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-v", v2), "12:01:00|-");
	assert_string_equal(sighting("node-v", v1), "12:03:00|-");
	/* an older round re-ingested late widens what it listed, nothing else */
	assert_int_equal(ingest("vanish", a, "2026-11-22T12:01:30Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-v", v2), "12:01:30|-");
	assert_string_equal(sighting("node-v", v1), "12:03:00|-");
	/* past the grace: gone since its last sighting */
	assert_int_equal(ingest("vanish", b, "2026-11-22T12:04:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-v", v2), "12:01:30|12:01:30");
	assert_string_equal(sighting("node-v", v1), "12:04:00|-");
	/* capacity: v1 firm 12:00 to 12:04 + 120 s grace, the rest unobserved;
	 * v2 12:00 to 12:01:30 */
	assert_string_equal(capacity_hour("vanish"), "450/3240");
	/* a round that sees the same GPUs again rewrites none of them */
	snprintf(before, sizeof before, "%s", gl_test_qstr(g_c, rows));
	assert_int_equal(ingest("vanish", b, "2026-11-22T12:05:00Z", NULL, NULL), 0);
	assert_string_equal(gl_test_qstr(g_c, rows), before);
	assert_string_equal(sighting("node-v", v1), "12:05:00|-");
	/* it comes back */
	assert_int_equal(ingest("vanish", a, "2026-11-22T12:06:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-v", v2), "12:06:00|-");
	assert_int_equal(ingest("vanish", a, "2026-11-22T12:07:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-v", v2), "12:07:00|-");
}

/* A target that stops answering: its GPUs are seen up to its last round,
 * then gone after the grace; the other target's rounds do not move them. */
static void test_target_stops(void **state)
{
	const struct hgpu s1[] = {{"GPU-cccc0000-0000-0000-0000-000000000001", 0.0, -1, {0}}};
	const struct hgpu t1[] = {{"GPU-cccc0000-0000-0000-0000-000000000002", 0.0, -1, {0}}};
	const char *s = tmpf("stop-s.prom"), *t = tmpf("stop-t.prom");
	write_scrape(s, "node-s", "NVIDIA L4", s1, 1);
	write_scrape(t, "node-t", "NVIDIA L4", t1, 1);
	assert_int_equal(ingest("stops", s, "2026-11-22T12:00:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("stops", t, "2026-11-22T12:00:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("stops", s, "2026-11-22T12:01:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("stops", t, "2026-11-22T12:01:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("stops", t, "2026-11-22T12:02:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-s", s1[0].uuid), "12:01:00|-");
	assert_int_equal(ingest("stops", t, "2026-11-22T12:04:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-s", s1[0].uuid), "12:01:00|12:01:00");
	assert_string_equal(sighting("node-t", t1[0].uuid), "12:04:00|-");
	/* s1 60 s; t1 firm to 12:06, unobserved after */
	assert_string_equal(capacity_hour("stops"), "420/3240");
	/* the target answers again */
	assert_int_equal(ingest("stops", s, "2026-11-22T12:05:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-s", s1[0].uuid), "12:05:00|-");
	assert_int_equal(ingest("stops", s, "2026-11-22T12:06:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-s", s1[0].uuid), "12:06:00|-");
}

/* A GPU that moves to another node: its row on the old node is last seen
 * at the old node's last round that listed it, the new row follows the new
 * node. */
static void test_gpu_moves_node(void **state)
{
	const struct hgpu both[] = {{"GPU-dddd0000-0000-0000-0000-000000000001", 0.0, -1, {0}},
				    {"GPU-dddd0000-0000-0000-0000-000000000002", 0.0, -1, {0}}};
	const struct hgpu moved[] = {{"GPU-dddd0000-0000-0000-0000-000000000002", 0.0, -1, {0}}};
	const char *m1 = tmpf("move-m1.prom"), *m1b = tmpf("move-m1b.prom"), *m2 = tmpf("move-m2.prom");
	write_scrape(m1, "node-m1", "NVIDIA H100 80GB HBM3", both, 2);
	write_scrape(m1b, "node-m1", "NVIDIA H100 80GB HBM3", both, 1);
	write_scrape(m2, "node-m2", "NVIDIA H100 80GB HBM3", moved, 1);
	assert_int_equal(ingest("moves", m1, "2026-11-22T12:00:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("moves", m1, "2026-11-22T12:01:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("moves", m1b, "2026-11-22T12:02:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("moves", m2, "2026-11-22T12:02:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("moves", m1b, "2026-11-22T12:03:00Z", NULL, NULL), 0);
	assert_int_equal(ingest("moves", m2, "2026-11-22T12:03:00Z", NULL, NULL), 0);
	assert_string_equal(sighting("node-m1", moved[0].uuid), "12:01:00|-");
	assert_string_equal(sighting("node-m2", moved[0].uuid), "12:03:00|-");
	assert_string_equal(sighting("node-m1", both[0].uuid), "12:03:00|-");
	assert_string_equal(gl_test_qstrf(g_c, "SELECT to_char(s.first_seen, 'HH24:MI:SS') FROM gl_gpus_seen() s"
					  " JOIN nodes n USING (node_id) WHERE n.name = 'node-m2'"), "12:02:00");
}

static void ingest_testbed(void)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file",
				     TB "sacct_alloc.txt", "--fields", g_fields, NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
}

/* GPU-seconds from gl_job_usage for the job with that display id (and state) */
static double job_usage(const char *col, const char *job_id, const char *state)
{
	char sql[1024];
	const char *v;
	snprintf(sql, sizeof sql,
		 "SELECT coalesce((SELECT round(u.%s::numeric, 3) FROM gl_job_usage() u JOIN jobs j"
		 " ON j.job_pk = u.job_pk AND j.cluster_id = u.cluster_id WHERE j.job_id = '%s'%s%s%s), -1)",
		 col, job_id, state ? " AND j.state = '" : "", state ? state : "", state ? "'" : "");
	v = gl_test_qstr(g_c, sql);
	return atof(v);
}

/* The day's gpu_usage partition's inserted and updated rows, as the
 * statistics count them. */
struct tup {
	long long ins, upd;
};

static struct tup usage_tuples(void)
{
	struct tup t;
	PQclear(PQexec(g_c, "SELECT pg_stat_clear_snapshot()"));
	t.ins = gl_test_qint(g_c, "SELECT coalesce(pg_stat_get_tuples_inserted(to_regclass('gpu_usage_20261122')), 0)");
	t.upd = gl_test_qint(g_c, "SELECT coalesce(pg_stat_get_tuples_updated(to_regclass('gpu_usage_20261122')), 0)");
	return t;
}

/* The counts after an ingest that inserted want rows: an ingest's backend
 * reports them as it exits, which may be just after the client saw it end. */
static struct tup usage_tuples_after(const struct tup *before, long long want)
{
	struct tup t = usage_tuples();
	for (int i = 0; i < 100 && t.ins < before->ins + want; i++) {
		usleep(100000);
		t = usage_tuples();
	}
	return t;
}

static void test_attribution_to_testbed_jobs(void **state)
{
	/* gpu02: only job 4 (4 GPUs, 16:03:57-16:04:57) runs at 16:04:10-16:04:40,
	 * its 4 GPUs idle (0.00006 is what idle engines read) */
	const struct hgpu gpu02[] = {{"GPU-02000000-0000-0000-0000-000000000000", 0.00006, -1, {0}},
				     {"GPU-02000000-0000-0000-0000-000000000001", 0.00006, -1, {0}},
				     {"GPU-02000000-0000-0000-0000-000000000002", 0.00006, -1, {0}},
				     {"GPU-02000000-0000-0000-0000-000000000003", 0.00006, -1, {0}}};
	/* gpu01: jobs 2 (1 GPU), 3 (2 GPUs) and the first attempt of 5 (1 GPU)
	 * share the node at 16:04:10; 2 and 3 at 16:04:30: proportional */
	const struct hgpu gpu01[] = {{"GPU-01000000-0000-0000-0000-000000000000", 0.5, -1, {0}},
				     {"GPU-01000000-0000-0000-0000-000000000001", 0.5, -1, {0}},
				     {"GPU-01000000-0000-0000-0000-000000000002", 0.5, -1, {0}},
				     {"GPU-01000000-0000-0000-0000-000000000003", 0.5, -1, {0}}};
	/* gpu01 later: hpc_job 5 names the requeued job's second attempt */
	const struct hgpu gpu01_late[] = {{"GPU-01000000-0000-0000-0000-000000000000", 0.7, -1, {"5"}},
					  {"GPU-01000000-0000-0000-0000-000000000001", 0.0, -1, {0}},
					  {"GPU-01000000-0000-0000-0000-000000000002", 0.0, -1, {0}},
					  {"GPU-01000000-0000-0000-0000-000000000003", 0.0, -1, {0}}};
	struct tup t0, t1;
	/* gpu03: hpc_job mapping; job 9 on GPUs 0 and 1, idle; 2 and 3 free */
	const struct hgpu gpu03[] = {{"GPU-03000000-0000-0000-0000-000000000000", 0.0, -1, {"9"}},
				     {"GPU-03000000-0000-0000-0000-000000000001", 0.0, -1, {"9"}},
				     {"GPU-03000000-0000-0000-0000-000000000002", 0.9, -1, {0}},
				     {"GPU-03000000-0000-0000-0000-000000000003", 0.0, -1, {0}}};
	/* gpu04: jobs 11 and 13 share GPU 0 (every sample twice), busy */
	const struct hgpu gpu04[] = {{"GPU-04000000-0000-0000-0000-000000000000", 0.8, -1, {"11", "13"}},
				     {"GPU-04000000-0000-0000-0000-000000000001", 0.0, -1, {0}}};
	char *out = NULL;

	ingest_testbed();
	write_scrape(tmpf("gpu02.prom"), "gpu02", "NVIDIA A100-SXM4-80GB", gpu02, 4);
	write_scrape(tmpf("gpu01.prom"), "gpu01", "NVIDIA A100-SXM4-80GB", gpu01, 4);
	write_scrape(tmpf("gpu01-late.prom"), "gpu01", "NVIDIA A100-SXM4-80GB", gpu01_late, 4);
	write_scrape(tmpf("gpu03.prom"), "gpu03", "Tesla V100-SXM2-32GB", gpu03, 4);
	write_scrape(tmpf("gpu04.prom"), "gpu04", "Tesla V100-SXM2-32GB", gpu04, 2);

	t0 = usage_tuples();
	assert_int_equal(ingest("testgpu", tmpf("gpu02.prom"), "2026-11-22T16:04:10Z", NULL, &out), 0);
	assert_non_null(strstr(out, "\"node_exclusive\":4"));
	free(out);
	/* four new bucket rows, each written once, its job with it: no second
	 * version (and index entries) to set the job */
	t1 = usage_tuples_after(&t0, 4);
	assert_int_equal(t1.ins - t0.ins, 4);
	assert_int_equal(t1.upd - t0.upd, 0);
	assert_int_equal(ingest("testgpu", tmpf("gpu02.prom"), "2026-11-22T16:04:40Z", NULL, NULL), 0);
	assert_int_equal(ingest("testgpu", tmpf("gpu01.prom"), "2026-11-22T16:04:10Z", NULL, &out), 0);
	assert_non_null(strstr(out, "\"node_estimated\":4"));
	free(out);
	assert_int_equal(ingest("testgpu", tmpf("gpu01.prom"), "2026-11-22T16:04:30Z", NULL, NULL), 0);
	assert_int_equal(ingest("testgpu", tmpf("gpu01-late.prom"), "2026-11-22T16:06:40Z", NULL, &out), 0);
	assert_non_null(strstr(out, "\"hpc_job\":1,"));
	assert_non_null(strstr(out, "\"unattributed\":3,"));
	free(out);
	assert_int_equal(ingest("testgpu", tmpf("gpu01-late.prom"), "2026-11-22T16:06:50Z", NULL, NULL), 0);
	assert_int_equal(ingest("testgpu", tmpf("gpu03.prom"), "2026-11-22T16:04:10Z", NULL, NULL), 0);
	assert_int_equal(ingest("testgpu", tmpf("gpu03.prom"), "2026-11-22T16:04:20Z", NULL, &out), 0);
	assert_non_null(strstr(out, "\"hpc_job\":2,"));
	assert_non_null(strstr(out, "\"unattributed\":2,"));
	free(out);
	assert_int_equal(ingest("testgpu", tmpf("gpu04.prom"), "2026-11-22T16:04:20Z", NULL, NULL), 0);
	assert_int_equal(ingest("testgpu", tmpf("gpu04.prom"), "2026-11-22T16:04:30Z", NULL, NULL), 0);

	/* job 4 held gpu02 alone: 4 GPUs x 30 s between the two samples, all idle */
	assert_true(job_usage("idle_gpu_s", "4", NULL) == 120.0);
	assert_true(job_usage("busy_gpu_s", "4", NULL) == 0.0);
	assert_string_equal(gl_test_qstrf(g_c, "SELECT string_agg(DISTINCT attribution, ',') FROM gpu_usage u JOIN gpus g USING (gpu_id)"
			       " JOIN nodes n USING (node_id) WHERE n.name = 'gpu02'"), "node-exclusive");
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gpu_usage u JOIN jobs j ON j.job_pk = u.job_pk"
			   " JOIN gpus g ON g.gpu_id = u.gpu_id JOIN nodes n ON n.node_id = g.node_id"
			   " WHERE n.name = 'gpu02' AND j.job_id = '4' AND u.busy_samples = 0 AND u.samples = 2"
			   " AND u.covered_s = 30 AND u.idle_s = 30"), 4);
	/* gpu01 at 16:04:30 (20 s after the previous sample): jobs 2 and 3 hold 1
	 * and 2 of its 4 GPUs: 20 and 40 GPU-seconds, estimated, half busy
	 * (engine active 0.5: busy time is duty x time, sql/048) */
	assert_true(job_usage("observed_gpu_s", "2", NULL) == 20.0);
	assert_true(job_usage("busy_gpu_s", "2", NULL) == 10.0);
	assert_true(job_usage("idle_gpu_s", "2", NULL) == 10.0);
	assert_true(job_usage("busy_gpu_s", "3", NULL) == 20.0);
	assert_true(job_usage("estimated_gpu_s", "3", NULL) == 40.0);
	assert_string_equal(gl_test_qstrf(g_c, "SELECT u.attribution FROM gl_job_usage() u JOIN jobs j USING (job_pk) WHERE j.job_id = '3'"),
			    "node-estimated");
	/* the node's fourth GPU was nobody's at 16:04:30: the shares of a GPU
	 * never exceed its coverage */
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM (SELECT u.gpu_id, u.bucket, u.covered_s, sum(j.gpu_s) s FROM gpu_usage u"
			   " JOIN gpu_usage_jobs j USING (gpu_id, bucket) GROUP BY 1, 2, 3) x WHERE s > covered_s + 1e-9"), 0);
	/* requeue: hpc_job 5 at 16:06:40 is the second attempt (started 16:06:25);
	 * its share never reaches back before its start: 15 s + 10 s, at 0.7 */
	assert_true(job_usage("observed_gpu_s", "5", "COMPLETED") == 25.0);
	assert_true(job_usage("busy_gpu_s", "5", "COMPLETED") == 17.5);
	assert_true(job_usage("observed_gpu_s", "5", "REQUEUED") == 0.0);
	assert_string_equal(gl_test_qstrf(g_c, "SELECT u.attribution FROM gl_job_usage() u JOIN jobs j USING (job_pk)"
			       " WHERE j.job_id = '5' AND j.state = 'COMPLETED'"), "hpc_job");
	/* gpu03: job 9 on two idle GPUs for 10 s; the free GPUs stay unattributed
	 * although the node had other GPU jobs (labels say which GPUs are whose) */
	assert_true(job_usage("idle_gpu_s", "9", NULL) == 20.0);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gpu_usage u JOIN gpus g USING (gpu_id) JOIN nodes n USING (node_id)"
			   " WHERE n.name = 'gpu03' AND u.job_pk IS NULL"), 2);
	/* gpu04 GPU 0: shared by 11 and 13, split (5 s each, 0.8 of it busy),
	 * counted once */
	assert_true(job_usage("observed_gpu_s", "11", NULL) == 5.0);
	assert_true(job_usage("busy_gpu_s", "11", NULL) == 4.0);
	assert_true(job_usage("busy_gpu_s", "13", NULL) == 4.0);
	assert_int_equal(gl_test_qintf(g_c, "SELECT samples * 1000 + covered_s FROM gpu_usage WHERE gpu_id ="
			   " (SELECT gpu_id FROM gpus WHERE uuid = 'GPU-04000000-0000-0000-0000-000000000000')"), 2010);
	/* a window that ends before the buckets sees nothing */
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gl_job_usage('2026-11-22T15:00:00Z', '2026-11-22T16:00:00Z')"), 0);
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gl_job_usage('2026-11-22T16:04:00Z', '2026-11-22T16:05:00Z') u"
			   " JOIN jobs j USING (job_pk) WHERE j.job_id IN ('2', '3', '4', '9', '11', '13')"), 6);
	/* gl_job_usage_steps (sql/026), which chargeback reads for all its steps
	 * at once, is gl_job_usage step by step: an empty step, the 16:00
	 * bucket's, and a step after a gap holding the 16:05 bucket (job 5's
	 * second attempt), which no step counts */
	{
		static const char steps[] = "ARRAY['2026-11-22T15:00:00Z', '2026-11-22T16:00:00Z', '2026-11-22T16:10:00Z']::timestamptz[],"
					    " ARRAY['2026-11-22T16:00:00Z', '2026-11-22T16:05:00Z', '2026-11-22T17:00:00Z']::timestamptz[]";
		static const char cols[] = "string_agg(concat_ws(':', n, cluster_id, job_pk, observed_gpu_s, busy_gpu_s, idle_gpu_s,"
					   " nodata_gpu_s, estimated_gpu_s, sample_busy_gpu_s, sample_idle_gpu_s, gpu_buckets, attribution),"
					   " ',' ORDER BY n, job_pk)";
		char want[8192];
		snprintf(want, sizeof want, "%s",
			 gl_test_qstrf(g_c, "SELECT %s FROM (SELECT 1 AS n, * FROM gl_job_usage('2026-11-22T15:00:00Z', '2026-11-22T16:00:00Z')"
				       " UNION ALL SELECT 2, * FROM gl_job_usage('2026-11-22T16:00:00Z', '2026-11-22T16:05:00Z')"
				       " UNION ALL SELECT 3, * FROM gl_job_usage('2026-11-22T16:10:00Z', '2026-11-22T17:00:00Z')) x", cols));
		assert_true(strlen(want) > 0);
		assert_string_equal(gl_test_qstrf(g_c, "SELECT %s FROM gl_job_usage_steps(%s)", cols, steps), want);
		/* jobs 2, 3, 4, 9, 11, 13 and the first attempt of 5 */
		assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gl_job_usage_steps(%s) WHERE n = 2", steps), 7);
		assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM gl_job_usage_steps(%s) WHERE n <> 2", steps), 0);
		/* the gap's bucket is there, and is job 5's */
		assert_true(job_usage("observed_gpu_s", "5", "COMPLETED") > 0);
	}
}

static const char *snapshot(void)
{
	return gl_test_qstrf(g_c, "SELECT md5(coalesce((SELECT string_agg(u::text, ',' ORDER BY gpu_id, bucket) FROM gpu_usage u), '') ||"
		  " coalesce((SELECT string_agg(j::text, ',' ORDER BY gpu_id, bucket, job_pk) FROM gpu_usage_jobs j), '') ||"
		  " coalesce((SELECT string_agg(s::text, ',' ORDER BY gpu_id) FROM dcgm_gpu_state s), '') ||"
		  " coalesce((SELECT string_agg(g::text, ',' ORDER BY gpu_id) FROM gpus g), ''))");
}

static void test_reingest_is_idempotent(void **state)
{
	char before[64], *out = NULL;
	/* the same scrape at the same time again (after the attribution test's data) */
	snprintf(before, sizeof before, "%s", snapshot());
	assert_int_equal(ingest("testgpu", tmpf("gpu02.prom"), "2026-11-22T16:04:40Z", NULL, &out), 0);
	assert_non_null(strstr(out, "\"applied\":0,\"stale\":4"));
	free(out);
	assert_int_equal(ingest("testgpu", tmpf("gpu02.prom"), "2026-11-22T16:04:10Z", NULL, &out), 0);
	assert_non_null(strstr(out, "\"applied\":0,\"stale\":4"));
	free(out);
	assert_string_equal(snapshot(), before);
	/* the watermark stays at the newest time ingested */
	assert_string_equal(gl_test_qstrf(g_c, "SELECT s.watermark FROM ingest_state s JOIN clusters c USING (cluster_id)"
			       " WHERE s.source = 'dcgm' AND c.name = 'testgpu'"), "2026-11-22 16:06:50+00");
}

static void test_energy_counter_reset(void **state)
{
	struct hgpu g = {"GPU-eeee0000-0000-0000-0000-000000000001", 0.3, 0, {0}};
	static const struct {
		const char *at;
		long long mj;
	} steps[] = {
		{"2026-11-22T12:00:00Z", 1000}, {"2026-11-22T12:00:30Z", 5000},
		{"2026-11-22T12:01:00Z", 200}, /* reboot: the counter restarted */
		{"2026-11-22T12:01:30Z", 700},
	};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		char name[64];
		snprintf(name, sizeof name, "energy-%zu.prom", i);
		g.energy_mj = steps[i].mj;
		write_scrape(tmpf(name), "node-e", "NVIDIA H100 80GB HBM3", &g, 1);
		assert_int_equal(ingest("energy", tmpf(name), steps[i].at, NULL, NULL), 0);
	}
	assert_string_equal(gl_test_qstrf(g_c, "SELECT string_agg(to_char(bucket, 'HH24:MI') || '=' || coalesce(energy_mj::text, '-') || '/' ||"
			       " energy_resets, ' ' ORDER BY bucket) FROM gpu_usage WHERE gpu_id ="
			       " (SELECT gpu_id FROM gpus WHERE uuid = 'GPU-eeee0000-0000-0000-0000-000000000001')"),
			    "12:00=4000/0 12:01=700/1");
	/* the counter's last value survives between runs (and buckets) */
	assert_int_equal(gl_test_qintf(g_c, "SELECT energy_last_mj::bigint FROM dcgm_gpu_state WHERE gpu_id ="
			   " (SELECT gpu_id FROM gpus WHERE uuid = 'GPU-eeee0000-0000-0000-0000-000000000001')"), 700);
}

static void test_pod_attribution(void **state)
{
	char *out = NULL;
	/* the pod the real-format federate fixture names (exported_namespace /
	 * exported_pod), as the kube source would store it: job_id = name = pod */
	PQclear(PQexec(g_c, "INSERT INTO jobs (cluster_id, job_key, job_id, name, namespace, state, start_at, gpu_micro, nodes)"
			    " SELECT cluster_id, 'pod:uid-train', 'train-7f9c-0', 'train-7f9c-0', 'ml-team', 'RUNNING',"
			    " '2026-11-22T09:00:00Z', 1000000, '{gpu-node-k8s-1}' FROM clusters WHERE name = 'k8s'"));
	assert_int_equal(gl_test_qintf(g_c, "SELECT count(*) FROM jobs WHERE job_key = 'pod:uid-train'"), 1);
	/* 30 s after the first ingest of the same GPU (test_inventory_from_real_scrapes) */
	assert_int_equal(ingest("k8s", FX "handwritten_k8s_federate.prom", "2026-11-22T10:00:30Z", "gpu-node-k8s-1", &out), 4);
	assert_non_null(strstr(out, "\"pod\":1,"));
	free(out);
	/* engine active 0.912: 27.36 of the 30 s busy, the rest idle */
	assert_string_equal(gl_test_qstrf(g_c, "SELECT u.attribution || ':' || round(u.busy_gpu_s::numeric, 6) || ':'"
			       " || round(u.idle_gpu_s::numeric, 6) FROM gl_job_usage() u"
			       " JOIN jobs j USING (job_pk) WHERE j.job_key = 'pod:uid-train'"), "pod:27.360000:2.640000");
}

/* A job that reaches the database after its GPU was scraped (sacct is
 * polled every few minutes, the exporter every few seconds) still gets
 * those samples: they wait in dcgm_pending and the jobs ingest claims them
 * in its own transaction; ingesting the job again claims nothing twice;
 * a label no job claims is dropped six hours behind the newest sample. */
#define LATE " WHERE cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'late')"

static void test_late_job_claims_its_samples(void **state)
{
	/* gpu09: GPU 0 labelled with job 777 (idle), GPU 1 free */
	const struct hgpu g[] = {{"GPU-09000000-0000-0000-0000-000000000000", 0.0, -1, {"777"}},
				 {"GPU-09000000-0000-0000-0000-000000000001", 0.9, -1, {0}}};
	static const char *const at[] = {"2026-11-21T10:00:00Z", "2026-11-21T10:01:00Z", "2026-11-21T10:02:00Z"};
	const char *sacct = tmpf("late-sacct.txt");
	struct gl_test_out o;
	FILE *f;
	(void)state;
	write_scrape(tmpf("late.prom"), "gpu09", "NVIDIA A100-SXM4-80GB", g, 2);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ingest("late", tmpf("late.prom"), at[i], NULL, NULL), 0);
	/* three samples of GPU 0 wait (the first covers nothing: no sample before it) */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM dcgm_pending" LATE), 3);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(dt_s) FROM dcgm_pending" LATE), 120);
	/* the job: 777 on gpu09 since 09:59:30, still running */
	f = fopen(sacct, "w");
	assert_non_null(f);
	fputs("777|777|late|a100|normal|teama|alice|2001|alice|2001|2026-11-21T09:59:00|2026-11-21T09:59:00|"
	      "2026-11-21T09:59:30|Unknown|00:10:00|600|0:0|RUNNING|1|1|1|1000M|"
	      "billing=1,cpu=1,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1000M,node=1|"
	      "01:00:00|gpu09|late|9001|00:00:00|\n",
	      f);
	fclose(f);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "late", "--file", sacct,
					     "--fields", g_fields, NULL),
				 0);
		assert_int_equal(o.status, 0);
		gl_test_out_fini(&o);
		assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM dcgm_pending" LATE), 0);
		/* 2 x 60 s, idle, by its hpc_job label */
		assert_true(job_usage("observed_gpu_s", "777", NULL) == 120.0);
		assert_true(job_usage("idle_gpu_s", "777", NULL) == 120.0);
		assert_string_equal(gl_test_qstr(g_c, "SELECT u.attribution FROM gl_job_usage() u JOIN jobs j USING (job_pk)"
						      " WHERE j.job_id = '777'"),
				    "hpc_job");
		assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpu_usage u JOIN jobs j USING (job_pk)"
						   " WHERE j.job_id = '777'"),
				 gl_test_qint(g_c, "SELECT count(DISTINCT bucket) FROM gpu_usage_jobs uj JOIN jobs j"
						   " USING (job_pk) WHERE j.job_id = '777'"));
	}
	/* a label no job ever claims waits six hours behind the newest scrape, no longer */
	{
		const struct hgpu g2[] = {{"GPU-09000000-0000-0000-0000-000000000000", 0.0, -1, {"778"}},
					  {"GPU-09000000-0000-0000-0000-000000000001", 0.9, -1, {0}}};
		write_scrape(tmpf("late2.prom"), "gpu09", "NVIDIA A100-SXM4-80GB", g2, 2);
		assert_int_equal(ingest("late", tmpf("late2.prom"), "2026-11-21T10:05:00Z", NULL, NULL), 0);
		assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM dcgm_pending" LATE), 1);
		assert_int_equal(ingest("late", tmpf("late2.prom"), "2026-11-21T16:10:00Z", NULL, NULL), 0);
		assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(to_char(at AT TIME ZONE 'UTC', 'HH24:MI'), ',')"
						      " FROM dcgm_pending" LATE),
				    "16:10");
	}
	/* the free GPU's samples never waited: they name no job */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpu_usage_jobs uj JOIN gpus gp USING (gpu_id)"
					   " WHERE gp.uuid = 'GPU-09000000-0000-0000-0000-000000000001'"),
			 0);
}

/* gl_job_usage_steps names, per step and job, the least certain attribution
 * among the job's buckets (gl_attribution_rank's highest), whatever the
 * order of the rows: buckets of every kind mixed in one step, one kind in
 * the next. Rows of a day nobody else reads, rolled back. */
static int exec_ok(const char *sql)
{
	PGresult *r = PQexec(g_c, sql);
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
	if (!ok)
		fprintf(stderr, "%s: %s", sql, PQerrorMessage(g_c));
	PQclear(r);
	return ok;
}

static void test_steps_attribution_is_the_least_certain(void **state)
{
	static const char *const want[][2] = {
		{"1 hpc_job,node-estimated,pod", "node-estimated"},
		{"1 node-exclusive,pod", "node-exclusive"},
		{"1 hpc_job,pod", "pod"},
		{"2 hpc_job", "hpc_job"},
	};
	(void)state;
	assert_true(exec_ok("BEGIN"));
	assert_true(exec_ok("SELECT gl_ensure_dcgm_partitions('2030-01-01', '2030-01-02')"));
	/* job 900001 mixes three kinds in the first hour, job 900002 two,
	 * job 900003 two; in the second hour each has hpc_job buckets only */
	assert_true(exec_ok("INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples,"
				 " busy_samples, nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s)"
				 " SELECT 900000 + k, timestamptz '2030-01-01Z' + (h * 60 + m) * interval '1 minute', 900000 + j, 1,"
				 "  CASE WHEN h = 1 THEN 'hpc_job' ELSE (ARRAY[ARRAY['pod', 'node-estimated', 'hpc_job'],"
				 "   ARRAY['pod', 'node-exclusive', 'pod'], ARRAY['hpc_job', 'pod', 'hpc_job']])[j][k] END,"
				 "  1, 0, 0, 60, 0, 60"
				 " FROM generate_series(1, 3) j, generate_series(1, 3) k, generate_series(0, 1) h,"
				 "  generate_series(0, 50, 10) m"));
	for (int j = 1; j <= 3; j++)
		for (int n = 1; n <= 2; n++) {
			char got[256], exp[256];
			snprintf(got, sizeof got, "%s",
				 gl_test_qstrf(g_c,
					       "SELECT u.n || ' ' || (SELECT string_agg(DISTINCT attribution, ',')"
					       " FROM gpu_usage_jobs WHERE job_pk = %d AND bucket >= u.starts[u.n]"
					       " AND bucket < u.starts[u.n] + interval '1 hour') || '|' || u.attribution"
					       " FROM (SELECT s.*, ARRAY[timestamptz '2030-01-01Z', '2030-01-01 01:00Z'] AS starts"
					       "  FROM gl_job_usage_steps(ARRAY[timestamptz '2030-01-01Z', '2030-01-01 01:00Z'],"
					       "  ARRAY[timestamptz '2030-01-01 01:00Z', '2030-01-01 02:00Z']) s) u"
					       " WHERE u.job_pk = %d AND u.n = %d",
					       900000 + j, 900000 + j, n));
			snprintf(exp, sizeof exp, "%s|%s", want[n == 1 ? j - 1 : 3][0], want[n == 1 ? j - 1 : 3][1]);
			assert_string_equal(got, exp);
		}
	assert_true(exec_ok("ROLLBACK"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inventory_from_real_scrapes),
		cmocka_unit_test(test_gpu_absent_after_grace),
		cmocka_unit_test(test_gpu_vanishes_while_node_answers),
		cmocka_unit_test(test_target_stops),
		cmocka_unit_test(test_gpu_moves_node),
		cmocka_unit_test(test_attribution_to_testbed_jobs),
		cmocka_unit_test(test_reingest_is_idempotent),
		cmocka_unit_test(test_energy_counter_reset),
		cmocka_unit_test(test_pod_attribution),
		cmocka_unit_test(test_late_job_claims_its_samples),
		cmocka_unit_test(test_steps_attribution_is_the_least_certain),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
