/* `gpuledger forecast backtest` (the real binary) on the Helios Earth
 * fixture: the baselines' figures it prints equal the ones computed here
 * from the file, the forecaster's beat the seasonal naive, and bad input
 * gets a clear error and the usage exit code. */
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

#define FX "tests/fixtures/forecast/earth_daily_by_vc.csv"

static double run_vc[32][31];
static char names[32][16];
static int nvc;

static void load(void)
{
	FILE *f = fopen(gl_test_fixture(FX), "r");
	char line[512];
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof line, f));
	while (fgets(line, sizeof line, f)) {
		char date[16], name[16];
		double r;
		int k;
		assert_int_equal(sscanf(line, "%10[^,],%15[^,],%lf", date, name, &r), 3);
		for (k = 0; k < nvc && strcmp(names[k], name); k++)
			;
		if (k == nvc)
			snprintf(names[nvc++], 16, "%s", name);
		run_vc[k][atoi(date + 8) - 1] = r;
	}
	fclose(f);
}

static cJSON *pooled(cJSON *j, const char *method)
{
	cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "pooled"))
		if (!strcmp(cJSON_GetObjectItem(it, "method")->valuestring, method))
			return it;
	return NULL;
}

static void test_backtest_earth(void **state)
{
	(void)state;
	struct gl_test_out o;
	load();
	assert_int_equal(gl_test_run(NULL, NULL, &o, "forecast", "backtest", "--file", gl_test_fixture(FX), "--time-col",
				     "date", "--value-col", "running_gpu_hours", "--key-col", "vc", "--step", "day",
				     "--horizon", "7", "--test-from", "2020-05-18", "--format", "json", NULL),
			 0);
	assert_int_equal(o.status, 0);
	cJSON *j = cJSON_Parse(o.out);
	assert_non_null(j);
	assert_int_equal((int)cJSON_GetObjectItem(j, "train_slots")->valuedouble, 17);
	assert_int_equal((int)cJSON_GetObjectItem(j, "test_slots")->valuedouble, 14);
	/* the baselines, from the file: week-ahead blocks from May 18 and 25 */
	double e_sn = 0, e_naive = 0, sy = 0;
	for (int k = 0; k < nvc; k++)
		for (int o0 = 17; o0 < 31; o0 += 7)
			for (int h = 0; h < 7 && o0 + h < 31; h++) {
				double y = run_vc[k][o0 + h];
				sy += y;
				e_sn += fabs(y - run_vc[k][o0 + h - 7]);
				e_naive += fabs(y - run_vc[k][o0 - 1]);
			}
	cJSON *sn = pooled(j, "snaive_week"), *nv = pooled(j, "naive"), *au = pooled(j, "auto");
	assert_non_null(sn);
	assert_non_null(nv);
	assert_non_null(au);
	assert_true(fabs(cJSON_GetObjectItem(sn, "wape")->valuedouble - e_sn / sy) < 1e-9);
	assert_true(fabs(cJSON_GetObjectItem(nv, "wape")->valuedouble - e_naive / sy) < 1e-9);
	assert_int_equal((int)cJSON_GetObjectItem(au, "n")->valuedouble, 16 * 14);
	assert_true(cJSON_GetObjectItem(au, "wape")->valuedouble < e_sn / sy);
	/* each series is reported with the method chosen (auto) and the baselines */
	{
		cJSON *it;
		int autos = 0, naives = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "series"))
		{
			autos += !strcmp(cJSON_GetObjectItem(it, "method")->valuestring, "auto");
			naives += !strcmp(cJSON_GetObjectItem(it, "method")->valuestring, "naive");
		}
		assert_int_equal(autos, 16);
		assert_int_equal(naives, 16);
	}
	cJSON_Delete(j);
	gl_test_out_fini(&o);
}

static void test_backtest_text_and_errors(void **state)
{
	(void)state;
	struct gl_test_out o;
	/* text: a header and one row per method for a single series */
	assert_int_equal(gl_test_run(NULL, NULL, &o, "forecast", "backtest", "--file", gl_test_fixture(FX), "--time-col",
				     "date", "--value-col", "capacity_gpu_hours", "--step", "day", "--horizon", "1",
				     "--test-from", "2020-05-25", NULL),
			 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "MASE"));
	assert_non_null(strstr(o.out, "median_week"));
	assert_non_null(strstr(o.out, "ensemble"));
	gl_test_out_fini(&o);
	/* one method asked by name: its row says so, not "auto" */
	assert_int_equal(gl_test_run(NULL, NULL, &o, "forecast", "backtest", "--file", gl_test_fixture(FX), "--time-col",
				     "date", "--value-col", "capacity_gpu_hours", "--step", "day", "--horizon", "1",
				     "--test-from", "2020-05-25", "--method", "median_week", NULL),
			 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "median_week (asked)"));
	assert_null(strstr(o.out, " auto "));
	gl_test_out_fini(&o);
	/* a column that is not there: runtime error naming it */
	assert_int_equal(gl_test_run(NULL, NULL, &o, "forecast", "backtest", "--file", gl_test_fixture(FX), "--time-col",
				     "date", "--value-col", "gpu_hours", "--step", "day", "--horizon", "7", "--test-from",
				     "2020-05-18", NULL),
			 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "gpu_hours"));
	gl_test_out_fini(&o);
	/* usage errors */
	assert_int_equal(gl_test_run(NULL, NULL, &o, "forecast", "backtest", "--file", gl_test_fixture(FX), "--time-col",
				     "date", "--value-col", "running_gpu_hours", "--step", "month", "--horizon", "7",
				     "--test-from", "2020-05-18", NULL),
			 0);
	assert_int_equal(o.status, 2);
	assert_non_null(strstr(o.err, "--step"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_run(NULL, NULL, &o, "forecast", "backtest", "--file", gl_test_fixture(FX), "--time-col",
				     "date", "--value-col", "running_gpu_hours", "--step", "day", "--horizon", "7",
				     "--test-from", "2021-01-01", NULL),
			 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "not inside the series"));
	gl_test_out_fini(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backtest_earth),
		cmocka_unit_test(test_backtest_text_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
