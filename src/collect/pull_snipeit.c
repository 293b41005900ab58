/* Pulling Snipe-IT: /api/v1/hardware?limit=&offset= until `total` rows
 * are read (or a page comes back short), into assets under the source
 * "snipeit:<source id>". The token is a personal access token sent as
 * "Authorization: Bearer"; it needs only the right to view assets. Error
 * answers with HTTP 200 ({"status":"error"}) fail the pull like any
 * other error. */
#include "collect/pull.h"
#include "collect/pull_assets.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/snipeit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pull_run_snipeit(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                     struct pull_result *res)
{
    const char *base = json_string_value(json_object_get(cfg, "url"));
    const char *token = json_string_value(json_object_get(cfg, "token"));
    const char *category = json_string_value(json_object_get(cfg, "category"));
    int64_t limit = json_is_integer(json_object_get(cfg, "page_size"))
                        ? json_integer_value(json_object_get(cfg, "page_size"))
                        : 100,
            offset = 0;
    json_t *records = json_array(), *warnings = json_array();
    char auth[4200], filters[1024] = "", source[48], url[4096], perr[SNIPEIT_ERR_LEN];
    struct assetpull p = {.cfg = cfg, .system = "Snipe-IT", .auth = NULL};
    int rc = -1;

    (void)cluster;
    if (token && *token) {
        snprintf(auth, sizeof auth, "Bearer %s", token);
        p.auth = auth;
    }
    /* A category is given by id (the API filters category_id). */
    if (!assetpull_param(filters, sizeof filters,
                         category && gi_parse_int64(category, 1, INT64_MAX, &(int64_t){0}) == GI_OK
                             ? "category_id"
                             : "category",
                         category) ||
        !assetpull_param(filters, sizeof filters, "status",
                         json_string_value(json_object_get(cfg, "status")))) {
        snprintf(res->error, sizeof res->error, "the filters are too long");
        goto cleanup;
    }
    for (int page = 0;; page++) {
        char *body = NULL;
        size_t len, rows;
        int64_t total;
        int w;

        if (page >= ASSETPULL_MAX_PAGES) {
            snprintf(res->error, sizeof res->error, "Snipe-IT: more than %d pages",
                     ASSETPULL_MAX_PAGES);
            goto cleanup;
        }
        w = snprintf(url, sizeof url, "%s%sapi/v1/hardware?limit=%lld&offset=%lld%s", base,
                     base[strlen(base) - 1] == '/' ? "" : "/", (long long)limit, (long long)offset,
                     filters);
        if (w < 0 || (size_t)w >= sizeof url) {
            snprintf(res->error, sizeof res->error, "the Snipe-IT URL is too long");
            goto cleanup;
        }
        if (assetpull_get(&p, url, &body, &len, res->error, sizeof res->error) != 0)
            goto cleanup;
        rc = snipeit_parse_page(body, len, records, warnings, &total, &rows, perr, sizeof perr);
        free(body);
        if (rc != GI_OK) {
            snprintf(res->error, sizeof res->error, "Snipe-IT answered with an error: %s",
                     rc == GI_INVALID ? perr : gi_status_name(rc));
            rc = -1;
            goto cleanup;
        }
        rc = -1;
        offset += (int64_t)rows;
        if (rows == 0 || (total >= 0 && offset >= total) || (total < 0 && (int64_t)rows < limit))
            break;
    }
    snprintf(source, sizeof source, "snipeit:%lld", (long long)source_id);
    rc = assetpull_store(st, source_id, source, records, warnings, res);
cleanup:
    json_decref(records);
    json_decref(warnings);
    return rc;
}
