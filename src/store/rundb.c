/* The jobs of the training runs (see include/gl/rundb.h). */
#include "gl/rundb.h"
#include "gl/accounting.h"
#include "gl/chargeback.h"
#include "db_int.h"
#include "gl/pgrow.h"
#include "gl/strbuf.h"
#include "gl/window.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The columns of jobs it reads are those whose change makes a built
 * month's runs stale (sql/131's gl_runs_jobs_upd): keep both lists one.
 * $1 window start, $2 end, $3 now (epoch seconds), $5 the label keys
 * (text[]): their values joined by U+001F, an
 * absent label as the empty string (a label's value is never empty and
 * never holds a control character in the API). The window test is
 * /v1/jobs'; a job that never started counts where it was submitted. */
static const char jobs_sql[] =
	"WITH w AS (SELECT to_timestamp($1::bigint) AS a, to_timestamp($2::bigint) AS b, to_timestamp($3::bigint) AS now)"
	" SELECT j.job_pk, c.name AS cluster, j.job_key, j.job_id, j.name, j.user_name, j.account, j.partition,"
	"  j.namespace AS namespace_, j.wckey, j.tags->>'comment' AS comment, j.state,"
	"  coalesce(j.array_job_id, -1) AS array_job_id, coalesce(j.het_job_id, -1) AS het_job_id,"
	"  coalesce(j.het_offset, -1) AS het_offset,"
	"  extract(epoch FROM j.submit_at)::bigint AS submit_s, extract(epoch FROM j.start_at)::bigint AS start_s,"
	"  extract(epoch FROM j.end_at)::bigint AS end_s, coalesce(j.queue_wait_s, -1) AS queue_wait_s,"
	"  j.tags->>'owner_kind' AS owner_kind, j.tags->>'owner_name' AS owner_name,"
	/* only pods have labels: a Slurm job's row skips the subquery */
	"  CASE WHEN j.tags ? 'labels' THEN array_to_string(ARRAY(SELECT coalesce(j.tags->'labels'->>k.k, '')"
	"   FROM unnest($5::text[]) WITH ORDINALITY AS k(k, o) ORDER BY k.o), E'\\x1f') END AS labels"
	" FROM jobs j JOIN clusters c USING (cluster_id), w"
	" WHERE (" GL_ACCOUNTING_JOB_GPUS_SQL("j") " > 0 OR j.req_gpu_micro > 0)"
	"  AND ((j.start_at < w.b AND coalesce(j.end_at, w.now) > w.a)"
	"   OR (j.start_at IS NULL AND j.submit_at >= w.a AND j.submit_at < w.b))"
	"  AND ($8::text[] IS NULL OR j.account = ANY($8)) AND ($9::text[] IS NULL OR j.namespace = ANY($9))"
	"  AND ($10::text[] IS NULL OR j.user_name = ANY($10))"
	"  AND (($4::text[] IS NULL AND $6::text[] IS NULL AND $7::text[] IS NULL) OR EXISTS ("
	"   SELECT 1 FROM gl_owner(c.name, j.account, j.user_name, j.partition, j.qos, j.wckey, j.namespace, j.tags,"
	"    coalesce(j.start_at, j.submit_at)) ow"
	"   WHERE ($4::text[] IS NULL OR ow.team = ANY($4)) AND ($6::text[] IS NULL OR ow.project = ANY($6))"
	"    AND ($7::text[] IS NULL OR ow.cost_center = ANY($7))))";

/* The rows' text in blocks that never move (the runs point into them). */
struct text_block {
	struct text_block *next;
	size_t used, cap;
	char p[];
};

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

/* The ledger's line of each job that started: one step, the window. */
static int ledger(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out, struct gl_err *err)
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
	if (q->n_scope) {
		/* a scoped token's jobs only; unscoped, every job's line (a list
		 * of every job in the window is a 100,000-element ANY per row) */
		aq.jobs = ids;
		aq.n_jobs = n;
	}
	if ((rc = gl_accounting_chargeback_finished(st, &aq, &cb, &meta, err)))
		goto out;
	for (size_t i = 0; i < cb.n_steps; i++)
		for (size_t k = 0; k < cb.steps[i].n_lines; k++) {
			const struct gl_chargeback_line *l = &cb.steps[i].lines[k];
			struct gl_runs_job key = {.job_pk = atoll(l->key[0])}, *j;
			if (!(j = gl_bsearch(&key, out->jobs, out->n_jobs, sizeof *out->jobs, cmp_pk)))
				continue; /* not asked for: cannot happen */
			j->gpu_s += l->alloc_s;
			j->cost_micros += l->cost_micros;
			j->unpriced_s += l->unpriced_s;
			j->unobserved_s += l->unobserved_s;
			j->busy_s += l->busy_s;
			j->idle_s += l->idle_s;
			j->observed_s += l->observed_s;
		}
