/* Shards read over postgres_fdw (see include/gl/shard.h). */
#include "gl/shard.h"
#include "db_int.h"
#include "plancache_int.h"
#include "gl/pgarray.h"
#include "gl/strbuf.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gl_shard_local_init(struct gl_store *st, int k, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char ks[16];
	snprintf(ks, sizeof ks, "%d", k);
	return gl_db_query(c, "SELECT gl_shard_local_init($1::integer)", 1, (const char *[]){ks}, NULL, err);
}

/* The owner is whoever owns the functions that open the connections. */
static const char dblink_private_sql[] =
	"DO $$\n"
	"DECLARE\n"
	"    own name := (SELECT pg_get_userbyid(proowner) FROM pg_proc\n"
	"                  WHERE oid = 'public.gl_fleet_send(bigint, text, text, text[], text)'::regprocedure);\n"
	"BEGIN\n"
	"    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'dblink'\n"
	"                AND extnamespace <> 'gl_dblink'::regnamespace) THEN\n"
	"        ALTER EXTENSION dblink SET SCHEMA gl_dblink;\n"
	"    END IF;\n"
	"    REVOKE ALL ON SCHEMA gl_dblink FROM PUBLIC;\n"
	"    REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA gl_dblink FROM PUBLIC;\n"
	"    EXECUTE format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA gl_dblink TO %I', own);\n"
	"    ALTER FUNCTION public.gl_audit_partitions_drop(date) SET search_path = pg_catalog, public, pg_temp;\n"
	"END $$";

int gl_shard_dblink_public(struct gl_store *st, int *yes, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc = gl_db_query(c,
			     "SELECT count(*) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
			     " WHERE e.extname = 'dblink' AND n.nspname <> 'gl_dblink'",
			     0, NULL, &r, err);
	*yes = !rc && atoi(PQgetvalue(r, 0, 0)) > 0;
	PQclear(r);
	return rc;
}

int gl_shard_dblink_private(struct gl_store *st, int *moved, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc = gl_db_query(c, "SELECT to_regnamespace('gl_dblink') IS NOT NULL", 0, NULL, &r, err);
	*moved = 0;
	if (rc || PQgetvalue(r, 0, 0)[0] != 't')
		goto out;
	if ((rc = gl_shard_dblink_public(st, moved, err)) || (rc = gl_db_exec(c, dblink_private_sql, err)))
		gl_err_prefix(err, "dblink into schema gl_dblink: ");
out:
	PQclear(r);
	return rc;
}

int gl_shard_count(struct gl_store *st, int *n, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc = gl_db_query(c, "SELECT count(*) FROM shards", 0, NULL, &r, err);
	if (!rc)
		*n = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

int gl_shard_attach(struct gl_store *st, int k, const char *name, const char *dsn, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	char *perr = NULL, ks[16];
	PQconninfoOption *opts = PQconninfoParse(dsn, &perr);
	struct gl_strbuf arr = GL_STRBUF_INIT;
	const char *user = NULL, *pw = NULL;
	int rc, timeout = 0;

	if (!opts) {
		rc = gl_err_set(err, GL_EINVAL, "shard %s: dsn: %s", name, perr ? perr : "out of memory");
		PQfreemem(perr);
		return rc;
	}
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val || !*o->val)
			continue;
		if (!strcmp(o->keyword, "user"))
			user = o->val;
		else if (!strcmp(o->keyword, "password"))
			pw = o->val;
		else if (!strcmp(o->keyword, "passfile"))
			continue; /* the central server reads no file of ours: give password */
		else {
			timeout |= !strcmp(o->keyword, "connect_timeout");
			gl_pgarray_add_text(&arr, o->keyword);
			gl_pgarray_add_text(&arr, o->val);
		}
	}
	/* a shard host that takes the connection and never answers (a hung
	 * server, a dropped route) would hold the probe without one: libpq
	 * waits forever by default */
	if (!timeout) {
		gl_pgarray_add_text(&arr, "connect_timeout");
		gl_pgarray_add_text(&arr, GL_SHARD_CONNECT_TIMEOUT);
	}
	snprintf(ks, sizeof ks, "%d", k);
	if (!user)
		rc = gl_err_set(err, GL_EINVAL, "shard %s: dsn: no user", name);
	else
		rc = gl_db_query(c, "SELECT gl_shard_attach($1::integer, $2, $3::text[], $4, $5)", 5,
				 (const char *[]){ks, name, gl_pgarray_end(&arr), user, pw}, NULL, err);
	if (rc)
		(void)gl_err_prefix(err, "shard attach %s: ", name);
	gl_strbuf_fini(&arr);
	PQconninfoFree(opts);
	return rc;
}

