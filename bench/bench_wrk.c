/* Keep-alive throughput of cheap endpoints under wrk: the real daemon vs
 * nginx serving the same bytes as static files on another loopback port,
 * the same wrk settings, in alternating rounds (ours, nginx, ours, ...;
 * BENCH_WRK_ROUNDS, default 9): the ratio of each round, their median
 * beside the target (issue 24: >= 0.5x with the default configuration).
 * Endpoints: GET /healthz with the default configuration (public; the
 * database asked at most once a second) and GET /v1/ingest/runs?limit=1
 * (bearer token, audited, one indexed query) with the per-address request
 * rate off (the default's 100/s would answer wrk 429).
 *
 * wrk and nginx come from Debian (wrk, nginx-light): installed here with
 * apt-get when missing and running as root, else the benchmark is skipped
 * with a message. nginx listens on 127.0.0.1 only and runs from a private
 * directory with its own config, pid file, logs and temp paths; it is our
 * child (daemon off) and is stopped at the end.
 * Prints markdown rows "| figure | ours | limit | ratio |". */
#include "gl/common.h"
#include "lib/testlib.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define WRK_ARGS "-t2 -c64 -d8s"

static char g_dir[256];
static pid_t g_nginx = -1;

static int have(const char *cmd)
{
	char buf[256];
	snprintf(buf, sizeof buf, "command -v %s >/dev/null 2>&1 || test -x /usr/sbin/%s", cmd, cmd);
	return system(buf) == 0;
}

/* 0 when wrk and nginx are there (installed now if we may), -1 to skip. */
static int ensure_tools(void)
{
	if (have("wrk") && have("nginx"))
		return 0;
	if (geteuid() != 0) {
		fprintf(stderr, "  bench_wrk: skipped: wrk or nginx missing (apt-get install wrk nginx-light, as root)\n");
		return -1;
	}
	fprintf(stderr, "  bench_wrk: installing wrk nginx-light ...\n");
	/* a fresh container may have no package lists yet: update only if needed */
	if (system("DEBIAN_FRONTEND=noninteractive apt-get install -y wrk nginx-light >/dev/null 2>&1") != 0 &&
	    (system("apt-get update >/dev/null 2>&1") != 0 ||
	     system("DEBIAN_FRONTEND=noninteractive apt-get install -y wrk nginx-light >/dev/null 2>&1") != 0)) {
		fprintf(stderr, "  bench_wrk: skipped: apt-get install wrk nginx-light failed\n");
		return -1;
	}
	return have("wrk") && have("nginx") ? 0 : -1;
}

/* A loopback port that was free a moment ago. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t n = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &n) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

struct body {
	char *p;
	size_t n;
};

static size_t collect(char *p, size_t sz, size_t n, void *ud)
{
	struct body *b = ud;
	b->p = realloc(b->p, b->n + sz * n + 1);
	memcpy(b->p + b->n, p, sz * n);
	b->n += sz * n;
	b->p[b->n] = '\0';
	return sz * n;
}

/* The body the daemon answers for path, written to <www>/<file>. */
static int save_body(int port, const char *token, const char *path, const char *file)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hl = NULL;
	struct body b = {NULL, 0};
	char url[256], auth[128], out[512];
	long st = 0;
	FILE *f;
	int rc = -1;
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
	hl = curl_slist_append(hl, auth);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(h) == CURLE_OK && (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st), st == 200) && b.n) {
		snprintf(out, sizeof out, "%s/www/%s", g_dir, file);
		if ((f = fopen(out, "w"))) {
			fwrite(b.p, 1, b.n, f);
			rc = fclose(f) ? -1 : 0;
		}
	}
	free(b.p);
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return rc;
}

