-- /v1/jobs lists jobs newest first: by submit time (start time for a row
-- without one), then the order ingested, so a month of history backfilled
-- after this month's jobs lands where it belongs instead of on the first
-- page (it was listed by job_pk, the ingest order). The page is read off
-- jobs_newest_idx; the cursor is still the last row's job_pk, found through
-- jobs_job_pk_idx (the primary key leads with cluster_id, which the cursor
-- does not carry). Neither is unique, so distribution by cluster_id is not
-- constrained (docs/schema.md).
CREATE INDEX jobs_newest_idx ON jobs ((coalesce(submit_at, start_at, '-infinity'::timestamptz)) DESC, job_pk DESC);
CREATE INDEX jobs_job_pk_idx ON jobs (job_pk);
