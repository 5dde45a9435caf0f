/* The open jobs' sums (sql/107, docs/ingest.md "Sums of open jobs"): a
 * request reads them instead of the jobs where they give the same
 * integers. Two things are checked on a seeded fleet of open jobs in
 * sacct's format, ingested by the real binary (two captures, the second
 * ending some jobs and seeing others later; a poll's watermark between
 * them; jobs started today, on a window's first day, past their limit,
 * with a deadline between their sighting and now, without a limit; two
 * GPU models, three partitions, owners and rates that change mid-day;
 * and a second cluster of one owner-attribute set whose jobs start on
 * many days, two either side of a window's mid-day start, seen at two
 * moments days apart, then one without a sighting of its own, so that the
 * earliest sighting, from which a request reads jobs one by one, is a
 * row's older last_seen_at and then the watermark):
 *   - maintenance: after every change (ingest, a job's end, deletes, a
 *     serving endpoint) open_gpu_sums holds exactly the open jobs, per
 *     owner attributes, endpoints, sighting, start and deadline day;
 *   - exactness: every answer of the real daemon over real HTTP is the
 *     same with the sums as without them (open_gpu_sums_state off), byte
 *     for byte apart from staleness_seconds, before and after the days are
 *     rolled up and after an owner rule that starts mid-day.
 * Windows end before now, so that an answer does not move with the clock
 * between the two requests it is compared across. */
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
#include <time.h>

#define NJOBS 400
#define DAY 86400LL

static char g_dsn[512];
static time_t g_now;

static const char rates_yaml[] =
	"rates:\n"
	"  - model: a100\n    per_gpu_hour: \"2.50\"\n    to: \"%s\"\n"
	"  - model: a100\n    per_gpu_hour: \"3.00\"\n    from: \"%s\"\n"
	"  - model: v100\n    per_gpu_hour: \"1.10\"\n"
	"owners:\n"
	"  - match: account\n    value: a1\n    team: t1\n"
	"  - match: account\n    value: a2\n    team: t2\n"
	"  - match: partition\n    value: p1\n    team: tp\n"
	"%s";

static void iso(time_t t, char *out, size_t n)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void config(char *out, size_t n, const char *extra)
{
	char mid[32];
	iso(g_now - 9 * DAY - 4321, mid, sizeof mid);
	snprintf(out, n, rates_yaml, mid, mid, extra);
}

static uint64_t g_rng = 107;
static unsigned rnd(unsigned n)
{
	g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((g_rng >> 33) % n);
}

static const char *const limits[] = {"30-00:00:00", "2-00:00:00", "06:00:00", "UNLIMITED", "1-12:00:00", "00:50:00"};

struct job {
	time_t start;
	int gpus, model, limit;
};
static struct job g_jobs[NJOBS + 1];

/* sacct --parsable2's header, as both clusters' captures have it */
static const char sacct_header[] =
	"JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|Elapsed|"
	"ElapsedRaw|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|DBIndex|"
	"Suspended|WCKey|JobName\n";

/* capture at t: every job (first) or those of g % 3 != 0, of which g % 7
 * == 0 ended an hour before the capture */
static void write_capture(const char *path, time_t t, int second)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(sacct_header, f);
	for (int g = 1; g <= NJOBS; g++) {
		const struct job *j = &g_jobs[g];
		char s[32], e[32] = "Unknown";
		int ended = second && g % 7 == 0 && j->start < t - 3600;
		if (second && g % 3 == 0)
			continue;
		iso(j->start, s, sizeof s);
		s[19] = '\0';
		if (ended) {
			iso(t - 3600, e, sizeof e);
			e[19] = '\0';
		}
		fprintf(f,
			"%d|%d|c1|p%d|normal|a%d|g|1000|u%d|1000|%s|%s|%s|%s|00:00:00|%lld|0:0|%s|1|1|1|1000M|"
			"billing=1,cpu=1,gres/gpu=%d,node=1|billing=1,cpu=1,gres/gpu:%s=%d,gres/gpu=%d,node=1|"
			"%s|n%d|%d|00:00:00||job\n",
			g, g, g % 3, g % 5, g % 13, s, s, s, e, (long long)((ended ? t - 3600 : t) - j->start),
			ended ? "COMPLETED" : "RUNNING", j->gpus, j->model ? "v100" : "a100", j->gpus, j->gpus,
			limits[j->limit], g % 17, g);
	}
	fclose(f);
}

