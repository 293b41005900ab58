/* The merge of a cloud instance's superseded placeholder GPUs into the
 * real GPUs an agent on the instance reported, inside the cloud sync's
 * transaction. See store_int.h (cloud_merge_instance) and
 * docs/ARCHITECTURE.md ("Cloud instances").
 *
 * Pairing: the real GPUs are the host's present GPUs with real UUIDs, not
 * MIG instances, that no placeholder was merged into yet. When each of
 * them has an index and no two share one, placeholder n pairs with the
 * real GPU of index n; otherwise the placeholders in index order pair
 * with the real GPUs in order of index, then PCI bus id, then record id.
 * A placeholder left without a partner just ends (it is missing).
 *
 * Per pair, placeholder P into real GPU R:
 * - P's usage history moves to R (usage_merge_gpu: an hour both have
 *   keeps R's rows);
 * - P's explicit ownership assignments become R's when R has none, and
 *   R's usage is re-attributed from the earliest of them;
 * - P's shares of billing lines become R's (added to R's share of a line
 *   that had both), and the lines' GPU lists name R instead of P;
 * - an asset linked to P is linked to R, unless an asset is already;
 * - the event merged_into {"uuid": R} on P and merged_from {"uuid": P} on
 *   R, and cloud_gpus.superseded_by = R. */
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

#define STATEMENTS(X)                                                                              \
    X(PLACEHOLDERS, "SELECT c.gpu_id, c.idx, g.uuid FROM cloud_gpus c JOIN gpus g ON g.id = "      \
                    "c.gpu_id WHERE c.instance_row = :id AND c.superseded_at IS NOT NULL AND "     \
                    "c.superseded_by IS NULL ORDER BY c.idx")                                      \
    X(REALS, "SELECT g.id, g.idx, g.uuid FROM gpus g WHERE g.host_id = :hid AND g.parent_uuid "    \
             "IS NULL AND g.missing_since IS NULL AND g.uuid NOT LIKE 'cloud:%' AND NOT EXISTS "   \
             "(SELECT 1 FROM cloud_gpus m WHERE m.superseded_by = g.id) ORDER BY CASE WHEN g.idx " \
             "IS NULL THEN 1 ELSE 0 END, g.idx, COALESCE(g.pci_bus_id, ''), g.id")                 \
    X(MARK, "UPDATE cloud_gpus SET superseded_by = :to WHERE gpu_id = :from")                      \
    X(ASSIGN_FROM, "SELECT MIN(effective_from) FROM owner_assignments WHERE target = 'gpu' AND "   \
                   "target_id = :from AND NOT EXISTS (SELECT 1 FROM owner_assignments o WHERE "    \
                   "o.target = 'gpu' AND o.target_id = :to)")                                      \
    X(ASSIGN_MOVE, "UPDATE owner_assignments SET target_id = :to WHERE target = 'gpu' AND "        \
                   "target_id = :from")                                                            \
    X(COST_ONTO, "UPDATE billing_costs SET cost_micros = cost_micros + (SELECT p.cost_micros "     \
                 "FROM billing_costs p WHERE p.line_id = billing_costs.line_id AND p.gpu_id = "    \
                 ":from) WHERE gpu_id = :to AND line_id IN (SELECT line_id FROM billing_costs "    \
                 "WHERE gpu_id = :from)")                                                          \
    X(COST_DROP, "DELETE FROM billing_costs WHERE gpu_id = :from AND line_id IN (SELECT line_id "  \
                 "FROM billing_costs WHERE gpu_id = :to)")                                         \
    X(COST_MOVE, "UPDATE billing_costs SET gpu_id = :to WHERE gpu_id = :from")                     \
    X(LINES_OF, "SELECT l.id, l.gpu_ids FROM billing_lines l WHERE l.id IN (SELECT line_id FROM "  \
                "billing_costs WHERE gpu_id = :to) ORDER BY l.id")                                 \
    X(LINE_SET, "UPDATE billing_lines SET gpu_ids = :gpus WHERE id = :id")                         \
    X(ASSET_OF, "SELECT a.id FROM assets a WHERE a.gpu_uuid = :from_uuid AND NOT EXISTS (SELECT "  \
                "1 FROM assets b WHERE b.gpu_uuid = :to_uuid) ORDER BY a.id LIMIT 1")              \
    X(ASSET_SET, "UPDATE assets SET gpu_uuid = :to_uuid, updated_at = :now WHERE id = :id")        \
    X(EVENT_ADD, "INSERT INTO gpu_events (gpu_uuid, at, kind, detail, source_id) VALUES (:uuid, "  \
                 ":now, :kind, :detail, NULL)")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* GPUs of one instance or host taken at most (as cloud.c). */
