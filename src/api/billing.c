/* Cloud billing import: a CSV export in the body (AWS CUR, GCP billing
 * export, Azure cost details; ?format=aws|gcp|azure|auto, auto by
 * default), its GPU lines stored, matched and spread (see
 * src/store/billing.c); and the stored lines that matched nothing. Any bad
 * line, or ?dry_run=true, writes nothing. */
#include "api/api.h"
#include "api/scope.h"
#include "api/csvimport.h"
#include "core/status.h"
#include "parse/billing.h"
#include "store/store.h"

#include <malloc.h>
#include <string.h>

#define BILLING_MAX_ROWS 2000000

void api_billing_import(struct req *r)
{
    struct billing_file f;
    struct import_report im = {0};
    enum billing_format fmt = BILLING_AUTO;
    const char *fname = NULL;
    json_t *report = NULL;
    bool dry_run = false;
    int st;

    memset(&f, 0, sizeof f);
    if (!req_param_bool_or_reply(r, "dry_run", &dry_run) ||
        !req_param_str_or_reply(r, "format", 16, &fname))
        return;
    if (fname && !billing_format_from_name(fname, &fmt)) {
        reply_error(r, 400, "validation_failed", "format",
                    "format must be aws, gcp, azure or auto");
        return;
    }
    if (!req_media_type_is(r, "text/csv")) {
        reply_error(r, 415, "unsupported_media_type", NULL,
                    "the body must be CSV in UTF-8 (Content-Type: text/csv)");
        return;
    }
    st = billing_parse(r->body ? r->body : "", r->body_len, fmt, BILLING_MAX_ROWS, &f);
    if (st == GI_TOO_LARGE) {
        reply_error(r, 413, "too_large", NULL, "more than %d rows in one import", BILLING_MAX_ROWS);
        goto cleanup;
    }
    if (st == GI_INVALID) {
        im.errors = json_array();
        im.header = json_array();
        im.rows = f.rows;
        for (size_t i = 0; i < f.nproblems; i++)
            import_problem(&im, f.problems[i].line, f.problems[i].column, f.problems[i].column,
                           f.problems[i].reason);
        im.nerr = f.nerr;
        import_verdict_or_reply(r, &im);
        goto cleanup;
    }
    if (st != GI_OK) {
        reply_status(r, st, "billing import");
        goto cleanup;
    }
    st = store_billing_import(r->store, r->who.name, &f, dry_run, &report);
    if (st != GI_OK)
        reply_status(r, st, "billing import");
    else
        reply_json(r, 200, report);
cleanup:
    import_report_free(&im);
    billing_file_free(&f);
    malloc_trim(0);
}

void api_billing_unmatched(struct req *r)
{
    static const char *const sortable[] = {NULL};
    struct store_page pg;
    json_t *items = NULL;
    int64_t total = 0;
    int st;

    if (!who_unconfined_or_reply(r, "the list of unmatched billing lines") ||
        !req_page_or_reply(r, sortable, &pg))
        return;
    if ((st = store_billing_unmatched(r->store, &pg, &items, &total)) != GI_OK) {
        reply_status(r, st, "billing lines");
        return;
    }
    reply_list(r, items, total, pg.offset);
}
