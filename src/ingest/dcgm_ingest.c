/* dcgm-exporter ingestion (see include/gl/dcgm_ingest.h, docs/ingest.md). */
#include "gl/dcgm_ingest.h"
#include "gl/db.h"
#include "gl/dcgm_attrib.h"
#include "gl/ingest.h"
#include "gl/log.h"
#include "gl/redact.h"
#include "gl/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- options ------------------------------------------------------------ */

int gl_dcgm_ingest_opts_init(struct gl_dcgm_ingest_opts *o, const struct gl_config *cfg, const char *cluster,
			     struct gl_err *err)
{
	char *end;
	double th = strtod(cfg->idle_engine_active_threshold, &end);

	memset(o, 0, sizeof *o);
	if (*end || end == cfg->idle_engine_active_threshold || !(th >= 0 && th <= 1))
		return gl_err_set(err, GL_ECONFIG, "idle.engine_active_threshold: '%s' is not a ratio in [0, 1]",
				  cfg->idle_engine_active_threshold);
	o->cluster = cluster;
	o->input_name = "";
	o->bucket_s = cfg->bucket_s;
	o->absent_grace_s = cfg->inventory_absent_grace_s;
	o->max_skip_reasons = cfg->ingest_max_skip_reasons;
	o->idle.engine_active_threshold = th;
	o->idle.use_gpu_util_fallback = cfg->idle_use_gpu_util_fallback;
	o->idle.memory_counts_as_busy = cfg->idle_memory_counts_as_busy;
	o->idle.fb_used_busy_mib = (double)cfg->idle_fb_used_busy_mib;
	o->idle.power_busy_watts = (double)cfg->idle_power_busy_watts;
	/* one missed scrape is bridged, a longer silence is not claimed */
	o->max_gap_s = 60;
	for (size_t i = 0; i < cfg->n_dcgm; i++) {
		if (cluster && !strcmp(cfg->dcgm[i].cluster, cluster)) {
			o->max_gap_s = 2 * cfg->dcgm[i].interval_s;
			break;
		}
	}
	return 0;
}

/* ---- batch -------------------------------------------------------------- */

struct bgpu {
	size_t host, uuid, profile, model, driver; /* offsets into str */
	int gi_id;
	int mig_parent;
	struct gl_dcgm_reading r;
	size_t job0, njobs; /* into refs: one offset per hpc_job value */
	size_t pod0, npods; /* into refs: three offsets (ns, pod, container) per pod */
};

struct gl_dcgm_batch {
	struct bgpu *g;
	size_t n, cap;
	struct gl_strbuf str; /* NUL-terminated strings; offset 0 is "" */
	size_t *refs;
	size_t nrefs, refs_cap;
	struct gl_ingest_stats st;
	int64_t bad_lines, failed, no_host, ignored;
	int has_pods;
};

struct gl_dcgm_batch *gl_dcgm_batch_new(int64_t max_skip_reasons)
{
	struct gl_dcgm_batch *b = gl_xcalloc(1, sizeof *b);
	gl_strbuf_init(&b->str);
	gl_strbuf_putc(&b->str, '\0');
	gl_ingest_stats_init(&b->st, max_skip_reasons);
	return b;
}

void gl_dcgm_batch_free(struct gl_dcgm_batch *b)
{
	if (!b)
		return;
	free(b->g);
	free(b->refs);
	gl_strbuf_fini(&b->str);
	gl_ingest_stats_fini(&b->st);
	free(b);
}

size_t gl_dcgm_batch_gpus(const struct gl_dcgm_batch *b)
{
	return b->n;
}

static size_t put_str(struct gl_dcgm_batch *b, const char *s)
{
	size_t off = b->str.len, n = strlen(s);
	if (!n)
		return 0;
	gl_strbuf_append(&b->str, s, n);
	gl_strbuf_putc(&b->str, '\0');
	return off;
}

static void put_ref(struct gl_dcgm_batch *b, size_t off)
{
	if (b->nrefs == b->refs_cap) {
		b->refs_cap = b->refs_cap ? b->refs_cap * 2 : 256;
		b->refs = gl_xrealloc(b->refs, b->refs_cap * sizeof *b->refs);
	}
	b->refs[b->nrefs++] = off;
}

/* A reason that is not a scrape line: kept for ingest_runs, logged by the
 * caller (the daemon rate-limits per target through the health registry). */
static void add_reason(struct gl_dcgm_batch *b, const char *input, int64_t line, const char *why)
{
	struct gl_ingest_stats *s = &b->st;
	struct gl_strbuf url = GL_STRBUF_INIT;
	char msg[768];
	s->skipped++;
	if (s->n_reasons >= s->max_reasons)
		return;
	/* input is a target's URL, and viewers read the run's reasons: a
	 * user:password@ in it is blanked as in its error */
	gl_redact_secrets(input, &url);
	snprintf(msg, sizeof msg, "%s: %s", gl_strbuf_cstr(&url), why);
	gl_strbuf_fini(&url);
	if (s->n_reasons)
		gl_strbuf_putc(&s->reasons, ',');
	gl_strbuf_printf(&s->reasons, "{\"line\":%lld,\"reason\":\"", (long long)line);
	gl_strbuf_put_json_str(&s->reasons, msg, strlen(msg));
	gl_strbuf_puts(&s->reasons, "\"}");
	s->n_reasons++;
}

