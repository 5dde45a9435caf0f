/* The idle hook's queries (see include/gl/hookstore.h, docs/hook.md). */
#include "gl/hookstore.h"
#include "gl/accounting.h"
#include "gl/audit.h"
#include "db_int.h"
#include "gl/pgarray.h"
#include "gl/pgrow.h"
#include "gl/strbuf.h"

#include <cjson/cJSON.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

/* A decoded string the list owns on its own ("" for SQL NULL, as the
 * lists have always held it). */
static char *dup_str(const char *s)
{
	return gl_xstrdup(s ? s : "");
}

static size_t argv_count(const char *const *argv)
{
	size_t n = 0;
	while (argv[n])
		n++;
	return n;
}

static void fmt_i64(char *b, size_t n, int64_t v)
{
	snprintf(b, n, "%lld", (long long)v);
}

/* Runs sql with the probes as arrays: $1 job_pk[], $2 a[], then $3 b[]
 * and $4 tag[] (with_b), or $3 tag[], $4 now_s, $5 lo_s. */
static int probe_query(PGconn *c, const char *sql, const struct gl_hookstore_probe *p, size_t n, int with_b,
		       int64_t now_s, int64_t lo_s, PGresult **r, struct gl_err *err)
{
	struct gl_strbuf pk = GL_STRBUF_INIT, a = GL_STRBUF_INIT, b = GL_STRBUF_INIT, tag = GL_STRBUF_INIT;
	char now_txt[24], lo[24];
	int rc;
	for (size_t i = 0; i < n; i++) {
		gl_pgarray_add_i64(&pk, p[i].job_pk);
		gl_pgarray_add_i64(&a, p[i].a);
		gl_pgarray_add_i64(&b, p[i].b);
		gl_pgarray_add_i64(&tag, (int64_t)p[i].tag);
	}
	gl_pgarray_end(&pk);
	gl_pgarray_end(&a);
	gl_pgarray_end(&b);
	gl_pgarray_end(&tag);
	fmt_i64(now_txt, sizeof now_txt, now_s);
	fmt_i64(lo, sizeof lo, lo_s);
	if (with_b)
		rc = gl_db_query(c, sql, 4, (const char *[]){pk.p, a.p, b.p, tag.p}, r, err);
	else
		rc = gl_db_query(c, sql, 5, (const char *[]){pk.p, a.p, tag.p, now_txt, lo}, r, err);
	gl_strbuf_fini(&pk);
	gl_strbuf_fini(&a);
	gl_strbuf_fini(&b);
	gl_strbuf_fini(&tag);
	return rc;
}

/* Runs sql with the keys as arrays: $1 cluster_id[], $2 job_pk[], $3
 * tag[], then nextra more parameters. */
static int key_query(PGconn *c, const char *sql, const struct gl_hookstore_key *k, size_t n, const char *const *extra,
		     int nextra, PGresult **r, struct gl_err *err)
{
	struct gl_strbuf cid = GL_STRBUF_INIT, pk = GL_STRBUF_INIT, tag = GL_STRBUF_INIT;
	const char *pr[5];
	int rc;
	for (size_t i = 0; i < n; i++) {
		gl_pgarray_add_i64(&cid, k[i].cluster_id);
		gl_pgarray_add_i64(&pk, k[i].job_pk);
		gl_pgarray_add_i64(&tag, (int64_t)k[i].tag);
	}
	pr[0] = gl_pgarray_end(&cid);
	pr[1] = gl_pgarray_end(&pk);
	pr[2] = gl_pgarray_end(&tag);
	for (int i = 0; i < nextra && i < 2; i++)
		pr[3 + i] = extra[i];
	rc = gl_db_query(c, sql, 3 + nextra, pr, r, err);
	gl_strbuf_fini(&cid);
	gl_strbuf_fini(&pk);
	gl_strbuf_fini(&tag);
	return rc;
}

/* ---- the run lock ---- */

int gl_hookstore_try_lock(struct gl_store *st, int *locked, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char sql[96];
	PGresult *q = NULL;
	int rc;
	*locked = 0;
	snprintf(sql, sizeof sql, "SELECT pg_try_advisory_lock(%lld) AS locked", (long long)GL_HOOKSTORE_LOCK_KEY);
	if (!(rc = gl_db_query(c, sql, 0, NULL, &q, err)))
		rc = gl_pgrow_one_bool(q, "locked", locked, err);
	PQclear(q);
	return rc;
}

