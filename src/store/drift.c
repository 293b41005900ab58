/* Drift: where the declared inventory and discovery disagree. Computed when
 * read from current rows (servers by data center and kind, their links by
 * resource, GPUs by host: all indexed), never stored, so it cannot go out
 * of date. Also a data center's discovered GPU figures. */
#include "store/store_int.h"
#include "store/gpu_sql.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {
    "gpu_count_mismatch", "gpu_model_mismatch", "retired_busy",    "unallocated_busy",
    "unlinked_host",      "never_seen",         "ambiguous_match", NULL};

/* Servers with what their linked hosts report: how many hosts, physical
 * GPUs present (MIG instances not counted) and GPU records busy now. */
static const char sql_servers[] =
    "SELECT r.id, r.datacenter_id, d.name, r.name, r.state, r.gpu_model, r.gpu_count, "
    "(SELECT COUNT(*) FROM host_links l WHERE l.resource_id = r.id) AS hosts, (SELECT "
    "MIN(h.hostname) FROM host_links l JOIN hosts h ON h.id = l.host_id WHERE l.resource_id = "
    "r.id) AS host, (SELECT MIN(l.host_id) FROM host_links l WHERE l.resource_id = r.id) AS "
    "host_id, (SELECT COUNT(*) FROM host_links l JOIN gpus g ON g.host_id = l.host_id WHERE "
    "l.resource_id = r.id AND g.parent_uuid IS NULL AND g.missing_since IS NULL) AS found, "
    "(SELECT COUNT(*) FROM host_links l JOIN gpus g ON g.host_id = l.host_id WHERE "
    "l.resource_id = r.id AND " GPU_IS_BUSY
    ") AS busy FROM resources r JOIN datacenters d ON d.id = r.datacenter_id WHERE r.kind "
    "= 'server' AND (:dc = 0 OR r.datacenter_id = :dc) AND " STORE_SCOPE_IN(
        "r.datacenter_id") " ORDER BY d.name, r.name, r.id";
static const char sql_models[] =
    "SELECT DISTINCT g.model FROM host_links l JOIN gpus g ON g.host_id = l.host_id WHERE "
    "l.resource_id = :rid AND g.parent_uuid IS NULL AND g.missing_since IS NULL AND g.model IS "
    "NOT NULL ORDER BY g.model";
/* Hosts no server is linked to. */
static const char sql_hosts[] =
    "SELECT h.id, h.hostname, h.datacenter_id, d.name, l.rule, COALESCE(l.manual, 0), l.detail, "
    "(SELECT COUNT(*) FROM gpus g WHERE g.host_id = h.id AND g.parent_uuid IS NULL AND "
    "g.missing_since IS NULL) FROM hosts h LEFT JOIN host_links l ON l.host_id = h.id LEFT JOIN "
    "datacenters d ON d.id = h.datacenter_id WHERE l.resource_id IS NULL AND (:dc = 0 OR "
    "h.datacenter_id = :dc) AND " STORE_SCOPE_IN("h.datacenter_id") " ORDER BY h.hostname, h.id";

bool store_drift_kind_valid(const char *kind)
{
    for (const char *const *k = kinds; kind && *k; k++)
        if (strcmp(*k, kind) == 0)
            return true;
    return false;
}

/* Next word (a run of letters and digits) of *p, lower-cased into w. */
static bool next_word(const char **p, char *w, size_t len)
{
    size_t n = 0;

    while (**p && !isalnum((unsigned char)**p))
        (*p)++;
    if (!**p)
        return false;
    while (**p && isalnum((unsigned char)**p)) {
        if (n + 1 < len)
            w[n++] = (char)tolower((unsigned char)**p);
        (*p)++;
    }
    w[n] = '\0';
    return true;
}

