/* Several real daemons on one database (docs/scale.md, "Several daemons"):
 * a periodic sacct source (the stand-in sacct printing the testbed's real
 * dump, filtered to the -S/-E window as sacct filters it, plus jobs the
 * test appends while the daemons run), the node inventory and the rollup
 * on three instances; the one holding the sacct source is killed (-9) at
 * random moments, then every instance is restarted in turn. Afterwards:
 * the jobs equal a single ingest of the same dump, every appended job is
 * there, the daily usage the rollup built equals one rollup of that
 * ingest, each source ran on one instance at a time (ingest_runs' instance
 * and times), every run that ended has exactly one audit row and the chain
 * verifies. A second test pauses the holder (SIGSTOP) in the middle of a
 * run past its lease, lets another take over, resumes it and finds its
 * commit refused by the fence.
 *
 * GL_HA_TRIALS (default 3) kills; make test-ha runs it with more. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NDAEMONS 3
#define INTERVAL_S 5
#define TTL_S 5

static char g_dsn[512], g_ref_dsn[512], g_dir[PATH_MAX], g_live[PATH_MAX + 64], g_hold[PATH_MAX + 64];
static char g_cwd[PATH_MAX];
static struct gl_test_daemon g_d[NDAEMONS];
static PGconn *g_c;
static int g_next_job = 1;

static void write_config(int i, char *out, size_t n)
{
	snprintf(out, n,
		 "server:\n  instance_name: d%d\n  lease_ttl_s: %d\nlog:\n  level: info\n"
		 "sources:\n  sacct:\n    - cluster: testgpu\n      command: %s/tests/tools/fake-sacct.sh\n"
		 "      interval_s: %d\n      overlap_s: 0\n      lookback_s: 864000\n      chunk_s: 2678400\n"
		 "      extra_args: --gl-fixture=%s --gl-window --gl-hold=%s\n"
		 "  slurm_nodes:\n    - cluster: testgpu\n      scontrol: %s/tests/tools/fake-slurm.sh\n"
		 "      sacctmgr: %s/tests/tools/fake-slurm.sh\n      interval_s: %d\n",
		 i + 1, TTL_S, g_cwd, INTERVAL_S, g_live, g_hold, g_cwd, g_cwd, INTERVAL_S);
}

static int start(int i)
{
	char cfg[4096];
	write_config(i, cfg, sizeof cfg);
	return gl_test_daemon_start(&g_d[i], g_dsn, cfg, NULL);
}

static void kill9(int i)
{
	int st;
	kill(g_d[i].pid, SIGKILL);
	waitpid(g_d[i].pid, &st, 0);
	g_d[i].pid = 0;
	(void)gl_test_daemon_stop(&g_d[i]);
}

/* A finished GPU job in the testbed's field order, ending now: a poll
 * whose window began before now selects it (docs/ingest.md: sacct -S/-E
 * select jobs active in the window), so none is missed with overlap_s 0. */
static void append_job(void)
{
	char sub[32], end[32];
	time_t t = time(NULL), t0 = t - 30;
	struct tm a, b;
	FILE *f = fopen(g_live, "a");
	assert_non_null(f);
	gmtime_r(&t0, &a);
	gmtime_r(&t, &b);
	strftime(sub, sizeof sub, "%Y-%m-%dT%H:%M:%S", &a);
	strftime(end, sizeof end, "%Y-%m-%dT%H:%M:%S", &b);
	fprintf(f,
		"%d|%d|testgpu|a100|normal|teama|alice|2001|alice|2001|%s|%s|%s|%s|00:00:30|30|0:0|COMPLETED|1|1|1|1000M|"
		"billing=1,cpu=1,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1000M,node=1|"
		"00:02:00|gpu01|ha%d|%d|00:00:00|\n",
		100000 + g_next_job, 100000 + g_next_job, sub, sub, sub, end, g_next_job, 100000 + g_next_job);
	fclose(f);
	g_next_job++;
}

