/* `gpuinv import billing FILE`: loads a cloud billing export (AWS CUR,
 * GCP billing export, Azure cost details) straight into the database, as
 * POST /api/v1/billing/import does over HTTP.
 * `gpuinv import glpi FILE`: loads a FusionInventory / GLPI agent
 * inventory as assets, as an agent's POST /glpi does. */
#include "cli/cli.h"
#include "core/log.h"
#include "core/status.h"
#include "parse/billing.h"
#include "parse/glpi.h"
#include "store/store.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMPORT_MAX_BYTES ((size_t)1 << 30)
#define IMPORT_MAX_ROWS 20000000

static const char import_usage[] =
    "usage: gpuinv import billing FILE [--db PATH] [--format aws|gcp|azure|auto] [--dry-run]\n"
    "\n"
    "Reads a cloud billing export as CSV: an AWS Cost and Usage Report (legacy or\n"
    "CUR 2.0 column names), a GCP billing export (the BigQuery table as CSV) or\n"
    "Azure cost details (EA, pay-as-you-go or MCA). The provider is told from the\n"
    "header unless --format names it. Only GPU lines are kept; each is matched to\n"
    "a host by instance id, or to a team by its team tag, and its cost spread over\n"
    "the host's GPUs. Lines already imported are skipped, so importing a file\n"
    "again adds nothing. A file with any bad line imports nothing; every problem\n"
    "is printed with its line and column.\n"
    "\n"
    "  --db PATH      a SQLite file or a PostgreSQL URL; without it, GPUINV_DB\n"
    "  --format NAME  aws, gcp, azure or auto (default)\n"
    "  --dry-run      match and report, then roll back\n"
    "\n"
    "Prints the import's report as JSON. Exit status: 0 imported, 1 failed,\n"
    "2 usage error.\n"
    "\n"
    "usage: gpuinv import glpi FILE [--db PATH] [--dry-run]\n"
    "\n"
    "Reads one FusionInventory or GLPI agent inventory (the XML that\n"
    "fusioninventory-inventory prints, plain or compressed with zlib or gzip)\n"
    "and upserts its machine, GPUs, disks, NICs and power supplies as assets\n"
    "of the source glpi:<DEVICEID>, as the agent's own POST /glpi does.\n"
    "Values that cannot be read are left out and listed; the rest is kept.\n"
    "\n"
    "  --db PATH      a SQLite file or a PostgreSQL URL; without it, GPUINV_DB\n"
    "  --dry-run      match and report, then roll back\n"
    "\n"
    "Prints {source, records, warnings, report} as JSON. Exit status: 0\n"
    "imported, 1 failed, 2 usage error.\n";

