/* The daemon's dcgm-exporter source (see include/gl/dcgm_scrape.h). */
#include "gl/dcgm_scrape.h"
#include "gl/dcgm.h"
#include "gl/dcgm_attrib.h"
#include "gl/dcgm_ingest.h"
#include "gl/srchealth.h"
#include "gl/log.h"
#include "gl/proc.h"
#include "gl/redact.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- targets ------------------------------------------------------------ */

/* Adds url (once); returns its index. */
static size_t add_target(struct gl_dcgm_scrape_target **t, size_t *n, size_t *cap, const char *url, size_t ulen,
			 const char *node, size_t nlen)
{
	for (size_t i = 0; i < *n; i++)
		if (strlen((*t)[i].url) == ulen && !memcmp((*t)[i].url, url, ulen))
			return i;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*t = gl_xrealloc(*t, *cap * sizeof **t);
	}
	(*t)[*n].url = gl_xstrndup(url, ulen);
	(*t)[*n].node = nlen ? gl_xstrndup(node, nlen) : NULL;
	return (*n)++;
}

static size_t tok(const char *s, const char *seps, size_t *skip)
{
	size_t a = strspn(s, seps), b = strcspn(s + a, seps);
	*skip = a;
	return b;
}

/* "node=NAME" names the node of the URL before it. */
static int node_token(const char *s, size_t n)
{
	return n >= 5 && !memcmp(s, "node=", 5);
}

int gl_dcgm_scrape_targets_parse(const char *targets, struct gl_dcgm_scrape_target **out, size_t *n, size_t *cap,
			  struct gl_err *err)
{
	size_t skip, len, last = SIZE_MAX;
	const char *p = targets ? targets : "";

	while ((len = tok(p, " \t\r\n,", &skip)) > 0) {
		const char *w = p + skip;
		p += skip + len;
		if (!node_token(w, len)) {
			last = add_target(out, n, cap, w, len, NULL, 0);
			continue;
		}
		if (last == SIZE_MAX || len == 5 || (*out)[last].node)
			return gl_err_set(err, GL_ECONFIG, "'%.*s': %s", len > 100 ? 100 : (int)len, w,
					  len == 5 ? "empty node name" : "node=NAME must follow a URL, once");
		(*out)[last].node = gl_xstrndup(w + 5, len - 5);
		last = SIZE_MAX;
	}
	return 0;
}

int gl_dcgm_scrape_targets_load(const struct gl_config_dcgm_source *src, struct gl_dcgm_scrape_target **out, size_t *n,
			 struct gl_err *err)
{
	struct gl_dcgm_scrape_target *t = NULL;
	size_t cnt = 0, cap = 0, skip;
	FILE *f = NULL;
	char line[4096];
	size_t lineno = 0;
	int rc = 0;

	if ((rc = gl_dcgm_scrape_targets_parse(src->targets, &t, &cnt, &cap, err))) {
		gl_err_prefix(err, "dcgm %s: targets: ", src->cluster);
		goto out;
	}
	if (src->targets_file && src->targets_file[0]) {
		f = fopen(src->targets_file, "r");
		if (!f) {
			rc = gl_err_set(err, GL_EIO, "targets_file %s: %s", src->targets_file, strerror(errno));
			goto out;
		}
		while (fgets(line, sizeof line, f)) {
			const char *u, *nd;
			size_t ul, nl, s2;
			lineno++;
			line[strcspn(line, "#\n")] = '\0';
			ul = tok(line, " \t\r", &skip);
			if (!ul)
				continue;
			u = line + skip;
			nl = tok(u + ul, " \t\r", &s2);
			nd = u + ul + s2;
			if (node_token(nd, nl)) {
				nd += 5;
				nl -= 5;
			}
			add_target(&t, &cnt, &cap, u, ul, nd, nl);
		}
	}
out:
	if (f)
		fclose(f);
	if (rc) {
		gl_dcgm_scrape_targets_free(t, cnt);
		t = NULL;
		cnt = 0;
	}
	*out = t;
	*n = cnt;
	return rc;
}

