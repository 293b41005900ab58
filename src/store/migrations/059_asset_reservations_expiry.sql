-- When a spare reservation expires: `expires_at` is set when the
-- reserve_spare action that made it has `expire_days` (or by PATCH
-- /api/v1/reservations/{id}), NULL for one that holds until it ends
-- another way. The lifecycle rules' run ends the open ones past it as
-- 'expired', reading them by this index.
ALTER TABLE asset_reservations ADD COLUMN expires_at BIGINT;
CREATE INDEX asset_reservations_expiry ON asset_reservations (expires_at) WHERE released_at IS NULL AND expires_at IS NOT NULL;
