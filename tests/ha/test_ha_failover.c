/* Failover under load (make test-ha; docs/scale.md, "Failover"): a real
 * primary and streaming standby, the real daemon with database.dsn
 * listing both (target_session_attrs=read-write) polling a sacct source
 * and anchoring the audit chain every second, API reads and one-shot
 * ingest batches (`gpuledger ingest sacct`, one new job each) running all
 * along; the primary is killed (SIGKILL to the postmaster and its
 * children) and the standby promoted with pg_ctl promote. Measured and
 * printed: the seconds until the API answers again (< 10 s asserted) and
 * until an ingest is acknowledged again, and the acknowledged batches the
 * new primary lacks — with asynchronous replication (reported) and with
 * synchronous_commit = remote_apply (0 asserted). The daemon's own
 * periodic ingest resumes on the new primary, and `gpuledger audit verify`
 * passes there (with the anchors written across the failover, under
 * synchronous replication). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/pgpair.h"
#include "lib/testlib.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCHES 4000

static char g_cwd[PATH_MAX], g_fields[1024];

struct load {
	struct gl_test_pgpair *p;
	struct gl_test_daemon *d;
	int n_acked, n_tried;
	int acked[MAX_BATCHES]; /* job numbers whose ingest exited 0 */
	int next_job;
	double last_ok_read, last_ok_ingest;
	double first_read_after, first_ingest_after; /* seconds after the kill; -1 none yet */
};

/* One new finished job in its own file, ingested by the real CLI against
 * both hosts (read-write): exit 0 is an acknowledged batch. */
static void one_batch(struct load *l, double t_kill)
{
	char path[PATH_MAX], line[1024];
	FILE *f;
	int k = ++l->next_job;
	snprintf(path, sizeof path, "%s/batch.psv", l->p->dir);
	snprintf(line, sizeof line,
		 "%d|%d|testgpu|a100|normal|teama|alice|2001|alice|2001|2026-11-22T10:00:00|2026-11-22T10:00:00|"
		 "2026-11-22T10:00:01|2026-11-22T10:01:01|00:01:00|60|0:0|COMPLETED|1|1|1|1000M|"
		 "billing=1,cpu=1,gres/gpu=1,mem=1000M,node=1|billing=1,cpu=1,gres/gpu:a100=1,gres/gpu=1,mem=1000M,node=1|"
		 "00:02:00|gpu01|fo%d|%d|00:00:00|\n",
		 200000 + k, 200000 + k, k, 200000 + k);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(line, f);
	fclose(f);
	l->n_tried++;
	if (gl_test_cli(l->p->app_rw, "ingest", "sacct", "--cluster", "testgpu", "--file", path, "--fields", g_fields,
			NULL) == 0) {
		double now = gl_test_now_s();
		if (l->n_acked < MAX_BATCHES)
			l->acked[l->n_acked++] = k;
		if (t_kill > 0 && l->first_ingest_after < 0)
			l->first_ingest_after = now - t_kill;
	}
}

static void one_read(struct load *l, double t_kill)
{
	struct gl_test_http r = {0};
	if (gl_test_http(l->d->port, "GET", "/v1/chargeback?window=2026-11", NULL, 0, NULL, &r) == 0 && r.status == 200 &&
	    t_kill > 0 && l->first_read_after < 0)
		l->first_read_after = gl_test_now_s() - t_kill;
	gl_test_http_fini(&r);
}

static void run_for(struct load *l, double secs, double t_kill)
{
	double end = gl_test_now_s() + secs;
	while (gl_test_now_s() < end) {
		one_read(l, t_kill);
		one_batch(l, t_kill);
		usleep(50000);
	}
}

