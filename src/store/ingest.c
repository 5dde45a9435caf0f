/* Ingest runs and watermarks (see include/gl/ingest.h). */
#include "gl/ingest.h"
#include "gl/dbcancel.h"
#include "gl/audit.h"
#include "db_int.h"
#include "plancache_int.h"
#include "ingest_int.h"
#include "gl/log.h"
#include "gl/redact.h"
#include "gl/utf8.h"
#include "gl/pgrow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gl_ingest_stats_init(struct gl_ingest_stats *s, int64_t max_reasons)
{
	memset(s, 0, sizeof *s);
	gl_strbuf_init(&s->reasons);
	s->max_reasons = max_reasons;
}

void gl_ingest_stats_fini(struct gl_ingest_stats *s)
{
	gl_strbuf_fini(&s->reasons);
}

void gl_ingest_stats_skip(struct gl_ingest_stats *s, const char *input, int64_t line, const char *reason)
{
	s->skipped++;
	if (s->n_reasons < s->max_reasons) {
		gl_log(GL_LOG_WARN, "%s:%lld: %s (line skipped)", input, (long long)line, reason);
		if (s->n_reasons)
			gl_strbuf_putc(&s->reasons, ',');
		gl_strbuf_printf(&s->reasons, "{\"line\":%lld,\"reason\":\"", (long long)line);
		/* reasons quote input cut at a byte count: half a character
		 * would make PostgreSQL refuse the run's jsonb */
		gl_utf8_put_json_lossy(&s->reasons, reason, strlen(reason));
		gl_strbuf_puts(&s->reasons, "\"}");
		s->n_reasons++;
	} else if (s->n_reasons == s->max_reasons) {
		gl_log(GL_LOG_WARN, "%s: more skipped lines; further reasons are counted, not logged", input);
		s->n_reasons++;
	}
}

int gl_ingest_run_begin(struct gl_store *st, const char *source, int cluster_id, const char *input, int64_t *run_id,
			struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	struct gl_strbuf in = GL_STRBUF_INIT;
	char cid[16];
	int rc;

	snprintf(cid, sizeof cid, "%d", cluster_id);
	/* a command line may carry a credential, and viewers read this row */
	if (input)
		gl_redact_secrets(input, &in);
	/* a run left 'running' an hour ago died with its process; so did one
	 * of another instance when this session holds the source's lease
	 * (sql/055: that instance can no longer commit anything) */
	if ((rc = gl_db_query(c,
			      "UPDATE ingest_runs SET status = 'aborted', finished_at = now()"
			      " WHERE source = $1 AND cluster_id = $2 AND status = 'running'"
			      " AND (started_at < now() - interval '1 hour'"
			      "  OR (coalesce(current_setting('gpuledger.fence', true), '') <> ''"
			      "   AND instance IS DISTINCT FROM nullif(current_setting('gpuledger.instance', true), '')))",
			      2, (const char *[]){source, cid}, NULL, err)))
		goto out;
	if ((rc = gl_db_query(c,
			      "INSERT INTO ingest_runs (source, cluster_id, input, started_at, status)"
			      " VALUES ($1, $2, $3, clock_timestamp(), 'running') RETURNING run_id",
			      3, (const char *[]){source, cid, input ? gl_strbuf_cstr(&in) : NULL}, &r, err)))
		goto out;
	*run_id = atoll(PQgetvalue(r, 0, 0));
out:
	PQclear(r);
	gl_strbuf_fini(&in);
	return rc;
}

