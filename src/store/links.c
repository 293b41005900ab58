/* Discovery joined to inventory: every discovered host is matched to its
 * inventory server by serial, then machine id, then host name (full name,
 * then the short name before the first dot), case-insensitively; the
 * first rule that finds exactly one server links the host, one that finds
 * several stops matching and records the ambiguity. An admin's manual
 * link or "not linked" wins until the host is returned to automatic.
 *
 * Matching runs inside the writing transaction: on ingest when a host's
 * identity changed (or it was never matched), and when a server is
 * created, changed or deleted, for the hosts its keys concern. A host
 * that comes to link another resource (or whose data center follows its
 * resource's) has its GPUs' current owner recomputed in the same
 * transaction: rules match on the resource's tags and data center. */
#include "store/links.h"
#include "store/gpu_sql.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"
#include "store/store_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_LEN 256

/* A host's normalized identity; empty members are absent. */
struct hkeys {
    char serial[KEY_LEN], mid[KEY_LEN], host[KEY_LEN], shortn[KEY_LEN];
};

/* One match key of a server. */
struct skey {
    char rule[16];
    char value[KEY_LEN];
};
#define SKEYS_MAX 8

/* The actor recorded for links the matching makes by itself. */
static const char auto_actor[] = "discovery";

static const char sql_link_state[] =
    "SELECT l.host_id, l.resource_id, l.rule, l.manual, l.k_serial, l.k_mid, l.k_host, "
    "r.datacenter_id, h.datacenter_id FROM hosts h LEFT JOIN host_links l ON l.host_id = h.id "
    "LEFT JOIN resources r ON r.id = l.resource_id WHERE h.id = :id";
static const char sql_link_old[] =
    "SELECT resource_id, rule, manual FROM host_links WHERE host_id = :id";
static const char sql_link_upsert[] =
    "INSERT INTO host_links (host_id, resource_id, rule, manual, detail, k_serial, k_mid, "
    "k_host, k_short, linked_at, linked_by) VALUES (:id, :rid, :rule, :manual, :detail, :ks, "
    ":km, :kh, :kshort, :now, :by) ON CONFLICT (host_id) DO UPDATE SET resource_id = "
    "excluded.resource_id, rule = excluded.rule, manual = excluded.manual, detail = "
    "excluded.detail, k_serial = excluded.k_serial, k_mid = excluded.k_mid, k_host = "
    "excluded.k_host, k_short = excluded.k_short, linked_at = CASE WHEN :changed = 1 THEN "
    "excluded.linked_at ELSE host_links.linked_at END, linked_by = CASE WHEN :changed = 1 THEN "
    "excluded.linked_by ELSE host_links.linked_by END";
static const char sql_host_follow[] =
    "UPDATE hosts SET datacenter_id = (SELECT r.datacenter_id FROM resources r WHERE r.id = "
    ":rid) WHERE id = :id";
static const char sql_host_ident[] =
    "SELECT hostname, machine_id, serial FROM hosts WHERE id = :id";
static const char sql_key_find[] = "SELECT DISTINCT resource_id FROM match_keys WHERE rule = "
                                   ":rule AND value = :value ORDER BY resource_id LIMIT 3";
static const char sql_keys_of[] = "SELECT rule, value FROM match_keys WHERE resource_id = :rid";
static const char sql_keys_del[] = "DELETE FROM match_keys WHERE resource_id = :rid";
static const char sql_key_add[] = "INSERT INTO match_keys (rule, value, resource_id) VALUES "
                                  "(:rule, :value, :rid) ON CONFLICT DO NOTHING";
static const char sql_res_ident[] =
    "SELECT kind, name, attrs, datacenter_id FROM resources WHERE id = :rid";
static const char sql_hosts_serial[] =
    "SELECT host_id FROM host_links WHERE manual = 0 AND k_serial = :value";
static const char sql_hosts_mid[] =
    "SELECT host_id FROM host_links WHERE manual = 0 AND k_mid = :value";
