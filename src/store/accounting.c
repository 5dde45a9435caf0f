/* Accounting queries (see include/gl/accounting.h). */
#include "gl/accounting.h"
#include "gl/db.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gl_acct_dims[] = {"team", "project", "cost_center", "user", "account", "cluster",
				     "partition", "qos", "namespace", "gpu_model", NULL};

/* Only these fixed strings ever reach the SQL text; user input goes in parameters. */
static const char *const dim_sql[] = {
	"coalesce(k.team, '__unallocated__')", "coalesce(k.project, '__unallocated__')",
	"coalesce(k.cost_center, '__unallocated__')", "coalesce(k.user_name, '')", "coalesce(k.account, '')",
	"k.cluster", "coalesce(k.partition, '')", "coalesce(k.qos, '')", "coalesce(k.namespace, '')",
	"coalesce(k.gpu_model, 'unknown')",
};

const char *gl_acct_dim_sql(const char *dim)
{
	for (size_t i = 0; gl_acct_dims[i]; i++)
		if (!strcmp(gl_acct_dims[i], dim))
			return dim_sql[i];
	return NULL;
}

/* Jobs overlapping each step, clipped to it, with their owner at start time.
 * Owner rules change rarely, so the owner is resolved once per distinct set
 * of owner-relevant attributes and rule-validity segment (a few thousand
 * gl_owner calls) and hash-joined back to the jobs, instead of once per job. */
static const char jobs_cte[] =
	"WITH steps AS ("
	" SELECT s.i::integer AS i, to_timestamp(s.a) AS a, to_timestamp(s.b) AS b"
	" FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS s(a, b, i)"
	"), bounds AS ("
	" SELECT DISTINCT t FROM (SELECT valid_from AS t FROM owners UNION ALL SELECT valid_to FROM owners"
	"  UNION ALL SELECT '-infinity'::timestamptz) x"
	"), segs AS ("
	" SELECT t AS s_from, coalesce(lead(t) OVER (ORDER BY t), 'infinity') AS s_to FROM bounds"
	"), k0 AS ("
	" SELECT s.i, jb.job_pk, jb.cluster_id, c.name AS cluster, jb.user_name, jb.account, jb.partition, jb.qos,"
	"  jb.namespace, lower(jb.gpu_type) AS gpu_model, jb.gpu_milli,"
	"  greatest(jb.start_at, s.a) AS s0, least(coalesce(jb.end_at, to_timestamp($3)), s.b) AS e0,"
	"  sg.s_from AS seg,"
	"  coalesce(jb.account, '') || chr(1) || coalesce(jb.user_name, '') || chr(1) || coalesce(jb.partition, '') || chr(1) ||"
	"  coalesce(jb.qos, '') || chr(1) || coalesce(jb.wckey, '') || chr(1) || coalesce(jb.namespace, '') || chr(1) ||"
	"  coalesce((jb.tags -> 'labels')::text, '') AS okey, jb.wckey, jb.tags"
	" FROM steps s"
	" JOIN jobs jb ON jb.gpu_milli > 0 AND jb.start_at < s.b AND coalesce(jb.end_at, to_timestamp($3)) > s.a"
	" JOIN clusters c ON c.cluster_id = jb.cluster_id"
	" JOIN segs sg ON jb.start_at >= sg.s_from AND jb.start_at < sg.s_to"
	" WHERE jb.start_at < to_timestamp($3)"
	"), attrs AS ("
	" SELECT DISTINCT cluster, okey, seg, account, user_name, partition, qos, wckey, namespace, tags -> 'labels' AS labels"
	" FROM k0"
	"), own AS MATERIALIZED ("
	" SELECT a.cluster, a.okey, a.seg, o.team, o.project, o.cost_center FROM attrs a"
	" LEFT JOIN LATERAL gl_owner(a.cluster, a.account, a.user_name, a.partition, a.qos, a.wckey, a.namespace,"
	"  jsonb_build_object('labels', a.labels), a.seg) o ON true"
	"), k AS ("
	" SELECT k0.*, own.team, own.project, own.cost_center FROM k0"
	" JOIN own ON own.cluster = k0.cluster AND own.okey = k0.okey AND own.seg = k0.seg"
	")";