void gl_hookstore_unlock(struct gl_store *st)
{
	PGconn *c = gl_db_conn(st);
	struct gl_err e2 = {0};
	char sql[96];
	PGresult *u = NULL;
	snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%lld)", (long long)GL_HOOKSTORE_LOCK_KEY);
	(void)!gl_db_query(c, sql, 0, NULL, &u, &e2);
	PQclear(u);
}

int gl_hookstore_connected(struct gl_store *st)
{
	PGconn *c = gl_db_conn(st);
	return PQstatus(c) == CONNECTION_OK;
}

/* ---- the read phase ---- */

int gl_hookstore_read_begin(struct gl_store *st, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int rc;
	/* one snapshot; JIT compiles these short queries for longer than they
	 * run, and the sorts fit in memory */
	if ((rc = gl_db_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
		return rc;
	if ((rc = gl_db_exec(c, "SET LOCAL jit = off; SET LOCAL work_mem = '64MB'", err)))
		gl_hookstore_read_abort(st);
	return rc;
}

int gl_hookstore_read_end(struct gl_store *st, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	return gl_db_exec(c, "COMMIT", err);
}

void gl_hookstore_read_abort(struct gl_store *st)
{
	PGconn *c = gl_db_conn(st);
	struct gl_err e2 = {0};
	(void)!gl_db_exec(c, "ROLLBACK", &e2);
}

/* Running GPU jobs (jobs_running_idx). */
static const char jobs_sql[] =
	"SELECT j.job_pk, j.cluster_id, c.name AS cluster, c.kind, j.job_id, coalesce(j.name, '') AS name,"
	" coalesce(j.user_name, '') AS user_name, coalesce(j.account, '') AS account,"
	" coalesce(j.partition, '') AS partition, coalesce(j.qos, '') AS qos, coalesce(j.namespace, '') AS ns,"
	" coalesce(j.tags->'labels', '{}')::text AS labels, extract(epoch FROM j.start_at)::bigint AS start_s, " GL_ACCOUNTING_JOB_GPUS_SQL("j")
	" AS gpu_micro FROM jobs j JOIN clusters c USING (cluster_id)"
	" WHERE j.end_at IS NULL AND j.start_at IS NOT NULL AND j.gpu_milli > 0 AND j.start_at <= to_timestamp($1)"
	" ORDER BY j.cluster_id, j.job_pk";
struct job_row {
	int64_t job_pk, cluster_id, start_s, gpu_micro;
	char *cluster, *kind, *job_id, *name, *user_name, *account, *partition, *qos, *ns, *labels;
};
#define JR(t, m) GL_PGROW(struct job_row, t, m)
static const struct gl_pgrow_field job_fields[] = {
	JR(I64, job_pk), JR(I64, cluster_id), JR(STR, cluster), JR(STR, kind),      JR(STR, job_id),
	JR(STR, name),   JR(STR, user_name),  JR(STR, account), JR(STR, partition), JR(STR, qos),
	JR(STR, ns),     JR(STR, labels),     JR(I64, start_s), JR(I64, gpu_micro),
};
#undef JR

static void parse_labels(struct gl_hookstore_job *j, const char *json)
{
	cJSON *o = cJSON_Parse(json), *it;
	cJSON_ArrayForEach(it, o)
	{
		if (!cJSON_IsString(it) || !it->string)
			continue;
		j->labels = gl_xrealloc(j->labels, (j->nlabels + 1) * sizeof *j->labels);
		j->labels[j->nlabels] = gl_xmalloc(strlen(it->string) + strlen(it->valuestring) + 2);
		sprintf(j->labels[j->nlabels], "%s=%s", it->string, it->valuestring);
		j->nlabels++;
	}
	cJSON_Delete(o);
}

static void job_decode(const struct job_row *x, struct gl_hookstore_job *j)
{
	j->job_pk = x->job_pk;
	j->cluster_id = (int)x->cluster_id;
	j->cluster = dup_str(x->cluster);
	j->kind = dup_str(x->kind);
	j->job_id = dup_str(x->job_id);
	j->name = dup_str(x->name);
	j->user = dup_str(x->user_name);
	j->account = dup_str(x->account);
	j->partition = dup_str(x->partition);
	j->qos = dup_str(x->qos);
	j->ns = dup_str(x->ns);
	if (x->labels && strcmp(x->labels, "{}"))
		parse_labels(j, x->labels);
	j->start_s = x->start_s;
	j->gpu_micro = x->gpu_micro;
}

int gl_hookstore_running_jobs(struct gl_store *st, int64_t now_s, struct gl_hookstore_job_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char now_txt[24], *text = NULL;
	void *rows = NULL;
	size_t n = 0;
	int rc;
	memset(out, 0, sizeof *out);
	fmt_i64(now_txt, sizeof now_txt, now_s);
	if (!(rc = gl_pgrow_query(c, jobs_sql, 1, (const char *[]){now_txt}, job_fields, GL_ARRAY_LEN(job_fields),
				  sizeof(struct job_row), &rows, &n, &text, err))) {
		out->n = n;
		out->v = gl_xcalloc(n ? n : 1, sizeof *out->v);
		for (size_t i = 0; i < n; i++)
			job_decode((const struct job_row *)rows + i, &out->v[i]);
	}
	free(rows);
	free(text);
	return rc;
}

void gl_hookstore_job_list_fini(struct gl_hookstore_job_list *l)
{
	for (size_t i = 0; l->v && i < l->n; i++) {
		struct gl_hookstore_job *j = &l->v[i];
		free(j->cluster);
		free(j->kind);
		free(j->job_id);
		free(j->name);
		free(j->user);
		free(j->account);
		free(j->partition);
		free(j->qos);
		free(j->ns);
		for (size_t k = 0; k < j->nlabels; k++)
			free(j->labels[k]);
		free(j->labels);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}

void gl_hookstore_tag_list_fini(struct gl_hookstore_tag_list *l)
{
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* the tags (column i) of a probe's result */
struct tag_row {
	int64_t i;
};
static const struct gl_pgrow_field tag_fields[] = {GL_PGROW(struct tag_row, I64, i)};

static int tags_decode(const PGresult *r, struct gl_hookstore_tag_list *out, struct gl_err *err)
{
	void *rows = NULL;
	char *text = NULL;
	size_t n = 0;
	int rc =
		gl_pgrow_decode(r, tag_fields, GL_ARRAY_LEN(tag_fields), sizeof(struct tag_row), &rows, &n, &text, err);
	if (!rc) {
		out->n = n;
		out->v = gl_xcalloc(n ? n : 1, sizeof *out->v);
		for (size_t i = 0; i < n; i++)
			out->v[i] = (size_t)((const struct tag_row *)rows)[i].i;
	}
	free(rows);
	free(text);
	return rc;
}

/* Jobs busy (for the ingest) in [since, now): one probe of the busy index each. */
static const char recent_busy_sql[] =
	"SELECT x.i FROM unnest($1::bigint[], $2::bigint[], $3::integer[]) AS x(job_pk, since, i)"
	" WHERE EXISTS (SELECT 1 FROM gpu_usage_jobs u WHERE u.job_pk = x.job_pk AND u.busy_samples > 0"
	"  AND u.bucket >= to_timestamp(x.since) AND u.bucket < to_timestamp($4) AND u.bucket >= to_timestamp($5))";

int gl_hookstore_recent_busy(struct gl_store *st, const struct gl_hookstore_probe *p, size_t n, int64_t now_s, int64_t lo_s,
			     struct gl_hookstore_tag_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	if (!(rc = probe_query(c, recent_busy_sql, p, n, 0, now_s, lo_s, &r, err)))
		rc = tags_decode(r, out, err);
	PQclear(r);
	return rc;
}

/* Fixed rule: was the job busy before its look-back window (busy index)? */
static const char busy_before_sql[] =
	"SELECT x.i FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::integer[]) AS x(job_pk, a, b, i)"
	" WHERE EXISTS (SELECT 1 FROM gpu_usage_jobs u WHERE u.job_pk = x.job_pk AND u.busy_samples > 0"
	"  AND u.bucket >= to_timestamp(x.a) AND u.bucket < to_timestamp(x.b))";

int gl_hookstore_busy_between(struct gl_store *st, const struct gl_hookstore_probe *p, size_t n,
			      struct gl_hookstore_tag_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	if (!(rc = probe_query(c, busy_before_sql, p, n, 1, 0, 0, &r, err)))
		rc = tags_decode(r, out, err);
	PQclear(r);
	return rc;
}

/* Each job's GPU-buckets since its look-back start, from the per-job index
 * of gpu_usage_jobs and the primary key of gpu_usage. $5, the earliest
 * look-back start, is a constant so the planner prunes the day partitions
 * (the per-row bounds alone leave a month of partitions in the plan). */
static const char buckets_sql[] =
	"SELECT x.i, u.gpu_id, extract(epoch FROM u.bucket)::bigint AS bucket_start_s, g.bucket_s, u.samples,"
	" u.busy_samples, u.nodata_samples, g.engine_samples, g.active_sum, coalesce(g.fb_used_max_mib, -1) AS fb_mib,"
	" coalesce(g.power_max_w, -1) AS power_w, u.attribution,"
	" coalesce(extract(epoch FROM g.last_sample_at)::bigint, 0) AS last_sample_s"
	" FROM unnest($1::bigint[], $2::bigint[], $3::integer[]) AS x(job_pk, f, i)"
	" JOIN gpu_usage_jobs u ON u.job_pk = x.job_pk AND u.bucket > to_timestamp(x.f)"
	"  AND u.bucket < to_timestamp($4) AND u.bucket > to_timestamp($5)"
	" JOIN gpu_usage g ON g.gpu_id = u.gpu_id AND g.bucket = u.bucket"
	"  AND g.bucket < to_timestamp($4) AND g.bucket > to_timestamp($5)"
	" ORDER BY x.i, u.gpu_id, u.bucket";
struct bucket_row {
	int64_t i, gpu_id, bucket_start_s, bucket_s, samples, busy_samples, nodata_samples, engine_samples,
		last_sample_s;
	double active_sum, fb_mib, power_w;
	char *attribution;
};
#define BR(t, m) GL_PGROW(struct bucket_row, t, m)
static const struct gl_pgrow_field bucket_fields[] = {
	BR(I64, i),
	BR(I64, gpu_id),
	BR(I64, bucket_start_s),
	BR(I64, bucket_s),
	BR(I64, samples),
	BR(I64, busy_samples),
	BR(I64, nodata_samples),
	BR(I64, engine_samples),
	BR(F64, active_sum),
	BR(F64, fb_mib),
	BR(F64, power_w),
	BR(STR, attribution),
	BR(I64, last_sample_s),
};
#undef BR

static void bucket_decode(const struct bucket_row *x, struct gl_hookstore_bucket *b)
{
	int eng = (int)x->engine_samples;
	b->tag = (size_t)x->i;
	b->gpu_id = x->gpu_id;
	b->obs = (struct gl_idlerule_obs){x->bucket_start_s,
				      x->bucket_s,
				      (int)x->samples,
				      (int)x->busy_samples,
				      (int)x->nodata_samples,
				      eng > 0 ? x->active_sum / eng : -1,
				      -1,
				      x->fb_mib,
				      x->power_w};
	b->last_sample_s = x->last_sample_s;
	b->estimated = x->attribution && !strcmp(x->attribution, "node-estimated");
}

int gl_hookstore_buckets(struct gl_store *st, const struct gl_hookstore_probe *p, size_t n, int64_t now_s, int64_t lo_s,
			 struct gl_hookstore_bucket_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	void *rows = NULL;
	char *text = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	if (!(rc = probe_query(c, buckets_sql, p, n, 0, now_s, lo_s, &r, err)) &&
	    !(rc = gl_pgrow_decode(r, bucket_fields, GL_ARRAY_LEN(bucket_fields), sizeof(struct bucket_row), &rows,
				   &out->n, &text, err))) {
		out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
		for (size_t i = 0; i < out->n; i++)
			bucket_decode((const struct bucket_row *)rows + i, &out->v[i]);
	}
	PQclear(r);
	free(rows);
	free(text);
	return rc;
}

void gl_hookstore_bucket_list_fini(struct gl_hookstore_bucket_list *l)
{
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* Owner at the job's start, for reported jobs. */
static const char owner_sql[] =
	"SELECT x.i, coalesce(ow.team, '__unallocated__') AS team"
	" FROM unnest($1::integer[], $2::bigint[], $3::integer[]) AS x(cid, job_pk, i)"
	" JOIN jobs jb ON jb.cluster_id = x.cid AND jb.job_pk = x.job_pk JOIN clusters c ON c.cluster_id = jb.cluster_id"
	" LEFT JOIN LATERAL gl_owner(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"  jb.tags, jb.start_at) ow ON true";
struct owner_row {
	int64_t i;
	char *team;
};
static const struct gl_pgrow_field owner_fields[] = {GL_PGROW(struct owner_row, I64, i),
						     GL_PGROW(struct owner_row, STR, team)};

int gl_hookstore_owners(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, struct gl_hookstore_owner_list *out,
			struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	void *rows = NULL;
	char *text = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	if (!(rc = key_query(c, owner_sql, k, n, NULL, 0, &r, err)) &&
	    !(rc = gl_pgrow_decode(r, owner_fields, GL_ARRAY_LEN(owner_fields), sizeof(struct owner_row), &rows,
				   &out->n, &text, err))) {
		out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
		for (size_t i = 0; i < out->n; i++) {
			const struct owner_row *x = (const struct owner_row *)rows + i;
			out->v[i].tag = (size_t)x->i;
			out->v[i].team = dup_str(x->team);
		}
	}
	PQclear(r);
	free(rows);
	free(text);
	return rc;
}

void gl_hookstore_owner_list_fini(struct gl_hookstore_owner_list *l)
{
	for (size_t i = 0; l->v && i < l->n; i++)
		free(l->v[i].team);
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* The rates of each reported job's GPU model (the rate rule, gl_rates_of:
 * sql/033) in force at some time of [$4, $5), the look-back: its idle time is priced
 * across them, as chargeback and /v1/idle price across a rate change. */
static const char rates_sql[] =
	"SELECT x.i, CASE WHEN isfinite(r.valid_from) THEN (extract(epoch FROM r.valid_from) * 1000000)::bigint END"
	" AS from_us, CASE WHEN isfinite(r.valid_to) THEN (extract(epoch FROM r.valid_to) * 1000000)::bigint END AS to_us,"
	" r.micros_per_gpu_hour"
	" FROM unnest($1::integer[], $2::bigint[], $3::integer[]) AS x(cid, job_pk, i)"
	" JOIN jobs jb ON jb.cluster_id = x.cid AND jb.job_pk = x.job_pk"
	" JOIN LATERAL gl_rates_of(" GL_ACCOUNTING_JOB_MODEL_SQL("jb") ") r"
	" ON r.valid_to > to_timestamp($4) AND r.valid_from < to_timestamp($5)"
	" ORDER BY x.i, r.valid_from";
struct rate_row {
	int64_t i, from_us, to_us, micros_per_gpu_hour;
	int from_null, to_null; /* open-ended: -infinity, infinity */
};
static const struct gl_pgrow_field rate_fields[] = {
	GL_PGROW(struct rate_row, I64, i),
	GL_PGROW_N(struct rate_row, I64, from_us, from_null),
	GL_PGROW_N(struct rate_row, I64, to_us, to_null),
	GL_PGROW(struct rate_row, I64, micros_per_gpu_hour),
};

static void rate_decode(const struct rate_row *x, struct gl_hookstore_rate *o)
{
	o->tag = (size_t)x->i;
	o->rate.from_us = x->from_null ? INT64_MIN : x->from_us;
	o->rate.to_us = x->to_null ? INT64_MAX : x->to_us;
	o->rate.micros_per_gpu_hour = x->micros_per_gpu_hour;
}

int gl_hookstore_rates(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, int64_t from_s, int64_t to_s,
		       struct gl_hookstore_rate_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char lo[24], hi[24];
	PGresult *r = NULL;
	void *rows = NULL;
	char *text = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	fmt_i64(lo, sizeof lo, from_s);
	fmt_i64(hi, sizeof hi, to_s);
	if (!(rc = key_query(c, rates_sql, k, n, (const char *[]){lo, hi}, 2, &r, err)) &&
	    !(rc = gl_pgrow_decode(r, rate_fields, GL_ARRAY_LEN(rate_fields), sizeof(struct rate_row), &rows, &out->n,
				   &text, err))) {
		out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
		for (size_t i = 0; i < out->n; i++)
			rate_decode((const struct rate_row *)rows + i, &out->v[i]);
	}
	PQclear(r);
	free(rows);
	free(text);
	return rc;
}

void gl_hookstore_rate_list_fini(struct gl_hookstore_rate_list *l)
{
	free(l->v);
	memset(l, 0, sizeof *l);
}

static const char stages_sql[] =
	"SELECT x.i, s.stage, s.status FROM unnest($1::integer[], $2::bigint[], $3::integer[]) AS x(cid, job_pk, i)"
	" JOIN hook_stages s ON s.cluster_id = x.cid AND s.job_pk = x.job_pk";
struct stage_row {
	int64_t i;
	char *stage, *status;
};
static const struct gl_pgrow_field stage_fields[] = {GL_PGROW(struct stage_row, I64, i),
						     GL_PGROW(struct stage_row, STR, stage),
						     GL_PGROW(struct stage_row, STR, status)};

int gl_hookstore_stages(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, struct gl_hookstore_stage_list *out,
			struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	void *rows = NULL;
	char *text = NULL;
	size_t nrows = 0;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	if (!(rc = key_query(c, stages_sql, k, n, NULL, 0, &r, err)) &&
	    !(rc = gl_pgrow_decode(r, stage_fields, GL_ARRAY_LEN(stage_fields), sizeof(struct stage_row), &rows, &nrows,
				   &text, err))) {
		out->v = gl_xcalloc(nrows + 1, sizeof *out->v);
		for (size_t i = 0; i < nrows; i++) {
			const struct stage_row *x = (const struct stage_row *)rows + i;
			struct gl_hookstore_stage *s = &out->v[out->n];
			if (!x->stage || gl_idlerule_stage_parse(x->stage, &s->stage))
				continue;
			s->tag = (size_t)x->i;
			s->done = x->status && !strcmp(x->status, "done");
			out->n++;
		}
	}
	PQclear(r);
	free(rows);
	free(text);
	return rc;
}

void gl_hookstore_stage_list_fini(struct gl_hookstore_stage_list *l)
{
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* ---- writing ---- */

static void rollback(PGconn *c)
{
	struct gl_err e2 = {0};
	(void)!gl_db_exec(c, "ROLLBACK", &e2);
}

static int action_rows(PGconn *c, const struct gl_hookstore_action *a, struct gl_err *err)
{
	struct gl_strbuf argv_lit = GL_STRBUF_INIT;
	char status_s[16], idle_s[24], igs[24], cost_s[24], cid[16], jpk[24];
	int rc;
	snprintf(status_s, sizeof status_s, "%d", a->status);
	fmt_i64(idle_s, sizeof idle_s, a->idle_s);
	fmt_i64(igs, sizeof igs, a->idle_gpu_s);
	fmt_i64(cost_s, sizeof cost_s, a->cost_micros);
	snprintf(cid, sizeof cid, "%d", a->cluster_id);
	fmt_i64(jpk, sizeof jpk, a->job_pk);
	gl_pgarray_texts(&argv_lit, a->argv, argv_count(a->argv));
	{
		const char *pr[] = {cid, jpk, a->stage, a->policy, a->ok ? "done" : "failed",
				    a->have_status ? status_s : NULL, a->ok ? NULL : a->stderr_text};
		rc = gl_db_query(c,
				 "INSERT INTO hook_stages (cluster_id, job_pk, stage, policy, status, attempts, exit_status, error)"
				 " VALUES ($1, $2, $3, $4, $5, 1, $6, $7) ON CONFLICT (cluster_id, job_pk, stage) DO UPDATE SET"
				 " status = EXCLUDED.status, attempts = hook_stages.attempts + 1, last_at = now(),"
				 " exit_status = EXCLUDED.exit_status, error = EXCLUDED.error, policy = EXCLUDED.policy",
				 7, pr, NULL, err);
	}
	if (!rc) {
		const char *pr[] = {cid, a->cluster, jpk, a->job_id, a->owner, a->policy, a->stage, argv_lit.p,
				    a->have_status ? status_s : NULL, a->ok ? "true" : "false", a->stderr_text, a->actor,
				    idle_s, igs, a->cost_micros >= 0 ? cost_s : NULL};
		rc = gl_db_query(c,
				 "INSERT INTO hook_actions (cluster_id, cluster, job_pk, job_id, owner, policy, stage, argv,"
				 " exit_status, ok, stderr, source, actor, idle_s, idle_gpu_s, cost_micros)"
				 " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'hook', $12, $13, $14, $15)",
				 15, pr, NULL, err);
	}
	gl_strbuf_fini(&argv_lit);
	return rc;
}

int gl_hookstore_action_record(struct gl_store *st, const struct gl_hookstore_action *a, const char *audit_action,
			       const char *object, const char *audit_detail, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int rc;
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		return rc;
	if ((rc = action_rows(c, a, err)) ||
	    (rc = gl_audit_append(gl_db_store(c), a->actor, NULL, audit_action, object, a->ok ? "ok" : "error", audit_detail, err))) {
		rollback(c);
		return rc;
	}
	return gl_db_exec(c, "COMMIT", err);
}

/* What the external action's INSERT returns. */
struct ext_row {
	int64_t action_id, at_s, cluster_id, job_pk;
	int cluster_null, job_null; /* the job is not known here */
};
static const struct gl_pgrow_field ext_fields[] = {
	GL_PGROW(struct ext_row, I64, action_id),
	GL_PGROW(struct ext_row, I64, at_s),
	GL_PGROW_N(struct ext_row, I64, cluster_id, cluster_null),
	GL_PGROW_N(struct ext_row, I64, job_pk, job_null),
};

/* The external action's row; *x gets what its INSERT returned. */
static int external_row(PGconn *c, const struct gl_hookstore_external *a, struct ext_row *x, struct gl_err *err)
{
	struct gl_strbuf argv_lit = GL_STRBUF_INIT;
	char status_s[16], *text = NULL;
	void *rows = NULL;
	size_t n = 0;
	int rc;
	snprintf(status_s, sizeof status_s, "%d", a->status);
	gl_pgarray_texts(&argv_lit, a->argv, argv_count(a->argv));
	{
		const char *pr[] = {a->cluster, a->job_id, a->owner, a->policy, a->stage, argv_lit.p,
				    a->have_status ? status_s : NULL, a->ok ? "true" : "false", a->actor};
		/* the job, when known: the running attempt of that id first */
		rc = gl_pgrow_query(
			c,
			"WITH j AS (SELECT jb.cluster_id, jb.job_pk FROM jobs jb JOIN clusters cl USING (cluster_id)"
			"  WHERE cl.name = $1 AND jb.job_id = $2 ORDER BY (jb.end_at IS NULL) DESC, jb.start_at DESC NULLS LAST LIMIT 1)"
			" INSERT INTO hook_actions (cluster_id, cluster, job_pk, job_id, owner, policy, stage, argv,"
			" exit_status, ok, source, actor)"
			" SELECT (SELECT cluster_id FROM j), $1, (SELECT job_pk FROM j), $2, $3, $4, $5, $6::text[], $7::integer,"
			" $8::boolean, 'api', $9"
			" RETURNING action_id, extract(epoch FROM at)::bigint AS at_s, cluster_id, job_pk",
			9, pr, ext_fields, GL_ARRAY_LEN(ext_fields), sizeof *x, &rows, &n, &text, err);
	}
	if (!rc && n == 1)
		*x = *(const struct ext_row *)rows;
	else if (!rc)
		rc = gl_err_set(err, GL_EINTERNAL, "hook_actions: the INSERT returned %zu rows", n);
	free(rows);
	free(text);
	gl_strbuf_fini(&argv_lit);
	return rc;
}

/* done elsewhere: the hook must not repeat it */
static int external_stage(PGconn *c, const struct gl_hookstore_external *a, const struct ext_row *x, struct gl_err *err)
{
	char status_s[16], cid[24], pk[24];
	const char *pr[] = {cid, pk, a->stage, a->policy, a->have_status ? status_s : NULL};
	fmt_i64(cid, sizeof cid, x->cluster_id);
	fmt_i64(pk, sizeof pk, x->job_pk);
	snprintf(status_s, sizeof status_s, "%d", a->status);
	return gl_db_query(c,
			   "INSERT INTO hook_stages (cluster_id, job_pk, stage, policy, status, attempts, exit_status)"
			   " VALUES ($1, $2, $3, $4, 'done', 1, $5) ON CONFLICT (cluster_id, job_pk, stage) DO UPDATE SET"
			   " status = 'done', attempts = hook_stages.attempts + 1, last_at = now(), exit_status = EXCLUDED.exit_status,"
			   " error = NULL",
			   5, pr, NULL, err);
}

int gl_hookstore_external_record(struct gl_store *st, const struct gl_hookstore_external *a, const char *object,
				 const char *audit_detail, struct gl_hookstore_recorded *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct ext_row x = {0};
	int rc;
	memset(out, 0, sizeof *out);
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		return rc;
	if ((rc = external_row(c, a, &x, err)) ||
	    (a->ok && !x.cluster_null && !x.job_null && (rc = external_stage(c, a, &x, err))) ||
	    (rc = gl_audit_append(gl_db_store(c), a->actor, NULL, "hook.record", object, a->ok ? "ok" : "error",
				  audit_detail, err))) {
		rollback(c);
		return rc;
	}
	if ((rc = gl_db_exec(c, "COMMIT", err)))
		return rc;
	out->action_id = x.action_id;
	out->at_s = x.at_s;
	out->job_known = !x.job_null;
	return 0;
}

/* ---- the list ---- */

static const char actions_sql[] =
	"SELECT extract(epoch FROM at)::bigint AS at_s, cluster, job_id, nullif(owner, '') AS owner, policy, stage,"
	" array_to_string(argv, ' ') AS command, array_to_json(argv)::text AS argv_json, exit_status, ok, source, actor,"
	" coalesce(stderr, '') AS stderr_text"
	" FROM hook_actions WHERE at >= to_timestamp($1) AND at < to_timestamp($2)"
	" ORDER BY at DESC, action_id DESC LIMIT $3";
struct listed_row {
	int64_t at_s, exit_status;
	int status_null, ok;
	char *cluster, *job_id, *owner, *policy, *stage, *command, *argv_json, *source, *actor, *stderr_text;
};
#define LR(t, m) GL_PGROW(struct listed_row, t, m)
static const struct gl_pgrow_field listed_fields[] = {
	LR(I64, at_s),        LR(STR, cluster),   LR(STR, job_id),
	LR(STR, owner),       LR(STR, policy),    LR(STR, stage),
	LR(STR, command),     LR(STR, argv_json), GL_PGROW_N(struct listed_row, I64, exit_status, status_null),
	LR(BOOL, ok),         LR(STR, source),    LR(STR, actor),
	LR(STR, stderr_text),
};
#undef LR

static void listed_decode(const struct listed_row *x, struct gl_hookstore_listed *o)
{
	o->at_s = x->at_s;
	o->cluster = dup_str(x->cluster);
	o->job_id = dup_str(x->job_id);
	o->owner = x->owner ? gl_xstrdup(x->owner) : NULL;
	o->policy = dup_str(x->policy);
	o->stage = dup_str(x->stage);
	o->command = dup_str(x->command);
	o->argv_json = dup_str(x->argv_json);
	o->have_status = !x->status_null;
	o->status = o->have_status ? (int)x->exit_status : 0;
	o->ok = x->ok;
	o->source = dup_str(x->source);
	o->actor = dup_str(x->actor);
	o->stderr_text = dup_str(x->stderr_text);
}

int gl_hookstore_actions(struct gl_store *st, int64_t from_s, int64_t to_s, long limit, struct gl_hookstore_listed_list *out,
			 struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char a[24], b[24], l[24], *text = NULL;
	void *rows = NULL;
	size_t n = 0;
	int rc;
	memset(out, 0, sizeof *out);
	fmt_i64(a, sizeof a, from_s);
	fmt_i64(b, sizeof b, to_s);
	snprintf(l, sizeof l, "%ld", limit);
	if (!(rc = gl_pgrow_query(c, actions_sql, 3, (const char *[]){a, b, l}, listed_fields,
				  GL_ARRAY_LEN(listed_fields), sizeof(struct listed_row), &rows, &n, &text, err))) {
		out->n = n;
		out->v = gl_xcalloc(n ? n : 1, sizeof *out->v);
		for (size_t i = 0; i < n; i++)
			listed_decode((const struct listed_row *)rows + i, &out->v[i]);
	}
	free(rows);
	free(text);
	return rc;
}

void gl_hookstore_listed_list_fini(struct gl_hookstore_listed_list *l)
{
	for (size_t i = 0; l->v && i < l->n; i++) {
		struct gl_hookstore_listed *o = &l->v[i];
		free(o->cluster);
		free(o->job_id);
		free(o->owner);
		free(o->policy);
		free(o->stage);
		free(o->command);
		free(o->argv_json);
		free(o->source);
		free(o->actor);
		free(o->stderr_text);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}
