/* Serving ingest through the real binary against a real PostgreSQL: a
 * sequence of scrapes of one vLLM endpoint with a missing scrape, a restart
 * of the server, a counter that goes backwards without one (flagged,
 * exit 4, never negative), a scrape ingested twice, and a pod that replaced
 * another; an endpoint whose pod the ledger does not know yet (listed as
 * unattributed, then claimed when the pod arrives); bad input (not
 * Prometheus text, no serving metric, a bad line) with file:line.
 *
 * Every scrape is the real vLLM scrape of tests/fixtures/serving (lines and
 * labels as vLLM wrote them) with its counter values set per step
 * (gl_test_scrape_with); the increases each step must give are worked out
 * by hand next to it. The pods are tests/fixtures/serving/
 * kube_pods_serving*.json (hand-written PodLists). */
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

#define FX "tests/fixtures/serving/"
#define REQ "vllm:request_success_total{finished_reason=\"stop\",model_name=\"Qwen/Qwen2.5-Coder-1.5B-Instruct\"}"
#define PROMPT "vllm:prompt_tokens_total{model_name=\"Qwen/Qwen2.5-Coder-1.5B-Instruct\"}"
#define GEN "vllm:generation_tokens_total{model_name=\"Qwen/Qwen2.5-Coder-1.5B-Instruct\"}"

static char g_dsn[512];
static char g_dir[256];
static char *g_vllm;
static PGconn *g_c;

static int setup(void **state)
{
	struct gl_test_out o;
	if (gl_test_db_fresh("gl_test_serving_ingest", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_c, "SET TIME ZONE 'UTC'"));
	snprintf(g_dir, sizeof g_dir, "/tmp/gltest-serving-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	g_vllm = gl_test_read_file(gl_test_fixture(FX "vllm_aibrix_qwen25_coder.prom"), NULL);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "kube-nodes", "--cluster", "k1", "--file",
			"tests/fixtures/serving/kube_nodes.json", "--at", "2026-10-01T00:00:00Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "k1", "--file", FX "kube_pods_serving.json",
			"--at", "2026-10-02T10:00:00Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	PQfinish(g_c);
	free(g_vllm);
	snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Ingests the vLLM scrape with these counter values at `at` for endpoint
 * chat on pod llm/<pod>; returns the exit status, out (may be NULL) gets
 * the result. */
static int scrape(const char *endpoint, const char *pod, const char *at, const char *req, const char *prompt,
		  const char *gen, struct gl_test_out *out)
{
	char path[300], podarg[64];
	char *text = gl_test_scrape_with(g_vllm, (const char *[]){REQ, req, PROMPT, prompt, GEN, gen, NULL});
	struct gl_test_out o;
	int status;
	snprintf(path, sizeof path, "%s/%s-%s.prom", g_dir, endpoint, at);
	snprintf(podarg, sizeof podarg, "llm/%s", pod);
	assert_int_equal(gl_test_write_file(path, text), 0);
	free(text);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "serving", "--file", path, "--at", at, "--endpoint",
				     endpoint, "--cluster", "k1", "--pod", podarg, NULL),
			 0);
	status = o.status;
	if (out)
		*out = o;
	else
		gl_test_out_fini(&o);
	return status;
}

/* requests,prompt,generated of a series' bucket (job 0 = unattributed) */
static const char *bucket(const char *pod, const char *b)
{
	return gl_test_qstrf(g_c,
			     "SELECT coalesce(string_agg(u.requests || ',' || u.prompt_tokens || ',' || u.generated_tokens"
			     " || '@' || u.job_pk::text, ' ' ORDER BY u.job_pk), '')"
			     " FROM serving_usage u JOIN serving_series s USING (series_id)"
			     " WHERE s.instance = 'pod:llm/%s' AND u.bucket = '%s'",
			     pod, b);
}

static long long job_of(const char *pod)
{
	return gl_test_qintf(g_c, "SELECT job_pk FROM jobs WHERE namespace = 'llm' AND job_id = '%s'", pod);
}

