/* Gathering the monthly showback report (see include/gl/showback.h). */
#include "gl/showback.h"
#include "gl/accounting.h"
#include "gl/budget.h"
#include "gl/cost.h"
#include "gl/db.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gl_showback_aggregates[] = {"team", "project", "cost_center", "account", "user", NULL};

int gl_showback_aggregate_ok(const char *dim)
{
	for (size_t i = 0; gl_showback_aggregates[i]; i++)
		if (!strcmp(gl_showback_aggregates[i], dim))
			return 1;
	return 0;
}

int gl_showback_currency_minor(const char *cur)
{
	static const char *const zero[] = {"JPY", "KRW", "ISK", "CLP", "VND", "XAF", "XOF", "HUF"};
	static const char *const three[] = {"BHD", "KWD", "OMR", "JOD", "TND", "IQD", "LYD"};
	for (size_t i = 0; cur && i < GL_ARRAY_LEN(zero); i++)
		if (!strcmp(cur, zero[i]))
			return 0;
	for (size_t i = 0; cur && i < GL_ARRAY_LEN(three); i++)
		if (!strcmp(cur, three[i]))
			return 3;
	return 2;
}

int gl_showback_month_parse(const char *s, int64_t *start_s, struct gl_err *err)
{
	unsigned y, m;
	int n = 0;
	if (!s || strlen(s) != 7 || sscanf(s, "%4u-%2u%n", &y, &m, &n) != 2 || n != 7 || s[4] != '-' || m < 1 ||
	    m > 12 || y < 1970)
		return gl_err_set(err, GL_EINVAL, "month: '%s' is not YYYY-MM", s ? s : "");
	*start_s = gl_time_days_from_civil((int64_t)y, m, 1) * 86400;
	return 0;
}

static void month_name(int64_t start_s, char *buf, size_t n)
{
	int64_t y;
	unsigned m, d;
	gl_time_civil_from_days(start_s / 86400, &y, &m, &d);
	snprintf(buf, n, "%04lld-%02u", (long long)y, m);
}

static char *dupv(PGresult *r, int row, int col)
{
	return gl_xstrdup(PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col));
}

static int64_t i64v(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? 0 : atoll(PQgetvalue(r, row, col));
}

/* One chargeback over the steps, aggregated by dims: exactly what
 * /v1/chargeback computes for the same window, step and shareIdle. */
static int run_cb(PGconn *c, const struct gl_window *steps, size_t n_steps, const char *const *dims, size_t n_dims,
		  enum gl_share_idle share, int lines_only, int64_t now_s, struct gl_cb *cb, struct gl_acct_meta *meta,
		  struct gl_err *err)
{
	struct gl_acct_query q;
	gl_cb_init(cb, n_dims, share, n_steps);
	gl_acct_query_init(&q, steps, n_steps, dims, n_dims, now_s);
	q.lines_only = lines_only;
	return gl_acct_chargeback_finished(c, &q, cb, meta, err);
}

static struct gl_sb_owner *find_owner(struct gl_showback *sb, const char *name)
{
	for (size_t i = 0; i < sb->n_owners; i++)
		if (!strcmp(sb->owners[i].name, name))
			return &sb->owners[i];
	return NULL;
}

static struct gl_sb_owner *get_owner(struct gl_showback *sb, const char *name)
{
	struct gl_sb_owner *o = find_owner(sb, name);
	if (o)
		return o;
	sb->owners = gl_xrealloc(sb->owners, (sb->n_owners + 1) * sizeof *sb->owners);
	o = &sb->owners[sb->n_owners++];
	memset(o, 0, sizeof *o);
	o->name = gl_xstrdup(name);
	o->daily_s = gl_xcalloc(sb->n_days ? sb->n_days : 1, sizeof *o->daily_s);
	return o;
}

static void add_partial(struct gl_showback *sb, const char *fmt, ...) GL_PRINTF(2, 3);
static void add_partial(struct gl_showback *sb, const char *fmt, ...)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	gl_strbuf_vprintf(&b, fmt, ap);
	va_end(ap);
	sb->partial = gl_xrealloc(sb->partial, (sb->n_partial + 1) * sizeof *sb->partial);
	sb->partial[sb->n_partial++] = gl_strbuf_steal(&b);
}

/* a x b / c rounded half up, in 128 bits (all operands >= 0, c > 0). */
static int64_t muldiv(int64_t a, int64_t b, int64_t c)
{
	if (c <= 0)
		return 0;
	return (int64_t)(((gl_i128)a * b * 2 + c) / ((gl_i128)c * 2));
}

/* Per-job part of the report, over the jobs CTE of the accounting store
 * ($1..$4 as there, one step = the month): the top jobs by cost and by idle
 * cost, failed-job waste and energy per owner, and queue waits. The row
 * kind is the first column. */
