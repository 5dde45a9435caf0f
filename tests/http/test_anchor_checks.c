/* Anchors always checked (issue 24 item 9): what a database superuser can do
 * to the audit log — recompute the chain after rewriting a row, truncate
 * it, delete its tail — leaves a chain that verifies on its own; each is
 * caught by a plain `audit verify` with the config (it reads
 * audit.anchor_file), by GET /v1/audit/verify (it checks the anchors the
 * daemon wrote), and by the daemon itself, which checks the tail against
 * its last anchor at start and every interval, says so in its log and on
 * /metrics (gpuledger_audit_anchor_mismatch 1), and writes no anchor over
 * the broken chain. Each anchor is also published through
 * audit.anchor_command. The real binary, real PostgreSQL. */
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
#include <sys/stat.h>
#include <unistd.h>

enum tamper { RECOMPUTE, TRUNCATE, TAIL };

struct scene {
	char dsn[512], dir[256], cfg[300], anchors[300];
};

static void scene_init(struct scene *s, const char *name)
{
	FILE *f;
	char db[64];
	snprintf(s->dir, sizeof s->dir, "/tmp/gltest-anchor-XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->cfg, sizeof s->cfg, "%s/config.yaml", s->dir);
	snprintf(s->anchors, sizeof s->anchors, "%s/anchors", s->dir);
	snprintf(db, sizeof db, "gl_test_anchor_%s", name);
	assert_int_equal(gl_test_db_fresh(db, s->dsn, sizeof s->dsn), 0);
	f = fopen(s->cfg, "w");
	assert_non_null(f);
	/* the command publishes each anchor as a file named by it (no shell) */
	fprintf(f,
		"log:\n  level: info\naudit:\n  anchor_file: %s\n  anchor_interval_s: 1\n"
		"  anchor_command: touch %s/published-{seq}-{hash}\n",
		s->anchors, s->dir);
	fclose(f);
}

static void scene_fini(struct scene *s)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
	assert_int_equal(system(cmd), 0);
}

/* The last anchor line's seq and hash; its number of lines. */
static int last_anchor(const struct scene *s, long long *seq, char *hash)
{
	FILE *f = fopen(s->anchors, "r");
	char line[512];
	int n = 0;
	*seq = -1;
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "seq %lld hash %64s", seq, hash) == 2)
			n++;
	fclose(f);
	return n;
}

/* Requests (each one an audit row), then waits until an anchor names the
 * head: the rows are anchored. Returns that anchor's seq. */
