/* Job batches and the staging merge (see include/gl/jobs.h). */
#include "gl/jobs.h"
#include "db_int.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gl_jobs_batch {
	int cluster_id;
	struct gl_strbuf data;   /* rows in `jobs` COPY format (jobs_copy_columns) */
	struct gl_strbuf keys;   /* each row's job_key, unescaped, NUL-terminated */
	size_t *row_off;         /* start of row i in data (row i ends at row_off[i+1] or data.len) */
	size_t *key_off;
	size_t rows, cap;
	/* fresh mode (gl_jobs_batch_set_fresh): the keys inserted so far, owned */
	int fresh;
	char **mine;
	size_t mine_n, mine_mask;
	/* streaming (gl_jobs_batch_stream): new rows go to an open COPY as they
	 * are added, so the server loads while the caller builds rows */
	PGconn *stream_c;
	int streaming, stream_rc;
	int64_t streamed;
	struct gl_strbuf sendbuf;
	char stream_msg[240];
};

static int mine_has(const struct gl_jobs_batch *b, const char *s);
static void mine_add(struct gl_jobs_batch *b, const char *s);
static int stream_open(struct gl_jobs_batch *b);
static void stream_send(struct gl_jobs_batch *b);

/* Rows are written once, in the column order of `jobs`, so the same bytes
 * can go straight into jobs by COPY (new keys: the bulk-insert path, as fast
 * as a raw COPY) or through the staging table (keys that exist: merge). */
const char gl_jobs_stage_columns[] =
	"cluster_id, job_key, job_id, job_id_raw, array_job_id, array_task_id, het_job_id, het_offset, name, "
	"user_name, uid, group_name, account, partition, qos, wckey, namespace, state, state_known, "
	"state_by_uid, exit_code, submit_at, eligible_at, start_at, end_at, elapsed_s, suspended_s, timelimit_s, "
	"nnodes, ncpus, req_mem_mb, gpu_micro, req_gpu_micro, phys_micro, gpu_type, gpu_share, gpu_uuids, gpu_group, "
	"gpu_note, req_tres, alloc_tres, node_list, nodes, tags, last_seen_at, array_tasks, array_tasks_partial";

/* seq keeps COPY order so the last row of a key wins in the merge */
static const char stage_ddl[] =
	"CREATE TEMP TABLE IF NOT EXISTS jobs_stage ("
	" seq bigserial, cluster_id integer, job_key text, job_id text, job_id_raw text, array_job_id bigint,"
	" array_task_id bigint, het_job_id bigint, het_offset integer, name text, user_name text, uid bigint,"
	" group_name text, account text, partition text, qos text, wckey text, namespace text, state text,"
	" state_known boolean, state_by_uid bigint, exit_code text, submit_at timestamptz, eligible_at timestamptz,"
	" start_at timestamptz, end_at timestamptz, elapsed_s bigint, suspended_s bigint, timelimit_s bigint,"
	" nnodes integer, ncpus integer, req_mem_mb bigint, gpu_micro bigint, req_gpu_micro bigint, phys_micro bigint,"
	" gpu_type text, gpu_share text, gpu_uuids jsonb, gpu_group text, gpu_note text, req_tres text, alloc_tres text, node_list text, nodes text[], tags jsonb, last_seen_at timestamptz,"
	" array_tasks integer, array_tasks_partial boolean"
	") ON COMMIT DELETE ROWS";

/* One statement: dedupe the batch, upsert, and report what changed. A row
 * whose loaded columns are all equal is left alone (no dead tuple, no
 * updated_at bump), which keeps re-ingesting an unchanged file cheap.
 * An older view of a job never replaces a newer one: a row with an end is
 * not replaced by one without, nor a row with a start by one without
 * (re-ingesting yesterday's file would turn finished jobs back into running
 * ones, billed to now). Such rows count as unchanged. */
