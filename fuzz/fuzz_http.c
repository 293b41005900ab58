/* Fuzz target for the request-target and media-type parsers
 * (src/http/uri.c): a decoded path is valid text without control bytes
 * and never longer than its input; a canonical id prints back as its
 * input; a matched media type starts with the type asked for. */
#include "core/util.h"
#include "http/uri.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char out[512], num[32];
    int64_t id = 0;
    char *s;

    if (size > 4096)
        return 0;
    if ((s = malloc(size + 1)) == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    if (uri_decode((const char *)data, size, out, sizeof out)) {
        size_t n = strlen(out);
        if (n > size || !gi_text_ok(out))
            abort();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
                abort();
        /* Without escapes, decoding is the identity. */
        if (memchr(data, '%', size) == NULL && (n != size || memcmp(out, data, n) != 0))
            abort();
    }
    (void)uri_decode((const char *)data, size, out, 1 + size % 8);

    if (uri_canonical_id((const char *)data, size, &id)) {
        snprintf(num, sizeof num, "%" PRId64, id);
        if (id < 1 || strlen(num) != size || memcmp(num, data, size) != 0)
            abort();
    }

    if (uri_media_type_is(s, "application/json") && strncasecmp(s, "application/json", 16) != 0)
        abort();
    (void)uri_media_type_is(s, "text/csv");
    free(s);
    return 0;
}
