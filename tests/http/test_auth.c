/* Access control and the audit trail over real HTTP: 401/403/429, the role
 * lattice on every route, owner-scoped tokens, revocation, one audit row per
 * request (allowed and denied, never the token), the admin endpoints, and
 * the service role unable to rewrite audit_log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/auth.h"
#include "gl/routes.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dsn[512];
static struct gl_test_daemon g_d;
static PGconn *g_c;
static char t_viewer[64], t_finance[64], t_hook[64], t_scoped[64], t_expired[64], t_hook_scoped[64];
static const char *role_tokens[4][2]; /* role name, token */
/* finance tokens scoped by each kind of scope (docs/security.md) */
static const char *const scope_kinds[][3] = {
	{"team=teama", NULL}, {"project=p", NULL}, {"cost_center=cc", NULL}, {"account=teama", NULL},
	{"namespace=ns", NULL}, {"user=alice", NULL}, {"team=teama", "team=teamb", NULL},
	{"team=teama", "user=alice", NULL},
};
#define N_SCOPE_KINDS (sizeof scope_kinds / sizeof scope_kinds[0])
static char t_scope_kind[N_SCOPE_KINDS][64];

static int setup(void **state)
{
	struct gl_test_out o;
	char fields[4096] = "";
	FILE *f;
	if (gl_test_db_fresh("gl_test_auth", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	PQclear(PQexec(g_c, "SET client_min_messages = warning"));
	f = fopen(gl_test_fixture("tests/fixtures/sacct/testbed/sacct_fields.txt"), "r");
	if (!f || !fgets(fields, sizeof fields, f))
		return -1;
	fclose(f);
	fields[strcspn(fields, "\r\n")] = '\0';
	for (char *p = fields; *p; p++)
		if (*p == '|')
			*p = ',';
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file",
			gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), "--fields", fields, NULL) ||
	    o.status != 0) {
		fprintf(stderr, "ingest failed: %s\n", o.err);
		return -1;
	}
	gl_test_out_fini(&o);
	if (gl_test_token_create(g_dsn, "viewer", "viewer", NULL, t_viewer, sizeof t_viewer, NULL) ||
	    gl_test_token_create(g_dsn, "finance", "finance", NULL, t_finance, sizeof t_finance, NULL) ||
	    gl_test_token_create(g_dsn, "hook", "hook", NULL, t_hook, sizeof t_hook, NULL) ||
	    gl_test_token_create(g_dsn, "finance-teama", "finance", (const char *const[]){"--scope", "account=teama", NULL},
				 t_scoped, sizeof t_scoped, NULL) ||
	    gl_test_token_create(g_dsn, "hook-teama", "hook", (const char *const[]){"--scope", "account=teama", NULL},
				 t_hook_scoped, sizeof t_hook_scoped, NULL) ||
	    gl_test_token_create(g_dsn, "expired", "viewer", (const char *const[]){"--expires", "2001-01-01", NULL},
				 t_expired, sizeof t_expired, NULL))
		return -1;
	for (size_t i = 0; i < N_SCOPE_KINDS; i++) {
		const char *extra[8];
		char name[32];
		size_t k = 0;
		for (size_t v = 0; scope_kinds[i][v]; v++) {
			extra[k++] = "--scope";
			extra[k++] = scope_kinds[i][v];
		}
		extra[k] = NULL;
		snprintf(name, sizeof name, "scope-kind-%zu", i);
		if (gl_test_token_create(g_dsn, name, "finance", extra, t_scope_kind[i], sizeof t_scope_kind[i], NULL))
			return -1;
	}
	if (gl_test_daemon_start(&g_d, g_dsn, "log:\n  level: warn\n"
					/* the role matrix is hundreds of requests from one address in a
					 * few seconds: the request-rate limit is test_hardening's */
					"server:\n  rate_limit_per_ip: 0\n", (const char *const[]){"--no-ingest", NULL}))
		return -1;
	if (!g_d.token[0])
		return -1;
	role_tokens[0][0] = "viewer", role_tokens[0][1] = t_viewer;
	role_tokens[1][0] = "finance", role_tokens[1][1] = t_finance;
	role_tokens[2][0] = "hook", role_tokens[2][1] = t_hook;
	role_tokens[3][0] = "admin", role_tokens[3][1] = g_d.token;
	return 0;
}

