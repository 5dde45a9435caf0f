/* Gathering the monthly showback report (see include/gl/showback.h). */
#include "gl/showback.h"
#include "gl/servingdb.h"
#include "gl/capplandb.h"
#include "gl/accounting.h"
#include "gl/budget.h"
#include "gl/cost.h"
#include "db_int.h"
#include "gl/ingest.h"
#include "gl/pgrow.h"
#include "gl/report.h"
#include "gl/jobstats.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gl_showback_month_parse(const char *s, int64_t *start_s, struct gl_err *err)
{
	unsigned y, m;
	int n = 0;
	if (!s || strlen(s) != 7 || sscanf(s, "%4u-%2u%n", &y, &m, &n) != 2 || n != 7 || s[4] != '-' || m < 1 ||
	    m > 12 || y < 1970)
		return gl_err_set(err, GL_EINVAL, "month: '%s' is not YYYY-MM", s ? s : "");
	*start_s = gl_timeutil_days_from_civil((int64_t)y, m, 1) * 86400;
	return 0;
}

static void month_name(int64_t start_s, char *buf, size_t n)
{
	int64_t y;
	unsigned m, d;
	gl_timeutil_civil_from_days(start_s / 86400, &y, &m, &d);
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

/* Capacity as the API's default counts it: firm up to each node's last
 * snapshot plus inventory.absent_grace_s (no config: no horizon). */
static struct gl_capacity_observed sb_cap(const struct gl_showback_req *req)
{
	struct gl_capacity_observed cap = {req->cfg ? req->cfg->inventory_absent_grace_s : -1, 0};
	return cap;
}

/* One chargeback over the steps, aggregated by dims: exactly what
 * /v1/chargeback computes for the same window, step and shareIdle. */
static int run_cb(PGconn *c, const struct gl_window *steps, size_t n_steps, const char *const *dims, size_t n_dims,
		  enum gl_chargeback_share_idle share, int lines_only, int64_t now_s, const struct gl_capacity_observed *cap, struct gl_chargeback *cb,
		  struct gl_accounting_meta *meta, struct gl_err *err)
{
	struct gl_accounting_query q;
	gl_chargeback_init(cb, n_dims, share, n_steps);
	gl_accounting_query_init(&q, steps, n_steps, dims, n_dims, now_s);
	q.lines_only = lines_only;
	q.cap = *cap;
	return gl_accounting_chargeback_finished(gl_db_store(c), &q, cb, meta, err);
}

static struct gl_sbmodel_owner *find_owner(struct gl_sbmodel *sb, const char *name)
{
	for (size_t i = 0; i < sb->n_owners; i++)
		if (!strcmp(sb->owners[i].name, name))
			return &sb->owners[i];
	return NULL;
}

static struct gl_sbmodel_owner *get_owner(struct gl_sbmodel *sb, const char *name)
{
	struct gl_sbmodel_owner *o = find_owner(sb, name);
	if (o)
		return o;
	sb->owners = gl_xrealloc(sb->owners, (sb->n_owners + 1) * sizeof *sb->owners);
	o = &sb->owners[sb->n_owners++];
	memset(o, 0, sizeof *o);
	o->name = gl_xstrdup(name);
	o->daily_s = gl_xcalloc(sb->n_days ? sb->n_days : 1, sizeof *o->daily_s);
	return o;
}

static void add_partial(struct gl_sbmodel *sb, const char *fmt, ...) GL_PRINTF(2, 3);
static void add_partial(struct gl_sbmodel *sb, const char *fmt, ...)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	gl_strbuf_vprintf(&b, fmt, ap);
	va_end(ap);
	sb->partial = gl_xrealloc(sb->partial, (sb->n_partial + 1) * sizeof *sb->partial);
	sb->partial[sb->n_partial++] = gl_strbuf_steal(&b);
}

/* ---- The per-job part: top jobs, failed-job waste, energy, queue waits ----
 *
 * The month's jobs are streamed once by binary COPY and folded in C
 * (domain/jobstats): SQL over a million rows spent ~12 s sorting them to
 * group owners, to price each job by a correlated subquery and to take
 * percentiles. The owner of a job is still gl_owner's, asked once per
 * distinct set of owner-relevant attributes and rule-validity segment. */

/* Byte strings interned to dense indices. */
struct intern {
	uint32_t *slot; /* index + 1; 0 = empty */
	size_t cap;     /* power of two */
	char **key;
	size_t *klen;
	uint64_t *hash;
	size_t n, ncap;
};

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static void intern_grow(struct intern *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	uint32_t *slot = gl_xcalloc(cap, sizeof *slot);
	for (size_t i = 0; i < t->n; i++) {
		size_t at = t->hash[i] & (cap - 1);
		while (slot[at])
			at = (at + 1) & (cap - 1);
		slot[at] = (uint32_t)i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
}

/* The index of k, added when new (*added set). */
static uint32_t intern_get(struct intern *t, const char *k, size_t len, int *added)
{
	uint64_t h = fnv1a(k, len);
	size_t at;
	*added = 0;
	if ((t->n + 1) * 2 > t->cap)
		intern_grow(t);
	for (at = h & (t->cap - 1); t->slot[at]; at = (at + 1) & (t->cap - 1)) {
		uint32_t i = t->slot[at] - 1;
		if (t->hash[i] == h && t->klen[i] == len && !memcmp(t->key[i], k, len))
			return i;
	}
	if (t->n == t->ncap) {
		t->ncap = t->ncap ? t->ncap * 2 : 256;
		t->key = gl_xrealloc(t->key, t->ncap * sizeof *t->key);
		t->klen = gl_xrealloc(t->klen, t->ncap * sizeof *t->klen);
		t->hash = gl_xrealloc(t->hash, t->ncap * sizeof *t->hash);
	}
	t->key[t->n] = gl_xmalloc(len + 1);
	memcpy(t->key[t->n], k, len);
	t->key[t->n][len] = '\0';
	t->klen[t->n] = len;
	t->hash[t->n] = h;
	t->slot[at] = (uint32_t)t->n + 1;
	*added = 1;
	return (uint32_t)t->n++;
}

static void intern_fini(struct intern *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->key[i]);
	free(t->key);
	free(t->klen);
	free(t->hash);
	free(t->slot);
	memset(t, 0, sizeof *t);
}

/* The columns of the stream, in order. */
enum {
	JC_PK, JC_JOB_ID, JC_STATE, JC_CLUSTER, JC_PARTITION, JC_ACCOUNT, JC_USER, JC_QOS, JC_WCKEY, JC_NAMESPACE,
	JC_LABELS, JC_RUN_KIND, JC_ENDPOINTS, JC_START, JC_QUEUED, JC_END, JC_GPU_MICRO, JC_MODEL, JC_IDLE_US, JC_OBSERVED, JC_ENERGY, JC_BUSY_US, JC_N
};

/* The owner-relevant attributes gl_owner and gl_workload_type take,
 * stream columns JC_CLUSTER .. JC_ENDPOINTS. */
#define OKEY_FIELDS (JC_ENDPOINTS - JC_CLUSTER + 1)

/* COPY takes no parameters, and a stable expression such as
 * to_timestamp(current_setting(...)) is evaluated again for every row a
 * sequential scan filters (~0.12 s a 100,000 jobs): the bounds go into the
 * text as integer literals (@NOW@, @FROM@, @TO@: Unix seconds the code
 * formats itself, jobs_copy_sql), which the planner folds to constants. */
#define SB_NOW "to_timestamp(@NOW@)"
#define SB_FROM "to_timestamp(@FROM@)"
#define SB_TO "to_timestamp(@TO@)"

/* An open job ends, for its figures, where a source last saw it (as
 * chargeback's firm figures: docs/ingest.md, "Observed time"). */
#define SB_FIRM_END "coalesce(jb.end_at, least(" SB_NOW ", greatest(jb.start_at, " GL_ACCOUNTING_JOB_SEEN_SQL("jb") ")))"

/* The jobs of the month as chargeback's jobs CTE takes them (GPU jobs
 * started before the end and before now, not ended before the start),
 * with their exporter usage and energy in the month. Columns no owner rule
 * of the aggregate reads are NULL: gl_owner takes no run kind nor
 * endpoints (only workload_type does), and labels only when a rule matches
 * one; a per-row gl_job_run_kind call or labels' text costs ~0.7 s a
 * million jobs for nothing. The model's canonical name comes by a hash join
 * (GL_ACCOUNTING_GPU_MODEL_JOIN_SQL) rather than a probe per job row
 * (~5 us each: half the stream's time). */
