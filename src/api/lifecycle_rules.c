/* Lifecycle rules: read by viewers, written, dry-run and run by editors;
 * and an asset's health. The rule language is checked by the store
 * (store_lrule_check) so the API and the job agree on it. */
#include "api/api.h"
#include "api/scope.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

static const char *const rule_fields[] = {"name", "enabled", "condition", "actions", NULL};

/* The body's rule into *out; on update (old non-NULL) missing members keep
 * the old values for the check. */
static bool rule_body_or_reply(struct req *r, const json_t *body, const json_t *old, bool need_name,
                               struct store_lrule *out)
{
    const json_t *en = json_object_get(body, "enabled");
    const json_t *cond = json_object_get(body, "condition");
    const json_t *act = json_object_get(body, "actions");
    char field[256], err[256];

    memset(out, 0, sizeof *out);
    out->enabled = -1;
    if (!json_known_or_reply(r, body, rule_fields) ||
        !json_str_or_reply(r, body, "name", need_name, 255, &out->name))
        return false;
    if (out->name && !*out->name) {
        reply_error(r, 400, "validation_failed", "name", "name must not be empty");
        return false;
    }
    if (en && !json_is_boolean(en)) {
        reply_error(r, 400, "validation_failed", "enabled", "enabled must be true or false");
        return false;
    }
    if (en)
        out->enabled = json_is_true(en) ? 1 : 0;
    if (!old && (!cond || !act)) {
        reply_error(r, 400, "validation_failed", cond ? "actions" : "condition",
                    "a rule has a condition and actions");
        return false;
    }
    if (!store_lrule_check(cond ? cond : json_object_get(old, "condition"),
                           act ? act : json_object_get(old, "actions"), field, sizeof field, err,
                           sizeof err)) {
        reply_error(r, 400, "validation_failed", field, "%s: %s", field, err);
        return false;
    }
    out->condition = (json_t *)cond;
    out->actions = (json_t *)act;
    return true;
}

void api_lrules_list(struct req *r)
{
    json_t *items = NULL;
    int st = store_lrule_list(r->store, &items);

    if (st != GI_OK)
        reply_status(r, st, "lifecycle rules");
    else
        reply_list(r, items, (int64_t)json_array_size(items), 0);
}

void api_lrules_get(struct req *r)
{
    json_t *out = NULL;
    int st = store_lrule_get(r->store, r->id, &out);

    if (st != GI_OK)
        reply_status(r, st, "lifecycle rule");
    else
        reply_json(r, 200, out);
}

/* Lifecycle rules are fleet-wide: a rule runs on its schedule with no
 * token, over every asset, so a rule a confined token wrote would act on
 * other data centers at its next run. Creating, changing, deleting,
 * running and dry-running rules is refused for a confined token (403);
 * reading the rules themselves, which name no asset, is not. */
static bool unconfined_or_reply(struct req *r)
{
    return who_unconfined_or_reply(r, "a lifecycle rule");
}

void api_lrules_create(struct req *r)
{
    struct store_lrule rule;
    json_t *body = NULL, *out = NULL;
    int st;

    if (!unconfined_or_reply(r) || !req_json_body_or_reply(r, &body))
        return;
    if (!rule_body_or_reply(r, body, NULL, true, &rule))
        goto cleanup;
    st = store_lrule_create(r->store, r->who.name, &rule, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "name", "a rule named '%s' already exists", rule.name);
    else if (st != GI_OK)
        reply_status(r, st, "lifecycle rule");
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(body);
}

void api_lrules_update(struct req *r)
{
    struct store_lrule rule;
    json_t *body = NULL, *old = NULL, *out = NULL;
    int st;

    if (!unconfined_or_reply(r) || !req_json_body_or_reply(r, &body))
        return;
    if ((st = store_lrule_get(r->store, r->id, &old)) != GI_OK) {
        reply_status(r, st, "lifecycle rule");
        goto cleanup;
    }
    if (!rule_body_or_reply(r, body, old, false, &rule))
        goto cleanup;
    st = store_lrule_update(r->store, r->who.name, r->id, &rule, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "name", "a rule named '%s' already exists", rule.name);
    else if (st != GI_OK)
        reply_status(r, st, "lifecycle rule");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(old);
    json_decref(body);
}

