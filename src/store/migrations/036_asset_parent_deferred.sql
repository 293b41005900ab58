-- On PostgreSQL an asset's reference to its parent is checked when the
-- transaction commits where the transaction asks for it (see the pg
-- variant). SQLite needs no change: nothing here copies into SQLite.
SELECT 1;
