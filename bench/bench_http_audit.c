/* Audited request throughput vs the same endpoint with per-request auditing
 * off (audit.requests: false, a benchmarking aid), issue 7's target
 * ≥ 0.7×. Two real daemons on one database, the request rate limit off,
 * CLIENTS keep-alive libcurl clients sending GET /v1/jobs?limit=1.
 * Prints markdown rows "| figure | ours | limit | ratio |". */
#include "lib/testlib.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CLIENTS 4
#define PER_CLIENT 5000
#define ROUNDS 3

struct client {
	int port;
	const char *auth;
	long failures;
};

static size_t sink(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return sz * n;
}

static void *client_main(void *arg)
{
	struct client *cl = arg;
	CURL *h = curl_easy_init();
	struct curl_slist *hl = curl_slist_append(NULL, cl->auth);
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/jobs?limit=1", cl->port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
	for (int i = 0; i < PER_CLIENT; i++) {
		long st = 0;
		if (curl_easy_perform(h) != CURLE_OK ||
		    (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st), st != 200))
			cl->failures++;
	}
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return NULL;
}

/* Requests per second over CLIENTS × PER_CLIENT requests. */
static double run(const struct gl_test_daemon *d)
{
	pthread_t th[CLIENTS];
	struct client cl[CLIENTS];
	char auth[128];
	double t0;
	long failures = 0;
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", d->token);
	t0 = gl_test_now_s();
	for (int i = 0; i < CLIENTS; i++) {
		cl[i] = (struct client){d->port, auth, 0};
		pthread_create(&th[i], NULL, client_main, &cl[i]);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(th[i], NULL);
		failures += cl[i].failures;
	}
	if (failures) {
		fprintf(stderr, "bench_http_audit: %ld requests failed\n", failures);
		exit(1);
	}
	return (double)(CLIENTS * PER_CLIENT) / (gl_test_now_s() - t0);
}

static long long audit_rows(PGconn *c)
{
	return gl_test_qint(c, "SELECT count(*) FROM audit_log WHERE action = 'http.request'");
}

int main(void)
{
	static const char base[] = "log:\n  level: warn\nserver:\n  threads: 4\n  rate_limit_per_ip: 0\n";
	char dsn[512], cfg_on[256], cfg_off[256];
	struct gl_test_daemon on, off;
	double best_on = 0, best_off = 0, drain = 0;
	PGconn *c;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (gl_test_db_fresh("gl_bench_http_audit", dsn, sizeof dsn))
		return 1;
	c = PQconnectdb(dsn);
	snprintf(cfg_on, sizeof cfg_on, "%saudit:\n  requests: true\n", base);
	snprintf(cfg_off, sizeof cfg_off, "%saudit:\n  requests: false\n", base);
	if (gl_test_daemon_start(&on, dsn, cfg_on, (const char *const[]){"--no-ingest", NULL}) ||
	    gl_test_daemon_start(&off, dsn, cfg_off, (const char *const[]){"--no-ingest", NULL}) || !on.token[0] ||
	    !off.token[0]) {
		fprintf(stderr, "bench_http_audit: cannot start the daemons\n");
		return 1;
	}
	/* alternate, best of ROUNDS each: the machine's noise hits both */
	for (int r = 0; r < ROUNDS; r++) {
		long long before = audit_rows(c), want = before + CLIENTS * PER_CLIENT;
		double t0 = gl_test_now_s(), x = run(&on), t1;
		if (x > best_on)
			best_on = x;
		/* the audited rows are written behind the answers: time the drain */
		while (audit_rows(c) < want && gl_test_now_s() - t0 < 60)
			usleep(20 * 1000);
		t1 = gl_test_now_s() - t0;
		if (audit_rows(c) < want) {
			fprintf(stderr, "bench_http_audit: audit rows missing after 60 s\n");
			return 1;
		}
		if (drain == 0 || t1 < drain)
			drain = t1;
		x = run(&off);
		if (x > best_off)
			best_off = x;
	}
	fprintf(stderr, "  %d clients x %d requests, best of %d: audited %.0f req/s (all rows committed after %.2f s), "
			"unaudited %.0f req/s\n",
		CLIENTS, PER_CLIENT, ROUNDS, best_on, drain, best_off);
	printf("| audited request throughput vs auditing off (GET /v1/jobs?limit=1) | %.0f vs %.0f req/s | ≥ 0.7× | %.2f |\n",
	       best_on, best_off, best_on / best_off);
	printf("| audited requests, rows committed end to end | %.0f req/s | ≥ 0.7× of unaudited | %.2f |\n",
	       (double)(CLIENTS * PER_CLIENT) / drain, (double)(CLIENTS * PER_CLIENT) / drain / best_off);
	gl_test_daemon_stop(&on);
	gl_test_daemon_stop(&off);
	PQfinish(c);
	return 0;
}
