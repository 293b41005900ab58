/* Private to the usage insight files of src/store/ (insights.c,
 * insights_patterns.c, insights_waste.c, insights_savings.c): the filters
 * every insight statement shares and the helpers that turn its rows into
 * items (also insights_idle.c). */
#ifndef GI_INSIGHTS_INT_H
#define GI_INSIGHTS_INT_H

#include "store/store_int.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The data-center filters of every insight row, of alias `a`: the data
 * center named (:dc, 0: any) and the token's scope (STORE_SCOPE_IN, bound
 * by insight_bind_filter()). */
#define DC_FILTERS(a)                                                                              \
    "(CAST(:dc AS BIGINT) = 0 OR " a                                                               \
    ".datacenter_id = :dc) AND " STORE_SCOPE_IN(a ".datacenter_id") " "

/* The rows every insight reads (alias h for usage_hourly). */
#define FILTERS                                                                                    \
    " h.hour >= :from AND h.hour < :to AND (:team IS NULL OR h.team = :team) AND (:env IS NULL "   \
    "OR h.env = :env) AND (:pool IS NULL OR h.pool = :pool) AND (:cluster IS NULL OR h.cluster = " \
    ":cluster) AND (:cloud IS NULL OR h.cloud = :cloud) AND (:model IS NULL OR h.model = :model) " \
    "AND " DC_FILTERS("h")

/* FILTERS without the range: the dimensions alone, for any table with
 * the dimension columns under alias h (usage_hourly, usage_daily,
 * usage_groups_daily, usage_groups_hourly). */
#define DIM_FILTERS                                                                                \
    " (:team IS NULL OR h.team = :team) AND (:env IS NULL OR h.env = :env) AND (:pool IS NULL OR " \
    "h.pool = :pool) AND (:cluster IS NULL OR h.cluster = :cluster) AND (:cloud IS NULL OR "       \
    "h.cloud = :cloud) AND (:model IS NULL OR h.model = :model) AND " DC_FILTERS("h")

/* A range split for the daily tables (insight_bind_days): the whole days
 * [:d1, :d2) but the day [:x1, :x2) (empty when x1 = x2) from a table
 * keyed by `col` (day), and the hours [:from, :d1), [:d2, :to) and
 * [:x1, :x2) from usage_hourly (EDGE_HOURS_1..3), each with the
 * dimension filters. */
#define WHOLE_DAYS(col)                                                                            \
    " h." col " >= :d1 AND h." col " < :d2 AND NOT (h." col " >= :x1 AND h." col                   \
    " < :x2) AND " DIM_FILTERS
#define EDGE_HOURS_1 " h.hour >= :from AND h.hour < :d1 AND " DIM_FILTERS
#define EDGE_HOURS_2 " h.hour >= :d2 AND h.hour < :to AND " DIM_FILTERS
#define EDGE_HOURS_3 " h.hour >= :x1 AND h.hour < :x2 AND " DIM_FILTERS

/* Binds the split of WHOLE_DAYS / EDGE_HOURS_n for f's range: the whole
 * UTC days inside [f->from, f->to), except the day holding `split` when
 * split falls inside a day (0: none), so that a figure cut at split never
 * reads a day across it whole. Also binds what insight_bind_filter()
 * binds. */
void insight_bind_days(struct db_stmt *s, const struct store_insight_filter *f, int64_t split);
/* That split itself: the whole days [d1, d2) (d1 = d2 = f->to when there
 * is none) but the day [x1, x2) (x1 = x2 = 0: none). */
struct insight_days {
    int64_t d1, d2, x1, x2;
};
struct insight_days insight_days_split(const struct store_insight_filter *f, int64_t split);
/* Binds the filters and the range every statement shares (FILTERS, with
 * f->scope) and the page bound (f->limit, 100 when not positive). s and f
 * are borrowed. */
void insight_bind_filter(struct db_stmt *s, const struct store_insight_filter *f);
/* Whether f filters by nothing but the team (and the range), so that the
 * tables summed over every other dimension (usage_team_hours,
 * usage_team_days) answer it; never for a scope of data centers, which
 * those tables do not keep. */