out:
	gl_chargeback_fini(&cb);
	gl_accounting_meta_fini(&meta);
	free(ids);
	return rc;
}

int gl_rundb_runs(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out, struct gl_err *err)
{
	struct gl_strbuf keys = GL_STRBUF_INIT;
	struct gl_strbuf sb[GL_TOKENS_SCOPE_DIMS] = {GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT,
						    GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT};
	const char *sc[GL_TOKENS_SCOPE_DIMS];
	char a[24], b[24], now[24];
	const char **kv = NULL;
	size_t nk = 0, n = 0;
	int rc;

	memset(out, 0, sizeof *out);
	gl_runs_label_keys(q->rules, q->n_rules, &kv, &nk);
	text_array(&keys, kv, nk);
	snprintf(a, sizeof a, "%lld", (long long)q->win_start_s);
	snprintf(b, sizeof b, "%lld", (long long)q->win_end_s);
	snprintf(now, sizeof now, "%lld", (long long)q->now_s);
	gl_tokens_scope_arrays(q->scope, q->n_scope, sb, sc);
	rc = gl_pgrow_query(gl_db_conn(st), jobs_sql, 10,
			    (const char *[]){a, b, now, sc[0], keys.p, sc[1], sc[2], sc[3], sc[4], sc[5]}, fields,
			    GL_ARRAY_LEN(fields), sizeof(struct row), &out->rows, &n, &out->text, err);
	for (size_t d = 0; d < GL_TOKENS_SCOPE_DIMS; d++)
		gl_strbuf_fini(&sb[d]);
	if (rc)
		goto out;
	out->n_jobs = n;
	out->jobs = gl_xcalloc(n + 1, sizeof *out->jobs);
	split_labels(out, out->rows, nk);
	gl_qsort(out->jobs, out->n_jobs, sizeof *out->jobs, cmp_pk);
	if ((rc = ledger(st, q, out, err)))
		goto out;
	gl_runs_group(out->jobs, out->n_jobs, q->rules, q->n_rules, &out->runs);
out:
	free(kv);
	gl_strbuf_fini(&keys);
	return rc;
}

void gl_rundb_fini(struct gl_rundb *r)
{
	/* a built month's list: its keys are in the blocks */
	for (size_t i = 0; r->blocks && i < r->runs.n; i++)
		r->runs.runs[i].key = NULL;
	gl_runs_fini(&r->runs);
	while (r->blocks) {
		struct text_block *b = r->blocks;
		r->blocks = b->next;
		free(b);
	}
	free(r->jobs);
	free(r->rows);
	free(r->text);
	free(r->label_store);
	free(r->n_runs);
	free(r->ord);
	memset(r, 0, sizeof *r);
}

/* The marks a month's runs are built from (sql/131), in the caller's
 * snapshot: $1 the month's first day. The row: all the month's days built
 * (t/f), no shards (t/f), the days' mark, the jobs' mark. A central's jobs
 * are its shards', whose writes no trigger here counts: it never builds
 * nor reads them (local false). */
#define MARKS_SQL                                                                                                  \
	"SELECT count(*) = extract(day FROM $1::date + interval '1 month' - interval '1 day')"                    \
	"  AS all_built, NOT EXISTS (SELECT 1 FROM shards) AS local,"                                               \
	" count(*) || '/' || coalesce(max(extract(epoch FROM built_at)), 0) AS days_sig,"                        \
	" (SELECT coalesce(sum(n), 0) FROM runs_jobs_changed WHERE month = $1::date) AS jobs_sig"                  \
	" FROM usage_daily_built WHERE day >= $1::date AND day < $1::date + interval '1 month'"