/* A second connection to the same database, for the per-job query to run
 * beside the chargebacks; NULL when it cannot be had (then it runs after
 * them on c). */
static PGconn *side_open(PGconn *c)
{
	PQconninfoOption *opts = PQconninfo(c);
	struct gl_strbuf ci = GL_STRBUF_INIT;
	PGconn *s;
	if (!opts)
		return NULL;
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val || !*o->val)
			continue;
		gl_strbuf_printf(&ci, "%s='", o->keyword);
		for (const char *v = o->val; *v; v++) {
			if (*v == '\'' || *v == '\\')
				gl_strbuf_putc(&ci, '\\');
			gl_strbuf_putc(&ci, *v);
		}
		gl_strbuf_puts(&ci, "' ");
	}
	PQconninfoFree(opts);
	s = PQconnectdb(gl_strbuf_cstr(&ci));
	gl_strbuf_fini(&ci);
	if (PQstatus(s) != CONNECTION_OK) {
		PQfinish(s);
		return NULL;
	}
	return s;
}

static void jobs_sql(struct gl_strbuf *sql, const struct gl_showback *sb);
static int jobs_parse(PGresult *r, struct gl_showback *sb);

/* The per-job query in a transaction whose planner settings suit it:
 * the CTEs' row estimates are far off (the owner join), a nested loop
 * over them would rescan per job; hash joins are right at any size. */
static const char jobs_txn[] = "BEGIN; SET LOCAL enable_nestloop = off; SET LOCAL enable_mergejoin = off";

/* Starts the per-job query on side (asynchronously); 0 when sent. */
static int jobs_send(PGconn *side, const struct gl_showback *sb, int64_t now_s)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
	char now[24], a1[24], b1[24];
	PGresult *r;
	int ok;
	snprintf(a1, sizeof a1, "%lld", (long long)sb->start_s);
	snprintf(b1, sizeof b1, "%lld", (long long)sb->end_s);
	snprintf(now, sizeof now, "%lld", (long long)now_s);
	r = PQexec(side, jobs_txn);
	ok = PQresultStatus(r) == PGRES_COMMAND_OK;
	PQclear(r);
	jobs_sql(&sql, sb);
	ok = ok && PQsendQueryParams(side, sql.p, 3, NULL, (const char *[]){now, a1, b1}, NULL, NULL, 0);
	gl_strbuf_fini(&sql);
	return ok ? 0 : -1;
}

/* Waits for the per-job query sent on side and folds it into sb. */
static int jobs_recv(PGconn *side, struct gl_showback *sb, struct gl_err *err)
{
	PGresult *x, *res = NULL;
	int rc = 0;
	while ((x = PQgetResult(side))) {
		if (!res && PQresultStatus(x) == PGRES_TUPLES_OK) {
			res = x;
			continue;
		}
		if (!rc && PQresultStatus(x) != PGRES_TUPLES_OK)
			rc = gl_err_set(err, GL_EDB, "showback: per-job query: %s", PQresultErrorMessage(x));
		PQclear(x);
	}
	if (!res && !rc)
		rc = gl_err_set(err, GL_EDB, "showback: per-job query: no result: %s", PQerrorMessage(side));
	if (!rc)
		rc = jobs_parse(res, sb);
	PQclear(res);
	PQclear(PQexec(side, rc ? "ROLLBACK" : "COMMIT"));
	return rc;
}

