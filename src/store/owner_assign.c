/* Ownership assignments: explicit owners of a GPU, host or resource with
 * their history, and the job that recomputes the owner of GPUs whose
 * assignments or rules came into force or ended. Resolution and the
 * materialized owner are in ownership.c. See store_int.h and store.h. */
#include "store/owner_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASSIGN_COLS                                                                                \
    "id, target, target_id, team, env, pool, effective_from, effective_to, created_at, "           \
    "created_by"

#define STATEMENTS(X)                                                                              \
    X(GPU_BY_UUID, "SELECT id FROM gpus WHERE uuid = :key")                                        \
    X(HOST_BY_NAME, "SELECT id FROM hosts WHERE hostname = :key")                                  \
    X(HOST_BY_ID, "SELECT id FROM hosts WHERE id = :id")                                           \
    X(RES_BY_ID, "SELECT id FROM resources WHERE id = :id")                                        \
    X(ASSIGN_LATEST, "SELECT " ASSIGN_COLS " FROM owner_assignments WHERE target = :target AND "   \
                     "target_id = :tid ORDER BY effective_from DESC, id DESC LIMIT 1")             \
    X(ASSIGN_CLOSE, "UPDATE owner_assignments SET effective_to = :eff WHERE id = :id")             \
    X(ASSIGN_ADD, "INSERT INTO owner_assignments (target, target_id, team, env, pool, "            \
                  "effective_from, created_at, created_by) VALUES (:target, :tid, :team, :env, "   \
                  ":pool, :eff, :now, :actor) RETURNING id")                                       \
    X(ASSIGN_GET, "SELECT " ASSIGN_COLS " FROM owner_assignments WHERE id = :id")                  \
    X(ASSIGN_HISTORY, "SELECT " ASSIGN_COLS " FROM owner_assignments WHERE target = :target AND "  \
                      "target_id = :tid ORDER BY effective_from DESC, id DESC")                    \
    X(CLOCK_GET, "SELECT refreshed_to FROM owner_clock WHERE id = 1")                              \
    X(CLOCK_SET, "INSERT INTO owner_clock (id, refreshed_to) VALUES (1, :t) ON CONFLICT (id) DO "  \
                 "UPDATE SET refreshed_to = excluded.refreshed_to")                                \
    X(RULES_DUE, "SELECT COUNT(*) FROM owner_rules WHERE (effective_from > :w AND "                \
                 "effective_from <= :now) OR (effective_to > :w AND effective_to <= :now)")        \
    X(ASSIGN_DUE, "SELECT target, target_id FROM owner_assignments WHERE (effective_from > :w "    \
                  "AND effective_from <= :now) OR (effective_to > :w AND effective_to <= :now)")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- explicit assignments ---- */

static const char *const target_names[3] = {"gpu", "host", "resource"};

/* The id of the target `key` names. */
static int target_id(struct conn *c, enum store_owner_target t, const char *key, int64_t *id)
{
    struct db_stmt *s;
    int64_t n;
    int rc;

    if (t == STORE_OWNER_GPU || t == STORE_OWNER_HOST) {
        if (!(s = prep(c, t == STORE_OWNER_GPU ? ST_GPU_BY_UUID : ST_HOST_BY_NAME)))
            return GI_INTERNAL;
        db_bind_text(s, ":key", key);
        rc = db_fetch_int(c, s, id);
        if (rc != GI_NOT_FOUND || t == STORE_OWNER_GPU)
            return rc;
    }
    if (gi_parse_int64(key, 1, INT64_MAX, &n) != GI_OK)
        return GI_NOT_FOUND;
    if (!(s = prep(c, t == STORE_OWNER_HOST ? ST_HOST_BY_ID : ST_RES_BY_ID)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", n);
    return db_fetch_int(c, s, id);
}

static void assign_doc_fix(json_t *a)
{
    owner_time_member(a, "effective_from");
    owner_time_member(a, "effective_to");
}

static int assign_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_ASSIGN_GET);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, out)) == GI_OK)
        assign_doc_fix(*out);
    return rc;
}

static void err_set(struct store_owner_err *err, const char *field, const char *msg)
{
    if (!err)
        return;
    gi_strlcpy(err->field, field, sizeof err->field);
    gi_strlcpy(err->message, msg, sizeof err->message);
}