static void test_sequence(void **state)
{
	struct gl_test_out o;
	char want[64];
	long long j0 = job_of("chat-0");
	/* 00:00:30, the endpoint's first scrape: its counts happened we do
	 * not know when: levels only (the file's own 4 / 148 / 955) */
	assert_int_equal(scrape("chat", "chat-0", "2026-10-02T00:00:30Z", "4.0", "148.0", "955.0", &o), 0);
	assert_non_null(strstr(o.out, "\"baseline\":1"));
	gl_test_out_fini(&o);
	/* 00:01:00: +10 requests, +1000 prompt, +2000 generated */
	assert_int_equal(scrape("chat", "chat-0", "2026-10-02T00:01:00Z", "14.0", "1148.0", "2955.0", NULL), 0);
	/* 00:01:30 missing; 00:02:00 counts the whole rise since 00:01:00
	 * (+20, +500, +1500), nothing is put at 00:01:30 */
	assert_int_equal(scrape("chat", "chat-0", "2026-10-02T00:02:00Z", "34.0", "1648.0", "4455.0", NULL), 0);
	/* bucket 00:00 (300 s) holds both: 30, 1500, 3500 */
	snprintf(want, sizeof want, "30,1500,3500@%lld", j0);
	assert_string_equal(bucket("chat-0", "2026-10-02 00:00:00+00"), want);
	/* 00:05:30: the server restarted (everything fell): the new values
	 * are the increase, as increase() counts them */
	assert_int_equal(scrape("chat", "chat-0", "2026-10-02T00:05:30Z", "3.0", "100.0", "200.0", &o), 0);
	assert_non_null(strstr(o.out, "\"resets\":1"));
	gl_test_out_fini(&o);
	/* 00:06:00: prompt tokens fall (100 -> 90) while requests rise: no
	 * restart: flagged, 0 prompt tokens, exit 4; requests +2, generated +50 */
	assert_int_equal(scrape("chat", "chat-0", "2026-10-02T00:06:00Z", "5.0", "90.0", "250.0", &o), 4);
	assert_non_null(strstr(o.out, "\"flagged\":1"));
	gl_test_out_fini(&o);
	assert_non_null(strstr(gl_test_qstr(g_c, "SELECT skip_reasons::text FROM ingest_runs WHERE source = 'serving'"
						 " ORDER BY run_id DESC LIMIT 1"),
			       "prompt_tokens went from 100 down to 90"));
	/* 00:06:30: counted from the kept level 100, not from 90: +20 prompt */
	assert_int_equal(scrape("chat", "chat-0", "2026-10-02T00:06:30Z", "6.0", "120.0", "260.0", NULL), 0);
	snprintf(want, sizeof want, "6,120,260@%lld", j0);
	assert_string_equal(bucket("chat-0", "2026-10-02 00:05:00+00"), want);
	/* the same scrape again: nothing counted twice */
	assert_int_equal(scrape("chat", "chat-0", "2026-10-02T00:06:30Z", "6.0", "120.0", "260.0", &o), 0);
	assert_non_null(strstr(o.out, "\"stale\":1"));
	gl_test_out_fini(&o);
	assert_string_equal(bucket("chat-0", "2026-10-02 00:05:00+00"), want);
	/* the day's row is the sum of the buckets */
	assert_int_equal(gl_test_qint(g_c, "SELECT requests FROM serving_daily d JOIN serving_series s USING (series_id)"
					   " WHERE s.instance = 'pod:llm/chat-0'"),
			 36);
	/* and the month's row the sum of the days, latency buckets included */
	assert_string_equal(gl_test_qstr(g_c, "SELECT m.month || ' ' || m.requests || ' ' || (m.generated_tokens ="
					      " d.generated_tokens AND m.prompt_tokens = d.prompt_tokens AND m.failed = d.failed"
					      " AND m.lat_inc = d.lat_inc AND m.scrapes = d.scrapes)::text FROM serving_monthly m"
					      " JOIN serving_series s USING (series_id) JOIN serving_daily d USING (series_id, job_pk)"
					      " WHERE s.instance = 'pod:llm/chat-0'"),
			    "2026-10-01 36 true");
	/* never a negative increase anywhere */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM serving_usage WHERE least(requests, failed,"
					   " prompt_tokens, generated_tokens) < 0"),
			 0);
}

/* chat-1 started at 04:00, after the endpoint's previous scrape: a new
 * series whose counts are all new. */
static void test_new_pod(void **state)
{
	struct gl_test_out o;
	char want[64];
	assert_int_equal(scrape("chat", "chat-0", "2026-10-02T03:59:00Z", "7.0", "130.0", "270.0", NULL), 0);
	assert_int_equal(scrape("chat", "chat-1", "2026-10-02T04:00:30Z", "4.0", "148.0", "955.0", &o), 0);
	assert_non_null(strstr(o.out, "\"new_processes\":1"));
	gl_test_out_fini(&o);
	snprintf(want, sizeof want, "4,148,955@%lld", job_of("chat-1"));
	assert_string_equal(bucket("chat-1", "2026-10-02 04:00:00+00"), want);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM serving_jobs sj JOIN serving_endpoints e"
					   " USING (endpoint_id) WHERE e.name = 'chat'"),
			 2);
}

