/* gpuledger — a ledger sharded over PostgreSQL servers (docs/scale.md,
 * "Sharding over PostgreSQL servers"; sql/059).
 *
 * A shard is a whole gpuledger database holding some sites' clusters,
 * written by its own daemon (ingest and rollup), its ids in the range of
 * its index (gl_shard_local_init). The central database attaches each
 * shard over postgres_fdw (gl_shard_attach; a connect_timeout of
 * GL_SHARD_CONNECT_TIMEOUT s unless its DSN says) and reads them all in one
 * query: gl_shard_route probes the shards, points the session's
 * search_path at the schema whose fact tables have a foreign partition
 * for each shard that answered, and says which shards and clusters it
 * could not read, so an answer can name them instead of summing them as 0.
 *
 * Ownership: a route's strings and arrays are its own; gl_shard_route_fini
 * frees them (and is a no-op on a zeroed route).
 */
#ifndef GL_SHARD_H
#define GL_SHARD_H

#include "gl/common.h"
#include "gl/store.h"

#include <stddef.h>
#include <stdint.h>

#define GL_SHARD_MAX 62
/* seconds: a shard's connect_timeout when its DSN gives none */
#define GL_SHARD_CONNECT_TIMEOUT "5"

struct gl_shard_route {
	uint64_t mask;          /* bit k - 1: shard k was read */
	char **unread_shards;   /* names, by index */
	size_t n_unread_shards;
	char **unread_clusters; /* names last seen on those shards, sorted */
	size_t n_unread_clusters;
	char *unread_text;      /* "clusters a, b (shard s down)" for messages; NULL when all answered */
};

/* On a shard, before its first ingest: ids start in shard k's range. */
int gl_shard_local_init(struct gl_store *st, int k, struct gl_err *err) GL_MUSTCHECK;
/* Number of shards attached to this (central) database: 0 = not central. */
int gl_shard_count(struct gl_store *st, int *n, struct gl_err *err) GL_MUSTCHECK;
/* Attaches shard k named name (lower case letters, digits, _) reached with
 * the libpq conninfo dsn: its user and password become the user mapping of
 * the connected role, the rest the foreign server's options. Needs the
 * postgres_fdw extension and USAGE on it (a superuser's one-time step). */
int gl_shard_attach(struct gl_store *st, int k, const char *name, const char *dsn, struct gl_err *err) GL_MUSTCHECK;
/* A superuser's step on a central (docs/security.md, "A central's
 * connections to its shards"; run by `audit harden`, and by `migrate` on
 * the embedded cluster): the dblink extension moved into schema gl_dblink
 * (sql/143), which only the owner may use, EXECUTE on its functions the
 * owner's alone, and gl_audit_partitions_drop's search_path pinned
 * whoever owns it. *moved = 1 when dblink was in another schema. A no-op
 * before sql/143; st must be a superuser's session. */
int gl_shard_dblink_private(struct gl_store *st, int *moved, struct gl_err *err) GL_MUSTCHECK;
/* *yes = 1 when dblink is installed in a schema other than gl_dblink,
 * where the central does not use it (any role could drive its sessions'
 * connections). */
int gl_shard_dblink_public(struct gl_store *st, int *yes, struct gl_err *err) GL_MUSTCHECK;
/* Probes the shards and routes this session's reads (see above). */
int gl_shard_route(struct gl_store *st, struct gl_shard_route *rt, struct gl_err *err) GL_MUSTCHECK;
/* Routes this session's reads to the shards of mask (a route's, probed by
 * another session: include/gl/fleetstate.h) without connecting to any. */
int gl_shard_use(struct gl_store *st, uint64_t mask, struct gl_err *err) GL_MUSTCHECK;
/* On a session routed by gl_shard_use: opens its connections to every
 * shard of the route (postgres_fdw's and dblink's) and has each shard run
 * the capacity check once, so that none of it waits for a request
 * (sql/122); *last_built_s: the last day every shard holds built (epoch
 * seconds), -1 when none. A no-op (-1) on a session not routed to shards. */
int gl_shard_warm(struct gl_store *st, int64_t *last_built_s, struct gl_err *err) GL_MUSTCHECK;
/* dst becomes a copy of src (dst's old strings freed). */
void gl_shard_route_copy(struct gl_shard_route *dst, const struct gl_shard_route *src);
void gl_shard_route_fini(struct gl_shard_route *rt);

#endif
