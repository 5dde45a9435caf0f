/* Pure parts of access control and the audit chain: the canonical encoding
 * and hash (against vectors computed independently with Python's hashlib,
 * docs/security.md), the role lattice, the failure limiter, the token
 * cache, token shape, UTF-8 cleaning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/audit.h"
#include "gl/auth.h"
#include "gl/strbuf.h"
#include "gl/tokens.h"

#include <stdio.h>
#include <string.h>

static void hash_hex(const unsigned char prev[32], const struct gl_strbuf *b, char out[65])
{
	unsigned char h[32];
	gl_audit_hash(prev, b->p, b->len, h);
	gl_audit_hex(h, out);
}

static void test_canonical_and_chain(void **state)
{
	/* python3: f(s) = b"-," if s is None else str(len(b)).encode()+b":"+b+b","
	 * canon = b"gpuledger-audit-v1\n" + f(seq) + f(at_us) + f(actor) + ... + f(detail)
	 * hash = sha256(prev + canon) */
	static const unsigned char zero[32];
	struct gl_strbuf b = GL_STRBUF_INIT;
	unsigned char h1[32];
	char hex[65];

	gl_audit_canonical(&b, 1, 1700000000123456LL, "token:1", "127.0.0.1", "http.request", "/v1/jobs", "ok",
			   "{\"status\": 200}");
	assert_string_equal(gl_strbuf_cstr(&b), "gpuledger-audit-v1\n1:1,16:1700000000123456,7:token:1,9:127.0.0.1,"
						"12:http.request,8:/v1/jobs,2:ok,15:{\"status\": 200},");
	hash_hex(zero, &b, hex);
	assert_string_equal(hex, "e469532cd8e2aaab75e13e4c759368fdffeb84a25c1fc08db333e467eb40a31c");
	assert_int_equal(gl_audit_unhex(hex, h1), 0);

	gl_strbuf_reset(&b);
	gl_audit_canonical(&b, 2, 1700000000999999LL, "system", NULL, "ingest.run", NULL, "error", "{}");
	assert_string_equal(gl_strbuf_cstr(&b), "gpuledger-audit-v1\n1:2,16:1700000000999999,6:system,-,10:ingest.run,-,"
						"5:error,2:{},");
	hash_hex(h1, &b, hex);
	assert_string_equal(hex, "9d79874eb1d80563d351dd41446b95a796249d4e386b48fb98697341c55a7e94");

	/* NULL and "" are different rows; so are fields that would concatenate alike */
	{
		struct gl_strbuf x = GL_STRBUF_INIT, y = GL_STRBUF_INIT;
		gl_audit_canonical(&x, 3, 0, "a", NULL, "b", "", "ok", "{}");
		gl_audit_canonical(&y, 3, 0, "a", "", "b", NULL, "ok", "{}");
		assert_string_not_equal(gl_strbuf_cstr(&x), gl_strbuf_cstr(&y));
		gl_strbuf_reset(&x);
		gl_strbuf_reset(&y);
		gl_audit_canonical(&x, 3, 0, "ab", "c", "b", NULL, "ok", "{}");
		gl_audit_canonical(&y, 3, 0, "a", "bc", "b", NULL, "ok", "{}");
		assert_string_not_equal(gl_strbuf_cstr(&x), gl_strbuf_cstr(&y));
		gl_strbuf_fini(&x);
		gl_strbuf_fini(&y);
	}
	gl_strbuf_fini(&b);
}

static void test_hex(void **state)
{
	unsigned char h[32];
	assert_int_equal(gl_audit_unhex("\\x00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF", h), 0);
	assert_int_equal(h[1], 0x11);
	assert_int_equal(h[31], 0xff);
	assert_int_not_equal(gl_audit_unhex("0011", h), 0);
	assert_int_not_equal(gl_audit_unhex("zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", h), 0);
	assert_int_not_equal(gl_audit_unhex("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00", h), 0);
}

