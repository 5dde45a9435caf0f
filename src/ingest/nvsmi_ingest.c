/* nvidia-smi captures into the books (see include/gl/nvsmi_ingest.h). */
#include "gl/nvsmi_ingest.h"
#include "gl/dbcancel.h"
#include "gl/dcgm.h"
#include "gl/dcgmstore.h"
#include "gl/srchealth.h"
#include "gl/hostlist.h"
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
static void take_problems(struct gl_dcgm_ingest_batch *b, const struct gl_nvsmi_result *r, const char *name, int64_t *n)
{
	for (size_t i = 0; i < r->nproblems; i++) {
		gl_log(GL_LOG_WARN, "%s:%zu: %s", name, r->problems[i].line, r->problems[i].reason);
		gl_dcgm_ingest_batch_skip(b, name, (int64_t)r->problems[i].line, r->problems[i].reason);
	}
	*n += (int64_t)(r->nproblems + r->problems_dropped);
	if (r->problems_dropped)
		gl_log(GL_LOG_WARN, "%s: %zu more problems, counted", name, r->problems_dropped);
}

static int64_t sec_of(int64_t t_ms)
{
	return t_ms >= 0 ? t_ms / 1000 : -((-t_ms + 999) / 1000);
}

/* The processes of one second: which GPU (uuid) runs which job. */
struct procs {
	const struct gl_nvsmi_result *r; /* the apps capture (or the XML itself) */
	const struct gl_jobpids *pids;
	size_t *order;                   /* apps by time */
	size_t n;
};

static const struct gl_nvsmi_app *g_apps; /* qsort has no context */

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
	gl_qsort(p->order, p->n, sizeof *p->order, app_by_time);
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

/* One node's inputs, parsed. */
struct node {
	const char *node, *name;
	struct gl_nvsmi_result r, ar;
	struct gl_jobpids pp;
	struct procs pr;
};

static void node_fini(struct node *d)
{
	free(d->pr.order);
	gl_nvsmi_result_fini(&d->r);
	gl_nvsmi_result_fini(&d->ar);
	gl_jobpids_fini(&d->pp);
}

/* A sample of one node: rounds are the samples of one second, all nodes. */
struct ent {
	int64_t sec;
	uint32_t k, i; /* node, sample */
};

static int by_sec(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	if (x->sec != y->sec)
		return (x->sec > y->sec) - (x->sec < y->sec);
	if (x->k != y->k)
		return (x->k > y->k) - (x->k < y->k);
	return (x->i > y->i) - (x->i < y->i);
}

/* One round: the samples e[a..b) (one second) into batch. */
static void add_round(struct gl_dcgm_ingest_batch *batch, const struct node *nd, const struct ent *e, size_t a, size_t b,
		      int64_t t, int64_t *labelled)
{
	for (size_t i = a; i < b; i++) {
		const struct node *d = &nd[e[i].k];
		const struct gl_nvsmi_sample *s = &d->r.samples[e[i].i];
		const struct gl_nvsmi_gpu *g = &d->r.gpus[s->gpu];
		const char *jobs[16];
		struct gl_dcgm_ingest_batch_gpu bg = {d->node, g->uuid, "", g->model, g->driver_version, "nvidia-smi", g->gi_id, 0,
					       g->index, &s->r, jobs, 0};
		/* a whole GPU whose instances are in the same round is their parent */
		for (size_t k = a; k < b && g->gi_id < 0; k++) {
			const struct gl_nvsmi_gpu *o;
			if (e[k].k != e[i].k)
				continue;
			o = &d->r.gpus[d->r.samples[e[k].i].gpu];
			if (o->gi_id >= 0 && !strcmp(o->uuid, g->uuid))
				bg.mig_parent = 1;
		}
		bg.njobs = jobs_on(&d->pr, g->uuid, t, jobs, GL_ARRAY_LEN(jobs));
		*labelled += bg.njobs > 0;
		gl_dcgm_ingest_batch_add_gpu(batch, &bg);
	}
}

