/* gpuledger — the API's `filter` parameter (OpenCost syntax):
 *   team:"vision","language"+cluster:"testgpu"
 * dimension:value list, '+' between clauses (AND), ',' between values (OR),
 * values double-quoted (\" and \\ escapes) or bare (no , + : ").
 * A dimension appears in one clause only (a second is an error, not an
 * intersection that matches nothing).
 *
 * Pure. Ownership: struct gl_filter owns its strings; gl_filter_fini frees them.
 */
#ifndef GL_FILTER_H
#define GL_FILTER_H

#include "gl/common.h"

#include <stddef.h>

#define GL_FILTER_MAX_CLAUSES 8
#define GL_FILTER_MAX_VALUES 64

struct gl_filter_clause {
	char *dim;
	char *values[GL_FILTER_MAX_VALUES];
	size_t n_values;
};

struct gl_filter {
	struct gl_filter_clause c[GL_FILTER_MAX_CLAUSES];
	size_t n;
};

/* dims: the allowed dimension names (NULL-terminated). */
int gl_filter_parse(const char *s, const char *const *dims, struct gl_filter *f, struct gl_err *err) GL_MUSTCHECK;
void gl_filter_fini(struct gl_filter *f);

/* Narrows f to rows whose dim is one of vals (n >= 1): a token's scope on
 * one dimension. A clause of f on dim must name only values among vals
 * (-GL_EPERM otherwise: it asks for rows outside them); without one, the
 * clause dim:vals is added (-GL_ERANGE when f has no room left). The
 * strings are copied. */
int gl_filter_restrict(struct gl_filter *f, const char *dim, const char *const *vals, size_t n,
		       struct gl_err *err) GL_MUSTCHECK;

struct gl_strbuf;
/* Appends f in its own syntax, every value quoted: gl_filter_parse reads
 * it back to the same clauses, so it can stand for f as a string (a cache
 * key, a request to recompute). */
void gl_filter_format(const struct gl_filter *f, struct gl_strbuf *o);

#endif
