/* libFuzzer target: a Gaudi metric exporter page (Prometheus text)
 * through the habanalabs_* consumer, with and without a host override
 * (the first byte's low bit). */
#include <stddef.h>
#include <stdint.h>

#include "core/observation.h"
#include "core/status.h"
#include "parse/hlexport.h"
#include "parse/promtext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gi_obs_set s = {0};
    struct prom_error pe = {0};
    struct hlexp h;

    if (size < 1)
        return 0;
    hlexp_begin(&h, &s);
    if (data[0] & 1)
        h.hostname = "fuzz-node";
    if (prom_parse_text((const char *)data + 1, size - 1, hlexp_sample, &h, &pe) == GI_OK)
        hlexp_finish(&h);
    hlexp_free(&h);
    gi_obs_free(&s);
    return 0;
}