static void failover(int sync)
{
	struct gl_test_pgpair p;
	struct gl_test_daemon d;
	struct load *l = calloc(1, sizeof *l);
	char cfg[4096], anchors[PATH_MAX], live[PATH_MAX];
	const char *mode = sync ? "synchronous (remote_apply)" : "asynchronous";
	double t_kill;
	long long lost = 0;
	assert_int_equal(gl_test_pgpair_start(&p, sync), 0);
	assert_int_equal(gl_test_cli(p.app_rw, "migrate", NULL), 0);
	snprintf(anchors, sizeof anchors, "%s/anchors.txt", p.dir);
	snprintf(live, sizeof live, "%s/sacct_alloc.txt", p.dir);
	{
		char cmd[PATH_MAX * 3];
		snprintf(cmd, sizeof cmd, "cp %s/tests/fixtures/sacct/testbed/sacct_alloc.txt "
					  "%s/tests/fixtures/sacct/testbed/sacct_fields.txt %s/ && chmod 644 %s/*.txt",
			 g_cwd, g_cwd, p.dir, p.dir);
		assert_int_equal(system(cmd), 0);
	}
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\ndatabase:\n  dsn: \"%s\"\n"
		 "audit:\n  anchor_file: %s\n  anchor_interval_s: 1\n"
		 "sources:\n  sacct:\n    - cluster: testgpu\n      command: %s/tests/tools/fake-sacct.sh\n"
		 "      interval_s: 5\n      overlap_s: 600\n      lookback_s: 864000\n"
		 "      extra_args: --gl-fixture=%s --gl-window\n",
		 p.app_rw, anchors, g_cwd, live);
	assert_int_equal(gl_test_daemon_start(&d, p.app_rw, cfg, NULL), 0);
	l->p = &p;
	l->d = &d;
	l->first_read_after = l->first_ingest_after = -1;
	run_for(l, 8, 0);
	t_kill = gl_test_now_s();
	gl_test_pgpair_kill(&p, 0);
	assert_int_equal(gl_test_pgpair_promote(&p, 1), 0);
	fprintf(stderr, "failover (%s): standby promoted %.2f s after the kill\n", mode, gl_test_now_s() - t_kill);
	run_for(l, 12, t_kill);
	/* every acknowledged batch is on the new primary, or is counted lost */
	{
		PGconn *c = PQconnectdb(p.app[1]);
		for (int i = 0; i < l->n_acked; i++)
			if (gl_test_qintf(c, "SELECT count(*) FROM jobs WHERE name = 'fo%d'", l->acked[i]) != 1)
				lost++;
		/* the daemon's own periodic ingest resumed there */
		for (int k = 0; k < 100; k++) {
			if (gl_test_qintf(c, "SELECT count(*) FROM ingest_runs WHERE source = 'sacct' AND instance IS NOT NULL"
					     " AND status IN ('ok', 'partial') AND started_at > now() - interval '%d seconds'",
					  (int)(gl_test_now_s() - t_kill)) > 0)
				break;
			usleep(200000);
		}
		assert_true(gl_test_qintf(c, "SELECT count(*) FROM ingest_runs WHERE source = 'sacct' AND instance IS NOT NULL"
					    " AND status IN ('ok', 'partial') AND started_at > now() - interval '%d seconds'",
					 (int)(gl_test_now_s() - t_kill)) > 0);
		PQfinish(c);
	}
	fprintf(stderr,
		"failover (%s): API answering again after %.2f s; first acknowledged ingest after %.2f s; "
		"acknowledged batches lost: %lld of %d (%d tried)\n",
		mode, l->first_read_after, l->first_ingest_after, lost, l->n_acked, l->n_tried);
	assert_true(l->first_read_after >= 0 && l->first_read_after < 10.0);
	assert_true(l->first_ingest_after >= 0);
	if (sync)
		assert_int_equal(lost, 0);
	assert_int_equal(gl_test_daemon_stop(&d), 0);
	/* the chain is whole on the new primary; under synchronous replication
	 * every anchor written (before, during and after) still matches it */
	assert_int_equal(gl_test_cli(p.app[1], "audit", "verify", NULL), 0);
	if (sync)
		assert_int_equal(gl_test_cli(p.app[1], "audit", "verify", "--anchor", anchors, NULL), 0);
	gl_test_pgpair_stop(&p);
	free(l);
}

static void test_failover_async(void **state)
{
	failover(0);
}

static void test_failover_sync(void **state)
{
	failover(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failover_async),
		cmocka_unit_test(test_failover_sync),
	};
	if (!getcwd(g_cwd, sizeof g_cwd) || gl_test_sacct_fields(g_fields, sizeof g_fields))
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
