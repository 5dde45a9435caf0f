-- Shared GPUs in the books (docs/ingest.md, "Shared GPUs on Kubernetes";
-- docs/schema.md, "jobs"): a job's GPUs are micro-GPUs, not milli-GPUs. A
-- seventh of a GPU (run:ai's 0.14285714285714285, time-slicing with 7
-- replicas) is 142,857 micro-GPUs; a milli-GPU floor billed 142 of its
-- 142.857 and lost 0.6 % of the GPU per pod.
--
--   gpu_micro      what the job is billed, micro-GPUs in the unit its rate
--                  applies to (GPUs of its model; MIG: instances of its
--                  profile). Accounting reads it through GL_JOB_GPUS_SQL.
--   phys_micro     the physical GPU capacity the job holds in the books, at
--                  most one GPU per physical GPU over the pods sharing it (a
--                  1g slice holds 1/7 of its GPU; a run:ai reservation holds
--                  none: its GPU is its group's pods', the rest is idle);
--                  NULL: as billed (a scheduler's whole GPUs). Capacity,
--                  idle and conservation read it through GL_JOB_HELD_SQL.
--   gpu_milli      now generated from gpu_micro, rounded UP, so that
--                  gpu_milli > 0 is exactly gpu_micro > 0: the partial
--                  indexes and the triggers of 021 and 027 select GPU jobs by
--                  it, and no accounting query reads its value. Being
--                  generated, it cannot disagree with gpu_micro.
ALTER TABLE jobs
    ADD COLUMN gpu_micro     bigint NOT NULL DEFAULT 0,
    ADD COLUMN req_gpu_micro bigint NOT NULL DEFAULT 0,
    ADD COLUMN phys_micro    bigint,  -- NULL: held as billed (whole GPUs of a scheduler)
    ADD COLUMN gpu_share     text,    -- a pod's sharing scheme (gl_kube_share_name); NULL: a Slurm job
    ADD COLUMN gpu_uuids     jsonb,   -- the GPU / MIG device UUIDs a pod is bound to, in order
    ADD COLUMN gpu_group     text,    -- run:ai GPU group (label runai-gpu-group)
    ADD COLUMN gpu_note      text;    -- why (part of) a pod's GPUs is not billed; NULL when all is

-- Slurm jobs and pods written before hold whole milli-GPUs: exact in micro.
UPDATE jobs SET gpu_micro = gpu_milli * 1000, req_gpu_micro = req_gpu_milli * 1000
 WHERE gpu_milli <> 0 OR req_gpu_milli <> 0;

DROP INDEX jobs_window_idx;
DROP INDEX jobs_end_idx;
ALTER TABLE jobs DROP COLUMN gpu_milli, DROP COLUMN req_gpu_milli;
ALTER TABLE jobs
    ADD COLUMN gpu_milli     bigint GENERATED ALWAYS AS ((gpu_micro + 999) / 1000) STORED,
    ADD COLUMN req_gpu_milli bigint GENERATED ALWAYS AS ((req_gpu_micro + 999) / 1000) STORED;
CREATE INDEX jobs_window_idx ON jobs (cluster_id, end_at, start_at) WHERE gpu_milli > 0;
CREATE INDEX jobs_end_idx ON jobs (end_at) WHERE gpu_milli > 0;

-- Time-slicing / MPS replicas per GPU (nvidia.com/gpu.replicas) of a
-- Kubernetes node: an attribute of the open span, as memory_mib is. The
-- pod ingest reads both to know what a replica or a memory share is.
ALTER TABLE node_gpu_spans ADD COLUMN replicas integer;

-- usage_daily's allocation is micro-GPU-seconds from now on, and the idle
-- settlement reads the physical capacity held (held) apart from what was
-- billed (alloc, priced): every built day is rebuilt in the new unit.
ALTER TABLE usage_daily ADD COLUMN held bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN usage_daily.alloc IS 'micro-GPU-seconds billed (rows with rate IS NULL)';
COMMENT ON COLUMN usage_daily.priced IS 'micro-GPU-seconds billed and covered by rate';
COMMENT ON COLUMN usage_daily.held IS 'micro-GPU-seconds of physical capacity held (rows with rate IS NULL)';
COMMENT ON COLUMN usage_daily_owner.alloc IS 'micro-GPU-seconds billed (rows with rate IS NULL)';
COMMENT ON COLUMN usage_daily_owner.priced IS 'micro-GPU-seconds billed and covered by rate';
DELETE FROM usage_daily_built;
TRUNCATE usage_daily, usage_daily_owner;
