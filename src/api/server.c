/* HTTP server (see include/gl/server.h; docs/security.md, "Connections and
 * heavy requests"). libmicrohttpd's I/O threads read requests and answer
 * /healthz, static files and refusals themselves; every other request is
 * suspended and handed to a pool (main, heavy, probe), whose worker
 * resumes the connection with the answer. */
#include "gl/server.h"
#include "gl/filter.h"
#include "gl/apijson.h"
#include "gl/audit.h"
#include "gl/redact.h"
#include "gl/auth.h"
#include "gl/connguard.h"
#include "gl/db.h"
#include "gl/dbcancel.h"
#include "gl/fleetstate.h"
#include "gl/log.h"
#include "gl/replica.h"
#include "gl/reqpool.h"
#include "gl/routes.h"
#include "gl/shard.h"
#include "gl/static.h"
#include "gl/tally.h"
#include "gl/timeutil.h"
#include "gl/txn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/tcp.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

/* Connections and pools (docs/security.md, "Connections and heavy
 * requests"). */
#define SWEEP_MS 250              /* the deadlines' granularity */
#define REFUSAL_LOG_S 10          /* one WARN line of refusals per interval, with counts */
#define MHD_LOG_LINES 5           /* libmicrohttpd messages per REFUSAL_LOG_S, then counted */
#define TALLY_ADDRS 2048          /* addresses per minute in the aggregated audit rows */
#define PROBE_STATEMENT_MS 5000   /* /healthz's and /metrics' statements */
#define PROBE_QUEUE 64
#define HEAVY_RETRY_S "5"         /* Retry-After of a heavy request refused */
#define BUSY_RETRY_S "1"          /* ... of a request refused for want of room */

enum auth_reason { AR_MISSING, AR_MALFORMED, AR_UNKNOWN, AR_REVOKED, AR_EXPIRED, AR_UNUSABLE, AR_RATE_LIMITED,
		   AR_FORBIDDEN, AR_SCOPE, AR_REQUEST_RATE, AR_HEAVY_TOKEN, AR_N };
static const char *const auth_reason_names[AR_N] = {
	"missing", "malformed", "unknown", "revoked", "expired", "unusable", "rate_limited", "forbidden", "scope",
	"request_rate", "heavy_per_token",
};

/* What the aggregated audit rows and gpuledger_http_refused_total count
 * (include/gl/tally.h): refusals, one kind each, then /healthz answers. */
enum tally_kind {
	TK_REQUEST_LINE,   /* bytes that never made a request line: 400/414 from libmicrohttpd, or unfinished */
	TK_REQUEST_HEADER, /* a request libmicrohttpd answered itself after its line (431, 400, 413, 505), or
			    * closed on an error before its headers were whole */
	TK_HEADER_LATE,    /* server.header_timeout_s passed */
	TK_BODY_LATE,      /* server.body_timeout_s passed */
	TK_REQUEST_RATE,   /* server.rate_limit_per_ip */
	TK_AUTH_BLOCKED,   /* an address blocked after failed authentications */
	TK_CONN_PER_IP,    /* server.max_connections_per_ip */
	TK_CONN_FULL,      /* server.max_connections */
	TK_RESERVED_ONLY,  /* a non-probe request on a reserved connection */
	TK_STOPPING,       /* a request the server could not take: stopping, or the probe queue full */
	TK_REFUSALS,       /* (the refusals end here) */
	TK_HEALTHZ_OK = TK_REFUSALS,
	TK_HEALTHZ_UNAVAILABLE,
	TK_N
};
static const struct gl_tally_kind tally_kinds[TK_N] = {
	[TK_REQUEST_LINE] = {"request_line", "http.refused", "denied", "reasons"},
	[TK_REQUEST_HEADER] = {"request_header", "http.refused", "denied", "reasons"},
	[TK_HEADER_LATE] = {"header_timeout", "http.refused", "denied", "reasons"},
	[TK_BODY_LATE] = {"body_timeout", "http.refused", "denied", "reasons"},
	[TK_REQUEST_RATE] = {"request_rate", "http.refused", "denied", "reasons"},
	[TK_AUTH_BLOCKED] = {"auth_blocked", "http.refused", "denied", "reasons"},
	[TK_CONN_PER_IP] = {"connections_per_ip", "http.refused", "denied", "reasons"},
	[TK_CONN_FULL] = {"connections_total", "http.refused", "denied", "reasons"},
	[TK_RESERVED_ONLY] = {"reserved_connection", "http.refused", "denied", "reasons"},
	[TK_STOPPING] = {"unavailable", "http.refused", "denied", "reasons"},
	[TK_HEALTHZ_OK] = {"200", "http.probe", "ok", "statuses"},
	[TK_HEALTHZ_UNAVAILABLE] = {"503", "http.probe", "error", "statuses"},
};

struct route_stats {
	uint64_t by_status[STATUS_SLOTS];
	uint64_t lat_hist[LAT_BUCKETS + 1];
	double lat_sum;
	uint64_t count;
};

/* A token's heavy requests running or waiting (server.heavy_per_token). */
struct heavy_hold {
	int64_t token_id;
	size_t n;
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
	struct gl_auth_ratelimit *rl;
	struct gl_auth_reqlimit *reqrl; /* requests per second per address */
	struct gl_auth_cache *tokens;
	struct gl_audit_writer *audit;
	struct gl_static *web;     /* server.web_dir; NULL when not served */
	struct gl_fleetstate *fleet; /* the shards that answer (a central's; prober started on first use) */
	_Atomic int warming;         /* worker sessions still being opened (pool_init_main) */
	int64_t warm_bound_ms;       /* monotonic: /healthz waits for them no longer than this */
	uint64_t auth_denied[AR_N]; /* under mu */
	struct gl_log_limiter err_log;   /* 503 answers (the database away); under mu */
	struct gl_log_limiter int_log;   /* other 5xx answers (a fault to mend), apart: an outage's
					  * run of 503s must not hide one; under mu */
	unsigned long err_ref;           /* the last 5xx answer's reference; under mu */
	struct gl_log_limiter grace_log; /* tokens let in on the outage grace; under mu */
	/* connections, pools, refusals */
	struct gl_connguard *guard;
	struct gl_tally *tally;
	struct gl_reqpool *main_pool, *heavy_pool, *probe_pool;
	struct heavy_hold *holds;        /* server.heavy_workers + heavy_queue of them; under mu */
	size_t n_holds;
	uint64_t heavy_refused_token, heavy_refused_queue, heavy_run, stmt_timeouts; /* under mu */
	_Atomic int stopping;            /* requests are answered 503 from now on */
	pthread_t sweeper, flusher;
	int have_sweeper, have_flusher;
	pthread_mutex_t hk_mu;           /* the housekeeping threads' stop */
	pthread_cond_t hk_cv;
	int hk_stop;
	pthread_mutex_t mhd_log_mu;      /* libmicrohttpd's messages: MHD_LOG_LINES per interval */
	int64_t mhd_log_window_s;
	unsigned mhd_log_lines;
	uint64_t mhd_log_suppressed;
};

/* A connection's state (libmicrohttpd's socket context). */
struct conn_ctx {
	struct gl_conn *gc;
	char addr[INET6_ADDRSTRLEN]; /* the client, as shown in the log and the audit rows */
	int fd;
};

