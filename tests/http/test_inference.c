/* GET /v1/inference end to end: the real binary ingests pods on a known
 * GPU (a100 at 2.50 an hour) and the real serving scrapes of vLLM, Triton,
 * SGLang and TGI (tests/fixtures/serving) with their counters set per
 * scrape, and the daemon answers over real HTTP. Every expected figure is
 * worked out by hand below from those inputs: cost per 1,000 requests and
 * per 1M prompt / generated tokens to the micro-unit, latency quantiles
 * from the bucket counts, zero requests giving null per-request figures,
 * requests of an unknown pod listed apart. Conservation: the serving GPUs'
 * cost and GPU-seconds equal /v1/chargeback's for the same window and
 * owner, per hour too, before and after the daily rollup, and each pod's
 * cost equals /v1/jobs'. */
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
#include <unistd.h>

#define FX "tests/fixtures/serving/"
#define QWEN "model_name=\"Qwen/Qwen2.5-Coder-1.5B-Instruct\""
#define LLAMA "model_name=\"meta-llama/Llama-3.1-8B-Instruct\""
#define E2E(le) "sglang:e2e_request_latency_seconds_bucket{le=\"" le "\"," LLAMA "}"

static char g_dsn[512];
static char g_dir[256];
static struct gl_test_daemon g_d;
static char g_scoped[3][64]; /* tokens scoped to team search, assist, research */

static const char config_yaml[] =
	"rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n"
	"owners:\n"
	"  - match: label:team\n    value: assist\n    team: assist\n"
	"  - match: label:team\n    value: search\n    team: search\n"
	"  - match: label:team\n    value: research\n    team: research\n";

static void run_status(const char *const *argv, int want)
{
	struct gl_test_out o;
	char *a[16] = {0};
	for (int i = 0; argv[i] && i < 15; i++)
		a[i] = (char *)argv[i];
	if (gl_test_run(g_dsn, NULL, &o, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12],
			a[13], a[14], NULL) ||
	    o.status != want)
		fail_msg("%s %s: exit %d: %s", argv[0], argv[1], o.status, o.err);
	gl_test_out_fini(&o);
}

static void run_ok(const char *const *argv)
{
	run_status(argv, 0);
}

/* One scrape: the real file with these values, ingested at `at`. */
static void scrape(const char *fixture, const char *const *pairs, const char *endpoint, const char *pod,
		   const char *at, const char *model)
{
	char path[300], podarg[64];
	char *src = gl_test_read_file(gl_test_fixture(fixture), NULL), *text = gl_test_scrape_with(src, pairs);
	snprintf(path, sizeof path, "%s/%s-%s-%s.prom", g_dir, endpoint, pod, at);
	snprintf(podarg, sizeof podarg, "llm/%s", pod);
	assert_int_equal(gl_test_write_file(path, text), 0);
	/* the Triton file's own "..." line is skipped and reported: exit 4 */
	run_status((const char *[]){"ingest", "serving", "--file", path, "--at", at, "--endpoint", endpoint, "--cluster",
				    "k1", "--pod", podarg, model ? "--model" : NULL, model, NULL},
		   strstr(fixture, "triton") ? 4 : 0);
	free(src);
	free(text);
}

static void vllm(const char *pod, const char *at, const char *req, const char *prompt, const char *gen)
{
	scrape(FX "vllm_aibrix_qwen25_coder.prom",
	       (const char *[]){"vllm:request_success_total{finished_reason=\"stop\"," QWEN "}", req,
				"vllm:prompt_tokens_total{" QWEN "}", prompt, "vllm:generation_tokens_total{" QWEN "}",
				gen, NULL},
	       "chat", pod, at, NULL);
}

/* chat-0's GPU on kn1 as dcgm-exporter prints it (hand-written line
 * format of the real exporter, util 0 = idle, 80 = busy) */
