/* A simulated fleet of 10,000 GPUs (1,250 nodes x 8) scraped every 30 s by
 * the real daemon: its CPU share (utime + stime from /proc/<pid>/stat over
 * wall time), peak RSS (VmHWM), and the lag between a round's scrape time and
 * its rollup being visible in the database. Every node's scrape is built from
 * the real DataDog dcgm-exporter fixture (the first T4's series, UUID and
 * Hostname rewritten per GPU: synthetic) and served from loopback by this
 * process. Needs the env of bench/run.sh.
 *
 * Usage: bench_dcgm_fleet [gpus [rounds [interval_s]]] (10000 4 30). */
#include "lib/promserve.h"
#include "lib/testlib.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FIXTURE "tests/fixtures/dcgm/datadog_dcgm_fixture_metrics.prom"
#define GPUS_PER_NODE 8

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The first GPU's series of the real scrape (UUID GPU-20c56d28-...), with
 * HELP/TYPE lines kept once. */
static char *template_lines(size_t *len)
{
	FILE *f = fopen(FIXTURE, "r");
	char line[4096];
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	if (!f)
		gl_test_die("cannot open " FIXTURE " (run from the repo root)");
	while (fgets(line, sizeof line, f)) {
		size_t l = strlen(line);
		if (!strstr(line, "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"))
			continue;
		if (n + l + 1 > cap)
			b = realloc(b, cap *= 2);
		memcpy(b + n, line, l);
		n += l;
	}
	fclose(f);
	b[n] = '\0';
	*len = n;
	return b;
}

/* Rewrites UUID, Hostname and gpu index of the template for one GPU. */
static void append_gpu(char **buf, size_t *n, size_t *cap, const char *tpl, int node, int gpu)
{
	char uuid[64], host[32], idx[16];
	snprintf(uuid, sizeof uuid, "GPU-20c56d28-0da5-6d26-%04x-%012x", gpu, node);
	snprintf(host, sizeof host, "fleet-node-%04d", node);
	snprintf(idx, sizeof idx, "%d", gpu);
	for (const char *p = tpl; *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p + 1) : strlen(p);
		char line[4096], out[4096];
		size_t o = 0;
		snprintf(line, sizeof line, "%.*s", (int)l, p);
		for (char *q = line; *q;) {
			const char *rep = NULL;
			size_t skip = 0;
			if (!strncmp(q, "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e", 40))
				rep = uuid, skip = 40;
			else if (!strncmp(q, "Hostname=\"424773df46e0\"", 23))
				rep = NULL, skip = 23, o += (size_t)snprintf(out + o, sizeof out - o, "Hostname=\"%s\"", host);
			else if (!strncmp(q, "{gpu=\"0\"", 8))
				rep = NULL, skip = 8, o += (size_t)snprintf(out + o, sizeof out - o, "{gpu=\"%s\"", idx);
			if (rep)
				o += (size_t)snprintf(out + o, sizeof out - o, "%s", rep);
			if (skip) {
				q += skip;
				continue;
			}
			out[o++] = *q++;
		}
		out[o] = '\0';
		if (*n + o + 1 > *cap) {
			while (*n + o + 1 > *cap)
				*cap *= 2;
			*buf = realloc(*buf, *cap);
		}
		memcpy(*buf + *n, out, o);
		*n += o;
		p += l;
	}
}

