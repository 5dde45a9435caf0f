/* Idle GPU time for /v1/idle (see include/gl/idle.h). */
#include "gl/idle.h"
#include "gl/accounting.h"
#include "db_int.h"
#include "gl/pgrow.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Jobs in the window with their exporter-observed idle time. The idle is
 * priced as the showback report prices it (docs/reports.md, top jobs): the
 * job's cost inside the window, split at rate changes as /v1/jobs and
 * chargeback split it, times idle / allocated GPU-seconds; one rate taken
 * at the window's clipped start priced a job running across a price change
 * all at the old price. idle_micros is NULL when no rate covers the job. */
static const char jobs_sql[] =
	"WITH k AS ("
	" SELECT jb.job_pk, jb.job_id, c.name AS cluster, jb.user_name, jb.account, jb.partition, jb.qos, jb.namespace,"
	"  " GL_ACCOUNTING_JOB_MODEL_SQL("jb") " AS gpu_model, " GL_ACCOUNTING_JOB_GPUS_SQL("jb") " AS gpu_micro, jb.state, jb.name AS job_name,"
	"  greatest(jb.start_at, to_timestamp($1)) AS s0, least(coalesce(jb.end_at, to_timestamp($3)), to_timestamp($2)) AS e0,"
	"  ow.team, ow.project, ow.cost_center,"
	"  gl_workload_type(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"   " GL_ACCOUNTING_JOB_RULE_TAGS_SQL("jb") ", gl_job_endpoints(jb.job_pk), jb.start_at) AS workload_type,"
	"  u.idle_gpu_s * sc.k AS idle_gpu_s, u.busy_gpu_s * sc.k AS busy_gpu_s,"
	"  u.observed_gpu_s * sc.k AS observed_gpu_s, u.held_idle_gpu_s * sc.k AS held_idle_gpu_s"
	" FROM jobs jb JOIN clusters c USING (cluster_id)"
	" JOIN gl_job_usage(to_timestamp($1), to_timestamp($2)) u ON u.job_pk = jb.job_pk"
	" CROSS JOIN LATERAL (SELECT " GL_ACCOUNTING_USAGE_SCALE_SQL("u", GL_ACCOUNTING_JOB_GPUS_SQL("jb") " * greatest(extract(epoch FROM"
	"  least(coalesce(jb.end_at, to_timestamp($3)), to_timestamp($2)) - greatest(jb.start_at, to_timestamp($1))), 0)"
	"  / 1000000.0") " AS k) sc"
	" LEFT JOIN LATERAL gl_owner(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"  jb.tags, jb.start_at) ow ON true"
	" WHERE true%s" /* a token's scope */
	"), p AS ("
	" SELECT k.*, %s AS key,"
	"  CASE WHEN rt.cost IS NULL THEN NULL"
	"   WHEN k.gpu_micro * extract(epoch FROM k.e0 - k.s0) <= 0 THEN 0"
	"   ELSE rt.cost * k.idle_gpu_s * 1000000 / (k.gpu_micro * extract(epoch FROM k.e0 - k.s0)) END AS idle_micros"
	" FROM k LEFT JOIN LATERAL (SELECT sum(k.gpu_micro * extract(epoch FROM least(k.e0, r.valid_to)"
	"  - greatest(k.s0, r.valid_from)) * r.micros_per_gpu_hour) / 3600000000 AS cost FROM gl_rates_of(k.gpu_model) r"
	"  WHERE r.valid_from < k.e0 AND r.valid_to > k.s0) rt ON true"
	")";

#define OW(t, m) GL_PGROW(struct gl_idle_owner, t, m)
static const struct gl_pgrow_field owner_fields[] = {
	OW(STR, key), OW(F64, idle_gpu_s), OW(F64, busy_gpu_s), OW(F64, observed_gpu_s),
	GL_PGROW_N(struct gl_idle_owner, I64, idle_micros, idle_micros_null), OW(I64, unpriced_jobs), OW(F64, held_idle_gpu_s),
};
#undef OW
#define JB(t, m) GL_PGROW(struct gl_idle_job, t, m)
static const struct gl_pgrow_field job_fields[] = {
	JB(STR, cluster), JB(STR, job_id), JB(STR, owner), JB(STR, user_name), JB(I64, gpu_micro), JB(STR, gpu_model),
	JB(STR, state), JB(F64, idle_gpu_s), JB(F64, busy_gpu_s),
	GL_PGROW_N(struct gl_idle_job, I64, idle_micros, idle_micros_null), JB(TIME, from_s), JB(TIME, to_s), JB(F64, held_idle_gpu_s),
};
#undef JB
int gl_idle_dim_valid(const char *dim)
{
	return !strchr(dim, ',') && gl_accounting_dim_sql(dim) != NULL;
}

/* the scope's columns in jobs_sql's k, in gl_tokens_scope_dims' order */
static const char *const scope_cols[GL_TOKENS_SCOPE_DIMS] = {"ow.team", "ow.project", "ow.cost_center", "jb.account",
							    "jb.namespace", "jb.user_name"};

