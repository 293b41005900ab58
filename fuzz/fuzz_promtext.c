/* libFuzzer target: Prometheus text exposition parser, fed straight into
 * the dcgm-exporter consumer. Checks that every delivered sample is
 * within the parser's bounds.
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/fuzz_promtext.c \
 *     src/parse/promtext.c src/parse/dcgm.c src/core/observation.c src/core/util.c -lm \
 *     -o build/fuzz_promtext && build/fuzz_promtext fuzz/corpus/promtext */
#include "core/observation.h"
#include "core/status.h"
#include "parse/dcgm.h"
#include "parse/promtext.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Checks the sample, then hands it to the dcgm consumer. */
static int check(void *ctx, const struct prom_sample *s, struct prom_error *err)
{
    if (strlen(s->name) > PROM_MAX_NAME || s->nlabels > PROM_MAX_LABELS)
        abort();
    for (size_t i = 0; i < s->nlabels; i++)
        if (strlen(s->labels[i].name) > PROM_MAX_NAME ||
            strlen(s->labels[i].value) > PROM_MAX_VALUE)
            abort();
    if (err->line == 0)
        abort();
    return dcgm_sample(ctx, s, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gi_obs_set set = {0};
    struct prom_error err;
    struct dcgm d;
    int rc;

    dcgm_begin(&d, &set);
    rc = prom_parse_text((const char *)data, size, check, &d, &err);
    if (rc == GI_OK) {
        if (err.msg[0] != '\0')
            abort();
        dcgm_finish(&d);
    } else if (err.msg[0] == '\0' || err.line == 0) {
        abort();
    }
    dcgm_free(&d);
    gi_obs_free(&set);
    return 0;
}
