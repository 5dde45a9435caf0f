/* Credentials blanked from command lines and error texts before they reach
 * ingest_runs or /metrics (include/gl/redact.h): each spelling, and what
 * must stay as it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include "gl/redact.h"

#include <string.h>

static void check(const char *in, const char *want)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	gl_redact_secrets(in, &b);
	if (strcmp(gl_strbuf_cstr(&b), want))
		fail_msg("redact(\"%s\")\n  got  \"%s\"\n  want \"%s\"", in, gl_strbuf_cstr(&b), want);
	gl_strbuf_fini(&b);
}

static void test_options_with_a_value(void **state)
{
	(void)state;
	check("kubectl --token=s3cr3t get pods -A -o json", "kubectl --token=*** get pods -A -o json");
	check("kubectl --token s3cr3t get pods", "kubectl --token *** get pods");
	check("tool -password=hunter2 --Client-Secret=abc --api-key=k1 --auth-header=x",
	      "tool -password=*** --Client-Secret=*** --api-key=*** --auth-header=***");
	check("env KUBE_TOKEN=abc PGPASSWORD=pw kubectl", "env KUBE_TOKEN=*** PGPASSWORD=*** kubectl");
	check("curl -H Authorization: Bearer abc.def https://x", "curl -H Authorization: Bearer *** https://x");
	check("basic dXNlcjpwYXNz end", "basic *** end");
	/* the value a flag names is blanked, the flag and its neighbours kept */
	check("x --password\thunter2\n--next", "x --password\t***\n--next");
}

static void test_urls_and_tokens(void **state)
{
	(void)state;
	check("curl https://admin:hunter2@k8s.example:6443/api", "curl https://admin:***@k8s.example:6443/api");
	check("--server=https://u:p@h/x: exit 1", "--server=https://u:***@h/x: exit 1");
	check("git clone https://ghp_abcdef@github.com/o/r", "git clone https://***@github.com/o/r");
	check("http://host/path?u=a@b", "http://host/path?u=a@b");
	check("token glt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA, more", "token glt_***, more");
}

static void test_leaves_the_rest_alone(void **state)
{
	(void)state;
	check("", "");
	check("sacct --allusers --parsable2 --noheader --clusters c1 --starttime 2026-11-01T00:00:00",
	      "sacct --allusers --parsable2 --noheader --clusters c1 --starttime 2026-11-01T00:00:00");
	check("kubectl get pods -A -o json: exit 1: error: the server doesn't have a resource type",
	      "kubectl get pods -A -o json: exit 1: error: the server doesn't have a resource type");
	check("s.txt", "s.txt");
	check("  lead and trail  ", "  lead and trail  ");
	check("3 targets", "3 targets");
	check("a=b c==d -- -", "a=b c==d -- -");
	check("caf\xc3\xa9 http://h:80/", "caf\xc3\xa9 http://h:80/");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_with_a_value),
		cmocka_unit_test(test_urls_and_tokens),
		cmocka_unit_test(test_leaves_the_rest_alone),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
