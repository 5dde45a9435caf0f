/* Kubernetes PodList ingestion (see include/gl/kube_ingest.h, docs/ingest.md).
 *
 * How last_seen_at is kept. A snapshot says "these pods exist at at_s"; the
 * cluster's kube watermark records the time of the last snapshot ingested in
 * full. Two facts follow:
 * - after a complete run at W, every open pod row of the cluster was listed
 *   in the snapshot at W (the others were closed in the same transaction that
 *   set W), so "seen at W" need not be written into each row;
 * - writing at_s into every listed row would rewrite every running pod on
 *   every run (a dead tuple per pod per minute) and make the re-ingest of a
 *   snapshot at a later time look like a change.
 * So last_seen_at of an open pod is the time of the snapshot that first showed
 * it in its current state (phase/start/end): a listed pod whose state is
 * unchanged keeps the stored value, and the merge, which skips rows whose
 * columns are all equal, leaves it alone. A pod that vanishes is closed at
 * greatest(last_seen_at, previous watermark, start_at, submit_at): the last
 * time it was seen, also right after a run that died between batches (its
 * rows carry that run's at_s, the watermark did not move).
 */
#include "gl/kube_ingest.h"
#include "gl/dcgm_ingest.h"
#include "gl/dbcancel.h"
#include "gl/jobs.h"
#include "gl/kube.h"
#include "gl/kubestore.h"
#include "gl/log.h"
#include "gl/proc.h"
#include "gl/redact.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/txn.h"
#include "gl/utf8.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void gl_kube_ingest_result_fini(struct gl_kube_ingest_result *res)
{
	if (!res)
		return;
	gl_ingest_stats_fini(&res->st);
	memset(res, 0, sizeof *res);
}

/* Stored rows of one batch, found by job_key. */
struct rowmap {
	int *slot; /* row + 1; 0 = empty */
	size_t mask;
	const struct gl_kubestore_pod_list *l;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void rowmap_build(struct rowmap *m, const struct gl_kubestore_pod_list *l)
{
	size_t cap = 16;
	while (cap < l->n * 2)
		cap *= 2;
	m->slot = gl_xcalloc(cap, sizeof *m->slot);
	m->mask = cap - 1;
	m->l = l;
	for (size_t i = 0; i < l->n; i++) {
		size_t h = hash_str(l->v[i].job_key) & m->mask;
		while (m->slot[h])
			h = (h + 1) & m->mask;
		m->slot[h] = (int)i + 1;
	}
}

static const struct gl_kubestore_pod *rowmap_find(const struct rowmap *m, const char *key)
{
	for (size_t h = hash_str(key) & m->mask; m->slot[h]; h = (h + 1) & m->mask)
		if (!strcmp(m->l->v[m->slot[h] - 1].job_key, key))
			return &m->l->v[m->slot[h] - 1];
	return NULL;
}

/* A document with pods skipped for bad fields: those pods are still listed,
 * so their rows must not be closed as vanished. The parser drops them before
 * their uid is kept; read the uids again (rare path, bounded by the checks
 * the parser already made). Appends "pod:<uid>\0" keys to keys. */
static size_t add_listed_uids(const char *doc, size_t len, struct gl_strbuf *keys)
{
	cJSON *root = cJSON_ParseWithLength(doc, len), *it;
	size_t n = 0;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "items")) {
		const cJSON *uid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(it, "metadata"), "uid");
		if (!cJSON_IsString(uid) || !uid->valuestring[0])
			continue;
		gl_strbuf_puts(keys, "pod:");
		gl_strbuf_puts(keys, uid->valuestring);
		gl_strbuf_putc(keys, '\0');
		n++;
	}
	cJSON_Delete(root);
	return n;
}

/* The keys a snapshot lists, as a set (strings stay in the keys buffer). */
struct keyset {
	const char **slot;
	size_t mask;
};

static void keyset_build(struct keyset *k, const struct gl_strbuf *keys, size_t n)
{
	size_t cap = 16;
	const char *p = keys->p;
	while (cap < n * 2)
		cap *= 2;
	k->slot = gl_xcalloc(cap, sizeof *k->slot);
	k->mask = cap - 1;
	for (size_t i = 0; i < n; i++, p += strlen(p) + 1) {
		size_t h = hash_str(p) & k->mask;
		while (k->slot[h] && strcmp(k->slot[h], p))
			h = (h + 1) & k->mask;
		k->slot[h] = p;
	}
}

static int keyset_has(const struct keyset *k, const char *s)
{
	for (size_t h = hash_str(s) & k->mask; k->slot[h]; h = (h + 1) & k->mask)
		if (!strcmp(k->slot[h], s))
			return 1;
	return 0;
}

/* ---- parsing a snapshot in slices ------------------------------------
 *
 * One cJSON tree of a 50,000-pod document is about three times the text and
 * parsing it takes as long as the database needs to COPY the rows. So the
 * top-level `items` array is cut into slices of a few MiB, each parsed on its
 * own (as a List of the same kind) by a worker thread while this thread
 * writes the previous ones: peak memory is the text plus one slice's tree,
 * and parsing overlaps the writes. No transaction commits before every slice
 * has parsed, so a bad document still writes nothing (the open transaction is
 * rolled back). The cutting is lexical; when the layout is not the plain one,
 * or the skeleton (the document with an empty items array) or any slice
 * fails, the whole document goes through gl_kube_parse() instead, and its
 * verdict and message are the ones reported. The worker only parses: it
 * touches no connection and no state outside struct parser. */

#define SLICE_BYTES ((size_t)4 << 20)
#define MERGE_ROWS 8192

struct span {
	size_t a, b; /* [a, b) */
};

