/* The stored capacity plan and the fleet it is checked against (see
 * include/gl/capplandb.h). */
#include "gl/capplandb.h"
#include "gl/audit.h"
#include "gl/capstore.h"
#include "db_int.h"
#include "gl/fcseries.h"
#include "gl/inventory.h"
#include "gl/log.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* pg_advisory_xact_lock key of plan changes ("glcapplan") */
#define PLAN_LOCK_KEY 0x676c636170706cLL

static void add_name(char (**arr)[GL_CAPPLAN_NAME_MAX], size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*arr)[i], name))
			return;
	*arr = gl_xrealloc(*arr, sizeof **arr * (*n + 1));
	snprintf((*arr)[*n], GL_CAPPLAN_NAME_MAX, "%s", name);
	(*n)++;
}

/* A plan starts from the GPUs the inventory lists, whether or not a
 * snapshot saw them lately: a stale inventory still names the fleet the
 * purchases add to (sreport's semantics, the unobserved part included). */
static const struct gl_capacity_observed fleet_as_listed = {-1, 1};

static void config_clusters(const struct gl_config *cfg, struct gl_capplan_fleet *f)
{
	for (size_t i = 0; i < cfg->n_sacct; i++)
		add_name(&f->clusters, &f->n_clusters, cfg->sacct[i].cluster);
	for (size_t i = 0; i < cfg->n_kube; i++)
		add_name(&f->clusters, &f->n_clusters, cfg->kube[i].cluster);
	for (size_t i = 0; i < cfg->n_dcgm; i++)
		add_name(&f->clusters, &f->n_clusters, cfg->dcgm[i].cluster);
	for (size_t i = 0; i < cfg->n_slurm_nodes; i++)
		add_name(&f->clusters, &f->n_clusters, cfg->slurm_nodes[i].cluster);
	for (size_t i = 0; i < cfg->n_kube_nodes; i++)
		add_name(&f->clusters, &f->n_clusters, cfg->kube_nodes[i].cluster);
}

int gl_capplandb_fleet(struct gl_store *store, const struct gl_config *cfg, int64_t now_s, struct gl_capplan_fleet *f,
		       struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	struct gl_capacity_row *rows = NULL;
	size_t nrows = 0;
	int64_t hour = now_s - ((now_s % 3600) + 3600) % 3600;
	struct gl_window last = {hour - 3600, hour};
	int rc;

	memset(f, 0, sizeof *f);
	f->today_s = now_s - ((now_s % 86400) + 86400) % 86400;
	if ((rc = gl_db_query(c, "SELECT name FROM clusters", 0, NULL, &r, err)))
		goto out;
	for (int i = 0; i < PQntuples(r); i++)
		add_name(&f->clusters, &f->n_clusters, PQgetvalue(r, i, 0));
	PQclear(r);
	r = NULL;
	if (cfg)
		config_clusters(cfg, f);
	if ((rc = gl_db_query(c,
			      "SELECT model FROM gpu_model_canon UNION SELECT gl_gpu_model(gpu_model) FROM rates"
			      " WHERE gpu_model <> '*' UNION SELECT model FROM gpu_model_aliases",
			      0, NULL, &r, err)))
		goto out;
	for (int i = 0; i < PQntuples(r); i++)
		add_name(&f->models, &f->n_models, PQgetvalue(r, i, 0));
	if ((rc = gl_capstore_query(store, &last, 1, GL_CAPACITY_AGG_MODEL, NULL, now_s, &fleet_as_listed, &rows, &nrows, err)))
		goto out;
	f->present = gl_xcalloc(nrows ? nrows : 1, sizeof *f->present);
	for (size_t i = 0; i < nrows; i++) {
		struct gl_capplan_count *p = &f->present[f->n_present];
		if (!rows[i].key[0] || rows[i].reported_gpu_seconds <= 0)
			continue;
		snprintf(p->cluster, sizeof p->cluster, "%s", rows[i].cluster);
		snprintf(p->gpu_model, sizeof p->gpu_model, "%s", rows[i].key);
		p->gpus = rows[i].reported_gpu_seconds / 3600;
		f->n_present++;
		add_name(&f->models, &f->n_models, rows[i].key);
	}
out:
	PQclear(r);
	free(rows);
	if (rc)
		gl_capplan_fleet_fini(f);
	return rc;
}

