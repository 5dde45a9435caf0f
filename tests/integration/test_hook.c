/* The idle hook end to end through the real binary and a real PostgreSQL:
 * sacct running jobs + dcgm-exporter scrapes (HAND-WRITTEN below in the
 * exporter's line format) where one job idles, one is busy, one went busy
 * then idle, one holds memory but computes nothing, one has stale data,
 * one is excluded, one allow-listed, and one is named "x; rm -rf /". The
 * hook runs twice dry-run and then with --act against scancel / warn
 * stand-in scripts that record their argv: one warning and one action per
 * job, a failed action retried, the circuit breaker, everything audited.
 * Then the API: /v1/idle/candidates, /v1/hook/actions (GET and POST). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/common.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char g_dsn[512], g_dir[256], g_fields[1024];
static PGconn *g_c;
static time_t g_end; /* the last scrape; now is a few seconds later */
static struct gl_test_daemon g_d; /* stopped by teardown when a test failed with it running */

enum kind { IDLE, BUSY, BUSY_THEN_IDLE, MEMHOG, STALE };

static const struct tjob {
	int id;
	const char *user, *name, *node;
	enum kind kind;
} jobs[] = {
	{101, "alice", "idle-notebook", "gpu01", IDLE},
	{102, "bob", "training", "gpu02", BUSY},
	{103, "carl", "busy-then-idle", "gpu03", BUSY_THEN_IDLE},
	{104, "dora", "holds-memory", "gpu04", MEMHOG},
	{105, "erin", "stale-exporter", "gpu05", STALE},
	{106, "mallory", "x; rm -rf /", "gpu06", IDLE},
	{107, "root", "excluded-user", "gpu07", IDLE},
	{108, "vip", "allow-listed", "gpu08", IDLE},
};
#define NJOBS (sizeof jobs / sizeof jobs[0])

static void iso(time_t t, char *b, size_t n)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(b, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *path(const char *name)
{
	static char buf[8][400];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
	return buf[k];
}

static void write_file(const char *p, const char *text, int exec)
{
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	if (exec)
		chmod(p, 0755);
}

/* The config: the stand-ins record "[arg]" per argument, one line per call. */
static void write_config(const char *name, const char *extra_policy, int max_actions)
{
	char buf[4096];
	snprintf(buf, sizeof buf,
		 "log:\n  level: warn\n"
		 "hook:\n"
		 "  act: true\n"
		 "  max_actions_per_run: %d\n"
		 "  max_data_age_s: 900\n"
		 "  lock_file: %s\n"
		 "  policies:\n"
		 "    - name: slurm-idle\n"
		 "      scope: {clusters: hooktest}\n"
		 "      exclude: {users: root, allow_list_file: %s}\n"
		 "%s"
		 "      warn_command: %s {job_id} {job_name} {user} {idle_minutes} {stage} {action_at}\n"
		 "      slurm_command: %s {job_id}\n",
		 max_actions, path("hook.lock"), path("allow.txt"), extra_policy, path("warn.sh"), path("scancel.sh"));
	write_file(path(name), buf, 0);
}

static int hook(const char *config, const char *mode, const char *format, char **out)
{
	struct gl_test_out o;
	int st;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", config, "hook", "idle", mode, "--format", format, NULL), 0);
	st = o.status;
	if (out)
		*out = strdup(o.out);
	if (getenv("GL_TEST_VERBOSE"))
		fprintf(stderr, "hook idle %s: exit %d\n%s\n%s\n", mode, st, o.out, o.err);
	gl_test_out_fini(&o);
	return st;
}

static int count_lines(const char *p, const char *needle)
{
	FILE *f = fopen(p, "r");
	char line[1024];
	int n = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		n += !needle || strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

static cJSON *parse_report(const char *text)
{
	cJSON *r = cJSON_Parse(text);
	if (!r)
		fail_msg("not JSON: %s", text);
	return r;
}

/* "101,103" from the job_id fields of an array of the report */
static void ids(const cJSON *r, const char *arr, char *out, size_t n)
{
	const cJSON *it;
	out[0] = '\0';
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r, arr))
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "job_id");
		snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? "," : "", id->valuestring);
	}
}

