/* Inside the push ingest: what the store holds about a batch's GPUs before
 * the batch is applied (their identities, read one GPU at a time or for
 * the whole batch at once), for ingest.c. See ingest_int.h. */
#include "store/ingest_int.h"
#include "core/status.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

/* What the store holds about a GPU (struct gpu_ident) as source :sid
 * sees it, by the condition that follows. */
#define GPU_IDENT_SQL                                                                              \
    "SELECT g.host_id, g.serial, h.hostname, g.model, g.id, g.source_id, COALESCE(o.precedence, "  \
    "0), o.name, CASE WHEN g.missing_since IS NULL THEN 0 ELSE 1 END, g.uuid, CASE WHEN EXISTS "   \
    "(SELECT 1 FROM gpu_conflicts c WHERE c.gpu_id = g.id AND c.source_id = :sid) THEN 1 ELSE 0 "  \
    "END FROM gpus g LEFT JOIN hosts h ON h.id = g.host_id LEFT JOIN sources o ON o.id = "         \
    "g.source_id WHERE "

#define STATEMENTS(X)                                                                              \
    X(GPU_IDENTS_PG,                                                                               \
      GPU_IDENT_SQL "g.uuid IN (SELECT json_array_elements_text(CAST(:uuids AS JSON)))")           \
    X(GPU_IDENTS, GPU_IDENT_SQL "g.uuid IN (SELECT value FROM json_each(:uuids))")                 \
    X(GPU_IDENT, GPU_IDENT_SQL "g.uuid = :uuid")                                                   \
    X(GPU_SERIALS_PG, "SELECT serial, uuid FROM gpus WHERE serial IN (SELECT "                     \
                      "json_array_elements_text(CAST(:serials AS JSON)))")

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* See ingest_int.h. */
void ingest_col_copy(struct db_stmt *s, int i, char *out, size_t len)
{
    out[0] = '\0';
    if (!db_col_is_null(s, i))
        gi_strlcpy(out, db_col_text(s, i), len);
}

/* One row of GPU_IDENT_SQL. */
static void gpu_ident_row(struct db_stmt *s, struct gpu_ident *id)
{
    id->known = true;
    id->host_id = db_col_int(s, 0);
    ingest_col_copy(s, 1, id->serial, sizeof id->serial);
    ingest_col_copy(s, 2, id->hostname, sizeof id->hostname);
    ingest_col_copy(s, 3, id->model, sizeof id->model);
    id->id = db_col_int(s, 4);
    id->owner = db_col_int(s, 5); /* 0: none (NULL) */
    id->owner_precedence = db_col_int(s, 6);
    ingest_col_copy(s, 7, id->owner_name, sizeof id->owner_name);
    id->missing = db_col_int(s, 8) != 0;
    id->conflicts = db_col_int(s, 10) != 0;
}

int ingest_ident_load(struct conn *c, int64_t sid, const char *uuid, struct gpu_ident *id)
{
    struct db_stmt *s = prep(c, ST_GPU_IDENT);
    int step;

    memset(id, 0, sizeof *id);
    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    db_bind_int(s, ":sid", sid);
    step = db_step(c, s);
    if (step == DB_ROW)
        gpu_ident_row(s, id);
    db_reset(s);
    return step == DB_ROW || step == DB_DONE ? GI_OK : db_status(step);
}

/* A batch GPU's position, sorted by uuid for the identity read. */
struct ident_pos {
    const char *uuid;
    size_t i;
};

static int pos_cmp(const void *a, const void *b)
{
    return strcmp(((const struct ident_pos *)a)->uuid, ((const struct ident_pos *)b)->uuid);
}

/* What the store holds about all of a batch's GPUs, in one statement:
 * ids[i] for the batch's i-th GPU. Only for a batch whose GPUs do not
 * depend on each other (ingest_idents_apart()). */
int ingest_idents_load(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ident *ids)
{
    size_t n = b->set.ngpus;
    struct ident_pos *pos = calloc(n, sizeof *pos), key, *hit;
    json_t *uuids = json_array();
    struct db_stmt *s = NULL;
    int rc = GI_INTERNAL, step;

    if (pos == NULL || uuids == NULL)
        goto cleanup;
    for (size_t i = 0; i < n; i++) {
        pos[i] = (struct ident_pos){.uuid = b->set.gpus[i].uuid, .i = i};
        if (json_array_append_new(uuids, json_string(pos[i].uuid)) != 0)
            goto cleanup;
    }
    qsort(pos, n, sizeof *pos, pos_cmp);
    if (!(s = prep(c, db_dialect(c) == DB_PG ? ST_GPU_IDENTS_PG : ST_GPU_IDENTS)))
        goto cleanup;
    db_bind_json(s, ":uuids", uuids);
    db_bind_int(s, ":sid", sid);
    while ((step = db_step(c, s)) == DB_ROW) {
        key.uuid = db_col_text(s, 9);
        if (key.uuid && (hit = bsearch(&key, pos, n, sizeof *pos, pos_cmp)) != NULL)
            gpu_ident_row(s, &ids[hit->i]);
    }
    db_reset(s);
    rc = step == DB_DONE ? GI_OK : db_status(step);
cleanup:
    json_decref(uuids);
    free(pos);
    return rc;
}