static void dcgm(const char *at, int util)
{
	char path[300], line[300], atarg[40];
	snprintf(path, sizeof path, "%s/dcgm-%s.prom", g_dir, at);
	snprintf(line, sizeof line,
		 "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-kn1-0000\",modelName=\"NVIDIA A100-SXM4-80GB\","
		 "Hostname=\"kn1\",namespace=\"llm\",pod=\"chat-0\"} %d\n",
		 util);
	assert_int_equal(gl_test_write_file(path, line), 0);
	snprintf(atarg, sizeof atarg, "%s", at);
	run_ok((const char *[]){"ingest", "dcgm", "--cluster", "k1", "--file", path, "--at", atarg, NULL});
}

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_inference", g_dsn, sizeof g_dsn))
		return -1;
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-inference-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	run_ok((const char *[]){"ingest", "kube-nodes", "--cluster", "k1", "--file",
				"tests/fixtures/serving/kube_nodes.json", "--at", "2026-10-01T00:00:00Z", NULL});
	run_ok((const char *[]){"ingest", "kube", "--cluster", "k1", "--file", FX "kube_pods_serving.json", "--at",
				"2026-10-02T10:00:00Z", NULL});
	/* chat (vLLM) on chat-0 all day and chat-1 from 04:00, in time order:
	 * chat-0: levels 4/148/955, then +600/+400,000/+900,000 and
	 * +424/+350,000/+700,000 (1,024 requests, 750,000 prompt and
	 * 1,600,000 generated tokens); chat-1 started after the endpoint's
	 * previous scrape, so its first values count whole (4/148/955), then
	 * +96/+50,000/+100,000 (100, 50,148, 100,955). chat: 1,124 requests,
	 * 800,148 prompt, 1,700,955 generated tokens. */
	vllm("chat-0", "2026-10-02T00:00:30Z", "4.0", "148.0", "955.0");
	vllm("chat-1", "2026-10-02T04:00:30Z", "4.0", "148.0", "955.0");
	vllm("chat-0", "2026-10-02T05:00:00Z", "604.0", "400148.0", "900955.0");
	vllm("chat-0", "2026-10-02T09:59:30Z", "1028.0", "750148.0", "1600955.0");
	vllm("chat-1", "2026-10-02T09:59:30Z", "100.0", "50148.0", "100955.0");
	/* embed (Triton) on embed-0: +5,000 successes and +3 failures = 5,003
	 * requests, +20,000 inferences in +4,000 executions */
	scrape(FX "triton_mnist_cnn.prom", (const char *[]){NULL}, "embed", "embed-0", "2026-10-02T00:10:00Z", NULL);
	scrape(FX "triton_mnist_cnn.prom",
	       (const char *[]){"nv_inference_request_success{model=\"mnist_cnn\",version=\"1\"}", "400927.000000",
				"nv_inference_request_failure{model=\"mnist_cnn\",version=\"1\"}", "3.000000",
				"nv_inference_count{model=\"mnist_cnn\",version=\"1\"}", "415927.000000",
				"nv_inference_exec_count{model=\"mnist_cnn\",version=\"1\"}", "197751.000000", NULL},
	       "embed", "embed-0", "2026-10-02T09:50:00Z", NULL);
	/* sg (SGLang) on sg-0: +1,000,000 prompt, +2,000,000 generated, and
	 * 200 requests in the e2e histogram: per bucket 10 (<= 2.5 s), 20
	 * (5), 30 (10), 50 (15), 40 (20), 30 (30), 10 (40), 5 (50), 3 (60),
	 * 2 (+Inf), i.e. cumulative 10 30 60 110 150 180 190 195 198 200 on
	 * top of the file's own counts */
	scrape(FX "sglang_llama31_8b.prom", (const char *[]){NULL}, "sg", "sg-0", "2026-10-02T00:05:00Z", NULL);
	scrape(FX "sglang_llama31_8b.prom",
	       (const char *[]){"sglang:prompt_tokens_total{" LLAMA "}", "9.128902e+06",
				"sglang:generation_tokens_total{" LLAMA "}", "9.557572e+06", E2E("2.5"), "16.0", E2E("5.0"),
				"37.0", E2E("10.0"), "70.0", E2E("15.0"), "121.0", E2E("20.0"), "164.0", E2E("30.0"),
				"427.0", E2E("40.0"), "676.0", E2E("50.0"), "1040.0", E2E("60.0"), "1711.0", E2E("+Inf"),
				"11428.0", "sglang:e2e_request_latency_seconds_count{" LLAMA "}", "11428.0", NULL},
	       "sg", "sg-0", "2026-10-02T09:55:00Z", NULL);
	/* ghost (TGI) on a pod the ledger never saw: 25 requests, unattributed */
	scrape(FX "tgi_gke_mistral7b.prom", (const char *[]){NULL}, "ghost", "ghost-0", "2026-10-02T01:00:00Z", "mistral");
	scrape(FX "tgi_gke_mistral7b.prom", (const char *[]){"tgi_request_count", "26.0", NULL}, "ghost", "ghost-0",
	       "2026-10-02T02:00:00Z", "mistral");
	/* chat-0's GPU: 5 minutes idle, then 5 minutes busy, every 30 s */
	for (int k = 0; k < 20; k++) {
		char at[32];
		snprintf(at, sizeof at, "2026-10-02T01:%02d:%02dZ", k / 2, k % 2 * 30);
		dcgm(at, k < 10 ? 0 : 80);
	}
	for (size_t i = 0; i < 3; i++) {
		static const char *const scopes[3] = {"team=search", "team=assist", "team=research"};
		if (gl_test_token_create(g_dsn, scopes[i] + 5, "finance", (const char *[]){"--scope", scopes[i], NULL},
					 g_scoped[i], sizeof g_scoped[i], NULL))
			return -1;
	}
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
	if (system(cmd) != 0)
		return -1;
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static cJSON *item(cJSON *arr, const char *name)
{
	cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			return it;
	}
	fail_msg("no item '%s'", name);
	return NULL;
}

