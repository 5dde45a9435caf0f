/* gpuledger — the idle-GPU shutdown hook (docs/hook.md): finds running jobs
 * whose GPUs idle under a policy (from the exporter rollups and their
 * indexes, never raw samples), warns and acts through command templates
 * once per job and stage (state in hook_stages, sql/013_hook.sql), under a
 * database advisory lock (and optionally flock) so overlapping cron runs
 * never act twice, and audits every decision and command.
 *
 * Ownership: the report is a cJSON tree the caller frees with cJSON_Delete.
 * cfg and the connection are borrowed.
 */
#ifndef GL_HOOK_H
#define GL_HOOK_H

#include "gl/common.h"
#include "gl/config.h"

#include <cjson/cJSON.h>
#include <stdint.h>

struct gl_store;

/* Exit codes of `gpuledger hook idle` (cron wrappers rely on them). */
#define GL_HOOK_EXIT_OK 0          /* nothing to do, or everything done */
#define GL_HOOK_EXIT_ERROR 1       /* runtime error, a failed command, or the circuit breaker */
#define GL_HOOK_EXIT_USAGE 2       /* usage error: --policy names no policy */
#define GL_HOOK_EXIT_CANDIDATES 3  /* dry-run found candidates */

struct gl_hook_opts {
	const char *policy;   /* only this policy; NULL = all */
	int act;              /* --act (acting also needs cfg->hook_act) */
	int audit;            /* append decision rows (the CLI; the API's request row suffices) */
	const char *actor;    /* audit actor; NULL = the process actor */
};

/* One run at now_s. *report gets {"mode", "now", "candidates", "no_data",
 * "spared", "actions", "breaker", "errors", ...} (docs/hook.md) even when
 * some command failed; *exit_code one of GL_HOOK_EXIT_*. A non-zero return
 * is an error (database, unreadable allow-list; a --policy naming no policy
 * sets *exit_code to GL_HOOK_EXIT_USAGE) with nothing acted on after it;
 * *report may then be NULL. */
int gl_hook_run(struct gl_store *st, const struct gl_config *cfg, const struct gl_hook_opts *o, int64_t now_s, cJSON **report,
		int *exit_code, struct gl_err *err) GL_MUSTCHECK;

/* Records an action taken elsewhere (POST /v1/hook/actions): a hook_actions
 * row, the job's stage marked done when ok (so the hook does not repeat it)
 * and an audit row, in one transaction. body is the request's JSON object;
 * errors (-GL_EINVAL) name the field in *param. *out gets the stored row
 * and "policy_known" (the policy is one of cfg's hook.policies; a controller
 * may use names of its own, which are kept, not refused). An owner left out
 * (or "") is stored as unknown (NULL). */
int gl_hook_record(struct gl_store *st, const struct gl_config *cfg, const char *body, size_t len, const char *actor,
		   int64_t now_s, cJSON **out, const char **param, struct gl_err *err) GL_MUSTCHECK;

/* Actions of hook_actions in [from, to), newest first, at most limit:
 * {"actions": [{"at", "cluster", "job_id", "owner" (null: not known),
 * "policy", "policy_known" (a policy of cfg's hook.policies), "stage",
 * "command", "argv", "exit_status", "ok", "source", "actor", "stderr"}]}. */
int gl_hook_actions_list(struct gl_store *st, const struct gl_config *cfg, int64_t from_s, int64_t to_s, long limit,
			 cJSON **out, struct gl_err *err) GL_MUSTCHECK;

#endif
