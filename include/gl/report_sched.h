/* gpuledger — recorded report sets: the daemon's monthly run (the previous
 * month's set on the 1st at reports.schedule, under reports.dir) and
 * `report showback --record`. A recorded month is immutable: when its CSV
 * comes out byte-identical nothing new is written; when late data changed
 * it, the new set is a new version written beside the old one (names end
 * in .vN), recording which CSV tables changed. Every set is audited.
 *
 * Ownership: borrows the store handle and the config; results are inline.
 */
#ifndef GL_REPORT_SCHED_H
#define GL_REPORT_SCHED_H

#include "gl/config.h"
#include "gl/reports.h"

struct gl_store;


#define GL_REPORT_SCHED_MAX_FILES 16

struct gl_report_sched_result {
	int version;        /* the version now recorded (new, or the existing one when unchanged) */
	int unchanged;      /* the CSV equals the latest version's: nothing written */
	int no_data;        /* failed only because the month is before any data */
	char changed[512];  /* CSV tables that differ from the previous version, comma-separated */
	size_t n_files;
	struct gl_reports_file files[GL_REPORT_SCHED_MAX_FILES];
};

/* Pure: the file name of a table (NULL: the whole report) in version v,
 * shareIdle share named as gl_report_file_name names it (sets recorded with
 * different shareIdle are versioned apart and must not share files). */
void gl_report_sched_name(const char *month, const char *aggregate, enum gl_chargeback_share_idle share, const char *table,
			  const char *ext, int v, char *buf, size_t n);

/* Makes (or confirms) the recorded set of month "YYYY-MM" in cfg->reports_dir
 * with the configured aggregate, shareIdle and formats. */
int gl_report_sched_make(struct gl_store *st, const struct gl_config *cfg, const char *month, const char *trigger,
			 int64_t now_s, struct gl_report_sched_result *res, struct gl_err *err) GL_MUSTCHECK;

/* The daemon source: once the schedule time of the 1st has passed, makes the
 * previous month's set if it is not recorded yet; summary says what it did. */
int gl_report_sched_run(struct gl_store *st, const struct gl_config *cfg, const void *src, int64_t now_s,
			char *summary, size_t n, struct gl_err *err);

#endif
