-- gpu_usage's per-job index goes: no reader looks a job's buckets up in
-- gpu_usage any more. A job's busy, idle and observed GPU-seconds, the idle
-- hook's buckets and the chargeback's split read gpu_usage_jobs (its own
-- (job_pk, bucket) indexes, 008 and 013); gpu_usage is read by its primary
-- key (the hook joins each job bucket's GPU row) or by a window of buckets
-- (showback's energy, summed per job). The index was 11 kB of the exporter's
-- 140 kB a GPU-day, written for every bucket row with a job
-- (docs/scale.md, "A year of 100,000 GPUs at 5-minute buckets").
DROP INDEX gpu_usage_job_idx;
