/* Strict UTF-8 validation (see include/gl/utf8.h). */
#include "gl/utf8.h"
#include "gl/strbuf.h"

#include <stdint.h>
#include <string.h>

int gl_utf8_validate(const char *s, size_t n, size_t *bad_at)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		unsigned c = u[i], lo = 0x80, hi = 0xBF;
		size_t need;

		/* most input is ASCII: eight bytes per step while it lasts */
		if (c < 0x80) {
			while (i + 8 <= n) {
				uint64_t w;
				memcpy(&w, u + i, 8);
				if (w & UINT64_C(0x8080808080808080))
					break;
				i += 8;
			}
			while (i < n && u[i] < 0x80)
				i++;
			continue;
		}
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
			goto bad; /* continuation byte, C0/C1 overlong lead, F5..FF */
		}
		if (n - i - 1 < need || u[i + 1] < lo || u[i + 1] > hi)
			goto bad;
		for (size_t k = 2; k <= need; k++)
			if ((u[i + k] & 0xC0) != 0x80)
				goto bad;
		i += need + 1;
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
