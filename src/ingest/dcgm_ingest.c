/* dcgm-exporter ingestion (see include/gl/dcgm_ingest.h, docs/ingest.md). */
#include "gl/dcgm_ingest.h"
#include "gl/dcgmstore.h"
#include "gl/busyshare.h"
#include "gl/dcgm_attrib.h"
#include "gl/ingest.h"
#include "gl/log.h"
#include "gl/redact.h"
#include "gl/strbuf.h"
#include "gl/txn.h"

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
	o->held_mib = (double)cfg->idle_held_memory_mib;
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

const char *gl_dcgm_ingest_source_name(const char *src)
{
	if (!src || !*src || !strcmp(src, "dcgm"))
		return "dcgm";
	if (!strcmp(src, "nvidia_smi"))
		return "nvidia_gpu_exporter";
	return src; /* "amd", "nvidia-smi" */
}

/* ---- batch -------------------------------------------------------------- */

struct bgpu {
	size_t host, uuid, profile, model, driver, source; /* offsets into str */
	int gi_id;
	int mig_parent;
	int gpu_index; /* -1 unknown */
	struct gl_dcgm_reading r;
	size_t job0, njobs; /* into refs: one offset per hpc_job value */
	size_t pod0, npods; /* into refs: three offsets (ns, pod, container) per pod */
};

struct gl_dcgm_ingest_batch {
	struct bgpu *g;
	size_t n, cap;
	struct gl_strbuf str; /* NUL-terminated strings; offset 0 is "" */
	size_t *refs;
	size_t nrefs, refs_cap;
	struct gl_ingest_stats st;
	int64_t bad_lines, failed, no_host, ignored;
	int has_pods;
};

struct gl_dcgm_ingest_batch *gl_dcgm_ingest_batch_new(int64_t max_skip_reasons)
{
	struct gl_dcgm_ingest_batch *b = gl_xcalloc(1, sizeof *b);
	gl_strbuf_init(&b->str);
	gl_strbuf_putc(&b->str, '\0');
	gl_ingest_stats_init(&b->st, max_skip_reasons);
	return b;
}

void gl_dcgm_ingest_batch_free(struct gl_dcgm_ingest_batch *b)
{
	if (!b)
		return;
	free(b->g);
	free(b->refs);
	gl_strbuf_fini(&b->str);
	gl_ingest_stats_fini(&b->st);
	free(b);
}

size_t gl_dcgm_ingest_batch_gpus(const struct gl_dcgm_ingest_batch *b)
{
	return b->n;
}

static size_t put_str(struct gl_dcgm_ingest_batch *b, const char *s)
{
	size_t off = b->str.len, n = strlen(s);
	if (!n)
		return 0;
	gl_strbuf_append(&b->str, s, n);
	gl_strbuf_putc(&b->str, '\0');
	return off;
}

static void put_ref(struct gl_dcgm_ingest_batch *b, size_t off)
{
	if (b->nrefs == b->refs_cap) {
		b->refs_cap = b->refs_cap ? b->refs_cap * 2 : 256;
		b->refs = gl_xrealloc(b->refs, b->refs_cap * sizeof *b->refs);
	}
	b->refs[b->nrefs++] = off;
}

/* A reason that is not a scrape line: kept for ingest_runs, logged by the
 * caller (the daemon rate-limits per target through the health registry). */
static void add_reason(struct gl_dcgm_ingest_batch *b, const char *input, int64_t line, const char *why)
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

void gl_dcgm_ingest_batch_fail(struct gl_dcgm_ingest_batch *b, const char *input, const char *why)
{
	b->failed++;
	add_reason(b, input, 0, why);
}

void gl_dcgm_ingest_batch_skip(struct gl_dcgm_ingest_batch *b, const char *input, int64_t line, const char *why)
{
	b->bad_lines++;
	add_reason(b, input, line, why);
}

void gl_dcgm_ingest_batch_lines(struct gl_dcgm_ingest_batch *b, int64_t lines)
{
	b->st.lines_read += lines;
}

static struct bgpu *new_gpu(struct gl_dcgm_ingest_batch *b)
{
	struct bgpu *o;
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->g = gl_xrealloc(b->g, b->cap * sizeof *b->g);
	}
	o = &b->g[b->n++];
	memset(o, 0, sizeof *o);
	return o;
}

