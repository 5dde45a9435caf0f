/* strbuf, time helpers, log rate limiting, child processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/log.h"
#include "gl/proc.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/tmpl.h"
#include "gl/jsonscan.h"
#include "gl/bounds.h"
#include "lib/testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_strbuf_escapes(void **state)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	static const char raw[] = "a\tb\\c\nd\re";
	gl_strbuf_put_copy_text(&b, raw, strlen(raw));
	assert_string_equal(gl_strbuf_cstr(&b), "a\\tb\\\\c\\nd\\re");
	gl_strbuf_reset(&b);
	gl_strbuf_put_json_str(&b, "q\"\x01\\", 4);
	assert_string_equal(gl_strbuf_cstr(&b), "q\\\"\\u0001\\\\");
	gl_strbuf_reset(&b);
	gl_strbuf_put_i64(&b, INT64_MIN + 1);
	gl_strbuf_putc(&b, ' ');
	gl_strbuf_put_i64(&b, 0);
	gl_strbuf_putc(&b, ' ');
	gl_strbuf_put_i64(&b, 1234567);
	assert_string_equal(gl_strbuf_cstr(&b), "-9223372036854775807 0 1234567");
	gl_strbuf_reset(&b);
	for (int i = 0; i < 10000; i++)
		gl_strbuf_printf(&b, "%d,", i);
	assert_int_equal(b.len, 48890);
	gl_strbuf_fini(&b);
}

struct tcase {
	const char *in;
	long long want; /* LLONG_MIN = error */
};

static const struct tcase times[] = {
	{"1970-01-01T00:00:00Z", 0},
	{"2026-11-22T16:03:53Z", 1795363433},
	{"2026-11-22T16:03:53", 1795363433},
	{"2026-11-22 16:03:53", 1795363433},
	{"2026-11-22T18:03:53+02:00", 1795363433},
	{"2026-11-22T16:03:53.999Z", 1795363433},
	{"2026-11-22", 1795305600},
	{"2024-02-29T00:00:00Z", 1709164800},
	{"2023-02-29T00:00:00Z", INT64_MIN},
	{"2026-13-01", INT64_MIN},
	{"2026-11-22T25:00:00Z", INT64_MIN},
	{"2026-11-22T16:03", 1795363380},
	{"yesterday", INT64_MIN},
	{"2026-11-22T16:03:53Zjunk", INT64_MIN},
	{"", INT64_MIN},
};

static void test_time_parse(void **state)
{
	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		int64_t t = 0;
		int rc = gl_timeutil_parse(times[i].in, strlen(times[i].in), &t);
		if (times[i].want == INT64_MIN) {
			if (rc == 0)
				fprintf(stderr, "'%s' parsed as %lld\n", times[i].in, (long long)t);
			assert_int_not_equal(rc, 0);
		} else {
			if (rc != 0 || t != times[i].want)
				fprintf(stderr, "'%s': rc %d t %lld want %lld\n", times[i].in, rc, (long long)t, times[i].want);
			assert_int_equal(rc, 0);
			assert_int_equal(t, times[i].want);
		}
	}
}

static void test_time_roundtrip(void **state)
{
	/* weekdays, Monday 0: the epoch was a Thursday, 2026-11-23 a Monday,
	 * 1969-12-31 a Wednesday (before the epoch, floor division) */
	assert_int_equal(gl_timeutil_weekday(0), 3);
	assert_int_equal(gl_timeutil_weekday(1795392000LL + 86399), 0);
	assert_int_equal(gl_timeutil_weekday(1795392000LL + 6 * 86400), 6);
	assert_int_equal(gl_timeutil_weekday(-1), 2);
	/* every day across 1900..2200 round-trips through civil dates */
	char buf[32];
	for (int64_t t = -2208988800LL; t < 7258118400LL; t += 86400 + 3661) {
		int64_t back;
		gl_timeutil_format(t, buf, sizeof buf);
		assert_int_equal(gl_timeutil_parse(buf, strlen(buf), &back), 0);
		assert_int_equal(back, t);
	}
	gl_timeutil_format(1795363433, buf, sizeof buf);
	assert_string_equal(buf, "2026-11-22T16:03:53Z");
	gl_timeutil_format_day(1795363433, buf, sizeof buf);
	assert_string_equal(buf, "2026-11-22");
	gl_timeutil_format_day(-1, buf, sizeof buf); /* the last second of 1969 */
	assert_string_equal(buf, "1969-12-31");
}

