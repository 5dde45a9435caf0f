/* Every GPU-second of a cluster is allocated, idle or unavailable exactly
 * once, and /v1/chargeback says the same as /v1/capacity, also where a job's
 * key is not one capacity has: a pod and an untyped gres/gpu job (no GPU
 * type of their own), jobs under a node's second partition, and a half-GPU
 * pod (milli-GPU rounding). Real binary over real HTTP, real PostgreSQL, the
 * hand-written inputs of tests/fixtures/conservation in the real formats;
 * the expected figures are worked out below from those files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FX "tests/fixtures/conservation/"

static char g_dsn[512];
static struct gl_test_daemon g_d;

static const char rates_yaml[] =
	"rates:\n"
	"  - model: a100\n    per_gpu_hour: \"2.50\"\n    to: \"2026-10-15T12:00:00Z\"\n"
	"  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: \"2026-10-15T12:00:00Z\"\n"
	"  - model: NVIDIA-A100-SXM4-80GB\n    per_gpu_hour: \"1.00\"\n"
	/* k1's GPUs priced apart from c1's a100: without the alias both would
	 * be model a100 (sql/024) */
	"gpu_models:\n  - match: NVIDIA-A100-SXM4-80GB\n    model: a100_80g\n"
	"owners:\n  - match: account\n    value: teama\n    team: vision\n"
	"  - match: account\n    value: teamb\n    team: language\n";

static int setup(void **state)
{
	struct gl_test_out o;
	char fields[1024];
	FILE *f;
	if (gl_test_db_fresh("gl_test_conservation", g_dsn, sizeof g_dsn))
		return -1;
	f = fopen(gl_test_fixture(FX "sacct_fields.txt"), "r");
	if (!f || !fgets(fields, sizeof fields, f))
		return -1;
	fclose(f);
	fields[strcspn(fields, "\n")] = 0;
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "c1", "--file", FX "sacct_alloc.txt", "--fields",
			fields, NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	/* October's days built before the node inventory arrives: they must
	 * turn stale when it gives job 103 its model */
	if (gl_test_run(g_dsn, NULL, &o, "rollup", NULL) || o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes", FX "scontrol_nodes.txt",
			"--at", "2026-09-01T00:00:00Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "kube-nodes", "--cluster", "k1", "--file", FX "kube_nodes.json", "--at",
			"2026-10-01T00:00:00Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	/* the same inventories seen again as the tests start (--at: now): their
	 * capacity from the first snapshot on is firm up to now, not past the
	 * last snapshot plus inventory.absent_grace_s (docs/capacity.md) */
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes", FX "scontrol_nodes.txt",
			NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "kube-nodes", "--cluster", "k1", "--file", FX "kube_nodes.json", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", "k1", "--file", FX "kube_pods.json", "--at",
			"2026-10-04T00:00:00Z", NULL) ||
	    o.status != 0)
		return -1;
	gl_test_out_fini(&o);
	/* job 107's 4 GPUs idle, scraped every 30 s from 27 October 00:00 */
	for (int k = 0; k < 14; k++) {
		char at[32];
		snprintf(at, sizeof at, "2026-10-27T00:%02d:%02dZ", k * 30 / 60, k * 30 % 60);
		if (gl_test_run(g_dsn, NULL, &o, "ingest", "dcgm", "--cluster", "c1", "--file", FX "dcgm_n1_job107.prom",
				"--at", at, NULL) ||
		    o.status != 0)
			return -1;
		gl_test_out_fini(&o);
	}
	return gl_test_daemon_start(&g_d, g_dsn, rates_yaml, (const char *[]){"--no-ingest", NULL});
}