struct marks {
	int all_built, local;
	char *days_sig;
	int64_t jobs_sig;
};

static int read_marks(PGconn *c, const char *month, struct marks *m, void **rows, char **text, struct gl_err *err)
{
	static const struct gl_pgrow_field f[] = {
		GL_PGROW(struct marks, BOOL, all_built), GL_PGROW(struct marks, BOOL, local),
		GL_PGROW(struct marks, STR, days_sig),
		GL_PGROW(struct marks, I64, jobs_sig)};
	size_t n = 0;
	int rc = gl_pgrow_query(c, MARKS_SQL, 1, (const char *[]){month}, f, GL_ARRAY_LEN(f), sizeof *m, rows, &n,
				text, err);
	if (!rc && n != 1)
		rc = gl_err_set(err, GL_EIO, "runs: the month's marks: %zu rows", n);
	if (!rc)
		*m = *(struct marks *)*rows;
	return rc;
}

static void copy_str(struct gl_strbuf *b, const char *s)
{
	if (s)
		gl_strbuf_put_copy_text(b, s, strlen(s));
	else
		gl_strbuf_puts(b, "\\N");
	gl_strbuf_putc(b, '\t');
}

static void copy_time(struct gl_strbuf *b, int64_t t)
{
	if (t == GL_TIME_NONE)
		gl_strbuf_puts(b, "\\N\t");
	else
		gl_strbuf_printf(b, "%lld\t", (long long)t);
}

/* One row of runs_month for each run, in the answer's order; 1 when a
 * run has exporter data. */
static int month_rows(struct gl_strbuf *b, const char *month, const struct gl_rundb *db)
{
	int observed = 0;
	for (size_t i = 0; i < db->runs.n; i++) {
		const struct gl_runs_run *r = &db->runs.runs[i];
		const struct gl_runs_job *j = &db->jobs[r->first];
		observed |= r->busy_s != 0 || r->idle_s != 0 || r->observed_s != 0;
		gl_strbuf_printf(b, "%s\t%zu\t", month, i);
		copy_str(b, r->key);
		copy_str(b, r->kind);
		copy_str(b, j->cluster);
		copy_str(b, j->user_name);
		copy_str(b, j->account);
		copy_str(b, j->partition);
		copy_str(b, j->namespace_);
		copy_str(b, j->name);
		copy_time(b, r->first_submit_s);
		copy_time(b, r->last_end_s);
		copy_str(b, r->state);
		gl_strbuf_printf(b, "%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld\t%.17g\t%.17g\t%.17g\n",
				 (long long)r->attempts, (long long)r->jobs, (long long)r->gpu_s, (long long)r->cost_micros,
				 (long long)r->failed_cost_micros, (long long)r->failed_gpu_s, (long long)r->unpriced_s,
				 (long long)r->unobserved_s, (long long)r->queue_s, r->busy_s, r->idle_s, r->observed_s);
	}
	return observed;
}

/* The month's runs grouped by gl_rundb_runs and written with its marks, in
 * one snapshot; *built 1 when it was stale. so_far: the month in progress,
 * the window [a, b) with b the build's time (its until_at). */
static int build_month(PGconn *c, struct gl_store *st, const char *month, int64_t a, int64_t b, int so_far,
		       const struct gl_runs_rule *rules, size_t n_rules, const char *sig, int64_t now_s, int *built,
		       struct gl_err *err)
{
	struct gl_rundb_query q = {a, b, now_s, rules, n_rules, NULL, 0, NULL, NULL, -1, 0};
	struct gl_strbuf rows = GL_STRBUF_INIT;
	struct gl_rundb db = {0};
	struct marks m = {0};
	void *mrows = NULL;
	char *mtext = NULL, js[24], until[24], age[24];
	const char *observed;
	PGresult *res = NULL;
	int rc, fresh;