static int teardown(void **state)
{
	int st = gl_test_daemon_stop(&g_d);
	PQfinish(g_c);
	return st == 0 ? 0 : -1;
}

static long get(const char *path, const char *token, int no_token, const char *from, struct gl_test_http *r)
{
	struct gl_test_http_opts o = {token, no_token, from};
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", path, NULL, 0, NULL, &o, r), 0);
	return r->status;
}

static long status_of(const char *path, const char *token, int no_token, const char *from)
{
	struct gl_test_http r;
	long st = get(path, token, no_token, from, &r);
	gl_test_http_fini(&r);
	return st;
}

static void test_401_without_or_with_a_bad_token(void **state)
{
	struct gl_test_http r;
	/* a different source address from the other tests: these failures
	 * count towards that address's limit only */
	const char *from = "127.0.0.2";
	assert_int_equal(status_of("/healthz", NULL, 1, from), 200);
	assert_int_equal(get("/v1/jobs", NULL, 1, from, &r), 401);
	assert_non_null(strstr(r.headers, "WWW-Authenticate: Bearer"));
	assert_non_null(strstr(r.body, "\"code\":\"unauthorized\""));
	gl_test_http_fini(&r);
	assert_int_equal(status_of("/v1/jobs", "glt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 0, from), 401);
	assert_int_equal(status_of("/v1/jobs", "not-a-token", 0, from), 401);
	assert_int_equal(status_of("/v1/jobs", t_expired, 0, from), 401);
	{
		struct gl_test_http_opts o = {NULL, 0, from};
		assert_int_equal(gl_test_http_ex(g_d.port, "GET", "/metrics", NULL, 0,
						 (const char *const[]){"Authorization: Basic dXNlcjpwYXNz", NULL}, &o, &r), 0);
		assert_int_equal(r.status, 401);
		gl_test_http_fini(&r);
	}
	/* unknown paths want a token too: no route map for strangers */
	assert_int_equal(status_of("/v1/nope", NULL, 1, from), 401);
	assert_int_equal(status_of("/v1/nope", NULL, 0, from), 404);
}

/* Every GET route × every identity (no token, each role, a finance token
 * of each kind of scope): allowed means neither 401 nor 403. A scoped
 * token reaches what its role does on the routes that filter by owner
 * (owner_scoped), and nothing else. */
static void test_role_matrix_on_every_route(void **state)
{
	int checked = 0;
	for (size_t i = 0; gl_routes[i].path; i++) {
		const struct gl_server_route *rt = &gl_routes[i];
		size_t n = strlen(rt->path);
		if (strcmp(rt->method, "GET") != 0 || rt->path[n - 1] == '/')
			continue;
		if (gl_auth_route_public(rt->role)) {
			assert_int_equal(status_of(rt->path, NULL, 1, NULL), 200);
			continue;
		}
		{
			char from[32]; /* an address per route: the failures must not add up to a block */
			snprintf(from, sizeof from, "127.0.1.%zu", i + 1);
			assert_int_equal(status_of(rt->path, NULL, 1, from), 401);
		}
		for (int k = 0; k < 4; k++) {
			long st = status_of(rt->path, role_tokens[k][1], 0, NULL);
			int want = gl_auth_role_allows(role_tokens[k][0], rt->role);
			if (want != (st != 403 && st != 401))
				fprintf(stderr, "%s as %s: %ld\n", rt->path, role_tokens[k][0], st);
			assert_int_equal(want, st != 403 && st != 401);
			if (!want)
				assert_int_equal(st, 403);
			checked++;
		}
		for (size_t k = 0; k < N_SCOPE_KINDS; k++) {
			long st = status_of(rt->path, t_scope_kind[k], 0, NULL);
			int want = gl_auth_role_allows("finance", rt->role) && rt->owner_scoped;
			if (want != (st != 403 && st != 401))
				fprintf(stderr, "%s as finance scoped %s: %ld\n", rt->path, scope_kinds[k][0], st);
			assert_int_equal(want, st != 403 && st != 401);
			if (!want)
				assert_int_equal(st, 403);
			checked++;
		}
		checked++; /* no token */
	}
	fprintf(stderr, "test_role_matrix_on_every_route: %d cells\n", checked);
	assert_true(checked >= (5 + (int)N_SCOPE_KINDS) * 5);
	/* the lattice itself, as documented */
	assert_int_equal(status_of("/v1/audit", t_finance, 0, NULL), 403);
	assert_int_equal(status_of("/v1/jobs", t_viewer, 0, NULL), 403);
	assert_int_equal(status_of("/v1/jobs", t_hook, 0, NULL), 403);
	assert_int_equal(status_of("/v1/ingest/runs", t_finance, 0, NULL), 200);
	/* runs are money per job, as /v1/jobs: finance and admin only, the
	 * detail route (a prefix, skipped above) too */
	assert_int_equal(status_of("/v1/runs", t_viewer, 0, NULL), 403);
	assert_int_equal(status_of("/v1/runs", t_hook, 0, NULL), 403);
	assert_int_equal(status_of("/v1/runs", t_finance, 0, NULL), 200);
	assert_int_equal(status_of("/v1/runs/0000000000000000", t_viewer, 0, NULL), 403);
	assert_int_equal(status_of("/v1/runs/0000000000000000", t_hook, 0, NULL), 403);
	assert_int_equal(status_of("/v1/runs/0000000000000000", t_finance, 0, NULL), 404);
	assert_int_equal(status_of("/v1/runs/0000000000000000", NULL, 1, "127.0.2.1"), 401);
}

/* Cost is money and per-user series per-person usage: a viewer may
 * forecast GPU-hours per team, not what /v1/chargeback shows to finance. */
static void test_viewer_sees_no_money_through_forecasts(void **state)
{
	struct gl_test_http r;
	assert_int_equal(get("/v1/forecast?metric=cost", t_viewer, 0, NULL, &r), 403);
	assert_non_null(strstr(r.body, "\"param\":\"metric\""));
	gl_test_http_fini(&r);
	assert_int_equal(get("/v1/forecast?aggregate=team,user", t_viewer, 0, NULL, &r), 403);
	assert_non_null(strstr(r.body, "\"param\":\"aggregate\""));
	gl_test_http_fini(&r);
	assert_int_equal(status_of("/v1/forecast?aggregate=account", t_viewer, 0, NULL), 403);
	assert_int_equal(status_of("/v1/forecast?metric=gpu_hours&aggregate=team", t_viewer, 0, NULL), 200);
	assert_int_equal(status_of("/v1/forecast?metric=cost", t_finance, 0, NULL), 200);
	assert_int_equal(status_of("/v1/forecast?aggregate=user", t_finance, 0, NULL), 200);
}

/* The same rule on /v1/queue: waits, job counts and GPUs per user or
 * account are per-person usage; per partition or team they are not. */
static void test_viewer_sees_no_per_user_queue(void **state)
{
	struct gl_test_http r;
	assert_int_equal(get("/v1/queue?aggregate=user", t_viewer, 0, NULL, &r), 403);
	assert_non_null(strstr(r.body, "\"param\":\"aggregate\""));
	gl_test_http_fini(&r);
	assert_int_equal(status_of("/v1/queue?aggregate=account&format=csv", t_viewer, 0, NULL), 403);
	assert_int_equal(status_of("/v1/queue?aggregate=partition", t_viewer, 0, NULL), 200);
	assert_int_equal(status_of("/v1/queue?aggregate=team", t_viewer, 0, NULL), 200);
	assert_int_equal(status_of("/v1/queue?aggregate=user", t_finance, 0, NULL), 200);
	assert_int_equal(status_of("/v1/queue?aggregate=account", g_d.token, 0, NULL), 200);
}

/* A scoped token on a route that does not filter by owner is refused before
 * the handler runs: the refused POST leaves no action, no stage, no audit
 * row of its own. The same body from an unscoped hook token is recorded,
 * so the body itself is acceptable. */
static void test_scoped_token_refused_before_a_write(void **state)
{
	static const char body[] = "{\"cluster\":\"testgpu\",\"job_id\":\"3\",\"policy\":\"scoped-test\","
				   "\"stage\":\"act\",\"ok\":true,\"exit_status\":0,"
				   "\"command\":[\"scancel\",\"3\"],\"owner\":\"teamc\"}";
	struct gl_test_http r;
	struct gl_test_http_opts o = {t_hook_scoped, 0, NULL};
	long long actions = gl_test_qint(g_c, "SELECT count(*) FROM hook_actions");
	long long stages = gl_test_qint(g_c, "SELECT count(*) FROM hook_stages");
	long long recorded = gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'");

	assert_int_equal(gl_test_http_ex(g_d.port, "POST", "/v1/hook/actions", body, strlen(body), NULL, &o, &r), 0);
	assert_int_equal(r.status, 403);
	assert_non_null(strstr(r.body, "does not support owner-scoped tokens"));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions"), actions);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_stages"), stages);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'hook.record'"), recorded);
	/* and nothing through the API either */
	o.token = t_hook;
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", "/v1/hook/actions", NULL, 0, NULL, &o, &r), 0);
	assert_int_equal(r.status, 200);
	assert_null(strstr(r.body, "scoped-test"));
	gl_test_http_fini(&r);
	/* a GET route without an owner filter is refused the same way */
	o.token = t_hook_scoped;
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", "/v1/hook/actions", NULL, 0, NULL, &o, &r), 0);
	assert_int_equal(r.status, 403);
	gl_test_http_fini(&r);
	/* whoami handles scopes */
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", "/v1/whoami", NULL, 0, NULL, &o, &r), 0);
	assert_int_equal(r.status, 200);
	/* the dashboard's money takes ISO 4217's minor units from here (USD: 2) */
	assert_non_null(strstr(r.body, "\"currency_minor_units\":2"));
	gl_test_http_fini(&r);

	o.token = t_hook;
	assert_int_equal(gl_test_http_ex(g_d.port, "POST", "/v1/hook/actions", body, strlen(body), NULL, &o, &r), 0);
	assert_int_equal(r.status, 201);
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions"), actions + 1);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM hook_actions WHERE policy = 'scoped-test'"), 1);
}