static int setup(void **state)
{
	FILE *f;
	char cmd[600];
	time_t now = time(NULL), t0;
	char s0[32];

	if (gl_test_db_fresh("gl_test_hook", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	if (gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-hook-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	/* stand-ins: one line per call, each argument in brackets */
	snprintf(cmd, sizeof cmd, "#!/bin/sh\nprintf '[%%s]' \"$@\" >> '%s'\necho >> '%s'\n", path("warn.log"), path("warn.log"));
	write_file(path("warn.sh"), cmd, 1);
	/* scancel fails once for job 103 while the marker exists */
	snprintf(cmd, sizeof cmd,
		 "#!/bin/sh\nprintf '[%%s]' \"$@\" >> '%s'\necho >> '%s'\n"
		 "if [ \"$1\" = 103 ] && [ -e '%s' ]; then rm -f '%s'; echo 'scancel: error: Kill job error' >&2; exit 1; fi\n",
		 path("scancel.log"), path("scancel.log"), path("fail-once"), path("fail-once"));
	write_file(path("scancel.sh"), cmd, 1);
	write_file(path("fail-once"), "", 0);
	write_file(path("allow.txt"), "# spared on request\nuser:vip\n", 0);
	write_file(path("canary"), "still here\n", 0);

	/* three hours of 5-minute scrapes ending now (bucket-aligned) */
	g_end = now - now % 300;
	t0 = g_end - 180 * 60;
	iso(t0 - 60, s0, sizeof s0);
	f = fopen(path("sacct.txt"), "w");
	if (!f)
		return -1;
	for (size_t i = 0; i < NJOBS; i++) {
		char st[32];
		iso(t0, st, sizeof st);
		fprintf(f,
			"%d|%d|hooktest|gpu|normal|teama|%s|2001|%s|2001|%.19s|%.19s|%.19s|Unknown|03:00:00|10800|0:0|RUNNING|1|1|1|"
			"1000M|billing=1,cpu=1,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1000M,node=1|"
			"1-00:00:00|%s|%s|%d|00:00:00|\n",
			jobs[i].id, jobs[i].id, jobs[i].user, jobs[i].user, s0, s0, st, jobs[i].node, jobs[i].name, 9000 + jobs[i].id);
	}
	fclose(f);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	PQfinish(g_c);
	if (g_d.pid > 0)
		gl_test_daemon_stop(&g_d);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
	return 0;
}

static void scrape(time_t t, int minute)
{
	FILE *f = fopen(path("scrape.prom"), "w");
	char at[32];
	struct gl_test_out o;
	assert_non_null(f);
	fputs("# hand-written for tests/integration/test_hook.c (dcgm-exporter format)\n"
	      "# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n", f);
	for (size_t i = 0; i < NJOBS; i++) {
		const struct tjob *j = &jobs[i];
		double engine = j->kind == BUSY || (j->kind == BUSY_THEN_IDLE && minute < 60) ? 0.82 : 0.00004;
		int fb = engine > 0.01 || j->kind == MEMHOG ? 30512 : 0;
		char lab[400];
		/* its exporter went away an hour before the last scrape: older
		 * than hook.max_data_age_s, yet inside every rule's look-back
		 * (120 min before the hook's now, which is up to 5 min after the
		 * aligned last scrape plus however long the ingest took) */
		if (j->kind == STALE && minute > 120)
			continue;
		snprintf(lab, sizeof lab,
			 "{gpu=\"0\",UUID=\"GPU-00000000-0000-4000-8000-000000000%03d\",pci_bus_id=\"00000000:3B:00.0\","
			 "device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"%s\",hpc_job=\"%d\"}",
			 j->id, j->node, j->id);
		fprintf(f, "DCGM_FI_PROF_GR_ENGINE_ACTIVE%s %f\n", lab, engine);
		fprintf(f, "DCGM_FI_DEV_GPU_UTIL%s %d\n", lab, engine > 0.01 ? 97 : 0);
		fprintf(f, "DCGM_FI_DEV_FB_USED%s %d\n", lab, fb);
		fprintf(f, "DCGM_FI_DEV_FB_FREE%s %d\n", lab, 80919 - fb);
		fprintf(f, "DCGM_FI_DEV_POWER_USAGE%s %f\n", lab, engine > 0.01 ? 312.5 : 61.2);
	}
	fclose(f);
	iso(t, at, sizeof at);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "dcgm", "--cluster", "hooktest", "--file",
				     path("scrape.prom"), "--at", at, NULL), 0);
	if (o.status)
		fail_msg("ingest dcgm at %s: exit %d: %s", at, o.status, o.err);
	gl_test_out_fini(&o);
}

static void test_ingest(void **state)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "hooktest", "--file",
				     path("sacct.txt"), "--fields", g_fields, NULL), 0);
	if (o.status)
		fail_msg("ingest sacct: %s", o.err);
	gl_test_out_fini(&o);
	for (int m = 0; m <= 180; m += 5)
		scrape(g_end - (180 - m) * 60, m);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE end_at IS NULL AND gpu_milli = 1000"), NJOBS);
	/* every job's GPU is attributed by its hpc_job label */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(DISTINCT job_pk) FROM gpu_usage_jobs WHERE attribution = 'hpc_job'"),
			 NJOBS);
}

/* sliding 90 min, warning at 60 */
static const char sliding[] = "      rule: {kind: sliding, t1_min: 60, t3_min: 90}\n";

static void test_dry_run_twice(void **state)
{
	char *out, got[256];
	cJSON *r;
	write_config("sliding.yaml", sliding, 10);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(hook(path("sliding.yaml"), "--dry-run", "json", &out), 3);
		r = parse_report(out);
		ids(r, "candidates", got, sizeof got);
		assert_string_equal(got, "101,103,104,106");
		ids(r, "no_data", got, sizeof got);
		assert_string_equal(got, "105");
		ids(r, "spared", got, sizeof got);
		assert_string_equal(got, "107,108");
		assert_string_equal(cJSON_GetObjectItemCaseSensitive(r, "mode")->valuestring, "dry-run");
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "actions")), 0);
		{
			const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "candidates"), 0);
			const char *keys[] = {"cluster", "job_id", "user", "owner", "gpus", "idle_minutes", "idle_gpu_seconds",
					      "idle_cost_micros", "rule", "stage", "policy"};
			for (size_t k = 0; k < GL_ARRAY_LEN(keys); k++)
				assert_non_null(cJSON_GetObjectItemCaseSensitive(c0, keys[k]));
			assert_string_equal(cJSON_GetObjectItemCaseSensitive(c0, "stage")->valuestring, "act");
			assert_string_equal(cJSON_GetObjectItemCaseSensitive(c0, "next_stage")->valuestring, "warn1");
			/* counted over the look-back (t3 + max_data_age + 15 min = 120 min):
			 * at least the action threshold, at most the 180 idle minutes */
			assert_true(cJSON_GetObjectItemCaseSensitive(c0, "idle_minutes")->valuedouble >= 90);
			assert_true(cJSON_GetObjectItemCaseSensitive(c0, "idle_minutes")->valuedouble <= 180);
		}
		cJSON_Delete(r);
		free(out);
	}
	/* nothing ran, nothing was recorded; the decisions were audited */
	assert_int_equal(count_lines(path("warn.log"), NULL), 0);
	assert_int_equal(count_lines(path("scancel.log"), NULL), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages"), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.candidate'"), 8);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.no_data'"
					   " AND detail->>'reason' LIKE 'last exporter sample%'"), 2);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.spared'"
					   " AND detail->>'reason' IN ('exclude.users: root', 'allow-list: user:vip')"), 4);
	/* acting needs --act: the dry-run flag never acts, even with hook.act */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.run'"
					   " AND detail->>'mode' = 'dry-run' AND (detail->>'exit_code')::int = 3"), 2);
}

