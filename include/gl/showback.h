/* gpuledger — the monthly showback / chargeback report, gathered once per
 * month from the database into its data model (sbmodel.h). Every renderer
 * (CSV, HTML, PDF) reads that model and nothing else, so every format shows the same
 * numbers, and the owner totals are those of /v1/chargeback for the month
 * (the same store function, one step, the same dimension and shareIdle).
 *
 * Ownership: struct gl_sbmodel owns every array and string in it;
 * gl_showback_fini() frees them. gl_showback_gather() borrows the connection
 * and opens (and closes) a second one to the same database for the per-job
 * query, which runs beside the chargebacks; without it, it runs on the
 * first after them.
 */
#ifndef GL_SHOWBACK_H
#define GL_SHOWBACK_H

#include "gl/chargeback.h"
#include "gl/common.h"
#include "gl/config.h"
#include "gl/sbmodel.h"
#include "gl/settings.h"

#include <stdint.h>

struct gl_store;

struct gl_showback_req {
	char month[8];             /* "YYYY-MM" */
	const char *aggregate;     /* one of gl_settings_aggregates */
	enum gl_chargeback_share_idle share;
	const char *currency;      /* from the config, for display */
	int64_t now_s;
	const struct gl_config *cfg; /* budgets; may be NULL */
};

/* Parses "YYYY-MM" into the month's first second; -GL_EINVAL otherwise. */
int gl_showback_month_parse(const char *s, int64_t *start_s, struct gl_err *err) GL_MUSTCHECK;

/* Gathers the whole report. A month that starts after now_s, or that ends
 * before the first GPU job, is -GL_EINVAL with err naming the month; the
 * latter also sets sb->no_data, so a scheduler can tell "nothing to
 * report" from a real failure. */
int gl_showback_gather(struct gl_store *st, const struct gl_showback_req *req, struct gl_sbmodel *sb,
		       struct gl_err *err) GL_MUSTCHECK;
void gl_showback_fini(struct gl_sbmodel *sb);

/* Narrows a gathered report to the owners named (a token's scope on the
 * report's aggregate, docs/security.md): their rows, models, waits, top
 * jobs, inference and owner rules stay; __idle__, __unallocated__, other
 * owners, partition waits, the capacity outlook, the rates' owners' rules
 * and the notes on the fleet's data go. The fleet's figures become the
 * sums of the owners kept, with no idle and no capacity (another owner's
 * figures follow from the fleet's); a note says the report is scoped. */
void gl_showback_restrict(struct gl_sbmodel *sb, const char *const *owners, size_t n);

#endif
