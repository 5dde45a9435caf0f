-- The rollup reads the jobs overlapping a batch of days [lo, hi). No btree
-- finds those alone: the window index gives every job ending after lo (and
-- its leading cluster_id is not bounded), and the planner read the jobs
-- by job_pk, the whole table, for each batch (931,600 rows read for
-- 137,093 kept; at 10 M jobs a year, ten million a batch). The longest
-- finished GPU job of any cluster bounds their start from below,
-- start_at >= lo - span, so a range on jobs_start_idx finds the finished
-- ones and jobs_running_idx the open ones. A span only grows (a deleted or
-- shortened job leaves it as it was: a wider range, never a missed job).
-- A row a cluster, written only when a job longer than its span comes: the
-- writers of different clusters never wait for each other (sql/019). Each
-- site's database keeps its own (the rollup is built per shard,
-- docs/scale.md).
CREATE TABLE job_span_max (
    cluster_id bigint PRIMARY KEY,
    span       interval NOT NULL
);
INSERT INTO job_span_max (cluster_id, span)
    SELECT cluster_id, max(end_at - start_at) FROM jobs
    WHERE gpu_milli > 0 AND end_at IS NOT NULL AND start_at IS NOT NULL GROUP BY cluster_id;

CREATE INDEX jobs_start_idx ON jobs (start_at) WHERE gpu_milli > 0;

CREATE FUNCTION gl_job_span_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_span_max AS m (cluster_id, span)
        SELECT n.cluster_id, max(n.end_at - n.start_at) FROM new_rows n
        WHERE n.gpu_milli > 0 AND n.end_at IS NOT NULL AND n.start_at IS NOT NULL
        GROUP BY n.cluster_id
        HAVING max(n.end_at - n.start_at) > coalesce((SELECT s.span FROM job_span_max s
                                                      WHERE s.cluster_id = n.cluster_id), interval '-1 second')
    ON CONFLICT (cluster_id) DO UPDATE SET span = excluded.span WHERE m.span < excluded.span;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_span_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_job_span_note();
CREATE TRIGGER jobs_span_upd AFTER UPDATE ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gl_job_span_note();