static long long num(const cJSON *o, const char *k)
{
	return gl_test_jnum(o, k);
}

static int is_null(const cJSON *o, const char *k)
{
	return cJSON_IsNull(cJSON_GetObjectItem(o, k));
}

static cJSON *get(const char *path)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	return j;
}

/* Cost per request and per token by endpoint, to the micro-unit. */
static void test_cost_per_token(void **state)
{
	cJSON *j = get("/v1/inference?window=2026-10-02&aggregate=endpoint"), *items = cJSON_GetObjectItem(j, "items");
	cJSON *chat = item(items, "chat"), *embed = item(items, "embed"), *sg = item(items, "sg");
	(void)state;
	/* chat: chat-0 10 h + chat-1 6 h of one a100 at 2.50 = 40.00 */
	assert_int_equal(num(chat, "gpu_seconds"), 36000 + 21600);
	assert_int_equal(num(chat, "cost_micros"), 40000000);
	assert_int_equal(num(chat, "requests"), 1124);
	assert_int_equal(num(chat, "prompt_tokens"), 800148);
	assert_int_equal(num(chat, "generated_tokens"), 1700955);
	/* 40,000,000 x 1,000 / 1,124 = 35,587,188.6 -> 35,587,189;
	 * x 1,000,000 / 800,148 = 49,990,751.9 -> 49,990,752;
	 * x 1,000,000 / 1,700,955 = 23,516,201.0 -> 23,516,201 */
	assert_int_equal(num(chat, "cost_per_1k_requests_micros"), 35587189);
	assert_string_equal(cJSON_GetObjectItem(chat, "cost_per_1k_requests")->valuestring, "35.587189");
	assert_int_equal(num(chat, "cost_per_1m_prompt_tokens_micros"), 49990752);
	assert_int_equal(num(chat, "cost_per_1m_generated_tokens_micros"), 23516201);
	/* (800,148 + 1,700,955) tokens / 57,600 GPU-s */
	assert_true(fabs(cJSON_GetObjectItem(chat, "tokens_per_gpu_second")->valuedouble - 2501103.0 / 57600) < 1e-9);
	/* embed: 2 GPUs x 10 h = 50.00 over 5,003 requests (3 failed):
	 * 50,000,000 x 1,000 / 5,003 = 9,994,003.6 -> 9,994,004; no tokens */
	assert_int_equal(num(embed, "cost_micros"), 50000000);
	assert_int_equal(num(embed, "requests"), 5003);
	assert_int_equal(num(embed, "failed_requests"), 3);
	assert_int_equal(num(embed, "inferences"), 20000);
	assert_int_equal(num(embed, "executions"), 4000);
	assert_int_equal(num(embed, "cost_per_1k_requests_micros"), 9994004);
	assert_true(is_null(embed, "cost_per_1m_prompt_tokens_micros") && is_null(embed, "cost_per_1m_prompt_tokens"));
	assert_true(is_null(embed, "latency_p50_seconds"));
	/* sg: 25.00 over 200 requests, 1,000,000 prompt, 2,000,000 generated */
	assert_int_equal(num(sg, "requests"), 200);
	assert_int_equal(num(sg, "cost_per_1k_requests_micros"), 125000000);
	assert_int_equal(num(sg, "cost_per_1m_prompt_tokens_micros"), 25000000);
	assert_int_equal(num(sg, "cost_per_1m_generated_tokens_micros"), 12500000);
	/* p50: rank 100 of 200 in (10, 15], which holds 50 above 60: 10 + 5 x
	 * 40/50 = 14; p99: rank 198 in (50, 60] holding 3 above 195: 60 */
	assert_true(fabs(cJSON_GetObjectItem(sg, "latency_p50_seconds")->valuedouble - 14.0) < 1e-9);
	assert_true(fabs(cJSON_GetObjectItem(sg, "latency_p99_seconds")->valuedouble - 60.0) < 1e-9);
	/* the window: 115.00 over 6,327 requests -> 18,176,071 */
	assert_int_equal(num(cJSON_GetObjectItem(j, "totals"), "cost_micros"), 115000000);
	assert_int_equal(num(cJSON_GetObjectItem(j, "totals"), "cost_per_1k_requests_micros"), 18176071);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unpriced_models")), 0);
	cJSON_Delete(j);
}

