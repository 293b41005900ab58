/* Private interface between the parts of the usage reports: usage_query.c
 * (reading the rollups into cells), usage_cells.c (the cells and their
 * index) and usage_text.c (writing the cells as the reply's JSON or CSV
 * text). Nothing outside these files includes it. */
#ifndef GI_USAGE_CELLS_H
#define GI_USAGE_CELLS_H

#include "core/textbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The summed columns of a cell, in the statements' order. */
enum {
    V_OWNED,
    V_ALLOC,
    V_BUSY,
    V_AIDLE,
    V_IDLE,
    V_UNKNOWN,
    V_USUM,
    V_MEAS,
    V_WH,
    V_COST,
    V_COST_BUSY,
    V_COST_AIDLE,
    V_COST_IDLE,
    V_COST_UNKNOWN,
    V_UNPRICED,
    V__N
};

struct cell {
    size_t rank; /* a paged report: the group's place in the page (else 0) */
    char *group; /* NULL: none */
    int64_t gid; /* gpu / datacenter grouping: the id the name is looked up by; -1 none */
    char *kind;  /* consumer grouping only */
    int64_t start;
    char cur[4];
    double v[V__N];
    uint64_t hash; /* of the key, while the cells are indexed (struct cells) */
};

struct cells {
    struct cell *a;
    size_t n, cap;
    bool dc; /* the ids of the groups are data centers' (else GPUs') */
    /* While rows are folded in: an open-addressing index of the cells by
     * key (slot: the cell's place + 1, and for usage_cell_add's index the high
     * half of the key's hash in the high 32 bits; 0 empty), nslot a power
     * of two. */
    size_t *slot, nslot;
};

/* Rows the database may hand back for one report, and cells it may fold
 * them into. */
#define USAGE_MAX_CELLS 200000

/* Drops the cells' key index (before the cells are reordered); frees the
 * cells and their index. */
void usage_cells_unindex(struct cells *cs);
void usage_cells_free(struct cells *cs);
/* FNV-1a over a cell's key. */
uint64_t usage_cell_hash(const char *group, int64_t gid, const char *kind, int64_t start,
                         const char *cur);
/* The order of a report's cells: rank, kind, group, id, step, currency. */
int usage_cell_cmp(const void *pa, const void *pb);
/* Adds v into the cell of the key, or appends one (GI_TOO_LARGE past
 * USAGE_MAX_CELLS). */
int usage_cell_add(struct cells *cs, const char *group, int64_t gid, const char *kind,
                   int64_t start, const char *cur, const double *v);
/* Sums cells of the same key, sorted by usage_cell_cmp (a week's days
 * arrive apart). */
void usage_cells_merge(struct cells *cs);
/* The number of groups (group, id, kind) among cells sorted so. */
size_t usage_cells_groups(const struct cells *cs);
/* Keeps the cells of a page (rank > 0), freeing the others, sorted by
 * usage_cell_cmp. */
void usage_cells_keep_ranked(struct cells *cs);

/* strcmp with NULL (none) before any text. */
static inline int strcmp_null(const char *a, const char *b)
{
    if (!a || !b)
        return a ? 1 : b ? -1 : 0;
    return strcmp(a, b);
}

/* The text of a report being written: JSON (each item an object, as
 * jansson would encode it) or CSV (each item one flat row). */
struct report_out {
    struct textbuf b;
    bool csv, consumer;
    size_t items;
    /* The last group written and its encoding, reused while items of the
     * same group follow (a report's items come grouped). */
    bool have_group, group_ok;
    const char *group_of;
    struct textbuf group;
};

/* Writes a string known to need no escaping (ASCII, no quote, backslash
 * or control byte) as a JSON string. */
void usage_put_plain(struct textbuf *b, const char *s);

/* Writes the cells [a, b) of one group and step (sorted by currency, ""
 * first) as items: one item when they hold at most one currency, else
 * one per currency, the unpriced part as an item of its own. */
void usage_emit(struct report_out *o, const struct cell *a, const struct cell *b);

/* Writes the total over every cell of cs as a JSON object: one
 * currency's cost, or (several) null with one entry per currency in
 * "costs". */
void usage_put_total(struct textbuf *b, const struct cells *cs);

#endif
