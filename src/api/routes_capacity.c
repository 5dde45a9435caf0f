/* GET /v1/capacity and GET /v1/inventory (issue 9; the capacity side of
 * issue 6). docs/capacity.md describes the fields. */
#include "gl/apijson.h"
#include "gl/capacity.h"
#include "gl/csv.h"
#include "gl/db.h"
#include "gl/jobs.h"
#include "gl/routes.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 2000

/* sreport prints times without a zone and the last second of the window */
static void sreport_time(int64_t t, char *buf, size_t n)
{
	gl_time_format(t, buf, n);
	buf[strcspn(buf, "Z")] = '\0';
}

static const char *key_name(enum gl_cap_aggregate agg)
{
	return agg == GL_CAP_AGG_PARTITION ? "partition" : agg == GL_CAP_AGG_MODEL ? "gpu_model" : NULL;
}

static void sum_into(struct gl_cap_row *t, const struct gl_cap_row *r)
{
	t->raw_reported_gpu_seconds += r->raw_reported_gpu_seconds;
	t->raw_allocated_gpu_milliseconds += r->raw_allocated_gpu_milliseconds;
	t->raw_down_gpu_seconds += r->raw_down_gpu_seconds;
	t->raw_planned_down_gpu_seconds += r->raw_planned_down_gpu_seconds;
	t->raw_reserved_gpu_seconds += r->raw_reserved_gpu_seconds;
	t->raw_drained_alloc_gpu_milliseconds += r->raw_drained_alloc_gpu_milliseconds;
	t->drained_allocated_gpu_seconds += r->drained_allocated_gpu_seconds;
	t->reported_gpu_seconds += r->reported_gpu_seconds;
	t->allocated_gpu_seconds += r->allocated_gpu_seconds;
	t->down_gpu_seconds += r->down_gpu_seconds;
	t->planned_down_gpu_seconds += r->planned_down_gpu_seconds;
	t->reserved_gpu_seconds += r->reserved_gpu_seconds;
	t->idle_gpu_seconds += r->idle_gpu_seconds;
	t->over_gpu_seconds += r->over_gpu_seconds;
}

static void row_fields(cJSON *o, const struct gl_cap_row *r)
{
	double sat = gl_capacity_saturation(r);
	cJSON_AddNumberToObject(o, "reported_gpu_seconds", (double)r->reported_gpu_seconds);
	cJSON_AddNumberToObject(o, "allocated_gpu_seconds", (double)r->allocated_gpu_seconds);
	cJSON_AddNumberToObject(o, "down_gpu_seconds", (double)r->down_gpu_seconds);
	cJSON_AddNumberToObject(o, "planned_down_gpu_seconds", (double)r->planned_down_gpu_seconds);
	cJSON_AddNumberToObject(o, "reserved_gpu_seconds", (double)r->reserved_gpu_seconds);
	cJSON_AddNumberToObject(o, "idle_gpu_seconds", (double)r->idle_gpu_seconds);
	cJSON_AddNumberToObject(o, "unavailable_gpu_seconds", (double)(r->down_gpu_seconds + r->planned_down_gpu_seconds));
	cJSON_AddNumberToObject(o, "over_gpu_seconds", (double)r->over_gpu_seconds);
	cJSON_AddNumberToObject(o, "drained_allocated_gpu_seconds", (double)r->drained_allocated_gpu_seconds);
	if (sat < 0)
		cJSON_AddNullToObject(o, "saturation");
	else
		cJSON_AddNumberToObject(o, "saturation", sat);
}

/* sreport -P cluster Utilization, one block per step, GPU TRES only:
 * Allocated includes non-maintenance reservations, as the rollup books them. */