/* The per-job part on c itself, when no side connection could be had. */
static int gather_jobs(PGconn *c, struct gl_showback *sb, int64_t now_s, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
	char now[24], a1[24], b1[24];
	PGresult *r = NULL;
	int rc, in_txn = 0;

	snprintf(a1, sizeof a1, "%lld", (long long)sb->start_s);
	snprintf(b1, sizeof b1, "%lld", (long long)sb->end_s);
	snprintf(now, sizeof now, "%lld", (long long)now_s);
	jobs_sql(&sql, sb);
	if ((rc = gl_db_exec(c, jobs_txn, err)))
		goto out;
	in_txn = 1;
	if ((rc = gl_db_query(c, sql.p, 3, (const char *[]){now, a1, b1}, &r, err)) ||
	    (rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	in_txn = 0;
	rc = jobs_parse(r, sb);
out:
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	PQclear(r);
	gl_strbuf_fini(&sql);
	return rc;
}

static void jobs_sql(struct gl_strbuf *sql, const struct gl_showback *sb)
{
	/* The jobs of the month clipped to it, as chargeback's jobs CTE takes
	 * them, with the owner at the job's start resolved the same way (the
	 * first gl_owner rule in force in the rule-validity segment of the
	 * start) but once per distinct owner-relevant key and hash-joined back:
	 * the shared CTE sorts a million wide rows, which a month report cannot
	 * afford. */
	gl_strbuf_printf(sql,
			 "WITH ba AS (SELECT array_agg(t ORDER BY t) AS a FROM (SELECT DISTINCT t FROM (SELECT valid_from AS t"
			 "  FROM owners UNION ALL SELECT valid_to FROM owners UNION ALL SELECT '-infinity'::timestamptz) x) y)"
			 ", mm AS (SELECT m.gpu_model, CASE WHEN EXISTS (SELECT 1 FROM rates x WHERE x.gpu_model = m.gpu_model)"
			 "  THEN m.gpu_model ELSE '*' END AS rate_model"
			 "  FROM (SELECT DISTINCT lower(gpu_type) AS gpu_model FROM jobs WHERE gpu_milli > 0"
			 "  AND start_at < to_timestamp($3::bigint) AND (end_at > to_timestamp($2::bigint) OR end_at IS NULL)) m)"
			 /* the segment of the start: the last bound at or before it (the
			  * bounds are sorted; width_bucket finds it without a join) */
			 ", j0 AS MATERIALIZED (SELECT jb.job_pk, jb.job_id, jb.state, jb.partition, c.name AS cluster,"
			 "  jb.account, jb.user_name, jb.qos, jb.wckey, jb.namespace, jb.tags -> 'labels' AS labels,"
			 "  jb.start_at AS job_start, coalesce(jb.eligible_at, jb.submit_at) AS job_queued, jb.gpu_milli,"
			 "  lower(jb.gpu_type) AS gpu_model,"
			 "  greatest(jb.start_at, to_timestamp($2::bigint)) AS s0,"
			 "  least(coalesce(jb.end_at, to_timestamp($1::bigint)), to_timestamp($3::bigint)) AS e0,"
			 "  ba.a[width_bucket(jb.start_at, ba.a)] AS seg,"
			 "  coalesce(jb.account, '') || chr(1) || coalesce(jb.user_name, '') || chr(1) || coalesce(jb.partition, '') || chr(1) ||"
			 "  coalesce(jb.qos, '') || chr(1) || coalesce(jb.wckey, '') || chr(1) || coalesce(jb.namespace, '') || chr(1) ||"
			 "  coalesce((jb.tags -> 'labels')::text, '') AS okey"
			 "  FROM jobs jb JOIN clusters c ON c.cluster_id = jb.cluster_id CROSS JOIN ba"
			 "  WHERE jb.gpu_milli > 0 AND jb.start_at < to_timestamp($3::bigint) AND jb.start_at < to_timestamp($1::bigint)"
			 "  AND (jb.end_at > to_timestamp($2::bigint) OR (jb.end_at IS NULL AND to_timestamp($1::bigint) > to_timestamp($2::bigint))))"
			 ", keys AS (SELECT cluster, okey, seg, min(account) AS account, min(user_name) AS user_name,"
			 "  min(partition) AS partition, min(qos) AS qos, min(wckey) AS wckey, min(namespace) AS namespace,"
			 "  (array_agg(labels))[1] AS labels FROM j0 GROUP BY cluster, okey, seg)"
			 ", own AS MATERIALIZED (SELECT keys.cluster, keys.okey, keys.seg, o.team, o.project, o.cost_center FROM keys"
			 "  LEFT JOIN LATERAL gl_owner(keys.cluster, keys.account, keys.user_name, keys.partition, keys.qos, keys.wckey,"
			 "  keys.namespace, jsonb_build_object('labels', keys.labels), keys.seg) o ON true)"
			 ", k AS (SELECT j0.*, own.team, own.project, own.cost_center, mm.rate_model FROM j0"
			 "  JOIN own ON own.cluster = j0.cluster AND own.okey = j0.okey AND own.seg = j0.seg"
			 "  LEFT JOIN mm ON mm.gpu_model = j0.gpu_model)"
			 /* cost per job: the same rate lookup as chargeback (the model's
			  * own rate, else '*'), the job cut at rate changes */
			 ", f AS MATERIALIZED (SELECT k.*, %s AS owner,"
			 "  k.gpu_milli * (date_part('epoch', k.e0) - date_part('epoch', k.s0))::bigint AS ams,"
			 "  (SELECT sum(r.micros_per_gpu_hour::numeric * k.gpu_milli * (date_part('epoch', least(k.e0, r.valid_to))"
			 "   - date_part('epoch', greatest(k.s0, r.valid_from)))::bigint) FROM rates r"
			 "   WHERE r.gpu_model = coalesce(k.rate_model, '*') AND r.valid_from < k.e0 AND r.valid_to > k.s0) AS num FROM k)"
			 ", usage AS MATERIALIZED (SELECT u.job_pk, u.idle_gpu_s, u.observed_gpu_s"
			 "  FROM gl_job_usage(to_timestamp($2::bigint), to_timestamp($3::bigint)) u)"
			 ", jc AS MATERIALIZED (SELECT f.job_pk, f.job_id, f.state, f.cluster, f.owner, f.gpu_milli, f.ams,"
			 "  round(coalesce(f.num, 0) / %lld) AS cost, u.idle_gpu_s, u.observed_gpu_s"
			 "  FROM f LEFT JOIN usage u USING (job_pk))"
			 " SELECT 'c', jc.job_id, jc.cluster, jc.owner, jc.state, jc.gpu_milli, round(jc.ams / 1000.0)::bigint,"
			 "  jc.cost::bigint, jc.observed_gpu_s IS NOT NULL AND jc.observed_gpu_s > 0,"
			 "  round(coalesce(jc.idle_gpu_s, 0))::bigint,"
			 "  CASE WHEN jc.ams > 0 THEN round(jc.cost * coalesce(jc.idle_gpu_s, 0)::numeric * 1000 / jc.ams)::bigint ELSE 0 END"
			 " FROM (SELECT * FROM jc ORDER BY cost DESC, job_pk LIMIT %d) jc"
			 " UNION ALL SELECT 'i', jc.job_id, jc.cluster, jc.owner, jc.state, jc.gpu_milli, round(jc.ams / 1000.0)::bigint,"
			 "  jc.cost::bigint, true, round(jc.idle_gpu_s)::bigint, round(jc.ic)::bigint"
			 " FROM (SELECT *, CASE WHEN ams > 0 THEN cost * idle_gpu_s::numeric * 1000 / ams ELSE 0 END AS ic FROM jc"
			 "  WHERE observed_gpu_s > 0 ORDER BY ic DESC, job_pk LIMIT %d) jc"
			 " UNION ALL SELECT 'f', NULL, NULL, jc.owner, NULL, NULL, round(sum(jc.ams) / 1000.0)::bigint, sum(jc.cost)::bigint,"
			 "  NULL, NULL, NULL FROM jc"
			 "  WHERE upper(split_part(jc.state, ' ', 1)) IN ('FAILED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'BOOT_FAIL')"
			 "  GROUP BY jc.owner"
			 " UNION ALL SELECT 'e', NULL, NULL, f.owner, NULL, NULL, NULL, sum(g.energy_mj)::bigint, NULL, NULL, NULL"
			 "  FROM f JOIN gpu_usage g ON g.job_pk = f.job_pk AND g.bucket >= to_timestamp($2::bigint)"
			 "  AND g.bucket < to_timestamp($3::bigint) AND g.energy_mj IS NOT NULL GROUP BY f.owner"
			 " UNION ALL SELECT 'w', NULL, NULL, ww.name, ww.kind, ww.n, ww.w[1]::bigint, ww.w[2]::bigint, NULL,"
			 "  ww.w[3]::bigint, NULL"
			 " FROM (SELECT CASE WHEN GROUPING(f.partition) = 0 THEN coalesce(f.partition, '') ELSE f.owner END AS name,"
			 "  CASE WHEN GROUPING(f.partition) = 0 THEN 'partition' ELSE 'owner' END AS kind, count(*) AS n,"
			 "  percentile_disc(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP (ORDER BY greatest(0, date_part('epoch', f.job_start)"
			 "   - date_part('epoch', f.job_queued))::bigint) AS w"
			 "  FROM f WHERE f.job_start >= to_timestamp($2::bigint)"
			 "  AND f.job_queued IS NOT NULL GROUP BY GROUPING SETS ((f.partition), (f.owner))) ww",
			 gl_acct_dim_sql(sb->aggregate), (long long)GL_MILLI_GPU_SECONDS_PER_GPU_HOUR, GL_SB_TOP_JOBS,
			 GL_SB_TOP_JOBS);
}

static int jobs_parse(PGresult *r, struct gl_showback *sb)
{
	for (int row = 0; row < PQntuples(r); row++) {
		char kind = PQgetvalue(r, row, 0)[0];
		if (kind == 'c' || kind == 'i') {
			struct gl_sb_job *j = kind == 'c' ? &sb->top_cost[sb->n_top_cost++] : &sb->top_idle[sb->n_top_idle++];
			j->job_id = dupv(r, row, 1);
			j->cluster = dupv(r, row, 2);
			j->owner = dupv(r, row, 3);
			j->state = dupv(r, row, 4);
			j->gpu_milli = i64v(r, row, 5);
			j->alloc_s = i64v(r, row, 6);
			j->cost_micros = i64v(r, row, 7);
			j->has_usage = PQgetvalue(r, row, 8)[0] == 't';
			j->idle_s = i64v(r, row, 9);
			j->idle_micros = i64v(r, row, 10);
		} else if (kind == 'f') {
			struct gl_sb_owner *o = find_owner(sb, PQgetvalue(r, row, 3));
			if (!o)
				continue;
			o->failed_s = i64v(r, row, 6);
			o->failed_micros = i64v(r, row, 7);
			sb->fleet.failed_s += o->failed_s;
			sb->fleet.failed_micros += o->failed_micros;
		} else if (kind == 'e') {
			struct gl_sb_owner *o = find_owner(sb, PQgetvalue(r, row, 3));
			if (!o)
				continue;
			o->has_energy = 1;
			o->energy_mj = i64v(r, row, 7);
			sb->fleet.has_energy = 1;
			sb->fleet.energy_mj += o->energy_mj;
		} else if (kind == 'w') {
			struct gl_sb_wait *w;
			sb->waits = gl_xrealloc(sb->waits, (sb->n_waits + 1) * sizeof *sb->waits);
			w = &sb->waits[sb->n_waits++];
			w->name = dupv(r, row, 3);
			w->kind = dupv(r, row, 4);
			w->jobs = i64v(r, row, 5);
			w->p50_s = i64v(r, row, 6);
			w->p90_s = i64v(r, row, 7);
			w->p99_s = i64v(r, row, 9);
		}
	}
	return 0;
}

static int cmp_wait(const void *pa, const void *pb)
{
	const struct gl_sb_wait *a = pa, *b = pb;
	int k = strcmp(a->kind, b->kind);
	return k ? -k : strcmp(a->name, b->name); /* partitions first */
}

static int cmp_owner(const void *pa, const void *pb)
{
	const struct gl_sb_owner *a = pa, *b = pb;
	if (a->total_micros != b->total_micros)
		return a->total_micros > b->total_micros ? -1 : 1;
	if (a->alloc_s != b->alloc_s)
		return a->alloc_s > b->alloc_s ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_model(const void *pa, const void *pb)
{
	const struct gl_sb_model *a = pa, *b = pb;
	int k = strcmp(a->owner, b->owner);
	return k ? k : strcmp(a->model, b->model);
}

/* Rates and owner rules in force at some time of the month, with their
 * effective dates; ingestion runs that failed or were partial. */
static int gather_reference(PGconn *c, struct gl_showback *sb, struct gl_err *err)
{
	char a[24], b[24];
	PGresult *r = NULL;
	int rc;
	snprintf(a, sizeof a, "%lld", (long long)sb->start_s);
	snprintf(b, sizeof b, "%lld", (long long)sb->end_s);
	if ((rc = gl_db_query(c,
			      "SELECT gpu_model, mig_profile, currency, micros_per_gpu_hour,"
			      " CASE WHEN valid_from = '-infinity' THEN '' ELSE to_char(valid_from AT TIME ZONE 'UTC',"
			      "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') END,"
			      " CASE WHEN valid_to = 'infinity' THEN '' ELSE to_char(valid_to AT TIME ZONE 'UTC',"
			      "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') END"
			      " FROM rates WHERE valid_from < to_timestamp($2) AND valid_to > to_timestamp($1)"
			      " ORDER BY gpu_model, mig_profile, valid_from",
			      2, (const char *[]){a, b}, &r, err)))
		goto out;
	sb->n_rates = (size_t)PQntuples(r);
	sb->rates = gl_xcalloc(sb->n_rates + 1, sizeof *sb->rates);
	for (int i = 0; i < PQntuples(r); i++) {
		struct gl_sb_rate *x = &sb->rates[i];
		x->model = dupv(r, i, 0);
		x->mig_profile = dupv(r, i, 1);
		x->currency = dupv(r, i, 2);
		x->micros_per_gpu_hour = i64v(r, i, 3);
		x->valid_from = dupv(r, i, 4);
		x->valid_to = dupv(r, i, 5);
	}
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c,
			      "SELECT priority, coalesce(cluster, ''), match_field, match_value, team, coalesce(project, ''),"
			      " coalesce(cost_center, ''),"
			      " CASE WHEN valid_from = '-infinity' THEN '' ELSE to_char(valid_from AT TIME ZONE 'UTC',"
			      "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') END,"
			      " CASE WHEN valid_to = 'infinity' THEN '' ELSE to_char(valid_to AT TIME ZONE 'UTC',"
			      "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') END"
			      " FROM owners WHERE valid_from < to_timestamp($2) AND valid_to > to_timestamp($1)"
			      " ORDER BY priority, rule_id",
			      2, (const char *[]){a, b}, &r, err)))
		goto out;
	sb->n_rules = (size_t)PQntuples(r);
	sb->rules = gl_xcalloc(sb->n_rules + 1, sizeof *sb->rules);
	for (int i = 0; i < PQntuples(r); i++) {
		struct gl_sb_rule *x = &sb->rules[i];
		x->priority = i64v(r, i, 0);
		x->cluster = dupv(r, i, 1);
		x->match_field = dupv(r, i, 2);
		x->match_value = dupv(r, i, 3);
		x->team = dupv(r, i, 4);
		x->project = dupv(r, i, 5);
		x->cost_center = dupv(r, i, 6);
		x->valid_from = dupv(r, i, 7);
		x->valid_to = dupv(r, i, 8);
	}
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c,
			      "SELECT r.source, coalesce(c.name, ''), r.status, count(*),"
			      " to_char(min(r.started_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
			      " FROM ingest_runs r LEFT JOIN clusters c USING (cluster_id)"
			      " WHERE r.started_at >= to_timestamp($1) AND r.started_at < to_timestamp($2) AND r.status <> 'ok'"
			      " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
			      2, (const char *[]){a, b}, &r, err)))
		goto out;
	for (int i = 0; i < PQntuples(r); i++)
		add_partial(sb, "ingestion gap: %s runs of %s%s%s were %s (%s, first at %s)", PQgetvalue(r, i, 3),
			    PQgetvalue(r, i, 0), PQgetvalue(r, i, 1)[0] ? " on " : "", PQgetvalue(r, i, 1),
			    PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4));
