/* Serving ingest (see include/gl/serving_ingest.h, docs/serving.md). */
#include "gl/serving_ingest.h"
#include "gl/increase.h"
#include "gl/ingest.h"
#include "gl/log.h"
#include "gl/servemetrics.h"
#include "gl/txn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gl_serving_ingest_batch {
	struct gl_servingdb_batch *db;
	struct gl_ingest_stats st;
	int64_t bad_lines, bad_values, failed;
};

void gl_serving_ingest_opts_init(struct gl_serving_ingest_opts *o, const struct gl_config *cfg, const char *cluster)
{
	memset(o, 0, sizeof *o);
	o->cluster = cluster;
	o->input_name = "";
	o->bucket_s = cfg->bucket_s;
	/* a pod the kube source has not read yet shows up within a few of its
	 * intervals; a day covers a source that was down for hours */
	o->claim_s = 86400;
	o->max_skip_reasons = cfg->ingest_max_skip_reasons;
}

struct gl_serving_ingest_batch *gl_serving_ingest_batch_new(int64_t at_s, int64_t bucket_s, int64_t max_skip_reasons)
{
	struct gl_serving_ingest_batch *b = gl_xcalloc(1, sizeof *b);
	b->db = gl_servingdb_batch_new(at_s, bucket_s);
	gl_ingest_stats_init(&b->st, max_skip_reasons);
	return b;
}

void gl_serving_ingest_batch_free(struct gl_serving_ingest_batch *b)
{
	if (!b)
		return;
	gl_servingdb_batch_free(b->db);
	gl_ingest_stats_fini(&b->st);
	free(b);
}

size_t gl_serving_ingest_batch_series(const struct gl_serving_ingest_batch *b)
{
	return b->db->n;
}

void gl_serving_ingest_batch_fail(struct gl_serving_ingest_batch *b, const char *input, const char *why)
{
	char reason[600];
	b->failed++;
	/* the run's reasons name the target (a parse error names it already) */
	if (!strncmp(why, input, strlen(input)))
		snprintf(reason, sizeof reason, "%s", why);
	else
		snprintf(reason, sizeof reason, "%s: %s", input, why);
	gl_ingest_stats_skip(&b->st, input, 0, reason);
}

/* The series' stream and place: a series the scrape labels with its pod
 * (a federated scrape) runs on that pod, unless the source named one. */
static void series_where(const struct gl_serving_ingest_scrape_in *in, const struct gl_servemetrics_series *x,
			 struct gl_servingdb_where *w, char *instance, size_t n)
{
	*w = in->where;
	snprintf(instance, n, "%s", in->instance ? in->instance : "");
	if (!w->kind && x->pod[0]) {
		w->kind = "pod";
		w->ns = x->namespace_;
		w->name = x->pod;
	}
	if (x->pod[0])
		snprintf(instance, n, "pod:%s/%s", x->namespace_, x->pod);
}

int gl_serving_ingest_batch_add(struct gl_serving_ingest_batch *b, const struct gl_serving_ingest_scrape_in *in, const char *text,
			 size_t len, struct gl_err *err)
{
	struct gl_servemetrics_scrape s;
	int rc = gl_servemetrics_parse(&s, text, len, in->default_model, err);
	const char *input = in->input ? in->input : "";

	b->st.lines_read += (int64_t)s.parse.lines;
	if (rc) {
		gl_err_prefix(err, "%s: ", input);
		goto out;
	}
	for (size_t i = 0; i < s.parse.nbad; i++)
		gl_ingest_stats_skip(&b->st, input, (int64_t)s.parse.bad[i].line, s.parse.bad[i].reason);
	/* lines past the ones remembered are counted all the same */
	for (size_t i = s.parse.nbad; i < s.parse.bad_lines; i++)
		gl_ingest_stats_skip(&b->st, input, 0, "bad line");
	b->bad_lines += (int64_t)s.parse.bad_lines;
	if (s.bad_values) {
		char why[160];
		snprintf(why, sizeof why, "%zu serving samples with a value that is no count (negative, NaN, text): left out",
			 s.bad_values);
		gl_ingest_stats_skip(&b->st, input, (int64_t)s.first_bad_value_line, why);
		b->bad_values += (int64_t)s.bad_values;
	}
	for (size_t i = 0; i < s.n; i++) {
		const struct gl_servemetrics_series *x = &s.series[i];
		struct gl_servingdb_where w;
		char instance[600], why[300];
		if (x->hist_problem) {
			snprintf(why, sizeof why, "model %s: %s: its latency is left out", x->model_name, x->hist_problem);
			gl_ingest_stats_skip(&b->st, input, 0, why);
		}
		series_where(in, x, &w, instance, sizeof instance);
		gl_servingdb_batch_add(b->db, in->endpoint, in->cluster, instance, x, &w);
	}
out:
	gl_servemetrics_fini(&s);
	return rc;
}

static void flag(struct gl_serving_ingest_batch *b, const struct gl_servingdb_row *x, const struct gl_increase_result *r)
{
	char why[400];
	const char *what = r->first_backwards < GL_SERVEMETRICS__NCTR ? gl_servemetrics_counter_name(r->first_backwards)
							      : "a latency bucket";
	snprintf(why, sizeof why,
		 "endpoint %s, model %s (%s): %s went from %.17g down to %.17g with no sign of a restart: counted 0, "
		 "and counted from %.17g on (%zu counters)",
		 x->endpoint, x->model_name, x->instance, what, r->back_from, r->back_to, r->back_from, r->backwards);
	gl_ingest_stats_skip(&b->st, x->instance, 0, why);
}

