/* The cost settings and the showback report: per team, for one month,
 * the GPU-hours it owned and how they were used, and what they cost by
 * three methods, each figure stating its method:
 *   catalog  Σ over its hourly rollups of owned GPU-seconds / 3600 ×
 *            fraction × the catalog rate in force at that hour for the
 *            GPU's model, env, cloud and pool (as the catalog stands now,
 *            so a price change re-prices the past it covers), split into
 *            busy, waste (allocated-idle), idle and unknown the same way;
 *            hours whose rate is in another currency than the settings'
 *            or that no entry prices are counted as unpriced. Read from
 *            the day groups (usage_groups_daily) for the whole days in
 *            which no catalog entry takes effect (every hour of such a day
 *            has the rate in force at its midnight), from the hourly
 *            rollups for the others; either way priced at read time.
 *   tco      capital: each GPU's purchase cost (the linked inventory
 *            server's metadata purchase_cost over its gpu_count, else the
 *            catalog's "purchase" entry for the model) spread evenly over
 *            amortization_years, charged per owned GPU-hour inside the
 *            amortization window (from metadata purchase_date when given);
 *            plus energy: measured Wh / 1000 × price per kWh × PUE.
 *            Whole days from the day groups, the GPUs of inventory
 *            servers with a purchase cost from the daily rollups.
 *   billing  the cloud bill: imported billing lines starting in the month,
 *            spread over the instance's GPUs (each GPU's share goes to the
 *            owner of that GPU-hour, else the owner when imported), and
 *            lines matched by a team tag; lines in another currency are
 *            counted apart, never converted. */
#include "store/store_int.h"
#include "core/money.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HOURS_PER_YEAR 8766.0 /* 365.25 days */

/* Per GPU and owner: owned GPU-seconds, energy and the inventory server
 * of its host, from the hourly or the daily rollups. */
#define SB_GPUS_SQL(table, key)                                                                    \
    "SELECT u.gpu_id, COALESCE(u.team, ''), u.model, u.env, u.cloud, u.pool, "                     \
    "SUM(u.owned_s * u.fraction), SUM(u.energy_wh), MIN(r.metadata), MIN(r.gpu_count) FROM " table \
    " u LEFT JOIN host_links l ON l.host_id = u.host_id LEFT JOIN resources r ON r.id = "          \
    "l.resource_id WHERE u." key " >= :from AND u." key " < :to AND " STORE_SCOPE_IN(              \
        "u.datacenter_id") " GROUP BY u.gpu_id, "                                                  \
                           "COALESCE(u.team, ''), u.model, u.env, u.cloud, u.pool"

