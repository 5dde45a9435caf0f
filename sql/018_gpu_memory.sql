-- Memory per GPU as the scheduler inventory reports it (GPU feature
-- discovery's nvidia.com/gpu.memory label, MiB); NULL when not reported.
-- Not part of a span's identity: a new value refreshes the open span.
ALTER TABLE node_gpu_spans ADD COLUMN memory_mib bigint;
