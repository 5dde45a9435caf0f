-- 110: a query asked of each shard whole, its answers unioned
-- (docs/scale.md, "What it costs"): the clusters without capacity data,
-- asked so that each shard plans it with the window's bounds.

-- On every database (the shards run it): a query run read-only, so the
-- text a central sends can read and nothing else.
CREATE FUNCTION gl_read_only_rows(p_sql text) RETURNS SETOF record LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('transaction_read_only', 'on', true);
    RETURN QUERY EXECUTE p_sql;
END $$;

-- On a central: p_sql run by each shard of p_mask over the session's
-- dblink connection to it (the one gl_fleet_capacity_missing kept), all
-- shards at once, read-only there; p_cols is the column definition list
-- of the answer. With the owner's rights, as gl_fleet_capacity_missing.
CREATE FUNCTION gl_fleet_rows_remote(p_mask bigint, p_sql text, p_cols text) RETURNS SETOF record
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    s record;
    q text := format('SELECT * FROM gl_read_only_rows(%L) AS t(%s)', p_sql, p_cols);
    conns text[] := '{}';
    srvs text[] := '{}';
    cn text;
BEGIN
    FOR s IN SELECT * FROM shards WHERE (p_mask >> (shard_id - 1)) & 1 = 1 ORDER BY shard_id LOOP
        cn := format('gl_capmiss_%s_%s', s.name, extract(epoch FROM s.attached_at)::bigint);
        BEGIN
            IF NOT coalesce(cn = ANY(dblink_get_connections()), false) THEN
                PERFORM dblink_connect(cn, s.server_name);
            END IF;
            PERFORM dblink_send_query(cn, q);
        EXCEPTION WHEN OTHERS THEN
            PERFORM gl_fleet_dblink_renew(cn, s.server_name);
            PERFORM dblink_send_query(cn, q);
        END;
        conns := array_append(conns, cn);
        srvs := array_append(srvs, s.server_name);
    END LOOP;
    FOR i IN 1 .. coalesce(array_length(conns, 1), 0) LOOP
        BEGIN
            RETURN QUERY EXECUTE format('SELECT * FROM dblink_get_result(%L) AS t(%s)', conns[i], p_cols);
            -- the empty result that frees the connection for its next query
            PERFORM * FROM dblink_get_result(conns[i]) AS t(x text);
        EXCEPTION WHEN OTHERS THEN
            PERFORM gl_fleet_dblink_renew(conns[i], srvs[i]);
            RETURN QUERY EXECUTE format('SELECT * FROM dblink(%L, %L) AS t(%s)', conns[i], q, p_cols);
        END;
    END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION gl_fleet_rows_remote(bigint, text, text) FROM PUBLIC;

-- The clusters without capacity data (sql/104), asked of each shard the
-- same way, as a set in FROM: there the SQL function is inlined and planned
-- with the window's bounds as constants. Called in the select list (as
-- sql/104 asked it) it ran planned for any bounds, over every job of the
-- shard's cluster: 38-50 ms a request at 100,000 jobs a shard, where one
-- database answers for three clusters in 6 ms.
CREATE OR REPLACE FUNCTION gl_fleet_capacity_missing(p_mask bigint, p_a bigint, p_b bigint, p_clusters text[])
RETURNS SETOF text LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
SELECT t.name FROM gl_fleet_rows_remote(p_mask,
    format('SELECT * FROM gl_capacity_missing_here(%s, %s, %L::text[])', p_a, p_b, p_clusters), 'name text')
    AS t(name text)
$$;
