/* Hash-chained audit log (see include/gl/audit.h, docs/security.md). */
#include "gl/audit.h"
#include "db_int.h"
#include "gl/dbcancel.h"
#include "gl/log.h"
#include "gl/timeutil.h"
#include "gl/window.h"
#include "gl/utf8.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CANON_MAGIC "gpuledger-audit-v1\n"
#define VERIFY_PAGE "50000"
#define VERIFY_PAGE_N 50000
#define WRITER_BATCH 256

static const unsigned char zero_hash[GL_AUDIT_HASH_LEN];

static char process_actor[96] = "system";

void gl_audit_set_process_actor(const char *actor)
{
	snprintf(process_actor, sizeof process_actor, "%s", actor && *actor ? actor : "system");
}

const char *gl_audit_process_actor(void)
{
	return process_actor;
}

static int64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* ---- pure parts ---- */

static void put_field(struct gl_strbuf *o, const char *s)
{
	char num[24];
	int k;
	if (!s) {
		gl_strbuf_append(o, "-,", 2);
		return;
	}
	size_t n = strlen(s);
	k = snprintf(num, sizeof num, "%zu:", n);
	gl_strbuf_append(o, num, (size_t)k);
	gl_strbuf_append(o, s, n);
	gl_strbuf_putc(o, ',');
}

static void put_int_field(struct gl_strbuf *o, int64_t v)
{
	char num[24];
	snprintf(num, sizeof num, "%lld", (long long)v);
	put_field(o, num);
}

void gl_audit_canonical(struct gl_strbuf *out, int64_t seq, int64_t at_us, const char *actor, const char *source_addr,
			const char *action, const char *object, const char *outcome, const char *detail)
{
	gl_strbuf_puts(out, CANON_MAGIC);
	put_int_field(out, seq);
	put_int_field(out, at_us);
	put_field(out, actor);
	put_field(out, source_addr);
	put_field(out, action);
	put_field(out, object);
	put_field(out, outcome);
	put_field(out, detail);
}

static pthread_once_t md_once = PTHREAD_ONCE_INIT;
static EVP_MD *md_sha256;

static void md_init(void)
{
	/* fetched once: the implicit fetch in EVP_sha256() per digest costs
	 * more than hashing a short row */
	md_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!md_sha256) {
		gl_log(GL_LOG_ERROR, "audit: OpenSSL has no SHA-256");
		abort();
	}
}

static void hash_with(EVP_MD_CTX *ctx, const unsigned char prev[GL_AUDIT_HASH_LEN], const char *canonical, size_t n,
		      unsigned char out[GL_AUDIT_HASH_LEN])
{
	if (!ctx || !EVP_DigestInit_ex(ctx, md_sha256, NULL) || !EVP_DigestUpdate(ctx, prev, GL_AUDIT_HASH_LEN) ||
	    !EVP_DigestUpdate(ctx, canonical, n) || !EVP_DigestFinal_ex(ctx, out, NULL)) {
		gl_log(GL_LOG_ERROR, "audit: SHA-256 failed");
		abort();
	}
}

void gl_audit_hash(const unsigned char prev[GL_AUDIT_HASH_LEN], const char *canonical, size_t n,
		   unsigned char out[GL_AUDIT_HASH_LEN])
{
	EVP_MD_CTX *ctx;
	pthread_once(&md_once, md_init);
	ctx = EVP_MD_CTX_new();
	hash_with(ctx, prev, canonical, n, out);
	EVP_MD_CTX_free(ctx);
}

