/* Reading capacity and allocation per step (see include/gl/capstore.h). */
#include "gl/capstore.h"
#include "gl/accounting.h"
#include "db_int.h"
#include "plancache_int.h"
#include "gl/pgarray.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Steps go in as two bigint arrays, ascending and not overlapping;
 * gl_capacity() runs once per step and the jobs of every step are read in
 * the same statement. A job counts once,
 * under its own partition; its model is the one its first node had when it
 * started (else its GRES type). */
#define JOB_KEY_SQL                                                                                      \
	"CASE $4 WHEN 'partition' THEN coalesce(j.partition, '')"                                         \
	" WHEN 'gpu_model' THEN coalesce((SELECT s.gpu_model FROM node_gpu_spans s WHERE s.cluster_id = j.cluster_id" \
	"   AND s.node = j.nodes[1] AND s.valid_from <= j.start_at ORDER BY s.valid_from DESC LIMIT 1),"  \
	"   j.gpu_type, '')"                                                                                \
	" WHEN 'workload_type' THEN gl_workload_type((SELECT c.name FROM clusters c WHERE c.cluster_id = j.cluster_id)," \
	"   j.account, j.user_name, j.partition, j.qos, j.wckey, j.namespace, " GL_ACCOUNTING_JOB_RULE_TAGS_SQL("j") ","     \
	"   gl_job_endpoints(j.job_pk),"                                                                     \
	"   j.start_at)"                                                                                    \
	" ELSE '' END"
/* A job's end as the figures count it: an open job runs to now with the
 * unobserved time included ($7, sreport's semantics), else to the last
 * moment a source saw it (GL_ACCOUNTING_JOB_SEEN_SQL; none: no firm time), as
 * chargeback counts it. */
#define JOB_END_SQL                                                                                      \
	"coalesce(j.end_at, CASE WHEN $7::boolean THEN to_timestamp($3::bigint)"                          \
	" ELSE least(greatest(coalesce(" GL_ACCOUNTING_JOB_SEEN_SQL("j") ", j.start_at), j.start_at),"               \
	" to_timestamp($3::bigint)) END)"
#define CANON_KEY_SQL "CASE $4 WHEN 'gpu_model' THEN gl_gpu_model(k) ELSE k END"
/* The steps' bounds said again as values ($8 first start, $9 last end),
 * implied by the tests against the steps: on a central database of shards
 * (docs/scale.md) a bound taken from a CTE stays on the central, and each
 * shard sent all its jobs (a month's capacity over 30,000 jobs: 0.5 s). */
#define JOB_IN_WINDOW_SQL                                                                                \
	" AND j.start_at < to_timestamp($9::bigint) AND (j.end_at IS NULL OR j.end_at > to_timestamp($8::bigint))"
#define JOB_IN_STEP_SQL                                                                                  \
	"j.gpu_milli > 0 AND j.start_at IS NOT NULL AND j.start_at < to_timestamp(st.b)"                  \
	" AND " JOB_END_SQL " > to_timestamp(st.a) AND " JOB_END_SQL " > j.start_at" JOB_IN_WINDOW_SQL

static const char cap_head_sql[] =
	"WITH st AS (SELECT t.a, t.b, t.i FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS t(a, b, i)),"
	" cap AS ("
	"  SELECT st.i, c.cluster_id,"
	"   CASE $4 WHEN 'partition' THEN coalesce(c.partition, '') WHEN 'gpu_model' THEN gl_gpu_model(c.gpu_model) ELSE '' END AS k,"
	"   sum(c.reported_gpu_seconds) AS r, sum(c.down_gpu_seconds) AS d,"
	"   sum(c.planned_down_gpu_seconds) AS pd, sum(c.reserved_gpu_seconds) AS rs, sum(c.unobserved_gpu_seconds) AS u"
	"  FROM st CROSS JOIN LATERAL gl_capacity(to_timestamp(st.a), to_timestamp(st.b), $6::bigint, $7::boolean) c"
	"  GROUP BY 1, 2, 3),"
	/* Allocation per step from each job's start and end events
	 * (gl_accounting_event_cells), not a row per job and step: every step
	 * joined to the jobs compared 72 million pairs for 720 hours of
	 * 100,000 jobs (12 s). Jobs are then grouped by the model names they
	 * carry, then by their canonical model (sql/024): a lookup per group,
	 * not per job. */
	" steps AS (SELECT st.i::integer AS n, to_timestamp(st.a) AS a, to_timestamp(st.b) AS b FROM st),"
	" win AS (SELECT array_agg(a ORDER BY n) AS starts, min(a) AS lo, max(b) AS hi FROM steps),"
	" jj AS MATERIALIZED ("
	"  SELECT j.cluster_id, " JOB_KEY_SQL " AS k, " GL_ACCOUNTING_JOB_HELD_SQL("j") " AS g,"
	"   greatest(j.start_at, win.lo) AS p0, least(" JOB_END_SQL ", win.hi) AS p1"
	"  FROM win JOIN jobs j ON j.gpu_milli > 0 AND j.start_at IS NOT NULL AND j.start_at < win.hi"
	"   AND " JOB_END_SQL " > win.lo"
	"   AND " JOB_END_SQL " > j.start_at" JOB_IN_WINDOW_SQL ")";