static const char sql_hosts_host[] =
    "SELECT host_id FROM host_links WHERE manual = 0 AND k_host = :value";
static const char sql_hosts_short[] =
    "SELECT host_id FROM host_links WHERE manual = 0 AND k_short = :value";
static const char sql_hosts_of_res[] =
    "SELECT host_id FROM host_links WHERE resource_id = :rid AND manual = 0";
static const char sql_host_keys[] = "SELECT k_serial, k_mid, k_host, k_short FROM host_links "
                                    "WHERE host_id = :id AND manual = 0";
static const char sql_follow_res[] =
    "UPDATE hosts SET datacenter_id = (SELECT r.datacenter_id FROM resources r WHERE r.id = "
    ":rid) WHERE id IN (SELECT l.host_id FROM host_links l WHERE l.resource_id = :rid)";
static const char sql_manual_release[] =
    "UPDATE host_links SET manual = 0 WHERE resource_id = :rid";
static const char sql_gpu_resource[] =
    "SELECT r.id, r.name, r.datacenter_id, d.name AS datacenter, l.rule, l.manual FROM gpus g "
    "JOIN host_links l ON l.host_id = g.host_id JOIN resources r ON r.id = l.resource_id JOIN "
    "datacenters d ON d.id = r.datacenter_id WHERE g.uuid = :uuid";

bool links_norm(const char *in, bool is_serial, char *buf, size_t len)
{
    static const char *const junk[] = {"0",
                                       "000",
                                       "0000000000",
                                       "none",
                                       "n/a",
                                       "not specified",
                                       "not applicable",
                                       "to be filled by o.e.m.",
                                       "default string",
                                       "system serial number",
                                       "chassis serial number",
                                       NULL};
    size_t n = 0;

    buf[0] = '\0';
    if (in == NULL || len == 0)
        return false;
    while (*in && isspace((unsigned char)*in))
        in++;
    for (; *in && n + 1 < len; in++)
        buf[n++] = (char)tolower((unsigned char)*in);
    while (n > 0 && (isspace((unsigned char)buf[n - 1]) || (!is_serial && buf[n - 1] == '.')))
        n--;
    buf[n] = '\0';
    if (is_serial)
        for (const char *const *j = junk; *j; j++)
            if (strcmp(buf, *j) == 0)
                buf[0] = '\0';
    return buf[0] != '\0';
}

/* The host's keys from its stored identity (each may be NULL). */
static void host_keys(const char *hostname, const char *mid, const char *serial, struct hkeys *k)
{
    links_norm(serial, true, k->serial, sizeof k->serial);
    links_norm(mid, false, k->mid, sizeof k->mid);
    links_norm(hostname, false, k->host, sizeof k->host);
    gi_strlcpy(k->shortn, k->host, sizeof k->shortn);
    k->shortn[strcspn(k->shortn, ".")] = '\0';
}

/* Column i as text, "" for NULL (borrowed until the next step/reset). */
static const char *col_text(struct db_stmt *s, int i)
{
    const char *t = db_col_text(s, i);
    return t ? t : "";
}

/* Writes a host's link row, auditing a change of what it links to. rid 0
 * and rule NULL: not linked. */
