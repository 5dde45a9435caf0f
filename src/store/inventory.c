/* The fleet inventory as /v1/inventory and /metrics read it (see
 * include/gl/inventory.h). Conflicts are listed, never resolved: the
 * scheduler's count stays what capacity uses. */
#include "gl/inventory.h"
#include "db_int.h"
#include "gl/jobs.h"
#include "gl/pgrow.h"

#include <stdlib.h>
#include <string.h>

#define TS(x) "to_char(" x " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

/* Runs sql and decodes its rows into *rows (the text block into slot). */
static int fetch(struct gl_store *st, const char *sql, int np, const char *const *params,
		 const struct gl_pgrow_field *f, size_t nf, size_t size, void **rows, size_t *n, char **slot,
		 struct gl_err *err)
{
	free(*rows);
	free(*slot);
	return gl_pgrow_query(gl_db_conn(st), sql, np, params, f, nf, size, rows, n, slot, err);
}

#define CL(t, m) GL_PGROW(struct gl_inventory_cluster, t, m)
static const struct gl_pgrow_field cluster_fields[] = {
	CL(STR, name), CL(STR, kind), CL(I64, scheduler_nodes),
	GL_PGROW_N(struct gl_inventory_cluster, I64, scheduler_gpus, scheduler_gpus_null), CL(I64, exporter_gpus),
	CL(TIME, last_snapshot_s), CL(TIME, events_until_s),
};
#undef CL

int gl_inventory_clusters(struct gl_store *st, const char *cluster, struct gl_inventory *inv, struct gl_err *err)
{
	static const char sql[] =
		"SELECT cl.name, cl.kind,"
		" (SELECT count(DISTINCT node) FROM node_gpu_spans s WHERE s.cluster_id = cl.cluster_id"
		"   AND s.valid_to IS NULL) AS scheduler_nodes,"
		" (SELECT sum(gpus) FROM node_gpu_spans s WHERE s.cluster_id = cl.cluster_id AND s.valid_to IS NULL)"
		"  AS scheduler_gpus,"
		" (SELECT count(DISTINCT (gp.node_id, gp.uuid)) FROM gpus gp WHERE gp.cluster_id = cl.cluster_id"
		"   AND gp.absent_since IS NULL) AS exporter_gpus,"
		" (SELECT extract(epoch FROM max(taken_at))::bigint FROM sched_snapshots t WHERE t.cluster_id = cl.cluster_id)"
		"  AS last_snapshot_s,"
		" (SELECT extract(epoch FROM events_until)::bigint FROM sched_coverage v WHERE v.cluster_id = cl.cluster_id)"
		"  AS events_until_s"
		/* a cluster appears once data for it lands, not when a run that
		 * failed before writing any named it */
		" FROM clusters cl WHERE ($1::text IS NULL OR cl.name = $1) AND " GL_JOBS_CLUSTER_HAS_DATA_SQL("cl.cluster_id")
		" ORDER BY 1";
	void *rows = inv->clusters;
	int rc = fetch(st, sql, 1, (const char *[]){cluster}, cluster_fields, GL_ARRAY_LEN(cluster_fields),
		       sizeof *inv->clusters, &rows, &inv->n_clusters, &inv->text[0], err);
	inv->clusters = rows;
	return rc;
}

/* The nodes an inventory lists (a current GPU span, or a state span in
 * force at $2 or later), numbered n in the order they are listed; $1
 * narrows to a cluster. The three node queries share it, so n ties a span
 * or a state to its node. */
#define NODES_CTE                                                                                            \
	"WITH nd AS (SELECT cluster_id, node FROM node_gpu_spans WHERE valid_to IS NULL"                   \
	"  UNION SELECT cluster_id, node FROM node_state_spans"                                              \
	"  WHERE valid_to IS NULL OR valid_to > to_timestamp($2::bigint)),"                                  \
	" nn AS (SELECT nd.cluster_id, nd.node, cl.name AS cluster,"                                         \
	"  row_number() OVER (ORDER BY cl.name, nd.node) AS n"                                               \
	"  FROM nd JOIN clusters cl ON cl.cluster_id = nd.cluster_id WHERE $1::text IS NULL OR cl.name = $1)"