/* nginx as our child on 127.0.0.1:port, everything under g_dir. */
static int start_nginx(int port)
{
	char conf[512], www[300];
	FILE *f;
	snprintf(conf, sizeof conf, "%s/nginx.conf", g_dir);
	snprintf(www, sizeof www, "%s/www", g_dir);
	if (!(f = fopen(conf, "w")))
		return -1;
	/* workers as root can read the private directory; keep-alive as long
	 * as wrk runs; no access log (the daemon's is in the database, but a
	 * file write per request would only slow nginx, the limit) */
	fprintf(f,
		"worker_processes 2;\nuser root;\npid %1$s/nginx.pid;\nerror_log %1$s/error.log warn;\n"
		"events { worker_connections 1024; }\n"
		"http {\n  access_log off;\n"
		"  client_body_temp_path %1$s/tmp/body;\n  proxy_temp_path %1$s/tmp/proxy;\n"
		"  fastcgi_temp_path %1$s/tmp/fastcgi;\n  uwsgi_temp_path %1$s/tmp/uwsgi;\n  scgi_temp_path %1$s/tmp/scgi;\n"
		"  keepalive_timeout 65;\n  keepalive_requests 100000000;\n"
		"  default_type application/json;\n"
		"  server {\n    listen 127.0.0.1:%2$d;\n    root %3$s;\n"
		"    location = /healthz { try_files /healthz =404; }\n"
		"    location = /v1/ingest/runs { try_files /ingest_runs =404; }\n"
		"  }\n}\n",
		g_dir, port, www);
	if (fclose(f))
		return -1;
	g_nginx = fork();
	if (g_nginx < 0)
		return -1;
	if (g_nginx == 0) {
		char prefix[300];
		snprintf(prefix, sizeof prefix, "%s/", g_dir);
		/* -e: the startup error log, before the config names ours */
		execlp("nginx", "nginx", "-p", prefix, "-c", conf, "-e", "stderr", "-g", "daemon off;", (char *)NULL);
		execl("/usr/sbin/nginx", "nginx", "-p", prefix, "-c", conf, "-e", "stderr", "-g", "daemon off;",
		      (char *)NULL);
		_exit(127);
	}
	/* wait until it answers */
	for (int i = 0; i < 100; i++) {
		CURL *h = curl_easy_init();
		char url[64];
		long st = 0;
		struct body b = {NULL, 0};
		snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", port);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
		if (curl_easy_perform(h) == CURLE_OK)
			curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
		curl_easy_cleanup(h);
		free(b.p);
		if (st == 200)
			return 0;
		if (waitpid(g_nginx, NULL, WNOHANG) == g_nginx) {
			g_nginx = -1;
			return -1;
		}
		usleep(50 * 1000);
	}
	return -1;
}

static void stop_nginx(void)
{
	if (g_nginx <= 0)
		return;
	/* QUIT: graceful, the master stops its workers */
	kill(g_nginx, SIGQUIT);
	waitpid(g_nginx, NULL, 0);
	g_nginx = -1;
}

/* Requests/sec that wrk reports for url (auth: a header or NULL); -1 on
 * failure or when wrk saw non-2xx answers or socket errors. */
static double wrk(const char *url, const char *auth)
{
	char cmd[1024], line[512];
	double rps = -1;
	int bad = 0;
	FILE *p;
	snprintf(cmd, sizeof cmd, "wrk " WRK_ARGS " %s%s%s '%s' 2>&1", auth ? "-H '" : "", auth ? auth : "",
		 auth ? "'" : "", url);
	if (!(p = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof line, p)) {
		if (!strncmp(line, "Requests/sec:", 13))
			rps = atof(line + 13);
		if (strstr(line, "Non-2xx") || strstr(line, "Socket errors"))
			bad = 1, fprintf(stderr, "  bench_wrk: %s: %s", url, line);
	}
	pclose(p);
	return bad ? -1 : rps;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Alternating rounds of wrk against ours and the peer: the median ratio,
 * and the rounds' figures in the row. */
static int rounds(const char *name, const char *cfg_note, const char *ours_url, const char *peer_url, const char *auth,
		  int n, const char *limit)
{
	double ratio[64], ours_all[64], peer_all[64];
	char list[1024] = "";
	size_t o = 0;
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		ours_all[i] = wrk(ours_url, auth);
		peer_all[i] = wrk(peer_url, auth);
		if (ours_all[i] <= 0 || peer_all[i] <= 0) {
			fprintf(stderr, "bench_wrk: wrk failed on %s\n", ours_url);
			return -1;
		}
		ratio[i] = ours_all[i] / peer_all[i];
		fprintf(stderr, "  round %d, %s: gpuledger %.0f req/s, nginx static %.0f req/s, %.2f\n", i + 1, name,
			ours_all[i], peer_all[i], ratio[i]);
		o += (size_t)snprintf(list + o, o < sizeof list ? sizeof list - o : 0, "%s%.2f", i ? " " : "", ratio[i]);
	}
	qsort(ours_all, (size_t)n, sizeof *ours_all, cmp_double);
	qsort(peer_all, (size_t)n, sizeof *peer_all, cmp_double);
	qsort(ratio, (size_t)n, sizeof *ratio, cmp_double);
	printf("| keep-alive throughput, %s (wrk " WRK_ARGS ", %s) vs nginx static, same bytes, %d alternating rounds "
	       "(ratios %s) | median %.0f vs %.0f req/s | %s | median %.2f |\n",
	       name, cfg_note, n, list, ours_all[n / 2], peer_all[n / 2], limit, ratio[n / 2]);
	fflush(stdout);
	return 0;
}