/* Per-request state, from the request line to the completion callback. */
enum req_phase { RQ_NEW, RQ_QUEUED, RQ_DONE };
struct req_ctx {
	struct gl_server *s;
	struct MHD_Connection *conn;
	struct conn_ctx *cc;
	struct timespec t0;
	int headers_seen; /* the handler's first call came */
	struct gl_strbuf body;
	int too_large;
	enum req_phase phase; /* RQ_QUEUED: suspended, a pool's; RQ_DONE: resp is the answer */
	struct gl_req req;
	struct gl_resp resp;
	struct gl_server_auth auth;
	const struct gl_server_route *route;
	size_t ridx;
	int64_t token_id;
	enum auth_reason reason;
	int method_mismatch; /* the path is a route's, the method not */
	int holds_heavy;  /* counted in token_id's heavy_hold */
	int tallied;      /* the answer is counted in the tally, not audited alone */
	char fresh_buf[3][48]; /* add_freshness's header values, until the answer is sent */
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

const struct gl_tokens_scope *gl_req_scope(struct gl_req *req, size_t *n)
{
	req->scope_applied = 1;
	*n = req->auth ? req->auth->n_scope : 0;
	return *n ? req->auth->scope : NULL;
}

int gl_req_scope_filter(struct gl_req *req, struct gl_resp *resp, const char *param, struct gl_filter *f)
{
	size_t n;
	const struct gl_tokens_scope *sc = gl_req_scope(req, &n);
	struct gl_err err = {0};
	for (size_t d = 0; sc && gl_tokens_scope_dims[d]; d++) {
		const char *vals[GL_TOKENS_MAX_OWNERS];
		size_t k = gl_tokens_scope_values(sc, n, gl_tokens_scope_dims[d], vals);
		int rc = k ? gl_filter_restrict(f, gl_tokens_scope_dims[d], vals, k, &err) : 0;
		if (rc)
			return gl_resp_error(resp, -rc == GL_EPERM ? GL_EPERM : GL_EINVAL, param, "%s: %s", param, err.msg);
	}
	return 0;
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

static int check_route_params(struct MHD_Connection *conn, const struct gl_server_route *route, struct gl_resp *resp)
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

static void fleet_fini(void);

static void conn_destroy(void *p)
{
	gl_store_thread_close(p);
	fleet_fini();
}

/* This worker thread's request in progress, for the stop's cancel: a pool
 * thread takes one request at a time, and finish() ends the slot before
 * the request is answered. */
static _Thread_local struct gl_dbcancel_slot t_db_slot;
/* The statement_timeout of this thread's pool (set once per thread). */
static _Thread_local int64_t t_stmt_ms;

/* On a central database of shards (docs/scale.md), the shards that
 * answered are the process's knowledge (s->fleet, probed by one thread
 * every FLEET_PROBE_S): each thread's session reads those, set again when
 * the answering set changes or the session is new (search_path is the
 * session's), and never connects to a shard to learn it. t_fleet: 0 not
 * known yet, 1 no shards, 2 sharded. A central's reads stay on its
 * primary: routing writes (the shards' clusters, the fleet schema), which
 * a standby cannot. */
#define FLEET_PROBE_S 5
/* How long /healthz says "starting" at most while the worker sessions are
 * opened (warm_session): the first probe of a hung shard (its
 * connect_timeout, GL_SHARD_CONNECT_TIMEOUT) and a shard that stops
 * answering between that probe and the sessions' connections (the same
 * timeout again), with room to spare. Past it the daemon says ready; a
 * session still opening finishes on its own thread. */
#define WARM_BOUND_S 15
static _Thread_local int t_fleet;
static _Thread_local uint64_t t_fleet_gen;  /* the generation t_route copies */
static _Thread_local int t_fleet_set;       /* the session reads t_fleet_mask's shards */
static _Thread_local uint64_t t_fleet_mask;
static _Thread_local struct gl_shard_route t_route;
static _Thread_local int t_read_fleet; /* as t_fleet, for the read_dsn session */
/* The session whose read transaction this thread's request holds (see
 * read_txn_begin): its route stays the one the request began with. */
static _Thread_local struct gl_store *t_req_txn;

static int fleet_route(struct gl_server *s, struct gl_store *c, int fresh, struct gl_err *err)
{
	int n = 0, rc;
	if (fresh || !t_fleet) {
		if ((rc = gl_shard_count(c, &n, err)))
			return rc;
		t_fleet = n ? 2 : 1;
		t_fleet_set = 0;
	}
	if (t_fleet != 2)
		return 0;
	/* inside the request's read transaction: a set published meanwhile
	 * waits for the next request (a new backend, though, is routed) */
	if (t_req_txn == c && !fresh && t_fleet_set)
		return 0;
	if ((rc = gl_fleetstate_get(s->fleet, &t_fleet_gen, &t_route, err)))
		return rc;
	if (t_fleet_set && t_fleet_mask == t_route.mask)
		return 0;
	if ((rc = gl_shard_use(c, t_route.mask, err)))
		return rc;
	t_fleet_set = 1;
	t_fleet_mask = t_route.mask;
	return 0;
}

/* In the exiting thread (the connection key's destructor). */
static void fleet_fini(void)
{
	gl_shard_route_fini(&t_route);
	t_fleet = 0;
	t_fleet_gen = 0;
	t_fleet_set = 0;
	t_read_fleet = 0;
}

const struct gl_shard_route *gl_req_shards(const struct gl_req *req)
{
	(void)req;
	return t_fleet == 2 ? &t_route : NULL;
}

/* The read DSN's connection when it may answer req (see req_db): 0
 * with *out set, or 1 with req->read.fallback saying why the primary
 * must. A standby within the bound serves the whole request: a handler
 * asking again gets it back without a second look. */
static int read_conn(struct gl_req *req, struct gl_store **out)
{
	struct gl_server *s = req->srv;
	struct gl_replica_status st;
	struct gl_err err = {0};
	struct gl_store *c = NULL;
	if (req->read.set) {
		if (req->read.fallback[0])
			return 1;
		*out = pthread_getspecific(s->read_conn_key);
		return *out ? 0 : 1;
	}
	req->read.set = 1;
	int fresh = 0, n = 0;
	if (gl_store_thread(s->read_conn_key, s->read_dsn, t_stmt_ms, &c, &fresh, &err) ||
	    gl_replica_status(c, &st, &err) || ((fresh || !t_read_fleet) && gl_shard_count(c, &n, &err))) {
		snprintf(req->read.fallback, sizeof req->read.fallback, "read_dsn unavailable");
		pthread_mutex_lock(&s->mu);
		gl_log_fail(&s->read_log, req->now_s, GL_LOG_WARN, "http: database.read_dsn: %s; reads go to the primary",
			    err.msg);
		pthread_mutex_unlock(&s->mu);
		return 1;
	}
	if (fresh || !t_read_fleet)
		t_read_fleet = n ? 2 : 1;
	if (t_read_fleet == 2) {
		snprintf(req->read.fallback, sizeof req->read.fallback, "a central of shards reads on its primary");
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

static int req_db(struct gl_req *req, struct gl_store **out, struct gl_err *err)
{
	struct gl_server *s = req->srv;
	struct gl_store *c = NULL;
	char what[96];
	int rc, fresh = 0;

	if (req->route && req->route->replica_ok && s->read_dsn[0] && read_conn(req, &c) == 0) {
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
	if ((rc = gl_store_thread(s->conn_key, s->dsn, t_stmt_ms, &c, &fresh, err)) ||
	    (rc = fleet_route(s, c, fresh, err)))
		return rc;
	/* anew on every call: a reset above gave another backend */
	snprintf(what, sizeof what, "http %s %s", req->method, req->path);
	gl_dbcancel_begin(&t_db_slot, c, GL_DBCANCEL_REQUESTS, what);
	*out = c;
	return 0;
}

int gl_req_store(struct gl_req *req, struct gl_store **st, struct gl_err *err)
{
	int rc = req_db(req, st, err);
	if (rc)
		*st = NULL;
	return rc;
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

static const struct gl_server_route *match(const char *method, const char *url, size_t *idx, int *method_mismatch)
{
	*method_mismatch = 0;
	for (size_t i = 0; gl_routes[i].path; i++) {
		const struct gl_server_route *r = &gl_routes[i];
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
		const struct gl_server_route *r = &gl_routes[i];
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

void gl_resp_set_stream(struct gl_resp *resp, int (*next)(void *state, struct gl_strbuf *out),
			void (*fini)(void *state), void *state)
{
	if (resp->stream.fini)
		resp->stream.fini(resp->stream.state);
	resp->stream = (struct gl_resp_stream){next, fini, state};
}

static void resp_drop_stream(struct gl_resp *resp)
{
	if (resp->stream.fini)
		resp->stream.fini(resp->stream.state);
	memset(&resp->stream, 0, sizeof resp->stream);
}

/* A streamed body as libmicrohttpd pulls it: the next piece is made when
 * the last one has gone out, so at most one piece is held at a time. */
struct stream_out {
	struct gl_resp_stream st;
	struct gl_strbuf buf;
	size_t off;
	int last; /* buf holds the last piece */
};

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct stream_out *so = cls;
	size_t n;
	(void)pos;
	while (so->off == so->buf.len) {
		if (so->last)
			return MHD_CONTENT_READER_END_OF_STREAM;
		gl_strbuf_reset(&so->buf);
		so->off = 0;
		so->last = !so->st.next(so->st.state, &so->buf);
	}
	n = so->buf.len - so->off < max ? so->buf.len - so->off : max;
	memcpy(out, so->buf.p + so->off, n);
	so->off += n;
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream_out *so = cls;
	if (so->st.fini)
		so->st.fini(so->st.state);
	gl_strbuf_fini(&so->buf);
	free(so);
}

static enum MHD_Result send_resp(struct MHD_Connection *conn, struct gl_resp *resp)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (resp->stream.next) {
		struct stream_out *so = gl_xcalloc(1, sizeof *so);
		so->st = resp->stream;
		memset(&resp->stream, 0, sizeof resp->stream); /* the response's now */
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, GL_RESP_CHUNK, stream_read, so, stream_free);
	} else {
		size_t len = resp->body.len;
		char *body = gl_strbuf_steal(&resp->body);
		r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	}
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
	if (gl_auth_ratelimit_fail(s->rl, req->remote_addr, req->now_s))
		gl_log(GL_LOG_WARN, "http: %d failed authentications from %s: blocked for %d s", AUTH_MAX_FAILURES,
		       req->remote_addr, AUTH_BLOCK_S);
	resp->extra_headers[0][0] = "WWW-Authenticate";
	resp->extra_headers[0][1] = "Bearer realm=\"gpuledger\"";
	return gl_resp_error(resp, GL_EAUTH, NULL, "%s", msgs[why]);
}

/* Fills a from the bearer token, or returns -GL_EAUTH / -GL_EBUSY / -GL_EDB
 * / -GL_EINTERNAL with *reason set. The token is hashed at once and never
 * kept. */
static int authenticate(struct gl_server *s, struct gl_req *req, struct gl_resp *resp, struct gl_server_auth *a,
			int64_t *attempted_id, enum auth_reason *reason)
{
	const char *h = MHD_lookup_connection_value((struct MHD_Connection *)req->mhd_conn, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);
	struct gl_tokens_info t;
	unsigned char key[32];
	char tok[GL_TOKENS_LEN + 1];
	int found = 0;

	if (gl_auth_ratelimit_blocked(s->rl, req->remote_addr, req->now_s)) {
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
	if (strlen(h) != GL_TOKENS_LEN || !gl_tokens_wellformed(h))
		return auth_fail(s, req, resp, AR_MALFORMED, reason);
	memcpy(tok, h, sizeof tok);
	gl_tokens_sha256(tok, key);
	memset(tok, 0, sizeof tok);
	if (!gl_auth_cache_get(s->tokens, key, req->now_s, &found, &t)) {
		struct gl_err err = {0};
		struct gl_store *c = NULL;
		int rc;
		if ((rc = req_db(req, &c, &err)) || (rc = gl_tokens_lookup(c, key, &t, &found, &err))) {
			/* only when the database cannot be reached at all: an answer
			 * (unknown, revoked, a query error) is never overridden */
			int unreachable = !c || !gl_store_up(c);
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
	a->n_scope = t.n_scope;
	memcpy(a->scope, t.scope, sizeof a->scope);
	return 0;
}

/* The query string as the client sent it (decoded, then each value's
 * '&', '=', '%' and control bytes percent-encoded again), for the audit
 * row: who asked for which per-user figures is what the log is for. */
struct query_text {
	struct gl_strbuf *out;
};

static void query_put(struct gl_strbuf *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '&' || ch == '=' || ch == '%' || ch == '+' || ch < 0x20 || ch == 0x7f)
			gl_strbuf_printf(o, "%%%02X", ch);
		else
			gl_strbuf_putc(o, (char)ch);
	}
}

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				 const char *value, size_t value_size)
{
	struct query_text *q = cls;
	if (q->out->len)
		gl_strbuf_putc(q->out, '&');
	query_put(q->out, key, key_size);
	if (value) {
		gl_strbuf_putc(q->out, '=');
		query_put(q->out, value, value_size);
	}
	return MHD_YES;
}

/* One audit row per request, allowed or not: never the token; the token's
 * name, the route, the query string (filters may name people: the log is
 * the admin's), status and why. Refusals and /healthz answers are rows in
 * aggregate (tally_emit). */
static void audit_request(struct gl_server *s, const struct gl_req *req, const struct gl_server_route *route, int status,
			  int64_t token_id, enum auth_reason reason, double secs)
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
	if (token_id && req->auth && req->auth->token_id == token_id) {
		char name[sizeof req->auth->token_name];
		gl_audit_clean(req->auth->token_name, name, sizeof name);
		gl_strbuf_puts(&d, ",\"token\":\"");
		gl_strbuf_put_json_str(&d, name, strlen(name));
		gl_strbuf_putc(&d, '"');
	}
	if (req->mhd_conn) {
		struct gl_strbuf qs = GL_STRBUF_INIT;
		struct query_text q = {&qs};
		char clean[GL_AUDIT_FIELD_MAX];
		MHD_get_connection_values_n((struct MHD_Connection *)req->mhd_conn, MHD_GET_ARGUMENT_KIND, query_arg, &q);
		if (qs.len) {
			/* a client that put a credential in the URL (?token=glt_...)
			 * must not have it in the log for good; cut on a character
			 * boundary, as every audited text */
			struct gl_strbuf red = GL_STRBUF_INIT;
			gl_redact_secrets(gl_strbuf_cstr(&qs), &red);
			gl_audit_clean(gl_strbuf_cstr(&red), clean, sizeof clean);
			gl_strbuf_fini(&red);
			gl_strbuf_puts(&d, ",\"query\":\"");
			gl_strbuf_put_json_str(&d, clean, strlen(clean));
			gl_strbuf_putc(&d, '"');
		}
		gl_strbuf_fini(&qs);
	}
	if (reason < AR_N)
		gl_strbuf_printf(&d, ",\"reason\":\"%s\"", auth_reason_names[reason]);
	gl_strbuf_printf(&d, ",\"ms\":%.3f}", secs * 1000.0);
	e = (struct gl_audit_entry){0, actor, req->remote_addr, "http.request", obj,
				    status < 400 ? "ok" : status == 401 || status == 403 || status == 429 ? "denied" : "error",
				    gl_strbuf_cstr(&d)};
	gl_audit_writer_submit(s->audit, &e);
	gl_strbuf_fini(&d);
}

/* An aggregated row (include/gl/tally.h) into the audit log. */
static void tally_emit(void *cls, const struct gl_tally_row *row)
{
	struct gl_server *s = cls;
	struct gl_audit_entry e = {0, "anonymous", row->addr, row->action,
				   !strcmp(row->action, "http.probe") ? "/healthz" : NULL, row->outcome, row->detail_json};
	if (s->audit && s->cfg->audit_requests)
		gl_audit_writer_submit(s->audit, &e);
}

static void tally(struct gl_server *s, const char *addr, enum tally_kind k)
{
	gl_tally_add(s->tally, addr && *addr ? addr : "unknown", (size_t)k, wall_s());
}

/* The bytes a TCP socket has received so far (Linux's TCP_INFO). */
static int socket_rx(int fd, uint64_t *rx)
{
	struct tcp_info ti;
	socklen_t n = sizeof ti;
	memset(&ti, 0, sizeof ti);
	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &n) != 0 ||
	    n < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
		return -1;
	*rx = ti.tcpi_bytes_received;
	return 0;
}

/* The client address as shown in the log and the audit rows. */
static void addr_text(const struct sockaddr *sa, char *out, size_t n)
{
	out[0] = '\0';
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)n);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)n);
}

