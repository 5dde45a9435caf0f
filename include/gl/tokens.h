/* gpuledger — API tokens: generation, storage (SHA-256 only), lookup.
 *
 * A token is "glt_" + 43 base64url characters (256 random bits). It is shown
 * once by `gpuledger token create`; the database keeps SHA-256 of the whole
 * string. Nothing here logs or stores a token.
 *
 * Ownership: gl_tokens_list() returns an array the caller frees with free();
 * everything else fills caller-owned structs.
 */
#ifndef GL_TOKENS_H
#define GL_TOKENS_H

#include "gl/common.h"

#include <stdint.h>

struct gl_store;

#define GL_TOKENS_PREFIX "glt_"
#define GL_TOKENS_LEN 47          /* strlen(prefix) + 43 */
#define GL_TOKENS_MAX_OWNERS 16   /* scope values per token, over all dimensions */
#define GL_TOKENS_OWNER_MAX 64    /* bytes incl. NUL */
#define GL_TOKENS_NAME_MAX 128

/* The owner dimensions a token may be scoped to, NULL-terminated:
 * team, project, cost_center, account, namespace, user. */
extern const char *const gl_tokens_scope_dims[];

/* One value of a token's scope: dim is one of gl_tokens_scope_dims. A
 * scope allows a row when, for every dimension it names, the row's value
 * is one of that dimension's values (OR within a dimension, AND across),
 * which is the API's filter syntax with the same meaning. */
struct gl_tokens_scope {
	const char *dim;             /* static: an element of gl_tokens_scope_dims */
	char value[GL_TOKENS_OWNER_MAX];
};

struct gl_tokens_info {
	int64_t id;
	char name[GL_TOKENS_NAME_MAX];
	char role[16];
	size_t n_scope;              /* 0: not scoped, sees every owner */
	struct gl_tokens_scope scope[GL_TOKENS_MAX_OWNERS];
	int64_t created_s, expires_s, revoked_s, last_used_s; /* GL_TIME_NONE when unset */
};

/* 256 bits from getrandom(2). */
int gl_tokens_generate(char out[GL_TOKENS_LEN + 1], struct gl_err *err) GL_MUSTCHECK;
/* 1 when s has the token shape (prefix, length, alphabet); cheap reject. */
int gl_tokens_wellformed(const char *s);
void gl_tokens_sha256(const char *token, unsigned char out[32]);
/* Parses the scopes column ({"team": ["vision"], "project": [...]}) into
 * t; a key that is no scope dimension, an empty list or a bad value is an
 * error (a token whose scope cannot be read must never act unscoped). */
int gl_tokens_scopes_parse(const char *json, struct gl_tokens_info *t, struct gl_err *err) GL_MUSTCHECK;
/* Checks an owner name given to --scope: 1..63 bytes, no control chars, no
 * characters that would need quoting in an array literal. */
int gl_tokens_owner_valid(const char *s);
/* Parses one --scope argument, DIM=VALUE, into *out. owner=VALUE, the
 * form before scopes had dimensions, means team=VALUE. -GL_EINVAL with a
 * message naming the dimension or the value when either is unknown,
 * empty, malformed or a synthetic row's name (__idle__, __unallocated__). */
int gl_tokens_scope_arg(const char *arg, struct gl_tokens_scope *out, struct gl_err *err) GL_MUSTCHECK;
/* The values of dimension dim in a scope, in order, into vals (at most
 * GL_TOKENS_MAX_OWNERS); returns how many (0: the scope does not name dim). */
size_t gl_tokens_scope_values(const struct gl_tokens_scope *sc, size_t n, const char *dim, const char **vals);

/* For store queries: the scope's values of each dimension, in
 * gl_tokens_scope_dims' order, as text[] literals in b[0..5] (six strbufs;
 * NULL in lit for a dimension it does not name; the caller finis b), and
 * the condition
 * " AND ($first::text[] IS NULL OR cols[0] = ANY($first)) AND ..." over the
 * six columns (fixed SQL text of the caller's, one per dimension in that
 * order) with the parameters $first..$first+5. */
#define GL_TOKENS_SCOPE_DIMS 6
struct gl_strbuf;
void gl_tokens_scope_arrays(const struct gl_tokens_scope *sc, size_t n, struct gl_strbuf *b,
			   const char *lit[GL_TOKENS_SCOPE_DIMS]);
void gl_tokens_scope_sql(struct gl_strbuf *sql, const char *const cols[GL_TOKENS_SCOPE_DIMS], int first);

/* Creates a token, stores its hash and appends a "token.create" audit row in
 * the same transaction. expires_s may be GL_TIME_NONE. */
int gl_tokens_create(struct gl_store *st, const char *name, const char *role, int64_t expires_s,
		    const struct gl_tokens_scope *scope, size_t n_scope, const char *actor, char token_out[GL_TOKENS_LEN + 1], int64_t *id_out,
		    struct gl_err *err) GL_MUSTCHECK;
/* Revokes by id (all digits) or by live name; audited. -GL_ENOTFOUND when
 * nothing live matches. */
int gl_tokens_revoke(struct gl_store *st, const char *id_or_name, const char *actor, int64_t *id_out,
		    struct gl_err *err) GL_MUSTCHECK;
int gl_tokens_list(struct gl_store *st, struct gl_tokens_info **out, size_t *n, struct gl_err *err) GL_MUSTCHECK;
/* Looks a token up by hash (the index compares hashes, never tokens). *found
 * is 0 for an unknown hash. Revoked and expired tokens are returned with
 * their dates so callers can say why; last_used_at is touched only for a
 * live token. */
int gl_tokens_lookup(struct gl_store *st, const unsigned char hash[32], struct gl_tokens_info *out, int *found,
		    struct gl_err *err) GL_MUSTCHECK;

#endif
