/* Applying a node snapshot to the inventory tables (see gl/nodes_ingest.h).
 *
 * The merge is set-based: the snapshot goes into temporary staging tables by
 * COPY (the text made here), then store/nodestore's statements close the
 * spans that changed, open the new ones and upsert the Slurm events and
 * reservations. Per-node decisions
 * that need the whole snapshot (which cluster registration covers a node,
 * how a reservation's GPUs spread over its nodes) are made here in C. */
#include "gl/hostlist.h"
#include "gl/ingest.h"
#include "gl/jobs.h"
#include "gl/log.h"
#include "gl/nodes_ingest.h"
#include "gl/nodestore.h"
#include "gl/strbuf.h"
#include "gl/txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char gl_nodes_stage_columns[] = "node, gpu_model, gpus, mig, partition, partitions, since";

/* ---- small helpers ---- */

static void put_text(struct gl_strbuf *b, const char *s)
{
	if (!s)
		gl_strbuf_puts(b, "\\N");
	else
		gl_strbuf_put_copy_text(b, s, strlen(s));
}

static void put_time(struct gl_strbuf *b, int64_t t)
{
	if (t == GL_TIME_NONE)
		gl_strbuf_puts(b, "\\N");
	else
		gl_strbuf_put_i64(b, t);
}

/* "a100,debug" -> COPY text of the array literal {"a100","debug"} */
static void put_text_array(struct gl_strbuf *b, const char *csv)
{
	struct gl_strbuf lit = GL_STRBUF_INIT;
	const char *p = csv;
	if (!csv) {
		gl_strbuf_puts(b, "\\N");
		return;
	}
	gl_strbuf_putc(&lit, '{');
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (lit.len > 1)
			gl_strbuf_putc(&lit, ',');
		gl_strbuf_putc(&lit, '"');
		for (size_t i = 0; i < n; i++) {
			if (p[i] == '"' || p[i] == '\\')
				gl_strbuf_putc(&lit, '\\');
			gl_strbuf_putc(&lit, p[i]);
		}
		gl_strbuf_putc(&lit, '"');
		p += n;
		if (*p == ',')
			p++;
	}
	gl_strbuf_putc(&lit, '}');
	gl_strbuf_put_copy_text(b, lit.p, lit.len);
	gl_strbuf_fini(&lit);
}

static char *primary_partition(const char *parts)
{
	const char *e;
	if (!parts || !*parts)
		return NULL;
	e = strchr(parts, ',');
	return e ? gl_xstrndup(parts, (size_t)(e - parts)) : gl_xstrdup(parts);
}

/* ---- cluster registrations: which nodes a registration covers ---- */

struct names {
	char **v;
	size_t n, cap;
};

static int names_add(const char *host, void *ud)
{
	struct names *ns = ud;
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 64;
		ns->v = gl_xrealloc(ns->v, ns->cap * sizeof *ns->v);
	}
	ns->v[ns->n++] = gl_xstrdup(host);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_fini(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	memset(ns, 0, sizeof *ns);
}

static int names_has(const struct names *ns, const char *name)
{
	return ns->n && gl_bsearch(&name, ns->v, ns->n, sizeof *ns->v, cmp_str) != NULL;
}

/* When each node started to be present: the start of the cluster
 * registration covering at_s that lists it (slurmdbd counts a node's GPUs
 * from the registration), else the Kubernetes creation time, else at_s. */
static void node_since(const struct gl_nodeobs_snapshot *s, int64_t at_s, int64_t *since)
{
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct gl_nodeobs_obs *o = &s->nodes[i];
		since[i] = at_s;
		if (o->created_s != GL_TIME_NONE && o->created_s <= at_s)
			since[i] = o->created_s;
	}
	for (size_t e = 0; e < s->nevents; e++) {
		const struct gl_nodeobs_slurm_event *ev = &s->events[e];
		struct names ns = {0};
		struct gl_err err = {0};
		if (!ev->is_cluster || ev->start_s > at_s || (ev->end_s != GL_TIME_NONE && ev->end_s <= at_s) ||
		    !ev->cluster_nodes)
			continue;
		if (gl_hostlist_expand(ev->cluster_nodes, strlen(ev->cluster_nodes), names_add, &ns, &err)) {
			gl_log(GL_LOG_WARN, "slurm-nodes: cluster event at %lld: Cluster Nodes: %s", (long long)ev->start_s,
			       err.msg);
			names_fini(&ns);
			continue;
		}
		gl_qsort(ns.v, ns.n, sizeof *ns.v, cmp_str);
		for (size_t i = 0; i < s->nnodes; i++)
			if (ev->start_s < since[i] && names_has(&ns, s->nodes[i].name))
				since[i] = ev->start_s;
		names_fini(&ns);
	}
}

