-- 115: the clusters without capacity data (sql/104) probed in index order.
-- A shard asked for a month took 22-36 ms where the year took 0.7 ms
-- (300,000 jobs over three shards, docs/scale.md "What it costs"): "any
-- job of the cluster in the window, LIMIT 1" was planned as a sequential
-- scan of jobs expecting a hit within a few rows, but jobs lie in the heap
-- in time order, so a month in the middle of the year first passed every
-- job that ended before it (57,548 rows). Ordered by end_at the probe is
-- the first entry of jobs_window_idx past the window's start (0.3 ms); the
-- open jobs' probe likewise walks jobs_running_idx from the start. Same
-- rule, same answers.
CREATE OR REPLACE FUNCTION gl_capacity_missing_here(p_a bigint, p_b bigint, p_clusters text[]) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
SELECT c.name FROM clusters c
WHERE (p_clusters IS NULL OR c.name = ANY(p_clusters))
  AND (coalesce((SELECT true FROM jobs jb WHERE jb.cluster_id = c.cluster_id AND jb.gpu_milli > 0
                   AND jb.end_at > to_timestamp(p_a) AND jb.start_at < to_timestamp(p_b)
                   ORDER BY jb.end_at LIMIT 1), false)
       OR coalesce((SELECT true FROM jobs jb WHERE jb.cluster_id = c.cluster_id AND jb.end_at IS NULL
                      AND jb.start_at IS NOT NULL AND jb.gpu_milli > 0 AND jb.start_at < to_timestamp(p_b)
                      ORDER BY jb.start_at LIMIT 1),
                   false))
  AND NOT EXISTS (SELECT 1 FROM node_gpu_spans s WHERE s.cluster_id = c.cluster_id
                    AND s.valid_from < to_timestamp(p_b) AND (s.valid_to IS NULL OR s.valid_to > to_timestamp(p_a)))
  AND NOT EXISTS (SELECT 1 FROM gpus gp WHERE gp.cluster_id = c.cluster_id
                    AND gp.first_seen < to_timestamp(p_b) AND (gp.absent_since IS NULL OR gp.absent_since > to_timestamp(p_a)))
$$;

-- A query a central sends a shard (sql/110) is planned and run there
-- without JIT. Our statements run with jit off in the daemon's sessions
-- (session_setup), but a dblink session is the server's default, jit on:
-- the capacity query over a shard's 100,000 jobs is costed past
-- jit_optimize_above_cost and spent 6.4 s compiling to run 15 ms of
-- execution (EXPLAIN ANALYZE on a shard of bench_shards at 300,000 jobs:
-- "Optimization 3238 ms, Emission 2983 ms").
CREATE OR REPLACE FUNCTION gl_read_only_rows(p_sql text) RETURNS SETOF record LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('transaction_read_only', 'on', true);
    PERFORM set_config('jit', 'off', true);
    RETURN QUERY EXECUTE p_sql;
END $$;

-- A query whose answer is a union of per-cluster rows, asked of each
-- shard whole. Over foreign partitions the central runs such a query
-- itself, reading every row it needs from the shards: a month's capacity
-- read the month's jobs of every shard (25,482 rows at 300,000 jobs; 145-213
-- ms where one database answers in 52-80). When every row of the answer
-- belongs to one cluster and a cluster lives on one shard, each shard
-- answers for its own clusters and the answer is the union of theirs. On
-- a session routed to the fleet (gl_fleet_use) with dblink installed,
-- each shard answers; otherwise the query runs here, over this session's
-- tables. p_sql's parameters $1.. are given as text in p_params and
-- written into the text as literals (dblink takes none).
CREATE FUNCTION gl_fleet_rows(p_sql text, p_params text[], p_cols text) RETURNS SETOF record
LANGUAGE plpgsql AS $$
DECLARE
    m text := substring(current_setting('search_path') FROM '^"?gl_fleet_([0-9]+)');
    q text := p_sql;
BEGIN
    -- the highest first: $1 must not take the front of $10
    FOR i IN REVERSE coalesce(array_length(p_params, 1), 0) .. 1 LOOP
        q := replace(q, '$' || i, coalesce(quote_literal(p_params[i]), 'NULL'));
    END LOOP;
    IF m IS NOT NULL AND to_regprocedure('public.dblink_send_query(text, text)') IS NOT NULL THEN
        RETURN QUERY EXECUTE format('SELECT * FROM gl_fleet_rows_remote(%s, %L, %L) AS t(%s)', m, q, p_cols, p_cols);
    ELSE
        RETURN QUERY EXECUTE q;
    END IF;
END $$;
