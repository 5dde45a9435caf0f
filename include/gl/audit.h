/* gpuledger — the tamper-evident audit log (docs/security.md).
 *
 * Every row is chained: hash = SHA-256(prev_hash ‖ canonical(row)), where the
 * canonical encoding is a fixed netstring-style layout an outsider can
 * recompute. Appenders serialise on one advisory lock and read the head
 * inside the same transaction, so concurrent appenders never fork the chain.
 *
 * Ownership: entries passed in are borrowed (the async writer copies them).
 * gl_audit_writer_start() returns a writer the caller stops and frees with
 * gl_audit_writer_stop(). Results are caller-owned structs; nothing returned
 * needs freeing unless stated.
 */
#ifndef GL_AUDIT_H
#define GL_AUDIT_H

#include "gl/common.h"
#include "gl/strbuf.h"

#include <stdint.h>

struct gl_store;

#define GL_AUDIT_HASH_LEN 32
/* pg_advisory_xact_lock key of the chain ("glaudit"). */
#define GL_AUDIT_LOCK_KEY 0x676c6175646974LL
/* Longest text field kept (longer values are cut at a UTF-8 boundary). */
#define GL_AUDIT_FIELD_MAX 1024
/* How long a stop waits for audit rows written after their fact (the
 * writer's queue, an ingest run's row) before cancelling them. */
#define GL_AUDIT_STOP_GRACE_MS 5000

struct gl_audit_entry {
	int64_t at_us;           /* event time, µs since the epoch; 0 = now */
	const char *actor;       /* "token:<id>", "anonymous", "system", "cli:<user>" */
	const char *source_addr; /* may be NULL */
	const char *action;      /* "http.request", "token.create", "ingest.run", ... */
	const char *object;      /* may be NULL */
	const char *outcome;     /* "ok" | "denied" | "error" */
	const char *detail_json; /* a JSON object, never secrets; NULL = {} */
};

/* ---- pure parts ---- */

/* Appends the canonical encoding of a row (docs/security.md) to out.
 * detail is the JSON text exactly as PostgreSQL prints the stored jsonb. */
void gl_audit_canonical(struct gl_strbuf *out, int64_t seq, int64_t at_us, const char *actor, const char *source_addr,
			const char *action, const char *object, const char *outcome, const char *detail);
/* out = SHA-256(prev ‖ canonical[0..n)). */
void gl_audit_hash(const unsigned char prev[GL_AUDIT_HASH_LEN], const char *canonical, size_t n,
		   unsigned char out[GL_AUDIT_HASH_LEN]);
/* Copies s into out (cap bytes incl. NUL): invalid UTF-8 and control
 * characters become '?', cut at a character boundary. The database would
 * reject invalid UTF-8 and take the whole batch with it. */
void gl_audit_clean(const char *s, char *out, size_t cap);
/* Lower-case hex of a hash into out (65 bytes). */
void gl_audit_hex(const unsigned char h[GL_AUDIT_HASH_LEN], char out[2 * GL_AUDIT_HASH_LEN + 1]);
/* Parses 64 hex digits (an optional "\x" prefix is skipped); 0 or -GL_EINVAL. */
int gl_audit_unhex(const char *s, unsigned char out[GL_AUDIT_HASH_LEN]) GL_MUSTCHECK;

/* The actor of rows the process writes on its own behalf (ingest runs):
 * "system" (the default, the daemon) or "cli:<user>" for a command. Set
 * once at start, before any thread; the string is copied. */
void gl_audit_set_process_actor(const char *actor);
const char *gl_audit_process_actor(void);

/* ---- synchronous append ---- */

/* Appends one row. Joins the connection's transaction when one is open (so
 * a change and its audit row commit together), else runs its own. */
int gl_audit_append(struct gl_store *st, const char *actor, const char *source_addr, const char *action, const char *object,
		    const char *outcome, const char *detail_json, struct gl_err *err) GL_MUSTCHECK;
/* Appends n rows in one transaction (same rules); *first_seq may be NULL. */
int gl_audit_append_batch(struct gl_store *st, const struct gl_audit_entry *e, size_t n, int64_t *first_seq,
			  struct gl_err *err) GL_MUSTCHECK;

struct gl_audit_head {
	int64_t seq;    /* 0 when the log is empty */
	int64_t at_us;
	unsigned char hash[GL_AUDIT_HASH_LEN];
};
/* Hands audit_log (partitions, trigger and partition functions, the public
 * schema) to the role gpuledger_audit; the database owner and the roles
 * granted on the log (the service's) keep SELECT and INSERT only, no role
 * any privilege on a partition. c must be a superuser connection.
 * Idempotent. */
int gl_audit_harden(struct gl_store *st, struct gl_err *err) GL_MUSTCHECK;
/* *yes = 1 when gl_audit_harden has been applied. */
int gl_audit_hardened(struct gl_store *st, int *yes, struct gl_err *err) GL_MUSTCHECK;
int gl_audit_head(struct gl_store *st, struct gl_audit_head *h, struct gl_err *err) GL_MUSTCHECK;

