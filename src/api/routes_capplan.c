/* /v1/capacity/plan: the planned capacity changes (GET, viewer and up) and
 * their replacement through the API (POST, admin; audited as capacity.plan
 * in the transaction that stores it). docs/forecast.md, "Capacity planning". */
#include "gl/apijson.h"
#include "gl/capplan.h"
#include "gl/capplandb.h"
#include "gl/forecast_cache.h"
#include "gl/routes.h"
#include "gl/timeutil.h"
#include "gl/utf8.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *plan_list_json(const struct gl_capplan_change *p, size_t n, int64_t lead_days)
{
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "changes");
	cJSON_AddNumberToObject(root, "procurement_lead_days", (double)lead_days);
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		char day[32];
		gl_timeutil_format_day(p[i].day_s, day, sizeof day);
		cJSON_AddNumberToObject(o, "id", (double)p[i].id);
		cJSON_AddStringToObject(o, "cluster", p[i].cluster);
		cJSON_AddStringToObject(o, "gpu_model", p[i].gpu_model);
		cJSON_AddStringToObject(o, "action", p[i].gpus > 0 ? "add" : "retire");
		cJSON_AddNumberToObject(o, "gpus", (double)llabs(p[i].gpus));
		cJSON_AddStringToObject(o, "date", day);
		cJSON_AddStringToObject(o, "source", p[i].source);
		if (p[i].line)
			cJSON_AddNumberToObject(o, "config_line", p[i].line);
		cJSON_AddStringToObject(o, "note", p[i].note);
		cJSON_AddItemToArray(arr, o);
	}
	return root;
}