void gl_dcgm_batch_fail(struct gl_dcgm_batch *b, const char *input, const char *why)
{
	b->failed++;
	add_reason(b, input, 0, why);
}

void gl_dcgm_batch_add(struct gl_dcgm_batch *b, const struct gl_dcgm_scrape *s, const char *input)
{
	size_t *map = gl_xmalloc((s->ngpus ? s->ngpus : 1) * sizeof *map); /* scrape index -> batch index + 1 */

	b->st.lines_read += (int64_t)s->parse.lines;
	b->ignored += (int64_t)(s->stats.no_uuid + s->stats.not_dcgm + s->stats.bad_ident);
	for (size_t i = 0; i < s->parse.nbad; i++) {
		b->bad_lines++;
		add_reason(b, input, (int64_t)s->parse.bad[i].line, s->parse.bad[i].reason);
	}
	if (s->too_long) {
		/* samples, not lines the parser refused: each one is skipped data */
		char why[300];
		snprintf(why, sizeof why, "%s (%zu samples with a label over its bound dropped)", s->too_long_reason,
			 s->too_long);
		b->bad_lines++;
		add_reason(b, input, (int64_t)s->too_long_line, why);
		b->st.skipped += (int64_t)s->too_long - 1;
	}
	if (s->parse.bad_lines > s->parse.nbad) {
		/* counted, reasons beyond the parser's memory are not known */
		b->bad_lines += (int64_t)(s->parse.bad_lines - s->parse.nbad);
		b->st.skipped += (int64_t)(s->parse.bad_lines - s->parse.nbad);
	}
	for (size_t i = 0; i < s->ngpus; i++) {
		const struct gl_dcgm_gpu *g = &s->gpus[i];
		struct bgpu *o;
		map[i] = 0;
		if (!g->hostname[0]) {
			b->no_host++;
			continue;
		}
		if (b->n == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 64;
			b->g = gl_xrealloc(b->g, b->cap * sizeof *b->g);
		}
		o = &b->g[b->n];
		memset(o, 0, sizeof *o);
		o->host = put_str(b, g->hostname);
		o->uuid = put_str(b, g->uuid);
		o->profile = put_str(b, g->gi_profile);
		o->model = put_str(b, g->model);
		o->driver = put_str(b, g->driver_version);
		o->gi_id = g->gi_id;
		o->r = g->r;
		o->job0 = b->nrefs;
		o->njobs = g->njobs;
		for (size_t k = 0; k < g->njobs; k++)
			put_ref(b, put_str(b, g->jobs[k]));
		o->pod0 = b->nrefs;
		o->npods = g->npods;
		for (size_t k = 0; k < g->npods; k++) {
			put_ref(b, put_str(b, g->pods[k].ns));
			put_ref(b, put_str(b, g->pods[k].pod));
			put_ref(b, put_str(b, g->pods[k].container));
			if (g->pods[k].pod[0])
				b->has_pods = 1;
		}
		map[i] = ++b->n;
	}
	/* a whole GPU whose UUID also has MIG instances is their parent */
	for (size_t i = 0; i < s->ngpus; i++) {
		const struct gl_dcgm_gpu *g = &s->gpus[i], *p;
		if (g->gi_id < 0 || !map[i])
			continue;
		p = gl_dcgm_scrape_find(s, g->hostname, g->uuid, -1);
		if (p && map[p - s->gpus])
			b->g[map[p - s->gpus] - 1].mig_parent = 1;
	}
	free(map);
}

/* ---- COPY text helpers -------------------------------------------------- */

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

/* A text[] literal element: always quoted, \ and " escaped. */
static void arr_elem(struct gl_strbuf *o, const char *s)
{
	gl_strbuf_putc(o, o->len ? ',' : '{');
	gl_strbuf_putc(o, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			gl_strbuf_putc(o, '\\');
		gl_strbuf_putc(o, *s);
	}
	gl_strbuf_putc(o, '"');
}

static void arr_close(struct gl_strbuf *o)
{
	if (!o->len) {
		gl_strbuf_puts(o, "{}");
	} else {
		gl_strbuf_putc(o, '}');
	}
}

/* One dcgm_pending staging row: the sample's GPU, node, its hpc_job and pod
 * labels (text[] literals, then COPY-escaped) and what it covers. */
