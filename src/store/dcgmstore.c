/* The dcgm-exporter ingest's queries (see include/gl/dcgmstore.h). */
#include "gl/dcgmstore.h"
#include "gl/accounting.h"
#include "db_int.h"
#include "gl/pgarray.h"
#include "gl/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The COPY text of one round's staging tables. */
struct gl_dcgmstore_stage {
	struct gl_strbuf inv, use, share, pend;
};

struct gl_dcgmstore_stage *gl_dcgmstore_stage_new(void)
{
	struct gl_dcgmstore_stage *s = gl_xcalloc(1, sizeof *s);
	gl_strbuf_init(&s->inv);
	gl_strbuf_init(&s->use);
	gl_strbuf_init(&s->share);
	gl_strbuf_init(&s->pend);
	return s;
}

void gl_dcgmstore_stage_free(struct gl_dcgmstore_stage *s)
{
	if (!s)
		return;
	gl_strbuf_fini(&s->inv);
	gl_strbuf_fini(&s->use);
	gl_strbuf_fini(&s->share);
	gl_strbuf_fini(&s->pend);
	free(s);
}

/* ---- COPY text ---- */

static void c_str(struct gl_strbuf *o, const char *s, int last)
{
	if (!s || !*s)
		gl_strbuf_puts(o, "\\N");
	else
		gl_strbuf_put_copy_text(o, s, strlen(s));
	gl_strbuf_putc(o, last ? '\n' : '\t');
}

static void c_i64(struct gl_strbuf *o, long long v, int last)
{
	gl_strbuf_put_i64(o, v);
	gl_strbuf_putc(o, last ? '\n' : '\t');
}

static void c_dbl(struct gl_strbuf *o, int have, double v, int last)
{
	if (have && isfinite(v))
		gl_strbuf_printf(o, "%.17g", v);
	else
		gl_strbuf_puts(o, "\\N");
	gl_strbuf_putc(o, last ? '\n' : '\t');
}

static void fmt_i64(char *b, size_t n, int64_t v)
{
	snprintf(b, n, "%lld", (long long)v);
}

/* ---- the round ---- */

static const char k_temp_sql[] =
	"CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_inv (idx integer, node text, uuid text, gi integer,"
	" profile text, model text, driver text, memory_mib bigint, mig_parent boolean, source text, gpu_index integer) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_use (gpu_id bigint, busy integer, nodata integer,"
	" active_sum double precision, engine_n integer, fb_max double precision, power_max double precision,"
	" energy_mj bigint, resets integer, xid bigint, covered_s bigint, busy_s bigint, idle_s bigint,"
	" held_idle_s bigint, energy_last double precision) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_share (gpu_id bigint, job_pk bigint, kind text, busy integer,"
	" nodata integer, gpu_s double precision, busy_gpu_s double precision, idle_gpu_s double precision,"
	" held_idle_gpu_s double precision) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_pend (gpu_id bigint, node text, jobs text[], pods text[], dt_s bigint,"
	" busy boolean, nodata boolean, busy_ms bigint, idle_ms bigint, held_ms bigint, left_share double precision,"
	" node_gpus integer, claimed bigint[]) ON COMMIT DELETE ROWS";

int gl_dcgmstore_cluster(struct gl_store *store, const char *name, int pods, int *cluster_id, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	int rc;
	if ((rc = gl_db_query(c,
			      "WITH ins AS (INSERT INTO clusters (name, kind) SELECT $1, $2"
			      " WHERE NOT EXISTS (SELECT 1 FROM clusters WHERE name = $1)"
			      " ON CONFLICT (name) DO NOTHING RETURNING cluster_id)"
			      " SELECT cluster_id FROM ins UNION ALL SELECT cluster_id FROM clusters WHERE name = $1",
			      2, (const char *[]){name, pods ? "kubernetes" : "slurm"}, &r, err)))
		goto out;
	if (PQntuples(r) < 1) {
		rc = gl_err_set(err, GL_EDB, "cluster '%s': could not be created", name);
		goto out;
	}
	*cluster_id = atoi(PQgetvalue(r, 0, 0));
out:
	PQclear(r);
	return rc;
}

int gl_dcgmstore_prepare(struct gl_store *store, int64_t bucket_start_s, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char bucket[24];
	int rc;
	fmt_i64(bucket, sizeof bucket, bucket_start_s);
	if ((rc = gl_db_exec(c, k_temp_sql, err)))
		return rc;
	return gl_db_query(c, "SELECT gl_ensure_dcgm_partitions(to_timestamp($1::bigint),"
			      " to_timestamp($1::bigint) + interval '1 day')",
			   1, (const char *[]){bucket}, NULL, err);
}

