-- Kubernetes clusters as GPU sources: nodes with their GPU capacity, and
-- the pods that request GPUs, with the interval each was seen running.
CREATE TABLE k8s_nodes (
    source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    cluster TEXT,
    hostname TEXT,
    product TEXT,
    physical_gpus BIGINT,
    gpu_capacity BIGINT,
    gpu_allocatable BIGINT,
    mig_devices BIGINT,
    sharing TEXT,
    replicas BIGINT,
    driver TEXT,
    cloud TEXT,
    region TEXT,
    zone TEXT,
    instance_type TEXT,
    ready BIGINT,
    warning TEXT,
    seen BIGINT NOT NULL DEFAULT 1, -- cleared before each listing, set by it
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    PRIMARY KEY (source_id, name)
);

CREATE TABLE k8s_pods (
    source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    uid TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    node TEXT,
    phase TEXT,
    gpus BIGINT NOT NULL DEFAULT 0,
    mig_devices BIGINT NOT NULL DEFAULT 0,
    owner_kind TEXT,
    owner_name TEXT,
    labels TEXT NOT NULL DEFAULT '{}',
    started_at BIGINT,
    seen BIGINT NOT NULL DEFAULT 1,
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    ended_at BIGINT,
    PRIMARY KEY (source_id, uid)
);
CREATE INDEX k8s_pods_node ON k8s_pods(node, ended_at);
