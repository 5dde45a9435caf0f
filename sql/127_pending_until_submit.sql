-- 127: the pending series' jobs found in the index alone (issue 31).
-- A window's pending jobs are those started (or ended) after its start and
-- submitted before its end. jobs_pending_until_idx held the first bound
-- only, so the rollup's pending series of a mid-year batch of 8 days
-- fetched every job started after those days from the heap to keep the
-- few submitted before their end: 3.9 M rows for 219,368 at 10 M jobs a
-- year, 2.7 s of a batch's ~17 s. With the submission in the index the
-- second bound is tested on the index entries and only the jobs kept are
-- read.
DROP INDEX jobs_pending_until_idx;
CREATE INDEX jobs_pending_until_idx ON jobs ((coalesce(start_at, end_at)), submit_at) WHERE submit_at IS NOT NULL;
