-- 050: two roles (docs/security.md, "Two roles"). The role that runs the
-- migrations owns the database and every object in it; the service
-- connects as another role that owns nothing and holds only what it uses,
-- granted by gl_app_grant(), which `gpuledger migrate` calls after every
-- run. Default privileges (set there) grant what a later migration creates.

-- Partitions the service makes while it runs: only the owner of a
-- partitioned table may add a partition to it, so these run as their
-- owner. SECURITY DEFINER: search_path pinned (pg_temp last, so a caller's
-- temporary table cannot stand in for one of ours) and every name
-- qualified; a span is bounded so a caller cannot make tables without end.
-- The day partitions of public.<p_parent> covering [p_from, p_to): called
-- by the two below only (not SECURITY DEFINER itself: it takes any name).
CREATE FUNCTION gl_day_partitions(p_parent text, p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET TimeZone = 'UTC' AS $$
DECLARE
    d date;
    n integer := 0;
    pname text;
BEGIN
    IF NOT (isfinite(p_from) AND isfinite(p_to)) OR p_to - p_from > interval '3660 days' THEN
        RAISE EXCEPTION 'gl_day_partitions: [%, %) is not a span of at most 3660 days', p_from, p_to;
    END IF;
    d := (p_from AT TIME ZONE 'UTC')::date;
    WHILE (d::timestamp AT TIME ZONE 'UTC') < p_to LOOP
        pname := format('%s_%s', p_parent, to_char(d, 'YYYYMMDD'));
        IF to_regclass(format('public.%I', pname)) IS NULL THEN
            EXECUTE format('CREATE TABLE public.%I PARTITION OF public.%I FOR VALUES FROM (%L) TO (%L)',
                           pname, p_parent, d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
            n := n + 1;
        END IF;
        d := d + 1;
    END LOOP;
    RETURN n;
END $$;

CREATE OR REPLACE FUNCTION gl_ensure_usage_partitions(p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT public.gl_day_partitions('gpu_usage', p_from, p_to)
$$;

CREATE OR REPLACE FUNCTION gl_ensure_dcgm_partitions(p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT public.gl_day_partitions('gpu_usage', p_from, p_to) + public.gl_day_partitions('gpu_usage_jobs', p_from, p_to)
$$;

-- Executable by the roles gl_app_grant names, not by every role that can
-- connect (a SECURITY DEFINER function acts with its owner's rights).
REVOKE EXECUTE ON FUNCTION gl_day_partitions(text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_ensure_usage_partitions(timestamptz, timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION gl_ensure_dcgm_partitions(timestamptz, timestamptz) FROM PUBLIC;

-- The audit log's monthly partitions: the service's role reaches them
-- through audit_log only, so a new one is granted to nobody (the default
-- privileges below would otherwise give it DML). Replaced only while it
-- is ours: after `audit harden` it belongs to gpuledger_audit, whose
-- partitions no default privilege reaches.
DO $do$
BEGIN
    IF (SELECT proowner FROM pg_proc WHERE oid = 'public.gl_audit_partitions_ensure(date, integer)'::regprocedure)
       <> (SELECT oid FROM pg_roles WHERE rolname = current_user) THEN
        RETURN;
    END IF;
    CREATE OR REPLACE FUNCTION public.gl_audit_partitions_ensure(from_month date, months integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp SET TimeZone = 'UTC' AS $$
    DECLARE
        m date := date_trunc('month', from_month)::date;
        lo timestamptz;
        hi timestamptz;
        part text;
        g text;
        made integer := 0;
    BEGIN
        IF months < 1 OR months > 120 THEN
            RAISE EXCEPTION 'gl_audit_partitions_ensure: months must be 1..120';
        END IF;
        FOR i IN 1..months LOOP
            part := 'audit_log_' || to_char(m, 'YYYY_MM');
            lo := m::timestamp AT TIME ZONE 'UTC';
            hi := (m + interval '1 month')::timestamp AT TIME ZONE 'UTC';
            IF to_regclass('public.' || part) IS NULL
               AND NOT EXISTS (SELECT 1 FROM public.audit_log_default WHERE at >= lo AND at < hi) THEN
                EXECUTE format('CREATE TABLE public.%I PARTITION OF public.audit_log FOR VALUES FROM (%L) TO (%L)',
                               part, lo, hi);
                EXECUTE format('CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON public.%I'
                               ' FOR EACH STATEMENT EXECUTE FUNCTION public.gl_audit_reject()', part);
                FOR g IN SELECT DISTINCT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
                           FROM pg_class c, aclexplode(c.relacl) a
                          WHERE c.oid = ('public.' || part)::regclass AND a.grantee <> c.relowner LOOP
                    EXECUTE format('REVOKE ALL ON public.%I FROM %s', part, g);
                END LOOP;
                made := made + 1;
            END IF;
            m := (m + interval '1 month')::date;
        END LOOP;
        RETURN made;
    END $$;
END $do$;

-- The objects p_role owns in this database (temporary ones aside), as
-- text, at most 10; NULL when none.
CREATE FUNCTION gl_role_owns(p_role name) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT string_agg(what, ', ') FROM (
        SELECT what FROM (
            SELECT 'database ' || quote_ident(datname) AS what FROM pg_database
             WHERE datname = current_database() AND datdba = (SELECT oid FROM pg_roles WHERE rolname = p_role)
            UNION ALL
            SELECT 'schema ' || quote_ident(nspname) FROM pg_namespace
             WHERE nspowner = (SELECT oid FROM pg_roles WHERE rolname = p_role)
               AND nspname !~ '^pg_(toast_)?temp_'
            UNION ALL
            SELECT 'relation ' || c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE c.relowner = (SELECT oid FROM pg_roles WHERE rolname = p_role)
               AND n.nspname !~ '^pg_(toast_)?temp_'
            UNION ALL
            SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE p.proowner = (SELECT oid FROM pg_roles WHERE rolname = p_role)
               AND n.nspname !~ '^pg_(toast_)?temp_'
            UNION ALL
            SELECT 'type ' || t.oid::regtype::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
             WHERE t.typowner = (SELECT oid FROM pg_roles WHERE rolname = p_role)
               AND t.typrelid = 0 AND t.typcategory <> 'A' -- a relation's row and array types go with it
               AND n.nspname !~ '^pg_(toast_)?temp_'
        ) o LIMIT 10
    ) l
$$;

-- Grants the service's role p_role what it uses of the schema, run by the
-- role that owns it (gpuledger migrate, after the migrations): DML on the
-- data, SELECT on schema_migrations, SELECT and INSERT on audit_log and
-- nothing on its partitions (they are reached through it), USAGE on
-- sequences, EXECUTE on functions; and the same by default for what this
-- role creates later. Refuses a role that is a superuser, is this role,
-- or owns anything here (an owner can ALTER, DROP, TRUNCATE and disable
-- triggers whatever is granted). Idempotent. Returns the objects granted.
CREATE FUNCTION gl_app_grant(p_role name) RETURNS integer
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me name := current_user;
    owned text := public.gl_role_owns(p_role);
    o record;
    n integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = p_role) THEN
        RAISE EXCEPTION 'gl_app_grant: there is no role %', p_role;
    ELSIF p_role = me THEN
        RAISE EXCEPTION 'gl_app_grant: % runs the migrations: the service needs a role of its own', p_role;
    ELSIF (SELECT rolsuper FROM pg_roles WHERE rolname = p_role) THEN
        RAISE EXCEPTION 'gl_app_grant: % is a superuser: no grant binds it', p_role;
    ELSIF owned IS NOT NULL THEN
        RAISE EXCEPTION 'gl_app_grant: % owns %: a superuser hands it over first (REASSIGN OWNED BY % TO %)',
            p_role, owned, quote_ident(p_role), quote_ident(me);
    END IF;
    IF NOT has_schema_privilege(p_role, 'public', 'USAGE') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA public TO %I', p_role);
    END IF;
    FOR o IN
        SELECT c.oid::regclass AS rel, c.relname, c.relkind,
               c.relname = 'audit_log' OR EXISTS (SELECT 1 FROM pg_inherits i
                    WHERE i.inhrelid = c.oid AND i.inhparent = 'public.audit_log'::regclass) AS audit
          FROM pg_class c
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
           AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = me)
    LOOP
        IF o.relkind = 'S' THEN
            EXECUTE format('GRANT USAGE ON SEQUENCE %s TO %I', o.rel, p_role);
        ELSIF o.relname = 'audit_log' THEN
            EXECUTE format('GRANT SELECT, INSERT ON %s TO %I', o.rel, p_role);
        ELSIF o.audit THEN
            EXECUTE format('REVOKE ALL ON %s FROM %I', o.rel, p_role);
        ELSIF o.relname = 'schema_migrations' OR o.relkind IN ('v', 'm') THEN
            -- read only (a view made later got DML by default)
            EXECUTE format('REVOKE ALL ON %s FROM %I', o.rel, p_role);
            EXECUTE format('GRANT SELECT ON %s TO %I', o.rel, p_role);
        ELSE
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %I', o.rel, p_role);
        END IF;
        n := n + 1;
    END LOOP;
    FOR o IN
        SELECT p.oid::regprocedure AS fn FROM pg_proc p
         WHERE p.pronamespace = 'public'::regnamespace AND p.proowner = (SELECT oid FROM pg_roles WHERE rolname = me)
           AND p.proname <> 'gl_app_grant'
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', o.fn, p_role);
        n := n + 1;
    END LOOP;
    EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public'
                   ' GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %I', me, p_role);
    EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public GRANT USAGE ON SEQUENCES TO %I',
                   me, p_role);
    EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE %I IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO %I',
                   me, p_role);
    -- after `audit harden` the log belongs to gpuledger_audit, and only a
    -- superuser grants on it: said here rather than at the first request
    IF NOT (has_table_privilege(p_role, 'public.audit_log', 'SELECT')
            AND has_table_privilege(p_role, 'public.audit_log', 'INSERT')) THEN
        RAISE EXCEPTION 'gl_app_grant: % may not read and append to audit_log, which belongs to %: '
                        'as a superuser, GRANT SELECT, INSERT ON audit_log TO %', p_role,
            pg_get_userbyid((SELECT relowner FROM pg_class WHERE oid = 'public.audit_log'::regclass)),
            quote_ident(p_role);
    END IF;
    RETURN n;
END $$;
REVOKE EXECUTE ON FUNCTION gl_app_grant(name) FROM PUBLIC;