out:
	PQclear(r);
	return rc;
}

int gl_showback_gather(PGconn *c, const struct gl_showback_req *req, struct gl_showback *sb, struct gl_err *err)
{
	struct gl_cb cb = {0}, prev = {0}, bym = {0}, daily = {0};
	struct gl_acct_meta meta, pmeta;
	struct gl_window month, pmonth, *days = NULL;
	const char *dims[2];
	PGresult *r = NULL;
	int have_before = 0; /* a GPU job started before the month: the previous month has data */
	PGconn *side = NULL;
	int rc;

	memset(sb, 0, sizeof *sb);
	if ((rc = gl_showback_month_parse(req->month, &sb->start_s, err)))
		goto out;
	if (!gl_showback_aggregate_ok(req->aggregate)) {
		rc = gl_err_set(err, GL_EINVAL, "aggregate: '%s' is not team, project, cost_center, account or user",
				req->aggregate);
		goto out;
	}
	snprintf(sb->month, sizeof sb->month, "%s", req->month);
	snprintf(sb->aggregate, sizeof sb->aggregate, "%s", req->aggregate);
	snprintf(sb->currency, sizeof sb->currency, "%s", req->currency && *req->currency ? req->currency : "USD");
	sb->minor = gl_showback_currency_minor(sb->currency);
	sb->share = req->share;
	sb->end_s = gl_month_next(sb->start_s);
	sb->closed = sb->end_s <= req->now_s;
	sb->unpriced_models = gl_xstrdup("");
	if (sb->start_s > req->now_s) {
		rc = gl_err_set(err, GL_EINVAL, "month: %s is in the future", req->month);
		goto out;
	}
	{
		/* index range scans, not a min() over every job */
		char e[24], p[24];
		snprintf(e, sizeof e, "%lld", (long long)sb->end_s);
		snprintf(p, sizeof p, "%lld", (long long)sb->start_s);
		if ((rc = gl_db_query(c,
				      "SELECT EXISTS (SELECT 1 FROM jobs WHERE gpu_milli > 0 AND start_at < to_timestamp($1)),"
				      " EXISTS (SELECT 1 FROM jobs WHERE gpu_milli > 0 AND start_at < to_timestamp($2))",
				      2, (const char *[]){e, p}, &r, err)))
			goto out;
		if (PQgetvalue(r, 0, 0)[0] != 't') {
			rc = gl_err_set(err, GL_EINVAL, "month: %s is before any data (no GPU job started by its end)",
					req->month);
			goto out;
		}
		have_before = PQgetvalue(r, 0, 1)[0] == 't';
		PQclear(r);
		r = NULL;
	}
	month.start_s = sb->start_s;
	month.end_s = sb->end_s;
	pmonth.end_s = sb->start_s;
	pmonth.start_s = gl_month_start(sb->start_s - 1);
	month_name(pmonth.start_s, sb->prev_month, sizeof sb->prev_month);
	sb->n_days = (size_t)((sb->end_s - sb->start_s) / 86400);
	sb->day_start = gl_xcalloc(sb->n_days, sizeof *sb->day_start);
	days = gl_xcalloc(sb->n_days, sizeof *days);
	for (size_t i = 0; i < sb->n_days; i++) {
		days[i].start_s = sb->day_start[i] = sb->start_s + (int64_t)i * 86400;
		days[i].end_s = days[i].start_s + 86400;
	}

	/* the per-job query reads every job of the month: it runs on a second
	 * connection while the chargebacks below run on this one */
	side = side_open(c);
	if (side && jobs_send(side, sb, req->now_s)) {
		PQfinish(side);
		side = NULL;
	}

	/* 1. the month, as /v1/chargeback computes it */
	dims[0] = req->aggregate;
	if ((rc = run_cb(c, &month, 1, dims, 1, req->share, 0, req->now_s, &cb, &meta, err)))
		goto out;
	{
		const struct gl_cb_step *st = &cb.steps[0];
		struct gl_sb_fleet *f = &sb->fleet;
		for (size_t j = 0; j < st->n_lines; j++) {
			const struct gl_cb_line *l = &st->lines[j];
			struct gl_sb_owner *o = get_owner(sb, l->key[0]);
			o->alloc_s += l->alloc_s;
			o->unpriced_s += l->unpriced_s;
			o->cost_micros += l->cost_micros;
			o->idle_share_s += l->idle_share_s;
			o->idle_share_micros += l->idle_share_micros;
			o->total_micros += l->total_micros;
			if (l->observed_s > 0) {
				o->has_usage = 1;
				o->busy_s += (int64_t)(l->busy_s + 0.5);
				o->aidle_s += (int64_t)(l->idle_s + 0.5);
			}
		}
		for (size_t i = 0; i < sb->n_owners; i++) {
			struct gl_sb_owner *o = &sb->owners[i];
			if (o->has_usage) {
				o->busy_micros = muldiv(o->cost_micros, o->busy_s, o->alloc_s);
				o->aidle_micros = muldiv(o->cost_micros, o->aidle_s, o->alloc_s);
				f->usage_known = 1;
				f->busy_s += o->busy_s;
				f->aidle_s += o->aidle_s;
			}
		}
		f->allocated_s = cb.total_alloc_s;
		f->cost_micros = cb.total_cost_micros;
		f->capacity_known = st->capacity_known;
		f->idle_total_s = st->idle_total_s;
		f->idle_total_micros = st->idle_total_micros;
		f->idle_left_s = st->idle_s;
		f->idle_left_micros = st->idle_micros;
		f->overalloc_s = st->overalloc_s;
		f->unalloc_idle_s = st->idle_total_s;
		f->total_s = cb.total_s;
		f->total_micros = cb.total_micros;
		free(sb->unpriced_models);
		sb->unpriced_models = gl_xstrdup(meta.unpriced_models);
	}
	if (meta.capacity_source && sb->fleet.capacity_known) {
		char a[24], b[24];
		snprintf(a, sizeof a, "%lld", (long long)sb->start_s);
		snprintf(b, sizeof b, "%lld", (long long)sb->end_s);
		if ((rc = gl_db_query(c,
				      "SELECT coalesce(sum(reported_gpu_seconds), 0), coalesce(sum(down_gpu_seconds +"
				      " planned_down_gpu_seconds + reserved_gpu_seconds), 0)"
				      " FROM gl_capacity(to_timestamp($1), to_timestamp($2))",
				      2, (const char *[]){a, b}, &r, err)))
			goto out;
		sb->fleet.capacity_s = i64v(r, 0, 0);
		sb->fleet.unavailable_s = i64v(r, 0, 1);
		PQclear(r);
		r = NULL;
	} else {
		sb->fleet.capacity_known = 0;
		add_partial(sb, "no capacity data for %s: unallocated idle GPU-time and its cost are unknown", sb->month);
	}
	if (meta.unpriced_models[0])
		add_partial(sb, "unpriced GPU models (no rate in force, their GPU-time has no cost): %s",
			    meta.unpriced_models);
	if (!sb->closed)
		add_partial(sb, "%s is not over yet: month to date", sb->month);

	/* 2. the previous month, same aggregate and sharing */
	if (have_before) {
		if ((rc = run_cb(c, &pmonth, 1, dims, 1, req->share, 0, req->now_s, &prev, &pmeta, err)))
			goto out;
		sb->fleet.has_prev = 1;
		sb->fleet.prev_total_micros = prev.total_micros;
		for (size_t j = 0; j < prev.steps[0].n_lines; j++) {
			const struct gl_cb_line *l = &prev.steps[0].lines[j];
			struct gl_sb_owner *o = find_owner(sb, l->key[0]);
			if (!o) /* an owner of last month only: shown with zero this month */
				o = get_owner(sb, l->key[0]);
			o->prev_total_micros += l->total_micros;
		}
		for (size_t i = 0; i < sb->n_owners; i++)
			sb->owners[i].has_prev = 1;
	}

	/* 3. GPU-time and cost by GPU model / MIG profile per owner */
	dims[1] = "gpu_model";
	if ((rc = run_cb(c, &month, 1, dims, 2, GL_SHARE_NONE, 1, req->now_s, &bym, &pmeta, err)))
		goto out;
	sb->n_models = bym.steps[0].n_lines;
	sb->models = gl_xcalloc(sb->n_models + 1, sizeof *sb->models);
	for (size_t j = 0; j < sb->n_models; j++) {
		const struct gl_cb_line *l = &bym.steps[0].lines[j];
		sb->models[j].owner = gl_xstrdup(l->key[0]);
		sb->models[j].model = gl_xstrdup(l->key[1]);
		sb->models[j].alloc_s = l->alloc_s;
		sb->models[j].cost_micros = l->cost_micros;
		sb->models[j].unpriced_s = l->unpriced_s;
	}
	if (sb->n_models)
		qsort(sb->models, sb->n_models, sizeof *sb->models, cmp_model);

	/* 4. GPU-time per owner per day, for the stacked chart */
	if ((rc = run_cb(c, days, sb->n_days, dims, 1, GL_SHARE_NONE, 1, req->now_s, &daily, &pmeta, err)))
		goto out;
	for (size_t i = 0; i < sb->n_days; i++)
		for (size_t j = 0; j < daily.steps[i].n_lines; j++) {
			const struct gl_cb_line *l = &daily.steps[i].lines[j];
			get_owner(sb, l->key[0])->daily_s[i] += l->alloc_s;
		}

	/* 5. per job: top jobs, failed-job waste, energy, queue waits */
	if ((rc = side ? jobs_recv(side, sb, err) : gather_jobs(c, sb, req->now_s, err)))
		goto out;
	if (sb->n_waits)
		qsort(sb->waits, sb->n_waits, sizeof *sb->waits, cmp_wait);
	if ((rc = gather_reference(c, sb, err)))
		goto out;
	/* budgets of this aggregate in force in the month (the first one wins) */
	for (size_t i = 0; req->cfg && i < req->cfg->n_budgets; i++) {
		const struct gl_budget_cfg *bc = &req->cfg->budgets[i];
		int64_t amount;
		struct gl_sb_owner *o;
		if (strcmp(bc->aggregate, sb->aggregate) != 0 ||
		    (amount = gl_budget_amount(req->cfg, i, sb->start_s, sb->end_s)) < 0)
			continue;
		o = get_owner(sb, bc->owner);
		if (o->has_prev == 0 && sb->fleet.has_prev)
			o->has_prev = 1;
		if (!o->has_budget) {
			o->has_budget = 1;
			o->budget_micros = amount;
		}
	}
	if (sb->n_owners)
		qsort(sb->owners, sb->n_owners, sizeof *sb->owners, cmp_owner);
out:
	if (side) {
		/* an early failure: drop whatever is still running there */
		if (PQtransactionStatus(side) == PQTRANS_ACTIVE) {
			PGcancel *cn = PQgetCancel(side);
			char eb[64];
			if (cn) {
				PQcancel(cn, eb, sizeof eb);
				PQfreeCancel(cn);
			}
		}
		PQfinish(side);
	}
	PQclear(r);
	free(days);
	gl_cb_fini(&cb);
	gl_cb_fini(&prev);
	gl_cb_fini(&bym);
	gl_cb_fini(&daily);
	if (rc)
		gl_showback_fini(sb);
	return rc;
}

