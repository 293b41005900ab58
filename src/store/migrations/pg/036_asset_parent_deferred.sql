-- An asset's parent may be registered after the asset (a server recorded
-- after its GPUs), so its id can be higher than the child's. `gpuinv db
-- copy` inserts rows in id order in batches; it asks for this reference
-- to be checked at commit (SET CONSTRAINTS ALL DEFERRED) instead of row
-- by row. Every other writer still gets it checked at once.
ALTER TABLE assets ALTER CONSTRAINT assets_parent_id_fkey DEFERRABLE INITIALLY IMMEDIATE;
