/* Writing a usage report's cells as the reply's text: JSON exactly as
 * jansson's compact encoder would write the document, or one CSV row per
 * item, without building a document. See usage_cells.h. */
#include "core/util.h"
#include "store/usage_cells.h"
#include "store/usage_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void usage_money_text(double micro_seconds, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f", micro_seconds / 3600.0 / 1e6 + 0.0);
    if (strcmp(buf, "-0.00") == 0)
        gi_strlcpy(buf, "0.00", len);
}

/* The figures of an item or the total, computed once for both formats. */
struct figures {
    double h[6]; /* owned, allocated, busy, allocated_idle, idle, unknown */
    double util, kwh;
    bool has_util, priced;
    char amount[48], split[4][48];
    char note[160]; /* "" none */
};

static const char *const hour_names[] = {"owned",          "allocated", "busy",
                                         "allocated_idle", "idle",      "unknown"};
static const char *const split_names[] = {"busy", "allocated_idle", "idle", "unknown"};

/* An item's (or the total's) figures from summed values; cur "" when
 * unpriced. `mixed`: the group and step hold more than one currency. */
static void figures_of(const double *v, const char *cur, bool mixed, struct figures *f)
{
    double owned_h = v[V_OWNED] / 3600.0, unpriced_h = v[V_UNPRICED] / 3600.0;
    static const int parts[] = {V_COST_BUSY, V_COST_AIDLE, V_COST_IDLE, V_COST_UNKNOWN};

    f->h[0] = usage_round6(owned_h);
    f->h[1] = usage_round6(v[V_ALLOC] / 3600.0);
    f->h[2] = usage_round6(v[V_BUSY] / 3600.0);
    f->h[3] = usage_round6(v[V_AIDLE] / 3600.0);
    f->h[4] = usage_round6(v[V_IDLE] / 3600.0);
    f->h[5] = usage_round6(v[V_UNKNOWN] / 3600.0);
    f->has_util = v[V_MEAS] > 0;
    f->util = f->has_util ? usage_round6(v[V_USUM] / v[V_MEAS]) : 0;
    f->kwh = usage_round6(v[V_WH] / 1000.0);
    f->priced = cur[0] && owned_h - unpriced_h > 1e-9;
    if (f->priced) {
        usage_money_text(v[V_COST], f->amount, sizeof f->amount);
        for (int i = 0; i < 4; i++)
            usage_money_text(v[parts[i]], f->split[i], sizeof f->split[i]);
    }
    f->note[0] = '\0';
    if (!f->priced) {
        if (owned_h > 0)
            gi_strlcpy(f->note, "no catalog rate covers these GPU-hours", sizeof f->note);
    } else if (unpriced_h > 1e-9) {
        snprintf(f->note, sizeof f->note,
                 "%.2f of these GPU-hours have no catalog rate and are not in the amount",
                 unpriced_h);
    } else if (mixed) {
        gi_strlcpy(f->note, "more than one currency: one item per currency", sizeof f->note);
    }
}

/* Writes a string known to need no escaping (ASCII, no quote, backslash
 * or control byte) as a JSON string. */
void usage_put_plain(struct textbuf *b, const char *s)
{
    tb_put(b, "\"", 1);
    tb_puts(b, s);
    tb_put(b, "\"", 1);
}

/* Writes a string member "key":value when value encodes (a string that is
 * not valid UTF-8 leaves the member out, as jansson does). */
static void put_member_str(struct textbuf *b, const char *key, const char *value)
{
    struct textbuf t = {0};

    if (tb_json_str(&t, value) && !t.failed) {
        tb_put(b, ",\"", 2);
        tb_puts(b, key);
        tb_put(b, "\":", 2);
        tb_put(b, t.p, t.len);
    }
    tb_free(&t);
}

/* The figures as the members of a JSON object, from "gpu_hours" to
 * "cost" (and "cost_note" unless note_override, which replaces it). */
static void put_figures_json(struct textbuf *b, const struct figures *f, const char *cur,
                             const char *note_override)
{
    struct textbuf c = {0};
    const char *note = note_override ? note_override : f->note;

    tb_puts(b, "{\"gpu_hours\":{");
    for (int i = 0; i < 6; i++) {
        tb_puts(b, i ? ",\"" : "\"");
        tb_puts(b, hour_names[i]);
        tb_put(b, "\":", 2);
        tb_json_real(b, f->h[i]);
    }
    tb_puts(b, "},\"util_avg\":");
    if (f->has_util)
        tb_json_real(b, f->util);
    else
        tb_puts(b, "null");
    tb_puts(b, ",\"energy_kwh\":");
    tb_json_real(b, f->kwh);
    tb_puts(b, ",\"cost\":");
    if (f->priced && tb_json_str(&c, cur) && !c.failed) {
        tb_puts(b, "{\"amount\":");
        usage_put_plain(b, f->amount);
        tb_puts(b, ",\"currency\":");
        tb_put(b, c.p, c.len);
        tb_puts(b, ",\"method\":\"catalog\",\"split\":{");
        for (int i = 0; i < 4; i++) {
            tb_puts(b, i ? ",\"" : "\"");
            tb_puts(b, split_names[i]);
            tb_put(b, "\":", 2);
            usage_put_plain(b, f->split[i]);
        }
        tb_puts(b, "}}");
    } else {
        tb_puts(b, "null");
    }
    tb_free(&c);
    if (note[0]) {
        tb_puts(b, ",\"cost_note\":");
        usage_put_plain(b, note);
    }
}

