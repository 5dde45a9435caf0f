/* GET /v1/runs and /v1/runs/{id} end to end: the real binary ingests the
 * real Slurm testbed's allocations (tests/fixtures/sacct/testbed: job 5
 * requeued once, array 7 of four tasks, a failed and two cancelled jobs)
 * and real pod dumps (run:ai jobs in tests/fixtures/kube/sharing, a JobSet
 * pod's metadata in tests/fixtures/kube/runs), and the
 * daemon answers over real HTTP. Expected figures are worked out by hand
 * from those files at a100 3.60 and v100 7.20 an hour (1,000 and 2,000
 * micro-units a GPU-second, so every cost is exact). Conservation: the
 * runs' cost per user equals /v1/chargeback's per user for the same
 * window; each member's cost equals /v1/jobs'. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB "tests/fixtures/sacct/testbed/"
#define KS "tests/fixtures/kube/sharing/"
#define WIN "window=2026-11-22T00:00:00Z,2026-11-23T00:00:00Z"

static char g_dsn[512];
static char g_fields[1024];
static struct gl_test_daemon g_d;

static const char config_yaml[] = "rates:\n"
				  "  - model: a100\n    per_gpu_hour: \"3.60\"\n"
				  "  - model: v100\n    per_gpu_hour: \"7.20\"\n"
				  "runs:\n"
				  "  - by: tag\n"
				  "  - by: array\n"
				  "  - by: kube_owner\n"
				  "workload_types:\n"
				  "  - match: run_kind\n    value: array\n    type: sweep\n"
				  "  - match: run_kind\n    value: JobSet\n    type: training\n";

static void ingest(const char *const *argv, int want)
{
	struct gl_test_out o;
	char *a[12] = {0};
	for (int i = 0; argv[i] && i < 11; i++)
		a[i] = (char *)argv[i];
	if (gl_test_run(g_dsn, NULL, &o, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], NULL) ||
	    o.status != want)
		fail_msg("%s %s: exit %d: %s", argv[0], argv[1], o.status, o.err);
	gl_test_out_fini(&o);
}

/* The testbed's jobs 2 (alice, 1 a100, 40 s) and 11 (alice, 1 v100, 71 s,
 * TIMEOUT) as
 * cluster "tagged" (its Cluster column changed), with a Comment column appended (the real capture has
 * none: its slurmdbd does not store comments) naming one run=<id> for
 * both: the comment goes through the real ingest into the job's tags. */
static void tagged_copy(void)
{
	char path[400], fields[1100], line[4096];
	FILE *in = fopen(TB "sacct_alloc.txt", "r"), *out;
	int k = 0;
	snprintf(path, sizeof path, "%s/runs-tagged-sacct.txt", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	out = fopen(path, "w");
	if (!in || !out)
		fail_msg("tagged copy: %s", path);
	while (fgets(line, sizeof line, in))
		if (++k == 2 || k == 14) {
			char *c = strstr(line, "|testgpu|"); /* the Cluster column */
			line[strcspn(line, "\r\n")] = '\0';
			if (!c)
				fail_msg("tagged copy: no Cluster in line %d", k);
			*c = '\0';
			fprintf(out, "%s|tagged|%s|ckpt-%d run=pretrain-7\n", line, c + 9, k);
		}
	fclose(in);
	fclose(out);
	snprintf(fields, sizeof fields, "%s,Comment", g_fields);
	ingest((const char *[]){"ingest", "sacct", "--cluster", "tagged", "--file", path, "--fields", fields, NULL}, 0);
}

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_runs", g_dsn, sizeof g_dsn) || gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	ingest((const char *[]){"ingest", "sacct", "--cluster", "testgpu", "--file", TB "sacct_alloc.txt", "--fields",
				g_fields, NULL},
	       0);
	tagged_copy();
	/* real pod dumps, three of them owned by run:ai jobs (ownerReferences),
	 * on the nodes whose GPU memory their shares need */
	ingest((const char *[]){"ingest", "kube-nodes", "--cluster", "k1", "--file", KS "handwritten_nodes.json", "--at",
				"2026-11-22T15:00:00Z", NULL},
	       0);
	ingest((const char *[]){"ingest", "kube", "--cluster", "k1", "--file", KS "sharing_pods.json", "--at",
				"2026-11-22T16:00:00Z", NULL},
	       4); /* the sharing schemes' pods a node cannot bill are reported, the rest ingested */
	/* a JobSet's pod on a cluster of its own (a snapshot lists a cluster's
	 * every pod) */
	ingest((const char *[]){"ingest", "kube-nodes", "--cluster", "k2", "--file", KS "handwritten_nodes.json", "--at",
				"2026-11-22T14:00:00Z", NULL},
	       0);
	ingest((const char *[]){"ingest", "kube", "--cluster", "k2", "--file", "tests/fixtures/kube/runs/jobset_pod.json",
				"--at", "2026-11-22T16:00:00Z", NULL},
	       0);
	return gl_test_daemon_start(&g_d, g_dsn, config_yaml, (const char *[]){"--no-ingest", NULL});
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