int main(void)
{
	/* the default configuration: only the log level is set */
	static const char cfg_default[] = "log:\n  level: warn\n";
	static const char cfg_norate[] = "log:\n  level: warn\nserver:\n  rate_limit_per_ip: 0\n";
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	int n = getenv("BENCH_WRK_ROUNDS") ? atoi(getenv("BENCH_WRK_ROUNDS")) : 9;
	struct gl_test_daemon d;
	char dsn[512], sub[300], auth[128], fields[1024], ours_url[256], peer_url[256];
	struct gl_test_out o;
	int port, rc = 1, started = 0;

	if (n < 1)
		n = 1;
	if (ensure_tools())
		return 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(g_dir, sizeof g_dir, "%s/bench-wrk.XXXXXX", tmp);
	if (!mkdtemp(g_dir))
		gl_test_die("mkdtemp");
	chmod(g_dir, 0755);
	for (const char *const *s = (const char *const[]){"www", "tmp", NULL}; *s; s++) {
		snprintf(sub, sizeof sub, "%s/%s", g_dir, *s);
		if (mkdir(sub, 0755) && errno != EEXIST)
			gl_test_die("mkdir");
	}
	if (gl_test_db_fresh("gl_bench_wrk", dsn, sizeof dsn) || gl_test_sacct_fields(fields, sizeof fields))
		gl_test_die("cannot create the database");
	/* one real ingest run, so /v1/ingest/runs?limit=1 has a row to send */
	if (gl_test_run(dsn, NULL, &o, "ingest", "sacct", "--cluster", "testgpu", "--file",
			gl_test_fixture("tests/fixtures/sacct/testbed/sacct_alloc.txt"), "--fields", fields, NULL) == 0)
		gl_test_out_fini(&o);
	if (gl_test_daemon_start(&d, dsn, cfg_default, (const char *const[]){"--no-ingest", NULL}) || !d.token[0])
		gl_test_die("cannot start the daemon");
	started = 1;
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", d.token);
	if (save_body(d.port, d.token, "/healthz", "healthz") ||
	    save_body(d.port, d.token, "/v1/ingest/runs?limit=1", "ingest_runs")) {
		fprintf(stderr, "bench_wrk: cannot fetch the bodies\n");
		goto out;
	}
	if ((port = free_port()) < 0 || start_nginx(port)) {
		fprintf(stderr, "bench_wrk: nginx did not start (see %s/error.log)\n", g_dir);
		goto out;
	}
	snprintf(ours_url, sizeof ours_url, "http://127.0.0.1:%d/healthz", d.port);
	snprintf(peer_url, sizeof peer_url, "http://127.0.0.1:%d/healthz", port);
	if (rounds("GET /healthz", "default configuration", ours_url, peer_url, NULL, n, "≥ 0.5×"))
		goto out;
	gl_test_daemon_stop(&d);
	started = 0;
	if (gl_test_daemon_start(&d, dsn, cfg_norate, (const char *const[]){"--no-ingest", NULL}) || !d.token[0])
		gl_test_die("cannot start the daemon");
	started = 1;
	snprintf(auth, sizeof auth, "Authorization: Bearer %s", d.token);
	snprintf(ours_url, sizeof ours_url, "http://127.0.0.1:%d/v1/ingest/runs?limit=1", d.port);
	snprintf(peer_url, sizeof peer_url, "http://127.0.0.1:%d/v1/ingest/runs?limit=1", port);
	if (rounds("GET /v1/ingest/runs?limit=1 (token, audited)", "rate_limit_per_ip: 0", ours_url, peer_url, auth,
		   n < 3 ? n : 3, "– (a query and an audit row a request)"))
		goto out;
	rc = 0;
out:
	stop_nginx();
	if (started)
		gl_test_daemon_stop(&d);
	snprintf(sub, sizeof sub, "rm -rf '%s'", g_dir);
	if (system(sub) != 0)
		fprintf(stderr, "bench_wrk: could not remove %s\n", g_dir);
	return rc;
}
