/* /v1/forecast over real jobs (Philly sampled jobs and the Slurm testbed,
 * ingested by the real binary through the sacct path): the shape of the
 * answer, history equal to /v1/chargeback and to a computation over the
 * fixtures done here, intervals that nest, and 400s naming the parameter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAXJ 5000
#define PWIN "2017-10-01,2017-12-01"
#define PDAY0 1506816000LL /* 2017-10-01T00:00:00Z */
#define PDAYS 61

static struct gl_test_philly_job g_j[MAXJ];
static int g_n;
static char g_dsn[512];
static struct gl_test_daemon g_d;

struct tb {
	long long gpus, start, end;
};
static struct tb g_tb[64];
static int g_ntb;

static long long ts(const char *s, const char *fmt)
{
	struct tm tm = {0};
	if (!s || !strptime(s, fmt, &tm))
		return -1;
	return (long long)timegm(&tm);
}

/* Philly JSON -> sacct lines and the jobs kept here. */
static int load_philly(const char *out_path)
{
	g_n = gl_test_philly_to_sacct(out_path, "n1", g_j, MAXJ);
	return g_n > 4000 ? 0 : -1;
}

static void load_testbed(void)
{
	FILE *f = fopen(gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), "r");
	char line[2048];
	while (f && fgets(line, sizeof line, f)) {
		char *fld[40];
		int n = 0;
		for (char *s = line, *t; n < 40 && (t = strsep(&s, "|\n"));)
			fld[n++] = t;
		/* fields (sacct_fields.txt): 12 Start, 13 End, 23 AllocTRES */
		const char *g = n > 23 ? strstr(fld[23], "gres/gpu=") : NULL;
		long long s0 = n > 13 ? ts(fld[12], "%Y-%m-%dT%H:%M:%S") : -1;
		long long s1 = n > 13 ? ts(fld[13], "%Y-%m-%dT%H:%M:%S") : -1;
		if (!g || s0 < 0 || s1 < s0 || g_ntb == 64)
			continue;
		g_tb[g_ntb++] = (struct tb){atoll(g + 9), s0, s1};
	}
	if (f)
		fclose(f);
}

static int setup(void **state)
{
	char path[PATH_MAX], fields[1024];
	struct gl_test_out o;
	(void)state;
	snprintf(path, sizeof path, "%s/forecast-philly.txt", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	if (load_philly(path) || gl_test_db_fresh("gl_test_forecast", g_dsn, sizeof g_dsn) ||
	    gl_test_sacct_fields(fields, sizeof fields))
		return -1;
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "philly", "--file", path, "--fields",
			GL_TEST_PHILLY_FIELDS,
			NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file",
			gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), "--fields", fields, NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	load_testbed();
	/* a node inventory for capacity: one Kubernetes snapshot, in the past */
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "kube-nodes", "--cluster", "k8s", "--file",
			gl_test_fixture("tests/fixtures/nodes/kube/t3_2026-11-01T18.json"), "--at", "2026-11-01T18:00:00Z",
			NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	/* H100 demand on k8s above its 2 GPUs: 2 allocated and 1 pending, every
	 * hour from 2026-10-20 to 2026-11-06 */
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO jobs (cluster_id, job_key, job_id, state, submit_at, start_at, end_at,"
				    " gpu_micro, req_gpu_micro, gpu_type)"
				    " SELECT cluster_id, k, k, s, '2026-10-20T00:00:00Z', a::timestamptz, b::timestamptz, g, g,"
				    " 'NVIDIA-H100-80GB-HBM3' FROM clusters,"
				    " (VALUES ('pod:run', 'Succeeded', '2026-10-20T00:00:00Z', '2026-11-06T00:00:00Z', 2000000),"
				    "         ('pod:wait', 'Pending', NULL, NULL, 1000000)) v(k, s, a, b, g) WHERE name = 'k8s'") != 2)
		return -1;
	return gl_test_daemon_start(&g_d, g_dsn, NULL, (const char *[]){"--no-ingest", NULL});
}

