/* libFuzzer target for the NetBox page parser and the lookup by serial.
 * The first byte picks the list (devices, modules, inventory items); the
 * rest is the page, also read as a lookup's answer. Checks
 * the promises of netbox.h on every result. */
#include "core/status.h"
#include "parse/netbox.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *recs, *warns, *r;
    char next[NETBOX_URL_MAX], err[NETBOX_ERR_LEN], detail[128];
    int64_t count;
    size_t i;
    int st;

    if (size == 0)
        return 0;
    recs = json_array();
    warns = json_array();
    st = netbox_parse_page((const char *)data + 1, size - 1, (enum netbox_list)(data[0] % 3), recs,
                           warns, next, sizeof next, &count, err, sizeof err);
    if (st != GI_OK && st != GI_INVALID && st != GI_INTERNAL)
        abort();
    if (st == GI_INVALID && err[0] == '\0')
        abort();
    if (memchr(next, '\0', sizeof next) == NULL)
        abort();
    json_array_foreach(recs, i, r) {
        const char *kind = json_string_value(json_object_get(r, "kind"));
        if (!json_is_object(r) || kind == NULL || json_object_get(r, "stage"))
            abort();
        if (!json_is_object(json_object_get(r, "custom")))
            abort();
    }
    {
        json_t *m = NULL;
        int64_t total;
        st = netbox_lookup_parse((const char *)data + 1, size - 1, "SER1", &m, &total, err,
                                 sizeof err);
        if (st == GI_INVALID && (err[0] == '\0' || m != NULL))
            abort();
        if (st == GI_OK && (!json_is_array(m) || total < (int64_t)json_array_size(m)))
            abort();
        json_decref(m);
    }
    netbox_error_detail((const char *)data, size, detail, sizeof detail);
    if (memchr(detail, '\0', sizeof detail) == NULL)
        abort();
    json_decref(recs);
    json_decref(warns);
    return 0;
}
