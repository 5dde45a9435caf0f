/* /metrics for the Prometheus stack (issue 28 item 4): the month-to-date
 * cost and GPU-seconds per team and cluster, capacity per cluster and GPU
 * model and each budget's used ratio are the figures /v1/chargeback,
 * /v1/capacity and /v1/budgets give for the month; the whole scrape passes
 * `promtool check metrics` (every metric with HELP and TYPE); and the real
 * Prometheus binary scraping the real daemon answers one cost series with
 * the API's figure. Fleet: c1 with 8 a100 since before the month, jobs of
 * accounts teama (team vision) and teamb (team language) on c1 and c2
 * (c2 without inventory), all finished, so the figures stand still.
 * promtool and prometheus come with Debian's `prometheus` package (make
 * test installs it); without them those two tests print SKIP. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;

static const char config[] = "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n"
			     "owners:\n"
			     "  - {match: account, value: teama, team: vision, project: p1, cost_center: c, cluster: \"\","
			     " from: \"\", to: \"\"}\n"
			     "  - {match: account, value: teamb, team: language, project: p2, cost_center: c, cluster: \"\","
			     " from: \"\", to: \"\"}\n"
			     "budgets:\n  - {owner: vision, aggregate: team, amount: \"1000.00\", currency: \"\", from: \"\","
			     " to: \"\"}\n";

static int setup(void **state)
{
	/* jobs inside this month and before now (at most 10 h after the
	 * month's start, or what of it has passed) */
	static const char *const sql[] = {
		"INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm'), ('c2', 'slurm')",
		"INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions, source, valid_from)"
		" SELECT cluster_id, 'n1', 'a100', 8, 'p', ARRAY['p'], 'scontrol', date_trunc('month', now()) - interval '3 days'"
		" FROM clusters WHERE name = 'c1'",
		"INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		" end_at, elapsed_s, gpu_micro, gpu_type, nodes)"
		" SELECT c.cluster_id, 'db:' || v.id, v.id, 'u', v.acct, 'p', 'COMPLETED', s, s, e,"
		" extract(epoch FROM e - s)::bigint, v.g * 1000, 'a100', ARRAY['n1']"
		" FROM clusters c, (VALUES ('c1', '1', 'teama', 2000, 0, 7), ('c1', '2', 'teamb', 3000, 1, 4),"
		"  ('c2', '3', 'teama', 1000, 2, 9), ('c2', '4', 'teamb', 4000, 0, 3)) v(c, id, acct, g, h0, h1),"
		" LATERAL (SELECT date_trunc('month', now()) AS m) m,"
		" LATERAL (SELECT m.m + least(make_interval(hours => v.h0), (now() - m.m) / 2) AS s,"
		"  m.m + least(make_interval(hours => v.h1), (now() - m.m) * 0.9) AS e) t"
		" WHERE c.name = v.c",
	};
	if (gl_test_db_fresh("gl_test_metrics_ledger", g_dsn, sizeof g_dsn))
		return -1;
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
		if (gl_test_exec_dsn(g_dsn, sql[i]) < 1)
			return -1;
	return gl_test_daemon_start(&g_d, g_dsn, config, NULL);
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* The scrape once the daemon's first refresh is in it (caller frees). */
static char *scrape(void)
{
	for (int i = 0; i < 600; i++) {
		struct gl_test_http r = {0};
		assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		if (strstr(r.body, "\ngpuledger_ledger_metrics_timestamp_seconds ")) {
			char *b = strdup(r.body);
			gl_test_http_fini(&r);
			return b;
		}
		gl_test_http_fini(&r);
		usleep(100 * 1000);
	}
	fail_msg("no month-to-date metrics in /metrics after 60 s");
	return NULL;
}

/* The value of the sample whose name and labels are exactly `series`
 * ("name{a=\"x\",b=\"y\"}"); NAN when absent. */