char *gl_nodes_ingest_stage_copy_text(const struct gl_nodeobs_snapshot *s, int64_t at_s, size_t *len)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	int64_t *since = gl_xcalloc(s->nnodes ? s->nnodes : 1, sizeof *since);
	node_since(s, at_s, since);
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct gl_nodeobs_obs *o = &s->nodes[i];
		char *prim = primary_partition(o->partitions);
		for (size_t m = 0; m < o->ngpu_models; m++) {
			if (o->gpus[m].gpus <= 0)
				continue;
			put_text(&b, o->name);
			gl_strbuf_putc(&b, '\t');
			put_text(&b, o->gpus[m].model);
			gl_strbuf_printf(&b, "\t%lld\t%lld\t", (long long)o->gpus[m].gpus, (long long)o->gpus[m].mig_instances);
			put_text(&b, prim);
			gl_strbuf_putc(&b, '\t');
			put_text_array(&b, o->partitions);
			gl_strbuf_putc(&b, '\t');
			put_time(&b, since[i]);
			if (o->gpus[m].memory_mib > 0)
				gl_strbuf_printf(&b, "\t%lld", (long long)o->gpus[m].memory_mib);
			else
				gl_strbuf_puts(&b, "\t\\N");
			if (o->gpus[m].replicas > 1)
				gl_strbuf_printf(&b, "\t%d\n", o->gpus[m].replicas);
			else
				gl_strbuf_puts(&b, "\t\\N\n");
		}
		free(prim);
	}
	free(since);
	*len = b.len;
	if (!b.p)
		return gl_xstrdup("");
	return gl_strbuf_steal(&b);
}

static int node_has_gpus(const struct gl_nodeobs_obs *o)
{
	for (size_t m = 0; m < o->ngpu_models; m++)
		if (o->gpus[m].gpus > 0)
			return 1;
	return 0;
}

static void stage_states(const struct gl_nodeobs_snapshot *s, int64_t at_s, const int64_t *since, struct gl_strbuf *b)
{
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct gl_nodeobs_obs *o = &s->nodes[i];
		if (!node_has_gpus(o))
			continue; /* a GPU ledger: CPU-only nodes carry no capacity */
		put_text(b, o->name);
		gl_strbuf_putc(b, '\t');
		gl_strbuf_puts(b, gl_nodeobs_avail_name(o->avail));
		gl_strbuf_putc(b, '\t');
		/* evidence of when the state began (reason time, Ready transition,
		 * taint time); the merge keeps it only when it falls after the
		 * previous snapshot */
		put_time(b, o->state_since_s != GL_TIME_NONE && o->state_since_s <= at_s ? o->state_since_s : GL_TIME_NONE);
		gl_strbuf_putc(b, '\t');
		put_time(b, since[i]);
		gl_strbuf_puts(b, "\t\\N\t"); /* last: filled by the merge */
		put_text(b, o->state_raw);
		gl_strbuf_putc(b, '\t');
		put_text(b, o->unknown_flags);
		gl_strbuf_putc(b, '\t');
		put_text(b, o->reason);
		gl_strbuf_putc(b, '\t');
		put_text(b, o->reason_user);
		gl_strbuf_putc(b, '\t');
		if (o->alloc_gpus >= 0)
			gl_strbuf_put_i64(b, o->alloc_gpus);
		else
			gl_strbuf_puts(b, "\\N");
		gl_strbuf_putc(b, '\n');
	}
}

