/* sacct ingestion driver (see include/gl/sacct_ingest.h). */
#include "gl/sacct_ingest.h"
#include "gl/jsonw.h"
#include "gl/dbcancel.h"
#include "gl/dcgm_ingest.h"
#include "gl/hostlist.h"
#include "gl/jobs.h"
#include "gl/log.h"
#include "gl/sacct.h"
#include "gl/strbuf.h"
#include "gl/txn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct gl_sacct_ingest {
	struct gl_store *db;
	struct gl_sacct_ingest_opts o;
	struct gl_sacct_layout lay;
	int have_layout;
	int cluster_id;
	int64_t run_id;
	struct gl_jobs_batch *batch;
	struct gl_ingest_stats st;
	int64_t ok_lines;          /* parsed allocations + steps: proof the input is sacct output */
	int committed_any;
	size_t rolled_back;        /* rows merged, then rolled back with their batch */
	struct gl_strbuf partial;  /* an incomplete trailing line between feeds */
	struct gl_strbuf scratch;  /* NUL-terminated copies of the current line's fields */
	struct gl_strbuf nodes;
	struct gl_strbuf tags;     /* the current row's tags: {"comment":...} */
	int64_t line_no;
	int first_line_seen;
};

static int flush(struct gl_sacct_ingest *in, int final, int source_ok, const char *source_error, struct gl_err *err)
{
	struct gl_jobs_merge_counts mc = {0};
	const char *status;
	size_t rows = gl_jobs_batch_rows(in->batch);
	int rc, merged = 0, counted = 0;

	/* nothing parsed at all: this is not sacct output; write nothing */
	if (!in->committed_any && in->ok_lines == 0 && in->st.skipped > 0) {
		return gl_err_set(err, GL_EFORMAT,
				  "%s: not sacct output (none of the first %lld lines parsed; check --delimiter and --fields)",
				  in->o.input_name, (long long)in->st.lines_read);
	}
	if ((rc = gl_txn_begin(in->db, err)))
		return rc;
	if ((rc = gl_jobs_lock(in->db, in->cluster_id, err)) ||
	    (rc = gl_jobs_merge(in->db, in->cluster_id, in->batch, &mc, err)))
		goto fail;
	merged = 1; /* the batch is emptied into the transaction */
	if ((rc = gl_dcgm_ingest_claim_pending(in->db, in->cluster_id, NULL, err)))
		goto fail;
	/* counted now: the run's row commits with the batch */
	in->st.inserted += mc.inserted;
	in->st.updated += mc.updated;
	in->st.unchanged += mc.unchanged;
	counted = 1;
	if (!final)
		status = "running";
	else if (!source_ok)
		status = "failed";
	else
		status = in->st.skipped ? "partial" : "ok";
	if (final && source_ok && in->o.watermark_s != GL_TIME_NONE &&
	    (rc = gl_ingest_watermark_set(in->db, in->o.source, in->cluster_id, in->o.watermark_s, err)))
		goto fail;
	/* an output without a job says nothing of the cluster (a file read
	 * before its cluster ran anything): it does not make the cluster's data
	 * reach its capture time */
	if (final && source_ok && in->o.seen_s > 0 && in->st.inserted + in->st.updated + in->st.unchanged > 0 &&
	    (rc = gl_ingest_observed_set(in->db, in->o.source, in->cluster_id, in->o.seen_s, err)))
		goto fail;
	if ((rc = gl_ingest_run_update(in->db, in->run_id, &in->st, status, source_ok ? NULL : source_error, err)))
		goto fail;
	if ((rc = gl_txn_commit(in->db, err)))
		goto fail;
	in->committed_any = 1;
	return 0;
fail:
	gl_txn_rollback(in->db);
	if (counted) {
		/* rolled back: a failed run counts only what it committed */
		in->st.inserted -= mc.inserted;
		in->st.updated -= mc.updated;
		in->st.unchanged -= mc.unchanged;
	}
	if (merged) /* for the stopped run's "N rows not committed" */
		in->rolled_back += rows;
	return rc;
}