static void test_rules_and_memory(void **state)
{
	char *out, got[256];
	cJSON *r;
	/* fixed (idle since start, 60/120): the job that was busy first is spared */
	write_config("fixed.yaml", "      rule: {kind: fixed, t1_min: 60, t3_min: 120}\n", 10);
	assert_int_equal(hook(path("fixed.yaml"), "--dry-run", "json", &out), 3);
	r = parse_report(out);
	ids(r, "candidates", got, sizeof got);
	assert_string_equal(got, "101,104,106");
	cJSON_Delete(r);
	free(out);
	/* reset (accumulating): caught like sliding */
	write_config("reset.yaml", "      rule: {kind: reset, t1_min: 60, t3_min: 90}\n", 10);
	assert_int_equal(hook(path("reset.yaml"), "--dry-run", "json", &out), 3);
	r = parse_report(out);
	ids(r, "candidates", got, sizeof got);
	assert_string_equal(got, "101,103,104,106");
	cJSON_Delete(r);
	free(out);
	/* memory in use counts as busy: the job holding 30 GB is not idle */
	write_config("memory.yaml", "      signal: {memory_counts_as_busy: true}\n      rule: {kind: sliding, t1_min: 60, t3_min: 90}\n",
		     10);
	assert_int_equal(hook(path("memory.yaml"), "--dry-run", "text", &out), 3);
	assert_non_null(strstr(out, "candidates: 3"));
	assert_null(strstr(out, "hooktest/104 "));
	free(out);
	/* an invalid policy: nothing runs, file:line named */
	write_config("bad.yaml", "      rule: {kind: sliding, t1_min: 90, t3_min: 60}\n", 10);
	{
		struct gl_test_out o;
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("bad.yaml"), "hook", "idle", "--act", NULL), 0);
		assert_int_equal(o.status, 1);
		assert_non_null(strstr(o.err, "bad.yaml:9: hook.policies[0] (slurm-idle): rule: t1_min (90) must be below t3_min (60)"));
		gl_test_out_fini(&o);
	}
	assert_int_equal(count_lines(path("scancel.log"), NULL), 0);
}

/* The idle cost is priced across a rate change inside the look-back (it
 * was all priced at the rate in force now). a100: 1.00 an hour until T =
 * the last scrape - 30 min, 5.00 from T. Job 101 idles throughout, so of
 * its I idle GPU-seconds, A are after T, with the last scrape - T <= A <=
 * now - T: cost = ((I - A) x 1,000,000 + A x 5,000,000) / 3,600 micros. */
static void test_idle_cost_across_rate_change(void **state)
{
	char *out, t[32], yaml[512];
	const time_t at = g_end - 30 * 60;
	time_t t_after;
	cJSON *r, *it;
	long long idle = -1, cost = -1;
	struct gl_test_out o;
	iso(at, t, sizeof t);
	snprintf(yaml, sizeof yaml,
		 "rates:\n  - model: a100\n    per_gpu_hour: \"1.00\"\n    to: %s\n"
		 "  - model: a100\n    per_gpu_hour: \"5.00\"\n    from: %s\n",
		 t, t);
	write_file(path("rates.yaml"), yaml, 0);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path("rates.yaml"), NULL), 0);
	if (o.status)
		fail_msg("rates load: %s", o.err);
	gl_test_out_fini(&o);
	write_config("sliding.yaml", sliding, 10);
	assert_int_equal(hook(path("sliding.yaml"), "--dry-run", "json", &out), 3);
	t_after = time(NULL);
	r = parse_report(out);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r, "candidates"))
	{
		if (strcmp(cJSON_GetObjectItemCaseSensitive(it, "job_id")->valuestring, "101"))
			continue;
		idle = (long long)cJSON_GetObjectItemCaseSensitive(it, "idle_gpu_seconds")->valuedouble;
		assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(it, "idle_cost_micros")));
		cost = (long long)cJSON_GetObjectItemCaseSensitive(it, "idle_cost_micros")->valuedouble;
	}
	cJSON_Delete(r);
	free(out);
	/* the look-back is 120 min: more than the 30 min after T */
	assert_true(idle > 3600);
	{
		long long lo = (idle * 1000000 + 1800LL * 4000000) / 3600 - 1;
		long long hi = (idle * 1000000 + (long long)(t_after - at) * 4000000) / 3600 + 1;
		if (cost < lo || cost > hi)
			fail_msg("idle %lld s: cost %lld micros, want %lld..%lld (all at 5.00: %lld)", idle, cost, lo, hi,
				 idle * 5000000 / 3600);
	}
}

static void test_act(void **state)
{
	char *out, got[256];
	cJSON *r;
	write_config("sliding.yaml", sliding, 10);
	write_config("breaker.yaml", sliding, 3);
	/* run 1: the warnings */
	assert_int_equal(hook(path("sliding.yaml"), "--act", "json", &out), 0);
	r = parse_report(out);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "actions")), 4);
	cJSON_Delete(r);
	free(out);
	assert_int_equal(count_lines(path("warn.log"), NULL), 4);
	assert_int_equal(count_lines(path("scancel.log"), NULL), 0);
	/* the job name is one argv element: the stand-in got it whole */
	assert_int_equal(count_lines(path("warn.log"), "[106][x; rm -rf /][mallory]["), 1);
	assert_int_equal(count_lines(path("canary"), "still here"), 1);
	/* the circuit breaker: 4 actions due, at most 3 per run: none */
	assert_int_equal(hook(path("breaker.yaml"), "--act", "json", &out), 1);
	r = parse_report(out);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "breaker"), "tripped")));
	cJSON_Delete(r);
	free(out);
	assert_int_equal(count_lines(path("scancel.log"), NULL), 0);
	/* run 2: the actions; 103's scancel fails once and is reported */
	assert_int_equal(hook(path("sliding.yaml"), "--act", "text", &out), 1);
	assert_non_null(strstr(out, "ran act hooktest/103: "));
	assert_non_null(strstr(out, "FAILED (exit 1)"));
	assert_non_null(strstr(out, "retried by the next run"));
	free(out);
	assert_int_equal(count_lines(path("scancel.log"), NULL), 4);
	/* run 3: only the failed one is retried */
	assert_int_equal(hook(path("sliding.yaml"), "--act", "json", &out), 0);
	r = parse_report(out);
	ids(r, "actions", got, sizeof got);
	assert_string_equal(got, "103");
	cJSON_Delete(r);
	free(out);
	/* run 4: nothing left to do */
	assert_int_equal(hook(path("sliding.yaml"), "--act", "json", &out), 0);
	r = parse_report(out);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "actions")), 0);
	cJSON_Delete(r);
	free(out);

	/* exactly one warning and one successful action per job */
	assert_int_equal(count_lines(path("warn.log"), NULL), 4);
	for (int id = 101; id <= 106; id++) {
		char w[16];
		snprintf(w, sizeof w, "[%d]", id);
		int want = id == 101 || id == 103 || id == 104 || id == 106;
		assert_int_equal(count_lines(path("warn.log"), w), want);
		assert_int_equal(count_lines(path("scancel.log"), w), want ? (id == 103 ? 2 : 1) : 0);
	}
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages WHERE status = 'done' AND stage = 'warn1'"), 4);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages WHERE status = 'done' AND stage = 'act'"), 4);
	assert_int_equal(gl_test_qint(g_c, "SELECT attempts FROM hook_stages s JOIN jobs j USING (job_pk)"
					   " WHERE j.job_id = '103' AND s.stage = 'act'"), 2);
	/* every command audited with its argv, exit status and stderr */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.warn' AND outcome = 'ok'"), 4);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.act' AND outcome = 'ok'"), 4);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.act' AND outcome = 'error'"
					   " AND object = 'job:hooktest/103' AND (detail->>'exit_status')::int = 1"
					   " AND detail->>'stderr' LIKE 'scancel: error: Kill job error%'"
					   " AND detail->'argv'->>1 = '103'"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.warn'"
					   " AND detail->'argv'->>2 = 'x; rm -rf /'"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.run' AND detail->>'mode' = 'act'"),
			 5);
	/* the stale job was never acted on */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages s JOIN jobs j USING (job_pk) WHERE j.job_id IN ('102', '105', '107', '108')"),
			 0);
	/* the chain is intact */
	{
		struct gl_test_out o;
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "verify", NULL), 0);
		assert_int_equal(o.status, 0);
		gl_test_out_fini(&o);
	}
}