/* libmicrohttpd's accept policy: the guard's verdict before anything is
 * allocated; a refused socket is closed at once, without a log line of
 * its own (the sweeper logs the refusals' counts). */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct gl_server *s = cls;
	char key[GL_CONNGUARD_KEY_MAX], shown[INET6_ADDRSTRLEN];
	enum gl_connguard_verdict v;
	(void)len;
	if (gl_connguard_key(sa, key, sizeof key))
		return MHD_YES;
	if ((v = gl_connguard_check(s->guard, key)) == GL_CONNGUARD_ADMIT)
		return MHD_YES;
	addr_text(sa, shown, sizeof shown);
	tally(s, shown, v == GL_CONNGUARD_REFUSE_ADDR ? TK_CONN_PER_IP : TK_CONN_FULL);
	return MHD_NO;
}

static void conn_started(struct gl_server *s, struct MHD_Connection *conn, void **socket_context)
{
	struct conn_ctx *cc = gl_xcalloc(1, sizeof *cc);
	const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	char key[GL_CONNGUARD_KEY_MAX] = "";
	cc->fd = fi ? fi->connect_fd : -1;
	if (ai && ai->client_addr) {
		addr_text(ai->client_addr, cc->addr, sizeof cc->addr);
		if (gl_connguard_key(ai->client_addr, key, sizeof key))
			key[0] = '\0';
	}
	cc->gc = gl_connguard_open(s->guard, key, cc->fd, mono_ms());
	*socket_context = cc;
}

