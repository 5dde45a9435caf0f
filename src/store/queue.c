/* Queue waits (see include/gl/queue.h). */
#include "gl/queue.h"
#include "gl/accounting.h"
#include "db_int.h"
#include "gl/pgrow.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A GPU-count dimension on top of the chargeback ones. */
static const char *dim_sql(const char *dim)
{
	if (!strcmp(dim, "gpus"))
		return "trim_scale(greatest(" GL_ACCOUNTING_JOB_GPUS_SQL("k") ", k.req_gpu_micro) / 1000000.0)::text";
	return gl_accounting_dim_sql(dim);
}

int gl_queue_dim_valid(const char *dim)
{
	return !strchr(dim, ',') && dim_sql(dim) != NULL;
}

static const char queue_cte[] =
	"WITH k AS ("
	" SELECT jb.*, c.name AS cluster, " GL_ACCOUNTING_JOB_MODEL_SQL("jb") " AS gpu_model, ow.team, ow.project, ow.cost_center,"
	"  gl_workload_type(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"   " GL_ACCOUNTING_JOB_RULE_TAGS_SQL("jb") ", gl_job_endpoints(jb.job_pk), coalesce(jb.start_at, jb.submit_at)) AS workload_type"
	" FROM jobs jb JOIN clusters c USING (cluster_id)"
	" LEFT JOIN LATERAL gl_owner(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"  jb.tags, coalesce(jb.start_at, jb.submit_at)) ow ON true"
	" WHERE (jb.gpu_milli > 0 OR jb.req_gpu_milli > 0) AND %s"
	")";

#define QW(m) GL_PGROW_N(struct gl_queue_wait, I64, m, m##_null)
static const struct gl_pgrow_field wait_fields[] = {
	GL_PGROW(struct gl_queue_wait, STR, key), GL_PGROW(struct gl_queue_wait, I64, jobs), QW(p50_s), QW(p90_s),
	QW(p99_s), QW(max_s), QW(mean_ds), QW(eligible_p50_s), GL_PGROW(struct gl_queue_wait, I64, gpu_micro),
};
#undef QW
#define QP(t, m) GL_PGROW(struct gl_queue_pending, t, m)
static const struct gl_pgrow_field pending_fields[] = {
	QP(STR, key), QP(I64, jobs), QP(I64, gpu_micro), QP(I64, longest_wait_s), QP(I64, unobserved_s),
	QP(BOOL, lower_bound),
};
#undef QP

/* the scope's columns in the CTE, in gl_tokens_scope_dims' order */
static const char *const scope_cols[GL_TOKENS_SCOPE_DIMS] = {"ow.team", "ow.project", "ow.cost_center", "jb.account",
							    "jb.namespace", "jb.user_name"};

/* queue_cte with where and the scope's condition from parameter first on. */
static void put_cte(struct gl_strbuf *sql, const char *where, int first)
{
	struct gl_strbuf w = GL_STRBUF_INIT;
	gl_strbuf_puts(&w, where);
	gl_tokens_scope_sql(&w, scope_cols, first);
	gl_strbuf_printf(sql, queue_cte, gl_strbuf_cstr(&w));
	gl_strbuf_fini(&w);
}

int gl_queue_read(struct gl_store *st, const char *dim, int64_t start_s, int64_t end_s, int64_t now_s,
		  const struct gl_tokens_scope *scope, size_t n_scope, struct gl_queue *q, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
	struct gl_strbuf arr[GL_TOKENS_SCOPE_DIMS] = {GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT,
						     GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT};
	const char *expr = dim_sql(dim), *sc[GL_TOKENS_SCOPE_DIMS];
	char a[24], b[24], now[24];
	void *waits = NULL, *pending = NULL;
	int rc;

	memset(q, 0, sizeof *q);
	if (!gl_queue_dim_valid(dim))
		return gl_err_set(err, GL_EINVAL, "queue: unknown dimension '%s'", dim);
	snprintf(a, sizeof a, "%lld", (long long)start_s);
	snprintf(b, sizeof b, "%lld", (long long)end_s);
	snprintf(now, sizeof now, "%lld", (long long)now_s);
	gl_tokens_scope_arrays(scope, n_scope, arr, sc);
	/* waits of jobs that started in the window */
	put_cte(&sql, "jb.start_at >= to_timestamp($1) AND jb.start_at < to_timestamp($2)", 3);
	gl_strbuf_printf(&sql,
			 " SELECT %s AS key, count(*) AS jobs,"
			 " percentile_disc(0.5) WITHIN GROUP (ORDER BY k.queue_wait_s) AS p50_s,"
			 " percentile_disc(0.9) WITHIN GROUP (ORDER BY k.queue_wait_s) AS p90_s,"
			 " percentile_disc(0.99) WITHIN GROUP (ORDER BY k.queue_wait_s) AS p99_s,"
			 " max(k.queue_wait_s) AS max_s, round(avg(k.queue_wait_s) * 10) AS mean_ds,"
			 " percentile_disc(0.5) WITHIN GROUP (ORDER BY k.eligible_wait_s) AS eligible_p50_s,"
			 " sum(" GL_ACCOUNTING_JOB_GPUS_SQL("k") ") AS gpu_micro"
			 " FROM k GROUP BY 1 ORDER BY 1",
			 expr);
	rc = gl_pgrow_query(gl_db_conn(st), sql.p, 8, (const char *[]){a, b, sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]},
			    wait_fields, GL_ARRAY_LEN(wait_fields),
		   sizeof *q->waits, &waits, &q->n_waits, &q->text[0], err);
	q->waits = waits;
	/* pending demand now: queued jobs and how long they have waited */
	gl_strbuf_reset(&sql);
	put_cte(&sql, "jb.start_at IS NULL AND jb.end_at IS NULL AND jb.submit_at <= to_timestamp($1)", 2);
	gl_strbuf_printf(&sql,
			 /* a pending array row stands for all its tasks, each asking for req_gpu_micro */
			 " SELECT %s AS key, sum(coalesce(k.array_tasks, 1)) AS jobs,"
			 " sum(k.req_gpu_micro * coalesce(k.array_tasks, 1)) AS gpu_micro,"
			 /* a wait is known up to the last time a source saw the
			  * job still pending (docs/ingest.md, "Observed time"):
			  * one snapshot does not show a month of waiting */
			 " max(extract(epoch FROM least(to_timestamp($1), greatest(k.submit_at, " GL_ACCOUNTING_JOB_SEEN_SQL("k") "))"
			 "  - k.submit_at)::bigint) AS longest_wait_s,"
			 " max($1::bigint - extract(epoch FROM least(to_timestamp($1), greatest(k.submit_at, "
			 GL_ACCOUNTING_JOB_SEEN_SQL("k") ")))::bigint) AS unobserved_s,"
			 " bool_or(k.array_tasks_partial) AS lower_bound"
			 " FROM k GROUP BY 1 ORDER BY 1",
			 expr);
	if (!rc)
		rc = gl_pgrow_query(gl_db_conn(st), sql.p, 7, (const char *[]){now, sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]},
				    pending_fields, GL_ARRAY_LEN(pending_fields),
			   sizeof *q->pending, &pending, &q->n_pending, &q->text[1], err);
	q->pending = pending;
	gl_strbuf_fini(&sql);
	for (size_t d = 0; d < GL_TOKENS_SCOPE_DIMS; d++)
		gl_strbuf_fini(&arr[d]);
	return rc;
}

void gl_queue_fini(struct gl_queue *q)
{
	free(q->waits);
	free(q->pending);
	free(q->text[0]);
	free(q->text[1]);
	memset(q, 0, sizeof *q);
}
