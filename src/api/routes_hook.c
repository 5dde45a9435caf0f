/* The idle hook over the API (role hook; admin too): candidates as the CLI's
 * --format json computes them (dry-run, nothing runs), actions recorded by
 * controllers that act elsewhere, and the list of past warnings/actions. */
#include "gl/apijson.h"
#include "gl/hook.h"
#include "gl/routes.h"
#include "gl/store.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

int gl_route_idle_candidates(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	struct gl_hook_opts o = {gl_req_param(req, "policy"), 0, 0, NULL};
	cJSON *report = NULL;
	struct gl_store *st;
	int rc, code;

	if (o.policy && !*o.policy)
		return gl_resp_error(resp, GL_EINVAL, "policy", "policy: empty");
	if ((rc = gl_req_store(req, &st, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	if ((rc = gl_hook_run(st, req->cfg, &o, req->now_s, &report, &code, &err))) {
		/* the CLI's words name its flag and the config file's path; an
		 * API client asked by parameter and has no business with paths */
		if (code == GL_HOOK_EXIT_USAGE && o.policy)
			return gl_resp_error(resp, rc, "policy", "policy: no policy named '%s'", o.policy);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	gl_apijson_put(resp, report);
	cJSON_Delete(report);
	return 0;
}

int gl_route_hook_actions(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	struct gl_window win;
	long long limit;
	cJSON *out = NULL;
	struct gl_store *st;
	int rc;

	if ((rc = gl_apijson_window(req, resp, "7d", &win)) ||
	    (rc = gl_apijson_int_param(req, resp, "limit", 500, 1, 10000, &limit)))
		return rc;
	/* a window ending now includes what happened during the current second */
	if ((rc = gl_req_store(req, &st, &err)) ||
	    (rc = gl_hook_actions_list(st, req->cfg, win.start_s, win.end_s >= req->now_s ? req->now_s + 1 : win.end_s, (long)limit,
				       &out, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	gl_apijson_add_window(out, "window", &win);
	gl_apijson_put(resp, out);
	cJSON_Delete(out);
	return 0;
}

int gl_route_hook_record(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	const char *param = NULL;
	char actor[48];
	cJSON *out = NULL;
	struct gl_store *st;
	int rc;

	snprintf(actor, sizeof actor, "token:%lld", req->auth ? (long long)req->auth->token_id : 0LL);
	if ((rc = gl_req_store(req, &st, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	if ((rc = gl_hook_record(st, req->cfg, req->body ? req->body : "", req->body_len, actor, req->now_s, &out, &param, &err)))
		return gl_resp_error(resp, rc, param, "%s", err.msg);
	resp->status = 201;
	gl_apijson_put(resp, out);
	cJSON_Delete(out);
	return 0;
}
