/* Credentials out of rows stored before the redaction (see include/gl/redactdb.h). */
#include "gl/redactdb.h"
#include "gl/audit.h"
#include "db_int.h"
#include "gl/redact.h"
#include "gl/strbuf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows read per statement: the table grows by a run per source and
 * minute, so it is paged by run_id rather than read whole. */
#define PAGE 1000
#define PAGE_S "1000"

/* Redacts s into out; 1 when that changed it. */
static int redact_changed(const char *s, struct gl_strbuf *out)
{
	gl_strbuf_reset(out);
	gl_redact_secrets(s, out);
	return strcmp(gl_strbuf_cstr(out), s) != 0;
}

/* Every string in the JSON tree (the reasons' texts; keys are ours). */
static int redact_json(cJSON *j, struct gl_strbuf *tmp)
{
	int changed = 0;
	if (cJSON_IsString(j) && j->valuestring) {
		if (redact_changed(j->valuestring, tmp)) {
			cJSON_SetValuestring(j, gl_strbuf_cstr(tmp));
			changed = 1;
		}
		return changed;
	}
	for (cJSON *k = j->child; k; k = k->next)
		changed |= redact_json(k, tmp);
	return changed;
}

/* argv, a JSON array of strings (array_to_json of a text[]), blanked as
 * the hook blanks a command's argv (gl_redact_argv); NULL when that
 * changes nothing (or it is not such an array). Freed with cJSON_free. */
static char *redact_argv_json(const char *json)
{
	cJSON *a = cJSON_Parse(json), *e;
	char **v = NULL, **shown = NULL, *out = NULL;
	size_t n = 0;
	int changed = 0;

	if (!cJSON_IsArray(a))
		goto out;
	v = gl_xcalloc((size_t)cJSON_GetArraySize(a) + 1, sizeof *v);
	cJSON_ArrayForEach(e, a)
	{
		if (!cJSON_IsString(e))
			goto out;
		v[n++] = e->valuestring;
	}
	shown = gl_redact_argv((const char *const *)v);
	e = a->child;
	for (size_t i = 0; i < n; i++, e = e->next)
		if (strcmp(shown[i], v[i])) {
			cJSON_SetValuestring(e, shown[i]);
			changed = 1;
		}
	if (changed)
		out = cJSON_PrintUnformatted(a);
out:
	gl_redact_argv_free(shown);
	free(v);
	cJSON_Delete(a);
	return out;
}

/* The idle hook's commands stored before they were blanked:
 * hook_actions.argv and .stderr, hook_stages.error (docs/security.md,
 * "The idle hook's commands"). In the caller's transaction; a row changed
 * meanwhile (the hook recording a retry) is left as it is, counted raced. */
static int redact_hook(PGconn *c, int dry_run, struct gl_redactdb_result *res, struct gl_err *err)
{
	struct gl_strbuf er = GL_STRBUF_INIT;
	PGresult *r = NULL, *u = NULL;
	char after[24] = "0";
	int rc = 0;

	for (;;) {
		int n;
		PQclear(r);
		r = NULL;
		if ((rc = gl_db_query(c,
				      "SELECT action_id, array_to_json(argv)::text, stderr FROM hook_actions"
				      " WHERE action_id > $1::bigint ORDER BY action_id LIMIT $2::integer",
				      2, (const char *[]){after, PAGE_S}, &r, err)))
			goto out;
		n = PQntuples(r);
		if (n == 0)
			break;
		for (int i = 0; i < n; i++) {
			const char *id = PQgetvalue(r, i, 0), *old_argv = PQgetvalue(r, i, 1);
			const char *old_er = PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2);
			char *new_argv = redact_argv_json(old_argv);
			int ce = old_er && redact_changed(old_er, &er);
			res->hook_examined++;
			if (!new_argv && !ce)
				continue;
			if (!dry_run) {
				const char *p[] = {id, new_argv ? new_argv : old_argv, ce ? gl_strbuf_cstr(&er) : old_er,
						   old_argv, old_er};
				PQclear(u);
				u = NULL;
				rc = gl_db_query(c,
						 "UPDATE hook_actions SET argv = ARRAY(SELECT e FROM json_array_elements_text($2::json)"
						 "  WITH ORDINALITY AS x(e, k) ORDER BY k)::text[], stderr = $3"
						 " WHERE action_id = $1::bigint AND array_to_json(argv)::text = $4"
						 " AND stderr IS NOT DISTINCT FROM $5",
						 5, p, &u, err);
				if (rc) {
					cJSON_free(new_argv);
					goto out;
				}
				if (atoll(PQcmdTuples(u)) == 0) {
					cJSON_free(new_argv);
					res->raced++;
					continue;
				}
			}
			res->hook_changed++;
			res->hook_argv += new_argv != NULL;
			res->hook_stderr += ce;
			cJSON_free(new_argv);
		}
		snprintf(after, sizeof after, "%s", PQgetvalue(r, n - 1, 0));
		if (n < PAGE)
			break;
	}
	/* one row per job and stage acted on: read whole */
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c,
			      "SELECT cluster_id::text, job_pk::text, stage, error FROM hook_stages WHERE error IS NOT NULL"
			      " ORDER BY cluster_id, job_pk, stage",
			      0, NULL, &r, err)))
		goto out;
	for (int i = 0; i < PQntuples(r); i++) {
		const char *old_er = PQgetvalue(r, i, 3);
		if (!redact_changed(old_er, &er))
			continue;
		if (!dry_run) {
			const char *p[] = {PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), gl_strbuf_cstr(&er),
					   old_er};
			PQclear(u);
			u = NULL;
			if ((rc = gl_db_query(c,
					      "UPDATE hook_stages SET error = $4 WHERE cluster_id = $1::integer"
					      " AND job_pk = $2::bigint AND stage = $3 AND error = $5",
					      5, p, &u, err)))
				goto out;
			if (atoll(PQcmdTuples(u)) == 0) {
				res->raced++;
				continue;
			}
		}
		res->stage_errors++;
	}