void gl_dcgm_scrape_targets_free(struct gl_dcgm_scrape_target *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++) {
		free(t[i].url);
		free(t[i].node);
	}
	free(t);
}

/* ---- concurrent fetch --------------------------------------------------- */

struct xfer {
	struct gl_dcgm_scrape_fetch *f;
	size_t max_body;
	int too_big;
	char curl_err[CURL_ERROR_SIZE];
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t k = size * nmemb;
	if (x->f->body.len + k > x->max_body) {
		x->too_big = 1;
		return 0; /* aborts the transfer */
	}
	gl_strbuf_append(&x->f->body, p, k);
	return k;
}

static CURL *start(struct gl_dcgm_scrape_fetch *f, const struct gl_dcgm_scrape_fetch_opts *o, struct xfer *x)
{
	CURL *h = curl_easy_init();
	if (!h)
		return NULL;
	memset(x, 0, sizeof *x);
	x->f = f;
	x->max_body = o->max_body ? o->max_body : GL_DCGM_SCRAPE_MAX_BODY;
	curl_easy_setopt(h, CURLOPT_URL, f->url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->curl_err);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	/* "" = every encoding libcurl can decode (gzip, deflate, ...) */
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "gpuledger/" GL_VERSION);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)x->max_body);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	return h;
}

static void finish(CURL *h, struct xfer *x, CURLcode cc)
{
	struct gl_dcgm_scrape_fetch *f = x->f;
	double t = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &f->http_status);
	curl_easy_getinfo(h, CURLINFO_TOTAL_TIME, &t);
	f->duration_s = t;
	f->ok = 0;
	if (x->too_big || cc == CURLE_FILESIZE_EXCEEDED)
		snprintf(f->error, sizeof f->error, "response larger than %zu bytes", x->max_body);
	else if (cc != CURLE_OK)
		snprintf(f->error, sizeof f->error, "%s%s%s", curl_easy_strerror(cc), x->curl_err[0] ? ": " : "",
			 x->curl_err);
	else if (f->http_status != 200)
		snprintf(f->error, sizeof f->error, "HTTP %ld", f->http_status);
	else
		f->ok = 1;
	if (!f->ok)
		gl_strbuf_fini(&f->body);
}

int gl_dcgm_scrape_fetch_all(struct gl_dcgm_scrape_fetch *f, size_t n, const struct gl_dcgm_scrape_fetch_opts *o,
		      void (*on_done)(struct gl_dcgm_scrape_fetch *f, void *ud), void *ud, struct gl_err *err)
{
	size_t par = o->max_parallel ? o->max_parallel : 1, next = 0, running = 0;
	struct xfer *xs = gl_xcalloc(par, sizeof *xs);
	CURL **slot = gl_xcalloc(par, sizeof *slot); /* in flight per slot, NULL when free */
	CURLM *m = curl_multi_init();
	int rc = 0;

	if (!m) {
		rc = gl_err_set(err, GL_EIO, "dcgm: curl_multi_init failed");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		f[i].ok = 0;
		f[i].http_status = 0;
		f[i].error[0] = '\0';
		f[i].duration_s = 0;
		gl_strbuf_init(&f[i].body);
	}
	while (next < n || running) {
		CURLMsg *msg;
		int still, left;
		/* keep max_parallel transfers in flight */
		for (size_t s = 0; s < par && next < n; s++) {
			CURL *h;
			if (slot[s])
				continue;
			h = start(&f[next], o, &xs[s]);
			if (!h || curl_multi_add_handle(m, h) != CURLM_OK) {
				if (h)
					curl_easy_cleanup(h);
				snprintf(f[next].error, sizeof f[next].error, "could not start the transfer");
				if (on_done)
					on_done(&f[next], ud);
				next++;
				continue;
			}
			slot[s] = h;
			next++;
			running++;
		}
		if (curl_multi_perform(m, &still) != CURLM_OK) {
			rc = gl_err_set(err, GL_EIO, "dcgm: curl_multi_perform failed");
			goto out;
		}
		while ((msg = curl_multi_info_read(m, &left))) {
			struct xfer *x = NULL;
			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			finish(msg->easy_handle, x, msg->data.result);
			curl_multi_remove_handle(m, msg->easy_handle);
			curl_easy_cleanup(msg->easy_handle);
			slot[x - xs] = NULL;
			running--;
			if (on_done)
				on_done(x->f, ud);
		}
		/* a slow target must not hold the stop for its timeout: the round
		 * is dropped whole (nothing of it is written) */
		if (gl_proc_stopping()) {
			rc = gl_err_set(err, GL_EIO, "dcgm: stopped while scraping (the daemon is stopping): %zu of %zu "
						     "targets not done, nothing written; the next round scrapes them again",
					n - next + running, n);
			goto out;
		}
		if (running && curl_multi_poll(m, NULL, 0, 200, NULL) != CURLM_OK) {
			rc = gl_err_set(err, GL_EIO, "dcgm: curl_multi_poll failed");
			goto out;
		}
	}
out:
	if (m) {
		/* only on a libcurl failure: drop what is still in flight */
		for (size_t s = 0; s < par; s++) {
			if (!slot[s])
				continue;
			curl_multi_remove_handle(m, slot[s]);
			curl_easy_cleanup(slot[s]);
		}
		curl_multi_cleanup(m);
	}
	for (size_t i = 0; i < n; i++)
		gl_strbuf_fini(&f[i].body);
	free(xs);
	free(slot);
	return rc;
}

