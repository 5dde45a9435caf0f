/* Credentials out of command lines and error texts (see include/gl/redact.h). */
#include "gl/redact.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define MASK "***"

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Whether name[0..n) names a credential: a substring, in any case. */
static int secret_name(const char *name, size_t n)
{
	static const char *const words[] = {"token", "passw", "pwd", "secret", "key", "auth", "credential", "cookie"};
	for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
		size_t k = strlen(words[w]);
		for (size_t i = 0; i + k <= n; i++)
			if (!strncasecmp(name + i, words[w], k))
				return 1;
	}
	return 0;
}

static int b64url(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* One word with no NAME=VALUE credential: URL passwords and gpuledger
 * tokens inside it are blanked, the rest copied. */
static void put_word(struct gl_strbuf *o, const char *w, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if (n - i > 4 && !strncmp(w + i, "glt_", 4)) {
			gl_strbuf_puts(o, "glt_" MASK);
			i += 4;
			while (i < n && b64url(w[i]))
				i++;
			continue;
		}
		if (n - i > 3 && !strncmp(w + i, "://", 3)) {
			/* the authority ends at the first '/', '?' or '#'; its
			 * userinfo at the last '@' in it */
			size_t a = i + 3, e = a, at = 0, colon = 0;
			while (e < n && w[e] != '/' && w[e] != '?' && w[e] != '#')
				e++;
			for (size_t k = a; k < e; k++)
				if (w[k] == '@')
					at = k;
			gl_strbuf_append(o, w + i, 3);
			if (at) {
				for (size_t k = a; k < at; k++)
					if (w[k] == ':') {
						colon = k;
						break;
					}
				if (colon) {
					gl_strbuf_append(o, w + a, colon + 1 - a);
					gl_strbuf_puts(o, MASK);
				} else {
					gl_strbuf_puts(o, MASK);
				}
				i = at;
			} else {
				i = a;
			}
			continue;
		}
		gl_strbuf_putc(o, w[i++]);
	}
}

void gl_redact_secrets(const char *s, struct gl_strbuf *out)
{
	int blank_next = 0;
	const char *p = s;

	while (*p) {
		const char *w = p, *eq;
		size_t n, dashes = 0;
		if (is_space(*p)) {
			gl_strbuf_putc(out, *p++);
			continue;
		}
		while (*p && !is_space(*p))
			p++;
		n = (size_t)(p - w);
		if (blank_next) {
			/* "--token VALUE", "Bearer VALUE" */
			gl_strbuf_puts(out, MASK);
			blank_next = 0;
			continue;
		}
		while (dashes < n && w[dashes] == '-')
			dashes++;
		eq = memchr(w, '=', n);
		if (eq && eq > w + dashes && secret_name(w + dashes, (size_t)(eq - w - dashes))) {
			gl_strbuf_append(out, w, (size_t)(eq + 1 - w));
			gl_strbuf_puts(out, MASK);
			continue;
		}
		if (!eq && dashes && dashes < n && secret_name(w + dashes, n - dashes))
			blank_next = 1;
		else if ((n == 6 && !strncasecmp(w, "bearer", 6)) || (n == 5 && !strncasecmp(w, "basic", 5)))
			blank_next = 1;
		put_word(out, w, n);
	}
}
