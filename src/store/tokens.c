/* API tokens (see include/gl/tokens.h). */
#include "gl/tokens.h"
#include "gl/chargeback.h"
#include "gl/audit.h"
#include "db_int.h"
#include "gl/pgarray.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int gl_tokens_generate(char out[GL_TOKENS_LEN + 1], struct gl_err *err)
{
	unsigned char raw[33]; /* 32 random + 1 zero pad byte: 264 bits = 44 sextets, we emit 43 */
	size_t got = 0, o;
	while (got < 32) {
		ssize_t r = getrandom(raw + got, 32 - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return gl_err_set(err, GL_EIO, "token: getrandom: %s", strerror(errno));
		got += (size_t)r;
	}
	raw[32] = 0;
	memcpy(out, GL_TOKENS_PREFIX, 4);
	o = 4;
	for (size_t i = 0; i < 33 && o < GL_TOKENS_LEN; i += 3) {
		uint32_t v = (uint32_t)raw[i] << 16 | (uint32_t)(i + 1 < 33 ? raw[i + 1] : 0) << 8 |
			     (uint32_t)(i + 2 < 33 ? raw[i + 2] : 0);
		for (int k = 18; k >= 0 && o < GL_TOKENS_LEN; k -= 6)
			out[o++] = b64url[(v >> k) & 63];
	}
	out[GL_TOKENS_LEN] = '\0';
	memset(raw, 0, sizeof raw);
	return 0;
}

int gl_tokens_wellformed(const char *s)
{
	if (strncmp(s, GL_TOKENS_PREFIX, 4) != 0 || strlen(s) != GL_TOKENS_LEN)
		return 0;
	for (size_t i = 4; i < GL_TOKENS_LEN; i++)
		if (!strchr(b64url, s[i]) || !s[i])
			return 0;
	return 1;
}

void gl_tokens_sha256(const char *token, unsigned char out[32])
{
	unsigned int n = 0;
	if (!EVP_Digest(token, strlen(token), out, &n, EVP_sha256(), NULL) || n != 32)
		abort();
}

int gl_tokens_owner_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= GL_TOKENS_OWNER_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x21 || c == 0x7f || c == '"' || c == '\\' || c == '{' || c == '}' || c == ',')
			return 0;
	}
	return 1;
}

const char *const gl_tokens_scope_dims[] = {"team", "project", "cost_center", "account", "namespace", "user", NULL};

static const char *scope_dim(const char *s, size_t n)
{
	for (size_t i = 0; gl_tokens_scope_dims[i]; i++)
		if (strlen(gl_tokens_scope_dims[i]) == n && !strncmp(gl_tokens_scope_dims[i], s, n))
			return gl_tokens_scope_dims[i];
	return NULL;
}

int gl_tokens_scope_arg(const char *arg, struct gl_tokens_scope *out, struct gl_err *err)
{
	const char *eq = strchr(arg, '='), *v;
	size_t n;
	if (!eq)
		return gl_err_set(err, GL_EINVAL, "--scope '%s': expected DIM=VALUE (DIM: team, project, cost_center, "
				  "account, namespace or user)", arg);
	n = (size_t)(eq - arg);
	v = eq + 1;
	if (n == 5 && !strncmp(arg, "owner", 5))
		out->dim = "team"; /* the one-dimensional form: its owners were teams */
	else if (!(out->dim = scope_dim(arg, n)))
		return gl_err_set(err, GL_EINVAL, "--scope '%s': unknown dimension '%.*s' (team, project, cost_center, "
				  "account, namespace or user)", arg, (int)n, arg);
	if (!*v)
		return gl_err_set(err, GL_EINVAL, "--scope '%s': empty value for dimension '%s'", arg, out->dim);
	if (!gl_tokens_owner_valid(v))
		return gl_err_set(err, GL_EINVAL, "--scope '%s': bad value '%s' for dimension '%s' (1..63 bytes, no "
				  "spaces, quotes, backslashes, commas or braces)", arg, v, out->dim);
	/* no owner has that name: the scope would show nothing, or the
	 * synthetic row where a month's rows name it */
	if (gl_chargeback_name_reserved(v))
		return gl_err_set(err, GL_EINVAL, "--scope '%s': '%s' is the name of a synthetic row (__idle__, "
				  "__unallocated__), not an owner", arg, v);
	snprintf(out->value, sizeof out->value, "%s", v);
	return 0;
}

