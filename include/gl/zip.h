/* gpuledger — a ZIP archive writer (deflate, via zlib) for bundling a
 * report's CSV tables into one download. Pure: no I/O, no clock; the
 * entries' time is a parameter, so the same tables give the same bytes.
 *
 * Ownership: the archive is appended to the caller's strbuf; struct gl_zip
 * owns only its central directory, freed by gl_zip_finish (or
 * gl_zip_abandon after an error).
 */
#ifndef GL_ZIP_H
#define GL_ZIP_H

#include "gl/common.h"
#include "gl/strbuf.h"

#include <stddef.h>
#include <stdint.h>

struct gl_zip {
	struct gl_strbuf *out;
	struct gl_strbuf cd; /* central directory, written at the end */
	unsigned entries;
	uint16_t dos_time, dos_date;
};

/* mtime_s: the entries' modification time (UTC, from 1980 on). */
void gl_zip_init(struct gl_zip *z, struct gl_strbuf *out, int64_t mtime_s);
/* Adds one file (name: UTF-8, no leading '/'); -GL_EINVAL past 65,535
 * entries or 4 GiB, -GL_EIO when zlib fails. */
int gl_zip_add(struct gl_zip *z, const char *name, const void *data, size_t len, struct gl_err *err) GL_MUSTCHECK;
/* Writes the central directory and its end record. */
void gl_zip_finish(struct gl_zip *z);
void gl_zip_abandon(struct gl_zip *z);

#endif
