/* Credentials: API tokens (their scope and the source they report as),
 * users with their password hashes, and browser sessions. */
#include "store/store_int.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define STATEMENTS(X)                                                                              \
    X(TOKEN_ADD, "INSERT INTO tokens (name, role, hash, created_at) VALUES (:name, :role, :hash, " \
                 ":now) RETURNING id")                                                             \
    X(TOKEN_BY_HASH,                                                                               \
      "SELECT id, name, role, revoked_at, last_used_at, source_id, hosts, limit_cluster, "         \
      "datacenters FROM tokens WHERE hash = :hash")                                                \
    X(TOKEN_TOUCH, "UPDATE tokens SET last_used_at = :now WHERE id = :id")                         \
    X(TOKEN_LIST, "SELECT id, name, role, created_at, last_used_at, revoked_at, hosts, "           \
                  "limit_cluster, datacenters FROM tokens ORDER BY id")                            \
    X(TOKEN_GET, "SELECT id, name, role, created_at, last_used_at, revoked_at FROM tokens WHERE "  \
                 "id = :id")                                                                       \
    X(TOKEN_ONE, "SELECT id, name, role, created_at, last_used_at, revoked_at, hosts, "            \
                 "limit_cluster, datacenters FROM tokens WHERE id = :id")                          \
    X(TOKEN_REVOKE, "UPDATE tokens SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL")   \
    X(USER_UPSERT, "INSERT INTO users (name, role, password_hash, created_at) VALUES (:name, "     \
                   ":role, :hash, :now) ON CONFLICT (name) DO UPDATE SET role = excluded.role, "   \
                   "password_hash = excluded.password_hash")                                       \
    X(USER_GET, "SELECT id, role, password_hash FROM users WHERE name = :name")                    \
    X(SESSION_ADD, "INSERT INTO sessions (hash, user_id, created_at, expires_at) VALUES (:hash, "  \
                   ":uid, :now, :exp)")                                                            \
    X(SESSION_AUTH, "SELECT u.name, u.role FROM sessions s JOIN users u ON u.id = s.user_id "      \
                    "WHERE s.hash = :hash AND s.expires_at > :now")                                \
    X(SESSION_DEL, "DELETE FROM sessions WHERE hash = :hash OR expires_at <= :now")                \
    X(SESSION_DEL_USER,                                                                            \
      "DELETE FROM sessions WHERE user_id IN (SELECT id FROM users WHERE name = "                  \
      ":name)")                                                                                    \
    X(TOKEN_SOURCE, "UPDATE tokens SET source_id = :sid WHERE id = :id")                           \
    X(TOKEN_SCOPE, "UPDATE tokens SET hosts = :hosts, limit_cluster = :cluster WHERE id = :id")    \
    X(TOKEN_DCS, "UPDATE tokens SET datacenters = :dcs WHERE id = :id")                            \
    X(TOKEN_DCS_GET, "SELECT datacenters FROM tokens WHERE id = :id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static int collect_with(struct store *st, enum stmt_id id, const char *name, int64_t v,
                        json_t **items)
{
    return db_collect_with(st, stmt_sql[id], name, v, items);
}

int store_token_create(struct store *st, const char *actor, const char *name, enum gi_role role,
                       const char *hash, int64_t *id_out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *after = NULL;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_ADD)))
        goto cleanup;
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":role", gi_role_name(role));
    db_bind_text(s, ":hash", hash);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_fetch_int(c, s, id_out)) != GI_OK)
        goto cleanup;
    after = json_pack("{s:s, s:s}", "name", name, "role", gi_role_name(role));
    rc = db_audit(c, actor, "create", "token", *id_out, NULL, after);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(after);
    db_conn_put(st, c);
    return rc;
}

int store_token_ensure(struct store *st, const char *name, enum gi_role role, const char *hash)
{
    struct gi_principal p;
    int64_t id;
    int rc = store_token_auth(st, hash, &p);

    /* Hashes are unique, so a create that conflicts met the same token,
     * revoked. */
    if (rc == GI_NOT_FOUND)
        return store_token_create(st, "system", name, role, hash, &id);
    return rc;
}

/* Reads the stored data-center scope ("3,7") into out; false when it is
 * not a list of at most GI_TOKEN_DCS_MAX ids (then the token is refused
 * rather than left unconfined). */
