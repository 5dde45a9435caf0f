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

/* $1 window start, $2 end, $3 now (epoch seconds), $5 the label keys
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
	gl_runs_fini(&r->runs);
	free(r->jobs);
	free(r->rows);
	free(r->text);
	free(r->label_store);
	memset(r, 0, sizeof *r);
}
