/* Lifecycle rules: storage, evaluation over the assets and the health
 * rollup, and the actions a match takes (the condition language is
 * lifecycle_lang.c's). See store.h and docs/LIFECYCLE.md.
 *
 * An evaluation is one pass over the assets for any number of rules: it
 * reads them in chunks of RULE_CHUNK (each chunk's assets and health days
 * in one read snapshot, no writer lock, read once whatever the number of
 * rules), evaluates every rule on each asset, and runs each match's
 * actions in a writing transaction of its own, so the rules over ten
 * thousand GPUs never hold the writer lock for long. */
#include "store/assets_int.h"
#include "store/lifecycle_int.h"
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DAY_S 86400
#define RULE_CHUNK 500
#define RULE_MAX_REPORT 1000
/* Expired spare reservations a run ends, at most, in its one transaction. */
#define RULE_MAX_EXPIRED 500

#define RULE_COLS                                                                                  \
    "id, name, enabled, condition_json, actions_json, version, created_by, created_at, "           \
    "updated_by, updated_at, last_run_at, last_matched"

#define STATEMENTS(X)                                                                              \
    X(LIST, "SELECT " RULE_COLS " FROM lifecycle_rules ORDER BY id")                               \
    X(GET, "SELECT " RULE_COLS " FROM lifecycle_rules WHERE id = :id")                             \
    X(ENABLED, "SELECT id FROM lifecycle_rules WHERE enabled = 1 ORDER BY id")                     \
    X(NAME_TAKEN, "SELECT COUNT(*) FROM lifecycle_rules WHERE name = :name AND id <> :id")         \
    X(INSERT, "INSERT INTO lifecycle_rules (name, enabled, condition_json, actions_json, "         \
              "version, created_by, created_at, updated_by, updated_at) VALUES (:name, :en, "      \
              ":cond, :act, 1, :who, :now, :who, :now) RETURNING id")                              \
    X(UPDATE, "UPDATE lifecycle_rules SET name = :name, enabled = :en, condition_json = :cond, "   \
              "actions_json = :act, version = version + 1, updated_by = :who, updated_at = :now "  \
              "WHERE id = :id")                                                                    \
    X(DELETE, "DELETE FROM lifecycle_rules WHERE id = :id")                                        \
    X(RAN, "UPDATE lifecycle_rules SET last_run_at = :now, last_matched = :n WHERE id = :id")      \
    X(ASSETS, "SELECT a.id, a.tag, a.kind, a.stage, a.model, a.serial, a.datacenter_id, d.name, "  \
              "a.warranty_end, g.id, a.gpu_uuid FROM assets a LEFT JOIN datacenters d ON d.id = "  \
              "a.datacenter_id LEFT JOIN gpus g ON g.uuid = a.gpu_uuid WHERE a.id > :after "       \
              "ORDER BY a.id LIMIT :limit")                                                        \
    X(DAYS, "SELECT a.id, h.day, h.xid_events, h.ecc_uncorrected_inc, h.ecc_corrected_inc, "       \
            "h.temp_p95_c, h.temp_max_c, h.util_avg, h.remap_failures FROM assets a JOIN gpus g "  \
            "ON g.uuid = a.gpu_uuid JOIN gpu_health_daily h ON h.gpu_id = g.id WHERE a.id > "      \
            ":after AND a.id <= :upto AND +h.day >= :from ORDER BY a.id, h.day")                   \
    X(SPARE_HELD, "SELECT spare_id FROM asset_reservations WHERE for_id = :id AND released_at IS " \
                  "NULL")                                                                          \
    X(SPARE_FIND, "SELECT a.id, a.tag FROM assets a WHERE a.stage = 'spare' AND a.id <> :id AND "  \
                  "a.model = :model AND a.datacenter_id = :dc AND NOT EXISTS (SELECT 1 FROM "      \
                  "asset_reservations r WHERE r.spare_id = a.id AND r.released_at IS NULL) ORDER " \
                  "BY a.id LIMIT 1")                                                               \
    X(SPARE_TAG, "SELECT tag FROM assets WHERE id = :id")                                          \
    X(RESERVE, "INSERT INTO asset_reservations (spare_id, for_id, rule_id, reserved_at, "          \
               "expires_at) VALUES (:spare, :id, :rule, :now, :exp)")                              \
    X(SEED_MARK, "SELECT COUNT(*) FROM cost_settings WHERE name = 'lifecycle_examples_seeded'")    \
    X(SEED_DONE, "INSERT INTO cost_settings (name, value, updated_at) VALUES "                     \
                 "('lifecycle_examples_seeded', '1', :now)")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- actions ---- */

