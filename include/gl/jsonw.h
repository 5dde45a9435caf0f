/* gpuledger — a JSON writer that appends to a buffer as it goes, for
 * answers too large to build as a tree first (a cJSON tree of a 15 MB
 * chargeback took ~100 MB, and its printed copy two more): the caller
 * writes a piece, hands the buffer on, and writes the next.
 *
 * The text is what cJSON_PrintUnformatted prints for the same values (no
 * spaces; numbers as cJSON prints a double), except that whole numbers
 * given as integers (gl_jsonw_i64) are exact at any size and \b \f are
 * written \u0008 \u000c. Names and strings are escaped, never checked for
 * UTF-8: pass text that is.
 *
 * Usage: gl_jsonw_object(w, NULL) ... gl_jsonw_end(w). `key` is the member
 * name inside an object and NULL inside an array or at the top.
 * Ownership: the writer borrows out; it allocates nothing of its own.
 */
#ifndef GL_JSONW_H
#define GL_JSONW_H

#include "gl/strbuf.h"

#include <stdint.h>

#define GL_JSONW_MAX_DEPTH 32

struct gl_jsonw {
	struct gl_strbuf *out;
	int depth;
	unsigned char open[GL_JSONW_MAX_DEPTH]; /* '}' or ']' to close each level */
	unsigned char any[GL_JSONW_MAX_DEPTH];  /* the level has a member already */
};

void gl_jsonw_init(struct gl_jsonw *w, struct gl_strbuf *out);
void gl_jsonw_object(struct gl_jsonw *w, const char *key);
void gl_jsonw_array(struct gl_jsonw *w, const char *key);
/* Closes the innermost object or array. */
void gl_jsonw_end(struct gl_jsonw *w);
/* s NULL: null. */
void gl_jsonw_str(struct gl_jsonw *w, const char *key, const char *s);
void gl_jsonw_i64(struct gl_jsonw *w, const char *key, int64_t v);
/* As cJSON prints a double (NaN and infinities as null). */
void gl_jsonw_num(struct gl_jsonw *w, const char *key, double v);
void gl_jsonw_bool(struct gl_jsonw *w, const char *key, int v);
void gl_jsonw_null(struct gl_jsonw *w, const char *key);
/* Epoch seconds as RFC 3339 UTC; GL_TIME_NONE as null. */
void gl_jsonw_time(struct gl_jsonw *w, const char *key, int64_t t);

#endif
