-- Idle-GPU hook (docs/hook.md): the stage each job has reached, so every
-- warning and action happens once per job and stage across cron runs, and
-- the log of every command run (or recorded through the API).

-- One row per job and stage ('warn1' | 'warn2' | 'act'), whatever policy
-- reached it. status: 'running' while the command runs (a run that died
-- there leaves it, and the next run retries), 'done', 'failed' (retried by
-- the next run until it succeeds).
CREATE TABLE hook_stages (
    cluster_id   integer NOT NULL,
    job_pk       bigint NOT NULL,
    stage        text NOT NULL CHECK (stage IN ('warn1', 'warn2', 'act')),
    policy       text NOT NULL,
    status       text NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    first_at     timestamptz NOT NULL DEFAULT now(),
    last_at      timestamptz NOT NULL DEFAULT now(),
    exit_status  integer,
    error        text,
    PRIMARY KEY (cluster_id, job_pk, stage)
);
-- Failed or interrupted stages, read by every run.
CREATE INDEX hook_stages_retry_idx ON hook_stages (job_pk) WHERE status <> 'done';

-- Every command the hook ran and every action an external controller
-- recorded (POST /v1/hook/actions); what GET /v1/hook/actions lists.
CREATE TABLE hook_actions (
    action_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    cluster_id   integer,
    cluster      text NOT NULL,
    job_pk       bigint,
    job_id       text NOT NULL,
    owner        text,
    policy       text NOT NULL,
    stage        text NOT NULL,
    argv         text[] NOT NULL DEFAULT '{}',
    exit_status  integer,            -- NULL: killed or not started
    ok           boolean NOT NULL,
    stderr       text,
    source       text NOT NULL,      -- 'hook' | 'api'
    actor        text NOT NULL,
    idle_s       bigint,
    idle_gpu_s   bigint,
    cost_micros  bigint
);
CREATE INDEX hook_actions_at_idx ON hook_actions (at);

-- "Was this job busy at any time in [a, b)?" for the fixed rule, from an
-- index of the busy GPU-buckets alone (a small share of a job's buckets
-- when it is idle, and found at the first entry when it is not).
CREATE INDEX gpu_usage_jobs_busy_idx ON gpu_usage_jobs (job_pk, bucket) WHERE busy_samples > 0;
