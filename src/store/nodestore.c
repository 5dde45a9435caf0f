/* The scheduler node snapshot's queries (see include/gl/nodestore.h). The
 * merge is set-based: the snapshot is in the staging tables, a handful of
 * statements close the spans that changed, open the new ones and upsert
 * the Slurm events and reservations. */
#include "gl/nodestore.h"
#include "db_int.h"
#include "gl/pgrow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a statement; *affected += the rows it touched */
static int q(PGconn *c, const char *sql, int n, const char *const *p, int64_t *affected, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = gl_db_query(c, sql, n, p, &r, err);
	if (!rc && affected)
		*affected += atoll(PQcmdTuples(r));
	PQclear(r);
	return rc;
}

/* max(taken_at): GL_TIME_NONE before the first snapshot */
struct last_row {
	int64_t last_s;
};
static const struct gl_pgrow_field last_fields[] = {GL_PGROW(struct last_row, TIME, last_s)};

int gl_nodestore_last_snapshot(struct gl_store *store, int cluster_id, const char *source, int64_t *last_s,
			       struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16], *text = NULL;
	struct last_row *rows = NULL;
	void *v = NULL;
	size_t n = 0;
	int rc;
	*last_s = GL_TIME_NONE;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	rc = gl_pgrow_query(c,
			    "SELECT extract(epoch FROM max(taken_at))::bigint AS last_s FROM sched_snapshots"
			    " WHERE cluster_id = $1 AND source = $2",
			    2, (const char *[]){cid, source}, last_fields, GL_ARRAY_LEN(last_fields), sizeof *rows, &v, &n,
			    &text, err);
	rows = v;
	if (!rc && n)
		*last_s = rows[0].last_s;
	free(rows);
	free(text);
	return rc;
}

/* The staging tables, loaded. analyze: the merge joins the staged snapshot
 * with the spans, so the planner needs the staging tables' size to hash
 * rather than loop; a first snapshot has no spans of its own to join with. */