/* A NUL-terminated copy of s in the line's scratch buffer (NULL stays NULL,
 * and so does an empty optional field). to_row reserves the whole line's
 * worth first, so these pointers never move. */
static const char *dup(struct gl_sacct_ingest *in, struct gl_str s, int empty_is_null)
{
	char *p;
	if (!s.p || (empty_is_null && s.len == 0))
		return NULL;
	p = in->scratch.p + in->scratch.len;
	gl_strbuf_append(&in->scratch, s.p, s.len);
	gl_strbuf_putc(&in->scratch, '\0');
	return p;
}

static int add_node(const char *host, void *ud)
{
	struct gl_strbuf *b = ud;
	gl_strbuf_putc(b, b->len ? ',' : '[');
	gl_strbuf_putc(b, '"');
	gl_strbuf_put_json_str(b, host, strlen(host));
	gl_strbuf_putc(b, '"');
	return 0;
}

/* The job's --comment as its tags (read by the runs' grouping), NULL
 * without one. The line is valid UTF-8 (gl_sacct_parse_line). */
static const char *comment_tags(struct gl_sacct_ingest *in, const char *comment)
{
	struct gl_jsonw w;
	if (!comment)
		return NULL;
	gl_strbuf_reset(&in->tags);
	gl_jsonw_init(&w, &in->tags);
	gl_jsonw_object(&w, NULL);
	gl_jsonw_str(&w, "comment", comment);
	gl_jsonw_end(&w);
	return in->tags.p;
}

static void to_row(struct gl_sacct_ingest *in, const struct gl_sacct_rec *rec, size_t line_len, struct gl_jobrow *row)
{
	char key[32 + 255 + 1]; /* "raw:" JobIDRaw (GL_BOUNDS_JOB_ID) "@" submit: never cut */
	const char *state;
	struct gl_str st;

	if (rec->db_index >= 0)
		snprintf(key, sizeof key, "db:%lld", (long long)rec->db_index);
	else
		snprintf(key, sizeof key, "raw:%.*s@%lld", (int)(rec->job_id_raw.p ? rec->job_id_raw.len : rec->job_id.len),
			 rec->job_id_raw.p ? rec->job_id_raw.p : rec->job_id.p, (long long)rec->submit_s);
	if (rec->state == GL_SACCT_JS_UNKNOWN) {
		/* keep the verbatim first token of an unknown state */
		st = rec->state_raw;
		st.len = 0;
		while (st.len < rec->state_raw.len && st.p[st.len] != ' ')
			st.len++;
	} else {
		state = gl_sacct_job_state_name(rec->state);
		st = (struct gl_str){state, strlen(state)};
	}
	/* every field is a slice of the line, plus the key, the state name and
	 * the GPU type, each with its NUL */
	gl_strbuf_reset(&in->scratch);
	gl_strbuf_reserve(&in->scratch, line_len + sizeof key + st.len + GL_SACCT_GPU_TYPE_MAX + 32);
	memset(row, 0, sizeof *row);
	row->job_key = dup(in, (struct gl_str){key, strlen(key)}, 0);
	row->job_id = dup(in, rec->job_id, 0);
	row->job_id_raw = dup(in, rec->job_id_raw, 0);
	row->name = dup(in, rec->job_name, 0);
	row->user_name = dup(in, rec->user, 1);
	row->group_name = dup(in, rec->group, 1);
	row->account = dup(in, rec->account, 1);
	row->partition = dup(in, rec->partition, 1);
	row->qos = dup(in, rec->qos, 1);
	row->wckey = dup(in, rec->wckey, 1);
	row->state = dup(in, st, 0);
	row->exit_code = dup(in, rec->exit_code, 1);
	row->req_tres = dup(in, rec->req_tres, 1);
	row->alloc_tres = dup(in, rec->alloc_tres, 1);
	row->node_list = dup(in, rec->node_list, 1);
	row->gpu_type = dup(in, (struct gl_str){rec->gpu_type, strlen(rec->gpu_type)}, 1);
	row->namespace_ = NULL;
	row->array_job_id = rec->array_task_id >= 0 || rec->kind == GL_SACCT_ARRAY_PENDING ? rec->base_job_id : -1;
	row->array_task_id = rec->array_task_id;
	row->het_job_id = rec->het_offset >= 0 ? rec->base_job_id : -1;
	row->het_offset = rec->het_offset;
	row->uid = rec->uid;
	row->state_known = rec->state != GL_SACCT_JS_UNKNOWN;
	row->state_by_uid = rec->state_by_uid;
	row->submit_s = rec->submit_s;
	row->eligible_s = rec->eligible_s;
	row->start_s = rec->start_s;
	row->end_s = rec->end_s;
	row->elapsed_s = rec->elapsed_s;
	row->suspended_s = rec->suspended_s;
	row->timelimit_s = rec->timelimit_s;
	row->nnodes = rec->nnodes;
	row->ncpus = rec->ncpus;
	row->req_mem_mb = rec->req_mem_mb;
	/* whole GPUs (a MIG instance is one of its profile): held as billed */
	row->gpu_micro = rec->gpus_alloc * GL_GPU_MICRO;
	row->req_gpu_micro = rec->gpus_req * GL_GPU_MICRO;
	row->phys_micro = GL_JOBROW_HELD_AS_BILLED;
	row->nodes_json = NULL;
	row->tags_json = comment_tags(in, dup(in, rec->comment, 1));
	row->last_seen_s = rec->end_s == GL_TIME_NONE && in->o.seen_s > 0 ? in->o.seen_s : GL_TIME_NONE;
	row->array_tasks = rec->kind == GL_SACCT_ARRAY_PENDING ? rec->array_tasks : 0;
	row->array_tasks_partial = rec->kind == GL_SACCT_ARRAY_PENDING && rec->array_tasks_partial;
}

