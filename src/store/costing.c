/* Loading the cost model (see include/gl/costing.h). */
#include "gl/costing.h"
#include "gl/audit.h"
#include "gl/cost.h"
#include "db_int.h"
#include "gl/log.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int parse_bound(const char *s, const char *what, int64_t *out, struct gl_err *err)
{
	if (!s || !*s) {
		*out = GL_TIME_NONE;
		return 0;
	}
	if (gl_timeutil_parse(s, strlen(s), out))
		return gl_err_set(err, GL_ECONFIG, "%s: '%s' is not an RFC3339 time or date", what, s);
	return 0;
}

static void bound_text(int64_t t, const char *inf, char *buf, size_t n)
{
	if (t == GL_TIME_NONE)
		snprintf(buf, n, "%s", inf);
	else
		gl_timeutil_format(t, buf, n);
}

/* A fingerprint of the loaded set, to tell whether a load changed anything. */
static const char fingerprint_sql[] =
	"SELECT md5(coalesce((SELECT string_agg(r::text, ';' ORDER BY r::text) FROM"
	" (SELECT gpu_model, mig_profile, currency, micros_per_gpu_hour, valid_from, valid_to FROM rates"
	"  WHERE source = 'config') r), '') || '|' ||"
	" coalesce((SELECT string_agg(o::text, ';' ORDER BY o.priority) FROM"
	" (SELECT priority, cluster, match_field, match_value, team, project, cost_center, valid_from, valid_to"
	"  FROM owners WHERE source = 'config') o), '') || '|' ||"
	" coalesce((SELECT string_agg(i::text, ';' ORDER BY i::text) FROM"
	" (SELECT cluster, partition, team FROM idle_owners WHERE source = 'config') i), '') || '|' ||"
	" coalesce((SELECT string_agg(g::text, ';' ORDER BY g::text) FROM"
	" (SELECT match, model FROM gpu_model_aliases WHERE source = 'config') g), '') || '|' ||"
	" coalesce((SELECT string_agg(w::text, ';' ORDER BY w.priority) FROM"
	" (SELECT priority, cluster, match_field, match_value, workload_type, valid_from, valid_to"
	"  FROM workload_rules WHERE source = 'config') w), ''))";

/* The config-sourced rows as (table, row text): the before/after sets of the
 * audit row's diff. Rates, owner rules and idle owners are no secrets. */
#define COSTING_ROWS_SQL \
	"SELECT 'rates' AS t, r::text AS row FROM (SELECT gpu_model, mig_profile, currency, micros_per_gpu_hour," \
	" valid_from, valid_to FROM rates WHERE source = 'config') r" \
	" UNION ALL SELECT 'owners', o::text FROM (SELECT priority, cluster, match_field, match_value, team, project," \
	" cost_center, valid_from, valid_to FROM owners WHERE source = 'config') o" \
	" UNION ALL SELECT 'idle_owners', i::text FROM (SELECT cluster, partition, team FROM idle_owners" \
	" WHERE source = 'config') i" \
	" UNION ALL SELECT 'gpu_models', g::text FROM (SELECT match, model FROM gpu_model_aliases" \
	" WHERE source = 'config') g" \
	" UNION ALL SELECT 'workload_types', w::text FROM (SELECT priority, cluster, match_field, match_value," \
	" workload_type, valid_from, valid_to FROM workload_rules WHERE source = 'config') w"

/* {"rates":{"added":N,"removed":N},"owners":...,"idle_owners":...,"gpu_models":...,
 *  "added":[first 20 rows],"removed":[first 20 rows]} */
