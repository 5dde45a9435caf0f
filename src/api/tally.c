/* Per-address, per-minute event counts (see include/gl/tally.h). */
#include "gl/tally.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDR_MAX 64
/* finished minutes kept for the flusher; past this they merge into the
 * newest one kept (its rows then span several minutes, and say so) */
#define MAX_PENDING 8

struct entry {
	char addr[ADDR_MAX]; /* "" for the overflow entry */
	int used;
	uint64_t *counts;    /* n_kinds */
};

/* One minute's (or, merged, a few minutes') counts. */
struct table {
	int64_t from_s, to_s;
	struct entry *e;   /* nslots, open addressing; e[nslots] is the overflow entry */
	uint64_t *mem;     /* the counts of all entries */
	size_t n_used;
	struct table *next;
};

struct gl_tally {
	const struct gl_tally_kind *kinds;
	size_t n_kinds, max_addrs, nslots;
	pthread_mutex_t mu;
	struct table *cur;
	struct table *pending; /* oldest first */
	size_t n_pending;
	uint64_t *totals;
};

static struct table *table_new(const struct gl_tally *t, int64_t minute_s)
{
	struct table *tb = gl_xcalloc(1, sizeof *tb);
	tb->from_s = minute_s;
	tb->to_s = minute_s + 60;
	tb->e = gl_xcalloc(t->nslots + 1, sizeof *tb->e);
	tb->mem = gl_xcalloc((t->nslots + 1) * t->n_kinds, sizeof *tb->mem);
	for (size_t i = 0; i <= t->nslots; i++)
		tb->e[i].counts = tb->mem + i * t->n_kinds;
	return tb;
}

static void table_free(struct table *tb)
{
	if (!tb)
		return;
	free(tb->e);
	free(tb->mem);
	free(tb);
}

struct gl_tally *gl_tally_new(const struct gl_tally_kind *kinds, size_t n_kinds, size_t max_addrs)
{
	struct gl_tally *t = gl_xcalloc(1, sizeof *t);
	t->kinds = kinds;
	t->n_kinds = n_kinds;
	t->max_addrs = max_addrs ? max_addrs : 1;
	for (t->nslots = 16; t->nslots < 2 * t->max_addrs; t->nslots *= 2)
		;
	t->totals = gl_xcalloc(n_kinds, sizeof *t->totals);
	pthread_mutex_init(&t->mu, NULL);
	return t;
}

void gl_tally_free(struct gl_tally *t)
{
	if (!t)
		return;
	table_free(t->cur);
	while (t->pending) {
		struct table *n = t->pending->next;
		table_free(t->pending);
		t->pending = n;
	}
	pthread_mutex_destroy(&t->mu);
	free(t->totals);
	free(t);
}

/* addr's entry in tb; the overflow entry once max_addrs are taken. */
static struct entry *entry_of(const struct gl_tally *t, struct table *tb, const char *addr)
{
	size_t i = (size_t)gl_fnv1a(addr) & (t->nslots - 1);
	while (tb->e[i].used && strcmp(tb->e[i].addr, addr))
		i = (i + 1) & (t->nslots - 1);
	if (tb->e[i].used)
		return &tb->e[i];
	if (tb->n_used >= t->max_addrs) {
		tb->e[t->nslots].used = 1;
		return &tb->e[t->nslots];
	}
	tb->e[i].used = 1;
	snprintf(tb->e[i].addr, sizeof tb->e[i].addr, "%s", addr);
	tb->n_used++;
	return &tb->e[i];
}

/* Adds src's counts into dst (both of t's shape). */
static void table_merge(const struct gl_tally *t, struct table *dst, const struct table *src)
{
	for (size_t i = 0; i <= t->nslots; i++) {
		const struct entry *s = &src->e[i];
		struct entry *d;
		if (!s->used)
			continue;
		d = i == t->nslots ? (dst->e[t->nslots].used = 1, &dst->e[t->nslots]) : entry_of(t, dst, s->addr);
		for (size_t k = 0; k < t->n_kinds; k++)
			d->counts[k] += s->counts[k];
	}
	if (src->to_s > dst->to_s)
		dst->to_s = src->to_s;
	if (src->from_s < dst->from_s)
		dst->from_s = src->from_s;
}

