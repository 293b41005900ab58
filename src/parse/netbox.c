/* NetBox list pages into asset records; see netbox.h. */
#include "parse/netbox.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static void warn(json_t *warnings, size_t index, const char *field, const char *msg)
{
    json_array_append_new(warnings, json_pack("{s:I, s:s, s:s}", "index", (json_int_t)index,
                                              "field", field, "error", msg));
}

/* A usable text value: a non-empty string of valid UTF-8 without control
 * characters. A value of another type (not null) is warned. */
static const char *text_of(const json_t *v, json_t *warnings, size_t index, const char *field)
{
    if (v == NULL || json_is_null(v))
        return NULL;
    if (!json_is_string(v) || !gi_text_ok(json_string_value(v))) {
        warn(warnings, index, field, "must be text");
        return NULL;
    }
    return json_string_length(v) > 0 ? json_string_value(v) : NULL;
}

/* obj[key] as a nested object's `sub` text ({"name": ...}), or as text. */
static const char *nested(const json_t *obj, const char *key, const char *sub, json_t *warnings,
                          size_t index)
{
    const json_t *v = json_object_get(obj, key);
    char field[96];

    if (json_is_object(v)) {
        snprintf(field, sizeof field, "%s.%s", key, sub);
        return text_of(json_object_get(v, sub), warnings, index, field);
    }
    return text_of(v, warnings, index, key);
}

static void set_text(json_t *o, const char *key, const char *v)
{
    if (v)
        json_object_set_new(o, key, json_string(v));
}

