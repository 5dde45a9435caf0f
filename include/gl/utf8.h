/* gpuledger — strict UTF-8 validation (RFC 3629).
 *
 * Pure, no allocation. PostgreSQL refuses a whole COPY for one invalid byte,
 * so every line-oriented parser checks its line here first and skips it with
 * a reason instead. Rejected: stray continuation bytes, truncated sequences,
 * overlong forms (C0, C1, E0 80-9F, F0 80-8F), UTF-16 surrogates
 * (ED A0-BF), code points above U+10FFFF (F4 90+, F5-FF). NUL is valid UTF-8
 * and is left to the caller (PostgreSQL text refuses it too).
 * Ownership: nothing is kept; s is only read.
 */
#ifndef GL_UTF8_H
#define GL_UTF8_H

#include "gl/common.h"

#include <stddef.h>

/* The length (1-4) of the valid UTF-8 sequence s starts with, 0 when it
 * starts none (or n is 0); the one decoder every cleaning and check uses. */
size_t gl_utf8_seq_len(const char *s, size_t n);

/* 0 when s[0..n) is valid UTF-8; else -GL_EINVAL and, when bad_at is not
 * NULL, the offset of the first byte of the first invalid sequence. */
int gl_utf8_validate(const char *s, size_t n, size_t *bad_at) GL_MUSTCHECK;

struct gl_strbuf;
/* Appends s[0..n) JSON-escaped (gl_strbuf_put_json_str) with every byte
 * that starts no valid sequence replaced by '?': for messages that quote
 * input cut at a byte count, which must still be storable. */
void gl_utf8_put_json_lossy(struct gl_strbuf *b, const char *s, size_t n);

#endif