#define MERGE_GPUS_MAX 64

struct gpu_ref {
    int64_t id, idx;
    bool has_idx;
    char uuid[128];
};

/* Reads up to MERGE_GPUS_MAX rows (id, idx, uuid) of s into v. */
static int read_refs(struct conn *c, struct db_stmt *s, struct gpu_ref *v, size_t *n)
{
    int step;

    *n = 0;
    while ((step = db_step(c, s)) == DB_ROW && *n < MERGE_GPUS_MAX) {
        struct gpu_ref *r = &v[(*n)++];
        r->id = db_col_int(s, 0);
        r->has_idx = !db_col_is_null(s, 1);
        r->idx = r->has_idx ? db_col_int(s, 1) : -1;
        gi_strlcpy(r->uuid, db_col_text(s, 2) ? db_col_text(s, 2) : "", sizeof r->uuid);
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

static int exec_pair(struct conn *c, enum stmt_id id, int64_t from, int64_t to)
{
    struct db_stmt *s = prep(c, id);

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    return db_exec_done(c, s);
}

/* P's explicit assignments become R's when R has none. */
static int merge_owner(struct conn *c, int64_t from, int64_t to)
{
    struct db_stmt *s = prep(c, ST_ASSIGN_FROM);
    int64_t since = 0;
    bool any;
    int step, rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    step = db_step(c, s);
    any = step == DB_ROW && !db_col_is_null(s, 0);
    if (any)
        since = db_col_int(s, 0);
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (!any)
        return GI_OK;
    if ((rc = exec_pair(c, ST_ASSIGN_MOVE, from, to)) != GI_OK)
        return rc;
    return usage_reattribute(c, to, since);
}

/* The GPU list of a line with `from` replaced by `to` (once); NULL when
 * `from` is not in it. Caller frees. */
static json_t *ids_replaced(const char *text, int64_t from, int64_t to)
{
    json_t *in = text ? json_loads(text, 0, NULL) : NULL, *out = NULL, *v;
    bool seen_from = false, seen_to = false;
    size_t i;

    if (!json_is_array(in))
        goto cleanup;
    json_array_foreach(in, i, v) {
        if (json_integer_value(v) == from)
            seen_from = true;
        if (json_integer_value(v) == to)
            seen_to = true;
    }
    if (!seen_from || !(out = json_array()))
        goto cleanup;
    json_array_foreach(in, i, v) {
        int64_t id = json_integer_value(v);
        if (id == from && !seen_to)
            json_array_append_new(out, json_integer(to));
        else if (id != from)
            json_array_append(out, v);
    }
cleanup:
    json_decref(in);
    return out;
}

/* P's billing shares become R's. */
static int merge_billing(struct conn *c, int64_t from, int64_t to)
{
    static const enum stmt_id steps[] = {ST_COST_ONTO, ST_COST_DROP, ST_COST_MOVE};
    struct line {
        int64_t id;
        json_t *gpus;
    } *lines = NULL;
    size_t n = 0, cap = 0;
    struct db_stmt *s;
    int rc = GI_OK, step;

    for (size_t i = 0; i < sizeof steps / sizeof *steps && rc == GI_OK; i++)
        rc = exec_pair(c, steps[i], from, to);
    if (rc != GI_OK)
        return rc;
    if (!(s = prep(c, ST_LINES_OF)))
        return GI_INTERNAL;
    db_bind_int(s, ":to", to);
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *gpus = ids_replaced(db_col_text(s, 1), from, to);
        if (!gpus)
            continue;
        if (n == cap) {
            struct line *p = realloc(lines, (cap ? cap * 2 : 16) * sizeof *lines);
            if (!p) {
                json_decref(gpus);
                rc = GI_INTERNAL;
                break;
            }
            lines = p;
            cap = cap ? cap * 2 : 16;
        }
        lines[n++] = (struct line){db_col_int(s, 0), gpus};
    }
    db_reset(s);
    if (rc == GI_OK && step != DB_DONE)
        rc = db_status(step);
    for (size_t i = 0; i < n; i++) {
        if (rc == GI_OK) {
            if ((s = prep(c, ST_LINE_SET))) {
                db_bind_json(s, ":gpus", lines[i].gpus);
                db_bind_int(s, ":id", lines[i].id);
                rc = db_exec_done(c, s);
            } else {
                rc = GI_INTERNAL;
            }
        }
        json_decref(lines[i].gpus);
    }
    free(lines);
    return rc;
}

/* An asset linked to P is linked to R unless one already is. */
static int merge_asset(struct conn *c, const struct gpu_ref *p, const struct gpu_ref *r,
                       int64_t now)
{
    struct db_stmt *s = prep(c, ST_ASSET_OF);
    json_t *detail;
    int64_t id = 0;
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":from_uuid", p->uuid);
    db_bind_text(s, ":to_uuid", r->uuid);
    if ((rc = db_fetch_int(c, s, &id)) == GI_NOT_FOUND)
        return GI_OK;
    if (rc != GI_OK)
        return rc;
    if (!(s = prep(c, ST_ASSET_SET)))
        return GI_INTERNAL;
    db_bind_text(s, ":to_uuid", r->uuid);
    db_bind_int(s, ":now", now);
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    detail = json_pack("{s:{s:s,s:s},s:s}", "gpu_uuid", "from", p->uuid, "to", r->uuid, "reason",
                       "merged");
    rc = detail ? asset_event_append(c, id, "updated", "system", detail, now) : GI_INTERNAL;
    json_decref(detail);
    return rc;
}