/* The current minute ends: its table waits for the flusher. Under mu. */
static void retire_cur(struct gl_tally *t)
{
	struct table *last = t->pending;
	if (!t->cur)
		return;
	while (last && last->next)
		last = last->next;
	if (t->n_pending >= MAX_PENDING && last) {
		table_merge(t, last, t->cur);
		table_free(t->cur);
	} else if (last) {
		last->next = t->cur;
		t->n_pending++;
	} else {
		t->pending = t->cur;
		t->n_pending = 1;
	}
	t->cur = NULL;
}

void gl_tally_add(struct gl_tally *t, const char *addr, size_t kind, int64_t now_s)
{
	int64_t minute = now_s - (now_s % 60 + 60) % 60;
	if (kind >= t->n_kinds)
		return;
	pthread_mutex_lock(&t->mu);
	if (t->cur && minute >= t->cur->to_s)
		retire_cur(t);
	if (!t->cur)
		t->cur = table_new(t, minute);
	entry_of(t, t->cur, addr ? addr : "")->counts[kind]++;
	t->totals[kind]++;
	pthread_mutex_unlock(&t->mu);
}

uint64_t gl_tally_total(struct gl_tally *t, size_t kind)
{
	uint64_t n;
	if (kind >= t->n_kinds)
		return 0;
	pthread_mutex_lock(&t->mu);
	n = t->totals[kind];
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* One row per (action, outcome) among e's counts. */
static size_t emit_entry(const struct gl_tally *t, const struct table *tb, const struct entry *e, int overflow,
			 gl_tally_emit_fn emit, void *cls)
{
	unsigned char done[64] = {0};
	size_t rows = 0;
	char from[32], to[32];
	gl_timeutil_format(tb->from_s, from, sizeof from);
	gl_timeutil_format(tb->to_s, to, sizeof to);
	for (size_t k = 0; k < t->n_kinds && k < sizeof done; k++) {
		struct gl_strbuf d = GL_STRBUF_INIT;
		struct gl_tally_row row;
		const char *group = NULL;
		uint64_t sum = 0;
		if (done[k] || !e->counts[k])
			continue;
		/* the kinds sharing k's row, in table order */
		for (size_t j = k; j < t->n_kinds && j < sizeof done; j++)
			if (e->counts[j] && !strcmp(t->kinds[j].action, t->kinds[k].action) &&
			    !strcmp(t->kinds[j].outcome, t->kinds[k].outcome))
				sum += e->counts[j];
		gl_strbuf_printf(&d, "{\"from\":\"%s\",\"to\":\"%s\",\"count\":%llu", from, to, (unsigned long long)sum);
		for (size_t j = k; j < t->n_kinds && j < sizeof done; j++) {
			if (!e->counts[j] || strcmp(t->kinds[j].action, t->kinds[k].action) ||
			    strcmp(t->kinds[j].outcome, t->kinds[k].outcome))
				continue;
			if (!group || strcmp(group, t->kinds[j].group)) {
				gl_strbuf_printf(&d, "%s,\"%s\":{", group ? "}" : "", t->kinds[j].group);
				group = t->kinds[j].group;
			} else {
				gl_strbuf_putc(&d, ',');
			}
			gl_strbuf_printf(&d, "\"%s\":%llu", t->kinds[j].name, (unsigned long long)e->counts[j]);
			done[j] = 1;
		}
		gl_strbuf_puts(&d, group ? "}" : "");
		if (overflow)
			gl_strbuf_puts(&d, ",\"addresses_over_limit\":true");
		gl_strbuf_putc(&d, '}');
		row = (struct gl_tally_row){overflow ? NULL : e->addr, t->kinds[k].action, t->kinds[k].outcome,
					    tb->from_s, tb->to_s, sum, gl_strbuf_cstr(&d)};
		emit(cls, &row);
		gl_strbuf_fini(&d);
		rows++;
	}
	return rows;
}

size_t gl_tally_flush(struct gl_tally *t, int64_t now_s, int all, gl_tally_emit_fn emit, void *cls)
{
	int64_t minute = now_s - (now_s % 60 + 60) % 60;
	struct table *list;
	size_t rows = 0;
	pthread_mutex_lock(&t->mu);
	if (t->cur && (all || minute >= t->cur->to_s))
		retire_cur(t);
	list = t->pending;
	t->pending = NULL;
	t->n_pending = 0;
	pthread_mutex_unlock(&t->mu);
	while (list) {
		struct table *next = list->next;
		for (size_t i = 0; i <= t->nslots; i++)
			if (list->e[i].used)
				rows += emit_entry(t, list, &list->e[i], i == t->nslots, emit, cls);
		table_free(list);
		list = next;
	}
	return rows;
}