void gl_dcgm_ingest_batch_add_gpu(struct gl_dcgm_ingest_batch *b, const struct gl_dcgm_ingest_batch_gpu *g)
{
	struct bgpu *o = new_gpu(b);
	o->host = put_str(b, g->node ? g->node : "");
	o->uuid = put_str(b, g->uuid ? g->uuid : "");
	o->profile = put_str(b, g->profile ? g->profile : "");
	o->model = put_str(b, g->model ? g->model : "");
	o->driver = put_str(b, g->driver ? g->driver : "");
	o->source = put_str(b, gl_dcgm_ingest_source_name(g->source));
	o->gi_id = g->gi_id;
	o->mig_parent = g->mig_parent;
	o->gpu_index = g->gpu_index;
	o->r = *g->r;
	o->job0 = b->nrefs;
	o->njobs = g->njobs;
	for (size_t k = 0; k < g->njobs; k++)
		put_ref(b, put_str(b, g->jobs[k]));
	o->pod0 = b->nrefs;
}

void gl_dcgm_ingest_batch_add(struct gl_dcgm_ingest_batch *b, const struct gl_dcgm_scrape *s, const char *input)
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
		o = new_gpu(b);
		o->host = put_str(b, g->hostname);
		o->uuid = put_str(b, g->uuid);
		o->profile = put_str(b, g->gi_profile);
		o->model = put_str(b, g->model);
		o->driver = put_str(b, g->driver_version);
		o->source = put_str(b, gl_dcgm_ingest_source_name(g->source));
		o->gi_id = g->gi_id;
		o->gpu_index = g->gpu_index;
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
		map[i] = b->n;
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

/* ---- one round -------------------------------------------------------- */

/* The state of one gl_dcgm_ingest call. */
struct round {
	struct gl_store *db;
	const struct gl_dcgm_ingest_opts *o;
	struct gl_dcgm_ingest_batch *b;
	struct gl_dcgm_ingest_batch *run;            /* the batch holding the run's counters and reasons */
	int last;                             /* the run's last round: its final status */
	int64_t at_s, bstart, max_gap;
	int cluster_id;
	int64_t run_id;
	struct gl_dcgm_ingest_result res;
	struct gl_dcgmstore_stage *st;
	struct gl_dcgmstore_state_list mp;    /* the batch's GPUs as stored, once each */
	struct gl_dcgmstore_job_list jobs;    /* the jobs that could claim them */
	const char **ptrs;                    /* the batch's refs as strings */
	struct gl_dcgm_pod *pods;
	struct gl_dcgm_attrib_gpu *ag;             /* per batch GPU */
	struct gl_dcgm_attrib_job *aj;             /* per job */
	struct gl_dcgm_attrib_share *shares;
	size_t nshares;
	size_t *share0;                       /* GPU i's shares: [share0[i], share0[i + 1]) */
	int *node_labelled;                   /* per batch GPU: some GPU of its node carries labels */
	int64_t *node_gpus;                   /* per batch GPU: its node's GPUs (MIG parents not counted) */
};

static const struct gl_dcgm_attrib_gpu *g_sort_ag; /* for node_cmp: qsort has no context */

static int node_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int d = strcmp(g_sort_ag[x].node, g_sort_ag[y].node);
	return d ? d : (x > y) - (x < y);
}

/* What the node rule of the attribution knows of each GPU's node (as
 * dcgm_attrib counts it): whether any GPU of the node carries labels, and
 * how many GPUs the node has. A sample of an unlabelled node that no job
 * fully took waits for the jobs of that node (sql/048). */
static void node_facts(struct round *R)
{
	size_t n = R->b->n, *ix = gl_xmalloc((n ? n : 1) * sizeof *ix);
	R->node_labelled = gl_xcalloc(n ? n : 1, sizeof *R->node_labelled);
	R->node_gpus = gl_xcalloc(n ? n : 1, sizeof *R->node_gpus);
	for (size_t i = 0; i < n; i++)
		ix[i] = i;
	g_sort_ag = R->ag;
	gl_qsort(ix, n, sizeof *ix, node_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		int lab = 0;
		int64_t gpus = 0;
		for (; j < n && !strcmp(R->ag[ix[j]].node, R->ag[ix[i]].node); j++) {
			const struct gl_dcgm_attrib_gpu *a = &R->ag[ix[j]];
			lab |= a->njobs > 0 || a->npods > 0;
			gpus += !a->skip;
		}
		for (size_t k = i; k < j; k++) {
			R->node_labelled[ix[k]] = lab;
			R->node_gpus[ix[k]] = gpus;
		}
		i = j;
	}
	free(ix);
}

