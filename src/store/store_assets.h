/* The storage interface, continued: hardware assets, scans and room
 * audits, health and lifecycle rules, and push-back to asset managers.
 * Part of store.h (which includes it); include store.h. */
#ifndef GI_STORE_ASSETS_H
#define GI_STORE_ASSETS_H

#include "store/store.h"

/* ---- push-back to asset managers and its conflicts (asset_sync.c) ---- */
/* Claims up to `limit` due pending pushes as store_delivery_claim does;
 * *items [{id, asset_id, source_id, attempts, reason, kind ("netbox" |
 * "snipeit"), config (the source's, token included), remote_id, asset
 * (the asset's document now), base ({field: {value, held}}: the remote
 * values last synced)}]. A push whose link or source is gone is failed
 * instead. */
int store_sync_claim(struct store *st, int64_t now, int64_t lease_s, int64_t limit, json_t **items);
/* What one attempt of a claimed push got. error NULL: it went through
 * (delivered, or conflict when conflicts is not empty). permanent: the
 * remote refused it for good (failed). Otherwise it is retried on the
 * webhooks' schedule, after retry_after_s instead when > 0 (a 429), or
 * backoff_s when > 0 (tests); dead past the schedule's end. written and
 * seen ({field: remote value}) become the last-synced values; conflicts
 * [{field, ours, theirs, base}] are kept (one open per asset, source and
 * field). A push that wrote or held back a field appends a "sync" event
 * {system, direction: "push", fields, conflicts}. */
struct store_sync_outcome {
    int64_t id, now;
    long status;
    const char *error, *response, *system;
    bool permanent;
    int64_t retry_after_s, backoff_s;
    const json_t *written, *seen, *conflicts;
};
int store_sync_done(struct store *st, const struct store_sync_outcome *o, char *state);
/* Whether the asset of push push_id is linked to a source other than the
 * push's, as it stands now (read just before a lookup, so that a link
 * another push of the same batch made counts). */
int store_sync_linked_elsewhere(struct store *st, int64_t push_id, bool *elsewhere);
/* Links the asset of push push_id to the remote object remote_id that a
 * lookup by its serial found (the only one), recording theirs ({field:
 * value}, the object's pushed fields) as last synced, as a pull would,
 * and a `sync` event {system, direction: "link", by: "serial",
 * remote_id}. The push then goes on as a linked asset's. */
int store_sync_link_found(struct store *st, int64_t push_id, const char *system,
                          const char *remote_id, const json_t *theirs);
/* Sync conflicts, newest first, of one asset (tag; NULL: all), open ones
 * only when open_only. GI_NOT_FOUND for an unknown tag. */
int store_sync_conflicts(struct store *st, const char *tag, bool open_only,
                         const struct store_scope *sc, const struct store_page *pg, json_t **items,
                         int64_t *total);
/* Resolves an open conflict: keep "ours" (the remote's value counts as
 * synced and gpuinv's is pushed again now) or "theirs" (the remote keeps
 * its value; gpuinv's is not pushed for that field until it changes).
 * GI_CONFLICT when already resolved. *out the conflict. */
int store_sync_conflict_resolve(struct store *st, const char *actor, int64_t id, const char *keep,
                                json_t **out);
/* The push log, newest first, of one asset (tag; NULL: all). */
/* Both narrowed to sc (NULL: all) by the asset's data center. */
int store_sync_pushes(struct store *st, const char *tag, const struct store_scope *sc,
                      const struct store_page *pg, json_t **items, int64_t *total);

