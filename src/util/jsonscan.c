/* NUL bytes in JSON strings (see include/gl/jsonscan.h). */
#include "gl/jsonscan.h"
#include "gl/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256
#define PATH_MAX_BYTES 200

struct frame {
	char type;       /* '{' or '[' */
	size_t index;    /* arrays: the element being read */
	const char *key; /* objects: the member being read, as written (escapes kept) */
	size_t klen;
	int want_key;    /* objects: the next string is a member name */
};

/* The path of the value being read: each container's position in turn. */
static void make_path(const struct frame *st, int depth, const char *suffix, char *out, size_t n)
{
	size_t at = 0;
	out[0] = '\0';
	for (int i = 0; i < depth && at < n; i++) {
		int w;
		if (st[i].type == '[')
			w = snprintf(out + at, n - at, "[%zu]", st[i].index);
		else
			w = snprintf(out + at, n - at, "%s%.*s", at ? "." : "", (int)(st[i].klen > 64 ? 64 : st[i].klen),
				     st[i].key ? st[i].key : "");
		if (w < 0)
			break;
		at += (size_t)w;
	}
	if (at < n)
		snprintf(out + at, n - at, "%s", suffix);
}

/* doc[i] is the opening quote: *nul = 1 when the string holds \u0000;
 * returns the index past its closing quote (len when unterminated). */
static size_t scan_string(const char *doc, size_t i, size_t len, int *nul)
{
	*nul = 0;
	for (i++; i < len; i++) {
		if (doc[i] == '"')
			return i + 1;
		if (doc[i] == '\\' && i + 1 < len) {
			if (doc[i + 1] == 'u' && i + 5 < len && !memcmp(doc + i + 2, "0000", 4))
				*nul = 1;
			i++;
		}
	}
	return len;
}

int gl_jsonscan_nul(const char *doc, size_t len, int (*fn)(const char *path, void *ud), void *ud)
{
	struct frame st[MAX_DEPTH];
	char path[PATH_MAX_BYTES + 1];
	int depth = 0, rc;

	if (!doc || !memmem(doc, len, "\\u0000", 6))
		return 0;
	for (size_t i = 0; i < len;) {
		char ch = doc[i];
		if (ch == '{' || ch == '[') {
			if (depth == MAX_DEPTH)
				return 0;
			st[depth++] = (struct frame){ch, 0, NULL, 0, ch == '{'};
			i++;
		} else if (ch == '}' || ch == ']') {
			if (depth)
				depth--;
			i++;
		} else if (ch == ',') {
			if (depth && st[depth - 1].type == '[')
				st[depth - 1].index++;
			else if (depth)
				st[depth - 1].want_key = 1;
			i++;
		} else if (ch == '"') {
			int nul, is_key = depth && st[depth - 1].type == '{' && st[depth - 1].want_key;
			size_t e = scan_string(doc, i, len, &nul);
			if (is_key) {
				st[depth - 1].key = doc + i + 1;
				st[depth - 1].klen = e > i + 1 ? e - i - 2 : 0;
				st[depth - 1].want_key = 0;
			}
			if (nul) {
				make_path(st, depth, is_key ? " (a member name)" : "", path, sizeof path);
				if ((rc = fn(path, ud)))
					return rc;
			}
			i = e;
		} else {
			i++;
		}
	}
	return 0;
}

struct items_ctx {
	const char *array;
	size_t alen;
	struct gl_jsonscan_item *v;
	size_t n, cap;
};

static int note_item(const char *path, void *ud)
{
	struct items_ctx *c = ud;
	char *end;
	size_t idx;
	if (strncmp(path, c->array, c->alen) || path[c->alen] != '[')
		return 0;
	idx = strtoull(path + c->alen + 1, &end, 10);
	if (*end != ']' || (c->n && c->v[c->n - 1].idx == idx))
		return 0;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->v = gl_xrealloc(c->v, c->cap * sizeof *c->v);
	}
	c->v[c->n].idx = idx;
	snprintf(c->v[c->n].path, sizeof c->v[c->n].path, "%s", path);
	c->n++;
	return 0;
}

size_t gl_jsonscan_nul_items(const char *doc, size_t len, const char *array, struct gl_jsonscan_item **out)
{
	struct items_ctx c = {array, strlen(array), NULL, 0, 0};
	(void)gl_jsonscan_nul(doc, len, note_item, &c);
	*out = c.v;
	return c.n;
}
