-- Sums of the open GPU jobs, kept as the jobs change, so a request over a
-- window with 10,000 open jobs reads a few rows a set instead of every job
-- (docs/ingest.md, "Sums of open jobs"; src/store/accounting.c, ks).
--
-- A set is what an open job is grouped by, apart from what a request
-- decides at its own time (the rule segment, the canonical model, the
-- watermark): cluster, source, the fields owner and workload rules match,
-- labels, run kind, serving endpoints, the raw GPU model. skey is all of
-- them in one text (NULL and '' apart, as the request's okey has them), the
-- one column the set is found by.
CREATE TABLE open_gpu_sets (
    set_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    skey       text NOT NULL UNIQUE,
    cluster_id integer NOT NULL,
    source     text NOT NULL,
    account    text,
    user_name  text,
    partition  text,
    qos        text,
    wckey      text,
    namespace  text,
    labels     jsonb,
    run_kind   text NOT NULL,
    endpoints  text[] NOT NULL,
    model_raw  text
);

-- Per set, own last_seen_at, UTC day of start and UTC day of start +
-- Timelimit (NULL: no limit known): the jobs' billed and held micro-GPUs
-- and their number. Only open jobs (end_at NULL, GPUs, a start) count.
CREATE TABLE open_gpu_sums (
    set_id       bigint NOT NULL,
    last_seen_at timestamptz,
    start_day    date NOT NULL,
    dl_day       date,
    gpu_micro    bigint NOT NULL,
    held_micro   bigint NOT NULL,
    n            bigint NOT NULL,
    UNIQUE NULLS NOT DISTINCT (set_id, last_seen_at, start_day, dl_day)
);
-- the rows a statement emptied, found without reading the table
CREATE INDEX open_gpu_sums_empty_idx ON open_gpu_sums (set_id) WHERE n = 0;

-- Whether requests read the sums (the tests turn it off to compare the two
-- paths on one database). A central database of shards never does: its
-- jobs are the shards' (the request tests shards too).
CREATE TABLE open_gpu_sums_state (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    enabled boolean NOT NULL
);
INSERT INTO open_gpu_sums_state (enabled) VALUES (true);

-- The statements that add the open rows of src (a relation with the jobs'
-- columns and sg, +1 or -1) to the sums: the sets first, then the sums, in
-- key order (two ingests of one cluster lock the same rows in one order).
CREATE FUNCTION gl_open_sums_sql(p_src text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT ARRAY[
        format($q$WITH x AS (%s)
            INSERT INTO open_gpu_sets (skey, cluster_id, source, account, user_name, partition, qos, wckey,
                                       namespace, labels, run_kind, endpoints, model_raw)
            SELECT DISTINCT ON (skey) skey, cluster_id, source, account, user_name, partition, qos, wckey,
                   namespace, labels, run_kind, endpoints, model_raw
            FROM x WHERE NOT EXISTS (SELECT 1 FROM open_gpu_sets s WHERE s.skey = x.skey)
            ORDER BY skey ON CONFLICT (skey) DO NOTHING$q$, r.rows),
        format($q$WITH x AS (%s)
            INSERT INTO open_gpu_sums AS o (set_id, last_seen_at, start_day, dl_day, gpu_micro, held_micro, n)
            SELECT s.set_id, x.last_seen_at, x.start_day, x.dl_day, sum(x.sg * x.gpu_micro), sum(x.sg * x.held_micro),
                   sum(x.sg)
            FROM x JOIN open_gpu_sets s ON s.skey = x.skey
            GROUP BY 1, 2, 3, 4
            HAVING sum(x.sg) <> 0 OR sum(x.sg * x.gpu_micro) <> 0 OR sum(x.sg * x.held_micro) <> 0
            ORDER BY 1, 2, 3, 4
            ON CONFLICT (set_id, last_seen_at, start_day, dl_day) DO UPDATE SET
                gpu_micro = o.gpu_micro + excluded.gpu_micro, held_micro = o.held_micro + excluded.held_micro,
                n = o.n + excluded.n$q$, r.rows),
        'DELETE FROM open_gpu_sums WHERE n = 0']
    FROM (SELECT format($q$
        SELECT j.sg, j.cluster_id, j.last_seen_at, j.gpu_micro, coalesce(j.phys_micro, j.gpu_micro) AS held_micro,
               (j.start_at AT TIME ZONE 'UTC')::date AS start_day,
               CASE WHEN j.timelimit_s >= 0
                    THEN ((j.start_at + j.timelimit_s * interval '1 second') AT TIME ZONE 'UTC')::date END AS dl_day,
               CASE WHEN left(j.job_key, 4) = 'pod:' THEN 'kube' ELSE 'sacct' END AS source,
               j.account, j.user_name, j.partition, j.qos, j.wckey, j.namespace, j.tags -> 'labels' AS labels,
               gl_job_run_kind(j.namespace, j.tags, j.array_job_id, j.het_job_id) AS run_kind,
               coalesce(ep.endpoints, '{}') AS endpoints, coalesce(j.gpu_type, j.node_gpu_model) AS model_raw,
               j.cluster_id || chr(1) || CASE WHEN left(j.job_key, 4) = 'pod:' THEN 'kube' ELSE 'sacct' END || chr(1) ||
               coalesce(chr(2) || j.account, '') || chr(1) || coalesce(chr(2) || j.user_name, '') || chr(1) ||
               coalesce(chr(2) || j.partition, '') || chr(1) || coalesce(chr(2) || j.qos, '') || chr(1) ||
               coalesce(chr(2) || j.wckey, '') || chr(1) || coalesce(chr(2) || j.namespace, '') || chr(1) ||
               coalesce((j.tags -> 'labels')::text, '') || chr(1) ||
               gl_job_run_kind(j.namespace, j.tags, j.array_job_id, j.het_job_id) || chr(1) ||
               coalesce(ep.endpoints, '{}')::text || chr(1) ||
               coalesce(chr(2) || coalesce(j.gpu_type, j.node_gpu_model), '') AS skey
        FROM %s j LEFT JOIN job_endpoints ep ON ep.job_pk = j.job_pk
        WHERE j.end_at IS NULL AND j.gpu_milli > 0 AND j.start_at IS NOT NULL$q$, p_src) AS rows) r
$$;

-- Adds, subtracts or both: the open rows a statement wrote, less those it
-- replaced. A poll that rewrites every running job (Elapsed grows) nets to
-- nothing per key and writes no sum; ended jobs never enter x.
CREATE FUNCTION gl_open_sums_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    src text;
    q text;
BEGIN
    -- a load of ended jobs: no open row, nothing to plan
    IF TG_OP = 'INSERT' THEN
        IF NOT EXISTS (SELECT 1 FROM new_rows WHERE end_at IS NULL AND gpu_milli > 0) THEN
            RETURN NULL;
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        IF NOT EXISTS (SELECT 1 FROM old_rows WHERE end_at IS NULL AND gpu_milli > 0) THEN
            RETURN NULL;
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM new_rows WHERE end_at IS NULL AND gpu_milli > 0)
          AND NOT EXISTS (SELECT 1 FROM old_rows WHERE end_at IS NULL AND gpu_milli > 0) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(26476, 107);
    src := CASE TG_OP
        WHEN 'INSERT' THEN '(SELECT 1 AS sg, * FROM new_rows)'
        WHEN 'DELETE' THEN '(SELECT -1 AS sg, * FROM old_rows)'
        ELSE '(SELECT 1 AS sg, * FROM new_rows UNION ALL SELECT -1, * FROM old_rows)' END;
    FOREACH q IN ARRAY gl_open_sums_sql(src) LOOP
        EXECUTE q;
    END LOOP;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_open_sums_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_jobs();
CREATE TRIGGER jobs_open_sums_upd AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_jobs();
CREATE TRIGGER jobs_open_sums_del AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_jobs();

-- The sums anew from the open jobs: where a set itself changes (a job's
-- serving endpoints), in the transaction of that change. The exclusive
-- lock waits for every jobs writer in flight, so the jobs read are all
-- whose deltas the sums held.
CREATE FUNCTION gl_open_sums_recompute() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    q text;
BEGIN
    PERFORM pg_advisory_xact_lock(26476, 107);
    DELETE FROM open_gpu_sums;
    FOREACH q IN ARRAY gl_open_sums_sql('(SELECT 1 AS sg, * FROM jobs)') LOOP
        EXECUTE q;
    END LOOP;
END $$;

-- A scrape inserts its statement whether or not a job is new to an
-- endpoint: only rows written recompute.
CREATE FUNCTION gl_open_sums_endpoints() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
            RETURN NULL;
        END IF;
    ELSIF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;
    END IF;
    PERFORM gl_open_sums_recompute();
    RETURN NULL;
END $$;

CREATE TRIGGER serving_jobs_open_sums_ins AFTER INSERT ON serving_jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_endpoints();
CREATE TRIGGER serving_jobs_open_sums_upd AFTER UPDATE ON serving_jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_endpoints();
CREATE TRIGGER serving_jobs_open_sums_del AFTER DELETE ON serving_jobs REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_endpoints();
CREATE TRIGGER serving_endpoints_open_sums_upd AFTER UPDATE ON serving_endpoints REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_endpoints();
CREATE TRIGGER serving_endpoints_open_sums_del AFTER DELETE ON serving_endpoints REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_endpoints();

CREATE FUNCTION gl_open_sums_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM open_gpu_sums;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_open_sums_truncate AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION gl_open_sums_truncate();

SELECT gl_open_sums_recompute();
