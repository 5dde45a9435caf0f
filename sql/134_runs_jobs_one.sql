-- The jobs inserted and the jobs deleted mark their months alike (sql/131),
-- so one function serves both triggers: the delete trigger names its
-- transition table (the deleted rows) new_rows as the insert trigger does,
-- the name the function reads. The triggers keep their names, and so their
-- order among the other triggers on jobs (by name).
ALTER FUNCTION gl_runs_jobs_ins() RENAME TO gl_runs_jobs_mark;
DROP TRIGGER jobs_runs_del ON jobs;
CREATE TRIGGER jobs_runs_del AFTER DELETE ON jobs REFERENCING OLD TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_runs_jobs_mark();
DROP FUNCTION gl_runs_jobs_del();
