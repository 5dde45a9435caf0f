/* HTTP server (see include/gl/server.h). */
#include "gl/server.h"
#include "gl/audit.h"
#include "gl/auth.h"
#include "gl/db.h"
#include "gl/dbcancel.h"
#include "gl/apijson.h"
#include "gl/log.h"
#include "gl/replica.h"
#include "gl/routes.h"
#include "gl/static.h"
#include "gl/timeutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#define LAT_BUCKETS 10
static const double lat_bounds[LAT_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5};
#define MAX_ROUTES 64
#define STATIC_SLOT (MAX_ROUTES + 1) /* the dashboard's files, route label "static" */
#define STATUS_SLOTS 600

/* Access control and audit (docs/security.md). A revoked token stops
 * working within AUTH_CACHE_TTL_S: the cache is the only thing between a
 * request and the api_tokens row. */
#define AUTH_CACHE_TTL_S 5
#define AUTH_CACHE_SLOTS 4096
#define ERR_LOG_INTERVAL_S 60 /* one WARN line for a run of 5xx answers */
#define AUTH_MAX_FAILURES 10 /* within AUTH_WINDOW_S, then AUTH_BLOCK_S of 429 */
#define AUTH_WINDOW_S 60
#define AUTH_BLOCK_S 60
#define STR(x) #x
#define XSTR(x) STR(x)
#define AUTH_LIMITER_SLOTS 8192
#define AUDIT_QUEUE 65536
#define AUDIT_BLOCK_MS 200
#define REQ_LIMITER_SLOTS 8192
#define MAX_QUERY_PARAMS 32

enum auth_reason { AR_MISSING, AR_MALFORMED, AR_UNKNOWN, AR_REVOKED, AR_EXPIRED, AR_UNUSABLE, AR_RATE_LIMITED,
		   AR_FORBIDDEN, AR_SCOPE, AR_REQUEST_RATE, AR_N };
static const char *const auth_reason_names[AR_N] = {
	"missing", "malformed", "unknown", "revoked", "expired", "unusable", "rate_limited", "forbidden", "scope", "request_rate",
};

struct route_stats {
	uint64_t by_status[STATUS_SLOTS];
	uint64_t lat_hist[LAT_BUCKETS + 1];
	double lat_sum;
	uint64_t count;
};

struct gl_server {
	struct MHD_Daemon *d;
	const struct gl_config *cfg;
	char dsn[1024];
	char read_dsn[1024];        /* database.read_dsn; "" = reads use dsn */
	uint16_t port;
	int64_t started_s;
	pthread_mutex_t mu;
	struct route_stats stats[MAX_ROUTES + 2]; /* then: unmatched, static */
	size_t nroutes;
	pthread_key_t conn_key;
	pthread_key_t read_conn_key;
	struct gl_log_limiter read_log; /* reads moved to the primary; under mu */
	struct gl_ratelimit *rl;
	struct gl_reqlimit *reqrl; /* requests per second per address */
	struct gl_auth_cache *tokens;
	struct gl_audit_writer *audit;
	struct gl_static *web;     /* server.web_dir; NULL when not served */
	uint64_t auth_denied[AR_N]; /* under mu */
	struct gl_log_limiter err_log;   /* 503 answers (the database away); under mu */
	struct gl_log_limiter int_log;   /* other 5xx answers (a fault to mend), apart: an outage's
					  * run of 503s must not hide one; under mu */
	unsigned long err_ref;           /* the last 5xx answer's reference; under mu */
	struct gl_log_limiter grace_log; /* tokens let in on the outage grace; under mu */
};

/* Per-request state, freed in the completion callback. */
struct req_ctx {
	struct gl_strbuf body;
	int too_large;
	struct timespec t0;
};

static int64_t mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t wall_s(void)
{
	return (int64_t)time(NULL);
}

unsigned long gl_server_error_ref(struct gl_server *s, int status, int64_t now_s, const char *method, const char *url,
				  const char *detail)
{
	/* The detail (a statement's first words, the server's message, a
	 * socket path) is the operator's, not the client's: the log keeps it
	 * under a reference the client is given. A database outage fails every
	 * request alike: one WARN line per interval, with the count in between
	 * (no "recovered" reset on a success: /metrics answers 200 through an
	 * outage, and would reset it at every scrape); each answer's detail is
	 * at debug. */
	unsigned long ref;
	pthread_mutex_lock(&s->mu);
	ref = ++s->err_ref;
	gl_log_fail(status == 503 ? &s->err_log : &s->int_log, now_s, GL_LOG_WARN, "http: %s %s -> %d (ref %lu): %s",
		    method, url, status, ref, detail);
	pthread_mutex_unlock(&s->mu);
	gl_log(GL_LOG_DEBUG, "http: ref %lu: %s", ref, detail);
	return ref;
}

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

const char *gl_req_param(const struct gl_req *req, const char *name)
{
	return MHD_lookup_connection_value((struct MHD_Connection *)req->mhd_conn, MHD_GET_ARGUMENT_KIND, name);
}

int gl_req_may_see_owner(struct gl_req *req, const char *owner)
{
	req->scope_applied = 1;
	if (!req->auth || !req->auth->n_owners)
		return 1;
	for (size_t i = 0; i < req->auth->n_owners; i++)
		if (owner && !strcmp(owner, req->auth->owners[i]))
			return 1;
	return 0;
}

