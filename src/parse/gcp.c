/* GCP Compute Engine answers into cloud instance records; see gcp.h. */
#include "parse/gcp.h"
#include "core/status.h"
#include "core/util.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Accelerator type names and the GPU model they are. */
static const struct {
    const char *type, *model;
    int64_t mem_mib;
} accel[] = {
    {"nvidia-tesla-a100", "NVIDIA A100-SXM4-40GB", 40960},
    {"nvidia-a100-80gb", "NVIDIA A100-SXM4-80GB", 81920},
    {"nvidia-h100-80gb", "NVIDIA H100 80GB HBM3", 81920},
    {"nvidia-h100-mega-80gb", "NVIDIA H100 80GB HBM3", 81920},
    {"nvidia-h200-141gb", "NVIDIA H200", 144384},
    {"nvidia-b200", "NVIDIA B200", -1},
    {"nvidia-l4", "NVIDIA L4", 24576},
    {"nvidia-tesla-t4", "Tesla T4", 16384},
    {"nvidia-tesla-v100", "Tesla V100-SXM2-16GB", 16384},
    {"nvidia-tesla-p100", "Tesla P100-PCIE-16GB", 16384},
    {"nvidia-tesla-p4", "Tesla P4", 8192},
};

/* Accelerator-optimized machine types and the GPUs they come with. */
static const struct {
    const char *type, *accel;
    int count;
} machines[] = {
    {"a2-highgpu-1g", "nvidia-tesla-a100", 1},   {"a2-highgpu-2g", "nvidia-tesla-a100", 2},
    {"a2-highgpu-4g", "nvidia-tesla-a100", 4},   {"a2-highgpu-8g", "nvidia-tesla-a100", 8},
    {"a2-megagpu-16g", "nvidia-tesla-a100", 16}, {"a2-ultragpu-1g", "nvidia-a100-80gb", 1},
    {"a2-ultragpu-2g", "nvidia-a100-80gb", 2},   {"a2-ultragpu-4g", "nvidia-a100-80gb", 4},
    {"a2-ultragpu-8g", "nvidia-a100-80gb", 8},   {"a3-highgpu-1g", "nvidia-h100-80gb", 1},
    {"a3-highgpu-2g", "nvidia-h100-80gb", 2},    {"a3-highgpu-4g", "nvidia-h100-80gb", 4},
    {"a3-highgpu-8g", "nvidia-h100-80gb", 8},    {"a3-megagpu-8g", "nvidia-h100-mega-80gb", 8},
    {"a3-ultragpu-8g", "nvidia-h200-141gb", 8},  {"g2-standard-4", "nvidia-l4", 1},
    {"g2-standard-8", "nvidia-l4", 1},           {"g2-standard-12", "nvidia-l4", 1},
    {"g2-standard-16", "nvidia-l4", 1},          {"g2-standard-24", "nvidia-l4", 2},
    {"g2-standard-32", "nvidia-l4", 1},          {"g2-standard-48", "nvidia-l4", 4},
    {"g2-standard-96", "nvidia-l4", 8},
};

/* Machine families whose types carry GPUs of their own. */
static const char *const gpu_families[] = {"a2-", "a3-", "a4-", "a4x-", "g2-", "g4-", NULL};

bool gcp_accelerator_model(const char *type, char *model, size_t mlen, int64_t *mem_mib)
{
    char base[128];
    size_t n;

    model[0] = '\0';
    *mem_mib = -1;
    if (type == NULL || *type == '\0' || strstr(type, "tpu"))
        return false;
    gi_strlcpy(base, type, sizeof base);
    n = strlen(base);
    /* Virtual-workstation licences of the same silicon. */
    if (n > 4 && strcmp(base + n - 4, "-vws") == 0)
        base[n - 4] = '\0';
    for (size_t i = 0; i < sizeof accel / sizeof *accel; i++)
        if (strcasecmp(accel[i].type, base) == 0) {
            gi_strlcpy(model, accel[i].model, mlen);
            *mem_mib = accel[i].mem_mib;
            return true;
        }
    gi_strlcpy(model, type, mlen);
    return true;
}

int gcp_machine_gpus(const char *machine_type, char *model, size_t mlen, int64_t *mem_mib)
{
    model[0] = '\0';
    *mem_mib = -1;
    for (size_t i = 0; i < sizeof machines / sizeof *machines; i++)
        if (strcasecmp(machines[i].type, machine_type) == 0) {
            gcp_accelerator_model(machines[i].accel, model, mlen, mem_mib);
            return machines[i].count;
        }
    for (size_t i = 0; gpu_families[i]; i++)
        if (strncasecmp(machine_type, gpu_families[i], strlen(gpu_families[i])) == 0)
            return -1;
    return 0;
}

