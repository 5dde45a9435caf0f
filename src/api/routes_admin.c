/* Admin endpoints: the audit log, its verification, the token list.
 * No handler here ever sees or prints a token or its hash. */
#include "gl/apijson.h"
#include "gl/audit.h"
#include "gl/auditread.h"
#include "gl/cost.h"
#include "gl/csv.h"
#include "gl/routes.h"
#include "gl/store.h"
#include "gl/timeutil.h"
#include "gl/tokens.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* window= (include/gl/window.h) as two timestamptz texts for the query
 * (the end may be "infinity") and as parsed in *w, which is what a response
 * shows; *have 0 when absent. */
static int window_param(struct gl_req *req, struct gl_resp *resp, char *from, char *to, size_t n, int *have,
			struct gl_window *wout)
{
	struct gl_window w;
	int rc;
	*have = 0;
	if (!gl_req_param(req, "window"))
		return 0;
	if ((rc = gl_apijson_window(req, resp, NULL, &w)))
		return rc;
	*wout = w;
	gl_timeutil_format(w.start_s, from, n);
	/* a window ending now ("7d", "today") takes the rows of the current
	 * second too: windows end at whole seconds, the log does not */
	snprintf(to, n, "%s", "infinity");
	if (w.end_s < req->now_s)
		gl_timeutil_format(w.end_s, to, n);
	*have = 1;
	return 0;
}

/* The same page as CSV, for filing; the chain columns let a reader
 * re-check each row against its neighbours. */
static void audit_csv(struct gl_resp *resp, const struct gl_auditread_page *pg)
{
	struct gl_strbuf *o = &resp->body;
	gl_apijson_csv_header(o, (const char *const[]){"seq", "at", "actor", "source_addr", "action", "object",
							"outcome", "detail", "prev_hash", "hash", NULL});
	for (size_t i = 0; i < pg->n; i++) {
		const struct gl_auditread_row *r = &pg->rows[i];
		const char *text[] = {r->actor, r->source_addr, r->action, r->object, r->outcome, r->detail};
		gl_apijson_csv_int(o, r->seq, 0);
		gl_apijson_csv_time(o, r->at_s);
		for (size_t k = 0; k < GL_ARRAY_LEN(text); k++)
			gl_csv_field(o, text[k] ? text[k] : "");
		gl_csv_raw(o, r->prev_hash);
		gl_csv_raw(o, r->hash);
		gl_csv_end(o);
	}
	gl_apijson_set_csv(resp, GL_APIJSON_ATTACHMENT("audit.csv"));
}

static cJSON *audit_json(const struct gl_auditread_page *pg)
{
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "entries");
	for (size_t i = 0; i < pg->n; i++) {
		const struct gl_auditread_row *r = &pg->rows[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "seq", (double)r->seq);
		gl_apijson_add_time(o, "at", r->at_s);
		cJSON_AddStringToObject(o, "actor", r->actor);
		gl_apijson_add_str(o, "source_addr", r->source_addr);
		cJSON_AddStringToObject(o, "action", r->action);
		gl_apijson_add_str(o, "object", r->object);
		cJSON_AddStringToObject(o, "outcome", r->outcome);
		cJSON_AddItemToObject(o, "detail", cJSON_Parse(r->detail));
		cJSON_AddStringToObject(o, "prev_hash", r->prev_hash);
		cJSON_AddStringToObject(o, "hash", r->hash);
		cJSON_AddItemToArray(arr, o);
	}
	if (pg->more)
		cJSON_AddNumberToObject(root, "next_cursor", (double)pg->rows[pg->n - 1].seq);
	else
		cJSON_AddNullToObject(root, "next_cursor");
	return root;
}