static const char diff_sql[] =
	"WITH a AS (" COSTING_ROWS_SQL "),"
	" ad AS (SELECT t, row FROM a EXCEPT ALL SELECT t, row FROM gl_costing_before),"
	" rm AS (SELECT t, row FROM gl_costing_before EXCEPT ALL SELECT t, row FROM a)"
	" SELECT jsonb_build_object("
	"  'rates', jsonb_build_object('added', (SELECT count(*) FROM ad WHERE t = 'rates'),"
	"   'removed', (SELECT count(*) FROM rm WHERE t = 'rates')),"
	"  'owners', jsonb_build_object('added', (SELECT count(*) FROM ad WHERE t = 'owners'),"
	"   'removed', (SELECT count(*) FROM rm WHERE t = 'owners')),"
	"  'idle_owners', jsonb_build_object('added', (SELECT count(*) FROM ad WHERE t = 'idle_owners'),"
	"   'removed', (SELECT count(*) FROM rm WHERE t = 'idle_owners')),"
	"  'gpu_models', jsonb_build_object('added', (SELECT count(*) FROM ad WHERE t = 'gpu_models'),"
	"   'removed', (SELECT count(*) FROM rm WHERE t = 'gpu_models')),"
	"  'workload_types', jsonb_build_object('added', (SELECT count(*) FROM ad WHERE t = 'workload_types'),"
	"   'removed', (SELECT count(*) FROM rm WHERE t = 'workload_types')),"
	"  'added', coalesce((SELECT jsonb_agg(x) FROM (SELECT t || ' ' || row AS x FROM ad ORDER BY 1 LIMIT 20) q), '[]'),"
	"  'removed', coalesce((SELECT jsonb_agg(x) FROM (SELECT t || ' ' || row AS x FROM rm ORDER BY 1 LIMIT 20) q), '[]')"
	" )::text";

/* The cost model as it was before a load, for stale_sql: every rate and
 * owner rule (whatever its source: they decide together) and the aliases. */
static const char *const snapshot_sql[] = {
	"CREATE TEMP TABLE gl_costing_rates0 ON COMMIT DROP AS SELECT gpu_model, mig_profile, currency,"
	" micros_per_gpu_hour, valid_from, valid_to FROM rates",
	"CREATE TEMP TABLE gl_costing_owners0 ON COMMIT DROP AS SELECT priority, rule_id, cluster, match_field,"
	" match_value, team, project, cost_center, valid_from, valid_to FROM owners",
	"CREATE TEMP TABLE gl_costing_aliases0 ON COMMIT DROP AS SELECT match, model FROM gpu_model_aliases",
	"CREATE TEMP TABLE gl_costing_workload0 ON COMMIT DROP AS SELECT priority, rule_id, cluster, match_field,"
	" match_value, workload_type, valid_from, valid_to FROM workload_rules",
};

/* Marks stale the built days whose figures the load changed; returns how
 * many. A rate is read per piece of time, so the days a model's price
 * differs on (before against after, over the segments between every
 * bound of both) are stale; a model that gains its first rate or loses
 * its last moves its jobs off or onto the '*' price at every time, and an
 * alias change renames models: every day. An owner and a workload type
 * are resolved at a job's start, and a job runs on, so a change in the
 * ordered rules of either in force at some time makes that day and every
 * later one stale. */
