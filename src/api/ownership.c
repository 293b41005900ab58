/* Ownership: the dimensions (teams, environments, pools, clusters), the
 * explicit owner assignments of GPUs, hosts and inventory resources with
 * their history, the ordered mapping rules, and the unowned GPUs. */
#include "api/api.h"
#include "api/scope.h"
#include "api/csvimport.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dimensions ---- */

/* The dimension kind the request's path names. */
static const char *dim_kind(struct req *r)
{
    static const struct {
        const char *prefix, *kind;
    } map[] = {{"/api/v1/teams", "team"},
               {"/api/v1/environments", "environment"},
               {"/api/v1/pools", "pool"},
               {"/api/v1/clusters", "cluster"}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strncmp(r->path, map[i].prefix, strlen(map[i].prefix)) == 0)
            return map[i].kind;
    return "team";
}

/* A dimension name: 1 to 64 letters, digits, '-', '_', '.' or ':'. */
static bool dim_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > STORE_DIM_NAME_MAX)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.' || *p == ':'))
            return false;
    return true;
}

static bool dim_body_or_reply(struct req *r, const json_t *body, bool create, struct store_dim *d)
{
    static const char *const fields[] = {"name", "display", "description", "attrs", NULL};
    const json_t *attrs = json_object_get(body, "attrs");
    char *text;
    size_t len;

    *d = (struct store_dim){0};
    if (!json_known_or_reply(r, body, fields) ||
        !json_str_or_reply(r, body, "name", create, STORE_DIM_NAME_MAX, &d->name) ||
        !json_str_or_reply(r, body, "display", false, 128, &d->display) ||
        !json_str_or_reply(r, body, "description", false, 1024, &d->description))
        return false;
    if (create && !dim_name_ok(d->name)) {
        reply_error(r, 400, "validation_failed", "name",
                    "name must be 1 to %d letters, digits, '-', '_', '.' or ':'",
                    STORE_DIM_NAME_MAX);
        return false;
    }
    if (!create && d->name) {
        reply_error(r, 400, "validation_failed", "name", "a name cannot be changed");
        return false;
    }
    if (attrs && !json_is_null(attrs)) {
        if (!json_is_object(attrs)) {
            reply_error(r, 400, "validation_failed", "attrs", "attrs must be an object");
            return false;
        }
        text = json_dumps(attrs, JSON_COMPACT);
        len = text ? strlen(text) : 0;
        free(text);
        if (len > 4096) {
            reply_error(r, 400, "validation_failed", "attrs", "attrs must be at most 4096 bytes");
            return false;
        }
        d->attrs = attrs;
    }
    return true;
}

void api_dims_list(struct req *r)
{
    static const char *const sortable[] = {"name", "display", "created_at", NULL};
    struct store_page pg;
    const char *q;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!req_page_or_reply(r, sortable, &pg) || !req_param_str_or_reply(r, "q", 128, &q))
        return;
    if ((st = store_dim_list(r->store, dim_kind(r), q, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, dim_kind(r));
        return;
    }
    reply_list(r, items, total, pg.offset);
}

void api_dims_create(struct req *r)
{
    json_t *body = NULL, *out = NULL;
    struct store_dim d;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!dim_body_or_reply(r, body, true, &d))
        goto cleanup;
    st = store_dim_create(r->store, r->who.name, dim_kind(r), &d, &out);
    if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", "name", "a %s named '%s' already exists", dim_kind(r),
                    d.name);
    else if (st != GI_OK)
        reply_status(r, st, dim_kind(r));
    else
        reply_json(r, 201, out);
cleanup:
    json_decref(body);
}

void api_dims_get(struct req *r)
{
    json_t *out = NULL;
    int st = store_dim_get(r->store, dim_kind(r), r->key, &out);

    if (st != GI_OK)
        reply_status(r, st, dim_kind(r));
    else
        reply_json(r, 200, out);
}

