/* `gpuinv agent`: runs on a GPU host, unprivileged and read-only. Reads the
 * GPUs every --interval seconds, folds the readings into one summary per
 * --push-interval, and pushes batches through a bounded on-disk spool so
 * nothing is lost while the server is away or the agent restarts. */
#include "cli/cli.h"
#include "collect/batchjson.h"
#include "collect/collector.h"
#include "collect/hostid.h"
#include "collect/procmap.h"
#include "collect/push.h"
#include "collect/spool.h"
#include "collect/summary.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

static const char agent_usage[] =
    "usage: gpuinv agent --server URL --token TOKEN [options]\n"
    "       gpuinv agent --print [options]\n"
    "\n"
    "  --server URL          gpuinv server, e.g. https://gpuinv.example:8080\n"
    "  --token TOKEN         pusher token (or env GPUINV_TOKEN, or --token-file PATH)\n"
    "  --token-file PATH     read the token from a file\n"
    "  --interval SECS       reading interval (default 10)\n"
    "  --push-interval SECS  summary and push interval (default 60)\n"
    "  --once                one discovery, reading and push, then exit (for tests and cron)\n"
    "  --print               write the batch as JSON to stdout instead of pushing\n"
    "  --spool DIR           on-disk queue for unsent batches (default ./gpuinv-spool)\n"
    "  --spool-max BYTES     queue bound; the oldest batches are dropped past it (default 64 MiB)\n"
    "  --collector NAME      only use nvml, nvidia-smi, amd or gaudi\n"
    "  --nvml PATH           libnvidia-ml.so.1 to load (default: the system's)\n"
    "  --nvidia-smi PATH     nvidia-smi to run when NVML cannot be loaded\n"
    "  --amd-smi PATH, --rocm-smi PATH   AMD tools to run\n"
    "  --hl-smi PATH         Intel Gaudi's hl-smi to run (needs read access to /dev/accel/*)\n"
    "  --hostname NAME       report under this host name (default: the system's)\n"
    "  --cluster NAME        cluster label for this host\n"
    "  --datacenter NAME     data-center name for this host, as registered in gpuinv\n"
    "  --root DIR            read host identity and /proc under DIR (tests)\n"
    "\n"
    "Exit status with --once: 0 every spooled batch was stored (the server may\n"
    "have dropped fields it could not accept: they are logged as warnings);\n"
    "1 no GPUs could be read, or the spool cannot be written; 2 usage error;\n"
    "3 the server could not be reached (or answered 408, 429 or 5xx): the batch\n"
    "stays spooled for the next run; 4 the server refused a batch: 401/403 (the\n"
    "token) keep it spooled, any other 4xx sets it aside as <seq>.rejected; the\n"
    "server's reason is logged.\n";

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

struct agent {
    const char *server, *token, *spool_dir, *root;
    long interval, push_interval;
    bool once, print;
    uint64_t spool_max;
    struct collector_opts copts;
    struct collector col;
    struct spool sp;
    struct summary sum;
    struct gi_host_obs host;
    struct gi_obs_set last; /* newest discovery: identity and processes */
    uint64_t seq;
    pid_t sender;    /* the process sending the spool, 0 when none */
    char run_id[24]; /* random per process: batch ids never repeat across runs */
    unsigned fails;
    unsigned refused; /* batches the server refused (4xx) in this process */
};

static int64_t mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* Sleeps up to secs, waking early when a stop signal arrives. */
static void nap(int64_t secs)
{
    for (int64_t i = 0; i < secs * 10 && !stopping; i++)
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
}

/* A full discovery (identity, readings, processes mapped to their users,
 * containers and pods), folded into the running summary. */