static long long make_anchored_rows(const struct scene *s, const struct gl_test_daemon *d)
{
	char hash[80], pub[400];
	long long seq = -1, head = 0;
	for (int i = 0; i < 12; i++) {
		struct gl_test_http r;
		assert_int_equal(gl_test_http(d->port, "GET", "/v1/whoami", NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		gl_test_http_fini(&r);
	}
	for (int i = 0; i < 200; i++) {
		head = gl_test_qint_dsn(s->dsn, "SELECT coalesce(max(audit_id), 0) FROM audit_log");
		if (last_anchor(s, &seq, hash) && seq == head && head >= 12)
			break;
		usleep(100 * 1000);
	}
	assert_true(head >= 12);
	assert_int_equal(seq, head);
	/* published through audit.anchor_command too */
	snprintf(pub, sizeof pub, "%s/published-%lld-%s", s->dir, seq, hash);
	for (int i = 0; i < 50 && access(pub, F_OK) != 0; i++)
		usleep(100 * 1000);
	if (access(pub, F_OK) != 0)
		fail_msg("anchor command did not publish %s", pub);
	return seq;
}

static void tamper(const struct scene *s, enum tamper t, long long anchored)
{
	char sql[200];
	switch (t) {
	case RECOMPUTE:
		assert_int_equal(gl_test_audit_recompute(s->dsn, 3, "token:999"), 0);
		return;
	case TRUNCATE:
		snprintf(sql, sizeof sql, "TRUNCATE audit_log");
		break;
	case TAIL:
		snprintf(sql, sizeof sql, "DELETE FROM audit_log WHERE audit_id > %lld", anchored - 4);
		break;
	}
	{
		PGconn *a = gl_test_superuser_conn(s->dsn);
		PGresult *r;
		assert_non_null(a);
		PQclear(PQexec(a, "SET session_replication_role = replica"));
		r = PQexec(a, sql);
		if (PQresultStatus(r) != PGRES_COMMAND_OK)
			fail_msg("%s: %s", sql, PQerrorMessage(a));
		PQclear(r);
		PQfinish(a);
	}
}

static const char *metric_line(const char *text, const char *name)
{
	for (const char *p = text; (p = strstr(p, name)); p++)
		if ((p == text || p[-1] == '\n') && p[strlen(name)] == ' ')
			return p + strlen(name) + 1;
	return NULL;
}

/* gpuledger_audit_anchor_mismatch as the daemon shows it; -1 when absent. */
static int mismatch_gauge(const struct gl_test_daemon *d)
{
	struct gl_test_http r;
	const char *v;
	int g = -1;
	assert_int_equal(gl_test_http(d->port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	if ((v = metric_line(r.body, "gpuledger_audit_anchor_mismatch")))
		g = atoi(v);
	gl_test_http_fini(&r);
	return g;
}

static int wait_gauge(const struct gl_test_daemon *d, int want)
{
	int g = -1;
	for (int i = 0; i < 100 && (g = mismatch_gauge(d)) != want; i++)
		usleep(100 * 1000);
	return g;
}

/* `audit verify` with the config: exit status and output in out. */
static int cli_verify(const struct scene *s, const char *extra, char *out, size_t n)
{
	struct gl_test_out o;
	int st;
	assert_int_equal(gl_test_run(s->dsn, NULL, &o, "--config", s->cfg, "audit", "verify", extra, NULL), 0);
	st = o.status;
	snprintf(out, n, "%s%s", o.out, o.err);
	gl_test_out_fini(&o);
	return st;
}

static void api_verify_broken(const struct gl_test_daemon *d)
{
	cJSON *j = gl_test_get_json(d->port, "/v1/audit/verify", 200);
	assert_non_null(j);
	if (!cJSON_IsFalse(cJSON_GetObjectItem(j, "ok"))) {
		char *t = cJSON_PrintUnformatted(j);
		fail_msg("/v1/audit/verify after tampering: %s", t);
	}
	assert_non_null(cJSON_GetObjectItem(j, "reason"));
	cJSON_Delete(j);
}

static void scenario(const char *name, enum tamper t)
{
	struct scene s;
	struct gl_test_daemon d;
	char out[2048], hash[80], *log = NULL;
	long long anchored, seq;
	int lines;
	cJSON *j;

	scene_init(&s, name);
	{
		char cfgtext[1024];
		char *c = gl_test_read_file(s.cfg, NULL);
		snprintf(cfgtext, sizeof cfgtext, "%s", c);
		free(c);
		assert_int_equal(gl_test_daemon_start(&d, s.dsn, cfgtext, (const char *[]){"--no-ingest", NULL}), 0);
	}
	anchored = make_anchored_rows(&s, &d);
	assert_int_equal(wait_gauge(&d, 0), 0);
	j = gl_test_get_json(d.port, "/v1/audit/verify", 200);
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	assert_true(cJSON_GetObjectItem(j, "anchors_checked")->valuedouble >= 1);
	cJSON_Delete(j);

	if (t == RECOMPUTE) {
		/* while it runs: the next interval's check finds it */
		tamper(&s, t, anchored);
		assert_int_equal(wait_gauge(&d, 1), 1);
		api_verify_broken(&d);
		lines = last_anchor(&s, &seq, hash);
		sleep(2);
		assert_int_equal(last_anchor(&s, &seq, hash), lines); /* nothing written over it */
		assert_int_equal(gl_test_daemon_sigterm(&d, 20, &log, NULL), 0);
		assert_non_null(strstr(log, "audit: the chain does not match its last anchor"));
		free(log);
	} else {
		assert_int_equal(gl_test_daemon_stop(&d), 0);
		tamper(&s, t, anchored);
	}
	/* the chain alone verifies: only the anchors can tell */
	if (cli_verify(&s, "--no-anchor", out, sizeof out) != 0)
		fail_msg("%s: the tampered chain should verify alone: %s", name, out);
	/* plain verify with the config reads audit.anchor_file */
	if (cli_verify(&s, NULL, out, sizeof out) != 5 || !strstr(out, "BROKEN"))
		fail_msg("%s: plain audit verify: %s", name, out);
	if (t != RECOMPUTE) {
		/* the daemon's check at start, and the route */
		char cfgtext[1024];
		char *c = gl_test_read_file(s.cfg, NULL);
		snprintf(cfgtext, sizeof cfgtext, "%s", c);
		free(c);
		lines = last_anchor(&s, &seq, hash);
		assert_int_equal(gl_test_daemon_start(&d, s.dsn, cfgtext, (const char *[]){"--no-ingest", NULL}), 0);
		assert_int_equal(wait_gauge(&d, 1), 1);
		api_verify_broken(&d);
		sleep(2);
		assert_int_equal(last_anchor(&s, &seq, hash), lines);
		assert_int_equal(gl_test_daemon_sigterm(&d, 20, &log, NULL), 0);
		assert_non_null(strstr(log, "audit: the chain does not match its last anchor"));
		free(log);
	}
	scene_fini(&s);
}

static void test_recompute_is_caught(void **state)
{
	(void)state;
	scenario("recompute", RECOMPUTE);
}

static void test_truncation_is_caught(void **state)
{
	(void)state;
	scenario("truncate", TRUNCATE);
}

static void test_tail_deletion_is_caught(void **state)
{
	(void)state;
	scenario("tail", TAIL);
}

/* No anchor file configured: plain verify is as before; one configured but
 * not there yet is an error naming it (exit 1), not "0 anchors checked". */
static void test_missing_anchor_file_is_an_error(void **state)
{
	struct scene s;
	char out[2048];
	(void)state;
	scene_init(&s, "missing");
	assert_int_equal(gl_test_cli(s.dsn, "migrate", NULL), 0);
	assert_int_equal(cli_verify(&s, NULL, out, sizeof out), 1);
	assert_non_null(strstr(out, "audit.anchor_file"));
	assert_non_null(strstr(out, "--no-anchor"));
	assert_int_equal(cli_verify(&s, "--no-anchor", out, sizeof out), 0);
	scene_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recompute_is_caught),
		cmocka_unit_test(test_truncation_is_caught),
		cmocka_unit_test(test_tail_deletion_is_caught),
		cmocka_unit_test(test_missing_anchor_file_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
