/* Recorded report sets and budgets, with the real daemon and CLI on the real
 * Slurm testbed output and Philly jobs: a recorded month regenerates
 * byte-identical (nothing new written), late data makes a second version
 * beside the first naming what changed, GET /v1/reports lists the files
 * with the checksums sha256sum computes, the daemon makes the previous
 * month's set by itself, GET /v1/budgets agrees with /v1/chargeback, and a
 * budget alert fires once per threshold even across a daemon restart.
 * A stop that lands while the report set or a budget alert waits on a lock
 * leaves neither half-recorded: the restart records each exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/config.h"
#include "store/db_int.h"
#include "gl/report_sched.h"
#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TB "tests/fixtures/sacct/testbed/"
#define PH_FIELDS                                                                                                  \
	"JobID,JobIDRaw,Cluster,Partition,Account,User,Submit,Eligible,Start,End,ElapsedRaw,State,ReqTRES,AllocTRES," \
	"NodeList,DBIndex,JobName"

static char g_dsn[512], g_tmp[PATH_MAX], g_dir[PATH_MAX + 16], g_cfg[PATH_MAX + 16], g_alerts[PATH_MAX + 16],
	g_script[PATH_MAX + 16];
static struct gl_test_daemon g_d;
static int g_up;

static const char cost_yaml[] =
	"rates:\n  - model: a100\n    per_gpu_hour: \"2.50\"\n  - model: v100\n    per_gpu_hour: \"1.20\"\n"
	"  - model: \"*\"\n    per_gpu_hour: \"0.93\"\n"
	"owners:\n  - match: account\n    value: teama\n    team: vision\n"
	"  - match: account\n    value: teamb\n    team: language\n"
	"  - match: account\n    value: ee9e8c\n    team: research\n";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A few real Philly jobs (from the fixture) as sacct lines, plus one more. */
static int philly_lines(const char *path, int late)
{
	size_t len;
	char *buf = gl_test_read_file(gl_test_fixture("tests/fixtures/philly/sampled_jobs.json"), &len);
	cJSON *root = cJSON_ParseWithLength(buf, len), *it;
	FILE *o = fopen(path, "w");
	int k = 0;
	free(buf);
	if (!root || !o)
		return -1;
	cJSON_ArrayForEach(it, root)
	{
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(it, "start_time"));
		const char *en = cJSON_GetStringValue(cJSON_GetObjectItem(it, "end_time"));
		const char *sub = cJSON_GetStringValue(cJSON_GetObjectItem(it, "submitted_time"));
		cJSON *d;
		long long gpus = 0;
		char s1[32], s2[32], s3[32];
		if (!st || !en || !sub || strncmp(st, "2017-11", 7) || k == 300)
			continue;
		cJSON_ArrayForEach(d, cJSON_GetObjectItem(it, "detail"))
			gpus += cJSON_GetArraySize(cJSON_GetObjectItem(d, "gpus"));
		snprintf(s1, sizeof s1, "%.10sT%.8s", sub, sub + 11);
		snprintf(s2, sizeof s2, "%.10sT%.8s", st, st + 11);
		snprintf(s3, sizeof s3, "%.10sT%.8s", en, en + 11);
		k++;
		fprintf(o, "%d|%d|philly|gpu|%s|%s|%s|%s|%s|%s|0|COMPLETED|gres/gpu=%lld|gres/gpu=%lld|n1|%d|x\n", k, k,
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "vc")),
			cJSON_GetStringValue(cJSON_GetObjectItem(it, "user")), s1, s1, s2, s3, gpus, gpus, k);
	}
	if (late) /* a job sacct reported late: 128 GPUs for 200 hours in the closed month */
		fprintf(o, "9001|9001|philly|gpu|ee9e8c|lateuser|2017-11-20T00:00:00|2017-11-20T00:00:00|"
			   "2017-11-20T01:00:00|2017-11-28T09:00:00|720000|COMPLETED|gres/gpu=128|gres/gpu=128|n1|9001|late\n");
	fclose(o);
	cJSON_Delete(root);
	return k > 100 ? 0 : -1;
}

static int ingest(const char *cluster, const char *file, const char *fields)
{
	struct gl_test_out o;
	int st;
	if (gl_test_run(g_dsn, NULL, &o, "ingest", "sacct", "--cluster", cluster, "--file", file, "--fields", fields,
			NULL))
		return -1;
	st = o.status;
	gl_test_out_fini(&o);
	return st;
}