static json_t *asset_context(const struct actx *a, int64_t rule_id, const char *rule_name,
                             const char *reason, const char *title)
{
    json_t *ctx =
        json_pack("{s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s}}, s:{s:I, s:s}, s:s}", "event",
                  "rule.fired", "asset", "tag", a->tag, "kind", a->kind, "serial", a->serial,
                  "model", a->model, "stage", a->stage, "location", "datacenter", a->dc, "rule",
                  "id", (json_int_t)rule_id, "name", rule_name, "reason", reason);
    if (ctx && a->uuid[0])
        json_object_set_new(ctx, "gpu", json_pack("{s:s}", "uuid", a->uuid));
    if (ctx && title)
        json_object_set_new(ctx, "title", json_sprintf("%s: %s", title, a->tag));
    return ctx;
}

/* The spare reserved for the asset (dry: which one would be), expiring
 * after the action's expire_days when it has them. */
static int reserve_spare(struct conn *c, const json_t *act, const struct actx *a, int64_t rule_id,
                         bool dry, int64_t now, const char *actor, json_t *res, bool *changed)
{
    const json_t *days = json_object_get(act, "expire_days");
    struct db_stmt *s = prep(c, ST_SPARE_HELD);
    int64_t spare = 0;
    char tag[128] = "";
    int rc, step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", a->id);
    rc = db_fetch_int(c, s, &spare);
    if (rc == GI_OK) {
        if (!(s = prep(c, ST_SPARE_TAG)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", spare);
        if ((step = db_step(c, s)) == DB_ROW)
            gi_strlcpy(tag, db_col_text(s, 0) ? db_col_text(s, 0) : "", sizeof tag);
        db_reset(s);
        json_object_set_new(res, "result", json_string("existing"));
        json_object_set_new(res, "spare", json_string(tag));
        return GI_OK;
    }
    if (rc != GI_NOT_FOUND)
        return rc;
    if (!a->model[0] || a->dc_id <= 0) {
        json_object_set_new(res, "result", json_string("none_available"));
        json_object_set_new(res, "error", json_string("the asset has no model or data center"));
        return GI_OK;
    }
    if (!(s = prep(c, ST_SPARE_FIND)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", a->id);
    db_bind_text(s, ":model", a->model);
    db_bind_int(s, ":dc", a->dc_id);
    step = db_step(c, s);
    if (step == DB_ROW) {
        spare = db_col_int(s, 0);
        gi_strlcpy(tag, db_col_text(s, 1) ? db_col_text(s, 1) : "", sizeof tag);
    }
    db_reset(s);
    if (step != DB_ROW && step != DB_DONE)
        return db_status(step);
    if (step == DB_DONE) {
        json_object_set_new(res, "result", json_string("none_available"));
        return GI_OK;
    }
    json_object_set_new(res, "spare", json_string(tag));
    if (dry) {
        json_object_set_new(res, "result", json_string("would_reserve"));
        return GI_OK;
    }
    if (!(s = prep(c, ST_RESERVE)))
        return GI_INTERNAL;
    db_bind_int(s, ":spare", spare);
    db_bind_int(s, ":id", a->id);
    db_bind_int(s, ":rule", rule_id);
    db_bind_int(s, ":now", now);
    if (days)
        db_bind_int(s, ":exp", now + json_integer_value(days) * DAY_S);
    else
        db_bind_text(s, ":exp", NULL);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    {
        json_t *d1 = json_pack("{s:s, s:s, s:I}", "role", "spare", "for", a->tag, "rule_id",
                               (json_int_t)rule_id);
        json_t *d2 = json_pack("{s:s, s:s, s:I}", "role", "failing", "spare", tag, "rule_id",
                               (json_int_t)rule_id);
        rc = asset_event_append(c, spare, "reserved", actor, d1, now);
        if (rc == GI_OK)
            rc = asset_event_append(c, a->id, "reserved", actor, d2, now);
        json_decref(d1);
        json_decref(d2);
    }
    json_object_set_new(res, "result", json_string("reserved"));
    *changed = true;
    return rc;
}

/* Runs (or, dry, describes) the actions of a match; *out is the list of
 * results. Not dry: inside the caller's writing transaction. */
static int run_actions(struct conn *c, const json_t *actions, const struct actx *a, int64_t rule_id,
                       const char *rule_name, const json_t *why, bool dry, const char *actor,
                       int64_t now, json_t *out, char *moved_to, size_t moved_len)
{
    char reason[512], err[256], key[192];
    size_t i, off = 0;
    json_t *act, *w;
    bool changed = false;
    int rc = GI_OK;

    off = (size_t)snprintf(reason, sizeof reason, "rule %lld (%s)", (long long)rule_id, rule_name);
    json_array_foreach((json_t *)why, i, w) {
        if (off >= sizeof reason)
            break;
        off += (size_t)snprintf(reason + off, sizeof reason - off, "%s%s", i ? "; " : ": ",
                                json_string_value(w));
    }
    json_array_foreach((json_t *)actions, i, act) {
        const char *type = json_string_value(json_object_get(act, "type"));
        const char *title = json_string_value(json_object_get(act, "title"));
        json_t *res = json_pack("{s:s}", "type", type);

        if (strcmp(type, "stage") == 0) {
            const char *to = json_string_value(json_object_get(act, "to"));
            const char *const *next = store_asset_stage_next(a->stage);
            bool allowed = false;
            for (size_t k = 0; next && next[k]; k++)
                allowed = allowed || strcmp(next[k], to) == 0;
            json_object_set_new(res, "from", json_string(a->stage));
            json_object_set_new(res, "to", json_string(to));
            const char *why_text = json_string_value(json_object_get(act, "reason"));
            char given[1024];
            if (why_text && *why_text) /* the action's own reason first, then the rule's */
                gi_fmt(given, sizeof given, "%s; %s", why_text, reason);
            if (dry) {
                json_object_set_new(res, "result", json_string(allowed ? "would_move" : "refused"));
            } else {
                err[0] = '\0';
                rc = asset_stage_change(c, a->id, to, why_text && *why_text ? given : reason, actor,
                                        false, now, err, sizeof err);
                if (rc == GI_CONFLICT) {
                    rc = GI_OK;
                    json_object_set_new(res, "result", json_string("refused"));
                    json_object_set_new(res, "error", json_string(err));
                } else if (rc == GI_OK) {
                    json_object_set_new(res, "result", json_string("moved"));
                    gi_strlcpy(moved_to, to, moved_len);
                    changed = true;
                }
            }
        } else if (strcmp(type, "ticket") == 0) {
            snprintf(key, sizeof key, "rule:%lld:%s", (long long)rule_id, a->tag);
            json_object_set_new(res, "dedupe_key", json_string(key));
            if (dry) {
                json_object_set_new(res, "result", json_string("would_open"));
            } else {
                json_t *ctx = asset_context(a, rule_id, rule_name, reason, title);
                int64_t tid = 0;
                bool existing = false;
                rc = ctx ? ticket_open(c, key, ctx, actor, now, &tid, &existing) : GI_INTERNAL;
                json_decref(ctx);
                if (rc == GI_OK) {
                    json_object_set_new(res, "result",
                                        json_string(existing ? "existing" : "opened"));
                    json_object_set_new(res, "ticket_id", json_integer(tid));
                    changed = changed || !existing;
                }
            }
        } else if (strcmp(type, "webhook") == 0) {
            if (dry) {
                json_object_set_new(res, "result", json_string("would_enqueue"));
            } else {
                json_t *ctx = asset_context(a, rule_id, rule_name, reason, title);
                rc = ctx ? webhook_enqueue(c, "rule.fired", ctx, 0, now) : GI_INTERNAL;
                json_decref(ctx);
                if (rc == GI_OK) {
                    json_object_set_new(res, "result", json_string("enqueued"));
                    changed = true;
                }
            }
        } else {
            rc = reserve_spare(c, act, a, rule_id, dry, now, actor, res, &changed);
        }
        json_array_append_new(out, res);
        if (rc != GI_OK)
            return rc;
    }
    if (!dry && changed) {
        json_t *d = json_pack("{s:I, s:s, s:O, s:O}", "rule_id", (json_int_t)rule_id, "rule",
                              rule_name, "why", why, "actions", out);
        rc = asset_event_append(c, a->id, "rule", actor, d, now);
        json_decref(d);
    }
    return rc;
}

/* Reads one chunk of assets after *after, with their health days since
 * `from` when days is set, in one read snapshot that ends before it
 * returns; *n assets into a (caller frees rows). */
static int read_chunk(struct conn *c, int64_t *after, int64_t from, int64_t today, bool days,
                      struct actx *a, size_t *n)
{
    struct db_stmt *s;
    int rc = GI_INTERNAL, step;
    size_t k = 0, i = 0;

    *n = 0;
    db_read_begin(c);
    if (!(s = prep(c, ST_ASSETS)))
        goto cleanup;
    db_bind_int(s, ":after", *after);
    db_bind_int(s, ":limit", RULE_CHUNK);
    while (k < RULE_CHUNK && (step = db_step(c, s)) == DB_ROW) {
        const char *w = db_col_text(s, 8);
        int64_t d;
        memset(&a[k], 0, sizeof a[k]);
        a[k].id = db_col_int(s, 0);
        gi_strlcpy(a[k].tag, db_col_text(s, 1) ? db_col_text(s, 1) : "", sizeof a[k].tag);
        gi_strlcpy(a[k].kind, db_col_text(s, 2) ? db_col_text(s, 2) : "", sizeof a[k].kind);
        gi_strlcpy(a[k].stage, db_col_text(s, 3) ? db_col_text(s, 3) : "", sizeof a[k].stage);
        gi_strlcpy(a[k].model, db_col_text(s, 4) ? db_col_text(s, 4) : "", sizeof a[k].model);
        gi_strlcpy(a[k].serial, db_col_text(s, 5) ? db_col_text(s, 5) : "", sizeof a[k].serial);
        a[k].dc_id = db_col_int(s, 6);
        gi_strlcpy(a[k].dc, db_col_text(s, 7) ? db_col_text(s, 7) : "", sizeof a[k].dc);
        if (w && asset_date_parse(w, &d)) {
            a[k].has_warranty = true;
            a[k].warranty_left = d - today / DAY_S;
        }
        a[k].gpu_id = db_col_int(s, 9);
        gi_strlcpy(a[k].uuid, db_col_text(s, 10) ? db_col_text(s, 10) : "", sizeof a[k].uuid);
        k++;
    }
    db_reset(s);
    if (k == 0 || (step != DB_ROW && step != DB_DONE)) {
        rc = k == 0 && (step == DB_DONE || step == DB_ROW) ? GI_OK : db_status(step);
        goto cleanup;
    }
    *after = a[k - 1].id;
    *n = k;
    if (!days) {
        rc = GI_OK;
        goto cleanup;
    }
    if (!(s = prep(c, ST_DAYS)))
        goto cleanup;
    db_bind_int(s, ":after", a[0].id - 1);
    db_bind_int(s, ":upto", a[k - 1].id);
    db_bind_int(s, ":from", from);
    while ((step = db_step(c, s)) == DB_ROW) {
        int64_t id = db_col_int(s, 0);
        struct hrow *r;
        while (i < k && a[i].id < id)
            i++;
        if (i == k || a[i].id != id || a[i].nrows >= RULE_MAX_WINDOW + 1)
            continue;
        if (!a[i].rows && !(a[i].rows = calloc(RULE_MAX_WINDOW + 1, sizeof *a[i].rows)))
            continue;
        r = &a[i].rows[a[i].nrows++];
        r->day = db_col_int(s, 1);
        r->v[M_XID_EVENTS] = (double)db_col_int(s, 2);
        r->v[M_XID_DAYS] = r->v[M_XID_EVENTS];
        r->v[M_ECC_U] = db_col_is_null(s, 3) ? NAN : (double)db_col_int(s, 3);
        r->v[M_ECC_C] = db_col_is_null(s, 4) ? NAN : (double)db_col_int(s, 4);
        r->v[M_TEMP_P95] = db_col_is_null(s, 5) ? NAN : db_col_dbl(s, 5);
        r->v[M_TEMP_MAX] = db_col_is_null(s, 6) ? NAN : db_col_dbl(s, 6);
        r->v[M_UTIL] = db_col_is_null(s, 7) ? NAN : db_col_dbl(s, 7);
        r->v[M_REMAP] = db_col_is_null(s, 8) ? NAN : (double)db_col_int(s, 8);
    }
    db_reset(s);
    rc = step == DB_DONE ? GI_OK : db_status(step);
cleanup:
    db_read_end(c);
    if (rc != GI_OK) {
        for (size_t j = 0; j < k; j++)
            free(a[j].rows);
        *n = 0;
    }
    return rc;
}

/* One rule of a pass: what it is (borrowed) and what it found. */
struct rrun {
    int64_t id;
    const char *name;
    const json_t *cond, *actions;
    int64_t matched;
    json_t *matches;
    int rc; /* the first failure of its actions; the rule then stops */
};

/* The writing transaction a pass's firings share: opened at the first
 * firing, committed after RULE_TX_FIRINGS of them or at the end of the
 * chunk, so that the writer lock is taken (and waited for, behind the
 * ingest batches in flight on PostgreSQL) once per few dozen firings
 * rather than once each, and held for no longer than those few. */
#define RULE_TX_FIRINGS 32
struct pass_tx {
    bool open;
    int firings;
};

/* Commits the firings so far, if any; their status. */
static int pass_commit(struct conn *c, struct pass_tx *t)
{
    if (!t->open)
        return GI_OK;
    t->open = false;
    t->firings = 0;
    return db_tx_end(c, GI_OK);
}

/* One match of r on a: its actions (together or not at all, in the pass's
 * writing transaction unless dry), and its line in the report. A stage
 * the actions moved the asset to is what the rules after r see. *txrc:
 * a failed commit (the pass stops). */
static int fire(struct conn *c, struct rrun *r, struct actx *a, const json_t *why, bool dry,
                const char *actor, int64_t now, struct pass_tx *t, int *txrc)
{
    json_t *results = json_array();
    char moved[32] = "";
    int rc;

    if (dry) {
        rc = run_actions(c, r->actions, a, r->id, r->name, why, true, actor, now, results, moved,
                         sizeof moved);
    } else {
        rc = t->open ? GI_OK : db_tx_begin(c);
        if (rc == GI_OK) {
            t->open = true;
            rc = db_part_begin(c);
            if (rc == GI_OK)
                rc = run_actions(c, r->actions, a, r->id, r->name, why, false, actor, now, results,
                                 moved, sizeof moved);
            rc = db_part_end(c, rc);
            if (++t->firings >= RULE_TX_FIRINGS)
                *txrc = pass_commit(c, t);
        } else {
            db_tx_end(c, rc);
        }
    }
    if (rc == GI_OK) {
        r->matched++;
        if (json_array_size(r->matches) < RULE_MAX_REPORT)
            json_array_append_new(r->matches, json_pack("{s:s, s:s, s:s, s:O, s:O}", "asset",
                                                        a->tag, "kind", a->kind, "stage", a->stage,
                                                        "why", why, "actions", results));
        if (moved[0])
            gi_strlcpy(a->stage, moved, sizeof a->stage);
    }
    json_decref(results);
    return rc;
}

/* Every rule of runs over every asset in ONE pass: each chunk of assets
 * and its health days is read once (no writer lock held), then every rule
 * is evaluated on each asset in the order of runs, and each match's
 * actions run together or not at all (a savepoint) in a writing
 * transaction shared by up to RULE_TX_FIRINGS firings of the chunk. A rule whose actions
 * fail stops (its rc) while the others go on. Unless dry, the pass first
 * ends the expired spare reservations (at most RULE_MAX_EXPIRED, in one
 * transaction taken only when a read finds one due, so their spares are
 * free for this pass's reserve_spare), even with no rule, and the stored
 * rules get their last run and match
 * count. *expired: how many reservations it ended. */
static int evaluate_pass(struct store *st, struct rrun *runs, size_t nruns, bool dry,
                         const char *actor, int64_t now, int64_t *evaluated, int64_t *expired)
{
    struct conn *c = db_conn_get(st);
    struct actx *a = calloc(RULE_CHUNK, sizeof *a);
    int64_t today = now - now % DAY_S, after = 0;
    int window = 0, rc = a ? GI_OK : GI_INTERNAL;
    size_t n = nruns > 0;
    struct pass_tx tx = {false, 0};

    bool due = false;

    *evaluated = 0;
    *expired = 0;
    if (rc == GI_OK && !dry)
        rc = asset_reservations_due(c, now, &due);
    if (rc == GI_OK && due) { /* the writer lock only when some are due */
        rc = db_tx_begin(c);
        if (rc == GI_OK)
            rc = asset_reservations_expire(c, actor, now, RULE_MAX_EXPIRED, expired);
        rc = db_tx_end(c, rc);
        if (rc != GI_OK)
            *expired = 0; /* rolled back */
    }
    for (size_t r = 0; r < nruns; r++) {
        int w = lrule_max_window(runs[r].cond);
        window = w > window ? w : window;
        runs[r].rc = GI_OK;
        runs[r].matched = 0;
    }
    while (rc == GI_OK && n > 0) {
        rc = read_chunk(c, &after, today - (int64_t)(window > 0 ? window - 1 : 0) * DAY_S, today,
                        window > 0, a, &n);
        for (size_t i = 0; rc == GI_OK && i < n; i++) {
            (*evaluated)++;
            for (size_t r = 0; rc == GI_OK && r < nruns; r++) {
                json_t *why;
                if (runs[r].rc != GI_OK)
                    continue;
                why = json_array();
                if (lrule_eval(runs[r].cond, &a[i], today, why))
                    runs[r].rc = fire(c, &runs[r], &a[i], why, dry, actor, now, &tx, &rc);
                json_decref(why);
            }
        }
        if (rc == GI_OK)
            rc = pass_commit(c, &tx);
        for (size_t i = 0; i < n; i++)
            free(a[i].rows);
    }
    if (tx.open) /* a failed commit or read left it open: undone */
        db_tx_end(c, rc == GI_OK ? GI_INTERNAL : rc);
    for (size_t r = 0; rc == GI_OK && !dry && r < nruns; r++) {
        struct db_stmt *s;
        if (runs[r].id <= 0 || runs[r].rc != GI_OK)
            continue;
        rc = db_tx_begin(c);
        if (rc == GI_OK) {
            rc = GI_INTERNAL;
            if ((s = prep(c, ST_RAN))) {
                db_bind_int(s, ":now", now);
                db_bind_int(s, ":n", runs[r].matched);
                db_bind_int(s, ":id", runs[r].id);
                rc = db_exec_done(c, s);
            }
        }
        rc = db_tx_end(c, rc);
    }
    free(a);
    db_conn_put(st, c);
    return rc;
}

/* The report of one rule of a pass. */
static json_t *run_report(const struct rrun *r, bool dry, int64_t evaluated)
{
    return json_pack("{s:{s:I, s:s}, s:b, s:I, s:I, s:O, s:b}", "rule", "id", (json_int_t)r->id,
                     "name", r->name, "dry_run", dry, "evaluated", (json_int_t)evaluated, "matched",
                     (json_int_t)r->matched, "matches", r->matches, "truncated",
                     r->matched > RULE_MAX_REPORT);
}

/* ---- storage ---- */

/* A rule row as its document: condition and actions as JSON. */
static json_t *rule_doc(json_t *row)
{
    const char *cond = json_string_value(json_object_get(row, "condition_json"));
    const char *act = json_string_value(json_object_get(row, "actions_json"));

    if (!row)
        return NULL;
    if (cond)
        json_object_set_new(row, "condition", json_loads(cond, 0, NULL));
    if (act)
        json_object_set_new(row, "actions", json_loads(act, 0, NULL));
    json_object_del(row, "condition_json");
    json_object_del(row, "actions_json");
    json_object_set_new(row, "enabled",
                        json_boolean(json_integer_value(json_object_get(row, "enabled")) != 0));
    return row;
}

static int rule_get(struct conn *c, int64_t id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_GET);
    json_t *row = NULL;
    int rc;

    *out = NULL;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    rc = db_fetch_one(c, s, &row);
    if (rc == GI_OK) {
        /* db_row_json may already parse *_json columns: normalize both ways */
        json_t *cj = json_object_get(row, "condition_json");
        json_t *aj = json_object_get(row, "actions_json");
        if (cj && !json_is_string(cj)) {
            json_object_set(row, "condition", cj);
            json_object_del(row, "condition_json");
        }
        if (aj && !json_is_string(aj)) {
            json_object_set(row, "actions", aj);
            json_object_del(row, "actions_json");
        }
        *out = rule_doc(row);
    }
    return rc;
}

int store_lrule_list(struct store *st, json_t **items)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_LIST);
    json_t *ids = NULL, *row;
    size_t i;
    int rc = s ? db_collect(c, s, &ids) : GI_INTERNAL;

    *items = NULL;
    if (rc == GI_OK) {
        *items = json_array();
        json_array_foreach(ids, i, row) {
            json_t *doc = NULL;
            if ((rc = rule_get(c, json_integer_value(json_object_get(row, "id")), &doc)) != GI_OK)
                break;
            json_array_append_new(*items, doc);
        }
    }
    json_decref(ids);
    if (rc != GI_OK) {
        json_decref(*items);
        *items = NULL;
    }
    db_conn_put(st, c);
    return rc;
}

int store_lrule_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = rule_get(c, id, out);
    db_conn_put(st, c);
    return rc;
}

