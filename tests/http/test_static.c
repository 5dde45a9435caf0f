/* The dashboard's static files over the real daemon: MIME types, the
 * security headers, ETag/If-None-Match -> 304, gzip when accepted (the
 * bytes decompress to the file), no token needed while the API still wants
 * one, and no way out of server.web_dir (raw requests, so no client
 * normalises the path first). The site is written here, in a temp dir,
 * next to a secret file that must never be served. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/static.h"
#include "lib/testlib.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define SECRET "TOP-SECRET-not-part-of-the-site"

static char g_dsn[512], g_root[256], g_web[300];
static struct gl_test_daemon g_d;
static int g_running;

static const char index_html[] =
	"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>t</title>"
	"<link rel=\"stylesheet\" href=\"style.css\"><script type=\"module\" src=\"app.js\"></script></head>"
	"<body><main>hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello "
	"hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello</main></body></html>\n";
static const char app_js[] = "export const x = 1;\n";
static const char style_css[] = "body { color: black; }\n";
static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0};

static void put(const char *rel, const void *data, size_t n)
{
	char p[512];
	FILE *f;
	snprintf(p, sizeof p, "%s/%s", g_root, rel);
	f = fopen(p, "wb");
	if (!f || fwrite(data, 1, n, f) != n)
		gl_test_die("test_static: cannot write the site");
	fclose(f);
}

static int setup(void **state)
{
	char cfg[512], p[512];
	const char *tmp = getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp";
	snprintf(g_root, sizeof g_root, "%s/static-%d", tmp, (int)getpid());
	snprintf(g_web, sizeof g_web, "%s/web", g_root);
	mkdir(g_root, 0755);
	mkdir(g_web, 0755);
	snprintf(p, sizeof p, "%s/sub", g_web);
	mkdir(p, 0755);
	put("secret.txt", SECRET, strlen(SECRET));
	put("web/index.html", index_html, strlen(index_html));
	put("web/app.js", app_js, strlen(app_js));
	put("web/style.css", style_css, strlen(style_css));
	put("web/data.json", "{\"a\":1}", 7);
	put("web/logo.png", png, sizeof png);
	put("web/blob.xyz", "x", 1);
	put("web/sub/page.html", "<p>sub</p>", 10);
	put("web/.hidden", SECRET, strlen(SECRET));
	snprintf(p, sizeof p, "%s/link.txt", g_web);
	if (symlink("../secret.txt", p))
		return -1;
	snprintf(p, sizeof p, "%s/linkdir", g_web);
	if (symlink("..", p))
		return -1;
	if (gl_test_db_fresh("gl_test_static", g_dsn, sizeof g_dsn))
		return -1;
	snprintf(cfg, sizeof cfg, "log:\n  level: warn\nserver:\n  web_dir: %s\n", g_web);
	if (gl_test_daemon_start(&g_d, g_dsn, cfg, (const char *const[]){"--no-ingest", NULL}))
		return -1;
	g_running = 1;
	return 0;
}

static int teardown(void **state)
{
	return g_running && gl_test_daemon_stop(&g_d) != 0 ? -1 : 0;
}

/* The value of header name in a raw header block, into out ("" when absent). */
static const char *header(const char *headers, const char *name, char *out, size_t n)
{
	size_t k = strlen(name);
	out[0] = '\0';
	for (const char *p = headers; p && *p;) {
		const char *eol = strstr(p, "\r\n");
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > k && !strncasecmp(p, name, k) && p[k] == ':') {
			const char *v = p + k + 1;
			while (*v == ' ')
				v++;
			snprintf(out, n, "%.*s", (int)(len - (size_t)(v - p)), v);
			return out;
		}
		if (!eol)
			break;
		p = eol + 2;
	}
	return out;
}

static long get(const char *path, const char *const *hdrs, int token, struct gl_test_http *r)
{
	struct gl_test_http_opts o = {NULL, !token, NULL};
	assert_int_equal(gl_test_http_ex(g_d.port, "GET", path, NULL, 0, hdrs, &o, r), 0);
	return r->status;
}

