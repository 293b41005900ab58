/* The one storage interface. Nothing outside src/store knows SQL.
 *
 * Every function returns a gi_status: GI_OK, GI_NOT_FOUND (no such row),
 * GI_CONFLICT (uniqueness or state precondition), GI_UNAVAILABLE (database
 * busy past the timeout: retry), GI_INTERNAL. Records come back as jansson
 * objects shaped as the API shows them; the caller owns (and decrefs) every
 * json_t returned through an out-parameter. Every write is one transaction
 * and records its audit row inside that transaction, under `actor`. */
#ifndef GI_STORE_H
#define GI_STORE_H

#include "core/model.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct store;

/* Opens the database `path` names: a SQLite file (created if needed), or a
 * PostgreSQL database (postgres:// or postgresql:// URL, or a libpq
 * key=value string). Applies pending migrations and prepares a pool of
 * `conns` connections. Caller frees with store_close(). */
int store_open(const char *path, int conns, struct store **out);
/* `target` (a path or a database URL) fit to show in a log: any password
 * in it replaced by ***. */
void store_target_display(const char *target, char *buf, size_t len);
/* Closes every connection; accepts NULL. */
void store_close(struct store *st);
/* The connection pool: its size, how many borrows found every connection
 * lent and how long, in all, they waited for one. */
struct store_pool_stats {
    int connections;
    int64_t waits;
    double wait_s;
};
void store_pool_stats(struct store *st, struct store_pool_stats *out);
/* Schema version after migrations. */
int store_schema_version(struct store *st, int64_t *out);

/* Keeps raw GPU samples for keep_days: on PostgreSQL, creates the coming
 * days' partitions and drops whole partitions past retention; on SQLite,
 * deletes older rows in small transactions. The processes and pods seen
 * on GPUs (gpu_processes, gpu_pods) older than keep_days are deleted in
 * small transactions on both. *changed counts partitions created and
 * dropped (PostgreSQL) and rows deleted. The caller passes keep_days from
 * store_usage_keep_days, so that nothing an hour still waiting for its
 * rollup reads is pruned. */
int store_samples_maintain(struct store *st, int64_t now, int keep_days, int64_t *changed);

/* A page of a list: sort is a column name from the resource's allowed list
 * (validated by the caller), NULL for insertion order. */
struct store_page {
    int64_t limit;
    int64_t offset;
    const char *sort;
    bool desc;
};

/* The data centers a list is narrowed to: a confined token's (api/scope.c).
 * n 0, or no scope given (NULL), reaches every data center; with n > 0 a
 * thing in no data center is outside it. The store binds it into the
 * list's statements (STORE_SCOPE_IN, thing_dc.c), so that paging, totals
 * and order are those of the narrowed list. */
struct store_scope {
    int n;
    int64_t dcs[GI_TOKEN_DCS_MAX];
};

/* ---- credentials ---- */
int store_token_create(struct store *st, const char *actor, const char *name, enum gi_role role,
                       const char *hash, int64_t *id_out);
/* Creates the token unless one with this hash exists (start-up admin
 * token); GI_CONFLICT when the token with this hash has been revoked. */
int store_token_ensure(struct store *st, const char *name, enum gi_role role, const char *hash);
/* Resolves an unrevoked token by hash; GI_NOT_FOUND when unknown. */
int store_token_auth(struct store *st, const char *hash, struct gi_principal *out);
int store_token_list(struct store *st, json_t **items);
/* One token as the list shows it (revoked ones too); GI_NOT_FOUND when
 * there is no such token. */
int store_token_get(struct store *st, int64_t id, json_t **out);
int store_token_revoke(struct store *st, const char *actor, int64_t id);

/* Creates or replaces a dashboard user, ending all of its sessions in the
 * same transaction. */
int store_user_set(struct store *st, const char *name, enum gi_role role, const char *pwhash);
/* pwhash receives the stored password hash (capacity len). */
int store_user_get(struct store *st, const char *name, int64_t *id, enum gi_role *role,
                   char *pwhash, size_t len);
/* Records a session; expired sessions are pruned in the same write. */
int store_session_create(struct store *st, const char *hash, int64_t user_id, int64_t expires_at);
int store_session_auth(struct store *st, const char *hash, struct gi_principal *out);
int store_session_delete(struct store *st, const char *hash);

