-- Discovery joined to inventory: which inventory server each discovered
-- host is, by which rule, and the keys the matching looks up.
--
-- One row per discovered host. resource_id is the linked server (NULL:
-- not linked). rule is what made the link: serial, machine_id, hostname,
-- manual (an admin decided), ambiguous (more than one server fits; detail
-- says which) or NULL (nothing fits). manual = 1 rows are never changed by
-- automatic matching. The k_* columns are the host's normalized identity
-- at the last matching, so ingest re-matches only when it changed.
CREATE TABLE host_links (
    host_id BIGINT PRIMARY KEY REFERENCES hosts(id) ON DELETE CASCADE,
    resource_id BIGINT REFERENCES resources(id) ON DELETE SET NULL,
    rule TEXT COLLATE "C",
    manual BIGINT NOT NULL DEFAULT 0,
    detail TEXT COLLATE "C",
    k_serial TEXT COLLATE "C",
    k_mid TEXT COLLATE "C",
    k_host TEXT COLLATE "C",
    k_short TEXT COLLATE "C",
    linked_at BIGINT NOT NULL,
    linked_by TEXT COLLATE "C" NOT NULL
);
CREATE INDEX host_links_resource ON host_links(resource_id);
CREATE INDEX host_links_serial ON host_links(k_serial);
CREATE INDEX host_links_mid ON host_links(k_mid);
CREATE INDEX host_links_host ON host_links(k_host);
CREATE INDEX host_links_short ON host_links(k_short);

-- Each inventory server's match keys, normalized (lower case, trimmed):
-- serial, machine_id, hostname (its name and attrs.hostname) and short
-- (those names up to the first dot).
CREATE TABLE match_keys (
    rule TEXT COLLATE "C" NOT NULL,
    value TEXT COLLATE "C" NOT NULL,
    resource_id BIGINT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    PRIMARY KEY (rule, value, resource_id)
);
CREATE INDEX match_keys_resource ON match_keys(resource_id);