#define STATEMENTS(X)                                                                              \
    X(SET_GET, "SELECT name, value FROM cost_settings")                                            \
    X(SET_PUT, "INSERT INTO cost_settings (name, value, updated_at) VALUES (:name, :value, :now) " \
               "ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = "            \
               "excluded.updated_at")                                                              \
    X(SB_HOURS,                                                                                    \
      "SELECT COALESCE(team, ''), model, env, cloud, pool, hour, SUM(owned_s * fraction), "        \
      "SUM(busy_s * fraction), SUM(alloc_idle_s * fraction), SUM(idle_s * fraction), "             \
      "SUM(unknown_s * fraction) FROM usage_hourly WHERE hour >= :from AND hour < :to "            \
      "AND " STORE_SCOPE_IN("datacenter_id") " GROUP BY "                                          \
                                             "COALESCE(team, ''), model, env, cloud, pool, hour")  \
    X(SB_DAYS,                                                                                     \
      "SELECT COALESCE(team, ''), model, env, cloud, pool, day, SUM(owned_s), SUM(busy_s), "       \
      "SUM(alloc_idle_s), SUM(idle_s), SUM(unknown_s) FROM usage_groups_daily WHERE day >= :from " \
      "AND day < :to AND " STORE_SCOPE_IN(                                                         \
          "datacenter_id") " GROUP BY COALESCE(team, ''), model, env, cloud, pool, day")           \
    X(SB_CHANGES, "SELECT DISTINCT effective_from FROM prices WHERE kind = 'hourly' AND "          \
                  "effective_from > :from AND effective_from < :to ORDER BY effective_from "       \
                  "LIMIT 10000")                                                                   \
    X(SB_GPUS, SB_GPUS_SQL("usage_hourly", "hour"))                                                \
    X(SB_TCO_GROUPS,                                                                               \
      "SELECT COALESCE(team, ''), model, env, cloud, pool, SUM(owned_s), SUM(energy_wh) FROM "     \
      "usage_groups_daily WHERE day >= :from AND day < :to AND " STORE_SCOPE_IN(                   \
          "datacenter_id") " GROUP BY COALESCE(team, ''), model, "                                 \
                           "env, cloud, pool")                                                     \
    X(SB_INV_HOSTS,                                                                                \
      "SELECT l.host_id, r.metadata, r.gpu_count FROM host_links l JOIN resources r "              \
      "ON r.id = l.resource_id WHERE r.metadata LIKE '%purchase_cost%' ORDER BY "                  \
      "l.host_id")                                                                                 \
    X(SB_HOST_GPUS,                                                                                \
      "SELECT u.gpu_id, COALESCE(u.team, ''), u.model, u.env, u.cloud, u.pool, "                   \
      "SUM(u.owned_s * u.fraction) FROM usage_daily u WHERE u.host_id = :hid AND u.day >= :from "  \
      "AND u.day < :to AND " STORE_SCOPE_IN(                                                       \
          "u.datacenter_id") " GROUP BY u.gpu_id, COALESCE(u.team, ''), u.model, u.env, u.cloud, " \
                             "u.pool")                                                             \
    X(SB_GPU_WINDOW,                                                                               \
      "SELECT COALESCE(SUM(owned_s * fraction), 0) FROM usage_hourly WHERE gpu_id = :gpu AND "     \
      "COALESCE(team, '') = :team AND model IS NOT DISTINCT FROM :model AND env IS NOT DISTINCT "  \
      "FROM :env AND cloud IS NOT DISTINCT FROM :cloud AND pool IS NOT DISTINCT FROM :pool AND "   \
      "hour >= :from AND hour < :to AND " STORE_SCOPE_IN("datacenter_id"))                         \
    X(SB_BILLED,                                                                                   \
      "SELECT COALESCE(u.team, b.team, ''), b.currency, SUM(c.cost_micros) FROM billing_costs c "  \
      "JOIN billing_lines b ON b.id = c.line_id LEFT JOIN usage_hourly u ON u.gpu_id = c.gpu_id "  \
      "AND u.hour = c.usage_start - c.usage_start % 3600 WHERE c.usage_start >= :from AND "        \
      "c.usage_start < :to AND " STORE_SCOPE_IN("u.datacenter_id") " GROUP BY COALESCE(u.team, "   \
                                                                   "b.team, ''), b.currency")      \
    X(SB_BILLED_TAG, "SELECT COALESCE(team, ''), currency, SUM(cost_micros) FROM billing_lines "   \
                     "WHERE matched_by = 'tag:team' AND usage_start >= :from AND usage_start < "   \
                     ":to GROUP BY COALESCE(team, ''), currency")                                  \
    X(SB_UNMATCHED, "SELECT currency, SUM(cost_micros), COUNT(*) FROM billing_lines WHERE "        \
                    "matched_by IS NULL AND usage_start >= :from AND usage_start < :to GROUP BY "  \
                    "currency")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* Binds a report statement's range [from, to) and the data centers it is
 * narrowed to (sc NULL or n 0: all). */
static void bind_range(struct db_stmt *s, int64_t from, int64_t to, const struct store_scope *sc)
{
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    db_bind_scope(s, sc);
}

/* ---- settings ---- */

static void settings_default(struct store_cost_settings *s)
{
    s->amortization_years = 4;
    s->energy_micros_kwh = 120000;
    s->pue_milli = 1400;
    memcpy(s->currency, "USD", 4);
}

static int settings_read(struct conn *c, struct store_cost_settings *out)
{
    struct db_stmt *s = prep(c, ST_SET_GET);
    int step;

    settings_default(out);
    if (!s)
        return GI_INTERNAL;
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *n = db_col_text(s, 0), *v = db_col_text(s, 1);
        int64_t x;
        if (!n || !v)
            continue;
        if (strcmp(n, "amortization_years") == 0 && gi_parse_int64(v, 1, 50, &x) == GI_OK)
            out->amortization_years = x;
        else if (strcmp(n, "energy_micros_kwh") == 0 &&
                 gi_parse_int64(v, 0, INT64_C(1000000000), &x) == GI_OK)
            out->energy_micros_kwh = x;
        else if (strcmp(n, "pue_milli") == 0 && gi_parse_int64(v, 1000, 10000, &x) == GI_OK)
            out->pue_milli = x;
        else if (strcmp(n, "currency") == 0 && gi_currency_ok(v))
            memcpy(out->currency, v, 4);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

int store_cost_settings_get(struct store *st, struct store_cost_settings *out)
{
    struct conn *c = db_conn_get(st);
    int rc = settings_read(c, out);

    db_conn_put(st, c);
    return rc;
}

static json_t *settings_doc(const struct store_cost_settings *s)
{
    char kwh[32];

    gi_money_format(s->energy_micros_kwh, 2, kwh, sizeof kwh);
    return json_pack("{s:I, s:s, s:f, s:s}", "amortization_years",
                     (json_int_t)s->amortization_years, "energy_price_per_kwh", kwh, "pue",
                     (double)s->pue_milli / 1000.0, "currency", s->currency);
}

static int setting_put(struct conn *c, const char *name, const char *value)
{
    struct db_stmt *s = prep(c, ST_SET_PUT);

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":value", value);
    db_bind_int(s, ":now", gi_now());
    return db_exec_done(c, s);
}