static int link_write(struct conn *c, const char *actor, int64_t host_id, int64_t rid,
                      const char *rule, bool manual, const char *detail, const struct hkeys *k)
{
    struct db_stmt *s = db_prep(c, sql_link_old);
    int64_t old_rid = 0;
    char old_rule[16] = "";
    bool exists = false, old_manual = false, changed;
    json_t *before = NULL, *after = NULL;
    int rc, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", host_id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        exists = true;
        old_rid = db_col_int(s, 0);
        gi_strlcpy(old_rule, col_text(s, 1), sizeof old_rule);
        old_manual = db_col_int(s, 2) != 0;
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    changed = !exists || old_rid != rid || strcmp(old_rule, rule ? rule : "") != 0 ||
              old_manual != manual;
    if (!(s = db_prep(c, sql_link_upsert)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", host_id);
    if (rid > 0)
        db_bind_int(s, ":rid", rid);
    else
        db_bind_text(s, ":rid", NULL);
    db_bind_text(s, ":rule", rule);
    db_bind_int(s, ":manual", manual ? 1 : 0);
    db_bind_opt_text(s, ":detail", detail);
    db_bind_opt_text(s, ":ks", k->serial);
    db_bind_opt_text(s, ":km", k->mid);
    db_bind_opt_text(s, ":kh", k->host);
    db_bind_opt_text(s, ":kshort", k->shortn);
    db_bind_int(s, ":now", gi_now());
    db_bind_text(s, ":by", actor);
    db_bind_int(s, ":changed", changed ? 1 : 0);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if (rid > 0) {
        if (!(s = db_prep(c, sql_host_follow)))
            return GI_INTERNAL;
        db_bind_int(s, ":rid", rid);
        db_bind_int(s, ":id", host_id);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    if (old_rid != rid && (rc = owner_host_changed(c, host_id, gi_now())) != GI_OK)
        return rc;
    /* A first "nothing fits" is not news; every other change is audited. */
    if (!changed || (!exists && rid == 0 && !manual && rule == NULL))
        return GI_OK;
    if (exists)
        before = json_pack("{s:o, s:s?, s:b}", "resource_id",
                           old_rid ? json_integer(old_rid) : json_null(), "rule",
                           old_rule[0] ? old_rule : NULL, "manual", old_manual);
    after =
        json_pack("{s:o, s:s?, s:b, s:s?}", "resource_id", rid ? json_integer(rid) : json_null(),
                  "rule", rule, "manual", manual, "detail", detail && *detail ? detail : NULL);
    rc = db_audit(c, actor, manual ? (rid ? "link" : "unlink") : "match", "host", host_id, before,
                  after);
    json_decref(before);
    json_decref(after);
    return rc;
}

/* Runs the matching rules in order for one host and records the outcome. */
static int match_host(struct conn *c, const char *actor, int64_t host_id, const struct hkeys *k)
{
    const struct {
        const char *key_rule, *value, *rule;
    } rules[] = {{"serial", k->serial, "serial"},
                 {"machine_id", k->mid, "machine_id"},
                 {"hostname", k->host, "hostname"},
                 {"short", k->shortn, "hostname"}};
    int64_t rid = 0, ids[3];
    const char *rule = NULL;
    char detail[320] = "";
    struct db_stmt *s;
    int step;

    for (size_t i = 0; i < sizeof rules / sizeof *rules && rule == NULL; i++) {
        size_t n = 0;
        if (!rules[i].value[0])
            continue;
        if (!(s = db_prep(c, sql_key_find)))
            return GI_INTERNAL;
        db_bind_text(s, ":rule", rules[i].key_rule);
        db_bind_text(s, ":value", rules[i].value);
        while ((step = db_step(c, s)) == DB_ROW && n < 3)
            ids[n++] = db_col_int(s, 0);
        db_reset(s);
        if (step != DB_ROW && step != DB_DONE)
            return db_status(step);
        if (n == 1) {
            rid = ids[0];
            rule = rules[i].rule;
        } else if (n > 1) {
            rule = "ambiguous";
            snprintf(detail, sizeof detail, "%s '%s' fits %s servers (ids %lld, %lld%s)",
                     rules[i].rule, rules[i].value, n > 2 ? "3 or more" : "2", (long long)ids[0],
                     (long long)ids[1], n > 2 ? ", ..." : "");
        }
    }
    return link_write(c, actor, host_id, rid, rule, false, detail, k);
}

int links_host_seen(struct conn *c, int64_t host_id, const char *hostname, const char *machine_id,
                    const char *serial)
{
    struct db_stmt *s = db_prep(c, sql_link_state);
    struct hkeys k;
    bool exists, manual, same, broken;
    int64_t rid, rdc, hdc;
    int step;

    if (!s)
        return GI_INTERNAL;
    host_keys(hostname, machine_id, serial, &k);
    db_bind_int(s, ":id", host_id);
    step = db_step(c, s);
    if (step != DB_ROW) {
        db_reset(s);
        return step == DB_DONE ? GI_NOT_FOUND : db_status(step);
    }
    exists = !db_col_is_null(s, 0);
    rid = db_col_int(s, 1);
    /* A rule without its server: the server went by a path that could
     * not re-match (a data center deleted with its resources). */
    broken = rid == 0 &&
             (strcmp(col_text(s, 2), "serial") == 0 || strcmp(col_text(s, 2), "machine_id") == 0 ||
              strcmp(col_text(s, 2), "hostname") == 0);
    manual = db_col_int(s, 3) != 0;
    same = strcmp(col_text(s, 4), k.serial) == 0 && strcmp(col_text(s, 5), k.mid) == 0 &&
           strcmp(col_text(s, 6), k.host) == 0;
    rdc = db_col_int(s, 7);
    hdc = db_col_int(s, 8);
    db_reset(s);
    /* Matching reads only the servers' keys (match_keys), which only
     * inventory writes change, under the exclusive writer lock that a
     * push's keyed transaction excludes, and writes only this host's
     * rows, which the host's own key covers: new hosts of batches running
     * side by side (db_tx_begin_keyed) match side by side. */
    if (!exists || (!manual && (!same || broken)))
        return match_host(c, auto_actor, host_id, &k);
    if (rid > 0 && rdc != hdc) {
        int rc;
        if (!(s = db_prep(c, sql_host_follow)))
            return GI_INTERNAL;
        db_bind_int(s, ":rid", rid);
        db_bind_int(s, ":id", host_id);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
        return owner_host_changed(c, host_id, gi_now());
    }
    return GI_OK;
}

/* Adds a key unless present or empty. */
static void skey_add(struct skey *keys, size_t *n, const char *rule, const char *value)
{
    if (!value[0] || *n >= SKEYS_MAX)
        return;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(keys[i].rule, rule) == 0 && strcmp(keys[i].value, value) == 0)
            return;
    gi_strlcpy(keys[*n].rule, rule, sizeof keys[*n].rule);
    gi_strlcpy(keys[*n].value, value, sizeof keys[*n].value);
    (*n)++;
}

/* A server's keys from its name and attributes; none for other kinds or
 * a resource that is gone. */
static int server_keys(struct conn *c, int64_t rid, struct skey *keys, size_t *n)
{
    struct db_stmt *s = db_prep(c, sql_res_ident);
    json_t *attrs = NULL;
    char buf[KEY_LEN];
    int step;

    *n = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":rid", rid);
    step = db_step(c, s);
    if (step == DB_ROW && strcmp(col_text(s, 0), "server") == 0) {
        const char *names[2] = {col_text(s, 1), NULL};
        json_error_t err;
        attrs = json_loads(col_text(s, 2), 0, &err);
        names[1] = json_string_value(json_object_get(attrs, "hostname"));
        if (links_norm(json_string_value(json_object_get(attrs, "serial")), true, buf, sizeof buf))
            skey_add(keys, n, "serial", buf);
        if (links_norm(json_string_value(json_object_get(attrs, "machine_id")), false, buf,
                       sizeof buf))
            skey_add(keys, n, "machine_id", buf);
        for (int i = 0; i < 2; i++) {
            if (!links_norm(names[i], false, buf, sizeof buf))
                continue;
            skey_add(keys, n, "hostname", buf);
            buf[strcspn(buf, ".")] = '\0';
            skey_add(keys, n, "short", buf);
        }
    }
    db_reset(s);
    json_decref(attrs);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* True when both key sets hold the same keys. */
static bool skeys_equal(const struct skey *a, size_t na, const struct skey *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        bool found = false;
        for (size_t j = 0; j < nb && !found; j++)
            found = strcmp(a[i].rule, b[j].rule) == 0 && strcmp(a[i].value, b[j].value) == 0;
        if (!found)
            return false;
    }
    return true;
}

/* A growable set of host ids. */
struct idset {
    int64_t *v;
    size_t n, cap;
};

static int idset_add(struct idset *set, int64_t id)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->v[i] == id)
            return GI_OK;
    if (set->n == set->cap) {
        size_t nc = set->cap ? set->cap * 2 : 16;
        int64_t *nv = realloc(set->v, nc * sizeof *nv);
        if (nv == NULL)
            return GI_INTERNAL;
        set->v = nv;
        set->cap = nc;
    }
    set->v[set->n++] = id;
    return GI_OK;
}