static int teardown(void **state)
{
	(void)state;
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static long long overlap(long long a0, long long a1, long long b0, long long b1)
{
	long long s = a0 > b0 ? a0 : b0, e = a1 < b1 ? a1 : b1;
	return e > s ? e - s : 0;
}

static double num(cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItem(o, k);
	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

/* Every series: the documented fields, history of want_hist values, a
 * forecast of want_h steps that starts where history ends, never negative,
 * with nested intervals. */
static void check_shape(cJSON *j, int want_hist, int want_h, long long step_s)
{
	cJSON *s;
	assert_string_equal(cJSON_GetObjectItem(j, "metric")->valuestring,
			    cJSON_GetObjectItem(j, "metric")->valuestring);
	assert_non_null(cJSON_GetObjectItem(j, "step"));
	assert_non_null(cJSON_GetObjectItem(j, "aggregate"));
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(j, "series")) > 0);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
	{
		cJSON *h = cJSON_GetObjectItem(s, "history"), *f = cJSON_GetObjectItem(s, "forecast"), *p,
		      *acc = cJSON_GetObjectItem(s, "accuracy");
		long long last = -1;
		assert_true(cJSON_IsString(cJSON_GetObjectItem(s, "key")));
		assert_true(cJSON_IsString(cJSON_GetObjectItem(s, "method")));
		assert_true(cJSON_IsBool(cJSON_GetObjectItem(s, "fallback")));
		assert_true(cJSON_IsString(cJSON_GetObjectItem(s, "note")));
		assert_int_equal(cJSON_GetArraySize(h), want_hist);
		/* as far ahead as the series' history was backtested, and the note
		 * says so when that is short of the horizon asked */
		assert_int_equal(cJSON_GetArraySize(f), num(s, "horizon_answered"));
		assert_true(cJSON_GetArraySize(f) >= 1 && cJSON_GetArraySize(f) <= want_h);
		if (cJSON_GetArraySize(f) < want_h) {
			char want[64];
			snprintf(want, sizeof want, "answered %d of the %d ", cJSON_GetArraySize(f), want_h);
			assert_non_null(strstr(cJSON_GetObjectItem(s, "note")->valuestring, want));
		}
		assert_non_null(acc);
		for (const char *const *k = (const char *const[]){"mase", "wape", "coverage80", "coverage95", NULL}; *k;
		     k++) {
			cJSON *v = cJSON_GetObjectItem(acc, *k);
			assert_true(cJSON_IsNumber(v) || cJSON_IsNull(v));
		}
		assert_true(num(acc, "origins") >= 0);
		cJSON_ArrayForEach(p, h)
		{
			long long t = ts(cJSON_GetObjectItem(p, "t")->valuestring, "%Y-%m-%dT%H:%M:%SZ");
			assert_true(last < 0 || t == last + step_s);
			last = t;
			assert_true(num(p, "value") >= 0);
		}
		cJSON_ArrayForEach(p, f)
		{
			long long t = ts(cJSON_GetObjectItem(p, "t")->valuestring, "%Y-%m-%dT%H:%M:%SZ");
			assert_true(t == last + step_s);
			last = t;
			if (num(acc, "origins") == 0) {
				/* no backtest behind it: no interval claimed */
				assert_true(num(p, "value") >= 0);
				for (const char *const *k = (const char *const[]){"lo80", "hi80", "lo95", "hi95", NULL};
				     *k; k++)
					assert_true(cJSON_IsNull(cJSON_GetObjectItem(p, *k)));
				continue;
			}
			double v = num(p, "value"), l8 = num(p, "lo80"), h8 = num(p, "hi80"), l9 = num(p, "lo95"),
			       h9 = num(p, "hi95");
			assert_true(0 <= l9 && l9 <= l8 && l8 <= v && v <= h8 && h8 <= h9);
		}
	}
}

static void test_philly_vcs_daily(void **state)
{
	(void)state;
	cJSON *j = gl_test_get_json(g_d.port,
				    "/v1/forecast?metric=gpu_hours&aggregate=account&step=day&horizon=7&window=" PWIN, 200);
	cJSON *cb = gl_test_get_json(g_d.port, "/v1/chargeback?window=" PWIN "&step=day&aggregate=account", 200);
	cJSON *s;
	int checked = 0, modelled = 0;
	assert_non_null(j);
	assert_non_null(cb);
	assert_string_equal(cJSON_GetObjectItem(j, "metric")->valuestring, "gpu_hours");
	assert_string_equal(cJSON_GetObjectItem(j, "step")->valuestring, "day");
	check_shape(j, PDAYS, 7, 86400);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
	{
		const char *vc = cJSON_GetObjectItem(s, "key")->valuestring;
		cJSON *h = cJSON_GetObjectItem(s, "history");
		for (int d = 0; d < PDAYS; d++) {
			long long d0 = PDAY0 + 86400LL * d, want = 0;
			double got = num(cJSON_GetArrayItem(h, d), "value"), cbv = 0;
			for (int i = 0; i < g_n; i++)
				if (!strcmp(g_j[i].vc, vc))
					want += g_j[i].gpus * overlap(g_j[i].start, g_j[i].end, d0, d0 + 86400);
			/* the value is GPU-hours rounded to 4 places */
			assert_true(fabs(got * 3600 - (double)want) <= 0.5);
			/* and chargeback's figure for the same bucket */
			cJSON *it, *items = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), d),
								"items");
			cJSON_ArrayForEach(it, items)
				if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, vc))
					cbv = num(it, "allocated_gpu_seconds");
			assert_true(fabs(got * 3600 - cbv) <= 0.5);
			checked++;
		}
		modelled += !cJSON_IsTrue(cJSON_GetObjectItem(s, "fallback"));
	}
	assert_true(checked >= 5 * PDAYS);
	/* two months of history is enough for every VC to get a backtested method */
	assert_true(modelled >= 5);
	cJSON_Delete(j);
	cJSON_Delete(cb);
}