int store_cost_settings_put(struct store *st, const char *actor,
                            const struct store_cost_settings *in)
{
    struct conn *c = db_conn_get(st);
    struct store_cost_settings before;
    json_t *b = NULL, *a = NULL;
    char num[32];
    int rc = db_tx_begin(c);

    if (rc != GI_OK || (rc = settings_read(c, &before)) != GI_OK)
        goto cleanup;
    snprintf(num, sizeof num, "%lld", (long long)in->amortization_years);
    if ((rc = setting_put(c, "amortization_years", num)) != GI_OK)
        goto cleanup;
    snprintf(num, sizeof num, "%lld", (long long)in->energy_micros_kwh);
    if ((rc = setting_put(c, "energy_micros_kwh", num)) != GI_OK)
        goto cleanup;
    snprintf(num, sizeof num, "%lld", (long long)in->pue_milli);
    if ((rc = setting_put(c, "pue_milli", num)) != GI_OK ||
        (rc = setting_put(c, "currency", in->currency)) != GI_OK)
        goto cleanup;
    b = settings_doc(&before);
    a = settings_doc(in);
    rc = db_audit(c, actor, "update", "cost_settings", 0, b, a);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(b);
    json_decref(a);
    db_conn_put(st, c);
    return rc;
}

/* ---- showback ---- */

/* One team's figures; money in micro-units as doubles until rounded. */
struct team_row {
    double owned, busy, alloc_idle, idle, unknown, unpriced; /* GPU-seconds */
    double c_busy, c_waste, c_idle, c_unknown;               /* catalog */
    double t_capital, t_energy, energy_wh;                   /* TCO */
    int64_t billed, billed_other_lines;
    double tco_unpriced; /* GPU-seconds without a purchase cost */
};

/* The row of `team` in rows (an object team → index into *arr). */
static struct team_row *row_of(json_t *index, struct team_row **arr, size_t *n, size_t *cap,
                               const char *team)
{
    json_t *hit = json_object_get(index, team);

    if (hit)
        return &(*arr)[json_integer_value(hit)];
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct team_row *na = realloc(*arr, nc * sizeof *na);
        if (!na)
            return NULL;
        *arr = na;
        *cap = nc;
    }
    memset(&(*arr)[*n], 0, sizeof **arr);
    json_object_set_new(index, team, json_integer((json_int_t)*n));
    return &(*arr)[(*n)++];
}

static const char *txt(struct db_stmt *s, int i) { return db_col_text(s, i); }

/* The purchase cost of one GPU of a server from its metadata
 * (purchase_cost over gpu_count) and the amortization window's start
 * (purchase_date; -1 when not given). False when the metadata has none. */
static bool inventory_purchase(const char *metadata, int64_t gpu_count, int64_t *micros,
                               int64_t *since)
{
    json_t *md = metadata ? json_loads(metadata, 0, NULL) : NULL;
    json_t *pc = json_object_get(md, "purchase_cost");
    const char *pd = json_string_value(json_object_get(md, "purchase_date"));
    char buf[64] = "";
    int64_t total;
    bool ok = false;

    *since = -1;
    if (json_is_string(pc))
        gi_strlcpy(buf, json_string_value(pc), sizeof buf);
    else if (json_is_integer(pc))
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(pc));
    else if (json_is_real(pc))
        snprintf(buf, sizeof buf, "%.6f", json_real_value(pc));
    if (buf[0] && gi_money_parse(buf, GI_MONEY_LENIENT, false, &total) == GI_OK && gpu_count > 0) {
        *micros = total / gpu_count;
        ok = true;
        if (pd) {
            char day[40];
            int64_t t;
            /* A date alone is its midnight UTC. */
            snprintf(day, sizeof day, strlen(pd) == 10 ? "%sT00:00:00Z" : "%s", pd);
            if (gi_time_parse(day, &t) == GI_OK)
                *since = t;
        }
    }
    json_decref(md);
    return ok;
}

/* The owned GPU-seconds of the current SB_GPUS row (s) inside the
 * amortization window [since, since + years), within [from, to). */
static int window_owned(struct conn *c, struct db_stmt *s, int64_t since, int64_t years,
                        int64_t from, int64_t to, const struct store_scope *sc, double *owned)
{
    int64_t end = since + (int64_t)((double)years * HOURS_PER_YEAR * 3600.0);
    int64_t lo = since > from ? since : from, hi = end < to ? end : to;
    struct db_stmt *w;
    int step;

    if (since < 0 || (since <= from && end >= to))
        return GI_OK; /* the whole range */
    *owned = 0;
    if (hi <= lo)
        return GI_OK;
    if (!(w = prep(c, ST_SB_GPU_WINDOW)))
        return GI_INTERNAL;
    db_bind_int(w, ":gpu", db_col_int(s, 0));
    db_bind_text(w, ":team", txt(s, 1));
    db_bind_text(w, ":model", txt(s, 2));
    db_bind_text(w, ":env", txt(s, 3));
    db_bind_text(w, ":cloud", txt(s, 4));
    db_bind_text(w, ":pool", txt(s, 5));
    bind_range(w, lo - lo % 3600, hi, sc);
    if ((step = db_step(c, w)) == DB_ROW)
        *owned = db_col_dbl(w, 0);
    db_reset(w);
    return step == DB_ROW ? GI_OK : step == DB_DONE ? GI_INTERNAL : db_status(step);
}

