/* gpuledger — the dashboard's static files (server.web_dir), served at /.
 *
 * The whole directory is read once, at server start, into memory: each
 * regular file with its MIME type, a content ETag and (for text types) a
 * gzip copy made then. A request path is only ever looked up in that
 * table by exact name, so no request can reach a file outside the tree
 * ("..", symlinks, dotfiles and anything not read at start never match).
 * Editing web/ therefore needs a daemon restart.
 *
 * Ownership: gl_static_load() returns a set the caller frees with
 * gl_static_free(); the files gl_static_find() returns belong to the set
 * and live as long as it. The pure helpers keep no state.
 */
#ifndef GL_STATIC_H
#define GL_STATIC_H

#include "gl/common.h"

#include <stddef.h>

#define GL_STATIC_MAX_FILES 1024
#define GL_STATIC_MAX_BYTES (64u * 1024 * 1024) /* the whole tree */

struct gl_static_file {
	char *path;               /* "/index.html": the URL path that serves it */
	const char *mime;         /* static string, with charset for text */
	unsigned char *data;
	size_t len;
	unsigned char *gz;        /* NULL when gzip would not help or the type is binary */
	size_t gz_len;
	char etag[48];            /* strong ETag of the identity bytes, quoted */
	char etag_gz[48];         /* of the gzip bytes */
};

struct gl_static;

/* Reads dir recursively (regular files only; names starting with '.' and
 * symlinks are skipped). GL_ENOTFOUND when dir is not a directory. */
int gl_static_load(const char *dir, struct gl_static **out, struct gl_err *err) GL_MUSTCHECK;
void gl_static_free(struct gl_static *s);
size_t gl_static_count(const struct gl_static *s);

/* The file for a decoded URL path, NULL when there is none ("/" and any
 * path ending in '/' mean its index.html). */
const struct gl_static_file *gl_static_find(const struct gl_static *s, const char *url_path);

/* Pure helpers (exposed for unit tests). */
/* MIME type by file name extension; application/octet-stream when unknown. */
const char *gl_static_mime(const char *name);
/* 1 when an Accept-Encoding header value admits gzip (q > 0). */
int gl_static_accepts_gzip(const char *accept_encoding);
/* 1 when an If-None-Match header value lists etag (or is "*"); weak
 * validators (W/"...") compare by their opaque part, as RFC 9110 says
 * If-None-Match must. */
int gl_static_etag_matches(const char *if_none_match, const char *etag);

/* Headers every dashboard response carries. */
#define GL_STATIC_CSP "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; object-src 'none'"

#endif