/* Monthly partitions for the month of now_s and months-1 after it. */
int gl_audit_partitions_ensure(struct gl_store *st, int64_t now_s, int months, struct gl_err *err) GL_MUSTCHECK;

/* ---- verification ---- */

/* A published head ("gpuledger audit head"): the chain must still contain
 * this sequence number with this hash. */
struct gl_audit_anchor {
	int64_t seq;
	unsigned char hash[GL_AUDIT_HASH_LEN];
};

struct gl_audit_verify {
	int ok;
	int64_t rows;
	int64_t first_seq, last_seq; /* 0 when empty */
	unsigned char head[GL_AUDIT_HASH_LEN];
	int64_t bad_seq;             /* first broken sequence number when !ok */
	int64_t anchors_checked;
	char reason[300];
};
/* Walks the whole chain in one snapshot. A broken chain is not an error:
 * the function returns 0 with v->ok = 0, bad_seq and reason set. */
int gl_audit_verify(struct gl_store *st, const struct gl_audit_anchor *anchors, size_t n_anchors, struct gl_audit_verify *v,
		    struct gl_err *err) GL_MUSTCHECK;

/* Verifies only the rows lo_seq..hi_seq (GET /v1/audit/verify?window=):
 * the first row's prev_hash is taken as given, so this proves the rows of
 * the window are intact and consecutive, not what came before them. */
int gl_audit_verify_range(struct gl_store *st, int64_t lo_seq, int64_t hi_seq, const struct gl_audit_anchor *anchors,
			  size_t n_anchors, struct gl_audit_verify *v, struct gl_err *err) GL_MUSTCHECK;

/* ---- anchors (the head published outside the database) ---- */

/* "seq N hash HEX at TIME\n" of the current head into line (an empty log:
 * seq 0, zero hash, now_s). */
int gl_audit_anchor_line(struct gl_store *st, int64_t now_s, char *line, size_t n, struct gl_err *err) GL_MUSTCHECK;
/* The same, appended to path as one line (O_APPEND, fsync); line gets it. */
int gl_audit_anchor_append(struct gl_store *st, const char *path, int64_t now_s, char *line, size_t n,
			   struct gl_err *err) GL_MUSTCHECK;
/* Reads the "seq N hash HEX" anchors of a file, found anywhere in a line (a
 * syslog prefix is fine; other lines are ignored). A file without any is
 * -GL_EINVAL. *out is caller-freed with free(). */
int gl_audit_anchors_read(const char *path, struct gl_audit_anchor **out, size_t *n, struct gl_err *err) GL_MUSTCHECK;

/* ---- retention ---- */

struct gl_audit_prune_result {
	int partitions;
	int64_t rows;
	int64_t last_seq;  /* highest sequence number dropped, 0 if none */
	int64_t audit_seq; /* the audit row recording the prune */
	int kept;          /* old enough, but kept: dropping them would cut the chain in the middle */
};
/* Drops the monthly partitions that end on or before before_s (a month
 * start, never after the current month's) and appends an "audit.prune" row
 * naming them, the row count and the last dropped hash, in one transaction.
 * Only a prefix of the chain is ever dropped: a month holding a sequence
 * number above one that stays (a writer's clock ran behind) is kept, with
 * every later month, and named under "kept". */
int gl_audit_prune(struct gl_store *st, const char *actor, int64_t before_s, struct gl_audit_prune_result *res,
		   struct gl_err *err) GL_MUSTCHECK;

/* ---- asynchronous writer (the API's per-request rows) ---- */

struct gl_audit_writer;

/* Starts the writer thread with its own connection to dsn. capacity bounds
 * the queue; a full queue blocks submitters up to block_ms, then drops the
 * row and counts it by outcome (exported in the metrics). */
int gl_audit_writer_start(const char *dsn, size_t capacity, int block_ms, struct gl_audit_writer **out,
			  struct gl_err *err) GL_MUSTCHECK;
/* Copies e into the queue. Never fails; see the overflow rule above. */
void gl_audit_writer_submit(struct gl_audit_writer *w, const struct gl_audit_entry *e);
/* Drains what is queued (giving up after a bounded time if the database is
 * gone; leftovers are counted as dropped and logged), joins, frees. NULL ok.
 * A drain still waiting after GL_AUDIT_STOP_GRACE_MS (a lock on audit_log)
 * is cancelled (gl_dbcancel group GL_DBCANCEL_AUDIT: the watcher must be
 * running) and every row left is logged whole at ERROR. */
void gl_audit_writer_stop(struct gl_audit_writer *w);
/* Prometheus text of the writer's counters. */
void gl_audit_writer_metrics(struct gl_audit_writer *w, struct gl_strbuf *out);

#endif