static void stage_inventory(struct round *R)
{
	const struct gl_dcgm_ingest_batch *b = R->b;
	const char *S = b->str.p;
	for (size_t i = 0; i < b->n; i++) {
		const struct bgpu *g = &b->g[i];
		struct gl_dcgmstore_gpu row = {i,	  S + g->host, S + g->uuid,	   S + g->profile, S + g->model,
					       S + g->driver, S + g->source, g->gi_id, 0,		   0,
					       g->mig_parent, g->gpu_index};
		row.have_memory = gl_dcgm_reading_has(&g->r, GL_DCGM_FB_USED_MIB) &&
				  gl_dcgm_reading_has(&g->r, GL_DCGM_FB_FREE_MIB);
		if (row.have_memory)
			row.memory_mib = llround(g->r.v[GL_DCGM_FB_USED_MIB] + g->r.v[GL_DCGM_FB_FREE_MIB]);
		gl_dcgmstore_add_gpu(R->st, &row);
	}
}

/* A growable list of borrowed strings. */
struct names {
	const char **v;
	size_t n, cap;
};

static void names_add(struct names *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = gl_xrealloc(l->v, l->cap * sizeof *l->v);
	}
	l->v[l->n++] = s;
}

/* The attribution's view of each GPU; the nodes, job ids and pod names the
 * batch names, to find the jobs that could claim them. */
static void attrib_gpus(struct round *R, struct names *nodes, struct names *ids, struct names *pods)
{
	const struct gl_dcgm_ingest_batch *b = R->b;
	size_t npods_all = 0;
	R->ptrs = gl_xmalloc((b->nrefs ? b->nrefs : 1) * sizeof *R->ptrs);
	for (size_t k = 0; k < b->nrefs; k++)
		R->ptrs[k] = b->str.p + b->refs[k];
	R->ag = gl_xcalloc(b->n ? b->n : 1, sizeof *R->ag);
	for (size_t i = 0; i < b->n; i++)
		npods_all += b->g[i].npods;
	R->pods = gl_xcalloc(npods_all ? npods_all : 1, sizeof *R->pods);
	npods_all = 0;
	for (size_t i = 0; i < b->n; i++) {
		const struct bgpu *g = &b->g[i];
		struct gl_dcgm_attrib_gpu *a = &R->ag[i];
		*a = (struct gl_dcgm_attrib_gpu){b->str.p + g->host, R->ptrs + g->job0, g->njobs, R->pods + npods_all, g->npods,
					    g->mig_parent};
		for (size_t k = 0; k < g->npods; k++) {
			struct gl_dcgm_pod *p = &R->pods[npods_all++];
			*p = (struct gl_dcgm_pod){R->ptrs[g->pod0 + 3 * k], R->ptrs[g->pod0 + 3 * k + 1],
						  R->ptrs[g->pod0 + 3 * k + 2]};
			if (p->pod[0])
				names_add(pods, p->pod);
		}
		for (size_t k = 0; k < g->njobs; k++)
			names_add(ids, a->jobs[k]);
		/* nodes arrive grouped by scrape: skip the repeats next to each other */
		if (i == 0 || strcmp(a->node, R->ag[i - 1].node))
			names_add(nodes, a->node);
	}
}