/* The config the CLI and the daemon share (the daemon's adds the budget). */
static void daemon_yaml(char *out, size_t n, const char *budget_amount)
{
	snprintf(out, n,
		 "%s"
		 "reports:\n  dir: %s\n  schedule: \"00:00\"\n  formats: csv,html\n"
		 "budgets:\n  - owner: vision\n    amount: \"%s\"\n"
		 "budget_alerts:\n  thresholds: \"50,75,90,100\"\n  interval_s: 10\n"
		 "  command: %s {owner} {threshold} {month}\n",
		 cost_yaml, g_dir, budget_amount, g_script);
}

static int setup(void **state)
{
	char path[PATH_MAX + 32], fields[1024], yaml[8192];
	snprintf(g_tmp, sizeof g_tmp, "%s/report-sched", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(g_tmp, 0755);
	snprintf(g_dir, sizeof g_dir, "%s/reports", g_tmp);
	snprintf(g_cfg, sizeof g_cfg, "%s/cli.yaml", g_tmp);
	snprintf(g_alerts, sizeof g_alerts, "%s/alerts.txt", g_tmp);
	snprintf(g_script, sizeof g_script, "%s/alert.sh", g_tmp);
	mkdir(g_dir, 0755);
	unlink(g_alerts);
	snprintf(yaml, sizeof yaml, "#!/bin/sh\necho \"$*\" >> '%s'\n", g_alerts);
	write_file(g_script, yaml);
	chmod(g_script, 0755);
	snprintf(path, sizeof path, "%s/philly.txt", g_tmp);
	if (philly_lines(path, 0) || gl_test_db_fresh("gl_test_report_sched", g_dsn, sizeof g_dsn) ||
	    gl_test_sacct_fields(fields, sizeof fields) || ingest("philly", path, PH_FIELDS) ||
	    ingest("testgpu", TB "sacct_alloc.txt", fields))
		return -1;
	daemon_yaml(yaml, sizeof yaml, "1000000");
	write_file(g_cfg, yaml);
	/* rates and owners are loaded by the daemon at start */
	if (gl_test_daemon_start(&g_d, g_dsn, cost_yaml, (const char *[]){"--no-ingest", NULL}))
		return -1;
	g_up = 1;
	return 0;
}

static int teardown(void **state)
{
	return g_up && gl_test_daemon_stop(&g_d) != 0 ? -1 : 0;
}

static char *record(const char *month, int want_status)
{
	struct gl_test_out o;
	char env[PATH_MAX + 32];
	char *out;
	snprintf(env, sizeof env, "GPULEDGER_CONFIG=%s", g_cfg);
	assert_int_equal(gl_test_run(g_dsn, (const char *[]){env, NULL}, &o, "report", "record", "--month", month, NULL),
			 0);
	if (o.status != want_status)
		fprintf(stderr, "report record: %s\n", o.err);
	assert_int_equal(o.status, want_status);
	out = strdup(o.out ? o.out : "");
	gl_test_out_fini(&o);
	return out;
}

static char *sha256sum(const char *dir, const char *name)
{
	char cmd[3 * PATH_MAX], *line = malloc(128);
	FILE *p;
	snprintf(cmd, sizeof cmd, "sha256sum '%s/%s'", dir, name);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(line, 128, p));
	pclose(p);
	line[64] = '\0';
	return line;
}

