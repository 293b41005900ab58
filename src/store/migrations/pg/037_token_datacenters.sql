-- A token may be confined to data centers: their ids, comma-separated
-- ("3,7"); NULL for every data center.
ALTER TABLE tokens ADD COLUMN datacenters TEXT COLLATE "C";
