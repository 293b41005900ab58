/* `gpuinv serve`: opens the store, seeds credentials from the environment,
 * optionally fills the demo fleet, serves until SIGTERM/SIGINT, then
 * finishes requests in flight and closes the database. */
#include "cli/cli.h"
#include "api/api.h"
#include "collect/deliver.h"
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
#include <sys/resource.h>

/* Exit status when GPUINV_ADMIN_TOKEN names a revoked token. */
#define EXIT_REVOKED_TOKEN 3

static const char serve_usage[] =
    "usage: gpuinv serve [--listen ADDR:PORT] [--db PATH] [--demo] [--threads N]\n"
    "                    [--max-body BYTES] [--session-ttl SECONDS] [--freshness SECONDS]\n"
    "                    [--tls-cert FILE --tls-key FILE] [--max-connections N]\n"
    "                    [--per-ip-connections N] [--idle-timeout SECONDS]\n"
    "                    [--retain-samples-days N] [--busy-threshold-pct P]\n"
    "                    [--max-gap-s SECONDS] [--retain-hourly-days N]\n"
    "                    [--retain-daily-days N] [--no-rollup]\n"
    "                    [--owner-refresh-s SECONDS] [--asset-missing-days N]\n"
    "                    [--webhook-backoff-s SECONDS] [--base-url URL]\n"
    "                    [--rules-interval-s SECONDS] [--health-settle-s SECONDS]\n"
    "                    [--health-interval-s SECONDS]\n"
    "\n"
    "  --listen ADDR:PORT   address to serve on (default 127.0.0.1:8080; port 0 picks one)\n"
    "  --db PATH|URL        SQLite database file, created if missing, or a PostgreSQL\n"
    "                       database: postgres://USER@HOST:PORT/DB?sslmode=... (also\n"
    "                       postgresql://, or a libpq key=value string; the password may\n"
    "                       come from PGPASSWORD or ~/.pgpass) (default $GPUINV_DB, else\n"
    "                       gpuinv.db)\n"
    "  --demo               fill an empty database with a demo fleet\n"
    "  --threads N          HTTP request workers (default 8)\n"
    "  --max-body BYTES     largest accepted request body (default 8388608)\n"
    "  --session-ttl SECS   dashboard session lifetime (default 43200)\n"
    "  --freshness SECS     data older than this is flagged stale (default 3600)\n"
    "  --tls-cert FILE      serve HTTPS with this PEM certificate (chain) ...\n"
    "  --tls-key FILE       ... and this PEM private key; cookies become Secure and\n"
    "                       replies carry Strict-Transport-Security\n"
    "  --max-connections N  open connections in all (default 4096, kept below the\n"
    "                       open file limit, whose soft value is raised to the hard one)\n"
    "  --per-ip-connections N  connections one client address may hold (default 256;\n"
    "                       0: no limit, e.g. behind a reverse proxy)\n"
    "  --idle-timeout SECS  close a connection idle this long (default 30)\n"
    "  --retain-samples-days N  days of raw GPU samples kept (default 14, 1..3650)\n"
    "  --busy-threshold-pct P  utilization from which a GPU counts as busy (default 5,\n"
    "                       0..100)\n"
    "  --max-gap-s SECS     longest stretch one sample covers; beyond it the time is\n"
    "                       unknown (default 600, 1..86400)\n"
    "  --retain-hourly-days N  days of hourly usage rollups kept (default 396, 1..36500)\n"
    "  --retain-daily-days N   days of daily usage rollups kept (default 1825, 1..36500)\n"
    "  --no-rollup          this server does not run the usage:rollup job (another\n"
    "                       replica may; dirty hours wait meanwhile, and raw samples\n"
    "                       are kept for them)\n"
    "  --owner-refresh-s SECS  how often GPUs whose ownership assignment or rule came\n"
    "                       into force get their current owner recomputed (default 60,\n"
    "                       1..3600)\n"
    "  --asset-missing-days N  an asset discovery has not seen for this long is drift\n"
    "                       (default 30, 1..3650)\n"
    "  --webhook-backoff-s SECS  every webhook retry waits SECS instead of the schedule\n"
    "                       (30 s, 2 min, 10 min, 1 h, 6 h, 24 h, then dead; 1..86400;\n"
    "                       for tests)\n"
    "  --base-url URL       the address users reach gpuinv at, put in the QR labels'\n"
    "                       scan URLs <URL>/scan/<tag> (default: the listen address;\n"
    "                       set it behind a reverse proxy)\n"
    "  --rules-interval-s SECS  seconds between evaluations of the enabled lifecycle\n"
    "                       rules (default 3600, 1..604800)\n"
    "  --health-settle-s SECS  how old a day's usage row must be before the health\n"
    "                       rollup reads it (default 120, 0..3600)\n"
    "  --health-interval-s SECS  seconds between runs of the health rollup (default\n"
    "                       60, 1..3600)\n"
    "\n"
    "environment:\n"
    "  GPUINV_ADMIN_TOKEN     creates (or keeps) an admin API token with this value\n"
    "  GPUINV_ADMIN_PASSWORD  sets the password of dashboard user 'admin' (and ends\n"
    "                         its sessions when it changes)\n"
    "  GPUINV_DB              the database when --db is not given\n"
    "  GPUINV_MIN_INTERVAL_S  shortest interval_s a pull source may have, 1..10\n"
    "                         (default 10; shorter only for tests)\n"
    "\n"
    "exit status: 0 stopped cleanly; 1 could not start or failed; 2 bad usage;\n"
    "  3 GPUINV_ADMIN_TOKEN names a revoked token (create a new one with\n"
    "  'gpuinv token create --db PATH --name NAME --role admin' and use that)\n";

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
        rc = store_token_ensure(st, "env-admin", GI_ROLE_ADMIN, hash);
        if (rc == GI_CONFLICT) {
            gi_error("GPUINV_ADMIN_TOKEN names a revoked token; create a new one with "
                     "'gpuinv token create --db PATH --name NAME --role admin' and set "
                     "GPUINV_ADMIN_TOKEN to it (or unset it)");
            return rc;
        }
        if (rc != GI_OK) {
            gi_error("cannot record GPUINV_ADMIN_TOKEN: %s", gi_status_name(rc));
            return rc;
        }
    }
    if (pw && *pw) {
        int64_t uid;
        enum gi_role role;
        /* Unchanged credentials leave the admin's sessions alone. */
        if (store_user_get(st, "admin", &uid, &role, pwhash, sizeof pwhash) == GI_OK &&
            role == GI_ROLE_ADMIN && auth_password_ok(pwhash, pw))
            return GI_OK;
        if ((rc = auth_password_hash(pw, pwhash)) != GI_OK)
            return rc;
        if ((rc = store_user_set(st, "admin", GI_ROLE_ADMIN, pwhash)) != GI_OK) {
            gi_error("cannot set the password of user admin: %s", gi_status_name(rc));
            return rc;
        }
    }
    return GI_OK;
}

