/* Fuzz target for the small text checks every parser leans on
 * (src/core/util.c, src/core/observation.c): gi_text_ok against a plain
 * reference decoder, gi_pci_normalize's output shape and idempotence,
 * and the bounded number parsers. */
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Strict UTF-8 by decoding code points: no overlongs, no surrogates,
 * nothing past U+10FFFF, no controls but tab, CR and LF. */
static int reference_text_ok(const unsigned char *p)
{
    while (*p) {
        uint32_t cp;
        int n;
        if (*p < 0x80) {
            cp = *p;
            n = 0;
        } else if ((*p & 0xe0) == 0xc0) {
            cp = *p & 0x1f;
            n = 1;
        } else if ((*p & 0xf0) == 0xe0) {
            cp = *p & 0x0f;
            n = 2;
        } else if ((*p & 0xf8) == 0xf0) {
            cp = *p & 0x07;
            n = 3;
        } else {
            return 0;
        }
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000))
            return 0;
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7f)
            return 0;
        p += n + 1;
    }
    return 1;
}

/* "dddd:bb:dd.f" in lower-case hex. */
static int pci_shape_ok(const char *s)
{
    static const char shape[] = "xxxx:xx:xx.x";
    if (strlen(s) != sizeof shape - 1)
        return 0;
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == 'x' ? !(isdigit((unsigned char)s[i]) || (s[i] >= 'a' && s[i] <= 'f'))
                            : s[i] != shape[i])
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s, bus[GI_BUS_LEN], again[GI_BUS_LEN];
    int64_t i64 = 0;
    double d = 0;

    if (size > 4096)
        return 0;
    if ((s = malloc(size + 1)) == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    if (gi_text_ok(s) != (reference_text_ok((const unsigned char *)s) != 0))
        abort();

    if (gi_pci_normalize(s, bus) == 0) {
        if (!pci_shape_ok(bus) || gi_pci_normalize(bus, again) != 0 || strcmp(bus, again) != 0)
            abort();
    }
    (void)gi_is_placeholder(s);

    if (gi_parse_int64(s, -1000, 1000, &i64) == GI_OK && (i64 < -1000 || i64 > 1000))
        abort();
    if (gi_parse_double(s, -1e6, 1e6, &d) == GI_OK && (!isfinite(d) || d < -1e6 || d > 1e6))
        abort();
    free(s);
    return 0;
}