/* A time written into buffers of every size around its length (20 bytes
 * and the NUL): cut as snprintf cuts, nothing past n, n = 0 writes
 * nothing; the years outside 0-9999 as snprintf's %04lld writes them.
 * Values hand-computed from the civil calendar. */
static void test_time_format_bounds(void **state)
{
	static const struct {
		int64_t t;
		const char *want;
	} c[] = {
		{0, "1970-01-01T00:00:00Z"},
		{-1, "1969-12-31T23:59:59Z"},
		{-86400, "1969-12-31T00:00:00Z"},
		{-86401, "1969-12-30T23:59:59Z"},
		{1795363433, "2026-11-22T16:03:53Z"},
		{253402300799LL, "9999-12-31T23:59:59Z"},
		{253402300800LL, "10000-01-01T00:00:00Z"},
		{-62167219200LL, "0000-01-01T00:00:00Z"},
		{-62167219201LL, "-001-12-31T23:59:59Z"},
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++)
		for (size_t n = 0; n <= strlen(c[i].want) + 2; n++) {
			char buf[40];
			memset(buf, '#', sizeof buf);
			gl_timeutil_format(c[i].t, buf, n);
			assert_int_equal(gl_test_cut_ok(buf, n, c[i].want), 0);
		}
}

static void test_log_limiter(void **state)
{
	struct gl_log_limiter lim = GL_LOG_LIMITER_INIT(60);
	char path[] = "/tmp/gl-log-XXXXXX", text[4096] = {0};
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	gl_log_set_fd(fd);
	gl_log_fail(&lim, 1000, GL_LOG_ERROR, "sacct: down");   /* logged */
	gl_log_fail(&lim, 1010, GL_LOG_ERROR, "sacct: down");   /* suppressed */
	gl_log_fail(&lim, 1020, GL_LOG_ERROR, "sacct: down");   /* suppressed */
	gl_log_fail(&lim, 1061, GL_LOG_ERROR, "sacct: down");   /* logged with count 2 */
	gl_log_ok(&lim, "sacct");                                /* one recovered line */
	gl_log_ok(&lim, "sacct");                                /* nothing */
	gl_log_set_fd(2);
	assert_true(pread(fd, text, sizeof text - 1, 0) > 0);
	close(fd);
	unlink(path);
	{
		int lines = 0;
		for (const char *p = text; (p = strchr(p, '\n')); p++)
			lines++;
		assert_int_equal(lines, 3);
	}
	assert_non_null(strstr(text, "sacct: down (repeated 2 more times since last report)"));
	assert_non_null(strstr(text, "sacct: recovered after 4 failures"));
}

static int collect(const char *buf, size_t n, void *ud)
{
	gl_strbuf_append(ud, buf, n);
	return 0;
}

static void test_proc(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT;
	struct gl_proc_opts o = {0};
	struct gl_proc_result r;
	struct gl_err e = {0};
	const char *env[] = {"GL_X=hello world", NULL};
	const char *argv1[] = {"sh", "-c", "printf '%s' \"$GL_X\"; echo oops >&2; exit 3", NULL};
	const char *argv2[] = {"sleep", "5", NULL};
	const char *argv3[] = {"/nonexistent/binary", NULL};

	o.env = env;
	o.on_stdout = collect;
	o.ud = &out;
	assert_int_equal(gl_proc_run(argv1, &o, &r, &e), 0);
	assert_true(r.exited);
	assert_int_equal(r.status, 3);
	assert_string_equal(gl_strbuf_cstr(&out), "hello world");
	assert_string_equal(r.stderr_excerpt, "oops");

	memset(&o, 0, sizeof o);
	o.timeout_s = 1;
	assert_int_equal(gl_proc_run(argv2, &o, &r, &e), 0);
	assert_true(r.timed_out);
	assert_false(r.exited);

	assert_int_equal(gl_proc_run(argv3, NULL, &r, &e), 0);
	assert_true(r.exited);
	assert_int_equal(r.status, 127);
	assert_non_null(strstr(r.stderr_excerpt, "/nonexistent/binary"));
	gl_strbuf_fini(&out);
}

/* A command that exits 0 but leaves a background process holding its
 * stdout and stderr has finished: exit 0, what it wrote kept, not timed out.
 * A command that itself hangs with such a child still times out. */