/* A connection closes: what the guard cut short, and bytes that never
 * made a request (libmicrohttpd answers a request line too long itself,
 * 414, and closes on one it cannot parse: no callback of ours sees
 * either). The socket is still open here; libmicrohttpd closes it after
 * this call. */
static void conn_closed(struct gl_server *s, void **socket_context)
{
	struct conn_ctx *cc = *socket_context;
	uint64_t mark = 0, rx = 0;
	int leftover;
	enum gl_connguard_kill why;
	if (!cc)
		return;
	/* a FIN takes a sequence number, counted as a byte received: a
	 * connection the client closed cleanly has one byte more */
	leftover = gl_connguard_between(cc->gc, &mark) && socket_rx(cc->fd, &rx) == 0 && rx > mark + 1;
	why = gl_connguard_close(s->guard, cc->gc);
	if (why == GL_CONNGUARD_HEADER_LATE)
		tally(s, cc->addr, TK_HEADER_LATE);
	else if (why == GL_CONNGUARD_BODY_LATE)
		tally(s, cc->addr, TK_BODY_LATE);
	else if (leftover)
		tally(s, cc->addr, TK_REQUEST_LINE);
	free(cc);
	*socket_context = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		conn_started(cls, conn, socket_context);
	else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
		conn_closed(cls, socket_context);
}

/* A request line has been read: the request's state starts here (and its
 * completion callback is called whatever becomes of it). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct req_ctx *x = gl_xcalloc(1, sizeof *x);
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	(void)uri;
	x->s = cls;
	x->conn = conn;
	x->cc = ci ? ci->socket_context : NULL;
	x->reason = AR_N;
	x->ridx = MAX_ROUTES;
	clock_gettime(CLOCK_MONOTONIC, &x->t0);
	if (x->cc)
		gl_connguard_request_line(x->cc->gc, mono_ms());
	return x;
}

static void heavy_release(struct req_ctx *x);

static void req_ctx_free(struct req_ctx *x)
{
	if (x->holds_heavy)
		heavy_release(x);
	gl_strbuf_fini(&x->body);
	gl_strbuf_fini(&x->resp.body);
	resp_drop_stream(&x->resp);
	free(x);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct gl_server *s = cls;
	struct req_ctx *x = *con_cls;
	uint64_t rx = 0;
	if (!x)
		return;
	if (!x->headers_seen) {
		/* libmicrohttpd answered the request itself after its line:
		 * header fields too large (431), a malformed header line or
		 * Content-Length (400), a Content-Length too large (413), a
		 * version (505); or closed it on an error without an answer
		 * (the client ended it mid-header). The sweeper's closes are
		 * counted as theirs when the connection closes. */
		const union MHD_ConnectionInfo *si = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_HTTP_STATUS);
		int killed = x->cc && gl_connguard_killed(x->cc->gc) != GL_CONNGUARD_ALIVE;
		if (si && si->http_status >= 400) {
			tally(s, x->cc ? x->cc->addr : NULL, TK_REQUEST_HEADER);
			record(s, MAX_ROUTES, (int)si->http_status, since(&x->t0));
		} else if (toe == MHD_REQUEST_TERMINATED_WITH_ERROR && !killed) {
			tally(s, x->cc ? x->cc->addr : NULL, TK_REQUEST_HEADER);
		}
	}
	if (x->cc && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && socket_rx(x->cc->fd, &rx) == 0)
		gl_connguard_answered(x->cc->gc, rx);
	req_ctx_free(x);
	*con_cls = NULL;
}

/* libmicrohttpd's own messages (a request without Host, a failed accept):
 * MHD_LOG_LINES per REFUSAL_LOG_S, the rest counted and said by the
 * sweeper, so hostile input cannot flood the log. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct gl_server *s = cls;
	char msg[512];
	int64_t window = wall_s() / REFUSAL_LOG_S;
	int show;
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	pthread_mutex_lock(&s->mhd_log_mu);
	if (window != s->mhd_log_window_s) {
		s->mhd_log_window_s = window;
		s->mhd_log_lines = 0;
	}
	show = s->mhd_log_lines++ < MHD_LOG_LINES;
	if (!show)
		s->mhd_log_suppressed++;
	pthread_mutex_unlock(&s->mhd_log_mu);
	if (show)
		gl_log(GL_LOG_WARN, "http: %s", msg);
}

/* An answer made on the I/O thread itself (a refusal, /healthz from its
 * cache): counted, tallied instead of audited one by one, sent. */
static enum MHD_Result answer_inline(struct req_ctx *x, enum tally_kind k)
{
	if (!x->resp.status)
		x->resp.status = 200;
	record(x->s, x->ridx, x->resp.status, since(&x->t0));
	tally(x->s, x->req.remote_addr, k);
	x->phase = RQ_DONE;
	return send_resp(x->conn, &x->resp);
}

static enum MHD_Result refuse_inline(struct req_ctx *x, int status, const char *code, enum tally_kind k,
				     const char *retry_after, const char *msg)
{
	gl_resp_error(&x->resp, status == 429 ? GL_EBUSY : GL_EDB, NULL, "%s", msg);
	x->resp.status = status;
	x->resp.err_code = code;
	if (retry_after)
		gl_apijson_add_header(&x->resp, "Retry-After", retry_after);
	error_body(&x->resp);
	return answer_inline(x, k);
}

static void req_fill(struct req_ctx *x, const char *url, const char *method)
{
	x->req.method = method;
	x->req.path = url;
	x->req.remote_addr = x->cc ? x->cc->addr : "";
	x->req.body = x->body.p;
	x->req.body_len = x->body.len;
	x->req.cfg = x->s->cfg;
	x->req.srv = x->s;
	x->req.mhd_conn = x->conn;
	x->req.now_s = wall_s();
}

static void run_request(void *arg);
static void drop_request(void *arg);

/* Hands x to pool: the connection waits (suspended) for the worker that
 * answers it. */
static enum MHD_Result enqueue(struct req_ctx *x, struct gl_reqpool *pool)
{
	x->phase = RQ_QUEUED;
	MHD_suspend_connection(x->conn);
	if (gl_reqpool_submit(pool, run_request, drop_request, x) == 0)
		return MHD_YES;
	/* the pool is stopping (or, for the probe pool, full): answered now */
	drop_request(x);
	return MHD_YES;
}

static enum MHD_Result dispatch(struct req_ctx *x, const char *url, const char *method)
{
	struct gl_server *s = x->s;
	const struct gl_static_file *f;
	int probe;

