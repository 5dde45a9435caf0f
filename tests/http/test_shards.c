/* A ledger sharded over PostgreSQL servers (docs/scale.md; sql/059):
 * three shard servers started here (the real `gpuledger db init/start`,
 * each a private cluster on its own socket with scram passwords) and the
 * central database on the suite's cluster reading them over postgres_fdw.
 * The real Philly jobs, split by virtual cluster into three sites, go one
 * site per shard and all three into a single database; the same month's
 * chargeback (JSON and CSV, built days and live ones), capacity and
 * showback report answer the same bytes from the central daemon as from
 * the single database's. With one shard stopped, the chargeback names its
 * cluster under clusters_unread and its totals are exactly the other two
 * sites' (never a smaller total as whole), and what cannot name it (CSV, the
 * report) is a 503 that does. A shard that takes connections and never
 * answers (a hung server) is found down by the daemon's one prober, and
 * requests meanwhile answer at once: none waits on its connect timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NSHARD 3
static const char *const SITES[NSHARD] = {"site-a", "site-b", "site-c"};
static const char *const SHARD_NAMES[NSHARD] = {"east", "west", "north"};

static char g_tmp[PATH_MAX];
static char g_cfg[NSHARD][PATH_MAX];
static char g_shard_dsn[NSHARD][1024];
static char g_one_dsn[512], g_central_dsn[512];
static struct gl_test_daemon g_one, g_central;

static const char COSTS[] = "owners:\n"
			    "  - match: account\n    value: ee9e8c\n    team: vision\n    project: p1\n"
			    "  - match: account\n    value: 6214e9\n    team: speech\n    project: p2\n"
			    "  - match: account\n    value: b436b2\n    team: nlp\n    project: p3\n"
			    "rates:\n  - model: '*'\n    per_gpu_hour: \"2.17\"\n";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		gl_test_die(path);
}

/* The Philly jobs as sacct lines, one file per site: a virtual cluster
 * (the Account field) goes to site (index of its first appearance) % 3,
 * and the Cluster field is the site's name. */
static void split_philly(char paths[NSHARD][PATH_MAX])
{
	static struct gl_test_philly_job jobs[5000];
	char all[PATH_MAX], line[4096], vcs[64][16];
	int nvc = 0;
	FILE *in, *out[NSHARD];
	snprintf(all, sizeof all, "%s/philly-all.txt", g_tmp);
	if (gl_test_philly_to_sacct(all, NULL, jobs, 5000) < 4000 || !(in = fopen(all, "r")))
		gl_test_die("philly");
	for (int k = 0; k < NSHARD; k++) {
		snprintf(paths[k], PATH_MAX, "%s/philly-%s.txt", g_tmp, SITES[k]);
		if (!(out[k] = fopen(paths[k], "w")))
			gl_test_die(paths[k]);
	}
	while (fgets(line, sizeof line, in)) {
		/* JobID|JobIDRaw|Cluster|Partition|Account|... */
		const char *p = line;
		char vc[16] = "";
		int i;
		for (i = 0; i < 4 && (p = strchr(p, '|')); i++)
			p++;
		if (p)
			snprintf(vc, sizeof vc, "%.*s", (int)strcspn(p, "|"), p);
		for (i = 0; i < nvc && strcmp(vcs[i], vc); i++)
			;
		if (i == nvc && nvc < 64)
			snprintf(vcs[nvc++], sizeof vcs[0], "%s", vc);
		{
			/* the Cluster field names the site */
			char *c = strstr(line, "|philly|");
			if (!c)
				gl_test_die("philly: no Cluster field");
			*c = '\0';
			fprintf(out[i % NSHARD], "%s|%s|%s", line, SITES[i % NSHARD], c + 8);
		}
	}
	fclose(in);
	for (int k = 0; k < NSHARD; k++)
		fclose(out[k]);
	assert_true(nvc >= NSHARD);
}

