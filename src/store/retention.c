/* Time partitions ahead and retention by partition (see include/gl/retention.h). */
#include "gl/retention.h"
#include "gl/audit.h"
#include "db_int.h"
#include "gl/txn.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gl_retention_ahead(struct gl_store *st, int64_t now_s, int *made, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	char from[24], to[24], months[8];
	int rc;

	snprintf(from, sizeof from, "%lld", (long long)now_s);
	snprintf(to, sizeof to, "%lld", (long long)(now_s + GL_RETENTION_AHEAD_DAYS * 86400LL));
	snprintf(months, sizeof months, "%d", GL_RETENTION_AHEAD_MONTHS);
	rc = gl_db_query(c,
			 "SELECT gl_ensure_dcgm_partitions(to_timestamp($1::bigint), to_timestamp($2::bigint))"
			 " + gl_ingest_runs_partitions_ensure((to_timestamp($1::bigint) AT TIME ZONE 'UTC')::date,"
			 " $3::integer)",
			 3, (const char *[]){from, to, months}, &r, err);
	if (!rc)
		*made = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

/* Adds the rows of one drop function's answer to res and the audit detail. */
static void absorb(PGresult *r, int has_kept, struct gl_retention_result *res, cJSON *list)
{
	for (int i = 0; i < PQntuples(r); i++) {
		if (has_kept && !strcmp(PQgetvalue(r, i, 4), "t")) {
			res->kept_unbuilt++;
			continue;
		}
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "partition", PQgetvalue(r, i, 0));
		cJSON_AddStringToObject(p, "from", PQgetvalue(r, i, 1));
		cJSON_AddStringToObject(p, "to", PQgetvalue(r, i, 2));
		cJSON_AddNumberToObject(p, "est_rows", (double)atoll(PQgetvalue(r, i, 3)));
		cJSON_AddItemToArray(list, p);
		if (res->dropped++)
			gl_strbuf_puts(&res->names, ", ");
		gl_strbuf_puts(&res->names, PQgetvalue(r, i, 0));
		res->est_rows += atoll(PQgetvalue(r, i, 3));
	}
}

int gl_retention_drop(struct gl_store *st, const struct gl_retention_policy *pol, int64_t now_s, struct gl_retention_result *res,
		      struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	cJSON *detail = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(detail, "partitions");
	char *text = NULL, before[24];
	int rc, open = 0;

	if (!detail || !list)
		gl_oom(0);
	if ((rc = gl_txn_begin(gl_db_store(c), err)))
		goto out;
	open = 1;
	if (pol->usage_days > 0) {
		snprintf(before, sizeof before, "%lld", (long long)(now_s / 86400 - pol->usage_days) * 86400);
		if ((rc = gl_db_query(c, "SELECT partition_name, lo, hi, est_rows, kept"
					 " FROM gl_usage_partitions_drop(to_timestamp($1::bigint))",
				      1, (const char *[]){before}, &r, err)))
			goto out;
		absorb(r, 1, res, list);
		PQclear(r);
		r = NULL;
		cJSON_AddNumberToObject(detail, "usage_days", (double)pol->usage_days);
	}
	if (pol->ingest_runs_days > 0) {
		snprintf(before, sizeof before, "%lld", (long long)(now_s - pol->ingest_runs_days * 86400));
		if ((rc = gl_db_query(c, "SELECT partition_name, lo, hi, est_rows"
					 " FROM gl_ingest_runs_partitions_drop(to_timestamp($1::bigint))",
				      1, (const char *[]){before}, &r, err)))
			goto out;
		absorb(r, 0, res, list);
		cJSON_AddNumberToObject(detail, "ingest_runs_days", (double)pol->ingest_runs_days);
	}
	if (res->dropped) {
		cJSON_AddNumberToObject(detail, "est_rows", (double)res->est_rows);
		if (!(text = cJSON_PrintUnformatted(detail)))
			gl_oom(0);
		if ((rc = gl_audit_append(gl_db_store(c), gl_audit_process_actor(), NULL, "retention.drop", "partitions", "ok", text,
					  err)))
			goto out;
	}
	rc = gl_txn_commit(gl_db_store(c), err);
	open = 0;
out:
	if (open)
		gl_txn_rollback(gl_db_store(c));
	PQclear(r);
	free(text);
	cJSON_Delete(detail);
	return rc;
}

void gl_retention_result_fini(struct gl_retention_result *res)
{
	gl_strbuf_fini(&res->names);
}

int gl_retention_open_sets(struct gl_store *st, int64_t *pruned, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = gl_db_query(gl_db_conn(st), "SELECT gl_open_sets_prune()", 0, NULL, &r, err);
	if (!rc)
		*pruned = PQgetisnull(r, 0, 0) ? -1 : atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}
