/* Unit tests for src/sources/servemetrics.c: the real scrapes of
 * tests/fixtures/serving (vLLM, SGLang, Triton, TGI) mapped to serving
 * counters, the values read off the files by hand; vLLM's older vllm_
 * spelling; bad input (not Prometheus text, no serving metric, bad
 * values, bad histograms). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/servemetrics.h"
#include "lib/testlib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FX "tests/fixtures/serving/"
#define ABSENT (-1.0)

struct want {
	const char *file;
	const char *default_model;
	enum gl_servemetrics_family family;
	const char *model;
	double v[GL_SERVEMETRICS__NCTR]; /* ABSENT: not given by the server */
	size_t nle;
	double running, waiting; /* ABSENT: no gauge */
	size_t bad_lines;
};

/* Every figure read off the fixture files (see their README). */
static const struct want wants[] = {
	/* vLLM: request_success_total{finished_reason="stop"} 4, prompt 148,
	 * generation 955; no e2e histogram in the excerpt; running 0, waiting 0 */
	{"vllm_aibrix_qwen25_coder.prom", NULL, GL_SERVEMETRICS_VLLM, "Qwen/Qwen2.5-Coder-1.5B-Instruct",
	 {4, 0, 148, 955, ABSENT, ABSENT}, 0, 0, 0, 0},
	/* SGLang: no request counter, so the e2e histogram's count 11,228;
	 * no abort counter in this version; 16 e2e buckets; 162 running and
	 * 2,826 queued */
	{"sglang_llama31_8b.prom", NULL, GL_SERVEMETRICS_SGLANG, "meta-llama/Llama-3.1-8B-Instruct",
	 {11228, ABSENT, 8128902, 7557572, ABSENT, ABSENT}, 16, 162, 2826, 0},
	/* Triton: 395,927 successes + 0 failures; inferences 395,927,
	 * executions 193,751; line 13 is the author's "..." */
	{"triton_mnist_cnn.prom", NULL, GL_SERVEMETRICS_TRITON, "mnist_cnn",
	 {395927, 0, ABSENT, ABSENT, 395927, 193751}, 0, ABSENT, ABSENT, 1},
	/* TGI: only tgi_request_count 1.0; TGI labels no model, the caller
	 * names it */
	{"tgi_gke_mistral7b.prom", "mistral-7b-instruct", GL_SERVEMETRICS_TGI, "mistral-7b-instruct",
	 {1, ABSENT, ABSENT, ABSENT, ABSENT, ABSENT}, 0, ABSENT, ABSENT, 0},
};

static void check(const struct want *w, const struct gl_servemetrics_scrape *s)
{
	const struct gl_servemetrics_series *x;
	assert_int_equal(s->n, 1);
	x = &s->series[0];
	assert_int_equal(x->family, w->family);
	assert_string_equal(x->model_name, w->model);
	assert_string_equal(x->pod, "");
	for (int k = 0; k < GL_SERVEMETRICS__NCTR; k++) {
		int have = (x->have >> k) & 1u;
		if (w->v[k] == ABSENT) {
			if (have)
				fail_msg("%s: %s present (%g), want absent", w->file, gl_servemetrics_counter_name(k), x->v[k]);
		} else if (!have || x->v[k] != w->v[k]) {
			fail_msg("%s: %s = %g (have %d), want %g", w->file, gl_servemetrics_counter_name(k), x->v[k], have,
				 w->v[k]);
		}
	}
	assert_int_equal(x->nle, w->nle);
	if (w->running == ABSENT)
		assert_true(isnan(x->running));
	else
		assert_true(x->running == w->running);
	if (w->waiting == ABSENT)
		assert_true(isnan(x->waiting));
	else
		assert_true(x->waiting == w->waiting);
	assert_int_equal(s->parse.bad_lines, w->bad_lines);
}

static void test_fixtures(void **state)
{
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(wants); i++) {
		struct gl_servemetrics_scrape s;
		struct gl_err err = {0};
		size_t len;
		char path[256];
		char *buf;
		snprintf(path, sizeof path, FX "%s", wants[i].file);
		buf = gl_test_read_file(gl_test_fixture(path), &len);
		if (gl_servemetrics_parse(&s, buf, len, wants[i].default_model, &err))
			fail_msg("%s: %s", wants[i].file, err.msg);
		check(&wants[i], &s);
		gl_servemetrics_fini(&s);
		free(buf);
	}
}