static double sample(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

static void test_equal_to_api(void **state)
{
	char *m = scrape(), series[256];
	cJSON *cb = gl_test_get_json(g_d.port, "/v1/chargeback?window=month&aggregate=team,cluster", 200), *it;
	cJSON *cap;
	/* capacity grows by the second: the API asked for the window the
	 * refresh saw, the month's start up to its timestamp */
	{
		time_t t = (time_t)sample(m, "gpuledger_ledger_metrics_timestamp_seconds");
		struct tm tm;
		char a[32], b[32], path[160];
		gmtime_r(&t, &tm);
		strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
		strftime(a, sizeof a, "%Y-%m-01T00:00:00Z", &tm);
		snprintf(path, sizeof path, "/v1/capacity?window=%s,%s&aggregate=gpu_model", a, b);
		cap = gl_test_get_json(g_d.port, path, 200);
	}
	cJSON *bud = gl_test_get_json(g_d.port, "/v1/budgets", 200);
	const cJSON *step;
	int lines = 0, rows = 0;
	assert_non_null(cb);
	assert_non_null(cap);
	assert_non_null(bud);
	step = cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), 0);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(step, "items"))
	{
		const cJSON *k = cJSON_GetObjectItem(it, "key");
		const char *team = cJSON_GetObjectItem(k, "team")->valuestring,
			   *cl = cJSON_GetObjectItem(k, "cluster")->valuestring;
		double v;
		snprintf(series, sizeof series, "gpuledger_month_cost{team=\"%s\",cluster=\"%s\",currency=\"USD\"}", team, cl);
		v = sample(m, series);
		assert_false(isnan(v));
		assert_int_equal(llround(v * 1e6), gl_test_jnum(it, "total_micros"));
		assert_true(gl_test_jnum(it, "total_micros") > 0);
		snprintf(series, sizeof series, "gpuledger_month_gpu_seconds{team=\"%s\",cluster=\"%s\"}", team, cl);
		assert_int_equal(llround(sample(m, series)), gl_test_jnum(it, "allocated_gpu_seconds"));
		lines++;
	}
	assert_int_equal(lines, 4); /* two teams on two clusters */
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cap, "rows"))
	{
		static const char *const f[] = {"reported", "allocated", "idle"};
		const char *cl = cJSON_GetObjectItem(it, "cluster")->valuestring,
			   *model = cJSON_GetObjectItem(it, "gpu_model")->valuestring;
		for (size_t i = 0; i < 3; i++) {
			char key[64];
			snprintf(series, sizeof series, "gpuledger_capacity_%s_gpu_seconds{cluster=\"%s\",gpu_model=\"%s\"}",
				 f[i], cl, model);
			snprintf(key, sizeof key, "%s_gpu_seconds", f[i]);
			assert_int_equal(llround(sample(m, series)), gl_test_jnum(it, key));
		}
		rows++;
	}
	assert_true(rows >= 1);
	snprintf(series, sizeof series, "gpuledger_capacity_reported_gpu_seconds{cluster=\"c1\",gpu_model=\"a100\"}");
	assert_true(sample(m, series) > 0);
	{
		const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(bud, "budgets"), 0);
		double used = sample(m, "gpuledger_budget_used_ratio{budget=\"vision\",aggregate=\"team\"}");
		assert_non_null(b);
		assert_true(used > 0);
		/* pct_used is the same ratio, as a percentage with its own rounding */
		assert_true(fabs(used * 100 - strtod(cJSON_GetObjectItem(b, "pct_used")->valuestring, NULL)) < 0.06);
		assert_int_equal(llround(used * 1000 * 1e6), (long long)gl_test_jnum(b, "spend_to_date_micros"));
	}
	cJSON_Delete(cb);
	cJSON_Delete(cap);
	cJSON_Delete(bud);
	free(m);
}

static int have(const char *prog)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static void test_promtool(void **state)
{
	char *m = scrape(), path[300], cmd[700];
	FILE *f;
	int st;
	if (!have("promtool")) {
		printf("SKIP test_promtool: no promtool (Debian package prometheus)\n");
		free(m);
		skip();
	}
	snprintf(path, sizeof path, "%s/metrics.txt", g_d.dir);
	assert_non_null(f = fopen(path, "w"));
	fputs(m, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "promtool check metrics < %s", path);
	st = system(cmd);
	if (st != 0)
		fprintf(stderr, "%s\n", m);
	assert_int_equal(st, 0);
	free(m);
}