static int rebuild(void **state)
{
	struct gl_test_out o;
	int rc = gl_test_run(g_dsn, NULL, &o, "rollup", NULL) || o.status != 0 || !strstr(o.out, " days rebuilt") ? -1 : 0;
	if (rc)
		fprintf(stderr, "rollup: %s\n", o.err);
	gl_test_out_fini(&o);
	return rc;
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

static long long num(cJSON *o, const char *k)
{
	cJSON *v = cJSON_GetObjectItem(o, k);
	if (!v || !cJSON_IsNumber(v))
		fail_msg("no number '%s'", k);
	return (long long)v->valuedouble;
}

struct figures {
	long long reported, allocated, idle, unavailable; /* capacity */
	long long cb_allocated, cb_idle, cb_over;         /* chargeback */
};

static void figures_of(const char *cluster, const char *window, struct figures *x)
{
	char path[512];
	cJSON *j, *t, *st;
	snprintf(path, sizeof path, "/v1/capacity?window=%s&cluster=%s", window, cluster);
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	t = cJSON_GetObjectItem(j, "totals");
	x->reported = num(t, "reported_gpu_seconds");
	x->allocated = num(t, "allocated_gpu_seconds");
	x->idle = num(t, "idle_gpu_seconds");
	x->unavailable = num(t, "unavailable_gpu_seconds") + num(t, "reserved_gpu_seconds");
	assert_int_equal(num(t, "over_gpu_seconds"), 0);
	cJSON_Delete(j);
	snprintf(path, sizeof path, "/v1/chargeback?window=%s&filter=cluster:%s&aggregate=team", window, cluster);
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "steps")), 1);
	st = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0);
	x->cb_allocated = num(cJSON_GetObjectItem(st, "totals"), "allocated_gpu_seconds");
	x->cb_idle = num(cJSON_GetObjectItem(st, "idle"), "gpu_seconds");
	x->cb_over = num(cJSON_GetObjectItem(st, "idle"), "overallocated_gpu_seconds");
	cJSON_Delete(j);
}

/* Figures worked out from the fixture files by hand. */
static void test_hand_computed(void **state)
{
	struct figures x;
	/* k1, 2 October: 2 GPUs x 86,400 s; pod ml/p1 holds 1 GPU for 10 h */
	figures_of("k1", "2026-10-02", &x);
	assert_int_equal(x.reported, 172800);
	assert_int_equal(x.allocated, 36000);
	assert_int_equal(x.cb_allocated, 36000);
	assert_int_equal(x.idle, 136800);
	assert_int_equal(x.cb_idle, 136800);
	/* c1, October: 6 GPUs x 31 days; jobs 101 (2 GPUs, 2 h of it in
	 * October), 102 (1, 1.5 h), 103 (1 untyped, 10 h), 104 (2 on n2 under
	 * p1, 5 h), 107 (4, 6 h), 108 (2 on n2 under p1, 6 h); 106 has no GPU */
	figures_of("c1", "2026-10", &x);
	assert_int_equal(x.reported, 6LL * 31 * 86400);
	assert_int_equal(x.allocated, 2 * 7200 + 5400 + 36000 + 2 * 18000 + 4 * 21600 + 2 * 21600);
	assert_int_equal(x.cb_allocated, x.allocated);
	assert_int_equal(x.cb_idle, x.reported - x.allocated);
	/* 27 October 00:00-06:00: jobs 107 and 108 hold all 6 GPUs, two of
	 * them on n2, whose primary partition p2 has no job of its own */
	figures_of("c1", "2026-10-27T00:00:00Z,2026-10-27T06:00:00Z", &x);
	assert_int_equal(x.reported, 6 * 21600);
	assert_int_equal(x.cb_allocated, 6 * 21600);
	assert_int_equal(x.cb_idle, 0);
	assert_int_equal(x.cb_over, 0);
	/* 3 October on k1: pod ml/p2 holds half a GPU for 3 s = 1.5 GPU-s,
	 * rounded half up once, the same in both */
	figures_of("k1", "2026-10-03", &x);
	assert_int_equal(x.allocated, 2);
	assert_int_equal(x.cb_allocated, 2);
	assert_int_equal(x.cb_idle, 172800 - 2);
}

static long long item_cost(const char *path, const char *name)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200), *it;
	long long v = -1;
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			v = num(it, "cost_micros");
	}
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unpriced_models")), 0);
	cJSON_Delete(j);
	return v;
}

static cJSON *idle_of(cJSON *j, int step)
{
	return cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), step), "idle");
}

/* Idle is priced at the rate in force while it was idle: a100 goes from
 * 2.50 to 3.00 an hour at 15 October 12:00. */