size_t gl_tokens_scope_values(const struct gl_tokens_scope *sc, size_t n, const char *dim, const char **vals)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k < GL_TOKENS_MAX_OWNERS; i++)
		if (!strcmp(sc[i].dim, dim))
			vals[k++] = sc[i].value;
	return k;
}

void gl_tokens_scope_arrays(const struct gl_tokens_scope *sc, size_t n, struct gl_strbuf *b,
			   const char *lit[GL_TOKENS_SCOPE_DIMS])
{
	for (size_t d = 0; d < GL_TOKENS_SCOPE_DIMS; d++) {
		const char *vals[GL_TOKENS_MAX_OWNERS];
		size_t k = gl_tokens_scope_values(sc, n, gl_tokens_scope_dims[d], vals);
		lit[d] = k ? gl_pgarray_texts(&b[d], vals, k) : NULL;
	}
}

void gl_tokens_scope_sql(struct gl_strbuf *sql, const char *const cols[GL_TOKENS_SCOPE_DIMS], int first)
{
	for (int d = 0; d < GL_TOKENS_SCOPE_DIMS; d++)
		gl_strbuf_printf(sql, " AND ($%d::text[] IS NULL OR %s = ANY($%d::text[]))", first + d, cols[d], first + d);
}

static size_t dim_rank(const char *dim)
{
	size_t i = 0;
	while (gl_tokens_scope_dims[i] && strcmp(gl_tokens_scope_dims[i], dim))
		i++;
	return i;
}

static int scope_add(struct gl_tokens_info *t, const cJSON *key, const cJSON *it, struct gl_err *err)
{
	const char *dim = scope_dim(key->string, strlen(key->string));
	if (!dim || !cJSON_IsString(it) || !gl_tokens_owner_valid(it->valuestring) || gl_chargeback_name_reserved(it->valuestring) ||
	    t->n_scope == GL_TOKENS_MAX_OWNERS)
		return gl_err_set(err, GL_EINVAL, "token %lld: bad scopes.%s entry", (long long)t->id, key->string);
	t->scope[t->n_scope].dim = dim;
	snprintf(t->scope[t->n_scope].value, GL_TOKENS_OWNER_MAX, "%s", it->valuestring);
	t->n_scope++;
	return 0;
}

int gl_tokens_scopes_parse(const char *json, struct gl_tokens_info *t, struct gl_err *err)
{
	cJSON *j = cJSON_Parse(json), *key, *it;
	int rc = 0;
	t->n_scope = 0;
	if (!j || !cJSON_IsObject(j)) {
		rc = gl_err_set(err, GL_EINVAL, "token %lld: scopes is not a JSON object", (long long)t->id);
		goto out;
	}
	cJSON_ArrayForEach(key, j)
	{
		if (!cJSON_IsArray(key) || !cJSON_GetArraySize(key)) {
			rc = gl_err_set(err, GL_EINVAL, "token %lld: scopes.%s is not a list of values", (long long)t->id,
					key->string);
			goto out;
		}
		cJSON_ArrayForEach(it, key)
		{
			if ((rc = scope_add(t, key, it, err)))
				goto out;
		}
	}
	/* jsonb keeps its keys by length: show them in the dimensions' order */
	for (size_t i = 1; i < t->n_scope; i++)
		for (size_t k = i; k > 0 && dim_rank(t->scope[k].dim) < dim_rank(t->scope[k - 1].dim); k--) {
			struct gl_tokens_scope x = t->scope[k];
			t->scope[k] = t->scope[k - 1];
			t->scope[k - 1] = x;
		}
out:
	/* a token whose scope failed to parse must never act unscoped */
	if (rc)
		t->n_scope = 0;
	cJSON_Delete(j);
	return rc;
}

/* {"team": [...], ...}: one list per dimension, in gl_tokens_scope_dims order. */
static cJSON *scope_json(const struct gl_tokens_scope *scope, size_t n)
{
	cJSON *sj = cJSON_CreateObject();
	for (size_t d = 0; gl_tokens_scope_dims[d]; d++) {
		const char *vals[GL_TOKENS_MAX_OWNERS];
		size_t k = gl_tokens_scope_values(scope, n, gl_tokens_scope_dims[d], vals);
		if (k)
			cJSON_AddItemToObject(sj, gl_tokens_scope_dims[d], cJSON_CreateStringArray(vals, (int)k));
	}
	return sj;
}