const char *gl_req_owner_filter(struct gl_req *req, struct gl_strbuf *buf)
{
	req->scope_applied = 1;
	if (!req->auth || !req->auth->n_owners)
		return NULL;
	/* owners were validated at creation (no quotes, backslashes, braces or
	 * commas); quoting still keeps an owner called NULL a string */
	gl_strbuf_reset(buf);
	gl_strbuf_putc(buf, '{');
	for (size_t i = 0; i < req->auth->n_owners; i++) {
		if (i)
			gl_strbuf_putc(buf, ',');
		gl_strbuf_putc(buf, '"');
		gl_strbuf_puts(buf, req->auth->owners[i]);
		gl_strbuf_putc(buf, '"');
	}
	gl_strbuf_putc(buf, '}');
	return gl_strbuf_cstr(buf);
}

struct param_check {
	const char *const *allowed;
	const char *bad;
};

static enum MHD_Result check_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct param_check *pc = cls;
	for (size_t i = 0; pc->allowed[i]; i++)
		if (!strcmp(key, pc->allowed[i]))
			return MHD_YES;
	pc->bad = key;
	return MHD_NO;
}

int gl_req_check_params(struct gl_req *req, struct gl_resp *resp, const char *const *allowed)
{
	struct param_check pc = {allowed, NULL};
	MHD_get_connection_values((struct MHD_Connection *)req->mhd_conn, MHD_GET_ARGUMENT_KIND, check_param, &pc);
	if (pc.bad) {
		char name[64];
		gl_audit_clean(pc.bad, name, sizeof name);
		return gl_resp_error(resp, GL_EINVAL, name, "unknown parameter '%s'", name);
	}
	return 0;
}

/* The route's declared parameters (include/gl/server.h): one pass over the
 * parsed query. MHD has already percent-decoded names and values, so what
 * is checked here is what a handler would see. */
struct route_check {
	const char *params;
	const char *seen[MAX_QUERY_PARAMS];
	size_t n;
	char bad[64];
	const char *why;
};

static int listed(const char *list, const char *key)
{
	size_t k = strlen(key);
	for (const char *p = list; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n == k && !strncmp(p, key, n))
			return 1;
		if (!comma)
			break;
		p = comma + 1;
	}
	return 0;
}

static int value_ok(const char *v)
{
	char clean[GL_AUDIT_FIELD_MAX];
	size_t n = strlen(v);
	/* control characters and invalid UTF-8 are never a legitimate value
	 * here; gl_audit_clean rewrites exactly those */
	if (n >= sizeof clean)
		return 0;
	gl_audit_clean(v, clean, sizeof clean);
	return strcmp(clean, v) == 0;
}

static enum MHD_Result check_route_param(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
					 const char *value, size_t value_size)
{
	struct route_check *rc = cls;
	(void)kind;
	if (!key || !*key) {
		rc->why = "empty parameter name in the query string";
		return MHD_NO;
	}
	gl_audit_clean(key, rc->bad, sizeof rc->bad);
	if (rc->n == MAX_QUERY_PARAMS) {
		rc->why = "too many query parameters";
		return MHD_NO;
	}
	if (!listed(rc->params, key)) {
		rc->why = "unknown parameter";
		return MHD_NO;
	}
	for (size_t i = 0; i < rc->n; i++)
		if (!strcmp(rc->seen[i], key)) {
			rc->why = "parameter given more than once";
			return MHD_NO;
		}
	rc->seen[rc->n++] = key;
	/* no documented parameter takes an empty value, and a handler would
	 * read "?window" or "window=" as absent and quietly use its default;
	 * a %00 would end the value early for every C string reader */
	if (!value) {
		rc->why = "no value given (expected name=value)";
		return MHD_NO;
	}
	if (!*value && !value_size) {
		rc->why = "empty value";
		return MHD_NO;
	}
	if (strlen(value) != value_size || strlen(key) != key_size) {
		rc->why = "NUL byte in the parameter";
		return MHD_NO;
	}
	if (!value_ok(value)) {
		rc->why = "malformed value (control characters, invalid UTF-8 or over 1023 bytes)";
		return MHD_NO;
	}
	rc->bad[0] = '\0';
	return MHD_YES;
}

static int check_route_params(struct MHD_Connection *conn, const struct gl_route *route, struct gl_resp *resp)
{
	struct route_check rc = {route->params, {0}, 0, "", NULL};
	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, check_route_param, &rc);
	if (!rc.why)
		return 0;
	if (!rc.bad[0])
		return gl_resp_error(resp, GL_EINVAL, NULL, "%s", rc.why);
	return gl_resp_error(resp, GL_EINVAL, rc.bad, "%s: %s '%s'", rc.bad, rc.why, rc.bad);
}

void gl_server_audit(struct gl_server *s, const struct gl_audit_entry *e)
{
	if (s->audit)
		gl_audit_writer_submit(s->audit, e);
}

static void conn_destroy(void *p)
{
	PQfinish((PGconn *)p);
}

/* 1 when the server behind an idle cached connection has gone (a restart):
 * libpq only notices on the next query, which would fail that request. An
 * idle session is sent nothing unasked but the server's goodbye (FATAL on
 * shutdown) and EOF, so a readable socket means it is gone. */
static int conn_lost(PGconn *c)
{
	struct pollfd p = {.fd = PQsocket(c), .events = POLLIN};
	if (PQstatus(c) != CONNECTION_OK || p.fd < 0)
		return 1;
	if (PQtransactionStatus(c) != PQTRANS_IDLE)
		return 0;
	return poll(&p, 1, 0) > 0;
}

/* This worker thread's request in progress, for the stop's cancel: MHD's
 * pool threads take one request at a time, and on_request ends the slot
 * before the request is answered. */
static _Thread_local struct gl_dbcancel_slot t_db_slot;