int gl_route_audit(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_err err = {0};
	struct gl_auditread_query q = {0};
	struct gl_auditread_page pg = {0};
	char from_b[32], to_b[32];
	long long limit, cursor;
	struct gl_store *st;
	int rc, have_w, csv;

	/* the server has already refused parameters outside the route's list */
	if ((rc = gl_apijson_format(req, resp, &csv)) ||
	    (rc = window_param(req, resp, from_b, to_b, sizeof from_b, &have_w, &(struct gl_window){0, 0})) ||
	    (rc = gl_apijson_int_param(req, resp, "limit", 100, 1, 1000, &limit)) ||
	    (rc = gl_apijson_int_param(req, resp, "cursor", 0, 1, INT64_MAX, &cursor)))
		return rc;
	q.outcome = gl_req_param(req, "outcome");
	/* the three outcomes audit rows carry (docs/openapi.yaml): any other
	 * value would only ever match nothing */
	if (q.outcome && strcmp(q.outcome, "ok") && strcmp(q.outcome, "denied") && strcmp(q.outcome, "error"))
		return gl_resp_error(resp, GL_EINVAL, "outcome", "outcome: '%s' is not ok, denied or error", q.outcome);
	q.from = have_w ? from_b : NULL;
	q.to = have_w ? to_b : NULL;
	q.action = gl_req_param(req, "action");
	q.actor = gl_req_param(req, "actor");
	q.cursor = cursor;
	q.limit = limit;
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_auditread_page(st, &q, &pg, &err))) {
		gl_auditread_fini(&pg);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	if (csv) {
		audit_csv(resp, &pg);
		/* the JSON's next_cursor, which a CSV body has no place for */
		if (pg.more) {
			snprintf(resp->header_buf, sizeof resp->header_buf, "%lld", (long long)pg.rows[pg.n - 1].seq);
			gl_apijson_add_header(resp, "X-Next-Cursor", resp->header_buf);
		}
	} else {
		cJSON *root = audit_json(&pg);
		gl_apijson_put(resp, root);
		cJSON_Delete(root);
	}
	gl_auditread_fini(&pg);
	return 0;
}

/* The anchors the daemon wrote (audit.anchor_file), for the verification:
 * none when no file is configured or the daemon has written none yet; why
 * gets the reason when the file exists but cannot be read. */
static void daemon_anchors(const struct gl_config *cfg, struct gl_audit_anchor **a, size_t *n, char *why, size_t nwhy)
{
	struct gl_err e = {0};
	*a = NULL;
	*n = 0;
	*why = '\0';
	if (!cfg->audit_anchor_file[0] || access(cfg->audit_anchor_file, F_OK) != 0)
		return;
	if (gl_audit_anchors_read(cfg->audit_anchor_file, a, n, &e))
		snprintf(why, nwhy, "%s", e.msg);
}

