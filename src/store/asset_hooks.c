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

static const char *const asset_keys[] = {"tag",   "kind",       "serial",   "model",
                                         "stage", "owner_team", "location", "warranty",
                                         "epc",   NULL};

int asset_hook_emit(struct conn *c, int64_t asset_id, const char *event, const char *actor,
                    const json_t *change, const char *reason, int64_t at)
{
    json_t *doc = NULL, *asset = NULL, *ctx = NULL;
    const char *tag, *uuid;
    char title[160];
    int rc = asset_doc_get(c, asset_id, &doc);

    if (rc != GI_OK)
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
