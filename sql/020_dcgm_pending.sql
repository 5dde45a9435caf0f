-- Samples of a labelled GPU (hpc_job or pod labels) that named a job the
-- database did not know yet when the scrape was ingested: the exporter is
-- scraped every few seconds, sacct polled every few minutes, so the first
-- minutes of every job used to stay unattributed for good. They wait here
-- and the next jobs merge of the cluster claims them in its own transaction
-- (gl_dcgm_claim_pending); a sample nobody claims is dropped once the
-- cluster has samples six hours newer (by its next scrape or jobs
-- ingest): sacct lags by
-- minutes, and a fleet whose labels name jobs that are never ingested must
-- not grow this table without end.
CREATE TABLE dcgm_pending (
    gpu_id      bigint NOT NULL,
    at          timestamptz NOT NULL,   -- the sample time
    bucket      timestamptz NOT NULL,   -- its gpu_usage bucket
    cluster_id  integer NOT NULL,
    node        text NOT NULL,
    jobs        text[] NOT NULL,        -- its hpc_job label values
    pods        text[] NOT NULL,        -- its pods as 'namespace/pod'
    dt_s        bigint NOT NULL,        -- the time the sample covers (as gpu_usage.covered_s)
    busy        boolean NOT NULL,
    nodata      boolean NOT NULL,
    PRIMARY KEY (gpu_id, at)
);
CREATE INDEX dcgm_pending_cluster_idx ON dcgm_pending (cluster_id, at);