/* The rounds of every node, oldest first, into batches (b[0] holds the
 * problems already); at_s overrides the time of a capture of one round. */
static int make_rounds(const struct gl_nvsmi_ingest_opts *o, const struct node *nd, size_t nn,
		       struct gl_dcgm_ingest_batch ***bv, int64_t **tv, size_t *nr, struct gl_nvsmi_ingest_result *res,
		       struct gl_err *err)
{
	size_t ne = 0, n = 0;
	struct ent *e;
	struct gl_dcgm_ingest_batch **b = *bv;
	int64_t *t = NULL;
	int rc = 0;

	for (size_t k = 0; k < nn; k++)
		ne += nd[k].r.nsamples;
	e = gl_xmalloc((ne ? ne : 1) * sizeof *e);
	ne = 0;
	for (size_t k = 0; k < nn; k++)
		for (size_t i = 0; i < nd[k].r.nsamples; i++)
			e[ne++] = (struct ent){sec_of(nd[k].r.samples[i].t_ms), (uint32_t)k, (uint32_t)i};
	gl_qsort(e, ne, sizeof *e, by_sec);
	for (size_t i = 0; i < ne;) {
		size_t j = i;
		while (j < ne && e[j].sec == e[i].sec)
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
			b[n] = gl_dcgm_ingest_batch_new(0);
		t[n] = o->at_s != GL_TIME_NONE ? o->at_s : e[i].sec;
		add_round(b[n], nd, e, i, j, t[n], &res->labelled);
		n++;
		i = j;
	}
	free(e);
	*bv = b;
	*tv = t;
	*nr = n;
	res->rounds = (int64_t)n;
	res->samples = (int64_t)ne;
	return rc;
}

/* The apps capture and the PIDs, when given: their problems are the run's. */
static int side_inputs(const struct gl_nvsmi_ingest_opts *o, const struct gl_nvsmi_ingest_node_input *in,
		       struct gl_dcgm_ingest_batch *b0, struct node *d, struct gl_nvsmi_ingest_result *res, struct gl_err *err)
{
	int rc;
	if (in->apps.text) {
		if ((rc = parse_capture(in->apps.text, in->apps.len, NULL, o->utc_offset_s, &d->ar, err)))
			return gl_err_prefix(err, "%s: ", in->apps.name);
		if (d->ar.kind != GL_NVSMI_APPS && d->ar.kind != GL_NVSMI_XML)
			return gl_err_set(err, GL_EFORMAT, "%s: not a --query-compute-apps capture (no pid column)",
					  in->apps.name);
		take_problems(b0, &d->ar, in->apps.name, &res->problems);
	}
	if (in->pids.text) {
		if ((rc = gl_jobpids_parse(in->pids.text, in->pids.len, &d->pp, err)))
			return gl_err_prefix(err, "%s: ", in->pids.name);
		if (d->pp.bad) {
			char why[96];
			snprintf(why, sizeof why, "%zu lines not understood (the first here), skipped", d->pp.bad);
			gl_dcgm_ingest_batch_skip(b0, in->pids.name, (int64_t)d->pp.first_bad, why);
			res->problems += (int64_t)d->pp.bad;
		}
	}
	return 0;
}

/* One node's capture and side inputs; a capture refused writes nothing of
 * the node (-GL_EFORMAT and the reason). */
static int parse_node(const struct gl_nvsmi_ingest_opts *o, const struct gl_nvsmi_ingest_node_input *in,
		      struct gl_dcgm_ingest_batch *b0, struct node *d, struct gl_nvsmi_ingest_result *res, struct gl_err *err)
{
	const struct gl_nvsmi_ingest_input *cap = &in->capture;
	int rc;

