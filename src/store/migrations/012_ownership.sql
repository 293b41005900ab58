-- Ownership: the dimensions a GPU is owned by (teams, environments, pools,
-- clusters/clouds), explicit assignments per GPU, host or inventory
-- resource, and ordered mapping rules, both kept as history with
-- effective times so that past hours resolve with what was in force then.

-- One row per dimension value; kind is team, environment, pool or cluster.
CREATE TABLE owner_dims (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    display TEXT,
    description TEXT,
    attrs TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (kind, name)
);

-- An explicit assignment of a target (gpu, host or resource, by its id)
-- holds in [effective_from, effective_to); effective_to NULL: open. Each
-- row carries every field in force during its span (NULL: not assigned,
-- the next level decides). A new assignment closes the previous span.
CREATE TABLE owner_assignments (
    id INTEGER PRIMARY KEY,
    target TEXT NOT NULL,
    target_id BIGINT NOT NULL,
    team TEXT,
    env TEXT,
    pool TEXT,
    effective_from BIGINT NOT NULL,
    effective_to BIGINT,
    created_at BIGINT NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX owner_assignments_target ON owner_assignments(target, target_id, effective_from);

-- Mapping rules as versions: rule_id names the rule (the id of its first
-- version), each edit closes the version in force at the new version's
-- effective_from. A deleted rule's last version is closed and nothing
-- follows it.
CREATE TABLE owner_rules (
    id INTEGER PRIMARY KEY,
    rule_id BIGINT NOT NULL,
    position BIGINT NOT NULL,
    match_kind TEXT NOT NULL,
    match_key TEXT,
    match_value TEXT NOT NULL,
    set_team TEXT,
    set_env TEXT,
    set_pool TEXT,
    set_cluster TEXT,
    set_cloud TEXT,
    enabled BIGINT NOT NULL DEFAULT 1,
    effective_from BIGINT NOT NULL,
    effective_to BIGINT,
    created_at BIGINT NOT NULL,
    created_by TEXT NOT NULL
);
CREATE INDEX owner_rules_rule ON owner_rules(rule_id, effective_from);

-- The current owner, materialized on the GPU row for the list and its
-- filters: only the fields an assignment or rule decides (NULL where the
-- pushing source's default decides, read live from team/env/cluster), and
-- every field with what decided it in owner_json.
ALTER TABLE gpus ADD COLUMN owner_team TEXT;
ALTER TABLE gpus ADD COLUMN owner_env TEXT;
ALTER TABLE gpus ADD COLUMN owner_pool TEXT;
ALTER TABLE gpus ADD COLUMN owner_cluster TEXT;
ALTER TABLE gpus ADD COLUMN owner_cloud TEXT;
ALTER TABLE gpus ADD COLUMN owner_json TEXT;
CREATE INDEX gpus_owner_team ON gpus(owner_team);

-- Node labels (bounded), for node_label and cloud_tag rules; a node is a
-- host by k8s_nodes.hostname = hosts.hostname.
ALTER TABLE k8s_nodes ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
CREATE INDEX k8s_nodes_hostname ON k8s_nodes(hostname);

-- Bumped by every ownership write, so that a resolver's cached rule list
-- knows when it is out of date; token tells one database from another.
CREATE TABLE owner_revision (
    id BIGINT PRIMARY KEY,
    rev BIGINT NOT NULL,
    token TEXT NOT NULL
);