/* after gl_accounting_event_cells over jj: the rest of the query */
static const char cap_tail_sql[] =
	", jb0 AS (SELECT s.n AS i, c.cluster_id, c.k, sum(extract(epoch FROM s.b - s.a)::bigint * c.gact - c.si) AS am"
	"  FROM cells c JOIN steps s ON s.n = c.n GROUP BY 1, 2, 3"
	"  HAVING sum(extract(epoch FROM s.b - s.a)::bigint * c.gact - c.si) <> 0),"
	" jb AS (SELECT i, cluster_id, " CANON_KEY_SQL " AS k, sum(am) AS am FROM jb0 GROUP BY 1, 2, 3),"
	/* drained-but-allocated: the part of each job's allocation that ran on
	 * a node while the scheduler had it down or drained (a cordoned
	 * Kubernetes node keeps its pods; a DRAINING Slurm node its jobs).
	 * Overlapping spans of several sources count once per node (range_agg).
	 * Jobs are filtered with one array overlap against the cluster's
	 * ever-drained nodes, so a big window reads the jobs once. */
	" dn AS (SELECT s.cluster_id, s.node, range_agg(tstzrange(s.valid_from, coalesce(s.valid_to, 'infinity'))) AS mr"
	"  FROM node_state_spans s WHERE s.state IN ('down', 'drained') GROUP BY 1, 2),"
	" dc AS (SELECT cluster_id, array_agg(node) AS nodes FROM dn GROUP BY 1),"
	" dr0 AS ("
	"  SELECT st.i, j.cluster_id, " JOB_KEY_SQL " AS k, sum(" GL_ACCOUNTING_JOB_HELD_SQL("j") " * o.secs / cardinality(j.nodes)) AS dm"
	"  FROM st JOIN jobs j ON " JOB_IN_STEP_SQL
	"  JOIN dc ON dc.cluster_id = j.cluster_id AND j.nodes && dc.nodes"
	"  CROSS JOIN LATERAL (SELECT sum(extract(epoch FROM upper(x) - lower(x)))::bigint AS secs"
	"   FROM dn, unnest(dn.mr * tstzmultirange(tstzrange(greatest(j.start_at, to_timestamp(st.a)),"
	"     least(" JOB_END_SQL ", to_timestamp(st.b))))) x"
	"   WHERE dn.cluster_id = j.cluster_id AND dn.node = ANY (j.nodes)) o"
	"  WHERE o.secs > 0"
	"  GROUP BY 1, 2, 3),"
	" dr AS (SELECT i, cluster_id, " CANON_KEY_SQL " AS k, sum(dm) AS dm FROM dr0 GROUP BY 1, 2, 3)"
	" SELECT coalesce(cap.i, jb.i) - 1, cl.name, coalesce(cap.k, jb.k), coalesce(cap.r, 0), coalesce(jb.am, 0),"
	"  coalesce(cap.d, 0), coalesce(cap.pd, 0), coalesce(cap.rs, 0), coalesce(dr.dm, 0), coalesce(cap.u, 0)"
	" FROM cap FULL JOIN jb ON cap.i = jb.i AND cap.cluster_id = jb.cluster_id AND cap.k = jb.k"
	" LEFT JOIN dr ON dr.i = jb.i AND dr.cluster_id = jb.cluster_id AND dr.k = jb.k"
	" JOIN clusters cl ON cl.cluster_id = coalesce(cap.cluster_id, jb.cluster_id)"
	" WHERE $5::text IS NULL OR cl.name = $5"
	" ORDER BY 1, 2, 3";

static void put_array(struct gl_strbuf *b, const struct gl_window *w, size_t n, int end)
{
	gl_strbuf_putc(b, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			gl_strbuf_putc(b, ',');
		gl_strbuf_put_i64(b, end ? w[i].end_s : w[i].start_s);
	}
	gl_strbuf_putc(b, '}');
}

/* Every row of the answer is one cluster's, so on a session routed to the
 * shards each shard answers for its own clusters (gl_fleet_rows, sql/115):
 * the central read every job of the window from the shards to answer it
 * itself (a month at 300,000 jobs: 25,482 jobs crossed, 145-213 ms where
 * one database took 52-80). The columns cross as text, and are ordered
 * here as the query orders them. One database runs the query as it is. */
