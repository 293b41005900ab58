/* Ownership mapping rules, kept as versions: an edit ends the version in
 * force at the new one's effective time, so past hours still resolve with
 * the rules then in force. See store.h. */
#include "store/owner_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>

#define RULE_COLS                                                                                  \
    "id, rule_id, position, match_kind, match_key, match_value, set_team, set_env, set_pool, "     \
    "set_cluster, set_cloud, enabled, effective_from, effective_to, created_at, created_by "

#define STATEMENTS(X)                                                                              \
    X(RULE_ADD, "INSERT INTO owner_rules (rule_id, position, match_kind, match_key, match_value, " \
                "set_team, set_env, set_pool, set_cluster, set_cloud, enabled, effective_from, "   \
                "created_at, created_by) VALUES (:rule, :pos, :kind, :key, :value, :team, :env, "  \
                ":pool, :cluster, :cloud, :enabled, :eff, :now, :actor) RETURNING id")             \
    X(RULE_SET_ID, "UPDATE owner_rules SET rule_id = id WHERE id = :id")                           \
    X(RULE_NEXT_POS, "SELECT COALESCE(MAX(position), 0) + 1 FROM owner_rules WHERE effective_to "  \
                     "IS NULL")                                                                    \
    X(RULE_CURRENT, "SELECT " RULE_COLS "FROM owner_rules WHERE rule_id = :rule AND "              \
                    "effective_to IS NULL")                                                        \
    X(RULE_VERSION, "SELECT " RULE_COLS "FROM owner_rules WHERE id = :id")                         \
    X(RULE_VERSIONS, "SELECT " RULE_COLS "FROM owner_rules WHERE rule_id = :rule ORDER BY "        \
                     "effective_from DESC, id DESC")                                               \
    X(RULE_LIST, "SELECT " RULE_COLS "FROM owner_rules WHERE effective_to IS NULL ORDER BY "       \
                 "position, rule_id")                                                              \
    X(RULE_CLOSE, "UPDATE owner_rules SET effective_to = :eff WHERE id = :id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

const char *const store_rule_set_names[STORE_RULE_FIELDS] = {"team", "env", "pool", "cluster",
                                                             "cloud"};

/* A version row as the API shows it: the rule's id, its version, match
 * and set as objects, times as RFC 3339. */
static json_t *rule_doc(json_t *row)
{
    json_t *d = json_object(), *m = json_object(), *set = json_object(), *v;
    char col[16];

    json_object_set(d, "id", json_object_get(row, "rule_id"));
    json_object_set(d, "version", json_object_get(row, "id"));
    json_object_set(d, "position", json_object_get(row, "position"));
    json_object_set(m, "kind", json_object_get(row, "match_kind"));
    if (json_is_string(v = json_object_get(row, "match_key")))
        json_object_set(m, "key", v);
    json_object_set(m, "value", json_object_get(row, "match_value"));
    for (int f = 0; f < STORE_RULE_FIELDS; f++) {
        snprintf(col, sizeof col, "set_%s", store_rule_set_names[f]);
        if (json_is_string(v = json_object_get(row, col)))
            json_object_set(set, store_rule_set_names[f], v);
    }
    json_object_set_new(d, "match", m);
    json_object_set_new(d, "set", set);
    json_object_set_new(d, "enabled",
                        json_boolean(json_integer_value(json_object_get(row, "enabled")) != 0));
    json_object_set(d, "effective_from", json_object_get(row, "effective_from"));
    json_object_set(d, "effective_to", json_object_get(row, "effective_to"));
    owner_time_member(d, "effective_from");
    owner_time_member(d, "effective_to");
    json_object_set(d, "created_at", json_object_get(row, "created_at"));
    json_object_set(d, "created_by", json_object_get(row, "created_by"));
    json_decref(row);
    return d;
}

/* One row of a statement as a rule document; GI_NOT_FOUND if none. */
static int rule_fetch(struct conn *c, struct db_stmt *s, json_t **out)
{
    json_t *row = NULL;
    int rc = db_fetch_one(c, s, &row);

    *out = rc == GI_OK ? rule_doc(row) : NULL;
    return rc;
}

static int rule_current(struct conn *c, int64_t rule_id, json_t **out)
{
    struct db_stmt *s = prep(c, ST_RULE_CURRENT);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":rule", rule_id);
    return rule_fetch(c, s, out);
}

/* Names the refused field and says why, printf-style. */
#define err_set(err, f, ...)                                                                       \
    (gi_strlcpy((err)->field, (f), sizeof(err)->field),                                            \
     snprintf((err)->message, sizeof(err)->message, __VA_ARGS__))

