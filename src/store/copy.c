/* Copying a whole SQLite database into an empty PostgreSQL one: every
 * table with every column of every row, ids included, in one PostgreSQL
 * transaction, then verified (row counts per table, and the content of
 * what the target's triggers derive) before it commits.
 *
 * The tables and columns are read from the source's catalog, not listed
 * here, so a table a later migration adds is copied without a change to
 * this file. The statements are therefore built per table from those
 * names, which come from the source's own schema and are checked to be
 * plain identifiers before they are quoted into SQL; every value is bound.
 *
 * Rows travel in batches: one JSON array of row objects bound as a single
 * parameter, unpacked on the server by json_populate_recordset() into the
 * table's own row type. Each value keeps the type it has in SQLite
 * (integers as JSON integers, reals as JSON numbers printed so that they
 * read back exactly, text as JSON strings, NULL as null), and the server
 * converts it to the column's type as an INSERT would. One statement then
 * carries a thousand rows whatever the table's width, where a multi-row
 * VALUES list would be bounded by the driver's parameters per statement.
 *
 * Derived data. The PostgreSQL triggers fill dc_counts and resources.doc
 * on every insert. session_replication_role, which would silence every
 * trigger, takes a superuser, which managed databases do not grant, and
 * the copy does not need it:
 * - resources.doc is sent, but the trigger renders it again from the row;
 *   each batch's documents are then compared with the source's as JSON
 *   (the text differs in key order and spacing between the dialects, the
 *   content must not). Its cost is linear.
 * - dc_counts: the insert trigger adds each resource to its (data center,
 *   kind, state) row, and within one transaction every such update leaves
 *   a version of that row that nothing can prune yet, so the n-th insert
 *   into a group walks n versions: a copy of 50,000 resources into a few
 *   groups took minutes. The copy therefore switches off that one trigger
 *   (ALTER TABLE ... DISABLE TRIGGER, which the table's owner may do; it
 *   is part of the copy's transaction, so a rollback undoes it too),
 *   copies dc_counts from the source like any table, switches the
 *   trigger on again, and then checks dc_counts twice: equal to the
 *   source's, and equal to a recount of the copied resources, so it is
 *   exactly what the trigger would have built. When the copying user does
 *   not own the table, the trigger stays on and fills dc_counts itself
 *   (slower); only the groups whose count fell to zero, which no insert
 *   creates, are copied, and the content is compared as well. */
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/db.h"
#include "store/store.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds of what one copy handles; the schema stays well below. */
#define COPY_MAX_COLS 128
#define COPY_SQL_MAX 8192
/* Rows per batch, and the text size (bytes of values) that ends a batch
 * early. */
#define COPY_BATCH_ROWS 1000
#define COPY_BATCH_BYTES (4 * 1024 * 1024)
/* Days of samples that get their own partition; older days stay in the
 * DEFAULT partition. */
#define COPY_MAX_PARTITION_DAYS 400

struct table {
    char name[STORE_COPY_NAME_MAX];
    int ncols;
    char *cols[COPY_MAX_COLS];
    char *deps[COPY_MAX_COLS]; /* tables its foreign keys reference */
    int ndeps;
    bool placed;
};

struct copy {
    struct conn *src, *dst;
    bool counts_off; /* the dc_counts insert trigger is off for the copy */
    struct store_copy_report *rep;
    FILE *progress;
    int n;
    struct table t[STORE_COPY_MAX_TABLES];
    struct table *order[STORE_COPY_MAX_TABLES];
};

/* A bounded SQL text under construction. */
struct sqlbuf {
    char s[COPY_SQL_MAX];
    size_t len;
    bool overflow;
};

static void sb_add(struct sqlbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_add(struct sqlbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->overflow)
        return;
    va_start(ap, fmt);
    n = vsnprintf(b->s + b->len, sizeof b->s - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof b->s - b->len)
        b->overflow = true;
    else
        b->len += (size_t)n;
}

/* The columns of t as a quoted, comma-separated list, prefixed by
 * `prefix` ("" or "x."). */
