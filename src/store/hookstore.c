/* The idle hook's queries (see include/gl/hookstore.h, docs/hook.md). */
#include "gl/hookstore.h"
#include "gl/accounting.h"
#include "gl/audit.h"
#include "db_int.h"
#include "gl/pgarray.h"
#include "gl/strbuf.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static int64_t col_i64(const PGresult *r, int row, int col)
{
	return atoll(PQgetvalue(r, row, col));
}

static char *col_dup(const PGresult *r, int row, int col)
{
	return gl_xstrdup(PQgetvalue(r, row, col));
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
	snprintf(sql, sizeof sql, "SELECT pg_try_advisory_lock(%lld)", (long long)GL_HOOK_LOCK_KEY);
	if ((rc = gl_db_query(c, sql, 0, NULL, &q, err)))
		return rc;
	*locked = PQgetvalue(q, 0, 0)[0] == 't';
	PQclear(q);
	return 0;
}

void gl_hookstore_unlock(struct gl_store *st)
{
	PGconn *c = gl_db_conn(st);
	struct gl_err e2 = {0};
	char sql[96];
	PGresult *u = NULL;
	snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%lld)", (long long)GL_HOOK_LOCK_KEY);
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
	"SELECT j.job_pk, j.cluster_id, c.name, c.kind, j.job_id, coalesce(j.name, ''), coalesce(j.user_name, ''),"
	" coalesce(j.account, ''), coalesce(j.partition, ''), coalesce(j.qos, ''), coalesce(j.namespace, ''),"
	" coalesce(j.tags->'labels', '{}')::text, extract(epoch FROM j.start_at)::bigint, " GL_JOB_GPUS_SQL("j")
	" FROM jobs j JOIN clusters c USING (cluster_id)"
	" WHERE j.end_at IS NULL AND j.start_at IS NOT NULL AND j.gpu_milli > 0 AND j.start_at <= to_timestamp($1)"
	" ORDER BY j.cluster_id, j.job_pk";
enum { JC_PK, JC_CID, JC_CLUSTER, JC_KIND, JC_JOB_ID, JC_NAME, JC_USER, JC_ACCOUNT, JC_PARTITION, JC_QOS, JC_NS,
       JC_LABELS, JC_START, JC_GPU_MICRO };

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

static void job_decode(const PGresult *r, int i, struct gl_hookstore_job *j)
{
	j->job_pk = col_i64(r, i, JC_PK);
	j->cluster_id = atoi(PQgetvalue(r, i, JC_CID));
	j->cluster = col_dup(r, i, JC_CLUSTER);
	j->kind = col_dup(r, i, JC_KIND);
	j->job_id = col_dup(r, i, JC_JOB_ID);
	j->name = col_dup(r, i, JC_NAME);
	j->user = col_dup(r, i, JC_USER);
	j->account = col_dup(r, i, JC_ACCOUNT);
	j->partition = col_dup(r, i, JC_PARTITION);
	j->qos = col_dup(r, i, JC_QOS);
	j->ns = col_dup(r, i, JC_NS);
	if (strcmp(PQgetvalue(r, i, JC_LABELS), "{}"))
		parse_labels(j, PQgetvalue(r, i, JC_LABELS));
	j->start_s = col_i64(r, i, JC_START);
	j->gpu_micro = col_i64(r, i, JC_GPU_MICRO);
}

