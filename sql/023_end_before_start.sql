-- A job whose end is before its start (slurmdbd records one when the
-- controller's clock stepped back) held its GPUs for no time. Ingest now
-- stores such an end as the start (src/store/jobs.c); rows written before
-- took their negative span off their owner's GPU-seconds and cost. The
-- update fires the staleness trigger, so the daily rollup of those days is
-- rebuilt.
UPDATE jobs SET end_at = start_at WHERE end_at < start_at;
