/* The serving tables (see include/gl/servingdb.h). */
#include "gl/servingdb.h"
#include "gl/chargeback.h"
#include "db_int.h"
#include "gl/jobs.h"
#include "gl/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the batch ---------------------------------------------------------- */

struct gl_servingdb_batch *gl_servingdb_batch_new(int64_t at_s, int64_t bucket_s)
{
	struct gl_servingdb_batch *b = gl_xcalloc(1, sizeof *b);
	b->at_s = at_s;
	b->bucket_s = bucket_s > 0 ? bucket_s : 300;
	return b;
}

static char *dup0(const char *s)
{
	return s ? gl_xstrdup(s) : NULL;
}

void gl_servingdb_batch_free(struct gl_servingdb_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		struct gl_servingdb_row *r = &b->rows[i];
		free(r->endpoint);
		free(r->cluster);
		free(r->instance);
		free(r->model_name);
		free(r->family);
		free(r->le);
		free((char *)r->where.kind);
		free((char *)r->where.ns);
		free((char *)r->where.name);
	}
	free(b->rows);
	free(b);
}

struct gl_servingdb_row *gl_servingdb_batch_add(struct gl_servingdb_batch *b, const char *endpoint, const char *cluster,
						const char *instance, const struct gl_servemetrics_series *x,
						const struct gl_servingdb_where *where)
{
	struct gl_servingdb_row *r;
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 16;
		b->rows = gl_xrealloc(b->rows, b->cap * sizeof *b->rows);
	}
	r = &b->rows[b->n++];
	memset(r, 0, sizeof *r);
	r->endpoint = gl_xstrdup(endpoint);
	r->cluster = gl_xstrdup(cluster);
	r->instance = gl_xstrdup(instance);
	r->model_name = gl_xstrdup(x->model_name);
	r->family = gl_xstrdup(gl_servemetrics_family_name(x->family));
	r->nle = x->nle;
	r->le = gl_xcalloc(x->nle + 1, sizeof *r->le);
	memcpy(r->le, x->le, x->nle * sizeof *r->le);
	if (where) {
		r->where.kind = dup0(where->kind);
		r->where.ns = dup0(where->ns);
		r->where.name = dup0(where->name);
	}
	for (size_t k = 0; k < GL_SERVINGDB_NCTR + GL_SERVEMETRICS_MAX_LE; k++)
		r->cur[k] = r->hw[k] = NAN;
	for (int k = 0; k < GL_SERVEMETRICS__NCTR; k++)
		if (x->have >> k & 1u)
			r->cur[k] = x->v[k];
	for (size_t k = 0; k < x->nle; k++)
		r->cur[GL_SERVINGDB_NCTR + k] = x->cum[k];
	r->start_s = x->start_s;
	r->endpoint_prev_s = GL_TIME_NONE;
	r->job_start_s = GL_TIME_NONE;
	r->state_start_s = NAN;
	return r;
}

/* ---- literals ----------------------------------------------------------- */

/* A float8 as PostgreSQL reads it, NaN and infinities included. */
static void put_f8(struct gl_strbuf *b, double v)
{
	if (isnan(v))
		gl_strbuf_puts(b, "NaN");
	else if (isinf(v))
		gl_strbuf_puts(b, v > 0 ? "Infinity" : "-Infinity");
	else
		gl_strbuf_printf(b, "%.17g", v);
}

static void put_f8_array(struct gl_strbuf *b, const double *v, size_t n)
{
	gl_strbuf_putc(b, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			gl_strbuf_putc(b, ',');
		put_f8(b, v[i]);
	}
	gl_strbuf_putc(b, '}');
}

/* One element of a text[] literal: double-quoted, \ and " escaped; NULL
 * as NULL. */
static void put_elem(struct gl_strbuf *b, const char *s, int first)
{
	if (!first)
		gl_strbuf_putc(b, ',');
	if (!s) {
		gl_strbuf_puts(b, "NULL");
		return;
	}
	gl_strbuf_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			gl_strbuf_putc(b, '\\');
		gl_strbuf_putc(b, *s);
	}
	gl_strbuf_putc(b, '"');
}

/* ---- load ---------------------------------------------------------------- */

const char *gl_servingdb_cluster_kind(const char *where_kind)
{
	return where_kind && (!strcmp(where_kind, "job") || !strcmp(where_kind, "job_name")) ? "slurm" : "kubernetes";
}

int gl_servingdb_partitions(struct gl_store *store, int64_t at_s, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char at[24];
	snprintf(at, sizeof at, "%lld", (long long)at_s);
	return gl_db_query(c,
			   "SELECT gl_ensure_serving_partitions(to_timestamp($1::bigint),"
			   " to_timestamp($1::bigint) + interval '1 day')",
			   1, (const char *[]){at}, NULL, err);
}

int gl_servingdb_cluster_id(struct gl_store *store, const char *name, const char *kind, int *id, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	int rc = gl_db_query(c, "SELECT cluster_id FROM clusters WHERE name = $1", 1, (const char *[]){name}, &r, err);
	if (!rc && PQntuples(r))
		*id = atoi(PQgetvalue(r, 0, 0));
	else if (!rc)
		rc = gl_jobs_cluster_ensure(gl_db_store(c), name, kind, id, err);
	PQclear(r);
	return rc;
}

/* Every cluster of the batch: found, or made with the kind its rows
 * suggest (a serving source names a cluster; it need not have jobs yet). */
static int load_clusters(PGconn *c, struct gl_servingdb_batch *b, struct gl_err *err)
{
	int rc = 0;
	for (size_t i = 0; i < b->n; i++) {
		struct gl_servingdb_row *x = &b->rows[i];
		size_t j = 0;
		while (j < i && strcmp(b->rows[j].cluster, x->cluster))
			j++;
		if (j < i) {
			x->cluster_id = b->rows[j].cluster_id;
			continue;
		}
		if ((rc = gl_servingdb_cluster_id(gl_db_store(c), x->cluster, gl_servingdb_cluster_kind(x->where.kind),
						  &x->cluster_id, err)))
			break;
	}
	return rc;
}

