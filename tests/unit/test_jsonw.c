/* The streaming JSON writer against cJSON, the printer it replaces in the
 * large answers: the same text for the same values (cJSON_PrintUnformatted
 * is the oracle), whole numbers exact where cJSON's double is not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/common.h"
#include "gl/jsonw.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void assert_same_as_cjson(const cJSON *tree, const struct gl_strbuf *ours)
{
	char *want = cJSON_PrintUnformatted(tree);
	if (strcmp(want, gl_strbuf_cstr(ours)) != 0)
		fail_msg("cJSON: %s\njsonw: %s", want, gl_strbuf_cstr(ours));
	cJSON_free(want);
}

/* Doubles as the API prints them: money micros read back from text,
 * fractions, thousandths of GPUs, huge and tiny values, negative zero. */
static void test_numbers_print_as_cjson_prints_them(void **state)
{
	static const double v[] = {0, 1, -1, 0.5, 2.5, 0.001, 1.0 / 3, 2.0 / 3, 123456789.125, 1e15, 9007199254740993.0,
				   -2.75e-7, 1e-300, DBL_MAX, DBL_MIN, 3.14159265358979, 0.1 + 0.2, 86400.0 * 366,
				   12345.678, -0.0};
	for (size_t i = 0; i < GL_ARRAY_LEN(v); i++) {
		struct gl_strbuf b = GL_STRBUF_INIT;
		struct gl_jsonw w;
		cJSON *a = cJSON_CreateArray();
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
		gl_jsonw_init(&w, &b);
		gl_jsonw_array(&w, NULL);
		gl_jsonw_num(&w, NULL, v[i]);
		gl_jsonw_end(&w);
		assert_same_as_cjson(a, &b);
		cJSON_Delete(a);
		gl_strbuf_fini(&b);
	}
}

/* Nesting, names, strings with quotes, backslashes, controls and UTF-8,
 * null, booleans, empty containers: the shape of a chargeback answer. */
static void test_structures_print_as_cjson_prints_them(void **state)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	struct gl_jsonw w;
	cJSON *root, *steps, *st, *items, *it, *key;
	const char *odd = "a \"quoted\" \\ back\nline\ttab\x01 \xc3\xa9t\xc3\xa9 /slash";

	root = cJSON_CreateObject();
	cJSON_AddItemToObject(root, "window", cJSON_CreateStringArray((const char *[]){"2026-11-01T00:00:00Z", "x"}, 2));
	cJSON_AddStringToObject(root, "step", "hour");
	steps = cJSON_AddArrayToObject(root, "steps");
	st = cJSON_CreateObject();
	items = cJSON_AddArrayToObject(st, "items");
	it = cJSON_CreateObject();
	key = cJSON_AddObjectToObject(it, "key");
	cJSON_AddStringToObject(key, "user", odd);
	cJSON_AddStringToObject(key, odd, "name too");
	cJSON_AddNumberToObject(it, "allocated_gpu_seconds", 86400);
	cJSON_AddNullToObject(it, "busy_gpu_seconds");
	cJSON_AddItemToArray(items, it);
	cJSON_AddItemToArray(steps, st);
	cJSON_AddArrayToObject(root, "unpriced_models");
	cJSON_AddObjectToObject(root, "empty");
	cJSON_AddBoolToObject(root, "capacity_known", 0);
	cJSON_AddBoolToObject(root, "yes", 1);

	gl_jsonw_init(&w, &b);
	gl_jsonw_object(&w, NULL);
	gl_jsonw_array(&w, "window");
	gl_jsonw_str(&w, NULL, "2026-11-01T00:00:00Z");
	gl_jsonw_str(&w, NULL, "x");
	gl_jsonw_end(&w);
	gl_jsonw_str(&w, "step", "hour");
	gl_jsonw_array(&w, "steps");
	gl_jsonw_object(&w, NULL);
	gl_jsonw_array(&w, "items");
	gl_jsonw_object(&w, NULL);
	gl_jsonw_object(&w, "key");
	gl_jsonw_str(&w, "user", odd);
	gl_jsonw_str(&w, odd, "name too");
	gl_jsonw_end(&w);
	gl_jsonw_i64(&w, "allocated_gpu_seconds", 86400);
	gl_jsonw_str(&w, "busy_gpu_seconds", NULL);
	gl_jsonw_end(&w);
	gl_jsonw_end(&w);
	gl_jsonw_end(&w);
	gl_jsonw_end(&w);
	gl_jsonw_array(&w, "unpriced_models");
	gl_jsonw_end(&w);
	gl_jsonw_object(&w, "empty");
	gl_jsonw_end(&w);
	gl_jsonw_bool(&w, "capacity_known", 0);
	gl_jsonw_bool(&w, "yes", 1);
	gl_jsonw_end(&w);
	assert_int_equal(w.depth, 0);
	assert_same_as_cjson(root, &b);
	cJSON_Delete(root);
	gl_strbuf_fini(&b);
}

/* Integers: exact where a double is not (cJSON would print 2^53 + 1 as
 * 9007199254740992), and the same text below 1e15 (every figure in
 * micro-units and seconds the API sends). The writer may be handed a new
 * buffer between two members, as a stream does. */
static void test_integers_are_exact_across_buffers(void **state)
{
	struct gl_strbuf a = GL_STRBUF_INIT, b = GL_STRBUF_INIT;
	struct gl_jsonw w;
	cJSON *small = cJSON_CreateNumber(999999999999999.0);
	char *s = cJSON_PrintUnformatted(small);
	gl_jsonw_init(&w, &a);
	gl_jsonw_object(&w, NULL);
	gl_jsonw_i64(&w, "big", INT64_C(9007199254740993));
	w.out = &b;
	gl_jsonw_i64(&w, "min", INT64_MIN);
	gl_jsonw_i64(&w, "small", INT64_C(999999999999999));
	gl_jsonw_time(&w, "t", 0);
	gl_jsonw_time(&w, "none", GL_TIME_NONE);
	gl_jsonw_end(&w);
	assert_string_equal(gl_strbuf_cstr(&a), "{\"big\":9007199254740993");
	{
		char want[200];
		snprintf(want, sizeof want, ",\"min\":-9223372036854775808,\"small\":%s,\"t\":\"1970-01-01T00:00:00Z\",\"none\":null}", s);
		assert_string_equal(gl_strbuf_cstr(&b), want);
	}
	cJSON_free(s);
	cJSON_Delete(small);
	gl_strbuf_fini(&a);
	gl_strbuf_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers_print_as_cjson_prints_them),
		cmocka_unit_test(test_structures_print_as_cjson_prints_them),
		cmocka_unit_test(test_integers_are_exact_across_buffers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