static int setup(void **state)
{
	char cmd[PATH_MAX * 3];
	if (!getcwd(g_cwd, sizeof g_cwd) || gl_test_db_fresh("gl_test_ha_leases", g_dsn, sizeof g_dsn) ||
	    gl_test_db_fresh("gl_test_ha_leases_ref", g_ref_dsn, sizeof g_ref_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	snprintf(g_dir, sizeof g_dir, "%s/ha-leases", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && cp %s/tests/fixtures/sacct/testbed/sacct_alloc.txt "
				  "%s/tests/fixtures/sacct/testbed/sacct_fields.txt '%s/'",
		 g_dir, g_dir, g_cwd, g_cwd, g_dir);
	if (system(cmd) != 0)
		return -1;
	snprintf(g_live, sizeof g_live, "%s/sacct_alloc.txt", g_dir);
	snprintf(g_hold, sizeof g_hold, "%s/hold", g_dir);
	setenv("GL_FAKE_SLURM_FIXTURES", gl_test_fixture("tests/fixtures/nodes/testbed"), 1);
	return 0;
}

static int teardown(void **state)
{
	for (int i = 0; i < NDAEMONS; i++)
		if (g_d[i].pid > 0)
			(void)gl_test_daemon_stop(&g_d[i]);
	PQfinish(g_c);
	return 0;
}

/* The daemon (index) holding lease name now, -1 when none does. */
static int holder(const char *name)
{
	const char *who = gl_test_qstrf(g_c,
					"SELECT coalesce((SELECT instance FROM leases WHERE name = '%s'"
					" AND expires_at > now()), '')",
					name);
	for (int i = 0; i < NDAEMONS; i++) {
		char want[8];
		snprintf(want, sizeof want, "d%d", i + 1);
		if (g_d[i].pid > 0 && !strcmp(who, want))
			return i;
	}
	return -1;
}

/* Waits up to bound_s for a run of sacct:testgpu that ended well, by another
 * instance than `not` (d1..), started at or after t; its start, or -1. */
static long long wait_run(const char *not, long long t, int bound_s)
{
	for (int k = 0; k < bound_s * 5; k++) {
		long long s = gl_test_qintf(
			g_c,
			"SELECT coalesce(min(extract(epoch FROM r.started_at)::bigint), -1) FROM ingest_runs r"
			" JOIN clusters c USING (cluster_id) WHERE r.source = 'sacct' AND c.name = 'testgpu'"
			" AND r.status IN ('ok', 'partial') AND r.instance IS DISTINCT FROM '%s'"
			" AND r.started_at >= to_timestamp(%lld)",
			not, t);
		if (s >= 0)
			return s;
		if (k % 5 == 0)
			append_job();
		usleep(200000);
	}
	return -1;
}

/* Before the daemons stop: every appended job made it. */
static void wait_all_jobs(void)
{
	long long n = 0;
	for (int k = 0; k < 3 * INTERVAL_S * 5; k++) {
		n = gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE name LIKE 'ha%'");
		if (n == g_next_job - 1)
			break;
		usleep(200000);
	}
	assert_int_equal(n, g_next_job - 1);
}

static void check_ledger(void)
{
	char cmd[PATH_MAX * 2], fields[1024];
	/* the jobs equal one ingest of the whole dump (a single daemon's end state) */
	assert_int_equal(gl_test_sacct_fields(fields, sizeof fields), 0);
	assert_int_equal(gl_test_cli(g_ref_dsn, "ingest", "sacct", "--cluster", "testgpu", "--file", g_live, "--fields",
				     fields, NULL),
			 0);
	snprintf(cmd, sizeof cmd,
		 "SELECT concat_ws('|', job_key, state, start_at, end_at, gpu_milli, user_name, account, node_list,"
		 " queue_wait_s) FROM jobs ORDER BY job_key");
	{
		PGconn *ref = PQconnectdb(g_ref_dsn);
		PGresult *a = PQexec(g_c, cmd), *b = PQexec(ref, cmd);
		int diffs = 0;
		assert_int_equal(PQntuples(a), PQntuples(b));
		for (int i = 0; i < PQntuples(a); i++)
			if (strcmp(PQgetvalue(a, i, 0), PQgetvalue(b, i, 0)) && diffs++ < 5)
				fprintf(stderr, "jobs differ:\n  daemons: %s\n  single:  %s\n", PQgetvalue(a, i, 0),
					PQgetvalue(b, i, 0));
		assert_int_equal(diffs, 0);
		PQclear(a);
		PQclear(b);
		PQfinish(ref);
	}
	/* usage: the daily aggregates the leased rollup built (the testbed's
	 * day) equal those one `gpuledger rollup` builds from the single ingest */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM usage_daily_built WHERE day = '2026-11-22'"), 1);
	assert_int_equal(gl_test_cli(g_ref_dsn, "rollup", NULL), 0);
	snprintf(cmd, sizeof cmd,
		 "SELECT coalesce(string_agg(concat_ws('|', d_team, d_user, d_account, d_cluster, d_partition, d_gpu_model,"
		 " rate, alloc, priced), ',' ORDER BY d_team, d_user, d_account, d_partition, d_gpu_model, rate, alloc, priced),"
		 " 'none') FROM usage_daily WHERE day = '2026-11-22'");
	{
		static char a[8192];
		PGconn *ref = PQconnectdb(g_ref_dsn);
		snprintf(a, sizeof a, "%s", gl_test_qstr(g_c, cmd));
		assert_string_not_equal(a, "none");
		assert_string_equal(a, gl_test_qstr(ref, cmd));
		PQfinish(ref);
	}
	/* one instance at a time per source: of the runs that committed, each
	 * ended before the next began (a fenced run committed nothing) */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM (SELECT finished_at, lead(started_at) OVER"
					   " (PARTITION BY source, cluster_id ORDER BY started_at, run_id) AS nxt FROM ingest_runs"
					   " WHERE instance IS NOT NULL AND status IN ('ok', 'partial')) x WHERE finished_at > nxt"),
			 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE status IN ('ok', 'partial')"
					   " AND instance IS NOT NULL"),
			 gl_test_qint(g_c, "SELECT count(DISTINCT run_id) FROM ingest_runs WHERE status IN ('ok', 'partial')"
					   " AND instance IS NOT NULL"));
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE status = 'running'"), 0);
	/* every run that ended has exactly one audit row, and no run two */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs r WHERE r.status IN ('ok', 'partial', 'failed')"
					   " AND (SELECT count(*) FROM audit_log a WHERE a.action = 'ingest.run'"
					   " AND (a.detail->>'run_id')::bigint = r.run_id) <> 1"),
			 0);
	assert_int_equal(gl_test_cli(g_dsn, "audit", "verify", NULL), 0);
}

