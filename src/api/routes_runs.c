/* /v1/runs and /v1/runs/{id}: training runs (docs/runs.md), JSON or CSV.
 * Parameters -> the store reads the window's jobs with the ledger's
 * per-job figures and the domain groups them -> render. */
#include "gl/apijson.h"
#include "gl/config.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/jsonw.h"
#include "gl/routes.h"
#include "gl/rundb.h"
#include "gl/runs.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* aggregate= values and the run field each reads (the run's first job's) */
static const char *const agg_names[] = {"user", "account", "cluster", "partition", "namespace", "kind", NULL};

/* The list's page: the default keeps an answer bounded, the largest is
 * the answer the server allows (server.max_answer_lines). */
#define RUNS_PAGE 1000

struct runs_params {
	struct gl_window window;
	int agg;            /* index into agg_names, -1: one item per run */
	const char *state;  /* NULL: any */
	int csv;
	long long limit;    /* the list's page: at most this many runs (0: all, /v1/runs/{id}) */
	long long cursor;   /* the runs after the one at this place of the list; -1: from the first */
	long long fresh;    /* 1: grouped from the jobs now, never the month so far as built */
};

/* limit and cursor: the list's only (an aggregate is one item a value). */
static int page_params(struct gl_req *req, struct gl_resp *resp, struct runs_params *p)
{
	long long max = req->cfg->http_max_answer_lines > 0 ? req->cfg->http_max_answer_lines : INT32_MAX;
	int rc;
	if (p->agg >= 0) {
		const char *bad = gl_req_param(req, "limit") ? "limit" : gl_req_param(req, "cursor") ? "cursor" : NULL;
		if (bad)
			return gl_resp_error(resp, GL_EINVAL, bad, "%s: pages the list of runs; an aggregate is whole", bad);
		return 0;
	}
	if ((rc = gl_apijson_int_param(req, resp, "limit", max < RUNS_PAGE ? max : RUNS_PAGE, 1, max, &p->limit)))
		return rc;
	return gl_apijson_int_param(req, resp, "cursor", -1, 0, INT64_MAX, &p->cursor);
}