bool insight_team_only(const struct store_insight_filter *f);
/* A figure as a new JSON real, rounded to 6 decimals so sums of floating
 * seconds read as the hours they are (10 rather than 9.999999999998). */
json_t *insight_num(double x);
/* Real column i of s; NAN when NULL. */
double insight_col_opt(struct db_stmt *s, int i);
/* Text column i of s as a new JSON string, JSON null for NULL. */
json_t *insight_col_text_json(struct db_stmt *s, int i);
/* Micro-units as a decimal string with 2 decimals ("1234.50") in buf
 * (len bytes, truncated to fit). */
void insight_money_text(double micros, char *buf, size_t len);
/* Micro-units as a new JSON decimal string; JSON null for NAN (no rate). */
json_t *insight_money_json(double micros);
/* Appends o to items, stealing o; false when o is NULL (out of memory) or
 * the append fails. */
bool insight_append(json_t *items, json_t *o);
/* Steps the bound statement s (borrowed, reset afterwards), appending one
 * item per row made by `row`; GI_INTERNAL when a row cannot be made, the
 * step's status otherwise. */
int insight_collect_rows(struct conn *c, struct db_stmt *s, json_t *(*row)(struct db_stmt *s),
                         json_t *items);

/* ---- shared by insights_waste.c and insights_savings.c ---- */

/* Hidden member of the items the savings are drawn from: the GPU's cost
 * per hour now (rate × fraction, micro-units), stripped before an item
 * leaves the store (insight_run_items()). */
#define HOURLY "_hourly"

/* What the producers of insight_run_items() take besides the filter. */
struct insight_arg {
    const struct store_insight_filter *f;
    int64_t min_hours;
    double peak_below;
};

/* RFC 3339 of t as JSON. */
json_t *insight_time_json(int64_t t);
/* The oldest hour a run may end with and still count as lasting up to
 * the end of the range (the hour before the range's newest hour). */
int64_t insight_recent_hour(int64_t to);
/* {"amount","currency","method"} from a sum of micro-units and the least
 * and greatest currency behind it: amount and currency null when no hour
 * had a rate (cur1 NULL or micros NAN); amount null and currency "mixed"
 * when rates differ in currency. */
json_t *insight_cost_json(double micros, const char *cur1, const char *cur2);
/* Sets o's "hourly" cost ({"amount","currency"}, null without a rate:
 * micros NAN or currency NULL) and, with a rate, its hidden HOURLY
 * figure. */
void insight_set_hourly(json_t *o, double micros, const char *currency);
/* Appends the GPUs idle now for min_hours or more to items (with the
 * hidden HOURLY figures), most hours first, then by GPU UUID, at most
 * f->limit (insights_idle.c). */
int insight_idle_items(struct conn *c, const struct store_insight_filter *f, int64_t min_hours,
                       json_t *items);
/* Appends the allocated-idle GPUs of f to items (with the hidden HOURLY
 * figures). */
int insight_alloc_idle_items(struct conn *c, const struct store_insight_filter *f, json_t *items);
/* The same, in the same order, less the items the savings would not use:
 * those whose consumer is not idle now (its newest hour before
 * insight_recent_hour(f->to), or not wholly allocated-idle), dropped
 * before their runs are walked; the first f->limit items ranked, as
 * insight_alloc_idle_items() has them, then filtered. */
int insight_alloc_idle_now_items(struct conn *c, const struct store_insight_filter *f,
                                 json_t *items);
/* Appends the over-requesting workloads of f (peak utilisation below
 * peak_below) to items. */
int insight_overrequest_items(struct conn *c, const struct store_insight_filter *f,
                              double peak_below, json_t *items);
/* Sorts items by cmp and keeps the first limit of them. */
int insight_sort_limit(json_t *items, int (*cmp)(const void *, const void *), int64_t limit);
/* Runs one item producer on a borrowed connection in one snapshot,
 * stripping the hidden members from the items it made. */
int insight_run_items(struct store *st, json_t **items,
                      int (*fn)(struct conn *c, const void *arg, json_t *items), const void *arg);

#endif