static int load_endpoints(PGconn *c, struct gl_servingdb_batch *b, struct gl_err *err)
{
	struct gl_strbuf names = GL_STRBUF_INIT, cids = GL_STRBUF_INIT;
	PGresult *r = NULL;
	int rc;
	gl_strbuf_putc(&names, '{');
	gl_strbuf_putc(&cids, '{');
	for (size_t i = 0; i < b->n; i++) {
		put_elem(&names, b->rows[i].endpoint, i == 0);
		gl_strbuf_printf(&cids, "%s%d", i ? "," : "", b->rows[i].cluster_id);
	}
	gl_strbuf_putc(&names, '}');
	gl_strbuf_putc(&cids, '}');
	/* an endpoint keeps the cluster it was first seen in: its cost comes
	 * from the jobs its series ran on, whatever cluster they are in */
	if ((rc = gl_db_query(c,
			      "INSERT INTO serving_endpoints (name, cluster_id)"
			      " SELECT DISTINCT ON (n) n, cl FROM unnest($1::text[], $2::integer[]) AS x(n, cl)"
			      " ON CONFLICT (name) DO NOTHING",
			      2, (const char *[]){names.p, cids.p}, NULL, err)) ||
	    (rc = gl_db_query(c,
			      "SELECT x.k, e.endpoint_id, extract(epoch FROM e.last_scrape_at)::bigint"
			      " FROM unnest($1::text[]) WITH ORDINALITY AS x(n, k) JOIN serving_endpoints e ON e.name = x.n",
			      1, (const char *[]){names.p}, &r, err)))
		goto out;
	for (int i = 0; i < PQntuples(r); i++) {
		struct gl_servingdb_row *x = &b->rows[atoll(PQgetvalue(r, i, 0)) - 1];
		x->endpoint_id = atoll(PQgetvalue(r, i, 1));
		x->endpoint_prev_s = PQgetisnull(r, i, 2) ? GL_TIME_NONE : atoll(PQgetvalue(r, i, 2));
	}
out:
	PQclear(r);
	gl_strbuf_fini(&names);
	gl_strbuf_fini(&cids);
	return rc;
}

/* Parses a float8[] literal of at most max elements into out. */
static size_t parse_f8_array(const char *s, double *out, size_t max)
{
	size_t n = 0;
	if (*s == '{')
		s++;
	while (*s && *s != '}' && n < max) {
		char *end;
		if (!strncmp(s, "NaN", 3)) {
			out[n++] = NAN;
			end = (char *)s + 3;
		} else if (!strncmp(s, "Infinity", 8)) {
			out[n++] = INFINITY;
			end = (char *)s + 8;
		} else if (!strncmp(s, "-Infinity", 9)) {
			out[n++] = -INFINITY;
			end = (char *)s + 9;
		} else {
			out[n++] = strtod(s, &end);
			if (end == s)
				break;
		}
		s = end;
		if (*s == ',')
			s++;
	}
	return n;
}

static int load_series(PGconn *c, struct gl_servingdb_batch *b, struct gl_err *err)
{
	struct gl_strbuf ep = GL_STRBUF_INIT, inst = GL_STRBUF_INIT, model = GL_STRBUF_INIT, fam = GL_STRBUF_INIT,
			 le = GL_STRBUF_INIT, kind = GL_STRBUF_INIT, ns = GL_STRBUF_INIT, name = GL_STRBUF_INIT,
			 one = GL_STRBUF_INIT;
	struct gl_strbuf *lists[] = {&inst, &model, &fam, &le, &kind, &ns, &name};
	PGresult *r = NULL;
	char at[24];
	int rc;

	gl_strbuf_putc(&ep, '{');
	for (size_t k = 0; k < GL_ARRAY_LEN(lists); k++)
		gl_strbuf_putc(lists[k], '{');
	for (size_t i = 0; i < b->n; i++) {
		const struct gl_servingdb_row *x = &b->rows[i];
		gl_strbuf_printf(&ep, "%s%lld", i ? "," : "", (long long)x->endpoint_id);
		put_elem(&inst, x->instance, i == 0);
		put_elem(&model, x->model_name, i == 0);
		put_elem(&fam, x->family, i == 0);
		gl_strbuf_reset(&one);
		put_f8_array(&one, x->le, x->nle);
		put_elem(&le, gl_strbuf_cstr(&one), i == 0);
		put_elem(&kind, x->where.kind, i == 0);
		put_elem(&ns, x->where.ns, i == 0);
		put_elem(&name, x->where.name, i == 0);
	}
	gl_strbuf_putc(&ep, '}');
	for (size_t k = 0; k < GL_ARRAY_LEN(lists); k++)
		gl_strbuf_putc(lists[k], '}');
	snprintf(at, sizeof at, "%lld", (long long)b->at_s);
	{
		const char *p[] = {ep.p, inst.p, model.p, fam.p, le.p, kind.p, ns.p, name.p, at};
		if ((rc = gl_db_query(c,
				      "INSERT INTO serving_series (endpoint_id, instance, model_name, family, lat_le, first_at,"
				      " run_kind, run_ns, run_name)"
				      " SELECT e, i, m, f, l::float8[], to_timestamp($9), k, s, n"
				      " FROM unnest($1::integer[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],"
				      "  $7::text[], $8::text[]) AS x(e, i, m, f, l, k, s, n)"
				      " ON CONFLICT (endpoint_id, instance, model_name, family, lat_le) DO UPDATE"
				      "  SET run_kind = EXCLUDED.run_kind, run_ns = EXCLUDED.run_ns, run_name = EXCLUDED.run_name"
				      "  WHERE serving_series.run_kind IS DISTINCT FROM EXCLUDED.run_kind"
				      "   OR serving_series.run_ns IS DISTINCT FROM EXCLUDED.run_ns"
				      "   OR serving_series.run_name IS DISTINCT FROM EXCLUDED.run_name",
				      9, p, NULL, err)))
			goto out;
		/* the state is read and written by one round at a time: two
		 * rounds of one endpoint must not both count one rise */
		if ((rc = gl_db_query(c,
				      "SELECT x.k, s.series_id, extract(epoch FROM s.state_at)::bigint, s.state_start,"
				      " s.state_job_pk, s.state_hw"
				      " FROM unnest($1::integer[], $2::text[], $3::text[], $4::text[], $5::text[])"
				      "  WITH ORDINALITY AS x(e, i, m, f, l, k)"
				      " JOIN serving_series s ON s.endpoint_id = x.e AND s.instance = x.i AND s.model_name = x.m"
				      "  AND s.family = x.f AND s.lat_le = x.l::float8[]"
				      " ORDER BY s.series_id FOR UPDATE OF s",
				      5, p, &r, err)))
			goto out;
	}
	for (int i = 0; i < PQntuples(r); i++) {
		struct gl_servingdb_row *x = &b->rows[atoll(PQgetvalue(r, i, 0)) - 1];
		x->series_id = atoll(PQgetvalue(r, i, 1));
		x->have_state = !PQgetisnull(r, i, 2);
		if (!x->have_state)
			continue;
		x->state_at_s = atoll(PQgetvalue(r, i, 2));
		x->state_start_s = PQgetisnull(r, i, 3) ? NAN : atof(PQgetvalue(r, i, 3));
		x->state_job_pk = PQgetisnull(r, i, 4) ? 0 : atoll(PQgetvalue(r, i, 4));
		if (!PQgetisnull(r, i, 5))
			parse_f8_array(PQgetvalue(r, i, 5), x->hw, GL_SERVINGDB_NCTR + x->nle);
	}
out:
	PQclear(r);
	gl_strbuf_fini(&ep);
	gl_strbuf_fini(&one);
	for (size_t k = 0; k < GL_ARRAY_LEN(lists); k++)
		gl_strbuf_fini(lists[k]);
	return rc;
}

