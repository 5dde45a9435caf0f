/* gpuledger — one recorded report file (report_files, sql/014) by its id,
 * for GET /v1/reports/{id}.
 *
 * Ownership: struct gl_reportfile holds no pointers.
 */
#ifndef GL_REPORTFILES_H
#define GL_REPORTFILES_H

#include "gl/common.h"

#include <libpq-fe.h>
#include <stdint.h>

struct gl_reportfile {
	char name[256];   /* file name under reports.dir */
	char sha256[65];  /* of the bytes as recorded */
	char format[8];   /* csv | html | pdf */
	int64_t bytes;
};

/* The file recorded as id: 0 and *f, or -GL_ENOTFOUND when there is none. */
int gl_reportfiles_get(PGconn *c, int64_t id, struct gl_reportfile *f, struct gl_err *err) GL_MUSTCHECK;

#endif