static void expect_file(const char *path, const char *mime, const void *data, size_t n)
{
	struct gl_test_http r;
	char v[256];
	assert_int_equal(get(path, NULL, 0, &r), 200);
	assert_string_equal(header(r.headers, "Content-Type", v, sizeof v), mime);
	assert_int_equal(r.len, n);
	assert_memory_equal(r.body, data, n);
	assert_string_equal(header(r.headers, "Content-Security-Policy", v, sizeof v), GL_STATIC_CSP);
	assert_non_null(strstr(v, "default-src 'self'"));
	assert_non_null(strstr(v, "frame-ancestors 'none'"));
	assert_string_equal(header(r.headers, "X-Content-Type-Options", v, sizeof v), "nosniff");
	assert_string_equal(header(r.headers, "Cache-Control", v, sizeof v), "no-cache");
	assert_true(header(r.headers, "ETag", v, sizeof v)[0] == '"');
	assert_null(strstr(r.headers, "Content-Encoding"));
	gl_test_http_fini(&r);
}

static void test_mime_types_and_headers(void **state)
{
	expect_file("/", "text/html; charset=utf-8", index_html, strlen(index_html));
	expect_file("/index.html", "text/html; charset=utf-8", index_html, strlen(index_html));
	expect_file("/app.js", "text/javascript; charset=utf-8", app_js, strlen(app_js));
	expect_file("/style.css", "text/css; charset=utf-8", style_css, strlen(style_css));
	expect_file("/data.json", "application/json", "{\"a\":1}", 7);
	expect_file("/logo.png", "image/png", png, sizeof png);
	expect_file("/blob.xyz", "application/octet-stream", "x", 1);
	expect_file("/sub/page.html", "text/html; charset=utf-8", "<p>sub</p>", 10);
}

static void test_files_need_no_token_but_the_api_does(void **state)
{
	struct gl_test_http r;
	assert_int_equal(get("/app.js", NULL, 0, &r), 200);
	gl_test_http_fini(&r);
	assert_int_equal(get("/v1/inventory", NULL, 0, &r), 401);
	gl_test_http_fini(&r);
	assert_int_equal(get("/v1/inventory", NULL, 1, &r), 200);
	gl_test_http_fini(&r);
	/* a path that is neither a file nor a route: still no map for strangers */
	assert_int_equal(get("/missing.js", NULL, 0, &r), 401);
	gl_test_http_fini(&r);
	assert_int_equal(get("/missing.js", NULL, 1, &r), 404);
	gl_test_http_fini(&r);
	/* only GET and HEAD reach the files */
	{
		struct gl_test_http_opts o = {NULL, 1, NULL};
		assert_int_equal(gl_test_http_ex(g_d.port, "POST", "/app.js", "x", 1, NULL, &o, &r), 0);
		assert_int_equal(r.status, 401);
		gl_test_http_fini(&r);
		assert_int_equal(gl_test_http_ex(g_d.port, "HEAD", "/app.js", NULL, 0, NULL, &o, &r), 0);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.len, 0);
		gl_test_http_fini(&r);
	}
}

static void test_etag_revalidation(void **state)
{
	struct gl_test_http r;
	char etag[64], line[128], v[256];
	assert_int_equal(get("/app.js", NULL, 0, &r), 200);
	header(r.headers, "ETag", etag, sizeof etag);
	gl_test_http_fini(&r);
	assert_true(strlen(etag) > 10);

	snprintf(line, sizeof line, "If-None-Match: %s", etag);
	assert_int_equal(get("/app.js", (const char *const[]){line, NULL}, 0, &r), 304);
	assert_int_equal(r.len, 0);
	assert_string_equal(header(r.headers, "ETag", v, sizeof v), etag);
	assert_string_equal(header(r.headers, "Cache-Control", v, sizeof v), "no-cache");
	gl_test_http_fini(&r);
	/* in a list, and weak: If-None-Match compares weakly */
	snprintf(line, sizeof line, "If-None-Match: \"other\", W/%s", etag);
	assert_int_equal(get("/app.js", (const char *const[]){line, NULL}, 0, &r), 304);
	gl_test_http_fini(&r);
	assert_int_equal(get("/app.js", (const char *const[]){"If-None-Match: \"stale\"", NULL}, 0, &r), 200);
	assert_int_equal(r.len, strlen(app_js));
	gl_test_http_fini(&r);
	/* another file's validator is not this file's */
	snprintf(line, sizeof line, "If-None-Match: %s", etag);
	assert_int_equal(get("/style.css", (const char *const[]){line, NULL}, 0, &r), 200);
	gl_test_http_fini(&r);
}