static const char merge_sql[] =
	"WITH src AS ("
	" SELECT DISTINCT ON (job_key) * FROM jobs_stage ORDER BY job_key, seq DESC"
	"), up AS ("
	" INSERT INTO jobs AS j (cluster_id, job_key, job_id, job_id_raw, array_job_id, array_task_id, het_job_id,"
	"  het_offset, name, user_name, uid, group_name, account, partition, qos, wckey, namespace, state,"
	"  state_known, state_by_uid, exit_code, submit_at, eligible_at, start_at, end_at, elapsed_s, suspended_s,"
	"  timelimit_s, nnodes, ncpus, req_mem_mb, gpu_micro, req_gpu_micro, phys_micro, gpu_type, gpu_share, gpu_uuids,"
	"  gpu_group, gpu_note, req_tres, alloc_tres, node_list, nodes, tags, last_seen_at, array_tasks, array_tasks_partial)"
	" SELECT $1::integer, job_key, job_id, job_id_raw, array_job_id, array_task_id, het_job_id, het_offset, name,"
	"  user_name, uid, group_name, account, partition, qos, wckey, namespace, state, state_known, state_by_uid,"
	"  exit_code, submit_at, eligible_at, start_at, end_at,"
	"  elapsed_s, suspended_s, timelimit_s, nnodes, ncpus, req_mem_mb, gpu_micro, req_gpu_micro, phys_micro, gpu_type,"
	"  gpu_share, gpu_uuids, gpu_group, gpu_note, req_tres, alloc_tres, node_list, nodes, tags, last_seen_at,"
	"  array_tasks, array_tasks_partial"
	" FROM src"
	" ON CONFLICT (cluster_id, job_key) DO UPDATE SET"
	"  job_id = EXCLUDED.job_id, job_id_raw = EXCLUDED.job_id_raw, array_job_id = EXCLUDED.array_job_id,"
	"  array_task_id = EXCLUDED.array_task_id, het_job_id = EXCLUDED.het_job_id, het_offset = EXCLUDED.het_offset,"
	"  name = EXCLUDED.name, user_name = EXCLUDED.user_name, uid = EXCLUDED.uid, group_name = EXCLUDED.group_name,"
	"  account = EXCLUDED.account, partition = EXCLUDED.partition, qos = EXCLUDED.qos, wckey = EXCLUDED.wckey,"
	"  namespace = EXCLUDED.namespace, state = EXCLUDED.state, state_known = EXCLUDED.state_known,"
	"  state_by_uid = EXCLUDED.state_by_uid, exit_code = EXCLUDED.exit_code, submit_at = EXCLUDED.submit_at,"
	"  eligible_at = EXCLUDED.eligible_at, start_at = EXCLUDED.start_at, end_at = EXCLUDED.end_at,"
	"  elapsed_s = EXCLUDED.elapsed_s, suspended_s = EXCLUDED.suspended_s, timelimit_s = EXCLUDED.timelimit_s,"
	"  nnodes = EXCLUDED.nnodes, ncpus = EXCLUDED.ncpus, req_mem_mb = EXCLUDED.req_mem_mb,"
	"  gpu_micro = EXCLUDED.gpu_micro, req_gpu_micro = EXCLUDED.req_gpu_micro, phys_micro = EXCLUDED.phys_micro,"
	"  gpu_type = EXCLUDED.gpu_type, gpu_share = EXCLUDED.gpu_share, gpu_uuids = EXCLUDED.gpu_uuids,"
	"  gpu_group = EXCLUDED.gpu_group, gpu_note = EXCLUDED.gpu_note,"
	"  req_tres = EXCLUDED.req_tres, alloc_tres = EXCLUDED.alloc_tres, node_list = EXCLUDED.node_list,"
	"  nodes = EXCLUDED.nodes, tags = EXCLUDED.tags, last_seen_at = EXCLUDED.last_seen_at,"
	"  array_tasks = EXCLUDED.array_tasks, array_tasks_partial = EXCLUDED.array_tasks_partial, updated_at = now()"
	" WHERE (j.end_at IS NULL OR EXCLUDED.end_at IS NOT NULL)"
	"  AND (j.start_at IS NULL OR EXCLUDED.start_at IS NOT NULL)"
	"  AND (j.job_id, j.job_id_raw, j.array_job_id, j.array_task_id, j.het_job_id, j.het_offset, j.name,"
	"  j.user_name, j.uid, j.group_name, j.account, j.partition, j.qos, j.wckey, j.namespace, j.state,"
	"  j.state_known, j.state_by_uid, j.exit_code, j.submit_at, j.eligible_at, j.start_at, j.end_at, j.elapsed_s,"
	"  j.suspended_s, j.timelimit_s, j.nnodes, j.ncpus, j.req_mem_mb, j.gpu_micro, j.req_gpu_micro, j.phys_micro,"
	"  j.gpu_type, j.gpu_share, j.gpu_uuids, j.gpu_group, j.gpu_note,"
	"  j.req_tres, j.alloc_tres, j.node_list, j.nodes, j.tags, j.last_seen_at, j.array_tasks, j.array_tasks_partial)"
	"  IS DISTINCT FROM"
	" (EXCLUDED.job_id, EXCLUDED.job_id_raw, EXCLUDED.array_job_id, EXCLUDED.array_task_id, EXCLUDED.het_job_id,"
	"  EXCLUDED.het_offset, EXCLUDED.name, EXCLUDED.user_name, EXCLUDED.uid, EXCLUDED.group_name,"
	"  EXCLUDED.account, EXCLUDED.partition, EXCLUDED.qos, EXCLUDED.wckey, EXCLUDED.namespace, EXCLUDED.state,"
	"  EXCLUDED.state_known, EXCLUDED.state_by_uid, EXCLUDED.exit_code, EXCLUDED.submit_at, EXCLUDED.eligible_at,"
	"  EXCLUDED.start_at, EXCLUDED.end_at, EXCLUDED.elapsed_s, EXCLUDED.suspended_s, EXCLUDED.timelimit_s,"
	"  EXCLUDED.nnodes, EXCLUDED.ncpus, EXCLUDED.req_mem_mb, EXCLUDED.gpu_micro, EXCLUDED.req_gpu_micro,"
	"  EXCLUDED.phys_micro, EXCLUDED.gpu_type, EXCLUDED.gpu_share, EXCLUDED.gpu_uuids, EXCLUDED.gpu_group,"
	"  EXCLUDED.gpu_note, EXCLUDED.req_tres, EXCLUDED.alloc_tres, EXCLUDED.node_list, EXCLUDED.nodes,"
	"  EXCLUDED.tags, EXCLUDED.last_seen_at, EXCLUDED.array_tasks, EXCLUDED.array_tasks_partial)"
	" RETURNING (xmax = 0) AS ins"
	") SELECT (SELECT count(*) FROM src), count(*) FILTER (WHERE ins), count(*) FILTER (WHERE NOT ins) FROM up";