bool store_model_matches(const char *declared, const char *discovered)
{
    const char *p = declared;
    char w[64], v[64];
    bool any = false;

    if (!declared || !discovered)
        return true;
    while (next_word(&p, w, sizeof w)) {
        const char *q = discovered;
        bool found = false;
        any = true;
        while (!found && next_word(&q, v, sizeof v))
            found = strcmp(w, v) == 0;
        if (!found)
            return false;
    }
    return any || !*discovered;
}

static const char *col_text(struct db_stmt *s, int i) { return db_col_text(s, i); }

/* Appends one item. Strings borrowed; expected/found taken (may be NULL). */
static void item_add(json_t *items, const char *kind, int64_t rid, const char *resource, int64_t dc,
                     const char *dcname, int64_t host_id, const char *host, json_t *expected,
                     json_t *found, const char *message)
{
    json_array_append_new(
        items, json_pack("{s:s, s:o, s:s?, s:o, s:s?, s:o, s:s?, s:o, s:o, s:s}", "kind", kind,
                         "resource_id", rid ? json_integer(rid) : json_null(), "resource", resource,
                         "datacenter_id", dc ? json_integer(dc) : json_null(), "datacenter", dcname,
                         "host_id", host_id ? json_integer(host_id) : json_null(), "host", host,
                         "expected", expected ? expected : json_null(), "found",
                         found ? found : json_null(), "message", message));
}

/* The distinct discovered models of a server, and whether one of them
 * disagrees with the declared model. */
static int server_models(struct conn *c, int64_t rid, const char *declared, char *found, size_t len,
                         bool *mismatch)
{
    struct db_stmt *s = db_prep(c, sql_models);
    size_t n = 0;
    int step;

    *mismatch = false;
    found[0] = '\0';
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":rid", rid);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *m = col_text(s, 0);
        int w = snprintf(found + n, len - n, "%s%s", n ? ", " : "", m);
        if (w > 0 && (size_t)w < len - n)
            n += (size_t)w;
        if (!store_model_matches(declared, m))
            *mismatch = true;
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Every drift item of the servers, in data-center and name order. */
static int server_drift(struct conn *c, const struct store_drift_filter *f, json_t *items)
{
    struct db_stmt *s = db_prep(c, sql_servers);
    struct row {
        int64_t id, dc, count, hosts, host_id, found, busy;
        char dcname[128], name[128], state[16], model[128], host[256];
    } *rows = NULL, *nr;
    size_t n = 0, cap = 0;
    char msg[1536], models[512];
    int step, rc = GI_OK;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":dc", f->datacenter_id);
    db_bind_scope(s, &f->scope);
    db_bind_int(s, ":stale", f->stale_before);
    /* Rows are copied out first: the model query runs per server. */
    while ((step = db_step(c, s)) == DB_ROW) {
        struct row *r;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            if ((nr = realloc(rows, cap * sizeof *rows)) == NULL) {
                rc = GI_INTERNAL;
                break;
            }
            rows = nr;
        }
        r = &rows[n++];
        r->id = db_col_int(s, 0);
        r->dc = db_col_int(s, 1);
        gi_strlcpy(r->dcname, col_text(s, 2) ? col_text(s, 2) : "", sizeof r->dcname);
        gi_strlcpy(r->name, col_text(s, 3) ? col_text(s, 3) : "", sizeof r->name);
        gi_strlcpy(r->state, col_text(s, 4) ? col_text(s, 4) : "", sizeof r->state);
        gi_strlcpy(r->model, col_text(s, 5) ? col_text(s, 5) : "", sizeof r->model);
        r->count = db_col_int(s, 6);
        r->hosts = db_col_int(s, 7);
        gi_strlcpy(r->host, col_text(s, 8) ? col_text(s, 8) : "", sizeof r->host);
        r->host_id = db_col_int(s, 9);
        r->found = db_col_int(s, 10);
        r->busy = db_col_int(s, 11);
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        const struct row *r = &rows[i];
        const char *host = r->host[0] ? r->host : NULL;
        bool mismatch;
        if (r->hosts == 0) {
            /* Retired servers are not expected to report. */
            if (r->count > 0 && strcmp(r->state, "retired") != 0) {
                snprintf(msg, sizeof msg,
                         "server %s declares %lld GPUs but no discovered host is linked to it",
                         r->name, (long long)r->count);
                item_add(items, "never_seen", r->id, r->name, r->dc, r->dcname, 0, NULL,
                         json_integer(r->count), json_integer(0), msg);
            }
            continue;
        }
        if (r->found != r->count) {
            snprintf(msg, sizeof msg, "server %s declares %lld GPUs; discovery finds %lld on %s",
                     r->name, (long long)r->count, (long long)r->found, r->host);
            item_add(items, "gpu_count_mismatch", r->id, r->name, r->dc, r->dcname, r->host_id,
                     host, json_integer(r->count), json_integer(r->found), msg);
        }
        if (r->model[0] && r->found > 0) {
            if ((rc = server_models(c, r->id, r->model, models, sizeof models, &mismatch)) != GI_OK)
                break;
            if (mismatch) {
                snprintf(msg, sizeof msg, "server %s declares %s; discovery finds %s on %s",
                         r->name, r->model, models, r->host);
                item_add(items, "gpu_model_mismatch", r->id, r->name, r->dc, r->dcname, r->host_id,
                         host, json_string(r->model), json_string(models), msg);
            }
        }
        if (r->busy > 0 &&
            (strcmp(r->state, "maintenance") == 0 || strcmp(r->state, "retired") == 0)) {
            snprintf(msg, sizeof msg,
                     "server %s is %s but %lld of its GPUs are busy (%.0f%% or more)", r->name,
                     r->state, (long long)r->busy, STORE_BUSY_PCT);
            item_add(items, "retired_busy", r->id, r->name, r->dc, r->dcname, r->host_id, host,
                     json_integer(0), json_integer(r->busy), msg);
        } else if (r->busy > 0 && strcmp(r->state, "available") == 0) {
            snprintf(msg, sizeof msg,
                     "server %s is available (not allocated) but %lld of its GPUs are busy "
                     "(%.0f%% or more)",
                     r->name, (long long)r->busy, STORE_BUSY_PCT);
            item_add(items, "unallocated_busy", r->id, r->name, r->dc, r->dcname, r->host_id, host,
                     json_integer(0), json_integer(r->busy), msg);
        }
    }
    free(rows);
    return rc;
}

