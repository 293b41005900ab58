/* The lifecycle rules' condition language: store_lrule_check() of a
 * rule's condition and actions, and the evaluation of a condition on one
 * asset and its health days (docs/LIFECYCLE.md). */
#include "store/lifecycle_int.h"
#include "store/store.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_S 86400
#define RULE_MAX_DEPTH 8
#define RULE_MAX_EXPIRE_DAYS 3650

static const char *const metric_names[] = {"xid_days",      "xid_events",    "ecc_uncorrected",
                                           "ecc_corrected", "temp_p95",      "temp_max",
                                           "util_avg",      "remap_failures"};
static const char *const ops[] = {"=", "!=", "<", "<=", ">", ">=", NULL};
static const char *const text_attrs[] = {"kind", "stage",  "model", "datacenter",
                                         "tag",  "serial", NULL};
static const char *const action_types[] = {"stage", "ticket", "webhook", "reserve_spare", NULL};

static int name_index(const char *const *names, size_t n, const char *s)
{
    for (size_t i = 0; s && (n ? i < n : names[i] != NULL); i++)
        if (strcmp(names[i], s) == 0)
            return (int)i;
    return -1;
}

/* The one comparison operator of a leaf; NULL when none or several. */
static const char *leaf_op(const json_t *leaf, const json_t **value, int *count)
{
    const char *found = NULL;

    *count = 0;
    for (int i = 0; ops[i]; i++)
        if (json_object_get(leaf, ops[i])) {
            found = ops[i];
            *value = json_object_get(leaf, ops[i]);
            (*count)++;
        }
    if (json_object_get(leaf, "in")) {
        found = "in";
        *value = json_object_get(leaf, "in");
        (*count)++;
    }
    return *count == 1 ? found : NULL;
}

struct check {
    char *field, *err;
    size_t flen, elen;
};

static bool fault(struct check *k, const char *path, const char *suffix, const char *msg)
{
    snprintf(k->field, k->flen, "%s%s", path, suffix);
    snprintf(k->err, k->elen, "%s", msg);
    return false;
}

static bool check_cond(struct check *k, const json_t *c, const char *path, int depth)
{
    const json_t *list, *v = NULL;
    const char *op, *name;
    char sub[256];
    int n;

    if (!json_is_object(c))
        return fault(k, path, "", "a condition is an object");
    if (depth > RULE_MAX_DEPTH)
        return fault(k, path, "", "conditions nest at most 8 deep");
    if ((list = json_object_get(c, "all")) || (list = json_object_get(c, "any"))) {
        const char *key = json_object_get(c, "all") ? "all" : "any";
        size_t i;
        json_t *e;
        if (json_object_size(c) != 1)
            return fault(k, path, "", "all/any stands alone in its object");
        if (!json_is_array(list) || json_array_size(list) == 0)
            return fault(k, path, key[1] == 'l' ? ".all" : ".any",
                         "must be a non-empty array of conditions");
        json_array_foreach(list, i, e) {
            snprintf(sub, sizeof sub, "%s.%s[%zu]", path, key, i);
            if (!check_cond(k, e, sub, depth + 1))
                return false;
        }
        return true;
    }
    op = leaf_op(c, &v, &n);
    if ((name = json_string_value(json_object_get(c, "metric")))) {
        const json_t *w = json_object_get(c, "window_days"), *d = json_object_get(c, "days");
        const char *known[] = {
            "metric", "window_days", "days", "=", "!=", "<", "<=", ">", ">=", NULL};
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)c, key, val)
            if (name_index(known, 0, key) < 0)
                return fault(k, path, "", "unknown member in a metric condition");
        if (name_index(metric_names, M__COUNT, name) < 0)
            return fault(k, path, ".metric",
                         "metric must be xid_days, xid_events, ecc_uncorrected, ecc_corrected, "
                         "temp_p95, temp_max, util_avg or remap_failures");
        if (!json_is_integer(w) || json_integer_value(w) < 1 ||
            json_integer_value(w) > RULE_MAX_WINDOW)
            return fault(k, path, ".window_days", "window_days must be an integer 1..90");
        if (!op || strcmp(op, "in") == 0)
            return fault(k, path, "", "a metric condition has exactly one of = != < <= > >=");
        if (!json_is_number(v))
            return fault(k, path, "", "the compared value must be a number");
        if (d && (!json_is_integer(d) || json_integer_value(d) < 1 ||
                  json_integer_value(d) > json_integer_value(w)))
            return fault(k, path, ".days", "days must be an integer 1..window_days");
        if (d && strcmp(name, "xid_days") == 0)
            return fault(k, path, ".days", "xid_days already counts days; use xid_events");
        return true;
    }
    if ((name = json_string_value(json_object_get(c, "attr")))) {
        if (json_object_size(c) != 2)
            return fault(k, path, "", "an attribute condition is {attr, operator: value}");
        if (!op)
            return fault(k, path, "",
                         "an attribute condition has exactly one of = != < <= > >= in");
        if (strcmp(name, "warranty_days_left") == 0) {
            if (strcmp(op, "in") == 0 || !json_is_number(v))
                return fault(k, path, "", "warranty_days_left compares with a number");
            return true;
        }
        if (name_index(text_attrs, 0, name) < 0)
            return fault(k, path, ".attr",
                         "attr must be kind, stage, model, datacenter, tag, serial or "
                         "warranty_days_left");
        if (strcmp(op, "in") == 0) {
            size_t i;
            json_t *e;
            if (!json_is_array(v) || json_array_size(v) == 0)
                return fault(k, path, ".in", "in takes a non-empty array of strings");
            json_array_foreach((json_t *)v, i, e)
                if (!json_is_string(e))
                    return fault(k, path, ".in", "in takes a non-empty array of strings");
            return true;
        }
        if (strcmp(op, "=") != 0 && strcmp(op, "!=") != 0)
            return fault(k, path, "", "a text attribute compares with =, != or in");
        if (!json_is_string(v))
            return fault(k, path, "", "the compared value must be a string");
        return true;
    }
    return fault(k, path, "", "a condition is all, any, a metric or an attr condition");
}