#define DAY_S 86400

/* The times inside (from, to) at which an hourly catalog entry takes
 * effect, ascending: the only moments at which a rate can change. */
struct rate_changes {
    int64_t *t;
    size_t n;
};

static int rate_changes_load(struct conn *c, int64_t from, int64_t to, struct rate_changes *out)
{
    struct db_stmt *s = prep(c, ST_SB_CHANGES);
    size_t cap = 0;
    int step;

    out->t = NULL;
    out->n = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    while ((step = db_step(c, s)) == DB_ROW) {
        if (out->n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            int64_t *nt = realloc(out->t, nc * sizeof *nt);
            if (!nt) {
                step = GI_INTERNAL;
                break;
            }
            out->t = nt;
            cap = nc;
        }
        out->t[out->n++] = db_col_int(s, 0);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : step == DB_ROW ? GI_INTERNAL : db_status(step);
}

/* True when a catalog entry takes effect during day d after its midnight,
 * so that the day's hours may have different rates. */
static bool day_mixed(const struct rate_changes *ch, int64_t d)
{
    for (size_t i = 0; i < ch->n; i++)
        if (ch->t[i] > d && ch->t[i] < d + DAY_S)
            return true;
    return false;
}

/* Adds the current row of SB_HOURS or SB_DAYS (owner and model, the
 * hour or day, then owned, busy, allocated-idle, idle and unknown
 * GPU-seconds x fraction) to its team, priced at the catalog rate in
 * force at the row's time. */
static int add_priced(struct db_stmt *s, const struct price_catalog *cat, const char *cur,
                      json_t *index, struct team_row **rows, size_t *n, size_t *cap)
{
    struct team_row *r = row_of(index, rows, n, cap, txt(s, 0));
    int64_t rate = 0, pid;
    char rc4[4];
    double per_s;

    if (!r)
        return GI_INTERNAL;
    r->owned += db_col_dbl(s, 6);
    r->busy += db_col_dbl(s, 7);
    r->alloc_idle += db_col_dbl(s, 8);
    r->idle += db_col_dbl(s, 9);
    r->unknown += db_col_dbl(s, 10);
    if (!price_catalog_pick(cat, txt(s, 1), txt(s, 2), txt(s, 3), txt(s, 4), db_col_int(s, 5),
                            &rate, rc4, &pid) ||
        strcmp(rc4, cur) != 0) {
        r->unpriced += db_col_dbl(s, 6);
        return GI_OK;
    }
    per_s = (double)rate / 3600.0;
    r->c_busy += db_col_dbl(s, 7) * per_s;
    r->c_waste += db_col_dbl(s, 8) * per_s;
    r->c_idle += db_col_dbl(s, 9) * per_s;
    r->c_unknown += db_col_dbl(s, 10) * per_s;
    return GI_OK;
}

/* What add_hours() prices with and adds to. */
struct pricing {
    const struct price_catalog *cat;
    const struct rate_changes *changes;
    const char *cur;
    const struct store_scope *sc;
    json_t *index;
    struct team_row **rows;
    size_t *n, *cap;
};

/* Prices the hourly rollups of [lo, hi) hour by hour. */
static int add_hour_range(struct conn *c, const struct pricing *p, int64_t lo, int64_t hi)
{
    struct db_stmt *s;
    int step = DB_DONE, rc = GI_OK;

    if (hi <= lo)
        return GI_OK;
    if (!(s = prep(c, ST_SB_HOURS)))
        return GI_INTERNAL;
    bind_range(s, lo, hi, p->sc);
    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW)
        rc = add_priced(s, p->cat, p->cur, p->index, p->rows, p->n, p->cap);
    db_reset(s);
    if (rc != GI_OK)
        return rc;
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Prices the day groups of the whole days [lo, hi) that no rate change
 * falls inside, a day at a time: every hour of such a day has the rate
 * in force at its midnight. */
static int add_day_groups(struct conn *c, const struct pricing *p, int64_t lo, int64_t hi)
{
    struct db_stmt *s;
    int step = DB_DONE, rc = GI_OK;

    if (hi <= lo)
        return GI_OK;
    if (!(s = prep(c, ST_SB_DAYS)))
        return GI_INTERNAL;
    bind_range(s, lo, hi, p->sc);
    while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW)
        if (!day_mixed(p->changes, db_col_int(s, 5)))
            rc = add_priced(s, p->cat, p->cur, p->index, p->rows, p->n, p->cap);
    db_reset(s);
    if (rc != GI_OK)
        return rc;
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* The catalog cost and GPU-hours of [from, to): the whole days in which
 * no catalog entry takes effect from usage_groups_daily (a few rows a
 * day), the other days and the partial days at either end from
 * usage_hourly, hour by hour. Prices come from the catalog as it stands
 * now in both cases, so an edited price shows at once. A day's groups
 * carry the owner of each GPU's first hour of the day (usage_daily's
 * rule), so an owner change during a day goes to the day's first owner. */