/* The job each row runs on at the batch's time, one query for the batch:
 * a pod by namespace and name, a Slurm job by id (the newest attempt
 * started by then), a job by name or pods by selector among those running
 * then (a selector that matches several pods names none: the scrape cannot
 * tell which of them it came from). A minute of clock skew either way is
 * allowed. */
static const char attrib_sql[] =
	"WITH q AS (SELECT * FROM unnest($1::integer[], $2::integer[], $3::text[], $4::text[], $5::text[])"
	"  AS q(k, cl, kind, ns, name)),"
	" m AS ("
	" SELECT q.k, j.job_pk, j.start_at, 1::bigint AS n FROM q JOIN jobs j ON j.cluster_id = q.cl AND j.job_id = q.name"
	"  AND j.start_at <= to_timestamp($6 + 60)"
	"  WHERE (q.kind = 'pod' AND j.namespace = q.ns) OR (q.kind = 'job' AND j.namespace IS NULL)"
	" UNION ALL"
	" SELECT q.k, j.job_pk, j.start_at, count(*) OVER (PARTITION BY q.k) FROM q JOIN jobs j ON j.cluster_id = q.cl"
	"  AND j.gpu_milli > 0 AND j.start_at <= to_timestamp($6 + 60)"
	"  AND (j.end_at IS NULL OR j.end_at >= to_timestamp($6 - 60))"
	"  WHERE (q.kind = 'job_name' AND j.name = q.name)"
	"   OR (q.kind = 'selector' AND j.namespace = q.ns AND (j.tags -> 'labels') @> q.name::jsonb)"
	")"
	" SELECT DISTINCT ON (k) k, job_pk, extract(epoch FROM start_at)::bigint, n FROM m ORDER BY k, start_at DESC";

/* A selector "k=v,k2=v2" as the JSON object the pods' labels must contain;
 * NULL (and a reason) when it is not one. */
static char *selector_json(const char *sel, char *why, size_t n)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	const char *p = sel;
	gl_strbuf_putc(&b, '{');
	while (*p) {
		const char *comma = strchr(p, ','), *eq = strchr(p, '=');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (!eq || eq >= p + len || eq == p) {
			snprintf(why, n, "selector '%s' is not k=v,k2=v2", sel);
			gl_strbuf_fini(&b);
			return NULL;
		}
		if (b.len > 1)
			gl_strbuf_putc(&b, ',');
		gl_strbuf_putc(&b, '"');
		gl_strbuf_put_json_str(&b, p, (size_t)(eq - p));
		gl_strbuf_puts(&b, "\":\"");
		gl_strbuf_put_json_str(&b, eq + 1, len - (size_t)(eq - p) - 1);
		gl_strbuf_putc(&b, '"');
		p += len + (comma ? 1 : 0);
	}
	gl_strbuf_putc(&b, '}');
	return gl_strbuf_steal(&b);
}

static void describe_where(const struct gl_servingdb_where *w, char *out, size_t n, const char *what)
{
	if (!strcmp(w->kind, "pod"))
		snprintf(out, n, "pod %s/%s %s", w->ns ? w->ns : "", w->name ? w->name : "", what);
	else if (!strcmp(w->kind, "job"))
		snprintf(out, n, "Slurm job %s %s", w->name ? w->name : "", what);
	else if (!strcmp(w->kind, "job_name"))
		snprintf(out, n, "no running job named %s %s", w->name ? w->name : "", what);
	else
		snprintf(out, n, "no running pod in %s with labels %s %s", w->ns ? w->ns : "", w->name ? w->name : "", what);
}

static int load_jobs(PGconn *c, struct gl_servingdb_batch *b, struct gl_err *err)
{
	struct gl_strbuf ks = GL_STRBUF_INIT, cl = GL_STRBUF_INIT, kind = GL_STRBUF_INIT, ns = GL_STRBUF_INIT,
			 name = GL_STRBUF_INIT;
	PGresult *r = NULL;
	char at[24];
	size_t nq = 0;
	int rc = 0;

	gl_strbuf_puts(&ks, "{");
	gl_strbuf_puts(&cl, "{");
	gl_strbuf_puts(&kind, "{");
	gl_strbuf_puts(&ns, "{");
	gl_strbuf_puts(&name, "{");
	for (size_t i = 0; i < b->n; i++) {
		struct gl_servingdb_row *x = &b->rows[i];
		char *sel = NULL;
		if (!x->where.kind) {
			snprintf(x->why_unattributed, sizeof x->why_unattributed,
				 "no pod or job named (neither by the source nor by the scrape's labels)");
			continue;
		}
		if (!strcmp(x->where.kind, "selector") &&
		    !(sel = selector_json(x->where.name ? x->where.name : "", x->why_unattributed,
					  sizeof x->why_unattributed)))
			continue;
		gl_strbuf_printf(&ks, "%s%zu", nq ? "," : "", i + 1);
		gl_strbuf_printf(&cl, "%s%d", nq ? "," : "", x->cluster_id);
		put_elem(&kind, x->where.kind, nq == 0);
		put_elem(&ns, x->where.ns, nq == 0);
		put_elem(&name, sel ? sel : x->where.name, nq == 0);
		free(sel);
		describe_where(&x->where, x->why_unattributed, sizeof x->why_unattributed, "is not in the ledger (yet)");
		nq++;
	}
	gl_strbuf_putc(&ks, '}');
	gl_strbuf_putc(&cl, '}');
	gl_strbuf_putc(&kind, '}');
	gl_strbuf_putc(&ns, '}');
	gl_strbuf_putc(&name, '}');
	if (!nq)
		goto out;
	snprintf(at, sizeof at, "%lld", (long long)b->at_s);
	if ((rc = gl_db_query(c, attrib_sql, 6, (const char *[]){ks.p, cl.p, kind.p, ns.p, name.p, at}, &r, err)))
		goto out;
	for (int i = 0; i < PQntuples(r); i++) {
		struct gl_servingdb_row *x = &b->rows[atoll(PQgetvalue(r, i, 0)) - 1];
		long long n = atoll(PQgetvalue(r, i, 3));
		if (n > 1) {
			snprintf(x->why_unattributed, sizeof x->why_unattributed,
				 "%lld running pods match %s in %s: scrape each pod, or scrape with its pod label", n,
				 x->where.name ? x->where.name : "", x->where.ns ? x->where.ns : "");
			continue;
		}
		x->job_pk = atoll(PQgetvalue(r, i, 1));
		x->job_start_s = atoll(PQgetvalue(r, i, 2));
		x->why_unattributed[0] = '\0';
	}
out:
	PQclear(r);
	gl_strbuf_fini(&ks);
	gl_strbuf_fini(&cl);
	gl_strbuf_fini(&kind);
	gl_strbuf_fini(&ns);
	gl_strbuf_fini(&name);
	return rc;
}

