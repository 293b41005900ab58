/* The assets' audit trail: append-only events, each hash-chained to the
 * one before it, the chain's verification walk, and the readers of the
 * trail (one asset's timeline, every event of a time range).
 *
 * The canonical byte string of an event, hashed with SHA-256 (GnuTLS's,
 * which uses the CPU's SHA instructions where it has them: four times
 * libsodium's portable one, the most of a verification walk) into its
 * `hash` (lower-case hex), is
 *
 *   "gpuinv-asset-event-v1\n" followed by, for each of seq, asset_id, at,
 *   kind, actor, detail and prev_hash in this order, the field's byte
 *   length in decimal, ':', the field's bytes and '\n'
 *
 * where the integers (seq, asset_id, at) are written in decimal ASCII
 * ('-' before a negative one), detail is the JSON text exactly as stored
 * (compact, keys sorted, as the appender writes it) and prev_hash is the
 * previous event's hash ("" for seq 1). The length prefixes make the
 * string unambiguous whatever bytes a field holds.
 *
 * Appending reads the chain's head (asset_chain, row 1) under a row lock
 * on PostgreSQL (SELECT ... FOR UPDATE), writes the event with the next
 * seq, and moves the head, all inside the caller's writing transaction,
 * so that appenders on any number of replicas are serialized and the
 * seqs have no gaps. Triggers on both stores refuse UPDATE and DELETE of
 * asset_events; nothing here issues either. */
#include "store/assets_int.h"
#include "core/status.h"
#include "core/util.h"

#include <inttypes.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The filters of an events query: the time range, the event's kind, the
 * asset's kind and data center (NULL / 0: any). */
#define EV_WHERE                                                                                   \
    "WHERE e.at >= :from AND e.at < :to AND (:kind IS NULL OR e.kind = :kind) AND (:akind IS "     \
    "NULL OR a.kind = :akind) AND (:dc = 0 OR a.datacenter_id = :dc) AND " STORE_SCOPE_IN(         \
        "a.datacenter_id") " "
#define EV_COLS "e.seq, e.asset_id, e.at, e.kind, e.actor, e.detail, e.prev_hash, e.hash"

#define STATEMENTS(X)                                                                              \
    X(CHAIN_ENSURE, "INSERT INTO asset_chain (id, seq, hash) VALUES (1, 0, '') "                   \
                    "ON CONFLICT (id) DO NOTHING")                                                 \
    X(CHAIN_HEAD, "SELECT seq, hash FROM asset_chain WHERE id = 1")                                \
    X(CHAIN_HEAD_LOCK, "SELECT seq, hash FROM asset_chain WHERE id = 1 FOR UPDATE")                \
    X(CHAIN_MOVE, "UPDATE asset_chain SET seq = :seq, hash = :hash WHERE id = 1")                  \
    X(EV_ADD, "INSERT INTO asset_events (seq, asset_id, at, kind, actor, detail, prev_hash, "      \
              "hash) VALUES (:seq, :asset_id, :at, :kind, :actor, :detail, :prev, :hash)")         \
    X(EV_WALK, "SELECT " EV_COLS " FROM asset_events e ORDER BY e.seq")                            \
    X(EV_OF_ASSET, "SELECT " EV_COLS ", a.tag FROM asset_events e JOIN assets a ON a.id = "        \
                   "e.asset_id WHERE e.asset_id = :asset_id ORDER BY e.seq DESC " PAGE)            \
    X(EV_OF_ASSET_ASC, "SELECT " EV_COLS ", a.tag FROM asset_events e JOIN assets a ON a.id = "    \
                       "e.asset_id WHERE e.asset_id = :asset_id ORDER BY e.seq " PAGE)             \
    X(EV_OF_ASSET_COUNT, "SELECT COUNT(*) FROM asset_events e WHERE e.asset_id = :asset_id")       \
    X(EV_RANGE, "SELECT " EV_COLS ", a.tag FROM asset_events e LEFT JOIN assets a ON a.id = "      \
                "e.asset_id " EV_WHERE "ORDER BY e.seq " PAGE)                                     \
    X(EV_RANGE_DESC, "SELECT " EV_COLS ", a.tag FROM asset_events e LEFT JOIN assets a ON a.id = " \
                     "e.asset_id " EV_WHERE "ORDER BY e.seq DESC " PAGE)                           \
    X(EV_RANGE_COUNT, "SELECT COUNT(*) FROM asset_events e LEFT JOIN assets a ON a.id = "          \
                      "e.asset_id " EV_WHERE)