struct store_ticket_filter {
    const char *state;        /* open|closed, NULL: any */
    const char *asset_tag;    /* NULL: any */
    int64_t datacenter_id;    /* 0: any; a ticket's is its asset's, else its GPU's */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
int store_ticket_list(struct store *st, const struct store_ticket_filter *f,
                      const struct store_page *pg, json_t **items, int64_t *total);
int store_ticket_get(struct store *st, int64_t id, json_t **out);
/* A ticket opened by a person: dedupe key "manual:<id>", ticket.opened
 * deliveries enqueued. asset_tag or gpu_uuid may be NULL (not both). */
int store_ticket_create(struct store *st, const char *actor, const char *asset_tag,
                        const char *gpu_uuid, const char *title, const char *body, json_t **out);
/* GI_CONFLICT when already closed. Enqueues ticket.closed deliveries. */
int store_ticket_close(struct store *st, const char *actor, int64_t id, json_t **out);

/* ---- hardware assets (assets.c, asset_fields.c, asset_ingest.c,
 * asset_stages.c) and their audit trail (asset_events.c) ----
 * An asset document: every column of the assets table by name, plus
 * purchase_cost / salvage {amount, currency}, book_value (straight line
 * over depreciation_years from purchase_date down to the salvage value,
 * computed when read), location {datacenter, room, rack, u, storage},
 * parent (a tag), warranty {end, days_left, status: in_warranty |
 * expiring (30 days or less) | expired | unknown}, custom; the one-asset
 * read adds children (tags) and energy_wh. Records written take the same
 * names (see asset_fields.c). */
bool store_asset_kind_valid(const char *s);  /* server gpu psu ssd nic switch other */
bool store_asset_tag_valid(const char *s);   /* 1..64 of [A-Za-z0-9._:-] */
bool store_asset_stage_valid(const char *s); /* ordered ... decommissioned */
bool store_asset_date_valid(const char *s);  /* YYYY-MM-DD, a day that exists */
/* The stages an asset in stage `from` may move to (NULL-terminated;
 * empty for decommissioned or an unknown stage). */
const char *const *store_asset_stage_next(const char *from);

/* What was wrong with a record: its index in a batch, the field and why. */
struct store_asset_err {
    int64_t index;
    char field[64];
    char message[192];
};
struct store_asset_filter {
    const char *kind, *stage, *model, *q;
    const char *warranty_before; /* YYYY-MM-DD: warranty ending before it */
    const char *warranty_after;  /* YYYY-MM-DD: warranty ending on or after it */
    /* YYYY-MM-DD: warranty or lease ending in [ends_after, ends_before)
     * (either may be NULL: open) */
    const char *ends_after, *ends_before;
    const char *parent;       /* the parent's tag */
    int64_t datacenter_id;    /* 0: any */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
/* Creates an asset from an API record (tag generated "GI-000123" when
 * absent; stage "active" unless given). GI_INVALID / GI_CONFLICT (a tag or
 * EPC taken) with *err naming the field. */
int store_asset_create(struct store *st, const char *actor, const json_t *in, json_t **out,
                       struct store_asset_err *err);
/* Changes the fields `patch` gives (not the stage). */
int store_asset_update(struct store *st, const char *actor, const char *tag, const json_t *patch,
                       json_t **out, struct store_asset_err *err);
/* One asset with children and energy_wh summed over the usage rollups'
 * hours in [from, to). */
int store_asset_get(struct store *st, const char *tag, int64_t from, int64_t to, json_t **out);
int store_asset_id(struct store *st, const char *tag, int64_t *id);
/* Sort keys: tag (default), kind, stage, model, serial, vendor,
 * warranty_end, purchase_date, datacenter, created_at, updated_at,
 * stage_since, id. */
int store_asset_list(struct store *st, const struct store_asset_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total);
/* The same page as JSON text: *items holds the array's members joined by
 * commas (no brackets; caller frees), *rows how many; each member is, byte
 * for byte, what store_asset_list() gives encoded compactly. Built from
 * the stored documents (migration 041) without encoding any. */
int store_asset_list_text(struct store *st, const struct store_asset_filter *f,
                          const struct store_page *pg, char **items, size_t *len, size_t *rows,
                          int64_t *total);
/* Renders the stored document of every asset that has none (rows written
 * before migration 041, or by SQL from outside), in transactions of a few
 * hundred assets; *filled receives how many were rendered. With none
 * missing it is one indexed read (the scheduler calls it every tick). */
int store_asset_docs_fill(struct store *st, int64_t *filled);
/* How many assets the filter matches in each stage (its stage member
 * ignored): *counts {stage: n} with every stage, 0 where none. */
int store_asset_stage_counts(struct store *st, const struct store_asset_filter *f, json_t **counts);
/* A lifecycle move by a person (override: an admin's, the caller
 * checks). GI_CONFLICT when not allowed: *from (capacity fromlen)
 * receives the current stage, so the caller can name the allowed ones. */
int store_asset_set_stage(struct store *st, const char *actor, const char *tag, const char *to,
                          const char *reason, bool override, json_t **out, char *from,
                          size_t fromlen, char *err, size_t errlen);
/* A CSV import's records (the API's field names), upserted by tag as a
 * person ('csv' provenance), all or nothing: the first bad record fails
 * it with *err (index, field, message). A status of an existing asset
 * moves it as POST .../stage would. *report {created, updated, unchanged,
 * dry_run}. */
int store_asset_import(struct store *st, const char *actor, const json_t *records, bool dry_run,
                       json_t **report, struct store_asset_err *err);
/* Upserts records from a discovery-like source (`source`: "glpi:<id>",
 * "netbox:<id>", ...). A record has the asset fields (tag optional,
 * serial, kind, model, vendor, parent_serial / parent_tag, location {...},
 * dates, custom, source_key). Matching: by tag, else (kind, serial) with a
 * usable serial, else (source, source_key). A source never changes a
 * field another source or a person set last, nor the stage; a bad field
 * is dropped and reported, never the record or the batch. *report:
 * {"created","updated","unchanged","errors":[{"index","field","error"}],
 * "dry_run"}. */
int store_asset_ingest(struct store *st, const char *source, json_t *records, bool dry_run,
                       json_t **report);

/* The assets:reconcile job: assets linked to a discovered GPU or host take
 * its last-seen time, and drift becomes events "drift" {what, ...}: a
 * discovered GPU serial no asset has (what "unknown_serial", on no asset:
 * asset_id 0), an asset discovery has not seen for the configured days
 * ("not_seen"), a GPU in another host than its parent server asset
 * ("moved"); each recorded once until it changes. *drifts counts the
 * events recorded. */
int store_asset_reconcile(struct store *st, int64_t now, int64_t *drifts);
/* Days after which an asset discovery stopped seeing is drift (30); set
 * before the server starts. */
void store_asset_configure(int asset_missing_days);

/* One asset's events, newest first; every asset's in [from, to) (unix
 * seconds), oldest first; pg->sort "seq" (the only key) orders them by
 * seq ascending, or descending with pg->desc. Events: {seq, asset_id, tag, at, kind, actor,
 * detail, prev_hash, hash}. */
int store_asset_events(struct store *st, int64_t asset_id, const struct store_page *pg,
                       json_t **items, int64_t *total);
int store_asset_events_range(struct store *st, int64_t from, int64_t to,
                             const struct store_page *pg, json_t **items, int64_t *total);
/* Events of every asset in [f->from, f->to) narrowed by the event's kind,
 * the asset's kind and its data center (NULL / 0: any), ordered as
 * store_asset_events_range orders them (`-seq`: the newest first). */
struct store_event_filter {
    int64_t from, to;
    const char *kind;         /* the event's kind (stage, scan, ...) */
    const char *asset_kind;   /* the asset's kind (server, gpu, ...) */
    int64_t datacenter_id;    /* the asset's data center; -1: none matches */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
int store_asset_events_find(struct store *st, const struct store_event_filter *f,
                            const struct store_page *pg, json_t **items, int64_t *total);
/* Walks the whole chain: broken_seq 0 when intact, else the first event
 * that is missing, altered or out of order, with why. */
struct store_chain_report {
    int64_t events;     /* events read */
    int64_t head_seq;   /* the chain head's seq */
    int64_t broken_seq; /* 0: intact */
    char why[160];
};
int store_asset_chain_verify(struct store *st, struct store_chain_report *rep);

/* ---- scans and room audits (scans.c, audits.c) ---- */
/* A scan: the asset with this tag (ignoring case) or, when tag is NULL,
 * this EPC; every member borrowed. */
struct store_scan {
    const char *tag;
    const char *epc;
    const json_t *location; /* {datacenter, room, rack, u, storage}; NULL: where it is */
    const char *note;       /* may be NULL */
    const char *stage;      /* NULL: no stage change */
    const char *reason;     /* the stage change's reason (NULL: the note) */
};
/* Why a scan or an audit call failed: the field ("tag", "epc",
 * "location.room", "stage", ...) and a message; stage holds the asset's
 * stage when a stage change was refused. */
struct store_scan_err {
    char field[64];
    char message[192];
    char stage[32];
};
/* Records a scan in one transaction: the scanned location becomes the
 * asset's (every location field, those not given cleared; a "located"
 * event {from, to} when it changed), the stage change (if any) goes
 * through the lifecycle, and a "scan" event {location, note, via:
 * tag|epc} is appended. *out (caller owns): {asset: the asset document,
 * via, located: bool}. GI_NOT_FOUND (err->field "tag" or "epc"),
 * GI_INVALID (a bad location field or stage), GI_CONFLICT (the stage
 * change is not allowed from err->stage); nothing is written then. */
int store_scan(struct store *st, const char *actor, const struct store_scan *sc, json_t **out,
               struct store_scan_err *err);

/* Opens an audit of a room or rack: location {datacenter (name), room,
 * rack}, room or rack given. The assets recorded there now (all but the
 * decommissioned) are its expected ones. *out: the audit document (see
 * store_room_audit_get). GI_INVALID naming the field in err. */
int store_room_audit_open(struct store *st, const char *actor, const json_t *location,
                          const char *note, json_t **out, struct store_scan_err *err);
/* Records that the asset with this tag (or EPC when tag is NULL) was
 * found by the audit, and a "scan" event {location, via, audit} on it
 * (its location is not changed: closing with relocation does that).
 * *out: the audit document with "scanned": {tag, expected: bool}.
 * GI_NOT_FOUND for an unknown audit (err->field "audit") or asset
 * ("tag"/"epc"), GI_CONFLICT when the audit is closed. */
int store_room_audit_scan(struct store *st, const char *actor, int64_t audit_id, const char *tag,
                          const char *epc, json_t **out, struct store_scan_err *err);
/* An audit: {id, state: open|closed, location, note, opened_by,
 * opened_at, closed_by, closed_at, counts {expected, found, missing,
 * unexpected}, expected, found, missing (expected, not found),
 * unexpected (found, recorded elsewhere when the audit opened)}, each
 * list of {tag, kind, model, serial, location (as recorded now),
 * found_at, found_by}. */
int store_room_audit_get(struct store *st, int64_t id, json_t **out);
/* Closes an open audit; with relocate, every unexpected asset found is
 * moved to the audit's location (data center, room, rack; a "located"
 * event each). *out: the audit document with "relocated": [tags].
 * GI_NOT_FOUND, GI_CONFLICT when it is closed already. */
int store_room_audit_close(struct store *st, const char *actor, int64_t id, bool relocate,
                           json_t **out);
/* Audits newest first, state "open"/"closed" or NULL for all; items
 * without their lists (counts only). */
int store_room_audit_list(struct store *st, const char *state, const struct store_scope *sc,
                          const struct store_page *pg, json_t **items, int64_t *total);
/* ---- health and lifecycle rules (health.c, lifecycle_rules.c) ---- */

/* What one run of the health:rollup job did: GPU-days rolled up, and
 * GPU-days still past the watermark when it stopped. */
struct store_health_run {
    int64_t days, left;
};
/* How long a usage_daily row must be old before the health rollup reads
 * it (default 120 s: a usage transaction still open with an earlier
 * updated_at commits within it). */
void store_health_configure(int64_t settle_s);
/* The health:rollup job: the GPU-days usage_daily rewrote since the last
 * run (past the watermark, settled for two minutes) recomputed from the
 * raw samples into gpu_health_daily, in chunks of 1,024 each read outside
 * (one pass over a day's samples for the chunk's GPUs of that day) and
 * written inside one short transaction; at most max_chunks chunks (0:
 * until none is left). */
int store_health_rollup(struct store *st, int64_t now, int max_chunks,
                        struct store_health_run *res);
/* One day of a GPU's health rollup, written as the job would write it
 * (for tests, benches and imports of history); ecc -1 and NAN: no
 * reading; xid_code (0: none) is the day's one code. */
struct store_health_day {
    int64_t gpu_id, day, samples, xid_events, xid_code;
    int64_t ecc_corrected_inc, ecc_uncorrected_inc;
    double temp_p95_c, temp_max_c, util_avg;
};
int store_health_day_put(struct store *st, const struct store_health_day *d, int64_t now);
/* The health of an asset at `now`: {"score": 0..100, "reasons": [{reason,
 * detail, penalty}], "as_of", "days" (health days read), "absent"
 * (figures not collected)}; a server's is the worst of its GPUs' with its
 * own (age). GI_NOT_FOUND for an unknown asset. */
int store_asset_health(struct store *st, int64_t asset_id, int64_t now, json_t **out);

/* Spare reservations (reservations.c). A reservation document: {id,
 * state (reserved, released, consumed, cancelled, not_needed, expired),
 * spare, for_asset (tags), model, datacenter_id, datacenter (the
 * spare's), spare_stage, for_stage, rule_id, reserved_at, expires_at
 * (null: none), ended_at, ended_by, end_reason}. */
struct store_resv_filter {
    int64_t datacenter_id;    /* 0: every data center */
    const char *model;        /* NULL: every model */
    const char *state;        /* NULL: every state */
    const char *asset;        /* NULL: every asset; else a tag, as the spare or the replaced one */
    struct store_scope scope; /* n 0: every data center; else the spare's must be one of them */
};
/* A page of reservations, newest first, and their total; GI_NOT_FOUND
 * when f->asset names no asset. */
int store_reservations_list(struct store *st, const struct store_resv_filter *f,
                            const struct store_page *pg, json_t **items, int64_t *total);
/* One reservation; GI_NOT_FOUND when there is none. Caller owns *out. */
int store_reservation_get(struct store *st, int64_t id, json_t **out);
/* Releases the open reservation id under actor (an event `reservation` on
 * both assets, audited); GI_CONFLICT when it is released or consumed
 * already, GI_NOT_FOUND when there is none. *out: the reservation after. */
int store_reservation_release(struct store *st, const char *actor, int64_t id, const char *reason,
                              json_t **out);
/* Sets the expiry of the open reservation id to expires_at (0: none)
 * under actor (an event `reservation` on both assets, audited as update);
 * GI_CONFLICT when it has ended, GI_NOT_FOUND when there is none. The
 * caller checks that the time is to come. *out: the reservation after. */
int store_reservation_set_expiry(struct store *st, const char *actor, int64_t id,
                                 int64_t expires_at, json_t **out);

/* Lifecycle rules. A rule document: {id, name, enabled, condition,
 * actions, version, created_by, created_at, updated_by, updated_at,
 * last_run_at, last_matched}. */
struct store_lrule {
    const char *name;            /* NULL: unchanged (update) */
    int enabled;                 /* -1: unchanged (update) */
    json_t *condition, *actions; /* NULL: unchanged (update); borrowed */
};
/* Checks a condition and its actions against the rule language of
 * docs/LIFECYCLE.md: false with field (e.g. "condition.all[1].window_days")
 * and err filled on the first fault. */
bool store_lrule_check(const json_t *condition, const json_t *actions, char *field, size_t flen,
                       char *err, size_t elen);
int store_lrule_list(struct store *st, json_t **items);
int store_lrule_get(struct store *st, int64_t id, json_t **out);
/* GI_CONFLICT: the name is taken. Audited under actor. */
int store_lrule_create(struct store *st, const char *actor, const struct store_lrule *r,
                       json_t **out);
int store_lrule_update(struct store *st, const char *actor, int64_t id, const struct store_lrule *r,
                       json_t **out);
int store_lrule_delete(struct store *st, const char *actor, int64_t id);
/* Evaluates one rule (a stored one by id, or the unsaved document `rule`
 * {name?, condition, actions} when id is 0) over every asset at `now`,
 * in chunks read outside any transaction; unless dry_run, each match's
 * actions run in one short writing transaction of their own under actor,
 * after the expired spare reservations are ended. *report: {rule,
 * dry_run, evaluated, matched, matches: [{asset, kind, stage, why: [...],
 * actions: [{type, result, ...}]}], truncated, reservations_expired}. */
int store_lrule_evaluate(struct store *st, int64_t id, const json_t *rule, bool dry_run,
                         const char *actor, int64_t now, json_t **report);
/* The rules of ids (n of them; ids NULL: every enabled rule) evaluated in
 * ONE pass over the assets, in the order given (a stage one rule moves an
 * asset to is what the rules after it see, as if each ran alone in turn).
 * GI_NOT_FOUND when an id names no rule. *report: {dry_run, evaluated,
 * matched (all rules), reservations_expired, rules: [the report of
 * store_lrule_evaluate without reservations_expired, plus "error" (a
 * status name) for a rule whose actions failed and stopped]}. */
int store_lrules_evaluate(struct store *st, const int64_t *ids, size_t n, bool dry_run,
                          const char *actor, int64_t now, json_t **report);
/* The lifecycle:rules job: every enabled rule evaluated in one pass (not
 * a dry run); *fired counts the matches, *expired the spare reservations
 * it ended. */
int store_lrules_run(struct store *st, const char *actor, int64_t now, int64_t *fired,
                     int64_t *expired);
/* Inserts the example rules of docs/LIFECYCLE.md, disabled, once per
 * database (a mark in cost_settings keeps them from coming back after
 * someone deleted them); *seeded says whether this call did. */
int store_lrules_seed(struct store *st, bool *seeded);

#endif
