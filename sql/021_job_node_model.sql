-- The GPU model of a job whose scheduler names none: a Kubernetes pod asks
-- for nvidia.com/gpu, an untyped Slurm job for gres/gpu=N. Its node knows:
-- node_gpu_model is the model of the job's first node when it started (the
-- scheduler inventory, else the exporter's; the node's first span when the
-- inventory starts after the job). Accounting prices and groups jobs by
-- lower(coalesce(gpu_type, node_gpu_model)), so such a job is priced by the
-- hardware it held instead of being unpriced 'unknown', and its allocation
-- meets the capacity of that model. gpu_type stays what the scheduler said.
ALTER TABLE jobs ADD COLUMN node_gpu_model text;
CREATE INDEX node_gpu_spans_node_from_idx ON node_gpu_spans (cluster_id, node, valid_from);

CREATE FUNCTION gl_job_node_model(p_cluster integer, p_node text, p_at timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        (SELECT nullif(s.gpu_model, '') FROM node_gpu_spans s
          WHERE s.cluster_id = p_cluster AND s.node = p_node AND s.valid_from <= p_at
          ORDER BY s.valid_from DESC, s.gpu_model LIMIT 1),
        (SELECT nullif(s.gpu_model, '') FROM node_gpu_spans s
          WHERE s.cluster_id = p_cluster AND s.node = p_node ORDER BY s.valid_from, s.gpu_model LIMIT 1),
        (SELECT g.model FROM gpus g JOIN nodes n ON n.node_id = g.node_id
          WHERE g.cluster_id = p_cluster AND n.name = p_node AND g.model IS NOT NULL AND g.model <> ''
          ORDER BY g.first_seen > p_at, g.first_seen DESC, g.model LIMIT 1))
$$;

-- Sets node_gpu_model of the untyped GPU jobs of a cluster that started on
-- one of p_nodes (all of its nodes when NULL), where it changes. The UPDATE
-- fires the usage_daily staleness trigger, so built days are rebuilt.
CREATE FUNCTION gl_jobs_node_model_refresh(p_cluster integer, p_nodes text[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    UPDATE jobs j SET node_gpu_model = m.model
      FROM (SELECT j2.job_pk, gl_job_node_model(j2.cluster_id, j2.nodes[1], j2.start_at) AS model
              FROM jobs j2
             WHERE j2.cluster_id = p_cluster AND j2.gpu_type IS NULL AND j2.gpu_milli > 0
               AND j2.start_at IS NOT NULL AND cardinality(j2.nodes) > 0
               AND (p_nodes IS NULL OR j2.nodes[1] = ANY (p_nodes))) m
     WHERE j.job_pk = m.job_pk AND j.cluster_id = p_cluster AND j.node_gpu_model IS DISTINCT FROM m.model;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- Jobs written by an ingest: their own rows, once per statement.
CREATE FUNCTION gl_jobs_node_model_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- the refresh's own UPDATE fires this trigger again: nothing to do there
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    -- the model looked up once per row (every pod of a kube ingest is untyped)
    UPDATE jobs j SET node_gpu_model = x.model
      FROM (SELECT r.job_pk, r.cluster_id, gl_job_node_model(r.cluster_id, r.nodes[1], r.start_at) AS model
              FROM new_rows r
             WHERE r.gpu_type IS NULL AND r.gpu_milli > 0 AND r.start_at IS NOT NULL AND cardinality(r.nodes) > 0) x
     WHERE j.job_pk = x.job_pk AND j.cluster_id = x.cluster_id AND j.node_gpu_model IS DISTINCT FROM x.model;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_node_model_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_jobs_node_model_new();
CREATE TRIGGER jobs_node_model_upd AFTER UPDATE ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_jobs_node_model_new();

-- Inventory that arrives after the jobs (a first node snapshot, a new
-- exporter GPU) fills them in.
CREATE FUNCTION gl_spans_node_model() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT cluster_id, array_agg(DISTINCT node) AS nodes FROM new_spans GROUP BY cluster_id LOOP
        PERFORM gl_jobs_node_model_refresh(c.cluster_id, c.nodes);
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER node_gpu_spans_node_model AFTER INSERT ON node_gpu_spans REFERENCING NEW TABLE AS new_spans
    FOR EACH STATEMENT EXECUTE FUNCTION gl_spans_node_model();

CREATE FUNCTION gl_gpus_node_model() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT g.cluster_id, array_agg(DISTINCT n.name) AS nodes
               FROM new_gpus g JOIN nodes n ON n.node_id = g.node_id
              WHERE g.model IS NOT NULL GROUP BY g.cluster_id LOOP
        PERFORM gl_jobs_node_model_refresh(c.cluster_id, c.nodes);
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER gpus_node_model AFTER INSERT ON gpus REFERENCING NEW TABLE AS new_gpus
    FOR EACH STATEMENT EXECUTE FUNCTION gl_gpus_node_model();
-- The exporter may name a GPU's model on a later scrape than the one that
-- listed it (model NULL, then a value). Every scrape updates every GPU row
-- (last_seen), so only rows whose model changed refresh anything.
CREATE FUNCTION gl_gpus_node_model_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    c record;
BEGIN
    -- EXCEPT, a hashed set operation: a join of the two transition tables
    -- (no statistics) was planned as a nested loop, seconds per 10k-GPU scrape
    FOR c IN SELECT g.cluster_id, array_agg(DISTINCT n.name) AS nodes
               FROM (SELECT gpu_id, cluster_id, node_id, model FROM new_gpus WHERE model IS NOT NULL
                     EXCEPT SELECT gpu_id, cluster_id, node_id, model FROM old_gpus) g
               JOIN nodes n ON n.node_id = g.node_id GROUP BY g.cluster_id LOOP
        PERFORM gl_jobs_node_model_refresh(c.cluster_id, c.nodes);
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER gpus_node_model_upd AFTER UPDATE ON gpus REFERENCING OLD TABLE AS old_gpus NEW TABLE AS new_gpus
    FOR EACH STATEMENT EXECUTE FUNCTION gl_gpus_node_model_changed();

SELECT gl_jobs_node_model_refresh(cluster_id, NULL) FROM clusters;