static void ingest_to(const char *cluster, const char *path, time_t at)
{
	char a[32];
	iso(at, a, sizeof a);
	assert_int_equal(gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", cluster, "--file", path, "--at", a, NULL), 0);
}

static void ingest(const char *path, time_t at)
{
	ingest_to("c1", path, at);
}

static void assert_sums_exact(const char *when);

/* Cluster c2: NJOBS2 jobs of one owner-attribute set (one account, user,
 * partition, model, no limit) started on many days, two of them either
 * side of a window's mid-day start (g_now - 14 days - 5000 s). Capture A
 * at ta lists them all, B at tb the even ones: the set's rows are seen at
 * two moments, its earliest sighting is A's (a request must read the jobs
 * started on A's day one by one). */
#define NJOBS2 40
static time_t c2_start(int g, time_t ta)
{
	time_t piece = g_now - 14 * DAY - 5000;
	return g == 1	? ta - 30 - (time_t)rnd(600)
	       : g == 2 ? piece - 3000
	       : g == 3 ? piece + 3000
			: ta - 3600 - (time_t)rnd(18 * DAY);
}

static void write_c2(const char *path, const time_t *start, time_t t, int every)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(sacct_header, f);
	for (int g = 1; g <= NJOBS2; g++) {
		char s[32];
		if (g % every)
			continue;
		iso(start[g], s, sizeof s);
		s[19] = '\0';
		fprintf(f,
			"%d|%d|c2|q1|normal|b1|g|1000|v1|1000|%s|%s|%s|Unknown|00:00:00|%lld|0:0|RUNNING|1|1|1|1000M|"
			"billing=1,cpu=1,gres/gpu=1,node=1|billing=1,cpu=1,gres/gpu:a100=1,gres/gpu=1,node=1|"
			"UNLIMITED|m%d|%d|00:00:00||job\n",
			g, g, s, s, s, (long long)(t - start[g]), g, g);
	}
	fclose(f);
}

/* c2's captures, then its watermark moved back before both: the set's
 * rows are seen at A's time and B's, and its earliest sighting (the day a
 * request reads per job from) is A's, not the latest row's */
static void c2_fleet(const char *tmp)
{
	char fa[600], fb[600], q[256];
	time_t start[NJOBS2 + 1], ta = g_now - 2 * DAY - DAY / 2, tb = g_now - DAY - DAY / 5, wm = g_now - 4 * DAY;
	/* A's sighting and the watermark an hour or more into their day:
	 * the jobs started just before them start on their day */
	ta -= ta % DAY < 3600 ? 7200 : 0;
	wm -= wm % DAY < 3600 ? 7200 : 0;
	for (int g = 1; g <= NJOBS2; g++)
		start[g] = c2_start(g, ta);
	start[4] = wm - 100;
	snprintf(fa, sizeof fa, "%s/open_sums-c2a.txt", tmp);
	snprintf(fb, sizeof fb, "%s/open_sums-c2b.txt", tmp);
	write_c2(fa, start, ta, 1);
	write_c2(fb, start, tb, 2);
	ingest_to("c2", fa, ta);
	ingest_to("c2", fb, tb);
	assert_sums_exact("c2's two captures");
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(DISTINCT su.last_seen_at) FROM open_gpu_sums su"
					    " JOIN open_gpu_sets st USING (set_id) JOIN clusters c USING (cluster_id)"
					    " WHERE c.name = 'c2'") == 2);
	snprintf(q, sizeof q,
		 "UPDATE ingest_state SET watermark = to_timestamp(%lld)"
		 " WHERE cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'c2')",
		 (long long)wm);
	assert_true(gl_test_exec_dsn(g_dsn, q) == 1);
}

/* then one job of the set without a sighting of its own (B's job 4,
 * started just before the watermark): the set's earliest sighting is the
 * watermark, below every row's last_seen_at */
static void c2_unseen(void)
{
	assert_true(gl_test_exec_dsn(g_dsn, "UPDATE jobs SET last_seen_at = NULL WHERE job_key = 'db:4'"
					    " AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = 'c2')") == 1);
	assert_sums_exact("a c2 job without its own sighting");
}

/* open_gpu_sums against the open jobs themselves: rows of one side the
 * other lacks */
