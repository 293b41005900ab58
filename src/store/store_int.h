/* Private to src/store/: what several noun files share beyond db.h, that
 * is the SQL fragments more than one of them builds statements from and
 * the few helpers one noun offers another inside a transaction. Each noun
 * file keeps its own statements in an X-macro table STATEMENTS(X) of
 * X(NAME, sql) entries, expanded with STORE_AS_ENUM and STORE_AS_SQL.
 * All SQL is static text written in the subset PostgreSQL also accepts;
 * values are always bound. */
#ifndef GI_STORE_INT_H
#define GI_STORE_INT_H

#include "store/db.h"
#include "store/store.h"

#include <stdint.h>

#define STORE_AS_ENUM(id, sql) ST_##id,
#define STORE_AS_SQL(id, sql) sql,

#define PAGE "LIMIT :limit OFFSET :offset"

/* ---- The data-center scope of a list (struct store_scope, thing_dc.c):
 * the one filter every narrowed list applies. Its data centers are bound
 * as :sc_n (how many, 0 or unbound: every data center) and :sc0..:sc15
 * (unused ones -1, which no data center has), so that one static
 * statement serves every scope on both stores. ---- */
#define STORE_SCOPE_LIST                                                                           \
    ":sc0, :sc1, :sc2, :sc3, :sc4, :sc5, :sc6, :sc7, :sc8, :sc9, :sc10, :sc11, :sc12, :sc13, "     \
    ":sc14, :sc15"
/* True for a row whose data center, `expr` (an id, or NULL for none), is
 * in the scope. */
#define STORE_SCOPE_IN(expr) "(COALESCE(:sc_n, 0) = 0 OR (" expr ") IN (" STORE_SCOPE_LIST "))"
/* True for a row whose things, the rows of `from_where` ("FROM ... WHERE
 * ..." correlated with the row), exist and are all in the scope, each
 * where `expr` says (a row spanning data centers is shown only to a
 * scope that holds all of them). */
#define STORE_SCOPE_ALL(from_where, expr)                                                          \
    "(COALESCE(:sc_n, 0) = 0 OR (EXISTS (SELECT 1 " from_where                                     \
    ") AND NOT EXISTS (SELECT 1 " from_where " AND COALESCE(" expr                                 \
    ", 0) NOT IN (" STORE_SCOPE_LIST "))))"
/* Binds sc (NULL: every data center) to a statement of STORE_SCOPE_*. */
void db_bind_scope(struct db_stmt *s, const struct store_scope *sc);

/* A ticket's data center (the tickets row named t): its asset's, else its
 * GPU's host's; 0 when neither has one. */
#define STORE_TICKET_DC(t)                                                                         \
    "COALESCE((SELECT a.datacenter_id FROM assets a WHERE a.tag = " t ".asset_tag), (SELECT "      \
    "h.datacenter_id FROM gpus g JOIN hosts h ON h.id = g.host_id WHERE g.uuid = " t               \
    ".gpu_uuid), 0)"
/* A source's data center (the sources row named s): the one data center
 * of the hosts of every GPU it reported; 0 when they are in several or in
 * none, or it reported none. */
#define STORE_SOURCE_DC(s)                                                                         \
    "(SELECT CASE WHEN COUNT(DISTINCT COALESCE(sh.datacenter_id, 0)) = 1 THEN "                    \
    "MAX(COALESCE(sh.datacenter_id, 0)) ELSE 0 END FROM gpus sg LEFT JOIN hosts sh ON sh.id = "    \
    "sg.host_id WHERE sg.source_id = " s ".id)"

/* Drops the verified tokens kept for st (credentials.c), as it closes. */
void store_token_forget(const struct store *st);

/* Statements two noun files run, defined once so both share one cached
 * statement: a data center's id by name (datacenters.c) and the source
 * list (sources.c). */
extern const char store_sql_dc_by_name[];
/* drift.c: a data center's discovered GPUs (store_dc_overview()) as two
 * statements, prepared and bound into s, to read in a batch with others;
 * then their answer. */
void dc_discovered_prep(struct conn *c, int64_t id, int64_t stale_before, struct db_stmt *s[2]);
int dc_discovered_read(struct conn *c, struct db_stmt *const s[2], json_t **out);
extern const char store_sql_source_list[];