static int count_jobs(const char *token, const char *only_account)
{
	struct gl_test_http r;
	cJSON *j, *it;
	int n = 0;
	assert_int_equal(get("/v1/jobs?limit=10000", token, 0, NULL, &r), 200);
	j = cJSON_Parse(r.body);
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "jobs"))
	{
		const cJSON *a = cJSON_GetObjectItem(it, "account");
		if (!only_account || (cJSON_IsString(a) && !strcmp(a->valuestring, only_account)))
			n++;
	}
	cJSON_Delete(j);
	gl_test_http_fini(&r);
	return n;
}

static void test_scoped_token_sees_only_its_owner(void **state)
{
	int all = count_jobs(NULL, NULL), teama = count_jobs(NULL, "teama");
	assert_true(teama > 0 && teama < all);
	/* every row the scoped token sees is teama's, and it sees all of them */
	assert_int_equal(count_jobs(t_scoped, NULL), teama);
	assert_int_equal(count_jobs(t_scoped, "teama"), teama);
	/* /v1/runs groups only the jobs the token may see: teama's */
	{
		struct gl_test_http r;
		cJSON *j, *it;
		int runs = 0;
		assert_int_equal(get("/v1/runs?window=2026-11-22T00:00:00Z,2026-11-23T00:00:00Z", t_scoped, 0, NULL, &r), 200);
		j = cJSON_Parse(r.body);
		assert_non_null(j);
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "runs"))
		{
			assert_string_equal(cJSON_GetObjectItem(it, "account")->valuestring, "teama");
			runs++;
		}
		assert_true(runs > 0);
		cJSON_Delete(j);
		gl_test_http_fini(&r);
	}
	/* a route that does not filter by owner refuses a scoped token */
	assert_int_equal(status_of("/metrics", t_scoped, 0, NULL), 403);
	assert_int_equal(status_of("/v1/ingest/runs", t_scoped, 0, NULL), 403);
}

