/* `gpuledger db redact` (the real binary) over ingest runs stored before
 * the redaction caught their credentials: the secrets go, the user names,
 * hosts and every other column and row stay, one audited transaction, and
 * a second run changes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dsn[512];
static PGconn *g_c;

/* Rows as an older gpuledger stored them: verbatim. */
static const char *const seed[] = {
	"INSERT INTO clusters (name, kind) VALUES ('c1', 'kubernetes')",
	/* 1: a kube source with a bearer token on its command line, failed */
	"INSERT INTO ingest_runs (source, cluster_id, input, started_at, status, error) SELECT 'kube', cluster_id,"
	" 'kubectl --token=s3cr3t get pods -A -o json', '2026-11-01T00:00:00Z', 'failed',"
	" 'kube c1: kubectl --token=s3cr3t get pods -A -o json: exit 1: error: You must be logged in to the server'"
	" FROM clusters",
	/* 2: dcgm targets with a password in a URL, in the skip reasons */
	"INSERT INTO ingest_runs (source, cluster_id, input, started_at, status, skipped, skip_reasons) SELECT 'dcgm',"
	" cluster_id, '2 targets', '2026-11-01T00:01:00Z', 'partial', 2,"
	" '[{\"line\": 0, \"reason\": \"http://admin:hunter2@h1:9400/metrics: HTTP 401\"},"
	"   {\"line\": 7, \"reason\": \"bad value ''x''\"}]' FROM clusters",
	/* 3: curl with -u user:password and a header */
	"INSERT INTO ingest_runs (source, cluster_id, input, started_at, status, lines_read) SELECT 'kube', cluster_id,"
	" 'curl -sS -u svc:pa55word -H X-Api-Key:k3y https://k8s/api/v1/pods', '2026-11-01T00:02:00Z', 'ok', 5"
	" FROM clusters",
	/* 4 and 5: nothing secret; must not change at all */
	"INSERT INTO ingest_runs (source, cluster_id, input, started_at, status, error) SELECT 'sacct', cluster_id,"
	" 'sacct --allusers --partition=gpu --format=JobID,State -S 2026-11-01T00:00:00', '2026-11-01T00:03:00Z',"
	" 'failed', 'sacct c1: exit 1: sacct: error: Problem talking to the database: Connection refused' FROM clusters",
	"INSERT INTO ingest_runs (source, cluster_id, input, started_at, status) SELECT 'sacct', cluster_id,"
	" 'jobs.txt', '2026-11-01T00:04:00Z', 'ok' FROM clusters",
};

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_db_redact", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	for (size_t i = 0; i < sizeof seed / sizeof *seed; i++)
		if (gl_test_exec_dsn(g_dsn, seed[i]) < 0)
			return -1;
	return 0;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

/* The whole table as text, in run order: what must not change. */
static char *table_text(const char *cols)
{
	return strdup(gl_test_qstrf(g_c, "SELECT coalesce(string_agg(row_to_json(x)::text, E'\\n' ORDER BY run_id), '')"
					" FROM (SELECT run_id, %s FROM ingest_runs) x",
				    cols));
}

static const char *col(int run, const char *expr)
{
	return gl_test_qstrf(g_c, "SELECT coalesce(%s, '<null>') FROM ingest_runs WHERE run_id = %d", expr, run);
}

static void test_db_redact(void **state)
{
	struct gl_test_out o;
	const char *other_cols = "source, cluster_id, started_at, finished_at, status, lines_read, inserted, updated,"
				 " unchanged, skipped, ignored";
	char *others = table_text(other_cols), *before = table_text("input, error, skip_reasons"), *after, *clean45;
	(void)state;

	clean45 = strdup(gl_test_qstr(g_c, "SELECT string_agg(row_to_json(r)::text, ',' ORDER BY run_id)"
					   " FROM ingest_runs r WHERE run_id IN (4, 5)"));

	/* a dry run counts and writes nothing, not even an audit row */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "db", "redact", "--dry-run", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "5 ingest runs examined, 3 would change (input 2, error 1, skip_reasons 1)"));
	gl_test_out_fini(&o);
	after = table_text("input, error, skip_reasons");
	assert_string_equal(after, before);
	free(after);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'db.redact'"), 0);

	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "db", "redact", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "5 ingest runs examined, 3 changed (input 2, error 1, skip_reasons 1)"));
	gl_test_out_fini(&o);

	/* written by hand from the rules in docs/security.md */
	assert_string_equal(col(1, "input"), "kubectl --token=*** get pods -A -o json");
	assert_string_equal(col(1, "error"),
			    "kube c1: kubectl --token=*** get pods -A -o json: exit 1: error: You must be logged in to the server");
	assert_string_equal(col(2, "skip_reasons::text"),
			    "[{\"line\": 0, \"reason\": \"http://admin:***@h1:9400/metrics: HTTP 401\"},"
			    " {\"line\": 7, \"reason\": \"bad value 'x'\"}]");
	assert_string_equal(col(2, "input"), "2 targets");
	assert_string_equal(col(3, "input"), "curl -sS -u svc:*** -H X-Api-Key:*** https://k8s/api/v1/pods");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE concat(input, error, skip_reasons::text)"
					   " ~ '(s3cr3t|hunter2|pa55word|k3y)'"),
			 0);
	/* the rows without a secret and every other column: as they were */
	assert_string_equal(gl_test_qstr(g_c, "SELECT string_agg(row_to_json(r)::text, ',' ORDER BY run_id)"
					      " FROM ingest_runs r WHERE run_id IN (4, 5)"),
			    clean45);
	after = table_text(other_cols);
	assert_string_equal(after, others);
	free(after);

	/* audited, in the chain, which still verifies */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'db.redact' AND actor LIKE 'cli:%'"
					   " AND object = 'ingest_runs' AND outcome = 'ok' AND (detail->>'changed')::int = 3"
					   " AND (detail->>'examined')::int = 5"),
			 1);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "verify", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);

	/* again: nothing left to change */
	before = (free(before), table_text("input, error, skip_reasons"));
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "db", "redact", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "5 ingest runs examined, 0 changed"));
	gl_test_out_fini(&o);
	after = table_text("input, error, skip_reasons");
	assert_string_equal(after, before);
	free(after);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'db.redact'"), 2);

	/* a stray argument is a usage error, nothing run */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "db", "redact", "--all", NULL), 0);
	assert_int_equal(o.status, 2);
	gl_test_out_fini(&o);
	free(others);
	free(before);
	free(clean45);
}

