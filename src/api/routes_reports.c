/* Report endpoints: GET /v1/reports/showback (CSV table, HTML or PDF). */
#include "gl/reports.h"
#include "gl/report.h"
#include "gl/routes.h"
#include "gl/showback.h"

#include <stdio.h>
#include <string.h>

int gl_route_report_showback(struct gl_req *req, struct gl_resp *resp)
{
	/* one per server thread: the response headers are sent by the thread
	 * that ran the handler, right after it returns */
	static _Thread_local char disposition[200];
	const char *month = gl_req_param(req, "month"), *agg = gl_req_param(req, "aggregate"),
		   *fmt = gl_req_param(req, "format"), *table = gl_req_param(req, "table"),
		   *share = gl_req_param(req, "shareIdle");
	static const char *const ext[] = {"csv", "html", "pdf"};
	static const char *const ctype[] = {"text/csv; charset=utf-8", "text/html; charset=utf-8", "application/pdf"};
	struct gl_showback_req sr = {0};
	struct gl_showback sb;
	enum gl_reports_format f;
	struct gl_err err = {0};
	char name[128];
	PGconn *c;
	int rc;

	if (!month || !*month)
		return gl_resp_error(resp, GL_EINVAL, "month", "month: required (YYYY-MM)");
	if (gl_reports_format_parse(fmt, &f, &err))
		return gl_resp_error(resp, GL_EINVAL, "format", "%s", err.msg);
	if (gl_reports_share_parse(share, &sr.share, &err))
		return gl_resp_error(resp, GL_EINVAL, "shareIdle", "%s", err.msg);
	if (!agg)
		agg = "team";
	if (!gl_showback_aggregate_ok(agg))
		return gl_resp_error(resp, GL_EINVAL, "aggregate",
				     "aggregate: '%s' is not team, project, cost_center, account or user", agg);
	if (sr.share == GL_SHARE_OWNER && strcmp(agg, "team") != 0)
		return gl_resp_error(resp, GL_EINVAL, "shareIdle", "shareIdle: 'owner' needs aggregate=team");
	if (f == GL_REPORTS_CSV && table) {
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
	if ((rc = gl_req_db(req, &c, &err)))
		return gl_resp_error(resp, rc, NULL, "%s", err.msg);
	if ((rc = gl_showback_gather(c, &sr, &sb, &err)))
		return gl_resp_error(resp, rc, err.code == GL_EINVAL ? "month" : NULL, "%s", err.msg);
	rc = gl_reports_render(&sb, f, f == GL_REPORTS_CSV ? (table ? table : "owners") : NULL, req->now_s, &resp->body,
			       &err);
	if (!rc) {
		gl_report_file_name(&sb, f == GL_REPORTS_CSV ? (table ? table : "owners") : NULL, ext[f], name,
				    sizeof name);
		snprintf(disposition, sizeof disposition, "attachment; filename=\"%s\"", name);
		resp->content_type = ctype[f];
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
