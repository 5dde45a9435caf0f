/* 1,000 inference endpoints scraped every 30 s by the real daemon
 * (sources.serving): its CPU share (utime + stime from /proc/<pid>/stat
 * over wall time, from the first visible round on), peak RSS (VmHWM), and
 * the lag between a round's scrape time and its rows being visible (the
 * serving watermark). Every endpoint serves the real SGLang scrape of
 * tests/fixtures/serving (the largest of the fixtures: 115 lines with three
 * histograms), its counters raised each round so every round counts
 * (synthetic values on the real lines), from loopback by this process; each
 * runs on a pod of its own, read by the real kube ingest. Needs the env of
 * bench/run.sh.
 *
 * Usage: bench_serving_fleet [endpoints [rounds [interval_s]]] (1000 4 30). */
#include "lib/promserve.h"
#include "lib/testlib.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FIXTURE "tests/fixtures/serving/sglang_llama31_8b.prom"
#define LLAMA "model_name=\"meta-llama/Llama-3.1-8B-Instruct\""

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void proc_stat(pid_t pid, double *cpu_s, long *hwm_kb)
{
	char path[64], buf[4096];
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	*cpu_s = 0;
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		char *p;
		unsigned long ut = 0, st = 0;
		buf[n] = '\0';
		fclose(f);
		p = strrchr(buf, ')');
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
			*cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	}
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	*hwm_kb = 0;
	if (f) {
		char line[256];
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "VmHWM: %ld kB", hwm_kb) == 1)
				break;
		fclose(f);
	}
}

/* The round's body: the real scrape with its counters raised by k. */
static char *body(const char *tpl, int k, size_t *len)
{
	char req[32], prompt[32], gen[32], inf[32];
	char *b;
	snprintf(req, sizeof req, "%d.0", 11228 + 40 * k);
	snprintf(inf, sizeof inf, "%d.0", 11228 + 40 * k);
	snprintf(prompt, sizeof prompt, "%d.0", 8128902 + 30000 * k);
	snprintf(gen, sizeof gen, "%d.0", 7557572 + 60000 * k);
	b = gl_test_scrape_with(tpl, (const char *[]){"sglang:prompt_tokens_total{" LLAMA "}", prompt,
						      "sglang:generation_tokens_total{" LLAMA "}", gen,
						      "sglang:e2e_request_latency_seconds_count{" LLAMA "}", req,
						      "sglang:e2e_request_latency_seconds_bucket{le=\"+Inf\"," LLAMA "}", inf, NULL});
	*len = strlen(b);
	return b;
}

