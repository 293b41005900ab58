/* libmicrohttpd glue: accepts requests, checks each request's headers
 * (path, route, credentials, role, query parameters, announced length)
 * before any of its body is read, gathers bounded bodies, has a request
 * worker (workq.h) run the handler while the connection is suspended and
 * queues its reply. Handlers never answer 404/405/401/403/413 themselves. */
#include "http/server.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "http/assets.h"
#include "http/auth.h"
#include "http/request.h"
#include "http/routes.h"
#include "http/throttle.h"
#include "http/uri.h"
#include "http/workq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* File descriptors kept back from the connection limit for the database,
 * the listening socket, epoll and the scheduler's clients. */
#define FD_RESERVE 128
/* Largest certificate or key file read. */
#define PEM_MAX (1u << 20)
/* Runs of a request whose write lost a race with a concurrent one. */
#define REQ_ATTEMPTS 4

struct server {
    struct MHD_Daemon *daemon;
    struct workq *workers; /* run the handlers (workq.h) */
    struct store *store;
    struct throttle *throttle;
    size_t max_body;
    int64_t session_ttl;
    int64_t freshness;
    uint16_t port;
    bool tls;
    char *tls_cert, *tls_key; /* PEM text, kept for the daemon's lifetime */
    /* Requests between their first byte and their completion; idle
     * keep-alive connections are not counted, so shutdown need not wait
     * for clients to hang up. */
    atomic_int active;
};

unsigned server_io_threads(unsigned workers) { return workers > 8 ? (workers + 3) / 4 : 2; }

uint16_t server_port(const struct server *srv) { return srv->port; }
size_t server_max_body(const struct server *srv) { return srv->max_body; }
int64_t server_session_ttl(const struct server *srv) { return srv->session_ttl; }
int64_t server_freshness(const struct server *srv) { return srv->freshness; }
bool server_tls(const struct server *srv) { return srv->tls; }
struct throttle *server_throttle(const struct server *srv) { return srv->throttle; }

/* Called by libmicrohttpd with the request target as sent, before it is
 * decoded; allocates the request context (freed in on_complete), keeps
 * the raw path and decodes it strictly. NULL when out of memory. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct server *srv = cls;
    struct req *r = calloc(1, sizeof *r);
    const union MHD_ConnectionInfo *ci;
    size_t n = strcspn(uri, "?#");

    if (r == NULL)
        return NULL;
    r->srv = srv;
    r->store = srv->store;
    r->conn = conn;
    atomic_fetch_add(&srv->active, 1);
    ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, r->addr,
                      sizeof r->addr);
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
                      r->addr, sizeof r->addr);
    }
    if (n >= sizeof r->raw) {
        r->path_fault = REQ_PATH_TOO_LONG;
        return r;
    }
    memcpy(r->raw, uri, n);
    r->raw[n] = '\0';
    if (!uri_decode(r->raw, n, r->path, sizeof r->path)) {
        r->path_fault = REQ_PATH_BAD;
        r->path[0] = '\0';
    }
    return r;
}

/* Matches one pattern against the raw path, capturing {id}, {key} and a
 * final {key*}. */
static bool route_match(const char *pattern, const char *path, struct req *r)
{
    const char *p = pattern, *u = path;

    while (*p && *u) {
        const char *pe = strchr(p, '/'), *ue = strchr(u, '/');
        size_t pl = pe ? (size_t)(pe - p) : strlen(p);
        size_t ul = ue ? (size_t)(ue - u) : strlen(u);

        if (pl == 4 && strncmp(p, "{id}", 4) == 0) {
            if (!uri_canonical_id(u, ul, &r->id))
                return false;
        } else if (pl == 6 && strncmp(p, "{key*}", 6) == 0 && p[6] == '\0') {
            /* The rest of the path, slashes and all (a MIG instance's
             * made-up UUID is "MIG-<parent>/<instance>"); no empty segment. */
            size_t rl = strlen(u);
            if (rl == 0 || u[rl - 1] == '/' || strstr(u, "//"))
                return false;
            return uri_decode(u, rl, r->key, sizeof r->key);
        } else if (pl == 5 && strncmp(p, "{key}", 5) == 0) {
            if (ul == 0 || !uri_decode(u, ul, r->key, sizeof r->key))
                return false;
        } else if (pl != ul || strncmp(p, u, pl) != 0) {
            return false;
        }
        p += pl;
        u += ul;
        if (*p != *u)
            return false;
        if (*p == '/') {
            p++;
            u++;
        }
    }
    return *p == '\0' && *u == '\0';
}