static void sb_cols(struct sqlbuf *b, const struct table *t, const char *prefix)
{
    for (int i = 0; i < t->ncols; i++)
        sb_add(b, "%s%s\"%s\"", i ? ", " : "", prefix, t->cols[i]);
}

/* Records the failure's message in the report; returns st. */
static int fail(struct copy *cp, int st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct copy *cp, int st, const char *fmt, ...)
{
    va_list ap;

    if (cp->rep->error[0] == '\0') {
        va_start(ap, fmt);
        vsnprintf(cp->rep->error, sizeof cp->rep->error, fmt, ap);
        va_end(ap);
    }
    return st;
}

static void progress(struct copy *cp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void progress(struct copy *cp, const char *fmt, ...)
{
    va_list ap;

    if (cp->progress == NULL)
        return;
    va_start(ap, fmt);
    vfprintf(cp->progress, fmt, ap);
    va_end(ap);
    fflush(cp->progress);
}

/* True for a name that may be quoted into SQL as it is. */
static bool plain_name(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) >= STORE_COPY_NAME_MAX)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/* A statement for text built in b, prepared once on c. */
static struct db_stmt *prep_built(struct copy *cp, struct conn *c, const struct sqlbuf *b)
{
    struct db_stmt *s;

    if (b->overflow) {
        fail(cp, GI_INTERNAL, "a statement for the copy is too long");
        return NULL;
    }
    if ((s = db_prep_once(c, b->s)) == NULL)
        fail(cp, GI_INTERNAL, "cannot prepare: %.200s", b->s);
    return s;
}

/* Runs a built statement returning one integer into *out. */
static int fetch_built_int(struct copy *cp, struct conn *c, const struct sqlbuf *b, int64_t *out)
{
    struct db_stmt *s = prep_built(cp, c, b);
    int rc;

    if (s == NULL)
        return GI_INTERNAL;
    rc = db_fetch_int(c, s, out);
    db_stmt_free(s);
    return rc;
}

static void tables_free(struct copy *cp)
{
    for (int i = 0; i < cp->n; i++) {
        for (int j = 0; j < cp->t[i].ncols; j++)
            free(cp->t[i].cols[j]);
        for (int j = 0; j < cp->t[i].ndeps; j++)
            free(cp->t[i].deps[j]);
    }
}

static const char sql_src_tables[] =
    "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' "
    "AND name <> 'schema_version' ORDER BY name";
static const char sql_src_columns[] = "SELECT name FROM pragma_table_info(:t) ORDER BY cid";
static const char sql_src_fks[] = "SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(:t)";

/* Appends each row's text in column 0 of s to list (capacity max). */
static int collect_names(struct copy *cp, struct conn *c, struct db_stmt *s, char **list, int max,
                         int *n, const char *what)
{
    int rc;

    while ((rc = db_step(c, s)) == DB_ROW) {
        const char *v = db_col_text(s, 0);
        if (!plain_name(v)) {
            db_reset(s);
            return fail(cp, GI_INVALID,
                        "the source has a %s named '%s', which the copy cannot handle", what,
                        v ? v : "");
        }
        if (*n == max) {
            db_reset(s);
            return fail(cp, GI_TOO_LARGE, "the source has more than %d %ss in one table", max,
                        what);
        }
        if ((list[*n] = strdup(v)) == NULL) {
            db_reset(s);
            return GI_INTERNAL;
        }
        (*n)++;
    }
    db_reset(s);
    return rc == DB_DONE ? GI_OK : fail(cp, db_status(rc), "cannot read the source's schema");
}

