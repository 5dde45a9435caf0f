-- serving_daily summed per UTC calendar month, kept in the same transaction:
-- a month's window at a thousand endpoints reads a thousand rows here, not
-- the 31,000 of serving_daily, whose latency arrays alone cost ~100 ms to
-- read and sum (bench/bench_inference.c, docs/bench.md). Windows that do
-- not cover whole months read serving_daily and serving_usage as before.
CREATE TABLE serving_monthly (
    month            date NOT NULL,            -- the first day of the month
    series_id        bigint NOT NULL,
    job_pk           bigint NOT NULL DEFAULT 0,
    cluster_id       integer NOT NULL,
    endpoint_id      integer NOT NULL,
    requests         bigint NOT NULL DEFAULT 0,
    failed           bigint NOT NULL DEFAULT 0,
    prompt_tokens    bigint NOT NULL DEFAULT 0,
    generated_tokens bigint NOT NULL DEFAULT 0,
    inferences       bigint NOT NULL DEFAULT 0,
    executions       bigint NOT NULL DEFAULT 0,
    lat_inc          bigint[] NOT NULL DEFAULT '{}',
    scrapes          integer NOT NULL DEFAULT 0,
    PRIMARY KEY (series_id, month, job_pk),
    CHECK (month = date_trunc('month', month)::date)
);
CREATE INDEX serving_monthly_month_idx ON serving_monthly (month);

-- the months of serving_daily rows written before this table
INSERT INTO serving_monthly (month, series_id, job_pk, cluster_id, endpoint_id, requests, failed, prompt_tokens,
                             generated_tokens, inferences, executions, lat_inc, scrapes)
SELECT m.month, m.series_id, m.job_pk, m.cluster_id, m.endpoint_id, m.requests, m.failed, m.prompt_tokens,
       m.generated_tokens, m.inferences, m.executions,
       coalesce((SELECT array_agg(z.s ORDER BY z.o) FROM (SELECT t.o, sum(t.v)::bigint AS s
                   FROM serving_daily d2 CROSS JOIN LATERAL unnest(d2.lat_inc) WITH ORDINALITY AS t(v, o)
                  WHERE d2.series_id = m.series_id AND d2.job_pk = m.job_pk
                    AND date_trunc('month', d2.day)::date = m.month GROUP BY t.o) z), '{}'),
       m.scrapes
  FROM (SELECT date_trunc('month', d.day)::date AS month, d.series_id, d.job_pk, min(d.cluster_id) AS cluster_id,
               min(d.endpoint_id) AS endpoint_id, sum(d.requests) AS requests, sum(d.failed) AS failed,
               sum(d.prompt_tokens) AS prompt_tokens, sum(d.generated_tokens) AS generated_tokens,
               sum(d.inferences) AS inferences, sum(d.executions) AS executions, sum(d.scrapes) AS scrapes
          FROM serving_daily d GROUP BY 1, 2, 3) m;
