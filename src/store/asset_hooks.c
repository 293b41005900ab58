/* Asset webhook events: a scan, a stage change and a location change of
 * an asset are sent to the webhooks that want them (asset.scanned,
 * asset.stage_changed, asset.location_changed) through the same signed,
 * retried and logged delivery as every other event. The context is the
 * asset as the hooks see it ({tag, kind, serial, model, location, stage,
 * owner_team, warranty}), its GPU's uuid, who did it, and the change
 * itself (the detail of the asset event recorded beside it). */
#include "store/assets_int.h"
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>

static const char *const asset_keys[] = {"tag",        "kind",     "serial",   "model", "stage",
                                         "owner_team", "location", "warranty", "epc",   NULL};

/* Whether any enabled webhook may want an asset event: when none does,
 * the asset's document is not read at all (a rule pass moving hundreds of
 * assets pays nothing for hooks nobody listens to). */
static const char sql_any_hook[] = "SELECT COUNT(*) FROM (SELECT 1 FROM webhooks WHERE enabled = 1 "
                                   "AND (events LIKE '%*%' OR events LIKE '%asset.%') LIMIT 1) x";

int asset_hook_emit(struct conn *c, int64_t asset_id, const char *event, const char *actor,
                    const json_t *change, const char *reason, int64_t at)
{
    json_t *doc = NULL, *asset = NULL, *ctx = NULL;
    struct db_stmt *s = db_prep(c, sql_any_hook);
    const char *tag, *uuid;
    char title[160];
    int64_t any = 0;
    int rc = s ? db_fetch_int(c, s, &any) : GI_INTERNAL;

    if (rc != GI_OK || any == 0)
        goto cleanup;
    if ((rc = asset_doc_get(c, asset_id, &doc)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(asset = json_object()))
        goto cleanup;
    for (int i = 0; asset_keys[i]; i++) {
        json_t *v = json_object_get(doc, asset_keys[i]);
        if (v && !json_is_null(v))
            json_object_set(asset, asset_keys[i], v);
    }
    tag = json_string_value(json_object_get(doc, "tag"));
    snprintf(title, sizeof title, "%s: %s", event, tag ? tag : "asset");
    ctx = json_pack("{s:s, s:s, s:O, s:s, s:O*}", "event", event, "title", title, "asset", asset,
                    "actor", actor ? actor : "", "change", change);
    if (!ctx)
        goto cleanup;
    if (reason && *reason)
        json_object_set_new(ctx, "reason", json_string(reason));
    if ((uuid = json_string_value(json_object_get(doc, "gpu_uuid"))) && *uuid)
        json_object_set_new(ctx, "gpu", json_pack("{s:s}", "uuid", uuid));
    rc = webhook_enqueue(c, event, ctx, 0, at);
cleanup:
    json_decref(doc);
    json_decref(asset);
    json_decref(ctx);
    return rc;
}