/* Reads the source's tables with their columns and foreign keys. */
static int discover(struct copy *cp)
{
    struct db_stmt *s = db_prep(cp->src, sql_src_tables);
    int rc;

    if (s == NULL)
        return GI_INTERNAL;
    while ((rc = db_step(cp->src, s)) == DB_ROW) {
        const char *v = db_col_text(s, 0);
        if (!plain_name(v)) {
            db_reset(s);
            return fail(cp, GI_INVALID, "the source has a table named '%s'", v ? v : "");
        }
        if (cp->n == STORE_COPY_MAX_TABLES) {
            db_reset(s);
            return fail(cp, GI_TOO_LARGE, "the source has more than %d tables",
                        STORE_COPY_MAX_TABLES);
        }
        gi_strlcpy(cp->t[cp->n++].name, v, STORE_COPY_NAME_MAX);
    }
    db_reset(s);
    if (rc != DB_DONE)
        return fail(cp, db_status(rc), "cannot read the source's tables");
    for (int i = 0; i < cp->n; i++) {
        struct table *t = &cp->t[i];
        if (!(s = db_prep(cp->src, sql_src_columns)))
            return GI_INTERNAL;
        db_bind_text(s, ":t", t->name);
        if ((rc = collect_names(cp, cp->src, s, t->cols, COPY_MAX_COLS, &t->ncols, "column")) !=
            GI_OK)
            return rc;
        if (!(s = db_prep(cp->src, sql_src_fks)))
            return GI_INTERNAL;
        db_bind_text(s, ":t", t->name);
        if ((rc = collect_names(cp, cp->src, s, t->deps, COPY_MAX_COLS, &t->ndeps,
                                "referenced table")) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* True when the table named `name` is placed, or is not one the copy
 * writes (its rows are then none of the copy's business). */
static bool dep_ready(const struct copy *cp, const struct table *self, const char *name)
{
    if (strcmp(name, self->name) == 0)
        return true; /* a reference to its own rows */
    for (int i = 0; i < cp->n; i++)
        if (strcmp(cp->t[i].name, name) == 0)
            return cp->t[i].placed;
    return true;
}

/* Orders the tables so that each comes after every table its foreign
 * keys reference (by name within one rank, for a stable report), and
 * dc_counts after resources, whose inserts fill it. */
static int order_tables(struct copy *cp)
{
    int placed = 0;

    while (placed < cp->n) {
        struct table *next = NULL;
        for (int i = 0; i < cp->n && next == NULL; i++) {
            struct table *t = &cp->t[i];
            bool ready = !t->placed;
            for (int j = 0; ready && j < t->ndeps; j++)
                ready = dep_ready(cp, t, t->deps[j]);
            if (ready && strcmp(t->name, "dc_counts") == 0)
                ready = dep_ready(cp, t, "resources");
            if (ready)
                next = t;
        }
        if (next == NULL)
            return fail(cp, GI_INVALID, "the source's foreign keys form a cycle");
        next->placed = true;
        cp->order[placed++] = next;
    }
    return GI_OK;
}

static const char sql_dst_columns[] =
    "SELECT column_name FROM information_schema.columns "
    "WHERE table_schema = current_schema() AND table_name = :t AND column_name = :c";
static const char sql_dst_tables[] =
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition "
    "AND c.relname <> 'schema_version' ORDER BY c.relname";

/* Checks that the target has every column of every source table, and
 * that no table of the target holds a row (GI_CONFLICT naming it). */
static int check_target(struct copy *cp)
{
    struct db_stmt *s;
    char *names[STORE_COPY_MAX_TABLES * 2];
    int n = 0, rc = GI_OK;

    for (int i = 0; i < cp->n; i++) {
        for (int j = 0; j < cp->t[i].ncols; j++) {
            int64_t ignored;
            if (!(s = db_prep(cp->dst, sql_dst_columns)))
                return GI_INTERNAL;
            db_bind_text(s, ":t", cp->t[i].name);
            db_bind_text(s, ":c", cp->t[i].cols[j]);
            rc = db_fetch_int(cp->dst, s, &ignored);
            if (rc == GI_NOT_FOUND)
                return fail(cp, GI_INVALID, "the target has no column %s.%s", cp->t[i].name,
                            cp->t[i].cols[j]);
            if (rc != GI_OK)
                return fail(cp, rc, "cannot read the target's schema");
        }
    }
    if (!(s = db_prep(cp->dst, sql_dst_tables)))
        return GI_INTERNAL;
    rc = collect_names(cp, cp->dst, s, names, STORE_COPY_MAX_TABLES * 2, &n, "target table");
    for (int i = 0; rc == GI_OK && i < n; i++) {
        struct sqlbuf b = {0};
        int64_t any = 0;
        sb_add(&b, "SELECT COUNT(*) FROM (SELECT 1 FROM \"%s\" LIMIT 1) x", names[i]);
        if ((rc = fetch_built_int(cp, cp->dst, &b, &any)) != GI_OK)
            rc = fail(cp, rc, "cannot read the target's table %s", names[i]);
        else if (any > 0)
            rc = fail(cp, GI_CONFLICT, "the target is not empty: table %s has rows", names[i]);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    return rc;
}

static const char sql_src_sample_days[] =
    "SELECT DISTINCT ts - (((ts % 86400) + 86400) % 86400) AS day FROM gpu_samples "
    "ORDER BY day DESC LIMIT :max";
static const char sql_dst_partitions[] = "SELECT gi_samples_partitions(:now, :ahead, 36500)";

/* Creates the day partitions of gpu_samples for one run of consecutive
 * days [first, last]. gi_samples_partitions() covers the day before its
 * now_s to ahead_days after it, so now_s is the day after `first`; a
 * single day gets the next one too. Keeping 100 years, it drops nothing. */
static int partition_run(struct copy *cp, int64_t first, int64_t last)
{
    struct db_stmt *s = db_prep(cp->dst, sql_dst_partitions);
    int64_t days = (last - first) / 86400 + 1, changed = 0;
    int rc;

    if (s == NULL)
        return GI_INTERNAL;
    db_bind_int(s, ":now", first + 86400);
    db_bind_int(s, ":ahead", days >= 2 ? days - 2 : 0);
    if ((rc = db_fetch_int(cp->dst, s, &changed)) != GI_OK)
        return fail(cp, rc, "cannot create the partitions of gpu_samples");
    return GI_OK;
}

/* Gives every day of the source's newest samples its own partition
 * before they are inserted; older days land in the DEFAULT partition. */
static int make_partitions(struct copy *cp)
{
    struct db_stmt *s;
    int64_t days[COPY_MAX_PARTITION_DAYS];
    int n = 0, rc;
    bool have = false;

    for (int i = 0; i < cp->n; i++)
        have = have || strcmp(cp->t[i].name, "gpu_samples") == 0;
    if (!have || db_dialect(cp->dst) != DB_PG)
        return GI_OK;
    if (!(s = db_prep(cp->src, sql_src_sample_days)))
        return GI_INTERNAL;
    db_bind_int(s, ":max", COPY_MAX_PARTITION_DAYS);
    while ((rc = db_step(cp->src, s)) == DB_ROW && n < COPY_MAX_PARTITION_DAYS)
        days[n++] = db_col_int(s, 0);
    db_reset(s);
    if (rc != DB_DONE && rc != DB_ROW)
        return fail(cp, db_status(rc), "cannot read the source's sample days");
    /* days[] is newest first: runs of consecutive days, each made at once. */
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && days[j + 1] == days[j] - 86400)
            j++;
        if ((rc = partition_run(cp, days[j], days[i])) != GI_OK)
            return rc;
        i = j + 1;
    }
    if (n > 0)
        progress(cp, "gpu_samples: partitions for %d days of samples\n", n);
    return GI_OK;
}

/* Inserts one batch (array of row objects) with `ins`; for resources,
 * also compares the documents the trigger rendered with the source's
 * using `docs`. */
static int flush_batch(struct copy *cp, const struct table *t, struct db_stmt *ins,
                       struct db_stmt *docs, json_t *batch)
{
    int64_t differ = 0;
    int rc;

    if (json_array_size(batch) == 0)
        return GI_OK;
    db_reset(ins);
    db_bind_json(ins, ":rows", batch);
    if ((rc = db_exec_done(cp->dst, ins)) != GI_OK)
        return fail(cp, rc, "cannot insert rows of %s (%s)", t->name, gi_status_name(rc));
    if (docs == NULL)
        return GI_OK;
    db_reset(docs);
    db_bind_json(docs, ":rows", batch);
    if ((rc = db_fetch_int(cp->dst, docs, &differ)) != GI_OK)
        return fail(cp, rc, "cannot compare the documents of %s", t->name);
    if (differ > 0)
        return fail(cp, GI_INTERNAL,
                    "%" PRId64 " documents of %s differ from the source's after the copy", differ,
                    t->name);
    return GI_OK;
}

static bool has_col(const struct table *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i], name) == 0)
            return true;
    return false;
}

