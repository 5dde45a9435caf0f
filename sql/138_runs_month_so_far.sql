-- 138: the month in progress's runs, built as a window [month start, T)
-- (issue 29). Today is never built, so the month in progress had no built
-- runs and /v1/runs grouped its jobs per request (16 s at 1,000,000 jobs).
-- The runs task now also groups [month start, T), T its build's time, with
-- the request's own code (gl_rundb_runs), into runs_month beside the whole
-- months: until_at is T, NULL for a whole month. A request for the month in
-- progress reads it as the answer as of T, whatever the jobs did since
-- (one snapshot, never a mix); the marks say when the next build is due.
ALTER TABLE runs_month_built ADD COLUMN until_at timestamptz;