int gl_capplandb_canon(struct gl_store *store, struct gl_capplan_change *plan, size_t n, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	struct gl_strbuf arr = GL_STRBUF_INIT;
	PGresult *r = NULL;
	int rc = 0;
	if (!n)
		return 0;
	/* a text[] literal, each element quoted */
	gl_strbuf_putc(&arr, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			gl_strbuf_putc(&arr, ',');
		gl_strbuf_putc(&arr, '"');
		for (const char *p = plan[i].gpu_model; *p; p++) {
			if (*p == '"' || *p == '\\')
				gl_strbuf_putc(&arr, '\\');
			gl_strbuf_putc(&arr, *p);
		}
		gl_strbuf_putc(&arr, '"');
	}
	gl_strbuf_putc(&arr, '}');
	if ((rc = gl_db_query(c, "SELECT gl_gpu_model(m) FROM unnest($1::text[]) WITH ORDINALITY AS u(m, i) ORDER BY i",
			      1, (const char *[]){gl_strbuf_cstr(&arr)}, &r, err)))
		goto out;
	for (size_t i = 0; i < n && (int)i < PQntuples(r); i++)
		snprintf(plan[i].gpu_model, sizeof plan[i].gpu_model, "%s", PQgetvalue(r, (int)i, 0));
out:
	PQclear(r);
	gl_strbuf_fini(&arr);
	return rc;
}

int gl_capplandb_list(struct gl_store *store, const char *source, struct gl_capplan_change **out, size_t *n, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	int rc;
	*out = NULL;
	*n = 0;
	if ((rc = gl_db_query(c,
			      "SELECT id, source, cluster, gpu_model, gpus, extract(epoch FROM effective::timestamp)::bigint,"
			      " note, coalesce(config_line, 0) FROM capacity_plan WHERE $1::text IS NULL OR source = $1"
			      " ORDER BY effective, source, id",
			      1, (const char *[]){source}, &r, err)))
		return rc;
	*out = gl_xcalloc((size_t)PQntuples(r) + 1, sizeof **out);
	for (int i = 0; i < PQntuples(r); i++) {
		struct gl_capplan_change *e = &(*out)[i];
		e->id = atoll(PQgetvalue(r, i, 0));
		snprintf(e->source, sizeof e->source, "%s", PQgetvalue(r, i, 1));
		snprintf(e->cluster, sizeof e->cluster, "%s", PQgetvalue(r, i, 2));
		snprintf(e->gpu_model, sizeof e->gpu_model, "%s", PQgetvalue(r, i, 3));
		e->gpus = atoll(PQgetvalue(r, i, 4));
		e->day_s = atoll(PQgetvalue(r, i, 5));
		snprintf(e->note, sizeof e->note, "%s", PQgetvalue(r, i, 6));
		e->line = atoi(PQgetvalue(r, i, 7));
	}
	*n = (size_t)PQntuples(r);
	PQclear(r);
	return 0;
}

/* extra first, then the stored plan of the other source(s) (none when
 * with_stored is 0), checked as one. */
static int check_with_stored(PGconn *c, const struct gl_config *cfg, int64_t now_s, const char *source,
			     int with_stored, struct gl_capplan_change *extra, size_t n, size_t *bad, const char **field,
			     struct gl_err *err)
{
	struct gl_capplan_fleet f;
	struct gl_capplan_change *stored = NULL, *all = NULL;
	size_t ns = 0, m = 0;
	int rc;

	if ((rc = gl_capplandb_canon(gl_db_store(c), extra, n, err)) || (rc = gl_capplandb_fleet(gl_db_store(c), cfg, now_s, &f, err)))
		return rc;
	if ((rc = gl_capplandb_list(gl_db_store(c), NULL, &stored, &ns, err)))
		goto out;
	all = gl_xcalloc(n + ns + 1, sizeof *all);
	if (n)
		memcpy(all, extra, sizeof *all * n);
	m = n;
	for (size_t i = 0; i < ns && with_stored; i++)
		if (!source || strcmp(stored[i].source, source))
			all[m++] = stored[i];
	if ((rc = gl_capplan_check(&f, all, m, bad, field, err)) && *bad >= n) {
		/* the stored plan went bad (a cluster renamed, GPUs gone early) */
		const struct gl_capplan_change *s = &all[*bad];
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		rc = gl_err_set(err, GL_EINVAL, "the stored plan (%s%s%.0d) no longer holds: %s: %s", s->source,
				s->line ? ", line " : "", s->line, *field, msg);
		*field = NULL;
	}
out:
	free(all);
	free(stored);
	gl_capplan_fleet_fini(&f);
	return rc;
}

