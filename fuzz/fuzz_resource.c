/* Fuzz target for resource validation (src/core/kinds.c): any JSON body,
 * read as an API body and as a CSV row, is accepted with an attrs object
 * or refused with a named reason, and never leaks. */
#include "core/kinds.h"
#include "core/status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *in;

    if (size > 65536)
        return 0;
    in = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    if (in == NULL)
        return 0;
    for (int text = 0; text < 2; text++) {
        struct gi_resource_in out;
        struct gi_verr err;
        int rc;

        memset(&err, 0x55, sizeof err);
        rc = gi_resource_check(in, text != 0, &out, &err);
        if (rc == GI_OK) {
            if (!json_is_object(out.attrs) || out.name == NULL || *out.name == '\0' ||
                out.kind == NULL || gi_kind_find(out.kind) == NULL || out.state == NULL ||
                out.datacenter_id < 1 || out.gpu_count < 0 || out.gpu_count > 1024)
                abort();
            json_decref(out.attrs);
        } else {
            if (rc != GI_INVALID || out.attrs != NULL ||
                memchr(err.field, '\0', sizeof err.field) == NULL ||
                memchr(err.message, '\0', sizeof err.message) == NULL || err.message[0] == '\0')
                abort();
        }
    }
    json_decref(in);
    return 0;
}
