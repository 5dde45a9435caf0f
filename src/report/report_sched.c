/* Recorded monthly report sets (see include/gl/report_sched.h). */
#include "gl/report_sched.h"
#include "gl/audit.h"
#include "gl/db.h"
#include "gl/log.h"
#include "gl/report.h"
#include "gl/showback.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"
#include "gl/window.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int gl_report_sched_parse_time(const char *s, int64_t *secs, struct gl_err *err)
{
	unsigned h, m;
	int n = 0;
	if (!s || sscanf(s, "%2u:%2u%n", &h, &m, &n) != 2 || n != 5 || s[5] || h > 23 || m > 59)
		return gl_err_set(err, GL_ECONFIG, "reports.schedule: '%s' is not HH:MM", s ? s : "");
	*secs = (int64_t)h * 3600 + (int64_t)m * 60;
	return 0;
}

void gl_report_sched_name(const char *month, const char *aggregate, enum gl_share_idle share, const char *table,
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

static const char *const share_names[] = {"none", "proportional", "owner"};

/* The latest recorded version's CSV checksums, by table; 0 when none. */
static int latest(PGconn *c, const char *mday, const char *agg, const char *share, int *version, char **names,
		  char **shas, size_t *n, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc;
	*version = 0;
	*n = 0;
	if ((rc = gl_db_query(c,
			      "SELECT version, name, sha256 FROM report_files WHERE month = $1::date AND aggregate = $2"
			      " AND share_idle = $3 AND format = 'csv' AND version = (SELECT max(version) FROM report_files"
			      " WHERE month = $1::date AND aggregate = $2 AND share_idle = $3)",
			      3, (const char *[]){mday, agg, share}, &r, err)))
		return rc;
	for (int i = 0; i < PQntuples(r) && *n < GL_REPORT_SCHED_MAX_FILES; i++) {
		*version = atoi(PQgetvalue(r, i, 0));
		names[*n] = gl_xstrdup(PQgetvalue(r, i, 1));
		shas[(*n)++] = gl_xstrdup(PQgetvalue(r, i, 2));
	}
	PQclear(r);
	return 0;
}

int gl_report_sched_make(PGconn *c, const struct gl_config *cfg, const char *month, const char *trigger,
			 int64_t now_s, struct gl_report_sched_result *res, struct gl_err *err)
{
	struct gl_showback_req req = {0};
	struct gl_showback sb;
	struct gl_strbuf csv[GL_REPORT_SCHED_MAX_FILES], b = GL_STRBUF_INIT, detail = GL_STRBUF_INIT;
	char *pnames[GL_REPORT_SCHED_MAX_FILES] = {0}, *pshas[GL_REPORT_SCHED_MAX_FILES] = {0};
	char mday[16], gen[32], lockkey[200];
	size_t np = 0, nt = 0;
	int rc, have_sb = 0, in_txn = 0, pv = 0, locked = 0;

	memset(res, 0, sizeof *res);
	for (size_t i = 0; i < GL_REPORT_SCHED_MAX_FILES; i++)
		gl_strbuf_init(&csv[i]);
	if (!cfg->reports_dir || !*cfg->reports_dir) {
		rc = gl_err_set(err, GL_ECONFIG, "reports.dir is not set: nowhere to record the report");
		goto out;
	}
	snprintf(req.month, sizeof req.month, "%s", month);
	req.aggregate = cfg->reports_aggregate;
	req.currency = cfg->currency;
	req.now_s = now_s;
	req.cfg = cfg;
	if ((rc = gl_reports_share_parse(cfg->reports_share_idle, &req.share, err)))
		goto out;
	if ((rc = gl_showback_gather(c, &req, &sb, err))) {
		res->no_data = sb.no_data;
		goto out;
	}
	have_sb = 1;
	snprintf(mday, sizeof mday, "%s-01", sb.month);
	/* One recorder of a month's set at a time (the daemon's run and a
	 * `report record`, two daemons): both took the same next version and
	 * wrote its files over each other's, and the second failed on the
	 * unique key with a raw SQL error. Held until the rows commit; the
	 * second then finds the set recorded. */
	snprintf(lockkey, sizeof lockkey, "%s|%s|%s", mday, sb.aggregate, share_names[sb.share]);
	if ((rc = gl_db_query(c, "SELECT pg_advisory_lock(26478, hashtext($1))", 1, (const char *[]){lockkey}, NULL,
			      err)))
		goto out;
	locked = 1;
	if ((rc = latest(c, mday, sb.aggregate, share_names[sb.share], &pv, pnames, pshas, &np, err)))
		goto out;
	/* the CSV is the content: compare it table by table */
	for (nt = 0; gl_report_tables[nt] && nt < GL_REPORT_SCHED_MAX_FILES; nt++) {
		char name[160], sha[65];
		int same = 0;
		if ((rc = gl_reports_render(&sb, GL_REPORTS_CSV, gl_report_tables[nt], now_s, &csv[nt], err)))
			goto out;
		gl_reports_sha256(csv[nt].p, csv[nt].len, sha);
		gl_report_sched_name(sb.month, sb.aggregate, sb.share, gl_report_tables[nt], "csv", pv, name, sizeof name);
		for (size_t k = 0; k < np; k++)
			if (!strcmp(pnames[k], name) && !strcmp(pshas[k], sha))
				same = 1;
		if (!same && pv) {
			size_t l = strlen(res->changed);
			snprintf(res->changed + l, sizeof res->changed - l, "%s%s", l ? "," : "", gl_report_tables[nt]);
		}
	}
	if (pv && !res->changed[0]) {
		res->unchanged = 1;
		res->version = pv;
		gl_strbuf_printf(&detail, "{\"month\":\"%s\",\"aggregate\":\"%s\",\"version\":%d,\"unchanged\":true}",
				 sb.month, sb.aggregate, pv);
		rc = gl_audit_append(c, trigger, NULL, "report.generate", sb.month, "ok", detail.p, err);
		goto out;
	}
	res->version = pv + 1;
	/* nothing else creates reports.dir (the example's var/reports): make it
	 * as `report showback --out` makes its directory */
	if (mkdir(cfg->reports_dir, 0755) && errno != EEXIST) {
		rc = gl_err_set(err, GL_EIO, "reports.dir %s: %s", cfg->reports_dir, strerror(errno));
		goto out;
	}
	/* files first (each renamed into place), then the rows and the audit
	 * row in one transaction */
	for (size_t t = 0; t < nt; t++) {
		struct gl_reports_file *f = &res->files[res->n_files++];
		gl_report_sched_name(sb.month, sb.aggregate, sb.share, gl_report_tables[t], "csv", res->version, f->name,
				     sizeof f->name);
		gl_reports_sha256(csv[t].p, csv[t].len, f->sha256);
		f->bytes = csv[t].len;
		if ((rc = gl_reports_write_file(cfg->reports_dir, f->name, &csv[t], err)))
			goto out;
	}
	for (int fmt = GL_REPORTS_HTML; fmt <= GL_REPORTS_ZIP; fmt++) {
		struct gl_reports_file *f;
		if (!strstr(cfg->reports_formats, gl_reports_ext[fmt]) || res->n_files == GL_REPORT_SCHED_MAX_FILES)
			continue;
		f = &res->files[res->n_files++];
		gl_strbuf_reset(&b);
		if ((rc = gl_reports_render(&sb, (enum gl_reports_format)fmt, NULL, now_s, &b, err)))
			goto out;
		gl_report_sched_name(sb.month, sb.aggregate, sb.share, NULL, gl_reports_ext[fmt], res->version, f->name,
				     sizeof f->name);
		gl_reports_sha256(b.p, b.len, f->sha256);
		f->bytes = b.len;
		if ((rc = gl_reports_write_file(cfg->reports_dir, f->name, &b, err)))
			goto out;
	}
	snprintf(gen, sizeof gen, "%lld", (long long)now_s);
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	in_txn = 1;
	for (size_t i = 0; i < res->n_files; i++) {
		const char *fe = strrchr(res->files[i].name, '.') + 1;
		char ver[16], bytes[24], changed[600];
		snprintf(ver, sizeof ver, "%d", res->version);
		snprintf(bytes, sizeof bytes, "%zu", res->files[i].bytes);
		snprintf(changed, sizeof changed, "{%s}", res->changed);
		if ((rc = gl_db_query(c,
				      "INSERT INTO report_files (month, aggregate, share_idle, version, format, name, sha256,"
				      " bytes, changed, trigger, generated_at) VALUES ($1::date, $2, $3, $4::integer, $5, $6, $7,"
				      " $8::bigint, $9::text[], $10, to_timestamp($11))",
				      11,
				      (const char *[]){mday, sb.aggregate, share_names[sb.share], ver, fe, res->files[i].name,
						       res->files[i].sha256, bytes, changed, trigger, gen},
				      NULL, err)))
			goto out;
	}
	gl_strbuf_printf(&detail, "{\"month\":\"%s\",\"aggregate\":\"%s\",\"version\":%d,\"files\":%zu,\"changed\":\"%s\"}",
			 sb.month, sb.aggregate, res->version, res->n_files, res->changed);
	if ((rc = gl_audit_append(c, trigger, NULL, "report.generate", sb.month, "ok", detail.p, err)) ||
	    (rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	in_txn = 0;
out:
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	if (locked) {
		struct gl_err e2 = {0};
		if (gl_db_query(c, "SELECT pg_advisory_unlock(26478, hashtext($1))", 1, (const char *[]){lockkey}, NULL,
				&e2))
			gl_log(GL_LOG_WARN, "report record: could not release the lock: %s", e2.msg);
	}
	for (size_t i = 0; i < GL_REPORT_SCHED_MAX_FILES; i++) {
		gl_strbuf_fini(&csv[i]);
		free(pnames[i]);
		free(pshas[i]);
	}
	gl_strbuf_fini(&b);
	gl_strbuf_fini(&detail);
	if (have_sb)
		gl_showback_fini(&sb);
	return rc;
}

int gl_report_sched_run(PGconn *c, const struct gl_config *cfg, const void *src, int64_t now_s, char *summary,
			size_t n, struct gl_err *err)
{
	struct gl_report_sched_result res;
	int64_t at, ms = gl_month_start(now_s), prev = gl_month_start(ms - 1), y;
	unsigned m, d;
	char month[8], mday[16];
	PGresult *r = NULL;
	int rc, done;

	if (!cfg->reports_dir || !*cfg->reports_dir) {
		snprintf(summary, n, "off (reports.dir not set)");
		return 0;
	}
	if ((rc = gl_report_sched_parse_time(cfg->reports_schedule, &at, err)))
		return rc;
	if (now_s < ms + at) {
		snprintf(summary, n, "not due");
		return 0;
	}
	gl_time_civil_from_days(prev / 86400, &y, &m, &d);
	snprintf(month, sizeof month, "%04lld-%02u", (long long)y, m);
	snprintf(mday, sizeof mday, "%s-01", month);
	if ((rc = gl_db_query(c,
			      "SELECT 1 FROM report_files WHERE month = $1::date AND aggregate = $2 AND share_idle = $3"
			      " LIMIT 1",
			      3, (const char *[]){mday, cfg->reports_aggregate, cfg->reports_share_idle}, &r, err)))
		return rc;
	done = PQntuples(r) > 0;
	PQclear(r);
	if (done) {
		snprintf(summary, n, "%s already recorded", month);
		return 0;
	}
	rc = gl_report_sched_make(c, cfg, month, "system", now_s, &res, err);
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
