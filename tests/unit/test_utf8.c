/* Strict UTF-8 validation: fixed vectors (RFC 3629 section 10, Markus
 * Kuhn's UTF-8 decoder stress test) and an exhaustive comparison with a
 * decoder written here the other way round (decode the bits, then judge
 * the code point) over every 1-, 2- and 3-byte sequence and all 4-byte
 * leads with every second byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include "gl/utf8.h"

#include <string.h>

static int valid(const char *s, size_t n, size_t *at)
{
	return gl_utf8_validate(s, n, at) == 0;
}
#define V(lit) valid(lit, sizeof(lit) - 1, NULL)

static void test_known_good(void **state)
{
	(void)state;
	assert_true(V(""));
	assert_true(V("plain ascii, 17 bytes and more than eight"));
	assert_true(V("caf\xc3\xa9"));                 /* U+00E9 */
	assert_true(V("\xc2\x80"));                    /* U+0080, first 2-byte */
	assert_true(V("\xdf\xbf"));                    /* U+07FF */
	assert_true(V("\xe0\xa0\x80"));                /* U+0800, first 3-byte */
	assert_true(V("\xe2\x98\x83"));                /* U+2603 snowman */
	assert_true(V("\xed\x9f\xbf"));                /* U+D7FF, below the surrogates */
	assert_true(V("\xee\x80\x80"));                /* U+E000, above them */
	assert_true(V("\xef\xbf\xbd"));                /* U+FFFD */
	assert_true(V("\xef\xbf\xbf"));                /* U+FFFF (a noncharacter, still valid) */
	assert_true(V("\xf0\x90\x80\x80"));            /* U+10000 */
	assert_true(V("\xf0\x9f\x98\x80"));            /* U+1F600 */
	assert_true(V("\xf4\x8f\xbf\xbf"));            /* U+10FFFF, the last */
	assert_true(valid("a\0b", 3, NULL));           /* NUL is UTF-8; the caller decides */
	/* RFC 3629 section 7 examples */
	assert_true(V("\x41\xe2\x89\xa2\xce\x91\x2e"));
	assert_true(V("\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4"));
	assert_true(V("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"));
	assert_true(V("\xef\xbb\xbf\xf0\xa3\x8e\xb4"));
}

static void test_known_bad(void **state)
{
	size_t at = 99;
	(void)state;
	assert_false(V("caf\xe9"));                    /* Latin-1 */
	assert_false(V("\x80"));                       /* lone continuation */
	assert_false(V("\xbf"));
	assert_false(V("\xc0\x80"));                   /* overlong NUL */
	assert_false(V("\xc1\xbf"));                   /* overlong U+007F */
	assert_false(V("\xe0\x80\xaf"));               /* overlong '/' */
	assert_false(V("\xe0\x9f\xbf"));               /* overlong U+07FF */
	assert_false(V("\xf0\x80\x80\xaf"));           /* overlong '/' */
	assert_false(V("\xf0\x8f\xbf\xbf"));           /* overlong U+FFFF */
	assert_false(V("\xed\xa0\x80"));               /* U+D800 */
	assert_false(V("\xed\xbf\xbf"));               /* U+DFFF */
	assert_false(V("\xed\xa0\x80\xed\xb0\x80"));   /* CESU-8 pair */
	assert_false(V("\xf4\x90\x80\x80"));           /* U+110000 */
	assert_false(V("\xf5\x80\x80\x80"));
	assert_false(V("\xf8\x88\x80\x80\x80"));       /* 5-byte form */
	assert_false(V("\xfc\x84\x80\x80\x80\x80"));   /* 6-byte form */
	assert_false(V("\xfe"));
	assert_false(V("\xff"));
	assert_false(V("\xc3"));                       /* truncated at the end */
	assert_false(V("\xe2\x98"));
	assert_false(V("\xf0\x9f\x98"));
	assert_false(V("\xc3 "));                      /* continuation missing */
	assert_false(V("\xe2\x98 "));
	assert_false(V("\xf0\x9f\x98\xc0"));
	/* the offset is that of the first byte of the bad sequence, also past
	 * an ASCII run long enough for the eight-byte step */
	assert_false(valid("0123456789abcdef\xe2\x98", 18, &at));
	assert_int_equal(at, 16);
	assert_false(valid("caf\xe9 ok", 7, &at));
	assert_int_equal(at, 3);
	assert_false(valid("\xc3\xa9\xed\xa0\x80", 5, &at));
	assert_int_equal(at, 2);
}