/* The domain's step for every loaded row: the increases, the state to
 * keep, and what the run says about them. */
static void compute(struct gl_serving_ingest_batch *b, struct gl_serving_ingest_result *res)
{
	struct gl_servingdb_batch *db = b->db;
	for (size_t i = 0; i < db->n; i++) {
		struct gl_servingdb_row *x = &db->rows[i];
		struct gl_increase_series s = {x->have_state, x->state_at_s, x->state_start_s, x->state_job_pk,
					       GL_SERVINGDB_NCTR + x->nle, x->hw};
		struct gl_increase_obs o = {db->at_s, x->start_s, x->job_pk, x->job_start_s, x->endpoint_prev_s, x->cur};
		struct gl_increase_result r = {.inc = x->inc};
		size_t j = 0;
		while (j < i && db->rows[j].series_id != x->series_id)
			j++;
		if (j < i || !x->series_id) {
			/* two targets that are one stream (the same instance
			 * named twice): the first one counts */
			res->duplicates++;
			continue;
		}
		gl_increase_step(&s, &o, &r);
		x->apply = r.kind != GL_INCREASE_STALE;
		x->counted = r.kind == GL_INCREASE_COUNTED || r.kind == GL_INCREASE_RESET || r.kind == GL_INCREASE_NEW;
		x->state_start_s = s.start_s;
		x->state_job_pk = s.job_pk;
		res->counted += r.kind == GL_INCREASE_COUNTED;
		res->resets += r.kind == GL_INCREASE_RESET;
		res->new_processes += r.kind == GL_INCREASE_NEW;
		res->baseline += r.kind == GL_INCREASE_BASELINE;
		res->stale += r.kind == GL_INCREASE_STALE;
		if (r.backwards) {
			res->flagged++;
			flag(b, x, &r);
		}
		if (x->apply && !x->job_pk) {
			res->unattributed++;
			gl_log(GL_LOG_DEBUG, "serving: endpoint %s, model %s: unattributed: %s", x->endpoint, x->model_name,
			       x->why_unattributed);
		}
	}
}

/* The watermark of (serving, cluster): raised to the round's time, never
 * lowered by an old file. */
static int raise_watermark(struct gl_store *db, int cluster_id, int64_t at_s, struct gl_err *err)
{
	int64_t wm;
	int rc = gl_ingest_watermark_get(db, "serving", cluster_id, &wm, err);
	if (!rc && (wm == GL_TIME_NONE || wm < at_s))
		rc = gl_ingest_watermark_set(db, "serving", cluster_id, at_s, err);
	return rc;
}

int gl_serving_ingest(struct gl_store *db, const struct gl_serving_ingest_opts *o, struct gl_serving_ingest_batch *b,
		      struct gl_serving_ingest_result *res_out, struct gl_err *err)
{
	struct gl_serving_ingest_result res;
	struct gl_servingdb_written w = {0};
	int64_t run_id = 0;
	int cluster_id, rc, in_txn = 0;

	memset(&res, 0, sizeof res);
	res.series = (int64_t)b->db->n;
	res.bad_lines = b->bad_lines;
	res.bad_values = b->bad_values;
	res.failed_inputs = b->failed;
	if ((rc = gl_servingdb_cluster_id(db, o->cluster,
					  gl_servingdb_cluster_kind(b->db->n ? b->db->rows[0].where.kind : NULL),
					  &cluster_id, err)) ||
	    (rc = gl_ingest_run_begin(db, "serving", cluster_id, o->input_name, &run_id, err)) ||
	    (rc = gl_servingdb_partitions(db, b->db->at_s, err)) || (rc = gl_txn_begin(db, err)))
		goto out;
	in_txn = 1;
	if ((rc = gl_servingdb_load(db, b->db, err)))
		goto out;
	compute(b, &res);
	if ((rc = gl_servingdb_write(db, b->db, o->claim_s, &w, err)) || (rc = raise_watermark(db, cluster_id, b->db->at_s, err)))
		goto out;
	res.usage_rows = w.usage_rows;
	res.claimed_rows = w.claimed_rows;
	res.new_jobs = w.new_jobs;
	b->st.inserted = w.usage_rows;
	b->st.updated = w.claimed_rows;
	b->st.unchanged = res.stale;
	b->st.ignored = res.duplicates;
	if ((rc = gl_ingest_run_update(db, run_id, &b->st,
				       b->failed || b->bad_lines || b->bad_values || res.flagged ? "partial" : "ok",
				       NULL, err)) ||
	    (rc = gl_txn_commit(db, err)))
		goto out;
	in_txn = 0;
out:
	if (rc && in_txn)
		gl_txn_rollback(db);
	if (rc && run_id) {
		struct gl_err e2 = {0};
		b->st.inserted = b->st.updated = b->st.unchanged = 0;
		if (gl_ingest_run_fail(
			    db, run_id, &b->st, err ? err->msg : "error",
			    "none of this round's scrapes were written: the next round scrapes the targets again", &e2))
			gl_log(GL_LOG_WARN, "serving: could not record the failed run: %s", e2.msg);
	}
	if (run_id)
		gl_ingest_run_audit(db, run_id);
	if (rc)
		gl_err_prefix(err, "serving %s: ", o->cluster);
	else if (res_out)
		*res_out = res;
	return rc;
}
