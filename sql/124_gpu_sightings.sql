-- 124: a round of the exporter writes only the GPUs that changed (issue 31).
-- Every round rewrote every GPU's row to move last_seen: at 100,000 GPUs
-- half of a 15-22 s round (docs/scale.md). The round already moves its
-- nodes' last_seen (one row a node); a GPU that was in every round of its
-- node since it was last written follows that node (follows_node) and is
-- seen as late as the node's last round. A round that lists a node but not
-- one of its following GPUs ends the following there: the GPU's last_seen
-- becomes the node's round before (the last that listed it), so a GPU that
-- vanishes while its exporter keeps answering stops being seen at that
-- round, as when every GPU row was written each round. A row not following
-- its node (written before this migration, by hand, or gone) keeps its own
-- last_seen.
ALTER TABLE gpus ADD COLUMN follows_node boolean NOT NULL DEFAULT false;

-- The GPUs with the time each was last seen: the one rule every reader of
-- a GPU's last sighting goes through (capacity, inventory, absent marking).
-- Tables are named through search_path so a central's fleet schema
-- (sql/059) reads its shards' rows; inlined by the planner.
CREATE FUNCTION gl_gpus_seen()
RETURNS TABLE (gpu_id bigint, cluster_id integer, node_id bigint, uuid text, mig_instance integer, model text,
               mig_profile text, driver text, source text, gpu_index integer, first_seen timestamptz,
               last_seen timestamptz, absent_since timestamptz)
LANGUAGE sql STABLE AS $$
SELECT g.gpu_id, g.cluster_id, g.node_id, g.uuid, g.mig_instance, g.model, g.mig_profile, g.driver, g.source,
       g.gpu_index, g.first_seen,
       CASE WHEN g.follows_node THEN greatest(g.last_seen, n.last_seen) ELSE g.last_seen END,
       g.absent_since
FROM gpus g JOIN nodes n ON n.cluster_id = g.cluster_id AND n.node_id = g.node_id
$$;

-- gl_capacity of sql/082, its exporter GPUs' last sighting read through
-- gl_gpus_seen (the only change).
CREATE OR REPLACE FUNCTION gl_capacity(p_from timestamptz, p_to timestamptz, p_grace_s bigint, p_include boolean)
RETURNS TABLE (cluster_id integer, partition text, gpu_model text, reported_gpu_seconds bigint,
               down_gpu_seconds bigint, planned_down_gpu_seconds bigint, reserved_gpu_seconds bigint,
               unobserved_gpu_seconds bigint)
