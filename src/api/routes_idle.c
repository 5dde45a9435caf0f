/* /v1/idle: allocated-but-idle GPU time per owner and the worst jobs (from
 * exporter rollups, gl_job_usage), unallocated idle capacity per cluster,
 * partition and model (gl_capacity minus allocation), and the share of fleet
 * time wasted. */
#include "gl/accounting.h"
#include "gl/apijson.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/db.h"
#include "gl/jsonw.h"
#include "gl/routes.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unallocated idle per cluster, partition and model over [$1, $2) up to now
 * $3 (idle that has not happened is no waste yet),
 * settled as /v1/chargeback settles it (gl_acct_idle_settle_sql): a
 * cluster's idle is its capacity less unavailable less all its allocation,
 * also allocation under a key capacity does not have. The window is cut
 * where a rate starts or ends, so idle is priced at the rate in force while
 * it was idle, as chargeback prices it. Reuses b. */
static const char *fleet_sql(struct gl_strbuf *b)
{
	gl_strbuf_reset(b);
	gl_strbuf_puts(b,
		       "WITH bounds AS (SELECT DISTINCT t FROM (SELECT to_timestamp($1) AS t"
		       "  UNION ALL SELECT least(to_timestamp($2), to_timestamp($3))"
		       "  UNION ALL SELECT valid_from FROM rates UNION ALL SELECT valid_to FROM rates) x"
		       "  WHERE t >= to_timestamp($1) AND t <= least(to_timestamp($2), to_timestamp($3))"
		       "), cuts AS (SELECT row_number() OVER (ORDER BY t) AS i, t AS a, lead(t) OVER (ORDER BY t) AS b FROM bounds"
		       "), steps AS (SELECT i, a, b FROM cuts WHERE b IS NOT NULL"
		       "), cap AS (SELECT s.i, cp.cluster_id, coalesce(cp.partition, '') AS partition,"
		       "  gl_gpu_model(cp.gpu_model) AS gpu_model, sum(cp.reported_gpu_seconds) AS reported,"
		       "  sum(cp.down_gpu_seconds + cp.planned_down_gpu_seconds + cp.reserved_gpu_seconds) AS unavail, s.a"
		       "  FROM steps s, LATERAL gl_capacity(s.a, s.b) cp GROUP BY 1, 2, 3, 4, s.a"
		       "), capk AS (SELECT cap.*, c.name AS cluster FROM cap JOIN clusters c USING (cluster_id)"
		       "), alloc AS (SELECT s.i, jb.cluster_id, coalesce(jb.partition, '') AS partition,"
		       "  coalesce(" GL_JOB_MODEL_SQL("jb") ", 'unknown') AS gpu_model,"
		       "  round(sum(" GL_JOB_HELD_SQL("jb") "::numeric * extract(epoch FROM least(coalesce(jb.end_at, to_timestamp($3)), s.b)"
		       "   - greatest(jb.start_at, s.a)))) AS us"
		       "  FROM steps s JOIN jobs jb ON jb.gpu_milli > 0 AND jb.start_at < s.b"
		       "  AND coalesce(jb.end_at, to_timestamp($3)) > s.a GROUP BY 1, 2, 3, 4"
		       ")");
	gl_strbuf_puts(b, gl_acct_idle_settle_sql());
	gl_strbuf_puts(b,
		       " SELECT s.cluster, s.partition, s.gpu_model, sum(s.reported), sum(s.unavail), round(sum(s.am) / 1000000.0),"
		       " round(sum(s.idle_us) / 1000000.0), round(sum(s.over_us) / 1000000.0),"
		       " round(sum(s.idle_us * rt.micros_per_gpu_hour) / 3600000000.0)"
		       " FROM settled s"
		       " LEFT JOIN LATERAL (SELECT r.micros_per_gpu_hour FROM rates r WHERE r.valid_from <= s.a"
		       "  AND s.a < r.valid_to AND r.gpu_model = CASE WHEN EXISTS (SELECT 1 FROM rates x"
		       "  WHERE x.gpu_model = s.gpu_model) THEN s.gpu_model ELSE '*' END LIMIT 1) rt ON true"
		       " GROUP BY 1, 2, 3 ORDER BY 7 DESC, 1, 2, 3");
	return b->p;
}

