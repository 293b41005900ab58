/* Azure Resource Manager answers into cloud instance records; see
 * azure.h. */
#include "parse/azure.h"
#include "core/status.h"
#include "core/util.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* GPU sizes: the model each GPU is, its memory, the count, and whether
 * the size gets only a share of one GPU (a vGPU profile). */
static const struct {
    const char *size, *model;
    int64_t mem_mib;
    int count;
    int shared;
} sizes[] = {
    {"Standard_NC24ads_A100_v4", "NVIDIA A100 80GB PCIe", 81920, 1, 0},
    {"Standard_NC48ads_A100_v4", "NVIDIA A100 80GB PCIe", 81920, 2, 0},
    {"Standard_NC96ads_A100_v4", "NVIDIA A100 80GB PCIe", 81920, 4, 0},
    {"Standard_ND96asr_v4", "NVIDIA A100-SXM4-40GB", 40960, 8, 0},
    {"Standard_ND96amsr_A100_v4", "NVIDIA A100-SXM4-80GB", 81920, 8, 0},
    {"Standard_NC40ads_H100_v5", "NVIDIA H100 NVL", 96256, 1, 0},
    {"Standard_NC80adis_H100_v5", "NVIDIA H100 NVL", 96256, 2, 0},
    {"Standard_ND96isr_H100_v5", "NVIDIA H100 80GB HBM3", 81920, 8, 0},
    {"Standard_ND96isr_MI300X_v5", "AMD Instinct MI300X", 196608, 8, 0},
    {"Standard_NC4as_T4_v3", "Tesla T4", 16384, 1, 0},
    {"Standard_NC8as_T4_v3", "Tesla T4", 16384, 1, 0},
    {"Standard_NC16as_T4_v3", "Tesla T4", 16384, 1, 0},
    {"Standard_NC64as_T4_v3", "Tesla T4", 16384, 4, 0},
    {"Standard_NV6ads_A10_v5", "NVIDIA A10-4Q", 4096, 1, 1},
    {"Standard_NV12ads_A10_v5", "NVIDIA A10-8Q", 8192, 1, 1},
    {"Standard_NV18ads_A10_v5", "NVIDIA A10-12Q", 12288, 1, 1},
    {"Standard_NV36ads_A10_v5", "NVIDIA A10", 24576, 1, 0},
    {"Standard_NV36adms_A10_v5", "NVIDIA A10", 24576, 1, 0},
    {"Standard_NV72ads_A10_v5", "NVIDIA A10", 24576, 2, 0},
};

int azure_size_gpus(const char *size, char *model, size_t mlen, int64_t *mem_mib, int *shared)
{
    model[0] = '\0';
    *mem_mib = -1;
    *shared = 0;
    for (size_t i = 0; size && i < sizeof sizes / sizeof *sizes; i++)
        if (strcasecmp(sizes[i].size, size) == 0) {
            gi_strlcpy(model, sizes[i].model, mlen);
            *mem_mib = sizes[i].mem_mib;
            *shared = sizes[i].shared;
            return sizes[i].count;
        }
    return -1;
}

