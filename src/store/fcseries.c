/* History series for forecasts (see include/gl/fcseries.h). */
#include "gl/fcseries.h"
#include "gl/accounting.h"
#include "gl/chargeback.h"
#include "accounting_int.h"
#include "db_int.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

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

/* A key's pending sums per step in integers, micro-GPU-seconds (gus) and
 * seconds with any GPU pending (sec), and the steps a job of it was
 * pending in or started in (on): the same sums whether a step is read live
 * or from its built hour (usage_hourly_pending, sql/094), so the two
 * cannot differ by a rounding. */
struct pend_key {
	char *key;
	int64_t *gus, *sec;
	unsigned char *on;
};

struct pend_acc {
	size_t n_steps, n;
	struct pend_key *k;
};

static void pend_acc_fini(struct pend_acc *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->k[i].key);
		free(p->k[i].gus);
		free(p->k[i].sec);
		free(p->k[i].on);
	}
	free(p->k);
	memset(p, 0, sizeof *p);
}

static struct pend_key *pend_key_for(struct pend_acc *p, const char *key)
{
	size_t n = p->n_steps ? p->n_steps : 1;
	/* rows come ordered by key: the last one first */
	for (size_t i = p->n; i-- > 0;)
		if (!strcmp(p->k[i].key, key))
			return &p->k[i];
	p->k = gl_xrealloc(p->k, sizeof *p->k * (p->n + 1));
	p->k[p->n].key = gl_xstrdup(key);
	p->k[p->n].gus = gl_xcalloc(n, sizeof(int64_t));
	p->k[p->n].sec = gl_xcalloc(n, sizeof(int64_t));
	p->k[p->n].on = gl_xcalloc(n, 1);
	return &p->k[p->n++];
}

/* Adds w x the seconds of [s0, s1) in each step to v; on (when not NULL):
 * the steps that start before s1 and end after s0, which is the live
 * query's rule for a row in a window, so a job that started on submission
 * still names its key there. */
static void add_span(int64_t *v, unsigned char *on, const struct gl_window *steps, size_t n_steps, int64_t s0, int64_t s1,
		     int64_t w)
{
	long k = step_of(steps, n_steps, s0 > steps[0].start_s ? s0 : steps[0].start_s);
	for (; k >= 0 && (size_t)k < n_steps && steps[k].start_s < s1; k++) {
		int64_t x0 = s0 > steps[k].start_s ? s0 : steps[k].start_s;
		int64_t x1 = s1 < steps[k].end_s ? s1 : steps[k].end_s;
		if (v && x1 > x0)
			v[k] += w * (x1 - x0);
		if (on && s0 < steps[k].end_s)
			on[k] = 1;
	}
}

/* Seconds with any GPU pending: the union of the pending spans of a key
 * (rows ordered by key, then submit), so ten jobs waiting together count
 * their seconds once; and the steps each row touches (the live query's
 * rule for a key's presence in a window: submitted before its end, pending
 * or started after its start). */