static int add_hours(struct conn *c, int64_t from, int64_t to, const char *cur,
                     const struct store_scope *sc, json_t *index, struct team_row **rows, size_t *n,
                     size_t *cap)
{
    struct price_catalog *cat = NULL;
    struct rate_changes ch = {0};
    struct pricing p = {NULL, &ch, cur, sc, index, rows, n, cap};
    int64_t d1 = from % DAY_S ? from - from % DAY_S + DAY_S : from, d2 = to - to % DAY_S;
    int64_t lo;
    int rc;

    if ((rc = price_catalog_load(c, "hourly", &cat)) != GI_OK)
        return rc;
    p.cat = cat;
    if ((rc = rate_changes_load(c, from, to, &ch)) != GI_OK)
        goto cleanup;
    if (d1 >= d2)
        d1 = d2 = to; /* no whole day: every hour from usage_hourly */
    if ((rc = add_hour_range(c, &p, from, d1)) != GI_OK ||
        (rc = add_day_groups(c, &p, d1, d2)) != GI_OK ||
        (rc = add_hour_range(c, &p, d2, to)) != GI_OK)
        goto cleanup;
    /* The days a rate changes in, consecutive ones read together. */
    for (int64_t d = d1; d < d2; d += DAY_S) {
        if (!day_mixed(&ch, d))
            continue;
        for (lo = d; d + DAY_S < d2 && day_mixed(&ch, d + DAY_S); d += DAY_S)
            ;
        if ((rc = add_hour_range(c, &p, lo, d + DAY_S)) != GI_OK)
            goto cleanup;
    }
cleanup:
    free(ch.t);
    price_catalog_free(cat);
    return rc;
}

static int add_tco(struct conn *c, int64_t from, int64_t to, const struct store_cost_settings *set,
                   const struct store_scope *sc, json_t *index, struct team_row **rows, size_t *n,
                   size_t *cap)
{
    struct db_stmt *s = prep(c, ST_SB_GPUS);
    struct price_catalog *cat = NULL;
    double hours_amort = (double)set->amortization_years * HOURS_PER_YEAR;
    int step, rc;

    if (!s)
        return GI_INTERNAL;
    if ((rc = price_catalog_load(c, "purchase", &cat)) != GI_OK)
        return rc;
    bind_range(s, from, to, sc);
    while ((step = db_step(c, s)) == DB_ROW) {
        struct team_row *r = row_of(index, rows, n, cap, txt(s, 1));
        double owned = db_col_dbl(s, 6), wh = db_col_dbl(s, 7);
        int64_t micros = 0, since, pid;
        char pc[4];
        if (!r) {
            step = GI_INTERNAL;
            break;
        }
        r->energy_wh += wh;
        r->t_energy +=
            wh / 1000.0 * (double)set->energy_micros_kwh * (double)set->pue_milli / 1000.0;
        if (inventory_purchase(txt(s, 8), db_col_int(s, 9), &micros, &since)) {
            if ((rc = window_owned(c, s, since, set->amortization_years, from, to, sc, &owned)) !=
                GI_OK) {
                step = rc;
                break;
            }
        } else if (!price_catalog_pick(cat, txt(s, 2), txt(s, 3), txt(s, 4), txt(s, 5), from,
                                       &micros, pc, &pid) ||
                   strcmp(pc, set->currency) != 0) {
            r->tco_unpriced += owned;
            continue;
        }
        r->t_capital += (double)micros / hours_amort * owned / 3600.0;
    }
    db_reset(s);
    price_catalog_free(cat);
    return step == DB_DONE ? GI_OK : step == DB_ROW ? GI_INTERNAL : db_status(step);
}

/* One (team, model, env, cloud, pool) of the day groups, for the TCO:
 * its owned GPU-seconds x fraction not yet charged. */
struct tco_group {
    char *key[5];
    double owned;
};

struct tco_groups {
    struct tco_group *v;
    size_t n, cap;
    json_t *index; /* key text -> index into v */
};

static void tco_groups_free(struct tco_groups *g)
{
    for (size_t i = 0; i < g->n; i++)
        for (int k = 0; k < 5; k++)
            free(g->v[i].key[k]);
    free(g->v);
    json_decref(g->index);
}

/* The lookup text of the owner and model in columns 1..5 of s (NULL as
 * "", which the catalog prices alike). */
static void tco_key(struct db_stmt *s, int first, char *buf, size_t len)
{
    snprintf(buf, len, "%s\x1f%s\x1f%s\x1f%s\x1f%s", txt(s, first) ? txt(s, first) : "",
             txt(s, first + 1) ? txt(s, first + 1) : "", txt(s, first + 2) ? txt(s, first + 2) : "",
             txt(s, first + 3) ? txt(s, first + 3) : "",
             txt(s, first + 4) ? txt(s, first + 4) : "");
}

