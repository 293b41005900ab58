/* Private to the asset noun files (assets.c, asset_fields.c,
 * asset_ingest.c, asset_events.c, asset_stages.c): the column model of an
 * asset and the helpers they share inside one writing transaction. */
#ifndef GI_STORE_ASSETS_INT_H
#define GI_STORE_ASSETS_INT_H

#include "store/store_int.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of a SHA-256 hash in hex, with its NUL. */
#define ASSET_HASH_HEX 65

/* asset_events.c: the hex SHA-256 of an event's canonical byte string
 * (see the top of asset_events.c); GI_INTERNAL (hex empty) when no hash
 * could be made. */
int asset_event_hash(int64_t seq, int64_t asset_id, int64_t at, const char *kind, const char *actor,
                     const char *detail, size_t detail_len, const char *prev_hash,
                     char hex[ASSET_HASH_HEX]);

/* The writable columns of an asset, in the order of the statements of
 * assets.c. An asset's values travel as a JSON object keyed by these
 * names: text as strings, integers, reals, custom as an object, and null
 * for a column without a value. */
enum asset_col_type { AC_TEXT, AC_INT, AC_DBL, AC_JSON };
struct asset_col {
    const char *name;
    enum asset_col_type type;
};
extern const struct asset_col asset_cols[];

/* How a write treats the fields it is given. */
struct asset_write {
    const char *actor;  /* recorded on the events */
    const char *source; /* recorded as the fields' provenance */
    bool person;        /* the API or a CSV import: overrides every source */
    bool strict;        /* the first bad field fails the write (else it is dropped) */
    int64_t at;
};

/* asset_fields.c: reads an input record (the API's field names: tag,
 * kind, serial, location{datacenter, room, rack, u, storage},
 * purchase_cost{amount, currency}, parent / parent_tag / parent_serial,
 * custom, ...) into column values *cols (a new object holding only the
 * fields the record gives; caller owns). Each bad field is left out and
 * appended to errors as {"index": index, "field", "error"}; with strict
 * the reading stops at the first. *stage receives the record's stage
 * (NULL when it gives none; borrowed from rec). GI_OK, GI_INVALID (strict
 * and a field was bad) or a database status. */
int asset_fields_read(struct conn *c, const json_t *rec, bool strict, int64_t self_id, int index,
                      json_t **cols, const char **stage, json_t *errors);

/* asset_fields.c: true for a date written YYYY-MM-DD that exists; *days
 * (may be NULL) receives its day number since 1970-01-01. */
bool asset_date_parse(const char *s, int64_t *days);

/* assets.c: applies column values to asset id (0: creates one, with
 * `stage` or "active"): every field the write may change is written, with
 * its provenance, and one event records what changed ("created" or
 * "updated"). *id receives the asset's id, *outcome 'c' (created), 'u'
 * (updated) or 'n' (nothing changed). Inside the caller's transaction. */
int asset_apply(struct conn *c, const struct asset_write *w, int64_t id, const json_t *cols,
                const char *stage, int64_t *id_out, char *outcome);
/* assets.c: the asset of `kind` with this serial (the lowest id), or of
 * (source, source_key); GI_NOT_FOUND when there is none. */
int asset_id_by_serial(struct conn *c, const char *kind, const char *serial, int64_t *id);
int asset_id_by_source_key(struct conn *c, const char *source, const char *key, int64_t *id);

/* assets.c: whether the EPC among cols (if any) is free of every asset
 * but id. */
int asset_epc_free(struct conn *c, const json_t *cols, int64_t id, bool *free_out);
/* asset_fields.c: the serial is one to match by (not empty, not a
 * placeholder such as "To Be Filled By O.E.M."). */
bool asset_serial_usable(const char *serial);
/* asset_stages.c: the asset's current stage into buf. */
int asset_stage_of(struct conn *c, int64_t asset_id, char *buf, size_t len);

/* scans.c: the asset with this tag (ignoring case; an exact match first)
 * or, when tag is NULL, this EPC (ignoring case); GI_NOT_FOUND when none. */
int asset_find(struct conn *c, const char *tag, const char *epc, int64_t *id);
/* scans.c: moves asset id to the location given as column values
 * (datacenter_id, room, rack, rack_u, storage; absent ones cleared),
 * marking those fields set by 'scan' and appending a "located" event
 * {from, to} under actor; *moved false (nothing written) when it is there
 * already. Inside the caller's writing transaction. */
int asset_locate(struct conn *c, int64_t id, const json_t *to_cols, const char *actor, int64_t at,
                 bool *moved);
/* scans.c: location column values as the API's location object
 * {datacenter (name), room, rack, u, storage}; caller owns *loc. */
