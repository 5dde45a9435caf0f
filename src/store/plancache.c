/* Statements planned once per session (see src/store/plancache_int.h). */
#include "plancache_int.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* This thread's marked session and the statements prepared on it. */
static _Thread_local struct {
	PGconn *c;
	int pid;
	size_t n;
	uint64_t h[GL_PLANCACHE_MAX];
} t_pc;

void gl_plancache_enable(PGconn *c, int on)
{
	if (on && t_pc.c == c)
		return;
	memset(&t_pc, 0, sizeof t_pc);
	if (on)
		t_pc.c = c;
}

int gl_plancache_marked(PGconn *c)
{
	return c && t_pc.c == c;
}

/* FNV-1a: the statement's name; two texts sharing one would need 2^32
 * statements in a session */
static uint64_t text_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The results of one pipeline up to its sync: the statement's (index
 * want among those sent) into *res, the first error into err; *prepared
 * says whether the Prepare (index want - 1 when fresh) was made. */
static int pipeline_results(PGconn *c, int nsent, int want, int fresh, int *prepared, const char *sql,
			    PGresult **res, struct gl_err *err)
{
	char what[64];
	int rc = 0;
	snprintf(what, sizeof what, "%.40s", sql);
	for (int i = 0; i < nsent; i++) {
		PGresult *r, *keep = NULL;
		while ((r = PQgetResult(c))) {
			ExecStatusType st = PQresultStatus(r);
			int good = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
			if (fresh && i == want - 1 && good)
				*prepared = 1;
			if (!rc && !good)
				rc = gl_db_fail(c, st == PGRES_PIPELINE_ABORTED ? NULL : r, what, err);
			if (i == want && !keep && st == PGRES_TUPLES_OK)
				keep = r;
			else
				PQclear(r);
		}
		if (keep && res && !rc)
			*res = keep;
		else
			PQclear(keep);
	}
	/* the sync's own result */
	for (PGresult *r; (r = PQgetResult(c));)
		PQclear(r);
	return rc;
}

/* Prepares (when fresh) and runs the statement in one round trip:
 * plan_cache_mode is the transaction's for the run alone, and set back
 * before the sync, so that a caller's open transaction keeps the default
 * (a statement that fails aborts the transaction anyway). */
static int run_prepared(PGconn *c, const char *name, int fresh, int *prepared, const char *sql, int nparams,
			const char *const *params, PGresult **res, struct gl_err *err)
{
	int n = 0, want, ok = PQenterPipelineMode(c);
	ok = ok && PQsendQueryParams(c, "SELECT set_config('plan_cache_mode', 'force_generic_plan', true)", 0, NULL,
				     NULL, NULL, NULL, 0);
	n += ok;
	if (ok && fresh && (ok = PQsendPrepare(c, name, sql, nparams, NULL)))
		n++;
	want = n;
	if (ok && (ok = PQsendQueryPrepared(c, name, nparams, params, NULL, NULL, 0)))
		n++;
	if (ok && (ok = PQsendQueryParams(c, "SELECT set_config('plan_cache_mode', 'auto', true)", 0, NULL, NULL, NULL,
					  NULL, 0)))
		n++;
	if (!PQpipelineSync(c))
		ok = 0;
	int rc = pipeline_results(c, n, want, fresh, prepared, sql, res, err);
	if (!PQexitPipelineMode(c) && !rc)
		rc = gl_db_fail(c, NULL, "pipeline", err);
	if (!ok && !rc)
		rc = gl_db_fail(c, NULL, "pipeline", err);
	return rc;
}

int gl_plancache_query(PGconn *c, const char *sql, int nparams, const char *const *params, PGresult **res,
		       struct gl_err *err)
{
	uint64_t h = text_hash(sql);
	char name[32];
	size_t i;
	int rc, prepared = 0;

	if (res)
		*res = NULL;
	if (!c || t_pc.c != c)
		return gl_db_query(c, sql, nparams, params, res, err);
	if (t_pc.pid != PQbackendPID(c)) {
		/* a new backend (a reset): nothing is prepared there */
		t_pc.n = 0;
		t_pc.pid = PQbackendPID(c);
	}
	for (i = 0; i < t_pc.n && t_pc.h[i] != h; i++)
		;
	if (i == t_pc.n && t_pc.n == GL_PLANCACHE_MAX)
		return gl_db_query(c, sql, nparams, params, res, err);
	snprintf(name, sizeof name, "gl_pc_%016llx", (unsigned long long)h);
	/* a statement prepared and then failing stays prepared */
	rc = run_prepared(c, name, i == t_pc.n, &prepared, sql, nparams, params, res, err);
	if (prepared)
		t_pc.h[t_pc.n++] = h;
	return rc;
}