/* Reads the day groups' owned seconds and energy of [from, to) into g
 * (energy goes to each team's row at once). */
static int tco_groups_read(struct conn *c, int64_t from, int64_t to,
                           const struct store_cost_settings *set, const struct store_scope *sc,
                           struct tco_groups *g, json_t *index, struct team_row **rows, size_t *n,
                           size_t *cap)
{
    struct db_stmt *s = prep(c, ST_SB_TCO_GROUPS);
    int step;

    if (!s || !(g->index = json_object()))
        return GI_INTERNAL;
    bind_range(s, from, to, sc);
    while ((step = db_step(c, s)) == DB_ROW) {
        struct team_row *r = row_of(index, rows, n, cap, txt(s, 0));
        double wh = db_col_dbl(s, 6);
        char key[2048];
        json_t *hit;
        if (!r) {
            step = GI_INTERNAL;
            break;
        }
        r->energy_wh += wh;
        r->t_energy +=
            wh / 1000.0 * (double)set->energy_micros_kwh * (double)set->pue_milli / 1000.0;
        tco_key(s, 0, key, sizeof key);
        if ((hit = json_object_get(g->index, key))) {
            g->v[json_integer_value(hit)].owned += db_col_dbl(s, 5);
            continue;
        }
        if (g->n == g->cap) {
            size_t nc = g->cap ? g->cap * 2 : 64;
            struct tco_group *nv = realloc(g->v, nc * sizeof *nv);
            if (!nv) {
                step = GI_INTERNAL;
                break;
            }
            g->v = nv;
            g->cap = nc;
        }
        struct tco_group *e = &g->v[g->n];
        e->owned = db_col_dbl(s, 5);
        g->n++;
        for (int k = 0; k < 5; k++)
            e->key[k] = strdup(txt(s, k) ? txt(s, k) : "");
        if (!e->key[0] || !e->key[1] || !e->key[2] || !e->key[3] || !e->key[4]) {
            step = GI_INTERNAL;
            break;
        }
        json_object_set_new(g->index, key, json_integer((json_int_t)g->n - 1));
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : step == DB_ROW ? GI_INTERNAL : db_status(step);
}

/* A server's purchase, for the GPUs of the host linked to it. */
struct tco_host {
    int64_t host_id, micros, since;
};

/* The hosts linked to an inventory server with a purchase cost. */
static int tco_hosts_read(struct conn *c, struct tco_host **out, size_t *n)
{
    struct db_stmt *s = prep(c, ST_SB_INV_HOSTS);
    size_t cap = 0;
    int step;

    *out = NULL;
    *n = 0;
    if (!s)
        return GI_INTERNAL;
    while ((step = db_step(c, s)) == DB_ROW) {
        struct tco_host hst = {db_col_int(s, 0), 0, -1};
        if (!inventory_purchase(txt(s, 1), db_col_int(s, 2), &hst.micros, &hst.since))
            continue;
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            struct tco_host *nv = realloc(*out, nc * sizeof *nv);
            if (!nv) {
                step = GI_INTERNAL;
                break;
            }
            *out = nv;
            cap = nc;
        }
        (*out)[(*n)++] = hst;
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : step == DB_ROW ? GI_INTERNAL : db_status(step);
}

/* The TCO of the whole days [from, to), as add_tco() computes it from the
 * hours: energy and the catalog-priced capital from the day groups (a few
 * rows a day); the GPUs of hosts linked to an inventory server with a
 * purchase cost from usage_daily by host, their owned seconds taken out
 * of their group's and charged at the server's price over its
 * amortization window instead. A day's rows carry the owner of each GPU's
 * first hour of the day. */
static int add_tco_days(struct conn *c, int64_t from, int64_t to,
                        const struct store_cost_settings *set, const struct store_scope *sc,
                        json_t *index, struct team_row **rows, size_t *n, size_t *cap)
{
    struct tco_groups g = {0};
    struct tco_host *hosts = NULL;
    struct price_catalog *cat = NULL;
    double hours_amort = (double)set->amortization_years * HOURS_PER_YEAR;
    size_t nh = 0;
    int step = DB_DONE, rc;

    if ((rc = price_catalog_load(c, "purchase", &cat)) != GI_OK ||
        (rc = tco_groups_read(c, from, to, set, sc, &g, index, rows, n, cap)) != GI_OK ||
        (rc = tco_hosts_read(c, &hosts, &nh)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < nh && rc == GI_OK; i++) {
        struct db_stmt *s = prep(c, ST_SB_HOST_GPUS);
        if (!s) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":hid", hosts[i].host_id);
        bind_range(s, from, to, sc);
        while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW) {
            struct team_row *r = row_of(index, rows, n, cap, txt(s, 1));
            double owned = db_col_dbl(s, 6);
            char key[2048];
            json_t *hit;
            if (!r) {
                rc = GI_INTERNAL;
                break;
            }
            tco_key(s, 1, key, sizeof key);
            if ((hit = json_object_get(g.index, key)))
                g.v[json_integer_value(hit)].owned -= owned;
            if ((rc = window_owned(c, s, hosts[i].since, set->amortization_years, from, to, sc,
                                   &owned)) != GI_OK)
                break;
            r->t_capital += (double)hosts[i].micros / hours_amort * owned / 3600.0;
        }
        db_reset(s);
        if (rc == GI_OK && step != DB_DONE)
            rc = step == DB_ROW ? GI_INTERNAL : db_status(step);
    }
    for (size_t i = 0; i < g.n && rc == GI_OK; i++) {
        const struct tco_group *e = &g.v[i];
        struct team_row *r = row_of(index, rows, n, cap, e->key[0]);
        double owned = e->owned < 1e-6 ? 0 : e->owned; /* what subtraction leaves */
        int64_t micros = 0, pid;
        char pc[4];
        if (!r) {
            rc = GI_INTERNAL;
            break;
        }
        if (owned == 0)
            continue;
        if (!price_catalog_pick(cat, e->key[1], e->key[2], e->key[3], e->key[4], from, &micros, pc,
                                &pid) ||
            strcmp(pc, set->currency) != 0) {
            r->tco_unpriced += owned;
            continue;
        }
        r->t_capital += (double)micros / hours_amort * owned / 3600.0;
    }
cleanup:
    free(hosts);
    tco_groups_free(&g);
    price_catalog_free(cat);
    return rc;
}

