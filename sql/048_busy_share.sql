-- Exporter usage by the busy share of duty-cycle counters, the memory held
-- by idle GPUs, each GPU's source, and late attribution of unlabelled
-- samples (docs/ingest.md, "Busy share" and "Jobs that arrive after their
-- samples").

-- Which exporter or tool reported a GPU: 'dcgm' (dcgm-exporter),
-- 'nvidia_gpu_exporter' (nvidia_smi_* metrics), 'amd' (AMD Device Metrics
-- Exporter), 'nvidia-smi' (captures of nvidia-smi itself). NULL: written
-- before this migration (all of them by dcgm-exporter's scrape path).
ALTER TABLE gpus ADD COLUMN source text;

-- Idle time during which the GPU held framebuffer (idle.held_memory_mib):
-- memory allocated, no kernels running. Part of idle_s / idle_gpu_s.
ALTER TABLE gpu_usage ADD COLUMN held_idle_s bigint NOT NULL DEFAULT 0;
ALTER TABLE gpu_usage_jobs ADD COLUMN held_idle_gpu_s double precision NOT NULL DEFAULT 0;

-- A waiting sample's split of the time it covers, in milliseconds (busy =
-- duty x covered time): rows written before keep busy / nodata and are read
-- as a whole sample busy or idle. Rows of unlabelled nodes (left_share not
-- NULL) wait for the jobs of their node: left_share is the share of the GPU
-- no job has yet, node_gpus the GPUs the node reported in that round (the
-- node rule's denominator), claimed the jobs that have their share.
ALTER TABLE dcgm_pending
    ADD COLUMN busy_ms    bigint,
    ADD COLUMN idle_ms    bigint,
    ADD COLUMN held_ms    bigint,
    ADD COLUMN left_share double precision,
    ADD COLUMN node_gpus  integer,
    ADD COLUMN claimed    bigint[];
-- the jobs of an ingest find the samples of their nodes and hours
CREATE INDEX dcgm_pending_node_idx ON dcgm_pending (cluster_id, node, at) WHERE left_share IS NOT NULL;

-- Busy and idle are the busy share of the samples (duty x the time each
-- covers), summed; no data is the rest of the observed time. Until 047 a
-- job's part of a GPU-bucket counted whole as busy when one of its samples
-- was busy ("busy if > 0"): a GPU running kernels half the time read as
-- busy all the time. held_idle_gpu_s is the part of idle with memory held.
-- sample_busy_gpu_s / sample_idle_gpu_s stay, equal to busy / idle.
DROP VIEW job_gpu_usage;
DROP FUNCTION gl_job_usage(timestamptz, timestamptz);
DROP FUNCTION gl_job_usage_steps(timestamptz[], timestamptz[]);

CREATE FUNCTION gl_job_usage_steps(p_from timestamptz[], p_to timestamptz[])
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
           (array_agg(u.attribution ORDER BY gl_attribution_rank(u.attribution) DESC))[1],
           sum(u.held_idle_gpu_s)
      FROM gpu_usage_jobs u
     CROSS JOIN LATERAL (SELECT width_bucket(u.bucket, p_from) AS n) w
     WHERE u.bucket >= p_from[1] AND u.bucket < p_to[cardinality(p_to)]
       AND w.n >= 1 AND u.bucket < p_to[w.n]
     GROUP BY w.n, u.cluster_id, u.job_pk
$$;

CREATE FUNCTION gl_job_usage(p_from timestamptz DEFAULT '-infinity', p_to timestamptz DEFAULT 'infinity')
RETURNS TABLE (cluster_id integer, job_pk bigint, observed_gpu_s double precision,
               busy_gpu_s double precision, idle_gpu_s double precision, nodata_gpu_s double precision,
               estimated_gpu_s double precision, sample_busy_gpu_s double precision,
               sample_idle_gpu_s double precision, gpu_buckets bigint, attribution text,
               held_idle_gpu_s double precision)
LANGUAGE sql STABLE AS $$
    SELECT cluster_id, job_pk, observed_gpu_s, busy_gpu_s, idle_gpu_s, nodata_gpu_s, estimated_gpu_s,
           sample_busy_gpu_s, sample_idle_gpu_s, gpu_buckets, attribution, held_idle_gpu_s
      FROM gl_job_usage_steps(ARRAY[p_from], ARRAY[p_to])
$$;

CREATE VIEW job_gpu_usage AS SELECT * FROM gl_job_usage();

-- Claims the waiting samples of a cluster for the jobs that match them now,
-- as the ingest would have attributed them had the jobs been known (sql/020):
-- 1. labelled samples (hpc_job on the job's node, else pods; a GPU shared by
--    several jobs split equally), by all jobs of the cluster;
-- 2. samples of unlabelled nodes, by the jobs this transaction wrote
--    (updated_at = now()) that ran on the node at the sample's time, by the
--    node rule of the ingest (one job holding at least every GPU of the
--    node takes it whole, 'node-exclusive'; else each its per-node hold
--    over max(what the node's jobs hold, the node's GPUs),
--    'node-estimated'), counting the jobs that had their share already, and
--    never more than the share left.
-- A job's share never covers time before its start; each share splits the
-- sample's busy share (duty x time), idle and held idle as the ingest does.
-- Rows fully claimed are dropped; the rest wait six hours (labelled) or one
-- hour (unlabelled: most are idle GPUs no job will claim) behind the
-- cluster's newest sample.
CREATE OR REPLACE FUNCTION gl_dcgm_claim_pending(p_cluster integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    newest timestamptz;
    lo timestamptz;
BEGIN
    SELECT max(at) INTO newest FROM dcgm_pending WHERE cluster_id = p_cluster;
    IF newest IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM dcgm_pending WHERE cluster_id = p_cluster AND at < newest - interval '1 hour'
       AND (left_share IS NOT NULL OR at < newest - interval '6 hours');
    CREATE TEMP TABLE IF NOT EXISTS gl_dcgm_claim (gpu_id bigint, at timestamptz, job_pk bigint, kind text,
        bucket timestamptz, dt_s bigint, busy boolean, nodata boolean, busy_ms bigint, idle_ms bigint,
        held_ms bigint, start_at timestamptz, share double precision, node_row boolean) ON COMMIT DELETE ROWS;
    TRUNCATE gl_dcgm_claim;
    SELECT min(at) INTO lo FROM dcgm_pending WHERE cluster_id = p_cluster AND left_share IS NULL;
    IF lo IS NOT NULL THEN
        INSERT INTO gl_dcgm_claim
        WITH cj AS (
            SELECT j.job_pk, j.job_id, j.job_id_raw, j.het_job_id::text AS het, j.namespace, j.name, j.nodes,
                   j.start_at, j.end_at
              FROM jobs j
             WHERE j.cluster_id = p_cluster AND j.gpu_milli > 0 AND j.start_at IS NOT NULL
               AND (j.end_at IS NULL OR j.end_at > lo)
        ), lp AS (
            SELECT * FROM dcgm_pending WHERE cluster_id = p_cluster AND left_share IS NULL
        ), pl AS (
            SELECT p.gpu_id, p.at, p.node, l.v FROM lp p, unnest(p.jobs) AS l(v)
        ), pp AS (
            SELECT p.gpu_id, p.at, l.v FROM lp p, unnest(p.pods) AS l(v)
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
        )
        SELECT b.gpu_id, b.at, b.job_pk, CASE b.rk WHEN 1 THEN 'hpc_job' ELSE 'pod' END, p.bucket, p.dt_s, p.busy,
               p.nodata, p.busy_ms, p.idle_ms, p.held_ms, j.start_at,
               1.0::float8 / count(*) OVER (PARTITION BY b.gpu_id, b.at), false
          FROM best b
          JOIN lp p ON p.gpu_id = b.gpu_id AND p.at = b.at
          JOIN jobs j ON j.job_pk = b.job_pk
         WHERE b.rk = b.best_rk;
    END IF;
    INSERT INTO gl_dcgm_claim
    WITH cj AS (
        SELECT j.job_pk, nd.node, j.start_at, j.end_at
          FROM jobs j CROSS JOIN LATERAL unnest(j.nodes) AS nd(node)
         WHERE j.cluster_id = p_cluster AND j.updated_at = now() AND j.gpu_milli > 0 AND j.start_at IS NOT NULL
    ), pn AS (
        SELECT DISTINCT p.gpu_id, p.at
          FROM cj JOIN dcgm_pending p ON p.cluster_id = p_cluster AND p.left_share IS NOT NULL
           AND p.node = cj.node AND p.at >= cj.start_at AND (cj.end_at IS NULL OR p.at < cj.end_at)
         WHERE NOT (cj.job_pk = ANY (p.claimed))
    ), win AS (
        SELECT min(at) AS lo, max(at) AS hi FROM pn
    ), rj AS (
        SELECT j.job_pk, nd.node, j.start_at, j.end_at,
               (coalesce(j.phys_micro, j.gpu_micro))::float8 / greatest(cardinality(j.nodes), 1)::float8 AS per_node
          FROM win, jobs j CROSS JOIN LATERAL unnest(j.nodes) AS nd(node)
         WHERE j.cluster_id = p_cluster AND j.gpu_milli > 0 AND j.start_at IS NOT NULL AND j.start_at <= win.hi
           AND (j.end_at IS NULL OR j.end_at > win.lo)
    ), aj AS (
        SELECT p.gpu_id, p.at, p.bucket, p.dt_s, p.busy, p.nodata, p.busy_ms, p.idle_ms, p.held_ms,
               p.node_gpus::float8 * 1000000 AS cap, p.left_share, rj.job_pk, rj.start_at, rj.per_node,
               rj.job_pk = ANY (p.claimed) AS had
          FROM pn JOIN dcgm_pending p ON p.gpu_id = pn.gpu_id AND p.at = pn.at
          JOIN rj ON rj.node = p.node AND rj.start_at <= p.at AND (rj.end_at IS NULL OR rj.end_at > p.at)
         WHERE rj.per_node > 0
    ), tot AS (
        SELECT gpu_id, at, sum(per_node) AS s, count(*) AS holders FROM aj GROUP BY 1, 2
    ), nw AS (
        SELECT aj.*, t.holders = 1 AND aj.per_node >= aj.cap AS excl,
               CASE WHEN t.holders = 1 AND aj.per_node >= aj.cap THEN 1.0::float8
                    ELSE aj.per_node / greatest(t.s, aj.cap) END AS share0
          FROM aj JOIN tot t ON t.gpu_id = aj.gpu_id AND t.at = aj.at
         WHERE NOT aj.had
    ), sc AS (
        SELECT nw.*, sum(share0) OVER (PARTITION BY gpu_id, at) AS want FROM nw
    )
    SELECT gpu_id, at, job_pk, CASE WHEN excl THEN 'node-exclusive' ELSE 'node-estimated' END, bucket, dt_s,
           busy, nodata, busy_ms, idle_ms, held_ms, start_at,
           CASE WHEN want > left_share THEN share0 * left_share / want ELSE share0 END, true
      FROM sc;
    SELECT count(*) INTO n FROM (SELECT DISTINCT gpu_id, at FROM gl_dcgm_claim) x;
    IF n = 0 THEN
        RETURN 0;
    END IF;
    INSERT INTO gpu_usage_jobs (gpu_id, bucket, job_pk, cluster_id, attribution, samples, busy_samples,
                                nodata_samples, gpu_s, busy_gpu_s, idle_gpu_s, held_idle_gpu_s)
    SELECT gpu_id, bucket, job_pk, p_cluster, (array_agg(kind ORDER BY gl_attribution_rank(kind)))[1], count(*),
           sum(busy::integer), sum(nodata::integer), sum(gs), sum(gs * bf), sum(gs * idf), sum(gs * hf)
      FROM (SELECT c.*, least(c.dt_s::float8, extract(epoch FROM c.at - c.start_at)::float8) * c.share AS gs,
                   CASE WHEN c.dt_s <= 0 THEN 0
                        WHEN c.busy_ms IS NULL THEN c.busy::integer::float8
                        ELSE c.busy_ms::float8 / (c.dt_s * 1000)::float8 END AS bf,
                   CASE WHEN c.dt_s <= 0 THEN 0
                        WHEN c.idle_ms IS NULL THEN (NOT c.busy AND NOT c.nodata)::integer::float8
                        ELSE c.idle_ms::float8 / (c.dt_s * 1000)::float8 END AS idf,
                   CASE WHEN c.dt_s <= 0 OR c.held_ms IS NULL THEN 0
                        ELSE c.held_ms::float8 / (c.dt_s * 1000)::float8 END AS hf
              FROM gl_dcgm_claim c WHERE c.at >= c.start_at) g
     GROUP BY gpu_id, bucket, job_pk
    ON CONFLICT (gpu_id, bucket, job_pk) DO UPDATE SET
        attribution = CASE WHEN gl_attribution_rank(EXCLUDED.attribution)
                                < gl_attribution_rank(gpu_usage_jobs.attribution)
                           THEN EXCLUDED.attribution ELSE gpu_usage_jobs.attribution END,
        samples = gpu_usage_jobs.samples + EXCLUDED.samples,
        busy_samples = gpu_usage_jobs.busy_samples + EXCLUDED.busy_samples,
        nodata_samples = gpu_usage_jobs.nodata_samples + EXCLUDED.nodata_samples,
        gpu_s = gpu_usage_jobs.gpu_s + EXCLUDED.gpu_s,
        busy_gpu_s = gpu_usage_jobs.busy_gpu_s + EXCLUDED.busy_gpu_s,
        idle_gpu_s = gpu_usage_jobs.idle_gpu_s + EXCLUDED.idle_gpu_s,
        held_idle_gpu_s = gpu_usage_jobs.held_idle_gpu_s + EXCLUDED.held_idle_gpu_s;
    -- labelled rows are claimed whole; node rows keep what no job took yet
    DELETE FROM dcgm_pending d USING (SELECT DISTINCT gpu_id, at FROM gl_dcgm_claim WHERE NOT node_row) x
     WHERE d.gpu_id = x.gpu_id AND d.at = x.at;
    UPDATE dcgm_pending d SET left_share = d.left_share - x.took, claimed = d.claimed || x.jobs
      FROM (SELECT gpu_id, at, sum(share) AS took, array_agg(job_pk) AS jobs FROM gl_dcgm_claim WHERE node_row
             GROUP BY 1, 2) x
     WHERE d.gpu_id = x.gpu_id AND d.at = x.at;
    DELETE FROM dcgm_pending d USING (SELECT DISTINCT gpu_id, at FROM gl_dcgm_claim WHERE node_row) x
     WHERE d.gpu_id = x.gpu_id AND d.at = x.at AND d.left_share <= 1e-9;
    -- the row's job, as the ingest keeps it: the largest share of the bucket
    UPDATE gpu_usage u SET job_pk = d.job_pk, attribution = d.attribution
      FROM (SELECT DISTINCT ON (j.gpu_id, j.bucket) j.gpu_id, j.bucket, j.job_pk, j.attribution
              FROM gpu_usage_jobs j
              JOIN (SELECT DISTINCT gpu_id, bucket FROM gl_dcgm_claim) c ON c.gpu_id = j.gpu_id AND c.bucket = j.bucket
             ORDER BY j.gpu_id, j.bucket, j.gpu_s DESC, j.job_pk) d
     WHERE u.gpu_id = d.gpu_id AND u.bucket = d.bucket
       AND (u.job_pk IS DISTINCT FROM d.job_pk OR u.attribution IS DISTINCT FROM d.attribution);
    TRUNCATE gl_dcgm_claim;
    RETURN n;
END $$;