static void test_idle_priced_at_the_rate_in_force(void **state)
{
	cJSON *j;
	long long day_sum = 0;
	/* c1, October: before the change 14.5 days x 6 GPUs = 7,516,800 less
	 * 14,400 (101) + 1,800 (102 until 12:00) + 36,000 (103) allocated;
	 * after it 16.5 days x 6 = 8,553,600 less 3,600 (102) + 36,000 (104)
	 * + 86,400 (107) + 43,200 (108) */
	const long long idle1 = 7516800 - (14400 + 1800 + 36000), idle2 = 8553600 - (3600 + 36000 + 86400 + 43200);
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&filter=cluster:c1", 200);
	assert_non_null(j);
	assert_int_equal(num(idle_of(j, 0), "gpu_seconds"), idle1 + idle2);
	assert_int_equal(num(idle_of(j, 0), "total_micros"), (idle1 * 2500000 + idle2 * 3000000) / 3600);
	cJSON_Delete(j);
	/* the same month day by day adds up to it */
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10&filter=cluster:c1&step=day", 200);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "steps")), 31);
	for (int d = 0; d < 31; d++)
		day_sum += num(idle_of(j, d), "total_micros");
	assert_int_equal(day_sum, (idle1 * 2500000 + idle2 * 3000000) / 3600);
	cJSON_Delete(j);
	/* /v1/idle prices the same idle the same way (rounded once per row:
	 * c1 has two rows, p1 and p2) */
	j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10", 200);
	assert_non_null(j);
	{
		cJSON *it;
		long long secs = 0, cost = 0, want = (idle1 * 2500000 + idle2 * 3000000) / 3600;
		int rows = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "unallocated_idle"))
		{
			if (strcmp(cJSON_GetObjectItem(it, "cluster")->valuestring, "c1"))
				continue;
			secs += num(it, "idle_gpu_seconds");
			cost += num(it, "idle_cost_micros");
			rows++;
		}
		assert_int_equal(rows, 2);
		assert_int_equal(secs, idle1 + idle2);
		assert_true(cost >= want - rows && cost <= want + rows);
	}
	cJSON_Delete(j);
	/* a window cut anywhere: 11:45:17-12:00 is 883 s x 6 GPUs less 883 of
	 * job 102 at 2.50; then to 20 October 02:13:59, 396,839 s x 6 less
	 * 3,600 (102) and 2 x 8,039 (104) at 3.00; rounded once, half up */
	j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-10-15T11:45:17Z,2026-10-20T02:13:59Z&filter=cluster:c1",
			     200);
	assert_non_null(j);
	{
		const long long a = 883 * 6 - 883, b = 396839LL * 6 - 3600 - 2 * 8039;
		assert_int_equal(num(idle_of(j, 0), "gpu_seconds"), a + b);
		assert_int_equal(num(idle_of(j, 0), "total_micros"), (a * 2500000 + b * 3000000 + 1800) / 3600);
	}
	cJSON_Delete(j);
}

/* A job without a GPU type of its own is priced by the model of its node. */
static void test_untyped_jobs_priced_by_their_node(void **state)
{
	cJSON *j;
	/* pod ml/p1: 1 GPU x 10 h on kn1 (NVIDIA-A100-SXM4-80GB, alias
	 * a100_80g, at 1.00) */
	assert_int_equal(item_cost("/v1/chargeback?window=2026-10-02&filter=cluster:k1&aggregate=gpu_model",
				   "a100_80g"),
			 10000000);
	/* job 103 (carol, gres/gpu=1): 1 GPU x 10 h on n1 (a100 at 2.50) */
	assert_int_equal(item_cost("/v1/chargeback?window=2026-10-10&aggregate=user", "carol"), 25000000);
	/* /v1/idle settles as chargeback: on 27 October 00:00-06:00 c1 is
	 * full, k1's 2 GPUs idle: 43,200 of 172,800 GPU-seconds unallocated */
	j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10-27T00:00:00Z,2026-10-27T06:00:00Z", 200);
	assert_non_null(j);
	{
		cJSON *it;
		long long idle = 0, rep = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "unallocated_idle"))
		{
			idle += num(it, "idle_gpu_seconds");
			rep += num(it, "reported_gpu_seconds");
		}
		long long aidle = 0;
		assert_int_equal(idle, 43200);
		assert_int_equal(rep, 172800);
		/* plus job 107's idle GPUs the exporter saw (13 or 14 intervals
		 * of 30 s on 4 GPUs: test_exporter_time_within_allocation) */
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "allocated_idle")) aidle += num(it, "idle_gpu_seconds");
		assert_true(aidle == 13 * 120 || aidle == 14 * 120);
		assert_true(cJSON_GetObjectItem(j, "wasted_fraction")->valuedouble == (43200.0 + (double)aidle) / 172800.0);
	}
	cJSON_Delete(j);
}