int gl_capplandb_check(struct gl_store *store, const struct gl_config *cfg, int64_t now_s, const char *source,
		       struct gl_capplan_change *extra, size_t n, size_t *bad, const char **field, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	return check_with_stored(c, cfg, now_s, source, 1, extra, n, bad, field, err);
}

static char *audit_detail(const char *source, const struct gl_capplan_change *plan, size_t n, long replaced)
{
	cJSON *d = cJSON_CreateObject(), *arr;
	char *s;
	cJSON_AddStringToObject(d, "source", source);
	cJSON_AddNumberToObject(d, "replaced", (double)replaced);
	cJSON_AddNumberToObject(d, "entries", (double)n);
	arr = cJSON_AddArrayToObject(d, "changes");
	/* the post's whole body is capped by server.max_body_bytes; the audit
	 * row keeps the first hundred entries and the count */
	for (size_t i = 0; i < n && i < 100; i++) {
		cJSON *e = cJSON_CreateObject();
		char day[16];
		gl_timeutil_format_day(plan[i].day_s, day, sizeof day);
		cJSON_AddStringToObject(e, "cluster", plan[i].cluster);
		cJSON_AddStringToObject(e, "gpu_model", plan[i].gpu_model);
		cJSON_AddNumberToObject(e, "gpus", (double)plan[i].gpus);
		cJSON_AddStringToObject(e, "date", day);
		cJSON_AddItemToArray(arr, e);
	}
	s = cJSON_PrintUnformatted(d);
	cJSON_Delete(d);
	if (!s)
		gl_oom(0);
	return s;
}

static int replace(PGconn *c, const struct gl_config *cfg, int64_t now_s, const char *source, int with_stored,
		   struct gl_capplan_change *plan, size_t n, const char *actor, size_t *bad, const char **field,
		   struct gl_err *err)
{
	PGresult *r = NULL;
	char lock[24], *detail = NULL;
	long replaced;
	int rc;

	*field = NULL;
	snprintf(lock, sizeof lock, "%lld", PLAN_LOCK_KEY);
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		return rc;
	if ((rc = gl_db_query(c, "SELECT pg_advisory_xact_lock($1::bigint)", 1, (const char *[]){lock}, NULL, err)) ||
	    (rc = check_with_stored(c, cfg, now_s, source, with_stored, plan, n, bad, field, err)) ||
	    (rc = gl_db_query(c, "DELETE FROM capacity_plan WHERE source = $1", 1, (const char *[]){source}, &r, err)))
		goto rollback;
	replaced = atol(PQcmdTuples(r));
	for (size_t i = 0; i < n; i++) {
		char gpus[24], day[16], line[16];
		snprintf(gpus, sizeof gpus, "%lld", (long long)plan[i].gpus);
		gl_timeutil_format_day(plan[i].day_s, day, sizeof day);
		snprintf(line, sizeof line, "%d", plan[i].line);
		if ((rc = gl_db_query(c,
				      "INSERT INTO capacity_plan (source, cluster, gpu_model, gpus, effective, note, config_line,"
				      " created_by) VALUES ($1, $2, $3, $4::integer, $5::date, $6, nullif($7::integer, 0), $8)",
				      8,
				      (const char *[]){source, plan[i].cluster, plan[i].gpu_model, gpus, day, plan[i].note, line,
						       actor},
				      NULL, err)))
			goto rollback;
	}
	detail = audit_detail(source, plan, n, replaced);
	if ((rc = gl_audit_append(gl_db_store(c), actor, NULL, "capacity.plan", "capacity_plan", "ok", detail, err)) ||
	    (rc = gl_db_exec(c, "COMMIT", err)))
		goto rollback;
	goto out;
rollback:
	PQclear(PQexec(c, "ROLLBACK"));
out:
	PQclear(r);
	cJSON_free(detail);
	return rc;
}

int gl_capplandb_replace(struct gl_store *store, const struct gl_config *cfg, int64_t now_s, const char *source,
			 struct gl_capplan_change *plan, size_t n, const char *actor, size_t *bad, const char **field,
			 struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	return replace(c, cfg, now_s, source, 1, plan, n, actor, bad, field, err);
}

static int cmp_change(const void *pa, const void *pb)
{
	const struct gl_capplan_change *a = pa, *b = pb;
	int d;
	if (a->day_s != b->day_s)
		return a->day_s < b->day_s ? -1 : 1;
	if ((d = strcmp(a->cluster, b->cluster)) || (d = strcmp(a->gpu_model, b->gpu_model)))
		return d;
	if (a->gpus != b->gpus)
		return a->gpus < b->gpus ? -1 : 1;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return strcmp(a->note, b->note);
}

