-- Outbound webhooks, their delivery log, and tickets.
--
-- webhooks: one receiver each. format picks the body (generic, jira,
-- jira_v2, servicenow); secret signs every delivery and auth is the
-- Authorization header value sent with it (both write-only in the API);
-- events is a comma list of the event kinds it wants, or '*'; config is a
-- JSON object of the format's settings (Jira project, issue type, labels,
-- priority; ServiceNow assignment group, category, caller, urgency,
-- impact). A receiver answering 410 is disabled with disabled_reason.
CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    url TEXT NOT NULL,
    format TEXT NOT NULL,
    secret TEXT,
    auth TEXT,
    events TEXT NOT NULL DEFAULT '*',
    config TEXT NOT NULL DEFAULT '{}',
    enabled INTEGER NOT NULL DEFAULT 1,
    disabled_reason TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- One message to one webhook. msg_id is the idempotency key the receiver
-- sees (webhook-id); the body is built once at enqueue time and signed
-- as stored, so a retry sends the same bytes. state: pending (due at
-- next_at; a sender that claims it moves next_at past its lease),
-- delivered, failed (kept for the log when the webhook is gone or
-- disabled) or dead (the retry schedule ran out).
CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY,
    webhook_id BIGINT NOT NULL,
    msg_id TEXT NOT NULL UNIQUE,
    event TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at BIGINT NOT NULL,
    last_status INTEGER,
    last_error TEXT,
    response TEXT,
    ticket_id BIGINT,
    created_at BIGINT NOT NULL,
    delivered_at BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_at);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);

-- Tickets: at most one open ticket per dedupe_key (a rule and an asset,
-- or "manual:<id>"); external_* are filled from the ticket system's reply.
CREATE TABLE tickets (
    id INTEGER PRIMARY KEY,
    asset_tag TEXT,
    gpu_uuid TEXT,
    rule_id BIGINT,
    dedupe_key TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    external_system TEXT,
    external_key TEXT,
    external_url TEXT,
    opened_by TEXT NOT NULL,
    opened_at BIGINT NOT NULL,
    closed_at BIGINT
);
CREATE UNIQUE INDEX tickets_open_key ON tickets (dedupe_key) WHERE state = 'open';
CREATE INDEX tickets_asset ON tickets (asset_tag);