struct gl_jobs_batch *gl_jobs_batch_new(int cluster_id)
{
	struct gl_jobs_batch *b = gl_xcalloc(1, sizeof *b);
	b->cluster_id = cluster_id;
	gl_strbuf_init(&b->data);
	gl_strbuf_init(&b->keys);
	return b;
}

void gl_jobs_batch_free(struct gl_jobs_batch *b)
{
	if (!b)
		return;
	gl_strbuf_fini(&b->data);
	gl_strbuf_fini(&b->keys);
	free(b->row_off);
	free(b->key_off);
	gl_jobs_batch_set_fresh(b, 0);
	free(b);
}

static void batch_clear(struct gl_jobs_batch *b)
{
	gl_strbuf_reset(&b->data);
	gl_strbuf_reset(&b->keys);
	b->rows = 0;
}

size_t gl_jobs_batch_rows(const struct gl_jobs_batch *b)
{
	return b->rows;
}

size_t gl_jobs_batch_bytes(const struct gl_jobs_batch *b)
{
	return b->data.len;
}

const char *gl_jobs_batch_copy_data(const struct gl_jobs_batch *b, size_t *len)
{
	*len = b->data.len;
	return gl_strbuf_cstr(&b->data);
}

static void put_str(struct gl_strbuf *o, const char *s)
{
	if (!s)
		gl_strbuf_append(o, "\\N", 2);
	else
		gl_strbuf_put_copy_text(o, s, strlen(s));
	gl_strbuf_putc(o, '\t');
}

