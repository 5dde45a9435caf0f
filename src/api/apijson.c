/* Parameter and JSON helpers of the route handlers (see include/gl/apijson.h). */
#include "gl/apijson.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/ingest.h"
#include "gl/jsonw.h"
#include "gl/log.h"
#include "gl/shard.h"
#include "gl/timeutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gl_apijson_digits(const char *v, long long *out)
{
	char *end;
	long long x;
	/* strtoll alone takes " 5", "+5" and "-5", and saturates on overflow */
	if (!*v || strspn(v, "0123456789") != strlen(v))
		return -GL_EINVAL;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno == ERANGE)
		return -GL_ERANGE;
	*out = x;
	return 0;
}

int gl_apijson_int_param(struct gl_req *req, struct gl_resp *resp, const char *name, long long def, long long min,
			 long long max, long long *out)
{
	const char *v = gl_req_param(req, name);
	long long x;
	int rc;
	*out = def;
	if (!v)
		return 0;
	if ((rc = gl_apijson_digits(v, &x)) == -GL_EINVAL)
		return gl_resp_error(resp, GL_EINVAL, name, "%s: expected digits, got '%s'", name, v);
	if (rc || x < min || x > max)
		return gl_resp_error(resp, GL_EINVAL, name, "%s: must be between %lld and %lld", name, min, max);
	*out = x;
	return 0;
}

int gl_apijson_window(struct gl_req *req, struct gl_resp *resp, const char *def, struct gl_window *w)
{
	const char *v = gl_req_param(req, "window");
	struct gl_err e = {0};
	if (gl_window_parse(v ? v : def, req->now_s, w, &e))
		return gl_resp_error(resp, GL_EINVAL, "window", "window: %s", e.msg);
	/* one request must not make the database scan years of jobs */
	if (w->end_s - w->start_s > req->cfg->api_max_window_days * 86400)
		return gl_resp_error(resp, GL_EINVAL, "window", "window: longer than api.max_window_days (%lld days)",
				     (long long)req->cfg->api_max_window_days);
	return 0;
}

void gl_apijson_put(struct gl_resp *resp, const cJSON *root)
{
	char *s = cJSON_PrintUnformatted(root);
	if (!s)
		gl_oom(0);
	gl_strbuf_puts(&resp->body, s);
	gl_strbuf_putc(&resp->body, '\n');
	cJSON_free(s);
	resp->content_type = "application/json";
}

void gl_apijson_add_time(cJSON *o, const char *k, int64_t t)
{
	char buf[32];
	if (t == GL_TIME_NONE) {
		cJSON_AddNullToObject(o, k);
		return;
	}
	gl_timeutil_format(t, buf, sizeof buf);
	cJSON_AddStringToObject(o, k, buf);
}

void gl_apijson_add_window(cJSON *o, const char *k, const struct gl_window *w)
{
	char a[32], b[32];
	gl_timeutil_format(w->start_s, a, sizeof a);
	gl_timeutil_format(w->end_s, b, sizeof b);
	cJSON_AddItemToObject(o, k, cJSON_CreateStringArray((const char *[]){a, b}, 2));
}

void gl_apijson_add_str(cJSON *o, const char *k, const char *s)
{
	if (s)
		cJSON_AddStringToObject(o, k, s);
	else
		cJSON_AddNullToObject(o, k);
}

void gl_apijson_add_int(cJSON *o, const char *k, int64_t v, int null)
{
	if (null)
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, (double)v);
}

void gl_apijson_add_f8(cJSON *o, const char *k, double v, int null)
{
	if (null)
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, v);
}

void gl_apijson_w_int(struct gl_jsonw *w, const char *k, int64_t v, int null)
{
	if (null)
		gl_jsonw_null(w, k);
	else
		gl_jsonw_num(w, k, (double)v);
}

void gl_apijson_w_f8(struct gl_jsonw *w, const char *k, double v, int null)
{
	if (null)
		gl_jsonw_null(w, k);
	else
		gl_jsonw_num(w, k, v);
}