static void test_overlapping_runs(void **state)
{
	/* a second run while the lock is held leaves without acting */
	char *out;
	cJSON *r;
	PGconn *other = PQconnectdb(g_dsn);
	char sql[96];
	snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%lld)", 0x676c686f6f6bLL);
	PQclear(PQexec(other, sql));
	assert_int_equal(hook(path("sliding.yaml"), "--act", "json", &out), 0);
	r = parse_report(out);
	assert_non_null(strstr(cJSON_GetObjectItemCaseSensitive(r, "skipped")->valuestring, "database lock"));
	cJSON_Delete(r);
	free(out);
	PQfinish(other);
}

static void test_api(void **state)
{
	struct gl_test_daemon *dp = &g_d;
	struct gl_test_http h;
	char cfg[4096], hook_tok[80], viewer_tok[80], auth[128];
	cJSON *r;
	char got[256];
	FILE *f = fopen(path("sliding.yaml"), "r");
	size_t n;
	assert_non_null(f);
	n = fread(cfg, 1, sizeof cfg - 1, f);
	cfg[n] = '\0';
	fclose(f);
	assert_int_equal(gl_test_daemon_start(dp, g_dsn, cfg, NULL), 0);
	assert_int_equal(gl_test_token_create(g_dsn, "hooker", "hook", NULL, hook_tok, sizeof hook_tok, NULL), 0);
	assert_int_equal(gl_test_token_create(g_dsn, "looker", "viewer", NULL, viewer_tok, sizeof viewer_tok, NULL), 0);

	/* the candidates as the CLI computes them (dry-run): the acted-on jobs
	 * are still running in the database, with every stage done */
	r = gl_test_get_json(dp->port, "/v1/idle/candidates?policy=slurm-idle", 200);
	assert_non_null(r);
	ids(r, "candidates", got, sizeof got);
	assert_string_equal(got, "101,103,104,106");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "candidates"), 0),
							      "next_stage")->valuestring, "none");
	ids(r, "no_data", got, sizeof got);
	assert_string_equal(got, "105");
	cJSON_Delete(r);
	assert_int_equal(gl_test_http(dp->port, "GET", "/v1/idle/candidates?policy=nope", NULL, 0, NULL, &h), 0);
	assert_int_equal(h.status, 400);
	assert_non_null(strstr(h.body, "\"param\":\"policy\""));
	/* in the API's words: no CLI flag, no config file path */
	assert_non_null(strstr(h.body, "policy: no policy named 'nope'"));
	assert_null(strstr(h.body, "--policy"));
	assert_null(strstr(h.body, ".yaml"));
	gl_test_http_fini(&h);

	/* roles: hook yes, viewer no */
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", hook_tok);
	assert_int_equal(gl_test_http(dp->port, "GET", "/v1/hook/actions?window=1d", NULL, 0, (const char *const[]){auth, NULL}, &h), 0);
	assert_int_equal(h.status, 200);
	r = cJSON_Parse(h.body);
	gl_test_http_fini(&h);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "actions")), 9);
	{
		const cJSON *a0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "actions"), 0);
		const char *keys[] = {"at", "cluster", "job_id", "owner", "policy", "stage", "command", "exit_status", "ok"};
		for (size_t k = 0; k < GL_ARRAY_LEN(keys); k++)
			assert_non_null(cJSON_GetObjectItemCaseSensitive(a0, keys[k]));
	}
	cJSON_Delete(r);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", viewer_tok);
	assert_int_equal(gl_test_http(dp->port, "GET", "/v1/hook/actions", NULL, 0, (const char *const[]){auth, NULL}, &h), 0);
	assert_int_equal(h.status, 403);
	gl_test_http_fini(&h);

	/* an action taken elsewhere: recorded, audited, and the hook will not repeat it */
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", hook_tok);
	{
		const char *body = "{\"cluster\":\"hooktest\",\"job_id\":\"107\",\"policy\":\"external\",\"stage\":\"act\","
				   "\"ok\":true,\"exit_status\":0,\"command\":[\"scancel\",\"107\"]}";
		const char *bad = "{\"cluster\":\"hooktest\",\"job_id\":\"107\",\"policy\":\"external\",\"stage\":\"kill\",\"ok\":true}";
		const char *hdr[] = {auth, "Content-Type: application/json", NULL};
		assert_int_equal(gl_test_http(dp->port, "POST", "/v1/hook/actions", body, strlen(body), hdr, &h), 0);
		assert_int_equal(h.status, 201);
		assert_non_null(strstr(h.body, "\"job_known\":true"));
		gl_test_http_fini(&h);
		assert_int_equal(gl_test_http(dp->port, "POST", "/v1/hook/actions", bad, strlen(bad), hdr, &h), 0);
		assert_int_equal(h.status, 400);
		assert_non_null(strstr(h.body, "\"param\":\"stage\""));
		gl_test_http_fini(&h);
		/* what the server would not read is refused, not half recorded:
		 * a misspelt field, a repeated one, a second object glued on */
		{
			static const struct {
				const char *body, *param, *msg;
			} lax[] = {
				{"{\"cluster\":\"hooktest\",\"job_id\":\"107\",\"policy\":\"external\",\"stage\":\"warn1\","
				 "\"ok\":true,\"exit_code\":0}",
				 "body", "unknown field 'exit_code'"},
				{"{\"cluster\":\"hooktest\",\"job_id\":\"107\",\"policy\":\"external\",\"stage\":\"warn1\","
				 "\"ok\":false,\"ok\":true}",
				 "ok", "ok: given more than once"},
				{"{\"cluster\":\"hooktest\",\"job_id\":\"107\",\"policy\":\"external\",\"stage\":\"warn1\","
				 "\"ok\":true} {\"cluster\":\"hooktest\",\"job_id\":\"108\",\"policy\":\"external\","
				 "\"stage\":\"act\",\"ok\":true}\n",
				 "body", "data after the JSON object at byte 84"},
			};
			for (size_t k = 0; k < GL_ARRAY_LEN(lax); k++) {
				char want[64];
				assert_int_equal(gl_test_http(dp->port, "POST", "/v1/hook/actions", lax[k].body,
							      strlen(lax[k].body), hdr, &h),
						 0);
				assert_int_equal(h.status, 400);
				snprintf(want, sizeof want, "\"param\":\"%s\"", lax[k].param);
				assert_non_null(strstr(h.body, want));
				assert_non_null(strstr(h.body, lax[k].msg));
				gl_test_http_fini(&h);
			}
		}
	}
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions WHERE source = 'api'"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages s JOIN jobs j USING (job_pk) WHERE j.job_id = '107'"
					   " AND s.stage = 'act' AND s.status = 'done'"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'"
					   " AND object = 'job:hooktest/107' AND actor LIKE 'token:%'"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions WHERE source = 'api' AND argv = '{scancel,107}'"), 1);
	assert_int_equal(gl_test_daemon_stop(dp), 0);
	dp->pid = 0;
}