/* ---- the source --------------------------------------------------------- */

struct round {
	const struct gl_config_dcgm_source *src;
	struct gl_dcgm_ingest_batch *b;
	int64_t now_s;
	size_t good, bad;
	char first_error[400];
};

static void on_fetched(struct gl_dcgm_scrape_fetch *f, void *ud)
{
	struct round *rd = ud;
	const struct gl_dcgm_scrape_target *t = f->ud;
	struct gl_dcgm_scrape s;
	struct gl_dcgm_opts so = {t->node};
	struct gl_err perr = {0};
	char why[400], empty[400];
	const char *why_empty;
	int ok = f->ok;

	why[0] = '\0';
	if (!ok) {
		snprintf(why, sizeof why, "%s", f->error);
	} else {
		int prc = gl_dcgm_scrape_parse(&s, f->body.p ? f->body.p : "", f->body.len, &so, &perr);
		/* the body is not needed any more: keep the round's memory to the
		 * transfers in flight */
		gl_strbuf_fini(&f->body);
		if (prc) {
			snprintf(why, sizeof why, "not Prometheus text: %s", perr.msg);
			ok = 0;
		} else if ((why_empty = gl_dcgm_scrape_why_empty(&s, empty, sizeof empty))) {
			/* what is missing, as `ingest dcgm` says it: no GPU metric at
			 * all, none naming a GPU, or GPUs without a node */
			snprintf(why, sizeof why, "%s", why_empty);
			ok = 0;
		} else {
			gl_dcgm_ingest_batch_add(rd->b, &s, f->url);
		}
		gl_dcgm_scrape_fini(&s);
	}
	gl_srchealth_report("dcgm", rd->src->cluster, f->url, ok, rd->now_s, ok ? NULL : why, f->duration_s);
	if (ok) {
		rd->good++;
	} else {
		rd->bad++;
		gl_dcgm_ingest_batch_fail(rd->b, f->url, why);
		if (!rd->first_error[0]) {
			/* logged and stored: a target's user:password@ or
			 * ?token= must reach neither, nor libcurl's words on it */
			struct gl_strbuf raw = GL_STRBUF_INIT, u = GL_STRBUF_INIT;
			gl_strbuf_printf(&raw, "%s: %s", f->url, why);
			gl_redact_secrets(gl_strbuf_cstr(&raw), &u);
			snprintf(rd->first_error, sizeof rd->first_error, "%s", gl_strbuf_cstr(&u));
			gl_strbuf_fini(&raw);
			gl_strbuf_fini(&u);
		}
	}
}

