/* The HTTP server: libmicrohttpd thread pool, routing, authentication. */
#ifndef GI_SERVER_H
#define GI_SERVER_H

#include <stddef.h>
#include <stdint.h>

struct store;
struct server;

struct server_config {
    const char *listen; /* "ADDR:PORT"; port 0 picks a free one */
    size_t max_body;    /* bytes */
    unsigned threads;
    int64_t session_ttl; /* seconds */
    int64_t freshness;   /* seconds after which a GPU's data is stale */
};

/* Starts serving; the store is borrowed and must outlive the server. On
 * success *out is running and server_port() tells the bound port. */
int server_start(const struct server_config *cfg, struct store *st, struct server **out);
uint16_t server_port(const struct server *srv);
/* Stops accepting, waits for requests in flight, frees; accepts NULL. */
void server_stop(struct server *srv);
size_t server_max_body(const struct server *srv);
int64_t server_session_ttl(const struct server *srv);
int64_t server_freshness(const struct server *srv);

#endif
