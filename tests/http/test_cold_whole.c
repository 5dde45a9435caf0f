/* A cold window read whole (one live piece longer than a day, no step:
 * the jobs summed per owner-attribute set in one scan) answers what the
 * rollup's days answer for the same window, to the byte: jobs crossing a
 * price change and an owner rule's change inside the window, jobs across
 * the window's edges, an open job, and jobs serving an endpoint (moved to
 * their endpoints' sets after the sums) under a workload type rule on the
 * endpoint. A stepped request (each day a live step of its own, read job
 * by job) gives the same GPU-seconds per team, step by step summed. And
 * the schema the read needs to run in parallel workers (sql/132): a check
 * of the catalogs, not of a plan (its plan and time are measured on 10 M
 * jobs, docs/bench.md). Real PostgreSQL, the real binary over HTTP; the
 * rollup is `gpuledger rollup`. */
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

static char g_dsn[512];
static struct gl_test_daemon g_d;

/* the price of a100 changes at noon on the 15th, team of account ax on
 * the 17th at 06:00; serving jobs are typed by their endpoint */
static const char cfg[] = "rates:\n"
			  "  - model: a100\n    per_gpu_hour: \"2.50\"\n    to: \"2026-10-15T12:00:00Z\"\n"
			  "  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: \"2026-10-15T12:00:00Z\"\n"
			  "owners:\n  - match: account\n    value: ax\n    team: old\n    to: \"2026-10-17T06:00:00Z\"\n"
			  "  - match: account\n    value: ax\n    team: new\n    from: \"2026-10-17T06:00:00Z\"\n"
			  "  - match: account\n    value: ay\n    team: yteam\n"
			  "workload_types:\n  - match: endpoint\n    value: chat\n    type: inference\n";

/* key, account, start, end (NULL: open), GPUs */
static const struct {
	const char *key, *acct, *start, *end;
	int gpus;
} jobs[] = {
	{"db:1", "ax", "2026-10-12T01:00:00Z", "2026-10-12T05:30:00Z", 2},  /* inside, before the price change */
	{"db:2", "ax", "2026-10-15T10:00:00Z", "2026-10-15T14:00:07Z", 4},  /* across the price change */
	{"db:3", "ay", "2026-10-09T20:00:00Z", "2026-10-10T03:00:00Z", 1},  /* across the window's start */
	{"db:4", "ay", "2026-10-19T22:00:00Z", "2026-10-20T02:00:00Z", 3},  /* across the window's end */
	{"db:5", "ax", "2026-10-16T00:00:00Z", "2026-10-18T00:00:00Z", 1},  /* across the owner rule's change */
	{"db:6", "ay", "2026-10-15T11:00:00Z", "2026-10-15T13:30:00Z", 2},  /* serving, across the price change */
	{"db:7", "ay", "2026-10-13T00:00:00Z", "2026-10-13T08:00:00Z", 1},  /* serving */
	{"db:8", "ay", "2026-10-13T00:00:00Z", "2026-10-13T08:00:00Z", 1},  /* its twin, serving nothing */
	{"db:9", "ax", "2026-10-18T09:00:00Z", NULL, 2},                    /* open, last seen the 19th 12:00 */
};

