/* The audit chain against a real PostgreSQL: concurrent appenders never
 * fork it; tampering as a database superuser (update, delete, forged
 * insert, truncate, a fully recomputed chain) is named by its first bad
 * sequence number; retention drops whole partitions and stays verifiable;
 * `audit harden` leaves the service and owner roles only INSERT and SELECT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/audit.h"
#include "store/db_int.h"
#include "lib/testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct db {
	char name[64];
	char dsn[512];
	char admin_dsn[512];
	PGconn *app, *adm;
};

static void db_open(struct db *d, const char *name)
{
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "%s", name);
	assert_int_equal(gl_test_db_fresh(name, d->dsn, sizeof d->dsn), 0);
	snprintf(d->admin_dsn, sizeof d->admin_dsn, "%s dbname=%s", gl_test_admin_dsn(), name);
	d->app = PQconnectdb(d->dsn);
	d->adm = PQconnectdb(d->admin_dsn);
	assert_int_equal(PQstatus(d->app), CONNECTION_OK);
	assert_int_equal(PQstatus(d->adm), CONNECTION_OK);
	PQclear(PQexec(d->app, "SET client_min_messages = warning"));
	PQclear(PQexec(d->adm, "SET client_min_messages = warning"));
}

static void db_close(struct db *d)
{
	PQfinish(d->app);
	PQfinish(d->adm);
}

static void seed(PGconn *c, int n)
{
	struct gl_err err = {0};
	for (int i = 0; i < n; i++) {
		char obj[32], detail[64];
		snprintf(obj, sizeof obj, "/v1/jobs/%d", i);
		snprintf(detail, sizeof detail, "{\"status\": %d, \"n\": [%d, 1.50]}", 200 + i % 3, i);
		if (gl_audit_append(gl_db_store(c), i % 2 ? "token:1" : "system", i % 3 ? "10.0.0.1" : NULL, "http.request",
				    i % 4 ? obj : NULL, "ok", detail, &err))
			fail_msg("append: %s", err.msg);
	}
}

/* As the superuser with triggers off: what an attacker with full access does. */
static void tamper(struct db *d, const char *sql)
{
	PGresult *r;
	PQclear(PQexec(d->adm, "SET session_replication_role = replica"));
	r = PQexec(d->adm, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", sql, PQerrorMessage(d->adm));
	PQclear(r);
	PQclear(PQexec(d->adm, "RESET session_replication_role"));
}

/* Runs `audit verify`; returns the exit status, stdout into out. */
static int verify(struct db *d, const char *anchor_file, char *out, size_t n)
{
	struct gl_test_out o;
	int st;
	if (anchor_file)
		assert_int_equal(gl_test_run(d->dsn, NULL, &o, "audit", "verify", "--anchor", anchor_file, NULL), 0);
	else
		assert_int_equal(gl_test_run(d->dsn, NULL, &o, "audit", "verify", NULL), 0);
	snprintf(out, n, "%s", o.out);
	st = o.status;
	if (st != 0 && st != 5)
		fprintf(stderr, "audit verify: %d %s %s\n", st, o.out, o.err);
	gl_test_out_fini(&o);
	return st;
}

static void expect_broken_at(struct db *d, const char *anchor_file, long long seq)
{
	char out[1024], want[64];
	assert_int_equal(verify(d, anchor_file, out, sizeof out), 5);
	snprintf(want, sizeof want, "BROKEN at seq %lld:", seq);
	if (!strstr(out, want))
		fail_msg("want '%s', got: %s", want, out);
}

static void expect_ok(struct db *d, const char *anchor_file)
{
	char out[1024];
	int st = verify(d, anchor_file, out, sizeof out);
	if (st != 0)
		fail_msg("verify: %d %s", st, out);
}

struct appender {
	const char *dsn;
	int id, n;
	int failed;
};

static void *append_thread(void *arg)
{
	struct appender *a = arg;
	PGconn *c = PQconnectdb(a->dsn);
	struct gl_err err = {0};
	char actor[32];
	snprintf(actor, sizeof actor, "thread:%d", a->id);
	for (int i = 0; i < a->n && !a->failed; i++) {
		if (i % 10 == 0) {
			struct gl_audit_entry e[5];
			for (int k = 0; k < 5; k++)
				e[k] = (struct gl_audit_entry){0, actor, NULL, "batch", NULL, "ok", NULL};
			a->failed = gl_audit_append_batch(gl_db_store(c), e, 5, NULL, &err) != 0;
		} else {
			a->failed = gl_audit_append(gl_db_store(c), actor, "127.0.0.1", "single", "x", "ok", "{\"i\": 1}", &err) != 0;
		}
	}
	if (a->failed)
		fprintf(stderr, "appender %d: %s\n", a->id, err.msg);
	PQfinish(c);
	return NULL;
}

static void test_concurrent_appenders_never_fork_the_chain(void **state)
{
	struct db d;
	pthread_t th[4];
	struct appender a[4];
	struct gl_audit_verify v;
	struct gl_err err = {0};
	db_open(&d, "gl_test_audit_conc");
	for (int i = 0; i < 4; i++) {
		a[i] = (struct appender){d.dsn, i, 100, 0};
		pthread_create(&th[i], NULL, append_thread, &a[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_false(a[i].failed);
	}
	/* 4 threads x (90 single + 10 batches of 5) */
	assert_int_equal(gl_test_qint(d.app, "SELECT count(*) FROM audit_log"), 4 * (90 + 50));
	assert_int_equal(gl_test_qint(d.app, "SELECT count(DISTINCT audit_id) FROM audit_log"), 4 * 140);
	assert_int_equal(gl_test_qint(d.app, "SELECT max(audit_id) FROM audit_log"), 4 * 140);
	assert_int_equal(gl_audit_verify(gl_db_store(d.app), NULL, 0, &v, &err), 0);
	assert_true(v.ok);
	assert_int_equal(v.rows, 560);
	expect_ok(&d, NULL);
	db_close(&d);
}

static void test_update_is_named(void **state)
{
	struct db d;
	db_open(&d, "gl_test_audit_upd");
	seed(d.app, 10);
	expect_ok(&d, NULL);
	tamper(&d, "UPDATE audit_log SET outcome = 'denied' WHERE audit_id = 5");
	expect_broken_at(&d, NULL, 5);
	db_close(&d);
}

static void test_detail_rewrite_is_named(void **state)
{
	struct db d;
	db_open(&d, "gl_test_audit_det");
	seed(d.app, 10);
	/* same JSON value, different key: still a different row */
	tamper(&d, "UPDATE audit_log SET detail = detail || '{\"status\": 500}' WHERE audit_id = 7");
	expect_broken_at(&d, NULL, 7);
	db_close(&d);
}

static void test_delete_is_named(void **state)
{
	struct db d;
	db_open(&d, "gl_test_audit_del");
	seed(d.app, 10);
	tamper(&d, "DELETE FROM audit_log WHERE audit_id = 4");
	expect_broken_at(&d, NULL, 4);
	tamper(&d, "DELETE FROM audit_log WHERE audit_id <= 2");
	expect_broken_at(&d, NULL, 1);
	db_close(&d);
}

static void test_forged_insert_is_named(void **state)
{
	struct db d;
	db_open(&d, "gl_test_audit_ins");
	seed(d.app, 10);
	/* a second row claiming seq 6 */
	tamper(&d, "INSERT INTO audit_log SELECT audit_id, at + interval '1 second', 'token:99', source_addr, action,"
		   " object, outcome, detail, prev_hash, hash FROM audit_log WHERE audit_id = 6");
	expect_broken_at(&d, NULL, 6);
	db_close(&d);

	db_open(&d, "gl_test_audit_ins2");
	seed(d.app, 10);
	/* a forged row at the end, linked correctly but with a made-up hash */
	tamper(&d, "INSERT INTO audit_log SELECT 11, now(), 'token:1', NULL, 'token.create', NULL, 'ok', '{}', hash,"
		   " sha256('forged') FROM audit_log WHERE audit_id = 10");
	expect_broken_at(&d, NULL, 11);
	db_close(&d);
}

static void anchor_path(const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/anchors-%s-%d", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp", name,
		 (int)getpid());
	unlink(out);
}

static void publish_head(struct db *d, const char *file)
{
	struct gl_test_out o;
	assert_int_equal(gl_test_run(d->dsn, NULL, &o, "audit", "head", "--append", file, NULL), 0);
	assert_int_equal(o.status, 0);
	assert_true(strncmp(o.out, "seq ", 4) == 0);
	gl_test_out_fini(&o);
}

static void test_truncate_is_caught_by_the_published_head(void **state)
{
	struct db d;
	char anchors[512];
	db_open(&d, "gl_test_audit_trunc");
	anchor_path("trunc", anchors, sizeof anchors);
	seed(d.app, 5);
	publish_head(&d, anchors);
	seed(d.app, 5);
	publish_head(&d, anchors);
	expect_ok(&d, anchors);
	tamper(&d, "TRUNCATE audit_log");
	/* an empty log verifies on its own; the published heads say otherwise */
	expect_ok(&d, NULL);
	expect_broken_at(&d, anchors, 1);
	unlink(anchors);
	db_close(&d);
}

/* The attacker rewrites row 3 and recomputes every hash after it: the chain
 * is consistent again, only a head published earlier can tell. */
static void test_recomputed_chain_is_caught_by_the_published_head(void **state)
{
	struct db d;
	char anchors[512];
	PGresult *r;
	unsigned char prev[GL_AUDIT_HASH_LEN];
	struct gl_strbuf canon = GL_STRBUF_INIT;

	db_open(&d, "gl_test_audit_recomp");
	anchor_path("recomp", anchors, sizeof anchors);
	seed(d.app, 10);
	publish_head(&d, anchors);
	tamper(&d, "UPDATE audit_log SET actor = 'token:42' WHERE audit_id = 3");
	r = PQexec(d.adm, "SELECT audit_id, (extract(epoch FROM at) * 1000000)::bigint, actor, source_addr, action, object,"
			  " outcome, detail::text, prev_hash FROM audit_log WHERE audit_id >= 3 ORDER BY audit_id");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	assert_int_equal(gl_audit_unhex(PQgetvalue(r, 0, 8), prev), 0);
	for (int i = 0; i < PQntuples(r); i++) {
		unsigned char h[GL_AUDIT_HASH_LEN];
		char hp[80], hh[80], sql[512];
		gl_strbuf_reset(&canon);
		gl_audit_canonical(&canon, atoll(PQgetvalue(r, i, 0)), atoll(PQgetvalue(r, i, 1)), PQgetvalue(r, i, 2),
				   PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3), PQgetvalue(r, i, 4),
				   PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5), PQgetvalue(r, i, 6),
				   PQgetvalue(r, i, 7));
		gl_audit_hash(prev, canon.p, canon.len, h);
		gl_audit_hex(prev, hp);
		gl_audit_hex(h, hh);
		snprintf(sql, sizeof sql, "UPDATE audit_log SET prev_hash = '\\x%s', hash = '\\x%s' WHERE audit_id = %s", hp,
			 hh, PQgetvalue(r, i, 0));
		tamper(&d, sql);
		memcpy(prev, h, sizeof prev);
	}
	PQclear(r);
	gl_strbuf_fini(&canon);
	expect_ok(&d, NULL);
	expect_broken_at(&d, anchors, 10);
	unlink(anchors);
	db_close(&d);
}

