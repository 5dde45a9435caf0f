/* /v1/chargeback over real HTTP against a real PostgreSQL loaded with the real
 * Slurm testbed output: GPU-seconds against sreport, costs against an
 * independent computation from the sacct fixture, rate and owner changes in
 * the middle of the window, steps, CSV, and parameter errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TB "tests/fixtures/sacct/testbed/"
#define WIN "window=2026-11-22T16:00:00Z,2026-11-22T17:00:00Z"

static char g_dsn[512], g_fields[1024], g_dir[PATH_MAX];
static struct gl_test_daemon g_d;

static const char base_rates[] =
	"rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: v100\n    per_gpu_hour: \"1.20\"\n"
	"owners:\n  - match: account\n    value: teama\n    team: vision\n"
	"  - match: account\n    value: teamb\n    team: language\n";

/* One allocation row of the fixture, read independently of the code under test. */
struct fx_job {
	char account[32], user[32], gpu_type[16];
	long long gpus, start, end;
};
static struct fx_job g_jobs[64];
static int g_njobs;

static long long ts(const char *s)
{
	struct tm tm = {0};
	if (strlen(s) < 19 || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
		return -1;
	return (long long)timegm(&tm);
}

static void load_fixture(void)
{
	FILE *f = fopen(gl_test_fixture(TB "sacct_alloc.txt"), "r");
	char line[2048];
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		char *fld[40];
		int n = 0;
		for (char *s = line, *t; n < 40 && (t = strsep(&s, "|\n"));)
			fld[n++] = t;
		/* fields (sacct_fields.txt): 5 Account, 8 User, 12 Start, 13 End, 23 AllocTRES */
		struct fx_job *j = &g_jobs[g_njobs];
		const char *g = strstr(fld[23], "gres/gpu=");
		const char *ty = strstr(fld[23], "gres/gpu:");
		if (!g || ts(fld[12]) < 0)
			continue;
		snprintf(j->account, sizeof j->account, "%s", fld[5]);
		snprintf(j->user, sizeof j->user, "%s", fld[8]);
		j->gpus = atoll(g + 9);
		snprintf(j->gpu_type, sizeof j->gpu_type, "%.*s", (int)strcspn(ty + 9, "="), ty + 9);
		j->start = ts(fld[12]);
		j->end = ts(fld[13]);
		g_njobs++;
	}
	fclose(f);
}

static int start_daemon(const char *cost_yaml)
{
	return gl_test_daemon_start(&g_d, g_dsn, cost_yaml, (const char *[]){"--no-ingest", NULL});
}

