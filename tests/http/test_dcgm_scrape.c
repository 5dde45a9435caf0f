/* The real daemon scraping dcgm-exporter targets over loopback HTTP: real
 * scrapes served as several "nodes" by a server inside this test, plus a slow
 * target (beyond timeout_s), one answering garbage, one 404 and one refusing
 * connections. The good ones must be ingested, every bad one reported in
 * /metrics, and the run recorded as partial. The real nvidia_gpu_exporter
 * scrape (no hostname label) is served twice: with node=smi-node after its
 * URL it is ingested as that node's; without, the target fails saying the
 * hostname is missing and how to give it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/promserve.h"
#include "lib/testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FX "tests/fixtures/dcgm/"

static char g_dsn[512];
static struct gl_test_daemon g_d;
static struct gl_test_server *g_srv;
static int g_port, g_refused_port;
static PGconn *g_c;
static char g_auth[300]; /* "Authorization: Bearer ..." when the build has tokens */

static int serve_file(const char *path, const char *file, int delay_ms)
{
	size_t n;
	char *b = gl_test_read_file(gl_test_fixture(file), &n);
	gl_test_server_route(g_srv, path, b, n, delay_ms);
	free(b);
	return 0;
}

/* A loopback port with nothing listening: bound, then closed. */
static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &al) != 0)
		return -1;
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int setup(void **state)
{
	static const char garbage[] = "\x89PNG\r\n\x1a\n\x00\x01\x02 this is not {Prometheus text\n\xff\xfe\n";
	char cfg[4096];
	if (gl_test_db_fresh("gl_test_dcgm_scrape", g_dsn, sizeof g_dsn))
		return -1;
	g_c = PQconnectdb(g_dsn);
	if (PQstatus(g_c) != CONNECTION_OK)
		return -1;
	if (gl_test_server_start(&g_srv, &g_port))
		return -1;
	/* real scrapes as three "nodes" */
	if (serve_file("/node-a/metrics", FX "datadog_dcgm_fixture_metrics.prom", 0) ||
	    serve_file("/node-b/metrics", FX "handwritten_slurm_hpc_job.prom", 0) ||
	    serve_file("/node-c/metrics", FX "handwritten_mig_h100.prom", 0) ||
	    /* slow: answers long after the daemon's 1 s timeout */
	    serve_file("/slow/metrics", FX "datadog_dcgm_fixture_metrics.prom", 4000) ||
	    serve_file("/smi/metrics", FX "nvidia_gpu_exporter_output__h100__load.prom", 0) ||
	    serve_file("/smi-nonode/metrics", FX "nvidia_gpu_exporter_output__h100__load.prom", 0))
		return -1;
	gl_test_server_route(g_srv, "/garbage/metrics", garbage, sizeof garbage - 1, 0);
	g_refused_port = free_port();
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: info\ningest:\n  bucket_s: 60\n"
		 "sources:\n  dcgm:\n    - cluster: scrapetest\n"
		 "      targets: http://127.0.0.1:%d/node-a/metrics, http://127.0.0.1:%d/node-b/metrics\n"
		 "        http://127.0.0.1:%d/node-c/metrics http://127.0.0.1:%d/slow/metrics\n"
		 "        http://127.0.0.1:%d/garbage/metrics http://127.0.0.1:%d/missing/metrics\n"
		 "        http://127.0.0.1:%d/metrics\n"
		 "        http://127.0.0.1:%d/smi/metrics node=smi-node http://127.0.0.1:%d/smi-nonode/metrics\n"
		 "      interval_s: 2\n      timeout_s: 1\n      max_parallel: 3\n",
		 g_port, g_port, g_port, g_port, g_port, g_port, g_refused_port, g_port, g_port);
	{
		/* /metrics wants a viewer token */
		struct gl_test_out o;
		if (gl_test_run(g_dsn, NULL, &o, "token", "create", "--name", "dcgm-scrape-test", "--role", "viewer", NULL) == 0 &&
		    o.status == 0)
			snprintf(g_auth, sizeof g_auth, "Authorization: Bearer %.*s", (int)strcspn(o.out, "\r\n"), o.out);
		gl_test_out_fini(&o);
	}
	return gl_test_daemon_start(&g_d, g_dsn, cfg, NULL);
}