/* Shard k + 1: its own server, site k's jobs, the cost model, rolled up. */
static void make_shard(int k, const char *sacct, const char *costs)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/shard%d", g_tmp, k + 1);
	assert_int_equal(gl_test_shard_server(dir, k + 1, g_cfg[k], sizeof g_cfg[k], g_shard_dsn[k], sizeof g_shard_dsn[k]), 0);
	assert_int_equal(gl_test_cli_cfg(g_cfg[k], "ingest", "sacct", "--cluster", SITES[k], "--file", sacct, "--fields",
					 GL_TEST_PHILLY_FIELDS, NULL),
			 0);
	assert_int_equal(gl_test_cli_cfg(g_cfg[k], "rates", "load", costs, NULL), 0);
	assert_int_equal(gl_test_cli_cfg(g_cfg[k], "rollup", NULL), 0);
}

static int setup(void **state)
{
	char sacct[NSHARD][PATH_MAX], costs[PATH_MAX];
	const char *t = getenv("GL_TEST_TMP");
	(void)state;
	snprintf(g_tmp, sizeof g_tmp, "%s/shards", t ? t : "/tmp");
	mkdir(g_tmp, 0755);
	split_philly(sacct);
	snprintf(costs, sizeof costs, "%s/costs.yaml", g_tmp);
	write_file(costs, COSTS);

	/* the single database: the three sites as three clusters */
	if (gl_test_db_fresh("gl_test_shards_one", g_one_dsn, sizeof g_one_dsn))
		return -1;
	for (int k = 0; k < NSHARD; k++)
		if (gl_test_cli(g_one_dsn, "ingest", "sacct", "--cluster", SITES[k], "--file", sacct[k], "--fields",
				GL_TEST_PHILLY_FIELDS, NULL))
			return -1;
	if (gl_test_cli(g_one_dsn, "rates", "load", costs, NULL) || gl_test_cli(g_one_dsn, "rollup", NULL))
		return -1;

	for (int k = 0; k < NSHARD; k++)
		make_shard(k, sacct[k], costs);

	/* the central database reads the three */
	if (gl_test_db_fresh("gl_test_shards_central", g_central_dsn, sizeof g_central_dsn))
		return -1;
	for (int k = 0; k < NSHARD; k++)
		if (gl_test_shard_attach(g_central_dsn, k + 1, SHARD_NAMES[k], g_shard_dsn[k]))
			return -1;
	if (gl_test_cli(g_central_dsn, "rates", "load", costs, NULL))
		return -1;
	if (gl_test_daemon_start(&g_one, g_one_dsn, NULL, NULL) || gl_test_daemon_start(&g_central, g_central_dsn, NULL, NULL))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	gl_test_daemon_stop(&g_central);
	gl_test_daemon_stop(&g_one);
	for (int k = 0; k < NSHARD; k++)
		if (g_cfg[k][0])
			gl_test_cli_cfg(g_cfg[k], "db", "stop", NULL);
	return 0;
}

static char *get(struct gl_test_daemon *d, const char *path, long want)
{
	struct gl_test_http r = {0};
	char *body;
	assert_int_equal(gl_test_http(d->port, "GET", path, NULL, 0, NULL, &r), 0);
	if (r.status != want)
		fprintf(stderr, "%s: %ld %s\n", path, r.status, r.body);
	assert_int_equal(r.status, want);
	body = r.body;
	r.body = NULL;
	gl_test_http_fini(&r);
	return body;
}

/* data_through's staleness_seconds is the age of the data when asked: the
 * two daemons are asked one after the other, so under load a second may
 * pass between them. The figure is zeroed in both (in place, same length
 * or shorter); everything else must match. */
static void unstale(char *s)
{
	static const char k[] = "\"staleness_seconds\":";
	for (char *p = strstr(s, k); p; p = strstr(p, k)) {
		char *d = p + sizeof k - 1, *e = d;
		while (*e >= '0' && *e <= '9')
			e++;
		if (e > d) {
			*d = '0';
			memmove(d + 1, e, strlen(e) + 1);
		}
		p = d;
	}
}

/* The central daemon's answer is the single database's, byte for byte (but
 * the staleness, see unstale). */
static void same(const char *path)
{
	char *one = get(&g_one, path, 200), *cen = get(&g_central, path, 200);
	unstale(one);
	unstale(cen);
	if (strcmp(one, cen))
		fprintf(stderr, "%s\n--- single database:\n%.3000s\n--- sharded:\n%.3000s\n", path, one, cen);
	assert_string_equal(one, cen);
	free(one);
	free(cen);
}