static int setup(void **state)
{
	char sql[512];
	if (gl_test_db_fresh("gl_test_cold_whole", g_dsn, sizeof g_dsn) ||
	    gl_test_daemon_start(&g_d, g_dsn, cfg, (const char *[]){"--no-ingest", NULL}) ||
	    gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('c1', 'slurm')") != 1)
		return -1;
	for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO jobs (cluster_id, job_key, job_id, state, account, user_name, gpu_type, start_at,"
			 " end_at, last_seen_at, gpu_micro)"
			 " SELECT cluster_id, '%s', '%s', '%s', '%s', 'u', 'a100', '%s', %s%s%s, '2026-10-19T12:00:00Z',"
			 " %d000000 FROM clusters WHERE name = 'c1'",
			 jobs[i].key, jobs[i].key + 3, jobs[i].end ? "COMPLETED" : "RUNNING", jobs[i].acct, jobs[i].start,
			 jobs[i].end ? "'" : "", jobs[i].end ? jobs[i].end : "NULL", jobs[i].end ? "'" : "", jobs[i].gpus);
		if (gl_test_exec_dsn(g_dsn, sql) != 1)
			return -1;
	}
	/* pods whose physical share held differs from what they are billed:
	 * a run:ai reservation (billed half a GPU, holds none), a time-sliced
	 * pod across the price change (billed a quarter, holds the GPU), one
	 * billed nothing that holds a GPU */
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO clusters (name, kind) VALUES ('k1', 'kubernetes')") != 1 ||
	    gl_test_exec_dsn(g_dsn,
			     "INSERT INTO jobs (cluster_id, job_key, job_id, state, namespace, user_name, gpu_type, start_at,"
			     " end_at, last_seen_at, gpu_micro, phys_micro)"
			     " SELECT cluster_id, 'k:' || x.k, 'pod' || x.k, 'COMPLETED', 'ns1', 'p', 'a100', x.s::timestamptz,"
			     " x.e::timestamptz, '2026-10-19T12:00:00Z', x.g, x.h FROM clusters,"
			     " (VALUES (1, '2026-10-12T00:00:00Z', '2026-10-12T06:00:00Z', 500000, 0),"
			     "  (2, '2026-10-15T11:00:00Z', '2026-10-15T16:00:00Z', 250000, 1000000),"
			     "  (3, '2026-10-13T00:00:00Z', '2026-10-13T05:00:00Z', 0, 1000000)) x(k, s, e, g, h)"
			     " WHERE name = 'k1'") != 3)
		return -1;
	if (gl_test_exec_dsn(g_dsn, "INSERT INTO serving_endpoints (name, cluster_id)"
				    " SELECT 'chat', cluster_id FROM clusters WHERE name = 'c1'") != 1 ||
	    gl_test_exec_dsn(g_dsn, "INSERT INTO serving_jobs (job_pk, endpoint_id, model_name, cluster_id)"
				    " SELECT j.job_pk, e.endpoint_id, 'm', j.cluster_id FROM jobs j, serving_endpoints e"
				    " WHERE j.job_key IN ('db:6', 'db:7')") != 2)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* The answer without the clock's fields. */
static char *answer_of(const char *path)
{
	cJSON *j;
	char *s;
	if (strstr(path, "format=csv")) {
		struct gl_test_http r = {0};
		assert_int_equal(gl_test_http(g_d.port, "GET", path, NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		s = strdup(r.body);
		gl_test_http_fini(&r);
		return s;
	}
	j = gl_test_get_json(g_d.port, path, 200);
	assert_non_null(j);
	cJSON_DeleteItemFromObject(j, "data_through");
	cJSON_DeleteItemFromObject(j, "past_data_through");
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

#define WINDOW "window=2026-10-10T00:00:00Z,2026-10-20T00:00:00Z"
static const char *const paths[] = {
	"/v1/chargeback?" WINDOW "&aggregate=team",
	"/v1/chargeback?" WINDOW "&aggregate=team,workload_type,gpu_model",
	"/v1/chargeback?" WINDOW "&aggregate=account,user&unobserved=include",
	"/v1/chargeback?" WINDOW "&aggregate=team&format=csv",
	"/v1/chargeback?" WINDOW "&aggregate=cluster,namespace",
};
enum { N_PATHS = sizeof paths / sizeof *paths };

/* The team's GPU-seconds in a chargeback answer, over all its steps. */
static long long team_gpu_s(cJSON *j, const char *team)
{
	long long s = 0;
	cJSON *st, *it;
	cJSON_ArrayForEach(st, cJSON_GetObjectItem(j, "steps")) cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "items"))
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		if (name && !strcmp(name, team))
			s += (long long)cJSON_GetNumberValue(cJSON_GetObjectItem(it, "allocated_gpu_seconds"));
	}
	return s;
}