/* 2. the jobs running at at_s that could claim these GPUs, and their shares */
static int attribute(struct round *R, struct gl_err *err)
{
	struct names nodes = {0}, ids = {0}, pods = {0};
	int rc;
	attrib_gpus(R, &nodes, &ids, &pods);
	rc = gl_dcgmstore_jobs(R->db, R->cluster_id, R->at_s, nodes.v, nodes.n, ids.v, ids.n, pods.v, pods.n, &R->jobs,
			       err);
	free(nodes.v);
	free(ids.v);
	free(pods.v);
	if (rc)
		return rc;
	R->aj = gl_xcalloc(R->jobs.n ? R->jobs.n : 1, sizeof *R->aj);
	for (size_t k = 0; k < R->jobs.n; k++) {
		const struct gl_dcgmstore_job *j = &R->jobs.v[k];
		R->aj[k] = (struct gl_dcgm_attrib_job){j->job_pk,	j->job_id,  j->job_id_raw, j->het_job_id,
						  j->ns,	j->name,    j->held_micro, j->start_s,
						  (const char *const *)j->nodes, j->nnodes};
	}
	gl_dcgm_attrib_assign(R->ag, R->b->n, R->aj, R->jobs.n, &R->shares, &R->nshares);
	node_facts(R);
	R->share0 = gl_xcalloc(R->b->n + 1, sizeof *R->share0);
	for (size_t k = 0; k < R->nshares; k++)
		R->share0[R->shares[k].gpu + 1]++;
	for (size_t i = 0; i < R->b->n; i++)
		R->share0[i + 1] += R->share0[i];
	return 0;
}

/* One applied sample's time, split by its busy share (duty x the time it
 * covers; docs/ingest.md, "Busy share"), in milliseconds. */
struct split {
	int64_t dt_s, covered_ms, busy_ms, idle_ms, held_ms;
	int busy, nodata;
};

/* The jobs' shares of one applied sample; returns the best attribution and
 * the share of the GPU they took. */
static enum gl_dcgm_attrib_kind stage_shares(struct round *R, const struct gl_dcgmstore_state *m, const struct split *sp,
					double *took)
{
	enum gl_dcgm_attrib_kind best = GL_DCGM_ATTRIB_NODE_ESTIMATED;
	double bf = 0, idf = 0, hf = 0;
	if (sp->covered_ms > 0) {
		bf = (double)sp->busy_ms / (double)sp->covered_ms;
		idf = (double)sp->idle_ms / (double)sp->covered_ms;
		hf = (double)sp->held_ms / (double)sp->covered_ms;
	}
	*took = 0;
	for (size_t s = R->share0[m->idx]; s < R->share0[m->idx + 1]; s++) {
		const struct gl_dcgm_attrib_share *sh = &R->shares[s];
		/* never cover time before the job started */
		int64_t jdt = R->at_s - sh->job_start_s < sp->dt_s ? R->at_s - sh->job_start_s : sp->dt_s;
		double gs = (double)jdt * sh->share;
		struct gl_dcgmstore_share row = {m->gpu_id, sh->job_pk, gl_dcgm_attrib_kind_name(sh->kind), sp->busy, sp->nodata,
						 gs, gs * bf, gs * idf, gs * hf};
		if (sh->kind < best)
			best = sh->kind;
		*took += sh->share;
		gl_dcgmstore_add_share(R->st, &row);
	}
	return best;
}

/* The sample's time split: covered since the GPU's last sample (capped),
 * busy the duty's share of it, idle the rest, held idle the idle part
 * while the GPU held memory; all of it no data without a duty value. */
static void split_sample(const struct round *R, const struct gl_dcgmstore_state *m, const struct gl_dcgm_reading *r,
			 struct split *sp)
{
	struct gl_busyshare bs;
	const struct gl_busyshare_params bp = {R->max_gap * 1000, R->o->held_mib};
	double duty = -1;
	memset(sp, 0, sizeof *sp);
	sp->nodata = gl_dcgm_reading_duty(&R->o->idle, r, &duty) != 0;
	sp->busy = !sp->nodata && duty > 0;
	gl_busyshare_init(&bs);
	if (m->last_s != GL_TIME_NONE)
		bs.last_t_ms = m->last_s * 1000;
	if (gl_busyshare_add(&bs, &bp, R->at_s * 1000, sp->nodata ? -1.0 : duty,
			     gl_dcgm_reading_has(r, GL_DCGM_FB_USED_MIB) ? r->v[GL_DCGM_FB_USED_MIB] : -1.0) != 0)
		return; /* not after the last sample: the caller checked */
	sp->covered_ms = bs.covered_ms;
	sp->dt_s = bs.covered_ms / 1000;
	sp->busy_ms = bs.busy_ms;
	sp->idle_ms = bs.idle_ms;
	sp->held_ms = bs.held_idle_ms;
}