static void assert_sums_exact(const char *when)
{
	static const char sql[] =
		"WITH s AS (SELECT st.cluster_id, st.account, st.user_name, st.partition, st.model_raw, st.endpoints,"
		"  su.last_seen_at, su.start_day, su.dl_day, sum(su.n) AS n, sum(su.gpu_micro) AS g, sum(su.held_micro) AS h"
		" FROM open_gpu_sums su JOIN open_gpu_sets st USING (set_id) GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9),"
		" j AS (SELECT j.cluster_id, j.account, j.user_name, j.partition, coalesce(j.gpu_type, j.node_gpu_model),"
		"  coalesce(ep.endpoints, '{}'), j.last_seen_at, (j.start_at AT TIME ZONE 'UTC')::date,"
		"  CASE WHEN j.timelimit_s >= 0 THEN ((j.start_at + j.timelimit_s * interval '1 second')"
		"   AT TIME ZONE 'UTC')::date END, count(*), sum(j.gpu_micro), sum(coalesce(j.phys_micro, j.gpu_micro))"
		" FROM jobs j LEFT JOIN job_endpoints ep ON ep.job_pk = j.job_pk"
		" WHERE j.end_at IS NULL AND j.gpu_milli > 0 AND j.start_at IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9)"
		" SELECT (SELECT count(*) FROM (SELECT * FROM s EXCEPT SELECT * FROM j) x)"
		" + (SELECT count(*) FROM (SELECT * FROM j EXCEPT SELECT * FROM s) y)";
	long long off = gl_test_qint_dsn(g_dsn, sql);
	if (off != 0)
		fail_msg("%s: %lld rows of open_gpu_sums differ from the open jobs", when, off);
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM open_gpu_sums WHERE n <= 0") == 0);
}

/* drops every "staleness_seconds": it moves with the clock */
static void strip(cJSON *o)
{
	cJSON *c;
	if (!o)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(o, "staleness_seconds");
	cJSON_ArrayForEach(c, o) strip(c);
}

static char *answer(int port, const char *path)
{
	struct gl_test_http r;
	char *s = NULL;
	assert_int_equal(gl_test_http(port, "GET", path, NULL, 0, NULL, &r), 0);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body);
	if (strstr(path, "format=csv"))
		s = strdup(r.body);
	else {
		cJSON *j = cJSON_Parse(r.body);
		assert_non_null(j);
		strip(j);
		s = cJSON_PrintUnformatted(j);
		cJSON_Delete(j);
	}
	gl_test_http_fini(&r);
	return s;
}

static void set_sums(int on)
{
	char q[96];
	snprintf(q, sizeof q, "UPDATE open_gpu_sums_state SET enabled = %s", on ? "true" : "false");
	assert_true(gl_test_exec_dsn(g_dsn, q) >= 0);
}

/* every path answered the same with the sums and without; returns how
 * many answers had unobserved time (the sums' part), for the caller to
 * know the comparison was not of empty answers */
static int assert_same(int port, const char *when)
{
	char a[32], b[32], c[32], d[32], paths[16][256];
	int n = 0, with_unseen = 0;
	time_t end = g_now - 600;
	iso(g_now - 30 * DAY + 777, a, sizeof a);
	iso(end, b, sizeof b);
	iso(g_now - 3 * DAY - (g_now % DAY), c, sizeof c);
	iso(g_now - 14 * DAY - 5000, d, sizeof d);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=team", a, b);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=team&unobserved=include", a, b);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=user,account", a, b);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=team&step=day", c, b);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=project&step=week", d, b);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=team,cluster&shareIdle=proportional",
		 d, b);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=workload_type", a, b);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=team&format=csv", a, b);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=user&filter=team:t1", a, b);
	/* under a day that crosses a midnight: one live piece over two days */
	iso(end - 23 * 3600 + 600, d, sizeof d);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=team", d, b);
	/* the same before the sightings' day: 22:00 to 20:00 the next day */
	iso(g_now - g_now % DAY - 26 * 3600, c, sizeof c);
	iso(g_now - g_now % DAY - 4 * 3600, d, sizeof d);
	snprintf(paths[n++], sizeof paths[0], "/v1/chargeback?window=%s,%s&aggregate=team&unobserved=include", c, d);
	for (int i = 0; i < n; i++) {
		char *on, *off;
		set_sums(1);
		on = answer(port, paths[i]);
		set_sums(0);
		off = answer(port, paths[i]);
		set_sums(1);
		if (strcmp(on, off)) {
			/* where they part: a whole answer is longer than a message */
			size_t k = 0;
			while (on[k] && on[k] == off[k])
				k++;
			k = k > 400 ? k - 400 : 0;
			fail_msg("%s: %s differs with the sums at byte %zu:\n%.900s\nwithout:\n%.900s", when, paths[i], k,
				 on + k, off + k);
		}
		with_unseen += !!strstr(on, "\"unobserved_gpu_seconds\":") && !strstr(on, "\"unobserved_gpu_seconds\":0,");
		free(on);
		free(off);
	}
	return with_unseen;
}

