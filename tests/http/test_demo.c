/* The demo `make run` loads (scripts/demo-data.sh with gpuledger.example.yaml)
 * is what a new user judges the product by: its Philly cluster must hold
 * every job of the sample, exactly, moved by whole days to end the day
 * before the load; the example config must give every Philly job an owner
 * and a price; and ten weeks of history must give the forecast view real
 * (backtested) forecasts, not the short-history fallback. Checked against
 * the sample's JSON read here (gl_test_philly_to_sacct), not against the
 * derived tests/fixtures/philly/demo_jobs.txt the script reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXJ 5000

static struct gl_test_philly_job g_j[MAXJ];
static int g_n;
static char g_dsn[512], g_window[128];
static struct gl_test_daemon g_d;
static PGconn *g_c;
static time_t g_loaded;

/* scripts/demo-data.sh BIN --config gpuledger.example.yaml, as scripts/run.sh
 * calls it, against the test database; its output in GL_TEST_TMP. */
static int run_demo_script(void)
{
	char log[PATH_MAX];
	int st;
	pid_t pid;
	snprintf(log, sizeof log, "%s/demo-data.log", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	pid = fork();
	if (pid == 0) {
		if (!freopen(log, "w", stdout) || dup2(fileno(stdout), 2) < 0)
			_exit(126);
		setenv("GPULEDGER_DSN", g_dsn, 1);
		execl(gl_test_fixture("scripts/demo-data.sh"), "demo-data.sh", gl_test_bin(), "--config",
		      gl_test_fixture("gpuledger.example.yaml"), (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char *out = gl_test_read_file(log, NULL);
		fprintf(stderr, "demo-data.sh failed:\n%s\n", out ? out : "");
		free(out);
		return -1;
	}
	return 0;
}

/* The example config as the daemon's, with its report directory moved out
 * of the repository (the daemon records last month's reports at start). */
static char *example_config(void)
{
	char *ex = gl_test_read_file(gl_test_fixture("gpuledger.example.yaml"), NULL), *at, *out;
	char dir[PATH_MAX + 32];
	size_t n;
	if (!ex || !(at = strstr(ex, "dir: var/reports"))) {
		free(ex);
		return NULL;
	}
	snprintf(dir, sizeof dir, "dir: %s/demo-reports", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	n = strlen(ex) + strlen(dir) + 1;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%.*s%s%s", (int)(at - ex), ex, dir, at + strlen("dir: var/reports"));
	free(ex);
	return out;
}

static int setup(void **state)
{
	char path[PATH_MAX], *cfg;
	struct tm tm;
	time_t from;
	snprintf(path, sizeof path, "%s/demo-philly.txt", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	g_n = gl_test_philly_to_sacct(path, NULL, g_j, MAXJ);
	if (g_n < 4000 || gl_test_db_fresh("gl_test_demo", g_dsn, sizeof g_dsn))
		return -1;
	g_loaded = time(NULL);
	if (run_demo_script())
		return -1;
	if (!(g_c = PQconnectdb(g_dsn)) || PQstatus(g_c) != CONNECTION_OK)
		return -1;
	/* the eleven weeks before the load: the whole Philly history */
	from = g_loaded - 77 * 86400;
	gmtime_r(&from, &tm);
	strftime(g_window, sizeof g_window, "%Y-%m-%dT00:00:00Z,", &tm);
	gmtime_r(&g_loaded, &tm);
	strftime(g_window + strlen(g_window), sizeof g_window - strlen(g_window), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!(cfg = example_config()))
		return -1;
	int rc = gl_test_daemon_start(&g_d, g_dsn, cfg, (const char *[]){"--no-ingest", NULL});
	free(cfg);
	return rc;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* Every job of the sample, once, with its GPUs, its length and its wait:
 * moving the trace must not lose, add or stretch a job. */
static void test_jobs_exact(void **state)
{
	long long gpu_s = 0, wait_s = 0, failed = 0;
	for (int i = 0; i < g_n; i++) {
		gpu_s += g_j[i].gpus * (g_j[i].end - g_j[i].start);
		wait_s += g_j[i].start - g_j[i].submit;
		failed += g_j[i].failed;
	}
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs JOIN clusters USING (cluster_id) "
					   "WHERE clusters.name = 'philly'"),
			 g_n);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(DISTINCT jobs.name) FROM jobs"
					   " JOIN clusters USING (cluster_id) WHERE clusters.name = 'philly'"),
			 g_n);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(gpu_milli / 1000 * extract(epoch FROM end_at - start_at))::bigint"
					   " FROM jobs JOIN clusters USING (cluster_id) WHERE clusters.name = 'philly'"),
			 gpu_s);
	assert_int_equal(gl_test_qint(g_c, "SELECT sum(extract(epoch FROM start_at - submit_at))::bigint"
					   " FROM jobs JOIN clusters USING (cluster_id) WHERE clusters.name = 'philly'"),
			 wait_s);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs JOIN clusters USING (cluster_id)"
					   " WHERE clusters.name = 'philly' AND state = 'FAILED'"),
			 failed);
}