/* 3. one GPU's sample: its rollup row, its jobs' shares, or the wait for a
 * job not known yet */
static void stage_sample(struct round *R, const struct gl_dcgmstore_state *m)
{
	const struct bgpu *g = &R->b->g[m->idx];
	struct gl_dcgm_bucket bk;
	struct gl_dcgmstore_use u = {0};
	struct split sp;
	enum gl_dcgm_attrib_kind best;
	double took;

	if (m->last_s != GL_TIME_NONE && R->at_s <= m->last_s) {
		R->res.stale++;
		return;
	}
	gl_dcgm_bucket_init(&bk, R->at_s, R->o->bucket_s);
	bk.last_t_s = m->last_s;
	bk.energy_last_mj = m->energy_last;
	if (gl_dcgm_bucket_add(&bk, &R->o->idle, R->at_s, &g->r) != 0) {
		R->res.stale++; /* cannot happen: checked above */
		return;
	}
	R->res.applied++;
	split_sample(R, m, &g->r, &sp);
	u.gpu_id = m->gpu_id;
	u.busy = (int)bk.busy_samples;
	u.nodata = (int)bk.nodata_samples;
	u.engine_sum = bk.engine_sum;
	u.engine_n = bk.engine_n;
	u.fb_max = bk.fb_used_max_mib;
	u.power_max = bk.power_max_w;
	u.have_energy = gl_dcgm_reading_has(&g->r, GL_DCGM_ENERGY_MJ) && m->energy_last >= 0 &&
			g->r.v[GL_DCGM_ENERGY_MJ] >= 0;
	u.energy_mj = u.have_energy ? llround(bk.energy_mj) : 0;
	u.energy_resets = bk.energy_resets;
	u.have_xid = gl_dcgm_reading_has(&g->r, GL_DCGM_XID_ERRORS);
	u.xid = u.have_xid ? llround(bk.xid_last) : 0;
	/* whole seconds per GPU-bucket: busy rounded once per sample, idle the
	 * rest, so covered = busy + idle + no data exactly */
	u.covered_s = sp.dt_s;
	u.busy_s = (sp.busy_ms + 500) / 1000;
	u.idle_s = sp.nodata ? 0 : sp.dt_s - u.busy_s;
	u.held_idle_s = (sp.held_ms + 500) / 1000 < u.idle_s ? (sp.held_ms + 500) / 1000 : u.idle_s;
	u.energy_last = bk.energy_last_mj;
	gl_dcgmstore_add_use(R->st, &u);
	best = stage_shares(R, m, &sp, &took);
	if (R->share0[m->idx] < R->share0[m->idx + 1])
		R->res.attributed[best]++;
	else if (!g->mig_parent)
		R->res.unattributed++;
	if (!g->mig_parent) {
		const struct gl_dcgm_attrib_gpu *a = &R->ag[m->idx];
		struct gl_dcgmstore_pending p = {m->gpu_id,   a->node,	  a->jobs,    a->njobs,	   a->pods,
						 a->npods,    sp.dt_s,	  sp.busy,    sp.nodata,   sp.busy_ms,
						 sp.idle_ms,  sp.held_ms, -1.0,	      0,	   NULL,
						 0};
		int64_t *claimed = NULL;
		if ((g->njobs || g->npods) && R->share0[m->idx] == R->share0[m->idx + 1]) {
			/* a labelled sample no job claimed: it waits for its job */
			gl_dcgmstore_add_pending(R->st, &p);
		} else if (!R->node_labelled[m->idx] && sp.dt_s > 0 && took < 1.0 - 1e-9) {
			/* an unlabelled node: what no known job took waits for
			 * the jobs of the node the next jobs ingest brings */
			size_t n0 = R->share0[m->idx], n1 = R->share0[m->idx + 1];
			claimed = gl_xmalloc((n1 - n0 + 1) * sizeof *claimed);
			for (size_t k = n0; k < n1; k++)
				claimed[k - n0] = R->shares[k].job_pk;
			p.left = 1.0 - took;
			p.node_gpus = R->node_gpus[m->idx];
			p.claimed = claimed;
			p.nclaimed = n1 - n0;
			gl_dcgmstore_add_pending(R->st, &p);
			R->res.waiting++;
		}
		free(claimed);
	}
}

