/* Pulling NetBox: devices, then modules and inventory items (GPUs and
 * parts in those devices), each list paged by its `next` URL (followed
 * only on the configured host) with limit=, into assets under the source
 * "netbox:<source id>". The token is sent as "Authorization: Token <key>";
 * it needs only view rights on dcim devices, modules and inventory items.
 * With a site or role filter, only the modules and items of the devices
 * that filter keeps are taken. */
#include "collect/pull.h"
#include "collect/pull_assets.h"
#include "core/status.h"
#include "core/util.h"
#include "parse/netbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads every page of one list into records. */
static int list_all(const struct assetpull *p, const char *base, const char *path,
                    const char *filters, enum netbox_list list, json_t *records, json_t *warnings,
                    char *err, size_t errlen)
{
    int64_t limit = json_is_integer(json_object_get(p->cfg, "page_size"))
                        ? json_integer_value(json_object_get(p->cfg, "page_size"))
                        : 100;
    char url[NETBOX_URL_MAX + 64], next[NETBOX_URL_MAX], perr[NETBOX_ERR_LEN];
    int w = snprintf(url, sizeof url, "%s%s%s?limit=%lld%s", base,
                     base[strlen(base) - 1] == '/' ? "" : "/", path, (long long)limit, filters);

    if (w < 0 || (size_t)w >= sizeof url) {
        snprintf(err, errlen, "the NetBox URL is too long");
        return -1;
    }
    for (int page = 0; page < ASSETPULL_MAX_PAGES; page++) {
        char *body = NULL;
        size_t len;
        int64_t count;
        int rc;

        if (assetpull_get(p, url, &body, &len, err, errlen) != 0)
            return -1;
        rc = netbox_parse_page(body, len, list, records, warnings, next, sizeof next, &count, perr,
                               sizeof perr);
        free(body);
        if (rc != GI_OK) {
            snprintf(err, errlen, "NetBox %s: %s", path,
                     rc == GI_INVALID ? perr : gi_status_name(rc));
            return -1;
        }
        if (next[0] == '\0')
            return 0;
        if (!assetpull_same_origin(base, next)) {
            snprintf(err, errlen,
                     "NetBox %s: the next page is on another host (%.200s); set config.url to "
                     "the address NetBox calls itself",
                     path, next);
            return -1;
        }
        gi_strlcpy(url, next, sizeof url);
    }
    snprintf(err, errlen, "NetBox %s: more than %d pages", path, ASSETPULL_MAX_PAGES);
    return -1;
}

/* Keeps only the records whose parent is one of the devices. */
static json_t *children_of(json_t *records, const json_t *devices)
{
    json_t *keys = json_object(), *out = json_array(), *rec;
    size_t i;

    json_array_foreach(devices, i, rec) {
        const char *k = json_string_value(json_object_get(rec, "source_key"));
        if (k)
            json_object_set_new(keys, k, json_true());
    }
    json_array_foreach(records, i, rec) {
        const char *pk = json_string_value(json_object_get(rec, "parent_source_key"));
        if (pk && json_object_get(keys, pk))
            json_array_append(out, rec);
    }
    json_decref(keys);
    return out;
}

int pull_run_netbox(struct store *st, int64_t source_id, const json_t *cfg, const char *cluster,
                    struct pull_result *res)
{
    const char *base = json_string_value(json_object_get(cfg, "url"));
    const char *token = json_string_value(json_object_get(cfg, "token"));
    const char *site = json_string_value(json_object_get(cfg, "site"));
    const char *role = json_string_value(json_object_get(cfg, "role"));
    const char *drole = json_string_value(json_object_get(cfg, "device_role"));
    json_t *devices = json_array(), *parts = json_array(), *warnings = json_array(), *kept = NULL;
    char auth[4200], filters[1024] = "", source[48];
    struct assetpull p = {.cfg = cfg, .system = "NetBox", .auth = NULL};
    bool filtered = (site && *site) || (role && *role) || (drole && *drole);
    int rc = -1;

    (void)cluster;
    if (token && *token) {
        snprintf(auth, sizeof auth, "Token %s", token);
        p.auth = auth;
    }
    if (!assetpull_param(filters, sizeof filters, "site", site) ||
        !assetpull_param(filters, sizeof filters, "role", role) ||
        !assetpull_param(filters, sizeof filters, "device_role", drole)) {
        snprintf(res->error, sizeof res->error, "the filters are too long");
        goto cleanup;
    }
    if (list_all(&p, base, "api/dcim/devices/", filters, NETBOX_DEVICES, devices, warnings,
                 res->error, sizeof res->error) != 0 ||
        list_all(&p, base, "api/dcim/modules/", "", NETBOX_MODULES, parts, warnings, res->error,
                 sizeof res->error) != 0 ||
        list_all(&p, base, "api/dcim/inventory-items/", "", NETBOX_ITEMS, parts, warnings,
                 res->error, sizeof res->error) != 0)
        goto cleanup;
    kept = filtered ? children_of(parts, devices) : json_incref(parts);
    json_array_extend(devices, kept);
    snprintf(source, sizeof source, "netbox:%lld", (long long)source_id);
    rc = assetpull_store(st, source_id, source, devices, warnings, res);
cleanup:
    json_decref(devices);
    json_decref(parts);
    json_decref(kept);
    json_decref(warnings);
    return rc;
}
