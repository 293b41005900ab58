-- Keeping the current owner on each GPU row current.
--
-- owner_clock: the time up to which the owner:refresh job has recomputed
-- the GPUs whose assignment or rule came into force (or ended), one row
-- (id 1); the next run looks at what took effect after it.
CREATE TABLE owner_clock (
    id BIGINT PRIMARY KEY,
    refreshed_to BIGINT NOT NULL
);
-- What the job looks for: spans starting or ending within (refreshed_to, now].
CREATE INDEX owner_assignments_from ON owner_assignments(effective_from);
CREATE INDEX owner_assignments_to ON owner_assignments(effective_to);
CREATE INDEX owner_rules_from ON owner_rules(effective_from);
CREATE INDEX owner_rules_to ON owner_rules(effective_to);
-- A physical GPU's MIG instances, which inherit its assignment.
CREATE INDEX gpus_parent ON gpus(parent_uuid);
