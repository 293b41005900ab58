-- Kubernetes pods seen on GPUs (dcgm-exporter's pod labels), by time, so
-- that "who used which GPU when" covers containerized workloads.
CREATE TABLE gpu_pods (
    ts BIGINT NOT NULL,
    gpu_uuid TEXT COLLATE "C" NOT NULL,
    namespace TEXT COLLATE "C" NOT NULL,
    pod TEXT COLLATE "C" NOT NULL,
    container TEXT COLLATE "C",
    source_id BIGINT,
    PRIMARY KEY (ts, gpu_uuid, namespace, pod)
);
CREATE INDEX gpu_pods_gpu ON gpu_pods(gpu_uuid, ts);
