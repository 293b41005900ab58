-- A list page of one data center and kind (and state) is ordered by id: the
-- indexes carry id last, so a page is read in order from the index instead
-- of filtering the primary key's order (SQLite's indexes end with the rowid
-- already; the columns are the same in both dialects).
DROP INDEX resources_dc_kind;
DROP INDEX resources_dc_kind_state;
CREATE INDEX resources_dc_kind ON resources(datacenter_id, kind, id);
CREATE INDEX resources_dc_kind_state ON resources(datacenter_id, kind, state, id);

-- (PostgreSQL's migration 016 also changes how dc_counts is kept; SQLite's
-- row triggers of 005 stay: they cost SQLite no extra versions.)