	*built = 0;
	if ((rc = gl_db_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ", err)) ||
	    (rc = gl_db_query(c, "SELECT pg_try_advisory_xact_lock(26476, 131)", 0, NULL, &res, err)))
		goto out;
	/* another process builds the runs: this one's would be the same */
	if (strcmp(PQgetvalue(res, 0, 0), "t") || (rc = read_marks(c, month, &m, &mrows, &mtext, err)) ||
	    !m.local || !(so_far || m.all_built))
		goto out;
	PQclear(res);
	res = NULL;
	snprintf(js, sizeof js, "%lld", (long long)m.jobs_sig);
	snprintf(until, sizeof until, "%lld", (long long)b);
	snprintf(age, sizeof age, "%d", GL_RUNDB_EVERY_S);
	/* the month so far is due again when a mark moved, or when it is older
	 * than the task's interval and a job is open (running or waiting: its
	 * seconds grow with the clock alone); with neither, its runs as of its
	 * last build are the answer up to now */
	if ((rc = gl_db_query(c,
			      "SELECT 1 FROM runs_month_built WHERE month = $1::date AND rules_sig = $2 AND days_sig = $3"
			      " AND jobs_sig = $4::bigint AND (until_at IS NOT NULL) = $5::boolean"
			      " AND NOT ($5::boolean AND until_at <= to_timestamp($6::bigint - $7::bigint)"
			      "  AND (EXISTS (SELECT 1 FROM jobs WHERE end_at IS NULL AND start_at IS NOT NULL)"
			      "   OR EXISTS (SELECT 1 FROM jobs WHERE start_at IS NULL AND end_at IS NULL)))",
			      7, (const char *[]){month, sig, m.days_sig, js, so_far ? "t" : "f", until, age}, &res, err)))
		goto out;
	fresh = PQntuples(res) > 0;
	if (fresh || (rc = gl_rundb_runs(st, &q, &db, err)))
		goto out;
	observed = month_rows(&rows, month, &db) ? "t" : "f";
	if ((rc = gl_db_query(c, "DELETE FROM runs_month WHERE month = $1::date", 1, (const char *[]){month}, NULL, err)) ||
	    (rc = gl_db_copy_in(c, "COPY runs_month FROM STDIN", rows.p ? rows.p : "", rows.len, err)) ||
	    (rc = gl_db_query(c,
			      "INSERT INTO runs_month_built (month, rules_sig, days_sig, jobs_sig, observed, until_at) VALUES"
			      " ($1::date, $2, $3, $4::bigint, $5::boolean, to_timestamp($6::bigint))"
			      " ON CONFLICT (month) DO UPDATE SET rules_sig = excluded.rules_sig,"
			      " days_sig = excluded.days_sig, jobs_sig = excluded.jobs_sig, observed = excluded.observed,"
			      " until_at = excluded.until_at, built_at = now()",
			      6, (const char *[]){month, sig, m.days_sig, js, observed, so_far ? until : NULL}, NULL, err)))
		goto out;
	*built = 1;
out:
	PQclear(res);
	rc = rc ? (PQclear(PQexec(c, "ROLLBACK")), rc) : gl_db_exec(c, "COMMIT", err);
	gl_rundb_fini(&db);
	gl_strbuf_fini(&rows);
	free(mrows);
	free(mtext);
	return rc;
}

/* The month of t (UTC) as its first day, "YYYY-MM-01". */
static void month_of(int64_t t, char out[16])
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	snprintf(out, 16, "%04d-%02d-01", tm.tm_year + 1900, tm.tm_mon + 1);
}

/* The month in progress as the window [its start, now_s): now_s is T, the
 * time the answer reaches, so a job that starts or ends after it is not
 * in the answer yet whatever the snapshot holds (the live answer for the
 * same window and now is the same). */
static int build_so_far(PGconn *c, struct gl_store *st, const struct gl_runs_rule *rules, size_t n_rules,
			const char *sig, int64_t now_s, int *built, struct gl_err *err)
{
	int64_t a = gl_window_month_start(now_s);
	char month[16];
	int one = 0, rc;
	if (now_s <= a)
		return 0;
	month_of(now_s, month);
	rc = build_month(c, st, month, a, now_s, 1, rules, n_rules, sig, now_s, &one, err);
	*built += one;
	return rc;
}

