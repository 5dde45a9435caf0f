/* gpuledger — HTTP API server (libmicrohttpd): router, JSON errors, metrics.
 *
 * Ownership: gl_server_start() returns a server the caller stops and frees
 * with gl_server_stop(). The config is borrowed and must outlive the server.
 * Handlers fill a struct gl_resp whose body buffer the server owns and frees.
 */
#ifndef GL_SERVER_H
#define GL_SERVER_H

#include "gl/common.h"
#include "gl/config.h"
#include "gl/reqclass.h"
#include "gl/strbuf.h"
#include "gl/tokens.h"

#include <stdint.h>

struct gl_server;

/* Who is calling: filled by the server before the handler runs (NULL on
 * "public" routes). Handlers read it; they never see the token itself. */
struct gl_server_auth {
	int64_t token_id;
	char token_name[GL_TOKENS_NAME_MAX];
	char role[16];
	size_t n_scope;                  /* 0: not scoped, every owner */
	struct gl_tokens_scope scope[GL_TOKENS_MAX_OWNERS];
};

struct gl_req {
	const char *method;
	const char *path;
	const char *remote_addr;
	const char *body;
	size_t body_len;
	const struct gl_config *cfg;
	struct gl_server *srv;
	void *mhd_conn;           /* struct MHD_Connection*, for query lookups */
	int64_t now_s;            /* request time: handlers never read the clock themselves */
	const struct gl_server_auth *auth; /* NULL on public routes */
	int scope_applied;        /* set by the owner-scope helpers below */
	const struct gl_server_route *route; /* set just before the handler runs */
	/* Where gl_req_store got the data of a route that may read from a
	 * standby (database.read_dsn; docs/scale.md, "Read replicas"): set by
	 * its first call, which the later ones of the request follow. */
	struct {
		int set;
		int standby;          /* answered by a hot standby */
		double lag_s;         /* its replay lag (0 on the primary) */
		double data_through_s; /* every commit up to this time is in the answer */
		char fallback[160];   /* why the primary answered instead ("" = it did not) */
	} read;
};

/* A body made piece by piece while it is sent, for answers too large to
 * hold whole (gl_resp_stream). next appends the next piece (best about
 * GL_RESP_CHUNK bytes or more) to out and returns 1 while more follows,
 * 0 with the last piece; fini frees state (also when the client went away
 * before the end). The server calls both on its I/O threads after the
 * handler has returned: next must not block nor touch the database (state
 * holds everything) and must not fail. */
#define GL_RESP_CHUNK (64 * 1024)
struct gl_resp_stream {
	int (*next)(void *state, struct gl_strbuf *out);
	void (*fini)(void *state);
	void *state;
};

struct gl_resp {
	int status;               /* 0 = derive from the handler's return code */
	const char *content_type; /* static string */
	struct gl_strbuf body;
	struct gl_resp_stream stream; /* next != NULL: the body is made by it, not taken from body */
	const char *extra_headers[12][2];
	char header_buf[64];      /* room for one header value made per request (e.g. a cursor) */
	char header_num[4][24];   /* numbers sent as header values (gl_apijson_add_header_num) */
	char header_text[640];    /* one longer header value made per request (X-Data-Through) */
	/* error details, set with gl_resp_error() */
	const char *err_code;
	char err_param[64];
	char err_msg[400];
};

/* Query parameter or NULL. */
const char *gl_req_param(const struct gl_req *req, const char *name);
/* The calling thread's database session as a store handle (what handlers
 * pass to src/store/: they never name libpq) (opened lazily, reconnected
 * when broken). On a route flagged replica_ok, with database.read_dsn
 * set, a connection to the read DSN when the server there is a primary or
 * a standby no further behind than database.max_replica_lag_s; else (too
 * far behind, unreachable) the primary's, and req->read says why. The
 * server adds where the answer came from to the response (headers, and a
 * "freshness" object in a JSON object body). */
struct gl_store;
int gl_req_store(struct gl_req *req, struct gl_store **st, struct gl_err *err) GL_MUSTCHECK;
/* On a central database of shards, what this request's session reads
 * (include/gl/shard.h: unread shards and clusters); NULL when the database
 * has no shards. Valid after gl_req_store, until the request ends. */
struct gl_shard_route;
const struct gl_shard_route *gl_req_shards(const struct gl_req *req);
/* Object-level checks for owner-scoped tokens (docs/security.md, "Owner
 * scopes"). A handler that serves a scoped token must go through one of
 * these (they mark the request) and be flagged owner_scoped in the routes
 * table. The server refuses a scoped token with 403 before calling an
 * unflagged handler; a flagged handler that never asked still gets its
 * answer replaced with 403 (a backstop: such a handler must not write).
 * gl_req_scope: the caller's scope, NULL (*n 0) when unscoped.
 * gl_req_scope_filter: narrows f (the request's filter, maybe empty) to
 * the scope, one clause per dimension it names; 0, or the answer made: 403
 * naming param when f asks for an owner outside the scope, 400 when the
 * clauses do not fit. */
