/* Ownership: who owns each GPU at each time. See store_int.h.
 *
 * Today the owner is what the pushing source says (its team, env and
 * cluster defaults, kept on the GPU row); explicit assignments and
 * mapping rules take precedence over it. */
#include "store/store_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdio.h>

#define STATEMENTS(X)                                                                              \
    X(GPU_SOURCE_OWNER, "SELECT team, env, cluster, source_id FROM gpus WHERE id = :id")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* Sets one field from column i of s, decided by the source. */
static void from_source(struct db_stmt *s, int i, int64_t source_id, char *field, char *by)
{
    const char *v = db_col_text(s, i);

    if (!v || !*v)
        return;
    gi_strlcpy(field, v, OWNER_LEN);
    snprintf(by, OWNER_BY_LEN, "source:%lld", (long long)source_id);
}

int owner_resolve(struct conn *c, int64_t gpu_id, int64_t at, struct owner_fields *out)
{
    struct db_stmt *s = prep(c, ST_GPU_SOURCE_OWNER);
    int step, rc;
    int64_t source_id;

    (void)at;
    *out = (struct owner_fields){0};
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", gpu_id);
    step = db_step(c, s);
    if (step != DB_ROW) {
        rc = step == DB_DONE ? GI_NOT_FOUND : db_status(step);
        db_reset(s);
        return rc;
    }
    source_id = db_col_int(s, 3);
    from_source(s, 0, source_id, out->team, out->team_by);
    from_source(s, 1, source_id, out->env, out->env_by);
    from_source(s, 2, source_id, out->cluster, out->cluster_by);
    db_reset(s);
    return GI_OK;
}

int owner_consumer_team(struct conn *c, const char *kind, const char *key, int64_t at, char *team,
                        size_t len)
{
    (void)c, (void)kind, (void)key, (void)at;
    if (len)
        team[0] = '\0';
    return GI_OK;
}
