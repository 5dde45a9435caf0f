-- usage_daily_job (sql/052) keeps every job's line of a built day, not the
-- serving jobs' only: /v1/runs reads a month of per-job costs from it (and
-- usage_monthly_job, sql/089) instead of computing every job's line live,
-- with the chargeback's own query (gl_accounting_build_day builds it in
-- the same transaction as usage_daily).
--
-- A job becoming a serving job no longer changes what a built day holds:
-- the trigger that made its days stale goes.
DROP TRIGGER serving_jobs_daily_stale ON serving_jobs;
DROP FUNCTION gl_serving_jobs_stale();

-- The days built so far hold the serving jobs only: built again, with
-- every job, by the next rollup (readers take them live until then).
DELETE FROM usage_daily_built;