static void pend_row(struct gl_strbuf *o, int64_t gpu_id, const struct gl_attrib_gpu *g, int64_t dt, int busy,
		     int nodata)
{
	struct gl_strbuf jobs = GL_STRBUF_INIT, pods = GL_STRBUF_INIT, one = GL_STRBUF_INIT;
	for (size_t k = 0; k < g->njobs; k++)
		arr_elem(&jobs, g->jobs[k]);
	arr_close(&jobs);
	for (size_t k = 0; k < g->npods; k++) {
		if (!g->pods[k].pod[0])
			continue;
		gl_strbuf_reset(&one);
		gl_strbuf_printf(&one, "%s/%s", g->pods[k].ns, g->pods[k].pod);
		arr_elem(&pods, gl_strbuf_cstr(&one));
	}
	arr_close(&pods);
	c_i64(o, gpu_id, 0);
	c_str(o, g->node, 0);
	c_str(o, gl_strbuf_cstr(&jobs), 0);
	c_str(o, gl_strbuf_cstr(&pods), 0);
	c_i64(o, dt, 0);
	c_str(o, busy ? "t" : "f", 0);
	c_str(o, nodata ? "t" : "f", 1);
	gl_strbuf_fini(&jobs);
	gl_strbuf_fini(&pods);
	gl_strbuf_fini(&one);
}

/* ---- ingest ------------------------------------------------------------- */

static const char k_temp_sql[] =
	"CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_inv (idx integer, node text, uuid text, gi integer,"
	" profile text, model text, driver text, memory_mib bigint, mig_parent boolean) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_use (gpu_id bigint, busy integer, nodata integer,"
	" active_sum double precision, engine_n integer, fb_max double precision, power_max double precision,"
	" energy_mj bigint, resets integer, xid bigint, covered_s bigint, busy_s bigint, idle_s bigint,"
	" energy_last double precision) ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_share (gpu_id bigint, job_pk bigint, kind text, busy integer,"
	" nodata integer, gpu_s double precision, busy_gpu_s double precision, idle_gpu_s double precision)"
	" ON COMMIT DELETE ROWS;"
	"CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_pend (gpu_id bigint, node text, jobs text[], pods text[], dt_s bigint,"
	" busy boolean, nodata boolean) ON COMMIT DELETE ROWS";

