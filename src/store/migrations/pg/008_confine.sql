-- Sources stay in their lane, and readings say when they were taken.
--
-- A host or GPU belongs to one source (hosts.source_id, gpus.source_id):
-- the first to report it, or a source of higher precedence that reports it
-- later. Another source's differing identity for it is kept as a conflict,
-- never written over the owner's.
ALTER TABLE sources ADD COLUMN precedence BIGINT NOT NULL DEFAULT 0;

-- A pusher token may be confined to host-name patterns (comma-separated
-- globs) and to one cluster.
ALTER TABLE tokens ADD COLUMN hosts TEXT COLLATE "C";
ALTER TABLE tokens ADD COLUMN limit_cluster TEXT COLLATE "C";

-- observed_at: when the newest reading of the GPU was taken (its newest
-- shown sample, else the owning source's observation time); freshness is
-- judged by it. last_seen_at stays "when its owning source last reported
-- it". reading_source_id: whose sample the newest readings are.
ALTER TABLE gpus ADD COLUMN observed_at BIGINT;
ALTER TABLE gpus ADD COLUMN reading_source_id BIGINT;
UPDATE gpus SET observed_at = COALESCE(sample_at, last_seen_at);
UPDATE gpus SET reading_source_id = source_id WHERE sample_at IS NOT NULL;

-- The current disagreement of each non-owning source about a GPU's
-- identity (host, serial, model); each change is also a `conflict` event.
CREATE TABLE gpu_conflicts (
    gpu_id BIGINT NOT NULL REFERENCES gpus(id) ON DELETE CASCADE,
    source_id BIGINT NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    field TEXT COLLATE "C" NOT NULL,
    theirs TEXT COLLATE "C",
    ours TEXT COLLATE "C",
    first_at BIGINT NOT NULL,
    last_at BIGINT NOT NULL,
    PRIMARY KEY (gpu_id, source_id, field)
);

-- Samples are kept per source: two sources reporting one GPU at the same
-- second both keep their row. SQLite rebuilds the table; here the
-- partitioned table (and with it every partition) changes in place: the
-- same columns, a source_id of 0 where there was none, and the key
-- (ts, gpu_id, source_id).
UPDATE gpu_samples SET source_id = 0 WHERE source_id IS NULL;
ALTER TABLE gpu_samples ALTER COLUMN source_id SET DEFAULT 0;
ALTER TABLE gpu_samples ALTER COLUMN source_id SET NOT NULL;
ALTER TABLE gpu_samples DROP CONSTRAINT gpu_samples_pkey;
ALTER TABLE gpu_samples ADD PRIMARY KEY (ts, gpu_id, source_id);