static void test_record_regenerate_and_late_data(void **state)
{
	char *out, path[PATH_MAX + 32], v1[PATH_MAX + 64], v2[PATH_MAX + 64];
	cJSON *j, *f;
	int v1_csv = 0, v2_csv = 0, checked = 0;
	struct stat st;

	out = record("2017-11", 0);
	assert_non_null(strstr(out, "2017-11: version 1"));
	free(out);
	out = record("2017-11", 0);
	assert_non_null(strstr(out, "unchanged, version 1 stands"));
	free(out);
	/* late data for the closed month: a second version, the first kept */
	snprintf(path, sizeof path, "%s/philly-late.txt", g_tmp);
	assert_int_equal(philly_lines(path, 1), 0);
	assert_int_equal(ingest("philly", path, PH_FIELDS), 0);
	out = record("2017-11", 0);
	out[strcspn(out, "\n")] = '\0'; /* the summary line; file names follow */
	assert_non_null(strstr(out, "2017-11: version 2, changed: "));
	assert_non_null(strstr(out, "owners"));
	assert_non_null(strstr(out, "top_cost"));
	assert_null(strstr(out, "owner_rules")); /* the rules did not change */
	free(out);
	snprintf(v1, sizeof v1, "%s/showback-2017-11-team-owners.csv", g_dir);
	snprintf(v2, sizeof v2, "%s/showback-2017-11-team-owners.v2.csv", g_dir);
	assert_int_equal(stat(v1, &st), 0);
	assert_int_equal(stat(v2, &st), 0);
	/* the late 25,600 GPU-hours are in v2's research line, not in v1's */
	{
		char *a = gl_test_read_file(v1, NULL), *b = gl_test_read_file(v2, NULL);
		assert_string_not_equal(a, b);
		free(a);
		free(b);
	}
	/* the listing: both versions, checksums as sha256sum computes them */
	j = gl_test_get_json(g_d.port, "/v1/reports?month=2017-11", 200);
	assert_non_null(j);
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(j, "files"))
	{
		const char *name = cJSON_GetObjectItem(f, "name")->valuestring;
		int ver = (int)cJSON_GetObjectItem(f, "version")->valuedouble;
		char *sum = sha256sum(g_dir, name);
		assert_string_equal(cJSON_GetObjectItem(f, "sha256")->valuestring, sum);
		free(sum);
		if (!strcmp(cJSON_GetObjectItem(f, "format")->valuestring, "csv"))
			ver == 1 ? v1_csv++ : v2_csv++;
		if (ver == 2)
			assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(f, "changed")) >= 2);
		checked++;
	}
	assert_int_equal(v1_csv, 12);
	assert_int_equal(v2_csv, 12);
	assert_int_equal(checked, 2 * (12 + 1)); /* formats csv,html: 12 tables + 1 page per version */
	cJSON_Delete(j);
}

static long long vision_spend_now(void)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/chargeback?window=2026-11&aggregate=team", 200), *it;
	long long v = -1;
	assert_non_null(j);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0), "items"))
	{
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, "vision"))
			v = (long long)cJSON_GetObjectItem(it, "total_micros")->valuedouble;
	}
	cJSON_Delete(j);
	return v;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, ch;
	if (!f)
		return 0;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

static int log_has(const char *needle, int times)
{
	size_t len;
	char *b = gl_test_read_file(g_d.log, &len), *p = b;
	int n = 0;
	while ((p = strstr(p, needle))) {
		n++;
		p++;
	}
	free(b);
	return n >= times;
}

/* A second session holding `LOCK TABLE table IN EXCLUSIVE MODE` (reads go
 * on, writes wait); released by finishing the session. */
static PGconn *lock_writes(const char *table)
{
	PGconn *c = gl_test_lock_table(g_dsn, table, "EXCLUSIVE");
	assert_non_null(c);
	return c;
}

/* Waits (60 s cap) for another session of this database to wait on a lock,
 * then SIGTERM and a bounded wait (a bound on a hang, not a measure): the
 * exit status, the log in *log, whether a session waited in *waited. It
 * asserts nothing: the caller releases its lock first, so a miss fails
 * that test alone instead of leaving the lock to hang the next ones. */
static int stop_while_locked(PGconn *c, char **log, int *waited)
{
	static const char *const waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
					   " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()";
	int st = 0, done = 0;
	time_t t0;
	for (int i = 0; i < 600 && gl_test_qint(c, waiting) < 1; i++)
		usleep(100000);
	*waited = gl_test_qint(c, waiting) >= 1;
	kill(g_d.pid, SIGTERM);
	for (t0 = time(NULL); !done && time(NULL) - t0 < 20;)
		if (!(done = waitpid(g_d.pid, &st, WNOHANG) == g_d.pid))
			usleep(20000);
	if (!done) {
		kill(g_d.pid, SIGKILL);
		waitpid(g_d.pid, &st, 0);
	}
	*log = gl_test_read_file(g_d.log, NULL);
	g_d.pid = 0;
	(void)gl_test_daemon_stop(&g_d);
	g_up = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The daemon's own 2026-10 set waits on the lock after its files are on
 * disk: the stop rolls the record back (files stay, to be written again
 * under the same names); the next test's daemon then records the set
 * once. */
static void test_stop_mid_report_set(void **state)
{
	char yaml[8192], *log = NULL;
	PGconn *c = PQconnectdb(g_dsn), *locker;
	int st, waited;
	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
	g_up = 0;
	locker = lock_writes("report_files");
	daemon_yaml(yaml, sizeof yaml, "1000000");
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, yaml, NULL), 0);
	g_up = 1;
	st = stop_while_locked(c, &log, &waited);
	PQfinish(locker);
	assert_true(waited);
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "reports:all: cut short by the stop"));
	free(log);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM report_files WHERE month = '2026-10-01'"), 0);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'report.generate'"
					 " AND object = '2026-10'"),
			 0);
	PQfinish(c);
	/* as setup left it, for the next test */
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cost_yaml, (const char *[]){"--no-ingest", NULL}), 0);
	g_up = 1;
}