static int find_cluster(PGconn *c, const char *name, int pods, int *cluster_id, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc;
	/* dcgm-exporter does not say which scheduler runs the nodes: an existing
	 * cluster keeps its kind, a new one is guessed from the labels */
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

struct mapped {
	size_t idx;
	int64_t gpu_id;
	int64_t last_s;    /* GL_TIME_NONE: never sampled */
	double energy_last; /* < 0: none */
};

/* Splits "a\x1fb" into pointers into s (modified in place). */
static size_t split_us(char *s, const char ***out)
{
	size_t n = 0, cap = 0;
	const char **v = NULL;
	if (!*s) {
		*out = NULL;
		return 0;
	}
	for (char *p = s;;) {
		char *q = strchr(p, '\x1f');
		if (n == cap) {
			cap = cap ? cap * 2 : 4;
			v = gl_xrealloc(v, cap * sizeof *v);
		}
		v[n++] = p;
		if (!q)
			break;
		*q = '\0';
		p = q + 1;
	}
	*out = v;
	return n;
}

int gl_dcgm_ingest(PGconn *c, const struct gl_dcgm_ingest_opts *o, struct gl_dcgm_batch *b, int64_t at_s,
		   struct gl_dcgm_ingest_result *res_out, struct gl_err *err)
{
	struct gl_dcgm_ingest_result res;
	struct gl_strbuf copy = GL_STRBUF_INIT, nodes_arr = GL_STRBUF_INIT, ids_arr = GL_STRBUF_INIT,
			 pods_arr = GL_STRBUF_INIT, pend = GL_STRBUF_INIT;
	PGresult *r = NULL, *jr = NULL;
	char cid[16], at[24], bucket[24], bucket_s[24], grace[24];
	int cluster_id = 0, rc, in_txn = 0;
	int64_t run_id = 0, bstart, max_gap;
	const char **ptrs = NULL;
	struct gl_dcgm_pod *pods = NULL;
	struct gl_attrib_gpu *ag = NULL;
	struct gl_attrib_job *aj = NULL;
	size_t naj = 0, nshares = 0;
	struct gl_attrib_share *shares = NULL;
	size_t *share0 = NULL;
	struct mapped *mp = NULL;
	size_t nmp = 0;
	const char *status;

	memset(&res, 0, sizeof res);
	res.gpus = (int64_t)b->n;
	res.bad_lines = b->bad_lines;
	res.failed_inputs = b->failed;
	res.no_host = b->no_host;
	if (o->bucket_s <= 0)
		return gl_err_set(err, GL_EINVAL, "dcgm: bucket_s must be positive");
	bstart = at_s - ((at_s % o->bucket_s) + o->bucket_s) % o->bucket_s;
	max_gap = o->max_gap_s > 0 && o->max_gap_s < o->bucket_s ? o->max_gap_s : o->bucket_s;
	snprintf(at, sizeof at, "%lld", (long long)at_s);
	snprintf(bucket, sizeof bucket, "%lld", (long long)bstart);
	snprintf(bucket_s, sizeof bucket_s, "%lld", (long long)o->bucket_s);
	snprintf(grace, sizeof grace, "%lld", (long long)o->absent_grace_s);

	if ((rc = find_cluster(c, o->cluster, b->has_pods, &cluster_id, err)))
		goto out;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	if ((rc = gl_ingest_run_begin(c, "dcgm", cluster_id, o->input_name, &run_id, err)))
		goto out;
	/* partitions outside the batch transaction: their DDL locks gpu_usage
	 * briefly instead of for the whole batch; tomorrow's is made ahead */
	if ((rc = gl_db_exec(c, k_temp_sql, err)) ||
	    (rc = gl_db_query(c, "SELECT gl_ensure_dcgm_partitions(to_timestamp($1::bigint),"
				 " to_timestamp($1::bigint) + interval '1 day')",
			      1, (const char *[]){bucket}, NULL, err)))
		goto out;

	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	in_txn = 1;
	if ((rc = gl_db_query(c, "SELECT pg_advisory_xact_lock(26477, $1::integer)", 1, (const char *[]){cid}, NULL,
			      err)))
		goto out;

	/* 1. inventory */
	for (size_t i = 0; i < b->n; i++) {
		const struct bgpu *g = &b->g[i];
		const char *S = b->str.p;
		int have_mem = gl_dcgm_reading_has(&g->r, GL_DCGM_FB_USED_MIB) && gl_dcgm_reading_has(&g->r, GL_DCGM_FB_FREE_MIB);
		c_i64(&copy, (long long)i, 0);
		c_str(&copy, S + g->host, 0);
		c_str(&copy, S + g->uuid, 0);
		c_i64(&copy, g->gi_id, 0);
		c_str(&copy, S + g->profile, 0);
		c_str(&copy, S + g->model, 0);
		c_str(&copy, S + g->driver, 0);
		if (have_mem)
			c_i64(&copy, llround(g->r.v[GL_DCGM_FB_USED_MIB] + g->r.v[GL_DCGM_FB_FREE_MIB]), 0);
		else
			c_str(&copy, NULL, 0);
		c_str(&copy, g->mig_parent ? "t" : "f", 1);
	}
	if (b->n && (rc = gl_db_copy_in(c, "COPY gl_dcgm_inv FROM STDIN", copy.p, copy.len, err)))
		goto out;
	if ((rc = gl_db_query(c,
			      "WITH up AS (INSERT INTO nodes (cluster_id, name, first_seen, last_seen)"
			      " SELECT DISTINCT $1::integer, node, to_timestamp($2::bigint), to_timestamp($2::bigint)"
			      " FROM gl_dcgm_inv"
			      " ON CONFLICT (cluster_id, name) DO UPDATE SET"
			      " first_seen = least(nodes.first_seen, EXCLUDED.first_seen),"
			      " last_seen = greatest(nodes.last_seen, EXCLUDED.last_seen)"
			      " WHERE nodes.last_seen < EXCLUDED.last_seen OR nodes.first_seen > EXCLUDED.first_seen"
			      " RETURNING 1) SELECT (SELECT count(DISTINCT node) FROM gl_dcgm_inv)",
			      2, (const char *[]){cid, at}, &r, err)))
		goto out;
	res.nodes = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	r = NULL;
	/* descriptive fields follow the newest scrape; an older one re-ingested
	 * only widens first/last seen */
	if ((rc = gl_db_query(c,
			      "WITH up AS (INSERT INTO gpus (cluster_id, node_id, uuid, mig_instance, model, memory_mib,"
			      " mig_profile, driver, first_seen, last_seen, mig_parent)"
			      " SELECT DISTINCT ON (i.node, i.uuid, i.gi) $1::integer, n.node_id, i.uuid, i.gi, i.model,"
			      " i.memory_mib, i.profile, i.driver, to_timestamp($2::bigint), to_timestamp($2::bigint), i.mig_parent"
			      " FROM gl_dcgm_inv i JOIN nodes n ON n.cluster_id = $1::integer AND n.name = i.node"
			      " ORDER BY i.node, i.uuid, i.gi, i.idx"
			      " ON CONFLICT (cluster_id, node_id, uuid, mig_instance) DO UPDATE SET"
			      " model = CASE WHEN EXCLUDED.last_seen >= gpus.last_seen THEN coalesce(EXCLUDED.model, gpus.model) ELSE gpus.model END,"
			      " memory_mib = CASE WHEN EXCLUDED.last_seen >= gpus.last_seen THEN coalesce(EXCLUDED.memory_mib, gpus.memory_mib) ELSE gpus.memory_mib END,"
			      " mig_profile = CASE WHEN EXCLUDED.last_seen >= gpus.last_seen THEN coalesce(EXCLUDED.mig_profile, gpus.mig_profile) ELSE gpus.mig_profile END,"
			      " driver = CASE WHEN EXCLUDED.last_seen >= gpus.last_seen THEN coalesce(EXCLUDED.driver, gpus.driver) ELSE gpus.driver END,"
			      " mig_parent = CASE WHEN EXCLUDED.last_seen >= gpus.last_seen THEN EXCLUDED.mig_parent ELSE gpus.mig_parent END,"
			      " first_seen = least(gpus.first_seen, EXCLUDED.first_seen),"
			      " last_seen = greatest(gpus.last_seen, EXCLUDED.last_seen),"
			      " absent_since = CASE WHEN EXCLUDED.last_seen > gpus.absent_since THEN NULL ELSE gpus.absent_since END"
			      " WHERE EXCLUDED.last_seen > gpus.last_seen OR EXCLUDED.first_seen < gpus.first_seen"
			      "  OR (EXCLUDED.last_seen = gpus.last_seen AND (gpus.model, gpus.memory_mib, gpus.mig_profile, gpus.driver, gpus.mig_parent)"
			      "      IS DISTINCT FROM (coalesce(EXCLUDED.model, gpus.model), coalesce(EXCLUDED.memory_mib, gpus.memory_mib),"
			      "      coalesce(EXCLUDED.mig_profile, gpus.mig_profile), coalesce(EXCLUDED.driver, gpus.driver), EXCLUDED.mig_parent))"
			      " RETURNING (xmax = 0) AS ins) SELECT count(*) FILTER (WHERE ins) FROM up",
			      2, (const char *[]){cid, at}, &r, err)))
		goto out;
	res.new_gpus = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c,
			      "SELECT DISTINCT ON (g.gpu_id) i.idx, g.gpu_id, extract(epoch FROM s.last_sample_at)::bigint,"
			      " s.energy_last_mj"
			      " FROM gl_dcgm_inv i JOIN nodes n ON n.cluster_id = $1::integer AND n.name = i.node"
			      " JOIN gpus g ON g.cluster_id = $1::integer AND g.node_id = n.node_id AND g.uuid = i.uuid"
			      "  AND g.mig_instance = i.gi"
			      " LEFT JOIN dcgm_gpu_state s ON s.gpu_id = g.gpu_id"
			      " ORDER BY g.gpu_id, i.idx",
			      1, (const char *[]){cid}, &r, err)))
		goto out;
	nmp = (size_t)PQntuples(r);
	mp = gl_xcalloc(nmp ? nmp : 1, sizeof *mp);
	for (size_t k = 0; k < nmp; k++) {
		mp[k].idx = (size_t)atoll(PQgetvalue(r, (int)k, 0));
		mp[k].gpu_id = atoll(PQgetvalue(r, (int)k, 1));
		mp[k].last_s = PQgetisnull(r, (int)k, 2) ? GL_TIME_NONE : atoll(PQgetvalue(r, (int)k, 2));
		mp[k].energy_last = PQgetisnull(r, (int)k, 3) ? -1.0 : strtod(PQgetvalue(r, (int)k, 3), NULL);
	}
	PQclear(r);
	r = NULL;
	res.duplicates = (int64_t)b->n - (int64_t)nmp;

	/* 2. the jobs running at at_s that could claim these GPUs */
	ptrs = gl_xmalloc((b->nrefs ? b->nrefs : 1) * sizeof *ptrs);
	for (size_t k = 0; k < b->nrefs; k++)
		ptrs[k] = b->str.p + b->refs[k];
	ag = gl_xcalloc(b->n ? b->n : 1, sizeof *ag);
	{
		size_t npods_all = 0;
		for (size_t i = 0; i < b->n; i++)
			npods_all += b->g[i].npods;
		pods = gl_xcalloc(npods_all ? npods_all : 1, sizeof *pods);
		npods_all = 0;
		for (size_t i = 0; i < b->n; i++) {
			const struct bgpu *g = &b->g[i];
			ag[i].node = b->str.p + g->host;
			ag[i].jobs = ptrs + g->job0;
			ag[i].njobs = g->njobs;
			ag[i].pods = pods + npods_all;
			ag[i].npods = g->npods;
			ag[i].skip = g->mig_parent;
			for (size_t k = 0; k < g->npods; k++) {
				pods[npods_all].ns = ptrs[g->pod0 + 3 * k];
				pods[npods_all].pod = ptrs[g->pod0 + 3 * k + 1];
				pods[npods_all].container = ptrs[g->pod0 + 3 * k + 2];
				if (pods[npods_all].pod[0])
					arr_elem(&pods_arr, pods[npods_all].pod);
				npods_all++;
			}
			for (size_t k = 0; k < g->njobs; k++)
				arr_elem(&ids_arr, ag[i].jobs[k]);
			/* nodes arrive grouped by scrape: skip the repeats next to each other */
			if (i == 0 || strcmp(ag[i].node, ag[i - 1].node))
				arr_elem(&nodes_arr, ag[i].node);
		}
		arr_close(&nodes_arr);
		arr_close(&ids_arr);
		arr_close(&pods_arr);
	}
	if ((rc = gl_db_query(c,
			      "SELECT job_pk, job_id, coalesce(job_id_raw, ''), coalesce(het_job_id::text, ''),"
			      " coalesce(namespace, ''), coalesce(name, ''), gpu_milli,"
			      " coalesce(array_to_string(nodes, chr(31)), ''), extract(epoch FROM start_at)::bigint"
			      " FROM jobs WHERE cluster_id = $1::integer AND start_at <= to_timestamp($2::bigint)"
			      " AND (end_at IS NULL OR end_at > to_timestamp($2::bigint))"
			      " AND (nodes && $3::text[] OR job_id = ANY($4::text[]) OR job_id_raw = ANY($4::text[])"
			      "  OR het_job_id::text = ANY($4::text[])"
			      "  OR (namespace IS NOT NULL AND (name = ANY($5::text[]) OR job_id = ANY($5::text[]))))",
			      5, (const char *[]){cid, at, nodes_arr.p, ids_arr.p, pods_arr.p}, &jr, err)))
		goto out;
	naj = (size_t)PQntuples(jr);
	aj = gl_xcalloc(naj ? naj : 1, sizeof *aj);
	for (size_t k = 0; k < naj; k++) {
		const char **nv;
		aj[k].job_pk = atoll(PQgetvalue(jr, (int)k, 0));
		aj[k].job_id = PQgetvalue(jr, (int)k, 1);
		aj[k].job_id_raw = PQgetvalue(jr, (int)k, 2);
		aj[k].het_job_id = PQgetvalue(jr, (int)k, 3);
		aj[k].ns = PQgetvalue(jr, (int)k, 4);
		aj[k].name = PQgetvalue(jr, (int)k, 5);
		aj[k].gpu_milli = atoll(PQgetvalue(jr, (int)k, 6));
		aj[k].start_s = atoll(PQgetvalue(jr, (int)k, 8));
		/* the result's own storage: split in place, freed with it */
		aj[k].nnodes = split_us(PQgetvalue(jr, (int)k, 7), &nv);
		aj[k].nodes = nv;
	}
	gl_dcgm_attribute(ag, b->n, aj, naj, &shares, &nshares);
	share0 = gl_xcalloc(b->n + 1, sizeof *share0);
	for (size_t k = 0; k < nshares; k++)
		share0[shares[k].gpu + 1]++;
	for (size_t i = 0; i < b->n; i++)
		share0[i + 1] += share0[i];

	/* 3. samples: rollup rows, share rows */
	gl_strbuf_reset(&copy);
	{
		struct gl_strbuf sc = GL_STRBUF_INIT;
		for (size_t k = 0; k < nmp; k++) {
			const struct bgpu *g = &b->g[mp[k].idx];
			struct gl_dcgm_bucket bk;
			int64_t dt;
			int busy, nodata, idle, energy_ok;
			enum gl_attrib_kind best = GL_ATTRIB_NODE_ESTIMATED;

			if (mp[k].last_s != GL_TIME_NONE && at_s <= mp[k].last_s) {
				res.stale++;
				continue;
			}
			gl_dcgm_bucket_init(&bk, at_s, o->bucket_s);
			bk.last_t_s = mp[k].last_s;
			bk.energy_last_mj = mp[k].energy_last;
			if (gl_dcgm_bucket_add(&bk, &o->idle, at_s, &g->r) != 0) {
				res.stale++; /* cannot happen: checked above */
				continue;
			}
			res.applied++;
			dt = mp[k].last_s == GL_TIME_NONE ? 0 : at_s - mp[k].last_s;
			if (dt > max_gap)
				dt = max_gap;
			busy = (int)bk.busy_samples;
			nodata = (int)bk.nodata_samples;
			idle = !busy && !nodata;
			energy_ok = gl_dcgm_reading_has(&g->r, GL_DCGM_ENERGY_MJ) && mp[k].energy_last >= 0 &&
				    g->r.v[GL_DCGM_ENERGY_MJ] >= 0;
			c_i64(&copy, mp[k].gpu_id, 0);
			c_i64(&copy, busy, 0);
			c_i64(&copy, nodata, 0);
			c_dbl(&copy, 1, bk.engine_sum, 0);
			c_i64(&copy, bk.engine_n, 0);
			c_dbl(&copy, bk.fb_used_max_mib >= 0, bk.fb_used_max_mib, 0);
			c_dbl(&copy, bk.power_max_w >= 0, bk.power_max_w, 0);
			if (energy_ok)
				c_i64(&copy, llround(bk.energy_mj), 0);
			else
				c_str(&copy, NULL, 0);
			c_i64(&copy, bk.energy_resets, 0);
			if (gl_dcgm_reading_has(&g->r, GL_DCGM_XID_ERRORS))
				c_i64(&copy, llround(bk.xid_last), 0);
			else
				c_str(&copy, NULL, 0);
			c_i64(&copy, dt, 0);
			c_i64(&copy, busy ? dt : 0, 0);
			c_i64(&copy, idle ? dt : 0, 0);
			c_dbl(&copy, bk.energy_last_mj >= 0, bk.energy_last_mj, 1);

			for (size_t s = share0[mp[k].idx]; s < share0[mp[k].idx + 1]; s++) {
				/* never cover time before the job started */
				int64_t jdt = at_s - shares[s].job_start_s < dt ? at_s - shares[s].job_start_s : dt;
				double gs = (double)jdt * shares[s].share;
				if (shares[s].kind < best)
					best = shares[s].kind;
				c_i64(&sc, mp[k].gpu_id, 0);
				c_i64(&sc, shares[s].job_pk, 0);
				c_str(&sc, gl_attrib_kind_name(shares[s].kind), 0);
				c_i64(&sc, busy, 0);
				c_i64(&sc, nodata, 0);
				c_dbl(&sc, 1, gs, 0);
				c_dbl(&sc, 1, busy ? gs : 0.0, 0);
				c_dbl(&sc, 1, idle ? gs : 0.0, 1);
			}
			if (share0[mp[k].idx] < share0[mp[k].idx + 1]) {
				res.attributed[best]++;
			} else if (!g->mig_parent) {
				res.unattributed++;
				if (g->njobs || g->npods)
					pend_row(&pend, mp[k].gpu_id, &ag[mp[k].idx], dt, busy, nodata);
			}
		}
		if (copy.len && (rc = gl_db_copy_in(c, "COPY gl_dcgm_use FROM STDIN", copy.p, copy.len, err))) {
			gl_strbuf_fini(&sc);
			goto out;
		}
		if (sc.len && (rc = gl_db_copy_in(c, "COPY gl_dcgm_share FROM STDIN", sc.p, sc.len, err))) {
			gl_strbuf_fini(&sc);
			goto out;
		}
		if (pend.len && (rc = gl_db_copy_in(c, "COPY gl_dcgm_pend FROM STDIN", pend.p, pend.len, err))) {
			gl_strbuf_fini(&sc);
			goto out;
		}
		gl_strbuf_fini(&sc);
	}
	if (res.applied &&
	    ((rc = gl_db_query(c,
			       "INSERT INTO gpu_usage (gpu_id, bucket, cluster_id, bucket_s, samples, busy_samples,"
			       " nodata_samples, active_sum, fb_used_max_mib, energy_mj, covered_s, busy_s, idle_s,"
			       " engine_samples, power_max_w, energy_resets, xid_last, last_sample_at)"
			       " SELECT gpu_id, to_timestamp($2::bigint), $1::integer, $3::integer, 1, busy, nodata,"
			       " active_sum, fb_max, energy_mj, covered_s, busy_s, idle_s, engine_n, power_max, resets, xid,"
			       " to_timestamp($4::bigint) FROM gl_dcgm_use"
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
			       " last_sample_at = greatest(gpu_usage.last_sample_at, EXCLUDED.last_sample_at)",
			       4, (const char *[]){cid, bucket, bucket_s, at}, NULL, err)) ||
	     (rc = gl_db_query(c,
			       "INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples,"
			       " busy_samples, nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s)"
			       " SELECT gpu_id, to_timestamp($2::bigint), job_pk, $1::integer, kind, 1, busy, nodata, gpu_s,"
			       " busy_gpu_s, idle_gpu_s FROM gl_dcgm_share"
			       " ON CONFLICT (gpu_id, bucket, job_pk) DO UPDATE SET"
			       " attribution = CASE WHEN gl_attribution_rank(EXCLUDED.attribution)"
			       "  < gl_attribution_rank(gpu_usage_jobs.attribution) THEN EXCLUDED.attribution"
			       "  ELSE gpu_usage_jobs.attribution END,"
			       " samples = gpu_usage_jobs.samples + EXCLUDED.samples,"
			       " busy_samples = gpu_usage_jobs.busy_samples + EXCLUDED.busy_samples,"
			       " nodata_samples = gpu_usage_jobs.nodata_samples + EXCLUDED.nodata_samples,"
			       " gpu_s = gpu_usage_jobs.gpu_s + EXCLUDED.gpu_s,"
			       " busy_gpu_s = gpu_usage_jobs.busy_gpu_s + EXCLUDED.busy_gpu_s,"
			       " idle_gpu_s = gpu_usage_jobs.idle_gpu_s + EXCLUDED.idle_gpu_s",
			       2, (const char *[]){cid, bucket}, NULL, err)) ||
	     /* the row's job: the one with the largest share of the bucket so far */
	     (rc = gl_db_query(c,
			       "UPDATE gpu_usage u SET job_pk = d.job_pk, attribution = d.attribution"
			       " FROM (SELECT DISTINCT ON (j.gpu_id) j.gpu_id, j.job_pk, j.attribution FROM gpu_usage_jobs j"
			       "  WHERE j.bucket = to_timestamp($1::bigint)"
			       "  AND j.gpu_id IN (SELECT DISTINCT gpu_id FROM gl_dcgm_share)"
			       "  ORDER BY j.gpu_id, j.gpu_s DESC, j.job_pk) d"
			       " WHERE u.bucket = to_timestamp($1::bigint) AND u.gpu_id = d.gpu_id"
			       " AND (u.job_pk IS DISTINCT FROM d.job_pk OR u.attribution IS DISTINCT FROM d.attribution)",
			       1, (const char *[]){bucket}, NULL, err)) ||
	     (rc = gl_db_query(c,
			       "INSERT INTO dcgm_gpu_state (gpu_id, cluster_id, last_sample_at, energy_last_mj)"
			       " SELECT gpu_id, $1::integer, to_timestamp($2::bigint), energy_last FROM gl_dcgm_use"
			       " ON CONFLICT (gpu_id) DO UPDATE SET last_sample_at = EXCLUDED.last_sample_at,"
			       " energy_last_mj = coalesce(EXCLUDED.energy_last_mj, dcgm_gpu_state.energy_last_mj)",
			       2, (const char *[]){cid, at}, NULL, err))))
		goto out;

	/* labelled samples whose job is not known yet wait for it (sql/020),
	 * six hours at most */
	if ((rc = gl_db_query(c,
			      "DELETE FROM dcgm_pending WHERE cluster_id = $1::integer"
			      " AND at < to_timestamp($2::bigint) - interval '6 hours'",
			      2, (const char *[]){cid, at}, NULL, err)))
		goto out;
	if (pend.len &&
	    (rc = gl_db_query(c,
			      "INSERT INTO dcgm_pending (gpu_id, at, bucket, cluster_id, node, jobs, pods, dt_s, busy, nodata)"
			      " SELECT gpu_id, to_timestamp($2::bigint), to_timestamp($3::bigint), $1::integer, node, jobs, pods,"
			      " dt_s, busy, nodata FROM gl_dcgm_pend ON CONFLICT DO NOTHING",
			      3, (const char *[]){cid, at, bucket}, NULL, err)))
		goto out;

	/* 4. GPUs silent for longer than the grace period are gone since they
	 * were last seen. Not when every input failed: our own network trouble
	 * must not empty the fleet. */
	if ((b->n || !b->failed) &&
	    (rc = gl_db_query(c,
			      "WITH m AS (UPDATE gpus SET absent_since = last_seen WHERE cluster_id = $1::integer"
			      " AND absent_since IS NULL AND last_seen < to_timestamp($2::bigint) - make_interval(secs => $3::bigint)"
			      " RETURNING 1) SELECT count(*) FROM m",
			      3, (const char *[]){cid, at, grace}, &r, err)))
		goto out;
	if (r)
		res.marked_absent = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	r = NULL;

	/* 5. watermark (never lowered by an old file; not moved by a round in
	 * which no target answered) and the run's counters */
	if (b->n && (rc = gl_db_query(c,
			      "INSERT INTO ingest_state (source, cluster_id, watermark, updated_at)"
			      " VALUES ('dcgm', $1::integer, to_timestamp($2::bigint), now())"
			      " ON CONFLICT (source, cluster_id) DO UPDATE SET"
			      " watermark = greatest(ingest_state.watermark, EXCLUDED.watermark), updated_at = now()",
			      2, (const char *[]){cid, at}, NULL, err)))
		goto out;
	b->st.inserted = res.applied;
	b->st.unchanged = res.stale;
	b->st.ignored = b->ignored + res.duplicates;
	status = b->failed || b->bad_lines || b->no_host ? "partial" : "ok";
	if (b->no_host)
		add_reason(b, o->input_name, 0, "GPUs without a Hostname label skipped (give the node name)");
	if ((rc = gl_ingest_run_update(c, run_id, &b->st, status, NULL, err)))
		goto out;
	if ((rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	in_txn = 0;
out:
	if (rc && in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	if (rc && run_id) {
		struct gl_err e2 = {0};
		/* one transaction per round: none of it was written */
		b->st.inserted = b->st.updated = b->st.unchanged = 0;
		if (gl_ingest_run_fail(c, run_id, &b->st, err ? err->msg : "error",
				       "none of this round's samples were written: the next round scrapes the targets again",
				       &e2))
			gl_log(GL_LOG_WARN, "dcgm: could not record the failed run: %s", e2.msg);
	}
	gl_ingest_run_audit(c, run_id);
	if (rc)
		gl_err_prefix(err, "dcgm %s: ", o->cluster);
	if (!rc && res_out)
		*res_out = res;
	for (size_t k = 0; k < naj; k++)
		free((void *)aj[k].nodes);
	free(aj);
	PQclear(jr);
	PQclear(r);
	free(shares);
	free(share0);
	free(mp);
	free(ag);
	free(pods);
	free(ptrs);
	gl_strbuf_fini(&copy);
	gl_strbuf_fini(&nodes_arr);
	gl_strbuf_fini(&ids_arr);
	gl_strbuf_fini(&pods_arr);
	gl_strbuf_fini(&pend);
	return rc;
}

int gl_dcgm_claim_pending(PGconn *c, int cluster_id, int64_t *claimed, struct gl_err *err)
{
	char cid[16];
	PGresult *r = NULL;
	int rc;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	if ((rc = gl_db_query(c, "SELECT gl_dcgm_claim_pending($1::integer)", 1, (const char *[]){cid}, &r, err)))
		return gl_err_prefix(err, "dcgm pending samples: ");
	if (claimed)
		*claimed = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return 0;
}