/* Writes a CSV cell of text, empty for NULL. */
static void put_csv_text(struct textbuf *b, const char *s, bool comma)
{
    if (comma)
        tb_put(b, ",", 1);
    if (s)
        tb_csv_cell(b, s, true);
}

/* Writes one item: the group's figures and key (group, kind, start). */
static void put_item(struct report_out *o, const struct cell *a, const struct figures *f,
                     const char *cur)
{
    struct textbuf *b = &o->b;
    char start[32];

    gi_time_format(a->start, start, sizeof start);
    if (!o->have_group || strcmp_null(o->group_of, a->group) != 0) {
        o->group.len = 0;
        o->group.failed = false;
        o->group_ok = o->csv ? true : tb_json_str(&o->group, a->group) && !o->group.failed;
        o->group_of = a->group;
        o->have_group = true;
    }
    if (o->csv) {
        put_csv_text(b, a->group, false);
        if (o->consumer)
            put_csv_text(b, a->kind ? a->kind : "none", true);
        put_csv_text(b, start, true);
        for (int i = 0; i < 6; i++) {
            tb_put(b, ",", 1);
            tb_csv_real(b, f->h[i]);
        }
        tb_put(b, ",", 1);
        if (f->has_util)
            tb_csv_real(b, f->util);
        tb_put(b, ",", 1);
        tb_csv_real(b, f->kwh);
        put_csv_text(b, f->priced ? f->amount : NULL, true);
        put_csv_text(b, f->priced ? cur : NULL, true);
        put_csv_text(b, f->priced ? "catalog" : NULL, true);
        put_csv_text(b, f->note[0] ? f->note : NULL, true);
        tb_put(b, "\r\n", 2);
        o->items++;
        return;
    }
    if (o->items++)
        tb_put(b, ",", 1);
    put_figures_json(b, f, cur, NULL);
    if (o->group_ok) {
        tb_puts(b, ",\"group\":");
        tb_put(b, o->group.p, o->group.len);
    }
    if (o->consumer)
        put_member_str(b, "kind", a->kind ? a->kind : "none");
    tb_puts(b, ",\"start\":");
    usage_put_plain(b, start);
    tb_put(b, "}", 1);
}

/* Writes the cells [a, b) of one group and step (sorted by currency, ""
 * first) as items: one item when they hold at most one currency, else
 * one per currency, the unpriced part as an item of its own. */
void usage_emit(struct report_out *o, const struct cell *a, const struct cell *b)
{
    size_t ncur = 0;
    const char *cur = "";
    double sum[V__N] = {0};

    for (const struct cell *c = a; c < b; c++)
        if (c->cur[0]) {
            ncur++;
            cur = c->cur;
        }
    for (const struct cell *c = a; c < b; c++) {
        for (int k = 0; k < V__N; k++)
            sum[k] += c->v[k];
        if (ncur > 1 || c + 1 == b) {
            struct figures f;
            const char *in = ncur > 1 ? c->cur : cur;
            figures_of(sum, in, ncur > 1, &f);
            put_item(o, a, &f, in);
            memset(sum, 0, sizeof sum);
        }
    }
}

/* Writes the total over every cell as a JSON object: one currency's cost,
 * or (several) null with one entry per currency in "costs". */
void usage_put_total(struct textbuf *b, const struct cells *cs)
{
    double sum[V__N] = {0};
    const char *cur = "";
    struct figures f;
    size_t ncur = 0, listed = 0;

    for (size_t i = 0; i < cs->n; i++) {
        bool seen = false;
        for (int k = 0; k < V__N; k++)
            sum[k] += cs->a[i].v[k];
        if (!cs->a[i].cur[0])
            continue;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(cs->a[j].cur, cs->a[i].cur) == 0;
        if (!seen) {
            ncur++;
            cur = cs->a[i].cur;
        }
    }
    figures_of(sum, ncur > 1 ? "" : cur, false, &f);
    put_figures_json(b, &f, ncur > 1 ? "" : cur,
                     ncur > 1 ? "more than one currency: see costs, one per currency" : NULL);
    if (ncur > 1) {
        tb_puts(b, ",\"costs\":[");
        for (size_t i = 0; i < cs->n; i++) {
            double one = 0;
            char amount[48];
            bool seen = false;
            struct textbuf c = {0};
            if (!cs->a[i].cur[0])
                continue;
            for (size_t j = 0; j < i && !seen; j++)
                seen = strcmp(cs->a[j].cur, cs->a[i].cur) == 0;
            if (seen)
                continue;
            for (size_t j = i; j < cs->n; j++)
                if (strcmp(cs->a[j].cur, cs->a[i].cur) == 0)
                    one += cs->a[j].v[V_COST];
            if (!tb_json_str(&c, cs->a[i].cur) || c.failed) {
                tb_free(&c);
                continue;
            }
            usage_money_text(one, amount, sizeof amount);
            tb_puts(b, listed++ ? ",{\"amount\":" : "{\"amount\":");
            usage_put_plain(b, amount);
            tb_puts(b, ",\"currency\":");
            tb_put(b, c.p, c.len);
            tb_puts(b, ",\"method\":\"catalog\"}");
            tb_free(&c);
        }
        tb_put(b, "]", 1);
    }
    tb_put(b, "}", 1);
}
