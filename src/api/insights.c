/* Usage patterns, inefficiencies and savings, read from the hourly
 * rollups: GET /api/v1/usage/heatmap, /api/v1/usage/trend and
 * /api/v1/insights/{idle,allocated-idle,waste-by-team,top-consumers,
 * overrequest,savings}. Every route takes the filters of /api/v1/usage
 * (team, env, pool, cluster, cloud, datacenter, model, from, to) and
 * answers {"items","total","next":null,"from","to",...} or, with
 * ?format=csv, the same items flattened to one row each (nested members
 * as parent_child columns, lists joined by spaces). */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY 86400
/* The default range: the 30 days up to now (the heatmap: 4 whole weeks,
 * so every hour of the week is counted as often). */
#define DEFAULT_RANGE (30 * DAY)
#define HEATMAP_RANGE (28 * DAY)
/* The longest range one request may read: the daily retention. */
#define MAX_RANGE (5 * 366 * (int64_t)DAY)
/* Near-zero utilization for over-requesting workloads, in %. */
#define PEAK_BELOW 5.0
/* How long a GPU must have been idle to be a saving by default. */
#define SAVINGS_IDLE_HOURS 24

/* An optional RFC 3339 (or unix seconds) query parameter; 400 naming it. */
static bool time_param_or_reply(struct req *r, const char *name, int64_t *out, bool *given)
{
    const char *v = req_param(r, name);

    *given = false;
    if (v == NULL || *v == '\0')
        return true;
    if (gi_time_parse(v, out) != GI_OK) {
        reply_error(r, 400, "invalid_parameter", name,
                    "query parameter %s must be an RFC 3339 time or unix seconds", name);
        return false;
    }
    *given = true;
    return true;
}

/* The filters every insight takes. As for /api/v1/usage, the range
 * holds every hour that overlaps [from, to): from is rounded down to its
 * hour, and both default to the `range` seconds up to the end of the
 * current hour. */
static bool filter_or_reply(struct req *r, struct store_insight_filter *f, int64_t range)
{
    bool csv = req_wants_csv(r), has_from, has_to;
    int64_t now = gi_now();
    const char *dc = NULL;
    char dc_name[256];
    int st;

    memset(f, 0, sizeof *f);
    f->limit = csv ? 100000 : 100;
    f->to = now - now % 3600 + 3600;
    if (!req_param_str_or_reply(r, "team", 128, &f->team) ||
        !req_param_str_or_reply(r, "env", 128, &f->env) ||
        !req_param_str_or_reply(r, "pool", 128, &f->pool) ||
        !req_param_str_or_reply(r, "cluster", 128, &f->cluster) ||
        !req_param_str_or_reply(r, "cloud", 128, &f->cloud) ||
        !req_param_str_or_reply(r, "model", 96, &f->model) ||
        !req_param_str_or_reply(r, "datacenter", 128, &dc) ||
        !time_param_or_reply(r, "from", &f->from, &has_from) ||
        !time_param_or_reply(r, "to", &f->to, &has_to) ||
        !who_dc_name_scope_or_reply(r, &dc, dc_name, sizeof dc_name, &f->scope))
        return false;
    /* A data center by name, as /api/v1/usage takes it (or by id); one
     * that does not exist matches nothing. A token of several data
     * centers that names none reads them all (f->scope). */
    if (dc && (st = store_dc_id_by_name(r->store, dc, &f->datacenter_id)) != GI_OK) {
        if (st != GI_NOT_FOUND) {
            reply_status(r, st, "data center");
            return false;
        }
        if (gi_parse_int64(dc, 1, INT64_MAX, &f->datacenter_id) != GI_OK)
            f->datacenter_id = -1;
    }
    if (!has_from)
        f->from = f->to - range;
    f->from -= f->from % 3600;
    if (f->from >= f->to) {
        reply_error(r, 400, "invalid_parameter", "from", "from must be before to");
        return false;
    }
    if (f->to - f->from > MAX_RANGE) {
        reply_error(r, 400, "invalid_parameter", "from", "the range may span at most 5 years");
        return false;
    }
    return true;
}

/* The optional `limit` of a route that lists items. */
static bool limit_or_reply(struct req *r, struct store_insight_filter *f)
{
    return req_param_int_or_reply(r, "limit", 1, req_wants_csv(r) ? 100000 : 1000, &f->limit);
}

/* A store failure as its reply: a result too large to gather (too many
 * workload GPUs in the range) is the range's fault. */
static void reply_insight_status(struct req *r, int st, const char *what)
{
    if (st == GI_TOO_LARGE) {
        reply_error(r, 400, "range_too_large", "from",
                    "the range holds too many rows for %s: narrow it or add a filter", what);
        return;
    }
    reply_status(r, st, what);
}

/* An optional percentage parameter in [0, 100]. */
static bool pct_param_or_reply(struct req *r, const char *name, double *out)
{
    const char *v = req_param(r, name);

    if (v == NULL || *v == '\0')
        return true;
    if (gi_parse_double(v, 0, 100, out) != GI_OK) {
        reply_error(r, 400, "invalid_parameter", name,
                    "query parameter %s must be a number from 0 to 100", name);
        return false;
    }
    return true;
}

