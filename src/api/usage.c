/* Usage over time: GPU-hours by group and step with their cost
 * (GET /api/v1/usage, JSON or CSV), one GPU's timeline
 * (GET /api/v1/gpus/{uuid}/timeline) and running the rollup job on demand
 * (POST /api/v1/usage/rollup). */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <string.h>

/* Bounds of one report: steps in the range, and groups. */
#define MAX_STEPS 5000
#define MAX_GROUPS 1000
/* Paging of the host, GPU and consumer groupings. */
#define PAGE_DEFAULT 100
#define PAGE_MAX 1000
/* The longest range a report or a timeline covers. */
#define MAX_RANGE_S (INT64_C(3660) * 86400)
#define DEFAULT_RANGE_S (7 * 86400)
/* Chunks one rollup on demand may take (each CHUNK_GPUS GPU-hours). */
#define ROLLUP_CHUNKS 1000

static const char *const group_bys[] = {"team",       "env",  "pool", "cluster",  "cloud", "model",
                                        "datacenter", "host", "gpu",  "consumer", NULL};
static const char *const filters[] = {"team",  "env",        "pool",  "cluster",
                                      "cloud", "datacenter", "model", NULL};

/* from/to query parameters (RFC 3339 or unix seconds); the defaults end
 * at `def_to` and span DEFAULT_RANGE_S. */
static bool range_or_reply(struct req *r, int64_t def_to, int64_t *from, int64_t *to)
{
    const char *f = req_param(r, "from"), *t = req_param(r, "to");

    *to = def_to;
    if (t && gi_time_parse(t, to) != GI_OK) {
        reply_error(r, 400, "invalid_parameter", "to", "to must be an RFC 3339 time");
        return false;
    }
    *from = *to - DEFAULT_RANGE_S;
    if (f && gi_time_parse(f, from) != GI_OK) {
        reply_error(r, 400, "invalid_parameter", "from", "from must be an RFC 3339 time");
        return false;
    }
    if (*to <= *from) {
        reply_error(r, 400, "invalid_parameter", "to", "to must be after from");
        return false;
    }
    if (*to - *from > MAX_RANGE_S) {
        reply_error(r, 400, "invalid_parameter", "from", "the range may span at most 3660 days");
        return false;
    }
    return true;
}

static bool one_of(const char *v, const char *const *set)
{
    for (size_t i = 0; set[i]; i++)
        if (strcmp(v, set[i]) == 0)
            return true;
    return false;
}

static bool step_or_reply(struct req *r, enum store_usage_step *step)
{
    static const char *const names[] = {"hour", "day", "week", "month", NULL};
    const char *v = req_param(r, "step");

    *step = USAGE_STEP_DAY;
    if (!v)
        return true;
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) {
            *step = (enum store_usage_step)i;
            return true;
        }
    reply_error(r, 400, "invalid_parameter", "step", "step must be hour, day, week or month");
    return false;
}

/* limit and offset of the host, GPU and consumer groupings (others take
 * neither). JSON is paged by default; CSV answers every group unless
 * limit is given. */
static bool page_or_reply(struct req *r, struct store_usage_query *q)
{
    bool pageable = strcmp(q->group_by, "host") == 0 || strcmp(q->group_by, "gpu") == 0 ||
                    strcmp(q->group_by, "consumer") == 0;

    if (!pageable) {
        if (req_param(r, "limit") || req_param(r, "offset")) {
            reply_error(r, 400, "invalid_parameter", req_param(r, "limit") ? "limit" : "offset",
                        "limit and offset page group_by=host, gpu or consumer only");
            return false;
        }
        return true;
    }
    q->limit = req_wants_csv(r) && !req_param(r, "limit") ? 0 : PAGE_DEFAULT;
    if (!req_param_int_or_reply(r, "limit", 1, PAGE_MAX, &q->limit) ||
        !req_param_int_or_reply(r, "offset", 0, INT64_C(1000000000), &q->offset))
        return false;
    if (q->limit == 0) /* every group, bounded by the store's row bound */
        q->max_groups = 0;
    return true;
}

void api_usage_get(struct req *r)
{
    struct store_usage_query q = {.group_by = "team", .max_groups = MAX_GROUPS};
    const char **slot[] = {&q.team, &q.env, &q.pool, &q.cluster, &q.cloud, &q.datacenter, &q.model};
    const char *g = req_param(r, "group_by");
    char dc_name[256];
    int64_t now = gi_now(), span;
    char *text = NULL;
    size_t i, len = 0;
    int st;

    if (g && !one_of(g, group_bys)) {
        reply_error(r, 400, "invalid_parameter", "group_by",
                    "group_by must be one of team, env, pool, cluster, cloud, model, datacenter, "
                    "host, gpu, consumer");
        return;
    }
    if (g)
        q.group_by = g;
    if (!step_or_reply(r, &q.step) || !range_or_reply(r, now - now % 3600 + 3600, &q.from, &q.to) ||
        !page_or_reply(r, &q))
        return;
    for (i = 0; filters[i]; i++) {
        if (!req_param_str_or_reply(r, filters[i], 128, slot[i]))
            return;
        if (*slot[i] && !**slot[i])
            *slot[i] = NULL;
    }
    if (!who_dc_name_scope_or_reply(r, &q.datacenter, dc_name, sizeof dc_name, &q.scope))
        return;
    /* Whole hours: the rollups' grain. */
    q.from -= q.from % 3600;
    if (q.to % 3600)
        q.to += 3600 - q.to % 3600;
    span = q.step == USAGE_STEP_HOUR   ? 3600
           : q.step == USAGE_STEP_DAY  ? 86400
           : q.step == USAGE_STEP_WEEK ? 7 * 86400
                                       : 28 * 86400;
    if ((q.to - q.from) / span > MAX_STEPS) {
        reply_error(r, 400, "invalid_parameter", "step",
                    "at most %d steps: choose a longer step or a shorter range", MAX_STEPS);
        return;
    }
    st = store_usage_report_text(r->store, &q, req_wants_csv(r), &text, &len);
    if (st == GI_TOO_LARGE) {
        reply_error(r, 400, "invalid_parameter", "group_by",
                    "more than %d groups or too many rows: add a filter or a coarser grouping",
                    MAX_GROUPS);
        return;
    }
    if (st != GI_OK) {
        reply_status(r, st, "usage");
        return;
    }
    if (req_wants_csv(r))
        reply_csv_text(r, text, len);
    else
        reply_json_text(r, 200, text, len);
}

void api_usage_rollup(struct req *r)
{
    struct store_usage_run res;
    int st = store_usage_rollup(r->store, r->who.name, gi_now(), ROLLUP_CHUNKS, &res);

    if (st != GI_OK) {
        reply_status(r, st, "usage rollup");
        return;
    }
    reply_json(r, 200,
               json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "hours", (json_int_t)res.hours,
                         "chunks", (json_int_t)res.chunks, "redone", (json_int_t)res.redone,
                         "pruned", (json_int_t)res.pruned, "dirty_left", (json_int_t)res.dirty_left,
                         "groups_left", (json_int_t)res.groups_left, "redo_left",
                         (json_int_t)res.redo_left));
}

void api_gpu_timeline(struct req *r)
{
    int64_t from, to, now = gi_now();
    json_t *out = NULL;
    int st;

    if (!range_or_reply(r, now, &from, &to) || !who_may_see_or_reply(r, WHO_GPU, r->key, 0))
        return;
    if ((st = store_gpu_timeline(r->store, r->key, from, to, &out)) != GI_OK)
        reply_status(r, st, "GPU");
    else
        reply_json(r, 200, out);
}
