/* The abuse scenarios of issue 24 on loopback, with the daemon's default
 * configuration (rates for the cost columns aside), bounded counts and
 * times; `make test-abuse` runs this alone, `make bench` with the rest.
 *  - slowloris: 600 sockets from 10 addresses (127.0.11.x), each sending a
 *    header byte every second for 12 s; another address asks
 *    /v1/whoami every 250 ms meanwhile;
 *  - idle sockets: 1,200 from 20 addresses (127.0.12.x) sending nothing,
 *    the same;
 *  - flood: 20,000 requests from one address (4 keep-alive clients), then
 *    the daemon's stop: its refusals in the audit log against those the
 *    clients saw;
 *  - heavy: /v1/chargeback?window=160d&step=hour&aggregate=user over the
 *    demo's 4,206 real Philly jobs (tests/fixtures/philly/demo_jobs.txt,
 *    moved to end the day before, as scripts/demo-data.sh loads them):
 *    one alone, then four at once while a keep-alive client asks /healthz
 *    every 10 ms; the daemon's peak RSS each time (a fresh daemon).
 * BENCH_ABUSE_BIN=path runs the heavy scenario against that binary too
 * (e.g. the previous tree's), as the peer of the same run.
 * Prints markdown rows "| figure | ours | limit | ratio |". */
#include "gl/common.h"
#include "lib/testlib.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RATES "rates:\n  - model: '*'\n    per_gpu_hour: \"1.00\"\n"
#define HEAVY "/v1/chargeback?window=160d&step=hour&aggregate=user"

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
	size_t *bytes = ud;
	(void)p;
	if (bytes)
		*bytes += sz * n;
	return sz * n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ---- crowds of sockets ---- */

struct crowd_figures {
	int admitted, refused, killed_by_deadline;
	double first_close_s, last_close_s; /* of the admitted ones, after the connect */
	int asks, asks_ok;
	double ask_max_s;
};

/* n sockets from `addrs` addresses 127.0.<net>.x for dur_s, trickling a
 * byte a second when trickle; /v1/whoami from 127.0.<net>.250 every 250 ms. */
static void crowd(const struct gl_test_daemon *d, int n, int net, int addrs, int trickle, double dur_s,
		  struct crowd_figures *f)
{
	int *fds = gl_xcalloc((size_t)n, sizeof *fds);
	double *closed_at = gl_xcalloc((size_t)n, sizeof *closed_at);
	char other[32];
	double t0, next_ask, next_byte;
	memset(f, 0, sizeof *f);
	for (int i = 0; i < n; i++) {
		char from[32];
		snprintf(from, sizeof from, "127.0.%d.%d", net, 1 + i % addrs);
		fds[i] = gl_test_connect_from(d->port, from);
		if (fds[i] >= 0 && trickle)
			(void)send(fds[i], "GET /healthz HTTP/1.1\r\nHost: x\r\n", 32, MSG_NOSIGNAL);
	}
	t0 = gl_test_now_s();
	next_ask = t0;
	next_byte = t0 + 1;
	snprintf(other, sizeof other, "127.0.%d.250", net);
	while (gl_test_now_s() - t0 < dur_s) {
		double now = gl_test_now_s();
		for (int i = 0; i < n; i++) {
			struct pollfd p = {.fd = fds[i], .events = POLLIN};
			char buf[256];
			ssize_t r;
			if (fds[i] < 0 || poll(&p, 1, 0) <= 0)
				continue;
			r = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN)) {
				close(fds[i]);
				fds[i] = -1;
				closed_at[i] = now - t0;
			}
		}
		if (trickle && now >= next_byte) {
			for (int i = 0; i < n; i++)
				if (fds[i] >= 0)
					(void)send(fds[i], "X", 1, MSG_NOSIGNAL);
			next_byte += 1;
		}
		if (now >= next_ask) {
			struct gl_test_http_opts o = {NULL, 0, other};
			struct gl_test_http r;
			double a0 = gl_test_now_s(), took;
			f->asks++;
			if (gl_test_http_ex(d->port, "GET", "/v1/whoami", NULL, 0, NULL, &o, &r) == 0) {
				f->asks_ok += r.status == 200;
				gl_test_http_fini(&r);
			}
			took = gl_test_now_s() - a0;
			if (took > f->ask_max_s)
				f->ask_max_s = took;
			next_ask += 0.25;
		}
		usleep(20 * 1000);
	}
	/* refused at accept: closed within the first 100 ms */
	for (int i = 0; i < n; i++) {
		if (fds[i] >= 0) {
			close(fds[i]);
			f->admitted++;
			continue;
		}
		if (closed_at[i] < 0.1) {
			f->refused++;
			continue;
		}
		f->admitted++;
		f->killed_by_deadline++;
		if (!f->first_close_s || closed_at[i] < f->first_close_s)
			f->first_close_s = closed_at[i];
		if (closed_at[i] > f->last_close_s)
			f->last_close_s = closed_at[i];
	}
	free(fds);
	free(closed_at);
}