static void test_gzip_when_accepted(void **state)
{
	struct gl_test_http r;
	char v[256], etag_plain[64], line[128];
	unsigned char out[4096];
	z_stream z;

	assert_int_equal(get("/index.html", NULL, 0, &r), 200);
	header(r.headers, "ETag", etag_plain, sizeof etag_plain);
	assert_string_equal(header(r.headers, "Vary", v, sizeof v), "Accept-Encoding");
	gl_test_http_fini(&r);

	assert_int_equal(get("/index.html", (const char *const[]){"Accept-Encoding: br, gzip, deflate", NULL}, 0, &r), 200);
	assert_string_equal(header(r.headers, "Content-Encoding", v, sizeof v), "gzip");
	assert_string_equal(header(r.headers, "Vary", v, sizeof v), "Accept-Encoding");
	assert_string_not_equal(header(r.headers, "ETag", v, sizeof v), etag_plain);
	assert_true(r.len < strlen(index_html));
	memset(&z, 0, sizeof z);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (unsigned char *)r.body;
	z.avail_in = (unsigned)r.len;
	z.next_out = out;
	z.avail_out = sizeof out;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	assert_int_equal(z.total_out, strlen(index_html));
	assert_memory_equal(out, index_html, strlen(index_html));
	inflateEnd(&z);
	gl_test_http_fini(&r);
	/* the gzip representation revalidates too */
	snprintf(line, sizeof line, "If-None-Match: %s", v);
	assert_int_equal(get("/index.html", (const char *const[]){"Accept-Encoding: gzip", line, NULL}, 0, &r), 304);
	gl_test_http_fini(&r);

	assert_int_equal(get("/index.html", (const char *const[]){"Accept-Encoding: gzip;q=0, identity", NULL}, 0, &r),
			 200);
	assert_string_equal(header(r.headers, "Content-Encoding", v, sizeof v), "");
	assert_int_equal(r.len, strlen(index_html));
	gl_test_http_fini(&r);
	/* binary types are sent as they are */
	assert_int_equal(get("/logo.png", (const char *const[]){"Accept-Encoding: gzip", NULL}, 0, &r), 200);
	assert_string_equal(header(r.headers, "Content-Encoding", v, sizeof v), "");
	assert_int_equal(r.len, sizeof png);
	gl_test_http_fini(&r);
}

/* A raw request: the path goes out exactly as written. Returns the status
 * and leaves the whole answer in buf. */
static int raw_get(const char *path, char *buf, size_t n)
{
	struct sockaddr_in a = {0};
	char req[512];
	size_t got = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0), status = -1;
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)g_d.port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	/* with the admin token: a path that is not a file then gets 404 (or 400),
	 * not 401, and the failed-authentication limiter stays out of it */
	snprintf(req, sizeof req,
		 "GET %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", path,
		 g_d.token);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	for (;;) {
		ssize_t k = read(fd, buf + got, n - 1 - got);
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got == n - 1)
			break;
	}
	buf[got] = '\0';
	close(fd);
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		status = -1;
	return status;
}

