/* The webhook sender; see deliver.h. */
#include "collect/deliver.h"
#include "collect/httpget.h"
#include "collect/push_assets.h"
#include "core/hookbody.h"
#include "core/hooksig.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t backoff_override;

void deliver_configure(int64_t backoff_s) { backoff_override = backoff_s > 0 ? backoff_s : 0; }

int64_t deliver_backoff(void) { return backoff_override; }

int64_t deliver_interval(void)
{
    return backoff_override > 0 && backoff_override < DELIVER_INTERVAL_S ? backoff_override
                                                                         : DELIVER_INTERVAL_S;
}

static const char *sget(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && *v ? v : NULL;
}

/* The stored form of a reply: at most DELIVER_LOG_REPLY bytes cut on a
 * character boundary when it is text, else a note of its size. */
static void log_reply(const char *body, size_t len, char *out, size_t cap)
{
    size_t n = len < cap - 1 ? len : cap - 1;

    if (!body) {
        out[0] = '\0';
        return;
    }
    while (n > 0 && n < len && ((unsigned char)body[n] & 0xC0) == 0x80)
        n--;
    memcpy(out, body, n);
    out[n] = '\0';
    if (memchr(body, '\0', len) || !gi_text_ok(out))
        snprintf(out, cap, "(%zu bytes, not text)", len);
}

/* Sends one claimed delivery and records the attempt. */
static int send_one(struct store *st, const json_t *d, int64_t now, struct deliver_stats *stats)
{
    const char *url = sget(d, "url"), *format = sget(d, "format"), *body = sget(d, "body");
    const char *secret = sget(d, "secret"), *auth = sget(d, "auth"), *msg = sget(d, "msg_id");
    char h_id[160], h_ts[64], h_sig[48 + HOOKSIG_STANDARD_LEN], h_gh[64 + HOOKSIG_GITHUB_LEN],
        h_ev[160], h_auth[4200], sig[HOOKSIG_STANDARD_LEN], gh[HOOKSIG_GITHUB_LEN];
    char err[256] = "", logged[DELIVER_LOG_REPLY + 1], system[32], key[128], link[512];
    const char *headers[8];
    size_t nh = 0, len = 0, blen = body ? strlen(body) : 0;
    struct httppost_opts o = {
        .headers = headers, .timeout_s = DELIVER_TIMEOUT_S, .max_bytes = DELIVER_MAX_REPLY};
    struct store_delivery_outcome out = {.id = json_integer_value(json_object_get(d, "id")),
                                         .now = now,
                                         .backoff_s = backoff_override};
    char *reply = NULL, state[16];
    int truncated = 0, rc;

    snprintf(h_id, sizeof h_id, "webhook-id: %s", msg ? msg : "");
    snprintf(h_ts, sizeof h_ts, "webhook-timestamp: %lld", (long long)now);
    snprintf(h_ev, sizeof h_ev, "X-Gpuinv-Event: %s", sget(d, "event") ? sget(d, "event") : "");
    headers[nh++] = h_id;
    headers[nh++] = h_ts;
    headers[nh++] = h_ev;
    if (secret) {
        if (hooksig_standard(secret, msg ? msg : "", now, body, blen, sig) == 0) {
            snprintf(h_sig, sizeof h_sig, "webhook-signature: %s", sig);
            headers[nh++] = h_sig;
        } else {
            gi_warn("webhook %lld: its whsec_ secret is not valid base64; sent unsigned",
                    (long long)json_integer_value(json_object_get(d, "webhook_id")));
        }
        hooksig_github(secret, body, blen, gh);
        snprintf(h_gh, sizeof h_gh, "X-Gpuinv-Signature-256: %s", gh);
        headers[nh++] = h_gh;
    }
    if (auth) {
        snprintf(h_auth, sizeof h_auth, "Authorization: %s", auth);
        headers[nh++] = h_auth;
    }
    headers[nh] = NULL;
    if (!url || !body) {
        snprintf(err, sizeof err, "the delivery has no url or body");
    } else if (httppost(url, &o, body, blen, &reply, &len, &truncated, &out.status, err,
                        sizeof err) == 0) {
        log_reply(reply, len, logged, sizeof logged);
        out.response = logged;
        if (out.status < 200 || out.status > 299)
            snprintf(err, sizeof err, "the receiver answered %ld", out.status);
        else if (json_integer_value(json_object_get(d, "ticket_id")) > 0 && !truncated &&
                 hookbody_reply(format, url, out.status, reply, len, system, key, link)) {
            out.ext_system = system;
            out.ext_key = key;
            out.ext_url = link[0] ? link : NULL;
        }
    }
    out.error = err[0] ? err : NULL;
    rc = store_delivery_done(st, &out, state);
    if (rc == GI_CONFLICT)
        rc = GI_OK; /* retried, or its webhook deleted, while it was in flight */
    if (stats) {
        stats->sent++;
        if (strcmp(state, "delivered") == 0)
            stats->delivered++;
        else
            stats->failed++;
    }
    if (out.error)
        gi_info("webhook delivery %lld: %s (now %s)", (long long)out.id, out.error,
                state[0] ? state : "unchanged");
    free(reply);
    return rc;
}

int deliver_run(struct store *st, int64_t now, struct deliver_stats *stats)
{
    json_t *items = NULL, *d;
    size_t i;
    /* Long enough for the whole batch to time out before another
     * replica may take its deliveries again. */
    int64_t lease = (int64_t)DELIVER_BATCH * (DELIVER_TIMEOUT_S + 5) + 60;
    int rc = store_delivery_claim(st, now, lease, DELIVER_BATCH, &items), one_rc;

    if (stats)
        memset(stats, 0, sizeof *stats);
    json_array_foreach(items, i, d) {
        int one = send_one(st, d, gi_now(), stats);
        if (one != GI_OK && rc == GI_OK)
            rc = one;
    }
    json_decref(items);
    /* Then the push-back to asset managers, on the same schedule. */
    if ((one_rc = push_assets_run(st, gi_now(), stats)) != GI_OK && rc == GI_OK)
        rc = one_rc;
    return rc;
}