/* Copies every row of t (for dc_counts, its empty groups only); *copied
 * is how many rows were sent. */
static int copy_table(struct copy *cp, const struct table *t, int64_t *copied)
{
    bool counts = strcmp(t->name, "dc_counts") == 0 && !cp->counts_off;
    bool docs = strcmp(t->name, "resources") == 0 && has_col(t, "doc") && has_col(t, "id");
    struct sqlbuf sel = {0}, ins = {0}, cmp = {0};
    struct db_stmt *s = NULL, *is = NULL, *cs = NULL;
    json_t *batch = json_array();
    size_t bytes = 0;
    int rc = GI_INTERNAL, step;

    *copied = 0;
    sb_add(&sel, "SELECT ");
    sb_cols(&sel, t, "");
    sb_add(&sel, " FROM \"%s\"%s", t->name, counts ? " WHERE n = 0" : "");
    sb_add(&ins, "INSERT INTO \"%s\" (", t->name);
    sb_cols(&ins, t, "");
    sb_add(&ins, ") SELECT ");
    sb_cols(&ins, t, "");
    sb_add(&ins, " FROM json_populate_recordset(NULL::\"%s\", :rows)%s", t->name,
           counts ? " ON CONFLICT DO NOTHING" : "");
    sb_add(&cmp,
           "SELECT COUNT(*) FROM json_populate_recordset(NULL::\"%s\", :rows) x "
           "LEFT JOIN \"%s\" r ON r.id = x.id "
           "WHERE r.doc IS NULL OR x.doc IS NULL OR r.doc::JSONB <> x.doc::JSONB",
           t->name, t->name);
    if (batch == NULL || !(s = prep_built(cp, cp->src, &sel)) ||
        !(is = prep_built(cp, cp->dst, &ins)) || (docs && !(cs = prep_built(cp, cp->dst, &cmp))))
        goto cleanup;
    rc = GI_OK;
    while (rc == GI_OK && (step = db_step(cp->src, s)) == DB_ROW) {
        json_t *vals = db_row_values(s), *row = json_object();
        if (vals == NULL || row == NULL) {
            json_decref(vals);
            json_decref(row);
            rc = fail(cp, GI_INVALID,
                      "row %" PRId64 " of %s has a value PostgreSQL cannot hold "
                      "(text that is not UTF-8, or an infinite number)",
                      *copied + 1, t->name);
            break;
        }
        for (int i = 0; i < t->ncols; i++) {
            json_t *v = json_array_get(vals, (size_t)i);
            json_object_set(row, t->cols[i], v);
            bytes += json_is_string(v) ? json_string_length(v) : 8;
        }
        json_decref(vals);
        json_array_append_new(batch, row);
        (*copied)++;
        if (json_array_size(batch) >= COPY_BATCH_ROWS || bytes >= COPY_BATCH_BYTES) {
            rc = flush_batch(cp, t, is, cs, batch);
            json_array_clear(batch);
            bytes = 0;
            if (*copied % 50000 < COPY_BATCH_ROWS)
                progress(cp, "%s: %" PRId64 " rows...\n", t->name, *copied);
        }
    }
    if (rc == GI_OK && step != DB_DONE)
        rc = fail(cp, db_status(step), "cannot read the source's table %s", t->name);
    if (rc == GI_OK)
        rc = flush_batch(cp, t, is, cs, batch);
cleanup:
    if (s)
        db_reset(s);
    db_stmt_free(s);
    db_stmt_free(is);
    db_stmt_free(cs);
    json_decref(batch);
    return rc;
}

