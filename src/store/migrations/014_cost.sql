-- Cost: the price catalog (hourly rates and purchase prices per GPU model,
-- with effective dates), the cost settings of the TCO method, and cloud
-- billing lines with their cost spread over the GPUs they paid for.
--
-- prices: env, cloud and pool are '' when the entry leaves them open. An
-- entry is in force from effective_from until the next entry of the same
-- kind, model (ignoring case), env, cloud and pool. micros: micro-units of
-- currency per GPU-hour (kind 'hourly') or per GPU bought (kind 'purchase').
CREATE TABLE prices (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'hourly',
    model TEXT NOT NULL,
    env TEXT NOT NULL DEFAULT '',
    cloud TEXT NOT NULL DEFAULT '',
    pool TEXT NOT NULL DEFAULT '',
    micros BIGINT NOT NULL,
    currency TEXT NOT NULL,
    effective_from BIGINT NOT NULL,
    estimate BIGINT NOT NULL DEFAULT 0,
    note TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (kind, model, env, cloud, pool, effective_from)
);

-- The shipped default entries (estimates) are inserted by the first start
-- of `gpuinv serve` (store_prices_seed), which records that it did in
-- cost_settings ('catalog_seeded'): an entry an admin deletes stays deleted.

-- Settings of the cost methods, one row per name (absent: the default),
-- and the catalog_seeded mark.
CREATE TABLE cost_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- One GPU-relevant line of a cloud billing export. line_key is the
-- provider's line id (with its time interval) or, where the export has
-- none, a digest of the line's cells: importing a file again adds nothing.
-- resource_id is the instance as the export names it (AWS i-..., a GCP
-- numeric id or name, an Azure resource path); team comes from a team tag.
-- host_id and gpu_ids are what the line matched, by matched_by
-- ('instance:<key>' or 'tag:team'); NULL matched_by: unmatched.
CREATE TABLE billing_lines (
    id INTEGER PRIMARY KEY,
    provider TEXT NOT NULL,
    account TEXT NOT NULL DEFAULT '',
    line_key TEXT NOT NULL,
    source_line BIGINT NOT NULL,
    resource_id TEXT,
    resource_name TEXT,
    instance_type TEXT,
    usage_start BIGINT NOT NULL,
    usage_end BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    credits_micros BIGINT NOT NULL DEFAULT 0,
    currency TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '{}',
    team TEXT,
    host_id BIGINT REFERENCES hosts(id) ON DELETE SET NULL,
    gpu_ids TEXT NOT NULL DEFAULT '[]',
    matched_by TEXT,
    imported_at BIGINT NOT NULL,
    UNIQUE (provider, account, line_key)
);
CREATE INDEX billing_lines_start ON billing_lines(usage_start);
CREATE INDEX billing_lines_matched ON billing_lines(matched_by);

-- A line's cost (net of credits) spread over its instance's GPUs: equal
-- shares, the remainder of the division on the first GPU.
CREATE TABLE billing_costs (
    line_id BIGINT NOT NULL REFERENCES billing_lines(id) ON DELETE CASCADE,
    gpu_id BIGINT NOT NULL REFERENCES gpus(id) ON DELETE CASCADE,
    usage_start BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    PRIMARY KEY (line_id, gpu_id)
);
CREATE INDEX billing_costs_gpu ON billing_costs(gpu_id, usage_start);
CREATE INDEX billing_costs_start ON billing_costs(usage_start);

-- A Kubernetes node's spec.providerID, the cloud instance behind it, so
-- that a billing line finds the node's host by instance id.
ALTER TABLE k8s_nodes ADD COLUMN provider_id TEXT;