/* A whole calendar month is read from serving_monthly, whole days from
 * serving_daily, the rest from the buckets: October (a month piece) and
 * 15 September to 15 November (days, the month, days) give each endpoint
 * the day's figures, all its traffic being on 2 October. */
static void test_month_window(void **state)
{
	static const char *const paths[] = {
		"/v1/inference?window=2026-10&aggregate=endpoint",
		"/v1/inference?window=2026-09-15T12:00:00Z,2026-11-15T00:00:00Z&aggregate=endpoint",
	};
	cJSON *day = get("/v1/inference?window=2026-10-02&aggregate=endpoint");
	(void)state;
	for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
		cJSON *j = get(paths[p]), *items = cJSON_GetObjectItem(j, "items");
		static const char *const eps[] = {"chat", "embed", "sg"};
		static const char *const k[] = {"requests", "failed_requests", "prompt_tokens", "generated_tokens",
						"inferences", "executions", "cost_micros", "cost_per_1m_generated_tokens_micros"};
		for (size_t e = 0; e < sizeof eps / sizeof eps[0]; e++)
			for (size_t f = 0; f < sizeof k / sizeof k[0]; f++)
				if (!cJSON_IsNull(cJSON_GetObjectItem(item(cJSON_GetObjectItem(day, "items"), eps[e]), k[f])))
					assert_int_equal(num(item(items, eps[e]), k[f]),
							 num(item(cJSON_GetObjectItem(day, "items"), eps[e]), k[f]));
		assert_int_equal(num(item(items, "chat"), "requests"), 1124);
		assert_true(fabs(cJSON_GetObjectItem(item(items, "sg"), "latency_p50_seconds")->valuedouble - 14.0) < 1e-9);
		assert_true(fabs(cJSON_GetObjectItem(item(items, "sg"), "latency_p99_seconds")->valuedouble - 60.0) < 1e-9);
		assert_int_equal(num(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "unattributed"), 0), "requests"), 25);
		cJSON_Delete(j);
	}
	cJSON_Delete(day);
}

/* By team, the jobs' owners: assist = chat + sg. */
static void test_by_team(void **state)
{
	cJSON *j = get("/v1/inference?window=2026-10-02&aggregate=team"), *items = cJSON_GetObjectItem(j, "items");
	cJSON *assist = item(items, "assist"), *search = item(items, "search");
	(void)state;
	assert_int_equal(cJSON_GetArraySize(items), 2);
	assert_int_equal(num(assist, "cost_micros"), 65000000);
	assert_int_equal(num(assist, "requests"), 1324);
	/* 65,000,000 x 1,000 / 1,324 -> 49,093,656; x 1e6 / 1,800,148 ->
	 * 36,108,142; x 1e6 / 3,700,955 -> 17,563,034 */
	assert_int_equal(num(assist, "cost_per_1k_requests_micros"), 49093656);
	assert_int_equal(num(assist, "cost_per_1m_prompt_tokens_micros"), 36108142);
	assert_int_equal(num(assist, "cost_per_1m_generated_tokens_micros"), 17563034);
	assert_int_equal(num(search, "cost_micros"), 50000000);
	cJSON_Delete(j);
}