int gl_servingdb_load(struct gl_store *store, struct gl_servingdb_batch *b, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	int rc;
	if (!b->n)
		return 0;
	if ((rc = load_clusters(c, b, err)) || (rc = load_endpoints(c, b, err)) || (rc = load_series(c, b, err)) ||
	    (rc = load_jobs(c, b, err)))
		return rc;
	return 0;
}

/* ---- write -------------------------------------------------------------- */

static const char stage_sql[] =
	"CREATE TEMP TABLE serving_stage (series_id bigint, bucket_s bigint, job_pk bigint, cluster_id integer,"
	" endpoint_id integer, counted boolean, requests bigint, failed bigint, prompt_tokens bigint,"
	" generated_tokens bigint, inferences bigint, executions bigint, lat_inc bigint[], state_at_s bigint,"
	" state_start double precision, state_job_pk bigint, state_hw double precision[]) ON COMMIT DROP";

/* lat_inc of two rows added element by element (a series' layout is
 * fixed, so both have as many; a row of another length keeps the old) */
#define GL_ADD_LAT(t)                                                                                         \
	"lat_inc = CASE WHEN cardinality(" t ".lat_inc) = cardinality(EXCLUDED.lat_inc)"                    \
	" THEN ARRAY(SELECT a + b FROM unnest(" t ".lat_inc, EXCLUDED.lat_inc) WITH ORDINALITY AS z(a, b, o)" \
	" ORDER BY o) ELSE " t ".lat_inc END"

#define GL_ADD_COUNTS(t)                                                                                     \
	"requests = " t ".requests + EXCLUDED.requests, failed = " t ".failed + EXCLUDED.failed,"             \
	" prompt_tokens = " t ".prompt_tokens + EXCLUDED.prompt_tokens,"                                    \
	" generated_tokens = " t ".generated_tokens + EXCLUDED.generated_tokens,"                           \
	" inferences = " t ".inferences + EXCLUDED.inferences, executions = " t ".executions + EXCLUDED.executions," \
	" scrapes = " t ".scrapes + EXCLUDED.scrapes, " GL_ADD_LAT(t)

#define GL_USAGE_COLS \
	"requests, failed, prompt_tokens, generated_tokens, inferences, executions, lat_inc, scrapes"

static void stage_row(struct gl_strbuf *o, const struct gl_servingdb_batch *b, const struct gl_servingdb_row *x)
{
	int64_t bucket = b->at_s - ((b->at_s % b->bucket_s) + b->bucket_s) % b->bucket_s;
	gl_strbuf_printf(o, "%lld\t%lld\t%lld\t%d\t%lld\t%s", (long long)x->series_id, (long long)bucket,
			 (long long)x->job_pk, x->cluster_id, (long long)x->endpoint_id, x->counted ? "t" : "f");
	for (int k = 0; k < GL_SERVEMETRICS__NCTR; k++)
		gl_strbuf_printf(o, "\t%lld", (long long)(x->counted ? x->inc[k] : 0));
	gl_strbuf_puts(o, "\t{");
	for (size_t k = 0; k < x->nle; k++)
		gl_strbuf_printf(o, "%s%lld", k ? "," : "", (long long)(x->counted ? x->inc[GL_SERVINGDB_NCTR + k] : 0));
	gl_strbuf_printf(o, "}\t%lld\t", (long long)b->at_s);
	if (isnan(x->state_start_s))
		gl_strbuf_puts(o, "\\N");
	else
		put_f8(o, x->state_start_s);
	if (x->state_job_pk)
		gl_strbuf_printf(o, "\t%lld\t", (long long)x->state_job_pk);
	else
		gl_strbuf_puts(o, "\t\\N\t");
	put_f8_array(o, x->hw, GL_SERVINGDB_NCTR + x->nle);
	gl_strbuf_putc(o, '\n');
}

static int write_stage(PGconn *c, struct gl_servingdb_batch *b, int *any, struct gl_err *err)
{
	struct gl_strbuf data = GL_STRBUF_INIT;
	int rc;
	*any = 0;
	for (size_t i = 0; i < b->n; i++)
		if (b->rows[i].apply && b->rows[i].series_id) {
			stage_row(&data, b, &b->rows[i]);
			*any = 1;
		}
	if (!*any) {
		gl_strbuf_fini(&data);
		return 0;
	}
	if (!(rc = gl_db_exec(c, stage_sql, err)))
		rc = gl_db_copy_in(c,
				   "COPY serving_stage (series_id, bucket_s, job_pk, cluster_id, endpoint_id, counted, requests,"
				   " failed, prompt_tokens, generated_tokens, inferences, executions, lat_inc, state_at_s,"
				   " state_start, state_job_pk, state_hw) FROM STDIN",
				   data.p, data.len, err);
	gl_strbuf_fini(&data);
	return rc;
}

/* Rows of a series that had no job, from up to claim_s back and from its
 * job's start on, go to the job the series has now; their days are then
 * summed again from serving_usage, and their months from the days. */