/* Adds every id the statement returns (column 0). */
static int idset_collect(struct conn *c, struct db_stmt *s, struct idset *set)
{
    int step, rc = GI_OK;

    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW)
        rc = idset_add(set, db_col_int(s, 0));
    db_reset(s);
    if (rc != GI_OK)
        return rc;
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Hosts whose identity meets one server key. */
static int hosts_with_key(struct conn *c, const struct skey *k, struct idset *set)
{
    const char *sql = strcmp(k->rule, "serial") == 0       ? sql_hosts_serial
                      : strcmp(k->rule, "machine_id") == 0 ? sql_hosts_mid
                      : strcmp(k->rule, "hostname") == 0   ? sql_hosts_host
                                                           : sql_hosts_short;
    struct db_stmt *s = db_prep(c, sql);

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":value", k->value);
    return idset_collect(c, s, set);
}

/* Re-matches one automatic host from its recorded keys. */
static int rematch(struct conn *c, const char *actor, int64_t host_id)
{
    struct db_stmt *s = db_prep(c, sql_host_keys);
    struct hkeys k;
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", host_id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        gi_strlcpy(k.serial, col_text(s, 0), sizeof k.serial);
        gi_strlcpy(k.mid, col_text(s, 1), sizeof k.mid);
        gi_strlcpy(k.host, col_text(s, 2), sizeof k.host);
        gi_strlcpy(k.shortn, col_text(s, 3), sizeof k.shortn);
    }
    db_reset(s);
    if (step == DB_DONE)
        return GI_OK; /* manual meanwhile: left alone */
    if (step != DB_ROW)
        return db_status(step);
    return match_host(c, actor, host_id, &k);
}

