/* The rollup lock (sql/019): ingest transactions of different clusters do
 * not wait for each other, a day build waits for every writer in flight,
 * and a write after a build makes its day stale again. Waits are bounded by
 * lock_timeout: a wait that should not happen fails the test instead of
 * hanging it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/config.h"
#include "store/accounting_int.h"
#include "store/db_int.h"
#include "lib/testlib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char g_dsn[512];

static PGconn *conn(void)
{
	PGconn *c = PQconnectdb(g_dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	return c;
}

static void test_writers_share_builder_excludes(void **state)
{
	PGconn *a = conn(), *b = conn(), *bld = conn();
	struct gl_err err = {0};
	int64_t now = (int64_t)time(NULL), day = (now / 86400 - 2) * 86400;
	char sql[512];

	(void)state;
	assert_true(
		gl_test_sql_ok(a, "INSERT INTO clusters (name, kind) VALUES ('lock-a', 'slurm'), ('lock-b', 'slurm')"));
	/* writer A of cluster lock-a holds its transaction open */
	assert_true(gl_test_sql_ok(a, "BEGIN"));
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro)"
		 " SELECT cluster_id, 'db:1', '1', 'COMPLETED', to_timestamp(%lld), to_timestamp(%lld), 1000000"
		 " FROM clusters WHERE name = 'lock-a'",
		 (long long)day + 3600, (long long)day + 7200);
	assert_true(gl_test_sql_ok(a, sql));
	/* writer B of cluster lock-b goes through meanwhile */
	assert_true(gl_test_sql_ok(b, "SET lock_timeout = '2s'"));
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro)"
		 " SELECT cluster_id, 'db:1', '1', 'COMPLETED', to_timestamp(%lld), to_timestamp(%lld), 2000000"
		 " FROM clusters WHERE name = 'lock-b'",
		 (long long)day + 3600, (long long)day + 10800);
	assert_true(gl_test_sql_ok(b, sql));
	/* a build of that day must wait for A */
	assert_true(gl_test_sql_ok(bld, "SET lock_timeout = '500ms'"));
	assert_int_not_equal(gl_accounting_build_day(bld, day, now, &err), 0);
	assert_non_null(strstr(err.msg, "lock timeout"));
	assert_true(gl_test_sql_ok(a, "COMMIT"));
	/* ... and then sees A's job and B's */
	assert_int_equal(gl_accounting_build_day(bld, day, now, &err), 0);
	snprintf(sql, sizeof sql, "SELECT sum(alloc) FROM usage_daily WHERE day = to_timestamp(%lld)::date",
		 (long long)day);
	/* micro-GPU-seconds billed (sql/047), and held as billed */
	assert_int_equal(gl_test_qint(bld, sql), 1000000LL * 3600 + 2000000LL * 7200);
	snprintf(sql, sizeof sql, "SELECT sum(held) FROM usage_daily WHERE day = to_timestamp(%lld)::date",
		 (long long)day);
	assert_int_equal(gl_test_qint(bld, sql), 1000000LL * 3600 + 2000000LL * 7200);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM usage_daily_built WHERE day = to_timestamp(%lld)::date",
		 (long long)day);
	assert_int_equal(gl_test_qint(bld, sql), 1);
	/* a later write to that day makes it stale */
	assert_true(gl_test_sql_ok(
		b, "UPDATE jobs SET gpu_micro = 3000000 WHERE job_key = 'db:1' AND gpu_micro = 2000000"));
	assert_int_equal(gl_test_qint(bld, sql), 0);
	PQfinish(a);
	PQfinish(b);
	PQfinish(bld);
}

/* Rows of the rollup's tables for the days from d0 (four days), each
 * table's rows in one order: what a build left. */
static void snapshot(PGconn *c, const char *tag, int64_t d0)
{
	static const char *const tabs[] = {"usage_daily", "usage_daily_owner", "usage_daily_job", "usage_monthly_job"};
	char sql[512], days[160];
	snprintf(days, sizeof days,
		 "day BETWEEN (to_timestamp(%lld) AT TIME ZONE 'UTC')::date AND (to_timestamp(%lld) AT TIME ZONE 'UTC')::date + 3",
		 (long long)d0, (long long)d0);
	for (size_t t = 0; t < sizeof tabs / sizeof *tabs; t++) {
		/* the months hold this test's serving jobs only */
		snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS snap_%s_%zu; CREATE TEMP TABLE snap_%s_%zu AS SELECT * FROM %s WHERE %s",
			 tag, t, tag, t, tabs[t], t == 3 ? "true" : days);
		assert_true(gl_test_sql_ok(c, sql));
	}
}