static void test_proc_background_child(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT;
	struct gl_proc_opts o = {0};
	struct gl_proc_result r;
	struct gl_err e = {0};
	const char *argv1[] = {"sh", "-c", "echo started; echo note >&2; sleep 8 & exit 0", NULL};
	const char *argv2[] = {"sh", "-c", "sleep 8 & sleep 8", NULL};

	o.timeout_s = 4;
	o.on_stdout = collect;
	o.ud = &out;
	assert_int_equal(gl_proc_run(argv1, &o, &r, &e), 0);
	assert_false(r.timed_out);
	assert_true(r.exited);
	assert_int_equal(r.status, 0);
	assert_string_equal(gl_strbuf_cstr(&out), "started\n");
	assert_string_equal(r.stderr_excerpt, "note");

	memset(&o, 0, sizeof o);
	o.timeout_s = 1;
	assert_int_equal(gl_proc_run(argv2, &o, &r, &e), 0);
	assert_true(r.timed_out);
	assert_false(r.exited);
	assert_int_equal(r.status, 9);
	gl_strbuf_fini(&out);
}

static void test_proc_closed_output_and_stop(void **state)
{
	/* a child that closes its output and keeps running is still bound by
	 * the deadline (it used to be waited for without one); alarm() turns
	 * a hang into a failure instead of a stuck suite */
	const char *argv1[] = {"sh", "-c", "exec >&- 2>&-; exec sleep 30", NULL};
	const char *argv2[] = {"sleep", "30", NULL};
	struct gl_proc_opts o = {0};
	struct gl_proc_result r;
	struct gl_err e = {0};
	volatile int stop = 0;
	(void)state;
	alarm(20);
	o.timeout_s = 1;
	assert_int_equal(gl_proc_run(argv1, &o, &r, &e), 0);
	assert_true(r.timed_out);
	assert_false(r.exited);
	assert_int_equal(r.status, 9);
	/* the daemon's stop flag kills a command still running */
	gl_proc_set_stop_flag(&stop);
	assert_false(gl_proc_stopping());
	stop = 1;
	assert_true(gl_proc_stopping());
	memset(&o, 0, sizeof o);
	assert_int_equal(gl_proc_run(argv2, &o, &r, &e), 0);
	assert_true(r.stopped);
	assert_false(r.timed_out);
	assert_int_equal(r.status, 9);
	gl_proc_set_stop_flag(NULL);
	assert_false(gl_proc_stopping());
	alarm(0);
}

/* Placeholders are {name} with a plain name; other braces are text, so a
 * command may carry a literal JSON body. */
static void test_tmpl(void **state)
{
	(void)state;
	static const char *const names[] = {"owner", "pct", NULL};
	const struct gl_tmpl_var vars[] = {{"owner", "ml-team"}, {"pct", "80"}, {"unused", NULL}};
	char bad[32] = "";
	char *s;
	assert_int_equal(gl_tmpl_check("{owner} at {pct}%", names, bad, sizeof bad), 0);
	assert_int_equal(gl_tmpl_check("-d {\"owner\":\"{owner}\",\"n\":1}", names, bad, sizeof bad), 0);
	assert_int_equal(gl_tmpl_check("{} { owner} {owner", names, bad, sizeof bad), 0);
	assert_int_equal(gl_tmpl_check("{\"a\":1} {ownr}", names, bad, sizeof bad), -1);
	assert_string_equal(bad, "{ownr}");
	assert_int_equal(gl_tmpl_check("x{pct_2}", names, bad, sizeof bad), -1);
	assert_string_equal(bad, "{pct_2}");

	s = gl_tmpl_expand("-d {\"owner\":\"{owner}\",\"pct\":{pct}}", vars, 3);
	assert_string_equal(s, "-d {\"owner\":\"ml-team\",\"pct\":80}");
	free(s);
	/* unknown and malformed ones stay as written; a NULL value is empty */
	s = gl_tmpl_expand("{owner}{{pct}}{unused}{nope}{owner", vars, 3);
	assert_string_equal(s, "ml-team{80}{nope}{owner");
	free(s);
	s = gl_tmpl_expand("", vars, 3);
	assert_string_equal(s, "");
	free(s);
}

