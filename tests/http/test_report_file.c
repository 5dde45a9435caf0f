/* GET /v1/reports/{id} (issue 28 item 3): each recorded report file, as the
 * real `report record` wrote it under reports.dir, is served byte for byte
 * with its recorded sha256 as the ETag and its name in Content-Disposition;
 * the request is in the audit log with the path naming the file; an id
 * that is not recorded (or not a number) is 404, so is a file changed on
 * disk since it was recorded (with that reason), and a viewer gets 403.
 * Real binary over real HTTP, real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"
#include "gl/reports.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dsn[512], g_yaml[2048], g_dir[600];
static struct gl_test_daemon g_d;

static int setup(void **state)
{
	static const char *const sql[] = {
		"INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm')",
		"INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, partition, state, submit_at, start_at,"
		" end_at, elapsed_s, gpu_micro, gpu_type, nodes)"
		" SELECT cluster_id, 'db:1', '1', 'u', 'teama', 'p', 'COMPLETED', '2026-10-05T00:00:00Z',"
		" '2026-10-05T00:00:00Z', '2026-10-05T10:00:00Z', 36000, 2000000, 'a100', ARRAY['n1'] FROM clusters",
	};
	char cfg[700], env[720];
	struct gl_test_out o;
	const char *tmp = getenv("GL_TEST_TMP");
	snprintf(g_dir, sizeof g_dir, "%s/report-file-%ld", tmp ? tmp : "/tmp", (long)getpid());
	snprintf(g_yaml, sizeof g_yaml,
		 "rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n"
		 "reports:\n  dir: %s\n  formats: csv,html\n",
		 g_dir);
	if (gl_test_db_fresh("gl_test_report_file", g_dsn, sizeof g_dsn))
		return -1;
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++)
		if (gl_test_exec_dsn(g_dsn, sql[i]) < 1)
			return -1;
	snprintf(cfg, sizeof cfg, "%s.yaml", g_dir);
	{
		FILE *f = fopen(cfg, "w");
		if (!f)
			return -1;
		fputs(g_yaml, f);
		fclose(f);
	}
	snprintf(env, sizeof env, "GPULEDGER_CONFIG=%s", cfg);
	if (gl_test_cli(g_dsn, "rates", "load", cfg, NULL) ||
	    gl_test_run(g_dsn, (const char *[]){env, NULL}, &o, "report", "record", "--month", "2026-10", NULL) ||
	    o.status != 0) {
		fprintf(stderr, "report record: %s\n", o.err);
		return -1;
	}
	gl_test_out_fini(&o);
	return gl_test_daemon_start(&g_d, g_dsn, g_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static void test_every_recorded_file_is_served_as_recorded(void **state)
{
	cJSON *l = gl_test_get_json(g_d.port, "/v1/reports?month=2026-10", 200), *it;
	int n = 0;
	assert_non_null(l);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(l, "files"))
	{
		char path[64], sum[65], etag[80], want[80], cd[300], ct[80];
		struct gl_test_http r;
		const char *name = cJSON_GetObjectItem(it, "name")->valuestring,
			   *sha = cJSON_GetObjectItem(it, "sha256")->valuestring,
			   *fmt = cJSON_GetObjectItem(it, "format")->valuestring;
		snprintf(path, sizeof path, "/v1/reports/%lld", gl_test_jnum(it, "id"));
		assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		assert_int_equal((long long)r.len, gl_test_jnum(it, "bytes"));
		gl_reports_sha256(r.body, r.len, sum);
		assert_string_equal(sum, sha);
		snprintf(want, sizeof want, "\"%s\"", sha);
		assert_non_null(gl_test_header(&r, "ETag", etag, sizeof etag));
		assert_string_equal(etag, want);
		assert_non_null(gl_test_header(&r, "Content-Disposition", cd, sizeof cd));
		assert_non_null(strstr(cd, name));
		assert_non_null(gl_test_header(&r, "Content-Type", ct, sizeof ct));
		assert_non_null(strstr(ct, !strcmp(fmt, "csv") ? "text/csv" : "text/html"));
		gl_test_http_fini(&r);
		/* the audit log says who fetched which file */
		{
			char sql[256];
			long long k = 0;
			snprintf(sql, sizeof sql,
				 "SELECT count(*) FROM audit_log WHERE action = 'http.request' AND object = '%s'"
				 " AND outcome = 'ok' AND detail->>'route' = 'report_file'",
				 path);
			for (int i = 0; i < 100 && k < 1; i++, usleep(50 * 1000))
				k = gl_test_qint_dsn(g_dsn, sql);
			assert_int_equal(k, 1);
		}
		n++;
	}
	assert_true(n >= 2); /* csv tables and the html */
	cJSON_Delete(l);
}