int gl_rundb_build_months(struct gl_store *st, const struct gl_runs_rule *rules, size_t n_rules, int64_t now_s,
			  int *built, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *res = NULL;
	char sig[17];
	int rc;

	*built = 0;
	gl_runs_rules_sig(rules, n_rules, sig);
	/* the months whose every day is built */
	if ((rc = gl_db_query(c,
			      "SELECT m::text, extract(epoch FROM m::timestamp AT TIME ZONE 'UTC')::bigint,"
			      " extract(epoch FROM (m + interval '1 month')::timestamp AT TIME ZONE 'UTC')::bigint"
			      " FROM (SELECT date_trunc('month', day)::date AS m, count(*) AS n FROM usage_daily_built"
			      " GROUP BY 1) x WHERE n = extract(day FROM m + interval '1 month' - interval '1 day') ORDER BY m",
			      0, NULL, &res, err)))
		return rc;
	for (int i = 0; i < PQntuples(res) && !rc; i++) {
		int one = 0;
		rc = build_month(c, st, PQgetvalue(res, i, 0), atoll(PQgetvalue(res, i, 1)), atoll(PQgetvalue(res, i, 2)), 0,
				 rules, n_rules, sig, now_s, &one, err);
		*built += one;
	}
	PQclear(res);
	if (!rc)
		rc = build_so_far(c, st, rules, n_rules, sig, now_s, built, err);
	return rc;
}

/* A built month's runs summed by a value (month_query): one item of an
 * aggregate, in a run's and its first job's fields. */
struct month_row {
	struct gl_runs_job j;
	struct gl_runs_run r;
	char *key;
	int64_t n_runs;
};

#define J(m) {#m, GL_PGROW_STR, offsetof(struct month_row, j) + offsetof(struct gl_runs_job, m), GL_PGROW_NO_NULL}
#define R(t, m) {#m, GL_PGROW_##t, offsetof(struct month_row, r) + offsetof(struct gl_runs_run, m), GL_PGROW_NO_NULL}
static const struct gl_pgrow_field month_fields[] = {
	{"key", GL_PGROW_STR, offsetof(struct month_row, key), GL_PGROW_NO_NULL},
	R(STR, kind), J(cluster), J(user_name), J(account), J(partition), J(namespace_), J(name),
	R(TIME, first_submit_s), R(TIME, last_end_s), R(STR, state), R(I64, attempts), R(I64, jobs), R(I64, gpu_s),
	R(I64, cost_micros), R(I64, failed_cost_micros), R(I64, failed_gpu_s), R(I64, unpriced_s), R(I64, unobserved_s),
	R(I64, queue_s), R(F64, busy_s), R(F64, idle_s), R(F64, observed_s),
	{"n_runs", GL_PGROW_I64, offsetof(struct month_row, n_runs), GL_PGROW_NO_NULL},
};
#undef J
#undef R

/* The built month's runs ($1, $2 the state's first word or NULL) summed
 * by group_by: one row a value, the value in its own column
 * (the others NULL), its runs' figures summed in the runs' order as
 * /v1/runs sums them (the same float additions, so the same bits) when
 * ordered, else (no run has exporter data: every float 0) as they come. */
static int month_query(struct gl_strbuf *sql, const char *group_by, int ordered)
{
	static const char *const cols[] = {"user_name", "account", "cluster", "partition", "namespace_", "kind"};
	static const char *const sums[] = {"attempts", "jobs", "gpu_s", "cost_micros", "failed_cost_micros",
					   "failed_gpu_s", "unpriced_s", "unobserved_s", "queue_s"};
	static const char where[] = " FROM runs_month WHERE month = $1::date"
				    " AND ($2::text IS NULL OR upper(split_part(state, ' ', 1)) = upper($2))";
	size_t g = 0;
	while (g < GL_ARRAY_LEN(cols) && strcmp(cols[g], group_by))
		g++;
	if (g == GL_ARRAY_LEN(cols))
		return -GL_EINVAL;
	gl_strbuf_puts(sql, "SELECT '' AS key, min(state) AS state, count(*) AS n_runs, NULL::bigint AS first_submit_s,"
			    " NULL::bigint AS last_end_s");
	for (size_t i = 0; i < GL_ARRAY_LEN(cols); i++) {
		if (i == g)
			gl_strbuf_printf(sql, ", coalesce(%s, '') AS %s", cols[i], cols[i]);
		else /* kind is never NULL */
			gl_strbuf_printf(sql, ", %s AS %s", i == 5 ? "''" : "NULL::text", cols[i]);
	}
	gl_strbuf_puts(sql, ", NULL::text AS name");
	for (size_t i = 0; i < GL_ARRAY_LEN(sums); i++)
		gl_strbuf_printf(sql, ", sum(%s)::bigint AS %s", sums[i], sums[i]);
	for (size_t i = 0; i < 3; i++) {
		static const char *const f[] = {"busy_s", "idle_s", "observed_s"};
		gl_strbuf_printf(sql, ordered ? ", sum(%s ORDER BY ord) AS %s" : ", sum(%s) AS %s", f[i], f[i]);
	}
	gl_strbuf_puts(sql, where);
	gl_strbuf_printf(sql, " GROUP BY coalesce(%s, '')", cols[g]);
	return 0;
}

