/* A month's report with its idle shared (shareIdle proportional or owner)
 * must not take the file names of the unshared one: its figures differ.
 * Recorded sets are versioned per month, aggregate and shareIdle, but were
 * all named showback-2026-10-team-owners.csv, so recording October with
 * reports.share_idle: proportional after a set with none wrote its version 1
 * over the other's files: the first set's report_files rows then named files
 * whose sha256 no longer matched (an immutable month changed on disk).
 * `report showback --out DIR` overwrote the same way. The real binary on
 * tests/fixtures/review/sacct_share.txt and the 6 a100 of
 * tests/fixtures/conservation/scontrol_nodes.txt, a real PostgreSQL; the
 * checksums are sha256sum's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <libpq-fe.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dsn[512], g_tmp[PATH_MAX], g_dir[PATH_MAX + 16], g_out[PATH_MAX + 16];

static int write_config(const char *share, char *path, size_t n)
{
	FILE *f;
	snprintf(path, n, "%s/%s.yaml", g_tmp, share);
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f,
		"rates:\n  - model: a100\n    per_gpu_hour: \"3.60\"\n"
		"owners:\n  - match: account\n    value: teama\n    team: vision\n"
		"  - match: account\n    value: teamb\n    team: language\n"
		"reports:\n  dir: %s\n  share_idle: %s\n  formats: csv,html\n",
		g_dir, share);
	return fclose(f);
}

static int setup(void **state)
{
	snprintf(g_tmp, sizeof g_tmp, "%s/report-share-names", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	snprintf(g_dir, sizeof g_dir, "%s/reports", g_tmp);
	snprintf(g_out, sizeof g_out, "%s/out", g_tmp);
	/* a clean directory: names left by an earlier run would hide an overwrite */
	{
		char cmd[3 * PATH_MAX];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
		if (system(cmd))
			return -1;
	}
	if (mkdir(g_tmp, 0755) || gl_test_db_fresh("gl_test_report_share_names", g_dsn, sizeof g_dsn))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-09-01T00:00:00Z",
			NULL) ||
	    /* the same inventory seen again on 1 November: October's capacity is firm */
	    gl_test_cli(g_dsn, "ingest", "slurm-nodes", "--cluster", "c1", "--nodes",
			gl_test_fixture("tests/fixtures/conservation/scontrol_nodes.txt"), "--at", "2026-11-01T00:00:00Z",
			NULL))
		return -1;
	if (gl_test_cli(g_dsn, "ingest", "sacct", "--cluster", "c1", "--file",
			gl_test_fixture("tests/fixtures/review/sacct_share.txt"), NULL))
		return -1;
	{
		/* the rates and owner rules (the daemon loads them at start) */
		char cfg[PATH_MAX + 32];
		return write_config("none", cfg, sizeof cfg) || gl_test_cli(g_dsn, "rates", "load", cfg, NULL);
	}
}

/* `gpuledger --config CFG argv...` (at most 9, NULL-terminated) must exit 0 */
static void run_with(const char *share, const char *const *v)
{
	char cfg[PATH_MAX + 32];
	struct gl_test_out o;
	assert_int_equal(write_config(share, cfg, sizeof cfg), 0);
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "--config", cfg, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
				     v[8], NULL),
			 0);
	if (o.status != 0)
		fail_msg("%s %s (%s): exit %d: %s", v[0], v[1], share, o.status, o.err);
	gl_test_out_fini(&o);
}
#define RECORD (const char *const[]){"report", "record", "--month", "2026-10", NULL, NULL, NULL, NULL, NULL}

static int sha256sum(const char *dir, const char *name, char out[65])
{
	char cmd[3 * PATH_MAX];
	FILE *p;
	int ok;
	snprintf(cmd, sizeof cmd, "sha256sum '%s/%s' 2>/dev/null", dir, name);
	if (!(p = popen(cmd, "r")))
		return -1;
	ok = fgets(out, 65, p) != NULL && strlen(out) == 64;
	pclose(p);
	return ok ? 0 : -1;
}

