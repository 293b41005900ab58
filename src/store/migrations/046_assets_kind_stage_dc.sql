-- The asset list's page of one kind, stage and data center in tag order
-- (its equality-only statements, src/store/assets.c EQ_VARIANTS) reads
-- just the page's rows from this index. It replaces (kind, stage), which
-- is its prefix and so still serves every query that one did.
DROP INDEX assets_kind_stage;
CREATE INDEX assets_kind_stage_dc ON assets(kind, stage, datacenter_id, tag);
