/* GPUs and hosts from a spreadsheet export (CSV), for teams whose data
 * lives in spreadsheets today. Headers are matched to fields by name with
 * common aliases ("GPU UUID", "Serial Number", "Host"), or explicitly with
 * map.FIELD=HEADER query parameters. Every row is checked first; with any
 * bad row, or ?dry_run=true, nothing is written and every problem is
 * reported with its line and column. A good file is written in one
 * transaction, one batch per host, under the source named by ?source=. */
#include "api/api.h"
#include "api/csvimport.h"
#include "collect/hostbatch.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/csv.h"
#include "store/store.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GPU_IMPORT_MAX_ROWS GI_OBS_MAX

enum gcol {
    C_HOST,
    C_UUID,
    C_NAME,
    C_SERIAL,
    C_INDEX,
    C_BUS,
    C_MEM,
    C_DRIVER,
    C_DC,
    C_CLUSTER,
    C_TEAM,
    C_ENV,
    C__N
};

/* Each field with the header spellings it answers to (normalized: lower
 * case, letters and digits only). */
static const struct {
    const char *field;
    const char *aliases[6];
} fields[C__N] = {
    [C_HOST] = {"hostname", {"hostname", "host", "server", "node", "machine", NULL}},
    [C_UUID] = {"uuid", {"uuid", "gpuuuid", "gpuid", NULL}},
    [C_NAME] = {"model", {"model", "name", "gpumodel", "gpuname", "productname", NULL}},
    [C_SERIAL] = {"serial", {"serial", "serialnumber", "gpuserial", "sn", NULL}},
    [C_INDEX] = {"index", {"index", "gpuindex", "slot", NULL}},
    [C_BUS] = {"pci_bus_id", {"pcibusid", "busid", "pcibus", "pci", NULL}},
    [C_MEM] = {"memory_total_mib", {"memorytotalmib", "memorymib", "memory", "vram", NULL}},
    [C_DRIVER] = {"driver", {"driver", "driverversion", NULL}},
    [C_DC] = {"datacenter", {"datacenter", "dc", "site", "location", NULL}},
    [C_CLUSTER] = {"cluster", {"cluster", NULL}},
    [C_TEAM] = {"team", {"team", "owner", "ownerteam", NULL}},
    [C_ENV] = {"env", {"env", "environment", NULL}},
};

static void normalize(const char *in, char *out, size_t len)
{
    size_t j = 0;
    for (; *in && j + 1 < len; in++)
        if (isalnum((unsigned char)*in))
            out[j++] = (char)tolower((unsigned char)*in);
    out[j] = '\0';
}

/* Maps header columns to fields: explicit map.FIELD params first, then
 * aliases. Two columns answering to one field are recorded as a problem
 * (neither is silently preferred). Returns false after replying 400. */
static bool map_header_or_reply(struct req *r, const struct csv *c, struct import_report *im,
                                int col_of[C__N])
{
    char norm[128], key[64];

    for (int f = 0; f < C__N; f++) {
        const char *want;
        col_of[f] = -1;
        snprintf(key, sizeof key, "map.%s", fields[f].field);
        want = req_param(r, key);
        for (size_t i = 0; i < c->nfields && col_of[f] < 0; i++) {
            if (want) {
                if (strcmp(c->fields[i], want) == 0)
                    col_of[f] = (int)i;
                continue;
            }
            normalize(c->fields[i], norm, sizeof norm);
            for (const char *const *a = fields[f].aliases; *a && col_of[f] < 0; a++)
                if (strcmp(norm, *a) == 0)
                    col_of[f] = (int)i;
        }
        for (size_t i = (size_t)col_of[f] + 1; !want && col_of[f] >= 0 && i < c->nfields; i++) {
            char why[200];
            const char *name, *first;
            bool again = false;
            normalize(c->fields[i], norm, sizeof norm);
            for (const char *const *a = fields[f].aliases; *a && !again; a++)
                again = strcmp(norm, *a) == 0;
            name = json_string_value(json_array_get(im->header, i));
            first = json_string_value(json_array_get(im->header, (size_t)col_of[f]));
            /* The same name twice is already reported with the header. */
            if (!again || strcasecmp(name, first) == 0)
                continue;
            snprintf(why, sizeof why,
                     "columns %d and %zu both give %s; remove one, or choose with map.%s=HEADER",
                     col_of[f] + 1, i + 1, fields[f].field, fields[f].field);
            import_problem(im, c->record_line, name, fields[f].field, why);
        }
        if (want && col_of[f] < 0) {
            reply_error(r, 400, "invalid_parameter", key, "no column named '%.64s' in the header",
                        want);
            return false;
        }
    }
    if (col_of[C_HOST] < 0 || col_of[C_UUID] < 0) {
        reply_error(r, 400, "invalid_csv", col_of[C_HOST] < 0 ? "hostname" : "uuid",
                    "the header needs a %s column (or map.%s=HEADER)",
                    col_of[C_HOST] < 0 ? "host name" : "GPU UUID",
                    col_of[C_HOST] < 0 ? "hostname" : "uuid");
        return false;
    }
    return true;
}

