/* Ownership: who owns each GPU at each time, the current owner
 * materialized on the GPU row, and the unowned list. See store_int.h and
 * store.h. Explicit assignments with their history, and what comes into
 * force when, are in owner_assign.c.
 *
 * Resolution runs once per GPU-hour in the rollups, so it caches per
 * thread: the rule list (every version, reloaded when owner_revision's
 * token changes, which every ownership write sets to a new random value)
 * and the last GPU's context and assignment spans. The token is read
 * again when this process has written ownership since (a generation
 * counter bumped inside and after every ownership write), on another
 * connection, or after a second; the context is kept for a second at
 * most under the same token and generation. Another replica's change is
 * thus seen within a second, this process's at once. */
#include "store/owner_int.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* An unowned GPU, or one a rule's dry run matches, is where its host is. */
#define UNOWNED_SCOPE STORE_SCOPE_IN("h.datacenter_id")

#define STATEMENTS(X)                                                                              \
    X(REV_GET, "SELECT token FROM owner_revision WHERE id = 1")                                    \
    X(REV_BUMP, "INSERT INTO owner_revision (id, rev, token) VALUES (1, 1, :token) ON CONFLICT "   \
                "(id) DO UPDATE SET rev = owner_revision.rev + 1, token = excluded.token")         \
    X(RULES_ALL, "SELECT id, rule_id, position, match_kind, match_key, match_value, set_team, "    \
                 "set_env, set_pool, set_cluster, set_cloud, enabled, effective_from, "            \
                 "effective_to FROM owner_rules ORDER BY position, rule_id, effective_from, id")   \
    X(GPU_CTX,                                                                                     \
      "SELECT g.team, g.env, g.cluster, g.source_id, s.name, h.id, h.hostname, COALESCE(d.name, "  \
      "rd.name), l.resource_id, r.attrs, r.metadata, n.labels, n.cloud, n.source_id, g.uuid, "     \
      "g.parent_uuid, (SELECT p.id FROM gpus p WHERE p.uuid = g.parent_uuid), ci.tags, "           \
      "ci.provider FROM gpus g "                                                                   \
      "LEFT JOIN sources s ON s.id = g.source_id LEFT JOIN hosts h ON h.id = g.host_id LEFT JOIN " \
      "datacenters d ON d.id = h.datacenter_id LEFT JOIN host_links l ON l.host_id = h.id LEFT "   \
      "JOIN resources r ON r.id = l.resource_id LEFT JOIN datacenters rd ON rd.id = "              \
      "r.datacenter_id LEFT JOIN k8s_nodes n ON n.source_id = (SELECT MIN(n2.source_id) FROM "     \
      "k8s_nodes n2 WHERE n2.hostname = h.hostname) AND n.hostname = h.hostname LEFT JOIN "        \
      "cloud_instances ci ON ci.id = (SELECT MIN(c2.id) FROM cloud_instances c2 WHERE c2.host_id " \
      "= h.id) WHERE g.id = :id")                                                                  \
    X(ASSIGN_SPANS,                                                                                \
      "SELECT target, target_id, team, env, pool, effective_from, effective_to "                   \
      "FROM owner_assignments WHERE (target = 'gpu' AND target_id IN (:gid, :pid)) OR "            \
      "(target = 'host' AND target_id = :hid) OR (target = 'resource' AND "                        \
      "target_id = :rid)")                                                                         \
    X(GPU_IDS, "SELECT id FROM gpus ORDER BY id")                                                  \
    X(GPU_IDS_IN,                                                                                  \
      "SELECT g.id FROM gpus g LEFT JOIN hosts h ON h.id = g.host_id WHERE " UNOWNED_SCOPE         \
      " ORDER BY g.id")                                                                            \
    X(GPU_OWNER_SET, "UPDATE gpus SET owner_team = :team, owner_env = :env, owner_pool = :pool, "  \
                     "owner_cluster = :cluster, owner_cloud = :cloud, owner_json = :json WHERE "   \
                     "id = :id")                                                                   \
    X(GPU_BY_UUID, "SELECT id FROM gpus WHERE uuid = :key")                                        \
    X(HOST_GPUS, "SELECT id FROM gpus WHERE host_id = :id")                                        \
    X(GPU_FAMILY, "SELECT id FROM gpus WHERE id = :id OR parent_uuid = (SELECT uuid FROM gpus "    \
                  "WHERE id = :id)")                                                               \
    X(HOSTNAME_GPUS, "SELECT g.id FROM gpus g JOIN hosts h ON h.id = g.host_id WHERE h.hostname "  \
                     "= :name")                                                                    \
    X(RES_GPUS, "SELECT g.id FROM gpus g JOIN host_links l ON l.host_id = g.host_id WHERE "        \
                "l.resource_id = :id")                                                             \
    X(UNOWNED_COUNT, "SELECT COUNT(*) FROM gpus g LEFT JOIN hosts h ON h.id = g.host_id WHERE "    \
                     "COALESCE(g.owner_team, g.team, '') = '' AND " UNOWNED_SCOPE)                 \
    X(UNOWNED, "SELECT g.uuid, h.hostname AS host, g.model, g.cluster, g.team, g.env, s.name AS "  \
               "source, g.source_id AS owner_source_id, g.owner_json FROM gpus g LEFT JOIN hosts " \
               "h ON h.id = g.host_id LEFT JOIN sources s ON s.id = g.source_id WHERE "            \
               "COALESCE(g.owner_team, g.team, '') = '' AND " UNOWNED_SCOPE                        \
               " ORDER BY h.hostname, g.idx, g.uuid " PAGE)

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* ---- the resolver's cache ---- */

