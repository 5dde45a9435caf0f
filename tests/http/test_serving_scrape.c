/* The real daemon scraping inference servers over loopback HTTP
 * (sources.serving): the real vLLM and SGLang scrapes served by a server
 * inside this test for endpoints on running pods, a target answering
 * HTML, one 404, and one whose URL carries credentials. The good ones are
 * ingested and priced from their pods (/v1/inference), the bad ones
 * reported in /metrics and in the run, and no credential is stored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/promserve.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FX "tests/fixtures/serving/"
#define REQ "vllm:request_success_total{finished_reason=\"stop\",model_name=\"Qwen/Qwen2.5-Coder-1.5B-Instruct\"}"

static char g_dsn[512];
static char g_dir[256];
static struct gl_test_daemon g_d;
static struct gl_test_server *g_srv;
static int g_port;
static PGconn *g_c;
static char *g_vllm;

/* Pods chat-0 and sg-0 running since an hour before at_s, as kubectl
 * prints a running pod (hand-written, times from the clock). */
static int write_pods(const char *path, time_t at_s)
{
	char start[32], doc[2048];
	time_t t = at_s - 3600;
	strftime(start, sizeof start, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	snprintf(doc, sizeof doc,
		 "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":["
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"chat-0\",\"namespace\":\"llm\","
		 "\"uid\":\"cccccccc-0000-4000-8000-000000000001\",\"creationTimestamp\":\"%s\",\"labels\":{\"app\":\"chat\"}},"
		 "\"spec\":{\"nodeName\":\"kn1\",\"containers\":[{\"name\":\"server\",\"resources\":{\"limits\":"
		 "{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}},"
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"sg-0\",\"namespace\":\"llm\","
		 "\"uid\":\"cccccccc-0000-4000-8000-000000000002\",\"creationTimestamp\":\"%s\",\"labels\":{\"app\":\"sg\"}},"
		 "\"spec\":{\"nodeName\":\"kn1\",\"containers\":[{\"name\":\"server\",\"resources\":{\"limits\":"
		 "{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}}]}\n",
		 start, start, start, start);
	return gl_test_write_file(path, doc);
}

static int setup(void **state)
{
	static const char html[] = "<html><body>502 Bad Gateway</body></html>\n";
	char cfg[4096], pods[300], now[40];
	struct gl_test_out o;
	time_t t = time(NULL);
	size_t n;
	char *sg;
	if (gl_test_db_fresh("gl_test_serving_scrape", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-servscrape-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	snprintf(pods, sizeof pods, "%s/pods.json", g_dir);
	strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	if (write_pods(pods, t) ||
	    gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "k1", "--file", pods, "--at", now, NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_server_start(&g_srv, &g_port))
		return -1;
	g_vllm = gl_test_read_file(gl_test_fixture(FX "vllm_aibrix_qwen25_coder.prom"), &n);
	gl_test_server_route(g_srv, "/chat/metrics", g_vllm, n, 0);
	sg = gl_test_read_file(gl_test_fixture(FX "sglang_llama31_8b.prom"), &n);
	gl_test_server_route(g_srv, "/sg/metrics", sg, n, 0);
	free(sg);
	gl_test_server_route(g_srv, "/html/metrics", html, sizeof html - 1, 0);
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\n"
		 "rates:\n  - model: \"*\"\n    per_gpu_hour: \"3.60\"\n"
		 "sources:\n  serving:\n"
		 "    - endpoint: chat\n      cluster: k1\n      pod: llm/chat-0\n      interval_s: 1\n      timeout_s: 2\n"
		 "      targets: http://127.0.0.1:%d/chat/metrics\n"
		 "    - endpoint: sg\n      cluster: k1\n      namespace: llm\n      selector: app=sg\n"
		 "      interval_s: 1\n      timeout_s: 2\n"
		 "      targets: http://scraper:s3cret-pw@127.0.0.1:%d/sg/metrics\n"
		 "    - endpoint: broken\n      cluster: k1\n      interval_s: 1\n      timeout_s: 2\n"
		 "      targets: http://127.0.0.1:%d/html/metrics http://127.0.0.1:%d/missing/metrics\n",
		 g_port, g_port, g_port, g_port);
	return gl_test_daemon_start(&g_d, g_dsn, cfg, NULL);
}

static int teardown(void **state)
{
	char cmd[300];
	int st = gl_test_daemon_stop(&g_d);
	gl_test_server_stop(g_srv);
	PQfinish(g_c);
	free(g_vllm);
	snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
	return st == 0 && system(cmd) == 0 ? 0 : -1;
}

static char *metrics(void)
{
	struct gl_test_http r;
	char *b;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	b = strdup(r.body);
	gl_test_http_fini(&r);
	return b;
}

static int up(const char *m, const char *target, int v)
{
	char want[512];
	snprintf(want, sizeof want, "gpuledger_source_up{source=\"serving\",cluster=\"k1\",target=\"%s\"} %d\n", target, v);
	return strstr(m, want) != NULL;
}

static void test_scraped(void **state)
{
	char chat[128], html[128], missing[128], *m = NULL, *text;
	int done = 0;
	(void)state;
	snprintf(chat, sizeof chat, "http://127.0.0.1:%d/chat/metrics", g_port);
	snprintf(html, sizeof html, "http://127.0.0.1:%d/html/metrics", g_port);
	snprintf(missing, sizeof missing, "http://127.0.0.1:%d/missing/metrics", g_port);
	/* a first round sets the levels (a bound, not a timing assertion) */
	for (int i = 0; i < 300 && !done; i++) {
		free(m);
		m = metrics();
		done = gl_test_qint(g_c, "SELECT count(*) FROM serving_series WHERE state_at IS NOT NULL") == 2 &&
		       up(m, chat, 1) && up(m, html, 0) && up(m, missing, 0);
		if (!done)
			usleep(100 * 1000);
	}
	if (!done)
		fprintf(stderr, "metrics:\n%s\n", m);
	assert_true(done);
	free(m);
	/* the server answers 10 more requests: the next rounds count them */
	text = gl_test_scrape_with(g_vllm, (const char *[]){REQ, "14.0", NULL});
	gl_test_server_route(g_srv, "/chat/metrics", text, strlen(text), 0);
	free(text);
	done = 0;
	for (int i = 0; i < 300 && !done; i++) {
		done = gl_test_qint(g_c, "SELECT coalesce(sum(requests), 0) FROM serving_usage") == 10;
		if (!done)
			usleep(100 * 1000);
	}
	assert_true(done);
	/* every row of chat's series on chat-0 */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM serving_usage u JOIN serving_endpoints e USING (endpoint_id)"
					   " LEFT JOIN jobs j ON j.job_pk = u.job_pk WHERE e.name = 'chat'"
					   " AND j.job_id IS DISTINCT FROM 'chat-0'"),
			 0);
	/* sg found by its selector; its URL's password is stored nowhere */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM serving_jobs sj JOIN jobs j ON j.job_pk = sj.job_pk"
					   " WHERE j.job_id = 'sg-0'"),
			 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM serving_series WHERE instance LIKE '%s3cret%'"), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE input LIKE '%s3cret%'"
					   " OR skip_reasons::text LIKE '%s3cret%' OR error LIKE '%s3cret%'"),
			 0);
	/* the run says what failed */
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE source = 'serving' AND status = 'partial'"
				      " AND skip_reasons::text LIKE '%html/metrics: not Prometheus text%'"
				      " AND skip_reasons::text LIKE '%missing/metrics%HTTP 404%'") >= 1);
	m = metrics();
	assert_null(strstr(m, "s3cret"));
	assert_non_null(strstr(m, "gpuledger_ingest_lag_seconds{source=\"serving\",cluster=\"k1\"}"));
	free(m);
}

/* The scraped requests priced from the pod: 10 requests, its GPU-time at
 * 3.60 an hour (1,000 micro-units a GPU-second). The pod's firm time is
 * the hour from its start to the kube poll that saw it running (sql/061:
 * what no source observed since is reported apart, never billed). */
static void test_priced(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/inference?window=24h&aggregate=endpoint", 200), *it, *chat = NULL;
	(void)state;
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, "chat"))
			chat = it;
	}
	assert_non_null(chat);
	assert_int_equal(gl_test_jnum(chat, "requests"), 10);
	assert_int_equal(gl_test_jnum(chat, "gpu_seconds"), 3600);
	assert_int_equal(gl_test_jnum(chat, "cost_micros"), 1000 * gl_test_jnum(chat, "gpu_seconds"));
	assert_int_equal(gl_test_jnum(chat, "cost_per_1k_requests_micros"), 100 * gl_test_jnum(chat, "cost_micros"));
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scraped),
		cmocka_unit_test(test_priced),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