/* Jobs overlapping each step without owners: what fleet idle needs. */
static const char alloc_cte[] =
	"WITH steps AS ("
	" SELECT s.i::integer AS i, to_timestamp(s.a) AS a, to_timestamp(s.b) AS b"
	" FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS s(a, b, i)"
	"), k AS ("
	" SELECT s.i, jb.cluster_id, jb.partition, lower(jb.gpu_type) AS gpu_model, jb.gpu_milli,"
	"  greatest(jb.start_at, s.a) AS s0, least(coalesce(jb.end_at, to_timestamp($3)), s.b) AS e0"
	" FROM steps s"
	" JOIN jobs jb ON jb.gpu_milli > 0 AND jb.start_at < s.b AND coalesce(jb.end_at, to_timestamp($3)) > s.a"
	" WHERE jb.start_at < to_timestamp($3)"
	")";

static const char *fleet_expr(const char *dim)
{
	/* the idle rows carry these three dimensions under the same names */
	if (!strcmp(dim, "cluster"))
		return "capk.cluster";
	if (!strcmp(dim, "partition"))
		return "capk.partition";
	if (!strcmp(dim, "gpu_model"))
		return "capk.gpu_model";
	return NULL;
}

/* Appends vals as the next parameter, a PostgreSQL text[] literal: every
 * element double-quoted (so commas, braces and NULL need no care), \ and "
 * escaped. The literal is NUL-terminated inside arrays and its start stored
 * in arr_off[*np], because arrays may move while it grows; *np counts it. */
static void add_text_array(struct gl_strbuf *arrays, size_t *arr_off, int *np, const char *const *vals, size_t n)
{
	arr_off[*np] = arrays->len;
	gl_strbuf_putc(arrays, '{');
	for (size_t v = 0; v < n; v++) {
		if (v)
			gl_strbuf_putc(arrays, ',');
		gl_strbuf_putc(arrays, '"');
		for (const char *p = vals[v]; *p; p++) {
			if (*p == '"' || *p == '\\')
				gl_strbuf_putc(arrays, '\\');
			gl_strbuf_putc(arrays, *p);
		}
		gl_strbuf_putc(arrays, '"');
	}
	gl_strbuf_putc(arrays, '}');
	gl_strbuf_putc(arrays, '\0');
	(*np)++;
}

/* Adds "AND expr = ANY($n::text[])" per filter clause, and the owner scope. */
static int add_filters(struct gl_strbuf *sql, const struct gl_acct_query *q, const char **params, int *np,
		       struct gl_strbuf *arrays, size_t *arr_off, int only_fleet_dims, struct gl_err *err)
{
	size_t nf = q->filter ? q->filter->n : 0;
	for (size_t i = 0; i < nf; i++) {
		const struct gl_filter_clause *fc = &q->filter->c[i];
		const char *expr = only_fleet_dims ? fleet_expr(fc->dim) : gl_acct_dim_sql(fc->dim);
		if (!expr) {
			if (only_fleet_dims)
				continue; /* owner filters do not narrow fleet idle */
			return gl_err_set(err, GL_EINVAL, "unknown dimension '%s'", fc->dim);
		}
		add_text_array(arrays, arr_off, np, (const char *const *)fc->values, fc->n_values);
		gl_strbuf_printf(sql, " AND %s = ANY($%d::text[])", expr, *np);
	}
	if (q->scope_teams && !only_fleet_dims) {
		add_text_array(arrays, arr_off, np, q->scope_teams, q->n_scope_teams);
		gl_strbuf_printf(sql, " AND k.team = ANY($%d::text[])", *np);
	}
	(void)params;
	return 0;
}

static void steps_params(const struct gl_acct_query *q, struct gl_strbuf *a, struct gl_strbuf *b, char *now,
			 size_t nn)
{
	gl_strbuf_putc(a, '{');
	gl_strbuf_putc(b, '{');
	for (size_t i = 0; i < q->n_steps; i++) {
		if (i) {
			gl_strbuf_putc(a, ',');
			gl_strbuf_putc(b, ',');
		}
		gl_strbuf_put_i64(a, q->steps[i].start_s);
		gl_strbuf_put_i64(b, q->steps[i].end_s);
	}
	gl_strbuf_putc(a, '}');
	gl_strbuf_putc(b, '}');
	snprintf(now, nn, "%lld", (long long)q->now_s);
}