static long long snapshot_diff(PGconn *c)
{
	long long n = 0;
	for (int t = 0; t < 4; t++)
		n += gl_test_qintf(c,
				   "SELECT (SELECT count(*) FROM (SELECT * FROM snap_a_%d EXCEPT ALL SELECT * FROM snap_b_%d) x)"
				   " + (SELECT count(*) FROM (SELECT * FROM snap_b_%d EXCEPT ALL SELECT * FROM snap_a_%d) y)",
				   t, t, t, t);
	return n;
}

/* Days built together (one pass over the jobs, half of them on a helper
 * connection in a second thread and transaction) hold the figures of the
 * same days built one at a time: jobs over several days, a job still open,
 * a rate that changes inside a day, a serving job (usage_daily_job and its
 * month). And the pair takes the rollup lock before either half reads: a
 * writer in flight makes the whole build wait, and neither half commits. */
static void test_days_together_equal_one_by_one(void **state)
{
	PGconn *c = conn(), *helper = conn(), *w = conn();
	struct gl_err err = {0};
	int64_t now = (int64_t)time(NULL), d0 = (now / 86400 - 6) * 86400, days[4];
	char sql[2048];

	(void)state;
	for (int k = 0; k < 4; k++)
		days[k] = d0 + 86400LL * k;
	assert_true(gl_test_sql_ok(c, "INSERT INTO clusters (name, kind) VALUES ('batch', 'slurm')"));
	snprintf(sql, sizeof sql,
		 "INSERT INTO rates (gpu_model, micros_per_gpu_hour, valid_from, valid_to) VALUES"
		 " ('a100', 2500000, '-infinity', to_timestamp(%lld)), ('a100', 3100000, to_timestamp(%lld), 'infinity'),"
		 " ('h100', 4000000, '-infinity', 'infinity');"
		 "INSERT INTO owners (match_field, match_value, team, project) VALUES ('account', 'acct1', 't1', 'p1');"
		 "INSERT INTO jobs (cluster_id, job_key, job_id, user_name, account, state, start_at, end_at, gpu_micro,"
		 " gpu_type, last_seen_at)"
		 " SELECT (SELECT cluster_id FROM clusters WHERE name = 'batch'), 'db:b' || g, 'b' || g, 'u' || (g %% 5),"
		 " 'acct' || (g %% 3), CASE WHEN g %% 7 = 0 THEN 'RUNNING' ELSE 'COMPLETED' END,"
		 " to_timestamp(%lld + g * 3917), CASE WHEN g %% 7 = 0 THEN NULL ELSE to_timestamp(%lld + g * 3917 + 600 + g * g * 97) END,"
		 " (1 + g %% 4) * 1000000, CASE WHEN g %% 3 = 0 THEN 'h100' ELSE 'a100' END,"
		 " to_timestamp(%lld + g * 3917 + 7200)"
		 " FROM generate_series(1, 90) g;"
		 "INSERT INTO serving_endpoints (name, cluster_id) SELECT 'ep', cluster_id FROM clusters WHERE name = 'batch';"
		 "INSERT INTO serving_jobs (job_pk, endpoint_id, model_name, cluster_id)"
		 " SELECT j.job_pk, e.endpoint_id, 'm', j.cluster_id FROM jobs j, serving_endpoints e"
		 " WHERE j.job_key IN ('db:b12', 'db:b30', 'db:b41')",
		 (long long)d0 + 86400 + 5000, (long long)d0 + 86400 + 5000, (long long)d0 - 20000, (long long)d0 - 20000,
		 (long long)d0 - 20000);
	assert_true(gl_test_sql_ok(c, sql));
	for (int k = 0; k < 4; k++)
		assert_int_equal(gl_accounting_build_day(c, days[k], now, &err), 0);
	snapshot(c, "a", d0);
	assert_true(gl_test_qintf(c, "SELECT count(*) FROM snap_a_0") > 20);
	assert_true(gl_test_qintf(c, "SELECT count(*) FROM snap_a_2") > 0);
	assert_true(gl_test_qintf(c, "SELECT count(*) FROM snap_a_3") > 0);
	assert_true(gl_test_sql_ok(
		c,
		"DELETE FROM usage_daily; DELETE FROM usage_daily_owner; DELETE FROM usage_daily_job;"
		" DELETE FROM usage_monthly_job; DELETE FROM usage_monthly_job_built; DELETE FROM usage_daily_built"));

	/* a writer in flight: the pair waits, and neither half commits */
	assert_true(gl_test_sql_ok(w, "BEGIN"));
	assert_true(gl_test_sql_ok(w, "UPDATE jobs SET account = 'acct1' WHERE job_key = 'db:b1'"));
	assert_true(gl_test_sql_ok(c, "SET lock_timeout = '500ms'"));
	assert_int_not_equal(gl_accounting_build_days(c, helper, days, 4, now, &err), 0);
	assert_non_null(strstr(err.msg, "lock timeout"));
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM usage_daily_built"), 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM usage_daily"), 0);
	assert_true(gl_test_sql_ok(w, "ROLLBACK"));

	assert_int_equal(gl_accounting_build_days(c, helper, days, 4, now, &err), 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM usage_daily_built"), 4);
	snapshot(c, "b", d0);
	assert_int_equal(snapshot_diff(c), 0);
	/* a batch's days must be whole past days in ascending order */
	days[2] = days[1];
	assert_int_not_equal(gl_accounting_build_days(c, helper, days, 4, now, &err), 0);
	PQfinish(c);
	PQfinish(helper);
	PQfinish(w);
}