static const char stale_sql[] =
	"WITH ro AS (SELECT gpu_model, mig_profile, currency || ' ' || micros_per_gpu_hour AS price,"
	"  valid_from AS f, valid_to AS t FROM gl_costing_rates0),"
	" rn AS (SELECT gpu_model, mig_profile, currency || ' ' || micros_per_gpu_hour AS price,"
	"  valid_from AS f, valid_to AS t FROM rates),"
	" models AS (SELECT (SELECT array_agg(DISTINCT gpu_model ORDER BY gpu_model) FROM ro)"
	"  IS DISTINCT FROM (SELECT array_agg(DISTINCT gpu_model ORDER BY gpu_model) FROM rn) AS changed),"
	" aliases AS (SELECT EXISTS (SELECT match, model FROM gl_costing_aliases0 EXCEPT SELECT match, model"
	"  FROM gpu_model_aliases) OR EXISTS (SELECT match, model FROM gpu_model_aliases EXCEPT SELECT match, model"
	"  FROM gl_costing_aliases0) AS changed),"
	" rb AS (SELECT gpu_model, mig_profile, f AS a FROM ro UNION SELECT gpu_model, mig_profile, t FROM ro"
	"  UNION SELECT gpu_model, mig_profile, f FROM rn UNION SELECT gpu_model, mig_profile, t FROM rn"
	"  UNION SELECT gpu_model, mig_profile, '-infinity'::timestamptz FROM ro"
	"  UNION SELECT gpu_model, mig_profile, '-infinity'::timestamptz FROM rn),"
	" rs AS (SELECT gpu_model, mig_profile, a,"
	"  lead(a, 1, 'infinity'::timestamptz) OVER (PARTITION BY gpu_model, mig_profile ORDER BY a) AS b"
	"  FROM rb WHERE a < 'infinity'),"
	" rchg AS (SELECT a, b FROM rs WHERE"
	"  (SELECT array_agg(price ORDER BY price) FROM ro WHERE ro.gpu_model = rs.gpu_model"
	"   AND ro.mig_profile = rs.mig_profile AND ro.f <= rs.a AND rs.a < ro.t)"
	"  IS DISTINCT FROM (SELECT array_agg(price ORDER BY price) FROM rn WHERE rn.gpu_model = rs.gpu_model"
	"   AND rn.mig_profile = rs.mig_profile AND rn.f <= rs.a AND rs.a < rn.t)),"
	" oo AS (SELECT priority, rule_id, concat_ws(chr(1), 'o', coalesce(cluster, ''), match_field, match_value, team,"
	"  coalesce(project, ''), coalesce(cost_center, '')) AS rule, valid_from AS f, valid_to AS t"
	"  FROM gl_costing_owners0"
	"  UNION ALL SELECT priority, rule_id, concat_ws(chr(1), 'w', coalesce(cluster, ''), match_field, match_value,"
	"  workload_type), valid_from, valid_to FROM gl_costing_workload0),"
	" onw AS (SELECT priority, rule_id, concat_ws(chr(1), 'o', coalesce(cluster, ''), match_field, match_value, team,"
	"  coalesce(project, ''), coalesce(cost_center, '')) AS rule, valid_from AS f, valid_to AS t FROM owners"
	"  UNION ALL SELECT priority, rule_id, concat_ws(chr(1), 'w', coalesce(cluster, ''), match_field, match_value,"
	"  workload_type), valid_from, valid_to FROM workload_rules),"
	" ob AS (SELECT f AS a FROM oo UNION SELECT t FROM oo UNION SELECT f FROM onw UNION SELECT t FROM onw"
	"  UNION SELECT '-infinity'::timestamptz),"
	" ochg AS (SELECT min(a) AS a FROM ob WHERE a < 'infinity' AND"
	"  (SELECT array_agg(rule ORDER BY left(rule, 1), priority, rule_id) FROM oo"
	"   WHERE oo.f <= ob.a AND ob.a < oo.t)"
	"  IS DISTINCT FROM (SELECT array_agg(rule ORDER BY left(rule, 1), priority, rule_id) FROM onw"
	"   WHERE onw.f <= ob.a AND ob.a < onw.t)),"
	" gone AS (DELETE FROM usage_daily_built d"
	"  WHERE (SELECT changed FROM models) OR (SELECT changed FROM aliases)"
	"  OR EXISTS (SELECT 1 FROM rchg WHERE (d.day::timestamp AT TIME ZONE 'UTC') < rchg.b"
	"   AND (d.day::timestamp AT TIME ZONE 'UTC') + interval '1 day' > rchg.a)"
	"  OR (d.day::timestamp AT TIME ZONE 'UTC') + interval '1 day' > (SELECT a FROM ochg)"
	"  RETURNING 1)"
	" SELECT count(*) FROM gone";

/* workload_types[] in list order (priority: first match wins). */
static int load_workload_rules(PGconn *c, const struct gl_config *cfg, struct gl_costing_summary *sum,
			       struct gl_err *err)
{
	char from[32], to[32], prio[16];
	int rc;
	for (size_t i = 0; i < cfg->n_workload_types; i++) {
		const struct gl_config_workload *w = &cfg->workload_types[i];
		int64_t f, t;
		if (parse_bound(w->from, "", &f, err) || parse_bound(w->to, "", &t, err))
			return -GL_ECONFIG;
		bound_text(f, "-infinity", from, sizeof from);
		bound_text(t, "infinity", to, sizeof to);
		snprintf(prio, sizeof prio, "%zu", i + 1);
		if ((rc = gl_db_query(c,
				      "INSERT INTO workload_rules (priority, cluster, match_field, match_value, workload_type,"
				      " valid_from, valid_to, source) VALUES ($1, nullif($2, ''), $3, $4, $5, $6, $7, 'config')",
				      7, (const char *[]){prio, w->cluster, w->match, w->value, w->type, from, to}, NULL,
				      err)))
			return rc;
		sum->workload_types++;
	}
	return 0;
}

