/* Re-attribution and re-pricing of rolled-up hours: the usage:rollup job
 * (usage.c) works the queue in usage_redo that ownership changes
 * (usage_reattribute) and price changes (usage_reprice) fill, one chunk of
 * REDO_ROWS hourly rows per transaction, re-summing the days and groups
 * those rows count in. See usage_int.h. */
#include "store/store_int.h"
#include "store/usage_int.h"
#include "core/status.h"
#include "core/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Rows of usage_redo worked per chunk. */
#define REDO_ROWS 500

#define STATEMENTS(X)                                                                              \
    X(REDO_FIRST, "SELECT id, what, gpu_id, next_hour, next_gpu FROM usage_redo ORDER BY id "      \
                  "LIMIT 1")                                                                       \
    X(REDO_ROWS_Q,                                                                                 \
      "SELECT u.gpu_id, u.hour, g.model, u.env, u.cloud, u.pool FROM usage_hourly u LEFT JOIN "    \
      "gpus g ON g.id = u.gpu_id WHERE (:gid = 0 OR u.gpu_id = :gid) AND (u.hour > :hour OR "      \
      "(u.hour = :hour AND u.gpu_id >= :next)) ORDER BY u.hour, u.gpu_id LIMIT :n")                \
    X(REDO_MOVE, "UPDATE usage_redo SET next_hour = :hour, next_gpu = :next WHERE id = :id")       \
    X(REDO_DONE, "DELETE FROM usage_redo WHERE id = :id")                                          \
    X(SET_OWNER, "UPDATE usage_hourly SET team = :team, env = :env, pool = :pool, cluster = "      \
                 ":cluster, cloud = :cloud, updated_at = :now WHERE gpu_id = :gid AND hour = "     \
                 ":hour")                                                                          \
    X(SET_RATE, "UPDATE usage_hourly SET rate_micros = :rate, currency = :currency, price_id = "   \
                ":price, updated_at = :now WHERE gpu_id = :gid AND hour = :hour")                  \
    X(CONS_OF_HOUR, "SELECT kind, consumer, COALESCE(namespace, ''), COALESCE(username, ''), "     \
                    "COALESCE(project, '') FROM usage_consumers WHERE gpu_id = :gid AND hour = "   \
                    ":hour")                                                                       \
    X(CONS_TEAM, "UPDATE usage_consumers SET team = :team WHERE gpu_id = :gid AND hour = :hour "   \
                 "AND kind = :kind AND consumer = :consumer")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* The (GPU, day) pairs whose consumer days a redo chunk re-sums once it
 * has applied its rows. */
struct gpu_days {
    int64_t (*v)[2];
    size_t n, cap;
};

/* Adds (gid, day) unless it is there already; false when out of memory. */
static bool gpu_days_add(struct gpu_days *d, int64_t gid, int64_t day)
{
    for (size_t i = d->n; i > 0; i--)
        if (d->v[i - 1][0] == gid && d->v[i - 1][1] == day)
            return true;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        int64_t(*p)[2] = realloc(d->v, cap * sizeof *p);
        if (!p)
            return false;
        d->v = p;
        d->cap = cap;
    }
    d->v[d->n][0] = gid;
    d->v[d->n][1] = day;
    d->n++;
    return true;
}

/* Re-sums every pair's consumer day, inside the caller's transaction. */
static int gpu_days_write(struct conn *c, const struct gpu_days *d, int64_t now)
{
    int rc = GI_OK;

    for (size_t i = 0; i < d->n && rc == GI_OK; i++)
        rc = usage_write_consumer_day(c, d->v[i][0], d->v[i][1], now);
    return rc;
}

/* Re-resolves the consumer teams of one GPU-hour after an owner change. */
static int redo_consumers(struct conn *c, int64_t gid, int64_t hour, const char *owner_team)
{
    struct db_stmt *s = prep(c, ST_CONS_OF_HOUR);
    json_t *rows = json_array(), *row;
    size_t i;
    int step, rc = GI_OK;

    if (!s || !rows) {
        json_decref(rows);
        return GI_INTERNAL;
    }
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":hour", hour);
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(rows,
                              json_pack("[sssss]", db_col_text(s, 0), db_col_text(s, 1),
                                        db_col_text(s, 2), db_col_text(s, 3), db_col_text(s, 4)));
    db_reset(s);
    if (step != DB_DONE)
        rc = db_status(step);
    json_array_foreach(rows, i, row) {
        const char *kind = json_string_value(json_array_get(row, 0));
        const char *ns = json_string_value(json_array_get(row, 2));
        const char *user = json_string_value(json_array_get(row, 3));
        const char *project = json_string_value(json_array_get(row, 4));
        char team[OWNER_LEN] = "";
        if (rc != GI_OK || !kind || !ns || !user || !project)
            break;
        if ((rc = usage_consumer_team(c, kind, ns, project, user, hour, owner_team, team,
                                      sizeof team)) != GI_OK)
            break;
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_CONS_TEAM)))
            break;
        db_bind_opt_text(s, ":team", team);
        db_bind_int(s, ":gid", gid);
        db_bind_int(s, ":hour", hour);
        db_bind_text(s, ":kind", kind);
        db_bind_text(s, ":consumer", json_string_value(json_array_get(row, 1)));
        rc = db_exec_done(c, s);
    }
    json_decref(rows);
    return rc;
}