static int setup(void **state)
{
	(void)state;
	g_now = time(NULL);
	for (int g = 1; g <= NJOBS; g++) {
		struct job *j = &g_jobs[g];
		/* over 35 days, a tenth today, some on the 30-day window's first day */
		j->start = g % 10 == 0	 ? g_now - (time_t)rnd((unsigned)(g_now % DAY) + 1)
			   : g % 10 == 1 ? g_now - 30 * DAY + (time_t)rnd(20000)
					 : g_now - (time_t)rnd(35 * DAY);
		if (j->start > g_now - 7300)
			j->start = g_now - 7300 - (time_t)rnd(600);
		j->gpus = 1 + (int)rnd(4);
		j->model = rnd(4) == 0;
		j->limit = (int)rnd(sizeof limits / sizeof limits[0]);
	}
	return gl_test_db_fresh("gl_test_open_sums", g_dsn, sizeof g_dsn) ? -1 : 0;
}

static void test_sums_equal_jobs(void **state)
{
	char f1[600], f2[600], conf[2048], wm[200];
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	struct gl_test_daemon d;
	(void)state;
	snprintf(f1, sizeof f1, "%s/open_sums-1.txt", tmp);
	snprintf(f2, sizeof f2, "%s/open_sums-2.txt", tmp);
	write_capture(f1, g_now - 7200, 0);
	write_capture(f2, g_now - 3600, 1);
	ingest(f1, g_now - 7200);
	assert_sums_exact("first capture");
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT sum(n) FROM open_gpu_sums") == NJOBS);
	ingest(f2, g_now - 3600);
	assert_sums_exact("second capture (jobs ended, others seen later)");
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT sum(n) FROM open_gpu_sums") < NJOBS);
	/* a poll's watermark between the two captures: the jobs the second
	 * did not list are seen up to it; no sum moves */
	snprintf(wm, sizeof wm, "UPDATE ingest_state SET watermark = to_timestamp(%lld) WHERE source = 'sacct'",
		 (long long)(g_now - 5400));
	assert_true(gl_test_exec_dsn(g_dsn, wm) == 1);
	/* a job the fleet forgot (retention), and one serving an endpoint */
	assert_true(gl_test_exec_dsn(g_dsn, "DELETE FROM jobs WHERE job_key = 'db:5'") == 1);
	assert_sums_exact("a deleted job");
	assert_true(gl_test_exec_dsn(g_dsn, "INSERT INTO serving_endpoints (name, cluster_id)"
					    " SELECT 'chat', cluster_id FROM clusters WHERE name = 'c1'") == 1);
	assert_true(gl_test_exec_dsn(g_dsn, "INSERT INTO serving_jobs (job_pk, endpoint_id, model_name, cluster_id)"
					    " SELECT j.job_pk, e.endpoint_id, 'm', j.cluster_id FROM jobs j, serving_endpoints e"
					    " WHERE j.job_key IN ('db:11', 'db:22')") == 2);
	assert_sums_exact("jobs serving an endpoint");
	assert_true(gl_test_qint_dsn(g_dsn, "SELECT count(*) FROM open_gpu_sets WHERE endpoints = '{chat}'") >= 1);
	c2_fleet(tmp);

	config(conf, sizeof conf, "");
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, conf, (const char *[]){"--no-ingest", NULL}), 0);
	assert_true(assert_same(d.port, "no day built") > 0);
	c2_unseen();
	assert_int_equal(gl_test_cli(g_dsn, "rollup", "--days", "40", NULL), 0);
	assert_true(assert_same(d.port, "the days rolled up") > 0);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
	{
		/* an owner rule that starts in the middle of a day the jobs of
		 * partition p0 started on: jobs of that day before it and after
		 * it belong to different teams */
		char from[32], extra[256];
		iso(g_now - 12 * DAY - 3 * 3600 - 17, from, sizeof from);
		snprintf(extra, sizeof extra, "  - match: partition\n    value: p0\n    team: tnew\n    from: \"%s\"\n", from);
		config(conf, sizeof conf, extra);
	}
	assert_int_equal(gl_test_daemon_start(&d, g_dsn, conf, (const char *[]){"--no-ingest", NULL}), 0);
	assert_int_equal(gl_test_cli(g_dsn, "rollup", "--days", "40", NULL), 0);
	assert_true(assert_same(d.port, "an owner rule from mid-day") > 0);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_sums_equal_jobs, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