/* This thread's connection under key to dsn: reconnected when lost. */
static int thread_conn(pthread_key_t key, const char *dsn, PGconn **out, struct gl_err *err)
{
	PGconn *c = pthread_getspecific(key);
	int rc;
	if (c && conn_lost(c)) {
		struct gl_err rerr = {0};
		if (gl_db_reset(c, &rerr)) {
			PQfinish(c);
			c = NULL;
			pthread_setspecific(key, NULL);
		}
	}
	if (!c) {
		if ((rc = gl_db_connect_dsn(dsn, &c, err)))
			return rc;
		pthread_setspecific(key, c);
	}
	*out = c;
	return 0;
}

/* The read DSN's connection when it may answer req (see gl_req_db): 0
 * with *out set, or 1 with req->read.fallback saying why the primary
 * must. A standby within the bound serves the whole request: a handler
 * asking again gets it back without a second look. */
static int read_conn(struct gl_req *req, PGconn **out)
{
	struct gl_server *s = req->srv;
	struct gl_replica_status st;
	struct gl_err err = {0};
	PGconn *c = NULL;
	if (req->read.set) {
		if (req->read.fallback[0])
			return 1;
		*out = pthread_getspecific(s->read_conn_key);
		return *out ? 0 : 1;
	}
	req->read.set = 1;
	if (thread_conn(s->read_conn_key, s->read_dsn, &c, &err) || gl_replica_status(c, &st, &err)) {
		snprintf(req->read.fallback, sizeof req->read.fallback, "read_dsn unavailable");
		pthread_mutex_lock(&s->mu);
		gl_log_fail(&s->read_log, req->now_s, GL_LOG_WARN, "http: database.read_dsn: %s; reads go to the primary",
			    err.msg);
		pthread_mutex_unlock(&s->mu);
		return 1;
	}
	if (st.standby && st.lag_s > (double)s->cfg->db_max_replica_lag_s) {
		snprintf(req->read.fallback, sizeof req->read.fallback,
			 "replica lag %.1f s exceeds database.max_replica_lag_s %lld", st.lag_s,
			 (long long)s->cfg->db_max_replica_lag_s);
		return 1;
	}
	req->read.standby = st.standby;
	req->read.lag_s = st.lag_s;
	req->read.data_through_s = st.data_through_s;
	*out = c;
	return 0;
}

int gl_req_db(struct gl_req *req, PGconn **out, struct gl_err *err)
{
	struct gl_server *s = req->srv;
	PGconn *c = NULL;
	int rc;

	if (req->route && req->route->replica_ok && s->read_dsn[0] && read_conn(req, &c) == 0) {
		char what[96];
		snprintf(what, sizeof what, "http %s %s (read)", req->method, req->path);
		gl_dbcancel_begin(&t_db_slot, c, GL_DBCANCEL_REQUESTS, what);
		*out = c;
		return 0;
	}
	if (req->route && req->route->replica_ok && s->read_dsn[0]) {
		/* the fallback's answer is as fresh as the primary */
		req->read.standby = 0;
		req->read.lag_s = 0;
		req->read.data_through_s = (double)req->now_s;
	}
	if ((rc = thread_conn(s->conn_key, s->dsn, &c, err)))
		return rc;
	{
		/* anew on every call: a reset above gave another backend */
		char what[96];
		snprintf(what, sizeof what, "http %s %s", req->method, req->path);
		gl_dbcancel_begin(&t_db_slot, c, GL_DBCANCEL_REQUESTS, what);
	}
	*out = c;
	return 0;
}

int gl_resp_error(struct gl_resp *resp, int code, const char *param, const char *fmt, ...)
{
	static const char *const codes[] = {
		[GL_EINVAL] = "bad_request", [GL_EAUTH] = "unauthorized", [GL_EPERM] = "forbidden",
		[GL_ENOTFOUND] = "not_found", [GL_ERANGE] = "too_large", [GL_EBUSY] = "rate_limited",
		[GL_EDB] = "unavailable",
	};
	va_list ap;
	char msg[2 * sizeof resp->err_msg];
	if (code < 0)
		code = -code;
	resp->err_code = (size_t)code < GL_ARRAY_LEN(codes) && codes[code] ? codes[code] : "internal";
	/* messages echo what the client sent (values, the URL, the method):
	 * invalid UTF-8 and control bytes become '?', and the cut falls on a
	 * character boundary, so the body is always valid UTF-8 JSON */
	gl_audit_clean(param ? param : "", resp->err_param, sizeof resp->err_param);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	gl_audit_clean(msg, resp->err_msg, sizeof resp->err_msg);
	return -code;
}

static int status_for(int code)
{
	switch (code < 0 ? -code : code) {
	case GL_EINVAL: return 400;
	case GL_EFORMAT: return 400;
	case GL_EAUTH: return 401;
	case GL_EPERM: return 403;
	case GL_ENOTFOUND: return 404;
	case GL_ERANGE: return 413;
	case GL_EBUSY: return 429;
	case GL_EDB: return 503;
	default: return 500; /* GL_EINTERNAL and the rest */
	}
}

static void error_body(struct gl_resp *resp)
{
	gl_strbuf_reset(&resp->body);
	gl_strbuf_puts(&resp->body, "{\"error\":{\"code\":\"");
	gl_strbuf_puts(&resp->body, resp->err_code ? resp->err_code : "internal");
	gl_strbuf_puts(&resp->body, "\",\"message\":\"");
	gl_strbuf_put_json_str(&resp->body, resp->err_msg, strlen(resp->err_msg));
	gl_strbuf_puts(&resp->body, "\"");
	if (resp->err_param[0]) {
		gl_strbuf_puts(&resp->body, ",\"param\":\"");
		gl_strbuf_put_json_str(&resp->body, resp->err_param, strlen(resp->err_param));
		gl_strbuf_puts(&resp->body, "\"");
	}
	gl_strbuf_puts(&resp->body, "}}\n");
	resp->content_type = "application/json";
}

