/* Applying a node snapshot to the inventory tables (see gl/nodes_ingest.h).
 *
 * The merge is set-based: the snapshot goes into temporary staging tables by
 * COPY, then a handful of statements close the spans that changed, open the
 * new ones and upsert the Slurm events and reservations. Per-node decisions
 * that need the whole snapshot (which cluster registration covers a node,
 * how a reservation's GPUs spread over its nodes) are made here in C. */
#include "gl/db.h"
#include "gl/hostlist.h"
#include "gl/ingest.h"
#include "gl/jobs.h"
#include "gl/log.h"
#include "gl/nodes_ingest.h"
#include "gl/strbuf.h"

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
	return ns->n && bsearch(&name, ns->v, ns->n, sizeof *ns->v, cmp_str) != NULL;
}

/* When each node started to be present: the start of the cluster
 * registration covering at_s that lists it (slurmdbd counts a node's GPUs
 * from the registration), else the Kubernetes creation time, else at_s. */
static void node_since(const struct gl_node_snapshot *s, int64_t at_s, int64_t *since)
{
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct gl_node_obs *o = &s->nodes[i];
		since[i] = at_s;
		if (o->created_s != GL_TIME_NONE && o->created_s <= at_s)
			since[i] = o->created_s;
	}
	for (size_t e = 0; e < s->nevents; e++) {
		const struct gl_slurm_event *ev = &s->events[e];
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
		qsort(ns.v, ns.n, sizeof *ns.v, cmp_str);
		for (size_t i = 0; i < s->nnodes; i++)
			if (ev->start_s < since[i] && names_has(&ns, s->nodes[i].name))
				since[i] = ev->start_s;
		names_fini(&ns);
	}
}

char *gl_nodes_stage_copy_text(const struct gl_node_snapshot *s, int64_t at_s, size_t *len)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	int64_t *since = gl_xcalloc(s->nnodes ? s->nnodes : 1, sizeof *since);
	node_since(s, at_s, since);
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct gl_node_obs *o = &s->nodes[i];
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
				gl_strbuf_printf(&b, "\t%lld\n", (long long)o->gpus[m].memory_mib);
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

static int node_has_gpus(const struct gl_node_obs *o)
{
	for (size_t m = 0; m < o->ngpu_models; m++)
		if (o->gpus[m].gpus > 0)
			return 1;
	return 0;
}

