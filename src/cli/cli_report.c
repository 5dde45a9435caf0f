/* gpuledger report showback: the monthly showback report as files. */
#include "gl/audit.h"
#include "gl/cli.h"
#include "gl/report_sched.h"
#include "gl/reportfiles.h"
#include "gl/reports.h"
#include "gl/showback.h"
#include "gl/store.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static const char usage_report[] =
	"usage: gpuledger [--config FILE] report showback --month YYYY-MM\n"
	"         [--aggregate team|project|cost_center|account|user] [--format csv|html|pdf|zip]\n"
	"         [--out DIR] [--shareIdle none|proportional|proportional_fleet|owner]\n"
	"\n"
	"Writes the month's showback report under DIR (default .): one CSV file per\n"
	"table, or one HTML or PDF file, named showback-MONTH-AGGREGATE[-TABLE].EXT.\n"
	"Prints one line per file: name, bytes, sha256.\n"
	"\n"
	"       gpuledger [--config FILE] report record --month YYYY-MM\n"
	"\n"
	"Makes the month's recorded set as the daemon does on the 1st (reports.dir,\n"
	"reports.aggregate, reports.share_idle, reports.formats), listed by GET /v1/reports.\n"
	"A month already recorded is only rewritten when its CSV changed (late data): as\n"
	"a new version beside the old files, naming the tables that changed.\n";

static int cmd_record(struct gl_config *cfg, int argc, char **argv)
{
	const char *month = NULL;
	const struct gl_cli_opt opts[] = {{"month", &month}, {NULL, NULL}};
	struct gl_report_sched_result res;
	struct gl_err err = {0};
	struct gl_store *st = NULL;
	int rc;

	if ((rc = gl_cli_parse_opts(argc, argv, "report record", usage_report, opts)) >= 0)
		return rc;
	if (!month)
		return gl_cli_usage_error(usage_report, "report record: --month is required");
	if ((rc = gl_store_open(cfg, &st, &err)))
		goto fail;
	if ((rc = gl_report_sched_make(st, cfg, month, gl_audit_process_actor(), (int64_t)time(NULL), &res, &err))) {
		if (err.code == GL_EINVAL || err.code == GL_ECONFIG) {
			gl_store_close(st);
			return gl_cli_usage_error(usage_report, "report record: %s", err.msg);
		}
		goto fail;
	}
	if (res.unchanged)
		printf("%s: unchanged, version %d stands\n", month, res.version);
	else
		printf("%s: version %d%s%s\n", month, res.version, res.changed[0] ? ", changed: " : "", res.changed);
	for (size_t i = 0; i < res.n_files; i++)
		printf("%s %zu %s\n", res.files[i].name, res.files[i].bytes, res.files[i].sha256);
	gl_store_close(st);
	return 0;
fail:
	gl_store_close(st);
	return gl_cli_fail(&err);
}

int gl_cli_report(struct gl_config *cfg, int argc, char **argv)
{
	const char *month = NULL, *agg = "team", *fmt = "csv", *out = ".", *share = NULL;
	const struct gl_cli_opt opts[] = {{"month", &month},   {"aggregate", &agg}, {"format", &fmt},
					  {"out", &out},       {"shareIdle", &share}, {NULL, NULL}};
	struct gl_showback_req req = {0};
	struct gl_sbmodel sb;
	struct gl_reports_file files[16];
	struct gl_strbuf detail = GL_STRBUF_INIT;
	enum gl_settings_report_format f;
	struct gl_err err = {0};
	struct gl_store *st = NULL;
	size_t n = 0;
	int rc;

	if (gl_cli_wants_help(argc, argv)) {
		fputs(usage_report, stdout);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "record"))
		return cmd_record(cfg, argc - 1, argv + 1);
	if (argc < 2 || strcmp(argv[1], "showback") != 0)
		return gl_cli_usage_error(usage_report, "report: expected 'showback' or 'record'");
	if ((rc = gl_cli_parse_opts(argc - 1, argv + 1, "report showback", usage_report, opts)) >= 0)
		return rc;
	if (!month)
		return gl_cli_usage_error(usage_report, "report showback: --month is required");
	if (gl_reports_format_parse(fmt, &f, &err) || gl_reports_share_parse(share, &req.share, &err))
		return gl_cli_usage_error(usage_report, "report showback: --%s", err.msg);
	if (!gl_settings_aggregate_ok(agg))
		return gl_cli_usage_error(usage_report, "report showback: --aggregate: '%s' is not team, project, "
							"cost_center, account, user or workload_type", agg);
	if (req.share == GL_CHARGEBACK_SHARE_OWNER && strcmp(agg, "team") != 0)
		return gl_cli_usage_error(usage_report, "report showback: --shareIdle owner needs --aggregate team");
	snprintf(req.month, sizeof req.month, "%s", month);
	req.aggregate = agg;
	req.currency = cfg->currency;
	req.now_s = (int64_t)time(NULL);
	req.cfg = cfg;
	if ((rc = gl_store_open(cfg, &st, &err)))
		goto fail;
	if ((rc = gl_showback_gather(st, &req, &sb, &err))) {
		if (err.code == GL_EINVAL) {
			gl_store_close(st);
			return gl_cli_usage_error(usage_report, "report showback: --%s", err.msg);
		}
		goto fail;
	}
	rc = gl_reports_write_set(&sb, f, out, cfg, req.now_s, files, 16, &n, &err);
	gl_strbuf_printf(&detail, "{\"month\":\"%s\",\"aggregate\":\"%s\",\"format\":\"%s\",\"files\":%zu}", sb.month,
			 sb.aggregate, fmt, n);
	gl_showback_fini(&sb);
	if (rc)
		goto fail;
	for (size_t i = 0; i < n; i++)
		printf("%s %zu %s\n", files[i].name, files[i].bytes, files[i].sha256);
	if ((rc = gl_reportfiles_audit(st, gl_audit_process_actor(), month, detail.p, &err)))
		goto fail;
	gl_strbuf_fini(&detail);
	gl_store_close(st);
	return 0;
fail:
	gl_strbuf_fini(&detail);
	gl_store_close(st);
	return gl_cli_fail(&err);
}
