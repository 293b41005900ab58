/* The ingest path: a batch from a reporting source is applied in one
 * writing transaction: hosts, GPU identity and its conflicts with other
 * sources, provenance, samples, processes, pods, and the GPUs a host report
 * stopped listing. */
#include "store/store_int.h"
#include "core/log.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "store/links.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATEMENTS(X)                                                                              \
    X(DC_BY_NAME, store_sql_dc_by_name)                                                            \
    X(SOURCE_DEFAULTS, "SELECT team, env, cluster, precedence, name FROM sources WHERE id = :id")  \
    X(SOURCE_OK,                                                                                   \
      "UPDATE sources SET last_attempt_at = :now, last_success_at = :now, last_error = "           \
      "NULL, gpus_reported = (SELECT COUNT(*) FROM gpus WHERE source_id = :id AND "                \
      "missing_since IS NULL) WHERE id = :id")                                                     \
    X(SOURCE_WARN, "UPDATE sources SET warnings_total = warnings_total + :n, last_warning = "      \
                   ":msg, last_warning_at = :now WHERE id = :id")                                  \
    X(HOST_CLUSTER, "SELECT cluster FROM hosts WHERE hostname = :host")                            \
    X(HOST_OWNER,                                                                                  \
      "SELECT h.source_id, COALESCE(o.precedence, 0) FROM hosts h LEFT JOIN sources o "            \
      "ON o.id = h.source_id WHERE h.hostname = :host")                                            \
    X(BATCH_ADD, "INSERT INTO ingest_batches (source_id, batch_id, received_at, samples) VALUES "  \
                 "(:sid, :bid, :now, :n) ON CONFLICT (source_id, batch_id) DO NOTHING")            \
    X(HOST_UPSERT,                                                                                 \
      "INSERT INTO hosts (hostname, machine_id, serial, cluster, datacenter_id, "                  \
      "source_id, first_seen_at, last_seen_at) VALUES (:host, :mid, :serial, "                     \
      "COALESCE(:cluster_set, :cluster), :dc, :sid, :now, :now) ON CONFLICT (hostname) DO UPDATE " \
      "SET machine_id = CASE WHEN :own = 1 THEN COALESCE(excluded.machine_id, hosts.machine_id) "  \
      "ELSE COALESCE(hosts.machine_id, excluded.machine_id) END, serial = CASE WHEN :own = 1 "     \
      "THEN COALESCE(excluded.serial, hosts.serial) ELSE COALESCE(hosts.serial, excluded.serial) " \
      "END, cluster = CASE WHEN :own = 1 THEN COALESCE(:cluster_set, hosts.cluster, :cluster) "    \
      "ELSE COALESCE(hosts.cluster, :cluster_set, :cluster) END, datacenter_id = CASE WHEN :own "  \
      "= 1 THEN COALESCE(excluded.datacenter_id, hosts.datacenter_id) ELSE "                       \
      "COALESCE(hosts.datacenter_id, excluded.datacenter_id) END, source_id = CASE WHEN :own = 1 " \
      "THEN excluded.source_id ELSE hosts.source_id END, last_seen_at = CASE WHEN :own = 1 THEN "  \
      "excluded.last_seen_at ELSE hosts.last_seen_at END RETURNING id, hostname, "                 \
      "machine_id, serial")                                                                        \
    X(HOST_DC, "SELECT datacenter_id FROM resources WHERE kind = 'server' AND (name = :host OR "   \
               "name = :short) ORDER BY id LIMIT 1")                                               \
    X(GPU_IDENT, "SELECT g.host_id, g.serial, h.hostname, g.model, g.id, g.source_id, "            \
                 "COALESCE(o.precedence, 0), o.name FROM gpus g LEFT JOIN hosts h ON h.id = "      \
                 "g.host_id LEFT JOIN sources o ON o.id = g.source_id WHERE g.uuid = :uuid")       \
    X(GPU_SERIAL_OTHER, "SELECT uuid FROM gpus WHERE serial = :serial AND uuid <> :uuid LIMIT 1")  \
    X(GPU_UPSERT,                                                                                  \
      "INSERT INTO gpus (uuid, parent_uuid, host_id, idx, vendor, model, serial, pci_bus_id, "     \
      "memory_total_mib, driver, vbios, mig_mode, mig_profile, mig_instance, team, env, cluster, " \
      "source_id, first_seen_at, last_seen_at, observed_at) VALUES (:uuid, :parent, :host, :idx, " \
      ":vendor, :model, :serial, :bus, :mem, :driver, :vbios, :mig, :profile, :inst, :team, "      \
      ":env, "                                                                                     \
      "COALESCE(:cluster_set, :cluster), :sid, :now, :now, :obs) ON CONFLICT (uuid) DO UPDATE "    \
      "SET "                                                                                       \
      "parent_uuid = COALESCE(excluded.parent_uuid, "                                              \
      "gpus.parent_uuid), host_id = excluded.host_id, idx = COALESCE(excluded.idx, gpus.idx), "    \
      "vendor = COALESCE(excluded.vendor, gpus.vendor), model = COALESCE(excluded.model, "         \
      "gpus.model), serial = COALESCE(excluded.serial, gpus.serial), pci_bus_id = "                \
      "COALESCE(excluded.pci_bus_id, gpus.pci_bus_id), memory_total_mib = "                        \
      "COALESCE(excluded.memory_total_mib, gpus.memory_total_mib), driver = "                      \
      "COALESCE(excluded.driver, gpus.driver), vbios = COALESCE(excluded.vbios, gpus.vbios), "     \
      "mig_mode = COALESCE(excluded.mig_mode, gpus.mig_mode), mig_profile = "                      \
      "COALESCE(excluded.mig_profile, gpus.mig_profile), mig_instance = "                          \
      "COALESCE(excluded.mig_instance, gpus.mig_instance), team = COALESCE(:team_set, gpus.team, " \
      "excluded.team), env = COALESCE(:env_set, gpus.env, excluded.env), cluster = "               \
      "COALESCE(:cluster_set, gpus.cluster, :cluster), source_id = excluded.source_id, "           \
      "last_seen_at = excluded.last_seen_at, observed_at = CASE WHEN gpus.observed_at IS NULL OR " \
      "gpus.observed_at < excluded.observed_at THEN excluded.observed_at ELSE gpus.observed_at "   \
      "END, missing_since = NULL RETURNING id")                                                    \
    X(GPU_REMAP_GET, "SELECT remap_failure FROM gpus WHERE id = :gid")                             \
    X(GPU_REMAP_SET,                                                                               \
      "UPDATE gpus SET remap_corrected = COALESCE(:rc, remap_corrected), remap_uncorrectable = "   \
      "COALESCE(:ru, remap_uncorrectable), remap_pending = COALESCE(:rp, remap_pending), "         \
      "remap_failure = COALESCE(:rf, remap_failure), remap_failure_since = CASE WHEN :rf = 1 "     \
      "THEN COALESCE(remap_failure_since, :now) WHEN :rf = 0 THEN NULL ELSE remap_failure_since "  \
      "END WHERE id = :gid")                                                                       \
    X(GPU_OBSERVED_SET, "UPDATE gpus SET observed_at = :obs WHERE id = :gid AND (observed_at IS "  \
                        "NULL OR observed_at < :obs)")                                             \
    X(GPU_FILL,                                                                                    \
      "UPDATE gpus SET parent_uuid = COALESCE(parent_uuid, :parent), host_id = COALESCE(host_id, " \
      ":host), idx = COALESCE(idx, :idx), vendor = COALESCE(vendor, :vendor), model = "            \
      "COALESCE(model, :model), serial = COALESCE(serial, :serial), pci_bus_id = "                 \
      "COALESCE(pci_bus_id, :bus), memory_total_mib = COALESCE(memory_total_mib, :mem), driver = " \
      "COALESCE(driver, :driver), vbios = COALESCE(vbios, :vbios), mig_mode = COALESCE(mig_mode, " \
      ":mig), mig_profile = COALESCE(mig_profile, :profile), mig_instance = "                      \
      "COALESCE(mig_instance, :inst), team = COALESCE(team, :team), env = COALESCE(env, :env), "   \
      "cluster = COALESCE(cluster, :cluster_set, :cluster) WHERE id = :gid")                       \
    X(CONFLICT_GET, "SELECT theirs, ours FROM gpu_conflicts WHERE gpu_id = :gid AND source_id = "  \
                    ":sid AND field = :field")                                                     \
    X(CONFLICT_SET,                                                                                \
      "INSERT INTO gpu_conflicts (gpu_id, source_id, field, theirs, ours, first_at, last_at) "     \
      "VALUES (:gid, :sid, :field, :theirs, :ours, :now, :now) ON CONFLICT (gpu_id, source_id, "   \
      "field) DO UPDATE SET theirs = excluded.theirs, ours = excluded.ours, first_at = CASE WHEN " \
      "gpu_conflicts.theirs = excluded.theirs AND gpu_conflicts.ours = excluded.ours THEN "        \
      "gpu_conflicts.first_at ELSE excluded.first_at END, last_at = excluded.last_at")             \
    X(CONFLICT_DEL, "DELETE FROM gpu_conflicts WHERE gpu_id = :gid AND source_id = :sid AND "      \
                    "(:field IS NULL OR field = :field)")                                          \
    X(MIG_OTHER, "SELECT uuid FROM gpus WHERE parent_uuid = :parent AND mig_instance = :inst AND " \
                 "uuid <> :uuid ORDER BY id LIMIT 1")                                              \
    X(GPU_EXISTS, "SELECT COUNT(*) FROM gpus WHERE uuid = :uuid")                                  \
    X(RENAME_GPU, "UPDATE gpus SET uuid = :to WHERE uuid = :from")                                 \
    X(RENAME_EVENTS, "UPDATE gpu_events SET gpu_uuid = :to WHERE gpu_uuid = :from")                \
    X(RENAME_PROCS, "UPDATE gpu_processes SET gpu_uuid = :to WHERE gpu_uuid = :from")              \
    X(RENAME_PODS, "UPDATE gpu_pods SET gpu_uuid = :to WHERE gpu_uuid = :from")                    \
    X(PROV_SET,                                                                                    \
      "INSERT INTO gpu_provenance (gpu_uuid, field, value, source_id, set_at) VALUES "             \
      "(:uuid, :field, :value, :sid, :now) ON CONFLICT (gpu_uuid, field) DO UPDATE SET "           \
      "value = excluded.value, source_id = excluded.source_id, set_at = "                          \
      "excluded.set_at WHERE gpu_provenance.value IS DISTINCT FROM excluded.value OR "             \
      "gpu_provenance.source_id IS DISTINCT FROM excluded.source_id OR gpu_provenance.set_at < "   \
      "excluded.set_at - 60")                                                                      \
    X(PROV_FILL, "INSERT INTO gpu_provenance (gpu_uuid, field, value, source_id, set_at) VALUES "  \
                 "(:uuid, :field, :value, :sid, :now) ON CONFLICT (gpu_uuid, field) DO NOTHING")   \
    X(EVENT_ADD, "INSERT INTO gpu_events (gpu_uuid, at, kind, detail, source_id) VALUES (:uuid, "  \
                 ":now, :kind, :detail, :sid)")                                                    \
    X(GPU_ON_HOST, "SELECT uuid FROM gpus WHERE host_id = :host AND missing_since IS NULL AND "    \
                   "source_id = :sid")                                                             \
    X(GPU_MISSING, "UPDATE gpus SET missing_since = :now WHERE uuid = :uuid AND host_id = :host "  \
                   "AND source_id = :sid AND missing_since IS NULL")                               \
    X(SOURCE_LOCK, "SELECT id FROM sources WHERE id = :id FOR NO KEY UPDATE")                      \
    X(SAMPLE_ADD,                                                                                  \
      "INSERT INTO gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib, "                    \
      "power_avg_w, energy_j, temp_c, ecc_corrected, ecc_uncorrected, xid, source_id) "            \
      "VALUES (:ts, :gid, :ua, :um, :mem, :pw, :en, :temp, :ecc_c, :ecc_u, :xid, "                 \
      ":sid) ON CONFLICT DO NOTHING")                                                              \
    X(SAMPLE_ADD_MANY,                                                                             \
      "INSERT INTO gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib, "                    \
      "power_avg_w, energy_j, temp_c, ecc_corrected, ecc_uncorrected, xid, source_id) "            \
      "SELECT u.*, CAST(:sid AS BIGINT) FROM unnest(CAST(:ts AS BIGINT[]), CAST(:gid AS "          \
      "BIGINT[]), CAST(:ua AS FLOAT8[]), CAST(:um AS FLOAT8[]), CAST(:mem AS FLOAT8[]), "          \
      "CAST(:pw AS FLOAT8[]), CAST(:en AS FLOAT8[]), CAST(:temp AS FLOAT8[]), CAST(:ecc_c AS "     \
      "BIGINT[]), CAST(:ecc_u AS BIGINT[]), CAST(:xid AS BIGINT[])) AS u ON CONFLICT DO NOTHING")  \
    X(GPU_LATEST,                                                                                  \
      "UPDATE gpus SET sample_at = :ts, util_pct = :ua, mem_used_mib = :mem, power_w "             \
      "= :pw, temp_c = :temp, ecc_corrected = COALESCE(:ecc_c, ecc_corrected), "                   \
      "ecc_uncorrected = COALESCE(:ecc_u, ecc_uncorrected), xid_last = COALESCE(:xid, "            \
      "xid_last), reading_source_id = :sid, observed_at = CASE WHEN observed_at IS NULL OR "       \
      "observed_at < :obs THEN :obs ELSE observed_at END WHERE id = :gid AND CASE WHEN "           \
      "source_id = :sid THEN (reading_source_id IS NULL OR reading_source_id <> :sid OR "          \
      "sample_at IS NULL OR sample_at <= :ts) ELSE ((reading_source_id IS NULL OR "                \
      "reading_source_id <> source_id) AND (sample_at IS NULL OR sample_at <= :ts)) END")          \
    X(PROC_ADD, "INSERT INTO gpu_processes (ts, gpu_uuid, pid, name, username, uid, container, "   \
                "pod_uid, pod, namespace, used_mib, source_id) VALUES (:ts, :uuid, :pid, :name, "  \
                ":user, :uid, :container, :pod_uid, :pod, :ns, :mem, :sid) ON CONFLICT DO "        \
                "NOTHING")                                                                         \
    X(POD_ADD, "INSERT INTO gpu_pods (ts, gpu_uuid, namespace, pod, container, source_id) VALUES " \
               "(:ts, :uuid, :ns, :pod, :container, :sid) ON CONFLICT DO NOTHING")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

