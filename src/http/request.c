/* Reading requests and building replies; see request.h. */
#include "http/request.h"
#include "core/log.h"
#include "core/status.h"
#include "core/textbuf.h"
#include "core/util.h"
#include "http/routes.h"
#include "http/server.h"
#include "http/uri.h"
#include "store/store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Sets the reply, replacing (and freeing) any earlier one. */
static void set_reply(struct req *r, unsigned status, struct MHD_Response *resp)
{
    if (r->resp)
        MHD_destroy_response(r->resp);
    r->resp = resp;
    r->status = status;
}

void reply_bytes(struct req *r, unsigned status, const char *content_type, const void *data,
                 size_t len, bool copy)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *)data, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        gi_error("out of memory building a reply");
        return;
    }
    if (content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    set_reply(r, status, resp);
}

void reply_json_text(struct req *r, unsigned status, char *txt, size_t len)
{
    static const char failed[] =
        "{\"error\":{\"code\":\"internal\",\"message\":\"encoding failed\"}}";
    struct MHD_Response *resp;

    if (txt == NULL) {
        /* The reply is the text, without the array's terminating NUL. */
        reply_bytes(r, 500, "application/json", failed, sizeof failed - 1, false);
        return;
    }
    resp = MHD_create_response_from_buffer(len, txt, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(txt);
        return;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    set_reply(r, status, resp);
}

void reply_json(struct req *r, unsigned status, json_t *body)
{
    char *txt = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);

    json_decref(body);
    reply_json_text(r, status, txt, txt ? strlen(txt) : 0);
}

/* Replaces, in place, every byte of s that is not part of valid UTF-8 text
 * (or is a control character) with '?', so that a message quoting client
 * input (or cut short mid-character) can always be encoded as JSON. */
static void text_sanitize(char *s)
{
    for (size_t i = 0; s[i];) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80             ? 1
                   : (c & 0xe0) == 0xc0 ? 2
                   : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4
                                        : 0;
        char one[5] = {0};
        size_t k = 0;

        while (k < n && s[i + k]) {
            one[k] = s[i + k];
            k++;
        }
        if (n == 0 || k < n || !gi_text_ok(one)) {
            s[i++] = '?';
            continue;
        }
        i += n;
    }
}

void reply_error(struct req *r, unsigned status, const char *code, const char *field,
                 const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    json_t *err;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    text_sanitize(msg);
    err = json_pack("{s:s, s:s}", "code", code, "message", msg);
    if (field && *field)
        json_object_set_new(err, "field", json_string(field));
    reply_json(r, status, json_pack("{s:o}", "error", err));
}

void reply_status(struct req *r, int st, const char *what)
{
    switch (st) {
    case GI_OK:
        reply_error(r, 500, "internal", NULL, "no reply for %s", what);
        return;
    case GI_NOT_FOUND:
        reply_error(r, 404, "not_found", NULL, "%s not found", what);
        return;
    case GI_CONFLICT:
        reply_error(r, 409, "conflict", NULL, "%s conflicts with the current state", what);
        return;
    case GI_INVALID:
        reply_error(r, 400, "invalid", NULL, "%s is invalid", what);
        return;
    case GI_TOO_LARGE:
        reply_error(r, 413, "too_large", NULL, "%s is too large", what);
        return;
    case GI_UNAVAILABLE:
        reply_error(r, 503, "unavailable", NULL, "the database is busy; retry");
        reply_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        return;
    case GI_RETRY:
        /* The dispatcher runs the request again a few times before this
         * reply reaches the client. */
        r->retry = true;
        reply_error(r, 503, "retry", NULL, "%s lost a race with a concurrent write; retry", what);
        reply_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        return;
    case GI_NO_SPACE:
        /* Nothing was written; the next write succeeds once space is freed. */
        reply_error(r, 503, "storage_full", NULL,
                    "the database's disk is full; free space and retry");
        reply_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "30");
        return;
    default:
        reply_error(r, 500, "internal", NULL, "internal error while handling %s", what);
    }
}

void reply_no_content(struct req *r) { reply_bytes(r, 204, NULL, "", 0, false); }

void reply_header(struct req *r, const char *name, const char *value)
{
    if (r->resp)
        MHD_add_response_header(r->resp, name, value);
}