/* The round's transaction: 1. inventory, 2. attribution, 3. samples,
 * 4. GPUs silent for longer than the grace period are gone since they
 * were last seen (not when every input failed: our own network trouble
 * must not empty the fleet), 5. the watermark (never lowered by an old
 * file; not moved by a round in which no target answered) and the run's
 * counters. Rolled back whole on any failure. */
static int write_round(struct round *R, struct gl_err *err)
{
	struct gl_dcgm_ingest_batch *b = R->b, *run = R->run;
	/* the run's counters as committed: a failed round adds nothing */
	int64_t ins0 = run->st.inserted, unc0 = run->st.unchanged, ign0 = run->st.ignored;
	int rc;
	if ((rc = gl_dcgmstore_begin(R->db, R->cluster_id, err)))
		return rc;
	stage_inventory(R);
	if ((rc = gl_dcgmstore_inventory(R->db, R->st, R->cluster_id, R->at_s, &R->res.nodes, &R->res.new_gpus, err)) ||
	    (rc = gl_dcgmstore_states(R->db, R->cluster_id, &R->mp, err)))
		goto fail;
	R->res.duplicates = (int64_t)b->n - (int64_t)R->mp.n;
	if ((rc = attribute(R, err)))
		goto fail;
	for (size_t k = 0; k < R->mp.n; k++)
		stage_sample(R, &R->mp.v[k]);
	if ((rc = gl_dcgmstore_apply(R->db, R->st, R->cluster_id, R->at_s, R->bstart, R->o->bucket_s, R->res.applied,
				     err)) ||
	    ((b->n || !b->failed) &&
	     (rc = gl_dcgmstore_mark_absent(R->db, R->cluster_id, R->at_s, R->o->absent_grace_s, &R->res.marked_absent,
					    err))) ||
	    (b->n && (rc = gl_dcgmstore_watermark(R->db, R->cluster_id, R->at_s, err))))
		goto fail;
	run->st.inserted += R->res.applied;
	run->st.unchanged += R->res.stale;
	run->st.ignored += b->ignored + R->res.duplicates;
	if (b->no_host)
		add_reason(run, R->o->input_name, 0, "GPUs without a Hostname label skipped (give the node name)");
	if ((rc = gl_ingest_run_update(R->db, R->run_id, &run->st,
				       !R->last                                                              ? "running"
					       : run->failed || run->bad_lines || run->no_host || b->no_host ? "partial"
													     : "ok",
				       NULL, err)) ||
	    (rc = gl_txn_commit(R->db, err)))
		goto fail;
	return 0;
fail:
	gl_txn_rollback(R->db);
	run->st.inserted = ins0;
	run->st.unchanged = unc0;
	run->st.ignored = ign0;
	return rc;
}

static void round_fini(struct round *R)
{
	free(R->aj);
	gl_dcgmstore_job_list_fini(&R->jobs);
	gl_dcgmstore_state_list_fini(&R->mp);
	gl_dcgmstore_stage_free(R->st);
	free(R->shares);
	free(R->share0);
	free(R->ag);
	free(R->pods);
	free(R->ptrs);
	free(R->node_labelled);
	free(R->node_gpus);
}

static void add_result(struct gl_dcgm_ingest_result *t, const struct gl_dcgm_ingest_result *r)
{
	t->gpus += r->gpus;
	t->nodes = r->nodes > t->nodes ? r->nodes : t->nodes;
	t->new_gpus += r->new_gpus;
	t->applied += r->applied;
	t->stale += r->stale;
	t->duplicates += r->duplicates;
	for (size_t k = 0; k < GL_ARRAY_LEN(t->attributed); k++)
		t->attributed[k] += r->attributed[k];
	t->unattributed += r->unattributed;
	t->waiting += r->waiting;
	t->marked_absent += r->marked_absent;
}