static void test_team_is_the_sum(void **state)
{
	(void)state;
	/* no owner rules: every job is __unallocated__, whose history is the
	 * cluster's; and aggregate=cluster gives the same numbers */
	cJSON *t = gl_test_get_json(g_d.port, "/v1/forecast?aggregate=team&step=day&window=" PWIN, 200);
	cJSON *c = gl_test_get_json(g_d.port, "/v1/forecast?aggregate=cluster&step=day&window=" PWIN, 200);
	assert_non_null(t);
	assert_non_null(c);
	check_shape(t, PDAYS, 14, 86400);
	check_shape(c, PDAYS, 14, 86400);
	cJSON *ts0 = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "series"), 0);
	assert_string_equal(cJSON_GetObjectItem(ts0, "key")->valuestring, "__unallocated__");
	cJSON *cs = NULL, *s;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(c, "series"))
		if (!strcmp(cJSON_GetObjectItem(s, "key")->valuestring, "philly"))
			cs = s;
	assert_non_null(cs);
	for (int d = 0; d < PDAYS; d++) {
		long long d0 = PDAY0 + 86400LL * d, want = 0;
		for (int i = 0; i < g_n; i++)
			want += g_j[i].gpus * overlap(g_j[i].start, g_j[i].end, d0, d0 + 86400);
		double a = num(cJSON_GetArrayItem(cJSON_GetObjectItem(ts0, "history"), d), "value");
		double b = num(cJSON_GetArrayItem(cJSON_GetObjectItem(cs, "history"), d), "value");
		assert_true(fabs(a * 3600 - (double)want) <= 0.5);
		assert_true(fabs(b * 3600 - (double)want) <= 0.5);
	}
	cJSON_Delete(t);
	cJSON_Delete(c);
}

static void test_testbed_cluster_hourly(void **state)
{
	(void)state;
	/* the Slurm testbed ran for minutes on 2026-11-22: hourly history of
	 * less than a day, so the short-history fallback, said so */
	cJSON *j = gl_test_get_json(g_d.port,
				    "/v1/forecast?aggregate=cluster&step=hour&horizon=6&level=80"
				    "&window=2026-11-22T00:00:00Z,2026-11-22T18:00:00Z",
				    200);
	cJSON *s, *tb = NULL;
	assert_non_null(j);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
		if (!strcmp(cJSON_GetObjectItem(s, "key")->valuestring, "testgpu"))
			tb = s;
	assert_non_null(tb);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(tb, "fallback")));
	assert_non_null(strstr(cJSON_GetObjectItem(tb, "note")->valuestring, "short history"));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(tb, "history")), 18);
	for (int hr = 0; hr < 18; hr++) {
		long long h0 = 1795305600LL + 3600LL * hr, want = 0; /* 2026-11-22T00:00:00Z */
		for (int i = 0; i < g_ntb; i++)
			want += g_tb[i].gpus * overlap(g_tb[i].start, g_tb[i].end, h0, h0 + 3600);
		double got = num(cJSON_GetArrayItem(cJSON_GetObjectItem(tb, "history"), hr), "value");
		assert_true(fabs(got * 3600 - (double)want) <= 0.5);
	}
	/* under a day leaves no backtest origin: a point, no interval */
	cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(tb, "forecast"), 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(f0, "lo95")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(f0, "lo80")));
	assert_true(num(f0, "value") >= 0);
	cJSON_Delete(j);

	/* level=80 on a series with a backtest: the 95 % bounds are left out
	 * (null), the 80 % ones are there */
	j = gl_test_get_json(g_d.port, "/v1/forecast?aggregate=account&step=day&horizon=7&level=80&window=" PWIN, 200);
	assert_non_null(j);
	int seen = 0;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
	{
		if (num(cJSON_GetObjectItem(s, "accuracy"), "origins") < 2)
			continue;
		f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "forecast"), 0);
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(f0, "lo95")) && cJSON_IsNull(cJSON_GetObjectItem(f0, "hi95")));
		assert_true(num(f0, "lo80") <= num(f0, "value") && num(f0, "value") <= num(f0, "hi80"));
		seen++;
	}
	assert_true(seen > 0);
	cJSON_Delete(j);
}

/* A new deployment's first day: the inventory of cluster "lab/east" (a '/'
 * in its name) starts at 16:40 on the window's last day with 8 GPUs, and 4
 * are in use every hour since. Capacity is the 8 GPUs there are, not the
 * day's average (2.2), so no saturation; and the series keeps its cluster
 * name whole. (Runs last: it adds a cluster.) */
