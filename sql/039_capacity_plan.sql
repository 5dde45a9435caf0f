-- Planned capacity (docs/forecast.md, "Capacity planning"): effective-dated
-- GPU additions (gpus > 0) and retirements (gpus < 0) per cluster and
-- canonical GPU model, from the config's capacity_plan (source 'config',
-- replaced whole at every daemon start) and from POST /v1/capacity/plan
-- (source 'api', replaced whole by every post). GET /v1/capacity/forecast
-- draws capacity as a step line through the changes dated after today; a
-- what-if plan (plan=) is never stored. Every change of this table is
-- audited (capacity.plan) in the transaction that makes it.
CREATE TABLE capacity_plan (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source       text NOT NULL CHECK (source IN ('config', 'api')),
    cluster      text NOT NULL CHECK (cluster <> ''),
    gpu_model    text NOT NULL CHECK (gpu_model <> '' AND gpu_model = lower(gpu_model)),
    gpus         integer NOT NULL CHECK (gpus <> 0 AND abs(gpus) <= 1000000),
    effective    date NOT NULL,
    note         text NOT NULL DEFAULT '',
    config_line  integer,
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   text NOT NULL
);
CREATE INDEX capacity_plan_key_idx ON capacity_plan (cluster, gpu_model, effective);