static int setup(void **state)
{
	struct gl_test_out o;
	if (gl_test_db_fresh("gl_test_chargeback", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file", TB "sacct_alloc.txt",
			"--fields", g_fields, NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	snprintf(g_dir, sizeof g_dir, "%s", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	load_fixture();
	return start_daemon(base_rates);
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static cJSON *get(const char *path, long want)
{
	cJSON *j = gl_test_get_json(g_d.port, path, want);
	assert_non_null(j);
	return j;
}

static cJSON *item(cJSON *root, size_t step, const char *name)
{
	cJSON *st = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "steps"), (int)step), *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			return it;
	}
	return NULL;
}

static long long num(cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItem(o, k);
	assert_non_null(v);
	return (long long)v->valuedouble;
}

/* exact numerator of cost over [a,b): gpus*1000 x seconds x micros/hour */
static __int128 fx_cost_num(const char *account, const char *user, long long a, long long b, long long split,
			    long long rate_a100_before, long long rate_a100_after, long long rate_v100,
			    long long *alloc_ms)
{
	__int128 n = 0;
	*alloc_ms = 0;
	for (int i = 0; i < g_njobs; i++) {
		const struct fx_job *j = &g_jobs[i];
		long long s = j->start > a ? j->start : a, e = j->end < b ? j->end : b;
		if ((account && strcmp(j->account, account)) || (user && strcmp(j->user, user)) || e <= s)
			continue;
		*alloc_ms += j->gpus * 1000 * (e - s);
		if (!strcmp(j->gpu_type, "v100")) {
			n += (__int128)j->gpus * 1000 * (e - s) * rate_v100;
		} else {
			long long s1 = s, e1 = e < split ? e : split, s2 = s > split ? s : split;
			if (e1 > s1)
				n += (__int128)j->gpus * 1000 * (e1 - s1) * rate_a100_before;
			if (e > s2)
				n += (__int128)j->gpus * 1000 * (e - s2) * rate_a100_after;
		}
	}
	return n;
}

/* sreport's figure for an account, read from the real sreport output */
static long long sreport_account(const char *account)
{
	FILE *f = fopen(gl_test_fixture("tests/fixtures/sreport/sreport_account_utilization_by_user.txt"), "r");
	char line[512];
	long long v = -1;
	while (f && fgets(line, sizeof line, f)) {
		char *fld[6] = {0};
		int n = 0;
		for (char *s = line, *t; n < 6 && (t = strsep(&s, "|\n"));)
			fld[n++] = t;
		if (n == 6 && !strcmp(fld[1], account) && !fld[2][0])
			v = atoll(fld[5]);
	}
	if (f)
		fclose(f);
	return v;
}

static void test_accounts_match_sreport_and_costs_reconcile(void **state)
{
	static const char *const accts[] = {"teama", "teamb", "teamc"};
	cJSON *j = get("/v1/chargeback?" WIN "&aggregate=account", 200), *tot;
	long long sum_cost = 0, sum_alloc = 0, a = ts("2026-11-22T16:00:00"), b = ts("2026-11-22T17:00:00");
	__int128 total_num = 0;
	for (size_t i = 0; i < 3; i++) {
		cJSON *it = item(j, 0, accts[i]);
		long long ms;
		__int128 n = fx_cost_num(accts[i], NULL, a, b, b, 2500000, 2500000, 1200000, &ms);
		long long exact_floor = (long long)(n / 3600000);
		assert_non_null(it);
		assert_int_equal(num(it, "allocated_gpu_seconds"), sreport_account(accts[i]));
		assert_int_equal(num(it, "allocated_gpu_seconds"), ms / 1000);
		/* rounded once: floor or ceil of the exact cost */
		assert_true(num(it, "cost_micros") == exact_floor || num(it, "cost_micros") == exact_floor + 1);
		sum_cost += num(it, "cost_micros");
		sum_alloc += num(it, "allocated_gpu_seconds");
		total_num += n;
	}
	tot = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "totals");
	assert_int_equal(num(tot, "cost_micros"), sum_cost);
	assert_int_equal(sum_cost, (long long)((total_num + 1800000) / 3600000));
	assert_int_equal(num(tot, "allocated_gpu_seconds"), sum_alloc);
	assert_int_equal(sum_alloc, 1002);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unpriced_models")), 0);
	cJSON_Delete(j);
}

static void test_teams_and_unallocated(void **state)
{
	cJSON *j = get("/v1/chargeback?" WIN "&aggregate=team", 200);
	assert_int_equal(num(item(j, 0, "vision"), "allocated_gpu_seconds"), sreport_account("teama"));
	assert_int_equal(num(item(j, 0, "language"), "allocated_gpu_seconds"), sreport_account("teamb"));
	/* teamc has no owner rule */
	assert_int_equal(num(item(j, 0, "__unallocated__"), "allocated_gpu_seconds"), sreport_account("teamc"));
	/* no exporter data: busy/idle are unknown, not zero */
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(item(j, 0, "vision"), "busy_gpu_seconds")));
	cJSON_Delete(j);
}

static void reload(const char *yaml)
{
	char path[PATH_MAX + 16];
	struct gl_test_out o;
	FILE *f;
	snprintf(path, sizeof path, "%s/rates.yaml", g_dir);
	f = fopen(path, "w");
	fputs(yaml, f);
	fclose(f);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
	if (o.status)
		fprintf(stderr, "%s", o.err);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
}

static void test_rate_change_splits_jobs(void **state)
{
	/* a100 price changes at 16:04:27, in the middle of job 4 (4 GPUs, 16:03:57-16:04:57) */
	long long a = ts("2026-11-22T16:00:00"), b = ts("2026-11-22T17:00:00"), split = ts("2026-11-22T16:04:27"), ms;
	cJSON *j;
	reload("rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n    to: 2026-11-22T16:04:27Z\n"
	       "  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: 2026-11-22T16:04:27Z\n"
	       "  - model: v100\n    per_gpu_hour: \"1.20\"\n");
	j = get("/v1/chargeback?" WIN "&aggregate=user", 200);
	{
		__int128 n = fx_cost_num(NULL, "carol", a, b, split, 2500000, 3000000, 1200000, &ms);
		long long fl = (long long)(n / 3600000);
		long long got = num(item(j, 0, "carol"), "cost_micros");
		assert_true(got == fl || got == fl + 1);
		/* not the same as pricing job 4 wholly at either rate */
		__int128 n_old = fx_cost_num(NULL, "carol", a, b, b, 2500000, 2500000, 1200000, &ms);
		assert_true(n != n_old);
	}
	cJSON_Delete(j);
	reload(base_rates);
}

