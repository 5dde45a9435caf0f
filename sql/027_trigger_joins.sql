-- The statement triggers of sql/021 joined their transition table to jobs
-- (or to nodes) in one UPDATE, and the planner chose the join from the
-- table's statistics. After a killed batch, autovacuum records jobs as
-- empty (reltuples 0) however many rows a rerun then writes: the trigger's
-- UPDATE became a nested loop that scanned the whole batch once for every
-- job row (10k rows: 0.46 s -> 18.3 s; 20k rows: 1.24 s -> 121 s). The
-- refresh joined jobs to itself the same way.
--
-- Now no trigger joins a table: the batch alone says which rows change
-- (one pass over the transition table, where the model is looked up once
-- per row, as before), their keys are collected, and jobs (or nodes) is
-- read through `key = ANY (keys)` in a statement run by EXECUTE: a one-shot
-- plan in which the keys are a constant, so the scan is an index scan or a
-- sequential scan with a hashed lookup (linear whatever the statistics
-- say). A nested loop has no join to choose. tests/integration/
-- test_rerun_plan.c holds the plans to it.

-- Sets node_gpu_model of the given jobs from their first node (the rows a
-- caller found to change). Returns the rows updated.
CREATE FUNCTION gl_jobs_node_model_set(p_pks bigint[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    IF p_pks IS NULL THEN
        RETURN 0;
    END IF;
    EXECUTE 'UPDATE jobs j SET node_gpu_model = gl_job_node_model(j.cluster_id, j.nodes[1], j.start_at)'
            ' WHERE j.job_pk = ANY ($1)' USING p_pks;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

CREATE OR REPLACE FUNCTION gl_jobs_node_model_refresh(p_cluster integer, p_nodes text[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    pks bigint[];
BEGIN
    -- EXECUTE here too: the node list is a constant (a hashed lookup), in
    -- a session whose cached generic plan would search it row by row
    EXECUTE 'SELECT array_agg(j.job_pk) FROM jobs j'
            ' WHERE j.cluster_id = $1 AND j.gpu_type IS NULL AND j.gpu_milli > 0'
            '   AND j.start_at IS NOT NULL AND cardinality(j.nodes) > 0'
            '   AND ($2::text[] IS NULL OR j.nodes[1] = ANY ($2::text[]))'
            '   AND j.node_gpu_model IS DISTINCT FROM gl_job_node_model(j.cluster_id, j.nodes[1], j.start_at)'
       INTO pks USING p_cluster, p_nodes;
    RETURN gl_jobs_node_model_set(pks);
END $$;

-- Jobs written by an ingest: their own rows, once per statement.
CREATE OR REPLACE FUNCTION gl_jobs_node_model_new() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    pks bigint[];
BEGIN
    -- the refresh's own UPDATE fires this trigger again: nothing to do there
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    -- new_rows holds each row as the statement left it, node_gpu_model
    -- included: the rows whose model changes are known without jobs
    SELECT array_agg(r.job_pk) INTO pks FROM new_rows r
     WHERE r.gpu_type IS NULL AND r.gpu_milli > 0 AND r.start_at IS NOT NULL AND cardinality(r.nodes) > 0
       AND r.node_gpu_model IS DISTINCT FROM gl_job_node_model(r.cluster_id, r.nodes[1], r.start_at);
    PERFORM gl_jobs_node_model_set(pks);
    RETURN NULL;
END $$;

-- The names of the given nodes by cluster, for the refresh.
CREATE FUNCTION gl_nodes_by_cluster(p_ids bigint[]) RETURNS TABLE (cluster_id integer, nodes text[])
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_ids IS NOT NULL THEN
        RETURN QUERY EXECUTE 'SELECT n.cluster_id, array_agg(DISTINCT n.name) FROM nodes n'
                             ' WHERE n.node_id = ANY ($1) GROUP BY n.cluster_id' USING p_ids;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION gl_gpus_node_model() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM gl_nodes_by_cluster(ARRAY(SELECT DISTINCT node_id FROM new_gpus WHERE model IS NOT NULL))
    LOOP
        PERFORM gl_jobs_node_model_refresh(c.cluster_id, c.nodes);
    END LOOP;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION gl_gpus_node_model_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    -- EXCEPT, a hashed set operation: a join of the two transition tables
    -- (no statistics) was planned as a nested loop, seconds per 10k-GPU scrape
    FOR c IN SELECT * FROM gl_nodes_by_cluster(ARRAY(
                 SELECT DISTINCT g.node_id
                   FROM (SELECT gpu_id, cluster_id, node_id, model FROM new_gpus WHERE model IS NOT NULL
                         EXCEPT SELECT gpu_id, cluster_id, node_id, model FROM old_gpus) g))
    LOOP
        PERFORM gl_jobs_node_model_refresh(c.cluster_id, c.nodes);
    END LOOP;
    RETURN NULL;
END $$;
