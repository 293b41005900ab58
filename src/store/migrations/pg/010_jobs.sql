-- Periodic jobs shared by every replica on one database: one lease row per
-- job (pull:<source id>, ...). A replica runs a job only after one
-- conditional UPDATE has taken the slot (next_run_at and lease_until both
-- reached); the row says who holds it, until when, and who ran it last.
CREATE TABLE job_leases (
    name TEXT COLLATE "C" PRIMARY KEY,
    holder TEXT COLLATE "C",
    next_run_at BIGINT NOT NULL,
    lease_until BIGINT NOT NULL DEFAULT 0,
    last_run_at BIGINT,
    last_holder TEXT COLLATE "C",
    runs BIGINT NOT NULL DEFAULT 0
);