int store_host_cluster(struct store *st, const char *hostname, char *buf, size_t len)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_HOST_CLUSTER);
    int rc = GI_INTERNAL, step;

    buf[0] = '\0';
    if (s) {
        db_bind_text(s, ":host", hostname);
        step = db_step(c, s);
        if (step == DB_ROW && !db_col_is_null(s, 0))
            gi_strlcpy(buf, db_col_text(s, 0), len);
        rc = step == DB_ROW ? GI_OK : step == DB_DONE ? GI_NOT_FOUND : db_status(step);
        db_reset(s);
    }
    db_conn_put(st, c);
    return rc;
}

/* Records a GPU event inside the caller's transaction. */
static int gpu_event(struct conn *c, int64_t sid, const char *uuid, const char *kind,
                     json_t *detail)
{
    struct db_stmt *s = prep(c, ST_EVENT_ADD);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_text(s, ":uuid", uuid);
        db_bind_int(s, ":now", gi_now());
        db_bind_text(s, ":kind", kind);
        db_bind_json(s, ":detail", detail);
        db_bind_int(s, ":sid", sid);
        rc = db_exec_done(c, s);
    }
    json_decref(detail);
    return rc;
}

/* Whether source sid (of precedence prec) owns the host `name`: nobody
 * owns it yet, it already does, or it outranks the owner. */
