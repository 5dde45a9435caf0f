/* Reads from a hot standby (docs/scale.md, "Read replicas"): a real primary
 * and a streaming standby (pg_basebackup -R) started by the test, the real
 * daemon with database.read_dsn on the standby. Every read-only route
 * answers from the standby (none of them writes), a chargeback there
 * equals the primary's once replay caught up, audit rows of those reads go
 * to the primary, and with replay paused the answer reports the lag, or,
 * past database.max_replica_lag_s, comes from the primary and says so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/routes.h"
#include "lib/pgpair.h"
#include "lib/testlib.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct gl_test_pgpair g_p;
static struct gl_test_daemon g_read, g_bounded, g_primary, g_only;
static char g_fields[1024], g_cwd[PATH_MAX];

static const char rates[] = "currency: USD\nrates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n"
			    "  - model: \"*\"\n    per_gpu_hour: \"1.00\"\n"
			    "owners:\n  - match: account\n    value: \"*\"\n    team: research\n";

static int start(struct gl_test_daemon *d, const char *read_dsn, int max_lag)
{
	char cfg[4096];
	const char *args[] = {"--no-ingest", NULL};
	snprintf(cfg, sizeof cfg, "%slog:\n  level: info\ndatabase:\n  read_dsn: \"%s\"\n  max_replica_lag_s: %d\n", rates,
		 read_dsn, max_lag);
	return gl_test_daemon_start(d, g_p.app[0], cfg, args);
}

static int setup(void **state)
{
	if (!getcwd(g_cwd, sizeof g_cwd) || gl_test_sacct_fields(g_fields, sizeof g_fields) ||
	    gl_test_pgpair_start(&g_p, 0))
		return -1;
	if (gl_test_cli(g_p.app[0], "migrate", NULL) ||
	    gl_test_cli(g_p.app[0], "ingest", "sacct", "--cluster", "testgpu", "--file",
			gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), "--fields", g_fields, NULL))
		return -1;
	/* the standby first, the primary when it is gone (prefer-standby) */
	if (start(&g_read, g_p.app_read, 3600) || start(&g_bounded, g_p.app_read, 2))
		return -1;
	/* the same config, its read DSN the primary itself: the reference */
	if (start(&g_primary, g_p.app[0], 3600))
		return -1;
	/* the standby alone, no other host to fall to */
	if (start(&g_only, g_p.app[1], 3600))
		return -1;
	return gl_test_pgpair_catch_up(&g_p, 60);
}

static int teardown(void **state)
{
	gl_test_daemon_stop(&g_read);
	gl_test_daemon_stop(&g_bounded);
	gl_test_daemon_stop(&g_primary);
	gl_test_daemon_stop(&g_only);
	gl_test_pgpair_stop(&g_p);
	return 0;
}

/* GET path from d: the parsed body (200 wanted), its freshness checked
 * against want_standby, the freshness object removed for comparisons. */
static cJSON *get(struct gl_test_daemon *d, const char *path, int want_standby)
{
	struct gl_test_http r = {0};
	char h[64];
	cJSON *j, *f;
	assert_int_equal(gl_test_http(d->port, "GET", path, NULL, 0, NULL, &r), 0);
	if (r.status != 200)
		fprintf(stderr, "%s: %ld %s\n", path, r.status, r.body);
	assert_int_equal(r.status, 200);
	assert_non_null(gl_test_header(&r, "X-Served-By", h, sizeof h));
	assert_string_equal(h, want_standby ? "standby" : "primary");
	assert_non_null(gl_test_header(&r, "X-Commits-Through", h, sizeof h));
	j = cJSON_Parse(r.body);
	gl_test_http_fini(&r);
	if (!j)
		return NULL;
	f = cJSON_GetObjectItem(j, "freshness");
	if (cJSON_IsObject(j)) {
		assert_non_null(f);
		assert_string_equal(cJSON_GetObjectItem(f, "served_by")->valuestring, want_standby ? "standby" : "primary");
		cJSON_DeleteItemFromObject(j, "freshness");
	}
	return j;
}

/* Drops data_through's staleness_seconds (now minus through: two requests
 * a second boundary apart differ by one) after checking that b, asked
 * after a, is no fresher and at most `late` seconds staler. */
static void drop_staleness(cJSON *a, cJSON *b, double late)
{
	static const char *const lists[] = {"data_through", "past_data_through"};
	for (size_t l = 0; l < 2; l++) {
		cJSON *la = cJSON_GetObjectItem(a, lists[l]), *lb = cJSON_GetObjectItem(b, lists[l]);
		assert_int_equal(cJSON_GetArraySize(la), cJSON_GetArraySize(lb));
		for (int i = 0; i < cJSON_GetArraySize(la); i++) {
			cJSON *ea = cJSON_GetArrayItem(la, i), *eb = cJSON_GetArrayItem(lb, i);
			double sa = gl_test_jnum(ea, "staleness_seconds"), sb = gl_test_jnum(eb, "staleness_seconds");
			assert_true(sb >= sa && sb <= sa + late);
			cJSON_DeleteItemFromObject(ea, "staleness_seconds");
			cJSON_DeleteItemFromObject(eb, "staleness_seconds");
		}
	}
}