/* Jobs in the window with their exporter-observed idle time. The idle is
 * priced as the showback report prices it (docs/reports.md, top jobs): the
 * job's cost inside the window, split at rate changes as /v1/jobs and
 * chargeback split it, times idle / allocated GPU-seconds; one rate taken
 * at the window's clipped start priced a job running across a price change
 * all at the old price. idle_micros is NULL when no rate covers the job. */
static const char jobs_sql[] =
	"WITH k AS ("
	" SELECT jb.job_pk, jb.job_id, c.name AS cluster, jb.user_name, jb.account, jb.partition, jb.qos, jb.namespace,"
	"  " GL_JOB_MODEL_SQL("jb") " AS gpu_model, " GL_JOB_GPUS_SQL("jb") " AS gpu_micro, jb.state, jb.name AS job_name,"
	"  greatest(jb.start_at, to_timestamp($1)) AS s0, least(coalesce(jb.end_at, to_timestamp($3)), to_timestamp($2)) AS e0,"
	"  ow.team, ow.project, ow.cost_center, u.idle_gpu_s * sc.k AS idle_gpu_s, u.busy_gpu_s * sc.k AS busy_gpu_s,"
	"  u.observed_gpu_s * sc.k AS observed_gpu_s, u.held_idle_gpu_s * sc.k AS held_idle_gpu_s"
	" FROM jobs jb JOIN clusters c USING (cluster_id)"
	" JOIN gl_job_usage(to_timestamp($1), to_timestamp($2)) u ON u.job_pk = jb.job_pk"
	" CROSS JOIN LATERAL (SELECT " GL_USAGE_SCALE_SQL("u", GL_JOB_GPUS_SQL("jb") " * greatest(extract(epoch FROM"
	"  least(coalesce(jb.end_at, to_timestamp($3)), to_timestamp($2)) - greatest(jb.start_at, to_timestamp($1))), 0)"
	"  / 1000000.0") " AS k) sc"
	" LEFT JOIN LATERAL gl_owner(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"  jb.tags, jb.start_at) ow ON true"
	"), p AS ("
	" SELECT k.*, %s AS key,"
	"  CASE WHEN rt.cost IS NULL THEN NULL"
	"   WHEN k.gpu_micro * extract(epoch FROM k.e0 - k.s0) <= 0 THEN 0"
	"   ELSE rt.cost * k.idle_gpu_s * 1000000 / (k.gpu_micro * extract(epoch FROM k.e0 - k.s0)) END AS idle_micros"
	" FROM k LEFT JOIN LATERAL (SELECT sum(k.gpu_micro * extract(epoch FROM least(k.e0, r.valid_to)"
	"  - greatest(k.s0, r.valid_from)) * r.micros_per_gpu_hour) / 3600000000 AS cost FROM rates r"
	"  WHERE r.valid_from < k.e0 AND r.valid_to > k.s0 AND r.gpu_model = CASE WHEN EXISTS"
	"  (SELECT 1 FROM rates x WHERE x.gpu_model = k.gpu_model) THEN k.gpu_model ELSE '*' END) rt ON true"
	")";

/* The answer as it is sent, a piece at a time from the three results:
 * JSON, or one of the tables as CSV (the columns of the JSON objects in
 * order, the owner key named by its dimension; costs in currency units
 * with the currency's minor decimals; fleet NULL when capacity is
 * unknown: a header only). */
enum idle_table { IT_ALLOCATED, IT_TOP_JOBS, IT_UNALLOCATED };
struct idle_out {
	PGresult *owners, *top, *fleet;
	struct gl_acct_cover cov;
	struct gl_window win;
	const char *agg;     /* a static string or the request's, copied */
	char agg_buf[64];
	int cap_known, minor;
	double alloc_idle_total, unalloc_idle_total, reported_total;
	enum idle_table table; /* CSV: the one table */
	int part, i;           /* JSON: 0 head, 1..3 a table's rows, 4 tail; the next row */
	struct gl_jsonw w;
};

static void idle_out_fini(void *state)
{
	struct idle_out *o = state;
	PQclear(o->owners);
	PQclear(o->top);
	PQclear(o->fleet);
	gl_acct_cover_fini(&o->cov);
	free(o);
}