static size_t stage_events(const struct gl_nodeobs_snapshot *s, struct gl_strbuf *b)
{
	size_t n = 0;
	for (size_t e = 0; e < s->nevents; e++) {
		const struct gl_nodeobs_slurm_event *ev = &s->events[e];
		char raw[32];
		if (ev->is_cluster)
			continue;
		put_text(b, ev->node);
		gl_strbuf_putc(b, '\t');
		gl_strbuf_puts(b, gl_nodeobs_avail_name(ev->avail));
		gl_strbuf_putc(b, '\t');
		put_time(b, ev->start_s);
		gl_strbuf_putc(b, '\t');
		put_time(b, ev->end_s);
		gl_strbuf_putc(b, '\t');
		if (ev->state_raw >= 0) {
			snprintf(raw, sizeof raw, "%s(%lld)", ev->state ? ev->state : "", (long long)ev->state_raw);
			put_text(b, raw);
		} else
			put_text(b, ev->state);
		gl_strbuf_putc(b, '\t');
		put_text(b, ev->reason);
		gl_strbuf_putc(b, '\t');
		put_text(b, ev->user);
		gl_strbuf_putc(b, '\n');
		n++;
	}
	return n;
}

/* Cluster registrations, one row per node they list: the first span of a
 * node seen before the event history arrived is moved back to them. */
struct reg_ctx {
	const struct gl_nodeobs_slurm_event *ev;
	struct gl_strbuf *b;
	size_t rows;
};

static int reg_node(const char *host, void *ud)
{
	struct reg_ctx *x = ud;
	put_text(x->b, host);
	gl_strbuf_putc(x->b, '\t');
	put_time(x->b, x->ev->start_s);
	gl_strbuf_putc(x->b, '\t');
	put_time(x->b, x->ev->end_s);
	gl_strbuf_putc(x->b, '\n');
	x->rows++;
	return 0;
}

static size_t stage_regs(const struct gl_nodeobs_snapshot *s, struct gl_strbuf *b)
{
	size_t rows = 0;
	for (size_t e = 0; e < s->nevents; e++) {
		struct reg_ctx x = {.ev = &s->events[e], .b = b};
		struct gl_err err = {0};
		if (!x.ev->is_cluster || !x.ev->cluster_nodes)
			continue;
		if (gl_hostlist_expand(x.ev->cluster_nodes, strlen(x.ev->cluster_nodes), reg_node, &x, &err))
			gl_log(GL_LOG_WARN, "slurm-nodes: cluster event: Cluster Nodes: %s", err.msg);
		rows += x.rows;
	}
	return rows;
}

/* Reservations, one row per reserved node (and model when the TRES names
 * GPUs): a 22.05 reservation's TRES has no GPUs, so its rows carry 0 GPUs and
 * show in the inventory without taking capacity, exactly as sreport books it. */
struct resv_ctx {
	const struct gl_nodeobs_snapshot *s;
	const struct gl_nodeobs_slurm_resv *r;
	struct gl_strbuf *b;
	int64_t left[GL_NODEOBS_MAX_MODELS]; /* typed GPUs still to place, per r->gpus[] */
	int64_t untyped_left;
	size_t rows;
};

static const struct gl_nodeobs_obs *find_node(const struct gl_nodeobs_snapshot *s, const char *name)
{
	/* reservations are few; a linear scan keeps the snapshot unsorted */
	for (size_t i = 0; i < s->nnodes; i++)
		if (!strcmp(s->nodes[i].name, name))
			return &s->nodes[i];
	return NULL;
}

static void resv_row(struct resv_ctx *x, const char *node, const char *model, int64_t gpus)
{
	const struct gl_nodeobs_slurm_resv *r = x->r;
	char ref[256];
	snprintf(ref, sizeof ref, "%s%s%s", r->name, model ? ":" : "", model ? model : "");
	put_text(x->b, node);
	gl_strbuf_putc(x->b, '\t');
	put_text(x->b, ref);
	gl_strbuf_putc(x->b, '\t');
	gl_strbuf_puts(x->b, r->maint ? "maint" : "reserved");
	gl_strbuf_putc(x->b, '\t');
	put_text(x->b, model);
	gl_strbuf_printf(x->b, "\t%lld\t", (long long)gpus);
	put_time(x->b, r->start_s);
	gl_strbuf_putc(x->b, '\t');
	put_time(x->b, r->end_s);
	gl_strbuf_putc(x->b, '\t');
	put_text(x->b, r->flags);
	gl_strbuf_putc(x->b, '\t');
	put_text(x->b, r->tres);
	gl_strbuf_putc(x->b, '\n');
	x->rows++;
}

