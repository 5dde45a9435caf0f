-- The accounting columns sql/062 compares to tell an update that changes
-- what the rollup reads include a job's GPUs in the unit accounting reads
-- since sql/047: the billed micro-GPUs (gpu_micro; gpu_milli is derived
-- from it, rounded up, so a share change within one milli-GPU did not show)
-- and the physical share held (phys_micro, usage_daily.held). A kube
-- re-ingest that changes only a pod's held share now makes its days stale.
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
                   o.last_seen_at AS o_seen, n.last_seen_at AS n_seen
            FROM old_rows o JOIN new_rows n ON n.cluster_id = o.cluster_id AND n.job_pk = o.job_pk
        ), r AS (
            SELECT least(o_start, n_start) AS a, greatest(coalesce(o_end, 'infinity'), coalesce(n_end, 'infinity')) AS b
            FROM ch WHERE acct AND coalesce(o_start, n_start) IS NOT NULL
            UNION ALL
            SELECT CASE WHEN o_seen IS NULL OR n_seen IS NULL THEN n_start
                        ELSE greatest(least(o_seen, n_seen), n_start) END, greatest(o_seen, n_seen)
            FROM ch WHERE NOT acct AND n_end IS NULL AND n_start IS NOT NULL AND o_seen IS DISTINCT FROM n_seen
        )
        SELECT min(a), max(b) INTO lo, hi FROM r;
        IF lo IS NOT NULL THEN
            DELETE FROM usage_daily_built WHERE day >= (lo AT TIME ZONE 'UTC')::date
                AND (hi = 'infinity' OR day <= (hi AT TIME ZONE 'UTC')::date);
        END IF;
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        SELECT min(start_at), max(coalesce(end_at, 'infinity')) INTO lo, hi FROM old_rows WHERE start_at IS NOT NULL;
    ELSE
        SELECT min(start_at), max(coalesce(end_at, 'infinity')) INTO lo, hi FROM new_rows WHERE start_at IS NOT NULL;
    END IF;
    IF lo IS NOT NULL THEN
        DELETE FROM usage_daily_built WHERE day >= (lo AT TIME ZONE 'UTC')::date
            AND (hi = 'infinity' OR day <= (hi AT TIME ZONE 'UTC')::date);
    END IF;
    RETURN NULL;
END $$;