static void crowd_rows(const char *what, int n, int addrs, const struct crowd_figures *f)
{
	printf("| %s, %d sockets from %d addresses: another address's /v1/whoami every 250 ms, slowest of %d "
	       "(%d answered 200) | %.3f s | 1 s (any client served at once) | %.3f |\n",
	       what, n, addrs, f->asks, f->asks_ok, f->ask_max_s, f->ask_max_s);
	printf("| %s: sockets the server closed at the headers' deadline (of %d admitted; %d refused at accept), "
	       "closed after | %d, %.1f-%.1f s | 10 s (server.header_timeout_s) | %.2f |\n",
	       what, f->admitted, f->refused, f->killed_by_deadline, f->first_close_s, f->last_close_s,
	       f->last_close_s / 10.0);
	fflush(stdout);
}

/* ---- the flood ---- */

struct flooder {
	int port, n;
	const char *auth;
	long ok, refused, other;
};

static void *flood_main(void *arg)
{
	struct flooder *fl = arg;
	CURL *h = curl_easy_init();
	struct curl_slist *hl = curl_slist_append(NULL, fl->auth);
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/ingest/runs?limit=1", fl->port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_INTERFACE, "127.0.13.1");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	for (int i = 0; i < fl->n; i++) {
		long st = 0;
		if (curl_easy_perform(h) == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
		if (st == 429)
			fl->refused++;
		else if (st == 200)
			fl->ok++;
		else
			fl->other++;
	}
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return NULL;
}