#define ONE_ROW_Q(what)                                                                                       \
	"SELECT " what " FROM usage_daily_job u JOIN jobs j ON j.job_pk = u.job_pk"                              \
	" WHERE j.job_key = 'db:one' AND u.day = (to_timestamp(%lld) AT TIME ZONE 'UTC')::date"

/* A job's day priced by one rate is one usage_daily_job row (allocated,
 * priced and cost together); a day across a change of price keeps its
 * allocated row and a row per rate. Either way the figures are the job's:
 * 2 GPUs from 10:00 on the first day to 18:00 on the second, the price
 * doubling at noon of the second. */
static void test_job_day_rows(void **state)
{
	PGconn *c = conn();
	struct gl_err err = {0};
	int64_t now = (int64_t)time(NULL), d = (now / 86400 - 14) * 86400;
	char sql[1024];

	(void)state;
	snprintf(sql, sizeof sql,
		 "INSERT INTO clusters (name, kind) VALUES ('onerow', 'slurm');"
		 "INSERT INTO rates (gpu_model, micros_per_gpu_hour, valid_from, valid_to) VALUES"
		 " ('l40s', 1000000, '-infinity', to_timestamp(%lld)), ('l40s', 2000000, to_timestamp(%lld), 'infinity');"
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, gpu_type)"
		 " SELECT cluster_id, 'db:one', 'one', 'COMPLETED', to_timestamp(%lld), to_timestamp(%lld), 2000000, 'l40s'"
		 " FROM clusters WHERE name = 'onerow'",
		 (long long)d + 86400 + 43200, (long long)d + 86400 + 43200, (long long)d + 36000,
		 (long long)d + 86400 + 64800);
	assert_true(gl_test_sql_ok(c, sql));
	assert_int_equal(gl_accounting_build_days(c, NULL, (int64_t[]){d, d + 86400}, 2, now, &err), 0);
	/* the first day: one row, all of it priced at the first rate */
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("count(*)"), (long long)d), 1);
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("sum(alloc)"), (long long)d), 50400LL * 2000000);
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("sum(priced)"), (long long)d), 50400LL * 2000000);
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("min(rate)"), (long long)d), 1000000);
	/* the second: the allocated row and one a rate */
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("count(*)"), (long long)d + 86400), 3);
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("sum(alloc)"), (long long)d + 86400), 64800LL * 2000000);
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("sum(priced)"), (long long)d + 86400), 64800LL * 2000000);
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("sum(priced::numeric * rate)"), (long long)d + 86400),
			 43200LL * 2000000 * 1000000 + 21600LL * 2000000 * 2000000);
	assert_int_equal(gl_test_qintf(c, ONE_ROW_Q("count(*) FILTER (WHERE rate IS NULL AND priced = 0)"), (long long)d + 86400), 1);
	PQfinish(c);
}

/* The rollup finds a batch's finished jobs from the longest one's span
 * (sql/100): a job longer than any before, inserted or made so by an
 * update, in any cluster, is still read for every day it covers, and a
 * deleted one leaves the span as it was. */