static int header_fields(struct gl_sacct_ingest *in, const char *line, size_t len, struct gl_err *err)
{
	/* "JobID|JobIDRaw|...": sacct without --noheader. Use it as the layout
	 * unless the caller fixed one. */
	struct gl_strbuf f = GL_STRBUF_INIT;
	size_t dl = in->lay.delim_len;
	int rc = 0;
	for (size_t i = 0; i < len;) {
		if (i + dl <= len && memcmp(line + i, in->lay.delim, dl) == 0) {
			if (i + dl < len)
				gl_strbuf_putc(&f, ',');
			i += dl;
		} else {
			gl_strbuf_putc(&f, line[i++]);
		}
	}
	if (!in->o.fields) {
		struct gl_sacct_layout lay;
		if ((rc = gl_sacct_layout_init(&lay, gl_strbuf_cstr(&f), in->o.delimiter, err))) {
			gl_err_prefix(err, "%s:%lld: header: ", in->o.input_name, (long long)in->line_no);
			goto out;
		}
		gl_sacct_layout_fini(&in->lay);
		in->lay = lay;
	}
out:
	gl_strbuf_fini(&f);
	return rc;
}

static int do_line(struct gl_sacct_ingest *in, const char *line, size_t len, struct gl_err *err)
{
	struct gl_sacct_rec rec;
	struct gl_jobrow row;
	struct gl_err perr = {0};
	char reason[600];
	int rc;

	in->line_no++;
	if (len && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return 0;
	in->st.lines_read++;
	if (!in->first_line_seen) {
		in->first_line_seen = 1;
		if (len >= 5 && strncasecmp(line, "JobID", 5) == 0 &&
		    (len == 5 || memcmp(line + 5, in->lay.delim, in->lay.delim_len) == 0 ||
		     strncasecmp(line + 5, "Raw", 3) == 0)) {
			in->st.ignored++;
			return header_fields(in, line, len, err);
		}
	}
	if (memchr(line, '\0', len)) {
		gl_ingest_stats_skip(&in->st, in->o.input_name, in->line_no, "binary data (NUL byte)");
		return 0;
	}
	if (gl_sacct_parse_line(&in->lay, line, len, &rec, &perr) != 0) {
		gl_ingest_stats_skip(&in->st, in->o.input_name, in->line_no, perr.msg);
		return 0;
	}
	in->ok_lines++;
	if (rec.kind == GL_SACCT_STEP) {
		/* steps are not allocations: their TRES would double-count the job */
		in->st.ignored++;
		return 0;
	}
	if (rec.cluster.p && rec.cluster.len && !gl_str_eq(rec.cluster, in->o.cluster)) {
		snprintf(reason, sizeof reason, "Cluster '%.*s' is not '%s'", (int)rec.cluster.len, rec.cluster.p,
			 in->o.cluster);
		gl_ingest_stats_skip(&in->st, in->o.input_name, in->line_no, reason);
		return 0;
	}
	if (rec.state == GL_SACCT_JS_UNKNOWN)
		gl_log(GL_LOG_WARN, "%s:%lld: unknown job state '%.*s' kept verbatim", in->o.input_name,
		       (long long)in->line_no, (int)rec.state_raw.len, rec.state_raw.p);
	to_row(in, &rec, len, &row);
	gl_strbuf_reset(&in->nodes);
	if (rec.node_list.len) {
		struct gl_err herr = {0};
		if (gl_hostlist_expand(rec.node_list.p, rec.node_list.len, add_node, &in->nodes, &herr) != 0) {
			snprintf(reason, sizeof reason, "NodeList: %s", herr.msg);
			gl_ingest_stats_skip(&in->st, in->o.input_name, in->line_no, reason);
			return 0;
		}
		if (in->nodes.len)
			gl_strbuf_putc(&in->nodes, ']');
		row.nodes_json = in->nodes.len ? in->nodes.p : NULL;
	}
	gl_jobs_batch_add(in->batch, &row);
	if ((int64_t)gl_jobs_batch_rows(in->batch) >= in->o.batch_rows) {
		if ((rc = flush(in, 0, 1, NULL, err)))
			return rc;
	}
	return 0;
}

int gl_sacct_ingest_begin(struct gl_store *db, const struct gl_sacct_ingest_opts *opts, struct gl_sacct_ingest **out,
			  struct gl_err *err)
{
	struct gl_sacct_ingest *in = gl_xcalloc(1, sizeof *in);
	int rc;

	*out = NULL;
	in->db = db;
	in->o = *opts;
	if (!in->o.source)
		in->o.source = "sacct";
	if (in->o.batch_rows <= 0)
		in->o.batch_rows = 50000;
	gl_ingest_stats_init(&in->st, opts->max_skip_reasons);
	gl_strbuf_init(&in->partial);
	gl_strbuf_init(&in->scratch);
	gl_strbuf_init(&in->nodes);
	gl_strbuf_init(&in->tags);
	if ((rc = gl_sacct_layout_init(&in->lay, opts->fields, opts->delimiter, err)))
		goto out;
	in->have_layout = 1;
	if ((rc = gl_jobs_cluster_ensure(db, opts->cluster, "slurm", &in->cluster_id, err)))
		goto out;
	in->batch = gl_jobs_batch_new(in->cluster_id);
	if ((rc = gl_ingest_run_begin(db, in->o.source, in->cluster_id, opts->input_name, &in->run_id, err)))
		goto out;
out:
	if (rc) {
		gl_sacct_ingest_free(in);
		return rc;
	}
	*out = in;
	return 0;
}

int gl_sacct_ingest_feed(struct gl_sacct_ingest *in, const char *buf, size_t n, struct gl_err *err)
{
	const char *p = buf, *end = buf + n;
	int rc;

	if (in->partial.len) {
		const char *nl = memchr(p, '\n', n);
		if (!nl) {
			gl_strbuf_append(&in->partial, p, n);
			return 0;
		}
		gl_strbuf_append(&in->partial, p, (size_t)(nl - p));
		if ((rc = do_line(in, in->partial.p, in->partial.len, err)))
			return rc;
		gl_strbuf_reset(&in->partial);
		p = nl + 1;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			gl_strbuf_append(&in->partial, p, (size_t)(end - p));
			break;
		}
		if ((rc = do_line(in, p, (size_t)(nl - p), err)))
			return rc;
		p = nl + 1;
	}
	return 0;
}