static int event_add(struct conn *c, const char *uuid, const char *kind, const char *other,
                     int64_t now)
{
    struct db_stmt *s = prep(c, ST_EVENT_ADD);
    json_t *detail = json_pack("{s:s}", "uuid", other);
    int rc = GI_INTERNAL;

    if (s && detail) {
        db_bind_text(s, ":uuid", uuid);
        db_bind_int(s, ":now", now);
        db_bind_text(s, ":kind", kind);
        db_bind_json(s, ":detail", detail);
        rc = db_exec_done(c, s);
    }
    json_decref(detail);
    return rc;
}

static int merge_pair(struct conn *c, const struct gpu_ref *p, const struct gpu_ref *r, int64_t now)
{
    int rc = usage_merge_gpu(c, p->id, r->id, now);

    if (rc == GI_OK)
        rc = merge_owner(c, p->id, r->id);
    if (rc == GI_OK)
        rc = merge_billing(c, p->id, r->id);
    if (rc == GI_OK)
        rc = merge_asset(c, p, r, now);
    if (rc == GI_OK)
        rc = exec_pair(c, ST_MARK, p->id, r->id);
    if (rc == GI_OK)
        rc = event_add(c, p->uuid, "merged_into", r->uuid, now);
    if (rc == GI_OK)
        rc = event_add(c, r->uuid, "merged_from", p->uuid, now);
    if (rc == GI_OK)
        rc = owner_refresh(c, r->id);
    return rc;
}

/* Whether every real GPU has an index of its own. */
static bool indexed(const struct gpu_ref *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!v[i].has_idx)
            return false;
        for (size_t j = 0; j < i; j++)
            if (v[j].idx == v[i].idx)
                return false;
    }
    return true;
}

int cloud_merge_instance(struct conn *c, int64_t instance_row, int64_t host_id, int64_t now)
{
    struct gpu_ref *ph = calloc(2 * MERGE_GPUS_MAX, sizeof *ph), *real = ph + MERGE_GPUS_MAX;
    size_t nph = 0, nreal = 0;
    struct db_stmt *s;
    int rc = GI_INTERNAL;
    bool by_index;

    if (!ph)
        return GI_INTERNAL;
    if (!(s = prep(c, ST_PLACEHOLDERS)))
        goto cleanup;
    db_bind_int(s, ":id", instance_row);
    if ((rc = read_refs(c, s, ph, &nph)) != GI_OK || nph == 0)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_REALS)))
        goto cleanup;
    db_bind_int(s, ":hid", host_id);
    if ((rc = read_refs(c, s, real, &nreal)) != GI_OK)
        goto cleanup;
    by_index = indexed(real, nreal);
    for (size_t i = 0; i < nph && rc == GI_OK; i++) {
        const struct gpu_ref *r = NULL;
        if (by_index) {
            for (size_t j = 0; j < nreal && !r; j++)
                if (real[j].idx == ph[i].idx)
                    r = &real[j];
        } else if (i < nreal) {
            r = &real[i];
        }
        if (r)
            rc = merge_pair(c, &ph[i], r, now);
    }
cleanup:
    free(ph);
    return rc;
}
