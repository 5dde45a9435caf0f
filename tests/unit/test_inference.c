/* Unit tests for src/domain/inference.c: a job serving two models (Triton
 * serves several from one process) has its cost shared by their requests,
 * equally in a step with none; the shares add up to the job's cost to the
 * micro-unit; a job dimension keeps the job whole; usage without a job, or
 * whose job held no GPU in the window, stays out of the groups; per-request
 * figures are null with no requests. Figures worked out by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/inference.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const int64_t none[GL_SERVEMETRICS__NCTR];

static void usage(struct gl_inference *x, size_t step, int64_t job, const char *ep, const char *model, int64_t req,
		  int64_t prompt, int64_t gen)
{
	int64_t v[GL_SERVEMETRICS__NCTR] = {0};
	v[GL_SERVEMETRICS_REQUESTS] = req;
	v[GL_SERVEMETRICS_PROMPT] = prompt;
	v[GL_SERVEMETRICS_GENERATED] = gen;
	gl_inference_add_usage(x, step, job, ep, model, v);
}

/* job 7: one GPU for two hours at 1.00 an hour (two steps of 1,000,000
 * micro-units, 3,600 GPU-s each), serving models a and b of endpoint t */
static void fill(struct gl_inference *x, enum gl_inference_agg agg)
{
	struct gl_inference_cost c = {.job_pk = 7, .dim = "vision", .alloc_us = 3600000000, .alloc_s = 3600,
				.cost_micros = 1000000};
	gl_inference_init(x, agg, 2);
	x->steps[0] = (struct gl_inference_step){.start_s = 0, .end_s = 3600};
	x->steps[1] = (struct gl_inference_step){.start_s = 3600, .end_s = 7200};
	gl_inference_add_pair(x, 7, "t", "a");
	gl_inference_add_pair(x, 7, "t", "b");
	gl_inference_add_cost(x, 0, &c);
	gl_inference_add_cost(x, 1, &c);
	/* step 0: a 1 request, b 2: the cost goes 1/3 - 2/3 */
	usage(x, 0, 7, "t", "a", 1, 300, 0);
	usage(x, 0, 7, "t", "b", 2, 0, 0);
	/* step 1: nothing served: equal shares */
	usage(x, 1, 7, "t", "a", 0, 0, 0);
	/* no job known, and a job (9) with no ledger line in the window */
	usage(x, 0, 0, "u", "a", 5, 0, 0);
	usage(x, 1, 9, "u", "a", 4, 0, 0);
}

static const struct gl_inference_group *group(const struct gl_inference_step *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->groups[i].key, key))
			return &s->groups[i];
	fail_msg("no group %s", key);
	return NULL;
}

static void test_by_model(void **state)
{
	struct gl_inference x;
	const struct gl_inference_group *a, *b;
	(void)state;
	fill(&x, GL_INFERENCE_BY_MODEL);
	assert_int_equal(gl_inference_finish(&x), 0);
	/* step 0: 1,000,000 x 1/3 = 333,333.3 and x 2/3 = 666,666.7: the
	 * remainder micro-unit goes to the larger remainder (b) */
	a = group(&x.steps[0], "a");
	b = group(&x.steps[0], "b");
	assert_int_equal(a->cost_micros, 333333);
	assert_int_equal(b->cost_micros, 666667);
	assert_int_equal(a->gpu_s + b->gpu_s, 3600);
	assert_int_equal(a->gpu_s, 1200);
	/* a: 333,333 x 1,000 / 1 request; x 1e6 / 300 prompt tokens =
	 * 1,111,110,000 */
	assert_int_equal(a->per_1k_requests_micros, 333333000);
	assert_int_equal(a->per_1m_prompt_micros, 1111110000);
	assert_false(a->have_per_1m_generated);
	/* step 1: no requests: 500,000 each, and no per-request figure */
	a = group(&x.steps[1], "a");
	b = group(&x.steps[1], "b");
	assert_int_equal(a->cost_micros, 500000);
	assert_int_equal(b->cost_micros, 500000);
	assert_false(a->have_per_1k_requests);
	assert_true(isnan(a->tokens_per_gpu_s) == 0 && a->tokens_per_gpu_s == 0);
	/* the window: every micro-unit of the job once */
	assert_int_equal(x.window.total.cost_micros, 2000000);
	assert_int_equal(group(&x.window, "a")->cost_micros + group(&x.window, "b")->cost_micros, 2000000);
	/* the 5 requests without a job and the 4 of job 9: apart */
	assert_int_equal(x.window.total.v[GL_SERVEMETRICS_REQUESTS], 3);
	assert_int_equal(x.steps[0].n_un, 1);
	assert_int_equal(x.steps[0].un[0].v[GL_SERVEMETRICS_REQUESTS], 5);
	assert_int_equal(x.steps[1].n_un, 1);
	assert_int_equal(x.steps[1].un[0].v[GL_SERVEMETRICS_REQUESTS], 4);
	gl_inference_fini(&x);
}

static void test_by_job_dim(void **state)
{
	struct gl_inference x;
	const struct gl_inference_group *g;
	(void)state;
	fill(&x, GL_INFERENCE_BY_JOB_DIM);
	assert_int_equal(gl_inference_finish(&x), 0);
	assert_int_equal(x.window.n, 1);
	g = group(&x.window, "vision");
	assert_int_equal(g->cost_micros, 2000000);
	assert_int_equal(g->v[GL_SERVEMETRICS_REQUESTS], 3);
	/* 2,000,000 x 1,000 / 3 = 666,666,666.7 -> 666,666,667 */
	assert_int_equal(g->per_1k_requests_micros, 666666667);
	gl_inference_fini(&x);
}