static void test_sharded_equals_single(void **state)
{
	static const char *const paths[] = {
		"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team",
		"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=cluster,team&step=day",
		"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=account&format=csv",
		/* a year: the trace's months and the empty ones around them */
		"/v1/chargeback?window=2017-01-01,2018-01-01&aggregate=team",
		"/v1/chargeback?window=2017-01-01,2018-01-01&aggregate=cluster&step=month",
		/* a window that cuts days: its ends are read live from jobs */
		"/v1/chargeback?window=2017-10-03T06:30:00Z,2017-11-09T18:00:00Z&aggregate=user,cluster&step=week",
		"/v1/capacity?window=2017-10-01,2017-11-01&aggregate=cluster",
		/* each shard answers the capacity for its clusters (sql/110):
		 * several steps, other keys, one cluster named */
		"/v1/capacity?window=2017-10-01,2017-11-01&aggregate=gpu_model&step=week",
		"/v1/capacity?window=2017-10-01,2017-11-01&aggregate=partition&cluster=site-b",
		"/v1/capacity?window=2017-10-01,2017-11-01&aggregate=workload_type&format=csv",
		"/v1/reports/showback?month=2017-10&format=csv",
	};
	(void)state;
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
		same(paths[i]);
	/* and the figures are not all zero */
	{
		cJSON *j;
		char *b = get(&g_central, paths[0], 200);
		assert_non_null(j = cJSON_Parse(b));
		assert_true(gl_test_jnum(cJSON_GetObjectItem(j, "totals"), "cost_micros") > 1000000000LL);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "clusters_unread")), 0);
		/* no site has an inventory: each named by its own shard */
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "capacity_clusters_unknown")), NSHARD);
		cJSON_Delete(j);
		free(b);
	}
	/* the capacity check asked each shard once, over the central's dblink
	 * connection to it (sql/104, sql/110), not a remote probe per cluster and
	 * table, and as a set in FROM (planned with its window there) */
	for (int k = 0; k < NSHARD; k++)
		assert_true(gl_test_qint_dsn(g_shard_dsn[k], "SELECT count(*) FROM pg_stat_activity"
							   " WHERE query LIKE '%SELECT * FROM gl_capacity_missing_here(%'") >= 1);
	/* a GPU model name a shard's ingest noted (what its jobs trigger does
	 * for a job with that type) is canonical on the central after its next
	 * probe: no job's model is worked out row by row there */
	{
		PGconn *a = PQconnectdb(g_shard_dsn[0]), *b = PQconnectdb(g_central_dsn);
		PQclear(PQexec(a, "SELECT gl_gpu_model_note(ARRAY['NVIDIA A100-SXM4-80GB'])"));
		PQclear(PQexec(b, "SELECT * FROM gl_fleet_route()"));
		assert_string_equal(gl_test_qstr(b, "SELECT coalesce(max(model), '-') FROM public.gpu_model_canon"
						    " WHERE raw = 'nvidia a100-sxm4-80gb'"),
				    "a100");
		PQfinish(a);
		PQfinish(b);
	}
}

/* A shard whose rollup lags: a job of its site changed after its days
 * were built (its days marked stale there, as the single database's are),
 * while the other shards hold those days built. A day is built for the
 * central only when every shard holds it built, so the month is the single
 * database's still, and again once both have rolled up. */
/* The key of the first GPU job of site 1 that started on 2017-10-10 and
 * ended that day. */
static void site1_job(char key[64])
{
	PGconn *c = PQconnectdb(g_shard_dsn[1]);
	snprintf(key, 64, "%s",
		 gl_test_qstr(c, "SELECT job_key FROM jobs WHERE gpu_milli > 0 AND start_at >= '2017-10-10'"
				 " AND end_at < '2017-10-11' ORDER BY job_pk LIMIT 1"));
	PQfinish(c);
	assert_true(key[0] && !strchr(key, '\''));
}

/* Sets the job of site 1 key with set (an SQL list of assignments) on its
 * shard and in the single database alike. */
static void change_both(const char *key, const char *set)
{
	char sql[512];
	snprintf(sql, sizeof sql,
		 "UPDATE jobs SET %s WHERE job_key = '%s' AND cluster_id = (SELECT cluster_id FROM clusters WHERE name = '%s')",
		 set, key, SITES[1]);
	assert_int_equal(gl_test_exec_dsn(g_shard_dsn[1], sql), 1);
	assert_int_equal(gl_test_exec_dsn(g_one_dsn, sql), 1);
}

