/* Recorded monthly report sets (see include/gl/report_sched.h). */
#include "gl/report_sched.h"
#include "gl/log.h"
#include "gl/report.h"
#include "gl/reportfiles.h"
#include "gl/showback.h"
#include "gl/store.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void gl_report_sched_name(const char *month, const char *aggregate, enum gl_chargeback_share_idle share, const char *table,
			  const char *ext, int v, char *buf, size_t n)
{
	const char *tag = gl_report_share_tag(share);
	char ver[16] = "";
	if (v > 1)
		snprintf(ver, sizeof ver, ".v%d", v);
	if (table)
		snprintf(buf, n, "showback-%s-%s%s-%s%s.%s", month, aggregate, tag, table, ver, ext);
	else
		snprintf(buf, n, "showback-%s-%s%s%s.%s", month, aggregate, tag, ver, ext);
}


/* The month's CSV tables rendered into csv[] (*nt of them), each compared
 * with the latest recorded version's file of the same name: res->changed
 * names those that differ, *pv is that version (0: none recorded). */
static int compare_latest(struct gl_store *st, const struct gl_sbmodel *sb, const char *mday, int64_t now_s,
			  struct gl_strbuf *csv, size_t *nt, int *pv, struct gl_report_sched_result *res,
			  struct gl_err *err)
{
	struct gl_reportfiles prev = {0};
	int rc;

	if ((rc = gl_reportfiles_latest(st, mday, sb->aggregate, gl_chargeback_share_name(sb->share), pv, &prev, err)))
		goto out;
	/* the CSV is the content: compare it table by table */
	for (*nt = 0; gl_report_tables[*nt] && *nt < GL_REPORT_SCHED_MAX_FILES; (*nt)++) {
		char name[160], sha[65];
		int same = 0;
		if ((rc = gl_reports_render(sb, GL_SETTINGS_REPORT_CSV, gl_report_tables[*nt], NULL, now_s, &csv[*nt], err)))
			goto out;
		gl_reports_sha256(csv[*nt].p, csv[*nt].len, sha);
		gl_report_sched_name(sb->month, sb->aggregate, sb->share, gl_report_tables[*nt], "csv", *pv, name,
				     sizeof name);
		for (size_t k = 0; k < prev.n && k < GL_REPORT_SCHED_MAX_FILES; k++)
			if (!strcmp(prev.rows[k].name, name) && !strcmp(prev.rows[k].sha256, sha))
				same = 1;
		if (!same && *pv) {
			size_t l = strlen(res->changed);
			snprintf(res->changed + l, sizeof res->changed - l, "%s%s", l ? "," : "", gl_report_tables[*nt]);
		}
	}
out:
	gl_reportfiles_fini(&prev);
	return rc;
}

/* The new version's files under reports.dir, each renamed into place:
 * the nt CSV tables, then the configured other formats. */
static int write_files(const struct gl_config *cfg, const struct gl_sbmodel *sb, int64_t now_s,
		       struct gl_strbuf *csv, size_t nt, struct gl_report_sched_result *res, struct gl_err *err)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	int rc = 0;

	/* nothing else creates reports.dir (the example's var/reports): make it
	 * as `report showback --out` makes its directory */
	if (mkdir(cfg->reports_dir, 0755) && errno != EEXIST)
		return gl_err_set(err, GL_EIO, "reports.dir %s: %s", cfg->reports_dir, strerror(errno));
	for (size_t t = 0; t < nt && !rc; t++) {
		struct gl_reports_file *f = &res->files[res->n_files++];
		gl_report_sched_name(sb->month, sb->aggregate, sb->share, gl_report_tables[t], "csv", res->version, f->name,
				     sizeof f->name);
		gl_reports_sha256(csv[t].p, csv[t].len, f->sha256);
		f->bytes = csv[t].len;
		rc = gl_reports_write_file(cfg->reports_dir, f->name, &csv[t], err);
	}
	for (int fmt = GL_SETTINGS_REPORT_HTML; fmt <= GL_SETTINGS_REPORT_ZIP && !rc; fmt++) {
		struct gl_reports_file *f;
		if (!strstr(cfg->reports_formats, gl_settings_report_ext[fmt]) || res->n_files == GL_REPORT_SCHED_MAX_FILES)
			continue;
		f = &res->files[res->n_files++];
		gl_strbuf_reset(&b);
		if ((rc = gl_reports_render(sb, (enum gl_settings_report_format)fmt, NULL, cfg, now_s, &b, err)))
			break;
		gl_report_sched_name(sb->month, sb->aggregate, sb->share, NULL, gl_settings_report_ext[fmt], res->version, f->name,
				     sizeof f->name);
		gl_reports_sha256(b.p, b.len, f->sha256);
		f->bytes = b.len;
		rc = gl_reports_write_file(cfg->reports_dir, f->name, &b, err);
	}
	gl_strbuf_fini(&b);
	return rc;
}

/* The files' rows and the audit row, in one transaction. */
static int record_rows(struct gl_store *st, const struct gl_sbmodel *sb, const char *mday, const char *trigger,
		       int64_t now_s, const struct gl_report_sched_result *res, struct gl_err *err)
{
	struct gl_reportfiles_new files[GL_REPORT_SCHED_MAX_FILES];
	struct gl_reportfiles_set set = {mday, sb->aggregate, gl_chargeback_share_name(sb->share), trigger, res->changed,
					res->version, now_s};
	struct gl_strbuf detail = GL_STRBUF_INIT;
	int rc;

	for (size_t i = 0; i < res->n_files; i++)
		files[i] = (struct gl_reportfiles_new){res->files[i].name, res->files[i].sha256,
						      strrchr(res->files[i].name, '.') + 1, res->files[i].bytes};
	gl_strbuf_printf(&detail, "{\"month\":\"%s\",\"aggregate\":\"%s\",\"version\":%d,\"files\":%zu,\"changed\":\"%s\"}",
			 sb->month, sb->aggregate, res->version, res->n_files, res->changed);
	rc = gl_reportfiles_record(st, &set, files, res->n_files, sb->month, detail.p, err);
	gl_strbuf_fini(&detail);
	return rc;
}