static bool dcs_read(const char *list, struct gi_principal *out)
{
    const char *p = list;

    out->n_dcs = 0;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char num[24];
        if (n == 0 || n >= sizeof num || out->n_dcs == GI_TOKEN_DCS_MAX)
            return false;
        memcpy(num, p, n);
        num[n] = '\0';
        if (gi_parse_int64(num, 1, INT64_MAX, &out->dcs[out->n_dcs]) != GI_OK)
            return false;
        out->n_dcs++;
        p += n + (e ? 1 : 0);
        if (e && !*p)
            return false;
    }
    return out->n_dcs > 0;
}

/* Verified tokens, kept for TOKEN_KEEP_MS so that a request need not
 * borrow a connection and make a round trip to the database just to find
 * its token again. Only tokens found valid are kept. Every change to a
 * token made through this process (revocation, scope, data centers,
 * source) moves token_gen, which drops every kept entry at once, so this
 * process honours it at its next request; a change made through another
 * replica is seen once the entry is older than TOKEN_KEEP_MS. An entry
 * read before a change is kept under the generation it was read at, so a
 * lookup racing a revocation can never keep the old row. */
#define TOKEN_KEEP_N 64
#define TOKEN_KEEP_MS 1000
#define TOKEN_HASH_MAX 64 /* the hex of a 32-byte hash */

struct token_kept {
    const struct store *st;
    char hash[TOKEN_HASH_MAX + 1];
    uint64_t gen;
    int64_t read_ms; /* monotonic */
    struct gi_principal who;
};

static pthread_mutex_t token_mu = PTHREAD_MUTEX_INITIALIZER;
static struct token_kept token_kept[TOKEN_KEEP_N];
static size_t token_next; /* the slot replaced next */
static uint64_t token_gen = 1;

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Every kept token is dropped (after a change to any token). */
static void token_changed(void)
{
    pthread_mutex_lock(&token_mu);
    token_gen++;
    pthread_mutex_unlock(&token_mu);
}

void store_token_forget(const struct store *st)
{
    pthread_mutex_lock(&token_mu);
    for (size_t i = 0; i < TOKEN_KEEP_N; i++)
        if (token_kept[i].st == st)
            token_kept[i].st = NULL;
    pthread_mutex_unlock(&token_mu);
}

/* The kept principal of hash into out; false when none is fresh. *gen
 * receives the generation a lookup made now is read at. */
static bool token_kept_get(const struct store *st, const char *hash, struct gi_principal *out,
                           uint64_t *gen)
{
    int64_t now = mono_ms();
    bool hit = false;

    pthread_mutex_lock(&token_mu);
    *gen = token_gen;
    for (size_t i = 0; i < TOKEN_KEEP_N && !hit; i++) {
        const struct token_kept *e = &token_kept[i];
        if (e->st == st && e->gen == token_gen && now - e->read_ms < TOKEN_KEEP_MS &&
            strcmp(e->hash, hash) == 0) {
            *out = e->who;
            hit = true;
        }
    }
    pthread_mutex_unlock(&token_mu);
    return hit;
}

static void token_kept_put(const struct store *st, const char *hash, const struct gi_principal *who,
                           uint64_t gen, int64_t read_ms)
{
    struct token_kept *e = NULL;

    if (strlen(hash) > TOKEN_HASH_MAX)
        return;
    pthread_mutex_lock(&token_mu);
    if (gen == token_gen) {
        for (size_t i = 0; i < TOKEN_KEEP_N && !e; i++)
            if (token_kept[i].st == st && strcmp(token_kept[i].hash, hash) == 0)
                e = &token_kept[i];
        if (e == NULL) {
            e = &token_kept[token_next];
            token_next = (token_next + 1) % TOKEN_KEEP_N;
        }
        e->st = st;
        gi_strlcpy(e->hash, hash, sizeof e->hash);
        e->gen = gen;
        e->read_ms = read_ms;
        e->who = *who;
    }
    pthread_mutex_unlock(&token_mu);
}

static int token_read(struct store *st, const char *hash, struct gi_principal *out);

int store_token_auth(struct store *st, const char *hash, struct gi_principal *out)
{
    uint64_t gen;
    int64_t read_ms = mono_ms();
    int rc;

    if (token_kept_get(st, hash, out, &gen))
        return GI_OK;
    if ((rc = token_read(st, hash, out)) == GI_OK)
        token_kept_put(st, hash, out, gen, read_ms);
    return rc;
}

