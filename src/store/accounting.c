/* Accounting queries (see include/gl/accounting.h). */
#include "accounting_int.h"
#include "db_int.h"
#include "ingest_int.h"
#include "plancache_int.h"
#include "gl/fcseries.h"
#include "gl/idle.h"
#include "gl/pgarray.h"
#include "gl/store.h"
#include "gl/pgrow.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gl_accounting_dims[] = {"team",	   "project",	"cost_center", "user",	    "account",	     "cluster",
				     "partition", "qos", "namespace", "gpu_model", "workload_type", NULL};

/* Only these fixed strings ever reach the SQL text; user input goes in parameters. */
static const char *const dim_sql[] = {
	"coalesce(k.team, '__unallocated__')", "coalesce(k.project, '__unallocated__')",
	"coalesce(k.cost_center, '__unallocated__')", "coalesce(k.user_name, '')", "coalesce(k.account, '')",
	"k.cluster", "coalesce(k.partition, '')", "coalesce(k.qos, '')", "coalesce(k.namespace, '')",
	"coalesce(k.gpu_model, 'unknown')", "k.workload_type",
};

const char *gl_accounting_dim_sql(const char *dim)
{
	for (size_t i = 0; gl_accounting_dims[i]; i++)
		if (!strcmp(gl_accounting_dims[i], dim))
			return dim_sql[i];
	return NULL;
}

/* A dimension over the jobs CTE: the public ones, and "job" for the
 * per-job lines of a query restricted to jobs (gl_accounting_query.jobs). */
static const char *live_dim_sql(const char *dim)
{
	return !strcmp(dim, "job") ? "k.job_pk" : gl_accounting_dim_sql(dim);
}

/* The live steps ($1 start, $2 end, $4 step index; ascending, not
 * overlapping, gaps where built days are read instead) with their ordinal n,
 * the window they span with their starts in order, and the runs of
 * contiguous steps: a job is found once per run it overlaps (one index scan
 * a run), not looked up step by step, and its events are put in their steps
 * by width_bucket over the starts (gl_accounting_event_cells). Joining every step
 * to the jobs (a bitmap scan and a wide row per job and step, owners
 * resolved over all of them) took 29 s for 649 hours of 30,000 jobs. */
#define GL_LIVE_CTES(steps, pa, pb, pi)                                                                      \
	steps " AS ("                                                                                        \
	" SELECT s.i::integer AS i, to_timestamp(s.a) AS a, to_timestamp(s.b) AS b,"                         \
	"  row_number() OVER (ORDER BY s.a)::integer AS n"                                                   \
	" FROM unnest(" pa "::bigint[], " pb "::bigint[], " pi "::integer[]) AS s(a, b, i)"                  \
	"), win AS (SELECT array_agg(a ORDER BY a) AS starts, array_agg(b ORDER BY a) AS ends,"               \
	"  min(a) AS lo, max(b) AS hi FROM " steps                                                            \
	"), runs AS ("                                                                                       \
	" SELECT min(a) AS a, max(b) AS b FROM ("                                                            \
	"  SELECT a, b, sum(brk) OVER (ORDER BY a) AS g FROM ("                                              \
	"   SELECT a, b, CASE WHEN a = lag(b) OVER (ORDER BY a) THEN 0 ELSE 1 END AS brk FROM " steps ") x) y" \
	" GROUP BY g"                                                                                        \
	")"

/* Which part of a job's time a query reads (docs/ingest.md, "Observed
 * time"): OBS_FIRM up to the last moment a source saw it open, OBS_UNSEEN
 * only the open part after that, to now (the unobserved time: firm and
 * unseen together are sreport's semantics), OBS_IMPLAUSIBLE the unobserved part after the
 * job's own time limit (the scheduler would have ended it by then). */
enum obs_mode { OBS_FIRM, OBS_UNSEEN, OBS_IMPLAUSIBLE, OBS_ALL };

/* OBS_ALL: the three parts of a request's live lines from one read of the
 * jobs (lines_parts): the firm part over the live steps ($5 start, $6
 * end, $7 step), the unobserved and implausible parts over every step
 * ($1, $2, $4). Each row's step i is its step plus its part x this stride
 * (0 firm, 1 unobserved, 2 implausible), which absorb takes apart. */
#define LIVE_PART_STRIDE 1000000
#define LIVE_STR_(x) #x
#define LIVE_STR(x) LIVE_STR_(x)

/* The jobs (jb) a live query reads, each with its watermark row (jst):
 * one hash join, not the watermark's subquery again in each place
 * obs_start and obs_stop are written (three a job in a lines query). */
#define RUN_JOBS "(jobs jb" GL_ACCOUNTING_JOB_SEEN_JOIN_SQL("jb", "jst") ")"
#define JB_SEEN GL_ACCOUNTING_JOB_SEEN_OF_SQL("jb", "jst.watermark")

/* The days built in [lo, hi) (epoch seconds), each as epoch seconds. */
#define BUILT_DAYS_SQL(lo, hi)                                                                       \
	"SELECT extract(epoch FROM day::timestamp)::bigint FROM usage_daily_built"                   \
	" WHERE day >= (to_timestamp(" lo ") AT TIME ZONE 'UTC')::date"                              \
	" AND day < (to_timestamp(" hi ") AT TIME ZONE 'UTC')::date"
static const char BUILT_DAYS_Q[] = BUILT_DAYS_SQL("$1", "$2") " ORDER BY day";

/* Whether an open GPU job has unobserved time before e and now (any_unseen). */
#define UNSEEN_SQL(e, now)                                                                           \
	"SELECT coalesce(max(CASE WHEN jb.timelimit_s >= 0 AND jb.start_at + jb.timelimit_s * interval '1 second'" \
	"  < least(to_timestamp(" e "), to_timestamp(" now ")) THEN 2 ELSE 1 END), 0) FROM " RUN_JOBS  \
	" WHERE jb.end_at IS NULL AND jb.gpu_milli > 0 AND jb.start_at < to_timestamp(" e ")"          \
	" AND greatest(jb.start_at, " JB_SEEN ") < least(to_timestamp(" e "), to_timestamp(" now "))"
static const char UNSEEN_Q[] = UNSEEN_SQL("$1", "$2");

/* The islands (m: a, b in epoch seconds) of the days in [a, b) gl_capacity
 * has a row for: a GPU span overlaps them or, in a cluster without any
 * span, an exporter GPU (its rows merged as gl_capacity merges them),
 * keyed as chargeback keys the idle rows (partition '' for none, the
 * canonical model), for clusters cl, partitions pa and canonical models mo
 * (text[], NULL for all). Asking gl_capacity day by day took 7 s for 400
 * days of 2 000 nodes (112 000 spans); merging the spans into islands
 * first takes some 0.13 s. Epoch arithmetic, not timestamptz series: UTC
 * days whatever the session's time zone. */
#define CAP_ISLANDS_SQL(a, b, cl, pa, mo)                                                            \
	"WITH iv AS ("                                                                               \
	" SELECT greatest(extract(epoch FROM s.valid_from)::bigint, " a "::bigint) AS a,"              \
	"  least(coalesce(extract(epoch FROM s.valid_to)::bigint, " b "::bigint), " b "::bigint) AS b" \
	" FROM node_gpu_spans s"                                                                     \
	" WHERE s.valid_from < to_timestamp(" b ") AND (s.valid_to IS NULL OR s.valid_to > to_timestamp(" a "))" \
	"  AND (" cl "::text[] IS NULL OR (SELECT cl.name FROM clusters cl WHERE cl.cluster_id = s.cluster_id)" \
	"   = ANY(" cl "::text[]))"                                                                  \
	"  AND (" pa "::text[] IS NULL OR coalesce(s.partition, '') = ANY(" pa "::text[]))"          \
	"  AND (" mo "::text[] IS NULL OR gl_gpu_model(s.gpu_model) = ANY(" mo "::text[]))"          \
	" UNION ALL"                                                                                 \
	" SELECT greatest(extract(epoch FROM x.f)::bigint, " a "::bigint),"                          \
	"  least(coalesce(extract(epoch FROM x.t)::bigint, " b "::bigint), " b "::bigint)"           \
	" FROM (SELECT gp.cluster_id, min(gp.model) AS model, min(gp.first_seen) AS f,"              \
	"  CASE WHEN bool_or(gp.absent_since IS NULL) THEN NULL ELSE max(gp.absent_since) END AS t"  \
	"  FROM gpus gp WHERE NOT EXISTS (SELECT 1 FROM node_gpu_spans s WHERE s.cluster_id = gp.cluster_id)" \
	"  GROUP BY gp.cluster_id, gp.node_id, gp.uuid) x"                                           \
	" WHERE x.f < to_timestamp(" b ") AND (x.t IS NULL OR x.t > to_timestamp(" a "))"            \
	"  AND (" cl "::text[] IS NULL OR (SELECT cl.name FROM clusters cl WHERE cl.cluster_id = x.cluster_id)" \
	"   = ANY(" cl "::text[]))"                                                                  \
	"  AND (" pa "::text[] IS NULL OR '' = ANY(" pa "::text[]))"                                 \
	"  AND (" mo "::text[] IS NULL OR gl_gpu_model(coalesce(x.model, '')) = ANY(" mo "::text[]))" \
	"), o AS (SELECT a, b, max(b) OVER (ORDER BY a, b ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)" \
	"  AS pe FROM iv"                                                                            \
	"), g AS (SELECT a, b, count(*) FILTER (WHERE pe IS NULL OR a > pe) OVER (ORDER BY a, b) AS k FROM o" \
	"), m AS (SELECT min(a) AS a, max(b) AS b FROM g GROUP BY k)"
/* The days of islands m (a relation with a and b) and of the window [a, b). */
#define CAP_KNOWN_SQL(m) "(SELECT count(DISTINCT d) FROM " m ", generate_series(m.a / 86400, greatest(m.b - 1, m.a) / 86400) d)"
#define CAP_DAYS_N_SQL(a, b) "(" b "::bigint - 1) / 86400 - " a "::bigint / 86400 + 1"
static const char CAP_DAYS_Q[] =
	CAP_ISLANDS_SQL("$1", "$2", "$3", "$4", "$5") " SELECT " CAP_KNOWN_SQL("m") ", " CAP_DAYS_N_SQL("$1", "$2");

/* The clusters without capacity data (capacity_missing): sql/104's rule. */
static const char CAP_MISSING_Q[] = "SELECT n FROM gl_capacity_missing($1::bigint, $2::bigint, $3::text[]) n ORDER BY n";

/* The end of jb's firm time: its end, or its last sighting (not past now). */
#define JB_FIRM_STOP "coalesce(jb.end_at, least(to_timestamp($3), greatest(jb.start_at, " JB_SEEN ")))"

/* The [start, stop) of jb (of RUN_JOBS) a mode reads, as SQL over $3 (now). */
static const char *obs_start(enum obs_mode m)
{
	return m == OBS_UNSEEN	    ? "greatest(jb.start_at, " JB_SEEN ")"
	       : m == OBS_IMPLAUSIBLE ? "greatest(jb.start_at, " JB_SEEN ","
					" jb.start_at + jb.timelimit_s * interval '1 second')"
				      : "jb.start_at";
}

static const char *obs_stop(enum obs_mode m)
{
	return m == OBS_FIRM ? JB_FIRM_STOP
			     : "coalesce(jb.end_at, to_timestamp($3))";
}

/* The set key of a job (k0) or of a set of summed open jobs (ks): one
 * text, so kp groups both alike and every row joins one row of own by this
 * one column. A NULL field is '' and an empty one chr(2), never the same.
 * p: the relation holding the owner-rule fields; the others, expressions. */
#define OKEY_SQL(p, labels, run_kind, seg, endpoints, cluster)                                                  \
	"coalesce(chr(2) || " p ".account, '') || chr(1) || coalesce(chr(2) || " p ".user_name, '') || chr(1) ||"  \
	" coalesce(chr(2) || " p ".partition, '') || chr(1) || coalesce(chr(2) || " p ".qos, '') || chr(1) ||"     \
	" coalesce(chr(2) || " p ".wckey, '') || chr(1) || coalesce(chr(2) || " p ".namespace, '') || chr(1) ||"   \
	" coalesce((" labels ")::text, '') || chr(1) || " run_kind " || chr(1) ||"                                 \
	" coalesce((" seg ")::text, '') || chr(1) || coalesce(" endpoints ", '{}')::text || chr(1) || " cluster

/* Whether the open jobs of start day sd (a date), deadline day dd (NULL:
 * no limit) and last sighting seen (SQL over $3, now) are summed
 * (open_gpu_sums, sql/107) rather than read per job: each of them then has
 * the same pieces (docs/ingest.md, "Sums of open jobs"). Written once for
 * a job (the per-job read skips exactly these) and for a row of sums. hot
 * (OBS_ALL's CTE) holds the days a firm piece or a rule boundary lies in. */
static void put_summed(struct gl_strbuf *sql, const char *sd, const char *dd, const char *seen)
{
	gl_strbuf_printf(sql,
			 "((SELECT use_sums FROM sm) AND %s IS NOT NULL AND %s < (%s AT TIME ZONE 'UTC')::date"
			 " AND %s < (to_timestamp($3) AT TIME ZONE 'UTC')::date AND NOT %s = ANY((SELECT days FROM hot)::date[])"
			 " AND (%s IS NULL OR %s < (%s AT TIME ZONE 'UTC')::date OR %s > (to_timestamp($3) AT TIME ZONE 'UTC')::date))",
			 seen, sd, seen, sd, sd, dd, dd, seen, dd);
}

/* A job's start day and deadline day, as open_gpu_sums has them. */
#define JB_START_DAY "(jb.start_at AT TIME ZONE 'UTC')::date"
#define JB_DL_DAY                                                                                         \
	"CASE WHEN jb.timelimit_s >= 0 THEN ((jb.start_at + jb.timelimit_s * interval '1 second')"         \
	" AT TIME ZONE 'UTC')::date END"

static void put_job_summed(struct gl_strbuf *sql)
{
	gl_strbuf_puts(sql, "(jb.end_at IS NULL AND ");
	put_summed(sql, JB_START_DAY, JB_DL_DAY, JB_SEEN);
	gl_strbuf_puts(sql, ")");
}

/* OBS_ALL's CTEs before k0: whether the sums are read (sm: not on a
 * central of shards, whose jobs are the shards'), the days whose open
 * jobs are read per job for a firm piece or a rule boundary inside them
 * (hot), and the exporter usage of the firm pieces (usage: a summed job
 * that has some is read per job for its usage, put_live_usage). */
static void put_sums_ctes(struct gl_strbuf *sql)
{
	gl_strbuf_puts(sql,
	", sm AS MATERIALIZED (SELECT coalesce((SELECT enabled FROM open_gpu_sums_state), false)"
	"  AND NOT EXISTS (SELECT 1 FROM shards) AS use_sums"
	"), hot AS MATERIALIZED (SELECT coalesce(array_agg(DISTINCT d), '{}') AS days FROM ("
	" SELECT generate_series((a AT TIME ZONE 'UTC')::date, ((b - interval '1 microsecond') AT TIME ZONE 'UTC')::date,"
	"  interval '1 day')::date AS d FROM fsteps"
	" UNION ALL SELECT (t AT TIME ZONE 'UTC')::date FROM (SELECT valid_from AS t FROM owners"
	"  UNION ALL SELECT valid_to FROM owners UNION ALL SELECT valid_from FROM workload_rules"
	"  UNION ALL SELECT valid_to FROM workload_rules) x"
	" WHERE isfinite(t) AND t <> date_trunc('day', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') y)"
	/* the bounds of the open jobs that may be read per job
	 * (put_open_jobs): a start from lo on, a deadline in [dlo, dhi);
	 * all of them without the sums or with a job never seen */
	", slo AS MATERIALIZED (SELECT CASE WHEN NOT (SELECT use_sums FROM sm) OR bool_or(x.seen IS NULL)"
	"  THEN '-infinity'::timestamptz ELSE least(min(date_trunc('day', x.seen AT TIME ZONE 'UTC')) AT TIME ZONE 'UTC',"
	"  date_trunc('day', to_timestamp($3) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',"
	"  (SELECT min(date_trunc('day', t AT TIME ZONE 'UTC')) AT TIME ZONE 'UTC' FROM (SELECT valid_from AS t FROM owners"
	"   UNION ALL SELECT valid_to FROM owners UNION ALL SELECT valid_from FROM workload_rules"
	"   UNION ALL SELECT valid_to FROM workload_rules) b WHERE isfinite(t)"
	"   AND t <> date_trunc('day', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
	"   AND (t AT TIME ZONE 'UTC')::date >= (SELECT min(start_day) FROM open_gpu_sums))) END AS lo,"
	"  date_trunc('day', min(x.seen) AT TIME ZONE 'UTC') AS dlo,"
	"  date_trunc('day', to_timestamp($3) AT TIME ZONE 'UTC') + interval '1 day' AS dhi"
	" FROM (SELECT greatest(su.last_seen_at, ist.watermark) AS seen FROM open_gpu_sums su"
	"  JOIN open_gpu_sets st ON st.set_id = su.set_id"
	"  LEFT JOIN ingest_state ist ON ist.cluster_id = st.cluster_id AND ist.source = st.source) x)");
}

/* OBS_ALL's jobs, instead of the jobs table: those ended after the steps'
 * start (pa) and the open ones in a range that can hold a job the sums do
 * not stand for (put_summed): a start from slo.lo on (the earliest
 * sighting's day, today, a rule boundary's day), a start in one of hot's
 * days below lo (a firm piece's or a rule boundary's), a deadline in
 * [slo.dlo, slo.dhi), or exporter usage in a firm piece. Each arm a range
 * of its own index (jobs_end_idx, sql/108's) and none holds a job an arm
 * before it holds (UNION ALL: no dedup pass), so the summed jobs are not
 * read: as an OR the planner took jobs_start_idx for the whole span and
 * filtered every open job (9,680 of 10,000 on bench_observed's data). A
 * hot day's range is a lateral scan a day (OFFSET 0 keeps it one): joined,
 * the planner read every open job below lo and matched it to the days.
 * Without the sums (lo is then -infinity) only the first two arms can
 * hold a job, and the others do not run (a one-time filter): on a central
 * database of shards each arm is a remote query to every shard. */
#define OPEN_J "j.end_at IS NULL AND j.gpu_milli > 0"
#define OPEN_BELOW_LO "j.start_at < (SELECT lo FROM slo)"
#define OPEN_HOT_DAY "(j.start_at AT TIME ZONE 'UTC')::date = ANY((SELECT days FROM hot)::date[])"
#define OPEN_DL "((j.start_at AT TIME ZONE 'UTC') + j.timelimit_s * interval '1 second')"
#define OPEN_IN_DL                                                                                       \
	"(j.timelimit_s >= 0 AND " OPEN_DL " >= (SELECT dlo FROM slo) AND " OPEN_DL " < (SELECT dhi FROM slo))"
static void put_open_jobs(struct gl_strbuf *sql, const char *pa)
{
	gl_strbuf_printf(sql,
			 "(SELECT j.* FROM jobs j WHERE j.gpu_milli > 0"
			 " AND j.end_at > to_timestamp((SELECT min(x) FROM unnest(%s::bigint[]) x))"
			 " UNION ALL SELECT j.* FROM jobs j WHERE " OPEN_J " AND j.start_at >= (SELECT lo FROM slo)"
			 " UNION ALL SELECT j.* FROM (SELECT unnest(days) AS d FROM hot WHERE (SELECT use_sums FROM sm)) h"
			 " CROSS JOIN LATERAL ("
			 "  SELECT * FROM jobs j WHERE " OPEN_J " AND j.start_at >= h.d::timestamp AT TIME ZONE 'UTC'"
			 "  AND j.start_at < (h.d + 1)::timestamp AT TIME ZONE 'UTC' AND " OPEN_BELOW_LO " OFFSET 0) j"
			 " UNION ALL SELECT j.* FROM jobs j WHERE (SELECT use_sums FROM sm) AND " OPEN_J " AND " OPEN_IN_DL
			 " AND " OPEN_BELOW_LO " AND NOT " OPEN_HOT_DAY
			 " UNION ALL SELECT j.* FROM jobs j WHERE (SELECT use_sums FROM sm) AND " OPEN_J
			 " AND j.job_pk = ANY((SELECT array_agg(job_pk) FROM usage)::bigint[]) AND " OPEN_BELOW_LO
			 " AND NOT " OPEN_HOT_DAY " AND " OPEN_IN_DL " IS NOT TRUE)",
			 pa);
}

/* OBS_ALL's ks: the summed rows of open_gpu_sums as rows of k0's columns
 * (job_pk NULL), merged per set, sighting, implausible or not and the
 * firm pieces that start after their day (fc: a day matters through
 * those only; start_at is the first such day, which every firm piece
 * clips alike), and kk: k0's jobs not summed and ks, what kp cuts. */
static void put_ks(struct gl_strbuf *sql)
{
	/* summed on narrow columns first (a sums row a set and start day:
	 * thousands), the sets' attributes joined to the few hundred sums */
	gl_strbuf_puts(sql,
	"), ks AS ("
	" SELECT NULL::bigint AS job_pk, st.cluster_id, c.name AS cluster, st.user_name, st.account, st.partition, st.qos,"
	"  st.namespace, " GL_ACCOUNTING_GPU_MODEL_OF_SQL("gmc", "st.model_raw") " AS gpu_model, w.gpu_micro, w.held_micro,"
	"  w.start_at, least(to_timestamp($3), w.seen) AS stop_at, w.seen AS u0, to_timestamp($3) AS u1,"
	"  CASE WHEN w.xs THEN w.seen END AS x0, CASE WHEN w.xs THEN to_timestamp($3) END AS x1, w.seg,"
	"  " OKEY_SQL("st", "st.labels", "st.run_kind", "w.seg", "st.endpoints", "c.name") " AS okey,"
	"  st.wckey, st.labels, st.run_kind, st.endpoints"
	" FROM (SELECT v.set_id, v.seen, v.xs, v.fc, v.seg, sum(v.gpu_micro)::bigint AS gpu_micro,"
	"   sum(v.held_micro)::bigint AS held_micro, min(v.start_day)::timestamp AT TIME ZONE 'UTC' AS start_at"
	"  FROM (SELECT su.set_id, su.gpu_micro, su.held_micro, su.start_day, y.seen,"
	"    coalesce(su.dl_day < (y.seen AT TIME ZONE 'UTC')::date, false) AS xs,"
	"    width_bucket(su.start_day::timestamp AT TIME ZONE 'UTC', (SELECT array_agg(b ORDER BY a) FROM fsteps)) AS fc,"
	"    sg.ts[width_bucket(su.start_day::timestamp AT TIME ZONE 'UTC', sg.ts)] AS seg"
	"   FROM open_gpu_sums su JOIN open_gpu_sets s0 ON s0.set_id = su.set_id"
	"   LEFT JOIN ingest_state ist ON ist.cluster_id = s0.cluster_id AND ist.source = s0.source"
	"   CROSS JOIN segs sg CROSS JOIN LATERAL (SELECT greatest(su.last_seen_at, ist.watermark) AS seen) y"
	"   WHERE ");
	put_summed(sql, "su.start_day", "su.dl_day", "y.seen");
	gl_strbuf_puts(sql,
	"  ) v GROUP BY v.set_id, v.seen, v.xs, v.fc, v.seg) w"
	" JOIN open_gpu_sets st ON st.set_id = w.set_id"
	" JOIN clusters c ON c.cluster_id = st.cluster_id"
	" " GL_ACCOUNTING_GPU_MODEL_JOIN_SQL("gmc", "st.model_raw")
	"), kk AS (SELECT job_pk, cluster_id, cluster, user_name, account, partition, qos, namespace, gpu_model,"
	"  gpu_micro, held_micro, start_at, stop_at, u0, u1, x0, x1, seg, okey, wckey, labels, run_kind, endpoints"
	" FROM k0 WHERE NOT ins UNION ALL SELECT * FROM ks");
}