static void assert_same(cJSON *a, cJSON *b)
{
	char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
	assert_string_equal(x, y);
	free(x);
	free(y);
}

/* The month's chargeback from each of n daemons (served by the standby
 * where standby[i]), all asked within one second: the month is open, and
 * figures that run to now (an open job's unobserved time) move with the
 * clock (a few tries). */
static void get_together(struct gl_test_daemon *const *d, const int *standby, size_t n, cJSON **out)
{
	for (int attempt = 0;; attempt++) {
		time_t t0 = time(NULL);
		for (size_t i = 0; i < n; i++)
			out[i] = get(d[i], "/v1/chargeback?window=2026-11", standby[i]);
		if (time(NULL) == t0 || attempt == 9)
			return;
		for (size_t i = 0; i < n; i++)
			cJSON_Delete(out[i]);
	}
}

/* Whether one of paths asks route r: its path exactly, or below it for a
 * route that ends in '/' (an id follows). */
static int covered(const struct gl_server_route *r, const char *const *paths, size_t n)
{
	size_t len = strlen(r->path);
	for (size_t i = 0; i < n; i++) {
		size_t plen = strcspn(paths[i], "?");
		if (r->path[len - 1] == '/' ? plen > len && !strncmp(paths[i], r->path, len)
					    : plen == len && !strncmp(paths[i], r->path, len))
			return 1;
	}
	return 0;
}

/* Every route flagged replica_ok answers from the standby: a write on
 * the way (a lazily built rollup day, a cache table) would fail there
 * with "cannot execute ... in a read-only transaction". The list is held
 * to the route table: a route flagged later and not asked here fails. */
static void test_read_routes_on_standby(void **state)
{
	static char run_path[96];
	const char *paths[] = {
		"/v1/chargeback?window=2026-11", "/v1/chargeback?window=2026-11-22&step=day&format=csv",
		"/v1/idle?window=2026-11", "/v1/queue?window=2026-11", "/v1/capacity?window=2026-11",
		"/v1/inventory", "/v1/jobs?window=2026-11", "/v1/forecast?window=2026-11", "/v1/capacity/forecast",
		"/v1/reports", "/v1/budgets", "/v1/reports/showback?month=2026-11&format=csv",
		"/v1/inference?window=2026-11", "/v1/runs?window=2026-11", run_path,
	};
	size_t n = sizeof paths / sizeof *paths;
	for (size_t i = 0; i < n - 1; i++) {
		cJSON *j = get(&g_read, paths[i], 1);
		if (!strcmp(paths[i], "/v1/runs?window=2026-11")) {
			cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "runs"), 0);
			assert_non_null(run);
			snprintf(run_path, sizeof run_path, "/v1/runs/%s?window=2026-11",
				 cJSON_GetObjectItem(run, "id")->valuestring);
		}
		cJSON_Delete(j);
	}
	cJSON_Delete(get(&g_read, run_path, 1));
	for (size_t i = 0; gl_routes[i].path; i++)
		if (gl_routes[i].replica_ok && !covered(&gl_routes[i], paths, n)) {
			fprintf(stderr, "%s %s is flagged replica_ok and not asked of the standby here\n",
				gl_routes[i].method, gl_routes[i].path);
			fail();
		}
}

static void test_standby_equals_primary(void **state)
{
	long long before, after;
	cJSON *a, *b;
	time_t t0;
	before = gl_test_qint_dsn(g_p.app[0], "SELECT count(*) FROM audit_log WHERE action = 'http.request'");
	t0 = time(NULL);
	a = get(&g_read, "/v1/chargeback?window=2026-11&aggregate=user", 1);
	b = get(&g_primary, "/v1/chargeback?window=2026-11&aggregate=user", 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(a, "data_through")) > 0);
	drop_staleness(a, b, (double)(time(NULL) - t0) + 1);
	assert_true(gl_test_jnum(cJSON_GetObjectItem(a, "totals"), "allocated_gpu_seconds") > 0);
	assert_same(a, b);
	cJSON_Delete(a);
	cJSON_Delete(b);
	/* the reads were audited on the primary (the writer's own connection,
	 * after the response: up to 30 s on a loaded machine) */
	for (int k = 0; k < 300; k++) {
		after = gl_test_qint_dsn(g_p.app[0], "SELECT count(*) FROM audit_log WHERE action = 'http.request'");
		if (after >= before + 2)
			break;
		usleep(100000);
	}
	assert_true(after >= before + 2);
}

