/* gpuledger — growable byte buffer.
 *
 * Ownership: the struct is caller-owned; its heap storage is released by
 * gl_strbuf_fini(). gl_strbuf_steal() hands the storage to the caller (free()).
 * The buffer is always NUL-terminated after any append.
 */
#ifndef GL_STRBUF_H
#define GL_STRBUF_H

#include "gl/common.h"

#include <stdarg.h>
#include <stddef.h>

struct gl_strbuf {
	char *p;
	size_t len;
	size_t cap;
};
#define GL_STRBUF_INIT {NULL, 0, 0}

void gl_strbuf_init(struct gl_strbuf *b);
void gl_strbuf_fini(struct gl_strbuf *b);
void gl_strbuf_reset(struct gl_strbuf *b); /* len = 0, keeps storage */
void gl_strbuf_reserve(struct gl_strbuf *b, size_t extra);
void gl_strbuf_append(struct gl_strbuf *b, const void *data, size_t n);
void gl_strbuf_puts(struct gl_strbuf *b, const char *s);
void gl_strbuf_putc(struct gl_strbuf *b, char c);
void gl_strbuf_printf(struct gl_strbuf *b, const char *fmt, ...) GL_PRINTF(2, 3);
void gl_strbuf_vprintf(struct gl_strbuf *b, const char *fmt, va_list ap);
void gl_strbuf_put_i64(struct gl_strbuf *b, long long v);
/* Appends s escaped for PostgreSQL COPY text format (\\, \t, \n, \r). */
void gl_strbuf_put_copy_text(struct gl_strbuf *b, const char *s, size_t n);
/* Appends s escaped as a JSON string body (no surrounding quotes). */
void gl_strbuf_put_json_str(struct gl_strbuf *b, const char *s, size_t n);
char *gl_strbuf_steal(struct gl_strbuf *b);
/* A NUL-terminated view (never NULL, "" when empty). */
const char *gl_strbuf_cstr(const struct gl_strbuf *b);

#endif
