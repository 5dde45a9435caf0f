/* gpuledger — the recorded monthly report sets (report_files): what GET
 * /v1/reports lists, what the recorder compares a new set with, and the
 * recording itself (the rows and their audit row in one transaction), and
 * one file by its id for GET /v1/reports/{id}.
 *
 * Ownership: list/latest fill a caller-owned struct gl_reportfiles that
 * gl_reportfiles_fini() empties (also after a failure). Strings passed in
 * are borrowed for the call.
 */
#ifndef GL_REPORTFILES_H
#define GL_REPORTFILES_H

#include "gl/common.h"
#include "gl/store.h"

#include <stddef.h>
#include <stdint.h>

struct gl_reportfiles_row {
	int64_t id;         /* report_files.file_id: GET /v1/reports/{id} */
	char *month, *aggregate, *share_idle, *format, *name, *sha256, *trigger;
	char *changed;      /* the tables that changed, comma-separated ("" for none) */
	char *generated_at; /* RFC 3339 UTC */
	int64_t version, bytes;
};

struct gl_reportfiles {
	struct gl_reportfiles_row *rows;
	size_t n;
	char *text;
};

/* month "YYYY-MM" or NULL (every month): newest month first, then by
 * aggregate, share, version (newest first) and name; at most 10,000. */
int gl_reportfiles_list(struct gl_store *st, const char *month, struct gl_reportfiles *out,
			struct gl_err *err) GL_MUSTCHECK;
/* The CSV files (name, sha256) of the latest version recorded for the
 * month (its first day, "YYYY-MM-01"), aggregate and share; *version 0
 * and no rows when none. */
int gl_reportfiles_latest(struct gl_store *st, const char *month_day, const char *aggregate, const char *share,
			  int *version, struct gl_reportfiles *out, struct gl_err *err) GL_MUSTCHECK;
/* *yes 1 when any version of the set is recorded. */
int gl_reportfiles_recorded(struct gl_store *st, const char *month_day, const char *aggregate, const char *share,
			    int *yes, struct gl_err *err) GL_MUSTCHECK;
void gl_reportfiles_fini(struct gl_reportfiles *f);

/* One recorder of a set at a time (key: month, aggregate and share): a
 * session lock, held until unlocked. */
int gl_reportfiles_lock(struct gl_store *st, const char *key, struct gl_err *err) GL_MUSTCHECK;
int gl_reportfiles_unlock(struct gl_store *st, const char *key, struct gl_err *err) GL_MUSTCHECK;

struct gl_reportfiles_new {
	const char *name, *sha256, *format;
	size_t bytes;
};
struct gl_reportfiles_set {
	const char *month_day, *aggregate, *share_idle, *trigger;
	const char *changed; /* comma-separated table names */
	int version;
	int64_t generated_s;
};
/* Records the files of a new version and its "report.generate" audit row
 * (actor set->trigger, object month, detail a JSON object) in one
 * transaction: all or nothing. */
int gl_reportfiles_record(struct gl_store *st, const struct gl_reportfiles_set *set,
			  const struct gl_reportfiles_new *files, size_t n, const char *month, const char *detail,
			  struct gl_err *err) GL_MUSTCHECK;
/* The "report.generate" audit row alone (a set found unchanged, a report
 * written to files by the command). */
int gl_reportfiles_audit(struct gl_store *st, const char *actor, const char *month, const char *detail,
			 struct gl_err *err) GL_MUSTCHECK;

/* One recorded file (no pointers). */
struct gl_reportfiles_file {
	char name[256];   /* file name under reports.dir */
	char sha256[65];  /* of the bytes as recorded */
	char format[8];   /* csv | html | pdf */
	int64_t bytes;
};

/* The file recorded as id: 0 and *f, or -GL_ENOTFOUND when there is none. */
int gl_reportfiles_get(struct gl_store *st, int64_t id, struct gl_reportfiles_file *f, struct gl_err *err) GL_MUSTCHECK;

#endif