/* Copies obj's members into row, nested objects as prefix_member and
 * lists as their members joined by spaces. */
static void flatten_into(json_t *row, const char *prefix, const json_t *obj)
{
    const char *k;
    json_t *v;

    json_object_foreach((json_t *)obj, k, v) {
        char name[256];

        if (prefix)
            snprintf(name, sizeof name, "%s_%s", prefix, k);
        else
            snprintf(name, sizeof name, "%s", k);
        if (json_is_object(v)) {
            flatten_into(row, name, v);
        } else if (json_is_array(v)) {
            size_t i, len = 0, at = 0;
            json_t *e;
            char *joined = NULL;
            json_array_foreach(v, i, e)
                len += (json_is_string(e) ? json_string_length(e) : 32) + 1;
            if ((joined = calloc(1, len + 1)) == NULL)
                continue;
            json_array_foreach(v, i, e) {
                char num[32] = "";
                const char *t = json_is_string(e) ? json_string_value(e) : num;
                size_t tl;
                if (json_is_integer(e))
                    snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(e));
                tl = strlen(t);
                if (i && at < len)
                    joined[at++] = ' ';
                if (at + tl > len)
                    tl = len - at;
                memcpy(joined + at, t, tl);
                at += tl;
            }
            json_object_set_new(row, name, json_string(joined));
            free(joined);
        } else {
            json_object_set(row, name, v);
        }
    }
}

/* The reply of every insight route: the items (stolen) with the range
 * and the members of `extra` (stolen, may be NULL), or CSV of the items
 * flattened. */
static void reply_items(struct req *r, const struct store_insight_filter *f, json_t *items,
                        json_t *extra)
{
    json_t *body;
    char from[32], to[32];

    if (req_wants_csv(r)) {
        json_t *rows = json_array();
        size_t i;
        json_t *o;
        json_array_foreach(items, i, o) {
            json_t *row = json_object();
            flatten_into(row, NULL, o);
            json_array_append_new(rows, row);
        }
        json_decref(items);
        json_decref(extra);
        reply_list(r, rows, (int64_t)json_array_size(rows), 0);
        return;
    }
    gi_time_format(f->from, from, sizeof from);
    gi_time_format(f->to, to, sizeof to);
    body = json_pack("{s:o, s:I, s:n, s:s, s:s}", "items", items, "total",
                     (json_int_t)json_array_size(items), "next", "from", from, "to", to);
    if (body && extra)
        json_object_update(body, extra);
    json_decref(extra);
    reply_json(r, 200, body);
}

/* `tz`: a UTC offset, "+05:30", "-08:00", "+02", "Z" or "UTC". */
static bool tz_or_reply(struct req *r, int64_t *tz_s)
{
    const char *v = req_param(r, "tz");
    int64_t h = 0, m = 0;
    char hh[3] = "", mm[3] = "";
    size_t n;

    *tz_s = 0;
    if (v == NULL || *v == '\0' || strcmp(v, "Z") == 0 || strcmp(v, "UTC") == 0)
        return true;
    n = strlen(v);
    if ((v[0] == '+' || v[0] == '-') && (n == 3 || (n == 6 && v[3] == ':'))) {
        memcpy(hh, v + 1, 2);
        if (n == 6)
            memcpy(mm, v + 4, 2);
        if (gi_parse_int64(hh, 0, 14, &h) == GI_OK &&
            (n == 3 || gi_parse_int64(mm, 0, 59, &m) == GI_OK)) {
            *tz_s = (v[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
            return true;
        }
    }
    reply_error(r, 400, "invalid_parameter", "tz",
                "tz must be a UTC offset such as +02:00, -05:30 or Z");
    return false;
}

void api_usage_heatmap(struct req *r)
{
    struct store_insight_filter f;
    const char *metric = NULL, *tz = NULL;
    json_t *items = NULL;
    int64_t tz_s = 0;
    int st;

    if (!filter_or_reply(r, &f, HEATMAP_RANGE) ||
        !req_param_str_or_reply(r, "metric", 16, &metric) || !tz_or_reply(r, &tz_s))
        return;
    if (metric && strcmp(metric, "util") != 0 && strcmp(metric, "allocation") != 0) {
        reply_error(r, 400, "invalid_parameter", "metric", "metric must be util or allocation");
        return;
    }
    if ((st = store_usage_heatmap(r->store, &f, tz_s, metric && metric[0] == 'a', &items)) !=
        GI_OK) {
        reply_status(r, st, "heatmap");
        return;
    }
    tz = req_param(r, "tz");
    reply_items(
        r, &f, items,
        json_pack("{s:s, s:s}", "metric", metric ? metric : "util", "tz", tz && *tz ? tz : "Z"));
}

void api_usage_trend(struct req *r)
{
    struct store_insight_filter f;
    const char *period = NULL, *group = NULL;
    json_t *items = NULL;
    char b[4][32];
    int64_t len, cur_from;
    bool has_from = req_param(r, "from") && *req_param(r, "from");
    int st;

    if (!req_param_str_or_reply(r, "period", 16, &period) ||
        !req_param_str_or_reply(r, "group_by", 16, &group))
        return;
    if (period && strcmp(period, "week") != 0 && strcmp(period, "month") != 0) {
        reply_error(r, 400, "invalid_parameter", "period", "period must be week or month");
        return;
    }
    if (!group)
        group = "team";
    if (!store_insight_group_valid(group)) {
        reply_error(r, 400, "invalid_parameter", "group_by",
                    "group_by must be team, env, pool, cluster, cloud, model, datacenter, host "
                    "or gpu");
        return;
    }
    len = period && strcmp(period, "month") == 0 ? 30 * DAY : 7 * DAY;
    if (!filter_or_reply(r, &f, len) || !limit_or_reply(r, &f))
        return;
    /* The current period is [from, to); the previous one as long, just
     * before it. */
    if (has_from)
        len = f.to - f.from;
    cur_from = f.from;
    f.from = cur_from - len;
    if ((st = store_usage_trend(r->store, &f, group, cur_from, &items)) != GI_OK) {
        reply_status(r, st, "trend");
        return;
    }
    gi_time_format(cur_from, b[0], sizeof b[0]);
    gi_time_format(f.to, b[1], sizeof b[1]);
    gi_time_format(f.from, b[2], sizeof b[2]);
    gi_time_format(cur_from, b[3], sizeof b[3]);
    reply_items(r, &f, items,
                json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s}}", "period",
                          period ? period : "week", "group_by", group, "current", "from", b[0],
                          "to", b[1], "previous", "from", b[2], "to", b[3]));
}