void gl_audit_clean(const char *s, char *out, size_t cap)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 0;
	if (!cap)
		return;
	while (i < n) {
		size_t k = gl_utf8_seq_len((const char *)p + i, n - i);
		if (k == 0 || (k == 1 && (p[i] < 0x20 || p[i] == 0x7f))) {
			if (o + 1 >= cap)
				break;
			out[o++] = '?';
			i++;
			continue;
		}
		if (o + k >= cap)
			break;
		memcpy(out + o, p + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
}

void gl_audit_hex(const unsigned char h[GL_AUDIT_HASH_LEN], char out[2 * GL_AUDIT_HASH_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < GL_AUDIT_HASH_LEN; i++) {
		out[2 * i] = digits[h[i] >> 4];
		out[2 * i + 1] = digits[h[i] & 15];
	}
	out[2 * GL_AUDIT_HASH_LEN] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int gl_audit_unhex(const char *s, unsigned char out[GL_AUDIT_HASH_LEN])
{
	if (s[0] == '\\' && s[1] == 'x')
		s += 2;
	for (size_t i = 0; i < GL_AUDIT_HASH_LEN; i++) {
		int a = hexval(s[2 * i]), b = a < 0 ? -1 : hexval(s[2 * i + 1]);
		if (a < 0 || b < 0)
			return -GL_EINVAL;
		out[i] = (unsigned char)(a << 4 | b);
	}
	return s[2 * GL_AUDIT_HASH_LEN] == '\0' ? 0 : -GL_EINVAL;
}

/* ---- append ---- */

static char *clean_dup(const char *s)
{
	char *o;
	size_t n;
	if (!s)
		return NULL;
	n = strlen(s) + 1;
	if (n > GL_AUDIT_FIELD_MAX)
		n = GL_AUDIT_FIELD_MAX;
	o = gl_xmalloc(n);
	gl_audit_clean(s, o, n);
	return o;
}

static int read_head(PGconn *c, struct gl_audit_head *h, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc;
	memset(h, 0, sizeof *h);
	if ((rc = gl_db_query(c,
			      "SELECT audit_id, (extract(epoch FROM at) * 1000000)::bigint, hash FROM audit_log"
			      " ORDER BY audit_id DESC LIMIT 1",
			      0, NULL, &r, err)))
		return rc;
	if (PQntuples(r) == 1) {
		h->seq = atoll(PQgetvalue(r, 0, 0));
		h->at_us = atoll(PQgetvalue(r, 0, 1));
		if (gl_audit_unhex(PQgetvalue(r, 0, 2), h->hash))
			rc = gl_err_set(err, GL_EDB, "audit: head seq %lld: unreadable hash", (long long)h->seq);
	}
	PQclear(r);
	return rc;
}

static int lock_chain(PGconn *c, struct gl_err *err)
{
	char key[24];
	snprintf(key, sizeof key, "%lld", (long long)GL_AUDIT_LOCK_KEY);
	return gl_db_query(c, "SELECT pg_advisory_xact_lock($1::bigint)", 1, (const char *[]){key}, NULL, err);
}

/* Inside a transaction: take the chain lock, read the head (unless the
 * caller already holds it and passes it), normalise the details through
 * jsonb (the stored text is what verifiers hash), chain and insert. */
/* "YYYY-MM-DD HH:MM:SS.ffffff+00" for COPY: exact to the microsecond,
 * floor division so any epoch works */
static void put_copy_time_us(struct gl_strbuf *o, int64_t at_us)
{
	int64_t secs = at_us >= 0 ? at_us / 1000000 : -((-at_us + 999999) / 1000000), us = at_us - secs * 1000000;
	int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400), rem = secs - days * 86400, y;
	unsigned m, d;
	gl_timeutil_civil_from_days(days, &y, &m, &d);
	gl_strbuf_printf(o, "%04lld-%02u-%02u %02lld:%02lld:%02lld.%06lld+00", (long long)y, m, d, (long long)(rem / 3600),
			 (long long)(rem / 60 % 60), (long long)(rem % 60), (long long)us);
}

static int append_locked(PGconn *c, const struct gl_audit_entry *e, size_t n, const struct gl_audit_head *known,
			 int64_t *first_seq, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT, canon = GL_STRBUF_INIT;
	struct gl_audit_head head;
	PGresult *r = NULL;
	const char **params = NULL;
	unsigned char prev[GL_AUDIT_HASH_LEN];
	int rc;

	if (n == 0)
		return 0;
	if ((rc = lock_chain(c, err)))
		goto out;
	params = gl_xcalloc(n, sizeof *params);
	gl_strbuf_puts(&sql, "SELECT 0");
	for (size_t i = 0; i < n; i++) {
		gl_strbuf_printf(&sql, ", $%zu::jsonb::text", i + 1);
		params[i] = e[i].detail_json && *e[i].detail_json ? e[i].detail_json : "{}";
	}
	if ((rc = gl_db_query(c, gl_strbuf_cstr(&sql), (int)n, params, &r, err))) {
		gl_err_prefix(err, "audit: detail: ");
		goto out;
	}
	if (known) {
		head = *known;
	} else if ((rc = read_head(c, &head, err))) {
		goto out;
	}
	memcpy(prev, head.seq ? head.hash : zero_hash, sizeof prev);
	/* one COPY per batch: the rows, their chain and their timestamps are
	 * all known here (COPY is several times cheaper than a multi-row
	 * INSERT of 11 parameters a row, and the writer's rate is what audited
	 * requests can reach) */
	gl_strbuf_reset(&sql);
	for (size_t i = 0; i < n; i++) {
		int64_t seq = head.seq + 1 + (int64_t)i, at = e[i].at_us ? e[i].at_us : now_us();
		const char *detail = PQgetvalue(r, 0, (int)i + 1);
		unsigned char h[GL_AUDIT_HASH_LEN];
		char *cl[5], hx[2 * GL_AUDIT_HASH_LEN + 1];

		cl[0] = clean_dup(e[i].actor ? e[i].actor : "system");
		cl[1] = clean_dup(e[i].source_addr);
		cl[2] = clean_dup(e[i].action ? e[i].action : "unknown");
		cl[3] = clean_dup(e[i].object);
		cl[4] = clean_dup(e[i].outcome ? e[i].outcome : "ok");
		gl_strbuf_reset(&canon);
		gl_audit_canonical(&canon, seq, at, cl[0], cl[1], cl[2], cl[3], cl[4], detail);
		gl_audit_hash(prev, canon.p, canon.len, h);
		gl_strbuf_put_i64(&sql, seq);
		gl_strbuf_putc(&sql, '\t');
		put_copy_time_us(&sql, at);
		for (size_t k = 0; k < 5; k++) {
			gl_strbuf_putc(&sql, '\t');
			if (cl[k])
				gl_strbuf_put_copy_text(&sql, cl[k], strlen(cl[k]));
			else
				gl_strbuf_puts(&sql, "\\N");
			free(cl[k]);
		}
		gl_strbuf_putc(&sql, '\t');
		gl_strbuf_put_copy_text(&sql, detail, strlen(detail));
		/* bytea hex input; its backslash is escaped for COPY */
		gl_audit_hex(prev, hx);
		gl_strbuf_printf(&sql, "\t\\\\x%s", hx);
		gl_audit_hex(h, hx);
		gl_strbuf_printf(&sql, "\t\\\\x%s\n", hx);
		memcpy(prev, h, sizeof prev);
	}
	if ((rc = gl_db_copy_in(c,
				"COPY audit_log (audit_id, at, actor, source_addr, action, object, outcome, detail,"
				" prev_hash, hash) FROM STDIN",
				sql.p, sql.len, err))) {
		gl_err_prefix(err, "audit: insert: ");
		goto out;
	}
	if (first_seq)
		*first_seq = head.seq + 1;
out:
	free(params);
	PQclear(r);
	gl_strbuf_fini(&sql);
	gl_strbuf_fini(&canon);
	return rc;
}

/* Runs fn inside the caller's transaction, or in one of its own. */
static int in_txn(PGconn *c, int *own, struct gl_err *err)
{
	*own = PQtransactionStatus(c) == PQTRANS_IDLE;
	return *own ? gl_db_exec(c, "BEGIN", err) : 0;
}

static int end_txn(PGconn *c, int own, int rc, struct gl_err *err)
{
	if (!own)
		return rc;
	if (rc) {
		PQclear(PQexec(c, "ROLLBACK"));
		return rc;
	}
	return gl_db_exec(c, "COMMIT", err);
}

int gl_audit_append_batch(struct gl_store *st, const struct gl_audit_entry *e, size_t n, int64_t *first_seq, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int own, rc;
	if ((rc = in_txn(c, &own, err)))
		return rc;
	rc = append_locked(c, e, n, NULL, first_seq, err);
	return end_txn(c, own, rc, err);
}

int gl_audit_append(struct gl_store *st, const char *actor, const char *source_addr, const char *action, const char *object,
		    const char *outcome, const char *detail_json, struct gl_err *err)
{
	struct gl_audit_entry e = {0, actor, source_addr, action, object, outcome, detail_json};
	return gl_audit_append_batch(st, &e, 1, NULL, err);
}

int gl_audit_head(struct gl_store *st, struct gl_audit_head *h, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	return read_head(c, h, err);
}

int gl_audit_partitions_ensure(struct gl_store *st, int64_t now_s, int months, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char day[32], m[16];
	gl_timeutil_format_day(now_s, day, sizeof day);
	snprintf(m, sizeof m, "%d", months);
	return gl_db_query(c, "SELECT gl_audit_partitions_ensure($1::date, $2::integer)", 2, (const char *[]){day, m},
			   NULL, err);
}

/* ---- verification ---- */

static int anchor_cmp(const void *a, const void *b)
{
	const struct gl_audit_anchor *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void broken(struct gl_audit_verify *v, int64_t seq, const char *fmt, ...) GL_PRINTF(3, 4);
static void broken(struct gl_audit_verify *v, int64_t seq, const char *fmt, ...)
{
	va_list ap;
	v->ok = 0;
	v->bad_seq = seq;
	va_start(ap, fmt);
	vsnprintf(v->reason, sizeof v->reason, fmt, ap);
	va_end(ap);
}

/* A chain that starts after seq 1 is fine only when an audit.prune row
 * accounts for everything before it and names the hash it links to. */
static int check_start(PGconn *c, int64_t first, const unsigned char prev[GL_AUDIT_HASH_LEN],
		       struct gl_audit_verify *v, struct gl_err *err)
{
	PGresult *r = NULL;
	char s[24];
	unsigned char h[GL_AUDIT_HASH_LEN];
	int rc;
	snprintf(s, sizeof s, "%lld", (long long)first);
	if ((rc = gl_db_query(c,
			      "SELECT (detail->>'last_seq')::bigint, detail->>'last_hash' FROM audit_log"
			      " WHERE action = 'audit.prune' AND jsonb_typeof(detail->'last_seq') = 'number'"
			      "   AND (detail->>'last_seq')::bigint < $1::bigint"
			      " ORDER BY (detail->>'last_seq')::bigint DESC LIMIT 1",
			      1, (const char *[]){s}, &r, err)))
		return rc;
	if (PQntuples(r) == 0) {
		broken(v, 1, "sequence numbers 1..%lld are missing and no audit.prune row accounts for them",
		       (long long)first - 1);
	} else {
		int64_t last = atoll(PQgetvalue(r, 0, 0));
		if (last != first - 1)
			broken(v, last + 1, "sequence numbers %lld..%lld are missing (the last prune ended at %lld)",
			       (long long)last + 1, (long long)first - 1, (long long)last);
		else if (PQgetisnull(r, 0, 1) || gl_audit_unhex(PQgetvalue(r, 0, 1), h) ||
			 CRYPTO_memcmp(h, prev, sizeof h) != 0)
			broken(v, first, "prev_hash of seq %lld does not match the last hash recorded by the prune",
			       (long long)first);
	}
	PQclear(r);
	return 0;
}

static int page_send(PGconn *c, int64_t after, int64_t hi, struct gl_err *err)
{
	char a[24], b[24];
	const char *p[2] = {a, b};
	snprintf(a, sizeof a, "%lld", (long long)after);
	snprintf(b, sizeof b, "%lld", (long long)hi);
	if (!PQsendQueryParams(c,
			       "SELECT audit_id, (extract(epoch FROM at) * 1000000)::bigint, actor, source_addr, action,"
			       " object, outcome, detail::text, prev_hash, hash FROM audit_log"
			       " WHERE audit_id > $1::bigint AND audit_id <= $2::bigint ORDER BY audit_id LIMIT " VERIFY_PAGE,
			       2, NULL, p, NULL, NULL, 1))
		return gl_err_set(err, GL_EDB, "audit verify: %s", PQerrorMessage(c));
	return 0;
}

/* Pages come in binary: hashes as 32 raw bytes instead of 64 hex digits,
 * numbers without text conversion on either side. Text columns are the same
 * bytes either way (libpq NUL-terminates them). */
static int64_t col_i64(const PGresult *r, int row, int col)
{
	const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
	uint64_t v = 0;
	if (PQgetlength(r, row, col) != 8)
		return INT64_MIN;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (int64_t)v;
}

static int col_hash(const PGresult *r, int row, int col, unsigned char out[GL_AUDIT_HASH_LEN])
{
	if (PQgetisnull(r, row, col) || PQgetlength(r, row, col) != GL_AUDIT_HASH_LEN)
		return -GL_EINVAL;
	memcpy(out, PQgetvalue(r, row, col), GL_AUDIT_HASH_LEN);
	return 0;
}

/* The page's result; the trailing NULL result is consumed here. */
static int page_get(PGconn *c, PGresult **out, struct gl_err *err)
{
	PGresult *r, *extra;
	int rc = 0;
	*out = NULL;
	r = PQgetResult(c);
	while ((extra = PQgetResult(c)))
		PQclear(extra);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		rc = gl_err_set(err, GL_EDB, "audit verify: %s", PQerrorMessage(c));
		PQclear(r);
		return rc;
	}
	*out = r;
	return 0;
}

int gl_audit_verify(struct gl_store *st, const struct gl_audit_anchor *anchors_in, size_t n_anchors, struct gl_audit_verify *v,
		    struct gl_err *err)
{
	return gl_audit_verify_range(st, 0, INT64_MAX, anchors_in, n_anchors, v, err);
}

int gl_audit_verify_range(struct gl_store *st, int64_t lo_seq, int64_t hi_seq, const struct gl_audit_anchor *anchors_in,
			  size_t n_anchors, struct gl_audit_verify *v, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_strbuf canon = GL_STRBUF_INIT;
	struct gl_audit_anchor *anchors = NULL;
	PGresult *r = NULL;
	unsigned char prev[GL_AUDIT_HASH_LEN], h[GL_AUDIT_HASH_LEN], stored[GL_AUDIT_HASH_LEN];
	int64_t last = 0;
	size_t ai = 0;
	int own = 0, pending = 0, rc;
	EVP_MD_CTX *ctx = NULL;

	memset(v, 0, sizeof *v);
	v->ok = 1;
	if (n_anchors) {
		anchors = gl_xmalloc(n_anchors * sizeof *anchors);
		memcpy(anchors, anchors_in, n_anchors * sizeof *anchors);
		gl_qsort(anchors, n_anchors, sizeof *anchors, anchor_cmp);
	}
	/* one snapshot for the whole walk: rows appended meanwhile are simply
	 * not part of this verification */
	if (PQtransactionStatus(c) == PQTRANS_IDLE) {
		if ((rc = gl_db_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err)))
			goto out;
		own = 1;
		/* walk the primary key in order, page by page: without fresh
		 * statistics (rows just loaded) the planner would sort the whole
		 * table for every page instead */
		if ((rc = gl_db_exec(c, "SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off", err)))
			goto out;
	}
	pthread_once(&md_once, md_init);
	ctx = EVP_MD_CTX_new();
	if (lo_seq > 0)
		lo_seq--; /* page_send takes the number before the first wanted */
	if ((rc = page_send(c, lo_seq, hi_seq, err)) || (rc = page_get(c, &r, err)))
		goto out;
	for (;;) {
		int nt = PQntuples(r);
		if (nt == 0)
			break;
		if (v->rows == 0 && lo_seq == 0 && col_i64(r, 0, 0) != 1) {
			/* before the next page is in flight: this needs a query of its own */
			unsigned char rprev[GL_AUDIT_HASH_LEN];
			if (col_hash(r, 0, 8, rprev) == 0) {
				if ((rc = check_start(c, col_i64(r, 0, 0), rprev, v, err)))
					goto out;
				if (!v->ok)
					goto done;
			}
		}
		/* ask for the next page now: the server reads and sends it while
		 * this thread hashes the current one */
		if (nt == VERIFY_PAGE_N) {
			if ((rc = page_send(c, col_i64(r, nt - 1, 0), hi_seq, err)))
				goto out;
			pending = 1;
		}
		for (int i = 0; i < nt; i++) {
			int64_t seq = col_i64(r, i, 0);
			unsigned char rprev[GL_AUDIT_HASH_LEN];
			if (col_hash(r, i, 8, rprev) || col_hash(r, i, 9, stored)) {
				broken(v, seq, "seq %lld: prev_hash or hash is not 32 bytes", (long long)seq);
				goto done;
			}
			if (v->rows == 0) {
				v->first_seq = seq;
				memcpy(prev, rprev, sizeof prev);
			} else if (seq == last) {
				broken(v, seq, "two rows carry sequence number %lld", (long long)seq);
				goto done;
			} else if (seq != last + 1) {
				broken(v, last + 1, "sequence numbers %lld..%lld are missing", (long long)last + 1,
				       (long long)seq - 1);
				goto done;
			}
			if (CRYPTO_memcmp(rprev, prev, sizeof prev) != 0) {
				broken(v, seq, "seq %lld: prev_hash does not match the hash of seq %lld", (long long)seq,
				       (long long)seq - 1);
				goto done;
			}
			gl_strbuf_reset(&canon);
			gl_audit_canonical(&canon, seq, col_i64(r, i, 1), PQgetvalue(r, i, 2),
					   PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3), PQgetvalue(r, i, 4),
					   PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5), PQgetvalue(r, i, 6),
					   PQgetvalue(r, i, 7));
			hash_with(ctx, prev, canon.p, canon.len, h);
			if (CRYPTO_memcmp(h, stored, sizeof h) != 0) {
				broken(v, seq, "seq %lld: hash does not match the row's content (row altered)",
				       (long long)seq);
				goto done;
			}
			while (ai < n_anchors && anchors[ai].seq < v->first_seq)
				ai++; /* pruned before this walk's start */
			for (; ai < n_anchors && anchors[ai].seq == seq; ai++) {
				v->anchors_checked++;
				if (CRYPTO_memcmp(anchors[ai].hash, h, sizeof h) != 0) {
					broken(v, seq, "seq %lld: hash differs from the published anchor (chain rewritten)",
					       (long long)seq);
					goto done;
				}
			}
			memcpy(prev, h, sizeof prev);
			last = seq;
			v->rows++;
		}
		PQclear(r);
		r = NULL;
		if (!pending)
			break;
		pending = 0;
		if ((rc = page_get(c, &r, err)))
			goto out;
	}
	if (ai < n_anchors && anchors[ai].seq > last && anchors[ai].seq <= hi_seq)
		broken(v, last + 1, "the chain ends at seq %lld but an anchor published seq %lld",
		       (long long)last, (long long)anchors[ai].seq);