static int add_billed(struct conn *c, enum stmt_id id, int64_t from, int64_t to, const char *cur,
                      const struct store_scope *sc, json_t *index, struct team_row **rows,
                      size_t *n, size_t *cap)
{
    struct db_stmt *s = prep(c, id);
    int step;

    if (!s)
        return GI_INTERNAL;
    bind_range(s, from, to, sc);
    while ((step = db_step(c, s)) == DB_ROW) {
        struct team_row *r = row_of(index, rows, n, cap, txt(s, 0));
        const char *lc = txt(s, 1);
        if (!r) {
            step = GI_INTERNAL;
            break;
        }
        if (lc && strcmp(lc, cur) == 0)
            r->billed += db_col_int(s, 2);
        else
            r->billed_other_lines++;
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : step == DB_ROW ? GI_INTERNAL : db_status(step);
}

/* A report amount: to the cent, as decimal text with 2 decimals. */
static json_t *money(double micros)
{
    char buf[32];
    gi_money_format((int64_t)llround(micros / 10000.0) * 10000, 2, buf, sizeof buf);
    return json_string(buf);
}

static json_t *hours(double seconds) { return json_real(round(seconds / 3.6) / 1000.0); }

/* One row's document, with the team's name (NULL: no owner). */
static json_t *row_doc(const struct team_row *r, const char *team, const char *cur)
{
    double catalog = r->c_busy + r->c_waste + r->c_idle + r->c_unknown;

    return json_pack(
        "{s:s?, s:{s:o, s:o, s:o, s:o, s:o}, s:o, s:{s:{s:o, s:o, s:o, s:o, s:o, s:s, s:s, s:o}, "
        "s:{s:o, s:o, s:o, s:s, s:s, s:o}, s:{s:o, s:s, s:s, s:I}}}",
        "team", team && *team ? team : NULL, "gpu_hours", "owned", hours(r->owned), "busy",
        hours(r->busy), "allocated_idle", hours(r->alloc_idle), "idle", hours(r->idle), "unknown",
        hours(r->unknown), "energy_kwh", json_real(round(r->energy_wh) / 1000.0), "cost", "catalog",
        "amount", money(catalog), "busy", money(r->c_busy), "waste", money(r->c_waste), "idle",
        money(r->c_idle), "unknown", money(r->c_unknown), "currency", cur, "method", "catalog",
        "unpriced_gpu_hours", hours(r->unpriced), "tco", "amount",
        money(r->t_capital + r->t_energy), "capital", money(r->t_capital), "energy",
        money(r->t_energy), "currency", cur, "method", "tco", "unpriced_gpu_hours",
        hours(r->tco_unpriced), "billed", "amount", money((double)r->billed), "currency", cur,
        "method", "billing", "other_currency_groups", (json_int_t)r->billed_other_lines);
}

static void sum_into(struct team_row *t, const struct team_row *r)
{
    t->owned += r->owned;
    t->busy += r->busy;
    t->alloc_idle += r->alloc_idle;
    t->idle += r->idle;
    t->unknown += r->unknown;
    t->unpriced += r->unpriced;
    t->c_busy += r->c_busy;
    t->c_waste += r->c_waste;
    t->c_idle += r->c_idle;
    t->c_unknown += r->c_unknown;
    t->t_capital += r->t_capital;
    t->t_energy += r->t_energy;
    t->energy_wh += r->energy_wh;
    t->billed += r->billed;
    t->billed_other_lines += r->billed_other_lines;
    t->tco_unpriced += r->tco_unpriced;
}

static int unmatched_doc(struct conn *c, int64_t from, int64_t to, const char *cur, json_t **out)
{
    struct db_stmt *s = prep(c, ST_SB_UNMATCHED);
    int64_t amount = 0, lines = 0, other = 0;
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":from", from);
    db_bind_int(s, ":to", to);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *lc = txt(s, 0);
        if (lc && strcmp(lc, cur) == 0)
            amount += db_col_int(s, 1);
        else
            other += db_col_int(s, 2);
        lines += db_col_int(s, 2);
    }
    db_reset(s);
    *out = json_pack("{s:o, s:s, s:I, s:I}", "amount", money((double)amount), "currency", cur,
                     "lines", (json_int_t)lines, "other_currency_lines", (json_int_t)other);
    return step == DB_DONE ? GI_OK : db_status(step);
}