static int discover(struct agent *a, char *err, size_t errlen)
{
    struct gi_obs_set set = {0};
    char proc_root[600];
    int rc = a->col.discover(a->col.state, &set, err, errlen);

    if (rc == 0) {
        snprintf(proc_root, sizeof proc_root, "%s/proc", strcmp(a->root, "/") ? a->root : "");
        procmap_fill_all(proc_root, &set);
        if (summary_add(&a->sum, &set, gi_now()) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    if (rc == 0) {
        /* Unreadable values are left absent; say so when that changes. */
        if (set.nwarnings > 0 &&
            (set.nwarnings != a->last.nwarnings || strcmp(set.warning, a->last.warning) != 0))
            gi_warn("%zu value(s) could not be read and are reported as absent; first: %s",
                    set.nwarnings, set.warning);
        gi_obs_free(&a->last);
        a->last = set;
    } else {
        gi_obs_free(&set);
    }
    return rc;
}

/* One reading between discoveries: the collector's cheap refresh when it
 * has one. */
static int take_reading(struct agent *a, char *err, size_t errlen)
{
    if (a->col.sample == NULL || a->last.ngpus == 0)
        return discover(a, err, errlen);
    if (a->col.sample(a->col.state, &a->last, err, errlen) != 0)
        return -1;
    if (summary_add(&a->sum, &a->last, gi_now()) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Closes the interval into a batch and returns its JSON text (caller
 * frees), or NULL out of memory. */
static char *make_batch(struct agent *a)
{
    struct gi_batch b = {0};
    json_t *j;
    char *txt;

    snprintf(b.batch_id, sizeof b.batch_id, "%.64s-%s-%" PRId64 "-%" PRIu64,
             a->host.machine_id[0] ? a->host.machine_id : a->host.hostname, a->run_id, gi_now(),
             ++a->seq);
    b.host = a->host;
    b.set = a->last; /* borrowed: not freed with b */
    if (summary_flush(&a->sum, gi_now(), &b.samples, &b.nsamples) != 0)
        return NULL;
    j = batchjson_build(&b);
    txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    free(b.samples);
    return txt;
}

/* Sends spooled batches oldest first until the spool is empty or the
 * server is unreachable. Returns the number of batches still waiting.
 * libcurl is loaded only for the send and unloaded after it, so the agent
 * between sends holds little more than its readings. */
static size_t drain(struct agent *a)
{
    uint64_t seq, bytes;
    char *data = NULL, err[512];
    size_t len, count = 0;
    int got = 0;

    if (push_global_init() != 0) {
        a->fails++;
        spool_stat(&a->sp, &count, &bytes);
        return count;
    }
    while (!stopping && (got = spool_peek(&a->sp, &seq, &data, &len)) == 1) {
        enum push_result pr = push_send(a->server, a->token, data, len, 30, err, sizeof err);
        free(data);
        data = NULL;
        if (pr == PUSH_OK) {
            spool_remove(&a->sp, seq);
            a->fails = 0;
            continue;
        }
        if (pr == PUSH_REJECTED) {
            gi_error("server refused batch %" PRIu64 " (kept as .rejected): %s", seq, err);
            spool_reject(&a->sp, seq);
            a->refused++;
            continue;
        }
        a->fails++;
        if (pr == PUSH_DENIED) {
            gi_error("server refused the token (%s); batch %" PRIu64 " stays spooled", err, seq);
            a->refused++;
            break;
        }
        gi_warn("push failed (%s); batch %" PRIu64 " stays spooled", err, seq);
        break;
    }
    push_global_cleanup();
    if (got < 0)
        gi_error("cannot read spool %s: %s", a->spool_dir, strerror(errno));
    spool_stat(&a->sp, &count, &bytes);
    return count;
}

/* Starts a child process that sends the spool and exits: the agent itself
 * never loads libcurl and its dependencies, which are most of its memory
 * while sending, and a slow server cannot delay readings. The child exits
 * 0 when the spool is empty, 1 when a push failed and batches wait. */
static void sender_start(struct agent *a)
{
    pid_t pid;

    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        gi_warn("cannot start the sender: %s; sending from the agent", strerror(errno));
        drain(a);
        return;
    }
    if (pid == 0) {
        size_t left = drain(a);
        _exit(left > 0 && a->fails > 0 ? 1 : 0);
    }
    a->sender = pid;
}

/* Reaps a finished sender (waiting for it when block); true when it was
 * reaped, with the push failure count updated. */
static bool sender_reap(struct agent *a, bool block)
{
    int status = 0;
    pid_t got;

    if (a->sender == 0)
        return false;
    do {
        got = waitpid(a->sender, &status, block ? 0 : WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got == 0)
        return false;
    a->sender = 0;
    if (got > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        a->fails = 0;
    else
        a->fails++;
    return true;
}

/* Seconds to wait after `fails` failed pushes: exponential from the push
 * interval, capped at 10 minutes, with +-20% jitter so a fleet coming back
 * does not retry in lockstep. */
static int64_t backoff(const struct agent *a)
{
    double base = (double)a->push_interval;
    unsigned f = a->fails < 6 ? a->fails : 6;
    for (unsigned i = 1; i < f; i++)
        base *= 2;
    if (base > 600)
        base = 600;
    return (int64_t)(base * (0.8 + 0.4 * ((double)rand() / RAND_MAX)));
}

/* Writes a closed interval to the spool (or stdout with --print). */
static int emit(struct agent *a)
{
    char *txt = make_batch(a);
    int rc = 0;

    if (txt == NULL)
        return -1;
    if (a->print) {
        puts(txt);
        fflush(stdout);
    } else if (spool_put(&a->sp, txt, strlen(txt)) != 0) {
        gi_error("cannot spool batch in %s: %s", a->spool_dir, strerror(errno));
        rc = -1;
    }
    free(txt);
    return rc;
}

static int run(struct agent *a)
{
    char err[1024];
    int64_t next_read, next_push, next_send = 0;
    size_t left;

    if (collector_open(&a->copts, &a->col, err, sizeof err) != 0) {
        gi_error("no GPUs can be read on this host: %s", err);
        return 1;
    }
    gi_info("reading GPUs with %s", a->col.name);
    if (discover(a, err, sizeof err) != 0) {
        gi_error("reading GPUs failed: %s", err);
        return 1;
    }
    if (a->once) {
        if (emit(a) != 0)
            return 1;
        if (a->print)
            return 0;
        left = drain(a);
        if (a->refused > 0)
            return 4;
        if (left > 0) {
            gi_warn("batch spooled in %s; it will be sent by the next run", a->spool_dir);
            return 3;
        }
        return 0;
    }
    next_read = mono_now() + a->interval;
    next_push = mono_now() + a->push_interval;
    while (!stopping) {
        int64_t now = mono_now();
        if (now >= next_read) {
            if (take_reading(a, err, sizeof err) != 0)
                gi_warn("reading GPUs failed: %s", err);
            next_read = now + a->interval;
        }
        if (now >= next_push) {
            /* Identity and processes are refreshed once per push. */
            if (discover(a, err, sizeof err) != 0)
                gi_warn("discovering GPUs failed: %s", err);
            emit(a);
            next_push = now + a->push_interval;
        }
        if (!a->print && a->sender == 0 && now >= next_send) {
            sender_start(a);
            next_send = INT64_MAX; /* set when the sender finishes */
        }
        if (sender_reap(a, false))
            next_send = a->fails > 0 ? now + backoff(a) : next_push;
        {
            int64_t wake = next_read < next_push ? next_read : next_push;
            if (!a->print && next_send < wake)
                wake = next_send;
            if (a->sender && wake > now + 1)
                wake = now + 1; /* look for the sender's end every second */
            if (wake > now)
                nap(wake - now);
        }
    }
    /* Keep what was read since the last push: spool it for the next run. */
    gi_info("stopping: spooling the current interval");
    sender_reap(a, true);
    emit(a);
    return 0;
}

int cli_agent(int argc, char **argv)
{
    static const struct option opts[] = {
        {"server", required_argument, NULL, 's'},
        {"token", required_argument, NULL, 't'},
        {"token-file", required_argument, NULL, 'T'},
        {"interval", required_argument, NULL, 'i'},
        {"push-interval", required_argument, NULL, 'p'},
        {"once", no_argument, NULL, 'o'},
        {"print", no_argument, NULL, 'P'},
        {"spool", required_argument, NULL, 'd'},
        {"spool-max", required_argument, NULL, 'm'},
        {"collector", required_argument, NULL, 'c'},
        {"nvml", required_argument, NULL, 'n'},
        {"nvidia-smi", required_argument, NULL, 'N'},
        {"amd-smi", required_argument, NULL, 'a'},
        {"rocm-smi", required_argument, NULL, 'r'},
        {"hl-smi", required_argument, NULL, 'g'},
        {"hostname", required_argument, NULL, 'H'},
        {"cluster", required_argument, NULL, 'C'},
        {"datacenter", required_argument, NULL, 'D'},
        {"root", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct agent a = {.interval = 10,
                      .push_interval = 60,
                      .spool_dir = "gpuinv-spool",
                      .spool_max = 64u << 20,
                      .root = "/"};
    static char token_buf[512];
    const char *token_file = NULL;
    struct sigaction sa;
    int64_t n;
    int opt, code;

    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 's':
            a.server = optarg;
            break;
        case 't':
            a.token = optarg;
            break;
        case 'T':
            token_file = optarg;
            break;
        case 'i':
        case 'p':
            if (gi_parse_int64(optarg, 1, 86400, &n) != GI_OK) {
                fprintf(stderr, "gpuinv agent: --%s must be 1..86400 seconds\n",
                        opt == 'i' ? "interval" : "push-interval");
                return 2;
            }
            if (opt == 'i')
                a.interval = (long)n;
            else
                a.push_interval = (long)n;
            break;
        case 'o':
            a.once = true;
            break;
        case 'P':
            a.print = true;
            break;
        case 'd':
            a.spool_dir = optarg;
            break;
        case 'm':
            if (gi_parse_int64(optarg, 65536, INT64_C(1) << 40, &n) != GI_OK) {
                fprintf(stderr, "gpuinv agent: --spool-max must be at least 65536 bytes\n");
                return 2;
            }
            a.spool_max = (uint64_t)n;
            break;
        case 'c':
            a.copts.only = optarg;
            break;
        case 'n':
            a.copts.nvml_path = optarg;
            break;
        case 'N':
            a.copts.nvidia_smi = optarg;
            break;
        case 'a':
            a.copts.amd_smi = optarg;
            break;
        case 'r':
            a.copts.rocm_smi = optarg;
            break;
        case 'g':
            a.copts.hl_smi = optarg;
            break;
        case 'H':
            gi_strlcpy(a.host.hostname, optarg, sizeof a.host.hostname);
            break;
        case 'C':
            gi_strlcpy(a.host.cluster, optarg, sizeof a.host.cluster);
            break;
        case 'D':
            gi_strlcpy(a.host.datacenter, optarg, sizeof a.host.datacenter);
            break;
        case 'R':
            a.root = optarg;
            break;
        case 'h':
            fputs(agent_usage, stdout);
            return 0;
        default:
            fputs(agent_usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuinv agent: unexpected argument '%s'\n%s", argv[optind], agent_usage);
        return 2;
    }
    if (a.token == NULL && token_file) {
        FILE *f = fopen(token_file, "r");
        if (f == NULL || fgets(token_buf, sizeof token_buf, f) == NULL) {
            fprintf(stderr, "gpuinv agent: cannot read --token-file %s\n", token_file);
            if (f)
                fclose(f);
            return 2;
        }
        fclose(f);
        token_buf[strcspn(token_buf, "\r\n")] = '\0';
        a.token = token_buf;
    }
    if (a.token == NULL)
        a.token = getenv("GPUINV_TOKEN");
    if (!a.print && (a.server == NULL || a.token == NULL || *a.token == '\0')) {
        fprintf(stderr, "gpuinv agent: --server and --token are required unless --print\n%s",
                agent_usage);
        return 2;
    }
    if (a.push_interval < a.interval)
        a.push_interval = a.interval;
    hostid_read(a.root, &a.host);
    a.copts.root = a.root;
    if (a.host.hostname[0] == '\0') {
        fprintf(stderr, "gpuinv agent: cannot tell this host's name; pass --hostname\n");
        return 2;
    }
    if (!a.print && spool_open(&a.sp, a.spool_dir, a.spool_max) != 0) {
        fprintf(stderr, "gpuinv agent: cannot use spool %s: %s\n", a.spool_dir, strerror(errno));
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    {
        unsigned char rnd[8];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
            fprintf(stderr, "gpuinv agent: no randomness for batch ids\n");
            return 1;
        }
        gi_hex(rnd, sizeof rnd, a.run_id);
        srand((unsigned)(rnd[0] | rnd[1] << 8 | rnd[2] << 16));
    }
    code = run(&a);
    collector_close(&a.col);
    summary_free(&a.sum);
    gi_obs_free(&a.last);
    return code;
}
