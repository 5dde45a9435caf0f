/* The jobs of the training runs (see include/gl/rundb.h). */
#include "gl/rundb.h"
#include "rundb_int.h"
#include "accounting_int.h"
#include "gl/chargeback.h"
#include "gl/config.h"
#include "gl/cost.h"
#include "gl/timeutil.h"
#include "db_int.h"
#include "gl/pgrow.h"
#include "gl/strbuf.h"
#include "gl/window.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The job columns the grouping reads; lbl: the parameter of the label keys
 * (text[]): their values joined by U+001F, an absent label as the empty
 * string (a label's value is never empty and never holds a control
 * character in the API). Only pods have labels: a Slurm job's row skips
 * the subquery. */
#define JOB_COLS_SQL(lbl)                                                                                      \
	" j.job_pk, c.name AS cluster, j.job_key, j.job_id, j.name, j.user_name, j.account, j.partition,"     \
	"  j.namespace AS namespace_, j.wckey, j.tags->>'comment' AS comment, j.state,"                       \
	"  coalesce(j.array_job_id, -1) AS array_job_id, coalesce(j.het_job_id, -1) AS het_job_id,"          \
	"  coalesce(j.het_offset, -1) AS het_offset,"                                                          \
	"  extract(epoch FROM j.submit_at)::bigint AS submit_s, extract(epoch FROM j.start_at)::bigint AS start_s," \
	"  extract(epoch FROM j.end_at)::bigint AS end_s, coalesce(j.queue_wait_s, -1) AS queue_wait_s,"     \
	"  j.tags->>'owner_kind' AS owner_kind, j.tags->>'owner_name' AS owner_name,"                        \
	"  CASE WHEN j.tags ? 'labels' THEN array_to_string(ARRAY(SELECT coalesce(j.tags->'labels'->>k.k, '')" \
	"   FROM unnest(" lbl "::text[]) WITH ORDINALITY AS k(k, o) ORDER BY k.o), E'\\x1f') END AS labels"   \
	" FROM jobs j JOIN clusters c USING (cluster_id)"

#define GPU_JOB_SQL "(" GL_ACCOUNTING_JOB_GPUS_SQL("j") " > 0 OR j.req_gpu_micro > 0)"

/* $1 window start, $2 end, $3 now (epoch seconds), $5 the label keys. The
 * window test is /v1/jobs'; a job that never started counts where it was
 * submitted. */
static const char jobs_sql[] =
	"WITH w AS (SELECT to_timestamp($1::bigint) AS a, to_timestamp($2::bigint) AS b, to_timestamp($3::bigint) AS now)"
	" SELECT" JOB_COLS_SQL("$5") ", w"
	" WHERE " GPU_JOB_SQL
	"  AND ((j.start_at < w.b AND coalesce(j.end_at, w.now) > w.a)"
	"   OR (j.start_at IS NULL AND j.submit_at >= w.a AND j.submit_at < w.b))"
	"  AND ($8::text[] IS NULL OR j.account = ANY($8)) AND ($9::text[] IS NULL OR j.namespace = ANY($9))"
	"  AND ($10::text[] IS NULL OR j.user_name = ANY($10))"
	"  AND (($4::text[] IS NULL AND $6::text[] IS NULL AND $7::text[] IS NULL) OR EXISTS ("
	"   SELECT 1 FROM gl_owner(c.name, j.account, j.user_name, j.partition, j.qos, j.wckey, j.namespace, j.tags,"
	"    coalesce(j.start_at, j.submit_at)) ow"
	"   WHERE ($4::text[] IS NULL OR ow.team = ANY($4)) AND ($6::text[] IS NULL OR ow.project = ANY($6))"
	"    AND ($7::text[] IS NULL OR ow.cost_center = ANY($7))))";

/* The jobs of days being built ($1 date[]): those with a line in their
 * usage_daily_job, and those submitted on them that never started; $2 the
 * label keys. Both by index (the days' lines, jobs_newest_idx), then the
 * jobs by job_pk (an array: as a subquery the planner read every job). */
static const char build_jobs_sql[] =
	"SELECT" JOB_COLS_SQL("$2")
	" WHERE " GPU_JOB_SQL " AND j.job_pk = ANY(ARRAY(SELECT u.job_pk FROM usage_daily_job u WHERE u.day = ANY($1::date[])"
	"  UNION SELECT p.job_pk FROM jobs p,"
	"   (SELECT min(x)::timestamp AT TIME ZONE 'UTC' AS lo, (max(x) + 1)::timestamp AT TIME ZONE 'UTC' AS hi"
	"    FROM unnest($1::date[]) x) d"
	"   WHERE p.start_at IS NULL AND coalesce(p.submit_at, p.start_at, '-infinity'::timestamptz) >= d.lo"
	"    AND coalesce(p.submit_at, p.start_at, '-infinity'::timestamptz) < d.hi"
	"    AND (p.submit_at AT TIME ZONE 'UTC')::date = ANY($1::date[])))";

struct row {
	struct gl_runs_job j;
	char *labels;
};

#define S(m) {#m, GL_PGROW_STR, offsetof(struct row, j) + offsetof(struct gl_runs_job, m), GL_PGROW_NO_NULL}
#define I(m) {#m, GL_PGROW_I64, offsetof(struct row, j) + offsetof(struct gl_runs_job, m), GL_PGROW_NO_NULL}
#define T(m) {#m, GL_PGROW_TIME, offsetof(struct row, j) + offsetof(struct gl_runs_job, m), GL_PGROW_NO_NULL}
static const struct gl_pgrow_field fields[] = {
	I(job_pk), S(cluster), S(job_key), S(job_id), S(name), S(user_name), S(account), S(partition), S(namespace_), S(wckey),
	S(comment), S(state), I(array_job_id), I(het_job_id), I(het_offset), T(submit_s), T(start_s), T(end_s),
	I(queue_wait_s), S(owner_kind), S(owner_name),
	{"labels", GL_PGROW_STR, offsetof(struct row, labels), GL_PGROW_NO_NULL},
};
#undef S
#undef I
#undef T

static void text_array(struct gl_strbuf *b, const char *const *v, size_t n)
{
	gl_strbuf_putc(b, '{');
	for (size_t i = 0; i < n; i++) {
		gl_strbuf_puts(b, i ? ",\"" : "\"");
		for (const char *p = v[i]; *p; p++) {
			if (*p == '"' || *p == '\\')
				gl_strbuf_putc(b, '\\');
			gl_strbuf_putc(b, *p);
		}
		gl_strbuf_putc(b, '"');
	}
	gl_strbuf_putc(b, '}');
}