int gl_sacct_ingest_finish(struct gl_sacct_ingest *in, int source_ok, const char *source_error,
			   struct gl_ingest_stats *stats, struct gl_err *err)
{
	int rc = 0;
	if (in->partial.len) {
		if ((rc = do_line(in, in->partial.p, in->partial.len, err)))
			goto out;
		gl_strbuf_reset(&in->partial);
	}
	rc = flush(in, 1, source_ok, source_error, err);
out:
	if (rc) {
		/* record why, outside any transaction */
		struct gl_err e2 = {0};
		if (gl_ingest_run_update(in->db, in->run_id, &in->st, "failed", err ? err->msg : "error", &e2))
			gl_log(GL_LOG_WARN, "ingest: could not record the failed run: %s", e2.msg);
	}
	gl_ingest_run_audit(in->db, in->run_id);
	if (stats) {
		*stats = in->st;
		gl_strbuf_init(&in->st.reasons); /* ownership of the reasons moved to *stats */
	}
	return rc;
}

int gl_sacct_ingest_abandon(struct gl_sacct_ingest *in, const char *why, struct gl_ingest_stats *stats,
			    struct gl_err *err)
{
	char msg[1024];
	int rc;
	snprintf(msg, sizeof msg, "%s; %zu rows not committed (read again from the watermark at the next run)", why,
		 gl_jobs_batch_rows(in->batch) + in->rolled_back);
	/* the stop's cancel must not take the record of the run with it */
	gl_dbcancel_defer();
	rc = gl_ingest_run_update(in->db, in->run_id, &in->st, "failed", msg, err);
	gl_ingest_run_audit(in->db, in->run_id);
	if (stats) {
		*stats = in->st;
		gl_strbuf_init(&in->st.reasons); /* ownership of the reasons moved to *stats */
	}
	return rc;
}

