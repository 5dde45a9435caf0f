/* The connection guard (see include/gl/connguard.h). */
#include "gl/connguard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A connection's phase and since when, in one word, so the sweeper reads
 * both at once: phase in the low 4 bits, a generation (each request) in
 * the next 20, the time (ms after the guard's epoch) above. */
enum phase { PH_HEADERS = 1, PH_BODY, PH_HANDLING, PH_IDLE };
#define PH_BITS 4
#define GEN_BITS 20
#define WORD(ph, gen, ms) ((uint64_t)(ph) | ((uint64_t)((gen) & ((1u << GEN_BITS) - 1)) << PH_BITS) | \
			  ((uint64_t)(ms) << (PH_BITS + GEN_BITS)))
#define W_PHASE(w) ((enum phase)((w) & ((1u << PH_BITS) - 1)))
#define W_GEN(w) ((uint32_t)(((w) >> PH_BITS) & ((1u << GEN_BITS) - 1)))
#define W_MS(w) ((int64_t)((w) >> (PH_BITS + GEN_BITS)))

struct gl_conn {
	struct gl_conn *prev, *next;
	struct gl_connguard *g;
	char key[GL_CONNGUARD_KEY_MAX];
	int fd;
	int reserved;
	_Atomic uint64_t word;
	_Atomic uint64_t rx_mark;
	_Atomic int line_seen; /* the request under way has its line */
	_Atomic int killed;    /* enum gl_connguard_kill */
};

struct addr_slot {
	char key[GL_CONNGUARD_KEY_MAX];
	size_t n; /* 0: free */
};

struct gl_connguard {
	struct gl_connguard_cfg cfg;
	pthread_mutex_t mu;
	struct gl_conn *head;
	size_t open, reserved;
	int64_t epoch_ms; /* the first open's time: WORD keeps times relative to it */
	int have_epoch;
	struct addr_slot *slots;
	size_t nslots; /* a power of two, over twice max_total: probes stay short */
};

struct gl_connguard *gl_connguard_new(const struct gl_connguard_cfg *cfg)
{
	struct gl_connguard *g = gl_xcalloc(1, sizeof *g);
	g->cfg = *cfg;
	pthread_mutex_init(&g->mu, NULL);
	for (g->nslots = 64; g->nslots < 2 * cfg->max_total + 2; g->nslots *= 2)
		;
	g->slots = gl_xcalloc(g->nslots, sizeof *g->slots);
	return g;
}

void gl_connguard_free(struct gl_connguard *g)
{
	if (!g)
		return;
	while (g->head) {
		struct gl_conn *c = g->head;
		g->head = c->next;
		free(c);
	}
	pthread_mutex_destroy(&g->mu);
	free(g->slots);
	free(g);
}

int gl_connguard_key(const struct sockaddr *sa, char *key, size_t n)
{
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, key, (socklen_t)n);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		struct in6_addr p;
		char t[INET6_ADDRSTRLEN];
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			inet_ntop(AF_INET, &a->s6_addr[12], key, (socklen_t)n);
			return 0;
		}
		memset(&p, 0, sizeof p);
		memcpy(p.s6_addr, a->s6_addr, 8);
		inet_ntop(AF_INET6, &p, t, sizeof t);
		snprintf(key, n, "%s/64", t);
		return 0;
	}
	return -1;
}

/* The slot of key, or the free slot where it would go. Under mu. */
static struct addr_slot *slot_of(struct gl_connguard *g, const char *key)
{
	size_t i = (size_t)gl_fnv1a(key) & (g->nslots - 1);
	while (g->slots[i].n && strcmp(g->slots[i].key, key))
		i = (i + 1) & (g->nslots - 1);
	return &g->slots[i];
}

/* Empties a slot, moving back the entries of its probe run that would be
 * cut off from their home slot (linear probing's deletion). Under mu. */
static void slot_remove(struct gl_connguard *g, struct addr_slot *s)
{
	size_t i = (size_t)(s - g->slots), j = i, mask = g->nslots - 1;
	s->n = 0;
	for (;;) {
		size_t home;
		j = (j + 1) & mask;
		if (!g->slots[j].n)
			return;
		home = (size_t)gl_fnv1a(g->slots[j].key) & mask;
		/* j's entry may move to i unless its home lies in (i, j] */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		g->slots[i] = g->slots[j];
		g->slots[j].n = 0;
		i = j;
	}
}

enum gl_connguard_verdict gl_connguard_check(struct gl_connguard *g, const char *key)
{
	enum gl_connguard_verdict v = GL_CONNGUARD_ADMIT;
	pthread_mutex_lock(&g->mu);
	if (g->open >= g->cfg.max_total)
		v = GL_CONNGUARD_REFUSE_FULL;
	else if (g->open >= g->cfg.free_below && slot_of(g, key)->n >= g->cfg.per_addr)
		v = GL_CONNGUARD_REFUSE_ADDR;
	pthread_mutex_unlock(&g->mu);
	return v;
}

