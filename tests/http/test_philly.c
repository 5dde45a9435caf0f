/* Real Philly jobs through the sacct path: per-user GPU-seconds from
 * /v1/chargeback and queue waits from /v1/queue against a computation over
 * the JSON done here, independently of the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/strbuf.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXJ 5000
#define WINDOW "window=2017-09-01,2018-02-01"

static struct gl_test_philly_job g_j[MAXJ];
static int g_n;
static char g_dsn[512];
static struct gl_test_daemon g_d;

static int load_and_convert(const char *out_path)
{
	g_n = gl_test_philly_to_sacct(out_path, NULL, g_j, MAXJ);
	return g_n > 4000 ? 0 : -1;
}

static int setup(void **state)
{
	char path[PATH_MAX];
	struct gl_test_out o;
	snprintf(path, sizeof path, "%s/philly-sacct.txt", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	if (load_and_convert(path) || gl_test_db_fresh("gl_test_philly", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "philly", "--file", path, "--fields",
			GL_TEST_PHILLY_FIELDS,
			NULL) ||
	    o.status != 0) {
		fprintf(stderr, "ingest: %s\n", o.err);
		return -1;
	}
	gl_test_out_fini(&o);
	return gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static cJSON *get(const char *path)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	return j;
}

static void test_gpu_seconds_per_user(void **state)
{
	cJSON *j = get("/v1/chargeback?" WINDOW "&aggregate=user"), *it;
	cJSON *items = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items");
	int users = 0;
	long long total = 0;
	cJSON_ArrayForEach(it, items)
	{
		const char *u = cJSON_GetObjectItem(it, "name")->valuestring;
		long long want = 0;
		for (int i = 0; i < g_n; i++)
			if (!strcmp(g_j[i].user, u))
				want += g_j[i].gpus * (g_j[i].end - g_j[i].start);
		assert_int_equal((long long)cJSON_GetObjectItem(it, "allocated_gpu_seconds")->valuedouble, want);
		total += want;
		users++;
	}
	{
		long long all = 0;
		for (int i = 0; i < g_n; i++)
			all += g_j[i].gpus * (g_j[i].end - g_j[i].start);
		assert_int_equal(total, all);
	}
	assert_true(users > 100);
	/* no rates configured: every GPU-second is reported as unpriced, never free */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unpriced_models")), 1);
	cJSON_Delete(j);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

static void test_queue_waits_per_user(void **state)
{
	cJSON *j = get("/v1/queue?" WINDOW "&aggregate=user"), *it;
	static long long w[MAXJ];
	int checked = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "items"))
	{
		const char *u = cJSON_GetObjectItem(it, "key")->valuestring;
		int n = 0;
		double sum = 0;
		for (int i = 0; i < g_n; i++)
			if (!strcmp(g_j[i].user, u)) {
				w[n++] = g_j[i].start - g_j[i].submit;
				sum += (double)(g_j[i].start - g_j[i].submit);
			}
		qsort(w, (size_t)n, sizeof w[0], cmp_ll);
		assert_int_equal((int)cJSON_GetObjectItem(it, "jobs")->valuedouble, n);
		/* nearest-rank median and the mean to 0.1 s */
		assert_int_equal((long long)cJSON_GetObjectItem(it, "wait_p50_s")->valuedouble, w[(n + 1) / 2 - 1]);
		assert_int_equal((long long)cJSON_GetObjectItem(it, "wait_max_s")->valuedouble, w[n - 1]);
		{
			double mean = cJSON_GetObjectItem(it, "wait_mean_s")->valuedouble;
			assert_true(mean > sum / n - 0.051 && mean < sum / n + 0.051);
		}
		checked++;
	}
	assert_true(checked > 100);
	cJSON_Delete(j);
}

/* Every item of a chargeback response as "step|name|allocated|cost|total"
 * lines, sorted, so two responses compare regardless of line order. */
static char *digest(cJSON *j)
{
	struct gl_strbuf out = GL_STRBUF_INIT;
	char **lines = NULL;
	size_t n = 0, cap = 0;
	cJSON *st, *it;
	int si = 0;
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(j, "steps"))
	{
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
		{
			char buf[256];
			snprintf(buf, sizeof buf, "%d|%s|%.0f|%.0f|%.0f", si, cJSON_GetObjectItem(it, "name")->valuestring,
				 cJSON_GetObjectItem(it, "allocated_gpu_seconds")->valuedouble,
				 cJSON_GetObjectItem(it, "cost_micros")->valuedouble,
				 cJSON_GetObjectItem(it, "total_micros")->valuedouble);
			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				lines = realloc(lines, cap * sizeof *lines);
			}
			lines[n++] = strdup(buf);
		}
		si++;
	}
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(lines[b - 1], lines[b]) > 0; b--) {
			char *t = lines[b];
			lines[b] = lines[b - 1];
			lines[b - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		gl_strbuf_puts(&out, lines[i]);
		gl_strbuf_putc(&out, '\n');
		free(lines[i]);
	}
	free(lines);
	gl_strbuf_printf(&out, "total %.0f %.0f\n",
			 cJSON_GetObjectItem(cJSON_GetObjectItem(j, "totals"), "allocated_gpu_seconds")->valuedouble,
			 cJSON_GetObjectItem(cJSON_GetObjectItem(j, "totals"), "total_micros")->valuedouble);
	return gl_strbuf_steal(&out);
}