/* SGLang's e2e histogram, bucket by bucket as the file has it. */
static void test_sglang_histogram(void **state)
{
	static const double le[] = {0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, INFINITY};
	static const double cum[] = {0, 6, 6, 6, 6, 6, 6, 7, 10, 11, 14, 247, 486, 845, 1513, 11228};
	struct gl_servemetrics_scrape s;
	size_t len;
	char *buf = gl_test_read_file(gl_test_fixture(FX "sglang_llama31_8b.prom"), &len);
	(void)state;
	assert_int_equal(gl_servemetrics_parse(&s, buf, len, NULL, NULL), 0);
	assert_int_equal(s.series[0].nle, 16);
	for (size_t i = 0; i < 16; i++) {
		assert_true(s.series[0].le[i] == le[i]);
		assert_true(s.series[0].cum[i] == cum[i]);
	}
	assert_null(s.series[0].hist_problem);
	gl_servemetrics_fini(&s);
	free(buf);
}

/* The real vLLM scrape with vllm: replaced by vllm_ (Prometheus-side
 * renames): the same counters. */
static void test_vllm_underscore(void **state)
{
	struct gl_servemetrics_scrape s;
	size_t len;
	char *buf = gl_test_read_file(gl_test_fixture(FX "vllm_aibrix_qwen25_coder.prom"), &len), *p;
	(void)state;
	for (p = buf; (p = strstr(p, "vllm:")); p += 5)
		p[4] = '_';
	assert_int_equal(gl_servemetrics_parse(&s, buf, len, NULL, NULL), 0);
	check(&wants[0], &s);
	gl_servemetrics_fini(&s);
	free(buf);
}

/* Hand-written lines in the families' real shapes. */
struct line_case {
	const char *text;
	double requests, failed; /* ABSENT: not present */
	size_t nseries;
};

static const struct line_case line_cases[] = {
	/* vLLM v1: abort and error reasons are failed requests, still finished ones */
	{"vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\"} 10\n"
	 "vllm:request_success_total{finished_reason=\"length\",model_name=\"m\"} 3\n"
	 "vllm:request_success_total{finished_reason=\"abort\",model_name=\"m\"} 2\n",
	 15, 2, 1},
	/* vLLM data-parallel engines: summed */
	{"vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 4\n"
	 "vllm:request_success_total{engine=\"1\",finished_reason=\"stop\",model_name=\"m\"} 5\n",
	 9, 0, 1},
	/* TGI with success and failures by err: finished = success + failures */
	{"tgi_request_count 12\ntgi_request_success 9\ntgi_request_failure{err=\"validation\"} 2\n", 11, 2, 1},
	/* Triton failures by reason, two models */
	{"nv_inference_request_success{model=\"a\",version=\"1\"} 5\n"
	 "nv_inference_request_failure{model=\"a\",reason=\"BACKEND\",version=\"1\"} 1\n"
	 "nv_inference_request_failure{model=\"a\",reason=\"REJECTED\",version=\"1\"} 2\n"
	 "nv_inference_request_success{model=\"b\",version=\"1\"} 7\n",
	 8, 3, 2},
	/* SGLang with its request and abort counters */
	{"sglang:num_requests_total{model_name=\"m\"} 20\nsglang:num_aborted_requests_total{model_name=\"m\"} 1\n", 20, 1,
	 1},
	/* through a Prometheus federation: one series per pod */
	{"vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\",namespace=\"llm\",pod=\"a\"} 1\n"
	 "vllm:request_success_total{finished_reason=\"stop\",model_name=\"m\",exported_namespace=\"llm\",exported_pod=\"b\"} 2\n",
	 1, 0, 2},
};