static int server_update(struct conn *c, const char *actor, int64_t rid, bool removing)
{
    struct skey old[SKEYS_MAX], now[SKEYS_MAX];
    size_t nold = 0, nnow = 0;
    struct idset hosts = {0};
    struct db_stmt *s = db_prep(c, sql_keys_of);
    int rc = GI_INTERNAL, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":rid", rid);
    while ((step = db_step(c, s)) == DB_ROW && nold < SKEYS_MAX) {
        gi_strlcpy(old[nold].rule, col_text(s, 0), sizeof old[nold].rule);
        gi_strlcpy(old[nold].value, col_text(s, 1), sizeof old[nold].value);
        nold++;
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (!removing && (rc = server_keys(c, rid, now, &nnow)) != GI_OK)
        return rc;
    if (removing) {
        if (!(s = db_prep(c, sql_manual_release)))
            return GI_INTERNAL;
        db_bind_int(s, ":rid", rid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    } else if (skeys_equal(old, nold, now, nnow)) {
        /* Identity unchanged: only the data center may have moved. */
        if (!(s = db_prep(c, sql_follow_res)))
            return GI_INTERNAL;
        db_bind_int(s, ":rid", rid);
        return db_exec_done(c, s);
    }
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_keys_del)))
        goto cleanup;
    db_bind_int(s, ":rid", rid);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < nnow; i++) {
        rc = GI_INTERNAL;
        if (!(s = db_prep(c, sql_key_add)))
            goto cleanup;
        db_bind_text(s, ":rule", now[i].rule);
        db_bind_text(s, ":value", now[i].value);
        db_bind_int(s, ":rid", rid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_hosts_of_res)))
        goto cleanup;
    db_bind_int(s, ":rid", rid);
    if ((rc = idset_collect(c, s, &hosts)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < nold && rc == GI_OK; i++)
        rc = hosts_with_key(c, &old[i], &hosts);
    for (size_t i = 0; i < nnow && rc == GI_OK; i++)
        rc = hosts_with_key(c, &now[i], &hosts);
    for (size_t i = 0; i < hosts.n && rc == GI_OK; i++)
        rc = rematch(c, actor, hosts.v[i]);
    if (rc != GI_OK || removing)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_follow_res)))
        goto cleanup;
    db_bind_int(s, ":rid", rid);
    rc = db_exec_done(c, s);