/* Exporter time is booked by 300 s bucket start; a window that cuts a
 * bucket still shows no more busy + idle time than was allocated in it. */
static void test_exporter_time_within_allocation(void **state)
{
	cJSON *j, *it, *alice = NULL;
	j = gl_test_get_json(g_d.port,
			     "/v1/chargeback?window=2026-10-27T00:00:00Z,2026-10-27T00:00:10Z&aggregate=user&filter=cluster:c1",
			     200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, "alice"))
			alice = it;
	}
	assert_non_null(alice);
	/* 4 GPUs x 10 s, every sample idle */
	assert_int_equal(num(alice, "allocated_gpu_seconds"), 40);
	assert_int_equal(num(alice, "observed_gpu_seconds"), 40);
	assert_int_equal(num(alice, "idle_in_allocation_gpu_seconds"), 40);
	assert_int_equal(num(alice, "busy_gpu_seconds"), 0);
	cJSON_Delete(j);
	/* the whole hour is not capped: 13 or 14 intervals of 30 s on 4 GPUs */
	j = gl_test_get_json(g_d.port,
			     "/v1/chargeback?window=2026-10-27T00:00:00Z,2026-10-27T01:00:00Z&aggregate=user&filter=cluster:c1",
			     200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, "alice")) {
			long long obs = num(it, "observed_gpu_seconds");
			assert_true(obs == 13 * 30 * 4 || obs == 14 * 30 * 4);
			assert_int_equal(num(it, "idle_in_allocation_gpu_seconds"), obs);
		}
	}
	cJSON_Delete(j);
	/* /v1/idle over 00:04:50-00:05:10: job 107 allocated 4 x 20 s, all of
	 * it idle; c1 is full, k1's 2 GPUs idle 20 s: (80 + 40) / 160 */
	j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10-27T00:04:50Z,2026-10-27T00:05:10Z", 200);
	assert_non_null(j);
	it = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "top_jobs"), 0);
	assert_non_null(it);
	assert_string_equal(cJSON_GetObjectItem(it, "job_id")->valuestring, "107");
	assert_int_equal(num(it, "idle_gpu_seconds"), 80);
	assert_true(cJSON_GetObjectItem(j, "wasted_fraction")->valuedouble == 0.75);
	cJSON_Delete(j);
}

/* Idle that has not happened is not billed, nor reported: chargeback and
 * /v1/capacity both count up to now (capacity used to roll open spans to
 * the window's end, so a month's capacity held its future idle). k1 has 2
 * GPUs and nothing running since October. */