static void test_revoked_token_refused_within_the_cache_ttl(void **state)
{
	char tok[64];
	struct gl_test_out o;
	long st = 0;
	assert_int_equal(gl_test_token_create(g_dsn, "short-lived", "viewer", NULL, tok, sizeof tok, NULL), 0);
	assert_int_equal(status_of("/v1/ingest/runs", tok, 0, NULL), 200);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "token", "revoke", "short-lived", NULL), 0);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	/* docs/security.md: within 5 s (the token cache TTL). Poll, bounded
	 * far above that, from an address of its own (each 401 counts). */
	for (int i = 0; i < 300 && st != 401; i++) {
		st = status_of("/v1/ingest/runs", tok, 0, "127.0.0.6");
		if (st != 401)
			usleep(100000);
	}
	assert_int_equal(st, 401);
	/* the name is free again once revoked; a revoked id cannot be revoked twice */
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "token", "revoke", "short-lived", NULL), 0);
	assert_int_equal(o.status, 1);
	gl_test_out_fini(&o);
}

/* docs/security.md: a live name is unique. A second create under it says so
 * in words (not the INSERT's unique-violation text), prints no token and
 * writes nothing. */
static void test_duplicate_live_name_is_refused_in_words(void **state)
{
	char tok[64];
	struct gl_test_out o;
	assert_int_equal(gl_test_token_create(g_dsn, "twice", "viewer", NULL, tok, sizeof tok, NULL), 0);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "token", "create", "--name", "twice", "--role", "viewer", NULL), 0);
	assert_int_equal(o.status, 1);
	if (!strstr(o.err, "a live token is already named 'twice'"))
		fail_msg("stderr: %s", o.err);
	assert_null(strstr(o.err, "INSERT"));
	assert_null(strstr(o.out, "glt_"));
	gl_test_out_fini(&o);
}