int store_showback(struct store *st, int64_t from, int64_t to, const struct store_scope *sc,
                   json_t **out)
{
    bool narrowed = sc && sc->n > 0;
    struct conn *c = db_conn_get(st);
    struct store_cost_settings set;
    struct team_row *rows = NULL, total = {0};
    size_t n = 0, cap = 0;
    json_t *index = json_object(), *items = json_array(), *unmatched = NULL;
    const char *team;
    json_t *v;
    char f[32], t[32];
    int rc;

    *out = NULL;
    db_read_begin(c);
    if ((rc = settings_read(c, &set)) != GI_OK ||
        (rc = add_hours(c, from, to, set.currency, sc, index, &rows, &n, &cap)) != GI_OK ||
        (rc = (from % DAY_S == 0 && to % DAY_S == 0 ? add_tco_days : add_tco)(
             c, from, to, &set, sc, index, &rows, &n, &cap)) != GI_OK ||
        (rc = add_billed(c, ST_SB_BILLED, from, to, set.currency, sc, index, &rows, &n, &cap)) !=
            GI_OK)
        goto cleanup;
    /* Lines matched by a team tag and unmatched lines are in no data
     * center: only a report of every data center has them. */
    if (!narrowed && ((rc = add_billed(c, ST_SB_BILLED_TAG, from, to, set.currency, sc, index,
                                       &rows, &n, &cap)) != GI_OK ||
                      (rc = unmatched_doc(c, from, to, set.currency, &unmatched)) != GI_OK))
        goto cleanup;
    /* Teams in name order, the GPU-hours of no team last. */
    {
        const char **names = calloc(n + 1, sizeof *names);
        size_t k = 0;
        if (!names) {
            rc = GI_INTERNAL;
            goto cleanup;
        }
        json_object_foreach(index, team, v)
            names[k++] = team;
        for (size_t i = 1; i < k; i++)
            for (size_t j = i; j > 0; j--) {
                const char *a = names[j - 1], *b = names[j];
                bool swap = (!*a && *b) || (*a && *b && strcmp(a, b) > 0);
                if (!swap)
                    break;
                names[j - 1] = b;
                names[j] = a;
            }
        for (size_t i = 0; i < k; i++) {
            const struct team_row *r = &rows[json_integer_value(json_object_get(index, names[i]))];
            json_array_append_new(items, row_doc(r, names[i], set.currency));
            sum_into(&total, r);
        }
        free(names);
    }
    gi_time_format(from, f, sizeof f);
    gi_time_format(to, t, sizeof t);
    *out = json_pack(
        "{s:s, s:s, s:s, s:O, s:o, s:O?, s:{s:s, s:s, s:s}}", "from", f, "to", t, "currency",
        set.currency, "items", items, "total", row_doc(&total, NULL, set.currency),
        "unmatched_billing", unmatched, "methods", "catalog",
        "owned GPU-hours x fraction x the catalog's hourly rate in force at each hour for the "
        "GPU's model, env, cloud and pool; busy, waste (allocated-idle), idle and unknown hours "
        "priced alike; unpriced_gpu_hours had no rate in this currency",
        "tco",
        "capital: purchase cost per GPU (inventory metadata purchase_cost / gpu_count, else the "
        "catalog's purchase entry) / (amortization_years x 8766 h) per owned GPU-hour; plus "
        "measured energy kWh x energy_price_per_kwh x pue",
        "billing",
        "imported cloud billing lines starting in the range: instance lines spread over the "
        "instance's GPUs and charged to each GPU-hour's owner, team-tag lines to that team");
    json_object_del(json_object_get(*out, "total"), "team");
    if (*out && narrowed) {
        json_t *ids = json_array();
        for (int i = 0; i < sc->n; i++)
            json_array_append_new(ids, json_integer((json_int_t)sc->dcs[i]));
        json_object_set_new(*out, "datacenter_ids", ids);
    }
cleanup:
    db_read_end(c);
    free(rows);
    json_decref(index);
    json_decref(items);
    json_decref(unmatched);
    db_conn_put(st, c);
    return rc;
}