/* One assignment inside the caller's transaction (see store_owner_assign). */
static int assign_tx(struct conn *c, const char *actor, enum store_owner_target target,
                     const char *key, const struct store_owner_set *in, json_t **out,
                     struct store_owner_err *err)
{
    static const char *const names[3] = {"team", "env", "pool"};
    const char *given[3] = {in->team, in->env, in->pool};
    const bool has[3] = {in->has_team, in->has_env, in->has_pool};
    struct db_stmt *s;
    json_t *before = NULL;
    int64_t tid = 0, now = gi_now(), eff = in->effective_from ? in->effective_from : now, id;
    int64_t *gpus = NULL;
    size_t ngpus = 0;
    const char *merged[3];
    char msg[200];
    int rc;

    *out = NULL;
    if ((rc = target_id(c, target, key, &tid)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ASSIGN_LATEST)))
        goto cleanup;
    db_bind_text(s, ":target", target_names[target]);
    db_bind_int(s, ":tid", tid);
    rc = db_fetch_one(c, s, &before);
    if (rc != GI_OK && rc != GI_NOT_FOUND)
        goto cleanup;
    rc = GI_OK;
    if (before && eff < json_integer_value(json_object_get(before, "effective_from"))) {
        char ts[32];
        gi_time_format(json_integer_value(json_object_get(before, "effective_from")), ts,
                       sizeof ts);
        snprintf(msg, sizeof msg,
                 "effective_from is before the assignment in force since %s; the past is not "
                 "rewritten",
                 ts);
        err_set(err, "effective_from", msg);
        rc = GI_CONFLICT;
        goto cleanup;
    }
    for (int f = 0; f < 3; f++) {
        merged[f] = has[f] ? given[f] : json_string_value(json_object_get(before, names[f]));
        if (has[f] && given[f] && (rc = owner_dim_check(c, names[f], given[f])) != GI_OK) {
            snprintf(msg, sizeof msg, "no %s named '%s'", owner_field_kind(names[f]), given[f]);
            err_set(err, names[f], msg);
            goto cleanup;
        }
    }
    if (before) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_ASSIGN_CLOSE)))
            goto cleanup;
        db_bind_int(s, ":id", json_integer_value(json_object_get(before, "id")));
        db_bind_int(s, ":eff", eff);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
        assign_doc_fix(before);
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ASSIGN_ADD)))
        goto cleanup;
    db_bind_text(s, ":target", target_names[target]);
    db_bind_int(s, ":tid", tid);
    db_bind_opt_text(s, ":team", merged[0]);
    db_bind_opt_text(s, ":env", merged[1]);
    db_bind_opt_text(s, ":pool", merged[2]);
    db_bind_int(s, ":eff", eff);
    db_bind_int(s, ":now", now);
    db_bind_text(s, ":actor", actor);
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK || (rc = assign_get(c, id, out)) != GI_OK ||
        (rc = db_audit(c, actor, "owner_assign", target_names[target], tid, before, *out)) !=
            GI_OK ||
        (rc = owner_bump(c)) != GI_OK || (rc = owner_affected_gpus(c, target, tid, &gpus, &ngpus)))
        goto cleanup;
    for (size_t i = 0; i < ngpus && rc == GI_OK; i++)
        if ((rc = usage_reattribute(c, gpus[i], eff)) == GI_OK)
            rc = owner_refresh(c, gpus[i]);
cleanup:
    if (rc != GI_OK) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(before);
    free(gpus);
    return rc;
}

int store_owner_assign(struct store *st, const char *actor, enum store_owner_target target,
                       const char *key, const struct store_owner_set *in, json_t **out,
                       struct store_owner_err *err)
{
    struct conn *c = db_conn_get(st);
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = assign_tx(c, actor, target, key, in, out, err);
    rc = db_tx_end_doc(c, rc, out);
    owner_touch();
    db_conn_put(st, c);
    return rc;
}

int store_owner_import(struct store *st, const char *actor, const struct store_owner_row *rows,
                       size_t n, bool dry_run, int *row_status, struct store_owner_err *row_err)
{
    struct conn *c = db_conn_get(st);
    int rc = db_tx_begin(c);

    for (size_t i = 0;
         i < n && (rc == GI_OK || rc == GI_INVALID || rc == GI_NOT_FOUND || rc == GI_CONFLICT);
         i++) {
        json_t *out = NULL;
        int one;
        row_err[i] = (struct store_owner_err){"", ""};
        if ((one = db_savepoint(c)) == GI_OK)
            one = assign_tx(c, actor, rows[i].target, rows[i].key, &rows[i].set, &out, &row_err[i]);
        db_savepoint_end(c, one);
        json_decref(out);
        row_status[i] = one;
        if (one != GI_OK && rc == GI_OK)
            rc = one;
    }
    /* A dry run, or a file with a bad row, writes nothing (db_tx_end rolls
     * back for any status but GI_OK). */
    if (rc == GI_OK && dry_run)
        db_tx_end(c, GI_CONFLICT);
    else
        rc = db_tx_end(c, rc);
    owner_touch();
    db_conn_put(st, c);
    return rc;
}

