/* gpuledger — helpers the route handlers share: query parameters checked
 * the same way everywhere (400 naming the parameter) and JSON bodies.
 * Ownership: nothing is kept. A cJSON tree passed in stays the caller's to
 * cJSON_Delete; gl_apijson_put copies its text into resp->body, which the
 * server owns (include/gl/server.h). */
#ifndef GL_APIJSON_H
#define GL_APIJSON_H

#include "gl/ingest.h"
#include "gl/server.h"
#include "gl/strbuf.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <stdint.h>

/* A whole number written as ASCII digits only (no sign, no spaces, as
 * every integer parameter is): 0 and *out, or -GL_EINVAL (not digits) /
 * -GL_ERANGE (above LLONG_MAX). */
int gl_apijson_digits(const char *v, long long *out) GL_MUSTCHECK;
/* name= as an integer in [min, max] (min >= 0), def when absent. Returns 0,
 * or the handler's error return after gl_resp_error (400 naming the
 * parameter). */
int gl_apijson_int_param(struct gl_req *req, struct gl_resp *resp, const char *name, long long def, long long min,
			 long long max, long long *out) GL_MUSTCHECK;
/* window= (include/gl/window.h; def when absent) at most api.max_window_days
 * long. Returns 0, or the handler's error return after gl_resp_error. */
int gl_apijson_window(struct gl_req *req, struct gl_resp *resp, const char *def, struct gl_window *w) GL_MUSTCHECK;

/* format= json (default) or csv: *csv 1 for csv. Returns 0, or the
 * handler's error return after gl_resp_error (400 naming format). */
int gl_apijson_format(struct gl_req *req, struct gl_resp *resp, int *csv) GL_MUSTCHECK;
/* Marks resp as a CSV download: Content-Type text/csv and the
 * Content-Disposition disposition, a static string made with
 * GL_APIJSON_ATTACHMENT("jobs.csv"). */
#define GL_APIJSON_ATTACHMENT(file) "attachment; filename=\"" file "\""
void gl_apijson_set_csv(struct gl_resp *resp, const char *disposition);
/* Adds header k: v (both static strings) in the first free slot. */
void gl_apijson_add_header(struct gl_resp *resp, const char *k, const char *v);
/* Adds header k (a static string): v in decimal, kept in resp. */
void gl_apijson_add_header_num(struct gl_resp *resp, const char *k, long long v);
/* CSV cells of typed values: an integer, a double as the database prints
 * it (gl_csv_f8), micro-units as money with minor decimals (the currency's
 * minor units, gl_cost_minor), epoch seconds as RFC 3339 UTC; an empty
 * cell when null is set (or the time is GL_TIME_NONE). */
void gl_apijson_csv_int(struct gl_strbuf *o, int64_t v, int null);
void gl_apijson_csv_f8(struct gl_strbuf *o, double v, int null);
void gl_apijson_csv_money(struct gl_strbuf *o, int64_t micros, int null, int minor);
void gl_apijson_csv_time(struct gl_strbuf *o, int64_t t);
/* Millionths (micro-GPUs) as a decimal without trailing zeros ("0.5", "2",
 * "0.142857"). */
void gl_apijson_csv_micro(struct gl_strbuf *o, long long micro);
/* A header row from a NULL-terminated list of names. */
void gl_apijson_csv_header(struct gl_strbuf *o, const char *const *names);
/* 1 when the sep-separated list v has an empty item ("a,", ",a", "a,,b"):
 * strtok would skip it and the request would mean less than it says. */
int gl_apijson_list_has_empty(const char *v, char sep);
/* One Prometheus text sample line: metric{k="v",...} value\n, each label
 * value escaped (\\, \", \n) as the text format requires. labels: name,
 * value pairs, NULL-terminated (NULL itself: no braces). */
void gl_apijson_prom_sample(struct gl_strbuf *o, const char *metric, const char *const *labels, const char *value);

