/* A rerun after a crash writes its batch into a table whose statistics say
 * it is empty (autovacuum after the killed batch: reltuples 0, its pages
 * kept). The statement triggers of sql/021 joined the batch's transition
 * table to jobs (or nodes) and the planner, trusting "0 rows", chose a
 * nested loop that scanned the whole batch once per table row: 10k rows
 * 0.46 s -> 18.3 s, 20k rows 1.24 s -> 121 s (issue 24). sql/027 has no
 * join left to choose.
 *
 * This reproduces the statistics (DELETE, VACUUM (TRUNCATE false): pages
 * kept, reltuples 0), writes the batch again with auto_explain showing
 * every nested statement's plan with its actual row counts (NOTICE, to
 * this session), and bounds what any plan node visited: (rows + rows
 * removed by a filter) x loops <= 3 x the batch + 100. A nested loop over
 * the batch visits batch^2. A test of the plans, not of time. Real
 * PostgreSQL; the jobs come in through the real binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NJOBS 1000
#define NNODES 400
#define GPUS_PER_NODE 8

static char g_dsn[1024], g_su[1200];
static PGconn *g_c; /* superuser, on the test database: auto_explain needs LOAD */

struct plans {
	char **text;
	size_t n, cap;
};

static void on_notice(void *arg, const PGresult *r)
{
	struct plans *p = arg;
	const char *m = PQresultErrorMessage(r);
	if (!strstr(m, "Query Text:"))
		return;
	if (p->n == p->cap)
		p->text = realloc(p->text, (p->cap = p->cap ? 2 * p->cap : 256) * sizeof *p->text);
	p->text[p->n++] = strdup(m);
}

