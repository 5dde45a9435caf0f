-- One GPU model per physical GPU type, whatever the source calls it.
-- dcgm-exporter says modelName "NVIDIA A100-SXM4-80GB", the Kubernetes GPU
-- feature discovery label "NVIDIA-A100-SXM4-80GB", Slurm "gres/gpu:a100"
-- and the rates "a100": stored as each source wrote it (nothing rewritten),
-- they are compared through gl_gpu_model(), so the capacity of a model, the
-- jobs allocated on it and its rate meet under one key.
--
-- Why at comparison time and not at ingest: ingest stays as fast as it is
-- and keeps what the source said (/v1/inventory shows it); an alias added to
-- the configuration later applies to all history at once, without a
-- rewrite; and one implementation (this one) serves every source.
--
-- The rule (docs/capacity.md, "GPU models"): lower case; a leading "gpu:"
-- (Slurm GRES) or "nvidia.com/" dropped; split at '-', '_', ' ' and
-- '/'; the brand words nvidia, tesla, geforce, quadro dropped; the first
-- word left is the model, joined with the next one after "rtx" or "gtx"
-- ("NVIDIA GeForce RTX 3090" -> rtx3090). "NVIDIA A100-SXM4-80GB",
-- "A100_80GB", "gpu:a100" -> a100; "NVIDIA H100 80GB HBM3" -> h100;
-- "Tesla V100-SXM2-32GB" -> v100. A name that leaves no word ('') stays.
-- A name holding a MIG profile ("1g.10gb", Slurm's "a100_3g.40gb") stays as
-- it is, lower case: a slice is priced by its own rate (docs/config.md).
CREATE FUNCTION gl_gpu_model_rule(p text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN w[1] IS NULL THEN lower(p)
                WHEN lower(p) ~ '[0-9]+g\.[0-9]+gb' THEN regexp_replace(lower(p), '^(gpu:|nvidia\.com/)', '')
                WHEN w[1] IN ('rtx', 'gtx') AND w[2] IS NOT NULL THEN w[1] || w[2]
                ELSE w[1] END
      FROM (SELECT array_remove(array_remove(array_remove(array_remove(array_remove(
                   regexp_split_to_array(regexp_replace(lower(p), '^(gpu:|nvidia\.com/)', ''), '[-_ /]+'),
                   ''), 'nvidia'), 'tesla'), 'geforce'), 'quadro') AS w) x
$$;

-- Explicit aliases (config gpu_models[]), for names the rule cannot derive:
-- a site whose Slurm calls its 80 GB A100s "a100_80g" maps the exporter's
-- "NVIDIA A100-SXM4-80GB" there. match is kept lower case; a model that is
-- the target of an alias is canonical as it is (the rule would cut
-- "a100_80g" to "a100").
CREATE TABLE gpu_model_aliases (
    match      text PRIMARY KEY CHECK (match = lower(match) AND match <> ''),
    model      text NOT NULL CHECK (model = lower(model) AND model <> ''),
    source     text NOT NULL DEFAULT 'config'
);
CREATE INDEX gpu_model_aliases_model_idx ON gpu_model_aliases (model);

-- The canonical model of a name, worked out: an alias, else a name an
-- alias maps to, else the rule. Some 10 us a call: only ever called once per
-- distinct name, to fill gpu_model_canon below.
CREATE FUNCTION gl_gpu_model_derive(p text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce((SELECT a.model FROM gpu_model_aliases a WHERE a.match = lower(p)),
                    (SELECT a.model FROM gpu_model_aliases a WHERE a.model = lower(p) LIMIT 1),
                    gl_gpu_model_rule(p))
$$;

-- Every model name stored anywhere (lower case) with its canonical model.
-- Accounting reads a model per job row: an index probe here costs a fraction
-- of a microsecond, deriving it per row a hundred times more. Kept complete
-- by the triggers below (each ingest statement adds the names it brought)
-- and recomputed when an alias changes; a name still missing is derived on
-- the spot, so a gap costs time, never a wrong answer.
CREATE TABLE gpu_model_canon (
    raw        text PRIMARY KEY,
    model      text NOT NULL
);

-- The canonical model of a name (NULL stays NULL). PostgreSQL never inlines
-- a function holding a subquery (some 3 us a call): queries that read it per
-- job row write the probe out instead (GL_GPU_MODEL_SQL, include/gl/accounting.h)
-- and call this only for what the probe misses.
CREATE FUNCTION gl_gpu_model(p text) RETURNS text LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce((SELECT c.model FROM gpu_model_canon c WHERE c.raw = lower(p)), gl_gpu_model_derive(p))
$$;

CREATE FUNCTION gl_gpu_model_note(p_names text[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO gpu_model_canon (raw, model)
    SELECT d.raw, gl_gpu_model_derive(d.raw)
      FROM (SELECT DISTINCT lower(n) AS raw FROM unnest(p_names) n WHERE n IS NOT NULL) d
     WHERE NOT EXISTS (SELECT 1 FROM gpu_model_canon c WHERE c.raw = d.raw)
    ON CONFLICT (raw) DO NOTHING
$$;

CREATE FUNCTION gl_gpu_model_note_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gl_gpu_model_note(ARRAY(SELECT DISTINCT x FROM new_rows r,
                                    LATERAL (VALUES (r.gpu_type), (r.node_gpu_model)) v(x) WHERE x IS NOT NULL));
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_gpu_model_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_gpu_model_note_jobs();
CREATE TRIGGER jobs_gpu_model_upd AFTER UPDATE ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_gpu_model_note_jobs();

CREATE FUNCTION gl_gpu_model_note_gpus() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gl_gpu_model_note(ARRAY(SELECT DISTINCT r.model FROM new_rows r WHERE r.model IS NOT NULL));
    RETURN NULL;
END $$;
CREATE TRIGGER gpus_gpu_model_ins AFTER INSERT ON gpus REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_gpu_model_note_gpus();
CREATE TRIGGER gpus_gpu_model_upd AFTER UPDATE ON gpus REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_gpu_model_note_gpus();

CREATE FUNCTION gl_gpu_model_note_spans() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gl_gpu_model_note(ARRAY(SELECT DISTINCT r.gpu_model FROM new_rows r));
    RETURN NULL;
END $$;
CREATE TRIGGER node_gpu_spans_gpu_model_ins AFTER INSERT ON node_gpu_spans REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_gpu_model_note_spans();

-- An alias change re-derives the names already known (a handful of rows).
CREATE FUNCTION gl_gpu_model_rederive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE gpu_model_canon c SET model = d.model
      FROM (SELECT raw, gl_gpu_model_derive(raw) AS model FROM gpu_model_canon) d
     WHERE c.raw = d.raw AND c.model IS DISTINCT FROM d.model;
    RETURN NULL;
END $$;
CREATE TRIGGER gpu_model_aliases_rederive AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON gpu_model_aliases
    FOR EACH STATEMENT EXECUTE FUNCTION gl_gpu_model_rederive();

SELECT gl_gpu_model_note(ARRAY(SELECT gpu_type FROM jobs WHERE gpu_type IS NOT NULL
                               UNION SELECT node_gpu_model FROM jobs WHERE node_gpu_model IS NOT NULL
                               UNION SELECT model FROM gpus WHERE model IS NOT NULL
                               UNION SELECT gpu_model FROM node_gpu_spans));

-- usage_daily keeps each day's model as it was canonical when the day was
-- built: an alias change, like a rate change, rebuilds every day, and so
-- does this migration (days built before it keep the sources' names).
CREATE TRIGGER gpu_model_aliases_daily_stale AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON gpu_model_aliases
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_all();
DELETE FROM usage_daily_built;