int owner_rule_check(struct conn *c, const struct store_rule *r, struct store_owner_err *err)
{
    bool keyed, consumer, any = false;
    int rc;

    if (!store_rule_kind_valid(r->match_kind)) {
        err_set(err, "match.kind", "%s",
                "match.kind must be k8s_namespace, node_label, host_pattern, cloud_tag, "
                "datacenter, source or slurm_account");
        return GI_INVALID;
    }
    keyed = strcmp(r->match_kind, "node_label") == 0 || strcmp(r->match_kind, "cloud_tag") == 0;
    consumer =
        strcmp(r->match_kind, "k8s_namespace") == 0 || strcmp(r->match_kind, "slurm_account") == 0;
    if (keyed && (!r->match_key || !*r->match_key)) {
        err_set(err, "match.key", "a %s rule needs match.key (the label or tag name)",
                r->match_kind);
        return GI_INVALID;
    }
    if (!keyed && r->match_key) {
        err_set(err, "match.key", "a %s rule takes no match.key", r->match_kind);
        return GI_INVALID;
    }
    if (!r->match_value || !*r->match_value) {
        err_set(err, "match.value", "%s", "match.value (a pattern) is required");
        return GI_INVALID;
    }
    for (int f = 0; f < STORE_RULE_FIELDS; f++) {
        char field[16];
        if (!r->set[f])
            continue;
        any = true;
        snprintf(field, sizeof field, "set.%s", store_rule_set_names[f]);
        if (consumer && f != 0) {
            err_set(err, field, "a %s rule maps consumers to a team: it sets only set.team",
                    r->match_kind);
            return GI_INVALID;
        }
        if ((rc = owner_dim_check(c, store_rule_set_names[f], r->set[f])) != GI_OK) {
            if (rc == GI_INVALID) {
                char msg[200];
                snprintf(msg, sizeof msg, "no %s named '%s'",
                         owner_field_kind(store_rule_set_names[f]), r->set[f]);
                err_set(err, field, "%s", msg);
            }
            return rc;
        }
    }
    if (!any) {
        err_set(err, "set", "%s", "set must name at least one of team, env, pool, cluster, cloud");
        return GI_INVALID;
    }
    return GI_OK;
}

/* Inserts one version; *version receives its id. rule_id 0: a new rule
 * (its id becomes the version's). */
static int version_add(struct conn *c, const char *actor, int64_t rule_id,
                       const struct store_rule *r, int64_t eff, int64_t *version)
{
    struct db_stmt *s = prep(c, ST_RULE_ADD);
    int rc;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":rule", rule_id);
    db_bind_int(s, ":pos", r->position);
    db_bind_text(s, ":kind", r->match_kind);
    db_bind_opt_text(s, ":key", r->match_key);
    db_bind_text(s, ":value", r->match_value);
    db_bind_text(s, ":team", r->set[0]);
    db_bind_text(s, ":env", r->set[1]);
    db_bind_text(s, ":pool", r->set[2]);
    db_bind_text(s, ":cluster", r->set[3]);
    db_bind_text(s, ":cloud", r->set[4]);
    db_bind_int(s, ":enabled", r->enabled != 0);
    db_bind_int(s, ":eff", eff);
    db_bind_int(s, ":now", gi_now());
    db_bind_text(s, ":actor", actor);
    if ((rc = db_fetch_int(c, s, version)) != GI_OK || rule_id != 0)
        return rc;
    if (!(s = prep(c, ST_RULE_SET_ID)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", *version);
    return db_exec_done(c, s);
}

/* After any rule change effective from eff: caches, usage, current owners. */
static int changed(struct conn *c, int64_t eff)
{
    int rc = owner_bump(c);
    if (rc == GI_OK)
        rc = usage_reattribute(c, 0, eff);
    if (rc == GI_OK)
        rc = owner_refresh(c, 0);
    return rc;
}

int store_rule_create(struct store *st, const char *actor, const struct store_rule *in,
                      json_t **out, struct store_owner_err *err)
{
    struct conn *c = db_conn_get(st);
    struct store_rule r = *in;
    struct db_stmt *s;
    int64_t version, eff = in->effective_from ? in->effective_from : gi_now();
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK || (rc = owner_rule_check(c, &r, err)) != GI_OK)
        goto cleanup;
    if (r.enabled < 0)
        r.enabled = 1;
    if (r.position < 0) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_RULE_NEXT_POS)) || (rc = db_fetch_int(c, s, &r.position)) != GI_OK)
            goto cleanup;
    }
    if ((rc = version_add(c, actor, 0, &r, eff, &version)) != GI_OK ||
        (rc = rule_current(c, version, out)) != GI_OK ||
        (rc = db_audit(c, actor, "create", "ownership_rule", version, NULL, *out)) != GI_OK)
        goto cleanup;
    rc = changed(c, eff);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    owner_touch();
    db_conn_put(st, c);
    return rc;
}

