/* The simulated demo fleet end to end, as `make run` sets it up: the
 * simulator started by scripts/demo/sim.sh (its shims and exporters on
 * loopback), its history loaded and budgets set by the same script, then
 * the real daemon with the demo config on a throwaway database, ingesting
 * the live fleet through its periodic sources (sacct, scontrol/sacctmgr,
 * kubectl pods and nodes through the shims; dcgm-exporter over HTTP). Through
 * the API it must show within the test's bound: jobs rising, capacity for
 * every simulated cluster, saturation, busy and idle GPU time inside
 * allocations, an idle-hook candidate (dry-run) and every source healthy.
 * The shims themselves are checked with the daemon's argv over their real
 * HTTP path, and when the simulator is gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/sacct.h"
#include "gl/timeutil.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BOUND_S 80 /* the live checks' bound, from the daemon's start */

static char g_dsn[512], g_dir[PATH_MAX], g_cfg[PATH_MAX], g_build[PATH_MAX];
static struct gl_test_daemon g_d;
static int g_sim_up;

/* scripts/demo/sim.sh CMD ARGS... with SIM_DIR and a small fleet; stdout
 * (the config path for `start`) into out when given. */
static int sim_sh(char *out, size_t n, const char *cmd, const char *a1, const char *a2, const char *a3)
{
	char log[PATH_MAX + 16];
	int fds[2], st;
	pid_t pid;
	ssize_t r = 0;
	snprintf(log, sizeof log, "%s/sim-sh.log", g_dir);
	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		FILE *lf = fopen(log, "a");
		/* stdout to the pipe only when it is read */
		if (!lf || dup2(out ? fds[1] : fileno(lf), 1) < 0 || dup2(fileno(lf), 2) < 0)
			_exit(126);
		/* the simulator it starts must not hold the pipe open */
		close(fds[0]);
		close(fds[1]);
		fclose(lf);
		setenv("SIM_DIR", g_dir, 1);
		setenv("SIM_GPUS", "96", 1);
		setenv("SIM_HISTORY_DAYS", "3", 1);
		setenv("SIM_SPEED", "60", 1);
		setenv("GPULEDGER_DSN", g_dsn, 1);
		execl(gl_test_fixture("scripts/demo/sim.sh"), "sim.sh", cmd, a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	if (out) {
		ssize_t k;
		while (n > 1 && (k = read(fds[0], out + r, n - 1 - (size_t)r)) > 0)
			r += k;
		out[r] = '\0';
		out[strcspn(out, "\n")] = '\0';
	}
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char *l = gl_test_read_file(log, NULL);
		fprintf(stderr, "sim.sh %s failed:\n%s\n", cmd, l ? l : "");
		free(l);
		return -1;
	}
	return 0;
}

static int setup(void **state)
{
	char *cfg;
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	const char *bin = getenv("GL_VG_BIN") ? getenv("GL_VG_BIN") : gl_test_bin();
	(void)state;
	snprintf(g_build, sizeof g_build, "%s", bin);
	*strrchr(g_build, '/') = '\0';
	snprintf(g_dir, sizeof g_dir, "%s/demo-sim.%d", tmp, (int)getpid());
	if (mkdir(g_dir, 0755))
		return -1;
	if (gl_test_db_fresh("gl_test_demo_sim", g_dsn, sizeof g_dsn) || sim_sh(g_cfg, sizeof g_cfg, "start", g_build, NULL, NULL))
		return -1;
	g_sim_up = 1;
	if (sim_sh(NULL, 0, "history", gl_test_bin(), "--config", g_cfg) ||
	    sim_sh(NULL, 0, "budgets", gl_test_bin(), "--config", g_cfg))
		return -1;
	cfg = gl_test_read_file(g_cfg, NULL);
	if (!cfg || gl_test_daemon_start(&g_d, g_dsn, cfg, NULL)) {
		free(cfg);
		return -1;
	}
	free(cfg);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (g_d.pid > 0)
		gl_test_daemon_stop(&g_d);
	if (g_sim_up)
		sim_sh(NULL, 0, "stop", NULL, NULL, NULL);
	return 0;
}

/* Every job the API lists, page by page. */
static long long jobs_count(void)
{
	long long n = 0, cursor = -1;
	for (int page = 0; page < 100; page++) {
		char path[128];
		cJSON *j, *c;
		if (cursor < 0)
			snprintf(path, sizeof path, "/v1/jobs?limit=1000");
		else
			snprintf(path, sizeof path, "/v1/jobs?limit=1000&cursor=%lld", cursor);
		if (!(j = gl_test_get_json(g_d.port, path, 200)))
			return -1;
		n += cJSON_GetArraySize(cJSON_GetObjectItem(j, "jobs"));
		c = cJSON_GetObjectItem(j, "next_cursor");
		cursor = cJSON_IsNumber(c) ? (long long)c->valuedouble : -1;
		cJSON_Delete(j);
		if (cursor < 0)
			break;
	}
	return n;
}

