-- A list page of one data center and kind (and state) is ordered by id: the
-- indexes carry id last, so a page is read in order from the index instead
-- of filtering the primary key's order (SQLite's indexes end with the rowid
-- already; the columns are the same in both dialects).
DROP INDEX resources_dc_kind;
DROP INDEX resources_dc_kind_state;
CREATE INDEX resources_dc_kind ON resources(datacenter_id, kind, id);
CREATE INDEX resources_dc_kind_state ON resources(datacenter_id, kind, state, id);

-- dc_counts is kept per statement instead of per row: each INSERT, DELETE or
-- UPDATE of resources applies its rows to their (data center, kind, state)
-- groups once, from the statement's transition tables. A per-row trigger
-- updated a group's row once per resource, and inside one transaction each
-- update leaves a version that nothing can prune yet, so the n-th insert of
-- a large import walked n versions. Same results as 005's trigger: a group
-- is created by the first row that enters it and stays, at zero, when its
-- last row leaves.
--
-- A transaction that inserts resources one statement at a time (the CSV
-- import) may instead set gi.counts_deferred to 'on' for itself
-- (set_config(..., true)): its inserts then leave dc_counts alone and it
-- adds their groups itself before it commits, in one statement.
DROP TRIGGER resources_count_insert ON resources;
DROP TRIGGER resources_count_delete ON resources;
DROP TRIGGER resources_count_update ON resources;
DROP FUNCTION gi_resources_count();

CREATE FUNCTION gi_resources_count_insert() RETURNS TRIGGER LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('gi.counts_deferred', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO dc_counts AS c (datacenter_id, kind, state, n, gpus)
    SELECT datacenter_id, kind, state, COUNT(*), COALESCE(SUM(gpu_count), 0)
    FROM new_rows GROUP BY datacenter_id, kind, state
    ON CONFLICT (datacenter_id, kind, state)
    DO UPDATE SET n = c.n + excluded.n, gpus = c.gpus + excluded.gpus;
    RETURN NULL;
END
$fn$;

-- Only existing groups are updated: rows deleted with their data center
-- (a cascade) must not bring back the data center's groups.
CREATE FUNCTION gi_resources_count_delete() RETURNS TRIGGER LANGUAGE plpgsql AS $fn$
BEGIN
    UPDATE dc_counts c SET n = c.n - o.n, gpus = c.gpus - o.gpus
    FROM (SELECT datacenter_id, kind, state, COUNT(*) AS n, COALESCE(SUM(gpu_count), 0) AS gpus
          FROM old_rows GROUP BY datacenter_id, kind, state) o
    WHERE c.datacenter_id = o.datacenter_id AND c.kind = o.kind AND c.state = o.state;
    RETURN NULL;
END
$fn$;

-- Each updated row leaves its old group and joins its new one; groups whose
-- balance is nil (the counted columns did not change) are not written.
CREATE FUNCTION gi_resources_count_update() RETURNS TRIGGER LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO dc_counts AS c (datacenter_id, kind, state, n, gpus)
    SELECT datacenter_id, kind, state, SUM(n), SUM(gpus)
    FROM (SELECT datacenter_id, kind, state, -1 AS n, -gpu_count AS gpus FROM old_rows
          UNION ALL
          SELECT datacenter_id, kind, state, 1, gpu_count FROM new_rows) d
    GROUP BY datacenter_id, kind, state
    HAVING SUM(n) <> 0 OR SUM(gpus) <> 0
    ON CONFLICT (datacenter_id, kind, state)
    DO UPDATE SET n = c.n + excluded.n, gpus = c.gpus + excluded.gpus;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER resources_count_insert AFTER INSERT ON resources
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gi_resources_count_insert();

CREATE TRIGGER resources_count_delete AFTER DELETE ON resources
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gi_resources_count_delete();

-- Transition tables take no column list: every UPDATE of resources fires it,
-- and updates that leave the counted columns alone write nothing.
CREATE TRIGGER resources_count_update AFTER UPDATE ON resources
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION gi_resources_count_update();
