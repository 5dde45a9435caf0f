/* Reading a site's report look (src/report/report_style.c): the shipped
 * reports/ loads; a bad layout file or template is refused naming file:line
 * and the reason; bad separators are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/report_style.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[] = "/tmp/gl-report-style-XXXXXX";

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;
	snprintf(path, sizeof path, "%s/%s", g_dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char good_layout[] = "font: DejaVu Sans\npage_width: 595\npage_height: 842\nmargin: 42\nfooter: 28\n"
				  "title_size: 20\nheading_size: 12\ntext_size: 9\ntable_size: 6.5\nsmall_size: 6\n"
				  "row_padding: 3.5\nmin_column_width: 28\nname_column_width: 80\nchart_height: 170\n";

static int setup(void **state)
{
	if (!mkdtemp(g_dir))
		return -1;
	put("showback.html", "<html><head><title>{{title}}</title><style>{{css}}</style></head>\n<body>{{body}}</body></html>\n");
	put("showback.css", "body { color: #222 }\n");
	put("pdf-layout.yaml", good_layout);
	return 0;
}

static int teardown(void **state)
{
	static const char *const f[] = {"showback.html", "showback.css", "pdf-layout.yaml"};
	char path[256];
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/%s", g_dir, f[i]);
		unlink(path);
	}
	return rmdir(g_dir);
}

/* Loads g_dir with the layout text; 0 or the error message in msg. */
static int load_layout(const char *layout, char *msg, size_t n)
{
	struct gl_report_style st;
	struct gl_err err = {0};
	int rc;
	put("pdf-layout.yaml", layout);
	rc = gl_report_style_load(g_dir, ",", ".", &st, &err);
	snprintf(msg, n, "%s", rc ? err.msg : "");
	if (!rc)
		gl_report_style_fini(&st);
	put("pdf-layout.yaml", good_layout);
	return rc;
}

static void expect_error(const char *layout, const char *want)
{
	char msg[600], full[300];
	snprintf(full, sizeof full, "%s/pdf-layout.yaml%s", g_dir, want);
	assert_int_not_equal(load_layout(layout, msg, sizeof msg), 0);
	if (!strstr(msg, full))
		fail_msg("got '%s', want '%s'", msg, full);
}

/* The repository's own reports/ is a valid set, with the values its
 * comments give (the tests run from the top of the tree). */
static void test_shipped_reports_dir(void **state)
{
	struct gl_report_style st;
	struct gl_err err = {0};
	if (gl_report_style_load("reports", ",", ".", &st, &err))
		fail_msg("%s", err.msg);
	assert_string_equal(st.pdf.font, "DejaVu Sans");
	assert_true(st.pdf.page_width == 595 && st.pdf.page_height == 842);
	assert_true(st.pdf.min_column_width >= 20);
	assert_non_null(strstr(st.html, "{{body}}"));
	assert_non_null(strstr(st.css, "@page"));
	gl_report_style_fini(&st);
}

static void test_bad_layout_names_file_line(void **state)
{
	char msg[600];
	assert_int_equal(load_layout(good_layout, msg, sizeof msg), 0);
	/* line 4 of the good file is margin */
	{
		char bad[sizeof good_layout + 32];
		snprintf(bad, sizeof bad, "%s", good_layout);
		memcpy(strstr(bad, "margin: 42"), "margin: ab", 10);
		expect_error(bad, ":4: margin: 'ab' is not a number of points");
		snprintf(bad, sizeof bad, "%s", good_layout);
		memcpy(strstr(bad, "margin: 42"), "margin: -4", 10);
		expect_error(bad, ":4: margin: -4 is outside 0..200 pt");
		snprintf(bad, sizeof bad, "%s", good_layout);
		memcpy(strstr(bad, "margin: 42"), "margni: 42", 10);
		expect_error(bad, ":4: unknown key 'margni'");
	}
	expect_error("font: DejaVu Sans\nmargin:\n  top: 4\n", ":3: 'margin' must be a single value");
	expect_error("- font\n", ":1: the file must be one mapping");
	expect_error("font: DejaVu Sans\nfont: Other\n", ":2: 'font' given twice");
	expect_error("font: a\n\tmargin: 4\n", ":2: YAML:");
	expect_error("font: DejaVu Sans\n", ": 'page_width' missing");
}

static void test_bad_template_and_separators(void **state)
{
	struct gl_report_style st;
	struct gl_err err = {0};
	char want[300];
	put("showback.html", "<html>\n<title>{{titel}}</title>\n{{body}}\n");
	assert_int_not_equal(gl_report_style_load(g_dir, ",", ".", &st, &err), 0);
	snprintf(want, sizeof want, "%s/showback.html:2: unknown placeholder '{{titel}}'", g_dir);
	assert_non_null(strstr(err.msg, want));
	put("showback.html", "<html>{{title}}</html>\n");
	assert_int_not_equal(gl_report_style_load(g_dir, ",", ".", &st, &err), 0);
	assert_non_null(strstr(err.msg, "no {{body}} placeholder"));
	put("showback.html", "{{body}}\n{{body}}\n");
	assert_int_not_equal(gl_report_style_load(g_dir, ",", ".", &st, &err), 0);
	assert_non_null(strstr(err.msg, "showback.html:2: a second {{body}}"));
	put("showback.html", "<html><head><title>{{title}}</title><style>{{css}}</style></head>\n<body>{{body}}</body></html>\n");
	assert_int_equal(gl_report_style_load(g_dir, ",", ".", &st, &err), 0);
	gl_report_style_fini(&st);
	/* a missing file says which */
	assert_int_not_equal(gl_report_style_load("/nonexistent-gl-dir", ",", ".", &st, &err), 0);
	assert_non_null(strstr(err.msg, "/nonexistent-gl-dir/showback.html"));
	/* separators */
	assert_int_not_equal(gl_report_style_load(g_dir, ",", ",", &st, &err), 0);
	assert_non_null(strstr(err.msg, "both ','"));
	assert_int_not_equal(gl_report_style_load(g_dir, ",", "", &st, &err), 0);
	assert_int_not_equal(gl_report_style_load(g_dir, "1", ".", &st, &err), 0);
	assert_int_not_equal(gl_report_style_load(g_dir, "<b>", ".", &st, &err), 0);
	assert_int_equal(gl_report_style_load(g_dir, "", ",", &st, &err), 0);
	gl_report_style_fini(&st);
	assert_int_equal(gl_report_style_load(g_dir, "\u202f", ",", &st, &err), 0);
	gl_report_style_fini(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_reports_dir),
		cmocka_unit_test(test_bad_layout_names_file_line),
		cmocka_unit_test(test_bad_template_and_separators),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