/* Rolls up shard 1 and the single database, then both answer the paths
 * alike. */
static void rollup_both(const char *const *paths, size_t n)
{
	assert_int_equal(gl_test_cli_cfg(g_cfg[1], "rollup", NULL), 0);
	assert_int_equal(gl_test_cli(g_one_dsn, "rollup", NULL), 0);
	for (size_t i = 0; i < n; i++)
		same(paths[i]);
}

static const char *const g_month_paths[] = {"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team",
					    "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=cluster,team&step=day",
					    "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team&unobserved=include"};
#define N_MONTH_PATHS (sizeof g_month_paths / sizeof *g_month_paths)

static void test_shard_lags_a_day(void **state)
{
	char key[64];
	(void)state;
	site1_job(key);
	change_both(key, "end_at = end_at + interval '1 hour'");
	assert_int_equal(gl_test_qint_dsn(g_shard_dsn[1], "SELECT count(*) FROM usage_daily_built WHERE day = '2017-10-10'"), 0);
	assert_int_equal(gl_test_qint_dsn(g_shard_dsn[0], "SELECT count(*) FROM usage_daily_built WHERE day = '2017-10-10'"), 1);
	for (size_t i = 0; i < N_MONTH_PATHS; i++)
		same(g_month_paths[i]);
	rollup_both(g_month_paths, N_MONTH_PATHS);
}

/* One shard's job still runs, never seen since it started: its time in
 * the month is unobserved, and the central says so as the single database
 * does (the other shards have no open job). */
static void test_one_shard_unseen(void **state)
{
	char key[64];
	(void)state;
	site1_job(key);
	change_both(key, "end_at = NULL, state = 'RUNNING'");
	for (size_t i = 0; i < N_MONTH_PATHS; i++)
		same(g_month_paths[i]);
	change_both(key, "end_at = start_at + interval '2 hours', state = 'COMPLETED'");
	rollup_both(g_month_paths, N_MONTH_PATHS);
}

/* Sets the shard's server settings (ALTER SYSTEM, then a reload). */
/* data_through's rows come in the single database's order (by cluster,
 * data, source) however the central gets them: a cluster with two
 * sources whose order by source is not their order by data (the Philly
 * split has one source a site), on both sides, then taken away. */
static void test_data_through_in_order(void **state)
{
	static const char add[] = "INSERT INTO ingest_state (source, cluster_id, watermark, updated_at)"
				  " SELECT s, cluster_id, '2017-12-01', now() FROM clusters, unnest(ARRAY['dcgm', 'zsched']) s"
				  " WHERE name = 'site-a' ON CONFLICT DO NOTHING";
	static const char del[] = "DELETE FROM ingest_state WHERE source IN ('dcgm', 'zsched')";
	char *b;
	(void)state;
	assert_int_equal(gl_test_exec_dsn(g_shard_dsn[0], add), 2);
	assert_int_equal(gl_test_exec_dsn(g_one_dsn, add), 2);
	b = get(&g_central, "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team", 200);
	/* by data: jobs (zsched) before usage (dcgm) */
	assert_non_null(strstr(b, "\"zsched\""));
	assert_true(strstr(b, "\"zsched\"") < strstr(b, "\"dcgm\""));
	free(b);
	same("/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team");
	same("/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=cluster&format=csv");
	assert_int_equal(gl_test_exec_dsn(g_shard_dsn[0], del), 2);
	assert_int_equal(gl_test_exec_dsn(g_one_dsn, del), 2);
}

static void shard_settings(int k, const char *const *sql, size_t n)
{
	PGconn *su = gl_test_shard_superuser(g_shard_dsn[k]);
	assert_non_null(su);
	for (size_t i = 0; i < n; i++) {
		PGresult *r = PQexec(su, sql[i]);
		if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
			fprintf(stderr, "%s: %s", sql[i], PQerrorMessage(su));
		assert_true(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK);
		PQclear(r);
	}
	PQfinish(su);
	usleep(300 * 1000); /* a reload reaches each backend at its next command */
}