static void put_usage_cte(struct gl_strbuf *sql, enum obs_mode m, int jobs_param);

/* The GPU jobs of jb overlapping a run r and started before now ($3), each
 * once: a job over two runs is kept at the first. The end_at tests stay
 * apart from the stop expression so the scans use jobs_window_idx and
 * jobs_running_idx. The bounds of all the steps (pa starts, pb ends) are
 * said again as values of their own: on a central database of shards
 * (docs/scale.md) a bound taken from the runs CTE stays on the central, so
 * every shard would send all its jobs. spanned (the rollup, on the
 * database that writes the jobs: sql/100): a finished job starts at most
 * the longest finished job's span before the steps, which lets the scan
 * range over jobs_start_idx instead of reading the whole table. */
static void put_run_jobs_where(struct gl_strbuf *sql, enum obs_mode m, const char *pa, const char *pb, int spanned)
{
	const char *a = obs_start(m), *b = obs_stop(m);
	if (m == OBS_ALL) {
		/* a job with a firm part in a live step, or an open one with
		 * unobserved time in r; found once, at the first run its whole
		 * span overlaps; kp keeps each part's overlap with its steps */
		a = "jb.start_at";
		b = "coalesce(jb.end_at, to_timestamp($3))";
		gl_strbuf_printf(sql,
				 " jb.gpu_milli > 0 AND jb.start_at < r.b AND (jb.end_at > r.a OR jb.end_at IS NULL)"
				 " AND (EXISTS (SELECT 1 FROM fsteps f WHERE f.a < %s AND f.b > jb.start_at)"
				 " OR (jb.end_at IS NULL AND to_timestamp($3) > r.a AND %s < least(r.b, to_timestamp($3))))",
				 obs_stop(OBS_FIRM), obs_start(OBS_UNSEEN));
		/* the summed jobs are ks's, but for their exporter usage */
		gl_strbuf_puts(sql, " AND (NOT ");
		put_job_summed(sql);
		gl_strbuf_puts(sql, " OR jb.job_pk IN (SELECT job_pk FROM usage))");
	} else if (m == OBS_UNSEEN || m == OBS_IMPLAUSIBLE)
		gl_strbuf_printf(sql,
				 " jb.gpu_milli > 0 AND jb.end_at IS NULL AND jb.start_at < r.b AND to_timestamp($3) > r.a"
				 " AND %s < least(r.b, to_timestamp($3))%s",
				 a, m == OBS_IMPLAUSIBLE ? " AND jb.timelimit_s >= 0" : "");
	else
		gl_strbuf_printf(sql,
				 " jb.gpu_milli > 0 AND jb.start_at < r.b"
				 " AND (jb.end_at > r.a OR (jb.end_at IS NULL AND %s > r.a))",
				 m == OBS_FIRM ? b : "to_timestamp($3)");
	gl_strbuf_printf(sql, " AND jb.start_at < to_timestamp((SELECT max(x) FROM unnest(%s::bigint[]) x))", pb);
	if (m != OBS_ALL) /* OBS_ALL's jobs are put_open_jobs's */
		gl_strbuf_printf(sql,
				 " AND (jb.end_at > to_timestamp((SELECT min(x) FROM unnest(%s::bigint[]) x)) OR jb.end_at IS NULL)",
				 pa);
	if (spanned)
		gl_strbuf_printf(sql,
				 " AND (jb.end_at IS NULL OR jb.start_at >= coalesce(to_timestamp((SELECT min(x) FROM"
				 " unnest(%s::bigint[]) x)) - (SELECT max(span) FROM job_span_max), '-infinity'))",
				 pa);
	gl_strbuf_printf(sql,
			 " AND jb.start_at < to_timestamp($3)"
			 " AND NOT EXISTS (SELECT 1 FROM runs r2 WHERE r2.a < r.a AND %s < r2.b AND %s > r2.a)",
			 a, b);
}

/* OBS_ALL's kp: each part of a job of k0 cut at its part's steps (the
 * firm part [start_at, stop_at) at fsteps, the unobserved [u0, u1) and
 * implausible [x0, x1) at every step), the step i of a part p > 0 moved
 * by p x LIVE_PART_STRIDE, and summed as kp is. One UNION ALL branch a
 * part: a row a job and part through a VALUES list cost 1.15x that in CPU
 * (10,000 open jobs, bench_observed's data). */
static void put_parts_kp(struct gl_strbuf *sql)
{
	static const char *const part[3][3] = {
		{"s.i", "start_at", "stop_at"},
		{"s.i + " LIVE_STR(LIVE_PART_STRIDE), "u0", "u1"},
		{"s.i + 2 * " LIVE_STR(LIVE_PART_STRIDE), "x0", "x1"},
	};
	put_ks(sql);
	gl_strbuf_puts(sql, "), kp AS ("
			    " SELECT j.i, j.cluster_id, j.cluster, j.user_name, j.account, j.partition, j.qos, j.namespace, j.gpu_model,"
			    "  sum(j.gpu_micro) AS gpu_micro, sum(j.held_micro) AS held_micro, j.start_at, j.stop_at,"
			    "  j.seg, j.okey, j.wckey, j.labels, j.run_kind, j.endpoints, NULL::bigint AS job_pk FROM (");
	for (int p = 0; p < 3; p++)
		gl_strbuf_printf(sql,
				 "%s SELECT %s AS i, j.cluster_id, j.cluster, j.user_name, j.account, j.partition, j.qos,"
				 "  j.namespace, j.gpu_model, j.gpu_micro, j.held_micro, greatest(j.%s, s.a) AS start_at,"
				 "  least(j.%s, s.b) AS stop_at, j.seg, j.okey, j.wckey, j.labels, j.run_kind, j.endpoints"
				 " FROM kk j JOIN %s s ON s.a < j.%s AND s.b > j.%s",
				 p ? " UNION ALL" : "", part[p][0], part[p][1], part[p][2], p ? "steps" : "fsteps", part[p][2],
				 part[p][1]);
	gl_strbuf_puts(sql, ") j GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18, 19");
}

/* GPU jobs overlapping the live steps, one row each (k0), and the owner of
 * each distinct set of owner-relevant attributes and rule-validity segment
 * at start time (own: a few thousand gl_owner calls, not one per job),
 * with the attributes the dimensions read. append_live_split sums the jobs
 * per such set before it joins own. agg: kp too, k0's jobs cut at the
 * steps and summed per step, owner-attribute set and interval (see
 * append_live_split). */
static void put_own_cte(struct gl_strbuf *sql, const char *src);
static void put_whole_sets(struct gl_strbuf *sql);

static void put_jobs_cte(struct gl_strbuf *sql, enum obs_mode m, int spanned, int agg, int whole)
{
	gl_strbuf_puts(sql, "WITH " GL_LIVE_CTES("steps", "$1", "$2", "$4"));
	if (m == OBS_ALL)
		/* the firm part's steps, and every part's steps with its i (kp's) */
		gl_strbuf_puts(sql,
		", fsteps AS ("
		" SELECT s.i::integer AS i, to_timestamp(s.a) AS a, to_timestamp(s.b) AS b,"
		"  row_number() OVER (ORDER BY s.a)::integer AS n"
		" FROM unnest($5::bigint[], $6::bigint[], $7::integer[]) AS s(a, b, i)"
		"), esteps AS (SELECT i, a, b FROM fsteps"
		" UNION ALL SELECT i + " LIVE_STR(LIVE_PART_STRIDE) ", a, b FROM steps"
		" UNION ALL SELECT i + 2 * " LIVE_STR(LIVE_PART_STRIDE) ", a, b FROM steps)");
	if (m == OBS_ALL) {
		put_sums_ctes(sql);
		put_usage_cte(sql, m, 0);
	}
	gl_strbuf_puts(sql,
	", bounds AS ("
	" SELECT DISTINCT t FROM (SELECT valid_from AS t FROM owners UNION ALL SELECT valid_to FROM owners"
	"  UNION ALL SELECT valid_from FROM workload_rules UNION ALL SELECT valid_to FROM workload_rules"
	"  UNION ALL SELECT '-infinity'::timestamptz) x"
	/* the segments' starts in order: a job's is found by width_bucket
	 * ('-infinity' first, so every job has one), not by a join that read
	 * every job row once a segment */
	"), segs AS MATERIALIZED (SELECT array_agg(t ORDER BY t) AS ts FROM bounds"
	/* the serving jobs' endpoints apart, hashed: joined to the jobs as
	 * the view, they were merged in job_pk order, which made the planner
	 * read the jobs by jobs_job_pk_idx, the whole table, for a batch of
	 * days (931,600 rows read for 137,093 kept) */
	"), ep AS MATERIALIZED (SELECT job_pk, endpoints FROM job_endpoints"
	"), k0 AS ("
	" SELECT jb.job_pk, jb.cluster_id, c.name AS cluster, jb.user_name, jb.account, jb.partition, jb.qos,"
	"  jb.namespace, " GL_ACCOUNTING_GPU_MODEL_OF_SQL("gmc", GL_ACCOUNTING_JOB_RAW_MODEL_SQL("jb")) " AS gpu_model, " GL_ACCOUNTING_JOB_GPUS_SQL("jb") " AS gpu_micro,"
	"  " GL_ACCOUNTING_JOB_HELD_SQL("jb") " AS held_micro,"
	"  ");
	if (m == OBS_ALL) {
		gl_strbuf_printf(sql, "%s AS start_at, %s AS stop_at,"
				 " CASE WHEN jb.end_at IS NULL THEN %s END AS u0, CASE WHEN jb.end_at IS NULL THEN %s END AS u1,"
				 " CASE WHEN jb.end_at IS NULL AND jb.timelimit_s >= 0 THEN %s END AS x0,"
				 " CASE WHEN jb.end_at IS NULL AND jb.timelimit_s >= 0 THEN %s END AS x1,",
				 obs_start(OBS_FIRM), obs_stop(OBS_FIRM), obs_start(OBS_UNSEEN), obs_stop(OBS_UNSEEN),
				 obs_start(OBS_IMPLAUSIBLE), obs_stop(OBS_IMPLAUSIBLE));
		put_job_summed(sql);
		gl_strbuf_puts(sql, " AS ins,");
	} else
		gl_strbuf_printf(sql, "%s AS start_at, %s AS stop_at,", obs_start(m), obs_stop(m));
	gl_strbuf_puts(sql,
	"  sg.ts[width_bucket(jb.start_at, sg.ts)] AS seg,"
	/* the key of attrs' DISTINCT below (OKEY_SQL). Segment, endpoints and
	 * cluster are in it too: a join on
	 * them apart sorted every job piece of the rollup on four keys, the
	 * endpoints' array compared at each tie (5.5 s of an 8-day batch's
	 * 32 s at 10 M jobs a year) */
	"  " OKEY_SQL("jb", "jb.tags -> 'labels'", GL_ACCOUNTING_JOB_RUN_KIND_SQL("jb"),
		      "sg.ts[width_bucket(jb.start_at, sg.ts)]", "ep.endpoints", "c.name") " AS okey,"
	"  jb.wckey, jb.tags -> 'labels' AS labels,"
	"  " GL_ACCOUNTING_JOB_RUN_KIND_SQL("jb") " AS run_kind,"
	"  coalesce(ep.endpoints, '{}') AS endpoints"
	" FROM runs r JOIN ");
	if (m == OBS_ALL) {
		gl_strbuf_puts(sql, "(");
		put_open_jobs(sql, "$1");
		gl_strbuf_puts(sql, " jb" GL_ACCOUNTING_JOB_SEEN_JOIN_SQL("jb", "jst") ")");
	} else
		gl_strbuf_puts(sql, RUN_JOBS);
	gl_strbuf_puts(sql, " ON");
	put_run_jobs_where(sql, m, "$1", "$2", spanned);
	gl_strbuf_puts(sql,
	" JOIN clusters c ON c.cluster_id = jb.cluster_id"
	" CROSS JOIN segs sg"
	" " GL_ACCOUNTING_GPU_MODEL_JOIN_SQL("gmc", GL_ACCOUNTING_JOB_RAW_MODEL_SQL("jb"))
	" LEFT JOIN ep ON ep.job_pk = jb.job_pk");
	if (agg && m == OBS_ALL)
		put_parts_kp(sql);
	else if (agg)
		gl_strbuf_puts(sql,
		"), kp AS ("
		" SELECT s.i, j.cluster_id, j.cluster, j.user_name, j.account, j.partition, j.qos, j.namespace, j.gpu_model,"
		"  sum(j.gpu_micro) AS gpu_micro, sum(j.held_micro) AS held_micro,"
		"  greatest(j.start_at, s.a) AS start_at, least(j.stop_at, s.b) AS stop_at,"
		"  j.seg, j.okey, j.wckey, j.labels, j.run_kind, j.endpoints, NULL::bigint AS job_pk"
		" FROM k0 j JOIN steps s ON s.a < j.stop_at AND s.b > j.start_at"
		" GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18, 19");
	/* kp holds every set k0 has in a step: a job's exporter usage in a
	 * step (put_live_usage) needs the same overlap as its row of kp */
	gl_strbuf_puts(sql, ")");
	if (whole)
		put_whole_sets(sql);
	put_own_cte(sql, whole ? "kw" : agg ? "kp" : "k0");
}

/* ", attrs AS (...), own AS (...)": the owner and workload type of each
 * distinct owner-attribute set of src (k0, kp or kw). */
static void put_own_cte(struct gl_strbuf *sql, const char *src)
{
	gl_strbuf_printf(sql,
	", attrs AS ("
	" SELECT DISTINCT cluster, okey, seg, endpoints, account, user_name, partition, qos, wckey, namespace,"
	"  labels, run_kind"
	" FROM %s", src);
	gl_strbuf_puts(sql,
	"), own AS MATERIALIZED ("
	" SELECT a.cluster, a.okey, a.seg, a.endpoints, o.team, o.project, o.cost_center,"
	"  a.account, a.user_name, a.partition, a.qos, a.namespace,"
	"  gl_workload_type(a.cluster, a.account, a.user_name, a.partition, a.qos, a.wckey, a.namespace,"
	"   jsonb_build_object('labels', a.labels, 'run_kind', a.run_kind), a.endpoints, a.seg) AS workload_type"
	" FROM attrs a"
	" LEFT JOIN LATERAL gl_owner(a.cluster, a.account, a.user_name, a.partition, a.qos, a.wckey, a.namespace,"
	"  jsonb_build_object('labels', a.labels), a.seg) o ON true"
	")");
}

/* The whole-window read (live_whole): a cold request's one live piece,
 * [$1[1], $2[1]), whose jobs are summed per owner-attribute set before any
 * per-set work, in PostgreSQL's parallel workers (Partial HashAggregate
 * under a Gather). Nothing the jobs' scan reads may keep it in the leader:
 * no CTE (parallel-restricted), no subquery of a table joined to it (a
 * join to the rules' or rates' bounds aggregated in a FROM subquery is
 * never parallel): the window's bounds are constants, the owner rules'
 * segments (WHOLE_ZS) and the rates' bounds (WHOLE_ZR) scalar subqueries,
 * which the leader computes once and passes to the workers (docs/scale.md,
 * "A cold window"). */
#define WHOLE_A "to_timestamp(($1::bigint[])[1])"
#define WHOLE_B "to_timestamp(($2::bigint[])[1])"
/* every rate's bounds, of any model (WHOLE_ZR; WHOLE_RB as a relation
 * of one row, rb), and the owner rules' segments (WHOLE_ZS): a job's piece
 * with none of these inside lies in one period of each rate; a piece cut
 * by one is priced per period */
#define WHOLE_ZR                                                                                          \
	"(SELECT array_agg(t ORDER BY t) FROM (SELECT valid_from AS t FROM rates"                           \
	" UNION SELECT valid_to FROM rates UNION SELECT '-infinity'::timestamptz) x)"
#define WHOLE_RB "(SELECT " WHOLE_ZR " AS rb)"
#define WHOLE_ZS                                                                                          \
	"(SELECT array_agg(t ORDER BY t) FROM (SELECT valid_from AS t FROM owners"                          \
	"  UNION SELECT valid_to FROM owners UNION SELECT valid_from FROM workload_rules"                   \
	"  UNION SELECT valid_to FROM workload_rules UNION SELECT '-infinity'::timestamptz) x)"
/* y.key, a job's part of its group: its owner segment and rate bucket
 * (positive), or, for a piece a rate bound cuts, the job itself (-job_pk,
 * never positive). It comes out of a function in FROM (x + 0) only for
 * the planner: its estimate of the groups takes the jobs' own columns
 * (segment and bucket from start_at, the job from job_pk) for one group a
 * job, and then sends every job to the leader instead of summing in the
 * workers; a function's column it takes for one value a job (the owner
 * columns' sets are then the jobs' extended statistics, sql/132). A bound
 * of the rates inside (p0, p1) cuts the piece: the bounds strictly before
 * p1 (those up to p1 - 1 us) outnumber those up to p0. Each use of a
 * bounds array copies it (a scalar subquery's small array is stored with
 * a short header and detoasted at every call), and the lateral subqueries
 * are flattened, so every reference to v, w or x is its expression again,
 * a job row at a time: the per-job columns of put_whole_kg read y.key
 * instead (docs/scale.md, "A cold window"). */
#define WHOLE_Z                                                                                           \
	" CROSS JOIN LATERAL (SELECT greatest(jb.start_at, " WHOLE_A ") AS p0,"                            \
	"  least(" JB_FIRM_STOP ", " WHOLE_B ") AS p1) v"                                                      \
	" CROSS JOIN LATERAL (SELECT width_bucket(v.p0, " WHOLE_ZR ") AS k) w"                              \
	" CROSS JOIN LATERAL (SELECT width_bucket(v.p1 - interval '1 microsecond', " WHOLE_ZR ") > w.k AS cut) x" \
	" CROSS JOIN LATERAL int8pl(CASE WHEN x.cut THEN -jb.job_pk"                                        \
	"  ELSE width_bucket(jb.start_at, " WHOLE_ZS ")::bigint * 4294967296 + w.k END, 0) y(key)"
#define WHOLE_SEC "greatest(extract(epoch FROM v.p1 - v.p0)::bigint, 0)"

/* One branch of kg: the jobs of from (as jb) summed per set and y.key,
 * with the given endpoints, their sums and a cut job's GPUs times sign.
 * A cut job (y.key <= 0) is a group of its own: min() only names its
 * values and its segment; an uncut group's segment is the key's. Constant
 * endpoints are no grouping key: hashing and comparing them costs every
 * job row. No held sum: a request's lines print none, and the only use
 * of it, pu's "m <> 0 OR held <> 0", is "m <> 0" here: every job read has
 * gpu_micro >= 1 (gpu_milli > 0), and a set's m and held are sums of
 * gpu_micro x s and phys x s over the same jobs and seconds s >= 0 (the
 * served branches take off exactly what they add), so m = 0 only when
 * every s is 0. */
static void put_whole_kg(struct gl_strbuf *sql, const char *from, const char *endpoints, const char *sign)
{
	gl_strbuf_printf(sql,
	" SELECT jb.cluster_id, jb.user_name, jb.account, jb.partition, jb.qos, jb.namespace, jb.wckey,"
	"  jb.tags -> 'labels' AS labels, " GL_ACCOUNTING_JOB_RUN_KIND_SQL("jb") " AS run_kind,"
	"  CASE WHEN y.key > 0 THEN (" WHOLE_ZS ")[(y.key / 4294967296)::integer]"
	"  ELSE min(CASE WHEN y.key <= 0 THEN (" WHOLE_ZS ")[width_bucket(jb.start_at, " WHOLE_ZS ")] END) END AS seg,"
	"  %s AS endpoints, " GL_ACCOUNTING_JOB_RAW_MODEL_SQL("jb") " AS raw_model,"
	"  min(CASE WHEN y.key <= 0 THEN %s" GL_ACCOUNTING_JOB_GPUS_SQL("jb") " END) AS xg,"
	"  min(CASE WHEN y.key <= 0 THEN v.p0 END) AS xp0, min(CASE WHEN y.key <= 0 THEN v.p1 END) AS xp1,"
	"  CASE WHEN y.key > 0 THEN (y.key %% 4294967296)::integer END AS k,"
	"  %ssum(" GL_ACCOUNTING_JOB_GPUS_SQL("jb") " * " WHOLE_SEC ") AS m"
	" FROM %s" GL_ACCOUNTING_JOB_SEEN_JOIN_SQL("jb", "jst") WHOLE_Z
	" WHERE jb.gpu_milli > 0 AND jb.start_at < " WHOLE_B " AND jb.start_at < to_timestamp($3)"
	"  AND (jb.end_at > " WHOLE_A " OR (jb.end_at IS NULL AND " JB_FIRM_STOP " > " WHOLE_A "))"
	" GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, y.key%s",
	endpoints, sign, sign, from, endpoints[0] == '\'' ? "" : ", 11");
}

/* kg: the jobs of the piece (put_run_jobs_where's for one run, OBS_FIRM)
 * summed per owner-attribute set and raw model, billed
 * micro-GPU-seconds, and per rate bucket k; a job whose piece a rate bound
 * cuts is a row of its own (xg, xp0, xp1: its pieces are priced per period
 * in put_whole_pieces). Every job is summed without endpoints first, and
 * the few serving jobs moved to their endpoints' sets after (taken off,
 * then added): joined to every job, the endpoints were a third of the
 * scan's time (26.1 -> 16.7 s at 10 M jobs, load 8; docs/scale.md). A set
 * left at zero is no piece (put_live_usage's pu keeps none). kw: kg's sets
 * with k0's names (cluster, gpu_model, okey), a few thousand rows, not a
 * key string per job. */
static void put_whole_sets(struct gl_strbuf *sql)
{
	static const char served[] = "jobs jb JOIN job_endpoints ep ON ep.job_pk = jb.job_pk";
	gl_strbuf_puts(sql, ", kg AS (");
	put_whole_kg(sql, "jobs jb", "'{}'::text[]", "");
	gl_strbuf_puts(sql, " UNION ALL");
	put_whole_kg(sql, served, "'{}'::text[]", "-");
	gl_strbuf_puts(sql, " UNION ALL");
	put_whole_kg(sql, served, "ep.endpoints", "");
	gl_strbuf_puts(sql,
	"), kw AS ("
	" SELECT c.name AS cluster, g.user_name, g.account, g.partition, g.qos, g.namespace, g.wckey, g.labels,"
	"  g.run_kind, g.seg, g.endpoints, " GL_ACCOUNTING_GPU_MODEL_OF_SQL("gmc", "g.raw_model") " AS gpu_model,"
	"  " OKEY_SQL("g", "g.labels", "g.run_kind", "g.seg", "g.endpoints", "c.name") " AS okey,"
	"  g.xg, g.xp0, g.xp1, g.k, g.m"
	" FROM kg g JOIN clusters c ON c.cluster_id = g.cluster_id"
	" " GL_ACCOUNTING_GPU_MODEL_JOIN_SQL("gmc", "g.raw_model")
	")");
}

/* ", mr AS (...), am AS (...)": put_live_pieces' sums for kw's sets: the
 * allocation as summed, the price of a set's uncut jobs by the one rate
 * period holding their bucket, a cut job's per period it overlaps; the
 * same integers per set and rate as a piece per job and rate. */
