/* Role lattice, failure limiter, token cache (see include/gl/auth.h). */
#include "gl/auth.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PROBE 8

int gl_auth_role_valid(const char *role)
{
	return role && (!strcmp(role, "viewer") || !strcmp(role, "finance") || !strcmp(role, "admin") ||
			!strcmp(role, "hook"));
}

int gl_auth_route_public(const char *route_roles)
{
	return route_roles && !strcmp(route_roles, "public");
}

static int allows_one(const char *tok, const char *need, size_t n)
{
#define IS(lit) (n == sizeof(lit) - 1 && !strncmp(need, lit, n))
	if (IS("public"))
		return 1;
	if (!strcmp(tok, "admin"))
		return IS("viewer") || IS("finance") || IS("hook") || IS("admin");
	if (!strcmp(tok, "finance"))
		return IS("viewer") || IS("finance");
	if (!strcmp(tok, "viewer"))
		return IS("viewer");
	if (!strcmp(tok, "hook"))
		return IS("hook");
	return 0;
#undef IS
}

int gl_auth_role_allows(const char *token_role, const char *route_roles)
{
	const char *p = route_roles;
	if (!token_role || !route_roles || !gl_auth_role_valid(token_role))
		return 0;
	for (;;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);
		if (allows_one(token_role, p, n))
			return 1;
		if (!bar)
			return 0;
		p = bar + 1;
	}
}

/* ---- limiter ---- */

struct rl_slot {
	char addr[48];
	int64_t window_start, blocked_until, last_s;
	int failures;
};

struct gl_auth_ratelimit {
	pthread_mutex_t mu;
	struct rl_slot *slots;
	size_t n;
	int max_failures;
	int64_t window_s, block_s;
};

struct gl_auth_ratelimit *gl_auth_ratelimit_new(size_t slots, int max_failures, int64_t window_s, int64_t block_s)
{
	struct gl_auth_ratelimit *rl = gl_xcalloc(1, sizeof *rl);
	pthread_mutex_init(&rl->mu, NULL);
	rl->n = slots < PROBE ? PROBE : slots;
	rl->slots = gl_xcalloc(rl->n, sizeof *rl->slots);
	rl->max_failures = max_failures;
	rl->window_s = window_s;
	rl->block_s = block_s;
	return rl;
}

void gl_auth_ratelimit_free(struct gl_auth_ratelimit *rl)
{
	if (!rl)
		return;
	pthread_mutex_destroy(&rl->mu);
	free(rl->slots);
	free(rl);
}

/* The slot for addr, or NULL. With create, an empty or the stalest slot in
 * the probe range is taken over: a flood of addresses can evict, but never
 * grow memory. */
static struct rl_slot *rl_find(struct gl_auth_ratelimit *rl, const char *addr, int create)
{
	size_t base = (size_t)(gl_fnv1a(addr) % rl->n);
	struct rl_slot *victim = NULL;
	for (size_t i = 0; i < PROBE; i++) {
		struct rl_slot *s = &rl->slots[(base + i) % rl->n];
		if (s->addr[0] && !strcmp(s->addr, addr))
			return s;
		if (!victim || (!s->addr[0] && victim->addr[0]) || (s->addr[0] && victim->addr[0] && s->last_s < victim->last_s))
			victim = s;
	}
	if (!create)
		return NULL;
	memset(victim, 0, sizeof *victim);
	strncpy(victim->addr, addr, sizeof victim->addr - 1);
	return victim;
}

int gl_auth_ratelimit_blocked(struct gl_auth_ratelimit *rl, const char *addr, int64_t now_s)
{
	struct rl_slot *s;
	int b;
	pthread_mutex_lock(&rl->mu);
	s = rl_find(rl, addr, 0);
	b = s && s->blocked_until > now_s;
	pthread_mutex_unlock(&rl->mu);
	return b;
}

int gl_auth_ratelimit_fail(struct gl_auth_ratelimit *rl, const char *addr, int64_t now_s)
{
	struct rl_slot *s;
	int started = 0;
	pthread_mutex_lock(&rl->mu);
	s = rl_find(rl, addr, 1);
	if (s->failures == 0 || now_s - s->window_start >= rl->window_s) {
		s->window_start = now_s;
		s->failures = 0;
	}
	s->failures++;
	s->last_s = now_s;
	if (s->failures >= rl->max_failures && s->blocked_until <= now_s) {
		s->blocked_until = now_s + rl->block_s;
		started = 1;
	}
	pthread_mutex_unlock(&rl->mu);
	return started;
}

/* ---- request-rate limiter ---- */

struct rq_slot {
	char addr[48];
	double tokens;
	int64_t last_ms;
};

struct gl_auth_reqlimit {
	pthread_mutex_t mu;
	struct rq_slot *slots;
	size_t n;
	double rate_per_ms, burst;
};

struct gl_auth_reqlimit *gl_auth_reqlimit_new(size_t slots, double rate_per_s, double burst)
{
	struct gl_auth_reqlimit *rl = gl_xcalloc(1, sizeof *rl);
	pthread_mutex_init(&rl->mu, NULL);
	rl->n = slots < PROBE ? PROBE : slots;
	rl->slots = gl_xcalloc(rl->n, sizeof *rl->slots);
	rl->rate_per_ms = rate_per_s / 1000.0;
	rl->burst = burst < 1 ? 1 : burst;
	return rl;
}