/* Kubernetes: pods from a PodList, GPU samples labelled with namespace/pod;
 * the action is the kubectl stand-in; a pod labelled keep is spared. */
static void test_kube(void **state)
{
	char buf[4096], st[32], at[32], *out;
	struct gl_test_out o;
	cJSON *r;
	time_t t0 = g_end - 180 * 60;
	iso(t0, st, sizeof st);
	snprintf(buf, sizeof buf,
		 "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
		 "{\"metadata\":{\"name\":\"nb-1\",\"namespace\":\"ml\",\"uid\":\"uid-nb-1\",\"creationTimestamp\":\"%s\","
		 "\"labels\":{\"app\":\"nb\"}},\"spec\":{\"nodeName\":\"k8s-gpu1\",\"containers\":[{\"name\":\"c\","
		 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}},"
		 "{\"metadata\":{\"name\":\"nb-keep\",\"namespace\":\"ml\",\"uid\":\"uid-nb-keep\",\"creationTimestamp\":\"%s\","
		 "\"labels\":{\"app\":\"nb\",\"gpuledger.io/keep\":\"true\"}},\"spec\":{\"nodeName\":\"k8s-gpu1\",\"containers\":[{\"name\":\"c\","
		 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}}]}",
		 st, st, st, st);
	write_file(path("pods.json"), buf, 0);
	iso(g_end, at, sizeof at);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "k8s", "--file", path("pods.json"), "--at",
				     at, NULL), 0);
	if (o.status)
		fail_msg("ingest kube: %s %s", o.out, o.err);
	gl_test_out_fini(&o);
	for (int m = 0; m <= 180; m += 5) {
		FILE *f = fopen(path("k8s.prom"), "w");
		assert_non_null(f);
		fputs("# hand-written for tests/integration/test_hook.c (dcgm-exporter format, Kubernetes labels)\n", f);
		for (int g = 0; g < 2; g++)
			fprintf(f,
				"DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu=\"%d\",UUID=\"GPU-6b800000-0000-4000-8000-00000000000%d\","
				"modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"dcgm-exporter-x7k2p\",namespace=\"ml\",pod=\"%s\","
				"container=\"c\"} 0.00003\n",
				g, g, g ? "nb-keep" : "nb-1");
		fclose(f);
		iso(g_end - (180 - m) * 60, at, sizeof at);
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "dcgm", "--cluster", "k8s", "--file", path("k8s.prom"),
					     "--at", at, "--node", "k8s-gpu1", NULL), 0);
		if (o.status)
			fail_msg("ingest dcgm k8s: %s", o.err);
		gl_test_out_fini(&o);
	}
	snprintf(buf, sizeof buf,
		 "log:\n  level: warn\nhook:\n  act: true\n  policies:\n"
		 "    - name: kube-idle\n      scope: {namespaces: ml, labels: app=nb}\n"
		 "      rule: {kind: reset, t1_min: 30, t3_min: 60}\n"
		 "      kube_command: %s delete pod --namespace {namespace} {pod}\n",
		 path("kubectl.sh"));
	write_file(path("kube.yaml"), buf, 0);
	snprintf(buf, sizeof buf, "#!/bin/sh\nprintf '[%%s]' \"$@\" >> '%s'\necho >> '%s'\n", path("kubectl.log"),
		 path("kubectl.log"));
	write_file(path("kubectl.sh"), buf, 1);

	assert_int_equal(hook(path("kube.yaml"), "--dry-run", "json", &out), 3);
	r = parse_report(out);
	ids(r, "candidates", buf, sizeof buf);
	assert_string_equal(buf, "nb-1");
	ids(r, "spared", buf, sizeof buf);
	assert_string_equal(buf, "nb-keep");
	cJSON_Delete(r);
	free(out);
	/* warn (recorded only: no warn_command), then act, then nothing */
	assert_int_equal(hook(path("kube.yaml"), "--act", "json", &out), 0);
	free(out);
	assert_int_equal(count_lines(path("kubectl.log"), NULL), 0);
	assert_int_equal(hook(path("kube.yaml"), "--act", "json", &out), 0);
	free(out);
	assert_int_equal(hook(path("kube.yaml"), "--act", "json", &out), 0);
	free(out);
	assert_int_equal(count_lines(path("kubectl.log"), NULL), 1);
	assert_int_equal(count_lines(path("kubectl.log"), "[delete][pod][--namespace][ml][nb-1]"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.act' AND object = 'job:k8s/nb-1'"
					   " AND outcome = 'ok'"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.warn' AND object = 'job:k8s/nb-1'"),
			 1);
}

