/* History series for forecasts (see include/gl/fcseries.h). */
#include "gl/fcseries.h"
#include "gl/accounting.h"
#include "gl/chargeback.h"
#include "db_int.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_names[GL_FCSERIES_METRIC_COUNT] = {
	"gpu_hours", "busy_gpu_hours", "demand_gpus", "pending_gpus", "cost", "pending_minutes",
};

int gl_fcseries_metric_parse(const char *name)
{
	for (int i = 0; name && i < GL_FCSERIES_METRIC_COUNT; i++)
		if (!strcmp(name, metric_names[i]))
			return i;
	return -1;
}

const char *gl_fcseries_metric_name(int metric)
{
	return metric >= 0 && metric < GL_FCSERIES_METRIC_COUNT ? metric_names[metric] : NULL;
}

void gl_fcseries_fini(struct gl_fcseries *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->s[i].key);
		free(f->s[i].v);
	}
	free(f->s);
	memset(f, 0, sizeof *f);
}

static double *series_for(struct gl_fcseries *f, const char *key)
{
	/* keys arrive sorted from chargeback's lines per step but not across
	 * steps; a linear scan is fine for the few hundred owners there are */
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->s[i].key, key))
			return f->s[i].v;
	f->s = gl_xrealloc(f->s, sizeof *f->s * (f->n + 1));
	f->s[f->n].key = gl_xstrdup(key);
	f->s[f->n].v = gl_xcalloc(f->n_steps ? f->n_steps : 1, sizeof(double));
	return f->s[f->n++].v;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const struct gl_fcseries_one *)a)->key, ((const struct gl_fcseries_one *)b)->key);
}

static int from_chargeback(PGconn *c, int metric, const struct gl_window *steps, size_t n_steps,
			   const char *const *dims, size_t n_dims, const struct gl_filter *filter, int64_t now_s,
			   struct gl_fcseries *out, struct gl_err *err)
{
	struct gl_accounting_query q;
	struct gl_accounting_meta meta = {0};
	struct gl_chargeback cb;
	int rc;

	gl_chargeback_init(&cb, n_dims, GL_CHARGEBACK_SHARE_NONE, n_steps);
	gl_accounting_query_init(&q, steps, n_steps, dims, n_dims, now_s);
	q.filter = filter;
	/* the owners' lines are the series; the fleet's idle (a gl_capacity
	 * call per step: 2,184 for the capacity forecast's 91 days of hours)
	 * is no part of any of them, and shareIdle none leaves lines as they are */
	q.lines_only = 1;
	/* GPU-hours by the job's own fields over steps of less than a day
	 * (the capacity page's hours): the allocation alone, no owners,
	 * rates or exporter usage to join */
	if (metric == GL_FCSERIES_GPU_HOURS && gl_accounting_alloc_serves(&q))
		rc = gl_accounting_alloc_finished(gl_db_store(c), &q, &cb, err);
	else
		rc = gl_accounting_chargeback_finished(gl_db_store(c), &q, &cb, &meta, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < cb.n_steps; i++)
		for (size_t j = 0; j < cb.steps[i].n_lines; j++) {
			const struct gl_chargeback_line *l = &cb.steps[i].lines[j];
			struct gl_strbuf name = GL_STRBUF_INIT;
			for (size_t d = 0; d < n_dims; d++) {
				if (d)
					gl_strbuf_putc(&name, '/');
				gl_strbuf_puts(&name, l->key[d]);
			}
			double *v = series_for(out, gl_strbuf_cstr(&name));
			gl_strbuf_fini(&name);
			if (metric == GL_FCSERIES_GPU_HOURS)
				v[i] = (double)l->alloc_s / 3600.0;
			else if (metric == GL_FCSERIES_BUSY_GPU_HOURS)
				v[i] = l->observed_s > 0 ? (double)(int64_t)(l->busy_s + 0.5) / 3600.0 : 0;
			else
				v[i] = (double)l->cost_micros / 1e6;
		}
out:
	gl_accounting_meta_fini(&meta);
	gl_chargeback_fini(&cb);
	return rc;
}

/* The step holding t (steps are contiguous and ascending), or -1. */
static long step_of(const struct gl_window *steps, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	if (!n || t < steps[0].start_s || t >= steps[n - 1].end_s)
		return -1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (steps[mid].start_s <= t)
			lo = mid;
		else
			hi = mid;
	}
	return (long)lo;
}

/* Adds w x the seconds of [s0, s1) in each step to v; per_step: divided by
 * the step's length (a mean over the step). */
static void add_span(double *v, const struct gl_window *steps, size_t n_steps, int64_t s0, int64_t s1, double w,
		     int per_step)
{
	long k = step_of(steps, n_steps, s0 > steps[0].start_s ? s0 : steps[0].start_s);
	for (; k >= 0 && (size_t)k < n_steps && steps[k].start_s < s1; k++) {
		int64_t x0 = s0 > steps[k].start_s ? s0 : steps[k].start_s;
		int64_t x1 = s1 < steps[k].end_s ? s1 : steps[k].end_s;
		if (x1 > x0)
			v[k] += w * (double)(x1 - x0) / (per_step ? (double)(steps[k].end_s - steps[k].start_s) : 1.0);
	}
}