/* Target failures are in /metrics every round; the log gets them at most
 * every 10 minutes per source. */
static struct gl_log_limiter *limiter_for(const void *src)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		const void *src;
		struct gl_log_limiter lim;
	} tab[64];
	static size_t ntab;
	struct gl_log_limiter *l = NULL;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < ntab; i++)
		if (tab[i].src == src)
			l = &tab[i].lim;
	if (!l && ntab < GL_ARRAY_LEN(tab)) {
		tab[ntab].src = src;
		tab[ntab].lim = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(600);
		l = &tab[ntab++].lim;
	}
	pthread_mutex_unlock(&mu);
	return l;
}

int gl_dcgm_scrape_source_run(struct gl_store *db, const struct gl_config *cfg, const void *srcp, int64_t now_s, char *summary,
		       size_t n, struct gl_err *err)
{
	const struct gl_config_dcgm_source *src = srcp;
	struct gl_dcgm_scrape_target *t = NULL;
	struct gl_dcgm_scrape_fetch *f = NULL;
	struct gl_dcgm_scrape_fetch_opts fo = {0};
	struct gl_dcgm_ingest_opts o;
	struct gl_dcgm_ingest_result res;
	struct round rd = {0};
	struct gl_log_limiter *lim;
	char input[128];
	size_t nt = 0;
	int rc;

	if ((rc = gl_dcgm_scrape_targets_load(src, &t, &nt, err)) || (rc = gl_dcgm_ingest_opts_init(&o, cfg, src->cluster, err)))
		goto out;
	if (!nt) {
		rc = gl_err_set(err, GL_ECONFIG, "dcgm %s: no targets", src->cluster);
		goto out;
	}
	snprintf(input, sizeof input, "%zu targets", nt);
	o.input_name = input;
	f = gl_xcalloc(nt, sizeof *f);
	for (size_t i = 0; i < nt; i++) {
		f[i].url = t[i].url;
		f[i].ud = &t[i];
	}
	fo.timeout_ms = src->timeout_s * 1000;
	fo.max_parallel = (size_t)src->max_parallel;
	rd.src = src;
	rd.now_s = now_s;
	rd.b = gl_dcgm_ingest_batch_new(cfg->ingest_max_skip_reasons);
	if ((rc = gl_dcgm_scrape_fetch_all(f, nt, &fo, on_fetched, &rd, err)))
		goto out;
	lim = limiter_for(src);
	if (rd.bad && lim)
		gl_log_fail(lim, now_s, GL_LOG_WARN, "dcgm %s: %zu of %zu targets failed (%s)", src->cluster, rd.bad, nt,
			    rd.first_error);
	else if (lim)
		gl_log_ok(lim, "dcgm targets");
	if (gl_proc_stopping()) {
		rc = gl_err_set(err, GL_EIO,
				"dcgm %s: stopped before writing the round (the daemon is stopping); the next round "
				"scrapes the targets again",
				src->cluster);
		goto out;
	}
	/* the good ones go in even when others failed */
	if ((rc = gl_dcgm_ingest(db, &o, rd.b, now_s, &res, err)))
		goto out;
	if (!rd.good) {
		rc = gl_err_set(err, GL_EIO, "dcgm %s: all %zu targets failed (%s)", src->cluster, nt, rd.first_error);
		goto out;
	}
	snprintf(summary, n,
		 "%zu/%zu targets, %lld GPUs, %lld samples applied, %lld stale, %lld unattributed, %lld new, %lld marked absent",
		 rd.good, nt, (long long)res.gpus, (long long)res.applied, (long long)res.stale,
		 (long long)res.unattributed, (long long)res.new_gpus, (long long)res.marked_absent);
out:
	gl_dcgm_ingest_batch_free(rd.b);
	free(f);
	gl_dcgm_scrape_targets_free(t, nt);
	return rc;
}