/* What shard k's backends did while the central daemon answered path:
 * per backend (the log line prefix names it), the remote transactions
 * begun, the cursors declared and the cursors over the shard's jobs and
 * over its daily rows; and
 * the statements of the whole log that contain text. The backend that
 * declared most is the request's (the prober reads the shard too, one
 * transaction a probe). */
struct shard_log {
	int starts, cursors, job_cursors, daily_cursors, snap_cursors, text_hits;
};

static void shard_log_during(int k, const char *path, const char *text, struct shard_log *out)
{
	static const char *const on[] = {"ALTER SYSTEM SET log_statement = 'all'",
					 "ALTER SYSTEM SET log_line_prefix = 'gltest[%p] '", "SELECT pg_reload_conf()"};
	static const char *const off[] = {"ALTER SYSTEM RESET log_statement", "ALTER SYSTEM RESET log_line_prefix",
					  "SELECT pg_reload_conf()"};
	enum { MAXPID = 64 };
	struct shard_log per[MAXPID];
	int pids[MAXPID], n = 0, best = -1, cur = -1;
	char log[PATH_MAX], line[8192];
	struct stat sb;
	FILE *f;
	memset(per, 0, sizeof per);
	memset(out, 0, sizeof *out);
	assert_int_equal(gl_test_server_log(g_cfg[k], log, sizeof log), 0);
	shard_settings(k, on, sizeof on / sizeof *on);
	assert_int_equal(stat(log, &sb), 0);
	free(get(&g_central, path, 200));
	shard_settings(k, off, sizeof off / sizeof *off);
	assert_non_null(f = fopen(log, "r"));
	assert_int_equal(fseeko(f, sb.st_size, SEEK_SET), 0);
	while (fgets(line, sizeof line, f)) {
		int pid, i;
		/* a statement's text goes on over lines of its own */
		if (sscanf(line, "gltest[%d]", &pid) == 1) {
			for (i = 0; i < n && pids[i] != pid; i++)
				;
			if (i == n && n < MAXPID)
				pids[n++] = pid;
			cur = i < n ? i : -1;
			if (cur >= 0) {
				per[cur].starts += strstr(line, "statement: START TRANSACTION") != NULL;
				per[cur].cursors += strstr(line, "CURSOR FOR") != NULL;
			}
		} else if (cur >= 0 && per[cur].cursors) {
			per[cur].job_cursors += strstr(line, "public.jobs ") != NULL;
			per[cur].daily_cursors +=
				strstr(line, "public.usage_daily ") != NULL || strstr(line, "public.usage_daily_owner") != NULL;
			per[cur].snap_cursors += strstr(line, "public.sched_snapshots") != NULL;
		}
		out->text_hits += text && strstr(line, text) != NULL;
	}
	fclose(f);
	for (int i = 0; i < n; i++)
		if (best < 0 || per[i].cursors > per[best].cursors)
			best = i;
	if (best >= 0) {
		int hits = out->text_hits;
		*out = per[best];
		out->text_hits = hits;
	}
	fprintf(stderr,
		"  shard %s, %s: %d cursors (%d over jobs, %d over daily rows, %d over snapshots) in %d remote"
		" transactions\n",
		SHARD_NAMES[k], path, out->cursors, out->job_cursors, out->daily_cursors, out->snap_cursors, out->starts);
}

/* A request's reads on the central are one local transaction, so each
 * shard sees one remote transaction for the whole request, not one per
 * statement; the capacity query and a year's built days' sums are
 * answered by each shard for its own clusters (sql/115), not by the central
 * from every job or daily row of the window (docs/scale.md, "What it
 * costs"); data_through is each shard's view (sql/137), one cursor, not
 * three over its tables; the built days, the unobserved probe, the
 * capacity days and the clusters without capacity data are one query a
 * shard (12 cursors and a dblink query before, 8 and one query after),
 * and data_through with them (7 cursors); a month's daily rows are a
 * prepared statement sent to every shard at once (6 cursors); and
 * what a shard runs for the central it runs without JIT (a 15 ms capacity
 * query compiled for 6.4 s at 100,000 jobs a shard). */
