/* Parameter and JSON helpers of the route handlers (see include/gl/apijson.h). */
#include "gl/apijson.h"
#include "gl/cost.h"
#include "gl/csv.h"
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
	gl_time_format(t, buf, sizeof buf);
	cJSON_AddStringToObject(o, k, buf);
}

void gl_apijson_add_window(cJSON *o, const char *k, const struct gl_window *w)
{
	char a[32], b[32];
	gl_time_format(w->start_s, a, sizeof a);
	gl_time_format(w->end_s, b, sizeof b);
	cJSON_AddItemToObject(o, k, cJSON_CreateStringArray((const char *[]){a, b}, 2));
}

void gl_apijson_add_col_str(cJSON *o, const char *k, const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddStringToObject(o, k, PQgetvalue(r, row, col));
}

/* atof, not atoll: numeric columns (round(), avg()) come as decimals too;
 * on bigint text both give the same double */
void gl_apijson_add_col_num(cJSON *o, const char *k, const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, atof(PQgetvalue(r, row, col)));
}

void gl_apijson_add_col_time(cJSON *o, const char *k, const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		cJSON_AddNullToObject(o, k);
	else
		gl_apijson_add_time(o, k, atoll(PQgetvalue(r, row, col)));
}

void gl_apijson_w_col_str(struct gl_jsonw *w, const char *k, const PGresult *r, int row, int col)
{
	gl_jsonw_str(w, k, PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col));
}

void gl_apijson_w_col_num(struct gl_jsonw *w, const char *k, const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		gl_jsonw_null(w, k);
	else
		gl_jsonw_num(w, k, atof(PQgetvalue(r, row, col)));
}

void gl_apijson_w_col_time(struct gl_jsonw *w, const char *k, const PGresult *r, int row, int col)
{
	gl_jsonw_time(w, k, PQgetisnull(r, row, col) ? GL_TIME_NONE : atoll(PQgetvalue(r, row, col)));
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

void gl_apijson_csv_col_str(struct gl_strbuf *o, const PGresult *r, int row, int col)
{
	gl_csv_field(o, PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col));
}

void gl_apijson_csv_col_num(struct gl_strbuf *o, const PGresult *r, int row, int col)
{
	gl_csv_raw(o, PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col));
}

void gl_apijson_csv_col_time(struct gl_strbuf *o, const PGresult *r, int row, int col)
{
	char buf[32] = "";
	if (!PQgetisnull(r, row, col))
		gl_time_format(atoll(PQgetvalue(r, row, col)), buf, sizeof buf);
	gl_csv_raw(o, buf);
}

void gl_apijson_csv_col_money(struct gl_strbuf *o, const PGresult *r, int row, int col, int minor)
{
	char buf[48] = "";
	/* numeric columns (round(...)) print no fraction: atoll reads them whole */
	if (!PQgetisnull(r, row, col))
		gl_money_format(atoll(PQgetvalue(r, row, col)), minor, buf, sizeof buf);
	gl_csv_raw(o, buf);
}

void gl_apijson_csv_milli(struct gl_strbuf *o, long long milli)
{
	char buf[32];
	size_t n;
	snprintf(buf, sizeof buf, "%s%lld.%03lld", milli < 0 ? "-" : "", llabs(milli) / 1000, llabs(milli) % 1000);
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