/* The window as a calendar month's first day (UTC), or 0. */
static int window_month(int64_t a, int64_t b, char out[16])
{
	time_t t = (time_t)a;
	struct tm tm;
	if (!gmtime_r(&t, &tm) || tm.tm_mday != 1 || tm.tm_hour || tm.tm_min || tm.tm_sec)
		return 0;
	snprintf(out, 16, "%04d-%02d-01", tm.tm_year + 1900, tm.tm_mon + 1);
	tm.tm_mon++;
	return (int64_t)timegm(&tm) == b;
}

/* The list's columns (the answer's fields and the place), in the order
 * the rows hold them. */
enum list_col {
	LC_KEY, LC_KIND, LC_CLUSTER, LC_USER, LC_ACCOUNT, LC_NAMESPACE, LC_NAME, LC_STATE, LC_FIRST_SUBMIT, LC_LAST_END,
	LC_ATTEMPTS, LC_JOBS, LC_GPU_S, LC_COST, LC_FAILED_COST, LC_FAILED_GPU_S, LC_UNPRICED, LC_UNOBSERVED, LC_QUEUE,
	LC_BUSY, LC_IDLE, LC_OBSERVED, LC_ORD, LC_N
};

#define LIST_COLS                                                                                                    \
	"key, kind, cluster, user_name, account, namespace_, name, state, first_submit_s, last_end_s, attempts, jobs," \
	" gpu_s, cost_micros, failed_cost_micros, failed_gpu_s, unpriced_s, unobserved_s, queue_s, busy_s, idle_s,"     \
	" observed_s, ord"

#define TEXT_BLOCK (1024 * 1024)

static const char *block_put(struct text_block **b, const struct gl_db_field *f)
{
	size_t n;
	char *s;
	if (f->len < 0)
		return NULL;
	n = (size_t)f->len;
	if (!*b || (*b)->cap - (*b)->used < n + 1) {
		size_t cap = n + 1 > TEXT_BLOCK ? n + 1 : TEXT_BLOCK;
		struct text_block *nb = gl_xmalloc(sizeof *nb + cap);
		*nb = (struct text_block){*b, 0, cap};
		*b = nb;
	}
	s = (*b)->p + (*b)->used;
	memcpy(s, f->p, n);
	s[n] = '\0';
	(*b)->used += n + 1;
	return s;
}