static int parse_params(struct gl_req *req, struct gl_resp *resp, struct runs_params *p, int detail)
{
	const char *agg = gl_req_param(req, "aggregate");
	int rc;

	memset(p, 0, sizeof *p);
	p->agg = -1;
	p->cursor = -1;
	if ((rc = gl_apijson_window(req, resp, "month", &p->window)))
		return rc;
	if (!detail && agg && strcmp(agg, "run")) {
		for (int i = 0; agg_names[i]; i++)
			if (!strcmp(agg, agg_names[i]))
				p->agg = i;
		if (p->agg < 0)
			return gl_resp_error(resp, GL_EINVAL, "aggregate",
					     "aggregate: '%s' is not one of run, user, account, cluster, partition, namespace, kind",
					     agg);
	}
	p->state = detail ? NULL : gl_req_param(req, "state");
	if (p->state && (!*p->state || strspn(p->state, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_") !=
						       strlen(p->state)))
		return gl_resp_error(resp, GL_EINVAL, "state",
				     "state: '%s' is not a job state (COMPLETED, FAILED, RUNNING, PENDING, ...)", p->state);
	if (!detail &&
	    ((rc = page_params(req, resp, p)) || (rc = gl_apijson_int_param(req, resp, "fresh", 0, 0, 1, &p->fresh))))
		return rc;
	return gl_apijson_format(req, resp, &p->csv);
}

/* The run's state, its first word, equals state= (any case). */
static int state_matches(const struct gl_runs_run *r, const char *state)
{
	size_t n = strcspn(r->state, " ");
	return !state || (strlen(state) == n && !strncasecmp(r->state, state, n));
}

static const char *agg_value(const struct gl_runs_run *r, const struct gl_runs_job *j, int agg)
{
	const char *v[] = {j->user_name, j->account, j->cluster, j->partition, j->namespace_, r->kind};
	return v[agg] ? v[agg] : "";
}

/* A run's place in the window's list: a built month's page says it, a
 * live answer holds the whole list. */
static int64_t run_ord(const struct gl_rundb *db, size_t i)
{
	return db->ord ? db->ord[i] : (int64_t)i;
}

struct page {
	size_t *idx;  /* the page's runs, indices into the answer's runs */
	size_t n;
	int64_t next; /* the next page's cursor, -1: this is the last */
};

/* The runs of the page: a built month's answer is the page already (read
 * by its key), a live one the whole list, cut here in the same order. */
static void page_of(const struct gl_rundb *db, const struct runs_params *p, struct page *pg)
{
	size_t i = db->ord || p->cursor < 0 ? 0
		   : (uint64_t)p->cursor < db->runs.n ? (size_t)p->cursor + 1
						      : db->runs.n;
	pg->idx = gl_xcalloc(db->runs.n + 1, sizeof *pg->idx);
	pg->n = 0;
	pg->next = -1;
	for (; i < db->runs.n; i++) {
		if (!state_matches(&db->runs.runs[i], p->state))
			continue;
		if (pg->n == (size_t)p->limit)
			break;
		pg->idx[pg->n++] = i;
	}
	if (pg->n && (i < db->runs.n || db->more))
		pg->next = run_ord(db, pg->idx[pg->n - 1]);
}

/* The figures a run and a group of runs share. */
static void w_figures(struct gl_jsonw *w, const struct gl_runs_run *r, int minor)
{
	gl_jsonw_i64(w, "attempts", r->attempts);
	gl_jsonw_i64(w, "jobs", r->jobs);
	gl_jsonw_i64(w, "gpu_seconds", r->gpu_s);
	gl_jsonw_i64(w, "unpriced_gpu_seconds", r->unpriced_s);
	gl_jsonw_i64(w, "unobserved_gpu_seconds", r->unobserved_s);
	gl_apijson_w_money(w, "cost", r->cost_micros, minor);
	gl_apijson_w_money(w, "failed_attempts_cost", r->failed_cost_micros, minor);
	gl_jsonw_i64(w, "failed_attempts_gpu_seconds", r->failed_gpu_s);
	gl_apijson_w_f8(w, "busy_gpu_seconds", r->busy_s, r->observed_s <= 0);
	gl_apijson_w_f8(w, "idle_in_allocation_gpu_seconds", r->idle_s, r->observed_s <= 0);
	gl_jsonw_i64(w, "queue_seconds", r->queue_s);
}

/* A run's members of the open object. */
static void w_run(struct gl_jsonw *w, const struct gl_runs_run *r, const struct gl_rundb *db, int minor)
{
	const struct gl_runs_job *j = &db->jobs[r->first];
	gl_jsonw_str(w, "id", r->id);
	gl_jsonw_str(w, "key", r->key);
	gl_jsonw_str(w, "kind", r->kind);
	gl_jsonw_str(w, "cluster", j->cluster);
	gl_jsonw_str(w, "user", j->user_name);
	gl_jsonw_str(w, "account", j->account);
	gl_jsonw_str(w, "namespace", j->namespace_);
	gl_jsonw_str(w, "name", j->name);
	gl_jsonw_time(w, "first_submit", r->first_submit_s);
	gl_jsonw_time(w, "last_end", r->last_end_s);
	gl_jsonw_str(w, "state", r->state);
	w_figures(w, r, minor);
}

struct agg_ref {
	const char *v;
	const struct gl_runs_run *r;
};

/* Ties in the list's order: a group's float sums are added in it, as a
 * built month's are (ORDER BY ord), and C's qsort need not be stable
 * (musl's is not; glibc's falls back to an unstable one for a large
 * array). */
static int cmp_ref(const void *a, const void *b)
{
	const struct agg_ref *x = a, *y = b;
	int c = strcmp(x->v, y->v);
	return c ? c : (x->r > y->r) - (x->r < y->r);
}

static void add_run(struct gl_runs_run *g, const struct gl_runs_run *r)
{
	g->attempts += r->attempts;
	g->jobs += r->jobs;
	g->gpu_s += r->gpu_s;
	g->unpriced_s += r->unpriced_s;
	g->unobserved_s += r->unobserved_s;
	g->cost_micros += r->cost_micros;
	g->failed_cost_micros += r->failed_cost_micros;
	g->failed_gpu_s += r->failed_gpu_s;
	g->busy_s += r->busy_s;
	g->idle_s += r->idle_s;
	g->observed_s += r->observed_s;
	g->queue_s += r->queue_s;
}

/* Runs summed by the aggregate's value, in the order of the values (a
 * sort: 250,000 runs of 2,000 users looked up one by one were half a
 * billion comparisons). */
static size_t group_runs(const struct gl_rundb *db, const struct runs_params *p, struct gl_runs_run **out,
			 const char ***names, int64_t **counts)
{
	struct agg_ref *ref = gl_xcalloc(db->runs.n + 1, sizeof *ref);
	size_t n = 0, k = 0;
	*out = gl_xcalloc(db->runs.n + 1, sizeof **out);
	*names = gl_xcalloc(db->runs.n + 1, sizeof **names);
	*counts = gl_xcalloc(db->runs.n + 1, sizeof **counts);
	for (size_t i = 0; i < db->runs.n; i++) {
		const struct gl_runs_run *r = &db->runs.runs[i];
		if (state_matches(r, p->state))
			ref[k++] = (struct agg_ref){agg_value(r, &db->jobs[r->first], p->agg), r};
	}
	gl_qsort(ref, k, sizeof *ref, cmp_ref);
	for (size_t i = 0; i < k; i++) {
		if (!n || strcmp((*names)[n - 1], ref[i].v))
			(*names)[n++] = ref[i].v;
		(*counts)[n - 1] += db->n_runs ? db->n_runs[ref[i].r - db->runs.runs] : 1;
		add_run(&(*out)[n - 1], ref[i].r);
	}
	free(ref);
	return n;
}

/* The head every JSON answer of the route starts with: the month so far
 * as built says the time it reaches. */
static void w_head(struct gl_jsonw *w, const struct runs_params *p, const struct gl_rundb *db, const char *currency,
		   int64_t now_s)
{
	gl_jsonw_object(w, NULL);
	gl_apijson_w_window(w, "window", &p->window);
	gl_jsonw_str(w, "aggregate", p->agg < 0 ? "run" : agg_names[p->agg]);
	gl_jsonw_str(w, "currency", currency);
	if (db->as_of_s) {
		gl_jsonw_time(w, "as_of", db->as_of_s);
		gl_jsonw_i64(w, "age_seconds", now_s > db->as_of_s ? now_s - db->as_of_s : 0);
	}
}

/* An aggregate's answer: one item a value (the values of a month, held). */
static void render_json(struct gl_resp *resp, const struct runs_params *p, const struct gl_rundb *db,
			const char *currency, int64_t now_s)
{
	struct gl_jsonw w;
	int minor = gl_cost_minor(currency);
	struct gl_runs_run *g;
	const char **names;
	int64_t *counts;
	size_t count = group_runs(db, p, &g, &names, &counts);
	gl_jsonw_init(&w, &resp->body);
	w_head(&w, p, db, currency, now_s);
	gl_jsonw_array(&w, "items");
	for (size_t i = 0; i < count; i++) {
		gl_jsonw_object(&w, NULL);
		gl_jsonw_str(&w, agg_names[p->agg], names[i]);
		gl_jsonw_i64(&w, "runs", counts[i]);
		w_figures(&w, &g[i], minor);
		gl_jsonw_end(&w);
	}
	gl_jsonw_end(&w);
	gl_jsonw_i64(&w, "count", (int64_t)count);
	free(g);
	free(names);
	free(counts);
	gl_jsonw_end(&w);
	gl_strbuf_putc(&resp->body, '\n');
	resp->content_type = "application/json";
}

static const char *const csv_cols[] = {"attempts", "jobs", "gpu_seconds", "unpriced_gpu_seconds",
				       "unobserved_gpu_seconds", "cost", "failed_attempts_cost",
				       "failed_attempts_gpu_seconds", "busy_gpu_seconds",
				       "idle_in_allocation_gpu_seconds", "queue_seconds", NULL};

static void csv_figures(struct gl_strbuf *o, const struct gl_runs_run *r, int minor)
{
	gl_apijson_csv_int(o, r->attempts, 0);
	gl_apijson_csv_int(o, r->jobs, 0);
	gl_apijson_csv_int(o, r->gpu_s, 0);
	gl_apijson_csv_int(o, r->unpriced_s, 0);
	gl_apijson_csv_int(o, r->unobserved_s, 0);
	gl_apijson_csv_money(o, r->cost_micros, 0, minor);
	gl_apijson_csv_money(o, r->failed_cost_micros, 0, minor);
	gl_apijson_csv_int(o, r->failed_gpu_s, 0);
	gl_apijson_csv_f8(o, r->busy_s, r->observed_s <= 0);
	gl_apijson_csv_f8(o, r->idle_s, r->observed_s <= 0);
	gl_apijson_csv_int(o, r->queue_s, 0);
	gl_csv_end(o);
}

static void render_csv(struct gl_resp *resp, const struct runs_params *p, const struct gl_rundb *db, int minor)
{
	struct gl_strbuf *o = &resp->body;
	struct gl_runs_run *g;
	const char **names;
	int64_t *counts;
	size_t n = group_runs(db, p, &g, &names, &counts);
	gl_csv_field(o, agg_names[p->agg]);
	gl_csv_field(o, "runs");
	gl_apijson_csv_header(o, csv_cols);
	for (size_t i = 0; i < n; i++) {
		gl_csv_field(o, names[i]);
		gl_apijson_csv_int(o, counts[i], 0);
		csv_figures(o, &g[i], minor);
	}
	free(g);
	free(names);
	free(counts);
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("runs.csv"));
}