done:
	v->last_seq = last;
	if (v->rows)
		memcpy(v->head, prev, sizeof prev);
	rc = 0;
out:
	if (pending) {
		/* stopped early with a page in flight: collect it before reusing c */
		PQclear(r);
		r = NULL;
		(void)!page_get(c, &r, NULL);
	}
	EVP_MD_CTX_free(ctx);
	if (own)
		PQclear(PQexec(c, "COMMIT"));
	PQclear(r);
	free(anchors);
	gl_strbuf_fini(&canon);
	return rc;
}

/* ---- anchors ---- */

int gl_audit_anchor_line(struct gl_store *st, int64_t now_s, char *line, size_t n, struct gl_err *err)
{
	struct gl_audit_head h;
	char hx[2 * GL_AUDIT_HASH_LEN + 1], at[32];
	int rc;
	if ((rc = gl_audit_head(st, &h, err)))
		return rc;
	gl_audit_hex(h.seq ? h.hash : zero_hash, hx);
	gl_timeutil_format(h.seq ? h.at_us / 1000000 : now_s, at, sizeof at);
	snprintf(line, n, "seq %lld hash %s at %s\n", (long long)h.seq, hx, at);
	return 0;
}

int gl_audit_anchor_append(struct gl_store *st, const char *path, int64_t now_s, char *line, size_t n, struct gl_err *err)
{
	size_t len;
	int fd, rc;
	if ((rc = gl_audit_anchor_line(st, now_s, line, n, err)))
		return rc;
	len = strlen(line);
	/* O_APPEND + fsync: each published head is one whole line, durable */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return gl_err_set(err, GL_EIO, "audit anchor: %s: %s", path, strerror(errno));
	if (write(fd, line, len) != (ssize_t)len || fsync(fd) != 0)
		rc = gl_err_set(err, GL_EIO, "audit anchor: %s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

/* "seq N hash H" where it stands in a line: at its start (`audit head`), or
 * after a prefix such as syslog's "Nov 23 01:34:00 host tag[pid]: ". */
static int anchor_in_line(const char *line, long long *seq, char *hex)
{
	for (const char *p = line; (p = strstr(p, "seq ")); p++) {
		if (p != line && p[-1] != ' ' && p[-1] != '\t' && p[-1] != ':')
			continue;
		if (sscanf(p, "seq %lld hash %79s", seq, hex) == 2)
			return 1;
	}
	return 0;
}

int gl_audit_anchors_read(const char *path, struct gl_audit_anchor **out, size_t *n, struct gl_err *err)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	size_t cap = 0, found = 0;
	*out = NULL;
	*n = 0;
	if (!f)
		return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	for (int ln = 1; fgets(line, sizeof line, f); ln++) {
		long long seq;
		char hex[80];
		/* other lines (comments, unrelated syslog lines) are skipped */
		if (!anchor_in_line(line, &seq, hex))
			continue;
		found++;
		if (seq == 0)
			continue; /* the head of an empty log names no row */
		if (*n == cap)
			*out = gl_xrealloc(*out, (cap = cap ? cap * 2 : 16) * sizeof **out);
		(*out)[*n].seq = seq;
		if (seq < 0 || gl_audit_unhex(hex, (*out)[*n].hash)) {
			fclose(f);
			free(*out);
			*out = NULL;
			*n = 0;
			return gl_err_set(err, GL_EINVAL, "%s:%d: bad anchor (seq %lld hash %s)", path, ln, seq, hex);
		}
		(*n)++;
	}
	fclose(f);
	/* a file checked for nothing must not pass as a verified chain: the
	 * wrong file, or a format this reader does not know */
	if (!found)
		return gl_err_set(err, GL_EINVAL, "%s: no anchor line ('seq N hash HEX') in it", path);
	return 0;
}

/* ---- retention ---- */

/* Verification accepts a pruned log only when what is gone is a prefix of
 * the chain (check_start). Partitions go by `at`, and `at` is the writer's
 * clock (the API's writer stamps a row when it is queued; a cron host's
 * clock may run behind), so an old month can hold a sequence number above
 * the first one of a later month. Of the months old enough (ascending), only
 * the longest run from the first whose highest number is below every number
 * kept anywhere else is dropped: the rest stay, named in *kept, and day
 * (YYYY-MM-DD) is moved back to the first month kept. One scan of audit_log
 * (per-partition min/max), under the chain lock the caller holds. */
static int prune_bound(PGconn *c, char *day, cJSON *kept, struct gl_audit_prune_result *res, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc, n, ne = 0, k;
	if ((rc = gl_db_query(c,
			      "SELECT p.relname, to_char(p.m, 'YYYY-MM-DD'), coalesce((p.m + interval '1 month')::date <= $1::date, false),"
			      "  s.lo, s.hi"
			      " FROM (SELECT c.oid, c.relname::text AS relname, CASE WHEN c.relname ~ '^audit_log_[0-9]{4}_[0-9]{2}$'"
			      "   THEN to_date(substr(c.relname, 11), 'YYYY_MM') END AS m"
			      "   FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
			      "   WHERE i.inhparent = 'public.audit_log'::regclass) p"
			      " LEFT JOIN (SELECT tableoid, min(audit_id) AS lo, max(audit_id) AS hi FROM audit_log GROUP BY tableoid) s"
			      "   ON s.tableoid = p.oid"
			      " ORDER BY 3 DESC, 1",
			      1, (const char *[]){day}, &r, err)))
		return rc;
	/* the old-enough months first, ascending by name (= by month) */
	n = PQntuples(r);
	while (ne < n && PQgetvalue(r, ne, 2)[0] == 't')
		ne++;
	for (k = ne; k > 0; k--) {
		int64_t pmax = INT64_MIN, rmin = INT64_MAX;
		for (int i = 0; i < n; i++) {
			if (PQgetisnull(r, i, 3))
				continue; /* empty */
			if (i < k) {
				if (atoll(PQgetvalue(r, i, 4)) > pmax)
					pmax = atoll(PQgetvalue(r, i, 4));
			} else if (atoll(PQgetvalue(r, i, 3)) < rmin) {
				rmin = atoll(PQgetvalue(r, i, 3));
			}
		}
		if (pmax < rmin)
			break;
	}
	for (int i = k; i < ne; i++) {
		cJSON_AddItemToArray(kept, cJSON_CreateString(PQgetvalue(r, i, 0)));
		res->kept++;
	}
	if (k < ne)
		snprintf(day, 11, "%s", PQgetvalue(r, k, 1));
	PQclear(r);
	return 0;
}

int gl_audit_prune(struct gl_store *st, const char *actor, int64_t before_s, struct gl_audit_prune_result *res,
		   struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_audit_head head;
	struct gl_audit_entry e;
	PGresult *r = NULL;
	cJSON *d = cJSON_CreateObject(), *parts = cJSON_AddArrayToObject(d, "partitions"), *kept = cJSON_CreateArray();
	char day[32], hx[2 * GL_AUDIT_HASH_LEN + 1] = "", *detail = NULL;
	int own, rc;

	memset(res, 0, sizeof *res);
	gl_timeutil_format_day(before_s, day, sizeof day);
	{
		/* said here in words; the database refuses it too, in SQL's */
		int64_t month0 = gl_window_month_start((int64_t)time(NULL));
		char cur[32];
		if (before_s > month0) {
			gl_timeutil_format(month0, cur, sizeof cur);
			cur[7] = '\0';
			rc = gl_err_set(err, GL_EINVAL,
					"audit prune: --before %.7s is after the current month (%s): the current month and"
					" later are never pruned",
					day, cur);
			goto out0;
		}
	}
	if ((rc = in_txn(c, &own, err)))
		goto out0;
	/* the head is read before the drop: it may itself be in a dropped
	 * month, and the prune row must still link to it */
	if ((rc = lock_chain(c, err)) || (rc = read_head(c, &head, err)) ||
	    (rc = gl_audit_partitions_ensure(gl_db_store(c), (int64_t)time(NULL), 1, err)))
		goto out;
	if ((rc = prune_bound(c, day, kept, res, err)))
		goto out;
	if ((rc = gl_db_query(c,
			      "SELECT partition_name, row_count, last_seq, last_hash FROM gl_audit_partitions_drop($1::date)",
			      1, (const char *[]){day}, &r, err)))
		goto out;
	for (int i = 0; i < PQntuples(r); i++) {
		cJSON_AddItemToArray(parts, cJSON_CreateString(PQgetvalue(r, i, 0)));
		res->partitions++;
		res->rows += atoll(PQgetvalue(r, i, 1));
		if (!PQgetisnull(r, i, 2) && atoll(PQgetvalue(r, i, 2)) > res->last_seq) {
			unsigned char h[GL_AUDIT_HASH_LEN];
			res->last_seq = atoll(PQgetvalue(r, i, 2));
			if (!gl_audit_unhex(PQgetvalue(r, i, 3), h))
				gl_audit_hex(h, hx);
		}
	}
	if (res->kept)
		cJSON_AddItemToObject(d, "kept", kept);
	else
		cJSON_Delete(kept);
	kept = NULL;
	cJSON_AddStringToObject(d, "before", day);
	cJSON_AddNumberToObject(d, "rows", (double)res->rows);
	if (res->last_seq) {
		cJSON_AddNumberToObject(d, "last_seq", (double)res->last_seq);
		cJSON_AddStringToObject(d, "last_hash", hx);
	}
	detail = cJSON_PrintUnformatted(d);
	if (!detail)
		gl_oom(0);
	e = (struct gl_audit_entry){0, actor, NULL, "audit.prune", "audit_log", "ok", detail};
	rc = append_locked(c, &e, 1, &head, &res->audit_seq, err);
out:
	rc = end_txn(c, own, rc, err);
out0:
	PQclear(r);
	cJSON_Delete(kept);
	cJSON_Delete(d);
	cJSON_free(detail);
	return rc;
}

/* ---- asynchronous writer ---- */

enum { OUT_OK, OUT_DENIED, OUT_ERROR, OUT_OTHER, OUT_N };
static const char *const out_names[OUT_N] = {"ok", "denied", "error", "other"};

static int outcome_idx(const char *o)
{
	for (int i = 0; i < OUT_OTHER; i++)
		if (o && !strcmp(o, out_names[i]))
			return i;
	return OUT_OTHER;
}

/* One heap block per queued row: the struct, then its strings. */
struct qent {
	struct gl_audit_entry e;
	char data[];
};

struct gl_audit_writer {
	char *dsn;
	PGconn *c;
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t nonempty, nonfull;
	struct qent **ring;
	size_t cap, head, len;
	int block_ms;
	int stopping;
	int done;                  /* the thread has finished (under mu) */
	pthread_cond_t finished;
	int64_t ensured_month;
	uint64_t written, write_errors, dropped[OUT_N];
	struct gl_log_limiter lim;
};

static struct qent *qent_new(const struct gl_audit_entry *e)
{
	const char *src[6] = {e->actor, e->source_addr, e->action, e->object, e->outcome, e->detail_json};
	size_t lens[6], total = 0;
	struct qent *q;
	char *p;
	for (int i = 0; i < 6; i++) {
		lens[i] = src[i] ? strlen(src[i]) + 1 : 0;
		total += lens[i];
	}
	q = gl_xmalloc(sizeof *q + total);
	p = q->data;
	const char **dst[6] = {&q->e.actor, &q->e.source_addr, &q->e.action, &q->e.object, &q->e.outcome,
			       &q->e.detail_json};
	for (int i = 0; i < 6; i++) {
		if (!src[i]) {
			*dst[i] = NULL;
			continue;
		}
		memcpy(p, src[i], lens[i]);
		*dst[i] = p;
		p += lens[i];
	}
	q->e.at_us = e->at_us ? e->at_us : now_us();
	return q;
}

/* A row the writer gives up on goes to the log whole, at ERROR: the audit
 * log does not have it, the daemon's log keeps it (docs/security.md). */
static void log_lost(const struct gl_audit_entry *e, const char *why)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	const char *k[5] = {"actor", "source_addr", "action", "object", "outcome"};
	const char *v[5] = {e->actor, e->source_addr, e->action, e->object, e->outcome};
	gl_strbuf_printf(&b, "{\"at_us\":%lld", (long long)e->at_us);
	for (int i = 0; i < 5; i++) {
		if (!v[i])
			continue;
		gl_strbuf_printf(&b, ",\"%s\":\"", k[i]);
		gl_strbuf_put_json_str(&b, v[i], strlen(v[i]));
		gl_strbuf_putc(&b, '"');
	}
	gl_strbuf_printf(&b, ",\"detail\":%s}", e->detail_json && *e->detail_json ? e->detail_json : "{}");
	gl_log(GL_LOG_ERROR, "audit: row not written (%s): %s", why, gl_strbuf_cstr(&b));
	gl_strbuf_fini(&b);
}