int gl_ingest_run_update(struct gl_store *st, int64_t run_id, const struct gl_ingest_stats *s, const char *status,
			 const char *error, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char id[24], lr[24], ins[24], upd[24], unc[24], sk[24], ign[24];
	struct gl_strbuf reasons = GL_STRBUF_INIT, why = GL_STRBUF_INIT;
	int rc, own_txn = 0;

	snprintf(id, sizeof id, "%lld", (long long)run_id);
	snprintf(lr, sizeof lr, "%lld", (long long)s->lines_read);
	snprintf(ins, sizeof ins, "%lld", (long long)s->inserted);
	snprintf(upd, sizeof upd, "%lld", (long long)s->updated);
	snprintf(unc, sizeof unc, "%lld", (long long)s->unchanged);
	snprintf(sk, sizeof sk, "%lld", (long long)s->skipped);
	snprintf(ign, sizeof ign, "%lld", (long long)s->ignored);
	gl_strbuf_putc(&reasons, '[');
	gl_strbuf_append(&reasons, s->reasons.p ? s->reasons.p : "", s->reasons.len);
	gl_strbuf_putc(&reasons, ']');
	/* errors quote the command line (as ingest_runs.input) */
	if (error)
		gl_redact_secrets(error, &why);
	/* A failure recorded on its own, outside a batch's transaction, is a
	 * record and commits nothing else: it is written under no fence
	 * (sql/055), or a run whose commit the fence refused would stay
	 * 'running'. A batch's own update stays fenced with its rows. */
	if (!strcmp(status, "failed") && PQtransactionStatus(c) == PQTRANS_IDLE) {
		if ((rc = gl_db_exec(c, "BEGIN", err)) ||
		    (rc = gl_db_exec(c, "SELECT set_config('gpuledger.fence', '', true)", err)))
			goto out;
		own_txn = 1;
	}
	rc = gl_db_query(c,
			 "UPDATE ingest_runs SET lines_read = $2, inserted = $3, updated = $4, unchanged = $5,"
			 " skipped = $6, ignored = $7, skip_reasons = $8::jsonb, status = $9, error = $10,"
			 " finished_at = CASE WHEN $9 = 'running' THEN NULL ELSE clock_timestamp() END"
			 " WHERE run_id = $1",
			 10, (const char *[]){id, lr, ins, upd, unc, sk, ign, reasons.p, status,
					      error ? gl_strbuf_cstr(&why) : NULL}, NULL, err);
	if (own_txn)
		rc = rc ?: gl_db_exec(c, "COMMIT", err);
out:
	if (own_txn && PQtransactionStatus(c) != PQTRANS_IDLE)
		PQclear(PQexec(c, "ROLLBACK"));
	gl_strbuf_fini(&reasons);
	gl_strbuf_fini(&why);
	return rc;
}

int gl_ingest_run_fail(struct gl_store *st, int64_t run_id, const struct gl_ingest_stats *s, const char *error, const char *redo,
		       struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_strbuf why = GL_STRBUF_INIT;
	struct gl_err rb = {0};
	int rc;
	/* a failed rollback leaves a broken connection, which the update
	 * below reports */
	if (PQtransactionStatus(c) == PQTRANS_INTRANS || PQtransactionStatus(c) == PQTRANS_INERROR)
		if (gl_db_exec(c, "ROLLBACK", &rb))
			gl_log(GL_LOG_DEBUG, "ingest: rollback before recording the failed run: %s", rb.msg);
	gl_strbuf_puts(&why, error ? error : "error");
	if (gl_dbcancel_requested(GL_DBCANCEL_WORK)) {
		if (redo)
			gl_strbuf_printf(&why, "; %s", redo);
		/* the cancel that cut the run short must not take its record too */
		gl_dbcancel_defer();
	}
	rc = gl_ingest_run_update(gl_db_store(c), run_id, s, "failed", gl_strbuf_cstr(&why), err);
	gl_strbuf_fini(&why);
	return rc;
}