void api_dims_update(struct req *r)
{
    json_t *body = NULL, *out = NULL;
    struct store_dim d;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (!dim_body_or_reply(r, body, false, &d))
        goto cleanup;
    if ((st = store_dim_update(r->store, r->who.name, dim_kind(r), r->key, &d, &out)) != GI_OK)
        reply_status(r, st, dim_kind(r));
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
}

void api_dims_delete(struct req *r)
{
    json_t *users = NULL;
    int st = store_dim_delete(r->store, r->who.name, dim_kind(r), r->key, &users);

    if (st == GI_CONFLICT) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the %s '%s' is still used by %zu assignment(s) and %zu rule(s); change them "
                 "first",
                 dim_kind(r), r->key, json_array_size(json_object_get(users, "assignments")),
                 json_array_size(json_object_get(users, "rules")));
        reply_json(r, 409,
                   json_pack("{s:{s:s, s:s, s:O}}", "error", "code", "conflict", "message", msg,
                             "used_by", users));
    } else if (st != GI_OK) {
        reply_status(r, st, dim_kind(r));
    } else {
        reply_no_content(r);
    }
    json_decref(users);
}

/* ---- assignments ---- */

/* The target the path names, and its key (UUID, host name or id). */
static enum store_owner_target owner_target(struct req *r, char *key, size_t len)
{
    if (strncmp(r->path, "/api/v1/resources/", 18) == 0) {
        snprintf(key, len, "%lld", (long long)r->id);
        return STORE_OWNER_RESOURCE;
    }
    gi_strlcpy(key, r->key, len);
    return strncmp(r->path, "/api/v1/hosts/", 14) == 0 ? STORE_OWNER_HOST : STORE_OWNER_GPU;
}

static const char *target_word(enum store_owner_target t)
{
    return t == STORE_OWNER_GPU ? "GPU" : t == STORE_OWNER_HOST ? "host" : "resource";
}

/* An RFC 3339 time (or unix seconds) member; absent leaves *out. */
static bool json_time_or_reply(struct req *r, const json_t *obj, const char *field, int64_t *out)
{
    const json_t *v = json_object_get(obj, field);

    if (v == NULL || json_is_null(v))
        return true;
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        *out = json_integer_value(v);
        return true;
    }
    if (!json_is_string(v) || gi_time_parse(json_string_value(v), out) != GI_OK || *out <= 0) {
        reply_error(r, 400, "validation_failed", field, "%s must be an RFC 3339 time", field);
        return false;
    }
    return true;
}

/* A nullable owner field: absent (has false), null (clears) or a name. */
static bool owner_field_or_reply(struct req *r, const json_t *body, const char *field,
                                 const char **out, bool *has)
{
    *has = json_object_get(body, field) != NULL;
    if (!json_str_or_reply(r, body, field, false, STORE_DIM_NAME_MAX, out))
        return false;
    if (*out && !**out)
        *out = NULL;
    return true;
}

/* A GPU, host or resource outside the token's data centers is answered
 * as a missing one, for a read and for a change alike. */
static bool owner_scope_or_reply(struct req *r, enum store_owner_target t, const char *key)
{
    return who_may_see_or_reply(r,
                                t == STORE_OWNER_GPU    ? WHO_GPU
                                : t == STORE_OWNER_HOST ? WHO_HOST_NAME
                                                        : WHO_RESOURCE,
                                key, r->id);
}