LANGUAGE sql STABLE AS $$
WITH g0 AS (
    SELECT s.cluster_id, s.node, s.partition, s.gpu_model, s.gpus::bigint AS gpus,
           greatest(s.valid_from, p_from) AS a, least(coalesce(s.valid_to, p_to), p_to) AS e,
           CASE WHEN s.valid_to IS NULL AND p_grace_s IS NOT NULL AND hz.t IS NOT NULL
                THEN least(hz.t + p_grace_s * interval '1 second', p_to)
                ELSE least(coalesce(s.valid_to, p_to), p_to) END AS h
    FROM node_gpu_spans s
    -- the source's latest snapshot (the last one that saw an open span);
    -- a lateral join so a repeated (cluster, source) is looked up once
    LEFT JOIN LATERAL (SELECT max(t.taken_at) AS t FROM sched_snapshots t
                       WHERE t.cluster_id = s.cluster_id AND t.source = s.source) hz ON s.valid_to IS NULL
    WHERE s.valid_from < p_to AND (s.valid_to IS NULL OR s.valid_to > p_from)
), g AS (
    SELECT g0.cluster_id, g0.node, g0.partition, g0.gpu_model, g0.gpus, g0.a, g0.e, g0.h,
           CASE WHEN p_include THEN g0.e ELSE g0.h END AS b
    FROM (SELECT g0.cluster_id, g0.node, g0.partition, g0.gpu_model, g0.gpus, g0.a, g0.e,
                 least(greatest(g0.h, g0.a), g0.e) AS h FROM g0) g0
), st AS (
    -- effective unavailability: events before events_until, samples after
    SELECT n.cluster_id, n.node, n.state, n.source, n.gpu_model, n.gpus::bigint AS rgpus,
           CASE WHEN n.source IN ('scontrol', 'kube')
                THEN greatest(n.valid_from, coalesce(c.events_until, '-infinity')) ELSE n.valid_from END AS a,
           CASE WHEN n.source = 'slurm_event'
                THEN least(coalesce(n.valid_to, 'infinity'), coalesce(c.events_until, 'infinity'))
                ELSE coalesce(n.valid_to, 'infinity') END AS b
    FROM node_state_spans n LEFT JOIN sched_coverage c ON c.cluster_id = n.cluster_id
    WHERE n.state IN ('down', 'drained', 'powered_down', 'reserved', 'maint')
      -- an event row carrying MAINT is skipped by the rollup: neither Down nor PLND Down
      AND NOT (n.source = 'slurm_event' AND n.state = 'maint')
      AND n.valid_from < p_to AND (n.valid_to IS NULL OR n.valid_to > p_from)
), ov AS (
    SELECT g.cluster_id, g.node, g.partition, g.gpu_model, g.gpus, st.state, st.source, st.rgpus,
           greatest(g.a, st.a) AS a, least(g.b, st.b) AS b
    FROM g JOIN st ON st.cluster_id = g.cluster_id AND st.node = g.node
                  AND (st.gpu_model IS NULL OR st.gpu_model = g.gpu_model)
                  AND st.a < g.b AND st.b > g.a
), per AS (
    SELECT ov.cluster_id, ov.partition, ov.gpu_model,
           CASE WHEN ov.state IN ('down', 'drained')
                THEN ov.gpus * (extract(epoch FROM ov.b - ov.a)::bigint - coalesce(mo.s, 0)) ELSE 0 END AS down_s,
           CASE WHEN ov.state IN ('down', 'drained') THEN ov.gpus * coalesce(mo.s, 0)
                WHEN ov.state = 'powered_down' THEN ov.gpus * extract(epoch FROM ov.b - ov.a)::bigint
                WHEN ov.state = 'maint' THEN least(coalesce(ov.rgpus, ov.gpus), ov.gpus) * extract(epoch FROM ov.b - ov.a)::bigint
                ELSE 0 END AS pdown_s,
           CASE WHEN ov.state = 'reserved'
                THEN least(coalesce(ov.rgpus, ov.gpus), ov.gpus) * extract(epoch FROM ov.b - ov.a)::bigint
                ELSE 0 END AS resv_s
    FROM ov
    -- the part of a down period inside a maintenance reservation on the node
    -- is planned (as_mysql_rollup.c books it to PLND Down)
    LEFT JOIN LATERAL (
        SELECT sum(greatest(0, extract(epoch FROM least(ov.b, m.b) - greatest(ov.a, m.a))::bigint)) AS s
        FROM st m WHERE ov.state IN ('down', 'drained') AND m.state = 'maint'
          AND m.cluster_id = ov.cluster_id AND m.node = ov.node AND m.a < ov.b AND m.b > ov.a
    ) mo ON true
), rep AS (
    SELECT g.cluster_id, g.partition, g.gpu_model, sum(g.gpus * extract(epoch FROM g.b - g.a)::bigint) AS r,
           sum(g.gpus * extract(epoch FROM g.e - g.h)::bigint) AS u
    FROM g GROUP BY 1, 2, 3
), unav AS (
    SELECT per.cluster_id, per.partition, per.gpu_model, sum(down_s) AS d, sum(pdown_s) AS pd, sum(resv_s) AS rs
    FROM per GROUP BY 1, 2, 3
), x AS (
    -- one physical GPU per (node, uuid): MIG instances share their parent's uuid
    SELECT gp.cluster_id, gp.node_id, gp.uuid, min(gp.model) AS model, min(gp.first_seen) AS first_seen,
           max(gp.last_seen) AS last_seen,
           CASE WHEN bool_or(gp.absent_since IS NULL) THEN NULL ELSE max(gp.absent_since) END AS absent_since
    FROM gl_gpus_seen() gp
    WHERE NOT EXISTS (SELECT 1 FROM node_gpu_spans s WHERE s.cluster_id = gp.cluster_id)
    GROUP BY 1, 2, 3
), xg AS (
    SELECT x.cluster_id, coalesce(x.model, '') AS gpu_model, greatest(x.first_seen, p_from) AS a,
           least(coalesce(x.absent_since, p_to), p_to) AS e,
           CASE WHEN x.absent_since IS NULL AND p_grace_s IS NOT NULL
                THEN least(x.last_seen + p_grace_s * interval '1 second', p_to)
                ELSE least(coalesce(x.absent_since, p_to), p_to) END AS h
    FROM x
    WHERE x.first_seen < p_to AND (x.absent_since IS NULL OR x.absent_since > p_from)
), exporter AS (
    SELECT xh.cluster_id, NULL::text AS partition, xh.gpu_model,
           sum(extract(epoch FROM (CASE WHEN p_include THEN xh.e ELSE xh.h END) - xh.a)::bigint) AS r,
           sum(extract(epoch FROM xh.e - xh.h)::bigint) AS u
    FROM (SELECT xg.cluster_id, xg.gpu_model, xg.a, xg.e, least(greatest(xg.h, xg.a), xg.e) AS h FROM xg) xh
    GROUP BY 1, 2, 3
)
SELECT rep.cluster_id, rep.partition, rep.gpu_model, rep.r::bigint,
       coalesce(unav.d, 0)::bigint, coalesce(unav.pd, 0)::bigint, coalesce(unav.rs, 0)::bigint, rep.u::bigint
FROM rep LEFT JOIN unav ON unav.cluster_id = rep.cluster_id
     AND unav.partition IS NOT DISTINCT FROM rep.partition AND unav.gpu_model = rep.gpu_model
UNION ALL
SELECT exporter.cluster_id, exporter.partition, exporter.gpu_model, exporter.r::bigint, 0, 0, 0, exporter.u::bigint
FROM exporter
$$;

-- a central's fleet schemas are made again with gpus' new column
DO $$
BEGIN
    IF to_regprocedure('gl_fleet_drop_all()') IS NOT NULL THEN
        PERFORM gl_fleet_drop_all();
    END IF;
END $$;