static int claim(PGconn *c, int64_t at_s, int64_t claim_s, int64_t bucket_s, int64_t *claimed, struct gl_err *err)
{
	char from[24], bs[24];
	PGresult *r = NULL;
	int rc;
	snprintf(from, sizeof from, "%lld", (long long)(at_s - claim_s));
	snprintf(bs, sizeof bs, "%lld", (long long)bucket_s);
	*claimed = 0;
	if ((rc = gl_db_exec(c,
			     "CREATE TEMP TABLE serving_claimed (LIKE serving_usage) ON COMMIT DROP", err)) ||
	    (rc = gl_db_query(c,
			      "WITH cl AS (SELECT DISTINCT x.series_id, x.job_pk, j.start_at FROM serving_stage x"
			      "  JOIN jobs j ON j.job_pk = x.job_pk WHERE x.job_pk > 0"
			      "  AND EXISTS (SELECT 1 FROM serving_usage p WHERE p.series_id = x.series_id AND p.job_pk = 0"
			      "   AND p.bucket >= to_timestamp($1))),"
			      " moved AS (DELETE FROM serving_usage u USING cl WHERE u.series_id = cl.series_id AND u.job_pk = 0"
			      "  AND u.bucket >= to_timestamp($1) AND u.bucket > cl.start_at - make_interval(secs => $2::bigint)"
			      "  RETURNING u.series_id, u.bucket, cl.job_pk, u.cluster_id, u.endpoint_id, u.requests, u.failed,"
			      "  u.prompt_tokens, u.generated_tokens, u.inferences, u.executions, u.lat_inc, u.scrapes)"
			      " INSERT INTO serving_claimed SELECT * FROM moved",
			      2, (const char *[]){from, bs}, &r, err)))
		goto out;
	*claimed = atoll(PQcmdTuples(r));
	if (!*claimed)
		goto out;
	if ((rc = gl_db_exec(c,
			     "INSERT INTO serving_usage SELECT * FROM serving_claimed"
			     " ON CONFLICT (series_id, bucket, job_pk) DO UPDATE SET " GL_ADD_COUNTS("serving_usage"),
			     err)) ||
	    (rc = gl_db_exec(c,
			     "DELETE FROM serving_daily d USING (SELECT DISTINCT series_id, (bucket AT TIME ZONE 'UTC')::date AS day"
			     " FROM serving_claimed) a WHERE d.series_id = a.series_id AND d.day = a.day",
			     err)) ||
	    (rc = gl_db_exec(c,
			     "INSERT INTO serving_daily (day, series_id, job_pk, cluster_id, endpoint_id, " GL_USAGE_COLS ")"
			     " SELECT a.day, u.series_id, u.job_pk, min(u.cluster_id), min(u.endpoint_id), sum(u.requests),"
			     "  sum(u.failed), sum(u.prompt_tokens), sum(u.generated_tokens), sum(u.inferences),"
			     "  sum(u.executions),"
			     "  coalesce((SELECT array_agg(z.s ORDER BY z.o) FROM (SELECT t.o, sum(t.v)::bigint AS s"
			     "   FROM serving_usage u2 CROSS JOIN LATERAL unnest(u2.lat_inc) WITH ORDINALITY AS t(v, o)"
			     "   WHERE u2.series_id = u.series_id AND u2.job_pk = u.job_pk"
			     "    AND u2.bucket >= a.day::timestamp AT TIME ZONE 'UTC'"
			     "    AND u2.bucket < (a.day + 1)::timestamp AT TIME ZONE 'UTC' GROUP BY t.o) z), '{}'),"
			     "  sum(u.scrapes)"
			     " FROM (SELECT DISTINCT series_id, (bucket AT TIME ZONE 'UTC')::date AS day FROM serving_claimed) a"
			     " JOIN serving_usage u ON u.series_id = a.series_id AND u.bucket >= a.day::timestamp AT TIME ZONE 'UTC'"
			     "  AND u.bucket < (a.day + 1)::timestamp AT TIME ZONE 'UTC'"
			     " GROUP BY a.day, u.series_id, u.job_pk",
			     err)) ||
	    (rc = gl_db_exec(c,
			     "DELETE FROM serving_monthly m USING (SELECT DISTINCT series_id,"
			     " date_trunc('month', bucket AT TIME ZONE 'UTC')::date AS month FROM serving_claimed) a"
			     " WHERE m.series_id = a.series_id AND m.month = a.month",
			     err)) ||
	    (rc = gl_db_exec(c,
			     "INSERT INTO serving_monthly (month, series_id, job_pk, cluster_id, endpoint_id, " GL_USAGE_COLS ")"
			     " SELECT a.month, d.series_id, d.job_pk, min(d.cluster_id), min(d.endpoint_id), sum(d.requests),"
			     "  sum(d.failed), sum(d.prompt_tokens), sum(d.generated_tokens), sum(d.inferences),"
			     "  sum(d.executions),"
			     "  coalesce((SELECT array_agg(z.s ORDER BY z.o) FROM (SELECT t.o, sum(t.v)::bigint AS s"
			     "   FROM serving_daily d2 CROSS JOIN LATERAL unnest(d2.lat_inc) WITH ORDINALITY AS t(v, o)"
			     "   WHERE d2.series_id = d.series_id AND d2.job_pk = d.job_pk AND d2.day >= a.month"
			     "    AND d2.day < (a.month + interval '1 month')::date GROUP BY t.o) z), '{}'),"
			     "  sum(d.scrapes)"
			     " FROM (SELECT DISTINCT series_id, date_trunc('month', bucket AT TIME ZONE 'UTC')::date AS month"
			     "  FROM serving_claimed) a"
			     " JOIN serving_daily d ON d.series_id = a.series_id AND d.day >= a.month"
			     "  AND d.day < (a.month + interval '1 month')::date"
			     " GROUP BY a.month, d.series_id, d.job_pk",
			     err)))
		goto out;
out:
	PQclear(r);
	return rc;
}