static void test_one_remote_transaction_a_request(void **state)
{
	struct shard_log l;
	PGconn *c;
	(void)state;
	/* data_through: the shard's view, one cursor, not its tables */
	shard_log_during(0, "/v1/capacity?window=2017-10-01,2017-11-01&aggregate=cluster", "public.ingest_data_through", &l);
	assert_int_equal(l.snap_cursors, 0);
	assert_true(l.text_hits >= 1);
	/* what every chargeback asks every shard before its lines (the built
	 * days, the unobserved probe, the capacity days, the clusters without
	 * capacity data and data_through) is one query a shard, not four
	 * cursors and a dblink query */
	shard_log_during(0, "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team", "public.ingest_data_through", &l);
	assert_int_equal(l.starts, 1);
	assert_int_equal(l.text_hits, 0);
	assert_int_equal(l.snap_cursors, 0);
	/* and the month's daily rows are a statement each shard prepared,
	 * sent to every shard at once, not a cursor a shard: two EXECUTEs */
	shard_log_during(0, "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team", "EXECUTE gl_fp_", &l);
	assert_int_equal(l.starts, 1);
	assert_int_equal(l.text_hits, 2);
	assert_true(l.cursors >= 3);
	assert_true(l.cursors <= 6);
	assert_int_equal(l.job_cursors, 2);
	assert_int_equal(l.daily_cursors, 0);
	/* more days than a month: summed by the shards */
	shard_log_during(0, "/v1/chargeback?window=2017-01-01,2018-01-01&aggregate=team", "sum(alloc)::numeric", &l);
	assert_int_equal(l.starts, 1);
	assert_true(l.text_hits >= 1);
	assert_int_equal(l.daily_cursors, 0);
	assert_non_null(c = PQconnectdb(g_shard_dsn[0]));
	assert_string_equal(gl_test_qstr(c, "SELECT current_setting('jit')"), "on");
	assert_string_equal(gl_test_qstr(c, "SELECT j FROM gl_read_only_rows('SELECT current_setting(''jit'')') AS t(j text)"),
			    "off");
	PQfinish(c);
	shard_log_during(0, "/v1/capacity?window=2017-10-01,2017-11-01&aggregate=cluster", "gl_read_only_rows(", &l);
	assert_true(l.text_hits >= 1);
	assert_int_equal(l.job_cursors, 0);
}

static void test_shard_down_is_named(void **state)
{
	char *one, *cen, *err;
	cJSON *a, *b, *u;
	(void)state;
	assert_int_equal(gl_test_cli_cfg(g_cfg[2], "db", "stop", NULL), 0);
	/* a daemon thread probes again after at most 5 s */
	sleep(6);
	one = get(&g_one,
		  "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team&filter=cluster:%22site-a%22,%22site-b%22", 200);
	cen = get(&g_central, "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team", 200);
	assert_non_null(a = cJSON_Parse(one));
	assert_non_null(b = cJSON_Parse(cen));
	u = cJSON_GetObjectItem(b, "clusters_unread");
	assert_int_equal(cJSON_GetArraySize(u), 1);
	assert_string_equal(cJSON_GetArrayItem(u, 0)->valuestring, "site-c");
	/* exactly the two sites that answered, to the micro-unit */
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(b, "totals"), "cost_micros"),
			 gl_test_jnum(cJSON_GetObjectItem(a, "totals"), "cost_micros"));
	assert_int_equal(gl_test_jnum(cJSON_GetObjectItem(b, "totals"), "allocated_gpu_seconds"),
			 gl_test_jnum(cJSON_GetObjectItem(a, "totals"), "allocated_gpu_seconds"));
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(one);
	free(cen);
	/* answers that cannot carry the names refuse, naming them */
	err = get(&g_central, "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team&format=csv", 503);
	assert_non_null(strstr(err, "site-c"));
	assert_non_null(strstr(err, "north"));
	assert_non_null(strstr(err, "shard_unavailable"));
	free(err);
	err = get(&g_central, "/v1/reports/showback?month=2017-10&format=csv", 503);
	assert_non_null(strstr(err, "site-c"));
	free(err);
	/* back up: whole again */
	assert_int_equal(gl_test_cli_cfg(g_cfg[2], "db", "start", NULL), 0);
	sleep(6);
	same("/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team");
}


/* The central's backends on shard k that started since the shard's clock
 * read since (a timestamptz literal) that match which: postgres_fdw's by
 * their application name, dblink's by what the central sends over them. */