struct live {
	long long jobs0, jobs;
	int clusters_with_capacity, saturated;
	long long busy_s, idle_s;
	int candidates, sources_up, sources_down, runs_failed;
	char why[512];
};

static void check_capacity(struct live *l)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/capacity?window=1h&aggregate=cluster", 200), *row;
	cJSON *rows = cJSON_GetObjectItem(j, "rows");
	l->clusters_with_capacity = l->saturated = 0;
	cJSON_ArrayForEach(row, rows)
	{
		const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(row, "cluster"));
		if (c && (!strcmp(c, "sim-slurm") || !strcmp(c, "sim-k8s")) &&
		    gl_test_jnum(row, "reported_gpu_seconds") > 0) {
			l->clusters_with_capacity++;
			l->saturated += cJSON_GetNumberValue(cJSON_GetObjectItem(row, "saturation")) > 0;
		}
	}
	cJSON_Delete(j);
}

static void check_usage(struct live *l)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/idle?window=2h", 200), *row;
	cJSON *rows = cJSON_GetObjectItem(j, "allocated_idle");
	l->busy_s = l->idle_s = 0;
	cJSON_ArrayForEach(row, rows)
	{
		l->busy_s += gl_test_jnum(row, "busy_gpu_seconds");
		l->idle_s += gl_test_jnum(row, "idle_gpu_seconds");
	}
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/idle/candidates?policy=demo-idle", 200);
	l->candidates = j ? cJSON_GetArraySize(cJSON_GetObjectItem(j, "candidates")) : 0;
	cJSON_Delete(j);
}

/* /metrics: every source's health gauge; /v1/ingest/runs: each source's
 * newest run. */
static void check_sources(struct live *l)
{
	static const char *const need[] = {"sacct", "slurm-nodes", "kube", "kube-nodes", "dcgm"};
	struct gl_test_http r = {0};
	cJSON *j, *run, *runs;
	char seen[8][32];
	int nseen = 0;
	l->sources_up = l->sources_down = l->runs_failed = 0;
	if (gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r) == 0 && r.status == 200) {
		for (char *p = r.body; (p = strstr(p, "\ngpuledger_source_up{")); p++) {
			char *v = strchr(p, '}');
			if (v && v[1] == ' ') {
				if (v[2] == '1')
					l->sources_up++;
				else {
					l->sources_down++;
					snprintf(l->why, sizeof l->why, "%.*s", (int)(v + 3 - p - 1), p + 1);
				}
			}
		}
		for (size_t i = 0; i < GL_ARRAY_LEN(need); i++) {
			char pat[64];
			snprintf(pat, sizeof pat, "gpuledger_source_up{source=\"%s\"", need[i]);
			if (!strstr(r.body, pat)) {
				l->sources_down++;
				snprintf(l->why, sizeof l->why, "no health for %s yet", need[i]);
			}
		}
	}
	gl_test_http_fini(&r);
	j = gl_test_get_json(g_d.port, "/v1/ingest/runs?limit=200", 200);
	runs = cJSON_GetObjectItem(j, "runs");
	cJSON_ArrayForEach(run, runs)
	{
		const char *src = cJSON_GetStringValue(cJSON_GetObjectItem(run, "source"));
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(run, "status"));
		const char *cl = cJSON_GetStringValue(cJSON_GetObjectItem(run, "cluster"));
		char key[32];
		int dup = 0;
		if (!src || !st || !cl)
			continue;
		snprintf(key, sizeof key, "%.14s/%.14s", src, cl);
		for (int i = 0; i < nseen; i++)
			dup |= !strcmp(seen[i], key);
		if (dup || nseen == 8)
			continue; /* newest first: only each source's newest run counts */
		snprintf(seen[nseen++], sizeof seen[0], "%s", key);
		if (strcmp(st, "ok") && strcmp(st, "running")) {
			l->runs_failed++;
			snprintf(l->why, sizeof l->why, "%s's newest run: %s", key, st);
		}
	}
	cJSON_Delete(j);
}

static int all_live(const struct live *l)
{
	return l->jobs > l->jobs0 && l->clusters_with_capacity == 2 && l->saturated == 2 && l->busy_s > 0 &&
	       l->idle_s > 0 && l->candidates > 0 && l->sources_down == 0 && l->runs_failed == 0;
}