/* Cross-site request guard: a browser sends Origin on unsafe requests;
 * when present it must name this host. */
static bool same_origin(struct req *r)
{
    const char *origin = req_header(r, "Origin");
    const char *host = req_header(r, MHD_HTTP_HEADER_HOST);
    const char *o;

    if (origin == NULL)
        return true;
    if (host == NULL)
        return false;
    o = strstr(origin, "://");
    return o && strcmp(o + 3, host) == 0;
}

/* Finds the route for r into r->route; false after replying 404/405 (or
 * serving a dashboard file). */
static bool route_or_reply(struct req *r)
{
    bool path_known = false;
    char allow[128] = "";
    size_t al = 0;

    for (const struct route *rt = gi_routes; rt->method && r->path_fault == REQ_PATH_OK; rt++) {
        if (!route_match(rt->pattern, r->raw, r))
            continue;
        path_known = true;
        if (strcmp(rt->method, r->method) == 0) {
            r->route = rt;
            return true;
        }
        if (al + strlen(rt->method) + 3 < sizeof allow) {
            al +=
                (size_t)snprintf(allow + al, sizeof allow - al, "%s%s", al ? ", " : "", rt->method);
        }
    }
    if (r->path_fault == REQ_PATH_BAD) {
        reply_error(r, 400, "invalid_path", NULL,
                    "the path holds a control character, a broken %%-escape or invalid UTF-8");
        return false;
    }
    if (r->path_fault == REQ_PATH_OK && strcmp(r->method, "GET") == 0 &&
        strncmp(r->path, "/api/", 5) != 0 && assets_serve(r))
        return false;
    if (path_known) {
        reply_error(r, 405, "method_not_allowed", NULL, "%s is not allowed on %s", r->method,
                    r->path);
        reply_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    } else {
        reply_error(r, 404, "not_found", NULL, "no such path: %.200s",
                    r->path_fault == REQ_PATH_OK ? r->path : "(too long)");
    }
    return false;
}

/* Authenticates and authorizes r for its route; false after replying
 * 401/403. */
static bool auth_or_reply(struct req *r)
{
    const struct route *rt = r->route;
    int st;

    if (rt->need == GI_ROLE_NONE) {
        /* Without credentials the only guard against a foreign page is
         * the browser's Origin (this is how sign-in is kept same-site). */
        if (strcmp(r->method, "GET") != 0 && !same_origin(r)) {
            reply_error(r, 403, "forbidden", NULL, "cross-origin request refused");
            return false;
        }
        return true;
    }
    st = auth_resolve(r);
    if (st == GI_NOT_FOUND) {
        if (route_basic_auth(rt)) {
            /* Inventory agents send their credentials after this challenge. */
            reply_error(r, 401, "unauthenticated", NULL,
                        "HTTP Basic credentials are required: any user name, a token as the "
                        "password");
            reply_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"gpuinv\"");
            return false;
        }
        reply_error(r, 401, "unauthenticated", NULL, "a valid bearer token or session is required");
        reply_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"gpuinv\"");
        return false;
    }
    if (st != GI_OK) {
        reply_status(r, st, "credentials");
        return false;
    }
    if (!gi_role_allows(r->who.role, rt->need)) {
        reply_error(r, 403, "forbidden", NULL, "role %s may not do this; it needs %s",
                    gi_role_name(r->who.role), gi_role_name(rt->need));
        return false;
    }
    if (r->via_session && strcmp(r->method, "GET") != 0 && !same_origin(r)) {
        reply_error(r, 403, "forbidden", NULL, "cross-origin request refused");
        return false;
    }
    return true;
}