/* Lower-case copy of s for keyword tests. */
static void lower(const char *s, char *out, size_t outlen)
{
    size_t i = 0;

    for (; s && s[i] && i + 1 < outlen; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

static bool has_word(const char *hay, const char *const *words)
{
    char l[256];

    lower(hay, l, sizeof l);
    for (size_t i = 0; words[i]; i++)
        if (strstr(l, words[i]))
            return true;
    return false;
}

static const char *const gpu_words[] = {"gpu",   "nvidia", "tesla", "h100",     "h200",
                                        "a100",  "b200",   "l40",   "instinct", "accelerator",
                                        "mi300", "radeon", NULL};

const char *netbox_stage_for(const char *status)
{
    static const struct {
        const char *value, *stage;
    } map[] = {{"active", "active"},
               {"offline", "spare"},
               {"inventory", "spare"},
               {"staged", "spare"},
               {"planned", "ordered"},
               {"failed", "diagnostic_repair"},
               {"decommissioning", "decommissioned"}};

    for (size_t i = 0; status && i < sizeof map / sizeof *map; i++)
        if (strcmp(map[i].value, status) == 0)
            return map[i].stage;
    return NULL;
}

/* status: {value, label}, a v2 integer, or a plain string. */
static void status_field(const json_t *o, json_t *custom, json_t *warnings, size_t index)
{
    static const char *const legacy[] = {"offline", "active",    "planned",        "staged",
                                         "failed",  "inventory", "decommissioning"};
    const json_t *v = json_object_get(o, "status");
    const char *s = NULL;

    if (json_is_object(v))
        v = json_object_get(v, "value");
    if (v == NULL || json_is_null(v))
        return;
    if (json_is_integer(v)) {
        json_int_t n = json_integer_value(v);
        if (n >= 0 && n < (json_int_t)(sizeof legacy / sizeof *legacy))
            s = legacy[n];
        else
            warn(warnings, index, "status", "not a known status number");
    } else {
        s = text_of(v, warnings, index, "status");
    }
    if (s == NULL)
        return;
    json_object_set_new(custom, "external_status", json_string(s));
    if (netbox_stage_for(s))
        json_object_set_new(custom, "external_stage", json_string(netbox_stage_for(s)));
}

/* The record's source_key "netbox:<what>:<id>"; false when id is absent. */
static bool key_of(const json_t *o, const char *what, char *out, size_t outlen)
{
    const json_t *id = json_object_get(o, "id");

    if (!json_is_integer(id) || json_integer_value(id) < 0)
        return false;
    snprintf(out, outlen, "netbox:%s:%lld", what, (long long)json_integer_value(id));
    return true;
}

/* parent_source_key from a {"id": N} device reference. */
static void parent_of(const json_t *o, json_t *rec, json_t *warnings, size_t index)
{
    const json_t *d = json_object_get(o, "device");
    char key[64];

    if (d == NULL || json_is_null(d))
        return;
    if (json_is_object(d) && key_of(d, "device", key, sizeof key))
        json_object_set_new(rec, "parent_source_key", json_string(key));
    else
        warn(warnings, index, "device", "must be a device reference with an id");
}

/* The common fields: serial, asset_tag, manufacturer. */
static void common(const json_t *o, json_t *rec, json_t *warnings, size_t index)
{
    set_text(rec, "serial", text_of(json_object_get(o, "serial"), warnings, index, "serial"));
    set_text(rec, "tag", text_of(json_object_get(o, "asset_tag"), warnings, index, "asset_tag"));
}

static json_t *device(const json_t *o, json_t *warnings, size_t index)
{
    static const char *const switch_words[] = {"switch", "router", "firewall", NULL};
    static const char *const other_words[] = {"pdu", "patch", "power", "console", NULL};
    json_t *rec = json_object(), *loc = json_object(), *custom = json_object();
    const json_t *dt = json_object_get(o, "device_type"), *pos;
    const char *role, *v;
    char key[64];

    common(o, rec, warnings, index);
    if (json_is_object(dt)) {
        set_text(rec, "model",
                 text_of(json_object_get(dt, "model"), warnings, index, "device_type.model"));
        if (json_is_object(json_object_get(dt, "manufacturer")))
            set_text(rec, "vendor", nested(dt, "manufacturer", "name", warnings, index));
    } else if (dt && !json_is_null(dt)) {
        warn(warnings, index, "device_type", "must be an object");
    }
    if (json_is_object(json_object_get(o, "manufacturer")) && !json_object_get(rec, "vendor"))
        set_text(rec, "vendor", nested(o, "manufacturer", "name", warnings, index));
    role = json_object_get(o, "role") ? nested(o, "role", "name", warnings, index)
                                      : nested(o, "device_role", "name", warnings, index);
    json_object_set_new(rec, "kind",
                        json_string(role && has_word(role, switch_words)  ? "switch"
                                    : role && has_word(role, other_words) ? "other"
                                                                          : "server"));
    set_text(custom, "role", role);
    set_text(custom, "name", text_of(json_object_get(o, "name"), warnings, index, "name"));
    status_field(o, custom, warnings, index);
    set_text(loc, "datacenter", nested(o, "site", "name", warnings, index));
    if (json_is_object(json_object_get(o, "site")) &&
        (v = text_of(json_object_get(json_object_get(o, "site"), "slug"), warnings, index,
                     "site.slug")) != NULL)
        json_object_set_new(rec, "site_slug", json_string(v));
    set_text(loc, "room", nested(o, "location", "name", warnings, index));
    set_text(loc, "rack", nested(o, "rack", "name", warnings, index));
    pos = json_object_get(o, "position");
    if (json_is_number(pos)) {
        double p = json_number_value(pos);
        /* Half units exist since 3.3; ours are whole. */
        if (p >= 0 && p <= 100 && floor(p) == p)
            json_object_set_new(loc, "u", json_integer((json_int_t)p));
        else
            warn(warnings, index, "position", "must be a whole rack unit from 0 to 100");
    } else if (pos && !json_is_null(pos)) {
        warn(warnings, index, "position", "must be a number");
    }
    if (json_object_size(loc) > 0)
        json_object_set(rec, "location", loc);
    if (key_of(o, "device", key, sizeof key))
        json_object_set_new(rec, "source_key", json_string(key));
    json_object_set(rec, "custom", custom);
    json_decref(loc);
    json_decref(custom);
    return rec;
}

static json_t *module(const json_t *o, json_t *warnings, size_t index)
{
    json_t *rec = json_object(), *custom = json_object();
    const json_t *mt = json_object_get(o, "module_type");
    const char *model = NULL, *vendor = NULL;
    char key[64];

    common(o, rec, warnings, index);
    if (json_is_object(mt)) {
        model = text_of(json_object_get(mt, "model"), warnings, index, "module_type.model");
        if (json_is_object(json_object_get(mt, "manufacturer")))
            vendor = nested(mt, "manufacturer", "name", warnings, index);
    } else if (mt && !json_is_null(mt)) {
        warn(warnings, index, "module_type", "must be an object");
    }
    set_text(rec, "model", model);
    set_text(rec, "vendor", vendor);
    json_object_set_new(
        rec, "kind",
        json_string((model && has_word(model, gpu_words)) || (vendor && has_word(vendor, gpu_words))
                        ? "gpu"
                        : "other"));
    set_text(custom, "bay", nested(o, "module_bay", "name", warnings, index));
    status_field(o, custom, warnings, index);
    parent_of(o, rec, warnings, index);
    if (key_of(o, "module", key, sizeof key))
        json_object_set_new(rec, "source_key", json_string(key));
    json_object_set(rec, "custom", custom);
    json_decref(custom);
    return rec;
}

static json_t *item(const json_t *o, json_t *warnings, size_t index)
{
    static const char *const psu_words[] = {"psu", "power supply", "power-supply", NULL};
    static const char *const ssd_words[] = {"ssd", "nvme", "disk", "drive", NULL};
    static const char *const nic_words[] = {"nic", "network", "ethernet", "connectx", "hca", NULL};
    static const struct {
        const char *kind;
        const char *const *words;
    } kinds[] = {{"gpu", gpu_words}, {"psu", psu_words}, {"ssd", ssd_words}, {"nic", nic_words}};
    json_t *rec = json_object(), *custom = json_object();
    const char *role = nested(o, "role", "name", warnings, index);
    const char *name = text_of(json_object_get(o, "name"), warnings, index, "name");
    const char *part = text_of(json_object_get(o, "part_id"), warnings, index, "part_id");
    const char *kind = "other";
    char key[64];

    common(o, rec, warnings, index);
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds && strcmp(kind, "other") == 0; i++)
        if ((role && has_word(role, kinds[i].words)) || (name && has_word(name, kinds[i].words)))
            kind = kinds[i].kind;
    json_object_set_new(rec, "kind", json_string(kind));
    set_text(rec, "model", part ? part : name);
    if (json_is_object(json_object_get(o, "manufacturer")))
        set_text(rec, "vendor", nested(o, "manufacturer", "name", warnings, index));
    set_text(custom, "name", name);
    set_text(custom, "role", role);
    parent_of(o, rec, warnings, index);
    if (key_of(o, "item", key, sizeof key))
        json_object_set_new(rec, "source_key", json_string(key));
    json_object_set(rec, "custom", custom);
    json_decref(custom);
    return rec;
}

int netbox_parse_page(const char *body, size_t len, enum netbox_list list, json_t *records,
                      json_t *warnings, char *next, size_t nextlen, int64_t *count, char *err,
                      size_t errlen)
{
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je), *results, *v, *o;
    size_t i, base = json_array_size(records);
    int rc = GI_INVALID;

    next[0] = '\0';
    *count = -1;
    err[0] = '\0';
    if (doc == NULL) {
        snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
        return GI_INVALID;
    }
    results = json_object_get(doc, "results");
    if (!json_is_array(results)) {
        snprintf(err, errlen, "the answer has no results list");
        goto cleanup;
    }
    if (json_is_integer(v = json_object_get(doc, "count")))
        *count = json_integer_value(v);
    if (json_is_string(v = json_object_get(doc, "next")) &&
        !gi_strlcpy(next, json_string_value(v), nextlen)) {
        snprintf(err, errlen, "the next page's URL is too long");
        goto cleanup;
    }
    json_array_foreach(results, i, o) {
        json_t *rec;
        if (!json_is_object(o)) {
            warn(warnings, base + i, "", "a result must be an object");
            continue;
        }
        rec = list == NETBOX_DEVICES   ? device(o, warnings, base + i)
              : list == NETBOX_MODULES ? module(o, warnings, base + i)
                                       : item(o, warnings, base + i);
        if (rec == NULL || json_array_append_new(records, rec) != 0) {
            rc = GI_INTERNAL;
            goto cleanup;
        }
    }
    rc = GI_OK;
cleanup:
    json_decref(doc);
    return rc;
}