int main(int argc, char **argv)
{
	int gpus = argc > 1 ? atoi(argv[1]) : 10000, rounds = argc > 2 ? atoi(argv[2]) : 4;
	int interval = argc > 3 ? atoi(argv[3]) : 30;
	int nodes = (gpus + GPUS_PER_NODE - 1) / GPUS_PER_NODE, port, seen = 0;
	char dsn[512], dir[256], tf[300], cfg[1024];
	struct gl_test_server *srv;
	struct gl_test_daemon d;
	size_t tlen, body_bytes = 0;
	char *tpl = template_lines(&tlen);
	PGconn *c;
	FILE *f;
	long long wm_prev = 0;
	double lag_max = 0, lag_sum = 0, cpu0 = 0, t0 = 0, cpu1, t1;
	long hwm = 0;

	signal(SIGPIPE, SIG_IGN);
	if (gl_test_db_fresh("gl_bench_dcgm", dsn, sizeof dsn))
		gl_test_die("database");
	c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK)
		gl_test_die("connect");
	if (gl_test_server_start(&srv, &port))
		gl_test_die("server");
	snprintf(dir, sizeof dir, "%s/bench-dcgm", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(dir, 0755);
	snprintf(tf, sizeof tf, "%s/targets.txt", dir);
	f = fopen(tf, "w");
	if (!f)
		gl_test_die("targets file");
	for (int n = 0; n < nodes; n++) {
		size_t cap = 1 << 16, len = 0;
		char *b = malloc(cap), path[64];
		for (int g = 0; g < GPUS_PER_NODE && n * GPUS_PER_NODE + g < gpus; g++)
			append_gpu(&b, &len, &cap, tpl, n, g);
		snprintf(path, sizeof path, "/fleet-node-%04d/metrics", n);
		gl_test_server_route(srv, path, b, len, 0);
		body_bytes += len;
		fprintf(f, "http://127.0.0.1:%d%s\n", port, path);
		free(b);
	}
	fclose(f);
	free(tpl);
	fprintf(stderr, "  fleet: %d GPUs on %d nodes, %.1f MB per round (synthetic, from the real DataDog scrape)\n", gpus,
		nodes, (double)body_bytes / 1e6);
	snprintf(cfg, sizeof cfg,
		 "log:\n  level: warn\n"
		 "sources:\n  dcgm:\n    - cluster: fleet\n      targets_file: %s\n      interval_s: %d\n"
		 "      timeout_s: 10\n      max_parallel: 64\n",
		 tf, interval);
	if (gl_test_daemon_start(&d, dsn, cfg, NULL))
		gl_test_die("daemon");
	/* rounds: the watermark moves to each round's scrape time once its
	 * transaction commits; the lag is commit-visible minus scrape time */
	while (seen < rounds + 1) {
		long long wm = gl_test_qint(c, "SELECT coalesce(max(extract(epoch FROM watermark))::bigint, 0)"
					       " FROM ingest_state WHERE source = 'dcgm'");
		if (wm > 0 && wm != wm_prev) {
			double t = now_s(), lag = t - (double)wm;
			if (seen == 0) {
				/* steady state from the first visible round on (the first
				 * round also creates the inventory) */
				gl_test_proc_usage(d.pid, &cpu0, &hwm);
				t0 = t;
			} else {
				lag_max = lag > lag_max ? lag : lag_max;
				lag_sum += lag;
			}
			fprintf(stderr, "  round %d visible %.2f s after its scrape time\n", seen + 1, lag);
			wm_prev = wm;
			seen++;
		}
		if (t0 && now_s() - t0 > (double)interval * (rounds + 2))
			gl_test_die("the daemon did not keep up (no new round)");
		usleep(20 * 1000);
	}
	gl_test_proc_usage(d.pid, &cpu1, &hwm);
	t1 = now_s();
	if (gl_test_qint(c, "SELECT count(*) FROM gpus") != gpus)
		gl_test_die("inventory does not hold every GPU");
	if (gl_test_qint(c, "SELECT count(*) FROM gpu_usage WHERE covered_s > 0") < gpus)
		gl_test_die("rollups missing");
	{
		double share = (cpu1 - cpu0) / (t1 - t0) * 100.0;
		printf("| dcgm fleet %d GPUs / %d s: daemon CPU (%% of one core) | %.2f %% | 10 %% | %.3f |\n", gpus, interval,
		       share, share / 10.0);
		printf("| dcgm fleet %d GPUs: daemon peak RSS (VmHWM) | %.1f MB | 100 MB | %.3f |\n", gpus, (double)hwm / 1024.0,
		       (double)hwm / 1024.0 / 100.0);
		printf("| dcgm fleet %d GPUs: scrape-to-rollup lag (max of %d rounds) | %.2f s | %d s | %.3f |\n", gpus, rounds,
		       lag_max, interval, lag_max / interval);
		fprintf(stderr, "  mean lag %.2f s; %zu HTTP requests served\n", lag_sum / rounds, gl_test_server_requests(srv));
	}
	gl_test_daemon_stop(&d);
	gl_test_server_stop(srv);
	PQfinish(c);
	return 0;
}
