/* CSV import of resources: the header names the fields (the same names as
 * the JSON API; `datacenter` may give a data center by name, `metadata`
 * holds the metadata object as JSON and `metadata.KEY` columns fill single
 * keys). The resource CSV export writes exactly these columns. Every row is validated first;
 * with any bad row, or with ?dry_run=true, nothing is written and every
 * problem is reported with its line and column. */
#include "api/api.h"
#include "api/scope.h"
#include "api/csvimport.h"
#include "core/kinds.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/csv.h"
#include "store/store.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define IMPORT_MAX_ROWS 50000

/* Resolves a data center name to its id, caching in `cache`. */
static int dc_by_name(struct store *st, json_t *cache, const char *name, int64_t *id)
{
    json_t *hit = json_object_get(cache, name);
    int rc;

    if (hit) {
        *id = json_integer_value(hit);
        return *id ? GI_OK : GI_NOT_FOUND;
    }
    rc = store_dc_id_by_name(st, name, id);
    if (rc == GI_OK || rc == GI_NOT_FOUND)
        json_object_set_new(cache, name, json_integer(rc == GI_OK ? *id : 0));
    return rc;
}

/* Builds the JSON object of one row from the header; false (with an error
 * recorded) when a cell cannot be placed. */
static bool row_object(struct store *st, struct import_report *im, const struct csv *c,
                       char header[][128], size_t ncols, json_t *dcs, json_t *obj)
{
    json_t *md = NULL;

    for (size_t i = 0; i < ncols; i++) {
        const char *col = header[i], *v = i < c->nfields ? c->fields[i] : "";
        if (*v == '\0')
            continue;
        if (*col == '\0') {
            char name[16];
            import_column(im, i, name, sizeof name);
            import_problem(im, c->record_line, name, NULL,
                           "a value in a column without a header name");
            json_decref(md);
            return false;
        }
        v = import_unneutralize(v);
        if (strcmp(col, "datacenter") == 0) {
            int64_t id;
            int rc = dc_by_name(st, dcs, v, &id);
            if (rc != GI_OK) {
                import_problem(im, c->record_line, col, "datacenter_id",
                               rc == GI_NOT_FOUND ? "no data center has this name"
                                                  : "data center lookup failed");
                json_decref(md);
                return false;
            }
            json_object_set_new(obj, "datacenter_id", json_integer(id));
        } else if (strncmp(col, "metadata.", 9) == 0) {
            if (md == NULL)
                md = json_object();
            json_object_set_new(md, col + 9, json_string(v));
        } else if (strcmp(col, "metadata") == 0) {
            /* The whole metadata object as JSON, as the export writes it;
             * metadata.KEY columns of the same row add to it. */
            json_error_t jerr;
            json_t *whole = json_loads(v, JSON_REJECT_DUPLICATES, &jerr);
            if (!json_is_object(whole)) {
                import_problem(im, c->record_line, col, "metadata",
                               "metadata must be a JSON object");
                json_decref(whole);
                json_decref(md);
                return false;
            }
            if (md)
                json_object_update_missing(md, whole);
            else
                md = json_incref(whole);
            json_decref(whole);
        } else {
            json_object_set_new(obj, col, json_string(v));
        }
    }
    if (md)
        json_object_set_new(obj, "metadata", md);
    return true;
}

