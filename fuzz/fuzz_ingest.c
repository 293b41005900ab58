/* Fuzz target for the push batch format (src/parse/ingest.c): any JSON
 * must decode to a batch within the bounds, or fail naming a field; every
 * sample and process of an accepted batch names one of its GPUs and lies
 * inside the time window; every warning names a field and a reason. */
#include "parse/ingest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    struct gi_batch b = {0};
    struct ingest_error e;
    static struct ingest_warnings w;

    if (root == NULL)
        return 0;
    if (ingest_parse(root, 1700000000, &b, &e, &w) == 0) {
        /* Every listed warning names its field and says why. */
        for (size_t i = 0; i < w.n && i < INGEST_MAX_WARNINGS; i++)
            if (w.items[i].field[0] == '\0' || w.items[i].message[0] == '\0')
                abort();
        for (size_t i = 0; i < b.set.nprocs; i++) {
            bool found = false;
            for (size_t g = 0; g < b.set.ngpus && !found; g++)
                found = strcmp(b.set.procs[i].gpu_uuid, b.set.gpus[g].uuid) == 0;
            if (!found || b.set.procs[i].ts_ms > (1700000000 + INGEST_FUTURE_S) * INT64_C(1000))
                abort();
        }
        if (b.batch_id[0] == '\0' || b.host.hostname[0] == '\0')
            abort();
        if (b.set.ngpus > GI_BATCH_MAX_GPUS || b.nsamples > GI_BATCH_MAX_SAMPLES ||
            b.set.nprocs > GI_BATCH_MAX_PROCS)
            abort();
        for (size_t i = 0; i < b.nsamples; i++) {
            bool found = false;
            for (size_t g = 0; g < b.set.ngpus && !found; g++)
                found = strcmp(b.samples[i].gpu_uuid, b.set.gpus[g].uuid) == 0;
            if (!found || b.samples[i].ts <= 0 || b.samples[i].ts > 1700000000 + INGEST_FUTURE_S)
                abort();
        }
    } else if (e.message[0] == '\0') {
        abort(); /* every refusal says why */
    }
    gi_batch_free(&b);
    json_decref(root);
    return 0;
}