void gl_apijson_w_window(struct gl_jsonw *w, const char *k, const struct gl_window *win)
{
	gl_jsonw_array(w, k);
	gl_jsonw_time(w, NULL, win->start_s);
	gl_jsonw_time(w, NULL, win->end_s);
	gl_jsonw_end(w);
}

void gl_apijson_w_money(struct gl_jsonw *w, const char *k, int64_t micros, int minor)
{
	static const char sfx[] = "_micros";
	char km[64], buf[48];
	size_t kl = strlen(k);
	if (kl + sizeof sfx <= sizeof km) {
		memcpy(km, k, kl);
		memcpy(km + kl, sfx, sizeof sfx);
	} else {
		snprintf(km, sizeof km, "%s%s", k, sfx);
	}
	gl_jsonw_i64(w, km, micros);
	gl_cost_format(micros, minor, buf, sizeof buf);
	gl_jsonw_str(w, k, buf);
}

int gl_apijson_format(struct gl_req *req, struct gl_resp *resp, int *csv)
{
	const char *v = gl_req_param(req, "format");
	*csv = 0;
	if (!v || !strcmp(v, "json"))
		return 0;
	if (strcmp(v, "csv"))
		return gl_resp_error(resp, GL_EINVAL, "format", "format: '%s' is not json or csv", v);
	*csv = 1;
	return 0;
}

void gl_apijson_add_header(struct gl_resp *resp, const char *k, const char *v)
{
	for (size_t i = 0; i < GL_ARRAY_LEN(resp->extra_headers); i++)
		if (!resp->extra_headers[i][0]) {
			resp->extra_headers[i][0] = k;
			resp->extra_headers[i][1] = v;
			return;
		}
	gl_log(GL_LOG_ERROR, "api: no room for response header %s", k);
}

void gl_apijson_add_header_num(struct gl_resp *resp, const char *k, long long v)
{
	for (size_t i = 0; i < GL_ARRAY_LEN(resp->header_num); i++)
		if (!resp->header_num[i][0]) {
			snprintf(resp->header_num[i], sizeof resp->header_num[i], "%lld", v);
			gl_apijson_add_header(resp, k, resp->header_num[i]);
			return;
		}
	gl_log(GL_LOG_ERROR, "api: no room for response header %s", k);
}

void gl_apijson_set_csv(struct gl_resp *resp, const char *disposition)
{
	resp->content_type = "text/csv; charset=utf-8";
	/* a browser saves the table as a file instead of showing it */
	gl_apijson_add_header(resp, "Content-Disposition", disposition);
}

void gl_apijson_csv_int(struct gl_strbuf *o, int64_t v, int null)
{
	char buf[24] = "";
	if (!null)
		snprintf(buf, sizeof buf, "%lld", (long long)v);
	gl_csv_raw(o, buf);
}

void gl_apijson_csv_f8(struct gl_strbuf *o, double v, int null)
{
	if (null)
		gl_csv_raw(o, "");
	else
		gl_csv_f8(o, v);
}

void gl_apijson_csv_time(struct gl_strbuf *o, int64_t t)
{
	char buf[32] = "";
	if (t != GL_TIME_NONE)
		gl_timeutil_format(t, buf, sizeof buf);
	gl_csv_raw(o, buf);
}

void gl_apijson_csv_money(struct gl_strbuf *o, int64_t micros, int null, int minor)
{
	char buf[48] = "";
	if (!null)
		gl_cost_format(micros, minor, buf, sizeof buf);
	gl_csv_raw(o, buf);
}

void gl_apijson_csv_micro(struct gl_strbuf *o, long long micro)
{
	char buf[40];
	size_t n;
	snprintf(buf, sizeof buf, "%s%lld.%06lld", micro < 0 ? "-" : "", llabs(micro) / 1000000, llabs(micro) % 1000000);
	n = strlen(buf);
	while (buf[n - 1] == '0')
		buf[--n] = '\0';
	if (buf[n - 1] == '.')
		buf[n - 1] = '\0';
	gl_csv_raw(o, buf);
}

void gl_apijson_csv_header(struct gl_strbuf *o, const char *const *names)
{
	for (; *names; names++)
		gl_csv_field(o, *names);
	gl_csv_end(o);
}

