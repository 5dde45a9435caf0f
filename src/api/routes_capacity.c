/* GET /v1/capacity and GET /v1/inventory (issue 9; the capacity side of
 * issue 6). docs/capacity.md describes the fields. */
#include "gl/apijson.h"
#include "gl/capstore.h"
#include "gl/csv.h"
#include "gl/dcgmstore.h"
#include "gl/inventory.h"
#include "gl/routes.h"
#include "gl/store.h"
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
	gl_timeutil_format(t, buf, n);
	buf[strcspn(buf, "Z")] = '\0';
}

static const char *key_name(enum gl_capacity_aggregate agg)
{
	return agg == GL_CAPACITY_AGG_PARTITION	   ? "partition"
	       : agg == GL_CAPACITY_AGG_MODEL	   ? "gpu_model"
	       : agg == GL_CAPACITY_AGG_WORKLOAD_TYPE ? "workload_type"
					   : NULL;
}

static void sum_into(struct gl_capacity_row *t, const struct gl_capacity_row *r)
{
	gl_capacity_add_raw(t, r);
	t->drained_allocated_gpu_seconds += r->drained_allocated_gpu_seconds;
	t->reported_gpu_seconds += r->reported_gpu_seconds;
	t->allocated_gpu_seconds += r->allocated_gpu_seconds;
	t->down_gpu_seconds += r->down_gpu_seconds;
	t->planned_down_gpu_seconds += r->planned_down_gpu_seconds;
	t->reserved_gpu_seconds += r->reserved_gpu_seconds;
	t->idle_gpu_seconds += r->idle_gpu_seconds;
	t->over_gpu_seconds += r->over_gpu_seconds;
	t->unobserved_gpu_seconds += r->unobserved_gpu_seconds;
}

static void row_fields(cJSON *o, const struct gl_capacity_row *r)
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
	cJSON_AddNumberToObject(o, "unobserved_gpu_seconds", (double)r->unobserved_gpu_seconds);
	if (sat < 0)
		cJSON_AddNullToObject(o, "saturation");
	else
		cJSON_AddNumberToObject(o, "saturation", sat);
}

/* sreport -P cluster Utilization, one block per step, GPU TRES only:
 * Allocated includes non-maintenance reservations, as the rollup books them. */
