/* The cells of a usage report, the sums per (group, id, kind, step,
 * currency), kept in an open-addressing index while rows are folded in
 * (see usage_cells.h). */
#include "store/usage_cells.h"
#include "core/status.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

/* Drops the key index (before the cells are reordered). */
void usage_cells_unindex(struct cells *cs)
{
    free(cs->slot);
    cs->slot = NULL;
    cs->nslot = 0;
}

void usage_cells_free(struct cells *cs)
{
    for (size_t i = 0; i < cs->n; i++) {
        free(cs->a[i].group);
        free(cs->a[i].kind);
    }
    free(cs->a);
    usage_cells_unindex(cs);
}

/* FNV-1a over a cell's key. */
uint64_t usage_cell_hash(const char *group, int64_t gid, const char *kind, int64_t start,
                         const char *cur)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const char *parts[3] = {group ? group : "", kind ? kind : "", cur};
    int64_t nums[2] = {gid, start};

    for (int i = 0; i < 3; i++) {
        for (const char *p = parts[i]; *p; p++)
            h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
        h = (h ^ 0xff) * 0x100000001b3ull;
    }
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 8; b++)
            h = (h ^ (uint64_t)((nums[i] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    return h;
}

/* A slot of the index: the cell's place + 1 in the low 32 bits (USAGE_MAX_CELLS
 * is far below 2^32), the high half of its key's hash above them, so that
 * a probe compares the hashes without reading the cell (a cache miss in
 * the 10 MB of a report's cells, per probe of each of its rows). */
_Static_assert(sizeof(size_t) >= 8, "a slot holds a cell's place and half its hash");
static size_t slot_of(size_t i, uint64_t hash)
{
    return (size_t)((hash >> 32) << 32 | (uint64_t)(i + 1));
}
static size_t slot_cell(size_t slot) { return (size_t)(slot & 0xffffffffu) - 1; }

/* (Re)builds the index for nslot slots. */
static int cells_index(struct cells *cs, size_t nslot)
{
    size_t *slot = calloc(nslot, sizeof *slot);

    if (!slot)
        return GI_INTERNAL;
    free(cs->slot);
    cs->slot = slot;
    cs->nslot = nslot;
    for (size_t i = 0; i < cs->n; i++) {
        size_t j = (size_t)cs->a[i].hash & (nslot - 1);
        while (slot[j])
            j = (j + 1) & (nslot - 1);
        slot[j] = slot_of(i, cs->a[i].hash);
    }
    return GI_OK;
}

int usage_cell_cmp(const void *pa, const void *pb)
{
    const struct cell *a = pa, *b = pb;
    int d = a->rank < b->rank ? -1 : a->rank > b->rank;

    if (d == 0)
        d = strcmp_null(a->kind, b->kind);
    if (d == 0)
        d = strcmp_null(a->group, b->group);
    if (d == 0)
        d = a->gid < b->gid ? -1 : a->gid > b->gid;
    if (d == 0)
        d = a->start < b->start ? -1 : a->start > b->start;
    if (d == 0)
        d = strcmp(a->cur, b->cur);
    return d;
}

/* Adds the row into the cell of the same key, or appends one. */
int usage_cell_add(struct cells *cs, const char *group, int64_t gid, const char *kind,
                   int64_t start, const char *cur, const double *v)
{
    struct cell *c;
    char cur3[sizeof c->cur];
    uint64_t h;
    size_t j;

    gi_strlcpy(cur3, cur, sizeof cur3); /* the key as the cell keeps it */
    cur = cur3;
    if (cs->n * 2 >= cs->nslot && cells_index(cs, cs->nslot ? cs->nslot * 2 : 1024) != GI_OK)
        return GI_INTERNAL;
    h = usage_cell_hash(group, gid, kind, start, cur);
    j = (size_t)h & (cs->nslot - 1);
    for (; cs->slot[j]; j = (j + 1) & (cs->nslot - 1)) {
        if ((uint64_t)cs->slot[j] >> 32 != h >> 32)
            continue;
        c = &cs->a[slot_cell(cs->slot[j])];
        if (c->hash == h && c->start == start && c->gid == gid &&
            strcmp_null(c->group, group) == 0 && strcmp_null(c->kind, kind) == 0 &&
            strcmp(c->cur, cur) == 0) {
            for (int k = 0; k < V__N; k++)
                c->v[k] += v[k];
            return GI_OK;
        }
    }
    if (cs->n >= USAGE_MAX_CELLS)
        return GI_TOO_LARGE;
    if (cs->n == cs->cap) {
        size_t ncap = cs->cap ? cs->cap * 2 : 256;
        struct cell *p = realloc(cs->a, ncap * sizeof *p);
        if (!p)
            return GI_INTERNAL;
        cs->a = p;
        cs->cap = ncap;
    }
    c = &cs->a[cs->n];
    memset(c, 0, sizeof *c);
    c->group = group ? strdup(group) : NULL;
    c->kind = kind ? strdup(kind) : NULL;
    if ((group && !c->group) || (kind && !c->kind)) {
        free(c->group);
        free(c->kind);
        return GI_INTERNAL;
    }
    cs->slot[j] = slot_of(cs->n, h);
    cs->n++;
    c->gid = gid;
    c->start = start;
    c->hash = h;
    gi_strlcpy(c->cur, cur, sizeof c->cur);
    memcpy(c->v, v, sizeof c->v);
    return GI_OK;
}

/* Sums sorted cells of the same key (a week's days arrive apart). */
void usage_cells_merge(struct cells *cs)
{
    size_t w = 0;

    for (size_t i = 0; i < cs->n; i++) {
        if (w > 0 && usage_cell_cmp(&cs->a[w - 1], &cs->a[i]) == 0) {
            for (int k = 0; k < V__N; k++)
                cs->a[w - 1].v[k] += cs->a[i].v[k];
            free(cs->a[i].group);
            free(cs->a[i].kind);
            continue;
        }
        cs->a[w++] = cs->a[i];
    }
    cs->n = w;
}

size_t usage_cells_groups(const struct cells *cs)
{
    size_t n = 0;

    for (size_t i = 0; i < cs->n; i++)
        if (i == 0 || strcmp_null(cs->a[i].group, cs->a[i - 1].group) != 0 ||
            cs->a[i].gid != cs->a[i - 1].gid || strcmp_null(cs->a[i].kind, cs->a[i - 1].kind) != 0)
            n++;
    return n;
}

/* Keeps the cells of a page (rank > 0), freeing the others, sorted by
 * usage_cell_cmp. */
void usage_cells_keep_ranked(struct cells *cs)
{
    size_t w = 0;

    for (size_t i = 0; i < cs->n; i++) {
        if (cs->a[i].rank == 0) {
            free(cs->a[i].group);
            free(cs->a[i].kind);
            continue;
        }
        cs->a[w++] = cs->a[i];
    }
    cs->n = w;
    usage_cells_unindex(cs);
    if (cs->n)
        qsort(cs->a, cs->n, sizeof *cs->a, usage_cell_cmp);
}