void api_insights_idle(struct req *r)
{
    struct store_insight_filter f;
    int64_t min_hours = 1;
    json_t *items = NULL;
    int st;

    if (!filter_or_reply(r, &f, DEFAULT_RANGE) || !limit_or_reply(r, &f) ||
        !req_param_int_or_reply(r, "min_hours", 1, 24 * 366 * 5, &min_hours))
        return;
    if ((st = store_insight_idle(r->store, &f, min_hours, &items)) != GI_OK) {
        reply_status(r, st, "idle GPUs");
        return;
    }
    reply_items(r, &f, items, json_pack("{s:I}", "min_hours", (json_int_t)min_hours));
}

void api_insights_alloc_idle(struct req *r)
{
    struct store_insight_filter f;
    json_t *items = NULL;
    int st;

    if (!filter_or_reply(r, &f, DEFAULT_RANGE) || !limit_or_reply(r, &f))
        return;
    if ((st = store_insight_alloc_idle(r->store, &f, &items)) != GI_OK) {
        reply_status(r, st, "allocated-idle GPUs");
        return;
    }
    reply_items(r, &f, items, NULL);
}

void api_insights_waste_by_team(struct req *r)
{
    struct store_insight_filter f;
    json_t *items = NULL;
    int st;

    if (!filter_or_reply(r, &f, DEFAULT_RANGE) || !limit_or_reply(r, &f))
        return;
    if ((st = store_insight_waste_by_team(r->store, &f, &items)) != GI_OK) {
        reply_status(r, st, "waste by team");
        return;
    }
    reply_items(r, &f, items, NULL);
}

void api_insights_top_consumers(struct req *r)
{
    struct store_insight_filter f;
    json_t *items = NULL;
    int st;

    if (!filter_or_reply(r, &f, DEFAULT_RANGE) || !limit_or_reply(r, &f))
        return;
    if ((st = store_insight_top_consumers(r->store, &f, &items)) != GI_OK) {
        reply_status(r, st, "top consumers");
        return;
    }
    reply_items(r, &f, items, NULL);
}

void api_insights_overrequest(struct req *r)
{
    struct store_insight_filter f;
    double peak = PEAK_BELOW;
    json_t *items = NULL;
    int st;

    if (!filter_or_reply(r, &f, DEFAULT_RANGE) || !limit_or_reply(r, &f) ||
        !pct_param_or_reply(r, "peak_below", &peak))
        return;
    if ((st = store_insight_overrequest(r->store, &f, peak, &items)) != GI_OK) {
        reply_insight_status(r, st, "over-requesting workloads");
        return;
    }
    reply_items(r, &f, items, json_pack("{s:f}", "peak_below", peak));
}

void api_insights_savings(struct req *r)
{
    struct store_insight_filter f;
    double peak = PEAK_BELOW;
    int64_t min_hours = SAVINGS_IDLE_HOURS;
    json_t *items = NULL;
    int st;

    if (!filter_or_reply(r, &f, DEFAULT_RANGE) || !limit_or_reply(r, &f) ||
        !pct_param_or_reply(r, "peak_below", &peak) ||
        !req_param_int_or_reply(r, "min_hours", 1, 24 * 366 * 5, &min_hours))
        return;
    if ((st = store_insight_savings(r->store, &f, min_hours, peak, &items)) != GI_OK) {
        reply_insight_status(r, st, "savings");
        return;
    }
    reply_items(r, &f, items,
                json_pack("{s:I, s:f, s:s}", "min_hours", (json_int_t)min_hours, "peak_below", peak,
                          "method", "catalog"));
}