static void put_whole_pieces(struct gl_strbuf *sql)
{
	gl_strbuf_puts(sql,
	", mr AS MATERIALIZED ("
	" SELECT m.gpu_model, r.valid_from, r.valid_to, r.micros_per_gpu_hour"
	" FROM (SELECT DISTINCT gpu_model FROM kw) m CROSS JOIN LATERAL gl_rates_of(m.gpu_model) r"
	"), rbk AS MATERIALIZED (SELECT rb FROM " WHOLE_RB " r"
	"), iv AS (SELECT j.cluster, j.okey, j.gpu_model, NULL::bigint AS rate, j.m, 0::bigint AS held FROM kw j"
	" UNION ALL SELECT j.cluster, j.okey, j.gpu_model, r.micros_per_gpu_hour, j.m, 0"
	" FROM kw j CROSS JOIN rbk JOIN mr r ON r.gpu_model IS NOT DISTINCT FROM j.gpu_model"
	"  AND r.valid_from <= rbk.rb[j.k] AND r.valid_to > rbk.rb[j.k]"
	" WHERE j.k IS NOT NULL"
	" UNION ALL SELECT j.cluster, j.okey, j.gpu_model, r.micros_per_gpu_hour,"
	"  j.xg * greatest(extract(epoch FROM least(j.xp1, r.valid_to) - greatest(j.xp0, r.valid_from))::bigint, 0), 0"
	" FROM kw j JOIN mr r ON r.gpu_model IS NOT DISTINCT FROM j.gpu_model"
	"  AND r.valid_from < j.xp1 AND r.valid_to > j.xp0 WHERE j.k IS NULL"
	"), am AS (SELECT (SELECT i FROM steps) AS i, cluster, okey, gpu_model, jk, rate, sum(m) AS m, sum(held) AS held"
	" FROM (SELECT iv.*, NULL::bigint AS jk FROM iv) iv GROUP BY 1, 2, 3, 4, 5, 6)");
}

/* ", ev0 AS (...) ... cells AS (...)": allocation per step without a row
 * per job and step. src has the columns keys (a comma list), g (micro-GPUs)
 * and [p0, p1) (each job or piece of one, clipped to the steps' span);
 * steps has n (ordinal in time), a and b, and win its starts in that
 * order. An event +g at p0 and -g at p1 goes to the step holding it
 * (width_bucket over the starts). Per key and step n, with ga the GPUs
 * active at the step's start (events of earlier steps), gi and si the
 * step's own events and their g x seconds after its start, cells has gact
 * = ga + gi and si, and the allocated micro-GPU-seconds are (b - a) x gact - si, exact in
 * integers; a step without events of its own between two that have them
 * holds (b - a) x the GPUs active (si 0). An event in the gap after a step
 * (a built day read from usage_daily instead) counts for the steps after it
 * only. Rows are a key's steps, not its jobs': 91 days of hours over
 * 100,000 jobs of a day each made 2.5 million job-steps (44 s). The events'
 * steps are found where win's arrays are (17 kB for 91 days of hours) and
 * materialized without them: rows that carried them into a sort spilled 7
 * to 14 GB. */
void gl_accounting_event_cells(struct gl_strbuf *sql, const char *keys, const char *src, const char *steps, int one_step)
{
	/* One step (a day of the rollup, a month's live today, a window with no
	 * step): its intervals lie inside it, so each is a cell of its own, gact
	 * 0 and si minus its g x seconds, summed by the caller's grouping; the
	 * events, their sort and windows, and a second grouping by the keys
	 * cost a day's rollup twice to 2.5 times that (3.5 s against 1.4 s a
	 * day of 1,000,000 jobs a month) */
	if (one_step) {
		gl_strbuf_printf(sql,
				 ", cells AS (SELECT %s, 1 AS n, 0::bigint AS gact,"
				 " -(iv.g * extract(epoch FROM iv.p1 - iv.p0)::bigint) AS si FROM %s iv WHERE iv.p1 > iv.p0)",
				 keys, src);
		return;
	}
	gl_strbuf_printf(sql,
			 ", ev0 AS MATERIALIZED (SELECT %s, x.t, x.dg, width_bucket(x.t, win.starts) AS n"
			 " FROM %s iv CROSS JOIN win CROSS JOIN LATERAL (VALUES (iv.p0, iv.g), (iv.p1, -iv.g)) AS x(t, dg)"
			 " WHERE iv.p1 > iv.p0"
			 "), ev AS (SELECT ev0.*, ev0.t < s.b AS inside, ev0.dg * extract(epoch FROM ev0.t - s.a)::bigint AS dgs"
			 " FROM ev0 JOIN %s s ON s.n = ev0.n"
			 "), evn AS (SELECT %s, n, sum(dg) AS dg_all,"
			 " coalesce(sum(dg) FILTER (WHERE inside), 0) AS gi, coalesce(sum(dgs) FILTER (WHERE inside), 0) AS si"
			 " FROM ev GROUP BY %s, n"
			 "), evc AS (SELECT evn.*, coalesce(sum(dg_all) OVER w0, 0) AS ga, lead(n) OVER w1 AS nn FROM evn"
			 " WINDOW w0 AS (PARTITION BY %s ORDER BY n ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),"
			 " w1 AS (PARTITION BY %s ORDER BY n)"
			 "), cells AS (SELECT %s, n, ga + gi AS gact, si FROM evc"
			 " UNION ALL SELECT %s, g.n, ga + dg_all, 0 FROM evc"
			 " CROSS JOIN LATERAL generate_series(evc.n + 1, evc.nn - 1) AS g(n)"
			 " WHERE evc.nn > evc.n + 1 AND evc.ga + evc.dg_all <> 0)",
			 keys, src, steps, keys, keys, keys, keys, keys, keys);
}

/* u.day within the first and last of the built days in the bigint[]
 * parameter arr (their starts): implied by the join on the days, and said
 * as two values (initplans), which postgres_fdw sends to a shard, where a
 * join on an array stays on the central and each shard sent every day it
 * holds (docs/scale.md). */
#define GL_ACCOUNTING_DAYS_WITHIN_SQL(arr)                                                              \
	" u.day >= (SELECT min((to_timestamp(x) AT TIME ZONE 'UTC')::date) FROM unnest(" arr "::bigint[]) x)" \
	" AND u.day <= (SELECT max((to_timestamp(x) AT TIME ZONE 'UTC')::date) FROM unnest(" arr "::bigint[]) x)"

/* Fleet idle: capacity over the whole steps ($1, $2), allocation from jobs
 * over the live pieces ($4 start, $5 end, $6 step; their allocation per
 * key by gl_accounting_event_cells, as the lines') and over built days ($7
 * day start, $8 step) from usage_daily_owner (sql/114: a few rows a day per
 * key; usage_daily has one per user, account, QoS and namespace):
 * k(i, cluster_id, partition, gpu_model, us) in whole micro-GPU-seconds of
 * physical capacity held. */
static void append_alloc_cte(struct gl_strbuf *sql, size_t n_live)
{
	gl_strbuf_puts(sql,
		       "WITH steps AS ("
		       " SELECT s.i::integer AS i, to_timestamp(s.a) AS a, to_timestamp(s.b) AS b"
		       " FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS s(a, b, i)"
		       "), " GL_LIVE_CTES("lsteps", "$4", "$5", "$6") ", j AS ("
		       " SELECT jb.cluster_id, coalesce(jb.partition, '') AS partition,"
		       "  coalesce(" GL_ACCOUNTING_JOB_MODEL_SQL("jb") ", 'unknown') AS gpu_model, " GL_ACCOUNTING_JOB_HELD_SQL("jb") " AS held_micro,"
		       "  jb.start_at, ");
	gl_strbuf_puts(sql, obs_stop(OBS_FIRM));
	gl_strbuf_puts(sql, " AS stop_at"
		       " FROM runs r JOIN " RUN_JOBS " ON");
	put_run_jobs_where(sql, OBS_FIRM, "$4", "$5", 0);
	gl_strbuf_puts(sql,
		       "), ivj AS (SELECT j.cluster_id, j.partition, j.gpu_model, j.held_micro AS g,"
		       " greatest(j.start_at, win.lo) AS p0, least(j.stop_at, win.hi) AS p1 FROM j, win)");
	gl_accounting_event_cells(sql, "cluster_id, partition, gpu_model", "ivj", "lsteps", n_live == 1);
	gl_strbuf_puts(sql,
		       ", k AS ("
		       " SELECT s.i, c.cluster_id, c.partition, c.gpu_model,"
		       "  extract(epoch FROM s.b - s.a)::bigint * c.gact - c.si AS us"
		       " FROM cells c JOIN lsteps s ON s.n = c.n"
		       " UNION ALL"
		       " SELECT d.i, c.cluster_id, u.d_partition, u.d_gpu_model, u.held"
		       " FROM unnest($7::bigint[], $8::integer[]) AS d(a, i)"
		       " JOIN usage_daily_owner u ON u.day = (to_timestamp(d.a) AT TIME ZONE 'UTC')::date AND u.rate IS NULL"
		       "  AND" GL_ACCOUNTING_DAYS_WITHIN_SQL("$7")
		       " JOIN clusters c ON c.name = u.d_cluster"
		       ")");
}

/* Settles fleet idle per step (i) and capacity key (cluster, partition,
 * model) from two CTEs the caller defines: capk (i, cluster_id, cluster,
 * partition, gpu_model, a = the step's start, reported and unavail in
 * GPU-seconds) and alloc (i, cluster_id, partition, gpu_model, us = whole
 * micro-GPU-seconds of capacity held). Ends with "settled": the capk
 * columns, am (the key's own allocation), idle_us and over_us. */
static const char settle_sql[] =
	", j0 AS ("
	" SELECT capk.i, capk.cluster_id, capk.cluster, capk.partition, capk.gpu_model, capk.a,"
	"  capk.reported, capk.unavail, coalesce(alloc.us, 0) AS am,"
	"  capk.reported * 1000000 - capk.unavail * 1000000 - coalesce(alloc.us, 0) AS idle0"
	" FROM capk LEFT JOIN alloc ON alloc.i = capk.i AND alloc.cluster_id = capk.cluster_id"
	"  AND alloc.partition = capk.partition AND alloc.gpu_model = capk.gpu_model"
	/* Allocation its own key could not absorb: a key capacity does not
	 * have (a job without a model of its own on a node the inventory does
	 * not know; an exporter-inventory cluster has no partitions), or more
	 * than the key's capacity (a job under a node's second partition).
	 * Those jobs still held GPUs of the cluster, so the spill comes out of
	 * the cluster's idle: first from keys of its own model, then from all,
	 * in proportion, in whole micro-GPU-seconds by largest remainder. A
	 * cluster's idle is then its capacity less unavailable less all its
	 * allocation, as /v1/capacity settles it. */
	"), spill AS ("
	" SELECT x.i, x.cluster_id, x.gpu_model, sum(x.us) AS us FROM ("
	"  SELECT a.i, a.cluster_id, a.gpu_model, a.us FROM alloc a"
	"  WHERE NOT EXISTS (SELECT 1 FROM capk c WHERE c.i = a.i AND c.cluster_id = a.cluster_id"
	"   AND c.partition = a.partition AND c.gpu_model = a.gpu_model)"
	"  UNION ALL SELECT j0.i, j0.cluster_id, j0.gpu_model, -j0.idle0 FROM j0 WHERE j0.idle0 < 0) x"
	" GROUP BY 1, 2, 3"
	"), m1 AS ("
	" SELECT j0.*, greatest(j0.idle0, 0) AS p, sum(greatest(j0.idle0, 0)) OVER w AS pool,"
	"  least(coalesce(sp.us, 0), sum(greatest(j0.idle0, 0)) OVER w) AS take"
	" FROM j0 LEFT JOIN spill sp ON sp.i = j0.i AND sp.cluster_id = j0.cluster_id AND sp.gpu_model = j0.gpu_model"
	" WINDOW w AS (PARTITION BY j0.i, j0.cluster_id, j0.gpu_model)"
	"), m2 AS ("
	" SELECT m1.*, CASE WHEN pool > 0 THEN div(take * p, pool) ELSE 0 END AS q,"
	"  CASE WHEN pool > 0 THEN mod(take * p, pool) ELSE 0 END AS fr FROM m1"
	"), m3 AS ("
	" SELECT m2.*, p - q - CASE WHEN row_number() OVER (PARTITION BY i, cluster_id, gpu_model"
	"  ORDER BY fr DESC, partition) <= take - sum(q) OVER (PARTITION BY i, cluster_id, gpu_model)"
	"  THEN 1 ELSE 0 END AS p1 FROM m2"
	"), rest AS ("
	" SELECT s.i, s.cluster_id, s.us - coalesce(t.t, 0) AS us"
	" FROM (SELECT i, cluster_id, sum(us) AS us FROM spill GROUP BY 1, 2) s"
	" LEFT JOIN (SELECT i, cluster_id, sum(take) AS t FROM (SELECT DISTINCT i, cluster_id, gpu_model, take FROM m1) d"
	"  GROUP BY 1, 2) t ON t.i = s.i AND t.cluster_id = s.cluster_id"
	"), n1 AS ("
	" SELECT m3.*, coalesce(r.us, 0) AS left2, sum(m3.p1) OVER w AS pool2,"
	"  least(coalesce(r.us, 0), sum(m3.p1) OVER w) AS take2"
	" FROM m3 LEFT JOIN rest r ON r.i = m3.i AND r.cluster_id = m3.cluster_id"
	" WINDOW w AS (PARTITION BY m3.i, m3.cluster_id)"
	"), n2 AS ("
	" SELECT n1.*, CASE WHEN pool2 > 0 THEN div(take2 * p1, pool2) ELSE 0 END AS q2,"
	"  CASE WHEN pool2 > 0 THEN mod(take2 * p1, pool2) ELSE 0 END AS fr2 FROM n1"
	"), settled AS ("
	" SELECT n2.i, n2.cluster_id, n2.cluster, n2.partition, n2.gpu_model, n2.a, n2.reported, n2.unavail, n2.am,"
	"  p1 - q2 - CASE WHEN row_number() OVER (PARTITION BY i, cluster_id ORDER BY fr2 DESC, gpu_model, partition)"
	"   <= take2 - sum(q2) OVER (PARTITION BY i, cluster_id) THEN 1 ELSE 0 END AS idle_us,"
	/* what no idle could absorb: the cluster was over-allocated */
	/* (shown on the key most over its own capacity) */
	"  CASE WHEN row_number() OVER (PARTITION BY i, cluster_id ORDER BY idle0, gpu_model, partition) = 1"
	"   THEN left2 - take2 ELSE 0 END AS over_us"
	" FROM n2"
	")";

/* The accounting dimensions as usage_daily columns. */
static const char *daily_expr(const char *dim)
{
	static const char *const col[] = {"u.d_team",	  "u.d_project",   "u.d_cost_center", "u.d_user",
					  "u.d_account",  "u.d_cluster",   "u.d_partition",   "u.d_qos",
					  "u.d_namespace", "u.d_gpu_model", "u.d_workload_type"};
	for (size_t i = 0; gl_accounting_dims[i]; i++)
		if (!strcmp(gl_accounting_dims[i], dim))
			return col[i];
	return NULL;
}

/* The dimensions usage_daily_job keeps for the serving jobs (sql/052). */
static const char *job_daily_expr(const char *dim)
{
	static const char *const map[][2] = {
		{"job", "u.job_pk"},   {"team", "u.d_team"},	     {"project", "u.d_project"},
		{"cost_center", "u.d_cost_center"}, {"cluster", "u.d_cluster"}, {"namespace", "u.d_namespace"},
		{"gpu_model", "u.d_gpu_model"},
	};
	for (size_t i = 0; i < GL_ARRAY_LEN(map); i++)
		if (!strcmp(map[i][0], dim))
			return map[i][1];
	return NULL;
}

/* Whether the query reads usage_daily_job (sql/052, every job since
 * sql/092): some jobs, or every job's own line. */
static int per_job(const struct gl_accounting_query *q)
{
	if (q->jobs)
		return 1;
	for (size_t d = 0; d < q->n_dims; d++)
		if (!strcmp(q->dims[d], "job"))
			return 1;
	return 0;
}

/* Whether usage_daily_owner (sql/017) has every column the query groups or
 * filters by: then a month reads dozens of rows a day, not thousands. */
static int owner_rollup_serves(const struct gl_accounting_query *q)
{
	static const char *const coarse[] = {"team",	  "project",   "cost_center",	"cluster",
					     "partition", "gpu_model", "workload_type", NULL};
	size_t nf = q->filter ? q->filter->n : 0;
	for (size_t i = 0; i < q->n_dims + nf; i++) {
		const char *dim = i < q->n_dims ? q->dims[i] : q->filter->c[i - q->n_dims].dim;
		size_t k = 0;
		while (coarse[k] && strcmp(coarse[k], dim))
			k++;
		if (!coarse[k])
			return 0;
	}
	return 1;
}

static const char *fleet_expr(const char *dim)
{
	/* the idle rows carry these three dimensions under the same names */
	if (!strcmp(dim, "cluster"))
		return "capk.cluster";
	if (!strcmp(dim, "partition"))
		return "capk.partition";
	if (!strcmp(dim, "gpu_model"))
		return "capk.gpu_model";
	return NULL;
}

/* Appends vals as the next parameter, a PostgreSQL text[] literal: every
 * element double-quoted (so commas, braces and NULL need no care), \ and "
 * escaped. The literal is NUL-terminated inside arrays and its start stored
 * in arr_off[*np], because arrays may move while it grows; *np counts it. */
static void add_text_array(struct gl_strbuf *arrays, size_t *arr_off, int *np, const char *const *vals, size_t n)
{
	arr_off[*np] = arrays->len;
	gl_strbuf_putc(arrays, '{');
	for (size_t v = 0; v < n; v++) {
		if (v)
			gl_strbuf_putc(arrays, ',');
		gl_strbuf_putc(arrays, '"');
		for (const char *p = vals[v]; *p; p++) {
			if (*p == '"' || *p == '\\')
				gl_strbuf_putc(arrays, '\\');
			gl_strbuf_putc(arrays, *p);
		}
		gl_strbuf_putc(arrays, '"');
	}
	gl_strbuf_putc(arrays, '}');
	gl_strbuf_putc(arrays, '\0');
	(*np)++;
}

enum filter_target { FILTER_JOBS, FILTER_DAILY, FILTER_FLEET };

/* Adds "AND expr = ANY($n::text[])" per filter clause, and the owner scope,
 * over the jobs CTE, the usage_daily rows or the fleet idle rows. */
static int add_filters(struct gl_strbuf *sql, const struct gl_accounting_query *q, int *np, struct gl_strbuf *arrays,
		       size_t *arr_off, enum filter_target t, struct gl_err *err)
{
	size_t nf = q->filter ? q->filter->n : 0;
	for (size_t i = 0; i < nf; i++) {
		const struct gl_filter_clause *fc = &q->filter->c[i];
		const char *expr = t == FILTER_FLEET ? fleet_expr(fc->dim)
				 : t == FILTER_DAILY ? daily_expr(fc->dim)
						     : gl_accounting_dim_sql(fc->dim);
		if (!expr) {
			if (t == FILTER_FLEET)
				continue; /* owner filters do not narrow fleet idle */
			return gl_err_set(err, GL_EINVAL, "unknown dimension '%s'", fc->dim);
		}
		add_text_array(arrays, arr_off, np, (const char *const *)fc->values, fc->n_values);
		gl_strbuf_printf(sql, " AND %s = ANY($%d::text[])", expr, *np);
	}
	if (q->scope_teams && t != FILTER_FLEET) {
		add_text_array(arrays, arr_off, np, q->scope_teams, q->n_scope_teams);
		gl_strbuf_printf(sql, " AND %s = ANY($%d::text[])", t == FILTER_DAILY ? "u.d_team" : "k.team", *np);
	}
	return 0;
}

static void put_i64_array(struct gl_strbuf *b, const int64_t *v, size_t n);

/* Appends the query's jobs as the next parameter, a bigint[] literal
 * (add_text_array's layout); returns its number. */
static int add_jobs_param(struct gl_strbuf *arrays, size_t *arr_off, int *np, const struct gl_accounting_query *q)
{
	arr_off[*np] = arrays->len;
	put_i64_array(arrays, q->jobs, q->n_jobs);
	gl_strbuf_putc(arrays, '\0');
	return ++*np;
}

static void put_i64_array(struct gl_strbuf *b, const int64_t *v, size_t n)
{
	gl_strbuf_putc(b, '{');
	for (size_t i = 0; i < n; i++) {
		if (i)
			gl_strbuf_putc(b, ',');
		gl_strbuf_put_i64(b, v[i]);
	}
	gl_strbuf_putc(b, '}');
}

/* Steps split into whole built days (read from usage_daily) and the live
 * pieces around them (read from jobs): partial days at the edges, today,
 * and any day not built yet. */
struct plan {
	int64_t *la, *lb, *li; /* live pieces: start, end, step (1-based) */
	size_t nl;
	int64_t *da, *di;      /* built days: start, step */
	size_t nd;
};

static void plan_fini(struct plan *p)
{
	free(p->la);
	free(p->lb);
	free(p->li);
	free(p->da);
	free(p->di);
}

/* The built days' statement's bounds for q's steps (n_steps > 0): from the
 * first step's start to the last one's end, not past today. */
static void built_bounds(const struct gl_accounting_query *q, char los[24], char his[24])
{
	int64_t today = q->now_s - ((q->now_s % 86400) + 86400) % 86400, lo = INT64_MAX, hi = INT64_MIN;
	for (size_t i = 0; i < q->n_steps; i++) {
		if (q->steps[i].start_s < lo)
			lo = q->steps[i].start_s;
		if (q->steps[i].end_s > hi)
			hi = q->steps[i].end_s;
	}
	snprintf(los, 24, "%lld", (long long)lo);
	snprintf(his, 24, "%lld", (long long)(hi < today ? hi : today));
}

static int make_plan(PGconn *c, const struct gl_accounting_query *q, struct plan *p, struct gl_err *err)
{
	int64_t today = q->now_s - ((q->now_s % 86400) + 86400) % 86400;
	char los[24], his[24];
	PGresult *r = NULL;
	size_t cap = 64, nb = 0;
	int64_t *built = NULL;
	int rc = 0;

	memset(p, 0, sizeof *p);
	if (!q->n_steps)
		return 0; /* nothing to read (idle of a window wholly after now) */
	built_bounds(q, los, his);
	if ((rc = gl_plancache_query(c, BUILT_DAYS_Q, 2, (const char *[]){los, his}, &r, err)))
		goto out;
	nb = r ? (size_t)PQntuples(r) : 0;
	built = gl_xcalloc(nb + 1, sizeof *built);
	for (size_t i = 0; i < nb; i++)
		built[i] = atoll(PQgetvalue(r, (int)i, 0));
	cap = 2 * q->n_steps + 2 * nb + 4;
	p->la = gl_xcalloc(cap, sizeof *p->la);
	p->lb = gl_xcalloc(cap, sizeof *p->lb);
	p->li = gl_xcalloc(cap, sizeof *p->li);
	p->da = gl_xcalloc(nb + 1, sizeof *p->da);
	p->di = gl_xcalloc(nb + 1, sizeof *p->di);
	for (size_t i = 0, k = 0; i < q->n_steps; i++) {
		int64_t t = q->steps[i].start_s, b = q->steps[i].end_s, ls = t;
		while (t < b) {
			while (k < nb && built[k] < t)
				k++;
			if (k < nb && built[k] == t && t + 86400 <= b && t + 86400 <= today) {
				/* a built day wholly inside the step, already over */
				if (ls < t) {
					p->la[p->nl] = ls;
					p->lb[p->nl] = t;
					p->li[p->nl++] = (int64_t)i + 1;
				}
				p->da[p->nd] = t;
				p->di[p->nd++] = (int64_t)i + 1;
				t += 86400;
				ls = t;
				k++;
				continue;
			}
			if (k < nb && built[k] == t) {
				k++; /* built, but the step ends inside it or it is today */
				continue;
			}
			t = k < nb && built[k] < b ? built[k] : b;
		}
		if (ls < b) {
			p->la[p->nl] = ls;
			p->lb[p->nl] = b;
			p->li[p->nl++] = (int64_t)i + 1;
		}
	}
out:
	free(built);
	PQclear(r);
	return rc;
}

/* The query's steps, up to now, cut wherever a rate starts or ends inside
 * one, so that idle, priced at the rate in force at its (sub)step's start,
 * is priced at the rate in force all through it. *parent maps each sub-step
 * to its step. The caller frees *sub and *parent. */
