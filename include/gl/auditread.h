/* gpuledger — reading the audit log for /v1/audit and /v1/audit/verify:
 * a page of rows newest first (keyset paging on the sequence number) and
 * the sequence numbers of a time window. Writing and verifying the chain
 * are include/gl/audit.h's.
 *
 * Ownership: gl_auditread_page() fills a caller-owned struct
 * gl_auditread_page that gl_auditread_fini() empties (also after a
 * failure). Strings passed in are borrowed for the call.
 */
#ifndef GL_AUDITREAD_H
#define GL_AUDITREAD_H

#include "gl/common.h"
#include "gl/store.h"

#include <stdint.h>

struct gl_auditread_query {
	const char *from, *to;                /* timestamptz texts ("infinity" too), NULL: unbounded */
	const char *action, *actor, *outcome; /* NULL: any */
	int64_t cursor;                       /* the seq to continue below; 0: from the newest */
	int64_t limit;
};

struct gl_auditread_row {
	int64_t seq, at_s;
	char *actor, *source_addr, *action, *object, *outcome; /* source_addr, object NULL when none */
	char *detail;                                           /* the JSON object, as stored */
	char *prev_hash, *hash;                                 /* hex */
};

struct gl_auditread_page {
	struct gl_auditread_row *rows;
	size_t n;  /* at most limit */
	int more;  /* 1 when an older row follows */
	char *text;
};

int gl_auditread_page(struct gl_store *st, const struct gl_auditread_query *q, struct gl_auditread_page *out,
		      struct gl_err *err) GL_MUSTCHECK;
void gl_auditread_fini(struct gl_auditread_page *p);
/* The first and last sequence numbers of the rows in [from, to): *lo 1 and
 * *hi 0 (an empty range) when there are none. */
int gl_auditread_seq_range(struct gl_store *st, const char *from, const char *to, int64_t *lo, int64_t *hi,
			   struct gl_err *err) GL_MUSTCHECK;

#endif
