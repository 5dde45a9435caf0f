/* Report endpoints: GET /v1/reports/showback (CSV table, HTML or PDF),
 * GET /v1/reports (recorded sets), GET /v1/reports/{id} (one recorded
 * file), GET /v1/budgets. */
#include "gl/apijson.h"
#include "gl/budget.h"
#include "gl/cost.h"
#include "gl/report.h"
#include "gl/reportfiles.h"
#include "gl/reports.h"
#include "gl/routes.h"
#include "gl/showback.h"
#include "gl/store.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A scoped token's report is its owners' rows by the one dimension its
 * scope names (the default aggregate then): a row of another dimension
 * may mix its owners with others', and a scope across dimensions has no
 * rows of its own in a one-dimension report. */
static int report_scope(struct gl_req *req, struct gl_resp *resp, const char **agg, const char **vals, size_t *n)
{
	size_t ns;
	const struct gl_tokens_scope *sc = gl_req_scope(req, &ns);
	*n = 0;
	if (!sc)
		return 0;
	for (size_t i = 1; i < ns; i++)
		if (strcmp(sc[i].dim, sc[0].dim))
			return gl_resp_error(resp, GL_EPERM, "aggregate",
					     "aggregate: the token's scope names %s and %s; a report aggregates by one "
					     "(ask /v1/chargeback, which filters by both)", sc[0].dim, sc[i].dim);
	if (!*agg)
		*agg = sc[0].dim;
	if (strcmp(*agg, sc[0].dim))
		return gl_resp_error(resp, GL_EPERM, "aggregate",
				     "aggregate: '%s' is outside the token's scope (by %s: aggregate=%s)", *agg, sc[0].dim,
				     sc[0].dim);
	*n = gl_tokens_scope_values(sc, ns, sc[0].dim, vals);
	return 0;
}

