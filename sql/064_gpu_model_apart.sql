-- The naming rule of sql/024 took the first word left after the brand
-- words: "GRID A100-40C" and "GRID T4-16Q" both became "grid", "Quadro RTX
-- 4000" (Turing) and "NVIDIA RTX 4000 Ada Generation" both "rtx4000", so a
-- rate and a model's capacity mixed GPUs of very different price. The rule
-- now (docs/capacity.md, "GPU models"):
--   * "grid" is a brand word too, and a vGPU profile (the word after the
--     model is a size and a series: 40c, 16q, 2b, 1a) stays with its model:
--     "GRID A100-40C" -> a100-40c, "NVIDIA L40S-48Q" -> l40s-48q;
--   * an RTX/GTX name keeps every word but "generation" and "edition":
--     "Quadro RTX 4000" -> rtx4000, "NVIDIA RTX 4000 Ada Generation" ->
--     rtx4000ada, "NVIDIA GeForce RTX 3090 Ti" -> rtx3090ti;
--   * a name whose first word holds no digit is not a model the rule can
--     place ("Graphics Device", as nvidia-smi names a GPU its driver does
--     not know; "mig"): it stays as written (lower case, without gpu: or
--     nvidia.com/), and /v1/inventory lists it with via "as_written" for
--     the admin to alias.
-- The memory sizes of one datacenter GPU stay one model ("A100-SXM4-80GB"
-- and Slurm's "a100" meet): the sources rarely agree on them (Slurm GRES
-- types carry none), and a site that prices them apart aliases them.

-- The words of a name the rule reads: lower case, the source's prefix
-- dropped, split at '-', '_', ' ' and '/', brand words removed.
CREATE FUNCTION gl_gpu_model_words(p text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_remove(array_remove(array_remove(array_remove(array_remove(array_remove(
           regexp_split_to_array(regexp_replace(lower(p), '^(gpu:|nvidia\.com/)', ''), '[-_ /]+'),
           ''), 'nvidia'), 'tesla'), 'geforce'), 'quadro'), 'grid')
$$;

-- 1 when the rule cannot place the name (it stays as written).
CREATE FUNCTION gl_gpu_model_unplaced(p text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lower(p) !~ '[0-9]+g\.[0-9]+gb'
       AND (w[1] IS NULL OR (w[1] !~ '[0-9]' AND NOT (w[1] IN ('rtx', 'gtx') AND w[2] IS NOT NULL)))
      FROM (SELECT gl_gpu_model_words(p) AS w) x
$$;

CREATE OR REPLACE FUNCTION gl_gpu_model_rule(p text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN lower(p) ~ '[0-9]+g\.[0-9]+gb' OR gl_gpu_model_unplaced(p)
                     THEN regexp_replace(lower(p), '^(gpu:|nvidia\.com/)', '')
                WHEN w[1] IN ('rtx', 'gtx')
                     THEN array_to_string(array_remove(array_remove(w, 'generation'), 'edition'), '')
                WHEN w[2] ~ '^[0-9]+[abcq]$' THEN w[1] || '-' || w[2]
                ELSE w[1] END
      FROM (SELECT gl_gpu_model_words(p) AS w) x
$$;

-- The names already known follow the new rule; every built day is rebuilt
-- (it grouped and priced by the old models).
UPDATE gpu_model_canon c SET model = d.model
  FROM (SELECT raw, gl_gpu_model_derive(raw) AS model FROM gpu_model_canon) d
 WHERE c.raw = d.raw AND c.model IS DISTINCT FROM d.model;
DELETE FROM usage_daily_built;
