/* libFuzzer target: hl-smi's CSV query output and summary table. The
 * first byte picks the parser: 0 the CSV with its header, 1 the CSV
 * without one (columns from the agent's field list), 2 the table and 3
 * the -q log, each after a CSV (the rest split at the first NUL byte), so
 * that processes and firmware are matched to GPUs. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/observation.h"
#include "parse/hlsmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gi_obs_set s = {0};
    char err[HLSMI_ERR_LEN];
    const char *in, *nul;

    if (size < 1)
        return 0;
    in = (const char *)data + 1;
    size--;
    switch (data[0] % 4) {
    case 0:
        hlsmi_parse_query(in, size, NULL, &s, err, sizeof err);
        break;
    case 1:
        hlsmi_parse_query(in, size, HLSMI_QUERY_FIELDS, &s, err, sizeof err);
        break;
    default:
        if ((nul = memchr(in, '\0', size)) != NULL) {
            size_t a = (size_t)(nul - in);
            hlsmi_parse_query(in, a, NULL, &s, err, sizeof err);
            in = nul + 1;
            size -= a + 1;
        }
        if (data[0] % 4 == 2)
            hlsmi_parse_table(in, size, &s, err, sizeof err);
        else
            hlsmi_parse_log(in, size, &s, 0, err, sizeof err);
        break;
    }
    gi_obs_free(&s);
    return 0;
}
