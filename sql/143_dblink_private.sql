-- 143: a central's dblink connections to its shards kept to the owner
-- (docs/security.md, "A central's connections to its shards").
--
-- gl_fleet_send (sql/140) opens, with the owner's rights, one dblink
-- connection per session and shard and keeps it open, named. dblink's
-- named connections belong to the backend, not to a role, and its
-- functions were PUBLIC's in schema public: a session of the service role
-- that had made a request could list them (dblink_get_connections) and
-- run anything on a shard over them as the mapped login (tested: every
-- rate of a shard deleted, its audit log read). And gl_fleet_send wrote
-- its caller's column list into a statement it ran as the owner (the user
-- mapping's password read back) and into the text sent to the shard
-- (statements after the read-only one), and let a prepared statement run
-- in whatever transaction mode the connection was left in.
--
-- Here: dblink is used only from schema gl_dblink, which only the owner
-- may use (a superuser moves the extension there: `gpuledger audit
-- harden`, or `migrate` on the embedded cluster; until then the central
-- answers as without dblink); the column list is names and plain types;
-- a prepared statement runs in a transaction made read-only by the same
-- query, before it. And a query that could not be sent is no longer read
-- as an empty answer.

CREATE SCHEMA IF NOT EXISTS gl_dblink;
REVOKE ALL ON SCHEMA gl_dblink FROM PUBLIC;

-- Whether dblink is installed where only the owner reaches it: a dblink
-- in a schema everyone may use would leave the session's connections to
-- every role of the session.
CREATE FUNCTION gl_fleet_dblink() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
                    WHERE e.extname = 'dblink' AND n.nspname = 'gl_dblink')
$$;

-- A column definition list the functions below write into statements: no
-- parenthesis, quote or semicolon can end the list it is written into.
CREATE FUNCTION gl_fleet_cols_check(p_cols text) RETURNS void LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_cols IS NULL
       OR p_cols !~ '^[a-z_][a-z0-9_]* [a-z][a-z0-9_ ]*(\[\])?(, [a-z_][a-z0-9_]* [a-z][a-z0-9_ ]*(\[\])?)*$' THEN
        RAISE EXCEPTION 'gl_fleet_send: the column list must be names and plain types: %', left(p_cols, 200)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END $$;

CREATE OR REPLACE FUNCTION gl_fleet_dblink_renew(p_conn text, p_server text) RETURNS void
LANGUAGE plpgsql SET search_path = public, pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(p_conn = ANY(gl_dblink.dblink_get_connections()), false) THEN
        PERFORM gl_dblink.dblink_disconnect(p_conn);
    END IF;
    PERFORM gl_dblink.dblink_connect(p_conn, p_server);
END $$;

CREATE OR REPLACE FUNCTION gl_fleet_prepare(p_conn text, p_name text, p_types text, p_sql text, p_done text,
                                            p_again boolean)
RETURNS text LANGUAGE plpgsql SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    k text := ' ' || p_conn || '/' || p_name || ' ';
BEGIN
    IF p_types IS NULL OR (position(k IN p_done) > 0 AND NOT p_again) THEN
        RETURN p_done;
    END IF;
    PERFORM gl_dblink.dblink_exec(p_conn, 'SET jit = off');
    PERFORM gl_dblink.dblink_exec(p_conn, 'SET default_transaction_read_only = on');
    PERFORM gl_dblink.dblink_exec(p_conn, 'SET plan_cache_mode = force_generic_plan');
    PERFORM gl_dblink.dblink_exec(p_conn, format('PREPARE %s(%s) AS %s', p_name, p_types, p_sql));
    RETURN CASE WHEN position(k IN p_done) > 0 THEN p_done ELSE p_done || k END;
END $$;

