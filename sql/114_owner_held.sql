-- usage_daily_owner carries the physical capacity held (usage_daily.held)
-- too, so the fleet idle of a built day (chargeback's idle and shareIdle,
-- /v1/idle) sums a few rows a day per cluster, partition and model instead
-- of every usage_daily row of the day (one per user x account x QoS x
-- namespace): a year of 2,500 GPUs read 730,000 of them, 1.5 s of the year's
-- 1.6 s (docs/bench.md). Built with the other owner sums (gl_acct_build_day).
ALTER TABLE usage_daily_owner ADD COLUMN held bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN usage_daily_owner.held IS 'micro-GPU-seconds of physical capacity held (rows with rate IS NULL)';

-- The days built before: their owner rows made again from usage_daily, as
-- the build makes them (every group of usage_daily is one owner row).
DELETE FROM usage_daily_owner;
INSERT INTO usage_daily_owner (day, d_team, d_project, d_cost_center, d_cluster, d_partition, d_gpu_model,
                               d_workload_type, gpu_model, rate, alloc, priced, busy, idle, obs, held)
SELECT day, d_team, d_project, d_cost_center, d_cluster, d_partition, d_gpu_model, d_workload_type, gpu_model,
       rate, sum(alloc), sum(priced), sum(busy), sum(idle), sum(obs), sum(held)
FROM usage_daily
GROUP BY day, d_team, d_project, d_cost_center, d_cluster, d_partition, d_gpu_model, d_workload_type, gpu_model, rate;

-- A central database's copies of its shards' usage_daily_owner (sql/059,
-- gl_shard_import) get the column too (it is local metadata: no shard is
-- asked; the shards run this migration themselves), and the fleet schemas
-- whose views listed the old columns are made again on their next use.
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT n.nspname FROM pg_class k JOIN pg_namespace n ON n.oid = k.relnamespace
             WHERE k.relkind = 'f' AND k.relname = 'usage_daily_owner' AND n.nspname LIKE 'gl\_shard\_%' LOOP
        EXECUTE format('ALTER FOREIGN TABLE %I.usage_daily_owner ADD COLUMN held bigint', s.nspname);
    END LOOP;
    IF to_regprocedure('gl_fleet_drop_all()') IS NOT NULL THEN
        PERFORM gl_fleet_drop_all();
    END IF;
END $$;