/* Idle inside the allocation is priced per job: cost x idle / allocated,
 * half up; no exporter data is unknown. */
static void test_idle_cost(void **state)
{
	struct gl_inference x;
	struct gl_inference_cost c = {.job_pk = 3, .dim = "d", .alloc_us = 7200000000, .alloc_s = 3600, .cost_micros = 1000001,
				.busy_s = 2400, .idle_s = 1200, .observed_s = 3600};
	const struct gl_inference_group *g;
	(void)state;
	gl_inference_init(&x, GL_INFERENCE_BY_JOB_DIM, 1);
	gl_inference_add_cost(&x, 0, &c);
	gl_inference_add_usage(&x, 0, 3, "e", "m", none);
	assert_int_equal(gl_inference_finish(&x), 0);
	g = group(&x.steps[0], "d");
	/* 1,000,001 x 1,200,000 / 7,200,000 = 166,666.83 -> 166,667 */
	assert_int_equal(g->idle_micros, 166667);
	assert_true(fabs(g->busy_share - 2.0 / 3) < 1e-12);
	assert_true(fabs(g->idle_share - 1.0 / 3) < 1e-12);
	assert_true(isnan(g->p50_s));
	gl_inference_fini(&x);
}

static void test_per_rounding(void **state)
{
	(void)state;
	/* half up: 25,000,000 x 1,000 / 1,024 = 24,414,062.5 -> 24,414,063 */
	assert_int_equal(gl_inference_per(25000000, 1000, 1024), 24414063);
	assert_int_equal(gl_inference_per(25000000, 1000, 1023), 24437928);
	/* no overflow past 2^63 in the product */
	assert_int_equal(gl_inference_per(9000000000000LL, 1000000, 3), 3000000000000000000LL);
}

/* Many keys, each added twice in an order that is not the store's (the
 * lookups index them; nothing may be split or lost): 3 steps x 500 jobs,
 * job j serving endpoint "e<j>" (model "m<j % 7>") with j requests a step,
 * its step costing j micro-units. */
static void test_many_keys(void **state)
{
	struct gl_inference x;
	int64_t req_m0 = 0, cost_m0 = 0;
	(void)state;
	gl_inference_init(&x, GL_INFERENCE_BY_ENDPOINT, 3);
	for (size_t i = 0; i < 3; i++)
		x.steps[i] = (struct gl_inference_step){.start_s = (int64_t)i * 3600, .end_s = (int64_t)(i + 1) * 3600};
	for (int j = 500; j >= 1; j--) {
		char ep[16], m[16];
		snprintf(ep, sizeof ep, "e%d", j);
		snprintf(m, sizeof m, "m%d", j % 7);
		gl_inference_add_pair(&x, j, ep, m);
		for (size_t i = 0; i < 3; i++) {
			struct gl_inference_cost c = {.job_pk = j, .dim = "t", .alloc_us = 1000000, .alloc_s = 1, .cost_micros = j};
			gl_inference_add_cost(&x, i, &c);
		}
	}
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 3; i-- > 0;)
			for (int j = 1; j <= 500; j++) {
				char ep[16], m[16];
				snprintf(ep, sizeof ep, "e%d", j);
				snprintf(m, sizeof m, "m%d", j % 7);
				usage(&x, i, j, ep, m, pass ? j - j / 2 : j / 2, 0, 0);
			}
	assert_int_equal(gl_inference_finish(&x), 0);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(x.steps[i].n, 500);
		assert_int_equal(x.steps[i].total.v[GL_SERVEMETRICS_REQUESTS], 500 * 501 / 2);
		assert_int_equal(x.steps[i].total.cost_micros, 500 * 501 / 2);
		assert_int_equal(group(&x.steps[i], "e321")->v[GL_SERVEMETRICS_REQUESTS], 321);
		assert_int_equal(group(&x.steps[i], "e321")->cost_micros, 321);
	}
	assert_int_equal(x.window.n, 500);
	assert_int_equal(group(&x.window, "e77")->v[GL_SERVEMETRICS_REQUESTS], 3 * 77);
	gl_inference_fini(&x);
	/* the same by model: m0 holds the jobs 7, 14, ..., 497 */
	gl_inference_init(&x, GL_INFERENCE_BY_MODEL, 1);
	x.steps[0] = (struct gl_inference_step){.start_s = 0, .end_s = 3600};
	for (int j = 1; j <= 500; j++) {
		char ep[16], m[16];
		struct gl_inference_cost c = {.job_pk = j, .dim = "t", .alloc_us = 1000000, .alloc_s = 1, .cost_micros = j};
		snprintf(ep, sizeof ep, "e%d", j);
		snprintf(m, sizeof m, "m%d", j % 7);
		gl_inference_add_pair(&x, j, ep, m);
		gl_inference_add_cost(&x, 0, &c);
		usage(&x, 0, j, ep, m, j, 0, 0);
		if (j % 7 == 0) {
			req_m0 += j;
			cost_m0 += j;
		}
	}
	assert_int_equal(gl_inference_finish(&x), 0);
	assert_int_equal(x.steps[0].n, 7);
	assert_int_equal(group(&x.steps[0], "m0")->v[GL_SERVEMETRICS_REQUESTS], req_m0);
	assert_int_equal(group(&x.steps[0], "m0")->cost_micros, cost_m0);
	gl_inference_fini(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_model),
		cmocka_unit_test(test_by_job_dim),
		cmocka_unit_test(test_idle_cost),
		cmocka_unit_test(test_per_rounding),
		cmocka_unit_test(test_many_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