static void job_fini(struct gl_sb_job *j)
{
	free(j->job_id);
	free(j->cluster);
	free(j->owner);
	free(j->state);
}

void gl_showback_fini(struct gl_showback *sb)
{
	for (size_t i = 0; i < sb->n_owners; i++) {
		free(sb->owners[i].name);
		free(sb->owners[i].daily_s);
	}
	free(sb->owners);
	for (size_t i = 0; i < sb->n_models; i++) {
		free(sb->models[i].owner);
		free(sb->models[i].model);
	}
	free(sb->models);
	for (size_t i = 0; i < sb->n_waits; i++) {
		free(sb->waits[i].kind);
		free(sb->waits[i].name);
	}
	free(sb->waits);
	for (size_t i = 0; i < sb->n_top_cost; i++)
		job_fini(&sb->top_cost[i]);
	for (size_t i = 0; i < sb->n_top_idle; i++)
		job_fini(&sb->top_idle[i]);
	for (size_t i = 0; i < sb->n_rates; i++) {
		free(sb->rates[i].model);
		free(sb->rates[i].mig_profile);
		free(sb->rates[i].currency);
		free(sb->rates[i].valid_from);
		free(sb->rates[i].valid_to);
	}
	free(sb->rates);
	for (size_t i = 0; i < sb->n_rules; i++) {
		struct gl_sb_rule *x = &sb->rules[i];
		free(x->cluster);
		free(x->match_field);
		free(x->match_value);
		free(x->team);
		free(x->project);
		free(x->cost_center);
		free(x->valid_from);
		free(x->valid_to);
	}
	free(sb->rules);
	for (size_t i = 0; i < sb->n_partial; i++)
		free(sb->partial[i]);
	free(sb->partial);
	free(sb->unpriced_models);
	free(sb->day_start);
	memset(sb, 0, sizeof *sb);
}
