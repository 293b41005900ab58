-- Scans and room audits. A scan looks an asset up by its tag or EPC
-- ignoring case (a reader may send either case); the two indexes serve
-- that lookup.
CREATE INDEX assets_tag_lower ON assets(LOWER(tag));
CREATE INDEX assets_epc_lower ON assets(LOWER(epc));

-- An audit of one room or rack: what was recorded there when it opened
-- (asset_audit_items with expected = 1), then what was found there
-- (found_at set; expected = 0 for an asset recorded elsewhere). state:
-- open | closed. room and rack may each be NULL (a whole data center's
-- room, or a rack named without its room), not both.
CREATE TABLE asset_audits (
    id INTEGER PRIMARY KEY,
    datacenter_id BIGINT REFERENCES datacenters(id) ON DELETE SET NULL,
    room TEXT,
    rack TEXT,
    state TEXT NOT NULL,
    note TEXT,
    opened_by TEXT NOT NULL,
    opened_at BIGINT NOT NULL,
    closed_by TEXT,
    closed_at BIGINT
);
CREATE INDEX asset_audits_state ON asset_audits(state, id);

CREATE TABLE asset_audit_items (
    audit_id BIGINT NOT NULL REFERENCES asset_audits(id) ON DELETE CASCADE,
    asset_id BIGINT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    expected INTEGER NOT NULL,
    found_at BIGINT,
    found_by TEXT,
    via TEXT,
    PRIMARY KEY (audit_id, asset_id)
);