static size_t skip_ws(const char *d, size_t i, size_t n)
{
	while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r'))
		i++;
	return i;
}

static size_t skip_string(const char *d, size_t i, size_t n)
{
	return gl_kube_json_skip_string(d, i, n);
}

/* Skips one value lexically: containers only by bracket count (cJSON judges
 * them later), scalars up to the next delimiter. *deepest gets the value's
 * nesting (1 for a flat object or array) when deeper than it was. */
static size_t skip_value(const char *d, size_t i, size_t n, int *deepest)
{
	int depth = 0;
	if (i >= n)
		return n;
	if (d[i] == '"')
		return skip_string(d, i, n);
	if (d[i] != '{' && d[i] != '[') {
		while (i < n && d[i] != ',' && d[i] != ']' && d[i] != '}' && d[i] != ' ' && d[i] != '\t' &&
		       d[i] != '\n' && d[i] != '\r')
			i++;
		return i;
	}
	while (i < n) {
		unsigned char k = gl_kube_json_class[(unsigned char)d[i]];
		if (k == 1) {
			i = skip_string(d, i, n);
			continue;
		}
		if (k == 2) {
			if (++depth > *deepest)
				*deepest = depth;
		} else if (k == 3 && --depth == 0) {
			return i + 1;
		}
		i++;
	}
	return n;
}

/* Finds the one top-level "items" array and its elements. -1: not the plain
 * layout (the caller parses the whole document). */
static int split_items(const char *d, size_t n, int max_depth, size_t *open, size_t *close, struct span **out,
		       size_t *nout)
{
	int deepest = 0;
	struct span *el = NULL;
	size_t i = skip_ws(d, 0, n), nel = 0, cap = 0;
	int found = 0;

	if (i >= n || d[i] != '{')
		goto fail;
	i = skip_ws(d, i + 1, n);
	for (;;) {
		size_t ks = i, s;
		if (i >= n || d[i] != '"')
			goto fail;
		i = skip_ws(d, skip_string(d, i, n), n);
		if (i >= n || d[i] != ':')
			goto fail;
		i = skip_ws(d, i + 1, n);
		if (i - ks >= 7 && !memcmp(d + ks, "\"items\"", 7) && skip_string(d, ks, n) == ks + 7) {
			if (found++ || i >= n || d[i] != '[')
				goto fail;
			*open = i;
			i = skip_ws(d, i + 1, n);
			while (i < n && d[i] != ']') {
				s = i;
				i = skip_value(d, i, n, &deepest);
				/* an item sits two levels down (root object, items array) */
				if (i >= n || i == s || deepest + 2 > max_depth)
					goto fail;
				if (nel == cap) {
					cap = cap ? cap * 2 : 1024;
					el = gl_xrealloc(el, cap * sizeof *el);
				}
				el[nel].a = s;
				el[nel++].b = i;
				i = skip_ws(d, i, n);
				if (i < n && d[i] == ',')
					i = skip_ws(d, i + 1, n);
				else if (i >= n || d[i] != ']')
					goto fail;
			}
			if (i >= n)
				goto fail;
			*close = i++;
		} else {
			s = i;
			i = skip_value(d, i, n, &deepest);
			if (i >= n || i == s)
				goto fail;
		}
		i = skip_ws(d, i, n);
		if (i < n && d[i] == ',') {
			i = skip_ws(d, i + 1, n);
			continue;
		}
		if (i < n && d[i] == '}')
			break;
		goto fail;
	}
	if (!found)
		goto fail;
	*out = el;
	*nout = nel;
	return 0;
fail:
	free(el);
	return -1;
}

/* "items[7].metadata.uid: missing" of a slice starting at item base. */
static char *shift_index(char *msg, size_t base)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	char *end;
	unsigned long long k;

	if (base == 0 || strncmp(msg, "items[", 6) != 0)
		return msg;
	k = strtoull(msg + 6, &end, 10);
	if (end == msg + 6 || *end != ']')
		return msg;
	gl_strbuf_printf(&b, "items[%llu%s", k + base, end);
	free(msg);
	return gl_strbuf_steal(&b);
}

/* One parsed slice: items [base, base + r.nitems) of the document. */
struct part {
	struct gl_kube_result r;
	struct gl_strbuf extra; /* "pod:<uid>\0" of every item, for a slice with bad pods */
	size_t nextra;
	int rc;                 /* 0, or the slice did not parse */
	struct gl_err err;
};

/* Produces the parts in order: slices parsed by a worker thread while the
 * caller writes the previous ones (the database works on another core), or
 * the whole document parsed at once. */
struct parser {
	const char *doc;
	size_t len;
	struct gl_kube_opts ko;
	struct span *el;
	size_t nel;
	char *kind;
	size_t *from;           /* slice s is el[from[s]] .. el[from[s + 1] - 1] */
	size_t nslices;
	struct part *parts;
	size_t next;            /* the consumer's next slice */
	int whole;              /* one part: the whole document, parsed by gl_kube_parse() */
	int threaded;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t done;            /* under mu: parts ready */
	int stop;               /* under mu: the consumer gave up */
};

static void parse_slice(struct parser *p, size_t s, struct gl_strbuf *buf)
{
	struct part *pt = &p->parts[s];
	size_t a = p->from[s], b = p->from[s + 1];

	gl_strbuf_reset(buf);
	gl_strbuf_puts(buf, "{\"kind\":\"");
	gl_strbuf_put_json_str(buf, p->kind, strlen(p->kind));
	gl_strbuf_puts(buf, "\",\"items\":[");
	gl_strbuf_append(buf, p->doc + p->el[a].a, p->el[b - 1].b - p->el[a].a);
	gl_strbuf_puts(buf, "]}");
	pt->rc = gl_kube_parse(buf->p, buf->len, &p->ko, &pt->r, &pt->err);
	if (pt->rc == 0 && pt->r.nitems != b - a)
		pt->rc = -GL_EFORMAT; /* the cut disagrees with cJSON: let the whole document decide */
	if (pt->rc)
		return;
	for (size_t i = 0; i < pt->r.nproblems; i++)
		pt->r.problems[i] = shift_index(pt->r.problems[i], a);
	if (pt->r.skipped_bad)
		pt->nextra = add_listed_uids(buf->p, buf->len, &pt->extra);
}