int gl_dcgmstore_begin(struct gl_store *store, int cluster_id, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16];
	int rc;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		return rc;
	if ((rc = gl_db_query(c, "SELECT pg_advisory_xact_lock(26477, $1::integer)", 1, (const char *[]){cid}, NULL,
			      err)))
		PQclear(PQexec(c, "ROLLBACK"));
	return rc;
}

/* ---- inventory ---- */

void gl_dcgmstore_add_gpu(struct gl_dcgmstore_stage *s, const struct gl_dcgmstore_gpu *g)
{
	struct gl_strbuf *o = &s->inv;
	c_i64(o, (long long)g->idx, 0);
	c_str(o, g->node, 0);
	c_str(o, g->uuid, 0);
	c_i64(o, g->gi, 0);
	c_str(o, g->profile, 0);
	c_str(o, g->model, 0);
	c_str(o, g->driver, 0);
	if (g->have_memory)
		c_i64(o, g->memory_mib, 0);
	else
		c_str(o, NULL, 0);
	c_str(o, g->mig_parent ? "t" : "f", 0);
	c_str(o, g->source, 0);
	if (g->gpu_index >= 0)
		c_i64(o, g->gpu_index, 1);
	else
		c_str(o, NULL, 1);
}

/* a count from a one-row result, and the result cleared */
static int64_t count_of(PGresult *r)
{
	int64_t n = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return n;
}

static const char nodes_sql[] =
	"WITH up AS (INSERT INTO nodes (cluster_id, name, first_seen, last_seen)"
	" SELECT DISTINCT $1::integer, node, to_timestamp($2::bigint), to_timestamp($2::bigint)"
	" FROM gl_dcgm_inv"
	" ON CONFLICT (cluster_id, name) DO UPDATE SET"
	" first_seen = least(nodes.first_seen, EXCLUDED.first_seen),"
	" last_seen = greatest(nodes.last_seen, EXCLUDED.last_seen)"
	" WHERE nodes.last_seen < EXCLUDED.last_seen OR nodes.first_seen > EXCLUDED.first_seen"
	" RETURNING 1) SELECT (SELECT count(DISTINCT node) FROM gl_dcgm_inv)";

/* A round that lists a node ends the following of the node's GPUs it does
 * not list (sql/124): they were last seen at the node's round before this
 * one. Runs before the nodes move; an older round re-ingested ends nothing.
 * Without nested loops (vanished): a fleet's first rounds run before
 * autovacuum has counted its new nodes, and a plan for the two rows it
 * believed in read the round's GPUs once a GPU, 6-9 s a round at 8,000
 * GPUs, quadratic in the fleet. */
static const char vanished_sql[] =
	"UPDATE gpus g SET follows_node = false, last_seen = greatest(g.last_seen, n.last_seen)"
	" FROM nodes n WHERE n.cluster_id = $1::integer AND g.cluster_id = $1::integer AND g.node_id = n.node_id"
	" AND g.follows_node AND n.last_seen < to_timestamp($2::bigint)"
	" AND n.name IN (SELECT node FROM gl_dcgm_inv)"
	" AND NOT EXISTS (SELECT 1 FROM gl_dcgm_inv i WHERE i.node = n.name AND i.uuid = g.uuid AND i.gi = g.mig_instance)";

/* A GPU row is written only when it is new, is seen past its own last_seen
 * while not following its node (back after it vanished or went absent:
 * from the node's newest round on it follows again; an older round only
 * widens last_seen), widens first_seen, or its descriptive fields change.
 * A GPU seen again in its node's newest round is not written: it follows
 * the node (sql/124). EXCLUDED.follows_node: this round is its node's
 * newest. Descriptive fields follow the newest round that listed the GPU.
 * The GPUs that follow their node and did not change are left out before
 * the upsert: ON CONFLICT locks every row it meets, a WAL record and a
 * dirtied page a GPU even when its WHERE writes nothing. */
#define GPU_NEWEST "((EXCLUDED.follows_node OR NOT gpus.follows_node) AND EXCLUDED.last_seen >= gpus.last_seen)"
#define GPU_FIELD(f) " " #f " = CASE WHEN " GPU_NEWEST " THEN coalesce(EXCLUDED." #f ", gpus." #f ") ELSE gpus." #f " END,"
/* the descriptive fields of x (gpus' column names) differ from g's */
#define GPU_CHANGED(x, g)                                                                                                \
	"(" g ".model, " g ".memory_mib, " g ".mig_profile, " g ".driver, " g ".mig_parent, " g ".source, " g ".gpu_index)" \
	" IS DISTINCT FROM (coalesce(" x ".model, " g ".model), coalesce(" x ".memory_mib, " g ".memory_mib),"             \
	" coalesce(" x ".mig_profile, " g ".mig_profile), coalesce(" x ".driver, " g ".driver), " x ".mig_parent,"       \
	" coalesce(" x ".source, " g ".source), coalesce(" x ".gpu_index, " g ".gpu_index))"
