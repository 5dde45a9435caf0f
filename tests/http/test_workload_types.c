/* Workload type as an accounting dimension (docs/config.md, workload_types):
 * every job in exactly one type, aggregate=workload_type totals equal to
 * the unaggregated ones (JSON and CSV, live and from the rollup), the
 * effective dating (a job keeps the type of its start) and a rule change
 * that re-resolves the days it touches, queue waits by type. Real binary
 * over real HTTP, real PostgreSQL; tests/fixtures/conservation/ (Slurm jobs
 * 101-108 on c1, pods ml/p1 and ml/p2 on k1), the figures worked out below.
 *
 * October, allocated GPU-seconds per job (start, GPUs, hours in October):
 *   101 alice/teama  30 Sep 22:00  2 a100  2 h (1 Oct 00-02)  =  14,400
 *   102 bob/teamb    15 Oct 11:30  1 a100  1.5 h              =   5,400
 *   103 carol/teama  10 Oct 00:00  1       10 h               =  36,000
 *   104 dan/teamb    20 Oct 00:00  2 a100  5 h                =  36,000
 *   107 alice/teama  27 Oct 00:00  4 a100  6 h                =  86,400
 *   108 dan/teamb    27 Oct 00:00  2 a100  6 h                =  43,200
 *   ml/p1            2 Oct 00:00   1       10 h               =  36,000
 *   ml/p2            3 Oct 00:00   0.5     3 s                =       1.5
 * Rules: namespace ml -> inference; account teama from 1 Oct -> training;
 * user dan from 25 Oct -> batch. 101 started before its rule: unclassified
 * on 1 Oct too; 104 started before dan's rule: unclassified. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/common.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FX "tests/fixtures/conservation/"

static char g_dsn[512];
static struct gl_test_daemon g_d;

#define RULES_HEAD                                                                                           \
	"rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"                                                  \
	"  - model: NVIDIA-A100-SXM4-80GB\n    per_gpu_hour: \"1.80\"\n"                                          \
	"gpu_models:\n  - match: NVIDIA-A100-SXM4-80GB\n    model: a100_80g\n"                                 \
	"owners:\n  - match: account\n    value: teama\n    team: vision\n"                                     \
	"  - match: account\n    value: teamb\n    team: language\n"                                            \
	"workload_types:\n  - match: namespace\n    value: ml\n    type: inference\n"                           \
	"  - match: account\n    value: teama\n    type: training\n    from: \"2026-10-01T00:00:00Z\"\n"

static const char config_yaml[] = RULES_HEAD "  - match: user\n    value: dan\n    type: batch\n"
					       "    from: \"2026-10-25T00:00:00Z\"\n";
/* dan's rule from 15 October: job 104 (20 Oct) becomes batch */
static const char changed_yaml[] = RULES_HEAD "  - match: user\n    value: dan\n    type: batch\n"
						"    from: \"2026-10-15T00:00:00Z\"\n";

static int setup(void **state)
{
	char fields[1024];
	FILE *f;
	if (gl_test_db_fresh("gl_test_workload_types", g_dsn, sizeof g_dsn))
		return -1;
	f = fopen(gl_test_fixture(FX "sacct_fields.txt"), "r");
	if (!f || !fgets(fields, sizeof fields, f))
		return -1;
	fclose(f);
	fields[strcspn(fields, "\n")] = 0;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file", gl_test_fixture(FX "sacct_alloc.txt"),
			"--fields", fields, NULL) ||
	    gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture(FX "scontrol_nodes.txt"), "--at", "2026-09-01T00:00:00Z", NULL) ||
	    gl_test_cli(g_dsn, "ingest", "kube-nodes", "--cluster", "k1", "--file", gl_test_fixture(FX "kube_nodes.json"),
			"--at", "2026-10-01T00:00:00Z", NULL) ||
	    gl_test_cli(g_dsn, "ingest", "kube", "--cluster", "k1", "--file", gl_test_fixture(FX "kube_pods.json"), "--at",
			"2026-10-04T00:00:00Z", NULL))
		return -1;
	/* --no-ingest: no rollup runs unless the test runs it */
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* The step's line named name (NULL when none). */
static cJSON *item(cJSON *j, const char *name)
{
	cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			return it;
	}
	return NULL;
}