static void test_role_lattice(void **state)
{
	static const struct {
		const char *token, *route;
		int want;
	} cases[] = {
		{"admin", "viewer", 1},   {"admin", "finance", 1},  {"admin", "hook", 1},     {"admin", "admin", 1},
		{"finance", "viewer", 1}, {"finance", "finance", 1}, {"finance", "hook", 0},  {"finance", "admin", 0},
		{"viewer", "viewer", 1},  {"viewer", "finance", 0},  {"viewer", "hook", 0},   {"viewer", "admin", 0},
		{"hook", "hook", 1},      {"hook", "viewer", 0},     {"hook", "finance", 0},  {"hook", "admin", 0},
		{"viewer", "public", 1},  {"hook", "finance|hook", 1}, {"finance", "finance|hook", 1},
		{"viewer", "finance|hook", 0}, {"admin", "finance|hook", 1},
		/* fail closed */
		{"root", "viewer", 0},    {"admin", "superuser", 0}, {"viewer", "", 0},       {"", "viewer", 0},
		{"viewer", "viewerx", 0}, {"Admin", "viewer", 0},    {"viewer", "|viewer", 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int got = gl_auth_role_allows(cases[i].token, cases[i].route);
		if (got != cases[i].want)
			fprintf(stderr, "case %zu: %s on %s: got %d\n", i, cases[i].token, cases[i].route, got);
		assert_int_equal(got, cases[i].want);
	}
	assert_int_equal(gl_auth_role_allows(NULL, "viewer"), 0);
	assert_true(gl_auth_route_public("public"));
	assert_false(gl_auth_route_public("viewer"));
	assert_true(gl_auth_role_valid("hook"));
	assert_false(gl_auth_role_valid("public"));
}

static void test_ratelimit(void **state)
{
	struct gl_auth_ratelimit *rl = gl_auth_ratelimit_new(64, 3, 60, 30);
	/* two failures: not blocked */
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.1", 1000), 0);
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.1", 1001), 0);
	assert_false(gl_auth_ratelimit_blocked(rl, "10.0.0.1", 1001));
	/* the third within the window blocks for block_s, only that address */
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.1", 1002), 1);
	assert_true(gl_auth_ratelimit_blocked(rl, "10.0.0.1", 1002));
	assert_true(gl_auth_ratelimit_blocked(rl, "10.0.0.1", 1031));
	assert_false(gl_auth_ratelimit_blocked(rl, "10.0.0.2", 1002));
	assert_false(gl_auth_ratelimit_blocked(rl, "10.0.0.1", 1032));
	/* failures spread beyond the window never add up */
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.3", 2000), 0);
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.3", 2061), 0);
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.3", 2122), 0);
	assert_false(gl_auth_ratelimit_blocked(rl, "10.0.0.3", 2122));
	/* a flood of other addresses cannot grow memory; the limiter keeps working */
	for (int i = 0; i < 10000; i++) {
		char a[32];
		snprintf(a, sizeof a, "192.0.2.%d/%d", i % 256, i);
		(void)gl_auth_ratelimit_fail(rl, a, 3000);
	}
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.9", 3001), 0);
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.9", 3001), 0);
	assert_int_equal(gl_auth_ratelimit_fail(rl, "10.0.0.9", 3001), 1);
	gl_auth_ratelimit_free(rl);
	gl_auth_ratelimit_free(NULL);
}

static void test_token_cache(void **state)
{
	struct gl_auth_cache *c = gl_auth_cache_new(16, 5);
	struct gl_tokens_info t = {0}, got;
	unsigned char k1[32], k2[32];
	int found = -1;
	gl_tokens_sha256("glt_one", k1);
	gl_tokens_sha256("glt_two", k2);
	t.id = 7;
	snprintf(t.role, sizeof t.role, "finance");
	assert_false(gl_auth_cache_get(c, k1, 100, &found, &got));
	gl_auth_cache_put(c, k1, 100, &t);
	gl_auth_cache_put(c, k2, 100, NULL);
	assert_true(gl_auth_cache_get(c, k1, 104, &found, &got));
	assert_int_equal(found, 1);
	assert_int_equal(got.id, 7);
	assert_string_equal(got.role, "finance");
	assert_true(gl_auth_cache_get(c, k2, 104, &found, &got));
	assert_int_equal(found, 0);
	/* the TTL bounds how long a revocation can go unseen */
	assert_false(gl_auth_cache_get(c, k1, 105, &found, &got));
	assert_false(gl_auth_cache_get(c, k2, 105, &found, &got));
	gl_auth_cache_free(c);
}

/* The outage grace: only a token the database said exists, only within
 * max_age of that answer, and asking does not move the answer's time. */
static void test_token_cache_verified(void **state)
{
	struct gl_auth_cache *c = gl_auth_cache_new(16, 5);
	struct gl_tokens_info t = {0}, got = {0};
	unsigned char k1[32], k2[32], k3[32];
	gl_tokens_sha256("glt_one", k1);
	gl_tokens_sha256("glt_two", k2);
	gl_tokens_sha256("glt_three", k3);
	t.id = 9;
	gl_auth_cache_put(c, k1, 1000, &t);
	gl_auth_cache_put(c, k2, 1000, NULL);
	assert_true(gl_auth_cache_get_verified(c, k1, 1000 + 599, 600, &got));
	assert_int_equal(got.id, 9);
	assert_true(gl_auth_cache_get_verified(c, k1, 1000 + 300, 600, &got));
	assert_false(gl_auth_cache_get_verified(c, k1, 1000 + 600, 600, &got));
	assert_false(gl_auth_cache_get_verified(c, k1, 999, 600, &got));
	assert_false(gl_auth_cache_get_verified(c, k2, 1001, 600, &got)); /* unknown */
	assert_false(gl_auth_cache_get_verified(c, k3, 1001, 600, &got)); /* never seen */
	/* a later database answer "unknown" (deleted) ends the grace */
	gl_auth_cache_put(c, k1, 1010, NULL);
	assert_false(gl_auth_cache_get_verified(c, k1, 1011, 600, &got));
	gl_auth_cache_free(c);
}

static void test_token_shape(void **state)
{
	char a[GL_TOKENS_LEN + 1], b[GL_TOKENS_LEN + 1];
	assert_int_equal(gl_tokens_generate(a, NULL), 0);
	assert_int_equal(gl_tokens_generate(b, NULL), 0);
	assert_int_equal(strlen(a), GL_TOKENS_LEN);
	assert_true(gl_tokens_wellformed(a));
	assert_string_not_equal(a, b);
	assert_false(gl_tokens_wellformed("glt_short"));
	a[10] = '+';
	assert_false(gl_tokens_wellformed(a));
	b[0] = 'x';
	assert_false(gl_tokens_wellformed(b));
	assert_true(gl_tokens_owner_valid("team-x"));
	assert_false(gl_tokens_owner_valid(""));
	assert_false(gl_tokens_owner_valid("a,b"));
	assert_false(gl_tokens_owner_valid("a\"b"));
	assert_false(gl_tokens_owner_valid("a b"));
	{
		struct gl_tokens_info t = {0};
		assert_int_equal(gl_tokens_scopes_parse("{}", &t, NULL), 0);
		assert_int_equal(t.n_scope, 0);
		assert_int_equal(gl_tokens_scopes_parse("{\"team\":[\"a\",\"b\"],\"user\":[\"u\"]}", &t, NULL), 0);
		assert_int_equal(t.n_scope, 3);
		assert_string_equal(t.scope[1].dim, "team");
		assert_string_equal(t.scope[1].value, "b");
		assert_string_equal(t.scope[2].dim, "user");
		/* a scope that cannot be read must never widen to "all owners":
		 * the form before sql/081 ("owners") included */
		assert_int_not_equal(gl_tokens_scopes_parse("{\"owners\":[\"a\"]}", &t, NULL), 0);
		assert_int_equal(t.n_scope, 0);
		assert_int_not_equal(gl_tokens_scopes_parse("{\"team\":[]}", &t, NULL), 0);
		assert_int_not_equal(gl_tokens_scopes_parse("{\"team\":\"a\"}", &t, NULL), 0);
		assert_int_not_equal(gl_tokens_scopes_parse("{\"team\":[\"__idle__\"]}", &t, NULL), 0);
		assert_int_not_equal(gl_tokens_scopes_parse("[", &t, NULL), 0);
	}
	{
		struct gl_tokens_scope sc;
		struct gl_err e = {0};
		assert_int_equal(gl_tokens_scope_arg("cost_center=cc-1", &sc, &e), 0);
		assert_string_equal(sc.dim, "cost_center");
		assert_string_equal(sc.value, "cc-1");
		/* the form before dimensions: an owner was a team */
		assert_int_equal(gl_tokens_scope_arg("owner=vision", &sc, &e), 0);
		assert_string_equal(sc.dim, "team");
		assert_int_not_equal(gl_tokens_scope_arg("cluster=c1", &sc, &e), 0);
		assert_non_null(strstr(e.msg, "unknown dimension 'cluster'"));
		assert_int_not_equal(gl_tokens_scope_arg("namespace=", &sc, &e), 0);
		assert_non_null(strstr(e.msg, "empty value for dimension 'namespace'"));
		assert_int_not_equal(gl_tokens_scope_arg("=x", &sc, &e), 0);
		assert_non_null(strstr(e.msg, "unknown dimension ''"));
	}
}

static void test_clean(void **state)
{
	static const struct {
		const char *in, *want;
		size_t cap;
	} cases[] = {
		{"/v1/jobs", "/v1/jobs", 64},
		{"a\nb\tc\x7f", "a?b?c?", 64},
		{"caf\xc3\xa9", "caf\xc3\xa9", 64},
		{"bad\xc3(", "bad?(", 64},
		{"\xed\xa0\x80x", "???x", 64},          /* a surrogate is not UTF-8 */
		{"\xc0\xafx", "??x", 64},               /* overlong */
		{"caf\xc3\xa9", "caf", 5},             /* never cut inside a character */
		{"abcdef", "abc", 4},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[64];
		gl_audit_clean(cases[i].in, out, cases[i].cap);
		assert_string_equal(out, cases[i].want);
	}
}

/* The request-rate bucket: burst at once, then rate per second. */
static void test_reqlimit(void **state)
{
	struct gl_auth_reqlimit *rl = gl_auth_reqlimit_new(64, 2.0, 3.0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 1000), 0);
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 1000), 1);
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 1100), 1);
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 1200), 1);
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.2", 1200), 0); /* another address */
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 1400), 1); /* 0.8 tokens refilled */
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 1600), 0); /* 1.2 tokens */
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 1600), 1);
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 2000), 0); /* 0.2 + 0.8 */
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 2050), 1);
	/* never more than the burst, however long the pause */
	for (int i = 0; i < 3; i++)
		assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 100000), 0);
	assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 100000), 1);
	gl_auth_reqlimit_free(rl);
	/* rate 0 is off */
	rl = gl_auth_reqlimit_new(8, 0, 1);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(gl_auth_reqlimit_take(rl, "10.0.0.1", 0), 0);
	gl_auth_reqlimit_free(rl);
	gl_auth_reqlimit_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canonical_and_chain), cmocka_unit_test(test_hex),
		cmocka_unit_test(test_role_lattice),        cmocka_unit_test(test_ratelimit),
		cmocka_unit_test(test_token_cache),         cmocka_unit_test(test_token_shape),
		cmocka_unit_test(test_token_cache_verified),
		cmocka_unit_test(test_clean),               cmocka_unit_test(test_reqlimit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
