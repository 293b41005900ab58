/* Discovery sources: the admin's CRUD, the poller's due list and results,
 * and the find-or-create used by push reporters. */
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>
#include <string.h>

/* A source's GPU count is defined as the GPU list's ?source= filter is:
 * the records (MIG instances included, missing ones too) it owns. */
#define SRC_GPUS_OWNED "(SELECT COUNT(*) FROM gpus og WHERE og.source_id = s.id)"
/* Its host count: the hosts of the GPUs it owns. */
#define SRC_HOSTS_OWNED "(SELECT COUNT(DISTINCT oh.host_id) FROM gpus oh WHERE oh.source_id = s.id)"
#define SRC_SELECT                                                                                 \
    "SELECT s.id, s.name, s.kind, s.config, s.team, s.env, s.cluster, s.interval_s, s.enabled, "   \
    "s.precedence, s.last_attempt_at, s.last_success_at, s.last_error, " SRC_GPUS_OWNED " AS "     \
    "gpus_reported, " SRC_HOSTS_OWNED                                                              \
    " AS hosts_reported, s.gpus_reported AS gpus_last_report, CASE WHEN "                          \
    "s.last_success_at IS NULL OR s.last_success_at < :stale THEN 1 ELSE 0 END AS stale, "         \
    "s.warnings_total, s.last_warning, s.last_warning_at, "                                        \
    "(SELECT j.holder FROM job_leases j WHERE j.name = 'pull:' || s.id) AS last_pulled_by, "       \
    "s.created_at, s.updated_at FROM sources s "

const char store_sql_source_list[] =
    SRC_SELECT "WHERE " STORE_SCOPE_IN(STORE_SOURCE_DC("s")) " ORDER BY s.id";

#define STATEMENTS(X)                                                                              \
    X(SOURCE_GET, "SELECT id, kind FROM sources WHERE name = :name")                               \
    X(SOURCE_ADD, "INSERT INTO sources (name, kind, team, env, cluster, created_at, updated_at) "  \
                  "VALUES (:name, :kind, :team, :env, :cluster, :now, :now) RETURNING id")         \
    X(SOURCE_LIST, store_sql_source_list)                                                          \
    X(SRC_ADD, "INSERT INTO sources (name, kind, config, team, env, cluster, interval_s, "         \
               "enabled, precedence, created_at, updated_at) VALUES (:name, :kind, :config, "      \
               ":team, :env, :cluster, :interval, :enabled, :prec, :now, :now) RETURNING id")      \
    X(SRC_GET, SRC_SELECT "WHERE s.id = :id")                                                      \
    X(SRC_UPDATE, "UPDATE sources SET name = COALESCE(:name, name), config = COALESCE(:config, "   \
                  "config), team = COALESCE(:team, team), env = COALESCE(:env, env), cluster = "   \
                  "COALESCE(:cluster, cluster), interval_s = CASE WHEN :interval < 0 THEN "        \
                  "interval_s ELSE :interval END, enabled = CASE WHEN :enabled < 0 THEN enabled "  \
                  "ELSE :enabled END, precedence = CASE WHEN :has_prec = 1 THEN :prec ELSE "       \
                  "precedence END, updated_at = :now WHERE id = :id")                              \
    X(SRC_DELETE, "DELETE FROM sources WHERE id = :id")                                            \
    /* Due: by its job lease once the scheduler has claimed it (see                                \
     * jobs.c); before that, when it has not been pulled within its                                \
     * interval. */                                                                                \
    X(SRC_DUE, "SELECT s.id, s.name, s.kind, s.config, s.team, s.env, s.cluster, s.interval_s "    \
               "FROM sources s LEFT JOIN job_leases j ON j.name = 'pull:' || s.id WHERE "          \
               "s.enabled = 1 AND s.kind NOT IN ('push', 'csv') AND ((j.name IS NULL AND "         \
               "(s.last_attempt_at IS NULL OR s.last_attempt_at + s.interval_s <= :now)) OR "      \
               "(j.next_run_at <= :now AND j.lease_until <= :now)) ORDER BY "                      \
               "COALESCE(s.last_attempt_at, 0), s.id")                                             \
    X(SRC_MIN_INTERVAL, "SELECT COALESCE(MIN(interval_s), 0) FROM sources WHERE enabled = 1 AND "  \
                        "kind NOT IN ('push', 'csv')")                                             \
    X(SRC_JOB_DELETE, "DELETE FROM job_leases WHERE name = :job")                                  \
    X(SRC_JOB_RESCHEDULE, "UPDATE job_leases SET next_run_at = COALESCE((SELECT last_attempt_at "  \
                          "FROM sources WHERE id = :id), 0) + :interval WHERE name = :job")        \
    X(SRC_WARN, "UPDATE sources SET warnings_total = warnings_total + :n, last_warning = :msg, "   \
                "last_warning_at = :now WHERE id = :id")                                           \
    X(SRC_RECORD,                                                                                  \
      "UPDATE sources SET last_attempt_at = :now, last_success_at = CASE WHEN :err "               \
      "IS NULL THEN :now ELSE last_success_at END, last_error = :err, gpus_reported = "            \
      "CASE WHEN :err IS NULL THEN :n ELSE gpus_reported END WHERE id = :id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static int collect_with(struct store *st, enum stmt_id id, const char *name, int64_t v,
                        json_t **items)
{
    return db_collect_with(st, stmt_sql[id], name, v, items);
}