static void put_sreport(struct gl_strbuf *o, const struct gl_window *steps, size_t nsteps, const struct gl_capacity_row *rows,
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
			struct gl_capacity_row tot;
			memset(&tot, 0, sizeof tot);
			while (j < n && rows[j].step == s && !strcmp(rows[j].cluster, rows[i].cluster)) {
				tot.raw_reported_gpu_seconds += rows[j].raw_reported_gpu_seconds;
				tot.raw_allocated_micro_gpu_seconds += rows[j].raw_allocated_micro_gpu_seconds;
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
			/* allocation no capacity data covers (a cluster without node
			 * inventory, or more than its GPUs): on a line of its own, so
			 * it is neither lost nor counted in the cluster's Allocated
			 * (slurmdbd never books it: its equalities hold without it) */
			if (tot.over_gpu_seconds > 0)
				gl_strbuf_printf(o, "%s|gres/gpu(beyond inventory)|%lld|0|0|0|0|0\n", rows[i].cluster,
						 (long long)tot.over_gpu_seconds);
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

static void capacity_csv(struct gl_resp *resp, enum gl_capacity_aggregate agg, const struct gl_capacity_row *rows, size_t nrows)
{
	static const char *const hdr[] = {"reported_gpu_seconds", "allocated_gpu_seconds", "down_gpu_seconds",
					  "planned_down_gpu_seconds", "reserved_gpu_seconds", "idle_gpu_seconds",
					  "over_gpu_seconds", "drained_allocated_gpu_seconds", "unobserved_gpu_seconds",
					  "saturation", NULL};
	struct gl_strbuf *o = &resp->body;
	gl_csv_field(o, "start");
	gl_csv_field(o, "end");
	gl_csv_field(o, "cluster");
	if (key_name(agg))
		gl_csv_field(o, key_name(agg));
	gl_apijson_csv_header(o, hdr);
	for (size_t i = 0; i < nrows; i++) {
		const struct gl_capacity_row *r = &rows[i];
		char a[32], b[32], sat[32] = "";
		double sv = gl_capacity_saturation(r);
		gl_timeutil_format(r->start_s, a, sizeof a);
		gl_timeutil_format(r->end_s, b, sizeof b);
		gl_csv_raw(o, a);
		gl_csv_raw(o, b);
		/* names come from scheduler output: guarded like any text */
		gl_csv_field(o, r->cluster);
		if (key_name(agg))
			gl_csv_field(o, r->key);
		gl_strbuf_printf(o, ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", (long long)r->reported_gpu_seconds,
				 (long long)r->allocated_gpu_seconds, (long long)r->down_gpu_seconds,
				 (long long)r->planned_down_gpu_seconds, (long long)r->reserved_gpu_seconds,
				 (long long)r->idle_gpu_seconds, (long long)r->over_gpu_seconds,
				 (long long)r->drained_allocated_gpu_seconds, (long long)r->unobserved_gpu_seconds);
		if (sv >= 0)
			snprintf(sat, sizeof sat, "%.6f", sv);
		gl_csv_raw(o, sat);
		gl_csv_end(o);
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("capacity.csv"));
}

static cJSON *capacity_json(const struct gl_window *w, enum gl_window_step step, enum gl_capacity_aggregate agg, int include,
			    const struct gl_capacity_row *rows, size_t nrows)
{
	cJSON *root = cJSON_CreateObject(), *arr, *t, *wo = cJSON_AddObjectToObject(root, "window");
	struct gl_capacity_row tot;
	gl_apijson_add_time(wo, "start", w->start_s);
	gl_apijson_add_time(wo, "end", w->end_s);
	cJSON_AddStringToObject(root, "step", gl_window_step_name(step));
	cJSON_AddStringToObject(root, "aggregate", key_name(agg) ? key_name(agg) : "cluster");
	cJSON_AddStringToObject(root, "unobserved", include ? "include" : "exclude");
	arr = cJSON_AddArrayToObject(root, "rows");
	memset(&tot, 0, sizeof tot);
	for (size_t i = 0; i < nrows; i++) {
		cJSON *o = cJSON_CreateObject();
		gl_apijson_add_time(o, "start", rows[i].start_s);
		gl_apijson_add_time(o, "end", rows[i].end_s);
		cJSON_AddStringToObject(o, "cluster", rows[i].cluster);
		if (key_name(agg))
			cJSON_AddStringToObject(o, key_name(agg), rows[i].key);
		row_fields(o, &rows[i]);
		cJSON_AddItemToArray(arr, o);
		sum_into(&tot, &rows[i]);
	}
	t = cJSON_AddObjectToObject(root, "totals");
	row_fields(t, &tot);
	return root;
}

/* window, step, aggregate, unobserved and format, each checked (400 naming
 * it). */
static int capacity_params(struct gl_req *req, struct gl_resp *resp, struct gl_window *w, enum gl_window_step *step,
			   enum gl_capacity_aggregate *agg, struct gl_capacity_observed *obs, const char **format)
{
	const char *step_s = gl_req_param(req, "step"), *agg_s = gl_req_param(req, "aggregate"),
		   *unobs = gl_req_param(req, "unobserved");
	struct gl_err err = {0};
	int rc;

	*format = gl_req_param(req, "format");
	*step = GL_WINDOW_STEP_NONE;
	*agg = GL_CAPACITY_AGG_CLUSTER;
	/* the shared parser also enforces api.max_window_days, as on every route */
	if ((rc = gl_apijson_window(req, resp, "24h", w)))
		return rc;
	if (step_s && gl_window_step_parse(step_s, step, &err))
		return gl_resp_error(resp, GL_EINVAL, "step", "step: %s", err.msg);
	if (agg_s && !strcmp(agg_s, "partition"))
		*agg = GL_CAPACITY_AGG_PARTITION;
	else if (agg_s && !strcmp(agg_s, "gpu_model"))
		*agg = GL_CAPACITY_AGG_MODEL;
	else if (agg_s && !strcmp(agg_s, "workload_type"))
		*agg = GL_CAPACITY_AGG_WORKLOAD_TYPE;
	else if (agg_s && strcmp(agg_s, "cluster"))
		return gl_resp_error(resp, GL_EINVAL, "aggregate",
				     "aggregate: expected cluster, partition, gpu_model or workload_type, got '%s'", agg_s);
	if (*format && strcmp(*format, "json") && strcmp(*format, "csv") && strcmp(*format, "sreport"))
		return gl_resp_error(resp, GL_EINVAL, "format", "format: expected json, csv or sreport, got '%s'", *format);
	if (unobs && strcmp(unobs, "exclude") && strcmp(unobs, "include"))
		return gl_resp_error(resp, GL_EINVAL, "unobserved", "unobserved: '%s' is not exclude or include", unobs);
	obs->grace_s = req->cfg->inventory_absent_grace_s;
	obs->include = unobs && !strcmp(unobs, "include");
	if (*format && !strcmp(*format, "sreport")) {
		*agg = GL_CAPACITY_AGG_MODEL; /* one row per GPU TRES, the total settled separately */
		obs->include = 1;        /* slurmdbd rolls a node's last state to the hour's end */
	}
	return 0;
}

/* The steps as the query sees them: cut at now, since seconds that have
 * not happened are neither reported nor idle (chargeback and /v1/idle stop
 * there too; a month asked mid-month used to report its future as idle).
 * format=sreport cuts at the end of now's hour instead, because slurmdbd
 * rolls an unfinished hour up to its end. Steps keep their bounds in the
 * answer. */
static struct gl_window *cut_steps(const struct gl_window *steps, size_t nsteps, int sreport, int64_t now_s)
{
	struct gl_window *q = gl_xcalloc(nsteps ? nsteps : 1, sizeof *q);
	int64_t cut = sreport ? (now_s / 3600 + 1) * 3600 : now_s;
	for (size_t i = 0; i < nsteps; i++) {
		q[i] = steps[i];
		if (q[i].start_s > cut)
			q[i].start_s = cut;
		if (q[i].end_s > cut)
			q[i].end_s = cut;
	}
	return q;
}

int gl_route_capacity(struct gl_req *req, struct gl_resp *resp)
{
	const char *cluster = gl_req_param(req, "cluster"), *format = NULL;
	struct gl_err err = {0};
	struct gl_window w, *steps = NULL, *qsteps = NULL;
	enum gl_window_step step;
	enum gl_capacity_aggregate agg;
	struct gl_capacity_observed obs;
	struct gl_capacity_row *rows = NULL;
	size_t nsteps = 0, nrows = 0;
	struct gl_store *st;
	int rc = 0, sreport;

	if ((rc = capacity_params(req, resp, &w, &step, &agg, &obs, &format)))
		return rc;
	sreport = format && !strcmp(format, "sreport");
	steps = gl_xcalloc(MAX_STEPS, sizeof *steps);
	if (gl_window_split(&w, step, steps, MAX_STEPS, &nsteps, &err)) {
		rc = gl_resp_error(resp, GL_EINVAL, "step", "step: %s", err.msg);
		goto out;
	}
	qsteps = cut_steps(steps, nsteps, sreport, req->now_s);
	if ((rc = gl_req_store(req, &st, &err)) ||
	    (rc = gl_capstore_query(st, qsteps, nsteps, agg, cluster, req->now_s, &obs, &rows, &nrows, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg);
		goto out;
	}
	for (size_t i = 0; i < nrows; i++) {
		rows[i].start_s = steps[rows[i].step].start_s;
		rows[i].end_s = steps[rows[i].step].end_s;
	}
	if (sreport) {
		put_sreport(&resp->body, steps, nsteps, rows, nrows);
		resp->content_type = "text/plain; charset=utf-8";
	} else if (format && !strcmp(format, "csv")) {
		if (!(rc = gl_apijson_data_through(req, resp, NULL, &w)))
			capacity_csv(resp, agg, rows, nrows);
	} else {
		cJSON *root = capacity_json(&w, step, agg, obs.include, rows, nrows);
		gl_apijson_add_unread(req, root);
		if (!(rc = gl_apijson_data_through(req, resp, root, &w)))
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

/* One GPU span or state span, as the inventory JSON lists it. */
static cJSON *span_json(const struct gl_inventory_span *sp)
{
	cJSON *o = cJSON_CreateObject();
	gl_apijson_add_str(o, "model", sp->model);
	cJSON_AddNumberToObject(o, "gpus", (double)sp->gpus);
	cJSON_AddNumberToObject(o, "mig_instances", (double)sp->mig_instances);
	gl_apijson_add_int(o, "memory_mib", sp->memory_mib, sp->memory_mib_null);
	gl_apijson_add_str(o, "partition", sp->partition);
	gl_apijson_add_str(o, "source", sp->source);
	gl_apijson_add_str(o, "since", sp->since);
	return o;
}

static cJSON *state_json(const struct gl_inventory_state *ss)
{
	cJSON *o = cJSON_CreateObject();
	gl_apijson_add_str(o, "state", ss->state);
	gl_apijson_add_str(o, "source", ss->source);
	gl_apijson_add_str(o, "reservation", ss->reservation);
	gl_apijson_add_str(o, "since", ss->since);
	gl_apijson_add_str(o, "until", ss->until);
	gl_apijson_add_str(o, "raw_state", ss->raw_state);
	gl_apijson_add_str(o, "unknown_flags", ss->unknown_flags);
	gl_apijson_add_str(o, "reason", ss->reason);
	gl_apijson_add_str(o, "reason_user", ss->reason_user);
	gl_apijson_add_int(o, "allocated_gpus", ss->allocated_gpus, ss->allocated_gpus_null);
	gl_apijson_add_int(o, "reserved_gpus", ss->reserved_gpus, ss->reserved_gpus_null);
	return o;
}

/* The node table as CSV: one row per node and GPU span (model), a node
 * without GPU spans once with those cells empty. Future state spans and
 * conflicts stay JSON-only: they are not one table. */
static void inventory_csv(struct gl_resp *resp, const struct gl_inventory *inv)
{
	struct gl_strbuf *o = &resp->body;
	gl_apijson_csv_header(o, (const char *const[]){"cluster", "node", "partitions", "state", "gpu_model", "gpus",
						       "mig_instances", "gpu_partition", "source", "since", NULL});
	for (size_t i = 0; i < inv->n_nodes; i++) {
		const struct gl_inventory_node *nd = &inv->nodes[i];
		for (size_t k = 0; k < (nd->n_spans ? nd->n_spans : 1); k++) {
			const struct gl_inventory_span *sp = nd->n_spans ? &nd->spans[k] : NULL;
			gl_csv_field(o, nd->cluster);
			gl_csv_field(o, nd->node);
			gl_csv_field(o, nd->partitions ? nd->partitions : "");
			gl_csv_field(o, nd->state ? nd->state : "");
			gl_csv_field(o, sp && sp->model ? sp->model : "");
			gl_apijson_csv_int(o, sp ? sp->gpus : 0, !sp);
			gl_apijson_csv_int(o, sp ? sp->mig_instances : 0, !sp);
			gl_csv_field(o, sp && sp->partition ? sp->partition : "");
			gl_csv_field(o, sp && sp->source ? sp->source : "");
			gl_csv_field(o, sp && sp->since ? sp->since : "");
			gl_csv_end(o);
		}
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("inventory.csv"));
}

static cJSON *cluster_json(const struct gl_inventory_cluster *c)
{
	cJSON *o = cJSON_CreateObject();
	gl_apijson_add_str(o, "name", c->name);
	gl_apijson_add_str(o, "kind", c->kind);
	cJSON_AddNumberToObject(o, "scheduler_nodes", (double)c->scheduler_nodes);
	gl_apijson_add_int(o, "scheduler_gpus", c->scheduler_gpus, c->scheduler_gpus_null);
	cJSON_AddNumberToObject(o, "exporter_gpus", (double)c->exporter_gpus);
	gl_apijson_add_time(o, "last_snapshot", c->last_snapshot_s);
	gl_apijson_add_time(o, "events_until", c->events_until_s);
	cJSON_AddStringToObject(o, "capacity_source",
				!c->scheduler_gpus_null ? "scheduler" : c->exporter_gpus ? "exporter" : "none");
	return o;
}

static cJSON *node_json(const struct gl_inventory_node *nd, int64_t now_s, int64_t grace_s)
{
	cJSON *n = cJSON_CreateObject(), *a;
	gl_apijson_add_str(n, "cluster", nd->cluster);
	gl_apijson_add_str(n, "node", nd->node);
	gl_apijson_add_str(n, "partitions", nd->partitions);
	a = cJSON_AddArrayToObject(n, "gpus");
	for (size_t k = 0; k < nd->n_spans; k++)
		cJSON_AddItemToArray(a, span_json(&nd->spans[k]));
	a = cJSON_AddArrayToObject(n, "states");
	for (size_t k = 0; k < nd->n_states; k++)
		cJSON_AddItemToArray(a, state_json(&nd->states[k]));
	/* the sampled state is the node's state as its last snapshot saw it:
	 * stale when that is older than the absent grace (nobody observed it
	 * since; its capacity is then unobserved, docs/capacity.md) */
	gl_apijson_add_str(n, "state", nd->state);
	gl_apijson_add_time(n, "state_since", nd->state_since_s);
	gl_apijson_add_time(n, "last_seen", nd->last_seen_s);
	cJSON_AddBoolToObject(n, "stale", nd->last_seen_s != GL_TIME_NONE && now_s - nd->last_seen_s > grace_s);
	return n;
}

static cJSON *conflict_json(const struct gl_inventory_conflict *c)
{
	cJSON *o = cJSON_CreateObject();
	char msg[256];
	gl_apijson_add_str(o, "cluster", c->cluster);
	gl_apijson_add_str(o, "node", c->node);
	gl_apijson_add_int(o, "scheduler_gpus", c->scheduler_gpus, c->scheduler_gpus_null);
	gl_apijson_add_int(o, "exporter_gpus", c->exporter_gpus, c->exporter_gpus_null);
	gl_apijson_add_str(o, "scheduler_source", *c->scheduler_source ? c->scheduler_source : NULL);
	gl_apijson_add_str(o, "exporter_sources", *c->exporter_sources ? c->exporter_sources : NULL);
	if (c->scheduler_gpus_null)
		snprintf(msg, sizeof msg, "%s reports %lld GPUs on a node the scheduler does not list", c->exporter_sources,
			 (long long)c->exporter_gpus);
	else if (c->exporter_gpus_null)
		snprintf(msg, sizeof msg, "the scheduler (%s) lists %lld GPUs; no GPU source reports any", c->scheduler_source,
			 (long long)c->scheduler_gpus);
	else
		snprintf(msg, sizeof msg, "the scheduler (%s) says %lld GPUs, %s reports %lld", c->scheduler_source,
			 (long long)c->scheduler_gpus, c->exporter_sources, (long long)c->exporter_gpus);
	cJSON_AddStringToObject(o, "kind", gl_inventory_conflict_kind(c));
	cJSON_AddStringToObject(o, "message", msg);
	return o;
}

static cJSON *inventory_json(const struct gl_inventory *inv, int64_t now_s, int64_t grace_s)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	gl_apijson_add_time(root, "at", now_s);
	arr = cJSON_AddArrayToObject(root, "clusters");
	for (size_t i = 0; i < inv->n_clusters; i++)
		cJSON_AddItemToArray(arr, cluster_json(&inv->clusters[i]));
	arr = cJSON_AddArrayToObject(root, "nodes");
	for (size_t i = 0; i < inv->n_nodes; i++)
		cJSON_AddItemToArray(arr, node_json(&inv->nodes[i], now_s, grace_s));
	arr = cJSON_AddArrayToObject(root, "conflicts");
	for (size_t i = 0; i < inv->n_conflicts; i++)
		cJSON_AddItemToArray(arr, conflict_json(&inv->conflicts[i]));
	arr = cJSON_AddArrayToObject(root, "gpu_models");
	for (size_t i = 0; i < inv->n_models; i++) {
		cJSON *o = cJSON_CreateObject();
		gl_apijson_add_str(o, "name", inv->models[i].name);
		gl_apijson_add_str(o, "model", inv->models[i].model);
		gl_apijson_add_str(o, "via", inv->models[i].via);
		cJSON_AddItemToArray(arr, o);
	}
	return root;
}

/* A GPU is stale when it stopped reporting (absent_since) or nobody
 * observed it for longer than the absent grace, as a node is. */
static int inv_gpu_stale(const struct gl_dcgmstore_inv_gpu *g, int64_t now_s, int64_t grace_s)
{
	return g->absent_since_s != GL_TIME_NONE || (g->last_seen_s != GL_TIME_NONE && now_s - g->last_seen_s > grace_s);
}

/* Every GPU a source reports, JSON. */
static cJSON *inv_gpus_json(const struct gl_dcgmstore_inv_gpu *v, size_t n, int64_t now_s, int64_t grace_s)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		const char *k[] = {"cluster", "node", "uuid", "model_raw", "model", "mig_profile", "driver", "source"};
		const char *s[] = {v[i].cluster, v[i].node,    v[i].uuid,   v[i].model_raw,
				   v[i].model,   v[i].profile, v[i].driver, v[i].source};
		for (int j = 0; j < 8; j++) {
			if (*s[j])
				cJSON_AddStringToObject(o, k[j], s[j]);
			else
				cJSON_AddNullToObject(o, k[j]);
		}
		if (v[i].gpu_index >= 0)
			cJSON_AddNumberToObject(o, "index", v[i].gpu_index);
		else
			cJSON_AddNullToObject(o, "index");
		if (v[i].mig_instance >= 0)
			cJSON_AddNumberToObject(o, "mig_instance", v[i].mig_instance);
		else
			cJSON_AddNullToObject(o, "mig_instance");
		cJSON_AddBoolToObject(o, "stale", inv_gpu_stale(&v[i], now_s, grace_s));
		gl_apijson_add_time(o, "first_seen", v[i].first_seen_s);
		gl_apijson_add_time(o, "last_seen", v[i].last_seen_s);
		if (v[i].absent_since_s != GL_TIME_NONE)
			gl_apijson_add_time(o, "absent_since", v[i].absent_since_s);
		else
			cJSON_AddNullToObject(o, "absent_since");
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* table=gpus: the GPUs the sources report, one row each. */
static void inv_gpus_csv(struct gl_resp *resp, const struct gl_dcgmstore_inv_gpu *v, size_t n, int64_t now_s, int64_t grace_s)
{
	struct gl_strbuf *o = &resp->body;
	char t[32];
	gl_apijson_csv_header(o, (const char *const[]){"cluster", "node", "index", "uuid", "model_raw", "model",
						       "mig_profile", "mig_instance", "driver", "source", "first_seen",
						       "last_seen", "absent_since", "stale", NULL});
	for (size_t i = 0; i < n; i++) {
		const char *s[] = {v[i].uuid, v[i].model_raw, v[i].model, v[i].profile};
		gl_csv_field(o, v[i].cluster);
		gl_csv_field(o, v[i].node);
		snprintf(t, sizeof t, "%d", v[i].gpu_index);
		gl_csv_field(o, v[i].gpu_index >= 0 ? t : "");
		for (int j = 0; j < 4; j++)
			gl_csv_field(o, s[j]);
		snprintf(t, sizeof t, "%d", v[i].mig_instance);
		gl_csv_field(o, v[i].mig_instance >= 0 ? t : "");
		gl_csv_field(o, v[i].driver);
		gl_csv_field(o, v[i].source);
		gl_timeutil_format(v[i].first_seen_s, t, sizeof t);
		gl_csv_field(o, t);
		gl_timeutil_format(v[i].last_seen_s, t, sizeof t);
		gl_csv_field(o, t);
		if (v[i].absent_since_s != GL_TIME_NONE)
			gl_timeutil_format(v[i].absent_since_s, t, sizeof t);
		gl_csv_field(o, v[i].absent_since_s != GL_TIME_NONE ? t : "");
		gl_csv_field(o, inv_gpu_stale(&v[i], now_s, grace_s) ? "true" : "false");
		gl_csv_end(o);
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("inventory_gpus.csv"));
}

int gl_route_inventory(struct gl_req *req, struct gl_resp *resp)
{
	const char *cluster = gl_req_param(req, "cluster"), *table = gl_req_param(req, "table");
	struct gl_err err = {0};
	struct gl_inventory inv = {0};
	struct gl_dcgmstore_inv_gpu *gv = NULL;
	size_t ng = 0;
	struct gl_store *st;
	/* the inventory is as of now: past any source that stopped before it */
	struct gl_window upto = {req->now_s, req->now_s};
	int rc, rc2 = 0, csv;

	if ((rc = gl_apijson_format(req, resp, &csv)))
		return rc;
	if (table && strcmp(table, "nodes") && strcmp(table, "gpus"))
		return gl_resp_error(resp, GL_EINVAL, "table", "table: '%s' is not nodes or gpus", table);
	if ((rc = gl_req_store(req, &st, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	if (csv && table && !strcmp(table, "gpus")) {
		if ((rc = gl_dcgmstore_inv_gpus(st, cluster, &gv, &ng, &err)))
			goto out;
		if (!(rc2 = gl_apijson_data_through(req, resp, NULL, &upto)))
			inv_gpus_csv(resp, gv, ng, req->now_s, req->cfg->inventory_absent_grace_s);
		goto out;
	}
	if (!csv && ((rc = gl_inventory_clusters(st, cluster, &inv, &err))))
		goto out;
	if ((rc = gl_inventory_nodes(st, cluster, req->now_s, &inv, &err)))
		goto out;
	if (csv) {
		if (!(rc2 = gl_apijson_data_through(req, resp, NULL, &upto)))
			inventory_csv(resp, &inv);
		goto out;
	}
	if ((rc = gl_inventory_conflicts(st, cluster, &inv, &err)) || (rc = gl_inventory_models(st, &inv, &err)) ||
	    (rc = gl_dcgmstore_inv_gpus(st, cluster, &gv, &ng, &err)))
		goto out;
	{
		cJSON *root = inventory_json(&inv, req->now_s, req->cfg->inventory_absent_grace_s);
		/* every GPU any source reports: exporters, AMD, nvidia-smi */
		cJSON_AddItemToObject(root, "gpus", inv_gpus_json(gv, ng, req->now_s, req->cfg->inventory_absent_grace_s));
		if (!(rc2 = gl_apijson_data_through(req, resp, root, &upto)))
			gl_apijson_put(resp, root);
		cJSON_Delete(root);
	}
out:
	gl_inventory_fini(&inv);
	gl_dcgmstore_inv_gpus_free(gv, ng);
	return rc ? gl_resp_error(resp, rc, NULL, "%s", err.msg) : rc2;
}