/* Under w->mu: every row left, logged and counted as dropped. */
static void drop_all(struct gl_audit_writer *w, struct qent **b, size_t n, const char *why)
{
	for (size_t i = 0; i < n; i++) {
		log_lost(&b[i]->e, why);
		w->dropped[outcome_idx(b[i]->e.outcome)]++;
		free(b[i]);
	}
	while (w->len) {
		struct qent *q = w->ring[w->head];
		w->head = (w->head + 1) % w->cap;
		w->len--;
		log_lost(&q->e, why);
		w->dropped[outcome_idx(q->e.outcome)]++;
		free(q);
	}
}

static int writer_conn(struct gl_audit_writer *w, struct gl_err *err)
{
	if (w->c && PQstatus(w->c) == CONNECTION_OK)
		return 0;
	PQfinish(w->c);
	w->c = NULL;
	return gl_db_connect_dsn(w->dsn, &w->c, err);
}

static void month_roll(struct gl_audit_writer *w)
{
	int64_t t = (int64_t)time(NULL), y;
	unsigned mo, d;
	struct gl_err err = {0};
	gl_timeutil_civil_from_days(t / 86400, &y, &mo, &d);
	if (y * 12 + mo == w->ensured_month)
		return;
	/* this month and the next two: a row never waits for DDL at midnight */
	if (gl_audit_partitions_ensure(gl_db_store(w->c), t, 3, &err))
		gl_log(GL_LOG_WARN, "audit: cannot create monthly partitions (rows go to the default partition): %s",
		       err.msg);
	else
		w->ensured_month = y * 12 + mo;
}

