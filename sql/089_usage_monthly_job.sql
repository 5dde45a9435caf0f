-- A per-job monthly rollup of usage_daily_job (sql/052) for /v1/inference:
-- a month of 1,000 serving jobs read 62,000 daily rows (a row per job, day
-- and rate piece) and grouped them per request, ~300 ms of its ~350 ms
-- (docs/bench.md); a month read here is ~2,000 rows.
--
-- A month's rows are the sum of usage_daily_job over exactly the days listed
-- in usage_monthly_job_built.days, the days of the month usage_daily_built
-- held when gl_acct_build_day last built one of them (it rebuilds the month
-- in the same transaction, under the same lock). A day made stale leaves
-- usage_daily_built, so the list no longer equals the month's built days
-- and readers take the days instead, until the day is built again and the
-- month with it: late data never reads an old month.
CREATE TABLE usage_monthly_job (
    month         date NOT NULL,
    job_pk        bigint NOT NULL,
    d_team        text NOT NULL,
    d_project     text NOT NULL,
    d_cost_center text NOT NULL,
    d_cluster     text NOT NULL,
    d_namespace   text NOT NULL,
    d_gpu_model   text NOT NULL,
    gpu_model     text,
    rate          bigint,
    alloc         bigint NOT NULL,
    priced        bigint NOT NULL,
    busy          double precision NOT NULL,
    idle          double precision NOT NULL,
    obs           double precision NOT NULL
);
CREATE INDEX usage_monthly_job_month_idx ON usage_monthly_job (month);

CREATE TABLE usage_monthly_job_built (
    month    date PRIMARY KEY,
    days     date[] NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now()
);

-- The months of the days built so far.
INSERT INTO usage_monthly_job
SELECT date_trunc('month', u.day)::date, u.job_pk, u.d_team, u.d_project, u.d_cost_center, u.d_cluster,
       u.d_namespace, u.d_gpu_model, u.gpu_model, u.rate, sum(u.alloc), sum(u.priced), sum(u.busy), sum(u.idle),
       sum(u.obs)
FROM usage_daily_job u JOIN usage_daily_built b ON b.day = u.day
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;
INSERT INTO usage_monthly_job_built (month, days)
SELECT date_trunc('month', day)::date, array_agg(day ORDER BY day) FROM usage_daily_built GROUP BY 1;
