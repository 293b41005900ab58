/* The ingest path: a batch from a reporting source is applied in one
 * writing transaction: hosts, GPU identity and its conflicts with other
 * sources, provenance, samples, processes, pods, and the GPUs a host report
 * stopped listing. */
#include "store/store_int.h"
#include "core/log.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "store/ingest_int.h"
#include "store/links.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The owner's upsert of a GPU; a GPU the batch's identity read found needs
 * no id back, so that PostgreSQL sends it without waiting. */
#define GPU_UPSERT_SQL                                                                             \
    "INSERT INTO gpus (uuid, parent_uuid, host_id, idx, vendor, model, serial, pci_bus_id, "       \
    "memory_total_mib, driver, vbios, mig_mode, mig_profile, mig_instance, team, env, cluster, "   \
    "source_id, first_seen_at, last_seen_at, observed_at) VALUES (:uuid, :parent, :host, :idx, "   \
    ":vendor, :model, :serial, :bus, :mem, :driver, :vbios, :mig, :profile, :inst, :team, :env, "  \
    "COALESCE(:cluster_set, :cluster), :sid, :now, :now, :obs) ON CONFLICT (uuid) DO UPDATE SET "  \
    "parent_uuid = COALESCE(excluded.parent_uuid, gpus.parent_uuid), host_id = excluded.host_id, " \
    "idx = COALESCE(excluded.idx, gpus.idx), vendor = COALESCE(excluded.vendor, gpus.vendor), "    \
    "model = COALESCE(excluded.model, gpus.model), serial = COALESCE(excluded.serial, "            \
    "gpus.serial), pci_bus_id = COALESCE(excluded.pci_bus_id, gpus.pci_bus_id), "                  \
    "memory_total_mib = COALESCE(excluded.memory_total_mib, gpus.memory_total_mib), driver = "     \
    "COALESCE(excluded.driver, gpus.driver), vbios = COALESCE(excluded.vbios, gpus.vbios), "       \
    "mig_mode = COALESCE(excluded.mig_mode, gpus.mig_mode), mig_profile = "                        \
    "COALESCE(excluded.mig_profile, gpus.mig_profile), mig_instance = "                            \
    "COALESCE(excluded.mig_instance, gpus.mig_instance), team = COALESCE(:team_set, gpus.team, "   \
    "excluded.team), env = COALESCE(:env_set, gpus.env, excluded.env), cluster = "                 \
    "COALESCE(:cluster_set, gpus.cluster, :cluster), source_id = excluded.source_id, "             \
    "last_seen_at = excluded.last_seen_at, observed_at = CASE WHEN gpus.observed_at IS NULL OR "   \
    "gpus.observed_at < excluded.observed_at THEN excluded.observed_at ELSE gpus.observed_at "     \
    "END, missing_since = NULL"

/* Provenance: which source set a GPU's identity field, one row at a
 * time or a batch's rows at once from a JSON array of [uuid, field,
 * value] (a SELECT feeding an upsert needs its WHERE on SQLite). A source
 * setting a field writes over it (its time only once a minute); one
 * filling a field the owner left absent writes only the first time. */
#define PROV_INSERT "INSERT INTO gpu_provenance (gpu_uuid, field, value, source_id, set_at) "
#define PROV_ROWS                                                                                  \
    "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, "        \
    "'$[2]'), :sid, :now FROM json_each(:rows) WHERE true "
#define PROV_ROWS_PG                                                                               \
    "SELECT e ->> 0, e ->> 1, e ->> 2, CAST(:sid AS BIGINT), CAST(:now AS BIGINT) FROM "           \
    "json_array_elements(CAST(:rows AS JSON)) AS e WHERE true "
#define PROV_SET_TAIL                                                                              \
    "ON CONFLICT (gpu_uuid, field) DO UPDATE SET value = excluded.value, source_id = "             \
    "excluded.source_id, set_at = excluded.set_at WHERE gpu_provenance.value IS DISTINCT FROM "    \
    "excluded.value OR gpu_provenance.source_id IS DISTINCT FROM excluded.source_id OR "           \
    "gpu_provenance.set_at < excluded.set_at - 60"
#define PROV_FILL_TAIL "ON CONFLICT (gpu_uuid, field) DO NOTHING"

