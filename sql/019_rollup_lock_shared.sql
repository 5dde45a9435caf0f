-- The staleness triggers of sql/012 took the rollup lock (26476, 0)
-- exclusively, so every ingest transaction of every cluster waited for the
-- previous one to commit. What the lock must guarantee is only that a day
-- build (gl_acct_build_day, exclusive) never commits from a snapshot older
-- than a change that made the day stale: writers among themselves need not
-- exclude each other. They now take it shared; the builder still takes it
-- exclusively and so waits for every writer in flight, and they for it.
CREATE OR REPLACE FUNCTION gl_usage_daily_stale_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lo timestamptz;
    hi timestamptz;
BEGIN
    -- shared with other writers, exclusive against gl_acct_build_day: a
    -- build never commits a day from a snapshot older than a change that
    -- made it stale
    PERFORM pg_advisory_xact_lock_shared(26476, 0);
    IF TG_OP = 'UPDATE' OR TG_OP = 'DELETE' THEN
        SELECT min(start_at), max(coalesce(end_at, 'infinity')) INTO lo, hi FROM old_rows WHERE start_at IS NOT NULL;
        IF lo IS NOT NULL THEN
            DELETE FROM usage_daily_built WHERE day >= (lo AT TIME ZONE 'UTC')::date
                AND (hi = 'infinity' OR day <= (hi AT TIME ZONE 'UTC')::date);
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' OR TG_OP = 'INSERT' THEN
        SELECT min(start_at), max(coalesce(end_at, 'infinity')) INTO lo, hi FROM new_rows WHERE start_at IS NOT NULL;
        IF lo IS NOT NULL THEN
            DELETE FROM usage_daily_built WHERE day >= (lo AT TIME ZONE 'UTC')::date
                AND (hi = 'infinity' OR day <= (hi AT TIME ZONE 'UTC')::date);
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION gl_usage_daily_stale_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lo timestamptz;
    hi timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(26476, 0);
    SELECT min(bucket), max(bucket) INTO lo, hi FROM new_rows;
    IF lo IS NOT NULL THEN
        DELETE FROM usage_daily_built WHERE day BETWEEN (lo AT TIME ZONE 'UTC')::date AND (hi AT TIME ZONE 'UTC')::date;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION gl_usage_daily_stale_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(26476, 0);
    DELETE FROM usage_daily_built;
    RETURN NULL;
END $$;