out:
	PQclear(r);
	PQclear(u);
	gl_strbuf_fini(&er);
	return rc;
}

int gl_redactdb_run(struct gl_store *st, const char *actor, int dry_run, struct gl_redactdb_result *res, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_strbuf in = GL_STRBUF_INIT, er = GL_STRBUF_INIT, tmp = GL_STRBUF_INIT, detail = GL_STRBUF_INIT;
	PGresult *r = NULL, *u = NULL;
	char after[24] = "0";
	int rc, in_txn = 0;

	memset(res, 0, sizeof *res);
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	in_txn = 1;
	for (;;) {
		int n;
		PQclear(r);
		r = NULL;
		if ((rc = gl_db_query(c,
				      "SELECT run_id, input, error, skip_reasons::text FROM ingest_runs"
				      " WHERE run_id > $1::bigint"
				      " AND (input IS NOT NULL OR error IS NOT NULL OR skip_reasons <> '[]'::jsonb)"
				      " ORDER BY run_id LIMIT $2::integer",
				      2, (const char *[]){after, PAGE_S}, &r, err)))
			goto out;
		n = PQntuples(r);
		if (n == 0)
			break;
		for (int i = 0; i < n; i++) {
			const char *id = PQgetvalue(r, i, 0);
			const char *old_in = PQgetisnull(r, i, 1) ? NULL : PQgetvalue(r, i, 1);
			const char *old_er = PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2);
			const char *old_sr = PQgetvalue(r, i, 3);
			char *new_sr = NULL;
			int ci = old_in && redact_changed(old_in, &in);
			int ce = old_er && redact_changed(old_er, &er);
			int cs = 0;
			cJSON *j = cJSON_Parse(old_sr);
			if (j && redact_json(j, &tmp)) {
				cs = 1;
				new_sr = cJSON_PrintUnformatted(j);
			}
			cJSON_Delete(j);
			res->examined++;
			if (!(ci || ce || cs)) {
				cJSON_free(new_sr);
				continue;
			}
			if (!dry_run) {
				/* only if the row still holds what was read: a run the
				 * daemon is finishing writes its own, cleaned, text */
				const char *p[] = {id,
						   ci ? gl_strbuf_cstr(&in) : old_in,
						   ce ? gl_strbuf_cstr(&er) : old_er,
						   cs ? new_sr : old_sr,
						   old_in, old_er, old_sr};
				PQclear(u);
				u = NULL;
				rc = gl_db_query(c,
						 "UPDATE ingest_runs SET input = $2, error = $3, skip_reasons = $4::jsonb"
						 " WHERE run_id = $1::bigint AND input IS NOT DISTINCT FROM $5"
						 " AND error IS NOT DISTINCT FROM $6 AND skip_reasons = $7::jsonb",
						 7, p, &u, err);
				cJSON_free(new_sr);
				if (rc)
					goto out;
				if (atoll(PQcmdTuples(u)) == 0) {
					res->raced++;
					continue;
				}
			} else {
				cJSON_free(new_sr);
			}
			res->changed++;
			res->input += ci;
			res->error += ce;
			res->skip_reasons += cs;
		}
		snprintf(after, sizeof after, "%s", PQgetvalue(r, n - 1, 0));
		if (n < PAGE)
			break;
	}
	if ((rc = redact_hook(c, dry_run, res, err)))
		goto out;
	if (dry_run) {
		rc = gl_db_exec(c, "ROLLBACK", err);
		in_txn = 0;
		goto out;
	}
	/* with the change, or neither: nobody rewrites stored rows unrecorded */
	gl_strbuf_printf(&detail,
			 "{\"table\":\"ingest_runs\",\"examined\":%lld,\"changed\":%lld,\"input\":%lld,\"error\":%lld,"
			 "\"skip_reasons\":%lld,\"raced\":%lld,\"hook_actions\":{\"examined\":%lld,\"changed\":%lld,"
			 "\"argv\":%lld,\"stderr\":%lld},\"hook_stages\":{\"error\":%lld}}",
			 (long long)res->examined, (long long)res->changed, (long long)res->input, (long long)res->error,
			 (long long)res->skip_reasons, (long long)res->raced, (long long)res->hook_examined,
			 (long long)res->hook_changed, (long long)res->hook_argv, (long long)res->hook_stderr,
			 (long long)res->stage_errors);
	if ((rc = gl_audit_append(gl_db_store(c), actor, NULL, "db.redact", "ingest_runs", "ok", gl_strbuf_cstr(&detail), err)) ||
	    (rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	in_txn = 0;
out:
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	PQclear(r);
	PQclear(u);
	gl_strbuf_fini(&in);
	gl_strbuf_fini(&er);
	gl_strbuf_fini(&tmp);
	gl_strbuf_fini(&detail);
	return rc;
}