/* Starts prometheus on a free loopback port of its own choosing-by-retry,
 * scraping the daemon every second; returns its pid, *port. */
static pid_t prometheus_start(const char *dir, int *port)
{
	char cfg[300], data[300], listen[64], logf[300];
	FILE *f;
	snprintf(cfg, sizeof cfg, "%s/prometheus.yml", dir);
	snprintf(data, sizeof data, "%s/prom-data", dir);
	snprintf(logf, sizeof logf, "%s/prometheus.log", dir);
	assert_non_null(f = fopen(cfg, "w"));
	fprintf(f,
		"global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
		"scrape_configs:\n  - job_name: gpuledger\n    metrics_path: /metrics\n"
		"    authorization:\n      credentials: %s\n"
		"    static_configs:\n      - targets: ['127.0.0.1:%d']\n",
		g_d.token, g_d.port);
	fclose(f);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	for (int attempt = 0; attempt < 10; attempt++) {
		pid_t pid;
		*port = 20000 + rand() % 40000;
		snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", *port);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			char cfgarg[320], dataarg[320];
			FILE *lf = freopen(logf, "a", stderr);
			(void)lf;
			snprintf(cfgarg, sizeof cfgarg, "--config.file=%s", cfg);
			snprintf(dataarg, sizeof dataarg, "--storage.tsdb.path=%s", data);
			execlp("prometheus", "prometheus", cfgarg, dataarg, listen, "--log.level=warn", (char *)NULL);
			_exit(127);
		}
		/* up when its readiness answers; a port taken ends it early */
		for (int i = 0; i < 300; i++) {
			struct gl_test_http r = {0};
			struct gl_test_http_opts o = {.no_token = 1};
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid)
				break;
			if (gl_test_http_ex(*port, "GET", "/-/ready", NULL, 0, NULL, &o, &r) == 0 && r.status == 200) {
				gl_test_http_fini(&r);
				return pid;
			}
			gl_test_http_fini(&r);
			usleep(100 * 1000);
		}
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	fail_msg("prometheus did not start (see %s)", logf);
	return -1;
}

static void test_prometheus_scrape(void **state)
{
	char *m = scrape();
	int port;
	pid_t pid;
	double want = sample(m, "gpuledger_month_cost{team=\"vision\",cluster=\"c1\",currency=\"USD\"}"), got = NAN;
	free(m);
	if (!have("prometheus")) {
		printf("SKIP test_prometheus_scrape: no prometheus (Debian package prometheus)\n");
		skip();
	}
	assert_false(isnan(want));
	pid = prometheus_start(g_d.dir, &port);
	for (int i = 0; i < 600 && isnan(got); i++) {
		struct gl_test_http r = {0};
		struct gl_test_http_opts o = {.no_token = 1};
		cJSON *j, *res;
		usleep(100 * 1000);
		if (gl_test_http_ex(port, "GET",
				    "/api/v1/query?query=gpuledger_month_cost%7Bteam%3D%22vision%22%2Ccluster%3D%22c1%22%7D",
				    NULL, 0, NULL, &o, &r) ||
		    r.status != 200) {
			gl_test_http_fini(&r);
			continue;
		}
		j = cJSON_Parse(r.body);
		res = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "data"), "result"), 0);
		if (res)
			got = strtod(cJSON_GetArrayItem(cJSON_GetObjectItem(res, "value"), 1)->valuestring, NULL);
		cJSON_Delete(j);
		gl_test_http_fini(&r);
	}
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	assert_false(isnan(got));
	/* Prometheus keeps a float64: equal to the micro-unit */
	assert_int_equal(llround(got * 1e6), llround(want * 1e6));
	{
		cJSON *cb = gl_test_get_json(g_d.port, "/v1/chargeback?window=month&aggregate=team,cluster"
						      "&filter=team:%22vision%22%2Bcluster:%22c1%22",
					     200);
		const cJSON *it = cJSON_GetArrayItem(
			cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), 0), "items"), 0);
		assert_non_null(it);
		assert_int_equal(llround(got * 1e6), gl_test_jnum(it, "total_micros"));
		cJSON_Delete(cb);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_to_api),
		cmocka_unit_test(test_promtool),
		cmocka_unit_test(test_prometheus_scrape),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