/* A scope naming a synthetic chargeback row is no owner: refused as bad
 * input (exit 2), no token. */
static void test_scope_on_synthetic_row_is_refused(void **state)
{
	static const char *const names[] = {"owner=__idle__", "owner=__unallocated__"};
	for (size_t i = 0; i < 2; i++) {
		struct gl_test_out o;
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "token", "create", "--name", "synthetic", "--role", "viewer",
					     "--scope", names[i], NULL),
				 0);
		assert_int_equal(o.status, 2);
		if (!strstr(o.err, "is the name of a synthetic row"))
			fail_msg("stderr: %s", o.err);
		assert_null(strstr(o.out, "glt_"));
		gl_test_out_fini(&o);
	}
}

static void test_repeated_failures_are_rate_limited(void **state)
{
	const char *from = "127.0.0.9";
	for (int i = 0; i < 10; i++)
		assert_int_equal(status_of("/v1/jobs", "glt_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", 0, from), 401);
	{
		struct gl_test_http r;
		assert_int_equal(get("/v1/jobs", NULL, 0, from, &r), 429);
		assert_non_null(strstr(r.headers, "Retry-After:"));
		assert_non_null(strstr(r.body, "rate_limited"));
		gl_test_http_fini(&r);
	}
	/* others are served; public routes stay open */
	assert_int_equal(status_of("/v1/jobs", NULL, 0, NULL), 200);
	assert_int_equal(status_of("/healthz", NULL, 1, from), 200);
}

static long long wait_rows(const char *sql, long long want)
{
	long long n = -1;
	/* the writer is asynchronous: poll (bounded) until the rows land */
	for (int i = 0; i < 300 && n != want; i++) {
		n = gl_test_qint(g_c, sql);
		if (n != want)
			usleep(50000);
	}
	return n;
}