bool store_lrule_check(const json_t *condition, const json_t *actions, char *field, size_t flen,
                       char *err, size_t elen)
{
    struct check k = {field, err, flen, elen};
    char path[64];
    size_t i;
    json_t *a;

    if (!check_cond(&k, condition, "condition", 0))
        return false;
    if (!json_is_array(actions) || json_array_size(actions) == 0)
        return fault(&k, "actions", "", "actions must be a non-empty array");
    json_array_foreach((json_t *)actions, i, a) {
        const char *type = json_string_value(json_object_get(a, "type"));
        snprintf(path, sizeof path, "actions[%zu]", i);
        if (!json_is_object(a) || name_index(action_types, 0, type) < 0)
            return fault(&k, path, ".type", "type must be stage, ticket, webhook or reserve_spare");
        if (strcmp(type, "stage") == 0 &&
            !store_asset_stage_valid(json_string_value(json_object_get(a, "to"))))
            return fault(&k, path, ".to", "to must be a lifecycle stage");
        if (json_object_get(a, "title") && !json_is_string(json_object_get(a, "title")))
            return fault(&k, path, ".title", "title must be a string");
        if (json_object_get(a, "reason") && !json_is_string(json_object_get(a, "reason")))
            return fault(&k, path, ".reason", "reason must be a string");
        if (json_object_get(a, "expire_days")) {
            const json_t *d = json_object_get(a, "expire_days");
            if (strcmp(type, "reserve_spare") != 0)
                return fault(&k, path, ".expire_days", "expire_days is for reserve_spare only");
            if (!json_is_integer(d) || json_integer_value(d) < 1 ||
                json_integer_value(d) > RULE_MAX_EXPIRE_DAYS)
                return fault(&k, path, ".expire_days", "expire_days must be an integer 1..3650");
        }
    }
    return true;
}

/* ---- evaluation ---- */

static bool cmp_num(const char *op, double a, double b)
{
    if (strcmp(op, "=") == 0)
        return a == b;
    if (strcmp(op, "!=") == 0)
        return a != b;
    if (strcmp(op, "<") == 0)
        return a < b;
    if (strcmp(op, "<=") == 0)
        return a <= b;
    if (strcmp(op, ">") == 0)
        return a > b;
    return a >= b;
}

