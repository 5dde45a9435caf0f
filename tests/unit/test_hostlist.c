/* Unit tests for src/util/hostlist.c. NodeList values marked with a source are
 * real (tests/fixtures/sacct/README.md); the rest are hand-written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gl/hostlist.h"

struct collect {
	char out[8192]; /* hosts joined with ' ' */
	size_t len;
	int count;
	int stop_after; /* 0 = never */
};

static int collect_cb(const char *host, void *ud)
{
	struct collect *c = ud;
	size_t n = strlen(host);

	if (c->len + n + 2 < sizeof c->out) {
		if (c->len)
			c->out[c->len++] = ' ';
		memcpy(c->out + c->len, host, n);
		c->len += n;
		c->out[c->len] = '\0';
	}
	c->count++;
	if (c->stop_after && c->count == c->stop_after)
		return 7;
	return 0;
}

static void test_expand(void **state)
{
	static const struct {
		const char *in;
		const char *want;
	} cases[] = {
		{"gpu01", "gpu01"},                                  /* testbed */
		{"gpu[01-02]", "gpu01 gpu02"},                       /* testbed */
		{"None assigned", ""},                               /* testbed */
		{"", ""},
		{"gpu[01-04,07]", "gpu01 gpu02 gpu03 gpu04 gpu07"},  /* FORMATS.md */
		{"cpn-f13-03-[01-02],cpn-f13-04-[01-02]",            /* xdmod phillips */
		 "cpn-f13-03-01 cpn-f13-03-02 cpn-f13-04-01 cpn-f13-04-02"},
		{"d09n04s[01-02],d13n[03,05,07-08,16]",              /* xdmod */
		 "d09n04s01 d09n04s02 d13n03 d13n05 d13n07 d13n08 d13n16"},
		{"k10n26s01,k13n36s01,k13n37s01", "k10n26s01 k13n36s01 k13n37s01"}, /* xdmod */
		{"a[1-2]b[3-4]", "a1b3 a1b4 a2b3 a2b4"},
		{"r[1-2]n[01-02]-ib", "r1n01-ib r1n02-ib r2n01-ib r2n02-ib"},
		{"n[8-11]", "n8 n9 n10 n11"},
		{"n[08-11]", "n08 n09 n10 n11"},
		{"n[098-101]", "n098 n099 n100 n101"},
		{"n[5]", "n5"},
		{"[1-3]", "1 2 3"},
		{"gpu-2,c1-28", "gpu-2 c1-28"},                      /* sonar */
		{"mycluster2-gpu[01-02]", "mycluster2-gpu01 mycluster2-gpu02"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct collect c = {0};
		struct gl_err err = {0};
		int rc = gl_hostlist_expand(cases[i].in, strlen(cases[i].in), collect_cb, &c, &err);
		if (rc != 0 || strcmp(c.out, cases[i].want) != 0)
			fail_msg("'%s': rc %d (%s) got '%s', want '%s'", cases[i].in, rc, err.msg, c.out,
				 cases[i].want);
	}
}

static void test_errors(void **state)
{
	static const struct {
		const char *in;
		int rc;
		const char *msg_part;
	} cases[] = {
		{"gpu[01-04", -GL_EINVAL, "unbalanced '['"},
		{"gpu01-04]", -GL_EINVAL, "unbalanced ']'"},
		{"gpu[01-[02]]", -GL_EINVAL, "nested '['"},
		{"gpu[04-01]", -GL_EINVAL, "reversed range"},
		{"gpu[]", -GL_EINVAL, "empty brackets"},
		{"gpu[1,]", -GL_EINVAL, "bad range"},
		{"gpu[a-b]", -GL_EINVAL, "bad range"},
		{"gpu[1-]", -GL_EINVAL, "bad range"},
		{"gpu[-1]", -GL_EINVAL, "bad range"},
		{"gpu[1-2-3]", -GL_EINVAL, "bad range"},
		{"gpu01,,gpu02", -GL_EINVAL, "empty host name"},
		{"gpu01,", -GL_EINVAL, "empty host name"},
		{",gpu01", -GL_EINVAL, "empty host name"},
		{"n[1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2][1-2]",
		 -GL_EINVAL, "too many bracket groups"},
		{"n[0-65536]", -GL_ERANGE, "more than 65536 hosts"},
		{"n[1-1000]m[1-1000]", -GL_ERANGE, "more than 65536 hosts"},
		{"n[0-99999999999999999]", -GL_ERANGE, "more than 65536 hosts"},
		{"n[0-65535],x", -GL_ERANGE, "more than 65536 hosts"},
		{"n[0-9999999999999999999]", -GL_EINVAL, "bad range"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct collect c = {0};
		struct gl_err err = {0};
		int rc = gl_hostlist_expand(cases[i].in, strlen(cases[i].in), collect_cb, &c, &err);
		if (rc != cases[i].rc || !strstr(err.msg, cases[i].msg_part))
			fail_msg("'%s': rc %d '%s', want rc %d '%s'", cases[i].in, rc, err.msg,
				 cases[i].rc, cases[i].msg_part);
		/* refused before any callback: no half-expanded lists */
		assert_int_equal(c.count, 0);
	}
}

static void test_limits(void **state)
{
	struct collect c = {0};
	struct gl_err err = {0};
	char longname[400];
	(void)state;

	/* exactly the cap is fine */
	assert_int_equal(gl_hostlist_expand("n[1-65536]", 10, collect_cb, &c, &err), 0);
	assert_int_equal(c.count, GL_HOSTLIST_MAX_HOSTS);

	/* a callback's non-zero return stops the walk and is returned */
	memset(&c, 0, sizeof c);
	c.stop_after = 3;
	assert_int_equal(gl_hostlist_expand("gpu[01-04,07]", 13, collect_cb, &c, &err), 7);
	assert_string_equal(c.out, "gpu01 gpu02 gpu03");

	/* names longer than 255 bytes are refused, not truncated */
	memset(longname, 'x', 300);
	longname[300] = '\0';
	memset(&c, 0, sizeof c);
	assert_int_equal(gl_hostlist_expand(longname, 300, collect_cb, &c, &err), -GL_EINVAL);
	assert_non_null(strstr(err.msg, "host name too long"));

	/* the length bound, not the NUL, ends the input */
	memset(&c, 0, sizeof c);
	assert_int_equal(gl_hostlist_expand("gpu[01-02]junk", 10, collect_cb, &c, NULL), 0);
	assert_string_equal(c.out, "gpu01 gpu02");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
