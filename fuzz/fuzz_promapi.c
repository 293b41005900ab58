/* libFuzzer target: Prometheus HTTP API response parser, fed into the
 * dcgm-exporter consumer.
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/fuzz_promapi.c \
 *     src/parse/promapi.c src/parse/promtext.c src/parse/dcgm.c src/core/observation.c \
 *     src/core/util.c $(pkg-config --cflags --libs jansson) -lm \
 *     -o build/fuzz_promapi && build/fuzz_promapi fuzz/corpus/promapi */
#include "core/observation.h"
#include "core/status.h"
#include "parse/dcgm.h"
#include "parse/promapi.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int check(void *ctx, const struct prom_sample *s, struct prom_error *err)
{
    if (s->name == NULL || s->nlabels > PROM_MAX_LABELS || !s->has_ts)
        abort();
    for (size_t i = 0; i < s->nlabels; i++)
        if (strlen(s->labels[i].name) > PROM_MAX_NAME ||
            strlen(s->labels[i].value) > PROM_MAX_VALUE)
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
    rc = promapi_parse((const char *)data, size, check, &d, &err);
    if (rc == GI_OK)
        dcgm_finish(&d);
    else if (err.msg[0] == '\0')
        abort();
    dcgm_free(&d);
    gi_obs_free(&set);
    return 0;
}