cleanup:
    free(hosts.v);
    return rc;
}

int links_server_changed(struct conn *c, const char *actor, int64_t resource_id)
{
    return server_update(c, actor, resource_id, false);
}

int links_server_removing(struct conn *c, const char *actor, int64_t resource_id)
{
    return server_update(c, actor, resource_id, true);
}

/* Turns the integer `manual` member of a row into a boolean. */
static void manual_bool(json_t *o)
{
    json_t *m = json_object_get(o, "manual");
    if (m)
        json_object_set_new(o, "manual", json_boolean(json_integer_value(m) != 0));
}

int links_gpu_resource(struct conn *c, const char *uuid, json_t **out)
{
    struct db_stmt *s = db_prep(c, sql_gpu_resource);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    rc = db_fetch_one(c, s, out);
    if (rc == GI_NOT_FOUND) {
        *out = json_null();
        return GI_OK;
    }
    if (rc == GI_OK)
        manual_bool(*out);
    return rc;
}

/* ---- discovered hosts and manual links ---- */

#define HOST_SELECT                                                                                \
    "SELECT h.id, h.hostname, h.machine_id, h.serial, h.cluster, h.datacenter_id, d.name AS "      \
    "datacenter, s.name AS source, h.first_seen_at, h.last_seen_at, (SELECT COUNT(*) FROM gpus "   \
    "g WHERE g.host_id = h.id AND g.parent_uuid IS NULL AND g.missing_since IS NULL) AS gpus, "    \
    "l.resource_id, r.name AS resource, r.datacenter_id AS resource_datacenter_id, l.rule, "       \
    "COALESCE(l.manual, 0) AS manual, l.detail AS match_detail, l.linked_at, l.linked_by FROM "    \
    "hosts h LEFT JOIN host_links l ON l.host_id = h.id LEFT JOIN resources r ON r.id = "          \
    "l.resource_id LEFT JOIN datacenters d ON d.id = h.datacenter_id LEFT JOIN sources s ON s.id " \
    "= h.source_id "
#define HOST_WHERE                                                                                 \
    "WHERE (:dc = 0 OR h.datacenter_id = :dc) AND (:linked < 0 OR (:linked = 1) = "                \
    "(l.resource_id IS NOT NULL)) AND (:q IS NULL OR h.hostname LIKE :q ESCAPE '!' OR h.serial "   \
    "LIKE :q ESCAPE '!' OR h.machine_id LIKE :q ESCAPE '!' OR r.name LIKE :q ESCAPE '!') "         \
    "AND " STORE_SCOPE_IN("h.datacenter_id") " "

static const char sql_host_get[] = HOST_SELECT "WHERE h.id = :id";
static const char sql_host_list[] =
    HOST_SELECT HOST_WHERE "ORDER BY h.hostname, h.id LIMIT :limit OFFSET :offset";