struct param_check {
    struct req *r;
    const char *unknown; /* the first parameter the route does not read */
};

static enum MHD_Result param_visit(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct param_check *pc = cls;

    (void)kind;
    (void)value;
    if (key && !route_param_known(pc->r->route, key)) {
        pc->unknown = key;
        return MHD_NO;
    }
    return MHD_YES;
}

/* Refuses a query parameter the route does not read; false after 400. */
static bool params_or_reply(struct req *r)
{
    struct param_check pc = {r, NULL};

    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, param_visit, &pc);
    if (pc.unknown == NULL)
        return true;
    if (!gi_text_ok(pc.unknown) || strlen(pc.unknown) > 64) {
        reply_error(r, 400, "unknown_parameter", NULL, "a query parameter is not text");
        return false;
    }
    reply_error(r, 400, "unknown_parameter", pc.unknown,
                "%s %s does not take the query parameter '%s'", r->route->method, r->route->pattern,
                pc.unknown);
    return false;
}

/* Checks everything the headers decide; false after queuing the reply
 * (which is then sent without reading the body). */
static bool head_or_reply(struct req *r)
{
    const char *cl = req_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    int64_t announced = 0;

    if (!route_or_reply(r) || !auth_or_reply(r) || !params_or_reply(r))
        return false;
    if (cl && gi_parse_int64(cl, 0, INT64_MAX, &announced) == GI_OK &&
        (uint64_t)announced > r->srv->max_body) {
        reply_error(r, 413, "too_large", NULL, "request body exceeds %zu bytes",
                    server_max_body(r->srv));
        return false;
    }
    /* One allocation sized by the announced length, made on the first
     * byte of the body. */
    r->body_cap = (size_t)announced;
    return true;
}

/* Appends one upload chunk, bounded by --max-body; past the bound the body
 * is dropped and the reply will be 413. False when out of memory. */
static bool body_append(struct req *r, const char *data, size_t n)
{
    size_t max = r->srv->max_body, need = r->body_len + n;

    if (r->body_too_large)
        return true;
    if (need > max) {
        r->body_too_large = true;
        free(r->body);
        r->body = NULL;
        r->body_len = 0;
        return true;
    }
    if (r->body == NULL || need + 1 > r->body_cap) {
        /* Sized by Content-Length when given, else doubling. */
        size_t cap = need + 1 > r->body_cap ? need + 1 : r->body_cap + 1;
        char *nb;
        if (r->body && cap < 2 * r->body_cap)
            cap = 2 * r->body_cap < max + 1 ? 2 * r->body_cap : max + 1;
        if ((nb = realloc(r->body, cap)) == NULL)
            return false;
        r->body = nb;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, n);
    r->body_len = need;
    r->body[need] = '\0';
    return true;
}

static enum MHD_Result queue(struct req *r)
{
    reply_header(r, "X-Content-Type-Options", "nosniff");
    reply_header(r, "Cache-Control", "no-store");
    if (r->srv->tls)
        reply_header(r, "Strict-Transport-Security", "max-age=31536000");
    if (r->resp == NULL)
        return MHD_NO;
    return MHD_queue_response(r->conn, r->status, r->resp);
}

/* Runs the route's handler; a write the database undid for losing a race
 * with another (a serialization failure or deadlock between replicas)
 * changed nothing, so it runs again, a bounded number of times, before
 * its 503 reaches the client. */
static void run_handler(struct req *r)
{
    for (int attempt = 1;; attempt++) {
        r->retry = false;
        r->route->handler(r);
        if (!r->retry || attempt == REQ_ATTEMPTS || r->resp == NULL)
            return;
        MHD_destroy_response(r->resp);
        r->resp = NULL;
        r->status = 0;
        usleep((useconds_t)(attempt * 20000));
    }
}