static long long num(const cJSON *o, const char *k)
{
	return gl_test_jnum(o, k);
}

/* the run of /v1/runs' answer whose key is key (the test fails without one) */
static cJSON *run_of(cJSON *root, const char *key)
{
	cJSON *it = gl_test_json_item(root, "runs", "key", key);
	if (!it)
		fail_msg("no run '%s'", key);
	return it;
}

/* Job 5: attempt 1 REQUEUED after 26 s (1 GPU), attempt 2 COMPLETED after
 * 40 s; queued 1 s, then 121 s (16:04:24 to 16:06:25). */
static void test_requeued_job_is_one_run(void **state)
{
	cJSON *root = get("/v1/runs?" WIN, 200), *r = run_of(root, "testgpu/job/5");
	assert_string_equal(cJSON_GetObjectItem(r, "kind")->valuestring, "job");
	assert_int_equal(num(r, "attempts"), 2);
	assert_int_equal(num(r, "jobs"), 1);
	assert_int_equal(num(r, "gpu_seconds"), 66);
	assert_int_equal(num(r, "cost_micros"), 66000);
	assert_int_equal(num(r, "failed_attempts_cost_micros"), 26000);
	assert_int_equal(num(r, "failed_attempts_gpu_seconds"), 26);
	assert_int_equal(num(r, "queue_seconds"), 122);
	assert_string_equal(cJSON_GetObjectItem(r, "state")->valuestring, "COMPLETED");
	assert_string_equal(cJSON_GetObjectItem(r, "first_submit")->valuestring, "2026-11-22T16:03:57Z");
	assert_string_equal(cJSON_GetObjectItem(r, "last_end")->valuestring, "2026-11-22T16:07:05Z");
	cJSON_Delete(root);
}

/* Array 7: tasks 7_0..7_3, 1 GPU for 15 s each. Job 10 FAILED after 10 s
 * on a v100: the whole run's cost is a failed attempt's. */
static void test_array_and_failed(void **state)
{
	cJSON *root = get("/v1/runs?" WIN, 200), *r = run_of(root, "testgpu/array/7"), *f;
	assert_string_equal(cJSON_GetObjectItem(r, "kind")->valuestring, "array");
	assert_int_equal(num(r, "attempts"), 4);
	assert_int_equal(num(r, "jobs"), 4);
	assert_int_equal(num(r, "gpu_seconds"), 60);
	assert_int_equal(num(r, "cost_micros"), 60000);
	assert_int_equal(num(r, "failed_attempts_cost_micros"), 0);
	f = run_of(root, "testgpu/job/10");
	assert_string_equal(cJSON_GetObjectItem(f, "state")->valuestring, "FAILED");
	assert_int_equal(num(f, "cost_micros"), 20000);
	assert_int_equal(num(f, "failed_attempts_cost_micros"), 20000);
	cJSON_Delete(root);
	/* state= keeps the runs whose final state it names, any case */
	root = get("/v1/runs?" WIN "&state=failed", 200);
	assert_int_equal(num(root, "count"), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "runs"), 0), "key")->valuestring,
			    "testgpu/job/10");
	cJSON_Delete(root);
}