static int run_query(PGconn *c, const struct gl_strbuf *sql, const char *const *params, size_t np, PGresult **r,
		     struct gl_err *err)
{
	struct gl_strbuf inner = GL_STRBUF_INIT, arr = GL_STRBUF_INIT;
	int rc;
	if (!gl_plancache_marked(c))
		return gl_db_query(c, sql->p, (int)np, params, r, err);
	gl_strbuf_puts(&inner, "SELECT c0::text, c1::text, c2::text, c3::text, c4::text, c5::text, c6::text, c7::text,"
			       " c8::text, c9::text FROM (");
	gl_strbuf_puts(&inner, sql->p);
	gl_strbuf_puts(&inner, ") x(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9)");
	for (size_t i = 0; i < np; i++)
		gl_pgarray_add_text(&arr, params[i]);
	rc = gl_db_query(c,
			 "SELECT * FROM gl_fleet_rows($1, $2::text[], $3) AS t(c0 text, c1 text, c2 text, c3 text,"
			 " c4 text, c5 text, c6 text, c7 text, c8 text, c9 text) ORDER BY c0::bigint, c1, c2",
			 3,
			 (const char *[]){gl_strbuf_cstr(&inner), gl_pgarray_end(&arr),
					  "c0 text, c1 text, c2 text, c3 text, c4 text, c5 text, c6 text, c7 text, c8 text,"
					  " c9 text"},
			 r, err);
	gl_strbuf_fini(&inner);
	gl_strbuf_fini(&arr);
	return rc;
}

int gl_capstore_query(struct gl_store *st, const struct gl_window *steps, size_t nsteps, enum gl_capacity_aggregate agg,
		      const char *cluster, int64_t now_s, const struct gl_capacity_observed *obs, struct gl_capacity_row **rows,
		      size_t *nrows, struct gl_err *err)
{
	static const char *const agg_names[] = {"cluster", "partition", "gpu_model", "workload_type"};
	struct gl_strbuf a = GL_STRBUF_INIT, b = GL_STRBUF_INIT, sql = GL_STRBUF_INIT;
	char now[24], grace[24], los[24], his[24];
	int64_t lo = 0, hi = 0;
	PGresult *r = NULL;
	struct gl_capacity_row *out = NULL;
	int rc, n;

	*rows = NULL;
	*nrows = 0;
	put_array(&a, steps, nsteps, 0);
	put_array(&b, steps, nsteps, 1);
	snprintf(now, sizeof now, "%lld", (long long)now_s);
	for (size_t i = 0; i < nsteps; i++) {
		lo = i && lo < steps[i].start_s ? lo : steps[i].start_s;
		hi = i && hi > steps[i].end_s ? hi : steps[i].end_s;
	}
	snprintf(los, sizeof los, "%lld", (long long)lo);
	snprintf(his, sizeof his, "%lld", (long long)hi);
	snprintf(grace, sizeof grace, "%lld", (long long)obs->grace_s);
	gl_strbuf_puts(&sql, cap_head_sql);
	gl_accounting_event_cells(&sql, "cluster_id, k", "jj", "steps", nsteps == 1);
	gl_strbuf_puts(&sql, cap_tail_sql);
	{
		const char *params[] = {gl_strbuf_cstr(&a), gl_strbuf_cstr(&b), now, agg_names[agg], cluster,
					obs->grace_s < 0 ? NULL : grace, obs->include ? "true" : "false", los, his};
		if ((rc = run_query(gl_db_conn(st), &sql, params, GL_ARRAY_LEN(params), &r, err)))
			goto out;
	}
	n = PQntuples(r);
	out = gl_xcalloc(n ? (size_t)n : 1, sizeof *out);
	for (int i = 0; i < n; i++) {
		struct gl_capacity_row *x = &out[i];
		long long step = atoll(PQgetvalue(r, i, 0));
		if (step < 0 || (size_t)step >= nsteps) {
			rc = gl_err_set(err, GL_EDB, "capacity: step %lld out of range", step);
			goto out;
		}
		x->step = (size_t)step;
		x->start_s = steps[step].start_s;
		x->end_s = steps[step].end_s;
		snprintf(x->cluster, sizeof x->cluster, "%s", PQgetvalue(r, i, 1));
		snprintf(x->key, sizeof x->key, "%s", PQgetvalue(r, i, 2));
		x->raw_reported_gpu_seconds = atoll(PQgetvalue(r, i, 3));
		x->raw_allocated_micro_gpu_seconds = atoll(PQgetvalue(r, i, 4));
		x->raw_down_gpu_seconds = atoll(PQgetvalue(r, i, 5));
		x->raw_planned_down_gpu_seconds = atoll(PQgetvalue(r, i, 6));
		x->raw_reserved_gpu_seconds = atoll(PQgetvalue(r, i, 7));
		x->raw_drained_alloc_micro_gpu_seconds = atoll(PQgetvalue(r, i, 8));
		x->raw_unobserved_gpu_seconds = atoll(PQgetvalue(r, i, 9));
		gl_capacity_settle(x);
	}
	if (agg == GL_CAPACITY_AGG_WORKLOAD_TYPE) {
		/* capacity on the "" rows, allocation on the types' */
		gl_capacity_by_type(out, (size_t)n, rows, nrows);
		goto out;
	}
	*rows = out;
	*nrows = (size_t)n;
	out = NULL;
out:
	free(out);
	PQclear(r);
	gl_strbuf_fini(&a);
	gl_strbuf_fini(&b);
	gl_strbuf_fini(&sql);
	return rc;
}