static void jobs_copy_sql(struct gl_strbuf *out, int by_type, int use_labels, int64_t now_s, int64_t from_s,
			  int64_t to_s)
{
	struct gl_strbuf qb = GL_STRBUF_INIT, *q = &qb;
	gl_strbuf_puts(q, "COPY (SELECT jb.job_pk, jb.job_id, jb.state, c.name, jb.partition, jb.account, jb.user_name,"
			  " jb.qos, jb.wckey, jb.namespace, ");
	gl_strbuf_puts(q, use_labels ? "(jb.tags -> 'labels')::text, " : "NULL::text, ");
	gl_strbuf_puts(q, by_type ? GL_ACCOUNTING_JOB_RUN_KIND_SQL("jb") ", coalesce(ep.endpoints, '{}')::text,"
				  : "NULL::text, NULL::text,");
	gl_strbuf_printf(q,
			 " jb.start_at, jb.submit_at, %s, %s, %s, round(u.idle_gpu_s * 1000000)::bigint,"
			 " u.observed_gpu_s > 0, e.mj, round(u.busy_gpu_s * 1000000)::bigint"
			 " FROM jobs jb JOIN clusters c ON c.cluster_id = jb.cluster_id ",
			 SB_FIRM_END, GL_ACCOUNTING_JOB_GPUS_SQL("jb"), GL_ACCOUNTING_GPU_MODEL_OF_SQL("gmc", GL_ACCOUNTING_JOB_RAW_MODEL_SQL("jb")));
	gl_strbuf_printf(q, "%s ", GL_ACCOUNTING_GPU_MODEL_JOIN_SQL("gmc", GL_ACCOUNTING_JOB_RAW_MODEL_SQL("jb")));
	if (by_type)
		gl_strbuf_puts(q, "LEFT JOIN job_endpoints ep ON ep.job_pk = jb.job_pk");
	gl_strbuf_puts(q, " LEFT JOIN (SELECT job_pk, idle_gpu_s, busy_gpu_s, observed_gpu_s FROM gl_job_usage(" SB_FROM
			  ", " SB_TO ")) u ON u.job_pk = jb.job_pk"
			  " LEFT JOIN (SELECT job_pk, sum(energy_mj)::bigint AS mj FROM gpu_usage WHERE bucket >= " SB_FROM
			  "  AND bucket < " SB_TO " AND energy_mj IS NOT NULL GROUP BY job_pk) e ON e.job_pk = jb.job_pk"
			  " WHERE jb.gpu_micro > 0 AND jb.start_at < " SB_TO " AND jb.start_at < " SB_NOW
			  " AND (jb.end_at > " SB_FROM " OR (jb.end_at IS NULL AND " SB_FIRM_END " > " SB_FROM ")))"
			  " TO STDOUT (FORMAT binary)");
	for (const char *p = gl_strbuf_cstr(q); *p;) {
		static const char *const mark[] = {"@NOW@", "@FROM@", "@TO@"};
		const int64_t val[] = {now_s, from_s, to_s};
		size_t k = 0;
		while (k < GL_ARRAY_LEN(mark) && strncmp(p, mark[k], strlen(mark[k])))
			k++;
		if (k < GL_ARRAY_LEN(mark)) {
			gl_strbuf_printf(out, "%lld", (long long)val[k]);
			p += strlen(mark[k]);
		} else
			gl_strbuf_putc(out, *p++);
	}
	gl_strbuf_fini(q);
}

struct rate_model {
	char *model;
	struct gl_jobstats_rate *r;
	size_t n;
};

struct okey {
	char *f[OKEY_FIELDS]; /* NULL for SQL NULL */
	int64_t at_us;        /* a start in the key's segment (the owner rules are constant there) */
};

struct jobs_ctx {
	int by_rules;             /* team, project, cost_center: gl_owner; workload_type: gl_workload_type; else account or user */
	int use_labels;           /* some owner or workload rule matches a label: labels are part of the key */
	int dim_col;              /* JC_ACCOUNT or JC_USER when !by_rules */
	int64_t a_us, b_us, now_us;
	int64_t *bounds;          /* owner-rule validity bounds, ascending */
	size_t n_bounds;
	struct rate_model *models;
	size_t n_models;
	const struct rate_model *star, *last; /* star: an unknown model's rates */
	struct intern keys, parts;
	struct okey *okeys;       /* by key index, when by_rules */
	size_t cap_okeys;
	struct gl_strbuf kb, scratch;
	struct gl_jobstats st;
};

static void jobs_ctx_fini(struct jobs_ctx *x)
{
	for (size_t i = 0; i < x->keys.n && x->okeys; i++)
		for (int k = 0; k < OKEY_FIELDS; k++)
			free(x->okeys[i].f[k]);
	free(x->okeys);
	for (size_t i = 0; i < x->n_models; i++) {
		free(x->models[i].model);
		free(x->models[i].r);
	}
	free(x->models);
	free(x->bounds);
	intern_fini(&x->keys);
	intern_fini(&x->parts);
	gl_strbuf_fini(&x->kb);
	gl_strbuf_fini(&x->scratch);
	gl_jobstats_fini(&x->st);
}

/* The rates of the job's GPU model, as gl_rates_of (sql/033) chose them
 * for every model name the database knows; a name it had not seen yet
 * (gpu_model_canon is filled as names arrive) prices as an unknown model
 * (gl_rates_of(NULL)). */
static const struct rate_model *rates_for(struct jobs_ctx *x, const struct gl_db_field *m)
{
	if (m->len < 0)
		return x->star;
	if (x->last && strlen(x->last->model) == (size_t)m->len && !memcmp(x->last->model, m->p, (size_t)m->len))
		return x->last;
	for (size_t i = 0; i < x->n_models; i++)
		if (x->models[i].model && strlen(x->models[i].model) == (size_t)m->len &&
		    !memcmp(x->models[i].model, m->p, (size_t)m->len))
			return x->last = &x->models[i];
	return x->star;
}

/* A NUL-terminated copy of a text field in x->scratch; "" for NULL. The
 * offset, since the buffer may move. */
static size_t scratch_put(struct jobs_ctx *x, const struct gl_db_field *f)
{
	size_t at = x->scratch.len;
	if (f->len > 0)
		gl_strbuf_append(&x->scratch, f->p, (size_t)f->len);
	gl_strbuf_putc(&x->scratch, '\0');
	return at;
}

/* Field k of a job's owner key. Labels count only when a rule reads one:
 * pods often carry a label per pod (a template hash), which would make
 * every job its own key and every key a gl_owner call. */
static const struct gl_db_field *okey_field(const struct jobs_ctx *x, const struct gl_db_field *f, int k)
{
	static const struct gl_db_field null_field = {NULL, -1};
	return JC_CLUSTER + k == JC_LABELS && !x->use_labels ? &null_field : &f[JC_CLUSTER + k];
}

/* The group (owner key) of a job. */
static uint32_t job_group(struct jobs_ctx *x, const struct gl_db_field *f, int64_t start_us)
{
	int added;
	uint32_t g;
	gl_strbuf_reset(&x->kb);
	if (!x->by_rules) {
		const struct gl_db_field *d = &f[x->dim_col];
		return intern_get(&x->keys, d->len > 0 ? d->p : "", d->len > 0 ? (size_t)d->len : 0, &added);
	}
	for (int k = 0; k < OKEY_FIELDS; k++) {
		const struct gl_db_field *d = okey_field(x, f, k);
		gl_strbuf_putc(&x->kb, d->len < 0 ? '\2' : '\1');
		if (d->len > 0)
			gl_strbuf_append(&x->kb, d->p, (size_t)d->len);
		gl_strbuf_putc(&x->kb, '\0');
	}
	{
		/* the segment: how many bounds are at or before the start */
		size_t lo = 0, hi = x->n_bounds;
		uint32_t seg;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (x->bounds[mid] <= start_us)
				lo = mid + 1;
			else
				hi = mid;
		}
		seg = (uint32_t)lo;
		gl_strbuf_append(&x->kb, &seg, sizeof seg);
	}
	g = intern_get(&x->keys, x->kb.p, x->kb.len, &added);
	if (added) {
		struct okey *o;
		if (g >= x->cap_okeys) {
			x->cap_okeys = x->cap_okeys ? x->cap_okeys * 2 : 256;
			x->okeys = gl_xrealloc(x->okeys, x->cap_okeys * sizeof *x->okeys);
		}
		o = &x->okeys[g];
		for (int k = 0; k < OKEY_FIELDS; k++) {
			const struct gl_db_field *d = okey_field(x, f, k);
			o->f[k] = NULL;
			if (d->len >= 0) {
				o->f[k] = gl_xmalloc((size_t)d->len + 1);
				memcpy(o->f[k], d->p, (size_t)d->len);
				o->f[k][d->len] = '\0';
			}
		}
		o->at_us = start_us;
	}
	return g;
}