void gl_apijson_prom_sample(struct gl_strbuf *o, const char *metric, const char *const *labels, const char *value)
{
	gl_strbuf_puts(o, metric);
	for (size_t i = 0; labels && labels[i]; i += 2) {
		gl_strbuf_putc(o, i ? ',' : '{');
		gl_strbuf_puts(o, labels[i]);
		gl_strbuf_puts(o, "=\"");
		/* names come from the database (clusters, sources): one quote or
		 * newline in them must not break the whole scrape */
		for (const char *v = labels[i + 1] ? labels[i + 1] : ""; *v; v++) {
			if (*v == '\\' || *v == '"')
				gl_strbuf_putc(o, '\\');
			if (*v == '\n')
				gl_strbuf_puts(o, "\\n");
			else
				gl_strbuf_putc(o, *v);
		}
		gl_strbuf_putc(o, '"');
	}
	if (labels && labels[0])
		gl_strbuf_putc(o, '}');
	gl_strbuf_putc(o, ' ');
	gl_strbuf_puts(o, value);
	gl_strbuf_putc(o, '\n');
}

int gl_apijson_list_has_empty(const char *v, char sep)
{
	size_t n = strlen(v);
	if (!n || v[0] == sep || v[n - 1] == sep)
		return 1;
	for (size_t i = 1; i < n; i++)
		if (v[i] == sep && v[i - 1] == sep)
			return 1;
	return 0;
}

void gl_apijson_add_unread(const struct gl_req *req, cJSON *root)
{
	const struct gl_shard_route *rt = gl_req_shards(req);
	cJSON *a = cJSON_AddArrayToObject(root, "clusters_unread");
	for (size_t i = 0; rt && i < rt->n_unread_clusters; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(rt->unread_clusters[i]));
	/* a shard never seen up has no cluster known: it is named itself */
	for (size_t i = 0; rt && !rt->n_unread_clusters && i < rt->n_unread_shards; i++) {
		char name[160];
		snprintf(name, sizeof name, "shard:%s", rt->unread_shards[i]);
		cJSON_AddItemToArray(a, cJSON_CreateString(name));
	}
}

char **gl_apijson_unread(const struct gl_req *req, size_t *n)
{
	cJSON *tmp = cJSON_CreateObject();
	char **v = NULL;
	size_t i = 0;
	gl_apijson_add_unread(req, tmp);
	*n = (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(tmp, "clusters_unread"));
	if (*n) {
		v = gl_xcalloc(*n, sizeof *v);
		for (cJSON *e = cJSON_GetObjectItem(tmp, "clusters_unread")->child; e; e = e->next)
			v[i++] = gl_xstrdup(e->valuestring);
	}
	cJSON_Delete(tmp);
	return v;
}

/* One data_through entry as JSON. */
static cJSON *through_json(const struct gl_ingest_data_through_row *r, int64_t now_s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "cluster", r->cluster);
	cJSON_AddStringToObject(o, "source", r->source);
	cJSON_AddStringToObject(o, "data", r->data);
	gl_apijson_add_time(o, "through", r->through_s);
	cJSON_AddNumberToObject(o, "staleness_seconds", (double)(now_s > r->through_s ? now_s - r->through_s : 0));
	return o;
}

/* "cluster/source/data=time" entries, comma-separated, as many as fit. */
static void through_header(struct gl_resp *resp, const struct gl_ingest_data_through_set *dt)
{
	size_t len = 0;
	resp->header_text[0] = '\0';
	for (size_t i = 0; i < dt->n; i++) {
		char t[32], one[256];
		int n;
		gl_timeutil_format(dt->rows[i].through_s, t, sizeof t);
		n = snprintf(one, sizeof one, "%s%s/%s/%s=%s", len ? ", " : "", dt->rows[i].cluster, dt->rows[i].source,
			     dt->rows[i].data, t);
		if (n < 0 || (size_t)n >= sizeof one || len + (size_t)n >= sizeof resp->header_text)
			break;
		memcpy(resp->header_text + len, one, (size_t)n + 1);
		len += (size_t)n;
	}
	gl_apijson_add_header(resp, "X-Data-Through", resp->header_text);
}

