-- Per GPU per bucket rollup from exporter samples. Keys begin with the GPU so
-- the table can be distributed by GPU; partitioned by day so retention drops
-- partitions instead of deleting rows.
CREATE TABLE gpu_usage (
    gpu_id          bigint NOT NULL,
    bucket          timestamptz NOT NULL,
    cluster_id      integer NOT NULL,
    bucket_s        integer NOT NULL,
    samples         integer NOT NULL,
    busy_samples    integer NOT NULL,
    nodata_samples  integer NOT NULL DEFAULT 0,
    active_sum      double precision NOT NULL DEFAULT 0,  -- sum of engine activity (mean = sum / samples)
    fb_used_max_mib double precision,
    energy_mj       bigint,                                -- reset-aware delta within the bucket
    job_pk          bigint,                                -- attributed job (NULL: unallocated)
    attribution     text,                                  -- 'hpc_job' | 'pod' | 'node-exclusive' | 'node-estimated'
    PRIMARY KEY (gpu_id, bucket)
) PARTITION BY RANGE (bucket);
-- Waste per job (idle hook, chargeback busy/idle split).
CREATE INDEX gpu_usage_job_idx ON gpu_usage (job_pk, bucket) WHERE job_pk IS NOT NULL;

-- Creates the daily partitions covering [from, to) that do not exist yet.
CREATE FUNCTION gl_ensure_usage_partitions(p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d date := (p_from AT TIME ZONE 'UTC')::date;
    n integer := 0;
    pname text;
BEGIN
    WHILE (d::timestamp AT TIME ZONE 'UTC') < p_to LOOP
        pname := format('gpu_usage_%s', to_char(d, 'YYYYMMDD'));
        IF to_regclass(pname) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF gpu_usage FOR VALUES FROM (%L) TO (%L)',
                           pname, d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
            n := n + 1;
        END IF;
        d := d + 1;
    END LOOP;
    RETURN n;
END $$;