/* For a batch read by ingest_idents_load() on PostgreSQL: the GPU, other
 * than itself, stored under each serial the batch reports, in one
 * statement (one round trip instead of one per GPU), so that
 * ingest_gpu() needs no read per GPU for its serial_conflict check. Only
 * when the batch's serials differ from each other; a serial stored on
 * another GPU of the same batch (which may be written first) is left to
 * the check of its own. */
int ingest_serials_load(struct conn *c, const struct gi_batch *b, struct gpu_ident *ids)
{
    size_t n = b->set.ngpus, m = 0;
    struct ident_pos *ser = calloc(n + 1, sizeof *ser), *uid = calloc(n + 1, sizeof *uid), key,
                     *hit;
    bool *unsure = calloc(n + 1, sizeof *unsure);
    json_t *serials = json_array();
    struct db_stmt *s;
    int rc = GI_INTERNAL, step;

    /* SQLite has no round trips: its check per GPU costs no more. */
    if (db_dialect(c) != DB_PG) {
        rc = GI_OK;
        goto cleanup;
    }
    if (ser == NULL || uid == NULL || unsure == NULL || serials == NULL)
        goto cleanup;
    for (size_t i = 0; i < n; i++) {
        uid[i] = (struct ident_pos){.uuid = b->set.gpus[i].uuid, .i = i};
        if (b->set.gpus[i].serial[0] == '\0')
            continue;
        ser[m++] = (struct ident_pos){.uuid = b->set.gpus[i].serial, .i = i};
        if (json_array_append_new(serials, json_string(b->set.gpus[i].serial)) != 0)
            goto cleanup;
    }
    rc = GI_OK;
    if (m == 0)
        goto cleanup;
    qsort(ser, m, sizeof *ser, pos_cmp);
    qsort(uid, n, sizeof *uid, pos_cmp);
    for (size_t i = 1; i < m; i++)
        if (strcmp(ser[i - 1].uuid, ser[i].uuid) == 0)
            goto cleanup; /* a serial twice: each GPU is checked on its own */
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_GPU_SERIALS_PG)))
        goto cleanup;
    db_bind_json(s, ":serials", serials);
    while ((step = db_step(c, s)) == DB_ROW) {
        const char *other = db_col_text(s, 1);
        key.uuid = db_col_text(s, 0);
        if (key.uuid == NULL || other == NULL ||
            (hit = bsearch(&key, ser, m, sizeof *ser, pos_cmp)) == NULL ||
            strcmp(other, b->set.gpus[hit->i].uuid) == 0)
            continue;
        key.uuid = other;
        if (bsearch(&key, uid, n, sizeof *uid, pos_cmp) != NULL)
            unsure[hit->i] = true;
        else if (ids[hit->i].serial_other[0] == '\0')
            gi_strlcpy(ids[hit->i].serial_other, other, sizeof ids[hit->i].serial_other);
    }
    db_reset(s);
    if ((rc = step == DB_DONE ? GI_OK : db_status(step)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < m; i++)
        ids[ser[i].i].serial_read = !unsure[ser[i].i];
cleanup:
    json_decref(serials);
    free(unsure);
    free(uid);
    free(ser);
    return rc;
}

/* Whether a batch's GPUs can be looked up together before any is
 * written: none is a MIG instance (whose stored name may follow another
 * GPU's write, see mig_canonical()) and no uuid appears twice. */
bool ingest_idents_apart(const struct gi_batch *b)
{
    size_t n = b->set.ngpus;
    struct ident_pos *pos;
    bool apart = true;

    for (size_t i = 0; i < n; i++)
        if (b->set.gpus[i].parent_uuid[0] != '\0' && b->set.gpus[i].mig_instance >= 0)
            return false;
    if (n < 2)
        return true;
    if ((pos = calloc(n, sizeof *pos)) == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        pos[i] = (struct ident_pos){.uuid = b->set.gpus[i].uuid, .i = i};
    qsort(pos, n, sizeof *pos, pos_cmp);
    for (size_t i = 1; i < n && apart; i++)
        apart = strcmp(pos[i - 1].uuid, pos[i].uuid) != 0;
    free(pos);
    return apart;
}
