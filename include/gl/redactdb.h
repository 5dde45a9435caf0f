/* gpuledger — blanking credentials in rows stored before the redaction
 * (include/gl/redact.h) caught them: `gpuledger db redact`.
 *
 * Runs gl_redact_secrets over every stored column that quotes a source's
 * command line, a target's URL or an error text — ingest_runs.input,
 * .error and every string in .skip_reasons — and over the idle hook's
 * commands (hook_actions.argv, by gl_redact_argv, and .stderr,
 * hook_stages.error), in one transaction, and appends one `db.redact`
 * audit row in it. Rows whose text is already
 * clean are left as they are, so a second run changes nothing. A row the
 * daemon changes meanwhile (a running run finishing) is left to the
 * daemon, which writes it cleaned. audit_log is never rewritten: its rows
 * are hash-chained (docs/security.md); the hook.* rows an older version
 * wrote with a command's credentials keep them.
 *
 * Ownership: results are caller-owned structs; nothing to free.
 */
#ifndef GL_REDACTDB_H
#define GL_REDACTDB_H

#include "gl/common.h"

#include <stdint.h>

struct gl_store;

struct gl_redactdb_result {
	int64_t examined;      /* ingest_runs rows with an input, error or skip reason */
	int64_t changed;       /* rows written back */
	int64_t input, error, skip_reasons; /* of those, with that column changed */
	int64_t raced;         /* changed by someone else between read and write: left alone */
	int64_t hook_examined; /* hook_actions rows */
	int64_t hook_changed;  /* of those, written back */
	int64_t hook_argv, hook_stderr; /* of those, with that column changed */
	int64_t stage_errors;  /* hook_stages rows whose error was written back */
};

/* dry_run: counts, writes nothing (no audit row either). actor: the audit
 * row's ("cli:<user>"). c must be idle (no open transaction). */
int gl_redactdb_run(struct gl_store *st, const char *actor, int dry_run, struct gl_redactdb_result *res,
		    struct gl_err *err) GL_MUSTCHECK;

#endif