/* How far the data reaches (gl_ingest_data_through) against the window w
 * the answer covers, up to now: with root, "data_through" (every cluster,
 * source and kind of data with its through time and staleness_seconds),
 * "past_data_through" (those the window reaches past, stopped before
 * min(w end, now)) and "window_past_data_through"; without (a CSV), the
 * headers X-Data-Through ("cluster/source/data=time", comma-separated, as
 * many as fit) and X-Window-Past-Data-Through. A window past it is
 * answered, flagged, never refused. Returns 0, or the handler's error
 * return after gl_resp_error. */
int gl_apijson_data_through(struct gl_req *req, struct gl_resp *resp, cJSON *root, const struct gl_window *w)
	GL_MUSTCHECK;
/* The JSON part of it from rows already read, for an answer built away
 * from its request (the forecasts, computed once and cached): the three
 * keys above for a window ending at end_s, cut at now_s. Returns 1 when the
 * window reaches past any entry. */
int gl_apijson_add_data_through(cJSON *root, const struct gl_ingest_data_through_set *dt, int64_t end_s, int64_t now_s);
/* The same for an answer written a piece at a time: loaded before the
 * first piece (gl_apijson_dt_load: 0, or the handler's error return after
 * gl_resp_error), then written into the root object being written
 * (gl_apijson_dt_jsonw) or sent as the headers (gl_apijson_dt_headers).
 * Ownership: the rows are the struct's; gl_apijson_dt_fini frees them. */
struct gl_apijson_dt {
	struct gl_ingest_data_through_set dt;
	int64_t upto_s, now_s;
	int past;
};
struct gl_jsonw;
int gl_apijson_dt_load(struct gl_req *req, struct gl_resp *resp, const struct gl_window *w, struct gl_apijson_dt *d)
	GL_MUSTCHECK;
void gl_apijson_dt_jsonw(struct gl_jsonw *w, const struct gl_apijson_dt *d);
void gl_apijson_dt_headers(struct gl_resp *resp, const struct gl_apijson_dt *d);
void gl_apijson_dt_fini(struct gl_apijson_dt *d);

/* root printed on one line, then a newline, as the JSON body of resp. */
void gl_apijson_put(struct gl_resp *resp, const cJSON *root);
/* The clusters a central database of shards could not read for this
 * request (include/gl/shard.h), as `clusters_unread` on root (an empty
 * array when every shard answered or there are no shards); and the same
 * names as a malloc'd vector of malloc'd strings (NULL, *n 0 when none). */
void gl_apijson_add_unread(const struct gl_req *req, cJSON *root);
char **gl_apijson_unread(const struct gl_req *req, size_t *n);
/* k: t as RFC 3339 UTC, null for GL_TIME_NONE. */
void gl_apijson_add_time(cJSON *o, const char *k, int64_t t);
/* k: [start, end] of w as RFC 3339 UTC strings. */
void gl_apijson_add_window(cJSON *o, const char *k, const struct gl_window *w);
/* k: s, or null when s is NULL. */
void gl_apijson_add_str(cJSON *o, const char *k, const char *s);
/* k: v as a number, or null when null is set. */
void gl_apijson_add_int(cJSON *o, const char *k, int64_t v, int null);
void gl_apijson_add_f8(cJSON *o, const char *k, double v, int null);

/* The same for a streamed body (include/gl/jsonw.h): member k of the
 * writer's open object (NULL in an array), printed as the add_* functions
 * print it through cJSON. */
struct gl_jsonw;
void gl_apijson_w_int(struct gl_jsonw *w, const char *k, int64_t v, int null);
void gl_apijson_w_f8(struct gl_jsonw *w, const char *k, double v, int null);
/* k: [start, end] of win as RFC 3339 UTC strings. */
void gl_apijson_w_window(struct gl_jsonw *w, const char *k, const struct gl_window *win);
/* k_micros: the micro-units, exact; k: them as money with minor decimals. */
void gl_apijson_w_money(struct gl_jsonw *w, const char *k, int64_t micros, int minor);

#endif
