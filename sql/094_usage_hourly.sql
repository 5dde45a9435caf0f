-- The capacity page's hourly series (the showback report and
-- /v1/capacity/forecast: gl_capplandb_demand) kept per built day, so a
-- report does not read the month's jobs twice more on every run (issue 26:
-- 3.5-4.4 s and 3.0-3.3 s of an 11-12 s report at 1,000,000 jobs).
--
-- usage_hourly_alloc: firm allocated micro-GPU-seconds per hour, cluster
-- and GPU model, as gl_accounting_alloc_finished's live query gives them
-- (the unobserved part of open jobs stays live, as chargeback's does).
-- usage_hourly_pending: per hour and series key ("cluster/model", as
-- gl_fcseries_query_pending names it), the micro-GPU-seconds pending and
-- the seconds with any GPU pending.
--
-- gl_accounting_build_days writes both for its days with the live
-- functions themselves, in the transaction that writes usage_daily_built,
-- and marks the days in usage_hourly_built. Readers take a day from here
-- only while both markers stand: the rows turn stale with usage_daily, and a
-- day built before these tables (or a central database of shards, whose
-- usage_daily_built is its shards' while these tables are its own, empty:
-- sql/059) is read live.
CREATE TABLE usage_hourly_alloc (
    day       date     NOT NULL,
    hour      smallint NOT NULL CHECK (hour BETWEEN 0 AND 23),
    cluster   text     NOT NULL,
    gpu_model text     NOT NULL,
    alloc_us  bigint   NOT NULL
);
CREATE INDEX usage_hourly_alloc_day_idx ON usage_hourly_alloc (day);

CREATE TABLE usage_hourly_pending (
    day       date     NOT NULL,
    hour      smallint NOT NULL CHECK (hour BETWEEN 0 AND 23),
    skey      text     NOT NULL,
    gpu_us    bigint   NOT NULL,
    pending_s bigint   NOT NULL
);
CREATE INDEX usage_hourly_pending_day_idx ON usage_hourly_pending (day);

CREATE TABLE usage_hourly_built (
    day date PRIMARY KEY
);

-- The pending series' jobs of a window are those submitted before its end
-- and started or ended after its start (or still queued): this index
-- answers the second bound for the hours read live, today's mostly, where
-- the submissions before its end are every job.
CREATE INDEX jobs_pending_until_idx ON jobs ((coalesce(start_at, end_at))) WHERE submit_at IS NOT NULL;

-- Pending time runs from a job's submission to its start (or end), which
-- sql/079's trigger did not look at: it made stale the days from the start
-- on, and nothing for a job not started. A change of the submit time, the
-- GPUs requested or an array's pending tasks, and an insert or delete of a
-- job, now make stale the days from the submission on as well.
CREATE OR REPLACE FUNCTION gl_usage_daily_stale_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lo timestamptz;
    hi timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(26476, 0);
    IF TG_OP = 'UPDATE' THEN
        WITH ch AS (
            SELECT o.start_at AS o_start, o.end_at AS o_end, n.start_at AS n_start, n.end_at AS n_end,
                   (o.cluster_id, o.start_at, o.end_at, o.gpu_micro, o.phys_micro, o.gpu_type, o.node_gpu_model, o.account,
                    o.user_name, o.partition, o.qos, o.wckey, o.namespace, o.tags, o.nodes, o.job_key)
                   IS DISTINCT FROM
                   (n.cluster_id, n.start_at, n.end_at, n.gpu_micro, n.phys_micro, n.gpu_type, n.node_gpu_model, n.account,
                    n.user_name, n.partition, n.qos, n.wckey, n.namespace, n.tags, n.nodes, n.job_key) AS acct,
                   (o.submit_at, o.req_gpu_micro, o.array_tasks) IS DISTINCT FROM
                   (n.submit_at, n.req_gpu_micro, n.array_tasks) AS pend,
                   o.submit_at AS o_submit, n.submit_at AS n_submit,
                   o.last_seen_at AS o_seen, n.last_seen_at AS n_seen
            FROM old_rows o JOIN new_rows n ON n.cluster_id = o.cluster_id AND n.job_pk = o.job_pk
        ), r AS (
            SELECT least(o_start, n_start) AS a, greatest(coalesce(o_end, 'infinity'), coalesce(n_end, 'infinity')) AS b
            FROM ch WHERE acct AND coalesce(o_start, n_start) IS NOT NULL
            UNION ALL
            SELECT CASE WHEN o_seen IS NULL OR n_seen IS NULL THEN n_start
                        ELSE greatest(least(o_seen, n_seen), n_start) END, greatest(o_seen, n_seen)
            FROM ch WHERE NOT acct AND n_end IS NULL AND n_start IS NOT NULL AND o_seen IS DISTINCT FROM n_seen
            UNION ALL
            SELECT least(o_submit, n_submit),
                   greatest(coalesce(o_start, o_end, 'infinity'), coalesce(n_start, n_end, 'infinity'))
            FROM ch WHERE (acct OR pend) AND coalesce(o_submit, n_submit) IS NOT NULL
        )
        SELECT min(a), max(b) INTO lo, hi FROM r;
        IF lo IS NOT NULL THEN
            DELETE FROM usage_daily_built WHERE day >= (lo AT TIME ZONE 'UTC')::date
                AND (hi = 'infinity' OR day <= (hi AT TIME ZONE 'UTC')::date);
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        SELECT min(least(submit_at, start_at)), max(coalesce(end_at, 'infinity')) INTO lo, hi
        FROM old_rows WHERE coalesce(submit_at, start_at) IS NOT NULL;
    ELSE
        SELECT min(least(submit_at, start_at)), max(coalesce(end_at, 'infinity')) INTO lo, hi
        FROM new_rows WHERE coalesce(submit_at, start_at) IS NOT NULL;
    END IF;
    IF lo IS NOT NULL THEN
        DELETE FROM usage_daily_built WHERE day >= (lo AT TIME ZONE 'UTC')::date
            AND (hi = 'infinity' OR day <= (hi AT TIME ZONE 'UTC')::date);
    END IF;
    RETURN NULL;
END $$;

-- The days built so far have no hourly rows: built again by the next
-- rollup (readers take them live until then).
DELETE FROM usage_daily_built;