static void put_sreport(struct gl_strbuf *o, const struct gl_window *steps, size_t nsteps, const struct gl_cap_row *rows,
			size_t n)
{
	size_t i = 0;
	for (size_t s = 0; s < nsteps; s++) {
		char a[32], b[32];
		sreport_time(steps[s].start_s, a, sizeof a);
		sreport_time(steps[s].end_s - 1, b, sizeof b);
		gl_strbuf_puts(o, "--------------------------------------------------------------------------------\n");
		gl_strbuf_printf(o, "Cluster Utilization %s - %s\nUsage reported in TRES Seconds\n", a, b);
		gl_strbuf_puts(o, "--------------------------------------------------------------------------------\n");
		gl_strbuf_puts(o, "Cluster|TRES Name|Allocated|Down|PLND Down|Idle|Planned|Reported\n");
		while (i < n && rows[i].step == s) {
			size_t j = i;
			struct gl_cap_row tot;
			memset(&tot, 0, sizeof tot);
			while (j < n && rows[j].step == s && !strcmp(rows[j].cluster, rows[i].cluster)) {
				tot.raw_reported_gpu_seconds += rows[j].raw_reported_gpu_seconds;
				tot.raw_allocated_gpu_milliseconds += rows[j].raw_allocated_gpu_milliseconds;
				tot.raw_down_gpu_seconds += rows[j].raw_down_gpu_seconds;
				tot.raw_planned_down_gpu_seconds += rows[j].raw_planned_down_gpu_seconds;
				tot.raw_reserved_gpu_seconds += rows[j].raw_reserved_gpu_seconds;
				j++;
			}
			/* the total is settled on its own, as sreport settles each TRES */
			gl_capacity_settle(&tot);
			gl_strbuf_printf(o, "%s|gres/gpu|%lld|%lld|%lld|%lld|0|%lld\n", rows[i].cluster,
					 (long long)(tot.allocated_gpu_seconds + tot.reserved_gpu_seconds),
					 (long long)tot.down_gpu_seconds, (long long)tot.planned_down_gpu_seconds,
					 (long long)tot.idle_gpu_seconds, (long long)tot.reported_gpu_seconds);
			for (size_t k = i; k < j; k++)
				if (rows[k].key[0])
					gl_strbuf_printf(o, "%s|gres/gpu:%s|%lld|%lld|%lld|%lld|0|%lld\n", rows[k].cluster,
							 rows[k].key,
							 (long long)(rows[k].allocated_gpu_seconds + rows[k].reserved_gpu_seconds),
							 (long long)rows[k].down_gpu_seconds,
							 (long long)rows[k].planned_down_gpu_seconds,
							 (long long)rows[k].idle_gpu_seconds,
							 (long long)rows[k].reported_gpu_seconds);
			i = j;
		}
	}
}

