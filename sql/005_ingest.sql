-- Watermark per source and cluster, written in the same transaction as the batch.
CREATE TABLE ingest_state (
    source       text NOT NULL,              -- sacct | kube | dcgm | ...
    cluster_id   integer NOT NULL REFERENCES clusters,
    watermark    timestamptz,                -- everything before it has been read at least once
    cursor       text,                       -- source-specific position (file offset, resourceVersion)
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, cluster_id)
);

CREATE TABLE ingest_runs (
    run_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source       text NOT NULL,
    cluster_id   integer REFERENCES clusters,
    input        text,                       -- file name or command line
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz,
    status       text NOT NULL,              -- ok | partial | failed
    lines_read   bigint NOT NULL DEFAULT 0,
    inserted     bigint NOT NULL DEFAULT 0,
    updated      bigint NOT NULL DEFAULT 0,
    unchanged    bigint NOT NULL DEFAULT 0,
    skipped      bigint NOT NULL DEFAULT 0,
    ignored      bigint NOT NULL DEFAULT 0,  -- steps, non-GPU rows kept out on purpose
    skip_reasons jsonb NOT NULL DEFAULT '[]',
    error        text
);
-- "last runs of source X" for /metrics and the health view.
CREATE INDEX ingest_runs_source_idx ON ingest_runs (source, cluster_id, started_at DESC);
