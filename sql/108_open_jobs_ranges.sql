-- The open jobs a request reads one by one beside the sums of sql/107: in
-- a few ranges of start (a firm piece's days, from the earliest sighting's
-- day on) and of deadline (between the earliest sighting and today), so
-- the summed jobs are never read (src/store/accounting.c, put_open_ranges).
-- The deadline as UTC wall time: timestamptz arithmetic is not immutable.
CREATE INDEX jobs_open_start_idx ON jobs (start_at) WHERE end_at IS NULL AND gpu_milli > 0;
CREATE INDEX jobs_open_deadline_idx ON jobs (((start_at AT TIME ZONE 'UTC') + timelimit_s * interval '1 second'))
    WHERE end_at IS NULL AND gpu_milli > 0 AND timelimit_s >= 0;