/* n running pods llm/ep-NNNN, one GPU each, started an hour ago. */
static void pods(const char *path, int n)
{
	char start[32];
	time_t t = time(NULL) - 3600;
	FILE *f = fopen(path, "w");
	if (!f)
		gl_test_die("pods file");
	strftime(start, sizeof start, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	fputs("{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":[", f);
	for (int i = 0; i < n; i++)
		fprintf(f,
			"%s{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"ep-%04d\",\"namespace\":\"llm\","
			"\"uid\":\"dddddddd-0000-4000-8000-%012d\",\"creationTimestamp\":\"%s\"},\"spec\":{\"nodeName\":"
			"\"node-%03d\",\"containers\":[{\"name\":\"server\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
			"\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}}",
			i ? "," : "", i, i, start, i / 8, start);
	fputs("]}\n", f);
	fclose(f);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 4;
	int interval = argc > 3 ? atoi(argv[3]) : 30, port, seen = 0;
	char dsn[512], dir[256], podsf[300], at[40];
	struct gl_test_server *srv;
	struct gl_test_daemon d;
	struct gl_test_out o;
	struct {
		char *p;
		size_t len, cap;
	} cfg = {NULL, 0, 0}; /* the config text: an entry per endpoint */
	char *tpl = gl_test_read_file(FIXTURE, NULL);
	PGconn *c;
	long long wm_prev = 0;
	double lag_max = 0, lag_sum = 0, cpu0 = 0, t0 = 0, cpu1, t1;
	long hwm = 0;
	time_t tnow = time(NULL);

	signal(SIGPIPE, SIG_IGN);
	if (gl_test_db_fresh("gl_bench_serving", dsn, sizeof dsn))
		gl_test_die("database");
	c = PQconnectdb(dsn);
	if (PQstatus(c) != CONNECTION_OK)
		gl_test_die("connect");
	snprintf(dir, sizeof dir, "%s/bench-serving", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp");
	mkdir(dir, 0755);
	snprintf(podsf, sizeof podsf, "%s/pods.json", dir);
	pods(podsf, n);
	strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tnow));
	if (gl_test_run(dsn, NULL, &o, "ingest", "kube", "--cluster", "k1", "--file", podsf, "--at", at, NULL) || o.status)
		gl_test_die("kube ingest");
	gl_test_out_fini(&o);
	if (gl_test_server_start(&srv, &port))
		gl_test_die("server");
	cfg.cap = 256 + (size_t)n * 256;
	cfg.p = malloc(cfg.cap);
	cfg.len = (size_t)snprintf(cfg.p, cfg.cap, "log:\n  level: warn\nsources:\n  serving:\n");
	for (int i = 0; i < n; i++) {
		char path[64];
		size_t len;
		char *b = body(tpl, 0, &len);
		snprintf(path, sizeof path, "/ep-%04d/metrics", i);
		gl_test_server_route(srv, path, b, len, 0);
		free(b);
		cfg.len += (size_t)snprintf(cfg.p + cfg.len, cfg.cap - cfg.len,
					    "    - endpoint: ep-%04d\n      cluster: k1\n      pod: llm/ep-%04d\n"
					    "      targets: http://127.0.0.1:%d%s\n      interval_s: %d\n      max_parallel: 64\n",
					    i, i, port, path, interval);
	}
	fprintf(stderr, "  serving fleet: %d endpoints, %zu bytes a scrape (the real SGLang scrape, counters raised each round)\n",
		n, strlen(tpl));
	if (gl_test_daemon_start(&d, dsn, cfg.p, NULL))
		gl_test_die("daemon");
	while (seen < rounds + 1) {
		long long wm = gl_test_qint(c, "SELECT coalesce(max(extract(epoch FROM watermark))::bigint, 0)"
					       " FROM ingest_state WHERE source = 'serving'");
		if (wm > 0 && wm != wm_prev) {
			double t = now_s(), lag = t - (double)wm;
			if (seen == 0) {
				/* steady state from the first visible round on (it makes
				 * the endpoints and series) */
				proc_stat(d.pid, &cpu0, &hwm);
				t0 = t;
			} else {
				lag_max = lag > lag_max ? lag : lag_max;
				lag_sum += lag;
			}
			fprintf(stderr, "  round %d visible %.2f s after its scrape time\n", seen + 1, lag);
			wm_prev = wm;
			seen++;
			/* the next round's counters */
			for (int i = 0; i < n; i++) {
				char path[64];
				size_t len;
				char *b = body(tpl, seen, &len);
				snprintf(path, sizeof path, "/ep-%04d/metrics", i);
				gl_test_server_route(srv, path, b, len, 0);
				free(b);
			}
		}
		if (t0 && now_s() - t0 > (double)interval * (rounds + 2))
			gl_test_die("the daemon did not keep up (no new round)");
		usleep(20 * 1000);
	}
	proc_stat(d.pid, &cpu1, &hwm);
	t1 = now_s();
	if (gl_test_qint(c, "SELECT count(*) FROM serving_series") != n)
		gl_test_die("a series missing");
	if (gl_test_qint(c, "SELECT count(DISTINCT series_id) FROM serving_usage WHERE requests > 0 AND job_pk > 0") != n)
		gl_test_die("increases missing or unattributed");
	{
		double share = (cpu1 - cpu0) / (t1 - t0) * 100.0;
		printf("| serving fleet %d endpoints / %d s: daemon CPU (%% of one core) | %.2f %% | 10 %% | %.3f |\n", n,
		       interval, share, share / 10.0);
		printf("| serving fleet %d endpoints: daemon peak RSS (VmHWM) | %.1f MB | 100 MB | %.3f |\n", n,
		       (double)hwm / 1024.0, (double)hwm / 1024.0 / 100.0);
		printf("| serving fleet %d endpoints: scrape-to-visible lag (max of %d rounds) | %.2f s | %d s | %.3f |\n", n,
		       rounds, lag_max, interval, lag_max / interval);
		fprintf(stderr, "  mean lag %.2f s; %zu HTTP requests served\n", lag_sum / rounds, gl_test_server_requests(srv));
	}
	gl_test_daemon_stop(&d);
	gl_test_server_stop(srv);
	PQfinish(c);
	free(tpl);
	free(cfg.p);
	return 0;
}