/* Finds or creates the source `name` of `kind` on c (inside the caller's
 * transaction, if any): GI_CONFLICT when the name belongs to a source of
 * another kind. */
int source_ensure(struct conn *c, const char *name, const char *kind, const char *team,
                  const char *env, const char *cluster, int64_t *id);

/* ---- Ownership, usage and cost: what the three nouns offer each other
 * inside a transaction. ---- */

/* The owner of a GPU at one time, each field with what decided it: by is
 * "assignment:gpu:<id>", "assignment:host:<id>", "assignment:resource:<id>",
 * "rule:<id>", "source:<id>" or "" when nothing decided the field (then
 * the field is ""). */
#define OWNER_LEN 128
#define OWNER_BY_LEN 64
struct owner_fields {
    char team[OWNER_LEN], env[OWNER_LEN], pool[OWNER_LEN], cluster[OWNER_LEN], cloud[OWNER_LEN];
    char team_by[OWNER_BY_LEN], env_by[OWNER_BY_LEN], pool_by[OWNER_BY_LEN],
        cluster_by[OWNER_BY_LEN], cloud_by[OWNER_BY_LEN];
};
/* ownership.c: resolves GPU gpu_id's owner at `at` (unix seconds) by
 * precedence: explicit assignment (GPU > its physical GPU's, for a MIG
 * instance > host > inventory resource) >
 * ordered mapping rules > the pushing source's defaults. GI_NOT_FOUND for
 * an unknown GPU. */
int owner_resolve(struct conn *c, int64_t gpu_id, int64_t at, struct owner_fields *out);
/* ownership.c: the team a consumer maps to at `at` by the ownership rules
 * (kind "k8s" with key "<namespace>", "slurm" with key "<account>",
 * "user" with key "<user name>"); team "" when no rule maps it. */
int owner_consumer_team(struct conn *c, const char *kind, const char *key, int64_t at, char *team,
                        size_t len);

/* ownership.c: recomputes the current owner materialized on GPU gpu_id's
 * row (every GPU when 0); ingest calls it when it creates a GPU or moves
 * one to another host. */
int owner_refresh(struct conn *c, int64_t gpu_id);
/* ownership.c, inside the writer's transaction: what the rules match on
 * changed for some GPUs: host host_id's link to an inventory resource or
 * its data center; resource resource_id's tags or data center (the GPUs of
 * its linked hosts); the Kubernetes node of the hosts named `hostname`
 * (its labels, cloud, or the node itself). Recomputes those GPUs' current
 * owners and re-attributes their usage from `from` on. */
int owner_host_changed(struct conn *c, int64_t host_id, int64_t from);
int owner_resource_changed(struct conn *c, int64_t resource_id, int64_t from);
int owner_hostname_changed(struct conn *c, const char *hostname, int64_t from);
/* ownership.c: turns the owner columns of a GPU document (owner_json,
 * owner_source_id, and the source's team/env/cluster) into its "owner"
 * object {"team":{"value","by"},...} and drops the helper columns. */
void owner_doc(json_t *gpu);

/* usage.c: the owner of GPU gpu_id (0: every GPU) changed from `from` on;
 * the usage rollups from then on are re-attributed (in place, so hours
 * older than the raw samples keep their figures). */
int usage_reattribute(struct conn *c, int64_t gpu_id, int64_t from);
/* usage.c: the price catalog changed from `from` on; the rates stored
 * with the rollups from then on are looked up again. */
int usage_reprice(struct conn *c, int64_t from);
/* usage.c (for ingest, inside its transaction): GPU gpu_id got samples
 * from from_ts to to_ts; marks the hours whose rollup they change (widened
 * by the coverage gap, never past the current hour) for the usage:rollup
 * job. */
int usage_mark(struct conn *c, int64_t gpu_id, int64_t from_ts, int64_t to_ts);
/* A GPU's new samples from from_ts to to_ts, for usage_mark_many(). */
struct usage_span {
    int64_t gpu_id, from_ts, to_ts;
};
/* usage.c: usage_mark() of many GPUs at once, in one statement, all with
 * one new stamp; a GPU may appear more than once. */
int usage_mark_many(struct conn *c, const struct usage_span *spans, size_t n);