static void test_capacity_forecast_first_day(void **state)
{
	(void)state;
	cJSON *j, *s;
	int seen = 0;
	assert_true(gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('lab/east', 'slurm')") >= 0);
	assert_int_equal(gl_test_exec_dsn(g_dsn,
					  "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, partition, partitions, source,"
					  " valid_from) SELECT cluster_id, 'e1', 'a100', 8, 'p', ARRAY['p'], 'scontrol',"
					  " '2026-11-20T16:40:00Z' FROM clusters WHERE name = 'lab/east'"),
			 1);
	assert_int_equal(gl_test_exec_dsn(g_dsn,
					  "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, gpu_type,"
					  " nodes) SELECT cluster_id, 'e1', 'e1', 'COMPLETED', '2026-11-20T17:00:00Z',"
					  " '2026-11-21T00:00:00Z', 4000000, 'a100', ARRAY['e1'] FROM clusters WHERE name = 'lab/east'"),
			 1);
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=lab/east&horizon=3&window=2026-11-07,2026-11-21",
			     200);
	assert_non_null(j);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
	{
		assert_string_equal(cJSON_GetObjectItem(s, "cluster")->valuestring, "lab/east");
		assert_string_equal(cJSON_GetObjectItem(s, "gpu_model")->valuestring, "a100");
		assert_true(num(s, "capacity_gpus") == 8);
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(s, "days_until_saturation_p50")));
		/* a day of history: the forecast peak is the 4 GPUs in use, and
		 * with no backtest behind it no probability is claimed */
		cJSON *d0 = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "days"), 0);
		assert_true(num(d0, "peak_demand") == 4);
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(d0, "p_saturation")));
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(d0, "lo80")));
		/* nor a queue-saturation probability from one day (the rate of
		 * nothing would say 0.5) */
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "queue_saturation"), "p")));
		seen++;
	}
	assert_int_equal(seen, 1);
	assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "queue_saturation"), "note")->valuestring,
			       "too little history"));
	cJSON_Delete(j);
}

/* A series is no older than its owner. A new cluster ran 8 GPUs for 20 h a
 * day on the last 6 days of a 91-day window; the 85 days before it are no
 * zero demand. Fitted, they made the backtest errors almost all zero: a
 * zero-width interval claiming 97 % coverage. Now the series is 6 days
 * long, so the short-history fallback, said so. (Runs last: it adds a
 * cluster.) */
static void test_new_series_is_short_history_not_zeros(void **state)
{
	(void)state;
	cJSON *j, *s, *nc = NULL;
	assert_true(gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('newc', 'slurm')") >= 0);
	assert_int_equal(gl_test_exec_dsn(g_dsn,
					  "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, nodes)"
					  " SELECT c.cluster_id, 'n' || d, 'n' || d, 'COMPLETED',"
					  "  timestamptz '2026-11-16T00:00:00Z' + d * interval '1 day',"
					  "  timestamptz '2026-11-16T20:00:00Z' + d * interval '1 day', 8000000, ARRAY['x1']"
					  " FROM clusters c, generate_series(1, 6) d WHERE c.name = 'newc'"),
			 6);
	j = gl_test_get_json(g_d.port,
			     "/v1/forecast?aggregate=cluster&step=day&horizon=7"
			     "&window=2026-08-24T00:00:00Z,2026-11-23T00:00:00Z",
			     200);
	assert_non_null(j);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
		if (!strcmp(cJSON_GetObjectItem(s, "key")->valuestring, "newc"))
			nc = s;
	assert_non_null(nc);
	/* the history shown is still the whole window: 85 zeros, 6 x 160 */
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(nc, "history")), 91);
	assert_true(num(cJSON_GetArrayItem(cJSON_GetObjectItem(nc, "history"), 84), "value") == 0);
	assert_true(num(cJSON_GetArrayItem(cJSON_GetObjectItem(nc, "history"), 90), "value") == 160);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(nc, "fallback")));
	assert_non_null(strstr(cJSON_GetObjectItem(nc, "note")->valuestring, "short history"));
	/* 6 days leave no origin a week ahead: no backtest, so no interval is
	 * claimed (zero-width bands used to say "certain") */
	assert_true(num(cJSON_GetObjectItem(nc, "accuracy"), "origins") == 0);
	assert_non_null(strstr(cJSON_GetObjectItem(nc, "note")->valuestring, "no intervals"));
	cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(nc, "forecast"), 0);
	assert_true(num(f0, "value") == 160);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(f0, "lo80")) && cJSON_IsNull(cJSON_GetObjectItem(f0, "hi95")));
	cJSON_Delete(j);
}