/* The pod late-0 is not in the ledger when it is first scraped: its rows
 * have no job and are listed as such; once the kube source reads it, the
 * next scrape claims them (usage and daily). */
static void test_claim(void **state)
{
	struct gl_test_out o;
	char want[64];
	assert_int_equal(scrape("late", "late-0", "2026-10-02T00:10:00Z", "4.0", "148.0", "955.0", NULL), 0);
	assert_int_equal(scrape("late", "late-0", "2026-10-02T00:20:00Z", "9.0", "248.0", "1055.0", &o), 0);
	assert_non_null(strstr(o.out, "\"unattributed\":1"));
	gl_test_out_fini(&o);
	assert_string_equal(bucket("late-0", "2026-10-02 00:20:00+00"), "5,100,100@0");
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "k1", "--file",
				     FX "kube_pods_serving_late.json", "--at", "2026-10-02T10:00:00Z", NULL),
			 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_int_equal(scrape("late", "late-0", "2026-10-02T00:30:00Z", "10.0", "250.0", "1060.0", &o), 0);
	assert_non_null(strstr(o.out, "\"claimed_rows\":1"));
	gl_test_out_fini(&o);
	snprintf(want, sizeof want, "5,100,100@%lld", job_of("late-0"));
	assert_string_equal(bucket("late-0", "2026-10-02 00:20:00+00"), want);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM serving_usage u JOIN serving_series s USING (series_id)"
					   " WHERE s.instance = 'pod:llm/late-0' AND u.job_pk = 0"),
			 0);
	/* the day summed again from the buckets, all of it on the job */
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(d.requests || '@' || (d.job_pk > 0)::text, ' ')"
					      " FROM serving_daily d JOIN serving_series s USING (series_id)"
					      " WHERE s.instance = 'pod:llm/late-0'"),
			    "6@true");
	/* and the month from the days */
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(m.month || ' ' || m.requests || '@' || (m.job_pk > 0)::text,"
					      " ' ') FROM serving_monthly m JOIN serving_series s USING (series_id)"
					      " WHERE s.instance = 'pod:llm/late-0'"),
			    "2026-10-01 6@true");
}

struct bad {
	const char *file;  /* written by the test unless it is a fixture */
	const char *text;  /* NULL: file is a fixture */
	int status;
	const char *in_err, *in_reasons;
};

static void test_bad_input(void **state)
{
	const struct bad cases[] = {
		{"html.prom", "<html><body>502 Bad Gateway</body></html>\n", 1, "html.prom: not Prometheus text", NULL},
		{"tests/fixtures/dcgm/datadog_dcgm_fixture_metrics.prom", NULL, 1, "no known serving metric", NULL},
		/* the Triton README's "..." line is line 13 */
		{FX "triton_mnist_cnn.prom", NULL, 4, "triton_mnist_cnn.prom:13:", "\"line\": 13"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct gl_test_out o;
		char path[300];
		if (cases[i].text) {
			snprintf(path, sizeof path, "%s/%s", g_dir, cases[i].file);
			assert_int_equal(gl_test_write_file(path, cases[i].text), 0);
		} else {
			snprintf(path, sizeof path, "%s", gl_test_fixture(cases[i].file));
		}
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "serving", "--file", path, "--at",
					     "2026-10-02T01:00:00Z", "--endpoint", "bad", "--cluster", "k1", NULL),
				 0);
		if (o.status != cases[i].status)
			fail_msg("%s: exit %d, want %d (%s)", cases[i].file, o.status, cases[i].status, o.err);
		if (cases[i].in_err && !strstr(o.err, cases[i].in_err))
			fail_msg("%s: stderr '%s' lacks '%s'", cases[i].file, o.err, cases[i].in_err);
		if (cases[i].in_reasons)
			assert_non_null(strstr(gl_test_qstr(g_c, "SELECT skip_reasons::text FROM ingest_runs"
								 " WHERE source = 'serving' ORDER BY run_id DESC LIMIT 1"),
					       cases[i].in_reasons));
		gl_test_out_fini(&o);
	}
	/* a scrape that is no serving scrape writes nothing */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM serving_series s JOIN serving_endpoints e"
					   " USING (endpoint_id) WHERE e.name = 'bad' AND s.family <> 'triton'"),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequence),
		cmocka_unit_test(test_new_pod),
		cmocka_unit_test(test_claim),
		cmocka_unit_test(test_bad_input),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