static const struct gl_route *match(const char *method, const char *url, size_t *idx, int *method_mismatch)
{
	*method_mismatch = 0;
	for (size_t i = 0; gl_routes[i].path; i++) {
		const struct gl_route *r = &gl_routes[i];
		size_t n = strlen(r->path);
		int hit = r->path[n - 1] == '/' && n > 1 ? strncmp(url, r->path, n) == 0 : strcmp(url, r->path) == 0;
		if (!hit)
			continue;
		if (strcmp(method, r->method) != 0 && !(strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0)) {
			*method_mismatch = 1;
			continue;
		}
		*idx = i;
		return r;
	}
	return NULL;
}

/* The methods the routes of url answer, for 405's Allow header (RFC 9110
 * 15.5.6): "GET, HEAD" for a GET route, since HEAD is served with it. */
static void allowed_methods(const char *url, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; gl_routes[i].path; i++) {
		const struct gl_route *r = &gl_routes[i];
		size_t k = strlen(r->path);
		int hit = r->path[k - 1] == '/' && k > 1 ? strncmp(url, r->path, k) == 0 : strcmp(url, r->path) == 0;
		if (!hit)
			continue;
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%s%s%s", o ? ", " : "", r->method,
				      strcmp(r->method, "GET") ? "" : ", HEAD");
	}
}