static int name_free(struct conn *c, const char *name, int64_t id)
{
    struct db_stmt *s = prep(c, ST_NAME_TAKEN);
    int64_t n = 0;
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":name", name);
    db_bind_int(s, ":id", id);
    rc = db_fetch_int(c, s, &n);
    return rc != GI_OK ? rc : n > 0 ? GI_CONFLICT : GI_OK;
}

int store_lrule_create(struct store *st, const char *actor, const struct store_lrule *r,
                       json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t id = 0;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = name_free(c, r->name, 0);
    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_INSERT))) {
            db_bind_text(s, ":name", r->name);
            db_bind_int(s, ":en", r->enabled > 0);
            db_bind_json(s, ":cond", r->condition);
            db_bind_json(s, ":act", r->actions);
            db_bind_text(s, ":who", actor);
            db_bind_int(s, ":now", gi_now());
            rc = db_fetch_int(c, s, &id);
        }
    }
    if (rc == GI_OK)
        rc = rule_get(c, id, out);
    if (rc == GI_OK)
        rc = db_audit(c, actor, "create", "lifecycle_rule", id, NULL, *out);
    rc = db_tx_end_doc(c, rc, out);
    db_conn_put(st, c);
    return rc;
}

int store_lrule_update(struct store *st, const char *actor, int64_t id, const struct store_lrule *r,
                       json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *old = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = rule_get(c, id, &old);
    if (rc == GI_OK && r->name)
        rc = name_free(c, r->name, id);
    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_UPDATE))) {
            db_bind_text(s, ":name",
                         r->name ? r->name : json_string_value(json_object_get(old, "name")));
            db_bind_int(s, ":en",
                        r->enabled >= 0 ? r->enabled > 0
                                        : json_is_true(json_object_get(old, "enabled")));
            db_bind_json(s, ":cond",
                         r->condition ? r->condition : json_object_get(old, "condition"));
            db_bind_json(s, ":act", r->actions ? r->actions : json_object_get(old, "actions"));
            db_bind_text(s, ":who", actor);
            db_bind_int(s, ":now", gi_now());
            db_bind_int(s, ":id", id);
            rc = db_exec_done(c, s);
        }
    }
    if (rc == GI_OK)
        rc = rule_get(c, id, out);
    if (rc == GI_OK)
        rc = db_audit(c, actor, "update", "lifecycle_rule", id, old, *out);
    rc = db_tx_end_doc(c, rc, out);
    json_decref(old);
    db_conn_put(st, c);
    return rc;
}