/* The ASCII runs are skipped 64, 16 and 8 bytes at a time: a bad byte or a
 * valid sequence at every offset of every length up to 200, across each
 * step's edges, is found where it is (or passed), never skipped over. */
static void test_wide_steps(void **state)
{
	char buf[208];
	size_t at;
	(void)state;
	for (size_t n = 1; n <= 200; n++) {
		memset(buf, 'a', sizeof buf);
		assert_true(valid(buf, n, NULL));
		for (size_t k = 0; k < n; k++) {
			memset(buf, 'a', sizeof buf);
			buf[k] = (char)0xff;
			at = 999;
			assert_false(valid(buf, n, &at));
			assert_int_equal(at, k);
			if (k + 3 <= n) {
				memcpy(buf + k, "\xe2\x82\xac", 3); /* a euro sign is valid */
				assert_true(valid(buf, n, NULL));
				buf[k + 2] = 'x'; /* cut: the lead byte is the offset */
				at = 999;
				assert_false(valid(buf, n, &at));
				assert_int_equal(at, k);
			}
		}
	}
}

static void test_exhaustive(void **state)
{
	unsigned char b[4];
	(void)state;
	for (unsigned x = 0; x < 256; x++) {
		b[0] = (unsigned char)x;
		assert_int_equal(valid((char *)b, 1, NULL), gl_test_utf8_valid(b, 1));
		for (unsigned y = 0; y < 256; y++) {
			b[1] = (unsigned char)y;
			assert_int_equal(valid((char *)b, 2, NULL), gl_test_utf8_valid(b, 2));
			if (x < 0xE0)
				continue;
			for (unsigned z = 0; z < 256; z++) {
				b[2] = (unsigned char)z;
				assert_int_equal(valid((char *)b, 3, NULL), gl_test_utf8_valid(b, 3));
				if (x >= 0xF0) {
					/* fourth byte: both sides of the continuation range */
					static const unsigned char w[] = {0x00, 0x41, 0x7F, 0x80, 0xA5, 0xBF, 0xC0, 0xFF};
					for (size_t k = 0; k < sizeof w; k++) {
						b[3] = w[k];
						assert_int_equal(valid((char *)b, 4, NULL), gl_test_utf8_valid(b, 4));
					}
				}
			}
		}
	}
}

static void test_seq_len(void **state)
{
	(void)state;
	assert_int_equal(gl_utf8_seq_len("a", 1), 1);
	assert_int_equal(gl_utf8_seq_len("\xc3\xa9x", 3), 2);              /* é */
	assert_int_equal(gl_utf8_seq_len("\xe2\x82\xac", 3), 3);          /* € */
	assert_int_equal(gl_utf8_seq_len("\xf0\x9f\x98\x80", 4), 4);      /* U+1F600 */
	assert_int_equal(gl_utf8_seq_len("\xc3\xa9", 1), 0);              /* cut */
	assert_int_equal(gl_utf8_seq_len("\xed\xa0\x80", 3), 0);          /* surrogate */
	assert_int_equal(gl_utf8_seq_len("\xc0\xaf", 2), 0);              /* overlong */
	assert_int_equal(gl_utf8_seq_len("\xf4\x90\x80\x80", 4), 0);      /* above U+10FFFF */
	assert_int_equal(gl_utf8_seq_len("\xff", 1), 0);
	assert_int_equal(gl_utf8_seq_len("\x80", 1), 0);                  /* stray continuation */
	assert_int_equal(gl_utf8_seq_len("", 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_good),
		cmocka_unit_test(test_known_bad),
		cmocka_unit_test(test_wide_steps),
		cmocka_unit_test(test_exhaustive),
		cmocka_unit_test(test_seq_len),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