static void note(struct azure_page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Counts a value left absent; the first one is kept as the example. */
static void note(struct azure_page *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cloud_vnote(&p->warnings, p->warning, sizeof p->warning, fmt, ap);
    va_end(ap);
}

static const char *text(const json_t *obj, const char *key, struct azure_page *p, const char *who)
{
    return cloud_text(obj, key, &p->warnings, p->warning, sizeof p->warning, "VM", who);
}

static int set_tags(struct cloud_instance *ci, const json_t *tags, struct azure_page *p)
{
    return cloud_tags_set(ci, tags, "VM", "tags", "tag", &p->warnings, p->warning,
                          sizeof p->warning);
}

/* The power state from the instance view's statuses. */
static void power_state(struct cloud_instance *ci, const json_t *view, struct azure_page *p)
{
    static const struct {
        const char *word;
        enum cloud_state st;
    } map[] = {
        {"starting", CLOUD_PENDING},  {"running", CLOUD_RUNNING},
        {"stopping", CLOUD_STOPPING}, {"deallocating", CLOUD_STOPPING},
        {"stopped", CLOUD_STOPPED},   {"deallocated", CLOUD_STOPPED},
    };
    const json_t *list = json_object_get(view, "statuses");
    size_t i;
    json_t *s;

    if (list && !json_is_array(list)) {
        note(p, "VM %.60s: %.40s is not a list", ci->name, "instanceView.statuses");
        return;
    }
    json_array_foreach(list, i, s) {
        const char *code = json_string_value(json_object_get(s, "code"));
        if (code == NULL || strncasecmp(code, "PowerState/", 11) != 0 || !gi_text_ok(code))
            continue;
        cloud_copy(ci->state_raw, sizeof ci->state_raw, code + 11);
        for (size_t k = 0; k < sizeof map / sizeof *map; k++)
            if (strcasecmp(map[k].word, code + 11) == 0)
                ci->state = map[k].st;
        return;
    }
}

static void gpus_of(struct cloud_instance *ci, const struct azure_skus *skus)
{
    int shared = 0, table, listed;

    table = azure_size_gpus(ci->machine_type, ci->gpu_model, sizeof ci->gpu_model,
                            &ci->gpu_memory_mib, &shared);
    listed = skus ? azure_skus_gpus(skus, ci->machine_type) : -1;
    /* A shared GPU is one virtual GPU, whatever the SKU count says. */
    ci->gpu_count = shared ? table : listed >= 0 ? listed : table;
    if (ci->gpu_count == 0) {
        ci->gpu_model[0] = '\0';
        ci->gpu_memory_mib = -1;
    }
}

/* A tags object with at least one entry, else NULL. */
static const json_t *some_tags(const json_t *tags)
{
    return json_is_object(tags) && json_object_size(tags) > 0 ? tags : NULL;
}

/* One VM, or (set not NULL) one member of a Uniform scale set: the host
 * name is osProfile.computerName when given, the size hardwareProfile's
 * or else the member's sku name, and a member without tags has the scale
 * set's. */
static int one(struct cloud_instance *ci, const json_t *vm, const char *subscription,
               const struct azure_skus *skus, const struct azure_scale_set *set,
               struct azure_page *p, bool *skip)
{
    const json_t *props = json_object_get(vm, "properties");
    const json_t *zones = json_object_get(vm, "zones");
    const json_t *tags = json_object_get(vm, "tags");
    const char *s;
    int64_t t;

    memset(ci, 0, sizeof *ci);
    ci->gpu_count = -1;
    ci->gpu_memory_mib = -1;
    *skip = false;
    cloud_copy(ci->provider, sizeof ci->provider, "azure");
    cloud_copy(ci->name, sizeof ci->name, text(vm, "name", p, "?"));
    if (props && !json_is_object(props)) {
        note(p, "VM %.60s: %.40s is not an object", ci->name, "properties");
        props = NULL;
    }
    s = text(json_object_get(props, "osProfile"), "computerName", p, ci->name);
    if (s && strlen(s) < sizeof ci->name)
        cloud_copy(ci->name, sizeof ci->name, s);
    cloud_copy(ci->instance_id, sizeof ci->instance_id, text(props, "vmId", p, ci->name));
    if (ci->instance_id[0] == '\0')
        cloud_copy(ci->instance_id, sizeof ci->instance_id, ci->name);
    if (ci->instance_id[0] == '\0') {
        note(p, "a VM has neither %.40s nor %.40s", "vmId", "name");
        *skip = true;
        return GI_OK;
    }
    cloud_copy(ci->account, sizeof ci->account, subscription);
    cloud_copy(ci->region, sizeof ci->region, text(vm, "location", p, ci->name));
    if (json_is_array(zones))
        cloud_copy(ci->zone, sizeof ci->zone, json_string_value(json_array_get(zones, 0)));
    cloud_copy(ci->machine_type, sizeof ci->machine_type,
               text(json_object_get(props, "hardwareProfile"), "vmSize", p, ci->name));
    if (set && ci->machine_type[0] == '\0')
        cloud_copy(ci->machine_type, sizeof ci->machine_type,
                   text(json_object_get(vm, "sku"), "name", p, ci->name));
    s = text(props, "timeCreated", p, ci->name);
    if (s && gi_time_parse(s, &t) == GI_OK)
        ci->launch_time = t;
    else if (s)
        note(p, "VM %.60s: %.40s is not a time", ci->name, "timeCreated");
    power_state(ci, json_object_get(props, "instanceView"), p);
    if (ci->machine_type[0])
        gpus_of(ci, skus);
    if (set && !some_tags(tags) && set->tags)
        tags = set->tags;
    return set_tags(ci, tags, p);
}

/* Copies a nextLink into next; false when it is there but does not fit. */
static bool next_link(const json_t *root, char *next, size_t nextlen)
{
    const json_t *v = json_object_get(root, "nextLink");

    next[0] = '\0';
    if (!json_is_string(v) || json_string_length(v) == 0)
        return true;
    return gi_strlcpy(next, json_string_value(v), nextlen) && gi_text_ok(next);
}

static json_t *load_value(const char *body, size_t len, json_t **value, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);

    *value = NULL;
    if (root == NULL) {
        snprintf(err, errlen, "the answer is not JSON (line %d: %s)", je.line, je.text);
        return NULL;
    }
    *value = json_object_get(root, "value");
    if (!json_is_object(root) || !json_is_array(*value)) {
        char msg[200];
        azure_error_message(body, len, msg, sizeof msg);
        if (msg[0])
            snprintf(err, errlen, "the answer is an error: %s", msg);
        else
            snprintf(err, errlen, "the answer has no value list");
        json_decref(root);
        return NULL;
    }
    return root;
}

