-- What each source had dropped on the way in: fields and records the push
-- API could not accept (listed as warnings in its replies) and readings a
-- pull could not use. Counted, with the latest message and its time.
ALTER TABLE sources ADD COLUMN warnings_total BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sources ADD COLUMN last_warning TEXT COLLATE "C";
ALTER TABLE sources ADD COLUMN last_warning_at BIGINT;
