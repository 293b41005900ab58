/* Fuzz target for time parsing and formatting (src/core/util.c): whatever
 * gi_time_parse accepts lies in the supported range and survives a round
 * trip through gi_time_format. */
#include "core/status.h"
#include "core/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s, buf[32];
    int64_t t = 0, back = 0;

    if (size > 256)
        return 0;
    if ((s = malloc(size + 1)) == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (gi_time_parse(s, &t) == GI_OK) {
        if (t < 0 || t > INT64_C(253402300799))
            abort();
        memset(buf, 'x', sizeof buf);
        gi_time_format(t, buf, 21);
        if (strlen(buf) != 20 || gi_time_parse(buf, &back) != GI_OK || back != t)
            abort();
    }
    free(s);
    return 0;
}