/* Minutes with any GPU pending: the union of the pending spans of a key
 * (rows ordered by key, then submit), so ten jobs waiting together count
 * their minutes once. */
static void pending_minutes(PGresult *r, const struct gl_window *steps, size_t n_steps, struct gl_fcseries *out)
{
	double *v = NULL;
	int64_t m0 = 0, m1 = 0;
	for (int i = 0; i <= PQntuples(r); i++) {
		int next_key = i == PQntuples(r) || i == 0 || strcmp(PQgetvalue(r, i, 0), PQgetvalue(r, i - 1, 0));
		int64_t s0 = i < PQntuples(r) ? atoll(PQgetvalue(r, i, 1)) : 0;
		int64_t s1 = i < PQntuples(r) ? atoll(PQgetvalue(r, i, 2)) : 0;
		if (v && (next_key || s0 > m1)) {
			add_span(v, steps, n_steps, m0, m1, 1.0 / 60, 0);
			m0 = m1 = 0;
			if (next_key)
				v = NULL;
		}
		if (i == PQntuples(r))
			break;
		if (!v)
			v = series_for(out, PQgetvalue(r, i, 0));
		if (s1 <= s0)
			continue; /* started on submission: never waited */
		if (m1 <= m0) {
			m0 = s0;
			m1 = s1;
		} else if (s1 > m1) {
			m1 = s1;
		}
	}
}

/* minutes: when not NULL (metric pending_gpus), the pending minutes of the
 * same rows too, so that both come from one pass over the jobs */
/* The filter's clauses on k's rows, each value a parameter from $4 on
 * (vals: the parameters, a, b and now first). */
static int where_filter(struct gl_strbuf *sql, const struct gl_filter *filter, const char **vals, size_t *n,
			struct gl_err *err)
{
	for (size_t i = 0; filter && i < filter->n; i++) {
		const struct gl_filter_clause *fc = &filter->c[i];
		const char *e = gl_accounting_dim_sql(fc->dim);
		if (!e)
			return gl_err_set(err, GL_EINVAL, "filter: unknown dimension '%s'", fc->dim);
		gl_strbuf_printf(sql, " %s %s IN (", i ? "AND" : "WHERE", e);
		for (size_t k = 0; k < fc->n_values; k++) {
			vals[*n] = fc->values[k];
			gl_strbuf_printf(sql, "%s$%zu", k ? ", " : "", ++*n);
		}
		gl_strbuf_putc(sql, ')');
	}
	return 0;
}

/* Whether a dimension or filter clause is one of the owner's (gl_owner,
 * gl_workload_type): team, project, cost_center, workload_type. */
static int needs_owner(const char *const *dims, size_t n_dims, const struct gl_filter *filter)
{
	static const char *const owner[] = {"team", "project", "cost_center", "workload_type"};
	for (size_t i = 0; i < GL_ARRAY_LEN(owner); i++) {
		for (size_t d = 0; d < n_dims; d++)
			if (!strcmp(dims[d], owner[i]))
				return 1;
		for (size_t f = 0; filter && f < filter->n; f++)
			if (!strcmp(filter->c[f].dim, owner[i]))
				return 1;
	}
	return 0;
}