/* The idle hook's commands as an older gpuledger stored them (verbatim):
 * db redact blanks hook_actions.argv element by element (as the hook now
 * does before storing), .stderr and hook_stages.error; a row without a
 * secret stays as it was; a second run changes nothing. */
static void test_db_redact_hook_rows(void **state)
{
	static const char *const hook_seed[] = {
		"INSERT INTO hook_actions (cluster, job_id, policy, stage, argv, exit_status, ok, stderr, source, actor)"
		" VALUES ('c1', '101', 'p', 'act', '{/usr/bin/kubectl,--token,s3cr3tTOK,delete,pod,p1}', 1, false,"
		" 'error: unknown flag --token s3cr3tTOK', 'hook', 'cli:root')",
		"INSERT INTO hook_actions (cluster, job_id, policy, stage, argv, ok, source, actor)"
		" VALUES ('c1', '102', 'p', 'act', '{\"curl -u admin:hunter2 -H X-Api-Key:k3y https://h\"}', true, 'api', 'token:1')",
		"INSERT INTO hook_actions (cluster, job_id, policy, stage, argv, exit_status, ok, stderr, source, actor)"
		" VALUES ('c1', '103', 'p', 'act', '{scancel,103}', 0, true, '', 'hook', 'cli:root')",
		"INSERT INTO hook_stages (cluster_id, job_pk, stage, policy, status, error)"
		" SELECT cluster_id, 1, 'act', 'p', 'failed', 'error: unknown flag --token s3cr3tTOK' FROM clusters",
	};
	struct gl_test_out o;
	char *clean3;
	(void)state;
	for (size_t i = 0; i < sizeof hook_seed / sizeof *hook_seed; i++)
		assert_true(gl_test_exec_dsn(g_dsn, hook_seed[i]) == 1);
	clean3 = strdup(gl_test_qstr(g_c, "SELECT row_to_json(a)::text FROM hook_actions a WHERE job_id = '103'"));

	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "db", "redact", "--dry-run", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "3 hook actions examined, 2 would change (argv 2, stderr 1); 1 hook stage errors would change"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions WHERE argv::text LIKE '%s3cr3tTOK%'"), 1);

	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "db", "redact", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "3 hook actions examined, 2 changed (argv 2, stderr 1); 1 hook stage errors changed"));
	gl_test_out_fini(&o);
	/* written by hand from the rules in docs/security.md */
	assert_string_equal(gl_test_qstr(g_c, "SELECT argv::text FROM hook_actions WHERE job_id = '101'"),
			    "{/usr/bin/kubectl,--token,***,delete,pod,p1}");
	assert_string_equal(gl_test_qstr(g_c, "SELECT stderr FROM hook_actions WHERE job_id = '101'"),
			    "error: unknown flag --token ***");
	assert_string_equal(gl_test_qstr(g_c, "SELECT argv[1] FROM hook_actions WHERE job_id = '102'"),
			    "curl -u admin:*** -H X-Api-Key:*** https://h");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions WHERE job_id = '102' AND stderr IS NULL"
					   " AND cardinality(argv) = 1"),
			 1);
	assert_string_equal(gl_test_qstr(g_c, "SELECT error FROM hook_stages WHERE job_pk = 1"), "error: unknown flag --token ***");
	assert_string_equal(gl_test_qstr(g_c, "SELECT row_to_json(a)::text FROM hook_actions a WHERE job_id = '103'"), clean3);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'db.redact'"
					   " AND (detail->'hook_actions'->>'changed')::int = 2 AND (detail->'hook_stages'->>'error')::int = 1"),
			 1);
	/* again: nothing left to change */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "db", "redact", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "3 hook actions examined, 0 changed (argv 0, stderr 0); 0 hook stage errors changed"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "verify", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	free(clean3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_db_redact),
		cmocka_unit_test(test_db_redact_hook_rows),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