/* -1 means "none" for counts and ids */
static void put_int(struct gl_strbuf *o, int64_t v, int64_t null_val)
{
	if (v == null_val)
		gl_strbuf_append(o, "\\N", 2);
	else
		gl_strbuf_put_i64(o, v);
	gl_strbuf_putc(o, '\t');
}

static void put_nodes(struct gl_strbuf *o, const char *json)
{
	/* nodes_json is a JSON array of plain strings: turn it into a text[]
	 * literal with every element quoted, then COPY-escape it */
	struct gl_strbuf arr = GL_STRBUF_INIT;
	const char *p = json;
	int in = 0;

	if (!json) {
		gl_strbuf_append(o, "\\N\t", 3);
		return;
	}
	gl_strbuf_putc(&arr, '{');
	for (; *p; p++) {
		if (!in) {
			if (*p == '"') {
				if (arr.len > 1)
					gl_strbuf_putc(&arr, ',');
				gl_strbuf_putc(&arr, '"');
				in = 1;
			}
			continue;
		}
		if (*p == '\\' && p[1]) {
			p++;
			if (*p == '"' || *p == '\\')
				gl_strbuf_putc(&arr, '\\');
			gl_strbuf_putc(&arr, *p);
		} else if (*p == '"') {
			gl_strbuf_putc(&arr, '"');
			in = 0;
		} else {
			gl_strbuf_putc(&arr, *p);
		}
	}
	gl_strbuf_putc(&arr, '}');
	gl_strbuf_put_copy_text(o, arr.p, arr.len);
	gl_strbuf_putc(o, '\t');
	gl_strbuf_fini(&arr);
}

/* "2026-11-22 16:03:53+00": hand-formatted, this runs five times per row */
static void put_time(struct gl_strbuf *o, int64_t t)
{
	char buf[32], *p = buf;
	int64_t days, rem, y;
	unsigned m, d;

	if (t == GL_TIME_NONE) {
		gl_strbuf_append(o, "\\N\t", 3);
		return;
	}
	days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
	rem = t - days * 86400;
	gl_timeutil_civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999) {
		gl_strbuf_printf(o, "%lld\t", (long long)y); /* rejected by COPY: impossible from our parsers */
		return;
	}
	*p++ = (char)('0' + y / 1000);
	*p++ = (char)('0' + y / 100 % 10);
	*p++ = (char)('0' + y / 10 % 10);
	*p++ = (char)('0' + y % 10);
	*p++ = '-';
	*p++ = (char)('0' + m / 10);
	*p++ = (char)('0' + m % 10);
	*p++ = '-';
	*p++ = (char)('0' + d / 10);
	*p++ = (char)('0' + d % 10);
	*p++ = ' ';
	*p++ = (char)('0' + rem / 36000);
	*p++ = (char)('0' + rem / 3600 % 10);
	*p++ = ':';
	*p++ = (char)('0' + rem % 3600 / 600);
	*p++ = (char)('0' + rem % 3600 / 60 % 10);
	*p++ = ':';
	*p++ = (char)('0' + rem % 60 / 10);
	*p++ = (char)('0' + rem % 10);
	memcpy(p, "+00\t", 4);
	gl_strbuf_append(o, buf, (size_t)(p - buf) + 4);
}