	req_fill(x, url, method);
	x->route = match(method, url, &x->ridx, &x->method_mismatch);
	probe = x->route && x->route->cls == GL_REQCLASS_PROBE;
	/* a probe must answer at any rate and while everything else is busy:
	 * from the last check when it is fresh, never behind the pools */
	if (x->route && x->route->fn == gl_route_healthz) {
		if (gl_route_healthz_cached(&x->req, &x->resp))
			return answer_inline(x, x->resp.status == 503 ? TK_HEALTHZ_UNAVAILABLE : TK_HEALTHZ_OK);
		return enqueue(x, s->probe_pool);
	}
	if (s->stopping)
		return refuse_inline(x, 503, "unavailable", TK_STOPPING, BUSY_RETRY_S, "the server is stopping");
	/* before any token lookup or database work: a flood costs a hash probe */
	if (gl_auth_reqlimit_take(s->reqrl, x->req.remote_addr, mono_ms())) {
		x->reason = AR_REQUEST_RATE;
		pthread_mutex_lock(&s->mu);
		s->auth_denied[AR_REQUEST_RATE]++;
		pthread_mutex_unlock(&s->mu);
		return refuse_inline(x, 429, "rate_limited", TK_REQUEST_RATE, "1",
				     "too many requests from this address (server.rate_limit_per_ip)");
	}
	if (!x->route && s->web && (!strcmp(method, "GET") || !strcmp(method, "HEAD")) &&
	    (f = gl_static_find(s->web, url))) {
		int status;
		enum MHD_Result ret = send_static(x->conn, f, &status);
		record(s, STATIC_SLOT, status, since(&x->t0));
		x->phase = RQ_DONE;
		return ret;
	}
	if (x->cc && gl_connguard_reserved(x->cc->gc) && !probe)
		return refuse_inline(x, 503, "busy", TK_RESERVED_ONLY, BUSY_RETRY_S,
				     "the server is at its connection limit; this connection may reach /healthz and "
				     "/metrics only (server.reserved_connections)");
	return enqueue(x, probe ? s->probe_pool : s->main_pool);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct req_ctx *x = *con_cls;
	(void)version;
	if (!x)
		*con_cls = x = on_uri(cls, url, conn);
	if (!x->headers_seen) {
		/* first call: headers only. Never answer yet for a request with a
		 * body, or the client may be cut off mid-upload. */
		x->headers_seen = 1;
		if (x->cc)
			gl_connguard_headers_done(x->cc->gc, mono_ms());
		return MHD_YES;
	}
	if (*upload_size) {
		if (!x->too_large && x->body.len + *upload_size > (size_t)x->s->cfg->http_max_body_bytes)
			x->too_large = 1;
		if (!x->too_large)
			gl_strbuf_append(&x->body, upload_data, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	switch (x->phase) {
	case RQ_DONE: /* resumed by the worker that answered it */
		return send_resp(conn, &x->resp);
	case RQ_QUEUED:
		return MHD_YES;
	case RQ_NEW:
		break;
	}
	if (x->cc)
		gl_connguard_body_done(x->cc->gc);
	return dispatch(x, url, method);
}

/* Access control and the request's checks before its handler (in a
 * worker: the token lookup may ask the database). */
static int prepare(struct req_ctx *x)
{
	struct gl_server *s = x->s;
	const struct gl_server_route *route = x->route;
	struct gl_req *req = &x->req;
	struct gl_resp *resp = &x->resp;
	int rc = 0;

	if (!route || !gl_auth_route_public(route->role)) {
		/* unmatched paths need a token too: no route map for strangers */
		if ((rc = authenticate(s, req, resp, &x->auth, &x->token_id, &x->reason)))
			return rc;
		req->auth = &x->auth;
		x->token_id = x->auth.token_id;
		if (route && !gl_auth_role_allows(x->auth.role, route->role)) {
			x->reason = AR_FORBIDDEN;
			return gl_resp_error(resp, GL_EPERM, NULL, "role %s may not use %s %s", x->auth.role, req->method,
					     route->path);
		}
	}
	if (x->too_large)
		return gl_resp_error(resp, GL_ERANGE, NULL, "request body larger than %lld bytes",
				     (long long)s->cfg->http_max_body_bytes);
	if (!route && x->method_mismatch) {
		rc = gl_resp_error(resp, GL_EINVAL, NULL, "method %s not allowed on %s", req->method, req->path);
		resp->err_code = "method_not_allowed";
		resp->status = 405;
		allowed_methods(req->path, resp->header_buf, sizeof resp->header_buf);
		resp->extra_headers[0][0] = "Allow";
		resp->extra_headers[0][1] = resp->header_buf;
		return rc;
	}
	if (!route)
		return gl_resp_error(resp, GL_ENOTFOUND, NULL, "no such endpoint: %s", req->path);
	if (req->auth && req->auth->n_scope && !route->owner_scoped) {
		/* before the handler: one that does not filter by owner may write
		 * (POST /v1/hook/actions), and a refusal must leave nothing behind */
		x->reason = AR_SCOPE;
		return gl_resp_error(resp, GL_EPERM, NULL, "%s does not support owner-scoped tokens", route->path);
	}
	return check_route_params(x->conn, route, resp);
}

/* A shard that did not answer: a route that can name what it could not
 * read does so in its answer (chargeback and capacity, as JSON); any other
 * route that reads the shards' facts answers 503 naming the clusters,
 * never a smaller total presented as whole. */
static int fleet_check(struct req_ctx *x)
{
	static const char *const central_only[] = {"/v1/tokens", "/v1/whoami", "/v1/audit", "/v1/audit/verify",
						    "/v1/reports"};
	const char *fmt = gl_req_param(&x->req, "format");
	const struct gl_shard_route *rt;
	struct gl_err err = {0};
	struct gl_store *st;
	int rc;

	if (!x->req.auth)
		return 0;
	/* a database that does not answer is the route's to handle (its own
	 * error, or the grace of /metrics) */
	if (gl_req_store(&x->req, &st, &err))
		return 0;
	if (!(rt = gl_req_shards(&x->req)) || !rt->unread_text)
		return 0;
	for (size_t i = 0; i < GL_ARRAY_LEN(central_only); i++)
		if (!strcmp(x->route->path, central_only[i]))
			return 0;
	if ((!strcmp(x->route->path, "/v1/chargeback") || !strcmp(x->route->path, "/v1/capacity")) &&
	    (!fmt || !strcmp(fmt, "json")))
		return 0;
	rc = gl_resp_error(&x->resp, GL_EDB, NULL, "%s could not be read: this answer would leave them out",
			   rt->unread_text);
	x->resp.status = 503;
	x->resp.err_code = "shard_unavailable";
	return rc;
}

/* A streamed JSON object answer with a member spliced in after its
 * opening brace: the first piece the inner stream makes is rewritten, the
 * rest pass through. */
struct splice_stream {
	struct gl_resp_stream inner;
	char *member; /* "name":value */
	int first_done;
};

static int splice_next(void *state, struct gl_strbuf *out)
{
	struct splice_stream *sp = state;
	size_t at = out->len;
	int more = sp->inner.next(sp->inner.state, out);
	if (!sp->first_done && out->len > at) {
		struct gl_strbuf b = GL_STRBUF_INIT;
		sp->first_done = 1;
		if (out->p[at] == '{') {
			gl_strbuf_append(&b, out->p, at + 1);
			gl_strbuf_puts(&b, sp->member);
			if (out->len > at + 1 && out->p[at + 1] != '}')
				gl_strbuf_putc(&b, ',');
			gl_strbuf_append(&b, out->p + at + 1, out->len - at - 1);
			gl_strbuf_fini(out);
			*out = b;
		}
	}
	return more;
}

static void splice_fini(void *state)
{
	struct splice_stream *sp = state;
	if (sp->inner.fini)
		sp->inner.fini(sp->inner.state);
	free(sp->member);
	free(sp);
}

/* Where a read's answer came from (req_db on a replica_ok route), for
 * the client: headers on every answer, and "freshness" first in a JSON
 * object body, streamed or not. buf keeps the header values until the
 * answer is sent. */
static void add_freshness(const struct gl_req *req, struct gl_resp *resp, char buf[3][48])
{
	struct gl_strbuf m = GL_STRBUF_INIT, b = GL_STRBUF_INIT;
	char through[32];
	gl_timeutil_format((int64_t)req->read.data_through_s, through, sizeof through);
	snprintf(buf[0], sizeof buf[0], "%.3f", req->read.lag_s);
	snprintf(buf[1], sizeof buf[1], "%s", through);
	gl_apijson_add_header(resp, "X-Served-By", req->read.standby ? "standby" : "primary");
	gl_apijson_add_header(resp, "X-Replica-Lag-Seconds", buf[0]);
	gl_apijson_add_header(resp, "X-Commits-Through", buf[1]);
	if (req->read.fallback[0])
		gl_apijson_add_header(resp, "X-Read-Fallback", req->read.fallback);
	if (!resp->content_type || strncmp(resp->content_type, "application/json", 16))
		return;
	gl_strbuf_printf(&m, "\"freshness\":{\"served_by\":\"%s\",\"replica_lag_s\":%s,\"data_through\":\"%s\"",
			 req->read.standby ? "standby" : "primary", buf[0], through);
	if (req->read.fallback[0]) {
		gl_strbuf_puts(&m, ",\"fallback\":\"");
		gl_strbuf_put_json_str(&m, req->read.fallback, strlen(req->read.fallback));
		gl_strbuf_putc(&m, '"');
	}
	gl_strbuf_putc(&m, '}');
	if (resp->stream.next) {
		struct splice_stream *sp = gl_xcalloc(1, sizeof *sp);
		sp->inner = resp->stream;
		sp->member = gl_strbuf_steal(&m);
		resp->stream = (struct gl_resp_stream){splice_next, splice_fini, sp};
		return;
	}
	if (resp->body.len >= 2 && resp->body.p[0] == '{') {
		gl_strbuf_putc(&b, '{');
		gl_strbuf_append(&b, m.p, m.len);
		if (resp->body.p[1] != '}')
			gl_strbuf_putc(&b, ',');
		gl_strbuf_append(&b, resp->body.p + 1, resp->body.len - 1);
		gl_strbuf_fini(&resp->body);
		resp->body = b;
	}
	gl_strbuf_fini(&m);
}

/* On a central database of shards, a read-only route's statements run in
 * one read transaction: postgres_fdw opens a remote transaction on each
 * shard once for the request, not once for each of its dozen statements
 * (docs/scale.md, "What it costs"). One database is left as it was. */
static void read_txn_begin(struct req_ctx *x)
{
	struct gl_store *st;
	struct gl_err err = {0};
	if (!x->req.auth || !x->route->replica_ok || gl_req_store(&x->req, &st, &err) || !gl_req_shards(&x->req))
		return;
	if (gl_txn_read_begin(st, &err)) {
		/* the route's own statements meet the same failure and say it */
		gl_log(GL_LOG_WARN, "http: %s %s: read transaction: %s", x->req.method, x->req.path, err.msg);
		return;
	}
	t_req_txn = st;
}

static void read_txn_end(void)
{
	if (!t_req_txn)
		return;
	gl_txn_read_end(t_req_txn);
	t_req_txn = NULL;
}

static int handle(struct req_ctx *x)
{
	struct gl_req *req = &x->req;
	struct gl_resp *resp = &x->resp;
	int rc;
	gl_db_clear_sqlstate();
	req->route = x->route;
	if ((rc = fleet_check(x)))
		return rc;
	read_txn_begin(x);
	rc = x->route->fn(req, resp);
	read_txn_end();
	if (rc == 0 && req->read.set)
		add_freshness(req, resp, x->fresh_buf);
	if (rc == 0 && req->auth && req->auth->n_scope && !req->scope_applied) {
		/* backstop for a flagged handler that forgot its filter (read
		 * only): its rows are not shown */
		gl_strbuf_reset(&resp->body);
		resp_drop_stream(resp);
		memset(resp->extra_headers, 0, sizeof resp->extra_headers);
		resp->status = 0;
		x->reason = AR_SCOPE;
		rc = gl_resp_error(resp, GL_EPERM, NULL, "%s does not support owner-scoped tokens", x->route->path);
	}
	return rc;
}

/* A statement that ran past the pool's statement_timeout (not one the
 * stop cancelled: that is the stop's 503). */
static int timed_out(int rc)
{
	return (rc == -GL_EDB || rc == GL_EDB) && !strcmp(gl_db_last_sqlstate(), "57014") &&
	       !gl_dbcancel_requested(GL_DBCANCEL_REQUESTS);
}

static void error_answer(struct req_ctx *x, int rc)
{
	struct gl_server *s = x->s;
	struct gl_resp *resp = &x->resp;
	resp_drop_stream(resp);
	if (timed_out(rc)) {
		gl_resp_error(resp, GL_EDB, NULL,
			      "a statement of this request ran longer than server.statement_timeout_s (%lld s); ask for a "
			      "shorter window, a coarser step or fewer dimensions",
			      (long long)(t_stmt_ms / 1000));
		resp->status = 503;
		resp->err_code = "statement_timeout";
		pthread_mutex_lock(&s->mu);
		s->stmt_timeouts++;
		pthread_mutex_unlock(&s->mu);
		gl_log(GL_LOG_WARN, "http: %s %s: statement_timeout (%lld ms) reached", x->req.method, x->req.path,
		       (long long)t_stmt_ms);
		error_body(resp);
		return;
	}
	if (!resp->status)
		resp->status = status_for(rc);
	if (!resp->err_code)
		gl_resp_error(resp, rc, NULL, "%s", gl_strerror(rc));
	/* the clusters of a shard that is down are no secret of the database */
	if (resp->status >= 500 && strcmp(resp->err_code, "busy") != 0 && strcmp(resp->err_code, "shard_unavailable") != 0) {
		unsigned long ref = gl_server_error_ref(s, resp->status, x->req.now_s, x->req.method, x->req.path,
							resp->err_msg);
		snprintf(resp->err_msg, sizeof resp->err_msg, "%s (ref %lu; the server log has the detail)",
			 resp->status == 503 ? "the database is unavailable; retry later" : "internal error", ref);
	}
	error_body(resp);
}

/* The worker's last step: the answer, its metrics and audit row; then the
 * connection goes back to its I/O thread, which sends it. */
static void finish(struct req_ctx *x, int rc)
{
	struct gl_server *s = x->s;
	double secs;
	/* the database work is over; a stop from here on cancels nothing of it */
	gl_dbcancel_end(&t_db_slot);
	if (rc)
		error_answer(x, rc);
	else if (!x->resp.status)
		x->resp.status = 200;
	secs = since(&x->t0);
	record(s, x->ridx, x->resp.status, secs);
	if (x->reason < AR_N && x->reason != AR_REQUEST_RATE) {
		pthread_mutex_lock(&s->mu);
		s->auth_denied[x->reason]++;
		pthread_mutex_unlock(&s->mu);
	}
	if (x->route && x->route->fn == gl_route_healthz)
		tally(s, x->req.remote_addr, x->resp.status == 503 ? TK_HEALTHZ_UNAVAILABLE : TK_HEALTHZ_OK);
	else if (x->reason == AR_RATE_LIMITED)
		tally(s, x->req.remote_addr, TK_AUTH_BLOCKED);
	else if (!x->tallied)
		audit_request(s, &x->req, x->route, x->resp.status, x->token_id, x->reason, secs);
	x->phase = RQ_DONE;
	MHD_resume_connection(x->conn);
}

static void heavy_release(struct req_ctx *x)
{
	struct gl_server *s = x->s;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n_holds; i++)
		if (s->holds[i].n && s->holds[i].token_id == x->token_id) {
			s->holds[i].n--;
			break;
		}
	x->holds_heavy = 0;
	pthread_mutex_unlock(&s->mu);
}

/* One more heavy request of x's token, if server.heavy_per_token allows. */
static int heavy_take(struct req_ctx *x)
{
	struct gl_server *s = x->s;
	struct heavy_hold *h = NULL, *free_slot = NULL;
	int ok = 0;
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n_holds && !h; i++) {
		if (s->holds[i].n && s->holds[i].token_id == x->token_id)
			h = &s->holds[i];
		else if (!s->holds[i].n && !free_slot)
			free_slot = &s->holds[i];
	}
	if (!h && free_slot) {
		h = free_slot;
		h->token_id = x->token_id;
	}
	if (h && h->n < (size_t)s->cfg->http_heavy_per_token) {
		h->n++;
		x->holds_heavy = ok = 1;
	} else {
		s->heavy_refused_token++;
	}
	pthread_mutex_unlock(&s->mu);
	return ok;
}

