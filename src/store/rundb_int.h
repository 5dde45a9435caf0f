/* gpuledger — the training runs' part of a rollup build, for the build in
 * src/store/accounting.c alone (see include/gl/rundb.h, docs/runs.md).
 *
 * Ownership: days is the caller's.
 */
#ifndef GL_RUNDB_INT_H
#define GL_RUNDB_INT_H

#include "gl/common.h"

#include <libpq-fe.h>

/* Inside a build's transaction, after the days' usage_daily_job: the
 * members of the days' jobs (each job's run under the stored run_rules,
 * computed by the domain's grouping and COPYed; written when changed), the
 * days' usage_daily_run from their per-job lines (the changed ones), the
 * months' usage_monthly_run moved by their difference, the changed runs'
 * month rows, and the days' usage_daily_run_built markers. days: a date[]
 * literal. */
int gl_rundb_build_days(PGconn *c, const char *days, struct gl_err *err) GL_MUSTCHECK;

#endif