static void pending_seconds(PGresult *r, const struct gl_window *steps, size_t n_steps, struct pend_acc *out)
{
	struct pend_key *pk = NULL;
	int64_t m0 = 0, m1 = 0;
	for (int i = 0; i <= PQntuples(r); i++) {
		int next_key = i == PQntuples(r) || i == 0 || strcmp(PQgetvalue(r, i, 0), PQgetvalue(r, i - 1, 0));
		int64_t s0 = i < PQntuples(r) ? atoll(PQgetvalue(r, i, 1)) : 0;
		int64_t s1 = i < PQntuples(r) ? atoll(PQgetvalue(r, i, 2)) : 0;
		if (pk && (next_key || s0 > m1)) {
			add_span(pk->sec, NULL, steps, n_steps, m0, m1, 1);
			m0 = m1 = 0;
			if (next_key)
				pk = NULL;
		}
		if (i == PQntuples(r))
			break;
		if (!pk)
			pk = pend_key_for(out, PQgetvalue(r, i, 0));
		add_span(NULL, pk->on, steps, n_steps, s0, s1, 0);
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

/* The GPU jobs a metric of from_jobs reads in the steps' span, a row each:
 * the key, submit, the end of its pending time (start, end or now) and its
 * micro-GPUs, ordered by key and submit; *r the caller's. */
static int jobs_query(PGconn *c, int metric, const struct gl_window *steps, size_t n_steps, const char *const *dims,
		      size_t n_dims, const struct gl_filter *filter, int64_t now_s, PGresult **r, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
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
	else /* pending from submit until start (or end, or now), said so that
	      * an index answers either bound: the submissions before the
	      * steps' end (jobs_newest_idx) or the starts and ends after their
	      * start with the submissions tested in the index
	      * (jobs_pending_until_idx, sql/127) and the jobs still queued
	      * (jobs_pending_idx), whichever is fewer */
		gl_strbuf_puts(&sql, " AND coalesce(jb.submit_at, jb.start_at, '-infinity'::timestamptz) < to_timestamp($2)"
				     " AND (coalesce(jb.start_at, jb.end_at) > to_timestamp($1)"
				     "  OR (jb.start_at IS NULL AND jb.end_at IS NULL AND to_timestamp($3) > to_timestamp($1)))");
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
	rc = gl_db_query(c, sql.p, (int)n_vals, vals, r, err);
out:
	gl_strbuf_fini(&sql);
	return rc;
}

static int from_jobs(PGconn *c, const struct gl_window *steps, size_t n_steps, const char *const *dims, size_t n_dims,
		     const struct gl_filter *filter, int64_t now_s, struct gl_fcseries *out, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = jobs_query(c, GL_FCSERIES_DEMAND_GPUS, steps, n_steps, dims, n_dims, filter, now_s, &r, err);
	for (int i = 0; !rc && i < PQntuples(r); i++) {
		double *v = series_for(out, PQgetvalue(r, i, 0));
		long k = step_of(steps, n_steps, atoll(PQgetvalue(r, i, 1)));
		if (k >= 0)
			v[k] += atof(PQgetvalue(r, i, 3)) / (double)GL_GPU_MICRO;
	}
	PQclear(r);
	return rc;
}

/* The pending sums of the steps, all read live, into acc (acc->n_steps ==
 * n_steps). */
static int pending_live(PGconn *c, const struct gl_window *steps, size_t n_steps, const char *const *dims, size_t n_dims,
			const struct gl_filter *filter, int64_t now_s, struct pend_acc *acc, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = jobs_query(c, GL_FCSERIES_PENDING_GPUS, steps, n_steps, dims, n_dims, filter, now_s, &r, err);
	if (rc)
		return rc;
	pending_seconds(r, steps, n_steps, acc);
	for (int i = 0; i < PQntuples(r); i++) {
		struct pend_key *pk = pend_key_for(acc, PQgetvalue(r, i, 0));
		add_span(pk->gus, NULL, steps, n_steps, atoll(PQgetvalue(r, i, 1)), atoll(PQgetvalue(r, i, 2)),
			 atoll(PQgetvalue(r, i, 3)));
	}
	PQclear(r);
	return 0;
}

/* The built hours among the steps (built[i]) from usage_hourly_pending. */
static int pending_built(PGconn *c, const struct gl_window *steps, size_t n_steps, const unsigned char *built,
			 struct pend_acc *acc, struct gl_err *err)
{
	struct gl_strbuf a = GL_STRBUF_INIT, i1 = GL_STRBUF_INIT;
	PGresult *r = NULL;
	int rc;
	gl_strbuf_putc(&a, '{');
	gl_strbuf_putc(&i1, '{');
	for (size_t i = 0, n = 0; i < n_steps; i++)
		if (built[i]) {
			gl_strbuf_printf(&a, "%s%lld", n ? "," : "", (long long)steps[i].start_s);
			gl_strbuf_printf(&i1, "%s%zu", n++ ? "," : "", i);
		}
	gl_strbuf_putc(&a, '}');
	gl_strbuf_putc(&i1, '}');
	rc = gl_db_query(c,
			 "SELECT s.i, u.skey, u.gpu_us, u.pending_s FROM unnest($1::bigint[], $2::integer[]) AS s(a, i)"
			 " JOIN usage_hourly_pending u ON u.day = (to_timestamp(s.a) AT TIME ZONE 'UTC')::date"
			 "  AND u.hour = extract(hour FROM to_timestamp(s.a) AT TIME ZONE 'UTC')::integer"
			 " ORDER BY u.skey",
			 2, (const char *[]){a.p, i1.p}, &r, err);
	for (int i = 0; !rc && i < PQntuples(r); i++) {
		size_t k = (size_t)atoll(PQgetvalue(r, i, 0));
		struct pend_key *pk = pend_key_for(acc, PQgetvalue(r, i, 1));
		pk->gus[k] += atoll(PQgetvalue(r, i, 2));
		pk->sec[k] += atoll(PQgetvalue(r, i, 3));
		pk->on[k] = 1;
	}
	PQclear(r);
	gl_strbuf_fini(&a);
	gl_strbuf_fini(&i1);
	return rc;
}

/* Whether the built hours can answer: the series by cluster and model,
 * unfiltered, as usage_hourly_pending keeps them (its seconds are unions
 * per such key, which no other grouping can be summed from). */
static int pending_by_built(const char *const *dims, size_t n_dims, const struct gl_filter *filter)
{
	return !filter && n_dims == 2 && !strcmp(dims[0], "cluster") && !strcmp(dims[1], "gpu_model");
}

/* The pending sums of the steps: built hours from usage_hourly_pending,
 * the others live (one query over just those steps). */
static int pending_read(PGconn *c, const struct gl_window *steps, size_t n_steps, const char *const *dims, size_t n_dims,
			const struct gl_filter *filter, int64_t now_s, struct pend_acc *acc, struct gl_err *err)
{
	unsigned char *built = gl_xcalloc(n_steps, 1);
	struct gl_window *live = gl_xcalloc(n_steps, sizeof *live);
	size_t *idx = gl_xcalloc(n_steps, sizeof *idx), nb = 0, nl = 0;
	struct pend_acc la = {0};
	int rc = 0;

	acc->n_steps = n_steps;
	if (pending_by_built(dims, n_dims, filter) &&
	    (rc = gl_accounting_built_hours(c, steps, n_steps, now_s, built, &nb, err)))
		goto out;
	for (size_t i = 0; i < n_steps; i++)
		if (!built[i]) {
			idx[nl] = i;
			live[nl++] = steps[i];
		}
	la.n_steps = nl;
	if (nb && (rc = pending_built(c, steps, n_steps, built, acc, err)))
		goto out;
	/* a query per run of contiguous live steps: one over all of them would
	 * read every job between the first and the last (today and a day
	 * never built 91 days ago: the whole window) */
	for (size_t r0 = 0, r1; r0 < nl && !rc; r0 = r1) {
		struct pend_acc run = {0};
		for (r1 = r0 + 1; r1 < nl && live[r1].start_s == live[r1 - 1].end_s; r1++)
			;
		run.n_steps = r1 - r0;
		if (!(rc = pending_live(c, live + r0, r1 - r0, dims, n_dims, filter, now_s, &run, err)))
			for (size_t k = 0; k < run.n; k++) {
				struct pend_key *pk = pend_key_for(&la, run.k[k].key);
				for (size_t j = 0; j < run.n_steps; j++) {
					pk->gus[r0 + j] += run.k[k].gus[j];
					pk->sec[r0 + j] += run.k[k].sec[j];
					pk->on[r0 + j] |= run.k[k].on[j];
				}
			}
		pend_acc_fini(&run);
	}
	if (rc)
		goto out;
	for (size_t k = 0; k < la.n; k++) {
		struct pend_key *pk = pend_key_for(acc, la.k[k].key);
		for (size_t j = 0; j < nl; j++) {
			pk->gus[idx[j]] += la.k[k].gus[j];
			pk->sec[idx[j]] += la.k[k].sec[j];
			pk->on[idx[j]] |= la.k[k].on[j];
		}
	}
out:
	pend_acc_fini(&la);
	free(built);
	free(live);
	free(idx);
	return rc;
}

/* The series of the sums (either NULL: not wanted): mean GPUs pending
 * (GPU-seconds pending in the step / its length) and minutes. */
static void pending_series(const struct pend_acc *acc, const struct gl_window *steps, struct gl_fcseries *gpus,
			   struct gl_fcseries *minutes)
{
	for (size_t k = 0; k < acc->n; k++) {
		const struct pend_key *pk = &acc->k[k];
		double *g = gpus ? series_for(gpus, pk->key) : NULL, *m = minutes ? series_for(minutes, pk->key) : NULL;
		for (size_t i = 0; i < acc->n_steps; i++) {
			if (g)
				g[i] = (double)pk->gus[i] / (double)GL_GPU_MICRO / (double)(steps[i].end_s - steps[i].start_s);
			if (m)
				m[i] = (double)pk->sec[i] / 60.0;
		}
	}
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
	if (metric == GL_FCSERIES_PENDING_GPUS || metric == GL_FCSERIES_PENDING_MINUTES) {
		struct pend_acc acc = {0};
		if (!(rc = pending_read(c, steps, n_steps, dims, n_dims, filter, now_s, &acc, err)))
			pending_series(&acc, steps, metric == GL_FCSERIES_PENDING_GPUS ? out : NULL,
				       metric == GL_FCSERIES_PENDING_MINUTES ? out : NULL);
		pend_acc_fini(&acc);
	} else if (metric == GL_FCSERIES_DEMAND_GPUS) {
		rc = from_jobs(c, steps, n_steps, dims, n_dims, filter, now_s, out, err);
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
	if (n_steps) {
		struct pend_acc acc = {0};
		if (!(rc = pending_read(c, steps, n_steps, dims, n_dims, NULL, now_s, &acc, err)))
			pending_series(&acc, steps, gpus, minutes);
		pend_acc_fini(&acc);
	}
	if (rc)
		gl_fcseries_fini(minutes);
	else
		finish(minutes, 0);
	return finish(gpus, rc);
}

int gl_fcseries_build_pending(struct gl_store *st, const int64_t *day_s, size_t n_days, int64_t now_s, struct gl_err *err)
{
	static const char *const dims[] = {"cluster", "gpu_model"};
	size_t nh = 24 * n_days;
	struct gl_window *hours = gl_xcalloc(nh ? nh : 1, sizeof *hours);
	struct gl_strbuf rows = GL_STRBUF_INIT;
	struct pend_acc acc = {0};
	int rc = 0;

	for (size_t i = 0; i < nh; i++)
		hours[i] = (struct gl_window){day_s[i / 24] + 3600 * (int64_t)(i % 24), day_s[i / 24] + 3600 * (int64_t)(i % 24 + 1)};
	acc.n_steps = nh;
	/* the live rule itself over the days' hours: built and live agree */
	if (!nh || (rc = pending_live(gl_db_conn(st), hours, nh, dims, 2, NULL, now_s, &acc, err)))
		goto out;
	for (size_t k = 0; k < acc.n; k++)
		for (size_t i = 0; i < nh; i++) {
			int64_t y;
			unsigned m, d;
			if (!acc.k[k].on[i])
				continue;
			gl_timeutil_civil_from_days(day_s[i / 24] / 86400, &y, &m, &d);
			gl_strbuf_printf(&rows, "%04lld-%02u-%02u\t%zu\t", (long long)y, m, d, i % 24);
			gl_strbuf_put_copy_text(&rows, acc.k[k].key, strlen(acc.k[k].key));
			gl_strbuf_printf(&rows, "\t%lld\t%lld\n", (long long)acc.k[k].gus[i], (long long)acc.k[k].sec[i]);
		}
	if (rows.len)
		rc = gl_db_copy_in(gl_db_conn(st), "COPY usage_hourly_pending (day, hour, skey, gpu_us, pending_s) FROM STDIN",
				   rows.p, rows.len, err);
out:
	pend_acc_fini(&acc);
	gl_strbuf_fini(&rows);
	free(hours);
	return rc;
}
