-- GPU discovery and telemetry: sources, hosts, one record per physical GPU
-- with per-field provenance, time-major samples, processes and events.
CREATE TABLE sources (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    config TEXT NOT NULL DEFAULT '{}',
    team TEXT,
    env TEXT,
    cluster TEXT,
    interval_s BIGINT NOT NULL DEFAULT 300,
    enabled BIGINT NOT NULL DEFAULT 1,
    last_attempt_at BIGINT,
    last_success_at BIGINT,
    last_error TEXT,
    gpus_reported BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

ALTER TABLE tokens ADD COLUMN source_id BIGINT REFERENCES sources(id) ON DELETE CASCADE;

CREATE TABLE hosts (
    id INTEGER PRIMARY KEY,
    hostname TEXT NOT NULL UNIQUE,
    machine_id TEXT,
    serial TEXT,
    cluster TEXT,
    datacenter_id BIGINT REFERENCES datacenters(id) ON DELETE SET NULL,
    source_id BIGINT REFERENCES sources(id) ON DELETE SET NULL,
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);

CREATE TABLE gpus (
    id INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    parent_uuid TEXT,
    host_id BIGINT REFERENCES hosts(id) ON DELETE SET NULL,
    idx BIGINT,
    vendor TEXT,
    model TEXT,
    serial TEXT,
    pci_bus_id TEXT,
    memory_total_mib DOUBLE PRECISION,
    driver TEXT,
    vbios TEXT,
    mig_mode BIGINT,
    mig_profile TEXT,
    mig_instance BIGINT,
    team TEXT,
    env TEXT,
    cluster TEXT,
    source_id BIGINT REFERENCES sources(id) ON DELETE SET NULL,
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    missing_since BIGINT,
    -- The newest sample, kept on the record so "now" needs no history scan.
    sample_at BIGINT,
    util_pct DOUBLE PRECISION,
    mem_used_mib DOUBLE PRECISION,
    power_w DOUBLE PRECISION,
    temp_c DOUBLE PRECISION,
    ecc_corrected BIGINT,
    ecc_uncorrected BIGINT,
    xid_last BIGINT
);
CREATE INDEX gpus_host ON gpus(host_id);
CREATE INDEX gpus_serial ON gpus(serial);
CREATE INDEX gpus_last_seen ON gpus(last_seen_at);
CREATE INDEX gpus_source ON gpus(source_id);

-- Which source last set each identity field of a GPU, and when.
CREATE TABLE gpu_provenance (
    gpu_uuid TEXT NOT NULL REFERENCES gpus(uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    field TEXT NOT NULL,
    value TEXT,
    source_id BIGINT,
    set_at BIGINT NOT NULL,
    PRIMARY KEY (gpu_uuid, field)
);

-- Time-major so that appends touch the end of the index, keyed by the
-- GPU's integer id to keep rows and index entries small. The newest values
-- live on the gpus row; history is read by time range.
CREATE TABLE gpu_samples (
    ts BIGINT NOT NULL,
    gpu_id BIGINT NOT NULL,
    util_avg DOUBLE PRECISION,
    util_max DOUBLE PRECISION,
    mem_used_mib DOUBLE PRECISION,
    power_avg_w DOUBLE PRECISION,
    energy_j DOUBLE PRECISION,
    temp_c DOUBLE PRECISION,
    ecc_corrected BIGINT,
    ecc_uncorrected BIGINT,
    xid BIGINT,
    source_id BIGINT,
    PRIMARY KEY (ts, gpu_id)
);

CREATE TABLE gpu_processes (
    ts BIGINT NOT NULL,
    gpu_uuid TEXT NOT NULL,
    pid BIGINT NOT NULL,
    name TEXT,
    username TEXT,
    uid BIGINT,
    container TEXT,
    pod_uid TEXT,
    pod TEXT,
    namespace TEXT,
    used_mib DOUBLE PRECISION,
    source_id BIGINT,
    PRIMARY KEY (ts, gpu_uuid, pid)
);
CREATE INDEX gpu_processes_gpu ON gpu_processes(gpu_uuid, ts);

CREATE TABLE gpu_events (
    id INTEGER PRIMARY KEY,
    gpu_uuid TEXT NOT NULL,
    at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT,
    source_id BIGINT
);
CREATE INDEX gpu_events_gpu ON gpu_events(gpu_uuid, at);

-- Batches already applied, per source, so that a retried push is stored once.
CREATE TABLE ingest_batches (
    source_id BIGINT NOT NULL,
    batch_id TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    samples BIGINT NOT NULL,
    PRIMARY KEY (source_id, batch_id)
);