/* Hosts without a server: ambiguous matches and hosts nothing fits. */
static int host_drift(struct conn *c, const struct store_drift_filter *f, json_t *items)
{
    struct db_stmt *s = db_prep(c, sql_hosts);
    char msg[1024];
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":dc", f->datacenter_id);
    db_bind_scope(s, &f->scope);
    while ((step = db_step(c, s)) == DB_ROW) {
        int64_t id = db_col_int(s, 0), dc = db_col_int(s, 2);
        const char *host = col_text(s, 1), *dcname = col_text(s, 3), *rule = col_text(s, 4);
        const char *detail = col_text(s, 6);
        bool manual = db_col_int(s, 5) != 0;
        int64_t gpus = db_col_int(s, 7);
        if (rule && strcmp(rule, "ambiguous") == 0) {
            snprintf(msg, sizeof msg, "host %s is not linked: %s", host, detail ? detail : "");
            item_add(items, "ambiguous_match", 0, NULL, dc, dcname, id, host, NULL,
                     json_integer(gpus), msg);
        } else {
            snprintf(msg, sizeof msg, "host %s (%lld GPUs) has no inventory server%s", host,
                     (long long)gpus, manual ? " (unlinked by an admin)" : "");
            item_add(items, "unlinked_host", 0, NULL, dc, dcname, id, host, NULL,
                     json_integer(gpus), msg);
        }
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

int store_drift_list(struct store *st, const struct store_drift_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total, json_t **counts)
{
    struct conn *c = db_conn_get(st);
    json_t *all = json_array(), *page = json_array(), *cnt = json_object(), *it;
    int64_t matched = 0, limit = pg ? pg->limit : 100, offset = pg ? pg->offset : 0;
    size_t i;
    int rc;

    *items = *counts = NULL;
    for (const char *const *k = kinds; *k; k++)
        json_object_set_new(cnt, *k, json_integer(0));
    db_read_begin(c);
    rc = server_drift(c, f, all);
    if (rc == GI_OK)
        rc = host_drift(c, f, all);
    db_read_end(c);
    db_conn_put(st, c);
    if (rc != GI_OK) {
        json_decref(all);
        json_decref(page);
        json_decref(cnt);
        return rc;
    }
    /* Counts cover every kind; the page and total only the asked one. */
    json_array_foreach(all, i, it) {
        const char *kind = json_string_value(json_object_get(it, "kind"));
        json_t *n = json_object_get(cnt, kind);
        json_integer_set(n, json_integer_value(n) + 1);
        if (f->kind && strcmp(f->kind, kind) != 0)
            continue;
        if (matched >= offset && matched < offset + limit)
            json_array_append(page, it);
        matched++;
    }
    json_decref(all);
    *items = page;
    *total = matched;
    *counts = cnt;
    return GI_OK;
}

/* Present physical GPUs of a data center by state (as the GPU list judges
 * it): in use, idle, stale, unknown, and how many are on linked hosts. */
#define DC_STATE_N(st) "COALESCE(SUM(CASE WHEN " GPU_STATE " = '" st "' THEN 1 ELSE 0 END), 0), "
static const char sql_dc_gpus[] =
    "SELECT COUNT(*), " DC_STATE_N("in_use") DC_STATE_N("idle") DC_STATE_N("stale")
        DC_STATE_N("unknown") "COALESCE(SUM(CASE WHEN l.resource_id IS NOT NULL THEN 1 ELSE 0 "
                              "END), 0) FROM gpus g JOIN hosts h ON h.id = g.host_id LEFT JOIN "
                              "host_links l ON l.host_id = h.id WHERE h.datacenter_id = :dc AND "
                              "g.parent_uuid IS NULL AND g.missing_since IS NULL";
/* Driven from the data center's discovered hosts (a linked host takes its
 * server's data center), not from its resources: an overview then costs
 * what the fleet's discovery holds, not one probe per inventory record. */
static const char sql_dc_seen[] =
    "SELECT COUNT(DISTINCT l.resource_id) FROM hosts h JOIN host_links l ON l.host_id = h.id "
    "WHERE h.datacenter_id = :dc AND l.resource_id IS NOT NULL";

void dc_discovered_prep(struct conn *c, int64_t id, int64_t stale_before, struct db_stmt *s[2])
{
    s[0] = db_prep(c, sql_dc_gpus);
    s[1] = db_prep(c, sql_dc_seen);
    for (int i = 0; i < 2; i++)
        if (s[i])
            db_bind_int(s[i], ":dc", id);
    if (s[0])
        db_bind_int(s[0], ":stale", stale_before);
}

int dc_discovered_read(struct conn *c, struct db_stmt *const s[2], json_t **out)
{
    json_int_t v[6] = {0};
    int64_t seen = 0;
    int rc, step = db_step(c, s[0]);

    *out = NULL;
    if (step == DB_ROW)
        for (int i = 0; i < 6; i++)
            v[i] = db_col_int(s[0], i);
    db_reset(s[0]);
    if (step != DB_ROW)
        return db_status(step);
    if ((rc = db_fetch_int(c, s[1], &seen)) != GI_OK)
        return rc;
    *out = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "total", v[0], "in_use", v[1], "idle",
                     v[2], "stale", v[3], "unknown", v[4], "on_linked_hosts", v[5], "servers_seen",
                     (json_int_t)seen);
    return *out ? GI_OK : GI_INTERNAL;
}