static void test_demand_and_pending(void **state)
{
	(void)state;
	cJSON *d = gl_test_get_json(g_d.port, "/v1/forecast?metric=demand_gpus&aggregate=account&window=" PWIN, 200);
	cJSON *p = gl_test_get_json(g_d.port, "/v1/forecast?metric=pending_gpus&aggregate=account&window=" PWIN, 200);
	cJSON *s;
	int checked = 0;
	assert_non_null(d);
	assert_non_null(p);
	check_shape(d, PDAYS, 14, 86400);
	check_shape(p, PDAYS, 14, 86400);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(d, "series"))
	{
		const char *vc = cJSON_GetObjectItem(s, "key")->valuestring;
		for (int day = 0; day < PDAYS; day++) {
			long long d0 = PDAY0 + 86400LL * day, want = 0;
			for (int i = 0; i < g_n; i++)
				if (!strcmp(g_j[i].vc, vc) && g_j[i].submit >= d0 && g_j[i].submit < d0 + 86400)
					want += g_j[i].gpus;
			assert_true(fabs(num(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "history"), day), "value") -
					 (double)want) < 1e-6);
			checked++;
		}
	}
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(p, "series"))
	{
		const char *vc = cJSON_GetObjectItem(s, "key")->valuestring;
		for (int day = 0; day < PDAYS; day++) {
			long long d0 = PDAY0 + 86400LL * day;
			double want = 0;
			for (int i = 0; i < g_n; i++)
				if (!strcmp(g_j[i].vc, vc))
					want += (double)g_j[i].gpus *
						(double)overlap(g_j[i].submit, g_j[i].start, d0, d0 + 86400) / 86400.0;
			assert_true(fabs(num(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "history"), day), "value") -
					 want) < 1e-3);
			checked++;
		}
	}
	assert_true(checked > 8 * PDAYS);
	cJSON_Delete(d);
	cJSON_Delete(p);
}

static void test_bad_parameters(void **state)
{
	(void)state;
	static const struct {
		const char *query, *param;
	} cases[] = {
		{"metric=gpus", "metric"},
		{"step=month", "step"},
		{"step=hour&horizon=0", "horizon"},
		{"horizon=12x", "horizon"},
		{"step=day&horizon=400", "horizon"},
		{"level=50", "level"},
		{"aggregate=colour", "aggregate"},
		{"aggregate=team,team", "aggregate"},
		{"window=someday", "window"},
		{"window=2030-01-01,2030-02-01", "window"}, /* no complete step before now */
		{"color=red", "color"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[256];
		snprintf(path, sizeof path, "/v1/forecast?%s", cases[i].query);
		cJSON *j = gl_test_get_json(g_d.port, path, 400);
		if (!j)
			fail_msg("%s: not a 400 JSON answer", path);
		cJSON *e = cJSON_GetObjectItem(j, "error");
		assert_non_null(e);
		assert_string_equal(cJSON_GetObjectItem(e, "param")->valuestring, cases[i].param);
		cJSON_Delete(j);
	}
}

static void test_cached_answer(void **state)
{
	(void)state;
	/* the same question again is answered from the cache: same computed_at, same body */
	const char *path = "/v1/forecast?aggregate=account&step=week&horizon=4&window=2017-09-04,2018-01-29";
	cJSON *a = gl_test_get_json(g_d.port, path, 200), *b = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(a);
	assert_non_null(b);
	check_shape(a, 21, 4, 7 * 86400);
	char *sa = cJSON_PrintUnformatted(a), *sb = cJSON_PrintUnformatted(b);
	assert_string_equal(sa, sb);
	free(sa);
	free(sb);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_excluded_days(void **state)
{
	(void)state;
	/* a maintenance day and a holiday: marked in history, values unchanged */
	cJSON *j = gl_test_get_json(g_d.port,
				    "/v1/forecast?aggregate=cluster&step=day&window=" PWIN
				    "&exclude=2017-10-15;2017-11-01T00:00:00Z,2017-11-03T00:00:00Z",
				    200);
	cJSON *s = NULL, *it;
	assert_non_null(j);
	check_shape(j, PDAYS, 14, 86400);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "series"))
		if (!strcmp(cJSON_GetObjectItem(it, "key")->valuestring, "philly"))
			s = it;
	assert_non_null(s);
	for (int d = 0; d < PDAYS; d++) {
		cJSON *h = cJSON_GetArrayItem(cJSON_GetObjectItem(s, "history"), d);
		long long d0 = PDAY0 + 86400LL * d, want = 0;
		int ex = d == 14 || d == 31 || d == 32; /* Oct 15, Nov 1, Nov 2 */
		assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(h, "excluded")), ex);
		for (int i = 0; i < g_n; i++)
			want += g_j[i].gpus * overlap(g_j[i].start, g_j[i].end, d0, d0 + 86400);
		assert_true(fabs(num(h, "value") * 3600 - (double)want) <= 0.5);
	}
	cJSON_Delete(j);
	{
		/* 13 days as RFC 3339 pairs, 545 bytes: every one whole (a field
		 * of 512 bytes once cut the 13th to "2017-10", the whole month) */
		char path[1024];
		int n = snprintf(path, sizeof path, "/v1/forecast?aggregate=cluster&step=day&window=" PWIN "&exclude=");
		int nex = 0;
		for (int d = 1; d <= 13; d++)
			n += snprintf(path + n, sizeof path - (size_t)n, "%s2017-10-%02dT00:00:00Z,2017-10-%02dT00:00:00Z",
				      d > 1 ? ";" : "", d, d + 1);
		j = gl_test_get_json(g_d.port, path, 200);
		assert_non_null(j);
		s = NULL;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "series"))
			if (!strcmp(cJSON_GetObjectItem(it, "key")->valuestring, "philly"))
				s = it;
		assert_non_null(s);
		for (int d = 0; d < PDAYS; d++) {
			int ex = cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "history"), d),
								  "excluded"));
			assert_int_equal(ex, d < 13);
			nex += ex;
		}
		assert_int_equal(nex, 13);
		cJSON_Delete(j);
	}
	j = gl_test_get_json(g_d.port, "/v1/forecast?exclude=2017-10-15;sometime", 400);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring, "exclude");
	cJSON_Delete(j);
}