static const char sql_host_count[] =
    "SELECT COUNT(*) FROM hosts h LEFT JOIN host_links l ON l.host_id = h.id LEFT JOIN resources "
    "r ON r.id = l.resource_id " HOST_WHERE;

static int host_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = db_prep(c, sql_host_get);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, out)) == GI_OK)
        manual_bool(*out);
    return rc;
}

static void bind_host_filter(struct db_stmt *s, const void *filter)
{
    const struct store_host_filter *f = filter;
    db_bind_int(s, ":dc", f->datacenter_id);
    db_bind_scope(s, &f->scope);
    db_bind_int(s, ":linked", f->linked);
    db_bind_like(s, ":q", f->q);
}

int store_host_list(struct store *st, const struct store_host_filter *f,
                    const struct store_page *pg, json_t **items, int64_t *total)
{
    size_t i;
    json_t *h;
    int rc = db_list_page(st, sql_host_count, sql_host_list, bind_host_filter, f, pg, items, total);

    if (rc == GI_OK)
        json_array_foreach(*items, i, h)
            manual_bool(h);
    return rc;
}

int store_host_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = host_get(c, id, out);
    db_conn_put(st, c);
    return rc;
}

/* The keys of a host from its row. */
static int host_keys_of(struct conn *c, int64_t host_id, struct hkeys *k)
{
    struct db_stmt *s = db_prep(c, sql_host_ident);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", host_id);
    step = db_step(c, s);
    if (step == DB_ROW)
        host_keys(db_col_text(s, 0), db_col_text(s, 1), db_col_text(s, 2), k);
    db_reset(s);
    if (step == DB_DONE)
        return GI_NOT_FOUND;
    return step == DB_ROW ? GI_OK : db_status(step);
}

int store_host_link_set(struct store *st, const char *actor, int64_t host_id,
                        enum store_link_mode mode, int64_t resource_id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct hkeys k;
    struct db_stmt *s;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = host_keys_of(c, host_id, &k)) != GI_OK)
        goto cleanup;
    if (mode == STORE_LINK_MANUAL) {
        /* Only an inventory server can be a host's record. */
        rc = GI_INTERNAL;
        if (!(s = db_prep(c, sql_res_ident)))
            goto cleanup;
        db_bind_int(s, ":rid", resource_id);
        rc = db_step(c, s);
        rc = rc == DB_ROW    ? (strcmp(col_text(s, 0), "server") == 0 ? GI_OK : GI_INVALID)
             : rc == DB_DONE ? GI_INVALID
                             : db_status(rc);
        db_reset(s);
        if (rc != GI_OK)
            goto cleanup;
        rc = link_write(c, actor, host_id, resource_id, "manual", true, NULL, &k);
    } else if (mode == STORE_LINK_NONE) {
        rc = link_write(c, actor, host_id, 0, "manual", true, NULL, &k);
    } else {
        /* Back to automatic: matching decides now, audited as one change
         * from the manual state. */
        rc = match_host(c, actor, host_id, &k);
    }
    if (rc == GI_OK)
        rc = host_get(c, host_id, out);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

/* ---- a server's discovered GPUs ---- */

static const char sql_disc_hosts[] =
    "SELECT h.id AS host_id, h.hostname, l.rule, l.manual, h.last_seen_at FROM host_links l JOIN "
    "hosts h ON h.id = l.host_id WHERE l.resource_id = :rid ORDER BY h.hostname, h.id";
static const char sql_disc_gpus[] =
    "SELECT g.uuid, g.model, " GPU_STATE " AS state, g.util_pct, g.mem_used_mib, "
    "g.sample_at, " GPU_OBSERVED
    " AS observed_at FROM host_links l JOIN hosts h ON h.id = l.host_id JOIN gpus g ON g.host_id = "
    "l.host_id WHERE l.resource_id = :rid AND g.parent_uuid IS NULL AND g.missing_since IS NULL "
    "ORDER BY h.hostname, g.idx, g.uuid";