/* One row in `jobs` COPY format (gl_jobs_stage_columns order). */
static void put_row(struct gl_strbuf *o, int cluster_id, const struct gl_jobrow *r)
{
	gl_strbuf_put_i64(o, cluster_id);
	gl_strbuf_putc(o, '\t');
	put_str(o, r->job_key);
	put_str(o, r->job_id);
	put_str(o, r->job_id_raw);
	put_int(o, r->array_job_id, -1);
	put_int(o, r->array_task_id, -1);
	put_int(o, r->het_job_id, -1);
	put_int(o, r->het_offset, -1);
	put_str(o, r->name);
	put_str(o, r->user_name);
	put_int(o, r->uid, -1);
	put_str(o, r->group_name);
	put_str(o, r->account);
	put_str(o, r->partition);
	put_str(o, r->qos);
	put_str(o, r->wckey);
	put_str(o, r->namespace_);
	put_str(o, r->state);
	gl_strbuf_append(o, r->state_known ? "t\t" : "f\t", 2);
	put_int(o, r->state_by_uid, -1);
	put_str(o, r->exit_code);
	put_time(o, r->submit_s);
	put_time(o, r->eligible_s);
	put_time(o, r->start_s);
	/* An end before the start (a controller's clock stepped back) held
	 * the GPUs for no time: stored as it was, every overlap sum took the
	 * negative span off the owner's allocation and cost and put chargeback
	 * out of step with capacity. */
	put_time(o, r->end_s != GL_TIME_NONE && r->start_s != GL_TIME_NONE && r->end_s < r->start_s ? r->start_s
												  : r->end_s);
	put_int(o, r->elapsed_s, -1);
	put_int(o, r->suspended_s, -1);
	put_int(o, r->timelimit_s, -1);
	put_int(o, r->nnodes, -1);
	put_int(o, r->ncpus, -1);
	put_int(o, r->req_mem_mb, -1);
	put_int(o, r->gpu_micro, INT64_MIN);
	put_int(o, r->req_gpu_micro, INT64_MIN);
	put_int(o, r->phys_micro, INT64_MIN);
	put_str(o, r->gpu_type);
	put_str(o, r->gpu_share);
	put_str(o, r->gpu_uuids_json);
	put_str(o, r->gpu_group);
	put_str(o, r->gpu_note);
	put_str(o, r->req_tres);
	put_str(o, r->alloc_tres);
	put_str(o, r->node_list);
	put_nodes(o, r->nodes_json);
	put_str(o, r->tags_json ? r->tags_json : "{}");
	put_time(o, r->last_seen_s);
	put_int(o, r->array_tasks, 0);
	gl_strbuf_append(o, r->array_tasks_partial ? "t\t" : "f\t", 2);
	o->p[o->len - 1] = '\n'; /* the last column ends the row */
}

void gl_jobs_batch_add(struct gl_jobs_batch *b, const struct gl_jobrow *r)
{
	const char *key = r->job_key ? r->job_key : "";
	/* fresh and streaming: a key new to this load goes straight into the
	 * open COPY; a repeated one takes the batch (and the staging merge) */
	if (b->stream_c && b->fresh && !mine_has(b, key) && stream_open(b)) {
		put_row(&b->sendbuf, b->cluster_id, r);
		mine_add(b, key);
		b->streamed++;
		/* big enough to be cheap per call, small enough that the server starts early */
		if (b->sendbuf.len >= ((size_t)256 << 10))
			stream_send(b);
		return;
	}
	if (b->rows == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 1024;
		b->row_off = gl_xrealloc(b->row_off, b->cap * sizeof *b->row_off);
		b->key_off = gl_xrealloc(b->key_off, b->cap * sizeof *b->key_off);
	}
	b->row_off[b->rows] = b->data.len;
	b->key_off[b->rows] = b->keys.len;
	gl_strbuf_puts(&b->keys, key);
	gl_strbuf_putc(&b->keys, '\0');
	put_row(&b->data, b->cluster_id, r);
	b->rows++;
}

