/* The daily rollup survives a restart of the real daemon: with the same
 * cost model, a restart rebuilds no day and the month is answered from the
 * days built before it; a rate changed from the 20th makes only the days
 * from the 20th stale, and those are rebuilt to what the jobs give live.
 * An owner rule changed from the 25th the same from the 25th (through
 * `rates load`, the same load). Real Philly jobs (tests/fixtures/philly)
 * through `ingest sacct`, real PostgreSQL, the real binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/strbuf.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MONTH "/v1/chargeback?window=2017-11&aggregate=team"

static char g_dsn[512];

static const char cfg_v1[] = "log:\n  level: info\n"
			     "rates:\n  - model: '*'\n    per_gpu_hour: \"2.00\"\n"
			     "owners:\n  - match: account\n    value: '*'\n    team: everyone\n";
/* the same, but 3.00 from 20 November */
static const char cfg_v2[] = "log:\n  level: info\n"
			     "rates:\n  - model: '*'\n    per_gpu_hour: \"2.00\"\n    to: 2017-11-20\n"
			     "  - model: '*'\n    per_gpu_hour: \"3.00\"\n    from: 2017-11-20\n"
			     "owners:\n  - match: account\n    value: '*'\n    team: everyone\n";

/* Waits (at most 60 s) for the daemon's first "rollup:all: N days rebuilt";
 * returns N, -1 when it never came. */
static int wait_rollup(const struct gl_test_daemon *d)
{
	for (int i = 0; i < 600; i++) {
		char *log = gl_test_read_file(d->log, NULL), *p = log;
		int n = -1, k;
		/* the run's summary line, not the lease's "runs on this instance" */
		while (n < 0 && (p = strstr(p, "rollup:all: ")) != NULL) {
			p += strlen("rollup:all: ");
			k = 0;
			if (sscanf(p, "%d days rebuil%n", &n, &k) < 1 || k == 0)
				n = -1;
		}
		free(log);
		if (n >= 0)
			return n;
		usleep(100 * 1000);
	}
	return -1;
}

/* The month's items and totals as text, to compare two answers. */
static char *month(int port)
{
	cJSON *j = gl_test_get_json(port, MONTH, 200), *it;
	struct gl_strbuf b = GL_STRBUF_INIT;
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
	gl_strbuf_printf(&b, "%s %.0f %.0f\n", cJSON_GetObjectItem(it, "name")->valuestring,
			 cJSON_GetObjectItem(it, "allocated_gpu_seconds")->valuedouble,
			 cJSON_GetObjectItem(it, "cost_micros")->valuedouble);
	gl_strbuf_printf(&b, "total %.0f\n",
			 cJSON_GetObjectItem(cJSON_GetObjectItem(j, "totals"), "total_micros")->valuedouble);
	cJSON_Delete(j);
	return gl_strbuf_steal(&b);
}

static long long q(const char *sql)
{
	return gl_test_qint_dsn(g_dsn, sql);
}

static void test_restart_keeps_rollup(void **state)
{
	struct gl_test_daemon d;
	struct gl_test_out o;
	char *a, *b, sql[400], t0[64];
	long long days, late, early;
	PGconn *c;

	(void)state;
	/* a first start loads the cost model (every day stale: there was none) */
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, cfg_v1, NULL), 0);
	assert_true(wait_rollup(&d) >= 0);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
	assert_int_equal(gl_test_cli(g_dsn, "rollup", "--days", "400", NULL), 0);
	days = q("SELECT count(*) FROM usage_daily_built");
	assert_true(days > 60); /* Oct 3 .. mid-Dec 2017 */
	assert_int_equal(q("SELECT count(*) FROM usage_daily_built WHERE day >= '2017-11-01' AND day < '2017-12-01'"),
			 30);
	c = PQconnectdb(g_dsn);
	snprintf(t0, sizeof t0, "%s", gl_test_qstr(c, "SELECT now()::text"));
	PQfinish(c);

	/* the same config: nothing rebuilt, nothing made stale */
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, cfg_v1, NULL), 0);
	assert_int_equal(wait_rollup(&d), 0);
	assert_int_equal(q("SELECT count(*) FROM usage_daily_built"), days);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM usage_daily_built WHERE built_at > '%s'", t0);
	assert_int_equal(q(sql), 0);
	a = month(d.port);
	/* answered from those days: still built, none since */
	assert_int_equal(q(sql), 0);
	assert_int_equal(gl_test_daemon_stop(&d), 0);

	/* 3.00 from the 20th: only the days from the 20th are stale and rebuilt */
	late = q("SELECT count(*) FROM usage_daily_built WHERE day >= '2017-11-20'");
	assert_true(late > 20);
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, cfg_v2, NULL), 0);
	assert_int_equal(wait_rollup(&d), late);
	assert_int_equal(q("SELECT count(*) FROM usage_daily_built"), days);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM usage_daily_built WHERE built_at > '%s' AND day < '2017-11-20'",
		 t0);
	assert_int_equal(q(sql), 0);
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM usage_daily_built WHERE built_at > '%s' AND day >= '2017-11-20'", t0);
	assert_int_equal(q(sql), late);
	b = month(d.port);
	assert_string_not_equal(a, b); /* the new price is in */
	free(a);
	/* and the rebuilt days give what the jobs give live */
	assert_true(gl_test_exec_dsn(g_dsn, "DELETE FROM usage_daily_built") > 0);
	a = month(d.port);
	assert_string_equal(a, b);
	free(a);
	free(b);
	assert_int_equal(gl_test_daemon_stop(&d), 0);

	/* an owner rule changed from the 25th (rates load: the same load) */
	assert_int_equal(gl_test_cli(g_dsn, "rollup", "--days", "400", NULL), 0);
	early = q("SELECT count(*) FROM usage_daily_built WHERE day < '2017-11-25'");
	assert_true(early > 40);
	{
		char path[PATH_MAX];
		FILE *f;
		snprintf(path, sizeof path, "%s/rollup-restart-owners.yaml",
			 getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
		f = fopen(path, "w");
		assert_non_null(f);
		/* a job keeps the owner of its start: jobs started from the
		 * 25th change, and they run on into the days after */
		fputs("rates:\n  - model: '*'\n    per_gpu_hour: \"2.00\"\n    to: 2017-11-20\n"
		      "  - model: '*'\n    per_gpu_hour: \"3.00\"\n    from: 2017-11-20\n"
		      "owners:\n  - match: account\n    value: '*'\n    team: everyone\n    to: 2017-11-25\n"
		      "  - match: account\n    value: '*'\n    team: later\n    from: 2017-11-25\n",
		      f);
		fclose(f);
		assert_int_equal(gl_test_run(g_dsn, NULL, &o, "rates", "load", path, NULL), 0);
		assert_int_equal(o.status, 0);
		assert_non_null(strstr(o.out, "(changed; "));
		gl_test_out_fini(&o);
		unlink(path);
	}
	assert_int_equal(q("SELECT count(*) FROM usage_daily_built WHERE day < '2017-11-25'"), early);
	assert_int_equal(q("SELECT count(*) FROM usage_daily_built WHERE day >= '2017-11-25'"), 0);
}

static int setup(void **state)
{
	return gl_test_philly_db("gl_test_rollup_restart", g_dsn, sizeof g_dsn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_keeps_rollup),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
