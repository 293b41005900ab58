-- Memory row remapping as the GPU last reported it (NVML
-- nvmlDeviceGetRemappedRows, nvidia-smi <remapped_rows>, Gaudi's row
-- replacement): rows remapped for correctable and uncorrectable errors,
-- a remap pending (1/0) and a remap failure (1/0), NULL when never
-- reported. remap_failure_since is when the failure was first reported
-- (NULL while there is none); the health rollup counts a day as a
-- row-remap failure day when it falls on or after it.
ALTER TABLE gpus ADD COLUMN remap_corrected BIGINT;
ALTER TABLE gpus ADD COLUMN remap_uncorrectable BIGINT;
ALTER TABLE gpus ADD COLUMN remap_pending BIGINT;
ALTER TABLE gpus ADD COLUMN remap_failure BIGINT;
ALTER TABLE gpus ADD COLUMN remap_failure_since BIGINT;
