/* gpuledger — the vocabulary of the settings: the pure checks that the
 * config loader (config.c) and the modules that act on a setting (budgets,
 * costing, reports, the report schedule) share, so a value the loader
 * accepts is one the module accepts, and config.c needs no store or report
 * header to check it.
 *
 * Pure: no I/O, no clock, no libpq. Ownership: nothing is allocated; the
 * tables are static.
 */
#ifndef GL_SETTINGS_H
#define GL_SETTINGS_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

#define GL_SETTINGS_MAX_THRESHOLDS 16

/* What a budget alert command may name, NULL-terminated, in the order the
 * alert fills them in: owner month threshold spend budget currency pct. */
extern const char *const gl_settings_alert_keys[];
/* 0 when every {name} in an alert command template is one of
 * gl_settings_alert_keys; else -1 and the first unknown one, braces included,
 * in bad. */
int gl_settings_alert_command_check(const char *tmpl, char *bad, size_t nbad);
/* "50,75,90,100" -> ascending, distinct, each 1..1000. */
int gl_settings_thresholds_parse(const char *s, int *out, size_t max, size_t *n, struct gl_err *err) GL_MUSTCHECK;

/* Dimensions a report may aggregate owners by, NULL-terminated. */
extern const char *const gl_settings_aggregates[];
/* "team" etc.: 1 when the dimension may be a report's aggregate. */
int gl_settings_aggregate_ok(const char *dim);

/* 1 when m is an owners[].match field (account, user, partition, qos,
 * wckey, namespace or label:<key>). */
int gl_settings_match_valid(const char *m);

/* "HH:MM" -> seconds after midnight; -GL_ECONFIG otherwise. */
int gl_settings_schedule_parse(const char *s, int64_t *secs, struct gl_err *err) GL_MUSTCHECK;

/* The report file formats; ZIP: every CSV table in one archive. */
enum gl_settings_report_format { GL_SETTINGS_REPORT_CSV, GL_SETTINGS_REPORT_HTML, GL_SETTINGS_REPORT_PDF, GL_SETTINGS_REPORT_ZIP };
/* File extension of each format, in the enum's order. */
extern const char *const gl_settings_report_ext[];

#endif