void api_owner_put(struct req *r)
{
    static const char *const fields[] = {"team", "env", "pool", "effective_from", NULL};
    struct store_owner_set in = {0};
    struct store_owner_err err = {"", ""};
    enum store_owner_target t;
    json_t *body = NULL, *out = NULL;
    char key[160];
    int st;

    t = owner_target(r, key, sizeof key);
    if (!owner_scope_or_reply(r, t, key) || !req_json_body_or_reply(r, &body))
        return;
    if (!json_known_or_reply(r, body, fields) ||
        !owner_field_or_reply(r, body, "team", &in.team, &in.has_team) ||
        !owner_field_or_reply(r, body, "env", &in.env, &in.has_env) ||
        !owner_field_or_reply(r, body, "pool", &in.pool, &in.has_pool) ||
        !json_time_or_reply(r, body, "effective_from", &in.effective_from))
        goto cleanup;
    st = store_owner_assign(r->store, r->who.name, t, key, &in, &out, &err);
    if (st == GI_INVALID)
        reply_error(r, 400, "validation_failed", err.field, "%s", err.message);
    else if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", err.field, "%s", err.message);
    else if (st != GI_OK)
        reply_status(r, st, target_word(t));
    else
        reply_json(r, 200, out);
cleanup:
    json_decref(body);
}

/* GET .../owner: the target's assignments, newest first; for a GPU also
 * "owner", resolved at ?at= (default now). */
void api_owner_get(struct req *r)
{
    enum store_owner_target t;
    json_t *items = NULL, *owner = NULL, *body;
    const char *at_p = NULL;
    int64_t at = gi_now();
    char key[160];
    int st;

    t = owner_target(r, key, sizeof key);
    if (!owner_scope_or_reply(r, t, key))
        return;
    if (t == STORE_OWNER_GPU) {
        if (!req_param_str_or_reply(r, "at", 40, &at_p))
            return;
        if (at_p && *at_p && (gi_time_parse(at_p, &at) != GI_OK || at <= 0)) {
            reply_error(r, 400, "invalid_parameter", "at", "at must be an RFC 3339 time");
            return;
        }
    }
    if ((st = store_owner_history(r->store, t, key, &items)) != GI_OK) {
        reply_status(r, st, target_word(t));
        return;
    }
    if (t == STORE_OWNER_GPU && (st = store_owner_at(r->store, key, at, &owner)) != GI_OK) {
        json_decref(items);
        reply_status(r, st, target_word(t));
        return;
    }
    body = json_pack("{s:o, s:I, s:n}", "items", items, "total", (json_int_t)json_array_size(items),
                     "next");
    if (owner) {
        char ts[32];
        gi_time_format(at, ts, sizeof ts);
        json_object_set_new(body, "owner", owner);
        json_object_set_new(body, "at", json_string(ts));
    }
    reply_json(r, 200, body);
}