int gl_route_capacity(struct gl_req *req, struct gl_resp *resp)
{
	const char *step_s = gl_req_param(req, "step"), *agg_s = gl_req_param(req, "aggregate"),
		   *format = gl_req_param(req, "format"), *cluster = gl_req_param(req, "cluster");
	struct gl_err err = {0};
	struct gl_window w, *steps = NULL, *qsteps = NULL;
	enum gl_step step = GL_STEP_NONE;
	enum gl_cap_aggregate agg = GL_CAP_AGG_CLUSTER;
	struct gl_cap_row *rows = NULL, tot;
	size_t nsteps = 0, nrows = 0;
	PGconn *c;
	int rc = 0;

	/* the shared parser also enforces api.max_window_days, as on every route */
	if ((rc = gl_apijson_window(req, resp, "24h", &w)))
		return rc;
	if (step_s && gl_step_parse(step_s, &step, &err))
		return gl_resp_error(resp, GL_EINVAL, "step", "step: %s", err.msg);
	if (agg_s) {
		if (!strcmp(agg_s, "cluster"))
			agg = GL_CAP_AGG_CLUSTER;
		else if (!strcmp(agg_s, "partition"))
			agg = GL_CAP_AGG_PARTITION;
		else if (!strcmp(agg_s, "gpu_model"))
			agg = GL_CAP_AGG_MODEL;
		else
			return gl_resp_error(resp, GL_EINVAL, "aggregate",
					     "aggregate: expected cluster, partition or gpu_model, got '%s'", agg_s);
	}
	if (format && strcmp(format, "json") && strcmp(format, "csv") && strcmp(format, "sreport"))
		return gl_resp_error(resp, GL_EINVAL, "format", "format: expected json, csv or sreport, got '%s'", format);
	if (format && !strcmp(format, "sreport"))
		agg = GL_CAP_AGG_MODEL; /* one row per GPU TRES, the total settled separately */
	steps = gl_xcalloc(MAX_STEPS, sizeof *steps);
	if (gl_window_split(&w, step, steps, MAX_STEPS, &nsteps, &err)) {
		rc = gl_resp_error(resp, GL_EINVAL, "step", "step: %s", err.msg);
		goto out;
	}
	/* Steps are cut at now before the query: seconds that have not
	 * happened are neither reported nor idle (chargeback and /v1/idle stop
	 * there too; a month asked mid-month used to report its future as
	 * idle). format=sreport cuts at the end of now's hour instead, because
	 * slurmdbd rolls an unfinished hour up to its end. Steps keep their
	 * bounds in the answer. */
	qsteps = gl_xcalloc(nsteps ? nsteps : 1, sizeof *qsteps);
	{
		int64_t cut = format && !strcmp(format, "sreport") ? (req->now_s / 3600 + 1) * 3600 : req->now_s;
		for (size_t i = 0; i < nsteps; i++) {
			qsteps[i] = steps[i];
			if (qsteps[i].start_s > cut)
				qsteps[i].start_s = cut;
			if (qsteps[i].end_s > cut)
				qsteps[i].end_s = cut;
		}
	}
	if ((rc = gl_req_db(req, &c, &err)) ||
	    (rc = gl_capacity_query(c, qsteps, nsteps, agg, cluster, req->now_s, &rows, &nrows, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
		goto out;
	}
	for (size_t i = 0; i < nrows; i++) {
		rows[i].start_s = steps[rows[i].step].start_s;
		rows[i].end_s = steps[rows[i].step].end_s;
	}
	memset(&tot, 0, sizeof tot);
	for (size_t i = 0; i < nrows; i++)
		sum_into(&tot, &rows[i]);
	if (format && !strcmp(format, "sreport")) {
		put_sreport(&resp->body, steps, nsteps, rows, nrows);
		resp->content_type = "text/plain; charset=utf-8";
	} else if (format && !strcmp(format, "csv")) {
		struct gl_strbuf *o = &resp->body;
		static const char *const hdr[] = {"reported_gpu_seconds", "allocated_gpu_seconds", "down_gpu_seconds",
						  "planned_down_gpu_seconds", "reserved_gpu_seconds", "idle_gpu_seconds",
						  "over_gpu_seconds", "drained_allocated_gpu_seconds", "saturation",
						  NULL};
		gl_csv_field(o, "start");
		gl_csv_field(o, "end");
		gl_csv_field(o, "cluster");
		if (key_name(agg))
			gl_csv_field(o, key_name(agg));
		gl_apijson_csv_header(o, hdr);
		for (size_t i = 0; i < nrows; i++) {
			const struct gl_cap_row *r = &rows[i];
			char a[32], b[32], sat[32] = "";
			double sv = gl_capacity_saturation(r);
			gl_time_format(r->start_s, a, sizeof a);
			gl_time_format(r->end_s, b, sizeof b);
			gl_csv_raw(o, a);
			gl_csv_raw(o, b);
			/* names come from scheduler output: guarded like any text */
			gl_csv_field(o, r->cluster);
			if (key_name(agg))
				gl_csv_field(o, r->key);
			gl_strbuf_printf(o, ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", (long long)r->reported_gpu_seconds,
					 (long long)r->allocated_gpu_seconds, (long long)r->down_gpu_seconds,
					 (long long)r->planned_down_gpu_seconds, (long long)r->reserved_gpu_seconds,
					 (long long)r->idle_gpu_seconds, (long long)r->over_gpu_seconds,
					 (long long)r->drained_allocated_gpu_seconds);
			if (sv >= 0)
				snprintf(sat, sizeof sat, "%.6f", sv);
			gl_csv_raw(o, sat);
			gl_csv_end(o);
		}
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("capacity.csv"));
	} else {
		cJSON *root = cJSON_CreateObject(), *arr, *t, *wo = cJSON_AddObjectToObject(root, "window");
		gl_apijson_add_time(wo, "start", w.start_s);
		gl_apijson_add_time(wo, "end", w.end_s);
		cJSON_AddStringToObject(root, "step", gl_step_name(step));
		cJSON_AddStringToObject(root, "aggregate", key_name(agg) ? key_name(agg) : "cluster");
		arr = cJSON_AddArrayToObject(root, "rows");
		for (size_t i = 0; i < nrows; i++) {
			cJSON *o = cJSON_CreateObject();
			gl_apijson_add_time(o, "start", rows[i].start_s);
			gl_apijson_add_time(o, "end", rows[i].end_s);
			cJSON_AddStringToObject(o, "cluster", rows[i].cluster);
			if (key_name(agg))
				cJSON_AddStringToObject(o, key_name(agg), rows[i].key);
			row_fields(o, &rows[i]);
			cJSON_AddItemToArray(arr, o);
		}
		t = cJSON_AddObjectToObject(root, "totals");
		row_fields(t, &tot);
		gl_apijson_add_unread(req, root);
		gl_apijson_put(resp, root);
		cJSON_Delete(root);
	}
out:
	free(steps);
	free(qsteps);
	free(rows);
	return rc;
}

/* ---- inventory ---- */

/* One row per node: its current GPU spans (scheduler) and the state spans in
 * force now or later (reservations ahead), as JSON built by the database.
 * Conflicts are listed, never resolved: the scheduler's count stays what
 * capacity uses. */
#define TS(x) "to_char(" x " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
static const char inv_nodes_sql[] =
	"WITH nd AS (SELECT cluster_id, node FROM node_gpu_spans WHERE valid_to IS NULL"
	"  UNION SELECT cluster_id, node FROM node_state_spans"
	"  WHERE valid_to IS NULL OR valid_to > to_timestamp($2::bigint))"
	" SELECT cl.name, nd.node,"
	" (SELECT array_to_string(s.partitions, ',') FROM node_gpu_spans s WHERE s.cluster_id = nd.cluster_id"
	"   AND s.node = nd.node AND s.valid_to IS NULL LIMIT 1),"
	" coalesce((SELECT json_agg(json_build_object('model', s.gpu_model, 'gpus', s.gpus, 'mig_instances',"
	"   s.mig_instances, 'memory_mib', s.memory_mib, 'partition', s.partition, 'source', s.source,"
	"   'since', " TS("s.valid_from") ")"
	"   ORDER BY s.gpu_model) FROM node_gpu_spans s WHERE s.cluster_id = nd.cluster_id AND s.node = nd.node"
	"   AND s.valid_to IS NULL), '[]'),"
	" coalesce((SELECT json_agg(json_build_object('state', n.state, 'source', n.source, 'reservation',"
	"   nullif(n.ref, ''), 'since', " TS("n.valid_from") ", 'until', " TS("n.valid_to") ","
	"   'raw_state', n.raw_state, 'unknown_flags', n.unknown_flags, 'reason', n.reason, 'reason_user',"
	"   n.reason_user, 'allocated_gpus', n.alloc_gpus, 'reserved_gpus', n.gpus) ORDER BY n.valid_from)"
	"   FROM node_state_spans n WHERE n.cluster_id = nd.cluster_id AND n.node = nd.node"
	"   AND (n.valid_to IS NULL OR n.valid_to > to_timestamp($2::bigint))), '[]'),"
	" (SELECT n.state FROM node_state_spans n WHERE n.cluster_id = nd.cluster_id AND n.node = nd.node"
	"   AND n.valid_to IS NULL AND n.source IN ('scontrol', 'kube') ORDER BY n.valid_from DESC LIMIT 1)"
	" FROM nd JOIN clusters cl ON cl.cluster_id = nd.cluster_id WHERE $1::text IS NULL OR cl.name = $1"
	" ORDER BY 1, 2";

/* Every GPU model name the sources wrote (gpu_model_canon keeps them lower
 * case) with the model it is billed under and why, so a reader can tell
 * why "NVIDIA A100-SXM4-80GB" is a100: an alias of the configuration, the
 * name being an alias's model (canonical as it is), else the rule. */
static const char inv_models_sql[] =
	"SELECT c.raw, c.model, CASE WHEN EXISTS (SELECT 1 FROM gpu_model_aliases a WHERE a.match = c.raw) THEN 'alias'"
	" WHEN EXISTS (SELECT 1 FROM gpu_model_aliases a WHERE a.model = c.raw) THEN 'alias_model' ELSE 'rule' END"
	" FROM gpu_model_canon c WHERE c.raw <> '' ORDER BY c.raw";

static const char inv_conflicts_sql[] =
	"WITH sch AS (SELECT cluster_id, node, sum(gpus) AS g FROM node_gpu_spans WHERE valid_to IS NULL GROUP BY 1, 2),"
	" exp AS (SELECT gp.cluster_id, nd.name AS node, count(DISTINCT gp.uuid) AS g FROM gpus gp"
	"  JOIN nodes nd ON nd.node_id = gp.node_id WHERE gp.absent_since IS NULL GROUP BY 1, 2),"
	" both_c AS (SELECT DISTINCT sch.cluster_id FROM sch JOIN exp USING (cluster_id))"
	" SELECT cl.name, coalesce(sch.node, exp.node), sch.g, exp.g"
	" FROM sch FULL JOIN exp ON exp.cluster_id = sch.cluster_id AND exp.node = sch.node"
	" JOIN clusters cl ON cl.cluster_id = coalesce(sch.cluster_id, exp.cluster_id)"
	" WHERE coalesce(sch.cluster_id, exp.cluster_id) IN (SELECT cluster_id FROM both_c)"
	"  AND sch.g IS DISTINCT FROM exp.g AND ($1::text IS NULL OR cl.name = $1)"
	" ORDER BY 1, 2";

static const char inv_clusters_sql[] =
	"SELECT cl.name, cl.kind,"
	" (SELECT count(DISTINCT node) FROM node_gpu_spans s WHERE s.cluster_id = cl.cluster_id AND s.valid_to IS NULL),"
	" (SELECT sum(gpus) FROM node_gpu_spans s WHERE s.cluster_id = cl.cluster_id AND s.valid_to IS NULL),"
	" (SELECT count(DISTINCT (gp.node_id, gp.uuid)) FROM gpus gp WHERE gp.cluster_id = cl.cluster_id"
	"   AND gp.absent_since IS NULL),"
	" (SELECT extract(epoch FROM max(taken_at))::bigint FROM sched_snapshots t WHERE t.cluster_id = cl.cluster_id),"
	" (SELECT extract(epoch FROM events_until)::bigint FROM sched_coverage v WHERE v.cluster_id = cl.cluster_id)"
	/* a cluster appears once data for it lands, not when a run that
	 * failed before writing any named it */
	" FROM clusters cl WHERE ($1::text IS NULL OR cl.name = $1) AND " GL_CLUSTER_HAS_DATA_SQL("cl.cluster_id")
	" ORDER BY 1";

void gl_inventory_metrics(PGconn *c, struct gl_strbuf *o)
{
	struct gl_err err = {0};
	PGresult *r = NULL;
	if (gl_db_query(c, inv_clusters_sql, 1, (const char *[]){NULL}, &r, &err) == 0) {
		gl_strbuf_puts(o, "# HELP gpuledger_inventory_gpus GPUs in the current inventory per cluster and source.\n"
				  "# TYPE gpuledger_inventory_gpus gauge\n");
		for (int i = 0; i < PQntuples(r); i++) {
			if (!PQgetisnull(r, i, 3))
				gl_apijson_prom_sample(o, "gpuledger_inventory_gpus",
						       (const char *[]){"cluster", PQgetvalue(r, i, 0), "source", "scheduler", NULL},
						       PQgetvalue(r, i, 3));
			gl_apijson_prom_sample(o, "gpuledger_inventory_gpus",
					       (const char *[]){"cluster", PQgetvalue(r, i, 0), "source", "exporter", NULL},
					       PQgetvalue(r, i, 4));
		}
		gl_strbuf_puts(o, "# HELP gpuledger_inventory_snapshot_timestamp_seconds Time of the last scheduler node snapshot.\n"
				  "# TYPE gpuledger_inventory_snapshot_timestamp_seconds gauge\n");
		for (int i = 0; i < PQntuples(r); i++)
			if (!PQgetisnull(r, i, 5))
				gl_apijson_prom_sample(o, "gpuledger_inventory_snapshot_timestamp_seconds",
						       (const char *[]){"cluster", PQgetvalue(r, i, 0), NULL}, PQgetvalue(r, i, 5));
	}
	PQclear(r);
	r = NULL;
	if (gl_db_query(c,
			"SELECT name, kind, count(*) FROM (SELECT c.name, CASE WHEN x.s IS NULL THEN 'unknown_to_scheduler'"
			" WHEN x.e IS NULL THEN 'unseen_by_exporter' ELSE 'gpu_count' END AS kind FROM ("
			"  SELECT * FROM (WITH sch AS (SELECT cluster_id, node, sum(gpus) AS g FROM node_gpu_spans"
			"   WHERE valid_to IS NULL GROUP BY 1, 2), exp AS (SELECT gp.cluster_id, nd.name AS node,"
			"   count(DISTINCT gp.uuid) AS g FROM gpus gp JOIN nodes nd ON nd.node_id = gp.node_id"
			"   WHERE gp.absent_since IS NULL GROUP BY 1, 2)"
			"   SELECT coalesce(sch.cluster_id, exp.cluster_id) AS cluster_id, sch.g AS s, exp.g AS e"
			"   FROM sch FULL JOIN exp ON exp.cluster_id = sch.cluster_id AND exp.node = sch.node"
			"   WHERE sch.g IS DISTINCT FROM exp.g"
			"    AND coalesce(sch.cluster_id, exp.cluster_id) IN (SELECT sch.cluster_id FROM sch JOIN exp USING (cluster_id))"
			"  ) q) x JOIN clusters c USING (cluster_id)) y GROUP BY 1, 2 ORDER BY 1, 2",
			0, NULL, &r, &err) == 0) {
		gl_strbuf_puts(o, "# HELP gpuledger_inventory_conflicts Nodes where the scheduler and the exporter disagree.\n"
				  "# TYPE gpuledger_inventory_conflicts gauge\n");
		for (int i = 0; i < PQntuples(r); i++)
			gl_apijson_prom_sample(o, "gpuledger_inventory_conflicts",
					       (const char *[]){"cluster", PQgetvalue(r, i, 0), "kind", PQgetvalue(r, i, 1), NULL},
					       PQgetvalue(r, i, 2));
	}
	PQclear(r);
}

static void csv_json_str(struct gl_strbuf *o, const cJSON *obj, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(obj, k);
	gl_csv_field(o, cJSON_IsString(v) ? v->valuestring : "");
}

static void csv_json_num(struct gl_strbuf *o, const cJSON *obj, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(obj, k);
	char buf[32] = "";
	if (cJSON_IsNumber(v))
		snprintf(buf, sizeof buf, "%lld", (long long)v->valuedouble);
	gl_csv_raw(o, buf);
}

/* The node table of inv_nodes_sql as CSV: one row per node and GPU span
 * (model), a node without GPU spans once with those cells empty. Future
 * state spans and conflicts stay JSON-only: they are not one table. */
static void inventory_csv(struct gl_resp *resp, const PGresult *r)
{
	struct gl_strbuf *o = &resp->body;
	gl_apijson_csv_header(o, (const char *const[]){"cluster", "node", "partitions", "state", "gpu_model", "gpus",
						       "mig_instances", "gpu_partition", "source", "since", NULL});
	for (int i = 0; i < PQntuples(r); i++) {
		cJSON *spans = cJSON_Parse(PQgetvalue(r, i, 3)), *sp;
		int n = cJSON_GetArraySize(spans);
		for (int k = 0; k < (n ? n : 1); k++) {
			sp = n ? cJSON_GetArrayItem(spans, k) : NULL;
			gl_apijson_csv_col_str(o, r, i, 0);
			gl_apijson_csv_col_str(o, r, i, 1);
			gl_apijson_csv_col_str(o, r, i, 2);
			gl_apijson_csv_col_str(o, r, i, 5);
			csv_json_str(o, sp, "model");
			csv_json_num(o, sp, "gpus");
			csv_json_num(o, sp, "mig_instances");
			csv_json_str(o, sp, "partition");
			csv_json_str(o, sp, "source");
			csv_json_str(o, sp, "since");
			gl_csv_end(o);
		}
		cJSON_Delete(spans);
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("inventory.csv"));
}

int gl_route_inventory(struct gl_req *req, struct gl_resp *resp)
{
	const char *cluster = gl_req_param(req, "cluster");
	struct gl_err err = {0};
	char now[24];
	PGconn *c;
	PGresult *r = NULL;
	cJSON *root = NULL, *arr, *nodes;
	int rc, csv;

	if ((rc = gl_apijson_format(req, resp, &csv)))
		return rc;
	snprintf(now, sizeof now, "%lld", (long long)req->now_s);
	if ((rc = gl_req_db(req, &c, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	if (csv) {
		if ((rc = gl_db_query(c, inv_nodes_sql, 2, (const char *[]){cluster, now}, &r, &err)))
			return gl_resp_error(resp, rc, NULL, "%s", err.msg);
		inventory_csv(resp, r);
		PQclear(r);
		return 0;
	}
	root = cJSON_CreateObject();
	gl_apijson_add_time(root, "at", req->now_s);
	if ((rc = gl_db_query(c, inv_clusters_sql, 1, (const char *[]){cluster}, &r, &err)))
		goto fail;
	arr = cJSON_AddArrayToObject(root, "clusters");
	for (int i = 0; i < PQntuples(r); i++) {
		cJSON *o = cJSON_CreateObject();
		gl_apijson_add_col_str(o, "name", r, i, 0);
		gl_apijson_add_col_str(o, "kind", r, i, 1);
		gl_apijson_add_col_num(o, "scheduler_nodes", r, i, 2);
		gl_apijson_add_col_num(o, "scheduler_gpus", r, i, 3);
		gl_apijson_add_col_num(o, "exporter_gpus", r, i, 4);
		gl_apijson_add_col_time(o, "last_snapshot", r, i, 5);
		gl_apijson_add_col_time(o, "events_until", r, i, 6);
		cJSON_AddStringToObject(o, "capacity_source",
					!PQgetisnull(r, i, 3) ? "scheduler" : (!PQgetisnull(r, i, 4) && atoll(PQgetvalue(r, i, 4)))
										? "exporter" : "none");
		cJSON_AddItemToArray(arr, o);
	}
	PQclear(r);
	r = NULL;

	nodes = cJSON_AddArrayToObject(root, "nodes");
	if ((rc = gl_db_query(c, inv_nodes_sql, 2, (const char *[]){cluster, now}, &r, &err)))
		goto fail;
	for (int i = 0; i < PQntuples(r); i++) {
		cJSON *n = cJSON_CreateObject();
		gl_apijson_add_col_str(n, "cluster", r, i, 0);
		gl_apijson_add_col_str(n, "node", r, i, 1);
		gl_apijson_add_col_str(n, "partitions", r, i, 2);
		cJSON_AddItemToObject(n, "gpus", cJSON_Parse(PQgetvalue(r, i, 3)));
		cJSON_AddItemToObject(n, "states", cJSON_Parse(PQgetvalue(r, i, 4)));
		/* the sampled state is the node's state now */
		gl_apijson_add_col_str(n, "state", r, i, 5);
		cJSON_AddItemToArray(nodes, n);
	}
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c, inv_conflicts_sql, 1, (const char *[]){cluster}, &r, &err)))
		goto fail;
	arr = cJSON_AddArrayToObject(root, "conflicts");
	for (int i = 0; i < PQntuples(r); i++) {
		cJSON *o = cJSON_CreateObject();
		char msg[256];
		gl_apijson_add_col_str(o, "cluster", r, i, 0);
		gl_apijson_add_col_str(o, "node", r, i, 1);
		gl_apijson_add_col_num(o, "scheduler_gpus", r, i, 2);
		gl_apijson_add_col_num(o, "exporter_gpus", r, i, 3);
		if (PQgetisnull(r, i, 2))
			snprintf(msg, sizeof msg, "the exporter sees %s GPUs on a node the scheduler does not list",
				 PQgetvalue(r, i, 3));
		else if (PQgetisnull(r, i, 3))
			snprintf(msg, sizeof msg, "the scheduler lists %s GPUs; the exporter sees none", PQgetvalue(r, i, 2));
		else
			snprintf(msg, sizeof msg, "the scheduler says %s GPUs, the exporter sees %s", PQgetvalue(r, i, 2),
				 PQgetvalue(r, i, 3));
		cJSON_AddStringToObject(o, "kind", PQgetisnull(r, i, 2) ? "unknown_to_scheduler"
						   : PQgetisnull(r, i, 3) ? "unseen_by_exporter" : "gpu_count");
		cJSON_AddStringToObject(o, "message", msg);
		cJSON_AddItemToArray(arr, o);
	}
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c, inv_models_sql, 0, NULL, &r, &err)))
		goto fail;
	arr = cJSON_AddArrayToObject(root, "gpu_models");
	for (int i = 0; i < PQntuples(r); i++) {
		cJSON *o = cJSON_CreateObject();
		gl_apijson_add_col_str(o, "name", r, i, 0);
		gl_apijson_add_col_str(o, "model", r, i, 1);
		gl_apijson_add_col_str(o, "via", r, i, 2);
		cJSON_AddItemToArray(arr, o);
	}
	PQclear(r);
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	return 0;
fail:
	PQclear(r);
	cJSON_Delete(root);
	return gl_resp_error(resp, rc, NULL, "%s", err.msg);
}