static int rows(const PGresult *r)
{
	return r ? PQntuples(r) : 0;
}

static void csv_allocated_row(struct gl_strbuf *out, const PGresult *owners, int i, int minor)
{
	gl_apijson_csv_col_str(out, owners, i, 0);
	for (int k = 1; k <= 3; k++)
		gl_apijson_csv_col_num(out, owners, i, k);
	gl_apijson_csv_col_money(out, owners, i, 4, minor);
	gl_apijson_csv_col_num(out, owners, i, 5);
	gl_apijson_csv_col_num(out, owners, i, 6);
	gl_csv_end(out);
}

static void csv_top_row(struct gl_strbuf *out, const PGresult *top, int i, int minor)
{
	for (int k = 0; k <= 3; k++)
		gl_apijson_csv_col_str(out, top, i, k);
	gl_apijson_csv_micro(out, atoll(PQgetvalue(top, i, 4)));
	gl_csv_field(out, PQgetisnull(top, i, 5) ? "unknown" : PQgetvalue(top, i, 5));
	gl_apijson_csv_col_str(out, top, i, 6);
	gl_apijson_csv_col_num(out, top, i, 7);
	gl_apijson_csv_col_num(out, top, i, 8);
	gl_apijson_csv_col_money(out, top, i, 9, minor);
	gl_apijson_csv_col_time(out, top, i, 10);
	gl_apijson_csv_col_time(out, top, i, 11);
	gl_apijson_csv_col_num(out, top, i, 12);
	gl_csv_end(out);
}

static void csv_fleet_row(struct gl_strbuf *out, const PGresult *fleet, int i, int minor)
{
	for (int k = 0; k <= 2; k++)
		gl_apijson_csv_col_str(out, fleet, i, k);
	for (int k = 3; k <= 7; k++)
		gl_apijson_csv_col_num(out, fleet, i, k);
	gl_apijson_csv_col_money(out, fleet, i, 8, minor);
	gl_csv_end(out);
}

/* Pieces end at a row's end (a CSV field starts a record in an empty buffer). */
static int idle_csv_next(void *state, struct gl_strbuf *out)
{
	struct idle_out *o = state;
	const PGresult *r = o->table == IT_ALLOCATED ? o->owners : o->table == IT_TOP_JOBS ? o->top : o->fleet;
	if (o->part == 0) {
		if (o->table == IT_ALLOCATED)
			gl_apijson_csv_header(out, (const char *const[]){o->agg, "idle_gpu_seconds", "busy_gpu_seconds",
									  "observed_gpu_seconds", "idle_cost", "unpriced_jobs",
									  "held_idle_gpu_seconds", NULL});
		else if (o->table == IT_TOP_JOBS)
			gl_apijson_csv_header(out, (const char *const[]){"cluster", "job_id", "owner", "user", "gpus",
									  "gpu_model", "state", "idle_gpu_seconds",
									  "busy_gpu_seconds", "idle_cost", "from", "to",
									  "held_idle_gpu_seconds", NULL});
		else
			gl_apijson_csv_header(out, (const char *const[]){"cluster", "partition", "gpu_model",
									  "reported_gpu_seconds", "unavailable_gpu_seconds",
									  "allocated_gpu_seconds", "idle_gpu_seconds",
									  "overallocated_gpu_seconds", "idle_cost", NULL});
		o->part = 1;
	}
	while (out->len < GL_RESP_CHUNK && o->i < rows(r)) {
		if (o->table == IT_ALLOCATED)
			csv_allocated_row(out, r, o->i, o->minor);
		else if (o->table == IT_TOP_JOBS)
			csv_top_row(out, r, o->i, o->minor);
		else
			csv_fleet_row(out, r, o->i, o->minor);
		o->i++;
	}
	return o->i < rows(r);
}