enum rule_kind {
    RK_K8S_NAMESPACE,
    RK_NODE_LABEL,
    RK_HOST_PATTERN,
    RK_CLOUD_TAG,
    RK_DATACENTER,
    RK_SOURCE,
    RK_SLURM_ACCOUNT,
    RK__COUNT
};
static const char *const rule_kind_names[RK__COUNT] = {
    "k8s_namespace", "node_label", "host_pattern", "cloud_tag",
    "datacenter",    "source",     "slurm_account"};

enum { F_TEAM, F_ENV, F_POOL, F_CLUSTER, F_CLOUD, F__COUNT };

/* One rule version as the resolver uses it. */
struct rule_rec {
    int64_t rule_id, position, from, to; /* to 0: open */
    enum rule_kind kind;
    bool enabled;
    char key[128], value[256];
    char set[F__COUNT][OWNER_LEN];
};

/* Precedence levels of assignments: the GPU's own, its physical GPU's
 * (a MIG instance inherits), its host's, its inventory resource's. */
enum { LV_GPU, LV_PARENT, LV_HOST, LV_RESOURCE, LV__COUNT };

/* One assignment span of the cached GPU's GPU, parent GPU, host or
 * resource. */
struct span_rec {
    int level; /* LV_* */
    int64_t target_id, from, to;
    char set[3][OWNER_LEN];
};

/* What rules match a GPU against. */
struct gpu_ctx {
    int64_t gpu_id, source_id, host_id, resource_id, node_source_id;
    int64_t parent_id;      /* a MIG instance's physical GPU, else 0 */
    char src[3][OWNER_LEN]; /* the source's team, env, cluster */
    char uuid[96], parent_uuid[96], source[128], hostname[256], datacenter[128], node_cloud[64];
    char cloud[16];             /* the provider of the cloud instance the host is, "" none */
    json_t *node_labels, *tags; /* objects (may be NULL) */
};

struct owner_cache {
    char token[40];
    unsigned long gen;      /* owner_gen when the token was read */
    struct timespec synced; /* when it was read */
    const struct conn *conn;
    bool rules_loaded;
    struct rule_rec *rules;
    size_t nrules, caprules;
    /* The last GPU's context. */
    const struct conn *ctx_conn;
    char ctx_token[40];
    unsigned long ctx_gen;
    struct timespec ctx_time;
    bool ctx_valid;
    struct gpu_ctx ctx;
    struct span_rec *spans;
    size_t nspans, capspans;
};

/* Bumped by every ownership write of this process, inside its
 * transaction and again after it ends. */
static atomic_ulong owner_gen = 1;

void owner_touch(void) { atomic_fetch_add(&owner_gen, 1); }

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void ctx_clear(struct gpu_ctx *x)
{
    json_decref(x->node_labels);
    json_decref(x->tags);
    *x = (struct gpu_ctx){0};
}

static void cache_free(void *p)
{
    struct owner_cache *k = p;
    if (!k)
        return;
    ctx_clear(&k->ctx);
    free(k->rules);
    free(k->spans);
    free(k);
}

static void cache_key_make(void) { (void)pthread_key_create(&cache_key, cache_free); }