int gl_route_report_showback(struct gl_req *req, struct gl_resp *resp)
{
	/* one per server thread: the response headers are sent by the thread
	 * that ran the handler, right after it returns */
	static _Thread_local char disposition[200];
	const char *month = gl_req_param(req, "month"), *agg = gl_req_param(req, "aggregate"),
		   *fmt = gl_req_param(req, "format"), *table = gl_req_param(req, "table"),
		   *share = gl_req_param(req, "shareIdle");
	struct gl_showback_req sr = {0};
	struct gl_sbmodel sb;
	enum gl_settings_report_format f;
	struct gl_err err = {0};
	char name[128];
	struct gl_store *st;
	const char *scope_vals[GL_TOKENS_MAX_OWNERS];
	size_t n_scope = 0;
	int rc;

	if (!month || !*month)
		return gl_resp_error(resp, GL_EINVAL, "month", "month: required (YYYY-MM)");
	if (gl_reports_format_parse(fmt, &f, &err))
		return gl_resp_error(resp, GL_EINVAL, "format", "%s", err.msg);
	if (gl_reports_share_parse(share, &sr.share, &err))
		return gl_resp_error(resp, GL_EINVAL, "shareIdle", "%s", err.msg);
	if ((rc = report_scope(req, resp, &agg, scope_vals, &n_scope)))
		return rc;
	if (!agg)
		agg = "team";
	if (!gl_settings_aggregate_ok(agg))
		return gl_resp_error(resp, GL_EINVAL, "aggregate",
				     "aggregate: '%s' is not team, project, cost_center, account, user or workload_type", agg);
	if (sr.share == GL_CHARGEBACK_SHARE_OWNER && strcmp(agg, "team") != 0)
		return gl_resp_error(resp, GL_EINVAL, "shareIdle", "shareIdle: 'owner' needs aggregate=team");
	/* checked with every format: a wrong table is a typo whatever is sent */
	if (table) {
		size_t i = 0;
		while (gl_report_tables[i] && strcmp(gl_report_tables[i], table))
			i++;
		if (!gl_report_tables[i])
			return gl_resp_error(resp, GL_EINVAL, "table", "table: unknown table '%s'", table);
	}
	if (gl_showback_month_parse(month, &(int64_t){0}, &err))
		return gl_resp_error(resp, GL_EINVAL, "month", "%s", err.msg);
	snprintf(sr.month, sizeof sr.month, "%s", month);
	sr.aggregate = agg;
	sr.currency = req->cfg->currency;
	sr.now_s = req->now_s;
	sr.cfg = req->cfg;
	if ((rc = gl_req_store(req, &st, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	if ((rc = gl_showback_gather(st, &sr, &sb, &err)))
		return gl_resp_error(resp, rc, err.code == GL_EINVAL ? "month" : NULL, "%s", err.msg);
	if (n_scope)
		gl_showback_restrict(&sb, scope_vals, n_scope);
	rc = gl_reports_render(&sb, f, f == GL_SETTINGS_REPORT_CSV ? (table ? table : "owners") : NULL, req->cfg, req->now_s, &resp->body,
			       &err);
	if (!rc) {
		gl_report_file_name(&sb, f == GL_SETTINGS_REPORT_CSV ? (table ? table : "owners") : NULL, gl_settings_report_ext[f], name,
				    sizeof name);
		snprintf(disposition, sizeof disposition, "attachment; filename=\"%s\"", name);
		resp->content_type = gl_reports_ctype[f];
		resp->extra_headers[0][0] = "Content-Disposition";
		resp->extra_headers[0][1] = disposition;
	}
	gl_showback_fini(&sb);
	if (rc) {
		gl_strbuf_reset(&resp->body);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	return 0;
}

static cJSON *file_json(const struct gl_reportfiles_row *f)
{
	cJSON *o = cJSON_CreateObject(), *ch;
	char buf[600], *save = NULL;
	cJSON_AddStringToObject(o, "month", f->month);
	cJSON_AddStringToObject(o, "aggregate", f->aggregate);
	cJSON_AddStringToObject(o, "shareIdle", f->share_idle);
	cJSON_AddNumberToObject(o, "version", (double)f->version);
	cJSON_AddStringToObject(o, "format", f->format);
	cJSON_AddStringToObject(o, "name", f->name);
	cJSON_AddStringToObject(o, "sha256", f->sha256);
	cJSON_AddNumberToObject(o, "bytes", (double)f->bytes);
	ch = cJSON_AddArrayToObject(o, "changed");
	snprintf(buf, sizeof buf, "%s", f->changed ? f->changed : "");
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		cJSON_AddItemToArray(ch, cJSON_CreateString(t));
	cJSON_AddStringToObject(o, "trigger", f->trigger);
	cJSON_AddStringToObject(o, "generated_at", f->generated_at);
	cJSON_AddNumberToObject(o, "id", (double)f->id); /* GET /v1/reports/{id} */
	return o;
}

/* The bytes of name under dir into out, when their sha256 is still the
 * recorded one: a file changed or cut on disk since is refused, not
 * served as the record. */
static int read_recorded(const char *dir, const struct gl_reportfiles_file *f, struct gl_strbuf *out, struct gl_err *err)
{
	char path[1024], sum[65], buf[65536];
	FILE *fp;
	size_t n;
	int rc = 0;
	if (strchr(f->name, '/') || !strcmp(f->name, "..") || !*f->name)
		return gl_err_set(err, GL_EINTERNAL, "recorded report file name '%s' is not a file name", f->name);
	snprintf(path, sizeof path, "%s/%s", dir, f->name);
	if (!(fp = fopen(path, "rb")))
		return gl_err_set(err, GL_ENOTFOUND, "report file %s is no longer in reports.dir", f->name);
	while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
		gl_strbuf_append(out, buf, n);
	if (ferror(fp))
		rc = gl_err_set(err, GL_EIO, "report file %s: read error", f->name);
	fclose(fp);
	if (rc)
		return rc;
	gl_reports_sha256(out->p ? out->p : "", out->len, sum);
	if (strcmp(sum, f->sha256) != 0)
		/* the recorded file is no longer there as recorded: not found, and why */
		return gl_err_set(err, GL_ENOTFOUND,
				  "report file %s has changed on disk since it was recorded (sha256 %s, recorded %s)",
				  f->name, sum, f->sha256);
	return 0;
}

/* GET /v1/reports/{id}: a recorded file as it was recorded, its sha256 the
 * ETag (the request is audited with its path, as every request is). */
int gl_route_report_file(struct gl_req *req, struct gl_resp *resp)
{
	static _Thread_local char disposition[320], etag[70];
	const char *id = req->path + strlen("/v1/reports/");
	const char *dir = req->cfg->reports_dir;
	struct gl_reportfiles_file f;
	enum gl_settings_report_format fmt;
	struct gl_err err = {0};
	struct gl_store *st;
	int rc;

	if (!*id || strspn(id, "0123456789") != strlen(id) || strlen(id) > 18)
		return gl_resp_error(resp, GL_ENOTFOUND, NULL, "no recorded report file '%s' (the ids are those of /v1/reports)",
				     id);
	if (!dir || !*dir)
		return gl_resp_error(resp, GL_ENOTFOUND, NULL, "no reports.dir is configured: this server keeps no report files");
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_reportfiles_get(st, atoll(id), &f, &err)) ||
	    (rc = gl_reports_format_parse(f.format, &fmt, &err)) || (rc = read_recorded(dir, &f, &resp->body, &err))) {
		gl_strbuf_reset(&resp->body);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	snprintf(disposition, sizeof disposition, "attachment; filename=\"%s\"", f.name);
	snprintf(etag, sizeof etag, "\"%s\"", f.sha256);
	resp->content_type = gl_reports_ctype[fmt];
	gl_apijson_add_header(resp, "Content-Disposition", disposition);
	gl_apijson_add_header(resp, "ETag", etag);
	return 0;
}

/* GET /v1/reports: the recorded report files, newest month first. */
int gl_route_reports(struct gl_req *req, struct gl_resp *resp)
{
	const char *month = gl_req_param(req, "month");
	struct gl_err err = {0};
	struct gl_reportfiles files = {0};
	struct gl_store *st;
	cJSON *root, *arr;
	int rc;

	if (month) {
		int64_t s;
		if (gl_showback_month_parse(month, &s, &err))
			return gl_resp_error(resp, GL_EINVAL, "month", "%s", err.msg);
	}
	if ((rc = gl_req_store(req, &st, &err)) || (rc = gl_reportfiles_list(st, month, &files, &err))) {
		gl_reportfiles_fini(&files);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	root = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(root, "files");
	for (size_t i = 0; i < files.n; i++)
		cJSON_AddItemToArray(arr, file_json(&files.rows[i]));
	gl_reportfiles_fini(&files);
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	return 0;
}

/* GET /v1/budgets: spend to date, month-end forecast (and its method) and
 * % used per budget. */
/* A budget a scoped token sees: one on an owner of its scope, when the
 * scope names that budget's dimension alone (a team's spend under a scope
 * of the team and one user would hold the other users' spend). */
static int budget_in_scope(struct gl_req *req, const struct gl_budget_line *l)
{
	size_t n;
	const struct gl_tokens_scope *sc = gl_req_scope(req, &n);
	int in = 0;
	for (size_t i = 0; sc && i < n; i++) {
		if (strcmp(sc[i].dim, l->aggregate))
			return 0;
		in |= !strcmp(sc[i].value, l->owner);
	}
	return !sc || in;
}

int gl_route_budgets(struct gl_req *req, struct gl_resp *resp)
{
	const char *month = gl_req_param(req, "month");
	struct gl_budget_line *lines;
	struct gl_err err = {0};
	int64_t ms;
	size_t n = 0;
	int minor = gl_cost_minor(req->cfg->currency), rc;
	struct gl_store *st;
	cJSON *root, *arr;
	char buf[64];

	/* asked once whatever the lines: no budget at all is a scope's answer too */
	(void)gl_req_scope(req, &(size_t){0});
	if (month) {
		if (gl_showback_month_parse(month, &ms, &err))
			return gl_resp_error(resp, GL_EINVAL, "month", "%s", err.msg);
		if (ms > req->now_s)
			return gl_resp_error(resp, GL_EINVAL, "month", "month: %s is in the future", month);
	} else {
		ms = gl_window_month_start(req->now_s);
	}
	if ((rc = gl_budget_validate(req->cfg, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	lines = gl_xcalloc(req->cfg->n_budgets + 1, sizeof *lines);
	if ((rc = gl_req_store(req, &st, &err)) ||
	    (rc = gl_budget_status(st, req->cfg, ms, req->now_s, lines, req->cfg->n_budgets, &n, &err))) {
		free(lines);
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	}
	root = cJSON_CreateObject();
	{
		int64_t y;
		unsigned m, d;
		gl_timeutil_civil_from_days(ms / 86400, &y, &m, &d);
		snprintf(buf, sizeof buf, "%04lld-%02u", (long long)y, m);
		cJSON_AddStringToObject(root, "month", buf);
	}
	cJSON_AddStringToObject(root, "currency", req->cfg->currency);
	arr = cJSON_AddArrayToObject(root, "budgets");
	for (size_t i = 0; i < n; i++) {
		const struct gl_budget_line *l = &lines[i];
		cJSON *o, *f;
		if (!budget_in_scope(req, l))
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "owner", l->owner);
		cJSON_AddStringToObject(o, "aggregate", l->aggregate);
		gl_cost_format(l->budget_micros, minor, buf, sizeof buf);
		cJSON_AddStringToObject(o, "budget", buf);
		gl_cost_format(l->spend_micros, minor, buf, sizeof buf);
		cJSON_AddStringToObject(o, "spend_to_date", buf);
		cJSON_AddNumberToObject(o, "spend_to_date_micros", (double)l->spend_micros);
		gl_cost_format(l->forecast_micros, minor, buf, sizeof buf);
		cJSON_AddStringToObject(o, "forecast_month_end", buf);
		cJSON_AddStringToObject(o, "forecast_method", l->method);
		if (l->origins > 0) {
			/* the method's own backtest on this owner's days, as /v1/forecast shows it */
			cJSON *a = cJSON_AddObjectToObject(o, "forecast_accuracy");
			isfinite(l->mase) ? (void)cJSON_AddNumberToObject(a, "mase", l->mase) : (void)cJSON_AddNullToObject(a, "mase");
			isfinite(l->wape) ? (void)cJSON_AddNumberToObject(a, "wape", l->wape) : (void)cJSON_AddNullToObject(a, "wape");
			cJSON_AddNumberToObject(a, "origins", l->origins);
		} else {
			cJSON_AddNullToObject(o, "forecast_accuracy");
		}
		gl_report_fmt_pct(l->spend_micros, l->budget_micros, buf, sizeof buf);
		cJSON_AddStringToObject(o, "pct_used", buf);
		gl_report_fmt_pct(l->forecast_micros, l->budget_micros, buf, sizeof buf);
		cJSON_AddStringToObject(o, "forecast_pct", buf);
		f = cJSON_AddArrayToObject(o, "alerted_thresholds");
		for (size_t k = 0; k < l->n_fired; k++)
			cJSON_AddItemToArray(f, cJSON_CreateNumber(l->fired[k]));
		cJSON_AddItemToArray(arr, o);
	}
	free(lines);
	gl_apijson_put(resp, root);
	cJSON_Delete(root);
	return 0;
}