static void *parser_main(void *ud)
{
	struct parser *p = ud;
	struct gl_strbuf buf = GL_STRBUF_INIT;
	for (size_t s = 0; s < p->nslices; s++) {
		int stop;
		pthread_mutex_lock(&p->mu);
		stop = p->stop;
		pthread_mutex_unlock(&p->mu);
		if (stop)
			break;
		parse_slice(p, s, &buf);
		pthread_mutex_lock(&p->mu);
		p->done = s + 1;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		if (p->parts[s].rc)
			break;
	}
	gl_strbuf_fini(&buf);
	return NULL;
}

/* Sets up the sliced mode; -1 when the document is not the plain layout or
 * its skeleton does not parse (the whole document then decides). */
static int parser_slice(struct parser *p)
{
	struct gl_strbuf buf = GL_STRBUF_INIT;
	struct gl_kube_result skel = {0};
	struct gl_err perr = {0};
	size_t open = 0, close = 0;
	cJSON *root = NULL;
	const char *kind;
	int rc = -1;

	if (p->len > (p->ko.max_doc_bytes ? p->ko.max_doc_bytes : GL_KUBE_MAX_DOC_BYTES_DEFAULT) ||
	    split_items(p->doc, p->len, p->ko.max_depth > 0 ? p->ko.max_depth : GL_KUBE_MAX_DEPTH_DEFAULT, &open,
			&close, &p->el, &p->nel) ||
	    p->nel == 0)
		goto out;
	/* the skeleton carries the verdict on everything but the items */
	gl_strbuf_append(&buf, p->doc, open + 1);
	gl_strbuf_append(&buf, p->doc + close, p->len - close);
	if (gl_kube_parse(buf.p, buf.len, &p->ko, &skel, &perr))
		goto out;
	root = cJSON_ParseWithLength(buf.p, buf.len);
	if (!(kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "kind"))))
		goto out;
	p->kind = gl_xstrdup(kind);
	/* split_items bounded every item's nesting: the slices need no depth scan */
	p->ko.depth_checked = 1;
	p->from = gl_xmalloc((p->nel + 1) * sizeof *p->from);
	for (size_t i = 0; i < p->nel;) {
		size_t j = i + 1;
		while (j < p->nel && p->el[j].b - p->el[i].a < SLICE_BYTES)
			j++;
		p->from[p->nslices++] = i;
		i = j;
	}
	p->from[p->nslices] = p->nel;
	rc = 0;
out:
	gl_kube_result_fini(&skel);
	cJSON_Delete(root);
	gl_strbuf_fini(&buf);
	return rc;
}

static void parser_fini(struct parser *p)
{
	if (p->threaded) {
		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->th, NULL);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
	}
	for (size_t s = 0; p->parts && s < p->nslices; s++) {
		gl_kube_result_fini(&p->parts[s].r);
		gl_strbuf_fini(&p->parts[s].extra);
	}
	free(p->parts);
	free(p->el);
	free(p->from);
	free(p->kind);
	memset(p, 0, sizeof *p);
}

/* whole = 0: sliced when the layout allows; whole = 1: the whole document
 * as one part (parsed here). */
static void parser_start(struct parser *p, const char *doc, size_t len, const struct gl_kube_opts *ko, int whole)
{
	memset(p, 0, sizeof *p);
	p->doc = doc;
	p->len = len;
	p->ko = *ko;
	if (!whole && parser_slice(p) == 0) {
		p->parts = gl_xcalloc(p->nslices, sizeof *p->parts);
		pthread_mutex_init(&p->mu, NULL);
		pthread_cond_init(&p->cv, NULL);
		if (pthread_create(&p->th, NULL, parser_main, p) == 0) {
			p->threaded = 1;
			return;
		}
		/* no thread: parse the slices here, one by one, as they are asked for */
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		return;
	}
	free(p->el);
	free(p->from);
	free(p->kind);
	p->el = NULL;
	p->from = NULL;
	p->kind = NULL;
	p->whole = 1;
	p->nslices = 1;
	p->parts = gl_xcalloc(1, sizeof *p->parts);
	p->parts[0].rc = gl_kube_parse(doc, len, ko, &p->parts[0].r, &p->parts[0].err);
	if (p->parts[0].rc == 0 && p->parts[0].r.skipped_bad)
		p->parts[0].nextra = add_listed_uids(doc, len, &p->parts[0].extra);
	p->done = 1;
}