static void test_no_idle_billed_ahead_of_now(void **state)
{
	const long long nov1 = 1793491200; /* 2026-11-01T00:00:00Z */
	long long t0 = (long long)time(NULL), t1, idle;
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11-01T00:00:00Z,2027-06-01T00:00:00Z"
					      "&filter=cluster:k1", 200);
	cJSON *cap = gl_test_get_json(g_d.port, "/v1/capacity?window=2026-11-01T00:00:00Z,2027-06-01T00:00:00Z"
						"&cluster=k1", 200);
	t1 = (long long)time(NULL);
	assert_non_null(j);
	assert_non_null(cap);
	assert_true(t0 > nov1);
	idle = num(idle_of(j, 0), "gpu_seconds");
	assert_true(idle >= 2 * (t0 - nov1) && idle <= 2 * (t1 - nov1));
	{
		cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(cap, "rows"), 0);
		assert_non_null(row);
		long long rep = num(row, "reported_gpu_seconds"), cid = num(row, "idle_gpu_seconds");
		assert_true(rep >= 2 * (t0 - nov1) && rep <= 2 * (t1 - nov1));
		assert_true(cid >= 2 * (t0 - nov1) && cid <= 2 * (t1 - nov1));
	}
	cJSON_Delete(cap);
	cJSON_Delete(j);
	/* format=sreport rolls the hour of now up to its end, as slurmdbd
	 * does, and nothing after it */
	{
		struct gl_test_http h;
		long long h1, rep = -1;
		char *line;
		assert_int_equal(gl_test_http(g_d.port, "GET",
					      "/v1/capacity?window=2026-11-01T00:00:00Z,2027-06-01T00:00:00Z&cluster=k1"
					      "&format=sreport",
					      NULL, 0, NULL, &h),
				 0);
		h1 = ((long long)time(NULL) / 3600 + 1) * 3600;
		assert_int_equal(h.status, 200);
		line = strstr(h.body, "k1|gres/gpu|");
		assert_non_null(line);
		/* Cluster|TRES Name|Allocated|Down|PLND Down|Idle|Planned|Reported */
		assert_int_equal(sscanf(line, "k1|gres/gpu|%*d|%*d|%*d|%*d|%*d|%lld", &rep), 1);
		assert_true(rep >= 2 * (h1 - 3600 - nov1) && rep <= 2 * (h1 - nov1));
		gl_test_http_fini(&h);
	}
}

/* A window wholly after now has no idle yet and is no error. */
static void test_future_window(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2027-01-01T00:00:00Z,2027-01-02T00:00:00Z", 200);
	(void)state;
	assert_non_null(j);
	assert_int_equal(num(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "totals"),
			     "allocated_gpu_seconds"),
			 0);
	cJSON_Delete(j);
}

/* Over-allocation is shown on the key that is over, not on the cluster's
 * first key. 28 October 00:00-01:00: a job of 10 GPUs under p2 on n2 (2
 * GPUs): p2 is 28,800 GPU-s over its capacity; p1's 14,400 idle absorb
 * half, 14,400 stay over, on p2. (Runs last: it adds a job.) */
static void test_over_shown_on_its_key(void **state)
{
	cJSON *j, *it;
	long long over_p1 = -1, over_p2 = -1, idle = 0;
	(void)state;
	assert_int_equal(gl_test_exec_dsn(g_dsn,
					  "INSERT INTO jobs (cluster_id, job_key, job_id, state, partition, start_at, end_at,"
					  " gpu_micro, gpu_type, nodes) SELECT cluster_id, 'over1', 'over1', 'COMPLETED', 'p2',"
					  " '2026-10-28T00:00:00Z', '2026-10-28T01:00:00Z', 10000000, 'a100', ARRAY['n2']"
					  " FROM clusters WHERE name = 'c1'"),
			 1);
	j = gl_test_get_json(g_d.port, "/v1/idle?window=2026-10-28T00:00:00Z,2026-10-28T01:00:00Z", 200);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "unallocated_idle"))
	{
		if (strcmp(cJSON_GetObjectItem(it, "cluster")->valuestring, "c1"))
			continue;
		idle += num(it, "idle_gpu_seconds");
		if (!strcmp(cJSON_GetObjectItem(it, "partition")->valuestring, "p1"))
			over_p1 = num(it, "overallocated_gpu_seconds");
		else
			over_p2 = num(it, "overallocated_gpu_seconds");
	}
	assert_int_equal(idle, 0);
	assert_int_equal(over_p1, 0);
	assert_int_equal(over_p2, 14400);
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port,
			     "/v1/chargeback?window=2026-10-28T00:00:00Z,2026-10-28T01:00:00Z&filter=partition:p2", 200);
	assert_non_null(j);
	assert_int_equal(num(idle_of(j, 0), "overallocated_gpu_seconds"), 14400);
	cJSON_Delete(j);
}

/* A built day's fleet idle sums the owner rows' held (sql/114), a few a
 * day per key, not every usage_daily row: per day and capacity key they
 * hold what usage_daily holds, and every figure (capacity, idle, its
 * shares, unobserved capacity, the coverage) is the live query's. The live
 * answer: the same days unbuilt. The inventories arrived after October was
 * first built (setup), and the daemon reads capacity live for built days
 * too: the two must agree to the byte. */
