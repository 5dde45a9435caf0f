/* The Kubernetes pod ingest's queries (see include/gl/kubestore.h). */
#include "gl/kubestore.h"
#include "db_int.h"
#include "gl/pgarray.h"
#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One block holding copies of the given columns of every row; *off gets
 * each (row, column)'s offset. */
static char *arena_of(const PGresult *r, const int *cols, int ncols, size_t *off)
{
	size_t total = 0, k = 0;
	char *a;
	for (int i = 0; i < PQntuples(r); i++)
		for (int c = 0; c < ncols; c++)
			total += (size_t)PQgetlength(r, i, cols[c]) + 1;
	a = gl_xmalloc(total ? total : 1);
	total = 0;
	for (int i = 0; i < PQntuples(r); i++)
		for (int c = 0; c < ncols; c++) {
			size_t n = (size_t)PQgetlength(r, i, cols[c]);
			memcpy(a + total, PQgetvalue(r, i, cols[c]), n + 1);
			off[k++] = total;
			total += n + 1;
		}
	return a;
}

static int64_t get_time(const PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? GL_TIME_NONE : atoll(PQgetvalue(r, row, col));
}

/* A node's spans at at_s summed over its models (a node with two models
 * is rare and holds both); replicas and memory are per GPU. */
static const char nodes_sql[] =
	"SELECT node, sum(gpus)::bigint, coalesce(max(replicas), 0), coalesce(max(memory_mib), 0)"
	" FROM node_gpu_spans WHERE cluster_id = $1 AND valid_from <= to_timestamp($2::bigint)"
	" AND (valid_to IS NULL OR valid_to > to_timestamp($2::bigint)) GROUP BY node ORDER BY node";
enum { NC_NODE, NC_GPUS, NC_REPLICAS, NC_MEMORY };

int gl_kubestore_node_gpus(struct gl_store *store, int cluster_id, int64_t at_s, struct gl_kubestore_node_list *out,
			   struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	static const int strs[] = {NC_NODE};
	char cid[16], at[24];
	PGresult *r = NULL;
	size_t *off;
	int rc;
	memset(out, 0, sizeof *out);
	snprintf(cid, sizeof cid, "%d", cluster_id);
	snprintf(at, sizeof at, "%lld", (long long)at_s);
	if ((rc = gl_db_query(c, nodes_sql, 2, (const char *[]){cid, at}, &r, err)))
		return rc;
	out->n = (size_t)PQntuples(r);
	out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
	off = gl_xcalloc(out->n ? out->n : 1, sizeof *off);
	out->arena = arena_of(r, strs, 1, off);
	for (size_t i = 0; i < out->n; i++) {
		struct gl_kubegpu_node_gpu *g = &out->v[i];
		int row = (int)i;
		g->node = out->arena + off[i];
		g->gpus = atoll(PQgetvalue(r, row, NC_GPUS));
		g->replicas = atoi(PQgetvalue(r, row, NC_REPLICAS));
		g->memory_mib = atoll(PQgetvalue(r, row, NC_MEMORY));
	}
	free(off);
	PQclear(r);
	return 0;
}

void gl_kubestore_node_list_fini(struct gl_kubestore_node_list *l)
{
	free(l->v);
	free(l->arena);
	memset(l, 0, sizeof *l);
}

static const char pods_sql[] =
	"SELECT job_key, extract(epoch FROM last_seen_at)::bigint, state,"
	" extract(epoch FROM start_at)::bigint, extract(epoch FROM end_at)::bigint"
	" FROM jobs WHERE cluster_id = $1 AND job_key = ANY($2::text[])";
enum { PC_KEY, PC_LAST_SEEN, PC_STATE, PC_START, PC_END };