/* The requests of ghost-0, a pod the ledger does not know: apart, never
 * in a group. */
static void test_unattributed(void **state)
{
	cJSON *j = get("/v1/inference?window=2026-10-02&aggregate=model_name"), *u = cJSON_GetObjectItem(j, "unattributed");
	(void)state;
	assert_int_equal(cJSON_GetArraySize(u), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(u, 0), "endpoint")->valuestring, "ghost");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(u, 0), "model_name")->valuestring, "mistral");
	assert_int_equal(num(cJSON_GetArrayItem(u, 0), "requests"), 25);
	assert_int_equal(num(cJSON_GetObjectItem(j, "totals"), "requests"), 1124 + 5003 + 200);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "items")), 3);
	cJSON_Delete(j);
}

/* An hour that served nothing: its cost, and null per-request figures. */
static void test_zero_requests(void **state)
{
	cJSON *j = get("/v1/inference?window=2026-10-02T02:00:00Z,2026-10-02T03:00:00Z&aggregate=endpoint");
	cJSON *chat = item(cJSON_GetObjectItem(j, "items"), "chat");
	(void)state;
	assert_int_equal(num(chat, "requests"), 0);
	assert_int_equal(num(chat, "cost_micros"), 2500000);
	assert_true(is_null(chat, "cost_per_1k_requests_micros") && is_null(chat, "cost_per_1k_requests"));
	assert_true(is_null(chat, "cost_per_1m_prompt_tokens_micros"));
	assert_true(is_null(chat, "cost_per_1m_generated_tokens_micros"));
	assert_true(is_null(chat, "latency_p50_seconds"));
	cJSON_Delete(j);
}

/* Busy and idle inside chat-0's allocation from the exporter, shown
 * apart: the ledger's figures, and the idle priced per job. */
static void test_idle_in_allocation(void **state)
{
	cJSON *inf = get("/v1/inference?window=2026-10-02&aggregate=endpoint");
	cJSON *cb = get("/v1/chargeback?window=2026-10-02&aggregate=namespace&filter=namespace:%22llm%22");
	cJSON *chat = item(cJSON_GetObjectItem(inf, "items"), "chat");
	cJSON *llm = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), 0), "items"), 0);
	long long idle = num(chat, "idle_in_allocation_gpu_seconds"), busy = num(chat, "busy_gpu_seconds");
	(void)state;
	assert_true(idle > 0 && busy > 0);
	assert_int_equal(idle, num(llm, "idle_in_allocation_gpu_seconds"));
	assert_int_equal(busy, num(llm, "busy_gpu_seconds"));
	/* chat-0's cost 25,000,000 x idle / its 36,000 GPU-seconds, half up */
	assert_int_equal(num(chat, "idle_cost_micros"), (2LL * 25000000 * idle + 36000) / (2 * 36000));
	assert_true(fabs(cJSON_GetObjectItem(chat, "busy_share")->valuedouble - (double)busy / (double)(busy + idle)) < 1e-6);
	/* the other endpoints have no exporter data: unknown, not 0 */
	assert_true(is_null(item(cJSON_GetObjectItem(inf, "items"), "embed"), "busy_gpu_seconds"));
	cJSON_Delete(inf);
	cJSON_Delete(cb);
}

/* The serving GPUs' cost and GPU-seconds are the ledger's: equal to
 * /v1/chargeback's for namespace llm (every serving pod, no other) per
 * hour and for the day, and each pod's to /v1/jobs'. */
