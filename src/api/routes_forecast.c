/* /v1/forecast and /v1/capacity/forecast: the parameters as given, checked
 * for role, answered by the forecast cache (src/api/forecast_cache.c), a
 * what-if audited. */
#include "gl/apijson.h"
#include "gl/audit.h"
#include "gl/auth.h"
#include "gl/filter.h"
#include "gl/forecast_cache.h"
#include "gl/routes.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value longer than its field is refused, never cut: a cut exclude list
 * or horizon would be a different, still valid request. */
static int copy_param(struct gl_req *req, struct gl_resp *resp, const char *name, const char *def, char *out,
		      size_t n)
{
	const char *v = gl_req_param(req, name);
	if (!v)
		v = def;
	if (strlen(v) >= n)
		return gl_resp_error(resp, GL_EINVAL, name, "%s: longer than %zu bytes", name, n - 1);
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

static int req_store(void *ctx, struct gl_store **st, struct gl_err *err)
{
	return gl_req_store(ctx, st, err);
}

/* The cached answer when there is one, else computed now and cached. */
static int serve(struct gl_req *req, struct gl_resp *resp, const struct gl_forecast_cache_req *q)
{
	struct gl_err err = {0};
	const char *param = NULL;
	int rc, bad;

	rc = gl_forecast_cache_answer(q, req->cfg, req->now_s, req_store, req, &resp->body, &param, &bad, &err);
	if (rc && bad)
		return gl_resp_error(resp, GL_EINVAL, param, "%s", err.msg);
	resp->content_type = "application/json";
	if (rc) {
		gl_strbuf_reset(&resp->body);
		return gl_resp_error(resp, rc, param, "%s", err.msg[0] ? err.msg : "forecast failed");
	}
	return 0;
}

/* q->filter: the request's filter narrowed to a scoped token's scope
 * (403 naming filter for an owner outside it), in one canonical form. */
static int forecast_filter(struct gl_req *req, struct gl_resp *resp, struct gl_forecast_cache_req *q)
{
	const char *v = gl_req_param(req, "filter");
	struct gl_filter f = {0};
	struct gl_strbuf s = GL_STRBUF_INIT;
	struct gl_err e = {0};
	int rc = 0;

	if (v && *v && gl_filter_parse(v, gl_forecast_cache_filter_dims(), &f, &e))
		return gl_resp_error(resp, GL_EINVAL, "filter", "filter: %s", e.msg);
	if ((rc = gl_req_scope_filter(req, resp, "filter", &f)))
		goto out;
	gl_filter_format(&f, &s);
	if (s.len >= sizeof q->filter) {
		rc = gl_resp_error(resp, GL_EINVAL, "filter", "filter: longer than %zu bytes", sizeof q->filter - 1);
		goto out;
	}
	memcpy(q->filter, gl_strbuf_cstr(&s), s.len + 1);
out:
	gl_strbuf_fini(&s);
	gl_filter_fini(&f);
	return rc;
}

int gl_route_forecast(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_forecast_cache_req q;
	int rc;

	memset(&q, 0, sizeof q);
	q.kind = 'f';
	if (copy_param(req, resp, "metric", "gpu_hours", q.metric, sizeof q.metric) ||
	    copy_param(req, resp, "step", "day", q.step, sizeof q.step) ||
	    copy_param(req, resp, "horizon", "", q.horizon, sizeof q.horizon) ||
	    copy_param(req, resp, "level", "", q.level, sizeof q.level) ||
	    copy_param(req, resp, "exclude", "", q.exclude, sizeof q.exclude) ||
	    copy_param(req, resp, "aggregate", "team", q.aggregate, sizeof q.aggregate) ||
	    copy_param(req, resp, "window",
		       !strcmp(q.step, "hour") ? "28d" : !strcmp(q.step, "week") ? "364d" : "91d", q.window,
		       sizeof q.window))
		return -GL_EINVAL;
	/* cost is money and per-user series are per-person usage: what
	 * /v1/chargeback, /v1/jobs and /v1/idle show only to finance and up
	 * is not shown to a viewer through a forecast either */
	if (req->auth && !gl_auth_role_allows(req->auth->role, "finance")) {
		char agg[sizeof q.aggregate], *sv = NULL;
		if (!strcmp(q.metric, "cost"))
			return gl_resp_error(resp, GL_EPERM, "metric", "metric=cost needs role finance or admin");
		snprintf(agg, sizeof agg, "%s", q.aggregate);
		for (char *t = strtok_r(agg, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
			if (!strcmp(t, "user") || !strcmp(t, "account"))
				return gl_resp_error(resp, GL_EPERM, "aggregate", "aggregate=%s needs role finance or admin", t);
	}
	if ((rc = forecast_filter(req, resp, &q)))
		return rc;
	return serve(req, resp, &q);
}

/* A what-if is a read (nothing is saved), audited as one with the plan it
 * asked about: the request's own row keeps no query string. */
static void audit_whatif(struct gl_req *req, const struct gl_forecast_cache_req *q, int ok)
{
	struct gl_strbuf d = GL_STRBUF_INIT;
	char actor[48], clean[GL_AUDIT_FIELD_MAX];
	struct gl_audit_entry e;
	snprintf(actor, sizeof actor, "token:%lld", req->auth ? (long long)req->auth->token_id : 0LL);
	gl_audit_clean(q->plan, clean, sizeof clean);
	gl_strbuf_puts(&d, "{\"saved\":false,\"plan\":\"");
	gl_strbuf_put_json_str(&d, clean, strlen(clean));
	gl_strbuf_puts(&d, "\"}");
	e = (struct gl_audit_entry){0, actor, req->remote_addr, "capacity.whatif", "/v1/capacity/forecast",
				    ok ? "ok" : "error", gl_strbuf_cstr(&d)};
	gl_server_audit(req->srv, &e);
	gl_strbuf_fini(&d);
}

int gl_route_capacity_forecast(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_forecast_cache_req q;
	int rc;

	memset(&q, 0, sizeof q);
	q.kind = 'c';
	if (copy_param(req, resp, "horizon", "", q.horizon, sizeof q.horizon) ||
	    copy_param(req, resp, "step", "", q.step, sizeof q.step) ||
	    copy_param(req, resp, "cluster", "", q.aggregate, sizeof q.aggregate) ||
	    copy_param(req, resp, "risk", "", q.level, sizeof q.level) ||
	    copy_param(req, resp, "plan", "", q.plan, sizeof q.plan) ||
	    copy_param(req, resp, "window", !strcmp(q.step, "week") ? "364d" : "91d", q.window, sizeof q.window))
		return -GL_EINVAL;
	rc = serve(req, resp, &q);
	if (*q.plan)
		audit_whatif(req, &q, rc == 0);
	return rc;
}