static void json_allocated_row(struct gl_jsonw *w, const PGresult *owners, int i)
{
	gl_jsonw_object(w, NULL);
	gl_jsonw_str(w, "key", PQgetvalue(owners, i, 0));
	gl_jsonw_num(w, "idle_gpu_seconds", atof(PQgetvalue(owners, i, 1)));
	gl_jsonw_num(w, "busy_gpu_seconds", atof(PQgetvalue(owners, i, 2)));
	gl_jsonw_num(w, "observed_gpu_seconds", atof(PQgetvalue(owners, i, 3)));
	gl_apijson_w_col_num(w, "idle_cost_micros", owners, i, 4);
	gl_jsonw_num(w, "unpriced_jobs", atof(PQgetvalue(owners, i, 5)));
	/* of the idle time, the part with memory held (idle.held_memory_mib) */
	gl_jsonw_num(w, "held_idle_gpu_seconds", atof(PQgetvalue(owners, i, 6)));
	gl_jsonw_end(w);
}

static void json_top_row(struct gl_jsonw *w, const PGresult *top, int i)
{
	gl_jsonw_object(w, NULL);
	gl_jsonw_str(w, "cluster", PQgetvalue(top, i, 0));
	gl_jsonw_str(w, "job_id", PQgetvalue(top, i, 1));
	gl_jsonw_str(w, "owner", PQgetvalue(top, i, 2));
	gl_jsonw_str(w, "user", PQgetvalue(top, i, 3));
	gl_jsonw_num(w, "gpus", atof(PQgetvalue(top, i, 4)) / (double)GL_GPU_MICRO);
	gl_jsonw_str(w, "gpu_model", PQgetisnull(top, i, 5) ? "unknown" : PQgetvalue(top, i, 5));
	gl_jsonw_str(w, "state", PQgetvalue(top, i, 6));
	gl_jsonw_num(w, "idle_gpu_seconds", atof(PQgetvalue(top, i, 7)));
	gl_jsonw_num(w, "busy_gpu_seconds", atof(PQgetvalue(top, i, 8)));
	gl_apijson_w_col_num(w, "idle_cost_micros", top, i, 9);
	gl_jsonw_time(w, "from", atoll(PQgetvalue(top, i, 10)));
	gl_jsonw_time(w, "to", atoll(PQgetvalue(top, i, 11)));
	gl_jsonw_num(w, "held_idle_gpu_seconds", atof(PQgetvalue(top, i, 12)));
	gl_jsonw_end(w);
}

static void json_fleet_row(struct gl_jsonw *w, const PGresult *fleet, int i)
{
	static const char *const nums[] = {"reported_gpu_seconds", "unavailable_gpu_seconds", "allocated_gpu_seconds",
					   "idle_gpu_seconds", "overallocated_gpu_seconds"};
	gl_jsonw_object(w, NULL);
	gl_jsonw_str(w, "cluster", PQgetvalue(fleet, i, 0));
	gl_jsonw_str(w, "partition", PQgetvalue(fleet, i, 1));
	gl_jsonw_str(w, "gpu_model", PQgetvalue(fleet, i, 2));
	for (int k = 0; k < (int)GL_ARRAY_LEN(nums); k++)
		gl_jsonw_num(w, nums[k], atof(PQgetvalue(fleet, i, 3 + k)));
	gl_apijson_w_col_num(w, "idle_cost_micros", fleet, i, 8);
	gl_jsonw_end(w);
}

static void json_tail(struct idle_out *o)
{
	struct gl_jsonw *w = &o->w;
	gl_jsonw_bool(w, "capacity_known", o->cap_known);
	gl_jsonw_num(w, "capacity_days_known", (double)o->cov.known);
	gl_jsonw_num(w, "capacity_days", (double)o->cov.days);
	gl_jsonw_array(w, "capacity_clusters_unknown");
	for (size_t i = 0; i < o->cov.n_missing; i++)
		gl_jsonw_str(w, NULL, o->cov.missing[i]);
	gl_jsonw_end(w);
	/* over the clusters with capacity data only */
	if (o->reported_total > 0)
		gl_jsonw_num(w, "wasted_fraction", (o->alloc_idle_total + o->unalloc_idle_total) / o->reported_total);
	else
		gl_jsonw_null(w, "wasted_fraction");
	gl_jsonw_end(w);
	gl_strbuf_putc(w->out, '\n');
}