static void test_owner_change_mid_window(void **state)
{
	/* teama belongs to vision until 16:04:30, then to robotics: jobs are
	 * owned at their start time */
	cJSON *j;
	long long before = 0, after = 0;
	reload("rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: v100\n    per_gpu_hour: \"1.20\"\n"
	       "owners:\n  - match: account\n    value: teama\n    team: vision\n    to: 2026-11-22T16:04:30Z\n"
	       "  - match: account\n    value: teama\n    team: robotics\n    from: 2026-11-22T16:04:30Z\n");
	for (int i = 0; i < g_njobs; i++) {
		const struct fx_job *fj = &g_jobs[i];
		if (strcmp(fj->account, "teama"))
			continue;
		if (fj->start < ts("2026-11-22T16:04:30"))
			before += fj->gpus * (fj->end - fj->start);
		else
			after += fj->gpus * (fj->end - fj->start);
	}
	assert_true(before > 0 && after > 0);
	j = get("/v1/chargeback?" WIN "&aggregate=team", 200);
	assert_int_equal(num(item(j, 0, "vision"), "allocated_gpu_seconds"), before);
	assert_int_equal(num(item(j, 0, "robotics"), "allocated_gpu_seconds"), after);
	cJSON_Delete(j);
	reload(base_rates);
}

static void test_steps_add_up(void **state)
{
	cJSON *whole = get("/v1/chargeback?window=2026-11-22T15:00:00Z,2026-11-22T18:00:00Z&aggregate=team", 200);
	cJSON *steps = get("/v1/chargeback?window=2026-11-22T15:00:00Z,2026-11-22T18:00:00Z&aggregate=team&step=hour", 200);
	cJSON *tw = cJSON_GetObjectItem(whole, "totals"), *ts_ = cJSON_GetObjectItem(steps, "totals");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(steps, "steps")), 3);
	assert_int_equal(num(tw, "allocated_gpu_seconds"), num(ts_, "allocated_gpu_seconds"));
	assert_int_equal(num(tw, "allocated_gpu_seconds"), 1002);
	/* cost is rounded per step line, so the whole-window total may differ by
	 * at most one micro-unit per line; each response reconciles exactly */
	{
		long long d = num(tw, "cost_micros") - num(ts_, "cost_micros");
		assert_true(d >= -6 && d <= 6);
		long long sum = 0;
		cJSON *st;
		cJSON_ArrayForEach(st, cJSON_GetObjectItem(steps, "steps"))
		sum += num(cJSON_GetObjectItem(st, "totals"), "cost_micros");
		assert_int_equal(sum, num(ts_, "cost_micros"));
	}
	cJSON_Delete(whole);
	cJSON_Delete(steps);
}

static void test_filter_and_csv(void **state)
{
	struct gl_test_http r;
	cJSON *j = get("/v1/chargeback?" WIN "&aggregate=user&filter=account:\"teamb\"", 200);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items")), 2);
	assert_int_equal(num(item(j, 0, "carol"), "allocated_gpu_seconds"), 330);
	assert_int_equal(num(item(j, 0, "bob"), "allocated_gpu_seconds"), 60);
	cJSON_Delete(j);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/chargeback?" WIN "&aggregate=account&format=csv", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "Content-Type: text/csv"));
	assert_true(strncmp(r.body, "start,end,account,allocated_gpu_seconds,busy_gpu_seconds,", 57) == 0);
	assert_non_null(strstr(r.body, "2026-11-22T16:00:00Z,2026-11-22T17:00:00Z,teama,256,,,"));
	assert_non_null(strstr(r.body, "\r\n"));
	gl_test_http_fini(&r);
}

/* /v1/jobs with a window: per-job GPU-seconds and cost add up to the
 * chargeback lines; keyset pages cover every job exactly once. */
