/* gpuledger — producing showback report files: one place that turns a
 * gathered model into the bytes of a format (CSV table, HTML, PDF, a ZIP of
 * the CSV tables) and
 * writes a whole set into a directory under stable names, for the CLI, the
 * API and the daemon's monthly run alike.
 *
 * Ownership: the model is borrowed; output goes to the caller's strbuf;
 * gl_reports_write_set writes files and nothing else.
 */
#ifndef GL_REPORTS_H
#define GL_REPORTS_H

#include "gl/settings.h"
#include "gl/showback.h"
#include "gl/strbuf.h"

/* Content-Type of each format (enum gl_settings_report_format, settings.h). */
extern const char *const gl_reports_ctype[];

/* "csv" | "html" | "pdf" | "zip"; -GL_EINVAL otherwise. */
int gl_reports_format_parse(const char *s, enum gl_settings_report_format *f, struct gl_err *err) GL_MUSTCHECK;
/* "none" | "proportional" | "owner" (and the /v1/chargeback aliases). */
int gl_reports_share_parse(const char *s, enum gl_chargeback_share_idle *sh, struct gl_err *err) GL_MUSTCHECK;

struct gl_config;
/* The bytes of one format (table: the CSV table; ignored otherwise). HTML
 * and PDF read their templates and layout from cfg's reports.template_dir
 * and take its separators (report_style.h); CSV and ZIP use neither. */
int gl_reports_render(const struct gl_sbmodel *sb, enum gl_settings_report_format f, const char *table,
		      const struct gl_config *cfg, int64_t generated_at_s, struct gl_strbuf *out,
		      struct gl_err *err) GL_MUSTCHECK;

/* One written file of a set. */
struct gl_reports_file {
	char name[128];
	char sha256[65];
	size_t bytes;
};
/* Writes format f of the report into dir (created if missing): every CSV
 * table for csv, one file otherwise. Each file is written to a temporary
 * name and renamed, so a reader never sees half a report. files has room
 * for max entries; *n counts them. */
int gl_reports_write_set(const struct gl_sbmodel *sb, enum gl_settings_report_format f, const char *dir,
			 const struct gl_config *cfg, int64_t generated_at_s, struct gl_reports_file *files, size_t max, size_t *n,
			 struct gl_err *err) GL_MUSTCHECK;

/* Writes b to dir/name through a temporary file and a rename. */
int gl_reports_write_file(const char *dir, const char *name, const struct gl_strbuf *b,
			  struct gl_err *err) GL_MUSTCHECK;

/* Lower-case hex SHA-256 of data. */
void gl_reports_sha256(const void *data, size_t n, char out[65]);

#endif
