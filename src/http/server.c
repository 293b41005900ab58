/* libmicrohttpd glue: accepts requests, gathers bounded bodies, matches the
 * route table, authenticates and authorizes, calls the handler and queues
 * its reply. Handlers never answer 404/405/401/403/413 themselves. */
#include "http/server.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "http/assets.h"
#include "http/auth.h"
#include "http/request.h"
#include "http/routes.h"

#include <arpa/inet.h>
#include <stdatomic.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct server {
    struct MHD_Daemon *daemon;
    struct store *store;
    size_t max_body;
    int64_t session_ttl;
    int64_t freshness;
    uint16_t port;
    /* Requests between their first byte and their completion; idle
     * keep-alive connections are not counted, so shutdown need not wait
     * for clients to hang up. */
    atomic_int active;
};

uint16_t server_port(const struct server *srv) { return srv->port; }
size_t server_max_body(const struct server *srv) { return srv->max_body; }
int64_t server_session_ttl(const struct server *srv) { return srv->session_ttl; }
int64_t server_freshness(const struct server *srv) { return srv->freshness; }

/* Matches one pattern against a path, capturing {id}, {key} and a final
 * {key*}. */
static bool route_match(const char *pattern, const char *path, struct req *r)
{
    const char *p = pattern, *u = path;

    while (*p && *u) {
        const char *pe = strchr(p, '/'), *ue = strchr(u, '/');
        size_t pl = pe ? (size_t)(pe - p) : strlen(p);
        size_t ul = ue ? (size_t)(ue - u) : strlen(u);

        if (pl == 4 && strncmp(p, "{id}", 4) == 0) {
            char num[24];
            if (ul == 0 || ul >= sizeof num)
                return false;
            memcpy(num, u, ul);
            num[ul] = '\0';
            if (gi_parse_int64(num, 1, INT64_MAX, &r->id) != GI_OK)
                return false;
        } else if (pl == 6 && strncmp(p, "{key*}", 6) == 0 && p[6] == '\0') {
            /* The rest of the path, slashes and all (a MIG instance's
             * made-up UUID is "MIG-<parent>/<instance>"); no empty segment. */
            size_t rl = strlen(u);
            if (rl == 0 || rl >= sizeof r->key || u[rl - 1] == '/' || strstr(u, "//"))
                return false;
            memcpy(r->key, u, rl);
            r->key[rl] = '\0';
            return true;
        } else if (pl == 5 && strncmp(p, "{key}", 5) == 0) {
            if (ul == 0 || ul >= sizeof r->key)
                return false;
            memcpy(r->key, u, ul);
            r->key[ul] = '\0';
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

/* Cross-site request guard for cookie sessions: a browser sends Origin on
 * unsafe requests; it must name this host. */
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

/* Finds the route for r, authenticates and calls the handler. */
static void dispatch(struct req *r)
{
    const struct route *hit = NULL;
    bool path_known = false;
    char allow[128] = "";
    size_t al = 0;

    for (const struct route *rt = gi_routes; rt->method; rt++) {
        if (!route_match(rt->pattern, r->path, r))
            continue;
        path_known = true;
        if (strcmp(rt->method, r->method) == 0) {
            hit = rt;
            break;
        }
        if (al + strlen(rt->method) + 3 < sizeof allow) {
            al +=
                (size_t)snprintf(allow + al, sizeof allow - al, "%s%s", al ? ", " : "", rt->method);
        }
    }
    if (hit == NULL && strcmp(r->method, "GET") == 0 && strncmp(r->path, "/api/", 5) != 0 &&
        assets_serve(r))
        return;
    if (hit == NULL) {
        if (path_known) {
            reply_error(r, 405, "method_not_allowed", NULL, "%s is not allowed on %s", r->method,
                        r->path);
            reply_header(r, MHD_HTTP_HEADER_ALLOW, allow);
        } else {
            reply_error(r, 404, "not_found", NULL, "no such path: %s", r->path);
        }
        return;
    }
    if (hit->need != GI_ROLE_NONE) {
        int st = auth_resolve(r);
        if (st == GI_NOT_FOUND) {
            reply_error(r, 401, "unauthenticated", NULL,
                        "a valid bearer token or session is required");
            reply_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"gpuinv\"");
            return;
        }
        if (st != GI_OK) {
            reply_status(r, st, "credentials");
            return;
        }
        if (!gi_role_allows(r->who.role, hit->need)) {
            reply_error(r, 403, "forbidden", NULL, "role %s may not do this; it needs %s",
                        gi_role_name(r->who.role), gi_role_name(hit->need));
            return;
        }
        if (r->via_session && strcmp(r->method, "GET") != 0 && !same_origin(r)) {
            reply_error(r, 403, "forbidden", NULL, "cross-origin request refused");
            return;
        }
    }
    if (r->body_too_large) {
        reply_error(r, 413, "too_large", NULL, "request body exceeds %zu bytes",
                    server_max_body(r->srv));
        return;
    }
    hit->handler(r);
    if (r->resp == NULL)
        reply_error(r, 500, "internal", NULL, "handler sent no reply");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    struct server *srv = cls;
    struct req *r = *con_cls;
    enum MHD_Result ret;

    (void)version;
    if (r == NULL) {
        const char *cl;
        r = calloc(1, sizeof *r);
        if (r == NULL)
            return MHD_NO;
        r->srv = srv;
        r->store = srv->store;
        atomic_fetch_add(&srv->active, 1);
        r->conn = conn;
        r->method = method;
        if (!gi_strlcpy(r->path, url, sizeof r->path))
            r->path[0] = '\0'; /* too long: matches nothing, answers 404 */
        cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > srv->max_body)
            r->body_too_large = true;
        else if (cl)
            r->body_cap = (size_t)strtoull(cl, NULL, 10); /* one allocation, below */
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (!r->body_too_large) {
            size_t need = r->body_len + *upload_size;
            if (need > srv->max_body) {
                r->body_too_large = true;
                free(r->body);
                r->body = NULL;
                r->body_len = 0;
            } else {
                if (need + 1 > r->body_cap || r->body == NULL) {
                    /* Sized by Content-Length when given, else doubling. */
                    size_t cap = need + 1 > r->body_cap ? need + 1 : r->body_cap + 1;
                    char *nb;
                    if (r->body && cap < 2 * r->body_cap)
                        cap = 2 * r->body_cap < srv->max_body + 1 ? 2 * r->body_cap
                                                                  : srv->max_body + 1;
                    if ((nb = realloc(r->body, cap)) == NULL)
                        return MHD_NO;
                    r->body = nb;
                    r->body_cap = cap;
                }
                memcpy(r->body + r->body_len, upload_data, *upload_size);
                r->body_len = need;
                r->body[need] = '\0';
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    dispatch(r);
    reply_header(r, "X-Content-Type-Options", "nosniff");
    reply_header(r, "Cache-Control", "no-store");
    ret = MHD_queue_response(conn, r->status, r->resp);
    return ret;
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

int server_start(const struct server_config *cfg, struct store *st, struct server **out)
{
    struct server *srv = calloc(1, sizeof *srv);
    struct sockaddr_in sa;
    const union MHD_DaemonInfo *info;

    if (srv == NULL)
        return GI_INTERNAL;
    if (parse_listen(cfg->listen, &sa) != GI_OK) {
        gi_error("--listen must be ADDR:PORT, got '%s'", cfg->listen);
        free(srv);
        return GI_INVALID;
    }
    srv->store = st;
    srv->max_body = cfg->max_body;
    srv->session_ttl = cfg->session_ttl;
    srv->freshness = cfg->freshness > 0 ? cfg->freshness : 3600;
    srv->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL,
        NULL, on_request, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->threads, MHD_OPTION_NOTIFY_COMPLETED,
        on_complete, srv, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)1000, MHD_OPTION_END);
    if (srv->daemon == NULL) {
        gi_error("cannot listen on %s", cfg->listen);
        free(srv);
        return GI_UNAVAILABLE;
    }
    info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : ntohs(sa.sin_port);
    *out = srv;
    return GI_OK;
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
    MHD_stop_daemon(srv->daemon);
    free(srv);
}