static cJSON *totals(cJSON *j)
{
	return cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "totals");
}

struct want {
	const char *type;
	long long alloc_s;
};

/* By workload type, the types' lines are the hand figures, every line
 * is one of the types (no job lost or in two), and the totals equal those
 * of the same window by team and by cluster, in JSON and in CSV. */
static void check_month(const struct want *w, size_t n)
{
	cJSON *jt = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&aggregate=workload_type", 200);
	cJSON *jteam = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&aggregate=team", 200);
	cJSON *jcl = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&aggregate=cluster", 200);
	cJSON *it, *st;
	long long sum_alloc = 0, sum_cost = 0, sum_total = 0;
	size_t n_items = 0;
	struct gl_test_http r;
	struct gl_test_csv csv;

	assert_non_null(jt);
	assert_non_null(jteam);
	assert_non_null(jcl);
	for (size_t i = 0; i < n; i++) {
		cJSON *l = item(jt, w[i].type);
		if (!l)
			fail_msg("no line for type %s", w[i].type);
		if (gl_test_jnum(l, "allocated_gpu_seconds") != w[i].alloc_s)
			fail_msg("%s: allocated %lld, want %lld", w[i].type, gl_test_jnum(l, "allocated_gpu_seconds"),
				 w[i].alloc_s);
	}
	st = cJSON_GetArrayItem(cJSON_GetObjectItem(jt, "steps"), 0);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		n_items++;
		sum_alloc += gl_test_jnum(it, "allocated_gpu_seconds");
		sum_cost += gl_test_jnum(it, "cost_micros");
		sum_total += gl_test_jnum(it, "total_micros");
	}
	assert_int_equal(n_items, n);
	assert_int_equal(sum_alloc, gl_test_jnum(totals(jt), "allocated_gpu_seconds"));
	assert_int_equal(sum_cost, gl_test_jnum(totals(jt), "cost_micros"));
	static const char *const keys[] = {"allocated_gpu_seconds", "gpu_seconds", "cost_micros", "total_micros"};
	for (size_t k = 0; k < GL_ARRAY_LEN(keys); k++) {
		assert_int_equal(gl_test_jnum(totals(jt), keys[k]), gl_test_jnum(totals(jteam), keys[k]));
		assert_int_equal(gl_test_jnum(totals(jt), keys[k]), gl_test_jnum(totals(jcl), keys[k]));
	}
	/* CSV: one row per type, the same figures */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/chargeback?window=2026-10&aggregate=workload_type&format=csv",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &csv), 0);
	{
		int cn = gl_test_csv_col(&csv, "workload_type"), ca = gl_test_csv_col(&csv, "allocated_gpu_seconds");
		long long csv_alloc = 0;
		size_t rows = 0;
		assert_true(cn >= 0 && ca >= 0);
		for (size_t i = 1; i < csv.nrows; i++) {
			const char *name = csv.cell[i][cn];
			if (!strcmp(name, "__idle__"))
				continue;
			rows++;
			csv_alloc += atoll(csv.cell[i][ca]);
			assert_non_null(item(jt, name));
			assert_int_equal(atoll(csv.cell[i][ca]), gl_test_jnum(item(jt, name), "allocated_gpu_seconds"));
		}
		assert_int_equal(rows, n);
		assert_int_equal(csv_alloc, sum_alloc);
	}
	gl_test_csv_free(&csv);
	gl_test_http_fini(&r);
	cJSON_Delete(jt);
	cJSON_Delete(jteam);
	cJSON_Delete(jcl);
}

static const struct want first[] = {
	{"inference", 36002},	/* 36,001.5: the half second goes to it by largest remainder */
	{"training", 122400},	/* 103 + 107 */
	{"batch", 43200},	/* 108 */
	{"unclassified", 55800}, /* 101 + 102 + 104 */
};

