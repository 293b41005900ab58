/* One HTTP request as handlers see it, and the helpers they use to read
 * input and send replies. A handler is a straight line of early returns:
 * every `..._or_reply` helper returns false after it has queued a 4xx reply.
 * The request context (and everything hung on it) is freed in one place
 * when libmicrohttpd reports the request complete. */
#ifndef GI_REQUEST_H
#define GI_REQUEST_H

#include "core/model.h"
#include "http/workq.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct server;
struct store;
struct route;

/* What was wrong with the request target, found before routing. */
enum req_path_fault {
    REQ_PATH_OK,
    REQ_PATH_TOO_LONG, /* answers 404: no route is that long */
    REQ_PATH_BAD,      /* control byte, broken escape or invalid UTF-8: 400 */
};

struct req {
    struct server *srv;
    struct store *store;
    struct MHD_Connection *conn;
    const char *method;
    /* The path as sent (percent-encoded, without the query), and decoded.
     * Routes match the raw form, so "%31" is not the id 1. */
    char raw[512];
    char path[512];
    enum req_path_fault path_fault;
    /* The client's address as text (IPv4 or IPv6). */
    char addr[64];
    /* Set once the headers have been checked (route, credentials, role,
     * query, announced length); the body is gathered only after that. */
    bool started;
    const struct route *route;
    /* Request body, NUL-terminated; bounded by the server's body limit. */
    char *body;
    size_t body_len;
    size_t body_cap; /* allocated (or, before the first byte, announced) */
    bool body_too_large;
    /* Path parameters matched by the route table. */
    int64_t id;
    char key[128];
    struct gi_principal who;
    bool via_session;
    /* The reply, set exactly once by a reply_* helper. */
    struct MHD_Response *resp;
    unsigned status;
    /* Set by a reply for a write the database undid for losing a race
     * with a concurrent one: running the handler again may succeed. */
    bool retry;
    /* The handler runs on a request worker while libmicrohttpd holds the
     * connection suspended; `handled` is set once the reply waits to be
     * queued on the connection's own thread. */
    struct workq_item work;
    bool handled;
};

typedef void (*api_handler)(struct req *r);

/* ---- replies (each takes ownership of the json_t it is given) ---- */
void reply_json(struct req *r, unsigned status, json_t *body);
/* {"error":{"code","message","field"?}}; field may be NULL. */
void reply_error(struct req *r, unsigned status, const char *code, const char *field,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Maps a store status to the matching error reply. */
void reply_status(struct req *r, int st, const char *what);
void reply_bytes(struct req *r, unsigned status, const char *content_type, const void *data,
                 size_t len, bool copy);
void reply_no_content(struct req *r);
/* Adds a header to the reply already set. */
void reply_header(struct req *r, const char *name, const char *value);
/* A list page: JSON envelope {"items","total","next"}, or CSV of the same
 * rows when the client asked for it. */
void reply_list(struct req *r, json_t *items, int64_t total, int64_t offset);
/* A list page whose members are already JSON text joined by commas
 * (borrowed); the JSON envelope only, never CSV. */
void reply_list_text(struct req *r, const char *items, size_t len, size_t rows, int64_t total,
                     int64_t offset);
/* A JSON reply from its text (takes ownership; NULL: a 500, encoding
 * failed). */
void reply_json_text(struct req *r, unsigned status, char *txt, size_t len);
/* A CSV reply from its text (takes ownership; NULL: a 500), named as
 * reply_list names its CSV. */
void reply_csv_text(struct req *r, char *csv, size_t len);

/* ---- input ---- */
/* Query parameter or NULL (borrowed from libmicrohttpd). `name` must be
 * listed for the request's route in src/http/routes.c. */
const char *req_param(struct req *r, const char *name);
const char *req_header(struct req *r, const char *name);
/* True when the body's Content-Type is `type` (case-insensitive), with
 * at most parameters after it of which a charset, if given, is UTF-8. */
bool req_media_type_is(struct req *r, const char *type);
/* True when the client asked for CSV (?format=csv or Accept: text/csv). */
bool req_wants_csv(struct req *r);
/* Parses the body as one JSON object; 415/400 on failure. Caller decrefs. */
bool req_json_body_or_reply(struct req *r, json_t **out);
/* Optional integer query parameter within [min,max]; 400 naming it. */
bool req_param_int_or_reply(struct req *r, const char *name, int64_t min, int64_t max,
                            int64_t *out);
/* Optional text query parameter bounded by maxlen; 400 naming it. */
bool req_param_str_or_reply(struct req *r, const char *name, size_t maxlen, const char **out);
/* Optional boolean query parameter ("true"/"false"/"1"/"0"). */
bool req_param_bool_or_reply(struct req *r, const char *name, bool *out);

struct store_page;
/* limit/cursor/sort from the query; sort must be one of `sortable`
 * (NULL-terminated), with a leading '-' for descending. */
bool req_page_or_reply(struct req *r, const char *const *sortable, struct store_page *pg);

/* Reads a string member of a JSON body: required or optional, bounded,
 * valid text; 400 naming the field otherwise. */
bool json_str_or_reply(struct req *r, const json_t *obj, const char *field, bool required,
                       size_t maxlen, const char **out);
bool json_int_or_reply(struct req *r, const json_t *obj, const char *field, bool required,
                       int64_t min, int64_t max, int64_t *out);
/* Refuses members not in `allowed` (NULL-terminated) with 400. */
bool json_known_or_reply(struct req *r, const json_t *obj, const char *const *allowed);

#endif