static int teardown(void **state)
{
	int st = gl_test_daemon_stop(&g_d);
	gl_test_server_stop(g_srv);
	PQfinish(g_c);
	return st == 0 ? 0 : -1;
}

static char *metrics(void)
{
	struct gl_test_http r;
	char *b;
	const char *hdr[] = {g_auth, NULL};
	assert_int_equal(gl_test_http(g_d.port, "GET", "/metrics", NULL, 0, g_auth[0] ? hdr : NULL, &r), 0);
	assert_int_equal(r.status, 200);
	b = strdup(r.body);
	gl_test_http_fini(&r);
	return b;
}

static int has_up(const char *body, const char *path, int port, int up)
{
	char want[512];
	snprintf(want, sizeof want,
		 "gpuledger_source_up{source=\"dcgm\",cluster=\"scrapetest\",target=\"http://127.0.0.1:%d%s\"} %d\n", port,
		 path, up);
	return strstr(body, want) != NULL;
}

static void test_good_targets_ingested_bad_ones_reported(void **state)
{
	char *m = NULL;
	int done = 0;
	/* wait for two scrape rounds of the good nodes and the health of all
	 * seven targets (a bound, not a timing assertion) */
	for (int i = 0; i < 600 && !done; i++) {
		free(m);
		m = metrics();
		done = gl_test_qint(g_c, "SELECT count(*) FROM gpu_usage WHERE covered_s > 0") >= 3 &&
		       has_up(m, "/node-a/metrics", g_port, 1) && has_up(m, "/node-b/metrics", g_port, 1) &&
		       has_up(m, "/node-c/metrics", g_port, 1) && has_up(m, "/slow/metrics", g_port, 0) &&
		       has_up(m, "/garbage/metrics", g_port, 0) && has_up(m, "/missing/metrics", g_port, 0) &&
		       has_up(m, "/metrics", g_refused_port, 0) && has_up(m, "/smi/metrics", g_port, 1) &&
		       has_up(m, "/smi-nonode/metrics", g_port, 0);
		if (!done)
			usleep(100 * 1000);
	}
	if (!done)
		fprintf(stderr, "metrics:\n%s\ndaemon log: %s\n", m, g_d.log);
	assert_true(done);
	free(m);

	/* the good nodes' inventory: 3 + 2 + 5 GPUs (MIG parent and instances),
	 * and the nvidia_gpu_exporter's H100 on the node its target named */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpus g JOIN clusters c USING (cluster_id)"
					   " WHERE c.name = 'scrapetest'"), 11);
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM nodes WHERE name IN"
					   " ('424773df46e0', '551bdf382151', 'gpu-node-07', 'h100-mig-node', 'smi-node')"), 5);
	assert_string_equal(gl_test_qstr(g_c, "SELECT g.source FROM gpus g JOIN nodes n USING (node_id)"
					      " WHERE n.name = 'smi-node'"), "nvidia_gpu_exporter");
	/* rounds: every applied sample after the first covers the gap since the last */
	assert_int_equal(gl_test_qint(g_c, "SELECT count(*) FROM gpu_usage WHERE covered_s > 60"), 0);
	/* the runs are partial and say why */
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM ingest_runs WHERE source = 'dcgm' AND status = 'partial'"
				      " AND skip_reasons::text LIKE '%garbage/metrics: not Prometheus text%'"
				      " AND skip_reasons::text LIKE '%missing/metrics: HTTP 404%'"
				      " AND skip_reasons::text LIKE '%slow/metrics: Timeout%'"
				      " AND skip_reasons::text LIKE '%smi-nonode/metrics: 1 GPUs but no Hostname/hostname label%"
				      "node=NAME after the target''s URL%'") >= 1);
	assert_true(gl_test_qint(g_c, "SELECT count(*) FROM ingest_state WHERE source = 'dcgm' AND watermark IS NOT NULL") == 1);
	/* the failing targets' errors are in /metrics too */
	m = metrics();
	assert_non_null(strstr(m, "gpuledger_source_up{source=\"dcgm\",cluster=\"scrapetest\",target=\"\"} 1"));
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_targets_ingested_bad_ones_reported),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