int store_lrule_delete(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *old = NULL;
    int rc = db_tx_begin(c);

    if (rc == GI_OK)
        rc = rule_get(c, id, &old);
    if (rc == GI_OK) {
        rc = GI_INTERNAL;
        if ((s = prep(c, ST_DELETE))) {
            db_bind_int(s, ":id", id);
            rc = db_exec_done(c, s);
        }
    }
    if (rc == GI_OK)
        rc = db_audit(c, actor, "delete", "lifecycle_rule", id, old, NULL);
    rc = db_tx_end(c, rc);
    json_decref(old);
    db_conn_put(st, c);
    return rc;
}

int store_lrule_evaluate(struct store *st, int64_t id, const json_t *rule, bool dry_run,
                         const char *actor, int64_t now, json_t **report)
{
    json_t *doc = NULL;
    const json_t *src = rule;
    struct rrun r = {0};
    int64_t evaluated = 0, expired = 0;
    int rc;

    *report = NULL;
    if (id > 0) {
        if ((rc = store_lrule_get(st, id, &doc)) != GI_OK)
            return rc;
        src = doc;
    }
    r.id = id;
    r.name = json_string_value(json_object_get(src, "name"));
    r.name = r.name ? r.name : "unsaved rule";
    r.cond = json_object_get(src, "condition");
    r.actions = json_object_get(src, "actions");
    r.matches = json_array();
    rc = evaluate_pass(st, &r, 1, dry_run, actor, now, &evaluated, &expired);
    if (rc == GI_OK)
        rc = r.rc;
    if (rc == GI_OK && !(*report = run_report(&r, dry_run, evaluated)))
        rc = GI_INTERNAL;
    if (rc == GI_OK)
        json_object_set_new(*report, "reservations_expired", json_integer((json_int_t)expired));
    json_decref(r.matches);
    json_decref(doc);
    return rc;
}

