/* Asset labels: one label as SVG (the QR code of the asset's scan URL
 * <base URL>/scan/<tag>, with the tag, model and serial as text), and a
 * printable sheet of labels for a selection as one HTML document holding
 * one SVG per sheet, sized with CSS @page, so that a browser prints every
 * sheet of the selection in one go at its true size (A4: 3 x 8 labels of
 * 70 x 37 mm; Letter: 3 x 10 of 2.625 x 1 in, the Avery 5160 layout). */
#include "api/api.h"
#include "api/scope.h"
#include "core/qrsvg.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Labels one sheet request may ask for. */
#define LABELS_MAX 1000

static char base_url[512] = "http://127.0.0.1:8080";

void api_labels_base_url_set(const char *url)
{
    size_t n;

    gi_strlcpy(base_url, url, sizeof base_url);
    n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        base_url[--n] = '\0';
}

/* A paper's grid, in millimetres. */
struct paper {
    const char *name, *css_size;
    double width, height;    /* the sheet */
    double left, top;        /* the first label's corner */
    double pitch_x, pitch_y; /* from one label's corner to the next */
    double label_w, label_h;
    int cols, rows;
};

static const struct paper papers[] = {
    {"a4", "210mm 297mm", 210, 297, 0, 0.5, 70, 37, 70, 37, 3, 8},
    {"letter", "8.5in 11in", 215.9, 279.4, 4.7625, 12.7, 69.85, 25.4, 66.675, 25.4, 3, 10},
};

/* At most max bytes of s, not cutting a UTF-8 sequence. */
static void text_clipped(FILE *f, const char *s, size_t max)
{
    char buf[96];
    size_t n = s ? strlen(s) : 0;

    if (!s)
        return;
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    gi_xml_escape(f, buf);
}

/* One label of w x h mm at (x, y) of the drawing, as a nested <svg>. */
static int label_write(FILE *f, const json_t *asset, double x, double y, double w, double h)
{
    const char *tag = json_string_value(json_object_get(asset, "tag"));
    const char *model = json_string_value(json_object_get(asset, "model"));
    const char *serial = json_string_value(json_object_get(asset, "serial"));
    double qr = h - 2, tx = qr + 2, fs = h / 7;
    char attrs[128], *url = NULL;
    size_t len = 0;
    FILE *u;
    int rc;

    if (!tag)
        return GI_INTERNAL;
    if (!(u = open_memstream(&url, &len)))
        return GI_INTERNAL;
    fprintf(u, "%s/scan/%s", base_url, tag);
    fclose(u);
    fprintf(f,
            "<svg x=\"%.3f\" y=\"%.3f\" width=\"%.3f\" height=\"%.3f\" viewBox=\"0 0 %.3f %.3f\">",
            x, y, w, h, w, h);
    snprintf(attrs, sizeof attrs, "x=\"1\" y=\"1\" width=\"%.3f\" height=\"%.3f\"", qr, qr);
    rc = gi_qr_svg(f, url, attrs, NULL);
    free(url);
    if (rc != GI_OK)
        return rc;
    fprintf(f,
            "<g font-family=\"DejaVu Sans, Arial, sans-serif\" fill=\"#000\">"
            "<text x=\"%.3f\" y=\"%.3f\" font-size=\"%.3f\" font-weight=\"bold\">",
            tx, h * 0.32, fs * 1.2);
    text_clipped(f, tag, 24);
    fprintf(f, "</text><text x=\"%.3f\" y=\"%.3f\" font-size=\"%.3f\">", tx, h * 0.58, fs * 0.8);
    text_clipped(f, model, 32);
    fprintf(f, "</text><text x=\"%.3f\" y=\"%.3f\" font-size=\"%.3f\">", tx, h * 0.8, fs * 0.8);
    if (serial) {
        fputs("S/N ", f);
        text_clipped(f, serial, 32);
    }
    fputs("</text></g></svg>", f);
    return GI_OK;
}

void api_assets_label(struct req *r)
{
    json_t *asset = NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f;
    int st;

    if (!who_may_see_or_reply(r, WHO_ASSET, r->key, 0))
        return;
    /* The energy sum over one second: the label does not show it. */
    st = store_asset_get(r->store, r->key, 0, 1, &asset);
    if (st != GI_OK) {
        reply_status(r, st, "asset");
        return;
    }
    if (!(f = open_memstream(&buf, &len))) {
        reply_status(r, GI_INTERNAL, "label");
        goto cleanup;
    }
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
          "width=\"70mm\" height=\"37mm\" viewBox=\"0 0 70 37\">",
          f);
    st = label_write(f, asset, 0, 0, 70, 37);
    fputs("</svg>\n", f);
    fclose(f);
    if (st != GI_OK)
        reply_status(r, st, "label");
    else
        reply_bytes(r, 200, "image/svg+xml; charset=utf-8", buf, len, true);
cleanup:
    free(buf);
    json_decref(asset);
}

/* The selection: the assets named by tags=a,b,c (each must exist), else
 * those the list filters match (by tag, at most LABELS_MAX). */