/* The list's answer, written piece by piece as it is sent (250,000 runs
 * are 146 MB of JSON: never held whole). It holds the runs read. */
struct list_out {
	struct runs_params p;
	struct gl_rundb db;
	struct page pg;
	size_t k;   /* the page's next run to write */
	int head, minor;
	struct gl_jsonw w;
	char *currency;
	int64_t now_s;
};

static void list_out_fini(void *state)
{
	struct list_out *o = state;
	gl_rundb_fini(&o->db);
	free(o->pg.idx);
	free(o->currency);
	free(o);
}

static void csv_run(struct gl_strbuf *o, const struct gl_runs_run *r, const struct gl_rundb *db, int minor)
{
	const struct gl_runs_job *j = &db->jobs[r->first];
	const char *v[] = {r->id, r->key, r->kind, j->cluster, j->user_name, j->account, j->namespace_, j->name};
	for (size_t k = 0; k < GL_ARRAY_LEN(v); k++)
		gl_csv_field(o, v[k] ? v[k] : "");
	gl_apijson_csv_time(o, r->first_submit_s);
	gl_apijson_csv_time(o, r->last_end_s);
	gl_csv_field(o, r->state);
	csv_figures(o, r, minor);
}

static int list_csv_next(void *state, struct gl_strbuf *out)
{
	static const char *const run_head[] = {"id", "key", "kind", "cluster", "user", "account", "namespace", "name",
					       "first_submit", "last_end", "state", NULL};
	struct list_out *o = state;
	if (!o->head) {
		for (size_t k = 0; run_head[k]; k++)
			gl_csv_field(out, run_head[k]);
		gl_apijson_csv_header(out, csv_cols);
		o->head = 1;
	}
	while (out->len < GL_RESP_CHUNK && o->k < o->pg.n)
		csv_run(out, &o->db.runs.runs[o->pg.idx[o->k++]], &o->db, o->minor);
	return o->k < o->pg.n;
}

