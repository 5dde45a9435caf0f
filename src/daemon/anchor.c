/* The daemon's audit anchors (see include/gl/anchor.h). */
#include "gl/anchor.h"
#include "gl/store.h"
#include "gl/dbcancel.h"
#include "gl/health.h"
#include "gl/proc.h"
#include "gl/tmpl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int gl_anchor_check(struct gl_store *store, const char *path, int *checked, struct gl_audit_verify *v, struct gl_err *err)
{
	struct gl_audit_anchor *a = NULL;
	struct stat sb;
	size_t n = 0, last = 0;
	int rc;

	*checked = 0;
	memset(v, 0, sizeof *v);
	v->ok = 1;
	/* the first start writes the first anchor: nothing to check yet */
	if (stat(path, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
		return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	}
	if (sb.st_size == 0)
		return 0;
	if ((rc = gl_audit_anchors_read(path, &a, &n, err)))
		return rc;
	if (n == 0) { /* only heads of an empty log (seq 0) */
		free(a);
		return 0;
	}
	for (size_t i = 1; i < n; i++)
		if (a[i].seq >= a[last].seq)
			last = i;
	/* the anchored row must still hash to it, and the rows after it follow
	 * from it: a rewrite before it (recomputed onwards), a truncation or a
	 * deleted tail all change or remove that row */
	rc = gl_audit_verify_range(store, a[last].seq, INT64_MAX, &a[last], 1, v, err);
	if (!rc)
		*checked = 1;
	free(a);
	return rc;
}

/* Runs audit.anchor_command with the anchor's fields; 0 when it exited 0. */
static int publish(const struct gl_config *cfg, const char *line, struct gl_err *err)
{
	char seq[24] = "", hash[80] = "", at[40] = "", text[256];
	char **words = NULL, **argv = NULL;
	size_t n = 0;
	struct gl_proc_opts po = {0};
	struct gl_proc_result res;
	int rc;

	snprintf(text, sizeof text, "%.*s", (int)strcspn(line, "\n"), line);
	if (sscanf(text, "seq %23s hash %79s at %39s", seq, hash, at) != 3)
		return gl_err_set(err, GL_EINVAL, "anchor command: unexpected anchor line '%s'", text);
	if ((rc = gl_tmpl_split(cfg->audit_anchor_command, &words, &n, err)))
		return rc;
	{
		const struct gl_tmpl_var vars[] = {
			{"line", text}, {"seq", seq}, {"hash", hash}, {"at", at}, {"file", cfg->audit_anchor_file},
		};
		argv = gl_xcalloc(n + 1, sizeof *argv);
		for (size_t i = 0; i < n; i++)
			argv[i] = gl_tmpl_expand(words[i], vars, GL_ARRAY_LEN(vars));
	}
	po.timeout_s = 30;
	if (!(rc = gl_proc_run((const char *const *)argv, &po, &res, err)) && !(res.exited && res.status == 0)) {
		char how[96];
		gl_proc_describe(&res, how, sizeof how);
		rc = gl_err_set(err, GL_EIO, "anchor command %s: %s%s%.200s", argv[0], how,
				res.stderr_bytes ? ": " : "", res.stderr_excerpt);
	}
	gl_tmpl_words_free(argv);
	gl_tmpl_words_free(words);
	return rc;
}

void gl_anchor_tick(struct gl_store *store, const struct gl_config *cfg, struct gl_anchor_state *st, int64_t now_s, int last)
{
	struct gl_err err = {0};
	struct gl_dbcancel_slot slot = {0};
	struct gl_audit_verify v;
	char line[256];
	int rc, checked = 0;

	if (!cfg->audit_anchor_file[0])
		return;
	/* a reconnect keeps the session's settings (UTC, the instance name
	 * the fence reads) */
	if (gl_store_revive(store, &err)) {
		gl_log_fail(&st->check, now_s, GL_LOG_ERROR, "audit: anchor: %s", err.msg);
		return;
	}
	/* a stop cancels the periodic one like the sources' work; the last one,
	 * after the stop, waits at most 5 s instead (the session ends with it) */
	if (last && gl_store_statement_timeout(store, "5s", &err))
		gl_log(GL_LOG_WARN, "audit: anchor: %s", err.msg);
	if (!last)
		gl_dbcancel_begin(&slot, store, GL_DBCANCEL_WORK, "audit anchor");
	rc = gl_anchor_check(store, cfg->audit_anchor_file, &checked, &v, &err);
	if (!rc && checked) {
		gl_health_anchor_report(v.ok, now_s);
		if (!v.ok) {
			/* no anchor over a chain that no longer holds: a fresh one
			 * would make the rewrite pass every later check */
			gl_dbcancel_end(&slot);
			gl_log_fail(&st->check, now_s, GL_LOG_ERROR,
				    "audit: the chain does not match its last anchor in %s: %s (seq %lld); no anchor is"
				    " written until it does (docs/security.md, \"Anchors are always checked\")",
				    cfg->audit_anchor_file, v.reason, (long long)v.bad_seq);
			return;
		}
		gl_log_ok(&st->check, "audit: anchor check");
	}
	if (!rc)
		rc = gl_audit_anchor_append(store, cfg->audit_anchor_file, now_s, line, sizeof line, &err);
	gl_dbcancel_end(&slot);
	if (rc && !last && gl_dbcancel_requested(GL_DBCANCEL_WORK)) {
		/* not a fault: the stop's own anchor comes next */
		gl_log(GL_LOG_INFO, "audit anchor: cut short by the stop (the last one follows): %s", err.msg);
		return;
	}
	if (rc) {
		/* an unreadable file cannot vouch for the chain either */
		if (!checked)
			gl_health_anchor_report(-1, now_s);
		gl_log_fail(&st->lim, now_s, GL_LOG_ERROR, "audit: anchor: %s", err.msg);
		return;
	}
	if (!checked)
		gl_health_anchor_report(1, now_s);
	gl_log(GL_LOG_DEBUG, "audit: anchor %s", line);
	if (cfg->audit_anchor_command[0] && publish(cfg, line, &err)) {
		gl_health_anchor_publish_failed();
		gl_log_fail(&st->lim, now_s, GL_LOG_ERROR, "audit: %s (the anchor stays in %s)", err.msg,
			    cfg->audit_anchor_file);
		return;
	}
	gl_log_ok(&st->lim, "audit: anchor");
}
