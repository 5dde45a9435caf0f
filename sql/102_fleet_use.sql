-- 102: a session routed to the shards another session probed. The daemon
-- probes the shards once for the process (include/gl/fleetstate.h) and its
-- API sessions take the answering set as a mask: pointing a session at the
-- schema of that mask connects to no shard.
CREATE FUNCTION gl_fleet_use(p_mask bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    sch text := gl_fleet_ensure(p_mask);
BEGIN
    PERFORM set_config('search_path', quote_ident(sch) || ', public', false);
    -- an aggregate grouped by cluster is then computed by each shard
    -- (postgres_fdw pushes it down), and the shards are scanned at once
    PERFORM set_config('enable_partitionwise_aggregate', 'on', false);
    PERFORM set_config('enable_partitionwise_join', 'on', false);
    PERFORM set_config('enable_async_append', 'on', false);
    RETURN sch;
END $$;

-- The probe routes its own session the same way.
CREATE OR REPLACE FUNCTION gl_fleet_route(OUT mask bigint, OUT schema_name text, OUT unread_shards text[],
                                          OUT unread_clusters text[]) LANGUAGE plpgsql AS $$
DECLARE
    s record;
BEGIN
    mask := 0;
    unread_shards := '{}';
    FOR s IN SELECT * FROM shards ORDER BY shard_id LOOP
        IF gl_shard_probe(s.name) THEN
            mask := mask | (1::bigint << (s.shard_id - 1));
            PERFORM gl_shard_refresh(s.shard_id, s.name);
        ELSE
            unread_shards := array_append(unread_shards, s.name);
        END IF;
    END LOOP;
    schema_name := gl_fleet_use(mask);
    SELECT coalesce(array_agg(c.name ORDER BY c.name), '{}') INTO unread_clusters
      FROM shard_clusters c WHERE (mask >> (c.shard_id - 1)) & 1 = 0;
END $$;