static int idle_steps(PGconn *c, const struct gl_accounting_query *q, struct gl_window **sub, size_t **parent, size_t *nsub,
		      struct gl_err *err)
{
	char los[24], his[24];
	PGresult *r = NULL;
	size_t nb = 0, n = 0, k = 0;
	int rc;

	*sub = NULL;
	*parent = NULL;
	*nsub = 0;
	snprintf(los, sizeof los, "%lld", (long long)(q->n_steps ? q->steps[0].start_s : 0));
	snprintf(his, sizeof his, "%lld", (long long)(q->n_steps ? q->steps[q->n_steps - 1].end_s : 0));
	if ((rc = gl_db_query(c,
			      "SELECT DISTINCT extract(epoch FROM t)::bigint FROM (SELECT valid_from AS t FROM rates"
			      " UNION ALL SELECT valid_to FROM rates) x"
			      " WHERE isfinite(t) AND t > to_timestamp($1) AND t < to_timestamp($2) ORDER BY 1",
			      2, (const char *[]){los, his}, &r, err)))
		goto out;
	nb = r ? (size_t)PQntuples(r) : 0;
	*sub = gl_xcalloc(q->n_steps + nb + 1, sizeof **sub);
	*parent = gl_xcalloc(q->n_steps + nb + 1, sizeof **parent);
	for (size_t i = 0; i < q->n_steps; i++) {
		int64_t a = q->steps[i].start_s, b = q->steps[i].end_s;
		/* idle that has not happened yet is not billed: capacity counts
		 * up to now (/v1/capacity rolls open spans to the window's end,
		 * as sreport does; money does not) */
		if (b > q->now_s)
			b = q->now_s;
		if (b <= a)
			continue;
		while (k < nb && atoll(PQgetvalue(r, (int)k, 0)) <= a)
			k++;
		for (; k < nb && atoll(PQgetvalue(r, (int)k, 0)) < b; k++) {
			int64_t t = atoll(PQgetvalue(r, (int)k, 0));
			(*sub)[n] = (struct gl_window){a, t};
			(*parent)[n++] = i;
			a = t;
		}
		(*sub)[n] = (struct gl_window){a, b};
		(*parent)[n++] = i;
	}
	*nsub = n;
out:
	PQclear(r);
	return rc;
}

static int parse_num(PGresult *r, int row, int col, gl_cost_i128 *out)
{
	const char *v = PQgetisnull(r, row, col) ? "0" : PQgetvalue(r, row, col);
	if (*v == '-') {
		*out = 0; /* negative sums cannot occur; treat as 0 defensively */
		return 0;
	}
	return gl_cost_i128_parse(v, out);
}

/* ", <prefix>d0, <prefix>d1, ...": the dimension columns every stage of
 * the lines query carries through */
static void put_dim_cols(struct gl_strbuf *sql, const char *prefix, size_t n_dims)
{
	for (size_t d = 0; d < n_dims; d++)
		gl_strbuf_printf(sql, ", %sd%zu", prefix, d);
}

/* The columns a live job's pieces are summed by before the owners are
 * joined: its owner-attribute set (own's key), its model and, for a query
 * of per-job lines, the job itself (jk: NULL otherwise). */
#define LIVE_SET_COLS "cluster, okey, gpu_model, jk"

/* Up to this many live steps, put_live_pieces cuts each job at them
 * rather than summing events (gl_accounting_event_cells). */
#define GL_LIVE_CUT_MAX 4

/* ", iv AS (...), am AS (...)": each job of src (k0, or kp's sums of
 * them per step and interval; jw: a condition on it, as
 * "j.job_pk = ANY(...)", or "true") as an interval [p0, p1) of g
 * micro-GPUs billed (and h held), and one more per rate piece it overlaps
 * (priced), clipped to the live window (pieces: to each step it overlaps,
 * whose i it carries); am sums them per step i, owner-attribute set and
 * rate in whole micro-GPU-seconds (m billed, held). Summed before the
 * owners are joined, the stages after it see a row per set, not per job:
 * 10,000 open jobs of 500 sets cost ~36 µs a job through the owner join,
 * the rate join and the grouping (docs/bench.md, "Observed time").
 * days: the rollup's batch of days (see below). */
static void put_live_pieces(struct gl_strbuf *sql, int pieces, int days, int by_job, const char *jw, const char *src,
			    int parts)
{
	/* the rates of the models once: inlined, each job piece ran
	 * gl_rates_of's lookup of its model again */
	gl_strbuf_printf(sql, ", mr AS MATERIALIZED ("
			      " SELECT m.gpu_model, r.valid_from, r.valid_to, r.micros_per_gpu_hour"
			      " FROM (SELECT DISTINCT gpu_model FROM %s) m CROSS JOIN LATERAL gl_rates_of(m.gpu_model) r"
			      "), iv AS (SELECT ", src);
	/* in pieces, win is each step the job overlaps (lo, hi: its bounds).
	 * days: those from the one holding its start to the one holding its
	 * stop (width_bucket over the starts, which are in steps' n order),
	 * joined by n. On the bounds alone the join tested every job against
	 * every day of the batch (a nested loop rescanning k0 once a day, for
	 * the allocated and again for the priced pieces): ~5 % of a rollup's
	 * CPU at 10 M jobs a year's density (docs/scale.md). A request's few
	 * live steps keep the join on the bounds, which costs less than the
	 * lookup for one or two steps. parts (OBS_ALL): kp's row of a part's
	 * step, whose steps overlap other parts' */
	const char *w = parts	 ? " JOIN (SELECT i, a AS lo, b AS hi FROM esteps) win ON win.i = j.i AND win.lo < j.stop_at"
				   " AND win.hi > j.start_at"
			: days	 ? " CROSS JOIN win w0 CROSS JOIN LATERAL generate_series(greatest(width_bucket(j.start_at,"
				   " w0.starts), 1), width_bucket(j.stop_at, w0.starts)) g(n)"
				   " JOIN (SELECT n, i, a AS lo, b AS hi FROM steps) win ON win.n = g.n AND win.lo < j.stop_at"
				   " AND win.hi > j.start_at"
			: pieces ? " JOIN (SELECT i, a AS lo, b AS hi FROM steps) win ON win.lo < j.stop_at"
				   " AND win.hi > j.start_at"
				 : " CROSS JOIN win";
	const char *set = by_job ? "j.cluster, j.okey, j.gpu_model, j.job_pk AS jk"
				 : "j.cluster, j.okey, j.gpu_model, NULL::bigint AS jk";
	gl_strbuf_printf(sql, "%s%s, NULL::bigint AS rate, j.gpu_micro AS g, j.held_micro AS h,"
			      " greatest(j.start_at, win.lo) AS p0, least(j.stop_at, win.hi) AS p1 FROM %s j%s WHERE %s"
			      " UNION ALL SELECT %s%s, r.micros_per_gpu_hour, j.gpu_micro, 0::bigint,"
			      " greatest(j.start_at, r.valid_from, win.lo), least(j.stop_at, r.valid_to, win.hi)"
			      " FROM %s j%s JOIN mr r ON r.gpu_model IS NOT DISTINCT FROM j.gpu_model"
			      " AND r.valid_from < j.stop_at AND r.valid_to > j.start_at WHERE %s)",
			 pieces ? "win.i, " : "", set, src, w, jw, pieces ? "win.i, " : "", set, src, w, jw);
	if (!pieces) {
		/* many steps: their allocation per set and step from the events,
		 * not per job and step */
		gl_accounting_event_cells(sql, LIVE_SET_COLS ", rate", "iv", "steps", 0);
		gl_strbuf_puts(sql, ", am AS (SELECT s.i, c.cluster, c.okey, c.gpu_model, c.jk, c.rate,"
				    " sum(extract(epoch FROM s.b - s.a)::bigint * c.gact - c.si) AS m, 0::bigint AS held"
				    " FROM cells c JOIN steps s ON s.n = c.n GROUP BY 1, 2, 3, 4, 5, 6)");
		return;
	}
	/* each interval lies inside its step and is summed as it is; a rate
	 * piece of a job in the step may lie outside it (p1 < p0): nothing,
	 * never a negative part */
	/* per job (by_job), every row is a set of its own: summing them
	 * first would only add a hash aggregate of every job piece (the
	 * rollup's usage_daily_job) */
	gl_strbuf_printf(sql, ", am AS (SELECT iv.i, " LIVE_SET_COLS ", rate,"
			      " %s(g * greatest(extract(epoch FROM p1 - p0)::bigint, 0)) AS m,"
			      " %s(h * greatest(extract(epoch FROM p1 - p0)::bigint, 0)) AS held FROM iv%s)",
			 by_job ? "" : "sum", by_job ? "" : "sum", by_job ? "" : " GROUP BY iv.i, " LIVE_SET_COLS ", rate");
}

/* ", usage AS (...)": the jobs' exporter usage over the steps (jobs_param:
 * restricted to those jobs, 0 all), a row per job and step. */
static void put_usage_cte(struct gl_strbuf *sql, enum obs_mode m, int jobs_param)
{
	/* the steps' bounds as constants of the plan (gl_steps_starts is
	 * immutable: folded from $1 and $2), not win's: read from the CTE,
	 * the planner guessed 400 exporter rows for a day of 720,000 and
	 * sorted them on disk to group them (sql/105). OBS_ALL: the firm
	 * part's steps, whose i is its own (part 0). */
	int all = m == OBS_ALL;
	gl_strbuf_printf(sql,
		       ", usage AS ("
		       " SELECT s.i, u.job_pk, u.busy_gpu_s, u.idle_gpu_s, u.observed_gpu_s, s.a, s.b"
		       " FROM gl_job_usage_steps(gl_steps_starts(%s::bigint[]), gl_steps_ends(%s::bigint[], %s::bigint[])) u"
		       " JOIN %s s ON s.n = u.n",
		       all ? "$5" : "$1", all ? "$5" : "$1", all ? "$6" : "$2", all ? "fsteps" : "steps");
	/* a restriction to some jobs goes inside the inlined function, so its
	 * scan reads those jobs' buckets (by gpu_usage_jobs_job_idx), not the
	 * fleet's */
	if (jobs_param)
		gl_strbuf_printf(sql, " WHERE u.job_pk = ANY($%d::bigint[])", jobs_param);
	gl_strbuf_puts(sql, ")");
}

/* ", usage AS (...), ub AS (...)": the jobs' exporter usage over the steps
 * (jobs_param: restricted to those jobs, 0 all), kept within each job's
 * allocated time and summed per step and owner-attribute set. OBS_ALL's
 * usage is put_jobs_cte's (its k0 reads it). */
static void put_live_usage(struct gl_strbuf *sql, enum obs_mode m, int by_job, int jobs_param, const char *jw,
			   const char *src)
{
	if (m != OBS_ALL)
		put_usage_cte(sql, m, jobs_param);
	gl_strbuf_printf(sql,
			 ", ub AS (SELECT u.i, j.cluster, j.okey, j.gpu_model, %s AS jk,"
			 " %s(u.busy_gpu_s * sc.k) AS busy, %s(u.idle_gpu_s * sc.k) AS idle, %s(u.observed_gpu_s * sc.k) AS obs"
			 " FROM usage u JOIN %s j ON j.job_pk = u.job_pk AND u.a < j.stop_at AND u.b > j.start_at",
			 by_job ? "j.job_pk" : "NULL::bigint", by_job ? "" : "sum", by_job ? "" : "sum", by_job ? "" : "sum", src);
	/* exporter usage is what a source saw: it stays with the firm time
	 * (OBS_ALL: k0's start_at and stop_at are the firm part's) */
	if (m != OBS_FIRM && m != OBS_ALL)
		gl_strbuf_puts(sql, " AND false");
	gl_strbuf_printf(sql,
			 " CROSS JOIN LATERAL (SELECT " GL_ACCOUNTING_USAGE_SCALE_SQL(
				 "u", "j.gpu_micro * greatest(extract(epoch FROM least(j.stop_at, u.b) - greatest(j.start_at, u.a)), 0)"
				      " / 1000000.0") " AS k) sc"
			 " WHERE %s%s)",
			 jw, by_job ? "" : " GROUP BY 1, 2, 3, 4, 5");
}

/* Appends the CTEs of the live query up to byrate (jobs over the steps of
 * $1, $2, $4 at now $3), grouped by dims; filters take parameters from $5.
 * pieces (the rollup, steps of whole days): each job is cut into one
 * interval per step it overlaps and summed per step as one step's are,
 * held included, instead of the events of gl_accounting_event_cells: a
 * job of the rollup overlaps about two days, so many days are built from
 * one scan of the jobs and one owner resolution. */
static int lines_by_job(const char *const *dims, size_t n_dims)
{
	int by_job = 0;
	for (size_t d = 0; d < n_dims; d++)
		by_job |= !strcmp(dims[d], "job");
	return by_job;
}

/* Whether a live query cuts its jobs at the steps (cut) and, for a
 * request, sums them per step and interval first (the CTE kp): see
 * append_live_split. cold (live_cold): not summed first. */
static int live_sums_first(const struct gl_accounting_query *q, const char *const *dims, size_t n_dims, size_t n_live,
			   int pieces, int cold, int *cut)
{
	*cut = pieces || n_live <= GL_LIVE_CUT_MAX;
	return q && !q->jobs && !lines_by_job(dims, n_dims) && *cut && !cold;
}

/* A live piece longer than this is a cold read: days nobody built. */
#define GL_LIVE_COLD_S 86400

/* Whether m's read of pl's live pieces is cold: firm time over a piece
 * longer than a day. Its jobs' intervals are their own (a finished job
 * shares its [start, end) with no other; only the few that span a whole
 * piece share one), so summing them per interval first (kp) grouped every
 * job into a set of its own: at 1 M jobs over a year, 1 M groups sorted on
 * 17 keys, 8.2 s of the statement's 24.3 s under EXPLAIN ANALYZE
 * (docs/scale.md, "A cold window").
 * The unobserved time ([last seen, now)) is shared by the open jobs of a
 * set over any piece, and stays summed first. */
static int live_cold(const struct plan *pl, enum obs_mode m)
{
	if (m != OBS_FIRM)
		return 0;
	for (size_t i = 0; i < pl->nl; i++)
		if (pl->lb[i] - pl->la[i] > GL_LIVE_COLD_S)
			return 1;
	return 0;
}

/* Whether a cold read (live_cold) is one live piece of a request, not per
 * job: read whole (put_whole_sets), its jobs summed per owner-attribute
 * set in one scan, with no per-job key, CTE or sort (docs/scale.md, "A
 * cold window"). */
static int live_whole(const struct gl_accounting_query *q, int by_job, size_t n_live, int pieces, int cold)
{
	return q && !q->jobs && !by_job && n_live == 1 && !pieces && cold;
}

static int append_live_split(struct gl_strbuf *sql, const char *const *dims, size_t n_dims, size_t n_live, int pieces,
			     int cold, const struct gl_accounting_query *q, enum obs_mode m, int *np,
			     struct gl_strbuf *arrays, size_t *arr_off, struct gl_err *err)
{
	char jw[48] = "true";
	int rc, jobs_param = 0, by_job = lines_by_job(dims, n_dims), cut, agg, whole;
	/* a request's lines of a few steps sum their jobs per step and
	 * interval before anything else (kp): the open jobs' unobserved time
	 * is one interval a step ([last seen, now)), their firm time today
	 * too ([midnight, last seen)), so 10,000 open jobs of 500 sets are
	 * ~500 rows through the pieces, the rates and the owners. The sums
	 * are of the same integers. Not for the rollup (q NULL: its jobs of
	 * whole days rarely share an interval) nor lines per job. */
	/* a few live steps (a window's first day and today around the built
	 * days): each job cut at them, at most n_live rows a job, costs less
	 * than its events' sort and windows (bench_observed: firm lines of
	 * 10,000 open jobs over two live pieces) */
	agg = live_sums_first(q, dims, n_dims, n_live, pieces, cold, &cut);
	if (m == OBS_ALL && !agg)
		return gl_err_set(err, GL_EINVAL, "chargeback: the live parts in one query need their sums per set");
	whole = live_whole(q, by_job, n_live, pieces, cold);
	put_jobs_cte(sql, m, pieces, agg, whole);
	if (q && q->jobs) {
		jobs_param = add_jobs_param(arrays, arr_off, np, q);
		snprintf(jw, sizeof jw, "j.job_pk = ANY($%d::bigint[])", jobs_param);
	}
	if (whole)
		put_whole_pieces(sql);
	else
		put_live_pieces(sql, cut, pieces, by_job, jw, agg ? "kp" : "k0", m == OBS_ALL);
	/* the unobserved time has no usage (put_live_usage): k0 read by kp
	 * alone is not materialized, a tuplestore of every job */
	put_live_usage(sql, m, by_job, jobs_param, jw, agg && m != OBS_FIRM && m != OBS_ALL ? "kp" : "k0");
	/* every sum is a part of its own UNION ALL branch; the owners and
	 * the dimensions are joined to the sums per set (k), and the lines
	 * are one GROUP BY. Lines are also split by GPU model so unpriced
	 * models are known exactly; C merges them. Every row of pu has
	 * exactly one own row (own is per distinct set of k0): LEFT JOIN says
	 * so to the planner. */
	gl_strbuf_puts(sql, ", pu AS (SELECT i, " LIVE_SET_COLS ", rate,"
			    " CASE WHEN rate IS NULL THEN m ELSE 0 END AS alloc, CASE WHEN rate IS NULL THEN 0 ELSE m END AS priced,"
			    " held, 0::float8 AS busy, 0::float8 AS idle, 0::float8 AS obs FROM am WHERE m <> 0 OR held <> 0"
			    " UNION ALL SELECT i, " LIVE_SET_COLS ", NULL::bigint, 0, 0, 0, busy, idle, obs FROM ub"
			    "), parts AS (SELECT k.i");
	for (size_t d = 0; d < n_dims; d++)
		gl_strbuf_printf(sql, ", %s AS d%zu", live_dim_sql(dims[d]), d);
	gl_strbuf_puts(sql, ", k.gpu_model, k.rate, k.alloc, k.priced, k.held, k.busy, k.idle, k.obs FROM ("
			    " SELECT p.*, p.jk AS job_pk, o.team, o.project, o.cost_center, o.workload_type, o.account,"
			    "  o.user_name, o.partition, o.qos, o.namespace FROM pu p"
			    /* own has one row a key already (OKEY_SQL); DISTINCT ON
			     * says so to the planner, which takes a CTE's column
			     * for 200 distinct values: it then sorted every piece
			     * to merge them with own (an 8-day rollup batch at
			     * 10 M jobs a year, 878,222 pieces: backend CPU 6.2-6.3
			     * s, 5.6-5.7 s with own hashed, docs/bench.md) */
			    " LEFT JOIN (SELECT DISTINCT ON (okey) * FROM own) o ON o.okey = p.okey"
			    /* said again though okey holds it: on okey alone the
			     * planner, with no statistics of own, took every
			     * piece to join 200 sets and planned the sums as sorts */
			    "  AND o.cluster = p.cluster) k WHERE true");
	if (q && (rc = add_filters(sql, q, np, arrays, arr_off, FILTER_JOBS, err)))
		return rc;
	/* sums of bigint micro-GPU-seconds per rate first: the price is
	 * constant per rate row, so cost = rate x sum, in numeric once */
	gl_strbuf_puts(sql, "), byrate AS (SELECT i");
	put_dim_cols(sql, "", n_dims);
	gl_strbuf_puts(sql, ", gpu_model, rate, sum(alloc) AS alloc, sum(priced) AS priced, sum(held) AS held, sum(busy) AS busy,"
			    " sum(idle) AS idle, sum(obs) AS obs FROM parts GROUP BY i");
	put_dim_cols(sql, "", n_dims);
	gl_strbuf_puts(sql, ", gpu_model, rate)");
	return 0;
}

static int append_live(struct gl_strbuf *sql, const char *const *dims, size_t n_dims, size_t n_live, int cold,
		       const struct gl_accounting_query *q, enum obs_mode m, int *np, struct gl_strbuf *arrays, size_t *arr_off,
		       struct gl_err *err)
{
	return append_live_split(sql, dims, n_dims, n_live, 0, cold, q, m, np, arrays, arr_off, err);
}

/* The lines from byrate: per step and key (and GPU model, for unpriced
 * models), micro-GPU-seconds, priced part, cost numerator, exporter usage. */
static void append_lines_select(struct gl_strbuf *sql, size_t n_dims)
{
	gl_strbuf_puts(sql, " SELECT i");
	put_dim_cols(sql, "", n_dims);
	gl_strbuf_puts(sql,
		       ", sum(alloc)::text AS alloc_us, sum(priced)::text AS priced_us,"
		       " coalesce(sum(priced::numeric * rate), 0)::text AS cost_num,"
		       " sum(busy) AS busy_s, sum(idle) AS idle_s, sum(obs) AS observed_s,"
		       " CASE WHEN sum(priced) < sum(alloc) THEN coalesce(gpu_model, 'unknown') END AS unpriced"
		       " FROM byrate GROUP BY i");
	put_dim_cols(sql, "", n_dims);
	gl_strbuf_puts(sql, ", gpu_model ORDER BY i");
	put_dim_cols(sql, "", n_dims);
}

/* shareIdle=owner: whether team's dedicated idle goes on its line under
 * the query's owner filters. A team the filter (or the token's scope)
 * leaves out gets no line (it used to be added, with all its idle, to a
 * response filtered to another team); under a filter on another owner
 * dimension (user, account...) the line shown is only part of the team,
 * so the team's idle stays in __idle__. */
static int owner_idle_shown(const struct gl_accounting_query *q, const char *team)
{
	for (size_t i = 0; q->filter && i < q->filter->n; i++) {
		const struct gl_filter_clause *fc = &q->filter->c[i];
		size_t k = 0;
		if (fleet_expr(fc->dim))
			continue;
		if (strcmp(fc->dim, "team"))
			return 0;
		while (k < fc->n_values && strcmp(fc->values[k], team))
			k++;
		if (k == fc->n_values)
			return 0;
	}
	if (q->scope_teams) {
		size_t k = 0;
		while (k < q->n_scope_teams && strcmp(q->scope_teams[k], team))
			k++;
		if (k == q->n_scope_teams)
			return 0;
	}
	return 1;
}

/* Adds model to the distinct unpriced models of the response. */
static void add_unpriced(struct gl_accounting_meta *meta, const char *m)
{
	for (size_t i = 0; i < meta->n_unpriced; i++)
		if (!strcmp(meta->unpriced_models[i], m))
			return;
	meta->unpriced_models = gl_xrealloc(meta->unpriced_models,
					    (meta->n_unpriced + 1) * sizeof *meta->unpriced_models);
	meta->unpriced_models[meta->n_unpriced++] = gl_xstrdup(m);
}

void gl_accounting_meta_fini(struct gl_accounting_meta *meta)
{
	for (size_t i = 0; i < meta->n_unpriced; i++)
		free(meta->unpriced_models[i]);
	free(meta->unpriced_models);
	memset(meta, 0, sizeof *meta);
}

/* The columns of a lines query (append_lines_select), by name. */
struct line_cols {
	int i, d[GL_CHARGEBACK_MAX_DIMS + 2], alloc_us, priced_us, cost_num, busy_s, idle_s, observed_s, unpriced;
};

static int line_cols(const PGresult *r, size_t n_dims, struct line_cols *k, struct gl_err *err)
{
	char name[8];
	k->i = PQfnumber(r, "i");
	for (size_t d = 0; d < n_dims; d++) {
		snprintf(name, sizeof name, "d%zu", d);
		if ((k->d[d] = PQfnumber(r, name)) < 0)
			return gl_err_set(err, GL_EINTERNAL, "chargeback: no column %s", name);
	}
	k->alloc_us = PQfnumber(r, "alloc_us");
	k->priced_us = PQfnumber(r, "priced_us");
	k->cost_num = PQfnumber(r, "cost_num");
	k->busy_s = PQfnumber(r, "busy_s");
	k->idle_s = PQfnumber(r, "idle_s");
	k->observed_s = PQfnumber(r, "observed_s");
	k->unpriced = PQfnumber(r, "unpriced");
	if (k->i < 0 || k->alloc_us < 0 || k->priced_us < 0 || k->cost_num < 0 || k->busy_s < 0 || k->idle_s < 0 ||
	    k->observed_s < 0 || k->unpriced < 0)
		return gl_err_set(err, GL_EINTERNAL, "chargeback: a lines column is missing");
	return 0;
}