/* A run=<id> word in the comment groups two jobs into one run; the one
 * that ran out of time is a failed attempt (71 s at 2,000 a second). */
static void test_comment_tag(void **state)
{
	cJSON *root = get("/v1/runs?" WIN, 200), *r = run_of(root, "tagged/tag/pretrain-7");
	assert_string_equal(cJSON_GetObjectItem(r, "kind")->valuestring, "tag");
	assert_int_equal(num(r, "jobs"), 2);
	assert_int_equal(num(r, "attempts"), 2);
	assert_int_equal(num(r, "gpu_seconds"), 40 + 71);
	assert_int_equal(num(r, "cost_micros"), 40000 + 142000);
	assert_int_equal(num(r, "failed_attempts_cost_micros"), 142000);
	cJSON_Delete(root);
}

/* Pods: a run:ai job's pod is the run of its owner (ownerReferences of a
 * real `kubectl get pod -o yaml` dump), a pod without one its own run. */
static void test_pod_owner(void **state)
{
	cJSON *root = get("/v1/runs?" WIN "&aggregate=run", 200), *r = run_of(root, "k1/owner/runai-pa/RunaiJob/frac-1");
	assert_string_equal(cJSON_GetObjectItem(r, "kind")->valuestring, "owner");
	assert_string_equal(cJSON_GetObjectItem(r, "namespace")->valuestring, "runai-pa");
	assert_int_equal(num(r, "jobs"), 1);
	assert_string_equal(cJSON_GetObjectItem(r, "state")->valuestring, "RUNNING");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(r, "last_end")));
	r = run_of(root, "k1/owner/runai-team-a/RunaiJob/job-2");
	assert_string_equal(cJSON_GetObjectItem(r, "name")->valuestring, "job-2-0-0");
	{
		/* the pods no operator owns: each its own run, keyed by its name */
		cJSON *it;
		int pods = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "runs"))
		{
			const char *key = cJSON_GetObjectItem(it, "key")->valuestring;
			if (strcmp(cJSON_GetObjectItem(it, "kind")->valuestring, "pod"))
				continue;
			assert_true(!strncmp(key, "k1/pod/default/", 15));
			assert_int_equal(num(it, "attempts"), 1);
			pods++;
		}
		assert_true(pods > 0);
	}
	cJSON_Delete(root);
	/* the kinds summed */
	root = get("/v1/runs?" WIN "&aggregate=kind", 200);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(root, "items")) >= 4);
	cJSON_Delete(root);
}

static cJSON *cb_item(cJSON *root, const char *name)
{
	cJSON *it, *st = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "steps"), 0);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			return it;
	}
	return NULL;
}

/* One costing rule: the runs' cost and GPU-seconds per user equal the
 * chargeback's per user, and together the chargeback's total. */
static void test_cost_equals_chargeback(void **state)
{
	cJSON *runs = get("/v1/runs?" WIN "&aggregate=user", 200);
	cJSON *cb = get("/v1/chargeback?" WIN "&aggregate=user", 200), *it;
	long long sum = 0, cb_sum = 0;
	int n = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(runs, "items"))
	{
		const char *user = cJSON_GetObjectItem(it, "user")->valuestring;
		cJSON *c = cb_item(cb, user);
		if (!c)
			fail_msg("user %s has runs but no chargeback line", user);
		assert_int_equal(num(it, "cost_micros"), num(c, "cost_micros"));
		assert_int_equal(num(it, "gpu_seconds"), num(c, "allocated_gpu_seconds"));
		sum += num(it, "cost_micros");
		n++;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), 0), "items"))
	cb_sum += num(it, "cost_micros");
	assert_true(n >= 4);
	assert_int_equal(sum, cb_sum);
	cJSON_Delete(runs);
	cJSON_Delete(cb);
	/* 1,002 GPU-seconds in the testbed (README oracle): a100 816 at 1,000,
	 * v100 186 at 2,000 micro-units a second */
	runs = get("/v1/runs?" WIN "&aggregate=cluster", 200);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(runs, "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "cluster")->valuestring, "testgpu")) {
			assert_int_equal(num(it, "cost_micros"), 816 * 1000 + 186 * 2000);
			assert_int_equal(num(it, "gpu_seconds"), 1002);
			n = -1;
		}
	}
	assert_int_equal(n, -1);
	cJSON_Delete(runs);
}

