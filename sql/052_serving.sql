-- Inference serving: request and token counters of inference servers (vLLM,
-- TGI, Triton, SGLang) scraped from their /metrics, per series and bucket,
-- tied to the job (pod or Slurm job) each series ran on, so that the cost of
-- a request or a token comes from the ledger the jobs are already in
-- (docs/serving.md).

-- An endpoint is what a user names: one model service, on one or more pods
-- or a Slurm job. last_scrape_at: its newest scrape, so a series first seen
-- later knows whether its process started since (its counts are then new).
CREATE TABLE serving_endpoints (
    endpoint_id    integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name           text NOT NULL UNIQUE,
    cluster_id     integer NOT NULL REFERENCES clusters,
    last_scrape_at timestamptz
);

-- A series is one stream of cumulative counters: one server process
-- instance (a target, a pod), one model, one server family and one latency
-- histogram layout (lat_le; a server upgrade that changes it starts a new
-- series). The state_* columns are the counters' reset-aware state
-- (src/domain/increase.c): the time of the last applied scrape, the
-- process start it carried, the job it ran on, and the high-water of every
-- counter in the order requests, failed, prompt tokens, generated tokens,
-- inferences, executions, then one per latency bucket (NaN: never seen).
CREATE TABLE serving_series (
    series_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id    integer NOT NULL REFERENCES serving_endpoints,
    instance       text NOT NULL,
    model_name     text NOT NULL,
    family         text NOT NULL,                 -- vllm | tgi | triton | sglang
    lat_le         double precision[] NOT NULL,   -- latency bucket upper bounds, +Inf last; {} without a histogram
    first_at       timestamptz NOT NULL,
    -- where it runs, as the source said (the claim of rows scraped before
    -- their job was known): pod (namespace, name), job (Slurm job id),
    -- job_name, selector (namespace, labels), or NULL
    run_kind       text,
    run_ns         text,
    run_name       text,
    state_at       timestamptz,
    state_start    double precision,              -- process start (Unix seconds); NULL unknown
    state_job_pk   bigint,                        -- NULL unknown
    state_hw       double precision[],
    UNIQUE (endpoint_id, instance, model_name, family, lat_le)
);

-- Per series and bucket (ingest.bucket_s): the increases counted by the
-- scrapes in it. job_pk 0 = no job known for it (yet): listed as
-- unattributed, claimed when the job arrives (gl_servingdb_claim). Keys
-- begin with the series; partitioned by day like gpu_usage.
CREATE TABLE serving_usage (
    series_id        bigint NOT NULL,
    bucket           timestamptz NOT NULL,
    job_pk           bigint NOT NULL DEFAULT 0,
    cluster_id       integer NOT NULL,
    endpoint_id      integer NOT NULL,
    requests         bigint NOT NULL DEFAULT 0,
    failed           bigint NOT NULL DEFAULT 0,
    prompt_tokens    bigint NOT NULL DEFAULT 0,
    generated_tokens bigint NOT NULL DEFAULT 0,
    inferences       bigint NOT NULL DEFAULT 0,
    executions       bigint NOT NULL DEFAULT 0,
    lat_inc          bigint[] NOT NULL DEFAULT '{}', -- per bucket of serving_series.lat_le, cumulative
    scrapes          integer NOT NULL DEFAULT 0,
    PRIMARY KEY (series_id, bucket, job_pk)
) PARTITION BY RANGE (bucket);
-- /v1/inference over hours reads a window of buckets
CREATE INDEX serving_usage_bucket_idx ON serving_usage (bucket);
-- claims look for rows without a job
CREATE INDEX serving_usage_unattributed_idx ON serving_usage (bucket) WHERE job_pk = 0;

-- The same summed per UTC day, kept in the transaction that writes
-- serving_usage: a month reads 31 rows a series, not 8,928.
CREATE TABLE serving_daily (
    day              date NOT NULL,
    series_id        bigint NOT NULL,
    job_pk           bigint NOT NULL DEFAULT 0,
    cluster_id       integer NOT NULL,
    endpoint_id      integer NOT NULL,
    requests         bigint NOT NULL DEFAULT 0,
    failed           bigint NOT NULL DEFAULT 0,
    prompt_tokens    bigint NOT NULL DEFAULT 0,
    generated_tokens bigint NOT NULL DEFAULT 0,
    inferences       bigint NOT NULL DEFAULT 0,
    executions       bigint NOT NULL DEFAULT 0,
    lat_inc          bigint[] NOT NULL DEFAULT '{}',
    scrapes          integer NOT NULL DEFAULT 0,
    PRIMARY KEY (series_id, day, job_pk)
);
CREATE INDEX serving_daily_day_idx ON serving_daily (day);

-- The jobs that serve: every (job, endpoint, model) a scrape was
-- attributed to. Their GPU time and cost are the ledger's (gl_acct_chargeback
-- restricted to these jobs); a job's cost is split over its pairs by their
-- requests.
CREATE TABLE serving_jobs (
    job_pk      bigint NOT NULL,
    endpoint_id integer NOT NULL,
    model_name  text NOT NULL,
    cluster_id  integer NOT NULL,
    PRIMARY KEY (job_pk, endpoint_id, model_name)
);
CREATE INDEX serving_jobs_endpoint_idx ON serving_jobs (endpoint_id);

-- The serving jobs' usage_daily per job: built by gl_acct_build_day in the
-- same transaction and from the same query as usage_daily (so it turns stale
-- with it), with the job and the accounting dimensions /v1/inference
-- groups by.
CREATE TABLE usage_daily_job (
    day           date NOT NULL,
    job_pk        bigint NOT NULL,
    d_team        text NOT NULL,
    d_project     text NOT NULL,
    d_cost_center text NOT NULL,
    d_cluster     text NOT NULL,
    d_namespace   text NOT NULL,
    d_gpu_model   text NOT NULL,
    gpu_model     text,
    rate          bigint,
    alloc         bigint NOT NULL,
    priced        bigint NOT NULL,
    busy          double precision NOT NULL,
    idle          double precision NOT NULL,
    obs           double precision NOT NULL
);
CREATE INDEX usage_daily_job_day_idx ON usage_daily_job (day);

-- A job that becomes a serving job makes the built days it spans stale, so
-- their usage_daily_job is built again with it. An empty statement (every
-- pair known already: most scrape rounds) takes no lock.
CREATE FUNCTION gl_serving_jobs_stale() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lo timestamptz;
    hi timestamptz;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(26476, 0);
    SELECT min(j.start_at), max(coalesce(j.end_at, 'infinity')) INTO lo, hi
      FROM jobs j WHERE j.job_pk = ANY (ARRAY(SELECT DISTINCT n.job_pk FROM new_rows n)) AND j.start_at IS NOT NULL;
    IF lo IS NOT NULL THEN
        DELETE FROM usage_daily_built WHERE day >= (lo AT TIME ZONE 'UTC')::date
            AND (hi = 'infinity' OR day <= (hi AT TIME ZONE 'UTC')::date);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER serving_jobs_daily_stale AFTER INSERT ON serving_jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_serving_jobs_stale();

-- serving_usage partitions for the days covering [from, to): as the
-- owner, like gl_ensure_usage_partitions (sql/050), since the service's
-- role owns no table and only an owner adds a partition.
CREATE FUNCTION gl_ensure_serving_partitions(p_from timestamptz, p_to timestamptz) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT public.gl_day_partitions('serving_usage', p_from, p_to)
$$;
REVOKE EXECUTE ON FUNCTION gl_ensure_serving_partitions(timestamptz, timestamptz) FROM PUBLIC;
