-- The runs' days (usage_daily_run, sql/098) summed per month and run, with
-- what a run shows of its members in the month, so a month read by
-- /v1/runs is ~one row per run, not one per run and day nor one per job
-- (docs/runs.md, docs/bench.md).
--
-- The sums are kept by difference: a build adds each rebuilt day's new
-- run-days and subtracts its old ones when the month already held them,
-- so a month's sums are those of exactly the days listed in
-- usage_monthly_run_built.days (never the month's every run-day summed
-- again per batch). A day made stale leaves the list unequal to the
-- month's built days, and readers take the days until it is built again.
-- The cost numerators are exact numerics (priced x rate, the failed
-- attempts' apart).
--
-- The member columns are the closed members (end_s set) the month holds
-- under the jobs' window test, computed again from run_members for the
-- runs whose members a build changed: attempts, distinct jobs, queue
-- time, the first member (submit, else start; then job_pk) and the one
-- that ended last (end; then job_pk) with its state. n_mem 0: no closed
-- member in the month. A run with an open member is read live.
CREATE TABLE usage_monthly_run (
    month      date NOT NULL,
    run_key    text NOT NULL,
    alloc      numeric NOT NULL DEFAULT 0,
    priced     numeric NOT NULL DEFAULT 0,
    cost_num   numeric NOT NULL DEFAULT 0,
    f_alloc    numeric NOT NULL DEFAULT 0,
    f_cost     numeric NOT NULL DEFAULT 0,
    busy       double precision NOT NULL DEFAULT 0,
    idle       double precision NOT NULL DEFAULT 0,
    obs        double precision NOT NULL DEFAULT 0,
    kind       text,
    n_mem      bigint NOT NULL DEFAULT 0,
    attempts   bigint NOT NULL DEFAULT 0,
    jobs       bigint NOT NULL DEFAULT 0,
    queue_s    bigint NOT NULL DEFAULT 0,
    first_s    bigint,
    first_pk   bigint,
    last_end_s bigint,
    last_pk    bigint,
    last_state text,
    -- the first member's owner fields (run_members'): a month is read
    -- without a join to jobs
    f_cluster   text,
    f_user      text,
    f_account   text,
    f_partition text,
    f_namespace text,
    f_name      text,
    PRIMARY KEY (month, run_key)
);
CREATE INDEX usage_monthly_run_key_idx ON usage_monthly_run (run_key);

CREATE TABLE usage_monthly_run_built (
    month    date PRIMARY KEY,
    days     date[] NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now()
);
