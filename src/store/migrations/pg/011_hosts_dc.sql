-- A data center's discovered hosts are read by its overview (GPU states, servers
-- seen): an index instead of a scan of every host.
CREATE INDEX hosts_datacenter ON hosts(datacenter_id);