/* The daily aggregates give exactly what the jobs give: the same responses
 * before and after `gpuledger rollup`, for whole and partial days, and a
 * change to the cost model makes every day stale again. */
static void test_daily_rollup_matches_live(void **state)
{
	static const char *const paths[] = {
		"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=user",
		"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=account&step=day",
		"/v1/chargeback?window=2017-10-03T06:30:00Z,2017-10-09T18:00:00Z&aggregate=user,account&step=week",
		"/v1/chargeback?window=2017-10-01,2017-12-01&aggregate=gpu_model&step=month&filter=account:\"ee9e8c\"",
		/* these read the coarse usage_daily_owner once built */
		"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team&step=day",
		"/v1/chargeback?window=2017-10-02T12:00:00Z,2017-11-20T00:00:00Z&aggregate=cluster,gpu_model,project&step=week",
	};
	char *before[GL_ARRAY_LEN(paths)], path[PATH_MAX];
	struct gl_test_out o;
	PGconn *c = PQconnectdb(g_dsn);
	FILE *f;
	/* owners, so the team and project lines are not all __unallocated__ */
	snprintf(path, sizeof path, "%s/philly-owners.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	f = fopen(path, "w");
	fputs("owners:\n  - match: account\n    value: ee9e8c\n    team: vision\n    project: p1\n"
	      "  - match: account\n    value: '*'\n    team: rest\n    project: p2\n",
	      f);
	fclose(f);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	for (size_t i = 0; i < GL_ARRAY_LEN(paths); i++) {
		cJSON *j = get(paths[i]);
		before[i] = digest(j);
		cJSON_Delete(j);
	}
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM usage_daily_built"), 0);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rollup", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	fprintf(stderr, "built %lld days, %lld rows\n", gl_test_qint(c, "SELECT count(*) FROM usage_daily_built"),
		gl_test_qint(c, "SELECT count(*) FROM usage_daily"));
	assert_true(gl_test_qint(c, "SELECT count(*) FROM usage_daily_built") > 60); /* Oct 3 .. mid-Dec 2017 */
	assert_true(gl_test_qint(c, "SELECT count(*) FROM usage_daily") > 1000);
	/* the coarse rollup holds the same days, in fewer rows */
	assert_int_equal(gl_test_qint(c, "SELECT count(DISTINCT day) FROM usage_daily_owner"),
			 gl_test_qint(c, "SELECT count(DISTINCT day) FROM usage_daily"));
	assert_true(gl_test_qint(c, "SELECT count(*) FROM usage_daily_owner") <
		    gl_test_qint(c, "SELECT count(*) FROM usage_daily") / 2);
	for (size_t i = 0; i < GL_ARRAY_LEN(paths); i++) {
		cJSON *j = get(paths[i]);
		char *after = digest(j);
		if (strcmp(before[i], after))
			fprintf(stderr, "%s differs after rollup\n--- live\n%.600s\n--- daily\n%.600s\n", paths[i], before[i], after);
		assert_string_equal(before[i], after);
		free(after);
		cJSON_Delete(j);
	}
	/* a job that changes makes its days stale; a cost-model change all days */
	PQclear(PQexec(c, "UPDATE jobs SET end_at = end_at + interval '1 hour' WHERE job_key = 'db:1'"));
	assert_true(gl_test_qint(c, "SELECT count(*) FROM usage_daily_built") > 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM usage_daily_built b JOIN jobs j ON j.job_key = 'db:1'"
					 " WHERE b.day BETWEEN j.start_at::date AND j.end_at::date"),
			 0);
	snprintf(path, sizeof path, "%s/philly-rates.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	f = fopen(path, "w");
	fputs("rates:\n  - model: '*'\n    per_gpu_hour: \"1.00\"\n", f);
	fclose(f);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM usage_daily_built"), 0);
	PQclear(PQexec(c, "UPDATE jobs SET end_at = end_at - interval '1 hour' WHERE job_key = 'db:1'"));
	for (size_t i = 0; i < GL_ARRAY_LEN(paths); i++)
		free(before[i]);
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_seconds_per_user),
		cmocka_unit_test(test_queue_waits_per_user),
		cmocka_unit_test(test_daily_rollup_matches_live),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