static int host_owned(struct conn *c, int64_t sid, int64_t prec, const char *name, bool *own)
{
    struct db_stmt *s = prep(c, ST_HOST_OWNER);
    int step;

    *own = true;
    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":host", name);
    step = db_step(c, s);
    if (step == DB_ROW && !db_col_is_null(s, 0))
        *own = db_col_int(s, 0) == sid || prec > db_col_int(s, 1);
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* Resolves the reporting host to a hosts row, finding its data center by
 * name or by an inventory server of the same name. The labels a host
 * reports about itself win over the source's default cluster, which fills
 * only what is absent; a source that does not own the host only fills what
 * the owner left absent. */
static int ingest_host(struct conn *c, int64_t sid, int64_t prec, const struct gi_host_obs *h,
                       const char *cluster, int64_t *host_id)
{
    struct db_stmt *s;
    int64_t dc = 0;
    char shortname[GI_HOST_LEN], ident[3][GI_HOST_LEN];
    bool own;
    int rc, step;

    if (h->datacenter[0]) {
        if (!(s = prep(c, ST_DC_BY_NAME)))
            return GI_INTERNAL;
        db_bind_text(s, ":name", h->datacenter);
        rc = db_fetch_int(c, s, &dc);
        if (rc != GI_OK && rc != GI_NOT_FOUND)
            return rc;
    }
    if (dc == 0) {
        gi_strlcpy(shortname, h->hostname, sizeof shortname);
        shortname[strcspn(shortname, ".")] = '\0';
        if (!(s = prep(c, ST_HOST_DC)))
            return GI_INTERNAL;
        db_bind_text(s, ":host", h->hostname);
        db_bind_text(s, ":short", shortname);
        rc = db_fetch_int(c, s, &dc);
        if (rc != GI_OK && rc != GI_NOT_FOUND)
            return rc;
    }
    if ((rc = host_owned(c, sid, prec, h->hostname, &own)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_HOST_UPSERT)))
        return GI_INTERNAL;
    db_bind_text(s, ":host", h->hostname);
    db_bind_opt_text(s, ":mid", h->machine_id);
    db_bind_opt_text(s, ":serial", h->serial);
    db_bind_opt_text(s, ":cluster_set", h->cluster);
    db_bind_opt_text(s, ":cluster", cluster);
    db_bind_int(s, ":own", own ? 1 : 0);
    if (dc)
        db_bind_int(s, ":dc", dc);
    else
        db_bind_text(s, ":dc", NULL);
    db_bind_int(s, ":sid", sid);
    db_bind_int(s, ":now", gi_now());
    step = db_step(c, s);
    if (step != DB_ROW) {
        db_reset(s);
        return db_status(step);
    }
    *host_id = db_col_int(s, 0);
    gi_strlcpy(ident[0], db_col_text(s, 1), sizeof ident[0]);
    for (int i = 1; i < 3; i++)
        gi_strlcpy(ident[i], db_col_is_null(s, i + 1) ? "" : db_col_text(s, i + 1),
                   sizeof ident[i]);
    db_reset(s);
    /* The stored identity (after merging) decides whether to re-match. */
    return links_host_seen(c, *host_id, ident[0], ident[1], ident[2]);
}