int lrule_max_window(const json_t *c)
{
    const json_t *list = json_object_get(c, "all");
    int w = (int)json_integer_value(json_object_get(c, "window_days"));
    size_t i;
    json_t *e;

    if (!list)
        list = json_object_get(c, "any");
    json_array_foreach((json_t *)list, i, e) {
        int x = lrule_max_window(e);
        w = x > w ? x : w;
    }
    return w;
}

bool lrule_eval(const json_t *c, const struct actx *a, int64_t today, json_t *why)
{
    const json_t *list, *v = NULL;
    const char *op, *name;
    size_t i;
    json_t *e;
    int n;

    if ((list = json_object_get(c, "all"))) {
        json_array_foreach((json_t *)list, i, e)
            if (!lrule_eval(e, a, today, why))
                return false;
        return true;
    }
    if ((list = json_object_get(c, "any"))) {
        bool any = false;
        json_array_foreach((json_t *)list, i, e)
            any = lrule_eval(e, a, today, why) || any;
        return any;
    }
    op = leaf_op(c, &v, &n);
    if ((name = json_string_value(json_object_get(c, "metric")))) {
        int m = name_index(metric_names, M__COUNT, name);
        int64_t w = json_integer_value(json_object_get(c, "window_days"));
        const json_t *days = json_object_get(c, "days");
        int64_t from = today - (w - 1) * DAY_S, count = 0, seen = 0;
        double agg = NAN, bound = json_number_value(v);
        bool ok;

        for (size_t r = 0; r < a->nrows; r++) {
            double x = a->rows[r].v[m];
            if (a->rows[r].day < from || a->rows[r].day > today || isnan(x))
                continue;
            seen++;
            if (days) {
                count += cmp_num(op, x, bound);
                continue;
            }
            if (m == M_XID_DAYS)
                agg = (isnan(agg) ? 0 : agg) + (x > 0);
            else if (m == M_TEMP_P95 || m == M_TEMP_MAX)
                agg = isnan(agg) || x > agg ? x : agg;
            else
                agg = (isnan(agg) ? 0 : agg) + x;
        }
        if (m == M_UTIL && !days && seen > 0)
            agg /= (double)seen;
        if (days) {
            ok = count >= json_integer_value(days);
            if (ok)
                json_array_append_new(why,
                                      json_sprintf("%s %s %g on %lld of the last %lld days", name,
                                                   op, bound, (long long)count, (long long)w));
            return ok;
        }
        ok = !isnan(agg) && cmp_num(op, agg, bound);
        if (ok)
            json_array_append_new(why, json_sprintf("%s %g over the last %lld days %s %g", name,
                                                    agg, (long long)w, op, bound));
        return ok;
    }
    name = json_string_value(json_object_get(c, "attr"));
    if (name && strcmp(name, "warranty_days_left") == 0) {
        bool ok = a->has_warranty && cmp_num(op, (double)a->warranty_left, json_number_value(v));
        if (ok)
            json_array_append_new(why, json_sprintf("warranty_days_left %lld %s %g",
                                                    (long long)a->warranty_left, op,
                                                    json_number_value(v)));
        return ok;
    }
    {
        const char *have = !name                             ? ""
                           : strcmp(name, "kind") == 0       ? a->kind
                           : strcmp(name, "stage") == 0      ? a->stage
                           : strcmp(name, "model") == 0      ? a->model
                           : strcmp(name, "datacenter") == 0 ? a->dc
                           : strcmp(name, "tag") == 0        ? a->tag
                                                             : a->serial;
        bool ok = false;
        if (strcmp(op, "in") == 0) {
            json_array_foreach((json_t *)v, i, e)
                ok = ok || strcmp(json_string_value(e), have) == 0;
        } else {
            ok = strcmp(json_string_value(v), have) == 0;
            if (strcmp(op, "!=") == 0)
                ok = !ok;
        }
        return ok; /* attribute matches are not listed among the reasons */
    }
}