/* Copies a bounded, valid text cell; false (error recorded) otherwise. */
static bool cell(struct import_report *im, const struct csv *c, int col, const char *name,
                 char *dst, size_t cap, bool required)
{
    const char *v = col >= 0 && (size_t)col < c->nfields ? c->fields[col] : "";

    while (*v == ' ')
        v++;
    if (*v == '\0' || gi_is_placeholder(v)) {
        if (required)
            import_problem(im, c->record_line, name, name, "required");
        return !required;
    }
    if (strlen(v) >= cap || !gi_text_ok(v)) {
        import_problem(im, c->record_line, name, name, "too long, or not text");
        return false;
    }
    gi_strlcpy(dst, v, cap);
    for (size_t n = strlen(dst); n > 0 && dst[n - 1] == ' '; n--)
        dst[n - 1] = '\0';
    return true;
}

/* Reads one data row into a GPU observation. */
static bool read_row(struct import_report *im, const struct csv *c, const int col_of[C__N],
                     struct gi_gpu_obs *g, char *dc, size_t dclen, char *cluster, size_t cllen)
{
    char num[64] = "", bus[GI_BUS_LEN] = "";
    /* Every cell is read, so that each bad one is reported. */
    int good = cell(im, c, col_of[C_HOST], "hostname", g->hostname, 254, true);
    good &= cell(im, c, col_of[C_UUID], "uuid", g->uuid, sizeof g->uuid, true);
    good &= cell(im, c, col_of[C_NAME], "model", g->name, sizeof g->name, false);
    good &= cell(im, c, col_of[C_SERIAL], "serial", g->serial, sizeof g->serial, false);
    good &= cell(im, c, col_of[C_DRIVER], "driver", g->driver, sizeof g->driver, false);
    good &= cell(im, c, col_of[C_TEAM], "team", g->team, sizeof g->team, false);
    good &= cell(im, c, col_of[C_ENV], "env", g->env, sizeof g->env, false);
    good &= cell(im, c, col_of[C_DC], "datacenter", dc, dclen, false);
    good &= cell(im, c, col_of[C_CLUSTER], "cluster", cluster, cllen, false);
    bool ok = good != 0;
    int64_t idx;
    double mem;

    if (cell(im, c, col_of[C_INDEX], "index", num, sizeof num, false) && num[0]) {
        if (gi_parse_int64(num, 0, 4096, &idx) == GI_OK)
            g->index = (int)idx;
        else
            ok = false,
            import_problem(im, c->record_line, "index", "index", "not a whole number 0..4096");
    }
    num[0] = '\0';
    if (cell(im, c, col_of[C_MEM], "memory_total_mib", num, sizeof num, false) && num[0]) {
        num[strcspn(num, " ")] = '\0'; /* "81559 MiB" */
        if (gi_parse_double(num, 0, 1e9, &mem) == GI_OK)
            g->memory_total_mib = mem;
        else
            ok = false, import_problem(im, c->record_line, "memory_total_mib", "memory_total_mib",
                                       "not a number of MiB");
    }
    if (cell(im, c, col_of[C_BUS], "pci_bus_id", bus, sizeof bus, false) && bus[0] &&
        gi_pci_normalize(bus, g->pci_bus_id) != 0)
        ok = false, import_problem(im, c->record_line, "pci_bus_id", "pci_bus_id",
                                   "not a PCI bus id like 0000:83:00.0");
    if (g->uuid[0])
        g->vendor = strncmp(g->uuid, "GPU-", 4) == 0 ? GI_VENDOR_NVIDIA : GI_VENDOR_UNKNOWN;
    return ok;
}

