/* gpuledger — counts of small events per client address and minute, for
 * the audit log in aggregate: one row per address, action and outcome per
 * minute with its count, instead of a row per event (a flood of refused
 * requests would otherwise fill the log and its writer's queue, and a
 * probe every second would be most of it).
 *
 * The caller names the kinds it counts (struct gl_tally_kind: the name in
 * the row's detail, the row's action and outcome, and the detail object
 * the name goes under). Rows come out of gl_tally_flush once their minute
 * is over, or all of them (the last partial minute too) when asked, at a
 * stop. Memory is bounded: at most max_addrs addresses a minute; the rest
 * of that minute's events go to one row without an address that says so.
 *
 * Pure: callers pass the time. Thread-safe (one mutex); emit runs without
 * it. Ownership: gl_tally_new's result is freed by gl_tally_free; the kinds
 * table is borrowed for the tally's life; a row and its strings are valid
 * during the emit call only.
 */
#ifndef GL_TALLY_H
#define GL_TALLY_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>

struct gl_tally_kind {
	const char *name;    /* key in the detail object ("request_line", "200") */
	const char *action;  /* audit action ("http.refused") */
	const char *outcome; /* audit outcome ("denied") */
	const char *group;   /* the detail object holding the names ("reasons") */
};

struct gl_tally_row {
	const char *addr;        /* NULL: the addresses over max_addrs */
	const char *action, *outcome;
	int64_t from_s, to_s;    /* the minute(s) counted */
	uint64_t count;
	const char *detail_json; /* {"from":..,"to":..,"count":N,"<group>":{"<name>":n,...}[,"addresses_over_limit":true]} */
};

struct gl_tally;

struct gl_tally *gl_tally_new(const struct gl_tally_kind *kinds, size_t n_kinds, size_t max_addrs);
void gl_tally_free(struct gl_tally *t);
/* One event of kind from addr at now_s. */
void gl_tally_add(struct gl_tally *t, const char *addr, size_t kind, int64_t now_s);
/* Events of kind since the tally began (for /metrics). */
uint64_t gl_tally_total(struct gl_tally *t, size_t kind);
typedef void (*gl_tally_emit_fn)(void *cls, const struct gl_tally_row *row);
/* Emits the rows of the minutes before now_s's (all: every row, the
 * current minute's too) and forgets them; returns how many. */
size_t gl_tally_flush(struct gl_tally *t, int64_t now_s, int all, gl_tally_emit_fn emit, void *cls);

#endif
