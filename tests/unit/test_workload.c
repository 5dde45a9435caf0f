/* The workload type rule vocabulary (src/domain/workload.c): which fields a
 * rule may match and which names a type may have. The resolution itself is
 * SQL (gl_workload_type) and is tested on real PostgreSQL in
 * tests/integration/test_workload_rule.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/workload.h"

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
		{"cluster", 0},	  {"partition ", 0},
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_fields),
		cmocka_unit_test(test_type_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