static int parse_num(PGresult *r, int row, int col, gl_i128 *out)
{
	const char *v = PQgetisnull(r, row, col) ? "0" : PQgetvalue(r, row, col);
	if (*v == '-') {
		*out = 0; /* negative sums cannot occur; treat as 0 defensively */
		return 0;
	}
	return gl_i128_parse(v, out);
}

int gl_acct_chargeback(PGconn *c, const struct gl_acct_query *q, struct gl_cb *cb, struct gl_acct_meta *meta,
		       struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT, sa = GL_STRBUF_INIT, sb = GL_STRBUF_INIT, arrays = GL_STRBUF_INIT;
	const char *params[32];
	size_t arr_off[32];
	char now[24];
	int np = 3, rc;
	PGresult *r = NULL;

	memset(meta, 0, sizeof *meta);
	for (size_t i = 0; i < q->n_steps && i < cb->n_steps; i++) {
		cb->steps[i].start_s = q->steps[i].start_s;
		cb->steps[i].end_s = q->steps[i].end_s;
	}
	steps_params(q, &sa, &sb, now, sizeof now);

	/* 1. allocation, cost and exporter usage per step and key */
	gl_strbuf_puts(&sql, jobs_cte);
	gl_strbuf_puts(&sql, ", f AS (SELECT k.*");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", %s AS d%zu", gl_acct_dim_sql(q->dims[d]), d);
	gl_strbuf_puts(&sql, " FROM k WHERE true");
	if ((rc = add_filters(&sql, q, params, &np, &arrays, arr_off, 0, err)))
		goto out;
	/* every sum is a part of its own UNION ALL branch and the lines are one
	 * GROUP BY: no per-job joins and re-sorts. Lines are also split by GPU
	 * model so unpriced models are known exactly; C merges them. */
	gl_strbuf_puts(&sql,
		       "), mm AS ("
		       " SELECT m.gpu_model, CASE WHEN EXISTS (SELECT 1 FROM rates x WHERE x.gpu_model = m.gpu_model)"
		       "  THEN m.gpu_model ELSE '*' END AS rate_model FROM (SELECT DISTINCT gpu_model FROM f) m"
		       "), usage AS ("
		       " SELECT s.i, u.job_pk, u.busy_gpu_s, u.idle_gpu_s, u.observed_gpu_s"
		       " FROM steps s, LATERAL gl_job_usage(s.a, s.b) u"
		       "), parts AS ("
		       " SELECT f.i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", f.d%zu", d);
	gl_strbuf_puts(&sql,
		       ", f.gpu_model, NULL::bigint AS rate, f.gpu_milli * (date_part('epoch', f.e0) - date_part('epoch', f.s0))::bigint"
		       "  AS alloc, 0::bigint AS priced, 0::float8 AS busy, 0::float8 AS idle, 0::float8 AS obs FROM f"
		       " UNION ALL SELECT f.i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", f.d%zu", d);
	gl_strbuf_puts(&sql,
		       ", f.gpu_model, r.micros_per_gpu_hour, 0, f.gpu_milli * (date_part('epoch', least(f.e0, r.valid_to))"
		       "  - date_part('epoch', greatest(f.s0, r.valid_from)))::bigint, 0, 0, 0"
		       " FROM f JOIN mm ON mm.gpu_model IS NOT DISTINCT FROM f.gpu_model"
		       " JOIN rates r ON r.gpu_model = mm.rate_model AND r.valid_from < f.e0 AND r.valid_to > f.s0"
		       " UNION ALL SELECT f.i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", f.d%zu", d);
	gl_strbuf_puts(&sql,
		       ", f.gpu_model, NULL, 0, 0, u.busy_gpu_s, u.idle_gpu_s, u.observed_gpu_s"
		       " FROM f JOIN usage u ON u.i = f.i AND u.job_pk = f.job_pk"
		       /* sums of bigint milli-GPU-seconds per rate first: the price is
			* constant per rate row, so cost = rate x sum, in numeric once */
		       "), byrate AS (SELECT i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", d%zu", d);
	gl_strbuf_puts(&sql, ", gpu_model, rate, sum(alloc) AS alloc, sum(priced) AS priced, sum(busy) AS busy,"
			     " sum(idle) AS idle, sum(obs) AS obs FROM parts GROUP BY i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", d%zu", d);
	gl_strbuf_puts(&sql, ", gpu_model, rate) SELECT i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", d%zu", d);
	gl_strbuf_puts(&sql,
		       ", sum(alloc)::text, sum(priced)::text, coalesce(sum(priced::numeric * rate), 0)::text,"
		       " sum(busy), sum(idle), sum(obs),"
		       " CASE WHEN sum(priced) < sum(alloc) THEN coalesce(gpu_model, 'unknown') END"
		       " FROM byrate GROUP BY i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", d%zu", d);
	gl_strbuf_puts(&sql, ", gpu_model ORDER BY i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", d%zu", d);
	params[0] = sa.p;
	params[1] = sb.p;
	params[2] = now;
	for (int i = 3; i < np; i++)
		params[i] = arrays.p + arr_off[i];
	if ((rc = gl_db_query(c, sql.p, np, params, &r, err)))
		goto out;
	for (int row = 0; row < PQntuples(r); row++) {
		const char *keys[GL_CB_MAX_DIMS] = {0};
		int step = atoi(PQgetvalue(r, row, 0)) - 1;
		int col = 1 + (int)q->n_dims;
		struct gl_cb_line *l;
		if (step < 0 || (size_t)step >= cb->n_steps)
			continue;
		gl_i128 am, pm, cn;
		for (size_t d = 0; d < q->n_dims; d++)
			keys[d] = PQgetvalue(r, row, 1 + (int)d);
		/* rows come split by GPU model, ordered by key: merge a key's rows */
		l = cb->steps[step].n_lines ? &cb->steps[step].lines[cb->steps[step].n_lines - 1] : NULL;
		for (size_t d = 0; l && d < q->n_dims; d++)
			if (strcmp(l->key[d], keys[d]) != 0)
				l = NULL;
		if (!l)
			l = gl_cb_add_line(cb, (size_t)step, keys);
		if (parse_num(r, row, col, &am) || parse_num(r, row, col + 1, &pm) || parse_num(r, row, col + 2, &cn)) {
			rc = gl_err_set(err, GL_EDB, "chargeback: unexpected numeric value");
			goto out;
		}
		l->alloc_ms += am;
		l->priced_ms += pm;
		l->cost_num += cn;
		l->busy_s += atof(PQgetvalue(r, row, col + 3));
		l->idle_s += atof(PQgetvalue(r, row, col + 4));
		l->observed_s += atof(PQgetvalue(r, row, col + 5));
		if (!PQgetisnull(r, row, col + 6)) {
			/* collect distinct unpriced models for the response */
			char *list = gl_xstrdup(PQgetvalue(r, row, col + 6)), *save = NULL;
			for (char *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
				char needle[80];
				snprintf(needle, sizeof needle, ",%s,", m);
				char hay[sizeof meta->unpriced_models + 2];
				snprintf(hay, sizeof hay, ",%s,", meta->unpriced_models);
				if (strstr(hay, needle))
					continue;
				if (strlen(meta->unpriced_models) + strlen(m) + 2 < sizeof meta->unpriced_models) {
					if (meta->unpriced_models[0])
						strcat(meta->unpriced_models, ",");
					strcat(meta->unpriced_models, m);
				}
			}
			free(list);
		}
	}
	PQclear(r);
	r = NULL;

	/* 2. unallocated idle capacity per step: capacity minus allocation minus
	 * unavailable, per cluster/partition/model (fleet dimensions only) */
	if ((rc = gl_db_query(c, "SELECT to_regprocedure('gl_capacity(timestamptz,timestamptz)') IS NOT NULL", 0,
			      NULL, &r, err)))
		goto out;
	meta->capacity_source = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	r = NULL;
	if (meta->capacity_source) {
		gl_strbuf_reset(&sql);
		gl_strbuf_reset(&arrays);
		np = 3;
		gl_strbuf_puts(&sql, alloc_cte);
		gl_strbuf_puts(&sql,
			       ", cap AS ("
			       " SELECT s.i, cp.cluster_id, coalesce(cp.partition, '') AS partition, lower(cp.gpu_model) AS gpu_model,"
			       "  sum(cp.reported_gpu_seconds) AS reported,"
			       "  sum(cp.down_gpu_seconds + cp.planned_down_gpu_seconds + cp.reserved_gpu_seconds) AS unavail, s.a"
			       " FROM steps s, LATERAL gl_capacity(s.a, s.b) cp GROUP BY 1, 2, 3, 4, s.a"
			       "), capk AS (SELECT cap.*, c.name AS cluster FROM cap JOIN clusters c USING (cluster_id)"
			       " ), alloc AS ("
			       " SELECT k.i, k.cluster_id, coalesce(k.partition, '') AS partition, coalesce(k.gpu_model, 'unknown') AS gpu_model,"
			       "  sum(k.gpu_milli::numeric * extract(epoch FROM k.e0 - k.s0)) AS ms FROM k GROUP BY 1, 2, 3, 4"
			       "), idle AS ("
			       " SELECT capk.i, capk.cluster, capk.partition, capk.gpu_model, capk.a,"
			       "  capk.reported * 1000 - capk.unavail * 1000 - coalesce(alloc.ms, 0) AS idle_ms"
			       " FROM capk LEFT JOIN alloc ON alloc.i = capk.i AND alloc.cluster_id = capk.cluster_id"
			       "  AND alloc.partition = capk.partition AND alloc.gpu_model = capk.gpu_model"
			       " WHERE true");
		/* the fleet filters (cluster, partition, gpu_model) narrow idle too */
		if ((rc = add_filters(&sql, q, params, &np, &arrays, arr_off, 1, err)))
			goto out;
		/* idle priced at the rate in force at the step's start; dedicated
		 * hardware (idle_owners, exact partition before whole cluster)
		 * names the team that pays for it under shareIdle=owner */
		gl_strbuf_puts(&sql,
			       ") SELECT idle.i, round(sum(greatest(idle.idle_ms, 0)))::text,"
			       " round(sum(greatest(-idle.idle_ms, 0)))::text,"
			       " round(coalesce(sum(greatest(idle.idle_ms, 0) * rt.micros_per_gpu_hour), 0))::text,"
			       " io.team"
			       " FROM idle LEFT JOIN LATERAL (SELECT r.micros_per_gpu_hour FROM rates r"
			       "  WHERE r.valid_from <= idle.a AND idle.a < r.valid_to"
			       "  AND r.gpu_model = CASE WHEN EXISTS (SELECT 1 FROM rates x WHERE x.gpu_model = idle.gpu_model)"
			       "   THEN idle.gpu_model ELSE '*' END LIMIT 1) rt ON true"
			       " LEFT JOIN LATERAL (SELECT o.team FROM idle_owners o WHERE o.cluster = idle.cluster"
			       "  AND (o.partition = idle.partition OR o.partition = '') ORDER BY o.partition DESC LIMIT 1) io ON true"
			       " GROUP BY idle.i, io.team");
		for (int i = 3; i < np; i++)
			params[i] = arrays.p + arr_off[i];
		if ((rc = gl_db_query(c, sql.p, np, params, &r, err)))
			goto out;
		for (int row = 0; row < PQntuples(r); row++) {
			int step = atoi(PQgetvalue(r, row, 0)) - 1;
			struct gl_cb_step *s;
			gl_i128 ms, over, num;
			if (step < 0 || (size_t)step >= cb->n_steps)
				continue;
			s = &cb->steps[step];
			s->capacity_known = 1;
			if (parse_num(r, row, 1, &ms) || parse_num(r, row, 2, &over) || parse_num(r, row, 3, &num)) {
				rc = gl_err_set(err, GL_EDB, "chargeback: unexpected numeric value");
				goto out;
			}
			s->idle_ms += ms;
			s->overalloc_ms += over;
			s->idle_num += num;
			if (cb->share == GL_SHARE_OWNER && !PQgetisnull(r, row, 4) && q->n_dims == 1 &&
			    !strcmp(q->dims[0], "team")) {
				const char *team = PQgetvalue(r, row, 4);
				struct gl_cb_line *l = NULL;
				for (size_t i = 0; i < s->n_lines; i++)
					if (!strcmp(s->lines[i].key[0], team))
						l = &s->lines[i];
				if (!l)
					l = gl_cb_add_line(cb, (size_t)step, (const char *[]){team});
				l->idle_owner_ms += ms;
				l->idle_owner_num += num;
			}
		}
		/* a step with no capacity rows while others have some had no GPUs
		 * (before the cluster existed): zero, not unknown */
		if (PQntuples(r) > 0)
			for (size_t i = 0; i < cb->n_steps; i++)
				cb->steps[i].capacity_known = 1;
	}
out:
	PQclear(r);
	gl_strbuf_fini(&sql);
	gl_strbuf_fini(&sa);
	gl_strbuf_fini(&sb);
	gl_strbuf_fini(&arrays);
	return rc;
}