static const char gpus_sql[] =
	"WITH up AS (INSERT INTO gpus (cluster_id, node_id, uuid, mig_instance, model, memory_mib,"
	" mig_profile, driver, first_seen, last_seen, mig_parent, source, gpu_index, follows_node)"
	" SELECT x.cluster_id, x.node_id, x.uuid, x.mig_instance, x.model, x.memory_mib, x.mig_profile, x.driver,"
	" x.first_seen, x.last_seen, x.mig_parent, x.source, x.gpu_index, x.follows_node"
	" FROM (SELECT DISTINCT ON (i.node, i.uuid, i.gi) $1::integer AS cluster_id, n.node_id, i.uuid, i.gi AS mig_instance,"
	"  i.model, i.memory_mib, i.profile AS mig_profile, i.driver, to_timestamp($2::bigint) AS first_seen,"
	"  to_timestamp($2::bigint) AS last_seen, i.mig_parent, i.source, i.gpu_index,"
	"  n.last_seen <= to_timestamp($2::bigint) AS follows_node"
	"  FROM gl_dcgm_inv i JOIN nodes n ON n.cluster_id = $1::integer AND n.name = i.node"
	"  ORDER BY i.node, i.uuid, i.gi, i.idx) x"
	" LEFT JOIN gpus g ON g.cluster_id = x.cluster_id AND g.node_id = x.node_id AND g.uuid = x.uuid"
	"  AND g.mig_instance = x.mig_instance"
	" WHERE g.gpu_id IS NULL OR NOT g.follows_node OR x.first_seen < g.first_seen OR " GPU_CHANGED("x", "g")
	" ON CONFLICT (cluster_id, node_id, uuid, mig_instance) DO UPDATE SET"
	GPU_FIELD(model) GPU_FIELD(memory_mib) GPU_FIELD(mig_profile) GPU_FIELD(driver) GPU_FIELD(source)
	GPU_FIELD(gpu_index)
	" mig_parent = CASE WHEN " GPU_NEWEST " THEN EXCLUDED.mig_parent ELSE gpus.mig_parent END,"
	" first_seen = least(gpus.first_seen, EXCLUDED.first_seen),"
	" last_seen = greatest(gpus.last_seen, EXCLUDED.last_seen),"
	" follows_node = gpus.follows_node OR (EXCLUDED.follows_node AND EXCLUDED.last_seen > gpus.last_seen),"
	" absent_since = CASE WHEN EXCLUDED.last_seen > gpus.absent_since THEN NULL ELSE gpus.absent_since END"
	" WHERE (NOT gpus.follows_node AND EXCLUDED.last_seen > gpus.last_seen)"
	"  OR EXCLUDED.first_seen < gpus.first_seen"
	"  OR (" GPU_NEWEST " AND " GPU_CHANGED("EXCLUDED", "gpus") ")"
	" RETURNING (xmax = 0) AS ins) SELECT count(*) FILTER (WHERE ins) FROM up";
#undef GPU_CHANGED
#undef GPU_FIELD
#undef GPU_NEWEST

/* vanished_sql with nested loops off for it alone (the round's
 * transaction: SET LOCAL, then the session's value back) */
static int vanished(PGconn *c, const char *cid, const char *at, struct gl_err *err)
{
	PGresult *r = NULL;
	char was[8];
	int rc;
	if ((rc = gl_db_query(c, "SELECT current_setting('enable_nestloop'), set_config('enable_nestloop', 'off', true)", 0,
			      NULL, &r, err)))
		return rc;
	snprintf(was, sizeof was, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	if ((rc = gl_db_query(c, vanished_sql, 2, (const char *[]){cid, at}, NULL, err)))
		return rc;
	return gl_db_query(c, "SELECT set_config('enable_nestloop', $1, true)", 1, (const char *[]){was}, NULL, err);
}

int gl_dcgmstore_inventory(struct gl_store *store, struct gl_dcgmstore_stage *s, int cluster_id, int64_t at_s,
			   int64_t *nodes, int64_t *new_gpus, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16], at[24];
	PGresult *r = NULL;
	int rc;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	fmt_i64(at, sizeof at, at_s);
	if (s->inv.len && (rc = gl_db_copy_in(c, "COPY gl_dcgm_inv FROM STDIN", s->inv.p, s->inv.len, err)))
		return rc;
	if ((rc = vanished(c, cid, at, err)) || (rc = gl_db_query(c, nodes_sql, 2, (const char *[]){cid, at}, &r, err)))
		return rc;
	*nodes = count_of(r);
	if ((rc = gl_db_query(c, gpus_sql, 2, (const char *[]){cid, at}, &r, err)))
		return rc;
	*new_gpus = count_of(r);
	return 0;
}