	d->node = in->node;
	d->name = cap->name;
	if ((rc = parse_capture(cap->text, cap->len, o->fields, o->utc_offset_s, &d->r, err)))
		return gl_err_prefix(err, "%s: ", cap->name);
	if (d->r.kind == GL_NVSMI_APPS)
		return gl_err_set(err, GL_EFORMAT,
				  "%s: a --query-compute-apps capture: give it with --apps (the capture is --query-gpu "
				  "CSV or -q -x XML)",
				  cap->name);
	gl_dcgm_ingest_batch_lines(b0, (int64_t)d->r.lines);
	take_problems(b0, &d->r, cap->name, &res->problems);
	if ((rc = side_inputs(o, in, b0, d, res, err)))
		return rc;
	/* the XML lists each GPU's processes itself */
	procs_init(&d->pr, d->ar.kind ? &d->ar : d->r.kind == GL_NVSMI_XML ? &d->r : NULL,
		   in->pids.text ? &d->pp : NULL);
	if (!d->r.nsamples)
		return gl_err_set(err, GL_EFORMAT, "%s: no GPU sample read (%zu rows, %zu problems%s%s)", cap->name,
				  d->r.rows, d->r.nproblems, d->r.nproblems ? ", the first: " : "",
				  d->r.nproblems ? d->r.problems[0].reason : "");
	return 0;
}

int gl_nvsmi_ingest_nodes(struct gl_store *db, const struct gl_nvsmi_ingest_opts *o,
			  const struct gl_nvsmi_ingest_node_input *in, size_t n, struct gl_nvsmi_ingest_result *res,
			  struct gl_err *err)
{
	struct node *nd = gl_xcalloc(n ? n : 1, sizeof *nd);
	struct gl_dcgm_ingest_batch **b = gl_xmalloc(sizeof *b);
	int64_t *t = NULL;
	size_t nr = 0, ok = 0;
	int rc = 0;

	memset(res, 0, sizeof *res);
	b[0] = gl_dcgm_ingest_batch_new(o->dcgm.max_skip_reasons);
	for (size_t k = 0; k < n; k++) {
		struct gl_err e1 = {0};
		if (in[k].failed) {
			gl_dcgm_ingest_batch_fail(b[0], in[k].capture.name, in[k].failed);
			res->failed_nodes++;
		} else if ((rc = parse_node(o, &in[k], b[0], &nd[ok], res, &e1))) {
			node_fini(&nd[ok]);
			memset(&nd[ok], 0, sizeof nd[ok]);
			/* one capture: refused whole; several: the others go on */
			if (n == 1) {
				*err = e1;
				goto out;
			}
			gl_dcgm_ingest_batch_fail(b[0], in[k].capture.name, e1.msg);
			res->failed_nodes++;
		} else {
			ok++;
		}
	}
	rc = 0;
	if (!ok) {
		rc = gl_err_set(err, GL_EIO, "%s: no node's capture was read (%zu failed)", o->dcgm.input_name, n);
		goto out;
	}
	if ((rc = make_rounds(o, nd, ok, &b, &t, &nr, res, err)) ||
	    (rc = gl_dcgm_ingest_rounds(db, &o->dcgm, b, t, nr, &res->dcgm, err)))
		goto out;
out:
	for (size_t k = 0; k < (nr ? nr : 1); k++)
		gl_dcgm_ingest_batch_free(b[k]);
	for (size_t k = 0; k < n; k++)
		node_fini(&nd[k]);
	free(nd);
	free(b);
	free(t);
	return rc;
}

