/* Jobs for /v1/jobs (see include/gl/joblist.h). */
#include "gl/joblist.h"
#include "gl/accounting.h"
#include "db_int.h"
#include "gl/pgrow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the sort key of "newest first" (the expression of sql/025's index) */
#define JOBS_NEWEST(t) "coalesce(" t ".submit_at, " t ".start_at, '-infinity'::timestamptz)"

/* With a window ($7, $8 at now $9): the jobs that overlap it, each with
 * its GPU-seconds and cost inside the window (split at rate changes,
 * rounded once per job) and its exporter-observed busy/idle GPU-seconds.
 * An open job's figures end where a source last saw it (seen_s); the rest
 * of the window up to now is its unobserved GPU-seconds (docs/ingest.md). */
static const char jobs_sql[] =
	"WITH w AS (SELECT to_timestamp($7::bigint) AS a, to_timestamp($8::bigint) AS b, to_timestamp($9::bigint) AS now),"
	" j AS ("
	" SELECT j.*, c.name AS cluster,"
	"  CASE WHEN $7::bigint IS NULL THEN NULL ELSE greatest(j.start_at, w.a) END AS s0,"
	"  CASE WHEN $7::bigint IS NULL THEN NULL ELSE"
	"   least(coalesce(j.end_at, least(w.now, greatest(j.start_at, " GL_ACCOUNTING_JOB_SEEN_SQL("j") "))), w.b) END AS e0,"
	"  CASE WHEN $7::bigint IS NULL THEN NULL ELSE least(coalesce(j.end_at, w.now), w.b) END AS e1,"
	"  CASE WHEN j.end_at IS NULL THEN " GL_ACCOUNTING_JOB_SEEN_SQL("j") " END AS seen_at"
	" FROM jobs j JOIN clusters c USING (cluster_id), w"
	" WHERE ($1::text IS NULL OR c.name = $1) AND ($2::text IS NULL OR j.state = $2)"
	"   AND ($3::text IS NULL OR j.job_id = $3)"
	/* a token's scope ($6 team, $11 project, $12 cost_center, $13
	 * account, $14 namespace, $15 user): the owner is the one at the
	 * job's start, as chargeback has it for an owner that never changes */
	"   AND ($13::text[] IS NULL OR j.account = ANY($13)) AND ($14::text[] IS NULL OR j.namespace = ANY($14))"
	"   AND ($15::text[] IS NULL OR j.user_name = ANY($15))"
	"   AND (($6::text[] IS NULL AND $11::text[] IS NULL AND $12::text[] IS NULL) OR EXISTS ("
	"    SELECT 1 FROM gl_owner(c.name, j.account, j.user_name, j.partition, j.qos, j.wckey, j.namespace, j.tags,"
	"     coalesce(j.start_at, j.submit_at)) ow"
	"    WHERE ($6::text[] IS NULL OR ow.team = ANY($6)) AND ($11::text[] IS NULL OR ow.project = ANY($11))"
	"     AND ($12::text[] IS NULL OR ow.cost_center = ANY($12))))"
	/* newest first: by submit time, then ingest order (sql/025's index);
	 * the cursor, the last row's job_pk, resumes after that row */
	"   AND ($10::bigint IS NULL OR (" JOBS_NEWEST("j") ", j.job_pk) <"
	"    (SELECT " JOBS_NEWEST("x") ", x.job_pk FROM jobs x WHERE x.job_pk = $10))"
	"   AND ($7::bigint IS NULL OR (j.start_at < w.b AND coalesce(j.end_at, w.now) > w.a))"
	" ORDER BY " JOBS_NEWEST("j") " DESC, j.job_pk DESC LIMIT $4 OFFSET $5"
	") SELECT j.cluster, j.job_key, j.job_id, j.name, j.user_name, j.account, j.partition, j.qos,"
	" j.namespace, j.state, extract(epoch FROM j.submit_at)::bigint AS submit_s,"
	" extract(epoch FROM j.start_at)::bigint AS start_s, extract(epoch FROM j.end_at)::bigint AS end_s,"
	" j.elapsed_s, " GL_ACCOUNTING_JOB_GPUS_SQL("j") " AS gpu_micro, j.gpu_type, j.queue_wait_s, j.node_list, j.req_gpu_micro,"
	" j.job_pk,"
	" CASE WHEN j.s0 IS NULL THEN NULL"
	"  ELSE round(" GL_ACCOUNTING_JOB_GPUS_SQL("j") " * greatest(extract(epoch FROM j.e0 - j.s0), 0) / 1000000) END AS gpu_seconds,"
	" CASE WHEN j.s0 IS NULL THEN NULL ELSE round(" GL_ACCOUNTING_JOB_GPUS_SQL("j") " * (greatest(extract(epoch FROM j.e1 - j.s0), 0)"
	"  - greatest(extract(epoch FROM j.e0 - j.s0), 0)) / 1000000) END AS unobserved_gpu_seconds,"
	" extract(epoch FROM j.seen_at)::bigint AS seen_s,"
	" (SELECT round(sum(" GL_ACCOUNTING_JOB_GPUS_SQL("j") " * extract(epoch FROM least(j.e0, r.valid_to) - greatest(j.s0, r.valid_from))"
	"   * r.micros_per_gpu_hour) / 3600000000)"
	"  FROM gl_rates_of(" GL_ACCOUNTING_JOB_MODEL_SQL("j") ") r WHERE j.s0 IS NOT NULL AND r.valid_from < j.e0 AND r.valid_to > j.s0)"
	"  AS cost_micros,"
	" u.busy_gpu_s * sc.k AS busy_gpu_s, u.idle_gpu_s * sc.k AS idle_gpu_s, u.held_idle_gpu_s * sc.k AS held_idle_gpu_s"
	" FROM j LEFT JOIN LATERAL (SELECT * FROM gl_job_usage((SELECT a FROM w), (SELECT b FROM w)) x"
	"  WHERE $7::bigint IS NOT NULL AND x.job_pk = j.job_pk) u ON true"
	" CROSS JOIN LATERAL (SELECT " GL_ACCOUNTING_USAGE_SCALE_SQL("u", GL_ACCOUNTING_JOB_GPUS_SQL("j") " * greatest(extract(epoch FROM j.e0 - j.s0), 0)"
									    " / 1000000.0") " AS k) sc"
	" ORDER BY " JOBS_NEWEST("j") " DESC, j.job_pk DESC";