const char *req_param(struct req *r, const char *name)
{
    /* The dispatcher refuses parameters a route does not list, so a
     * handler reading an unlisted one could never see it: that is a bug in
     * the route table, made loud (and fatal in debug builds, so that any
     * test reaching the handler finds it). */
    if (r->route && !route_param_known(r->route, name)) {
        gi_error("%s %s reads query parameter '%s', which its line in src/http/routes.c does not "
                 "list",
                 r->method, r->route->pattern, name);
#ifndef NDEBUG
        abort();
#endif
    }
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *req_header(struct req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

bool req_media_type_is(struct req *r, const char *type)
{
    return uri_media_type_is(req_header(r, MHD_HTTP_HEADER_CONTENT_TYPE), type);
}

bool req_wants_csv(struct req *r)
{
    const char *f = req_param(r, "format"), *acc;

    if (f)
        return strcmp(f, "csv") == 0;
    acc = req_header(r, MHD_HTTP_HEADER_ACCEPT);
    return acc && strstr(acc, "text/csv") != NULL;
}

/* ---- CSV output ---- */

/* Writes one CSV cell (see tb_csv_cell): strings as text, numbers in
 * their shortest exact form, documents as compact JSON. */
static void csv_cell(struct textbuf *b, const json_t *v)
{
    char num[64];
    char *dumped = NULL;

    if (json_is_string(v)) {
        tb_csv_cell(b, json_string_value(v), true);
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        tb_puts(b, num);
    } else if (json_is_real(v)) {
        tb_csv_real(b, json_real_value(v));
    } else if (json_is_true(v)) {
        tb_puts(b, "true");
    } else if (json_is_false(v)) {
        tb_puts(b, "false");
    } else if (json_is_object(v) || json_is_array(v)) {
        dumped = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        tb_csv_cell(b, dumped ? dumped : "", false);
    }
    free(dumped);
}

/* Renders an array of objects as CSV; columns are the keys in order of
 * first appearance across all rows. Caller frees the result. */
static char *csv_render(const json_t *items, size_t *len)
{
    json_t *cols = json_array();
    struct textbuf b = {0};
    size_t i, j;
    json_t *row, *col;
    const char *key;
    json_t *v;

    json_array_foreach(items, i, row) {
        json_object_foreach(row, key, v) {
            bool seen = false;
            json_array_foreach(cols, j, col)
                if (strcmp(json_string_value(col), key) == 0)
                    seen = true;
            if (!seen)
                json_array_append_new(cols, json_string(key));
        }
    }
    json_array_foreach(cols, j, col) {
        if (j)
            tb_put(&b, ",", 1);
        csv_cell(&b, col);
    }
    tb_put(&b, "\r\n", 2);
    json_array_foreach(items, i, row) {
        json_array_foreach(cols, j, col) {
            if (j)
                tb_put(&b, ",", 1);
            csv_cell(&b, json_object_get(row, json_string_value(col)));
        }
        tb_put(&b, "\r\n", 2);
    }
    json_decref(cols);
    return tb_take(&b, len);
}

/* A file name being built: lower-case letters, digits and single dashes. */
struct fname {
    char s[128];
    size_t n;
};

/* Appends text to the name as a dash-separated slug; stops at the bound. */
static void fname_add(struct fname *f, const char *text)
{
    bool dash = f->n > 0;

    for (const char *p = text; *p; p++) {
        char ch = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!ok) {
            dash = f->n > 0;
            continue;
        }
        if (f->n + (dash ? 2 : 1) >= sizeof f->s)
            return;
        if (dash)
            f->s[f->n++] = '-';
        f->s[f->n++] = ch;
        f->s[f->n] = '\0';
        dash = false;
    }
}

/* MHD_KeyValueIterator: adds each filter of the query (not paging or
 * format) to the file name as "key-value". */
static enum MHD_Result fname_filter(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    static const char *const skip[] = {"format", "limit", "cursor", "sort", NULL};

    (void)kind;
    for (const char *const *k = skip; *k; k++)
        if (strcmp(key, *k) == 0)
            return MHD_YES;
    if (value && *value) {
        fname_add(cls, key);
        fname_add(cls, value);
    }
    return MHD_YES;
}

/* "attachment; filename=\"gpus-team-speech-2026-12-01.csv\"": named after
 * what it holds (the list, the filters of the query) and the day. */
static const char *csv_disposition(struct req *r, char *out, size_t len)
{
    const char *seg = strrchr(r->path, '/');
    struct fname f = {.n = 0};
    char day[16] = "";
    time_t now = time(NULL);
    struct tm tm;

    f.s[0] = '\0';
    fname_add(&f, seg ? seg + 1 : "export");
    if (f.n == 0)
        fname_add(&f, "export");
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, fname_filter, &f);
    if (gmtime_r(&now, &tm))
        strftime(day, sizeof day, "-%Y-%m-%d", &tm);
    snprintf(out, len, "attachment; filename=\"%s%s.csv\"", f.s, day);
    return out;
}

