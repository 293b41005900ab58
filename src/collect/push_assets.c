/* The push-back sender; see push_assets.h. */
#include "collect/push_assets.h"
#include "collect/cloudhttp.h"
#include "collect/deliver.h"
#include "collect/httpget.h"
#include "collect/pull.h"
#include "core/log.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/netbox.h"
#include "parse/snipeit.h"
#include "store/store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUSH_BATCH 10
#define PUSH_MAX_BODY (4u << 20)
#define PUSH_LOG_REPLY 4096

static const struct {
    const char *stage, *status;
} netbox_statuses[] = {
    {"ordered", "planned"},
    {"received", "staged"},
    {"active", "active"},
    {"spare", "inventory"},
    {"diagnostic_repair", "failed"},
    {"refurbishment_candidate", "offline"},
    {"decommissioned", "decommissioning"},
};

const char *push_netbox_status(const json_t *cfg, const char *stage)
{
    const char *mapped = json_string_value(
        json_object_get(json_object_get(cfg, "push_statuses"), stage ? stage : ""));

    if (mapped && *mapped)
        return mapped;
    for (size_t i = 0; stage && i < sizeof netbox_statuses / sizeof *netbox_statuses; i++)
        if (strcmp(netbox_statuses[i].stage, stage) == 0)
            return netbox_statuses[i].status;
    return NULL;
}

/* v as text (a string, or a whole number) into o[key]; nothing else. */
static void put(json_t *o, const char *key, const json_t *v)
{
    char buf[32];

    if (json_is_string(v) && json_string_length(v) > 0) {
        json_object_set_new(o, key, json_string(json_string_value(v)));
    } else if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        json_object_set_new(o, key, json_string(buf));
    } else if (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
               fabs(json_real_value(v)) < 1e15) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_real_value(v));
        json_object_set_new(o, key, json_string(buf));
    }
}

json_t *push_ours(const char *kind, const json_t *cfg, const json_t *asset)
{
    const json_t *loc = json_object_get(asset, "location");
    const char *stage = json_string_value(json_object_get(asset, "stage"));
    json_t *o = json_object();

    if (strcmp(kind, "netbox") == 0) {
        const char *status = push_netbox_status(cfg, stage);
        put(o, "site", json_object_get(loc, "datacenter"));
        put(o, "rack", json_object_get(loc, "rack"));
        put(o, "position", json_object_get(loc, "u"));
        if (status)
            json_object_set_new(o, "status", json_string(status));
    } else {
        put(o, "location", json_object_get(loc, "datacenter"));
        put(o, "status",
            json_object_get(json_object_get(cfg, "push_status_ids"), stage ? stage : ""));
    }
    return o;
}