enum stmt_id { STATEMENTS(STORE_AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(STORE_AS_SQL)};

static struct db_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

/* The canonical string's bytes, gathered so that the hash is fed a few
 * large pieces rather than three small ones per field. */
struct ev_hash {
    gnutls_hash_hd_t h;
    size_t n;
    char buf[1024];
};

static void put(struct ev_hash *e, const char *p, size_t n)
{
    if (e->n + n > sizeof e->buf) {
        gnutls_hash(e->h, e->buf, e->n);
        e->n = 0;
        if (n > sizeof e->buf) {
            gnutls_hash(e->h, p, n);
            return;
        }
    }
    memcpy(e->buf + e->n, p, n);
    e->n += n;
}

/* v in decimal into out (at least 21 bytes); its length. */
static size_t put_dec(char *out, uint64_t v)
{
    char tmp[24];
    size_t n = 0, k = 0;

    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        out[k++] = tmp[--n];
    return k;
}

/* One length-prefixed field. */
static void put_field(struct ev_hash *e, const char *v, size_t n)
{
    char len[24];
    size_t k = put_dec(len, n);

    len[k++] = ':';
    put(e, len, k);
    put(e, v, n);
    put(e, "\n", 1);
}

static void put_int(struct ev_hash *e, int64_t v)
{
    char buf[24];
    size_t k = 0;

    if (v < 0)
        buf[k++] = '-';
    k += put_dec(buf + k, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    put_field(e, buf, k);
}

int asset_event_hash(int64_t seq, int64_t asset_id, int64_t at, const char *kind, const char *actor,
                     const char *detail, size_t detail_len, const char *prev_hash,
                     char hex[ASSET_HASH_HEX])
{
    static const char magic[] = "gpuinv-asset-event-v1\n";
    unsigned char out[32];
    struct ev_hash e;

    hex[0] = '\0';
    if (gnutls_hash_init(&e.h, GNUTLS_DIG_SHA256) < 0)
        return GI_INTERNAL;
    e.n = 0;
    put(&e, magic, sizeof magic - 1);
    put_int(&e, seq);
    put_int(&e, asset_id);
    put_int(&e, at);
    put_field(&e, kind, strlen(kind));
    put_field(&e, actor, strlen(actor));
    put_field(&e, detail, detail_len);
    put_field(&e, prev_hash, strlen(prev_hash));
    gnutls_hash(e.h, e.buf, e.n);
    gnutls_hash_deinit(e.h, out);
    gi_hex(out, sizeof out, hex);
    return GI_OK;
}

int asset_event_append(struct conn *c, int64_t asset_id, const char *kind, const char *actor,
                       json_t *detail, int64_t at)
{
    struct db_stmt *s;
    char prev[ASSET_HASH_HEX] = "", hash[ASSET_HASH_HEX];
    char *text = NULL;
    int64_t seq = 0;
    int rc = GI_INTERNAL, step;

    if (!kind || !*kind || !actor)
        return GI_INVALID;
    text = detail ? json_dumps(detail, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)
                  : strdup("{}");
    if (!text)
        return GI_INTERNAL;
    if (!(s = prep(c, ST_CHAIN_ENSURE)))
        goto cleanup;
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, db_dialect(c) == DB_PG ? ST_CHAIN_HEAD_LOCK : ST_CHAIN_HEAD)))
        goto cleanup;
    step = db_step(c, s);
    if (step == DB_ROW) {
        seq = db_col_int(s, 0);
        gi_strlcpy(prev, db_col_text(s, 1) ? db_col_text(s, 1) : "", sizeof prev);
    }
    db_reset(s);
    if (step != DB_ROW) {
        rc = step == DB_DONE ? GI_INTERNAL : db_status(step);
        goto cleanup;
    }
    seq++;
    if ((rc = asset_event_hash(seq, asset_id, at, kind, actor, text, strlen(text), prev, hash)) !=
        GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_EV_ADD)))
        goto cleanup;
    db_bind_int(s, ":seq", seq);
    db_bind_int(s, ":asset_id", asset_id);
    db_bind_int(s, ":at", at);
    db_bind_text(s, ":kind", kind);
    db_bind_text(s, ":actor", actor);
    db_bind_text(s, ":detail", text);
    db_bind_text(s, ":prev", prev);
    db_bind_text(s, ":hash", hash);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_CHAIN_MOVE)))
        goto cleanup;
    db_bind_int(s, ":seq", seq);
    db_bind_text(s, ":hash", hash);
    rc = db_exec_done(c, s);