static void test_types_live_and_rolled_up(void **state)
{
	struct gl_test_out o;
	check_month(first, GL_ARRAY_LEN(first));
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rollup", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	/* every October day a GPU job touched: 1, 2, 3, 10, 15, 20, 27 */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day BETWEEN '2026-10-01'"
						 " AND '2026-10-31'"),
			 7);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(DISTINCT d_workload_type) FROM usage_daily_owner"
						 " WHERE day BETWEEN '2026-10-01' AND '2026-10-31'"),
			 4);
	check_month(first, GL_ARRAY_LEN(first));
}

/* A job keeps the type of its start: 101's hours of 1 October are
 * unclassified though teama's rule is in force that day; 103's (10 Oct)
 * are training. */
/* The capacity row of cluster cl and key k (NULL when none). */
static cJSON *cap_row(cJSON *j, const char *cl, const char *keyname, const char *k)
{
	cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "rows"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "cluster")->valuestring, cl) &&
		    (!keyname || !strcmp(cJSON_GetObjectItem(it, keyname)->valuestring, k)))
			return it;
	}
	return NULL;
}

/* /v1/capacity by workload type: each type's allocated GPU-seconds inside
 * the capacity (c1's are the hand figures of the file's head), the rest of
 * each cluster's capacity on its __idle__ row, and every figure of each
 * cluster and of the totals equal to aggregate=cluster's to the second;
 * the CSV carries the same rows. unobserved=include: the fixture's nodes are
 * one snapshot each, so most of October is past their absent grace. */
static void test_capacity_by_type(void **state)
{
	static const char *const f[] = {"reported_gpu_seconds", "allocated_gpu_seconds", "down_gpu_seconds",
					"planned_down_gpu_seconds", "reserved_gpu_seconds", "idle_gpu_seconds",
					"over_gpu_seconds", "drained_allocated_gpu_seconds", "unobserved_gpu_seconds"};
	static const struct want c1[] = {{"training", 122400}, {"batch", 43200}, {"unclassified", 55800}};
	cJSON *jt = gl_test_get_json(g_d.port, "/v1/capacity?window=2026-10&unobserved=include&aggregate=workload_type", 200);
	cJSON *jc = gl_test_get_json(g_d.port, "/v1/capacity?window=2026-10&unobserved=include", 200), *it;
	struct gl_test_http r;
	struct gl_test_csv csv;
	size_t n_rows = 0;

	assert_non_null(jt);
	assert_non_null(jc);
	assert_string_equal(cJSON_GetObjectItem(jt, "aggregate")->valuestring, "workload_type");
	for (size_t i = 0; i < GL_ARRAY_LEN(c1); i++) {
		cJSON *row = cap_row(jt, "c1", "workload_type", c1[i].type);
		if (!row)
			fail_msg("c1: no row for %s", c1[i].type);
		assert_int_equal(gl_test_jnum(row, "allocated_gpu_seconds"), c1[i].alloc_s);
		assert_int_equal(gl_test_jnum(row, "idle_gpu_seconds"), 0);
	}
	assert_non_null(cap_row(jt, "k1", "workload_type", "inference"));
	assert_null(cap_row(jt, "k1", "workload_type", "training"));
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(jc, "rows"))
	{
		const char *cl = cJSON_GetObjectItem(it, "cluster")->valuestring;
		cJSON *idle = cap_row(jt, cl, "workload_type", "__idle__"), *t;
		assert_non_null(idle);
		assert_int_equal(gl_test_jnum(idle, "allocated_gpu_seconds"), 0);
		assert_int_equal(gl_test_jnum(idle, "idle_gpu_seconds"), gl_test_jnum(it, "idle_gpu_seconds"));
		for (size_t k = 0; k < GL_ARRAY_LEN(f); k++) {
			long long sum = 0;
			cJSON_ArrayForEach(t, cJSON_GetObjectItem(jt, "rows"))
			{
				if (!strcmp(cJSON_GetObjectItem(t, "cluster")->valuestring, cl))
					sum += gl_test_jnum(t, f[k]);
			}
			if (sum != gl_test_jnum(it, f[k]))
				fail_msg("%s %s: by type %lld, by cluster %lld", cl, f[k], sum, gl_test_jnum(it, f[k]));
		}
	}
	assert_true(gl_test_jnum(cJSON_GetObjectItem(jc, "totals"), "idle_gpu_seconds") > 0);
	for (size_t k = 0; k < GL_ARRAY_LEN(f); k++)
		assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(jt, "totals"), f[k]),
				 gl_test_jnum(cJSON_GetObjectItem(jc, "totals"), f[k]));
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(jt, "rows")) n_rows++;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/capacity?window=2026-10&unobserved=include&aggregate=workload_type&format=csv",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &csv), 0);
	{
		int cc = gl_test_csv_col(&csv, "cluster"), ct = gl_test_csv_col(&csv, "workload_type"),
		    ca = gl_test_csv_col(&csv, "allocated_gpu_seconds");
		assert_true(cc >= 0 && ct >= 0 && ca >= 0);
		assert_int_equal(csv.nrows - 1, n_rows);
		for (size_t i = 1; i < csv.nrows; i++)
			assert_int_equal(atoll(csv.cell[i][ca]),
					 gl_test_jnum(cap_row(jt, csv.cell[i][cc], "workload_type", csv.cell[i][ct]),
						      "allocated_gpu_seconds"));
	}
	gl_test_csv_free(&csv);
	gl_test_http_fini(&r);
	cJSON_Delete(jt);
	cJSON_Delete(jc);
}

