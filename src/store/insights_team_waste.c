/* Waste by team read from the rollups: each team's allocated-idle, idle
 * and owned cost and GPU-hours over a range, and how many GPUs are behind
 * them. See store.h; figures and money are those of insights.c.
 *
 * The whole days of the range come from the day groups (or, with no
 * filter but the team's, from the team days, usage_team_days), the
 * partial days at either end from the hour groups (or the team hours);
 * the GPU counts from the team days' id sets where they serve, else from
 * the GPU-days (usage_daily) and the hours at the ends. */
#include "store/insights_int.h"
#include "core/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The rows waste by team sums (alias h; aic/ic/oc allocated-idle, idle
 * and owned cost in micro-unit-seconds, ai/i/o those seconds x fraction,
 * cur the currency): whole days from the day groups, the partial days at
 * the range's ends from the hour groups (whose sums are those of the
 * GPUs' hourly rows). */
#define WASTE_HOURS(edge)                                                                          \
    " UNION ALL SELECT h.team, h.alloc_idle_cost, h.idle_cost, h.owned_cost, h.alloc_idle_s, "     \
    "h.idle_s, h.owned_s, NULLIF(h.currency, '') FROM usage_groups_hourly h WHERE " edge
#define WASTE_SRC                                                                                  \
    "(SELECT h.team, h.alloc_idle_cost AS aic, h.idle_cost AS ic, h.owned_cost AS oc, "            \
    "h.alloc_idle_s AS ai, h.idle_s AS i, h.owned_s AS o, NULLIF(h.currency, '') AS cur FROM "     \
    "usage_groups_daily h WHERE " WHOLE_DAYS("day") WASTE_HOURS(EDGE_HOURS_1)                      \
        WASTE_HOURS(EDGE_HOURS_2) WASTE_HOURS(EDGE_HOURS_3) ") h"
/* With no filter but the team's, the same from the team days
 * (usage_team_days, the day groups summed over the other dimensions) and
 * the team hours (usage_team_hours, the hour groups summed alike); a
 * team day older than the oldest day group is left to be pruned. */
#define TEAM_DAYS                                                                                  \
    " FROM usage_team_days h WHERE h.day >= :d1 AND h.day < :d2 AND NOT (h.day >= :x1 AND h.day "  \
    "< :x2) AND (:team IS NULL OR h.team = :team) AND h.day >= (SELECT COALESCE(MIN(g.day), 0) "   \
    "FROM usage_groups_daily g)"
#define TEAM_EDGE(lo, hi)                                                                          \
    " UNION ALL SELECT h.team, h.alloc_idle_cost, h.idle_cost, h.owned_cost, h.alloc_idle_s, "     \
    "h.idle_s, h.owned_s, NULLIF(h.currency, '') FROM usage_team_hours h WHERE h.hour >= " lo      \
    " AND h.hour < " hi " AND (:team IS NULL OR h.team = :team)"
#define WASTE_SRC_TEAM                                                                             \
    "(SELECT h.team, h.alloc_idle_cost AS aic, h.idle_cost AS ic, h.owned_cost AS oc, "            \
    "h.alloc_idle_s AS ai, h.idle_s AS i, h.owned_s AS o, NULLIF(h.currency, '') AS cur" TEAM_DAYS \
        TEAM_EDGE(":from", ":d1") TEAM_EDGE(":d2", ":to") TEAM_EDGE(":x1", ":x2") ") h"
/* Waste by team over the rows of src. */
#define WASTE(src)                                                                                 \
    "SELECT h.team, SUM(h.aic) / 3600, SUM(h.ic) / 3600, SUM(h.oc) / 3600, SUM(h.ai) / 3600, "     \
    "SUM(h.i) / 3600, SUM(h.o) / 3600, MIN(h.cur), MAX(h.cur) FROM " src " GROUP BY h.team ORDER " \
    "BY COALESCE(SUM(h.aic), 0) DESC, COALESCE(SUM(h.ic), 0) DESC, SUM(h.ai) DESC, SUM(h.i) "      \
    "DESC, h.team LIMIT :limit"
/* The GPUs behind each team's figures: its GPU-days (usage_daily) and the
 * hours at the range's ends. */
#define WASTE_GPU_HOURS(edge)                                                                      \
    " UNION ALL SELECT h.team, h.gpu_id, h.alloc_idle_s FROM usage_hourly h WHERE " edge

