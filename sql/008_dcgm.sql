-- dcgm-exporter ingestion (docs/ingest.md, "dcgm-exporter"): MIG parents in
-- the inventory, time coverage on the rollups, per-job shares of each
-- GPU-bucket, the per-GPU sample state that makes re-ingestion idempotent,
-- and gl_job_usage(), which the accounting API reads.

-- The whole-GPU row of a GPU in MIG mode: its capacity is in its instance
-- rows (same uuid, mig_instance >= 0); counting both would double it.
ALTER TABLE gpus ADD COLUMN mig_parent boolean NOT NULL DEFAULT false;

-- Time each sample stands for (seconds since the GPU's previous sample,
-- capped), so GPU-seconds never depend on a nominal scrape interval.
ALTER TABLE gpu_usage
    ADD COLUMN covered_s       bigint NOT NULL DEFAULT 0,   -- sum of the samples' coverage
    ADD COLUMN busy_s          bigint NOT NULL DEFAULT 0,   -- of which busy samples
    ADD COLUMN idle_s          bigint NOT NULL DEFAULT 0,   -- of which idle samples (rest: no data)
    ADD COLUMN engine_samples  integer NOT NULL DEFAULT 0,  -- samples with engine activity: mean = active_sum / engine_samples
    ADD COLUMN power_max_w     double precision,
    ADD COLUMN energy_resets   integer NOT NULL DEFAULT 0,  -- TOTAL_ENERGY_CONSUMPTION went backwards
    ADD COLUMN xid_last        bigint,
    ADD COLUMN last_sample_at  timestamptz;

-- Per job share of a GPU-bucket. A GPU shared by several jobs (hpc_job
-- repeats, node-level estimates) is split between them, never summed: the
-- gpu_s of one (gpu_id, bucket) add up to at most the row's covered_s.
CREATE TABLE gpu_usage_jobs (
    gpu_id          bigint NOT NULL,
    bucket          timestamptz NOT NULL,
    job_pk          bigint NOT NULL,
    cluster_id      integer NOT NULL,
    attribution     text NOT NULL,        -- best seen: 'hpc_job' | 'pod' | 'node-exclusive' | 'node-estimated'
    samples         integer NOT NULL,     -- samples that gave the job a share
    busy_samples    integer NOT NULL,
    nodata_samples  integer NOT NULL,
    gpu_s           double precision NOT NULL,  -- sum of coverage x share
    busy_gpu_s      double precision NOT NULL,  -- of which busy samples
    idle_gpu_s      double precision NOT NULL,  -- of which idle samples
    PRIMARY KEY (gpu_id, bucket, job_pk)
) PARTITION BY RANGE (bucket);
CREATE INDEX gpu_usage_jobs_job_idx ON gpu_usage_jobs (job_pk, bucket);

-- Last sample applied per GPU: a sample at or before it is not applied again
-- (re-ingesting a scrape changes nothing), and the energy counter's last
-- value carries the reset-aware delta across scrapes and buckets.
CREATE TABLE dcgm_gpu_state (
    gpu_id          bigint PRIMARY KEY,
    cluster_id      integer NOT NULL,
    last_sample_at  timestamptz NOT NULL,
    energy_last_mj  double precision
);

-- Rank of an attribution kind, best first.
CREATE FUNCTION gl_attribution_rank(kind text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE kind WHEN 'hpc_job' THEN 1 WHEN 'pod' THEN 2 WHEN 'node-exclusive' THEN 3
                     WHEN 'node-estimated' THEN 4 ELSE 5 END
$$;

-- gpu_usage and gpu_usage_jobs partitions for the days covering [from, to).
CREATE FUNCTION gl_ensure_dcgm_partitions(p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d date := (p_from AT TIME ZONE 'UTC')::date;
    n integer := gl_ensure_usage_partitions(p_from, p_to);
    pname text;
BEGIN
    WHILE (d::timestamp AT TIME ZONE 'UTC') < p_to LOOP
        pname := format('gpu_usage_jobs_%s', to_char(d, 'YYYYMMDD'));
        IF to_regclass(pname) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF gpu_usage_jobs FOR VALUES FROM (%L) TO (%L)',
                           pname, d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
            n := n + 1;
        END IF;
        d := d + 1;
    END LOOP;
    RETURN n;
END $$;

-- Busy and idle GPU-seconds per job from the exporter, over the buckets that
-- start in [p_from, p_to). The rule of DESIGN.md ("idle when below threshold
-- for the whole bucket") applied to the job's part of each GPU-bucket:
--   busy   : at least one of the job's samples in the GPU-bucket was busy
--   idle   : none busy, at least one with an activity signal
--   nodata : no sample had a signal
-- and each part counts its gpu_s (coverage x share) whole. observed_gpu_s =
-- busy + idle + nodata. estimated_gpu_s is the part attributed by the
-- node-level estimate (no label named the job). sample_busy_gpu_s /
-- sample_idle_gpu_s are the per-sample split, for finer reports.
CREATE FUNCTION gl_job_usage(p_from timestamptz DEFAULT '-infinity', p_to timestamptz DEFAULT 'infinity')
RETURNS TABLE (cluster_id integer, job_pk bigint, observed_gpu_s double precision,
               busy_gpu_s double precision, idle_gpu_s double precision, nodata_gpu_s double precision,
               estimated_gpu_s double precision, sample_busy_gpu_s double precision,
               sample_idle_gpu_s double precision, gpu_buckets bigint, attribution text)
LANGUAGE sql STABLE AS $$
    SELECT u.cluster_id, u.job_pk,
           sum(u.gpu_s),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.busy_samples > 0), 0),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.busy_samples = 0 AND u.samples > u.nodata_samples), 0),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.samples = u.nodata_samples), 0),
           coalesce(sum(u.gpu_s) FILTER (WHERE u.attribution = 'node-estimated'), 0),
           sum(u.busy_gpu_s), sum(u.idle_gpu_s),
           count(*),
           (array_agg(u.attribution ORDER BY gl_attribution_rank(u.attribution) DESC))[1]
      FROM gpu_usage_jobs u
     WHERE u.bucket >= p_from AND u.bucket < p_to
     GROUP BY u.cluster_id, u.job_pk
$$;

-- The same over all time, for ad-hoc queries.
CREATE VIEW job_gpu_usage AS SELECT * FROM gl_job_usage();