struct gl_conn *gl_connguard_open(struct gl_connguard *g, const char *key, int fd, int64_t now_ms)
{
	struct gl_conn *c = gl_xcalloc(1, sizeof *c);
	struct addr_slot *s;
	snprintf(c->key, sizeof c->key, "%s", key);
	c->fd = fd;
	c->g = g;
	pthread_mutex_lock(&g->mu);
	if (!g->have_epoch) {
		g->epoch_ms = now_ms;
		g->have_epoch = 1;
	}
	/* the first request's headers are due from the accept: a client
	 * connects to send one */
	atomic_store(&c->word, WORD(PH_HEADERS, 0, now_ms > g->epoch_ms ? now_ms - g->epoch_ms : 0));
	c->reserved = g->open + g->cfg.reserved >= g->cfg.max_total;
	g->reserved += (size_t)c->reserved;
	g->open++;
	s = slot_of(g, c->key);
	if (!s->n)
		snprintf(s->key, sizeof s->key, "%s", c->key);
	s->n++;
	c->next = g->head;
	if (g->head)
		g->head->prev = c;
	g->head = c;
	pthread_mutex_unlock(&g->mu);
	return c;
}

enum gl_connguard_kill gl_connguard_close(struct gl_connguard *g, struct gl_conn *c)
{
	enum gl_connguard_kill why;
	struct addr_slot *s;
	if (!c)
		return GL_CONNGUARD_ALIVE;
	pthread_mutex_lock(&g->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	g->open--;
	g->reserved -= (size_t)c->reserved;
	s = slot_of(g, c->key);
	if (s->n && --s->n == 0)
		slot_remove(g, s);
	pthread_mutex_unlock(&g->mu);
	why = (enum gl_connguard_kill)atomic_load(&c->killed);
	free(c);
	return why;
}

int gl_connguard_reserved(const struct gl_conn *c)
{
	return c->reserved;
}

enum gl_connguard_kill gl_connguard_killed(const struct gl_conn *c)
{
	return (enum gl_connguard_kill)atomic_load(&c->killed);
}

size_t gl_connguard_count(struct gl_connguard *g, size_t *reserved)
{
	size_t n;
	pthread_mutex_lock(&g->mu);
	n = g->open;
	if (reserved)
		*reserved = g->reserved;
	pthread_mutex_unlock(&g->mu);
	return n;
}

static int64_t rel_ms(const struct gl_conn *c, int64_t now_ms)
{
	/* epoch is set before any record exists and never changes after */
	return now_ms > c->g->epoch_ms ? now_ms - c->g->epoch_ms : 0;
}

/* The connection's own thread moves it on: a plain store, whatever the
 * sweeper tried meanwhile (its move is a compare-and-swap that then fails). */
static void set_phase(struct gl_conn *c, enum phase ph, int64_t since_rel, int new_request)
{
	uint64_t w = atomic_load(&c->word);
	uint32_t gen = W_GEN(w) + (new_request ? 1u : 0u);
	atomic_store(&c->word, WORD(ph, gen, since_rel));
}

void gl_connguard_request_line(struct gl_conn *c, int64_t now_ms)
{
	uint64_t w = atomic_load(&c->word);
	atomic_store(&c->line_seen, 1);
	/* already counting (from the accept, or from the sweeper's first sight
	 * of its bytes): keep the earlier start */
	if (W_PHASE(w) == PH_HEADERS)
		return;
	set_phase(c, PH_HEADERS, rel_ms(c, now_ms), 1);
}

void gl_connguard_headers_done(struct gl_conn *c, int64_t now_ms)
{
	set_phase(c, PH_BODY, rel_ms(c, now_ms), 0);
}

void gl_connguard_body_done(struct gl_conn *c)
{
	uint64_t w = atomic_load(&c->word);
	set_phase(c, PH_HANDLING, W_MS(w), 0);
}

void gl_connguard_answered(struct gl_conn *c, uint64_t rx)
{
	uint64_t w = atomic_load(&c->word);
	atomic_store(&c->rx_mark, rx);
	atomic_store(&c->line_seen, 0);
	set_phase(c, PH_IDLE, W_MS(w), 1);
}

int gl_connguard_between(const struct gl_conn *c, uint64_t *rx_mark)
{
	*rx_mark = atomic_load(&c->rx_mark);
	return !atomic_load(&c->line_seen);
}

void gl_connguard_sweep(struct gl_connguard *g, int64_t now_ms, gl_connguard_rx_fn rx, gl_connguard_kill_fn kill,
			void *cls)
{
	pthread_mutex_lock(&g->mu);
	for (struct gl_conn *c = g->head; c; c = c->next) {
		uint64_t w = atomic_load(&c->word), got;
		int64_t age = rel_ms(c, now_ms) - W_MS(w);
		enum gl_connguard_kill why = GL_CONNGUARD_ALIVE;
		if (atomic_load(&c->killed))
			continue;
		switch (W_PHASE(w)) {
		case PH_HEADERS:
			if (age >= g->cfg.header_ms)
				why = GL_CONNGUARD_HEADER_LATE;
			break;
		case PH_BODY:
			if (age >= g->cfg.body_ms)
				why = GL_CONNGUARD_BODY_LATE;
			break;
		case PH_IDLE:
			/* bytes since the last answer: a request has begun, even if
			 * its line never completes (one byte more is the FIN of a
			 * client that closed, which its I/O thread closes too) */
			if (rx && rx(c->fd, &got) == 0 && got > atomic_load(&c->rx_mark) + 1)
				atomic_compare_exchange_strong(&c->word, &w,
							       WORD(PH_HEADERS, W_GEN(w) + 1u, rel_ms(c, now_ms)));
			break;
		case PH_HANDLING:
			break;
		}
		if (why != GL_CONNGUARD_ALIVE) {
			atomic_store(&c->killed, (int)why);
			kill(cls, c->fd, why);
		}
	}
	pthread_mutex_unlock(&g->mu);
}