static void test_live_fleet(void **state)
{
	struct live l = {0};
	time_t t0 = time(NULL);
	(void)state;
	l.jobs0 = jobs_count();
	assert_true(l.jobs0 > 100); /* the history script loaded days of jobs and pods */
	do {
		sleep(3);
		l.jobs = jobs_count();
		check_capacity(&l);
		check_usage(&l);
		check_sources(&l);
	} while (!all_live(&l) && time(NULL) - t0 < BOUND_S);
	fprintf(stderr,
		"live after %lds: jobs %lld -> %lld, clusters with capacity %d, saturated %d, busy %lld s, idle %lld s, "
		"candidates %d, sources up %d, down %d, failed runs %d%s%s\n",
		(long)(time(NULL) - t0), l.jobs0, l.jobs, l.clusters_with_capacity, l.saturated, l.busy_s, l.idle_s,
		l.candidates, l.sources_up, l.sources_down, l.runs_failed, l.why[0] ? ": " : "", l.why);
	assert_true(l.jobs > l.jobs0);
	assert_int_equal(l.clusters_with_capacity, 2);
	assert_int_equal(l.saturated, 2);
	assert_true(l.busy_s > 0);
	assert_true(l.idle_s > 0);
	assert_true(l.candidates > 0);
	assert_true(l.sources_up >= 5);
	assert_int_equal(l.sources_down, 0);
	assert_int_equal(l.runs_failed, 0);
}

/* The budgets the script set from the month's spend: one over, the others
 * below a threshold they are about to cross. */
static void test_budgets(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/budgets", 200), *b;
	int n = 0, over = 0;
	(void)state;
	assert_non_null(j);
	cJSON_ArrayForEach(b, cJSON_GetObjectItem(j, "budgets"))
	{
		n++;
		over += atof(cJSON_GetStringValue(cJSON_GetObjectItem(b, "pct_used"))) >= 100.0;
	}
	assert_true(n >= 2);
	assert_true(over >= 1);
	cJSON_Delete(j);
}

/* Runs DIR/bin/TOOL ARGS through the shim (its real HTTP path): exit status,
 * stdout into *out (free()). */
static int shim(const char *tool, const char *const *args, char **out)
{
	char path[PATH_MAX + 16], log[PATH_MAX + 16];
	const char *argv[32];
	int st, n = 0;
	pid_t pid;
	snprintf(path, sizeof path, "%s/bin/%s", g_dir, tool);
	snprintf(log, sizeof log, "%s/shim.out", g_dir);
	argv[n++] = path;
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		if (!freopen(log, "w", stdout))
			_exit(126);
		unsetenv("GL_SIM_URL");
		execv(path, (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	*out = gl_test_read_file(log, NULL);
	return WEXITSTATUS(st);
}

static void test_shims(void **state)
{
	int64_t now = (int64_t)time(NULL), from = now - 2 * 86400;
	char s_from[32], s_to[32];
	char *out = NULL;
	struct gl_sacct_layout lay;
	struct gl_err e = {0};
	int rows = 0;
	(void)state;
	gl_timeutil_format(from, s_from, sizeof s_from);
	gl_timeutil_format(now, s_to, sizeof s_to);
	s_from[19] = s_to[19] = '\0';
	{
		/* sacct_poll.c's argv, with a delimiter of three bytes */
		const char *args[] = {"--allusers", "--parsable2", "--noheader", "--allocations", "--duplicates",
				      "--clusters", "sim-slurm", "--starttime", s_from, "--endtime", s_to,
				      "--delimiter", "\xe2\x98\x83", "--format", GL_SACCT_DEFAULT_FIELDS, NULL};
		assert_int_equal(shim("sacct", args, &out), 0);
	}
	assert_int_equal(gl_sacct_layout_init(&lay, GL_SACCT_DEFAULT_FIELDS, "\xe2\x98\x83", &e), 0);
	for (char *line = out, *nl; *line; line = nl + 1, rows++) {
		struct gl_sacct_rec r;
		nl = strchr(line, '\n');
		assert_non_null(nl);
		if (gl_sacct_parse_line(&lay, line, (size_t)(nl - line), &r, &e))
			fail_msg("shim sacct line %d: %s", rows + 1, e.msg);
		assert_true(r.submit_s <= now + 1);
		assert_true(r.end_s == GL_TIME_NONE || r.end_s >= from);
	}
	gl_sacct_layout_fini(&lay);
	free(out);
	assert_true(rows > 0);
	/* the tool's exit status and message come through the shim */
	{
		const char *args[] = {"--bogus", NULL};
		assert_int_equal(shim("sacct", args, &out), 1);
		free(out);
	}
	{
		const char *args[] = {"-P", "show", "event", "events=node,cluster", "clusters=sim-slurm", NULL};
		assert_int_equal(shim("sacctmgr", args, &out), 0);
		assert_non_null(strstr(out, "Cluster|NodeName|TimeStart|TimeEnd"));
		assert_non_null(strstr(out, "sim-slurm||"));
		free(out);
	}
	/* no simulator: the shim fails, as a tool that cannot reach its
	 * controller does, and the daemon records a failed run */
	assert_int_equal(sim_sh(NULL, 0, "stop", NULL, NULL, NULL), 0);
	g_sim_up = 0;
	{
		const char *args[] = {"get", "nodes", "-o", "json", NULL};
		assert_int_equal(shim("kubectl", args, &out), 1);
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_fleet),
		cmocka_unit_test(test_budgets),
		cmocka_unit_test(test_shims),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
