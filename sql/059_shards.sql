-- 059: a ledger sharded over PostgreSQL servers (docs/scale.md, "Sharding
-- over PostgreSQL servers"). Each site's clusters live in a shard: a whole
-- gpuledger database of its own, written by its own daemon, which also
-- builds its usage_daily. The central database reads every shard through
-- postgres_fdw: the fact tables as foreign partitions of tables
-- partitioned by cluster_id (each shard owns a range of cluster ids), the
-- daily aggregates as a UNION ALL of the shards' (they carry no cluster
-- id). Reference tables (owners, rates, GPU model aliases, idle owners)
-- are the central's own, loaded from the same configuration as every
-- shard's. The central runs every query against a schema gl_fleet_<mask>
-- holding the shards that answered (bit k - 1 of mask for shard k): a
-- shard that is down is left out and its clusters named, never summed as 0.

-- Shard k owns cluster ids [k * 1,000,000, (k + 1) * 1,000,000) and job,
-- node and GPU ids [k * 10^15, (k + 1) * 10^15): unique over the fleet.
CREATE FUNCTION gl_shard_cluster_lo(k integer) RETURNS integer LANGUAGE sql IMMUTABLE AS $$ SELECT k * 1000000 $$;
CREATE FUNCTION gl_shard_id_lo(k integer) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT k * 1000000000000000 $$;

-- On a shard: which one it is. One row at most.
CREATE TABLE shard_self (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    shard_id  integer NOT NULL CHECK (shard_id BETWEEN 1 AND 62),
    set_at    timestamptz NOT NULL DEFAULT now()
);