/* Finds or creates the source `name` of `kind` on c (inside the caller's
 * transaction, if any): GI_CONFLICT when the name belongs to a source of
 * another kind. */
int source_ensure(struct conn *c, const char *name, const char *kind, const char *team,
                  const char *env, const char *cluster, int64_t *id)
{
    struct db_stmt *s;
    int rc = GI_INTERNAL, step;

    if (!(s = prep(c, ST_SOURCE_GET)))
        return GI_INTERNAL;
    db_bind_text(s, ":name", name);
    step = db_step(c, s);
    if (step == DB_ROW) {
        const char *have = db_col_text(s, 1);
        *id = db_col_int(s, 0);
        rc = have && strcmp(have, kind) == 0 ? GI_OK : GI_CONFLICT;
    } else {
        rc = step == DB_DONE ? GI_NOT_FOUND : db_status(step);
    }
    db_reset(s);
    if (rc != GI_NOT_FOUND)
        return rc;
    if (!(s = prep(c, ST_SOURCE_ADD)))
        return GI_INTERNAL;
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":kind", kind);
    db_bind_opt_text(s, ":team", team);
    db_bind_opt_text(s, ":env", env);
    db_bind_opt_text(s, ":cluster", cluster);
    db_bind_int(s, ":now", gi_now());
    rc = db_fetch_int(c, s, id);
    return rc;
}

int store_source_ensure(struct store *st, const char *name, const char *kind, const char *team,
                        const char *env, const char *cluster, int64_t *id)
{
    struct conn *c = db_conn_get(st);
    int rc = source_ensure(c, name, kind, team, env, cluster, id);

    db_conn_put(st, c);
    return rc;
}

int store_source_list(struct store *st, int64_t stale_before, const struct store_scope *sc,
                      json_t **items)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_SOURCE_LIST);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":stale", stale_before);
        db_bind_scope(s, sc);
        rc = db_collect(c, s, items);
    }
    db_conn_put(st, c);
    return rc;
}

static int src_get(struct conn *c, int64_t id, int64_t stale_before, json_t **out)
{
    struct db_stmt *s = prep(c, ST_SRC_GET);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":stale", stale_before);
    return db_fetch_one(c, s, out);
}

/* Audit rows for sources never carry their config (it may hold secrets). */
static json_t *src_audit_view(const json_t *src)
{
    json_t *v = src ? json_deep_copy(src) : NULL;
    if (v)
        json_object_del(v, "config");
    return v;
}