/* One round of the run (its own transaction). */
static int one_round(struct gl_store *db, const struct gl_dcgm_ingest_opts *o, struct gl_dcgm_ingest_batch *run,
		     struct gl_dcgm_ingest_batch *b, int64_t at_s, int cluster_id, int64_t run_id, int last,
		     int64_t *day_ready, struct gl_dcgm_ingest_result *total, struct gl_err *err)
{
	struct round R = {.db = db, .o = o, .b = b, .run = run, .last = last, .at_s = at_s, .cluster_id = cluster_id,
			  .run_id = run_id};
	int64_t day;
	int rc = 0;

	R.res.gpus = (int64_t)b->n;
	R.bstart = at_s - ((at_s % o->bucket_s) + o->bucket_s) % o->bucket_s;
	R.max_gap = o->max_gap_s > 0 && o->max_gap_s < o->bucket_s ? o->max_gap_s : o->bucket_s;
	R.st = gl_dcgmstore_stage_new();
	day = R.bstart - ((R.bstart % 86400) + 86400) % 86400;
	/* partitions outside the batch transaction: their DDL locks gpu_usage
	 * briefly instead of for the whole batch; tomorrow's is made ahead */
	if (day != *day_ready && !(rc = gl_dcgmstore_prepare(db, R.bstart, err)))
		*day_ready = day;
	if (!rc && !(rc = write_round(&R, err)))
		add_result(total, &R.res);
	round_fini(&R);
	return rc;
}

int gl_dcgm_ingest_rounds(struct gl_store *db, const struct gl_dcgm_ingest_opts *o, struct gl_dcgm_ingest_batch *const *b,
			  const int64_t *at_s, size_t n, struct gl_dcgm_ingest_result *res_out, struct gl_err *err)
{
	struct gl_dcgm_ingest_result res = {0};
	struct gl_dcgm_ingest_batch *run = b[0];
	int64_t run_id = 0, day_ready = INT64_MIN;
	int cluster_id = 0, rc = 0, pods = 0;
	size_t k = 0;

	if (o->bucket_s <= 0)
		return gl_err_set(err, GL_EINVAL, "dcgm: bucket_s must be positive");
	for (size_t i = 0; i < n; i++)
		pods |= b[i]->has_pods;
	res.bad_lines = run->bad_lines;
	res.failed_inputs = run->failed;
	res.no_host = run->no_host;
	run->st.inserted = run->st.updated = run->st.unchanged = 0;
	if ((rc = gl_dcgmstore_cluster(db, o->cluster, pods, &cluster_id, err)) ||
	    (rc = gl_ingest_run_begin(db, o->run_source ? o->run_source : "dcgm", cluster_id, o->input_name, &run_id,
				      err)))
		goto failed;
	for (; k < n; k++)
		if ((rc = one_round(db, o, run, b[k], at_s[k], cluster_id, run_id, k + 1 == n, &day_ready, &res, err)))
			goto failed;
	goto out;
failed:
	if (run_id) {
		struct gl_err e2 = {0};
		char redo[160];
		/* each round is one transaction: those before k were written */
		snprintf(redo, sizeof redo,
			 k ? "the rounds before the failed one were written; ingesting the same samples again applies "
			     "only the rest"
			   : "none of this round's samples were written: the next round scrapes the targets again");
		if (gl_ingest_run_fail(db, run_id, &run->st, err ? err->msg : "error", redo, &e2))
			gl_log(GL_LOG_WARN, "dcgm: could not record the failed run: %s", e2.msg);
	}
out:
	gl_ingest_run_audit(db, run_id);
	if (rc)
		gl_err_prefix(err, "dcgm %s: ", o->cluster);
	if (!rc && res_out)
		*res_out = res;
	return rc;
}

int gl_dcgm_ingest(struct gl_store *db, const struct gl_dcgm_ingest_opts *o, struct gl_dcgm_ingest_batch *b, int64_t at_s,
		   struct gl_dcgm_ingest_result *res_out, struct gl_err *err)
{
	return gl_dcgm_ingest_rounds(db, o, &b, &at_s, 1, res_out, err);
}

int gl_dcgm_ingest_claim_pending(struct gl_store *db, int cluster_id, int64_t *claimed, struct gl_err *err)
{
	if (gl_dcgmstore_claim_pending(db, cluster_id, claimed, err))
		return gl_err_prefix(err, "dcgm pending samples: ");
	return 0;
}
