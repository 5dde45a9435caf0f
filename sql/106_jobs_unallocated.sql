-- Jobs that started with GPUs requested but none allocated have no
-- per-job daily line, so no built day makes them members of a run; a built
-- /v1/runs answer reads them live, as it reads open jobs, found through
-- this index (few rows: the index holds only them).
CREATE INDEX IF NOT EXISTS jobs_unallocated_start_idx ON jobs (start_at)
    WHERE gpu_micro = 0 AND req_gpu_micro > 0 AND start_at IS NOT NULL;