/* This thread's cache; NULL when out of memory. */
static struct owner_cache *cache_get(void)
{
    struct owner_cache *k;

    pthread_once(&cache_once, cache_key_make);
    k = pthread_getspecific(cache_key);
    if (!k && (k = calloc(1, sizeof *k)) && pthread_setspecific(cache_key, k) != 0) {
        free(k);
        k = NULL;
    }
    return k;
}

/* Copies column i (NULL: "") into dst. */
static void col_copy(struct db_stmt *s, int i, char *dst, size_t cap)
{
    const char *v = db_col_text(s, i);
    gi_strlcpy(dst, v ? v : "", cap);
}

/* The database's current revision token into tok ("" before any write). */
static int token_read(struct conn *c, char tok[40])
{
    struct db_stmt *s = prep(c, ST_REV_GET);
    int step;

    tok[0] = '\0';
    if (!s)
        return GI_INTERNAL;
    step = db_step(c, s);
    if (step == DB_ROW)
        col_copy(s, 0, tok, 40);
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

int owner_bump(struct conn *c)
{
    unsigned char raw[16];
    char tok[40];
    struct db_stmt *s;

    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return GI_INTERNAL;
    gi_hex(raw, sizeof raw, tok);
    owner_touch();
    if (!(s = prep(c, ST_REV_BUMP)))
        return GI_INTERNAL;
    db_bind_text(s, ":token", tok);
    return db_exec_done(c, s);
}

static int rule_kind_of(const char *name)
{
    for (int i = 0; i < RK__COUNT; i++)
        if (name && strcmp(name, rule_kind_names[i]) == 0)
            return i;
    return -1;
}

bool store_rule_kind_valid(const char *kind) { return rule_kind_of(kind) >= 0; }

/* Loads every rule version into k when the token says the list changed. */
static int rules_load(struct conn *c, struct owner_cache *k, const char *tok)
{
    struct db_stmt *s;
    int step;

    if (k->rules_loaded && strcmp(k->token, tok) == 0)
        return GI_OK;
    k->rules_loaded = false;
    k->nrules = 0;
    if (!(s = prep(c, ST_RULES_ALL)))
        return GI_INTERNAL;
    while ((step = db_step(c, s)) == DB_ROW) {
        struct rule_rec *r;
        int kind = rule_kind_of(db_col_text(s, 3));
        if (kind < 0)
            continue;
        if (k->nrules == k->caprules) {
            size_t cap = k->caprules ? k->caprules * 2 : 16;
            struct rule_rec *nr = realloc(k->rules, cap * sizeof *nr);
            if (!nr) {
                db_reset(s);
                return GI_INTERNAL;
            }
            k->rules = nr;
            k->caprules = cap;
        }
        r = &k->rules[k->nrules++];
        r->rule_id = db_col_int(s, 1);
        r->position = db_col_int(s, 2);
        r->kind = (enum rule_kind)kind;
        col_copy(s, 4, r->key, sizeof r->key);
        col_copy(s, 5, r->value, sizeof r->value);
        for (int f = 0; f < F__COUNT; f++)
            col_copy(s, 6 + f, r->set[f], OWNER_LEN);
        r->enabled = db_col_int(s, 11) != 0;
        r->from = db_col_int(s, 12);
        r->to = db_col_is_null(s, 13) ? 0 : db_col_int(s, 13);
    }
    db_reset(s);
    if (step != DB_DONE)
        return db_status(step);
    gi_strlcpy(k->token, tok, sizeof k->token);
    k->rules_loaded = true;
    return GI_OK;
}

/* The tags map of a JSON text holding an object with a "tags" object. */
static void tags_merge(json_t *into, const char *text)
{
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    json_t *t = json_object_get(o, "tags");
    if (json_is_object(t))
        json_object_update_missing(into, t);
    json_decref(o);
}

/* Loads GPU gpu_id's context and assignment spans into k (GI_NOT_FOUND
 * for an unknown GPU). */
static int ctx_load(struct conn *c, struct owner_cache *k, int64_t gpu_id, const char *tok)
{
    struct gpu_ctx *x = &k->ctx;
    struct db_stmt *s;
    struct timespec now;
    int step;

    clock_gettime(CLOCK_MONOTONIC, &now);
    if (k->ctx_valid && k->ctx_conn == c && x->gpu_id == gpu_id && k->ctx_gen == k->gen &&
        strcmp(k->ctx_token, tok) == 0 && now.tv_sec - k->ctx_time.tv_sec < 1)
        return GI_OK;
    k->ctx_valid = false;
    ctx_clear(x);
    k->nspans = 0;
    if (!(s = prep(c, ST_GPU_CTX)))
        return GI_INTERNAL;
    db_bind_int(s, ":id", gpu_id);
    step = db_step(c, s);
    if (step != DB_ROW) {
        db_reset(s);
        return step == DB_DONE ? GI_NOT_FOUND : db_status(step);
    }
    x->gpu_id = gpu_id;
    for (int f = 0; f < 3; f++)
        col_copy(s, f, x->src[f], OWNER_LEN);
    x->source_id = db_col_int(s, 3);
    col_copy(s, 4, x->source, sizeof x->source);
    x->host_id = db_col_int(s, 5);
    col_copy(s, 6, x->hostname, sizeof x->hostname);
    col_copy(s, 7, x->datacenter, sizeof x->datacenter);
    x->resource_id = db_col_int(s, 8);
    x->tags = json_object();
    tags_merge(x->tags, db_col_text(s, 10));
    tags_merge(x->tags, db_col_text(s, 9));
    if (db_col_text(s, 11))
        x->node_labels = json_loads(db_col_text(s, 11), 0, NULL);
    col_copy(s, 12, x->node_cloud, sizeof x->node_cloud);
    x->node_source_id = db_col_int(s, 13);
    col_copy(s, 14, x->uuid, sizeof x->uuid);
    col_copy(s, 15, x->parent_uuid, sizeof x->parent_uuid);
    x->parent_id = db_col_int(s, 16);
    /* The tags of the cloud instance the host is (after the inventory's). */
    if (db_col_text(s, 17)) {
        json_t *ct = json_loads(db_col_text(s, 17), 0, NULL);
        if (json_is_object(ct))
            json_object_update_missing(x->tags, ct);
        json_decref(ct);
    }
    col_copy(s, 18, x->cloud, sizeof x->cloud);
    db_reset(s);

    if (!(s = prep(c, ST_ASSIGN_SPANS)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", gpu_id);
    db_bind_int(s, ":pid", x->parent_id);
    db_bind_int(s, ":hid", x->host_id);
    db_bind_int(s, ":rid", x->resource_id);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *t = db_col_text(s, 0);
        struct span_rec *sp;
        if (k->nspans == k->capspans) {
            size_t cap = k->capspans ? k->capspans * 2 : 8;
            struct span_rec *ns = realloc(k->spans, cap * sizeof *ns);
            if (!ns) {
                db_reset(s);
                return GI_INTERNAL;
            }
            k->spans = ns;
            k->capspans = cap;
        }
        sp = &k->spans[k->nspans++];
        sp->target_id = db_col_int(s, 1);
        sp->level = strcmp(t, "gpu") != 0     ? (strcmp(t, "host") == 0 ? LV_HOST : LV_RESOURCE)
                    : sp->target_id == gpu_id ? LV_GPU
                                              : LV_PARENT;
        for (int f = 0; f < 3; f++)
            col_copy(s, 2 + f, sp->set[f], OWNER_LEN);
        sp->from = db_col_int(s, 5);
        sp->to = db_col_is_null(s, 6) ? 0 : db_col_int(s, 6);
    }
    db_reset(s);
    if (step != DB_DONE)
        return db_status(step);
    k->ctx_conn = c;
    k->ctx_gen = k->gen;
    gi_strlcpy(k->ctx_token, tok, sizeof k->ctx_token);
    k->ctx_time = now;
    k->ctx_valid = true;
    return GI_OK;
}

/* Whether s matches the glob p: '*' any run, '?' any one byte, other
 * bytes themselves ignoring ASCII case. Backtracks only to the last '*'. */
static bool glob_match(const char *p, const char *s)
{
    const char *star = NULL, *resume = NULL;

    while (*s) {
        if (*p == '*') {
            star = p++;
            resume = s;
        } else if (*p == '?' || (*p && tolower((unsigned char)*p) == tolower((unsigned char)*s))) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

static bool glob_ok(const char *pattern, const char *s)
{
    return s && *s && glob_match(pattern, s);
}

static bool label_ok(const json_t *labels, const char *key, const char *pattern)
{
    return glob_ok(pattern, json_string_value(json_object_get(labels, key)));
}

/* Whether rule r matches the GPU of context x. Consumer rules
 * (k8s_namespace, slurm_account) never decide a GPU's owner. */
static bool rule_matches(const struct rule_rec *r, const struct gpu_ctx *x)
{
    switch (r->kind) {
    case RK_HOST_PATTERN:
        return glob_ok(r->value, x->hostname);
    case RK_DATACENTER:
        return glob_ok(r->value, x->datacenter);
    case RK_SOURCE:
        return glob_ok(r->value, x->source);
    case RK_NODE_LABEL:
        return label_ok(x->node_labels, r->key, r->value);
    case RK_CLOUD_TAG:
        return label_ok(x->tags, r->key, r->value) || label_ok(x->node_labels, r->key, r->value);
    default:
        return false;
    }
}

static bool in_force(int64_t from, int64_t to, int64_t at)
{
    return from <= at && (to == 0 || at < to);
}

static void decide(char *field, char *by, const char *value, const char *why)
{
    gi_strlcpy(field, value, OWNER_LEN);
    gi_strlcpy(by, why, OWNER_BY_LEN);
}

/* Resolves with the context and rules already in k. */
static void resolve_cached(const struct owner_cache *k, int64_t at, struct owner_fields *out)
{
    static const char *const levels[LV__COUNT] = {"gpu", "gpu", "host", "resource"};
    const struct gpu_ctx *x = &k->ctx;
    char *val[F__COUNT] = {out->team, out->env, out->pool, out->cluster, out->cloud};
    char *by[F__COUNT] = {out->team_by, out->env_by, out->pool_by, out->cluster_by, out->cloud_by};

    *out = (struct owner_fields){0};
    char why[OWNER_BY_LEN];

    for (int level = 0; level < LV__COUNT; level++) {
        for (size_t i = 0; i < k->nspans; i++) {
            const struct span_rec *sp = &k->spans[i];
            if (sp->level != level || !in_force(sp->from, sp->to, at))
                continue;
            snprintf(why, sizeof why, "assignment:%s:%lld", levels[level],
                     (long long)sp->target_id);
            for (int f = 0; f < 3; f++)
                if (!val[f][0] && sp->set[f][0])
                    decide(val[f], by[f], sp->set[f], why);
        }
    }
    for (size_t i = 0; i < k->nrules; i++) {
        const struct rule_rec *r = &k->rules[i];
        bool wanted = false, matched;
        if (!r->enabled || !in_force(r->from, r->to, at))
            continue;
        for (int f = 0; f < F__COUNT; f++)
            wanted |= !val[f][0] && r->set[f][0];
        if (!wanted)
            continue;
        matched = rule_matches(r, x);
        snprintf(why, sizeof why, "rule:%lld", (long long)r->rule_id);
        for (int f = 0; matched && f < F__COUNT; f++)
            if (!val[f][0] && r->set[f][0])
                decide(val[f], by[f], r->set[f], why);
    }
    snprintf(why, sizeof why, "source:%lld", (long long)x->source_id);
    for (int f = 0; f < 3; f++) {
        int slot = f == 2 ? F_CLUSTER : f;
        if (!val[slot][0] && x->src[f][0])
            decide(val[slot], by[slot], x->src[f], why);
    }
    snprintf(why, sizeof why, "source:%lld", (long long)x->node_source_id);
    if (!val[F_CLOUD][0] && x->node_cloud[0])
        decide(val[F_CLOUD], by[F_CLOUD], x->node_cloud, why);
    snprintf(why, sizeof why, "cloud:%s", x->cloud);
    if (!val[F_CLOUD][0] && x->cloud[0])
        decide(val[F_CLOUD], by[F_CLOUD], x->cloud, why);
}

/* Brings k's rule list up to date (see the file's head). */
static int cache_sync(struct conn *c, struct owner_cache *k)
{
    unsigned long g = atomic_load(&owner_gen);
    struct timespec now;
    char tok[40];
    int rc;

    clock_gettime(CLOCK_MONOTONIC, &now);
    if (k->rules_loaded && k->gen == g && k->conn == c && now.tv_sec - k->synced.tv_sec < 1)
        return GI_OK;
    if ((rc = token_read(c, tok)) != GI_OK)
        return rc;
    if (k->gen != g)
        k->rules_loaded = false;
    if ((rc = rules_load(c, k, tok)) != GI_OK)
        return rc;
    k->gen = g;
    k->conn = c;
    k->synced = now;
    return GI_OK;
}

int owner_resolve(struct conn *c, int64_t gpu_id, int64_t at, struct owner_fields *out)
{
    struct owner_cache *k = cache_get();
    int rc;

    *out = (struct owner_fields){0};
    if (!k)
        return GI_INTERNAL;
    if ((rc = cache_sync(c, k)) != GI_OK || (rc = ctx_load(c, k, gpu_id, k->token)) != GI_OK)
        return rc;
    resolve_cached(k, at, out);
    return GI_OK;
}

int owner_consumer_team(struct conn *c, const char *kind, const char *key, int64_t at, char *team,
                        size_t len)
{
    struct owner_cache *k = cache_get();
    enum rule_kind want;
    int rc;

    if (len)
        team[0] = '\0';
    if (!k)
        return GI_INTERNAL;
    if (strcmp(kind, "k8s") == 0)
        want = RK_K8S_NAMESPACE;
    else if (strcmp(kind, "slurm") == 0)
        want = RK_SLURM_ACCOUNT;
    else
        return GI_OK;
    if ((rc = cache_sync(c, k)) != GI_OK)
        return rc;
    for (size_t i = 0; i < k->nrules; i++) {
        const struct rule_rec *r = &k->rules[i];
        if (r->kind == want && r->enabled && in_force(r->from, r->to, at) && r->set[F_TEAM][0] &&
            glob_ok(r->value, key)) {
            gi_strlcpy(team, r->set[F_TEAM], len);
            break;
        }
    }
    return GI_OK;
}

/* ---- the owner as JSON, and its materialized copy ---- */

static const char *const field_names[F__COUNT] = {"team", "env", "pool", "cluster", "cloud"};

/* The owner as {"team":{"value","by"[,"parent"]},...}; a field that a MIG
 * instance inherits from its physical GPU's assignment (x's parent) names
 * that GPU's UUID in "parent". */
static json_t *owner_json(const struct owner_fields *o, const struct gpu_ctx *x)
{
    const char *val[F__COUNT] = {o->team, o->env, o->pool, o->cluster, o->cloud};
    const char *by[F__COUNT] = {o->team_by, o->env_by, o->pool_by, o->cluster_by, o->cloud_by};
    json_t *j = json_object();
    char inherited[OWNER_BY_LEN] = "";

    if (x && x->parent_id > 0)
        snprintf(inherited, sizeof inherited, "assignment:gpu:%lld", (long long)x->parent_id);
    for (int f = 0; f < F__COUNT; f++) {
        json_t *fo = val[f][0] ? json_pack("{s:s, s:s}", "value", val[f], "by", by[f])
                               : json_pack("{s:n, s:n}", "value", "by");
        if (val[f][0] && inherited[0] && strcmp(by[f], inherited) == 0)
            json_object_set_new(fo, "parent", json_string(x->parent_uuid));
        json_object_set_new(j, field_names[f], fo);
    }
    return j;
}

/* A field decided by an assignment or rule, else NULL (the source's
 * default, read live from the GPU row). */
static const char *decided(const char *v, const char *by)
{
    return v[0] && strncmp(by, "source:", 7) != 0 ? v : NULL;
}

int owner_refresh_at(struct conn *c, int64_t gpu_id, int64_t now)
{
    struct owner_cache *k = cache_get();
    struct owner_fields o;
    struct db_stmt *s;
    json_t *j;
    int rc;

    /* The GPU may just have been created or moved: read its context and
     * the token anew (this may be another store on a reused connection). */
    if (k) {
        k->ctx_valid = false;
        k->synced = (struct timespec){0};
    }
    if ((rc = owner_resolve(c, gpu_id, now, &o)) != GI_OK)
        return rc == GI_NOT_FOUND ? GI_OK : rc;
    if (!(s = prep(c, ST_GPU_OWNER_SET)))
        return GI_INTERNAL;
    j = owner_json(&o, &k->ctx);
    db_bind_int(s, ":id", gpu_id);
    db_bind_text(s, ":team", decided(o.team, o.team_by));
    db_bind_text(s, ":env", decided(o.env, o.env_by));
    db_bind_text(s, ":pool", decided(o.pool, o.pool_by));
    db_bind_text(s, ":cluster", decided(o.cluster, o.cluster_by));
    db_bind_text(s, ":cloud", decided(o.cloud, o.cloud_by));
    db_bind_json(s, ":json", j);
    rc = db_exec_done(c, s);
    json_decref(j);
    return rc;
}

/* The ids a one-integer-parameter statement returns (caller frees). */
static int collect_ids_in(struct conn *c, enum stmt_id id, int64_t param,
                          const struct store_scope *sc, int64_t **ids, size_t *n)
{
    struct db_stmt *s = prep(c, id);
    size_t cap = 0;
    int step;

    *ids = NULL;
    *n = 0;
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", param);
    db_bind_scope(s, sc);
    while ((step = db_step(c, s)) == DB_ROW) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            int64_t *ni = realloc(*ids, nc * sizeof *ni);
            if (!ni) {
                db_reset(s);
                return GI_INTERNAL;
            }
            *ids = ni;
            cap = nc;
        }
        (*ids)[(*n)++] = db_col_int(s, 0);
    }
    db_reset(s);
    return step == DB_DONE ? GI_OK : db_status(step);
}

static int collect_ids(struct conn *c, enum stmt_id id, int64_t param, int64_t **ids, size_t *n)
{
    return collect_ids_in(c, id, param, NULL, ids, n);
}

int owner_refresh(struct conn *c, int64_t gpu_id)
{
    int64_t now = gi_now(), *ids = NULL;
    size_t n = 0;
    int rc;

    if (gpu_id != 0)
        return owner_refresh_at(c, gpu_id, now);
    if ((rc = collect_ids(c, ST_GPU_IDS, 0, &ids, &n)) == GI_OK)
        for (size_t i = 0; i < n && rc == GI_OK; i++)
            rc = owner_refresh_at(c, ids[i], now);
    free(ids);
    return rc;
}

int owner_gpu_ids(struct conn *c, int64_t **ids, size_t *n)
{
    return collect_ids(c, ST_GPU_IDS, 0, ids, n);
}

int owner_affected_gpus(struct conn *c, enum store_owner_target t, int64_t tid, int64_t **ids,
                        size_t *n)
{
    return collect_ids(c,
                       t == STORE_OWNER_GPU    ? ST_GPU_FAMILY
                       : t == STORE_OWNER_HOST ? ST_HOST_GPUS
                                               : ST_RES_GPUS,
                       tid, ids, n);
}

/* Recomputes the current owner of the GPUs statement `id` returns for
 * param (or text, when not NULL, bound as :name) and re-attributes their
 * usage from `from`. */
static int refresh_set(struct conn *c, enum stmt_id id, int64_t param, const char *text,
                       int64_t from)
{
    int64_t now = gi_now(), *ids = NULL;
    size_t n = 0, cap = 0;
    struct db_stmt *s;
    int rc = GI_OK, step;

    if (!text)
        rc = collect_ids(c, id, param, &ids, &n);
    else if (!(s = prep(c, id))) {
        rc = GI_INTERNAL;
    } else {
        db_bind_text(s, ":name", text);
        while (rc == GI_OK && (step = db_step(c, s)) == DB_ROW) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                int64_t *ni = realloc(ids, nc * sizeof *ni);
                if (!ni) {
                    rc = GI_INTERNAL;
                    break;
                }
                ids = ni;
                cap = nc;
            }
            ids[n++] = db_col_int(s, 0);
        }
        db_reset(s);
        if (rc == GI_OK && step != DB_DONE)
            rc = db_status(step);
    }
    for (size_t i = 0; i < n && rc == GI_OK; i++)
        if ((rc = usage_reattribute(c, ids[i], from)) == GI_OK)
            rc = owner_refresh_at(c, ids[i], now);
    free(ids);
    return rc;
}

