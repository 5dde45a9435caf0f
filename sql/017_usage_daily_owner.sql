-- A coarser daily rollup for the month queries people make most: by team,
-- project, cost centre, cluster, partition or GPU model (and filters on
-- those). usage_daily keeps one row per user x account x QoS x namespace as
-- well, about 4,000 rows a day on a 2,000-user fleet; this one a few dozen,
-- so a month by team reads ~1,000 rows instead of ~120,000. Built in the same
-- transaction as usage_daily (gl_acct_build_day) from its rows, so the two
-- always hold the same day; usage_daily_built covers both.
CREATE TABLE usage_daily_owner (
    day           date NOT NULL,
    d_team        text NOT NULL,
    d_project     text NOT NULL,
    d_cost_center text NOT NULL,
    d_cluster     text NOT NULL,
    d_partition   text NOT NULL,
    d_gpu_model   text NOT NULL,
    gpu_model     text,
    rate          bigint,
    alloc         bigint NOT NULL,
    priced        bigint NOT NULL,
    busy          double precision NOT NULL,
    idle          double precision NOT NULL,
    obs           double precision NOT NULL
);
CREATE INDEX usage_daily_owner_day_idx ON usage_daily_owner (day);

INSERT INTO usage_daily_owner
SELECT day, d_team, d_project, d_cost_center, d_cluster, d_partition, d_gpu_model, gpu_model, rate,
       sum(alloc), sum(priced), sum(busy), sum(idle), sum(obs)
FROM usage_daily
GROUP BY day, d_team, d_project, d_cost_center, d_cluster, d_partition, d_gpu_model, gpu_model, rate;