cleanup:
    free(text);
    return rc;
}

/* Records the first break of the walk (later ones are not looked for). */
static void broken(struct store_chain_report *rep, int64_t seq, const char *why)
{
    if (rep->broken_seq == 0) {
        rep->broken_seq = seq;
        gi_strlcpy(rep->why, why, sizeof rep->why);
    }
}

int store_asset_chain_verify(struct store *st, struct store_chain_report *rep)
{
    struct conn *c = db_conn_get(st);
    struct db_stmt *s[2] = {NULL, NULL};
    char prev[ASSET_HASH_HEX] = "", hash[ASSET_HASH_HEX];
    int64_t expect = 1, head_seq = 0;
    char head_hash[ASSET_HASH_HEX] = "";
    bool have_head = false;
    int rc = GI_INTERNAL, step;

    memset(rep, 0, sizeof *rep);
    db_read_begin(c);
    if (!(s[0] = prep(c, ST_CHAIN_HEAD)))
        goto cleanup;
    step = db_step(c, s[0]);
    if (step == DB_ROW) {
        have_head = true;
        head_seq = db_col_int(s[0], 0);
        gi_strlcpy(head_hash, db_col_text(s[0], 1) ? db_col_text(s[0], 1) : "", sizeof head_hash);
    }
    db_reset(s[0]);
    if (step != DB_ROW && step != DB_DONE) {
        rc = db_status(step);
        goto cleanup;
    }
    if (!(s[1] = prep(c, ST_EV_WALK)))
        goto cleanup;
    while ((step = db_step(c, s[1])) == DB_ROW) {
        int64_t seq = db_col_int(s[1], 0);
        const char *kind = db_col_text(s[1], 3), *actor = db_col_text(s[1], 4);
        const char *detail = db_col_text(s[1], 5), *ph = db_col_text(s[1], 6);
        const char *stored = db_col_text(s[1], 7);
        char why[160];

        rep->events++;
        if (rep->broken_seq != 0)
            continue;
        if (seq != expect) {
            snprintf(why, sizeof why,
                     "event %" PRId64 " is missing (the next stored is %" PRId64 ")", expect, seq);
            broken(rep, expect, why);
            continue;
        }
        if (strcmp(ph ? ph : "", prev) != 0) {
            broken(rep, seq, "its prev_hash is not the previous event's hash");
            continue;
        }
        if (asset_event_hash(seq, db_col_int(s[1], 1), db_col_int(s[1], 2), kind ? kind : "",
                             actor ? actor : "", detail ? detail : "",
                             detail ? (size_t)db_col_bytes(s[1], 5) : 0, prev, hash) != GI_OK) {
            db_reset(s[1]);
            goto cleanup;
        }
        if (strcmp(stored ? stored : "", hash) != 0) {
            broken(rep, seq, "its content does not match its hash");
            continue;
        }
        gi_strlcpy(prev, hash, sizeof prev);
        expect = seq + 1;
    }
    db_reset(s[1]);
    if (step != DB_DONE) {
        rc = db_status(step);
        goto cleanup;
    }
    rep->head_seq = head_seq;
    /* Events removed from the end leave the head ahead of the last one. */
    if (rep->broken_seq == 0 && have_head && head_seq != expect - 1) {
        char why[160];
        snprintf(why, sizeof why,
                 "the chain's head is at %" PRId64 " but the last event is %" PRId64, head_seq,
                 expect - 1);
        broken(rep, expect - 1 < head_seq ? expect : head_seq + 1, why);
    } else if (rep->broken_seq == 0 && have_head && strcmp(head_hash, prev) != 0) {
        broken(rep, head_seq, "the chain's head hash is not the last event's hash");
    } else if (rep->broken_seq == 0 && !have_head && rep->events > 0) {
        broken(rep, 1, "events are stored but the chain has no head");
    }
    rc = GI_OK;
cleanup:
    db_read_end(c);
    db_conn_put(st, c);
    return rc;
}

