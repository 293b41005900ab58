/* gpuinv: subcommand dispatch only. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const char usage[] = "usage: gpuinv COMMAND [OPTIONS]\n"
                            "\n"
                            "The authoritative record of GPU infrastructure.\n"
                            "\n"
                            "commands:\n"
                            "  serve    run the HTTP API and dashboard\n"
                            "  agent    discover this host's GPUs and push them to a server\n"
                            "  token    create, list and revoke API tokens\n"
                            "  user     set a dashboard user's role and password\n"
                            "  db       copy a SQLite database into PostgreSQL\n"
                            "  import   load a cloud billing export\n"
                            "  audit    verify the assets' hash-chained audit trail\n"
                            "\n"
                            "Run 'gpuinv COMMAND --help' for a command's options.\n";

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"serve", cli_serve}, {"agent", cli_agent}, {"token", cli_token},
                {"user", cli_user},   {"db", cli_db},       {"import", cli_import},
                {"audit", cli_audit}};

    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "gpuinv: unknown command '%s'\n\n%s", argv[1], usage);
    return 2;
}
