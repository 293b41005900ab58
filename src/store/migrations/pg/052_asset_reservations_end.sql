-- How a spare reservation ended: `ended_as` is NULL while the spare is
-- still reserved (released_at NULL), 'released' when a person released it
-- (POST /api/v1/reservations/{id}/release) and 'consumed' when the spare
-- itself went active as the replacement. `ended_by` is who (or what)
-- ended it and `end_reason` the reason given. A reservation ended before
-- this migration keeps ended_as NULL and reads as 'released'.
ALTER TABLE asset_reservations ADD COLUMN ended_as TEXT COLLATE "C";
ALTER TABLE asset_reservations ADD COLUMN ended_by TEXT COLLATE "C";
ALTER TABLE asset_reservations ADD COLUMN end_reason TEXT COLLATE "C";