/* Command templates that hand a script holding a placeholder to a shell or
 * an interpreter (issue 24 item 7, and the forms seen in cron wrappers),
 * and the safe ways to write the same commands. */
static void test_tmpl_shell(void **state)
{
	static const struct {
		const char *tmpl;
		int refused;
	} cases[] = {
		{"/bin/sh -c \"echo idle {job_name} >> /tmp/idle.log\"", 1}, /* the issue's */
		{"bash -c 'scancel {job_id}'", 1},
		{"sh -ec 'x {pod}'", 1},
		{"bash -lc 'x {pod}'", 1},
		{"dash -xc 'x {user}'", 1},
		{"zsh -c 'x {user}'", 1},
		{"ksh -c 'x {user}'", 1},
		{"/bin/busybox sh -c 'x {user}'", 1},
		{"env sh -c 'x {user}'", 1},
		{"/usr/bin/env bash -c 'x {user}'", 1},
		{"env -i PATH=/bin LANG=C sh -c 'x {user}'", 1},
		{"env -u HOME sh -c 'x {user}'", 1},
		{"env -S \"sh -c 'x {user}'\"", 1},
		{"bash -o pipefail -c 'x {pod}'", 1},
		{"sh -c -- 'x {pod}'", 1},
		{"sh -c '{job_name}'", 1},
		{"nice -n 5 timeout 30 sh -c 'x {pod}'", 1},
		{"sudo -u slurm sh -c 'scancel {job_id}'", 1},
		{"sudo -s scancel {job_id}", 1},
		{"su slurm -c 'scancel {job_id}'", 1},
		{"runuser -u slurm -- bash -c 'x {job_id}'", 1},
		{"flock /run/lock/x -c 'scancel {job_id}'", 1},
		{"ssh slurmctl scancel {job_id}", 1},
		{"ssh -p 2222 -o BatchMode=yes slurmctl scancel {job_id}", 1},
		{"python3 -c \"print('{job_name}')\"", 1},
		{"perl -le 'print \"{job_name}\"'", 1},
		{"node -e 'x(\"{pod}\")'", 1},
		{"scancel {job_id}", 0},
		{"kubectl delete pod --namespace {namespace} {pod}", 0},
		{"sh -c 'echo \"idle $1\" >> /tmp/idle.log' sh {job_name}", 0}, /* placeholders as arguments */
		{"/usr/local/bin/warn.sh {job_name} {user}", 0},
		{"bash /usr/local/bin/warn.sh {job_name}", 0},
		{"bash --norc /usr/local/bin/warn.sh {job_name}", 0},
		{"sh -c 'logger gpuledger: idle job'", 0},
		{"env FOO=1 /usr/local/bin/notify {job_name}", 0},
		{"sudo -u slurm scancel {job_id}", 0},
		{"timeout 10 scancel {job_id}", 0},
		{"python3 /opt/notify.py {job_name}", 0},
		{"ssh slurmctl", 0},
		{"logger -t gpuledger {job_name}", 0},
		{"git -C /srv/anchors commit -m {line}", 0},
		{"", 0},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		char **w = NULL, why[256] = "";
		size_t n = 0;
		struct gl_err err = {0};
		int rc;
		assert_int_equal(gl_tmpl_split(cases[i].tmpl, &w, &n, &err), 0);
		rc = gl_tmpl_shell_check((const char *const *)w, n, why, sizeof why);
		if (rc != -cases[i].refused)
			fail_msg("%s: got %d (%s)", cases[i].tmpl, rc, why);
		if (cases[i].refused)
			assert_non_null(strstr(why, "{"));
		gl_tmpl_words_free(w);
	}
}

static int collect_path(const char *path, void *ud)
{
	char *out = ud;
	size_t n = strlen(out);
	snprintf(out + n, 512 - n, "%s%s", n ? "|" : "", path);
	return 0;
}