#define F(t, m) GL_PGROW(struct gl_joblist_row, t, m)
#define FN(t, m) GL_PGROW_N(struct gl_joblist_row, t, m, m##_null)
static const struct gl_pgrow_field job_fields[] = {
	F(STR, cluster), F(STR, job_key), F(STR, job_id), F(STR, name), F(STR, user_name), F(STR, account),
	F(STR, partition), F(STR, qos), F(STR, namespace), F(STR, state), F(TIME, submit_s), F(TIME, start_s),
	F(TIME, end_s), FN(I64, elapsed_s), F(I64, gpu_micro), F(STR, gpu_type), FN(I64, queue_wait_s),
	F(STR, node_list), F(I64, req_gpu_micro), F(I64, job_pk), FN(I64, gpu_seconds), FN(I64, unobserved_gpu_seconds),
	F(TIME, seen_s), FN(I64, cost_micros),
	FN(F64, busy_gpu_s), FN(F64, idle_gpu_s), FN(F64, held_idle_gpu_s),
};
#undef F
#undef FN

int gl_joblist_query(struct gl_store *st, const struct gl_joblist_query *q, struct gl_joblist *out,
		     struct gl_err *err)
{
	char lim[24], off[24], wa[24], wb[24], now[24], cur[24];
	struct gl_strbuf b[6] = {GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT,
				 GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT};
	const char *sc[6];
	void *rows = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	/* one row past the page: a next cursor only when there is a next row */
	snprintf(lim, sizeof lim, "%lld", (long long)q->limit + 1);
	snprintf(off, sizeof off, "%lld", (long long)q->offset);
	snprintf(wa, sizeof wa, "%lld", (long long)q->win_start_s);
	snprintf(wb, sizeof wb, "%lld", (long long)q->win_end_s);
	snprintf(now, sizeof now, "%lld", (long long)q->now_s);
	snprintf(cur, sizeof cur, "%lld", (long long)q->cursor);
	gl_tokens_scope_arrays(q->scope, q->n_scope, b, sc);
	rc = gl_pgrow_query(gl_db_conn(st), jobs_sql, 15,
			    (const char *[]){q->cluster, q->state, q->job_id, lim, off, sc[0], q->windowed ? wa : NULL,
					     q->windowed ? wb : NULL, now, q->cursor ? cur : NULL, sc[1], sc[2], sc[3], sc[4],
					     sc[5]},
			    job_fields, GL_ARRAY_LEN(job_fields), sizeof *out->rows, &rows, &out->n, &out->text, err);
	for (size_t d = 0; d < 6; d++)
		gl_strbuf_fini(&b[d]);
	out->rows = rows;
	if (!rc && out->n > (size_t)q->limit) {
		out->more = 1;
		out->n = (size_t)q->limit;
	}
	return rc;
}

void gl_joblist_fini(struct gl_joblist *l)
{
	free(l->rows);
	free(l->text);
	memset(l, 0, sizeof *l);
}