static void run_heavy(void *arg);
static void drop_heavy(void *arg);

/* To the heavy pool: 0 when handed over (the heavy worker answers), else
 * the refusal in x->resp. */
static int to_heavy(struct req_ctx *x)
{
	struct gl_server *s = x->s;
	struct gl_resp *resp = &x->resp;
	if (!heavy_take(x)) {
		x->reason = AR_HEAVY_TOKEN;
		gl_apijson_add_header(resp, "Retry-After", HEAVY_RETRY_S);
		return gl_resp_error(resp, GL_EBUSY, NULL,
				     "this token has %lld heavy requests running or waiting already "
				     "(server.heavy_per_token); retry when one has been answered",
				     (long long)s->cfg->http_heavy_per_token);
	}
	/* the token lookup's slot, if any: the heavy worker opens its own */
	gl_dbcancel_end(&t_db_slot);
	if (gl_reqpool_submit(s->heavy_pool, run_heavy, drop_heavy, x) == 0)
		return 0;
	heavy_release(x);
	pthread_mutex_lock(&s->mu);
	s->heavy_refused_queue++;
	pthread_mutex_unlock(&s->mu);
	gl_apijson_add_header(resp, "Retry-After", HEAVY_RETRY_S);
	resp->status = 503;
	gl_resp_error(resp, GL_EBUSY, NULL, "%lld heavy requests are waiting already (server.heavy_queue); retry later",
		      (long long)s->cfg->http_heavy_queue);
	resp->err_code = "busy";
	return -GL_EBUSY;
}

static void run_request(void *arg)
{
	struct req_ctx *x = arg;
	struct gl_server *s = x->s;
	int rc = prepare(x);
	if (!rc && gl_reqclass_heavy(x->route->cls, gl_req_param(&x->req, "window"), gl_req_param(&x->req, "step"),
				     x->req.now_s, s->cfg->http_heavy_window_days, s->cfg->http_heavy_steps)) {
		if ((rc = to_heavy(x)) == 0)
			return;
	}
	if (!rc)
		rc = handle(x);
	finish(x, rc);
}