/* ---- audit ---- */
struct store_audit_filter {
    const char *entity;
    int64_t entity_id; /* 0: any */
    const char *actor;
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
int store_audit_list(struct store *st, const struct store_audit_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total);

/* ---- data centers ---- */
struct store_dc {
    const char *name;     /* NULL: unchanged (update) */
    const char *location; /* NULL: unchanged (update) */
    int64_t rows;         /* < 0: unchanged (update) */
};
int store_dc_create(struct store *st, const char *actor, const struct store_dc *in, json_t **out);
int store_dc_list(struct store *st, const char *q, const struct store_page *pg, json_t **items,
                  int64_t *total);
int store_dc_get(struct store *st, int64_t id, json_t **out);
int store_dc_update(struct store *st, const char *actor, int64_t id, const struct store_dc *in,
                    json_t **out);
/* Refuses with GI_CONFLICT while resources remain, unless force; *counts
 * (may be NULL) receives the per-kind counts either way. */
int store_dc_delete(struct store *st, const char *actor, int64_t id, bool force, json_t **counts);
/* The overview of one data center, and in *discovered its discovered GPUs:
 * {total, in_use, idle, stale, unknown, on_linked_hosts, servers_seen},
 * physical GPUs of hosts in it (a GPU not heard from since stale_before is
 * stale), read in one snapshot. */
int store_dc_overview(struct store *st, int64_t id, int64_t stale_before, json_t **out,
                      json_t **discovered);
int store_dc_id_by_name(struct store *st, const char *name, int64_t *id);

/* ---- resources ---- */
/* A validated resource as stored. attrs and metadata are borrowed objects. */
struct store_resource {
    int64_t datacenter_id;
    const char *kind;
    const char *name;
    const char *state;
    const char *tenant;
    const char *project;
    const char *gpu_model;
    int64_t gpu_count;
    const json_t *attrs;
    const json_t *metadata;
};
struct store_res_filter {
    int64_t datacenter_id; /* 0: any */
    const char *kind;
    const char *state;
    const char *tenant;
    const char *project;
    const char *q;            /* substring of name or attributes */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
int store_res_create(struct store *st, const char *actor, const struct store_resource *in,
                     json_t **out);
int store_res_list(struct store *st, const struct store_res_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total);
/* The same page as JSON text: *items holds the array's members joined
 * by commas (no brackets; caller frees), *rows how many. */
int store_res_list_text(struct store *st, const struct store_res_filter *f,
                        const struct store_page *pg, char **items, size_t *len, size_t *rows,
                        int64_t *total);
int store_res_get(struct store *st, int64_t id, json_t **out);
/* Replaces the record if its version still equals `version` (else
 * GI_CONFLICT: it changed since it was read). */
int store_res_update(struct store *st, const char *actor, int64_t id, int64_t version,
                     const struct store_resource *in, json_t **out);
/* Refuses with GI_CONFLICT while the resource is held (in_use or reserved)
 * by a tenant, unless force. *held (may be NULL) receives the record when
 * refused; caller frees. */
int store_res_delete(struct store *st, const char *actor, int64_t id, bool force, json_t **held);
/* available -> in_use for tenant/project; GI_CONFLICT if not available. */
int store_res_allocate(struct store *st, const char *actor, int64_t id, const char *tenant,
                       const char *project, json_t **out);
/* in_use/reserved -> available; GI_CONFLICT otherwise. */
int store_res_release(struct store *st, const char *actor, int64_t id, json_t **out);
int store_res_allocations(struct store *st, int64_t id, json_t **items);

/* Allocates `count` available resources matching the request, all or none.
 * On GI_CONFLICT *available holds how many matched. */
struct store_alloc_req {
    int64_t datacenter_id;
    const char *kind;
    int64_t count;
    int64_t min_gpus;
    const char *gpu_model; /* NULL: any */
    const char *tenant;
    const char *project;
};
int store_alloc_bulk(struct store *st, const char *actor, const struct store_alloc_req *req,
                     json_t **items, int64_t *available);

/* Inserts n resources in one transaction, all or none. Every row is tried:
 * row_status (n entries, caller's) receives each row's outcome (GI_OK,
 * GI_CONFLICT for a name taken in its data center, GI_NOT_FOUND for a
 * missing data center), and if any row failed the result is that status
 * and nothing is written. With dry_run the same inserts run and are then
 * rolled back, so a dry run meets every constraint the import would. */
int store_res_import(struct store *st, const char *actor, const struct store_resource *rows,
                     size_t n, bool dry_run, int *row_status);
/* Looks up the kind and data center of a resource (for cross-checks). */
int store_res_kind(struct store *st, int64_t id, char *kind, size_t len, int64_t *datacenter_id);

/* ---- GPU discovery ---- */
struct gi_batch;

/* Finds or creates the source `name` of `kind` (push sources are created
 * on first use); *id receives its id. GI_CONFLICT when the name belongs to
 * a source of another kind: nothing pushes or imports as a pull source. */
int store_source_ensure(struct store *st, const char *name, const char *kind, const char *team,
                        const char *env, const char *cluster, int64_t *id);
/* Binds a pusher token to a source (set at token creation). */
int store_token_set_source(struct store *st, int64_t token_id, int64_t source_id);
/* Confines a pusher token to host-name patterns (comma-separated globs,
 * NULL: any host) and to one cluster (NULL: any). */
int store_token_set_scope(struct store *st, int64_t token_id, const char *hosts,
                          const char *cluster);
/* Confines a token to data centers (ids, at most GI_TOKEN_DCS_MAX; n 0:
 * every data center), audited. */
int store_token_set_datacenters(struct store *st, const char *actor, int64_t token_id,
                                const int64_t *dcs, int n);
/* An asset's data center by tag or EPC (one of them NULL): *dc_id 0 when
 * it has none; GI_NOT_FOUND when no asset matches. */
int store_asset_dc(struct store *st, const char *tag, const char *epc, int64_t *dc_id);
/* Things whose data center store_thing_dc reads (key: GPU UUID or host
 * name; id: host, ticket or room-audit id). */
enum store_thing {
    STORE_THING_GPU,
    STORE_THING_HOST,
    STORE_THING_HOST_NAME,
    STORE_THING_TICKET,
    STORE_THING_ROOM_AUDIT,
    STORE_THING_SOURCE,        /* id; see store_source_list */
    STORE_THING_SYNC_CONFLICT, /* id; where its asset is */
};
/* The data center of a thing (thing_dc.c): a GPU's host's, a host's (its
 * linked server's), a ticket's asset's or else its GPU's, a room audit's;
 * *dc_id 0 when it has none; GI_NOT_FOUND when there is no such thing. */
int store_thing_dc(struct store *st, enum store_thing kind, const char *key, int64_t id,
                   int64_t *dc_id);

struct store_ingest_result {
    bool duplicate; /* the batch id was already applied: nothing written */
    int64_t gpus, samples, processes, events;
};
/* Applies one batch from a source in one transaction: host, GPUs with
 * provenance and identity events, samples, processes, source status. */
int store_ingest(struct store *st, int64_t source_id, const struct gi_batch *b,
                 struct store_ingest_result *res);
/* Applies n batches (one per host) in one transaction: all or none.
 * res has n entries. */
int store_ingest_many(struct store *st, int64_t source_id, const struct gi_batch *b, size_t n,
                      struct store_ingest_result *res);
/* Like store_ingest_many under the source `name` of `kind`, found or
 * created in the same transaction (GI_CONFLICT when the name belongs to a
 * source of another kind). With dry_run every statement runs and is then
 * rolled back: res says what the import would do, nothing is written. */
int store_ingest_as(struct store *st, const char *name, const char *kind, const struct gi_batch *b,
                    size_t n, bool dry_run, struct store_ingest_result *res);

/* A GPU's state, derived when read: missing (its owning source's host
 * report no longer lists it), stale (its newest reading was taken before
 * stale_before), unknown (fresh but no utilization measured), idle
 * (measured under 5%) or in_use. Freshness is the time a reading was taken
 * (`observed_at`), never the time it arrived. */
struct store_gpu_filter {
    const char *host, *cluster, *model, *q;
    const char *state;                /* in_use, idle, unknown, stale, missing; NULL any */
    int64_t datacenter_id, source_id; /* 0: any; source: the owning source */
    int stale;                        /* -1 any, 0 fresh only, 1 stale only */
    int64_t stale_before;             /* readings taken before this are stale */
    const char *team, *env;           /* the resolved owner's; NULL: any */
    struct store_scope scope;         /* the data centers it is narrowed to (n 0: all) */
};
int store_gpu_list(struct store *st, const struct store_gpu_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total);
/* The same page, and in the same snapshot *summary (caller owns; may be
 * NULL to skip) over the whole filter, not the page: {"total", "in_use",
 * "idle", "unknown", "stale", "missing", "util_avg", "unowned"}, util_avg being the
 * mean utilization of the fresh measured GPUs (null when none). */
int store_gpu_list_summary(struct store *st, const struct store_gpu_filter *f,
                           const struct store_page *pg, json_t **items, int64_t *total,
                           json_t **summary);
/* The cluster a known host carries (buf ""), for confined push tokens;
 * GI_NOT_FOUND for an unknown host. */
int store_host_cluster(struct store *st, const char *hostname, char *buf, size_t len);
/* One GPU with provenance, current processes and recent events. */
int store_gpu_get(struct store *st, const char *uuid, int64_t stale_before, json_t **out);
/* sc: the data centers the list is narrowed to (NULL: all); a source is
 * in them when every GPU it reported is. */
int store_source_list(struct store *st, int64_t stale_before, const struct store_scope *sc,
                      json_t **items);

/* A pull source's settings; NULL/negative members are unchanged on update. */
struct store_source {
    const char *name, *kind;
    const json_t *config;
    const char *team, *env, *cluster;
    int64_t interval_s; /* < 0: unchanged */
    int enabled;        /* < 0: unchanged */
    /* Ownership: of the sources reporting a host or GPU, the one of highest
     * precedence owns it (ties: the first). Unchanged unless has_precedence. */
    bool has_precedence;
    int64_t precedence;
};
/* Objects returned include `config` (with secrets: the API redacts) and
 * `last_pulled_by`, the replica that took the latest scheduled pull (NULL
 * before the first). */
int store_source_create(struct store *st, const char *actor, const struct store_source *in,
                        json_t **out);
int store_source_get(struct store *st, int64_t id, int64_t stale_before, json_t **out);
int store_source_update(struct store *st, const char *actor, int64_t id,
                        const struct store_source *in, json_t **out);
int store_source_delete(struct store *st, const char *actor, int64_t id);
/* Enabled pull sources whose next run is due at `now` (id, name, kind,
 * config, team, env, cluster, interval_s). */
int store_source_due(struct store *st, int64_t now, json_t **items);
/* The shortest interval_s of the enabled pull sources; 0 when there are
 * none. */
int store_source_min_interval(struct store *st, int64_t *out);
/* Records the outcome of one pull: error NULL on success. */
int store_source_record(struct store *st, int64_t id, const char *error, int64_t gpus);
/* Counts n fields a pull had to drop on the source (warnings_total) and
 * keeps msg as its last_warning. */
int store_source_warn(struct store *st, int64_t id, int64_t n, const char *msg);
/* What one Kubernetes listing found. Strings may be NULL. */
struct store_k8s_node {
    const char *name, *hostname, *product, *sharing, *driver, *cloud, *region, *zone,
        *instance_type, *warning;
    const char *provider_id; /* spec.providerID: the cloud instance behind the node */
    const char *labels;      /* JSON object text of the node's labels; NULL: none */
    int64_t physical_gpus, capacity, allocatable, mig_devices, replicas; /* -1 unknown */
    int ready;                                                           /* -1 unknown */
};
struct store_k8s_pod {
    const char *uid, *ns, *name, *node, *phase, *owner_kind, *owner_name;
    const json_t *labels;
    int64_t gpus, mig_devices, started_at; /* started_at -1 unknown */
};
/* Replaces a Kubernetes source's view in one transaction: nodes upserted
 * (those gone removed), GPU pods upserted, pods no longer listed (or
 * finished) get their ended_at; hosts and GPUs on these nodes take the
 * source's cluster. */
int store_k8s_sync(struct store *st, int64_t source_id, const char *cluster,
                   const struct store_k8s_node *nodes, size_t nn, const struct store_k8s_pod *pods,
                   size_t np);
struct store_k8s_filter {
    const char *cluster, *node, *ns;
    int active; /* -1 any, 1 running now, 0 ended */
    /* a node is where the host of its name is; a pod where its node is */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
int store_k8s_nodes(struct store *st, const struct store_k8s_filter *f, json_t **items);
int store_k8s_pods(struct store *st, const struct store_k8s_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total);

/* What one Slurm accounting pull found (slurm.c). Strings may be NULL or
 * "". Times are unix seconds, -1 unknown (ended_at -1: still running). */
struct store_slurm_node {
    const char *name;
    int nidx;       /* -1: Slurm did not record the GPU indexes on this node */
    const int *idx; /* nidx global GPU indexes */
};
struct store_slurm_job {
    const char *cluster, *job_id, *user, *account, *partition, *qos, *name, *state, *nodelist,
        *gpu_type;
    int64_t job_id_raw, submit, start, end, elapsed, gpus; /* gpus -1 unknown */
    double gpu_util_sum, gpu_mem_mib;                      /* NAN unknown */
    const struct store_slurm_node *nodes;
    size_t nnodes;
};
struct store_slurm_result {
    int64_t jobs_new, jobs_updated, jobs_foreign, gpus_matched, gpus_unmatched;
};
/* Stores a Slurm source's jobs in one transaction, keyed by (cluster,
 * JobIDRaw, submit time), in parts as a listing is read: begin opens the
 * transaction, each add stores some jobs (adding to *res; cluster_default
 * fills jobs without a cluster), end makes pulled_until the source's
 * cursor (see store_slurm_cursor) and commits when every add and rc are
 * GI_OK, else rolls everything back; end is called once after a
 * successful begin. A job another source stored is left as it is
 * (counted in jobs_foreign). Each started job's GPUs are matched to GPU
 * records: node to host by host name (short name or FQDN), then the GPU
 * index Slurm recorded, or else the lowest-indexed GPUs of the host no
 * other job held at the time; what matches nothing is counted on the job.
 * The GPU-hours a new or changed job touches are marked for the usage
 * rollup. */
struct store_slurm_tx;
int store_slurm_begin(struct store *st, struct store_slurm_tx **tx);
int store_slurm_add(struct store_slurm_tx *tx, int64_t source_id, const char *cluster_default,
                    const struct store_slurm_job *jobs, size_t n, struct store_slurm_result *res);
int store_slurm_end(struct store_slurm_tx *tx, int64_t source_id, int64_t pulled_until, int rc);
/* The end of the source's last successful pull; -1 when none. */
int store_slurm_cursor(struct store *st, int64_t source_id, int64_t *pulled_until);
struct store_slurm_filter {
    const char *cluster, *user, *account, *state;
    int64_t from, to; /* jobs whose [start, end) overlaps [from, to); -1 open */
    /* a job is in the scope when every GPU it held is */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
/* Jobs, newest start first, each with its matched GPUs ("gpus_held":
 * [{uuid, host, index, index_known}]). */
int store_slurm_jobs(struct store *st, const struct store_slurm_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total);

/* ---- cloud instances (cloud.c) ---- */
struct cloud_instance;
struct cloud_sync_result {
    int64_t instances, gpus, gone, unknown_types, warnings;
};
/* Records one listing of `scope` (an AWS region, a GCP project, an Azure
 * subscription) by one source: upserts its instances and their GPU
 * records; instances of this source and scope absent from the listing are
 * marked gone, except those in a zone the listing could not see:
 * `unreachable` names nunreachable scopes ("zones/asia-east2-c" matches
 * the instances of zone asia-east2-c, "regions/us-east1" those of that
 * region, a bare name a zone), whose instances keep their state (NULL, 0:
 * the listing is complete). Never touches another source's data (an
 * instance another source listed first is counted in warnings, as is one
 * without an id). All or nothing, in one transaction; adds to *res (may be
 * NULL). See docs/ARCHITECTURE.md, "Cloud instances". */
int store_cloud_sync(struct store *st, int64_t source_id, const char *provider, const char *scope,
                     const struct cloud_instance *v, size_t n, const char *const *unreachable,
                     size_t nunreachable, struct cloud_sync_result *res);
struct store_cloud_filter {
    const char *provider, *state, *account, *region, *q; /* NULL: any */
    int64_t source_id;                                   /* <= 0: any */
    /* an instance is where its host is */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
/* Instances by provider and id, each with its tags object and its
 * placeholder GPUs ("gpus": [{uuid, index, model, missing_since,
 * superseded_at}]). */
int store_cloud_instances(struct store *st, const struct store_cloud_filter *f,
                          const struct store_page *pg, json_t **items, int64_t *total);

/* Figures for /metrics: GPU totals, stale and missing counts, per-source
 * status. */
int store_metrics(struct store *st, int64_t stale_before, json_t **out);

/* ---- discovery matched to inventory (links.c, drift.c) ---- */
/* Every discovered host is linked to at most one inventory server, by
 * the first of: serial, machine id, host name (full, then short), each
 * compared normalized; or by an admin, which wins. Host documents carry
 * resource_id, resource, rule (serial, machine_id, hostname, manual,
 * ambiguous or null), manual, match_detail, linked_at and linked_by. */
struct store_host_filter {
    int64_t datacenter_id;    /* 0: any */
    int linked;               /* -1 any, 1 linked, 0 not linked */
    const char *q;            /* substring of hostname, serial, machine id, server name */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
int store_host_list(struct store *st, const struct store_host_filter *f,
                    const struct store_page *pg, json_t **items, int64_t *total);
int store_host_get(struct store *st, int64_t id, json_t **out);
enum store_link_mode {
    STORE_LINK_MANUAL, /* linked to resource_id by hand */
    STORE_LINK_NONE,   /* "not linked" by hand: automatic matching stays off */
    STORE_LINK_AUTO,   /* back to automatic matching, re-run now */
};
/* Changes a host's link (audited, under actor); *out is the host after.
 * GI_NOT_FOUND: no such host; GI_INVALID: resource_id is not a server. */
int store_host_link_set(struct store *st, const char *actor, int64_t host_id,
                        enum store_link_mode mode, int64_t resource_id, json_t **out);
/* A server's discovered GPUs: {count, models, util_avg, in_use, hosts,
 * gpus}; count 0 and empty lists when no host is linked. Data older than
 * stale_before is stale and not in use. */
int store_res_discovered(struct store *st, int64_t resource_id, int64_t stale_before, json_t **out);
/* Gives servers and hosts written before matching existed their keys and
 * links (cheap when there are none). */
int store_links_refresh(struct store *st);

/* Drift between the declared inventory and what discovery reports,
 * computed when read. Kinds: gpu_count_mismatch, gpu_model_mismatch,
 * retired_busy, unallocated_busy, unlinked_host, never_seen,
 * ambiguous_match. */
#define STORE_DRIFT_KINDS                                                                          \
    "gpu_count_mismatch, gpu_model_mismatch, retired_busy, unallocated_busy, unlinked_host, "      \
    "never_seen, ambiguous_match"
/* Utilization from which a fresh GPU counts as busy (in use). */
#define STORE_BUSY_PCT 5.0
struct store_drift_filter {
    const char *kind;         /* NULL: any */
    int64_t datacenter_id;    /* 0: any */
    int64_t stale_before;     /* readings older than this are not busy */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
};
/* True when kind names a drift kind. */
bool store_drift_kind_valid(const char *kind);
/* *items: the page; *total: items matching the filter; *counts: per kind
 * over the data-center filter, every kind present. */
int store_drift_list(struct store *st, const struct store_drift_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total, json_t **counts);
/* True when a declared GPU model names the discovered one: every word
 * (letters and digits) of the declared model is a word of the discovered
 * model, ignoring case ("H100" matches "NVIDIA H100 80GB HBM3"). */
bool store_model_matches(const char *declared, const char *discovered);

/* ---- ownership (ownership.c, owner_dims.c, owner_rules.c) ----
 * Teams, environments, pools and clusters/clouds are dimensions (kind
 * "team", "environment", "pool", "cluster"), each value a name unique per
 * kind. Assignments and rules may only name existing values. A GPU's
 * owner resolves per field: explicit assignment (GPU > host > inventory
 * resource) > rules in position order > the pushing source's defaults. */
#define STORE_DIM_NAME_MAX 64
/* What a write refused, for the error reply: the field and why. */
struct store_owner_err {
    char field[40];
    char message[200];
};
/* A dimension's settable members; NULL: unchanged (update) or empty. */
struct store_dim {
    const char *name; /* create only */
    const char *display, *description;
    const json_t *attrs; /* an object; borrowed */
};
/* True when kind is a dimension kind. */
bool store_dim_kind_valid(const char *kind);
/* GI_CONFLICT when the name is taken in that kind. */
int store_dim_create(struct store *st, const char *actor, const char *kind,
                     const struct store_dim *in, json_t **out);
int store_dim_list(struct store *st, const char *kind, const char *q, const struct store_page *pg,
                   json_t **items, int64_t *total);
int store_dim_get(struct store *st, const char *kind, const char *name, json_t **out);
int store_dim_update(struct store *st, const char *actor, const char *kind, const char *name,
                     const struct store_dim *in, json_t **out);
/* Refuses with GI_CONFLICT while an assignment or rule in force (or to
 * come) names the value; *users (may be NULL; caller frees) then receives
 * {"assignments":[{id,target,target_id}],"rules":[rule ids]}. */
int store_dim_delete(struct store *st, const char *actor, const char *kind, const char *name,
                     json_t **users);

/* Targets of an explicit assignment. */
enum store_owner_target { STORE_OWNER_GPU, STORE_OWNER_HOST, STORE_OWNER_RESOURCE };
/* An assignment's fields: has_* false keeps what is in force; has_* with
 * a NULL value clears the field. effective_from 0: now. */
struct store_owner_set {
    const char *team, *env, *pool;
    bool has_team, has_env, has_pool;
    int64_t effective_from;
};
/* Assigns an owner to a GPU (key: its UUID), host (key: its host name, or
 * its id as a decimal) or resource (key: its id as a decimal) from
 * effective_from on: the assignment in force then ends there, the change
 * is audited, the affected GPUs' usage re-attributed and their current
 * owner recomputed. GI_NOT_FOUND: no such target; GI_INVALID: a value
 * names no dimension (err says which field); GI_CONFLICT: effective_from
 * is before the start of the latest assignment (the past is not
 * rewritten). *out: the new assignment. */
int store_owner_assign(struct store *st, const char *actor, enum store_owner_target target,
                       const char *key, const struct store_owner_set *in, json_t **out,
                       struct store_owner_err *err);
/* One row of an assignment import: the target, its key and the fields. */
struct store_owner_row {
    enum store_owner_target target;
    const char *key;
    struct store_owner_set set;
};
/* Applies n assignments in one transaction, all or none, each as
 * store_owner_assign would. Every row is tried: row_status and row_err (n
 * entries each, caller's) receive each row's outcome; if any failed the
 * result is the first failure's status and nothing is written. A dry run
 * makes the same writes and rolls them back. */
int store_owner_import(struct store *st, const char *actor, const struct store_owner_row *rows,
                       size_t n, bool dry_run, int *row_status, struct store_owner_err *row_err);
/* The target's assignments, newest first. */
int store_owner_history(struct store *st, enum store_owner_target target, const char *key,
                        json_t **items);
/* GPUs whose resolved team is empty now, with the GPU's host, model,
 * cluster and owner; narrowed to sc (NULL: all) by the GPU's host. */
int store_owner_unowned(struct store *st, const struct store_scope *sc, const struct store_page *pg,
                        json_t **items, int64_t *total);
/* The owner of GPU `uuid` at `at`, every field with its deciding "by". */
int store_owner_at(struct store *st, const char *uuid, int64_t at, json_t **out);
/* The owner:refresh job: recomputes the current owner of the GPUs whose
 * assignment (or whose parent GPU's, host's or resource's) or any rule
 * began or ended since the last run, up to `now` (every GPU when a rule
 * did), and records `now` as done. Cheap when nothing is due: two indexed
 * reads. *gpus receives how many GPUs were recomputed. */
int store_owner_due(struct store *st, int64_t now, int64_t *gpus);

/* A mapping rule. match_kind: k8s_namespace, node_label, host_pattern,
 * cloud_tag, datacenter, source or slurm_account; match_key: the label or
 * tag name (node_label, cloud_tag); match_value: a glob (* and ?). set:
 * team, env, pool, cluster, cloud (NULL: not set by the rule). On update,
 * has_match / has_set replace the whole match / set; position < 0 and
 * enabled < 0 keep what is there. effective_from 0: now. */
#define STORE_RULE_FIELDS 5
struct store_rule {
    bool has_match, has_set;
    const char *match_kind, *match_key, *match_value;
    const char *set[STORE_RULE_FIELDS]; /* team, env, pool, cluster, cloud */
    int64_t position;
    int enabled;
    int64_t effective_from;
};
/* The names of the set fields, in struct store_rule's order. */
extern const char *const store_rule_set_names[STORE_RULE_FIELDS];
/* True when kind is a match kind. */
bool store_rule_kind_valid(const char *kind);
/* Rules keep history: an update ends the version in force at the new
 * version's effective_from and starts a new one under the same id; a
 * delete ends it. Every change is audited and re-attributes usage from
 * its effective time. GI_INVALID names err->field; GI_CONFLICT: an
 * effective_from before the version in force began. */
int store_rule_create(struct store *st, const char *actor, const struct store_rule *in,
                      json_t **out, struct store_owner_err *err);
/* The rules in force or to come (their newest versions), in position
 * order. */
int store_rule_list(struct store *st, json_t **items);
/* A rule's newest version with "history": every version, newest first. */
int store_rule_get(struct store *st, int64_t id, json_t **out);
int store_rule_update(struct store *st, const char *actor, int64_t id, const struct store_rule *in,
                      json_t **out, struct store_owner_err *err);
int store_rule_delete(struct store *st, const char *actor, int64_t id);
/* The GPUs a rule would match now (at most `limit`, and *total of them),
 * of those in sc (NULL: all) by their host. */
int store_rule_dry_run(struct store *st, const struct store_rule *in, const struct store_scope *sc,
                       int64_t limit, json_t **items, int64_t *total, struct store_owner_err *err);

/* ---- periodic jobs (jobs.c) ----
 * Each periodic job (pull:<source id>, ...) has one lease row shared by
 * every replica on the database, so exactly one replica runs a given job
 * at a time. Holders name a replica, e.g. "hostname:pid:random". */
/* Takes the job's next slot for `holder` when it is due (next_run_at and
 * lease_until both at or before now); the row is created, due at once, if
 * missing. On success *run says whether this caller won the slot: then it
 * runs the job, which becomes due again at now + interval_s, and keeps it
 * until now + max_run_s at most (after that, a replica that died mid-run
 * loses it). One conditional UPDATE decides, so two callers never both win. */
int store_job_claim(struct store *st, const char *name, const char *holder, int64_t interval_s,
                    int64_t max_run_s, int64_t now, bool *run);
/* Ends holder's run of the job: the lease is released and the run counted
 * (last_run_at, last_holder, runs), unless the job has meanwhile passed to
 * another holder, which leaves the row alone. */
int store_job_done(struct store *st, const char *name, const char *holder, int64_t now);
/* The job's lease row {name, holder, next_run_at, lease_until, last_run_at,
 * last_holder, runs}; GI_NOT_FOUND before its first claim. */
int store_job_get(struct store *st, const char *name, json_t **out);
/* ---- usage (usage.c, usage_query.c) ---- */
/* The classification's settings, one set per process: set once before the
 * server starts (the defaults are the ones shown). */
struct store_usage_config {
    double busy_pct;        /* utilization at or above which a GPU is busy (5) */
    int64_t max_gap_s;      /* longest stretch one sample covers (600) */
    int retain_hourly_days; /* hourly and per-consumer rollups, intervals (396) */
    int retain_daily_days;  /* daily rollups (1825) */
};
void store_usage_configure(const struct store_usage_config *cfg);
void store_usage_config_get(struct store_usage_config *out);

/* What one run of the rollup job did. */
struct store_usage_run {
    int64_t hours;      /* GPU-hours recomputed from raw samples */
    int64_t chunks;     /* transactions they took */
    int64_t redone;     /* rollup rows re-attributed or re-priced */
    int64_t pruned;     /* rollup rows past retention deleted */
    int64_t dirty_left; /* GPU-hours still waiting (more than max_chunks' worth) */
    /* Hours whose group sums still wait: rolled up by a run beside this
     * one (the scheduled job) that has not summed its groups yet. */
    int64_t groups_left;
    int64_t redo_left; /* re-attributions or re-pricings still queued */
};
/* The usage:rollup job: marks the current and previous hour of every
 * present GPU whose rows are stale, recomputes up to max_chunks chunks of
 * dirty GPU-hours (oldest first, each chunk one transaction, then their
 * days; a GPU-hour that fails alone is logged and skipped), works the
 * re-attribution and re-pricing queue, and prunes rollups past
 * retention. max_chunks < 1: the default. A run on demand names its
 * actor and is audited; the periodic job passes NULL. */
int store_usage_rollup(struct store *st, const char *actor, int64_t now, int max_chunks,
                       struct store_usage_run *out);
/* The oldest hour still waiting for its rollup; GI_NOT_FOUND when none
 * (raw samples from then on must be kept). */
int store_usage_oldest_dirty(struct store *st, int64_t *hour);
/* The days of raw samples to keep at `now`: retain_days, or more while an
 * older hour still waits for its rollup (with a day's margin), so that
 * raw samples are never pruned before they are rolled up. */
int store_usage_keep_days(struct store *st, int64_t now, int retain_days);

enum store_usage_step { USAGE_STEP_HOUR, USAGE_STEP_DAY, USAGE_STEP_WEEK, USAGE_STEP_MONTH };
/* A usage report: group_by one of team, env, pool, cluster, cloud, model,
 * datacenter, host, gpu, consumer (validated by the caller); [from, to)
 * hour-aligned; filters NULL for any. */
struct store_usage_query {
    const char *group_by;
    int64_t from, to;
    enum store_usage_step step;
    const char *team, *env, *pool, *cluster, *cloud, *datacenter, *model;
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
    int64_t max_groups;       /* GI_TOO_LARGE past it (0: no bound) */
    /* Paging of the host and GPU groupings: limit > 0 answers the groups
     * [offset, offset + limit) in the order of their owned GPU-hours over
     * the range, descending, then key (UUID or host name; a NULL host
     * last); 0 answers every group (bounded by the row bound). Accepted
     * for consumer, where they do not page yet. */
    int64_t limit, offset;
};
/* {"items":[{group, start, gpu_hours{owned, allocated, busy,
 * allocated_idle, idle, unknown}, util_avg, energy_kwh, cost{amount,
 * currency, method, split} | null, cost_note?}], "total":{...}, from, to,
 * group_by, source}, and for a paged host or GPU report groups_total (the
 * groups in the range with the filters), limit, offset and next_offset
 * (null on the last page); its total is over every group. Read from
 * usage_daily (by a dimension: usage_groups_daily) when the step is a day
 * or longer and from/to are day-aligned, else from usage_hourly (by a
 * dimension: usage_groups_hourly). GI_TOO_LARGE past max_groups groups or
 * the row bound. Caller owns *out. */
int store_usage_report(struct store *st, const struct store_usage_query *q, json_t **out);
/* The same report as text, written without building a document: the JSON
 * store_usage_report decodes (byte for byte what jansson would encode),
 * or with `csv` one flat CSV row per item (group, [kind,] start,
 * gpu_hours_owned ... gpu_hours_unknown, util_avg, energy_kwh,
 * cost_amount, cost_currency, cost_method, cost_note) after a header row.
 * Caller frees *text. */
int store_usage_report_text(struct store *st, const struct store_usage_query *q, bool csv,
                            char **text, size_t *len);
/* One GPU's timeline over [from, to): {uuid, from, to, telemetry_source,
 * intervals[{kind, consumer, team, ..., started_at, ended_at}], hours[...]
 * (hourly rollups, when the range is over 6 hours), samples[...] (raw,
 * when it is 6 hours or less), events[...], owners[{at, team, env, pool,
 * cluster, cloud}] (the first hour's owner, then each change), cost
 * {amount, currency, method: "catalog"} | null (the range's priced hours)}.
 * GI_NOT_FOUND for an unknown GPU. Caller owns *out. */
int store_gpu_timeline(struct store *st, const char *uuid, int64_t from, int64_t to, json_t **out);

/* GI_OK while the database answers a trivial query that reads the schema;
 * GI_UNAVAILABLE (or another error status) when it does not. */
int store_ping(struct store *st);

/* Copying a whole SQLite database into an empty PostgreSQL one (every
 * table, ids, history, audit trail, credentials), in one transaction on
 * the target, verified before it commits: every table's row count equal,
 * and what the target's triggers derive (dc_counts, resources' documents)
 * equal in content to the source's. */
#define STORE_COPY_MAX_TABLES 96
#define STORE_COPY_NAME_MAX 64
struct store_copy_table {
    char name[STORE_COPY_NAME_MAX];
    int64_t source_rows, target_rows;
};
struct store_copy_report {
    int n; /* tables counted, in the order they were copied */
    struct store_copy_table tables[STORE_COPY_MAX_TABLES];
    char error[512]; /* what failed, when the copy did */
};
/* True when `target` names a PostgreSQL database (a postgres:// or
 * postgresql:// URL, or a libpq key=value string), as store_open() reads
 * it; anything else is a SQLite file path. */
bool store_is_pg_target(const char *target);
/* Copies `from` (SQLite) into `to` (PostgreSQL), both opened with
 * store_open() and so at their latest schema; progress lines go to
 * `progress` (may be NULL). A dry run does everything, verification
 * included, then rolls back. GI_OK (rep->tables filled); GI_INVALID: not
 * SQLite into PostgreSQL, or schemas that differ; GI_CONFLICT: the target
 * is not empty (rep->error names a table that has rows); other statuses:
 * the copy failed and the target is as it was (rep->error says why). */
int store_copy(struct store *from, struct store *to, bool dry_run, FILE *progress,
               struct store_copy_report *rep);

/* ---- cost: the price catalog (prices.c), cost settings and the showback
 * report (showback.c), cloud billing lines (billing.c) ---- */
/* One catalog entry. kind "hourly": micros per GPU-hour; "purchase":
 * micros per GPU bought (the TCO method's default when the inventory has
 * no purchase cost). env, cloud and pool NULL or "": the entry leaves them
 * open. Documents: {id, kind, model, env, cloud, pool, hourly | amount,
 * currency, effective_from, effective_until (the next entry of the same
 * kind, model, env, cloud and pool; null: still in force), estimate,
 * note, created_at, updated_at}, money as decimal strings. */
struct store_price {
    const char *kind, *model, *env, *cloud, *pool, *currency, *note;
    int64_t micros, effective_from;
    bool estimate;
};
struct store_price_filter {
    const char *kind;  /* NULL: any */
    const char *model; /* NULL: any; else entries that would price this GPU model */
};
/* Creating, replacing (every field) and deleting an entry re-prices the
 * usage rollups from the earliest time the change touches, audited, in
 * one transaction. GI_CONFLICT: an entry of the same kind, model, env,
 * cloud, pool and effective_from exists. */
int store_price_create(struct store *st, const char *actor, const struct store_price *in,
                       json_t **out);
int store_price_list(struct store *st, const struct store_price_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total);
int store_price_get(struct store *st, int64_t id, json_t **out);
int store_price_update(struct store *st, const char *actor, int64_t id,
                       const struct store_price *in, json_t **out);
int store_price_delete(struct store *st, const char *actor, int64_t id);
/* The hourly rate (kind "hourly") or purchase price ("purchase") the
 * catalog gives one GPU of `model` at `at`: {model, kind, at, hourly |
 * amount, currency, price_id, estimate, price (the entry)}; GI_NOT_FOUND
 * when no entry covers it. */
int store_price_lookup(struct store *st, const char *kind, const char *model, const char *env,
                       const char *cloud, const char *pool, int64_t at, json_t **out);

/* Inserts the shipped estimates (hourly rates and purchase prices of
 * common models, USD, "estimate": true, in force since 1970) unless this
 * database has had them once: the mark stays, so entries deleted later
 * stay deleted. *seeded says whether this call inserted them. */
int store_prices_seed(struct store *st, bool *seeded);

/* Settings of the cost methods. */
struct store_cost_settings {
    int64_t amortization_years; /* TCO: purchase cost spread over these years (default 4) */
    int64_t energy_micros_kwh;  /* TCO: price of a kWh in micro-units (default 0.12) */
    int64_t pue_milli;          /* TCO: power usage effectiveness × 1000 (default 1400) */
    char currency[4];           /* the reports' currency (default USD) */
};
int store_cost_settings_get(struct store *st, struct store_cost_settings *out);
int store_cost_settings_put(struct store *st, const char *actor,
                            const struct store_cost_settings *in);

/* Stores the GPU-relevant lines of one billing export (parse/billing.h)
 * in one transaction: a line already stored (same provider, account and
 * line key) adds nothing; each new line is matched to a host by instance
 * id, its cost spread over the host's physical GPUs, or failing that to a
 * team by its team tag. With dry_run everything runs and is rolled back.
 * *report (caller owns): {lines, added, duplicates, matched_instance,
 * matched_tag, unmatched, unmatched_lines:[first 1,000 unmatched added
 * lines], dry_run}. */
struct billing_file;
int store_billing_import(struct store *st, const char *actor, const struct billing_file *f,
                         bool dry_run, json_t **report);
/* The stored lines that matched neither an instance nor a team tag. */
int store_billing_unmatched(struct store *st, const struct store_page *pg, json_t **items,
                            int64_t *total);

/* The showback report of [from, to) (a month): one row per team. *out
 * (caller owns): {month?, from, to, currency, rows:[...], total:{...},
 * unmatched_billing, methods:{...}}; see showback.c for each figure's
 * method. Narrowed to the data centers of sc (NULL or n 0: all), it
 * counts only their GPU-hours and the bill shares of their GPU-hours,
 * has no team-tag or unmatched billing lines (they are in no data
 * center: unmatched_billing null) and lists sc's ids as datacenter_ids. */
int store_showback(struct store *st, int64_t from, int64_t to, const struct store_scope *sc,
                   json_t **out);

/* ---- usage insights (insights.c): patterns, waste and savings, all read
 * from the hourly rollups (usage_hourly, usage_consumers) ---- */
/* The rows an insight reads: the rollup hours that start in [from, to)
 * whose owner and GPU at that hour match every filter given. */
struct store_insight_filter {
    const char *team, *env, *pool, *cluster, *cloud, *model; /* NULL or "": any */
    int64_t datacenter_id;    /* 0: any; -1: none (an unknown data center) */
    struct store_scope scope; /* the data centers it is narrowed to (n 0: all) */
    int64_t from, to;         /* unix seconds */
    int64_t limit;            /* items at most */
};
/* The 168 hour-of-week cells (Monday 00 first, in UTC shifted by tz_s
 * seconds), each with the average utilization, the allocated share of
 * the owned time (both in %) and the GPU-hours behind them; `value` is
 * the one `allocation` picks. */
int store_usage_heatmap(struct store *st, const struct store_insight_filter *f, int64_t tz_s,
                        bool allocation, json_t **items);
/* True for a grouping the trend accepts: team, env, pool, cluster, cloud,
 * model, datacenter, host, gpu. */
bool store_insight_group_valid(const char *group_by);
/* Per group: owned, busy and allocated-idle GPU-hours, average
 * utilization and cost in [cur_from, f->to) beside [f->from, cur_from),
 * each with its change in % and a direction. */
int store_usage_trend(struct store *st, const struct store_insight_filter *f, const char *group_by,
                      int64_t cur_from, json_t **items);
/* GPUs whose newest hours, up to the end of the range, were idle (not
 * allocated, measured) for at least min_hours consecutive hours. */
int store_insight_idle(struct store *st, const struct store_insight_filter *f, int64_t min_hours,
                       json_t **items);
/* GPUs allocated but idle in the range, per GPU and consumer: who holds
 * it, since when, the GPU-hours and cost wasted. */
int store_insight_alloc_idle(struct store *st, const struct store_insight_filter *f,
                             json_t **items);
/* Owner teams ranked by allocated-idle cost, then idle cost. */
int store_insight_waste_by_team(struct store *st, const struct store_insight_filter *f,
                                json_t **items);
/* Consumers ranked by allocated GPU-hours, with their busy share. */
int store_insight_top_consumers(struct store *st, const struct store_insight_filter *f,
                                json_t **items);
/* Workloads (a pod, a process, an inventory allocation on one host)
 * holding several GPUs of which k kept a peak utilization below
 * peak_below % over the range. */
int store_insight_overrequest(struct store *st, const struct store_insight_filter *f,
                              double peak_below, json_t **items);
/* Concrete opportunities drawn from the allocated-idle, idle and
 * over-requesting lists, each with an estimated monthly saving, a
 * sentence and the GPUs behind it; largest saving first. */
int store_insight_savings(struct store *st, const struct store_insight_filter *f,
                          int64_t idle_min_hours, double peak_below, json_t **items);

/* ---- webhooks and tickets (webhooks.c, tickets.c) ---- */
/* A webhook as written by the API. On update NULL (enabled < 0) leaves a
 * member unchanged; secret and auth "" clear it. events is a comma list
 * of event kinds, or "*". Documents never hold secret or auth: they say
 * "secret_set" and "auth_set". */
struct store_webhook {
    const char *name;
    const char *url;
    const char *format;
    const char *secret;
    const char *auth;
    const char *events;
    const json_t *config;
    int enabled;
};
/* GI_CONFLICT when the name is taken. */
int store_webhook_create(struct store *st, const char *actor, const struct store_webhook *in,
                         json_t **out);
int store_webhook_list(struct store *st, const struct store_page *pg, json_t **items,
                       int64_t *total);
int store_webhook_get(struct store *st, int64_t id, json_t **out);
/* Enabling a webhook clears its disabled_reason. */
int store_webhook_update(struct store *st, const char *actor, int64_t id,
                         const struct store_webhook *in, json_t **out);
/* Deletes the webhook; its pending deliveries become failed (kept in the
 * log until retention). */
int store_webhook_delete(struct store *st, const char *actor, int64_t id);
/* Enqueues one webhook.test delivery to webhook id whatever its events;
 * *out the delivery. GI_CONFLICT when the webhook is disabled. */
int store_webhook_test(struct store *st, const char *actor, int64_t id, json_t **out);
/* A webhook's deliveries, newest first. */
/* sc: the data centers the log is narrowed to (NULL: all); a delivery is
 * where the ticket it is about is (one about no ticket is in none). */
int store_delivery_list(struct store *st, int64_t webhook_id, const struct store_scope *sc,
                        const struct store_page *pg, json_t **items, int64_t *total);
/* Sends a failed or dead delivery again: pending, due now, its retry
 * schedule restarted. GI_CONFLICT when it is pending or delivered. */
int store_delivery_retry(struct store *st, const char *actor, int64_t id, json_t **out);
/* Claims up to `limit` due pending deliveries of enabled webhooks for a
 * sender: each claim moves the delivery's next_at to now + lease_s by a
 * conditional update, so of several replicas one sends it, and a sender
 * that dies leaves it due again after the lease. *items: objects {id,
 * webhook_id, msg_id, event, body (the stored text), attempts, ticket_id,
 * url, format, secret, auth}; caller frees. */
int store_delivery_claim(struct store *st, int64_t now, int64_t lease_s, int64_t limit,
                         json_t **items);
/* What one attempt of a claimed delivery got. status 0: no answer (error
 * says why). ext_*: the ticket the receiver created (NULL: none). */
struct store_delivery_outcome {
    int64_t id;
    long status;
    const char *error;
    const char *response;
    const char *ext_system, *ext_key, *ext_url;
    int64_t now;
    int64_t backoff_s; /* > 0: every retry waits this long instead of the schedule */
};
/* The retry schedule after the 1st, 2nd ... failed attempt, in seconds;
 * a failure after the last one makes the delivery dead. */
extern const int64_t store_delivery_backoff[];
extern const int store_delivery_backoff_n;
/* Records an attempt: 2xx delivered (and, for a ticket's delivery, the
 * ticket's external system, key and url); 410 failed and the webhook
 * disabled with its reason; anything else pending again after the
 * schedule's wait, or dead once the schedule is spent. *state (may be
 * NULL, 16 bytes) receives the new state. */
int store_delivery_done(struct store *st, const struct store_delivery_outcome *o, char *state);
/* Deletes finished deliveries (delivered, failed, dead) created before
 * `before`; *deleted counts them. */
int store_delivery_prune(struct store *st, int64_t before, int64_t *deleted);

/* Hardware assets, their scans, health, rules and push-back: */
#include "store/store_assets.h"

#endif