/* 1 when the stored config part is plan[0..n) already (canonical models):
 * a restart with the same file writes nothing and reads no inventory (a
 * source's table may be locked by a run in flight). */
static int config_unchanged(PGconn *c, struct gl_capplan_change *plan, size_t n, int *same, struct gl_err *err)
{
	struct gl_capplan_change *st = NULL;
	size_t ns = 0;
	int rc;
	*same = 0;
	if ((rc = gl_capplandb_list(gl_db_store(c), "config", &st, &ns, err)))
		return rc;
	if (ns == n && (!n || !(rc = gl_capplandb_canon(gl_db_store(c), plan, n, err)))) {
		gl_qsort(plan, n, sizeof *plan, cmp_change);
		gl_qsort(st, ns, sizeof *st, cmp_change);
		*same = 1;
		for (size_t i = 0; i < n && *same; i++)
			*same = !cmp_change(&plan[i], &st[i]);
	}
	free(st);
	return rc;
}

int gl_capplandb_load_config(struct gl_store *store, const struct gl_config *cfg, const char *actor, int64_t now_s,
			     struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	struct gl_capplan_change *plan = gl_xcalloc(cfg->n_capacity_plan + 1, sizeof *plan);
	const char *field = NULL;
	size_t bad = 0;
	int rc, same = 0;

	for (size_t i = 0; i < cfg->n_capacity_plan; i++) {
		const struct gl_config_capacity_plan *e = &cfg->capacity_plan[i];
		struct gl_capplan_change *p = &plan[i];
		snprintf(p->cluster, sizeof p->cluster, "%s", e->cluster);
		snprintf(p->gpu_model, sizeof p->gpu_model, "%s", e->gpu_model);
		snprintf(p->note, sizeof p->note, "%s", e->note);
		snprintf(p->source, sizeof p->source, "config");
		p->gpus = !strcmp(e->action, "retire") ? -e->gpus : e->gpus;
		p->line = e->line;
		/* the form was checked at load */
		if (gl_timeutil_parse(e->date, strlen(e->date), &p->day_s))
			p->day_s = 0;
	}
	if ((rc = config_unchanged(c, plan, cfg->n_capacity_plan, &same, err)) || same)
		goto out;
	/* the entries in file order again, for the messages' indexes */
	for (size_t i = 0; i < cfg->n_capacity_plan; i++)
		for (size_t j = i; j < cfg->n_capacity_plan; j++)
			if (plan[j].line == cfg->capacity_plan[i].line) {
				struct gl_capplan_change t = plan[i];
				plan[i] = plan[j];
				plan[j] = t;
				break;
			}
	rc = replace(c, cfg, now_s, "config", 1, plan, cfg->n_capacity_plan, actor, &bad, &field, err);
	if (rc == -GL_EINVAL && !field) {
		/* a plan posted earlier went stale (the inventory changed): it
		 * keeps no daemon from starting; the forecast says so */
		gl_log(GL_LOG_WARN, "capacity plan: %s", err->msg);
		rc = replace(c, cfg, now_s, "config", 0, plan, cfg->n_capacity_plan, actor, &bad, &field, err);
	}
	if (rc && field) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		rc = gl_err_set(err, GL_ECONFIG, "%s:%d: capacity_plan[%zu].%s: %s", cfg->path, plan[bad].line, bad, field,
				msg);
	}
out:
	free(plan);
	return rc;
}

/* The values of a cluster/model in a series keyed "cluster/model" (jobs
 * carry the model lowercased, inventories as reported), or NULL. */
static const double *series_of(const struct gl_fcseries *f, const struct gl_capplan_key *k)
{
	char key[300];
	const double *v = NULL;
	snprintf(key, sizeof key, "%s/%s", k->cluster, k->gpu_model);
	for (size_t j = 0; j < f->n; j++)
		if (!strcasecmp(f->s[j].key, key))
			v = f->s[j].v;
	return v;
}

/* Series keys are "cluster/model"; a cluster name may hold a '/' itself, so
 * the key is split after the longest cluster name it starts with, not at its
 * first '/'. */
