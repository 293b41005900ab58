-- One GPU's raw samples by time (its timeline, GET
-- /api/v1/gpus/{uuid}/timeline): the key is time first, so a range read by
-- it walks every GPU's entries in the range; this index reads only the
-- GPU's own. On PostgreSQL it is a partitioned index: every day's partition
-- has it, including those gi_samples_partitions attaches later.
CREATE INDEX gpu_samples_gpu_ts ON gpu_samples (gpu_id, ts);