/* The last path segment of a URL or path ("…/zones/us-central1-a" →
 * "us-central1-a"). */
static const char *tail(const char *s)
{
    const char *slash = s ? strrchr(s, '/') : NULL;
    return slash ? slash + 1 : s;
}

static void note(struct gcp_page *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Counts a value left absent; the first one is kept as the example. */
static void note(struct gcp_page *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cloud_vnote(&p->warnings, p->warning, sizeof p->warning, fmt, ap);
    va_end(ap);
}

/* obj[key] as usable text, or NULL; a value of another type is noted. */
static const char *text(const json_t *obj, const char *key, struct gcp_page *p, const char *who)
{
    return cloud_text(obj, key, &p->warnings, p->warning, sizeof p->warning, "instance", who);
}

static int set_tags(struct cloud_instance *ci, const json_t *tags, struct gcp_page *p)
{
    return cloud_tags_set(ci, tags, "instance", "labels", "label", &p->warnings, p->warning,
                          sizeof p->warning);
}

static enum cloud_state state_of(const char *s)
{
    static const struct {
        const char *word;
        enum cloud_state st;
    } map[] = {
        {"PROVISIONING", CLOUD_PENDING},    {"STAGING", CLOUD_PENDING},
        {"RUNNING", CLOUD_RUNNING},         {"STOPPING", CLOUD_STOPPING},
        {"SUSPENDING", CLOUD_STOPPING},     {"PENDING_STOP", CLOUD_STOPPING},
        {"DEPROVISIONING", CLOUD_STOPPING}, {"STOPPED", CLOUD_STOPPED},
        {"SUSPENDED", CLOUD_STOPPED},       {"TERMINATED", CLOUD_STOPPED},
    };

    for (size_t i = 0; s && i < sizeof map / sizeof *map; i++)
        if (strcmp(map[i].word, s) == 0)
            return map[i].st;
    return CLOUD_UNKNOWN;
}

/* The GPUs of guestAccelerators: the counts summed, the first GPU type's
 * model. Returns false when the list is absent or names no GPU. */
static bool guest_gpus(struct cloud_instance *ci, const json_t *list, struct gcp_page *p)
{
    size_t i;
    json_t *a;
    bool any = false;

    if (list == NULL || json_is_null(list))
        return false;
    if (!json_is_array(list)) {
        note(p, "instance %.60s: %.40s is not a list", ci->name, "guestAccelerators");
        return false;
    }
    json_array_foreach(list, i, a) {
        const char *type = json_string_value(json_object_get(a, "acceleratorType"));
        json_t *cnt = json_object_get(a, "acceleratorCount");
        char model[128];
        int64_t mem;
        if (!gcp_accelerator_model(tail(type), model, sizeof model, &mem))
            continue;
        if (!any) {
            cloud_copy(ci->gpu_model, sizeof ci->gpu_model, model);
            ci->gpu_memory_mib = mem;
            ci->gpu_count = 0;
        } else if (strcmp(model, ci->gpu_model) != 0) {
            note(p, "instance %.60s: GPUs of more than one type; recorded as %.40s", ci->name,
                 ci->gpu_model);
        }
        any = true;
        /* An unreadable count makes the instance's count unknown. */
        if (!json_is_integer(cnt) || json_integer_value(cnt) < 0 ||
            json_integer_value(cnt) > 1024) {
            note(p, "instance %.60s: %.40s is not a count", ci->name, "acceleratorCount");
            ci->gpu_count = -1;
            return true;
        }
        if (ci->gpu_count >= 0)
            ci->gpu_count += (int)json_integer_value(cnt);
    }
    return any;
}

static void launch_time(struct cloud_instance *ci, const json_t *inst, struct gcp_page *p)
{
    const char *keys[] = {"lastStartTimestamp", "creationTimestamp"};

    for (size_t i = 0; i < 2; i++) {
        const char *s = text(inst, keys[i], p, ci->name);
        int64_t t;
        if (s == NULL)
            continue;
        if (gi_time_parse(s, &t) == GI_OK) {
            ci->launch_time = t;
            return;
        }
        note(p, "instance %.60s: %.40s is not a time", ci->name, keys[i]);
    }
}

/* One instance of the zone `scope` ("zones/us-central1-a"). Returns
 * GI_OK (the record filled, or *skip when it names nothing), or
 * GI_INTERNAL. */
static int one(struct cloud_instance *ci, const json_t *inst, const char *scope,
               const char *project, struct gcp_page *p, bool *skip)
{
    const json_t *id = json_object_get(inst, "id");
    const json_t *nics = json_object_get(inst, "networkInterfaces");
    const char *s;
    char *dash;

    memset(ci, 0, sizeof *ci);
    ci->gpu_count = -1;
    ci->gpu_memory_mib = -1;
    *skip = false;
    cloud_copy(ci->provider, sizeof ci->provider, "gcp");
    cloud_copy(ci->name, sizeof ci->name, text(inst, "name", p, "?"));
    if (json_is_string(id) && gi_text_ok(json_string_value(id)) && json_string_length(id))
        cloud_copy(ci->instance_id, sizeof ci->instance_id, json_string_value(id));
    else if (json_is_integer(id) && json_integer_value(id) >= 0)
        snprintf(ci->instance_id, sizeof ci->instance_id, "%lld",
                 (long long)json_integer_value(id));
    else if (id && !json_is_null(id))
        note(p, "instance %.60s: %.40s is not an id", ci->name, "id");
    if (ci->instance_id[0] == '\0')
        cloud_copy(ci->instance_id, sizeof ci->instance_id, ci->name);
    if (ci->instance_id[0] == '\0') {
        note(p, "an instance in %.60s has neither %.40s nor name", scope, "id");
        *skip = true;
        return GI_OK;
    }
    cloud_copy(ci->account, sizeof ci->account, project);
    s = text(inst, "zone", p, ci->name);
    cloud_copy(ci->zone, sizeof ci->zone, tail(s ? s : scope));
    if (strncmp(scope, "zones/", 6) != 0 && s == NULL)
        ci->zone[0] = '\0';
    cloud_copy(ci->region, sizeof ci->region, ci->zone);
    dash = strrchr(ci->region, '-');
    if (dash)
        *dash = '\0';
    s = text(inst, "machineType", p, ci->name);
    cloud_copy(ci->machine_type, sizeof ci->machine_type, tail(s));
    s = text(inst, "status", p, ci->name);
    cloud_copy(ci->state_raw, sizeof ci->state_raw, s);
    ci->state = state_of(s);
    launch_time(ci, inst, p);
    if (json_is_array(nics))
        cloud_copy(ci->private_ip, sizeof ci->private_ip,
                   text(json_array_get(nics, 0), "networkIP", p, ci->name));
    if (!guest_gpus(ci, json_object_get(inst, "guestAccelerators"), p)) {
        ci->gpu_count = ci->machine_type[0]
                            ? gcp_machine_gpus(ci->machine_type, ci->gpu_model,
                                               sizeof ci->gpu_model, &ci->gpu_memory_mib)
                            : -1;
    }
    return set_tags(ci, json_object_get(inst, "labels"), p);
}

void gcp_page_unreachable(struct gcp_page *p, const char *scope)
{
    if (scope == NULL || *scope == '\0' || !gi_text_ok(scope) || strlen(scope) >= GCP_SCOPE_LEN) {
        p->unreachable_more = true;
        return;
    }
    for (size_t i = 0; i < p->unreachable; i++)
        if (strcmp(p->unreachable_scopes[i], scope) == 0)
            return;
    if (p->unreachable == GCP_UNREACHABLE_MAX) {
        p->unreachable_more = true;
        return;
    }
    gi_strlcpy(p->unreachable_scopes[p->unreachable++], scope, GCP_SCOPE_LEN);
}

static int add_scope(struct gcp_page *p, const char *scope, const json_t *val, const char *project,
                     size_t *cap)
{
    const json_t *list = json_object_get(val, "instances");
    const json_t *warning = json_object_get(val, "warning");
    const char *code = json_string_value(json_object_get(warning, "code"));
    size_t i;
    json_t *inst;

    /* An empty zone says NO_RESULTS_ON_PAGE; any other warning means the
     * scope's answer is missing or partial. */
    if (warning && !json_is_null(warning) && (code == NULL || strcmp(code, "NO_RESULTS_ON_PAGE")))
        gcp_page_unreachable(p, scope);
    if (list == NULL)
        return GI_OK; /* a zone without instances answers a warning */
    if (!json_is_array(list)) {
        note(p, "scope %.60s: %.40s is not a list", scope, "instances");
        return GI_OK;
    }
    json_array_foreach(list, i, inst) {
        bool skip;
        int rc;
        if (!json_is_object(inst)) {
            note(p, "scope %.60s: an %.40s entry is not an object", scope, "instances");
            continue;
        }
        if (p->n == *cap) {
            size_t ncap = *cap ? *cap * 2 : 16;
            struct cloud_instance *nv = realloc(p->items, ncap * sizeof *nv);
            if (nv == NULL)
                return GI_INTERNAL;
            p->items = nv;
            *cap = ncap;
        }
        rc = one(&p->items[p->n], inst, scope, project, p, &skip);
        if (rc != GI_OK || !skip)
            p->n++; /* a half-filled record is still freed */
        if (rc != GI_OK)
            return rc;
    }
    return GI_OK;
}

int gcp_parse_instances(const char *body, size_t len, const char *project, struct gcp_page *p,
                        char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je), *items, *un, *val, *tok;
    const char *scope;
    size_t cap = 0, i;
    int rc = GI_OK;

    memset(p, 0, sizeof *p);
    if (root == NULL || !json_is_object(root)) {
        snprintf(err, errlen,
                 root ? "the answer is not a JSON object" : "the answer is not JSON (line %d: %s)",
                 je.line, je.text);
        json_decref(root);
        return GI_INVALID;
    }
    if (json_object_get(root, "error")) {
        char msg[200];
        gcp_error_message(body, len, msg, sizeof msg);
        snprintf(err, errlen, "the answer is an error: %s", msg[0] ? msg : "(no message)");
        rc = GI_INVALID;
        goto cleanup;
    }
    items = json_object_get(root, "items");
    if (items && !json_is_object(items) && !json_is_null(items)) {
        snprintf(err, errlen, "items is not an object keyed by zone");
        rc = GI_INVALID;
        goto cleanup;
    }
    json_object_foreach(items, scope, val) {
        if (!json_is_object(val))
            continue;
        rc = add_scope(p, scope, val, project, &cap);
        if (rc != GI_OK)
            goto cleanup;
    }
    tok = json_object_get(root, "nextPageToken");
    if (json_is_string(tok) && !gi_strlcpy(p->next, json_string_value(tok), sizeof p->next)) {
        snprintf(err, errlen, "nextPageToken is longer than %d bytes", GCP_TOKEN_MAX - 1);
        rc = GI_INVALID;
        goto cleanup;
    }
    un = json_object_get(root, "unreachables");
    if (un && !json_is_array(un) && !json_is_null(un)) {
        snprintf(err, errlen, "unreachables is not a list");
        rc = GI_INVALID;
        goto cleanup;
    }
    json_array_foreach(un, i, val)
        gcp_page_unreachable(p, json_string_value(val));
cleanup:
    if (rc != GI_OK) {
        if (rc == GI_INTERNAL)
            snprintf(err, errlen, "out of memory");
        gcp_page_free(p);
    }
    json_decref(root);
    return rc;
}