/* Moved by whole days so that the last job ends within the day before the
 * load: the forecasts start where the history ends, and a time of day in
 * the trace is the same time of day in the demo. */
static void test_moved_to_end_yesterday(void **state)
{
	long long last_end = gl_test_qint(g_c, "SELECT extract(epoch FROM max(end_at))::bigint FROM jobs"
					       " JOIN clusters USING (cluster_id) WHERE clusters.name = 'philly'");
	long long first_submit = gl_test_qint(g_c, "SELECT extract(epoch FROM min(submit_at))::bigint FROM jobs"
						   " JOIN clusters USING (cluster_id) WHERE clusters.name = 'philly'");
	long long want_first = g_j[0].submit, want_last = g_j[0].end;
	for (int i = 0; i < g_n; i++) {
		if (g_j[i].submit < want_first)
			want_first = g_j[i].submit;
		if (g_j[i].end > want_last)
			want_last = g_j[i].end;
	}
	assert_true(last_end <= (long long)time(NULL));
	assert_true(last_end > (long long)g_loaded - 86400);
	assert_int_equal((last_end - want_last) % 86400, 0);
	assert_int_equal(last_end - first_submit, want_last - want_first);
	/* ten weeks of history, the forecasts' default window for days */
	assert_true(last_end - first_submit > 70 * 86400);
}

/* The example config's owner rules give every Philly job a team, and its
 * `*` rate prices the GPUs the trace names no model for: nothing of the
 * demo is unowned or unpriced. Cost is GPU-seconds at 1.00 an hour. */
static void test_owned_and_priced(void **state)
{
	char p[512];
	long long gpu_s = 0, got_s = 0, got_cost = 0;
	cJSON *j, *it, *items;
	for (int i = 0; i < g_n; i++)
		gpu_s += g_j[i].gpus * (g_j[i].end - g_j[i].start);
	snprintf(p, sizeof p, "/v1/chargeback?window=%s&aggregate=team&filter=cluster:%%22philly%%22", g_window);
	j = gl_test_get_json(g_d.port, p, 200);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unpriced_models")), 0);
	items = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items");
	cJSON_ArrayForEach(it, items)
	{
		const char *name = cJSON_GetObjectItem(it, "name")->valuestring;
		assert_true(!strcmp(name, "research") || !strcmp(name, "vision") || !strcmp(name, "language") ||
			    !strcmp(name, "platform"));
		assert_int_equal(gl_test_jnum(it, "unpriced_gpu_seconds"), 0);
		got_s += gl_test_jnum(it, "allocated_gpu_seconds");
		got_cost += gl_test_jnum(it, "cost_micros");
	}
	assert_int_equal(cJSON_GetArraySize(items), 4);
	assert_int_equal(got_s, gpu_s);
	/* each line rounded once: within a micro-unit a line of the exact price */
	assert_true(llabs(got_cost - gpu_s * 1000000 / 3600) <= cJSON_GetArraySize(items));
	cJSON_Delete(j);
}

/* Ten weeks of history give every team a backtested forecast: a method
 * chosen over origins, intervals, accuracy, no fallback. */
static void test_forecasts_backtested(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/forecast?metric=gpu_hours&aggregate=team&step=day&horizon=14", 200),
	      *s;
	int teams = 0;
	assert_non_null(j);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
	{
		const char *key = cJSON_GetObjectItem(s, "key")->valuestring;
		cJSON *acc = cJSON_GetObjectItem(s, "accuracy"), *f0;
		if (!strcmp(key, "__unallocated__"))
			continue; /* the testbed cluster's one day of unowned jobs */
		teams++;
		assert_true(cJSON_IsFalse(cJSON_GetObjectItem(s, "fallback")));
		assert_true(gl_test_jnum(acc, "origins") >= 28);
		assert_true(cJSON_IsNumber(cJSON_GetObjectItem(acc, "mase")));
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(s, "forecast")), 14);
		f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "forecast"), 0);
		assert_true(cJSON_IsNumber(cJSON_GetObjectItem(f0, "lo80")));
		assert_true(cJSON_GetObjectItem(f0, "hi95")->valuedouble >= cJSON_GetObjectItem(f0, "hi80")->valuedouble);
	}
	assert_int_equal(teams, 4);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs_exact),
		cmocka_unit_test(test_moved_to_end_yesterday),
		cmocka_unit_test(test_owned_and_priced),
		cmocka_unit_test(test_forecasts_backtested),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
