/* Strict UTF-8 validation (see include/gl/utf8.h). */
#include "gl/utf8.h"
#include "gl/strbuf.h"

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

size_t gl_utf8_seq_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned c, lo = 0x80, hi = 0xBF;
	size_t need;

	if (!n)
		return 0;
	c = u[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0; /* below: overlong */
		else if (c == 0xED)
			hi = 0x9F; /* above: surrogates U+D800..U+DFFF */
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90; /* below: overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* above: beyond U+10FFFF */
	} else {
		return 0; /* continuation byte, C0/C1 overlong lead, F5..FF */
	}
	if (n - 1 < need || u[1] < lo || u[1] > hi)
		return 0;
	for (size_t k = 2; k <= need; k++)
		if ((u[k] & 0xC0) != 0x80)
			return 0;
	return need + 1;
}

/* The length of the all-ASCII prefix of u[0..n): every line of every
 * source goes through here first, and nearly all of them are ASCII, so the
 * common case is a few wide loads per line, not a step per byte. */
static size_t ascii_prefix(const unsigned char *u, size_t n)
{
	size_t i = 0;
#if defined(__SSE2__)
	if (n >= 16) {
		unsigned m;
		for (; i + 64 <= n; i += 64) {
			__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(u + i));
			__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(u + i + 16));
			__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(u + i + 32));
			__m128i d = _mm_loadu_si128((const __m128i *)(const void *)(u + i + 48));
			if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d))))
				break;
		}
		for (; i + 16 <= n; i += 16)
			if ((m = (unsigned)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(u + i)))))
				return i + (size_t)__builtin_ctz(m);
		if (i == n)
			return n;
		/* the last 16 bytes, overlapping ASCII already seen: one load, not
		 * a step per byte of the tail */
		m = (unsigned)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(u + n - 16)));
		return m ? n - 16 + (size_t)__builtin_ctz(m) : n;
	}
#endif
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, u + i, 8);
		if (w & UINT64_C(0x8080808080808080))
			break;
	}
	while (i < n && u[i] < 0x80)
		i++;
	return i;
}

int gl_utf8_validate(const char *s, size_t n, size_t *bad_at)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		if (u[i] < 0x80) {
			i += ascii_prefix(u + i, n - i);
			continue;
		}
		size_t k = gl_utf8_seq_len((const char *)u + i, n - i);
		if (!k)
			goto bad;
		i += k;
	}
	return 0;
bad:
	if (bad_at)
		*bad_at = i;
	return -GL_EINVAL;
}

void gl_utf8_put_json_lossy(struct gl_strbuf *b, const char *s, size_t n)
{
	size_t at;
	while (gl_utf8_validate(s, n, &at) < 0) {
		gl_strbuf_put_json_str(b, s, at);
		gl_strbuf_putc(b, '?');
		s += at + 1;
		n -= at + 1;
	}
	gl_strbuf_put_json_str(b, s, n);
}