static void test_daemon_schedule_and_budget_alerts_once(void **state)
{
	char yaml[8192], amount[64];
	long long spend = vision_spend_now(), budget;
	cJSON *j, *b;
	time_t t0;

	assert_true(spend > 0);
	/* a budget the month's spend is 80 % of: 50 and 75 fire, 90 and 100 do not */
	budget = spend * 100 / 80;
	snprintf(amount, sizeof amount, "%lld.%06lld", budget / 1000000, budget % 1000000);
	daemon_yaml(yaml, sizeof yaml, amount);
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
	g_up = 0;
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, yaml, NULL), 0);
	g_up = 1;
	for (t0 = time(NULL); count_lines(g_alerts) < 2 && time(NULL) - t0 < 60;)
		usleep(200 * 1000);
	usleep(500 * 1000);
	assert_int_equal(count_lines(g_alerts), 2);
	{
		char *a = gl_test_read_file(g_alerts, NULL);
		assert_non_null(strstr(a, "vision 50 2026-11\n"));
		assert_non_null(strstr(a, "vision 75 2026-11\n"));
		free(a);
	}
	/* /v1/budgets: spend equals chargeback's, % used 80, both thresholds listed */
	j = gl_test_get_json(g_d.port, "/v1/budgets", 200);
	assert_non_null(j);
	b = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "budgets"), 0);
	assert_non_null(b);
	assert_string_equal(cJSON_GetObjectItem(b, "owner")->valuestring, "vision");
	assert_int_equal((long long)cJSON_GetObjectItem(b, "spend_to_date_micros")->valuedouble, spend);
	assert_int_equal(atoi(cJSON_GetObjectItem(b, "pct_used")->valuestring), 80);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(b, "alerted_thresholds")), 2);
	{
		/* linear forecast: spend x month length / elapsed, elapsed read around the request */
		double fc = atof(cJSON_GetObjectItem(b, "forecast_month_end")->valuestring) * 1e6;
		double ms = 1793491200.0 /* 2026-11-01 */, len = 30 * 86400.0, now = (double)time(NULL);
		double lo = (double)spend * len / (now + 2 - ms) - 10000, hi = (double)spend * len / (now - 2 - ms) + 10000;
		assert_true(fc >= lo && fc <= hi);
		assert_string_equal(cJSON_GetObjectItem(b, "forecast_method")->valuestring, "linear");
		/* no backtest stands behind a linear forecast: no accuracy claimed */
		assert_true(cJSON_IsNull(cJSON_GetObjectItem(b, "forecast_accuracy")));
	}
	cJSON_Delete(j);
	/* the daemon also made last month's set on its own (schedule 00:00 of the 1st has passed) */
	j = gl_test_get_json(g_d.port, "/v1/reports?month=2026-10", 200);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "files")), 13);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "files"), 0), "trigger")
				    ->valuestring,
			    "system");
	cJSON_Delete(j);
	/* restart: the thresholds already sent are not sent again */
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
	g_up = 0;
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, yaml, NULL), 0);
	g_up = 1;
	/* a fresh log per start: the new daemon's first budget check */
	for (t0 = time(NULL); !log_has("budgets:all: 0 alerts sent", 1) && time(NULL) - t0 < 60;)
		usleep(200 * 1000);
	assert_true(log_has("budgets:all: 0 alerts sent", 1));
	assert_int_equal(count_lines(g_alerts), 2);
	{
		PGconn *c = PQconnectdb(g_dsn);
		assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM budget_alerts WHERE owner = 'vision'"), 2);
		assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'budget.alert'"), 2);
		assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM budget_alerts WHERE command_status = 'exit 0'"), 2);
		assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'report.generate'"
						 " AND object = '2026-10'"),
				 1);
		PQfinish(c);
	}
}