static bool selection_or_reply(struct req *r, json_t **out)
{
    const char *tags = req_param(r, "tags");
    struct store_asset_filter fl = {0};
    struct store_page pg = {LABELS_MAX, 0, "tag", false};
    const char *dc = NULL;
    int64_t total = 0;
    int st;

    *out = NULL;
    if (tags && *tags) {
        json_t *arr = json_array();
        for (const char *p = tags; *p;) {
            const char *e = strchr(p, ',');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            char tag[128];
            json_t *a = NULL;
            if (n > 0) {
                if (n >= sizeof tag || json_array_size(arr) >= LABELS_MAX) {
                    reply_error(r, 400, "invalid_parameter", "tags",
                                "tags: at most %d tags of at most 127 bytes", LABELS_MAX);
                    json_decref(arr);
                    return false;
                }
                memcpy(tag, p, n);
                tag[n] = '\0';
                /* an asset outside the token's data centers is as missing */
                if ((st = who_sees(r, WHO_ASSET, tag, 0)) != GI_OK ||
                    (st = store_asset_get(r->store, tag, 0, 1, &a)) != GI_OK) {
                    if (st == GI_NOT_FOUND)
                        reply_error(r, 404, "not_found", "tags", "no asset has the tag %s", tag);
                    else
                        reply_status(r, st, "asset");
                    json_decref(arr);
                    return false;
                }
                json_array_append_new(arr, a);
            }
            p = e ? e + 1 : p + n;
        }
        *out = arr;
        return true;
    }
    if (!req_param_str_or_reply(r, "kind", 16, &fl.kind) ||
        !req_param_str_or_reply(r, "stage", 32, &fl.stage) ||
        !req_param_str_or_reply(r, "model", 128, &fl.model) ||
        !req_param_str_or_reply(r, "q", 128, &fl.q) ||
        !req_param_str_or_reply(r, "parent", 64, &fl.parent) ||
        !req_param_str_or_reply(r, "warranty_before", 10, &fl.warranty_before) ||
        !req_param_str_or_reply(r, "datacenter", 128, &dc))
        return false;
    if (dc && *dc && gi_parse_int64(dc, 1, INT64_MAX, &fl.datacenter_id) != GI_OK) {
        st = store_dc_id_by_name(r->store, dc, &fl.datacenter_id);
        if (st == GI_NOT_FOUND)
            fl.datacenter_id = -1;
        else if (st != GI_OK) {
            reply_status(r, st, "data center");
            return false;
        }
    }
    if (!who_dc_filter_or_reply(r, &fl.datacenter_id, &fl.scope))
        return false;
    if ((fl.kind && !store_asset_kind_valid(fl.kind)) ||
        (fl.stage && !store_asset_stage_valid(fl.stage))) {
        reply_error(r, 400, "invalid_parameter",
                    fl.kind && !store_asset_kind_valid(fl.kind) ? "kind" : "stage",
                    "unknown kind or stage");
        return false;
    }
    if ((st = store_asset_list(r->store, &fl, &pg, out, &total)) != GI_OK) {
        reply_status(r, st, "assets");
        return false;
    }
    return true;
}

void api_assets_labels(struct req *r)
{
    const char *name = req_param(r, "paper");
    const struct paper *p = NULL;
    json_t *assets = NULL, *a;
    char *buf = NULL;
    size_t len = 0, i, per, pages;
    FILE *f = NULL;
    int st = GI_OK;

    if (!name || !*name)
        name = "a4";
    for (size_t k = 0; k < sizeof papers / sizeof papers[0]; k++)
        if (strcmp(papers[k].name, name) == 0)
            p = &papers[k];
    if (!p) {
        reply_error(r, 400, "invalid_parameter", "paper", "paper must be a4 or letter");
        return;
    }
    if (!selection_or_reply(r, &assets))
        return;
    per = (size_t)(p->cols * p->rows);
    pages = (json_array_size(assets) + per - 1) / per;
    if (!(f = open_memstream(&buf, &len))) {
        reply_status(r, GI_INTERNAL, "labels");
        goto cleanup;
    }
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>Asset labels</title><style>@page { size: %s; margin: 0 } "
            "html, body { margin: 0; padding: 0 } "
            "svg.sheet { display: block; width: %.3fmm; height: %.3fmm; "
            "break-after: page; page-break-after: always } "
            "svg.sheet:last-child { break-after: auto; page-break-after: auto }</style>"
            "</head><body>\n",
            p->css_size, p->width, p->height);
    json_array_foreach(assets, i, a) {
        size_t slot = i % per;
        if (slot == 0)
            fprintf(f,
                    "<svg class=\"sheet\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.3fmm\" "
                    "height=\"%.3fmm\" viewBox=\"0 0 %.3f %.3f\" data-page=\"%zu\">",
                    p->width, p->height, p->width, p->height, i / per + 1);
        st = label_write(f, a, p->left + (double)(slot % (size_t)p->cols) * p->pitch_x,
                         p->top + (double)(slot / (size_t)p->cols) * p->pitch_y, p->label_w,
                         p->label_h);
        if (st != GI_OK)
            break;
        if (slot == per - 1 || i + 1 == json_array_size(assets))
            fputs("</svg>\n", f);
    }
    fputs("</body></html>\n", f);
    fclose(f);
    if (st != GI_OK) {
        reply_status(r, st, "labels");
        goto cleanup;
    }
    {
        char n[24];
        snprintf(n, sizeof n, "%zu", pages);
        reply_bytes(r, 200, "text/html; charset=utf-8", buf, len, true);
        reply_header(r, "X-Pages", n);
    }
cleanup:
    free(buf);
    json_decref(assets);
}

void api_scan_page(struct req *r)
{
    static const char body[] = "The asset's scan page is in the dashboard.\n";
    char loc[200];

    if (!store_asset_tag_valid(r->key)) {
        reply_error(r, 404, "not_found", NULL, "no asset can have this tag");
        return;
    }
    /* Relative, so that it stays under the prefix a reverse proxy adds:
     * <base>/scan/<tag> -> <base>/#/scan/<tag>. */
    snprintf(loc, sizeof loc, "../#/scan/%s", r->key);
    reply_bytes(r, 302, "text/plain; charset=utf-8", body, sizeof body - 1, false);
    reply_header(r, "Location", loc);
}
