/* A snapshot dated after now (a mistyped --at year) is refused with exit 2
 * naming --at, and nothing is written. It used to be stored: `ingest kube
 * --at 2030-01-01T00:00:00Z` then made the cluster's pods "ingested up to
 * 2030", so every real snapshot after it was refused as older, and
 * `ingest slurm-nodes --at 2035-...` stretched the nodes' spans to 2035.
 * The real binary on the repository's fixtures, a real PostgreSQL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KUBE "tests/fixtures/kube/openb-at-10326485.json"
#define DCGM "tests/fixtures/dcgm/handwritten_slurm_hpc_job.prom"
#define SNODES "tests/fixtures/conservation/scontrol_nodes.txt"
#define KNODES "tests/fixtures/nodes/kube/t0_2026-11-01T00.json"

static char g_dsn[512];

static int setup(void **state)
{
	return gl_test_db_fresh("gl_test_ingest_future_at", g_dsn, sizeof g_dsn);
}

static long long rows(const char *sql)
{
	return gl_test_qint_dsn(g_dsn, sql);
}

static void stamp(time_t t, char *buf, size_t n)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* gpuledger ingest SRC --cluster c --FLAG FILE --at AT: its exit status */
static int ingest(const char *src, const char *flag, const char *file, const char *at, char **err_out)
{
	struct gl_test_out o;
	int st;
	assert_int_equal(gl_test_run(g_dsn, NULL, &o, "ingest", src, "--cluster", "c1", flag, gl_test_fixture(file),
				     "--at", at, NULL),
			 0);
	st = o.status;
	if (err_out)
		*err_out = strdup(o.err ? o.err : "");
	gl_test_out_fini(&o);
	return st;
}

static void test_future_snapshot_refused(void **state)
{
	static const struct {
		const char *src, *flag, *file;
	} in[] = {{"kube", "--file", KUBE}, {"dcgm", "--file", DCGM}, {"slurm-nodes", "--nodes", SNODES},
		  {"kube-nodes", "--file", KNODES}};
	char later[32], past[32];
	/* an hour ahead: beyond any clock skew */
	stamp(time(NULL) + 3600, later, sizeof later);
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		char *err = NULL, want[64];
		int st = ingest(in[i].src, in[i].flag, in[i].file, later, &err);
		if (st != 2)
			fail_msg("ingest %s --at %s: exit %d, want 2: %s", in[i].src, later, st, err);
		snprintf(want, sizeof want, "--at %s is in the future", later);
		if (!strstr(err, want))
			fail_msg("ingest %s: stderr does not say '%s': %s", in[i].src, want, err);
		free(err);
	}
	/* nothing written: no cluster, run, pod, GPU or node span */
	assert_int_equal(rows("SELECT count(*) FROM clusters"), 0);
	assert_int_equal(rows("SELECT count(*) FROM ingest_runs"), 0);
	assert_int_equal(rows("SELECT count(*) FROM jobs"), 0);
	assert_int_equal(rows("SELECT count(*) FROM gpus"), 0);
	/* a snapshot of an hour ago goes in, and the one after it too: the
	 * cluster is not blocked */
	stamp(time(NULL) - 3600, past, sizeof past);
	assert_int_equal(ingest("kube", "--file", KUBE, past, NULL), 0);
	stamp(time(NULL) - 1800, past, sizeof past);
	assert_int_equal(ingest("kube", "--file", KUBE, past, NULL), 0);
	assert_true(rows("SELECT count(*) FROM jobs") > 0);
	/* a minute ahead (the other host's clock) is still accepted (kube-nodes:
	 * c1 is a Kubernetes cluster now) */
	stamp(time(NULL) + 60, later, sizeof later);
	assert_int_equal(ingest("kube-nodes", "--file", KNODES, later, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_future_snapshot_refused),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
