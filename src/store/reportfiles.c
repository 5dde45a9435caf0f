/* Recorded report files by id (see include/gl/reportfiles.h). */
#include "gl/reportfiles.h"
#include "gl/db.h"

#include <stdio.h>
#include <stdlib.h>

int gl_reportfiles_get(PGconn *c, int64_t id, struct gl_reportfile *f, struct gl_err *err)
{
	char ids[24];
	PGresult *r = NULL;
	int rc;
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	if ((rc = gl_db_query(c, "SELECT name, sha256, format, bytes FROM report_files WHERE file_id = $1::bigint", 1,
			      (const char *[]){ids}, &r, err)))
		goto out;
	if (PQntuples(r) != 1) {
		rc = gl_err_set(err, GL_ENOTFOUND, "no recorded report file %lld (the ids are those of /v1/reports)",
				(long long)id);
		goto out;
	}
	snprintf(f->name, sizeof f->name, "%s", PQgetvalue(r, 0, 0));
	snprintf(f->sha256, sizeof f->sha256, "%s", PQgetvalue(r, 0, 1));
	snprintf(f->format, sizeof f->format, "%s", PQgetvalue(r, 0, 2));
	f->bytes = atoll(PQgetvalue(r, 0, 3));
out:
	PQclear(r);
	return rc;
}