static void test_every_request_is_audited_never_the_token(void **state)
{
	const char *from = "127.0.0.3";
	PGresult *r;
	assert_int_equal(status_of("/v1/jobs?limit=1", NULL, 0, from), 200);
	assert_int_equal(status_of("/v1/jobs", NULL, 1, from), 401);
	assert_int_equal(status_of("/v1/jobs", t_viewer, 0, from), 403);
	/* /healthz answers are audited per address and minute instead, as
	 * http.probe rows with their count (tests/http/test_refusals.c) */
	assert_int_equal(status_of("/healthz", NULL, 1, from), 200);
	assert_int_equal(status_of("/v1/jobs?limit=abc", NULL, 0, from), 400);
	assert_int_equal(wait_rows("SELECT count(*) FROM audit_log WHERE source_addr = '127.0.0.3'", 4), 4);
	r = PQexec(g_c, "SELECT actor, object, outcome, detail->>'status', detail->>'route', coalesce(detail->>'reason', '')"
			" FROM audit_log WHERE source_addr = '127.0.0.3' ORDER BY audit_id");
	assert_int_equal(PQntuples(r), 4);
	{
		char admin_actor[48];
		snprintf(admin_actor, sizeof admin_actor, "token:%lld", g_d.token_id);
		static const char *const want[4][5] = {
			{NULL, "/v1/jobs", "ok", "200", ""},
			{"anonymous", "/v1/jobs", "denied", "401", "missing"},
			{NULL, "/v1/jobs", "denied", "403", "forbidden"},
			{NULL, "/v1/jobs", "error", "400", ""},
		};
		for (int i = 0; i < 4; i++) {
			if (i == 0 || i == 3)
				assert_string_equal(PQgetvalue(r, i, 0), admin_actor);
			else if (want[i][0])
				assert_string_equal(PQgetvalue(r, i, 0), want[i][0]);
			else
				assert_true(strncmp(PQgetvalue(r, i, 0), "token:", 6) == 0);
			assert_string_equal(PQgetvalue(r, i, 1), want[i][1]);
			assert_string_equal(PQgetvalue(r, i, 2), want[i][2]);
			assert_string_equal(PQgetvalue(r, i, 3), want[i][3]);
			assert_string_equal(PQgetvalue(r, i, 5), want[i][4]);
		}
	}
	PQclear(r);
	/* no token, not even a prefix of one, anywhere in the log or the table */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE (audit_log::text) LIKE '%glt\\_%'"), 0);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM api_tokens WHERE (api_tokens::text) LIKE '%glt\\_%'"), 0);
	/* token changes are audited too */
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'token.create'") >= 6);
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM audit_log WHERE action = 'token.revoke'") >= 0);
	/* and the writer says it lost nothing */
	{
		struct gl_test_http m;
		assert_int_equal(get("/metrics", NULL, 0, NULL, &m), 200);
		assert_non_null(strstr(m.body, "gpuledger_audit_rows_dropped_total{outcome=\"denied\"} 0\n"));
		assert_non_null(strstr(m.body, "gpuledger_auth_denied_total{reason=\"forbidden\"}"));
		gl_test_http_fini(&m);
	}
}