#define STATEMENTS(X)                                                                              \
    X(DC_BY_NAME, store_sql_dc_by_name)                                                            \
    X(SOURCE_DEFAULTS, "SELECT team, env, cluster, precedence, name FROM sources WHERE id = :id")  \
    X(SOURCE_OK, "UPDATE sources SET last_attempt_at = :now, last_success_at = :now, last_error "  \
                 "= NULL WHERE id = :id")                                                          \
    X(SOURCE_RECOUNT, "UPDATE sources SET gpus_reported = (SELECT COUNT(*) FROM gpus WHERE "       \
                      "source_id = :id AND missing_since IS NULL) WHERE id = :id")                 \
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
    X(GPU_SERIAL_OTHER, "SELECT uuid FROM gpus WHERE serial = :serial AND uuid <> :uuid LIMIT 1")  \
    X(GPU_UPSERT, GPU_UPSERT_SQL " RETURNING id")                                                  \
    X(GPU_UPSERT_KNOWN, GPU_UPSERT_SQL)                                                            \
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
    X(PROV_SET, PROV_INSERT "VALUES (:uuid, :field, :value, :sid, :now) " PROV_SET_TAIL)           \
    X(PROV_FILL, PROV_INSERT "VALUES (:uuid, :field, :value, :sid, :now) " PROV_FILL_TAIL)         \
    X(PROV_SET_MANY, PROV_INSERT PROV_ROWS PROV_SET_TAIL)                                          \
    X(PROV_FILL_MANY, PROV_INSERT PROV_ROWS PROV_FILL_TAIL)                                        \
    X(PROV_SET_MANY_PG, PROV_INSERT PROV_ROWS_PG PROV_SET_TAIL)                                    \
    X(PROV_FILL_MANY_PG, PROV_INSERT PROV_ROWS_PG PROV_FILL_TAIL)                                  \
    X(EVENT_ADD, "INSERT INTO gpu_events (gpu_uuid, at, kind, detail, source_id) VALUES (:uuid, "  \
                 ":now, :kind, :detail, :sid)")                                                    \
    X(GPU_ON_HOST, "SELECT uuid, source_id FROM gpus WHERE host_id = :host AND missing_since IS "  \
                   "NULL")                                                                         \
    X(GPU_MISSING, "UPDATE gpus SET missing_since = :now WHERE uuid = :uuid AND host_id = :host "  \
                   "AND source_id = :sid AND missing_since IS NULL")                               \
    X(SOURCE_LOCK, "SELECT id FROM sources WHERE id = :id FOR NO KEY UPDATE")

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
int ingest_gpu_event(struct conn *c, int64_t sid, const char *uuid, const char *kind,
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

/* The reporting host's data center (0: none found), by the name it
 * reports or else by an inventory server of its name, and whether source
 * sid (of precedence prec) owns the host: nobody owns it yet, it already
 * does, or it outranks the owner. The reads go together (one round trip
 * on PostgreSQL); SQLite steps the server lookup only when needed. */
static int host_place(struct conn *c, int64_t sid, int64_t prec, const struct gi_host_obs *h,
                      int64_t *dc, bool *own)
{
    char shortname[GI_HOST_LEN];
    struct db_stmt *s[3];
    int n = 0, rc, step = DB_DONE;

    *dc = 0;
    *own = true;
    gi_strlcpy(shortname, h->hostname, sizeof shortname);
    shortname[strcspn(shortname, ".")] = '\0';
    if ((s[n++] = prep(c, ST_HOST_OWNER)) != NULL)
        db_bind_text(s[0], ":host", h->hostname);
    if ((s[n++] = prep(c, ST_HOST_DC)) != NULL) {
        db_bind_text(s[1], ":host", h->hostname);
        db_bind_text(s[1], ":short", shortname);
    }
    if (h->datacenter[0] && (s[n++] = prep(c, ST_DC_BY_NAME)) != NULL)
        db_bind_text(s[2], ":name", h->datacenter);
    if ((rc = db_read_batch(c, s, n)) == GI_OK) {
        step = db_step(c, s[0]);
        if (step == DB_ROW && !db_col_is_null(s[0], 0))
            *own = db_col_int(s[0], 0) == sid || prec > db_col_int(s[0], 1);
        /* The reported name first, then the inventory's server. */
        for (int i = n - 1; i >= 1 && *dc == 0 && (step == DB_ROW || step == DB_DONE); i--)
            if ((step = db_step(c, s[i])) == DB_ROW)
                *dc = db_col_int(s[i], 0);
        if (step != DB_ROW && step != DB_DONE)
            rc = db_status(step);
    }
    for (int i = 0; i < n; i++)
        if (s[i])
            db_reset(s[i]);
    db_read_end(c);
    return rc;
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
    int64_t dc;
    char ident[3][GI_HOST_LEN];
    bool own;
    int rc, step;

    if ((rc = host_place(c, sid, prec, h, &dc, &own)) != GI_OK)
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

/* The sources whose stored GPU count (gpus_reported) a transaction must
 * redo: those that gained or lost a present GPU. */
struct recount {
    int64_t *ids;
    size_t n, cap;
    bool failed;
};

static void recount_add(struct recount *r, int64_t sid)
{
    int64_t *ids;

    if (sid <= 0)
        return;
    for (size_t i = 0; i < r->n; i++)
        if (r->ids[i] == sid)
            return;
    if (r->n == r->cap) {
        ids = realloc(r->ids, (r->cap ? r->cap * 2 : 4) * sizeof *ids);
        if (ids == NULL) {
            r->failed = true;
            return;
        }
        r->ids = ids;
        r->cap = r->cap ? r->cap * 2 : 4;
    }
    r->ids[r->n++] = sid;
}

/* A batch's provenance rows ([uuid, field, value]) while they are
 * collected to be written together (prov_flush()): set by the owner,
 * filled by another source. Unused (on false) where a batch's GPUs
 * depend on each other. */
struct prov_rows {
    bool on;
    json_t *set, *fill;
};

/* The source a batch comes from: its id, name, precedence and the label
 * defaults (team, env, cluster) that fill only what a report leaves
 * absent; recount collects the sources whose GPU count changed, and prov
 * the batch's provenance. */
struct reporter {
    int64_t id, precedence;
    char name[64];
    const char *defaults[3];
    struct recount *recount;
    struct prov_rows *prov;
};

/* Collects one provenance row; GI_OK, or GI_INTERNAL out of memory. */
static int prov_add(json_t *rows, const char *uuid, const char *field, const char *v)
{
    return json_array_append_new(rows, json_pack("[sss]", uuid, field, v)) == 0 ? GI_OK
                                                                                : GI_INTERNAL;
}

/* Writes the collected provenance rows, one statement for each kind. */
static int prov_flush(struct conn *c, const struct reporter *src)
{
    bool pg = db_dialect(c) == DB_PG;
    struct {
        json_t *rows;
        enum stmt_id id;
    } kinds[] = {{src->prov->set, pg ? ST_PROV_SET_MANY_PG : ST_PROV_SET_MANY},
                 {src->prov->fill, pg ? ST_PROV_FILL_MANY_PG : ST_PROV_FILL_MANY}};
    struct db_stmt *s;
    int rc;

    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        if (json_array_size(kinds[k].rows) == 0)
            continue;
        if (!(s = prep(c, kinds[k].id)))
            return GI_INTERNAL;
        db_bind_json(s, ":rows", kinds[k].rows);
        db_bind_int(s, ":sid", src->id);
        db_bind_int(s, ":now", gi_now());
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
        json_array_clear(kinds[k].rows);
    }
    return GI_OK;
}

/* Records which source set one identity field; skips absent values. */
static int prov(struct conn *c, const struct reporter *src, const char *uuid, const char *field,
                const char *v)
{
    struct db_stmt *s;
    int64_t sid = src->id;

    if (v == NULL || *v == '\0')
        return GI_OK;
    if (src->prov->on)
        return prov_add(src->prov->set, uuid, field, v);
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
        if (!id->conflicts)
            return GI_OK; /* none to clear */
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
    return ingest_gpu_event(c, src->id, uuid, "conflict",
                            json_pack("{s:s, s:s, s:s, s:s}", "source", src->name, "field", field,
                                      "theirs", theirs, "ours", ours));
}

/* Records which source first set a field the owner left absent. */
static int prov_fill(struct conn *c, const struct reporter *src, const char *uuid,
                     const char *field, const char *v)
{
    struct db_stmt *s;
    int64_t sid = src->id;

    if (v == NULL || *v == '\0')
        return GI_OK;
    if (src->prov->on)
        return prov_add(src->prov->fill, uuid, field, v);
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
    if ((rc = prov_fill(c, src, g->uuid, "host", id->hostname[0] ? NULL : host->hostname)) ||
        (rc = prov_fill(c, src, g->uuid, "model", g->name)) ||
        (rc = prov_fill(c, src, g->uuid, "serial", g->serial)) ||
        (rc = prov_fill(c, src, g->uuid, "pci_bus_id", g->pci_bus_id)) ||
        (rc = prov_fill(c, src, g->uuid, "driver", g->driver)))
        return rc;
    return GI_OK;
}

/* Into other: another GPU stored under the serial g reports ("" for
 * none), from the batch's read when it has one. */
static int serial_other(struct conn *c, const struct gi_gpu_obs *g, const struct gpu_ident *id,
                        char other[GI_UUID_LEN])
{
    struct db_stmt *s;
    int step;

    other[0] = '\0';
    if (id->serial_read) {
        gi_strlcpy(other, id->serial_other, GI_UUID_LEN);
        return GI_OK;
    }
    if (!(s = prep(c, ST_GPU_SERIAL_OTHER)))
        return GI_INTERNAL;
    db_bind_text(s, ":serial", g->serial);
    db_bind_text(s, ":uuid", g->uuid);
    step = db_step(c, s);
    if (step == DB_ROW)
        gi_strlcpy(other, db_col_text(s, 0), GI_UUID_LEN);
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* Upserts one GPU with provenance and identity events. The source owns it
 * when nobody does yet, when it already does, or when it outranks the
 * owner by precedence (an `owner_changed` event); otherwise the report
 * goes to ingest_gpu_foreign(). `observed` is when the report's reading
 * was taken, 0 when the caller settles it later (ingest_observed()).
 * `read` is what the batch's identity read found (ingest_idents_load()), or
 * NULL to look the GPU up here. *owned tells the caller which way it went. */
static int ingest_gpu(struct conn *c, const struct reporter *src, int64_t host_id,
                      const struct gi_host_obs *host, int64_t observed,
                      const struct gi_gpu_obs *seen, const struct gpu_ident *read, int64_t *events,
                      int64_t *gpu_id, char canon[GI_UUID_LEN], bool *owned)
{
    struct gi_gpu_obs obs = *seen, *g = &obs;
    const char *hostname = host->hostname;
    int64_t sid = src->id;
    struct gpu_ident id;
    struct db_stmt *s;
    char num[32];
    int rc, step;

    if (read) {
        gi_strlcpy(canon, seen->uuid, GI_UUID_LEN);
        id = *read;
    } else {
        if ((rc = mig_canonical(c, seen, canon)) != GI_OK)
            return rc;
        gi_strlcpy(obs.uuid, canon, sizeof obs.uuid);
        if ((rc = ingest_ident_load(c, sid, g->uuid, &id)) != GI_OK)
            return rc;
    }
    *owned =
        !(id.known && id.owner != 0 && id.owner != sid && src->precedence <= id.owner_precedence);
    if (!*owned) {
        *gpu_id = id.id;
        return ingest_gpu_foreign(c, src, &id, host_id, host, g, events);
    }
    /* A GPU this source did not have present before changes its count,
     * and the count of the source it was taken from. */
    if (!id.known || id.owner != sid || id.missing)
        recount_add(src->recount, sid);
    if (id.known && id.owner != 0 && id.owner != sid) {
        recount_add(src->recount, id.owner);
        rc = ingest_gpu_event(c, sid, g->uuid, "owner_changed",
                              json_pack("{s:s, s:s}", "from", id.owner_name, "to", src->name));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }
    if (id.known && id.conflicts) {
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
        rc = ingest_gpu_event(
            c, sid, g->uuid, "host_changed",
            json_pack("{s:s, s:s}", "from_host", id.hostname, "to_host", hostname));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }
    if (g->serial[0]) {
        char other[GI_UUID_LEN];
        if ((rc = serial_other(c, g, &id, other)) != GI_OK)
            return rc;
        if (other[0]) {
            rc =
                ingest_gpu_event(c, sid, g->uuid, "serial_conflict",
                                 json_pack("{s:s, s:s}", "serial", g->serial, "other_uuid", other));
            if (rc != GI_OK)
                return rc;
            (*events)++;
        }
        if (id.known && id.serial[0] && strcmp(id.serial, g->serial) != 0) {
            rc = ingest_gpu_event(c, sid, g->uuid, "serial_changed",
                                  json_pack("{s:s, s:s}", "from", id.serial, "to", g->serial));
            if (rc != GI_OK)
                return rc;
            (*events)++;
        }
    }
    if (!id.known) {
        rc = ingest_gpu_event(c, sid, g->uuid, "discovered", json_pack("{s:s}", "host", hostname));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }

    if (!(s = prep(c, id.known ? ST_GPU_UPSERT_KNOWN : ST_GPU_UPSERT)))
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
    if (id.known) {
        /* The row keeps its id; nothing waits for the answer. */
        *gpu_id = id.id;
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    } else {
        step = db_step(c, s);
        if (step == DB_ROW)
            *gpu_id = db_col_int(s, 0);
        db_reset(s);
        if (step != DB_ROW)
            return db_status(step);
    }
    /* A new GPU, or one on another host, may fall under other rules. */
    if ((!id.known || id.host_id != host_id) && (rc = owner_refresh(c, *gpu_id)) != GI_OK)
        return rc;
    if ((rc = ingest_remap(c, sid, *gpu_id, g, events)) != GI_OK)
        return rc;

    snprintf(num, sizeof num, "%.0f", g->memory_total_mib);
    if ((rc = prov(c, src, g->uuid, "host", hostname)) != GI_OK ||
        (rc = prov(c, src, g->uuid, "model", g->name)) != GI_OK ||
        (rc = prov(c, src, g->uuid, "serial", g->serial)) != GI_OK ||
        (rc = prov(c, src, g->uuid, "pci_bus_id", g->pci_bus_id)) != GI_OK ||
        (rc = prov(c, src, g->uuid, "driver", g->driver)) != GI_OK ||
        (rc = prov(c, src, g->uuid, "memory_total_mib", isnan(g->memory_total_mib) ? NULL : num)))
        return rc;
    return GI_OK;
}

/* Marks GPUs that this host reported before but not now as missing;
 * only the GPUs this source owns: another source's report never makes a
 * GPU missing. */
static int ingest_missing(struct conn *c, const struct reporter *src, int64_t host_id,
                          const struct gi_batch *b, const struct gpu_ref *refs, size_t nrefs,
                          int64_t *events)
{
    int64_t sid = src->id;
    struct db_stmt *s = prep(c, ST_GPU_ON_HOST);
    json_t *gone = json_array();
    size_t i;
    json_t *v;
    int rc = GI_OK, step;

    if (!s) {
        json_decref(gone);
        return GI_INTERNAL;
    }
    /* The host's GPUs, whichever source owns them, are read by the host's
     * index (a handful of rows) and this source's are picked here: a query
     * naming the source too may be planned over the source's whole fleet. */
    db_bind_int(s, ":host", host_id);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *u = db_col_text(s, 0);
        bool keep = db_col_int(s, 1) != sid; /* another source's */
        for (size_t k = 0; k < nrefs && !keep; k++)
            keep = strcmp(refs[k].canon, u) == 0;
        if (!keep)
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
        recount_add(src->recount, sid);
        rc = ingest_gpu_event(c, sid, json_string_value(v), "missing_from_host",
                              json_pack("{s:s}", "batch_id", b->batch_id));
        (*events)++;
    }
    json_decref(gone);
    return rc;
}

/* Applies one batch inside the caller's transaction; a batch id already
 * applied for this source is skipped (res->duplicate). */
static int ingest_one(struct conn *c, const struct reporter *src, const struct gi_batch *b,
                      struct store_ingest_result *res)
{
    struct db_stmt *s;
    struct gpu_ref *refs = calloc(b->set.ngpus + 1, sizeof *refs);
    struct gpu_ident *read = NULL;
    int64_t source_id = src->id, host_id = 0, now = gi_now(), newest = ingest_batch_time(b);
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
    /* The GPUs' stored identities in one statement, not one per GPU, when
     * the batch's GPUs do not depend on each other. */
    if (b->set.ngpus > 0 && ingest_idents_apart(b)) {
        rc = GI_INTERNAL;
        if ((read = calloc(b->set.ngpus, sizeof *read)) == NULL ||
            (rc = ingest_idents_load(c, source_id, b, read)) != GI_OK)
            goto cleanup;
    }
    /* So is their provenance written, after them. */
    src->prov->on = read != NULL;
    for (size_t i = 0; i < b->set.ngpus; i++) {
        /* A GPU observation stamped with its time (a pull) was taken then;
         * the others are settled by ingest_observed(). */
        int64_t ts = b->set.gpus[i].ts_ms / 1000;
        refs[i].uuid = b->set.gpus[i].uuid;
        refs[i].stamped = ts > 0;
        rc = ingest_gpu(c, src, host_id, &b->host, ts < now ? ts : now, &b->set.gpus[i],
                        read ? &read[i] : NULL, &res->events, &refs[i].id, refs[i].canon,
                        &refs[i].owned);
        if (rc != GI_OK)
            goto cleanup;
    }
    if (src->prov->on && (rc = prov_flush(c, src)) != GI_OK)
        goto cleanup;
    qsort(refs, b->set.ngpus, sizeof *refs, ingest_ref_cmp);
    res->gpus = (int64_t)b->set.ngpus;
    if (!b->partial && b->set.ngpus > 0 &&
        (rc = ingest_missing(c, src, host_id, b, refs, b->set.ngpus, &res->events)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_samples(c, source_id, b, refs, b->set.ngpus, &res->samples)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_observed(c, refs, b->set.ngpus, newest < now ? newest : now)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_procs(c, source_id, b, refs, b->set.ngpus, &res->processes)) != GI_OK)
        goto cleanup;
    rc = ingest_pods(c, source_id, b, refs, b->set.ngpus);
cleanup:
    /* Rows not written belong to a failed batch. */
    src->prov->on = false;
    json_array_clear(src->prov->set);
    json_array_clear(src->prov->fill);
    free(read);
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

static int id_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Redoes the stored GPU count of the sources whose present GPUs the
 * transaction changed; a batch that changed none leaves the counts (a
 * count reads every GPU of the source). Batches of one source on other
 * hosts may run at once (PostgreSQL): the rows of the sources counted and
 * the reporter's own are locked, last and in id order, before counting,
 * so that each count's statement starts after the other batches that
 * changed the count committed, and sees their GPUs. A batch that counts
 * nothing locks no row here: its update of its source's status (the
 * last statement) takes the same lock, without a round trip. */
static int sources_recount(struct conn *c, int64_t source_id, struct recount *r)
{
    struct db_stmt *s;
    bool own = false;
    int rc = GI_OK;

    if (r->failed)
        return GI_INTERNAL;
    if (r->n > 1)
        qsort(r->ids, r->n, sizeof *r->ids, id_cmp);
    for (size_t i = 0; i < r->n; i++)
        own = own || r->ids[i] == source_id;
    for (size_t i = 0; r->n > 0 && i <= r->n && db_dialect(c) == DB_PG && rc == GI_OK; i++) {
        /* The reporter's row in its place among the others. */
        if (!own && (i == r->n || r->ids[i] > source_id)) {
            own = true;
            rc = source_lock(c, source_id);
        }
        if (i < r->n && rc == GI_OK)
            rc = source_lock(c, r->ids[i]);
    }
    for (size_t i = 0; i < r->n && rc == GI_OK; i++) {
        if (!(s = prep(c, ST_SOURCE_RECOUNT)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", r->ids[i]);
        rc = db_exec_done(c, s);
    }
    return rc;
}

/* Applies n batches inside the caller's write transaction on c. */
static int ingest_many_tx(struct conn *c, int64_t source_id, const struct gi_batch *b, size_t n,
                          struct store_ingest_result *res)
{
    struct db_stmt *s;
    char team[GI_LABEL_LEN] = "", env[GI_LABEL_LEN] = "", cluster[GI_LABEL_LEN] = "";
    struct recount recount = {0};
    struct prov_rows prov = {.set = json_array(), .fill = json_array()};
    struct reporter src = {
        .id = source_id, .defaults = {team, env, cluster}, .recount = &recount, .prov = &prov};
    const char *warning = NULL;
    int64_t warnings = 0;
    int rc, step;

    rc = GI_INTERNAL;
    if (!prov.set || !prov.fill || !(s = prep(c, ST_SOURCE_DEFAULTS)))
        goto cleanup;
    db_bind_int(s, ":id", source_id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        for (int i = 0; i < 3; i++)
            if (!db_col_is_null(s, i))
                gi_strlcpy((char *)src.defaults[i], db_col_text(s, i), GI_LABEL_LEN);
        src.precedence = db_col_int(s, 3);
        ingest_col_copy(s, 4, src.name, sizeof src.name);
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
    if ((rc = sources_recount(c, source_id, &recount)) != GI_OK)
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
    free(recount.ids);
    json_decref(prov.set);
    json_decref(prov.fill);
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