static const char states_sql[] =
	"SELECT DISTINCT ON (g.gpu_id) i.idx, g.gpu_id, extract(epoch FROM s.last_sample_at)::bigint,"
	" s.energy_last_mj"
	" FROM gl_dcgm_inv i JOIN nodes n ON n.cluster_id = $1::integer AND n.name = i.node"
	" JOIN gpus g ON g.cluster_id = $1::integer AND g.node_id = n.node_id AND g.uuid = i.uuid"
	"  AND g.mig_instance = i.gi"
	" LEFT JOIN dcgm_gpu_state s ON s.gpu_id = g.gpu_id"
	" ORDER BY g.gpu_id, i.idx";
enum { SC_IDX, SC_GPU, SC_LAST, SC_ENERGY };

int gl_dcgmstore_states(struct gl_store *store, int cluster_id, struct gl_dcgmstore_state_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16];
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	snprintf(cid, sizeof cid, "%d", cluster_id);
	if ((rc = gl_db_query(c, states_sql, 1, (const char *[]){cid}, &r, err)))
		return rc;
	out->n = (size_t)PQntuples(r);
	out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
	for (size_t k = 0; k < out->n; k++) {
		struct gl_dcgmstore_state *m = &out->v[k];
		int i = (int)k;
		m->idx = (size_t)atoll(PQgetvalue(r, i, SC_IDX));
		m->gpu_id = atoll(PQgetvalue(r, i, SC_GPU));
		m->last_s = PQgetisnull(r, i, SC_LAST) ? GL_TIME_NONE : atoll(PQgetvalue(r, i, SC_LAST));
		m->energy_last = PQgetisnull(r, i, SC_ENERGY) ? -1.0 : strtod(PQgetvalue(r, i, SC_ENERGY), NULL);
	}
	PQclear(r);
	return 0;
}