static void test_jobs_window_cost_and_cursor(void **state)
{
	char path[256];
	long long cursor = 0, seen = 0, alloc = 0, cost = 0;
	int pages = 0;
	cJSON *cb = get("/v1/chargeback?" WIN "&aggregate=account&filter=account:\"teamb\"", 200);
	for (;;) {
		cJSON *j, *it, *nc;
		if (cursor)
			snprintf(path, sizeof path, "/v1/jobs?" WIN "&limit=7&cursor=%lld", cursor);
		else
			snprintf(path, sizeof path, "/v1/jobs?" WIN "&limit=7");
		j = get(path, 200);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "jobs"))
		{
			seen++;
			if (!strcmp(cJSON_GetObjectItem(it, "account")->valuestring, "teamb") &&
			    cJSON_GetObjectItem(it, "gpus")->valuedouble > 0) {
				alloc += num(it, "gpu_seconds");
				cost += num(it, "cost_micros");
				/* no exporter data for these jobs: unknown, not zero */
				assert_true(cJSON_IsNull(cJSON_GetObjectItem(it, "busy_gpu_seconds")));
			}
		}
		nc = cJSON_GetObjectItem(j, "next_cursor");
		pages++;
		if (cJSON_IsNull(nc)) {
			cJSON_Delete(j);
			break;
		}
		cursor = (long long)nc->valuedouble;
		cJSON_Delete(j);
		assert_true(pages < 10);
	}
	{
		/* every allocation that ran in the window, once: the fixture's rows
		 * with a Start (job 12 was cancelled while pending) */
		FILE *f = fopen(TB "sacct_alloc.txt", "r");
		char line[2048];
		long long ran = 0;
		while (f && fgets(line, sizeof line, f)) {
			char *fld[40];
			int n = 0;
			for (char *p = line, *t; n < 40 && (t = strsep(&p, "|\n"));)
				fld[n++] = t;
			ran += n > 13 && ts(fld[12]) >= 0;
		}
		if (f)
			fclose(f);
		assert_int_equal(seen, ran);
	}
	assert_true(pages >= 3);
	assert_int_equal(alloc, num(item(cb, 0, "teamb"), "allocated_gpu_seconds"));
	/* per-job rounding vs per-line rounding: at most one micro-unit per job */
	{
		long long d = cost - num(item(cb, 0, "teamb"), "cost_micros");
		assert_true(d >= -8 && d <= 8);
	}
	cJSON_Delete(cb);
}

static void expect_400(const char *path, const char *param)
{
	cJSON *j = get(path, 400), *e = cJSON_GetObjectItem(j, "error");
	assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, param);
	cJSON_Delete(j);
}

static void test_bad_parameters(void **state)
{
	expect_400("/v1/chargeback?window=soon", "window");
	expect_400("/v1/chargeback?window=2026-11-22T17:00:00Z,2026-11-22T16:00:00Z", "window");
	expect_400("/v1/chargeback?window=2020-01-01,2026-01-01", "window");
	expect_400("/v1/chargeback?" WIN "&aggregate=planet", "aggregate");
	expect_400("/v1/chargeback?" WIN "&step=fortnight", "step");
	expect_400("/v1/chargeback?window=2026-01-01,2026-12-01&step=hour", "step");
	expect_400("/v1/chargeback?" WIN "&filter=planet:\"x\"", "filter");
	expect_400("/v1/chargeback?" WIN "&filter=team:\"x", "filter");
	expect_400("/v1/chargeback?" WIN "&aggregate=user&shareIdle=owner", "shareIdle");
	expect_400("/v1/chargeback?" WIN "&shareIdle=sometimes", "shareIdle");
	expect_400("/v1/chargeback?" WIN "&format=xml", "format");
	expect_400("/v1/jobs?window=soon", "window");
	expect_400("/v1/jobs?cursor=0", "cursor");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accounts_match_sreport_and_costs_reconcile),
		cmocka_unit_test(test_teams_and_unallocated),
		cmocka_unit_test(test_rate_change_splits_jobs),
		cmocka_unit_test(test_owner_change_mid_window),
		cmocka_unit_test(test_steps_add_up),
		cmocka_unit_test(test_filter_and_csv),
		cmocka_unit_test(test_jobs_window_cost_and_cursor),
		cmocka_unit_test(test_bad_parameters),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
