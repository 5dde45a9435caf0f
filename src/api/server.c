/* HTTP server (see include/gl/server.h). */
#include "gl/server.h"
#include "gl/db.h"
#include "gl/log.h"
#include "gl/routes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define LAT_BUCKETS 10
static const double lat_bounds[LAT_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5};
#define MAX_ROUTES 64
#define STATUS_SLOTS 600

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
	uint16_t port;
	int64_t started_s;
	pthread_mutex_t mu;
	struct route_stats stats[MAX_ROUTES + 1]; /* last slot: unmatched */
	size_t nroutes;
	pthread_key_t conn_key;
};

/* Per-request state, freed in the completion callback. */
struct req_ctx {
	struct gl_strbuf body;
	int too_large;
	struct timespec t0;
};

static int64_t wall_s(void)
{
	return (int64_t)time(NULL);
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

static void conn_destroy(void *p)
{
	PQfinish((PGconn *)p);
}

int gl_req_db(struct gl_req *req, PGconn **out, struct gl_err *err)
{
	struct gl_server *s = req->srv;
	PGconn *c = pthread_getspecific(s->conn_key);
	int rc;

	if (c && PQstatus(c) != CONNECTION_OK) {
		PQreset(c);
		if (PQstatus(c) != CONNECTION_OK) {
			PQfinish(c);
			c = NULL;
			pthread_setspecific(s->conn_key, NULL);
		}
	}
	if (!c) {
		if ((rc = gl_db_connect_dsn(s->dsn, &c, err)))
			return rc;
		pthread_setspecific(s->conn_key, c);
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
	if (code < 0)
		code = -code;
	resp->err_code = (size_t)code < GL_ARRAY_LEN(codes) && codes[code] ? codes[code] : "internal";
	snprintf(resp->err_param, sizeof resp->err_param, "%s", param ? param : "");
	va_start(ap, fmt);
	vsnprintf(resp->err_msg, sizeof resp->err_msg, fmt, ap);
	va_end(ap);
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
	default: return 500;
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

static void record(struct gl_server *s, size_t route, int status, double secs)
{
	struct route_stats *st;
	pthread_mutex_lock(&s->mu);
	st = &s->stats[route < s->nroutes ? route : MAX_ROUTES];
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct gl_server *s = cls;
	struct req_ctx *ctx = *con_cls;
	struct gl_resp resp;
	struct gl_req req;
	const struct gl_route *route;
	size_t ridx = MAX_ROUTES;
	int mm = 0, rc;
	char addr[INET6_ADDRSTRLEN] = "";
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

	if (ctx->too_large) {
		rc = gl_resp_error(&resp, GL_ERANGE, NULL, "request body larger than %lld bytes",
				   (long long)s->cfg->http_max_body_bytes);
	} else if (!(route = match(method, url, &ridx, &mm))) {
		rc = mm ? gl_resp_error(&resp, GL_EINVAL, NULL, "method %s not allowed on %s", method, url)
			: gl_resp_error(&resp, GL_ENOTFOUND, NULL, "no such endpoint: %s", url);
		if (mm)
			resp.status = 405;
	} else {
		rc = route->fn(&req, &resp);
	}
	if (rc) {
		if (!resp.status)
			resp.status = status_for(rc);
		if (!resp.err_code)
			gl_resp_error(&resp, rc, NULL, "%s", gl_strerror(rc));
		error_body(&resp);
		if (resp.status >= 500)
			gl_log(GL_LOG_WARN, "http: %s %s -> %d: %s", method, url, resp.status, resp.err_msg);
	} else if (!resp.status) {
		resp.status = 200;
	}
	record(s, ridx, resp.status, since(&ctx->t0));
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

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len, struct gl_err *err)
{
	char host[256];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof host)
		return gl_err_set(err, GL_ECONFIG, "server.listen: '%s' is not ADDR:PORT", s);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 0 || port > 65535)
		return gl_err_set(err, GL_ECONFIG, "server.listen: bad port in '%s'", s);
	memset(ss, 0, sizeof *ss);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		host[strlen(host) - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return gl_err_set(err, GL_ECONFIG, "server.listen: bad IPv6 address in '%s'", s);
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof *a6;
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof host, "127.0.0.1");
		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return gl_err_set(err, GL_ECONFIG, "server.listen: bad IPv4 address in '%s'", s);
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof *a4;
	}
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
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	*out = NULL;
	s->cfg = cfg;
	s->started_s = wall_s();
	pthread_mutex_init(&s->mu, NULL);
	pthread_key_create(&s->conn_key, conn_destroy);
	for (s->nroutes = 0; gl_routes[s->nroutes].path; s->nroutes++)
		;
	if (s->nroutes > MAX_ROUTES) {
		rc = gl_err_set(err, GL_ECONFIG, "too many routes");
		goto out;
	}
	if ((rc = gl_db_dsn(cfg, s->dsn, sizeof s->dsn, err)))
		goto out;
	if ((rc = parse_listen(listen_at, &ss, &sl, err)))
		goto out;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->http_conn_timeout_s,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->http_max_conns,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->http_max_conns_per_ip,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
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
	if (s->d)
		MHD_stop_daemon(s->d);
	pthread_key_delete(s->conn_key);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void gl_server_metrics(struct gl_server *s, struct gl_strbuf *o)
{
	gl_strbuf_puts(o, "# HELP gpuledger_http_requests_total HTTP requests by route and status.\n"
			  "# TYPE gpuledger_http_requests_total counter\n");
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i <= s->nroutes; i++) {
		const struct route_stats *st = &s->stats[i == s->nroutes ? MAX_ROUTES : i];
		const char *name = i == s->nroutes ? "unmatched" : gl_routes[i].name;
		for (int code = 0; code < STATUS_SLOTS; code++)
			if (st->by_status[code])
				gl_strbuf_printf(o, "gpuledger_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n", name,
						 code, (unsigned long long)st->by_status[code]);
	}
	gl_strbuf_puts(o, "# HELP gpuledger_http_request_duration_seconds Request latency by route.\n"
			  "# TYPE gpuledger_http_request_duration_seconds histogram\n");
	for (size_t i = 0; i <= s->nroutes; i++) {
		const struct route_stats *st = &s->stats[i == s->nroutes ? MAX_ROUTES : i];
		const char *name = i == s->nroutes ? "unmatched" : gl_routes[i].name;
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
	pthread_mutex_unlock(&s->mu);
}
