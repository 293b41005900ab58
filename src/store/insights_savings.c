/* The savings drawn from the inefficiency lists of insights_waste.c
 * (allocated-idle and idle GPUs, over-requesting workloads), and the
 * per-process cache of their answers. See store.h; figures and money are
 * those of insights.c. */
#include "store/insights_int.h"
#include "store/kept.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATEMENTS(X)                                                                              \
    X(SAVINGS_REV, "SELECT COUNT(*), COALESCE(MAX(updated_at), 0) FROM usage_groups_daily WHERE "  \
                   "day >= :from AND day < :to")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* A month, for the savings: 30 days of hours. */
#define MONTH_HOURS 720.0

/* ---- savings ---- */

/* One opportunity being gathered: GPUs of one kind of waste under one
 * holder, in one currency. */
struct opportunity {
    char key[512];
    json_t *o;        /* the item */
    json_t *uuids;    /* borrowed from o */
    double hourly;    /* micros per hour saved, NAN: no rate */
    char currency[8]; /* "" without a rate */
    int64_t since;
};

struct opportunities {
    struct opportunity *v;
    size_t n, cap;
    json_t *claimed; /* uuid -> true: each GPU is behind one opportunity */
};

/* Frees every opportunity and the set of claimed GPUs. */
static void opps_free(struct opportunities *ops)
{
    for (size_t i = 0; i < ops->n; i++)
        json_decref(ops->v[i].o);
    free(ops->v);
    json_decref(ops->claimed);
}

/* The opportunity of `kind` for `holder` in `currency`, made on first
 * use; NULL when out of memory. */
static struct opportunity *opp_get(struct opportunities *ops, const char *kind, const char *holder,
                                   const char *currency)
{
    char key[512];

    snprintf(key, sizeof key, "%s\x1f%s\x1f%s", kind, holder, currency ? currency : "");
    for (size_t i = 0; i < ops->n; i++)
        if (strcmp(ops->v[i].key, key) == 0)
            return &ops->v[i];
    if (ops->n == ops->cap) {
        size_t cap = ops->cap ? ops->cap * 2 : 16;
        struct opportunity *nv = realloc(ops->v, cap * sizeof *nv);
        if (nv == NULL)
            return NULL;
        ops->v = nv;
        ops->cap = cap;
    }
    struct opportunity *p = &ops->v[ops->n];
    memset(p, 0, sizeof *p);
    gi_strlcpy(p->key, key, sizeof p->key);
    gi_strlcpy(p->currency, currency ? currency : "", sizeof p->currency);
    p->hourly = currency ? 0 : NAN;
    if ((p->o = json_pack("{s:s, s:[]}", "kind", kind, "gpu_uuids")) == NULL)
        return NULL;
    p->uuids = json_object_get(p->o, "gpu_uuids");
    ops->n++;
    return p;
}

/* Adds one GPU with its cost per hour now to p, unless an opportunity
 * already counts it; false when it was skipped. */
static bool opp_add(struct opportunities *ops, struct opportunity *p, const char *uuid,
                    double hourly, int64_t since)
{
    if (json_object_get(ops->claimed, uuid))
        return false;
    json_object_set_new(ops->claimed, uuid, json_true());
    json_array_append_new(p->uuids, json_string(uuid));
    if (!isnan(p->hourly) && !isnan(hourly))
        p->hourly += hourly;
    if (p->since == 0 || since < p->since)
        p->since = since;
    return true;
}

/* The item's cost per hour now (micros), NAN without a rate. */
static double item_hourly(const json_t *o)
{
    const json_t *h = json_object_get(o, HOURLY);
    return h ? json_real_value(h) : NAN;
}

/* Member k of o as a string, NULL when absent or not a string. */
static const char *item_str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* "~$4320.00/month" or "~4320.00 EUR/month"; "no catalog rate" when the
 * saving is unknown. */
static void saving_text(const struct opportunity *p, char *buf, size_t len)
{
    char amount[40];

    if (isnan(p->hourly) || p->currency[0] == '\0') {
        snprintf(buf, len, "no catalog rate, saving unknown");
        return;
    }
    insight_money_text(p->hourly * MONTH_HOURS, amount, sizeof amount);
    if (strcmp(p->currency, "USD") == 0)
        snprintf(buf, len, "~$%s/month", amount);
    else
        snprintf(buf, len, "~%s %s/month", amount, p->currency);
}