static int stage(PGconn *c, const struct gl_nodestore_stage *st, int analyze, struct gl_err *err)
{
	int rc;
	if ((rc = gl_db_exec(c,
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_ng (node text, gpu_model text, gpus int, mig int,"
			     " partition text, partitions text[], since bigint, mem bigint, reps int) ON COMMIT DELETE ROWS;"
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_ns (node text, state text, since bigint, presence bigint, last bigint, raw text,"
			     " unknown text, reason text, ruser text, alloc int) ON COMMIT DELETE ROWS;"
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_ev (node text, state text, t0 bigint, t1 bigint,"
			     " raw text, reason text, ruser text) ON COMMIT DELETE ROWS;"
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_rv (node text, ref text, state text, gpu_model text,"
			     " gpus int, t0 bigint, t1 bigint, flags text, tres text) ON COMMIT DELETE ROWS;"
			     "CREATE TEMP TABLE IF NOT EXISTS gl_stage_reg (node text, t0 bigint, t1 bigint)"
			     " ON COMMIT DELETE ROWS",
			     err)) ||
	    (rc = gl_db_copy_in(c, "COPY gl_stage_ng FROM STDIN", st->gpus, st->gpus_len, err)) ||
	    (rc = gl_db_copy_in(c, "COPY gl_stage_ns FROM STDIN", st->states ? st->states : "", st->states_len, err)))
		return rc;
	if (st->nevents && (rc = gl_db_copy_in(c, "COPY gl_stage_ev FROM STDIN", st->events, st->events_len, err)))
		return rc;
	if (st->nresvs && (rc = gl_db_copy_in(c, "COPY gl_stage_rv FROM STDIN", st->resvs, st->resvs_len, err)))
		return rc;
	if (st->nregs && (rc = gl_db_copy_in(c, "COPY gl_stage_reg FROM STDIN", st->regs, st->regs_len, err)))
		return rc;
	if (analyze && (rc = gl_db_exec(c, "ANALYZE gl_stage_ng; ANALYZE gl_stage_ns", err)))
		return rc;
	return 0;
}

/* GPU spans (p4: cluster, source, at, last) */
static int merge_gpus(PGconn *c, const struct gl_nodestore_stage *st, const char *const *p4, struct gl_nodestore_counts *o,
		      struct gl_err *err)
{
	int64_t dummy = 0;
	int rc;
	/* GPU spans: a span whose node, model, count or partition changed
	 * (or whose node is gone) ends now; one opened at this very instant
	 * by an earlier snapshot of the same time is dropped instead */
	if ((rc = q(c,
		    "DELETE FROM node_gpu_spans s WHERE s.cluster_id = $1 AND s.source = $2 AND s.valid_to IS NULL"
		    " AND s.valid_from >= to_timestamp($3::bigint) AND (s.node, s.gpu_model, s.gpus, s.mig_instances,"
		    " coalesce(s.partition, '')) NOT IN (SELECT g.node, g.gpu_model, g.gpus, g.mig,"
		    " coalesce(g.partition, '') FROM gl_stage_ng g)",
		    3, p4, &o->gpu_spans_closed, err)) ||
	    (rc = q(c,
		    "UPDATE node_gpu_spans s SET valid_to = to_timestamp($3::bigint)"
		    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.valid_to IS NULL"
		    /* NOT IN over the staged rows is a hashed subplan whatever the
		     * planner believes about the spans (often stale: just filled) */
		    " AND (s.node, s.gpu_model, s.gpus, s.mig_instances, coalesce(s.partition, '')) NOT IN ("
		    " SELECT g.node, g.gpu_model, g.gpus, g.mig, coalesce(g.partition, '') FROM gl_stage_ng g)",
		    3, p4, &o->gpu_spans_closed, err)) ||
	    /* a node seen before starts its new span now; a new node at its
	     * registration/creation, but not before the previous snapshot */
	    (rc = q(c,
		    "INSERT INTO node_gpu_spans (cluster_id, node, gpu_model, gpus, mig_instances, partition,"
		    " partitions, source, memory_mib, replicas, valid_from)"
		    " SELECT $1, g.node, g.gpu_model, g.gpus, g.mig, g.partition, g.partitions, $2, g.mem, g.reps,"
		    " CASE WHEN EXISTS (SELECT 1 FROM node_gpu_spans p WHERE p.cluster_id = $1 AND p.node = g.node"
		    "   AND p.source = $2) THEN to_timestamp($3::bigint)"
		    " ELSE greatest(to_timestamp(least(g.since, $3::bigint)), coalesce(to_timestamp($4::bigint),"
		    "   '-infinity')) END"
		    " FROM gl_stage_ng g WHERE NOT EXISTS (SELECT 1 FROM node_gpu_spans s WHERE s.cluster_id = $1"
		    " AND s.node = g.node AND s.gpu_model = g.gpu_model AND s.source = $2 AND s.valid_to IS NULL)",
		    4, p4, &o->gpu_spans_opened, err)) ||
	    /* memory and replicas are attributes of the open span, not its
	     * identity; spans opened just now have them already */
	    (o->gpu_spans_opened < (int64_t)st->gpu_rows &&
	     (rc = q(c,
		    "UPDATE node_gpu_spans s SET memory_mib = g.mem, replicas = g.reps FROM gl_stage_ng g"
		    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.valid_to IS NULL AND s.node = g.node"
		    " AND s.gpu_model = g.gpu_model AND (s.memory_mib, s.replicas) IS DISTINCT FROM (g.mem, g.reps)",
		    2, p4, &dummy, err))))
		return rc;
	return 0;
}

static int merge_states(PGconn *c, const char *const *p4, struct gl_nodestore_counts *o, struct gl_err *err)
{
	int64_t dummy = 0;
	int rc;
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
		    2, p4, &o->state_spans_closed, err)) ||
	    (rc = q(c,
		    "UPDATE node_state_spans s SET valid_to = to_timestamp(t.since) FROM gl_stage_ns t"
		    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.ref = '' AND s.valid_to IS NULL"
		    " AND s.node = t.node AND s.state <> t.state",
		    2, p4, &o->state_spans_closed, err)) ||
	    (rc = q(c,
		    "UPDATE node_state_spans s SET valid_to = greatest(s.valid_from, to_timestamp($3::bigint))"
		    " WHERE s.cluster_id = $1 AND s.source = $2 AND s.ref = '' AND s.valid_to IS NULL"
		    " AND s.node NOT IN (SELECT t.node FROM gl_stage_ns t)",
		    3, p4, &o->state_spans_closed, err)) ||
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
		    2, p4, &o->state_spans_opened, err)))
		return rc;
	return 0;
}