static int resv_node(const char *host, void *ud)
{
	struct resv_ctx *x = ud;
	const struct gl_nodeobs_obs *o = find_node(x->s, host);
	int placed = 0;
	if (o) {
		for (size_t m = 0; m < o->ngpu_models; m++) {
			int64_t cap = o->gpus[m].gpus, take = 0;
			for (size_t k = 0; k < x->r->ngpu_models; k++)
				if (x->r->gpus[k].model[0] && !strcmp(x->r->gpus[k].model, o->gpus[m].model)) {
					take = x->left[k] < cap ? x->left[k] : cap;
					x->left[k] -= take;
				}
			if (take < cap && x->untyped_left > 0) {
				int64_t u = x->untyped_left < cap - take ? x->untyped_left : cap - take;
				take += u;
				x->untyped_left -= u;
			}
			if (take > 0) {
				resv_row(x, host, o->gpus[m].model, take);
				placed = 1;
			}
		}
	}
	if (!placed)
		resv_row(x, host, NULL, 0);
	return 0;
}

static size_t stage_resvs(const struct gl_nodeobs_snapshot *s, struct gl_strbuf *b)
{
	size_t rows = 0;
	for (size_t i = 0; i < s->nresvs; i++) {
		const struct gl_nodeobs_slurm_resv *r = &s->resvs[i];
		struct resv_ctx x = {.s = s, .r = r, .b = b};
		struct gl_err err = {0};
		int64_t typed = 0;
		if (r->ignore_jobs) {
			/* sreport leaves IGNORE_JOBS reservations out of cluster utilization */
			gl_log(GL_LOG_INFO, "slurm-nodes: reservation %s has IGNORE_JOBS: not counted", r->name);
			continue;
		}
		if (!r->nodes)
			continue;
		for (size_t k = 0; k < r->ngpu_models; k++) {
			x.left[k] = r->gpus[k].model[0] ? r->gpus[k].gpus : 0;
			typed += x.left[k];
		}
		x.untyped_left = r->gpus_total - typed;
		if (gl_hostlist_expand(r->nodes, strlen(r->nodes), resv_node, &x, &err))
			gl_log(GL_LOG_WARN, "slurm-nodes: reservation %s: nodes: %s", r->name, err.msg);
		rows += x.rows;
	}
	return rows;
}

/* ---- the snapshot ---- */

/* The snapshot's staging COPY text (buffers the caller's) and counts. */
struct staged {
	struct gl_strbuf sb, eb, rb, cb;
	char *gtext;
	struct gl_nodestore_stage st;
};

static void staged_fini(struct staged *x)
{
	gl_strbuf_fini(&x->sb);
	gl_strbuf_fini(&x->eb);
	gl_strbuf_fini(&x->rb);
	gl_strbuf_fini(&x->cb);
	free(x->gtext);
}

static void stage_snapshot(const struct gl_nodeobs_snapshot *s, int64_t at_s, struct staged *x,
			   struct gl_nodes_ingest_counts *out)
{
	int64_t *since = gl_xcalloc(s->nnodes ? s->nnodes : 1, sizeof *since);
	node_since(s, at_s, since);
	x->gtext = gl_nodes_ingest_stage_copy_text(s, at_s, &x->st.gpus_len);
	stage_states(s, at_s, since, &x->sb);
	x->st.nevents = stage_events(s, &x->eb);
	x->st.nresvs = stage_resvs(s, &x->rb);
	x->st.nregs = stage_regs(s, &x->cb);
	free(since);
	x->st.gpus = x->gtext;
	x->st.states = x->sb.p;
	x->st.states_len = x->sb.len;
	x->st.events = x->eb.p;
	x->st.events_len = x->eb.len;
	x->st.resvs = x->rb.p;
	x->st.resvs_len = x->rb.len;
	x->st.regs = x->cb.p;
	x->st.regs_len = x->cb.len;
	for (size_t i = 0; i < s->nnodes; i++) {
		out->nodes++;
		if (node_has_gpus(&s->nodes[i]))
			out->gpu_nodes++;
		for (size_t m = 0; m < s->nodes[i].ngpu_models; m++) {
			out->gpus += s->nodes[i].gpus[m].gpus;
			x->st.gpu_rows += s->nodes[i].gpus[m].gpus > 0; /* the staged GPU rows */
		}
	}
}