void gl_dcgmstore_state_list_fini(struct gl_dcgmstore_state_list *l)
{
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* ---- jobs ---- */

/* A job's nodes are matched against the round's by = ANY, which PostgreSQL
 * hashes (its array is a constant of the plan); && compares every element
 * of one array with every element of the other, for every job running: a
 * round of 100,000 GPUs (12,500 nodes, 100,000 jobs) spent 24.5 s in this
 * query with &&, 1.2-2.0 s with = ANY (docs/bench.md). */
static const char jobs_sql[] =
	"SELECT job_pk, job_id, coalesce(job_id_raw, ''), coalesce(het_job_id::text, ''),"
	" coalesce(namespace, ''), coalesce(name, ''), " GL_ACCOUNTING_JOB_HELD_SQL("jobs") ","
	" coalesce(array_to_string(nodes, chr(31)), ''), extract(epoch FROM start_at)::bigint"
	" FROM jobs WHERE cluster_id = $1::integer AND start_at <= to_timestamp($2::bigint)"
	" AND (end_at IS NULL OR end_at > to_timestamp($2::bigint))"
	" AND (EXISTS (SELECT FROM unnest(nodes) n WHERE n = ANY($3::text[])) OR job_id = ANY($4::text[]) OR job_id_raw = ANY($4::text[])"
	"  OR het_job_id::text = ANY($4::text[])"
	"  OR (namespace IS NOT NULL AND (name = ANY($5::text[]) OR job_id = ANY($5::text[]))))";
enum { JC_PK, JC_JOB_ID, JC_RAW, JC_HET, JC_NS, JC_NAME, JC_HELD, JC_NODES, JC_START };

/* Splits "a\x1fb" into copies. */
static size_t split_us(const char *s, char ***out)
{
	size_t n = 0, cap = 0;
	char **v = NULL;
	if (!*s) {
		*out = NULL;
		return 0;
	}
	for (const char *p = s;;) {
		const char *q = strchr(p, '\x1f');
		if (n == cap) {
			cap = cap ? cap * 2 : 4;
			v = gl_xrealloc(v, cap * sizeof *v);
		}
		v[n++] = q ? gl_xstrndup(p, (size_t)(q - p)) : gl_xstrdup(p);
		if (!q)
			break;
		p = q + 1;
	}
	*out = v;
	return n;
}

static void job_decode(const PGresult *r, int i, struct gl_dcgmstore_job *j)
{
	j->job_pk = atoll(PQgetvalue(r, i, JC_PK));
	j->job_id = gl_xstrdup(PQgetvalue(r, i, JC_JOB_ID));
	j->job_id_raw = gl_xstrdup(PQgetvalue(r, i, JC_RAW));
	j->het_job_id = gl_xstrdup(PQgetvalue(r, i, JC_HET));
	j->ns = gl_xstrdup(PQgetvalue(r, i, JC_NS));
	j->name = gl_xstrdup(PQgetvalue(r, i, JC_NAME));
	j->held_micro = atoll(PQgetvalue(r, i, JC_HELD));
	j->start_s = atoll(PQgetvalue(r, i, JC_START));
	j->nnodes = split_us(PQgetvalue(r, i, JC_NODES), &j->nodes);
}

int gl_dcgmstore_jobs(struct gl_store *store, int cluster_id, int64_t at_s, const char *const *nodes, size_t nnodes,
		      const char *const *ids, size_t nids, const char *const *pods, size_t npods,
		      struct gl_dcgmstore_job_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	struct gl_strbuf na = GL_STRBUF_INIT, ia = GL_STRBUF_INIT, pa = GL_STRBUF_INIT;
	char cid[16], at[24];
	PGresult *r = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	snprintf(cid, sizeof cid, "%d", cluster_id);
	fmt_i64(at, sizeof at, at_s);
	gl_pgarray_texts(&na, nodes, nnodes);
	gl_pgarray_texts(&ia, ids, nids);
	gl_pgarray_texts(&pa, pods, npods);
	rc = gl_db_query(c, jobs_sql, 5, (const char *[]){cid, at, na.p, ia.p, pa.p}, &r, err);
	if (!rc) {
		out->n = (size_t)PQntuples(r);
		out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
		for (size_t k = 0; k < out->n; k++)
			job_decode(r, (int)k, &out->v[k]);
	}
	PQclear(r);
	gl_strbuf_fini(&na);
	gl_strbuf_fini(&ia);
	gl_strbuf_fini(&pa);
	return rc;
}

void gl_dcgmstore_job_list_fini(struct gl_dcgmstore_job_list *l)
{
	for (size_t k = 0; l->v && k < l->n; k++) {
		struct gl_dcgmstore_job *j = &l->v[k];
		free(j->job_id);
		free(j->job_id_raw);
		free(j->het_job_id);
		free(j->ns);
		free(j->name);
		for (size_t i = 0; i < j->nnodes; i++)
			free(j->nodes[i]);
		free(j->nodes);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* ---- samples ---- */

void gl_dcgmstore_add_use(struct gl_dcgmstore_stage *s, const struct gl_dcgmstore_use *u)
{
	struct gl_strbuf *o = &s->use;
	c_i64(o, u->gpu_id, 0);
	c_i64(o, u->busy, 0);
	c_i64(o, u->nodata, 0);
	c_dbl(o, 1, u->engine_sum, 0);
	c_i64(o, u->engine_n, 0);
	c_dbl(o, u->fb_max >= 0, u->fb_max, 0);
	c_dbl(o, u->power_max >= 0, u->power_max, 0);
	if (u->have_energy)
		c_i64(o, u->energy_mj, 0);
	else
		c_str(o, NULL, 0);
	c_i64(o, u->energy_resets, 0);
	if (u->have_xid)
		c_i64(o, u->xid, 0);
	else
		c_str(o, NULL, 0);
	c_i64(o, u->covered_s, 0);
	c_i64(o, u->busy_s, 0);
	c_i64(o, u->idle_s, 0);
	c_i64(o, u->held_idle_s, 0);
	c_dbl(o, u->energy_last >= 0, u->energy_last, 1);
}

void gl_dcgmstore_add_share(struct gl_dcgmstore_stage *s, const struct gl_dcgmstore_share *sh)
{
	struct gl_strbuf *o = &s->share;
	c_i64(o, sh->gpu_id, 0);
	c_i64(o, sh->job_pk, 0);
	c_str(o, sh->kind, 0);
	c_i64(o, sh->busy, 0);
	c_i64(o, sh->nodata, 0);
	c_dbl(o, 1, sh->gpu_s, 0);
	c_dbl(o, 1, sh->busy_gpu_s, 0);
	c_dbl(o, 1, sh->idle_gpu_s, 0);
	c_dbl(o, 1, sh->held_idle_gpu_s, 1);
}

/* One dcgm_pending staging row: the sample's GPU, node, its hpc_job and pod
 * labels (text[] literals, then COPY-escaped), what it covers and, for an
 * unlabelled node, the share left and who had theirs. */
void gl_dcgmstore_add_pending(struct gl_dcgmstore_stage *s, const struct gl_dcgmstore_pending *p)
{
	struct gl_strbuf jobs = GL_STRBUF_INIT, pods = GL_STRBUF_INIT, one = GL_STRBUF_INIT, claimed = GL_STRBUF_INIT,
			 *o = &s->pend;
	gl_pgarray_texts(&jobs, p->jobs, p->njobs);
	for (size_t k = 0; k < p->npods; k++) {
		if (!p->pods[k].pod[0])
			continue;
		gl_strbuf_reset(&one);
		gl_strbuf_printf(&one, "%s/%s", p->pods[k].ns, p->pods[k].pod);
		gl_pgarray_add_text(&pods, gl_strbuf_cstr(&one));
	}
	gl_pgarray_end(&pods);
	c_i64(o, p->gpu_id, 0);
	c_str(o, p->node, 0);
	c_str(o, gl_strbuf_cstr(&jobs), 0);
	c_str(o, gl_strbuf_cstr(&pods), 0);
	c_i64(o, p->dt_s, 0);
	c_str(o, p->busy ? "t" : "f", 0);
	c_str(o, p->nodata ? "t" : "f", 0);
	c_i64(o, p->busy_ms, 0);
	c_i64(o, p->idle_ms, 0);
	c_i64(o, p->held_ms, 0);
	c_dbl(o, p->left >= 0, p->left, 0);
	if (p->left >= 0) {
		c_i64(o, p->node_gpus, 0);
		for (size_t k = 0; k < p->nclaimed; k++)
			gl_pgarray_add_i64(&claimed, p->claimed[k]);
		c_str(o, gl_pgarray_end(&claimed), 1);
	} else {
		c_str(o, NULL, 0);
		c_str(o, NULL, 1);
	}
	gl_strbuf_fini(&jobs);
	gl_strbuf_fini(&pods);
	gl_strbuf_fini(&one);
	gl_strbuf_fini(&claimed);
}

/* A bucket row is written once a sample, its job with it: the job with
 * the largest share of the bucket so far (the round's shares are written
 * first), kept when this sample gave no job a share. An UPDATE after the
 * insert would write every new bucket row twice and, job_pk being
 * indexed, its index entries too (docs/scale.md, bytes a GPU-day). */
static const char usage_sql[] =
	"INSERT INTO gpu_usage (gpu_id, bucket, cluster_id, bucket_s, samples, busy_samples,"
	" nodata_samples, active_sum, fb_used_max_mib, energy_mj, covered_s, busy_s, idle_s, held_idle_s,"
	" engine_samples, power_max_w, energy_resets, xid_last, last_sample_at, job_pk, attribution)"
	" SELECT u.gpu_id, to_timestamp($2::bigint), $1::integer, $3::integer, 1, u.busy, u.nodata,"
	" u.active_sum, u.fb_max, u.energy_mj, u.covered_s, u.busy_s, u.idle_s, u.held_idle_s, u.engine_n, u.power_max,"
	" u.resets, u.xid, to_timestamp($4::bigint), d.job_pk, d.attribution FROM gl_dcgm_use u"
	" LEFT JOIN (SELECT DISTINCT ON (j.gpu_id) j.gpu_id, j.job_pk, j.attribution FROM gpu_usage_jobs j"
	"  WHERE j.bucket = to_timestamp($2::bigint)"
	"  AND j.gpu_id IN (SELECT DISTINCT gpu_id FROM gl_dcgm_share)"
	"  ORDER BY j.gpu_id, j.gpu_s DESC, j.job_pk) d ON d.gpu_id = u.gpu_id"
	" ON CONFLICT (gpu_id, bucket) DO UPDATE SET"
	" samples = gpu_usage.samples + EXCLUDED.samples,"
	" busy_samples = gpu_usage.busy_samples + EXCLUDED.busy_samples,"
	" nodata_samples = gpu_usage.nodata_samples + EXCLUDED.nodata_samples,"
	" active_sum = gpu_usage.active_sum + EXCLUDED.active_sum,"
	" engine_samples = gpu_usage.engine_samples + EXCLUDED.engine_samples,"
	" fb_used_max_mib = greatest(gpu_usage.fb_used_max_mib, EXCLUDED.fb_used_max_mib),"
	" power_max_w = greatest(gpu_usage.power_max_w, EXCLUDED.power_max_w),"
	" energy_mj = CASE WHEN gpu_usage.energy_mj IS NULL AND EXCLUDED.energy_mj IS NULL THEN NULL"
	"  ELSE coalesce(gpu_usage.energy_mj, 0) + coalesce(EXCLUDED.energy_mj, 0) END,"
	" energy_resets = gpu_usage.energy_resets + EXCLUDED.energy_resets,"
	" xid_last = coalesce(EXCLUDED.xid_last, gpu_usage.xid_last),"
	" covered_s = gpu_usage.covered_s + EXCLUDED.covered_s,"
	" busy_s = gpu_usage.busy_s + EXCLUDED.busy_s,"
	" idle_s = gpu_usage.idle_s + EXCLUDED.idle_s,"
	" held_idle_s = gpu_usage.held_idle_s + EXCLUDED.held_idle_s,"
	" last_sample_at = greatest(gpu_usage.last_sample_at, EXCLUDED.last_sample_at),"
	" job_pk = CASE WHEN EXCLUDED.job_pk IS NULL THEN gpu_usage.job_pk ELSE EXCLUDED.job_pk END,"
	" attribution = CASE WHEN EXCLUDED.job_pk IS NULL THEN gpu_usage.attribution ELSE EXCLUDED.attribution END";

static const char shares_sql[] =
	"INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples,"
	" busy_samples, nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s, held_idle_gpu_s)"
	" SELECT gpu_id, to_timestamp($2::bigint), job_pk, $1::integer, kind, 1, busy, nodata, gpu_s,"
	" busy_gpu_s, idle_gpu_s, held_idle_gpu_s FROM gl_dcgm_share"
	" ON CONFLICT (gpu_id, bucket, job_pk) DO UPDATE SET"
	" attribution = CASE WHEN gl_attribution_rank(EXCLUDED.attribution)"
	"  < gl_attribution_rank(gpu_usage_jobs.attribution) THEN EXCLUDED.attribution"
	"  ELSE gpu_usage_jobs.attribution END,"
	" samples = gpu_usage_jobs.samples + EXCLUDED.samples,"
	" busy_samples = gpu_usage_jobs.busy_samples + EXCLUDED.busy_samples,"
	" nodata_samples = gpu_usage_jobs.nodata_samples + EXCLUDED.nodata_samples,"
	" gpu_s = gpu_usage_jobs.gpu_s + EXCLUDED.gpu_s,"
	" busy_gpu_s = gpu_usage_jobs.busy_gpu_s + EXCLUDED.busy_gpu_s,"
	" idle_gpu_s = gpu_usage_jobs.idle_gpu_s + EXCLUDED.idle_gpu_s,"
	" held_idle_gpu_s = gpu_usage_jobs.held_idle_gpu_s + EXCLUDED.held_idle_gpu_s";

static const char state_sql[] =
	"INSERT INTO dcgm_gpu_state (gpu_id, cluster_id, last_sample_at, energy_last_mj)"
	" SELECT gpu_id, $1::integer, to_timestamp($2::bigint), energy_last FROM gl_dcgm_use"
	" ON CONFLICT (gpu_id) DO UPDATE SET last_sample_at = EXCLUDED.last_sample_at,"
	" energy_last_mj = coalesce(EXCLUDED.energy_last_mj, dcgm_gpu_state.energy_last_mj)";

/* samples whose job is not known yet wait for it (sql/020, 048): labelled
 * ones six hours at most, those of unlabelled nodes one hour */
static int pending(PGconn *c, const struct gl_dcgmstore_stage *s, const char *cid, const char *at, const char *bucket,
		   struct gl_err *err)
{
	int rc;
	if ((rc = gl_db_query(c,
			      "DELETE FROM dcgm_pending WHERE cluster_id = $1::integer"
			      " AND at < to_timestamp($2::bigint) - interval '1 hour'"
			      " AND (left_share IS NOT NULL OR at < to_timestamp($2::bigint) - interval '6 hours')",
			      2, (const char *[]){cid, at}, NULL, err)))
		return rc;
	if (!s->pend.len)
		return 0;
	return gl_db_query(c,
			   "INSERT INTO dcgm_pending (gpu_id, at, bucket, cluster_id, node, jobs, pods, dt_s, busy, nodata,"
			   " busy_ms, idle_ms, held_ms, left_share, node_gpus, claimed)"
			   " SELECT gpu_id, to_timestamp($2::bigint), to_timestamp($3::bigint), $1::integer, node, jobs, pods,"
			   " dt_s, busy, nodata, busy_ms, idle_ms, held_ms, left_share, node_gpus, claimed FROM gl_dcgm_pend"
			   " ON CONFLICT DO NOTHING",
			   3, (const char *[]){cid, at, bucket}, NULL, err);
}

int gl_dcgmstore_apply(struct gl_store *store, struct gl_dcgmstore_stage *s, int cluster_id, int64_t at_s,
		       int64_t bucket_start_s, int64_t bucket_s, int64_t applied, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16], at[24], bucket[24], bs[24];
	int rc;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	fmt_i64(at, sizeof at, at_s);
	fmt_i64(bucket, sizeof bucket, bucket_start_s);
	fmt_i64(bs, sizeof bs, bucket_s);
	if ((s->use.len && (rc = gl_db_copy_in(c, "COPY gl_dcgm_use FROM STDIN", s->use.p, s->use.len, err))) ||
	    (s->share.len && (rc = gl_db_copy_in(c, "COPY gl_dcgm_share FROM STDIN", s->share.p, s->share.len, err))) ||
	    (s->pend.len && (rc = gl_db_copy_in(c, "COPY gl_dcgm_pend FROM STDIN", s->pend.p, s->pend.len, err))))
		return rc;
	if (applied && ((rc = gl_db_query(c, shares_sql, 2, (const char *[]){cid, bucket}, NULL, err)) ||
			(rc = gl_db_query(c, usage_sql, 4, (const char *[]){cid, bucket, bs, at}, NULL, err)) ||
			(rc = gl_db_query(c, state_sql, 2, (const char *[]){cid, at}, NULL, err))))
		return rc;
	return pending(c, s, cid, at, bucket, err);
}

int gl_dcgmstore_mark_absent(struct gl_store *store, int cluster_id, int64_t at_s, int64_t grace_s, int64_t *marked,
			     struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16], at[24], grace[24];
	PGresult *r = NULL;
	int rc;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	fmt_i64(at, sizeof at, at_s);
	fmt_i64(grace, sizeof grace, grace_s);
	if ((rc = gl_db_query(c,
			      /* a GPU gone stops following its node: if the node
			       * answers again without it, it stays gone */
			      "WITH m AS (UPDATE gpus g SET absent_since = s.last_seen, last_seen = s.last_seen,"
			      " follows_node = false FROM gl_gpus_seen() s WHERE s.gpu_id = g.gpu_id AND s.cluster_id = $1::integer"
			      " AND s.absent_since IS NULL AND s.last_seen < to_timestamp($2::bigint) - make_interval(secs => $3::bigint)"
			      " RETURNING 1) SELECT count(*) FROM m",
			      3, (const char *[]){cid, at, grace}, &r, err)))
		return rc;
	*marked = count_of(r);
	return 0;
}

int gl_dcgmstore_watermark(struct gl_store *store, int cluster_id, int64_t at_s, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16], at[24];
	snprintf(cid, sizeof cid, "%d", cluster_id);
	fmt_i64(at, sizeof at, at_s);
	return gl_db_query(c,
			   "INSERT INTO ingest_state (source, cluster_id, watermark, updated_at)"
			   " VALUES ('dcgm', $1::integer, to_timestamp($2::bigint), now())"
			   " ON CONFLICT (source, cluster_id) DO UPDATE SET"
			   " watermark = greatest(ingest_state.watermark, EXCLUDED.watermark), updated_at = now()",
			   2, (const char *[]){cid, at}, NULL, err);
}

