/* Several daemons and read replicas (docs/scale.md), two figures:
 *
 * 1. The fence's cost per ingest batch: the smallest batch transaction
 *    (the run row's counters and the watermark, as every batch writes) on
 *    the embedded cluster, without a fence, with the fence the daemon sets
 *    (sql/055's deferred check at COMMIT), and with the lease taken before
 *    each batch as well (the daemon takes it once per run, which is one
 *    batch or more). Rounds interleave the three so the shared machine's
 *    load falls on each alike; the best round of each is kept.
 * 2. Reads from a hot standby vs the primary: a real primary and a
 *    pg_basebackup standby on loopback TCP, the 4,206 real Philly jobs,
 *    GET /v1/chargeback over their three months (aggregate=user) from a
 *    daemon without read_dsn (the primary), one whose read_dsn is the
 *    primary itself (the lag check alone), and one reading from the
 *    standby; median of 40 requests each, interleaved.
 *
 * Needs the environment of bench/run.sh. Prints markdown rows. */
#include "store/db_int.h"
#include "gl/ingest.h"
#include "gl/jobs.h"
#include "gl/lease.h"
#include "lib/pgpair.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 5
#define BATCHES 300
#define READS 40

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* mode 0: no fence, 1: fence set once, 2: lease taken before each batch */
static double batches(PGconn *c, int cluster_id, int64_t run_id, int mode)
{
	struct gl_ingest_stats st;
	struct gl_err err = {0};
	int64_t token;
	double t0;
	gl_ingest_stats_init(&st, 0);
	if (gl_lease_unfence(gl_db_store(c), &err))
		gl_test_die(err.msg);
	if (mode == 1 && gl_lease_take(gl_db_store(c), "sacct:bench", "bench-holder", "bench", 60, &token, NULL, 0, &err))
		gl_test_die(err.msg);
	t0 = gl_test_now_s();
	for (int i = 0; i < BATCHES; i++) {
		st.lines_read++;
		if ((mode == 2 && gl_lease_take(gl_db_store(c), "sacct:bench", "bench-holder", "bench", 60, &token, NULL, 0, &err)) ||
		    gl_db_exec(c, "BEGIN", &err) || gl_ingest_watermark_set(gl_db_store(c), "sacct", cluster_id, 1700000000 + i, &err) ||
		    gl_ingest_run_update(gl_db_store(c), run_id, &st, "running", NULL, &err) || gl_db_exec(c, "COMMIT", &err))
			gl_test_die(err.msg);
	}
	gl_ingest_stats_fini(&st);
	return (gl_test_now_s() - t0) / BATCHES;
}

static void fence_cost(void)
{
	char dsn[512];
	struct gl_err err = {0};
	PGconn *c = NULL;
	int cluster_id;
	int64_t run_id;
	double best[3] = {1e9, 1e9, 1e9};
	if (gl_test_db_fresh("gl_bench_ha", dsn, sizeof dsn) || gl_db_connect_dsn(dsn, &c, &err) ||
	    gl_jobs_cluster_ensure(gl_db_store(c), "bench", "slurm", &cluster_id, &err) ||
	    gl_ingest_run_begin(gl_db_store(c), "sacct", cluster_id, "bench", &run_id, &err))
		gl_test_die(err.msg[0] ? err.msg : "no database");
	for (int r = 0; r < ROUNDS; r++)
		for (int m = 0; m < 3; m++) {
			double t = batches(c, cluster_id, run_id, m);
			if (t < best[m])
				best[m] = t;
		}
	fprintf(stderr, "bench_ha: batch without fence %.0f us, with fence %.0f us, lease + fence %.0f us\n",
		best[0] * 1e6, best[1] * 1e6, best[2] * 1e6);
	printf("| ingest batch with the fence (run row + watermark, one transaction) | %.0f µs | %.0f µs without | %.2fx |\n",
	       best[1] * 1e6, best[0] * 1e6, best[1] / best[0]);
	printf("| ingest batch with the lease taken before it and the fence | %.0f µs | %.0f µs without | %.2fx |\n",
	       best[2] * 1e6, best[0] * 1e6, best[2] / best[0]);
	PQfinish(c);
}

static double one_get(struct gl_test_daemon *d, const char *path)
{
	struct gl_test_http r = {0};
	double t0 = gl_test_now_s(), t;
	if (gl_test_http(d->port, "GET", path, NULL, 0, NULL, &r) || r.status != 200)
		gl_test_die("a chargeback failed");
	t = gl_test_now_s() - t0;
	gl_test_http_fini(&r);
	return t;
}

static void standby_reads(void)
{
	struct gl_test_pgpair p;
	struct gl_test_daemon d[3];
	const char *names[3] = {"primary (no read_dsn)", "primary through read_dsn (lag check)", "hot standby"};
	const char *args[] = {"--no-ingest", NULL};
	double lat[3][READS], med[3];
	char file[600], path[256], cfg[2048];
	static struct gl_test_philly_job jobs[5000];
	if (gl_test_pgpair_start(&p, 0) || gl_test_cli(p.app[0], "migrate", NULL))
		gl_test_die("no primary/standby pair");
	snprintf(file, sizeof file, "%s/philly.psv", p.dir);
	if (gl_test_philly_to_sacct(file, NULL, jobs, 5000) <= 0 ||
	    gl_test_cli(p.app[0], "ingest", "sacct", "--cluster", "philly", "--file", file, "--fields",
			GL_TEST_PHILLY_FIELDS, NULL) ||
	    gl_test_cli(p.app[0], "rollup", NULL) || gl_test_pgpair_catch_up(&p, 120))
		gl_test_die("loading the Philly jobs failed");
	for (int i = 0; i < 3; i++) {
		snprintf(cfg, sizeof cfg, "log:\n  level: warn\naudit:\n  requests: false\n%s%s%s",
			 i ? "database:\n  read_dsn: \"" : "", i == 1 ? p.app[0] : i == 2 ? p.app[1] : "", i ? "\"\n" : "");
		if (gl_test_daemon_start(&d[i], p.app[0], cfg, args))
			gl_test_die("a daemon did not start");
	}
	snprintf(path, sizeof path, "/v1/chargeback?window=2017-10-01T00:00:00Z,2018-01-01T00:00:00Z&aggregate=user");
	for (int i = 0; i < 3; i++)
		(void)one_get(&d[i], path); /* warm: the connection, the cache */
	for (int k = 0; k < READS; k++)
		for (int i = 0; i < 3; i++)
			lat[i][k] = one_get(&d[i], path);
	for (int i = 0; i < 3; i++) {
		qsort(lat[i], READS, sizeof lat[i][0], cmp_d);
		med[i] = lat[i][READS / 2];
		fprintf(stderr, "bench_ha: chargeback of 4,206 jobs (3 months, by user) from the %s: median %.1f ms\n",
			names[i], med[i] * 1e3);
		(void)gl_test_daemon_stop(&d[i]);
	}
	printf("| GET /v1/chargeback, 3 months of 4,206 Philly jobs, from the hot standby (median) | %.1f ms | %.1f ms from the primary | %.2fx |\n",
	       med[2] * 1e3, med[0] * 1e3, med[2] / med[0]);
	printf("| the same from the primary through read_dsn (the lag check alone) | %.1f ms | %.1f ms without read_dsn | %.2fx |\n",
	       med[1] * 1e3, med[0] * 1e3, med[1] / med[0]);
	gl_test_pgpair_stop(&p);
}

int main(void)
{
	printf("| figure | ours | limit / peer | ratio |\n|---|---|---|---|\n");
	fence_cost();
	standby_reads();
	return 0;
}
