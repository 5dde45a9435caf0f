-- Observed time (docs/ingest.md): an open job is billed firmly up to the
-- last moment a source saw it open, GL_JOB_SEEN_SQL in accounting.h: its
-- own last_seen_at, or the watermark of its source (sacct, kube) for its
-- cluster. The watermark is what a poll moves, not every running job's
-- row: rewriting jobs.last_seen_at of each running job at each poll would
-- fire the jobs staleness trigger (sql/012, sql/019), which makes stale
-- every day from each open job's start on, so every day a long job spans
-- would be rebuilt at every poll. A watermark that moves from old to new
-- changes the firm time of open jobs only between the two, so only those
-- days become stale (at a poll a minute after the last, today, which is
-- read live anyway).
CREATE FUNCTION gl_usage_daily_stale_seen() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    lo timestamptz;
    hi timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(26476, 0);
    -- a first watermark (no old one): open jobs were seen up to it from
    -- their start, whenever that was
    IF TG_OP = 'INSERT' THEN
        SELECT '-infinity', max(n.watermark) INTO lo, hi FROM new_rows n
        WHERE n.source IN ('sacct', 'kube') AND n.watermark IS NOT NULL;
    ELSE
        SELECT min(CASE WHEN o.watermark IS NULL THEN '-infinity' ELSE least(o.watermark, n.watermark) END),
               max(greatest(o.watermark, n.watermark)) INTO lo, hi
        FROM new_rows n JOIN old_rows o ON o.source = n.source AND o.cluster_id = n.cluster_id
        WHERE n.source IN ('sacct', 'kube') AND o.watermark IS DISTINCT FROM n.watermark;
    END IF;
    IF lo IS NOT NULL AND hi IS NOT NULL THEN
        DELETE FROM usage_daily_built
        WHERE (lo = '-infinity' OR day >= (lo AT TIME ZONE 'UTC')::date) AND day <= (hi AT TIME ZONE 'UTC')::date;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER ingest_state_daily_stale_ins AFTER INSERT ON ingest_state REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_seen();
CREATE TRIGGER ingest_state_daily_stale_upd AFTER UPDATE ON ingest_state
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_usage_daily_stale_seen();

-- How far each source's data reaches, for data_through and staleness: the
-- watermark of a poll or snapshot series, or the capture time of the last
-- saved file ingested (which moves no watermark: the poller resumes from
-- the watermark, and one file says nothing of the jobs it does not list).
ALTER TABLE ingest_state ADD COLUMN observed_to timestamptz;
