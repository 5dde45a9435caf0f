/* gpuledger — PostgreSQL array literals for query parameters (text[] and
 * bigint[] passed as one text parameter): built element by element into a
 * strbuf that starts empty, every text element quoted and escaped.
 *
 * Ownership: the caller's strbuf holds the literal.
 */
#ifndef GL_PGARRAY_H
#define GL_PGARRAY_H

#include "gl/strbuf.h"

#include <stddef.h>
#include <stdint.h>

/* s NULL: a NULL element */
void gl_pgarray_add_text(struct gl_strbuf *b, const char *s);
void gl_pgarray_add_i64(struct gl_strbuf *b, int64_t v);
/* Closes the literal ("{}" when nothing was added); returns it. */
const char *gl_pgarray_end(struct gl_strbuf *b);
/* The n strings of v as one text[] literal. */
const char *gl_pgarray_texts(struct gl_strbuf *b, const char *const *v, size_t n);

#endif