static long get_status(const char *path, const char *token, char *body, size_t n)
{
	struct gl_test_http r;
	struct gl_test_http_opts o = {.token = token};
	long st;
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", path, NULL, 0, NULL, &o, &r), 0);
	st = r.status;
	if (body)
		snprintf(body, n, "%s", r.body ? r.body : "");
	gl_test_http_fini(&r);
	return st;
}

static void test_refusals(void **state)
{
	char body[1024], viewer[80], path[64], file[800];
	cJSON *l = gl_test_get_json(g_d.port, "/v1/reports?month=2026-10", 200);
	const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "files"), 0);
	FILE *f;
	assert_non_null(first);
	assert_int_equal(get_status("/v1/reports/999999", NULL, body, sizeof body), 404);
	assert_non_null(strstr(body, "no recorded report file 999999"));
	assert_int_equal(get_status("/v1/reports/abc", NULL, body, sizeof body), 404);
	assert_int_equal(get_status("/v1/reports/", NULL, body, sizeof body), 404);
	assert_int_equal(get_status("/v1/reports/showback?month=2026-10&format=csv", NULL, NULL, 0), 200);
	assert_int_equal(gl_test_token_create(g_dsn, "rf-viewer", "viewer", NULL, viewer, sizeof viewer, NULL), 0);
	snprintf(path, sizeof path, "/v1/reports/%lld", gl_test_jnum(first, "id"));
	assert_int_equal(get_status(path, viewer, NULL, 0), 403);
	/* a file changed since it was recorded is not served as the record */
	snprintf(file, sizeof file, "%s/%s", g_dir, cJSON_GetObjectItem(first, "name")->valuestring);
	assert_non_null(f = fopen(file, "a"));
	fputs("tampered\n", f);
	fclose(f);
	assert_int_equal(get_status(path, NULL, body, sizeof body), 404);
	if (!strstr(body, "changed on disk"))
		fprintf(stderr, "%s\n", body);
	assert_non_null(strstr(body, "changed on disk"));
	unlink(file);
	assert_int_equal(get_status(path, NULL, body, sizeof body), 404);
	assert_non_null(strstr(body, "no longer in reports.dir"));
	cJSON_Delete(l);
}

/* Audit rows name the token by its name and keep the query string (they
 * kept the path only, and the actor as token:N): who pulled which
 * per-user figures is on record. */
static void test_audit_row_has_token_name_and_query(void **state)
{
	char tok[80], sql[512];
	long long id = 0, k = 0;
	int i;
	assert_int_equal(gl_test_token_create(g_dsn, "finance-bob", "finance", NULL, tok, sizeof tok, &id), 0);
	assert_int_equal(get_status("/v1/chargeback?window=2026-10&aggregate=user&filter=user:%22u%22%2Bcluster:%22c1%22", tok, NULL, 0),
			 200);
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM audit_log WHERE action = 'http.request' AND object = '/v1/chargeback'"
		 " AND actor = 'token:%lld' AND detail->>'token' = 'finance-bob'"
		 " AND detail->>'query' = 'window=2026-10&aggregate=user&filter=user:\"u\"%%2Bcluster:\"c1\"'",
		 id);
	for (i = 0; i < 100 && k < 1; i++, usleep(50 * 1000))
		k = gl_test_qint_dsn(g_dsn, sql);
	assert_int_equal(k, 1);
	/* a credential a client put in the URL is blanked in the row */
	assert_int_equal(get_status("/v1/budgets?month=2026-10&token=glt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", tok,
				    NULL, 0),
			 400);
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM audit_log WHERE object = '/v1/budgets' AND detail->>'query' LIKE 'month=2026-10&token=%%'"
		 " AND detail::text NOT LIKE '%%glt_%%'");
	for (k = 0, i = 0; i < 100 && k < 1; i++, usleep(50 * 1000))
		k = gl_test_qint_dsn(g_dsn, sql);
	assert_int_equal(k, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_recorded_file_is_served_as_recorded),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_audit_row_has_token_name_and_query),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
