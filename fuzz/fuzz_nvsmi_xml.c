/* libFuzzer target: nvidia-smi -q -x XML. */
#include <stddef.h>
#include <stdint.h>

#include "core/observation.h"
#include "parse/nvsmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gi_obs_set s = {0};
    char err[NVSMI_ERR_LEN];

    nvsmi_parse_xml((const char *)data, size, &s, err, sizeof err);
    gi_obs_free(&s);
    return 0;
}