static void test_capacity_forecast_philly(void **state)
{
	(void)state;
	/* no inventory for philly: capacity unknown, so no saturation figures;
	 * the daily peak of hourly allocated + pending GPUs computed here */
	cJSON *j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=philly&horizon=10&window=2017-10-01,2017-11-01",
				    200);
	cJSON *s, *ph = NULL;
	assert_non_null(j);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
	{
		assert_string_equal(cJSON_GetObjectItem(s, "cluster")->valuestring, "philly");
		if (!strcmp(cJSON_GetObjectItem(s, "gpu_model")->valuestring, "unknown"))
			ph = s;
	}
	assert_non_null(ph);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(ph, "capacity_gpus")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(ph, "days_until_saturation_p50")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(ph, "days_until_saturation_p80")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(ph, "days")), 10);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(ph, "days"), 0), "date")->valuestring,
			    "2017-11-01");
	cJSON *d;
	cJSON_ArrayForEach(d, cJSON_GetObjectItem(ph, "days"))
	{
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "p_saturation")));
		assert_true(num(d, "peak_demand") >= 0);
		assert_true(num(d, "lo80") <= num(d, "peak_demand") && num(d, "peak_demand") <= num(d, "hi80"));
	}
	cJSON *hist = cJSON_GetObjectItem(ph, "history");
	assert_int_equal(cJSON_GetArraySize(hist), 31);
	for (int day = 0; day < 31; day++) {
		double peak = 0;
		for (int hr = 0; hr < 24; hr++) {
			long long h0 = PDAY0 + 86400LL * day + 3600LL * hr;
			double v = 0;
			for (int i = 0; i < g_n; i++)
				v += (double)g_j[i].gpus *
				     (double)(overlap(g_j[i].start, g_j[i].end, h0, h0 + 3600) +
					      overlap(g_j[i].submit, g_j[i].start, h0, h0 + 3600)) /
				     3600.0;
			if (v > peak)
				peak = v;
		}
		assert_true(fabs(num(cJSON_GetArrayItem(hist, day), "peak_demand") - peak) < 2e-3);
	}
	cJSON_Delete(j);
}

/* Queue saturation days on Philly (one queue: philly/unknown): the
 * minutes of each day with GPUs pending, the union of [submit, start) of
 * its jobs, computed here; /v1/forecast?metric=pending_minutes shows them,
 * and /v1/capacity/forecast's queue_saturation gives the probability for
 * the day after the window. */
