-- Push-back to the asset managers (NetBox, Snipe-IT) an asset came from.
--
-- asset_links: the remote object an asset is linked to in one source (a
-- NetBox device id, a Snipe-IT hardware id), recorded by the source's
-- pull.
CREATE TABLE asset_links (
    asset_id BIGINT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    source_id BIGINT NOT NULL,
    remote_id TEXT NOT NULL,
    linked_at BIGINT NOT NULL,
    PRIMARY KEY (asset_id, source_id)
);
CREATE INDEX asset_links_source ON asset_links (source_id, remote_id);

-- The remote value of each pushed field as gpuinv last saw it at a sync
-- (a pull, or a push that wrote or found it): a push writes a field only
-- while the remote still holds this value. held: gpuinv's value when a
-- person chose to keep the remote's; the field is not pushed again until
-- gpuinv's value changes.
CREATE TABLE asset_sync (
    asset_id BIGINT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    source_id BIGINT NOT NULL,
    field TEXT NOT NULL,
    remote_value TEXT,
    held TEXT,
    synced_at BIGINT NOT NULL,
    PRIMARY KEY (asset_id, source_id, field)
);

-- The outbound updates, one per asset and source, sent by the delivery
-- job with the webhooks' retry schedule. state: pending (due at next_at),
-- delivered, conflict (sent, with at least one field held back),
-- failed (the remote refused it for good) or dead (the schedule ran
-- out). sent: JSON of the fields written; response: the last answer.
CREATE TABLE sync_pushes (
    id INTEGER PRIMARY KEY,
    asset_id BIGINT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    source_id BIGINT NOT NULL,
    reason TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at BIGINT NOT NULL,
    last_status INTEGER,
    last_error TEXT,
    sent TEXT,
    response TEXT,
    created_at BIGINT NOT NULL,
    delivered_at BIGINT
);
CREATE INDEX sync_pushes_due ON sync_pushes (state, next_at);
CREATE INDEX sync_pushes_asset ON sync_pushes (asset_id, id);

-- A field the remote changed since the last sync while gpuinv changed it
-- too: never overwritten, shown until a person keeps ours or theirs.
CREATE TABLE sync_conflicts (
    id INTEGER PRIMARY KEY,
    asset_id BIGINT NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
    source_id BIGINT NOT NULL,
    field TEXT NOT NULL,
    ours TEXT,
    theirs TEXT,
    base TEXT,
    detected_at BIGINT NOT NULL,
    resolved_at BIGINT,
    resolved_by TEXT,
    resolution TEXT
);
CREATE UNIQUE INDEX sync_conflicts_open ON sync_conflicts (asset_id, source_id, field)
    WHERE resolved_at IS NULL;
CREATE INDEX sync_conflicts_asset ON sync_conflicts (asset_id, id);