static void check_conservation(void)
{
	cJSON *inf = get("/v1/inference?window=2026-10-02&step=hour&aggregate=namespace");
	cJSON *cb = get("/v1/chargeback?window=2026-10-02&step=hour&aggregate=namespace&filter=namespace:%22llm%22");
	cJSON *jobs = get("/v1/jobs?window=2026-10-02&cluster=k1"), *jb;
	long long sum = 0;
	for (int i = 0; i < 24; i++) {
		cJSON *is = cJSON_GetArrayItem(cJSON_GetObjectItem(inf, "steps"), i);
		cJSON *cs = cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), i);
		long long ic = num(cJSON_GetObjectItem(is, "totals"), "cost_micros");
		if (ic != num(cJSON_GetObjectItem(cs, "totals"), "cost_micros"))
			fail_msg("hour %d: inference %lld, chargeback %lld", i, ic,
				 num(cJSON_GetObjectItem(cs, "totals"), "cost_micros"));
		assert_int_equal(num(cJSON_GetObjectItem(is, "totals"), "gpu_seconds"),
				 num(cJSON_GetObjectItem(cs, "totals"), "allocated_gpu_seconds"));
		sum += ic;
	}
	assert_int_equal(sum, 115000000);
	assert_int_equal(num(cJSON_GetObjectItem(inf, "totals"), "cost_micros"), num(cJSON_GetObjectItem(cb, "totals"), "cost_micros"));
	cJSON_ArrayForEach(jb, cJSON_GetObjectItem(jobs, "jobs"))
	{
		const char *id = cJSON_GetObjectItem(jb, "job_id")->valuestring;
		if (!strcmp(id, "chat-0") || !strcmp(id, "sg-0"))
			assert_int_equal(num(jb, "cost_micros"), 25000000);
		else if (!strcmp(id, "chat-1"))
			assert_int_equal(num(jb, "cost_micros"), 15000000);
		else if (!strcmp(id, "embed-0"))
			assert_int_equal(num(jb, "cost_micros"), 50000000);
	}
	cJSON_Delete(inf);
	cJSON_Delete(cb);
	cJSON_Delete(jobs);
}

static void test_conservation(void **state)
{
	(void)state;
	check_conservation();
}

/* Built days (usage_daily_job) give the same answers as the live query. */
static void test_after_rollup(void **state)
{
	cJSON *before = get("/v1/inference?window=2026-10-02&aggregate=endpoint"), *after;
	char *a, *b;
	(void)state;
	run_ok((const char *[]){"rollup", NULL});
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(DISTINCT job_pk) FROM usage_daily_job"
						   " WHERE day = '2026-10-02' AND job_pk IN (SELECT job_pk FROM serving_jobs)"),
			 4);
	after = get("/v1/inference?window=2026-10-02&aggregate=endpoint");
	a = cJSON_PrintUnformatted(cJSON_GetObjectItem(before, "items"));
	b = cJSON_PrintUnformatted(cJSON_GetObjectItem(after, "items"));
	assert_string_equal(a, b);
	free(a);
	free(b);
	cJSON_Delete(before);
	cJSON_Delete(after);
	check_conservation();
}

static void test_csv(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv t;
	int col_ep, col_cost, col_per;
	(void)state;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/inference?window=2026-10-02&aggregate=endpoint&format=csv",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	col_ep = gl_test_csv_col(&t, "endpoint");
	col_cost = gl_test_csv_col(&t, "cost");
	col_per = gl_test_csv_col(&t, "cost_per_1k_requests");
	assert_true(col_ep >= 0 && col_cost >= 0 && col_per >= 0);
	for (size_t i = 1; i < t.nrows; i++)
		if (!strcmp(t.cell[i][col_ep], "chat")) {
			assert_string_equal(t.cell[i][col_cost], "40.00");
			assert_string_equal(t.cell[i][col_per], "35.587189");
		} else if (!strcmp(t.cell[i][col_ep], "__unattributed__")) {
			assert_string_equal(t.cell[i][gl_test_csv_col(&t, "requests")], "25");
			assert_string_equal(t.cell[i][col_per], "");
		}
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);
}

/* The showback report's inference table per team is /v1/inference by
 * team for the month. */
