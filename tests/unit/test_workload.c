/* The workload type rule vocabulary (src/domain/workload.c): which fields a
 * rule may match and which names a type may have; capacity split by type
 * (gl_capacity_by_type, src/domain/capacity.c). The resolution itself is
 * SQL (gl_workload_type) and is tested on real PostgreSQL in
 * tests/integration/test_workload_rule.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/capacity.h"
#include "gl/workload.h"

#include <stdio.h>
#include <stdlib.h>

#include <string.h>

static void test_match_fields(void **state)
{
	static const struct {
		const char *m;
		int ok;
	} t[] = {
		{"account", 1},	  {"user", 1},	     {"partition", 1},	{"qos", 1},	     {"wckey", 1},
		{"namespace", 1}, {"endpoint", 1},   {"label:team", 1}, {"label:a/b", 1}, {"label:", 0},
		{"label", 0},	  {"", 0},	     {"Partition", 0},	{"runkind", 0},	     {"endpoints", 0},
		{"cluster", 0},	  {"partition ", 0}, {"run_kind", 1},	{"run_kind:", 0},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		if (gl_workload_match_valid(t[i].m) != t[i].ok)
			fail_msg("match '%s': want %d", t[i].m, t[i].ok);
	}
}

static void test_type_names(void **state)
{
	static const struct {
		const char *name, *why; /* why: NULL when accepted, else part of the reason */
	} t[] = {
		{"training", NULL},
		{"inference", NULL},
		{"interactive", NULL},
		{"batch", NULL},
		{"development", NULL},
		{"llm-finetune_v2.1", NULL},
		{"", "empty"},
		{"unclassified", "reserved"},
		{"__idle__", "reserved"},
		{"__unallocated__", "reserved"},
		{"Training", "lower case"},
		{"two words", "lower case"},
		{"a,b", "lower case"},
		{"x\n", "lower case"},
		{"0123456789012345678901234567890123456789012345678901234567890123", "longer than 63"},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct gl_err e = {0};
		int rc = gl_workload_name_check(t[i].name, &e);
		if (!t[i].why && rc)
			fail_msg("'%s' refused: %s", t[i].name, e.msg);
		if (t[i].why && (rc != -GL_EINVAL || !strstr(e.msg, t[i].why)))
			fail_msg("'%s': want refusal with '%s', got %d '%s'", t[i].name, t[i].why, rc, e.msg);
	}
	/* the longest name allowed */
	struct gl_err e = {0};
	assert_int_equal(gl_workload_name_check("012345678901234567890123456789012345678901234567890123456789012", &e), 0);
}

static struct gl_capacity_row raw(size_t step, const char *cl, const char *key, int64_t rep, int64_t alloc_us,
			     int64_t down, int64_t drained_us)
{
	struct gl_capacity_row r;
	memset(&r, 0, sizeof r);
	r.step = step;
	snprintf(r.cluster, sizeof r.cluster, "%s", cl);
	snprintf(r.key, sizeof r.key, "%s", key);
	r.raw_reported_gpu_seconds = rep;
	r.raw_allocated_micro_gpu_seconds = alloc_us;
	r.raw_down_gpu_seconds = down;
	r.raw_drained_alloc_micro_gpu_seconds = drained_us;
	return r;
}

/* Step 0, cluster a: 100 s of capacity, 10 down, three types of 1/3 s
 * each... in micro: 30, 30 and 30.5 s (90.5 s, rounded once to 91 s: the
 * extra second to the largest remainder), 40 s drained of type x.
 * Cluster b: allocation 150 s over 100 s of capacity: the types' shares of
 * the 100 s settled (60/90 and 30/90 of 100: 66.67 and 33.33 -> 67, 33),
 * the 50 s over and 0 s down left on __idle__. Cluster c: capacity only. */
static void test_capacity_by_type(void **state)
{
	struct gl_capacity_row in[] = {
		raw(0, "a", "", 100, 0, 10, 0),	       raw(0, "a", "x", 0, 30000000, 0, 40000000),
		raw(0, "a", "y", 0, 30000000, 0, 0),   raw(0, "a", "z", 0, 30500000, 0, 0),
		raw(0, "b", "", 100, 0, 0, 0),	       raw(0, "b", "p", 0, 100000000, 0, 0),
		raw(0, "b", "q", 0, 50000000, 0, 0),   raw(1, "c", "", 50, 0, 0, 0),
	};
	struct gl_capacity_row *o = NULL;
	size_t n = 0;
	gl_capacity_by_type(in, sizeof in / sizeof in[0], &o, &n);
	assert_int_equal(n, 8);
	/* a: x 30, y 30, z 31 (30.5 has the largest remainder), then the rest */
	assert_string_equal(o[0].key, "x");
	assert_int_equal(o[0].allocated_gpu_seconds, 30);
	assert_int_equal(o[0].drained_allocated_gpu_seconds, 40);
	assert_int_equal(o[1].allocated_gpu_seconds, 30);
	assert_string_equal(o[2].key, "z");
	assert_int_equal(o[2].allocated_gpu_seconds, 31);
	assert_int_equal(o[2].reported_gpu_seconds, 31);
	assert_string_equal(o[3].key, GL_CAPACITY_UNALLOCATED_KEY);
	assert_int_equal(o[3].reported_gpu_seconds, 9);
	assert_int_equal(o[3].allocated_gpu_seconds, 0);
	assert_int_equal(o[3].down_gpu_seconds, 9); /* 100 - 91 left for the 10 down */
	assert_int_equal(o[3].idle_gpu_seconds, 0);
	assert_int_equal(o[3].over_gpu_seconds, 1);
	/* b: over-allocated */
	assert_string_equal(o[4].key, "p");
	assert_int_equal(o[4].allocated_gpu_seconds, 67);
	assert_int_equal(o[5].allocated_gpu_seconds, 33);
	assert_int_equal(o[6].reported_gpu_seconds, 0);
	assert_int_equal(o[6].over_gpu_seconds, 50);
	/* c: only its capacity, idle */
	assert_string_equal(o[7].cluster, "c");
	assert_int_equal(o[7].step, 1);
	assert_string_equal(o[7].key, GL_CAPACITY_UNALLOCATED_KEY);
	assert_int_equal(o[7].idle_gpu_seconds, 50);
	free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_fields),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_capacity_by_type),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