/* Waits until slice s is parsed; returns its part. */
static struct part *parser_get(struct parser *p, size_t s)
{
	if (p->threaded) {
		pthread_mutex_lock(&p->mu);
		while (p->done <= s)
			pthread_cond_wait(&p->cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
	} else if (p->done <= s) {
		struct gl_strbuf buf = GL_STRBUF_INIT;
		parse_slice(p, s, &buf);
		gl_strbuf_fini(&buf);
		p->done = s + 1;
	}
	return &p->parts[s];
}

/* The next part (NULL at the end); a failed part has rc != 0. */
static struct part *parser_next(struct parser *p)
{
	return p->next < p->nslices ? parser_get(p, p->next++) : NULL;
}

/* 0 when every slice parsed (the document is good), else -1. */
static int parser_check_all(struct parser *p)
{
	for (size_t s = 0; s < p->nslices; s++)
		if (parser_get(p, s)->rc)
			return -1;
	return 0;
}

/* Frees a part the caller has written. */
static void parser_release(struct part *pt)
{
	gl_kube_result_fini(&pt->r);
	gl_strbuf_fini(&pt->extra);
}

/* Problems become skip reasons {"path":..., "reason":...}: a JSON document
 * has no useful line numbers, the path says where to look. */
static void record_problems(struct gl_kube_ingest_result *res, const struct gl_kube_result *kr, const char *input,
			    int64_t max_reasons)
{
	struct gl_ingest_stats *s = &res->st;
	for (size_t i = 0; i < kr->nproblems; i++) {
		const char *m = kr->problems[i], *sep = strstr(m, ": ");
		if (s->n_reasons < max_reasons) {
			gl_log(GL_LOG_WARN, "%s: %s", input, m);
			if (s->n_reasons)
				gl_strbuf_putc(&s->reasons, ',');
			gl_strbuf_puts(&s->reasons, "{\"path\":\"");
			/* messages quote input cut at a byte count: keep them storable */
			gl_utf8_put_json_lossy(&s->reasons, m, sep ? (size_t)(sep - m) : strlen(m));
			gl_strbuf_puts(&s->reasons, "\",\"reason\":\"");
			if (sep)
				gl_utf8_put_json_lossy(&s->reasons, sep + 2, strlen(sep + 2));
			gl_strbuf_puts(&s->reasons, "\"}");
			s->n_reasons++;
		} else if (s->n_reasons == max_reasons) {
			gl_log(GL_LOG_WARN, "%s: more problems; further ones are counted, not logged", input);
			s->n_reasons++;
		}
	}
	if (kr->problems_dropped)
		gl_log(GL_LOG_WARN, "%s: %zu more problems not kept by the parser", input, kr->problems_dropped);
}

/* Refuses a snapshot older than what is already booked: its pods would
 * reopen or roll back rows that newer snapshots closed or advanced. */
static int check_watermark(struct gl_store *db, int cluster_id, const struct gl_kube_ingest_opts *o, int64_t *wm,
			   struct gl_err *err)
{
	char a[32], w[32];
	int rc = gl_ingest_watermark_get(db, GL_KUBE_INGEST_SOURCE, cluster_id, wm, err);
	if (rc || *wm == GL_TIME_NONE || o->at_s >= *wm)
		return rc;
	gl_timeutil_format(o->at_s, a, sizeof a);
	gl_timeutil_format(*wm, w, sizeof w);
	return gl_err_set(err, GL_EINVAL,
			  "%s: snapshot taken at %s is older than cluster '%s' (already ingested up to %s): refused, "
			  "newer state is kept",
			  o->input_name, a, o->cluster, w);
}

/* Open rows the snapshot does not list are closed. The difference is taken
 * here, not in SQL: an anti-join against a 50,000-element array parameter
 * is planned from guesses (a nested loop took a minute), while a hash set
 * is linear and the UPDATE then touches only the few vanished keys. */
static int close_vanished(struct gl_store *db, int cluster_id, int64_t wm_prev, const struct keyset *listed, int64_t *n,
			  struct gl_err *err)
{
	struct gl_kubestore_key_list open = {0};
	const char **gone = NULL;
	size_t ngone = 0;
	int rc;