/* A set of strings by pointer, for the keys of one batch. */
struct keyset {
	const char **slot;
	size_t mask;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void keyset_init(struct keyset *k, size_t n)
{
	size_t cap = 16;
	while (cap < n * 2)
		cap *= 2;
	k->slot = gl_xcalloc(cap, sizeof *k->slot);
	k->mask = cap - 1;
}

/* Returns 1 when s was already present, else inserts it (s must outlive the set). */
static int keyset_add(struct keyset *k, const char *s)
{
	for (size_t i = hash_str(s) & k->mask;; i = (i + 1) & k->mask) {
		if (!k->slot[i]) {
			k->slot[i] = s;
			return 0;
		}
		if (!strcmp(k->slot[i], s))
			return 1;
	}
}

static int keyset_has(const struct keyset *k, const char *s)
{
	for (size_t i = hash_str(s) & k->mask;; i = (i + 1) & k->mask) {
		if (!k->slot[i])
			return 0;
		if (!strcmp(k->slot[i], s))
			return 1;
	}
}

static void stream_fail(struct gl_jobs_batch *b, const char *what, PGresult *r)
{
	const char *m = r ? PQresultErrorMessage(r) : "";
	if (!m || !*m)
		m = PQerrorMessage(b->stream_c);
	if (!b->stream_rc) {
		b->stream_rc = GL_EDB;
		size_t n;
		snprintf(b->stream_msg, sizeof b->stream_msg, "%s: %s", what, m);
		n = strlen(b->stream_msg);
		while (n && (b->stream_msg[n - 1] == '\n' || b->stream_msg[n - 1] == ' '))
			b->stream_msg[--n] = '\0';
	}
}

static void stream_send(struct gl_jobs_batch *b)
{
	if (b->sendbuf.len && !b->stream_rc && PQputCopyData(b->stream_c, b->sendbuf.p, (int)b->sendbuf.len) != 1)
		stream_fail(b, "COPY jobs data", NULL);
	gl_strbuf_reset(&b->sendbuf);
}

/* Opens the COPY on first use; 1 when rows can be streamed. */
static int stream_open(struct gl_jobs_batch *b)
{
	char sql[sizeof gl_jobs_stage_columns + 64];
	PGresult *r;
	if (b->stream_rc)
		return 0;
	if (b->streaming)
		return 1;
	snprintf(sql, sizeof sql, "COPY jobs (%s) FROM STDIN", gl_jobs_stage_columns);
	r = PQexec(b->stream_c, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		stream_fail(b, "COPY jobs", r);
		PQclear(r);
		return 0;
	}
	PQclear(r);
	b->streaming = 1;
	return 1;
}

/* Ends an open COPY: commit_it 0 aborts it (the transaction then fails). */
static void stream_end(struct gl_jobs_batch *b, int commit_it)
{
	PGresult *r;
	if (!b->streaming)
		return;
	if (commit_it)
		stream_send(b);
	if (PQputCopyEnd(b->stream_c, commit_it && !b->stream_rc ? NULL : "batch abandoned") != 1)
		stream_fail(b, "COPY jobs end", NULL);
	while ((r = PQgetResult(b->stream_c))) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && commit_it)
			stream_fail(b, "COPY jobs", r);
		PQclear(r);
	}
	b->streaming = 0;
	gl_strbuf_reset(&b->sendbuf);
}

void gl_jobs_batch_stream(struct gl_jobs_batch *b, struct gl_store *store)
{
	PGconn *c = gl_db_conn(store);
	b->stream_c = b->fresh ? c : NULL;
}

void gl_jobs_batch_set_fresh(struct gl_jobs_batch *b, int fresh)
{
	stream_end(b, 0);
	b->stream_c = NULL;
	b->stream_rc = 0;
	b->streamed = 0;
	gl_strbuf_fini(&b->sendbuf);
	if (b->mine) {
		for (size_t i = 0; i <= b->mine_mask; i++)
			free(b->mine[i]);
		free(b->mine);
	}
	b->mine = NULL;
	b->mine_n = 0;
	b->mine_mask = 0;
	b->fresh = fresh;
}

static int mine_has(const struct gl_jobs_batch *b, const char *s)
{
	if (!b->mine)
		return 0;
	for (size_t i = hash_str(s) & b->mine_mask;; i = (i + 1) & b->mine_mask) {
		if (!b->mine[i])
			return 0;
		if (!strcmp(b->mine[i], s))
			return 1;
	}
}

static void mine_put(char **slot, size_t mask, char *s)
{
	size_t i = hash_str(s) & mask;
	while (slot[i])
		i = (i + 1) & mask;
	slot[i] = s;
}