static int list_json_next(void *state, struct gl_strbuf *out)
{
	struct list_out *o = state;
	o->w.out = out;
	if (!o->head) {
		w_head(&o->w, &o->p, &o->db, o->currency, o->now_s);
		gl_jsonw_array(&o->w, "runs");
		o->head = 1;
	}
	while (out->len < GL_RESP_CHUNK && o->k < o->pg.n) {
		gl_jsonw_object(&o->w, NULL);
		w_run(&o->w, &o->db.runs.runs[o->pg.idx[o->k++]], &o->db, o->minor);
		gl_jsonw_end(&o->w);
	}
	if (o->k < o->pg.n)
		return 1;
	gl_jsonw_end(&o->w);
	gl_jsonw_i64(&o->w, "count", (int64_t)o->pg.n);
	if (o->pg.next >= 0)
		gl_jsonw_i64(&o->w, "next_cursor", o->pg.next);
	else
		gl_jsonw_null(&o->w, "next_cursor");
	gl_jsonw_end(&o->w);
	gl_strbuf_putc(out, '\n');
	return 0;
}

/* The page is cut before the answer starts, so its next cursor (CSV's is
 * a header, sent first) is known. The answer takes the runs: *db is left
 * empty. */
static void stream_list(struct gl_req *req, struct gl_resp *resp, const struct runs_params *p, struct gl_rundb *db)
{
	struct list_out *o = gl_xcalloc(1, sizeof *o);
	o->p = *p;
	o->db = *db;
	memset(db, 0, sizeof *db);
	o->minor = gl_cost_minor(req->cfg->currency);
	o->currency = gl_xstrdup(req->cfg->currency);
	o->now_s = req->now_s;
	page_of(&o->db, &o->p, &o->pg);
	gl_jsonw_init(&o->w, NULL);
	if (p->csv) {
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("runs.csv"));
		/* CSV has no room for the cursor: the next page's is a header, as
		 * /v1/jobs sends it */
		if (o->pg.next >= 0) {
			snprintf(resp->header_buf, sizeof resp->header_buf, "%lld", (long long)o->pg.next);
			gl_apijson_add_header(resp, "X-Next-Cursor", resp->header_buf);
		}
		gl_resp_set_stream(resp, list_csv_next, list_out_fini, o);
		return;
	}
	resp->content_type = "application/json";
	gl_resp_set_stream(resp, list_json_next, list_out_fini, o);
}