/* A VM list page or (set not NULL) a scale set's member list page. */
static int parse_vms(const char *body, size_t len, const char *subscription,
                     const struct azure_skus *skus, const struct azure_scale_set *set,
                     struct azure_page *p, char *err, size_t errlen)
{
    json_t *value, *root = load_value(body, len, &value, err, errlen), *vm;
    size_t i;
    int rc = GI_OK;

    memset(p, 0, sizeof *p);
    if (root == NULL)
        return GI_INVALID;
    if (!next_link(root, p->next, sizeof p->next)) {
        snprintf(err, errlen, "nextLink is not a URL of at most %d bytes", AZURE_URL_MAX - 1);
        rc = GI_INVALID;
        goto cleanup;
    }
    p->items = calloc(json_array_size(value) + 1, sizeof *p->items);
    if (p->items == NULL) {
        rc = GI_INTERNAL;
        goto cleanup;
    }
    json_array_foreach(value, i, vm) {
        bool skip;
        if (!json_is_object(vm)) {
            note(p, "a %.40s entry is not an %.40s", "value", "object");
            continue;
        }
        rc = one(&p->items[p->n], vm, subscription, skus, set, p, &skip);
        if (rc != GI_OK || !skip)
            p->n++; /* a half-filled record is still freed */
        if (rc != GI_OK)
            break;
    }
cleanup:
    if (rc != GI_OK) {
        if (rc == GI_INTERNAL)
            snprintf(err, errlen, "out of memory");
        azure_page_free(p);
    }
    json_decref(root);
    return rc;
}

int azure_parse_vms(const char *body, size_t len, const char *subscription,
                    const struct azure_skus *skus, struct azure_page *p, char *err, size_t errlen)
{
    return parse_vms(body, len, subscription, skus, NULL, p, err, errlen);
}

int azure_parse_vmss_vms(const char *body, size_t len, const char *subscription,
                         const struct azure_skus *skus, const struct azure_scale_set *set,
                         struct azure_page *p, char *err, size_t errlen)
{
    return parse_vms(body, len, subscription, skus, set, p, err, errlen);
}

/* True for a resource id the pull may put in a URL path: an ARM id of a
 * subscription ("/subscriptions/..."), one line, no query, fragment or
 * dot segment. */
static bool resource_id_ok(const char *id)
{
    const char *seg;

    if (strncasecmp(id, "/subscriptions/", 15) != 0 || !gi_text_ok(id) || strpbrk(id, "?#\\"))
        return false;
    for (seg = id; seg; seg = strchr(seg + 1, '/'))
        if (strncmp(seg, "/./", 3) == 0 || strcmp(seg, "/.") == 0 || strncmp(seg, "/../", 4) == 0 ||
            strcmp(seg, "/..") == 0)
            return false;
    return true;
}

int azure_parse_scale_sets(const char *body, size_t len, struct azure_scale_sets *s, char *next,
                           size_t nextlen, char *err, size_t errlen)
{
    json_t *value, *root = load_value(body, len, &value, err, errlen), *set;
    size_t i;
    int rc = GI_OK;

    next[0] = '\0';
    if (root == NULL)
        return GI_INVALID;
    if (!next_link(root, next, nextlen)) {
        snprintf(err, errlen, "nextLink is not a URL of at most %zu bytes", nextlen - 1);
        rc = GI_INVALID;
        goto cleanup;
    }
    json_array_foreach(value, i, set) {
        const char *id = json_string_value(json_object_get(set, "id"));
        const char *name = json_string_value(json_object_get(set, "name"));
        const char *mode = json_string_value(
            json_object_get(json_object_get(set, "properties"), "orchestrationMode"));
        const json_t *tags = json_object_get(set, "tags");
        struct azure_scale_set *v;
        if (!json_is_object(set))
            continue;
        /* Without a usable id the members cannot be read: the listing
         * would be incomplete. */
        if (id == NULL || strlen(id) >= sizeof s->v->id || !resource_id_ok(id)) {
            snprintf(err, errlen, "scale set %.100s: id is not a resource id of at most %zu bytes",
                     name && gi_text_ok(name) ? name : "(no name)", sizeof s->v->id - 1);
            rc = GI_INVALID;
            goto cleanup;
        }
        if (s->n == s->cap) {
            size_t ncap = s->cap ? s->cap * 2 : 16;
            struct azure_scale_set *nv = realloc(s->v, ncap * sizeof *nv);
            if (nv == NULL) {
                rc = GI_INTERNAL;
                snprintf(err, errlen, "out of memory");
                goto cleanup;
            }
            s->v = nv;
            s->cap = ncap;
        }
        v = &s->v[s->n++];
        memset(v, 0, sizeof *v);
        gi_strlcpy(v->id, id, sizeof v->id);
        /* The name is the id's last segment when it is absent or odd. */
        if (name && *name && gi_text_ok(name) && strlen(name) < sizeof v->name)
            gi_strlcpy(v->name, name, sizeof v->name);
        else
            gi_strlcpy(v->name, strrchr(id, '/') + 1, sizeof v->name);
        v->flexible = mode && strcasecmp(mode, "Flexible") == 0;
        if (some_tags(tags))
            v->tags = json_incref((json_t *)tags);
    }
cleanup:
    json_decref(root);
    return rc;
}