/* A config of one policy named `name` over the hooktest jobs with the
 * given warn and act commands (full template lines; "" for no warning; the
 * action must be given: the default is the real scancel). */
static void write_config_cmds(const char *file, const char *name, const char *warn_cmd, const char *act_cmd)
{
	char buf[4096];
	snprintf(buf, sizeof buf,
		 "log:\n  level: warn\n"
		 "hook:\n"
		 "  act: true\n"
		 "  max_actions_per_run: 10\n"
		 "  max_data_age_s: 900\n"
		 "  command_timeout_s: 5\n"
		 "  policies:\n"
		 "    - name: '%s'\n"
		 "      scope: {clusters: hooktest}\n"
		 "      exclude: {users: root, allow_list_file: %s}\n"
		 "%s"
		 "%s%s%s"
		 "%s%s%s",
		 name, path("allow.txt"), sliding, *warn_cmd ? "      warn_command: " : "", warn_cmd, *warn_cmd ? "\n" : "",
		 *act_cmd ? "      slurm_command: " : "", act_cmd, *act_cmd ? "\n" : "");
	write_file(path(file), buf, 0);
}

/* forget every stage of the hooktest jobs: the next --act run warns again */
static void reset_stages(void)
{
	assert_true(gl_test_exec_dsn(g_dsn, "DELETE FROM hook_stages WHERE cluster_id ="
					    " (SELECT cluster_id FROM clusters WHERE name = 'hooktest')") >= 0);
}

/* A failing command whose stderr is not valid UTF-8 (raw bytes; 700 x 'é' =
 * 1400 bytes, cut by the 1 KiB excerpt inside a character): every due job
 * still gets its turn, and each failure is recorded and audited. */
static void test_bad_stderr(void **state)
{
	char cmd[1024], *out;
	cJSON *r, *it;
	long long run0;
	reset_stages();
	snprintf(cmd, sizeof cmd,
		 "#!/bin/sh\nprintf '[%%s]\\n' \"$1\" >> '%s'\n"
		 "if [ \"$1\" = 101 ]; then printf '\\377\\376raw\\n' >&2; else yes 'é' | head -n 700 | tr -d '\\n' >&2; fi\n"
		 "exit 1\n",
		 path("badwarn.log"));
	write_file(path("badwarn.sh"), cmd, 1);
	snprintf(cmd, sizeof cmd, "%s {job_id}", path("badwarn.sh"));
	write_config_cmds("badwarn.yaml", "slurm-idle", cmd, "/bin/true {job_id}");
	run0 = gl_test_qint(g_c, "SELECT coalesce(max(audit_id), 0) FROM audit_log");

	for (int run = 1; run <= 2; run++) {
		char q[512];
		assert_int_equal(hook(path("badwarn.yaml"), "--act", "json", &out), 1);
		r = parse_report(out);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "actions")), 4);
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r, "actions"))
			assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "ok")));
		cJSON_Delete(r);
		free(out);
		/* every candidate's command ran once per run */
		assert_int_equal(count_lines(path("badwarn.log"), NULL), 4 * run);
		snprintf(q, sizeof q,
			 "SELECT count(*) FROM hook_stages s JOIN jobs j USING (job_pk) WHERE s.stage = 'warn1'"
			 " AND s.status = 'failed' AND s.exit_status = 1 AND s.attempts = %d"
			 " AND j.job_id IN ('101', '103', '104', '106')",
			 run);
		assert_int_equal(gl_test_qint(g_c, q), 4);
	}
	/* the raw bytes became '?', the cut character too; the rest is kept */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages s JOIN jobs j USING (job_pk)"
					   " WHERE j.job_id = '101' AND s.stage = 'warn1' AND s.error = '??raw'"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages s JOIN jobs j USING (job_pk)"
					   " WHERE j.job_id <> '101' AND s.stage = 'warn1'"
					   " AND s.error LIKE repeat('é', 500) || '%' AND octet_length(s.error) < 1024"), 3);
	{
		char q[512];
		snprintf(q, sizeof q,
			 "SELECT count(*) FROM audit_log WHERE audit_id > %lld AND action = 'hook.warn' AND outcome = 'error'"
			 " AND (detail->>'exit_status')::int = 1 AND (detail->>'stderr' = '??raw'"
			 " OR detail->>'stderr' LIKE repeat('é', 500) || '%%')",
			 run0);
		assert_int_equal(gl_test_qint(g_c, q), 8);
		snprintf(q, sizeof q,
			 "SELECT count(*) FROM audit_log WHERE audit_id > %lld AND action = 'hook.run' AND outcome = 'error'"
			 " AND detail->>'mode' = 'act' AND (detail->>'actions')::int = 4",
			 run0);
		assert_int_equal(gl_test_qint(g_c, q), 2);
		snprintf(q, sizeof q, "SELECT count(*) FROM hook_actions WHERE NOT ok AND stage = 'warn1' AND stderr = '??raw'");
		assert_int_equal(gl_test_qint(g_c, q), 2);
	}
	{
		struct gl_test_out o;
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "verify", NULL), 0);
		assert_int_equal(o.status, 0);
		gl_test_out_fini(&o);
	}
}

/* A warn command that exits 0 but leaves a background process holding its
 * output: done once, not timed out, not retried by the next run. */
static void test_background_child(void **state)
{
	char cmd[1024], *out;
	cJSON *r, *it;
	reset_stages();
	snprintf(cmd, sizeof cmd,
		 "#!/bin/sh\nprintf '[%%s]\\n' \"$1\" >> '%s'\necho notified; echo note >&2\nsleep 8 &\nexit 0\n",
		 path("bgwarn.log"));
	write_file(path("bgwarn.sh"), cmd, 1);
	snprintf(cmd, sizeof cmd, "%s {job_id}", path("bgwarn.sh"));
	write_config_cmds("bgwarn.yaml", "slurm-idle", cmd, "/bin/true {job_id}");
	assert_int_equal(hook(path("bgwarn.yaml"), "--act", "json", &out), 0);
	r = parse_report(out);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "actions")), 4);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r, "actions"))
	{
		assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "ok")));
		assert_int_equal(cJSON_GetObjectItemCaseSensitive(it, "exit_status")->valueint, 0);
	}
	cJSON_Delete(r);
	free(out);
	/* the next run has nothing to repeat */
	assert_int_equal(hook(path("bgwarn.yaml"), "--act", "json", &out), 0);
	r = parse_report(out);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r, "actions"))
		assert_string_not_equal(cJSON_GetObjectItemCaseSensitive(it, "stage")->valuestring, "warn1");
	cJSON_Delete(r);
	free(out);
	assert_int_equal(count_lines(path("bgwarn.log"), NULL), 4);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages s JOIN jobs j USING (job_pk) WHERE s.stage = 'warn1'"
					   " AND s.status = 'done' AND s.attempts = 1 AND s.exit_status = 0"
					   " AND j.job_id IN ('101', '103', '104', '106')"),
			 4);
}