static void test_long_job_found_by_its_span(void **state)
{
	PGconn *c = conn();
	struct gl_err err = {0};
	int64_t now = (int64_t)time(NULL), d = (now / 86400 - 10) * 86400;
	char sql[2048];

	(void)state;
	snprintf(sql, sizeof sql,
		 "INSERT INTO clusters (name, kind) VALUES ('span1', 'slurm'), ('span2', 'slurm');"
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, gpu_type)"
		 " SELECT cluster_id, 'db:s1', 's1', 'COMPLETED', to_timestamp(%lld), to_timestamp(%lld + 3600), 1000000, 'a100'"
		 " FROM clusters WHERE name = 'span1'",
		 (long long)d + 600, (long long)d + 600);
	assert_true(gl_test_sql_ok(c, sql));
	assert_int_equal(gl_accounting_build_day(c, d, now, &err), 0);
	assert_int_equal(gl_test_qintf(c, "SELECT sum(alloc) FROM usage_daily WHERE day = to_timestamp(%lld)::date"
				       " AND rate IS NULL AND d_cluster = 'span1'",
				       (long long)d),
			 3600LL * 1000000);
	/* 22 days, inserted: the span grows with it */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, gpu_type)"
		 " SELECT cluster_id, 'db:s2', 's2', 'COMPLETED', to_timestamp(%lld), to_timestamp(%lld), 2000000, 'a100'"
		 " FROM clusters WHERE name = 'span1'",
		 (long long)d - 20 * 86400, (long long)d + 2 * 86400);
	assert_true(gl_test_sql_ok(c, sql));
	assert_int_equal(gl_accounting_build_day(c, d, now, &err), 0);
	assert_int_equal(gl_test_qintf(c, "SELECT sum(alloc) FROM usage_daily WHERE day = to_timestamp(%lld)::date"
				       " AND rate IS NULL AND d_cluster = 'span1'",
				       (long long)d),
			 3600LL * 1000000 + 86400LL * 2000000);
	/* a day long in another cluster, then 31 days by an update */
	snprintf(sql, sizeof sql,
		 "INSERT INTO jobs (cluster_id, job_key, job_id, state, start_at, end_at, gpu_micro, gpu_type)"
		 " SELECT cluster_id, 'db:s3', 's3', 'COMPLETED', to_timestamp(%lld), to_timestamp(%lld), 3000000, 'a100'"
		 " FROM clusters WHERE name = 'span2';"
		 "UPDATE jobs SET end_at = to_timestamp(%lld) WHERE job_key = 'db:s3'",
		 (long long)d - 30 * 86400, (long long)d - 29 * 86400, (long long)d + 86400);
	assert_true(gl_test_sql_ok(c, sql));
	assert_int_equal(gl_accounting_build_day(c, d, now, &err), 0);
	assert_int_equal(gl_test_qintf(c, "SELECT sum(alloc) FROM usage_daily WHERE day = to_timestamp(%lld)::date"
				       " AND rate IS NULL AND d_cluster = 'span2'",
				       (long long)d),
			 86400LL * 3000000);
	assert_true(gl_test_sql_ok(c, "DELETE FROM jobs WHERE job_key = 'db:s3'"));
	assert_int_equal(gl_test_qint(c, "SELECT extract(epoch FROM max(span))::bigint FROM job_span_max"), 31 * 86400);
	PQfinish(c);
}

/* The rollup's second connection is opened only when there are days to
 * share (the daemon runs the rollup every minute, mostly with nothing
 * stale): its configuration points at a socket of the test's, which sees
 * whether a connection came. One that cannot be opened leaves the days to
 * the first. */
static void test_second_connection_only_for_stale_days(void **state)
{
	PGconn *c = conn();
	struct gl_store *st = gl_db_store(c);
	struct gl_config cfg;
	struct gl_err err = {0};
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof sa;
	int64_t now = (int64_t)time(NULL);
	int ls = socket(AF_INET, SOCK_STREAM, 0), built = -1, helped = -1, a;
	char yaml[256];

	(void)state;
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(ls, 4), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &len), 0);
	assert_int_equal(fcntl(ls, F_SETFL, O_NONBLOCK), 0);
	snprintf(yaml, sizeof yaml,
		 "database:\n  dsn: \"host=127.0.0.1 port=%d dbname=none user=none connect_timeout=2\"\n",
		 (int)ntohs(sa.sin_port));
	memset(&cfg, 0, sizeof cfg);
	assert_int_equal(gl_config_load_buf(&cfg, "helper.yaml", yaml, strlen(yaml), &err), 0);

	assert_int_equal(gl_accounting_build_stale(st, NULL, now, 400, &built, NULL, &err), 0);
	assert_int_equal(gl_accounting_build_stale(st, &cfg, now, 400, &built, &helped, &err), 0);
	assert_int_equal(built, 0);
	assert_int_equal(helped, 0);
	a = accept(ls, NULL, NULL);
	assert_true(a < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));

	assert_true(gl_test_sql_ok(
		c,
		"DELETE FROM usage_daily_built WHERE day IN (SELECT day FROM usage_daily_built ORDER BY day DESC"
		" LIMIT 2)"));
	assert_int_equal(gl_accounting_build_stale(st, &cfg, now, 400, &built, &helped, &err), 0);
	assert_int_equal(built, 2);
	assert_int_equal(helped, 0);
	a = accept(ls, NULL, NULL);
	assert_true(a >= 0);
	close(a);
	close(ls);
	gl_config_fini(&cfg);
	PQfinish(c);
}

static int setup(void **state)
{
	(void)state;
	return gl_test_db_fresh("gl_test_rollup_lock", g_dsn, sizeof g_dsn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writers_share_builder_excludes),
		cmocka_unit_test(test_days_together_equal_one_by_one),
		cmocka_unit_test(test_job_day_rows),
		cmocka_unit_test(test_long_job_found_by_its_span),
		cmocka_unit_test(test_second_connection_only_for_stale_days),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
