/* Recorded monthly report sets (see include/gl/reportfiles.h). */
#include "gl/reportfiles.h"
#include "gl/audit.h"
#include "db_int.h"
#include "gl/pgrow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RF(t, m) GL_PGROW(struct gl_reportfiles_row, t, m)
static const struct gl_pgrow_field list_fields[] = {
	RF(I64, id), RF(STR, month), RF(STR, aggregate), RF(STR, share_idle), RF(I64, version), RF(STR, format), RF(STR, name),
	RF(STR, sha256), RF(I64, bytes), RF(STR, changed), RF(STR, trigger), RF(STR, generated_at),
};
static const struct gl_pgrow_field latest_fields[] = {RF(I64, version), RF(STR, name), RF(STR, sha256)};
#undef RF

static int fetch(struct gl_store *st, const char *sql, int np, const char *const *params,
		 const struct gl_pgrow_field *f, size_t nf, struct gl_reportfiles *out, struct gl_err *err)
{
	void *rows = NULL;
	int rc = gl_pgrow_query(gl_db_conn(st), sql, np, params, f, nf, sizeof *out->rows, &rows, &out->n, &out->text, err);
	out->rows = rows;
	return rc;
}

int gl_reportfiles_list(struct gl_store *st, const char *month, struct gl_reportfiles *out, struct gl_err *err)
{
	char mday[16];
	if (month)
		snprintf(mday, sizeof mday, "%s-01", month);
	return fetch(st,
		     "SELECT file_id AS id, to_char(month, 'YYYY-MM') AS month, aggregate, share_idle, version, format, name, sha256,"
		     " bytes, array_to_string(changed, ',') AS changed, trigger,"
		     " to_char(generated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS generated_at"
		     " FROM report_files WHERE $1::date IS NULL OR month = $1::date"
		     " ORDER BY month DESC, aggregate, share_idle, version DESC, name LIMIT 10000",
		     1, (const char *[]){month ? mday : NULL}, list_fields, GL_ARRAY_LEN(list_fields), out, err);
}

int gl_reportfiles_latest(struct gl_store *st, const char *month_day, const char *aggregate, const char *share,
			  int *version, struct gl_reportfiles *out, struct gl_err *err)
{
	int rc = fetch(st,
		       "SELECT version, name, sha256 FROM report_files WHERE month = $1::date AND aggregate = $2"
		       " AND share_idle = $3 AND format = 'csv' AND version = (SELECT max(version) FROM report_files"
		       " WHERE month = $1::date AND aggregate = $2 AND share_idle = $3)",
		       3, (const char *[]){month_day, aggregate, share}, latest_fields, GL_ARRAY_LEN(latest_fields), out,
		       err);
	*version = !rc && out->n ? (int)out->rows[0].version : 0;
	return rc;
}

int gl_reportfiles_recorded(struct gl_store *st, const char *month_day, const char *aggregate, const char *share,
			    int *yes, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = gl_db_query(gl_db_conn(st),
			     "SELECT 1 FROM report_files WHERE month = $1::date AND aggregate = $2 AND share_idle = $3"
			     " LIMIT 1",
			     3, (const char *[]){month_day, aggregate, share}, &r, err);
	*yes = !rc && PQntuples(r) > 0;
	PQclear(r);
	return rc;
}

void gl_reportfiles_fini(struct gl_reportfiles *f)
{
	free(f->rows);
	free(f->text);
	memset(f, 0, sizeof *f);
}

int gl_reportfiles_lock(struct gl_store *st, const char *key, struct gl_err *err)
{
	return gl_db_query(gl_db_conn(st), "SELECT pg_advisory_lock(26478, hashtext($1))", 1, (const char *[]){key},
			   NULL, err);
}

int gl_reportfiles_unlock(struct gl_store *st, const char *key, struct gl_err *err)
{
	return gl_db_query(gl_db_conn(st), "SELECT pg_advisory_unlock(26478, hashtext($1))", 1, (const char *[]){key},
			   NULL, err);
}

static int insert_file(PGconn *c, const struct gl_reportfiles_set *set, const struct gl_reportfiles_new *f,
		       struct gl_err *err)
{
	char ver[16], bytes[24], changed[600], gen[24];
	snprintf(ver, sizeof ver, "%d", set->version);
	snprintf(bytes, sizeof bytes, "%zu", f->bytes);
	snprintf(changed, sizeof changed, "{%s}", set->changed);
	snprintf(gen, sizeof gen, "%lld", (long long)set->generated_s);
	return gl_db_query(c,
			   "INSERT INTO report_files (month, aggregate, share_idle, version, format, name, sha256,"
			   " bytes, changed, trigger, generated_at) VALUES ($1::date, $2, $3, $4::integer, $5, $6, $7,"
			   " $8::bigint, $9::text[], $10, to_timestamp($11))",
			   11,
			   (const char *[]){set->month_day, set->aggregate, set->share_idle, ver, f->format, f->name,
					    f->sha256, bytes, changed, set->trigger, gen},
			   NULL, err);
}

int gl_reportfiles_record(struct gl_store *st, const struct gl_reportfiles_set *set,
			  const struct gl_reportfiles_new *files, size_t n, const char *month, const char *detail,
			  struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int rc;
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		return rc;
	for (size_t i = 0; i < n && !rc; i++)
		rc = insert_file(c, set, &files[i], err);
	if (!rc)
		rc = gl_audit_append(gl_db_store(c), set->trigger, NULL, "report.generate", month, "ok", detail, err);
	if (!rc)
		rc = gl_db_exec(c, "COMMIT", err);
	if (rc)
		PQclear(PQexec(c, "ROLLBACK"));
	return rc;
}

int gl_reportfiles_audit(struct gl_store *st, const char *actor, const char *month, const char *detail,
			 struct gl_err *err)
{
	return gl_audit_append(st, actor, NULL, "report.generate", month, "ok", detail, err);
}

int gl_reportfiles_get(struct gl_store *st, int64_t id, struct gl_reportfiles_file *f, struct gl_err *err)
{
	char ids[24];
	PGresult *r = NULL;
	int rc;
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	if ((rc = gl_db_query(gl_db_conn(st), "SELECT name, sha256, format, bytes FROM report_files WHERE file_id = $1::bigint", 1,
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