/* The token of hash as the database holds it now. */
static int token_read(struct store *st, const char *hash, struct gi_principal *out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_TOKEN_BY_HASH);
    int64_t now = gi_now(), id = 0, last = 0;
    int rc = GI_INTERNAL, step;

    if (!s)
        goto cleanup;
    db_bind_text(s, ":hash", hash);
    step = db_step(c, s);
    if (step != DB_ROW) {
        rc = step == DB_DONE ? GI_NOT_FOUND : db_status(step);
        db_reset(s);
        goto cleanup;
    }
    rc = GI_OK;
    id = db_col_int(s, 0);
    gi_strlcpy(out->name, db_col_text(s, 1), sizeof out->name);
    if (gi_role_parse(db_col_text(s, 2), &out->role) != GI_OK)
        rc = GI_NOT_FOUND;
    if (!db_col_is_null(s, 3))
        rc = GI_NOT_FOUND; /* revoked */
    last = db_col_int(s, 4);
    out->source_id = db_col_int(s, 5);
    out->hosts[0] = out->cluster[0] = '\0';
    if (!db_col_is_null(s, 6))
        gi_strlcpy(out->hosts, db_col_text(s, 6), sizeof out->hosts);
    if (!db_col_is_null(s, 7))
        gi_strlcpy(out->cluster, db_col_text(s, 7), sizeof out->cluster);
    out->n_dcs = 0;
    if (!db_col_is_null(s, 8) && !dcs_read(db_col_text(s, 8), out))
        rc = GI_NOT_FOUND; /* a scope it cannot read: refused, not widened */
    out->token_id = id;
    db_reset(s);
    /* Record use at most once a minute so reads stay reads. */
    if (rc == GI_OK && now - last >= 60 && (s = prep(c, ST_TOKEN_TOUCH)) != NULL) {
        int t;
        db_bind_int(s, ":now", now);
        db_bind_int(s, ":id", id);
        /* a busy database (a long write in progress) is no fault: the
         * next use records it */
        if ((t = db_exec_done(c, s)) == GI_UNAVAILABLE || t == GI_RETRY)
            gi_info("token %lld: its last use not recorded now (the database is busy); its next "
                    "use records it",
                    (long long)id);
        else if (t != GI_OK)
            gi_warn("could not record use of token %lld: %s", (long long)id, gi_status_name(t));
    }
cleanup:
    db_conn_put(st, c);
    return rc;
}

/* datacenters as the API shows it: an array of ids, [] for every one */
static void dcs_doc(json_t *t)
{
    struct gi_principal p;
    json_t *a = json_array();
    const char *v = json_string_value(json_object_get(t, "datacenters"));

    if (v && dcs_read(v, &p))
        for (int k = 0; k < p.n_dcs; k++)
            json_array_append_new(a, json_integer(p.dcs[k]));
    json_object_set_new(t, "datacenters", a);
}

int store_token_list(struct store *st, json_t **items)
{
    json_t *t;
    size_t i;
    int rc = collect_with(st, ST_TOKEN_LIST, NULL, 0, items);

    if (rc != GI_OK)
        return rc;
    json_array_foreach(*items, i, t)
        dcs_doc(t);
    return GI_OK;
}

int store_token_get(struct store *st, int64_t id, json_t **out)
{
    json_t *items = NULL;
    int rc = collect_with(st, ST_TOKEN_ONE, ":id", id, &items);

    *out = NULL;
    if (rc == GI_OK && json_array_size(items) == 0)
        rc = GI_NOT_FOUND;
    if (rc == GI_OK) {
        *out = json_incref(json_array_get(items, 0));
        dcs_doc(*out);
    }
    json_decref(items);
    return rc;
}

int store_token_revoke(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL, *after = NULL;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_GET)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, &before)) != GI_OK)
        goto cleanup;
    if (!json_is_null(json_object_get(before, "revoked_at"))) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_REVOKE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    after = json_deep_copy(before);
    {
        char ts[32];
        gi_time_format(gi_now(), ts, sizeof ts);
        json_object_set_new(after, "revoked_at", json_string(ts));
    }
    rc = db_audit(c, actor, "revoke", "token", id, before, after);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(before);
    json_decref(after);
    token_changed();
    db_conn_put(st, c);
    return rc;
}

int store_user_set(struct store *st, const char *name, enum gi_role role, const char *pwhash)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    /* A new password or role ends the user's sessions, in the same
     * transaction, so no session outlives the credentials it was made
     * with. */
    if (!(s = prep(c, ST_SESSION_DEL_USER)))
        goto cleanup;
    db_bind_text(s, ":name", name);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_USER_UPSERT)))
        goto cleanup;
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":role", gi_role_name(role));
    db_bind_text(s, ":hash", pwhash);
    db_bind_int(s, ":now", gi_now());
    rc = db_exec_done(c, s);