static int job_row(void *ctx, const struct gl_db_field *f, int n, struct gl_err *err)
{
	struct jobs_ctx *x = ctx;
	struct gl_jobstats_job j;
	const struct rate_model *rm;
	int64_t start, end, s0, e0;
	size_t o_id, o_cl, o_st;
	int added;
	(void)n;
	if (f[JC_PK].len != 8 || f[JC_START].len != 8 || f[JC_GPU_MICRO].len != 8)
		return gl_err_set(err, GL_EDB, "showback: per-job stream: unexpected NULL or width");
	memset(&j, 0, sizeof j);
	start = gl_db_field_ts_us(&f[JC_START]);
	end = f[JC_END].len < 0 ? x->now_us : gl_db_field_ts_us(&f[JC_END]);
	s0 = start > x->a_us ? start : x->a_us;
	e0 = end < x->b_us ? end : x->b_us;
	j.job_pk = gl_db_field_int(&f[JC_PK]);
	j.gpu_micro = gl_db_field_int(&f[JC_GPU_MICRO]);
	j.alloc_us = j.gpu_micro * gl_jobstats_span_s(s0, e0);
	rm = rates_for(x, &f[JC_MODEL]);
	j.unpriced_us = j.alloc_us;
	if (rm) {
		gl_cost_i128 num = gl_jobstats_cost_num(rm->r, rm->n, s0, e0, j.gpu_micro);
		j.cost_micros = (int64_t)((num * 2 + GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR) /
					  (2 * (gl_cost_i128)GL_COST_MICRO_GPU_SECONDS_PER_GPU_HOUR));
		j.unpriced_us -= j.gpu_micro * gl_jobstats_priced_s(rm->r, rm->n, s0, e0);
	}
	if (j.unpriced_us < 0)
		j.unpriced_us = 0;
	j.group = job_group(x, f, start);
	{
		const struct gl_db_field *p = &f[JC_PARTITION];
		j.partition = intern_get(&x->parts, p->len > 0 ? p->p : "", p->len > 0 ? (size_t)p->len : 0, &added);
	}
	j.observed = f[JC_OBSERVED].len == 1 && f[JC_OBSERVED].p[0];
	j.idle_us = f[JC_IDLE_US].len == 8 ? gl_db_field_int(&f[JC_IDLE_US]) : 0;
	j.busy_us = f[JC_BUSY_US].len == 8 ? gl_db_field_int(&f[JC_BUSY_US]) : 0;
	if (f[JC_QUEUED].len == 8 && start >= x->a_us) {
		int64_t w = gl_jobstats_span_s(gl_db_field_ts_us(&f[JC_QUEUED]), start);
		j.has_wait = 1;
		j.wait_s = w > 0 ? w : 0;
	}
	if (f[JC_ENERGY].len == 8) {
		j.has_energy = 1;
		j.energy_mj = gl_db_field_int(&f[JC_ENERGY]);
	}
	gl_strbuf_reset(&x->scratch);
	o_id = scratch_put(x, &f[JC_JOB_ID]);
	o_cl = scratch_put(x, &f[JC_CLUSTER]);
	o_st = scratch_put(x, &f[JC_STATE]);
	j.job_id = x->scratch.p + o_id;
	j.cluster = x->scratch.p + o_cl;
	j.state = x->scratch.p + o_st;
	gl_jobstats_add(&x->st, &j);
	return 0;
}

/* Owner-rule validity bounds and the rates, for the stream. */
static int jobs_reference(PGconn *c, struct jobs_ctx *x, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc;
	if ((rc = gl_db_query(c,
			      "SELECT EXISTS (SELECT 1 FROM owners WHERE match_field LIKE 'label:%')"
			      " OR EXISTS (SELECT 1 FROM workload_rules WHERE match_field LIKE 'label:%')",
			      0, NULL, &r, err)))
		goto out;
	x->use_labels = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	r = NULL;
	/* -infinity is before every start; infinity after every one */
	if ((rc = gl_db_query(c,
			      "SELECT DISTINCT (extract(epoch FROM t) * 1000000)::bigint FROM (SELECT valid_from AS t FROM owners"
			      " UNION ALL SELECT valid_to FROM owners UNION ALL SELECT valid_from FROM workload_rules"
			      " UNION ALL SELECT valid_to FROM workload_rules) x WHERE isfinite(t) ORDER BY 1",
			      0, NULL, &r, err)))
		goto out;
	x->n_bounds = (size_t)PQntuples(r) + 1;
	x->bounds = gl_xcalloc(x->n_bounds, sizeof *x->bounds);
	x->bounds[0] = INT64_MIN;
	for (int i = 0; i < PQntuples(r); i++)
		x->bounds[i + 1] = atoll(PQgetvalue(r, i, 0));
	PQclear(r);
	r = NULL;
	/* every model's rates as the rule picks them, and an unknown model's
	 * (model NULL, sorted last) */
	if ((rc = gl_db_query(c,
			      "SELECT m.model, CASE WHEN isfinite(r.valid_from) THEN (extract(epoch FROM r.valid_from) * 1000000)::bigint"
			      " END, CASE WHEN isfinite(r.valid_to) THEN (extract(epoch FROM r.valid_to) * 1000000)::bigint END,"
			      " r.micros_per_gpu_hour"
			      " FROM (SELECT model FROM gpu_model_canon UNION SELECT gpu_model FROM rates UNION SELECT NULL) m"
			      " CROSS JOIN LATERAL gl_rates_of(m.model) r ORDER BY m.model NULLS LAST, r.valid_from",
			      0, NULL, &r, err)))
		goto out;
	x->models = gl_xcalloc((size_t)PQntuples(r) + 1, sizeof *x->models);
	for (int i = 0; i < PQntuples(r); i++) {
		struct rate_model *m = x->n_models ? &x->models[x->n_models - 1] : NULL;
		struct gl_jobstats_rate *rt;
		if (!m || (PQgetisnull(r, i, 0) ? !!m->model : !m->model || strcmp(m->model, PQgetvalue(r, i, 0)))) {
			m = &x->models[x->n_models++];
			m->model = PQgetisnull(r, i, 0) ? NULL : gl_xstrdup(PQgetvalue(r, i, 0));
		}
		m->r = gl_xrealloc(m->r, (m->n + 1) * sizeof *m->r);
		rt = &m->r[m->n++];
		rt->from_us = PQgetisnull(r, i, 1) ? INT64_MIN : atoll(PQgetvalue(r, i, 1));
		rt->to_us = PQgetisnull(r, i, 2) ? INT64_MAX : atoll(PQgetvalue(r, i, 2));
		rt->micros_per_gpu_hour = atoll(PQgetvalue(r, i, 3));
	}
	for (size_t i = 0; i < x->n_models; i++)
		if (!x->models[i].model)
			x->star = &x->models[i];
out:
	PQclear(r);
	return rc;
}

/* The owner of every key: gl_owner once per key, the aggregate's name of
 * it (as gl_accounting_dim_sql names it) into names[key]. */