int gl_route_capacity_plan(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_capplan_change *p = NULL;
	struct gl_err err = {0};
	size_t n = 0;
	struct gl_store *st;
	cJSON *root;
	int rc;
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_capplandb_list(st, NULL, &p, &n, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	root = plan_list_json(p, n, req->cfg->procurement_lead_days);
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	free(p);
	return 0;
}

/* One change of the body into c; on error names its field in param. */
static int change_parse(const cJSON *e, size_t i, struct gl_capplan_change *c, char *param, size_t plen,
			struct gl_err *err)
{
	static const char *const fields[] = {"cluster", "gpu_model", "action", "gpus", "date", "note"};
	const cJSON *f;
	memset(c, 0, sizeof *c);
	snprintf(c->source, sizeof c->source, "api");
	snprintf(param, plen, "changes[%zu]", i);
	if (!cJSON_IsObject(e))
		return gl_err_set(err, GL_EINVAL, "changes[%zu]: expected an object", i);
	for (const cJSON *a = e->child; a; a = a->next) {
		size_t k = 0;
		while (k < GL_ARRAY_LEN(fields) && strcmp(a->string, fields[k]))
			k++;
		if (k == GL_ARRAY_LEN(fields))
			return gl_err_set(err, GL_EINVAL, "changes[%zu]: unknown field '%s' (cluster, gpu_model, action, gpus,"
					  " date, note)", i, a->string);
		for (const cJSON *b = e->child; b != a; b = b->next)
			if (!strcmp(b->string, a->string))
				return gl_err_set(err, GL_EINVAL, "changes[%zu].%s: given more than once", i, a->string);
	}
#define FIELD_STR(name, dst, required)                                                                               \
	snprintf(param, plen, "changes[%zu].%s", i, name);                                                           \
	f = cJSON_GetObjectItemCaseSensitive(e, name);                                                                \
	if ((f || required) && (!cJSON_IsString(f) || (required && !*f->valuestring) ||                               \
				strlen(f->valuestring) >= sizeof(dst)))                                               \
		return gl_err_set(err, GL_EINVAL, "changes[%zu].%s: expected a string of 1..%zu bytes", i, name,     \
				  sizeof(dst) - 1);                                                                   \
	if (f)                                                                                                        \
		memcpy(dst, f->valuestring, strlen(f->valuestring) + 1);
	FIELD_STR("cluster", c->cluster, 1)
	FIELD_STR("gpu_model", c->gpu_model, 1)
	FIELD_STR("note", c->note, 0)
#undef FIELD_STR
	snprintf(param, plen, "changes[%zu].action", i);
	f = cJSON_GetObjectItemCaseSensitive(e, "action");
	if (!cJSON_IsString(f) || (strcmp(f->valuestring, "add") && strcmp(f->valuestring, "retire")))
		return gl_err_set(err, GL_EINVAL, "changes[%zu].action: expected \"add\" or \"retire\"", i);
	snprintf(param, plen, "changes[%zu].gpus", i);
	f = cJSON_GetObjectItemCaseSensitive(e, "gpus");
	if (!cJSON_IsNumber(f) || f->valuedouble != floor(f->valuedouble) || f->valuedouble < 1 ||
	    f->valuedouble > GL_CAPPLAN_MAX_GPUS)
		return gl_err_set(err, GL_EINVAL, "changes[%zu].gpus: expected a whole number of GPUs, 1..%d (the action"
				  " says add or retire)", i, GL_CAPPLAN_MAX_GPUS);
	c->gpus = (int64_t)f->valuedouble;
	if (!strcmp(cJSON_GetObjectItemCaseSensitive(e, "action")->valuestring, "retire"))
		c->gpus = -c->gpus;
	snprintf(param, plen, "changes[%zu].date", i);
	f = cJSON_GetObjectItemCaseSensitive(e, "date");
	if (!cJSON_IsString(f) || strlen(f->valuestring) != 10 || gl_timeutil_parse(f->valuestring, 10, &c->day_s) ||
	    c->day_s % 86400)
		return gl_err_set(err, GL_EINVAL, "changes[%zu].date: expected a date YYYY-MM-DD", i);
	return 0;
}

/* The body {"changes":[...]} into *out (caller frees). */
static int body_parse(const char *body, size_t len, struct gl_capplan_change **out, size_t *n, char *param,
		      size_t plen, struct gl_err *err)
{
	const char *end = NULL;
	cJSON *in = NULL, *arr;
	int rc = 0;
	*out = NULL;
	*n = 0;
	snprintf(param, plen, "body");
	if (gl_utf8_validate(body, len, NULL))
		return gl_err_set(err, GL_EINVAL, "body: not valid UTF-8");
	in = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	while (in && (size_t)(end - body) < len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if (!cJSON_IsObject(in) || (size_t)(end - body) < len) {
		rc = gl_err_set(err, GL_EINVAL, "body: expected one JSON object {\"changes\": [...]}");
		goto out;
	}
	arr = cJSON_GetObjectItemCaseSensitive(in, "changes");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(in) != 1) {
		snprintf(param, plen, "changes");
		rc = gl_err_set(err, GL_EINVAL, "changes: expected the one field, a list (empty to clear the plan)");
		goto out;
	}
	*out = gl_xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof **out);
	for (cJSON *e = arr->child; e; e = e->next, (*n)++)
		if ((rc = change_parse(e, *n, &(*out)[*n], param, plen, err)))
			goto out;
out:
	cJSON_Delete(in);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int gl_route_capacity_plan_post(struct gl_req *req, struct gl_resp *resp)
{
	struct gl_capplan_change *p = NULL, *all = NULL;
	struct gl_err err = {0};
	char param[64], actor[48];
	const char *field = NULL;
	size_t n = 0, na = 0, bad = 0;
	struct gl_store *st;
	cJSON *root;
	int rc;

	snprintf(actor, sizeof actor, "token:%lld", req->auth ? (long long)req->auth->token_id : 0LL);
	if ((rc = body_parse(req->body ? req->body : "", req->body_len, &p, &n, param, sizeof param, &err)))
		return gl_resp_error(resp, rc, param, "%s", err.msg);
	if ((rc = gl_req_store(req, &st, &err)))
		goto out;
	rc = gl_capplandb_replace(st, req->cfg, req->now_s, "api", p, n, actor, &bad, &field, &err);
	if (rc == -GL_EINVAL) {
		char msg[sizeof err.msg];
		snprintf(msg, sizeof msg, "%s", err.msg);
		if (field)
			snprintf(param, sizeof param, "changes[%zu].%s", bad, field);
		rc = gl_resp_error(resp, rc, field ? param : "changes", "%s%s%s", field ? param : "", field ? ": " : "",
				   msg);
		free(p);
		return rc;
	}
	if (rc || (rc = gl_capplandb_list(st, NULL, &all, &na, &err)))
		goto out;
	/* cached capacity forecasts drew the plan before this one */
	gl_forecast_cache_drop('c');
	root = plan_list_json(all, na, req->cfg->procurement_lead_days);
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
out:
	free(p);
	free(all);
	if (rc)
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	return 0;
}
