-- Cloud GPU instances: what one source's listing of a scope (an AWS
-- region, a GCP project, an Azure subscription) said about each
-- instance. An instance belongs to the source that first listed it; one
-- absent from a complete listing of its scope is gone (gone_at). Times
-- are unix seconds. tags is a JSON object {"key": "value"}.
CREATE TABLE cloud_instances (
    id INTEGER PRIMARY KEY,
    source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    scope TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    name TEXT,
    account TEXT,
    region TEXT,
    zone TEXT,
    machine_type TEXT,
    state TEXT NOT NULL,
    state_raw TEXT,
    launch_time BIGINT,
    gpu_model TEXT,
    gpu_count BIGINT, -- NULL: the type's GPUs are unknown
    gpu_memory_mib BIGINT,
    private_ip TEXT,
    tags TEXT NOT NULL DEFAULT '{}',
    host_id BIGINT REFERENCES hosts(id) ON DELETE SET NULL,
    first_seen BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,
    gone_at BIGINT,
    UNIQUE (provider, instance_id)
);
CREATE INDEX cloud_instances_scope ON cloud_instances(source_id, scope);
CREATE INDEX cloud_instances_host ON cloud_instances(host_id);

-- The stretches an instance ran: its GPUs are allocated (consumer kind
-- cloud) from started_at to ended_at, open while it runs.
CREATE TABLE cloud_runs (
    id INTEGER PRIMARY KEY,
    instance_row BIGINT NOT NULL REFERENCES cloud_instances(id) ON DELETE CASCADE,
    started_at BIGINT NOT NULL,
    ended_at BIGINT
);
CREATE INDEX cloud_runs_instance ON cloud_runs(instance_row, started_at);

-- The placeholder GPU records of an instance ("cloud:<provider>:<id>:<n>").
-- superseded_at: when an agent on the instance reported its real GPUs and
-- the placeholder stopped counting.
CREATE TABLE cloud_gpus (
    gpu_id BIGINT PRIMARY KEY REFERENCES gpus(id) ON DELETE CASCADE,
    instance_row BIGINT NOT NULL REFERENCES cloud_instances(id) ON DELETE CASCADE,
    idx BIGINT NOT NULL,
    superseded_at BIGINT,
    UNIQUE (instance_row, idx)
);
