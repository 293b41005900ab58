/* One GPU's timeline from the usage rollups and its raw samples, events
 * and run intervals (GET /api/v1/gpus/{uuid}/timeline). See store.h. */
#include "core/status.h"
#include "core/util.h"
#include "store/usage_int.h"

#include <stdbool.h>
#include <string.h>

/* Raw samples are shown instead of hourly rollups for ranges this short. */
#define RAW_RANGE_S (6 * 3600)
#define TIMELINE_ROWS 20000

#define STATEMENTS(X)                                                                              \
    X(TL_GPU, "SELECT id FROM gpus WHERE uuid = :uuid")                                            \
    X(TL_INTERVALS,                                                                                \
      "SELECT kind, consumer, team, namespace, pod, container, username, process, tenant, "        \
      "project, started_at, ended_at FROM usage_intervals WHERE gpu_id = :gid AND started_at < "   \
      ":to AND (ended_at IS NULL OR ended_at > :from) ORDER BY started_at, id LIMIT :max")         \
    X(TL_HOURS,                                                                                    \
      "SELECT hour, team, env, pool, cluster, cloud, owned_s, allocated_s, busy_s, alloc_idle_s, " \
      "idle_s, unknown_s, measured_s, util_sum, util_max, mem_sum, mem_max_mib, energy_wh, "       \
      "power_max_w, temp_max_c FROM usage_hourly WHERE gpu_id = :gid AND hour >= :from AND hour "  \
      "< :to ORDER BY hour LIMIT :max")                                                            \
    X(TL_SAMPLES, "SELECT ts, util_avg, util_max, mem_used_mib, power_avg_w, temp_c, source_id "   \
                  "FROM gpu_samples WHERE gpu_id = :gid AND ts >= :from AND ts < :to ORDER BY "    \
                  "ts, source_id LIMIT :max")                                                      \
    X(TL_SAMPLES_SKIP,                                                                             \
      "WITH RECURSIVE t(ts) AS (SELECT MIN(ts) FROM gpu_samples WHERE ts >= :from AND ts < :to "   \
      "UNION ALL SELECT (SELECT MIN(ts) FROM gpu_samples WHERE ts > t.ts AND ts < :to) FROM t "    \
      "WHERE t.ts IS NOT NULL) SELECT s.ts, s.util_avg, s.util_max, s.mem_used_mib, "              \
      "s.power_avg_w, s.temp_c, s.source_id FROM t JOIN gpu_samples AS s ON s.ts = t.ts AND "      \
      "s.gpu_id = :gid ORDER BY s.ts, s.source_id LIMIT :max")                                     \
    X(TL_EVENTS, "SELECT at, kind, detail FROM gpu_events WHERE gpu_uuid = :uuid AND at >= :from " \
                 "AND at < :to ORDER BY at, id LIMIT :max")                                        \
    X(TL_COST, "SELECT currency, SUM(owned_s * fraction * rate_micros) FROM usage_hourly WHERE "   \
               "gpu_id = :gid AND hour >= :from AND hour < :to AND rate_micros IS NOT NULL AND "   \
               "currency IS NOT NULL GROUP BY currency ORDER BY 2 DESC LIMIT 1")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static json_t *opt_real(struct db_stmt *s, int i)
{
    return db_col_is_null(s, i) ? json_null() : json_real(usage_round6(db_col_dbl(s, i)));
}

static json_t *opt_text(struct db_stmt *s, int i)
{
    const char *v = db_col_text(s, i);
    return v && *v ? json_string(v) : json_null();
}

static json_t *time_json(int64_t t)
{
    char buf[32];

    gi_time_format(t, buf, sizeof buf);
    return json_string(buf);
}