int gl_servingdb_write(struct gl_store *store, struct gl_servingdb_batch *b, int64_t claim_s,
		       struct gl_servingdb_written *w, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	int rc, any;

	memset(w, 0, sizeof *w);
	if ((rc = write_stage(c, b, &any, err)) || !any)
		return rc;
	if ((rc = gl_db_query(c,
			      "INSERT INTO serving_usage (series_id, bucket, job_pk, cluster_id, endpoint_id, " GL_USAGE_COLS ")"
			      " SELECT series_id, to_timestamp(bucket_s), job_pk, cluster_id, endpoint_id, requests, failed, prompt_tokens,"
			      " generated_tokens, inferences, executions, lat_inc, 1 FROM serving_stage WHERE counted"
			      " ON CONFLICT (series_id, bucket, job_pk) DO UPDATE SET " GL_ADD_COUNTS("serving_usage"),
			      0, NULL, &r, err)))
		goto out;
	w->usage_rows = atoll(PQcmdTuples(r));
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_exec(c,
			     "INSERT INTO serving_daily (day, series_id, job_pk, cluster_id, endpoint_id, " GL_USAGE_COLS ")"
			     " SELECT (to_timestamp(bucket_s) AT TIME ZONE 'UTC')::date, series_id, job_pk, cluster_id, endpoint_id, requests,"
			     " failed, prompt_tokens, generated_tokens, inferences, executions, lat_inc, 1 FROM serving_stage"
			     " WHERE counted"
			     " ON CONFLICT (series_id, day, job_pk) DO UPDATE SET " GL_ADD_COUNTS("serving_daily"),
			     err)) ||
	    (rc = gl_db_exec(c,
			     "INSERT INTO serving_monthly (month, series_id, job_pk, cluster_id, endpoint_id, " GL_USAGE_COLS ")"
			     " SELECT date_trunc('month', to_timestamp(bucket_s) AT TIME ZONE 'UTC')::date, series_id, job_pk,"
			     " cluster_id, endpoint_id, requests, failed, prompt_tokens, generated_tokens, inferences, executions,"
			     " lat_inc, 1 FROM serving_stage WHERE counted"
			     " ON CONFLICT (series_id, month, job_pk) DO UPDATE SET " GL_ADD_COUNTS("serving_monthly"),
			     err)) ||
	    (claim_s > 0 && (rc = claim(c, b->at_s, claim_s, b->bucket_s, &w->claimed_rows, err))))
		goto out;
	if ((rc = gl_db_query(c,
			      "INSERT INTO serving_jobs (job_pk, endpoint_id, model_name, cluster_id)"
			      " SELECT DISTINCT x.job_pk, x.endpoint_id, s.model_name, j.cluster_id FROM serving_stage x"
			      " JOIN serving_series s ON s.series_id = x.series_id JOIN jobs j ON j.job_pk = x.job_pk"
			      " WHERE x.job_pk > 0 AND NOT EXISTS (SELECT 1 FROM serving_jobs sj WHERE sj.job_pk = x.job_pk"
			      "  AND sj.endpoint_id = x.endpoint_id AND sj.model_name = s.model_name)"
			      " ON CONFLICT DO NOTHING",
			      0, NULL, &r, err)))
		goto out;
	w->new_jobs = atoll(PQcmdTuples(r));
	if ((rc = gl_db_exec(c,
			     "UPDATE serving_series s SET state_at = to_timestamp(x.state_at_s), state_start = x.state_start,"
			     " state_job_pk = x.state_job_pk, state_hw = x.state_hw FROM serving_stage x"
			     " WHERE s.series_id = x.series_id",
			     err)) ||
	    (rc = gl_db_exec(c,
			     "UPDATE serving_endpoints e SET last_scrape_at = x.at FROM (SELECT endpoint_id,"
			     " to_timestamp(max(state_at_s)) AS at"
			     " FROM serving_stage GROUP BY endpoint_id) x WHERE e.endpoint_id = x.endpoint_id"
			     " AND (e.last_scrape_at IS NULL OR e.last_scrape_at < x.at)",
			     err)))
		goto out;
out:
	PQclear(r);
	return rc;
}

/* ---- /v1/inference -------------------------------------------------------- */

int gl_servingdb_job_dim(const char *dim)
{
	static const char *const dims[] = {"team", "project", "cost_center", "cluster", "namespace", "gpu_model"};
	for (size_t i = 0; i < GL_ARRAY_LEN(dims); i++)
		if (!strcmp(dims[i], dim))
			return 1;
	return 0;
}

/* the scope's columns, in gl_tokens_scope_dims' order */
static const char *const scope_cols[GL_TOKENS_SCOPE_DIMS] = {"ow.team", "ow.project", "ow.cost_center", "j.account",
							    "j.namespace", "j.user_name"};

/* The serving jobs that hold GPUs in [lo, hi) before now, ascending; with
 * a scope, those inside it. */
static int serving_jobs_in(PGconn *c, const struct gl_servingdb_query *q, int64_t lo, int64_t hi, int64_t **ids,
			   size_t *n, struct gl_strbuf *lit, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT;
	struct gl_strbuf arr[GL_TOKENS_SCOPE_DIMS] = {GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT,
						     GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT};
	const char *sc[GL_TOKENS_SCOPE_DIMS];
	char a[24], b[24], now[24];
	PGresult *r = NULL;
	int rc;
	snprintf(a, sizeof a, "%lld", (long long)lo);
	snprintf(b, sizeof b, "%lld", (long long)hi);
	snprintf(now, sizeof now, "%lld", (long long)q->now_s);
	*ids = NULL;
	*n = 0;
	gl_strbuf_puts(&sql, "SELECT DISTINCT sj.job_pk FROM serving_jobs sj JOIN jobs j ON j.job_pk = sj.job_pk");
	if (q->n_scope)
		gl_strbuf_puts(&sql, " JOIN clusters c ON c.cluster_id = j.cluster_id"
				     " LEFT JOIN LATERAL gl_owner(c.name, j.account, j.user_name, j.partition, j.qos, j.wckey,"
				     "  j.namespace, j.tags, coalesce(j.start_at, j.submit_at)) ow ON true");
	gl_strbuf_puts(&sql, " WHERE j.gpu_milli > 0 AND j.start_at < least(to_timestamp($2), to_timestamp($3))"
			     " AND coalesce(j.end_at, to_timestamp($3)) > to_timestamp($1)");
	if (q->n_scope) {
		gl_tokens_scope_arrays(q->scope, q->n_scope, arr, sc);
		gl_tokens_scope_sql(&sql, scope_cols, 4);
	}
	gl_strbuf_puts(&sql, " ORDER BY 1");
	rc = q->n_scope ? gl_db_query(c, sql.p, 9, (const char *[]){a, b, now, sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]},
				      &r, err)
			: gl_db_query(c, sql.p, 3, (const char *[]){a, b, now}, &r, err);
	for (size_t d = 0; d < GL_TOKENS_SCOPE_DIMS; d++)
		gl_strbuf_fini(&arr[d]);
	gl_strbuf_fini(&sql);
	if (rc)
		goto out;
	*n = (size_t)PQntuples(r);
	*ids = gl_xcalloc(*n + 1, sizeof **ids);
	gl_strbuf_putc(lit, '{');
	for (size_t i = 0; i < *n; i++) {
		(*ids)[i] = atoll(PQgetvalue(r, (int)i, 0));
		gl_strbuf_printf(lit, "%s%lld", i ? "," : "", (long long)(*ids)[i]);
	}
	gl_strbuf_putc(lit, '}');
out:
	PQclear(r);
	return rc;
}

