-- Fleet inventory: clusters, nodes, GPUs. Small tables (reference tables
-- under Citus) except gpus, which carries cluster_id for distribution.
CREATE TABLE clusters (
    cluster_id   integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE,
    kind         text NOT NULL CHECK (kind IN ('slurm', 'kubernetes')),
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE nodes (
    node_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster_id   integer NOT NULL REFERENCES clusters,
    name         text NOT NULL,
    first_seen   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL,
    UNIQUE (cluster_id, name)
);

CREATE TABLE gpus (
    gpu_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster_id   integer NOT NULL REFERENCES clusters,
    node_id      bigint NOT NULL REFERENCES nodes,
    uuid         text NOT NULL,
    mig_instance integer NOT NULL DEFAULT -1,   -- -1: the whole GPU; else GPU_I_ID
    model        text,
    memory_mib   bigint,
    mig_profile  text,
    driver       text,
    first_seen   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL,
    absent_since timestamptz,                   -- set when it stopped reporting past the grace period
    UNIQUE (cluster_id, node_id, uuid, mig_instance)
);
CREATE INDEX gpus_node_idx ON gpus (node_id);