/* Writes a batch; on a data error (connection fine) falls back to one row
 * at a time so one bad row cannot take its neighbours with it. Returns 0,
 * or -GL_EDB when the database is unreachable (the batch is kept). */
static int write_batch(struct gl_audit_writer *w, struct qent **b, size_t n)
{
	struct gl_audit_entry *e = gl_xmalloc(n * sizeof *e);
	struct gl_dbcancel_slot slot = {0};
	struct gl_err err = {0};
	int rc;
	for (size_t i = 0; i < n; i++)
		e[i] = b[i]->e;
	if ((rc = writer_conn(w, &err))) {
		gl_log_fail(&w->lim, (int64_t)time(NULL), GL_LOG_WARN, "audit: writer: %s", err.msg);
		free(e);
		return rc;
	}
	/* registered for the stop: once its grace is over, a batch waiting on
	 * a lock on the audit log is cancelled instead of holding the stop */
	gl_dbcancel_begin(&slot, gl_db_store(w->c), GL_DBCANCEL_AUDIT, "audit writer");
	month_roll(w);
	rc = gl_audit_append_batch(gl_db_store(w->c), e, n, NULL, &err);
	if (rc && gl_dbcancel_requested(GL_DBCANCEL_AUDIT)) {
		/* cut at the stop: the caller drops the rest (no row-by-row
		 * retries, each of which would wait on the lock again) */
		gl_dbcancel_end(&slot);
		free(e);
		return -GL_EDB;
	}
	if (rc && PQstatus(w->c) != CONNECTION_OK) {
		gl_log_fail(&w->lim, (int64_t)time(NULL), GL_LOG_WARN, "audit: writer: %s", err.msg);
		gl_dbcancel_end(&slot);
		free(e);
		return -GL_EDB;
	}
	if (rc) {
		for (size_t i = 0; i < n; i++) {
			/* the stop's grace can run out during these retries: the
			 * rows left are given up at once, not each after its own
			 * wait on the lock */
			int cut = gl_dbcancel_requested(GL_DBCANCEL_AUDIT);
			if (!cut && gl_audit_append_batch(gl_db_store(w->c), &e[i], 1, NULL, &err) == 0) {
				pthread_mutex_lock(&w->mu);
				w->written++;
				pthread_mutex_unlock(&w->mu);
				continue;
			}
			/* lost from the audit log: the daemon's log keeps it whole */
			if (!cut)
				gl_log(GL_LOG_WARN, "audit: writer: row dropped: %s", err.msg);
			log_lost(&e[i], cut || gl_dbcancel_requested(GL_DBCANCEL_AUDIT) ? "the stop's grace is over"
											 : "the database refused it");
			pthread_mutex_lock(&w->mu);
			w->write_errors++;
			w->dropped[outcome_idx(e[i].outcome)]++;
			pthread_mutex_unlock(&w->mu);
		}
	} else {
		gl_log_ok(&w->lim, "audit: writer");
		pthread_mutex_lock(&w->mu);
		w->written += n;
		pthread_mutex_unlock(&w->mu);
	}
	gl_dbcancel_end(&slot);
	free(e);
	return 0;
}