/* The bounds of each whole-number option (a unit, when the error should
 * name one). */
struct int_opt {
    int opt;
    int64_t min, max;
    const char *unit;
};

static const struct int_opt int_opts[] = {
    {'t', 1, 256, ""},          {'b', 1024, INT64_C(1) << 30, ""},
    {'s', 60, 90 * 86400, ""},  {'f', 1, 30 * 86400, " seconds"},
    {'m', 1, 1000000, ""},      {'p', 0, 1000000, ""},
    {'i', 1, 3600, " seconds"}, {'R', 1, 3650, ""},
    {'O', 1, 3600, ""},         {'G', 1, 86400, ""},
    {'H', 1, 36500, ""},        {'Y', 1, 36500, ""},
    {'A', 1, 3650, ""},         {'W', 1, 86400, ""},
    {'L', 1, 604800, ""},       {'E', 0, 3600, ""},
    {'T', 1, 3600, ""},
};

/* Parses optarg into *n when opt is a whole-number option; false, with
 * the option's range printed, when it is out of range or not a number.
 * Other options pass untouched. */
static bool int_arg(const struct option *opts, int opt, int64_t *n)
{
    const char *name = "?";

    for (size_t i = 0; i < sizeof int_opts / sizeof int_opts[0]; i++) {
        if (int_opts[i].opt != opt)
            continue;
        if (gi_parse_int64(optarg, int_opts[i].min, int_opts[i].max, n) == GI_OK)
            return true;
        for (const struct option *o = opts; o->name; o++)
            if (o->val == opt)
                name = o->name;
        fprintf(stderr, "gpuinv serve: --%s must be %lld..%lld%s\n", name,
                (long long)int_opts[i].min, (long long)int_opts[i].max, int_opts[i].unit);
        return false;
    }
    return true;
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
        {"tls-cert", required_argument, NULL, 'C'},
        {"tls-key", required_argument, NULL, 'K'},
        {"max-connections", required_argument, NULL, 'm'},
        {"per-ip-connections", required_argument, NULL, 'p'},
        {"idle-timeout", required_argument, NULL, 'i'},
        {"retain-samples-days", required_argument, NULL, 'R'},
        {"busy-threshold-pct", required_argument, NULL, 'B'},
        {"max-gap-s", required_argument, NULL, 'G'},
        {"retain-hourly-days", required_argument, NULL, 'H'},
        {"retain-daily-days", required_argument, NULL, 'Y'},
        {"no-rollup", no_argument, NULL, 'N'},
        {"owner-refresh-s", required_argument, NULL, 'O'},
        {"asset-missing-days", required_argument, NULL, 'A'},
        {"webhook-backoff-s", required_argument, NULL, 'W'},
        {"base-url", required_argument, NULL, 'U'},
        {"rules-interval-s", required_argument, NULL, 'L'},
        {"health-settle-s", required_argument, NULL, 'E'},
        {"health-interval-s", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct server_config cfg = {
        .listen = "127.0.0.1:8080",
        .max_body = 8u << 20,
        .threads = 8,
        .session_ttl = 43200,
        .freshness = 3600,
        .per_ip_connections = SERVER_DEFAULT_PER_IP,
        .idle_timeout = SERVER_DEFAULT_IDLE_TIMEOUT,
    };
    struct rlimit rl;
    const char *db = getenv("GPUINV_DB");
    bool demo = false;
    struct scheduler_options sched_opts = {.tick_s = 5, .retain_days = SCHEDULER_RETAIN_DAYS};
    const char *base_url = NULL;
    struct store_usage_config usage;
    struct store *st = NULL;
    struct server *srv = NULL;
    struct scheduler *sched = NULL;
    sigset_t sigs;
    int64_t n;
    int opt, sig, rc, pool, code = 1;

    store_usage_config_get(&usage);
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (!int_arg(opts, opt, &n))
            return 2;
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
            cfg.threads = (unsigned)n;
            break;
        case 'b':
            cfg.max_body = (size_t)n;
            break;
        case 's':
            cfg.session_ttl = n;
            break;
        case 'f':
            cfg.freshness = n;
            break;
        case 'C':
            cfg.tls_cert = optarg;
            break;
        case 'K':
            cfg.tls_key = optarg;
            break;
        case 'm':
            cfg.max_connections = (unsigned)n;
            break;
        case 'p':
            cfg.per_ip_connections = (unsigned)n;
            break;
        case 'i':
            cfg.idle_timeout = (unsigned)n;
            break;
        case 'R':
            sched_opts.retain_days = (int)n;
            break;
        case 'N':
            sched_opts.no_rollup = true;
            break;
        case 'O':
            sched_opts.owner_s = (int)n;
            break;
        case 'B':
            if (gi_parse_double(optarg, 0, 100, &usage.busy_pct) != GI_OK) {
                fprintf(stderr, "gpuinv serve: --busy-threshold-pct must be 0..100\n");
                return 2;
            }
            break;
        case 'G':
            usage.max_gap_s = n;
            break;
        case 'H':
            usage.retain_hourly_days = (int)n;
            break;
        case 'Y':
            usage.retain_daily_days = (int)n;
            break;
        case 'A':
            store_asset_configure((int)n);
            break;
        case 'W':
            deliver_configure(n);
            break;
        case 'U':
            if ((strncmp(optarg, "http://", 7) != 0 && strncmp(optarg, "https://", 8) != 0) ||
                strlen(optarg) > 400 || strpbrk(optarg, " \"<>?#") != NULL) {
                fprintf(stderr, "gpuinv serve: --base-url must be an http:// or https:// URL "
                                "without a query, of at most 400 bytes\n");
                return 2;
            }
            base_url = optarg;
            break;
        case 'L':
            scheduler_rules_configure(n);
            break;
        case 'E':
            store_health_configure(n);
            break;
        case 'T':
            scheduler_health_configure(n);
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
    if (db == NULL || *db == '\0')
        db = "gpuinv.db";
    store_usage_configure(&usage);
    if ((cfg.tls_cert == NULL) != (cfg.tls_key == NULL)) {
        fprintf(stderr, "gpuinv serve: --tls-cert and --tls-key go together\n");
        return 2;
    }
    /* Every connection is a file descriptor: take all the process may. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            gi_warn("cannot raise the open file limit");
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
    /* A connection for each request worker and each libmicrohttpd thread
     * (credentials are verified there), and one for the scheduler, so
     * that no request waits to borrow one (/metrics counts such waits). */
    pool = (int)(cfg.threads + server_io_threads(cfg.threads)) + 1;
    if ((rc = store_open(db, pool, &st)) != GI_OK) {
        char shown[512];
        store_target_display(db, shown, sizeof shown);
        gi_error("cannot open database %s: %s", shown, gi_status_name(rc));
        return 1;
    }
    if ((rc = seed_credentials(st)) != GI_OK) {
        if (rc == GI_CONFLICT)
            code = EXIT_REVOKED_TOKEN;
        goto cleanup;
    }
    {
        bool seeded;
        if ((rc = store_prices_seed(st, &seeded)) != GI_OK) {
            gi_error("cannot seed the price catalog: %s", gi_status_name(rc));
            goto cleanup;
        }
        if (seeded)
            gi_info("price catalog: inserted the shipped estimates");
        if ((rc = store_lrules_seed(st, &seeded)) != GI_OK) {
            gi_error("cannot seed the example lifecycle rules: %s", gi_status_name(rc));
            goto cleanup;
        }
    }
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
    if ((sched = scheduler_start(st, &sched_opts)) == NULL) {
        gi_error("cannot start the scheduler");
        goto cleanup;
    }
    {
        char host[64], url[512];
        const char *colon = strrchr(cfg.listen, ':');
        size_t hl = (size_t)(colon - cfg.listen);
        if (hl >= sizeof host)
            hl = sizeof host - 1;
        memcpy(host, cfg.listen, hl);
        host[hl] = '\0';
        if (hl == 0 || strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0)
            gi_strlcpy(host, "127.0.0.1", sizeof host);
        snprintf(url, sizeof url, "%s://%s:%u", cfg.tls_cert ? "https" : "http", host,
                 server_port(srv));
        api_labels_base_url_set(base_url ? base_url : url);
        printf("gpuinv listening on %s/\n", url);
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
