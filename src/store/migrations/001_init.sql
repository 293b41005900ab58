-- Initial schema: credentials, audit trail and the data-center inventory.
-- Written in the SQL subset that SQLite and PostgreSQL both accept.
CREATE TABLE tokens (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
);

CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE sessions (
    hash TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    at BIGINT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    entity TEXT NOT NULL,
    entity_id BIGINT,
    before_json TEXT,
    after_json TEXT
);
CREATE INDEX audit_entity ON audit(entity, entity_id);

CREATE TABLE datacenters (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    location TEXT NOT NULL DEFAULT '',
    rows_count BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE resources (
    id INTEGER PRIMARY KEY,
    datacenter_id BIGINT NOT NULL REFERENCES datacenters(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'available',
    tenant TEXT,
    project TEXT,
    gpu_model TEXT,
    gpu_count BIGINT NOT NULL DEFAULT 0,
    attrs TEXT NOT NULL DEFAULT '{}',
    metadata TEXT NOT NULL DEFAULT '{}',
    version BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (datacenter_id, kind, name)
);
CREATE INDEX resources_kind_state ON resources(kind, state);
CREATE INDEX resources_dc_kind ON resources(datacenter_id, kind);
CREATE INDEX resources_dc_kind_state ON resources(datacenter_id, kind, state);
CREATE INDEX resources_tenant ON resources(tenant);

-- Allocation history: one interval per allocation; ended_at NULL while held.
CREATE TABLE allocations (
    id INTEGER PRIMARY KEY,
    resource_id BIGINT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    tenant TEXT NOT NULL,
    project TEXT,
    actor TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    ended_at BIGINT
);
CREATE INDEX allocations_resource ON allocations(resource_id, started_at);