static void test_report_table(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv t;
	int found = 0;
	(void)state;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&format=csv&table=inference",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	for (size_t i = 1; i < t.nrows; i++)
		if (!strcmp(t.cell[i][0], "assist")) {
			found = 1;
			assert_string_equal(t.cell[i][gl_test_csv_col(&t, "requests")], "1324");
			assert_string_equal(t.cell[i][gl_test_csv_col(&t, "cost")], "65.00");
			assert_string_equal(t.cell[i][gl_test_csv_col(&t, "cost_per_1k_requests")], "49.093656");
			assert_string_equal(t.cell[i][gl_test_csv_col(&t, "cost_per_1m_generated_tokens")], "17.563034");
		}
	assert_true(found);
	assert_int_equal(t.nrows, 3); /* header, assist, search */
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);
}

static void test_bad_params(void **state)
{
	static const char *const cases[][2] = {
		{"/v1/inference?aggregate=user", "aggregate"},
		{"/v1/inference?step=minute", "step"},
		{"/v1/inference?format=xml", "format"},
		{"/v1/inference?window=2026-13", "window"},
		{"/v1/inference?model=x", "model"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cJSON *j = gl_test_get_json(g_d.port, cases[i][0], 400), *e;
		assert_non_null(j);
		e = cJSON_GetObjectItem(j, "error");
		assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, cases[i][1]);
		cJSON_Delete(j);
	}
}

/* The month from the per-job monthly rollup (sql/089), kept correct under
 * late data. chat-1 is made to run on to 3 October 02:00 (22 h) and the
 * month built (2 and 3 October); then chat-0 turns out to have run 2 h
 * longer (12 h): only 2 October turns stale, 3 October stays built, and
 * the month answer must take the change at once (the built days no longer
 * match the rollup's, so the days are read, never the old month plus the
 * live day); the rebuilt month holds it and answers the same. Runs last:
 * it changes chat-0 and chat-1. */
static void test_month_rollup_late_data(void **state)
{
	static const char same_days[] =
		"SELECT count(*) FROM usage_monthly_job_built WHERE month = '2026-10-01' AND days ="
		" (SELECT array_agg(day ORDER BY day) FROM usage_daily_built WHERE day >= '2026-10-01' AND day < '2026-11-01')";
	cJSON *m1, *m2, *m3;
	char *a, *b;
	(void)state;
	assert_true(gl_test_exec_dsn(g_dsn, "UPDATE jobs SET end_at = '2026-10-03T02:00:00Z'"
					    " WHERE job_id = 'chat-1' AND namespace = 'llm'") == 1);
	run_ok((const char *[]){"rollup", NULL});
	assert_int_equal(gl_test_qint_dsn(g_dsn, same_days), 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT sum(m.alloc) FROM usage_monthly_job m JOIN jobs j ON j.job_pk = m.job_pk"
						 " WHERE m.month = '2026-10-01' AND j.job_id = 'chat-1'"),
			 22LL * 3600 * 1000000);
	/* chat: chat-0 10 h + chat-1 22 h at 2.50 */
	m1 = get("/v1/inference?window=2026-10&aggregate=endpoint");
	assert_int_equal(num(item(cJSON_GetObjectItem(m1, "items"), "chat"), "cost_micros"), 80000000);
	assert_true(gl_test_exec_dsn(g_dsn, "UPDATE jobs SET end_at = end_at + interval '2 hours'"
					    " WHERE job_id = 'chat-0' AND namespace = 'llm'") == 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day = '2026-10-03'"), 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, same_days), 0);
	m2 = get("/v1/inference?window=2026-10&aggregate=endpoint");
	assert_int_equal(num(item(cJSON_GetObjectItem(m2, "items"), "chat"), "cost_micros"), 85000000);
	run_ok((const char *[]){"rollup", NULL});
	assert_int_equal(gl_test_qint_dsn(g_dsn, same_days), 1);
	m3 = get("/v1/inference?window=2026-10&aggregate=endpoint");
	a = cJSON_PrintUnformatted(cJSON_GetObjectItem(m2, "items"));
	b = cJSON_PrintUnformatted(cJSON_GetObjectItem(m3, "items"));
	assert_string_equal(a, b);
	free(a);
	free(b);
	cJSON_Delete(m1);
	cJSON_Delete(m2);
	cJSON_Delete(m3);
}

/* GET path as token; the status, the body in r. */
static long get_as(const char *path, const char *token, struct gl_test_http *r)
{
	struct gl_test_http_opts o = {token, 0, NULL};
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", path, NULL, 0, NULL, &o, r), 0);
	return r->status;
}