	*n = 0;
	if ((rc = gl_kubestore_open_keys(db, cluster_id, &open, err)))
		return rc;
	gone = gl_xcalloc(open.n ? open.n : 1, sizeof *gone);
	for (size_t i = 0; i < open.n; i++)
		if (!keyset_has(listed, open.v[i]))
			gone[ngone++] = open.v[i];
	if (ngone)
		rc = gl_kubestore_close_vanished(db, cluster_id, wm_prev, gone, ngone, n, err);
	free(gone);
	gl_kubestore_key_list_fini(&open);
	return rc;
}

static int begin_txn(struct gl_store *db, int cluster_id, const struct gl_kube_ingest_opts *o,
		     struct gl_kube_ingest_result *res, struct gl_err *err)
{
	int rc;
	if ((rc = gl_txn_begin(db, err)))
		return rc;
	/* under the lock: another ingester may have moved the watermark since */
	if ((rc = gl_jobs_lock(db, cluster_id, err)) || (rc = check_watermark(db, cluster_id, o, &res->watermark_prev_s, err)))
		gl_txn_rollback(db);
	return rc;
}

static int cluster_is_empty(struct gl_store *db, int cluster_id, int *empty, struct gl_err *err)
{
	int any = 0, rc = gl_kubestore_has_jobs(db, cluster_id, &any, err);
	*empty = !any;
	return rc;
}

/* Pods [from, to) of one part into the batch (last_seen_at decided against
 * the stored rows, see the top comment). keys holds their "pod:<uid>" keys
 * at key_off[]. */
static int add_pods(struct gl_store *db, int cluster_id, const struct gl_kube_ingest_opts *o,
		    const struct gl_kube_result *kr, size_t from, size_t to, const char *keys, const size_t *key_off,
		    int fresh, struct gl_jobs_batch *b, struct gl_kube_ingest_result *res, struct gl_err *err)
{
	struct gl_kubestore_pod_list stored = {0};
	struct rowmap map = {0};
	int rc = 0;

	/* a cluster with no pods stored before this run has nothing to carry
	 * over; fresh: no stored rows, and the connection may be streaming a COPY */
	if (!fresh) {
		const char **kv = gl_xcalloc(to - from + 1, sizeof *kv);
		for (size_t i = from; i < to; i++)
			kv[i - from] = keys + key_off[i];
		rc = gl_kubestore_pods(db, cluster_id, kv, to - from, &stored, err);
		free(kv);
		if (rc)
			return rc;
		rowmap_build(&map, &stored);
	}
	for (size_t i = from; i < to; i++) {
		struct gl_jobrow row;
		const struct gl_kubestore_pod *k;
		gl_kube_pod_to_row(&kr->pods[i], o->at_s, &row);
		row.job_key = keys + key_off[i];
		k = fresh ? NULL : rowmap_find(&map, row.job_key);
		if (k && k->last_seen_s != GL_TIME_NONE && !strcmp(k->state, row.state) && k->start_s == row.start_s &&
		    k->end_s == row.end_s)
			row.last_seen_s = k->last_seen_s; /* same state: see the top comment */
		if (row.end_s == GL_TIME_NONE && row.start_s == GL_TIME_NONE)
			res->pending++;
		else if (row.end_s == GL_TIME_NONE)
			res->running++;
		gl_jobs_batch_add(b, &row);
	}
	free(map.slot);
	gl_kubestore_pod_list_fini(&stored);
	return 0;
}

/* The batch into jobs, inside the open transaction. */
static int flush_batch(struct gl_store *db, int cluster_id, struct gl_jobs_batch *b, struct gl_kube_ingest_result *res,
		       struct gl_err *err)
{
	struct gl_jobs_merge_counts mc;
	int rc = gl_jobs_merge(db, cluster_id, b, &mc, err);
	if (!rc) {
		res->st.inserted += mc.inserted;
		res->st.updated += mc.updated;
		res->st.unchanged += mc.unchanged;
	}
	return rc;
}

/* A parsed part's counters and problems into the result; every key it
 * lists, ours ("pod:<uid>", for the vanished), appended to keys, the part's
 * pod i at (*key_off)[i]. */
static void take_part(const struct part *pt, const struct gl_kube_ingest_opts *o, struct gl_kube_ingest_result *res,
		      struct gl_strbuf *keys, size_t **key_off, size_t *key_cap)
{
	res->st.lines_read += (int64_t)pt->r.nitems;
	res->st.ignored += (int64_t)pt->r.skipped_no_gpu;
	/* a pod whose GPUs are (partly) not understood is stored, and its
	 * reason recorded: it counts as skipped so the run says so (exit 4) */
	res->st.skipped += (int64_t)(pt->r.skipped_bad + pt->r.gpu_unclear);
	res->pods += (int64_t)pt->r.npods;
	record_problems(res, &pt->r, o->input_name, o->max_skip_reasons);
	if (*key_cap < pt->r.npods) {
		*key_cap = pt->r.npods;
		*key_off = gl_xrealloc(*key_off, *key_cap * sizeof **key_off);
	}
	for (size_t i = 0; i < pt->r.npods; i++) {
		(*key_off)[i] = keys->len;
		gl_strbuf_puts(keys, "pod:");
		gl_strbuf_puts(keys, pt->r.pods[i].uid);
		gl_strbuf_putc(keys, '\0');
	}
}

/* A pod held cut by gl_kube_bound_held: a reason of the run, by name. */
static void record_cut(struct gl_kube_ingest_result *res, const struct gl_kube_pod *p, const char *input,
		       int64_t max_reasons)
{
	struct gl_ingest_stats *s = &res->st;
	char path[300], why[400];
	res->st.skipped++;
	snprintf(path, sizeof path, "pod %s/%s", p->namespace_ ? p->namespace_ : "", p->name ? p->name : p->uid);
	if (p->held_cut_uuid[0])
		snprintf(why, sizeof why, "GPU %s of node %s is held whole by pods that started before it: %lld of its "
					  "%lld micro-GPUs held in the books",
			 p->held_cut_uuid, p->node_name, (long long)p->held_micro,
			 (long long)(p->held_micro + p->held_cut_micro));
	else
		snprintf(why, sizeof why, "the GPUs of node %s are held whole by pods that started before it: %lld of its "
					  "%lld micro-GPUs held in the books",
			 p->node_name, (long long)p->held_micro, (long long)(p->held_micro + p->held_cut_micro));
	gl_log(GL_LOG_WARN, "%s: %s: %s", input, path, why);
	if (s->n_reasons >= max_reasons)
		return;
	if (s->n_reasons)
		gl_strbuf_putc(&s->reasons, ',');
	gl_strbuf_puts(&s->reasons, "{\"path\":\"");
	gl_utf8_put_json_lossy(&s->reasons, path, strlen(path));
	gl_strbuf_puts(&s->reasons, "\",\"reason\":\"");
	gl_utf8_put_json_lossy(&s->reasons, why, strlen(why));
	gl_strbuf_puts(&s->reasons, "\"}");
	s->n_reasons++;
}

/* Every part parsed, then what needs the whole snapshot: run:ai pods get
 * the UUID of their group's reservation wherever in the document it is,
 * and the pods sharing a GPU never hold more than it. -1 when a part did
 * not parse (the whole document must decide). */
static int whole_snapshot(struct parser *ps, const struct gl_kube_ingest_opts *o, struct gl_kube_ingest_result *res)
{
	struct gl_kube_pod **all = NULL;
	size_t n = 0, k = 0;
	if (parser_check_all(ps))
		return -1;
	for (size_t s = 0; s < ps->nslices; s++)
		n += ps->parts[s].r.npods;
	all = gl_xmalloc((n ? n : 1) * sizeof *all);
	for (size_t s = 0; s < ps->nslices; s++)
		for (size_t i = 0; i < ps->parts[s].r.npods; i++)
			all[k++] = &ps->parts[s].r.pods[i];
	gl_kube_link_runai(all, n);
	if (gl_kube_bound_held(all, n, ps->ko.nodes, ps->ko.nnodes))
		for (size_t i = 0; i < n; i++)
			if (all[i]->held_cut_micro > 0)
				record_cut(res, all[i], o->input_name, o->max_skip_reasons);
	free(all);
	return 0;
}

/* Writes the parts: batch_rows pods per transaction, the vanished pods,
 * the watermark and the final status in the last one. Every part is
 * parsed before the first is written (whole_snapshot), so a bad document
 * writes nothing. *bad_doc = 1 (rc 0) when a part did not parse: everything
 * was rolled back and the whole document must decide. */
static int ingest_parts(struct gl_store *db, int cluster_id, const struct gl_kube_ingest_opts *o, struct parser *ps,
			struct gl_kube_ingest_result *res, int *bad_doc, struct gl_err *err)
{
	struct gl_strbuf keys = GL_STRBUF_INIT;
	struct keyset listed = {0};
	struct gl_jobs_batch *b = gl_jobs_batch_new(cluster_id);
	size_t batch = o->batch_rows > 0 ? (size_t)o->batch_rows : 50000, in_txn_rows = 0, nkeys = 0;
	size_t *key_off = NULL, key_cap = 0;
	struct part *pt;
	int in_txn = 0, rc = 0, first_txn = 1, fresh = 0;
	int64_t vanished = 0;
	/* the counters as last committed: a failed run records what it wrote */
	int64_t ins0 = res->st.inserted, upd0 = res->st.updated, unc0 = res->st.unchanged;

