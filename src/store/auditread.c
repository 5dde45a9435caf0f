/* Reading the audit log (see include/gl/auditread.h). */
#include "gl/auditread.h"
#include "db_int.h"
#include "gl/pgrow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AR(t, m) GL_PGROW(struct gl_auditread_row, t, m)
static const struct gl_pgrow_field row_fields[] = {
	AR(I64, seq),	  AR(TIME, at_s),   AR(STR, actor),	AR(STR, source_addr), AR(STR, action),
	AR(STR, object), AR(STR, outcome), AR(STR, detail), AR(STR, prev_hash),   AR(STR, hash),
};
#undef AR

int gl_auditread_page(struct gl_store *st, const struct gl_auditread_query *q, struct gl_auditread_page *out,
		      struct gl_err *err)
{
	char lim[24], cur[24];
	void *rows = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	/* one row past the page: a next cursor only when a row follows */
	snprintf(lim, sizeof lim, "%lld", (long long)q->limit + 1);
	snprintf(cur, sizeof cur, "%lld", (long long)q->cursor);
	/* newest first; keyset pagination: cursor = the seq to continue below,
	 * so pages stay exact while rows are appended */
	rc = gl_pgrow_query(gl_db_conn(st),
			      "SELECT audit_id AS seq, extract(epoch FROM at)::bigint AS at_s, actor, source_addr, action,"
			      " object, outcome, detail::text AS detail, encode(prev_hash, 'hex') AS prev_hash,"
			      " encode(hash, 'hex') AS hash FROM audit_log"
			      " WHERE ($1::timestamptz IS NULL OR at >= $1) AND ($2::timestamptz IS NULL OR at < $2)"
			      "   AND ($3::text IS NULL OR action = $3) AND ($4::text IS NULL OR actor = $4)"
			      "   AND ($5::text IS NULL OR outcome = $5) AND ($6::bigint = 0 OR audit_id < $6)"
			      " ORDER BY audit_id DESC LIMIT $7",
			      7, (const char *[]){q->from, q->to, q->action, q->actor, q->outcome, cur, lim}, row_fields,
			      GL_ARRAY_LEN(row_fields), sizeof *out->rows, &rows, &out->n, &out->text, err);
	out->rows = rows;
	if (!rc && out->n > (size_t)q->limit) {
		out->more = 1;
		out->n = (size_t)q->limit;
	}
	return rc;
}

void gl_auditread_fini(struct gl_auditread_page *p)
{
	free(p->rows);
	free(p->text);
	memset(p, 0, sizeof *p);
}

int gl_auditread_seq_range(struct gl_store *st, const char *from, const char *to, int64_t *lo, int64_t *hi,
			   struct gl_err *err)
{
	PGresult *r = NULL;
	int rc;
	*lo = 1;
	*hi = 0;
	if ((rc = gl_db_query(gl_db_conn(st),
			      "SELECT coalesce(min(audit_id), 1) AS lo, coalesce(max(audit_id), 0) AS hi FROM audit_log"
			      " WHERE at >= $1::timestamptz AND at < $2::timestamptz",
			      2, (const char *[]){from, to}, &r, err)))
		return rc;
	if (!(rc = gl_pgrow_one_i64(r, "lo", lo, err)))
		rc = gl_pgrow_one_i64(r, "hi", hi, err);
	PQclear(r);
	return rc;
}