/* Runs r's handler (on a request worker, or on the connection's thread
 * when the workers are stopping) and hands the connection back to
 * libmicrohttpd, which calls on_request again to queue the reply. */
static void handle(struct req *r)
{
    run_handler(r);
    if (r->resp == NULL)
        reply_error(r, 500, "internal", NULL, "handler sent no reply");
    r->handled = true;
    MHD_resume_connection(r->conn);
}

static void on_work(struct workq_item *item, void *cls)
{
    (void)cls;
    handle((struct req *)(void *)((char *)item - offsetof(struct req, work)));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    struct req *r = *con_cls;

    (void)cls;
    (void)url;
    (void)version;
    if (r == NULL)
        return MHD_NO; /* on_uri ran out of memory */
    if (!r->started) {
        r->started = true;
        r->method = method;
        r->conn = conn;
        if (!head_or_reply(r))
            return queue(r);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!body_append(r, upload_data, *upload_size))
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->handled)
        return queue(r);
    if (r->body_too_large) {
        reply_error(r, 413, "too_large", NULL, "request body exceeds %zu bytes",
                    server_max_body(r->srv));
        return queue(r);
    }
    /* The handler may block (a database round trip, a password hash): it
     * runs on a request worker, so this thread goes on serving its other
     * connections meanwhile. */
    MHD_suspend_connection(conn);
    if (!workq_push(r->srv->workers, &r->work))
        handle(r);
    return MHD_YES;
}

static void on_complete(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    struct req *r = *con_cls;
    struct server *srv = cls;

    (void)conn;
    (void)toe;
    if (r == NULL)
        return;
    atomic_fetch_sub(&srv->active, 1);
    if (r->resp)
        MHD_destroy_response(r->resp);
    free(r->body);
    free(r);
    *con_cls = NULL;
}

/* Splits "ADDR:PORT" into a loopback-or-any IPv4 socket address. */
static int parse_listen(const char *listen, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(listen, ':');
    int64_t port;

    if (colon == NULL || (size_t)(colon - listen) >= sizeof host)
        return GI_INVALID;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    if (gi_parse_int64(colon + 1, 0, 65535, &port) != GI_OK)
        return GI_INVALID;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (host[0] == '\0' || strcmp(host, "*") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0)
        sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return GI_INVALID;
    return GI_OK;
}

/* Reads a whole PEM file (bounded) into *out, NUL-terminated; caller
 * frees. */
static int read_pem(const char *path, const char *what, char **out)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len;
    int rc = GI_INVALID;

    *out = NULL;
    if (f == NULL) {
        gi_error("cannot read the TLS %s %s: %s", what, path, strerror(errno));
        return GI_INVALID;
    }
    if ((buf = malloc(PEM_MAX + 1)) == NULL) {
        rc = GI_INTERNAL;
        goto cleanup;
    }
    len = fread(buf, 1, PEM_MAX + 1, f);
    if (len <= PEM_MAX)
        buf[len] = '\0';
    if (ferror(f) || len == 0 || len > PEM_MAX || strlen(buf) != len ||
        strstr(buf, "-----BEGIN ") == NULL) {
        gi_error("the TLS %s %s is not a PEM file of at most %u bytes", what, path, PEM_MAX);
        goto cleanup;
    }
    *out = buf;
    buf = NULL;
    rc = GI_OK;
cleanup:
    free(buf);
    fclose(f);
    return rc;
}

/* The connection limit: as asked (or the default), kept below the file
 * descriptors this process may open. */
