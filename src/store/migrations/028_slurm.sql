-- Slurm job accounting: the allocations a slurm source read from sacct or
-- slurmrestd, one row per job (key: cluster, JobIDRaw, submit time, as
-- Slurm reuses ids), and the GPU records each job held, matched by node
-- host name and GPU index. GPUs of a job that match no record are counted
-- on the job (gpus_unmatched), not lost. Times are unix seconds; a running
-- job has no ended_at.
CREATE TABLE slurm_jobs (
    id INTEGER PRIMARY KEY,
    source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    cluster TEXT NOT NULL,
    job_id_raw BIGINT NOT NULL,
    submit_at BIGINT NOT NULL, -- 0 when Slurm did not say
    job_id TEXT NOT NULL,
    user_name TEXT,
    account TEXT,
    partition TEXT,
    qos TEXT,
    name TEXT,
    state TEXT,
    nodelist TEXT,
    nodes BIGINT NOT NULL DEFAULT 0,
    gpus BIGINT,
    gpu_type TEXT,
    started_at BIGINT,
    ended_at BIGINT,
    elapsed_s BIGINT,
    gpu_util_sum DOUBLE PRECISION,
    gpu_mem_mib DOUBLE PRECISION,
    gpus_matched BIGINT NOT NULL DEFAULT 0,
    gpus_unmatched BIGINT NOT NULL DEFAULT 0,
    alloc_key TEXT, -- nodes, GPU count and indexes the matching was made from
    first_seen_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    UNIQUE (cluster, job_id_raw, submit_at)
);
CREATE INDEX slurm_jobs_source ON slurm_jobs(source_id, ended_at);
CREATE INDEX slurm_jobs_started ON slurm_jobs(started_at);

-- idx_known: 1 when Slurm recorded the index, 0 when gpuinv handed the
-- node's GPUs out (lowest free index first).
CREATE TABLE slurm_job_gpus (
    job_id BIGINT NOT NULL REFERENCES slurm_jobs(id) ON DELETE CASCADE,
    gpu_id BIGINT NOT NULL REFERENCES gpus(id) ON DELETE CASCADE,
    node TEXT NOT NULL,
    idx BIGINT,
    idx_known BIGINT NOT NULL,
    PRIMARY KEY (job_id, gpu_id)
);
CREATE INDEX slurm_job_gpus_gpu ON slurm_job_gpus(gpu_id);

-- Where the next incremental pull of a source starts (less the overlap).
CREATE TABLE slurm_cursors (
    source_id BIGINT PRIMARY KEY REFERENCES sources(id) ON DELETE CASCADE,
    pulled_until BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