/* Reads a whole file into a new NUL-terminated buffer; NULL on failure. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *buf = NULL, *nb;
    size_t cap = 0, n = 0, got;

    if (!f)
        return NULL;
    do {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            if (cap > IMPORT_MAX_BYTES + 65536 + 1 || !(nb = realloc(buf, cap))) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, 65536, f);
        n += got;
    } while (got > 0);
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    if (f != stdin)
        fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static int import_billing(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"format", required_argument, NULL, 'f'},
        {"dry-run", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db = getenv("GPUINV_DB"), *path;
    enum billing_format fmt = BILLING_AUTO;
    struct billing_file bf;
    struct store *st = NULL;
    json_t *report = NULL;
    bool dry_run = false;
    char *data = NULL;
    size_t len = 0;
    int opt, code = 1, rc;

    memset(&bf, 0, sizeof bf);
    optind = 2;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            db = optarg;
            break;
        case 'f':
            if (!billing_format_from_name(optarg, &fmt)) {
                fprintf(stderr, "--format must be aws, gcp, azure or auto\n");
                return 2;
            }
            break;
        case 'n':
            dry_run = true;
            break;
        case 'h':
            fputs(import_usage, stdout);
            return 0;
        default:
            fputs(import_usage, stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !db || !*db) {
        fputs(optind + 1 != argc ? "one FILE is required\n" : "--db (or GPUINV_DB) is required\n",
              stderr);
        fputs(import_usage, stderr);
        return 2;
    }
    path = argv[optind];
    if (!(data = read_file(path, &len))) {
        fprintf(stderr, "cannot read %s (missing, unreadable or over 1 GiB)\n", path);
        return 1;
    }
    rc = billing_parse(data, len, fmt, IMPORT_MAX_ROWS, &bf);
    if (rc == GI_INVALID) {
        for (size_t i = 0; i < bf.nproblems; i++)
            fprintf(stderr, "%s: line %zu%s%s: %s\n", path, bf.problems[i].line,
                    bf.problems[i].column[0] ? ", column " : "", bf.problems[i].column,
                    bf.problems[i].reason);
        if (bf.nerr > bf.nproblems)
            fprintf(stderr, "%s: %zu more problems\n", path, bf.nerr - bf.nproblems);
        fputs("nothing was imported\n", stderr);
        goto cleanup;
    }
    if (rc != GI_OK) {
        fprintf(stderr, "%s: %s\n", path,
                rc == GI_TOO_LARGE ? "too many rows for one import" : gi_status_name(rc));
        goto cleanup;
    }
    gi_log_set_level(GI_LOG_WARN);
    if (store_open(db, 1, &st) != GI_OK) {
        fputs("cannot open the database (see above)\n", stderr);
        goto cleanup;
    }
    if ((rc = store_billing_import(st, "cli", &bf, dry_run, &report)) != GI_OK) {
        fprintf(stderr, "import failed: %s; nothing was imported\n", gi_status_name(rc));
        goto cleanup;
    }
    json_dumpf(report, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    code = 0;
cleanup:
    json_decref(report);
    store_close(st);
    billing_file_free(&bf);
    free(data);
    return code;
}

static int import_glpi(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"dry-run", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db = getenv("GPUINV_DB"), *path;
    struct glpi_msg m;
    struct store *st = NULL;
    json_t *report = NULL, *out = NULL;
    bool dry_run = false;
    char *data = NULL, *xml = NULL, err[GLPI_ERR_LEN] = "", source[GLPI_DEVICEID_MAX + 8];
    size_t len = 0, xlen = 0;
    int opt, code = 1, rc;

    memset(&m, 0, sizeof m);
    optind = 2;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            db = optarg;
            break;
        case 'n':
            dry_run = true;
            break;
        case 'h':
            fputs(import_usage, stdout);
            return 0;
        default:
            fputs(import_usage, stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !db || !*db) {
        fputs(optind + 1 != argc ? "one FILE is required\n" : "--db (or GPUINV_DB) is required\n",
              stderr);
        fputs(import_usage, stderr);
        return 2;
    }
    path = argv[optind];
    if (!(data = read_file(path, &len))) {
        fprintf(stderr, "cannot read %s (missing, unreadable or over 1 GiB)\n", path);
        return 1;
    }
    rc = glpi_decode(data, len, glpi_detect(data, len, NULL), GLPI_MAX_DECODED, &xml, &xlen, err,
                     sizeof err);
    if (rc == GI_OK)
        rc = glpi_parse(xml, xlen, &m, err, sizeof err);
    if (rc != GI_OK) {
        fprintf(stderr, "%s: %s; nothing was imported\n", path, err[0] ? err : gi_status_name(rc));
        goto cleanup;
    }
    if (strcmp(m.query, "INVENTORY") != 0) {
        fprintf(stderr, "%s: a %s message, not an INVENTORY; nothing was imported\n", path,
                m.query);
        goto cleanup;
    }
    gi_log_set_level(GI_LOG_WARN);
    if (store_open(db, 1, &st) != GI_OK) {
        fputs("cannot open the database (see above)\n", stderr);
        goto cleanup;
    }
    snprintf(source, sizeof source, "glpi:%s", m.deviceid);
    if ((rc = store_asset_ingest(st, source, m.records, dry_run, &report)) != GI_OK) {
        fprintf(stderr, "import failed: %s; nothing was imported\n", gi_status_name(rc));
        goto cleanup;
    }
    out = json_pack("{s:s, s:O, s:O, s:O}", "source", source, "records", m.records, "warnings",
                    m.warnings, "report", report);
    json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    code = 0;
cleanup:
    json_decref(out);
    json_decref(report);
    store_close(st);
    glpi_msg_free(&m);
    free(xml);
    free(data);
    return code;
}

int cli_import(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "billing") == 0)
        return import_billing(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "glpi") == 0)
        return import_glpi(argc, argv);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(import_usage, stdout);
        return 0;
    }
    fputs(import_usage, stderr);
    return 2;
}
