/* A cluster appears when data for it lands. A first ingest of a new cluster
 * that fails (every line bad, the source command failing) or is killed
 * before writing anything left the cluster listed in /v1/inventory and in
 * /metrics' inventory gauges, with no node, GPU or job ever ingested. The
 * failed runs must still be on record, naming their cluster. Real binary
 * (CLI and daemon) over real HTTP, real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dsn[512], g_dir[PATH_MAX];
static struct gl_test_daemon g_d;

/* The clusters whose first runs fail, and how. */
#define FAILED_SACCT "failed-sacct" /* every line bad */
#define FAILED_KUBE "failed-kube"   /* not a PodList */
#define FAILING_CMD "failing-cmd"   /* the daemon's sacct command exits 1 */
#define KILLED "killed-sacct"       /* SIGKILL while the run waits for input */
#define EMPTY "empty-file"          /* an empty file read without error */
#define OTHERS "others-lines"       /* every line another cluster's (skipped) */

static void write_file(const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;
	snprintf(path, sizeof path, "%s/%s", g_dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Polls sql (one integer) on a connection of its own until it reaches want;
 * a cap of 30 s, not a measure. */
static long long wait_for(const char *sql, long long want)
{
	long long v = -1;
	for (int i = 0; i < 300; i++) {
		if ((v = gl_test_qint_dsn(g_dsn, sql)) >= want)
			break;
		usleep(100000);
	}
	return v;
}

static int setup(void **state)
{
	char cfg[2048], cwd[PATH_MAX];
	const char *tmp = getenv("GL_TEST_TMP");
	snprintf(g_dir, sizeof g_dir, "%s/phantom.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(g_dir) || !getcwd(cwd, sizeof cwd))
		return -1;
	write_file("fail-flag", "");
	if (gl_test_db_fresh("gl_test_cluster_phantom", g_dsn, sizeof g_dsn))
		return -1;
	/* the daemon's own source: sacct answering "Connection refused" */
	snprintf(cfg, sizeof cfg,
		 "sources:\n  sacct:\n    - cluster: " FAILING_CMD "\n      command: %s/tests/tools/fake-sacct.sh\n"
		 "      interval_s: 3600\n      lookback_s: 3600\n      timeout_s: 60\n"
		 "      extra_args: --gl-fail-flag=%s/fail-flag --gl-fixture=%s/tests/fixtures/sacct/testbed/sacct_alloc.txt\n",
		 cwd, g_dir, cwd);
	return gl_test_daemon_start(&g_d, g_dsn, cfg, NULL);
}

static int teardown(void **state)
{
	return gl_test_daemon_stop(&g_d) == 0 ? 0 : -1;
}

/* The sacct fixture at path with its cluster c1 renamed cluster, in a file
 * of g_dir whose path goes to out. */
static void own_copy(const char *path, const char *cluster, char *out, size_t n)
{
	char *text = gl_test_read_file(path, NULL), *p = text, *q;
	FILE *f;
	snprintf(out, n, "%s/%s.txt", g_dir, cluster);
	f = fopen(out, "w");
	assert_non_null(f);
	while ((q = strstr(p, "|c1|"))) {
		fprintf(f, "%.*s|%s|", (int)(q - p), p, cluster);
		p = q + 4;
	}
	fputs(p, f);
	fclose(f);
	free(text);
}

/* Runs `gpuledger ingest source --cluster --file [--at]`; its exit status. */
static int ingest(const char *source, const char *cluster, const char *file, const char *at)
{
	struct gl_test_out o;
	int st;
	if (at)
		gl_test_run(g_dsn, NULL, &o, "ingest", source, "--cluster", cluster, "--file", file, "--at", at, NULL);
	else
		gl_test_run(g_dsn, NULL, &o, "ingest", source, "--cluster", cluster, "--file", file, NULL);
	st = o.status;
	gl_test_out_fini(&o);
	return st;
}

/* A sacct ingest reading a FIFO no one writes to: its run has started (the
 * cluster made, the run 'running'), then it is killed. */
static void killed_run(void)
{
	char fifo[PATH_MAX + 16], sql[256];
	int fd, st;
	pid_t pid;

	snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* held open for writing (O_RDWR never blocks on a FIFO), so the
	 * child's open returns and its read waits */
	fd = open(fifo, O_RDWR);
	assert_true(fd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fd);
		setenv("GPULEDGER_DSN", g_dsn, 1);
		execl(gl_test_bin(), "gpuledger", "ingest", "sacct", "--cluster", KILLED, "--file", fifo, (char *)NULL);
		_exit(127);
	}
	snprintf(sql, sizeof sql,
		 "SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
		 " WHERE c.name = '" KILLED "' AND r.status = 'running'");
	assert_int_equal(wait_for(sql, 1), 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	close(fd);
}

/* 1 when /v1/inventory lists a cluster of that name (kind in *kind). */
static int listed(const cJSON *inv, const char *name, const char **kind)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(inv, "clusters"))
	{
		if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, name)) {
			if (kind)
				*kind = cJSON_GetObjectItem(c, "kind")->valuestring;
			return 1;
		}
	}
	return 0;
}

