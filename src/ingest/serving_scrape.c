/* The daemon's serving source: every sources.serving[] endpoint of one
 * cluster and interval is one source; a round fetches all their targets
 * concurrently (the dcgm fetcher: libcurl multi, per-target timeout, body
 * cap), reports each target's health, and ingests the good scrapes in one
 * transaction at the round's time (gl_serving_ingest). */
#include "gl/serving_scrape.h"
#include "gl/dcgm_scrape.h"
#include "gl/srchealth.h"
#include "gl/log.h"
#include "gl/proc.h"
#include "gl/redact.h"
#include "gl/serving_ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct target {
	const struct gl_config_serving_source *e;
	char *url;
	char *instance; /* the URL with credentials blanked: what is stored */
	char ns[256];
};

struct round {
	const char *cluster;
	struct gl_serving_ingest_batch *b;
	int64_t now_s;
	size_t good, bad;
	char first_error[400];
};

/* The entries of src's group: the same cluster and interval. */
static int same_group(const struct gl_config_serving_source *a, const struct gl_config_serving_source *b)
{
	return !strcmp(a->cluster, b->cluster) && a->interval_s == b->interval_s;
}

static void where_of(const struct gl_config_serving_source *e, struct gl_servingdb_where *w, char *ns, size_t n)
{
	memset(w, 0, sizeof *w);
	if (e->pod[0]) {
		const char *slash = strchr(e->pod, '/'); /* checked by the config */
		snprintf(ns, n, "%.*s", slash ? (int)(slash - e->pod) : 0, e->pod);
		w->kind = "pod";
		w->ns = ns;
		w->name = slash ? slash + 1 : e->pod;
	} else if (e->selector[0]) {
		w->kind = "selector";
		w->ns = e->namespace_;
		w->name = e->selector;
	} else if (e->job[0]) {
		w->kind = "job";
		w->name = e->job;
	} else if (e->job_name[0]) {
		w->kind = "job_name";
		w->name = e->job_name;
	}
}

static size_t load_targets(const struct gl_config *cfg, const struct gl_config_serving_source *src, struct target **out)
{
	struct target *t = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < cfg->n_serving; i++) {
		const struct gl_config_serving_source *e = &cfg->serving[i];
		if (!same_group(e, src))
			continue;
		for (const char *u = e->targets; *u;) {
			size_t len = strcspn(u += strspn(u, " \t\r\n,"), " \t\r\n,");
			struct gl_strbuf red = GL_STRBUF_INIT;
			if (!len)
				break;
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				t = gl_xrealloc(t, cap * sizeof *t);
			}
			memset(&t[n], 0, sizeof t[n]);
			t[n].e = e;
			t[n].url = gl_xstrndup(u, len);
			gl_redact_secrets(t[n].url, &red);
			t[n].instance = gl_strbuf_steal(&red);
			n++;
			u += len;
		}
	}
	*out = t;
	return n;
}

static void note_error(struct round *rd, const char *instance, const char *why)
{
	if (!rd->first_error[0])
		snprintf(rd->first_error, sizeof rd->first_error, "%s: %s", instance, why);
}

static void on_fetched(struct gl_dcgm_scrape_fetch *f, void *ud)
{
	struct round *rd = ud;
	struct target *t = f->ud;
	struct gl_serving_ingest_scrape_in in;
	struct gl_err perr = {0};
	char why[400];
	int ok = f->ok;

	why[0] = '\0';
	if (!ok) {
		snprintf(why, sizeof why, "%s", f->error);
	} else {
		memset(&in, 0, sizeof in);
		in.endpoint = t->e->endpoint;
		in.cluster = t->e->cluster;
		in.instance = t->instance;
		in.default_model = t->e->model[0] ? t->e->model : NULL;
		in.input = t->instance;
		where_of(t->e, &in.where, t->ns, sizeof t->ns);
		if (gl_serving_ingest_batch_add(rd->b, &in, f->body.p ? f->body.p : "", f->body.len, &perr)) {
			snprintf(why, sizeof why, "%s", perr.msg);
			ok = 0;
		}
		/* the body is not needed any more: the round's memory stays the
		 * transfers in flight */
		gl_strbuf_fini(&f->body);
	}
	gl_srchealth_report("serving", rd->cluster, t->instance, ok, rd->now_s, ok ? NULL : why, f->duration_s);
	if (ok) {
		rd->good++;
		return;
	}
	rd->bad++;
	gl_serving_ingest_batch_fail(rd->b, t->instance, why);
	note_error(rd, t->instance, why);
}

int gl_serving_scrape_source_run(struct gl_store *db, const struct gl_config *cfg, const void *srcp, int64_t now_s,
			  char *summary, size_t n, struct gl_err *err)
{
	const struct gl_config_serving_source *src = srcp;
	struct gl_serving_ingest_opts o;
	struct gl_serving_ingest_result res;
	struct gl_dcgm_scrape_fetch_opts fo = {0};
	struct gl_dcgm_scrape_fetch *f = NULL;
	struct target *t = NULL;
	struct round rd = {0};
	char input[64];
	size_t nt = load_targets(cfg, src, &t);
	int rc;

	gl_serving_ingest_opts_init(&o, cfg, src->cluster);
	snprintf(input, sizeof input, "%zu targets", nt);
	o.input_name = input;
	f = gl_xcalloc(nt + 1, sizeof *f);
	for (size_t i = 0; i < nt; i++) {
		f[i].url = t[i].url;
		f[i].ud = &t[i];
	}
	fo.timeout_ms = src->timeout_s * 1000;
	fo.max_parallel = (size_t)src->max_parallel;
	rd.cluster = src->cluster;
	rd.now_s = now_s;
	rd.b = gl_serving_ingest_batch_new(now_s, o.bucket_s, o.max_skip_reasons);
	if ((rc = gl_dcgm_scrape_fetch_all(f, nt, &fo, on_fetched, &rd, err)))
		goto out;
	if (rd.bad)
		gl_log(GL_LOG_DEBUG, "serving %s: %zu of %zu targets failed (%s)", src->cluster, rd.bad, nt, rd.first_error);
	if (gl_proc_stopping()) {
		rc = gl_err_set(err, GL_EIO,
				"serving %s: stopped before writing the round (the daemon is stopping); the next round "
				"scrapes the targets again",
				src->cluster);
		goto out;
	}
	/* the good ones go in even when others failed */
	if ((rc = gl_serving_ingest(db, &o, rd.b, &res, err)))
		goto out;
	if (!rd.good) {
		rc = gl_err_set(err, GL_EIO, "serving %s: all %zu targets failed (%s)", src->cluster, nt, rd.first_error);
		goto out;
	}
	snprintf(summary, n,
		 "%zu/%zu targets, %lld series, %lld counted, %lld levels set, %lld resets, %lld flagged, %lld unattributed",
		 rd.good, nt, (long long)res.series, (long long)res.counted, (long long)res.baseline, (long long)res.resets,
		 (long long)res.flagged, (long long)res.unattributed);
out:
	gl_serving_ingest_batch_free(rd.b);
	for (size_t i = 0; i < nt; i++) {
		free(t[i].url);
		free(t[i].instance);
	}
	free(t);
	free(f);
	return rc;
}