static int resolve_keys(PGconn *c, const struct gl_sbmodel *sb, struct jobs_ctx *x, char **names,
			struct gl_err *err)
{
	/* in stream order, JC_CLUSTER .. JC_ENDPOINTS */
	static const char *const cols[OKEY_FIELDS] = {"cluster", "partition", "account", "user_name", "qos",
						       "wckey",	  "namespace", "labels",  "run_kind", "endpoints"};
	enum { CHUNK = 20000 }; /* keys per query: bounds the JSON parameter */
	struct gl_strbuf js = GL_STRBUF_INIT;
	PGresult *r = NULL;
	int rc = 0, col = !strcmp(sb->aggregate, "team")	   ? 1
			  : !strcmp(sb->aggregate, "project")	   ? 2
			  : !strcmp(sb->aggregate, "cost_center") ? 3
								   : 4;
	for (size_t from = 0; from < x->keys.n && !rc; from += CHUNK) {
		size_t to = from + CHUNK < x->keys.n ? from + CHUNK : x->keys.n;
		gl_strbuf_reset(&js);
		gl_strbuf_putc(&js, '[');
		for (size_t i = from; i < to; i++) {
			const struct okey *o = &x->okeys[i];
			gl_strbuf_printf(&js, "%s{\"i\":%zu,\"at_us\":%lld", i > from ? "," : "", i, (long long)o->at_us);
			for (int k = 0; k < OKEY_FIELDS; k++) {
				gl_strbuf_printf(&js, ",\"%s\":", cols[k]);
				if (!o->f[k])
					gl_strbuf_puts(&js, "null");
				else if (k == JC_LABELS - JC_CLUSTER) /* labels: JSON already */
					gl_strbuf_puts(&js, o->f[k]);
				else {
					gl_strbuf_putc(&js, '"');
					gl_strbuf_put_json_str(&js, o->f[k], strlen(o->f[k]));
					gl_strbuf_putc(&js, '"');
				}
			}
			gl_strbuf_putc(&js, '}');
		}
		gl_strbuf_putc(&js, ']');
		if ((rc = gl_db_query(c,
				      "SELECT k.i, o.team, o.project, o.cost_center,"
				      " gl_workload_type(k.cluster, k.account, k.user_name, k.partition, k.qos, k.wckey, k.namespace,"
				      "  jsonb_build_object('labels', k.labels, 'run_kind', k.run_kind), coalesce(k.endpoints::text[], '{}'),"
				      "  timestamptz 'epoch' + k.at_us * interval '1 microsecond')"
				      " FROM jsonb_to_recordset($1::jsonb) AS k(i bigint,"
				      " at_us bigint, cluster text, account text, user_name text, partition text, qos text,"
				      " wckey text, namespace text, labels jsonb, run_kind text, endpoints text)"
				      " LEFT JOIN LATERAL gl_owner(k.cluster, k.account, k.user_name, k.partition, k.qos, k.wckey,"
				      "  k.namespace, jsonb_build_object('labels', k.labels),"
				      "  timestamptz 'epoch' + k.at_us * interval '1 microsecond') o ON true",
				      1, (const char *[]){gl_strbuf_cstr(&js)}, &r, err)))
			break;
		for (int i = 0; i < PQntuples(r); i++) {
			size_t k = (size_t)atoll(PQgetvalue(r, i, 0));
			if (k >= from && k < to && !names[k])
				names[k] = gl_xstrdup(PQgetisnull(r, i, col) ? "__unallocated__" : PQgetvalue(r, i, col));
		}
		PQclear(r);
		r = NULL;
	}
	for (size_t k = 0; !rc && k < x->keys.n; k++)
		if (!names[k])
			rc = gl_err_set(err, GL_EDB, "showback: no owner resolved for key %zu", k);
	PQclear(r);
	gl_strbuf_fini(&js);
	return rc;
}

_Static_assert(GL_JOBSTATS_TOP <= GL_SBMODEL_TOP_JOBS, "the report holds every top job the fold keeps");

static void put_top(const struct gl_jobstats_top *t, char *const *owner_names, const uint32_t *owner_of,
		    struct gl_sbmodel_job *j)
{
	j->job_id = gl_xstrdup(t->job_id);
	j->cluster = gl_xstrdup(t->cluster);
	j->owner = gl_xstrdup(owner_names[owner_of[t->group]]);
	j->state = gl_xstrdup(t->state);
	j->gpu_micro = t->gpu_micro;
	j->alloc_s = t->alloc_s;
	j->cost_micros = t->cost_micros;
	j->unpriced_s = t->unpriced_s;
	j->has_usage = t->observed;
	j->idle_s = t->idle_s;
	j->idle_micros = t->idle_micros;
}

static void add_wait(struct gl_sbmodel *sb, const char *kind, const char *name, const struct gl_jobstats_owner *w)
{
	struct gl_sbmodel_wait *x;
	sb->waits = gl_xrealloc(sb->waits, (sb->n_waits + 1) * sizeof *sb->waits);
	x = &sb->waits[sb->n_waits++];
	x->name = gl_xstrdup(name);
	x->kind = gl_xstrdup(kind);
	x->jobs = (int64_t)w->n_waits;
	x->p50_s = w->p50_s;
	x->p90_s = w->p90_s;
	x->p99_s = w->p99_s;
}