/* The step's line of keys, made when it has none: rows of one query come
 * ordered by key; the daily and the live query may both have a key, so
 * this looks back through the step's lines. */
static struct gl_chargeback_line *line_of(struct gl_chargeback *cb, size_t step, const char *const *keys, size_t n_dims)
{
	struct gl_chargeback_line *l = gl_chargeback_find_line(cb, step, keys);
	(void)n_dims; /* cb's own */
	return l ? l : gl_chargeback_add_line(cb, step, keys);
}

/* Where absorb puts a lines query's sums: the firm figures, or the
 * unobserved ones (also the firm ones when the caller asked to include
 * them), or the implausible part of the unobserved. */
enum absorb_to { TO_FIRM, TO_UNSEEN, TO_UNSEEN_INCLUDED, TO_IMPLAUSIBLE };

static void absorb_sums(struct gl_chargeback_line *l, enum absorb_to to, gl_cost_i128 am, gl_cost_i128 pm, gl_cost_i128 cn)
{
	if (to == TO_IMPLAUSIBLE) {
		l->implausible_us += am;
		return;
	}
	if (to != TO_FIRM) {
		l->unobs_us += am;
		l->unobs_num += cn;
	}
	if (to != TO_UNSEEN) {
		l->alloc_us += am;
		l->priced_us += pm;
		l->cost_num += cn;
	}
}

/* The idle pool dimensions of cb (gl_chargeback_pool): none unless idle is shared
 * proportionally within clusters, where the lines query groups by them
 * too, after the caller's dimensions. */
static size_t pool_dims(const struct gl_chargeback *cb, const char **dims)
{
	if (cb->share != GL_CHARGEBACK_SHARE_PROPORTIONAL)
		return 0;
	dims[0] = "cluster";
	dims[1] = "gpu_model";
	return cb->share_by_model ? 2 : 1;
}

/* The name of the idle pool of a row: its pool columns, cols[0..n), joined
 * by the unit separator. */
static void pool_name(PGresult *r, int row, const int *cols, size_t n, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", PQgetvalue(r, row, cols[0]), n > 1 ? "\x1f" : "", n > 1 ? PQgetvalue(r, row, cols[1]) : "");
}

/* Folds the rows of a lines query into the lines of cb: n_dims key
 * columns, then the pool columns (pool_dims); to[p] says where the sums of
 * part p go (a row's step i is its step + p x LIVE_PART_STRIDE; n_to
 * parts, 1 but for OBS_ALL). */
static int absorb(PGresult *r, size_t n_dims, const enum absorb_to *to_of, int n_to, struct gl_chargeback *cb,
		  struct gl_accounting_meta *meta, struct gl_err *err)
{
	const char *pd[2];
	size_t np = pool_dims(cb, pd);
	struct line_cols k = {0};
	int rc = line_cols(r, n_dims + np, &k, err);
	for (int row = 0; !rc && row < PQntuples(r); row++) {
		const char *keys[GL_CHARGEBACK_MAX_DIMS] = {0};
		long long ei = atoll(PQgetvalue(r, row, k.i));
		int part = ei > 0 ? (int)((ei - 1) / LIVE_PART_STRIDE) : 0;
		int step = (int)(ei - (long long)part * LIVE_PART_STRIDE) - 1;
		enum absorb_to to;
		struct gl_chargeback_line *l;
		gl_cost_i128 am, pm, cn;
		char pool[512];
		if (part >= n_to)
			return gl_err_set(err, GL_EDB, "chargeback: a line of part %d of %d", part, n_to);
		to = to_of[part];
		if (step < 0 || (size_t)step >= cb->n_steps)
			continue;
		for (size_t d = 0; d < n_dims; d++)
			keys[d] = PQgetvalue(r, row, k.d[d]);
		l = line_of(cb, (size_t)step, keys, n_dims);
		if (parse_num(r, row, k.alloc_us, &am) || parse_num(r, row, k.priced_us, &pm) ||
		    parse_num(r, row, k.cost_num, &cn))
			return gl_err_set(err, GL_EDB, "chargeback: unexpected numeric value");
		absorb_sums(l, to, am, pm, cn);
		/* the idle pools share by what is billed */
		if (np && (to == TO_FIRM || to == TO_UNSEEN_INCLUDED)) {
			pool_name(r, row, k.d + n_dims, np, pool, sizeof pool);
			gl_chargeback_line_in_pool(l, gl_chargeback_pool_of(cb, (size_t)step, pool), am);
		}
		if (to != TO_FIRM)
			continue;
		l->busy_s += atof(PQgetvalue(r, row, k.busy_s));
		l->idle_s += atof(PQgetvalue(r, row, k.idle_s));
		l->observed_s += atof(PQgetvalue(r, row, k.observed_s));
		if (!PQgetisnull(r, row, k.unpriced))
			add_unpriced(meta, PQgetvalue(r, row, k.unpriced));
	}
	return rc;
}

/* The text[] parameters add_filters made, after the np0 fixed ones. */
static void filter_args(const char **params, int np0, int np, const struct gl_strbuf *arrays, const size_t *arr_off)
{
	for (int i = np0; i < np; i++)
		params[i] = arrays->p + arr_off[i];
}

/* Runs a lines query and folds its rows into cb. */
static int run_lines_parts(PGconn *c, const char *sql, int np, const char *const *params, size_t n_dims,
			   const enum absorb_to *to, int n_to, int generic, struct gl_chargeback *cb,
			   struct gl_accounting_meta *meta, struct gl_err *err)
{
	int (*query)(PGconn *, const char *, int, const char *const *, PGresult **, struct gl_err *) =
		generic ? gl_plancache_query_generic : gl_db_query;
	struct gl_strbuf lim = GL_STRBUF_INIT;
	PGresult *r = NULL;
	int rc;
	/* with a bound, the server stops one row past it (a line a part):
	 * a refused answer never had its rows in our memory */
	if (cb->max_lines)
		gl_strbuf_printf(&lim, "SELECT * FROM (%s) gl_lines LIMIT %zu", sql, (size_t)n_to * cb->max_lines + 1);
	rc = query(c, cb->max_lines ? lim.p : sql, np, params, &r, err);
	if (!rc && cb->max_lines && (size_t)PQntuples(r) > (size_t)n_to * cb->max_lines)
		rc = gl_err_set(err, GL_ERANGE, "the answer would hold more than %zu lines", cb->max_lines);
	if (!rc)
		rc = absorb(r, n_dims, to, n_to, cb, meta, err);
	if (!rc && cb->max_lines && gl_chargeback_n_lines(cb) > cb->max_lines)
		rc = gl_err_set(err, GL_ERANGE, "the answer would hold more than %zu lines", cb->max_lines);
	PQclear(r);
	gl_strbuf_fini(&lim);
	return rc;
}

static int run_lines(PGconn *c, const char *sql, int np, const char *const *params, size_t n_dims,
		     enum absorb_to to, struct gl_chargeback *cb, struct gl_accounting_meta *meta, struct gl_err *err)
{
	return run_lines_parts(c, sql, np, params, n_dims, &to, 1, 0, cb, meta, err);
}

/* The built days ($1 starts, $2 steps) of a query of some jobs as rows of
 * usage_daily_job with their step i, read from usage_monthly_job for a
 * month whose days in a step are exactly the days its rows were built from
 * (sql/089), from usage_daily_job for the others. */
#define JOB_DAYS_SQL                                                                                         \
	"(WITH d0 AS (SELECT d.i, (to_timestamp(d.a) AT TIME ZONE 'UTC')::date AS day"                         \
	"  FROM unnest($1::bigint[], $2::integer[]) AS d(a, i)),"                                              \
	" g AS (SELECT i, date_trunc('month', day)::date AS month, array_agg(day ORDER BY day) AS days"       \
	"  FROM d0 GROUP BY 1, 2),"                                                                          \
	" gm AS (SELECT g.i, g.month FROM g JOIN usage_monthly_job_built mb ON mb.month = g.month"            \
	"  AND mb.days = g.days)"                                                                            \
	" SELECT gm.i, m.job_pk, m.d_team, m.d_project, m.d_cost_center, m.d_cluster, m.d_namespace,"         \
	"  m.d_gpu_model, m.gpu_model, m.rate, m.alloc, m.priced, m.busy, m.idle, m.obs"                    \
	" FROM gm JOIN usage_monthly_job m ON m.month = gm.month"                                            \
	" UNION ALL"                                                                                         \
	" SELECT d0.i, j.job_pk, j.d_team, j.d_project, j.d_cost_center, j.d_cluster, j.d_namespace,"        \
	"  j.d_gpu_model, j.gpu_model, j.rate, j.alloc, j.priced, j.busy, j.idle, j.obs"                    \
	" FROM d0 JOIN usage_daily_job j ON j.day = d0.day"                                                  \
	" WHERE NOT EXISTS (SELECT 1 FROM gm WHERE gm.i = d0.i AND gm.month = date_trunc('month', d0.day)))"

/* The same for every job: the days' rows (usage_monthly_job keeps the
 * serving jobs only: summing every job's month again with each day built
 * cost 3.6x the day's usage_daily, docs/bench.md). */
#define ALL_JOB_DAYS_SQL                                                                                     \
	"(SELECT d.i, j.job_pk, j.d_team, j.d_project, j.d_cost_center, j.d_cluster, j.d_namespace,"         \
	"  j.d_gpu_model, j.gpu_model, j.rate, j.alloc, j.priced, j.busy, j.idle, j.obs"                    \
	" FROM unnest($1::bigint[], $2::integer[]) AS d(a, i)"                                               \
	" JOIN usage_daily_job j ON j.day = (to_timestamp(d.a) AT TIME ZONE 'UTC')::date)"

/* The built days' rows of byrate (its text in by, parameters params: $1
 * bigint[], $2 integer[], the filters' text[]) on a session routed to the
 * shards: usage_daily (_owner) is there a UNION ALL of the shards' tables,
 * which PostgreSQL sums on the central, so a year by team pulled every
 * shard's 2,190 rows (365 days) to sum them into 6 lines (16 ms of a 37 ms
 * request; one database: 20 ms in all). Each shard sums its rows per step,
 * key and rate instead and the lines sum the shards' sums: integer and
 * numeric sums are the same whatever their grouping. Up to
 * GL_DAILY_SHARD_SUM_DAYS days each shard sends its rows as they are (180
 * a shard for a month) and the central sums them, as it did from the
 * foreign tables. Either way the text is a statement each shard prepared once and runs
 * with the arguments, sent to every shard at once over the session's
 * dblink connections (gl_fleet_prepared_rows, sql/140): the foreign
 * tables' cursor cost a DECLARE, a FETCH and a CLOSE round trip to each
 * shard, one shard after the other, and the text written with its
 * arguments cost each shard its planning (4.3 ms a request at 300,000
 * jobs). Elsewhere byrate is the text. */
#define GL_DAILY_SHARD_SUM_DAYS 31
static void daily_byrate(PGconn *c, int shards, size_t n_days, struct gl_strbuf *sql, const struct gl_strbuf *by,
			 size_t n_dims, int *np, const char **params, struct gl_strbuf *fleet)
{
	struct gl_strbuf cols = GL_STRBUF_INIT, inner = GL_STRBUF_INIT, arr = GL_STRBUF_INIT,
			 types = GL_STRBUF_INIT;
	const char *arr_text;
	int sum = n_days > GL_DAILY_SHARD_SUM_DAYS;
	if (!shards || !gl_plancache_marked(c)) {
		gl_strbuf_printf(sql, "WITH byrate AS (%s)", by->p);
		return;
	}
	gl_strbuf_puts(&cols, "i integer");
	gl_strbuf_puts(&inner, "SELECT i::integer");
	for (size_t d = 0; d < n_dims; d++) {
		gl_strbuf_printf(&cols, ", d%zu text", d);
		gl_strbuf_printf(&inner, ", d%zu::text", d);
	}
	gl_strbuf_puts(&cols, ", gpu_model text, rate bigint, alloc numeric, priced numeric, busy double precision,"
			      " idle double precision, obs double precision");
	if (sum) {
		gl_strbuf_printf(&inner, ", gpu_model::text, rate::bigint, sum(alloc)::numeric, sum(priced)::numeric,"
					 " sum(busy)::double precision, sum(idle)::double precision,"
					 " sum(obs)::double precision FROM (%s) x GROUP BY i",
				 by->p);
		put_dim_cols(&inner, "", n_dims);
		gl_strbuf_puts(&inner, ", gpu_model, rate");
	} else {
		gl_strbuf_printf(&inner, ", gpu_model::text, rate::bigint, alloc::numeric, priced::numeric,"
					 " busy::double precision, idle::double precision, obs::double precision"
					 " FROM (%s) x",
				 by->p);
	}
	gl_strbuf_puts(&types, "bigint[], integer[]");
	for (int i = 0; i < *np; i++) {
		gl_pgarray_add_text(&arr, params[i]);
		if (i >= 2)
			gl_strbuf_puts(&types, ", text[]");
	}
	arr_text = gl_pgarray_end(&arr);
	gl_strbuf_printf(sql, "WITH byrate AS (SELECT * FROM gl_fleet_prepared_rows($1, $2, $3::text[], $4) AS t(%s))",
			 cols.p);
	/* fleet keeps the four parameters' texts for the query's run */
	gl_strbuf_append(fleet, inner.p, inner.len + 1);
	gl_strbuf_append(fleet, types.p, types.len + 1);
	gl_strbuf_append(fleet, arr_text, strlen(arr_text) + 1);
	gl_strbuf_append(fleet, cols.p, cols.len + 1);
	params[0] = fleet->p;
	for (int i = 1; i < 4; i++)
		params[i] = params[i - 1] + strlen(params[i - 1]) + 1;
	*np = 4;
	gl_strbuf_fini(&cols);
	gl_strbuf_fini(&inner);
	gl_strbuf_fini(&arr);
	gl_strbuf_fini(&types);
}

/* 1a. the built days' lines from usage_daily (or usage_daily_owner when
 * it holds every dimension asked for) */
static int lines_daily(PGconn *c, const struct gl_accounting_query *q, const struct plan *pl, struct gl_chargeback *cb,
		       struct gl_accounting_meta *meta, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT, by = GL_STRBUF_INIT, arrays = GL_STRBUF_INIT, da = GL_STRBUF_INIT,
			 di = GL_STRBUF_INIT, fleet = GL_STRBUF_INIT;
	const char *params[40];
	size_t arr_off[40];
	int np = 2, rc;

	const char *pd[2];
	size_t npd = pool_dims(cb, pd);

	gl_strbuf_printf(&by, "SELECT %s", per_job(q) ? "u.i" : "d.i");
	for (size_t d = 0; d < q->n_dims + npd; d++)
	{
		const char *dim = d < q->n_dims ? q->dims[d] : pd[d - q->n_dims];
		gl_strbuf_printf(&by, ", %s AS d%zu", per_job(q) ? job_daily_expr(dim) : daily_expr(dim), d);
	}
	gl_strbuf_puts(&by, ", u.gpu_model, u.rate, u.alloc, u.priced, u.busy, u.idle, u.obs");
	if (per_job(q))
		gl_strbuf_puts(&by, q->jobs ? " FROM " JOB_DAYS_SQL " u WHERE true" : " FROM " ALL_JOB_DAYS_SQL " u WHERE true");
	else
		gl_strbuf_printf(&by,
				 " FROM unnest($1::bigint[], $2::integer[]) AS d(a, i)"
				 " JOIN %s u ON u.day = (to_timestamp(d.a) AT TIME ZONE 'UTC')::date WHERE"
				 GL_ACCOUNTING_DAYS_WITHIN_SQL("$1"),
				 owner_rollup_serves(q) ? "usage_daily_owner" : "usage_daily");
	if ((rc = add_filters(&by, q, &np, &arrays, arr_off, FILTER_DAILY, err)))
		goto out;
	/* a hashed semi-join: "= ANY" of 1,000 jobs compared every row with
	 * each of them */
	if (q->jobs)
		gl_strbuf_printf(&by, " AND u.job_pk IN (SELECT unnest($%d::bigint[]))",
				 add_jobs_param(&arrays, arr_off, &np, q));
	put_i64_array(&da, pl->da, pl->nd);
	put_i64_array(&di, pl->di, pl->nd);
	params[0] = da.p;
	params[1] = di.p;
	filter_args(params, 2, np, &arrays, arr_off);
	/* per-job rows: left as they are (a job's lines are not summed over) */
	daily_byrate(c, !per_job(q), pl->nd, &sql, &by, q->n_dims + npd, &np, params, &fleet);
	append_lines_select(&sql, q->n_dims + npd);
	rc = run_lines(c, sql.p, np, params, q->n_dims, TO_FIRM, cb, meta, err);
out:
	gl_strbuf_fini(&sql);
	gl_strbuf_fini(&by);
	gl_strbuf_fini(&arrays);
	gl_strbuf_fini(&da);
	gl_strbuf_fini(&di);
	gl_strbuf_fini(&fleet);
	return rc;
}

/* The planner settings a statement was run under set back, after it ran
 * with rc: its error, if any, is kept over the reset's, since the reset's
 * would hide why the statement failed. */
static int planner_reset(PGconn *c, const char *reset, int rc, struct gl_err *err)
{
	struct gl_err e2;
	int rc2 = gl_db_exec(c, reset, &e2);
	if (!rc && rc2)
		rc = gl_err_set(err, -rc2, "%s", e2.msg);
	return rc;
}

/* Whether the parts in one statement (lines_parts) run with a generic
 * plan, prepared once a session: its custom plan cost more to make than
 * the generic one costs to run (bench_observed, 10,000 open jobs: 35.5-38
 * against 29-30 ms of backend CPU a run; 300,000 ended jobs over two live
 * pieces: 226-238 ms either way), but not where exporter usage lies in
 * the firm pieces: the usage's scan needs the pieces' bounds as constants
 * of the plan (put_usage_cte), and generic, the live day of 2,500 GPUs
 * took 16.2 s a request instead of 0.59 (bench_growth). */
static int live_generic(PGconn *c, const struct plan *firm, int *generic, struct gl_err *err)
{
	char lo[24], hi[24];
	PGresult *r = NULL;
	int rc;
	snprintf(lo, sizeof lo, "%lld", (long long)firm->la[0]);
	snprintf(hi, sizeof hi, "%lld", (long long)firm->lb[firm->nl - 1]);
	rc = gl_db_query(c,
			 "SELECT NOT EXISTS (SELECT 1 FROM gpu_usage_jobs WHERE bucket >= to_timestamp($1::bigint)"
			 " AND bucket < to_timestamp($2::bigint))",
			 2, (const char *[]){lo, hi}, &r, err);
	*generic = !rc && !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	return rc;
}

/* The live lines over the steps of pl (firm NULL), or with m OBS_ALL every
 * part at once: the unobserved ones over pl's steps (every step of the
 * query), the firm one over firm's (the live pieces); to[p] where part p's
 * sums go (n_to parts). */
static int lines_live_run(PGconn *c, const struct gl_accounting_query *q, const struct plan *pl, const struct plan *firm,
			  enum obs_mode m, const enum absorb_to *to, int n_to, struct gl_chargeback *cb,
			  struct gl_accounting_meta *meta, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT, arrays = GL_STRBUF_INIT, pa[6];
	const char *params[40];
	size_t arr_off[40];
	char now[24];
	int np = firm ? 7 : 4, rc, nest_off, cut, generic = 0;

	const char *dims[GL_CHARGEBACK_MAX_DIMS + 2];
	size_t nd = q->n_dims, n_live = pl->nl;

	for (size_t d = 0; d < q->n_dims; d++)
		dims[d] = q->dims[d];
	nd += pool_dims(cb, dims + nd);
	for (size_t i = 0; i < GL_ARRAY_LEN(pa); i++)
		gl_strbuf_init(&pa[i]);
	if (firm && firm->nl > n_live)
		n_live = firm->nl;
	if ((rc = append_live(&sql, dims, nd, n_live, live_cold(pl, m), q, m, &np, &arrays, arr_off, err)))
		goto out;
	append_lines_select(&sql, nd);
	put_i64_array(&pa[0], pl->la, pl->nl);
	put_i64_array(&pa[1], pl->lb, pl->nl);
	put_i64_array(&pa[2], pl->li, pl->nl);
	snprintf(now, sizeof now, "%lld", (long long)q->now_s);
	params[0] = pa[0].p;
	params[1] = pa[1].p;
	params[2] = now;
	params[3] = pa[2].p;
	if (firm) {
		put_i64_array(&pa[3], firm->la, firm->nl);
		put_i64_array(&pa[4], firm->lb, firm->nl);
		put_i64_array(&pa[5], firm->li, firm->nl);
		for (int i = 0; i < 3; i++)
			params[4 + i] = pa[3 + i].p;
	}
	filter_args(params, firm ? 7 : 4, np, &arrays, arr_off);
	/* kp's sums are a few rows a set, and the planner, estimating a
	 * handful, joined them to own (a row a set) by a nested loop: every
	 * sum compared with every set's key, 12,000,000 times for a day of
	 * 2,000 sets (2.0 s of a 2.6 s request). No join of this statement
	 * needs one but the range joins, which have no other way. The same
	 * estimate (k0 ~600 rows for 10,000 jobs) made it sort the jobs for
	 * a merge join with their watermarks and the 20,000 job parts to
	 * group them into kp: 50 of 140 ms of CPU (bench_observed, 10,000
	 * open jobs); hashed, nothing of it needs an order but the lines'. */
	if (firm && (rc = live_generic(c, firm, &generic, err)))
		goto out;
	nest_off = live_sums_first(q, dims, nd, n_live, 0, live_cold(pl, m), &cut);
	if (nest_off && (rc = gl_db_exec(c, "SET enable_nestloop = off; SET enable_sort = off", err)))
		goto out;
	rc = run_lines_parts(c, sql.p, np, params, q->n_dims, to, n_to, generic, cb, meta, err);
	if (nest_off)
		rc = planner_reset(c, "RESET enable_nestloop; RESET enable_sort", rc, err);
out:
	gl_strbuf_fini(&sql);
	gl_strbuf_fini(&arrays);
	for (size_t i = 0; i < GL_ARRAY_LEN(pa); i++)
		gl_strbuf_fini(&pa[i]);
	return rc;
}

/* 1b. the live pieces' lines from jobs: the part of their time m reads,
 * folded in as to says */
static int lines_live(PGconn *c, const struct gl_accounting_query *q, const struct plan *pl, enum obs_mode m,
		      enum absorb_to to, struct gl_chargeback *cb, struct gl_accounting_meta *meta, struct gl_err *err)
{
	return lines_live_run(c, q, pl, NULL, m, &to, 1, cb, meta, err);
}

/* The fleet idle query up to its "settled" CTE (settle_sql), the one both
 * chargeback's idle and /v1/idle group their own way: q's steps cut where
 * a rate starts or ends and at now (idle_steps: sub-step i, priced at the
 * rate in force at its start), capacity per sub-step and capacity key
 * (gl_capacity), allocation from the sub-steps' live pieces and built days
 * (make_plan, append_alloc_cte). A caller appends its own CTEs and SELECT
 * to sql (filters take parameters from $9 through arrays/arr_off/np) and
 * runs it with fleet_run. nsub 0: nothing to ask (the steps lie after now). */
struct fleet {
	struct gl_strbuf sql, arrays, pa[7];
	const char *params[40];
	size_t arr_off[40];
	int np;
	char now[24];
	struct plan pl;
	struct gl_window *sub;
	size_t *parent, nsub; /* each sub-step's step in q */
};