static void test_line_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(line_cases); i++) {
		const struct line_case *c = &line_cases[i];
		struct gl_servemetrics_scrape s;
		struct gl_err err = {0};
		const struct gl_servemetrics_series *x;
		if (gl_servemetrics_parse(&s, c->text, strlen(c->text), NULL, &err))
			fail_msg("case %zu: %s", i, err.msg);
		assert_int_equal(s.n, c->nseries);
		x = &s.series[0];
		if (x->v[GL_SERVEMETRICS_REQUESTS] != c->requests || !(x->have & 1u << GL_SERVEMETRICS_REQUESTS))
			fail_msg("case %zu: requests %g, want %g", i, x->v[GL_SERVEMETRICS_REQUESTS], c->requests);
		if (x->v[GL_SERVEMETRICS_FAILED] != c->failed)
			fail_msg("case %zu: failed %g, want %g", i, x->v[GL_SERVEMETRICS_FAILED], c->failed);
		gl_servemetrics_fini(&s);
	}
}

static void test_federated_labels(void **state)
{
	const char *t = line_cases[5].text;
	struct gl_servemetrics_scrape s;
	(void)state;
	assert_int_equal(gl_servemetrics_parse(&s, t, strlen(t), NULL, NULL), 0);
	assert_string_equal(s.series[0].pod, "a");
	assert_string_equal(s.series[0].namespace_, "llm");
	assert_string_equal(s.series[1].pod, "b");
	assert_string_equal(s.series[1].namespace_, "llm");
	gl_servemetrics_fini(&s);
}

/* process_start_time_seconds and _created say when the process began. */
static void test_start_evidence(void **state)
{
	const char *a = "process_start_time_seconds 1.7e9\nvllm:request_success_total{model_name=\"m\"} 1\n";
	const char *b = "vllm:request_success_total{model_name=\"m\"} 1\nvllm:request_success_created{model_name=\"m\"} 1.6e9\n";
	struct gl_servemetrics_scrape s;
	(void)state;
	assert_int_equal(gl_servemetrics_parse(&s, a, strlen(a), NULL, NULL), 0);
	assert_true(s.series[0].start_s == 1.7e9);
	gl_servemetrics_fini(&s);
	assert_int_equal(gl_servemetrics_parse(&s, b, strlen(b), NULL, NULL), 0);
	assert_true(s.series[0].start_s == 1.6e9);
	gl_servemetrics_fini(&s);
}

struct bad_case {
	const char *text;
	int want_rc;             /* 0 or -GL_EFORMAT */
	const char *want_in_err; /* substring of the message */
	size_t bad_values;
	const char *hist_problem;
};

static const struct bad_case bad_cases[] = {
	{"<html><body>502 Bad Gateway</body></html>\n", -GL_EFORMAT, "not Prometheus text", 0, NULL},
	{"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 5\n", -GL_EFORMAT, "line 1 has DCGM_FI_DEV_GPU_UTIL", 0, NULL},
	{"# HELP x y\n", -GL_EFORMAT, "no samples", 0, NULL},
	{"vllm:prompt_tokens_total{model_name=\"m\"} -3\nvllm:generation_tokens_total{model_name=\"m\"} NaN\n", 0, NULL,
	 2, NULL},
	{"vllm:e2e_request_latency_seconds_bucket{le=\"1\",model_name=\"m\"} 1\n"
	 "vllm:e2e_request_latency_seconds_bucket{le=\"2\",model_name=\"m\"} 2\n",
	 0, NULL, 0, "a latency histogram without +Inf"},
	{"vllm:e2e_request_latency_seconds_bucket{model_name=\"m\"} 1\n", 0, NULL, 0,
	 "a bucket without a numeric le label"},
};

static void test_bad_input(void **state)
{
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct gl_servemetrics_scrape s;
		struct gl_err err = {0};
		int rc = gl_servemetrics_parse(&s, c->text, strlen(c->text), NULL, &err);
		if (rc != c->want_rc)
			fail_msg("case %zu: rc %d (%s), want %d", i, rc, err.msg, c->want_rc);
		if (c->want_in_err && !strstr(err.msg, c->want_in_err))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, c->want_in_err);
		assert_int_equal(s.bad_values, c->bad_values);
		if (c->hist_problem) {
			assert_int_equal(s.n, 1);
			assert_int_equal(s.series[0].nle, 0);
			assert_string_equal(s.series[0].hist_problem, c->hist_problem);
		}
		gl_servemetrics_fini(&s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),	 cmocka_unit_test(test_sglang_histogram),
		cmocka_unit_test(test_vllm_underscore), cmocka_unit_test(test_line_table),
		cmocka_unit_test(test_federated_labels), cmocka_unit_test(test_start_evidence),
		cmocka_unit_test(test_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