/* Moves the identity sequence of t's id past its highest copied id, so
 * that the next row the target inserts gets a new one. */
static int advance_sequence(struct copy *cp, const struct table *t)
{
    struct sqlbuf b = {0};
    struct db_stmt *s;
    int rc;

    if (!has_col(t, "id"))
        return GI_OK;
    sb_add(&b,
           "SELECT setval(x.seq, x.top) FROM (SELECT pg_get_serial_sequence('\"%s\"', 'id') AS "
           "seq, (SELECT MAX(id) FROM \"%s\") AS top) x WHERE x.seq IS NOT NULL AND x.top IS NOT "
           "NULL",
           t->name, t->name);
    if (!(s = prep_built(cp, cp->dst, &b)))
        return GI_INTERNAL;
    while ((rc = db_step(cp->dst, s)) == DB_ROW)
        ;
    db_reset(s);
    db_stmt_free(s);
    return rc == DB_DONE ? GI_OK : fail(cp, db_status(rc), "cannot advance the ids of %s", t->name);
}

/* Compares the whole content of dc_counts with the source's. */
static int verify_counts(struct copy *cp, const struct table *t)
{
    struct sqlbuf sel = {0}, cmp = {0};
    struct db_stmt *s = NULL, *cs = NULL;
    json_t *rows = json_array();
    int64_t missing = 0;
    int rc = GI_INTERNAL, step;

    sb_add(&sel, "SELECT ");
    sb_cols(&sel, t, "");
    sb_add(&sel, " FROM \"%s\"", t->name);
    sb_add(&cmp, "SELECT COUNT(*) FROM (SELECT ");
    sb_cols(&cmp, t, "");
    sb_add(&cmp, " FROM json_populate_recordset(NULL::\"%s\", :rows) EXCEPT ALL SELECT ", t->name);
    sb_cols(&cmp, t, "");
    sb_add(&cmp, " FROM \"%s\") x", t->name);
    if (rows == NULL || !(s = prep_built(cp, cp->src, &sel)) ||
        !(cs = prep_built(cp, cp->dst, &cmp)))
        goto cleanup;
    rc = GI_OK;
    while (rc == GI_OK && (step = db_step(cp->src, s)) == DB_ROW) {
        json_t *vals = db_row_values(s), *row = json_object();
        for (int i = 0; vals && row && i < t->ncols; i++)
            json_object_set(row, t->cols[i], json_array_get(vals, (size_t)i));
        json_decref(vals);
        if (row == NULL || json_array_append_new(rows, row) != 0)
            rc = GI_INTERNAL;
    }
    if (rc == GI_OK && step != DB_DONE)
        rc = fail(cp, db_status(step), "cannot read the source's %s", t->name);
    db_reset(s);
    if (rc != GI_OK)
        goto cleanup;
    db_bind_json(cs, ":rows", rows);
    if ((rc = db_fetch_int(cp->dst, cs, &missing)) != GI_OK)
        rc = fail(cp, rc, "cannot compare %s", t->name);
    else if (missing > 0)
        rc = fail(cp, GI_INTERNAL, "%" PRId64 " rows of %s differ from the source's after the copy",
                  missing, t->name);
cleanup:
    db_stmt_free(s);
    db_stmt_free(cs);
    json_decref(rows);
    return rc;
}

