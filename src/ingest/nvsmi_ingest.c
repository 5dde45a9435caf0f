/* nvidia-smi captures into the books (see include/gl/nvsmi_ingest.h). */
#include "gl/nvsmi_ingest.h"
#include "gl/dbcancel.h"
#include "gl/dcgm.h"
#include "gl/dcgmstore.h"
#include "gl/health.h"
#include "gl/ingest.h"
#include "gl/jobpids.h"
#include "gl/log.h"
#include "gl/nvsmi.h"
#include "gl/nvsmixml.h"
#include "gl/proc.h"
#include "gl/redact.h"
#include "gl/strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A capture is XML when its first character that is not white space is '<'. */
static int looks_xml(const char *s, size_t n)
{
	size_t i = 0;
	if (n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
		i = 3;
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i < n && s[i] == '<';
}

static int parse_capture(const char *text, size_t len, const char *fields, int64_t off, struct gl_nvsmi_result *r,
			 struct gl_err *err)
{
	struct gl_nvsmi_opts po = {fields, off};
	return looks_xml(text, len) ? gl_nvsmixml_parse(text, len, &po, r, err) : gl_nvsmi_parse_csv(text, len, &po, r, err);
}

/* The parsers' problems as the run's skip reasons, "input:line: reason". */
static void take_problems(struct gl_dcgm_batch *b, const struct gl_nvsmi_result *r, const char *name, int64_t *n)
{
	for (size_t i = 0; i < r->nproblems; i++) {
		gl_log(GL_LOG_WARN, "%s:%zu: %s", name, r->problems[i].line, r->problems[i].reason);
		gl_dcgm_batch_skip(b, name, (int64_t)r->problems[i].line, r->problems[i].reason);
	}
	*n += (int64_t)(r->nproblems + r->problems_dropped);
	if (r->problems_dropped)
		gl_log(GL_LOG_WARN, "%s: %zu more problems, counted", name, r->problems_dropped);
}

static int64_t sec_of(int64_t t_ms)
{
	return t_ms >= 0 ? t_ms / 1000 : -((-t_ms + 999) / 1000);
}

static const struct gl_nvsmi_sample *g_sort; /* qsort has no context */

static int by_time(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int64_t tx = g_sort[x].t_ms, ty = g_sort[y].t_ms;
	return tx != ty ? (tx > ty) - (tx < ty) : (x > y) - (x < y);
}

/* The processes of one second: which GPU (uuid) runs which job. */
struct procs {
	const struct gl_nvsmi_result *r; /* the apps capture (or the XML itself) */
	const struct gl_jobpids *pids;
	size_t *order;                   /* apps by time */
	size_t n;
};

static const struct gl_nvsmi_app *g_apps;

static int app_by_time(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int64_t tx = sec_of(g_apps[x].t_ms), ty = sec_of(g_apps[y].t_ms);
	return tx != ty ? (tx > ty) - (tx < ty) : (x > y) - (x < y);
}

static void procs_init(struct procs *p, const struct gl_nvsmi_result *r, const struct gl_jobpids *pids)
{
	memset(p, 0, sizeof *p);
	if (!r || !pids)
		return;
	p->r = r;
	p->pids = pids;
	p->n = r->napps;
	p->order = gl_xmalloc((p->n ? p->n : 1) * sizeof *p->order);
	for (size_t i = 0; i < p->n; i++)
		p->order[i] = i;
	g_apps = r->apps;
	qsort(p->order, p->n, sizeof *p->order, app_by_time);
}

/* The jobs running on GPU uuid at second t: the apps listed within 2 s of
 * it (the capture and the apps capture are taken together). Appends job
 * ids (distinct) to jobs; returns how many. */
static size_t jobs_on(const struct procs *p, const char *uuid, int64_t t, const char **jobs, size_t max)
{
	size_t n = 0;
	for (size_t k = 0; p->r && k < p->n; k++) {
		const struct gl_nvsmi_app *a = &p->r->apps[p->order[k]];
		int64_t s = sec_of(a->t_ms);
		const char *job;
		if (s < t - 2)
			continue;
		if (s > t + 2)
			break;
		if (strcmp(p->r->gpus[a->gpu].uuid, uuid) || !(job = gl_jobpids_find(p->pids, a->pid)))
			continue;
		for (size_t i = 0; i <= n; i++) {
			if (i == n) {
				if (n < max)
					jobs[n++] = job;
				break;
			}
			if (!strcmp(jobs[i], job))
				break;
		}
	}
	return n;
}

/* One round: the samples order[a..b) (one second) into batch b. */
static void add_round(struct gl_dcgm_batch *batch, const struct gl_nvsmi_result *r, const size_t *order, size_t a,
		      size_t b, int64_t t, const struct procs *pr, const char *node, int64_t *labelled)
{
	for (size_t i = a; i < b; i++) {
		const struct gl_nvsmi_sample *s = &r->samples[order[i]];
		const struct gl_nvsmi_gpu *g = &r->gpus[s->gpu];
		const char *jobs[16];
		struct gl_dcgm_batch_gpu bg = {node, g->uuid, "", g->model, g->driver_version, "nvidia-smi", g->gi_id, 0,
					       &s->r, jobs, 0};
		/* a whole GPU whose instances are in the same round is their parent */
		for (size_t k = a; k < b && g->gi_id < 0; k++) {
			const struct gl_nvsmi_gpu *o = &r->gpus[r->samples[order[k]].gpu];
			if (o->gi_id >= 0 && !strcmp(o->uuid, g->uuid))
				bg.mig_parent = 1;
		}
		bg.njobs = jobs_on(pr, g->uuid, t, jobs, GL_ARRAY_LEN(jobs));
		*labelled += bg.njobs > 0;
		gl_dcgm_batch_add_gpu(batch, &bg);
	}
}

/* The rounds of r, oldest first, into batches (b[0] holds the problems
 * already); at_s overrides the time of a capture of one round. */
static int make_rounds(const struct gl_nvsmi_ingest_opts *o, const struct gl_nvsmi_result *r, const struct procs *pr,
		       struct gl_dcgm_batch ***bv, int64_t **tv, size_t *nr, struct gl_nvsmi_ingest_result *res,
		       struct gl_err *err)
{
	size_t *order = gl_xmalloc((r->nsamples ? r->nsamples : 1) * sizeof *order), n = 0;
	struct gl_dcgm_batch **b = *bv;
	int64_t *t = NULL;
	int rc = 0;

	for (size_t i = 0; i < r->nsamples; i++)
		order[i] = i;
	g_sort = r->samples;
	qsort(order, r->nsamples, sizeof *order, by_time);
	for (size_t i = 0; i < r->nsamples;) {
		int64_t s = sec_of(r->samples[order[i]].t_ms);
		size_t j = i;
		while (j < r->nsamples && sec_of(r->samples[order[j]].t_ms) == s)
			j++;
		if (o->at_s != GL_TIME_NONE && n) {
			rc = gl_err_set(err, GL_EINVAL,
					"%s: --at gives the time of a capture of one sample per GPU, this one has samples "
					"at several times",
					o->dcgm.input_name);
			break;
		}
		b = gl_xrealloc(b, (n + 1) * sizeof *b);
		t = gl_xrealloc(t, (n + 1) * sizeof *t);
		if (n)
			b[n] = gl_dcgm_batch_new(0);
		t[n] = o->at_s != GL_TIME_NONE ? o->at_s : s;
		add_round(b[n], r, order, i, j, t[n], pr, o->node, &res->labelled);
		n++;
		i = j;
	}
	free(order);
	*bv = b;
	*tv = t;
	*nr = n;
	res->rounds = (int64_t)n;
	res->samples = (int64_t)r->nsamples;
	return rc;
}

/* The apps capture and the PIDs, when given: their problems are the run's. */
static int side_inputs(const struct gl_nvsmi_ingest_opts *o, const struct gl_nvsmi_ingest_input *apps,
		       const struct gl_nvsmi_ingest_input *pids, struct gl_dcgm_batch *b0, struct gl_nvsmi_result *ar,
		       struct gl_jobpids *pp, struct gl_nvsmi_ingest_result *res, struct gl_err *err)
{
	int rc;
	if (apps && apps->text) {
		if ((rc = parse_capture(apps->text, apps->len, NULL, o->utc_offset_s, ar, err)))
			return gl_err_prefix(err, "%s: ", apps->name);
		if (ar->kind != GL_NVSMI_APPS && ar->kind != GL_NVSMI_XML)
			return gl_err_set(err, GL_EFORMAT, "%s: not a --query-compute-apps capture (no pid column)",
					  apps->name);
		take_problems(b0, ar, apps->name, &res->problems);
	}
	if (pids && pids->text) {
		if ((rc = gl_jobpids_parse(pids->text, pids->len, pp, err)))
			return gl_err_prefix(err, "%s: ", pids->name);
		if (pp->bad) {
			char why[96];
			snprintf(why, sizeof why, "%zu lines not understood (the first here), skipped", pp->bad);
			gl_dcgm_batch_skip(b0, pids->name, (int64_t)pp->first_bad, why);
			res->problems += (int64_t)pp->bad;
		}
	}
	return 0;
}

int gl_nvsmi_ingest(PGconn *c, const struct gl_nvsmi_ingest_opts *o, const char *capture, size_t len,
		    const struct gl_nvsmi_ingest_input *apps, const struct gl_nvsmi_ingest_input *pids,
		    struct gl_nvsmi_ingest_result *res, struct gl_err *err)
{
	struct gl_nvsmi_result r = {0}, ar = {0};
	struct gl_jobpids pp = {0};
	struct procs pr = {0};
	struct gl_dcgm_batch **b = gl_xmalloc(sizeof *b);
	int64_t *t = NULL;
	size_t nr = 0;
	int rc;

	memset(res, 0, sizeof *res);
	b[0] = gl_dcgm_batch_new(o->dcgm.max_skip_reasons);
	if ((rc = parse_capture(capture, len, o->fields, o->utc_offset_s, &r, err))) {
		gl_err_prefix(err, "%s: ", o->dcgm.input_name);
		goto out;
	}
	if (r.kind == GL_NVSMI_APPS) {
		rc = gl_err_set(err, GL_EFORMAT,
				"%s: a --query-compute-apps capture: give it with --apps (the capture is --query-gpu CSV "
				"or -q -x XML)",
				o->dcgm.input_name);
		goto out;
	}
	gl_dcgm_batch_lines(b[0], (int64_t)r.lines);
	take_problems(b[0], &r, o->dcgm.input_name, &res->problems);
	if ((rc = side_inputs(o, apps, pids, b[0], &ar, &pp, res, err)))
		goto out;
	/* the XML lists each GPU's processes itself */
	procs_init(&pr, ar.kind ? &ar : r.kind == GL_NVSMI_XML ? &r : NULL, pids && pids->text ? &pp : NULL);
	if (!r.nsamples) {
		rc = gl_err_set(err, GL_EFORMAT, "%s: no GPU sample read (%zu rows, %zu problems%s%s)",
				o->dcgm.input_name, r.rows, r.nproblems, r.nproblems ? ", the first: " : "",
				r.nproblems ? r.problems[0].reason : "");
		goto out;
	}
	if ((rc = make_rounds(o, &r, &pr, &b, &t, &nr, res, err)) ||
	    (rc = gl_dcgm_ingest_rounds(c, &o->dcgm, b, t, nr, &res->dcgm, err)))
		goto out;
out:
	for (size_t k = 0; k < (nr ? nr : 1); k++)
		gl_dcgm_batch_free(b[k]);
	free(b);
	free(t);
	free(pr.order);
	gl_nvsmi_result_fini(&r);
	gl_nvsmi_result_fini(&ar);
	gl_jobpids_fini(&pp);
	return rc;
}

/* ---- the daemon source ---------------------------------------------- */

#define MAX_CAPTURE ((size_t)64 << 20)

/* A command's stdout or a file's bytes; shown names it in messages (its
 * credentials blanked). */
static int read_input(const char *command, const char *file, int64_t timeout_s, struct gl_strbuf *out, char *shown,
		      size_t nshown, struct gl_err *err)
{
	if (*command) {
		const char *argv[64];
		char *words = gl_xstrdup(command), *save = NULL;
		struct gl_strbuf red = GL_STRBUF_INIT;
		size_t n = 0;
		int rc;
		gl_redact_secrets(command, &red);
		snprintf(shown, nshown, "%s", gl_strbuf_cstr(&red));
		gl_strbuf_fini(&red);
		for (char *w = strtok_r(words, " \t", &save); w && n < GL_ARRAY_LEN(argv) - 1; w = strtok_r(NULL, " \t", &save))
			argv[n++] = w;
		argv[n] = NULL;
		rc = n ? gl_proc_capture(argv, (const char *const[]){"TZ=UTC", NULL}, (int)timeout_s, MAX_CAPTURE, out, err)
		       : gl_err_set(err, GL_ECONFIG, "empty command");
		free(words);
		return rc ? gl_err_prefix(err, "%s: ", shown) : 0;
	}
	snprintf(shown, nshown, "%s", file);
	{
		FILE *f = fopen(file, "rb");
		char buf[65536];
		size_t k;
		if (!f)
			return gl_err_set(err, GL_EIO, "%s: %s", file, strerror(errno));
		while ((k = fread(buf, 1, sizeof buf, f)) > 0) {
			if (out->len + k > MAX_CAPTURE) {
				fclose(f);
				return gl_err_set(err, GL_ERANGE, "%s: over %zu bytes", file, MAX_CAPTURE);
			}
			gl_strbuf_append(out, buf, k);
		}
		fclose(f);
	}
	return 0;
}

/* A capture the source could not read is a failed run in /v1/ingest/runs,
 * as an ingest that failed is: nothing else would show it but the log. */
static void record_unread(PGconn *c, const char *cluster, const char *input, const char *why)
{
	struct gl_ingest_stats st;
	struct gl_err e2 = {0};
	int64_t run_id = 0;
	int cluster_id;

	gl_ingest_stats_init(&st, 0);
	/* a command the stop killed: its record is not cancelled in turn */
	if (gl_dbcancel_requested(GL_DBCANCEL_WORK))
		gl_dbcancel_defer();
	if (gl_dcgmstore_cluster(c, cluster, 0, &cluster_id, &e2) ||
	    gl_ingest_run_begin(c, "nvidia-smi", cluster_id, input, &run_id, &e2) ||
	    gl_ingest_run_fail(c, run_id, &st, why, "nothing was read: the next run reads the capture again", &e2))
		gl_log(GL_LOG_WARN, "nvidia-smi: could not record the failed run: %s", e2.msg);
	if (run_id)
		gl_ingest_run_audit(c, run_id);
	gl_ingest_stats_fini(&st);
}

int gl_nvsmi_source_run(PGconn *c, const struct gl_config *cfg, const void *srcp, int64_t now_s, char *summary,
			size_t n, struct gl_err *err)
{
	const struct gl_nvsmi_source_cfg *src = srcp;
	struct gl_strbuf cap = GL_STRBUF_INIT, apps = GL_STRBUF_INIT, pids = GL_STRBUF_INIT;
	char shown[512], ashown[512] = "", pshown[512] = "";
	struct gl_nvsmi_ingest_opts o;
	struct gl_nvsmi_ingest_input ai = {0}, pi = {0};
	struct gl_nvsmi_ingest_result res;
	int rc;

	memset(&o, 0, sizeof o);
	if ((rc = gl_dcgm_ingest_opts_init(&o.dcgm, cfg, src->cluster, err)))
		goto out;
	/* one capture an interval: a sample stands for up to two of them */
	o.dcgm.max_gap_s = 2 * src->interval_s;
	o.dcgm.run_source = "nvidia-smi";
	o.node = src->node;
	o.fields = *src->fields ? src->fields : NULL;
	o.utc_offset_s = src->utc_offset_s;
	o.at_s = GL_TIME_NONE;
	if ((rc = read_input(src->command, src->file, src->timeout_s, &cap, shown, sizeof shown, err)) ||
	    ((*src->apps_command || *src->apps_file) &&
	     (rc = read_input(src->apps_command, src->apps_file, src->timeout_s, &apps, ashown, sizeof ashown, err))) ||
	    ((*src->pids_command || *src->pids_file) &&
	     (rc = read_input(src->pids_command, src->pids_file, src->timeout_s, &pids, pshown, sizeof pshown, err)))) {
		gl_err_prefix(err, "nvidia-smi %s/%s: ", src->cluster, src->node);
		record_unread(c, src->cluster, shown, err->msg);
		goto reported;
	}
	o.dcgm.input_name = shown;
	if (ashown[0])
		ai = (struct gl_nvsmi_ingest_input){gl_strbuf_cstr(&apps), apps.len, ashown};
	if (pshown[0])
		pi = (struct gl_nvsmi_ingest_input){gl_strbuf_cstr(&pids), pids.len, pshown};
	if ((rc = gl_nvsmi_ingest(c, &o, gl_strbuf_cstr(&cap), cap.len, &ai, &pi, &res, err)))
		goto failed;
	gl_health_report("nvidia-smi", src->cluster, src->node, 1, now_s, NULL, 0);
	snprintf(summary, n,
		 "%s: %lld rounds, %lld GPU samples, %lld applied, %lld stale, %lld labelled by job, %lld problems",
		 src->node, (long long)res.rounds, (long long)res.samples, (long long)res.dcgm.applied,
		 (long long)res.dcgm.stale, (long long)res.labelled, (long long)res.problems);
	goto out;
failed:
	gl_err_prefix(err, "nvidia-smi %s/%s: ", src->cluster, src->node);
reported:
	gl_health_report("nvidia-smi", src->cluster, src->node, 0, now_s, err->msg, 0);
out:
	gl_strbuf_fini(&cap);
	gl_strbuf_fini(&apps);
	gl_strbuf_fini(&pids);
	return rc;
}