/* Applies one row of a re-attribution or re-pricing. */
static int redo_row(struct conn *c, bool owner, int64_t gid, int64_t hour, const char *model,
                    const char *env, const char *cloud, const char *pool, int64_t now)
{
    struct db_stmt *s;
    int rc;

    if (owner) {
        struct owner_fields o;
        rc = owner_resolve(c, gid, hour, &o);
        if (rc == GI_NOT_FOUND)
            return GI_OK;
        if (rc != GI_OK || !(s = prep(c, ST_SET_OWNER)))
            return rc != GI_OK ? rc : GI_INTERNAL;
        db_bind_opt_text(s, ":team", o.team);
        db_bind_opt_text(s, ":env", o.env);
        db_bind_opt_text(s, ":pool", o.pool);
        db_bind_opt_text(s, ":cluster", o.cluster);
        db_bind_opt_text(s, ":cloud", o.cloud);
        db_bind_int(s, ":now", now);
        db_bind_int(s, ":gid", gid);
        db_bind_int(s, ":hour", hour);
        if ((rc = db_exec_done(c, s)) == GI_OK)
            rc = redo_consumers(c, gid, hour, o.team);
        return rc;
    }
    {
        int64_t rate = 0, price = 0;
        char cur[4] = "";
        rc = price_rate(c, model, env, cloud, pool, hour, &rate, cur, &price);
        if (rc != GI_OK && rc != GI_NOT_FOUND)
            return rc;
        if (!(s = prep(c, ST_SET_RATE)))
            return GI_INTERNAL;
        db_bind_opt_int(s, ":rate", rc == GI_OK ? rate : -1);
        db_bind_opt_text(s, ":currency", rc == GI_OK ? cur : "");
        db_bind_opt_int(s, ":price", rc == GI_OK && price > 0 ? price : -1);
        db_bind_int(s, ":now", now);
        db_bind_int(s, ":gid", gid);
        db_bind_int(s, ":hour", hour);
        return db_exec_done(c, s);
    }
}

/* See usage_int.h. */
int usage_redo_chunk(struct store *st, int64_t now, int64_t *rows)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *todo = json_array(), *row;
    struct gpu_days days = {0};
    int64_t id = 0, gid = 0, hour = 0, next = 0, last_day = -1, last_gid = 0;
    char what[16] = "";
    size_t i;
    int step, rc = db_tx_begin(c);

    *rows = 0;
    if (rc != GI_OK || !todo)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_REDO_FIRST)))
        goto cleanup;
    step = db_step(c, s);
    if (step == DB_ROW) {
        id = db_col_int(s, 0);
        gi_strlcpy(what, db_col_text(s, 1), sizeof what);
        gid = db_col_int(s, 2);
        hour = db_col_int(s, 3);
        next = db_col_int(s, 4);
    }
    db_reset(s);
    rc = step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
    if (rc != GI_OK || step == DB_DONE)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_REDO_ROWS_Q)))
        goto cleanup;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":hour", hour);
    db_bind_int(s, ":next", next);
    db_bind_int(s, ":n", REDO_ROWS);
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(todo, db_row_values(s));
    db_reset(s);
    if (step != DB_DONE) {
        rc = db_status(step);
        goto cleanup;
    }
    rc = GI_OK;
    json_array_foreach(todo, i, row) {
        int64_t g = json_integer_value(json_array_get(row, 0));
        int64_t h = json_integer_value(json_array_get(row, 1));
        rc = redo_row(
            c, strcmp(what, "owner") == 0, g, h, json_string_value(json_array_get(row, 2)),
            json_string_value(json_array_get(row, 3)), json_string_value(json_array_get(row, 4)),
            json_string_value(json_array_get(row, 5)), now);
        if (rc == GI_OK && (g != last_gid || h - h % 86400 != last_day))
            rc = usage_write_day(c, g, h - h % 86400, now);
        if (rc == GI_OK && !gpu_days_add(&days, g, h - h % 86400))
            rc = GI_INTERNAL;
        /* rows come by hour: an hour's groups are re-summed once it is done */
        if (rc == GI_OK && last_day >= 0 && h != hour)
            rc = usage_write_hour_groups(c, hour, now);
        /* rows come by hour: a day's groups are re-summed once it is done */
        if (rc == GI_OK && last_day >= 0 && h - h % 86400 != last_day)
            rc = usage_write_groups(c, last_day, now);
        if (rc != GI_OK)
            break;
        last_gid = g;
        last_day = h - h % 86400;
        hour = h;
        next = g + 1;
    }
    if (rc == GI_OK && last_day >= 0)
        rc = usage_write_hour_groups(c, hour, now);
    if (rc == GI_OK && last_day >= 0)
        rc = usage_write_groups(c, last_day, now);
    /* Every hour of a consumer day counts (its owner and rate are keys),
     * so each one touched is re-summed after all the chunk's rows. */
    if (rc == GI_OK)
        rc = gpu_days_write(c, &days, now);
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (json_array_size(todo) < REDO_ROWS) {
        if (!(s = prep(c, ST_REDO_DONE)))
            goto cleanup;
    } else {
        if (!(s = prep(c, ST_REDO_MOVE)))
            goto cleanup;
        db_bind_int(s, ":hour", hour);
        db_bind_int(s, ":next", next);
    }
    db_bind_int(s, ":id", id);
    rc = db_exec_done(c, s);
    *rows = (int64_t)json_array_size(todo) + 1;
cleanup:
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    json_decref(todo);
    free(days.v);
    if (rc != GI_OK)
        *rows = 0;
    return rc;
}