static void write_text(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Anchors kept by syslog (`audit head | logger -t gpuledger-audit`, as
 * docs/security.md suggests) carry a prefix: they are still checked, and a
 * file with no anchor at all is an error, not "0 anchors checked". */
static void test_syslog_anchors_are_checked(void **state)
{
	struct db d;
	struct gl_test_out o;
	char anchors[512], head[256], hex[80], text[1024], out[1024];
	long long seq;
	db_open(&d, "gl_test_audit_syslog");
	anchor_path("syslog", anchors, sizeof anchors);
	seed(d.app, 6);
	assert_int_equal(gl_test_run(d.dsn, NULL, &o, "audit", "head", NULL), 0);
	assert_int_equal(o.status, 0);
	snprintf(head, sizeof head, "%s", o.out);
	gl_test_out_fini(&o);
	assert_int_equal(sscanf(head, "seq %lld hash %79s", &seq, hex), 2);
	assert_int_equal(seq, 6);

	/* the right head behind a syslog prefix: checked and ok */
	snprintf(text, sizeof text,
		 "Nov 23 01:30:00 host CRON[99]: (root) CMD (gpuledger audit head | logger -t gpuledger-audit)\n"
		 "Nov 23 01:34:00 host gpuledger-audit[123]: %s",
		 head);
	write_text(anchors, text);
	assert_int_equal(verify(&d, anchors, out, sizeof out), 0);
	assert_non_null(strstr(out, "1 anchors checked"));
	/* seq 5 published with seq 6's hash: a rewritten chain */
	snprintf(text, sizeof text, "Nov 23 01:34:00 host gpuledger-audit[123]: seq 5 hash %s at 2026-11-23T01:34:00Z\n", hex);
	write_text(anchors, text);
	expect_broken_at(&d, anchors, 5);
	/* a head past the table's end: rows were cut off the end */
	snprintf(text, sizeof text, "Nov 23 01:34:00 host gpuledger-audit[123]: seq 9 hash %s at 2026-11-23T01:34:00Z\n", hex);
	write_text(anchors, text);
	expect_broken_at(&d, anchors, 7);
	/* no anchor in the file: an error (exit 1), named */
	write_text(anchors, "Nov 23 01:34:00 host sshd[7]: session opened\n# seq\n");
	assert_int_equal(gl_test_run(d.dsn, NULL, &o, "audit", "verify", "--anchor", anchors, NULL), 0);
	assert_int_equal(o.status, 1);
	assert_non_null(strstr(o.err, "no anchor line"));
	gl_test_out_fini(&o);
	write_text(anchors, "");
	assert_int_equal(gl_test_run(d.dsn, NULL, &o, "audit", "verify", "--anchor", anchors, NULL), 0);
	assert_int_equal(o.status, 1);
	gl_test_out_fini(&o);
	unlink(anchors);
	db_close(&d);
}

static void test_prune_drops_whole_months_and_stays_verifiable(void **state)
{
	struct db d;
	struct gl_err err = {0};
	struct gl_audit_entry e[8];
	struct gl_test_out o;
	char out[1024];

	db_open(&d, "gl_test_audit_prune");
	assert_int_equal(gl_test_qint(d.app, "SELECT gl_audit_partitions_ensure('2020-01-01', 2)"), 2);
	for (int i = 0; i < 8; i++)
		e[i] = (struct gl_audit_entry){i < 5 ? 1579046400000000LL + i : 1581292800000000LL + i, "system", NULL,
					       "ingest.run", "sacct", "ok", NULL}; /* 2020-01-15, 2020-02-10 */
	assert_int_equal(gl_audit_append_batch(gl_db_store(d.app), e, 8, NULL, &err), 0);
	seed(d.app, 2);
	/* through the log: the application role has no privilege on a partition */
	assert_int_equal(gl_test_qint(d.app, "SELECT count(*) FROM audit_log"
					     " WHERE tableoid = 'audit_log_2020_01'::regclass"),
			 5);

	assert_int_equal(gl_test_run(d.dsn, NULL, &o, "audit", "prune", "--before", "2020-02", NULL), 0);
	if (o.status != 0)
		fail_msg("prune: %s %s", o.out, o.err);
	assert_non_null(strstr(o.out, "dropped 1 partitions (5 rows)"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(d.app, "SELECT count(*) FROM pg_class WHERE relname = 'audit_log_2020_01'"), 0);
	assert_int_equal(gl_test_qint(d.app, "SELECT min(audit_id) FROM audit_log"), 6);
	/* the prune is itself audited, with what it dropped */
	assert_int_equal(gl_test_qint(d.app, "SELECT (detail->>'last_seq')::bigint FROM audit_log WHERE action = 'audit.prune'"), 5);
	assert_int_equal(verify(&d, NULL, out, sizeof out), 0);
	assert_non_null(strstr(out, "seq 6..11"));
	/* never the current month */
	{
		char next[16];
		time_t t = time(NULL) + 32 * 86400;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(next, sizeof next, "%Y-%m", &tm);
		assert_int_equal(gl_test_run(d.dsn, NULL, &o, "audit", "prune", "--before", next, NULL), 0);
		assert_int_equal(o.status, 1);
		/* in words, not the database's exception */
		assert_non_null(strstr(o.err, "is after the current month"));
		assert_null(strstr(o.err, "ERROR:"));
		gl_test_out_fini(&o);
	}
	/* deleting the first surviving row is still named */
	tamper(&d, "DELETE FROM audit_log WHERE audit_id = 6");
	expect_broken_at(&d, NULL, 6);
	db_close(&d);
}

/* `at` is the writer's clock, not monotonic in seq: a row stamped in January
 * (its writer's clock 26 days behind) comes after February rows. Dropping
 * January would cut seq 4 out of the middle of the chain: prune keeps it,
 * says so, and the log verifies; once February goes too, both go. */
static void test_prune_never_cuts_the_chain_in_the_middle(void **state)
{
	struct db d;
	struct gl_err err = {0};
	struct gl_audit_entry e[6];
	struct gl_test_out o;
	char out[1024];
	/* 2020-02-10 x3, then 2020-01-15 (clock behind), then 2020-02-11 x2 */
	static const int64_t at[6] = {1581292800000000LL, 1581292800000001LL, 1581292800000002LL, 1579046400000000LL,
				      1581379200000000LL, 1581379200000001LL};

	db_open(&d, "gl_test_audit_skew");
	assert_int_equal(gl_test_qint(d.app, "SELECT gl_audit_partitions_ensure('2020-01-01', 3)"), 3);
	for (int i = 0; i < 6; i++)
		e[i] = (struct gl_audit_entry){at[i], "system", NULL, "ingest.run", "sacct", "ok", NULL};
	for (int i = 0; i < 6; i++)
		assert_int_equal(gl_audit_append_batch(gl_db_store(d.app), &e[i], 1, NULL, &err), 0);
	seed(d.app, 2); /* now: seq 7, 8 */
	assert_int_equal(gl_test_qint(d.app, "SELECT max(audit_id) FROM audit_log"
					     " WHERE tableoid = 'audit_log_2020_01'::regclass"),
			 4);
	assert_int_equal(gl_test_qint(d.app, "SELECT min(audit_id) FROM audit_log"
					     " WHERE tableoid = 'audit_log_2020_02'::regclass"),
			 1);

	assert_int_equal(gl_test_run(d.dsn, NULL, &o, "audit", "prune", "--before", "2020-02", NULL), 0);
	if (o.status != 0)
		fail_msg("prune: %s %s", o.out, o.err);
	assert_non_null(strstr(o.out, "dropped 0 partitions (0 rows)"));
	assert_non_null(strstr(o.out, "kept 1 older partitions"));
	gl_test_out_fini(&o);
	assert_int_equal(gl_test_qint(d.app, "SELECT count(*) FROM pg_class WHERE relname = 'audit_log_2020_01'"), 1);
	assert_int_equal(gl_test_qint(d.app, "SELECT count(*) FROM audit_log WHERE action = 'audit.prune'"
					   " AND detail->'kept' = '[\"audit_log_2020_01\"]'::jsonb"), 1);
	expect_ok(&d, NULL);

	/* both months old enough: January's 1 row and February's 5 are seq 1..6 */
	assert_int_equal(gl_test_run(d.dsn, NULL, &o, "audit", "prune", "--before", "2020-03", NULL), 0);
	if (o.status != 0)
		fail_msg("prune: %s %s", o.out, o.err);
	assert_non_null(strstr(o.out, "dropped 2 partitions (6 rows)"));
	assert_null(strstr(o.out, "kept"));
	gl_test_out_fini(&o);
	assert_int_equal(verify(&d, NULL, out, sizeof out), 0);
	assert_non_null(strstr(out, "seq 7..10"));
	db_close(&d);
}

static void expect_sql_fails(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_FATAL_ERROR)
		fail_msg("unexpectedly allowed: %s", sql);
	PQclear(r);
}

static void test_harden_leaves_the_service_role_insert_and_select(void **state)
{
	struct db d;
	struct gl_test_out o;
	struct gl_err err = {0};
	db_open(&d, "gl_test_audit_harden");
	seed(d.app, 3);
	/* as the service role it cannot be done */
	assert_int_equal(gl_test_run(d.dsn, NULL, &o, "audit", "harden", NULL), 0);
	assert_int_equal(o.status, 1);
	gl_test_out_fini(&o);
	/* a grant beyond SELECT and INSERT, on the log and on a partition,
	 * given to the service's role before: harden takes it back */
	assert_true(gl_test_exec_owner(d.dsn, "GRANT UPDATE, DELETE, TRUNCATE ON audit_log, audit_log_default"
					      " TO gpuledger") >= 0);
	assert_int_equal(gl_test_run(d.admin_dsn, NULL, &o, "audit", "harden", NULL), 0);
	if (o.status != 0)
		fail_msg("harden: %s", o.err);
	assert_string_equal(gl_test_qstr(d.app, "SELECT has_table_privilege('audit_log', 'SELECT, INSERT')::text"
						" || has_table_privilege('audit_log', 'UPDATE, DELETE, TRUNCATE')::text"
						" || has_table_privilege('audit_log_default', 'SELECT, UPDATE')::text"),
			    "truefalsefalse");
	gl_test_out_fini(&o);
	/* owners can switch triggers off and schema owners can drop tables:
	 * the service role is neither any more */
	expect_sql_fails(d.app, "ALTER TABLE audit_log DISABLE TRIGGER USER");
	expect_sql_fails(d.app, "ALTER TABLE audit_log_default DISABLE TRIGGER USER");
	expect_sql_fails(d.app, "UPDATE audit_log SET actor = 'x'");
	expect_sql_fails(d.app, "DELETE FROM audit_log");
	expect_sql_fails(d.app, "TRUNCATE audit_log");
	expect_sql_fails(d.app, "DROP TABLE audit_log_default");
	expect_sql_fails(d.app, "DROP TABLE audit_log CASCADE");
	expect_sql_fails(d.app, "CREATE OR REPLACE FUNCTION gl_audit_reject() RETURNS trigger LANGUAGE plpgsql AS"
				" $$ BEGIN RETURN OLD; END $$");
	expect_sql_fails(d.app, "ALTER TABLE audit_log DETACH PARTITION audit_log_default");
	/* what it must still do: append, read, roll partitions; and the owner
	 * role, which migrates, still creates its tables */
	seed(d.app, 2);
	assert_int_equal(gl_audit_partitions_ensure(gl_db_store(d.app), (int64_t)time(NULL) + 150 * 86400, 1, &err), 0);
	assert_int_equal(gl_test_qint(d.app, "SELECT count(*) FROM audit_log"), 5);
	assert_true(gl_test_exec_owner(d.dsn, "CREATE TABLE after_harden (x int); DROP TABLE after_harden") >= 0);
	/* the owner keeps only SELECT and INSERT on the log, like the service */
	{
		char own[2048];
		PGconn *oc;
		assert_int_equal(gl_test_owner_dsn(d.dsn, own, sizeof own), 0);
		oc = PQconnectdb(own);
		assert_int_equal(PQstatus(oc), CONNECTION_OK);
		expect_sql_fails(oc, "ALTER TABLE audit_log DISABLE TRIGGER USER");
		expect_sql_fails(oc, "DELETE FROM audit_log");
		expect_sql_fails(oc, "DROP TABLE audit_log CASCADE");
		PQfinish(oc);
	}
	expect_ok(&d, NULL);
	db_close(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_appenders_never_fork_the_chain),
		cmocka_unit_test(test_update_is_named),
		cmocka_unit_test(test_detail_rewrite_is_named),
		cmocka_unit_test(test_delete_is_named),
		cmocka_unit_test(test_forged_insert_is_named),
		cmocka_unit_test(test_truncate_is_caught_by_the_published_head),
		cmocka_unit_test(test_recomputed_chain_is_caught_by_the_published_head),
		cmocka_unit_test(test_syslog_anchors_are_checked),
		cmocka_unit_test(test_prune_drops_whole_months_and_stays_verifiable),
		cmocka_unit_test(test_prune_never_cuts_the_chain_in_the_middle),
		cmocka_unit_test(test_harden_leaves_the_service_role_insert_and_select),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