void gl_ingest_run_audit(struct gl_store *st, int64_t run_id)
{
	PGconn *c = gl_db_conn(st);
	struct gl_err err = {0};
	PGresult *r = NULL;
	char id[24];

	if (!run_id)
		return; /* the run never started (no cluster, no database) */
	snprintf(id, sizeof id, "%lld", (long long)run_id);
	/* a caller's failed transaction must not swallow the row */
	if (PQtransactionStatus(c) != PQTRANS_IDLE && gl_db_exec(c, "ROLLBACK", &err))
		gl_log(GL_LOG_DEBUG, "ingest: rollback before the run's audit row: %s", err.msg);
	if (gl_db_query(c,
			"SELECT r.source || ':' || coalesce(c.name, '?'), r.status,"
			" jsonb_build_object('run_id', r.run_id, 'source', r.source, 'cluster', c.name, 'status', r.status,"
			"  'lines_read', r.lines_read, 'inserted', r.inserted, 'updated', r.updated,"
			"  'unchanged', r.unchanged, 'skipped', r.skipped, 'ignored', r.ignored)::text"
			" FROM ingest_runs r LEFT JOIN clusters c USING (cluster_id) WHERE r.run_id = $1",
			1, (const char *[]){id}, &r, &err) == 0 &&
	    PQntuples(r) == 1) {
		const char *status = PQgetvalue(r, 0, 1);
		const char *outcome = !strcmp(status, "ok") || !strcmp(status, "partial") ? "ok" : "error";
		/* written after its run, it has no decision to roll back with it:
		 * a stop waits for it as for the writer's queue, no longer */
		if (gl_dbcancel_requested(GL_DBCANCEL_WORK))
			gl_dbcancel_defer_ms(GL_AUDIT_STOP_GRACE_MS);
		if (gl_audit_append(st, gl_audit_process_actor(), NULL, "ingest.run", PQgetvalue(r, 0, 0), outcome,
				    PQgetvalue(r, 0, 2), &err)) {
			/* whole: the log keeps what the audit log could not */
			struct gl_strbuf b = GL_STRBUF_INIT;
			const char *actor = gl_audit_process_actor(), *obj = PQgetvalue(r, 0, 0);
			gl_strbuf_puts(&b, "{\"actor\":\"");
			gl_strbuf_put_json_str(&b, actor, strlen(actor));
			gl_strbuf_puts(&b, "\",\"action\":\"ingest.run\",\"object\":\"");
			gl_strbuf_put_json_str(&b, obj, strlen(obj));
			gl_strbuf_printf(&b, "\",\"outcome\":\"%s\",\"detail\":%s}", outcome, PQgetvalue(r, 0, 2));
			gl_log(GL_LOG_ERROR, "ingest: run %s: could not write its audit row: %s; audit: row not written: %s", id,
			       err.msg, gl_strbuf_cstr(&b));
			gl_strbuf_fini(&b);
		}
	} else {
		gl_log(GL_LOG_WARN, "ingest: run %s: could not read it for the audit row: %s", id,
		       err.msg[0] ? err.msg : "no such run");
	}
	PQclear(r);
}

int gl_ingest_watermark_get(struct gl_store *st, const char *source, int cluster_id, int64_t *wm, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	char cid[16];
	int rc;
	*wm = GL_TIME_NONE;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	if ((rc = gl_db_query(c,
			      "SELECT extract(epoch FROM watermark)::bigint FROM ingest_state"
			      " WHERE source = $1 AND cluster_id = $2 AND watermark IS NOT NULL",
			      2, (const char *[]){source, cid}, &r, err)))
		goto out;
	if (PQntuples(r) == 1)
		*wm = atoll(PQgetvalue(r, 0, 0));
out:
	PQclear(r);
	return rc;
}

int gl_ingest_watermark_set(struct gl_store *st, const char *source, int cluster_id, int64_t wm, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char cid[16], w[24];
	snprintf(cid, sizeof cid, "%d", cluster_id);
	snprintf(w, sizeof w, "%lld", (long long)wm);
	return gl_db_query(c,
			   "INSERT INTO ingest_state (source, cluster_id, watermark, updated_at)"
			   " VALUES ($1, $2, to_timestamp($3::bigint), now())"
			   " ON CONFLICT (source, cluster_id) DO UPDATE SET watermark = EXCLUDED.watermark,"
			   " observed_to = greatest(ingest_state.observed_to, EXCLUDED.watermark), updated_at = now()",
			   3, (const char *[]){source, cid, w}, NULL, err);
}

int gl_ingest_observed_set(struct gl_store *st, const char *source, int cluster_id, int64_t at_s, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char cid[16], t[24];
	snprintf(cid, sizeof cid, "%d", cluster_id);
	snprintf(t, sizeof t, "%lld", (long long)at_s);
	return gl_db_query(c,
			   "INSERT INTO ingest_state (source, cluster_id, observed_to, updated_at)"
			   " VALUES ($1, $2, to_timestamp($3::bigint), now())"
			   " ON CONFLICT (source, cluster_id) DO UPDATE SET"
			   " observed_to = greatest(ingest_state.observed_to, EXCLUDED.observed_to), updated_at = now()",
			   3, (const char *[]){source, cid, t}, NULL, err);
}

#define DT(t, m) GL_PGROW(struct gl_ingest_data_through_row, t, m)
static const struct gl_pgrow_field dt_fields[] = {
	DT(STR, cluster),
	DT(STR, source),
	DT(STR, data),
	DT(TIME, through_s),
};
#undef DT