/* Streams the month's jobs and folds them into sb. */
static int gather_jobs(PGconn *c, struct gl_sbmodel *sb, int64_t now_s, struct gl_err *err)
{
	struct jobs_ctx x;
	struct intern owners = {0};
	char **names = NULL;
	uint32_t *owner_of = NULL;
	struct gl_jobstats_owner *per_owner = NULL, *per_part = NULL;
	struct gl_strbuf q = GL_STRBUF_INIT;
	int rc, in_txn = 0, nested;

	memset(&x, 0, sizeof x);
	gl_jobstats_init(&x.st);
	x.by_rules = strcmp(sb->aggregate, "account") && strcmp(sb->aggregate, "user");
	x.dim_col = !strcmp(sb->aggregate, "account") ? JC_ACCOUNT : JC_USER;
	x.a_us = sb->start_s * 1000000;
	x.b_us = sb->end_s * 1000000;
	x.now_us = now_s * 1000000;
	/* one snapshot for the rules, the rates and the jobs: the request's
	 * own when it reads in one transaction already (gl_txn_read_begin) */
	nested = PQtransactionStatus(c) != PQTRANS_IDLE;
	if (!nested && (rc = gl_db_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
		goto out;
	in_txn = !nested;
	if ((rc = jobs_reference(c, &x, err)))
		goto out;
	jobs_copy_sql(&q, !strcmp(sb->aggregate, "workload_type"), x.use_labels, now_s, sb->start_s, sb->end_s);
	if ((rc = gl_db_exec(c, "SET LOCAL enable_nestloop = off", err)) ||
	    (rc = gl_db_copy_out_binary(c, gl_strbuf_cstr(&q), JC_N, job_row, &x, err)) ||
	    (nested && (rc = gl_db_exec(c, "SET LOCAL enable_nestloop TO DEFAULT", err))))
		goto out;
	names = gl_xcalloc(x.keys.n + 1, sizeof *names);
	if (x.by_rules) {
		if ((rc = resolve_keys(c, sb, &x, names, err)))
			goto out;
	} else {
		for (size_t k = 0; k < x.keys.n; k++)
			names[k] = gl_xstrdup(x.keys.key[k]);
	}
	if (in_txn && (rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	in_txn = 0;

	/* keys -> owners (several keys may share an owner) */
	owner_of = gl_xcalloc(x.keys.n + 1, sizeof *owner_of);
	for (size_t k = 0; k < x.keys.n; k++) {
		int added;
		owner_of[k] = intern_get(&owners, names[k], strlen(names[k]), &added);
	}
	per_owner = gl_xcalloc(owners.n + 1, sizeof *per_owner);
	per_part = gl_xcalloc(x.parts.n + 1, sizeof *per_part);
	gl_jobstats_fold(&x.st, owner_of, owners.n, per_owner, x.parts.n, per_part);
	for (size_t i = 0; i < owners.n; i++) {
		const struct gl_jobstats_owner *w = &per_owner[i];
		struct gl_sbmodel_owner *o = find_owner(sb, owners.key[i]);
		if (o) {
			o->failed_s = w->failed_s;
			o->failed_micros = w->failed_micros;
			/* the owner's busy and allocated-idle cost: each job's
			 * at its own price (the top idle jobs' rule), not the
			 * owner's cost x busy (idle) / allocated, which priced an
			 * idle cheap GPU at the average of the owner's dearer
			 * busy ones */
			if (o->has_usage) {
				o->busy_micros = w->busy_micros;
				o->aidle_micros = w->aidle_micros;
			}
			sb->fleet.failed_s += w->failed_s;
			sb->fleet.failed_micros += w->failed_micros;
			if (w->has_energy) {
				o->has_energy = 1;
				o->energy_mj = w->energy_mj;
				sb->fleet.has_energy = 1;
				sb->fleet.energy_mj += w->energy_mj;
			}
		}
		if (w->n_waits)
			add_wait(sb, "owner", owners.key[i], w);
	}
	for (size_t i = 0; i < x.parts.n; i++)
		if (per_part[i].n_waits)
			add_wait(sb, "partition", x.parts.key[i], &per_part[i]);
	for (size_t i = 0; i < x.st.n_top_cost; i++)
		put_top(&x.st.top_cost[i], owners.key, owner_of, &sb->top_cost[sb->n_top_cost++]);
	for (size_t i = 0; i < x.st.n_top_idle; i++)
		put_top(&x.st.top_idle[i], owners.key, owner_of, &sb->top_idle[sb->n_top_idle++]);
out:
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	for (size_t k = 0; names && k < x.keys.n; k++)
		free(names[k]);
	free(names);
	free(owner_of);
	free(per_owner);
	free(per_part);
	intern_fini(&owners);
	jobs_ctx_fini(&x);
	gl_strbuf_fini(&q);
	return rc;
}

static int cmp_wait(const void *pa, const void *pb)
{
	const struct gl_sbmodel_wait *a = pa, *b = pb;
	int k = strcmp(a->kind, b->kind);
	return k ? -k : strcmp(a->name, b->name); /* partitions first */
}

static int cmp_owner(const void *pa, const void *pb)
{
	const struct gl_sbmodel_owner *a = pa, *b = pb;
	if (a->total_micros != b->total_micros)
		return a->total_micros > b->total_micros ? -1 : 1;
	if (a->alloc_s != b->alloc_s)
		return a->alloc_s > b->alloc_s ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_model(const void *pa, const void *pb)
{
	const struct gl_sbmodel_model *a = pa, *b = pb;
	int k = strcmp(a->owner, b->owner);
	return k ? k : strcmp(a->model, b->model);
}

/* Rates and owner rules in force at some time of the month, with their
 * effective dates. */
static int gather_pricebook(PGconn *c, struct gl_sbmodel *sb, struct gl_err *err)
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
		struct gl_sbmodel_rate *x = &sb->rates[i];
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
		struct gl_sbmodel_rule *x = &sb->rules[i];
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
out:
	PQclear(r);
	return rc;
}

/* The ingestion runs of the month that failed or were partial, and the
 * stretches without runs, as notes on what is partial. */
static int gather_ingest_gaps(PGconn *c, struct gl_sbmodel *sb, int64_t now_s, struct gl_err *err)
{
	char a[24], b[24];
	PGresult *r = NULL;
	int rc;
	snprintf(a, sizeof a, "%lld", (long long)sb->start_s);
	snprintf(b, sizeof b, "%lld", (long long)sb->end_s);
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
	PQclear(r);
	r = NULL;
	{
		/* Stretches with no run at all (a daemon down, a source stuck):
		 * for a source that runs on a schedule (at least 4 runs in the
		 * month and the 31 days before it), a pause between runs longer
		 * than three times its median interval and than an hour. The
		 * last run is followed up to the month's end (or now). */
		char e[24];
		snprintf(e, sizeof e, "%lld", (long long)(now_s < sb->end_s ? now_s : sb->end_s));
		if ((rc = gl_db_query(
			     c,
			     "WITH runs AS (SELECT source, cluster_id, started_at FROM ingest_runs"
			     "  WHERE started_at >= to_timestamp($1) - interval '31 days' AND started_at < to_timestamp($3)),"
			     " gaps AS (SELECT source, cluster_id, started_at AS t1, lead(started_at, 1, to_timestamp($3))"
			     "  OVER (PARTITION BY source, cluster_id ORDER BY started_at) AS t2 FROM runs),"
			     " med AS (SELECT source, cluster_id, count(*) AS n, percentile_cont(0.5) WITHIN GROUP"
			     "  (ORDER BY extract(epoch FROM t2 - t1)) AS m FROM gaps GROUP BY 1, 2)"
			     " SELECT g.source, coalesce(c.name, ''),"
			     "  to_char(greatest(g.t1, to_timestamp($1)) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
			     "  to_char(least(g.t2, to_timestamp($2)) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
			     "  round(extract(epoch FROM least(g.t2, to_timestamp($2)) - greatest(g.t1, to_timestamp($1))))::bigint,"
			     "  round(med.m)::bigint"
			     " FROM gaps g JOIN med USING (source, cluster_id) LEFT JOIN clusters c USING (cluster_id)"
			     " WHERE med.n >= 4 AND g.t2 > to_timestamp($1) AND g.t1 < to_timestamp($2)"
			     "  AND extract(epoch FROM g.t2 - g.t1) > greatest(3 * med.m, 3600)"
			     " ORDER BY 1, 2, 3",
			     3, (const char *[]){a, b, e}, &r, err)))
			goto out;
		for (int i = 0; i < PQntuples(r); i++) {
			long long len = atoll(PQgetvalue(r, i, 4)), med = atoll(PQgetvalue(r, i, 5));
			char every[48];
			if (med < 120)
				snprintf(every, sizeof every, "%lld s", med);
			else if (med < 7200)
				snprintf(every, sizeof every, "%lld min", (med + 30) / 60);
			else
				snprintf(every, sizeof every, "%.1f h", (double)med / 3600.0);
			add_partial(sb, "ingestion gap: no %s run%s%s from %s to %s (%.1f h in the month; it runs every %s)",
				    PQgetvalue(r, i, 0), PQgetvalue(r, i, 1)[0] ? " on " : "", PQgetvalue(r, i, 1),
				    PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), (double)len / 3600.0, every);
		}
	}
out:
	PQclear(r);
	return rc;
}

/* The reference pages: the price book and what the ingestion missed. */
static int gather_reference(PGconn *c, struct gl_sbmodel *sb, int64_t now_s, struct gl_err *err)
{
	int rc = gather_pricebook(c, sb, err);
	return rc ? rc : gather_ingest_gaps(c, sb, now_s, err);
}

/* The month of /v1/inference by the report's aggregate, when that is a
 * dimension it groups by. */
static int gather_inference(struct gl_store *store, struct gl_sbmodel *sb, int64_t now_s, struct gl_err *err)
{
	struct gl_window month = {sb->start_s, sb->end_s};
	struct gl_servingdb_query q = {&month, 1, now_s, GL_INFERENCE_BY_JOB_DIM, sb->aggregate, NULL, 0};
	struct gl_accounting_meta meta = {0};
	struct gl_inference x;
	int rc;
	if (!gl_servingdb_job_dim(sb->aggregate))
		return 0;
	gl_inference_init(&x, GL_INFERENCE_BY_JOB_DIM, 1);
	if (!(rc = gl_servingdb_inference(store, &q, &x, &meta, err)) && x.window.n) {
		sb->inference = gl_xcalloc(x.window.n, sizeof *sb->inference);
		for (size_t i = 0; i < x.window.n; i++) {
			const struct gl_inference_group *g = &x.window.groups[i];
			struct gl_sbmodel_inference *o = &sb->inference[sb->n_inference++];
			o->owner = gl_xstrdup(g->key);
			o->requests = g->v[GL_SERVEMETRICS_REQUESTS];
			o->failed = g->v[GL_SERVEMETRICS_FAILED];
			o->prompt_tokens = g->v[GL_SERVEMETRICS_PROMPT];
			o->generated_tokens = g->v[GL_SERVEMETRICS_GENERATED];
			o->gpu_s = g->gpu_s;
			o->cost_micros = g->cost_micros;
			o->have_per_1k = g->have_per_1k_requests;
			o->have_per_1m_prompt = g->have_per_1m_prompt;
			o->have_per_1m_generated = g->have_per_1m_generated;
			o->per_1k_micros = g->per_1k_requests_micros;
			o->per_1m_prompt_micros = g->per_1m_prompt_micros;
			o->per_1m_generated_micros = g->per_1m_generated_micros;
			o->p50_s = g->p50_s;
			o->p99_s = g->p99_s;
		}
	}
	gl_inference_fini(&x);
	gl_accounting_meta_fini(&meta);
	return rc;
}

/* The capacity page's rows (struct gl_sbmodel_capacity): the outlook that
 * /v1/capacity/forecast gives, from the month's end (today for the month
 * under way), with the stored plan. */
static int gather_capacity(struct gl_store *store, struct gl_sbmodel *sb, const struct gl_showback_req *req, struct gl_err *err)
{
	struct gl_capplan_demand dm = {0};
	struct gl_capplan_change *plan = NULL;
	struct gl_capplan_outlook_opts o = {0};
	struct gl_window w;
	size_t n_plan = 0;
	int rc;

	o.end_s = sb->closed ? sb->end_s : req->now_s - ((req->now_s % 86400) + 86400) % 86400;
	o.today_s = o.end_s;
	o.horizon = GL_SBMODEL_CAPACITY_DAYS;
	o.risk = 0.2;
	sb->capacity_lead_days = req->cfg ? req->cfg->procurement_lead_days : 90;
	o.lead_s = sb->capacity_lead_days * 86400;
	sb->capacity_asof_s = o.end_s;
	w = (struct gl_window){o.end_s - 91 * 86400LL, o.end_s};
	if ((rc = gl_capplandb_demand(store, &w, NULL, req->now_s, &dm, err)) ||
	    (rc = gl_capplandb_list(store, NULL, &plan, &n_plan, err)))
		goto out;
	o.plan = plan;
	o.n_plan = n_plan;
	sb->capacity = gl_xcalloc(dm.nk + 1, sizeof *sb->capacity);
	for (size_t i = 0; i < dm.nk; i++) {
		const struct gl_capplan_key *k = &dm.keys[i];
		struct gl_sbmodel_capacity *r = &sb->capacity[sb->n_capacity];
		struct gl_capplan_outlook ol;
		int known;
		if ((rc = gl_capplan_outlook(k, dm.nd, dm.start_s, &o, &ol, err)))
			goto out;
		sb->n_capacity++;
		r->cluster = gl_xstrdup(k->cluster);
		r->gpu_model = gl_xstrdup(k->gpu_model);
		r->method = gl_xstrdup(gl_forecast_method_name(ol.fc.method));
		r->capacity_gpus = k->capacity;
		for (size_t d = 0; d < dm.nd; d++) {
			int64_t t = dm.start_s + 86400 * (int64_t)d;
			if (t >= sb->start_s && t < sb->end_s && k->peak[d] > r->peak_gpus)
				r->peak_gpus = k->peak[d];
		}
		/* no probability without capacity or a demand interval: unknown */
		known = ol.fc.horizon > 0 && !isnan(gl_capplan_p_saturation(&ol.steps[0]));
		r->sat50_s = !known ? -1 : ol.sat50 >= 0 ? ol.steps[ol.sat50].start_s : 0;
		r->sat80_s = !known ? -1 : ol.sat80 >= 0 ? ol.steps[ol.sat80].start_s : 0;
		r->gpus_to_add = !ol.purchases_known ? -1 : ol.n_purchases ? ol.purchases[ol.n_purchases - 1].total : 0;
		if (ol.n_purchases) {
			r->need_by_s = ol.purchases[0].need_by_s;
			r->order_by_s = ol.purchases[0].order_by_s;
			r->late = ol.purchases[0].late;
		}
		r->days = ol.fc.horizon;
		gl_capplan_outlook_fini(&ol);
	}
out:
	gl_capplan_demand_fini(&dm);
	free(plan);
	return rc;
}

/* The report's heading from the request, checked: month, aggregate,
 * currency and sharing; -GL_EINVAL for a month in the future. */
static int sb_begin(const struct gl_showback_req *req, struct gl_sbmodel *sb, struct gl_err *err)
{
	int rc;
	if ((rc = gl_showback_month_parse(req->month, &sb->start_s, err)))
		return rc;
	if (!gl_settings_aggregate_ok(req->aggregate))
		return gl_err_set(err, GL_EINVAL, "aggregate: '%s' is not team, project, cost_center, account, user or workload_type",
				  req->aggregate);
	snprintf(sb->month, sizeof sb->month, "%s", req->month);
	snprintf(sb->aggregate, sizeof sb->aggregate, "%s", req->aggregate);
	snprintf(sb->currency, sizeof sb->currency, "%s", req->currency && *req->currency ? req->currency : "USD");
	if ((sb->minor = gl_cost_minor(sb->currency)) < 0)
		return gl_err_set(err, GL_EINVAL, "currency: '%s' is not an ISO 4217 currency code", sb->currency);
	sb->share = req->share;
	sb->end_s = gl_window_month_next(sb->start_s);
	sb->closed = sb->end_s <= req->now_s;
	sb->unpriced_models = gl_xstrdup("");
	if (sb->start_s > req->now_s)
		return gl_err_set(err, GL_EINVAL, "month: %s is in the future", req->month);
	return 0;
}

/* Whether a GPU job started by the month's end (*any) and before its start
 * (*before: the previous month has data); index range scans, not a min()
 * over every job. */
static int sb_data_bounds(PGconn *c, const struct gl_sbmodel *sb, int *any, int *before, struct gl_err *err)
{
	char e[24], p[24];
	PGresult *r = NULL;
	int rc;
	snprintf(e, sizeof e, "%lld", (long long)sb->end_s);
	snprintf(p, sizeof p, "%lld", (long long)sb->start_s);
	if ((rc = gl_db_query(c,
			      "SELECT EXISTS (SELECT 1 FROM jobs WHERE gpu_milli > 0 AND start_at < to_timestamp($1)) AS any,"
			      " EXISTS (SELECT 1 FROM jobs WHERE gpu_milli > 0 AND start_at < to_timestamp($2)) AS before",
			      2, (const char *[]){e, p}, &r, err)) ||
	    (rc = gl_pgrow_one_bool(r, "any", any, err)) || (rc = gl_pgrow_one_bool(r, "before", before, err)))
		goto out;
out:
	PQclear(r);
	return rc;
}

/* The month's days, as steps (days) and in the report (sb->day_start). */
static struct gl_window *sb_days(struct gl_sbmodel *sb)
{
	struct gl_window *days;
	sb->n_days = (size_t)((sb->end_s - sb->start_s) / 86400);
	sb->day_start = gl_xcalloc(sb->n_days, sizeof *sb->day_start);
	days = gl_xcalloc(sb->n_days, sizeof *days);
	for (size_t i = 0; i < sb->n_days; i++) {
		days[i].start_s = sb->day_start[i] = sb->start_s + (int64_t)i * 86400;
		days[i].end_s = days[i].start_s + 86400;
	}
	return days;
}

/* 1. the month, as /v1/chargeback computes it: per owner and the fleet */
static void sb_month(struct gl_sbmodel *sb, const struct gl_chargeback *cb, const struct gl_accounting_meta *meta)
{
	const struct gl_chargeback_step *st = &cb->steps[0];
	struct gl_sbmodel_fleet *f = &sb->fleet;
	struct gl_strbuf um = GL_STRBUF_INIT;
	for (size_t j = 0; j < st->n_lines; j++) {
		const struct gl_chargeback_line *l = &st->lines[j];
		struct gl_sbmodel_owner *o = get_owner(sb, l->key[0]);
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
		struct gl_sbmodel_owner *o = &sb->owners[i];
		if (o->has_usage) {
			f->usage_known = 1;
			f->busy_s += o->busy_s;
			f->aidle_s += o->aidle_s;
		}
	}
	f->allocated_s = cb->total_alloc_s;
	f->cost_micros = cb->total_cost_micros;
	f->capacity_known = st->capacity_known;
	f->idle_total_s = st->idle_total_s;
	f->idle_total_micros = st->idle_total_micros;
	f->idle_left_s = st->idle_s;
	f->idle_left_micros = st->idle_micros;
	f->overalloc_s = st->overalloc_s;
	f->unalloc_idle_s = st->idle_total_s;
	f->total_s = cb->total_s;
	f->total_micros = cb->total_micros;
	for (size_t i = 0; i < meta->n_unpriced; i++) {
		if (i)
			gl_strbuf_putc(&um, ',');
		gl_strbuf_puts(&um, meta->unpriced_models[i]);
	}
	free(sb->unpriced_models);
	sb->unpriced_models = gl_xstrdup(gl_strbuf_cstr(&um));
	gl_strbuf_fini(&um);
}

/* The notes on what the capacity figures cover: days, and clusters that
 * ran GPU jobs without any inventory. */
static void sb_cover_notes(struct gl_sbmodel *sb, const struct gl_accounting_cover *cov)
{
	struct gl_strbuf names = GL_STRBUF_INIT;
	sb->fleet.capacity_days_known = cov->known;
	sb->fleet.capacity_days = cov->days;
	/* capacity from the 16th on is half a month of idle: the figures are
	 * what is known, the note says how much that is */
	if (cov->known < cov->days)
		add_partial(sb,
			    "capacity data for only %lld of the %lld days of %s%s: capacity, unallocated idle"
			    " GPU-time and its cost cover those days only",
			    (long long)cov->known, (long long)cov->days, sb->month, sb->closed ? "" : " so far");
	/* a cluster that ran GPU jobs with no inventory at all: its idle is in
	 * no figure, whatever the days of the others say */
	for (size_t i = 0; i < cov->n_missing; i++) {
		if (i)
			gl_strbuf_puts(&names, ", ");
		gl_strbuf_puts(&names, cov->missing[i]);
	}
	if (cov->n_missing)
		add_partial(sb,
			    "no capacity data for cluster%s %s, which ran GPU jobs in %s: capacity, unallocated"
			    " idle GPU-time and its cost are the other clusters' only",
			    cov->n_missing > 1 ? "s" : "", gl_strbuf_cstr(&names), sb->month);
	gl_strbuf_fini(&names);
}

/* The fleet's capacity and unavailable GPU-time (month to date while it is
 * open, as chargeback counts idle) and what it covers. */
static int sb_capacity(PGconn *c, int64_t now_s, const struct gl_capacity_observed *cap, struct gl_sbmodel *sb,
		       struct gl_err *err)
{
	struct gl_accounting_cover cov = {0};
	char a[24], b[24], g[24];
	int64_t unobserved = 0;
	PGresult *r = NULL;
	int rc;
	snprintf(a, sizeof a, "%lld", (long long)sb->start_s);
	snprintf(b, sizeof b, "%lld", (long long)(sb->end_s < now_s ? sb->end_s : now_s));
	snprintf(g, sizeof g, "%lld", (long long)cap->grace_s);
	if ((rc = gl_db_query(c,
			      "SELECT coalesce(sum(reported_gpu_seconds), 0) AS capacity_s, coalesce(sum(down_gpu_seconds +"
			      " planned_down_gpu_seconds + reserved_gpu_seconds), 0) AS unavailable_s,"
			      " coalesce(sum(unobserved_gpu_seconds), 0) AS unobserved_s"
			      " FROM gl_capacity(to_timestamp($1), to_timestamp($2), $3::bigint, $4::boolean)",
			      4, (const char *[]){a, b, cap->grace_s < 0 ? NULL : g, cap->include ? "true" : "false"}, &r,
			      err)) ||
	    (rc = gl_pgrow_one_i64(r, "capacity_s", &sb->fleet.capacity_s, err)) ||
	    (rc = gl_pgrow_one_i64(r, "unavailable_s", &sb->fleet.unavailable_s, err)) ||
	    (rc = gl_pgrow_one_i64(r, "unobserved_s", &unobserved, err)))
		goto out;
	if (unobserved > 0 && !cap->include) {
		char h[32];
		gl_report_fmt_hours(unobserved, h, sizeof h);
		add_partial(sb, "unobserved capacity: %s GPU-h of nodes no inventory snapshot saw since (past their"
			    " last snapshot plus inventory.absent_grace_s) are neither capacity nor idle here", h);
	}
	if (!(rc = gl_accounting_capacity_cover(gl_db_store(c), sb->start_s, sb->end_s, now_s, NULL, &cov, err)))
		sb_cover_notes(sb, &cov);
out:
	gl_accounting_cover_fini(&cov);
	PQclear(r);
	return rc;
}

/* 2. the previous month's totals, same aggregate and sharing */
static void sb_prev(struct gl_sbmodel *sb, const struct gl_chargeback *prev)
{
	sb->fleet.has_prev = 1;
	sb->fleet.prev_total_micros = prev->total_micros;
	for (size_t j = 0; j < prev->steps[0].n_lines; j++) {
		const struct gl_chargeback_line *l = &prev->steps[0].lines[j];
		struct gl_sbmodel_owner *o = find_owner(sb, l->key[0]);
		if (!o) /* an owner of last month only: shown with zero this month */
			o = get_owner(sb, l->key[0]);
		o->prev_total_micros += l->total_micros;
	}
	for (size_t i = 0; i < sb->n_owners; i++)
		sb->owners[i].has_prev = 1;
}

/* 3. GPU-time and cost by GPU model / MIG profile per owner */
static void sb_models(struct gl_sbmodel *sb, const struct gl_chargeback *bym)
{
	sb->n_models = bym->steps[0].n_lines;
	sb->models = gl_xcalloc(sb->n_models + 1, sizeof *sb->models);
	for (size_t j = 0; j < sb->n_models; j++) {
		const struct gl_chargeback_line *l = &bym->steps[0].lines[j];
		sb->models[j].owner = gl_xstrdup(l->key[0]);
		sb->models[j].model = gl_xstrdup(l->key[1]);
		sb->models[j].alloc_s = l->alloc_s;
		sb->models[j].cost_micros = l->cost_micros;
		sb->models[j].unpriced_s = l->unpriced_s;
	}
	if (sb->n_models)
		gl_qsort(sb->models, sb->n_models, sizeof *sb->models, cmp_model);
}

/* The budgets of this aggregate in force in the month (the first one wins). */
static void sb_budgets(const struct gl_config *cfg, struct gl_sbmodel *sb)
{
	for (size_t i = 0; cfg && i < cfg->n_budgets; i++) {
		const struct gl_config_budget *bc = &cfg->budgets[i];
		int64_t amount;
		struct gl_sbmodel_owner *o;
		if (strcmp(bc->aggregate, sb->aggregate) != 0 ||
		    (amount = gl_budget_amount(cfg, i, sb->start_s, sb->end_s)) < 0)
			continue;
		o = get_owner(sb, bc->owner);
		if (o->has_prev == 0 && sb->fleet.has_prev)
			o->has_prev = 1;
		if (!o->has_budget) {
			o->has_budget = 1;
			o->budget_micros = amount;
		}
	}
}

/* What no source observed in the month, said where the report says what
 * is partial (a banner in HTML and on the PDF's first page, the partial
 * table in CSV): each source whose data stops before the month does (or
 * now), and the open jobs' unobserved time the figures leave out. */
static int sb_unobserved(PGconn *c, const struct gl_chargeback *cb, int64_t upto_s, struct gl_sbmodel *sb, struct gl_err *err)
{
	struct gl_ingest_data_through_set dt;
	char t[32], h[32], ih[32], m[48];
	int rc = gl_ingest_data_through(gl_db_store(c), &dt, err);
	for (size_t i = 0; !rc && i < dt.n; i++) {
		if (dt.rows[i].through_s >= upto_s)
			continue;
		gl_timeutil_format(dt.rows[i].through_s, t, sizeof t);
		add_partial(sb, "data through %s: %s's %s data (%s) stops there; the month reaches past it, later time is unobserved",
			    t, dt.rows[i].cluster, dt.rows[i].source, dt.rows[i].data);
	}
	if (!rc && cb->unobserved_s > 0) {
		gl_report_fmt_hours(cb->unobserved_s, h, sizeof h);
		gl_report_fmt_hours(cb->implausible_s, ih, sizeof ih);
		gl_cost_format(cb->unobserved_micros, sb->minor, m, sizeof m);
		add_partial(sb,
			    "unobserved: %s GPU-h (%s %s) of jobs still open when a source last saw them are not in the"
			    " figures (%s GPU-h of it past their jobs' time limits)",
			    h, m, sb->currency, ih);
	}
	gl_ingest_data_through_fini(&dt);
	return rc;
}

/* The month's lines (1), its capacity, the notes on what is partial, and
 * the previous month (2). */
static int sb_totals(PGconn *c, const struct gl_showback_req *req, const struct gl_window *month,
		     const struct gl_window *pmonth, int have_before, struct gl_sbmodel *sb, struct gl_err *err)
{
	struct gl_chargeback cb = {0}, prev = {0};
	struct gl_accounting_meta meta = {0}, pmeta = {0};
	const char *dims[1] = {req->aggregate};
	const struct gl_capacity_observed cap = sb_cap(req);
	int rc;

	if ((rc = run_cb(c, month, 1, dims, 1, req->share, 0, req->now_s, &cap, &cb, &meta, err)))
		goto out;
	sb_month(sb, &cb, &meta);
	if (meta.capacity_source && sb->fleet.capacity_known) {
		if ((rc = sb_capacity(c, req->now_s, &cap, sb, err)))
			goto out;
	} else {
		sb->fleet.capacity_known = 0;
		add_partial(sb, "no capacity data for %s: unallocated idle GPU-time and its cost are unknown", sb->month);
	}
	if (meta.n_unpriced)
		add_partial(sb, "unpriced GPU models (no rate in force, their GPU-time has no cost): %s",
			    sb->unpriced_models);
	if (!sb->closed)
		add_partial(sb, "%s is not over yet: month to date", sb->month);
	if ((rc = sb_unobserved(c, &cb, month->end_s < req->now_s ? month->end_s : req->now_s, sb, err)))
		goto out;
	if (have_before) {
		if ((rc = run_cb(c, pmonth, 1, dims, 1, req->share, 0, req->now_s, &cap, &prev, &pmeta, err)))
			goto out;
		sb_prev(sb, &prev);
	}
out:
	gl_chargeback_fini(&cb);
	gl_chargeback_fini(&prev);
	gl_accounting_meta_fini(&meta);
	gl_accounting_meta_fini(&pmeta);
	return rc;
}

/* 3. by GPU model, and 4. GPU-time per owner per day, for the stacked chart */
static int sb_breakdowns(PGconn *c, const struct gl_showback_req *req, const struct gl_window *month,
			 const struct gl_window *days, struct gl_sbmodel *sb, struct gl_err *err)
{
	struct gl_chargeback bym = {0}, daily = {0};
	struct gl_accounting_meta meta = {0};
	const char *dims[2] = {req->aggregate, "gpu_model"};
	const struct gl_capacity_observed cap = sb_cap(req);
	int rc;

	if ((rc = run_cb(c, month, 1, dims, 2, GL_CHARGEBACK_SHARE_NONE, 1, req->now_s, &cap, &bym, &meta, err)))
		goto out;
	sb_models(sb, &bym);
	if ((rc = run_cb(c, days, sb->n_days, dims, 1, GL_CHARGEBACK_SHARE_NONE, 1, req->now_s, &cap, &daily, &meta, err)))
		goto out;
	for (size_t i = 0; i < sb->n_days; i++)
		for (size_t j = 0; j < daily.steps[i].n_lines; j++) {
			const struct gl_chargeback_line *l = &daily.steps[i].lines[j];
			get_owner(sb, l->key[0])->daily_s[i] += l->alloc_s;
		}
out:
	gl_chargeback_fini(&bym);
	gl_chargeback_fini(&daily);
	gl_accounting_meta_fini(&meta);
	return rc;
}

int gl_showback_gather(struct gl_store *store, const struct gl_showback_req *req, struct gl_sbmodel *sb, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	struct gl_window month, pmonth, *days = NULL;
	int have_before = 0; /* a GPU job started before the month: the previous month has data */
	int any = 0, no_data = 0, rc;

	memset(sb, 0, sizeof *sb);
	if ((rc = sb_begin(req, sb, err)) || (rc = sb_data_bounds(c, sb, &any, &have_before, err)))
		goto out;
	if (!any) {
		rc = gl_err_set(err, GL_EINVAL, "month: %s is before any data (no GPU job started by its end)", req->month);
		no_data = 1;
		goto out;
	}
	month = (struct gl_window){sb->start_s, sb->end_s};
	pmonth = (struct gl_window){gl_window_month_start(sb->start_s - 1), sb->start_s};
	month_name(pmonth.start_s, sb->prev_month, sizeof sb->prev_month);
	days = sb_days(sb);
	if ((rc = sb_totals(c, req, &month, &pmonth, have_before, sb, err)) ||
	    (rc = sb_breakdowns(c, req, &month, days, sb, err)))
		goto out;
	/* 5. per job: top jobs, failed-job waste, energy, queue waits */
	if ((rc = gather_jobs(c, sb, req->now_s, err)))
		goto out;
	if (sb->n_waits)
		gl_qsort(sb->waits, sb->n_waits, sizeof *sb->waits, cmp_wait);
	if ((rc = gather_reference(c, sb, req->now_s, err)) || (rc = gather_inference(store, sb, req->now_s, err)) ||
	    (rc = gather_capacity(store, sb, req, err)))
		goto out;
	sb_budgets(req->cfg, sb);
	if (sb->n_owners)
		gl_qsort(sb->owners, sb->n_owners, sizeof *sb->owners, cmp_owner);
out:
	free(days);
	if (rc) {
		gl_showback_fini(sb);
		sb->no_data = no_data;
	}
	return rc;
}

static void job_fini(struct gl_sbmodel_job *j)
{
	free(j->job_id);
	free(j->cluster);
	free(j->owner);
	free(j->state);
}

void gl_showback_fini(struct gl_sbmodel *sb)
{
	for (size_t i = 0; i < sb->n_capacity; i++) {
		free(sb->capacity[i].cluster);
		free(sb->capacity[i].gpu_model);
		free(sb->capacity[i].method);
	}
	free(sb->capacity);
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
		struct gl_sbmodel_rule *x = &sb->rules[i];
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
	for (size_t i = 0; i < sb->n_inference; i++)
		free(sb->inference[i].owner);
	free(sb->inference);
	for (size_t i = 0; i < sb->n_partial; i++)
		free(sb->partial[i]);
	free(sb->partial);
	free(sb->unpriced_models);
	free(sb->day_start);
	memset(sb, 0, sizeof *sb);
}

static int named(const char *s, const char *const *v, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (!strcmp(s, v[i]))
			return 1;
	return 0;
}

static void restrict_owners(struct gl_sbmodel *sb, const char *const *v, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < sb->n_owners; i++) {
		if (named(sb->owners[i].name, v, n)) {
			sb->owners[k++] = sb->owners[i];
			continue;
		}
		free(sb->owners[i].name);
		free(sb->owners[i].daily_s);
	}
	sb->n_owners = k;
	k = 0;
	for (size_t i = 0; i < sb->n_models; i++) {
		if (named(sb->models[i].owner, v, n)) {
			sb->models[k++] = sb->models[i];
			continue;
		}
		free(sb->models[i].owner);
		free(sb->models[i].model);
	}
	sb->n_models = k;
	k = 0;
	/* a partition's waits are every owner's jobs there */
	for (size_t i = 0; i < sb->n_waits; i++) {
		if (!strcmp(sb->waits[i].kind, "owner") && named(sb->waits[i].name, v, n)) {
			sb->waits[k++] = sb->waits[i];
			continue;
		}
		free(sb->waits[i].kind);
		free(sb->waits[i].name);
	}
	sb->n_waits = k;
	k = 0;
	for (size_t i = 0; i < sb->n_inference; i++) {
		if (named(sb->inference[i].owner, v, n)) {
			sb->inference[k++] = sb->inference[i];
			continue;
		}
		free(sb->inference[i].owner);
	}
	sb->n_inference = k;
}

static void restrict_jobs(struct gl_sbmodel_job *jobs, size_t *nj, const char *const *v, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < *nj; i++) {
		if (named(jobs[i].owner, v, n)) {
			jobs[k++] = jobs[i];
			continue;
		}
		job_fini(&jobs[i]);
	}
	*nj = k;
}

/* The rules that map to an owner kept (by the aggregate's field; account
 * and user reports keep none: a rule names the team it gives). */
static void restrict_rules(struct gl_sbmodel *sb, const char *const *v, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < sb->n_rules; i++) {
		struct gl_sbmodel_rule *x = &sb->rules[i];
		const char *f = !strcmp(sb->aggregate, "team")	       ? x->team
				: !strcmp(sb->aggregate, "project")     ? x->project
				: !strcmp(sb->aggregate, "cost_center") ? x->cost_center
									 : NULL;
		if (named(f, v, n)) {
			sb->rules[k++] = *x;
			continue;
		}
		free(x->cluster);
		free(x->match_field);
		free(x->match_value);
		free(x->team);
		free(x->project);
		free(x->cost_center);
		free(x->valid_from);
		free(x->valid_to);
	}
	sb->n_rules = k;
}

