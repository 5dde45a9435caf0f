-- 104: a central database's reads of its shards made cheaper (docs/scale.md,
-- "What it costs"): the clusters without capacity data asked of each shard
-- once, and the remote commits made in parallel.
--
-- The clusters without capacity data.
-- A cluster whose GPU jobs ran in [p_a, p_b) (epoch seconds) while neither
-- a scheduler inventory nor an exporter reported any of its GPUs there:
-- its idle is unknown (capacity_clusters_unknown). On one database this is
-- a probe per cluster and table; on a central database of shards
-- (docs/scale.md) each probe was a remote query of its own, one after the
-- other (25-100 ms a request), so there each shard answers for its own
-- clusters in one query, all shards at once, through dblink on the shard's
-- foreign server.

-- The rule, on this session's tables. A job in the window is one that
-- ended after its start (jobs_window_idx from there on: never the jobs
-- that ended before, a year of history) or is still open
-- (jobs_running_idx); one probe each, not coalesce(end_at, ...) over every
-- job of the cluster (100 ms at 1M jobs, 479 ms at 5M). A subquery per
-- cluster, not a semi-join: over foreign partitions a semi-join is made
-- where the query runs, with every job of the window sent there.
CREATE FUNCTION gl_capacity_missing_here(p_a bigint, p_b bigint, p_clusters text[]) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
SELECT c.name FROM clusters c
WHERE (p_clusters IS NULL OR c.name = ANY(p_clusters))
  AND (coalesce((SELECT true FROM jobs jb WHERE jb.cluster_id = c.cluster_id AND jb.gpu_milli > 0
                   AND jb.end_at > to_timestamp(p_a) AND jb.start_at < to_timestamp(p_b) LIMIT 1), false)
       OR coalesce((SELECT true FROM jobs jb WHERE jb.cluster_id = c.cluster_id AND jb.end_at IS NULL
                      AND jb.start_at IS NOT NULL AND jb.gpu_milli > 0 AND jb.start_at < to_timestamp(p_b) LIMIT 1),
                   false))
  AND NOT EXISTS (SELECT 1 FROM node_gpu_spans s WHERE s.cluster_id = c.cluster_id
                    AND s.valid_from < to_timestamp(p_b) AND (s.valid_to IS NULL OR s.valid_to > to_timestamp(p_a)))
  AND NOT EXISTS (SELECT 1 FROM gpus gp WHERE gp.cluster_id = c.cluster_id
                    AND gp.first_seen < to_timestamp(p_b) AND (gp.absent_since IS NULL OR gp.absent_since > to_timestamp(p_a)))
$$;

-- The shards of p_mask, each asked gl_capacity_missing_here for its
-- clusters over a dblink connection of this session (kept open, named
-- after the shard's attachment), all queries sent before any answer is
-- read. A
-- connection that broke (a restarted shard, a request cancelled between
-- sending and reading) is made again once, and the shard asked again. With
-- the owner's rights: dblink connects through the foreign servers, which
-- the owner holds.
CREATE FUNCTION gl_fleet_capacity_missing(p_mask bigint, p_a bigint, p_b bigint, p_clusters text[])
RETURNS SETOF text LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    s record;
    q text := format('SELECT gl_capacity_missing_here(%s, %s, %L::text[])', p_a, p_b, p_clusters);
    conns text[] := '{}';
    srvs text[] := '{}';
    cn text;
BEGIN
    FOR s IN SELECT * FROM shards WHERE (p_mask >> (shard_id - 1)) & 1 = 1 ORDER BY shard_id LOOP
        -- named after the attachment too: a shard attached again (another
        -- host) is never read over a connection made to the one before
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
            RETURN QUERY SELECT t.name FROM dblink_get_result(conns[i]) AS t(name text);
            -- the empty result that frees the connection for its next query
            PERFORM * FROM dblink_get_result(conns[i]) AS t(name text);
        EXCEPTION WHEN OTHERS THEN
            PERFORM gl_fleet_dblink_renew(conns[i], srvs[i]);
            RETURN QUERY SELECT t.name FROM dblink(conns[i], q) AS t(name text);
        END;
    END LOOP;
END $$;

-- A dblink connection of this session made anew.
CREATE FUNCTION gl_fleet_dblink_renew(p_conn text, p_server text) RETURNS void
LANGUAGE plpgsql SET search_path = public, pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(p_conn = ANY(dblink_get_connections()), false) THEN
        PERFORM dblink_disconnect(p_conn);
    END IF;
    PERFORM dblink_connect(p_conn, p_server);
END $$;
REVOKE EXECUTE ON FUNCTION gl_fleet_capacity_missing(bigint, bigint, bigint, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_fleet_dblink_renew(text, text) FROM PUBLIC;

-- The rule for this session: on a session routed to the fleet
-- (gl_fleet_use: search_path leads with gl_fleet_<mask>) with dblink
-- installed, each shard answers for its clusters; otherwise (one
-- database, a shard, a central without dblink) the probes run here.
CREATE FUNCTION gl_capacity_missing(p_a bigint, p_b bigint, p_clusters text[]) RETURNS SETOF text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    m text := substring(current_setting('search_path') FROM '^"?gl_fleet_([0-9]+)');
BEGIN
    IF m IS NOT NULL AND to_regprocedure('public.dblink_send_query(text, text)') IS NOT NULL THEN
        RETURN QUERY SELECT * FROM gl_fleet_capacity_missing(m::bigint, p_a, p_b, p_clusters);
    ELSE
        RETURN QUERY SELECT * FROM gl_capacity_missing_here(p_a, p_b, p_clusters);
    END IF;
END $$;

-- Each statement over the shards opens a remote transaction on every shard
-- it reads and commits it at its end; postgres_fdw commits them one shard
-- after the other unless the server says parallel_commit (PostgreSQL 15).
-- For the shards attached before, and (gl_shard_attach) every later one.
DO $do$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT sh.server_name FROM shards sh
             JOIN pg_foreign_server f ON f.srvname = sh.server_name
             WHERE NOT coalesce(f.srvoptions @> ARRAY['parallel_commit=true'], false) LOOP
        EXECUTE format('ALTER SERVER %I OPTIONS (ADD parallel_commit ''true'')', s.server_name);
    END LOOP;
END $do$;

CREATE OR REPLACE FUNCTION gl_shard_attach(p_shard integer, p_name text, p_options text[], p_user text, p_password text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    srv text := 'gl_shard_' || p_name || '_srv';
    opts text := 'async_capable ''true'', fetch_size ''10000'', parallel_commit ''true''';
    um text;
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_options, 1), 0) / 2 LOOP
        opts := opts || format(', %I %L', p_options[2 * i - 1], p_options[2 * i]);
    END LOOP;
    EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER postgres_fdw OPTIONS (%s)', srv, opts);
    um := format('user %L', p_user);
    IF p_password IS NOT NULL THEN
        um := um || format(', password %L', p_password);
    END IF;
    -- for every role: the service's sessions read the foreign tables, the
    -- owner (this function's rights) imports them
    EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I OPTIONS (%s)', srv, um);
    INSERT INTO shards (shard_id, name, server_name) VALUES (p_shard, p_name, srv);
    PERFORM gl_shard_import(p_name);
END $$;
REVOKE EXECUTE ON FUNCTION gl_shard_attach(integer, text, text[], text, text) FROM PUBLIC;
