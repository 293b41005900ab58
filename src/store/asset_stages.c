/* Lifecycle stages of an asset and the transitions between them:
 *
 *   ordered -> received | decommissioned
 *   received -> active | spare | diagnostic_repair
 *   active -> spare | diagnostic_repair | refurbishment_candidate | decommissioned
 *   spare -> active | diagnostic_repair | refurbishment_candidate | decommissioned
 *   diagnostic_repair -> active | spare | refurbishment_candidate | decommissioned
 *   refurbishment_candidate -> active | spare | diagnostic_repair | decommissioned
 *   decommissioned -> (none)
 *
 * An override (which the API lets only an admin ask for) allows any move
 * to another stage, decommissioned's included, and needs a reason. Every
 * move is an event "stage" {from, to, reason, override} on the asset, and
 * ends the spare reservations it makes pointless (reservations.c). */
#include "store/assets_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>

struct stage_moves {
    const char *from;
    const char *const to[5];
};

static const struct stage_moves moves[] = {
    {"ordered", {"received", "decommissioned", NULL}},
    {"received", {"active", "spare", "diagnostic_repair", NULL}},
    {"active", {"spare", "diagnostic_repair", "refurbishment_candidate", "decommissioned", NULL}},
    {"spare", {"active", "diagnostic_repair", "refurbishment_candidate", "decommissioned", NULL}},
    {"diagnostic_repair", {"active", "spare", "refurbishment_candidate", "decommissioned", NULL}},
    {"refurbishment_candidate", {"active", "spare", "diagnostic_repair", "decommissioned", NULL}},
    {"decommissioned", {NULL}},
};

static const char *const none[] = {NULL};

bool store_asset_stage_valid(const char *s)
{
    for (size_t i = 0; s && i < sizeof moves / sizeof moves[0]; i++)
        if (strcmp(moves[i].from, s) == 0)
            return true;
    return false;
}

const char *const *store_asset_stage_next(const char *from)
{
    for (size_t i = 0; from && i < sizeof moves / sizeof moves[0]; i++)
        if (strcmp(moves[i].from, from) == 0)
            return moves[i].to;
    return none;
}

static bool move_allowed(const char *from, const char *to)
{
    for (const char *const *t = store_asset_stage_next(from); *t; t++)
        if (strcmp(*t, to) == 0)
            return true;
    return false;
}

static const char sql_stage_get[] = "SELECT stage FROM assets WHERE id = :id";
static const char sql_stage_set[] =
    "UPDATE assets SET stage = :stage, stage_since = :at, updated_at = :at WHERE id = :id";

int asset_stage_of(struct conn *c, int64_t asset_id, char *buf, size_t len)
{
    struct db_stmt *s = db_prep(c, sql_stage_get);
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", asset_id);
    step = db_step(c, s);
    if (step == DB_ROW)
        gi_strlcpy(buf, db_col_text(s, 0) ? db_col_text(s, 0) : "", len);
    db_reset(s);
    return step == DB_ROW ? GI_OK : step == DB_DONE ? GI_NOT_FOUND : db_status(step);
}

int asset_stage_change(struct conn *c, int64_t asset_id, const char *to, const char *reason,
                       const char *actor, bool override, int64_t at, char *err, size_t errlen)
{
    struct db_stmt *s = db_prep(c, sql_stage_get);
    char from[32] = "";
    json_t *detail = NULL;
    int rc, step;

    if (err && errlen)
        err[0] = '\0';
    if (!store_asset_stage_valid(to)) {
        if (err)
            snprintf(err, errlen, "unknown stage '%s'", to ? to : "");
        return GI_INVALID;
    }
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", asset_id);
    step = db_step(c, s);
    if (step == DB_ROW)
        gi_strlcpy(from, db_col_text(s, 0) ? db_col_text(s, 0) : "", sizeof from);
    db_reset(s);
    if (step != DB_ROW)
        return step == DB_DONE ? GI_NOT_FOUND : db_status(step);
    if (override && (!reason || !*reason)) {
        if (err)
            snprintf(err, errlen, "an override needs a reason");
        return GI_INVALID;
    }
    if (strcmp(from, to) == 0 || (!override && !move_allowed(from, to))) {
        if (err)
            snprintf(err, errlen, "an asset in stage %s cannot move to %s", from, to);
        return GI_CONFLICT;
    }
    if (!(s = db_prep(c, sql_stage_set)))
        return GI_INTERNAL;
    db_bind_text(s, ":stage", to);
    db_bind_int(s, ":at", at);
    db_bind_int(s, ":id", asset_id);
    if ((rc = db_exec_done(c, s)) != GI_OK || (rc = asset_doc_save(c, asset_id)) != GI_OK)
        return rc;
    detail = json_pack("{s:s, s:s, s:s?, s:b}", "from", from, "to", to, "reason", reason,
                       "override", override);
    rc = detail ? asset_event_append(c, asset_id, "stage", actor, detail, at) : GI_INTERNAL;
    if (rc == GI_OK)
        rc = asset_hook_emit(c, asset_id, "asset.stage_changed", actor, detail, reason, at);
    if (rc == GI_OK)
        rc = asset_sync_queue(c, asset_id, "stage", at);
    if (rc == GI_OK)
        rc = asset_reservations_on_stage(c, asset_id, to, actor, at);
    json_decref(detail);
    return rc;
}