#define STATEMENTS(X)                                                                              \
    X(WASTE_BY_TEAM, WASTE(WASTE_SRC))                                                             \
    X(WASTE_BY_TEAM_ONLY, WASTE(WASTE_SRC_TEAM))                                                   \
    X(WASTE_GPUS,                                                                                  \
      "SELECT h.team, COUNT(DISTINCT CASE WHEN h.alloc_idle_s > 0 THEN h.gpu_id END), "            \
      "COUNT(DISTINCT h.gpu_id) FROM (SELECT h.team, h.gpu_id, h.alloc_idle_s FROM usage_daily h " \
      "WHERE " WHOLE_DAYS("day") WASTE_GPU_HOURS(EDGE_HOURS_1) WASTE_GPU_HOURS(EDGE_HOURS_2)       \
          WASTE_GPU_HOURS(EDGE_HOURS_3) ") h GROUP BY h.team")                                     \
    /* With no filter but the team's: the whole days' GPU sets, and the                            \
     * hours at the range's ends. */                                                               \
    X(WASTE_GPU_SETS, "SELECT h.team, h.gpu_ids, h.alloc_idle_ids" TEAM_DAYS)                      \
    X(WASTE_GPU_EDGES,                                                                             \
      "SELECT h.team, h.gpu_id, h.alloc_idle_s FROM usage_hourly h WHERE " EDGE_HOURS_1            \
          WASTE_GPU_HOURS(EDGE_HOURS_2) WASTE_GPU_HOURS(EDGE_HOURS_3))

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* One team of the WASTE_BY_TEAM statement. */
static json_t *waste_row(struct db_stmt *s)
{
    const char *c1 = db_col_text(s, 7), *c2 = db_col_text(s, 8);

    /* The GPU counts are set afterwards (waste_gpus). */
    return json_pack(
        "{s:o, s:o, s:o, s:o, s:{s:o, s:o, s:o}, s:I, s:I}", "team", insight_col_text_json(s, 0),
        "allocated_idle_cost", insight_cost_json(insight_col_opt(s, 1), c1, c2), "idle_cost",
        insight_cost_json(insight_col_opt(s, 2), c1, c2), "owned_cost",
        insight_cost_json(insight_col_opt(s, 3), c1, c2), "gpu_hours", "owned",
        insight_num(db_col_dbl(s, 6)), "allocated_idle", insight_num(db_col_dbl(s, 4)), "idle",
        insight_num(db_col_dbl(s, 5)), "gpus", (json_int_t)0, "gpus_allocated_idle", (json_int_t)0);
}

/* A set of GPU ids, a bit per id. */
struct gpu_set {
    uint64_t *w;
    size_t n;     /* words */
    int64_t size; /* ids in it */
};

/* Words all the sets of one request may take (32 MiB); past it the GPU
 * counts are read by the statement over the GPU-days instead. */
#define SETS_MAX_WORDS ((size_t)1 << 22)

/* Adds GPU id to s; false when out of memory or past *budget words. */
static bool set_add(struct gpu_set *s, int64_t id, size_t *budget)
{
    size_t wi;
    uint64_t bit;

    if (id < 0)
        return true;
    wi = (size_t)id / 64;
    bit = (uint64_t)1 << (id % 64);
    if (wi >= s->n) {
        size_t n = wi + 1 > 2 * s->n ? wi + 1 : 2 * s->n;
        uint64_t *w;
        if (n - s->n > *budget || (w = realloc(s->w, n * sizeof *w)) == NULL)
            return false;
        memset(w + s->n, 0, (n - s->n) * sizeof *w);
        *budget -= n - s->n;
        s->w = w;
        s->n = n;
    }
    if (!(s->w[wi] & bit)) {
        s->w[wi] |= bit;
        s->size++;
    }
    return true;
}

/* Adds the ids of a comma-separated list (NULL: none) to s. */
static bool set_add_list(struct gpu_set *s, const char *ids, size_t *budget)
{
    const char *p = ids;

    while (p != NULL && *p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p)
            return true; /* not an id: the list ends */
        if (!set_add(s, v, budget))
            return false;
        p = *end == ',' ? end + 1 : end;
    }
    return true;
}

/* The GPUs of each team's item: every GPU, and those allocated-idle. */
struct team_sets {
    struct gpu_set all, idle;
};

/* The sets of the item of the team in column 0 of s's row (idx: team key
 * -> index, NULL, no team, as "\x1f"); NULL when no item has it. */
static struct team_sets *row_sets(struct db_stmt *s, json_t *idx, struct team_sets *sets)
{
    const char *t = db_col_text(s, 0);
    json_t *i = json_object_get(idx, t ? t : "\x1f");

    return i ? &sets[json_integer_value(i)] : NULL;
}

/* Fills sets[] (one per item, found by team in idx: team key -> index)
 * from the day sets and the edge hours; GI_TOO_LARGE past the budget. */
static int sets_read(struct conn *c, const struct store_insight_filter *f, json_t *idx,
                     struct team_sets *sets)
{
    struct db_stmt *s = prep(c, ST_WASTE_GPU_SETS);
    size_t budget = SETS_MAX_WORDS;
    bool fit = true;
    int step = DB_DONE;

