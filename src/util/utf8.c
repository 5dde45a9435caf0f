/* Strict UTF-8 validation (see include/gl/utf8.h). */
#include "gl/utf8.h"
#include "gl/strbuf.h"

#include <stdint.h>
#include <string.h>

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

int gl_utf8_validate(const char *s, size_t n, size_t *bad_at)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		unsigned c = u[i];

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
