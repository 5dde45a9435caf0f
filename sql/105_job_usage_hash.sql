-- The live path's exporter usage, grouped by hashing, not by sorting a
-- day's rows on disk. Every live window that includes today reads that
-- day's gpu_usage_jobs rows (a day of 2,500 GPUs at 5-minute buckets:
-- 720,000 rows), and two things made PostgreSQL sort them all by step and
-- job before grouping (2.1 s of a 2.3 s request):
-- * the ordered array_agg that picked the attribution can only be fed
--   sorted rows; plain aggregates pick the same one (the highest
--   gl_attribution_rank; every kind written has its own rank);
-- * the steps' bounds came from a CTE, so the planner did not know them and
--   guessed 400 rows. gl_steps_starts / gl_steps_ends are immutable, so a
--   query that passes them its parameters gets the bounds folded into
--   constants of its plan (src/store/accounting.c, put_live_usage).

-- The steps' starts in ascending order, as timestamps (epoch seconds in).
CREATE FUNCTION gl_steps_starts(p_a bigint[]) RETURNS timestamptz[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT array_agg(to_timestamp(a) ORDER BY a) FROM unnest(p_a) a
$$;

-- Their ends, in the order of their starts.
CREATE FUNCTION gl_steps_ends(p_a bigint[], p_b bigint[]) RETURNS timestamptz[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT array_agg(to_timestamp(b) ORDER BY a) FROM unnest(p_a, p_b) x(a, b)
$$;

CREATE OR REPLACE FUNCTION gl_job_usage_steps(p_from timestamptz[], p_to timestamptz[])
RETURNS TABLE (n integer, cluster_id integer, job_pk bigint, observed_gpu_s double precision,
               busy_gpu_s double precision, idle_gpu_s double precision, nodata_gpu_s double precision,
               estimated_gpu_s double precision, sample_busy_gpu_s double precision,
               sample_idle_gpu_s double precision, gpu_buckets bigint, attribution text,
               held_idle_gpu_s double precision)
LANGUAGE sql STABLE AS $$
    SELECT w.n, u.cluster_id, u.job_pk,
           sum(u.gpu_s),
           sum(u.busy_gpu_s),
           sum(u.idle_gpu_s),
           greatest(sum(u.gpu_s) - sum(u.busy_gpu_s) - sum(u.idle_gpu_s), 0),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.attribution = 'node-estimated'), 0),
           sum(u.busy_gpu_s), sum(u.idle_gpu_s),
           count(*),
           CASE max(gl_attribution_rank(u.attribution))
               WHEN 1 THEN 'hpc_job' WHEN 2 THEN 'pod' WHEN 3 THEN 'node-exclusive' WHEN 4 THEN 'node-estimated'
               ELSE max(u.attribution) FILTER (WHERE gl_attribution_rank(u.attribution) = 5)
           END,
           sum(u.held_idle_gpu_s)
      FROM gpu_usage_jobs u
     CROSS JOIN LATERAL (SELECT width_bucket(u.bucket, p_from) AS n) w
     WHERE u.bucket >= p_from[1] AND u.bucket < p_to[cardinality(p_to)]
       AND w.n >= 1 AND u.bucket < p_to[w.n]
     GROUP BY w.n, u.cluster_id, u.job_pk
$$;