static int from_jobs(PGconn *c, int metric, const struct gl_window *steps, size_t n_steps, const char *const *dims,
		     size_t n_dims, const struct gl_filter *filter, int64_t now_s, struct gl_fcseries *out,
		     struct gl_fcseries *minutes, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
	PGresult *r = NULL;
	char a[24], b[24], now[24];
	const char *vals[3 + GL_FILTER_MAX_CLAUSES * GL_FILTER_MAX_VALUES];
	size_t n_vals = 3;
	int rc;

	snprintf(a, sizeof a, "%lld", (long long)steps[0].start_s);
	snprintf(b, sizeof b, "%lld", (long long)steps[n_steps - 1].end_s);
	snprintf(now, sizeof now, "%lld", (long long)now_s);
	/* the owner at submit time (the job's own time for a queued job),
	 * resolved only when a dimension or the filter names it: a call of
	 * gl_owner and gl_workload_type per job, which nothing reads for the
	 * capacity page's series by cluster and model */
	gl_strbuf_puts(&sql, "WITH k AS (SELECT jb.*, c.name AS cluster, " GL_ACCOUNTING_JOB_MODEL_SQL("jb") " AS gpu_model");
	if (needs_owner(dims, n_dims, filter))
		gl_strbuf_puts(&sql,
			       ", ow.team, ow.project, ow.cost_center,"
			       "  gl_workload_type(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
			       "   " GL_ACCOUNTING_JOB_RULE_TAGS_SQL("jb") ", gl_job_endpoints(jb.job_pk), coalesce(jb.start_at, jb.submit_at)) AS workload_type"
			       " FROM jobs jb JOIN clusters c USING (cluster_id)"
			       " LEFT JOIN LATERAL gl_owner(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey,"
			       "  jb.namespace, jb.tags, coalesce(jb.start_at, jb.submit_at)) ow ON true");
	else
		gl_strbuf_puts(&sql, " FROM jobs jb JOIN clusters c USING (cluster_id)");
	gl_strbuf_puts(&sql,
		       " WHERE (jb.gpu_milli > 0 OR jb.req_gpu_milli > 0) AND jb.submit_at IS NOT NULL"
		       "  AND jb.submit_at < to_timestamp($2)");
	if (metric == GL_FCSERIES_DEMAND_GPUS)
		gl_strbuf_puts(&sql, " AND jb.submit_at >= to_timestamp($1)");
	else /* pending from submit until start (or end, or now) */
		gl_strbuf_puts(&sql, " AND coalesce(jb.start_at, jb.end_at, to_timestamp($3)) > to_timestamp($1)");
	gl_strbuf_puts(&sql, ") SELECT concat_ws('/'");
	for (size_t d = 0; d < n_dims; d++) {
		const char *e = gl_accounting_dim_sql(dims[d]);
		if (!e) {
			rc = gl_err_set(err, GL_EINVAL, "unknown dimension '%s'", dims[d]);
			goto out;
		}
		gl_strbuf_printf(&sql, ", %s", e);
	}
	gl_strbuf_puts(&sql, "), extract(epoch FROM k.submit_at)::bigint,"
			     " extract(epoch FROM least(coalesce(k.start_at, k.end_at, to_timestamp($3)), to_timestamp($3)))::bigint,"
			     /* a pending array row stands for all its still-pending tasks */
			     " greatest(k.req_gpu_micro, " GL_ACCOUNTING_JOB_GPUS_SQL("k") ") * coalesce(k.array_tasks, 1) FROM k");
	vals[0] = a, vals[1] = b, vals[2] = now;
	if ((rc = where_filter(&sql, filter, vals, &n_vals, err)))
		goto out;
	gl_strbuf_puts(&sql, " ORDER BY 1, 2");
	if ((rc = gl_db_query(c, sql.p, (int)n_vals, vals, &r, err)))
		goto out;
	if (metric == GL_FCSERIES_PENDING_MINUTES || minutes)
		pending_minutes(r, steps, n_steps, minutes ? minutes : out);
	if (metric == GL_FCSERIES_PENDING_MINUTES)
		goto out;
	for (int i = 0; i < PQntuples(r); i++) {
		double *v = series_for(out, PQgetvalue(r, i, 0));
		int64_t s0 = atoll(PQgetvalue(r, i, 1)), s1 = atoll(PQgetvalue(r, i, 2));
		double gpus = atof(PQgetvalue(r, i, 3)) / (double)GL_GPU_MICRO;
		if (metric == GL_FCSERIES_DEMAND_GPUS) {
			long k = step_of(steps, n_steps, s0);
			if (k >= 0)
				v[k] += gpus;
			continue;
		}
		/* mean pending GPUs: GPU-seconds pending in the step / its length */
		add_span(v, steps, n_steps, s0, s1, gpus, 1);
	}
out:
	PQclear(r);
	gl_strbuf_fini(&sql);
	return rc;
}

/* Sorts the keys of a query's result; on failure frees it. */
static int finish(struct gl_fcseries *out, int rc)
{
	if (rc)
		gl_fcseries_fini(out);
	else if (out->n > 1)
		gl_qsort(out->s, out->n, sizeof *out->s, cmp_key);
	return rc;
}

int gl_fcseries_query(struct gl_store *st, int metric, const struct gl_window *steps, size_t n_steps, const char *const *dims,
		      size_t n_dims, const struct gl_filter *filter, int64_t now_s, struct gl_fcseries *out,
		      struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int rc;
	memset(out, 0, sizeof *out);
	out->n_steps = n_steps;
	if (!n_steps)
		return 0;
	if (metric == GL_FCSERIES_DEMAND_GPUS || metric == GL_FCSERIES_PENDING_GPUS || metric == GL_FCSERIES_PENDING_MINUTES) {
		rc = from_jobs(c, metric, steps, n_steps, dims, n_dims, filter, now_s, out, NULL, err);
	} else if (metric >= 0 && metric < GL_FCSERIES_METRIC_COUNT) {
		rc = from_chargeback(c, metric, steps, n_steps, dims, n_dims, filter, now_s, out, err);
	} else {
		rc = gl_err_set(err, GL_EINVAL, "unknown metric %d", metric);
	}
	return finish(out, rc);
}

int gl_fcseries_query_pending(struct gl_store *st, const struct gl_window *steps, size_t n_steps, const char *const *dims,
			      size_t n_dims, int64_t now_s, struct gl_fcseries *gpus, struct gl_fcseries *minutes,
			      struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int rc = 0;
	memset(gpus, 0, sizeof *gpus);
	memset(minutes, 0, sizeof *minutes);
	gpus->n_steps = minutes->n_steps = n_steps;
	if (n_steps)
		rc = from_jobs(c, GL_FCSERIES_PENDING_GPUS, steps, n_steps, dims, n_dims, NULL, now_s, gpus, minutes, err);
	if (rc)
		gl_fcseries_fini(minutes);
	else
		finish(minutes, 0);
	return finish(gpus, rc);
}