static void flood(struct gl_test_daemon *d, const char *dsn)
{
	pthread_t th[4];
	struct flooder fl[4];
	char auth[128];
	long refused = 0, served = 0, other = 0;
	long long audited, rows;
	double t0 = gl_test_now_s(), took;
	char *log = NULL;
	int warn = 0;
	PGconn *c;
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", d->token);
	for (int i = 0; i < 4; i++) {
		fl[i] = (struct flooder){d->port, 5000, auth, 0, 0, 0};
		pthread_create(&th[i], NULL, flood_main, &fl[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		refused += fl[i].refused;
		served += fl[i].ok;
		other += fl[i].other;
	}
	took = gl_test_now_s() - t0;
	/* the stop writes the last, partial minute */
	gl_test_daemon_sigterm(d, 20, &log, NULL);
	for (char *l = log; l && *l;) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		if (strstr(l, " WARN ")) {
			warn++;
			fprintf(stderr, "  log: %.200s\n", l);
		}
		l = nl ? nl + 1 : l + strlen(l);
	}
	free(log);
	c = PQconnectdb(dsn);
	audited = gl_test_qint(c, "SELECT coalesce(sum((detail->'reasons'->>'request_rate')::bigint), 0) FROM audit_log"
				  " WHERE action = 'http.refused' AND source_addr = '127.0.13.1'");
	rows = gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'http.refused' AND source_addr = '127.0.13.1'");
	PQfinish(c);
	fprintf(stderr, "  flood: %ld refused (429), %ld served (200), %ld other, in %.1f s\n", refused,
		served, other, took);
	printf("| flood, 20,000 requests from one address in %.1f s (4 keep-alive clients, default rate limit): refusals "
	       "the audit log holds, in %lld rows, after the stop (the last partial minute included) | %lld of %ld | all "
	       "refused | %.4f |\n",
	       took, rows, audited, refused, refused ? (double)audited / (double)refused : 0);
	printf("| WARN lines in the log of the daemon that took the slowloris, the idle sockets and the flood (~35 s) | %d | "
	       "– (before: a line a refused connection) | – |\n",
	       warn);
	fflush(stdout);
}

/* ---- heavy requests ---- */

/* The demo's Philly jobs as sacct lines, moved by whole days to end the
 * day before now (scripts/demo-data.sh does the same). */
static void philly_sacct(const char *out)
{
	FILE *in = fopen(gl_test_fixture("tests/fixtures/philly/demo_jobs.txt"), "r"), *o = fopen(out, "w");
	long long s, st, e, last = 0, gpus;
	char acct[64], user[64], state[32], nodes[256], jid[128], line[1024];
	time_t now = time(NULL), base;
	int n = 0;
	if (!in || !o)
		gl_test_die("cannot read demo_jobs.txt or write the sacct file");
	while (fgets(line, sizeof line, in))
		if (sscanf(line, "%lld|%lld|%lld|", &s, &st, &e) == 3 && e > last)
			last = e;
	base = (now - (time_t)last) - (now - (time_t)last) % 86400;
	rewind(in);
	while (fgets(line, sizeof line, in)) {
		char a[32], b[32], c[32];
		time_t ta, tb, tc;
		if (sscanf(line, "%lld|%lld|%lld|%63[^|]|%63[^|]|%31[^|]|%lld|%255[^|]|%127[^\n]", &s, &st, &e, acct, user,
			   state, &gpus, nodes, jid) != 9)
			continue;
		ta = base + (time_t)s, tb = base + (time_t)st, tc = base + (time_t)e;
		strftime(a, sizeof a, "%Y-%m-%dT%H:%M:%S", gmtime(&ta));
		strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", gmtime(&tb));
		strftime(c, sizeof c, "%Y-%m-%dT%H:%M:%S", gmtime(&tc));
		n++;
		fprintf(o, "%d|%d|philly|gpu|%s|%s|%s|%s|%s|%s|%lld|%s|gres/gpu=%lld|gres/gpu=%lld|%s|%d|%s\n", n, n, acct,
			user, a, a, b, c, e - st, state, gpus, gpus, nodes, n, jid);
	}
	fclose(in);
	fclose(o);
}

struct heavy_get {
	int port;
	const char *token;
	double took;
	size_t bytes;
	long status;
};

static void *heavy_main(void *arg)
{
	struct heavy_get *g = arg;
	CURL *h = curl_easy_init();
	struct curl_slist *hl;
	char url[256], auth[128];
	double t0 = gl_test_now_s();
	snprintf(url, sizeof url, "http://127.0.0.1:%d" HEAVY, g->port);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", g->token);
	hl = curl_slist_append(NULL, auth);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &g->bytes);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &g->status);
	g->took = gl_test_now_s() - t0;
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return NULL;
}

static volatile int g_heavy_done;

/* GET /healthz on one keep-alive connection every 10 ms while !*stop (or
 * max times when stop is NULL): the latencies into lat, how many. */