/* usage_merge.c: GPU record `from`'s usage history becomes `to`'s (a
 * cloud placeholder merged into the real GPU), inside the caller's
 * writing transaction: hourly and consumer rows of hours `to` has no row
 * of move, the rest of `from`'s are dropped (an hour never counts twice);
 * the days are summed again, intervals and rollup marks move, and the
 * hours are marked for their group sums. */
int usage_merge_gpu(struct conn *c, int64_t from, int64_t to, int64_t now);
/* insights_sums.c: the sums the insights keep for UTC day `day`
 * (usage_team_days) written again from its daily rollups, inside the
 * caller's writing transaction; called wherever the day's
 * usage_groups_daily rows are (usage_write_groups). */
int insight_sums_day(struct conn *c, int64_t day, int64_t now);

/* cloud_merge.c: inside the cloud sync's transaction, pairs the
 * superseded, not yet merged placeholders of instance row instance_row
 * with the real GPUs an agent reported on host host_id and merges each
 * pair (usage history, explicit ownership, billing shares, asset link,
 * events merged_into / merged_from, cloud_gpus.superseded_by); see the
 * file's head for the pairing rule. */
int cloud_merge_instance(struct conn *c, int64_t instance_row, int64_t host_id, int64_t now);

/* samples.c: a batch's samples into gpu_samples under source sid with
 * PostgreSQL's COPY, gid[i] the row id of sample i's GPU; *stored grows
 * by the rows written. GI_CONFLICT, with nothing written, when a row is
 * already stored (a re-sent interval): the caller then inserts skipping
 * those. PostgreSQL only, inside the caller's transaction. */
struct gi_batch;
int samples_copy(struct conn *c, int64_t sid, const struct gi_batch *b, const int64_t *gid,
                 int64_t *stored);

/* prices.c: the catalog's hourly rate for one GPU of `model` at `at`, the
 * most specific entry in force winning (pool, cloud and env each narrow
 * an entry; NULL or "" matches only entries that leave it open), in
 * micro-units of `currency` (ISO 4217, 3 letters). GI_NOT_FOUND when no
 * entry covers the model; *price_id receives the entry that decided. */
int price_rate(struct conn *c, const char *model, const char *env, const char *cloud,
               const char *pool, int64_t at, int64_t *micros_per_hour, char currency[4],
               int64_t *price_id);

/* prices.c: the catalog entries of one kind ("hourly" or "purchase"),
 * loaded once for many lookups (a report prices many hours); caller frees
 * with price_catalog_free (accepts NULL). */
struct price_catalog;
int price_catalog_load(struct conn *c, const char *kind, struct price_catalog **out);
/* The entry in force for one GPU at `at`, chosen as price_rate() chooses;
 * false when no entry covers the model. */
bool price_catalog_pick(const struct price_catalog *cat, const char *model, const char *env,
                        const char *cloud, const char *pool, int64_t at, int64_t *micros,
                        char currency[4], int64_t *price_id);
void price_catalog_free(struct price_catalog *cat);

/* ---- Webhooks and tickets (webhooks.c, tickets.c), for every noun that
 * raises an event inside its writing transaction. ---- */

/* webhooks.c: one pending delivery of `event` per enabled webhook whose
 * events list names it (or is "*"), its body built for the webhook's
 * format from `context` (borrowed; see core/hookbody.h for its shape);
 * ticket_id (0: none) links the delivery to the ticket it creates. */
int webhook_enqueue(struct conn *c, const char *event, json_t *context, int64_t ticket_id,
                    int64_t at);
/* tickets.c: opens the ticket of dedupe_key unless one is open (then
 * *existing is true and *ticket_id names it, nothing written); else
 * inserts it (title and body from the context's "title"/"body", else
 * made from its reason and asset; asset tag, GPU uuid and rule id from
 * its "asset", "gpu" and "rule"), audits it under actor and enqueues
 * ticket.opened deliveries whose context carries the ticket. */
int ticket_open(struct conn *c, const char *dedupe_key, json_t *context, const char *actor,
                int64_t at, int64_t *ticket_id, bool *existing);

/* ---- Assets: what every part that changes an asset uses inside its own
 * writing transaction. ---- */