static int by_name(const void *a, const void *b)
{
	const cJSON *x = cJSON_GetObjectItem(*(cJSON *const *)a, "name"), *y = cJSON_GetObjectItem(*(cJSON *const *)b, "name");
	return strcmp(cJSON_IsString(x) ? x->valuestring : "", cJSON_IsString(y) ? y->valuestring : "");
}

/* Idle and capacity lines come in the order their query met them (the
 * built days' before the live pieces'): compared by name. */
static void sort_named(cJSON *j)
{
	cJSON *e, *v[256];
	int n = 0;
	if (cJSON_IsArray(j) && cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "name")) {
		while ((e = cJSON_DetachItemFromArray(j, 0)) && n < 256)
			v[n++] = e;
		qsort(v, (size_t)n, sizeof *v, by_name);
		for (int i = 0; i < n; i++)
			cJSON_AddItemToArray(j, v[i]);
	}
	cJSON_ArrayForEach(e, j)
	sort_named(e);
}

static char *answer_of(const char *path)
{
	cJSON *j = gl_test_get_json(g_d.port, path, 200);
	char *s;
	assert_non_null(j);
	/* how old the sources' data is: the clock's, not the figures' */
	cJSON_DeleteItemFromObject(j, "data_through");
	cJSON_DeleteItemFromObject(j, "past_data_through");
	/* chargeback items are in one order however the window was read
	 * (gl_chargeback_keys_cmp): compared as they come */
	if (strncmp(path, "/v1/chargeback", 14) != 0)
		sort_named(j);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

static void test_built_equals_live(void **state)
{
	static const char *const paths[] = {
		"/v1/chargeback?window=2026-10&step=day&aggregate=team&shareIdle=proportional",
		"/v1/chargeback?window=2026-10&aggregate=cluster,partition,gpu_model&shareIdle=proportional",
		"/v1/chargeback?window=2026-10-15T11:45:17Z,2026-10-20T02:13:59Z&aggregate=account",
		"/v1/idle?window=2026-10",
		"/v1/capacity?window=2026-10&step=day&aggregate=partition",
	};
	enum { N = sizeof paths / sizeof *paths };
	char *built[N];
	(void)state;
	assert_int_equal(gl_test_qint_dsn(g_dsn,
					  "SELECT count(*) FROM (SELECT day, d_cluster, d_partition, d_gpu_model, sum(held) AS h"
					  " FROM usage_daily WHERE rate IS NULL GROUP BY 1, 2, 3, 4) a"
					  " FULL JOIN (SELECT day, d_cluster, d_partition, d_gpu_model, sum(held) AS h"
					  " FROM usage_daily_owner WHERE rate IS NULL GROUP BY 1, 2, 3, 4) b"
					  " USING (day, d_cluster, d_partition, d_gpu_model) WHERE a.h IS DISTINCT FROM b.h"),
			 0);
	/* not vacuous: October is built, and its jobs held GPUs on both clusters */
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day >= '2026-10-01'") >= 10);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(DISTINCT d_cluster) FROM usage_daily_owner WHERE held > 0"), 2);
	for (size_t i = 0; i < N; i++)
		built[i] = answer_of(paths[i]);
	assert_true(gl_test_exec_dsn(g_dsn, "DELETE FROM usage_daily_built") > 0);
	for (size_t i = 0; i < N; i++) {
		char *live = answer_of(paths[i]);
		size_t k = 0;
		while (built[i][k] && built[i][k] == live[k])
			k++;
		if (built[i][k] || live[k])
			fail_msg("%s: from byte %zu\nbuilt ...%.300s\nlive  ...%.300s", paths[i], k, built[i] + (k > 150 ? k - 150 : 0),
				 live + (k > 150 ? k - 150 : 0));
		free(live);
		free(built[i]);
	}
	assert_int_equal(rebuild(NULL), 0);
}

/* The exporter names a GPU's model on a later scrape: jobs on that node
 * without a type of their own take it then. */