int store_rule_list(struct store *st, json_t **items)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_RULE_LIST);
    json_t *rows = NULL, *row;
    size_t i;
    int rc = GI_INTERNAL;

    *items = NULL;
    if (s && (rc = db_collect(c, s, &rows)) == GI_OK) {
        *items = json_array();
        json_array_foreach(rows, i, row)
            json_array_append_new(*items, rule_doc(json_incref(row)));
    }
    json_decref(rows);
    db_conn_put(st, c);
    return rc;
}

int store_rule_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *rows = NULL, *row, *hist;
    size_t i;
    int rc;

    *out = NULL;
    db_read_begin(c);
    if ((rc = rule_current(c, id, out)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RULE_VERSIONS)))
        goto cleanup;
    db_bind_int(s, ":rule", id);
    if ((rc = db_collect(c, s, &rows)) != GI_OK)
        goto cleanup;
    hist = json_array();
    json_array_foreach(rows, i, row)
        json_array_append_new(hist, rule_doc(json_incref(row)));
    json_object_set_new(*out, "history", hist);
cleanup:
    if (rc != GI_OK) {
        json_decref(*out);
        *out = NULL;
    }
    db_read_end(c);
    json_decref(rows);
    db_conn_put(st, c);
    return rc;
}

/* The rule in force as a store_rule (strings borrowed from doc). */
static void rule_from_doc(const json_t *doc, struct store_rule *r)
{
    const json_t *m = json_object_get(doc, "match"), *set = json_object_get(doc, "set");

    *r = (struct store_rule){0};
    r->match_kind = json_string_value(json_object_get(m, "kind"));
    r->match_key = json_string_value(json_object_get(m, "key"));
    r->match_value = json_string_value(json_object_get(m, "value"));
    for (int f = 0; f < STORE_RULE_FIELDS; f++)
        r->set[f] = json_string_value(json_object_get(set, store_rule_set_names[f]));
    r->position = json_integer_value(json_object_get(doc, "position"));
    r->enabled = json_is_true(json_object_get(doc, "enabled"));
}

/* The version in force's start, unix seconds. */
static int64_t doc_from(const json_t *doc)
{
    int64_t t = 0;
    const char *v = json_string_value(json_object_get(doc, "effective_from"));
    if (v && gi_time_parse(v, &t) != GI_OK)
        t = 0;
    return t;
}

/* Closes the open version `doc` at eff; GI_CONFLICT (err set) when eff
 * is before it began. */
static int version_close(struct conn *c, const json_t *doc, int64_t eff,
                         struct store_owner_err *err)
{
    struct db_stmt *s;

    if (eff < doc_from(doc)) {
        if (err)
            err_set(err, "effective_from",
                    "effective_from is before the version in force since %s; the past is not "
                    "rewritten",
                    json_string_value(json_object_get(doc, "effective_from")));
        return GI_CONFLICT;
    }
    if (!(s = prep(c, ST_RULE_CLOSE)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", json_integer_value(json_object_get(doc, "version")));
    db_bind_int(s, ":eff", eff);
    return db_exec_done(c, s);
}

int store_rule_update(struct store *st, const char *actor, int64_t id, const struct store_rule *in,
                      json_t **out, struct store_owner_err *err)
{
    struct conn *c = db_conn_get(st);
    struct store_rule r;
    json_t *before = NULL;
    int64_t version, eff = in->effective_from ? in->effective_from : gi_now();
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK || (rc = rule_current(c, id, &before)) != GI_OK)
        goto cleanup;
    rule_from_doc(before, &r);
    if (in->has_match) {
        r.match_kind = in->match_kind;
        r.match_key = in->match_key;
        r.match_value = in->match_value;
    }
    if (in->has_set)
        memcpy(r.set, in->set, sizeof r.set);
    if (in->position >= 0)
        r.position = in->position;
    if (in->enabled >= 0)
        r.enabled = in->enabled;
    if ((rc = owner_rule_check(c, &r, err)) != GI_OK ||
        (rc = version_close(c, before, eff, err)) != GI_OK ||
        (rc = version_add(c, actor, id, &r, eff, &version)) != GI_OK ||
        (rc = rule_current(c, id, out)) != GI_OK ||
        (rc = db_audit(c, actor, "update", "ownership_rule", id, before, *out)) != GI_OK)
        goto cleanup;
    rc = changed(c, eff);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    owner_touch();
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int store_rule_delete(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = db_conn_get(st);
    json_t *before = NULL;
    int64_t now = gi_now(), eff;
    int rc = db_tx_begin(c);

    if (rc != GI_OK || (rc = rule_current(c, id, &before)) != GI_OK)
        goto cleanup;
    /* A version still to come ends before it began. */
    eff = doc_from(before) > now ? doc_from(before) : now;
    if ((rc = version_close(c, before, eff, NULL)) != GI_OK ||
        (rc = db_audit(c, actor, "delete", "ownership_rule", id, before, NULL)) != GI_OK)
        goto cleanup;
    rc = changed(c, eff);
cleanup:
    rc = db_tx_end(c, rc);
    owner_touch();
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}