static int64_t opt_time(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? GL_TIME_NONE : atoll(PQgetvalue(r, row, col));
}

int gl_tokens_create(struct gl_store *st, const char *name, const char *role, int64_t expires_s,
		    const struct gl_tokens_scope *scope, size_t n_scope, const char *actor, char token_out[GL_TOKENS_LEN + 1],
		    int64_t *id_out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	unsigned char h[32];
	char hex[2 + 64 + 1], exp[32], *scopes = NULL, *detail = NULL;
	cJSON *sj = NULL, *dj = cJSON_CreateObject();
	PGresult *r = NULL;
	int rc;

	if (n_scope > GL_TOKENS_MAX_OWNERS) {
		rc = gl_err_set(err, GL_EINVAL, "token: at most %d scope values", GL_TOKENS_MAX_OWNERS);
		goto out;
	}
	for (size_t i = 0; i < n_scope; i++) {
		struct gl_tokens_scope chk;
		char arg[16 + GL_TOKENS_OWNER_MAX];
		snprintf(arg, sizeof arg, "%s=%s", scope[i].dim ? scope[i].dim : "", scope[i].value);
		if ((rc = gl_tokens_scope_arg(arg, &chk, err)))
			goto out;
	}
	sj = scope_json(scope, n_scope);
	if ((rc = gl_tokens_generate(token_out, err)))
		goto out;
	gl_tokens_sha256(token_out, h);
	hex[0] = '\\', hex[1] = 'x';
	gl_audit_hex(h, hex + 2);
	if (expires_s != GL_TIME_NONE)
		gl_timeutil_format(expires_s, exp, sizeof exp);
	scopes = cJSON_PrintUnformatted(sj);
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	/* the unique index would refuse it too, but in the INSERT's words */
	if ((rc = gl_db_query(c, "SELECT 1 FROM api_tokens WHERE name = $1 AND revoked_at IS NULL", 1,
			      (const char *[]){name}, &r, err)))
		goto rollback;
	if (PQntuples(r) > 0) {
		rc = gl_err_set(err, GL_EINVAL, "token create: a live token is already named '%s' (revoke it or pick another name)",
				name);
		goto rollback;
	}
	PQclear(r);
	r = NULL;
	if ((rc = gl_db_query(c,
			      "INSERT INTO api_tokens (name, token_sha256, role, scopes, expires_at)"
			      " VALUES ($1, $2::bytea, $3, $4::jsonb, $5::timestamptz) RETURNING token_id",
			      5, (const char *[]){name, hex, role, scopes, expires_s == GL_TIME_NONE ? NULL : exp}, &r,
			      err)))
		goto rollback;
	*id_out = atoll(PQgetvalue(r, 0, 0));
	cJSON_AddNumberToObject(dj, "token_id", (double)*id_out);
	cJSON_AddStringToObject(dj, "name", name);
	cJSON_AddStringToObject(dj, "role", role);
	cJSON_AddItemToObject(dj, "scopes", cJSON_Duplicate(sj, 1));
	if (expires_s != GL_TIME_NONE)
		cJSON_AddStringToObject(dj, "expires", exp);
	detail = cJSON_PrintUnformatted(dj);
	{
		char obj[48];
		snprintf(obj, sizeof obj, "token:%lld", (long long)*id_out);
		if ((rc = gl_audit_append(gl_db_store(c), actor, NULL, "token.create", obj, "ok", detail, err)))
			goto rollback;
	}
	rc = gl_db_exec(c, "COMMIT", err);
	goto out;
rollback:
	PQclear(PQexec(c, "ROLLBACK"));
	memset(token_out, 0, GL_TOKENS_LEN + 1);
out:
	PQclear(r);
	cJSON_Delete(sj);
	cJSON_Delete(dj);
	cJSON_free(scopes);
	cJSON_free(detail);
	return rc;
}

