/* Fuzz target for the billing export parser (src/parse/billing.c): any
 * bytes, read as each provider, end in kept lines or listed problems
 * within the documented bounds, and every kept line is whole. The first
 * byte picks the provider. */
#include "core/money.h"
#include "core/status.h"
#include "parse/billing.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct billing_file f;
    enum billing_format fmt = BILLING_AUTO;
    int rc;

    if (size > 0) {
        fmt = (enum billing_format)(data[0] % 4);
        data++;
        size--;
    }
    rc = billing_parse((const char *)data, size, fmt, 10000, &f);
    if (rc != GI_OK && rc != GI_INVALID && rc != GI_TOO_LARGE)
        abort();
    if (rc == GI_INVALID && (f.nerr == 0 || f.nproblems == 0))
        abort();
    if (f.nproblems > BILLING_MAX_PROBLEMS || f.n > f.rows || f.skipped > f.rows)
        abort();
    for (size_t i = 0; i < f.n; i++) {
        const struct billing_line *l = &f.lines[i];
        if (!l->line_key[0] || l->end < l->start || !gi_currency_ok(l->currency) ||
            !json_is_object(l->tags))
            abort();
    }
    billing_file_free(&f);
    return 0;
}