-- Attributes the pending samples of a cluster that now match a job, as the
-- ingest would have (hpc_job labels on the job's node first, else pods; a
-- GPU shared by several jobs split equally; never time before the job's
-- start), into gpu_usage_jobs, and drops them from dcgm_pending. Returns
-- the samples claimed. Labels meet job ids through hash joins on equality
-- (display, raw and het leader id), so the cost stays linear in the
-- pending samples and the cluster's jobs of those hours.
CREATE FUNCTION gl_dcgm_claim_pending(p_cluster integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    lo timestamptz;
    gids bigint[];
    bks timestamptz[];
BEGIN
    -- six hours behind the newest sample, not the clock: files of past
    -- days are ingested too
    DELETE FROM dcgm_pending WHERE cluster_id = p_cluster
       AND at < (SELECT max(at) FROM dcgm_pending WHERE cluster_id = p_cluster) - interval '6 hours';
    SELECT min(at) INTO lo FROM dcgm_pending WHERE cluster_id = p_cluster;
    IF lo IS NULL THEN
        RETURN 0;
    END IF;
    WITH cj AS (
        SELECT j.job_pk, j.job_id, j.job_id_raw, j.het_job_id::text AS het, j.namespace, j.name, j.nodes,
               j.start_at, j.end_at
          FROM jobs j
         WHERE j.cluster_id = p_cluster AND j.gpu_milli > 0 AND j.start_at IS NOT NULL
           AND (j.end_at IS NULL OR j.end_at > lo)
    ), pl AS (
        SELECT p.gpu_id, p.at, p.node, l.v FROM dcgm_pending p, unnest(p.jobs) AS l(v) WHERE p.cluster_id = p_cluster
    ), pp AS (
        SELECT p.gpu_id, p.at, l.v FROM dcgm_pending p, unnest(p.pods) AS l(v) WHERE p.cluster_id = p_cluster
    ), hit AS (
        SELECT pl.gpu_id, pl.at, cj.job_pk, 1 AS rk FROM pl JOIN cj ON cj.job_id = pl.v
         WHERE pl.node = ANY (cj.nodes) AND cj.start_at <= pl.at AND (cj.end_at IS NULL OR cj.end_at > pl.at)
        UNION
        SELECT pl.gpu_id, pl.at, cj.job_pk, 1 FROM pl JOIN cj ON cj.job_id_raw = pl.v
         WHERE pl.node = ANY (cj.nodes) AND cj.start_at <= pl.at AND (cj.end_at IS NULL OR cj.end_at > pl.at)
        UNION
        SELECT pl.gpu_id, pl.at, cj.job_pk, 1 FROM pl JOIN cj ON cj.het = pl.v
         WHERE pl.node = ANY (cj.nodes) AND cj.start_at <= pl.at AND (cj.end_at IS NULL OR cj.end_at > pl.at)
        UNION
        SELECT pp.gpu_id, pp.at, cj.job_pk, 2 FROM pp JOIN cj ON cj.namespace || '/' || cj.name = pp.v
         WHERE cj.start_at <= pp.at AND (cj.end_at IS NULL OR cj.end_at > pp.at)
        UNION
        SELECT pp.gpu_id, pp.at, cj.job_pk, 2 FROM pp JOIN cj ON cj.namespace || '/' || cj.job_id = pp.v
         WHERE cj.start_at <= pp.at AND (cj.end_at IS NULL OR cj.end_at > pp.at)
    ), best AS (
        SELECT DISTINCT ON (h.gpu_id, h.at, h.job_pk) h.*, min(h.rk) OVER (PARTITION BY h.gpu_id, h.at) AS best_rk
          FROM hit h ORDER BY h.gpu_id, h.at, h.job_pk, h.rk
    ), s AS (
        SELECT b.gpu_id, b.at, b.job_pk, b.rk, p.bucket, p.dt_s, p.busy, p.nodata, j.start_at,
               count(*) OVER (PARTITION BY b.gpu_id, b.at) AS nshare
          FROM best b
          JOIN dcgm_pending p ON p.gpu_id = b.gpu_id AND p.at = b.at
          JOIN jobs j ON j.job_pk = b.job_pk
         WHERE b.rk = b.best_rk
    ), g AS (
        SELECT s.*, greatest(0, least(s.dt_s::float8, extract(epoch FROM s.at - s.start_at)::float8)) / s.nshare AS gs
          FROM s
    ), agg AS (
        SELECT gpu_id, bucket, job_pk, min(rk) AS rk, count(*) AS samples, sum(busy::integer) AS busy_samples,
               sum(nodata::integer) AS nodata_samples, sum(gs) AS gpu_s,
               sum(CASE WHEN busy THEN gs ELSE 0 END) AS busy_gpu_s,
               sum(CASE WHEN NOT busy AND NOT nodata THEN gs ELSE 0 END) AS idle_gpu_s
          FROM g GROUP BY gpu_id, bucket, job_pk
    ), ins AS (
        INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples, busy_samples,
                                    nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s)
        SELECT gpu_id, bucket, job_pk, p_cluster, CASE rk WHEN 1 THEN 'hpc_job' ELSE 'pod' END, samples,
               busy_samples, nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s
          FROM agg
        ON CONFLICT (gpu_id, bucket, job_pk) DO UPDATE SET
            attribution = CASE WHEN gl_attribution_rank(EXCLUDED.attribution)
                                    < gl_attribution_rank(gpu_usage_jobs.attribution)
                               THEN EXCLUDED.attribution ELSE gpu_usage_jobs.attribution END,
            samples = gpu_usage_jobs.samples + EXCLUDED.samples,
            busy_samples = gpu_usage_jobs.busy_samples + EXCLUDED.busy_samples,
            nodata_samples = gpu_usage_jobs.nodata_samples + EXCLUDED.nodata_samples,
            gpu_s = gpu_usage_jobs.gpu_s + EXCLUDED.gpu_s,
            busy_gpu_s = gpu_usage_jobs.busy_gpu_s + EXCLUDED.busy_gpu_s,
            idle_gpu_s = gpu_usage_jobs.idle_gpu_s + EXCLUDED.idle_gpu_s
        RETURNING 1
    ), del AS (
        DELETE FROM dcgm_pending d USING (SELECT DISTINCT gpu_id, at FROM s) x
         WHERE d.gpu_id = x.gpu_id AND d.at = x.at
        RETURNING d.gpu_id, d.bucket
    )
    -- (ins runs to completion whether read or not, as every modifying CTE)
    SELECT count(*), array_agg(gpu_id), array_agg(bucket) INTO n, gids, bks FROM del;
    IF n > 0 THEN
        -- the row's job, as the ingest keeps it: the largest share of the bucket
        UPDATE gpu_usage u SET job_pk = d.job_pk, attribution = d.attribution
          FROM (SELECT DISTINCT ON (j.gpu_id, j.bucket) j.gpu_id, j.bucket, j.job_pk, j.attribution
                  FROM gpu_usage_jobs j
                  JOIN (SELECT DISTINCT * FROM unnest(gids, bks) AS c(gpu_id, bucket)) c
                    ON c.gpu_id = j.gpu_id AND c.bucket = j.bucket
                 ORDER BY j.gpu_id, j.bucket, j.gpu_s DESC, j.job_pk) d
         WHERE u.gpu_id = d.gpu_id AND u.bucket = d.bucket
           AND (u.job_pk IS DISTINCT FROM d.job_pk OR u.attribution IS DISTINCT FROM d.attribution);
    END IF;
    RETURN n;
END $$;