/* Finishes p's item: its count, since, saving and its sentence, by the
 * kind of opportunity. */
static void opp_finish(struct opportunity *p)
{
    size_t n = json_array_size(p->uuids);
    const char *kind = item_str(p->o, "kind"), *holder = item_str(p->o, "_holder");
    const char *team = item_str(p->o, "team"), *pl = n == 1 ? "" : "s";
    char date[32], tail[64], text[1024];

    gi_time_format(p->since, date, sizeof date);
    date[10] = '\0';
    saving_text(p, tail, sizeof tail);
    if (strcmp(kind, "allocated_idle") == 0)
        snprintf(text, sizeof text, "release %zu allocated-idle GPU%s held by %s since %s: %s", n,
                 pl, holder, date, tail);
    else if (strcmp(kind, "idle") == 0)
        snprintf(text, sizeof text,
                 "reclaim %zu GPU%s %s%s idle for %lld hours or more since %s: %s", n, pl,
                 team ? "of team " : "without an owner", team ? team : "",
                 (long long)json_integer_value(json_object_get(p->o, "_hours")), date, tail);
    else
        snprintf(text, sizeof text,
                 "%s holds %lld GPUs and leaves %zu idle since %s: release the idle GPU%s: %s",
                 holder, (long long)json_integer_value(json_object_get(p->o, "_n")), n, date, pl,
                 tail);
    json_object_set_new(p->o, "gpus", json_integer((json_int_t)n));
    json_object_set_new(p->o, "since", insight_time_json(p->since));
    json_object_set_new(p->o, "text", json_string(text));
    json_object_set_new(
        p->o, "saving",
        json_pack("{s:o, s:o, s:s, s:s}", "monthly",
                  insight_money_json(p->currency[0] ? p->hourly * MONTH_HOURS : NAN), "currency",
                  p->currency[0] ? json_string(p->currency) : json_null(), "method", "catalog",
                  "basis",
                  "cost per hour now of the GPUs behind it (catalog rate x fraction) x "
                  "720 hours (30 days)"));
    json_object_del(p->o, "_holder");
    json_object_del(p->o, "_hours");
    json_object_del(p->o, "_n");
}

/* The currency of an item's cost per hour, NULL without a rate. */
static const char *item_currency(const json_t *o)
{
    return isnan(item_hourly(o)) ? NULL : item_str(json_object_get(o, "hourly"), "currency");
}

/* An item's RFC 3339 member k as unix seconds; false when absent. */
static bool item_time(const json_t *o, const char *k, int64_t *t)
{
    const char *v = item_str(o, k);
    return v != NULL && gi_time_parse(v, t) == GI_OK;
}

/* Release the GPUs held but idle now, per holder (the consumer's team,
 * else the owner's team, else the consumer itself). */
static int savings_alloc_idle(const json_t *list, int64_t recent, struct opportunities *ops)
{
    size_t i;
    json_t *o;

    json_array_foreach(list, i, o) {
        const json_t *cons = json_object_get(o, "consumer");
        const char *team = item_str(cons, "team") ? item_str(cons, "team") : item_str(o, "team");
        const char *name = item_str(cons, "name"), *kind = item_str(cons, "kind");
        int64_t last = 0, since = 0;
        char holder[400];
        struct opportunity *p;

        if (!json_is_true(json_object_get(o, "idle_now")) || !item_time(o, "last_seen", &last) ||
            last < recent || !item_time(o, "since", &since) || item_str(o, "gpu") == NULL)
            continue;
        if (team)
            snprintf(holder, sizeof holder, "team %s", team);
        else
            snprintf(holder, sizeof holder, "%s %s", kind ? kind : "", name ? name : "");
        if ((p = opp_get(ops, "allocated_idle", holder, item_currency(o))) == NULL)
            return GI_INTERNAL;
        if (json_object_get(p->o, "_holder") == NULL) {
            json_object_set_new(p->o, "team", team ? json_string(team) : json_null());
            json_object_set_new(p->o, "consumer", team || !name ? json_null() : json_string(name));
            json_object_set_new(p->o, "_holder", json_string(holder));
        }
        opp_add(ops, p, item_str(o, "gpu"), item_hourly(o), since);
    }
    return GI_OK;
}