static void run_heavy(void *arg)
{
	struct req_ctx *x = arg;
	struct gl_server *s = x->s;
	int rc;
	pthread_mutex_lock(&s->mu);
	s->heavy_run++;
	pthread_mutex_unlock(&s->mu);
	rc = handle(x);
	heavy_release(x);
	finish(x, rc);
}

/* A queued request the stop (or a full queue) leaves unrun: 503 at once. */
static void drop_request(void *arg)
{
	struct req_ctx *x = arg;
	gl_apijson_add_header(&x->resp, "Retry-After", BUSY_RETRY_S);
	x->resp.status = 503;
	gl_resp_error(&x->resp, GL_EBUSY, NULL, "the server is stopping or too busy; retry later");
	x->resp.err_code = "busy";
	x->tallied = 1;
	tally(x->s, x->req.remote_addr, TK_STOPPING);
	finish(x, -GL_EBUSY);
}

static void drop_heavy(void *arg)
{
	struct req_ctx *x = arg;
	heavy_release(x);
	drop_request(x);
}

/* A worker's session opened when its thread starts, not by its first
 * request: on a central of shards its first request paid its connections
 * to every shard (postgres_fdw's and dblink's, each a new backend there
 * with its authentication: 160-320 ms of a first month by team at 300,000
 * jobs, load average 8) and the generic plans of its costliest statements
 * (30-60 ms more; docs/scale.md). A failure is left to the first request,
 * which opens the session as it always did and answers the error. */
static void warm_session(struct gl_server *s)
{
	struct gl_store *c = NULL;
	struct gl_err err = {0};
	int64_t built_s = -1;
	int fresh = 0, rc;
	if (!(rc = gl_store_thread(s->conn_key, s->dsn, t_stmt_ms, &c, &fresh, &err)) &&
	    !(rc = fleet_route(s, c, fresh, &err)) && t_fleet == 2 && !(rc = gl_shard_warm(c, &built_s, &err)) &&
	    !(rc = gl_txn_read_begin(c, &err))) {
		/* in a read transaction, as a request reads: what a request
		 * asks every shard first is then prepared there too (sql/140) */
		rc = gl_route_chargeback_warm(c, s->cfg, built_s, wall_s(), &err);
		gl_txn_read_end(c);
	}
	if (rc)
		gl_log(GL_LOG_INFO, "http: opening a worker's session at start: %s (its first request opens it)", err.msg);
}

static void pool_init_main(void *cls)
{
	struct gl_server *s = cls;
	t_stmt_ms = s->cfg->http_statement_timeout_s * 1000;
	warm_session(s);
	atomic_fetch_sub(&s->warming, 1);
}

int gl_server_warming(struct gl_server *s)
{
	return atomic_load(&s->warming) > 0 && mono_ms() < s->warm_bound_ms;
}

static void pool_init_probe(void *cls)
{
	(void)cls;
	t_stmt_ms = PROBE_STATEMENT_MS;
}

static void kill_conn(void *cls, int fd, enum gl_connguard_kill why)
{
	(void)cls;
	(void)why;
	/* libmicrohttpd then reads EOF and closes the connection itself; the
	 * descriptor stays its own (closed after the close callback, which
	 * waits for the guard's lock this runs under) */
	shutdown(fd, SHUT_RDWR);
}

/* One WARN line per REFUSAL_LOG_S with the refusals' counts in it (each
 * refused connection used to log a line of its own). */
static void log_refusals(struct gl_server *s, uint64_t *last)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	uint64_t total = 0, suppressed;
	for (size_t k = 0; k < TK_REFUSALS; k++) {
		uint64_t n = gl_tally_total(s->tally, k);
		if (n > last[k]) {
			gl_strbuf_printf(&b, "%s%llu %s", total ? ", " : "", (unsigned long long)(n - last[k]),
					 tally_kinds[k].name);
			total += n - last[k];
		}
		last[k] = n;
	}
	if (total)
		gl_log(GL_LOG_WARN, "http: refused %llu connections or requests in the last %d s: %s (gpuledger_http_refused_total)",
		       (unsigned long long)total, REFUSAL_LOG_S, gl_strbuf_cstr(&b));
	gl_strbuf_fini(&b);
	pthread_mutex_lock(&s->mhd_log_mu);
	suppressed = s->mhd_log_suppressed;
	s->mhd_log_suppressed = 0;
	pthread_mutex_unlock(&s->mhd_log_mu);
	if (suppressed)
		gl_log(GL_LOG_WARN, "http: %llu more libmicrohttpd messages not logged (at most %d per %d s)",
		       (unsigned long long)suppressed, MHD_LOG_LINES, REFUSAL_LOG_S);
}

/* Waits ms or until the stop; 1 when stopping. */
static int hk_wait(struct gl_server *s, int64_t ms)
{
	struct timespec until;
	int stop;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(ms / 1000);
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->hk_mu);
	if (!s->hk_stop)
		pthread_cond_timedwait(&s->hk_cv, &s->hk_mu, &until);
	stop = s->hk_stop;
	pthread_mutex_unlock(&s->hk_mu);
	return stop;
}

/* The deadlines (server.header_timeout_s, body_timeout_s) and the
 * refusals' log line. */
static void *sweeper_main(void *arg)
{
	struct gl_server *s = arg;
	uint64_t last[TK_REFUSALS] = {0};
	int64_t next_log = mono_ms() + REFUSAL_LOG_S * 1000;
	while (!hk_wait(s, SWEEP_MS)) {
		int64_t now = mono_ms();
		gl_connguard_sweep(s->guard, now, socket_rx, kill_conn, s);
		if (now >= next_log) {
			log_refusals(s, last);
			next_log = now + REFUSAL_LOG_S * 1000;
		}
	}
	log_refusals(s, last);
	return NULL;
}

/* The aggregated audit rows of each minute once it is over. Apart from the
 * sweeper: the audit queue may make a row wait (docs/security.md), and the
 * deadlines must not. */
static void *flusher_main(void *arg)
{
	struct gl_server *s = arg;
	while (!hk_wait(s, 1000))
		gl_tally_flush(s->tally, wall_s(), 0, tally_emit, s);
	return NULL;
}

static void start_parts(struct gl_server *s)
{
	const struct gl_config *cfg = s->cfg;
	struct gl_connguard_cfg gc = {
		.max_total = (size_t)cfg->http_max_conns,
		.per_addr = (size_t)cfg->http_max_conns_per_ip,
		.free_below = (size_t)cfg->http_max_conns / 4,
		.reserved = (size_t)cfg->http_reserved_conns,
		.header_ms = cfg->http_header_timeout_s * 1000,
		.body_ms = cfg->http_body_timeout_s * 1000,
	};
	s->guard = gl_connguard_new(&gc);
	s->tally = gl_tally_new(tally_kinds, TK_N, TALLY_ADDRS);
	s->rl = gl_auth_ratelimit_new(AUTH_LIMITER_SLOTS, AUTH_MAX_FAILURES, AUTH_WINDOW_S, AUTH_BLOCK_S);
	s->tokens = gl_auth_cache_new(AUTH_CACHE_SLOTS, AUTH_CACHE_TTL_S);
	s->reqrl = gl_auth_reqlimit_new(REQ_LIMITER_SLOTS, (double)cfg->http_rate_per_ip, (double)cfg->http_rate_burst);
	/* every token with a heavy request counted is in a main worker
	 * handing it over, or in the heavy pool */
	s->n_holds = (size_t)(cfg->http_workers + cfg->http_heavy_workers + cfg->http_heavy_queue);
	s->holds = gl_xcalloc(s->n_holds, sizeof *s->holds);
	/* the workers route their sessions at start: the prober first */
	s->fleet = gl_fleetstate_new(s->dsn, cfg->http_statement_timeout_s * 1000, FLEET_PROBE_S);
	s->warm_bound_ms = mono_ms() + WARM_BOUND_S * 1000;
	atomic_store(&s->warming, (int)(cfg->http_workers + cfg->http_heavy_workers));
	/* a connection has one request at a time: the main queue needs no
	 * other bound than the connections' */
	s->main_pool = gl_reqpool_new("main", (size_t)cfg->http_workers, (size_t)cfg->http_max_conns, pool_init_main, s);
	s->heavy_pool = gl_reqpool_new("heavy", (size_t)cfg->http_heavy_workers, (size_t)cfg->http_heavy_queue,
				       pool_init_main, s);
	s->probe_pool = gl_reqpool_new("probe", 1, PROBE_QUEUE, pool_init_probe, s);
	pthread_mutex_init(&s->hk_mu, NULL);
	pthread_cond_init(&s->hk_cv, NULL);
	pthread_mutex_init(&s->mhd_log_mu, NULL);
	s->have_sweeper = pthread_create(&s->sweeper, NULL, sweeper_main, s) == 0;
	s->have_flusher = pthread_create(&s->flusher, NULL, flusher_main, s) == 0;
	if (!s->have_sweeper || !s->have_flusher) {
		gl_log(GL_LOG_ERROR, "http: cannot start the server's housekeeping threads");
		abort();
	}
}

