/* gpuledger — what cJSON cannot say about JSON text: where a string holds
 * a NUL (\u0000). cJSON decodes it into a C string that ends there, so a
 * pod name "gpu\u0000-job" or a hook record's cluster "a\u0000b" would be
 * stored cut, silently. The text is walked once, lexically (cJSON still
 * judges the syntax); only a document holding the six bytes \u0000
 * anywhere is walked at all.
 *
 * Pure; the path buffer and the item list are the caller's.
 */
#ifndef GL_JSONSCAN_H
#define GL_JSONSCAN_H

#include <stddef.h>

/* Calls fn for each string (value or member name) of doc[0..len) that
 * holds \u0000, with its path ("items[3].metadata.name"; a member name is
 * named by its path and " (a member name)"), cut to 200 bytes; fn returns
 * 0 to go on, anything else to stop (returned). 0 when none or all went on.
 * Nesting deeper than 256 is not followed (cJSON refuses it anyway). */
int gl_jsonscan_nul(const char *doc, size_t len, int (*fn)(const char *path, void *ud), void *ud);

/* For a list document ({"items": [...]}): the elements of the top-level
 * array member `array` that hold a \u0000 anywhere, in order, each with
 * the first such path; *out is the caller's (free(), NULL when none).
 * Returns how many. */
struct gl_jsonscan_item {
	size_t idx;
	char path[208];
};
size_t gl_jsonscan_nul_items(const char *doc, size_t len, const char *array, struct gl_jsonscan_item **out);

#endif