/* A JSON array of strings into a malloc'd vector. */
static char **json_strings(const char *text, size_t *n)
{
	cJSON *a = cJSON_Parse(text);
	char **v = NULL;
	size_t i = 0;
	*n = 0;
	if (cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0) {
		v = gl_xcalloc((size_t)cJSON_GetArraySize(a), sizeof *v);
		for (cJSON *e = a->child; e; e = e->next)
			if (cJSON_IsString(e))
				v[i++] = gl_xstrdup(e->valuestring);
		*n = i;
	}
	cJSON_Delete(a);
	return v;
}

static void join(struct gl_strbuf *b, char **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			gl_strbuf_puts(b, ", ");
		gl_strbuf_puts(b, v[i]);
	}
}

int gl_shard_route(struct gl_store *st, struct gl_shard_route *rt, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	int rc;

	gl_shard_route_fini(rt);
	if ((rc = gl_db_query(c,
			      "SELECT mask, array_to_json(unread_shards)::text, array_to_json(unread_clusters)::text"
			      " FROM gl_fleet_route()",
			      0, NULL, &r, err)))
		goto out;
	rt->mask = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
	rt->unread_shards = json_strings(PQgetvalue(r, 0, 1), &rt->n_unread_shards);
	rt->unread_clusters = json_strings(PQgetvalue(r, 0, 2), &rt->n_unread_clusters);
	if (rt->n_unread_shards) {
		struct gl_strbuf b = GL_STRBUF_INIT;
		gl_strbuf_puts(&b, rt->n_unread_clusters ? "clusters " : "no cluster known yet");
		join(&b, rt->unread_clusters, rt->n_unread_clusters);
		gl_strbuf_puts(&b, rt->n_unread_shards > 1 ? " (shards " : " (shard ");
		join(&b, rt->unread_shards, rt->n_unread_shards);
		gl_strbuf_puts(&b, " not answering)");
		rt->unread_text = gl_xstrdup(gl_strbuf_cstr(&b));
		gl_strbuf_fini(&b);
	}
out:
	PQclear(r);
	return rc;
}

int gl_shard_use(struct gl_store *st, uint64_t mask, struct gl_err *err)
{
	char ms[24];
	int rc;
	snprintf(ms, sizeof ms, "%llu", (unsigned long long)mask);
	rc = gl_db_query(gl_db_conn(st), "SELECT gl_fleet_use($1::bigint)", 1, (const char *[]){ms}, NULL, err);
	/* the fleet's statements plan over every shard's foreign partitions:
	 * the costly ones are planned once for the session */
	if (!rc)
		gl_plancache_enable(gl_db_conn(st), 1);
	return rc;
}

int gl_shard_warm(struct gl_store *st, int64_t *last_built_s, struct gl_err *err)
{
	PGresult *r = NULL;
	int rc = gl_db_query(gl_db_conn(st), "SELECT gl_fleet_warm()", 0, NULL, &r, err);
	*last_built_s = rc || PQgetisnull(r, 0, 0) ? -1 : strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return rc;
}

static char **strv_copy(char **v, size_t n)
{
	char **c = n ? gl_xcalloc(n, sizeof *c) : NULL;
	for (size_t i = 0; i < n; i++)
		c[i] = gl_xstrdup(v[i]);
	return c;
}

void gl_shard_route_copy(struct gl_shard_route *dst, const struct gl_shard_route *src)
{
	gl_shard_route_fini(dst);
	dst->mask = src->mask;
	dst->unread_shards = strv_copy(src->unread_shards, src->n_unread_shards);
	dst->n_unread_shards = src->n_unread_shards;
	dst->unread_clusters = strv_copy(src->unread_clusters, src->n_unread_clusters);
	dst->n_unread_clusters = src->n_unread_clusters;
	dst->unread_text = src->unread_text ? gl_xstrdup(src->unread_text) : NULL;
}

void gl_shard_route_fini(struct gl_shard_route *rt)
{
	for (size_t i = 0; i < rt->n_unread_shards; i++)
		free(rt->unread_shards[i]);
	for (size_t i = 0; i < rt->n_unread_clusters; i++)
		free(rt->unread_clusters[i]);
	free(rt->unread_shards);
	free(rt->unread_clusters);
	free(rt->unread_text);
	memset(rt, 0, sizeof *rt);
}
