-- A load of the cost model (gl_costing_load) replaces the config's rates,
-- owner rules and GPU model aliases with DELETE and INSERT; the statement
-- triggers of sql/012 and sql/024 then emptied usage_daily_built, so every
-- daemon start threw the whole rollup away even when nothing had changed.
-- The load now works out the days its net change touches and marks only
-- those stale (src/store/costing.c); within its transaction it sets
-- gpuledger.costing_load, and the whole-table trigger leaves the rest to
-- it. Any other write to these tables (by hand, another tool) still makes
-- every day stale.
CREATE OR REPLACE FUNCTION gl_usage_daily_stale_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('gpuledger.costing_load', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(26476, 0);
    DELETE FROM usage_daily_built;
    RETURN NULL;
END $$;