void reply_csv_text(struct req *r, char *csv, size_t len)
{
    struct MHD_Response *resp;
    char disp[192];

    if (csv == NULL) {
        reply_error(r, 500, "internal", NULL, "out of memory rendering CSV");
        return;
    }
    resp = MHD_create_response_from_buffer(len, csv, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(csv);
        return;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/csv; charset=utf-8");
    MHD_add_response_header(resp, "Content-Disposition", csv_disposition(r, disp, sizeof disp));
    set_reply(r, 200, resp);
}

void reply_list(struct req *r, json_t *items, int64_t total, int64_t offset)
{
    int64_t next = offset + (int64_t)json_array_size(items);

    if (req_wants_csv(r)) {
        size_t len = 0;
        char *csv = csv_render(items, &len);
        json_decref(items);
        reply_csv_text(r, csv, len);
        return;
    }
    if (next < total) {
        char cur[32];
        snprintf(cur, sizeof cur, "%lld", (long long)next);
        reply_json(
            r, 200,
            json_pack("{s:o, s:I, s:s}", "items", items, "total", (json_int_t)total, "next", cur));
    } else {
        reply_json(
            r, 200,
            json_pack("{s:o, s:I, s:n}", "items", items, "total", (json_int_t)total, "next"));
    }
}

void reply_list_text(struct req *r, const char *items, size_t len, size_t rows, int64_t total,
                     int64_t offset)
{
    int64_t next = offset + (int64_t)rows;
    char tail[96];
    int tl;
    char *buf;
    struct MHD_Response *resp;

    if (next < total)
        tl = snprintf(tail, sizeof tail, "],\"total\":%lld,\"next\":\"%lld\"}", (long long)total,
                      (long long)next);
    else
        tl = snprintf(tail, sizeof tail, "],\"total\":%lld,\"next\":null}", (long long)total);
    buf = malloc(len + (size_t)tl + 16);
    if (buf == NULL) {
        reply_error(r, 500, "internal", NULL, "out of memory");
        return;
    }
    memcpy(buf, "{\"items\":[", 10);
    memcpy(buf + 10, items, len);
    memcpy(buf + 10 + len, tail, (size_t)tl + 1);
    resp = MHD_create_response_from_buffer(10 + len + (size_t)tl, buf, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(buf);
        return;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    set_reply(r, 200, resp);
}

/* ---- input ---- */

bool req_json_body_or_reply(struct req *r, json_t **out)
{
    json_error_t err;
    json_t *v;

    if (!req_media_type_is(r, "application/json")) {
        reply_error(r, 415, "unsupported_media_type", NULL,
                    "the body must be JSON in UTF-8 (Content-Type: application/json)");
        return false;
    }
    if (r->body == NULL || r->body_len == 0) {
        reply_error(r, 400, "invalid_json", NULL, "the request body is empty");
        return false;
    }
    v = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &err);
    if (v == NULL) {
        reply_error(r, 400, "invalid_json", NULL, "malformed JSON at line %d column %d: %s",
                    err.line, err.column, err.text);
        return false;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        reply_error(r, 400, "invalid_json", NULL, "the body must be a JSON object");
        return false;
    }
    if (strcmp(r->method, "PATCH") == 0 && json_object_size(v) == 0) {
        json_decref(v);
        reply_error(r, 400, "validation_failed", NULL, "the body names no field to change");
        return false;
    }
    *out = v;
    return true;
}

bool req_param_int_or_reply(struct req *r, const char *name, int64_t min, int64_t max, int64_t *out)
{
    const char *v = req_param(r, name);

    if (v == NULL || *v == '\0')
        return true;
    if (gi_parse_int64(v, min, max, out) != GI_OK) {
        reply_error(r, 400, "invalid_parameter", name,
                    "query parameter %s must be a whole number from %lld to %lld", name,
                    (long long)min, (long long)max);
        return false;
    }
    return true;
}

bool req_param_str_or_reply(struct req *r, const char *name, size_t maxlen, const char **out)
{
    const char *v = req_param(r, name);

    *out = NULL;
    if (v == NULL || *v == '\0')
        return true;
    if (strlen(v) > maxlen || !gi_text_ok(v)) {
        reply_error(r, 400, "invalid_parameter", name,
                    "query parameter %s must be text of at most %zu bytes", name, maxlen);
        return false;
    }
    *out = v;
    return true;
}

bool req_param_bool_or_reply(struct req *r, const char *name, bool *out)
{
    const char *v = req_param(r, name);

    if (v == NULL || *v == '\0')
        return true;
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0) {
        *out = true;
    } else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0) {
        *out = false;
    } else {
        reply_error(r, 400, "invalid_parameter", name, "query parameter %s must be true or false",
                    name);
        return false;
    }
    return true;
}

