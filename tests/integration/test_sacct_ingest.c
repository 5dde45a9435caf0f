/* sacct ingestion against a real PostgreSQL through the real binary:
 * idempotence, the sreport oracle, bad lines, non-sacct input, job life
 * cycle, and kill -9 in the middle of a run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TB "tests/fixtures/sacct/testbed/"
static char g_dsn[512];
static char g_fields[1024];
static PGconn *g_c;

static int setup(void **state)
{
	if (gl_test_db_fresh("gl_test_sacct", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	if (gl_test_sacct_fields(g_fields, sizeof g_fields))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	PQfinish(g_c);
	return 0;
}

static void reset_db(void)
{
	/* only the owner role may TRUNCATE: the service's role never does */
	assert_true(gl_test_exec_owner(g_dsn, "SET client_min_messages = warning;"
					      " TRUNCATE jobs, ingest_runs, ingest_state, clusters CASCADE") >= 0);
}

static int ingest(const char *file, struct gl_test_out *o)
{
	return gl_test_run(g_dsn, NULL, o, "ingest", "sacct", "--cluster", "testgpu", "--file", file, "--fields",
			   g_fields, NULL);
}

static void test_migrate_twice_is_noop(void **state)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "migrate", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "migrate: 0 applied"));
	gl_test_out_fini(&o);
	/* every embedded migration applied exactly once */
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM schema_migrations") >= 6);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM schema_migrations"),
			 gl_test_qint(g_c, "SELECT count(DISTINCT version) FROM schema_migrations"));
}

/* sreport's GPU-seconds per account/user, read from the real sreport output */
static long long sreport_used(const char *account, const char *user)
{
	FILE *f = fopen(gl_test_fixture("tests/fixtures/sreport/sreport_account_utilization_by_user.txt"), "r");
	char line[512];
	long long v = -1;
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		char *fld[6] = {0};
		int n = 0;
		for (char *s = line, *t; n < 6 && (t = strsep(&s, "|\n"));)
			fld[n++] = t;
		if (n == 6 && !strcmp(fld[1], account) && !strcmp(fld[2], user) && !strcmp(fld[4], "gres/gpu"))
			v = atoll(fld[5]);
	}
	fclose(f);
	return v;
}

static void test_testbed_matches_sreport(void **state)
{
	static const char *const pairs[][2] = {
		{"teama", "alice"}, {"teama", "bob"}, {"teamb", "bob"}, {"teamb", "carol"}, {"teamc", "dave"}, {"root", ""},
	};
	struct gl_test_out o;
	reset_db();
	assert_int_equal(ingest(TB "sacct_alloc.txt", &o), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "\"inserted\":20"));
	gl_test_out_fini(&o);
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		char sql[512];
		long long want = sreport_used(pairs[i][0], pairs[i][1]);
		assert_true(want > 0);
		if (!strcmp(pairs[i][0], "root"))
			snprintf(sql, sizeof sql, "SELECT sum(gpu_milli * elapsed_s) / 1000 FROM jobs");
		else
			snprintf(sql, sizeof sql,
				 "SELECT sum(gpu_milli * elapsed_s) / 1000 FROM jobs WHERE account = '%s' AND user_name = '%s'",
				 pairs[i][0], pairs[i][1]);
		if (gl_test_qint(g_c, sql) != want)
			fprintf(stderr, "%s/%s: ours %lld, sreport %lld\n", pairs[i][0], pairs[i][1], gl_test_qint(g_c, sql), want);
		assert_int_equal(gl_test_qint(g_c, sql), want);
	}
	/* both attempts of the requeued job are rows of their own */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE job_id = '5'"), 2);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE job_id = '5' AND state = 'REQUEUED'"), 1);
	/* het components and array tasks */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE het_job_id = 14"), 2);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs WHERE array_job_id = 7"), 4);
	/* cancelled while pending: no start, no GPUs, cancelling uid kept */
	assert_string_equal(gl_test_qstr(g_c, "SELECT state || '/' || state_by_uid || '/' || gpu_milli || '/' ||"
					      " (start_at IS NULL) FROM jobs WHERE job_id = '12'"),
			    "CANCELLED/2003/0/true");
	/* node lists expanded, queue waits derived */
	assert_string_equal(gl_test_qstr(g_c, "SELECT nodes::text FROM jobs WHERE job_id = '6'"), "{gpu01,gpu02}");
	assert_int_equal(gl_test_qint(g_c, "SELECT queue_wait_s FROM jobs WHERE job_id = '6'"), 59);
	assert_int_equal(gl_test_qint(g_c, "SELECT eligible_wait_s FROM jobs WHERE job_id = '5' AND state = 'COMPLETED'"), 121);
}