int gl_ingest_data_through(struct gl_store *st, struct gl_ingest_data_through_set *out, struct gl_err *err)
{
	void *rows = NULL;
	PGresult *r = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	/* the rule is sql/137's view, which a central reads as one foreign
	 * table a shard; over the shards its planning took 5 ms a request
	 * (300,000 jobs): planned once a session there (plancache_int.h),
	 * and in a chargeback's request already answered by its probe of
	 * the shards (ingest_int.h) */
	rc = gl_plancache_query(gl_db_conn(st), GL_INGEST_DATA_THROUGH_Q, 0, NULL, &r, err);
	if (!rc)
		rc = gl_pgrow_decode(r, dt_fields, GL_ARRAY_LEN(dt_fields), sizeof *out->rows, &rows, &out->n, &out->text,
				     err);
	PQclear(r);
	out->rows = rows;
	return rc;
}

void gl_ingest_data_through_fini(struct gl_ingest_data_through_set *dt)
{
	free(dt->rows);
	free(dt->text);
	memset(dt, 0, sizeof *dt);
}

#define RUN(t, m) GL_PGROW(struct gl_ingest_run_row, t, m)
static const struct gl_pgrow_field run_fields[] = {
	RUN(I64, run_id), RUN(STR, source), RUN(STR, cluster), RUN(STR, input), RUN(TIME, started_s),
	RUN(TIME, finished_s), RUN(STR, status), RUN(I64, lines_read), RUN(I64, inserted), RUN(I64, updated),
	RUN(I64, unchanged), RUN(I64, skipped), RUN(I64, ignored), RUN(STR, skip_reasons), RUN(STR, error),
	RUN(STR, instance),
};
#undef RUN

int gl_ingest_runs_list(struct gl_store *st, const char *source, int64_t limit, struct gl_ingest_list *out,
			struct gl_err *err)
{
	char lim[24];
	void *rows = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	snprintf(lim, sizeof lim, "%lld", (long long)limit);
	rc = gl_pgrow_query(gl_db_conn(st),
			      "SELECT r.run_id, r.source, c.name AS cluster, r.input,"
			      " extract(epoch FROM r.started_at)::bigint AS started_s,"
			      " extract(epoch FROM r.finished_at)::bigint AS finished_s, r.status, r.lines_read, r.inserted,"
			      " r.updated, r.unchanged, r.skipped, r.ignored, r.skip_reasons::text AS skip_reasons, r.error,"
			      " r.instance FROM ingest_runs r LEFT JOIN clusters c USING (cluster_id)"
			      " WHERE ($1::text IS NULL OR r.source = $1) ORDER BY r.run_id DESC LIMIT $2",
			      2, (const char *[]){source, lim}, run_fields, GL_ARRAY_LEN(run_fields), sizeof *out->runs, &rows,
			      &out->n, &out->text, err);
	out->runs = rows;
	return rc;
}

#define LAST(t, m) GL_PGROW(struct gl_ingest_last_run, t, m)
static const struct gl_pgrow_field last_fields[] = {
	LAST(STR, source), LAST(STR, cluster),  LAST(TIME, started_s),   LAST(STR, status),
	LAST(I64, rows),   LAST(I64, skipped), LAST(TIME, watermark_s),
};
#undef LAST

int gl_ingest_runs_last(struct gl_store *st, struct gl_ingest_list *out, struct gl_err *err)
{
	void *rows = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	rc = gl_pgrow_query(gl_db_conn(st),
			      "SELECT DISTINCT ON (r.source, c.name) r.source, c.name AS cluster,"
			      " extract(epoch FROM r.started_at)::bigint AS started_s, r.status, r.inserted + r.updated AS rows,"
			      " r.skipped, (SELECT extract(epoch FROM s.watermark)::bigint FROM ingest_state s"
			      "   WHERE s.source = r.source AND s.cluster_id = r.cluster_id) AS watermark_s"
			      " FROM ingest_runs r JOIN clusters c USING (cluster_id)"
			      " ORDER BY r.source, c.name, r.run_id DESC",
			      0, NULL, last_fields, GL_ARRAY_LEN(last_fields), sizeof *out->last, &rows, &out->n, &out->text,
			      err);
	out->last = rows;
	return rc;
}

void gl_ingest_list_fini(struct gl_ingest_list *l)
{
	free(l->runs);
	free(l->last);
	free(l->text);
	memset(l, 0, sizeof *l);
}