static void fleet_fini(struct fleet *f)
{
	gl_strbuf_fini(&f->sql);
	gl_strbuf_fini(&f->arrays);
	for (size_t i = 0; i < GL_ARRAY_LEN(f->pa); i++)
		gl_strbuf_fini(&f->pa[i]);
	plan_fini(&f->pl);
	free(f->sub);
	free(f->parent);
	memset(f, 0, sizeof *f);
}

static int fleet_begin(PGconn *c, const struct gl_accounting_query *q, struct fleet *f, struct gl_err *err)
{
	struct gl_accounting_query q2 = *q;
	char grace[24] = "NULL";
	int64_t *sa, *sb;
	int rc;

	memset(f, 0, sizeof *f);
	if ((rc = idle_steps(c, q, &f->sub, &f->parent, &f->nsub, err)) || !f->nsub)
		return rc;
	q2.steps = f->sub;
	q2.n_steps = f->nsub;
	if ((rc = make_plan(c, &q2, &f->pl, err)))
		return rc;
	sa = gl_xcalloc(f->nsub + 1, sizeof *sa);
	sb = gl_xcalloc(f->nsub + 1, sizeof *sb);
	for (size_t i = 0; i < f->nsub; i++) {
		sa[i] = f->sub[i].start_s;
		sb[i] = f->sub[i].end_s;
	}
	put_i64_array(&f->pa[0], sa, f->nsub);
	put_i64_array(&f->pa[1], sb, f->nsub);
	free(sa);
	free(sb);
	put_i64_array(&f->pa[2], f->pl.la, f->pl.nl);
	put_i64_array(&f->pa[3], f->pl.lb, f->pl.nl);
	put_i64_array(&f->pa[4], f->pl.li, f->pl.nl);
	put_i64_array(&f->pa[5], f->pl.da, f->pl.nd);
	put_i64_array(&f->pa[6], f->pl.di, f->pl.nd);
	snprintf(f->now, sizeof f->now, "%lld", (long long)q->now_s);
	f->np = 8;
	append_alloc_cte(&f->sql, f->pl.nl);
	/* the horizon as literals: integers of our own, and the filters'
	 * parameter numbers stay where callers expect them */
	if (q->cap.grace_s >= 0)
		snprintf(grace, sizeof grace, "%lld", (long long)q->cap.grace_s);
	gl_strbuf_printf(&f->sql,
		       ", cap AS ("
		       " SELECT s.i, cp.cluster_id, coalesce(cp.partition, '') AS partition, gl_gpu_model(cp.gpu_model) AS gpu_model,"
		       "  sum(cp.reported_gpu_seconds) AS reported,"
		       "  sum(cp.down_gpu_seconds + cp.planned_down_gpu_seconds + cp.reserved_gpu_seconds) AS unavail, s.a,"
		       "  sum(cp.unobserved_gpu_seconds) AS unobs"
		       " FROM steps s, LATERAL gl_capacity(s.a, s.b, %s::bigint, %s) cp GROUP BY 1, 2, 3, 4, s.a",
		       grace, q->cap.include ? "true" : "false");
	gl_strbuf_puts(&f->sql,
		       "), capk AS (SELECT cap.*, c.name AS cluster FROM cap JOIN clusters c USING (cluster_id)"
		       " ), alloc AS ("
		       " SELECT k.i, k.cluster_id, k.partition, k.gpu_model, round(sum(k.us)) AS us FROM k GROUP BY 1, 2, 3, 4"
		       ")");
	gl_strbuf_puts(&f->sql, settle_sql);
	return 0;
}

static int fleet_run(PGconn *c, struct fleet *f, PGresult **r, struct gl_err *err)
{
	const char *fixed[] = {f->pa[0].p, f->pa[1].p, f->now, f->pa[2].p, f->pa[3].p, f->pa[4].p, f->pa[5].p, f->pa[6].p};
	memcpy(f->params, fixed, sizeof fixed);
	filter_args(f->params, 8, f->np, &f->arrays, f->arr_off);
	return gl_plancache_query(c, f->sql.p, f->np, f->params, r, err);
}

/* The columns of the idle-by-step query, by name. */
struct idle_cols {
	int i, idle_us, over_us, idle_num, team, unpriced, pool[2];
};

/* shareIdle=owner: a team's dedicated idle (idle_owners) on its line */
static void owner_idle(struct gl_chargeback *cb, const struct gl_accounting_query *q, size_t step, const char *team, gl_cost_i128 us,
		       gl_cost_i128 num)
{
	struct gl_chargeback_step *s = &cb->steps[step];
	struct gl_chargeback_line *l = NULL;
	if (cb->share != GL_CHARGEBACK_SHARE_OWNER || q->n_dims != 1 || strcmp(q->dims[0], "team") || !owner_idle_shown(q, team))
		return;
	for (size_t i = 0; i < s->n_lines; i++)
		if (!strcmp(s->lines[i].key[0], team))
			l = &s->lines[i];
	if (!l)
		l = gl_chargeback_add_line(cb, step, (const char *[]){team});
	l->idle_owner_us += us;
	l->idle_owner_num += num;
}

/* Folds one idle row of sub-step si into its step. */
static int absorb_idle_row(PGresult *r, int row, const struct idle_cols *k, const struct fleet *f,
			   const struct gl_accounting_query *q, struct gl_chargeback *cb, struct gl_accounting_meta *meta,
			   struct gl_err *err)
{
	int si = atoi(PQgetvalue(r, row, k->i)) - 1;
	size_t step;
	struct gl_chargeback_step *s;
	gl_cost_i128 us, over, num;
	if (si < 0 || (size_t)si >= f->nsub || (step = f->parent[si]) >= cb->n_steps)
		return 0;
	s = &cb->steps[step];
	s->capacity_known = 1;
	if (parse_num(r, row, k->idle_us, &us) || parse_num(r, row, k->over_us, &over) ||
	    parse_num(r, row, k->idle_num, &num))
		return gl_err_set(err, GL_EDB, "chargeback: unexpected numeric value");
	s->idle_us += us;
	s->overalloc_us += over;
	/* idle capacity of a model no rate prices costs nothing here: say
	 * so, as for allocated GPU-time; whole names, however many, split at
	 * the unit separator, as a name may hold a comma */
	if (!q->scoped && !PQgetisnull(r, row, k->unpriced)) {
		char *models = gl_xstrdup(PQgetvalue(r, row, k->unpriced)), *sv = NULL;
		for (char *m = strtok_r(models, "\x1f", &sv); m; m = strtok_r(NULL, "\x1f", &sv))
			add_unpriced(meta, m);
		free(models);
	}
	s->idle_num += num;
	if (cb->share == GL_CHARGEBACK_SHARE_PROPORTIONAL) {
		char pool[512];
		struct gl_chargeback_pool *p;
		size_t pi;
		pool_name(r, row, k->pool, cb->share_by_model ? 2 : 1, pool, sizeof pool);
		pi = gl_chargeback_pool_of(cb, step, pool); /* may move s->pools */
		p = &s->pools[pi];
		p->idle_us += us;
		p->idle_num += num;
	}
	if (!PQgetisnull(r, row, k->team))
		owner_idle(cb, q, step, PQgetvalue(r, row, k->team), us, num);
	return 0;
}

/* 2. unallocated idle capacity per step: capacity less allocation less
 * unavailable, per cluster, partition and model (the fleet dimensions
 * only), priced at the rate in force at each sub-step's start; dedicated
 * hardware (idle_owners, exact partition before whole cluster) names the
 * team that pays for it under shareIdle=owner */
static int idle_by_step(PGconn *c, const struct gl_accounting_query *q, struct gl_chargeback *cb, struct gl_accounting_meta *meta,
			struct gl_err *err)
{
	struct fleet f;
	struct idle_cols k;
	PGresult *r = NULL;
	int rc;

	if ((rc = fleet_begin(c, q, &f, err)) || !f.nsub)
		goto out;
	gl_strbuf_puts(&f.sql, ", idle AS (SELECT capk.* FROM settled capk WHERE true");
	/* the fleet filters (cluster, partition, gpu_model) narrow idle too */
	if ((rc = add_filters(&f.sql, q, &f.np, &f.arrays, f.arr_off, FILTER_FLEET, err)))
		goto out;
	gl_strbuf_puts(&f.sql,
		       ") SELECT idle.i, idle.cluster AS p0, coalesce(idle.gpu_model, 'unknown') AS p1,"
		       " round(sum(idle.idle_us))::text AS idle_us,"
		       " round(sum(idle.over_us))::text AS over_us,"
		       " round(coalesce(sum(greatest(idle.idle_us, 0) * rt.micros_per_gpu_hour), 0))::text AS idle_num,"
		       " io.team, string_agg(DISTINCT idle.gpu_model, chr(31)) FILTER (WHERE idle.idle_us > 0"
		       "  AND rt.micros_per_gpu_hour IS NULL) AS unpriced"
		       " FROM idle LEFT JOIN LATERAL gl_rate_at(idle.gpu_model, idle.a) rt ON true"
		       " LEFT JOIN LATERAL (SELECT o.team FROM idle_owners o WHERE o.cluster = idle.cluster"
		       "  AND (o.partition = idle.partition OR o.partition = '') ORDER BY o.partition DESC LIMIT 1) io ON true"
		       /* per cluster and model: shareIdle=proportional shares idle
			* within its pool, named as the lines name theirs (pool_dims) */
		       " GROUP BY idle.i, io.team, p0, p1");
	if ((rc = fleet_run(c, &f, &r, err)))
		goto out;
	k = (struct idle_cols){PQfnumber(r, "i"),    PQfnumber(r, "idle_us"), PQfnumber(r, "over_us"),
			       PQfnumber(r, "idle_num"), PQfnumber(r, "team"), PQfnumber(r, "unpriced"),
			       {PQfnumber(r, "p0"), PQfnumber(r, "p1")}};
	for (int row = 0; row < PQntuples(r) && !rc; row++)
		rc = absorb_idle_row(r, row, &k, &f, q, cb, meta, err);
	/* an elapsed step without capacity rows is unknown, not 0: no
	 * inventory or exporter then is no evidence of no GPUs; a step
	 * wholly after now has no idle yet */
	if (!rc && PQntuples(r) > 0)
		for (size_t i = 0; i < cb->n_steps; i++)
			if (cb->steps[i].start_s >= q->now_s)
				cb->steps[i].capacity_known = 1;
out:
	PQclear(r);
	fleet_fini(&f);
	return rc;
}

/* Whether an open GPU job has unobserved time before the steps' end (and
 * now): *any 0 none, 1 some, 2 some past its own time limit. One probe of
 * jobs_running_idx, so a fleet without such jobs (every job ended, or seen
 * up to now) pays no unobserved query. */
static int any_unseen(PGconn *c, const struct gl_accounting_query *q, int *any, struct gl_err *err)
{
	char e[24], now[24];
	PGresult *r = NULL;
	int rc;
	snprintf(e, sizeof e, "%lld", (long long)q->steps[q->n_steps - 1].end_s);
	snprintf(now, sizeof now, "%lld", (long long)q->now_s);
	rc = gl_plancache_query(c, UNSEEN_Q, 2, (const char *[]){e, now}, &r, err);
	*any = rc ? 0 : atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	return rc;
}

/* The dimensions a job's own row answers (no owner, no workload type),
 * each with the columns of jobs it is made of and, over them, the column
 * of alloc_live's k that gl_accounting_dim_sql reads. */
static const struct own_dim {
	const char *dim, *cols, *k;
} own_dims[] = {
	{"user", "user_name", "c.user_name AS user_name"},
	{"account", "account", "c.account AS account"},
	{"cluster", "cluster_id", "(SELECT cl.name FROM clusters cl WHERE cl.cluster_id = c.cluster_id) AS cluster"},
	{"partition", "partition", "c.partition AS partition"},
	{"qos", "qos", "c.qos AS qos"},
	{"namespace", "namespace", "c.namespace AS namespace"},
	{"gpu_model", "gpu_type, node_gpu_model", GL_ACCOUNTING_JOB_MODEL_SQL("c") " AS gpu_model"},
};

static const struct own_dim *own_dim_of(const char *dim)
{
	for (size_t i = 0; i < GL_ARRAY_LEN(own_dims); i++)
		if (!strcmp(own_dims[i].dim, dim))
			return &own_dims[i];
	return NULL;
}

/* lines_live's allocation alone, for dimensions of the job's own row
 * (own_dims): the same jobs (put_run_jobs_where), the same [start, stop)
 * of each (obs_start, obs_stop) and micro-GPUs, put in their steps by the
 * same events (gl_accounting_event_cells), so every line's alloc_us is
 * lines_live's to the micro-GPU-second; priced, cost and exporter usage
 * stay 0. The events are keyed by the jobs' own columns and the cells
 * are named after (the cluster, the canonical model: a few thousand rows,
 * not one per event: the model's probe per event was a quarter of the
 * query). Without owners, rates and usage to join, 744 hourly steps of
 * 1,000,000 jobs are one pass over the jobs' events: 8.2 s where
 * lines_live took 28.7 s on the same machine (docs/bench.md). */