static int idle_json_next(void *state, struct gl_strbuf *out)
{
	static const char *const names[] = {"allocated_idle", "top_jobs", "unallocated_idle"};
	struct idle_out *o = state;
	o->w.out = out;
	while (out->len < GL_RESP_CHUNK) {
		const PGresult *r = o->part == 1 ? o->owners : o->part == 2 ? o->top : o->fleet;
		if (o->part == 0) {
			gl_jsonw_object(&o->w, NULL);
			gl_jsonw_array(&o->w, "window");
			gl_jsonw_time(&o->w, NULL, o->win.start_s);
			gl_jsonw_time(&o->w, NULL, o->win.end_s);
			gl_jsonw_end(&o->w);
			gl_jsonw_str(&o->w, "aggregate", o->agg);
			gl_jsonw_array(&o->w, names[0]);
			o->part = 1;
		} else if (o->part == 4) {
			json_tail(o);
			return 0;
		} else if (o->i < rows(r)) {
			if (o->part == 1)
				json_allocated_row(&o->w, r, o->i);
			else if (o->part == 2)
				json_top_row(&o->w, r, o->i);
			else
				json_fleet_row(&o->w, r, o->i);
			o->i++;
		} else {
			gl_jsonw_end(&o->w);
			if (++o->part < 4)
				gl_jsonw_array(&o->w, names[o->part - 1]);
			o->i = 0;
		}
	}
	return 1;
}

/* The totals of the root (wasted_fraction) before any row is sent. */
static void idle_totals(struct idle_out *o)
{
	for (int i = 0; i < rows(o->owners); i++)
		o->alloc_idle_total += atof(PQgetvalue(o->owners, i, 1));
	for (int i = 0; i < rows(o->fleet); i++) {
		o->unalloc_idle_total += atof(PQgetvalue(o->fleet, i, 6));
		o->reported_total += atof(PQgetvalue(o->fleet, i, 3));
	}
}