static void test_kill_and_rolling_restart(void **state)
{
	const char *e = getenv("GL_HA_TRIALS");
	int trials = e && atoi(e) > 0 ? atoi(e) : 3;
	double worst = 0;
	unlink(g_hold);
	for (int i = 0; i < NDAEMONS; i++)
		assert_int_equal(start(i), 0);
	srand((unsigned)time(NULL));
	for (int t = 0; t < trials; t++) {
		int h = -1, ms = rand() % (INTERVAL_S * 1000);
		char name[8];
		long long t_kill, s;
		for (int k = 0; k < 100 && h < 0; k++) {
			h = holder("sacct:testgpu");
			if (h < 0)
				usleep(200000);
		}
		assert_true(h >= 0);
		usleep((useconds_t)ms * 1000);
		h = holder("sacct:testgpu");
		if (h < 0) {
			t--;
			continue;
		}
		snprintf(name, sizeof name, "d%d", h + 1);
		t_kill = (long long)time(NULL);
		kill9(h);
		s = wait_run(name, t_kill, 4 * INTERVAL_S);
		fprintf(stderr, "trial %d: killed %s %d ms into the wait; a run by another instance began %lld s later\n",
			t + 1, name, ms, s - t_kill);
		assert_true(s >= 0);
		/* the bound: within two of the source's intervals */
		assert_true(s - t_kill <= 2 * INTERVAL_S);
		if (s - t_kill > worst)
			worst = (double)(s - t_kill);
		assert_int_equal(start(h), 0);
	}
	fprintf(stderr, "%d kills: the source moved within %.0f s at worst (interval %d s, lease %d s)\n", trials, worst,
		INTERVAL_S, TTL_S);
	/* rolling restart: each instance stopped (SIGTERM: its leases expire at
	 * once) and started again, jobs arriving all along */
	for (int i = 0; i < NDAEMONS; i++) {
		long long t0 = (long long)time(NULL);
		char name[8];
		snprintf(name, sizeof name, "d%d", i + 1);
		append_job();
		assert_int_equal(gl_test_daemon_stop(&g_d[i]), 0);
		assert_true(wait_run(name, t0, 4 * INTERVAL_S) >= 0);
		assert_int_equal(start(i), 0);
	}
	{
		/* /metrics and /v1/ingest/runs say which instance ran what */
		struct gl_test_http r = {0};
		cJSON *j = gl_test_get_json(g_d[0].port, "/v1/ingest/runs?source=sacct&limit=5", 200), *run;
		assert_non_null(j);
		run = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0);
		assert_non_null(run);
		assert_true(cJSON_IsString(cJSON_GetObjectItem(run, "instance")));
		assert_int_equal(strncmp(cJSON_GetObjectItem(run, "instance")->valuestring, "d", 1), 0);
		cJSON_Delete(j);
		assert_int_equal(gl_test_http(g_d[0].port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
		assert_non_null(strstr(r.body, "gpuledger_instance_info{instance=\"d1\"} 1"));
		assert_non_null(strstr(r.body, "gpuledger_lease_held{lease=\"sacct:testgpu\"}"));
		assert_non_null(strstr(r.body, "gpuledger_lease_held{lease=\"rollup:all\"}"));
		gl_test_http_fini(&r);
	}
	wait_all_jobs();
	for (int i = 0; i < NDAEMONS; i++)
		assert_int_equal(gl_test_daemon_stop(&g_d[i]), 0);
	check_ledger();
}

/* SIGSTOP past the lease in the middle of a run (one sacct call: the
 * chunk covers the whole lookback): another instance takes
 * the source over and commits; the paused one, resumed, has its commit
 * refused by the fence and leaves the watermark where the new holder put
 * it. */
static void test_paused_holder_is_fenced(void **state)
{
	char started[PATH_MAX + 80], name[8], other[8];
	long long t_stop, s, run_id, wm;
	int h = -1;
	FILE *f;
	snprintf(started, sizeof started, "%s.started", g_hold);
	unlink(started);
	assert_int_equal(start(0), 0);
	assert_int_equal(start(1), 0);
	for (int k = 0; k < 100 && h < 0; k++) {
		h = holder("sacct:testgpu");
		if (h < 0)
			usleep(200000);
	}
	assert_true(h >= 0);
	snprintf(name, sizeof name, "d%d", h + 1);
	snprintf(other, sizeof other, "d%d", 2 - h);
	/* the holder's next sacct call waits on the hold file: pause it there */
	f = fopen(g_hold, "w");
	assert_non_null(f);
	fclose(f);
	for (int k = 0; k < 5 * 4 * INTERVAL_S && access(started, F_OK); k++)
		usleep(200000);
	assert_int_equal(access(started, F_OK), 0);
	assert_int_equal(holder("sacct:testgpu"), h);
	run_id = gl_test_qintf(g_c, "SELECT max(run_id) FROM ingest_runs WHERE source = 'sacct' AND instance = '%s'"
				    " AND status = 'running'",
			       name);
	assert_true(run_id > 0);
	assert_int_equal(kill(g_d[h].pid, SIGSTOP), 0);
	t_stop = (long long)time(NULL);
	append_job();
	unlink(g_hold); /* its sacct prints into the pipe of a process that does not read */
	s = wait_run(name, t_stop, 4 * INTERVAL_S + TTL_S);
	fprintf(stderr, "paused %s; %s ran the source %lld s later\n", name, other, s - t_stop);
	assert_true(s >= 0);
	wm = gl_test_qint(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state s JOIN clusters c"
			       " USING (cluster_id) WHERE s.source = 'sacct' AND c.name = 'testgpu'");
	fprintf(stderr, "watermark %lld, paused at %lld\n", wm, t_stop);
	assert_true(wm >= t_stop);
	assert_int_equal(kill(g_d[h].pid, SIGCONT), 0);
	for (int k = 0; k < 100; k++) {
		if (!strcmp(gl_test_qstrf(g_c, "SELECT status FROM ingest_runs WHERE run_id = %lld", run_id), "failed"))
			break;
		usleep(200000);
	}
	assert_string_equal(gl_test_qstrf(g_c, "SELECT status FROM ingest_runs WHERE run_id = %lld", run_id), "failed");
	assert_non_null(strstr(gl_test_qstrf(g_c, "SELECT error FROM ingest_runs WHERE run_id = %lld", run_id),
			       "commit refused"));
	/* it wrote nothing: no rows counted, the watermark is not moved back */
	assert_int_equal(gl_test_qintf(g_c, "SELECT inserted + updated + unchanged FROM ingest_runs WHERE run_id = %lld",
				       run_id),
			 0);
	assert_true(gl_test_qint(g_c, "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state s JOIN clusters c"
				      " USING (cluster_id) WHERE s.source = 'sacct' AND c.name = 'testgpu'") >= wm);
	wait_all_jobs();
	for (int i = 0; i < 2; i++)
		assert_int_equal(gl_test_daemon_stop(&g_d[i]), 0);
	check_ledger();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_and_rolling_restart),
		cmocka_unit_test(test_paused_holder_is_fenced),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