/* Splits each row's labels in place into the jobs' label arrays. */
static void split_labels(struct gl_rundb *out, struct row *rows, size_t n_keys)
{
	out->label_store = gl_xcalloc(out->n_jobs * n_keys + 1, sizeof *out->label_store);
	for (size_t i = 0; i < out->n_jobs; i++) {
		const char **l = out->label_store + i * n_keys;
		char *p = rows[i].labels;
		for (size_t k = 0; k < n_keys && p; k++) {
			char *e = strchr(p, '\x1f');
			if (e)
				*e = '\0';
			l[k] = *p ? p : NULL;
			p = e ? e + 1 : NULL;
		}
		out->jobs[i] = rows[i].j;
		out->jobs[i].labels = l;
	}
}

static int cmp_pk(const void *a, const void *b)
{
	const struct gl_runs_job *x = a, *y = b;
	return x->job_pk < y->job_pk ? -1 : x->job_pk > y->job_pk;
}

/* The ledger's line of each job that started, unrounded: one step, the
 * window. */
static int ledger(struct gl_store *st, const struct gl_rundb_query *q, int listed, struct gl_rundb *out,
		  struct gl_err *err)
{
	struct gl_window step = {q->win_start_s, q->win_end_s};
	const char *dims[1] = {"job"};
	int64_t *ids = gl_xcalloc(out->n_jobs + 1, sizeof *ids);
	struct gl_accounting_meta meta = {0};
	struct gl_accounting_query aq;
	struct gl_chargeback cb;
	size_t n = 0;
	int rc;

	for (size_t i = 0; i < out->n_jobs; i++)
		if (out->jobs[i].start_s != GL_TIME_NONE)
			ids[n++] = out->jobs[i].job_pk;
	gl_chargeback_init(&cb, 1, GL_CHARGEBACK_SHARE_NONE, 1);
	if (!n) {
		rc = 0;
		goto out;
	}
	gl_accounting_query_init(&aq, &step, 1, dims, 1, q->now_s);
	aq.lines_only = 1;
	if (q->n_scope || listed) {
		/* a scoped token's jobs only, or a built answer's live runs;
		 * else every job's line (a list of every job in the window is a
		 * 100,000-element ANY per row) */
		aq.jobs = ids;
		aq.n_jobs = n;
	}
	/* the numerators, rounded per run across the runs (gl_runs_round) */
	if ((rc = gl_accounting_chargeback(gl_db_conn(st), &aq, &cb, &meta, err)))
		goto out;
	for (size_t i = 0; i < cb.n_steps; i++)
		for (size_t k = 0; k < cb.steps[i].n_lines; k++) {
			const struct gl_chargeback_line *l = &cb.steps[i].lines[k];
			struct gl_runs_job key = {.job_pk = atoll(l->key[0])}, *j;
			if (!(j = gl_bsearch(&key, out->jobs, out->n_jobs, sizeof *out->jobs, cmp_pk)))
				continue; /* not asked for: cannot happen */
			j->alloc_us += l->alloc_us;
			j->priced_us += l->priced_us;
			j->cost_num += l->cost_num;
			j->unobs_us += l->unobs_us;
			j->busy_s += l->busy_s;
			j->idle_s += l->idle_s;
			j->observed_s += l->observed_s;
		}
	for (size_t i = 0; i < out->n_jobs; i++)
		gl_runs_round_job(&out->jobs[i]);
out:
	gl_chargeback_fini(&cb);
	gl_accounting_meta_fini(&meta);
	free(ids);
	return rc;
}

/* The jobs of sql ($keys_param the label keys) into out, sorted by job_pk. */
static int read_jobs(PGconn *c, const char *sql, int np, const char *const *params, size_t nk, struct gl_rundb *out,
		     struct gl_err *err)
{
	size_t n = 0;
	int rc = gl_pgrow_query(c, sql, np, params, fields, GL_ARRAY_LEN(fields), sizeof(struct row), &out->rows, &n,
				&out->text, err);
	if (rc)
		return rc;
	out->n_jobs = n;
	out->jobs = gl_xcalloc(n + 1, sizeof *out->jobs);
	split_labels(out, out->rows, nk);
	gl_qsort(out->jobs, out->n_jobs, sizeof *out->jobs, cmp_pk);
	return 0;
}

/* ---- the grouping rules the built runs were computed with ------------- */

struct stored_rules {
	PGresult *res;
	struct gl_runs_rule *r;
	size_t n;
};

static int64_t opt_time(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? GL_TIME_NONE : atoll(PQgetvalue(r, row, col));
}

static int rules_read(PGconn *c, struct stored_rules *sr, struct gl_err *err)
{
	int rc = gl_db_query(c,
			     "SELECT by_, cluster, CASE WHEN valid_from > '-infinity' THEN extract(epoch FROM valid_from)::bigint END,"
			     " CASE WHEN valid_to < 'infinity' THEN extract(epoch FROM valid_to)::bigint END"
			     " FROM run_rules ORDER BY ord",
			     0, NULL, &sr->res, err);
	if (rc)
		return rc;
	sr->r = gl_xcalloc((size_t)PQntuples(sr->res) + 1, sizeof *sr->r);
	for (int i = 0; i < PQntuples(sr->res); i++) {
		struct gl_runs_rule *ru = &sr->r[sr->n];
		ru->cluster = PQgetvalue(sr->res, i, 1);
		ru->from_s = opt_time(sr->res, i, 2);
		ru->to_s = opt_time(sr->res, i, 3);
		if (gl_runs_by_parse(PQgetvalue(sr->res, i, 0), &ru->by, &ru->label))
			return gl_err_set(err, GL_EINTERNAL, "run_rules: '%s' is not a grouping",
					  PQgetvalue(sr->res, i, 0));
		sr->n++;
	}
	return 0;
}

static void rules_fini(struct stored_rules *sr)
{
	PQclear(sr->res);
	free(sr->r);
}

static int same_rules(const struct gl_runs_rule *a, size_t na, const struct gl_runs_rule *b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++) {
		char x[256], y[256];
		gl_runs_by_name(&a[i], x, sizeof x);
		gl_runs_by_name(&b[i], y, sizeof y);
		if (strcmp(x, y) || strcmp(a[i].cluster ? a[i].cluster : "", b[i].cluster ? b[i].cluster : "") ||
		    a[i].from_s != b[i].from_s || a[i].to_s != b[i].to_s)
			return 0;
	}
	return 1;
}