/* Counts the rows of every table on both sides into the report; fails
 * when any count differs. */
static int verify(struct copy *cp)
{
    int rc = GI_OK;

    for (int i = 0; i < cp->n; i++) {
        const struct table *t = cp->order[i];
        struct store_copy_table *r = &cp->rep->tables[i];
        struct sqlbuf b = {0};
        sb_add(&b, "SELECT COUNT(*) FROM \"%s\"", t->name);
        gi_strlcpy(r->name, t->name, sizeof r->name);
        if ((rc = fetch_built_int(cp, cp->src, &b, &r->source_rows)) != GI_OK ||
            (rc = fetch_built_int(cp, cp->dst, &b, &r->target_rows)) != GI_OK)
            return fail(cp, rc, "cannot count the rows of %s", t->name);
        cp->rep->n = i + 1;
        if (r->source_rows != r->target_rows)
            rc = fail(cp, GI_INTERNAL,
                      "table %s has %" PRId64 " rows in the source but %" PRId64 " in the target",
                      t->name, r->source_rows, r->target_rows);
        if (rc == GI_OK && strcmp(t->name, "dc_counts") == 0)
            rc = verify_counts(cp, t);
        if (rc != GI_OK)
            return rc;
    }
    return GI_OK;
}

static const char sql_version[] = "SELECT COALESCE(MAX(version), 0) FROM schema_version";