#define ND(t, m) GL_PGROW(struct gl_inventory_node, t, m)
static const struct gl_pgrow_field node_fields[] = {
	ND(I64, n), ND(STR, cluster), ND(STR, node), ND(STR, partitions), ND(STR, state),
	ND(TIME, last_seen_s), ND(TIME, state_since_s),
};
#undef ND

#define SP(t, m) GL_PGROW(struct gl_inventory_span, t, m)
static const struct gl_pgrow_field span_fields[] = {
	SP(I64, n), SP(STR, model), SP(I64, gpus), SP(I64, mig_instances),
	GL_PGROW_N(struct gl_inventory_span, I64, memory_mib, memory_mib_null), SP(STR, partition), SP(STR, source),
	SP(STR, since),
};
#undef SP

#define STS(t, m) GL_PGROW(struct gl_inventory_state, t, m)
#define STN(m) GL_PGROW_N(struct gl_inventory_state, I64, m, m##_null)
static const struct gl_pgrow_field state_fields[] = {
	STS(I64, n), STS(STR, state), STS(STR, source), STS(STR, reservation), STS(STR, since), STS(STR, until),
	STS(STR, raw_state), STS(STR, unknown_flags), STS(STR, reason), STS(STR, reason_user), STN(allocated_gpus),
	STN(reserved_gpus),
};
#undef STS
#undef STN

/* Points each node at its spans and states (all ordered by node). */
static void link_nodes(struct gl_inventory *inv)
{
	size_t s = 0, t = 0;
	for (size_t i = 0; i < inv->n_nodes; i++) {
		struct gl_inventory_node *nd = &inv->nodes[i];
		nd->spans = &inv->spans[s];
		while (s < inv->n_spans && inv->spans[s].n == nd->n)
			s++, nd->n_spans++;
		nd->states = &inv->states[t];
		while (t < inv->n_states && inv->states[t].n == nd->n)
			t++, nd->n_states++;
	}
}

int gl_inventory_nodes(struct gl_store *st, const char *cluster, int64_t at_s, struct gl_inventory *inv,
		       struct gl_err *err)
{
	static const char nodes_sql[] = NODES_CTE
		" SELECT nn.n, nn.cluster, nn.node,"
		" (SELECT array_to_string(s.partitions, ',') FROM node_gpu_spans s WHERE s.cluster_id = nn.cluster_id"
		"   AND s.node = nn.node AND s.valid_to IS NULL LIMIT 1) AS partitions,"
		" (SELECT n.state FROM node_state_spans n WHERE n.cluster_id = nn.cluster_id AND n.node = nn.node"
		"   AND n.valid_to IS NULL AND n.source IN ('scontrol', 'kube') ORDER BY n.valid_from DESC LIMIT 1) AS state,"
		/* the last snapshot that listed the node: a span still open was in
		 * its source's latest snapshot, a closed one in the last before it
		 * closed; apart from when its state began */
		" (SELECT extract(epoch FROM max(t.taken_at))::bigint FROM node_gpu_spans s JOIN sched_snapshots t"
		"   ON t.cluster_id = s.cluster_id AND t.source = s.source"
		"   AND t.taken_at >= s.valid_from AND (s.valid_to IS NULL OR t.taken_at < s.valid_to)"
		"   WHERE s.cluster_id = nn.cluster_id AND s.node = nn.node) AS last_seen_s,"
		" (SELECT extract(epoch FROM n.valid_from)::bigint FROM node_state_spans n WHERE n.cluster_id = nn.cluster_id"
		"   AND n.node = nn.node AND n.valid_to IS NULL AND n.source IN ('scontrol', 'kube')"
		"   ORDER BY n.valid_from DESC LIMIT 1) AS state_since_s"
		" FROM nn ORDER BY nn.n";
	static const char spans_sql[] = NODES_CTE
		" SELECT nn.n, s.gpu_model AS model, s.gpus, s.mig_instances, s.memory_mib, s.partition, s.source,"
		" " TS("s.valid_from") " AS since"
		" FROM nn JOIN node_gpu_spans s ON s.cluster_id = nn.cluster_id AND s.node = nn.node AND s.valid_to IS NULL"
		" ORDER BY nn.n, s.gpu_model";
	static const char states_sql[] = NODES_CTE
		" SELECT nn.n, n.state, n.source, nullif(n.ref, '') AS reservation, " TS("n.valid_from") " AS since,"
		" " TS("n.valid_to") " AS until, n.raw_state, n.unknown_flags, n.reason, n.reason_user,"
		" n.alloc_gpus AS allocated_gpus, n.gpus AS reserved_gpus"
		" FROM nn JOIN node_state_spans n ON n.cluster_id = nn.cluster_id AND n.node = nn.node"
		"  AND (n.valid_to IS NULL OR n.valid_to > to_timestamp($2::bigint))"
		" ORDER BY nn.n, n.valid_from";
	char at[24];
	const char *p[2] = {cluster, at};
	void *nodes = inv->nodes, *spans = inv->spans, *states = inv->states;
	int rc;