static void test_type_of_the_start(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-01&aggregate=workload_type", 200);
	assert_non_null(j);
	assert_non_null(item(j, "unclassified"));
	assert_int_equal(gl_test_jnum(item(j, "unclassified"), "allocated_gpu_seconds"), 14400);
	assert_null(item(j, "training"));
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-10&aggregate=workload_type", 200);
	assert_non_null(j);
	assert_int_equal(gl_test_jnum(item(j, "training"), "allocated_gpu_seconds"), 36000);
	assert_null(item(j, "unclassified"));
	cJSON_Delete(j);
	/* two dimensions: the team lines split by type add up to the team */
	j = gl_test_get_json(g_d.port,
			     "/v1/chargeback?window=2026-10&aggregate=team,workload_type&filter=team:%22language%22", 200);
	assert_non_null(j);
	assert_int_equal(gl_test_jnum(item(j, "language/batch"), "allocated_gpu_seconds"), 43200);
	assert_int_equal(gl_test_jnum(item(j, "language/unclassified"), "allocated_gpu_seconds"), 41400);
	cJSON_Delete(j);
}

/* A rule changed from 15 October makes the built days from then stale
 * (and only those), and the rebuilt days carry the new type. */
static void test_rule_change_reresolves(void **state)
{
	char path[512];
	struct gl_test_out o;
	long long before_built;
	static const struct want changed[] = {
		{"inference", 36002},
		{"training", 122400},
		{"batch", 79200},	 /* 104 + 108 */
		{"unclassified", 19800}, /* 101 + 102 */
	};

	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rollup", NULL), 0);
	gl_test_out_fini(&o);
	before_built = gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day < '2026-10-15'");
	assert_true(before_built > 0);
	snprintf(path, sizeof path, "%s/workload-changed.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	assert_int_equal(gl_test_write_file(path, changed_yaml), 0);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "changed"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day >= '2026-10-15'"), 0);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day < '2026-10-15'"),
			 before_built);
	check_month(changed, GL_ARRAY_LEN(changed));
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rollup", NULL), 0);
	gl_test_out_fini(&o);
	check_month(changed, GL_ARRAY_LEN(changed));
	/* back to the first rules for the tests after this one */
	snprintf(path, sizeof path, "%s/workload-first.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	assert_int_equal(gl_test_write_file(path, config_yaml), 0);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	gl_test_out_fini(&o);
	check_month(first, GL_ARRAY_LEN(first));
}

/* Queue waits by workload type: 102 waited 30 min (unclassified), every
 * other job of October started at its submit time. */