/* Both databases at the same schema version (each was migrated to its
 * dialect's latest when opened; the lists are numbered alike). */
static int check_versions(struct copy *cp)
{
    struct db_stmt *s;
    int64_t from = 0, to = 0;

    if (!(s = db_prep(cp->src, sql_version)) || db_fetch_int(cp->src, s, &from) != GI_OK ||
        !(s = db_prep(cp->dst, sql_version)) || db_fetch_int(cp->dst, s, &to) != GI_OK)
        return fail(cp, GI_INTERNAL, "cannot read the schema versions");
    if (from != to)
        return fail(cp, GI_INVALID,
                    "the source is at schema version %" PRId64 " but the target at %" PRId64
                    "; run the same gpuinv version on both",
                    from, to);
    return GI_OK;
}

static const char sql_count_trigger_mine[] =
    "SELECT COUNT(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "WHERE c.oid = to_regclass('resources') AND t.tgname = 'resources_count_insert' "
    "AND pg_has_role(c.relowner, 'USAGE')";
static const char sql_count_trigger_off[] =
    "ALTER TABLE resources DISABLE TRIGGER resources_count_insert";
static const char sql_count_trigger_on[] =
    "ALTER TABLE resources ENABLE TRIGGER resources_count_insert";
/* Rows of dc_counts that a recount of resources does not give, and groups
 * of the recount that dc_counts lacks (groups left at zero excepted). */
static const char sql_recount_differs[] =
    "SELECT COUNT(*) FROM ("
    "(SELECT datacenter_id, kind, state, COUNT(*) AS n, COALESCE(SUM(gpu_count), 0) AS gpus "
    "FROM resources GROUP BY datacenter_id, kind, state "
    "EXCEPT ALL SELECT datacenter_id, kind, state, n, gpus FROM dc_counts WHERE n <> 0) "
    "UNION ALL "
    "(SELECT datacenter_id, kind, state, n, gpus FROM dc_counts WHERE n <> 0 "
    "EXCEPT ALL SELECT datacenter_id, kind, state, COUNT(*), COALESCE(SUM(gpu_count), 0) "
    "FROM resources GROUP BY datacenter_id, kind, state)) x";

/* Switches off the dc_counts insert trigger for the copy's transaction
 * when the copying user owns resources and both tables are copied (see
 * the top of this file); cp->counts_off says whether it did. */
static int counts_trigger_off(struct copy *cp)
{
    struct db_stmt *s;
    int64_t mine = 0;
    bool both = false, res = false;
    int rc;

    for (int i = 0; i < cp->n; i++) {
        both = both || strcmp(cp->t[i].name, "dc_counts") == 0;
        res = res || strcmp(cp->t[i].name, "resources") == 0;
    }
    if (!both || !res)
        return GI_OK;
    if (!(s = db_prep(cp->dst, sql_count_trigger_mine)) || db_fetch_int(cp->dst, s, &mine) != GI_OK)
        return fail(cp, GI_INTERNAL, "cannot read the target's triggers");
    if (mine == 0) {
        progress(cp, "resources: not owned by this user; the dc_counts trigger stays on "
                     "(a large copy takes longer)\n");
        return GI_OK;
    }
    if ((rc = db_simple(cp->dst, sql_count_trigger_off)) != GI_OK)
        return fail(cp, rc, "cannot switch off the dc_counts trigger for the copy");
    cp->counts_off = true;
    return GI_OK;
}

/* Switches the dc_counts trigger on again and checks the copied dc_counts
 * against a recount of the copied resources. */
