-- gl_job_usage per step in one pass: each gpu_usage_jobs bucket goes to the
-- step holding its start, found by width_bucket over the steps' starts
-- (ascending, not overlapping; a bucket in a gap between steps counts in
-- none). The accounting queries asked gl_job_usage once per step: 2,184
-- scans of the same partitions for 91 days of hourly steps. n is the
-- step's ordinal in p_from. gl_job_usage is now this over one step, so the
-- rule of what is busy, idle and no data is written once.
CREATE FUNCTION gl_job_usage_steps(p_from timestamptz[], p_to timestamptz[])
RETURNS TABLE (n integer, cluster_id integer, job_pk bigint, observed_gpu_s double precision,
               busy_gpu_s double precision, idle_gpu_s double precision, nodata_gpu_s double precision,
               estimated_gpu_s double precision, sample_busy_gpu_s double precision,
               sample_idle_gpu_s double precision, gpu_buckets bigint, attribution text)
LANGUAGE sql STABLE AS $$
    SELECT w.n, u.cluster_id, u.job_pk,
           sum(u.gpu_s),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.busy_samples > 0), 0),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.busy_samples = 0 AND u.samples > u.nodata_samples), 0),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.samples = u.nodata_samples), 0),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.attribution = 'node-estimated'), 0),
           sum(u.busy_gpu_s), sum(u.idle_gpu_s),
           count(*),
           (array_agg(u.attribution ORDER BY gl_attribution_rank(u.attribution) DESC))[1]
      FROM gpu_usage_jobs u
     CROSS JOIN LATERAL (SELECT width_bucket(u.bucket, p_from) AS n) w
     WHERE u.bucket >= p_from[1] AND u.bucket < p_to[cardinality(p_to)]
       AND w.n >= 1 AND u.bucket < p_to[w.n]
     GROUP BY w.n, u.cluster_id, u.job_pk
$$;

CREATE OR REPLACE FUNCTION gl_job_usage(p_from timestamptz DEFAULT '-infinity', p_to timestamptz DEFAULT 'infinity')
RETURNS TABLE (cluster_id integer, job_pk bigint, observed_gpu_s double precision,
               busy_gpu_s double precision, idle_gpu_s double precision, nodata_gpu_s double precision,
               estimated_gpu_s double precision, sample_busy_gpu_s double precision,
               sample_idle_gpu_s double precision, gpu_buckets bigint, attribution text)
LANGUAGE sql STABLE AS $$
    SELECT cluster_id, job_pk, observed_gpu_s, busy_gpu_s, idle_gpu_s, nodata_gpu_s, estimated_gpu_s,
           sample_busy_gpu_s, sample_idle_gpu_s, gpu_buckets, attribution
      FROM gl_job_usage_steps(ARRAY[p_from], ARRAY[p_to])
$$;
