-- One row per scheduler allocation (Slurm allocation incl. each requeue
-- attempt and het component; Kubernetes pod). Never keyed on the bare job id.
CREATE TABLE jobs (
    job_pk         bigint GENERATED ALWAYS AS IDENTITY,
    cluster_id     integer NOT NULL REFERENCES clusters,
    job_key        text NOT NULL,        -- 'db:<DBIndex>' | 'raw:<JobIDRaw>@<submit epoch>' | 'pod:<uid>'
    job_id         text NOT NULL,        -- display id: 7_3, 14+0, pod name
    job_id_raw     text,
    array_job_id   bigint,
    array_task_id  bigint,
    het_job_id     bigint,
    het_offset     integer,
    name           text,
    user_name      text,
    uid            bigint,
    group_name     text,
    account        text,
    partition      text,
    qos            text,
    wckey          text,
    namespace      text,
    state          text NOT NULL,
    state_known    boolean NOT NULL DEFAULT true,
    state_by_uid   bigint,
    exit_code      text,
    submit_at      timestamptz,
    eligible_at    timestamptz,
    start_at       timestamptz,
    end_at         timestamptz,
    elapsed_s      bigint,
    suspended_s    bigint,
    timelimit_s    bigint,
    nnodes         integer,
    ncpus          integer,
    req_mem_mb     bigint,
    gpu_milli      bigint NOT NULL DEFAULT 0,  -- allocated GPUs x 1000: exact for MIG / fractional shares
    req_gpu_milli  bigint NOT NULL DEFAULT 0,
    gpu_type       text,
    req_tres       text,
    alloc_tres     text,
    node_list      text,
    nodes          text[],
    tags           jsonb NOT NULL DEFAULT '{}',
    last_seen_at   timestamptz,
    -- derived once, so queries never recompute them
    queue_wait_s   bigint GENERATED ALWAYS AS (extract(epoch FROM start_at - submit_at)::bigint) STORED,
    eligible_wait_s bigint GENERATED ALWAYS AS (extract(epoch FROM eligible_at - submit_at)::bigint) STORED,
    first_ingested_at timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, job_pk),
    UNIQUE (cluster_id, job_key)
);
-- Window queries: a job overlaps [a, b) when start_at < b and coalesce(end_at, now) > a.
CREATE INDEX jobs_window_idx ON jobs (cluster_id, end_at, start_at) WHERE gpu_milli > 0;
-- Running jobs (end_at IS NULL) are read by every "now" view and the idle hook.
CREATE INDEX jobs_running_idx ON jobs (cluster_id, start_at) WHERE end_at IS NULL AND start_at IS NOT NULL;
-- Pending demand.
CREATE INDEX jobs_pending_idx ON jobs (cluster_id, submit_at) WHERE start_at IS NULL AND end_at IS NULL;
-- Lookup by scheduler job id (hook actions, API job detail).
CREATE INDEX jobs_jobid_idx ON jobs (cluster_id, job_id);