/* The runs of the window, or -rc after the error answer: a built month's,
 * or the month in progress's so far, as the rollup built them (sql/131,
 * sql/138) unless the runs' members or fresh=1 are wanted, else grouped
 * from the jobs. */
static int load(struct gl_req *req, struct gl_resp *resp, const struct runs_params *p, int members, struct gl_rundb *db)
{
	static const char *const agg_cols[] = {"user_name", "account", "cluster", "partition", "namespace_", "kind"};
	struct gl_rundb_query q = {p->window.start_s, p->window.end_s, req->now_s, NULL, 0, NULL, 0,
				   p->agg < 0 ? NULL : agg_cols[p->agg], p->state, p->cursor, (size_t)p->limit};
	struct gl_runs_rule *rules;
	struct gl_err err = {0};
	struct gl_store *st;
	int rc, hit = 0;

	gl_config_run_rules(req->cfg, &rules, &q.n_rules);
	q.rules = rules;
	/* a scoped token sees the runs of its own jobs */
	q.scope = gl_req_scope(req, &q.n_scope);
	if ((rc = gl_req_store(req, &st, &err)) || (!members && !p->fresh && (rc = gl_rundb_month(st, &q, db, &hit, &err))) ||
	    (!hit && (rc = gl_rundb_runs(st, &q, db, &err))))
		rc = gl_resp_error(resp, rc, NULL, "%s", err.msg[0] ? err.msg : "runs failed");
	free(rules);
	return rc;
}

/* The month so far as built: the time it reaches and its age, in CSV too. */
static void as_of_headers(struct gl_resp *resp, int64_t as_of_s, int64_t now_s)
{
	gl_timeutil_format(as_of_s, resp->header_text, sizeof resp->header_text);
	gl_apijson_add_header(resp, "X-As-Of", resp->header_text);
	gl_apijson_add_header_num(resp, "X-Age-Seconds", now_s > as_of_s ? now_s - as_of_s : 0);
}

int gl_route_runs(struct gl_req *req, struct gl_resp *resp)
{
	struct runs_params p;
	struct gl_rundb db = {0};
	int rc;

	if ((rc = parse_params(req, resp, &p, 0)) || (rc = load(req, resp, &p, 0, &db)))
		goto out;
	if (db.as_of_s)
		as_of_headers(resp, db.as_of_s, req->now_s);
	if (p.agg < 0)
		stream_list(req, resp, &p, &db);
	else if (p.csv)
		render_csv(resp, &p, &db, gl_cost_minor(req->cfg->currency));
	else
		render_json(resp, &p, &db, req->cfg->currency, req->now_s);
out:
	gl_rundb_fini(&db);
	return rc;
}

