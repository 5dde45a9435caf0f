/* Statements planned once per session (see src/store/plancache_int.h). */
#include "plancache_int.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* This thread's marked session and the statements prepared on it; and,
 * while a read transaction is open on it, the answers given in it. */
static _Thread_local struct {
	PGconn *c;
	int pid;
	size_t n;
	uint64_t h[GL_PLANCACHE_MAX];
	int in_read;
	size_t nmemo;
	struct {
		uint64_t key;
		PGresult *r;
	} memo[GL_PLANCACHE_MEMO];
} t_pc;

/* The statements this thread prepared by gl_plancache_query_generic, each
 * with the session (c, backend pid) it is prepared on: a thread may use
 * several sessions in turn, and a name prepared twice on one backend
 * would fail (and abort the caller's transaction). */
static _Thread_local struct {
	size_t n;
	struct {
		PGconn *c;
		int pid;
		uint64_t h;
	} s[GL_PLANCACHE_MAX];
} t_gp;

static void memo_clear(void)
{
	for (size_t i = 0; i < t_pc.nmemo; i++)
		PQclear(t_pc.memo[i].r);
	t_pc.nmemo = 0;
}

void gl_plancache_enable(PGconn *c, int on)
{
	if (on && t_pc.c == c)
		return;
	memo_clear();
	memset(&t_pc, 0, sizeof t_pc);
	if (on)
		t_pc.c = c;
}

int gl_plancache_marked(PGconn *c)
{
	return c && t_pc.c == c;
}

void gl_plancache_read_txn(PGconn *c, int open)
{
	memo_clear();
	t_pc.in_read = open && c && t_pc.c == c;
	if (t_pc.in_read && t_pc.pid != PQbackendPID(c)) {
		t_pc.n = 0; /* as gl_plancache_query does on a new backend */
		t_pc.pid = PQbackendPID(c);
	}
}

/* FNV-1a, from h: the statement's name; two texts sharing one would need
 * 2^32 statements in a session */
static uint64_t hash_more(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static uint64_t text_hash(const char *s)
{
	return hash_more(14695981039346656037ULL, s);
}

/* The statement and its parameters (a NULL apart from every text). */
static uint64_t call_hash(uint64_t h, int nparams, const char *const *params)
{
	for (int i = 0; i < nparams; i++)
		h = params[i] ? hash_more(h * 31 + 1, params[i]) * 31 + 2 : h * 31 + 3;
	return h;
}

/* An answer already given in this read transaction: a copy into *res. */
static int memo_get(PGconn *c, uint64_t key, PGresult **res)
{
	if (!t_pc.in_read || PQtransactionStatus(c) != PQTRANS_INTRANS)
		return 0;
	for (size_t i = 0; i < t_pc.nmemo; i++)
		if (t_pc.memo[i].key == key) {
			if (res)
				*res = PQcopyResult(t_pc.memo[i].r, PG_COPYRES_ATTRS | PG_COPYRES_TUPLES);
			return !res || *res;
		}
	return 0;
}

static void memo_put(PGconn *c, uint64_t key, const PGresult *r)
{
	if (!t_pc.in_read || !r || PQtransactionStatus(c) != PQTRANS_INTRANS || t_pc.nmemo == GL_PLANCACHE_MEMO)
		return;
	if ((t_pc.memo[t_pc.nmemo].r = PQcopyResult(r, PG_COPYRES_ATTRS | PG_COPYRES_TUPLES)))
		t_pc.memo[t_pc.nmemo++].key = key;
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

int gl_plancache_seeding(PGconn *c)
{
	return c && t_pc.c == c && t_pc.in_read && t_pc.pid == PQbackendPID(c) &&
	       PQtransactionStatus(c) == PQTRANS_INTRANS;
}

int gl_plancache_seed(PGconn *c, const char *sql, int nparams, const char *const *params, const PGresult *r)
{
	size_t before = t_pc.nmemo;
	if (!gl_plancache_seeding(c))
		return 0;
	memo_put(c, call_hash(text_hash(sql), nparams, params), r);
	return t_pc.nmemo > before;
}

int gl_plancache_query(PGconn *c, const char *sql, int nparams, const char *const *params, PGresult **res,
		       struct gl_err *err)
{
	uint64_t h = text_hash(sql), key;
	char name[32];
	size_t i;
	int rc, prepared = 0;

	if (res)
		*res = NULL;
	if (!c || t_pc.c != c)
		return gl_db_query(c, sql, nparams, params, res, err);
	if (t_pc.pid != PQbackendPID(c)) {
		/* a new backend (a reset): nothing is prepared there, and the
		 * old one's answers are not this one's */
		t_pc.n = 0;
		t_pc.pid = PQbackendPID(c);
		memo_clear();
	}
	key = call_hash(h, nparams, params);
	if (memo_get(c, key, res))
		return 0;
	for (i = 0; i < t_pc.n && t_pc.h[i] != h; i++)
		;
	if (i == t_pc.n && t_pc.n == GL_PLANCACHE_MAX)
		return gl_db_query(c, sql, nparams, params, res, err);
	snprintf(name, sizeof name, "gl_pc_%016llx", (unsigned long long)h);
	/* a statement prepared and then failing stays prepared */
	rc = run_prepared(c, name, i == t_pc.n, &prepared, sql, nparams, params, res, err);
	if (prepared)
		t_pc.h[t_pc.n++] = h;
	if (!rc && res)
		memo_put(c, key, *res);
	return rc;
}

int gl_plancache_query_generic(PGconn *c, const char *sql, int nparams, const char *const *params, PGresult **res,
			       struct gl_err *err)
{
	uint64_t h = text_hash(sql);
	char name[48];
	size_t i;
	int rc, prepared = 0, pid;

	if (res)
		*res = NULL;
	if (!c || t_pc.c == c)
		return gl_db_query(c, sql, nparams, params, res, err);
	pid = PQbackendPID(c);
	for (i = 0; i < t_gp.n && (t_gp.s[i].h != h || t_gp.s[i].c != c || t_gp.s[i].pid != pid); i++)
		;
	if (i == t_gp.n && t_gp.n == GL_PLANCACHE_MAX)
		return gl_db_query(c, sql, nparams, params, res, err);
	/* the thread in the name too: a session another thread used may hold
	 * that thread's statements, which this list does not know of */
	snprintf(name, sizeof name, "gl_pg_%016llx_%llx", (unsigned long long)h, (unsigned long long)(uintptr_t)&t_gp);
	rc = run_prepared(c, name, i == t_gp.n, &prepared, sql, nparams, params, res, err);
	if (prepared) {
		t_gp.s[t_gp.n].c = c;
		t_gp.s[t_gp.n].pid = pid;
		t_gp.s[t_gp.n++].h = h;
	}
	return rc;
}