/* /v1/runs/{id}: the attempts, each with its own cost equal to /v1/jobs'. */
static void test_run_detail(void **state)
{
	cJSON *root = get("/v1/runs?" WIN, 200), *r = run_of(root, "testgpu/job/5"), *d, *m, *jobs;
	char path[200];
	snprintf(path, sizeof path, "/v1/runs/%s?" WIN, cJSON_GetObjectItem(r, "id")->valuestring);
	d = get(path, 200);
	m = cJSON_GetObjectItem(d, "members");
	assert_int_equal(cJSON_GetArraySize(m), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "state")->valuestring, "REQUEUED");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "failed_attempt")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 1), "failed_attempt")));
	assert_int_equal(num(cJSON_GetArrayItem(m, 0), "cost_micros"), 26000);
	assert_int_equal(num(cJSON_GetArrayItem(m, 1), "cost_micros"), 40000);
	jobs = get("/v1/jobs?" WIN "&job_id=5", 200);
	{
		cJSON *j;
		long long s = 0;
		cJSON_ArrayForEach(j, cJSON_GetObjectItem(jobs, "jobs")) s += num(j, "cost_micros");
		assert_int_equal(s, num(d, "cost_micros"));
	}
	cJSON_Delete(jobs);
	cJSON_Delete(d);
	cJSON_Delete(root);
	/* an id no run has: 404; not an id at all: 404 */
	d = get("/v1/runs/0000000000000000?" WIN, 404);
	cJSON_Delete(d);
	d = get("/v1/runs/x?" WIN, 404);
	cJSON_Delete(d);
}

static void want_400(const char *path, const char *param)
{
	cJSON *e = get(path, 400), *p = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "error"), "param");
	if (!cJSON_IsString(p) || strcmp(p->valuestring, param))
		fail_msg("%s: 400 without param %s", path, param);
	cJSON_Delete(e);
}

static void test_bad_params(void **state)
{
	want_400("/v1/runs?aggregate=team", "aggregate");
	want_400("/v1/runs?state=COMPLETED%3B", "state");
	want_400("/v1/runs?state=", "state");
	want_400("/v1/runs?window=2026-13-01T00:00:00Z,2026-11-23T00:00:00Z", "window");
	want_400("/v1/runs?format=xml", "format");
	want_400("/v1/runs?offset=3", "offset");
	/* a run's members are one page */
	want_400("/v1/runs/0000000000000000?limit=3", "limit");
	want_400("/v1/runs/0000000000000000?state=FAILED", "state");
}

static void test_csv(void **state)
{
	struct gl_test_http r;
	struct gl_test_csv t;
	assert_int_equal(gl_test_http(g_d.port, "GET", "/v1/runs?" WIN "&format=csv", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(gl_test_csv_parse(r.body, &t), 0);
	{
		int key = gl_test_csv_col(&t, "key"), cost = gl_test_csv_col(&t, "cost"), found = 0;
		assert_true(key >= 0 && cost >= 0);
		for (size_t i = 1; i < t.nrows; i++)
			if (!strcmp(t.cell[i][key], "testgpu/job/5")) {
				assert_string_equal(t.cell[i][cost], "0.07");
				found = 1;
			}
		assert_true(found);
	}
	gl_test_csv_free(&t);
	gl_test_http_fini(&r);
}

/* The real JobSet pod: its controlling owner is a Job (one replicated
 * job's), its run the JobSet its labels name. */
static void test_jobset_run(void **state)
{
	cJSON *root = get("/v1/runs?" WIN, 200), *r = run_of(root, "k2/jobset/default/example-jobset"), *it;
	assert_string_equal(cJSON_GetObjectItem(r, "kind")->valuestring, "jobset");
	assert_int_equal(num(r, "jobs"), 1);
	/* 15:00 to the snapshot at 16:00 on a replica of ts-h100-01's one
	 * H100 time-sliced 4 ways: a quarter of a GPU, 900 GPU-seconds */
	assert_int_equal(num(r, "gpu_seconds"), 900);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "runs"))
	{
		if (strstr(cJSON_GetObjectItem(it, "key")->valuestring, "example-jobset-rs-a-0"))
			fail_msg("the pod is also run %s", cJSON_GetObjectItem(it, "key")->valuestring);
	}
	cJSON_Delete(root);
}