int gl_route_idle(struct gl_req *req, struct gl_resp *resp)
{
	const char *agg = gl_req_param(req, "aggregate"), *lim = gl_req_param(req, "limit"),
		   *table = gl_req_param(req, "table");
	struct gl_window win;
	struct gl_err err = {0};
	struct gl_strbuf sql = GL_STRBUF_INIT;
	char a[24], b[24], now[24], limit_s[16];
	const char *expr;
	long limit = 20;
	PGconn *c;
	PGresult *owners = NULL, *top = NULL, *fleet = NULL, *capq = NULL;
	int rc = 0, have_cap, cap_known, csv;
	struct gl_acct_cover cov = {0};
	struct idle_out *o;

	if ((rc = gl_apijson_window(req, resp, "7d", &win)) || (rc = gl_apijson_format(req, resp, &csv)))
		return rc;
	/* three tables do not fit one CSV: table= picks one (JSON has them all) */
	if (table && strcmp(table, "allocated") && strcmp(table, "top_jobs") && strcmp(table, "unallocated"))
		return gl_resp_error(resp, GL_EINVAL, "table", "table: '%s' is not allocated, top_jobs or unallocated",
				     table);
	if (!(expr = gl_acct_dim_sql(agg ? agg : "team")) || (agg && strchr(agg, ',')))
		return gl_resp_error(resp, GL_EINVAL, "aggregate", "aggregate: one dimension (team, project, cost_center, "
								   "user, account, cluster, partition, qos, namespace, gpu_model)");
	if (lim) {
		long long x = 0;
		if (gl_apijson_digits(lim, &x) || x < 1 || x > 1000)
			return gl_resp_error(resp, GL_EINVAL, "limit", "limit: must be between 1 and 1000");
		limit = (long)x;
	}
	snprintf(a, sizeof a, "%lld", (long long)win.start_s);
	snprintf(b, sizeof b, "%lld", (long long)win.end_s);
	snprintf(now, sizeof now, "%lld", (long long)req->now_s);
	snprintf(limit_s, sizeof limit_s, "%ld", limit);
	if ((rc = gl_req_db(req, &c, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);

	gl_strbuf_printf(&sql, jobs_sql, expr);
	gl_strbuf_puts(&sql, " SELECT p.key, round(sum(p.idle_gpu_s)), round(sum(p.busy_gpu_s)), round(sum(p.observed_gpu_s)),"
			     " round(sum(p.idle_micros)), count(*) FILTER (WHERE p.idle_micros IS NULL),"
			     " round(sum(p.held_idle_gpu_s))"
			     " FROM p GROUP BY p.key ORDER BY 2 DESC, 1");
	if ((rc = gl_db_query(c, sql.p, 3, (const char *[]){a, b, now}, &owners, &err)))
		goto fail;
	gl_strbuf_reset(&sql);
	gl_strbuf_printf(&sql, jobs_sql, expr);
	gl_strbuf_puts(&sql, " SELECT p.cluster, p.job_id, p.key, p.user_name, p.gpu_micro, p.gpu_model, p.state,"
			     " round(p.idle_gpu_s), round(p.busy_gpu_s), round(p.idle_micros),"
			     " extract(epoch FROM p.s0)::bigint, extract(epoch FROM p.e0)::bigint, round(p.held_idle_gpu_s)"
			     " FROM p WHERE p.idle_gpu_s > 0 ORDER BY p.idle_gpu_s DESC, p.job_pk LIMIT $4");
	if ((rc = gl_db_query(c, sql.p, 4, (const char *[]){a, b, now, limit_s}, &top, &err)))
		goto fail;
	if ((rc = gl_db_query(c, "SELECT to_regprocedure('gl_capacity(timestamptz,timestamptz)') IS NOT NULL", 0, NULL,
			      &capq, &err)))
		goto fail;
	have_cap = PQgetvalue(capq, 0, 0)[0] == 't';
	if (have_cap &&
	    (rc = gl_db_query(c,
			      fleet_sql(&sql),
			      3, (const char *[]){a, b, now}, &fleet, &err)))
		goto fail;
	if ((rc = gl_acct_capacity_cover(c, win.start_s, win.end_s, req->now_s, NULL, &cov, &err)))
		goto fail;
	/* known for the window only when its capacity data covers every day
	 * so far and every cluster that ran GPU jobs; else unallocated_idle
	 * is the known days' and clusters' alone */
	cap_known = have_cap && fleet && PQntuples(fleet) > 0 && cov.known == cov.days && cov.n_missing == 0;
	o = gl_xcalloc(1, sizeof *o);
	*o = (struct idle_out){owners, top, fleet, cov, win, NULL, "", cap_known,
			       gl_money_minor(req->cfg->currency), 0, 0, 0, IT_ALLOCATED, 0, 0, {0}};
	owners = top = fleet = NULL;
	memset(&cov, 0, sizeof cov);
	snprintf(o->agg_buf, sizeof o->agg_buf, "%s", agg ? agg : "team");
	o->agg = o->agg_buf;
	if (csv) {
		const char *tb = table ? table : "allocated";
		o->table = !strcmp(tb, "allocated") ? IT_ALLOCATED : !strcmp(tb, "top_jobs") ? IT_TOP_JOBS : IT_UNALLOCATED;
		gl_apijson_set_csv(resp, o->table == IT_ALLOCATED  ? GL_APIJSON_ATTACHMENT("idle_allocated.csv")
					 : o->table == IT_TOP_JOBS ? GL_APIJSON_ATTACHMENT("idle_top_jobs.csv")
								   : GL_APIJSON_ATTACHMENT("idle_unallocated.csv"));
		/* the JSON root's coverage, which no row holds: an unallocated
		 * table without rows, or with the known days' idle only */
		gl_apijson_add_header(resp, "X-Capacity-Known", cap_known ? "true" : "false");
		gl_apijson_add_header_num(resp, "X-Capacity-Days-Known", (long long)o->cov.known);
		gl_apijson_add_header_num(resp, "X-Capacity-Days", (long long)o->cov.days);
		gl_apijson_add_header_num(resp, "X-Capacity-Clusters-Unknown", (long long)o->cov.n_missing);
		gl_resp_set_stream(resp, idle_csv_next, idle_out_fini, o);
		goto out;
	}
	idle_totals(o);
	resp->content_type = "application/json";
	gl_jsonw_init(&o->w, NULL);
	gl_resp_set_stream(resp, idle_json_next, idle_out_fini, o);
	goto out;
fail:
	rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
out:
	gl_acct_cover_fini(&cov);
	PQclear(owners);
	PQclear(top);
	PQclear(fleet);
	PQclear(capq);
	gl_strbuf_fini(&sql);
	return rc;
}