static void *writer_main(void *arg)
{
	struct gl_audit_writer *w = arg;
	struct qent *batch[WRITER_BATCH];
	size_t n = 0;
	int backoff_ms = 100, stop_failures = 0;

	for (;;) {
		pthread_mutex_lock(&w->mu);
		while (w->len == 0 && !w->stopping && n == 0)
			pthread_cond_wait(&w->nonempty, &w->mu);
		if (w->len == 0 && n == 0 && w->stopping) {
			pthread_mutex_unlock(&w->mu);
			break;
		}
		while (n < WRITER_BATCH && w->len) {
			batch[n++] = w->ring[w->head];
			w->head = (w->head + 1) % w->cap;
			w->len--;
		}
		pthread_cond_broadcast(&w->nonfull);
		pthread_mutex_unlock(&w->mu);

		if (write_batch(w, batch, n) == 0) {
			for (size_t i = 0; i < n; i++)
				free(batch[i]);
			n = 0;
			backoff_ms = 100;
			continue;
		}
		if (gl_dbcancel_requested(GL_DBCANCEL_AUDIT)) {
			/* the stop's grace is over (gl_audit_writer_stop) */
			pthread_mutex_lock(&w->mu);
			drop_all(w, batch, n, "the stop's grace is over");
			n = 0;
			pthread_mutex_unlock(&w->mu);
			break;
		}
		/* database gone: keep the batch, back off; when stopping, give up
		 * after a bounded number of tries and count what is lost */
		if (w->stopping && ++stop_failures >= 5) {
			pthread_mutex_lock(&w->mu);
			drop_all(w, batch, n, "the database is unreachable");
			n = 0;
			gl_log(GL_LOG_ERROR, "audit: writer stopping with the database unreachable: rows dropped "
					     "(ok %llu, denied %llu, error %llu, other %llu so far)",
			       (unsigned long long)w->dropped[OUT_OK], (unsigned long long)w->dropped[OUT_DENIED],
			       (unsigned long long)w->dropped[OUT_ERROR], (unsigned long long)w->dropped[OUT_OTHER]);
			pthread_mutex_unlock(&w->mu);
			break;
		}
		usleep((useconds_t)backoff_ms * 1000);
		if (backoff_ms < 5000)
			backoff_ms *= 2;
	}
	pthread_mutex_lock(&w->mu);
	w->done = 1;
	pthread_cond_broadcast(&w->finished);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int gl_audit_writer_start(const char *dsn, size_t capacity, int block_ms, struct gl_audit_writer **out,
			  struct gl_err *err)
{
	struct gl_audit_writer *w = gl_xcalloc(1, sizeof *w);
	int rc;
	*out = NULL;
	w->dsn = gl_xstrdup(dsn);
	w->cap = capacity ? capacity : 1;
	w->ring = gl_xcalloc(w->cap, sizeof *w->ring);
	w->block_ms = block_ms;
	w->lim = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(60);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->nonempty, NULL);
	pthread_cond_init(&w->nonfull, NULL);
	pthread_cond_init(&w->finished, NULL);
	/* connect now: a misconfigured database shows at startup, not as drops */
	if ((rc = writer_conn(w, err))) {
		gl_err_prefix(err, "audit writer: ");
		gl_audit_writer_stop(w);
		return rc;
	}
	month_roll(w);
	if ((rc = pthread_create(&w->th, NULL, writer_main, w)) != 0) {
		rc = gl_err_set(err, GL_EIO, "audit writer: pthread_create: %s", strerror(rc));
		gl_audit_writer_stop(w);
		return rc;
	}
	w->started = 1;
	*out = w;
	return 0;
}

