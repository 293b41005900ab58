/* Resource kinds and attribute validation; see kinds.h. */
#include "core/kinds.h"
#include "core/model.h"
#include "core/status.h"
#include "core/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const storage_types[] = {"block", "file", "object", NULL};
static const char *const ib_generations[] = {"QDR", "FDR",    "EDR", "HDR", "HDR100",
                                             "NDR", "NDR200", "XDR", NULL};
static const char *const ib_devices[] = {"switch", "hca", "gateway", "router", "fabric", NULL};

#define STR(n, len, lbl)                                                                           \
    {                                                                                              \
        n, GI_F_STRING, 0, 0, len, NULL, lbl                                                       \
    }
#define INT(n, lo, hi, lbl)                                                                        \
    {                                                                                              \
        n, GI_F_INT, lo, hi, 0, NULL, lbl                                                          \
    }
#define NUM(n, lo, hi, lbl)                                                                        \
    {                                                                                              \
        n, GI_F_NUMBER, lo, hi, 0, NULL, lbl                                                       \
    }
#define ENUM(n, ch, lbl)                                                                           \
    {                                                                                              \
        n, GI_F_ENUM, 0, 0, 32, ch, lbl                                                            \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, 0, 0, 0, 0, NULL, NULL                                                               \
    }

static const struct gi_field server_fields[] = {STR("hostname", 253, "Hostname"),
                                                STR("serial", 64, "Serial"),
                                                STR("machine_id", 64, "Machine ID"),
                                                STR("vendor", 64, "Vendor"),
                                                STR("model", 128, "Model"),
                                                STR("rack", 32, "Rack"),
                                                STR("row", 32, "Row"),
                                                INT("position", 0, 100, "Rack unit"),
                                                STR("cpu", 128, "CPU"),
                                                INT("cpu_cores", 0, 4096, "CPU cores"),
                                                INT("memory_gb", 0, 65536, "Memory (GB)"),
                                                STR("asset_tag", 64, "Asset tag"),
                                                END};
static const struct gi_field vm_fields[] = {INT("host_id", 1, 9e15, "Host server id"),
                                            STR("hostname", 253, "Hostname"),
                                            INT("vcpu", 0, 4096, "vCPU"),
                                            INT("memory_gb", 0, 65536, "Memory (GB)"),
                                            STR("image", 128, "Image"),
                                            END};
static const struct gi_field storage_fields[] = {ENUM("storage_type", storage_types, "Type"),
                                                 NUM("capacity_tb", 0, 1e6, "Capacity (TB)"),
                                                 STR("protocol", 32, "Protocol"),
                                                 STR("vendor", 64, "Vendor"),
                                                 STR("model", 128, "Model"),
                                                 STR("serial", 64, "Serial"),
                                                 STR("rack", 32, "Rack"),
                                                 END};
static const struct gi_field switch_fields[] = {STR("vendor", 64, "Vendor"),
                                                STR("model", 128, "Model"),
                                                INT("ports", 0, 4096, "Ports"),
                                                INT("speed_gbps", 0, 1600, "Port speed (Gb/s)"),
                                                STR("mgmt_address", 253, "Management address"),
                                                STR("serial", 64, "Serial"),
                                                STR("rack", 32, "Rack"),
                                                END};
static const struct gi_field ib_fields[] = {STR("fabric", 64, "Fabric"),
                                            ENUM("device_type", ib_devices, "Device type"),
                                            ENUM("generation", ib_generations, "Generation"),
                                            INT("ports", 0, 4096, "Ports"),
                                            STR("vendor", 64, "Vendor"),
                                            STR("model", 128, "Model"),
                                            STR("serial", 64, "Serial"),
                                            STR("rack", 32, "Rack"),
                                            END};

const struct gi_kind gi_kinds[] = {
    {"server", "servers", "Servers", server_fields},
    {"vm", "vms", "Virtual machines", vm_fields},
    {"storage", "storages", "Storage", storage_fields},
    {"switch", "switches", "Network switches", switch_fields},
    {"infiniband", "infiniband", "InfiniBand", ib_fields},
    {NULL, NULL, NULL, NULL},
};

