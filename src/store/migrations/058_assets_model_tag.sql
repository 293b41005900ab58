-- The asset list's page of one model in tag order (its model statements,
-- src/store/assets.c MODEL_*) reads the model's rows in the page's order
-- from this index and stops at the page, where the generic statement
-- walked the tag index through every other model. It replaces (model),
-- which is its prefix and so still serves every query that one did.
DROP INDEX assets_model;
CREATE INDEX assets_model_tag ON assets(model, tag);