static void test_queue_saturation_philly(void **state)
{
	(void)state;
	enum { ND = 31 };
	double pm[ND] = {0};
	long long cur0 = 0, cur1 = 0;
	int idx[MAXJ], ni = 0;
	/* the union of pending spans, by submit time */
	for (int i = 0; i < g_n; i++)
		if (g_j[i].gpus > 0 && g_j[i].start > g_j[i].submit)
			idx[ni++] = i;
	for (int a = 1; a < ni; a++)
		for (int b = a; b > 0 && g_j[idx[b]].submit < g_j[idx[b - 1]].submit; b--) {
			int t = idx[b];
			idx[b] = idx[b - 1];
			idx[b - 1] = t;
		}
	for (int a = 0; a <= ni; a++) {
		if (a == ni || g_j[idx[a]].submit > cur1) {
			for (int d = 0; d < ND; d++)
				pm[d] += (double)overlap(cur0, cur1, PDAY0 + 86400LL * d, PDAY0 + 86400LL * (d + 1)) / 60.0;
			if (a == ni)
				break;
			cur0 = g_j[idx[a]].submit;
			cur1 = g_j[idx[a]].start;
		} else if (g_j[idx[a]].start > cur1) {
			cur1 = g_j[idx[a]].start;
		}
	}
	cJSON *j = gl_test_get_json(g_d.port,
				    "/v1/forecast?metric=pending_minutes&aggregate=cluster&step=day&horizon=7"
				    "&window=2017-10-01,2017-11-01",
				    200);
	cJSON *s, *ph = NULL;
	assert_non_null(j);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
		if (!strcmp(cJSON_GetObjectItem(s, "key")->valuestring, "philly"))
			ph = s;
	assert_non_null(ph);
	for (int d = 0; d < ND; d++)
		assert_true(fabs(num(cJSON_GetArrayItem(cJSON_GetObjectItem(ph, "history"), d), "value") - pm[d]) < 1e-3);
	cJSON_Delete(j);

	/* Philly's queue waited an hour or more on every day of October (30 of
	 * the 30 days after the first): no calm day to learn from, so no model
	 * but the rate (saturated + 1) / (days + 2) = 31/32 */
	int pos = 0;
	for (int d = 1; d < ND; d++)
		pos += pm[d] >= 60;
	assert_int_equal(pos, ND - 1);
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=philly&horizon=3&window=2017-10-01,2017-11-01", 200);
	assert_non_null(j);
	cJSON *qs = cJSON_GetObjectItem(j, "queue_saturation");
	ph = NULL;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
		if (!strcmp(cJSON_GetObjectItem(s, "gpu_model")->valuestring, "unknown"))
			ph = s;
	assert_non_null(ph);
	cJSON *q = cJSON_GetObjectItem(ph, "queue_saturation");
	assert_string_equal(cJSON_GetObjectItem(q, "date")->valuestring, "2017-11-01");
	assert_true(fabs(num(q, "last_day_pending_minutes") - round(pm[ND - 1] * 10) / 10) < 1e-9);
	assert_string_equal(cJSON_GetObjectItem(qs, "method")->valuestring, "rate");
	assert_true(num(q, "p") == round(31.0 / 32 * 1000) / 1000);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(qs, "accuracy")));
	cJSON_Delete(j);
}

/* Queue saturation on a made queue: cluster "qsat" runs one a100 job a day
 * from 2026-09-01; on days 5-9, 15-19 and 25-29 it waits 3 hours first
 * (180 pending minutes: saturated), on the others it starts at once. The
 * model learns that a day follows the one before, so a window ending on a
 * saturated day says tomorrow likely is and one ending on a calm day says
 * it likely is not; the backtest scores the last third of the days and
 * persistence is computed here. (Runs last: it adds a cluster.) */