/* Reclaim the GPUs idle for long, per owner team. */
static int savings_idle(const json_t *list, struct opportunities *ops)
{
    size_t i;
    json_t *o;

    json_array_foreach(list, i, o) {
        const char *team = item_str(o, "team");
        int64_t since = 0, hours = json_integer_value(json_object_get(o, "hours"));
        struct opportunity *p;

        if (!item_time(o, "since", &since) || item_str(o, "gpu") == NULL)
            continue;
        if ((p = opp_get(ops, "idle", team ? team : "", item_currency(o))) == NULL)
            return GI_INTERNAL;
        if (json_object_get(p->o, "_holder") == NULL) {
            json_object_set_new(p->o, "team", team ? json_string(team) : json_null());
            json_object_set_new(p->o, "consumer", json_null());
            json_object_set_new(p->o, "_holder", json_string(team ? team : ""));
            json_object_set_new(p->o, "_hours", json_integer(hours));
        }
        if (hours < json_integer_value(json_object_get(p->o, "_hours")))
            json_object_set_new(p->o, "_hours", json_integer(hours));
        opp_add(ops, p, item_str(o, "gpu"), item_hourly(o), since);
    }
    return GI_OK;
}

/* Release the idle GPUs of each workload that still holds them. */
static int savings_overrequest(const json_t *list, int64_t recent, struct opportunities *ops)
{
    size_t i, j;
    json_t *o, *u;

    json_array_foreach(list, i, o) {
        const char *wl = item_str(o, "workload"), *host = item_str(o, "host");
        const char *kind = item_str(o, "kind");
        double hourly = item_hourly(o);
        int64_t since = 0;
        char holder[600];
        struct opportunity *p;

        if (json_integer_value(json_object_get(o, "_last")) < recent ||
            !item_time(o, "first", &since))
            continue;
        snprintf(holder, sizeof holder, "%s %s on %s", kind ? kind : "", wl ? wl : "",
                 host ? host : "an unknown host");
        if ((p = opp_get(ops, "overrequest", holder,
                         isnan(hourly) ? NULL : item_str(o, "_currency"))) == NULL)
            return GI_INTERNAL;
        json_object_set_new(p->o, "team", json_incref(json_object_get(o, "team")));
        json_object_set_new(p->o, "consumer", wl ? json_string(wl) : json_null());
        json_object_set_new(p->o, "_holder", json_string(holder));
        json_object_set_new(p->o, "_n", json_incref(json_object_get(o, "n")));
        json_array_foreach(json_object_get(o, "idle_gpus"), j, u)
            opp_add(ops, p, json_string_value(u), NAN, since);
        if (!isnan(p->hourly) && !isnan(hourly))
            p->hourly += hourly;
    }
    return GI_OK;
}

/* Larger monthly saving first (unknown last), then more GPUs. */
static int opp_cmp(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    const char *mx = item_str(json_object_get(x, "saving"), "monthly");
    const char *my = item_str(json_object_get(y, "saving"), "monthly");
    double sx = mx ? strtod(mx, NULL) : -1, sy = my ? strtod(my, NULL) : -1;
    json_int_t nx = json_integer_value(json_object_get(x, "gpus"));
    json_int_t ny = json_integer_value(json_object_get(y, "gpus"));

    if (sx != sy)
        return sx < sy ? 1 : -1;
    if (nx != ny)
        return nx < ny ? 1 : -1;
    return strcmp(item_str(x, "text"), item_str(y, "text"));
}

/* The savings: the three lists read whole, turned into opportunities
 * and the largest f->limit kept. */
