-- 110: a query whose answer is a union of per-cluster rows, asked of each
-- shard whole (docs/scale.md, "What it costs").
--
-- Over foreign partitions the central runs such a query itself: it reads
-- every row the query needs from the shards (a month's capacity read the
-- month's jobs of every shard: 26-69 ms at 30,000 jobs where one database
-- answers in 14-24 ms). When every row of the answer belongs to one
-- cluster and a cluster lives on one shard, each shard can answer for its
-- own clusters and the answer is the union of theirs.

-- On every database (the shards run it): a query run read-only, so the
-- text a central sends can read and nothing else.
CREATE FUNCTION gl_read_only_rows(p_sql text) RETURNS SETOF record LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('transaction_read_only', 'on', true);
    RETURN QUERY EXECUTE p_sql;
END $$;

-- On a central: p_sql (parameters $1.. given as text in p_params, written
-- into the text as literals: dblink takes none) run by each shard of
-- p_mask over the session's dblink connection to it (the one
-- gl_fleet_capacity_missing keeps), all shards at once; p_cols is the
-- column definition list of the answer. With the owner's rights, as
-- gl_fleet_capacity_missing.
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

-- The caller's entry: on a session routed to the fleet (gl_fleet_use)
-- with dblink installed, each shard answers; otherwise the query runs here,
-- over this session's tables.
CREATE FUNCTION gl_fleet_rows(p_sql text, p_params text[], p_cols text) RETURNS SETOF record
LANGUAGE plpgsql AS $$
DECLARE
    m text := substring(current_setting('search_path') FROM '^"?gl_fleet_([0-9]+)');
    q text := p_sql;
BEGIN
    -- the highest first: $1 must not take the front of $10
    FOR i IN REVERSE coalesce(array_length(p_params, 1), 0) .. 1 LOOP
        q := replace(q, '$' || i, coalesce(quote_literal(p_params[i]), 'NULL'));
    END LOOP;
    IF m IS NOT NULL AND to_regprocedure('public.dblink_send_query(text, text)') IS NOT NULL THEN
        RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_rows_remote(%s, %L, %L) AS t(%s)', m, q, p_cols, p_cols);
    ELSE
        RETURN QUERY EXECUTE q;
    END IF;
END $$;

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