static void test_budget_and_reports_errors(void **state)
{
	cJSON *j = gl_test_get_json(g_d.port, "/v1/budgets?month=2031-01", 400);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring, "month");
	cJSON_Delete(j);
	j = gl_test_get_json(g_d.port, "/v1/reports?month=nope", 400);
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "param")->valuestring, "month");
	cJSON_Delete(j);
}

/* The scheduled source on a database with no jobs: the previous month is
 * before any data, which is no failure (and writes nothing); a reports.*
 * value that gets past the config (here set after loading) is a failure,
 * not a quiet "nothing to report". */
static void test_sched_no_data_quiet_other_errors_fail(void **state)
{
	char dsn[512], dir[PATH_MAX + 32], yaml[PATH_MAX + 64], summary[512];
	struct gl_config cfg;
	struct gl_err err = {0};
	PGconn *c;
	/* 2026-11-02T12:00:00Z: the 1st's 02:00 has passed, October is due */
	const int64_t now = 1793491200 + 86400 + 12 * 3600;

	assert_int_equal(gl_test_db_fresh("gl_test_report_nodata", dsn, sizeof dsn), 0);
	snprintf(dir, sizeof dir, "%s/nodata", g_tmp);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(yaml, sizeof yaml, "reports:\n  dir: %s\n", dir);
	assert_int_equal(gl_config_load_buf(&cfg, "t.yaml", yaml, strlen(yaml), &err), 0);
	c = PQconnectdb(dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);

	assert_int_equal(gl_report_sched_run(gl_db_store(c), &cfg, NULL, now, summary, sizeof summary, &err), 0);
	assert_non_null(strstr(summary, "before any data"));
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM report_files"), 0);

	free(cfg.reports_aggregate);
	cfg.reports_aggregate = strdup("bogus");
	memset(&err, 0, sizeof err);
	assert_true(gl_report_sched_run(gl_db_store(c), &cfg, NULL, now, summary, sizeof summary, &err) < 0);
	assert_non_null(strstr(err.msg, "bogus"));
	free(cfg.reports_aggregate);
	cfg.reports_aggregate = strdup("team");
	free(cfg.reports_share_idle);
	cfg.reports_share_idle = strdup("nonsense");
	memset(&err, 0, sizeof err);
	assert_true(gl_report_sched_run(gl_db_store(c), &cfg, NULL, now, summary, sizeof summary, &err) < 0);
	assert_non_null(strstr(err.msg, "nonsense"));
	PQfinish(c);
	gl_config_fini(&cfg);
}

/* reports.dir need not exist yet (gpuledger.example.yaml names var/reports,
 * which nothing else creates): recording makes it, as report showback --out
 * makes its directory. */
static void test_record_creates_reports_dir(void **state)
{
	char dir[PATH_MAX + 32], cfg[PATH_MAX + 32], env[PATH_MAX + 48], yaml[PATH_MAX + 1024], file[PATH_MAX + 96];
	struct gl_test_out o;
	struct stat st;
	snprintf(dir, sizeof dir, "%s/fresh-%ld", g_tmp, (long)getpid());
	snprintf(cfg, sizeof cfg, "%s/fresh.yaml", g_tmp);
	snprintf(yaml, sizeof yaml, "%sreports:\n  dir: %s\n  aggregate: account\n  formats: csv\n", cost_yaml, dir);
	write_file(cfg, yaml);
	assert_int_not_equal(stat(dir, &st), 0);
	snprintf(env, sizeof env, "GPULEDGER_CONFIG=%s", cfg);
	assert_int_equal(gl_test_run(g_dsn, (const char *[]){env, NULL}, &o, "report", "record", "--month", "2017-11", NULL),
			 0);
	if (o.status != 0)
		fprintf(stderr, "report record: %s\n", o.err);
	assert_int_equal(o.status, 0);
	gl_test_out_fini(&o);
	snprintf(file, sizeof file, "%s/showback-2017-11-account-owners.csv", dir);
	assert_int_equal(stat(file, &st), 0);
	assert_true(st.st_size > 0);
}

/* The 90 % alert waits on the lock: the stop rolls it back with its audit
 * row and runs no command; the restart sends it, once. */