static void exec_ok(const char *sql)
{
	PGresult *r = PQexec(g_c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fprintf(stderr, "%s: %s", sql, PQerrorMessage(g_c));
	assert_true(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK);
	PQclear(r);
}

/* Most rows one plan node of text visited ((rows + removed) x loops). */
static long long plan_max_visited(const char *text, char *node, size_t n)
{
	long long best = 0, cur_rows = 0, cur_loops = 1;
	char cur[160] = "";
	for (const char *l = text; l && *l;) {
		const char *e = strchr(l, '\n'), *a;
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char line[1024];
		long long v;
		snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
		if ((a = strstr(line, "(actual rows="))) {
			cur_rows = atoll(a + strlen("(actual rows="));
			cur_loops = strstr(a, "loops=") ? atoll(strstr(a, "loops=") + 6) : 1;
			snprintf(cur, sizeof cur, "%.*s", (int)(a - line), line);
		} else if ((a = strstr(line, "Rows Removed by ")) && strchr(a, ':')) {
			v = atoll(strchr(a, ':') + 1);
			cur_rows += v; /* EXPLAIN shows it per loop, like rows */
		}
		if (cur_rows * cur_loops > best) {
			best = cur_rows * cur_loops;
			snprintf(node, n, "%s", cur);
		}
		l = e ? e + 1 : NULL;
	}
	return best;
}

/* Runs sql with every nested plan explained; checks the bound over all
 * of them, that some plan read `must_read` (the trigger did run its
 * statements), and that no UPDATE of `table` was planned as a nested loop. */
static void assert_linear(const char *sql, long long batch, const char *must_read, const char *table)
{
	struct plans p = {0};
	size_t read = 0;
	char node[160], upd[64];
	snprintf(upd, sizeof upd, "UPDATE %s ", table);
	PQnoticeReceiver was = PQsetNoticeReceiver(g_c, on_notice, &p);
	PGresult *r = PQexec(g_c, sql);
	PQsetNoticeReceiver(g_c, was, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		fprintf(stderr, "%s: %s", sql, PQerrorMessage(g_c));
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	for (size_t i = 0; i < p.n; i++) {
		long long v = plan_max_visited(p.text[i], node, sizeof node);
		if (v > 3 * batch + 100)
			fprintf(stderr, "a plan visits %lld rows (batch %lld) at %s:\n%s\n", v, batch, node, p.text[i]);
		assert_true(v <= 3 * batch + 100);
		if (strstr(p.text[i], must_read))
			read++;
		if (strstr(p.text[i], upd) && strstr(p.text[i], "Nested Loop"))
			fprintf(stderr, "a nested loop in:\n%s\n", p.text[i]);
		assert_false(strstr(p.text[i], upd) && strstr(p.text[i], "Nested Loop"));
		free(p.text[i]);
	}
	free(p.text);
	fprintf(stderr, "  %zu plans, %zu reading %s, none over %lld rows\n", p.n, read, must_read, 3 * batch + 100);
	assert_true(read > 0);
}

/* The statistics a rerun after a killed batch finds: pages, no rows. */
static void empty_stats(const char *table)
{
	char sql[200];
	snprintf(sql, sizeof sql, "DELETE FROM %s", table);
	exec_ok(sql);
	snprintf(sql, sizeof sql, "VACUUM (TRUNCATE false) %s", table);
	exec_ok(sql);
	assert_int_equal(gl_test_qintf(g_c, "SELECT reltuples::bigint FROM pg_class WHERE oid = '%s'::regclass", table), 0);
	assert_true(gl_test_qintf(g_c, "SELECT relpages FROM pg_class WHERE oid = '%s'::regclass", table) > 0);
}

static void explain_nested(void)
{
	exec_ok("LOAD 'auto_explain'");
	exec_ok("SET auto_explain.log_min_duration = 0");
	exec_ok("SET auto_explain.log_nested_statements = on");
	exec_ok("SET auto_explain.log_analyze = on");
	exec_ok("SET auto_explain.log_timing = off");
	exec_ok("SET auto_explain.log_level = notice");
}

static void explain_off(void)
{
	exec_ok("SET auto_explain.log_min_duration = -1");
}

static int setup(void **state)
{
	char path[600], fields[1024];
	if (gl_test_db_create("gl_test_rerun_plan", g_dsn, sizeof g_dsn) || gl_test_sacct_fields(fields, sizeof fields))
		return -1;
	if (gl_test_cli(g_dsn, "migrate", NULL))
		return -1;
	/* NJOBS untyped GPU jobs (gres/gpu=1), each on one of 16 nodes: their
	 * model is the node's (node_gpu_model), which the trigger fills in */
	snprintf(path, sizeof path, "%s/rerun_plan.sacct", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	if (gl_test_synth_untyped_sacct(path, NJOBS))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "synth", "--file", path, "--fields", fields, NULL))
		return -1;
	snprintf(g_su, sizeof g_su, "%s dbname=gl_test_rerun_plan", gl_test_admin_dsn());
	g_c = PQconnectdb(g_su);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	/* the statistics stay what the test makes them: no autovacuum between */
	return gl_test_exec_dsn(g_su, "ALTER TABLE jobs SET (autovacuum_enabled = false)") < 0 ||
	       gl_test_exec_dsn(g_su, "ALTER TABLE nodes SET (autovacuum_enabled = false)") < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

/* inventory after the jobs: the refresh fills their model in */
static void test_refresh_fills_models(void **state)
{
	exec_ok("INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, source, valid_from)"
		" SELECT c.cluster_id, format('gpu%s', lpad(i::text, 2, '0')), 'A100-SXM4-80GB', 8, 'scontrol', '2025-01-01'"
		" FROM clusters c, generate_series(0, 15) i WHERE c.name = 'synth'");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE node_gpu_model = 'A100-SXM4-80GB'"), NJOBS);
}

/* the rerun: the same jobs written again into a jobs that "has 0 rows" */
static void test_jobs_trigger_linear_on_empty_stats(void **state)
{
	explain_off(); /* a test that failed before its own explain_off left it on */
	exec_ok("DROP TABLE IF EXISTS saved");
	exec_ok("CREATE TEMP TABLE saved AS SELECT cluster_id, job_key, job_id, state, submit_at, start_at, end_at,"
		" gpu_micro, nodes, node_list FROM jobs");
	empty_stats("jobs");
	explain_nested();
	assert_linear("INSERT INTO jobs (cluster_id, job_key, job_id, state, submit_at, start_at, end_at, gpu_micro, nodes,"
		      " node_list) SELECT * FROM saved",
		      NJOBS, "new_rows", "jobs");
	explain_off();
	/* and the trigger still did its work */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE node_gpu_model = 'A100-SXM4-80GB'"), NJOBS);
	exec_ok("DROP TABLE saved");
}

/* the same shape on the inventory side: a first scrape's GPUs (with a
 * model) joined to nodes, whose statistics say 0 rows, and the refresh
 * of the jobs on those nodes (gpu00..gpu15 hold the 1000 jobs) */
static void test_gpus_trigger_linear_on_empty_stats(void **state)
{
	char sql[800];
	explain_off();
	snprintf(sql, sizeof sql,
		 "INSERT INTO nodes (cluster_id, name, first_seen, last_seen) SELECT c.cluster_id,"
		 " CASE WHEN i < 16 THEN format('gpu%%s', lpad(i::text, 2, '0')) ELSE format('n%%s', i) END, now(),"
		 " now() FROM clusters c, generate_series(0, %d) i WHERE c.name = 'synth'",
		 NNODES - 1);
	exec_ok(sql);
	empty_stats("nodes");
	exec_ok(sql);
	explain_nested();
	assert_linear("INSERT INTO gpus (cluster_id, node_id, uuid, model, first_seen, last_seen)"
		      " SELECT n.cluster_id, n.node_id, format('GPU-%s-%s', n.node_id, k), 'NVIDIA H100 80GB HBM3', now(), now()"
		      " FROM nodes n, generate_series(1, 8) k",
		      NNODES * GPUS_PER_NODE, "new_gpus", "jobs");
	explain_off();
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus"), NNODES * GPUS_PER_NODE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refresh_fills_models),
		cmocka_unit_test(test_jobs_trigger_linear_on_empty_stats),
		cmocka_unit_test(test_gpus_trigger_linear_on_empty_stats),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
