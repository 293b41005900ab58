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

/* PostgreSQL: the GPU, other than itself, stored under each serial the
 * batch reports, read with the batch's identities (one round trip for
 * both instead of one per GPU), so that ingest_gpu() needs no read per
 * GPU for its serial_conflict check. Only when the batch's serials differ
 * from each other; a serial stored on another GPU of the same batch
 * (which may be written first) is left to the check of its own. */
struct serial_read {
    size_t n, m;
    struct ident_pos *ser, *uid; /* the batch's serials and uuids, sorted */
    bool *unsure;
    json_t *serials;
    struct db_stmt *s; /* NULL: nothing to read */
};

static void serials_free(struct serial_read *r)
{
    json_decref(r->serials);
    free(r->unsure);
    free(r->uid);
    free(r->ser);
}

/* Binds the read of the batch's serials (r->s), unless there is nothing
 * to read. */
static int serials_prepare(struct conn *c, const struct gi_batch *b, struct serial_read *r)
{
    size_t n = b->set.ngpus;

    memset(r, 0, sizeof *r);
    /* SQLite has no round trips: its check per GPU costs no more. */
    if (db_dialect(c) != DB_PG)
        return GI_OK;
    r->n = n;
    r->ser = calloc(n + 1, sizeof *r->ser);
    r->uid = calloc(n + 1, sizeof *r->uid);
    r->unsure = calloc(n + 1, sizeof *r->unsure);
    r->serials = json_array();
    if (r->ser == NULL || r->uid == NULL || r->unsure == NULL || r->serials == NULL)
        return GI_INTERNAL;
    for (size_t i = 0; i < n; i++) {
        r->uid[i] = (struct ident_pos){.uuid = b->set.gpus[i].uuid, .i = i};
        if (b->set.gpus[i].serial[0] == '\0')
            continue;
        r->ser[r->m++] = (struct ident_pos){.uuid = b->set.gpus[i].serial, .i = i};
        if (json_array_append_new(r->serials, json_string(b->set.gpus[i].serial)) != 0)
            return GI_INTERNAL;
    }
    if (r->m == 0)
        return GI_OK;
    qsort(r->ser, r->m, sizeof *r->ser, pos_cmp);
    qsort(r->uid, n, sizeof *r->uid, pos_cmp);
    for (size_t i = 1; i < r->m; i++)
        if (strcmp(r->ser[i - 1].uuid, r->ser[i].uuid) == 0)
            return GI_OK; /* a serial twice: each GPU is checked on its own */
    if (!(r->s = prep(c, ST_GPU_SERIALS_PG)))
        return GI_INTERNAL;
    db_bind_json(r->s, ":serials", r->serials);
    return GI_OK;
}

/* Reads the rows of r->s into ids. */
static int serials_take(struct conn *c, const struct gi_batch *b, struct serial_read *r,
                        struct gpu_ident *ids)
{
    struct ident_pos key, *hit;
    int step;

    while ((step = db_step(c, r->s)) == DB_ROW) {
        const char *other = db_col_text(r->s, 1);
        key.uuid = db_col_text(r->s, 0);
        if (key.uuid == NULL || other == NULL ||
            (hit = bsearch(&key, r->ser, r->m, sizeof *r->ser, pos_cmp)) == NULL ||
            strcmp(other, b->set.gpus[hit->i].uuid) == 0)
            continue;
        key.uuid = other;
        if (bsearch(&key, r->uid, r->n, sizeof *r->uid, pos_cmp) != NULL)
            r->unsure[hit->i] = true;
        else if (ids[hit->i].serial_other[0] == '\0')
            gi_strlcpy(ids[hit->i].serial_other, other, sizeof ids[hit->i].serial_other);
    }
    if (step != DB_DONE)
        return db_status(step);
    for (size_t i = 0; i < r->m; i++)
        ids[r->ser[i].i].serial_read = !r->unsure[r->ser[i].i];
    return GI_OK;
}

/* What the store holds about all of a batch's GPUs, in one statement:
 * ids[i] for the batch's i-th GPU, and on PostgreSQL the GPUs stored
 * under the batch's serials (struct serial_read), the two reads in one
 * round trip. Only for a batch whose GPUs do not depend on each other
 * (ingest_idents_apart()). */
int ingest_idents_load(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ident *ids)
{
    size_t n = b->set.ngpus;
    struct ident_pos *pos = calloc(n, sizeof *pos), key, *hit;
    json_t *uuids = json_array();
    struct serial_read ser;
    struct db_stmt *s[2] = {NULL, NULL};
    int rc = GI_INTERNAL, step;

    if ((rc = serials_prepare(c, b, &ser)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (pos == NULL || uuids == NULL)
        goto cleanup;
    for (size_t i = 0; i < n; i++) {
        pos[i] = (struct ident_pos){.uuid = b->set.gpus[i].uuid, .i = i};
        if (json_array_append_new(uuids, json_string(pos[i].uuid)) != 0)
            goto cleanup;
    }
    qsort(pos, n, sizeof *pos, pos_cmp);
    if (!(s[0] = prep(c, db_dialect(c) == DB_PG ? ST_GPU_IDENTS_PG : ST_GPU_IDENTS)))
        goto cleanup;
    db_bind_json(s[0], ":uuids", uuids);
    db_bind_int(s[0], ":sid", sid);
    s[1] = ser.s;
    if ((rc = db_read_batch(c, s, s[1] ? 2 : 1)) != GI_OK)
        goto cleanup;
    while ((step = db_step(c, s[0])) == DB_ROW) {
        key.uuid = db_col_text(s[0], 9);
        if (key.uuid && (hit = bsearch(&key, pos, n, sizeof *pos, pos_cmp)) != NULL)
            gpu_ident_row(s[0], &ids[hit->i]);
    }
    rc = step == DB_DONE ? GI_OK : db_status(step);
    /* The identities first: the serials' rows fill in what they read. */
    if (rc == GI_OK && s[1])
        rc = serials_take(c, b, &ser, ids);
    db_read_end(c);
cleanup:
    for (int i = 0; i < 2; i++)
        if (s[i])
            db_reset(s[i]);
    serials_free(&ser);
    json_decref(uuids);
    free(pos);
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