static void test_whole_equals_steps(void **state)
{
	static const char *const teams[] = {"old", "new", "yteam"};
	cJSON *whole = gl_test_get_json(g_d.port, "/v1/chargeback?" WINDOW "&aggregate=team", 200),
	      *days = gl_test_get_json(g_d.port, "/v1/chargeback?" WINDOW "&aggregate=team&step=day", 200);
	(void)state;
	assert_non_null(whole);
	assert_non_null(days);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(days, "steps")), 10);
	/* not vacuous: every team held GPUs in the window */
	for (size_t i = 0; i < sizeof teams / sizeof *teams; i++) {
		if (team_gpu_s(whole, teams[i]) <= 0) {
			char *txt = cJSON_PrintUnformatted(whole);
			fail_msg("no GPU-seconds for team %s: %.3000s", teams[i], txt);
		}
		assert_int_equal(team_gpu_s(whole, teams[i]), team_gpu_s(days, teams[i]));
	}
	cJSON_Delete(whole);
	cJSON_Delete(days);
}

static void test_whole_equals_built(void **state)
{
	char *live[N_PATHS];
	struct gl_test_out o;
	(void)state;
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built"), 0);
	for (size_t i = 0; i < N_PATHS; i++)
		live[i] = answer_of(paths[i]);
	/* not vacuous: the pods' namespace has its line */
	assert_non_null(strstr(live[N_PATHS - 1], "\"ns1\""));
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rollup", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	/* the window's days some job touched (not the 11th nor the 14th) */
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM usage_daily_built WHERE day >= '2026-10-10'"
						 " AND day < '2026-10-20'"),
			 8);
	for (size_t i = 0; i < N_PATHS; i++) {
		char *built = answer_of(paths[i]);
		size_t k = 0;
		while (built[k] && built[k] == live[i][k])
			k++;
		if (built[k] || live[i][k])
			fail_msg("%s: from byte %zu\nbuilt ...%.300s\nlive  ...%.300s", paths[i], k, built + (k > 150 ? k - 150 : 0),
				 live[i] + (k > 150 ? k - 150 : 0));
		free(built);
		free(live[i]);
	}
}

/* Every function the whole read's statement calls (the owner rules'
 * inlined too) is PARALLEL SAFE, or RESTRICTED where it may read a foreign
 * partition: one UNSAFE call forbids a parallel plan for the whole
 * statement. The owner columns' sets have ndistinct statistics: without
 * them the planner takes the sums in the workers for no gain. */
static void test_parallel_schema(void **state)
{
	(void)state;
	assert_int_equal(gl_test_qint_dsn(g_dsn,
					  "SELECT count(*) FROM (VALUES"
					  " ('gl_job_run_kind(text, jsonb, bigint, bigint)', 's'),"
					  " ('gl_rule_value(text, text, text, text, text, text, text, jsonb)', 's'),"
					  " ('gl_owner(text, text, text, text, text, text, text, jsonb, timestamptz)', 's'),"
					  " ('gl_workload_type(text, text, text, text, text, text, text, jsonb, text[], timestamptz)', 's'),"
					  " ('gl_steps_starts(bigint[])', 's'), ('gl_steps_ends(bigint[], bigint[])', 's'),"
					  " ('gl_gpu_model(text)', 's'), ('gl_rates_of(text)', 's'), ('gl_attribution_rank(text)', 's'),"
					  " ('gl_job_usage_steps(timestamptz[], timestamptz[])', 'r'),"
					  " ('gl_job_usage(timestamptz, timestamptz)', 'r')) v(sig, want)"
					  " WHERE (SELECT p.proparallel::text FROM pg_proc p WHERE p.oid = to_regprocedure(v.sig))"
					  "  IS NOT DISTINCT FROM v.want"),
			 11);
	assert_int_equal(gl_test_qint_dsn(g_dsn, "SELECT count(DISTINCT k.n) FROM pg_statistic_ext s CROSS JOIN LATERAL unnest(s.stxkeys) k(n)"
						 " JOIN pg_attribute a ON a.attrelid = s.stxrelid AND a.attnum = k.n"
						 " WHERE s.stxrelid = 'jobs'::regclass AND 'd' = ANY(s.stxkind) AND a.attname IN"
						 " ('cluster_id', 'user_name', 'account', 'partition', 'qos', 'namespace', 'wckey',"
						 "  'gpu_type', 'tags', 'array_job_id', 'het_job_id', 'node_gpu_model')"),
			 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_equals_steps),
		cmocka_unit_test(test_whole_equals_built),
		cmocka_unit_test(test_parallel_schema),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
