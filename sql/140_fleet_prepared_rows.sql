-- 140: a query asked of every shard as a statement each shard prepared
-- once (docs/scale.md, "What it costs").
--
-- gl_fleet_rows (sql/110, sql/115) sends a text with its parameters
-- written in as literals, which a shard plans at every call: the text a
-- chargeback asks every shard before its lines (the built days, the
-- unobserved probe, the capacity days, the clusters without capacity
-- data) took a shard 2.9 ms to plan and 0.5 ms to run at 30,000 jobs
-- (EXPLAIN ANALYZE, load average 6), and 0.1 ms as a prepared statement
-- with a generic plan (the same rows). Here the text is prepared on each
-- shard's dblink connection of the session, under a name made from its
-- text, the first time the session sends it there, and each call sends
-- EXECUTE with the arguments, run with the generic plan (the connection's
-- plan_cache_mode: its other queries are not prepared). The connection is
-- then also read-only and without JIT for good (what gl_read_only_rows
-- sets per query): it only ever carries a central's reads.

-- On a central: each shard of p_mask asked over the session's dblink
-- connection to it (kept open, named after the shard's attachment), all
-- queries sent before any answer is read; p_cols is the column definition
-- list of the answer. With p_types NULL the query is p_sql, run read-only
-- (gl_read_only_rows); otherwise p_sql (one statement, parameters of
-- types p_types) is prepared there once and executed with p_args. The
-- statements prepared so far are the session's setting gl.fleet_prepared
-- (prepared again when lost: a connection made anew, a request rolled
-- back). A connection that broke (a restarted shard, a request cancelled
-- between sending and reading) is made again once, and the shard asked
-- again. With the owner's rights: dblink connects through the foreign
-- servers, which the owner holds.
CREATE FUNCTION gl_fleet_send(p_mask bigint, p_sql text, p_types text, p_args text[], p_cols text)
RETURNS SETOF record LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    s record;
    nm text := 'gl_fp_' || left(md5(coalesce(p_types, '') || ' ' || p_sql), 16);
    q text := format('SELECT * FROM gl_read_only_rows(%L) AS t(%s)', p_sql, p_cols);
    done text := coalesce(current_setting('gl.fleet_prepared', true), '');
    conns text[] := '{}';
    srvs text[] := '{}';
    cn text;
BEGIN
    IF p_types IS NOT NULL THEN
        -- one statement, read-only there: a second one after a semicolon
        -- would run as it is
        IF position(';' IN p_sql) > 0 OR p_types !~ '^[a-z0-9_\[\], ]+$' THEN
            RAISE EXCEPTION 'gl_fleet_send: one statement and plain types only';
        END IF;
        SELECT format('EXECUTE %s(%s)', nm, string_agg(coalesce(quote_literal(a), 'NULL'), ', ' ORDER BY i))
            INTO q FROM unnest(p_args) WITH ORDINALITY AS u(a, i);
    END IF;
    FOR s IN SELECT * FROM shards WHERE (p_mask >> (shard_id - 1)) & 1 = 1 ORDER BY shard_id LOOP
        cn := format('gl_capmiss_%s_%s', s.name, extract(epoch FROM s.attached_at)::bigint);
        BEGIN
            IF NOT coalesce(cn = ANY(dblink_get_connections()), false) THEN
                PERFORM dblink_connect(cn, s.server_name);
            END IF;
            done := gl_fleet_prepare(cn, nm, p_types, p_sql, done, false);
            PERFORM dblink_send_query(cn, q);
        EXCEPTION WHEN OTHERS THEN
            PERFORM gl_fleet_dblink_renew(cn, s.server_name);
            done := gl_fleet_prepare(cn, nm, p_types, p_sql, done, true);
            PERFORM dblink_send_query(cn, q);
        END;
        conns := array_append(conns, cn);
        srvs := array_append(srvs, s.server_name);
    END LOOP;
    PERFORM set_config('gl.fleet_prepared', done, false);
    FOR i IN 1 .. coalesce(array_length(conns, 1), 0) LOOP
        BEGIN
            RETURN QUERY EXECUTE format('SELECT * FROM dblink_get_result(%L) AS t(%s)', conns[i], p_cols);
            -- the empty result that frees the connection for its next query
            PERFORM * FROM dblink_get_result(conns[i]) AS t(x text);
        EXCEPTION WHEN OTHERS THEN
            -- a connection made anew elsewhere has lost what it prepared
            PERFORM gl_fleet_dblink_renew(conns[i], srvs[i]);
            PERFORM gl_fleet_prepare(conns[i], nm, p_types, p_sql, '', true);
            RETURN QUERY EXECUTE format('SELECT * FROM dblink(%L, %L) AS t(%s)', conns[i], q, p_cols);
        END;
    END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION gl_fleet_send(bigint, text, text, text[], text) FROM PUBLIC;

-- p_sql prepared as p_name on dblink connection p_conn unless p_done
-- notes it there (or p_again: the connection was made anew); p_done
-- returned with it noted. Nothing to prepare when p_types is NULL.
CREATE FUNCTION gl_fleet_prepare(p_conn text, p_name text, p_types text, p_sql text, p_done text, p_again boolean)
RETURNS text LANGUAGE plpgsql SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    k text := ' ' || p_conn || '/' || p_name || ' ';
BEGIN
    IF p_types IS NULL OR (position(k IN p_done) > 0 AND NOT p_again) THEN
        RETURN p_done;
    END IF;
    PERFORM dblink_exec(p_conn, 'SET jit = off');
    PERFORM dblink_exec(p_conn, 'SET default_transaction_read_only = on');
    PERFORM dblink_exec(p_conn, 'SET plan_cache_mode = force_generic_plan');
    PERFORM dblink_exec(p_conn, format('PREPARE %s(%s) AS %s', p_name, p_types, p_sql));
    RETURN CASE WHEN position(k IN p_done) > 0 THEN p_done ELSE p_done || k END;
END $$;
REVOKE EXECUTE ON FUNCTION gl_fleet_prepare(text, text, text, text, text, boolean) FROM PUBLIC;

-- sql/110's, now the same loop as the prepared statements'.
CREATE OR REPLACE FUNCTION gl_fleet_rows_remote(p_mask bigint, p_sql text, p_cols text) RETURNS SETOF record
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_send(%s, %L, NULL, NULL, %L) AS t(%s)', p_mask, p_sql, p_cols,
                                p_cols);
END $$;

-- p_sql (parameters of types p_types, values p_args) prepared once and
-- executed by each shard on a session routed to the fleet (gl_fleet_use)
-- with dblink installed; otherwise gl_fleet_rows runs it here, over this
-- session's tables.
CREATE FUNCTION gl_fleet_prepared_rows(p_sql text, p_types text, p_args text[], p_cols text) RETURNS SETOF record
LANGUAGE plpgsql AS $$
DECLARE
    m text := substring(current_setting('search_path') FROM '^"?gl_fleet_([0-9]+)');
BEGIN
    IF m IS NOT NULL AND to_regprocedure('public.dblink_send_query(text, text)') IS NOT NULL THEN
        RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_send(%s, %L, %L, %L, %L) AS t(%s)', m, p_sql, p_types,
                                    p_args, p_cols, p_cols);
    ELSE
        RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_rows(%L, %L, %L) AS t(%s)', p_sql, p_args, p_cols, p_cols);
    END IF;
END $$;