static int counts_trigger_on(struct copy *cp)
{
    struct db_stmt *s;
    int64_t differ = 0;
    int rc;

    if (!cp->counts_off)
        return GI_OK;
    if ((rc = db_simple(cp->dst, sql_count_trigger_on)) != GI_OK)
        return fail(cp, rc, "cannot switch the dc_counts trigger on again");
    cp->counts_off = false;
    if (!(s = db_prep(cp->dst, sql_recount_differs)) ||
        (rc = db_fetch_int(cp->dst, s, &differ)) != GI_OK)
        return fail(cp, GI_INTERNAL, "cannot recount the copied resources");
    if (differ > 0)
        return fail(cp, GI_INTERNAL,
                    "%" PRId64 " groups of dc_counts disagree with the resources; the source's "
                    "counts are inconsistent",
                    differ);
    return GI_OK;
}

static int copy_all(struct copy *cp)
{
    int rc;

    if ((rc = check_versions(cp)) != GI_OK)
        return rc;
    if ((rc = discover(cp)) != GI_OK || (rc = order_tables(cp)) != GI_OK ||
        (rc = check_target(cp)) != GI_OK || (rc = make_partitions(cp)) != GI_OK ||
        (rc = counts_trigger_off(cp)) != GI_OK)
        return rc;
    for (int i = 0; i < cp->n; i++) {
        int64_t copied = 0;
        bool derived = strcmp(cp->order[i]->name, "dc_counts") == 0 && !cp->counts_off;
        if ((rc = copy_table(cp, cp->order[i], &copied)) != GI_OK)
            return rc;
        if (derived)
            progress(cp, "%s: filled by the target's triggers (%" PRId64 " empty groups copied)\n",
                     cp->order[i]->name, copied);
        else
            progress(cp, "%s: %" PRId64 " rows copied\n", cp->order[i]->name, copied);
    }
    if ((rc = counts_trigger_on(cp)) != GI_OK)
        return rc;
    for (int i = 0; i < cp->n; i++)
        if ((rc = advance_sequence(cp, cp->order[i])) != GI_OK)
            return rc;
    return verify(cp);
}

bool store_is_pg_target(const char *target) { return db_is_pg_target(target); }

int store_copy(struct store *from, struct store *to, bool dry_run, FILE *progress_to,
               struct store_copy_report *rep)
{
    struct copy *cp = calloc(1, sizeof *cp);
    int rc;

    memset(rep, 0, sizeof *rep);
    if (cp == NULL)
        return GI_INTERNAL;
    cp->rep = rep;
    cp->progress = progress_to;
    if (from == to) {
        rc =
            fail(cp, GI_INVALID, "the copy needs two databases, a SQLite one and a PostgreSQL one");
        free(cp);
        return rc;
    }
    cp->src = db_conn_get(from);
    cp->dst = db_conn_get(to);
    if (db_dialect(cp->src) != DB_SQLITE || db_dialect(cp->dst) != DB_PG) {
        rc = fail(cp, GI_INVALID, "the copy goes from a SQLite database to a PostgreSQL one");
        goto cleanup;
    }
    /* One snapshot of the source, one transaction on the target: a
     * failure (or a dry run) leaves the target as it was. */
    db_read_begin(cp->src);
    rc = db_tx_begin(cp->dst);
    /* References that may point forward in id order (an asset's parent)
     * are checked at commit. */
    if (rc == GI_OK)
        rc = db_simple(cp->dst, "SET CONSTRAINTS ALL DEFERRED");
    if (rc == GI_OK)
        rc = copy_all(cp);
    if (rc == GI_OK && dry_run)
        db_tx_end(cp->dst, GI_INTERNAL);
    else if ((rc = db_tx_end(cp->dst, rc)) != GI_OK)
        fail(cp, rc, "the copy was rolled back (%s)", gi_status_name(rc));
    db_read_end(cp->src);
cleanup:
    tables_free(cp);
    db_conn_put(to, cp->dst);
    db_conn_put(from, cp->src);
    free(cp);
    return rc;
}