static void stage_states(const struct gl_node_snapshot *s, int64_t at_s, const int64_t *since, struct gl_strbuf *b)
{
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct gl_node_obs *o = &s->nodes[i];
		if (!node_has_gpus(o))
			continue; /* a GPU ledger: CPU-only nodes carry no capacity */
		put_text(b, o->name);
		gl_strbuf_putc(b, '\t');
		gl_strbuf_puts(b, gl_node_avail_name(o->avail));
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

static size_t stage_events(const struct gl_node_snapshot *s, struct gl_strbuf *b)
{
	size_t n = 0;
	for (size_t e = 0; e < s->nevents; e++) {
		const struct gl_slurm_event *ev = &s->events[e];
		char raw[32];
		if (ev->is_cluster)
			continue;
		put_text(b, ev->node);
		gl_strbuf_putc(b, '\t');
		gl_strbuf_puts(b, gl_node_avail_name(ev->avail));
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
	const struct gl_slurm_event *ev;
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

static size_t stage_regs(const struct gl_node_snapshot *s, struct gl_strbuf *b)
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
	const struct gl_node_snapshot *s;
	const struct gl_slurm_resv *r;
	struct gl_strbuf *b;
	int64_t left[GL_NODE_MAX_MODELS]; /* typed GPUs still to place, per r->gpus[] */
	int64_t untyped_left;
	size_t rows;
};

static const struct gl_node_obs *find_node(const struct gl_node_snapshot *s, const char *name)
{
	/* reservations are few; a linear scan keeps the snapshot unsorted */
	for (size_t i = 0; i < s->nnodes; i++)
		if (!strcmp(s->nodes[i].name, name))
			return &s->nodes[i];
	return NULL;
}

static void resv_row(struct resv_ctx *x, const char *node, const char *model, int64_t gpus)
{
	const struct gl_slurm_resv *r = x->r;
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
	const struct gl_node_obs *o = find_node(x->s, host);
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

static size_t stage_resvs(const struct gl_node_snapshot *s, struct gl_strbuf *b)
{
	size_t rows = 0;
	for (size_t i = 0; i < s->nresvs; i++) {
		const struct gl_slurm_resv *r = &s->resvs[i];
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

/* ---- the merge ---- */

static int q(PGconn *c, const char *sql, int n, const char *const *p, int64_t *affected, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = gl_db_query(c, sql, n, p, &r, err);
	if (!rc && affected)
		*affected += atoll(PQcmdTuples(r));
	PQclear(r);
	return rc;
}

int gl_nodes_ingest(PGconn *c, const struct gl_nodes_ingest_opts *o, const struct gl_node_snapshot *s,
		    struct gl_nodes_ingest_counts *out, struct gl_err *err)
{
	struct gl_strbuf sb = GL_STRBUF_INIT, eb = GL_STRBUF_INIT, rb = GL_STRBUF_INIT, cb = GL_STRBUF_INIT;
	struct gl_ingest_stats st;
	char cid[16], at[24], last[24];
	const char *lastp = NULL;
	char *gtext = NULL;
	size_t glen = 0, nev, nresv, nreg, gpu_rows = 0;
	int64_t *since = NULL, run_id = 0;
	int cluster_id, rc, in_txn = 0;
	PGresult *r = NULL;

	memset(out, 0, sizeof *out);
	gl_ingest_stats_init(&st, 20);
	if ((rc = gl_cluster_ensure(c, o->cluster, o->kind, &cluster_id, err)))
		goto out;
	if ((rc = gl_ingest_run_begin(c, o->run_source, cluster_id, o->input_name, &run_id, err)))
		goto out;
	if (s->nnodes == 0) {
		/* a scheduler that answers with nothing must not zero the fleet */
		rc = gl_err_set(err, GL_EINVAL, "%s: no nodes in the snapshot: last known state kept", o->input_name);
		goto out;
	}
	snprintf(cid, sizeof cid, "%d", cluster_id);
	snprintf(at, sizeof at, "%lld", (long long)o->at_s);

	since = gl_xcalloc(s->nnodes, sizeof *since);
	node_since(s, o->at_s, since);
	gtext = gl_nodes_stage_copy_text(s, o->at_s, &glen);
	stage_states(s, o->at_s, since, &sb);
	nev = stage_events(s, &eb);
	nresv = stage_resvs(s, &rb);
	nreg = stage_regs(s, &cb);
	for (size_t i = 0; i < s->nnodes; i++) {
		out->nodes++;
		if (node_has_gpus(&s->nodes[i]))
			out->gpu_nodes++;
		for (size_t m = 0; m < s->nodes[i].ngpu_models; m++) {
			out->gpus += s->nodes[i].gpus[m].gpus;
			gpu_rows += s->nodes[i].gpus[m].gpus > 0; /* the staged GPU rows */
		}
	}
	st.lines_read = (int64_t)s->lines;
	st.skipped = (int64_t)s->skipped;
	for (size_t i = 0; i < s->nproblems; i++)
		gl_ingest_stats_skip(&st, o->input_name, 0, s->problems[i]);
	st.skipped = (int64_t)s->skipped; /* problems include warnings; skipped counts records */

	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	in_txn = 1;
	if ((rc = gl_jobs_lock(c, cluster_id, err)))
		goto out;
	if ((rc = gl_db_query(c,
			      "SELECT extract(epoch FROM max(taken_at))::bigint FROM sched_snapshots"
			      " WHERE cluster_id = $1 AND source = $2",
			      2, (const char *[]){cid, o->source}, &r, err)))
		goto out;
	if (!PQgetisnull(r, 0, 0)) {
		snprintf(last, sizeof last, "%s", PQgetvalue(r, 0, 0));
		lastp = last;
		if (atoll(last) > o->at_s) {
			rc = gl_err_set(err, GL_EINVAL, "%s: snapshot taken at %lld is older than the last one applied (%s)",
					o->input_name, (long long)o->at_s, last);
			goto out;
		}
	}
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_exec(c,
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_ng (node text, gpu_model text, gpus int, mig int,"
			     " partition text, partitions text[], since bigint, mem bigint) ON COMMIT DELETE ROWS;"
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_ns (node text, state text, since bigint, presence bigint, last bigint, raw text,"
			     " unknown text, reason text, ruser text, alloc int) ON COMMIT DELETE ROWS;"
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_ev (node text, state text, t0 bigint, t1 bigint,"
			     " raw text, reason text, ruser text) ON COMMIT DELETE ROWS;"
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_rv (node text, ref text, state text, gpu_model text,"
			     " gpus int, t0 bigint, t1 bigint, flags text, tres text) ON COMMIT DELETE ROWS;"
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_reg (node text, t0 bigint, t1 bigint)"
			     " ON COMMIT DELETE ROWS",
			     err)) ||
	    (rc = gl_db_copy_in(c, "COPY gl_stage_ng FROM STDIN", gtext, glen, err)) ||
	    (rc = gl_db_copy_in(c, "COPY gl_stage_ns FROM STDIN", sb.p ? sb.p : "", sb.len, err)))
		goto out;
	if (nev && (rc = gl_db_copy_in(c, "COPY gl_stage_ev FROM STDIN", eb.p, eb.len, err)))
		goto out;
	if (nresv && (rc = gl_db_copy_in(c, "COPY gl_stage_rv FROM STDIN", rb.p, rb.len, err)))
		goto out;
	if (nreg && (rc = gl_db_copy_in(c, "COPY gl_stage_reg FROM STDIN", cb.p, cb.len, err)))
		goto out;
	/* the merge joins the staged snapshot with the spans: the planner
	 * needs the staging tables' size to hash rather than loop. A first
	 * snapshot has no spans of its own to join with. */
	if (lastp && (rc = gl_db_exec(c, "ANALYZE gl_stage_ng; ANALYZE gl_stage_ns", err)))
		goto out;

	{
		const char *const p4[] = {cid, o->source, at, lastp};
		int64_t dummy = 0;
		/* GPU spans: a span whose node, model, count or partition changed
		 * (or whose node is gone) ends now; one opened at this very instant
		 * by an earlier snapshot of the same time is dropped instead */
		if ((rc = q(c,
			    "DELETE FROM node_gpu_spans s WHERE s.cluster_id = $1 AND s.source = $2 AND s.valid_to IS NULL"
			    " AND s.valid_from >= to_timestamp($3::bigint) AND (s.node, s.gpu_model, s.gpus, s.mig_instances,"
			    " coalesce(s.partition, '')) NOT IN (SELECT g.node, g.gpu_model, g.gpus, g.mig,"
			    " coalesce(g.partition, '') FROM gl_stage_ng g)",
			    3, p4, &out->gpu_spans_closed, err)) ||
		    (rc = q(c,
			    "UPDATE node_gpu_spans s SET valid_to = to_timestamp($3::bigint)"
			    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.valid_to IS NULL"
			    /* NOT IN over the staged rows is a hashed subplan whatever the
			     * planner believes about the spans (often stale: just filled) */
			    " AND (s.node, s.gpu_model, s.gpus, s.mig_instances, coalesce(s.partition, '')) NOT IN ("
			    " SELECT g.node, g.gpu_model, g.gpus, g.mig, coalesce(g.partition, '') FROM gl_stage_ng g)",
			    3, p4, &out->gpu_spans_closed, err)) ||
		    /* a node seen before starts its new span now; a new node at its
		     * registration/creation, but not before the previous snapshot */
		    (rc = q(c,
			    "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, mig_instances, partition,"
			    " partitions, source, memory_mib, valid_from)"
			    " SELECT $1, g.node, g.gpu_model, g.gpus, g.mig, g.partition, g.partitions, $2, g.mem,"
			    " CASE WHEN EXISTS (SELECT 1 FROM node_gpu_spans p WHERE p.cluster_id = $1 AND p.node = g.node"
			    "   AND p.source = $2) THEN to_timestamp($3::bigint)"
			    " ELSE greatest(to_timestamp(least(g.since, $3::bigint)), coalesce(to_timestamp($4::bigint),"
			    "   '-infinity')) END"
			    " FROM gl_stage_ng g WHERE NOT EXISTS (SELECT 1 FROM node_gpu_spans s WHERE s.cluster_id = $1"
			    " AND s.node = g.node AND s.gpu_model = g.gpu_model AND s.source = $2 AND s.valid_to IS NULL)",
			    4, p4, &out->gpu_spans_opened, err)) ||
		    /* memory is an attribute of the open span, not its identity;
		     * spans opened just now have it already */
		    (out->gpu_spans_opened < (int64_t)gpu_rows &&
		     (rc = q(c,
			    "UPDATE node_gpu_spans s SET memory_mib = g.mem FROM gl_stage_ng g"
			    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.valid_to IS NULL AND s.node = g.node"
			    " AND s.gpu_model = g.gpu_model AND s.memory_mib IS DISTINCT FROM g.mem",
			    2, p4, &dummy, err))))
			goto out;
		/* state spans: a changed state starts at its evidence when that
		 * falls after the previous snapshot (and the node's last span);
		 * without evidence at this snapshot; a node never seen before at
		 * its presence (registration, creation) */
		if ((rc = q(c,
			    "UPDATE gl_stage_ns t SET last = p.last FROM (SELECT s.node,"
			    " extract(epoch FROM max(coalesce(s.valid_to, s.valid_from)))::bigint AS last"
			    " FROM node_state_spans s WHERE s.cluster_id = $1 AND s.source = $2 AND s.ref = ''"
			    " GROUP BY s.node) p WHERE p.node = t.node",
			    2, p4, &dummy, err)) ||
		    (rc = q(c,
			    "UPDATE gl_stage_ns t SET since = CASE"
			    " WHEN t.last IS NULL THEN greatest(least(coalesce(t.since, t.presence), $3::bigint),"
			    "  coalesce($4::bigint, -9223372036854775807))"
			    " WHEN t.since IS NOT NULL AND t.since > coalesce($4::bigint, -9223372036854775807)"
			    "  AND t.since >= t.last THEN t.since ELSE $3::bigint END"
			    " WHERE NOT EXISTS (SELECT 1 FROM node_state_spans s WHERE s.cluster_id = $1"
			    "  AND s.source = $2 AND s.node = t.node AND s.ref = '' AND s.valid_to IS NULL AND s.state = t.state)",
			    4, p4, &dummy, err)) ||
		    (rc = q(c,
			    "DELETE FROM node_state_spans s USING gl_stage_ns t WHERE s.cluster_id = $1 AND s.source = $2"
			    " AND s.ref = '' AND s.valid_to IS NULL AND s.node = t.node AND s.state <> t.state"
			    " AND s.valid_from >= to_timestamp(t.since)",
			    2, p4, &out->state_spans_closed, err)) ||
		    (rc = q(c,
			    "UPDATE node_state_spans s SET valid_to = to_timestamp(t.since) FROM gl_stage_ns t"
			    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.ref = '' AND s.valid_to IS NULL"
			    " AND s.node = t.node AND s.state <> t.state",
			    2, p4, &out->state_spans_closed, err)) ||
		    (rc = q(c,
			    "UPDATE node_state_spans s SET valid_to = greatest(s.valid_from, to_timestamp($3::bigint))"
			    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.ref = '' AND s.valid_to IS NULL"
			    " AND s.node NOT IN (SELECT t.node FROM gl_stage_ns t)",
			    3, p4, &out->state_spans_closed, err)) ||
		    /* same state: keep the span, refresh what the sample says about it */
		    (rc = q(c,
			    "UPDATE node_state_spans s SET raw_state = t.raw, unknown_flags = t.unknown, reason = t.reason,"
			    " reason_user = t.ruser, alloc_gpus = t.alloc FROM gl_stage_ns t"
			    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.ref = '' AND s.valid_to IS NULL"
			    " AND s.node = t.node AND s.state = t.state AND (s.raw_state, s.unknown_flags, s.reason,"
			    " s.reason_user, s.alloc_gpus) IS DISTINCT FROM (t.raw, t.unknown, t.reason, t.ruser, t.alloc)",
			    2, p4, &dummy, err)) ||
		    (rc = q(c,
			    "INSERT INTO node_state_spans (cluster_id, node, source, state, valid_from, raw_state,"
			    " unknown_flags, reason, reason_user, alloc_gpus)"
			    " SELECT $1, t.node, $2, t.state, to_timestamp(t.since), t.raw, t.unknown, t.reason, t.ruser,"
			    " t.alloc FROM gl_stage_ns t WHERE NOT EXISTS (SELECT 1 FROM node_state_spans s"
			    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.ref = '' AND s.node = t.node"
			    " AND s.valid_to IS NULL)",
			    2, p4, &out->state_spans_opened, err)))
			goto out;
		/* Slurm events are history: upsert by (node, start) */
		if (nev && (rc = q(c,
				   "INSERT INTO node_state_spans (cluster_id, node, source, state, valid_from, valid_to,"
				   " raw_state, reason, reason_user)"
				   " SELECT DISTINCT ON (e.node, e.t0) $1, e.node, 'slurm_event', e.state, to_timestamp(e.t0),"
				   " to_timestamp(e.t1), e.raw, e.reason, e.ruser FROM gl_stage_ev e ORDER BY e.node, e.t0"
				   " ON CONFLICT (cluster_id, node, source, ref, valid_from) DO UPDATE SET"
				   " state = EXCLUDED.state, valid_to = EXCLUDED.valid_to, raw_state = EXCLUDED.raw_state,"
				   " reason = EXCLUDED.reason, reason_user = EXCLUDED.reason_user",
				   1, p4, &out->events, err)))
			goto out;
		if (nresv && (rc = q(c,
				     "INSERT INTO node_state_spans (cluster_id, node, source, ref, state, gpu_model, gpus,"
				     " valid_from, valid_to, raw_state, reason)"
				     " SELECT DISTINCT ON (r.node, r.ref, r.t0) $1, r.node, 'slurm_resv', r.ref, r.state,"
				     " r.gpu_model, r.gpus, to_timestamp(r.t0), to_timestamp(r.t1), r.flags, r.tres"
				     " FROM gl_stage_rv r ORDER BY r.node, r.ref, r.t0"
				     " ON CONFLICT (cluster_id, node, source, ref, valid_from) DO UPDATE SET"
				     " state = EXCLUDED.state, gpu_model = EXCLUDED.gpu_model, gpus = EXCLUDED.gpus,"
				     " valid_to = EXCLUDED.valid_to, raw_state = EXCLUDED.raw_state, reason = EXCLUDED.reason",
				     1, p4, &out->reservations, err)))
			goto out;
		/* a node first seen before the event history arrived was there
		 * since the registration that lists it (slurmdbd counts from it) */
		if (nreg && ((rc = q(c,
				     "UPDATE node_gpu_spans s SET valid_from = to_timestamp(r.t0) FROM ("
				     " SELECT node, min(t0) AS t0, max(coalesce(t1, 9223372036854775807)) AS t1"
				     " FROM gl_stage_reg GROUP BY node) r"
				     " WHERE s.cluster_id = $1 AND s.source = $2 AND s.node = r.node"
				     " AND to_timestamp(r.t0) < s.valid_from AND r.t1 > extract(epoch FROM s.valid_from)"
				     " AND NOT EXISTS (SELECT 1 FROM node_gpu_spans p WHERE p.cluster_id = $1 AND p.source = $2"
				     "  AND p.node = s.node AND p.valid_from < s.valid_from)",
				     2, p4, &dummy, err)) ||
			     (rc = q(c,
				     "UPDATE node_state_spans s SET valid_from = g.valid_from FROM ("
				     " SELECT node, min(valid_from) AS valid_from FROM node_gpu_spans WHERE cluster_id = $1"
				     " AND source = $2 GROUP BY node) g"
				     " WHERE s.cluster_id = $1 AND s.source = $2 AND s.ref = '' AND s.state = 'up'"
				     " AND s.node = g.node AND g.valid_from < s.valid_from"
				     " AND NOT EXISTS (SELECT 1 FROM node_state_spans p WHERE p.cluster_id = $1 AND p.source = $2"
				     "  AND p.ref = '' AND p.node = s.node AND p.valid_from < s.valid_from)",
				     2, p4, &dummy, err))))
			goto out;
		if (o->events_complete &&
		    (rc = q(c,
			    "INSERT INTO sched_coverage (cluster_id, events_until) VALUES ($1, to_timestamp($2::bigint))"
			    " ON CONFLICT (cluster_id) DO UPDATE SET events_until ="
			    " greatest(sched_coverage.events_until, EXCLUDED.events_until)",
			    2, (const char *[]){cid, at}, &dummy, err)))
			goto out;
		{
			char nn[24], ng[24], np[24];
			snprintf(nn, sizeof nn, "%lld", (long long)out->gpu_nodes);
			snprintf(ng, sizeof ng, "%lld", (long long)out->gpus);
			snprintf(np, sizeof np, "%zu", s->nproblems + s->problems_dropped);
			if ((rc = q(c,
				    "INSERT INTO sched_snapshots (cluster_id, source, taken_at, nodes, gpus, problems)"
				    " VALUES ($1, $2, to_timestamp($3::bigint), $4, $5, $6)"
				    " ON CONFLICT (cluster_id, source, taken_at) DO UPDATE SET nodes = EXCLUDED.nodes,"
				    " gpus = EXCLUDED.gpus, problems = EXCLUDED.problems, applied_at = now()",
				    6, (const char *[]){cid, o->source, at, nn, ng, np}, &dummy, err)))
				goto out;
		}
	}
	st.inserted = out->gpu_spans_opened + out->state_spans_opened;
	st.updated = out->gpu_spans_closed + out->state_spans_closed + out->events + out->reservations;
	if ((rc = gl_ingest_run_update(c, run_id, &st, s->skipped ? "partial" : "ok", NULL, err)) ||
	    (rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	in_txn = 0;
out:
	PQclear(r);
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	if (rc && run_id) {
		struct gl_err e2 = {0};
		/* one transaction per snapshot: none of it was written */
		st.inserted = st.updated = st.unchanged = 0;
		if (gl_ingest_run_fail(c, run_id, &st, err->msg,
				       "none of this snapshot was written: the next run reads the nodes again", &e2))
			gl_log(GL_LOG_WARN, "%s: could not record the failed run: %s", o->run_source, e2.msg);
	}
	gl_ingest_run_audit(c, run_id);
	gl_ingest_stats_fini(&st);
	gl_strbuf_fini(&sb);
	gl_strbuf_fini(&eb);
	gl_strbuf_fini(&rb);
	gl_strbuf_fini(&cb);
	free(gtext);
	free(since);
	return rc;
}