static void test_failed_first_runs_list_no_cluster(void **state)
{
	static const char *const never[] = {FAILED_SACCT, FAILED_KUBE, FAILING_CMD, KILLED, EMPTY, OTHERS};
	const char *share = gl_test_fixture("tests/fixtures/review/sacct_share.txt");
	struct gl_test_http r;
	char file[PATH_MAX + 32], empty[PATH_MAX + 32];
	const char *kind = NULL;
	cJSON *inv, *runs, *it;

	write_file("bad.txt", "garbage\nmore garbage\n");
	write_file("empty.txt", "");
	snprintf(file, sizeof file, "%s/bad.txt", g_dir);
	snprintf(empty, sizeof empty, "%s/empty.txt", g_dir);
	assert_int_equal(ingest("sacct", FAILED_SACCT, file, NULL), 1);
	assert_int_equal(ingest("kube", FAILED_KUBE, file, "2026-11-01T00:00:00Z"), 1);
	/* read without error, nothing in it: nothing of the cluster landed */
	assert_int_equal(ingest("sacct", EMPTY, empty, NULL), 0);
	/* the fixture's jobs are cluster c1's: all skipped, exit 4 */
	assert_int_equal(ingest("sacct", OTHERS, share, NULL), 4);
	killed_run();
	assert_int_equal(wait_for("SELECT count(*) FROM ingest_runs r JOIN clusters c USING (cluster_id)"
				  " WHERE c.name = '" FAILING_CMD "' AND r.status = 'failed'",
				  1),
			 1);

	/* each run is on record, naming its cluster */
	runs = gl_test_get_json(g_d.port, "/v1/ingest/runs", 200);
	assert_non_null(runs);
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
		int seen = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItem(runs, "runs"))
		{
			const cJSON *cl = cJSON_GetObjectItem(it, "cluster");
			seen += cJSON_IsString(cl) && !strcmp(cl->valuestring, never[i]);
		}
		if (!seen)
			fail_msg("no run of %s in /v1/ingest/runs", never[i]);
	}
	cJSON_Delete(runs);

	/* but no cluster of theirs is listed, nor given inventory gauges */
	inv = gl_test_get_json(g_d.port, "/v1/inventory", 200);
	assert_non_null(inv);
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		if (listed(inv, never[i], NULL))
			fail_msg("/v1/inventory lists %s, of which nothing was ever ingested", never[i]);
	cJSON_Delete(inv);
	assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
		char want[128];
		snprintf(want, sizeof want, "gpuledger_inventory_gpus{cluster=\"%s\"", never[i]);
		if (strstr(r.body, want))
			fail_msg("/metrics has %s", want);
	}
	gl_test_http_fini(&r);

	/* once jobs land, the cluster is listed, with the kind its runs gave */
	own_copy(share, FAILED_SACCT, file, sizeof file);
	assert_int_equal(ingest("sacct", FAILED_SACCT, file, NULL), 0);
	inv = gl_test_get_json(g_d.port, "/v1/inventory", 200);
	assert_non_null(inv);
	assert_true(listed(inv, FAILED_SACCT, &kind));
	assert_string_equal(kind, "slurm");
	assert_false(listed(inv, KILLED, NULL));
	cJSON_Delete(inv);
	inv = gl_test_get_json(g_d.port, "/v1/inventory?cluster=" FAILED_SACCT, 200);
	assert_non_null(inv);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(inv, "clusters")), 1);
	cJSON_Delete(inv);
}

/* A cluster only a failed run of the other kind named does not keep that
 * kind: `ingest kube` by mistake, then the right `ingest sacct`, which was
 * refused ("is a kubernetes cluster, not slurm"). Once it has data, its kind
 * holds. */
static void test_failed_run_reserves_no_kind(void **state)
{
	const char *share = gl_test_fixture("tests/fixtures/review/sacct_share.txt");
	char file[PATH_MAX + 32];
	const char *kind = NULL;
	struct gl_test_out o;
	cJSON *inv;

	/* test_failed_first_runs_list_no_cluster left FAILED_KUBE with a
	 * failed kube run only */
	own_copy(share, FAILED_KUBE, file, sizeof file);
	assert_int_equal(ingest("sacct", FAILED_KUBE, file, NULL), 0);
	inv = gl_test_get_json(g_d.port, "/v1/inventory", 200);
	assert_non_null(inv);
	assert_true(listed(inv, FAILED_KUBE, &kind));
	assert_string_equal(kind, "slurm");
	cJSON_Delete(inv);
	/* with jobs, a kube run is refused as before, naming the kind */
	gl_test_run(g_dsn, NULL, &o, "ingest", "kube", "--cluster", FAILED_KUBE, "--file",
		    gl_test_fixture("tests/fixtures/kube/openb-at-10326485.json"), "--at", "2026-11-01T00:00:00Z", NULL);
	assert_int_equal(o.status, 1);
	if (!strstr(o.err, "is a slurm cluster, not kubernetes"))
		fail_msg("unexpected: %s", o.err);
	gl_test_out_fini(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failed_first_runs_list_no_cluster),
		cmocka_unit_test(test_failed_run_reserves_no_kind),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