int gl_nvsmi_ingest(struct gl_store *db, const struct gl_nvsmi_ingest_opts *o, const char *capture, size_t len,
		    const struct gl_nvsmi_ingest_input *apps, const struct gl_nvsmi_ingest_input *pids,
		    struct gl_nvsmi_ingest_result *res, struct gl_err *err)
{
	struct gl_nvsmi_ingest_node_input in = {o->node, {capture, len, o->dcgm.input_name}, {0}, {0}, NULL};
	if (apps)
		in.apps = *apps;
	if (pids)
		in.pids = *pids;
	return gl_nvsmi_ingest_nodes(db, o, &in, 1, res, err);
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
static void record_unread(struct gl_store *db, const char *cluster, const char *input, const char *why)
{
	struct gl_ingest_stats st;
	struct gl_err e2 = {0};
	int64_t run_id = 0;
	int cluster_id;

	gl_ingest_stats_init(&st, 0);
	/* a command the stop killed: its record is not cancelled in turn */
	if (gl_dbcancel_requested(GL_DBCANCEL_WORK))
		gl_dbcancel_defer();
	if (gl_dcgmstore_cluster(db, cluster, 0, &cluster_id, &e2) ||
	    gl_ingest_run_begin(db, "nvidia-smi", cluster_id, input, &run_id, &e2) ||
	    gl_ingest_run_fail(db, run_id, &st, why, "nothing was read: the next run reads the capture again", &e2))
		gl_log(GL_LOG_WARN, "nvidia-smi: could not record the failed run: %s", e2.msg);
	if (run_id)
		gl_ingest_run_audit(db, run_id);
	gl_ingest_stats_fini(&st);
}

/* s with every "{node}" replaced by node (malloc'd). */
static char *subst_node(const char *s, const char *node)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	for (const char *p = s, *q; *p; p = q + 6) {
		if (!(q = strstr(p, "{node}"))) {
			gl_strbuf_puts(&b, p);
			break;
		}
		gl_strbuf_append(&b, p, (size_t)(q - p));
		gl_strbuf_puts(&b, node);
	}
	gl_strbuf_cstr(&b);
	return b.p ? b.p : gl_xstrdup("");
}

/* One node's reads of a run. */
struct node_read {
	char *node;
	struct gl_strbuf cap, apps, pids;
	char shown[512], ashown[512], pshown[512];
	char why[1024]; /* "" read */
};

struct hosts {
	struct node_read *v;
	size_t n;
};

static int add_host(const char *host, void *ud)
{
	struct hosts *h = ud;
	h->v = gl_xrealloc(h->v, (h->n + 1) * sizeof *h->v);
	memset(&h->v[h->n], 0, sizeof h->v[h->n]);
	h->v[h->n].node = gl_xstrdup(host);
	h->n++;
	return 0;
}

/* input (command or file, one of them "") of node into out; its name in
 * shown. On failure the reason in nr->why. */
static int read_one(const struct gl_config_nvsmi_source *src, const char *command, const char *file, struct node_read *nr,
		    struct gl_strbuf *out, char *shown, size_t nshown)
{
	char *cmd = subst_node(command, nr->node), *f = subst_node(file, nr->node);
	struct gl_err e = {0};
	int rc = read_input(cmd, f, src->timeout_s, out, shown, nshown, &e);
	if (rc)
		snprintf(nr->why, sizeof nr->why, "%s", e.msg);
	free(cmd);
	free(f);
	return rc;
}

static void read_node(const struct gl_config_nvsmi_source *src, struct node_read *nr, struct gl_nvsmi_ingest_node_input *in)
{
	memset(in, 0, sizeof *in);
	in->node = nr->node;
	if (!read_one(src, src->command, src->file, nr, &nr->cap, nr->shown, sizeof nr->shown) &&
	    (!(*src->apps_command || *src->apps_file) ||
	     !read_one(src, src->apps_command, src->apps_file, nr, &nr->apps, nr->ashown, sizeof nr->ashown)) &&
	    (!(*src->pids_command || *src->pids_file) ||
	     !read_one(src, src->pids_command, src->pids_file, nr, &nr->pids, nr->pshown, sizeof nr->pshown))) {
		in->capture = (struct gl_nvsmi_ingest_input){gl_strbuf_cstr(&nr->cap), nr->cap.len, nr->shown};
		if (nr->ashown[0])
			in->apps = (struct gl_nvsmi_ingest_input){gl_strbuf_cstr(&nr->apps), nr->apps.len, nr->ashown};
		if (nr->pshown[0])
			in->pids = (struct gl_nvsmi_ingest_input){gl_strbuf_cstr(&nr->pids), nr->pids.len, nr->pshown};
		return;
	}
	in->capture.name = nr->shown;
	in->failed = nr->why;
}