void netbox_error_detail(const char *body, size_t len, char *out, size_t outlen)
{
    json_t *doc = body ? json_loadb(body, len, 0, NULL) : NULL;
    const char *d = json_string_value(json_object_get(doc, "detail"));

    out[0] = '\0';
    if (d && gi_text_ok(d))
        gi_strlcpy(out, d, outlen);
    json_decref(doc);
}

int netbox_lookup_parse(const char *body, size_t len, const char *serial, json_t **matches,
                        int64_t *total, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je), *results, *o;
    size_t i;
    int rc = GI_INVALID;

    *matches = NULL;
    *total = 0;
    err[0] = '\0';
    if (doc == NULL) {
        snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
        return GI_INVALID;
    }
    results = json_object_get(doc, "results");
    if (!json_is_array(results)) {
        snprintf(err, errlen, "the answer has no results list");
        goto cleanup;
    }
    json_array_foreach(results, i, o) {
        const char *sn = json_string_value(json_object_get(o, "serial"));
        const json_t *id = json_object_get(o, "id");
        if (!json_is_integer(id) || json_integer_value(id) < 1) {
            snprintf(err, errlen, "result %zu has no id", i);
            goto cleanup;
        }
        if (!sn || !serial || strcasecmp(sn, serial) != 0) {
            snprintf(err, errlen,
                     "the answer lists devices of other serials (not filtered by serial)");
            goto cleanup;
        }
    }
    if (!(*matches = json_deep_copy(results))) {
        rc = GI_INTERNAL;
        goto cleanup;
    }
    *total = (int64_t)json_array_size(results);
    if (json_is_integer(json_object_get(doc, "count")) &&
        json_integer_value(json_object_get(doc, "count")) > *total)
        *total = json_integer_value(json_object_get(doc, "count"));
    rc = GI_OK;
cleanup:
    json_decref(doc);
    return rc;
}