	snprintf(at, sizeof at, "%lld", (long long)at_s);
	if (!(rc = fetch(st, nodes_sql, 2, p, node_fields, GL_ARRAY_LEN(node_fields), sizeof *inv->nodes, &nodes,
			 &inv->n_nodes, &inv->text[1], err)))
		rc = fetch(st, spans_sql, 2, p, span_fields, GL_ARRAY_LEN(span_fields), sizeof *inv->spans, &spans,
			   &inv->n_spans, &inv->text[2], err);
	if (!rc)
		rc = fetch(st, states_sql, 2, p, state_fields, GL_ARRAY_LEN(state_fields), sizeof *inv->states,
			   &states, &inv->n_states, &inv->text[3], err);
	inv->nodes = nodes;
	inv->spans = spans;
	inv->states = states;
	if (!rc)
		link_nodes(inv);
	return rc;
}

#define CF(m) GL_PGROW_N(struct gl_inventory_conflict, I64, m, m##_null)
static const struct gl_pgrow_field conflict_fields[] = {
	GL_PGROW(struct gl_inventory_conflict, STR, cluster), GL_PGROW(struct gl_inventory_conflict, STR, node),
	GL_PGROW(struct gl_inventory_conflict, STR, scheduler_source),
	GL_PGROW(struct gl_inventory_conflict, STR, exporter_sources), CF(scheduler_gpus), CF(exporter_gpus),
};
#undef CF

int gl_inventory_conflicts(struct gl_store *st, const char *cluster, struct gl_inventory *inv, struct gl_err *err)
{
	static const char sql[] =
		"WITH sch AS (SELECT cluster_id, node, sum(gpus) AS g,"
		"  string_agg(DISTINCT source, ',' ORDER BY source) AS src FROM node_gpu_spans WHERE valid_to IS NULL"
		"  GROUP BY 1, 2),"
		/* a physical GPU once, whichever source (dcgm, AMD, nvidia-smi)
		 * reports it and however many MIG/partition rows it has; rows
		 * written before sql/048 are dcgm-exporter's */
		" exp AS (SELECT gp.cluster_id, nd.name AS node, count(DISTINCT gp.uuid) AS g,"
		"  string_agg(DISTINCT coalesce(gp.source, 'dcgm'), ',' ORDER BY coalesce(gp.source, 'dcgm')) AS src"
		"  FROM gpus gp JOIN nodes nd ON nd.node_id = gp.node_id WHERE gp.absent_since IS NULL GROUP BY 1, 2),"
		" both_c AS (SELECT DISTINCT sch.cluster_id FROM sch JOIN exp USING (cluster_id))"
		" SELECT cl.name AS cluster, coalesce(sch.node, exp.node) AS node,"
		" coalesce(sch.src, '') AS scheduler_source, coalesce(exp.src, '') AS exporter_sources,"
		" sch.g AS scheduler_gpus, exp.g AS exporter_gpus"
		" FROM sch FULL JOIN exp ON exp.cluster_id = sch.cluster_id AND exp.node = sch.node"
		" JOIN clusters cl ON cl.cluster_id = coalesce(sch.cluster_id, exp.cluster_id)"
		" WHERE coalesce(sch.cluster_id, exp.cluster_id) IN (SELECT cluster_id FROM both_c)"
		"  AND sch.g IS DISTINCT FROM exp.g AND ($1::text IS NULL OR cl.name = $1)"
		" ORDER BY 1, 2";
	void *rows = inv->conflicts;
	int rc = fetch(st, sql, 1, (const char *[]){cluster}, conflict_fields, GL_ARRAY_LEN(conflict_fields),
		       sizeof *inv->conflicts, &rows, &inv->n_conflicts, &inv->text[4], err);
	inv->conflicts = rows;
	return rc;
}