static void test_recorded_sets_keep_their_files(void **state)
{
	PGconn *c;
	PGresult *r;
	int shares_seen = 0;

	run_with("none", RECORD);
	run_with("proportional", RECORD);
	run_with("owner", RECORD);

	c = PQconnectdb(g_dsn);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	/* three sets, each version 1; no two rows name the same file */
	assert_int_equal(gl_test_qint(c, "SELECT count(DISTINCT share_idle) FROM report_files"), 3);
	assert_int_equal(gl_test_qint(c, "SELECT max(version) FROM report_files"), 1);
	assert_int_equal(gl_test_qint(c, "SELECT count(*) - count(DISTINCT name) FROM report_files"), 0);
	/* every recorded file is on disk with the recorded checksum */
	r = PQexec(c, "SELECT share_idle, name, sha256 FROM report_files ORDER BY file_id");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	assert_true(PQntuples(r) >= 3 * 12);
	for (int i = 0; i < PQntuples(r); i++) {
		char sum[65];
		if (sha256sum(g_dir, PQgetvalue(r, i, 1), sum))
			fail_msg("%s (shareIdle %s) is not on disk", PQgetvalue(r, i, 1), PQgetvalue(r, i, 0));
		if (strcmp(sum, PQgetvalue(r, i, 2)))
			fail_msg("%s (shareIdle %s): sha256 %s on disk, %s recorded", PQgetvalue(r, i, 1),
				 PQgetvalue(r, i, 0), sum, PQgetvalue(r, i, 2));
	}
	PQclear(r);
	/* the unshared set keeps the names the docs give */
	r = PQexec(c, "SELECT name FROM report_files WHERE share_idle = 'none' AND name = "
		      "'showback-2026-10-team-owners.csv'");
	shares_seen = PQntuples(r);
	PQclear(r);
	assert_int_equal(shares_seen, 1);
	/* recording again finds each set unchanged: nothing new */
	run_with("none", RECORD);
	run_with("proportional", RECORD);
	assert_int_equal(gl_test_qint(c, "SELECT max(version) FROM report_files"), 1);
	PQfinish(c);
}

static char *slurp(const char *name, size_t *len)
{
	char path[2 * PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", g_out, name);
	return gl_test_read_file(path, len);
}

static void test_showback_out_keeps_both(void **state)
{
	char *none, *shared;
	size_t ln, ls;

	run_with("none", (const char *const[]){"report", "showback", "--month", "2026-10", "--out", g_out, NULL, NULL,
					       NULL});
	run_with("none", (const char *const[]){"report", "showback", "--month", "2026-10", "--out", g_out,
					       "--shareIdle", "proportional", NULL});
	none = slurp("showback-2026-10-team-owners.csv", &ln);
	shared = slurp("showback-2026-10-team-idle_proportional-owners.csv", &ls);
	/* the unshared file still has the unshared figures: no idle share on
	 * a line, while the shared one gives each team some */
	assert_non_null(strstr(none, "\r\nvision,"));
	assert_non_null(strstr(shared, "\r\nvision,"));
	assert_true(ln != ls || memcmp(none, shared, ln) != 0);
	{
		const char *line = strstr(none, "\r\nvision,") + 2;
		/* owner,gpu_seconds,gpu_hours,unpriced_gpu_seconds,cost,busy,idle,busy_cost,idle_cost,
		 * idle_share_gpu_hours,idle_share: the 11th cell */
		const char *p = line;
		for (int k = 0; k < 10; k++)
			p = strchr(p, ',') + 1;
		assert_memory_equal(p, "0.00,", 5);
		p = strstr(shared, "\r\nvision,") + 2;
		for (int k = 0; k < 10; k++)
			p = strchr(p, ',') + 1;
		assert_memory_not_equal(p, "0.00,", 5);
	}
	free(none);
	free(shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_sets_keep_their_files),
		cmocka_unit_test(test_showback_out_keeps_both),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