static void w_job(struct gl_jsonw *w, const struct gl_runs_job *j, int minor)
{
	gl_jsonw_object(w, NULL);
	gl_jsonw_str(w, "cluster", j->cluster);
	gl_jsonw_str(w, "job_id", j->job_id);
	gl_jsonw_str(w, "name", j->name);
	gl_jsonw_str(w, "user", j->user_name);
	gl_jsonw_str(w, "account", j->account);
	gl_jsonw_str(w, "namespace", j->namespace_);
	gl_jsonw_str(w, "state", j->state);
	gl_jsonw_bool(w, "failed_attempt", gl_runs_attempt_failed(j->state));
	gl_jsonw_time(w, "submit", j->submit_s);
	gl_jsonw_time(w, "start", j->start_s);
	gl_jsonw_time(w, "end", j->end_s);
	gl_apijson_w_int(w, "queue_seconds", j->queue_wait_s, j->queue_wait_s < 0);
	gl_jsonw_i64(w, "gpu_seconds", j->gpu_s);
	gl_jsonw_i64(w, "unobserved_gpu_seconds", j->unobserved_s);
	gl_apijson_w_money(w, "cost", j->cost_micros, minor);
	gl_apijson_w_f8(w, "idle_in_allocation_gpu_seconds", j->idle_s, j->observed_s <= 0);
	gl_jsonw_end(w);
}

int gl_route_run(struct gl_req *req, struct gl_resp *resp)
{
	const char *id = req->path + strlen("/v1/runs/");
	struct runs_params p;
	struct gl_rundb db = {0};
	const struct gl_runs_run *r = NULL;
	int minor = gl_cost_minor(req->cfg->currency), rc;

	/* a bad parameter is 400 whatever the id, as on every route */
	if ((rc = parse_params(req, resp, &p, 1)))
		goto out;
	if (strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16) {
		rc = gl_resp_error(resp, GL_ENOTFOUND, NULL, "no run '%s' (the ids are those of /v1/runs)", id);
		goto out;
	}
	if ((rc = load(req, resp, &p, 1, &db)))
		goto out;
	for (size_t i = 0; i < db.runs.n && !r; i++)
		if (!strcmp(db.runs.runs[i].id, id))
			r = &db.runs.runs[i];
	if (!r) {
		rc = gl_resp_error(resp, GL_ENOTFOUND, NULL, "no run '%s' with jobs in the window", id);
		goto out;
	}
	if (p.csv) {
		static const char *const head[] = {"job_id", "cluster", "state", "submit", "start", "end", "gpu_seconds",
						   "cost", "failed_attempt", NULL};
		gl_apijson_csv_header(&resp->body, head);
		for (size_t i = 0; i < r->n_members; i++) {
			const struct gl_runs_job *j = &db.jobs[r->members[i]];
			gl_csv_field(&resp->body, j->job_id ? j->job_id : "");
			gl_csv_field(&resp->body, j->cluster ? j->cluster : "");
			gl_csv_field(&resp->body, j->state ? j->state : "");
			gl_apijson_csv_time(&resp->body, j->submit_s);
			gl_apijson_csv_time(&resp->body, j->start_s);
			gl_apijson_csv_time(&resp->body, j->end_s);
			gl_apijson_csv_int(&resp->body, j->gpu_s, 0);
			gl_apijson_csv_money(&resp->body, j->cost_micros, 0, minor);
			gl_csv_field(&resp->body, gl_runs_attempt_failed(j->state) ? "true" : "false");
			gl_csv_end(&resp->body);
		}
		gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("run.csv"));
	} else {
		struct gl_jsonw w;
		gl_jsonw_init(&w, &resp->body);
		gl_jsonw_object(&w, NULL);
		w_run(&w, r, &db, minor);
		gl_apijson_w_window(&w, "window", &p.window);
		gl_jsonw_str(&w, "currency", req->cfg->currency);
		gl_jsonw_array(&w, "members");
		for (size_t i = 0; i < r->n_members; i++)
			w_job(&w, &db.jobs[r->members[i]], minor);
		gl_jsonw_end(&w);
		gl_jsonw_end(&w);
		gl_strbuf_putc(&resp->body, '\n');
		resp->content_type = "application/json";
	}
out:
	gl_rundb_fini(&db);
	return rc;
}