    if (s == NULL)
        return GI_INTERNAL;
    insight_bind_days(s, f, 0);
    while (fit && (step = db_step(c, s)) == DB_ROW) {
        struct team_sets *x = row_sets(s, idx, sets);
        fit = x == NULL || (set_add_list(&x->all, db_col_text(s, 1), &budget) &&
                            set_add_list(&x->idle, db_col_text(s, 2), &budget));
    }
    db_reset(s);
    if (!fit)
        return GI_TOO_LARGE;
    if (step != DB_DONE)
        return db_status(step);
    /* A range of whole days has no hours at its ends (and PostgreSQL's
     * generic plan of the edges' statement costs tens of ms for none). */
    if (f->from < f->to && f->from % 86400 == 0 && f->to % 86400 == 0)
        return GI_OK;
    if ((s = prep(c, ST_WASTE_GPU_EDGES)) == NULL)
        return GI_INTERNAL;
    insight_bind_days(s, f, 0);
    while (fit && (step = db_step(c, s)) == DB_ROW) {
        struct team_sets *x = row_sets(s, idx, sets);
        fit =
            x == NULL || (set_add(&x->all, db_col_int(s, 1), &budget) &&
                          (db_col_dbl(s, 2) <= 0 || set_add(&x->idle, db_col_int(s, 1), &budget)));
    }
    db_reset(s);
    if (!fit)
        return GI_TOO_LARGE;
    return step == DB_DONE ? GI_OK : db_status(step);
}

/* Sets the GPU counts of the items from the day sets (a filter by team
 * alone); GI_TOO_LARGE when they do not fit the budget. */
static int waste_gpus_sets(struct conn *c, const struct store_insight_filter *f, json_t *items)
{
    size_t n = json_array_size(items), i;
    struct team_sets *sets = n ? calloc(n, sizeof *sets) : NULL;
    json_t *idx = json_object(), *o;
    int rc = GI_INTERNAL;

    if ((n && sets == NULL) || idx == NULL)
        goto cleanup;
    /* NULL (no team) as "\x1f", which no team name holds. */
    json_array_foreach(items, i, o) {
        const char *t = json_string_value(json_object_get(o, "team"));
        if (json_object_set_new(idx, t ? t : "\x1f", json_integer((json_int_t)i)) != 0)
            goto cleanup;
    }
    if ((rc = sets_read(c, f, idx, sets)) != GI_OK)
        goto cleanup;
    json_array_foreach(items, i, o) {
        json_object_set_new(o, "gpus", json_integer((json_int_t)sets[i].all.size));
        json_object_set_new(o, "gpus_allocated_idle", json_integer((json_int_t)sets[i].idle.size));
    }
cleanup:
    for (i = 0; sets && i < n; i++) {
        free(sets[i].all.w);
        free(sets[i].idle.w);
    }
    free(sets);
    json_decref(idx);
    return rc;
}

/* Sets each team's GPU counts on its item: from the day sets when the
 * filter is the team's alone (and they fit), else by WASTE_GPUS. */
static int waste_gpus(struct conn *c, const struct store_insight_filter *f, json_t *items)
{
    struct db_stmt *s;
    json_t *by_team, *o;
    size_t i;
    int step, rc;

    if (insight_team_only(f) && (rc = waste_gpus_sets(c, f, items)) != GI_TOO_LARGE)
        return rc;
    s = prep(c, ST_WASTE_GPUS);
    by_team = json_object();
    if (s == NULL || by_team == NULL) {
        json_decref(by_team);
        return GI_INTERNAL;
    }
    /* NULL (no team) as "\x1f", which no team name holds. */
    json_array_foreach(items, i, o) {
        const char *t = json_string_value(json_object_get(o, "team"));
        json_object_set(by_team, t ? t : "\x1f", o);
    }
    insight_bind_days(s, f, 0);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *t = db_col_text(s, 0);
        json_t *it = json_object_get(by_team, t ? t : "\x1f");
        if (it == NULL)
            continue;
        json_object_set_new(it, "gpus", json_integer((json_int_t)db_col_int(s, 2)));
        json_object_set_new(it, "gpus_allocated_idle", json_integer((json_int_t)db_col_int(s, 1)));
    }
    db_reset(s);
    json_decref(by_team);
    return db_status(step);
}

static int waste_fn(struct conn *c, const void *arg, json_t *items)
{
    const struct store_insight_filter *f = arg;
    struct db_stmt *s = prep(c, insight_team_only(f) ? ST_WASTE_BY_TEAM_ONLY : ST_WASTE_BY_TEAM);
    size_t i;
    json_t *o;
    int rc;

    if (s == NULL)
        return GI_INTERNAL;
    insight_bind_days(s, f, 0);
    if ((rc = insight_collect_rows(c, s, waste_row, items)) != GI_OK ||
        (rc = waste_gpus(c, f, items)) != GI_OK)
        return rc;
    json_array_foreach(items, i, o)
        json_object_set_new(o, "rank", json_integer((json_int_t)i + 1));
    return rc;
}

int store_insight_waste_by_team(struct store *st, const struct store_insight_filter *f,
                                json_t **items)
{
    return insight_run_items(st, items, waste_fn, f);
}