cleanup:
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_user_get(struct store *st, const char *name, int64_t *id, enum gi_role *role,
                   char *pwhash, size_t len)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_USER_GET);
    int rc = GI_INTERNAL, step;

    if (s) {
        db_bind_text(s, ":name", name);
        step = db_step(c, s);
        if (step == DB_ROW) {
            *id = db_col_int(s, 0);
            rc = gi_role_parse(db_col_text(s, 1), role);
            gi_strlcpy(pwhash, db_col_text(s, 2), len);
        } else {
            rc = step == DB_DONE ? GI_NOT_FOUND : db_status(step);
        }
        db_reset(s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_session_create(struct store *st, const char *hash, int64_t user_id, int64_t expires_at)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    int64_t now = gi_now();
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    /* Expired sessions are pruned whenever one is made (SESSION_DEL with no
     * hash deletes only the expired ones). */
    if (!(s = prep(c, ST_SESSION_DEL)))
        goto cleanup;
    db_bind_text(s, ":hash", NULL);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SESSION_ADD)))
        goto cleanup;
    db_bind_text(s, ":hash", hash);
    db_bind_int(s, ":uid", user_id);
    db_bind_int(s, ":now", now);
    db_bind_int(s, ":exp", expires_at);
    rc = db_exec_done(c, s);
cleanup:
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_session_auth(struct store *st, const char *hash, struct gi_principal *out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_SESSION_AUTH);
    int rc = GI_INTERNAL, step;

    if (s) {
        db_bind_text(s, ":hash", hash);
        db_bind_int(s, ":now", gi_now());
        step = db_step(c, s);
        if (step == DB_ROW) {
            gi_strlcpy(out->name, db_col_text(s, 0), sizeof out->name);
            rc = gi_role_parse(db_col_text(s, 1), &out->role);
            out->token_id = 0;
            out->source_id = 0;
            out->n_dcs = 0;
        } else {
            rc = step == DB_DONE ? GI_NOT_FOUND : db_status(step);
        }
        db_reset(s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_session_delete(struct store *st, const char *hash)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_SESSION_DEL);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_text(s, ":hash", hash);
        db_bind_int(s, ":now", gi_now());
        rc = db_exec_done(c, s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_token_set_source(struct store *st, int64_t token_id, int64_t source_id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_TOKEN_SOURCE);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":id", token_id);
        db_bind_int(s, ":sid", source_id);
        rc = db_exec_done(c, s);
    }
    token_changed();
    db_conn_put(st, c);
    return rc;
}

int store_token_set_scope(struct store *st, int64_t token_id, const char *hosts,
                          const char *cluster)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_TOKEN_SCOPE);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":id", token_id);
        db_bind_opt_text(s, ":hosts", hosts);
        db_bind_opt_text(s, ":cluster", cluster);
        rc = db_exec_done(c, s);
    }
    token_changed();
    db_conn_put(st, c);
    return rc;
}

int store_token_set_datacenters(struct store *st, const char *actor, int64_t token_id,
                                const int64_t *dcs, int n)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *after = json_array(), *doc = NULL, *before = NULL;
    char list[GI_TOKEN_DCS_MAX * 21 + 1];
    size_t len = 0;
    int rc = db_tx_begin(c);

    list[0] = '\0';
    for (int i = 0; i < n && i < GI_TOKEN_DCS_MAX; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%lld", i ? "," : "", (long long)dcs[i]);
        if (w > 0)
            len += (size_t)w;
        json_array_append_new(after, json_integer(dcs[i]));
    }
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_DCS_GET)))
        goto cleanup;
    db_bind_int(s, ":id", token_id);
    if ((rc = db_fetch_one(c, s, &before)) != GI_OK)
        goto cleanup;
    dcs_doc(before);
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_DCS)))
        goto cleanup;
    db_bind_int(s, ":id", token_id);
    db_bind_opt_text(s, ":dcs", list[0] ? list : NULL);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    doc = json_pack("{s:O}", "datacenters", after);
    rc = db_audit(c, actor, "scope", "token", token_id, before, doc);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(after);
    json_decref(before);
    json_decref(doc);
    token_changed();
    db_conn_put(st, c);
    return rc;
}
