/* `gpuinv audit verify`: walks the assets' hash-chained audit trail and
 * says whether it is intact, so that a change made to the database behind
 * gpuinv's back (an event altered, removed or reordered) is found. */
#include "cli/cli.h"
#include "core/log.h"
#include "core/status.h"
#include "store/store.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char audit_usage[] =
    "usage: gpuinv audit verify --db PATH|URL\n"
    "\n"
    "Checks the assets' audit trail: every event's hash over its content and\n"
    "the previous event's hash, seqs 1, 2, 3 ... without gaps, and the chain's\n"
    "head. Works on both stores (a SQLite file or a PostgreSQL URL).\n"
    "\n"
    "Exit status: 0 intact, 1 broken (the first broken event's seq is named) or\n"
    "the database could not be read, 2 usage error.\n";

static int audit_verify(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct store_chain_report rep;
    struct store *st = NULL;
    const char *db = NULL;
    int opt, rc;

    optind = 2;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            db = optarg;
            break;
        case 'h':
            fputs(audit_usage, stdout);
            return 0;
        default:
            fputs(audit_usage, stderr);
            return 2;
        }
    }
    if (optind < argc || db == NULL) {
        fputs(audit_usage, stderr);
        return 2;
    }
    gi_log_set_level(GI_LOG_WARN);
    if (store_open(db, 1, &st) != GI_OK) {
        fprintf(stderr, "cannot open the database (see above)\n");
        return 1;
    }
    rc = store_asset_chain_verify(st, &rep);
    store_close(st);
    if (rc != GI_OK) {
        fprintf(stderr, "cannot read the audit trail: %s\n", gi_status_name(rc));
        return 1;
    }
    if (rep.broken_seq != 0) {
        printf("broken at seq %" PRId64 ": %s (%" PRId64 " events read)\n", rep.broken_seq, rep.why,
               rep.events);
        return 1;
    }
    printf("intact: %" PRId64 " events, head at seq %" PRId64 "\n", rep.events, rep.head_seq);
    return 0;
}

int cli_audit(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "verify") == 0)
        return audit_verify(argc, argv);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(audit_usage, stdout);
        return 0;
    }
    fputs(audit_usage, stderr);
    return 2;
}