static long long shard_backends(int k, const char *since, const char *which)
{
	PGconn *c = PQconnectdb(g_shard_dsn[k]);
	long long n = gl_test_qintf(c,
				    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
				    " AND pid <> pg_backend_pid() AND backend_start >= '%s' AND %s",
				    since, which);
	PQfinish(c);
	return n;
}

static void shard_clocks(char since[NSHARD][64])
{
	for (int k = 0; k < NSHARD; k++) {
		PGconn *c = PQconnectdb(g_shard_dsn[k]);
		snprintf(since[k], sizeof since[k], "%s", gl_test_qstr(c, "SELECT now()::text"));
		assert_true(since[k][0] != '\0');
		PQfinish(c);
	}
}

#define FDW_BACKENDS "application_name = 'postgres_fdw'"
/* dblink's last query: a text sent (gl_read_only_rows) or a statement the
 * shard prepared (sql/140: what a chargeback asks first, at the warm),
 * executed after the set_config that makes it read-only (sql/143) */
#define DBLINK_BACKENDS "(query LIKE '%gl_read_only_rows(%' OR query LIKE '%; EXECUTE gl_fp_%')"

/* A central daemon opens its workers' sessions to every shard before it
 * says ready (sql/122): its first requests, one a worker, open no
 * connection to any shard. Then a shard stopped after the sessions were
 * opened is named, as when it was down before. */