/* store_lrules_evaluate; *failed: the first failure of a rule's actions. */
static int evaluate_rules(struct store *st, const int64_t *ids, size_t n, bool dry_run,
                          const char *actor, int64_t now, json_t **report, int *failed)
{
    json_t *docs = json_array(), *enabled = NULL, *row, *reports = NULL;
    struct rrun *runs = NULL;
    int64_t evaluated = 0, matched = 0, expired = 0;
    size_t i, count;
    int rc = GI_OK;

    *report = NULL;
    *failed = GI_OK;
    if (!ids && (rc = db_collect_with(st, stmt_sql[ST_ENABLED], NULL, 0, &enabled)) == GI_OK)
        n = json_array_size(enabled);
    for (i = 0; rc == GI_OK && i < n; i++) {
        json_t *doc = NULL;
        int64_t id =
            ids ? ids[i] : json_integer_value(json_object_get(json_array_get(enabled, i), "id"));
        rc = store_lrule_get(st, id, &doc);
        if (rc == GI_NOT_FOUND && !ids)
            rc = GI_OK; /* deleted since the list was read */
        else if (rc == GI_OK)
            json_array_append_new(docs, doc);
    }
    count = json_array_size(docs);
    if (rc == GI_OK && count > 0 && !(runs = calloc(count, sizeof *runs)))
        rc = GI_INTERNAL;
    json_array_foreach(docs, i, row) {
        if (!runs)
            break;
        runs[i].id = json_integer_value(json_object_get(row, "id"));
        runs[i].name = json_string_value(json_object_get(row, "name"));
        runs[i].cond = json_object_get(row, "condition");
        runs[i].actions = json_object_get(row, "actions");
        runs[i].matches = json_array();
    }
    if (rc == GI_OK && (count > 0 || !dry_run))
        rc = evaluate_pass(st, runs, count, dry_run, actor, now, &evaluated, &expired);
    if (rc == GI_OK) {
        reports = json_array();
        for (i = 0; i < count; i++) {
            json_t *one = run_report(&runs[i], dry_run, evaluated);
            if (runs[i].rc != GI_OK && *failed == GI_OK)
                *failed = runs[i].rc;
            if (one && runs[i].rc != GI_OK)
                json_object_set_new(one, "error", json_string(gi_status_name(runs[i].rc)));
            matched += runs[i].matched;
            json_array_append_new(reports, one);
        }
        *report = json_pack("{s:b, s:I, s:I, s:I, s:o}", "dry_run", dry_run, "evaluated",
                            (json_int_t)evaluated, "matched", (json_int_t)matched,
                            "reservations_expired", (json_int_t)expired, "rules", reports);
        if (!*report)
            rc = GI_INTERNAL;
    }
    for (i = 0; runs && i < count; i++)
        json_decref(runs[i].matches);
    free(runs);
    json_decref(docs);
    json_decref(enabled);
    return rc;
}