static int healthz_sample(int port, volatile int *stop, double *lat, int max)
{
	CURL *h = curl_easy_init();
	char url[128];
	int n = 0;
	snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	while ((!stop || !*stop) && n < max) {
		double t0 = gl_test_now_s();
		long st = 0;
		if (curl_easy_perform(h) == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
		lat[n++] = st == 200 ? gl_test_now_s() - t0 : 999;
		usleep(10 * 1000);
	}
	curl_easy_cleanup(h);
	qsort(lat, (size_t)n, sizeof *lat, cmp_double);
	return n;
}

struct four {
	struct heavy_get g[4];
};

/* Four heavy requests at once; g_heavy_done when all have their answer. */
static void *four_main(void *arg)
{
	struct four *f = arg;
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, heavy_main, &f->g[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	g_heavy_done = 1;
	return NULL;
}

static void heavy(const char *bin, const char *label, const char *dsn)
{
	struct gl_test_daemon d;
	struct heavy_get one;
	struct four f;
	pthread_t th;
	static double lat[20000], idle[100];
	long rss0, rss1, rss4;
	double lo = 1e9, hi = 0;
	int n;
	if (bin)
		setenv("GL_TEST_BIN", bin, 1);
	if (gl_test_daemon_start(&d, dsn, "log:\n  level: warn\n" RATES, (const char *const[]){"--no-ingest", NULL}) ||
	    !d.token[0])
		gl_test_die("the daemon did not start");
	rss0 = gl_test_peak_rss_kb(d.pid);
	one = (struct heavy_get){d.port, d.token, 0, 0, 0};
	heavy_main(&one);
	rss1 = gl_test_peak_rss_kb(d.pid);
	healthz_sample(d.port, NULL, idle, 100);
	for (int i = 0; i < 4; i++)
		f.g[i] = (struct heavy_get){d.port, d.token, 0, 0, 0};
	g_heavy_done = 0;
	pthread_create(&th, NULL, four_main, &f);
	n = healthz_sample(d.port, &g_heavy_done, lat, (int)(sizeof lat / sizeof *lat));
	pthread_join(th, NULL);
	rss4 = gl_test_peak_rss_kb(d.pid);
	gl_test_daemon_stop(&d);
	for (int i = 0; i < 4; i++) {
		lo = f.g[i].took < lo ? f.g[i].took : lo;
		hi = f.g[i].took > hi ? f.g[i].took : hi;
		if (f.g[i].status != 200)
			fprintf(stderr, "  %s: a heavy request answered %ld\n", label, f.g[i].status);
	}
	fprintf(stderr, "  %s: one heavy request %.2f s, %zu bytes, status %ld; four at once %.2f-%.2f s; /healthz idle p50 "
		"%.1f ms, p99 %.1f ms\n",
		label, one.took, one.bytes, one.status, lo, hi, idle[50] * 1000, idle[99] * 1000);
	printf("| %s: `GET %s` over the demo's 4,206 Philly jobs, alone (%zu bytes in %.2f s): daemon peak RSS "
	       "(%.0f MB before it) | %.0f MB | 200 MB | %.2f |\n",
	       label, HEAVY, one.bytes, one.took, rss0 / 1024.0, rss1 / 1024.0, rss1 / 1024.0 / 200.0);
	printf("| %s: the same four at once (answered in %.1f-%.1f s): daemon peak RSS | %.0f MB | 200 MB | %.2f |\n",
	       label, lo, hi, rss4 / 1024.0, rss4 / 1024.0 / 200.0);
	printf("| %s: `GET /healthz` every 10 ms on a keep-alive connection while the four run, p50 / p99 / max of %d "
	       "(idle: p50 %.1f, p99 %.1f ms) | %.1f / %.1f / %.1f ms | p99 50 ms | %.2f |\n",
	       label, n, idle[50] * 1000, idle[99] * 1000, lat[n / 2] * 1000, lat[n * 99 / 100] * 1000,
	       lat[n - 1] * 1000, lat[n * 99 / 100] * 1000 / 50);
	fflush(stdout);
}

int main(void)
{
	struct gl_test_daemon d;
	struct crowd_figures f;
	struct rlimit rl;
	char dsn[512], path[512];
	struct gl_test_out o;
	const char *base = getenv("BENCH_ABUSE_BIN"), *ours = getenv("GL_TEST_BIN");
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
	setrlimit(RLIMIT_NOFILE, &rl);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (gl_test_db_fresh("gl_bench_abuse", dsn, sizeof dsn))
		gl_test_die("no database");
	if (gl_test_daemon_start(&d, dsn, "log:\n  level: warn\n" RATES, (const char *const[]){"--no-ingest", NULL}) ||
	    !d.token[0])
		gl_test_die("the daemon did not start");
	crowd(&d, 600, 11, 10, 1, 12, &f);
	crowd_rows("slowloris (a header byte a second each)", 600, 10, &f);
	crowd(&d, 1200, 12, 20, 0, 12, &f);
	crowd_rows("idle sockets", 1200, 20, &f);
	flood(&d, dsn);

	snprintf(path, sizeof path, "%s/bench-abuse-philly.%d.txt", tmp, (int)getpid());
	philly_sacct(path);
	if (gl_test_run(dsn, NULL, &o, "ingest", "sacct", "--cluster", "philly", "--file", path, "--fields",
			GL_TEST_PHILLY_FIELDS, NULL) != 0 ||
	    o.status != 0)
		gl_test_die("the Philly jobs did not load");
	gl_test_out_fini(&o);
	unlink(path);
	heavy(NULL, "heavy", dsn);
	if (base) {
		heavy(base, "heavy, BENCH_ABUSE_BIN", dsn);
		if (ours)
			setenv("GL_TEST_BIN", ours, 1);
	}
	return 0;
}
