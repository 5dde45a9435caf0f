-- Scheduler node inventory (issue 9): GPUs per node and model over time, node
-- state intervals with their source and reason, and gl_capacity(), the
-- capacity side of the conservation rule. docs/capacity.md explains the rules.

-- GPUs of one model on one node over [valid_from, valid_to) as the scheduler
-- reported them (valid_to NULL: still there). A change of count, model or
-- partition closes the span and opens another.
CREATE TABLE node_gpu_spans (
    cluster_id     integer NOT NULL REFERENCES clusters,
    node           text NOT NULL,
    gpu_model      text NOT NULL,          -- 'a100', 'NVIDIA-A100-SXM4-80GB'; '' = untyped
    gpus           integer NOT NULL CHECK (gpus > 0),  -- physical GPUs (MIG folded in)
    mig_instances  integer NOT NULL DEFAULT 0,
    partition      text,                   -- primary (first listed) Slurm partition; NULL on Kubernetes
    partitions     text[],
    source         text NOT NULL,          -- 'scontrol' | 'kube'
    valid_from     timestamptz NOT NULL,
    valid_to       timestamptz,
    CHECK (valid_to IS NULL OR valid_to > valid_from),
    PRIMARY KEY (cluster_id, node, gpu_model, source, valid_from)
);
-- Open spans are what every snapshot merge and the inventory read.
CREATE INDEX node_gpu_spans_open_idx ON node_gpu_spans (cluster_id, node) WHERE valid_to IS NULL;

-- Node state over [valid_from, valid_to). Sources:
--   slurm_event  sacctmgr show event (exact history; authoritative before
--                sched_coverage.events_until)
--   scontrol     sampled `scontrol show node` states (used from events_until on)
--   kube         sampled node objects
--   slurm_resv   reservations (state maint | reserved; gpus = GPUs in the reservation's TRES)
CREATE TABLE node_state_spans (
    cluster_id     integer NOT NULL REFERENCES clusters,
    node           text NOT NULL,
    source         text NOT NULL,
    ref            text NOT NULL DEFAULT '',  -- reservation name
    state          text NOT NULL CHECK (state IN ('up', 'down', 'drained', 'powered_down', 'reserved', 'maint')),
    gpu_model      text,                   -- reservations: the model reserved; NULL = every GPU of the node
    gpus           integer,                -- reservations: GPUs reserved; NULL = every GPU of the node
    valid_from     timestamptz NOT NULL,
    valid_to       timestamptz,
    raw_state      text,                   -- 'MIXED+DRAIN', StateRaw '514', 'Ready=False,unschedulable'
    unknown_flags  text,
    reason         text,
    reason_user    text,
    alloc_gpus     integer,                -- GPUs allocated when sampled (drained-but-allocated)
    CHECK (valid_to IS NULL OR valid_to >= valid_from),
    PRIMARY KEY (cluster_id, node, source, ref, valid_from)
);
CREATE INDEX node_state_spans_open_idx ON node_state_spans (cluster_id, node) WHERE valid_to IS NULL;
-- gl_capacity reads unavailability overlapping a window
CREATE INDEX node_state_spans_time_idx ON node_state_spans (cluster_id, valid_from) WHERE state <> 'up';

-- One row per applied snapshot (the merge refuses one older than the last).
CREATE TABLE sched_snapshots (
    cluster_id     integer NOT NULL REFERENCES clusters,
    source         text NOT NULL,
    taken_at       timestamptz NOT NULL,
    nodes          integer NOT NULL,
    gpus           bigint NOT NULL,
    problems       integer NOT NULL DEFAULT 0,
    applied_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, source, taken_at)
);

-- Slurm event history is complete up to events_until: before it, node states
-- come from the events only; from it on, from the sampled scontrol states.
CREATE TABLE sched_coverage (
    cluster_id     integer PRIMARY KEY REFERENCES clusters,
    events_until   timestamptz NOT NULL
);

-- GPU-seconds present in [p_from, p_to) per cluster/partition/model and how
-- many of them were down, planned down (maintenance, powered down) or
-- reserved. Open spans run to p_to, as slurmdbd rolls an unfinished hour to
-- its end. Clusters without scheduler inventory fall back to the exporter
-- inventory (gpus: first_seen .. absent_since, MIG instances folded into
-- their physical GPU). Raw sums: callers clamp (see docs/capacity.md).
CREATE FUNCTION gl_capacity(p_from timestamptz, p_to timestamptz)
RETURNS TABLE (cluster_id integer, partition text, gpu_model text, reported_gpu_seconds bigint,
               down_gpu_seconds bigint, planned_down_gpu_seconds bigint, reserved_gpu_seconds bigint)
LANGUAGE sql STABLE AS $$
WITH g AS (
    SELECT s.cluster_id, s.node, s.partition, s.gpu_model, s.gpus::bigint AS gpus,
           greatest(s.valid_from, p_from) AS a, least(coalesce(s.valid_to, p_to), p_to) AS b
    FROM node_gpu_spans s
    WHERE s.valid_from < p_to AND (s.valid_to IS NULL OR s.valid_to > p_from)
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
    SELECT g.cluster_id, g.partition, g.gpu_model, sum(g.gpus * extract(epoch FROM g.b - g.a)::bigint) AS r
    FROM g GROUP BY 1, 2, 3
), unav AS (
    SELECT per.cluster_id, per.partition, per.gpu_model, sum(down_s) AS d, sum(pdown_s) AS pd, sum(resv_s) AS rs
    FROM per GROUP BY 1, 2, 3
), exporter AS (
    -- one physical GPU per (node, uuid): MIG instances share their parent's uuid
    SELECT x.cluster_id, NULL::text AS partition, coalesce(x.model, '') AS gpu_model,
           sum(extract(epoch FROM least(coalesce(x.absent_since, p_to), p_to) - greatest(x.first_seen, p_from))::bigint) AS r
    FROM (SELECT gp.cluster_id, gp.node_id, gp.uuid, min(gp.model) AS model, min(gp.first_seen) AS first_seen,
                 CASE WHEN bool_or(gp.absent_since IS NULL) THEN NULL ELSE max(gp.absent_since) END AS absent_since
          FROM gpus gp
          WHERE NOT EXISTS (SELECT 1 FROM node_gpu_spans s WHERE s.cluster_id = gp.cluster_id)
          GROUP BY 1, 2, 3) x
    WHERE x.first_seen < p_to AND (x.absent_since IS NULL OR x.absent_since > p_from)
    GROUP BY 1, 2, 3
)
SELECT rep.cluster_id, rep.partition, rep.gpu_model, rep.r::bigint,
       coalesce(unav.d, 0)::bigint, coalesce(unav.pd, 0)::bigint, coalesce(unav.rs, 0)::bigint
FROM rep LEFT JOIN unav ON unav.cluster_id = rep.cluster_id
     AND unav.partition IS NOT DISTINCT FROM rep.partition AND unav.gpu_model = rep.gpu_model
UNION ALL
SELECT exporter.cluster_id, exporter.partition, exporter.gpu_model, exporter.r::bigint, 0, 0, 0 FROM exporter
$$;