static void test_no_way_out_of_the_web_dir(void **state)
{
	static const char *const paths[] = {
		"/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt", "/sub/../../secret.txt",
		"/sub/..%2f..%2fsecret.txt", "/./../secret.txt", "//secret.txt", "/..\\secret.txt", "/link.txt",
		"/linkdir/secret.txt", "/.hidden", "/sub/../.hidden", "/.hidden%00", "/../../../../etc/passwd",
		"/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "../secret.txt", "/web/../secret.txt",
	};
	char buf[8192];
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		int st = raw_get(paths[i], buf, sizeof buf);
		if (st == 200 || strstr(buf, SECRET) || strstr(buf, "root:"))
			fail_msg("%s: status %d, answer %.200s", paths[i], st, buf);
		if (st != 400 && st != 404)
			fail_msg("%s: status %d", paths[i], st);
	}
	/* libmicrohttpd decodes %00 and the path ends there: what it names is
	 * still only ever a file of the site */
	assert_int_equal(raw_get("/index.html%00.png", buf, sizeof buf), 200);
	assert_non_null(strstr(buf, "text/html"));
	/* the same raw client does get a real file: the probe can succeed */
	assert_int_equal(raw_get("/sub/page.html", buf, sizeof buf), 200);
	assert_non_null(strstr(buf, "<p>sub</p>"));
}

/* Files are counted under their own route label, 200s and 304s apart. */
static void test_metrics_count_static_files(void **state)
{
	struct gl_test_http r;
	char etag[64], line[128];
	assert_int_equal(get("/style.css", NULL, 0, &r), 200);
	header(r.headers, "ETag", etag, sizeof etag);
	gl_test_http_fini(&r);
	snprintf(line, sizeof line, "If-None-Match: %s", etag);
	assert_int_equal(get("/style.css", (const char *const[]){line, NULL}, 0, &r), 304);
	gl_test_http_fini(&r);
	assert_int_equal(get("/metrics", NULL, 1, &r), 200);
	assert_non_null(strstr(r.body, "gpuledger_http_requests_total{route=\"static\",code=\"200\"}"));
	assert_non_null(strstr(r.body, "gpuledger_http_requests_total{route=\"static\",code=\"304\"}"));
	assert_non_null(strstr(r.body, "gpuledger_http_request_duration_seconds_count{route=\"static\"}"));
	gl_test_http_fini(&r);
}

/* /v1/whoami, which the dashboard reads to choose its views: the caller's
 * own role and scope, for every role and for a scoped token (which the
 * server would refuse with 403 if the route did not handle scopes). */
static void test_whoami(void **state)
{
	static const char *const roles[] = {"viewer", "finance", "admin", "hook"};
	char tok[64];
	for (size_t i = 0; i < 4; i++) {
		struct gl_test_http r;
		struct gl_test_http_opts o = {tok, 0, NULL};
		cJSON *j;
		char name[32];
		snprintf(name, sizeof name, "who-%s", roles[i]);
		assert_int_equal(gl_test_token_create(g_dsn, name, roles[i],
						      i == 1 ? (const char *const[]){"--scope", "owner=teama", "--scope",
										     "owner=teamb", NULL}
							     : NULL,
						      tok, sizeof tok, NULL),
				 0);
		assert_int_equal(gl_test_http_ex(g_d.port, "GET", "/v1/whoami", NULL, 0, NULL, &o, &r), 0);
		assert_int_equal(r.status, 200);
		j = cJSON_Parse(r.body);
		assert_non_null(j);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "role")), roles[i]);
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "name")), name);
		/* the dashboard shows money in it (the configuration's default) */
		assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "currency")), "USD");
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "owners")), i == 1 ? 2 : 0);
		if (i == 1) {
			/* owner= is a team (docs/security.md, Owner scopes) */
			assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "owners"), 1)),
					    "team=teamb");
			assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "scope"), "team")), 2);
		}
		assert_null(strstr(r.body, tok));
		cJSON_Delete(j);
		gl_test_http_fini(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mime_types_and_headers),
		cmocka_unit_test(test_files_need_no_token_but_the_api_does),
		cmocka_unit_test(test_etag_revalidation),
		cmocka_unit_test(test_gzip_when_accepted),
		cmocka_unit_test(test_no_way_out_of_the_web_dir),
		cmocka_unit_test(test_whoami),
		cmocka_unit_test(test_metrics_count_static_files),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