static void test_stop_mid_budget_alert(void **state)
{
	char yaml[8192], amount[64], *log = NULL, *a;
	long long spend, budget;
	PGconn *c = PQconnectdb(g_dsn), *locker;
	time_t t0;
	int st, waited;
	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	if (!g_up) {
		assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cost_yaml, (const char *[]){"--no-ingest", NULL}), 0);
		g_up = 1;
	}
	spend = vision_spend_now();
	assert_true(spend > 0);
	/* the spend is 95 % of it: 90 is new (50 and 75 went out before) */
	budget = spend * 100 / 95;
	snprintf(amount, sizeof amount, "%lld.%06lld", budget / 1000000, budget % 1000000);
	daemon_yaml(yaml, sizeof yaml, amount);
	assert_int_equal(count_lines(g_alerts), 2);
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
	g_up = 0;
	locker = lock_writes("budget_alerts");
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, yaml, NULL), 0);
	g_up = 1;
	st = stop_while_locked(c, &log, &waited);
	PQfinish(locker);
	assert_true(waited);
	if (st)
		fprintf(stderr, "daemon log:\n%s\n", log);
	assert_int_equal(st, 0);
	assert_non_null(strstr(log, "budgets:all: cut short by the stop"));
	free(log);
	assert_int_equal(count_lines(g_alerts), 2);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM budget_alerts WHERE owner = 'vision'"), 2);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'budget.alert'"), 2);

	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, yaml, NULL), 0);
	g_up = 1;
	for (t0 = time(NULL); count_lines(g_alerts) < 3 && time(NULL) - t0 < 60;)
		usleep(200 * 1000);
	usleep(500 * 1000);
	assert_int_equal(count_lines(g_alerts), 3);
	a = gl_test_read_file(g_alerts, NULL);
	assert_non_null(strstr(a, "vision 90 2026-11\n"));
	assert_null(strstr(strstr(a, "vision 90 2026-11\n") + 1, "vision 90 2026-11\n"));
	free(a);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM budget_alerts WHERE owner = 'vision'"), 3);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'budget.alert'"), 3);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM budget_alerts WHERE command_status = 'exit 0'"), 3);
	PQfinish(c);
}

/* Without budget_alerts.command an alert is recorded and audited, and the
 * daemon's log says "recorded", not "sent" (it said sent). The spend is
 * 100 % of this budget: 100 is the one threshold not yet crossed. */
static void test_budget_alert_without_command_is_recorded(void **state)
{
	char yaml[8192];
	long long spend, budget;
	PGconn *c = PQconnectdb(g_dsn);
	time_t t0;
	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	if (!g_up) {
		assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, cost_yaml, (const char *[]){"--no-ingest", NULL}), 0);
		g_up = 1;
	}
	spend = vision_spend_now();
	assert_true(spend > 0);
	budget = spend;
	snprintf(yaml, sizeof yaml,
		 "%s"
		 "budgets:\n  - owner: vision\n    amount: \"%lld.%06lld\"\n"
		 "budget_alerts:\n  thresholds: \"50,75,90,100\"\n  interval_s: 10\n",
		 cost_yaml, budget / 1000000, budget % 1000000);
	assert_int_equal(gl_test_daemon_stop(&g_d), 0);
	g_up = 0;
	assert_int_equal(gl_test_daemon_start(&g_d, g_dsn, yaml, NULL), 0);
	g_up = 1;
	for (t0 = time(NULL); !log_has("budgets:all: 1 alerts recorded (no budget_alerts.command)", 1) &&
			      time(NULL) - t0 < 60;)
		usleep(200 * 1000);
	assert_true(log_has("budgets:all: 1 alerts recorded (no budget_alerts.command)", 1));
	assert_false(log_has("alerts sent", 1));
	assert_int_equal(count_lines(g_alerts), 3);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM budget_alerts WHERE owner = 'vision' AND threshold_pct = 100"
					    " AND command_status = 'not configured'"),
			 1);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'budget.alert'"), 4);
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_regenerate_and_late_data),
		cmocka_unit_test(test_stop_mid_report_set),
		cmocka_unit_test(test_daemon_schedule_and_budget_alerts_once),
		cmocka_unit_test(test_budget_and_reports_errors),
		cmocka_unit_test(test_sched_no_data_quiet_other_errors_fail),
		cmocka_unit_test(test_record_creates_reports_dir),
		cmocka_unit_test(test_stop_mid_budget_alert),
		cmocka_unit_test(test_budget_alert_without_command_is_recorded),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