-- sql/140's, with dblink from gl_dblink, the column list checked, and a
-- prepared statement executed after a set_config that makes its
-- transaction read-only: the connection's default is a setting any query
-- sent on it may change (one of gl_read_only_rows's), the transaction's
-- mode after a query no statement can. That query's row is the first of
-- the shard's answers, read and dropped.
CREATE OR REPLACE FUNCTION gl_fleet_send(p_mask bigint, p_sql text, p_types text, p_args text[], p_cols text)
RETURNS SETOF record LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    s record;
    nm text := 'gl_fp_' || left(md5(coalesce(p_types, '') || ' ' || p_sql), 16);
    q text;
    done text := coalesce(current_setting('gl.fleet_prepared', true), '');
    conns text[] := '{}';
    srvs text[] := '{}';
    cn text;
BEGIN
    PERFORM gl_fleet_cols_check(p_cols);
    q := format('SELECT * FROM gl_read_only_rows(%L) AS t(%s)', p_sql, p_cols);
    IF p_types IS NOT NULL THEN
        -- one statement, read-only there: a second one after a semicolon
        -- would run as it is
        IF position(';' IN p_sql) > 0 OR p_types !~ '^[a-z0-9_\[\], ]+$' THEN
            RAISE EXCEPTION 'gl_fleet_send: one statement and plain types only';
        END IF;
        SELECT format('SELECT pg_catalog.set_config(''transaction_read_only'', ''on'', true); EXECUTE %s(%s)', nm,
                      string_agg(coalesce(quote_literal(a), 'NULL'), ', ' ORDER BY i))
            INTO q FROM unnest(p_args) WITH ORDINALITY AS u(a, i);
    END IF;
    FOR s IN SELECT * FROM shards WHERE (p_mask >> (shard_id - 1)) & 1 = 1 ORDER BY shard_id LOOP
        cn := format('gl_capmiss_%s_%s', s.name, extract(epoch FROM s.attached_at)::bigint);
        BEGIN
            IF NOT coalesce(cn = ANY(gl_dblink.dblink_get_connections()), false) THEN
                PERFORM gl_dblink.dblink_connect(cn, s.server_name);
            END IF;
            done := gl_fleet_prepare(cn, nm, p_types, p_sql, done, false);
            PERFORM gl_fleet_send_query(cn, q);
        EXCEPTION WHEN OTHERS THEN
            PERFORM gl_fleet_dblink_renew(cn, s.server_name);
            done := gl_fleet_prepare(cn, nm, p_types, p_sql, done, true);
            PERFORM gl_fleet_send_query(cn, q);
        END;
        conns := array_append(conns, cn);
        srvs := array_append(srvs, s.server_name);
    END LOOP;
    PERFORM set_config('gl.fleet_prepared', done, false);
    FOR i IN 1 .. coalesce(array_length(conns, 1), 0) LOOP
        BEGIN
            IF p_types IS NOT NULL THEN
                PERFORM * FROM gl_dblink.dblink_get_result(conns[i]) AS t(ro text);
            END IF;
            RETURN QUERY EXECUTE format('SELECT * FROM gl_dblink.dblink_get_result(%L) AS t(%s)', conns[i], p_cols);
            -- the empty result that frees the connection for its next query
            PERFORM * FROM gl_dblink.dblink_get_result(conns[i]) AS t(x text);
        EXCEPTION WHEN OTHERS THEN
            -- a connection made anew elsewhere has lost what it prepared
            PERFORM gl_fleet_dblink_renew(conns[i], srvs[i]);
            PERFORM gl_fleet_prepare(conns[i], nm, p_types, p_sql, '', true);
            PERFORM gl_fleet_send_query(conns[i], q);
            IF p_types IS NOT NULL THEN
                PERFORM * FROM gl_dblink.dblink_get_result(conns[i]) AS t(ro text);
            END IF;
            RETURN QUERY EXECUTE format('SELECT * FROM gl_dblink.dblink_get_result(%L) AS t(%s)', conns[i], p_cols);
            PERFORM * FROM gl_dblink.dblink_get_result(conns[i]) AS t(x text);
        END;
    END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION gl_fleet_send(bigint, text, text, text[], text) FROM PUBLIC;

-- q sent on dblink connection p_conn, or an error. dblink_send_query
-- answers 0 (and a NOTICE) on a connection still busy with a query whose
-- answer was never read, e.g. when an error ended the request that sent
-- it: taken for sent, the answer read next was that query's end, no rows,
-- so the shard answered nothing (tested); as an error, the connection is
-- made anew and q sent again.
CREATE FUNCTION gl_fleet_send_query(p_conn text, q text) RETURNS void
LANGUAGE plpgsql SET search_path = public, pg_catalog, pg_temp AS $$
BEGIN
    IF gl_dblink.dblink_send_query(p_conn, q) <> 1 THEN
        RAISE EXCEPTION 'gl_fleet_send: could not send a query on %', p_conn;
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION gl_fleet_send_query(text, text) FROM PUBLIC;


-- sql/140's, the column list checked before it is written into the call.
CREATE OR REPLACE FUNCTION gl_fleet_rows_remote(p_mask bigint, p_sql text, p_cols text) RETURNS SETOF record
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
BEGIN
    PERFORM gl_fleet_cols_check(p_cols);
    RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_send(%s, %L, NULL, NULL, %L) AS t(%s)', p_mask, p_sql, p_cols,
                                p_cols);