int gl_rundb_sync_rules(struct gl_store *st, const struct gl_runs_rule *rules, size_t n, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc, in_txn = 0;

	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	in_txn = 1;
	/* one sync at a time (two daemons of a rolling restart); the trigger's
	 * every-day staleness stands aside: this marks the days it changes */
	if ((rc = gl_db_exec(c, "SELECT pg_advisory_xact_lock(26479, 1)", err)) ||
	    (rc = gl_db_exec(c, "SET LOCAL gpuledger.run_rules_sync = 'on'", err)) ||
	    (rc = gl_db_exec(c, "CREATE TEMP TABLE gl_run_rules0 ON COMMIT DROP AS SELECT * FROM run_rules", err)) ||
	    (rc = gl_db_exec(c, "DELETE FROM run_rules", err)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		char ord[16], by[256], f[24] = "", t[24] = "";
		snprintf(ord, sizeof ord, "%zu", i + 1);
		gl_runs_by_name(&rules[i], by, sizeof by);
		if (rules[i].from_s != GL_TIME_NONE)
			snprintf(f, sizeof f, "%lld", (long long)rules[i].from_s);
		if (rules[i].to_s != GL_TIME_NONE)
			snprintf(t, sizeof t, "%lld", (long long)rules[i].to_s);
		if ((rc = gl_db_query(c,
				      "INSERT INTO run_rules (ord, by_, cluster, valid_from, valid_to) VALUES ($1, $2, $3,"
				      " CASE WHEN $4 = '' THEN '-infinity' ELSE to_timestamp($4::bigint) END,"
				      " CASE WHEN $5 = '' THEN 'infinity' ELSE to_timestamp($5::bigint) END)",
				      5, (const char *[]){ord, by, rules[i].cluster ? rules[i].cluster : "", f, t}, NULL, err)))
			goto out;
	}
	/* a rule decides for the jobs submitted while it is in force, and a
	 * job runs on: a changed rule (or order) stales its start and every
	 * later day, under the build's lock as the other writers' staleness
	 * (taken only then: a start with the same rules waits for no build) */
	if ((rc = gl_db_query(c,
			      "WITH ch AS ((SELECT * FROM gl_run_rules0 EXCEPT SELECT * FROM run_rules)"
			      " UNION ALL (SELECT * FROM run_rules EXCEPT SELECT * FROM gl_run_rules0))"
			      " SELECT min(valid_from)::text FROM ch",
			      0, NULL, &r, err)))
		goto out;
	if (!PQgetisnull(r, 0, 0) &&
	    ((rc = gl_db_exec(c, "SELECT pg_advisory_xact_lock_shared(26476, 0)", err)) ||
	     (rc = gl_db_query(c,
			       "DELETE FROM usage_daily_built WHERE (day::timestamp AT TIME ZONE 'UTC') + interval '1 day'"
			       " > $1::timestamptz",
			       1, (const char *[]){PQgetvalue(r, 0, 0)}, NULL, err))))
		goto out;
	rc = gl_db_exec(c, "COMMIT", err);
	in_txn = 0;
out:
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	PQclear(r);
	return rc;
}

int gl_rundb_sync_config(struct gl_store *st, const struct gl_config *cfg, struct gl_err *err)
{
	struct gl_runs_rule *rules;
	size_t n;
	int rc;
	gl_config_run_rules(cfg, &rules, &n);
	rc = gl_rundb_sync_rules(st, rules, n, err);
	free(rules);
	return rc;
}

/* ---- built: the members and the runs' days, from the rollup ---------- */

static void copy_opt_i64(struct gl_strbuf *b, int64_t v)
{
	if (v == GL_TIME_NONE)
		gl_strbuf_puts(b, "\\N\t");
	else
		gl_strbuf_printf(b, "%lld\t", (long long)v);
}

static void copy_str(struct gl_strbuf *b, const char *s, char end)
{
	if (s)
		gl_strbuf_put_copy_text(b, s, strlen(s));
	else
		gl_strbuf_puts(b, "\\N");
	gl_strbuf_putc(b, end);
}

/* The COPY text of run_members: a row per job, its run's key. */
static void members_copy(const struct gl_rundb *db, struct gl_strbuf *b)
{
	char base[1024];
	for (size_t i = 0; i < db->runs.n; i++) {
		const struct gl_runs_run *r = &db->runs.runs[i];
		for (size_t k = 0; k < r->n_members; k++) {
			const struct gl_runs_job *j = &db->jobs[r->members[k]];
			gl_runs_base(j, base, sizeof base);
			gl_strbuf_printf(b, "%lld\t", (long long)j->job_pk);
			copy_str(b, r->key, '\t');
			copy_str(b, r->kind, '\t');
			copy_str(b, base, '\t');
			copy_opt_i64(b, j->submit_s);
			copy_opt_i64(b, j->start_s);
			copy_opt_i64(b, j->end_s);
			copy_str(b, j->state, '\t');
			gl_strbuf_printf(b, "%lld\t%s\t%s\t", (long long)(j->queue_wait_s > 0 ? j->queue_wait_s : 0),
					 j->het_offset <= 0 ? "t" : "f", gl_runs_attempt_failed(j->state) ? "t" : "f");
			copy_str(b, j->cluster, '\t');
			copy_str(b, j->user_name, '\t');
			copy_str(b, j->account, '\t');
			copy_str(b, j->partition, '\t');
			copy_str(b, j->namespace_, '\t');
			copy_str(b, j->name, '\n');
		}
	}
}

/* The run-days' columns summed into a month, from d (rows of
 * usage_daily_run, the old ones negated). */
#define MONTH_SUMS_SQL                                                                                         \
	" SELECT date_trunc('month', day)::date, run_key, sum(alloc), sum(priced), coalesce(sum(priced * rate), 0),"  \
	" coalesce(sum(alloc) FILTER (WHERE failed), 0), coalesce(sum(priced * rate) FILTER (WHERE failed), 0),"      \
	" sum(busy), sum(idle), sum(obs) FROM d GROUP BY 1, 2"

/* A member's columns but its job_pk, of the row t. */
#define MEMBER_COLS(t)                                                                                         \
	t ".run_key, " t ".kind, " t ".base_key, " t ".submit_s, " t ".start_s, " t ".end_s, " t ".state, " t        \
	".queue_s, " t ".attempt, " t ".failed, " t ".cluster, " t ".user_name, " t ".account, " t ".partition, " t \
	".namespace, " t ".name"

/* Inside the build's transaction, once the batch's members are in
 * gl_run_members_in: the runs whose members changed (old and new keys),
 * the members, the days' run-days with their months' sums moved by the
 * difference, the months' lists, and the changed runs' member columns of
 * their months (sql/099). $1 the days. */
static const char *const build_sql[] = {
	"ANALYZE gl_run_members_in",
	"CREATE TEMP TABLE gl_run_touched (k text) ON COMMIT DROP",
	/* the members that changed, and the runs they left or joined: old
	 * reads the table as it was before the upsert */
	"WITH old AS (SELECT job_pk, run_key FROM run_members"
	"  WHERE job_pk = ANY(ARRAY(SELECT job_pk FROM gl_run_members_in))),"
	" up AS (INSERT INTO run_members SELECT * FROM gl_run_members_in ON CONFLICT (job_pk) DO UPDATE SET"
	"  run_key = excluded.run_key, kind = excluded.kind, base_key = excluded.base_key,"
	"  submit_s = excluded.submit_s, start_s = excluded.start_s, end_s = excluded.end_s,"
	"  state = excluded.state, queue_s = excluded.queue_s, attempt = excluded.attempt, failed = excluded.failed,"
	"  cluster = excluded.cluster, user_name = excluded.user_name, account = excluded.account,"
	"  partition = excluded.partition, namespace = excluded.namespace, name = excluded.name"
	"  WHERE (" MEMBER_COLS("run_members") ") IS DISTINCT FROM (" MEMBER_COLS("excluded") ")"
	"  RETURNING job_pk, run_key)"
	" INSERT INTO gl_run_touched SELECT DISTINCT v.k FROM up LEFT JOIN old USING (job_pk),"
	" LATERAL (VALUES (up.run_key), (old.run_key)) v(k) WHERE v.k IS NOT NULL",
	"ANALYZE gl_run_touched",
	/* the days' per-job lines (just built) summed per run by the batch's
	 * members (every job with a line on the days), no second pass over the
	 * jobs nor over every member. Only the run-days that changed are
	 * written (a day built again mostly changes none), and each month's
	 * sums move by the changed ones' new values less their old; a day
	 * the month's list does not hold has no old run-days for it */
	"DELETE FROM usage_daily_run u WHERE u.day = ANY($1::date[]) AND NOT EXISTS (SELECT 1"
	" FROM usage_monthly_run_built mb WHERE mb.month = date_trunc('month', u.day)::date AND u.day = ANY(mb.days))",
	"WITH nw AS (SELECT u.day, m.run_key COLLATE \"C\" AS run_key, m.failed, u.gpu_model, u.rate, sum(u.alloc) AS alloc,"
	"  sum(u.priced) AS priced, sum(u.busy) AS busy, sum(u.idle) AS idle, sum(u.obs) AS obs"
	"  FROM usage_daily_job u JOIN gl_run_members_in m USING (job_pk)"
	"  WHERE u.day = ANY($1::date[]) GROUP BY 1, 2, 3, 4, 5),"
	" od AS (SELECT ctid AS id, * FROM usage_daily_run WHERE day = ANY($1::date[])),"
	" ch AS (SELECT od.id, nw.* FROM nw FULL JOIN od ON od.day = nw.day AND od.run_key = nw.run_key"
	"  AND od.failed = nw.failed AND coalesce(od.gpu_model, '') = coalesce(nw.gpu_model, '')"
	"  AND coalesce(od.rate, -1) = coalesce(nw.rate, -1)"
	"  WHERE (od.alloc, od.priced, od.busy, od.idle, od.obs) IS DISTINCT FROM"
	"  (nw.alloc, nw.priced, nw.busy, nw.idle, nw.obs)),"
	" old AS (DELETE FROM usage_daily_run WHERE ctid = ANY(ARRAY(SELECT id FROM ch WHERE id IS NOT NULL))"
	"  RETURNING *),"
	" ins AS (INSERT INTO usage_daily_run (day, run_key, failed, gpu_model, rate, alloc, priced, busy, idle, obs)"
	"  SELECT day, run_key, failed, gpu_model, rate, alloc, priced, busy, idle, obs FROM ch WHERE day IS NOT NULL"
	"  RETURNING *),"
	" d AS (SELECT day, run_key, failed, rate, alloc::numeric AS alloc, priced::numeric AS priced, busy, idle, obs"
	"  FROM ins UNION ALL SELECT day, run_key, failed, rate, -alloc::numeric, -priced::numeric, -busy, -idle, -obs"
	"  FROM old)"
	" INSERT INTO usage_monthly_run (month, run_key, alloc, priced, cost_num, f_alloc, f_cost, busy, idle, obs)"
	MONTH_SUMS_SQL
	" ON CONFLICT (month, run_key) DO UPDATE SET alloc = usage_monthly_run.alloc + excluded.alloc,"
	" priced = usage_monthly_run.priced + excluded.priced, cost_num = usage_monthly_run.cost_num + excluded.cost_num,"
	" f_alloc = usage_monthly_run.f_alloc + excluded.f_alloc, f_cost = usage_monthly_run.f_cost + excluded.f_cost,"
	" busy = usage_monthly_run.busy + excluded.busy, idle = usage_monthly_run.idle + excluded.idle,"
	" obs = usage_monthly_run.obs + excluded.obs",
	"INSERT INTO usage_daily_run_built (day) SELECT d FROM unnest($1::date[]) d ON CONFLICT DO NOTHING",
	"INSERT INTO usage_monthly_run_built (month, days)"
	" SELECT mo.month, ARRAY(SELECT DISTINCT x FROM unnest(coalesce(mb.days, '{}'::date[]) || ARRAY(SELECT d"
	"  FROM unnest($1::date[]) d WHERE date_trunc('month', d)::date = mo.month)) x ORDER BY x)"
	" FROM (SELECT DISTINCT date_trunc('month', d)::date AS month FROM unnest($1::date[]) d) mo"
	" LEFT JOIN usage_monthly_run_built mb USING (month)"
	" ON CONFLICT (month) DO UPDATE SET days = excluded.days, built_at = now()",
	/* the changed runs' members, each month they were in computed again */
	"UPDATE usage_monthly_run SET n_mem = 0, attempts = 0, jobs = 0, queue_s = 0, first_s = NULL, first_pk = NULL,"
	" last_end_s = NULL, last_pk = NULL, last_state = NULL"
	" WHERE run_key IN (SELECT k FROM gl_run_touched) AND n_mem > 0",
	"INSERT INTO usage_monthly_run (month, run_key, kind, n_mem, attempts, jobs, queue_s, first_s, first_pk,"
	" last_end_s, last_pk, last_state, f_cluster, f_user, f_account, f_partition, f_namespace, f_name)"
	" SELECT s.*, f.cluster, f.user_name, f.account, f.partition, f.namespace, f.name FROM ("
	" SELECT mo.m, m.run_key, min(m.kind), count(*), count(*) FILTER (WHERE m.attempt), count(DISTINCT m.base_key),"
	" sum(m.queue_s), min(coalesce(m.submit_s, m.start_s)),"
	" (array_agg(m.job_pk ORDER BY coalesce(m.submit_s, m.start_s) NULLS FIRST, m.job_pk))[1] AS first_pk,"
	" max(m.end_s), (array_agg(m.job_pk ORDER BY m.end_s DESC, m.job_pk DESC))[1],"
	" (array_agg(coalesce(m.state, 'UNKNOWN') ORDER BY m.end_s DESC, m.job_pk DESC))[1]"
	" FROM run_members m CROSS JOIN LATERAL (SELECT g::date AS m, extract(epoch FROM g)::bigint AS a,"
	"  extract(epoch FROM g + interval '1 month')::bigint AS b"
	"  FROM generate_series(date_trunc('month', to_timestamp(coalesce(m.start_s, m.submit_s)) AT TIME ZONE 'UTC'),"
	"   date_trunc('month', to_timestamp(m.end_s) AT TIME ZONE 'UTC'), interval '1 month') g) mo"
	" WHERE m.run_key IN (SELECT k FROM gl_run_touched) AND m.end_s IS NOT NULL"
	"  AND ((m.start_s < mo.b AND m.end_s > mo.a) OR (m.start_s IS NULL AND m.submit_s >= mo.a AND m.submit_s < mo.b))"
	" GROUP BY 1, 2) s JOIN run_members f ON f.job_pk = s.first_pk"
	" ON CONFLICT (month, run_key) DO UPDATE SET kind = excluded.kind, n_mem = excluded.n_mem,"
	" attempts = excluded.attempts, jobs = excluded.jobs, queue_s = excluded.queue_s, first_s = excluded.first_s,"
	" first_pk = excluded.first_pk, last_end_s = excluded.last_end_s, last_pk = excluded.last_pk,"
	" last_state = excluded.last_state, f_cluster = excluded.f_cluster, f_user = excluded.f_user,"
	" f_account = excluded.f_account, f_partition = excluded.f_partition, f_namespace = excluded.f_namespace,"
	" f_name = excluded.f_name",
};

static int any_touched(PGconn *c, int *touched, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = gl_db_query(c, "SELECT EXISTS (SELECT 1 FROM gl_run_touched)", 0, NULL, &r, err);
	*touched = !rc && !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	return rc;
}

int gl_rundb_build_days(PGconn *c, const char *days, struct gl_err *err)
{
	struct stored_rules sr = {0};
	struct gl_strbuf keys = GL_STRBUF_INIT, copy = GL_STRBUF_INIT;
	struct gl_rundb db = {0};
	const char **kv = NULL;
	size_t nk = 0;
	int rc, touched = 0;

	if ((rc = rules_read(c, &sr, err)))
		goto out;
	gl_runs_label_keys(sr.r, sr.n, &kv, &nk);
	text_array(&keys, kv, nk);
	if ((rc = read_jobs(c, build_jobs_sql, 2, (const char *[]){days, keys.p}, nk, &db, err)))
		goto out;
	gl_runs_group(db.jobs, db.n_jobs, sr.r, sr.n, &db.runs);
	members_copy(&db, &copy);
	if ((rc = gl_db_exec(c, "CREATE TEMP TABLE gl_run_members_in (LIKE run_members) ON COMMIT DROP", err)) ||
	    (copy.len && (rc = gl_db_copy_in(c, "COPY gl_run_members_in FROM STDIN", copy.p, copy.len, err))))
		goto out;
	for (size_t i = 0; i < GL_ARRAY_LEN(build_sql) && !rc; i++) {
		int np = strstr(build_sql[i], "$1") != NULL; /* the days */
		/* no member changed: no run's member columns to compute again */
		if (strstr(build_sql[i], "FROM gl_run_touched") && !strstr(build_sql[i], "INSERT INTO gl_run_touched") &&
		    !touched)
			continue;
		rc = gl_db_query(c, build_sql[i], np, np ? (const char *[]){days} : NULL, NULL, err);
		if (!rc && strstr(build_sql[i], "ANALYZE gl_run_touched"))
			rc = any_touched(c, &touched, err);
	}
out:
	gl_rundb_fini(&db);
	rules_fini(&sr);
	free(kv);
	gl_strbuf_fini(&keys);
	gl_strbuf_fini(&copy);
	return rc;
}

/* ---- a request ------------------------------------------------------- */

/* The window's jobs a built answer reads live ($1 $2 the window, $3 now,
 * $4 the label keys): the open ones (running, or waiting and submitted in
 * it), those with time in a part of it no built day holds ($5 $6: those
 * parts' starts and ends, epoch seconds; a job that never started, by its
 * submit time), and $7 the job_pks of other members of their runs. Each
 * arm by an index, then the jobs by job_pk (an array: a subquery's few
 * rows were estimated at thousands and read every job); the window test
 * is the jobs query's. */
static const char live_jobs_sql[] =
	"WITH w AS (SELECT to_timestamp($1::bigint) AS a, to_timestamp($2::bigint) AS b, to_timestamp($3::bigint) AS now)"
	" SELECT" JOB_COLS_SQL("$4") ", w"
	" WHERE " GPU_JOB_SQL
	"  AND ((j.start_at < w.b AND coalesce(j.end_at, w.now) > w.a)"
	"   OR (j.start_at IS NULL AND j.submit_at >= w.a AND j.submit_at < w.b))"
	"  AND j.job_pk = ANY(ARRAY(SELECT o.job_pk FROM jobs o WHERE o.end_at IS NULL AND o.start_at IS NOT NULL"
	"    AND o.start_at < to_timestamp($2::bigint)"
	"   UNION SELECT o.job_pk FROM jobs o WHERE o.start_at IS NULL AND o.end_at IS NULL"
	"    AND o.submit_at >= to_timestamp($1::bigint) AND o.submit_at < to_timestamp($2::bigint)"
	"   UNION SELECT o.job_pk FROM unnest($5::bigint[], $6::bigint[]) i(a, b) JOIN jobs o"
	"    ON o.end_at > to_timestamp(i.a) AND o.start_at < to_timestamp(i.b) AND o.gpu_milli > 0"
	"   UNION SELECT o.job_pk FROM unnest($5::bigint[], $6::bigint[]) i(a, b) JOIN jobs o ON o.start_at IS NULL"
	"    AND coalesce(o.submit_at, o.start_at, '-infinity'::timestamptz) >= to_timestamp(i.a)"
	"    AND coalesce(o.submit_at, o.start_at, '-infinity'::timestamptz) < to_timestamp(i.b)"
	"   UNION SELECT unnest($7::bigint[])))";

/* A built run's row from its members ($2 $3 the window, m the closed
 * members it holds): what gl_runs_group makes of them. */
#define MEMBER_AGG_SQL                                                                                         \
	" SELECT run_key, min(kind) AS kind, count(*) FILTER (WHERE attempt) AS attempts,"                         \
	"  count(DISTINCT base_key) AS jobs, sum(queue_s) AS queue_s, min(coalesce(submit_s, start_s)) AS first_s,"  \
	"  (array_agg(job_pk ORDER BY coalesce(submit_s, start_s) NULLS FIRST, job_pk))[1] AS first_pk,"             \
	"  max(end_s) AS last_end_s,"                                                                              \
	"  (array_agg(coalesce(state, 'UNKNOWN') ORDER BY end_s DESC NULLS LAST, job_pk DESC))[1] AS last_state"    \
	"  FROM m GROUP BY run_key"

#define MEMBER_WIN_SQL                                                                                         \
	" m.end_s IS NOT NULL AND ((m.start_s < $3 AND m.end_s > $2) OR (m.start_s IS NULL AND m.submit_s >= $2"    \
	"  AND m.submit_s < $3))"

/* The columns of a built run's row (r: its members' figures, u: its sums)
 * and its first job's. */
#define BUILT_COLS_SQL                                                                                          \
	" SELECT r.run_key, r.kind, r.attempts, r.jobs, r.queue_s, r.first_s, r.last_end_s, r.last_state,"          \
	"  coalesce(u.alloc, 0)::text, coalesce(u.priced, 0)::text, coalesce(u.cost_num, 0)::text,"                 \
	"  coalesce(u.f_alloc, 0)::text, coalesce(u.f_cost, 0)::text, coalesce(u.busy, 0), coalesce(u.idle, 0),"    \
	"  coalesce(u.obs, 0), c.name, j.user_name, j.account, j.partition, j.namespace, j.name"

/* A window of one whole month of valid sums: its rows, one a run, with
 * their first members' owner fields ($1 the runs read live, $2 the
 * month): no other table is read. */
static const char month_sql[] =
	"SELECT run_key, kind, attempts, jobs, queue_s, first_s, last_end_s, last_state, alloc::text, priced::text,"
	" cost_num::text, f_alloc::text, f_cost::text, busy, idle, obs, f_cluster, f_user, f_account, f_partition,"
	" f_namespace, f_name FROM usage_monthly_run"
	" WHERE month = $2::date AND n_mem > 0 AND run_key NOT IN (SELECT unnest($1::text[]))";

/* The built runs of a window's built days, those of $4 (the runs read
 * live) left out: their sums from the months in $5 (whole months of
 * built days whose sums are of those days, sql/099) and from the other
 * built days, $1; with month_rows (the window is those months), the rest
 * from the months' rows too (a run with closed members in more than one
 * month from its members: a job spanning two months is one attempt),
 * else from the members the window holds ($2 $3). */
static void built_sql(struct gl_strbuf *sql, int month_rows)
{
	gl_strbuf_puts(sql,
		       "WITH k AS (SELECT unnest($4::text[]) AS run_key),"
		       " x AS (SELECT run_key, alloc, priced, cost_num, f_alloc, f_cost, busy, idle, obs FROM usage_monthly_run"
		       "  WHERE month = ANY($5::date[])"
		       "  UNION ALL SELECT u.run_key, u.alloc, u.priced, coalesce(u.priced::numeric * u.rate, 0),"
		       "  CASE WHEN u.failed THEN u.alloc ELSE 0 END,"
		       "  CASE WHEN u.failed THEN coalesce(u.priced::numeric * u.rate, 0) ELSE 0 END, u.busy, u.idle, u.obs"
		       "  FROM usage_daily_run u WHERE u.day = ANY($1::date[])),"
		       " u AS (SELECT run_key, sum(alloc) AS alloc, sum(priced) AS priced, sum(cost_num) AS cost_num,"
		       "  sum(f_alloc) AS f_alloc, sum(f_cost) AS f_cost, sum(busy) AS busy, sum(idle) AS idle, sum(obs) AS obs"
		       "  FROM x WHERE run_key NOT IN (SELECT run_key FROM k) GROUP BY run_key),");
	if (month_rows)
		gl_strbuf_puts(sql, " ms AS (SELECT * FROM usage_monthly_run WHERE month = ANY($5::date[]) AND n_mem > 0"
				    "  AND run_key NOT IN (SELECT run_key FROM k)),"
				    " multi AS (SELECT run_key FROM ms GROUP BY run_key HAVING count(*) > 1),"
				    " m AS (SELECT m.* FROM run_members m WHERE m.run_key IN (SELECT run_key FROM multi) AND"
				    MEMBER_WIN_SQL "),"
				    " r AS (" MEMBER_AGG_SQL " UNION ALL SELECT run_key, kind, attempts, jobs, queue_s, first_s,"
				    "  first_pk, last_end_s, last_state FROM ms WHERE run_key NOT IN (SELECT run_key FROM multi))");
	else
		gl_strbuf_puts(sql, " m AS (SELECT m.* FROM run_members m WHERE" MEMBER_WIN_SQL
				    "  AND m.run_key NOT IN (SELECT run_key FROM k)),"
				    " r AS (" MEMBER_AGG_SQL ")");
	gl_strbuf_puts(sql, BUILT_COLS_SQL " FROM r LEFT JOIN u USING (run_key) JOIN jobs j ON j.job_pk = r.first_pk"
			    " JOIN clusters c USING (cluster_id)");
}

static const char *opt_str(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static int num(const PGresult *r, int row, int col, gl_cost_i128 *out, struct gl_err *err)
{
	if (gl_cost_i128_parse(PQgetvalue(r, row, col), out))
		return gl_err_set(err, GL_EINTERNAL, "runs: '%s' is not a sum", PQgetvalue(r, row, col));
	return 0;
}

/* One run of built_sql's row i, its first job's fields in *j (at index
 * first of the answer's jobs). */
static int built_row(const PGresult *res, int i, size_t first, struct gl_runs_run *r, struct gl_runs_job *j,
		     struct gl_err *err)
{
	int rc;
	r->key = gl_xstrdup(PQgetvalue(res, i, 0));
	gl_runs_id(r->key, r->id);
	r->kind = PQgetvalue(res, i, 1);
	r->first = first;
	r->attempts = atoll(PQgetvalue(res, i, 2));
	r->jobs = atoll(PQgetvalue(res, i, 3));
	r->queue_s = atoll(PQgetvalue(res, i, 4));
	r->first_submit_s = opt_time(res, i, 5);
	r->last_end_s = opt_time(res, i, 6);
	r->state = PQgetvalue(res, i, 7);
	if ((rc = num(res, i, 8, &r->alloc_us, err)) || (rc = num(res, i, 9, &r->priced_us, err)) ||
	    (rc = num(res, i, 10, &r->cost_num, err)) || (rc = num(res, i, 11, &r->failed_alloc_us, err)) ||
	    (rc = num(res, i, 12, &r->failed_cost_num, err)))
		return rc;
	r->busy_s = strtod(PQgetvalue(res, i, 13), NULL);
	r->idle_s = strtod(PQgetvalue(res, i, 14), NULL);
	r->observed_s = strtod(PQgetvalue(res, i, 15), NULL);
	j->cluster = opt_str(res, i, 16);
	j->user_name = opt_str(res, i, 17);
	j->account = opt_str(res, i, 18);
	j->partition = opt_str(res, i, 19);
	j->namespace_ = opt_str(res, i, 20);
	j->name = opt_str(res, i, 21);
	return 0;
}

static void put_date(char *buf, size_t n, int64_t s)
{
	int64_t y;
	unsigned mo, d;
	gl_timeutil_civil_from_days(s / 86400, &y, &mo, &d);
	snprintf(buf, n, "%04lld-%02u-%02u", (long long)y, mo, d);
}

/* The whole months from day da to day db (epoch seconds), -1 when either
 * is not a month's first day. */
static int months_between(int64_t da, int64_t db)
{
	int64_t y1, y2;
	unsigned m1, m2, d1, d2;
	gl_timeutil_civil_from_days(da / 86400, &y1, &m1, &d1);
	gl_timeutil_civil_from_days(db / 86400, &y2, &m2, &d2);
	if (d1 != 1 || d2 != 1)
		return -1;
	return (int)((y2 * 12 + m2) - (y1 * 12 + m1));
}

/* A built answer's plan: the window's built days (epoch seconds, in
 * order), the parts no built day holds, the whole months whose sums serve
 * (a date[] literal) and whether the window is those months. */
struct plan {
	int64_t *built, *la, *lb;
	size_t nb, nl;
	struct gl_strbuf months, days; /* date[]: the valid months, the built days outside them */
	char month1[16];               /* the first valid month */
	int month_rows, n_months;
	char da[16], db[16], a[24], b[24], now[24];
};

static void plan_fini(struct plan *p)
{
	free(p->built);
	free(p->la);
	free(p->lb);
	gl_strbuf_fini(&p->months);
	gl_strbuf_fini(&p->days);
}

/* The built days of p no valid month of r (make_plan's rows) holds, as
 * a date[] literal. */
static void days_outside(struct plan *p, const PGresult *r)
{
	size_t n = 0;
	gl_strbuf_putc(&p->days, '{');
	for (size_t i = 0; i < p->nb; i++) {
		char d[16];
		int in = 0;
		put_date(d, sizeof d, p->built[i]);
		for (int k = 0; k < PQntuples(r) && !in; k++)
			in = PQgetisnull(r, k, 0) && !strncmp(PQgetvalue(r, k, 1), d, 7);
		if (!in)
			gl_strbuf_printf(&p->days, "%s%s", n++ ? "," : "", d);
	}
	gl_strbuf_putc(&p->days, '}');
}

/* The window's whole built days and whole months of valid sums, and the
 * parts around them. */
static int make_plan(PGconn *c, const struct gl_rundb_query *q, struct plan *p, struct gl_err *err)
{
	int64_t da = (q->win_start_s + 86399) / 86400 * 86400, db = q->win_end_s / 86400 * 86400, at = q->win_start_s;
	PGresult *r = NULL;
	int rc, nm;

	if (db < da)
		db = da;
	put_date(p->da, sizeof p->da, da);
	put_date(p->db, sizeof p->db, db);
	snprintf(p->a, sizeof p->a, "%lld", (long long)q->win_start_s);
	snprintf(p->b, sizeof p->b, "%lld", (long long)q->win_end_s);
	snprintf(p->now, sizeof p->now, "%lld", (long long)q->now_s);
	if ((rc = gl_db_query(c,
			      "SELECT extract(epoch FROM day::timestamp)::bigint, NULL FROM usage_daily_run_built"
			      " WHERE day >= $1::date AND day < $2::date"
			      " UNION ALL SELECT NULL, mb.month::text FROM usage_monthly_run_built mb"
			      " WHERE mb.month >= $1::date AND mb.month + interval '1 month' <= $2::date"
			      " AND mb.days = ARRAY(SELECT b.day FROM usage_daily_run_built b WHERE b.day >= mb.month"
			      "  AND b.day < mb.month + interval '1 month' ORDER BY b.day)"
			      " ORDER BY 1, 2",
			      2, (const char *[]){p->da, p->db}, &r, err)))
		return rc;
	p->built = gl_xcalloc((size_t)PQntuples(r) + 1, sizeof *p->built);
	p->la = gl_xcalloc((size_t)PQntuples(r) + 2, sizeof *p->la);
	p->lb = gl_xcalloc((size_t)PQntuples(r) + 2, sizeof *p->lb);
	gl_strbuf_putc(&p->months, '{');
	nm = 0;
	for (int i = 0; i < PQntuples(r); i++) {
		if (PQgetisnull(r, i, 0)) {
			if (!nm)
				snprintf(p->month1, sizeof p->month1, "%s", PQgetvalue(r, i, 1));
			gl_strbuf_printf(&p->months, "%s%s", nm++ ? "," : "", PQgetvalue(r, i, 1));
			continue;
		}
		p->built[p->nb] = atoll(PQgetvalue(r, i, 0));
		if (p->built[p->nb] > at) {
			p->la[p->nl] = at;
			p->lb[p->nl++] = p->built[p->nb];
		}
		at = p->built[p->nb++] + 86400;
	}
	gl_strbuf_putc(&p->months, '}');
	days_outside(p, r);
	if (at < q->win_end_s) {
		p->la[p->nl] = at;
		p->lb[p->nl++] = q->win_end_s;
	}
	/* the window is those months (they lie in it, each once) */
	p->month_rows = nm > 0 && da == q->win_start_s && db == q->win_end_s && months_between(da, db) == nm;
	p->n_months = nm;
	PQclear(r);
	return 0;
}
static void i64_array(struct gl_strbuf *b, const int64_t *v, size_t n)
{
	gl_strbuf_putc(b, '{');
	for (size_t i = 0; i < n; i++)
		gl_strbuf_printf(b, "%s%lld", i ? "," : "", (long long)v[i]);
	gl_strbuf_putc(b, '}');
}

/* The live jobs of a built answer (live_jobs_sql, extra: $7), unsorted
 * into runs. */
static int live_read(PGconn *c, const struct plan *p, const char *keys, size_t nk, const char *extra,
		     struct gl_rundb *out, struct gl_err *err)
{
	struct gl_strbuf la = GL_STRBUF_INIT, lb = GL_STRBUF_INIT;
	int rc;
	i64_array(&la, p->la, p->nl);
	i64_array(&lb, p->lb, p->nl);
	rc = read_jobs(c, live_jobs_sql, 7, (const char *[]){p->a, p->b, p->now, keys, la.p, lb.p, extra}, nk, out, err);
	gl_strbuf_fini(&la);
	gl_strbuf_fini(&lb);
	return rc;
}

/* The runs of a built answer read live (into lv; their keys into ks, a
 * text[] literal): those of the open jobs and of the jobs with time in a
 * part no built day holds, each with every member the window holds (its
 * built ones too, found by run key), costed by the ledger's per-job lines
 * as a live answer's are. */
static int live_part(struct gl_store *st, const struct gl_rundb_query *q, const struct plan *p, struct gl_rundb *lv,
		     struct gl_strbuf *ks, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_strbuf keys = GL_STRBUF_INIT, rk = GL_STRBUF_INIT;
	struct gl_rundb first = {0};
	const char **kv = NULL, **names = NULL;
	PGresult *r = NULL;
	size_t nk = 0;
	int rc;

	gl_strbuf_puts(ks, "{}");
	gl_runs_label_keys(q->rules, q->n_rules, &kv, &nk);
	text_array(&keys, kv, nk);
	if ((rc = live_read(c, p, keys.p, nk, "{}", &first, err)))
		goto out;
	if (!first.n_jobs)
		goto out; /* no open job, no part unbuilt: every run is built */
	gl_runs_group(first.jobs, first.n_jobs, q->rules, q->n_rules, &first.runs);
	names = gl_xcalloc(first.runs.n + 1, sizeof *names);
	for (size_t i = 0; i < first.runs.n; i++)
		names[i] = first.runs.runs[i].key;
	text_array(&rk, names, first.runs.n);
	if ((rc = gl_db_query(c, "SELECT coalesce(array_agg(job_pk), '{}')::text FROM run_members WHERE run_key = ANY($1::text[])",
			      1, (const char *[]){rk.p}, &r, err)) ||
	    (rc = live_read(c, p, keys.p, nk, PQgetvalue(r, 0, 0), lv, err)) || (rc = ledger(st, q, 1, lv, err)))
		goto out;
	gl_runs_group(lv->jobs, lv->n_jobs, q->rules, q->n_rules, &lv->runs);
	free(names);
	names = gl_xcalloc(lv->runs.n + 1, sizeof *names);
	for (size_t i = 0; i < lv->runs.n; i++)
		names[i] = lv->runs.runs[i].key;
	gl_strbuf_reset(ks);
	text_array(ks, names, lv->runs.n);
out:
	PQclear(r);
	free(names);
	free(kv);
	gl_rundb_fini(&first);
	gl_strbuf_fini(&keys);
	gl_strbuf_fini(&rk);
	return rc;
}

/* The live runs (lv, emptied) and the built ones (res, owned by out from
 * here on) as one answer, in gl_runs_group's order. */
static int merge(struct gl_rundb *out, struct gl_rundb *lv, PGresult *res, struct gl_err *err)
{
	size_t nl = lv->n_jobs, nr = (size_t)PQntuples(res);
	int rc = 0;

	out->res = res;
	out->jobs = gl_xcalloc(nl + nr + 1, sizeof *out->jobs);
	if (nl)
		memcpy(out->jobs, lv->jobs, nl * sizeof *out->jobs);
	out->runs.runs = gl_xcalloc(lv->runs.n + nr + 1, sizeof *out->runs.runs);
	if (lv->runs.n)
		memcpy(out->runs.runs, lv->runs.runs, lv->runs.n * sizeof *out->runs.runs);
	out->runs.n = lv->runs.n;
	out->rows = lv->rows;
	out->text = lv->text;
	out->label_store = lv->label_store;
	free(lv->jobs);
	free(lv->runs.runs);
	memset(lv, 0, sizeof *lv);
	for (size_t i = 0; i < nr && !rc; i++) {
		rc = built_row(res, (int)i, nl + i, &out->runs.runs[out->runs.n], &out->jobs[nl + i], err);
		out->runs.n++;
	}
	out->n_jobs = nl + nr;
	gl_runs_sort(&out->runs);
	return rc;
}

/* A window with built days, asked without a token scope with the rules
 * the days were built with: the runs of its open jobs and of its parts no
 * built day holds live, the others from the built runs (*served 1); else
 * nothing is read beyond the check (*served 0). */
static int built_runs(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out, int *served,
		      struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct stored_rules sr = {0};
	struct gl_strbuf sql = GL_STRBUF_INIT, ks = GL_STRBUF_INIT;
	struct gl_rundb lv = {0};
	struct plan p;
	PGresult *res = NULL;
	int rc;

	memset(&p, 0, sizeof p);
	*served = 0;
	if (q->n_scope || q->members || q->win_end_s <= q->win_start_s)
		return 0;
	if ((rc = rules_read(c, &sr, err)) || !same_rules(sr.r, sr.n, q->rules, q->n_rules) ||
	    (rc = make_plan(c, q, &p, err)) || !p.nb || (rc = live_part(st, q, &p, &lv, &ks, err)))
		goto out;
	if (p.month_rows && p.n_months == 1)
		rc = gl_db_query(c, month_sql, 2, (const char *[]){ks.p, p.month1}, &res, err);
	else {
		built_sql(&sql, p.month_rows);
		rc = gl_db_query(c, sql.p, 5, (const char *[]){p.days.p, p.a, p.b, ks.p, p.months.p}, &res, err);
	}
	if (rc)
		goto out;
	rc = merge(out, &lv, res, err);
	res = NULL;
	*served = 1;
out:
	PQclear(res);
	gl_rundb_fini(&lv);
	plan_fini(&p);
	rules_fini(&sr);
	gl_strbuf_fini(&sql);
	gl_strbuf_fini(&ks);
	return rc;
}

static int live_runs(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out, struct gl_err *err)
{
	struct gl_strbuf keys = GL_STRBUF_INIT;
	struct gl_strbuf sb[GL_TOKENS_SCOPE_DIMS] = {GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT,
						    GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT};
	const char *sc[GL_TOKENS_SCOPE_DIMS];
	char a[24], b[24], now[24];
	const char **kv = NULL;
	size_t nk = 0;
	int rc;

	gl_runs_label_keys(q->rules, q->n_rules, &kv, &nk);
	text_array(&keys, kv, nk);
	snprintf(a, sizeof a, "%lld", (long long)q->win_start_s);
	snprintf(b, sizeof b, "%lld", (long long)q->win_end_s);
	snprintf(now, sizeof now, "%lld", (long long)q->now_s);
	gl_tokens_scope_arrays(q->scope, q->n_scope, sb, sc);
	rc = read_jobs(gl_db_conn(st), jobs_sql, 10,
		       (const char *[]){a, b, now, sc[0], keys.p, sc[1], sc[2], sc[3], sc[4], sc[5]}, nk, out, err);
	for (size_t d = 0; d < GL_TOKENS_SCOPE_DIMS; d++)
		gl_strbuf_fini(&sb[d]);
	if (rc || (rc = ledger(st, q, 0, out, err)))
		goto out;
	gl_runs_group(out->jobs, out->n_jobs, q->rules, q->n_rules, &out->runs);
out:
	free(kv);
	gl_strbuf_fini(&keys);
	return rc;
}

int gl_rundb_runs(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out, struct gl_err *err)
{
	int served = 0, rc;

	memset(out, 0, sizeof *out);
	if ((rc = built_runs(st, q, out, &served, err)))
		return rc;
	out->built = served;
	if (!served && (rc = live_runs(st, q, out, err)))
		return rc;
	if ((rc = gl_runs_round(&out->runs)))
		return gl_err_set(err, -rc, "runs: apportioning failed");
	return 0;
}

void gl_rundb_fini(struct gl_rundb *r)
{
	gl_runs_fini(&r->runs);
	free(r->jobs);
	free(r->rows);
	free(r->text);
	free(r->label_store);
	PQclear(r->res);
	memset(r, 0, sizeof *r);
}