/* Job data that would become an option: a user names a job
 * "--output=..." and the warn template has {job_name} as a word of its own.
 * That command is not run (the stage fails, is audited with the reason and
 * retried); a dash the template itself writes ("--name={job_name}") is the
 * template author's and runs; the other jobs get their turn. */
static void test_job_data_never_becomes_an_option(void **state)
{
	char cmd[1024], *out;
	cJSON *r;
	reset_stages();
	assert_true(gl_test_exec_dsn(g_dsn, "UPDATE jobs SET name = '--output=/tmp/pwned' WHERE job_id = '101'"
					    " AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'hooktest')") == 1);
	snprintf(cmd, sizeof cmd, "#!/bin/sh\nprintf '[%%s]' \"$@\" >> '%s'\necho >> '%s'\n", path("dash.log"),
		 path("dash.log"));
	write_file(path("dash.sh"), cmd, 1);
	snprintf(cmd, sizeof cmd, "%s {job_id} --name={job_name} {job_name}", path("dash.sh"));
	write_config_cmds("dash.yaml", "slurm-idle", cmd, "/bin/true {job_id}");

	assert_int_equal(hook(path("dash.yaml"), "--act", "json", &out), 1);
	r = parse_report(out);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "actions")), 4);
	cJSON_Delete(r);
	free(out);
	/* 101's command never ran; the others did, literal dashes and all */
	assert_int_equal(count_lines(path("dash.log"), "[101]"), 0);
	assert_int_equal(count_lines(path("dash.log"), "/tmp/pwned"), 0);
	assert_int_equal(count_lines(path("dash.log"), NULL), 3);
	assert_int_equal(count_lines(path("dash.log"), "[103][--name=busy-then-idle][busy-then-idle]"), 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages s JOIN jobs j USING (job_pk)"
					   " WHERE j.job_id = '101' AND s.stage = 'warn1' AND s.status = 'failed'"
					   " AND s.exit_status IS NULL AND s.error LIKE '%would start with ''-''%'"),
			 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.warn' AND outcome = 'error'"
					   " AND object = 'job:hooktest/101' AND detail->>'stderr' LIKE '%{job_name}%'"),
			 1);
	/* retried, and refused again, by the next run */
	assert_int_equal(hook(path("dash.yaml"), "--act", "json", &out), 1);
	free(out);
	assert_int_equal(count_lines(path("dash.log"), "[101]"), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT attempts FROM hook_stages s JOIN jobs j USING (job_pk)"
					   " WHERE j.job_id = '101' AND s.stage = 'warn1'"),
			 2);
	assert_true(gl_test_exec_dsn(g_dsn, "UPDATE jobs SET name = 'idle-notebook' WHERE job_id = '101'"
					    " AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'hooktest')") == 1);
}

/* A policy name with quotes (and a long one) reaches the hook.run audit row
 * intact; --policy naming no policy is a usage error (exit 2), nothing run. */
static void test_policy_names(void **state)
{
	char name[300], cmd[1024], q[1024];
	struct gl_test_out o;
	long long run0 = gl_test_qint(g_c, "SELECT coalesce(max(audit_id), 0) FROM audit_log");
	reset_stages();
	snprintf(cmd, sizeof cmd, "#!/bin/sh\nprintf '[%%s]\\n' \"$@\" >> '%s'\n", path("names.log"));
	write_file(path("names.sh"), cmd, 1);
	snprintf(cmd, sizeof cmd, "%s {policy}", path("names.sh"));
	write_config_cmds("quoted.yaml", "util \"night\"", cmd, "/bin/true {job_id}");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("quoted.yaml"), "hook", "idle", "--policy",
				     "util \"night\"", "--act", "--format", "json", NULL), 0);
	if (o.status != 0)
		fail_msg("hook idle --policy 'util \"night\"': exit %d: %s %s", o.status, o.out, o.err);
	gl_test_out_fini(&o);
	assert_int_equal(count_lines(path("names.log"), "[util \"night\"]"), 4);
	snprintf(q, sizeof q,
		 "SELECT count(*) FROM audit_log WHERE audit_id > %lld AND action = 'hook.run' AND outcome = 'ok'"
		 " AND detail->>'policy' = 'util \"night\"' AND (detail->>'actions')::int = 4",
		 run0);
	assert_int_equal(gl_test_qint(g_c, q), 1);

	/* 280 bytes of name, dry-run */
	memset(name, 'n', 280);
	memcpy(name, "long \"", 6);
	name[280] = '\0';
	write_config_cmds("long.yaml", name, cmd, "/bin/true {job_id}");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("long.yaml"), "hook", "idle", "--policy", name,
				     "--dry-run", NULL), 0);
	assert_int_equal(o.status, 3);
	gl_test_out_fini(&o);
	snprintf(q, sizeof q,
		 "SELECT count(*) FROM audit_log WHERE audit_id > %lld AND action = 'hook.run' AND detail->>'mode' = 'dry-run'"
		 " AND detail->>'policy' = 'long \"' || repeat('n', 274)",
		 run0);
	assert_int_equal(gl_test_qint(g_c, q), 1);

	/* no such policy: usage error, exit 2, named; no run, nothing audited */
	run0 = gl_test_qint(g_c, "SELECT coalesce(max(audit_id), 0) FROM audit_log");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("quoted.yaml"), "hook", "idle", "--policy", "nope",
				     "--act", NULL), 0);
	assert_int_equal(o.status, 2);
	assert_non_null(strstr(o.err, "no policy named 'nope'"));
	gl_test_out_fini(&o);
	snprintf(q, sizeof q, "SELECT count(*) FROM audit_log WHERE audit_id > %lld", run0);
	assert_int_equal(gl_test_qint(g_c, q), 0);
	assert_int_equal(count_lines(path("names.log"), NULL), 4);
}