	*bad_doc = 0;
	if (whole_snapshot(ps, o, res)) {
		*bad_doc = 1;
		goto fail;
	}
	while ((pt = parser_next(ps))) {
		if (pt->rc) {
			*bad_doc = 1;
			goto fail;
		}
		take_part(pt, o, res, &keys, &key_off, &key_cap);
		nkeys += pt->r.npods;
		for (size_t from = 0; from < pt->r.npods;) {
			size_t to = pt->r.npods - from > batch - in_txn_rows ? from + (batch - in_txn_rows) : pt->r.npods;
			if (!in_txn && (rc = begin_txn(db, cluster_id, o, res, err)))
				goto out;
			if (!in_txn && first_txn) {
				in_txn = 1;
				first_txn = 0;
				/* under the lock: a cluster with no jobs yet needs no
				 * lookups in this transaction (gl_jobs_batch_set_fresh) */
				if ((rc = cluster_is_empty(db, cluster_id, &fresh, err)))
					goto fail;
				gl_jobs_batch_set_fresh(b, fresh);
				gl_jobs_batch_stream(b, db);
			}
			in_txn = 1;
			if ((rc = add_pods(db, cluster_id, o, &pt->r, from, to, keys.p, key_off, fresh, b, res, err)))
				goto fail;
			in_txn_rows += to - from;
			from = to;
			/* a few slices per COPY: fewer round trips, still overlapped */
			if ((gl_jobs_batch_rows(b) >= MERGE_ROWS || in_txn_rows >= batch) &&
			    (rc = flush_batch(db, cluster_id, b, res, err)))
				goto fail;
			if (in_txn_rows >= batch) {
				if (parser_check_all(ps)) {
					*bad_doc = 1;
					goto fail;
				}
				/* the samples that waited for these pods: jobs are
				 * claimed by the transaction that writes them */
				if ((rc = gl_dcgm_ingest_claim_pending(db, cluster_id, NULL, err)) ||
				    (rc = gl_ingest_run_update(db, res->run_id, &res->st, "running", NULL, err)) ||
				    (rc = gl_txn_commit(db, err)))
					goto fail;
				in_txn = 0;
				fresh = 0;
				gl_jobs_batch_set_fresh(b, 0);
				in_txn_rows = 0;
				ins0 = res->st.inserted;
				upd0 = res->st.updated;
				unc0 = res->st.unchanged;
			}
		}
		gl_strbuf_append(&keys, pt->extra.p, pt->extra.len);
		nkeys += pt->nextra;
		parser_release(pt);
	}
	if (!in_txn && (rc = begin_txn(db, cluster_id, o, res, err)))
		goto out;
	in_txn = 1;
	if ((rc = flush_batch(db, cluster_id, b, res, err)))
		goto fail;
	keyset_build(&listed, &keys, nkeys);
	if ((rc = close_vanished(db, cluster_id, res->watermark_prev_s, &listed, &vanished, err)))
		goto fail;
	res->st.updated += vanished;
	if ((rc = gl_dcgm_ingest_claim_pending(db, cluster_id, NULL, err)))
		goto fail;
	if (res->watermark_prev_s != o->at_s &&
	    (rc = gl_ingest_watermark_set(db, GL_KUBE_INGEST_SOURCE, cluster_id, o->at_s, err)))
		goto fail;
	if ((rc = gl_ingest_run_update(db, res->run_id, &res->st, res->st.skipped ? "partial" : "ok", NULL, err)) ||
	    (rc = gl_txn_commit(db, err)))
		goto fail;
	res->vanished = vanished;
	goto out;
fail:
	gl_jobs_batch_set_fresh(b, 0); /* ends an open COPY before the ROLLBACK */
	if (in_txn)
		gl_txn_rollback(db);
	res->st.inserted = ins0;
	res->st.updated = upd0;
	res->st.unchanged = unc0;
out:
	free(key_off);
	free(listed.slot);
	gl_strbuf_fini(&keys);
	gl_jobs_batch_free(b);
	return rc;
}

/* What a run cut short by the stop leaves to the next: batches committed
 * stay, the rest of the snapshot was rolled back. */
#define KUBE_REDO                                                                                                \
	"the pods not committed, the vanished ones and the watermark come with the next run's snapshot (merged by " \
	"pod uid: none twice)"

static void record_failed(struct gl_store *db, struct gl_kube_ingest_result *res, const struct gl_err *why)
{
	struct gl_err e2 = {0};
	if (res->run_id && gl_ingest_run_fail(db, res->run_id, &res->st, why->msg, KUBE_REDO, &e2))
		gl_log(GL_LOG_WARN, "kube: could not record the failed run: %s", e2.msg);
}

int gl_kube_ingest_doc(struct gl_store *db, const struct gl_kube_ingest_opts *o, char *doc, size_t len,
		       struct gl_kube_ingest_result *res, struct gl_err *err)
{
	struct gl_kube_opts ko = {0};
	struct gl_kubestore_node_list nodes = {0};
	struct parser ps = {0};
	int64_t wm, run_id;
	int cluster_id, rc, bad_doc = 0;

