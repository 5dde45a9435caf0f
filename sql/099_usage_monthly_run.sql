-- The runs' days (usage_daily_run, sql/098) summed per month and run, so a
-- month read by /v1/runs is ~one row per run, not one per run and day: in
-- bench_runs' month (runs of 4 jobs spread over the month) usage_daily_run
-- held as many rows as usage_daily_job (docs/bench.md).
--
-- As usage_monthly_job (sql/089): a month's rows are the sum over exactly
-- the days listed in usage_monthly_run_built.days, the days of the month
-- usage_daily_run_built held when the build last summed it (once a batch,
-- in the build's transaction). A day made stale leaves the list unequal to
-- the month's built days, and readers take the days until it is built
-- again. The cost numerators are summed here (priced x rate, the failed
-- attempts' apart): exact numerics.
CREATE TABLE usage_monthly_run (
    month    date NOT NULL,
    run_key  text NOT NULL,
    alloc    numeric NOT NULL,
    priced   numeric NOT NULL,
    cost_num numeric NOT NULL,
    f_alloc  numeric NOT NULL,
    f_cost   numeric NOT NULL,
    busy     double precision NOT NULL,
    idle     double precision NOT NULL,
    obs      double precision NOT NULL
);
CREATE INDEX usage_monthly_run_month_idx ON usage_monthly_run (month);

CREATE TABLE usage_monthly_run_built (
    month    date PRIMARY KEY,
    days     date[] NOT NULL,
    built_at timestamptz NOT NULL DEFAULT now()
);
