/* libFuzzer target: rocm-smi --json and amd-smi static/metric --json.
 * The first byte picks the parser; for the amd-smi pair the input is
 * split at the first NUL byte into static and metric halves. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/observation.h"
#include "parse/amdsmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gi_obs_set s = {0};
    char err[AMDSMI_ERR_LEN];
    const char *in, *nul;

    if (size < 1)
        return 0;
    in = (const char *)data + 1;
    size--;
    if (data[0] % 2 == 0) {
        amdsmi_parse_rocm(in, size, &s, err, sizeof err);
    } else if ((nul = memchr(in, '\0', size)) != NULL) {
        size_t a = (size_t)(nul - in);
        amdsmi_parse(in, a, nul + 1, size - a - 1, &s, err, sizeof err);
    } else {
        amdsmi_parse(in, size, NULL, 0, &s, err, sizeof err);
    }
    gi_obs_free(&s);
    return 0;
}