/* An event row (columns EV_COLS, then the asset's tag) as its document. */
static json_t *event_doc(struct db_stmt *s)
{
    json_t *o = json_object(), *detail;
    json_error_t jerr;
    char at[32];

    gi_time_format(db_col_int(s, 2), at, sizeof at);
    json_object_set_new(o, "seq", json_integer(db_col_int(s, 0)));
    json_object_set_new(o, "asset_id", json_integer(db_col_int(s, 1)));
    json_object_set_new(o, "tag", db_col_text(s, 8) ? json_string(db_col_text(s, 8)) : json_null());
    json_object_set_new(o, "at", json_string(at));
    json_object_set_new(o, "kind", json_string(db_col_text(s, 3) ? db_col_text(s, 3) : ""));
    json_object_set_new(o, "actor", json_string(db_col_text(s, 4) ? db_col_text(s, 4) : ""));
    detail = json_loads(db_col_text(s, 5) ? db_col_text(s, 5) : "{}", JSON_DECODE_ANY, &jerr);
    json_object_set_new(o, "detail", detail ? detail : json_object());
    json_object_set_new(o, "prev_hash", json_string(db_col_text(s, 6) ? db_col_text(s, 6) : ""));
    json_object_set_new(o, "hash", json_string(db_col_text(s, 7) ? db_col_text(s, 7) : ""));
    return o;
}

/* The total (count statement s[0]) and one page (s[1]) of events, in one
 * snapshot. */
static int event_page(struct conn *c, struct db_stmt **s, json_t **items, int64_t *total)
{
    json_t *arr = json_array();
    int rc = db_read_batch(c, s, 2), step;

    if (rc == GI_OK)
        rc = db_fetch_int(c, s[0], total);
    if (rc == GI_OK) {
        while ((step = db_step(c, s[1])) == DB_ROW)
            json_array_append_new(arr, event_doc(s[1]));
        db_reset(s[1]);
        rc = step == DB_DONE ? GI_OK : db_status(step);
    }
    db_read_end(c);
    if (rc == GI_OK)
        *items = arr;
    else
        json_decref(arr);
    return rc;
}

int store_asset_events(struct store *st, int64_t asset_id, const struct store_page *pg,
                       json_t **items, int64_t *total)
{
    struct conn *c = db_conn_get(st);
    bool asc = pg && pg->sort && !pg->desc;
    struct db_stmt *s[2] = {prep(c, ST_EV_OF_ASSET_COUNT),
                            prep(c, asc ? ST_EV_OF_ASSET_ASC : ST_EV_OF_ASSET)};
    int rc;

    *items = NULL;
    for (int i = 0; i < 2; i++)
        if (s[i]) {
            db_bind_int(s[i], ":asset_id", asset_id);
            db_bind_page(s[i], pg);
        }
    rc = event_page(c, s, items, total);
    db_conn_put(st, c);
    return rc;
}

int store_asset_events_range(struct store *st, int64_t from, int64_t to,
                             const struct store_page *pg, json_t **items, int64_t *total)
{
    struct store_event_filter f = {.from = from, .to = to};
    return store_asset_events_find(st, &f, pg, items, total);
}

int store_asset_events_find(struct store *st, const struct store_event_filter *f,
                            const struct store_page *pg, json_t **items, int64_t *total)
{
    struct conn *c = db_conn_get(st);
    bool desc = pg && pg->sort && pg->desc;
    struct db_stmt *s[2] = {prep(c, ST_EV_RANGE_COUNT),
                            prep(c, desc ? ST_EV_RANGE_DESC : ST_EV_RANGE)};
    int rc;

    *items = NULL;
    for (int i = 0; i < 2; i++)
        if (s[i]) {
            db_bind_int(s[i], ":from", f->from);
            db_bind_int(s[i], ":to", f->to);
            db_bind_text(s[i], ":kind", f->kind);
            db_bind_text(s[i], ":akind", f->asset_kind);
            db_bind_int(s[i], ":dc", f->datacenter_id);
            db_bind_scope(s[i], &f->scope);
            db_bind_page(s[i], pg);
        }
    rc = event_page(c, s, items, total);
    db_conn_put(st, c);
    return rc;
}