static void test_sessions_open_before_ready(void **state)
{
	static const char *const paths[] = {
		"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team",
		"/v1/chargeback?window=2017-01-01,2018-01-01&aggregate=team",
		"/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=cluster",
		"/v1/capacity?window=2017-10-01,2017-11-01&aggregate=cluster",
	};
	struct gl_test_daemon d;
	char since[NSHARD][64], err_path[] = "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team&format=csv";
	int i;
	(void)state;
	shard_clocks(since);
	/* three worker sessions: two main, one heavy */
	assert_int_equal(gl_test_daemon_start(&d, g_central_dsn, "server:\n  workers: 2\n  heavy_workers: 1\n", NULL), 0);
	for (int k = 0; k < NSHARD; k++) {
		/* the prober's session is one more postgres_fdw backend */
		assert_true(shard_backends(k, since[k], FDW_BACKENDS) >= 4);
		assert_true(shard_backends(k, since[k], DBLINK_BACKENDS) >= 3);
	}
	shard_clocks(since);
	for (i = 0; i < 3; i++)
		for (size_t p = 0; p < sizeof paths / sizeof *paths; p++) {
			struct gl_test_http r = {0};
			assert_int_equal(gl_test_http(d.port, "GET", paths[p], NULL, 0, NULL, &r), 0);
			assert_int_equal(r.status, 200);
			assert_null(strstr(r.body, "clusters_unread\":[\""));
			gl_test_http_fini(&r);
		}
	for (int k = 0; k < NSHARD; k++)
		assert_int_equal(shard_backends(k, since[k], "true"), 0);

	assert_int_equal(gl_test_cli_cfg(g_cfg[2], "db", "stop", NULL), 0);
	/* named once the prober found it down (every 5 s), by every worker */
	for (i = 0; i < 30; i++) {
		struct gl_test_http r = {0};
		int named;
		assert_int_equal(gl_test_http(d.port, "GET", paths[0], NULL, 0, NULL, &r), 0);
		named = r.status == 200 && strstr(r.body, "\"clusters_unread\":[\"site-c\"]");
		gl_test_http_fini(&r);
		if (named)
			break;
		usleep(500000);
	}
	assert_true(i < 30);
	for (i = 0; i < 6; i++) {
		struct gl_test_http r = {0};
		assert_int_equal(gl_test_http(d.port, "GET", i % 2 ? err_path : paths[0], NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, i % 2 ? 503 : 200);
		assert_non_null(strstr(r.body, "site-c"));
		gl_test_http_fini(&r);
	}
	gl_test_daemon_stop(&d);
	assert_int_equal(gl_test_cli_cfg(g_cfg[2], "db", "start", NULL), 0);
	sleep(6);
}

/* A socket at the stopped shard's address that takes connections and never
 * answers: what a hung server or a dropped route looks like to libpq, which
 * waits for its connect_timeout (5 s, gl_shard_attach's default). */
static int hang_shard(int k)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	const char *h = strstr(g_shard_dsn[k], "host="), *e;
	int fd;
	assert_non_null(h);
	h += 5;
	e = strchr(h, ' ');
	snprintf(a.sun_path, sizeof a.sun_path, "%.*s/.s.PGSQL.5432", (int)(e - h), h);
	unlink(a.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	/* the central server's user connects: it needs write on the socket */
	assert_int_equal(chmod(a.sun_path, 0777), 0);
	assert_int_equal(listen(fd, 128), 0);
	return fd;
}

static int names_site_c(void)
{
	struct gl_test_http r = {0};
	int yes;
	assert_int_equal(gl_test_http(g_central.port, "GET", "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team",
				      NULL, 0, NULL, &r),
			 0);
	yes = r.status == 200 && strstr(r.body, "\"clusters_unread\":[\"site-c\"]") != NULL;
	gl_test_http_fini(&r);
	return yes;
}

static void test_hung_shard_does_not_hold_requests(void **state)
{
	int fd, i;
	double t0;
	(void)state;
	assert_int_equal(gl_test_cli_cfg(g_cfg[2], "db", "stop", NULL), 0);
	fd = hang_shard(2);
	/* the prober finds it down after one connect timeout */
	t0 = gl_test_now_s();
	for (i = 0; i < 60 && !names_site_c(); i++)
		sleep(1);
	assert_true(i < 60);
	fprintf(stderr, "hung shard named after %.1f s\n", gl_test_now_s() - t0);
	/* past the probe interval: a thread that probed for itself would now
	 * wait on the hung shard's connect timeout */
	sleep(6);
	for (i = 0; i < 8; i++) {
		double t;
		char *err;
		t0 = gl_test_now_s();
		assert_true(names_site_c());
		err = get(&g_central, "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team&format=csv", 503);
		assert_non_null(strstr(err, "site-c"));
		free(err);
		t = gl_test_now_s() - t0;
		if (t > 2.5)
			fprintf(stderr, "request %d: %.2f s\n", i, t);
		/* loose: well under the 5 s connect timeout, under any load */
		assert_true(t < 2.5);
	}
	close(fd);
}

/* A central started while a shard is down says ready within its bound
 * (WARM_BOUND_S, 15 s; a hung shard costs one connect timeout, 5 s) and
 * names the shard's clusters from its first request: refused (stopped),
 * then hung. The shard is stopped already (the test before). */
static void test_shard_down_at_start(void **state)
{
	(void)state;
	for (int hung = 0; hung < 2; hung++) {
		struct gl_test_daemon d;
		struct gl_test_http r = {0};
		int fd = hung ? hang_shard(2) : -1;
		double t0 = gl_test_now_s(), t;
		assert_int_equal(gl_test_daemon_start(&d, g_central_dsn, NULL, NULL), 0);
		t = gl_test_now_s() - t0;
		fprintf(stderr, "central ready %.1f s after its start with a shard %s\n", t, hung ? "hung" : "stopped");
		assert_true(t < 15 + 5);
		assert_int_equal(gl_test_http(d.port, "GET", "/healthz", NULL, 0, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		gl_test_http_fini(&r);
		assert_int_equal(gl_test_http(d.port, "GET", "/v1/chargeback?window=2017-10-01,2017-11-01&aggregate=team", NULL,
					      0, NULL, &r),
				 0);
		assert_int_equal(r.status, 200);
		assert_non_null(strstr(r.body, "\"clusters_unread\":[\"site-c\"]"));
		gl_test_http_fini(&r);
		gl_test_daemon_stop(&d);
		if (fd >= 0)
			close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sharded_equals_single),
		cmocka_unit_test(test_data_through_in_order),
		cmocka_unit_test(test_shard_lags_a_day),
		cmocka_unit_test(test_one_shard_unseen),
		cmocka_unit_test(test_one_remote_transaction_a_request),
		cmocka_unit_test(test_sessions_open_before_ready),
		cmocka_unit_test(test_shard_down_is_named),
		cmocka_unit_test(test_hung_shard_does_not_hold_requests),
		cmocka_unit_test(test_shard_down_at_start),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