/* asset_events.c: appends one event to the assets' audit trail (the
 * next seq, hash-chained to the previous event, the chain's head moved),
 * inside the caller's writing transaction. kind: created, updated,
 * stage, scan, located, drift, ticket, rule, sync, ...; detail (borrowed,
 * may be NULL for {}) is stored as compact JSON with sorted keys; at in
 * unix seconds. */
int asset_event_append(struct conn *c, int64_t asset_id, const char *kind, const char *actor,
                       json_t *detail, int64_t at);

/* asset_hooks.c: one webhook event about asset asset_id (asset.scanned,
 * asset.stage_changed, asset.location_changed) to every enabled webhook
 * that wants it, inside the caller's writing transaction: the context is
 * {event, title, asset: {tag, kind, serial, model, stage, owner_team,
 * location, warranty, epc}, gpu: {uuid}, actor, change (borrowed: what
 * changed, as the asset event beside it records), reason}. */
int asset_hook_emit(struct conn *c, int64_t asset_id, const char *event, const char *actor,
                    const json_t *change, const char *reason, int64_t at);

/* assets.c: the asset's id by tag; GI_NOT_FOUND when there is none. */
int asset_id_by_tag(struct conn *c, const char *tag, int64_t *id);
/* assets.c: one asset's document as GET /api/v1/assets/{tag} shows it
 * (without children and energy_wh), read on the caller's connection (so
 * inside its transaction); GI_NOT_FOUND for an unknown id. Caller owns
 * *out. */
int asset_doc_get(struct conn *c, int64_t asset_id, json_t **out);
/* asset_docs.c: clears the data center of every asset in dc_id (before
 * the data center is deleted, which would clear it without a write the
 * stored documents see), renders their documents again and ends the
 * spare reservations this takes out of their data center (under actor,
 * at `at`). */
int asset_docs_dc_clear(struct conn *c, int64_t dc_id, const char *actor, int64_t at);

/* asset_stages.c: moves asset asset_id to stage `to` if the lifecycle
 * allows it from its current stage (or, with override, to any other
 * stage; an override needs a reason), and records the event "stage"
 * {from, to, reason, override}. GI_INVALID for an unknown stage or an
 * override without a reason, GI_NOT_FOUND for an unknown asset,
 * GI_CONFLICT when the move is not allowed (store_asset_stage_next()
 * lists what is); err (may be NULL) receives why. Inside the caller's
 * writing transaction. */
int asset_stage_change(struct conn *c, int64_t asset_id, const char *to, const char *reason,
                       const char *actor, bool override, int64_t at, char *err, size_t errlen);

/* ---- Push-back to asset managers (asset_sync.c), for the nouns that
 * scan, move or re-stage an asset and for the asset managers' pulls. ---- */

/* Queues an outbound update of asset asset_id to every NetBox or
 * Snipe-IT source it is linked to whose config sets push: true, and a
 * lookup by serial at every other push source serving its data center
 * (one pending, unclaimed push per asset and source at a time; what it
 * writes is read when it is sent). reason names the change ("scan",
 * "located", "stage"). Inside the caller's writing transaction. */
int asset_sync_queue(struct conn *c, int64_t asset_id, const char *reason, int64_t at);
/* Records what a pull of `source` ("netbox:<id>", "snipeit:<id>"; other
 * sources are ignored) said of asset asset_id in record rec: the link to
 * the remote device or hardware (its source_key) and the remote values of
 * the pushed fields it carries as last synced. Inside the caller's
 * writing transaction. */
int asset_sync_pulled(struct conn *c, const char *source, int64_t asset_id, const json_t *rec,
                      int64_t at);

/* What a claim does with a row it took (appends to items). */
typedef int (*delivery_take_fn)(struct conn *c, int64_t id, int64_t now, json_t *items);
/* Claims the outbound work that is due (webhook deliveries, pushes to
 * asset managers), in one transaction: due_sql (binds :now, :limit;
 * columns id, due_s) lists what is due, take_sql (binds :id, :old,
 * :lease) moves each row's next_at to now + lease_s unless another
 * sender moved it first, and take() adds each row taken to *items. */
int delivery_claim_due(struct store *st, const char *due_sql, const char *take_sql, int64_t now,
                       int64_t lease_s, int64_t limit, delivery_take_fn take, json_t **items);

#endif