void gl_auth_reqlimit_free(struct gl_auth_reqlimit *rl)
{
	if (!rl)
		return;
	pthread_mutex_destroy(&rl->mu);
	free(rl->slots);
	free(rl);
}

/* Same eviction rule as rl_find: bounded memory whatever the address mix.
 * An evicted address comes back with a full bucket, which only ever errs
 * towards serving. */
static struct rq_slot *rq_find(struct gl_auth_reqlimit *rl, const char *addr, int64_t now_ms)
{
	size_t base = (size_t)(gl_fnv1a(addr) % rl->n);
	struct rq_slot *victim = NULL;
	for (size_t i = 0; i < PROBE; i++) {
		struct rq_slot *s = &rl->slots[(base + i) % rl->n];
		if (s->addr[0] && !strcmp(s->addr, addr))
			return s;
		if (!victim || (!s->addr[0] && victim->addr[0]) ||
		    (s->addr[0] && victim->addr[0] && s->last_ms < victim->last_ms))
			victim = s;
	}
	memset(victim, 0, sizeof *victim);
	strncpy(victim->addr, addr, sizeof victim->addr - 1);
	victim->tokens = rl->burst;
	victim->last_ms = now_ms;
	return victim;
}

int gl_auth_reqlimit_take(struct gl_auth_reqlimit *rl, const char *addr, int64_t now_ms)
{
	struct rq_slot *s;
	int refused;
	if (!rl || rl->rate_per_ms <= 0)
		return 0;
	pthread_mutex_lock(&rl->mu);
	s = rq_find(rl, addr, now_ms);
	if (now_ms > s->last_ms) {
		s->tokens += (double)(now_ms - s->last_ms) * rl->rate_per_ms;
		if (s->tokens > rl->burst)
			s->tokens = rl->burst;
		s->last_ms = now_ms;
	}
	refused = s->tokens < 1.0;
	if (!refused)
		s->tokens -= 1.0;
	pthread_mutex_unlock(&rl->mu);
	return refused;
}

/* ---- token cache ---- */

struct cache_slot {
	unsigned char key[32];
	int used, found;
	int64_t fetched_s;
	struct gl_tokens_info t;
};

struct gl_auth_cache {
	pthread_mutex_t mu;
	struct cache_slot *slots;
	size_t n;
	int64_t ttl_s;
};

struct gl_auth_cache *gl_auth_cache_new(size_t slots, int64_t ttl_s)
{
	struct gl_auth_cache *c = gl_xcalloc(1, sizeof *c);
	pthread_mutex_init(&c->mu, NULL);
	c->n = slots < PROBE ? PROBE : slots;
	c->slots = gl_xcalloc(c->n, sizeof *c->slots);
	c->ttl_s = ttl_s;
	return c;
}

void gl_auth_cache_free(struct gl_auth_cache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->mu);
	free(c->slots);
	free(c);
}

static size_t key_base(const struct gl_auth_cache *c, const unsigned char key[32])
{
	uint64_t h;
	memcpy(&h, key, sizeof h); /* a SHA-256 is already uniform */
	return (size_t)(h % c->n);
}

/* The slot holding key, or NULL; the caller holds c->mu. */
static struct cache_slot *find_slot(struct gl_auth_cache *c, const unsigned char key[32])
{
	size_t base = key_base(c, key);
	for (size_t i = 0; i < PROBE; i++) {
		struct cache_slot *s = &c->slots[(base + i) % c->n];
		if (s->used && CRYPTO_memcmp(s->key, key, 32) == 0)
			return s;
	}
	return NULL;
}

int gl_auth_cache_get(struct gl_auth_cache *c, const unsigned char key[32], int64_t now_s, int *found,
		      struct gl_tokens_info *t)
{
	struct cache_slot *s;
	int hit = 0;
	pthread_mutex_lock(&c->mu);
	if ((s = find_slot(c, key)) && now_s - s->fetched_s < c->ttl_s && now_s >= s->fetched_s) {
		*found = s->found;
		if (s->found)
			*t = s->t;
		hit = 1;
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

int gl_auth_cache_get_verified(struct gl_auth_cache *c, const unsigned char key[32], int64_t now_s,
				int64_t max_age_s, struct gl_tokens_info *t)
{
	struct cache_slot *s;
	int hit = 0;
	pthread_mutex_lock(&c->mu);
	/* fetched_s only moves when the database answered: a stale hit never
	 * extends the grace */
	if ((s = find_slot(c, key)) && s->found && now_s - s->fetched_s < max_age_s && now_s >= s->fetched_s) {
		*t = s->t;
		hit = 1;
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

void gl_auth_cache_put(struct gl_auth_cache *c, const unsigned char key[32], int64_t now_s,
		       const struct gl_tokens_info *t)
{
	size_t base = key_base(c, key);
	struct cache_slot *victim = NULL;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < PROBE; i++) {
		struct cache_slot *s = &c->slots[(base + i) % c->n];
		if (s->used && CRYPTO_memcmp(s->key, key, 32) == 0) {
			victim = s;
			break;
		}
		if (!victim || (!s->used && victim->used) || (s->used && victim->used && s->fetched_s < victim->fetched_s))
			victim = s;
	}
	memcpy(victim->key, key, 32);
	victim->used = 1;
	victim->fetched_s = now_s;
	victim->found = t != NULL;
	if (t)
		victim->t = *t;
	pthread_mutex_unlock(&c->mu);
}