void api_lrules_delete(struct req *r)
{
    int st;

    if (!unconfined_or_reply(r))
        return;
    st = store_lrule_delete(r->store, r->who.name, r->id);
    if (st != GI_OK)
        reply_status(r, st, "lifecycle rule");
    else
        reply_no_content(r);
}

/* POST /lifecycle-rules/{id}/dry-run and /lifecycle-rules/{id}/run. */
static void evaluate_saved(struct req *r, bool dry)
{
    json_t *out = NULL;
    int st;

    if (!unconfined_or_reply(r))
        return;
    st = store_lrule_evaluate(r->store, r->id, NULL, dry, r->who.name, gi_now(), &out);
    if (st != GI_OK)
        reply_status(r, st, "lifecycle rule");
    else
        reply_json(r, 200, out);
}

void api_lrules_dry_run(struct req *r) { evaluate_saved(r, true); }
void api_lrules_run(struct req *r) { evaluate_saved(r, false); }

/* POST /lifecycle-rules/dry-run with an unsaved rule. */
void api_lrules_dry_run_body(struct req *r)
{
    struct store_lrule rule;
    json_t *body = NULL, *out = NULL;
    int st;

    if (!unconfined_or_reply(r) || !req_json_body_or_reply(r, &body))
        return;
    if (!rule_body_or_reply(r, body, NULL, false, &rule))
        goto cleanup;
    st = store_lrule_evaluate(r->store, 0, body, true, r->who.name, gi_now(), &out);
    if (st != GI_OK)
        reply_status(r, st, "lifecycle rule");
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
}

/* POST /lifecycle-rules/evaluate {ids?: [id, ...], dry_run?: bool}: the
 * rules named (else every enabled one) in one pass; a dry run unless
 * dry_run is false. */
void api_lrules_evaluate(struct req *r)
{
    static const char *const fields[] = {"ids", "dry_run", NULL};
    json_t *body = NULL, *out = NULL, *list, *dry, *v;
    int64_t *ids = NULL;
    size_t i, n = 0;
    int st;

    if (!unconfined_or_reply(r) || !req_json_body_or_reply(r, &body) ||
        !json_known_or_reply(r, body, fields))
        goto cleanup;
    list = json_object_get(body, "ids");
    dry = json_object_get(body, "dry_run");
    if (dry && !json_is_boolean(dry)) {
        reply_error(r, 400, "validation_failed", "dry_run", "dry_run must be true or false");
        goto cleanup;
    }
    if (list &&
        (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > 1000)) {
        reply_error(r, 400, "validation_failed", "ids",
                    "ids must be an array of 1 to 1000 rule ids");
        goto cleanup;
    }
    if (list && !(ids = calloc(json_array_size(list), sizeof *ids))) {
        reply_status(r, GI_INTERNAL, "lifecycle rules");
        goto cleanup;
    }
    json_array_foreach(list, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 1) {
            reply_error(r, 400, "validation_failed", "ids", "ids[%zu] must be a rule id", i);
            goto cleanup;
        }
        ids[n++] = json_integer_value(v);
    }
    st = store_lrules_evaluate(r->store, ids, n, !dry || json_is_true(dry), r->who.name, gi_now(),
                               &out);
    if (st != GI_OK)
        reply_status(r, st, "lifecycle rule");
    else
        reply_json(r, 200, out);
cleanup:
    free(ids);
    json_decref(body);
}

void api_assets_health(struct req *r)
{
    json_t *out = NULL;
    int64_t id = 0;
    int st;

    if (!who_may_see_or_reply(r, WHO_ASSET, r->key, 0))
        return;
    st = store_asset_id(r->store, r->key, &id);

    if (st == GI_OK)
        st = store_asset_health(r->store, id, gi_now(), &out);
    if (st != GI_OK)
        reply_status(r, st, "asset");
    else
        reply_json(r, 200, out);
}