void gl_sacct_ingest_free(struct gl_sacct_ingest *in)
{
	if (!in)
		return;
	if (in->have_layout)
		gl_sacct_layout_fini(&in->lay);
	gl_jobs_batch_free(in->batch);
	gl_ingest_stats_fini(&in->st);
	gl_strbuf_fini(&in->partial);
	gl_strbuf_fini(&in->scratch);
	gl_strbuf_fini(&in->nodes);
	gl_strbuf_fini(&in->tags);
	free(in);
}

int gl_sacct_ingest_file(struct gl_store *db, const struct gl_sacct_ingest_opts *opts, const char *path,
			 struct gl_ingest_stats *stats, struct gl_err *err)
{
	struct gl_sacct_ingest *in = NULL;
	FILE *f = NULL;
	char *buf = NULL;
	int rc;

	f = fopen(path, "rb");
	if (!f) {
		rc = gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((rc = gl_sacct_ingest_begin(db, opts, &in, err)))
		goto out;
	buf = gl_xmalloc(1 << 20);
	for (;;) {
		size_t n = fread(buf, 1, 1 << 20, f);
		if (n && (rc = gl_sacct_ingest_feed(in, buf, n, err)))
			break;
		if (n < (1 << 20)) {
			if (ferror(f))
				rc = gl_err_set(err, GL_EIO, "%s: read error", path);
			break;
		}
	}
	if (rc) {
		struct gl_err e2 = {0};
		if (gl_sacct_ingest_finish(in, 0, err->msg, stats, &e2)) {
			/* the original error is the one to report */
		}
	} else {
		rc = gl_sacct_ingest_finish(in, 1, NULL, stats, err);
	}
out:
	if (f)
		fclose(f);
	free(buf);
	gl_sacct_ingest_free(in);
	return rc;
}