void api_owner_unowned(struct req *r)
{
    static const char *const unsorted[] = {NULL};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    struct store_scope sc;
    int st;

    if (!req_page_or_reply(r, unsorted, &pg))
        return;
    who_scope(r, &sc);
    if ((st = store_owner_unowned(r->store, &sc, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "unowned GPUs");
        return;
    }
    reply_list(r, items, total, pg.offset);
}

/* ---- rules ---- */

/* Reads a rule body; create requires match and set. */
static bool rule_body_or_reply(struct req *r, const json_t *body, bool create,
                               struct store_rule *rule)
{
    static const char *const fields[] = {"match",          "set", "position", "enabled",
                                         "effective_from", NULL};
    static const char *const set_fields[] = {"team", "env", "pool", "cluster", "cloud", NULL};
    static const char *const match_fields[] = {"kind", "key", "value", NULL};
    const json_t *m = json_object_get(body, "match"), *set = json_object_get(body, "set");
    const json_t *en = json_object_get(body, "enabled");

    *rule = (struct store_rule){.position = -1, .enabled = -1};
    if (!json_known_or_reply(r, body, fields) ||
        !json_int_or_reply(r, body, "position", false, 0, 1000000, &rule->position) ||
        !json_time_or_reply(r, body, "effective_from", &rule->effective_from))
        return false;
    if (en && !json_is_boolean(en)) {
        reply_error(r, 400, "validation_failed", "enabled", "enabled must be true or false");
        return false;
    }
    if (en)
        rule->enabled = json_is_true(en);
    if (m || create) {
        if (!json_is_object(m)) {
            reply_error(r, 400, "validation_failed", "match",
                        "match must be an object {kind, key?, value}");
            return false;
        }
        if (!json_known_or_reply(r, m, match_fields) ||
            !json_str_or_reply(r, m, "kind", true, 32, &rule->match_kind) ||
            !json_str_or_reply(r, m, "key", false, 127, &rule->match_key) ||
            !json_str_or_reply(r, m, "value", true, 255, &rule->match_value))
            return false;
        rule->has_match = true;
    }
    if (set || create) {
        if (!json_is_object(set)) {
            reply_error(r, 400, "validation_failed", "set",
                        "set must be an object {team?, env?, pool?, cluster?, cloud?}");
            return false;
        }
        if (!json_known_or_reply(r, set, set_fields))
            return false;
        for (int f = 0; f < STORE_RULE_FIELDS; f++) {
            if (!json_str_or_reply(r, set, store_rule_set_names[f], false, STORE_DIM_NAME_MAX,
                                   &rule->set[f]))
                return false;
            if (rule->set[f] && !*rule->set[f])
                rule->set[f] = NULL;
        }
        rule->has_set = true;
    }
    return true;
}

static void rule_error_reply(struct req *r, int st, const struct store_owner_err *err)
{
    if (st == GI_INVALID)
        reply_error(r, 400, "validation_failed", err->field, "%s", err->message);
    else if (st == GI_CONFLICT)
        reply_error(r, 409, "conflict", err->field, "%s", err->message);
    else
        reply_status(r, st, "ownership rule");
}

void api_rules_list(struct req *r)
{
    json_t *items = NULL;
    int st = store_rule_list(r->store, &items);

    if (st != GI_OK)
        reply_status(r, st, "ownership rules");
    else
        reply_list(r, items, (int64_t)json_array_size(items), 0);
}

void api_rules_create(struct req *r)
{
    struct store_rule rule;
    struct store_owner_err err = {"", ""};
    json_t *body = NULL, *out = NULL;
    int st;

    if (!who_unconfined_or_reply(r, "an ownership rule") || !req_json_body_or_reply(r, &body))
        return;
    if (rule_body_or_reply(r, body, true, &rule)) {
        if ((st = store_rule_create(r->store, r->who.name, &rule, &out, &err)) != GI_OK)
            rule_error_reply(r, st, &err);
        else
            reply_json(r, 201, out);
    }
    json_decref(body);
}

void api_rules_get(struct req *r)
{
    json_t *out = NULL;
    int st = store_rule_get(r->store, r->id, &out);

    if (st != GI_OK)
        reply_status(r, st, "ownership rule");
    else
        reply_json(r, 200, out);
}

void api_rules_update(struct req *r)
{
    struct store_rule rule;
    struct store_owner_err err = {"", ""};
    json_t *body = NULL, *out = NULL;
    int st;

    if (!who_unconfined_or_reply(r, "an ownership rule") || !req_json_body_or_reply(r, &body))
        return;
    if (rule_body_or_reply(r, body, false, &rule)) {
        if ((st = store_rule_update(r->store, r->who.name, r->id, &rule, &out, &err)) != GI_OK)
            rule_error_reply(r, st, &err);
        else
            reply_json(r, 200, out);
    }
    json_decref(body);
}

void api_rules_delete(struct req *r)
{
    int st;

    if (!who_unconfined_or_reply(r, "an ownership rule"))
        return;
    st = store_rule_delete(r->store, r->who.name, r->id);

    if (st != GI_OK)
        reply_status(r, st, "ownership rule");
    else
        reply_no_content(r);
}

/* POST /api/v1/ownership-rules/dry-run: the GPUs a rule would match now
 * (the first 100, and how many). Writes nothing. */
void api_rules_dry_run(struct req *r)
{
    struct store_rule rule;
    struct store_owner_err err = {"", ""};
    json_t *body = NULL, *items = NULL;
    struct store_scope sc;
    int64_t total = 0;
    int st;

    if (!req_json_body_or_reply(r, &body))
        return;
    if (rule_body_or_reply(r, body, true, &rule)) {
        who_scope(r, &sc);
        st = store_rule_dry_run(r->store, &rule, &sc, 100, &items, &total, &err);
        if (st != GI_OK) {
            json_decref(items);
            rule_error_reply(r, st, &err);
        } else {
            reply_json(
                r, 200,
                json_pack("{s:o, s:I, s:n}", "items", items, "total", (json_int_t)total, "next"));
        }
    }
    json_decref(body);
}

/* ---- CSV import of assignments ---- */

#define OWNER_IMPORT_MAX_ROWS 100000

enum { COL_GPU, COL_HOST, COL_RES, COL_TEAM, COL_ENV, COL_POOL, COL_EFF, COL__COUNT };
static const char *const import_cols[COL__COUNT] = {"gpu_uuid", "host", "resource_id",   "team",
                                                    "env",      "pool", "effective_from"};

/* Checks one row into obj {target, key, team?, env?, pool?, eff}: exactly
 * one of gpu_uuid, host and resource_id; a present owner column sets the
 * field (an empty cell clears it), an absent one keeps it. */
static bool import_row(struct import_report *rep, const struct csv *c, const int *col, json_t *obj)
{
    const char *cell[COL__COUNT] = {0};
    int targets = 0, which = -1;
    int64_t t = 0;
    bool ok = true;

    for (int k = 0; k < COL__COUNT; k++)
        if (col[k] >= 0 && (size_t)col[k] < c->nfields)
            cell[k] = c->fields[col[k]];
    for (int k = COL_GPU; k <= COL_RES; k++)
        if (cell[k] && *cell[k]) {
            targets++;
            which = k;
        }
    if (targets != 1) {
        import_problem(rep, c->record_line, "gpu_uuid", "gpu_uuid",
                       "give exactly one of gpu_uuid, host and resource_id");
        return false;
    }
    if (which == COL_RES && gi_parse_int64(cell[COL_RES], 1, INT64_MAX, &t) != GI_OK) {
        import_problem(rep, c->record_line, "resource_id", "resource_id",
                       "resource_id must be a positive integer");
        ok = false;
    }
    for (int k = COL_TEAM; k <= COL_POOL; k++) {
        if (col[k] < 0)
            continue;
        if (cell[k] && strlen(cell[k]) > STORE_DIM_NAME_MAX) {
            import_problem(rep, c->record_line, import_cols[k], import_cols[k],
                           "at most 64 characters");
            ok = false;
        }
        json_object_set_new(obj, import_cols[k],
                            cell[k] && *cell[k] ? json_string(cell[k]) : json_null());
    }
    t = 0;
    if (cell[COL_EFF] && *cell[COL_EFF] && (gi_time_parse(cell[COL_EFF], &t) != GI_OK || t <= 0)) {
        import_problem(rep, c->record_line, "effective_from", "effective_from",
                       "effective_from must be an RFC 3339 time");
        ok = false;
    }
    json_object_set_new(obj, "target", json_integer(which));
    json_object_set_new(obj, "key", json_string(cell[which]));
    json_object_set_new(obj, "eff", json_integer(t));
    json_object_set_new(obj, "line", json_integer((json_int_t)c->record_line));
    return ok;
}

/* POST /api/v1/ownership/import: owner assignments from CSV, all or none;
 * ?dry_run=true reports what would happen and writes nothing. */
void api_owner_import(struct req *r)
{
    struct csv c = {0};
    struct import_report im = {0};
    json_t *objs = json_array(), *o;
    struct store_owner_row *rows = NULL;
    struct store_owner_err *errs = NULL;
    int *row_st = NULL, col[COL__COUNT], st;
    size_t n = 0, i;
    char buf[32];

    for (int k = 0; k < COL__COUNT; k++)
        col[k] = -1;
    /* its rows may name any GPU, host or resource: refused before the
     * body is read, as ownership rules are */
    if (!who_unconfined_or_reply(r, "an owner import") || !import_open_or_reply(r, &c, &im))
        goto cleanup;
    for (i = 0; i < json_array_size(im.header); i++) {
        const char *name = json_string_value(json_array_get(im.header, i));
        int k = 0;
        while (k < COL__COUNT && strcmp(name, import_cols[k]) != 0)
            k++;
        if (k == COL__COUNT)
            import_problem(&im, 1, import_column(&im, i, buf, sizeof buf), NULL,
                           "unknown column: the columns are gpu_uuid, host, resource_id, team, "
                           "env, pool, effective_from");
        else
            col[k] = (int)i;
    }
    while ((st = import_next_row_or_reply(r, &c, &im, OWNER_IMPORT_MAX_ROWS)) == 1) {
        json_t *obj = json_object();
        if (import_row(&im, &c, col, obj))
            json_array_append_new(objs, obj);
        else
            json_decref(obj);
    }
    if (st < 0 || !import_verdict_or_reply(r, &im))
        goto cleanup;
    n = json_array_size(objs);
    rows = calloc(n + 1, sizeof *rows);
    errs = calloc(n + 1, sizeof *errs);
    row_st = calloc(n + 1, sizeof *row_st);
    if (!rows || !errs || !row_st) {
        reply_error(r, 500, "internal", NULL, "out of memory");
        goto cleanup;
    }
    json_array_foreach(objs, i, o) {
        static const enum store_owner_target targets[3] = {STORE_OWNER_GPU, STORE_OWNER_HOST,
                                                           STORE_OWNER_RESOURCE};
        struct store_owner_set *set = &rows[i].set;
        rows[i].target = targets[json_integer_value(json_object_get(o, "target"))];
        rows[i].key = json_string_value(json_object_get(o, "key"));
        set->has_team = json_object_get(o, "team") != NULL;
        set->has_env = json_object_get(o, "env") != NULL;
        set->has_pool = json_object_get(o, "pool") != NULL;
        set->team = json_string_value(json_object_get(o, "team"));
        set->env = json_string_value(json_object_get(o, "env"));
        set->pool = json_string_value(json_object_get(o, "pool"));
        set->effective_from = json_integer_value(json_object_get(o, "eff"));
    }
    st = store_owner_import(r->store, r->who.name, rows, n, im.dry_run, row_st, errs);
    if (st == GI_INVALID || st == GI_NOT_FOUND || st == GI_CONFLICT) {
        json_array_foreach(objs, i, o) {
            size_t line = (size_t)json_integer_value(json_object_get(o, "line"));
            const char *target_col = import_cols[json_integer_value(json_object_get(o, "target"))];
            if (row_st[i] == GI_NOT_FOUND)
                import_problem(&im, line, target_col, target_col, "no such GPU, host or resource");
            else if (row_st[i] == GI_INVALID || row_st[i] == GI_CONFLICT)
                import_problem(&im, line, errs[i].field, errs[i].field, errs[i].message);
        }
        if (st == GI_INVALID)
            import_verdict_or_reply(r, &im);
        else
            import_conflict_reply(r, &im);
    } else if (st != GI_OK) {
        reply_status(r, st, "import");
    } else if (im.dry_run) {
        import_dry_run_reply(r, &im, json_pack("{s:I}", "would_import", (json_int_t)n));
    } else {
        reply_json(r, 201, json_pack("{s:I, s:b}", "imported", (json_int_t)n, "dry_run", 0));
    }
cleanup:
    free(rows);
    free(errs);
    free(row_st);
    csv_free(&c);
    import_report_free(&im);
    json_decref(objs);
}