int asset_location_doc(struct conn *c, const json_t *cols, json_t **loc);

/* reservations.c: what asset_id's move to stage `to` ends, called by
 * asset_stage_change() after the move: the open reservation whose spare
 * it is, as consumed when it went active (the replacement) and as
 * cancelled when it went to any stage but spare; the open reservation
 * made for it, as not_needed when it returned to active or spare (its
 * being decommissioned or repaired keeps it: the spare is still its
 * replacement). Inside the caller's writing transaction. */
int asset_reservations_on_stage(struct conn *c, int64_t asset_id, const char *to, const char *actor,
                                int64_t at);
/* reservations.c: called after every write of asset_id's data center
 * (asset_apply, asset_locate, a data center's deletion): the open
 * reservation whose spare it is ends as cancelled when the spare is no
 * longer in the data center of the asset it was reserved for. A move
 * within the data center, or of the failing asset, ends nothing. Inside
 * the caller's writing transaction. */
int asset_reservations_on_move(struct conn *c, int64_t asset_id, const char *actor, int64_t at);
/* reservations.c: ends as expired at most `limit` open reservations whose
 * expires_at is `now` or before, soonest first, each with its events;
 * *ended: how many. Inside the caller's writing transaction. */
int asset_reservations_expire(struct conn *c, const char *actor, int64_t now, int64_t limit,
                              int64_t *ended);
/* reservations.c: whether an open reservation's expires_at is `now` or
 * before (one index read, in or out of a transaction), so that a caller
 * takes the writer lock for asset_reservations_expire() only then. *due
 * is false on an error too. */
int asset_reservations_due(struct conn *c, int64_t now, bool *due);

/* ---- asset_docs.c: the stored document (migration 041) ---- */

/* Growable text; `failed` once an allocation failed (the text is then
 * incomplete). Zero-initialized; release with asset_text_free(). */
struct asset_text {
    char *p;
    size_t len, cap;
    bool failed;
};
void asset_text_add(struct asset_text *t, const char *s, size_t n);
void asset_text_free(struct asset_text *t);

/* Straight-line book value (micro-units) on day `today` (days since
 * 1970-01-01) over `years` from purchase_date down to the salvage value;
 * false when the cost, the date or the years are missing. */
bool asset_book_value(bool has_cost, int64_t cost, const char *purchase_date, double years,
                      int64_t salvage, int64_t today, int64_t *value);
/* A warranty ending `end`, on day `today`: "expired", "expiring" (30 days
 * or less) or "in_warranty" with *days_left; NULL when end is no date. */
const char *asset_warranty_status(const char *end, int64_t today, int64_t *days_left);

/* Renders asset id's stored document (assets.doc, doc_cut) from
 * asset_doc_get(), in the caller's writing transaction; a document that
 * did not change is not written again. Every statement that writes an
 * asset's columns is followed by this (asset_apply, asset_stage_change,
 * asset_locate, the reconcile job's last_seen, a data center's deletion). */
int asset_doc_save(struct conn *c, int64_t id);
/* asset_doc_save() for each id of a JSON array of integers. */
int asset_docs_save_all(struct conn *c, const json_t *ids);
/* Every data center's name by id, as a list page reads them beside its
 * rows (a few dozen rows where a join cost more, see ASSET_DOC_SELECT in
 * assets.c). */
struct asset_dc_names {
    size_t n;
    int64_t *ids; /* ascending */
    char **names;
};
/* The statement of the names (id, name by id), prepared on c; borrowed. */
struct db_stmt *asset_dc_names_prep(struct conn *c);
/* Reads the rows of s (asset_dc_names_prep(), executed) into *out, which
 * the caller frees with asset_dc_names_free(). */
int asset_dc_names_read(struct conn *c, struct db_stmt *s, struct asset_dc_names *out);
void asset_dc_names_free(struct asset_dc_names *d);
/* Appends, to t, the listed document of the current row of s, whose
 * columns from col on are: a.doc, a.doc_cut, a.purchase_cost_micros,
 * a.purchase_date, a.depreciation_years, a.salvage_micros, a.currency,
 * a.warranty_end, a.datacenter_id, the parent's tag (ASSET_DOC_COLS in
 * assets.c), the data center's name from dcs (borrowed); `today` in days
 * since 1970-01-01. The text equals json_dumps(JSON_COMPACT) of
 * asset_doc_get(). False (nothing appended) when the row has no stored
 * document. */
bool asset_doc_append(struct asset_text *t, struct db_stmt *s, int col, int64_t today,
                      const struct asset_dc_names *dcs);

#endif