int gl_dcgmstore_claim_pending(struct gl_store *store, int cluster_id, int64_t *claimed, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16];
	PGresult *r = NULL;
	int rc;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	if ((rc = gl_db_query(c, "SELECT gl_dcgm_claim_pending($1::integer)", 1, (const char *[]){cid}, &r, err)))
		return rc;
	if (claimed)
		*claimed = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return 0;
}

int gl_dcgmstore_inv_gpus(struct gl_store *st, const char *cluster, struct gl_dcgmstore_inv_gpu **out, size_t *n,
			  struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;
	*out = NULL;
	*n = 0;
	/* the model a raw name is counted and billed under (sql/024) */
	if ((rc = gl_db_query(c,
			      "SELECT cl.name, nd.name, g.uuid, coalesce(g.model, ''), coalesce(gl_gpu_model(g.model), ''),"
			      " coalesce(g.mig_profile, ''), coalesce(g.driver, ''), coalesce(g.source, ''), g.mig_instance,"
			      " extract(epoch FROM g.first_seen)::bigint, extract(epoch FROM g.last_seen)::bigint,"
			      " extract(epoch FROM g.absent_since)::bigint, coalesce(g.gpu_index, -1)"
			      " FROM gl_gpus_seen() g JOIN nodes nd ON nd.node_id = g.node_id JOIN clusters cl ON cl.cluster_id = g.cluster_id"
			      " WHERE $1::text IS NULL OR cl.name = $1"
			      " ORDER BY 1, 2, g.gpu_index NULLS LAST, 3, 9",
			      1, (const char *[]){cluster}, &r, err)))
		goto out;
	*n = (size_t)PQntuples(r);
	*out = gl_xcalloc(*n ? *n : 1, sizeof **out);
	for (size_t i = 0; i < *n; i++) {
		struct gl_dcgmstore_inv_gpu *g = &(*out)[i];
		char **str[] = {&g->cluster, &g->node, &g->uuid, &g->model_raw, &g->model, &g->profile, &g->driver, &g->source};
		int64_t *tm[] = {&g->first_seen_s, &g->last_seen_s, &g->absent_since_s};
		for (int k = 0; k < 8; k++)
			*str[k] = gl_xstrdup(PQgetvalue(r, (int)i, k));
		g->mig_instance = atoi(PQgetvalue(r, (int)i, 8));
		for (int k = 0; k < 3; k++)
			*tm[k] = PQgetisnull(r, (int)i, 9 + k) ? GL_TIME_NONE : atoll(PQgetvalue(r, (int)i, 9 + k));
		g->gpu_index = atoi(PQgetvalue(r, (int)i, 12));
	}
out:
	PQclear(r);
	return rc;
}

void gl_dcgmstore_inv_gpus_free(struct gl_dcgmstore_inv_gpu *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].cluster);
		free(v[i].node);
		free(v[i].uuid);
		free(v[i].model_raw);
		free(v[i].model);
		free(v[i].profile);
		free(v[i].driver);
		free(v[i].source);
	}
	free(v);
}