int gl_tokens_revoke(struct gl_store *st, const char *id_or_name, const char *actor, int64_t *id_out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int by_id = *id_or_name != '\0' && strspn(id_or_name, "0123456789") == strlen(id_or_name) &&
		    strlen(id_or_name) < 19;
	char obj[48], *detail = NULL;
	cJSON *dj = NULL;
	int rc;

	if ((rc = gl_db_exec(c, "BEGIN", err)))
		return rc;
	if ((rc = gl_db_query(c,
			      by_id ? "UPDATE api_tokens SET revoked_at = now() WHERE token_id = $1::bigint"
				      " AND revoked_at IS NULL RETURNING token_id, name, role"
				    : "UPDATE api_tokens SET revoked_at = now() WHERE name = $1"
				      " AND revoked_at IS NULL RETURNING token_id, name, role",
			      1, (const char *[]){id_or_name}, &r, err)))
		goto rollback;
	if (PQntuples(r) != 1) {
		rc = gl_err_set(err, GL_ENOTFOUND, "token revoke: no live token with %s '%s'", by_id ? "id" : "name",
				id_or_name);
		goto rollback;
	}
	*id_out = atoll(PQgetvalue(r, 0, 0));
	dj = cJSON_CreateObject();
	cJSON_AddNumberToObject(dj, "token_id", (double)*id_out);
	cJSON_AddStringToObject(dj, "name", PQgetvalue(r, 0, 1));
	cJSON_AddStringToObject(dj, "role", PQgetvalue(r, 0, 2));
	detail = cJSON_PrintUnformatted(dj);
	snprintf(obj, sizeof obj, "token:%lld", (long long)*id_out);
	if ((rc = gl_audit_append(gl_db_store(c), actor, NULL, "token.revoke", obj, "ok", detail, err)))
		goto rollback;
	rc = gl_db_exec(c, "COMMIT", err);
	goto out;
rollback:
	PQclear(PQexec(c, "ROLLBACK"));
out:
	PQclear(r);
	cJSON_Delete(dj);
	cJSON_free(detail);
	return rc;
}

#define TOKEN_COLS                                                                                                     \
	"token_id, name, role, scopes::text, extract(epoch FROM created_at)::bigint,"                                  \
	" extract(epoch FROM expires_at)::bigint, extract(epoch FROM revoked_at)::bigint,"                            \
	" extract(epoch FROM last_used_at)::bigint"

static int fill(PGresult *r, int i, struct gl_tokens_info *t, struct gl_err *err)
{
	memset(t, 0, sizeof *t);
	t->id = atoll(PQgetvalue(r, i, 0));
	snprintf(t->name, sizeof t->name, "%s", PQgetvalue(r, i, 1));
	snprintf(t->role, sizeof t->role, "%s", PQgetvalue(r, i, 2));
	t->created_s = opt_time(r, i, 4);
	t->expires_s = opt_time(r, i, 5);
	t->revoked_s = opt_time(r, i, 6);
	t->last_used_s = opt_time(r, i, 7);
	return gl_tokens_scopes_parse(PQgetvalue(r, i, 3), t, err);
}

int gl_tokens_list(struct gl_store *st, struct gl_tokens_info **out, size_t *n, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;
	*out = NULL;
	*n = 0;
	if ((rc = gl_db_query(c, "SELECT " TOKEN_COLS " FROM api_tokens ORDER BY token_id", 0, NULL, &r, err)))
		return rc;
	*out = gl_xcalloc((size_t)PQntuples(r) + 1, sizeof **out);
	for (int i = 0; i < PQntuples(r); i++) {
		struct gl_err e2 = {0};
		/* a bad scopes value must not hide the token from the list */
		(void)!fill(r, i, &(*out)[i], &e2);
		(*n)++;
	}
	PQclear(r);
	return 0;
}

int gl_tokens_lookup(struct gl_store *st, const unsigned char hash[32], struct gl_tokens_info *out, int *found,
		    struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char hex[2 + 64 + 1];
	PGresult *r = NULL;
	int rc;
	*found = 0;
	hex[0] = '\\', hex[1] = 'x';
	gl_audit_hex(hash, hex + 2);
	/* touching last_used_at here costs one write per cache miss, not per request */
	if ((rc = gl_db_query(c,
			      "WITH t AS (SELECT * FROM api_tokens WHERE token_sha256 = $1::bytea),"
			      " u AS (UPDATE api_tokens a SET last_used_at = now() FROM t WHERE a.token_id = t.token_id"
			      "   AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()))"
			      " SELECT " TOKEN_COLS " FROM t",
			      1, (const char *[]){hex}, &r, err)))
		return rc;
	if (PQntuples(r) == 1) {
		rc = fill(r, 0, out, err);
		*found = 1;
	}
	PQclear(r);
	return rc;
}