int gl_kubestore_pods(struct gl_store *store, int cluster_id, const char *const *keys, size_t nkeys,
		      struct gl_kubestore_pod_list *out, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	static const int strs[] = {PC_KEY, PC_STATE};
	struct gl_strbuf arr = GL_STRBUF_INIT;
	char cid[16];
	PGresult *r = NULL;
	size_t *off;
	int rc;
	memset(out, 0, sizeof *out);
	snprintf(cid, sizeof cid, "%d", cluster_id);
	gl_pgarray_texts(&arr, keys, nkeys);
	rc = gl_db_query(c, pods_sql, 2, (const char *[]){cid, arr.p}, &r, err);
	gl_strbuf_fini(&arr);
	if (rc)
		return rc;
	out->n = (size_t)PQntuples(r);
	out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
	off = gl_xcalloc(2 * out->n + 1, sizeof *off);
	out->arena = arena_of(r, strs, 2, off);
	for (size_t i = 0; i < out->n; i++) {
		struct gl_kubestore_pod *p = &out->v[i];
		p->job_key = out->arena + off[2 * i];
		p->state = out->arena + off[2 * i + 1];
		p->last_seen_s = get_time(r, (int)i, PC_LAST_SEEN);
		p->start_s = get_time(r, (int)i, PC_START);
		p->end_s = get_time(r, (int)i, PC_END);
	}
	free(off);
	PQclear(r);
	return 0;
}

void gl_kubestore_pod_list_fini(struct gl_kubestore_pod_list *l)
{
	free(l->v);
	free(l->arena);
	memset(l, 0, sizeof *l);
}

int gl_kubestore_has_jobs(struct gl_store *store, int cluster_id, int *any, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	char cid[16];
	int rc;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	if ((rc = gl_db_query(c, "SELECT EXISTS (SELECT 1 FROM jobs WHERE cluster_id = $1)", 1, (const char *[]){cid},
			      &r, err)))
		return rc;
	*any = PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	return 0;
}

int gl_kubestore_open_keys(struct gl_store *store, int cluster_id, struct gl_kubestore_key_list *out,
			   struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	static const int cols[] = {0};
	char cid[16];
	PGresult *r = NULL;
	size_t *off;
	int rc;
	memset(out, 0, sizeof *out);
	snprintf(cid, sizeof cid, "%d", cluster_id);
	if ((rc = gl_db_query(c, "SELECT job_key FROM jobs WHERE cluster_id = $1 AND end_at IS NULL", 1,
			      (const char *[]){cid}, &r, err)))
		return rc;
	out->n = (size_t)PQntuples(r);
	out->v = gl_xcalloc(out->n ? out->n : 1, sizeof *out->v);
	off = gl_xcalloc(out->n + 1, sizeof *off);
	out->arena = arena_of(r, cols, 1, off);
	for (size_t i = 0; i < out->n; i++)
		out->v[i] = out->arena + off[i];
	free(off);
	PQclear(r);
	return 0;
}

void gl_kubestore_key_list_fini(struct gl_kubestore_key_list *l)
{
	free(l->v);
	free(l->arena);
	memset(l, 0, sizeof *l);
}

static const char vanish_sql[] =
	"UPDATE jobs j SET end_at = g.t, last_seen_at = g.t, state = 'CANCELLED', state_known = true,"
	" elapsed_s = CASE WHEN j.start_at IS NULL THEN NULL ELSE extract(epoch FROM g.t - j.start_at)::bigint END,"
	" tags = j.tags || '{\"vanished\":true}'::jsonb, updated_at = now()"
	" FROM (SELECT o.job_pk, greatest(o.last_seen_at, to_timestamp($2::bigint), o.start_at, o.submit_at) AS t"
	"  FROM jobs o WHERE o.cluster_id = $1 AND o.end_at IS NULL AND o.job_key = ANY($3::text[])) g"
	" WHERE j.cluster_id = $1 AND j.job_pk = g.job_pk AND g.t IS NOT NULL";

int gl_kubestore_close_vanished(struct gl_store *store, int cluster_id, int64_t wm_prev_s, const char *const *keys,
				size_t nkeys, int64_t *closed, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	struct gl_strbuf gone = GL_STRBUF_INIT;
	char cid[16], w[24];
	PGresult *r = NULL;
	int rc;
	*closed = 0;
	snprintf(cid, sizeof cid, "%d", cluster_id);
	snprintf(w, sizeof w, "%lld", (long long)wm_prev_s);
	gl_pgarray_texts(&gone, keys, nkeys);
	if (!(rc = gl_db_query(c, vanish_sql, 3, (const char *[]){cid, wm_prev_s == GL_TIME_NONE ? NULL : w, gone.p}, &r,
			       err)))
		*closed = atoll(PQcmdTuples(r));
	PQclear(r);
	gl_strbuf_fini(&gone);
	return rc;
}
