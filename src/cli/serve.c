/* `gpuinv serve`: opens the store, seeds credentials from the environment,
 * optionally fills the demo fleet, serves until SIGTERM/SIGINT, then
 * finishes requests in flight and closes the database. */
#include "cli/cli.h"
#include "collect/push.h"
#include "collect/scheduler.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "demo/demo.h"
#include "http/auth.h"
#include "http/server.h"
#include "store/store.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char serve_usage[] =
    "usage: gpuinv serve [--listen ADDR:PORT] [--db PATH] [--demo] [--threads N]\n"
    "                    [--max-body BYTES] [--session-ttl SECONDS] [--freshness SECONDS]\n"
    "\n"
    "  --listen ADDR:PORT   address to serve on (default 127.0.0.1:8080; port 0 picks one)\n"
    "  --db PATH            SQLite database file (default gpuinv.db), created if missing\n"
    "  --demo               fill an empty database with a demo fleet\n"
    "  --threads N          HTTP worker threads (default 8)\n"
    "  --max-body BYTES     largest accepted request body (default 8388608)\n"
    "  --session-ttl SECS   dashboard session lifetime (default 43200)\n"
    "  --freshness SECS     data older than this is flagged stale (default 3600)\n"
    "\n"
    "environment:\n"
    "  GPUINV_ADMIN_TOKEN     creates (or keeps) an admin API token with this value\n"
    "  GPUINV_ADMIN_PASSWORD  sets the password of dashboard user 'admin'\n";

/* Applies GPUINV_ADMIN_TOKEN and GPUINV_ADMIN_PASSWORD. */
static int seed_credentials(struct store *st)
{
    const char *tok = getenv("GPUINV_ADMIN_TOKEN");
    const char *pw = getenv("GPUINV_ADMIN_PASSWORD");
    char hash[AUTH_HASH_LEN], pwhash[AUTH_PWHASH_LEN];
    int rc;

    if (tok && *tok) {
        if (strlen(tok) < 16) {
            gi_error("GPUINV_ADMIN_TOKEN must be at least 16 characters");
            return GI_INVALID;
        }
        auth_hash(tok, hash);
        if ((rc = store_token_ensure(st, "env-admin", GI_ROLE_ADMIN, hash)) != GI_OK)
            return rc;
    }
    if (pw && *pw) {
        if ((rc = auth_password_hash(pw, pwhash)) != GI_OK)
            return rc;
        if ((rc = store_user_set(st, "admin", GI_ROLE_ADMIN, pwhash)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

int cli_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"db", required_argument, NULL, 'd'},
        {"demo", no_argument, NULL, 'D'},
        {"threads", required_argument, NULL, 't'},
        {"max-body", required_argument, NULL, 'b'},
        {"session-ttl", required_argument, NULL, 's'},
        {"freshness", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct server_config cfg = {"127.0.0.1:8080", 8u << 20, 8, 43200, 3600};
    const char *db = "gpuinv.db";
    bool demo = false;
    struct store *st = NULL;
    struct server *srv = NULL;
    struct scheduler *sched = NULL;
    sigset_t sigs;
    int64_t n;
    int opt, sig, rc, code = 1;

    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'l':
            cfg.listen = optarg;
            break;
        case 'd':
            db = optarg;
            break;
        case 'D':
            demo = true;
            break;
        case 't':
            if (gi_parse_int64(optarg, 1, 256, &n) != GI_OK) {
                fprintf(stderr, "gpuinv serve: --threads must be 1..256\n");
                return 2;
            }
            cfg.threads = (unsigned)n;
            break;
        case 'b':
            if (gi_parse_int64(optarg, 1024, INT64_C(1) << 30, &n) != GI_OK) {
                fprintf(stderr, "gpuinv serve: --max-body must be 1024..1073741824\n");
                return 2;
            }
            cfg.max_body = (size_t)n;
            break;
        case 's':
            if (gi_parse_int64(optarg, 60, 90 * 86400, &n) != GI_OK) {
                fprintf(stderr, "gpuinv serve: --session-ttl must be 60..7776000\n");
                return 2;
            }
            cfg.session_ttl = n;
            break;
        case 'f':
            if (gi_parse_int64(optarg, 1, 30 * 86400, &n) != GI_OK) {
                fprintf(stderr, "gpuinv serve: --freshness must be 1..2592000 seconds\n");
                return 2;
            }
            cfg.freshness = n;
            break;
        case 'h':
            fputs(serve_usage, stdout);
            return 0;
        default:
            fputs(serve_usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuinv serve: unexpected argument '%s'\n%s", argv[optind], serve_usage);
        return 2;
    }

    /* Block the stop signals in every thread; main waits for them. */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (auth_init() != GI_OK) {
        gi_error("libsodium failed to initialize");
        return 1;
    }
    if ((rc = store_open(db, (int)cfg.threads + 1, &st)) != GI_OK) {
        gi_error("cannot open database %s: %s", db, gi_status_name(rc));
        return 1;
    }
    if ((rc = seed_credentials(st)) != GI_OK)
        goto cleanup;
    if (demo && (rc = demo_fill(st)) != GI_OK) {
        gi_error("demo fleet failed: %s", gi_status_name(rc));
        goto cleanup;
    }
    /* Hosts and servers stored before matching existed get their links. */
    if ((rc = store_links_refresh(st)) != GI_OK) {
        gi_error("matching discovered hosts to servers failed: %s", gi_status_name(rc));
        goto cleanup;
    }
    if ((rc = server_start(&cfg, st, &srv)) != GI_OK)
        goto cleanup;
    push_global_init();
    if ((sched = scheduler_start(st, 5)) == NULL) {
        gi_error("cannot start the scheduler");
        goto cleanup;
    }
    {
        char host[64];
        const char *colon = strrchr(cfg.listen, ':');
        size_t hl = (size_t)(colon - cfg.listen);
        if (hl >= sizeof host)
            hl = sizeof host - 1;
        memcpy(host, cfg.listen, hl);
        host[hl] = '\0';
        if (hl == 0 || strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0)
            gi_strlcpy(host, "127.0.0.1", sizeof host);
        printf("gpuinv listening on http://%s:%u/\n", host, server_port(srv));
        fflush(stdout);
    }
    sigwait(&sigs, &sig);
    gi_info("signal %d: finishing requests in flight", sig);
    code = 0;
cleanup:
    scheduler_stop(sched);
    server_stop(srv);
    store_close(st);
    if (srv)
        push_global_cleanup();
    if (code == 0)
        gi_info("stopped cleanly");
    return code;
}