static void test_reingest_changes_nothing(void **state)
{
	struct gl_test_out o;
	const char *before;
	char snapshot[8192];
	reset_db();
	assert_int_equal(ingest(TB "sacct_alloc.txt", &o), 0);
	gl_test_out_fini(&o);
	before = gl_test_qstr(g_c, "SELECT md5(string_agg(j::text, ',' ORDER BY job_key)) FROM"
				   " (SELECT job_key, state, end_at, gpu_milli, updated_at, job_pk FROM jobs) j");
	snprintf(snapshot, sizeof snapshot, "%s", before);
	assert_int_equal(ingest(TB "sacct_alloc.txt", &o), 0);
	assert_non_null(strstr(o.out, "\"inserted\":0,\"updated\":0,\"unchanged\":20"));
	gl_test_out_fini(&o);
	/* steps are ignored: the job+step dump adds nothing */
	assert_int_equal(ingest(TB "sacct_steps.txt", &o), 0);
	assert_non_null(strstr(o.out, "\"inserted\":0,\"updated\":0,\"unchanged\":20"));
	assert_non_null(strstr(o.out, "\"ignored\":22"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT md5(string_agg(j::text, ',' ORDER BY job_key)) FROM"
					      " (SELECT job_key, state, end_at, gpu_milli, updated_at, job_pk FROM jobs) j"),
			    snapshot);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 20);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE status = 'ok'"), 3);
}

static void test_bad_lines_are_skipped_and_reported(void **state)
{
	struct gl_test_out o;
	const char *f = gl_test_fixture("tests/fixtures/ingest/testbed_with_bad_lines.txt");
	reset_db();
	assert_int_equal(ingest(f, &o), 0);
	assert_int_equal(o.status, 4); /* ran, but lines were skipped */
	assert_non_null(strstr(o.err, "testbed_with_bad_lines.txt:4: "));
	assert_non_null(strstr(o.err, "testbed_with_bad_lines.txt:5: "));
	assert_non_null(strstr(o.err, "Submit"));
	assert_non_null(strstr(o.out, "\"inserted\":5"));
	assert_non_null(strstr(o.out, "\"skipped\":2"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 5);
	assert_string_equal(gl_test_qstr(g_c, "SELECT status || ':' || skipped || ':' || jsonb_array_length(skip_reasons)"
					      " || ':' || (skip_reasons->0->>'line') FROM ingest_runs"),
			    "partial:2:2:4");
}

static void test_not_sacct_is_rejected_whole(void **state)
{
	struct gl_test_out o;
	reset_db();
	assert_int_equal(ingest(gl_test_fixture("docs/config.md"), &o), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "not sacct output"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 0);
	assert_string_equal(gl_test_qstr(g_c, "SELECT status FROM ingest_runs"), "failed");
	/* a layout without JobID cannot make rows: a usage error, before any run */
	reset_db();
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file",
				     gl_test_fixture(TB "sacct_alloc.txt"), "--fields", "JobIDRaw,State,JobName", NULL),
			 0);
	assert_int_equal(o.status, 2);
	assert_non_null(strstr(o.err, "--fields: JobID missing"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs"), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 0);
	/* a missing file is a clear runtime error too */
	assert_int_equal(ingest("/nonexistent/sacct.txt", &o), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "/nonexistent/sacct.txt: No such file"));
	gl_test_out_fini(&o);
}

static void test_job_life_cycle_one_row(void **state)
{
	struct gl_test_out o;
	reset_db();
	assert_int_equal(ingest(gl_test_fixture("tests/fixtures/ingest/testbed_job2_pending.txt"), &o), 0);
	assert_non_null(strstr(o.out, "\"inserted\":1"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT state || ':' || gpu_milli || ':' || req_gpu_milli || ':' ||"
					      " (start_at IS NULL) FROM jobs"),
			    "PENDING:0:1000:true");
	assert_int_equal(ingest(gl_test_fixture("tests/fixtures/ingest/testbed_job2_running.txt"), &o), 0);
	assert_non_null(strstr(o.out, "\"updated\":1"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT state || ':' || gpu_milli || ':' || (end_at IS NULL) FROM jobs"),
			    "RUNNING:1000:true");
	assert_int_equal(ingest(TB "sacct_alloc.txt", &o), 0);
	assert_non_null(strstr(o.out, "\"inserted\":19,\"updated\":1"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, "SELECT state || ':' || elapsed_s FROM jobs WHERE job_key = 'db:3'"),
			    "COMPLETED:40");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 20);
}

/* Re-ingesting older files must not roll a job back: job 2 (db:3) finished
 * at 16:04:35 after running 40 s; its RUNNING and PENDING views are older. */
static void test_older_view_never_reopens(void **state)
{
	struct gl_test_out o;
	static const char q[] = "SELECT state || ':' || coalesce(to_char(start_at AT TIME ZONE 'UTC', 'HH24:MI:SS'), '-') ||"
				" ':' || coalesce(to_char(end_at AT TIME ZONE 'UTC', 'HH24:MI:SS'), '-') || ':' || gpu_milli"
				" FROM jobs WHERE job_key = 'db:3'";
	reset_db();
	assert_int_equal(ingest(TB "sacct_alloc.txt", &o), 0);
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, q), "COMPLETED:16:03:55:16:04:35:1000");
	assert_int_equal(ingest(gl_test_fixture("tests/fixtures/ingest/testbed_job2_running.txt"), &o), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "\"inserted\":0,\"updated\":0"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, q), "COMPLETED:16:03:55:16:04:35:1000");
	assert_int_equal(ingest(gl_test_fixture("tests/fixtures/ingest/testbed_job2_pending.txt"), &o), 0);
	assert_non_null(strstr(o.out, "\"inserted\":0,\"updated\":0"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, q), "COMPLETED:16:03:55:16:04:35:1000");

	/* a running job is not sent back to pending either */
	reset_db();
	assert_int_equal(ingest(gl_test_fixture("tests/fixtures/ingest/testbed_job2_running.txt"), &o), 0);
	gl_test_out_fini(&o);
	assert_int_equal(ingest(gl_test_fixture("tests/fixtures/ingest/testbed_job2_pending.txt"), &o), 0);
	assert_non_null(strstr(o.out, "\"updated\":0"));
	gl_test_out_fini(&o);
	assert_string_equal(gl_test_qstr(g_c, q), "RUNNING:16:03:55:-:1000");
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), 1);
}