/* Replay paused, new jobs on the primary: the standby's answer says how
 * far behind it is (and lacks them); past max_replica_lag_s the read goes
 * to the primary, which has them, and the header says why. */
static void test_paused_replay(void **state)
{
	struct gl_test_http r = {0};
	char h[200];
	cJSON *a, *b, *f;
	long long gs_standby, gs_primary;
	assert_int_equal(gl_test_exec_dsn(g_p.su[1], "SELECT pg_wal_replay_pause()") >= 0, 1);
	{
		/* a job that the standby has not replayed */
		char path[PATH_MAX + 64], cmd[PATH_MAX * 2 + 200];
		snprintf(path, sizeof path, "%s/extra.psv", g_p.dir);
		snprintf(cmd, sizeof cmd,
			 "sed -n 2p %s/tests/fixtures/sacct/testbed/sacct_alloc.txt | sed 's/^2|2|/9002|9002|/; s/|3|00:00:00|$/|9003|00:00:00|/' > %s",
			 g_cwd, path);
		assert_int_equal(system(cmd), 0);
		assert_int_equal(gl_test_cli(g_p.app[0], "ingest", "sacct", "--cluster", "testgpu", "--file", path, "--fields",
					     g_fields, NULL),
				 0);
	}
	sleep(3);
	a = get(&g_read, "/v1/chargeback?window=2026-11", 1);
	f = NULL;
	assert_int_equal(gl_test_http(g_read.port, "GET", "/v1/chargeback?window=2026-11", NULL, 0, NULL, &r), 0);
	{
		cJSON *j = cJSON_Parse(r.body);
		f = cJSON_GetObjectItem(j, "freshness");
		assert_true(cJSON_GetObjectItem(f, "replica_lag_s")->valuedouble >= 2.0);
		cJSON_Delete(j);
	}
	gl_test_http_fini(&r);
	b = get(&g_bounded, "/v1/chargeback?window=2026-11", 0);
	assert_int_equal(gl_test_http(g_bounded.port, "GET", "/v1/chargeback?window=2026-11", NULL, 0, NULL, &r), 0);
	assert_non_null(gl_test_header(&r, "X-Read-Fallback", h, sizeof h));
	assert_non_null(strstr(h, "max_replica_lag_s"));
	gl_test_http_fini(&r);
	gs_standby = gl_test_jnum(cJSON_GetObjectItem(a, "totals"), "allocated_gpu_seconds");
	gs_primary = gl_test_jnum(cJSON_GetObjectItem(b, "totals"), "allocated_gpu_seconds");
	/* the job the standby lacks: 40 s on one GPU (the testbed's job 2) */
	assert_int_equal(gs_primary - gs_standby, 40);
	cJSON_Delete(a);
	cJSON_Delete(b);
	assert_int_equal(gl_test_exec_dsn(g_p.su[1], "SELECT pg_wal_replay_resume()") >= 0, 1);
	assert_int_equal(gl_test_pgpair_catch_up(&g_p, 60), 0);
	{
		struct gl_test_daemon *d[] = {&g_read, &g_primary};
		cJSON *j[2];
		get_together(d, (const int[]){1, 0}, 2, j);
		assert_same(j[0], j[1]);
		cJSON_Delete(j[0]);
		cJSON_Delete(j[1]);
	}
}

/* The standby crashes: a read DSN of the standby alone cannot be reached,
 * so the primary answers and says why; one listing both hosts
 * (prefer-standby) lets libpq take the primary, which says so. Both equal
 * the primary's own answer. Last: the standby stays down. */
static void test_standby_lost(void **state)
{
	struct gl_test_http r = {0};
	struct gl_test_daemon *d[] = {&g_only, &g_read, &g_primary};
	char h[200];
	cJSON *j[3];
	cJSON_Delete(get(&g_only, "/v1/inventory", 1));
	gl_test_pgpair_kill(&g_p, 1);
	assert_int_equal(gl_test_http(g_only.port, "GET", "/v1/chargeback?window=2026-11", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	assert_non_null(gl_test_header(&r, "X-Read-Fallback", h, sizeof h));
	assert_string_equal(h, "read_dsn unavailable");
	gl_test_http_fini(&r);
	get_together(d, (const int[]){0, 0, 0}, 3, j);
	assert_same(j[0], j[2]);
	assert_same(j[1], j[2]);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(j[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_routes_on_standby),
		cmocka_unit_test(test_standby_equals_primary),
		cmocka_unit_test(test_paused_replay),
		cmocka_unit_test(test_standby_lost),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
