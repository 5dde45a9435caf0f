-- 131: a calendar month's training runs, built once its days are (issue 29).
-- /v1/runs read every job of the window and grouped it per request: 1,000,000
-- jobs a month gave no answer within 30 s. A run's figures cannot be summed
-- from days or runs built apart: each job's line is its line of the window's
-- chargeback, whose rounding carries the remainders over every line of the
-- window (gl_cost_apportion), so a job's cost depends on the whole window.
-- The month's answer is therefore built whole, by the request's own code
-- (gl_rundb_runs), and kept with what it was built from: the runs[] rules
-- (rules_sig), the month's built days (days_sig: their count and latest
-- build) and the jobs (jobs_sig, the sum of runs_jobs_changed). A request
-- whose three marks differ reads the jobs as before.
CREATE TABLE runs_month (
    month              date    NOT NULL,
    ord                integer NOT NULL, -- the answer's order (newest first submit first)
    key                text    NOT NULL,
    kind               text    NOT NULL,
    cluster            text,
    user_name          text,
    account            text,
    partition          text,
    namespace_         text,
    name               text,
    first_submit_s     bigint,
    last_end_s         bigint,
    state              text    NOT NULL,
    attempts           bigint  NOT NULL,
    jobs               bigint  NOT NULL,
    gpu_s              bigint  NOT NULL,
    cost_micros        bigint  NOT NULL,
    failed_cost_micros bigint  NOT NULL,
    failed_gpu_s       bigint  NOT NULL,
    unpriced_s         bigint  NOT NULL,
    unobserved_s       bigint  NOT NULL,
    queue_s            bigint  NOT NULL,
    busy_s             float8  NOT NULL,
    idle_s             float8  NOT NULL,
    observed_s         float8  NOT NULL,
    PRIMARY KEY (month, ord)
);

CREATE TABLE runs_month_built (
    month     date PRIMARY KEY,
    rules_sig text   NOT NULL,
    days_sig  text   NOT NULL,
    jobs_sig  bigint NOT NULL,
    -- a run with exporter data (busy, idle or observed time not 0): then
    -- a sum of runs adds their floats in the runs' order, as /v1/runs
    -- does; else every float is 0 and any order gives 0 (an ordered sum
    -- cannot be hashed: its sort by the group was most of 0.6 s at
    -- 250,000 runs)
    observed  boolean NOT NULL,
    built_at  timestamptz NOT NULL DEFAULT now()
);

-- A count a cluster of the statements that changed its jobs: any change
-- (a new pending job, a renamed job, a deleted one) moves the sum, which
-- no maximum of times would do for a writer that commits late. A row a
-- cluster, as job_span_max (sql/100): writers of different clusters never
-- wait for each other.
CREATE TABLE runs_jobs_changed (
    cluster_id integer PRIMARY KEY,
    n          bigint NOT NULL
);

CREATE FUNCTION gl_runs_jobs_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runs_jobs_changed AS r (cluster_id, n)
        SELECT DISTINCT t.cluster_id, 1 FROM changed_rows t
    ON CONFLICT (cluster_id) DO UPDATE SET n = r.n + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_runs_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_runs_jobs_note();
CREATE TRIGGER jobs_runs_upd AFTER UPDATE ON jobs REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_runs_jobs_note();
CREATE TRIGGER jobs_runs_del AFTER DELETE ON jobs REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_runs_jobs_note();