/* ---- assignments and rules coming into force ---- */

/* One due assignment's target. */
struct due_target {
    enum store_owner_target target;
    int64_t id;
};

/* The targets of the assignments starting or ending in (w, now] (caller
 * frees). */
static int due_targets(struct conn *c, int64_t w, int64_t now, struct due_target **out, size_t *n)
{
    struct db_stmt *s = prep(c, ST_ASSIGN_DUE);
    size_t cap = 0;
    int step;

    *out = NULL;
    *n = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":w", w);
    db_bind_int(s, ":now", now);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *t = db_col_text(s, 0);
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            struct due_target *nt = realloc(*out, nc * sizeof *nt);
            if (!nt) {
                db_reset(s);
                return GI_INTERNAL;
            }
            *out = nt;
            cap = nc;
        }
        (*out)[*n].target = t && strcmp(t, "gpu") == 0    ? STORE_OWNER_GPU
                            : t && strcmp(t, "host") == 0 ? STORE_OWNER_HOST
                                                          : STORE_OWNER_RESOURCE;
        (*out)[(*n)++].id = db_col_int(s, 1);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Inside the caller's transaction: recomputes what came into force in
 * (w, now]; *gpus counts the GPUs recomputed. */
static int due_tx(struct conn *c, int64_t w, int64_t now, int64_t *gpus)
{
    struct due_target *due = NULL;
    int64_t rules = 0, *ids = NULL;
    size_t ndue = 0, nids = 0;
    struct db_stmt *s = prep(c, ST_RULES_DUE);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":w", w);
    db_bind_int(s, ":now", now);
    if ((rc = db_fetch_int(c, s, &rules)) != GI_OK)
        return rc;
    if (rules > 0) {
        /* A rule may match any GPU. */
        if ((rc = owner_gpu_ids(c, &ids, &nids)) == GI_OK)
            for (size_t i = 0; i < nids && rc == GI_OK; i++, (*gpus)++)
                rc = owner_refresh_at(c, ids[i], now);
        free(ids);
        return rc;
    }
    if ((rc = due_targets(c, w, now, &due, &ndue)) != GI_OK)
        goto cleanup;
    for (size_t d = 0; d < ndue && rc == GI_OK; d++) {
        if ((rc = owner_affected_gpus(c, due[d].target, due[d].id, &ids, &nids)) == GI_OK)
            for (size_t i = 0; i < nids && rc == GI_OK; i++, (*gpus)++)
                rc = owner_refresh_at(c, ids[i], now);
        free(ids);
        ids = NULL;
    }
cleanup:
    free(due);
    return rc;
}

int store_owner_due(struct store *st, int64_t now, int64_t *gpus)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t w = 0;
    int rc = db_tx_begin(c), step;

    *gpus = 0;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_CLOCK_GET)))
        goto cleanup;
    /* No row yet (a database from before the job): everything that ever
     * came into force is looked at once. */
    step = db_step(c, s);
    if (step == DB_ROW)
        w = db_col_int(s, 0);
    db_reset(s);
    rc = step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
    if (rc != GI_OK || w >= now)
        goto cleanup;
    if ((rc = due_tx(c, w, now, gpus)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_CLOCK_SET)))
        goto cleanup;
    db_bind_int(s, ":t", now);
    rc = db_exec_done(c, s);
cleanup:
    rc = db_tx_end(c, rc);
    if (*gpus > 0)
        owner_touch();
    db_conn_put(st, c);
    return rc;
}

int store_owner_history(struct store *st, enum store_owner_target target, const char *key,
                        json_t **items)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t tid;
    size_t i;
    json_t *a;
    int rc;

    *items = NULL;
    db_read_begin(c);
    if ((rc = target_id(c, target, key, &tid)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ASSIGN_HISTORY)))
        goto cleanup;
    db_bind_text(s, ":target", target_names[target]);
    db_bind_int(s, ":tid", tid);
    if ((rc = db_collect(c, s, items)) != GI_OK)
        goto cleanup;
    json_array_foreach(*items, i, a)
        assign_doc_fix(a);
cleanup:
    db_read_end(c);
    db_conn_put(st, c);
    return rc;
}