static int feed_pairs(PGconn *c, const char *ids, struct gl_inference *x, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = gl_db_query(c,
			     "SELECT sj.job_pk, e.name, sj.model_name FROM serving_jobs sj"
			     " JOIN serving_endpoints e ON e.endpoint_id = sj.endpoint_id WHERE sj.job_pk = ANY($1::bigint[])",
			     1, (const char *[]){ids}, &r, err);
	for (int i = 0; !rc && i < PQntuples(r); i++)
		gl_inference_add_pair(x, atoll(PQgetvalue(r, i, 0)), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
	PQclear(r);
	return rc;
}

/* The ledger's lines of the serving jobs, one per job and step: the same
 * query and rounding as /v1/chargeback. */
static int feed_costs(struct gl_store *st, const struct gl_servingdb_query *q, const int64_t *ids, size_t n_ids, struct gl_inference *x,
		      struct gl_accounting_meta *meta, struct gl_err *err)
{
	const char *dims[2] = {"job", q->dim};
	size_t nd = q->agg == GL_INFERENCE_BY_JOB_DIM ? 2 : 1;
	struct gl_accounting_query aq;
	struct gl_chargeback cb;
	int rc;

	gl_accounting_query_init(&aq, q->steps, q->n_steps, dims, nd, q->now_s);
	aq.lines_only = 1;
	aq.jobs = ids;
	aq.n_jobs = n_ids;
	gl_chargeback_init(&cb, nd, GL_CHARGEBACK_SHARE_NONE, q->n_steps);
	if (!(rc = gl_accounting_chargeback_finished(st, &aq, &cb, meta, err)))
		for (size_t i = 0; i < cb.n_steps; i++)
			for (size_t j = 0; j < cb.steps[i].n_lines; j++) {
				const struct gl_chargeback_line *l = &cb.steps[i].lines[j];
				struct gl_inference_cost k = {
					.job_pk = atoll(l->key[0]),
					.dim = nd > 1 ? l->key[1] : NULL,
					.alloc_us = l->alloc_us,
					.alloc_s = l->alloc_s,
					.unpriced_s = l->unpriced_s,
					.cost_micros = l->cost_micros,
					.busy_s = l->busy_s,
					.idle_s = l->idle_s,
					.observed_s = l->observed_s,
				};
				gl_inference_add_cost(x, i, &k);
			}
	gl_chargeback_fini(&cb);
	return rc;
}

static void put_piece(struct gl_strbuf *const pv[4], size_t *k, int64_t a, int64_t b, size_t step, char kind)
{
	const char *sep = *k ? "," : "";
	gl_strbuf_printf(pv[0], "%s%lld", sep, (long long)a);
	gl_strbuf_printf(pv[1], "%s%lld", sep, (long long)b);
	gl_strbuf_printf(pv[2], "%s%zu", sep, step);
	gl_strbuf_printf(pv[3], "%s%c", sep, kind);
	++*k;
}

/* The steps cut into whole UTC calendar months (kind 'm', read from
 * serving_monthly), whole UTC days ('d', serving_daily) and the pieces
 * around them ('b', buckets from serving_usage, by their start): as the
 * arrays $1 starts, $2 ends, $3 step indexes, $4 kinds. */
static void usage_pieces(const struct gl_servingdb_query *q, struct gl_strbuf *const pv[4])
{
	size_t k = 0;
	for (int v = 0; v < 4; v++)
		gl_strbuf_putc(pv[v], '{');
	for (size_t i = 0; i < q->n_steps; i++) {
		int64_t a = q->steps[i].start_s, b = q->steps[i].end_s;
		int64_t d0 = a + ((86400 - a % 86400) % 86400), d1 = b - ((b % 86400) + 86400) % 86400;
		if (d0 >= d1) {
			put_piece(pv, &k, a, b, i, 'b');
			continue;
		}
		if (a < d0)
			put_piece(pv, &k, a, d0, i, 'b');
		for (int64_t d = d0; d < d1;) {
			int64_t m1 = gl_window_month_next(gl_window_month_start(d));
			if (gl_window_month_start(d) == d && m1 <= d1) {
				put_piece(pv, &k, d, m1, i, 'm');
				d = m1;
			} else {
				put_piece(pv, &k, d, d + 86400, i, 'd');
				d += 86400;
			}
		}
		if (d1 < b)
			put_piece(pv, &k, d1, b, i, 'b');
	}
	for (int v = 0; v < 4; v++)
		gl_strbuf_putc(pv[v], '}');
}

/* The usage of the pieces: a row of serving_daily or serving_monthly as
 * it is (the C side sums them: 31,000 groups of one row each cost seconds
 * to aggregate here, array states and all), the buckets of the other
 * pieces summed per step, series and job, their latency counts as a
 * two-dimensional array (a series' layout is fixed). Named by series_id:
 * names and bounds come once per series (series_sql). */
static const char usage_sql[] =
	"WITH p AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::integer[], $4::text[]) AS p(a, b, i, k))"
	" SELECT p.i, d.job_pk, d.series_id, d.requests, d.failed, d.prompt_tokens, d.generated_tokens, d.inferences,"
	"  d.executions, d.lat_inc FROM p JOIN serving_daily d ON p.k = 'd'"
	"  AND d.day = (to_timestamp(p.a) AT TIME ZONE 'UTC')::date"
	" UNION ALL"
	" SELECT p.i, m.job_pk, m.series_id, m.requests, m.failed, m.prompt_tokens, m.generated_tokens, m.inferences,"
	"  m.executions, m.lat_inc FROM p JOIN serving_monthly m ON p.k = 'm'"
	"  AND m.month = (to_timestamp(p.a) AT TIME ZONE 'UTC')::date"
	" UNION ALL"
	" SELECT p.i, u.job_pk, u.series_id, sum(u.requests), sum(u.failed), sum(u.prompt_tokens), sum(u.generated_tokens),"
	"  sum(u.inferences), sum(u.executions), array_agg(u.lat_inc) FILTER (WHERE cardinality(u.lat_inc) > 0)"
	" FROM p JOIN serving_usage u ON p.k = 'b' AND u.bucket >= to_timestamp(p.a) AND u.bucket < to_timestamp(p.b)"
	" GROUP BY 1, 2, 3";

static const char series_sql[] =
	"SELECT s.series_id, e.name, s.model_name, s.lat_le FROM serving_series s"
	" JOIN serving_endpoints e ON e.endpoint_id = s.endpoint_id WHERE s.series_id = ANY($1::bigint[])"
	" ORDER BY s.series_id";

struct series_info {
	int64_t id;
	const char *endpoint, *model; /* in the series query's result */
	double le[GL_SERVEMETRICS_MAX_LE];
	size_t nle;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_series(const void *key, const void *el)
{
	return cmp_i64(key, &((const struct series_info *)el)->id);
}

/* The latency counts of one row or of rows "{{c0,c1,...},{...}}", summed
 * per bound; n bounds. */
static void sum_counts(const char *txt, double *sum, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		sum[i] = 0;
	for (const char *p = txt; *p;) {
		char *end;
		double v;
		if (*p == '{' || *p == ',' || *p == ' ') {
			p++;
			continue;
		}
		if (*p == '}') {
			k = 0; /* the end of a row (or of them all) */
			p++;
			continue;
		}
		v = strtod(p, &end);
		if (end == p)
			break;
		if (k < n)
			sum[k] += v;
		k++;
		p = end;
	}
}

/* The series the usage rows name, sorted by id (*sr owns the strings). */
static int usage_series(PGconn *c, PGresult *u, struct series_info **out, size_t *n_out, PGresult **sr,
		       struct gl_err *err)
{
	int nu = PQntuples(u), rc;
	int64_t *ids = gl_xcalloc((size_t)nu + 1, sizeof *ids);
	struct gl_strbuf lit = GL_STRBUF_INIT;
	size_t n = 0;
	*out = NULL;
	*n_out = 0;
	for (int row = 0; row < nu; row++)
		ids[n++] = atoll(PQgetvalue(u, row, 2));
	gl_qsort(ids, n, sizeof *ids, cmp_i64);
	gl_strbuf_putc(&lit, '{');
	for (size_t i = 0; i < n; i++)
		if (!i || ids[i] != ids[i - 1])
			gl_strbuf_printf(&lit, "%s%lld", i ? "," : "", (long long)ids[i]);
	gl_strbuf_putc(&lit, '}');
	free(ids);
	rc = gl_db_query(c, series_sql, 1, (const char *[]){lit.p}, sr, err);
	gl_strbuf_fini(&lit);
	if (rc)
		return rc;
	*n_out = (size_t)PQntuples(*sr);
	*out = gl_xcalloc(*n_out + 1, sizeof **out);
	for (size_t i = 0; i < *n_out; i++) {
		struct series_info *s = &(*out)[i];
		s->id = atoll(PQgetvalue(*sr, (int)i, 0));
		s->endpoint = PQgetvalue(*sr, (int)i, 1);
		s->model = PQgetvalue(*sr, (int)i, 2);
		s->nle = parse_f8_array(PQgetvalue(*sr, (int)i, 3), s->le, GL_SERVEMETRICS_MAX_LE);
	}
	return 0;
}

/* ids, n: with a scope, the serving jobs inside it (ascending): the
 * requests of any other job, or of none, are not read into x */
static int feed_usage(PGconn *c, const struct gl_servingdb_query *q, const int64_t *ids, size_t n_ids, struct gl_inference *x,
		      struct gl_err *err)
{
	struct gl_strbuf pa = GL_STRBUF_INIT, pb = GL_STRBUF_INIT, pi = GL_STRBUF_INIT, pd = GL_STRBUF_INIT;
	PGresult *r = NULL, *sr = NULL;
	struct series_info *ser = NULL;
	size_t n_ser = 0;
	int rc;
	usage_pieces(q, (struct gl_strbuf *const[]){&pa, &pb, &pi, &pd});
	if ((rc = gl_db_query(c, usage_sql, 4, (const char *[]){pa.p, pb.p, pi.p, pd.p}, &r, err)) ||
	    (rc = usage_series(c, r, &ser, &n_ser, &sr, err)))
		goto out;
	for (int row = 0; row < PQntuples(r); row++) {
		size_t i = (size_t)atoll(PQgetvalue(r, row, 0));
		int64_t job = atoll(PQgetvalue(r, row, 1)), id = atoll(PQgetvalue(r, row, 2)), v[GL_SERVEMETRICS__NCTR];
		const struct series_info *s = gl_bsearch(&id, ser, n_ser, sizeof *ser, cmp_series);
		double cum[GL_SERVEMETRICS_MAX_LE];
		if (q->n_scope && !gl_bsearch(&job, ids, n_ids, sizeof *ids, cmp_i64))
			continue;
		if (!s) { /* series are never deleted: a row without one is a broken database */
			rc = gl_err_set(err, GL_EDB, "inference: usage of series %lld, which serving_series lacks",
					(long long)id);
			goto out;
		}
		for (int k = 0; k < GL_SERVEMETRICS__NCTR; k++)
			v[k] = atoll(PQgetvalue(r, row, 3 + k));
		sum_counts(PQgetvalue(r, row, 9), cum, s->nle);
		gl_inference_add_row(x, i, job, s->endpoint, s->model, v, s->le, cum,
			       PQgetisnull(r, row, 9) || !strcmp(PQgetvalue(r, row, 9), "{}") ? 0 : s->nle);
	}
out:
	free(ser);
	PQclear(sr);
	PQclear(r);
	gl_strbuf_fini(&pa);
	gl_strbuf_fini(&pb);
	gl_strbuf_fini(&pi);
	gl_strbuf_fini(&pd);
	return rc;
}

int gl_servingdb_inference(struct gl_store *st, const struct gl_servingdb_query *q, struct gl_inference *x,
			   struct gl_accounting_meta *meta, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_strbuf lit = GL_STRBUF_INIT;
	int64_t *ids = NULL;
	size_t n_ids = 0;
	int rc;

	if (q->agg == GL_INFERENCE_BY_JOB_DIM && (!q->dim || !gl_servingdb_job_dim(q->dim)))
		return gl_err_set(err, GL_EINVAL, "inference: '%s' is not a job dimension", q->dim ? q->dim : "");
	for (size_t i = 0; i < q->n_steps && i < x->n_steps; i++) {
		x->steps[i].start_s = q->steps[i].start_s;
		x->steps[i].end_s = q->steps[i].end_s;
	}
	if (!q->n_steps)
		return gl_inference_finish(x) ? gl_err_set(err, GL_EINTERNAL, "inference: grouping failed") : 0;
	if ((rc = serving_jobs_in(c, q, q->steps[0].start_s, q->steps[q->n_steps - 1].end_s, &ids, &n_ids, &lit, err)) ||
	    (rc = feed_pairs(c, lit.p, x, err)) || (rc = feed_costs(st, q, ids, n_ids, x, meta, err)) ||
	    (rc = feed_usage(c, q, ids, n_ids, x, err)))
		goto out;
	if (gl_inference_finish(x))
		rc = gl_err_set(err, GL_EINTERNAL, "inference: sharing a job's cost over its endpoints failed");
out:
	free(ids);
	gl_strbuf_fini(&lit);
	return rc;
}