void gl_audit_writer_submit(struct gl_audit_writer *w, const struct gl_audit_entry *e)
{
	struct qent *q = qent_new(e);
	struct timespec dl;
	int timed_out = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += w->block_ms / 1000;
	dl.tv_nsec += (long)(w->block_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	while (w->len == w->cap && !w->stopping && !timed_out)
		timed_out = pthread_cond_timedwait(&w->nonfull, &w->mu, &dl) == ETIMEDOUT;
	if (w->len == w->cap || w->stopping) {
		w->dropped[outcome_idx(q->e.outcome)]++;
		pthread_mutex_unlock(&w->mu);
		free(q);
		return;
	}
	w->ring[(w->head + w->len) % w->cap] = q;
	w->len++;
	pthread_cond_signal(&w->nonempty);
	pthread_mutex_unlock(&w->mu);
}

void gl_audit_writer_stop(struct gl_audit_writer *w)
{
	if (!w)
		return;
	if (w->started) {
		struct timespec dl;
		int done;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += GL_AUDIT_STOP_GRACE_MS / 1000;
		pthread_mutex_lock(&w->mu);
		w->stopping = 1;
		pthread_cond_broadcast(&w->nonempty);
		pthread_cond_broadcast(&w->nonfull);
		/* the rows queued are records of requests already answered: worth
		 * a wait, not an unbounded one (a lock held on audit_log) */
		while (!w->done)
			if (pthread_cond_timedwait(&w->finished, &w->mu, &dl) == ETIMEDOUT)
				break;
		done = w->done;
		pthread_mutex_unlock(&w->mu);
		if (!done) {
			gl_log(GL_LOG_WARN,
			       "audit: writer: rows still not written %d s into the stop (audit_log locked?): cancelling; "
			       "the rows left go to this log at ERROR",
			       GL_AUDIT_STOP_GRACE_MS / 1000);
			gl_dbcancel_request(GL_DBCANCEL_AUDIT);
		}
		pthread_join(w->th, NULL);
	}
	while (w->len) {
		free(w->ring[w->head]);
		w->head = (w->head + 1) % w->cap;
		w->len--;
	}
	free(w->ring);
	PQfinish(w->c);
	pthread_cond_destroy(&w->nonempty);
	pthread_cond_destroy(&w->nonfull);
	pthread_cond_destroy(&w->finished);
	pthread_mutex_destroy(&w->mu);
	free(w->dsn);
	free(w);
}

void gl_audit_writer_metrics(struct gl_audit_writer *w, struct gl_strbuf *o)
{
	pthread_mutex_lock(&w->mu);
	gl_strbuf_printf(o,
			 "# HELP gpuledger_audit_queue_depth Audit rows waiting for the writer.\n"
			 "# TYPE gpuledger_audit_queue_depth gauge\ngpuledger_audit_queue_depth %zu\n"
			 "# HELP gpuledger_audit_queue_capacity Size of the audit queue.\n"
			 "# TYPE gpuledger_audit_queue_capacity gauge\ngpuledger_audit_queue_capacity %zu\n"
			 "# HELP gpuledger_audit_rows_written_total Audit rows the writer committed.\n"
			 "# TYPE gpuledger_audit_rows_written_total counter\ngpuledger_audit_rows_written_total %llu\n"
			 "# HELP gpuledger_audit_write_errors_total Audit rows the database refused.\n"
			 "# TYPE gpuledger_audit_write_errors_total counter\ngpuledger_audit_write_errors_total %llu\n"
			 "# HELP gpuledger_audit_rows_dropped_total Audit rows lost (queue full, database gone at stop, refused), by outcome.\n"
			 "# TYPE gpuledger_audit_rows_dropped_total counter\n",
			 w->len, w->cap, (unsigned long long)w->written, (unsigned long long)w->write_errors);
	for (int i = 0; i < OUT_N; i++)
		gl_strbuf_printf(o, "gpuledger_audit_rows_dropped_total{outcome=\"%s\"} %llu\n", out_names[i],
				 (unsigned long long)w->dropped[i]);
	pthread_mutex_unlock(&w->mu);
}

/* Run as a superuser. The database owner (the role that migrates) and
 * every other role holding privileges on the log (the service's role,
 * granted by gl_app_grant) keep SELECT and INSERT, nothing else; nobody
 * keeps any privilege on a partition (they are reached through the log);
 * ownership of the table, its partitions, the trigger function, the
 * partition functions and the schema goes to gpuledger_audit, because an
 * owner can disable triggers and a schema owner can drop any table. */
static const char harden_sql[] =
	"DO $$\n"
	"DECLARE\n"
	"    own name := (SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database());\n"
	"    p regclass;\n"
	"    g name;\n"
	"BEGIN\n"
	"    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'gpuledger_audit') THEN\n"
	"        CREATE ROLE gpuledger_audit NOLOGIN;\n"
	"    END IF;\n"
	"    IF (SELECT rolsuper FROM pg_roles WHERE rolname = own) THEN\n"
	"        RAISE EXCEPTION 'the database owner % is a superuser: nothing can bind it', own;\n"
	"    END IF;\n"
	"    ALTER TABLE public.audit_log OWNER TO gpuledger_audit;\n"
	"    FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'public.audit_log'::regclass LOOP\n"
	"        EXECUTE format('ALTER TABLE %s OWNER TO gpuledger_audit', p);\n"
	"        EXECUTE format('REVOKE ALL ON %s FROM PUBLIC, %I', p, own);\n"
	"        FOR g IN SELECT DISTINCT pg_get_userbyid(a.grantee) FROM pg_class c, aclexplode(c.relacl) a\n"
	"                  WHERE c.oid = p AND a.grantee NOT IN (0, c.relowner) LOOP\n"
	"            EXECUTE format('REVOKE ALL ON %s FROM %I', p, g);\n"
	"        END LOOP;\n"
	"    END LOOP;\n"
	"    ALTER FUNCTION public.gl_audit_reject() OWNER TO gpuledger_audit;\n"
	"    ALTER FUNCTION public.gl_audit_partitions_ensure(date, integer) OWNER TO gpuledger_audit;\n"
	"    ALTER FUNCTION public.gl_audit_partitions_drop(date) OWNER TO gpuledger_audit;\n"
	"    EXECUTE format('REVOKE ALL ON public.audit_log FROM PUBLIC, %I', own);\n"
	"    FOR g IN SELECT DISTINCT pg_get_userbyid(a.grantee) FROM pg_class c, aclexplode(c.relacl) a\n"
	"              WHERE c.oid = 'public.audit_log'::regclass AND a.grantee NOT IN (0, c.relowner) LOOP\n"
	"        EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON public.audit_log FROM %I', g);\n"
	"    END LOOP;\n"
	"    EXECUTE format('GRANT SELECT, INSERT ON public.audit_log TO %I', own);\n"
	"    ALTER SCHEMA public OWNER TO gpuledger_audit;\n"
	"    EXECUTE format('GRANT USAGE, CREATE ON SCHEMA public TO %I', own);\n"
	"END $$";

int gl_audit_harden(struct gl_store *st, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	return gl_db_exec(c, harden_sql, err);
}

int gl_audit_hardened(struct gl_store *st, int *yes, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc = gl_db_query(c, "SELECT pg_get_userbyid(relowner) = 'gpuledger_audit' FROM pg_class"
				" WHERE oid = 'public.audit_log'::regclass", 0, NULL, &r, err);
	*yes = !rc && PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	return rc;
}
