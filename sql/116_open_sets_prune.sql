-- The sets of open_gpu_sets (sql/107) that no sums row references any
-- more (every open job of theirs ended or moved to another set), deleted:
-- the triggers add sets and never remove one, so a fleet's table only
-- grew, and every request walks it (src/store/accounting.c, slo and ks).
-- Only with the sums' advisory lock held exclusively, which every jobs
-- writer's trigger holds shared to its transaction's end: no uncommitted
-- sums row can then reference a set judged unused. Taken without waiting
-- (NULL: a writer is in flight, try again later), since a waiting
-- exclusive request would queue every later ingest behind the one in
-- flight. The daemon's hourly `partitions` source calls it.
CREATE FUNCTION gl_open_sets_prune() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(26476, 107) THEN
        RETURN NULL;
    END IF;
    DELETE FROM open_gpu_sets s WHERE NOT EXISTS (SELECT 1 FROM open_gpu_sums u WHERE u.set_id = s.set_id);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;