static void test_queue_by_type(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/queue?window=2026-10&aggregate=workload_type", 200), *it;
	long long jobs = 0;
	int seen_unclassified = 0;
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "aggregate")->valuestring, "workload_type");
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "items"))
	{
		const char *k = cJSON_GetObjectItem(it, "key")->valuestring;
		jobs += gl_test_jnum(it, "jobs");
		if (!strcmp(k, "unclassified")) {
			seen_unclassified = 1;
			assert_int_equal(gl_test_jnum(it, "wait_max_s"), 1800);
		} else {
			assert_int_equal(gl_test_jnum(it, "wait_max_s"), 0);
		}
	}
	assert_true(seen_unclassified);
	/* the same jobs as by partition, each in one type */
	{
		cJSON *jp = gl_test_get_json(g_d.port, "/v1/queue?window=2026-10&aggregate=cluster", 200);
		long long jobs_p = 0;
		assert_non_null(jp);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(jp, "items")) jobs_p += gl_test_jnum(it, "jobs");
		assert_int_equal(jobs, jobs_p);
		cJSON_Delete(jp);
	}
	cJSON_Delete(j);
}

/* The showback report by workload type: one owner row per type, each with
 * the month's chargeback figures of that type (October is closed: one
 * answer each). */
static void test_report_by_type(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv csv;
	cJSON *cb = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&aggregate=workload_type", 200);
	int oc, gc, tc;
	size_t rows = 0;
	assert_non_null(cb);
	assert_int_equal(gl_test_http(g_d.port, "GET",
				      "/v1/reports/showback?month=2026-10&aggregate=workload_type&format=csv&table=owners",
				      NULL, 0, NULL, &r),
			 0);
	if (r.status != 200)
		fprintf(stderr, "%s\n", r.body);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &csv), 0);
	oc = gl_test_csv_col(&csv, "owner");
	gc = gl_test_csv_col(&csv, "gpu_seconds");
	tc = gl_test_csv_col(&csv, "total_micros");
	assert_true(oc >= 0 && gc >= 0 && tc >= 0);
	for (size_t i = 1; i < csv.nrows; i++) {
		cJSON *l = item(cb, csv.cell[i][oc]);
		if (!l)
			continue; /* __idle__ and the total row */
		rows++;
		assert_int_equal(atoll(csv.cell[i][gc]), gl_test_jnum(l, "allocated_gpu_seconds"));
		assert_int_equal(atoll(csv.cell[i][tc]), gl_test_jnum(l, "total_micros"));
	}
	assert_int_equal(rows, GL_ARRAY_LEN(first));
	gl_test_csv_free(&csv);
	gl_test_http_fini(&r);
	/* the HTML and PDF of the same report name the types */
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&aggregate=workload_type&format=html",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	for (size_t i = 0; i < GL_ARRAY_LEN(first); i++)
		assert_non_null(strstr(r.body, first[i].type));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/reports/showback?month=2026-10&aggregate=workload_type&format=pdf",
				      NULL, 0, NULL, &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_true(r.len > 1000 && !memcmp(r.body, "%PDF-", 5));
	gl_test_http_fini(&r);
	cJSON_Delete(cb);
}

/* idle and forecast accept the dimension; a bad one is a 400 naming it */
static void test_other_routes(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10&aggregate=workload_type", 200);
	char *text;
	assert_non_null(j);
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/forecast?aggregate=workload_type&window=2026-10", 200);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "aggregate")->valuestring, "workload_type");
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&aggregate=workload", 400);
	assert_non_null(j);
	text = cJSON_PrintUnformatted(j);
	assert_non_null(text);
	assert_non_null(strstr(text, "workload_type"));
	cJSON_free(text);
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types_live_and_rolled_up), cmocka_unit_test(test_capacity_by_type),
		cmocka_unit_test(test_type_of_the_start),
		cmocka_unit_test(test_rule_change_reresolves),	 cmocka_unit_test(test_queue_by_type),
		cmocka_unit_test(test_report_by_type),	 cmocka_unit_test(test_other_routes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