-- On a shard, before its first ingest: every id sequence starts in its
-- range. Refused when a cluster outside the range is already there (its
-- ids could be another shard's).
CREATE FUNCTION gl_shard_local_init(k integer) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    lo integer := gl_shard_cluster_lo(k);
    idlo bigint := gl_shard_id_lo(k);
    t record;
    nxt bigint;
BEGIN
    IF k < 1 OR k > 62 THEN
        RAISE EXCEPTION 'shard index % is not 1..62', k;
    END IF;
    IF EXISTS (SELECT 1 FROM shard_self WHERE shard_id <> k) THEN
        RAISE EXCEPTION 'this database is already shard %', (SELECT shard_id FROM shard_self);
    END IF;
    IF EXISTS (SELECT 1 FROM clusters WHERE cluster_id < lo OR cluster_id >= lo + 1000000) THEN
        RAISE EXCEPTION 'clusters % hold ids outside shard %''s range [%, %)',
            (SELECT string_agg(name, ', ' ORDER BY name) FROM clusters WHERE cluster_id < lo OR cluster_id >= lo + 1000000),
            k, lo, lo + 1000000;
    END IF;
    FOR t IN SELECT * FROM (VALUES ('clusters', 'cluster_id', lo::bigint), ('nodes', 'node_id', idlo),
                                   ('gpus', 'gpu_id', idlo), ('jobs', 'job_pk', idlo)) v(tab, col, start) LOOP
        EXECUTE format('SELECT greatest(max(%I) + 1, %s) FROM %I', t.col, t.start, t.tab) INTO nxt;
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I RESTART WITH %s', t.tab, t.col, coalesce(nxt, t.start + 1));
    END LOOP;
    INSERT INTO shard_self (shard_id) VALUES (k) ON CONFLICT (one) DO NOTHING;
END $$;

-- On the central database: the shards, and the clusters each one held
-- when it last answered (what a down shard's answer names).
CREATE TABLE shards (
    shard_id     integer PRIMARY KEY CHECK (shard_id BETWEEN 1 AND 62),
    name         text NOT NULL UNIQUE CHECK (name ~ '^[a-z][a-z0-9_]{0,30}$'),
    server_name  text NOT NULL UNIQUE,
    attached_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE shard_clusters (
    cluster_id   integer PRIMARY KEY,
    shard_id     integer NOT NULL REFERENCES shards ON DELETE CASCADE,
    name         text NOT NULL,
    seen_at      timestamptz NOT NULL DEFAULT now()
);

-- Fact tables: partitioned by cluster_id, a foreign partition per shard.
CREATE FUNCTION gl_fleet_partitioned() RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY['clusters', 'nodes', 'gpus', 'jobs', 'gpu_usage', 'gpu_usage_jobs', 'node_gpu_spans',
                 'node_state_spans', 'sched_snapshots', 'sched_coverage', 'ingest_state', 'ingest_runs',
                 'dcgm_gpu_state']
$$;
-- Daily aggregates (no cluster column): the UNION ALL of the shards'.
CREATE FUNCTION gl_fleet_unioned() RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY['usage_daily', 'usage_daily_owner']
$$;

-- A shard's foreign tables for the unioned aggregates, in gl_shard_<name>.
-- Run by `gpuledger shard attach` once the server and user mapping exist.
CREATE FUNCTION gl_shard_import(p_name text) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    srv text := (SELECT server_name FROM shards WHERE name = p_name);
    sch text := 'gl_shard_' || p_name;
BEGIN
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', sch);
    EXECUTE format('CREATE SCHEMA %I', sch);
    EXECUTE format('IMPORT FOREIGN SCHEMA public LIMIT TO (clusters, usage_daily, usage_daily_owner, usage_daily_built,'
                   ' gpu_model_canon)'
                   ' FROM SERVER %I INTO %I', srv, sch);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', sch, session_user);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', sch, session_user);
    -- every fleet schema is made again with this shard's new tables
    PERFORM gl_fleet_drop_all();
END $$;

CREATE FUNCTION gl_fleet_drop_all() RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT nspname FROM pg_namespace WHERE nspname ~ '^gl_fleet_[0-9]+$' LOOP
        EXECUTE format('DROP SCHEMA %I CASCADE', s.nspname);
    END LOOP;
END $$;

-- 1 when the shard answers a query through its foreign server now.
CREATE FUNCTION gl_shard_probe(p_name text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('SELECT 1 FROM %I.clusters LIMIT 1', 'gl_shard_' || p_name);
    RETURN true;
EXCEPTION WHEN OTHERS THEN
    RETURN false;
END $$;

-- The schema that reads the shards of mask, made on first use.
CREATE FUNCTION gl_fleet_ensure(mask bigint) RETURNS text LANGUAGE plpgsql
SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    sch text := 'gl_fleet_' || mask;
    t text;
    s record;
    body text;
    n integer := 0;
BEGIN
    IF to_regnamespace(sch) IS NOT NULL THEN
        RETURN sch;
    END IF;
    -- two sessions making the same schema: the second waits, then finds it
    PERFORM pg_advisory_xact_lock(26476, 59);
    IF to_regnamespace(sch) IS NOT NULL THEN
        RETURN sch;
    END IF;
    EXECUTE format('CREATE SCHEMA %I', sch);
    FOREACH t IN ARRAY gl_fleet_partitioned() LOOP
        EXECUTE format('CREATE TABLE %I.%I (LIKE public.%I) PARTITION BY RANGE (cluster_id)', sch, t, t);
        FOR s IN SELECT * FROM shards WHERE (mask >> (shard_id - 1)) & 1 = 1 ORDER BY shard_id LOOP
            EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %I.%I FOR VALUES FROM (%s) TO (%s)'
                           ' SERVER %I OPTIONS (schema_name ''public'', table_name %L)',
                           sch, t || '_' || s.name, sch, t, gl_shard_cluster_lo(s.shard_id),
                           gl_shard_cluster_lo(s.shard_id + 1), s.server_name, t);
        END LOOP;
    END LOOP;
    FOREACH t IN ARRAY gl_fleet_unioned() LOOP
        body := format('SELECT * FROM public.%I WHERE false', t);
        FOR s IN SELECT * FROM shards WHERE (mask >> (shard_id - 1)) & 1 = 1 ORDER BY shard_id LOOP
            body := body || format(' UNION ALL SELECT * FROM %I.%I', 'gl_shard_' || s.name, t);
        END LOOP;
        EXECUTE format('CREATE VIEW %I.%I AS %s', sch, t, body);
    END LOOP;
    -- a day counts as built when every shard read holds it built
    body := 'SELECT day, built_at FROM public.usage_daily_built WHERE false';
    FOR s IN SELECT * FROM shards WHERE (mask >> (shard_id - 1)) & 1 = 1 ORDER BY shard_id LOOP
        body := body || format(' UNION ALL SELECT day, built_at FROM %I.usage_daily_built', 'gl_shard_' || s.name);
        n := n + 1;
    END LOOP;
    EXECUTE format('CREATE VIEW %I.usage_daily_built AS SELECT day, max(built_at) AS built_at FROM (%s) u'
                   ' GROUP BY day HAVING count(*) = %s', sch, body, n);
    -- made with the owner's rights, read by the session that asked
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', sch, session_user);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', sch, session_user);
    RETURN sch;
END $$;

-- The clusters a shard holds, as last seen (named when it is down).
CREATE FUNCTION gl_shard_refresh(p_shard integer, p_name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('INSERT INTO shard_clusters (cluster_id, shard_id, name)'
                   ' SELECT cluster_id, %s, name FROM %I.clusters'
                   ' ON CONFLICT (cluster_id) DO UPDATE SET shard_id = EXCLUDED.shard_id, name = EXCLUDED.name,'
                   ' seen_at = now() WHERE (shard_clusters.shard_id, shard_clusters.name)'
                   ' IS DISTINCT FROM (EXCLUDED.shard_id, EXCLUDED.name)', p_shard, 'gl_shard_' || p_name);
    -- the GPU model names the shard holds, canonical here too: a job whose
    -- name gpu_model_canon lacks has its model derived per row (a hundred
    -- times the probe), and the shards' ingest triggers fill only theirs
    EXECUTE format('SELECT gl_gpu_model_note(ARRAY(SELECT raw FROM %I.gpu_model_canon c'
                   ' WHERE NOT EXISTS (SELECT 1 FROM public.gpu_model_canon l WHERE l.raw = c.raw)))',
                   'gl_shard_' || p_name);
END $$;

-- Routes this session: probes every shard, refreshes the clusters of those
-- that answered, and points search_path at the schema that reads them.
-- What did not answer is returned, for the answer to name.
CREATE FUNCTION gl_fleet_route(OUT mask bigint, OUT schema_name text, OUT unread_shards text[],
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
    schema_name := gl_fleet_ensure(mask);
    PERFORM set_config('search_path', quote_ident(schema_name) || ', public', false);
    -- an aggregate grouped by cluster is then computed by each shard
    -- (postgres_fdw pushes it down), and the shards are scanned at once
    PERFORM set_config('enable_partitionwise_aggregate', 'on', false);
    PERFORM set_config('enable_partitionwise_join', 'on', false);
    PERFORM set_config('enable_async_append', 'on', false);
    SELECT coalesce(array_agg(c.name ORDER BY c.name), '{}') INTO unread_clusters
      FROM shard_clusters c WHERE (mask >> (c.shard_id - 1)) & 1 = 0;
END $$;

-- Attaches a shard (`gpuledger shard attach`): its foreign server, the
-- user mapping of the role that runs this (the service's), its row, and
-- its aggregates' foreign tables. p_options are the server's libpq
-- options (host, port, dbname, ...), p_user and p_password the login.
CREATE FUNCTION gl_shard_attach(p_shard integer, p_name text, p_options text[], p_user text, p_password text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_catalog, pg_temp AS $$
DECLARE
    srv text := 'gl_shard_' || p_name || '_srv';
    opts text := 'async_capable ''true'', fetch_size ''10000''';
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

REVOKE EXECUTE ON FUNCTION gl_shard_local_init(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_shard_import(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_fleet_drop_all() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_fleet_ensure(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_shard_attach(integer, text, text[], text, text) FROM PUBLIC;