void gcp_page_free(struct gcp_page *p)
{
    if (p == NULL)
        return;
    cloud_instances_clear(p->items, p->n);
    free(p->items);
    p->items = NULL;
    p->n = 0;
}

int gcp_parse_machine_type(const char *body, size_t len, int *count, char *model, size_t mlen,
                           int64_t *mem_mib)
{
    json_t *root = json_loadb(body, len, 0, NULL), *list, *a;
    size_t i;
    int rc = GI_INVALID;

    *count = 0;
    model[0] = '\0';
    *mem_mib = -1;
    if (!json_is_object(root) || json_object_get(root, "error"))
        goto cleanup;
    list = json_object_get(root, "accelerators");
    if (list && !json_is_array(list))
        goto cleanup;
    json_array_foreach(list, i, a) {
        json_t *cnt = json_object_get(a, "guestAcceleratorCount");
        const char *type = json_string_value(json_object_get(a, "guestAcceleratorType"));
        char m[128];
        int64_t mem;
        if (!gcp_accelerator_model(tail(type), m, sizeof m, &mem))
            continue;
        if (!json_is_integer(cnt) || json_integer_value(cnt) < 0 || json_integer_value(cnt) > 1024)
            goto cleanup;
        if (*count == 0) {
            gi_strlcpy(model, m, mlen);
            *mem_mib = mem;
        }
        *count += (int)json_integer_value(cnt);
    }
    rc = GI_OK;
cleanup:
    json_decref(root);
    return rc;
}

void gcp_error_message(const char *body, size_t len, char *out, size_t outlen)
{
    json_t *root = json_loadb(body, len, 0, NULL), *e;
    const char *msg = NULL, *status = NULL;

    out[0] = '\0';
    if (!json_is_object(root))
        goto cleanup;
    e = json_object_get(root, "error");
    if (json_is_object(e)) {
        msg = json_string_value(json_object_get(e, "message"));
        status = json_string_value(json_object_get(e, "status"));
    } else if (json_is_string(e)) {
        status = json_string_value(e);
        msg = json_string_value(json_object_get(root, "error_description"));
    }
    if (msg && !gi_text_ok(msg))
        msg = NULL;
    if (status && !gi_text_ok(status))
        status = NULL;
    if (status || msg)
        snprintf(out, outlen, "%s%s%s", status ? status : "", status && msg ? ": " : "",
                 msg ? msg : "");
cleanup:
    json_decref(root);
}