json_t *push_theirs(const char *kind, const json_t *obj)
{
    json_t *o = json_object();

    if (strcmp(kind, "netbox") == 0) {
        const json_t *st = json_object_get(obj, "status");
        put(o, "site", json_object_get(json_object_get(obj, "site"), "name"));
        put(o, "rack", json_object_get(json_object_get(obj, "rack"), "name"));
        put(o, "position", json_object_get(obj, "position"));
        put(o, "status", json_is_object(st) ? json_object_get(st, "value") : st);
    } else {
        const json_t *st = json_object_get(obj, "status_label");
        if (!json_is_object(st))
            st = json_object_get(obj, "status");
        put(o, "location", json_object_get(json_object_get(obj, "location"), "name"));
        put(o, "status", json_object_get(st, "id"));
    }
    return o;
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

void push_plan(const json_t *ours, const json_t *theirs, const json_t *base, json_t *write,
               json_t *seen, json_t *conflicts)
{
    const char *f;
    const json_t *ov;

    json_object_foreach((json_t *)ours, f, ov) {
        const char *o = json_string_value(ov);
        const char *r = json_string_value(json_object_get(theirs, f));
        const json_t *b = json_object_get(base, f);
        const char *bv = json_string_value(json_object_get(b, "value"));
        const char *held = json_string_value(json_object_get(b, "held"));

        if (!o)
            continue;
        if (same(o, r))
            json_object_set_new(seen, f, json_string(r));
        else if (held && strcmp(held, o) == 0)
            continue; /* a person kept the remote's value against this one */
        else if (b ? !same(r, bv) : r != NULL)
            json_array_append_new(conflicts, json_pack("{s:s, s:s, s:s?, s:s?}", "field", f, "ours",
                                                       o, "theirs", r, "base", bv));
        else
            json_object_set_new(write, f, json_string(o));
    }
}

/* One remote call's outcome for the push. */
struct call {
    long status, retry_after;
    char err[320];
    bool permanent;
    char reply[PUSH_LOG_REPLY + 1];
};

/* The stored form of a reply: a prefix cut on a character boundary when
 * it is text, else a note of its size. */
static void keep_reply(const char *body, size_t len, char *out, size_t cap)
{
    size_t n = len < cap - 1 ? len : cap - 1;

    out[0] = '\0';
    if (!body)
        return;
    while (n > 0 && n < len && ((unsigned char)body[n] & 0xC0) == 0x80)
        n--;
    memcpy(out, body, n);
    out[n] = '\0';
    if (memchr(body, '\0', len) || !gi_text_ok(out))
        snprintf(out, cap, "(%zu bytes, not text)", len);
}

/* Classifies an answer: 0 for a success (a Snipe-IT body saying
 * "status":"error" is a refusal), else -1 with the call's err filled
 * and permanent set when trying again cannot help. */
static int judge(const char *system, const char *what, const char *body, size_t len, struct call *k)
{
    json_t *doc = body ? json_loadb(body, len, 0, NULL) : NULL;
    const char *st = json_string_value(json_object_get(doc, "status"));
    int rc = 0;

    keep_reply(body, len, k->reply, sizeof k->reply);
    if (k->status >= 200 && k->status <= 299 && !(st && strcmp(st, "error") == 0)) {
        json_decref(doc);
        return 0;
    }
    rc = -1;
    if (k->status >= 200 && k->status <= 299) {
        char *m = json_dumps(json_object_get(doc, "messages"), JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(k->err, sizeof k->err, "%s refused %s: %.200s", system, what, m ? m : "error");
        free(m);
        k->permanent = true;
    } else if (k->status == 401 || k->status == 403) {
        snprintf(k->err, sizeof k->err, "%s answered HTTP %ld to %s (the token was refused)",
                 system, k->status, what);
    } else if (k->status == 429) {
        snprintf(k->err, sizeof k->err,
                 "%s answered HTTP 429 to %s (rate limited; retry after %ld s)", system, what,
                 k->retry_after);
    } else {
        snprintf(k->err, sizeof k->err, "%s answered HTTP %ld to %s", system, k->status, what);
        /* 408 and server errors may pass; other refusals will not */
        k->permanent = k->status >= 400 && k->status < 500 && k->status != 408;
    }
    json_decref(doc);
    return rc;
}

struct target {
    const json_t *cfg;
    const char *kind, *system;
    char auth[4200], url[2600], msg[64];
};

/* The source's HTTP settings, as its pulls use them (pull_http_opts): the
 * one place reads and writes of a push take their TLS verification
 * (ca_file, insecure_skip_verify) from. */
static void target_opts(const struct target *t, struct httpget_opts *o)
{
    pull_http_opts(t->cfg, o, PUSH_MAX_BODY);
}

/* GETs the remote object into *obj. */
static int remote_get(const struct target *t, json_t **obj, struct call *k)
{
    struct httpget_opts o;
    char *body = NULL;
    size_t len = 0;
    int rc;

    *obj = NULL;
    target_opts(t, &o);
    o.bearer = NULL;
    o.authorization = t->auth[0] ? t->auth : NULL;
    o.retry_after = &k->retry_after;
    if (httpget(t->url, &o, &body, &len, &k->status, k->err, sizeof k->err) != 0)
        return -1;
    if ((rc = judge(t->system, "the read", body, len, k)) == 0)
        *obj = json_loadb(body, len, 0, NULL);
    if (rc == 0 && !json_is_object(*obj)) {
        json_decref(*obj);
        *obj = NULL;
        snprintf(k->err, sizeof k->err, "%s answered the read with something not a JSON object",
                 t->system);
        rc = -1;
    }
    free(body);
    return rc;
}

/* Sends body to url + suffix with method (NULL: POST). */
static int remote_send(const struct target *t, const char *method, const char *suffix,
                       const json_t *body, const char *what, struct call *k)
{
    char h_auth[4300], h_id[96], url[2700], *text = json_dumps(body, JSON_COMPACT), *reply = NULL;
    const char *headers[4];
    size_t nh = 0, len = 0;
    int truncated = 0, rc = -1;
    struct httpget_opts g;
    struct httppost_opts o = {.headers = headers,
                              .timeout_s = DELIVER_TIMEOUT_S,
                              .max_bytes = PUSH_MAX_BODY,
                              .method = method,
                              .retry_after = &k->retry_after};

    target_opts(t, &g);
    o.ca_file = g.ca_file;
    o.insecure = g.insecure;

    if (t->auth[0]) {
        snprintf(h_auth, sizeof h_auth, "Authorization: %s", t->auth);
        headers[nh++] = h_auth;
    }
    /* The same idempotency header as webhook deliveries. */
    snprintf(h_id, sizeof h_id, "webhook-id: %s", t->msg);
    headers[nh++] = h_id;
    headers[nh++] = "X-Gpuinv-Event: asset.sync";
    headers[nh] = NULL;
    snprintf(url, sizeof url, "%s%s", t->url, suffix);
    if (text && httppost(url, &o, text, strlen(text), &reply, &len, &truncated, &k->status, k->err,
                         sizeof k->err) == 0)
        rc = judge(t->system, what, reply, len, k);
    else if (!text)
        snprintf(k->err, sizeof k->err, "out of memory");
    free(text);
    free(reply);
    return rc;
}

/* A mapping's entry for name (config[map][name]) as JSON, or NULL. */
static const json_t *mapped(const json_t *cfg, const char *map, const char *name)
{
    const json_t *v = json_object_get(json_object_get(cfg, map), name ? name : "");

    return json_is_integer(v) || json_is_string(v) ? v : NULL;
}

/* The related object NetBox is to point at: an id from the map, else
 * the object named. */
static json_t *netbox_ref(const json_t *cfg, const char *map, const char *name)
{
    const json_t *id = mapped(cfg, map, name);
    int64_t n;

    if (json_is_integer(id))
        return json_integer(json_integer_value(id));
    if (json_is_string(id) && gi_parse_int64(json_string_value(id), 1, INT64_MAX, &n) == GI_OK)
        return json_integer(n);
    return json_pack("{s:s}", "name", name);
}

static int write_netbox(const struct target *t, const json_t *obj, json_t *write, struct call *k)
{
    json_t *body = json_object();
    const char *f;
    json_t *v;
    int rc;

    json_object_foreach(write, f, v) {
        const char *s = json_string_value(v);
        int64_t u;
        if (strcmp(f, "site") == 0)
            json_object_set_new(body, "site", netbox_ref(t->cfg, "push_sites", s));
        else if (strcmp(f, "rack") == 0)
            json_object_set_new(body, "rack", netbox_ref(t->cfg, "push_racks", s));
        else if (strcmp(f, "status") == 0)
            json_object_set_new(body, "status", json_string(s));
        else if (strcmp(f, "position") == 0 && gi_parse_int64(s, 0, 1000, &u) == GI_OK) {
            json_object_set_new(body, "position", json_integer(u));
            /* NetBox needs a face with a position. */
            if (!json_is_object(json_object_get(obj, "face")) &&
                !json_is_string(json_object_get(obj, "face")))
                json_object_set_new(body, "face", json_string("front"));
        }
    }
    rc = remote_send(t, "PATCH", "", body, "the update", k);
    json_decref(body);
    return rc;
}

/* Snipe-IT: the location by check-in and checkout (an active asset is
 * checked out to the location; any other is checked in there), then the
 * status label (and, for an asset not checked out, the location) by
 * PATCH. A location with no id in config.push_locations is not written
 * and leaves the write. */
static int write_snipeit(const struct target *t, const json_t *obj, const json_t *asset,
                         json_t *write, struct call *k)
{
    const char *loc = json_string_value(json_object_get(write, "location"));
    const char *status = json_string_value(json_object_get(write, "status"));
    const json_t *m = mapped(t->cfg, "push_locations", loc);
    bool active = json_is_string(json_object_get(asset, "stage")) &&
                  strcmp(json_string_value(json_object_get(asset, "stage")), "active") == 0;
    bool out = json_is_object(json_object_get(obj, "assigned_to"));
    json_t *patch = json_object(), *loc_id = NULL;
    int64_t n;
    int rc = 0;

    if (json_is_integer(m))
        loc_id = json_integer(json_integer_value(m));
    else if (json_is_string(m) && gi_parse_int64(json_string_value(m), 1, INT64_MAX, &n) == GI_OK)
        loc_id = json_integer(n);
    if (loc && !loc_id) {
        gi_info("sync push: the Snipe-IT location of '%s' is not in config.push_locations; not "
                "written",
                loc);
        json_object_del(write, "location");
        loc = NULL;
    }
    if (loc && out) {
        json_t *ci = json_pack("{s:O, s:s}", "location_id", loc_id, "note", "gpuinv: moved");
        rc = remote_send(t, NULL, "/checkin", ci, "the check-in", k);
        json_decref(ci);
    }
    if (rc == 0 && loc && active) {
        json_t *co = json_pack("{s:s, s:O, s:s}", "checkout_to_type", "location",
                               "assigned_location", loc_id, "note", "gpuinv: checked in here");
        rc = remote_send(t, NULL, "/checkout", co, "the checkout", k);
        json_decref(co);
    } else if (loc) {
        json_object_set(patch, "location_id", loc_id);
    }
    if (status && gi_parse_int64(status, 0, INT64_MAX, &n) == GI_OK)
        json_object_set_new(patch, "status_id", json_integer(n));
    if (rc == 0 && json_object_size(patch) > 0)
        rc = remote_send(t, "PATCH", "", patch, "the update", k);
    json_decref(patch);
    json_decref(loc_id);
    return rc;
}

/* The finding of a lookup that linked nothing, as a conflict on the
 * field "link" (shown where sync conflicts are): ours the serial, theirs
 * what the remote holds. */
static void link_finding(json_t *conflicts, const char *serial, const char *theirs)
{
    json_array_append_new(conflicts, json_pack("{s:s, s:s, s:s, s:n}", "field", "link", "ours",
                                               serial, "theirs", theirs, "base"));
}

/* Looks the unlinked asset up by its serial at the remote (NetBox
 * /api/dcim/devices/?serial=, Snipe-IT /api/v1/hardware/byserial/{serial})
 * and, when exactly one object has it, links it and reads it: 0 with *obj
 * (the object), t->url its address and *base the fields recorded as
 * synced. None or several: 1, a finding appended to conflicts, nothing
 * linked; none, for an asset another system has linked (elsewhere), is
 * no finding: that system need not hold it. -1 on a failed call or an
 * answer that cannot be trusted (k filled). */
static int lookup(struct store *st, struct target *t, int64_t push_id, const char *root,
                  const json_t *asset, bool elsewhere, json_t **obj, json_t **base,
                  json_t *conflicts, struct call *k)
{
    const char *serial = json_string_value(json_object_get(asset, "serial"));
    bool netbox = strcmp(t->kind, "netbox") == 0;
    char esc[512], remote[32], what[160];
    json_t *found = NULL, *theirs = NULL;
    int64_t total = 0;
    int rc = -1;

    *obj = NULL;
    *base = NULL;
    if (!serial || !cloudhttp_escape(serial, esc, sizeof esc)) {
        snprintf(k->err, sizeof k->err, "the asset has no serial to look it up by");
        k->permanent = true;
        return -1;
    }
    if (!gi_fmt(t->url, sizeof t->url,
                netbox ? "%sapi/dcim/devices/?serial=%s" : "%sapi/v1/hardware/byserial/%s", root,
                esc)) {
        snprintf(k->err, sizeof k->err, "the lookup's address is too long");
        k->permanent = true;
        return -1;
    }
    {
        struct httpget_opts o;
        char *body = NULL, perr[256];
        size_t len = 0;
        int st_parse;
        target_opts(t, &o);
        o.bearer = NULL;
        o.authorization = t->auth[0] ? t->auth : NULL;
        o.retry_after = &k->retry_after;
        if (httpget(t->url, &o, &body, &len, &k->status, k->err, sizeof k->err) != 0)
            return -1;
        keep_reply(body, len, k->reply, sizeof k->reply);
        if (k->status < 200 || k->status > 299) {
            /* judge() words the refusal; a Snipe-IT "error" body is its
             * answer for no match and is read below */
            rc = judge(t->system, "the lookup by serial", body, len, k);
            free(body);
            return rc == 0 ? -1 : rc;
        }
        st_parse = netbox
                       ? netbox_lookup_parse(body, len, serial, &found, &total, perr, sizeof perr)
                       : snipeit_lookup_parse(body, len, serial, &found, &total, perr, sizeof perr);
        free(body);
        if (st_parse != GI_OK) {
            snprintf(k->err, sizeof k->err, "%s answered the lookup by serial %.64s: %.180s",
                     t->system, serial, st_parse == GI_INVALID ? perr : "out of memory");
            k->permanent = st_parse == GI_INVALID;
            return -1;
        }
    }
    if (total != 1 || json_array_size(found) != 1) {
        if (total == 0 && elsewhere) {
            json_decref(found);
            return 1;
        }
        if (total == 0)
            snprintf(what, sizeof what, "no %s has this serial", netbox ? "device" : "asset");
        else
            snprintf(what, sizeof what, "%lld %ss have this serial", (long long)total,
                     netbox ? "device" : "asset");
        link_finding(conflicts, serial, what);
        json_decref(found);
        return 1;
    }
    *obj = json_incref(json_array_get(found, 0));
    json_decref(found);
    snprintf(remote, sizeof remote, "%lld",
             (long long)json_integer_value(json_object_get(*obj, "id")));
    gi_fmt(t->url, sizeof t->url, netbox ? "%sapi/dcim/devices/%s/" : "%sapi/v1/hardware/%s", root,
           remote);
    theirs = push_theirs(t->kind, *obj);
    if (store_sync_link_found(st, push_id, netbox ? "netbox" : "snipeit", remote, theirs) !=
        GI_OK) {
        snprintf(k->err, sizeof k->err, "the link to %s %s could not be stored", t->system, remote);
        json_decref(theirs);
        json_decref(*obj);
        *obj = NULL;
        return -1;
    }
    /* what was just recorded as synced, in the form bases_read() gives */
    *base = json_object();
    {
        const char *f;
        json_t *v;
        json_object_foreach(theirs, f, v)
            json_object_set_new(*base, f, json_pack("{s:O, s:n}", "value", v, "held"));
    }
    json_decref(theirs);
    return 0;
}

/* Reads, plans, writes and records one claimed push. */
static int send_one(struct store *st, const json_t *p, struct deliver_stats *stats)
{
    const char *kind = json_string_value(json_object_get(p, "kind"));
    const char *base = json_string_value(json_object_get(json_object_get(p, "config"), "url"));
    const char *token = json_string_value(json_object_get(json_object_get(p, "config"), "token"));
    const char *remote = json_string_value(json_object_get(p, "remote_id"));
    const json_t *asset = json_object_get(p, "asset");
    struct target t = {.cfg = json_object_get(p, "config"), .kind = kind};
    struct call k = {0};
    json_t *obj = NULL, *ours = NULL, *theirs = NULL, *write = json_object(), *seen = json_object(),
           *conflicts = json_array(), *found_base = NULL;
    char root[2600];
    int found = -1;
    struct store_sync_outcome out = {.id = json_integer_value(json_object_get(p, "id"))};
    bool netbox = kind && strcmp(kind, "netbox") == 0;
    char state[16] = "";
    int rc, sent = -1;

    t.system = netbox ? "NetBox" : "Snipe-IT";
    snprintf(t.msg, sizeof t.msg, "push_%lld", (long long)out.id);
    if (token && *token)
        snprintf(t.auth, sizeof t.auth, "%s %s", netbox ? "Token" : "Bearer", token);
    if (!base || !*base) {
        snprintf(k.err, sizeof k.err, "the source has no url");
        k.permanent = true;
    } else {
        gi_fmt(root, sizeof root, "%s%s", base, base[strlen(base) - 1] == '/' ? "" : "/");
        if (remote) {
            gi_fmt(t.url, sizeof t.url, netbox ? "%sapi/dcim/devices/%s/" : "%sapi/v1/hardware/%s",
                   root, remote);
            found = remote_get(&t, &obj, &k);
        } else {
            /* never linked: look it up by serial first */
            bool elsewhere = false;
            if (store_sync_linked_elsewhere(st, out.id, &elsewhere) != GI_OK)
                elsewhere = false; /* not read: a finding rather than silence */
            found =
                lookup(st, &t, out.id, root, asset, elsewhere, &obj, &found_base, conflicts, &k);
            if (found == 1)
                sent = 0; /* the finding is the push's outcome */
        }
        if (found == 0) {
            ours = push_ours(kind, t.cfg, asset);
            theirs = push_theirs(kind, obj);
            push_plan(ours, theirs, found_base ? found_base : json_object_get(p, "base"), write,
                      seen, conflicts);
            if (json_object_size(write) == 0)
                sent = 0;
            else if (netbox)
                sent = write_netbox(&t, obj, write, &k);
            else
                sent = write_snipeit(&t, obj, asset, write, &k);
        }
    }
    out.now = gi_now();
    out.status = k.status;
    out.system = netbox ? "netbox" : "snipeit";
    out.error = sent == 0 ? NULL : k.err[0] ? k.err : "the push failed";
    out.permanent = k.permanent;
    out.retry_after_s = k.status == 429 ? (k.retry_after > 0 ? k.retry_after : 1) : 0;
    out.backoff_s = deliver_backoff();
    out.response = k.reply[0] ? k.reply : NULL;
    out.written = sent == 0 ? write : NULL;
    out.seen = sent == 0 ? seen : NULL;
    out.conflicts = sent == 0 ? conflicts : NULL;
    rc = store_sync_done(st, &out, state);
    if (rc == GI_CONFLICT)
        rc = GI_OK; /* finished elsewhere while in flight */
    if (stats) {
        stats->sent++;
        if (sent == 0)
            stats->delivered++;
        else
            stats->failed++;
    }
    if (out.error)
        gi_info("sync push %lld: %s (now %s)", (long long)out.id, out.error,
                state[0] ? state : "unchanged");
    json_decref(obj);
    json_decref(ours);
    json_decref(theirs);
    json_decref(write);
    json_decref(seen);
    json_decref(conflicts);
    json_decref(found_base);
    return rc;
}

int push_assets_run(struct store *st, int64_t now, struct deliver_stats *stats)
{
    json_t *items = NULL, *p;
    size_t i;
    /* Each push makes up to four calls. */
    int64_t lease = (int64_t)PUSH_BATCH * 4 * (DELIVER_TIMEOUT_S + 5) + 60;
    int rc = store_sync_claim(st, now, lease, PUSH_BATCH, &items);

    json_array_foreach(items, i, p) {
        int one = send_one(st, p, stats);
        if (one != GI_OK && rc == GI_OK)
            rc = one;
    }
    json_decref(items);
    return rc;
}