int gl_apijson_add_data_through(cJSON *root, const struct gl_ingest_data_through_set *dt, int64_t end_s, int64_t now_s)
{
	int64_t upto = end_s < now_s ? end_s : now_s;
	cJSON *all = cJSON_AddArrayToObject(root, "data_through"), *pastl = cJSON_AddArrayToObject(root, "past_data_through");
	int past = 0;
	for (size_t i = 0; i < dt->n; i++) {
		int p = dt->rows[i].through_s < upto;
		past |= p;
		cJSON_AddItemToArray(all, through_json(&dt->rows[i], now_s));
		if (p)
			cJSON_AddItemToArray(pastl, through_json(&dt->rows[i], now_s));
	}
	cJSON_AddBoolToObject(root, "window_past_data_through", past);
	return past;
}

int gl_apijson_data_through(struct gl_req *req, struct gl_resp *resp, cJSON *root, const struct gl_window *w)
{
	struct gl_ingest_data_through_set dt;
	struct gl_err err = {0};
	struct gl_store *st;
	int64_t upto = w->end_s < req->now_s ? w->end_s : req->now_s;
	int rc, past = 0;

	memset(&dt, 0, sizeof dt);
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_ingest_data_through(st, &dt, &err))) {
		rc = gl_resp_error(resp, rc, NULL, "data_through: %s", err.msg);
		goto out;
	}
	if (root) {
		gl_apijson_add_data_through(root, &dt, w->end_s, req->now_s);
	} else {
		for (size_t i = 0; i < dt.n; i++)
			past |= dt.rows[i].through_s < upto;
		through_header(resp, &dt);
		gl_apijson_add_header(resp, "X-Window-Past-Data-Through", past ? "true" : "false");
	}
out:
	gl_ingest_data_through_fini(&dt);
	return rc;
}

int gl_apijson_dt_load(struct gl_req *req, struct gl_resp *resp, const struct gl_window *w, struct gl_apijson_dt *d)
{
	struct gl_err err = {0};
	struct gl_store *st;
	int rc;
	memset(d, 0, sizeof *d);
	d->now_s = req->now_s;
	d->upto_s = w->end_s < req->now_s ? w->end_s : req->now_s;
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_ingest_data_through(st, &d->dt, &err)))
		return gl_resp_error(resp, rc, NULL, "data_through: %s", err.msg);
	for (size_t i = 0; i < d->dt.n; i++)
		d->past |= d->dt.rows[i].through_s < d->upto_s;
	return 0;
}

static void through_jsonw(struct gl_jsonw *w, const struct gl_ingest_data_through_row *r, int64_t now_s)
{
	gl_jsonw_object(w, NULL);
	gl_jsonw_str(w, "cluster", r->cluster);
	gl_jsonw_str(w, "source", r->source);
	gl_jsonw_str(w, "data", r->data);
	gl_jsonw_time(w, "through", r->through_s);
	gl_jsonw_i64(w, "staleness_seconds", now_s > r->through_s ? now_s - r->through_s : 0);
	gl_jsonw_end(w);
}

void gl_apijson_dt_jsonw(struct gl_jsonw *w, const struct gl_apijson_dt *d)
{
	gl_jsonw_array(w, "data_through");
	for (size_t i = 0; i < d->dt.n; i++)
		through_jsonw(w, &d->dt.rows[i], d->now_s);
	gl_jsonw_end(w);
	gl_jsonw_array(w, "past_data_through");
	for (size_t i = 0; i < d->dt.n; i++)
		if (d->dt.rows[i].through_s < d->upto_s)
			through_jsonw(w, &d->dt.rows[i], d->now_s);
	gl_jsonw_end(w);
	gl_jsonw_bool(w, "window_past_data_through", d->past);
}

void gl_apijson_dt_headers(struct gl_resp *resp, const struct gl_apijson_dt *d)
{
	through_header(resp, &d->dt);
	gl_apijson_add_header(resp, "X-Window-Past-Data-Through", d->past ? "true" : "false");
}

void gl_apijson_dt_fini(struct gl_apijson_dt *d)
{
	gl_ingest_data_through_fini(&d->dt);
}