static int gather(struct gl_store *st, const struct gl_config *cfg, const char *month, int64_t now_s,
		  struct gl_sbmodel *sb, struct gl_report_sched_result *res, struct gl_err *err)
{
	struct gl_showback_req req = {0};
	int rc;
	if (!cfg->reports_dir || !*cfg->reports_dir)
		return gl_err_set(err, GL_ECONFIG, "reports.dir is not set: nowhere to record the report");
	snprintf(req.month, sizeof req.month, "%s", month);
	req.aggregate = cfg->reports_aggregate;
	req.currency = cfg->currency;
	req.now_s = now_s;
	req.cfg = cfg;
	if ((rc = gl_reports_share_parse(cfg->reports_share_idle, &req.share, err)))
		return rc;
	if ((rc = gl_showback_gather(st, &req, sb, err)))
		res->no_data = sb->no_data;
	return rc;
}

int gl_report_sched_make(struct gl_store *st, const struct gl_config *cfg, const char *month, const char *trigger,
			 int64_t now_s, struct gl_report_sched_result *res, struct gl_err *err)
{
	struct gl_sbmodel sb;
	struct gl_strbuf csv[GL_REPORT_SCHED_MAX_FILES];
	char mday[16], lockkey[200];
	size_t nt = 0;
	int rc, pv = 0;

	memset(res, 0, sizeof *res);
	if ((rc = gather(st, cfg, month, now_s, &sb, res, err)))
		return rc;
	for (size_t i = 0; i < GL_REPORT_SCHED_MAX_FILES; i++)
		gl_strbuf_init(&csv[i]);
	snprintf(mday, sizeof mday, "%s-01", sb.month);
	/* One recorder of a month's set at a time (the daemon's run and a
	 * `report record`, two daemons): both took the same next version and
	 * wrote its files over each other's, and the second failed on the
	 * unique key with a raw SQL error. Held until the rows commit; the
	 * second then finds the set recorded. */
	snprintf(lockkey, sizeof lockkey, "%s|%s|%s", mday, sb.aggregate, gl_chargeback_share_name(sb.share));
	if ((rc = gl_reportfiles_lock(st, lockkey, err)))
		goto out_unlocked;
	if ((rc = compare_latest(st, &sb, mday, now_s, csv, &nt, &pv, res, err)))
		goto out;
	if (pv && !res->changed[0]) {
		struct gl_strbuf detail = GL_STRBUF_INIT;
		res->unchanged = 1;
		res->version = pv;
		gl_strbuf_printf(&detail, "{\"month\":\"%s\",\"aggregate\":\"%s\",\"version\":%d,\"unchanged\":true}",
				 sb.month, sb.aggregate, pv);
		rc = gl_reportfiles_audit(st, trigger, sb.month, detail.p, err);
		gl_strbuf_fini(&detail);
		goto out;
	}
	res->version = pv + 1;
	/* files first (each renamed into place), then the rows and the audit
	 * row in one transaction */
	if (!(rc = write_files(cfg, &sb, now_s, csv, nt, res, err)))
		rc = record_rows(st, &sb, mday, trigger, now_s, res, err);
out:
	{
		struct gl_err e2 = {0};
		if (gl_reportfiles_unlock(st, lockkey, &e2))
			gl_log(GL_LOG_WARN, "report record: could not release the lock: %s", e2.msg);
	}
out_unlocked:
	for (size_t i = 0; i < GL_REPORT_SCHED_MAX_FILES; i++)
		gl_strbuf_fini(&csv[i]);
	gl_showback_fini(&sb);
	return rc;
}

int gl_report_sched_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s,
			char *summary, size_t n, struct gl_err *err)
{
	struct gl_report_sched_result res;
	int64_t at, ms = gl_window_month_start(now_s), prev = gl_window_month_start(ms - 1), y;
	unsigned m, d;
	char month[8], mday[16];
	int rc, done;

	if (!cfg->reports_dir || !*cfg->reports_dir) {
		snprintf(summary, n, "off (reports.dir not set)");
		return 0;
	}
	if ((rc = gl_settings_schedule_parse(cfg->reports_schedule, &at, err)))
		return rc;
	if (now_s < ms + at) {
		snprintf(summary, n, "not due");
		return 0;
	}
	gl_timeutil_civil_from_days(prev / 86400, &y, &m, &d);
	snprintf(month, sizeof month, "%04lld-%02u", (long long)y, m);
	snprintf(mday, sizeof mday, "%s-01", month);
	if ((rc = gl_reportfiles_recorded(st, mday, cfg->reports_aggregate, cfg->reports_share_idle, &done, err)))
		return rc;
	if (done) {
		snprintf(summary, n, "%s already recorded", month);
		return 0;
	}
	rc = gl_report_sched_make(st, cfg, month, "system", now_s, &res, err);
	if (rc && res.no_data) {
		/* a month before any data: nothing to report, not a failure;
		 * anything else (a bad reports.* value, a full disk) is one */
		snprintf(summary, n, "%s: %s", month, err->msg);
		memset(err, 0, sizeof *err);
		return 0;
	}
	if (!rc)
		snprintf(summary, n, "%s version %d: %zu files in %s", month, res.version, res.n_files, cfg->reports_dir);
	return rc;
}