/* s is new to the set (the caller checked) */
static void mine_add(struct gl_jobs_batch *b, const char *s)
{
	if (!b->mine || (b->mine_n + 1) * 2 > b->mine_mask + 1) {
		size_t cap = b->mine ? (b->mine_mask + 1) * 2 : 1024;
		char **slot = gl_xcalloc(cap, sizeof *slot);
		for (size_t i = 0; b->mine && i <= b->mine_mask; i++)
			if (b->mine[i])
				mine_put(slot, cap - 1, b->mine[i]);
		free(b->mine);
		b->mine = slot;
		b->mine_mask = cap - 1;
	}
	mine_put(b->mine, b->mine_mask, gl_xstrdup(s));
	b->mine_n++;
}

int gl_jobs_merge(struct gl_store *store, int cluster_id, struct gl_jobs_batch *b, struct gl_jobs_merge_counts *out,
		  struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char copy_sql[sizeof gl_jobs_stage_columns + 64], cid[16];
	struct gl_strbuf arr = GL_STRBUF_INIT, direct = GL_STRBUF_INIT, staged = GL_STRBUF_INIT;
	struct keyset found = {0}, seen = {0};
	PGresult *r = NULL, *kr = NULL;
	size_t n_direct = 0, n_staged = 0;
	int64_t n_streamed_now = 0;
	int rc = 0;

	memset(out, 0, sizeof *out);
	if (b->streaming || b->stream_rc) {
		stream_end(b, 1);
		if (b->stream_rc) {
			rc = gl_err_set(err, b->stream_rc, "%s", b->stream_msg);
			goto out;
		}
		out->inserted += b->streamed;
		n_streamed_now = b->streamed;
		b->streamed = 0;
	}
	if (b->rows == 0)
		goto out;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	/* which keys exist already: one indexed lookup for the whole batch;
	 * a cluster with no jobs yet (a first load) needs none, and neither
	 * does a fresh batch, which knows the only keys there are: its own */
	if (!b->fresh &&
	    (rc = gl_db_query(c, "SELECT EXISTS (SELECT 1 FROM jobs WHERE cluster_id = $1)", 1, (const char *[]){cid},
			      &kr, err)))
		goto out;
	if (!b->fresh && PQgetvalue(kr, 0, 0)[0] == 't') {
		PQclear(kr);
		kr = NULL;
		gl_strbuf_putc(&arr, '{');
		for (size_t i = 0; i < b->rows; i++) {
			const char *k = b->keys.p + b->key_off[i];
			if (i)
				gl_strbuf_putc(&arr, ',');
			gl_strbuf_putc(&arr, '"');
			for (; *k; k++) {
				if (*k == '"' || *k == '\\')
					gl_strbuf_putc(&arr, '\\');
				gl_strbuf_putc(&arr, *k);
			}
			gl_strbuf_putc(&arr, '"');
		}
		gl_strbuf_putc(&arr, '}');
		if ((rc = gl_db_query(c, "SELECT job_key FROM jobs WHERE cluster_id = $1 AND job_key = ANY($2::text[])", 2,
				      (const char *[]){cid, arr.p}, &kr, err)))
			goto out;
		keyset_init(&found, (size_t)PQntuples(kr) + 1);
		for (int i = 0; i < PQntuples(kr); i++)
			keyset_add(&found, PQgetvalue(kr, i, 0));
	} else {
		keyset_init(&found, 1);
	}
	/* new keys (first occurrence) go straight in; the rest merge after them,
	 * so a key repeated in the batch still ends with its last row */
	keyset_init(&seen, b->rows);
	for (size_t i = 0; i < b->rows; i++) {
		const char *k = b->keys.p + b->key_off[i];
		size_t from = b->row_off[i], to = i + 1 < b->rows ? b->row_off[i + 1] : b->data.len;
		if (!keyset_has(&found, k) && !mine_has(b, k) && !keyset_add(&seen, k)) {
			gl_strbuf_append(&direct, b->data.p + from, to - from);
			n_direct++;
			if (b->fresh)
				mine_add(b, k);
		} else {
			gl_strbuf_append(&staged, b->data.p + from, to - from);
			n_staged++;
		}
	}
	if (n_direct) {
		snprintf(copy_sql, sizeof copy_sql, "COPY jobs (%s) FROM STDIN", gl_jobs_stage_columns);
		if ((rc = gl_db_copy_in(c, copy_sql, direct.p, direct.len, err)))
			goto out;
		out->inserted += (int64_t)n_direct;
	}
	if (n_staged) {
		if ((rc = gl_db_exec(c, stage_ddl, err)))
			goto out;
		snprintf(copy_sql, sizeof copy_sql, "COPY jobs_stage (%s) FROM STDIN", gl_jobs_stage_columns);
		if ((rc = gl_db_copy_in(c, copy_sql, staged.p, staged.len, err)))
			goto out;
		if ((rc = gl_db_query(c, merge_sql, 1, (const char *[]){cid}, &r, err)))
			goto out;
		out->inserted += atoll(PQgetvalue(r, 0, 1));
		out->updated += atoll(PQgetvalue(r, 0, 2));
		/* the staging rows vanish at COMMIT (ON COMMIT DELETE ROWS); clear
		 * now too so a second batch in the same transaction starts empty */
		if ((rc = gl_db_exec(c, "TRUNCATE jobs_stage", err)))
			goto out;
	}
	/* duplicates inside the batch count as unchanged: they changed nothing */
	out->unchanged = (int64_t)b->rows - (out->inserted - n_streamed_now) - out->updated;
	batch_clear(b);
out:
	PQclear(r);
	PQclear(kr);
	free(found.slot);
	free(seen.slot);
	gl_strbuf_fini(&arr);
	gl_strbuf_fini(&direct);
	gl_strbuf_fini(&staged);
	return rc;
}