/* The snapshot's transaction, under the per-cluster ingest lock: refused
 * when older than the last one applied, else merged, with the snapshot's
 * row and the run's counters; rolled back whole on any failure. */
static int apply(struct gl_store *db, const struct gl_nodes_ingest_opts *o, const struct gl_nodeobs_snapshot *s,
		 int cluster_id, const struct staged *x, int64_t run_id, struct gl_ingest_stats *st,
		 struct gl_nodes_ingest_counts *out, struct gl_err *err)
{
	struct gl_nodestore_counts m = {0};
	int64_t last;
	int rc;
	if ((rc = gl_txn_begin(db, err)))
		return rc;
	if ((rc = gl_jobs_lock(db, cluster_id, err)) || (rc = gl_nodestore_last_snapshot(db, cluster_id, o->source, &last, err)))
		goto fail;
	if (last != GL_TIME_NONE && last > o->at_s) {
		rc = gl_err_set(err, GL_EINVAL, "%s: snapshot taken at %lld is older than the last one applied (%lld)",
				o->input_name, (long long)o->at_s, (long long)last);
		goto fail;
	}
	if ((rc = gl_nodestore_merge(db, &x->st, cluster_id, o->source, o->at_s, last, &m, err)) ||
	    (o->events_complete && (rc = gl_nodestore_coverage(db, cluster_id, o->at_s, err))) ||
	    (rc = gl_nodestore_snapshot(db, cluster_id, o->source, o->at_s, out->gpu_nodes, out->gpus,
					(int64_t)(s->nproblems + s->problems_dropped), err)))
		goto fail;
	out->gpu_spans_opened = m.gpu_spans_opened;
	out->gpu_spans_closed = m.gpu_spans_closed;
	out->state_spans_opened = m.state_spans_opened;
	out->state_spans_closed = m.state_spans_closed;
	out->events = m.events;
	out->reservations = m.reservations;
	st->inserted = out->gpu_spans_opened + out->state_spans_opened;
	st->updated = out->gpu_spans_closed + out->state_spans_closed + out->events + out->reservations;
	if ((rc = gl_ingest_run_update(db, run_id, st, s->skipped ? "partial" : "ok", NULL, err)) ||
	    (rc = gl_txn_commit(db, err)))
		goto fail;
	return 0;
fail:
	gl_txn_rollback(db);
	return rc;
}

int gl_nodes_ingest(struct gl_store *db, const struct gl_nodes_ingest_opts *o, const struct gl_nodeobs_snapshot *s,
		    struct gl_nodes_ingest_counts *out, struct gl_err *err)
{
	struct staged x = {GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT, GL_STRBUF_INIT, NULL, {0}};
	struct gl_ingest_stats st;
	int64_t run_id = 0;
	int cluster_id, rc;

	memset(out, 0, sizeof *out);
	gl_ingest_stats_init(&st, 20);
	if ((rc = gl_jobs_cluster_ensure(db, o->cluster, o->kind, &cluster_id, err)) ||
	    (rc = gl_ingest_run_begin(db, o->run_source, cluster_id, o->input_name, &run_id, err)))
		goto out;
	if (s->nnodes == 0) {
		/* a scheduler that answers with nothing must not zero the fleet */
		rc = gl_err_set(err, GL_EINVAL, "%s: no nodes in the snapshot: last known state kept", o->input_name);
		goto out;
	}
	stage_snapshot(s, o->at_s, &x, out);
	st.lines_read = (int64_t)s->lines;
	for (size_t i = 0; i < s->nproblems; i++)
		gl_ingest_stats_skip(&st, o->input_name, 0, s->problems[i]);
	st.skipped = (int64_t)s->skipped; /* problems include warnings; skipped counts records */
	rc = apply(db, o, s, cluster_id, &x, run_id, &st, out, err);
out:
	if (rc && run_id) {
		struct gl_err e2 = {0};
		/* one transaction per snapshot: none of it was written */
		st.inserted = st.updated = st.unchanged = 0;
		if (gl_ingest_run_fail(db, run_id, &st, err->msg,
				       "none of this snapshot was written: the next run reads the nodes again", &e2))
			gl_log(GL_LOG_WARN, "%s: could not record the failed run: %s", o->run_source, e2.msg);
	}
	gl_ingest_run_audit(db, run_id);
	gl_ingest_stats_fini(&st);
	staged_fini(&x);
	return rc;
}