/* Records which source set one identity field; skips absent values. */
static int prov(struct conn *c, int64_t sid, const char *uuid, const char *field, const char *v)
{
    struct db_stmt *s;

    if (v == NULL || *v == '\0')
        return GI_OK;
    if (!(s = prep(c, ST_PROV_SET)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    db_bind_text(s, ":field", field);
    db_bind_text(s, ":value", v);
    db_bind_int(s, ":sid", sid);
    db_bind_int(s, ":now", gi_now());
    return db_exec_done(c, s);
}

/* MIG instances reported without a UUID (dcgm-exporter) are named
 * "MIG-<parent>/<GPU instance>"; one reported with NVML's UUID is the same
 * instance. Sets canon to the name the instance is stored under: an
 * existing real UUID wins over the made-up name, and a record stored under
 * the made-up name is renamed when the real UUID arrives. */
static int mig_canonical(struct conn *c, const struct gi_gpu_obs *g, char canon[GI_UUID_LEN])
{
    /* Provenance follows the rename by its foreign key (ON UPDATE CASCADE). */
    static const enum stmt_id renames[] = {ST_RENAME_GPU, ST_RENAME_EVENTS, ST_RENAME_PROCS,
                                           ST_RENAME_PODS};
    char made_up[GI_UUID_LEN], other[GI_UUID_LEN] = "";
    struct db_stmt *s;
    int64_t n = 0;
    int rc, step;

    gi_strlcpy(canon, g->uuid, GI_UUID_LEN);
    if (g->parent_uuid[0] == '\0' || g->mig_instance < 0)
        return GI_OK;
    snprintf(made_up, sizeof made_up, "MIG-%.80s/%d", g->parent_uuid, g->mig_instance);
    if (!(s = prep(c, ST_MIG_OTHER)))
        return GI_INTERNAL;
    db_bind_text(s, ":parent", g->parent_uuid);
    db_bind_int(s, ":inst", g->mig_instance);
    db_bind_text(s, ":uuid", g->uuid);
    step = db_step(c, s);
    if (step == DB_ROW)
        gi_strlcpy(other, db_col_text(s, 0), sizeof other);
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (other[0] == '\0')
        return GI_OK;
    if (strcmp(g->uuid, made_up) == 0) {
        gi_strlcpy(canon, other, GI_UUID_LEN); /* the real UUID is known */
        return GI_OK;
    }
    if (strcmp(other, made_up) != 0)
        return GI_OK; /* two real UUIDs: leave both */
    if (!(s = prep(c, ST_GPU_EXISTS)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", g->uuid);
    if ((rc = db_fetch_int(c, s, &n)) != GI_OK || n > 0)
        return rc;
    for (size_t i = 0; i < sizeof renames / sizeof *renames; i++) {
        if (!(s = prep(c, renames[i])))
            return GI_INTERNAL;
        db_bind_text(s, ":to", g->uuid);
        db_bind_text(s, ":from", made_up);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* The source a batch comes from: its id, name, precedence and the label
 * defaults (team, env, cluster) that fill only what a report leaves absent. */
struct reporter {
    int64_t id, precedence;
    char name[64];
    const char *defaults[3];
};

/* What the store holds about a GPU before a report is applied. */
struct gpu_ident {
    bool known;
    int64_t id, host_id, owner, owner_precedence;
    char serial[GI_SERIAL_LEN], hostname[GI_HOST_LEN], model[GI_NAME_LEN], owner_name[64];
};

static void col_copy(struct db_stmt *s, int i, char *out, size_t len)
{
    out[0] = '\0';
    if (!db_col_is_null(s, i))
        gi_strlcpy(out, db_col_text(s, i), len);
}

static int gpu_ident_load(struct conn *c, const char *uuid, struct gpu_ident *id)
{
    struct db_stmt *s = prep(c, ST_GPU_IDENT);
    int step;

    memset(id, 0, sizeof *id);
    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    step = db_step(c, s);
    if (step == DB_ROW) {
        id->known = true;
        id->host_id = db_col_int(s, 0);
        col_copy(s, 1, id->serial, sizeof id->serial);
        col_copy(s, 2, id->hostname, sizeof id->hostname);
        col_copy(s, 3, id->model, sizeof id->model);
        id->id = db_col_int(s, 4);
        id->owner = db_col_int(s, 5); /* 0: none (NULL) */
        id->owner_precedence = db_col_int(s, 6);
        col_copy(s, 7, id->owner_name, sizeof id->owner_name);
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* One identity field as a non-owning source reports it. A differing value
 * is kept in gpu_conflicts (never written over the owner's) and a new
 * disagreement is a `conflict` event; an agreeing or absent value clears
 * the field's conflict. */
static int ident_conflict(struct conn *c, const struct reporter *src, const struct gpu_ident *id,
                          const char *uuid, const char *field, const char *theirs, const char *ours,
                          int64_t *events)
{
    struct db_stmt *s;
    bool same = false;
    int rc, step;

    if (theirs[0] == '\0' || ours[0] == '\0' || strcmp(theirs, ours) == 0) {
        if (!(s = prep(c, ST_CONFLICT_DEL)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", id->id);
        db_bind_int(s, ":sid", src->id);
        db_bind_text(s, ":field", field);
        return db_exec_done(c, s);
    }
    if (!(s = prep(c, ST_CONFLICT_GET)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", id->id);
    db_bind_int(s, ":sid", src->id);
    db_bind_text(s, ":field", field);
    step = db_step(c, s);
    if (step == DB_ROW)
        same = !db_col_is_null(s, 0) && !db_col_is_null(s, 1) &&
               strcmp(db_col_text(s, 0), theirs) == 0 && strcmp(db_col_text(s, 1), ours) == 0;
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (!(s = prep(c, ST_CONFLICT_SET)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", id->id);
    db_bind_int(s, ":sid", src->id);
    db_bind_text(s, ":field", field);
    db_bind_text(s, ":theirs", theirs);
    db_bind_text(s, ":ours", ours);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK || same)
        return rc;
    (*events)++;
    return gpu_event(c, src->id, uuid, "conflict",
                     json_pack("{s:s, s:s, s:s, s:s}", "source", src->name, "field", field,
                               "theirs", theirs, "ours", ours));
}

/* Records which source first set a field the owner left absent. */
static int prov_fill(struct conn *c, int64_t sid, const char *uuid, const char *field,
                     const char *v)
{
    struct db_stmt *s;

    if (v == NULL || *v == '\0')
        return GI_OK;
    if (!(s = prep(c, ST_PROV_FILL)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    db_bind_text(s, ":field", field);
    db_bind_text(s, ":value", v);
    db_bind_int(s, ":sid", sid);
    db_bind_int(s, ":now", gi_now());
    return db_exec_done(c, s);
}

/* Binds the GPU's own fields, and the source's team and env defaults for
 * what the report leaves absent, shared by the owner's upsert and another
 * source's fill. */
static void bind_gpu_fields(struct db_stmt *s, const struct gi_gpu_obs *g, int64_t host_id,
                            const struct reporter *src)
{
    static const char *const vendors[] = {NULL, "nvidia", "amd", "intel"};

    db_bind_opt_text(s, ":parent", g->parent_uuid);
    db_bind_int(s, ":host", host_id);
    db_bind_opt_int(s, ":idx", g->index);
    db_bind_text(s, ":vendor", vendors[g->vendor]);
    db_bind_opt_text(s, ":model", g->name);
    db_bind_opt_text(s, ":serial", g->serial);
    db_bind_opt_text(s, ":bus", g->pci_bus_id);
    db_bind_dbl(s, ":mem", g->memory_total_mib);
    db_bind_opt_text(s, ":driver", g->driver);
    db_bind_opt_text(s, ":vbios", g->vbios);
    db_bind_opt_int(s, ":mig", g->mig_mode);
    db_bind_opt_text(s, ":profile", g->mig_profile);
    db_bind_opt_int(s, ":inst", g->mig_instance);
    db_bind_opt_text(s, ":team", g->team[0] ? g->team : src->defaults[0]);
    db_bind_opt_text(s, ":env", g->env[0] ? g->env : src->defaults[1]);
}

/* Stores the row-remapping state a GPU reported (fields it left absent
 * keep their value) and records a `remap_failure` event when a failure is
 * reported that was not before. */
static int ingest_remap(struct conn *c, int64_t sid, int64_t gpu_id, const struct gi_gpu_obs *g,
                        int64_t *events)
{
    struct db_stmt *s;
    int64_t before = -1;
    int rc;

    if (g->remap_corrected < 0 && g->remap_uncorrectable < 0 && g->remap_pending < 0 &&
        g->remap_failure < 0)
        return GI_OK;
    if (g->remap_failure == 1) {
        if (!(s = prep(c, ST_GPU_REMAP_GET)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", gpu_id);
        if ((rc = db_step(c, s)) == DB_ROW && !db_col_is_null(s, 0))
            before = db_col_int(s, 0);
        db_reset(s);
        if (rc != DB_ROW && rc != DB_DONE)
            return db_status(rc);
    }
    if (!(s = prep(c, ST_GPU_REMAP_SET)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gpu_id);
    db_bind_opt_int(s, ":rc", g->remap_corrected);
    db_bind_opt_int(s, ":ru", g->remap_uncorrectable);
    db_bind_opt_int(s, ":rp", g->remap_pending);
    db_bind_opt_int(s, ":rf", g->remap_failure);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (g->remap_failure == 1 && before != 1) {
        rc = gpu_event(
            c, sid, g->uuid, "remap_failure",
            json_pack("{s:I, s:I}", "uncorrectable_rows",
                      (json_int_t)(g->remap_uncorrectable < 0 ? 0 : g->remap_uncorrectable),
                      "correctable_rows",
                      (json_int_t)(g->remap_corrected < 0 ? 0 : g->remap_corrected)));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }
    return GI_OK;
}

/* A report of a GPU by a source that does not own it: its identity (host,
 * serial, model) is compared, never written over the owner's; it only
 * fills fields the owner left absent. Neither last_seen_at, freshness nor
 * missing_since moves. */
static int ingest_gpu_foreign(struct conn *c, const struct reporter *src,
                              const struct gpu_ident *id, int64_t host_id,
                              const struct gi_host_obs *host, const struct gi_gpu_obs *g,
                              int64_t *events)
{
    struct db_stmt *s;
    int rc;

    if ((rc = ident_conflict(c, src, id, g->uuid, "host", host->hostname, id->hostname, events)) !=
            GI_OK ||
        (rc = ident_conflict(c, src, id, g->uuid, "serial", g->serial, id->serial, events)) !=
            GI_OK ||
        (rc = ident_conflict(c, src, id, g->uuid, "model", g->name, id->model, events)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_GPU_FILL)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", id->id);
    bind_gpu_fields(s, g, host_id, src);
    db_bind_opt_text(s, ":cluster_set", host->cluster);
    db_bind_opt_text(s, ":cluster", src->defaults[2]);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if ((rc = prov_fill(c, src->id, g->uuid, "host", id->hostname[0] ? NULL : host->hostname)) ||
        (rc = prov_fill(c, src->id, g->uuid, "model", g->name)) ||
        (rc = prov_fill(c, src->id, g->uuid, "serial", g->serial)) ||
        (rc = prov_fill(c, src->id, g->uuid, "pci_bus_id", g->pci_bus_id)) ||
        (rc = prov_fill(c, src->id, g->uuid, "driver", g->driver)))
        return rc;
    return GI_OK;
}

/* Upserts one GPU with provenance and identity events. The source owns it
 * when nobody does yet, when it already does, or when it outranks the
 * owner by precedence (an `owner_changed` event); otherwise the report
 * goes to ingest_gpu_foreign(). `observed` is when the report's reading
 * was taken, 0 when the caller settles it later (ingest_observed()).
 * *owned tells the caller which way it went. */
static int ingest_gpu(struct conn *c, const struct reporter *src, int64_t host_id,
                      const struct gi_host_obs *host, int64_t observed,
                      const struct gi_gpu_obs *seen, int64_t *events, int64_t *gpu_id,
                      char canon[GI_UUID_LEN], bool *owned)
{
    struct gi_gpu_obs obs = *seen, *g = &obs;
    const char *hostname = host->hostname;
    int64_t sid = src->id;
    struct gpu_ident id;
    struct db_stmt *s;
    char num[32];
    int rc, step;

    if ((rc = mig_canonical(c, seen, canon)) != GI_OK)
        return rc;
    gi_strlcpy(obs.uuid, canon, sizeof obs.uuid);
    if ((rc = gpu_ident_load(c, g->uuid, &id)) != GI_OK)
        return rc;
    *owned =
        !(id.known && id.owner != 0 && id.owner != sid && src->precedence <= id.owner_precedence);
    if (!*owned) {
        *gpu_id = id.id;
        return ingest_gpu_foreign(c, src, &id, host_id, host, g, events);
    }
    if (id.known && id.owner != 0 && id.owner != sid) {
        rc = gpu_event(c, sid, g->uuid, "owner_changed",
                       json_pack("{s:s, s:s}", "from", id.owner_name, "to", src->name));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }
    if (id.known) {
        /* What this source disagreed on as a non-owner is now its own. */
        if (!(s = prep(c, ST_CONFLICT_DEL)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", id.id);
        db_bind_int(s, ":sid", sid);
        db_bind_text(s, ":field", NULL);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }

    if (id.known && id.host_id != 0 && id.host_id != host_id) {
        rc = gpu_event(c, sid, g->uuid, "host_changed",
                       json_pack("{s:s, s:s}", "from_host", id.hostname, "to_host", hostname));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }
    if (g->serial[0]) {
        if (!(s = prep(c, ST_GPU_SERIAL_OTHER)))
            return GI_INTERNAL;
        db_bind_text(s, ":serial", g->serial);
        db_bind_text(s, ":uuid", g->uuid);
        step = db_step(c, s);
        if (step == DB_ROW) {
            char other[GI_UUID_LEN];
            gi_strlcpy(other, db_col_text(s, 0), sizeof other);
            db_reset(s);
            rc = gpu_event(c, sid, g->uuid, "serial_conflict",
                           json_pack("{s:s, s:s}", "serial", g->serial, "other_uuid", other));
            if (rc != GI_OK)
                return rc;
            (*events)++;
        } else {
            db_reset(s);
            if (step != DB_DONE)
                return db_status(step);
        }
        if (id.known && id.serial[0] && strcmp(id.serial, g->serial) != 0) {
            rc = gpu_event(c, sid, g->uuid, "serial_changed",
                           json_pack("{s:s, s:s}", "from", id.serial, "to", g->serial));
            if (rc != GI_OK)
                return rc;
            (*events)++;
        }
    }
    if (!id.known) {
        rc = gpu_event(c, sid, g->uuid, "discovered", json_pack("{s:s}", "host", hostname));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }

    if (!(s = prep(c, ST_GPU_UPSERT)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", g->uuid);
    bind_gpu_fields(s, g, host_id, src);
    db_bind_opt_text(s, ":team_set", g->team);
    db_bind_opt_text(s, ":env_set", g->env);
    /* The cluster the host reports about itself wins; the source's
     * default fills only what is absent. */
    db_bind_opt_text(s, ":cluster_set", host->cluster);
    db_bind_opt_text(s, ":cluster", src->defaults[2]);
    db_bind_int(s, ":sid", sid);
    db_bind_int(s, ":now", gi_now());
    if (observed > 0)
        db_bind_int(s, ":obs", observed);
    else
        db_bind_text(s, ":obs", NULL);
    step = db_step(c, s);
    if (step == DB_ROW)
        *gpu_id = db_col_int(s, 0);
    db_reset(s);
    if (step != DB_ROW)
        return db_status(step);
    /* A new GPU, or one on another host, may fall under other rules. */
    if ((!id.known || id.host_id != host_id) && (rc = owner_refresh(c, *gpu_id)) != GI_OK)
        return rc;
    if ((rc = ingest_remap(c, sid, *gpu_id, g, events)) != GI_OK)
        return rc;

    snprintf(num, sizeof num, "%.0f", g->memory_total_mib);
    if ((rc = prov(c, sid, g->uuid, "host", hostname)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "model", g->name)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "serial", g->serial)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "pci_bus_id", g->pci_bus_id)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "driver", g->driver)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "memory_total_mib", isnan(g->memory_total_mib) ? NULL : num)))
        return rc;
    return GI_OK;
}

/* A batch GPU's uuid with its row id, sorted for lookup by uuid. */
struct gpu_ref {
    const char *uuid;        /* as the batch names it */
    char canon[GI_UUID_LEN]; /* as it is stored (see mig_canonical) */
    int64_t id;
    const struct gi_sample *newest;
    int64_t oldest_ts; /* of the batch's samples of this GPU */
    int64_t anon;      /* anonymous processes stored for this GPU in this batch */
    bool owned;        /* the batch's source owns it */
    bool stamped;      /* the observation carries its own time */
};

static int ref_cmp(const void *a, const void *b)
{
    return strcmp(((const struct gpu_ref *)a)->uuid, ((const struct gpu_ref *)b)->uuid);
}

/* The stored name of a GPU the batch names `uuid` (itself when unknown). */
static const char *canon_of(struct gpu_ref *refs, size_t nrefs, const char *uuid)
{
    struct gpu_ref key = {.uuid = uuid}, *ref = bsearch(&key, refs, nrefs, sizeof *refs, ref_cmp);
    return ref ? ref->canon : uuid;
}

/* Marks GPUs that this host reported before but not now as missing;
 * only the GPUs this source owns: another source's report never makes a
 * GPU missing. */
static int ingest_missing(struct conn *c, int64_t sid, int64_t host_id, const struct gi_batch *b,
                          const struct gpu_ref *refs, size_t nrefs, int64_t *events)
{
    struct db_stmt *s = prep(c, ST_GPU_ON_HOST);
    json_t *gone = json_array();
    size_t i;
    json_t *v;
    int rc = GI_OK, step;

    if (!s) {
        json_decref(gone);
        return GI_INTERNAL;
    }
    db_bind_int(s, ":host", host_id);
    db_bind_int(s, ":sid", sid);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *u = db_col_text(s, 0);
        bool present = false;
        for (size_t k = 0; k < nrefs && !present; k++)
            present = strcmp(refs[k].canon, u) == 0;
        if (!present)
            json_array_append_new(gone, json_string(u));
    }
    db_reset(s);
    if (step != DB_DONE)
        rc = db_status(step);
    json_array_foreach(gone, i, v) {
        if (rc != GI_OK)
            break;
        if (!(s = prep(c, ST_GPU_MISSING))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_text(s, ":uuid", json_string_value(v));
        db_bind_int(s, ":now", gi_now());
        db_bind_int(s, ":host", host_id);
        db_bind_int(s, ":sid", sid);
        /* The update re-checks the row as it is now: a batch of another
         * host that took the GPU over meanwhile (on PostgreSQL, batches
         * of different hosts run at once) keeps it present. */
        if ((rc = db_exec_done(c, s)) != GI_OK || db_changes(c) == 0)
            continue;
        rc = gpu_event(c, sid, json_string_value(v), "missing_from_host",
                       json_pack("{s:s}", "batch_id", b->batch_id));
        (*events)++;
    }
    json_decref(gone);
    return rc;
}

/* The sample columns after ts and gpu_id, in the statements' order. */
#define SAMPLE_DBL(x)                                                                              \
    {                                                                                              \
        (x)->util_avg, (x)->util_max, (x)->mem_used_mib, (x)->power_avg_w, (x)->energy_j,          \
            (x)->temp_c                                                                            \
    }
#define SAMPLE_INT(x)                                                                              \
    {                                                                                              \
        (x)->ecc_corrected, (x)->ecc_uncorrected, (x)->xid                                         \
    }

static const char *const sample_params[] = {":ts", ":gid",  ":ua",    ":um",    ":mem", ":pw",
                                            ":en", ":temp", ":ecc_c", ":ecc_u", ":xid", ":sid"};

/* Finds each sample's GPU and notes every GPU's newest sample. */
static int samples_resolve(const struct gi_batch *b, struct gpu_ref *refs, size_t nrefs,
                           int64_t *gid)
{
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        struct gpu_ref key = {.uuid = x->gpu_uuid}, *ref;
        ref = bsearch(&key, refs, nrefs, sizeof *refs, ref_cmp);
        if (ref == NULL)
            return GI_INVALID; /* the parser guarantees every sample names a batch GPU */
        if (ref->newest == NULL || x->ts < ref->oldest_ts)
            ref->oldest_ts = x->ts;
        if (ref->newest == NULL || x->ts >= ref->newest->ts)
            ref->newest = x;
        gid[i] = ref->id;
    }
    return GI_OK;
}

/* PostgreSQL: the batch's samples in one statement, each column one
 * array parameter, so the insert costs one round trip, not one per row. */
static int samples_insert_many(struct conn *c, int64_t sid, const struct gi_batch *b,
                               const int64_t *gid, int64_t *stored)
{
    struct db_array a[11] = {0};
    struct db_stmt *s = prep(c, ST_SAMPLE_ADD_MANY);
    int rc = GI_INTERNAL;

    if (!s)
        return GI_INTERNAL;
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        const double d[6] = SAMPLE_DBL(x);
        const int64_t n[3] = SAMPLE_INT(x);
        db_array_int(&a[0], x->ts);
        db_array_int(&a[1], gid[i]);
        for (int k = 0; k < 6; k++)
            db_array_dbl(&a[2 + k], d[k]);
        for (int k = 0; k < 3; k++)
            db_array_opt_int(&a[8 + k], n[k]);
    }
    for (int k = 0; k < 11; k++) {
        if (a[k].failed)
            goto cleanup;
        db_bind_array(s, sample_params[k], &a[k]);
    }
    db_bind_int(s, ":sid", sid);
    if ((rc = db_exec_done(c, s)) == GI_OK)
        *stored += db_changes(c);
cleanup:
    for (int k = 0; k < 11; k++)
        db_array_free(&a[k]);
    return rc;
}

/* SQLite: one prepared insert per row, the fastest form there; the
 * hottest statement binds by position, looked up once per batch. */
static int samples_insert_each(struct conn *c, int64_t sid, const struct gi_batch *b,
                               const int64_t *gid, int64_t *stored)
{
    struct db_stmt *s;
    int rc, ix[12];

    if (!(s = prep(c, ST_SAMPLE_ADD)))
        return GI_INTERNAL;
    for (int k = 0; k < 12; k++)
        ix[k] = db_param_index(s, sample_params[k]);
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        const double d[6] = SAMPLE_DBL(x);
        const int64_t n[3] = SAMPLE_INT(x);
        db_bind_int_at(s, ix[0], x->ts);
        db_bind_int_at(s, ix[1], gid[i]);
        for (int k = 0; k < 6; k++) {
            if (isnan(d[k]))
                db_bind_null_at(s, ix[2 + k]);
            else
                db_bind_dbl_at(s, ix[2 + k], d[k]);
        }
        for (int k = 0; k < 3; k++) {
            if (n[k] < 0)
                db_bind_null_at(s, ix[8 + k]);
            else
                db_bind_int_at(s, ix[8 + k], n[k]);
        }
        db_bind_int_at(s, ix[11], sid);
        rc = db_step(c, s);
        db_reset(s);
        if (rc != DB_DONE)
            return db_status(rc);
        *stored += db_changes(c);
    }
    return GI_OK;
}

/* Inserts samples (kept per source) and moves each GPU's newest values
 * onto its record: the owning source's newest sample; another source's
 * only while the record holds no sample from its owner. The shown sample
 * also advances the GPU's observed_at (never past the arrival time).
 * refs (sorted by uuid) maps the batch's GPUs to their row ids. */
static int ingest_samples(struct conn *c, int64_t sid, const struct gi_batch *b,
                          struct gpu_ref *refs, size_t nrefs, int64_t *stored)
{
    struct db_stmt *s;
    int64_t *gid = b->nsamples ? malloc(b->nsamples * sizeof *gid) : NULL;
    int rc;

    if (b->nsamples && gid == NULL)
        return GI_INTERNAL;
    rc = samples_resolve(b, refs, nrefs, gid);
    /* PostgreSQL copies the rows; when one was already stored (a re-sent
     * interval) the copy undoes itself and the insert skips those. */
    if (rc == GI_OK && b->nsamples && db_dialect(c) == DB_PG &&
        (rc = samples_copy(c, sid, b, gid, stored)) == GI_CONFLICT)
        rc = samples_insert_many(c, sid, b, gid, stored);
    else if (rc == GI_OK && b->nsamples && db_dialect(c) != DB_PG)
        rc = samples_insert_each(c, sid, b, gid, stored);
    free(gid);
    if (rc != GI_OK)
        return rc;
    /* The newest sample of each GPU in the batch updates its record. */
    for (size_t k = 0; k < nrefs; k++) {
        const struct gi_sample *best = refs[k].newest;
        if (best == NULL)
            continue;
        if (!(s = prep(c, ST_GPU_LATEST)))
            return GI_INTERNAL;
        db_bind_int(s, ":ts", best->ts);
        db_bind_int(s, ":obs", best->ts < gi_now() ? best->ts : gi_now());
        db_bind_int(s, ":sid", sid);
        db_bind_int(s, ":gid", refs[k].id);
        db_bind_dbl(s, ":ua", best->util_avg);
        db_bind_dbl(s, ":mem", best->mem_used_mib);
        db_bind_dbl(s, ":pw", best->power_avg_w);
        db_bind_dbl(s, ":temp", best->temp_c);
        db_bind_opt_int(s, ":ecc_c", best->ecc_corrected);
        db_bind_opt_int(s, ":ecc_u", best->ecc_uncorrected);
        db_bind_opt_int(s, ":xid", best->xid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
        /* The usage rollups of the hours these samples touch are redone. */
        if ((rc = usage_mark(c, refs[k].id, refs[k].oldest_ts, best->ts)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* Freshness of the owned GPUs this batch carries no sample for and no
 * observation time: their reading was taken with the batch's newest
 * sample (now when it has none). A GPU with its own samples was settled
 * by ingest_samples(): its own newest sample, not its neighbours'. */
static int ingest_observed(struct conn *c, const struct gpu_ref *refs, size_t nrefs, int64_t when)
{
    struct db_stmt *s;
    int rc;

    for (size_t k = 0; k < nrefs; k++) {
        if (!refs[k].owned || refs[k].newest || refs[k].stamped)
            continue;
        if (!(s = prep(c, ST_GPU_OBSERVED_SET)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", refs[k].id);
        db_bind_int(s, ":obs", when);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* The time a batch's processes and pods were seen: its newest sample's,
 * or now when it has none. */
static int64_t batch_time(const struct gi_batch *b)
{
    int64_t newest = 0;

    for (size_t i = 0; i < b->nsamples; i++)
        if (b->samples[i].ts > newest)
            newest = b->samples[i].ts;
    return newest ? newest : gi_now();
}

/* Stores the batch's processes. An anonymous process (pid hidden from
 * the reporter, pid < 0) is stored under a synthetic negative pid, -1,
 * -2, … per GPU and batch, so that several of them on one GPU at one
 * time are all kept under the key (ts, gpu_uuid, pid); readers show a
 * negative pid as null. */
static int ingest_procs(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                        size_t nrefs, int64_t *stored)
{
    int64_t newest = batch_time(b), pid;
    struct db_stmt *s;
    int rc;

    for (size_t i = 0; i < b->set.nprocs; i++) {
        const struct gi_proc_obs *p = &b->set.procs[i];
        struct gpu_ref key = {.uuid = p->gpu_uuid}, *ref;
        if (!(s = prep(c, ST_PROC_ADD)))
            return GI_INTERNAL;
        pid = p->pid;
        if (pid < 0) {
            ref = bsearch(&key, refs, nrefs, sizeof *refs, ref_cmp);
            pid = ref ? -++ref->anon : -1;
        }
        db_bind_int(s, ":ts", p->ts_ms > 0 ? p->ts_ms / 1000 : newest);
        db_bind_text(s, ":uuid", canon_of(refs, nrefs, p->gpu_uuid));
        db_bind_int(s, ":pid", pid);
        db_bind_opt_text(s, ":name", p->name);
        db_bind_opt_text(s, ":user", p->user);
        db_bind_opt_int(s, ":uid", p->uid);
        db_bind_opt_text(s, ":container", p->container);
        db_bind_opt_text(s, ":pod_uid", p->pod_uid);
        db_bind_opt_text(s, ":pod", p->pod);
        db_bind_opt_text(s, ":ns", p->namespace_);
        db_bind_dbl(s, ":mem", p->used_mib);
        db_bind_int(s, ":sid", sid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
        *stored += db_changes(c);
    }
    return GI_OK;
}

/* Records the pods seen on the batch's GPUs at the newest sample time. */
static int ingest_pods(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                       size_t nrefs)
{
    int64_t newest = batch_time(b);
    struct db_stmt *s;
    int rc;

    for (size_t i = 0; i < b->set.npods; i++) {
        const struct gi_pod_obs *p = &b->set.pods[i];
        if (!(s = prep(c, ST_POD_ADD)))
            return GI_INTERNAL;
        db_bind_int(s, ":ts", newest);
        db_bind_text(s, ":uuid", canon_of(refs, nrefs, p->gpu_uuid));
        db_bind_text(s, ":ns", p->namespace_);
        db_bind_text(s, ":pod", p->pod);
        db_bind_opt_text(s, ":container", p->container);
        db_bind_int(s, ":sid", sid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* Applies one batch inside the caller's transaction; a batch id already
 * applied for this source is skipped (res->duplicate). */
static int ingest_one(struct conn *c, const struct reporter *src, const struct gi_batch *b,
                      struct store_ingest_result *res)
{
    struct db_stmt *s;
    struct gpu_ref *refs = calloc(b->set.ngpus + 1, sizeof *refs);
    int64_t source_id = src->id, host_id = 0, now = gi_now(), newest = batch_time(b);
    const char *const *defaults = src->defaults;
    int rc = GI_INTERNAL;

    memset(res, 0, sizeof *res);
    if (refs == NULL || !(s = prep(c, ST_BATCH_ADD)))
        goto cleanup;
    db_bind_int(s, ":sid", source_id);
    db_bind_text(s, ":bid", b->batch_id);
    db_bind_int(s, ":now", gi_now());
    db_bind_int(s, ":n", (int64_t)b->nsamples);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (db_changes(c) == 0) {
        /* The unique key, not a check before the insert, makes a batch
         * sent twice (even to two replicas at once) count once. */
        res->duplicate = true;
        goto cleanup;
    }
    if ((rc = ingest_host(c, source_id, src->precedence, &b->host, defaults[2], &host_id)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < b->set.ngpus; i++) {
        /* A GPU observation stamped with its time (a pull) was taken then;
         * the others are settled by ingest_observed(). */
        int64_t ts = b->set.gpus[i].ts_ms / 1000;
        refs[i].uuid = b->set.gpus[i].uuid;
        refs[i].stamped = ts > 0;
        rc = ingest_gpu(c, src, host_id, &b->host, ts < now ? ts : now, &b->set.gpus[i],
                        &res->events, &refs[i].id, refs[i].canon, &refs[i].owned);
        if (rc != GI_OK)
            goto cleanup;
    }
    qsort(refs, b->set.ngpus, sizeof *refs, ref_cmp);
    res->gpus = (int64_t)b->set.ngpus;
    if (!b->partial && b->set.ngpus > 0 &&
        (rc = ingest_missing(c, source_id, host_id, b, refs, b->set.ngpus, &res->events)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_samples(c, source_id, b, refs, b->set.ngpus, &res->samples)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_observed(c, refs, b->set.ngpus, newest < now ? newest : now)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_procs(c, source_id, b, refs, b->set.ngpus, &res->processes)) != GI_OK)
        goto cleanup;
    rc = ingest_pods(c, source_id, b, refs, b->set.ngpus);
cleanup:
    free(refs);
    return rc;
}

/* Locks the source's row until the transaction ends. */
static int source_lock(struct conn *c, int64_t source_id)
{
    struct db_stmt *s = prep(c, ST_SOURCE_LOCK);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", source_id);
    step = db_step(c, s);
    db_reset(s);
    return db_status(step);
}

/* Applies n batches inside the caller's write transaction on c. */
static int ingest_many_tx(struct conn *c, int64_t source_id, const struct gi_batch *b, size_t n,
                          struct store_ingest_result *res)
{
    struct db_stmt *s;
    char team[GI_LABEL_LEN] = "", env[GI_LABEL_LEN] = "", cluster[GI_LABEL_LEN] = "";
    struct reporter src = {.id = source_id, .defaults = {team, env, cluster}};
    const char *warning = NULL;
    int64_t warnings = 0;
    int rc, step;

    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SOURCE_DEFAULTS)))
        goto cleanup;
    db_bind_int(s, ":id", source_id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        for (int i = 0; i < 3; i++)
            if (!db_col_is_null(s, i))
                gi_strlcpy((char *)src.defaults[i], db_col_text(s, i), GI_LABEL_LEN);
        src.precedence = db_col_int(s, 3);
        col_copy(s, 4, src.name, sizeof src.name);
    }
    db_reset(s);
    /* Most of a batch is short writes whose answers nothing reads
     * (provenance, newest values, events, usage marks): they go without
     * waiting, and the next read collects their answers. */
    rc = db_defer(c, true);
    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        rc = ingest_one(c, &src, &b[i], &res[i]);
        if (rc == GI_OK && !res[i].duplicate && b[i].set.nwarnings > 0) {
            warnings += (int64_t)b[i].set.nwarnings;
            warning = b[i].set.warning;
        }
    }
    if (rc != GI_OK)
        goto cleanup;
    /* Batches of one source on other hosts may run at once (PostgreSQL):
     * the source's row is locked, last, before its GPUs are counted, so
     * the count's statement starts after the other batch committed and
     * sees its GPUs. */
    if (db_dialect(c) == DB_PG && (rc = source_lock(c, source_id)) != GI_OK)
        goto cleanup;
    /* What was dropped on the way in is counted on the source (the last
     * batch's message is kept). */
    if (warnings > 0) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_SOURCE_WARN)))
            goto cleanup;
        db_bind_int(s, ":n", warnings);
        db_bind_text(s, ":msg", warning);
        db_bind_int(s, ":now", gi_now());
        db_bind_int(s, ":id", source_id);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SOURCE_OK)))
        goto cleanup;
    db_bind_int(s, ":now", gi_now());
    db_bind_int(s, ":id", source_id);
    rc = db_exec_done(c, s);
cleanup:
    /* Whatever was still due answers now: its failure is the batch's. */
    step = db_defer(c, false);
    return rc != GI_OK ? rc : step;
}

/* The keys a push of n batches locks (db_tx_begin_keyed()): each host
 * and each GPU by its name, and a MIG instance also by the name it has
 * when reported without a UUID (see mig_canonical()), so that two
 * reports of one instance under either name wait for each other. Returns
 * how many were set, or DB_LOCK_KEYS_MAX + 1 when they do not fit: the
 * batches then take the writer lock exclusively. made_up holds the MIG
 * names. */
static int ingest_keys(const struct gi_batch *b, size_t n, int *kinds, const char **names,
                       char (*made_up)[GI_UUID_LEN])
{
    int k = 0, m = 0;

    for (size_t i = 0; i < n; i++) {
        if (k + 1 > DB_LOCK_KEYS_MAX)
            return DB_LOCK_KEYS_MAX + 1;
        kinds[k] = DB_LOCK_HOST;
        names[k++] = b[i].host.hostname;
        for (size_t j = 0; j < b[i].set.ngpus; j++) {
            const struct gi_gpu_obs *g = &b[i].set.gpus[j];
            bool mig = g->parent_uuid[0] != '\0' && g->mig_instance >= 0;
            if (k + 1 + (mig ? 1 : 0) > DB_LOCK_KEYS_MAX)
                return DB_LOCK_KEYS_MAX + 1;
            kinds[k] = DB_LOCK_GPU;
            names[k++] = g->uuid;
            if (mig) {
                snprintf(made_up[m], GI_UUID_LEN, "MIG-%.80s/%d", g->parent_uuid, g->mig_instance);
                kinds[k] = DB_LOCK_GPU;
                names[k++] = made_up[m++];
            }
        }
    }
    return k;
}

int store_ingest_many(struct store *st, int64_t source_id, const struct gi_batch *b, size_t n,
                      struct store_ingest_result *res)
{
    int kinds[DB_LOCK_KEYS_MAX];
    const char *names[DB_LOCK_KEYS_MAX];
    char made_up[DB_LOCK_KEYS_MAX][GI_UUID_LEN];
    int nkeys = ingest_keys(b, n, kinds, names, made_up);
    struct conn *c = db_conn_get(st);
    /* A push names its rows: batches of other hosts run beside it. */
    int rc = db_tx_begin_keyed(c, kinds, names, nkeys);

    if (rc == GI_OK)
        rc = ingest_many_tx(c, source_id, b, n, res);
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_ingest_as(struct store *st, const char *name, const char *kind, const struct gi_batch *b,
                    size_t n, bool dry_run, struct store_ingest_result *res)
{
    struct conn *c = db_conn_get(st);
    int64_t sid = 0;
    int rc = db_tx_begin(c);

    if (rc == GI_OK)
        rc = source_ensure(c, name, kind, NULL, NULL, NULL, &sid);
    if (rc == GI_OK)
        rc = ingest_many_tx(c, sid, b, n, res);
    /* A rehearsal runs every statement and constraint, then undoes them
     * (db_tx_end rolls back for any status but GI_OK). */
    if (rc == GI_OK && dry_run)
        db_tx_end(c, GI_CONFLICT);
    else
        rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_ingest(struct store *st, int64_t source_id, const struct gi_batch *b,
                 struct store_ingest_result *res)
{
    return store_ingest_many(st, source_id, b, 1, res);
}