static unsigned connection_limit(unsigned want)
{
    struct rlimit rl;
    unsigned n = want ? want : SERVER_DEFAULT_CONNECTIONS;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        rlim_t room = rl.rlim_cur > 2 * FD_RESERVE ? rl.rlim_cur - FD_RESERVE : rl.rlim_cur / 2;
        if ((rlim_t)n > room) {
            if (want)
                gi_warn("--max-connections %u lowered to %u to stay below the open file limit",
                        want, (unsigned)room);
            n = (unsigned)room;
        }
    }
    return n;
}

static void server_free(struct server *srv)
{
    if (srv == NULL)
        return;
    throttle_free(srv->throttle);
    workq_stop(srv->workers);
    workq_free(srv->workers);
    free(srv->tls_cert);
    free(srv->tls_key);
    free(srv);
}

int server_start(const struct server_config *cfg, struct store *st, struct server **out)
{
    struct server *srv = calloc(1, sizeof *srv);
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    int rc = GI_INVALID;

    if (srv == NULL || (srv->throttle = throttle_new()) == NULL) {
        rc = GI_INTERNAL;
        goto fail;
    }
    if (parse_listen(cfg->listen, &sa) != GI_OK) {
        gi_error("--listen must be ADDR:PORT, got '%s'", cfg->listen);
        goto fail;
    }
    if ((cfg->tls_cert == NULL) != (cfg->tls_key == NULL)) {
        gi_error("--tls-cert and --tls-key go together");
        goto fail;
    }
    if (cfg->tls_cert) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            gi_error("this libmicrohttpd was built without TLS; serve plain HTTP behind a "
                     "TLS proxy or install a libmicrohttpd built with GnuTLS");
            goto fail;
        }
        if ((rc = read_pem(cfg->tls_cert, "certificate", &srv->tls_cert)) != GI_OK ||
            (rc = read_pem(cfg->tls_key, "key", &srv->tls_key)) != GI_OK)
            goto fail;
        srv->tls = true;
        flags |= MHD_USE_TLS;
    }
    if ((srv->workers = workq_start(cfg->threads ? cfg->threads : 1, on_work, NULL)) == NULL) {
        rc = GI_INTERNAL;
        goto fail;
    }
    srv->store = st;
    srv->max_body = cfg->max_body;
    srv->session_ttl = cfg->session_ttl;
    srv->freshness = cfg->freshness > 0 ? cfg->freshness : 3600;
    /* The TLS options come last: when not serving TLS the list ends
     * before them. */
    srv->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_THREAD_POOL_SIZE, server_io_threads(cfg->threads), MHD_OPTION_URI_LOG_CALLBACK,
        on_uri, srv, MHD_OPTION_NOTIFY_COMPLETED, on_complete, srv, MHD_OPTION_CONNECTION_TIMEOUT,
        cfg->idle_timeout ? cfg->idle_timeout : SERVER_DEFAULT_IDLE_TIMEOUT,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit(cfg->max_connections),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->per_ip_connections,
        srv->tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, srv->tls_cert,
        MHD_OPTION_HTTPS_MEM_KEY, srv->tls_key, MHD_OPTION_END);
    if (srv->daemon == NULL) {
        gi_error(srv->tls ? "cannot listen on %s (or the TLS certificate and key do not match)"
                          : "cannot listen on %s",
                 cfg->listen);
        rc = GI_UNAVAILABLE;
        goto fail;
    }
    info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : ntohs(sa.sin_port);
    *out = srv;
    return GI_OK;
fail:
    server_free(srv);
    return rc;
}

void server_stop(struct server *srv)
{
    if (srv == NULL)
        return;
    /* Stop accepting, then let requests in flight finish (up to 10 s)
     * before the threads are joined. */
    MHD_quiesce_daemon(srv->daemon);
    for (int i = 0; i < 1000 && atomic_load(&srv->active) > 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    /* The workers finish what is queued first: libmicrohttpd must not be
     * stopped with a connection still suspended. A request that arrives
     * after this runs on its connection's thread. */
    workq_stop(srv->workers);
    MHD_stop_daemon(srv->daemon);
    server_free(srv);
}