void api_resources_import(struct req *r)
{
    struct import_report im;
    struct csv c;
    char(*header)[128] = NULL;
    size_t ncols = 0;
    json_t *objs = json_array(), *lines = json_array(), *dcs = json_object();
    json_t *seen = json_object();
    struct gi_resource_in *ins = NULL;
    struct store_resource *rows = NULL;
    int *row_st = NULL;
    size_t n;
    int st;

    if (!import_open_or_reply(r, &c, &im))
        goto cleanup;
    ncols = c.nfields;
    header = calloc(ncols, sizeof *header);
    for (size_t i = 0; header && i < ncols; i++) {
        const char *h = c.fields[i];
        while (*h == ' ')
            h++;
        gi_strlcpy(header[i], h, sizeof header[i]);
        for (size_t j = strlen(header[i]); j > 0 && header[i][j - 1] == ' '; j--)
            header[i][j - 1] = '\0';
    }
    while ((st = import_next_row_or_reply(r, &c, &im, IMPORT_MAX_ROWS)) == 1) {
        json_t *obj;
        if (c.nfields > ncols) {
            import_problem(&im, c.record_line, NULL, NULL, "more cells than header columns");
            continue;
        }
        obj = json_object();
        if (row_object(r->store, &im, &c, header, ncols, dcs, obj)) {
            json_array_append_new(objs, obj);
            json_array_append_new(lines, json_integer((json_int_t)c.record_line));
        } else {
            json_decref(obj);
        }
    }
    if (st < 0)
        goto cleanup;
    ins = calloc(json_array_size(objs) + 1, sizeof *ins);
    rows = calloc(json_array_size(objs) + 1, sizeof *rows);
    if (!ins || !rows || !header) {
        reply_error(r, 500, "internal", NULL, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < json_array_size(objs); i++) {
        struct gi_verr err = {0};
        size_t line = (size_t)json_integer_value(json_array_get(lines, i));
        char key[512];
        st = api_resource_check(r->store, json_array_get(objs, i), true, &ins[i], &err);
        if (st != GI_OK) {
            import_problem(&im, line, err.field, err.field,
                           st == GI_INVALID ? err.message : "validation failed");
            continue;
        }
        snprintf(key, sizeof key, "%lld/%s/%s", (long long)ins[i].datacenter_id, ins[i].kind,
                 ins[i].name);
        if (json_object_get(seen, key)) {
            import_problem(&im, line, "name", "name",
                           "the same resource appears twice in this file");
            continue;
        }
        json_object_set_new(seen, key, json_integer((json_int_t)line));
        api_resource_to_store(&ins[i], &rows[i]);
    }
    if (!import_verdict_or_reply(r, &im))
        goto cleanup;
    for (size_t i = 0; i < json_array_size(objs); i++)
        if (!who_may_dc_or_reply(r, rows[i].datacenter_id))
            goto cleanup;
    /* A dry run makes the very inserts the import would, then rolls them
     * back, so it meets the same conflicts with stored records. */
    n = json_array_size(objs);
    if ((row_st = calloc(n + 1, sizeof *row_st)) == NULL) {
        reply_error(r, 500, "internal", NULL, "out of memory");
        goto cleanup;
    }
    st = store_res_import(r->store, r->who.name, rows, n, im.dry_run, row_st);
    if (st == GI_CONFLICT || st == GI_NOT_FOUND) {
        for (size_t i = 0; i < n; i++) {
            size_t line = (size_t)json_integer_value(json_array_get(lines, i));
            if (row_st[i] == GI_CONFLICT)
                import_problem(&im, line, "name", "name",
                               "a resource with this kind and name already exists in the data "
                               "center");
            else if (row_st[i] == GI_NOT_FOUND)
                import_problem(&im, line, "datacenter_id", "datacenter_id",
                               "data center not found");
        }
        import_conflict_reply(r, &im);
    } else if (st != GI_OK) {
        reply_status(r, st, "import");
    } else if (im.dry_run) {
        import_dry_run_reply(r, &im, json_pack("{s:I}", "would_import", (json_int_t)n));
    } else {
        reply_json(r, 201, json_pack("{s:I, s:b}", "imported", (json_int_t)im.rows, "dry_run", 0));
    }
cleanup:
    for (size_t i = 0; ins && i < json_array_size(objs); i++)
        json_decref(ins[i].attrs);
    free(ins);
    free(rows);
    free(row_st);
    free(header);
    csv_free(&c);
    import_report_free(&im);
    json_decref(objs);
    json_decref(lines);
    json_decref(dcs);
    json_decref(seen);
    /* A large import frees tens of MiB that glibc would otherwise keep
     * mapped for the life of the server. */
    malloc_trim(0);
}