bool req_page_or_reply(struct req *r, const char *const *sortable, struct store_page *pg)
{
    bool csv = req_wants_csv(r);
    const char *sort = req_param(r, "sort");

    /* CSV exports the whole filtered set unless a limit is given. */
    pg->limit = csv ? 100000 : 100;
    pg->offset = 0;
    pg->sort = NULL;
    pg->desc = false;
    if (!req_param_int_or_reply(r, "limit", 1, csv ? 100000 : 1000, &pg->limit))
        return false;
    if (!req_param_int_or_reply(r, "cursor", 0, INT64_MAX / 2, &pg->offset))
        return false;
    if (sort && *sort) {
        const char *name = sort[0] == '-' ? sort + 1 : sort;
        pg->desc = sort[0] == '-';
        for (const char *const *s = sortable; *s; s++)
            if (strcmp(*s, name) == 0)
                pg->sort = *s;
        if (pg->sort == NULL) {
            reply_error(r, 400, "invalid_parameter", "sort", "cannot sort by '%.64s'", name);
            return false;
        }
    }
    return true;
}

bool json_str_or_reply(struct req *r, const json_t *obj, const char *field, bool required,
                       size_t maxlen, const char **out)
{
    const json_t *v = json_object_get(obj, field);

    *out = NULL;
    if (v == NULL || json_is_null(v)) {
        if (required) {
            reply_error(r, 400, "validation_failed", field, "%s is required", field);
            return false;
        }
        return true;
    }
    if (!json_is_string(v)) {
        reply_error(r, 400, "validation_failed", field, "%s must be a string", field);
        return false;
    }
    if (required && json_string_length(v) == 0) {
        reply_error(r, 400, "validation_failed", field, "%s must not be empty", field);
        return false;
    }
    if (json_string_length(v) > maxlen || !gi_text_ok(json_string_value(v))) {
        reply_error(r, 400, "validation_failed", field,
                    "%s must be text of at most %zu bytes without control characters", field,
                    maxlen);
        return false;
    }
    *out = json_string_value(v);
    return true;
}

bool json_int_or_reply(struct req *r, const json_t *obj, const char *field, bool required,
                       int64_t min, int64_t max, int64_t *out)
{
    const json_t *v = json_object_get(obj, field);

    if (v == NULL || json_is_null(v)) {
        if (required) {
            reply_error(r, 400, "validation_failed", field, "%s is required", field);
            return false;
        }
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max) {
        reply_error(r, 400, "validation_failed", field,
                    "%s must be a whole number from %lld to %lld", field, (long long)min,
                    (long long)max);
        return false;
    }
    *out = json_integer_value(v);
    return true;
}

bool json_known_or_reply(struct req *r, const json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)obj, key, v) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, key) == 0;
        if (!ok) {
            reply_error(r, 400, "validation_failed", key, "unknown field '%.64s'", key);
            return false;
        }
    }
    return true;
}
