/* libFuzzer target for the GCP Compute Engine parsers. The first byte
 * picks the answer (aggregatedList page, machineTypes.get, an error); the
 * rest is the body. Checks the promises of gcp.h on every result. */
#include "core/status.h"
#include "parse/gcp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_text(const char *s, size_t cap)
{
    if (memchr(s, '\0', cap) == NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gcp_page p;
    char err[GCP_ERR_LEN], model[128], msg[160];
    const char *body = (const char *)data + 1;
    int64_t mem;
    int st, count;

    if (size == 0)
        return 0;
    switch (data[0] % 3) {
    case 0:
        st = gcp_parse_instances(body, size - 1, "fuzz", &p, err, sizeof err);
        if (st != GI_OK && st != GI_INVALID && st != GI_INTERNAL)
            abort();
        if (st != GI_OK) {
            if (err[0] == '\0' || p.n != 0 || p.items != NULL)
                abort();
            break;
        }
        check_text(p.next, sizeof p.next);
        if (p.unreachable > GCP_UNREACHABLE_MAX)
            abort();
        for (size_t i = 0; i < p.unreachable; i++) {
            check_text(p.unreachable_scopes[i], GCP_SCOPE_LEN);
            if (p.unreachable_scopes[i][0] == '\0')
                abort();
            for (size_t k = 0; k < i; k++)
                if (strcmp(p.unreachable_scopes[k], p.unreachable_scopes[i]) == 0)
                    abort(); /* each scope once */
        }
        for (size_t i = 0; i < p.n; i++) {
            const struct cloud_instance *ci = &p.items[i];
            if (ci->instance_id[0] == '\0' || strcmp(ci->provider, "gcp") != 0)
                abort();
            if (ci->gpu_count < -1 || ci->state > CLOUD_TERMINATED)
                abort();
            check_text(ci->zone, sizeof ci->zone);
            check_text(ci->gpu_model, sizeof ci->gpu_model);
            for (size_t t = 0; t < ci->ntags; t++)
                if (ci->tags[t].key == NULL || ci->tags[t].value == NULL)
                    abort();
        }
        gcp_page_free(&p);
        break;
    case 1:
        st = gcp_parse_machine_type(body, size - 1, &count, model, sizeof model, &mem);
        if ((st != GI_OK && st != GI_INVALID) || count < 0)
            abort();
        check_text(model, sizeof model);
        break;
    default:
        gcp_error_message(body, size - 1, msg, sizeof msg);
        check_text(msg, sizeof msg);
    }
    return 0;
}