END $$;

-- The three that choose between the shards and this session's tables ask
-- gl_fleet_dblink rather than whether public holds dblink.
CREATE OR REPLACE FUNCTION gl_capacity_missing(p_a bigint, p_b bigint, p_clusters text[]) RETURNS SETOF text
LANGUAGE plpgsql STABLE AS $$
DECLARE
    m text := substring(current_setting('search_path') FROM '^"?gl_fleet_([0-9]+)');
BEGIN
    IF m IS NOT NULL AND gl_fleet_dblink() THEN
        RETURN QUERY SELECT * FROM gl_fleet_capacity_missing(m::bigint, p_a, p_b, p_clusters);
    ELSE
        RETURN QUERY SELECT * FROM gl_capacity_missing_here(p_a, p_b, p_clusters);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION gl_fleet_rows(p_sql text, p_params text[], p_cols text) RETURNS SETOF record
LANGUAGE plpgsql AS $$
DECLARE
    m text := substring(current_setting('search_path') FROM '^"?gl_fleet_([0-9]+)');
    q text := p_sql;
BEGIN
    -- the highest first: $1 must not take the front of $10
    FOR i IN REVERSE coalesce(array_length(p_params, 1), 0) .. 1 LOOP
        q := replace(q, '$' || i, coalesce(quote_literal(p_params[i]), 'NULL'));
    END LOOP;
    IF m IS NOT NULL AND gl_fleet_dblink() THEN
        RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_rows_remote(%s, %L, %L) AS t(%s)', m, q, p_cols, p_cols);
    ELSE
        RETURN QUERY EXECUTE q;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION gl_fleet_prepared_rows(p_sql text, p_types text, p_args text[], p_cols text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
    m text := substring(current_setting('search_path') FROM '^"?gl_fleet_([0-9]+)');
BEGIN
    IF m IS NOT NULL AND gl_fleet_dblink() THEN
        RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_send(%s, %L, %L, %L, %L) AS t(%s)', m, p_sql, p_types,
                                    p_args, p_cols, p_cols);
    ELSE
        RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_rows(%L, %L, %L) AS t(%s)', p_sql, p_args, p_cols, p_cols);
    END IF;
END $$;

-- The one SECURITY DEFINER function whose search_path left pg_temp out
-- (so first, for relations: its unqualified pg_inherits and pg_class
-- could be a session's temporary tables). Ours until `audit harden`;
-- afterwards gpuledger_audit's, and the superuser's step sets it.
DO $do$
BEGIN
    IF (SELECT proowner FROM pg_proc WHERE oid = 'public.gl_audit_partitions_drop(date)'::regprocedure)
       = (SELECT oid FROM pg_roles WHERE rolname = current_user) THEN
        ALTER FUNCTION public.gl_audit_partitions_drop(date) SET search_path = pg_catalog, public, pg_temp;
    END IF;
END $do$;
