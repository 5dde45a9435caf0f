-- 131: a calendar month's training runs, built once its days are (issue 29).
-- /v1/runs read every job of the window and grouped it per request: 1,000,000
-- jobs a month gave no answer within 30 s. A run's figures cannot be summed
-- from days or runs built apart: each job's line is its line of the window's
-- chargeback, whose rounding carries the remainders over every line of the
-- window (gl_cost_apportion), so a job's cost depends on the whole window.
-- The month's answer is therefore built whole, by the request's own code
-- (gl_rundb_runs), and kept with what it was built from: the runs[] rules
-- (rules_sig), the month's built days (days_sig: their count and latest
-- build) and the jobs (jobs_sig, the month's sum of runs_jobs_changed). A
-- request whose three marks differ reads the jobs as before.
CREATE TABLE runs_month (
    month              date    NOT NULL,
    ord                integer NOT NULL, -- the answer's order (newest first submit first)
    key                text    NOT NULL,
    kind               text    NOT NULL,
    cluster            text,
    user_name          text,
    account            text,
    partition          text,
    namespace_         text,
    name               text,
    first_submit_s     bigint,
    last_end_s         bigint,
    state              text    NOT NULL,
    attempts           bigint  NOT NULL,
    jobs               bigint  NOT NULL,
    gpu_s              bigint  NOT NULL,
    cost_micros        bigint  NOT NULL,
    failed_cost_micros bigint  NOT NULL,
    failed_gpu_s       bigint  NOT NULL,
    unpriced_s         bigint  NOT NULL,
    unobserved_s       bigint  NOT NULL,
    queue_s            bigint  NOT NULL,
    busy_s             float8  NOT NULL,
    idle_s             float8  NOT NULL,
    observed_s         float8  NOT NULL,
    PRIMARY KEY (month, ord)
);

CREATE TABLE runs_month_built (
    month     date PRIMARY KEY,
    rules_sig text   NOT NULL,
    days_sig  text   NOT NULL,
    jobs_sig  bigint NOT NULL,
    -- a run with exporter data (busy, idle or observed time not 0): then
    -- a sum of runs adds their floats in the runs' order, as /v1/runs
    -- does; else every float is 0 and any order gives 0 (an ordered sum
    -- cannot be hashed: its sort by the group was most of 0.6 s at
    -- 250,000 runs)
    observed  boolean NOT NULL,
    built_at  timestamptz NOT NULL DEFAULT now()
);

-- A count, per cluster and month, of the statements that changed a job
-- the month's runs read: a new, deleted or ended job, a renamed one, a
-- new state, tags or times; a sum, which no maximum of times would be for
-- a writer that commits late. A poll that only moves a running job's
-- last_seen_at or elapsed time changes no built month's answer (its days
-- are built) and counts nothing: else every poll would have every month
-- built again. A job counts in each month from its start (its submit when
-- it never started) to its end (now while it runs). A row a cluster and
-- month, taken in the months' order: writers of different clusters never
-- wait for each other (sql/019). The columns are those gl_rundb_runs'
-- query reads (src/store/rundb.c): one it reads later belongs here too.
CREATE TABLE runs_jobs_changed (
    cluster_id integer NOT NULL,
    month      date    NOT NULL,
    n          bigint  NOT NULL,
    PRIMARY KEY (cluster_id, month)
);

CREATE FUNCTION gl_runs_job_months(p_start timestamptz, p_submit timestamptz, p_end timestamptz)
RETURNS SETOF date LANGUAGE sql STABLE AS $$
SELECT generate_series(date_trunc('month', coalesce(p_start, p_submit, now()) AT TIME ZONE 'UTC'),
                       date_trunc('month', coalesce(p_end, now()) AT TIME ZONE 'UTC'), interval '1 month')::date
$$;

CREATE FUNCTION gl_runs_jobs_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runs_jobs_changed AS r (cluster_id, month, n)
        SELECT DISTINCT t.cluster_id, m, 1::bigint FROM new_rows t,
               gl_runs_job_months(t.start_at, t.submit_at, t.end_at) m
        ORDER BY 1, 2
    ON CONFLICT (cluster_id, month) DO UPDATE SET n = r.n + 1;
    RETURN NULL;
END $$;

CREATE FUNCTION gl_runs_jobs_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runs_jobs_changed AS r (cluster_id, month, n)
        SELECT DISTINCT t.cluster_id, m, 1::bigint FROM old_rows t,
               gl_runs_job_months(t.start_at, t.submit_at, t.end_at) m
        ORDER BY 1, 2
    ON CONFLICT (cluster_id, month) DO UPDATE SET n = r.n + 1;
    RETURN NULL;
END $$;

CREATE FUNCTION gl_runs_jobs_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runs_jobs_changed AS r (cluster_id, month, n)
        SELECT DISTINCT o.cluster_id, m, 1::bigint
        FROM old_rows o JOIN new_rows n ON n.cluster_id = o.cluster_id AND n.job_pk = o.job_pk,
             LATERAL (VALUES (o.start_at, o.submit_at, o.end_at), (n.start_at, n.submit_at, n.end_at))
                 AS s(start_at, submit_at, end_at),
             gl_runs_job_months(s.start_at, s.submit_at, s.end_at) m
        WHERE (o.job_key, o.job_id, o.name, o.user_name, o.account, o.partition, o.qos, o.namespace, o.wckey,
               o.tags, o.state, o.array_job_id, o.het_job_id, o.het_offset, o.submit_at, o.start_at, o.end_at,
               o.gpu_micro, o.req_gpu_micro, o.node_gpu_model, o.gpu_type, o.alloc_tres, o.req_tres)
              IS DISTINCT FROM
              (n.job_key, n.job_id, n.name, n.user_name, n.account, n.partition, n.qos, n.namespace, n.wckey,
               n.tags, n.state, n.array_job_id, n.het_job_id, n.het_offset, n.submit_at, n.start_at, n.end_at,
               n.gpu_micro, n.req_gpu_micro, n.node_gpu_model, n.gpu_type, n.alloc_tres, n.req_tres)
        ORDER BY 1, 2
    ON CONFLICT (cluster_id, month) DO UPDATE SET n = r.n + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_runs_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_runs_jobs_ins();
CREATE TRIGGER jobs_runs_upd AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_runs_jobs_upd();
CREATE TRIGGER jobs_runs_del AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_runs_jobs_del();