int gl_jobs_cluster_ensure(struct gl_store *store, const char *name, const char *kind, int *cluster_id, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	char cid[16];
	int rc;

	if ((rc = gl_db_query(c,
			      "WITH ins AS (INSERT INTO clusters (name, kind) VALUES ($1, $2)"
			      " ON CONFLICT (name) DO NOTHING RETURNING cluster_id, kind)"
			      " SELECT cluster_id, kind FROM ins UNION ALL"
			      " SELECT cluster_id, kind FROM clusters WHERE name = $1",
			      2, (const char *[]){name, kind}, &r, err)))
		goto out;
	if (PQntuples(r) < 1) {
		rc = gl_err_set(err, GL_EDB, "cluster '%s': could not be created", name);
		goto out;
	}
	*cluster_id = atoi(PQgetvalue(r, 0, 0));
	if (strcmp(PQgetvalue(r, 0, 1), kind) != 0) {
		char other[32];
		snprintf(other, sizeof other, "%s", PQgetvalue(r, 0, 1));
		snprintf(cid, sizeof cid, "%d", *cluster_id);
		PQclear(r);
		r = NULL;
		/* a cluster with no data yet (only failed runs named it) takes
		 * the kind of the run now: a mistyped `ingest kube --cluster C`
		 * that failed must not lock C out of its Slurm ingest. Asked
		 * apart, as it reads the data tables: the usual path must not
		 * wait on a lock on any of them before its run is on record */
		if ((rc = gl_db_query(c,
				      "UPDATE clusters SET kind = $2 WHERE cluster_id = $1::integer AND kind <> $2"
				      " AND NOT " GL_JOBS_CLUSTER_HAS_DATA_SQL("clusters.cluster_id") " RETURNING kind",
				      2, (const char *[]){cid, kind}, &r, err)))
			goto out;
		if (PQntuples(r) < 1)
			rc = gl_err_set(err, GL_EINVAL, "cluster '%s' is a %s cluster, not %s", name, other, kind);
	}
out:
	PQclear(r);
	return rc;
}

int gl_jobs_lock(struct gl_store *store, int cluster_id, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	char cid[16];
	snprintf(cid, sizeof cid, "%d", cluster_id);
	/* class 0x676c ("gl") keeps us apart from other advisory lock users */
	return gl_db_query(c, "SELECT pg_advisory_xact_lock(26476, $1::integer)", 1, (const char *[]){cid}, NULL, err);
}
