-- 009: audit chain v1 (docs/security.md) and token names.
--
-- The chain's sequence number is audit_id, assigned by the appender as
-- head + 1 while it holds the chain lock: an identity would leave gaps on
-- rollback, and a gap must mean a deleted row, nothing else.
ALTER TABLE audit_log ALTER COLUMN audit_id DROP IDENTITY;

-- Statement triggers are not cloned to partitions: without these, TRUNCATE
-- on a partition would bypass the parent's trigger.
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log_default
    FOR EACH STATEMENT EXECUTE FUNCTION gl_audit_reject();

-- Monthly partitions ahead of time (the DEFAULT partition only catches what
-- arrives for a month nobody created). A month whose rows already sit in the
-- DEFAULT partition is left there: moving them would need DELETE.
-- SECURITY DEFINER: after `gpuledger audit harden` the table belongs to a
-- role the service cannot act as, yet the service still rolls partitions.
CREATE FUNCTION gl_audit_partitions_ensure(from_month date, months integer) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public SET TimeZone = 'UTC' AS $$
DECLARE
    m date := date_trunc('month', from_month)::date;
    lo timestamptz;
    hi timestamptz;
    part text;
    made integer := 0;
BEGIN
    IF months < 1 OR months > 120 THEN
        RAISE EXCEPTION 'gl_audit_partitions_ensure: months must be 1..120';
    END IF;
    FOR i IN 1..months LOOP
        part := 'audit_log_' || to_char(m, 'YYYY_MM');
        lo := m::timestamp AT TIME ZONE 'UTC';
        hi := (m + interval '1 month')::timestamp AT TIME ZONE 'UTC';
        IF to_regclass(part) IS NULL
           AND NOT EXISTS (SELECT 1 FROM public.audit_log_default WHERE at >= lo AND at < hi) THEN
            EXECUTE format('CREATE TABLE public.%I PARTITION OF public.audit_log FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
            EXECUTE format('CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON public.%I'
                           ' FOR EACH STATEMENT EXECUTE FUNCTION public.gl_audit_reject()', part);
            made := made + 1;
        END IF;
        m := (m + interval '1 month')::date;
    END LOOP;
    RETURN made;
END $$;

-- Retention: detach and drop whole monthly partitions that end on or before
-- `before` (never the current month). Returns what went, including the last
-- dropped row's sequence number and hash: the caller records them in the
-- audit row of the prune, which is how the surviving chain stays anchored.
-- The caller holds the chain lock (pg_advisory_xact_lock) in the same
-- transaction.
CREATE FUNCTION gl_audit_partitions_drop(before date)
RETURNS TABLE (partition_name text, row_count bigint, last_seq bigint, last_hash bytea)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public SET TimeZone = 'UTC' AS $$
DECLARE
    p record;
BEGIN
    IF before > date_trunc('month', now())::date THEN
        RAISE EXCEPTION 'gl_audit_partitions_drop: % is after the start of the current month', before;
    END IF;
    FOR p IN
        SELECT c.relname::text AS relname
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'public.audit_log'::regclass AND c.relname ~ '^audit_log_[0-9]{4}_[0-9]{2}$'
           AND (to_date(substr(c.relname, 11), 'YYYY_MM') + interval '1 month')::date <= before
         ORDER BY c.relname
    LOOP
        partition_name := p.relname;
        EXECUTE format('SELECT count(*), max(audit_id) FROM public.%I', p.relname) INTO row_count, last_seq;
        last_hash := NULL;
        IF last_seq IS NOT NULL THEN
            EXECUTE format('SELECT hash FROM public.%I WHERE audit_id = $1', p.relname) INTO last_hash USING last_seq;
        END IF;
        EXECUTE format('ALTER TABLE public.audit_log DETACH PARTITION public.%I', p.relname);
        EXECUTE format('DROP TABLE public.%I', p.relname);
        RETURN NEXT;
    END LOOP;
END $$;

-- `token revoke NAME` needs a live name to mean one token.
CREATE UNIQUE INDEX api_tokens_live_name_idx ON api_tokens (name) WHERE revoked_at IS NULL;

-- The months around the migration; the daemon's audit writer rolls forward.
SELECT gl_audit_partitions_ensure((now() AT TIME ZONE 'UTC')::date, 3);