void azure_scale_sets_free(struct azure_scale_sets *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        json_decref(s->v[i].tags);
    free(s->v);
    memset(s, 0, sizeof *s);
}

void azure_page_free(struct azure_page *p)
{
    if (p == NULL)
        return;
    cloud_instances_clear(p->items, p->n);
    free(p->items);
    p->items = NULL;
    p->n = 0;
}

/* The "GPUs" capability of a SKU: its count, 0 when absent, -1 when it
 * is not a count. */
static int sku_gpus(const json_t *sku)
{
    const json_t *caps = json_object_get(sku, "capabilities"), *c;
    size_t i;
    int64_t v;

    json_array_foreach(caps, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *val = json_string_value(json_object_get(c, "value"));
        if (name == NULL || strcmp(name, "GPUs") != 0)
            continue;
        return val && gi_parse_int64(val, 0, 1024, &v) == GI_OK ? (int)v : -1;
    }
    return 0;
}

int azure_parse_skus(const char *body, size_t len, struct azure_skus *s, char *next, size_t nextlen,
                     char *err, size_t errlen)
{
    json_t *value, *root = load_value(body, len, &value, err, errlen), *sku;
    size_t i;
    int rc = GI_OK;

    if (next)
        next[0] = '\0';
    if (root == NULL)
        return GI_INVALID;
    if (next && !next_link(root, next, nextlen)) {
        snprintf(err, errlen, "nextLink is not a URL of at most %zu bytes", nextlen - 1);
        rc = GI_INVALID;
        goto cleanup;
    }
    json_array_foreach(value, i, sku) {
        const char *type = json_string_value(json_object_get(sku, "resourceType"));
        const char *name = json_string_value(json_object_get(sku, "name"));
        int gpus;
        if (type == NULL || strcmp(type, "virtualMachines") != 0 || name == NULL ||
            strlen(name) >= sizeof s->v->name || !gi_text_ok(name))
            continue;
        gpus = sku_gpus(sku);
        if (gpus < 0 || azure_skus_gpus(s, name) >= 0)
            continue; /* every location lists the size again */
        if (s->n == s->cap) {
            size_t ncap = s->cap ? s->cap * 2 : 64;
            struct azure_sku *nv = realloc(s->v, ncap * sizeof *nv);
            if (nv == NULL) {
                rc = GI_INTERNAL;
                snprintf(err, errlen, "out of memory");
                goto cleanup;
            }
            s->v = nv;
            s->cap = ncap;
        }
        gi_strlcpy(s->v[s->n].name, name, sizeof s->v[s->n].name);
        s->v[s->n++].gpus = gpus;
    }
cleanup:
    json_decref(root);
    return rc;
}

int azure_skus_gpus(const struct azure_skus *s, const char *size)
{
    for (size_t i = 0; s && size && i < s->n; i++)
        if (strcasecmp(s->v[i].name, size) == 0)
            return s->v[i].gpus;
    return -1;
}

void azure_skus_free(struct azure_skus *s)
{
    if (s == NULL)
        return;
    free(s->v);
    memset(s, 0, sizeof *s);
}

void azure_error_message(const char *body, size_t len, char *out, size_t outlen)
{
    json_t *root = json_loadb(body, len, 0, NULL), *e;
    const char *code = NULL, *msg = NULL;

    out[0] = '\0';
    if (!json_is_object(root))
        goto cleanup;
    e = json_object_get(root, "error");
    if (json_is_object(e)) {
        code = json_string_value(json_object_get(e, "code"));
        msg = json_string_value(json_object_get(e, "message"));
    } else if (json_is_string(e)) {
        code = json_string_value(e);
        msg = json_string_value(json_object_get(root, "error_description"));
    }
    if (code && !gi_text_ok(code))
        code = NULL;
    if (msg && !gi_text_ok(msg))
        msg = NULL;
    if (code || msg)
        snprintf(out, outlen, "%s%s%s", code ? code : "", code && msg ? ": " : "", msg ? msg : "");
cleanup:
    json_decref(root);
}
