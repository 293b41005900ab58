/* `gpuinv db copy`: moves a SQLite database onto PostgreSQL, so that an
 * installation that started on the embedded store keeps everything when
 * it moves up to a shared one. */
#include "cli/cli.h"
#include "core/log.h"
#include "core/status.h"
#include "store/store.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char db_usage[] =
    "usage: gpuinv db copy --from PATH.db --to postgresql://USER@HOST:PORT/DB [--dry-run]\n"
    "\n"
    "Copies a whole SQLite database (every table, ids, history, audit trail,\n"
    "tokens and users) into an empty PostgreSQL database, in one transaction,\n"
    "and verifies it before committing: each table's row count, and the derived\n"
    "data PostgreSQL computes itself. Both databases are first brought to the\n"
    "latest schema. A target that already holds any row is refused.\n"
    "\n"
    "  --from PATH     the SQLite database file (stop the server using it first)\n"
    "  --to URL        the PostgreSQL database: a postgres:// or postgresql:// URL\n"
    "                  or a libpq key=value string\n"
    "  --dry-run       copy and verify, then roll back, leaving the target empty\n"
    "\n"
    "Exit status: 0 copied, 1 the copy failed (the target is left as it was),\n"
    "2 usage error.\n";

struct copy_args {
    const char *from, *to;
    bool dry_run;
};

/* Parses the options of `db copy`; returns -1 to go on, else an exit code. */
static int parse_copy(int argc, char **argv, struct copy_args *a)
{
    static const struct option opts[] = {
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        {"dry-run", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct stat sb;
    int opt;

    memset(a, 0, sizeof *a);
    optind = 2;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'f':
            a->from = optarg;
            break;
        case 't':
            a->to = optarg;
            break;
        case 'n':
            a->dry_run = true;
            break;
        case 'h':
            fputs(db_usage, stdout);
            return 0;
        default:
            fputs(db_usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "unexpected argument '%s'\n%s", argv[optind], db_usage);
        return 2;
    }
    if (a->from == NULL || a->to == NULL) {
        fprintf(stderr, "--from and --to are required\n%s", db_usage);
        return 2;
    }
    if (store_is_pg_target(a->from)) {
        fputs("--from must be a SQLite database file; the copy goes from SQLite to PostgreSQL\n",
              stderr);
        return 2;
    }
    if (!store_is_pg_target(a->to)) {
        fputs("--to must be a PostgreSQL database (postgresql://USER@HOST:PORT/DB or a libpq\n"
              "key=value string); to copy a SQLite file, copy the file while no server uses it\n",
              stderr);
        return 2;
    }
    if (stat(a->from, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "--from %s: no such database file\n", a->from);
        return 2;
    }
    return -1;
}

/* Prints the per-table report: `table rows`. */
static void print_report(const struct store_copy_report *rep)
{
    for (int i = 0; i < rep->n; i++)
        printf("%-24s %" PRId64 "\n", rep->tables[i].name, rep->tables[i].target_rows);
}

static int db_copy(int argc, char **argv)
{
    struct copy_args a;
    struct store *from = NULL, *to = NULL;
    struct store_copy_report *rep = NULL;
    int code = parse_copy(argc, argv, &a), rc;

    if (code >= 0)
        return code;
    code = 1;
    /* Migration notices would bury the report. */
    gi_log_set_level(GI_LOG_WARN);
    if (store_open(a.from, 1, &from) != GI_OK) {
        fprintf(stderr, "cannot open the source %s (see above)\n", a.from);
        goto cleanup;
    }
    if (store_open(a.to, 1, &to) != GI_OK) {
        fputs("cannot open the target database (see above); check the URL, that the server\n"
              "answers and that the user may create tables in it\n",
              stderr);
        goto cleanup;
    }
    if ((rep = calloc(1, sizeof *rep)) == NULL)
        goto cleanup;
    rc = store_copy(from, to, a.dry_run, stderr, rep);
    if (rc == GI_CONFLICT) {
        fprintf(stderr,
                "%s\nnothing was copied: copy into a new, empty database (createdb NAME), or\n"
                "drop and recreate this one if its content is not needed\n",
                rep->error);
        goto cleanup;
    }
    if (rc != GI_OK) {
        fprintf(stderr, "copy failed: %s\nnothing was copied; the target is as it was\n",
                rep->error[0] ? rep->error : gi_status_name(rc));
        goto cleanup;
    }
    print_report(rep);
    if (a.dry_run)
        fputs("dry run: the copy verified, then rolled back; the target is still empty\n", stderr);
    else
        fputs("copied and verified; start the servers with --db on the target\n", stderr);
    code = 0;
cleanup:
    free(rep);
    store_close(to);
    store_close(from);
    return code;
}

int cli_db(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "copy") == 0)
        return db_copy(argc, argv);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(db_usage, stdout);
        return 0;
    }
    fputs(db_usage, stderr);
    return 2;
}