static void test_queue_saturation_made(void **state)
{
	(void)state;
	cJSON *j, *qs, *acc, *s, *q = NULL;
	assert_true(gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('qsat', 'slurm')") >= 0);
	assert_int_equal(gl_test_exec_dsn(g_dsn,
					  "INSERT INTO jobs (cluster_id, job_key, job_id, state, submit_at, start_at, end_at,"
					  " gpu_micro, req_gpu_micro, gpu_type, nodes)"
					  " SELECT c.cluster_id, 'q' || d, 'q' || d, 'COMPLETED', t0,"
					  "  t0 + CASE WHEN d / 5 % 2 = 1 THEN interval '3 hours' ELSE interval '0' END,"
					  "  t0 + interval '5 hours', 1000000, 1000000, 'a100', ARRAY['q1']"
					  " FROM clusters c, generate_series(0, 34) d,"
					  "  LATERAL (SELECT timestamptz '2026-09-01T00:00:00Z' + d * interval '1 day' AS t0) x"
					  " WHERE c.name = 'qsat'"),
			 35);
	/* window of 29 days (0-28), the last saturated; scored from day
	 * 29 - 29/3 = 20: days 20-28, saturated on 25-28; persistence is
	 * wrong on day 20 (19 was saturated) and 25 (24 was not): 7/9, and
	 * finds 3 of 4 saturated days with one false alarm: F1 6/8 */
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=qsat&horizon=3&window=2026-09-01,2026-09-30", 200);
	assert_non_null(j);
	qs = cJSON_GetObjectItem(j, "queue_saturation");
	assert_string_equal(cJSON_GetObjectItem(qs, "method")->valuestring, "logistic");
	acc = cJSON_GetObjectItem(qs, "accuracy");
	assert_int_equal(num(acc, "days"), 9);
	assert_int_equal(num(acc, "saturated_days"), 4);
	assert_string_equal(cJSON_GetObjectItem(acc, "scored_from")->valuestring, "2026-09-21");
	assert_true(fabs(num(acc, "persistence_accuracy") - round(7.0 / 9 * 1e4) / 1e4) < 1e-9);
	assert_true(fabs(num(acc, "persistence_f1") - 0.75) < 1e-9);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
		q = cJSON_GetObjectItem(s, "queue_saturation");
	assert_non_null(q);
	assert_string_equal(cJSON_GetObjectItem(q, "date")->valuestring, "2026-09-30");
	assert_true(num(q, "last_day_pending_minutes") == 180);
	assert_true(num(q, "p") > 0.5);
	cJSON_Delete(j);
	/* ending on a calm day (33; 30-34 are calm) */
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=qsat&horizon=3&window=2026-09-01,2026-10-05", 200);
	assert_non_null(j);
	q = NULL;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
		q = cJSON_GetObjectItem(s, "queue_saturation");
	assert_non_null(q);
	assert_true(num(q, "last_day_pending_minutes") == 0);
	assert_true(num(q, "p") < 0.5);
	cJSON_Delete(j);
}

static void test_capacity_forecast_inventory(void **state)
{
	(void)state;
	/* k8s: GPUs present from the snapshot on, no demand at all: saturation
	 * is impossible (p 0, no day) and capacity is what /v1/capacity says
	 * was available in the window's last hour, the fleet as the inventory
	 * lists it (unobserved=include: a plan adds to the GPUs listed, seen
	 * lately or not; docs/capacity.md) */
	cJSON *j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?cluster=k8s&horizon=5&window=2026-10-20,2026-11-06",
				    200);
	cJSON *c = gl_test_get_json(g_d.port,
				    "/v1/capacity?cluster=k8s&aggregate=gpu_model&window=2026-11-05T23:00:00Z,2026-11-06T00:00:00Z"
				    "&unobserved=include",
				    200);
	cJSON *s;
	int models = 0;
	assert_non_null(j);
	assert_non_null(c);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "series"))
	{
		const char *model = cJSON_GetObjectItem(s, "gpu_model")->valuestring;
		double want = -1;
		cJSON *it, *d;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(c, "rows"))
			if (!strcmp(cJSON_GetObjectItem(it, "gpu_model")->valuestring, model))
				want = (num(it, "reported_gpu_seconds") - num(it, "down_gpu_seconds") -
					num(it, "planned_down_gpu_seconds")) /
				       3600.0;
		assert_true(want > 0);
		assert_true(fabs(num(s, "capacity_gpus") - want) < 1e-3);
		/* the jobs' gpu_type and the nodes' label, one model (sql/024) */
		if (!strcmp(model, "h100")) {
			/* 3 GPUs wanted every hour of every day against 2: saturated tomorrow, surely */
			assert_true(fabs(want - 2) < 1e-9);
			assert_int_equal(num(s, "days_until_saturation_p50"), 1);
			assert_int_equal(num(s, "days_until_saturation_p80"), 1);
			cJSON_ArrayForEach(d, cJSON_GetObjectItem(s, "days"))
			{
				assert_true(fabs(num(d, "peak_demand") - 3) < 1e-9);
				assert_true(num(d, "p_saturation") == 1);
			}
			/* a job pending all day, every day: no calm day to learn from,
			 * so the rate over the 16 days after the first, (16+1)/(16+2),
			 * and 17 days are too few for a backtest */
			cJSON *q = cJSON_GetObjectItem(s, "queue_saturation");
			assert_true(num(q, "p") == round(17.0 / 18 * 1000) / 1000);
			assert_true(num(q, "last_day_pending_minutes") == 1440);
			cJSON *h;
			cJSON_ArrayForEach(h, cJSON_GetObjectItem(s, "history"))
				assert_true(fabs(num(h, "peak_demand") - 3) < 1e-9);
		} else {
			/* no demand: saturation is impossible */
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(s, "days_until_saturation_p50")));
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(s, "days_until_saturation_p80")));
			cJSON_ArrayForEach(d, cJSON_GetObjectItem(s, "days"))
			{
				assert_true(num(d, "peak_demand") == 0);
				assert_true(num(d, "p_saturation") == 0);
			}
			/* an idle model has no queue-days: nothing to say */
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "queue_saturation"), "p")));
		}
		models++;
	}
	assert_true(models >= 2);
	cJSON *qs = cJSON_GetObjectItem(j, "queue_saturation");
	assert_string_equal(cJSON_GetObjectItem(qs, "method")->valuestring, "rate");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(qs, "accuracy")));
	assert_non_null(strstr(cJSON_GetObjectItem(qs, "note")->valuestring, "under 21 days"));
	cJSON_Delete(j);
	cJSON_Delete(c);
	/* bad parameters */
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?horizon=0", 400);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring, "horizon");
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/capacity/forecast?window=never", 400);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring, "window");
	cJSON_Delete(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_philly_vcs_daily),    cmocka_unit_test(test_team_is_the_sum),
		cmocka_unit_test(test_testbed_cluster_hourly), cmocka_unit_test(test_demand_and_pending),
		cmocka_unit_test(test_bad_parameters),      cmocka_unit_test(test_cached_answer),
		cmocka_unit_test(test_capacity_forecast_philly), cmocka_unit_test(test_queue_saturation_philly), cmocka_unit_test(test_capacity_forecast_inventory),
		cmocka_unit_test(test_excluded_days),
		cmocka_unit_test(test_new_series_is_short_history_not_zeros),
		cmocka_unit_test(test_capacity_forecast_first_day), cmocka_unit_test(test_queue_saturation_made),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
