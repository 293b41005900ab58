/* libFuzzer target: a declared Prometheus mapping and the text a
 * prometheus-generic source scrapes. The input's first line is the
 * mapping (JSON); the rest is the exposition text read through it.
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/fuzz_prommap.c \
 *     src/parse/prommap.c src/parse/promtext.c src/core/observation.c src/core/util.c \
 *     $(pkg-config --cflags --libs jansson) -lm -o build/fuzz_prommap \
 *     && build/fuzz_prommap fuzz/corpus/fuzz_prommap */
#include "core/observation.h"
#include "core/status.h"
#include "parse/prommap.h"
#include "parse/promtext.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    struct gi_obs_set set = {0};
    struct prommap m;
    struct prommap_pull p;
    struct prom_error err;
    char field[80], msg[256];
    json_error_t je;
    json_t *mapping;
    size_t mlen = nl ? (size_t)(nl - text) : size;
    bool finished;

    mapping = json_loadb(text, mlen, 0, &je);
    if (mapping == NULL)
        return 0;
    if (prommap_read(mapping, &m, field, sizeof field, msg, sizeof msg) != 0) {
        if (strncmp(field, "config.mapping", 14) != 0 || msg[0] == '\0')
            abort();
        json_decref(mapping);
        return 0;
    }
    prommap_begin(&p, &m, &set);
    finished = prom_parse_text(text + mlen, size - mlen, prommap_sample, &p, &err) == GI_OK;
    if (finished)
        prommap_finish(&p);
    for (size_t i = 0; i < set.ngpus; i++) {
        const struct gi_gpu_obs *g = &set.gpus[i];
        if (g->uuid[0] == '\0' || g->hostname[0] == '\0')
            abort();
        /* Finished records hold no infinite or out-of-range reading. */
        if (finished && (isinf(g->util_gpu_pct) || g->util_gpu_pct < 0 || g->util_gpu_pct > 100 ||
                         isinf(g->temp_c) || isinf(g->power_w)))
            abort();
    }
    prommap_free(&p);
    gi_obs_free(&set);
    json_decref(mapping);
    return 0;
}
