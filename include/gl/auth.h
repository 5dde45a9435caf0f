/* gpuledger — access control for the API: the role lattice, the per-address
 * limiter of failed authentications, and the short-lived token cache.
 * Pure (no clock, no database): callers pass now_s, which keeps these
 * testable without timing.
 *
 * Ownership: _new() results are freed by the matching _free(); NULL is a
 * no-op. All functions on a limiter or cache are thread-safe.
 */
#ifndef GL_AUTH_H
#define GL_AUTH_H

#include "gl/common.h"
#include "gl/tokens.h"

#include <stdint.h>

/* Token roles: viewer | finance | admin | hook. */
int gl_auth_role_valid(const char *role);
/* 1 when the route's role string is "public" (no token at all). */
int gl_auth_route_public(const char *route_roles);
/* The lattice (docs/security.md): admin may do everything; finance ⊇ viewer;
 * hook is its own branch (hook routes only). route_roles is a route's least
 * role, or several joined by '|' ("finance|hook") when two branches share a
 * route. Unknown names allow nobody (fail closed). */
int gl_auth_role_allows(const char *token_role, const char *route_roles);

/* ---- failed-authentication limiter, per source address ---- */
struct gl_auth_ratelimit;
/* max_failures within window_s block the address for block_s. */
struct gl_auth_ratelimit *gl_auth_ratelimit_new(size_t slots, int max_failures, int64_t window_s, int64_t block_s);
void gl_auth_ratelimit_free(struct gl_auth_ratelimit *rl);
/* 1 while addr is blocked. */
int gl_auth_ratelimit_blocked(struct gl_auth_ratelimit *rl, const char *addr, int64_t now_s);
/* Counts a failure; returns 1 when this failure starts a block. */
int gl_auth_ratelimit_fail(struct gl_auth_ratelimit *rl, const char *addr, int64_t now_s);

/* ---- request-rate limiter, per source address (token bucket) ----
 * Each address may send burst requests at once and rate_per_s after that.
 * Refusals are counted and audited in aggregate by the server (one row per
 * address and minute), never one by one: a flood would fill the audit
 * queue and slow every other client. */
struct gl_auth_reqlimit;
/* rate_per_s 0: everything is allowed. */
struct gl_auth_reqlimit *gl_auth_reqlimit_new(size_t slots, double rate_per_s, double burst);
void gl_auth_reqlimit_free(struct gl_auth_reqlimit *rl);
/* 0: allowed; 1: refused. */
int gl_auth_reqlimit_take(struct gl_auth_reqlimit *rl, const char *addr, int64_t now_ms);

/* ---- token cache, keyed by the token's SHA-256 ---- */
struct gl_auth_cache;
struct gl_auth_cache *gl_auth_cache_new(size_t slots, int64_t ttl_s);
void gl_auth_cache_free(struct gl_auth_cache *c);
/* 1 on a fresh hit: *found says whether the token exists, *t its row. */
int gl_auth_cache_get(struct gl_auth_cache *c, const unsigned char key[32], int64_t now_s, int *found,
		      struct gl_tokens_info *t);
/* While the database cannot be reached: 1 when the token was found in the
 * database (by a put with t) less than max_age_s ago, *t its row as it was
 * then. Unknown hashes and tokens never verified never hit. */
int gl_auth_cache_get_verified(struct gl_auth_cache *c, const unsigned char key[32], int64_t now_s,
				int64_t max_age_s, struct gl_tokens_info *t);
/* t NULL: remember that the hash is unknown (for ttl_s as well). */
void gl_auth_cache_put(struct gl_auth_cache *c, const unsigned char key[32], int64_t now_s,
		       const struct gl_tokens_info *t);

#endif