const struct gl_tokens_scope *gl_req_scope(struct gl_req *req, size_t *n);
struct gl_filter;
int gl_req_scope_filter(struct gl_req *req, struct gl_resp *resp, const char *param, struct gl_filter *f) GL_MUSTCHECK;
/* 400 (param = the first unknown name) when the query string has a
 * parameter not in allowed (NULL-terminated). */
int gl_req_check_params(struct gl_req *req, struct gl_resp *resp, const char *const *allowed) GL_MUSTCHECK;
/* Queues an audit row on the server's writer (never blocks long; see
 * docs/security.md). e->at_us 0 = now. */
struct gl_audit_entry;
void gl_server_audit(struct gl_server *s, const struct gl_audit_entry *e);

/* Makes the answer's body a stream (see struct gl_resp_stream): the
 * response takes state, whatever happens next (an error the handler then
 * returns frees it at once). Headers and content type are set as usual. */
void gl_resp_set_stream(struct gl_resp *resp, int (*next)(void *state, struct gl_strbuf *out),
			void (*fini)(void *state), void *state);

/* Records an error for the response and returns -code; the server maps the
 * code to the status (GL_EINVAL 400, GL_EAUTH 401, GL_EPERM 403, GL_ENOTFOUND
 * 404, GL_ERANGE 413, GL_EBUSY 429, GL_EDB 503, else 500). */
int gl_resp_error(struct gl_resp *resp, int code, const char *param, const char *fmt, ...) GL_PRINTF(4, 5);

typedef int (*gl_server_handler_fn)(struct gl_req *req, struct gl_resp *resp);

struct gl_server_route {
	const char *method;
	const char *path;         /* exact, or a prefix when it ends with '/' */
	gl_server_handler_fn fn;
	const char *name;         /* metrics label */
	const char *role;         /* least role allowed: "public" (no token), "viewer", "finance", "admin", "hook" */
	/* Query parameters the handler reads, comma-separated ("window,step");
	 * NULL or "" = none. The server answers 400 naming the parameter for
	 * any other name, a repeated name or a malformed value before the
	 * handler runs, so a new parameter must be added here (and to
	 * docs/openapi.yaml; a test checks they agree). */
	const char *params;
	/* 1 when the handler filters by owner (gl_req_scope /
	 * gl_req_scope_filter). An owner-scoped token gets 403 on any other
	 * route before its handler runs, so a refused request never writes. */
	int owner_scoped;
	/* Where it runs (include/gl/reqclass.h; docs/security.md, "Heavy
	 * requests"): probe routes on the I/O threads or the probe worker,
	 * heavy ones in the heavy pool, windowed ones there when their window
	 * and step make them heavy, the rest in the main pool. */
	enum gl_reqclass cls;
	/* 1 when the handler only reads (through gl_req_store), so a hot
	 * standby may answer it (database.read_dsn). Audit rows still go to
	 * the primary (the audit writer's own connection). */
	int replica_ok;
};

struct gl_server_opts {
	const char *listen;       /* overrides cfg->listen when set */
	const char *port_file;    /* the bound port is written here (tests use port 0) */
};

int gl_server_start(const struct gl_config *cfg, const struct gl_server_opts *opts, struct gl_server **out,
		    struct gl_err *err) GL_MUSTCHECK;
uint16_t gl_server_port(const struct gl_server *s);
void gl_server_stop(struct gl_server *s);

/* The reference of a 5xx answer whose detail the client must not read (a
 * database message names hosts, socket paths, users): logs detail under a
 * new number (one WARN line per minute per kind — 503 apart from other
 * 5xx — and each at debug) and returns the number for the body. The
 * server does this itself for handlers that return an error; a handler
 * that writes its own 5xx body (/healthz) calls it. */
unsigned long gl_server_error_ref(struct gl_server *s, int status, int64_t now_s, const char *method, const char *url,
				  const char *detail);
/* Metrics text (Prometheus 0.0.4) of the server's own counters. */
void gl_server_metrics(struct gl_server *s, struct gl_strbuf *out);
int64_t gl_server_started_s(const struct gl_server *s);
/* 1 while the workers' database sessions are still being opened at start
 * (on a central: routed to the shards, connected to each), for a bounded
 * time: /healthz says "starting" meanwhile. */
int gl_server_warming(struct gl_server *s);

#endif