int store_res_discovered(struct store *st, int64_t resource_id, int64_t stale_before, json_t **out)
{
    struct conn *c = db_conn_get(st);
    json_t *hosts = NULL, *gpus = NULL, *models = json_array(), *g;
    double util = 0;
    int64_t nutil = 0, in_use = 0;
    size_t i;
    struct db_stmt *s;
    int rc = GI_INTERNAL;

    *out = NULL;
    db_read_begin(c);
    if (!(s = db_prep(c, sql_disc_hosts)))
        goto cleanup;
    db_bind_int(s, ":rid", resource_id);
    if ((rc = db_collect(c, s, &hosts)) != GI_OK)
        goto cleanup;
    json_array_foreach(hosts, i, g)
        manual_bool(g);
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_disc_gpus)))
        goto cleanup;
    db_bind_int(s, ":rid", resource_id);
    db_bind_int(s, ":stale", stale_before);
    if ((rc = db_collect(c, s, &gpus)) != GI_OK)
        goto cleanup;
    json_array_foreach(gpus, i, g) {
        const char *model = json_string_value(json_object_get(g, "model"));
        const char *state = json_string_value(json_object_get(g, "state"));
        bool seen = model == NULL; /* an unknown model is not listed */
        size_t j;
        json_t *m;
        json_array_foreach(models, j, m)
            seen = seen || strcmp(json_string_value(m), model) == 0;
        if (model && !seen)
            json_array_append_new(models, json_string(model));
        if (state && (strcmp(state, "idle") == 0 || strcmp(state, "in_use") == 0)) {
            util += json_number_value(json_object_get(g, "util_pct"));
            nutil++;
        }
        if (state && strcmp(state, "in_use") == 0)
            in_use++;
    }
    *out = json_pack("{s:I, s:O, s:o, s:I, s:O, s:O}", "count", (json_int_t)json_array_size(gpus),
                     "models", models, "util_avg",
                     nutil ? json_real((double)(int64_t)(util / (double)nutil * 10 + 0.5) / 10)
                           : json_null(),
                     "in_use", (json_int_t)in_use, "hosts", hosts, "gpus", gpus);
    rc = *out ? GI_OK : GI_INTERNAL;
cleanup:
    db_read_end(c);
    json_decref(hosts);
    json_decref(gpus);
    json_decref(models);
    db_conn_put(st, c);
    return rc;
}

/* ---- bringing an existing database up to date ---- */

static const char sql_servers_unkeyed[] =
    "SELECT r.id FROM resources r WHERE r.kind = 'server' AND NOT EXISTS (SELECT 1 FROM "
    "match_keys k WHERE k.resource_id = r.id)";
static const char sql_hosts_unlinked[] =
    "SELECT h.id FROM hosts h WHERE NOT EXISTS (SELECT 1 FROM host_links l WHERE l.host_id = "
    "h.id)";

int store_links_refresh(struct store *st)
{
    struct conn *c = db_conn_get(st);
    struct idset servers = {0}, hosts = {0};
    struct hkeys k;
    struct db_stmt *s;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_servers_unkeyed)))
        goto cleanup;
    if ((rc = idset_collect(c, s, &servers)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = db_prep(c, sql_hosts_unlinked)))
        goto cleanup;
    if ((rc = idset_collect(c, s, &hosts)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < servers.n && rc == GI_OK; i++)
        rc = server_update(c, auto_actor, servers.v[i], false);
    for (size_t i = 0; i < hosts.n && rc == GI_OK; i++) {
        if ((rc = host_keys_of(c, hosts.v[i], &k)) == GI_OK)
            rc = match_host(c, auto_actor, hosts.v[i], &k);
    }
    if (servers.n || hosts.n)
        gi_info("matched %zu servers' keys and %zu hosts", servers.n, hosts.n);
cleanup:
    rc = db_tx_end(c, rc);
    free(servers.v);
    free(hosts.v);
    db_conn_put(st, c);
    return rc;
}