int owner_host_changed(struct conn *c, int64_t host_id, int64_t from)
{
    return host_id > 0 ? refresh_set(c, ST_HOST_GPUS, host_id, NULL, from) : GI_OK;
}

int owner_resource_changed(struct conn *c, int64_t resource_id, int64_t from)
{
    return resource_id > 0 ? refresh_set(c, ST_RES_GPUS, resource_id, NULL, from) : GI_OK;
}

int owner_hostname_changed(struct conn *c, const char *hostname, int64_t from)
{
    return hostname && *hostname ? refresh_set(c, ST_HOSTNAME_GPUS, 0, hostname, from) : GI_OK;
}

void owner_doc(json_t *g)
{
    static const char *const live[3] = {"team", "env", "cluster"};
    json_t *stored = json_object_get(g, "owner_json");
    json_t *o = json_is_object(stored) ? json_deep_copy(stored) : json_object();
    json_int_t sid = json_integer_value(json_object_get(g, "owner_source_id"));

    for (int f = 0; f < F__COUNT; f++)
        if (!json_is_object(json_object_get(o, field_names[f])))
            json_object_set_new(o, field_names[f], json_pack("{s:n, s:n}", "value", "by"));
    /* The source's defaults are read live: a source may change them. */
    for (int f = 0; f < 3; f++) {
        json_t *fo = json_object_get(o, live[f]);
        const char *by = json_string_value(json_object_get(fo, "by"));
        const char *v = json_string_value(json_object_get(g, live[f]));
        char b[OWNER_BY_LEN];
        if (by && strncmp(by, "source:", 7) != 0)
            continue;
        if (v && *v) {
            snprintf(b, sizeof b, "source:%lld", (long long)sid);
            json_object_set_new(fo, "value", json_string(v));
            json_object_set_new(fo, "by", json_string(b));
        } else {
            json_object_set_new(fo, "value", json_null());
            json_object_set_new(fo, "by", json_null());
        }
    }
    json_object_set_new(g, "owner", o);
    json_object_del(g, "owner_json");
    json_object_del(g, "owner_source_id");
}