	memset(res, 0, sizeof *res);
	gl_ingest_stats_init(&res->st, o->max_skip_reasons);
	res->watermark_prev_s = GL_TIME_NONE;
	if (o->at_s == GL_TIME_NONE) {
		rc = gl_err_set(err, GL_EINVAL, "%s: the time the snapshot was taken is required", o->input_name);
		goto out;
	}
	if ((rc = gl_jobs_cluster_ensure(db, o->cluster, "kubernetes", &cluster_id, err)) ||
	    (rc = gl_ingest_run_begin(db, GL_KUBE_INGEST_SOURCE, cluster_id, o->input_name, &res->run_id, err)))
		goto out;
	/* early, before parsing a large document for nothing; checked again
	 * under the lock in every transaction */
	if ((rc = check_watermark(db, cluster_id, o, &wm, err)))
		goto failed;
	res->watermark_prev_s = wm;
	ko.team_label = o->team_label;
	ko.project_label = o->project_label;
	ko.cost_center_label = o->cost_center_label;
	ko.max_doc_bytes = o->max_doc_bytes;
	/* replicas and GPU memory per node (kube-nodes) say what a share is */
	if ((rc = gl_kubestore_node_gpus(db, cluster_id, o->at_s, &nodes, err)))
		goto failed;
	ko.nodes = nodes.v;
	ko.nnodes = nodes.n;
	if (!doc)
		len = 0;
	for (int whole = 0; whole < 2; whole++) {
		parser_start(&ps, doc ? doc : "", len, &ko, whole);
		gl_log(GL_LOG_DEBUG, "%s: %zu bytes in %zu part(s)%s", o->input_name, len, ps.nslices,
		       ps.threaded ? ", parsed by a worker thread" : "");
		if ((rc = ingest_parts(db, cluster_id, o, &ps, res, &bad_doc, err)))
			goto failed;
		if (!bad_doc)
			break;
		if (ps.whole) {
			/* the whole document's own verdict (its one part) */
			*err = ps.parts[0].err;
			rc = -err->code;
			gl_err_prefix(err, "%s: ", o->input_name);
			goto failed;
		}
		/* a slice failed: all was rolled back; start again from the
		 * whole document, which gives the authoritative verdict */
		parser_fini(&ps);
		run_id = res->run_id;
		gl_kube_ingest_result_fini(res);
		gl_ingest_stats_init(&res->st, o->max_skip_reasons);
		res->run_id = run_id;
		res->watermark_prev_s = wm;
	}
	goto out;
failed:
	record_failed(db, res, err);
out:
	gl_ingest_run_audit(db, res->run_id);
	parser_fini(&ps);
	gl_kubestore_node_list_fini(&nodes);
	free(doc);
	return rc;
}

int gl_kube_ingest_file(struct gl_store *db, const struct gl_kube_ingest_opts *o, const char *path,
			struct gl_kube_ingest_result *res, struct gl_err *err)
{
	size_t cap = o->max_doc_bytes ? o->max_doc_bytes : GL_KUBE_MAX_DOC_BYTES_DEFAULT, got = 0;
	struct stat sb;
	char *buf = NULL;
	FILE *f;

	memset(res, 0, sizeof *res);
	gl_ingest_stats_init(&res->st, 0);
	f = fopen(path, "rb");
	if (!f)
		return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
		fclose(f);
		return gl_err_set(err, GL_EIO, "%s: not a regular file", path);
	}
	if ((uint64_t)sb.st_size > cap) {
		fclose(f);
		return gl_err_set(err, GL_ERANGE, "%s: %lld bytes is over the %zu-byte document limit", path,
				  (long long)sb.st_size, cap);
	}
	buf = gl_xmalloc((size_t)sb.st_size + 1);
	/* the file may be rewritten while we read: take what is there, the
	 * parser rejects a torn document */
	got = fread(buf, 1, (size_t)sb.st_size, f);
	if (ferror(f)) {
		fclose(f);
		free(buf);
		return gl_err_set(err, GL_EIO, "%s: read error", path);
	}
	fclose(f);
	buf[got] = '\0';
	gl_ingest_stats_fini(&res->st);
	return gl_kube_ingest_doc(db, o, buf, got, res, err);
}

int gl_kube_ingest_record_failure(struct gl_store *db, const char *cluster, const char *input_name, const char *why,
				  struct gl_err *err)
{
	struct gl_ingest_stats st;
	int64_t run_id;
	int cluster_id, rc;

	gl_ingest_stats_init(&st, 0);
	/* a command the stop killed: its record is not cancelled in turn */
	if (gl_dbcancel_requested(GL_DBCANCEL_WORK))
		gl_dbcancel_defer();
	if (!(rc = gl_jobs_cluster_ensure(db, cluster, "kubernetes", &cluster_id, err)) &&
	    !(rc = gl_ingest_run_begin(db, GL_KUBE_INGEST_SOURCE, cluster_id, input_name, &run_id, err))) {
		rc = gl_ingest_run_fail(db, run_id, &st, why, "nothing was read: the next run lists the pods again",
					err);
		gl_ingest_run_audit(db, run_id);
	}
	gl_ingest_stats_fini(&st);
	return rc;
}

