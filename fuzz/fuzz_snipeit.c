/* libFuzzer target for the Snipe-IT parsers: the first byte picks the
 * page parser, the HTML decoder, the money reader or the lookup by
 * serial; the rest is the input. Checks the promises of snipeit.h on every result. */
#include "core/status.h"
#include "parse/snipeit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void page(const char *d, size_t n)
{
    json_t *recs = json_array(), *warns = json_array(), *r;
    char err[SNIPEIT_ERR_LEN];
    int64_t total;
    size_t rows, i;
    int st = snipeit_parse_page(d, n, recs, warns, &total, &rows, err, sizeof err);

    if (st == GI_INVALID && err[0] == '\0')
        abort();
    if (st == GI_OK && rows < json_array_size(recs))
        abort();
    json_array_foreach(recs, i, r)
        if (json_string_value(json_object_get(r, "kind")) == NULL || json_object_get(r, "stage"))
            abort();
    json_decref(recs);
    json_decref(warns);
}

static void text(const char *d, size_t n, int which)
{
    char in[512], out[512];

    if (n >= sizeof in)
        n = sizeof in - 1;
    memcpy(in, d, n);
    in[n] = '\0';
    if (which == 1) {
        /* Decoding never grows the text. */
        if (snipeit_html_decode(in, out, sizeof out) && strlen(out) > strlen(in))
            abort();
    } else if (snipeit_money(in, out, sizeof out)) {
        /* A read amount is digits with at most one '.'. */
        const char *dot = strchr(out, '.');
        if (out[0] == '\0' || strspn(out, "0123456789.") != strlen(out) ||
            (dot && strchr(dot + 1, '.')))
            abort();
    }
}

/* A lookup's matches are as many as it says, never more. */
static void lookup(const char *d, size_t n)
{
    json_t *m = NULL;
    char err[SNIPEIT_ERR_LEN];
    int64_t total;
    int st = snipeit_lookup_parse(d, n, "SER1", &m, &total, err, sizeof err);

    if (st == GI_INVALID && (err[0] == '\0' || m != NULL))
        abort();
    if (st == GI_OK && (!json_is_array(m) || total < (int64_t)json_array_size(m)))
        abort();
    json_decref(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] % 4 == 3)
        lookup((const char *)data + 1, size - 1);
    else if (data[0] % 3 == 0)
        page((const char *)data + 1, size - 1);
    else
        text((const char *)data + 1, size - 1, data[0] % 3);
    return 0;
}