static void record(struct gl_server *s, size_t route, int status, double secs)
{
	struct route_stats *st;
	pthread_mutex_lock(&s->mu);
	st = &s->stats[route < s->nroutes || route == STATIC_SLOT ? route : MAX_ROUTES];
	if (status >= 0 && status < STATUS_SLOTS)
		st->by_status[status]++;
	st->count++;
	st->lat_sum += secs;
	size_t b = 0;
	while (b < LAT_BUCKETS && secs > lat_bounds[b])
		b++;
	st->lat_hist[b]++;
	pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result send_resp(struct MHD_Connection *conn, struct gl_resp *resp)
{
	size_t len = resp->body.len;
	char *body = gl_strbuf_steal(&resp->body);
	struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", resp->content_type ? resp->content_type : "application/json");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	for (size_t i = 0; i < GL_ARRAY_LEN(resp->extra_headers) && resp->extra_headers[i][0]; i++)
		MHD_add_response_header(r, resp->extra_headers[i][0], resp->extra_headers[i][1]);
	ret = MHD_queue_response(conn, (unsigned)resp->status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A dashboard file: public (it holds no data; the API calls it makes need
 * a token), never audited (a page load is a dozen of them), revalidated
 * on every use (no-cache + ETag, so a new daemon's files show at once). */
static enum MHD_Result send_static(struct MHD_Connection *conn, const struct gl_static_file *f, int *status)
{
	const char *ae = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	const char *inm = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
	int gz = f->gz && gl_static_accepts_gzip(ae);
	const char *etag = gz ? f->etag_gz : f->etag;
	struct MHD_Response *r;
	enum MHD_Result ret;

	/* either representation's validator means the client has this content */
	if (inm && (gl_static_etag_matches(inm, f->etag) || (f->gz && gl_static_etag_matches(inm, f->etag_gz)))) {
		*status = 304;
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	} else {
		*status = 200;
		r = MHD_create_response_from_buffer(gz ? f->gz_len : f->len, gz ? f->gz : f->data,
						    MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Content-Type", f->mime);
		if (gz)
			MHD_add_response_header(r, "Content-Encoding", "gzip");
	}
	MHD_add_response_header(r, "ETag", etag);
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	if (f->gz)
		MHD_add_response_header(r, "Vary", "Accept-Encoding");
	MHD_add_response_header(r, "Content-Security-Policy", GL_STATIC_CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
	ret = MHD_queue_response(conn, (unsigned)*status, r);
	MHD_destroy_response(r);
	return ret;
}

static int auth_fail(struct gl_server *s, struct gl_req *req, struct gl_resp *resp, enum auth_reason why,
		     enum auth_reason *reason)
{
	static const char *const msgs[AR_N] = {
		[AR_MISSING] = "an Authorization: Bearer token is required",
		[AR_MALFORMED] = "the Authorization header is not a gpuledger bearer token",
		[AR_UNKNOWN] = "unknown token",
		[AR_REVOKED] = "token revoked",
		[AR_EXPIRED] = "token expired",
		[AR_UNUSABLE] = "token has an unreadable scope; recreate it",
	};
	*reason = why;
	if (gl_ratelimit_fail(s->rl, req->remote_addr, req->now_s))
		gl_log(GL_LOG_WARN, "http: %d failed authentications from %s: blocked for %d s", AUTH_MAX_FAILURES,
		       req->remote_addr, AUTH_BLOCK_S);
	resp->extra_headers[0][0] = "WWW-Authenticate";
	resp->extra_headers[0][1] = "Bearer realm=\"gpuledger\"";
	return gl_resp_error(resp, GL_EAUTH, NULL, "%s", msgs[why]);
}

/* Fills a from the bearer token, or returns -GL_EAUTH / -GL_EBUSY / -GL_EDB
 * / -GL_EINTERNAL with *reason set. The token is hashed at once and never
 * kept. */
static int authenticate(struct gl_server *s, struct gl_req *req, struct gl_resp *resp, struct gl_auth *a,
			int64_t *attempted_id, enum auth_reason *reason)
{
	const char *h = MHD_lookup_connection_value((struct MHD_Connection *)req->mhd_conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	struct gl_token_info t;
	unsigned char key[32];
	char tok[GL_TOKEN_LEN + 1];
	int found = 0;

	if (gl_ratelimit_blocked(s->rl, req->remote_addr, req->now_s)) {
		/* no lookup at all while blocked: a guessing flood costs nothing */
		*reason = AR_RATE_LIMITED;
		resp->extra_headers[0][0] = "Retry-After";
		resp->extra_headers[0][1] = XSTR(AUTH_BLOCK_S);
		return gl_resp_error(resp, GL_EBUSY, NULL, "too many failed authentications from this address; retry later");
	}
	if (!h)
		return auth_fail(s, req, resp, AR_MISSING, reason);
	if (strncasecmp(h, "Bearer ", 7) != 0)
		return auth_fail(s, req, resp, AR_MALFORMED, reason);
	h += 7;
	while (*h == ' ')
		h++;
	if (strlen(h) != GL_TOKEN_LEN || !gl_token_wellformed(h))
		return auth_fail(s, req, resp, AR_MALFORMED, reason);
	memcpy(tok, h, sizeof tok);
	gl_token_sha256(tok, key);
	memset(tok, 0, sizeof tok);
	if (!gl_auth_cache_get(s->tokens, key, req->now_s, &found, &t)) {
		struct gl_err err = {0};
		PGconn *c = NULL;
		int rc;
		if ((rc = gl_req_db(req, &c, &err)) || (rc = gl_token_lookup(c, key, &t, &found, &err))) {
			/* only when the database cannot be reached at all: an answer
			 * (unknown, revoked, a query error) is never overridden */
			int unreachable = !c || PQstatus(c) != CONNECTION_OK;
			/* server.auth_outage_grace_s (docs/security.md): /metrics
			 * must go on answering during the outage it is there to
			 * show; a revocation made meanwhile is in a database
			 * nobody can read anyway */
			if ((rc == -GL_EDB || rc == -GL_EIO) && unreachable && s->cfg->auth_outage_grace_s > 0 &&
			    gl_auth_cache_get_verified(s->tokens, key, req->now_s, s->cfg->auth_outage_grace_s, &t)) {
				found = 1;
				pthread_mutex_lock(&s->mu);
				gl_log_fail(&s->grace_log, req->now_s, GL_LOG_WARN,
					    "http: database unreachable; token %lld accepted as verified within the last %lld s (%s)",
					    (long long)t.id, (long long)s->cfg->auth_outage_grace_s, err.msg);
				pthread_mutex_unlock(&s->mu);
			} else if (rc == -GL_EDB || rc == -GL_EIO) {
				*reason = AR_N;
				return gl_resp_error(resp, GL_EDB, NULL, "cannot check the token: %s", err.msg);
			} else if (rc == -GL_EINTERNAL) {
				/* the lookup failed, not the token: a 401 would count
				 * towards blocking the client's address */
				*reason = AR_N;
				return gl_resp_error(resp, GL_EINTERNAL, NULL, "cannot check the token: %s", err.msg);
			} else {
				*attempted_id = t.id;
				return auth_fail(s, req, resp, AR_UNUSABLE, reason);
			}
		} else {
			gl_auth_cache_put(s->tokens, key, req->now_s, found ? &t : NULL);
		}
	}
	if (!found)
		return auth_fail(s, req, resp, AR_UNKNOWN, reason);
	*attempted_id = t.id;
	if (t.revoked_s != GL_TIME_NONE)
		return auth_fail(s, req, resp, AR_REVOKED, reason);
	if (t.expires_s != GL_TIME_NONE && t.expires_s <= req->now_s)
		return auth_fail(s, req, resp, AR_EXPIRED, reason);
	memset(a, 0, sizeof *a);
	a->token_id = t.id;
	memcpy(a->token_name, t.name, sizeof a->token_name);
	memcpy(a->role, t.role, sizeof a->role);
	a->n_owners = t.n_owners;
	memcpy(a->owners, t.owners, sizeof a->owners);
	return 0;
}

/* One audit row per request, allowed or not: never the token, never the
 * query string (filters may name people); the route, status and why. */
static void audit_request(struct gl_server *s, const struct gl_req *req, const struct gl_route *route, int status,
			  int64_t token_id, enum auth_reason reason, int64_t suppressed, double secs)
{
	struct gl_strbuf d = GL_STRBUF_INIT;
	char actor[48], obj[GL_AUDIT_FIELD_MAX], method[16];
	struct gl_audit_entry e;

	if (!s->audit || !s->cfg->audit_requests)
		return;
	if (token_id)
		snprintf(actor, sizeof actor, "token:%lld", (long long)token_id);
	else
		snprintf(actor, sizeof actor, "anonymous");
	gl_audit_clean(req->method, method, sizeof method);
	gl_audit_clean(req->path, obj, sizeof obj);
	gl_strbuf_puts(&d, "{\"method\":\"");
	gl_strbuf_put_json_str(&d, method, strlen(method));
	gl_strbuf_printf(&d, "\",\"route\":\"%s\",\"status\":%d", route ? route->name : "unmatched", status);
	if (reason < AR_N)
		gl_strbuf_printf(&d, ",\"reason\":\"%s\"", auth_reason_names[reason]);
	if (suppressed)
		gl_strbuf_printf(&d, ",\"suppressed\":%lld", (long long)suppressed);
	gl_strbuf_printf(&d, ",\"ms\":%.3f}", secs * 1000.0);
	e = (struct gl_audit_entry){0, actor, req->remote_addr, "http.request", obj,
				    status < 400 ? "ok" : status == 401 || status == 403 || status == 429 ? "denied" : "error",
				    gl_strbuf_cstr(&d)};
	gl_audit_writer_submit(s->audit, &e);
	gl_strbuf_fini(&d);
}

/* Where a read's answer came from (gl_req_db on a replica_ok route), for
 * the client: headers on every answer, and "freshness" first in a JSON
 * object body. buf keeps the header values until the answer is sent. */
static void add_freshness(const struct gl_req *req, struct gl_resp *resp, char buf[3][48])
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	char through[32];
	gl_time_format((int64_t)req->read.data_through_s, through, sizeof through);
	snprintf(buf[0], sizeof buf[0], "%.3f", req->read.lag_s);
	snprintf(buf[1], sizeof buf[1], "%s", through);
	gl_apijson_add_header(resp, "X-Served-By", req->read.standby ? "standby" : "primary");
	gl_apijson_add_header(resp, "X-Replica-Lag-Seconds", buf[0]);
	gl_apijson_add_header(resp, "X-Data-Through", buf[1]);
	if (req->read.fallback[0])
		gl_apijson_add_header(resp, "X-Read-Fallback", req->read.fallback);
	if (!resp->content_type || strncmp(resp->content_type, "application/json", 16) || resp->body.len < 2 ||
	    resp->body.p[0] != '{')
		return;
	gl_strbuf_printf(&b, "{\"freshness\":{\"served_by\":\"%s\",\"replica_lag_s\":%s,\"data_through\":\"%s\"",
			 req->read.standby ? "standby" : "primary", buf[0], through);
	if (req->read.fallback[0]) {
		gl_strbuf_puts(&b, ",\"fallback\":\"");
		gl_strbuf_put_json_str(&b, req->read.fallback, strlen(req->read.fallback));
		gl_strbuf_putc(&b, '"');
	}
	gl_strbuf_putc(&b, '}');
	if (resp->body.p[1] != '}')
		gl_strbuf_putc(&b, ',');
	gl_strbuf_append(&b, resp->body.p + 1, resp->body.len - 1);
	gl_strbuf_fini(&resp->body);
	resp->body = b;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct gl_server *s = cls;
	struct req_ctx *ctx = *con_cls;
	struct gl_resp resp;
	struct gl_req req;
	const struct gl_route *route;
	struct gl_auth auth;
	enum auth_reason reason = AR_N;
	int64_t token_id = 0, suppressed = 0;
	int audit_it = 1;
	size_t ridx = MAX_ROUTES;
	int mm = 0, rc;
	char addr[INET6_ADDRSTRLEN] = "";
	char fresh_buf[3][48];
	enum MHD_Result ret;

	if (!ctx) {
		/* first call: headers only. Never answer yet for a request with a
		 * body, or the client may be cut off mid-upload. */
		ctx = gl_xcalloc(1, sizeof *ctx);
		clock_gettime(CLOCK_MONOTONIC, &ctx->t0);
		*con_cls = ctx;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!ctx->too_large && ctx->body.len + *upload_size > (size_t)s->cfg->http_max_body_bytes)
			ctx->too_large = 1;
		if (!ctx->too_large)
			gl_strbuf_append(&ctx->body, upload_data, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}

	memset(&resp, 0, sizeof resp);
	memset(&req, 0, sizeof req);
	{
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		if (ci && ci->client_addr) {
			const struct sockaddr *sa = ci->client_addr;
			if (sa->sa_family == AF_INET)
				inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
			else if (sa->sa_family == AF_INET6)
				inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof addr);
		}
	}
	req.method = method;
	req.path = url;
	req.remote_addr = addr;
	req.body = ctx->body.p;
	req.body_len = ctx->body.len;
	req.cfg = s->cfg;
	req.srv = s;
	req.mhd_conn = conn;
	req.now_s = wall_s();

	route = match(method, url, &ridx, &mm);
	rc = 0;
	/* before any token lookup or database work: a flood costs a hash probe */
	switch (gl_reqlimit_take(s->reqrl, addr, mono_ms(), &suppressed)) {
	case 0: break;
	case 2: audit_it = 0; /* fall through */
	default:
		reason = AR_REQUEST_RATE;
		resp.extra_headers[0][0] = "Retry-After";
		resp.extra_headers[0][1] = "1";
		rc = gl_resp_error(&resp, GL_EBUSY, NULL, "too many requests from this address (server.rate_limit_per_ip)");
	}
	if (!rc && !route && s->web && (!strcmp(method, "GET") || !strcmp(method, "HEAD"))) {
		const struct gl_static_file *f = gl_static_find(s->web, url);
		if (f) {
			int status;
			ret = send_static(conn, f, &status);
			record(s, STATIC_SLOT, status, since(&ctx->t0));
			return ret;
		}
	}
	if (rc) {
		/* refused above */
	} else if (!route || !gl_auth_route_public(route->role)) {
		/* unmatched paths need a token too: no route map for strangers */
		if ((rc = authenticate(s, &req, &resp, &auth, &token_id, &reason)) == 0) {
			req.auth = &auth;
			token_id = auth.token_id;
			if (route && !gl_auth_role_allows(auth.role, route->role)) {
				reason = AR_FORBIDDEN;
				rc = gl_resp_error(&resp, GL_EPERM, NULL, "role %s may not use %s %s", auth.role, method,
						   route->path);
			}
		}
	}
	if (rc) {
		/* denied above */
	} else if (ctx->too_large) {
		rc = gl_resp_error(&resp, GL_ERANGE, NULL, "request body larger than %lld bytes",
				   (long long)s->cfg->http_max_body_bytes);
	} else if (!route && mm) {
		rc = gl_resp_error(&resp, GL_EINVAL, NULL, "method %s not allowed on %s", method, url);
		resp.err_code = "method_not_allowed";
		resp.status = 405;
		allowed_methods(url, resp.header_buf, sizeof resp.header_buf);
		resp.extra_headers[0][0] = "Allow";
		resp.extra_headers[0][1] = resp.header_buf;
	} else if (!route) {
		rc = gl_resp_error(&resp, GL_ENOTFOUND, NULL, "no such endpoint: %s", url);
	} else if (req.auth && req.auth->n_owners && !route->owner_scoped) {
		/* before the handler: one that does not filter by owner may write
		 * (POST /v1/hook/actions), and a refusal must leave nothing behind */
		reason = AR_SCOPE;
		rc = gl_resp_error(&resp, GL_EPERM, NULL, "%s does not support owner-scoped tokens", route->path);
	} else if ((rc = check_route_params(conn, route, &resp)) == 0) {
		req.route = route;
		rc = route->fn(&req, &resp);
		if (rc == 0 && req.read.set)
			add_freshness(&req, &resp, fresh_buf);
		if (rc == 0 && req.auth && req.auth->n_owners && !req.scope_applied) {
			/* backstop for a flagged handler that forgot its filter (read
			 * only): its rows are not shown */
			gl_strbuf_reset(&resp.body);
			memset(resp.extra_headers, 0, sizeof resp.extra_headers);
			resp.status = 0;
			reason = AR_SCOPE;
			rc = gl_resp_error(&resp, GL_EPERM, NULL, "%s does not support owner-scoped tokens", route->path);
		}
	}
	/* the database work is over; a stop from here on cancels nothing of it */
	gl_dbcancel_end(&t_db_slot);
	if (rc) {
		if (!resp.status)
			resp.status = status_for(rc);
		if (!resp.err_code)
			gl_resp_error(&resp, rc, NULL, "%s", gl_strerror(rc));
		if (resp.status >= 500) {
			unsigned long ref = gl_server_error_ref(s, resp.status, req.now_s, method, url, resp.err_msg);
			snprintf(resp.err_msg, sizeof resp.err_msg, "%s (ref %lu; the server log has the detail)",
				 resp.status == 503 ? "the database is unavailable; retry later" : "internal error", ref);
		}
		error_body(&resp);
	} else if (!resp.status) {
		resp.status = 200;
	}
	{
		double secs = since(&ctx->t0);
		record(s, ridx, resp.status, secs);
		if (reason < AR_N) {
			pthread_mutex_lock(&s->mu);
			s->auth_denied[reason]++;
			pthread_mutex_unlock(&s->mu);
		}
		if (audit_it)
			audit_request(s, &req, route, resp.status, token_id, reason, suppressed, secs);
	}
	ret = send_resp(conn, &resp);
	gl_strbuf_fini(&resp.body);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct req_ctx *ctx = *con_cls;
	if (!ctx)
		return;
	gl_strbuf_fini(&ctx->body);
	free(ctx);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	gl_log(GL_LOG_WARN, "http: %s", msg);
}

int gl_server_start(const struct gl_config *cfg, const struct gl_server_opts *opts, struct gl_server **out,
		    struct gl_err *err)
{
	struct gl_server *s = gl_xcalloc(1, sizeof *s);
	struct sockaddr_storage ss;
	socklen_t sl;
	const char *listen_at = opts && opts->listen ? opts->listen : cfg->listen;
	int rc;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	*out = NULL;
	s->cfg = cfg;
	s->started_s = wall_s();
	pthread_mutex_init(&s->mu, NULL);
	s->err_log = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(ERR_LOG_INTERVAL_S);
	s->int_log = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(ERR_LOG_INTERVAL_S);
	s->grace_log = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(ERR_LOG_INTERVAL_S);
	pthread_key_create(&s->conn_key, conn_destroy);
	pthread_key_create(&s->read_conn_key, conn_destroy);
	s->read_log = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(ERR_LOG_INTERVAL_S);
	for (s->nroutes = 0; gl_routes[s->nroutes].path; s->nroutes++)
		;
	if (s->nroutes > MAX_ROUTES) {
		rc = gl_err_set(err, GL_ECONFIG, "too many routes");
		goto out;
	}
	if ((rc = gl_db_dsn(cfg, s->dsn, sizeof s->dsn, err)))
		goto out;
	if (cfg->db_read_dsn && cfg->db_read_dsn[0]) {
		/* a typo shows at start, not as every read moved to the primary */
		char *why = NULL;
		PQconninfoOption *o = PQconninfoParse(cfg->db_read_dsn, &why);
		PQconninfoFree(o);
		if (!o) {
			rc = gl_err_set(err, GL_ECONFIG, "%s: database.read_dsn: %s", cfg->path,
					why ? strtok(why, "\n") : "not a connection string");
			PQfreemem(why);
			goto out;
		}
		snprintf(s->read_dsn, sizeof s->read_dsn, "%s", cfg->db_read_dsn);
	}
	if ((rc = gl_config_parse_listen(listen_at, &ss, &sl, err)))
		goto out;
	s->rl = gl_ratelimit_new(AUTH_LIMITER_SLOTS, AUTH_MAX_FAILURES, AUTH_WINDOW_S, AUTH_BLOCK_S);
	s->tokens = gl_auth_cache_new(AUTH_CACHE_SLOTS, AUTH_CACHE_TTL_S);
	s->reqrl = gl_reqlimit_new(REQ_LIMITER_SLOTS, (double)cfg->http_rate_per_ip, (double)cfg->http_rate_burst);
	if ((rc = gl_audit_writer_start(s->dsn, AUDIT_QUEUE, AUDIT_BLOCK_MS, &s->audit, err)))
		goto out;
	if (cfg->web_dir && cfg->web_dir[0]) {
		struct gl_err werr = {0};
		int wrc = gl_static_load(cfg->web_dir, &s->web, &werr);
		if (wrc == -GL_ENOTFOUND) /* an API-only install: not an error */
			gl_log(GL_LOG_INFO, "http: no dashboard (%s)", werr.msg);
		else if (wrc) {
			rc = gl_err_set(err, GL_ECONFIG, "%s", werr.msg);
			goto out;
		} else
			gl_log(GL_LOG_INFO, "http: dashboard: %zu files from %s", gl_static_count(s->web), cfg->web_dir);
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* the logger first, or MHD reports option errors on its own stderr */
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->http_conn_timeout_s,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->http_max_conns,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->http_max_conns_per_ip,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_END);
	if (!s->d) {
		rc = gl_err_set(err, GL_EIO, "cannot listen on %s (address in use or not available)", listen_at);
		goto out;
	}
	{
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
		s->port = di ? di->port : 0;
	}
	if (opts && opts->port_file) {
		FILE *f = fopen(opts->port_file, "w");
		if (!f) {
			rc = gl_err_set(err, GL_EIO, "%s: %s", opts->port_file, strerror(errno));
			goto out;
		}
		fprintf(f, "%u\n", (unsigned)s->port);
		fclose(f);
	}
out:
	if (rc) {
		gl_server_stop(s);
		return rc;
	}
	*out = s;
	return 0;
}

uint16_t gl_server_port(const struct gl_server *s)
{
	return s->port;
}

int64_t gl_server_started_s(const struct gl_server *s)
{
	return s->started_s;
}

void gl_server_stop(struct gl_server *s)
{
	if (!s)
		return;
	/* MHD joins its workers, each finishing its request: one whose
	 * statement waits on a lock would hold the stop as long as the lock.
	 * Cancelled, it answers 503, which MHD no longer sends while it stops:
	 * the client sees its connection closed (docs/ingest.md, "Stopping"). */
	gl_dbcancel_request(GL_DBCANCEL_REQUESTS);
	if (s->d)
		MHD_stop_daemon(s->d);
	/* after the listener: no request can queue a row any more */
	gl_audit_writer_stop(s->audit);
	gl_ratelimit_free(s->rl);
	gl_reqlimit_free(s->reqrl);
	gl_auth_cache_free(s->tokens);
	gl_static_free(s->web);
	pthread_key_delete(s->conn_key);
	pthread_key_delete(s->read_conn_key);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Metrics rows in order: the routes, then unmatched paths, then static files. */
static const struct route_stats *metrics_slot(const struct gl_server *s, size_t i)
{
	return &s->stats[i < s->nroutes ? i : i == s->nroutes ? MAX_ROUTES : STATIC_SLOT];
}

static const char *metrics_name(const struct gl_server *s, size_t i)
{
	return i < s->nroutes ? gl_routes[i].name : i == s->nroutes ? "unmatched" : "static";
}

void gl_server_metrics(struct gl_server *s, struct gl_strbuf *o)
{
	gl_strbuf_puts(o, "# HELP gpuledger_http_requests_total HTTP requests by route and status.\n"
			  "# TYPE gpuledger_http_requests_total counter\n");
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i <= s->nroutes + 1; i++) {
		const struct route_stats *st = metrics_slot(s, i);
		const char *name = metrics_name(s, i);
		for (int code = 0; code < STATUS_SLOTS; code++)
			if (st->by_status[code])
				gl_strbuf_printf(o, "gpuledger_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n", name,
						 code, (unsigned long long)st->by_status[code]);
	}
	gl_strbuf_puts(o, "# HELP gpuledger_http_request_duration_seconds Request latency by route.\n"
			  "# TYPE gpuledger_http_request_duration_seconds histogram\n");
	for (size_t i = 0; i <= s->nroutes + 1; i++) {
		const struct route_stats *st = metrics_slot(s, i);
		const char *name = metrics_name(s, i);
		uint64_t cum = 0;
		if (!st->count)
			continue;
		for (int b = 0; b < LAT_BUCKETS; b++) {
			cum += st->lat_hist[b];
			gl_strbuf_printf(o, "gpuledger_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
					 name, lat_bounds[b], (unsigned long long)cum);
		}
		gl_strbuf_printf(o, "gpuledger_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", name,
				 (unsigned long long)st->count);
		gl_strbuf_printf(o, "gpuledger_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n", name, st->lat_sum);
		gl_strbuf_printf(o, "gpuledger_http_request_duration_seconds_count{route=\"%s\"} %llu\n", name,
				 (unsigned long long)st->count);
	}
	gl_strbuf_puts(o, "# HELP gpuledger_auth_denied_total Requests refused by access control, by reason.\n"
			  "# TYPE gpuledger_auth_denied_total counter\n");
	for (int i = 0; i < AR_N; i++)
		gl_strbuf_printf(o, "gpuledger_auth_denied_total{reason=\"%s\"} %llu\n", auth_reason_names[i],
				 (unsigned long long)s->auth_denied[i]);
	pthread_mutex_unlock(&s->mu);
	if (s->audit)
		gl_audit_writer_metrics(s->audit, o);
}