/* False (problem recorded) when a row has a value past the header's
 * last column, which no field could take. */
static bool cells_within_header(struct import_report *im, const struct csv *c)
{
    for (size_t i = json_array_size(im->header); i < c->nfields; i++) {
        if (c->fields[i][0] != '\0') {
            char col[16];
            import_problem(im, c->record_line, import_column(im, i, col, sizeof col), NULL,
                           "a value past the header's last column");
            return false;
        }
    }
    return true;
}

void api_gpus_import(struct req *r)
{
    const char *source = NULL;
    struct import_report im;
    struct gi_obs_set set = {0};
    struct gi_batch *b = NULL;
    struct store_ingest_result *ir = NULL;
    json_t *seen = json_object(), *hostdc = json_object();
    int col_of[C__N];
    struct csv c;
    size_t nb = 0;
    int64_t events = 0;
    int st;

    if (!import_open_or_reply(r, &c, &im) || !req_param_str_or_reply(r, "source", 63, &source))
        goto cleanup;
    if (!map_header_or_reply(r, &c, &im, col_of))
        goto cleanup;
    while ((st = import_next_row_or_reply(r, &c, &im, GPU_IMPORT_MAX_ROWS)) == 1) {
        struct gi_gpu_obs *g;
        char dc[GI_LABEL_LEN] = "", cluster[GI_LABEL_LEN] = "";
        if ((g = gi_obs_add_gpu(&set)) == NULL) {
            reply_error(r, 500, "internal", NULL, "out of memory");
            goto cleanup;
        }
        if (!cells_within_header(&im, &c) ||
            !read_row(&im, &c, col_of, g, dc, sizeof dc, cluster, sizeof cluster))
            continue;
        if (json_object_get(seen, g->uuid)) {
            import_problem(&im, c.record_line, "uuid", "uuid",
                           "the same GPU appears twice in this file");
            continue;
        }
        json_object_set_new(seen, g->uuid, json_integer((json_int_t)c.record_line));
        if (dc[0] || cluster[0])
            json_object_set_new(hostdc, g->hostname,
                                json_pack("{s:s, s:s}", "dc", dc, "cluster", cluster));
    }
    if (st < 0 || !import_verdict_or_reply(r, &im))
        goto cleanup;
    if (hostbatch_split(&set, "csv", gi_now(), NULL, false, &b, &nb) != 0 ||
        (ir = calloc(nb + 1, sizeof *ir)) == NULL) {
        reply_error(r, 500, "internal", NULL, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < nb; i++) {
        json_t *h = json_object_get(hostdc, b[i].host.hostname);
        b[i].partial = true; /* a sheet lists what it knows, not all a host has */
        if (h) {
            gi_strlcpy(b[i].host.datacenter, json_string_value(json_object_get(h, "dc")),
                       sizeof b[i].host.datacenter);
            gi_strlcpy(b[i].host.cluster, json_string_value(json_object_get(h, "cluster")),
                       sizeof b[i].host.cluster);
        }
    }
    /* The source and the batches in one transaction; a dry run makes the
     * same writes and rolls them back. */
    st = store_ingest_as(r->store, source ? source : "spreadsheet", "csv", b, nb, im.dry_run, ir);
    for (size_t i = 0; st == GI_OK && i < nb; i++)
        events += ir[i].events;
    if (st == GI_CONFLICT) {
        reply_error(r, 409, "conflict", "source",
                    "'%s' names a source of another kind; a spreadsheet imports under a csv "
                    "source's name",
                    source ? source : "spreadsheet");
    } else if (st != GI_OK) {
        reply_status(r, st, "import");
    } else if (im.dry_run) {
        import_dry_run_reply(r, &im,
                             json_pack("{s:I, s:I, s:I}", "would_import", (json_int_t)im.rows,
                                       "hosts", (json_int_t)nb, "events", (json_int_t)events));
    } else {
        reply_json(r, 201,
                   json_pack("{s:I, s:I, s:I, s:b}", "imported", (json_int_t)im.rows, "hosts",
                             (json_int_t)nb, "events", (json_int_t)events, "dry_run", 0));
    }
cleanup:
    free(ir);
    hostbatch_free(b, nb);
    gi_obs_free(&set);
    csv_free(&c);
    import_report_free(&im);
    json_decref(seen);
    json_decref(hostdc);
}
