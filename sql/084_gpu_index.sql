-- The GPU's index on its node as its source numbers it (dcgm-exporter's
-- gpu label, nvidia-smi's index, the AMD exporter's gpu_id): what an
-- operator reads in nvidia-smi / amd-smi and CUDA_VISIBLE_DEVICES, so
-- /v1/inventory can name a GPU the way the node does. NULL where the
-- source does not give one (and on rows written before this migration
-- until their next scrape).
ALTER TABLE gpus ADD COLUMN gpu_index integer;