int store_source_create(struct store *st, const char *actor, const struct store_source *in,
                        json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *view = NULL;
    int64_t id;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SRC_ADD)))
        goto cleanup;
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":kind", in->kind);
    db_bind_json(s, ":config", in->config);
    db_bind_opt_text(s, ":team", in->team);
    db_bind_opt_text(s, ":env", in->env);
    db_bind_opt_text(s, ":cluster", in->cluster);
    db_bind_int(s, ":interval", in->interval_s < 0 ? 300 : in->interval_s);
    db_bind_int(s, ":enabled", in->enabled < 0 ? 1 : in->enabled);
    db_bind_int(s, ":prec", in->has_precedence ? in->precedence : 0);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_fetch_int(c, s, &id)) != GI_OK)
        goto cleanup;
    if ((rc = src_get(c, id, 0, out)) != GI_OK)
        goto cleanup;
    view = src_audit_view(*out);
    rc = db_audit(c, actor, "create", "source", id, NULL, view);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(view);
    db_conn_put(st, c);
    return rc;
}

int store_source_get(struct store *st, int64_t id, int64_t stale_before, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = src_get(c, id, stale_before, out);
    db_conn_put(st, c);
    return rc;
}

int store_source_update(struct store *st, const char *actor, int64_t id,
                        const struct store_source *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL, *bv = NULL, *av = NULL;
    char job[32];
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = src_get(c, id, 0, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SRC_UPDATE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":name", in->name);
    db_bind_json(s, ":config", in->config);
    db_bind_text(s, ":team", in->team);
    db_bind_text(s, ":env", in->env);
    db_bind_text(s, ":cluster", in->cluster);
    db_bind_int(s, ":interval", in->interval_s);
    db_bind_int(s, ":enabled", in->enabled);
    db_bind_int(s, ":has_prec", in->has_precedence ? 1 : 0);
    db_bind_int(s, ":prec", in->precedence);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    /* A new interval counts from the last pull, not from the next run the
     * old interval had scheduled. */
    if (in->interval_s >= 0) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, ST_SRC_JOB_RESCHEDULE)))
            goto cleanup;
        snprintf(job, sizeof job, "pull:%lld", (long long)id);
        db_bind_text(s, ":job", job);
        db_bind_int(s, ":id", id);
        db_bind_int(s, ":interval", in->interval_s);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            goto cleanup;
    }
    if ((rc = src_get(c, id, 0, out)) != GI_OK)
        goto cleanup;
    bv = src_audit_view(before);
    av = src_audit_view(*out);
    rc = db_audit(c, actor, "update", "source", id, bv, av);
cleanup:
    rc = db_tx_end_doc(c, rc, out);
    json_decref(before);
    json_decref(bv);
    json_decref(av);
    db_conn_put(st, c);
    return rc;
}

int store_source_delete(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s;
    json_t *before = NULL, *bv = NULL;
    char job[32];
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    if ((rc = src_get(c, id, 0, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SRC_DELETE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    /* Its pull job goes too, so that a later source given the same id
     * starts with a fresh schedule. */
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SRC_JOB_DELETE)))
        goto cleanup;
    snprintf(job, sizeof job, "pull:%lld", (long long)id);
    db_bind_text(s, ":job", job);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    bv = src_audit_view(before);
    rc = db_audit(c, actor, "delete", "source", id, bv, NULL);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(before);
    json_decref(bv);
    db_conn_put(st, c);
    return rc;
}

int store_source_due(struct store *st, int64_t now, json_t **items)
{
    return collect_with(st, ST_SRC_DUE, ":now", now, items);
}

int store_source_min_interval(struct store *st, int64_t *out)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_SRC_MIN_INTERVAL);
    int rc = s ? db_fetch_int(c, s, out) : GI_INTERNAL;

    db_conn_put(st, c);
    return rc;
}

int store_source_record(struct store *st, int64_t id, const char *error, int64_t gpus)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_SRC_RECORD);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":id", id);
        db_bind_text(s, ":err", error);
        db_bind_int(s, ":n", gpus);
        db_bind_int(s, ":now", gi_now());
        rc = db_exec_done(c, s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_source_warn(struct store *st, int64_t id, int64_t n, const char *msg)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s = prep(c, ST_SRC_WARN);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":id", id);
        db_bind_int(s, ":n", n);
        db_bind_text(s, ":msg", msg);
        db_bind_int(s, ":now", gi_now());
        rc = db_exec_done(c, s);
    }
    db_conn_put(st, c);
    return rc;
}