/* A big synthetic file (the testbed lines with fresh DBIndex values). */
static void write_big(const char *path, int copies)
{
	FILE *in = fopen(TB "sacct_alloc.txt", "r"), *out = fopen(path, "w");
	char lines[32][1024];
	int n = 0;
	assert_non_null(in);
	assert_non_null(out);
	while (n < 32 && fgets(lines[n], sizeof lines[n], in))
		n++;
	fclose(in);
	for (int k = 0; k < copies; k++) {
		for (int i = 0; i < n; i++) {
			/* DBIndex is field 28 of 30: rewrite it */
			char buf[1024], *f[40];
			int nf = 0;
			snprintf(buf, sizeof buf, "%s", lines[i]);
			buf[strcspn(buf, "\n")] = '\0';
			for (char *s = buf, *t; nf < 40 && (t = strsep(&s, "|"));)
				f[nf++] = t;
			for (int j = 0; j < nf; j++) {
				if (j == 27)
					fprintf(out, "%d", k * n + i + 1);
				else
					fputs(f[j], out);
				fputc(j + 1 < nf ? '|' : '\n', out);
			}
		}
	}
	fclose(out);
}

static void test_kill9_leaves_whole_batches(void **state)
{
	char path[256], cfg[256], cfgarg[300];
	struct gl_test_out o;
	const int copies = 15000; /* 300,000 rows */
	long long total = 20LL * copies, after_kill, run_ins;
	pid_t pid;
	FILE *f;

	reset_db();
	snprintf(path, sizeof path, "%s/big-sacct.txt", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	snprintf(cfg, sizeof cfg, "%s/kill9.yaml", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	write_big(path, copies);
	f = fopen(cfg, "w");
	fputs("ingest:\n  batch_rows: 20000\n", f);
	fclose(f);
	snprintf(cfgarg, sizeof cfgarg, "%s", cfg);
	pid = fork();
	if (pid == 0) {
		setenv("GPULEDGER_DSN", g_dsn, 1);
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execl(gl_test_bin(), gl_test_bin(), "--config", cfgarg, "ingest", "sacct", "--cluster", "testgpu", "--file",
		      path, "--fields", g_fields, (char *)NULL);
		_exit(127);
	}
	/* wait until at least one batch has committed (6 s, times the scale
	 * for a slow binary), then kill mid-run */
	for (int i = 0; i < 600 * gl_test_timeout_scale(); i++) {
		if (gl_test_qint(g_c, "SELECT count(*) FROM jobs") > 0)
			break;
		usleep(10000);
	}
	usleep(50000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	after_kill = gl_test_qint(g_c, "SELECT count(*) FROM jobs");
	run_ins = gl_test_qint(g_c, "SELECT inserted FROM ingest_runs ORDER BY run_id DESC LIMIT 1");
	fprintf(stderr, "kill -9 after %lld of %lld rows\n", after_kill, total);
	assert_true(after_kill > 0);
	assert_true(after_kill < total);
	/* whole batches only, and the run's counters committed with them */
	assert_int_equal(after_kill % 20000, 0);
	assert_int_equal(run_ins, after_kill);
	/* re-running completes the file with no duplicates and no gaps */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", cfgarg, "ingest", "sacct", "--cluster", "testgpu",
				     "--file", path, "--fields", g_fields, NULL),
			 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM jobs"), total);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(DISTINCT job_key) FROM jobs"), total);
	assert_int_equal(gl_test_qint(g_c, "SELECT inserted FROM ingest_runs ORDER BY run_id DESC LIMIT 1"),
			 total - after_kill);
	assert_int_equal(gl_test_qint(g_c, "SELECT unchanged FROM ingest_runs ORDER BY run_id DESC LIMIT 1"), after_kill);
	unlink(path);
	unlink(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrate_twice_is_noop),
		cmocka_unit_test(test_testbed_matches_sreport),
		cmocka_unit_test(test_reingest_changes_nothing),
		cmocka_unit_test(test_bad_lines_are_skipped_and_reported),
		cmocka_unit_test(test_not_sacct_is_rejected_whole),
		cmocka_unit_test(test_job_life_cycle_one_row),
		cmocka_unit_test(test_older_view_never_reopens),
		cmocka_unit_test(test_kill9_leaves_whole_batches),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
