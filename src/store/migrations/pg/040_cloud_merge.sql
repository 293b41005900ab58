-- A placeholder GPU merged into the real GPU that an agent on its
-- instance reported: superseded_by is that GPU's id (NULL: not merged;
-- a placeholder with no real GPU to pair with just ends). The merge moved
-- the placeholder's usage history, explicit ownership, billing shares and
-- asset link onto that GPU in the transaction that superseded it; the
-- usage rollup then counts the instance's runs on the real GPU.
ALTER TABLE cloud_gpus ADD COLUMN superseded_by BIGINT REFERENCES gpus(id) ON DELETE SET NULL;
CREATE INDEX cloud_gpus_superseded_by ON cloud_gpus(superseded_by);
