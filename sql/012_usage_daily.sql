-- Daily per-owner aggregates for month-sized accounting queries (DESIGN.md:
-- "month queries read daily per-owner aggregates, never a month of rows").
-- One row per day and every accounting dimension, GPU model and rate piece,
-- built for whole past days from jobs, owners, rates and exporter usage by
-- gl_acct_build_day; a day is rebuilt when anything it was built from changes
-- (usage_daily_built rows are deleted by the triggers below), and a day that
-- is not built (today, a stale or never-built day) is read from jobs live.
CREATE TABLE usage_daily (
    day           date NOT NULL,
    d_team        text NOT NULL,     -- '__unallocated__' when no owner rule matched
    d_project     text NOT NULL,
    d_cost_center text NOT NULL,
    d_user        text NOT NULL,
    d_account     text NOT NULL,
    d_cluster     text NOT NULL,
    d_partition   text NOT NULL,
    d_qos         text NOT NULL,
    d_namespace   text NOT NULL,
    d_gpu_model   text NOT NULL,     -- 'unknown' when the job names no single GPU type
    gpu_model     text,              -- lower(gpu_type) as jobs carry it
    rate          bigint,            -- micro-units per GPU-hour of a priced piece; NULL otherwise
    alloc         bigint NOT NULL,   -- milli-GPU-seconds allocated (rows with rate IS NULL)
    priced        bigint NOT NULL,   -- milli-GPU-seconds covered by `rate`
    busy          double precision NOT NULL,
    idle          double precision NOT NULL,
    obs           double precision NOT NULL
);
-- Month queries read ~31 days of it; a rebuild deletes one day.
CREATE INDEX usage_daily_day_idx ON usage_daily (day);

-- The live part of a query (today, a stale day) selects jobs that end after
-- a time or still run; this finds them without scanning all of history.
CREATE INDEX jobs_end_idx ON jobs (end_at) WHERE gpu_milli > 0;

-- Which days usage_daily holds, current as of built_at.
CREATE TABLE usage_daily_built (
    day      date PRIMARY KEY,
    built_at timestamptz NOT NULL DEFAULT now()
);

-- A change to jobs makes the days it touches stale. Statement-level with
-- transition tables: one range delete per ingest batch, not one per row.
CREATE FUNCTION gl_usage_daily_stale_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lo timestamptz;
    hi timestamptz;
BEGIN
    -- serialises with gl_acct_build_day (same lock): a build never commits
    -- a day from a snapshot older than a change that made it stale
    PERFORM pg_advisory_xact_lock(26476, 0);
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
CREATE TRIGGER jobs_daily_stale_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_jobs();
CREATE TRIGGER jobs_daily_stale_upd AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_jobs();
CREATE TRIGGER jobs_daily_stale_del AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_jobs();

-- Exporter usage attributed later changes busy/idle of the days it covers.
CREATE FUNCTION gl_usage_daily_stale_usage() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lo timestamptz;
    hi timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock(26476, 0);
    SELECT min(bucket), max(bucket) INTO lo, hi FROM new_rows;
    IF lo IS NOT NULL THEN
        DELETE FROM usage_daily_built WHERE day BETWEEN (lo AT TIME ZONE 'UTC')::date AND (hi AT TIME ZONE 'UTC')::date;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER gpu_usage_jobs_daily_stale_ins AFTER INSERT ON gpu_usage_jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_usage();
CREATE TRIGGER gpu_usage_jobs_daily_stale_upd AFTER UPDATE ON gpu_usage_jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_usage();

-- Owners, rates and idle owners change every day's figures.
CREATE FUNCTION gl_usage_daily_stale_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(26476, 0);
    DELETE FROM usage_daily_built;
    RETURN NULL;
END $$;
CREATE TRIGGER owners_daily_stale AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON owners
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_all();
CREATE TRIGGER rates_daily_stale AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON rates
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_all();