int gl_route_audit_verify(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_audit_anchor *anchors = NULL;
	size_t na = 0;
	char anchor_err[300];
	struct gl_audit_verify v;
	struct gl_window win = {0, 0};
	struct gl_err err = {0};
	char hx[2 * GL_AUDIT_HASH_LEN + 1], from_b[32], to_b[32];
	int64_t lo = 0, hi = INT64_MAX;
	struct gl_store *st;
	cJSON *root;
	int rc, have_w;

	if ((rc = window_param(req, resp, from_b, to_b, sizeof from_b, &have_w, &win)))
		return rc;
	if ((rc = gl_req_store(req, &st, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	/* the window's rows by time, then verified by sequence number */
	if (have_w && (rc = gl_auditread_seq_range(st, from_b, to_b, &lo, &hi, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	daemon_anchors(req->cfg, &anchors, &na, anchor_err, sizeof anchor_err);
	if (hi < lo) {
		/* nothing in the window */
		memset(&v, 0, sizeof v);
		v.ok = 1;
	} else if ((rc = gl_audit_verify_range(st, lo, hi, anchors, na, &v, &err))) {
		free(anchors);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	free(anchors);
	root = cJSON_CreateObject();
	/* an anchor file that cannot be read vouches for nothing */
	cJSON_AddBoolToObject(root, "ok", v.ok && !anchor_err[0]);
	cJSON_AddNumberToObject(root, "anchors_checked", (double)v.anchors_checked);
	if (anchor_err[0])
		cJSON_AddStringToObject(root, "anchor_error", anchor_err);
	cJSON_AddNumberToObject(root, "rows", (double)v.rows);
	cJSON_AddNumberToObject(root, "first_seq", (double)v.first_seq);
	cJSON_AddNumberToObject(root, "last_seq", (double)v.last_seq);
	if (have_w)
		gl_apijson_add_window(root, "window", &win); /* RFC 3339 both ends, as everywhere */
	if (v.rows) {
		gl_audit_hex(v.head, hx);
		cJSON_AddStringToObject(root, "head_hash", hx);
	}
	if (!v.ok) {
		cJSON_AddNumberToObject(root, "bad_seq", (double)v.bad_seq);
		cJSON_AddStringToObject(root, "reason", v.reason);
	}
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	return 0;
}

/* "scope": {"team": ["vision"], ...} ({} unscoped), and "owners": the same
 * as "team=vision" strings, one list for a client to show. */
static void add_scope(cJSON *o, const struct gl_tokens_scope *sc, size_t n)
{
	cJSON *obj = cJSON_AddObjectToObject(o, "scope"), *ow = cJSON_AddArrayToObject(o, "owners");
	for (size_t d = 0; gl_tokens_scope_dims[d]; d++) {
		const char *vals[GL_TOKENS_MAX_OWNERS];
		size_t k = gl_tokens_scope_values(sc, n, gl_tokens_scope_dims[d], vals);
		if (k)
			cJSON_AddItemToObject(obj, gl_tokens_scope_dims[d], cJSON_CreateStringArray(vals, (int)k));
	}
	for (size_t i = 0; i < n; i++) {
		char buf[16 + GL_TOKENS_OWNER_MAX];
		snprintf(buf, sizeof buf, "%s=%s", sc[i].dim, sc[i].value);
		cJSON_AddItemToArray(ow, cJSON_CreateString(buf));
	}
}

int gl_route_tokens(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_tokens_info *t = NULL;
	struct gl_err err = {0};
	size_t n = 0;
	struct gl_store *st;
	cJSON *root, *arr;
	int rc;

	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_tokens_list(st, &t, &n, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	root = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(root, "tokens");
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)t[i].id);
		cJSON_AddStringToObject(o, "name", t[i].name);
		cJSON_AddStringToObject(o, "role", t[i].role);
		add_scope(o, t[i].scope, t[i].n_scope);
		gl_apijson_add_time(o, "created", t[i].created_s);
		gl_apijson_add_time(o, "expires", t[i].expires_s);
		gl_apijson_add_time(o, "revoked", t[i].revoked_s);
		gl_apijson_add_time(o, "last_used", t[i].last_used_s);
		cJSON_AddItemToArray(arr, o);
	}
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	free(t);
	return 0;
}

/* What the caller's token may do: the dashboard shows only the views its
 * role and scope reach instead of probing routes for 403s. */
int gl_route_whoami(struct gl_req *req, struct gl_resp *resp)
{
	const struct gl_server_auth *a = req->auth;
	cJSON *root = cJSON_CreateObject();
	size_t n;
	/* answering with the scope is this route's owner filter */
	const struct gl_tokens_scope *sc = gl_req_scope(req, &n);

	cJSON_AddNumberToObject(root, "token_id", (double)a->token_id);
	cJSON_AddStringToObject(root, "name", a->token_name);
	cJSON_AddStringToObject(root, "role", a->role);
	/* the dashboard's money is in it (views whose answers do not say) */
	cJSON_AddStringToObject(root, "currency", req->cfg->currency);
	/* ISO 4217's, as the API writes money: the browser's Intl has CLDR's
	 * display digits, which differ for some (HUF, IDR: 0 there, 2 here) */
	cJSON_AddNumberToObject(root, "currency_minor_units", gl_cost_minor(req->cfg->currency));
	add_scope(root, sc, n);
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	return 0;
}