int store_lrules_evaluate(struct store *st, const int64_t *ids, size_t n, bool dry_run,
                          const char *actor, int64_t now, json_t **report)
{
    int failed;
    return evaluate_rules(st, ids, n, dry_run, actor, now, report, &failed);
}

int store_lrules_run(struct store *st, const char *actor, int64_t now, int64_t *fired,
                     int64_t *expired)
{
    json_t *rep = NULL;
    int failed = GI_OK, rc = evaluate_rules(st, NULL, 0, false, actor, now, &rep, &failed);

    *fired = rc == GI_OK ? json_integer_value(json_object_get(rep, "matched")) : 0;
    *expired = rc == GI_OK ? json_integer_value(json_object_get(rep, "reservations_expired")) : 0;
    json_decref(rep);
    return rc == GI_OK ? failed : rc; /* one rule's failure did not stop the others */
}

/* The examples of docs/LIFECYCLE.md, disabled until someone enables them. */
static const struct {
    const char *name, *condition, *actions;
} examples[] = {
    {"XID errors on more than 3 days in 30: diagnostic and repair",
     "{\"all\":[{\"attr\":\"kind\",\"=\":\"gpu\"},{\"attr\":\"stage\",\"=\":\"active\"},{"
     "\"metric\":"
     "\"xid_days\",\"window_days\":30,\">\":3}]}",
     "[{\"type\":\"stage\",\"to\":\"diagnostic_repair\"}]"},
    {"Uncorrectable ECC or a row-remap failure: diagnostic and repair now",
     "{\"all\":[{\"attr\":\"kind\",\"=\":\"gpu\"},{\"attr\":\"stage\",\"in\":[\"active\",\"spare\"]"
     "},"
     "{\"any\":[{\"metric\":\"ecc_uncorrected\",\"window_days\":2,\">\":0},{\"metric\":"
     "\"remap_failures\",\"window_days\":2,\">\":0}]}]}",
     "[{\"type\":\"stage\",\"to\":\"diagnostic_repair\"},{\"type\":\"reserve_spare\"}]"},
    {"Temperature p95 above 85 C for 7 days: ticket",
     "{\"all\":[{\"attr\":\"kind\",\"=\":\"gpu\"},{\"metric\":\"temp_p95\",\"window_days\":7,\">\":"
     "85,"
     "\"days\":7}]}",
     "[{\"type\":\"ticket\",\"title\":\"GPU running hot\"}]"},
    {"Average utilization below 10% for 30 days: refurbishment candidate",
     "{\"all\":[{\"attr\":\"kind\",\"=\":\"gpu\"},{\"attr\":\"stage\",\"=\":\"active\"},{"
     "\"metric\":"
     "\"util_avg\",\"window_days\":30,\"<\":10,\"days\":30}]}",
     "[{\"type\":\"stage\",\"to\":\"refurbishment_candidate\"}]"},
    {"Warranty ending within 30 days: maintenance ticket",
     "{\"all\":[{\"attr\":\"warranty_days_left\",\">=\":0},{\"attr\":\"warranty_days_left\",\"<=\":"
     "30}]}",
     "[{\"type\":\"ticket\",\"title\":\"Warranty ending: plan maintenance\"}]"},
};

int store_lrules_seed(struct store *st, bool *seeded)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t marks = 0, id, now = gi_now();
    int rc = db_tx_begin(c);

    *seeded = false;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SEED_MARK)) || (rc = db_fetch_int(c, s, &marks)) != GI_OK || marks > 0)
        goto cleanup;
    for (size_t i = 0; rc == GI_OK && i < sizeof examples / sizeof *examples; i++) {
        if (!(s = prep(c, ST_INSERT))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_text(s, ":name", examples[i].name);
        db_bind_int(s, ":en", 0);
        db_bind_text(s, ":cond", examples[i].condition);
        db_bind_text(s, ":act", examples[i].actions);
        db_bind_text(s, ":who", "gpuinv");
        db_bind_int(s, ":now", now);
        rc = db_fetch_int(c, s, &id);
    }
    if (rc != GI_OK || !(s = prep(c, ST_SEED_DONE)))
        goto cleanup;
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) == GI_OK)
        *seeded = true;
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK)
        *seeded = false;
    db_conn_put(st, c);
    return rc;
}