/* jobs_sql by expr, its scope condition from parameter first on. */
static void put_jobs_sql(struct gl_strbuf *sql, const char *expr, int first)
{
	struct gl_strbuf w = GL_STRBUF_INIT;
	gl_tokens_scope_sql(&w, scope_cols, first);
	gl_strbuf_printf(sql, jobs_sql, gl_strbuf_cstr(&w), expr);
	gl_strbuf_fini(&w);
}

/* The owners' totals and the top jobs (both from jobs_sql). p: start, end,
 * now, limit, then the scope's six arrays. */
static int read_jobs(PGconn *c, const char *expr, const char *const *p, struct gl_idle *out, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
	const char *p3[9] = {p[0], p[1], p[2], p[4], p[5], p[6], p[7], p[8], p[9]};
	void *owners = NULL, *jobs = NULL;
	int rc;

	put_jobs_sql(&sql, expr, 4);
	gl_strbuf_puts(&sql, " SELECT p.key, round(sum(p.idle_gpu_s)) AS idle_gpu_s, round(sum(p.busy_gpu_s)) AS busy_gpu_s,"
			     " round(sum(p.observed_gpu_s)) AS observed_gpu_s, round(sum(p.idle_micros)) AS idle_micros,"
			     " count(*) FILTER (WHERE p.idle_micros IS NULL) AS unpriced_jobs,"
			     " round(sum(p.held_idle_gpu_s)) AS held_idle_gpu_s"
			     " FROM p GROUP BY p.key ORDER BY 2 DESC, 1");
	rc = gl_pgrow_query(c, sql.p, 9, p3, owner_fields, GL_ARRAY_LEN(owner_fields), sizeof *out->owners, &owners,
		   &out->n_owners, &out->text[0], err);
	out->owners = owners;
	gl_strbuf_reset(&sql);
	put_jobs_sql(&sql, expr, 5);
	gl_strbuf_puts(&sql, " SELECT p.cluster, p.job_id, p.key AS owner, p.user_name, p.gpu_micro, p.gpu_model, p.state,"
			     " round(p.idle_gpu_s) AS idle_gpu_s, round(p.busy_gpu_s) AS busy_gpu_s,"
			     " round(p.idle_micros) AS idle_micros,"
			     " extract(epoch FROM p.s0)::bigint AS from_s, extract(epoch FROM p.e0)::bigint AS to_s,"
			     " round(p.held_idle_gpu_s) AS held_idle_gpu_s"
			     " FROM p WHERE p.idle_gpu_s > 0 ORDER BY p.idle_gpu_s DESC, p.job_pk LIMIT $4");
	if (!rc)
		rc = gl_pgrow_query(c, sql.p, 10, p, job_fields, GL_ARRAY_LEN(job_fields), sizeof *out->jobs, &jobs, &out->n_jobs,
			   &out->text[1], err);
	out->jobs = jobs;
	gl_strbuf_fini(&sql);
	return rc;
}

int gl_idle_read(struct gl_store *st, const char *dim, int64_t start_s, int64_t end_s, int64_t now_s, long limit,
		 const struct gl_capacity_observed *cap, const struct gl_tokens_scope *scope, size_t n_scope, struct gl_idle *out,
		 struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char a[24], b[24], now[24], lim[16];
	struct gl_strbuf arr[GL_TOKENS_SCOPE_DIMS] = {GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT,
						     GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT};
	const char *p[4 + GL_TOKENS_SCOPE_DIMS] = {a, b, now, lim};
	PGresult *r = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	if (!gl_idle_dim_valid(dim))
		return gl_err_set(err, GL_EINVAL, "idle: unknown dimension '%s'", dim);
	snprintf(a, sizeof a, "%lld", (long long)start_s);
	snprintf(b, sizeof b, "%lld", (long long)end_s);
	snprintf(now, sizeof now, "%lld", (long long)now_s);
	snprintf(lim, sizeof lim, "%ld", limit);
	gl_tokens_scope_arrays(scope, n_scope, arr, p + 4);
	if ((rc = read_jobs(c, gl_accounting_dim_sql(dim), p, out, err)) || n_scope)
		goto out;
	if ((rc = gl_db_query(c, "SELECT to_regprocedure('gl_capacity(timestamptz,timestamptz)') IS NOT NULL AS have", 0,
			      NULL, &r, err)) ||
	    (rc = gl_pgrow_one_bool(r, "have", &out->have_capacity, err)))
		goto out;
	PQclear(r);
	r = NULL;
	/* settled as /v1/chargeback settles it: a cluster's idle is its
	 * capacity less unavailable less all its allocation */
	if (out->have_capacity)
		rc = gl_accounting_fleet_idle(st, start_s, end_s, now_s, cap, &out->fleet, &out->n_fleet, &out->text[2],
					      err);
out:
	PQclear(r);
	for (size_t d = 0; d < GL_TOKENS_SCOPE_DIMS; d++)
		gl_strbuf_fini(&arr[d]);
	return rc;
}

void gl_idle_fini(struct gl_idle *idle)
{
	free(idle->owners);
	free(idle->jobs);
	free(idle->fleet);
	for (size_t i = 0; i < GL_ARRAY_LEN(idle->text); i++)
		free(idle->text[i]);
	memset(idle, 0, sizeof *idle);
}