/* ---- the daemon source ---------------------------------------------- */

struct capture {
	struct gl_strbuf out;
	size_t cap;
	int over;
};

static int on_out(const char *buf, size_t n, void *ud)
{
	struct capture *k = ud;
	if (k->out.len + n > k->cap) {
		k->over = 1;
		return -GL_ERANGE; /* gl_proc_run kills the command */
	}
	gl_strbuf_append(&k->out, buf, n);
	return 0;
}

/* Runs the command; the whole stdout when it exited 0, else an error.
 * shown: the command as messages quote it (credentials blanked). */
static int run_command(const struct gl_config_kube_source *src, const char *shown, size_t cap, struct gl_strbuf *out,
		       struct gl_err *err)
{
	const char *argv[64];
	char *words = gl_xstrdup(src->command), *save = NULL, how[64];
	struct capture k = {GL_STRBUF_INIT, cap, 0};
	struct gl_proc_opts po = {0};
	struct gl_proc_result pr;
	size_t n = 0;
	int rc;

	for (char *t = strtok_r(words, " \t", &save); t && n < GL_ARRAY_LEN(argv) - 1; t = strtok_r(NULL, " \t", &save))
		argv[n++] = t;
	argv[n] = NULL;
	if (n == 0) {
		rc = gl_err_set(err, GL_ECONFIG, "kube %s: empty command", src->cluster);
		goto out;
	}
	po.timeout_s = (int)src->timeout_s;
	po.on_stdout = on_out;
	po.ud = &k;
	rc = gl_proc_run(argv, &po, &pr, err);
	if (k.over) {
		rc = gl_err_set(err, GL_ERANGE, "kube %s: %s: output over the %zu-byte document limit", src->cluster,
				shown, cap);
		goto out;
	}
	if (rc)
		goto out;
	if (!pr.exited || pr.status != 0) {
		gl_proc_describe(&pr, how, sizeof how);
		rc = gl_err_set(err, GL_EIO, "kube %s: %s: %s%s%.400s", src->cluster, shown, how,
				pr.stderr_bytes ? ": " : "", pr.stderr_excerpt);
		goto out;
	}
	*out = k.out;
	k.out = (struct gl_strbuf)GL_STRBUF_INIT;
out:
	gl_strbuf_fini(&k.out);
	free(words);
	return rc;
}

int gl_kube_ingest_source_run(struct gl_store *db, const struct gl_config *cfg, const void *srcv, int64_t now_s, char *summary,
		       size_t n, struct gl_err *err)
{
	const struct gl_config_kube_source *src = srcv;
	struct gl_kube_ingest_opts o = {0};
	struct gl_kube_ingest_result res = {0};
	/* the command as every message, log line and ingest_runs row quotes
	 * it: `kubectl --token=...` must not reach the daemon's log either */
	struct gl_strbuf shown = GL_STRBUF_INIT;
	int rc;

	gl_redact_secrets(src->command, &shown);
	o.cluster = src->cluster;
	o.batch_rows = cfg->ingest_batch_rows;
	o.max_skip_reasons = cfg->ingest_max_skip_reasons;
	o.team_label = src->label_team;
	o.project_label = src->label_project;
	o.cost_center_label = src->label_cost_center;
	if (src->file[0]) {
		struct stat sb;
		o.input_name = src->file;
		/* the file says when it was written: a refresher that stopped leaves
		 * an old mtime, so its pods are not claimed to be seen "now" (and the
		 * unchanged file re-ingests as a no-op) */
		if (stat(src->file, &sb) != 0) {
			rc = gl_err_set(err, GL_EIO, "kube %s: %s: %s", src->cluster, src->file, strerror(errno));
			goto failed;
		}
		o.at_s = (int64_t)sb.st_mtime < now_s ? (int64_t)sb.st_mtime : now_s;
		rc = gl_kube_ingest_file(db, &o, src->file, &res, err);
		if (rc && !res.run_id)
			goto failed; /* not read at all: record it below */
	} else {
		struct gl_strbuf out = GL_STRBUF_INIT;
		size_t len;
		o.input_name = gl_strbuf_cstr(&shown);
		o.at_s = now_s; /* listed no earlier than this: conservative for vanished pods */
		if ((rc = run_command(src, o.input_name, GL_KUBE_MAX_DOC_BYTES_DEFAULT, &out, err)))
			goto failed;
		len = out.len;
		rc = gl_kube_ingest_doc(db, &o, gl_strbuf_steal(&out), len, &res, err);
	}
	if (!rc)
		snprintf(summary, n,
			 "%lld pods (%lld running, %lld pending), %lld inserted, %lld updated, %lld unchanged, "
			 "%lld vanished, %lld skipped",
			 (long long)res.pods, (long long)res.running, (long long)res.pending, (long long)res.st.inserted,
			 (long long)res.st.updated, (long long)res.st.unchanged, (long long)res.vanished,
			 (long long)res.st.skipped);
	goto out;
failed:
	/* no document: nothing is closed, the last known state stays in force */
	{
		struct gl_err e2 = {0};
		if (gl_kube_ingest_record_failure(db, src->cluster, o.input_name, err->msg, &e2))
			gl_log(GL_LOG_WARN, "kube %s: could not record the failed run: %s", src->cluster, e2.msg);
	}
out:
	gl_kube_ingest_result_fini(&res);
	gl_strbuf_fini(&shown);
	return rc;
}