/* Workload rules on the run kind: the array's tasks are "sweep", the
 * JobSet's pod "training", each type's GPU-seconds those of its run, and
 * the Slurm jobs of no array and the other pods unclassified. */
static void test_run_kind_rules(void **state)
{
	cJSON *runs = get("/v1/runs?" WIN, 200), *cb = get("/v1/chargeback?" WIN "&aggregate=workload_type", 200);
	cJSON *it, *sweep = NULL, *training = NULL, *st = cJSON_GetArrayItem(cJSON_GetObjectItem(cb, "steps"), 0);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		const char *n = cJSON_GetObjectItem(it, "name")->valuestring;
		if (!strcmp(n, "sweep"))
			sweep = it;
		else if (!strcmp(n, "training"))
			training = it;
		else if (strcmp(n, "unclassified") && strcmp(n, "__idle__"))
			fail_msg("unexpected type %s", n);
	}
	assert_non_null(sweep);
	assert_non_null(training);
	assert_int_equal(num(sweep, "allocated_gpu_seconds"), num(run_of(runs, "testgpu/array/7"), "gpu_seconds"));
	assert_int_equal(num(training, "allocated_gpu_seconds"),
			 num(run_of(runs, "k2/jobset/default/example-jobset"), "gpu_seconds"));
	assert_true(num(sweep, "allocated_gpu_seconds") > 0);
	cJSON_Delete(runs);
	cJSON_Delete(cb);
}

/* After the rollup the day is built and a run's cost is read from its
 * jobs' built lines (usage_daily_job keeps every job, sql/092), not
 * computed live: the day holds a line for each GPU job of the day, and
 * the figures are the same as before it was built. Last: it builds. */
static void test_built_day(void **state)
{
	cJSON *before = get("/v1/runs?" WIN, 200), *after, *r;
	struct gl_test_out o;
	if (gl_test_run(g_dsn, NULL, &o, "rollup", NULL) || o.status != 0)
		fail_msg("rollup: exit %d: %s", o.status, o.err);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day = '2026-11-22'"), 1);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(DISTINCT job_pk) FROM usage_daily_job WHERE day = '2026-11-22'"),
			 gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM jobs WHERE gpu_milli > 0"
						 " AND start_at < '2026-11-23' AND coalesce(end_at, now()) > '2026-11-22'"));
	after = get("/v1/runs?" WIN, 200);
	r = run_of(after, "testgpu/job/5");
	assert_int_equal(num(r, "gpu_seconds"), 66);
	assert_int_equal(num(r, "cost_micros"), 66000);
	assert_int_equal(num(r, "failed_attempts_cost_micros"), 26000);
	{
		cJSON *a, *b;
		int n = 0;
		cJSON_ArrayForEach(b, cJSON_GetObjectItem(before, "runs"))
		{
			a = run_of(after, cJSON_GetObjectItem(b, "key")->valuestring);
			assert_int_equal(num(a, "cost_micros"), num(b, "cost_micros"));
			assert_int_equal(num(a, "gpu_seconds"), num(b, "gpu_seconds"));
			n++;
		}
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(after, "runs")), n);
	}
	cJSON_Delete(before);
	cJSON_Delete(after);
	test_cost_equals_chargeback(state);
	test_run_kind_rules(state); /* the types from the rollup's usage_daily */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requeued_job_is_one_run), cmocka_unit_test(test_array_and_failed),
		cmocka_unit_test(test_cost_equals_chargeback),  cmocka_unit_test(test_run_detail),
		cmocka_unit_test(test_bad_params),              cmocka_unit_test(test_csv),
		cmocka_unit_test(test_pod_owner),              cmocka_unit_test(test_comment_tag),
		cmocka_unit_test(test_jobset_run),              cmocka_unit_test(test_run_kind_rules),
		cmocka_unit_test(test_built_day),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
