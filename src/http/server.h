/* The HTTP server: libmicrohttpd threads that read requests and send
 * replies, request workers that run the handlers, routing, authentication. */
#ifndef GI_SERVER_H
#define GI_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct server;
struct throttle;

struct server_config {
    const char *listen;  /* "ADDR:PORT"; port 0 picks a free one */
    size_t max_body;     /* bytes */
    unsigned threads;    /* request workers (workq.h) */
    int64_t session_ttl; /* seconds */
    int64_t freshness;   /* seconds after which a GPU's data is stale */
    /* PEM files of the certificate (chain) and its private key; both set
     * serve HTTPS, both NULL plain HTTP. */
    const char *tls_cert;
    const char *tls_key;
    /* Connections in all (0: SERVER_DEFAULT_CONNECTIONS); kept below the
     * process's file descriptor limit. */
    unsigned max_connections;
    /* Connections one client address may hold at once (0: no limit). */
    unsigned per_ip_connections;
    /* Seconds an idle connection is kept open (0: the default). */
    unsigned idle_timeout;
};

#define SERVER_DEFAULT_CONNECTIONS 4096u
#define SERVER_DEFAULT_PER_IP 256u
#define SERVER_DEFAULT_IDLE_TIMEOUT 30u

/* Starts serving; the store is borrowed and must outlive the server. On
 * success *out is running and server_port() tells the bound port. */
int server_start(const struct server_config *cfg, struct store *st, struct server **out);
uint16_t server_port(const struct server *srv);
/* The libmicrohttpd threads (each with its own epoll set) that read
 * requests and send replies for `workers` request workers; they also
 * verify credentials, so each may hold a database connection. */
unsigned server_io_threads(unsigned workers);
/* Stops accepting, waits for requests in flight, frees; accepts NULL. */
void server_stop(struct server *srv);
size_t server_max_body(const struct server *srv);
int64_t server_session_ttl(const struct server *srv);
int64_t server_freshness(const struct server *srv);
/* True when the server speaks HTTPS. */
bool server_tls(const struct server *srv);
/* The server's sign-in throttle (borrowed). */
struct throttle *server_throttle(const struct server *srv);

#endif