const struct gi_kind *gi_kind_find(const char *name)
{
    for (const struct gi_kind *k = gi_kinds; name && k->name; k++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

/* Fields every kind has, validated by gi_resource_check itself. */
static const char *const common_fields[] = {
    "datacenter_id", "kind",       "name",       "state",      "tenant",
    "project",       "gpu_model",  "gpu_count",  "metadata",   "id",
    "version",       "datacenter", "created_at", "updated_at", NULL};

static int fail(struct gi_verr *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct gi_verr *err, const char *field, const char *fmt, ...)
{
    va_list ap;

    gi_strlcpy(err->field, field, sizeof err->field);
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return GI_INVALID;
}

/* Checks metadata.tags, the resource's cloud-style tags that cloud_tag
 * ownership rules match: up to 64 keys of at most 128 bytes, each a text
 * value of at most 256 bytes (the limits of AWS tags). */
static int check_tags(const json_t *tags, struct gi_verr *err)
{
    const char *key;
    const json_t *v;

    if (json_object_size(tags) > 64)
        return fail(err, "metadata", "metadata.tags has more than 64 keys");
    json_object_foreach((json_t *)tags, key, v) {
        if (!*key || strlen(key) > 128 || !gi_text_ok(key))
            return fail(err, "metadata", "a metadata.tags key is empty, too long or not text");
        if (!json_is_string(v) || json_string_length(v) > 256 || !gi_text_ok(json_string_value(v)))
            return fail(err, "metadata",
                        "metadata.tags.%s must be a string of at most 256 bytes of text", key);
    }
    return GI_OK;
}

/* Checks a string value: type, UTF-8, length. NULL/absent is allowed. */
static int check_str(const json_t *v, const char *field, size_t maxlen, bool required,
                     const char **out, struct gi_verr *err)
{
    const char *s;

    *out = NULL;
    if (v == NULL || json_is_null(v)) {
        if (required)
            return fail(err, field, "%s is required", field);
        return GI_OK;
    }
    if (!json_is_string(v))
        return fail(err, field, "%s must be a string", field);
    s = json_string_value(v);
    if (required && *s == '\0')
        return fail(err, field, "%s must not be empty", field);
    if (strlen(s) > maxlen)
        return fail(err, field, "%s is longer than %zu bytes", field, maxlen);
    if (!gi_text_ok(s))
        return fail(err, field, "%s contains control characters or invalid UTF-8", field);
    *out = *s ? s : NULL;
    return GI_OK;
}

/* Checks an integer, converting from text when asked. */
static int check_int(const json_t *v, const char *field, double lo, double hi, bool from_text,
                     int64_t *out, struct gi_verr *err)
{
    int64_t n;

    if (json_is_integer(v)) {
        n = json_integer_value(v);
    } else if (from_text && json_is_string(v)) {
        if (gi_parse_int64(json_string_value(v), INT64_MIN, INT64_MAX, &n) != GI_OK)
            return fail(err, field, "%s must be a whole number", field);
    } else {
        return fail(err, field, "%s must be a whole number", field);
    }
    if ((double)n < lo || (double)n > hi)
        return fail(err, field, "%s must be between %.0f and %.0f", field, lo, hi);
    *out = n;
    return GI_OK;
}

/* Validates one kind-specific attribute into attrs. */
static int check_field(const struct gi_field *f, const json_t *v, bool from_text, json_t *attrs,
                       struct gi_verr *err)
{
    const char *s;
    int64_t n;
    double d;
    int rc;

    if (json_is_null(v) || (from_text && json_is_string(v) && *json_string_value(v) == '\0'))
        return GI_OK;
    switch (f->type) {
    case GI_F_STRING:
        if ((rc = check_str(v, f->name, f->maxlen, false, &s, err)) != GI_OK)
            return rc;
        if (s)
            json_object_set_new(attrs, f->name, json_string(s));
        return GI_OK;
    case GI_F_ENUM:
        if ((rc = check_str(v, f->name, f->maxlen, false, &s, err)) != GI_OK)
            return rc;
        for (const char *const *c = f->choices; s && *c; c++) {
            if (strcmp(*c, s) == 0) {
                json_object_set_new(attrs, f->name, json_string(s));
                return GI_OK;
            }
        }
        return s ? fail(err, f->name, "%s must be one of the listed values", f->name) : GI_OK;
    case GI_F_INT:
        if ((rc = check_int(v, f->name, f->min, f->max, from_text, &n, err)) != GI_OK)
            return rc;
        json_object_set_new(attrs, f->name, json_integer(n));
        return GI_OK;
    case GI_F_NUMBER:
        if (json_is_number(v))
            d = json_number_value(v);
        else if (!(from_text && json_is_string(v) &&
                   gi_parse_double(json_string_value(v), -1e300, 1e300, &d) == GI_OK))
            return fail(err, f->name, "%s must be a number", f->name);
        if (!isfinite(d) || d < f->min || d > f->max)
            return fail(err, f->name, "%s must be between %g and %g", f->name, f->min, f->max);
        json_object_set_new(attrs, f->name, json_real(d));
        return GI_OK;
    case GI_F_BOOL:
        if (!json_is_boolean(v))
            return fail(err, f->name, "%s must be true or false", f->name);
        json_object_set(attrs, f->name, (json_t *)v);
        return GI_OK;
    }
    return GI_OK;
}

static const struct gi_field *kind_field(const struct gi_kind *k, const char *name)
{
    for (const struct gi_field *f = k->fields; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

static bool is_common(const char *name)
{
    for (const char *const *c = common_fields; *c; c++)
        if (strcmp(*c, name) == 0)
            return true;
    return false;
}

int gi_resource_check(const json_t *in, bool from_text, struct gi_resource_in *out,
                      struct gi_verr *err)
{
    const struct gi_kind *k;
    const char *key, *s;
    const json_t *v, *md;
    int rc;

    memset(out, 0, sizeof *out);
    if (!json_is_object(in))
        return fail(err, "", "a resource must be a JSON object");
    v = json_object_get(in, "datacenter_id");
    if (v == NULL || json_is_null(v))
        return fail(err, "datacenter_id", "datacenter_id is required");
    if ((rc = check_int(v, "datacenter_id", 1, 9e15, from_text, &out->datacenter_id, err)))
        return rc;
    if ((rc = check_str(json_object_get(in, "kind"), "kind", 16, true, &out->kind, err)))
        return rc;
    if ((k = gi_kind_find(out->kind)) == NULL)
        return fail(err, "kind", "kind must be one of server, vm, storage, switch, infiniband");
    out->kind = k->name;
    if ((rc = check_str(json_object_get(in, "name"), "name", 128, true, &out->name, err)))
        return rc;
    if ((rc = check_str(json_object_get(in, "state"), "state", 16, false, &out->state, err)))
        return rc;
    if (out->state == NULL)
        out->state = "available";
    else if (!gi_state_valid(out->state))
        return fail(err, "state", "state must be one of " GI_STATES);
    if ((rc = check_str(json_object_get(in, "tenant"), "tenant", 128, false, &out->tenant, err)))
        return rc;
    if ((rc = check_str(json_object_get(in, "project"), "project", 128, false, &out->project, err)))
        return rc;
    if ((rc = check_str(json_object_get(in, "gpu_model"), "gpu_model", 64, false, &out->gpu_model,
                        err)))
        return rc;
    v = json_object_get(in, "gpu_count");
    if (v && !json_is_null(v) && !(from_text && json_is_string(v) && !*json_string_value(v)) &&
        (rc = check_int(v, "gpu_count", 0, 1024, from_text, &out->gpu_count, err)))
        return rc;
    if (out->gpu_count > 0 && out->gpu_model == NULL)
        return fail(err, "gpu_model", "gpu_model is required when gpu_count is above zero");
    if (strcmp(out->state, "in_use") == 0 && out->tenant == NULL)
        return fail(err, "tenant", "tenant is required for a resource in use");
    if (strcmp(out->state, "in_use") != 0 && strcmp(out->state, "reserved") != 0 &&
        (out->tenant || out->project))
        return fail(err, "tenant", "only a resource in use or reserved has a tenant or project");

    md = json_object_get(in, "metadata");
    if (md && !json_is_null(md)) {
        if (!json_is_object(md))
            return fail(err, "metadata", "metadata must be an object");
        if (json_object_size(md) > 64)
            return fail(err, "metadata", "metadata has more than 64 keys");
        json_object_foreach((json_t *)md, key, v) {
            if (strlen(key) > 64 || !gi_text_ok(key))
                return fail(err, "metadata", "metadata key is too long or not text");
            if (strcmp(key, "tags") == 0 && json_is_object(v)) {
                if ((rc = check_tags(v, err)))
                    return rc;
                continue;
            }
            if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v) && !json_is_null(v))
                return fail(err, "metadata", "metadata.%s must be a string, number or boolean",
                            key);
            if (json_is_string(v) &&
                (json_string_length(v) > 1024 || !gi_text_ok(json_string_value(v))))
                return fail(err, "metadata", "metadata.%s is too long or not text", key);
        }
        out->metadata = md;
    }

    out->attrs = json_object();
    json_object_foreach((json_t *)in, key, v) {
        const struct gi_field *f;
        if (is_common(key))
            continue;
        if ((f = kind_field(k, key)) == NULL) {
            json_decref(out->attrs);
            out->attrs = NULL;
            return fail(err, key, "%s is not an attribute of a %s", key, k->name);
        }
        if ((rc = check_field(f, v, from_text, out->attrs, err)) != GI_OK) {
            json_decref(out->attrs);
            out->attrs = NULL;
            return rc;
        }
    }
    (void)s;
    return GI_OK;
}

json_t *gi_kinds_json(void)
{
    static const char *const tnames[] = {"string", "integer", "number", "enum", "boolean"};
    json_t *arr = json_array();

    for (const struct gi_kind *k = gi_kinds; k->name; k++) {
        json_t *fields = json_array();
        for (const struct gi_field *f = k->fields; f->name; f++) {
            json_t *o = json_pack("{s:s, s:s, s:s}", "name", f->name, "type", tnames[f->type],
                                  "label", f->label);
            if (f->type == GI_F_INT || f->type == GI_F_NUMBER) {
                json_object_set_new(o, "min", json_real(f->min));
                json_object_set_new(o, "max", json_real(f->max));
            }
            if (f->type == GI_F_STRING)
                json_object_set_new(o, "maxlen", json_integer((json_int_t)f->maxlen));
            if (f->choices) {
                json_t *ch = json_array();
                for (const char *const *c = f->choices; *c; c++)
                    json_array_append_new(ch, json_string(*c));
                json_object_set_new(o, "choices", ch);
            }
            json_array_append_new(fields, o);
        }
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:o}", "kind", k->name, "counts",
                                             k->counts, "label", k->label, "fields", fields));
    }
    return arr;
}
