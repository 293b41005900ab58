-- Hardware assets: one record per physical component (server, GPU, PSU,
-- SSD, NIC, switch, other), its tag, location, purchase and warranty and
-- lifecycle stage; the per-field provenance of what import sources set;
-- and the append-only, hash-chained audit trail of every change.
-- Dates (purchase, warranty end, lease end) are YYYY-MM-DD text; money is
-- micro-units of `currency`; times are unix seconds.
CREATE TABLE assets (
    id INTEGER PRIMARY KEY,
    tag TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    serial TEXT,
    epc TEXT UNIQUE,
    vendor TEXT,
    model TEXT,
    parent_id BIGINT REFERENCES assets(id) ON DELETE SET NULL,
    datacenter_id BIGINT REFERENCES datacenters(id) ON DELETE SET NULL,
    room TEXT,
    rack TEXT,
    rack_u INTEGER,
    storage TEXT,
    stage TEXT NOT NULL,
    stage_since BIGINT NOT NULL,
    purchase_date TEXT,
    purchase_cost_micros BIGINT,
    currency TEXT,
    supplier TEXT,
    order_number TEXT,
    warranty_end TEXT,
    lease_end TEXT,
    depreciation_years DOUBLE PRECISION,
    salvage_micros BIGINT,
    gpu_uuid TEXT,
    host_id BIGINT,
    source TEXT NOT NULL,
    -- The record's key in its source, when it has no tag or serial to be
    -- matched by (an agent's device id, a NetBox id).
    source_key TEXT,
    custom TEXT NOT NULL DEFAULT '{}',
    last_seen BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
-- The list filters; the tag's unique index serves the default order.
CREATE INDEX assets_kind_stage ON assets(kind, stage);
CREATE INDEX assets_stage ON assets(stage);
CREATE INDEX assets_dc_kind ON assets(datacenter_id, kind);
CREATE INDEX assets_model ON assets(model);
CREATE INDEX assets_warranty ON assets(warranty_end);
CREATE INDEX assets_parent ON assets(parent_id);
-- Matching of import records and of discovered hardware.
CREATE INDEX assets_kind_serial ON assets(kind, serial);
CREATE INDEX assets_serial ON assets(serial);
CREATE INDEX assets_source_key ON assets(source, source_key);
CREATE INDEX assets_gpu_uuid ON assets(gpu_uuid);

-- Which source set each field of an asset last ('api', 'csv', or an
-- import source such as 'glpi:<deviceid>'), so that a source changes
-- only the fields it owns. A custom field is named 'custom.<key>'.
CREATE TABLE asset_fields (
    asset_id BIGINT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    field TEXT NOT NULL,
    source TEXT NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY (asset_id, field)
);

-- The audit trail: seq 1, 2, 3 ... without gaps; hash is the hex SHA-256
-- of the canonical byte string of (seq, asset_id, at, kind, actor,
-- detail, prev_hash) described in docs/ARCHITECTURE.md, prev_hash the
-- previous event's hash ('' for seq 1).
CREATE TABLE asset_events (
    id INTEGER PRIMARY KEY,
    seq BIGINT NOT NULL UNIQUE,
    asset_id BIGINT NOT NULL,
    at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT NOT NULL,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX asset_events_asset ON asset_events(asset_id, seq);
CREATE INDEX asset_events_at ON asset_events(at);

-- The chain's head: the newest event's seq and hash, updated in the
-- transaction that appends. No row until the first event.
CREATE TABLE asset_chain (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);

-- Append-only: an event, once written, is never changed nor removed.
CREATE TRIGGER asset_events_no_update BEFORE UPDATE ON asset_events BEGIN
    SELECT RAISE(ABORT, 'asset_events is append-only');
END;
CREATE TRIGGER asset_events_no_delete BEFORE DELETE ON asset_events BEGIN
    SELECT RAISE(ABORT, 'asset_events is append-only');
END;