static void hosts_fini(struct hosts *h)
{
	for (size_t k = 0; k < h->n; k++) {
		free(h->v[k].node);
		gl_strbuf_fini(&h->v[k].cap);
		gl_strbuf_fini(&h->v[k].apps);
		gl_strbuf_fini(&h->v[k].pids);
	}
	free(h->v);
}

/* Every node's inputs, read one after the other; the number read. */
static size_t read_nodes(const struct gl_config_nvsmi_source *src, struct hosts *h, struct gl_nvsmi_ingest_node_input *in)
{
	size_t ok = 0;
	for (size_t k = 0; k < h->n; k++) {
		read_node(src, &h->v[k], &in[k]);
		ok += !in[k].failed;
		if (gl_proc_stopping())
			break;
	}
	return ok;
}

int gl_nvsmi_ingest_source_run(struct gl_store *db, const struct gl_config *cfg, const void *srcp, int64_t now_s, char *summary,
			size_t n, struct gl_err *err)
{
	const struct gl_config_nvsmi_source *src = srcp;
	struct hosts h = {0};
	struct gl_nvsmi_ingest_node_input *in = NULL;
	struct gl_nvsmi_ingest_opts o;
	struct gl_nvsmi_ingest_result res;
	char name[600];
	int rc;

	memset(&o, 0, sizeof o);
	if ((rc = gl_dcgm_ingest_opts_init(&o.dcgm, cfg, src->cluster, err)) ||
	    (rc = gl_hostlist_expand(src->node, strlen(src->node), add_host, &h, err)))
		goto failed;
	/* one capture an interval: a sample stands for up to two of them */
	o.dcgm.max_gap_s = 2 * src->interval_s;
	o.dcgm.run_source = "nvidia-smi";
	o.fields = *src->fields ? src->fields : NULL;
	o.utc_offset_s = src->utc_offset_s;
	o.at_s = GL_TIME_NONE;
	in = gl_xcalloc(h.n ? h.n : 1, sizeof *in);
	if (!read_nodes(src, &h, in)) {
		/* nothing to ingest: the run says why (the first node's reason) */
		rc = gl_err_set(err, GL_EIO, "nvidia-smi %s/%s: %s%s", src->cluster, src->node, h.n ? h.v[0].why : "no node",
				h.n > 1 ? " (and every other node failed too)" : "");
		record_unread(db, src->cluster, h.n == 1 ? h.v[0].shown : src->node, err->msg);
		goto reported;
	}
	snprintf(name, sizeof name, "%s", h.n == 1 ? h.v[0].shown : src->node);
	o.dcgm.input_name = name;
	o.node = h.v[0].node;
	if ((rc = gl_nvsmi_ingest_nodes(db, &o, in, h.n, &res, err)))
		goto failed;
	gl_srchealth_report("nvidia-smi", src->cluster, src->node, 1, now_s, NULL, 0);
	snprintf(summary, n,
		 "%s: %zu nodes (%lld failed), %lld rounds, %lld GPU samples, %lld applied, %lld stale, %lld labelled by "
		 "job, %lld problems",
		 src->node, h.n, (long long)res.failed_nodes, (long long)res.rounds, (long long)res.samples,
		 (long long)res.dcgm.applied, (long long)res.dcgm.stale, (long long)res.labelled, (long long)res.problems);
	goto out;
failed:
	gl_err_prefix(err, "nvidia-smi %s/%s: ", src->cluster, src->node);
reported:
	gl_srchealth_report("nvidia-smi", src->cluster, src->node, 0, now_s, err->msg, 0);
out:
	hosts_fini(&h);
	free(in);
	return rc;
}