void owner_time_member(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    char ts[32];

    if (!json_is_integer(v))
        return;
    gi_time_format(json_integer_value(v), ts, sizeof ts);
    json_object_set_new(o, key, json_string(ts));
}

int store_owner_at(struct store *st, const char *uuid, int64_t at, json_t **out)
{
    struct owner_cache *k = cache_get();
    struct conn *c = db_conn_get(st);
    struct owner_fields o;
    struct db_stmt *s;
    int64_t id;
    int rc;

    *out = NULL;
    db_read_begin(c);
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_GPU_BY_UUID)))
        goto cleanup;
    db_bind_text(s, ":key", uuid);
    if (k) {
        k->ctx_valid = false;
        k->synced = (struct timespec){0};
    }
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK || (rc = owner_resolve(c, id, at, &o)) != GI_OK)
        goto cleanup;
    *out = owner_json(&o, &k->ctx);
cleanup:
    db_read_end(c);
    db_conn_put(st, c);
    return rc;
}

static void bind_scope(struct db_stmt *s, const void *sc) { db_bind_scope(s, sc); }

int store_owner_unowned(struct store *st, const struct store_scope *sc, const struct store_page *pg,
                        json_t **items, int64_t *total)
{
    size_t i;
    json_t *g;
    int rc = db_list_page(st, stmt_sql[ST_UNOWNED_COUNT], stmt_sql[ST_UNOWNED], bind_scope, sc, pg,
                          items, total);

    if (rc == GI_OK)
        json_array_foreach(*items, i, g)
            owner_doc(g);
    return rc;
}

