/* Usage insights read from the hourly rollups, and what their files
 * share: insights_patterns.c holds the usage patterns (the hour-of-week
 * heatmap, period-over-period trends), insights_waste.c the inefficiency
 * lists (idle and allocated-idle GPUs, waste by team, top consumers,
 * over-requesting workloads) and the savings drawn from them; this file
 * the filter binding and the row and money helpers both use, declared in
 * insights_int.h. See store.h.
 *
 * Every figure comes from usage_hourly (one row per GPU and hour, with the
 * owner at that hour) and usage_consumers (who held the GPU in that hour).
 * GPU-hours are whole-GPU equivalents (seconds × fraction / 3600), and
 * money is the catalog rate stored with each hour: cost = seconds / 3600 ×
 * fraction × rate_micros. */
#include "store/insights_int.h"
#include "core/status.h"

#include <math.h>
#include <stdio.h>

/* Binds the filters and the range every statement shares (FILTERS, with
 * the scope) and the page bound. */
void insight_bind_filter(struct db_stmt *s, const struct store_insight_filter *f)
{
    db_bind_opt_text(s, ":team", f->team);
    db_bind_opt_text(s, ":env", f->env);
    db_bind_opt_text(s, ":pool", f->pool);
    db_bind_opt_text(s, ":cluster", f->cluster);
    db_bind_opt_text(s, ":cloud", f->cloud);
    db_bind_opt_text(s, ":model", f->model);
    db_bind_int(s, ":dc", f->datacenter_id);
    db_bind_scope(s, &f->scope);
    db_bind_int(s, ":from", f->from);
    db_bind_int(s, ":to", f->to);
    db_bind_int(s, ":limit", f->limit > 0 ? f->limit : 100);
}

/* Whether f filters by nothing but the team (a scope of data centers is
 * a filter: the team sums do not keep the data center). */
bool insight_team_only(const struct store_insight_filter *f)
{
    return (!f->env || !*f->env) && (!f->pool || !*f->pool) && (!f->cluster || !*f->cluster) &&
           (!f->cloud || !*f->cloud) && (!f->model || !*f->model) && f->datacenter_id == 0 &&
           f->scope.n == 0;
}

/* Binds the range split of WHOLE_DAYS / EDGE_HOURS_n. */
struct insight_days insight_days_split(const struct store_insight_filter *f, int64_t split)
{
    const int64_t day = 86400;
    struct insight_days d = {f->from % day ? f->from - f->from % day + day : f->from,
                             f->to - f->to % day, 0, 0};

    if (d.d1 >= d.d2)
        d.d1 = d.d2 = f->to; /* no whole day: every hour from usage_hourly */
    else if (split > d.d1 && split < d.d2 && split % day != 0) {
        d.x1 = split - split % day;
        d.x2 = d.x1 + day;
    }
    return d;
}

void insight_bind_days(struct db_stmt *s, const struct store_insight_filter *f, int64_t split)
{
    struct insight_days d = insight_days_split(f, split);

    insight_bind_filter(s, f);
    db_bind_int(s, ":d1", d.d1);
    db_bind_int(s, ":d2", d.d2);
    db_bind_int(s, ":x1", d.x1);
    db_bind_int(s, ":x2", d.x2);
}

/* A figure rounded to 6 decimals, so sums of floating seconds read as the
 * hours they are (10 rather than 9.999999999998). */
static double round6(double x) { return round(x * 1e6) / 1e6; }

/* A figure as JSON, rounded (round6). */
json_t *insight_num(double x) { return json_real(round6(x)); }

/* A nullable real column; NAN when NULL. */
double insight_col_opt(struct db_stmt *s, int i)
{
    return db_col_is_null(s, i) ? NAN : db_col_dbl(s, i);
}

/* A nullable text column as JSON (null for NULL). */
json_t *insight_col_text_json(struct db_stmt *s, int i)
{
    const char *t = db_col_text(s, i);
    return t ? json_string(t) : json_null();
}

/* Micro-units as a decimal string with 2 decimals ("1234.50"). */
void insight_money_text(double micros, char *buf, size_t len)
{
    long long cents = llround(micros / 1e4);
    const char *sign = cents < 0 ? "-" : "";

    if (cents < 0)
        cents = -cents;
    snprintf(buf, len, "%s%lld.%02lld", sign, cents / 100, cents % 100);
}

/* Micro-units as a JSON decimal string; null for NAN (no rate). */
json_t *insight_money_json(double micros)
{
    char buf[40];

    if (isnan(micros))
        return json_null();
    insight_money_text(micros, buf, sizeof buf);
    return json_string(buf);
}

/* Appends o to items (stealing it); false when o is NULL (out of memory). */
bool insight_append(json_t *items, json_t *o)
{
    return o != NULL && json_array_append_new(items, o) == 0;
}

/* Runs a statement whose every row becomes one item by `row`. */
int insight_collect_rows(struct conn *c, struct db_stmt *s, json_t *(*row)(struct db_stmt *s),
                         json_t *items)
{
    int step, rc = GI_OK;

    while ((step = db_step(c, s)) == DB_ROW) {
        if (!insight_append(items, row(s))) {
            rc = GI_INTERNAL;
            break;
        }
    }
    if (rc == GI_OK)
        rc = db_status(step);
    db_reset(s);
    return rc;
}