int gl_costing_load(struct gl_store *st, const struct gl_config *cfg, const char *actor, struct gl_costing_summary *sum,
		    struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	char before[64] = "", from[32], to[32], micros[24], prio[16];
	int rc, in_txn = 0;

	memset(sum, 0, sizeof *sum);
	/* the cost model was checked when the config was loaded
	 * (gl_config_load: prices, currencies, spans, overlaps, match kinds,
	 * each error with its file:line); the insert below still refuses what
	 * it cannot parse */
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	in_txn = 1;
	/* one load at a time (a daemon starting while `rates load` runs, two
	 * daemons of a rolling restart): the second's DELETE, its snapshot
	 * taken before the first committed, missed the first's new rows, so it
	 * failed on "two rates overlap" or, with no overlap, left both sets.
	 * Waiting here, it reads what the first committed, and its "changed"
	 * compares with that */
	if ((rc = gl_db_exec(c, "SELECT pg_advisory_xact_lock(26479, 0)", err)) ||
	    (rc = gl_db_query(c, fingerprint_sql, 0, NULL, &r, err)))
		goto out;
	snprintf(before, sizeof before, "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	r = NULL;
	/* the rollup's whole-table staleness triggers stand aside: this load
	 * marks the days it changes itself (stale_sql, sql/030) */
	if ((rc = gl_db_exec(c, "SET LOCAL gpuledger.costing_load = 'on'", err)))
		goto out;
	for (size_t i = 0; i < GL_ARRAY_LEN(snapshot_sql); i++)
		if ((rc = gl_db_exec(c, snapshot_sql[i], err)))
			goto out;
	if ((rc = gl_db_exec(c, "CREATE TEMP TABLE gl_costing_before ON COMMIT DROP AS " COSTING_ROWS_SQL, err)) ||
	    (rc = gl_db_exec(c, "DELETE FROM rates WHERE source = 'config'", err)) ||
	    (rc = gl_db_exec(c, "DELETE FROM owners WHERE source = 'config'", err)) ||
	    (rc = gl_db_exec(c, "DELETE FROM idle_owners WHERE source = 'config'", err)) ||
	    (rc = gl_db_exec(c, "DELETE FROM gpu_model_aliases WHERE source = 'config'", err)) ||
	    (rc = gl_db_exec(c, "DELETE FROM workload_rules WHERE source = 'config'", err)))
		goto out;
	/* aliases first: a rate is stored under the canonical model they define */
	for (size_t i = 0; i < cfg->n_gpu_models; i++)
		if ((rc = gl_db_query(c,
				      "INSERT INTO gpu_model_aliases (match, model, source) VALUES (lower($1), lower($2),"
				      " 'config')",
				      2, (const char *[]){cfg->gpu_models[i].match, cfg->gpu_models[i].model}, NULL, err)))
			goto out;
	for (size_t i = 0; i < cfg->n_rates; i++) {
		const struct gl_config_rate *rt = &cfg->rates[i];
		int64_t m, f, t;
		if (gl_cost_parse(rt->per_gpu_hour, &m, err) || parse_bound(rt->from, "", &f, err) ||
		    parse_bound(rt->to, "", &t, err)) {
			rc = -GL_ECONFIG;
			goto out;
		}
		snprintf(micros, sizeof micros, "%lld", (long long)m);
		bound_text(f, "-infinity", from, sizeof from);
		bound_text(t, "infinity", to, sizeof to);
		if ((rc = gl_db_query(c,
				      "INSERT INTO rates (gpu_model, currency, micros_per_gpu_hour, valid_from, valid_to,"
				      " created_by, source) VALUES (gl_gpu_model($1), $2, $3, $4, $5, $6, 'config')",
				      6, (const char *[]){rt->model, rt->currency, micros, from, to, actor}, NULL, err)))
			goto out;
		sum->rates++;
	}
	/* the configuration check compares rates[].model as written; two
	 * names of one GPU model (NVIDIA-A100-SXM4-80GB and a100) are one
	 * model here, and two prices for it at once would make cost ambiguous */
	if ((rc = gl_db_query(c,
			      "SELECT a.gpu_model FROM rates a JOIN rates b ON a.rate_id < b.rate_id"
			      " AND a.gpu_model = b.gpu_model AND a.mig_profile = b.mig_profile"
			      " AND a.valid_from < b.valid_to AND b.valid_from < a.valid_to"
			      " WHERE a.source = 'config' AND b.source = 'config' LIMIT 1",
			      0, NULL, &r, err)))
		goto out;
	if (PQntuples(r)) {
		rc = gl_err_set(err, GL_ECONFIG,
				"%s: rates: two rates for GPU model '%s' overlap in time (names of one GPU type are"
				" one model: docs/capacity.md, GPU models; gpu_models[] can tell them apart)",
				cfg->path, PQgetvalue(r, 0, 0));
		goto out;
	}
	PQclear(r);
	r = NULL;
	for (size_t i = 0; i < cfg->n_owners; i++) {
		const struct gl_config_owner *o = &cfg->owners[i];
		int64_t f, t;
		if (parse_bound(o->from, "", &f, err) || parse_bound(o->to, "", &t, err)) {
			rc = -GL_ECONFIG;
			goto out;
		}
		bound_text(f, "-infinity", from, sizeof from);
		bound_text(t, "infinity", to, sizeof to);
		/* list order is priority: first match wins */
		snprintf(prio, sizeof prio, "%zu", i + 1);
		if ((rc = gl_db_query(c,
				      "INSERT INTO owners (priority, cluster, match_field, match_value, team, project,"
				      " cost_center, valid_from, valid_to, source)"
				      " VALUES ($1, nullif($2, ''), $3, $4, $5, $6, $7, $8, $9, 'config')",
				      9,
				      (const char *[]){prio, o->cluster, o->match, o->value, o->team, o->project,
						       o->cost_center, from, to},
				      NULL, err)))
			goto out;
		sum->owners++;
	}
	if ((rc = load_workload_rules(c, cfg, sum, err)))
		goto out;
	for (size_t i = 0; i < cfg->n_idle_owners; i++) {
		const struct gl_config_idle_owner *io = &cfg->idle_owners[i];
		if ((rc = gl_db_query(c, "INSERT INTO idle_owners (cluster, partition, team, source) VALUES ($1, $2, $3, 'config')",
				      3, (const char *[]){io->cluster, io->partition, io->team}, NULL, err)))
			goto out;
		sum->idle_owners++;
	}
	if ((rc = gl_db_query(c, fingerprint_sql, 0, NULL, &r, err)))
		goto out;
	sum->changed = strcmp(before, PQgetvalue(r, 0, 0)) != 0;
	PQclear(r);
	r = NULL;
	if (!sum->changed) {
		/* the same model: nothing is replaced (the rows keep their ids,
		 * and no day of the rollup is touched) */
		rc = gl_db_exec(c, "ROLLBACK", err);
		in_txn = 0;
		goto out;
	}
	/* shared, like every writer's staleness, against a day build reading
	 * the previous model (gl_accounting_build_day) */
	if ((rc = gl_db_exec(c, "SELECT pg_advisory_xact_lock_shared(26476, 0)", err)) ||
	    (rc = gl_db_query(c, stale_sql, 0, NULL, &r, err)))
		goto out;
	sum->stale_days = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	r = NULL;
	/* a change of prices or owners and its audit row commit together, or
	 * neither does: nobody changes what people are charged unrecorded */
	if ((rc = gl_db_query(c, diff_sql, 0, NULL, &r, err)) ||
	    (rc = gl_audit_append(gl_db_store(c), actor, NULL, "costing.load", cfg->path, "ok", PQgetvalue(r, 0, 0), err)))
		goto out;
	if ((rc = gl_db_exec(c, "COMMIT", err)))
		goto out;
	in_txn = 0;
	gl_log(GL_LOG_INFO,
	       "costing: %s loaded %d rates, %d owner rules, %d idle owners, %d workload type rules from %s (changed;"
	       " %d built days of the rollup made stale)",
	       actor, sum->rates, sum->owners, sum->idle_owners, sum->workload_types, cfg->path, sum->stale_days);
out:
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	PQclear(r);
	return rc;
}