/* Where JSON strings hold \u0000 (cJSON would end the C string there). */
static void test_jsonscan_nul(void **state)
{
	static const struct {
		const char *doc, *want;
	} cases[] = {
		{"{\"items\":[{\"metadata\":{\"name\":\"gpu\\u0000-job\"}}]}", "items[0].metadata.name"},
		{"{\"items\":[{},{\"a\":[\"x\",\"y\\u0000\"]}]}", "items[1].a[1]"},
		{"{\"a\\u0000b\":1}", "a\\u0000b (a member name)"},
		{"[1, {\"k\": \"\\u0000\"}, \"\\u0000\"]", "[1].k|[2]"},
		{"{\"cluster\":\"a\\\\u0000b\"}", ""},            /* an escaped backslash, then text */
		{"{\"cluster\":\"a\\u00001\"}", "cluster"},           /* NUL then '1' */
		{"{\"cluster\":\"a\\u0001\"}", ""},
		{"{\"a\":\"\\u0000", "a"},                          /* cut short: still found */
		{"", ""},
	};
	(void)state;
	for (size_t i = 0; i < GL_ARRAY_LEN(cases); i++) {
		char got[512] = "";
		assert_int_equal(gl_jsonscan_nul(cases[i].doc, strlen(cases[i].doc), collect_path, got), 0);
		if (strcmp(got, cases[i].want))
			fail_msg("%s: got '%s', want '%s'", cases[i].doc, got, cases[i].want);
	}
	{
		struct gl_jsonscan_item *it = NULL;
		const char *d = "{\"kind\":\"PodList\",\"items\":[{\"n\":\"a\"},{\"n\":\"\\u0000\",\"m\":\"\\u0000\"},{},"
				"{\"l\":{\"k\\u0000\":1}}]}";
		assert_int_equal(gl_jsonscan_nul_items(d, strlen(d), "items", &it), 2);
		assert_int_equal(it[0].idx, 1);
		assert_string_equal(it[0].path, "items[1].n");
		assert_int_equal(it[1].idx, 3);
		free(it);
	}
}

/* Each bound holds at its size and refuses one byte more, saying by how
 * much; docs/ingest.md ("Bounded keys") lists every one with its size. */
static void test_bounds(void **state)
{
	char *doc = gl_test_read_file("docs/ingest.md", NULL), want[160], why[160];
	(void)state;
	for (int k = 0; k < GL_BOUNDS__COUNT; k++) {
		size_t max = gl_bounds_max((enum gl_bounds)k);
		assert_true(max > 0);
		assert_int_equal(gl_bounds_check((enum gl_bounds)k, max, why, sizeof why), 0);
		assert_int_equal(gl_bounds_check((enum gl_bounds)k, max + 1, why, sizeof why), -1);
		snprintf(want, sizeof want, "%zu bytes, over the %zu-byte bound of %s", max + 1, max,
			 gl_bounds_what((enum gl_bounds)k));
		assert_string_equal(why, want);
		snprintf(want, sizeof want, "| %s | %zu |", gl_bounds_what((enum gl_bounds)k), max);
		if (!strstr(doc, want))
			fail_msg("docs/ingest.md lacks the row '%s'", want);
	}
	assert_int_equal(gl_bounds_check(GL_BOUNDS_OBJECT, 31457280, why, sizeof why), -1);
	assert_string_equal(why, "31457280 bytes, over the 253-byte bound of Kubernetes object names and kinds");
	free(doc);
}

/* Quotes group words; an open quote is an error with nothing allocated. */
static void test_tmpl_split(void **state)
{
	char **w = NULL;
	size_t n = 0;
	struct gl_err err = {0};
	(void)state;
	assert_int_equal(gl_tmpl_split("a 'b c' \"d \\\"e\\\"\" f\\ g ''", &w, &n, &err), 0);
	assert_int_equal(n, 5);
	assert_string_equal(w[0], "a");
	assert_string_equal(w[1], "b c");
	assert_string_equal(w[2], "d \"e\"");
	assert_string_equal(w[3], "f g");
	assert_string_equal(w[4], "");
	assert_null(w[5]);
	gl_tmpl_words_free(w);
	assert_int_equal(gl_tmpl_split("a 'b", &w, &n, &err), -GL_EINVAL);
	assert_null(w);
	assert_non_null(strstr(err.msg, "unterminated"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strbuf_escapes), cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_time_roundtrip), cmocka_unit_test(test_time_format_bounds),
		cmocka_unit_test(test_log_limiter),
		cmocka_unit_test(test_proc), cmocka_unit_test(test_proc_background_child),
		cmocka_unit_test(test_proc_closed_output_and_stop), cmocka_unit_test(test_tmpl),
		cmocka_unit_test(test_tmpl_shell), cmocka_unit_test(test_tmpl_split),
		cmocka_unit_test(test_jsonscan_nul), cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