static int merge_history(PGconn *c, const struct gl_nodestore_stage *st, const char *const *p4,
			 struct gl_nodestore_counts *o, struct gl_err *err)
{
	int64_t dummy = 0;
	int rc;
	/* Slurm events are history: upsert by (node, start) */
	if (st->nevents && (rc = q(c,
			   "INSERT INTO node_state_spans (cluster_id, node, source, state, valid_from, valid_to,"
			   " raw_state, reason, reason_user)"
			   " SELECT DISTINCT ON (e.node, e.t0) $1, e.node, 'slurm_event', e.state, to_timestamp(e.t0),"
			   " to_timestamp(e.t1), e.raw, e.reason, e.ruser FROM gl_stage_ev e ORDER BY e.node, e.t0"
			   " ON CONFLICT (cluster_id, node, source, ref, valid_from) DO UPDATE SET"
			   " state = EXCLUDED.state, valid_to = EXCLUDED.valid_to, raw_state = EXCLUDED.raw_state,"
			   " reason = EXCLUDED.reason, reason_user = EXCLUDED.reason_user",
			   1, p4, &o->events, err)))
		return rc;
	if (st->nresvs && (rc = q(c,
			     "INSERT INTO node_state_spans (cluster_id, node, source, ref, state, gpu_model, gpus,"
			     " valid_from, valid_to, raw_state, reason)"
			     " SELECT DISTINCT ON (r.node, r.ref, r.t0) $1, r.node, 'slurm_resv', r.ref, r.state,"
			     " r.gpu_model, r.gpus, to_timestamp(r.t0), to_timestamp(r.t1), r.flags, r.tres"
			     " FROM gl_stage_rv r ORDER BY r.node, r.ref, r.t0"
			     " ON CONFLICT (cluster_id, node, source, ref, valid_from) DO UPDATE SET"
			     " state = EXCLUDED.state, gpu_model = EXCLUDED.gpu_model, gpus = EXCLUDED.gpus,"
			     " valid_to = EXCLUDED.valid_to, raw_state = EXCLUDED.raw_state, reason = EXCLUDED.reason",
			     1, p4, &o->reservations, err)))
		return rc;
	/* a node first seen before the event history arrived was there
	 * since the registration that lists it (slurmdbd counts from it) */
	if (st->nregs && ((rc = q(c,
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
		return rc;
	return 0;
}

int gl_nodestore_merge(struct gl_store *store, const struct gl_nodestore_stage *st, int cluster_id, const char *source,
		       int64_t at_s, int64_t last_s, struct gl_nodestore_counts *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16], at[24], last[24];
	const char *const p4[] = {cid, source, at, last_s == GL_TIME_NONE ? NULL : last};
	int rc;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	snprintf(at, sizeof at, "%lld", (long long)at_s);
	snprintf(last, sizeof last, "%lld", (long long)last_s);
	if ((rc = stage(c, st, last_s != GL_TIME_NONE, err)) || (rc = merge_gpus(c, st, p4, out, err)) ||
	    (rc = merge_states(c, p4, out, err)))
		return rc;
	return merge_history(c, st, p4, out, err);
}

int gl_nodestore_coverage(struct gl_store *store, int cluster_id, int64_t at_s, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16], at[24];
	snprintf(cid, sizeof cid, "%d", cluster_id);
	snprintf(at, sizeof at, "%lld", (long long)at_s);
	return q(c,
		 "INSERT INTO sched_coverage (cluster_id, events_until) VALUES ($1, to_timestamp($2::bigint))"
		 " ON CONFLICT (cluster_id) DO UPDATE SET events_until ="
		 " greatest(sched_coverage.events_until, EXCLUDED.events_until)",
		 2, (const char *[]){cid, at}, NULL, err);
}

int gl_nodestore_snapshot(struct gl_store *store, int cluster_id, const char *source, int64_t at_s, int64_t gpu_nodes,
			  int64_t gpus, int64_t problems, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16], at[24], nn[24], ng[24], np[24];
	snprintf(cid, sizeof cid, "%d", cluster_id);
	snprintf(at, sizeof at, "%lld", (long long)at_s);
	snprintf(nn, sizeof nn, "%lld", (long long)gpu_nodes);
	snprintf(ng, sizeof ng, "%lld", (long long)gpus);
	snprintf(np, sizeof np, "%lld", (long long)problems);
	return q(c,
		 "INSERT INTO sched_snapshots (cluster_id, source, taken_at, nodes, gpus, problems)"
		 " VALUES ($1, $2, to_timestamp($3::bigint), $4, $5, $6)"
		 " ON CONFLICT (cluster_id, source, taken_at) DO UPDATE SET nodes = EXCLUDED.nodes,"
		 " gpus = EXCLUDED.gpus, problems = EXCLUDED.problems, applied_at = now()",
		 6, (const char *[]){cid, source, at, nn, ng, np}, NULL, err);
}