static int tl_intervals(struct conn *c, int64_t gid, int64_t from, int64_t to, json_t *out)
{
    struct db_stmt *s = prep(c, ST_TL_INTERVALS);
    static const char *const names[] = {"kind",      "consumer", "team",    "namespace", "pod",
                                        "container", "username", "process", "tenant",    "project"};
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    db_bind_int(s, ":max", TIMELINE_ROWS);
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *o = json_object();
        for (int i = 0; i < 10; i++)
            json_object_set_new(o, names[i], opt_text(s, i));
        json_object_set_new(o, "started_at", time_json(db_col_int(s, 10)));
        json_object_set_new(o, "ended_at",
                            db_col_is_null(s, 11) ? json_null() : time_json(db_col_int(s, 11)));
        json_array_append_new(out, o);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Hourly telemetry and classification, and the owner changes the hours
 * show (the first hour's owner, then each change). */
static int tl_hours(struct conn *c, int64_t gid, int64_t from, int64_t to, bool telemetry,
                    json_t *series, json_t *owners)
{
    struct db_stmt *s = prep(c, ST_TL_HOURS);
    json_t *last = NULL;
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":from", from - from % 3600);
    db_bind_int(s, ":to", to);
    db_bind_int(s, ":max", TIMELINE_ROWS);
    while ((step = db_step(c, s)) == DB_ROW) {
        double meas = db_col_dbl(s, 12);
        json_t *owner = json_object();
        static const char *const f[] = {"team", "env", "pool", "cluster", "cloud"};
        for (int i = 0; i < 5; i++)
            json_object_set_new(owner, f[i], opt_text(s, 1 + i));
        if (!last || !json_equal(last, owner)) {
            json_t *row = json_deep_copy(owner);
            json_object_set_new(row, "at", time_json(db_col_int(s, 0)));
            json_array_append_new(owners, row);
            json_decref(last);
            last = owner;
        } else {
            json_decref(owner);
        }
        if (!telemetry)
            continue;
        json_array_append_new(
            series,
            json_pack(
                "{s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:f, s:o, s:o}",
                "start", time_json(db_col_int(s, 0)), "owned_s", db_col_dbl(s, 6), "allocated_s",
                db_col_dbl(s, 7), "busy_s", db_col_dbl(s, 8), "alloc_idle_s", db_col_dbl(s, 9),
                "idle_s", db_col_dbl(s, 10), "unknown_s", db_col_dbl(s, 11), "util_avg",
                meas > 0 ? json_real(usage_round6(db_col_dbl(s, 13) / meas)) : json_null(),
                "util_max", opt_real(s, 14), "mem_avg_mib",
                meas > 0 ? json_real(usage_round6(db_col_dbl(s, 15) / meas)) : json_null(),
                "mem_max_mib", opt_real(s, 16), "power_avg_w",
                meas > 0 ? json_real(usage_round6(db_col_dbl(s, 17) * 3600.0 / meas)) : json_null(),
                "energy_wh", usage_round6(db_col_dbl(s, 17)), "power_max_w", opt_real(s, 18),
                "temp_max_c", opt_real(s, 19)));
    }
    db_reset(s);
    json_decref(last);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* The GPU's raw samples in the range. gpu_samples is keyed by time first;
 * PostgreSQL also has gpu_samples_gpu_ts (gpu_id, ts) and reads the GPU's
 * own entries. SQLite has no second index (it would cost every push a
 * quarter more CPU), so it skips through the key instead: for each distinct
 * second in the range, one seek to it and one to the GPU's entry there,
 * at most two seeks per second of the range whatever the fleet's size,
 * where a walk of the range reads every GPU's entries. */
static int tl_samples(struct conn *c, int64_t gid, int64_t from, int64_t to, json_t *out)
{
    struct db_stmt *s = prep(c, db_dialect(c) == DB_PG ? ST_TL_SAMPLES : ST_TL_SAMPLES_SKIP);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    db_bind_int(s, ":max", TIMELINE_ROWS);
    while ((step = db_step(c, s)) == DB_ROW)
        json_array_append_new(
            out, json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "at", time_json(db_col_int(s, 0)),
                           "util_avg", opt_real(s, 1), "util_max", opt_real(s, 2), "mem_used_mib",
                           opt_real(s, 3), "power_w", opt_real(s, 4), "temp_c", opt_real(s, 5)));
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

static int tl_events(struct conn *c, const char *uuid, int64_t from, int64_t to, json_t *out)
{
    struct db_stmt *s = prep(c, ST_TL_EVENTS);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    db_bind_int(s, ":max", TIMELINE_ROWS);
    while ((step = db_step(c, s)) == DB_ROW) {
        json_t *detail = NULL;
        const char *d = db_col_text(s, 2);
        if (d)
            detail = json_loads(d, 0, NULL);
        json_array_append_new(out, json_pack("{s:o, s:s, s:o}", "at", time_json(db_col_int(s, 0)),
                                             "kind", db_col_text(s, 1), "detail",
                                             detail ? detail : json_null()));
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* The catalog cost of the GPU's hours in the range (in the currency most
 * of it is in), null when no hour of it is priced. */
static int tl_cost(struct conn *c, int64_t gid, int64_t from, int64_t to, json_t **cost)
{
    struct db_stmt *s = prep(c, ST_TL_COST);
    int step;

    *cost = NULL;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gid);
    db_bind_int(s, ":from", from - from % 3600);
    db_bind_int(s, ":to", to);
    if ((step = db_step(c, s)) == DB_ROW && db_col_text(s, 0)) {
        char amount[48];
        usage_money_text(db_col_dbl(s, 1), amount, sizeof amount);
        *cost = json_pack("{s:s, s:s, s:s}", "amount", amount, "currency", db_col_text(s, 0),
                          "method", "catalog");
    }
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

int store_gpu_timeline(struct store *st, const char *uuid, int64_t from, int64_t to, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_TL_GPU);
    json_t *iv = json_array(), *hours = json_array(), *raw = json_array(), *ev = json_array(),
           *owners = json_array(), *cost = NULL;
    bool use_raw = to - from <= RAW_RANGE_S;
    char f[32], t[32];
    int64_t gid = 0;
    int rc = GI_INTERNAL;

    *out = NULL;
    if (!s || !iv || !hours || !raw || !ev || !owners)
        goto cleanup;
    db_read_begin(c);
    db_bind_text(s, ":uuid", uuid);
    rc = db_fetch_int(c, s, &gid);
    if (rc == GI_OK)
        rc = tl_intervals(c, gid, from, to, iv);
    if (rc == GI_OK)
        rc = tl_hours(c, gid, from, to, !use_raw, hours, owners);
    if (rc == GI_OK && use_raw)
        rc = tl_samples(c, gid, from, to, raw);
    if (rc == GI_OK)
        rc = tl_events(c, uuid, from, to, ev);
    if (rc == GI_OK)
        rc = tl_cost(c, gid, from, to, &cost);
    db_read_end(c);
    if (rc != GI_OK)
        goto cleanup;
    gi_time_format(from, f, sizeof f);
    gi_time_format(to, t, sizeof t);
    *out = json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "uuid", uuid, "from", f, "to",
                     t, "telemetry_source", use_raw ? "samples" : "usage_hourly", "intervals", iv,
                     "hours", hours, "samples", raw, "events", ev, "owners", owners);
    iv = hours = raw = ev = owners = NULL;
    rc = *out ? GI_OK : GI_INTERNAL;
    if (*out)
        json_object_set_new(*out, "cost", cost ? cost : json_null());
    cost = NULL;
cleanup:
    json_decref(cost);
    db_conn_put(st, c);
    json_decref(iv);
    json_decref(hours);
    json_decref(raw);
    json_decref(ev);
    json_decref(owners);
    return rc;
}