static struct MHD_Daemon *start_mhd(struct gl_server *s, const struct sockaddr_storage *ss)
{
	const struct gl_config *cfg = s->cfg;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
	if (ss->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* The guard sets the limits (on_accept): libmicrohttpd's own limit is
	 * only a backstop, per I/O thread (it divides it among them, and one
	 * thread may accept most connections), so it never refuses first. The
	 * logger first, or MHD reports option errors on its own stderr. */
	return MHD_start_daemon(flags, 0, on_accept, s, on_request, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
				MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->http_conn_timeout_s,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)((cfg->http_max_conns + 64) * cfg->http_threads),
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_END);
}

static int load_web(struct gl_server *s, struct gl_err *err)
{
	struct gl_err werr = {0};
	int wrc;
	if (!s->cfg->web_dir || !s->cfg->web_dir[0])
		return 0;
	wrc = gl_static_load(s->cfg->web_dir, &s->web, &werr);
	if (wrc == -GL_ENOTFOUND) { /* an API-only install: not an error */
		gl_log(GL_LOG_INFO, "http: no dashboard (%s)", werr.msg);
		return 0;
	}
	if (wrc)
		return gl_err_set(err, GL_ECONFIG, "%s", werr.msg);
	gl_log(GL_LOG_INFO, "http: dashboard: %zu files from %s", gl_static_count(s->web), s->cfg->web_dir);
	return 0;
}

int gl_server_start(const struct gl_config *cfg, const struct gl_server_opts *opts, struct gl_server **out,
		    struct gl_err *err)
{
	struct gl_server *s = gl_xcalloc(1, sizeof *s);
	struct sockaddr_storage ss;
	socklen_t sl;
	const char *listen_at = opts && opts->listen ? opts->listen : cfg->listen;
	int rc;

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
		if ((rc = gl_store_dsn_check(cfg->db_read_dsn, err))) {
			gl_err_prefix(err, "%s: database.read_dsn: ", cfg->path);
			goto out;
		}
		snprintf(s->read_dsn, sizeof s->read_dsn, "%s", cfg->db_read_dsn);
	}
	if ((rc = gl_config_parse_listen(listen_at, &ss, &sl, err)))
		goto out;
	if ((rc = gl_audit_writer_start(s->dsn, AUDIT_QUEUE, AUDIT_BLOCK_MS, &s->audit, err)))
		goto out;
	if ((rc = load_web(s, err)))
		goto out;
	start_parts(s);
	if (!(s->d = start_mhd(s, &ss))) {
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

static void stop_housekeeping(struct gl_server *s)
{
	if (!s->have_sweeper && !s->have_flusher)
		return;
	pthread_mutex_lock(&s->hk_mu);
	s->hk_stop = 1;
	pthread_cond_broadcast(&s->hk_cv);
	pthread_mutex_unlock(&s->hk_mu);
	if (s->have_sweeper)
		pthread_join(s->sweeper, NULL);
	if (s->have_flusher)
		pthread_join(s->flusher, NULL);
	s->have_sweeper = s->have_flusher = 0;
}

void gl_server_stop(struct gl_server *s)
{
	if (!s)
		return;
	/* Requests that come from now on get 503 at once. Each pool answers
	 * its waiting requests 503 and waits for its running ones, whose
	 * statements are cancelled (a statement waiting on a lock would hold
	 * the stop as long as the lock); their 503s MHD no longer sends once it
	 * stops: the client sees its connection closed (docs/ingest.md,
	 * "Stopping"). The main pool first: its workers may still hand a
	 * request to the heavy pool. Every suspended connection is resumed
	 * before MHD stops, which it requires. */
	s->stopping = 1;
	gl_dbcancel_request(GL_DBCANCEL_REQUESTS);
	gl_reqpool_stop(s->main_pool);
	gl_reqpool_stop(s->heavy_pool);
	gl_reqpool_stop(s->probe_pool);
	if (s->d)
		MHD_stop_daemon(s->d);
	stop_housekeeping(s);
	gl_fleetstate_free(s->fleet);
	/* the last partial minute's refusals too, before the writer drains:
	 * no request can add to them any more */
	if (s->tally)
		gl_tally_flush(s->tally, wall_s(), 1, tally_emit, s);
	gl_audit_writer_stop(s->audit);
	gl_reqpool_free(s->main_pool);
	gl_reqpool_free(s->heavy_pool);
	gl_reqpool_free(s->probe_pool);
	gl_connguard_free(s->guard);
	gl_tally_free(s->tally);
	free(s->holds);
	gl_auth_ratelimit_free(s->rl);
	gl_auth_reqlimit_free(s->reqrl);
	gl_auth_cache_free(s->tokens);
	gl_static_free(s->web);
	pthread_key_delete(s->conn_key);
	pthread_key_delete(s->read_conn_key);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Connections, pools and refusals (docs/security.md, "Connections and
 * heavy requests"). */
static void server_load_metrics(struct gl_server *s, struct gl_strbuf *o)
{
	static const char *const pools[] = {"main", "heavy", "probe"};
	struct gl_reqpool *const p[] = {s->main_pool, s->heavy_pool, s->probe_pool};
	size_t reserved, open = gl_connguard_count(s->guard, &reserved);
	gl_strbuf_printf(o,
			 "# HELP gpuledger_http_connections Open connections, and of them in the reserved share.\n"
			 "# TYPE gpuledger_http_connections gauge\n"
			 "gpuledger_http_connections{share=\"all\"} %zu\ngpuledger_http_connections{share=\"reserved\"} %zu\n"
			 "# HELP gpuledger_http_refused_total Connections and requests refused before any handler, by reason (audited per address and minute, action http.refused).\n"
			 "# TYPE gpuledger_http_refused_total counter\n",
			 open, reserved);
	for (size_t k = 0; k < TK_REFUSALS; k++)
		gl_strbuf_printf(o, "gpuledger_http_refused_total{reason=\"%s\"} %llu\n", tally_kinds[k].name,
				 (unsigned long long)gl_tally_total(s->tally, k));
	gl_strbuf_puts(o, "# HELP gpuledger_http_pool_requests Requests waiting for and running in each pool.\n"
			  "# TYPE gpuledger_http_pool_requests gauge\n");
	for (size_t i = 0; i < GL_ARRAY_LEN(pools); i++) {
		size_t waiting, running;
		gl_reqpool_load(p[i], &waiting, &running);
		gl_strbuf_printf(o, "gpuledger_http_pool_requests{pool=\"%s\",state=\"waiting\"} %zu\n", pools[i], waiting);
		gl_strbuf_printf(o, "gpuledger_http_pool_requests{pool=\"%s\",state=\"running\"} %zu\n", pools[i], running);
	}
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
	gl_strbuf_printf(o,
			 "# HELP gpuledger_http_heavy_requests_total Heavy requests run, and refused by server.heavy_per_token or server.heavy_queue.\n"
			 "# TYPE gpuledger_http_heavy_requests_total counter\n"
			 "gpuledger_http_heavy_requests_total{outcome=\"run\"} %llu\n"
			 "gpuledger_http_heavy_requests_total{outcome=\"token_limit\"} %llu\n"
			 "gpuledger_http_heavy_requests_total{outcome=\"queue_full\"} %llu\n"
			 "# HELP gpuledger_http_statement_timeouts_total Requests answered 503 for server.statement_timeout_s.\n"
			 "# TYPE gpuledger_http_statement_timeouts_total counter\n"
			 "gpuledger_http_statement_timeouts_total %llu\n",
			 (unsigned long long)s->heavy_run, (unsigned long long)s->heavy_refused_token,
			 (unsigned long long)s->heavy_refused_queue, (unsigned long long)s->stmt_timeouts);
	pthread_mutex_unlock(&s->mu);
	server_load_metrics(s, o);
	if (s->audit)
		gl_audit_writer_metrics(s->audit, o);
}
