-- Kubernetes clusters as GPU sources: nodes with their GPU capacity, and
-- the pods that request GPUs, with the interval each was seen running.
CREATE TABLE k8s_nodes (
    source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    name TEXT COLLATE "C" NOT NULL,
    cluster TEXT COLLATE "C",
    hostname TEXT COLLATE "C",
    product TEXT COLLATE "C",
    physical_gpus BIGINT,
    gpu_capacity BIGINT,
    gpu_allocatable BIGINT,
    mig_devices BIGINT,
    sharing TEXT COLLATE "C",
    replicas BIGINT,
    driver TEXT COLLATE "C",
    cloud TEXT COLLATE "C",
    region TEXT COLLATE "C",
    zone TEXT COLLATE "C",
    instance_type TEXT COLLATE "C",
    ready BIGINT,
    warning TEXT COLLATE "C",
    seen BIGINT NOT NULL DEFAULT 1, -- cleared before each listing, set by it
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    PRIMARY KEY (source_id, name)
);

CREATE TABLE k8s_pods (
    source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    uid TEXT COLLATE "C" NOT NULL,
    namespace TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    node TEXT COLLATE "C",
    phase TEXT COLLATE "C",
    gpus BIGINT NOT NULL DEFAULT 0,
    mig_devices BIGINT NOT NULL DEFAULT 0,
    owner_kind TEXT COLLATE "C",
    owner_name TEXT COLLATE "C",
    labels TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    started_at BIGINT,
    seen BIGINT NOT NULL DEFAULT 1,
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    ended_at BIGINT,
    PRIMARY KEY (source_id, uid)
);
CREATE INDEX k8s_pods_node ON k8s_pods(node, ended_at);