int gl_hookstore_running_jobs(struct gl_store *st, int64_t now_s, struct gl_hookstore_job_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char now_txt[24];
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	fmt_i64(now_txt, sizeof now_txt, now_s);
	if ((rc = gl_db_query(c, jobs_sql, 1, (const char *[]){now_txt}, &r, err)))
		return rc;
	out->n = (size_t)PQntuples(r);
	out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
	for (size_t i = 0; i < out->n; i++)
		job_decode(r, (int)i, &out->v[i]);
	PQclear(r);
	return 0;
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

/* the tags of a one-column result */
static void tags_decode(const PGresult *r, struct gl_hookstore_tag_list *out)
{
	out->n = (size_t)PQntuples(r);
	out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
	for (size_t i = 0; i < out->n; i++)
		out->v[i] = (size_t)col_i64(r, (int)i, 0);
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
		tags_decode(r, out);
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
		tags_decode(r, out);
	PQclear(r);
	return rc;
}

/* Each job's GPU-buckets since its look-back start, from the per-job index
 * of gpu_usage_jobs and the primary key of gpu_usage. $5, the earliest
 * look-back start, is a constant so the planner prunes the day partitions
 * (the per-row bounds alone leave a month of partitions in the plan). */
static const char buckets_sql[] =
	"SELECT x.i, u.gpu_id, extract(epoch FROM u.bucket)::bigint, g.bucket_s, u.samples, u.busy_samples,"
	" u.nodata_samples, g.engine_samples, g.active_sum, coalesce(g.fb_used_max_mib, -1), coalesce(g.power_max_w, -1),"
	" u.attribution, coalesce(extract(epoch FROM g.last_sample_at)::bigint, 0)"
	" FROM unnest($1::bigint[], $2::bigint[], $3::integer[]) AS x(job_pk, f, i)"
	" JOIN gpu_usage_jobs u ON u.job_pk = x.job_pk AND u.bucket > to_timestamp(x.f)"
	"  AND u.bucket < to_timestamp($4) AND u.bucket > to_timestamp($5)"
	" JOIN gpu_usage g ON g.gpu_id = u.gpu_id AND g.bucket = u.bucket"
	"  AND g.bucket < to_timestamp($4) AND g.bucket > to_timestamp($5)"
	" ORDER BY x.i, u.gpu_id, u.bucket";
enum { BC_TAG, BC_GPU, BC_BUCKET, BC_BUCKET_S, BC_SAMPLES, BC_BUSY, BC_NODATA, BC_ENGINE_N, BC_ACTIVE_SUM, BC_FB,
       BC_POWER, BC_ATTRIBUTION, BC_LAST };

static void bucket_decode(const PGresult *r, int i, struct gl_hookstore_bucket *b)
{
	int eng = atoi(PQgetvalue(r, i, BC_ENGINE_N));
	b->tag = (size_t)col_i64(r, i, BC_TAG);
	b->gpu_id = col_i64(r, i, BC_GPU);
	b->obs = (struct gl_idle_obs){col_i64(r, i, BC_BUCKET),
				      col_i64(r, i, BC_BUCKET_S),
				      atoi(PQgetvalue(r, i, BC_SAMPLES)),
				      atoi(PQgetvalue(r, i, BC_BUSY)),
				      atoi(PQgetvalue(r, i, BC_NODATA)),
				      eng > 0 ? atof(PQgetvalue(r, i, BC_ACTIVE_SUM)) / eng : -1,
				      -1,
				      atof(PQgetvalue(r, i, BC_FB)),
				      atof(PQgetvalue(r, i, BC_POWER))};
	b->last_sample_s = col_i64(r, i, BC_LAST);
	b->estimated = !strcmp(PQgetvalue(r, i, BC_ATTRIBUTION), "node-estimated");
}

int gl_hookstore_buckets(struct gl_store *st, const struct gl_hookstore_probe *p, size_t n, int64_t now_s, int64_t lo_s,
			 struct gl_hookstore_bucket_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	if (!(rc = probe_query(c, buckets_sql, p, n, 0, now_s, lo_s, &r, err))) {
		out->n = (size_t)PQntuples(r);
		out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
		for (size_t i = 0; i < out->n; i++)
			bucket_decode(r, (int)i, &out->v[i]);
	}
	PQclear(r);
	return rc;
}

void gl_hookstore_bucket_list_fini(struct gl_hookstore_bucket_list *l)
{
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* Owner at the job's start, for reported jobs. */
static const char owner_sql[] =
	"SELECT x.i, coalesce(ow.team, '__unallocated__')"
	" FROM unnest($1::integer[], $2::bigint[], $3::integer[]) AS x(cid, job_pk, i)"
	" JOIN jobs jb ON jb.cluster_id = x.cid AND jb.job_pk = x.job_pk JOIN clusters c ON c.cluster_id = jb.cluster_id"
	" LEFT JOIN LATERAL gl_owner(c.name, jb.account, jb.user_name, jb.partition, jb.qos, jb.wckey, jb.namespace,"
	"  jb.tags, jb.start_at) ow ON true";
enum { OC_TAG, OC_TEAM };

int gl_hookstore_owners(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, struct gl_hookstore_owner_list *out,
			struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	if (!(rc = key_query(c, owner_sql, k, n, NULL, 0, &r, err))) {
		out->n = (size_t)PQntuples(r);
		out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
		for (size_t i = 0; i < out->n; i++) {
			out->v[i].tag = (size_t)col_i64(r, (int)i, OC_TAG);
			out->v[i].team = col_dup(r, (int)i, OC_TEAM);
		}
	}
	PQclear(r);
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
	"SELECT x.i, CASE WHEN isfinite(r.valid_from) THEN (extract(epoch FROM r.valid_from) * 1000000)::bigint END,"
	" CASE WHEN isfinite(r.valid_to) THEN (extract(epoch FROM r.valid_to) * 1000000)::bigint END,"
	" r.micros_per_gpu_hour"
	" FROM unnest($1::integer[], $2::bigint[], $3::integer[]) AS x(cid, job_pk, i)"
	" JOIN jobs jb ON jb.cluster_id = x.cid AND jb.job_pk = x.job_pk"
	" JOIN LATERAL gl_rates_of(" GL_JOB_MODEL_SQL("jb") ") r"
	" ON r.valid_to > to_timestamp($4) AND r.valid_from < to_timestamp($5)"
	" ORDER BY x.i, r.valid_from";
enum { RC_TAG, RC_FROM_US, RC_TO_US, RC_MICROS };

static void rate_decode(const PGresult *r, int i, struct gl_hookstore_rate *o)
{
	o->tag = (size_t)col_i64(r, i, RC_TAG);
	o->rate.from_us = PQgetisnull(r, i, RC_FROM_US) ? INT64_MIN : col_i64(r, i, RC_FROM_US);
	o->rate.to_us = PQgetisnull(r, i, RC_TO_US) ? INT64_MAX : col_i64(r, i, RC_TO_US);
	o->rate.micros_per_gpu_hour = col_i64(r, i, RC_MICROS);
}

int gl_hookstore_rates(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, int64_t from_s, int64_t to_s,
		       struct gl_hookstore_rate_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char lo[24], hi[24];
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	fmt_i64(lo, sizeof lo, from_s);
	fmt_i64(hi, sizeof hi, to_s);
	if (!(rc = key_query(c, rates_sql, k, n, (const char *[]){lo, hi}, 2, &r, err))) {
		out->n = (size_t)PQntuples(r);
		out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
		for (size_t i = 0; i < out->n; i++)
			rate_decode(r, (int)i, &out->v[i]);
	}
	PQclear(r);
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
enum { SC_TAG, SC_STAGE, SC_STATUS };

int gl_hookstore_stages(struct gl_store *st, const struct gl_hookstore_key *k, size_t n, struct gl_hookstore_stage_list *out,
			struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (!n)
		return 0;
	if (!(rc = key_query(c, stages_sql, k, n, NULL, 0, &r, err))) {
		out->v = gl_xcalloc((size_t)PQntuples(r) + 1, sizeof *out->v);
		for (int i = 0; i < PQntuples(r); i++) {
			struct gl_hookstore_stage *s = &out->v[out->n];
			if (gl_idle_stage_parse(PQgetvalue(r, i, SC_STAGE), &s->stage))
				continue;
			s->tag = (size_t)col_i64(r, i, SC_TAG);
			s->done = !strcmp(PQgetvalue(r, i, SC_STATUS), "done");
			out->n++;
		}
	}
	PQclear(r);
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

/* The external action's row; *q keeps its RETURNING row. */
static int external_row(PGconn *c, const struct gl_hookstore_external *a, PGresult **q, struct gl_err *err)
{
	struct gl_strbuf argv_lit = GL_STRBUF_INIT;
	char status_s[16];
	int rc;
	snprintf(status_s, sizeof status_s, "%d", a->status);
	gl_pgarray_texts(&argv_lit, a->argv, argv_count(a->argv));
	{
		const char *pr[] = {a->cluster, a->job_id, a->owner, a->policy, a->stage, argv_lit.p,
				    a->have_status ? status_s : NULL, a->ok ? "true" : "false", a->actor};
		/* the job, when known: the running attempt of that id first */
		rc = gl_db_query(c,
				 "WITH j AS (SELECT jb.cluster_id, jb.job_pk FROM jobs jb JOIN clusters cl USING (cluster_id)"
				 "  WHERE cl.name = $1 AND jb.job_id = $2 ORDER BY (jb.end_at IS NULL) DESC, jb.start_at DESC NULLS LAST LIMIT 1)"
				 " INSERT INTO hook_actions (cluster_id, cluster, job_pk, job_id, owner, policy, stage, argv,"
				 " exit_status, ok, source, actor)"
				 " SELECT (SELECT cluster_id FROM j), $1, (SELECT job_pk FROM j), $2, $3, $4, $5, $6::text[], $7::integer,"
				 " $8::boolean, 'api', $9"
				 " RETURNING action_id, extract(epoch FROM at)::bigint, cluster_id, job_pk",
				 9, pr, q, err);
	}
	gl_strbuf_fini(&argv_lit);
	return rc;
}
enum { XC_ACTION_ID, XC_AT, XC_CID, XC_PK };

/* done elsewhere: the hook must not repeat it */
static int external_stage(PGconn *c, const struct gl_hookstore_external *a, const PGresult *q, struct gl_err *err)
{
	char status_s[16];
	const char *pr[] = {PQgetvalue(q, 0, XC_CID), PQgetvalue(q, 0, XC_PK), a->stage, a->policy,
			    a->have_status ? status_s : NULL};
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
	PGresult *q = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		return rc;
	if ((rc = external_row(c, a, &q, err)) ||
	    (a->ok && !PQgetisnull(q, 0, XC_CID) && !PQgetisnull(q, 0, XC_PK) && (rc = external_stage(c, a, q, err))) ||
	    (rc = gl_audit_append(gl_db_store(c), a->actor, NULL, "hook.record", object, a->ok ? "ok" : "error", audit_detail, err))) {
		rollback(c);
		goto out;
	}
	if ((rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	out->action_id = col_i64(q, 0, XC_ACTION_ID);
	out->at_s = col_i64(q, 0, XC_AT);
	out->job_known = !PQgetisnull(q, 0, XC_PK);
out:
	PQclear(q);
	return rc;
}

/* ---- the list ---- */

static const char actions_sql[] =
	"SELECT extract(epoch FROM at)::bigint, cluster, job_id, nullif(owner, ''), policy, stage,"
	" array_to_string(argv, ' '), array_to_json(argv)::text, exit_status, ok, source, actor,"
	" coalesce(stderr, '')"
	" FROM hook_actions WHERE at >= to_timestamp($1) AND at < to_timestamp($2)"
	" ORDER BY at DESC, action_id DESC LIMIT $3";
enum { AC_AT, AC_CLUSTER, AC_JOB_ID, AC_OWNER, AC_POLICY, AC_STAGE, AC_COMMAND, AC_ARGV, AC_STATUS, AC_OK, AC_SOURCE,
       AC_ACTOR, AC_STDERR };

static void listed_decode(const PGresult *q, int r, struct gl_hookstore_listed *o)
{
	o->at_s = col_i64(q, r, AC_AT);
	o->cluster = col_dup(q, r, AC_CLUSTER);
	o->job_id = col_dup(q, r, AC_JOB_ID);
	o->owner = PQgetisnull(q, r, AC_OWNER) ? NULL : col_dup(q, r, AC_OWNER);
	o->policy = col_dup(q, r, AC_POLICY);
	o->stage = col_dup(q, r, AC_STAGE);
	o->command = col_dup(q, r, AC_COMMAND);
	o->argv_json = col_dup(q, r, AC_ARGV);
	o->have_status = !PQgetisnull(q, r, AC_STATUS);
	o->status = o->have_status ? atoi(PQgetvalue(q, r, AC_STATUS)) : 0;
	o->ok = PQgetvalue(q, r, AC_OK)[0] == 't';
	o->source = col_dup(q, r, AC_SOURCE);
	o->actor = col_dup(q, r, AC_ACTOR);
	o->stderr_text = col_dup(q, r, AC_STDERR);
}

int gl_hookstore_actions(struct gl_store *st, int64_t from_s, int64_t to_s, long limit, struct gl_hookstore_listed_list *out,
			 struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char a[24], b[24], l[24];
	PGresult *q = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	fmt_i64(a, sizeof a, from_s);
	fmt_i64(b, sizeof b, to_s);
	snprintf(l, sizeof l, "%ld", limit);
	if ((rc = gl_db_query(c, actions_sql, 3, (const char *[]){a, b, l}, &q, err)))
		return rc;
	out->n = (size_t)PQntuples(q);
	out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
	for (size_t i = 0; i < out->n; i++)
		listed_decode(q, (int)i, &out->v[i]);
	PQclear(q);
	return 0;
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
