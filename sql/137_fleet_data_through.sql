-- 137: how far each cluster's data goes (a response's data_through), one
-- view that a shard answers whole (docs/scale.md, "What it costs").
--
-- The rule read ingest_state, sched_snapshots and clusters: over a central's
-- foreign partitions that is three remote cursors on every shard a request
-- (each a DECLARE, FETCH and CLOSE round trip, the closes one shard after
-- the other). Every row is one cluster's, so the shards' rows unioned are
-- the fleet's: a central reads each shard's view as one foreign table.
CREATE VIEW ingest_data_through AS
SELECT c.name AS cluster, x.source, x.data, extract(epoch FROM x.t)::bigint AS through_s
FROM (SELECT s.cluster_id, s.source, CASE s.source WHEN 'dcgm' THEN 'usage' ELSE 'jobs' END AS data,
             greatest(s.watermark, s.observed_to) AS t
      FROM ingest_state s
      UNION ALL
      -- node snapshots: the newest per cluster and source (their primary key)
      SELECT n.cluster_id, n.source, 'inventory', max(n.taken_at) FROM sched_snapshots n
      GROUP BY n.cluster_id, n.source) x
JOIN clusters c USING (cluster_id)
WHERE x.t IS NOT NULL;

-- On a central: the view is one of the shards' unioned relations.
CREATE OR REPLACE FUNCTION gl_fleet_unioned() RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY['usage_daily', 'usage_daily_owner', 'ingest_data_through']
$$;

CREATE OR REPLACE FUNCTION gl_shard_import(p_name text) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    srv text := (SELECT server_name FROM shards WHERE name = p_name);
    sch text := 'gl_shard_' || p_name;
BEGIN
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', sch);
    EXECUTE format('CREATE SCHEMA %I', sch);
    EXECUTE format('IMPORT FOREIGN SCHEMA public LIMIT TO (clusters, usage_daily, usage_daily_owner, usage_daily_built,'
                   ' gpu_model_canon, ingest_data_through)'
                   ' FROM SERVER %I INTO %I', srv, sch);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', sch, session_user);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', sch, session_user);
    -- every fleet schema is made again with this shard's new tables
    PERFORM gl_fleet_drop_all();
END $$;
REVOKE EXECUTE ON FUNCTION gl_shard_import(text) FROM PUBLIC;

-- Shards attached before: their foreign table of the view, made here (local
-- metadata: no shard is asked; the shards run this migration themselves),
-- and the fleet schemas made again on their next use.
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT 'gl_shard_' || name AS sch, server_name FROM shards
             WHERE to_regnamespace('gl_shard_' || name) IS NOT NULL LOOP
        EXECUTE format('CREATE FOREIGN TABLE %I.ingest_data_through (cluster text, source text, data text,'
                       ' through_s bigint) SERVER %I OPTIONS (schema_name ''public'', table_name ''ingest_data_through'')',
                       s.sch, s.server_name);
    END LOOP;
    PERFORM gl_fleet_drop_all();
END $$;