static double field_f8(const struct gl_db_field *f)
{
	uint64_t u = (uint64_t)gl_db_field_int(f);
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

static int64_t field_time(const struct gl_db_field *f)
{
	return f->len < 0 ? GL_TIME_NONE : gl_db_field_int(f);
}

struct list_ctx {
	struct gl_rundb *out;
	struct text_block **text;
	size_t cap;
};

/* One run of the list: its first job's fields beside it, every string in
 * the blocks (no allocation a row). */
static int list_row(void *ctx, const struct gl_db_field *f, int n, struct gl_err *err)
{
	struct list_ctx *x = ctx;
	struct gl_rundb *o = x->out;
	struct gl_runs_run *r;
	struct gl_runs_job *j;
	size_t i = o->runs.n;
	(void)n;
	(void)err;
	if (i == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 1024;
		o->runs.runs = gl_xrealloc(o->runs.runs, x->cap * sizeof *o->runs.runs);
		o->jobs = gl_xrealloc(o->jobs, x->cap * sizeof *o->jobs);
		o->ord = gl_xrealloc(o->ord, x->cap * sizeof *o->ord);
	}
	r = memset(&o->runs.runs[i], 0, sizeof *r);
	j = memset(&o->jobs[i], 0, sizeof *j);
	r->key = (char *)block_put(x->text, &f[LC_KEY]);
	gl_runs_run_id(r->key, r->id);
	r->kind = block_put(x->text, &f[LC_KIND]);
	j->cluster = block_put(x->text, &f[LC_CLUSTER]);
	j->user_name = block_put(x->text, &f[LC_USER]);
	j->account = block_put(x->text, &f[LC_ACCOUNT]);
	j->namespace_ = block_put(x->text, &f[LC_NAMESPACE]);
	j->name = block_put(x->text, &f[LC_NAME]);
	r->state = block_put(x->text, &f[LC_STATE]);
	r->first = i;
	r->first_submit_s = field_time(&f[LC_FIRST_SUBMIT]);
	r->last_end_s = field_time(&f[LC_LAST_END]);
	r->attempts = gl_db_field_int(&f[LC_ATTEMPTS]);
	r->jobs = gl_db_field_int(&f[LC_JOBS]);
	r->gpu_s = gl_db_field_int(&f[LC_GPU_S]);
	r->cost_micros = gl_db_field_int(&f[LC_COST]);
	r->failed_cost_micros = gl_db_field_int(&f[LC_FAILED_COST]);
	r->failed_gpu_s = gl_db_field_int(&f[LC_FAILED_GPU_S]);
	r->unpriced_s = gl_db_field_int(&f[LC_UNPRICED]);
	r->unobserved_s = gl_db_field_int(&f[LC_UNOBSERVED]);
	r->queue_s = gl_db_field_int(&f[LC_QUEUE]);
	r->busy_s = field_f8(&f[LC_BUSY]);
	r->idle_s = field_f8(&f[LC_IDLE]);
	r->observed_s = field_f8(&f[LC_OBSERVED]);
	o->ord[i] = gl_db_field_int(&f[LC_ORD]);
	o->runs.n++;
	return 0;
}

/* A built month's page of the list (q->after_ord, q->limit), read in
 * binary (no row's text parsed, no row allocated), in the caller's
 * transaction (month_rows_read). */
static int month_list(PGconn *c, const struct gl_rundb_query *q, const char *month, struct gl_rundb *out,
		      struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
	struct list_ctx x = {out, (struct text_block **)&out->blocks, 0};
	char *state = q->state ? PQescapeLiteral(c, q->state, strlen(q->state)) : NULL;
	int rc;

	if (q->state && !state) {
		rc = gl_err_set(err, GL_EINVAL, "runs: state: %s", PQerrorMessage(c));
		goto out;
	}
	gl_strbuf_printf(&sql, "COPY (SELECT " LIST_COLS " FROM runs_month WHERE month = '%s'::date", month);
	if (state)
		gl_strbuf_printf(&sql, " AND upper(split_part(state, ' ', 1)) = upper(%s)", state);
	/* one run past the page says whether there is a next one */
	gl_strbuf_printf(&sql, " AND ord > %lld ORDER BY ord LIMIT %lld) TO STDOUT (FORMAT binary)",
			 (long long)q->after_ord, q->limit ? (long long)q->limit + 1 : (long long)INT64_MAX);
	if ((rc = gl_db_copy_out_binary(c, gl_strbuf_cstr(&sql), LC_N, list_row, &x, err)))
		goto out;
	if (q->limit && out->runs.n > q->limit) {
		out->more = 1;
		out->runs.n = q->limit;
	}
	out->n_jobs = out->runs.n;
out:
	PQfreemem(state);
	gl_strbuf_fini(&sql);
	return rc;
}

/* Whether the month's built runs answer the query: a whole month's while
 * its three marks are those now, the month so far's (so_far) while its
 * rules are (it is the answer as of its until_at, *until_s). */
static int month_built(PGconn *c, const char *month, const char *sig, int so_far, int *hit, int *observed,
		       int64_t *until_s, struct gl_err *err)
{
	static const char whole[] =
		"WITH mk AS (" MARKS_SQL ")"
		" SELECT b.observed, 0 FROM runs_month_built b, mk WHERE b.month = $1::date AND mk.all_built AND mk.local"
		" AND b.rules_sig = $2 AND b.days_sig = mk.days_sig AND b.jobs_sig = mk.jobs_sig AND b.until_at IS NULL";
	/* a central builds no month: its rows would be a database's before it had shards */
	static const char part[] =
		"SELECT observed, extract(epoch FROM until_at)::bigint FROM runs_month_built WHERE month = $1::date"
		" AND rules_sig = $2 AND until_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM shards)";
	PGresult *res = NULL;
	int rc = gl_db_query(c, so_far ? part : whole, 2, (const char *[]){month, sig}, &res, err);
	if (rc)
		return rc;
	*hit = PQntuples(res) > 0;
	*observed = *hit && !strcmp(PQgetvalue(res, 0, 0), "t");
	*until_s = *hit ? atoll(PQgetvalue(res, 0, 1)) : 0;
	PQclear(res);
	return 0;
}

/* The built rows of the month's answer, in the snapshot of its marks. */
static int month_rows_read(PGconn *c, const struct gl_rundb_query *q, const char *month, int so_far,
			   struct gl_rundb *out, int *hit, size_t *n, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
	char sig[17];
	int rc, observed;

	gl_runs_rules_sig(q->rules, q->n_rules, sig);
	/* one snapshot: a build between the marks and the rows would answer
	 * one build's runs with another's time */
	if ((rc = gl_db_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
		return rc;
	/* a page is the key's order: a month's rows are new every build, and
	 * until autovacuum analyzes them (the application role cannot) the
	 * planner thought them few and sorted them all on disk, ~100 ms at
	 * 75,000 runs instead of reading 1,000 by the key */
	if (!q->group_by && (rc = gl_db_exec(c, "SET LOCAL enable_sort = off", err)))
		goto out;
	if ((rc = month_built(c, month, sig, so_far, hit, &observed, &out->as_of_s, err)) || !*hit)
		goto out;
	if (!so_far)
		out->as_of_s = 0;
	if (!q->group_by) {
		rc = month_list(c, q, month, out, err);
		goto out;
	}
	if ((rc = month_query(&sql, q->group_by, observed)))
		goto out;
	rc = gl_pgrow_query(c, gl_strbuf_cstr(&sql), 2, (const char *[]){month, q->state},
			    month_fields, GL_ARRAY_LEN(month_fields), sizeof(struct month_row), &out->rows, n,
			    &out->text, err);
out:
	rc = rc ? (PQclear(PQexec(c, "ROLLBACK")), rc) : gl_db_exec(c, "COMMIT", err);
	gl_strbuf_fini(&sql);
	return rc;
}

int gl_rundb_month(struct gl_store *st, const struct gl_rundb_query *q, struct gl_rundb *out, int *hit,
		   struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct month_row *rows;
	char month[16], now_month[16];
	size_t n = 0;
	int rc;

	memset(out, 0, sizeof *out);
	*hit = 0;
	/* a scoped token's jobs are another window's lines: their own rounding */
	if (q->n_scope || !window_month(q->win_start_s, q->win_end_s, month))
		return 0;
	month_of(q->now_s, now_month);
	/* the list is read into *out whole (month_list): an aggregate's rows are made runs here */
	if ((rc = month_rows_read(c, q, month, !strcmp(month, now_month), out, hit, &n, err)) || !*hit ||
	    !q->group_by)
		goto out;
	rows = out->rows;
	out->n_runs = gl_xcalloc(n + 1, sizeof *out->n_runs);
	out->n_jobs = n;
	out->jobs = gl_xcalloc(n + 1, sizeof *out->jobs);
	out->runs.runs = gl_xcalloc(n + 1, sizeof *out->runs.runs);
	out->runs.n = n;
	for (size_t i = 0; i < n; i++) {
		struct gl_runs_run *r = &out->runs.runs[i];
		out->jobs[i] = rows[i].j;
		*r = rows[i].r;
		r->key = gl_xstrdup(rows[i].key);
		r->first = i;
		/* the id is the key's, as gl_runs_group makes it */
		gl_runs_run_id(r->key, r->id);
		out->n_runs[i] = rows[i].n_runs;
	}
out:
	if (rc || !*hit) {
		gl_rundb_fini(out);
		*hit = 0;
	}
	return rc;
}