static int savings_fn(struct conn *c, const void *arg, json_t *items)
{
    const struct insight_arg *a = arg;
    struct store_insight_filter f = *a->f;
    struct opportunities ops = {.claimed = json_object()};
    json_t *alloc = json_array(), *idle = json_array(), *over = json_array();
    int64_t recent = insight_recent_hour(f.to) + 3600;
    int rc = GI_INTERNAL;

    if (alloc == NULL || idle == NULL || over == NULL || ops.claimed == NULL)
        goto cleanup;
    /* Every GPU behind an opportunity counts, so the lists are read whole
     * (up to a bound) and the opportunities limited afterwards; of the
     * allocated-idle GPUs only those idle now, which savings_alloc_idle
     * keeps, have their runs walked. */
    f.limit = 10000;
    if ((rc = insight_alloc_idle_now_items(c, &f, alloc)) != GI_OK ||
        (rc = insight_idle_items(c, &f, a->min_hours, idle)) != GI_OK ||
        (rc = insight_overrequest_items(c, &f, a->peak_below, over)) != GI_OK)
        goto cleanup;
    /* The most specific first: a workload's unused GPUs, then GPUs held
     * but idle, then GPUs nobody holds. */
    if ((rc = savings_overrequest(over, recent, &ops)) != GI_OK ||
        (rc = savings_alloc_idle(alloc, recent, &ops)) != GI_OK ||
        (rc = savings_idle(idle, &ops)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    for (size_t i = 0; i < ops.n; i++) {
        struct opportunity *p = &ops.v[i];
        if (json_array_size(p->uuids) == 0)
            continue;
        opp_finish(p);
        if (json_array_append(items, p->o) != 0)
            goto cleanup;
    }
    rc = insight_sort_limit(items, opp_cmp, a->f->limit > 0 ? a->f->limit : 100);
cleanup:
    opps_free(&ops);
    json_decref(alloc);
    json_decref(idle);
    json_decref(over);
    return rc;
}

/* ---- the savings cache ----
 *
 * The savings read three heavy lists; a page that asks again within the
 * hour, with nothing rolled up since, gets the answer it got before (a
 * kept answer, kept.h), keyed by the filters, the data centers of the
 * token's scope, the range and the parameters, and valid while the
 * range's rollup revision is unchanged: the number of day-group rows of
 * the range's days and their newest updated_at. The rollup job
 * rewrites a day's groups, with updated_at = now, in every transaction
 * that writes one of its hours (new data, late data, re-attribution,
 * re-pricing), and retention deletes them, so any change to the hours the
 * savings read changes the revision. An answer is kept only when its
 * revision was read in a later second than that newest write (a write in
 * the same second would not change it). */
#define SAVINGS_CACHE_TTL_S 3600
static const char kept_savings[] = "savings";

/* The rollup revision of f's range (see above). */
static int savings_rev_read(struct store *st, const struct store_insight_filter *f,
                            struct kept_rev *rev)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_SAVINGS_REV);
    int step = GI_INTERNAL;

    if (s != NULL) {
        db_bind_int(s, ":from", f->from - f->from % 86400);
        db_bind_int(s, ":to", f->to);
        if ((step = db_step(c, s)) == DB_ROW) {
            rev->a = db_col_int(s, 0);
            rev->b = db_col_int(s, 1);
        }
        db_reset(s);
    }
    db_conn_put(st, c);
    return step == DB_ROW ? GI_OK : step == DB_DONE ? GI_INTERNAL : db_status(step);
}

/* The cache key of a savings question; false when it does not fit. */
static bool savings_key(const struct store_insight_filter *f, int64_t min_hours, double peak_below,
                        char *key, size_t len)
{
    char nums[160], dcs[KEPT_SCOPE_TEXT_MAX];
    const char *parts[8] = {f->team, f->env, f->pool, f->cluster, f->cloud, f->model, nums, dcs};

    snprintf(nums, sizeof nums, "%lld %lld %lld %lld %lld %.17g", (long long)f->datacenter_id,
             (long long)f->from, (long long)f->to, (long long)f->limit, (long long)min_hours,
             peak_below);
    kept_scope_text(&f->scope, dcs, sizeof dcs);
    return kept_key(key, len, 8, parts);
}

int store_insight_savings(struct store *st, const struct store_insight_filter *f,
                          int64_t idle_min_hours, double peak_below, json_t **items)
{
    struct insight_arg a = {f, idle_min_hours, peak_below};
    struct kept_rev rev = {0, 0};
    int64_t now = gi_now();
    char key[KEPT_KEY_MAX];
    bool cacheable = savings_key(f, idle_min_hours, peak_below, key, sizeof key) &&
                     savings_rev_read(st, f, &rev) == GI_OK;
    int rc;

    if (cacheable &&
        (*items = kept_get(st, kept_savings, key, &rev, now, SAVINGS_CACHE_TTL_S)) != NULL)
        return GI_OK;
    rc = insight_run_items(st, items, savings_fn, &a);
    if (rc == GI_OK && cacheable && now > rev.b)
        kept_put(st, kept_savings, key, &rev, now, *items);
    return rc;
}
