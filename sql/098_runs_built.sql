-- Training runs built with the rollup (docs/runs.md, issue 29): a month of
-- 1M jobs grouped per request read every job and its days (docs/bench.md).
--
-- run_rules: the runs[] grouping rules the members were computed with,
-- synced from the config at start (gl_rundb_sync_rules); a change makes the
-- built days from the earliest changed rule's start on stale there.
-- run_members: each job of a built day (and each job submitted on one that
-- never started) with its run's key, computed in C by the grouping rules'
-- own code (src/domain/runs.c) and bulk-loaded by the build.
-- usage_daily_run: usage_daily_job summed per day and run (the failed
-- attempts apart), built after it in the same transaction.
-- usage_daily_run_built: the days whose runs were built, a subset of
-- usage_daily_built (a day built before this migration has none: readers
-- take such a window live).
CREATE TABLE run_rules (
    ord        integer PRIMARY KEY,
    by_        text NOT NULL,
    cluster    text NOT NULL DEFAULT '',
    valid_from timestamptz NOT NULL DEFAULT '-infinity',
    valid_to   timestamptz NOT NULL DEFAULT 'infinity'
);

CREATE TABLE run_members (
    job_pk   bigint PRIMARY KEY,
    run_key  text NOT NULL,
    kind     text NOT NULL,
    base_key text NOT NULL,
    submit_s bigint,
    start_s  bigint,
    end_s    bigint,
    state    text,
    queue_s  bigint NOT NULL,
    attempt  boolean NOT NULL,
    failed   boolean NOT NULL,
    -- the job's owner fields a run is listed and aggregated by when it is
    -- the run's first member
    cluster   text,
    user_name text,
    account   text,
    partition text,
    namespace text,
    name      text
);
CREATE INDEX run_members_start_idx ON run_members (start_s);
-- a request's runs with an open job read their other members by key
CREATE INDEX run_members_run_idx ON run_members (run_key);

CREATE TABLE usage_daily_run (
    day       date NOT NULL,
    run_key   text NOT NULL,
    failed    boolean NOT NULL,
    gpu_model text,
    rate      bigint,
    alloc     bigint NOT NULL,
    priced    bigint NOT NULL,
    busy      double precision NOT NULL,
    idle      double precision NOT NULL,
    obs       double precision NOT NULL
);
CREATE INDEX usage_daily_run_day_idx ON usage_daily_run (day);

CREATE TABLE usage_daily_run_built (
    day date PRIMARY KEY REFERENCES usage_daily_built (day) ON DELETE CASCADE
);

-- A write to the rules other than the sync (which marks the days it changes
-- itself) makes every day stale, as one to owners does.
CREATE FUNCTION gl_run_rules_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('gpuledger.run_rules_sync', true), '') <> 'on' THEN
        PERFORM pg_advisory_xact_lock(26476, 0);
        DELETE FROM usage_daily_built;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER run_rules_daily_stale AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON run_rules
    FOR EACH STATEMENT EXECUTE FUNCTION gl_run_rules_stale();

-- What a run reads of a job beyond what the rollup's staleness compares
-- (sql/012, 079): a never-started job (no allocation, so no day of its
-- own), and a job's name, state, submit time and array/het ids. Their
-- change makes the days the job spans (its submit day when it never
-- started) stale.
CREATE FUNCTION gl_run_members_stale() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lo timestamptz;
    hi timestamptz;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        SELECT min(coalesce(n.start_at, n.submit_at)), max(coalesce(n.end_at, 'infinity')) INTO lo, hi
        FROM old_rows o JOIN new_rows n ON n.cluster_id = o.cluster_id AND n.job_pk = o.job_pk
        WHERE (o.name, o.state, o.submit_at, o.array_job_id, o.het_job_id, o.het_offset, o.job_id)
              IS DISTINCT FROM (n.name, n.state, n.submit_at, n.array_job_id, n.het_job_id, n.het_offset, n.job_id)
          AND coalesce(n.start_at, n.submit_at) IS NOT NULL;
    ELSE
        SELECT min(submit_at), max(submit_at) INTO lo, hi FROM new_rows WHERE start_at IS NULL AND submit_at IS NOT NULL;
    END IF;
    IF lo IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(26476, 0);
        DELETE FROM usage_daily_built WHERE day >= (lo AT TIME ZONE 'UTC')::date
            AND (hi = 'infinity' OR day <= (hi AT TIME ZONE 'UTC')::date);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_run_stale_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_run_members_stale();
CREATE TRIGGER jobs_run_stale_upd AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_run_members_stale();