/* An owner-scoped token (issue 26): the serving jobs of its own owners,
 * their cost and the requests they served, each item the admin's for the
 * same endpoint or team; nothing of another team's endpoints, and no
 * unattributed requests (no job is known for them, so no owner). */
static void test_scoped_token(void **state)
{
	static const char *const keys[] = {"cost_micros", "gpu_seconds", "requests", "prompt_tokens", "generated_tokens",
					   "cost_per_1k_requests_micros", "failed_requests"};
	static const struct {
		int tok;
		const char *agg, *mine, *others[6];
	} cases[] = {
		{0, "endpoint", "embed", {"\"chat\"", "\"sg\"", "ghost", "mistral", "assist", "Llama"}},
		{0, "team", "search", {"\"chat\"", "\"sg\"", "ghost", "mistral", "assist", "1124"}},
		{1, "endpoint", "chat,sg", {"embed", "mnist", "ghost", "mistral", "search", "5003"}},
		{1, "team", "assist", {"embed", "mnist", "ghost", "mistral", "search", "5003"}},
	};
	char path[256];
	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct gl_test_http r;
		cJSON *adm, *sc, *it;
		long long requests = 0;
		int n = 0;
		for (int csv = 1; csv >= 0; csv--) { /* the JSON last: parsed below */
			snprintf(path, sizeof path, "/v1/inference?window=2026-10-02&aggregate=%s%s", cases[c].agg,
				 csv ? "&format=csv" : "");
			assert_int_equal(get_as(path, g_scoped[cases[c].tok], &r), 200);
			for (size_t k = 0; k < 6; k++)
				if (strstr(r.body, cases[c].others[k]))
					fail_msg("%s as %s holds %s: %s", path, g_scoped[cases[c].tok], cases[c].others[k], r.body);
			assert_null(strstr(r.body, "__unattributed__"));
			if (csv)
				gl_test_http_fini(&r);
		}
		sc = cJSON_Parse(r.body);
		gl_test_http_fini(&r);
		snprintf(path, sizeof path, "/v1/inference?window=2026-10-02&aggregate=%s", cases[c].agg);
		adm = get(path);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sc, "unattributed")), 0);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(sc, "items"))
		{
			const char *name = cJSON_GetObjectItem(it, "name")->valuestring;
			cJSON *a = item(cJSON_GetObjectItem(adm, "items"), name);
			assert_non_null(strstr(cases[c].mine, name));
			for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
				if (num(it, keys[k]) != num(a, keys[k]))
					fail_msg("%s %s: %s %lld, the admin's %lld", path, name, keys[k], num(it, keys[k]),
						 num(a, keys[k]));
			requests += num(it, "requests");
			n++;
		}
		if (n != (strchr(cases[c].mine, ',') ? 2 : 1))
			fail_msg("%s: %d items: %s", path, n, cJSON_PrintUnformatted(sc));
		assert_int_equal(num(cJSON_GetObjectItem(sc, "totals"), "requests"), requests);
		cJSON_Delete(adm);
		cJSON_Delete(sc);
	}
	/* research runs no serving job: nothing, not the others' */
	{
		cJSON *j;
		struct gl_test_http r;
		assert_int_equal(get_as("/v1/inference?window=2026-10-02&aggregate=endpoint", g_scoped[2], &r), 200);
		j = cJSON_Parse(r.body);
		gl_test_http_fini(&r);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "items")), 0);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unattributed")), 0);
		assert_int_equal(num(cJSON_GetObjectItem(j, "totals"), "requests"), 0);
		assert_int_equal(num(cJSON_GetObjectItem(j, "totals"), "cost_micros"), 0);
		cJSON_Delete(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cost_per_token), cmocka_unit_test(test_by_team),
		cmocka_unit_test(test_unattributed),   cmocka_unit_test(test_zero_requests),
		cmocka_unit_test(test_idle_in_allocation), cmocka_unit_test(test_conservation),
		cmocka_unit_test(test_csv),	       cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_report_table),	cmocka_unit_test(test_month_window),
		cmocka_unit_test(test_after_rollup),
		cmocka_unit_test(test_month_rollup_late_data),
		cmocka_unit_test(test_scoped_token),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