/* The fleet as the sum of the owners kept: nothing of the others, no idle,
 * no capacity. */
static void restrict_fleet(struct gl_sbmodel *sb)
{
	struct gl_sbmodel_fleet *f = &sb->fleet;
	int has_prev = f->has_prev;
	memset(f, 0, sizeof *f);
	f->has_prev = has_prev;
	for (size_t i = 0; i < sb->n_owners; i++) {
		const struct gl_sbmodel_owner *o = &sb->owners[i];
		f->allocated_s += o->alloc_s;
		f->cost_micros += o->cost_micros;
		f->total_s += o->alloc_s + o->idle_share_s;
		f->total_micros += o->total_micros;
		f->prev_total_micros += o->prev_total_micros;
		f->failed_s += o->failed_s;
		f->failed_micros += o->failed_micros;
		f->has_energy |= o->has_energy;
		f->energy_mj += o->energy_mj;
	}
}

void gl_showback_restrict(struct gl_sbmodel *sb, const char *const *owners, size_t n)
{
	char note[512];
	size_t o = 0;
	restrict_owners(sb, owners, n);
	restrict_jobs(sb->top_cost, &sb->n_top_cost, owners, n);
	restrict_jobs(sb->top_idle, &sb->n_top_idle, owners, n);
	restrict_rules(sb, owners, n);
	restrict_fleet(sb);
	for (size_t i = 0; i < sb->n_capacity; i++) {
		free(sb->capacity[i].cluster);
		free(sb->capacity[i].gpu_model);
		free(sb->capacity[i].method);
	}
	sb->n_capacity = 0;
	/* the notes name clusters, sources and models of the whole fleet */
	for (size_t i = 0; i < sb->n_partial; i++)
		free(sb->partial[i]);
	sb->n_partial = 0;
	{
		/* the models the kept owners ran unpriced */
		struct gl_strbuf m = GL_STRBUF_INIT;
		for (size_t i = 0; i < sb->n_models; i++) {
			size_t j = 0;
			while (j < i && (sb->models[j].unpriced_s <= 0 || strcmp(sb->models[j].model, sb->models[i].model)))
				j++;
			if (sb->models[i].unpriced_s > 0 && j == i) {
				if (m.len)
					gl_strbuf_puts(&m, ", ");
				gl_strbuf_puts(&m, sb->models[i].model);
			}
		}
		free(sb->unpriced_models);
		sb->unpriced_models = gl_xstrdup(gl_strbuf_cstr(&m));
		gl_strbuf_fini(&m);
	}
	o += (size_t)snprintf(note + o, sizeof note - o, "scoped to %s ", sb->aggregate);
	for (size_t i = 0; i < n && o < sizeof note; i++)
		o += (size_t)snprintf(note + o, sizeof note - o, "%s%s", i ? ", " : "", owners[i]);
	if (o < sizeof note)
		snprintf(note + o, sizeof note - o,
			 ": the fleet's idle, capacity, other owners and the notes on the fleet's data are withheld");
	add_partial(sb, "%s", note);
}