static void test_admin_endpoints(void **state)
{
	struct gl_test_http r;
	cJSON *j, *e;
	double cursor;
	struct gl_test_out o;

	assert_int_equal(get("/v1/audit?action=http.request&limit=2", NULL, 0, NULL, &r), 200);
	j = cJSON_Parse(r.body);
	e = cJSON_GetObjectItem(j, "entries");
	assert_int_equal(cJSON_GetArraySize(e), 2);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(e, 0), "action")->valuestring, "http.request");
	assert_int_equal(strlen(cJSON_GetObjectItem(cJSON_GetArrayItem(e, 0), "hash")->valuestring), 64);
	cursor = cJSON_GetObjectItem(j, "next_cursor")->valuedouble;
	assert_true(cursor > 1);
	cJSON_Delete(j);
	gl_test_http_fini(&r);
	{
		char path[128];
		snprintf(path, sizeof path, "/v1/audit?limit=1&cursor=%.0f", cursor);
		assert_int_equal(get(path, NULL, 0, NULL, &r), 200);
		j = cJSON_Parse(r.body);
		e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "entries"), 0);
		assert_true(cJSON_GetObjectItem(e, "seq")->valuedouble < cursor);
		cJSON_Delete(j);
		gl_test_http_fini(&r);
	}
	assert_int_equal(get("/v1/audit?bogus=1", NULL, 0, NULL, &r), 400);
	assert_non_null(strstr(r.body, "\"param\":\"bogus\""));
	gl_test_http_fini(&r);
	assert_int_equal(status_of("/v1/audit?from=yesterday", NULL, 0, NULL), 400);
	assert_int_equal(status_of("/v1/audit?from=2026-01-02&to=2026-01-01", NULL, 0, NULL), 400);

	assert_int_equal(get("/v1/audit/verify", NULL, 0, NULL, &r), 200);
	j = cJSON_Parse(r.body);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	assert_true(cJSON_GetObjectItem(j, "rows")->valuedouble > 10);
	cJSON_Delete(j);
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "audit", "verify", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_non_null(strstr(o.out, "audit verify: ok"));
	gl_test_out_fini(&o);

	assert_int_equal(get("/v1/tokens", NULL, 0, NULL, &r), 200);
	assert_null(strstr(r.body, "glt_"));
	assert_null(strstr(r.body, "sha256"));
	assert_non_null(strstr(r.body, "\"owners\":[\"account=teama\"]"));
	gl_test_http_fini(&r);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "token", "list", NULL), 0);
	assert_int_equal(o.status, 0);
	assert_null(strstr(o.out, "glt_"));
	assert_non_null(strstr(o.out, "finance-teama"));
	gl_test_out_fini(&o);
}

static void expect_sql_fails(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	if (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
		fprintf(stderr, "unexpectedly allowed: %s\n", sql);
	assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
	PQclear(r);
}

static void test_service_role_cannot_rewrite_the_log(void **state)
{
	char part[64];
	char sql[256];
	long long before = gl_test_qint(g_c, "SELECT count(*) FROM audit_log");
	assert_true(before > 0);
	expect_sql_fails(g_c, "UPDATE audit_log SET actor = 'someone else'");
	expect_sql_fails(g_c, "DELETE FROM audit_log");
	expect_sql_fails(g_c, "TRUNCATE audit_log");
	/* the partitions themselves, too (statement triggers are not inherited) */
	snprintf(part, sizeof part, "%s",
		 gl_test_qstr(g_c, "SELECT tableoid::regclass::text FROM audit_log ORDER BY audit_id DESC LIMIT 1"));
	snprintf(sql, sizeof sql, "TRUNCATE %s", part);
	expect_sql_fails(g_c, sql);
	snprintf(sql, sizeof sql, "DELETE FROM %s", part);
	expect_sql_fails(g_c, sql);
	expect_sql_fails(g_c, "TRUNCATE audit_log_default");
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM audit_log") >= before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_401_without_or_with_a_bad_token),
		cmocka_unit_test(test_role_matrix_on_every_route),
		cmocka_unit_test(test_viewer_sees_no_money_through_forecasts),
		cmocka_unit_test(test_viewer_sees_no_per_user_queue),
		cmocka_unit_test(test_scoped_token_sees_only_its_owner),
		cmocka_unit_test(test_scoped_token_refused_before_a_write),
		cmocka_unit_test(test_revoked_token_refused_within_the_cache_ttl),
		cmocka_unit_test(test_scope_on_synthetic_row_is_refused),
		cmocka_unit_test(test_repeated_failures_are_rate_limited),
		cmocka_unit_test(test_every_request_is_audited_never_the_token),
		cmocka_unit_test(test_admin_endpoints),
		cmocka_unit_test(test_duplicate_live_name_is_refused_in_words),
		cmocka_unit_test(test_service_role_cannot_rewrite_the_log),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