const char *gl_inventory_conflict_kind(const struct gl_inventory_conflict *c)
{
	return c->scheduler_gpus_null ? "unknown_to_scheduler" : c->exporter_gpus_null ? "unseen_by_exporter" : "gpu_count";
}

static const struct gl_pgrow_field model_fields[] = {
	GL_PGROW(struct gl_inventory_model, STR, name),
	GL_PGROW(struct gl_inventory_model, STR, model),
	GL_PGROW(struct gl_inventory_model, STR, via),
};

int gl_inventory_models(struct gl_store *st, struct gl_inventory *inv, struct gl_err *err)
{
	/* gpu_model_canon keeps every name lower case: an alias of the
	 * configuration, the name being an alias's model (canonical as it
	 * is), else the rule */
	static const char sql[] =
		"SELECT c.raw AS name, c.model, CASE WHEN EXISTS (SELECT 1 FROM gpu_model_aliases a WHERE a.match = c.raw)"
		" THEN 'alias' WHEN EXISTS (SELECT 1 FROM gpu_model_aliases a WHERE a.model = c.raw) THEN 'alias_model'"
		" WHEN gl_gpu_model_unplaced(c.raw) THEN 'as_written' ELSE 'rule' END AS via"
		" FROM gpu_model_canon c WHERE c.raw <> '' ORDER BY c.raw";
	void *rows = inv->models;
	int rc = fetch(st, sql, 0, NULL, model_fields, GL_ARRAY_LEN(model_fields), sizeof *inv->models, &rows,
		       &inv->n_models, &inv->text[5], err);
	inv->models = rows;
	return rc;
}

void gl_inventory_fini(struct gl_inventory *inv)
{
	free(inv->clusters);
	free(inv->nodes);
	free(inv->spans);
	free(inv->states);
	free(inv->conflicts);
	free(inv->models);
	for (size_t i = 0; i < GL_ARRAY_LEN(inv->text); i++)
		free(inv->text[i]);
	memset(inv, 0, sizeof *inv);
}

struct name_row {
	char *name;
};

int gl_inventory_cluster_names(struct gl_store *st, char ***names, size_t *n, struct gl_err *err)
{
	static const struct gl_pgrow_field f[] = {GL_PGROW(struct name_row, STR, name)};
	void *rows = NULL;
	char *text = NULL;
	int rc = fetch(st, "SELECT name FROM clusters ORDER BY length(name) DESC, name", 0, NULL, f, 1,
		       sizeof(struct name_row), &rows, n, &text, err);
	/* one allocation: the pointers, then the strings */
	size_t bytes = (*n + 1) * sizeof(char *), tl = 0;
	for (size_t i = 0; !rc && i < *n; i++)
		tl += strlen(((struct name_row *)rows)[i].name) + 1;
	*names = NULL;
	if (!rc) {
		char *p = gl_xmalloc(bytes + tl + 1);
		*names = (char **)(void *)p;
		p += bytes;
		for (size_t i = 0; i < *n; i++) {
			size_t l = strlen(((struct name_row *)rows)[i].name) + 1;
			memcpy(p, ((struct name_row *)rows)[i].name, l);
			(*names)[i] = p;
			p += l;
		}
		(*names)[*n] = NULL;
	}
	free(rows);
	free(text);
	return rc;
}