static void test_model_named_later(void **state)
{
	PGconn *c = PQconnectdb(g_dsn);
	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_true(gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('ex1', 'kubernetes')") >= 0);
	assert_int_equal(gl_test_exec_dsn(g_dsn,
					  "INSERT INTO nodes (cluster_id, name, first_seen, last_seen) SELECT cluster_id, 'x1',"
					  " '2026-10-01', '2026-10-01' FROM clusters WHERE name = 'ex1'"),
			 1);
	assert_int_equal(gl_test_exec_dsn(g_dsn,
					  "INSERT INTO gpus (cluster_id, node_id, uuid, first_seen, last_seen) SELECT n.cluster_id,"
					  " n.node_id, 'GPU-x1', '2026-10-01', '2026-10-01' FROM nodes n JOIN clusters c USING"
					  " (cluster_id) WHERE c.name = 'ex1'"),
			 1);
	assert_int_equal(gl_test_exec_dsn(g_dsn,
					  "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, nodes)"
					  " SELECT cluster_id, 'pod:x', 'x', 'COMPLETED', '2026-10-02T00:00:00Z',"
					  " '2026-10-02T01:00:00Z', 1000000, ARRAY['x1'] FROM clusters WHERE name = 'ex1'"),
			 1);
	assert_string_equal(gl_test_qstr(c, "SELECT coalesce(node_gpu_model, 'none') FROM jobs WHERE job_key = 'pod:x'"),
			    "none");
	assert_int_equal(gl_test_exec_dsn(g_dsn, "UPDATE gpus SET model = 'NVIDIA L4', last_seen = '2026-10-03'"
						 " WHERE uuid = 'GPU-x1'"),
			 1);
	assert_string_equal(gl_test_qstr(c, "SELECT coalesce(node_gpu_model, 'none') FROM jobs WHERE job_key = 'pod:x'"),
			    "NVIDIA L4");
	PQfinish(c);
}

/* The identity over windows that cut jobs, days and the month anywhere. */
static void test_identity_over_windows(void **state)
{
	static const char *const windows[] = {
		"2026-10",
		"2026-10-01",
		"2026-10-10",
		"2026-10-20",
		"2026-09-30T21:30:00Z,2026-10-01T01:00:00Z",
		"2026-10-15T11:45:17Z,2026-10-20T02:13:59Z",
		"2026-10-27T05:59:58Z,2026-10-27T06:00:01Z",
		"2026-10-02T09:59:59Z,2026-10-03T00:00:02Z",
	};
	static const char *const clusters[] = {"c1", "k1"};
	for (size_t w = 0; w < sizeof windows / sizeof *windows; w++)
		for (size_t c = 0; c < 2; c++) {
			struct figures x;
			figures_of(clusters[c], windows[w], &x);
			if (x.allocated + x.idle + x.unavailable != x.reported || x.cb_allocated != x.allocated ||
			    x.cb_idle != x.idle || x.cb_over != 0)
				fail_msg("%s %s: capacity %lld = %lld allocated + %lld idle + %lld unavailable;"
					 " chargeback %lld allocated, %lld idle, %lld over",
					 clusters[c], windows[w], x.reported, x.allocated, x.idle, x.unavailable,
					 x.cb_allocated, x.cb_idle, x.cb_over);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_computed),
		cmocka_unit_test(test_identity_over_windows),
		cmocka_unit_test(test_untyped_jobs_priced_by_their_node),
		cmocka_unit_test(test_idle_priced_at_the_rate_in_force),
		cmocka_unit_test(test_exporter_time_within_allocation),
		cmocka_unit_test(test_no_idle_billed_ahead_of_now),
		/* and again from the days the rollup builds now */
		cmocka_unit_test_setup(test_hand_computed, rebuild),
		cmocka_unit_test(test_identity_over_windows),
		cmocka_unit_test(test_untyped_jobs_priced_by_their_node),
		cmocka_unit_test(test_idle_priced_at_the_rate_in_force),
		cmocka_unit_test(test_future_window),
		cmocka_unit_test(test_over_shown_on_its_key),
		cmocka_unit_test(test_built_equals_live),
		cmocka_unit_test(test_model_named_later),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
