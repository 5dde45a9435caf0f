/* The static-file module's pure parts: Accept-Encoding and If-None-Match
 * parsing (RFC 9110 examples and edge cases) and MIME types; and the
 * loader on a real directory (dotfiles, symlinks, lookups). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/static.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_accept_encoding(void **state)
{
	assert_false(gl_static_accepts_gzip(NULL));
	assert_false(gl_static_accepts_gzip(""));
	assert_true(gl_static_accepts_gzip("gzip"));
	assert_true(gl_static_accepts_gzip("gzip, deflate, br"));
	assert_true(gl_static_accepts_gzip("br;q=1.0, GZIP;q=0.5"));
	assert_true(gl_static_accepts_gzip("x-gzip"));
	assert_true(gl_static_accepts_gzip("*"));
	assert_true(gl_static_accepts_gzip("deflate, *;q=0.1"));
	assert_false(gl_static_accepts_gzip("gzip;q=0"));
	assert_false(gl_static_accepts_gzip("gzip; q=0.000, *"));
	assert_false(gl_static_accepts_gzip("identity"));
	assert_false(gl_static_accepts_gzip("deflate, br"));
	assert_false(gl_static_accepts_gzip("*;q=0"));
	assert_false(gl_static_accepts_gzip("gzipx"));
}

static void test_if_none_match(void **state)
{
	assert_true(gl_static_etag_matches("\"abc\"", "\"abc\""));
	assert_true(gl_static_etag_matches("W/\"abc\"", "\"abc\""));
	assert_true(gl_static_etag_matches("\"x\", \"abc\"", "\"abc\""));
	assert_true(gl_static_etag_matches(" \"x\" ,W/\"abc\" ", "\"abc\""));
	assert_true(gl_static_etag_matches("*", "\"abc\""));
	assert_false(gl_static_etag_matches("\"abcd\"", "\"abc\""));
	assert_false(gl_static_etag_matches("\"ab\"", "\"abc\""));
	assert_false(gl_static_etag_matches("abc", "\"abc\""));
	assert_false(gl_static_etag_matches("", "\"abc\""));
	assert_false(gl_static_etag_matches(NULL, "\"abc\""));
}

static void test_mime(void **state)
{
	assert_string_equal(gl_static_mime("a/index.html"), "text/html; charset=utf-8");
	assert_string_equal(gl_static_mime("app.JS"), "text/javascript; charset=utf-8");
	assert_string_equal(gl_static_mime("m.mjs"), "text/javascript; charset=utf-8");
	assert_string_equal(gl_static_mime("s.css"), "text/css; charset=utf-8");
	assert_string_equal(gl_static_mime("i.svg"), "image/svg+xml");
	assert_string_equal(gl_static_mime("f.woff2"), "font/woff2");
	assert_string_equal(gl_static_mime("LICENSE"), "application/octet-stream");
	assert_string_equal(gl_static_mime("dir.js/LICENSE"), "application/octet-stream");
	assert_string_equal(gl_static_mime("x."), "application/octet-stream");
}

static void write_file(const char *p, const char *s)
{
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(s, f);
	fclose(f);
}

static void test_load_and_find(void **state)
{
	char dir[] = "/tmp/gl-static-XXXXXX", p[256];
	struct gl_static *s = NULL;
	struct gl_err err = {0};
	const struct gl_static_file *f;

	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof p, "%s/a", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/a/index.html", dir);
	write_file(p, "<p>a</p>");
	snprintf(p, sizeof p, "%s/x.js", dir);
	write_file(p, "let x;");
	snprintf(p, sizeof p, "%s/.env", dir);
	write_file(p, "SECRET=1");
	snprintf(p, sizeof p, "%s/node_modules", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/node_modules/y.js", dir);
	write_file(p, "y");
	snprintf(p, sizeof p, "%s/etc", dir);
	assert_int_equal(symlink("/etc", p), 0);

	assert_int_equal(gl_static_load(dir, &s, &err), 0);
	assert_int_equal(gl_static_count(s), 2);
	f = gl_static_find(s, "/x.js");
	assert_non_null(f);
	assert_int_equal(f->len, 6);
	assert_null(f->gz); /* too small to be worth it */
	assert_non_null(gl_static_find(s, "/a/"));
	assert_ptr_equal(gl_static_find(s, "/a/"), gl_static_find(s, "/a/index.html"));
	assert_null(gl_static_find(s, "/a"));
	assert_null(gl_static_find(s, "/"));
	assert_null(gl_static_find(s, "/.env"));
	assert_null(gl_static_find(s, "/node_modules/y.js"));
	assert_null(gl_static_find(s, "/etc/passwd"));
	assert_null(gl_static_find(s, "x.js"));
	assert_null(gl_static_find(s, "/a/../x.js"));
	gl_static_free(s);

	assert_int_equal(gl_static_load("/nonexistent-gl-web", &s, &err), -GL_ENOTFOUND);
	assert_null(s);
	assert_non_null(strstr(err.msg, "/nonexistent-gl-web"));

	snprintf(p, sizeof p, "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accept_encoding),
		cmocka_unit_test(test_if_none_match),
		cmocka_unit_test(test_mime),
		cmocka_unit_test(test_load_and_find),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
