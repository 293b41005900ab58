-- Per data center, kind and state: how many resources and GPUs, kept by
-- triggers in the same transaction as every resource write, so overviews
-- and list totals read a few rows instead of scanning the inventory.
CREATE TABLE dc_counts (
    datacenter_id BIGINT NOT NULL REFERENCES datacenters(id) ON DELETE CASCADE,
    kind TEXT COLLATE "C" NOT NULL,
    state TEXT COLLATE "C" NOT NULL,
    n BIGINT NOT NULL DEFAULT 0,
    gpus BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (datacenter_id, kind, state)
);

INSERT INTO dc_counts (datacenter_id, kind, state, n, gpus)
SELECT datacenter_id, kind, state, COUNT(*), COALESCE(SUM(gpu_count), 0)
FROM resources GROUP BY datacenter_id, kind, state;

-- One function for the three triggers: a deleted or changed row leaves its
-- old (data center, kind, state) group, an inserted or changed row joins its
-- new one. Groups that drop to zero stay, with n = 0.
CREATE FUNCTION gi_resources_count() RETURNS TRIGGER LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE dc_counts SET n = n - 1, gpus = gpus - OLD.gpu_count
        WHERE datacenter_id = OLD.datacenter_id AND kind = OLD.kind AND state = OLD.state;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO dc_counts AS c (datacenter_id, kind, state, n, gpus)
        VALUES (NEW.datacenter_id, NEW.kind, NEW.state, 1, NEW.gpu_count)
        ON CONFLICT (datacenter_id, kind, state)
        DO UPDATE SET n = c.n + 1, gpus = c.gpus + excluded.gpus;
    END IF;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER resources_count_insert AFTER INSERT ON resources
    FOR EACH ROW EXECUTE FUNCTION gi_resources_count();

CREATE TRIGGER resources_count_delete AFTER DELETE ON resources
    FOR EACH ROW EXECUTE FUNCTION gi_resources_count();

CREATE TRIGGER resources_count_update AFTER UPDATE OF datacenter_id, kind, state, gpu_count
    ON resources FOR EACH ROW EXECUTE FUNCTION gi_resources_count();