static int demand_keys(struct gl_store *store, const struct gl_fcseries *const *fs, int nfs, const char *cluster,
		       struct gl_capplan_demand *d, struct gl_err *err)
{
	char **names = NULL;
	size_t n_names = 0;
	int rc;
	if ((rc = gl_inventory_cluster_names(store, &names, &n_names, err)))
		return rc;
	for (int which = 0; which < nfs; which++)
		for (size_t i = 0; i < fs[which]->n; i++) {
			const char *cl = NULL, *key = fs[which]->s[i].key;
			size_t len = 0;
			for (size_t r = 0; r < n_names && !cl; r++) {
				len = strlen(names[r]);
				if (!strncmp(key, names[r], len) && key[len] == '/')
					cl = names[r];
			}
			if (cl && (!cluster || !strcmp(cl, cluster)))
				gl_capplan_demand_key(d, cl, key + len + 1);
		}
	free(names);
	return 0;
}

int gl_capplandb_demand(struct gl_store *store, const struct gl_window *window, const char *cluster, int64_t now_s,
			struct gl_capplan_demand *d, struct gl_err *err)
{
	size_t nh = (size_t)((window->end_s - window->start_s) / 3600), ncap = 0;
	struct gl_window *hours = gl_xcalloc(nh ? nh : 1, sizeof *hours);
	/* the GPUs available in the window's last hour: a day's average would
	 * understate an inventory that began during that day (a new
	 * deployment's first day) and raise a false saturation alarm */
	struct gl_window last_hour = {window->end_s - 3600, window->end_s};
	struct gl_fcseries alloc = {0}, pend = {0}, pmin = {0};
	struct gl_capacity_row *caps = NULL;
	const char *dims[2] = {"cluster", "gpu_model"};
	int rc;

	memset(d, 0, sizeof *d);
	d->nd = nh / 24;
	d->start_s = window->start_s;
	for (size_t i = 0; i < nh; i++)
		hours[i] = (struct gl_window){window->start_s + 3600 * (int64_t)i, window->start_s + 3600 * (int64_t)(i + 1)};
	if ((rc = gl_fcseries_query(store, GL_FCSERIES_GPU_HOURS, hours, nh, dims, 2, NULL, now_s, &alloc, err)) ||
	    (rc = gl_fcseries_query_pending(store, hours, nh, dims, 2, now_s, &pend, &pmin, err)) ||
	    (rc = gl_capstore_query(store, &last_hour, 1, GL_CAPACITY_AGG_MODEL, cluster, now_s, &fleet_as_listed, &caps, &ncap,
					       err)) ||
	    (rc = demand_keys(store, (const struct gl_fcseries *[]){&alloc, &pend}, 2, cluster, d, err)))
		goto out;
	for (size_t i = 0; i < ncap; i++) {
		const struct gl_capacity_row *r = &caps[i];
		struct gl_capplan_key *k = gl_capplan_demand_key(d, r->cluster, r->key[0] ? r->key : "unknown");
		int64_t avail = r->reported_gpu_seconds - r->down_gpu_seconds - r->planned_down_gpu_seconds;
		/* the inventory's spelling of the model wins */
		snprintf(k->gpu_model, sizeof k->gpu_model, "%s", r->key[0] ? r->key : "unknown");
		/* nothing reported: no inventory for it, capacity unknown (not 0) */
		if (r->reported_gpu_seconds > 0)
			k->capacity = (double)(avail > 0 ? avail : 0) / 3600.0;
	}
	for (size_t i = 0; i < d->nk; i++) {
		struct gl_capplan_key *k = &d->keys[i];
		const double *a = series_of(&alloc, k), *p = series_of(&pend, k), *m = series_of(&pmin, k);
		for (size_t j = 0; j < ncap; j++)
			k->cluster_inventory |= !strcmp(caps[j].cluster, k->cluster) && caps[j].reported_gpu_seconds > 0;
		/* hourly demand: allocated (GPU-hours in an hour = mean GPUs) + pending */
		for (size_t h = 0; h < d->nd * 24; h++) {
			double v = (a ? a[h] : 0) + (p ? p[h] : 0);
			struct gl_forecast_satday *sd = &k->sat[h / 24];
			if (v > k->peak[h / 24])
				k->peak[h / 24] = v;
			if (!m)
				continue;
			sd->pending_minutes += m[h];
			if (h % 24 >= 21)
				sd->pending_minutes_last3h += m[h];
			if (h % 24 == 23)
				sd->pending_minutes_last1h += m[h];
		}
	}
out:
	free(hours);
	free(caps);
	gl_fcseries_fini(&alloc);
	gl_fcseries_fini(&pend);
	gl_fcseries_fini(&pmin);
	if (rc)
		gl_capplan_demand_fini(d);
	return rc;
}