int store_rule_dry_run(struct store *st, const struct store_rule *in, const struct store_scope *sc,
                       int64_t limit, json_t **items, int64_t *total, struct store_owner_err *err)
{
    struct conn *c = db_conn_get(st);
    struct owner_cache k = {0};
    struct rule_rec r = {.enabled = true};
    int64_t *ids = NULL;
    size_t n = 0;
    int rc;

    *items = json_array();
    *total = 0;
    db_read_begin(c);
    if ((rc = owner_rule_check(c, in, err)) != GI_OK ||
        (rc = collect_ids_in(c, ST_GPU_IDS_IN, 0, sc, &ids, &n)) != GI_OK)
        goto cleanup;
    r.kind = (enum rule_kind)rule_kind_of(in->match_kind);
    gi_strlcpy(r.key, in->match_key ? in->match_key : "", sizeof r.key);
    gi_strlcpy(r.value, in->match_value, sizeof r.value);
    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        if ((rc = ctx_load(c, &k, ids[i], "")) != GI_OK)
            break;
        if (!rule_matches(&r, &k.ctx))
            continue;
        if (*total < limit)
            json_array_append_new(
                *items, json_pack("{s:s, s:s}", "uuid", k.ctx.uuid, "host", k.ctx.hostname));
        (*total)++;
    }
cleanup:
    db_read_end(c);
    free(ids);
    ctx_clear(&k.ctx);
    free(k.spans);
    db_conn_put(st, c);
    return rc;
}