/* A hook template carrying credentials (an option's value, a header with
 * a space in it, --password=): the command gets them as written, while
 * what is kept of it — hook_actions.argv and .stderr, hook_stages.error,
 * the hook.warn audit rows, the log line of the failure and the report —
 * holds none of them. The stand-in repeats its arguments on stderr, as
 * tools do in errors, and fails, so the failure is logged. */
static void test_credentials_in_commands_are_blanked(void **state)
{
	char cmd[1024], q[1024];
	struct gl_test_out o;
	long long run0 = gl_test_qint(g_c, "SELECT coalesce(max(audit_id), 0) FROM audit_log");
	long long act0 = gl_test_qint(g_c, "SELECT coalesce(max(action_id), 0) FROM hook_actions");
	reset_stages();
	snprintf(cmd, sizeof cmd,
		 "#!/bin/sh\nprintf '[%%s]' \"$@\" >> '%s'\necho >> '%s'\necho \"bad request: $*\" >&2\nexit 1\n",
		 path("cred.log"), path("cred.log"));
	write_file(path("cred.sh"), cmd, 1);
	/* in YAML double quotes: the header's ": " would end a plain scalar */
	snprintf(cmd, sizeof cmd,
		 "\"%s {job_id} --token tokSECRET1 -H 'X-Api-Key: keySECRET2 more' --password=pwSECRET3\"",
		 path("cred.sh"));
	write_config_cmds("cred.yaml", "slurm-idle", cmd, "/bin/true {job_id}");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("cred.yaml"), "hook", "idle", "--act", "--format",
				     "json", NULL),
			 0);
	if (o.status != 1)
		fail_msg("hook idle --act: exit %d: %s %s", o.status, o.out, o.err);
	/* the commands got the credentials as written */
	assert_int_equal(count_lines(path("cred.log"), "][--token][tokSECRET1][-H][X-Api-Key: keySECRET2 more][--password=pwSECRET3]"),
			 4);
	/* the log line of each failure, blanked; the report too */
	assert_non_null(strstr(o.err, "hook: warn1 hooktest/101 failed ("));
	assert_non_null(strstr(o.err, "--token *** -H X-Api-Key: *** --password=***"));
	assert_null(strstr(o.err, "SECRET"));
	assert_non_null(strstr(o.out, "--token *** -H X-Api-Key: *** --password=***"));
	assert_null(strstr(o.out, "SECRET"));
	gl_test_out_fini(&o);
	/* the rows: four, blanked element by element */
	snprintf(q, sizeof q,
		 "SELECT count(*) FROM hook_actions WHERE action_id > %lld AND stage = 'warn1' AND NOT ok"
		 " AND argv[3:7] = ARRAY['--token', '***', '-H', 'X-Api-Key: ***', '--password=***']"
		 " AND stderr LIKE 'bad request: %% --token *** -H X-Api-Key: *** more --password=***%%'",
		 act0);
	assert_int_equal(gl_test_qint(g_c, q), 4);
	snprintf(q, sizeof q, "SELECT count(*) FROM hook_actions WHERE action_id > %lld AND (argv::text || stderr) LIKE '%%SECRET%%'",
		 act0);
	assert_int_equal(gl_test_qint(g_c, q), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages WHERE error LIKE '%bad request:%'"), 4);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages WHERE error LIKE '%SECRET%'"), 0);
	snprintf(q, sizeof q,
		 "SELECT count(*) FROM audit_log WHERE audit_id > %lld AND action = 'hook.warn' AND outcome = 'error'"
		 " AND detail->'argv'->>2 = '--token' AND detail->'argv'->>3 = '***' AND detail->'argv'->>5 = 'X-Api-Key: ***'"
		 " AND detail->>'stderr' LIKE 'bad request: %%'",
		 run0);
	assert_int_equal(gl_test_qint(g_c, q), 4);
	snprintf(q, sizeof q, "SELECT count(*) FROM audit_log WHERE audit_id > %lld AND detail::text LIKE '%%SECRET%%'", run0);
	assert_int_equal(gl_test_qint(g_c, q), 0);
	/* the retry runs the credentials again: it expands the template, not the stored argv */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", path("cred.yaml"), "hook", "idle", "--act", "--format",
				     "json", NULL),
			 0);
	assert_int_equal(o.status, 1);
	gl_test_out_fini(&o);
	assert_int_equal(count_lines(path("cred.log"), "][--token][tokSECRET1][-H][X-Api-Key: keySECRET2 more][--password=pwSECRET3]"),
			 8);
	reset_stages();
}

/* No hook.policies (gpuledger.example.yaml's default): the report has the
 * keys docs/hook.md shows (breaker, exit_code) and the run is audited
 * like any other, so a cron wrapper reading .exit_code does not break. */
static void test_no_policies(void **state)
{
	char *out = NULL, q[256];
	cJSON *r, *b;
	long long run0 = gl_test_qint(g_c, "SELECT coalesce(max(audit_id), 0) FROM audit_log");
	write_file(path("nopolicy.yaml"), "log:\n  level: warn\n", 0);
	assert_int_equal(hook(path("nopolicy.yaml"), "--dry-run", "json", &out), 0);
	r = parse_report(out);
	b = cJSON_GetObjectItemCaseSensitive(r, "breaker");
	assert_non_null(b);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(b, "tripped")));
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(b, "actions_due")->valueint, 0);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(r, "exit_code")));
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(r, "exit_code")->valueint, 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "candidates")), 0);
	cJSON_Delete(r);
	free(out);
	snprintf(q, sizeof q,
		 "SELECT count(*) FROM audit_log WHERE audit_id > %lld AND action = 'hook.run' AND outcome = 'ok'"
		 " AND detail->>'mode' = 'dry-run'",
		 run0);
	assert_int_equal(gl_test_qint(g_c, q), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ingest),
		cmocka_unit_test(test_dry_run_twice),
		cmocka_unit_test(test_rules_and_memory),
		cmocka_unit_test(test_idle_cost_across_rate_change),
		cmocka_unit_test(test_act),
		cmocka_unit_test(test_overlapping_runs),
		cmocka_unit_test(test_api),
		cmocka_unit_test(test_kube),
		cmocka_unit_test(test_bad_stderr),
		cmocka_unit_test(test_background_child),
		cmocka_unit_test(test_job_data_never_becomes_an_option),
		cmocka_unit_test(test_policy_names),
		cmocka_unit_test(test_credentials_in_commands_are_blanked),
		cmocka_unit_test(test_no_policies),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
