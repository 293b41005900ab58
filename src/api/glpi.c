/* POST /glpi: the FusionInventory / GLPI agent protocol (OCS style), so
 * hosts already running those agents report to gpuinv unchanged.
 *
 * The agent authenticates with HTTP Basic (any user name, a pusher or
 * higher token as the password) after a 401 challenge (the dispatcher's,
 * see routes.c). It posts XML compressed with zlib (or gzip, or plain):
 * first a PROLOG, answered with SEND and the delay before the next
 * contact (PROLOG_FREQ, hours), then the INVENTORY, whose machine and
 * components become assets under the source "glpi:<DEVICEID>" through
 * store_asset_ingest. Replies are compressed the way the request was.
 * A token bound to a source records each inventory on it (last success,
 * or the error), as pushes do. */
#include "api/api.h"
#include "core/log.h"
#include "core/model.h"
#include "core/observation.h"
#include "core/status.h"
#include "parse/glpi.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The agent reads a reply's <REPLY> element; an empty <REPLY/> reads as
 * no reply at all, so the empty answer has a start and an end tag. */
static const char prolog_reply[] = "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n"
                                   "<REPLY><RESPONSE>SEND</RESPONSE>"
                                   "<PROLOG_FREQ>24</PROLOG_FREQ></REPLY>\n";
static const char empty_reply[] = "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n"
                                  "<REPLY></REPLY>\n";

/* Sends xml encoded as the request was. */
static void reply_xml(struct req *r, enum glpi_encoding enc, const char *xml)
{
    unsigned char *out = NULL;
    size_t len = 0;

    if (glpi_encode(xml, strlen(xml), enc, &out, &len) != GI_OK) {
        reply_status(r, GI_INTERNAL, "reply");
        return;
    }
    reply_bytes(r, 200,
                enc == GLPI_PLAIN  ? "application/xml"
                : enc == GLPI_GZIP ? "application/x-compress-gzip"
                                   : "application/x-compress-zlib",
                out, len, true);
    free(out);
}

/* Records the outcome of one message on the token's source, if it has
 * one; a failure to record is logged, never the agent's problem. */
static void source_record(struct req *r, const char *error, size_t gpus)
{
    int st;

    if (r->who.source_id == 0)
        return;
    if ((st = store_source_record(r->store, r->who.source_id, error, (int64_t)gpus)) != GI_OK)
        gi_warn("glpi: cannot record on source %lld: %s", (long long)r->who.source_id,
                gi_status_name(st));
}

/* A push token confined to host-name patterns or a cluster reports only
 * for machines inside them (the machine's HARDWARE/NAME; a cluster as the
 * host is known to discovery); 403 otherwise. */
static bool scope_allows_or_reply(struct req *r, const char *host)
{
    const struct gi_principal *w = &r->who;
    char known[GI_LABEL_LEN] = "";
    int st;

    if (w->hosts[0] && (host[0] == '\0' || !gi_host_patterns_match(w->hosts, host))) {
        reply_error(r, 403, "forbidden", "HARDWARE/NAME",
                    "this push token may not report host '%s' (it may report %s)", host, w->hosts);
        return false;
    }
    if (w->cluster[0] == '\0' || host[0] == '\0')
        return true;
    st = store_host_cluster(r->store, host, known, sizeof known);
    if (st != GI_OK && st != GI_NOT_FOUND) {
        reply_status(r, st, "host");
        return false;
    }
    if (known[0] && strcmp(known, w->cluster) != 0) {
        reply_error(r, 403, "forbidden", "HARDWARE/NAME",
                    "this push token may not report host '%s': it is in cluster '%s', the token "
                    "only in '%s'",
                    host, known, w->cluster);
        return false;
    }
    return true;
}

/* Stores an inventory's records; false after an error reply. */
static bool inventory_or_reply(struct req *r, const struct glpi_msg *m)
{
    char source[GLPI_DEVICEID_MAX + 8], msg[160];
    json_t *report = NULL;
    int st;

    if (!scope_allows_or_reply(r, m->hostname))
        return false;
    snprintf(source, sizeof source, "glpi:%s", m->deviceid);
    if ((st = store_asset_ingest(r->store, source, m->records, false, &report)) != GI_OK) {
        snprintf(msg, sizeof msg, "inventory of %.100s not stored: %s", m->deviceid,
                 gi_status_name(st));
        source_record(r, msg, 0);
        reply_status(r, st, "inventory");
        return false;
    }
    gi_info("glpi: %s: %lld created, %lld updated, %lld unchanged, %zu fields dropped", source,
            (long long)json_integer_value(json_object_get(report, "created")),
            (long long)json_integer_value(json_object_get(report, "updated")),
            (long long)json_integer_value(json_object_get(report, "unchanged")),
            json_array_size(json_object_get(report, "errors")) + json_array_size(m->warnings));
    source_record(r, NULL, m->gpus);
    json_decref(report);
    return true;
}

void api_glpi(struct req *r)
{
    const char *ctype = req_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
    enum glpi_encoding enc;
    struct glpi_msg m;
    char err[GLPI_ERR_LEN] = "", msg[GLPI_ERR_LEN + 32], *xml = NULL;
    size_t xlen = 0;
    int st;

    memset(&m, 0, sizeof m);
    /* The GLPI agent's JSON protocol is another one: say so. */
    if (ctype && strncasecmp(ctype, "application/json", 16) == 0) {
        reply_error(r, 415, "unsupported_media_type", NULL,
                    "this endpoint speaks the agents' XML protocol (zlib, gzip or plain XML), "
                    "not JSON");
        return;
    }
    if (r->body_len == 0) {
        reply_error(r, 400, "validation_failed", "body", "the body is empty");
        return;
    }
    enc = glpi_detect(r->body, r->body_len, ctype);
    st = glpi_decode(r->body, r->body_len, enc, GLPI_MAX_DECODED, &xml, &xlen, err, sizeof err);
    if (st == GI_OK)
        st = glpi_parse(xml, xlen, &m, err, sizeof err);
    if (st != GI_OK) {
        snprintf(msg, sizeof msg, "agent message refused: %s", err);
        source_record(r, msg, 0);
        if (st == GI_TOO_LARGE)
            reply_error(r, 413, "too_large", "body", "%s", err);
        else if (st == GI_INVALID)
            reply_error(r, 400, "validation_failed", "body", "%s", err);
        else
            reply_status(r, st, "message");
        goto cleanup;
    }
    if (strcmp(m.query, "PROLOG") == 0)
        reply_xml(r, enc, prolog_reply);
    else if (strcmp(m.query, "INVENTORY") != 0 || inventory_or_reply(r, &m))
        reply_xml(r, enc, empty_reply); /* other queries have nothing to do here */
cleanup:
    glpi_msg_free(&m);
    free(xml);
}