/* spanned: as put_run_jobs_where's (the rollup's build of the hours) */
static void alloc_live_sql(struct gl_strbuf *sql, const struct gl_accounting_query *q, size_t n_live, enum obs_mode m,
			   int spanned)
{
	struct gl_strbuf keys = GL_STRBUF_INIT;
	const struct own_dim *used[GL_ARRAY_LEN(own_dims)] = {0};

	for (size_t d = 0; d < q->n_dims; d++) {
		const struct own_dim *o = own_dim_of(q->dims[d]);
		if (!used[o - own_dims])
			gl_strbuf_printf(&keys, "%s%s", keys.len ? ", " : "", o->cols);
		used[o - own_dims] = o;
	}
	gl_strbuf_printf(sql,
			 "WITH " GL_LIVE_CTES("steps", "$1", "$2", "$4") ", iv AS ("
			 " SELECT jb.%s, " GL_ACCOUNTING_JOB_GPUS_SQL("jb") " AS g,"
			 "  greatest(%s, win.lo) AS p0, least(%s, win.hi) AS p1"
			 " FROM runs r CROSS JOIN win JOIN " RUN_JOBS " ON",
			 keys.p, obs_start(m), obs_stop(m));
	put_run_jobs_where(sql, m, "$1", "$2", spanned);
	gl_strbuf_puts(sql, ")");
	gl_accounting_event_cells(sql, gl_strbuf_cstr(&keys), "iv", "steps", n_live == 1);
	gl_strbuf_puts(sql, ", byrate AS (SELECT s.i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(sql, ", %s AS d%zu", gl_accounting_dim_sql(q->dims[d]), d);
	/* the columns append_lines_select reads, the allocation's alone */
	gl_strbuf_puts(sql, ", NULL::text AS gpu_model, NULL::bigint AS rate,"
			    " extract(epoch FROM s.b - s.a)::bigint * c.gact - c.si AS alloc, 0::bigint AS priced,"
			    " 0::float8 AS busy, 0::float8 AS idle, 0::float8 AS obs"
			    " FROM cells c JOIN steps s ON s.n = c.n CROSS JOIN LATERAL (SELECT 0 AS none");
	for (size_t i = 0; i < GL_ARRAY_LEN(own_dims); i++)
		if (used[i])
			gl_strbuf_printf(sql, ", %s", used[i]->k);
	gl_strbuf_puts(sql, ") k"
			    /* a line where lines_live's parts have a row: a cell's allocation */
			    " WHERE extract(epoch FROM s.b - s.a)::bigint * c.gact - c.si <> 0)");
	append_lines_select(sql, q->n_dims);
	gl_strbuf_fini(&keys);
}

static int alloc_live(PGconn *c, const struct gl_accounting_query *q, const struct plan *pl, enum obs_mode m,
		      enum absorb_to to, struct gl_chargeback *cb, struct gl_accounting_meta *meta, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT, pa[3];
	char now[24];
	int rc;

	for (size_t i = 0; i < GL_ARRAY_LEN(pa); i++)
		gl_strbuf_init(&pa[i]);
	alloc_live_sql(&sql, q, pl->nl, m, 0);
	put_i64_array(&pa[0], pl->la, pl->nl);
	put_i64_array(&pa[1], pl->lb, pl->nl);
	put_i64_array(&pa[2], pl->li, pl->nl);
	snprintf(now, sizeof now, "%lld", (long long)q->now_s);
	rc = run_lines(c, sql.p, 4, (const char *[]){pa[0].p, pa[1].p, now, pa[2].p}, q->n_dims, to, cb, meta, err);
	gl_strbuf_fini(&sql);
	for (size_t i = 0; i < GL_ARRAY_LEN(pa); i++)
		gl_strbuf_fini(&pa[i]);
	return rc;
}

/* A reader of the live lines of a plan's pieces: lines_live, or
 * alloc_live for the allocation alone. */
typedef int (*lines_reader)(PGconn *c, const struct gl_accounting_query *q, const struct plan *pl, enum obs_mode m,
			    enum absorb_to to, struct gl_chargeback *cb, struct gl_accounting_meta *meta, struct gl_err *err);

/* every step of q as live pieces of a plan (the caller frees it) */
static void plan_all_steps(const struct gl_accounting_query *q, struct plan *all)
{
	memset(all, 0, sizeof *all);
	all->la = gl_xcalloc(q->n_steps, sizeof *all->la);
	all->lb = gl_xcalloc(q->n_steps, sizeof *all->lb);
	all->li = gl_xcalloc(q->n_steps, sizeof *all->li);
	for (size_t i = 0; i < q->n_steps; i++) {
		all->la[i] = q->steps[i].start_s;
		all->lb[i] = q->steps[i].end_s;
		all->li[i] = (int64_t)i + 1;
	}
	all->nl = q->n_steps;
}

/* 1c. the unobserved time of open jobs, read live over every step (the
 * rollup holds firm time only), and its part past the jobs' limits */
static int lines_unseen(PGconn *c, const struct gl_accounting_query *q, lines_reader read, struct gl_chargeback *cb,
			struct gl_accounting_meta *meta, struct gl_err *err)
{
	struct plan all;
	int rc = 0, any = 0;

	if (!q->n_steps || (rc = any_unseen(c, q, &any, err)) || !any)
		return rc;
	plan_all_steps(q, &all);
	if (!(rc = read(c, q, &all, OBS_UNSEEN, q->unobserved_include ? TO_UNSEEN_INCLUDED : TO_UNSEEN, cb, meta, err)) &&
	    any > 1)
		rc = read(c, q, &all, OBS_IMPLAUSIBLE, TO_IMPLAUSIBLE, cb, meta, err);
	plan_fini(&all);
	return rc;
}

/* 1b and 1c in one statement, where both sum their jobs per set first (a
 * few live pieces and steps, lines not per job): the open jobs are read
 * once for their firm, unobserved and implausible parts, the owner sets
 * resolved once, and no probe for open jobs is needed. Not a cold read:
 * its firm jobs share no interval to sum first (lines_firm). */
static int lines_parts_fit(const struct gl_accounting_query *q, const struct plan *pl)
{
	return pl->nl && q->n_steps && !q->jobs && !lines_by_job(q->dims, q->n_dims) && pl->nl <= GL_LIVE_CUT_MAX &&
	       q->n_steps <= GL_LIVE_CUT_MAX && !live_cold(pl, OBS_FIRM);
}

static int lines_parts(PGconn *c, const struct gl_accounting_query *q, const struct plan *pl, struct gl_chargeback *cb,
		       struct gl_accounting_meta *meta, struct gl_err *err)
{
	const enum absorb_to to[3] = {TO_FIRM, q->unobserved_include ? TO_UNSEEN_INCLUDED : TO_UNSEEN, TO_IMPLAUSIBLE};
	struct plan all;
	int rc;

	plan_all_steps(q, &all);
	rc = lines_live_run(c, q, &all, pl, OBS_ALL, to, 3, cb, meta, err);
	plan_fini(&all);
	return rc;
}

/* 1b for the firm time. A cold read (live_cold) is planned without sorts:
 * the planner takes its jobs for ~1 % of what they are (their bounds come
 * from the steps' arrays, then three range joins to runs), and so grouped
 * the 2 M job pieces of a year into 8,000 sums by an external sort (223 MB
 * on disk) where a hash of the sums fits in 9 MB: 12.2 -> 7.75 s of CPU at
 * 1 M jobs (docs/scale.md, "A cold window"). The ORDER BY of the lines still
 * sorts (no other way), a few thousand rows. */
static int lines_firm(PGconn *c, const struct gl_accounting_query *q, const struct plan *pl, struct gl_chargeback *cb,
		      struct gl_accounting_meta *meta, struct gl_err *err)
{
	int rc, cold = live_cold(pl, OBS_FIRM);
	if (cold && (rc = gl_db_exec(c, "SET enable_sort = off", err)))
		return rc;
	rc = lines_live(c, q, pl, OBS_FIRM, TO_FIRM, cb, meta, err);
	return cold ? planner_reset(c, "RESET enable_sort", rc, err) : rc;
}

int gl_accounting_chargeback(PGconn *c, const struct gl_accounting_query *q, struct gl_chargeback *cb, struct gl_accounting_meta *meta,
		       struct gl_err *err)
{
	PGresult *r = NULL;
	struct plan pl;
	int rc;

	gl_accounting_meta_fini(meta);
	if (per_job(q) && (q->filter || q->scope_teams))
		return gl_err_set(err, GL_EINVAL, "chargeback: a query per job takes no filter");
	for (size_t d = 0; d < q->n_dims; d++)
		if (per_job(q) && !job_daily_expr(q->dims[d]))
			return gl_err_set(err, GL_EINVAL, "chargeback: dimension '%s' is not kept per job", q->dims[d]);
	for (size_t i = 0; i < q->n_steps && i < cb->n_steps; i++) {
		cb->steps[i].start_s = q->steps[i].start_s;
		cb->steps[i].end_s = q->steps[i].end_s;
	}
	if ((rc = make_plan(c, q, &pl, err)))
		goto out;
	if (pl.nd && (rc = lines_daily(c, q, &pl, cb, meta, err)))
		goto out;
	if (lines_parts_fit(q, &pl)) {
		if ((rc = lines_parts(c, q, &pl, cb, meta, err)))
			goto out;
	} else if ((pl.nl && (rc = lines_firm(c, q, &pl, cb, meta, err))) ||
		   (rc = lines_unseen(c, q, lines_live, cb, meta, err)))
		goto out;
	if ((rc = gl_db_query(c, "SELECT to_regprocedure('gl_capacity(timestamptz,timestamptz)') IS NOT NULL AS have",
			      0, NULL, &r, err)) ||
	    (rc = gl_pgrow_one_bool(r, "have", &meta->capacity_source, err)))
		goto out;
	if (meta->capacity_source && !q->lines_only && !q->jobs)
		rc = idle_by_step(c, q, cb, meta, err);
out:
	PQclear(r);
	plan_fini(&pl);
	return rc;
}

#define FL(t, m) GL_PGROW(struct gl_idle_fleet, t, m)
static const struct gl_pgrow_field fleet_fields[] = {
	FL(STR, cluster), FL(STR, partition), FL(STR, gpu_model), FL(I64, reported_s), FL(I64, unavailable_s),
	FL(I64, allocated_s), FL(I64, idle_s), FL(I64, over_s), FL(I64, unobserved_s),
	GL_PGROW_N(struct gl_idle_fleet, I64, idle_micros, idle_micros_null),
};
#undef FL

int gl_accounting_fleet_idle(struct gl_store *st, int64_t start_s, int64_t end_s, int64_t now_s,
			     const struct gl_capacity_observed *cap, struct gl_idle_fleet **rows, size_t *n, char **text,
			     struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	PGresult *r = NULL;
	void *v = NULL;
	struct gl_window w = {start_s, end_s};
	struct gl_accounting_query q;
	struct fleet f;
	int rc;

	*rows = NULL;
	*n = 0;
	*text = NULL;
	gl_accounting_query_init(&q, &w, 1, NULL, 0, now_s);
	q.cap = *cap;
	if ((rc = fleet_begin(c, &q, &f, err)) || !f.nsub)
		goto out;
	gl_strbuf_puts(&f.sql,
		       " SELECT s.cluster, s.partition, s.gpu_model, sum(s.reported) AS reported_s,"
		       " sum(s.unavail) AS unavailable_s, round(sum(s.am) / 1000000.0) AS allocated_s,"
		       " round(sum(s.idle_us) / 1000000.0) AS idle_s, round(sum(s.over_us) / 1000000.0) AS over_s,"
		       " (SELECT coalesce(sum(k.unobs), 0) FROM capk k WHERE k.cluster = s.cluster AND k.partition = s.partition"
		       "   AND k.gpu_model = s.gpu_model) AS unobserved_s,"
		       " round(sum(s.idle_us * rt.micros_per_gpu_hour) / 3600000000.0) AS idle_micros"
		       " FROM settled s LEFT JOIN LATERAL gl_rate_at(s.gpu_model, s.a) rt ON true"
		       " GROUP BY 1, 2, 3 ORDER BY 7 DESC, 1, 2, 3");
	if (!(rc = fleet_run(c, &f, &r, err)) && r) {
		rc = gl_pgrow_decode(r, fleet_fields, GL_ARRAY_LEN(fleet_fields), sizeof **rows, &v, n, text, err);
		*rows = v;
	}
out:
	PQclear(r);
	fleet_fini(&f);
	return rc;
}

/* [start_s, min(end_s, now_s)) as the epoch texts a and b: 0 when that is
 * empty (a window wholly ahead of now covers no day yet). */
static int window_args(int64_t start_s, int64_t *end_s, int64_t now_s, char a[24], char b[24])
{
	if (*end_s > now_s)
		*end_s = now_s;
	if (*end_s <= start_s)
		return 0;
	snprintf(a, 24, "%lld", (long long)start_s);
	snprintf(b, 24, "%lld", (long long)*end_s);
	return 1;
}

/* One text[] parameter per dimension after the *np there are: the values
 * of the filter's clause on it, or NULL (not filtered; a dimension is in one
 * clause at most). params[i] points into arrays, which must not grow after. */
static void filter_params(const struct gl_filter *filter, const char *const *dims, size_t n_dims,
			  struct gl_strbuf *arrays, size_t *arr_off, int *np, const char **params)
{
	int first = *np;
	for (size_t d = 0; d < n_dims; d++) {
		const struct gl_filter_clause *fc = NULL;
		for (size_t i = 0; filter && i < filter->n && !fc; i++)
			if (!strcmp(filter->c[i].dim, dims[d]))
				fc = &filter->c[i];
		if (fc)
			add_text_array(arrays, arr_off, np, (const char *const *)fc->values, fc->n_values);
		else
			arr_off[(*np)++] = SIZE_MAX;
	}
	for (int i = first; i < *np; i++)
		params[i] = arr_off[i] == SIZE_MAX ? NULL : arrays->p + arr_off[i];
}

int gl_accounting_capacity_days(PGconn *c, int64_t start_s, int64_t end_s, int64_t now_s, const struct gl_filter *filter,
			  int64_t *known, int64_t *days, struct gl_err *err)
{
	static const char *const fleet_dims[] = {"cluster", "partition", "gpu_model"};
	struct gl_strbuf arrays = GL_STRBUF_INIT;
	size_t arr_off[8];
	const char *params[5];
	char a[24], b[24];
	PGresult *r = NULL;
	int rc, np = 2;

	*known = *days = 0;
	if (!window_args(start_s, &end_s, now_s, a, b))
		return 0;
	if ((rc = gl_db_query(c, "SELECT to_regprocedure('gl_capacity(timestamptz,timestamptz)') IS NOT NULL", 0,
			      NULL, &r, err)))
		goto out;
	if (PQgetvalue(r, 0, 0)[0] != 't') {
		*days = (end_s - 1) / 86400 - start_s / 86400 + 1;
		goto out;
	}
	PQclear(r);
	r = NULL;
	params[0] = a;
	params[1] = b;
	/* $3 clusters, $4 partitions, $5 canonical models: the fleet filters
	 * that narrow the idle (add_filters, FILTER_FLEET) narrow the days it
	 * covers too; owner filters narrow neither */
	filter_params(filter, fleet_dims, GL_ARRAY_LEN(fleet_dims), &arrays, arr_off, &np, params);
	if ((rc = gl_plancache_query(c, CAP_DAYS_Q, np, params, &r, err)))
		goto out;
	*known = atoll(PQgetvalue(r, 0, 0));
	*days = atoll(PQgetvalue(r, 0, 1));
out:
	PQclear(r);
	gl_strbuf_fini(&arrays);
	return rc;
}

/* The clusters whose GPU jobs ran in [start_s, min(end_s, now_s)) while no
 * capacity data (scheduler inventory or exporter GPUs) covers any of that
 * window: their idle is unknown even where the other clusters' days are
 * known. Only the filter's cluster clause narrows them. */
static int capacity_missing(PGconn *c, int64_t start_s, int64_t end_s, int64_t now_s, const struct gl_filter *filter,
			    char ***names, size_t *n, struct gl_err *err)
{
	struct gl_strbuf arrays = GL_STRBUF_INIT;
	size_t arr_off[4];
	const char *params[3];
	char a[24], b[24];
	PGresult *r = NULL;
	int rc, np = 2;

	*names = NULL;
	*n = 0;
	if (!window_args(start_s, &end_s, now_s, a, b))
		return 0;
	params[0] = a;
	params[1] = b;
	filter_params(filter, (const char *const[]){"cluster"}, 1, &arrays, arr_off, &np, params);
	/* the rule is sql/104's, where a central database of shards asks
	 * each shard once for its clusters instead of probing each cluster's
	 * tables over the network */
	if ((rc = gl_plancache_query(c, CAP_MISSING_Q, 3, params, &r, err)))
		goto out;
	*n = (size_t)PQntuples(r);
	*names = gl_xcalloc(*n + 1, sizeof **names);
	for (size_t i = 0; i < *n; i++)
		(*names)[i] = gl_xstrdup(PQgetvalue(r, (int)i, 0));
out:
	PQclear(r);
	gl_strbuf_fini(&arrays);
	return rc;
}

/* What a chargeback asks every shard before its lines (the built days, the
 * unobserved probe, the capacity days, the clusters without capacity
 * data, how far each cluster's data goes), as one text each shard runs for
 * its own clusters: rows (k, x, y, n, s, d). $1 $2 are the built days'
 * bounds, $3 $4 the unobserved probe's, $5 to $9 the capacity days' ($5 to
 * $7 the clusters without capacity data's). Each shard gives its islands
 * of capacity days, the central the days of their union: a day is known
 * when any shard's island covers it. A data_through row is one cluster's,
 * so the shards' rows are the fleet's. */
static const char PROBE_SHARD_SQL[] =
	"SELECT 'shard'::text, NULL::bigint, NULL::bigint, NULL::text, NULL::text, NULL::text"
	" UNION ALL SELECT 'built', d.*, NULL, NULL, NULL, NULL FROM (" BUILT_DAYS_SQL("$1", "$2") ") d"
	" UNION ALL SELECT 'unseen', (" UNSEEN_SQL("$3", "$4") ")::bigint, NULL, NULL, NULL, NULL"
	" UNION ALL SELECT 'island', i.a, i.b, NULL, NULL, NULL FROM (" CAP_ISLANDS_SQL("$5", "$6", "$7", "$8",
											 "$9") " SELECT a, b FROM m) i"
	" UNION ALL SELECT 'missing', NULL, NULL, n, NULL, NULL"
	" FROM gl_capacity_missing_here($5::bigint, $6::bigint, $7::text[]) n"
	" UNION ALL SELECT 'through', t.through_s, NULL, t.cluster, t.source, t.data FROM (" GL_INGEST_DATA_THROUGH_SQL
	") t";

#define PROBE_TYPES "'bigint, bigint, bigint, bigint, bigint, bigint, text[], text[], text[]'"

/* The shards' rows made the five statements' answers: a day is built when
 * every shard read holds it built (as a central's usage_daily_built), $3
 * $4 the capacity days' window. Each kind in its statement's order: the
 * built days by day, the clusters by name, data_through by cluster, data
 * and source (GL_INGEST_DATA_THROUGH_Q). */
static const char PROBE_Q[] =
	"WITH p AS MATERIALIZED (SELECT * FROM gl_fleet_prepared_rows($1, " PROBE_TYPES ", $2::text[],"
	"  'k text, x bigint, y bigint, n text, s text, d text')"
	"  AS t(k text, x bigint, y bigint, n text, s text, d text))"
	" SELECT 'built' AS k, x, NULL::bigint AS y, NULL::text AS n, NULL::text AS s, NULL::text AS d FROM p"
	"  WHERE k = 'built' GROUP BY x HAVING count(*) = (SELECT count(*) FROM p WHERE k = 'shard')"
	" UNION ALL SELECT 'unseen', coalesce(max(x), 0), NULL, NULL, NULL, NULL FROM p WHERE k = 'unseen'"
	" UNION ALL SELECT 'known', " CAP_KNOWN_SQL("(SELECT x AS a, y AS b FROM p WHERE k = 'island') m") ", "
	CAP_DAYS_N_SQL("$3", "$4") ", NULL, NULL, NULL"
	" UNION ALL SELECT 'missing', NULL, NULL, n, NULL, NULL FROM p WHERE k = 'missing'"
	" UNION ALL SELECT 'through', x, NULL, n, s, d FROM p WHERE k = 'through'"
	" ORDER BY 1, 4, 6, 5, 2";

#define PROBE_NCOLS 6

/* The probe's rows of kind k, their columns cols (of int8, int8, text,
 * text, text) named names (NULL: "v"), as a statement's answer of its
 * own; NULL when out of memory. */
static PGresult *probe_answer(PGconn *c, const PGresult *r, const char *k, const int *cols,
			      const char *const *names, int ncols)
{
	static const Oid types[PROBE_NCOLS] = {0, 20, 20, 25, 25, 25};
	PGresAttDesc att[PROBE_NCOLS];
	PGresult *a = PQmakeEmptyPGresult(c, PGRES_TUPLES_OK);
	int n = 0;

	memset(att, 0, sizeof att);
	for (int j = 0; j < ncols; j++) {
		att[j].name = (char *)(names ? names[j] : "v");
		att[j].typid = types[cols[j]];
		att[j].typlen = types[cols[j]] == 25 ? -1 : 8;
		att[j].atttypmod = -1;
	}
	if (!a || !PQsetResultAttrs(a, ncols, att))
		goto fail;
	for (int row = 0; row < PQntuples(r); row++) {
		if (strcmp(PQgetvalue(r, row, 0), k))
			continue;
		for (int j = 0; j < ncols; j++)
			if (!PQsetvalue(a, n, j, PQgetisnull(r, row, cols[j]) ? NULL : PQgetvalue(r, row, cols[j]),
					PQgetisnull(r, row, cols[j]) ? -1 : PQgetlength(r, row, cols[j])))
				goto fail;
		n++;
	}
	return a;
fail:
	PQclear(a);
	return NULL;
}

/* Keeps the probe's rows of kind k as the answer of sql with params. */
static void probe_seed(PGconn *c, const PGresult *r, const char *k, const int *cols, const char *const *names,
		       int ncols, const char *sql, int nparams, const char *const *params)
{
	PGresult *a = probe_answer(c, r, k, cols, names, ncols);
	if (a)
		gl_plancache_seed(c, sql, nparams, params, a);
	PQclear(a);
}

/* On a session routed to the shards, in a request's read transaction:
 * what q's chargeback, its capacity coverage and its data_through would
 * ask every shard in five statements (each a remote query to every shard,
 * one shard after the other: 5.4 ms of a warm month's 14 at 300,000 jobs
 * for the first four, 1.8 ms p50 for data_through's cursor), asked in one
 * text sent to every shard at once, which each shard prepared once
 * (gl_fleet_prepared_rows, sql/140), its answers kept as
 * those statements' (gl_plancache_seed), which then ask nothing. A
 * statement whose parameters turn out other than these is asked as
 * before. */
static int fleet_probe(PGconn *c, const struct gl_accounting_query *q, struct gl_err *err)
{
	static const char *const fleet_dims[] = {"cluster", "partition", "gpu_model"};
	struct gl_strbuf arrays = GL_STRBUF_INIT, arrays2 = GL_STRBUF_INIT, arr = GL_STRBUF_INIT;
	size_t arr_off[9], arr_off2[4];
	const char *pp[9], *pm[3];
	char los[24], his[24], e[24], now[24], a[24], b[24];
	int64_t end_s;
	PGresult *r = NULL;
	int rc = 0, np = 6, npm = 2;

	if (!q->n_steps || q->jobs || !gl_plancache_seeding(c))
		return 0;
	end_s = q->steps[q->n_steps - 1].end_s;
	if (!window_args(q->steps[0].start_s, &end_s, q->now_s, a, b))
		return 0;
	built_bounds(q, los, his);
	snprintf(e, sizeof e, "%lld", (long long)q->steps[q->n_steps - 1].end_s);
	snprintf(now, sizeof now, "%lld", (long long)q->now_s);
	pp[0] = los, pp[1] = his, pp[2] = e, pp[3] = now, pp[4] = a, pp[5] = b;
	filter_params(q->filter, fleet_dims, GL_ARRAY_LEN(fleet_dims), &arrays, arr_off, &np, pp);
	pm[0] = a, pm[1] = b;
	filter_params(q->filter, (const char *const[]){"cluster"}, 1, &arrays2, arr_off2, &npm, pm);
	if ((rc = gl_db_query(c, PROBE_Q, 4,
			      (const char *[]){PROBE_SHARD_SQL, gl_pgarray_texts(&arr, pp, (size_t)np), a, b}, &r,
			      err)))
		goto out;
	probe_seed(c, r, "built", (const int[]){1}, NULL, 1, BUILT_DAYS_Q, 2, pp);
	probe_seed(c, r, "unseen", (const int[]){1}, NULL, 1, UNSEEN_Q, 2, pp + 2);
	probe_seed(c, r, "known", (const int[]){1, 2}, NULL, 2, CAP_DAYS_Q, 5, pp + 4);
	probe_seed(c, r, "missing", (const int[]){3}, NULL, 1, CAP_MISSING_Q, 3, pm);
	probe_seed(c, r, "through", (const int[]){3, 4, 5, 1}, (const char *[]){"cluster", "source", "data", "through_s"},
		   4, GL_INGEST_DATA_THROUGH_Q, 0, NULL);
out:
	PQclear(r);
	gl_strbuf_fini(&arrays);
	gl_strbuf_fini(&arrays2);
	gl_strbuf_fini(&arr);
	return rc;
}

int gl_accounting_capacity_cover(struct gl_store *st, int64_t start_s, int64_t end_s, int64_t now_s, const struct gl_filter *filter,
			   struct gl_accounting_cover *cov, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int rc;
	memset(cov, 0, sizeof *cov);
	if ((rc = gl_accounting_capacity_days(c, start_s, end_s, now_s, filter, &cov->known, &cov->days, err)))
		return rc;
	return capacity_missing(c, start_s, end_s, now_s, filter, &cov->missing, &cov->n_missing, err);
}

void gl_accounting_cover_fini(struct gl_accounting_cover *cov)
{
	for (size_t i = 0; cov->missing && i < cov->n_missing; i++)
		free(cov->missing[i]);
	free(cov->missing);
	memset(cov, 0, sizeof *cov);
}

void gl_accounting_query_init(struct gl_accounting_query *q, const struct gl_window *steps, size_t n_steps,
			const char *const *dims, size_t n_dims, int64_t now_s)
{
	memset(q, 0, sizeof *q);
	q->steps = steps;
	q->n_steps = n_steps;
	q->now_s = now_s;
	q->cap.grace_s = -1;
	q->cap.include = 1;
	for (size_t d = 0; d < n_dims && d < GL_CHARGEBACK_MAX_DIMS; d++)
		q->dims[d] = dims[d];
	q->n_dims = n_dims < GL_CHARGEBACK_MAX_DIMS ? n_dims : GL_CHARGEBACK_MAX_DIMS;
}

/* shareIdle=proportional over lines filtered by owner (a filter clause on
 * an owner dimension, or a token's team scope): each step's allocation
 * without those filters (the fleet filters still apply, as they narrow the
 * idle), for gl_chargeback_finish to share the idle over. */
static int share_base(PGconn *c, const struct gl_accounting_query *q, struct gl_chargeback *cb, struct gl_err *err)
{
	static const char *const dims[] = {"cluster"};
	struct gl_filter fleet;
	struct gl_accounting_query q2 = *q;
	struct gl_accounting_meta meta2 = {0};
	struct gl_chargeback all;
	int rc, owner_filtered = q->scope_teams != NULL;

	memset(&fleet, 0, sizeof fleet);
	for (size_t i = 0; q->filter && i < q->filter->n; i++) {
		if (fleet_expr(q->filter->c[i].dim))
			fleet.c[fleet.n++] = q->filter->c[i]; /* borrowed strings: never finied */
		else
			owner_filtered = 1;
	}
	if (!owner_filtered)
		return 0;
	q2.dims[0] = dims[0];
	q2.n_dims = 1;
	q2.filter = fleet.n ? &fleet : NULL;
	q2.scope_teams = NULL;
	q2.n_scope_teams = 0;
	q2.lines_only = 1;
	/* the same pools as cb's, for the base of each */
	gl_chargeback_init(&all, 1, cb->share, cb->n_steps);
	all.share_by_model = cb->share_by_model;
	if (!(rc = gl_accounting_chargeback(c, &q2, &all, &meta2, err)))
		for (size_t i = 0; i < cb->n_steps; i++)
			for (size_t j = 0; j < all.steps[i].n_lines; j++) {
				const struct gl_chargeback_line *l = &all.steps[i].lines[j];
				cb->steps[i].share_base_us += l->alloc_us;
				for (size_t k = 0; k < l->n_parts; k++) {
					size_t p = gl_chargeback_pool_of(cb, i, all.steps[i].pools[l->parts[k].pool].name);
					cb->steps[i].pools[p].base_us += l->parts[k].us;
				}
			}
	gl_chargeback_fini(&all);
	gl_accounting_meta_fini(&meta2);
	return rc;
}

int gl_accounting_chargeback_finished(struct gl_store *st, const struct gl_accounting_query *q, struct gl_chargeback *cb,
				struct gl_accounting_meta *meta, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	int rc = fleet_probe(c, q, err);
	if (!rc)
		rc = gl_accounting_chargeback(c, q, cb, meta, err);
	if (!rc && (cb->share == GL_CHARGEBACK_SHARE_PROPORTIONAL || cb->share == GL_CHARGEBACK_SHARE_PROPORTIONAL_FLEET) && !q->lines_only)
		rc = share_base(c, q, cb, err);
	if (!rc && (rc = gl_chargeback_finish(cb)))
		rc = gl_err_set(err, -rc, "chargeback: apportioning failed");
	return rc;
}

int gl_accounting_alloc_serves(const struct gl_accounting_query *q)
{
	if (q->filter || q->scope_teams || q->jobs || !q->n_dims)
		return 0;
	for (size_t d = 0; d < q->n_dims; d++)
		if (!own_dim_of(q->dims[d]))
			return 0;
	for (size_t i = 0; i < q->n_steps; i++)
		if (q->steps[i].end_s - q->steps[i].start_s >= 86400)
			return 0;
	return 1;
}

int gl_accounting_built_hours(PGconn *c, const struct gl_window *steps, size_t n_steps, int64_t now_s, unsigned char *built,
			      size_t *n_built, struct gl_err *err)
{
	int64_t today = now_s - ((now_s % 86400) + 86400) % 86400;
	char los[24], his[24];
	PGresult *r = NULL;
	int rc;

	memset(built, 0, n_steps);
	*n_built = 0;
	if (!n_steps)
		return 0;
	snprintf(los, sizeof los, "%lld", (long long)steps[0].start_s);
	snprintf(his, sizeof his, "%lld", (long long)(steps[n_steps - 1].end_s < today ? steps[n_steps - 1].end_s : today));
	if ((rc = gl_db_query(c,
			      "SELECT extract(epoch FROM b.day::timestamp)::bigint FROM usage_daily_built b"
			      " JOIN usage_hourly_built h ON h.day = b.day"
			      " WHERE b.day >= (to_timestamp($1) AT TIME ZONE 'UTC')::date"
			      " AND b.day < (to_timestamp($2) AT TIME ZONE 'UTC')::date ORDER BY b.day",
			      2, (const char *[]){los, his}, &r, err)))
		return rc;
	/* steps ascend: one walk over both */
	for (size_t i = 0, k = 0; i < n_steps; i++) {
		int64_t a = steps[i].start_s, day = a - ((a % 86400) + 86400) % 86400;
		while (k < (size_t)PQntuples(r) && atoll(PQgetvalue(r, (int)k, 0)) < day)
			k++;
		if (k < (size_t)PQntuples(r) && atoll(PQgetvalue(r, (int)k, 0)) == day && a % 3600 == 0 &&
		    steps[i].end_s == a + 3600 && day + 86400 <= today) {
			built[i] = 1;
			++*n_built;
		}
	}
	PQclear(r);
	return 0;
}

/* Whether usage_hourly_alloc (cluster and model) can answer q's lines. */
static int alloc_by_built(const struct gl_accounting_query *q)
{
	for (size_t d = 0; d < q->n_dims; d++)
		if (strcmp(q->dims[d], "cluster") && strcmp(q->dims[d], "gpu_model"))
			return 0;
	return 1;
}

/* The firm allocation of the built hours (built[i]) from
 * usage_hourly_alloc, as alloc_live's lines. */
static int alloc_built(PGconn *c, const struct gl_accounting_query *q, const unsigned char *built, struct gl_chargeback *cb,
		       struct gl_accounting_meta *meta, struct gl_err *err)
{
	struct gl_strbuf sql = GL_STRBUF_INIT, a = GL_STRBUF_INIT, i1 = GL_STRBUF_INIT;
	int rc;

	gl_strbuf_putc(&a, '{');
	gl_strbuf_putc(&i1, '{');
	for (size_t i = 0, n = 0; i < q->n_steps; i++)
		if (built[i]) {
			gl_strbuf_printf(&a, "%s%lld", n ? "," : "", (long long)q->steps[i].start_s);
			gl_strbuf_printf(&i1, "%s%zu", n++ ? "," : "", i + 1);
		}
	gl_strbuf_putc(&a, '}');
	gl_strbuf_putc(&i1, '}');
	gl_strbuf_puts(&sql, "SELECT s.i");
	for (size_t d = 0; d < q->n_dims; d++)
		gl_strbuf_printf(&sql, ", u.%s AS d%zu", q->dims[d], d);
	gl_strbuf_puts(&sql, ", sum(u.alloc_us)::text AS alloc_us, '0' AS priced_us, '0' AS cost_num, 0::float8 AS busy_s,"
			     " 0::float8 AS idle_s, 0::float8 AS observed_s, NULL::text AS unpriced"
			     " FROM unnest($1::bigint[], $2::integer[]) AS s(a, i)"
			     " JOIN usage_hourly_alloc u ON u.day = (to_timestamp(s.a) AT TIME ZONE 'UTC')::date"
			     "  AND u.hour = extract(hour FROM to_timestamp(s.a) AT TIME ZONE 'UTC')::integer"
			     " GROUP BY s.i");
	put_dim_cols(&sql, "", q->n_dims);
	gl_strbuf_puts(&sql, " ORDER BY s.i");
	put_dim_cols(&sql, "", q->n_dims);
	rc = run_lines(c, sql.p, 2, (const char *[]){a.p, i1.p}, q->n_dims, TO_FIRM, cb, meta, err);
	gl_strbuf_fini(&sql);
	gl_strbuf_fini(&a);
	gl_strbuf_fini(&i1);
	return rc;
}

int gl_accounting_alloc_finished(struct gl_store *st, const struct gl_accounting_query *q, struct gl_chargeback *cb,
				 struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_accounting_meta meta = {0};
	struct plan all;
	unsigned char *built = NULL;
	size_t nb = 0;
	int rc = 0;

	memset(&all, 0, sizeof all);
	if (!gl_accounting_alloc_serves(q))
		return gl_err_set(err, GL_EINVAL, "allocation: a query it does not serve");
	if (!q->n_steps)
		goto finish;
	/* the hours of built days from usage_hourly_alloc (sql/094), the
	 * others live: steps shorter than a day hold no built day, so
	 * gl_accounting_chargeback reads them live */
	built = gl_xcalloc(q->n_steps, 1);
	if (alloc_by_built(q) && (rc = gl_accounting_built_hours(c, q->steps, q->n_steps, q->now_s, built, &nb, err)))
		goto out;
	all.la = gl_xcalloc(q->n_steps, sizeof *all.la);
	all.lb = gl_xcalloc(q->n_steps, sizeof *all.lb);
	all.li = gl_xcalloc(q->n_steps, sizeof *all.li);
	for (size_t i = 0; i < q->n_steps && i < cb->n_steps; i++) {
		cb->steps[i].start_s = q->steps[i].start_s;
		cb->steps[i].end_s = q->steps[i].end_s;
		if (built[i])
			continue;
		all.la[all.nl] = q->steps[i].start_s;
		all.lb[all.nl] = q->steps[i].end_s;
		all.li[all.nl++] = (int64_t)i + 1;
	}
	if ((all.nl && (rc = alloc_live(c, q, &all, OBS_FIRM, TO_FIRM, cb, &meta, err))) ||
	    (nb && (rc = alloc_built(c, q, built, cb, &meta, err))) ||
	    (rc = lines_unseen(c, q, alloc_live, cb, &meta, err)))
		goto out;
finish:
	if ((rc = gl_chargeback_finish(cb)))
		rc = gl_err_set(err, -rc, "allocation: apportioning failed");
out:
	free(built);
	plan_fini(&all);
	gl_accounting_meta_fini(&meta);
	return rc;
}

/* The days of one build as the live query's parameters: $1 their starts,
 * $2 their ends, $3 now, $4 their ordinals (1..n) and the dates of the
 * days in the same order (a date[] literal). */
struct build_args {
	struct gl_strbuf a, b, i, days;
	size_t n;
	char now[24];
	int64_t now_s, *day_s;
};

static void build_args_fini(struct build_args *ba)
{
	free(ba->day_s);
	gl_strbuf_fini(&ba->a);
	gl_strbuf_fini(&ba->b);
	gl_strbuf_fini(&ba->i);
	gl_strbuf_fini(&ba->days);
}

static int build_args_make(struct build_args *ba, const int64_t *day_s, size_t n, int64_t now_s, struct gl_err *err)
{
	int64_t *ends = gl_xcalloc(n, sizeof *ends), *ord = gl_xcalloc(n, sizeof *ord);
	int rc = 0;

	gl_strbuf_putc(&ba->days, '{');
	for (size_t k = 0; k < n && !rc; k++) {
		int64_t y;
		unsigned m, d;
		if (day_s[k] % 86400 != 0 || day_s[k] + 86400 > now_s || (k && day_s[k] <= day_s[k - 1]))
			rc = gl_err_set(err, GL_EINVAL, "build day: %lld is not a whole past day after the one before",
					(long long)day_s[k]);
		ends[k] = day_s[k] + 86400;
		ord[k] = (int64_t)k + 1;
		gl_timeutil_civil_from_days(day_s[k] / 86400, &y, &m, &d);
		gl_strbuf_printf(&ba->days, "%s%04lld-%02u-%02u", k ? "," : "", (long long)y, m, d);
	}
	gl_strbuf_putc(&ba->days, '}');
	put_i64_array(&ba->a, day_s, n);
	put_i64_array(&ba->b, ends, n);
	put_i64_array(&ba->i, ord, n);
	snprintf(ba->now, sizeof ba->now, "%lld", (long long)now_s);
	ba->n = n;
	ba->now_s = now_s;
	ba->day_s = gl_xcalloc(n ? n : 1, sizeof *ba->day_s);
	memcpy(ba->day_s, day_s, n * sizeof *day_s);
	free(ends);
	free(ord);
	return rc;
}

/* Inside gl_accounting_build_days' transaction, after the days' built
 * markers: usage_monthly_job for the days' months again, from the serving
 * jobs' usage_daily_job over each month's built days, and the list of those days
 * (sql/089). */
static int build_month_jobs(PGconn *c, const char *days, struct gl_err *err)
{
	static const char *const sql[] = {
		"DELETE FROM usage_monthly_job WHERE month IN (SELECT date_trunc('month', d)::date FROM unnest($1::date[]) d)",
		"INSERT INTO usage_monthly_job (month, job_pk, d_team, d_project, d_cost_center, d_cluster, d_namespace,"
		" d_gpu_model, gpu_model, rate, alloc, priced, busy, idle, obs)"
		" SELECT date_trunc('month', u.day)::date, u.job_pk, u.d_team, u.d_project, u.d_cost_center, u.d_cluster,"
		" u.d_namespace, u.d_gpu_model, u.gpu_model, u.rate, sum(u.alloc), sum(u.priced), sum(u.busy), sum(u.idle),"
		" sum(u.obs) FROM usage_daily_job u JOIN usage_daily_built b ON b.day = u.day"
		" JOIN (SELECT DISTINCT date_trunc('month', d)::date AS month FROM unnest($1::date[]) d) mo"
		"  ON u.day >= mo.month AND u.day < mo.month + interval '1 month'"
		" WHERE u.job_pk IN (SELECT job_pk FROM serving_jobs)"
		" GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10",
		"INSERT INTO usage_monthly_job_built (month, days)"
		" SELECT mo.month, array_agg(b.day ORDER BY b.day)"
		" FROM (SELECT DISTINCT date_trunc('month', d)::date AS month FROM unnest($1::date[]) d) mo"
		" JOIN usage_daily_built b ON b.day >= mo.month AND b.day < mo.month + interval '1 month'"
		" GROUP BY mo.month"
		" ON CONFLICT (month) DO UPDATE SET days = excluded.days, built_at = now()",
	};
	int rc = 0;
	for (size_t i = 0; i < GL_ARRAY_LEN(sql) && !rc; i++)
		rc = gl_db_query(c, sql[i], 1, (const char *[]){days}, NULL, err);
	return rc;
}

/* Inside a build's transaction: the capacity page's hourly series of the
 * days (sql/094), from the live queries themselves over the days' hours,
 * so built and live hours cannot differ: the firm allocation by cluster and
 * model (alloc_live's, as gl_accounting_alloc_finished reads it) and the
 * pending series (gl_fcseries_build_pending). */
static int build_hourly(PGconn *c, const struct build_args *ba, struct gl_err *err)
{
	static const char *const dims[] = {"cluster", "gpu_model"};
	const char *days = gl_strbuf_cstr(&ba->days);
	size_t nh = 24 * ba->n;
	struct gl_window *hours = gl_xcalloc(nh ? nh : 1, sizeof *hours);
	int64_t *la = gl_xcalloc(nh ? nh : 1, sizeof *la), *lb = gl_xcalloc(nh ? nh : 1, sizeof *lb),
		*li = gl_xcalloc(nh ? nh : 1, sizeof *li);
	struct gl_strbuf sql = GL_STRBUF_INIT, pa = GL_STRBUF_INIT, pb = GL_STRBUF_INIT, pi = GL_STRBUF_INIT;
	struct gl_accounting_query q;
	int rc;

	for (size_t i = 0; i < nh; i++) {
		la[i] = ba->day_s[i / 24] + 3600 * (int64_t)(i % 24);
		lb[i] = la[i] + 3600;
		li[i] = (int64_t)i + 1;
		hours[i] = (struct gl_window){la[i], lb[i]};
	}
	put_i64_array(&pa, la, nh);
	put_i64_array(&pb, lb, nh);
	put_i64_array(&pi, li, nh);
	gl_accounting_query_init(&q, hours, nh, dims, 2, ba->now_s);
	gl_strbuf_puts(&sql, "INSERT INTO usage_hourly_alloc (day, hour, cluster, gpu_model, alloc_us)"
			     " SELECT ($5::date[])[(x.i - 1) / 24 + 1], (x.i - 1) % 24, x.d0, x.d1, x.alloc_us::bigint FROM (");
	alloc_live_sql(&sql, &q, nh, OBS_FIRM, 1);
	gl_strbuf_puts(&sql, ") x");
	if ((rc = gl_db_query(c, "DELETE FROM usage_hourly_alloc WHERE day = ANY($1::date[])", 1, (const char *[]){days},
			      NULL, err)) ||
	    (rc = gl_db_query(c, "DELETE FROM usage_hourly_pending WHERE day = ANY($1::date[])", 1, (const char *[]){days},
			      NULL, err)) ||
	    (rc = gl_db_query(c, sql.p, 5, (const char *[]){pa.p, pb.p, ba->now, pi.p, days}, NULL, err)) ||
	    (rc = gl_fcseries_build_pending(gl_db_store(c), ba->day_s, ba->n, ba->now_s, err)))
		goto out;
	rc = gl_db_query(c, "INSERT INTO usage_hourly_built (day) SELECT unnest($1::date[]) ON CONFLICT DO NOTHING", 1,
			 (const char *[]){days}, NULL, err);
out:
	free(hours);
	free(la);
	free(lb);
	free(li);
	gl_strbuf_fini(&sql);
	gl_strbuf_fini(&pa);
	gl_strbuf_fini(&pb);
	gl_strbuf_fini(&pi);
	return rc;
}

/* Inside a build's transaction: the days' usage_daily and usage_daily_job
 * from the live query (sql_daily, one statement: build_part_make), the
 * owner aggregates and the built markers (their months: build_month_jobs,
 * once for the whole build). */
static int build_days_run(PGconn *c, const struct build_args *ba, const char *sql_daily, struct gl_err *err)
{
	const char *days = gl_strbuf_cstr(&ba->days);
	int rc;
	if ((rc = gl_db_query(c, "DELETE FROM usage_daily WHERE day = ANY($1::date[])", 1, (const char *[]){days}, NULL,
			      err)) ||
	    (rc = gl_db_query(c, "DELETE FROM usage_daily_job WHERE day = ANY($1::date[])", 1, (const char *[]){days},
			      NULL, err)) ||
	    (rc = gl_db_query(c, sql_daily, 5,
			      (const char *[]){gl_strbuf_cstr(&ba->a), gl_strbuf_cstr(&ba->b), ba->now,
					       gl_strbuf_cstr(&ba->i), days},
			      NULL, err)) ||
	    (rc = gl_db_query(c, "DELETE FROM usage_daily_owner WHERE day = ANY($1::date[])", 1, (const char *[]){days},
			      NULL, err)) ||
	    (rc = gl_db_query(c,
			      "INSERT INTO usage_daily_owner (day, d_team, d_project, d_cost_center, d_cluster, d_partition,"
			      " d_gpu_model, d_workload_type, gpu_model, rate, alloc, priced, busy, idle, obs, held)"
			      " SELECT day, d_team, d_project, d_cost_center, d_cluster, d_partition, d_gpu_model,"
			      " d_workload_type, gpu_model, rate, sum(alloc), sum(priced), sum(busy), sum(idle), sum(obs),"
			      " sum(held)"
			      " FROM usage_daily WHERE day = ANY($1::date[])"
			      " GROUP BY day, d_team, d_project, d_cost_center, d_cluster, d_partition, d_gpu_model,"
			      " d_workload_type, gpu_model, rate",
			      1, (const char *[]){days}, NULL, err)) ||
	    (rc = build_hourly(c, ba, err)))
		return rc;
	return gl_db_query(c,
			   "INSERT INTO usage_daily_built (day, built_at) SELECT d, now() FROM unnest($1::date[]) d"
			   " ON CONFLICT (day) DO UPDATE SET built_at = now()",
			   1, (const char *[]){days}, NULL, err);
}

/* The days one connection builds: their parameters and usage_daily query. */
struct build_part {
	struct build_args ba;
	struct gl_strbuf sql;
	PGconn *c;
	int rc;
	struct gl_err err;
};

static void build_part_fini(struct build_part *p)
{
	build_args_fini(&p->ba);
	gl_strbuf_fini(&p->sql);
}

static int build_part_make(struct build_part *p, const int64_t *day_s, size_t n, int64_t now_s, struct gl_err *err)
{
	/* the accounting dimensions (d0 .. d10, usage_daily's) and the job
	 * (d11): byrate is then a row per job, day, model and rate, which
	 * usage_daily_job keeps (/v1/runs, /v1/inference: sql/052, sql/092) */
	static const char *const dims[] = {"team",	"project",   "cost_center", "user",	   "account",
					   "cluster", "partition", "qos",	    "namespace", "gpu_model",
					   "workload_type", "job"};
	struct gl_strbuf arrays = GL_STRBUF_INIT;
	size_t arr_off[8];
	int np = 4, rc;

	if ((rc = build_args_make(&p->ba, day_s, n, now_s, err)))
		return rc;
	/* One statement: the jobs are scanned, their owners resolved and
	 * their days cut once for both tables (a query each took 24 s and
	 * 26 s for 8 days of 27,400 jobs a day). usage_daily sums the same
	 * parts as before, not the per-job sums, so its figures are the
	 * same sums. */
	if ((rc = append_live_split(&p->sql, dims, GL_ARRAY_LEN(dims), n, 1, 0, NULL, OBS_FIRM, &np, &arrays, arr_off, err)))
		goto out;
	/* A job's day is one usage_daily_job row when at most one rate
	 * priced it: its allocated time, priced part and exporter usage
	 * together (jd), not an allocated row (rate NULL) beside a priced
	 * one. Every reader sums alloc, priced and priced x rate, so the
	 * figures are the same with half the rows: the rows' insert was 3 of
	 * a batch's 11 s of CPU. A day across a change of price keeps its row
	 * per rate and its allocated row, summed per rate as before. The
	 * dimensions are the job's own, so jd groups by those it keeps. */
	gl_strbuf_puts(&p->sql,
		       ", dd AS (SELECT day, n FROM unnest($5::date[]) WITH ORDINALITY AS x(day, n)),"
		       " jd AS (SELECT i, d11, d0, d1, d2, d5, d8, d9, gpu_model, min(rate) AS r0, max(rate) AS r1,"
		       " sum(alloc) AS alloc, sum(priced) AS priced, sum(busy) AS busy, sum(idle) AS idle, sum(obs) AS obs"
		       " FROM parts GROUP BY i, d11, d0, d1, d2, d5, d8, d9, gpu_model),"
		       " jobrows AS (INSERT INTO usage_daily_job (day, job_pk, d_team, d_project, d_cost_center, d_cluster,"
		       " d_namespace, d_gpu_model, gpu_model, rate, alloc, priced, busy, idle, obs)"
		       " SELECT dd.day, d11, d0, d1, d2, d5, d8, d9, gpu_model, r0, alloc, priced, busy, idle, obs"
		       " FROM jd JOIN dd ON dd.n = jd.i WHERE r0 IS NOT DISTINCT FROM r1"
		       " UNION ALL SELECT dd.day, d11, d0, d1, d2, d5, d8, d9, gpu_model, rate, sum(alloc), sum(priced),"
		       " sum(busy), sum(idle), sum(obs) FROM parts JOIN dd ON dd.n = parts.i"
		       " WHERE (i, d11) IN (SELECT i, d11 FROM jd WHERE r0 IS DISTINCT FROM r1)"
		       " GROUP BY dd.day, d11, d0, d1, d2, d5, d8, d9, gpu_model, rate)"
		       " INSERT INTO usage_daily (day, d_team, d_project, d_cost_center, d_user, d_account, d_cluster,"
		       " d_partition, d_qos, d_namespace, d_gpu_model, d_workload_type, gpu_model, rate, alloc, priced, held,"
		       " busy, idle, obs)"
		       " SELECT dd.day, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, gpu_model, rate, sum(alloc), sum(priced),"
		       " sum(held), sum(busy), sum(idle), sum(obs) FROM parts JOIN dd ON dd.n = parts.i"
		       " GROUP BY dd.day, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, gpu_model, rate");
out:
	gl_strbuf_fini(&arrays);
	return rc;
}

/* A batch's jobs, their days and per-job rows are a few hundred MB: with
 * the default 4 MB, the per-job aggregate and the sorts went to disk
 * (138 MB for 8 days of 27,400 jobs a day). For the build's transaction
 * only. */
#define BUILD_WORK_MEM "SET LOCAL work_mem = '256MB'"

/* The helper's half of a build, on its own connection and in its own
 * transaction, committed before the lock holder's (see
 * gl_accounting_build_days). */
static void *build_helper(void *arg)
{
	struct build_part *p = arg;
	if (!(p->rc = gl_db_exec(p->c, "BEGIN", &p->err)) && !(p->rc = gl_db_exec(p->c, BUILD_WORK_MEM, &p->err))) {
		if ((p->rc = build_days_run(p->c, &p->ba, gl_strbuf_cstr(&p->sql), &p->err)))
			PQclear(PQexec(p->c, "ROLLBACK"));
		else
			p->rc = gl_db_exec(p->c, "COMMIT", &p->err);
	}
	return NULL;
}

/* With a helper connection, the later half of the days is built on it by a
 * second thread, in a transaction of its own that starts after this one
 * holds the rollup lock and commits before this one releases it: no writer
 * can commit between the helper's snapshot and its commit, as none can
 * between this one's (sql/019's rule, for both). The helper takes no lock:
 * nothing it writes has a staleness trigger. The months are rebuilt here
 * last, once the helper's days are committed and so read. */
int gl_accounting_build_days(PGconn *c, PGconn *helper, const int64_t *day_s, size_t n, int64_t now_s,
			     struct gl_err *err)
{
	struct build_part mine = {0}, theirs = {0};
	struct build_args all = {0};
	size_t na = helper && n > 1 ? (n + 1) / 2 : n;
	pthread_t th;
	int rc, in_txn = 0, started = 0;

	if (!n)
		return 0;
	if ((rc = build_args_make(&all, day_s, n, now_s, err)) || (rc = build_part_make(&mine, day_s, na, now_s, err)) ||
	    (na < n && (rc = build_part_make(&theirs, day_s + na, n - na, now_s, err))))
		goto out;
	if ((rc = gl_db_exec(c, "BEGIN", err)))
		goto out;
	in_txn = 1;
	/* the same lock the staleness triggers take: no change can slip in
	 * between what this build reads and its built markers; idle while the
	 * helper finishes is not a paused process */
	if ((rc = gl_db_exec(c, "SET LOCAL idle_in_transaction_session_timeout = 0", err)) ||
	    (rc = gl_db_exec(c, BUILD_WORK_MEM, err)) ||
	    (rc = gl_db_exec(c, "SELECT pg_advisory_xact_lock(26476, 0)", err)))
		goto out;
	if (na < n) {
		theirs.c = helper;
		started = !pthread_create(&th, NULL, build_helper, &theirs);
		if (!started)
			build_helper(&theirs);
	}
	rc = build_days_run(c, &mine.ba, gl_strbuf_cstr(&mine.sql), err);
	if (started)
		pthread_join(th, NULL);
	if (!rc && na < n && theirs.rc)
		rc = gl_err_set(err, -theirs.rc, "%s", theirs.err.msg);
	if (rc || (rc = build_month_jobs(c, gl_strbuf_cstr(&all.days), err)))
		goto out;
	rc = gl_db_exec(c, "COMMIT", err);
	in_txn = 0;
out:
	if (in_txn)
		PQclear(PQexec(c, "ROLLBACK"));
	build_part_fini(&mine);
	build_part_fini(&theirs);
	build_args_fini(&all);
	return rc;
}

int gl_accounting_build_day(PGconn *c, int64_t day_s, int64_t now_s, struct gl_err *err)
{
	return gl_accounting_build_days(c, NULL, &day_s, 1, now_s, err);
}

/* Days a connection builds at once: the jobs are scanned and their owners
 * resolved once for them (a day alone read every job ending after it: half
 * the table on average), while a batch holds the rollup lock, and so the
 * ingest writers, for its whole build. */
#define BUILD_BATCH_DAYS 8

/* The days to build: the past days some GPU job touched (a job touches the
 * days from its start's to its end's, or yesterday's while it runs: an
 * empty day reads nothing live either) that are not built, the most recent
 * first, as people look at those. The daemon asks every minute, mostly
 * with nothing stale, so the cost follows the days not built (normally a
 * handful, plus the empty ones), not the jobs: each such day is three index
 * probes, a job started on it, an open job started before it, or a finished
 * job started before it and ending on or after it, found by its start
 * within the longest finished job's span (job_span_max, as the build finds
 * them; a day widens it for the session's time zone). */
int gl_accounting_stale_days(PGconn *c, int64_t now_s, int max_days, PGresult **res, struct gl_err *err)
{
	char now[24], lim[16];

	snprintf(now, sizeof now, "%lld", (long long)now_s);
	snprintf(lim, sizeof lim, "%d", max_days);
	return gl_db_query(
		c,
		"WITH y AS (SELECT (to_timestamp($1) AT TIME ZONE 'UTC')::date AS today),"
		" cand AS MATERIALIZED (SELECT g::date AS d FROM y,"
		"  generate_series((SELECT min(start_at) FROM jobs WHERE gpu_milli > 0)::date::timestamp,"
		"   y.today::timestamp - interval '1 day', interval '1 day') g"
		"  WHERE NOT EXISTS (SELECT 1 FROM usage_daily_built b WHERE b.day = g::date))"
		" SELECT extract(epoch FROM cand.d::timestamp)::bigint FROM cand"
		" WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.gpu_milli > 0 AND j.start_at >= cand.d::timestamp"
		"   AND j.start_at < cand.d::timestamp + interval '1 day'"
		"   AND (j.end_at IS NULL OR j.end_at >= cand.d::timestamp))"
		"  OR EXISTS (SELECT 1 FROM jobs j WHERE j.gpu_milli > 0 AND j.end_at IS NULL"
		"   AND j.start_at < cand.d::timestamp)"
		"  OR EXISTS (SELECT 1 FROM jobs j WHERE j.gpu_milli > 0 AND j.end_at >= cand.d::timestamp"
		"   AND j.start_at < cand.d::timestamp AND j.start_at >= coalesce(cand.d::timestamp"
		"    - (SELECT max(span) FROM job_span_max) - interval '1 day', '-infinity'))"
		" ORDER BY cand.d DESC LIMIT $2",
		2, (const char *[]){now, lim}, res, err);
}

int gl_accounting_build_stale(struct gl_store *st, const struct gl_config *helper_cfg, int64_t now_s, int max_days,
			      int *built, int *helped, struct gl_err *err)
{
	PGconn *c = gl_db_conn(st);
	struct gl_store *helper = NULL;
	int batch;
	PGresult *r = NULL;
	int rc;

	*built = 0;
	if (helped)
		*helped = 0;
	if ((rc = gl_accounting_stale_days(c, now_s, max_days, &r, err)))
		goto out;
	/* a second connection (a backend) only for days to share: the daemon
	 * runs this every minute, mostly with nothing stale */
	if (helper_cfg && PQntuples(r) > 1) {
		struct gl_err herr = {0};
		if (gl_store_open(helper_cfg, &helper, &herr))
			helper = NULL;
	}
	batch = helper ? 2 * BUILD_BATCH_DAYS : BUILD_BATCH_DAYS;
	/* the stale days a batch at a time, each in ascending order */
	for (int i = 0; i < PQntuples(r); i += batch) {
		int64_t days[2 * BUILD_BATCH_DAYS];
		int n = PQntuples(r) - i < batch ? PQntuples(r) - i : batch;
		for (int k = 0; k < n; k++)
			days[n - 1 - k] = atoll(PQgetvalue(r, i + k, 0));
		if ((rc = gl_accounting_build_days(c, helper ? gl_db_conn(helper) : NULL, days, (size_t)n, now_s, err)))
			goto out;
		*built += n;
	}
	if (helped && helper && *built > 1)
		*helped = 1;
out:
	gl_store_close(helper);
	PQclear(r);
	return rc;
}
